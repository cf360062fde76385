/*
 * strutil.h - small string helpers (util.c).  The two that allocate
 * return NULL when out of memory and set no message (the caller's
 * dlock__enomem() does).
 */
#ifndef DLOCK_CORE_STRUTIL_H
#define DLOCK_CORE_STRUTIL_H

#include <stddef.h>

char *dlock__strdup(const char *s);
char *dlock__strndup(const char *s, size_t n);
/* Bounded copy that always terminates dst (dstlen > 0). */
void dlock__strlcpy(char *dst, const char *src, size_t dstlen);

#endif /* DLOCK_CORE_STRUTIL_H */
