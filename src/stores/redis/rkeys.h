/*
 * rkeys.h - how the Redis store maps lock names to its keys, and Redis
 * Cluster's hash slots.  Pure functions, no client library: the fuzzer
 * (tests/fuzz/fuzz_keys.c) calls them directly.
 */
#ifndef DLOCK_STORES_RKEYS_H
#define DLOCK_STORES_RKEYS_H

#include <stddef.h>

/* Redis: the keys of one lock name, all in one allocation (free buf).
 * k[0] the lock (prefix + name, the plain SET NX key), k[1] the fence
 * counter, k[2] the shared holders, k[3] the holder info, k[4] the waiter
 * queue (a sorted set, token -> arrival), k[5] the waiters' entries (a
 * hash, token -> lease, deadline, pid, host; "l:" token -> a semaphore
 * waiter's limit), k[6] a semaphore's holders (a sorted set, token ->
 * lease end), chan the release channel: the derived ones end in 0xff + a
 * word, and 0xff never occurs in UTF-8, so no lock's key is another's
 * derived key.  cluster: the derived keys also carry a hash tag that puts
 * them in the lock key's hash slot (Redis Cluster runs a script only over
 * keys of one slot); the lock key and the channel stay as they are. */
#define DLOCK__RKEYS 7
struct dlock__rkeys {
    char *buf;
    const char *k[DLOCK__RKEYS];
    size_t klen[DLOCK__RKEYS];
    char *chan;
    size_t chan_len;
};
int dlock__redis_keys(const char *prefix, size_t prefix_len, const char *name,
                      size_t name_len, int cluster, struct dlock__rkeys *k);

/* Redis Cluster's hash slot of a key (CRC16 of its hash tag, or of the
 * whole key, mod 16384). */
unsigned dlock__redis_slot(const char *key, size_t len);

/* The name a Redis key belongs to, if it is a lock key (k[0]) or a shared
 * holders key (k[2]) under prefix: 1 and *name_len (the name starts at
 * key + prefix_len), else 0. */
int dlock__redis_key_name(const char *key, size_t key_len, const char *prefix,
                          size_t prefix_len, size_t *name_len);

/* SCAN's MATCH pattern for the keys that start with lit: lit with Redis's
 * glob characters escaped, then "*".  malloc'd; NULL when out of memory. */
char *dlock__redis_glob_prefix(const char *lit, size_t len);

#endif
