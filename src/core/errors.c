/*
 * errors.c - return code descriptions and the per-thread error message.
 */
#include <stdio.h>
#include <string.h>

#include "errors.h"
#include "store.h"

/* The last failure's text, one per thread (libgit2's git_error_last). */
static _Thread_local char errbuf[512];

const char *dlock_strerror(int rc)
{
    switch (rc) {
    case DLOCK_OK:
        return "success";
    case DLOCK_BUSY:
        return "lock is held by someone else";
    case DLOCK_LOST:
        return "lock was lost";
    case DLOCK_EXPIRING:
        return "lock lease is running out";
    case DLOCK_EINVAL:
        return "invalid argument";
    case DLOCK_EUNAVAIL:
        return "store unavailable";
    case DLOCK_ESTORE:
        return "store error";
    case DLOCK_ENOTSUP:
        return "not supported";
    case DLOCK_ENOMEM:
        return "out of memory";
    case DLOCK_ECANCELED:
        return "wait cancelled";
    default:
        return "unknown error";
    }
}

const char *dlock_errmsg(void)
{
    return errbuf;
}

int dlock__vseterr(int rc, const char *fmt, va_list ap)
{
    vsnprintf(errbuf, sizeof(errbuf), fmt, ap);
    return rc;
}

int dlock__seterr(int rc, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    dlock__vseterr(rc, fmt, ap);
    va_end(ap);
    return rc;
}

void dlock__clearerr(void)
{
    errbuf[0] = '\0';
}

int dlock__enomem(void)
{
    return dlock__seterr(DLOCK_ENOMEM, "out of memory");
}

/* The one wording of "this lock is not ours any more", whatever the store
 * found; `why` says what it found. */
int dlock__lost(const struct dlock_lock *lk, const char *why)
{
    return dlock__seterr(DLOCK_LOST, "lock '%s' is no longer ours: %s",
                         lk->name, why);
}

/* The one wording of "this TLS client key needs a pass phrase", for every
 * store that reads ?key= itself (rediss://, etcds://): dlock never lets
 * OpenSSL prompt for one on the terminal. */
int dlock__encrypted_key(const char *key, const char *url)
{
    return dlock__seterr(DLOCK_EINVAL,
                         "cannot use the client key %s: it is encrypted "
                         "(protected by a pass phrase), and dlock takes no "
                         "pass phrase: give an unencrypted key, readable by "
                         "this user only (openssl pkey -in KEY -out NEWKEY) "
                         "(%s)",
                         key, url);
}
