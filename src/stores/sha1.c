/*
 * sha1.c - the SHA1 hex digest of the MySQL and Redis stores (sha1.h).
 */
#include <stdint.h>
#include <string.h>

#include "sha1.h"

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
