/*
 * errors.h - the thread's error message (errors.c).
 *
 * Every DLOCK_* failure the library returns comes with a message in the
 * calling thread (dlock_errmsg()); these set it.  A store sets it where
 * it fails and returns the code: dlock__seterr() returns rc, so
 * `return dlock__seterr(DLOCK_EUNAVAIL, "...")` is the usual form.  Never
 * put a password in a message: use store->url (redacted) and pass any
 * driver text through dlock__scrub() (url.h).
 */
#ifndef DLOCK_CORE_ERRORS_H
#define DLOCK_CORE_ERRORS_H

#include <stdarg.h>

#include "dlock.h" /* the DLOCK_* codes */

#if defined(__GNUC__)
#define DLOCK_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define DLOCK_PRINTF(f, a)
#endif

struct dlock_lock;

/* Set the thread's message (printf format) and return rc. */
int dlock__seterr(int rc, const char *fmt, ...) DLOCK_PRINTF(2, 3);
int dlock__vseterr(int rc, const char *fmt, va_list ap);
void dlock__clearerr(void);
/* DLOCK_ENOMEM with its message. */
int dlock__enomem(void);
/* DLOCK_LOST with "lock 'NAME' is no longer ours: WHY". */
int dlock__lost(const struct dlock_lock *lk, const char *why);
/* DLOCK_EINVAL: the TLS client key file key needs a pass phrase, which
 * dlock never asks for (the same words on every store). */
int dlock__encrypted_key(const char *key, const char *url);

#endif /* DLOCK_CORE_ERRORS_H */
