/* libFuzzer: lock name validation, and what the library does with any
 * name on the embedded store: it either refuses it (DLOCK_EINVAL) or
 * locks exactly that name. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dlock.h"
#include "names.h"

static dlock_store *store;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    dlock_options o = DLOCK_OPTIONS_INIT;
    dlock_lock *l = NULL;
    int valid = dlock__check_name((const char *)data, size) == DLOCK_OK;
    int rc;

    if (store == NULL &&
        dlock_store_open(&store, "sqlite:///tmp/dlock-fuzz-name.db") !=
            DLOCK_OK)
        abort();
    o.auto_renew = 0;
    rc = dlock_acquire_len(&l, store, (const char *)data, size, &o);
    if (valid && memchr(data, 0, size) == NULL) {
        if (rc != DLOCK_OK || strlen(dlock_lock_name(l)) != size ||
            memcmp(dlock_lock_name(l), data, size) != 0)
            abort();
        if (dlock_release(l) != DLOCK_OK)
            abort();
    } else if (rc != DLOCK_EINVAL || l != NULL) {
        abort();
    }
    return 0;
}
