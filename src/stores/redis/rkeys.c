/*
 * rkeys.c - lock names to Redis keys (see rkeys.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "names.h"
#include "rkeys.h"

static const char *const suffix[DLOCK__RKEYS] = {"",
                                                 "\xff"
                                                 "fence",
                                                 "\xff"
                                                 "readers",
                                                 "\xff"
                                                 "info",
                                                 "\xff"
                                                 "queue",
                                                 "\xff"
                                                 "waiters",
                                                 "\xff"
                                                 "sem"};
#define CHAN_SUFFIX                                                            \
    "\xff"                                                                     \
    "release"

/* CRC16-CCITT (XMODEM: polynomial 0x1021, initial 0), Redis Cluster's. */
static unsigned crc16(const char *buf, size_t len)
{
    unsigned crc = 0;

    for (size_t i = 0; i < len; i++) {
        crc ^= (unsigned)(unsigned char)buf[i] << 8;
        for (int b = 0; b < 8; b++)
            crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff
                               : (crc << 1) & 0xffff;
    }
    return crc;
}

/* The hash tag of key: the bytes between its first '{' and the first
 * '}' after it, when there are some; else NULL (the whole key counts). */
static const char *hash_tag(const char *key, size_t len, size_t *tag_len)
{
    const char *open = memchr(key, '{', len), *close;

    if (open == NULL)
        return NULL;
    close = memchr(open + 1, '}', len - (size_t)(open + 1 - key));
    if (close == NULL || close == open + 1)
        return NULL;
    *tag_len = (size_t)(close - open - 1);
    return open + 1;
}

unsigned dlock__redis_slot(const char *key, size_t len)
{
    size_t tl = 0;
    const char *tag = hash_tag(key, len, &tl);

    return tag != NULL ? crc16(tag, tl) & 16383 : crc16(key, len) & 16383;
}

/* A short tag without braces that hashes to slot ("t" and a number: the
 * first of them does, found within some 16,384 tries on average). */
static size_t slot_tag(unsigned slot, char out[16])
{
    for (unsigned long i = 0;; i++) {
        int n = snprintf(out, 16, "t%lu", i);

        if ((crc16(out, (size_t)n) & 16383) == slot)
            return (size_t)n;
    }
}

int dlock__redis_keys(const char *prefix, size_t prefix_len, const char *name,
                      size_t name_len, int cluster, struct dlock__rkeys *k)
{
    size_t base = prefix_len + name_len, total = 0, off = 0, tl = 0, hl = 0;
    char head[20];

    /* Redis Cluster: every key of a name in the lock key's hash slot.  A
     * lock key with a hash tag of its own lends it to every key that
     * starts with it; else the derived keys start with "{" + the lock key
     * + "}", which hashes as the whole lock key does, unless the lock key
     * holds a '}' (then "{" + a short tag of the same slot + "}" before
     * the lock key); both then go on with 0xfe and the suffix. */
    if (cluster) {
        char *key = malloc(base + 1);

        if (key == NULL)
            return dlock__enomem();
        memcpy(key, prefix, prefix_len);
        memcpy(key + prefix_len, name, name_len);
        if (hash_tag(key, base, &tl) != NULL)
            hl = 0;
        else if (memchr(key, '}', base) == NULL)
            hl = 1; /* "{" lock key "}" */
        else {
            head[0] = '{';
            tl = slot_tag(dlock__redis_slot(key, base), head + 1);
            head[1 + tl] = '}';
            hl = tl + 2;
        }
        free(key);
    }
    for (int i = 0; i < DLOCK__RKEYS; i++)
        total += base + strlen(suffix[i]) + hl + 3;
    total += base + sizeof(CHAN_SUFFIX);
    k->buf = malloc(total);
    if (k->buf == NULL)
        return dlock__enomem();
    for (int i = 0; i <= DLOCK__RKEYS; i++) {
        const char *suf = i < DLOCK__RKEYS ? suffix[i] : CHAN_SUFFIX;
        char *p = k->buf + off;
        size_t len = 0;

        /* The lock key and the channel are never tagged: the lock key is
         * the plain SET NX key, the channel no key at all. */
        if (i > 0 && i < DLOCK__RKEYS && hl == 1)
            p[len++] = '{';
        else if (i > 0 && i < DLOCK__RKEYS && hl > 1) {
            memcpy(p, head, hl);
            len = hl;
        }
        memcpy(p + len, prefix, prefix_len);
        memcpy(p + len + prefix_len, name, name_len);
        len += base;
        if (i > 0 && i < DLOCK__RKEYS && hl == 1)
            p[len++] = '}';
        /* 0xfe, which no name ends with, keeps "{" + K + "}" apart from
         * a name's lock key that is spelt so (with an empty prefix). */
        if (i > 0 && i < DLOCK__RKEYS && hl > 0)
            p[len++] = '\xfe';
        memcpy(p + len, suf, strlen(suf) + 1);
        len += strlen(suf);
        if (i < DLOCK__RKEYS) {
            k->k[i] = p;
            k->klen[i] = len;
        } else {
            k->chan = p;
            k->chan_len = len;
        }
        off += len + 1;
    }
    return DLOCK_OK;
}

int dlock__redis_key_name(const char *key, size_t key_len, const char *prefix,
                          size_t prefix_len, size_t *name_len)
{
    const char *nm, *ff;
    size_t len, cut;

    if (key_len < prefix_len || memcmp(key, prefix, prefix_len) != 0)
        return 0;
    nm = key + prefix_len;
    len = key_len - prefix_len;
    ff = memchr(nm, 0xff, len);
    cut = ff != NULL ? (size_t)(ff - nm) : len;
    /* Not the fence, info or a channel: only lock and readers keys. */
    if (cut < len && (len - cut != strlen(suffix[2]) ||
                      memcmp(nm + cut, suffix[2], len - cut) != 0))
        return 0;
    if (memchr(nm, '\0', cut) != NULL || dlock__check_name(nm, cut) != DLOCK_OK)
        return 0;
    *name_len = cut;
    return 1;
}

char *dlock__redis_glob_prefix(const char *lit, size_t len)
{
    char *g = malloc(2 * len + 2), *p = g;

    if (g == NULL)
        return NULL;
    for (size_t i = 0; i < len; i++) {
        if (lit[i] != '\0' && strchr("*?[]\\", lit[i]) != NULL)
            *p++ = '\\';
        *p++ = lit[i];
    }
    *p++ = '*';
    *p = '\0';
    return g;
}
