/*
 * layout.c - the layout of every structure of include/dlock.h that the
 * language bindings copy by hand (bindings/python/dlock/_ffi.py,
 * bindings/php/src/Ffi.php), as the C compiler lays it out: one line per
 * structure (its size) and per field (offset and size), and the options
 * version.  test_layout.sh compares what Python's ctypes and PHP's FFI
 * compute from the bindings' declarations with this, so they cannot drift
 * from the header.
 *
 * The fields are listed here by hand too, so this program checks that
 * its list covers each structure: in order, without overlap, the last
 * one ending where the structure does (a field the header gained at the
 * end or in the middle fails here before it is missed in a binding).
 */
#include <stddef.h>
#include <stdio.h>

#include "dlock.h"

struct field {
    const char *name;
    size_t offset, size;
};

#define F(type, f)                                                             \
    {                                                                          \
#f, offsetof(type, f), sizeof(((type *)0)->f)                          \
    }

static int bad;

static void show(const char *type, size_t size, size_t align,
                 const struct field *f, size_t n)
{
    size_t end = 0;

    printf("struct %s %zu\n", type, size);
    for (size_t i = 0; i < n; i++) {
        printf("field %s %s %zu %zu\n", type, f[i].name, f[i].offset,
               f[i].size);
        if (f[i].offset < end) {
            fprintf(stderr, "layout.c: %s.%s is out of order\n", type,
                    f[i].name);
            bad = 1;
        }
        end = f[i].offset + f[i].size;
    }
    if ((end + align - 1) / align * align != size) {
        fprintf(stderr,
                "layout.c: the fields listed for %s end at %zu, the "
                "structure at %zu: a field of dlock.h is missing here\n",
                type, end, size);
        bad = 1;
    }
}

#define SHOW(type, list)                                                       \
    show(#type, sizeof(type), _Alignof(type), list,                            \
         sizeof(list) / sizeof(list[0]))

int main(void)
{
    static const struct field options[] = {
        F(dlock_options, version), F(dlock_options, wait_ms),
        F(dlock_options, ttl_ms),  F(dlock_options, auto_renew),
        F(dlock_options, shared),  F(dlock_options, on_lost),
        F(dlock_options, payload), F(dlock_options, limit),
        F(dlock_options, cancel),
    };
    static const struct field info[] = {
        F(dlock_info, name),        F(dlock_info, held),
        F(dlock_info, shared),      F(dlock_info, holders),
        F(dlock_info, fence),       F(dlock_info, ttl_ms),
        F(dlock_info, host),        F(dlock_info, pid),
        F(dlock_info, since_ms),    F(dlock_info, other_client),
        F(dlock_info, limit),       F(dlock_info, client_id),
        F(dlock_info, client_user), F(dlock_info, client_addr),
        F(dlock_info, value),       F(dlock_info, value_len),
    };
    static const struct field rule[] = {
        F(dlock_run_rule, once),
        F(dlock_run_rule, period_ms),
    };
    static const struct field run[] = {
        F(dlock_run, name),   F(dlock_run, fence),    F(dlock_run, host),
        F(dlock_run, pid),    F(dlock_run, start_ms), F(dlock_run, end_ms),
        F(dlock_run, result), F(dlock_run, status),
    };
    static const struct field suspension[] = {
        F(dlock_suspension, name),
        F(dlock_suspension, by),
        F(dlock_suspension, since_ms),
        F(dlock_suspension, reason),
    };

    printf("const options_version %d\n", DLOCK_OPTIONS_VERSION);
    SHOW(dlock_options, options);
    SHOW(dlock_info, info);
    SHOW(dlock_run_rule, rule);
    SHOW(dlock_run, run);
    SHOW(dlock_suspension, suspension);
    return bad;
}
