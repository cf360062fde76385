/*
 * acquire.c - session mode's acquire: the try (on the mux, or on a
 * session of the lock's own), the wait's slices, semaphores' admissions
 * and waits, and the fencing off of hung holders on the way.  The
 * sessions it puts locks on, and a held lock's later statements:
 * sessions.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pg.h"

/* After terminating a hung holder, how long its key may take to go. */
#define TERMINATE_GRACE_MS 1000
/* How often a handle's exclusive try also tidies the name's rows of
 * other (dead) sessions: the full statement Q_TRY_X instead of the fast
 * Q_TRY_X1 / Q_TRY_XM (sql/try_x1.sql, try_xm.sql). */
#define TIDY_MS 10000

/* The acquire statements' parameters (lease mode's too). */
void dlock__pg_acq_params(struct dlock__pg_acq_params *p,
                          const struct dlock_lock *lk, int64_t lock_timeout_ms,
                          const char *sess)
{
    snprintf(p->ttl, sizeof(p->ttl), "%lld", (long long)lk->ttl_ms);
    snprintf(p->pid, sizeof(p->pid), "%ld", (long)dlock__pid());
    snprintf(p->timeout, sizeof(p->timeout), "%lld",
             (long long)lock_timeout_ms);
    p->v[0] = lk->name;
    p->v[1] = lk->token;
    p->v[2] = lk->shared ? "t" : "f";
    p->v[3] = p->ttl;
    p->v[4] = dlock__hostname();
    p->v[5] = p->pid;
    p->v[6] = p->timeout;
    p->v[7] = sess;
}

/* What an exclusive try's rows said of the holder's lease, when the key
 * was not got (sql/frag-lease-left.sql): LEFT_UNKNOWN when the statement
 * does not say (a shared try, a wait) or there is no row, LEFT_PAST when a
 * row is past its lease, else the most ms left. */
#define LEFT_UNKNOWN (-2)
#define LEFT_PAST (-1)

/* One statement that takes the advisory lock and writes the row, on s
 * (caller holds s->mu).  lock_timeout_ms 0: try;
 * else wait up to that long (server side; only on a session of the
 * attempt's own).  left (may be NULL): what an exclusive try that did not
 * get the key read of the holder's lease. */
static int session_attempt(struct pg_store *ps, struct sess *s,
                           struct dlock_lock *lk, int64_t lock_timeout_ms,
                           int64_t *left)
{
    struct dlock__pg_acq_params p;
    PGresult *res;
    char state[6];
    int q, rc, rc2;

    if (s->c == NULL)
        return dlock__seterr(DLOCK_EUNAVAIL,
                             "postgres acquire: the "
                             "session is gone (%s)",
                             ps->base.url);
    dlock__pg_acq_params(&p, lk, lock_timeout_ms, s->id);
    if (lock_timeout_ms == 0 && lk->shared) {
        q = Q_TRY_S;
    } else if (lock_timeout_ms == 0) {
        int64_t now = dlock__now_ms();
        int64_t last = __atomic_load_n(&ps->tidied_ms, __ATOMIC_RELAXED);

        /* The fast statements leave other sessions' rows of the name
         * alone; every TIDY_MS one try tidies them. */
        if (now - last >= TIDY_MS &&
            __atomic_compare_exchange_n(&ps->tidied_ms, &last, now, 0,
                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            q = Q_TRY_X;
        else
            q = s->own ? Q_TRY_X1 : Q_TRY_XM;
    } else
        q = lk->shared ? Q_WAIT_S : Q_WAIT_X;
    dlock__pg_cancellable = lock_timeout_ms > 0;
    rc = dlock__pg_runp(s->c, ps->base.url, "acquire", q, ps->sql[q], 8, p.v,
                        lock_timeout_ms + ps->op_timeout_ms, &res, state);
    dlock__pg_cancellable = 0;
    if (rc == DLOCK_EUNAVAIL) {
        dlock__pg_sess_retire(ps, s, 1);
        return rc;
    }
    if (rc == DLOCK_ESTORE) {
        /* A session advisory lock survives the statement's failure (it is
         * not transactional), and lock_timeout may have fired on a row
         * after the key was granted. */
        int timed_out = strcmp(state, "55P03") == 0;

        /* Even an exclusive key's own lock timeout (or a cancel) may
         * come in the moment the key is granted: PostgreSQL's
         * LockErrorCleanup keeps the grant, and the statement fails.
         * Without the unlock the key would stay with this session, pooled
         * later with nobody holding the name. */
        rc2 = dlock__pg_let_keys_go(ps, s);
        if (rc2 != DLOCK_OK)
            return rc2;
        return timed_out ? DLOCK_BUSY : rc;
    }
    if (!dlock__pg_col_bool(res, 0, 0)) {
        if (left != NULL && lock_timeout_ms == 0 && !lk->shared &&
            PQnfields(res) > 2)
            *left = dlock__pg_col_i64(res, 0, 2, LEFT_UNKNOWN);
        PQclear(res);
        return DLOCK_BUSY;
    }
    if (PQgetisnull(res, 0, 1)) {
        PQclear(res);
        s->dirty = 1;
        dlock__pg_sess_retire(ps, s, 0);
        return dlock__seterr(DLOCK_ESTORE,
                             "postgres acquire: no row "
                             "written for '%s' (%s)",
                             lk->name, ps->base.url);
    }
    lk->fence = (uint64_t)dlock__pg_col_i64(res, 0, 1, 0);
    PQclear(res);
    return DLOCK_OK;
}

struct holders {
    int64_t n;       /* dlock holders in our way */
    int64_t left_ms; /* longest lease left of the live ones, -1 */
    int64_t expired; /* past their lease, still holding the key */
    int64_t killed;  /* of those, terminated now */
    char why[300];   /* why a hung holder could not be terminated */
    char host[256];
    int64_t pid, backend;
    int64_t lim; /* the largest limit they asked */
};

/* Who holds the key we could not get, and fence off those past their
 * lease (caller holds s->mu).  Errors are not fatal: the caller just
 * waits. */
static void session_holders(struct pg_store *ps, struct sess *s,
                            const struct dlock_lock *lk, struct holders *h)
{
    const char *v[2] = {lk->name, lk->shared ? "t" : "f"};
    PGresult *res;
    char state[6];
    int rc;

    memset(h, 0, sizeof(*h));
    h->left_ms = -1;
    if (s->c == NULL ||
        dlock__pg_runp(s->c, ps->base.url, "acquire", Q_HOLDERS,
                       ps->sql[Q_HOLDERS], 2, v, ps->op_timeout_ms, &res,
                       NULL) != DLOCK_OK)
        return;
    h->n = dlock__pg_col_i64(res, 0, 0, 0);
    h->left_ms = dlock__pg_col_i64(res, 0, 1, -1);
    h->expired = dlock__pg_col_i64(res, 0, 2, 0);
    if (h->n > 0 && !PQgetisnull(res, 0, 3))
        dlock__strlcpy(h->host, PQgetvalue(res, 0, 3), sizeof(h->host));
    h->pid = dlock__pg_col_i64(res, 0, 4, 0);
    h->backend = dlock__pg_col_i64(res, 0, 5, 0);
    h->lim = dlock__pg_col_i64(res, 0, 6, 0);
    PQclear(res);
    if (h->expired == 0)
        return;
    rc = dlock__pg_run(s->c, ps->base.url, "acquire", ps->sql[Q_TERMINATE], 2,
                       v, ps->op_timeout_ms, &res, state);
    if (rc == DLOCK_OK) {
        for (int i = 0; i < PQntuples(res); i++)
            h->killed += dlock__pg_col_bool(res, i, 0);
        PQclear(res);
    } else {
        snprintf(h->why, sizeof(h->why), "%s%s", dlock_errmsg(),
                 strcmp(state, "42501") == 0
                     ? "; grant pg_signal_backend to this role, or use "
                       "the holder's role"
                     : "");
    }
}

/* An acquire that asked limit `want` of a name held with limit `held`. */
static int limit_msg(const struct dlock_lock *lk, int64_t held)
{
    return dlock__seterr(DLOCK_EINVAL,
                         "lock '%s' is held with limit %lld; this acquire "
                         "asked limit %u (every holder of a name must ask "
                         "the same limit)",
                         lk->name, (long long)held, lk->limit);
}

static int busy_msg(const struct dlock_lock *lk, const struct holders *h)
{

    if (h->why[0] != '\0')
        return dlock__seterr(DLOCK_BUSY,
                             "lock '%s' is held past its lease by backend "
                             "%lld (host %s, pid %lld), which could not be "
                             "terminated: %s",
                             lk->name, (long long)h->backend, h->host,
                             (long long)h->pid, h->why);
    if (h->n == 0)
        return dlock__seterr(DLOCK_BUSY,
                             "lock '%s' is held by a session with no dlock "
                             "row (psql, or another application using the "
                             "same advisory key)",
                             lk->name);
    return dlock__seterr(DLOCK_BUSY, "lock '%s' is held by %s pid %lld",
                         lk->name, h->host, (long long)h->pid);
}

static int hold(struct dlock_lock *lk, struct sess *s, int keyed)
{
    struct held *h = malloc(sizeof(*h));

    if (h == NULL)
        return dlock__enomem();
    h->s = s;
    h->keyed = keyed;
    h->slot = -1;
    h->nkeys = 0;
    lk->priv = h;
    return DLOCK_OK;
}

/* The lock was granted on s but cannot be kept (no memory): give it
 * back (caller holds s->mu). */
static void session_undo(struct pg_store *ps, struct sess *s,
                         struct dlock_lock *lk, int slot)
{
    char sl[16];
    const char *v[3] = {lk->name, lk->token, sl};
    int q = lk->limit > 1 ? Q_RELEASE_M
            : lk->shared  ? Q_RELEASE_S
                          : Q_RELEASE_X;
    PGresult *res;

    snprintf(sl, sizeof(sl), "%d", slot);
    if (s->c != NULL &&
        dlock__pg_runp(s->c, ps->base.url, "release", q, ps->sql[q],
                       lk->limit > 1 ? 3 : 2, v, ps->op_timeout_ms, &res,
                       NULL) == DLOCK_OK)
        PQclear(res);
    else
        dlock__pg_sess_retire(ps, s, 1);
}

/* One try, on the mux session, or on a session of its own for a lock
 * without auto-renewal: if such a lock outlives its lease unreleased, a
 * contender terminates its session, which must not take the process's
 * other (renewed, healthy) locks with it.  dlock__pool's policy: a session
 * that died while idle (a server restart) is replaced by one on a fresh
 * connection, once; a fresh one's failure is final. */
/* --- semaphores (limit > 1) ----------------------------------------- */

/* After a semaphore's full slot is waited for, how soon to look at all
 * slots again: a waiter blocks on one slot's key, so a release of
 * another slot is seen only when the slice ends. */
#define SEM_LOOK_MS 250

/* What an admission that did not get in says. */
struct sem_out {
    int64_t lim;     /* the limit in force, if another than ours; else 0 */
    int slot;        /* got: our slot */
    int64_t left_ms; /* full: soonest lease end of its holders, -1 */
    int wait;        /* full: the slot to wait on */
    int64_t killed;  /* full: hung holders terminated now (-1: refused) */
    char host[256];
    int64_t pid;
};

/* One admission (dlock_sem_acquire_v2) on s, caller holding s->mu.  have:
 * the slot whose key s already holds (after a wait), or -1 to try them
 * all.  DLOCK_OK with lk->fence and o->slot set; DLOCK_BUSY with o
 * filled; DLOCK_EINVAL when the name is held with another limit. */
static int sem_attempt(struct pg_store *ps, struct sess *s,
                       struct dlock_lock *lk, int have, struct sem_out *o)
{
    char lim[16], ttl[24], pid[24], hv[16];
    const char *v[8] = {lk->name,          lk->token, lim,   ttl,
                        dlock__hostname(), pid,       s->id, hv};
    PGresult *res;
    int rc;

    memset(o, 0, sizeof(*o));
    o->left_ms = -1;
    o->wait = -1;
    if (s->c == NULL)
        return dlock__seterr(DLOCK_EUNAVAIL,
                             "postgres acquire: the session is gone (%s)",
                             ps->base.url);
    snprintf(lim, sizeof(lim), "%u", lk->limit);
    snprintf(ttl, sizeof(ttl), "%lld", (long long)lk->ttl_ms);
    snprintf(pid, sizeof(pid), "%ld", (long)dlock__pid());
    snprintf(hv, sizeof(hv), "%d", have);
    rc = dlock__pg_runp(s->c, ps->base.url, "acquire", Q_SEM, ps->sql[Q_SEM], 8,
                        v, ps->op_timeout_ms, &res, NULL);
    if (rc == DLOCK_EUNAVAIL) {
        dlock__pg_sess_retire(ps, s, 1);
        return rc;
    }
    if (rc == DLOCK_ESTORE) {
        /* The function may have taken session keys before it failed:
         * let them go as session_attempt() does. */
        int rc2 = dlock__pg_let_keys_go(ps, s);

        return rc2 != DLOCK_OK ? rc2 : rc;
    }
    o->lim = dlock__pg_col_i64(res, 0, 2, 0);
    if (dlock__pg_col_bool(res, 0, 0)) {
        lk->fence = (uint64_t)dlock__pg_col_i64(res, 0, 1, 0);
        o->slot = (int)dlock__pg_col_i64(res, 0, 3, 0);
        PQclear(res);
        return DLOCK_OK;
    }
    o->left_ms = dlock__pg_col_i64(res, 0, 4, -1);
    o->wait = (int)dlock__pg_col_i64(res, 0, 5, -1);
    if (PQntuples(res) > 0 && !PQgetisnull(res, 0, 6))
        dlock__strlcpy(o->host, PQgetvalue(res, 0, 6), sizeof(o->host));
    o->pid = dlock__pg_col_i64(res, 0, 7, 0);
    o->killed = dlock__pg_col_i64(res, 0, 8, 0);
    PQclear(res);
    if (o->lim > 0)
        return limit_msg(lk, o->lim);
    if (o->host[0] != '\0')
        return dlock__seterr(DLOCK_BUSY,
                             "semaphore '%s' has all %u slots taken (one by "
                             "%s pid %lld)",
                             lk->name, lk->limit, o->host, (long long)o->pid);
    return dlock__seterr(DLOCK_BUSY,
                         "semaphore '%s' is not available: its slots are "
                         "taken, or its name is locked by a session with no "
                         "dlock row",
                         lk->name);
}

static int mux_attempt(struct pg_store *ps, struct dlock_lock *lk,
                       struct sess **sp, struct sem_out *o)
{
    for (int fresh = 0;; fresh = 1) {
        struct sess *s = NULL;
        int reused = 0;
        int rc = lk->auto_renew ? dlock__pg_mux_get(ps, &s, fresh, &reused)
                                : dlock__pg_sess_new(ps, &s, fresh);

        if (rc != DLOCK_OK)
            return rc;
        if (!lk->auto_renew)
            reused = s->reused; /* ours alone */
        pthread_mutex_lock(&s->mu);
        o->left_ms = LEFT_UNKNOWN;
        rc = lk->limit > 1 ? sem_attempt(ps, s, lk, -1, o)
                           : session_attempt(ps, s, lk, 0, &o->left_ms);
        s->reused = 1;
        pthread_mutex_unlock(&s->mu);
        if (rc == DLOCK_EUNAVAIL && reused && !fresh) {
            dlock__pg_sess_unref(ps, s);
            continue;
        }
        if (rc != DLOCK_OK && rc != DLOCK_BUSY) {
            dlock__pg_sess_unref(ps, s);
            return rc;
        }
        *sp = s;
        return rc;
    }
}

/* A semaphore's try, on the mux session (or its own, as for locks).  A
 * hung holder just terminated frees its slot within moments: the core's
 * wait (or the caller's next try) finds it. */
static int sem_try(struct pg_store *ps, struct dlock_lock *lk,
                   int64_t *retry_ms)
{
    struct sem_out o;
    struct sess *s = NULL;
    int rc = mux_attempt(ps, lk, &s, &o);

    if (rc != DLOCK_OK && rc != DLOCK_BUSY)
        return rc;
    if (rc == DLOCK_BUSY) {
        *retry_ms = o.killed > 0 ? 0 : o.left_ms;
    } else {
        rc = hold(lk, s, 1);
        if (rc == DLOCK_OK) {
            ((struct held *)lk->priv)->slot = o.slot;
            return rc;
        }
        pthread_mutex_lock(&s->mu);
        session_undo(ps, s, lk, o.slot);
        pthread_mutex_unlock(&s->mu);
    }
    dlock__pg_sess_unref(ps, s);
    return rc;
}

static int session_try(struct pg_store *ps, struct dlock_lock *lk,
                       int64_t deadline, int64_t *retry_ms)
{
    struct holders h;
    struct sem_out o;
    struct sess *s = NULL;
    int rc;

    if (lk->limit > 1)
        return sem_try(ps, lk, retry_ms);
    rc = mux_attempt(ps, lk, &s, &o);
    if (rc != DLOCK_OK && rc != DLOCK_BUSY)
        return rc;
    if (rc == DLOCK_BUSY && o.left_ms > 0 && lk->waits) {
        /* A waiter behind a holder within its lease, by the try's own
         * read of the rows: it waits (a slice ends with the lease, when
         * the look below runs) without the holders look, which reads
         * pg_locks (every lock partition of the server, on each
         * contended cycle).  A try that ends here, a row past its lease
         * or a key held with no row: the look, as before. */
        *retry_ms = o.left_ms;
        dlock__seterr(DLOCK_BUSY, "lock '%s' is held", lk->name);
    } else if (rc == DLOCK_BUSY) {
        int64_t until = dlock__now_ms() + TERMINATE_GRACE_MS, sent;

        pthread_mutex_lock(&s->mu);
        session_holders(ps, s, lk, &h);
        pthread_mutex_unlock(&s->mu);
        if (until > deadline)
            until = deadline;
        /* A hung holder is being terminated: its key goes within
         * moments.  Short naps, not a wait on the shared session. */
        for (unsigned i = 0; h.killed > 0 && rc == DLOCK_BUSY; i++) {
            int64_t nap = dlock__backoff_ms(i, dlock__rand32());

            if (dlock__now_ms() + nap > until)
                break;
            dlock__sleep_ms(nap);
            pthread_mutex_lock(&s->mu);
            sent = dlock__now_ms();
            rc = session_attempt(ps, s, lk, 0, NULL);
            pthread_mutex_unlock(&s->mu);
            /* Its row's lease started with this statement, after the
             * naps: counted from there, not from the first try. */
            if (rc == DLOCK_OK && sent + lk->ttl_ms > lk->lease_end)
                lk->lease_end = sent + lk->ttl_ms;
        }
        /* Refused by a semaphore's holders: no amount of waiting helps. */
        if (rc == DLOCK_BUSY && h.lim > 1) {
            rc = limit_msg(lk, h.lim);
        } else if (rc == DLOCK_BUSY) {
            *retry_ms = h.left_ms;
            busy_msg(lk, &h);
        }
    }
    if (rc == DLOCK_OK) {
        rc = hold(lk, s, 1);
        if (rc == DLOCK_OK)
            return rc;
        pthread_mutex_lock(&s->mu);
        session_undo(ps, s, lk, -1);
        pthread_mutex_unlock(&s->mu);
    }
    dlock__pg_sess_unref(ps, s);
    return rc;
}

int dlock__pg_session_try(struct pg_store *ps, struct dlock_lock *lk,
                          int64_t deadline, int64_t *retry_ms)
{
    int rc = dlock__pg_keys_take(ps, lk);

    if (rc != DLOCK_OK)
        return rc;
    rc = session_try(ps, lk, deadline, retry_ms);
    if (rc == DLOCK_OK)
        ((struct held *)lk->priv)->nkeys = dlock__pg_keys_of(lk);
    else
        dlock__quota_give(&ps->keys, dlock__pg_keys_of(lk));
    return rc;
}

/* One slice of a wait, natively (pg_advisory_lock under lock_timeout) on
 * a session of the wait's own, kept in lk->priv from slice to slice.
 * Between slices, a look at the holders: one past its lease is fenced
 * off, and the next slice ends when the live holder's lease does. */
/* One slice of a semaphore's wait, on the wait's own session s (caller
 * holds s->mu): look at every slot; if all are taken, block natively on
 * one of them (chosen at random among those held) under lock_timeout;
 * granted, be admitted on the slot already held.  So a release of that
 * slot, or its holder's death, wakes the waiter at once; a release of
 * another slot is seen when the slice ends, SEM_LOOK_MS at most. */
static int sem_slice(struct pg_store *ps, struct sess *s, struct dlock_lock *lk,
                     int64_t slice_ms, int64_t *retry_ms)
{
    struct held *h = lk->priv;
    struct sem_out o;
    char slot[16], tmo[24];
    const char *v[3] = {lk->name, slot, tmo};
    PGresult *res;
    char state[6];
    int64_t sent = dlock__now_ms();
    int rc = sem_attempt(ps, s, lk, -1, &o), wait;

    if (rc != DLOCK_BUSY)
        goto out;
    if (o.killed > 0) {
        /* Its slot goes within moments: look again soon. */
        *retry_ms = 0;
        return rc;
    }
    wait = o.wait;
    if (slice_ms > SEM_LOOK_MS)
        slice_ms = SEM_LOOK_MS;
    snprintf(slot, sizeof(slot), "%d", wait);
    snprintf(tmo, sizeof(tmo), "%lld", (long long)slice_ms);
    dlock__pg_cancellable = 1;
    rc = dlock__pg_runp(s->c, ps->base.url, "acquire", Q_SEM_WAIT,
                        ps->text.sem_wait, 3, v, slice_ms + ps->op_timeout_ms,
                        &res, state);
    dlock__pg_cancellable = 0;
    if (rc == DLOCK_EUNAVAIL) {
        dlock__pg_sess_retire(ps, s, 1);
        return rc;
    }
    if (rc == DLOCK_ESTORE) {
        /* The statement only waits for the slot's key, but a key granted
         * in the moment its lock_timeout or a cancel (57014) interrupts
         * it stays with the session although the statement failed
         * (PostgreSQL's LockErrorCleanup keeps a grant it finds): let it
         * go, or the slot stays taken by this session, pooled later with
         * nobody holding it.  The wait's session holds nothing else. */
        int rc2 = dlock__pg_let_keys_go(ps, s);

        if (rc2 != DLOCK_OK)
            return rc2;
        if (strcmp(state, "55P03") != 0)
            return rc;
        *retry_ms = o.left_ms;
        return dlock__seterr(DLOCK_BUSY,
                             "semaphore '%s' has all %u slots taken%s%s%s",
                             lk->name, lk->limit, o.host[0] ? " (one by " : "",
                             o.host, o.host[0] ? ")" : "");
    }
    PQclear(res);
    sent = dlock__now_ms();
    rc = sem_attempt(ps, s, lk, wait, &o);
    if (rc == DLOCK_BUSY)
        *retry_ms = 0; /* the slot was ours but the name's key was not */
out:
    if (rc == DLOCK_OK) {
        h->keyed = 1;
        h->slot = o.slot;
        if (sent + lk->ttl_ms > lk->lease_end)
            lk->lease_end = sent + lk->ttl_ms;
    }
    return rc;
}

/* The key was granted at the end of a wait statement sent up to a slice
 * ago, which wrote the row's lease from the grant, on the server's clock;
 * but this process can only count its lease from when it sent that
 * statement.  A waiter whose ttl is shorter than the slice would find its
 * lease over on its own count, give the grant up and queue again behind
 * the waiters that came after it.  So once the first renewal is due by
 * that count (a third of the ttl gone), the lease is renewed now, on the
 * session, and counted from this renewal's send time.  The lock is held
 * whatever it answers: a row that did not match (a lease over already,
 * a release --force) is the core's to judge as before (too late, or
 * LOST at the next renewal); a session that failed has lost the key.
 * Caller holds s->mu. */
static int late_grant(struct pg_store *ps, struct sess *s,
                      struct dlock_lock *lk)
{
    char ttl[24];
    const char *v[3] = {lk->name, lk->token, ttl};
    PGresult *res;
    int64_t sent = dlock__now_ms();
    int rc;

    if (sent - (lk->lease_end - lk->ttl_ms) <= lk->ttl_ms / 3)
        return DLOCK_OK;
    snprintf(ttl, sizeof(ttl), "%lld", (long long)lk->ttl_ms);
    rc =
        dlock__pg_runp(s->c, ps->base.url, "acquire", Q_EXTEND,
                       ps->text.extend[0], 3, v, ps->op_timeout_ms, &res, NULL);
    if (rc == DLOCK_EUNAVAIL) {
        dlock__pg_sess_retire(ps, s, 1);
        return rc;
    }
    if (rc != DLOCK_OK) {
        dlock__clearerr();
        return DLOCK_OK;
    }
    if (atoi(PQcmdTuples(res)) == 1 && sent + lk->ttl_ms > lk->lease_end)
        lk->lease_end = sent + lk->ttl_ms;
    PQclear(res);
    return DLOCK_OK;
}

int dlock__pg_wait_slice(struct dlock_store *st, struct dlock_lock *lk,
                         int64_t slice_ms, int64_t *retry_ms)
{
    struct pg_store *ps = (struct pg_store *)st;
    struct held *h = lk->priv;
    struct holders hd;
    struct sess *s;
    int64_t sent;
    int rc;

    if (h == NULL) {
        int64_t t0 = dlock__now_ms();

        /* The wait counts its keys from its first slice to its end. */
        rc = dlock__pg_keys_take(ps, lk);
        if (rc != DLOCK_OK)
            return rc;
        rc = dlock__pg_sess_new(ps, &s, 0);
        if (rc == DLOCK_OK) {
            rc = hold(lk, s, 0);
            if (rc != DLOCK_OK)
                dlock__pg_sess_unref(ps, s);
        }
        if (rc != DLOCK_OK) {
            dlock__quota_give(&ps->keys, dlock__pg_keys_of(lk));
            return rc;
        }
        h = lk->priv;
        h->nkeys = dlock__pg_keys_of(lk);
        /* A new session may have had to connect (tens of ms, more on a
         * loaded machine): the slice ends when it was asked to, not that
         * much later.  lock_timeout 0 would be forever: 1 ms at least. */
        slice_ms -= dlock__now_ms() - t0;
        if (slice_ms < 1)
            slice_ms = 1;
    }
    s = h->s;
    pthread_mutex_lock(&s->mu);
    if (lk->limit > 1) {
        rc = sem_slice(ps, s, lk, slice_ms, retry_ms);
        pthread_mutex_unlock(&s->mu);
        return rc;
    }
    sent = dlock__now_ms();
    rc = session_attempt(ps, s, lk, slice_ms, NULL);
    if (rc == DLOCK_OK) {
        h->keyed = 1;
        /* The lease started when the winning statement was sent, at the
         * earliest. */
        if (sent + lk->ttl_ms > lk->lease_end)
            lk->lease_end = sent + lk->ttl_ms;
        rc = late_grant(ps, s, lk);
    } else if (rc == DLOCK_BUSY) {
        session_holders(ps, s, lk, &hd);
        if (hd.lim > 1)
            rc = limit_msg(lk, hd.lim);
        else if (hd.killed > 0)
            *retry_ms = TERMINATE_GRACE_MS; /* its key goes within that */
        else if (hd.why[0] != '\0')
            *retry_ms = 1000; /* try to fence it off again soon */
        else
            *retry_ms = hd.left_ms;
        if (rc == DLOCK_BUSY)
            busy_msg(lk, &hd);
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}
