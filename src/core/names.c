/*
 * names.c - lock names (names.h): the check every name passes, and the
 * list of names a store's list() collects before describing each.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dlock.h"
#include "errors.h"
#include "names.h"
#include "random.h"
#include "strutil.h"

int dlock__check_name(const char *name, size_t len)
{
    if (name == NULL)
        return dlock__seterr(DLOCK_EINVAL, "lock name is NULL");
    if (len == 0)
        return dlock__seterr(DLOCK_EINVAL, "lock name is empty");
    if (len > DLOCK_NAME_MAX)
        return dlock__seterr(DLOCK_EINVAL,
                             "lock name is %zu bytes long; the limit is %d",
                             len, DLOCK_NAME_MAX);
    if (!dlock__utf8_valid((const unsigned char *)name, len))
        return dlock__seterr(DLOCK_EINVAL,
                             "lock name is not valid UTF-8 (or contains "
                             "NUL)");
    return DLOCK_OK;
}

/* The hash set's slot of a name: FNV-1a from the set's random seed, then
 * MurmurHash3's finaliser.  Whoever writes keys under the prefix chooses
 * the names; FNV-1a's low bits depend only on its state's low bits, so
 * without the seed (and the finaliser bringing every bit down) names
 * sharing one slot are cheap to make, and probing turns quadratic: 8,192
 * such names took 4 s of CPU between two pages of a scan
 * (adv43-names-flood). */
static size_t name_hash(uint64_t seed, const char *name, size_t len)
{
    uint64_t h = UINT64_C(14695981039346656037) ^ seed;

    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)name[i]) * UINT64_C(1099511628211);
    h ^= h >> 33;
    h *= UINT64_C(0xff51afd7ed558ccd);
    h ^= h >> 33;
    h *= UINT64_C(0xc4ceb9fe1a85ec53);
    h ^= h >> 33;
    return (size_t)h;
}

/* The slot holding name, or the free one where it goes. */
static size_t *find_slot(struct dlock__names *l, const char *name, size_t len)
{
    size_t i = name_hash(l->seed, name, len) & (l->nslot - 1);

    for (;; i = (i + 1) & (l->nslot - 1)) {
        size_t k = l->slot[i];

        if (k == 0 ||
            (strlen(l->v[k - 1]) == len && memcmp(l->v[k - 1], name, len) == 0))
            return &l->slot[i];
    }
}

/* At most half full: twice the slots, every name placed again. */
static int grow_set(struct dlock__names *l)
{
    size_t nslot = l->nslot ? l->nslot * 2 : 64, *old = l->slot;

    /* The seed, once, before the first name is placed (no random bytes:
     * a weaker seed still varies per set). */
    if (l->nslot == 0 && dlock__random(&l->seed, sizeof(l->seed)) != DLOCK_OK) {
        dlock__clearerr();
        l->seed = (uint64_t)(uintptr_t)l ^ dlock__rand32();
    }
    l->slot = calloc(nslot, sizeof(*l->slot));
    if (l->slot == NULL) {
        l->slot = old;
        return dlock__enomem();
    }
    l->nslot = nslot;
    for (size_t k = 0; k < l->n; k++)
        *find_slot(l, l->v[k], strlen(l->v[k])) = k + 1;
    free(old);
    return DLOCK_OK;
}

int dlock__names_add(struct dlock__names *l, const char *name, size_t len)
{
    size_t *slot;

    if ((l->n + 1) * 2 > l->nslot && grow_set(l) != DLOCK_OK)
        return DLOCK_ENOMEM;
    slot = find_slot(l, name, len);
    if (*slot != 0)
        return DLOCK_OK;
    if (l->n >= DLOCK__LIST_NAMES)
        return dlock__seterr(DLOCK_ESTORE,
                             "the store holds more than %d lock names under "
                             "the prefix listed (a list reads at most that "
                             "many): list a narrower prefix",
                             DLOCK__LIST_NAMES);
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        char **v = realloc(l->v, cap * sizeof(*v));

        if (v == NULL)
            return dlock__enomem();
        l->v = v;
        l->cap = cap;
    }
    if ((l->v[l->n] = dlock__strndup(name, len)) == NULL)
        return dlock__enomem();
    l->n++;
    *slot = l->n;
    return DLOCK_OK;
}

void dlock__names_free(struct dlock__names *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    free(l->slot);
    memset(l, 0, sizeof(*l));
}

int dlock__names_report(struct dlock__names *l, struct dlock_store *s,
                        int (*describe)(struct dlock_store *, const char *,
                                        dlock_info *),
                        int (*cb)(const dlock_info *, void *), void *payload)
{
    int rc = DLOCK_OK;

    for (size_t i = 0; i < l->n && rc == DLOCK_OK; i++) {
        dlock_info info;

        memset(&info, 0, sizeof(info));
        info.ttl_ms = -1;
        dlock__strlcpy(info.name, l->v[i], sizeof(info.name));
        rc = describe(s, l->v[i], &info);
        if (rc == DLOCK_OK && info.held)
            rc = cb(&info, payload);
    }
    dlock__names_free(l);
    return rc;
}
