/*
 * names.c - lock names (names.h): the check every name passes, and the
 * list of names a store's list() collects before describing each.
 */
#include <stdlib.h>
#include <string.h>

#include "dlock.h"
#include "errors.h"
#include "names.h"
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

int dlock__names_add(struct dlock__names *l, const char *name, size_t len)
{
    for (size_t i = 0; i < l->n; i++)
        if (strlen(l->v[i]) == len && memcmp(l->v[i], name, len) == 0)
            return DLOCK_OK;
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
    return DLOCK_OK;
}

void dlock__names_free(struct dlock__names *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
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
