/*
 * strutil.c - small string helpers (strutil.h).
 */
#include <stdlib.h>
#include <string.h>

#include "strutil.h"

/* Strict UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF. */
int dlock__utf8_valid(const unsigned char *s, size_t len)
{
    size_t i = 0;

    while (i < len) {
        unsigned c = s[i];
        size_t n;
        unsigned cp;

        if (c < 0x80) {
            if (c == 0)
                return 0;
            i++;
            continue;
        } else if (c >= 0xc2 && c <= 0xdf) {
            n = 1;
            cp = c & 0x1f;
        } else if (c >= 0xe0 && c <= 0xef) {
            n = 2;
            cp = c & 0x0f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            n = 3;
            cp = c & 0x07;
        } else {
            return 0;
        }
        if (len - i <= n)
            return 0;
        for (size_t k = 1; k <= n; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return 0;
            cp = (cp << 6) | (s[i + k] & 0x3f);
        }
        if ((n == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
            (n == 3 && (cp < 0x10000 || cp > 0x10ffff)))
            return 0;
        i += n + 1;
    }
    return 1;
}

char *dlock__strndup(const char *s, size_t n)
{
    char *p = malloc(n + 1);

    if (p != NULL) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

char *dlock__strdup(const char *s)
{
    return dlock__strndup(s, strlen(s));
}

void dlock__strlcpy(char *dst, const char *src, size_t dstlen)
{
    size_t n = strlen(src);

    if (n >= dstlen)
        n = dstlen - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

size_t dlock__utf8_head(const char *s, size_t len, size_t max_chars)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;

    for (size_t chars = 0; i < len && chars < max_chars; chars++) {
        size_t n = u[i] < 0x80 ? 1 : u[i] < 0xe0 ? 2 : u[i] < 0xf0 ? 3 : 4;

        if (n > len - i || !dlock__utf8_valid(u + i, n))
            break;
        i += n;
    }
    return i;
}
