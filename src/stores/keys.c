/*
 * keys.c - lock names to store keys (see keys.h).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "keys.h"
#include "names.h"

/* --- MySQL/MariaDB: SHA1 (FIPS 180-1) for the key of long names -------- */

struct sha1 {
    uint32_t h[5];
    uint64_t len;
    unsigned char buf[64];
    size_t n;
};

static uint32_t rol(uint32_t x, int n)
{
    return (x << n) | (x >> (32 - n));
}

static void sha1_block(struct sha1 *s, const unsigned char *p)
{
    uint32_t w[80], a, b, c, d, e, t;

    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | (uint32_t)p[4 * i + 3];
    for (int i = 16; i < 80; i++)
        w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3], e = s->h[4];
    for (int i = 0; i < 80; i++) {
        uint32_t f, k;

        if (i < 20)
            f = (b & c) | (~b & d), k = 0x5a827999;
        else if (i < 40)
            f = b ^ c ^ d, k = 0x6ed9eba1;
        else if (i < 60)
            f = (b & c) | (b & d) | (c & d), k = 0x8f1bbcdc;
        else
            f = b ^ c ^ d, k = 0xca62c1d6;
        t = rol(a, 5) + f + e + k + w[i];
        e = d, d = c, c = rol(b, 30), b = a, a = t;
    }
    s->h[0] += a, s->h[1] += b, s->h[2] += c, s->h[3] += d, s->h[4] += e;
}

static void sha1_add(struct sha1 *s, const void *data, size_t len)
{
    const unsigned char *p = data;

    s->len += len;
    while (len > 0) {
        size_t k = 64 - s->n < len ? 64 - s->n : len;

        memcpy(s->buf + s->n, p, k);
        s->n += k, p += k, len -= k;
        if (s->n == 64) {
            sha1_block(s, s->buf);
            s->n = 0;
        }
    }
}

void dlock__sha1_hex(const void *data, size_t len, char out[41])
{
    static const char hex[] = "0123456789abcdef";
    struct sha1 s = {
        {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0},
        0,
        {0},
        0};
    unsigned char pad[72] = {0x80};
    uint64_t bits;
    size_t padlen;

    sha1_add(&s, data, len);
    bits = s.len * 8;
    padlen = (s.n < 56 ? 56 : 120) - s.n;
    for (int i = 0; i < 8; i++)
        pad[padlen + (size_t)i] = (unsigned char)(bits >> (56 - 8 * i));
    sha1_add(&s, pad, padlen + 8);
    for (int i = 0; i < 20; i++) {
        unsigned char byte = (unsigned char)(s.h[i / 4] >> (24 - 8 * (i % 4)));

        out[2 * i] = hex[byte >> 4];
        out[2 * i + 1] = hex[byte & 15];
    }
    out[40] = '\0';
}

/* --- MySQL/MariaDB: the GET_LOCK key ----------------------------------- */

/* The GET_LOCK key of a name: itself up to 64 characters, else its first
 * 24 characters and the SHA1 hex of all of it.  Characters are UTF-8 code
 * points (the core has checked the name is valid UTF-8), as CHAR_LENGTH()
 * and SUBSTR() count them in utf8mb4.  MariaDB refuses GET_LOCK names over
 * 192 bytes (MySQL counts 64 characters), so there a short name of many
 * multibyte characters is hashed too: no other client can use such a name
 * as a key on MariaDB anyway. */
size_t dlock__mysql_key(const char *name, size_t len, int mariadb,
                        char out[DLOCK__MYSQL_KEY_MAX + 1])
{
    size_t chars = 0, cut = 0;

    for (size_t i = 0; i < len; i++) {
        if (((unsigned char)name[i] & 0xc0) != 0x80) {
            if (chars == 24)
                cut = i;
            chars++;
        }
    }
    if (chars <= 64 && (!mariadb || len <= 192)) {
        memcpy(out, name, len);
        out[len] = '\0';
        return len;
    }
    memcpy(out, name, cut);
    dlock__sha1_hex(name, len, out + cut);
    return cut + 40;
}

/* The prefix of a semaphore's slot keys: the SHA1 hex of the name, a NUL
 * byte and "dlock-sem", then '#'; slot i's key is the prefix and i in
 * decimal (at most 45 ASCII characters).  No name holds a NUL byte, so
 * the hashed text is no name: the prefix equals the SHA1 part of a long
 * name's key only by a SHA1 collision.  Only a name spelt on purpose as
 * "<40 hex>#<digits>" is its own key equal to a slot key. */
void dlock__mysql_sem_prefix(const char *name, size_t len,
                             char out[DLOCK__MYSQL_SEM_PREFIX + 1])
{
    static const char tail[] = "dlock-sem";
    char buf[1024 + sizeof(tail) + 1];

    if (len > 1024)
        len = 1024; /* names are at most DLOCK_NAME_MAX bytes */
    memcpy(buf, name, len);
    buf[len] = '\0';
    memcpy(buf + len + 1, tail, sizeof(tail) - 1);
    dlock__sha1_hex(buf, len + sizeof(tail), out);
    out[40] = '#';
    out[41] = '\0';
}

int dlock__mysql_reserved_key(const char *key, size_t len)
{
    size_t i;

    if (len < 42)
        return 0;
    for (i = 0; i < 40; i++)
        if (!((key[i] >= '0' && key[i] <= '9') ||
              (key[i] >= 'a' && key[i] <= 'f')))
            return 0;
    if (key[i] != '#' && key[i] != '~')
        return 0;
    for (i++; i < len; i++)
        if (key[i] < '0' || key[i] > '9')
            return 0;
    return 1;
}

/* --- Redis ------------------------------------------------------------- */

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
