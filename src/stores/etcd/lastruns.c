/*
 * lastruns.c - the etcd store's last runs (src/core/store.h: last_runs):
 * the names under a prefix that have run records (runs.c's layout), and
 * each one's newest run.  Apart from runs.c, which is near the house
 * limit of 1,000 lines; it calls runs.c's dlock__etcd_runs() only.
 */
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "etcd.h"
#include "names.h"
#include "strutil.h"

/* The names under a prefix that have runs: the keys P FIRST \xff runs
 * [/REST] (P NAME \xff runs, the earlier layout's, is that for a name
 * without '/', and P FIRST/REST \xff runs for one with). */
struct runs_scan {
    struct etcd_store *es;
    const char *prefix;
    struct dlock__names names;
};

static int runs_key(const char *key, size_t klen, void *arg)
{
    struct runs_scan *rs = arg;
    size_t off = rs->es->prefix_len, plen = strlen(rs->prefix), f, rest;
    const char *k = key + off, *ff;
    char *name;
    int rc;

    if (klen <= off || (ff = memchr(k, '\xff', klen - off)) == NULL)
        return DLOCK_OK;
    f = (size_t)(ff - k);
    rest = klen - off - f - 1;
    if (rest < 4 || memcmp(ff + 1, "runs", 4) != 0 ||
        (rest > 4 && (ff[5] != '/' || memchr(k, '/', f) != NULL)))
        return DLOCK_OK; /* a start, or not dlock's */
    name = malloc(f + rest - 4 + 1);
    if (name == NULL)
        return dlock__enomem();
    memcpy(name, k, f);
    memcpy(name + f, ff + 5, rest - 4);
    name[f + rest - 4] = '\0';
    if (dlock__check_name(name, f + rest - 4) != DLOCK_OK ||
        strncmp(name, rs->prefix, plen) != 0) {
        dlock__clearerr();
        free(name);
        return DLOCK_OK;
    }
    rc = dlock__names_add(&rs->names, name, f + rest - 4);
    free(name);
    return rc;
}

int dlock__etcd_last_runs(struct dlock_store *s, const char *prefix,
                          dlock_run_cb cb, void *payload)
{
    struct etcd_store *es = (struct etcd_store *)s;
    struct runs_scan rs = {.es = es, .prefix = prefix};
    /* Every key of a name under prefix starts with P and prefix up to its
     * first '/' (FIRST, or a longer FIRST for a prefix without one). */
    char *first = dlock__strndup(prefix, strcspn(prefix, "/"));
    int rc;

    if (first == NULL)
        return dlock__enomem();
    rc = dlock__etcd_scan_keys(es, first, runs_key, &rs);
    free(first);
    /* In no set order (dlock.h). */
    for (size_t i = 0; rc == DLOCK_OK && i < rs.names.n; i++)
        rc = dlock__etcd_runs(s, rs.names.v[i], 1, cb, payload);
    dlock__names_free(&rs.names);
    return rc;
}
