/*
 * run.c - runs of a job under a lock: once, once per period, and the
 * record of each run (include/dlock.h, "Runs").  The decision and the
 * record are the store's, in one atomic step while the lock is held
 * (store.h: run_begin, run_end, runs); this file checks arguments and
 * calls them under the lock's mutex, as every other call on a lock.
 */
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "clock.h"
#include "errors.h"
#include "held.h"
#include "names.h"
#include "process.h"

struct begin_args {
    const dlock_run_rule *rule;
    int *go;
    dlock_run *last;
};

static int begin_call(struct dlock_store *s, struct dlock_lock *lk, void *arg)
{
    struct begin_args *a = arg;
    int rc;

    /* One run per holding: a run is named by its lock's fence, so a
     * second would be the first again (and a store's count of the runs
     * it keeps would take it for one more). */
    if (dlock__held_of(lk)->run_begun)
        return dlock__seterr(DLOCK_EINVAL,
                             "a run was begun on lock '%s' already (one "
                             "run per acquisition)",
                             lk->name);
    rc = s->ops->run_begin(s, lk, a->rule, dlock__hostname(),
                           (int64_t)dlock__pid(), a->go, a->last);

    if (rc == DLOCK_OK && *a->go)
        dlock__held_of(lk)->run_begun = 1;
    return rc;
}

static int no_runs(const struct dlock_store *s)
{
    return dlock__seterr(DLOCK_ENOTSUP, "the %s store keeps no run records",
                         s->ops->name);
}

dlock_rc dlock_run_begin(dlock_lock *lock, const dlock_run_rule *rule, int *go,
                         dlock_run **last)
{
    struct dlock__held *lk = dlock__held_of(lock);
    struct begin_args a;
    dlock_run *rec;
    int rc, shown;

    dlock__clearerr();
    if (last != NULL)
        *last = NULL;
    if (go == NULL)
        return dlock__seterr(DLOCK_EINVAL, "go is NULL");
    *go = 0;
    if (lk == NULL)
        return dlock__seterr(DLOCK_EINVAL, "lock is NULL");
    if (rule == NULL)
        return dlock__seterr(DLOCK_EINVAL, "rule is NULL");
    if (rule->period_ms < 0 || rule->period_ms > DLOCK_DURATION_MAX_MS)
        return dlock__seterr(
            DLOCK_EINVAL, "period_ms %lld is out of range (0..%lld)",
            (long long)rule->period_ms, (long long)DLOCK_DURATION_MAX_MS);
    if (lk->store != NULL && lk->store->ops->run_begin == NULL)
        return no_runs(lk->store);
    rec = calloc(1, sizeof(*rec));
    if (rec == NULL)
        return dlock__enomem();
    a.rule = rule;
    a.go = go;
    a.last = rec;
    rc = dlock__lock_call(lk, 1, begin_call, &a);
    if (rc != DLOCK_OK)
        *go = 0;
    /* A suspension's entry (fence 0) is no run: its host, who suspended
     * the name, is vetted text (suspend.c) or "?". */
    shown = rc == DLOCK_OK &&
            (rec->fence != 0 || (!*go && rec->result == DLOCK_RUN_SUSPENDED));
    if (shown) {
        memcpy(rec->name, lk->view.name, lk->view.name_len);
        rec->name[lk->view.name_len] = '\0';
        if (rec->result == DLOCK_RUN_SUSPENDED)
            dlock__suspension_vet_by(rec->host, sizeof(rec->host));
    }
    if (shown && last != NULL)
        *last = rec;
    else
        free(rec);
    if (rc == DLOCK_OK)
        dlock__clearerr();
    return rc;
}

struct end_args {
    int result, status;
};

static int end_call(struct dlock_store *s, struct dlock_lock *lk, void *arg)
{
    struct end_args *a = arg;

    if (!dlock__held_of(lk)->run_begun)
        return dlock__seterr(DLOCK_EINVAL,
                             "no run was begun on lock '%s' "
                             "(dlock_run_begin() said go)",
                             lk->name);
    return s->ops->run_end(s, lk, a->result, a->status);
}

dlock_rc dlock_run_end(dlock_lock *lock, int result, int status)
{
    struct dlock__held *lk = dlock__held_of(lock);
    struct end_args a = {result, status};
    int rc;

    dlock__clearerr();
    if (lk == NULL)
        return dlock__seterr(DLOCK_EINVAL, "lock is NULL");
    if (result != DLOCK_RUN_EXITED && result != DLOCK_RUN_SIGNALED &&
        result != DLOCK_RUN_LOST && result != DLOCK_RUN_TIMEDOUT)
        return dlock__seterr(DLOCK_EINVAL,
                             "result %d is not DLOCK_RUN_EXITED, "
                             "DLOCK_RUN_SIGNALED, DLOCK_RUN_LOST or "
                             "DLOCK_RUN_TIMEDOUT",
                             result);
    if (lk->store != NULL && lk->store->ops->run_end == NULL)
        return no_runs(lk->store);
    rc = dlock__lock_call(lk, 0, end_call, &a);
    if (rc == DLOCK_OK)
        dlock__clearerr();
    return rc;
}

int dlock_history(dlock_store *s, const char *name, unsigned max,
                  dlock_run_cb cb, void *payload)
{
    int rc;

    dlock__clearerr();
    rc = dlock__store_usable(s);
    if (rc != DLOCK_OK)
        return rc;
    if (cb == NULL)
        return dlock__seterr(DLOCK_EINVAL, "callback is NULL");
    if (name == NULL)
        return dlock__seterr(DLOCK_EINVAL, "lock name is NULL");
    rc = dlock__check_name(name, strlen(name));
    if (rc != DLOCK_OK)
        return rc;
    if (s->ops->runs == NULL)
        return no_runs(s);
    if (max == 0 || max > DLOCK_RUNS_KEPT_MAX)
        max = DLOCK_RUNS_KEPT_MAX;
    return s->ops->runs(s, name, max, cb, payload);
}

/* The checks dlock_keep_runs() and dlock_kept_runs() share. */
static int keep_call_ok(dlock_store *s, const char *name)
{
    int rc = dlock__store_usable(s);

    if (rc != DLOCK_OK)
        return rc;
    if (name == NULL)
        return dlock__seterr(DLOCK_EINVAL, "lock name is NULL");
    rc = dlock__check_name(name, strlen(name));
    if (rc != DLOCK_OK)
        return rc;
    return DLOCK_OK;
}

dlock_rc dlock_keep_runs(dlock_store *s, const char *name, unsigned n)
{
    int rc;

    dlock__clearerr();
    rc = keep_call_ok(s, name);
    if (rc != DLOCK_OK)
        return rc;
    if (n > DLOCK_RUNS_KEPT_MAX)
        return dlock__seterr(DLOCK_EINVAL,
                             "a name keeps 1..%d runs (0: the default, %d), "
                             "not %u",
                             DLOCK_RUNS_KEPT_MAX, DLOCK_RUNS_KEPT, n);
    if (s->ops->keep_runs == NULL)
        return no_runs(s);
    rc = s->ops->keep_runs(s, name, n == 0 ? DLOCK_RUNS_KEPT : n);
    if (rc == DLOCK_OK)
        dlock__clearerr();
    return rc;
}

dlock_rc dlock_kept_runs(unsigned *out, dlock_store *s, const char *name)
{
    unsigned n = DLOCK_RUNS_KEPT;
    int rc;

    dlock__clearerr();
    if (out == NULL)
        return dlock__seterr(DLOCK_EINVAL, "out is NULL");
    *out = 0;
    rc = keep_call_ok(s, name);
    if (rc != DLOCK_OK)
        return rc;
    if (s->ops->kept_runs == NULL)
        return no_runs(s);
    rc = s->ops->kept_runs(s, name, &n);
    if (rc != DLOCK_OK)
        return rc;
    /* A setting planted out of range is the default's bound (R9). */
    *out = n >= 1 && n <= DLOCK_RUNS_KEPT_MAX ? n : DLOCK_RUNS_KEPT;
    dlock__clearerr();
    return DLOCK_OK;
}

int dlock_last_runs(dlock_store *s, const char *prefix, dlock_run_cb cb,
                    void *payload)
{
    int rc = dlock__prefix_call_ok(s, cb != NULL, &prefix);

    if (rc != DLOCK_OK)
        return rc;
    if (s->ops->last_runs == NULL)
        return no_runs(s);
    return s->ops->last_runs(s, prefix, cb, payload);
}

void dlock_run_free(dlock_run *run)
{
    free(run);
}
