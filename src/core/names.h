/*
 * names.h - lock names (names.c): the check every name passes, and the
 * list of names a store's list() collects before describing each.
 */
#ifndef DLOCK_CORE_NAMES_H
#define DLOCK_CORE_NAMES_H

#include <stddef.h>
#include <stdint.h>

#include "dlock.h"

struct dlock_store;

/* DLOCK_OK or DLOCK_EINVAL with a message: 1..DLOCK_NAME_MAX bytes, valid
 * UTF-8.  len is the byte length. */
int dlock__check_name(const char *name, size_t len);

/* Names a list() collected (with the connection held) before describing
 * each (without it, so the callback may call the library).  Zero is an
 * empty list ({NULL, 0, 0} and the rest zero). */
struct dlock__names {
    char **v;
    size_t n, cap;
    size_t *slot, nslot; /* a hash set of v's indices + 1 (0: free) */
    uint64_t seed;       /* its hash's, random (names.c) */
};
/* The most names one list collects: a scan that a server keeps feeding
 * (a page that never ends, new keys for ever) ends at this many. */
#define DLOCK__LIST_NAMES 100000
/* Add name[0..len) unless already there (in constant time); DLOCK_OK,
 * DLOCK_ENOMEM, or DLOCK_ESTORE past DLOCK__LIST_NAMES names. */
int dlock__names_add(struct dlock__names *l, const char *name, size_t len);
/* describe() each name and call cb for those held; stops at the first
 * error or nonzero cb.  Frees the list. */
int dlock__names_report(struct dlock__names *l, struct dlock_store *s,
                        int (*describe)(struct dlock_store *, const char *,
                                        dlock_info *),
                        int (*cb)(const dlock_info *, void *), void *payload);
void dlock__names_free(struct dlock__names *l);

#endif /* DLOCK_CORE_NAMES_H */
