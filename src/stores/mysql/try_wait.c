/*
 * try_wait.c - the MySQL store's try_acquire and wait_slice: a lock's
 * pinned connection (session mode) or a pooled one (lease mode) around
 * one attempt (acquire.c, semaphore.c), and a wait slice that sleeps in
 * GET_LOCK on the key (or a semaphore's slot) where the server can wait,
 * else naps; and a wait's lease on the server (its waiter row).
 */
#include <mysqld_error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "my.h"

/* --- the try and the wait ---------------------------------------------- */

/* lk's state, its keys from its name, in *out; DLOCK_ENOMEM, or the
 * error of a SHA1 libcrypto could not compute (my_keys.h). */
static int new_lock(struct my_store *ms, struct dlock_lock *lk,
                    struct my_lock **out)
{
    struct my_lock *ml = calloc(1, sizeof(*ml));
    int rc;

    *out = NULL;
    if (ml == NULL)
        return dlock__enomem();
    rc = dlock__mysql_key(lk->name, lk->name_len, ms->mariadb, ml->key,
                          &ml->key_len);
    if (rc == DLOCK_OK && lk->limit > 1)
        rc = dlock__mysql_sem_prefix(lk->name, lk->name_len, ml->prefix);
    if (rc != DLOCK_OK) {
        free(ml);
        return rc;
    }
    ml->nkey_len = ml->key_len;
    memcpy(ml->nkey, ml->key, ml->key_len + 1);
    ml->slot = ml->wait_slot = -1;
    *out = ml;
    return DLOCK_OK;
}

/* Session mode pins a server connection per held lock and per wait:
 * count lk's against the handle's limit before pinning one.  A server
 * whose connections run out refuses every client ("Too many
 * connections"), not only this one. */
static int conns_take(struct my_store *ms, const struct dlock_lock *lk,
                      struct my_lock *ml)
{
    int64_t held;

    if (dlock__quota_take(&ms->conns, 1, &held)) {
        ml->counted = 1;
        return DLOCK_OK;
    }
    if (!ms->conns.is_auto)
        return dlock__seterr(DLOCK_ESTORE,
                             "mysql acquire of '%s': this handle holds %lld "
                             "locks and waits, a connection each, and "
                             "max_conns=%lld (%s)",
                             lk->name, (long long)held,
                             (long long)ms->conns.max, ms->base.url);
    return dlock__seterr(
        DLOCK_ESTORE,
        "mysql acquire of '%s': this handle holds %lld locks and waits, a "
        "connection each, half of the server's max_connections (%lld); "
        "more could leave its other clients with \"Too many connections\". "
        "Raise max_connections, or set ?max_conns=N (0: no limit), or use "
        "?mode=lease (%s)",
        lk->name, (long long)held,
        (long long)__atomic_load_n(&ms->conns.server, __ATOMIC_RELAXED),
        ms->base.url);
}

/* ml pins no connection any more: its count goes back. */
static void conns_give(struct my_store *ms, struct my_lock *ml)
{
    if (ml->counted)
        dlock__quota_give(&ms->conns, 1);
    ml->counted = 0;
}

void dlock__my_free_lock(struct my_store *ms, struct my_lock *ml)
{
    if (ml != NULL)
        conns_give(ms, ml);
    free(ml);
}

/* Pin a connection to ml: a pooled one, or with `fresh` a new one (the
 * retry of dlock__pool's policy).  *pooled: it came from the pool. */
static int pin(struct my_store *ms, struct dlock_lock *lk, struct my_lock *ml,
               int fresh, int *pooled)
{
    void *c = NULL;
    int rc;

    *pooled = 0;
    rc = fresh ? dlock__pool_open(&ms->pool, &c)
               : dlock__pool_get(&ms->pool, &c, pooled);
    if (rc != DLOCK_OK)
        return rc;
    ml->c = c;
    ml->c->name = lk->name;
    return DLOCK_OK;
}

/* Let go of ml's pinned connection: back to the pool after a clean
 * outcome, closed after a failure (its session's state is unknown). */
static void unpin(struct my_store *ms, struct my_lock *ml, int ok)
{
    if (ok)
        dlock__pool_put(&ms->pool, ml->c);
    else
        dlock__pool_discard(&ms->pool, ml->c);
    ml->c = NULL;
}

/* One try on a pinned connection (lock mode).  dlock__pool's policy: a
 * pooled connection that died while idle (a server restart, wait_timeout,
 * a KILL) fails before the server saw anything, so the try runs once more
 * on a fresh one; a fresh one's failure is final. */
static int pinned_try(struct my_store *ms, struct dlock_lock *lk,
                      struct my_lock *ml, int64_t deadline, int64_t *retry_ms)
{
    for (int fresh = 0;; fresh = 1) {
        int pooled, rc = pin(ms, lk, ml, fresh, &pooled);

        if (rc != DLOCK_OK)
            return rc;
        rc = lk->limit > 1
                 ? dlock__my_sem_attempt(ms, lk, ml, -1, deadline, retry_ms)
                 : dlock__my_attempt(ms, lk, ml, 0, deadline, retry_ms);
        if (rc == DLOCK_EUNAVAIL && pooled &&
            dlock__my_conn_error(mysql_errno(ml->c->db))) {
            unpin(ms, ml, 0);
            continue;
        }
        return rc;
    }
}

struct lease_call {
    struct my_store *ms;
    struct dlock_lock *lk;
    struct my_lock *ml;
    int64_t deadline, *retry_ms;
};

/* One try in lease mode, on a pooled connection lent for the call. */
static int lease_fn(void *conn, void *arg, int *dead)
{
    struct lease_call *k = arg;
    struct conn *c = conn;
    int rc;

    c->name = k->lk->name;
    k->ml->c = c;
    rc = k->lk->limit > 1 ? dlock__my_sem_attempt(k->ms, k->lk, k->ml, -1,
                                                  k->deadline, k->retry_ms)
                          : dlock__my_attempt(k->ms, k->lk, k->ml, 0,
                                              k->deadline, k->retry_ms);
    k->ml->c = NULL;
    *dead = rc == DLOCK_EUNAVAIL && dlock__my_conn_error(mysql_errno(c->db));
    return rc;
}

int dlock__my_try_acquire(struct dlock_store *s, struct dlock_lock *lk,
                          int64_t deadline, int64_t *retry_ms)
{
    struct my_store *ms = (struct my_store *)s;
    /* An earlier try of this acquire (BUSY) left what it saw of the
     * holder: go on from it. */
    struct my_lock *ml = lk->priv;
    int rc = ml != NULL ? DLOCK_OK : new_lock(ms, lk, &ml);

    lk->priv = NULL;
    if (rc != DLOCK_OK)
        return rc;
    if (lk->limit > 1 && !ms->have_lim) {
        dlock__my_free_lock(ms, ml);
        return dlock__seterr(DLOCK_ENOTSUP,
                             "semaphores on %s need the columns lim and "
                             "slot in %s, which this user may not add: ask "
                             "a DBA to run the ALTER of `dlock init --print`",
                             ms->base.url, ms->raw_table);
    }
    if (ms->lease_mode) {
        /* Nothing is pinned in lease mode. */
        struct lease_call k = {ms, lk, ml, deadline, retry_ms};

        rc = dlock__pool_run(&ms->pool, lease_fn, &k);
    } else {
        rc = conns_take(ms, lk, ml);
        if (rc == DLOCK_OK)
            rc = pinned_try(ms, lk, ml, deadline, retry_ms);
        if (rc != DLOCK_OK && ml->c != NULL)
            unpin(ms, ml, rc == DLOCK_BUSY || rc == DLOCK_EINVAL);
        if (rc == DLOCK_BUSY) {
            /* Keep what it saw of the holder (which session held the key
             * with a row, until when) for the wait that may follow: a
             * row deleted by someone else between this try and the
             * wait's first look must not turn a hung holder this acquire
             * saw with a lease into one it waits for without bound (see
             * dlock__my_rowless()).  No connection is kept; the core
             * forgets it if the acquire ends here. */
            conns_give(ms, ml);
            lk->priv = ml;
            return rc;
        }
    }
    if (rc != DLOCK_OK) {
        dlock__my_free_lock(ms, ml);
        return rc;
    }
    ml->held = 1;
    lk->priv = ml;
    return DLOCK_OK;
}

/* --- a wait's lease (see my.h) ------------------------------------------ */

/* Best effort: delete this wait's waiter row (its wait is over). */
static void drop_lease(struct my_store *ms, struct dlock_lock *lk,
                       struct my_lock *ml)
{
    struct sb b = {0};

    if (!ml->wleased || ml->c == NULL)
        return;
    ml->wleased = 0;
    MY_BIND(&b, ml->c, ms->sql.waiter_drop, MV_Z(ml->wname), MV_TOK(lk));
    (void)dlock__my_run(ms, ml->c, &b, NULL, "deleting a waiter row");
    dlock__my_sb_free(&b);
    dlock__clearerr();
}

/* Best effort, once a wait: delete the waiter rows of ml's key whose
 * lease is over and whose session does not hold the key (left by waiters
 * that crashed or were cut off).  One whose session holds it is the
 * proof a contender needs to fence that session off: it stays. */
static void tidy_leases(struct my_store *ms, struct my_lock *ml)
{
    char wname[WNAME_MAX + 1];
    struct sb b = {0};
    struct conn *c = ml->c;

    ml->wtidied = 1;
    if (dlock__my_wait_name(ml->key, ml->key_len, 0, wname) != DLOCK_OK) {
        dlock__clearerr(); /* tidying is best effort */
        return;
    }
    /* LIKE: the key's prefix (40 hex digits and '~'), then anything. */
    wname[41] = '%';
    wname[42] = '\0';
    MY_BIND(&b, c, ms->sql.waiter_tidy, MV_Z(wname), MV_KEY(ml));
    (void)dlock__my_run(ms, c, &b, NULL, "deleting stale waiter rows");
    dlock__my_sb_free(&b);
    dlock__clearerr();
}

/* One wait in this many tidies its key's stale waiter rows at once. */
#define TIDY_EVERY 256

/* Before a GET_LOCK wait of wait_ms on ml->key: write (or renew) this
 * session's waiter row, with a lease until wait_ms and half the ttl after
 * it (at least the ttl) on the server's clock, so that a grant at the
 * wait's last moment still leaves time to claim, and a granted session
 * that never claims is fenced off once it is over.  *ok 0: a live row of
 * that name that is not ours is there (only a name chosen to collide):
 * then no GET_LOCK wait. */
static int wait_lease(struct my_store *ms, struct dlock_lock *lk,
                      struct my_lock *ml, int64_t wait_ms, int *ok)
{
    char wname[WNAME_MAX + 1];
    struct conn *c = ml->c;
    struct sb b = {0};
    long long lease = (long long)(wait_ms + lk->ttl_ms / 2);
    int rc;

    if (lease < lk->ttl_ms)
        lease = (long long)lk->ttl_ms;
    /* MySQL's GET_LOCK takes whole seconds, and lease_get_lock() rounds
     * the time left down: a second more, or a wait of 1 s would always
     * be cut to 0 (a try, no wait). */
    if (!c->frac)
        lease += 999;
    *ok = 0;
    rc = dlock__my_wait_name(ml->key, ml->key_len, c->id, wname);
    if (rc != DLOCK_OK)
        return rc;
    if (ml->wleased && strcmp(wname, ml->wname) != 0)
        drop_lease(ms, lk, ml); /* another slot's */
    /* On a MEMORY table (ms->fast) stale waiter rows are litter: no
     * reader counts a waiter row whose lease is over, and no session id
     * comes back while the server lives, whose restart empties the table.
     * There they are tidied by a wait that outlasts its first slice and
     * by one wait in TIDY_EVERY of this handle, not by every hand-off; a
     * MyISAM table keeps its rows across a restart, where a reused
     * session id could meet one: there every wait tidies. */
    if (!ml->wtidied &&
        (!ms->fast || ml->wleased ||
         __atomic_add_fetch(&ms->waits, 1, __ATOMIC_RELAXED) % TIDY_EVERY == 0))
        tidy_leases(ms, ml);
    memcpy(ml->wname, wname, sizeof(wname));
    if (!ml->wleased) {
        /* A wait's first lease: a new row, as a claim (waiter_claim.sql)
         * or a drop deleted the last one; one there already goes to the
         * renew below. */
        MY_BIND(&b, c, ms->sql.waiter_insert, MV_Z(wname),
                MV_I((lease + 999) / 1000), MV_TOK(lk), MV_I(lease),
                MV_Z(dlock__hostname()), MV_I(dlock__pid()));
        if (b.oom)
            rc = dlock__enomem();
        else if (mysql_real_query(c->db, b.p, (unsigned long)b.len) == 0)
            *ok = ml->wleased = 1;
        else if (mysql_errno(c->db) != ER_DUP_ENTRY)
            rc = dlock__my_db_err(ms, c, "writing a waiter's lease");
        dlock__my_sb_free(&b);
        if (rc != DLOCK_OK || *ok)
            return rc;
    }
    /* Ours, or one whose lease is over (the same session's, left by an
     * earlier wait): renewed or taken.  acquired_ms before owner: SET
     * assigns left to right. */
    MY_BIND(&b, c, ms->sql.waiter_renew, MV_TOK(lk), MV_I((lease + 999) / 1000),
            MV_TOK(lk), MV_I(lease), MV_I(dlock__pid()),
            MV_Z(dlock__hostname()), MV_Z(wname), MV_TOK(lk));
    rc = dlock__my_run(ms, c, &b, NULL, "writing a waiter's lease");
    *ok = ml->wleased = rc == DLOCK_OK && mysql_affected_rows(c->db) == 1;
    dlock__my_sb_free(&b);
    return rc;
}

/* Granted (this session holds the key's GET_LOCK) and the wait's lease
 * written: claim in one statement where the store can (ms->fast, a
 * lock), the waiter row becoming the holder row, with its fence, on
 * condition that the lease is current (waiter_claim.sql).  *claimed 0:
 * nothing changed (a row of the key is there, the lease is over, or not
 * this store's kind): the caller's attempt and confirm_lease() follow. */
static int claim_waiter(struct my_store *ms, struct dlock_lock *lk,
                        struct my_lock *ml, int *claimed)
{
    struct conn *c = ml->c;
    struct sb b = {0};
    int64_t sent;
    int full, rc;

    *claimed = 0;
    if (!ms->fast || lk->limit > 1 || !ml->wleased)
        return DLOCK_OK;
    if (!c->seeded && (rc = dlock__my_fseq_seed(ms, c)) != DLOCK_OK)
        return rc;
    full = ml->key_len != lk->name_len ||
           memcmp(ml->key, lk->name, lk->name_len) != 0;
    if (full)
        MY_BIND(&b, c, ms->sql.waiter_claim[1], MV_KEY(ml),
                MV_I((lk->ttl_ms + 999) / 1000), MV_I(lk->ttl_ms),
                MV_Z(dlock__hostname()), MV_I(dlock__pid()),
                MV_S(lk->name, lk->name_len), MV_Z(ml->wname), MV_TOK(lk),
                MV_KEY(ml));
    else
        MY_BIND(&b, c, ms->sql.waiter_claim[0], MV_KEY(ml),
                MV_I((lk->ttl_ms + 999) / 1000), MV_I(lk->ttl_ms),
                MV_Z(dlock__hostname()), MV_I(dlock__pid()), MV_Z(ml->wname),
                MV_TOK(lk), MV_KEY(ml));
    if (b.oom) {
        dlock__my_sb_free(&b);
        return dlock__enomem();
    }
    c->used_ms = sent = dlock__now_ms();
    if (mysql_real_query(c->db, b.p, (unsigned long)b.len) != 0) {
        dlock__my_sb_free(&b);
        if (mysql_errno(c->db) == ER_DUP_ENTRY)
            return DLOCK_OK; /* a row of the key: claim_row() judges it */
        return dlock__my_db_err(ms, c, "claiming after a wait");
    }
    dlock__my_sb_free(&b);
    if (mysql_affected_rows(c->db) != 1)
        return DLOCK_OK;
    /* The waiter row is the holder row now: no waiter row is left. */
    ml->wleased = 0;
    lk->fence = (uint64_t)mysql_insert_id(c->db);
    if (lk->fence == 0) {
        (void)dlock__my_delete_own_row(ms, c, lk, ml);
        dlock__my_release_getlock(ms, c, ml);
        return dlock__seterr(DLOCK_ESTORE,
                             "taking a fence on %s: the server returned no "
                             "value",
                             ms->base.url);
    }
    if (sent + lk->ttl_ms > lk->lease_end)
        lk->lease_end = sent + lk->ttl_ms;
    *claimed = 1;
    return DLOCK_OK;
}

/* Granted and claimed (our row is in): keep it only if this wait's lease
 * is still current, deleting the waiter row on that condition.  If it is
 * not (this process was stopped or cut off longer than its lease, and a
 * contender may be fencing its session off), the claim is given up again:
 * DLOCK_BUSY, and the wait goes on. */
static int confirm_lease(struct my_store *ms, struct dlock_lock *lk,
                         struct my_lock *ml)
{
    struct conn *c = ml->c;
    struct sb b = {0};
    int rc;

    if (!ml->wleased)
        return DLOCK_OK;
    ml->wleased = 0;
    MY_BIND(&b, c, ms->sql.waiter_confirm, MV_Z(ml->wname), MV_TOK(lk));
    rc = dlock__my_run(ms, c, &b, NULL, "claiming after a wait");
    dlock__my_sb_free(&b);
    if (rc != DLOCK_OK)
        return rc;
    if (mysql_affected_rows(c->db) == 1)
        return DLOCK_OK;
    dlock__my_tidy_lost(ms, c, lk, ml);
    if (lk->limit > 1)
        dlock__my_sem_tidy(ms, c, lk, ml);
    if (mysql_errno(c->db) != 0 && dlock__my_conn_error(mysql_errno(c->db)))
        return dlock__my_db_err(ms, c, "claiming after a wait");
    /* Our own waiter row, if it is still there (over, no contender yet). */
    ml->wleased = 1;
    drop_lease(ms, lk, ml);
    /* A contender that deleted our waiter row may be about to KILL this
     * session (it checked that the session holds the key, and may be
     * stopped or slow before its KILL): this session is never used again,
     * or a late KILL would hit it once it holds the key anew with a
     * current lease.  The wait goes on on a new connection. */
    unpin(ms, ml, 0);
    conns_give(ms, ml);
    lk->fence = 0;
    return dlock__seterr(DLOCK_BUSY,
                         "lock '%s' was granted to this wait after its "
                         "lease on the server had run out (was this "
                         "process stopped, or cut off?): let go again",
                         lk->name);
}

/* The longest GET_LOCK wait of one slice: half the ttl (at least 100 ms;
 * MySQL, which waits in whole seconds only, 1 s), so that a waiter's
 * lease (wait_lease()) stays close to its ttl. */
static int64_t lease_slice(const struct conn *c, const struct dlock_lock *lk,
                           int64_t left)
{
    int64_t cap = lk->ttl_ms / 2;

    if (cap < 100)
        cap = 100;
    if (!c->frac && cap < 1000)
        cap = 1000;
    return left < cap ? left : cap;
}

/* The acquire's cancel fired during a GET_LOCK (cancel.c's thread): KILL
 * QUERY it from another connection.  GET_LOCK then ends at once, killed
 * or (racing) granted; the wait's connection is closed either way
 * (dlock__my_wait_slice), which lets go of a grant.  The KILL has
 * returned before the watch is taken off, and the server forgets a KILL
 * QUERY that finds no query: it cannot hit a later statement. */
struct kill_arg {
    struct my_store *ms;
    unsigned long id;
};

static void kill_get_lock(void *arg)
{
    struct kill_arg *a = arg;
    struct sb b = {0};
    void *c = NULL;
    int pooled, rc;

    if (dlock__pool_get(&a->ms->pool, &c, &pooled) != DLOCK_OK)
        return;
    MY_BIND(&b, c, a->ms->sql.kill_query, MV_U(a->id));
    rc = dlock__my_run(a->ms, c, &b, NULL, "cancelling a wait");
    dlock__my_sb_free(&b);
    if (rc == DLOCK_OK)
        dlock__pool_put(&a->ms->pool, c);
    else
        dlock__pool_discard(&a->ms->pool, c);
}

/* The GET_LOCK wait of a slice, after wait_lease() wrote the lease (its
 * end, on the server's clock, in @dlock_wexp): at most wait_ms, and on
 * the server never past half a ttl before the lease's end, however late
 * the statement arrives (this process stopped, or the network slow, after
 * the lease was written).  A grant can then only come while the waiter
 * row is there and current, so no contender or other waiter's tidy can
 * have removed it: a granted session always has a lease to be fenced off
 * by.  Too late already: no wait (*got 0). */
static int lease_get_lock(struct my_store *ms, struct dlock_lock *lk,
                          struct my_lock *ml, int64_t wait_ms, int *got)
{
    struct conn *c = ml->c;
    struct sb b = {0};
    long long v = 0, half = (long long)(lk->ttl_ms / 2);
    int found, rc;

    MY_BIND(&b, c, ms->sql.lease_get_lock[c->frac != 0], MV_I(half), MV_KEY(ml),
            c->frac ? MV_MS(wait_ms) : MV_I(wait_ms / 1000), MV_I(half));
    struct kill_arg ka = {ms, c->id};
    uint64_t watch = dlock__cancel_watch(kill_get_lock, &ka);

    rc = dlock__my_run_int(ms, c, &b, &v, &found, "GET_LOCK");
    dlock__cancel_unwatch(watch);
    dlock__my_sb_free(&b);
    if (dlock__cancelled()) {
        /* Killed, or granted just before: never claimed. */
        *got = 0;
        return dlock__ecanceled();
    }
    if (rc == DLOCK_OK && !found)
        rc = dlock__seterr(DLOCK_ESTORE,
                           "GET_LOCK failed on %s (the server returned "
                           "NULL)",
                           ms->base.url);
    *got = rc == DLOCK_OK && v == 1;
    return rc;
}

/* A backoff nap of the wait, at most max_ms. */
static void nap(struct my_lock *ml, int64_t max_ms)
{
    int64_t d = dlock__backoff_ms(ml->spins++, dlock__rand32());

    (void)dlock__cancel_sleep_ms(d < max_ms ? d : max_ms);
}

/* The longest GET_LOCK on one slot in a semaphore's wait: a release of
 * another slot is seen when it ends. */
#define SEM_SLICE_MS 250

/* One slice of a semaphore's wait: the admission, then GET_LOCK on one
 * taken slot (chosen at random) for at most SEM_SLICE_MS; granted, the
 * admission again with that slot.  MySQL's GET_LOCK takes whole seconds:
 * there a nap stands for it (polling). */
static int sem_slice(struct my_store *ms, struct dlock_lock *lk,
                     struct my_lock *ml, int first, int64_t slice_ms,
                     int64_t *retry_ms)
{
    int64_t end = dlock__now_ms() + slice_ms, left;
    int rc, got = 0;

    if (first) {
        rc = dlock__my_sem_attempt(ms, lk, ml, -1, end, retry_ms);
        if (rc != DLOCK_BUSY)
            return rc;
        *retry_ms = -1;
    }
    left = dlock__remaining_ms(end);
    if (left > SEM_SLICE_MS)
        left = SEM_SLICE_MS;
    if (ml->wait_slot < 0 || !ml->c->frac) {
        nap(ml, left);
        return dlock__my_sem_attempt(ms, lk, ml, -1, end, retry_ms);
    }
    dlock__my_set_slot(ml, (unsigned)ml->wait_slot);
    left = lease_slice(ml->c, lk, left);
    rc = wait_lease(ms, lk, ml, left, &got);
    if (rc != DLOCK_OK)
        return rc;
    if (!got) {
        nap(ml, left);
        return dlock__my_sem_attempt(ms, lk, ml, -1, end, retry_ms);
    }
    rc = lease_get_lock(ms, lk, ml, left, &got);
    if (rc != DLOCK_OK)
        return rc;
    rc = dlock__my_sem_attempt(ms, lk, ml, got ? ml->slot : -1, end, retry_ms);
    if (rc == DLOCK_OK && got)
        rc = confirm_lease(ms, lk, ml);
    return rc;
}

/* The body of one slice on ml->c (see dlock__my_wait_slice). */
static int slice(struct my_store *ms, struct dlock_lock *lk, struct my_lock *ml,
                 int first, int tried, int64_t slice_ms, int64_t *retry_ms)
{
    int64_t end = dlock__now_ms() + slice_ms, left, sent;
    int rc, got = 0;

    if (lk->limit > 1)
        return sem_slice(ms, lk, ml, first, slice_ms, retry_ms);

    /* What the try before the wait saw of the holder (a moment ago) is
     * in ml (see dlock__my_rowless()): the wait starts from it, with its
     * waiter row.  A first slice with no try before it looks first. */
    if (first && !tried) {
        rc = dlock__my_attempt(ms, lk, ml, 0, end, retry_ms);
        if (rc != DLOCK_BUSY)
            return rc;
        *retry_ms = -1;
    }
    left = lease_slice(ml->c, lk, dlock__remaining_ms(end));
    if (!ml->c->frac && left < 1000) {
        /* The sub-second tail on MySQL, whose GET_LOCK takes whole seconds
         * only: a nap, then one more look. */
        nap(ml, left);
        return dlock__my_attempt(ms, lk, ml, 0, end, retry_ms);
    }
    /* A lease on the server before anything can be granted to us. */
    rc = wait_lease(ms, lk, ml, left, &got);
    if (rc != DLOCK_OK)
        return rc;
    if (!got) {
        nap(ml, left);
        return dlock__my_attempt(ms, lk, ml, 0, end, retry_ms);
    }
    rc = lease_get_lock(ms, lk, ml, left, &got);
    if (rc != DLOCK_OK)
        return rc;
    if (!got) {
        /* Slice over: look at the holder again (past its lease? its lease
         * left for the next slice). */
        return dlock__my_attempt(ms, lk, ml, 0, end, retry_ms);
    }
    rc = claim_waiter(ms, lk, ml, &got);
    if (rc != DLOCK_OK || got)
        return rc;
    sent = dlock__now_ms();
    rc = dlock__my_attempt(ms, lk, ml, 1, end, retry_ms);
    if (rc == DLOCK_OK)
        rc = confirm_lease(ms, lk, ml);
    if (rc == DLOCK_OK) {
        /* The row was written after the GET_LOCK came back: the lease
         * started then at the earliest. */
        if (sent + lk->ttl_ms > lk->lease_end)
            lk->lease_end = sent + lk->ttl_ms;
    } else if (rc == DLOCK_BUSY) {
        /* The GET_LOCK was free but a row is still there (a lease-mode or
         * half-made holder): do not spin on it. */
        nap(ml, dlock__remaining_ms(end));
    }
    return rc;
}

/* One slice of a wait, natively: GET_LOCK(key, slice) sleeps on the
 * server until the holder lets go or its session ends, on a connection of
 * the wait's own, kept in lk->priv from slice to slice (and with it what
 * the wait has seen of the holder).  The core sizes the slices; a slice
 * is clipped to what the connection's read timeout allows. */
int dlock__my_wait_slice(struct dlock_store *s, struct dlock_lock *lk,
                         int64_t slice_ms, int64_t *retry_ms)
{
    struct my_store *ms = (struct my_store *)s;
    struct my_lock *ml = lk->priv;
    /* The first slice: nothing yet, or only what the try saw. */
    int first = ml == NULL || ml->c == NULL, tried = ml != NULL, rc;

    if (first) {
        int pooled;

        if (lk->limit > 1 && !ms->have_lim)
            return dlock__my_try_acquire(s, lk, 0, retry_ms); /* ENOTSUP */
        lk->priv = NULL;
        if (ml == NULL && (rc = new_lock(ms, lk, &ml)) != DLOCK_OK)
            return rc;
        rc = conns_take(ms, lk, ml);
        if (rc == DLOCK_OK)
            rc = pin(ms, lk, ml, 0, &pooled);
        if (rc != DLOCK_OK) {
            dlock__my_free_lock(ms, ml);
            return rc;
        }
        lk->priv = ml;
    }
    if (slice_ms > dlock__my_max_slice(ms->timeout_ms))
        slice_ms = dlock__my_max_slice(ms->timeout_ms);
    rc = slice(ms, lk, ml, first, tried, slice_ms, retry_ms);
    if (rc == DLOCK_OK) {
        ml->held = 1;
        drop_lease(ms, lk, ml); /* if an attempt of its own took it */
    } else if (rc != DLOCK_BUSY) {
        /* The wait is over, and the connection's state unknown: closed,
         * which lets go of a GET_LOCK it may hold.  A cancelled wait's
         * connection still answers: its waiter row goes first, and a
         * GET_LOCK granted just before the cancel is let go of here, as
         * the server frees a closed session's locks only a moment after
         * the close, and the caller is told the name is not held. */
        if (dlock__cancelled() && ml->c != NULL) {
            drop_lease(ms, lk, ml);
            dlock__my_release_getlock(ms, ml->c, ml);
            dlock__clearerr();
        }
        unpin(ms, ml, 0);
        dlock__my_free_lock(ms, ml);
        lk->priv = NULL;
    }
    return rc;
}

void dlock__my_unwait(struct my_store *ms, struct dlock_lock *lk)
{
    struct my_lock *ml = lk->priv;

    lk->priv = NULL;
    if (ml->c != NULL) {
        drop_lease(ms, lk, ml);
        unpin(ms, ml, 1);
    }
    dlock__my_free_lock(ms, ml);
}
