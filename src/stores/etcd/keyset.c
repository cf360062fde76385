/*
 * keyset.c - the keys a waiter waits on (struct etcd_keys, etcd.h): the
 * watch's filter (http.c) and the lock's copy of them (acquire.c), at the
 * bottom of the etcd store so that neither calls the other's file.
 */
#include <stdlib.h>
#include <string.h>

#include "etcd.h"

void dlock__etcd_keys_clear(struct etcd_keys *ks)
{
    for (size_t i = 0; i < ks->n; i++)
        free(ks->k[i]);
    free(ks->k);
    free(ks->len);
    memset(ks, 0, sizeof(*ks));
}

int dlock__etcd_keys_has(const struct etcd_keys *ks, const char *k, size_t n)
{
    for (size_t i = 0; i < ks->n; i++)
        if (ks->len[i] == n && memcmp(ks->k[i], k, n) == 0)
            return 1;
    return 0;
}
