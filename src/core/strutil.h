/*
 * strutil.h - small string helpers (strutil.c).  The two that allocate
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
/* 1 if s[0..len) is strict UTF-8 with no NUL (no overlong forms, no
 * surrogates, nothing above U+10FFFF), else 0. */
int dlock__utf8_valid(const unsigned char *s, size_t len);
/* The bytes of s[0..len)'s leading run of at most max_chars complete
 * valid characters (as dlock__utf8_valid() judges each): where it stops
 * is the first byte that does not begin one. */
size_t dlock__utf8_head(const char *s, size_t len, size_t max_chars);

#endif /* DLOCK_CORE_STRUTIL_H */
