<?php

declare(strict_types=1);

namespace Dlock;

/**
 * The one FFI handle on libdlock (internal).
 *
 * The declarations below are include/dlock.h's, without the macros and the
 * preprocessor, in a form FFI::cdef() accepts.  Return codes are declared
 * `int` (the ABI of the dlock_rc enum).  The bindings-layout test
 * (tests/bindings/) compares the structures' layout with the header's.
 *
 * @internal
 */
final class Ffi
{
    /** The SONAME loaded when DLOCK_LIBRARY is not set. */
    public const SONAME = 'libdlock.so.0.2';

    /** DLOCK_OPTIONS_VERSION of the header these declarations copy. */
    public const OPTIONS_VERSION = 3;

    private const CDEF = <<<'C'
typedef struct dlock_store dlock_store;
typedef struct dlock_lock dlock_lock;
typedef void (*dlock_lost_cb)(dlock_lock *lock, void *payload);
typedef struct dlock_cancel dlock_cancel;
typedef struct dlock_options {
    unsigned version;
    int64_t wait_ms;
    int64_t ttl_ms;
    int auto_renew;
    int shared;
    dlock_lost_cb on_lost;
    void *payload;
    unsigned limit;
    dlock_cancel *cancel;
} dlock_options;
typedef struct dlock_info {
    char name[1025];
    int held;
    int shared;
    unsigned holders;
    uint64_t fence;
    int64_t ttl_ms;
    char host[256];
    int64_t pid;
    int64_t since_ms;
    int other_client;
    unsigned limit;
    int64_t client_id;
    char client_user[128];
    char client_addr[128];
    const char *value;
    size_t value_len;
} dlock_info;
typedef int (*dlock_list_cb)(const dlock_info *info, void *payload);
typedef int (*dlock_observe_cb)(const dlock_info *leader, void *payload);
typedef struct dlock_run_rule {
    int once;
    int64_t period_ms;
} dlock_run_rule;
typedef struct dlock_run {
    char name[1025];
    uint64_t fence;
    char host[256];
    int64_t pid;
    int64_t start_ms;
    int64_t end_ms;
    int result;
    int status;
} dlock_run;
typedef int (*dlock_run_cb)(const dlock_run *run, void *payload);
typedef struct dlock_suspension {
    char name[1025];
    char by[256];
    int64_t since_ms;
    char reason[1025];
} dlock_suspension;
typedef int (*dlock_suspension_cb)(const dlock_suspension *s, void *payload);
int dlock_options_init(dlock_options *opts, unsigned version);
const char *dlock_default_url(void);
int dlock_store_open(dlock_store **out, const char *url);
void dlock_store_close(dlock_store *store);
int dlock_store_init(dlock_store *store);
int dlock_ddl(char **out, const char *url);
const char *dlock_store_url(const dlock_store *store);
int dlock_url_redact(char **out, const char *url);
void dlock_free(char *str);
int dlock_acquire_len(dlock_lock **out, dlock_store *store, const char *name, size_t name_len, const dlock_options *opts);
int dlock_release(dlock_lock *lock);
int dlock_extend(dlock_lock *lock, int64_t ttl_ms);
int dlock_assert_ttl(dlock_lock *lock, int64_t min_remaining_ms);
uint64_t dlock_fence(const dlock_lock *lock);
const char *dlock_lock_name(const dlock_lock *lock);
int dlock_is_lost(const dlock_lock *lock);
int64_t dlock_lease_left(const dlock_lock *lock);
int dlock_status(dlock_info **out, dlock_store *store, const char *name);
void dlock_info_free(dlock_info *info);
int dlock_list(dlock_store *store, const char *prefix, dlock_list_cb cb, void *payload);
int dlock_force_release(unsigned *out_removed, dlock_store *store, const char *name);
int dlock_run_begin(dlock_lock *lock, const dlock_run_rule *rule, int *go, dlock_run **last);
int dlock_run_end(dlock_lock *lock, int result, int status);
int dlock_history(dlock_store *store, const char *name, unsigned max, dlock_run_cb cb, void *payload);
int dlock_last_runs(dlock_store *store, const char *prefix, dlock_run_cb cb, void *payload);
void dlock_run_free(dlock_run *run);
int dlock_keep_runs(dlock_store *store, const char *name, unsigned n);
int dlock_kept_runs(unsigned *out, dlock_store *store, const char *name);
int dlock_suspend(int *out_was, dlock_store *store, const char *name, const char *by, const char *reason);
int dlock_resume(dlock_suspension **out, dlock_store *store, const char *name);
int dlock_suspended(dlock_suspension **out, dlock_store *store, const char *name);
int dlock_suspensions(dlock_store *store, const char *prefix, dlock_suspension_cb cb, void *payload);
void dlock_suspension_free(dlock_suspension *s);
int dlock_elect(dlock_lock **out, dlock_store *store, const char *name, const char *value, const dlock_options *opts);
int dlock_proclaim(dlock_lock *lock, const char *value);
int dlock_leader(dlock_info **out, dlock_store *store, const char *name);
int dlock_observe(dlock_store *store, const char *name, dlock_observe_cb cb, void *payload, dlock_cancel *cancel);
const char *dlock_strerror(int rc);
const char *dlock_errmsg(void);
const char *dlock_schemes(void);
const char *dlock_version(void);
C;

    private static ?\FFI $ffi = null;

    /** The FFI instance, loaded on first use. */
    public static function get(): \FFI
    {
        if (self::$ffi === null) {
            $lib = getenv('DLOCK_LIBRARY');
            if ($lib === false || $lib === '') {
                $lib = self::SONAME;
            }
            if (!class_exists(\FFI::class)) {
                throw new NotSupportedException(
                    'the FFI extension is not loaded (php -m | grep FFI; see bindings/php/README.md)',
                    Exception::ENOTSUP
                );
            }
            try {
                $ffi = \FFI::cdef(self::CDEF, $lib);
            } catch (\Throwable $e) {
                throw new NotSupportedException(
                    "cannot load libdlock ($lib): " . $e->getMessage()
                    . ' (set DLOCK_LIBRARY to its path; FFI must be enabled: see bindings/php/README.md)',
                    Exception::ENOTSUP,
                    $e
                );
            }
            self::pin($lib);
            self::$ffi = $ffi;
        }
        return self::$ffi;
    }

    /**
     * Keep libdlock mapped until the process exits.  PHP's FFI dlclose()s
     * its library when the FFI object is freed at shutdown, while
     * libdlock's renew thread may still run in it and its atexit() handler
     * still has to release what is held; an extra dlopen() with
     * RTLD_NODELETE makes that dlclose() leave it in place.
     */
    private static function pin(string $lib): void
    {
        try {
            $libc = \FFI::cdef('void *dlopen(const char *file, int mode);', 'libc.so.6');
            // RTLD_NOW (2) | RTLD_NODELETE (0x1000), glibc's values.
            $libc->dlopen($lib, 0x1002);
        } catch (\Throwable $e) {
            // Not glibc: nothing to pin with; libdlock's atexit handler runs
            // at dlclose() (glibc's __cxa_finalize) anyway.
        }
    }

    /** Turn a `const char *` result into a PHP string ('' for NULL). */
    public static function str($p): string
    {
        if ($p === null) {
            return '';
        }
        if (is_string($p)) {
            return $p;
        }
        return \FFI::isNull($p) ? '' : \FFI::string($p);
    }

    /** The calling thread's last message from the library. */
    public static function errmsg(): string
    {
        return self::str(self::get()->dlock_errmsg());
    }

    /** A PHP int for a uint64_t FFI hands back as a (possibly negative) int. */
    public static function u64($v)
    {
        $v = (int) $v;
        return $v >= 0 ? $v : sprintf('%u', $v);
    }
}
