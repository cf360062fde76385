/*
 * runs.c - the MySQL store's run records (include/dlock.h, "Runs";
 * store.h: run_begin, run_end, runs, last_runs), in both modes.
 *
 * Two InnoDB tables of dlock's own, named after the lock table (?table=;
 * never its-mieger's table itself), created on first use or by `dlock
 * init`:
 *   NAME_runs    one row per kept run: (name, fence) -> full_name, host,
 *                pid, start_ms, end_ms, result, status
 *   NAME_runsum  one row per name: its last run's start and fence, and
 *                the fence of its last run that succeeded (NULL: none)
 *   NAME_rkeep   one row per name: how many runs it keeps (dlock_keep_runs;
 *                no row: DLOCK_RUNS_KEPT), how many it holds, and the
 *                summary's last fence when that count was right
 * `name` is the lock's key, as in the lock table (the name itself up to
 * 64 characters, see keys.h): the unit this store excludes by; the whole
 * name is in full_name (binary).  Times are milliseconds on the server's
 * clock (NOW(6)), as the lock table's leases.
 *
 * run_begin is one round trip on the lock's own connection (session mode:
 * its pinned one, whose session holds the GET_LOCK; lease mode: a pooled
 * one): one packet of statements in one transaction (the connections
 * allow multi-statements, see conn.c) that
 *   - counts lk's live row as extend() checks it (session mode: also that
 *     this session holds the GET_LOCK; lease mode: the row is locked FOR
 *     UPDATE, so no takeover can delete it until the transaction ends);
 *   - reads the name's suspension record (NAME_susp, share-locked);
 *   - reads the name's summary FOR UPDATE, then its keep row FOR UPDATE
 *     (keep_runs locks them in the same order);
 *   - decides (-1: not ours, 2: suspended, before any rule, 0: skip,
 *     1: go) with the server's time;
 *   - and only when going ahead: marks the newest run (the summary's
 *     last fence: each begin marks the one before, so no other can be
 *     RUNNING) ABANDONED if it still runs, inserts the run, drops the
 *     oldest over the name's setting by the key (name, fence) with a
 *     LIMIT of how many (the count in the keep row: recounted only when
 *     that row is missing, planted out of range, or behind the summary
 *     because an older dlock ran meanwhile), records the count, sets the
 *     summary's last start; nothing in it grows with the runs kept;
 *   - answers the decision and the run that decided it (or the one
 *     before the new one).
 * Every write is conditional on the decision, so "not ours", "suspended"
 * and "skip" write nothing.  A session-mode takeover of our lock KILLs this
 * session, which rolls the transaction back.  A packet whose COMMIT got through
 * but whose answer was lost and that is sent again (the pool's retry)
 * finds its own fence as the last run and goes ahead again.
 *
 * The plain lock cycle never touches these tables.
 *
 * Elections (value_set, value_get) keep the leader value in a third
 * InnoDB table, NAME_leader: (name, the key as above) -> full_name,
 * fence (the term), value (utf8mb4 TEXT, at most DLOCK_VALUE_MAX bytes),
 * created on first use or by `dlock init` as the run tables are.
 * value_set is run_begin's ownership test and an upsert in one
 * transaction on the lock's own connection, conditional on it: a lock no
 * longer ours writes nothing (DLOCK_LOST).  No notifications:
 * dlock_observe() re-reads every DLOCK_OBSERVE_POLL_MS.
 *
 * A job's suspension lives in a fourth table, NAME_susp (suspend.c);
 * run_begin reads its record in its own packet, before any rule, and a
 * suspended name writes nothing.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "my.h"

static int run_tx_tables(struct my_store *ms, struct conn *c,
                         const struct sb *b, MYSQL_RES **res, int create,
                         const char *what)
{
    return dlock__my_tx_tables(ms, c, b, res, create, T_RUNS, what);
}

/* A run from a row of (full_name, fence, host, pid, start_ms, end_ms,
 * result, status) at row[i..]. */
static void read_run(MYSQL_ROW row, const unsigned long *lens, int i,
                     dlock_run *r)
{
    size_t n = row[i] != NULL ? lens[i] : 0;

    memset(r, 0, sizeof(*r));
    if (n > DLOCK_NAME_MAX)
        n = DLOCK_NAME_MAX;
    if (n > 0)
        memcpy(r->name, row[i], n);
    r->name[n] = '\0';
    r->fence = row[i + 1] ? strtoull(row[i + 1], NULL, 10) : 0;
    dlock__strlcpy(r->host, row[i + 2] ? row[i + 2] : "", sizeof(r->host));
    r->pid = row[i + 3] ? strtoll(row[i + 3], NULL, 10) : 0;
    r->start_ms = row[i + 4] ? strtoll(row[i + 4], NULL, 10) : 0;
    r->end_ms = row[i + 5] ? strtoll(row[i + 5], NULL, 10) : 0;
    r->result = row[i + 6] ? atoi(row[i + 6]) : DLOCK_RUN_RUNNING;
    r->status = row[i + 7] ? atoi(row[i + 7]) : -1;
    if (r->result == DLOCK_RUN_RUNNING || r->result == DLOCK_RUN_ABANDONED)
        r->end_ms = 0;
}

/* --- calls on a lock ---------------------------------------------------- */

struct rcall {
    struct my_store *ms;
    struct dlock_lock *lk;
    struct my_lock *ml;
    int (*op)(struct rcall *k, struct conn *c);
    const dlock_run_rule *rule;
    const char *host;
    int64_t pid;
    int *go;
    dlock_run *last;
    int result, status;
    const char *value; /* value_set: len bytes */
    size_t len;
};

/* Session mode: these transactions run on the session whose GET_LOCK is
 * the lock, and the server ending it (R13) would end the lock before its
 * lease.  So its idle bound is a whole lease here, as long as a stopped
 * holder keeps the name anyway (a contender KILLs it then): the packet
 * starts by raising it and, once committed, sets it back.  A packet that
 * fails midway leaves it raised, on this connection only. */
/* Is c the session whose GET_LOCK is ml's lock?  Not in lease mode, nor a
 * pooled connection (run_end after the lock's own broke): those hold no
 * GET_LOCK to lose. */
static int lock_session(const struct my_store *ms, const struct conn *c,
                        const struct my_lock *ml)
{
    return !ms->lease_mode && ml != NULL && c == ml->c;
}

/* Bind the values v[0..n) to text, or on the lock's own session to
 * held (held_tx.sql: text between raising its idle bound to a lease and
 * setting it back). */
static void bind_held(struct sb *b, struct my_store *ms, struct conn *c,
                      const struct dlock_lock *lk, const struct my_lock *ml,
                      const char *text, const char *held,
                      const struct my_val *v, size_t n)
{
    struct my_val all[40];

    if (!lock_session(ms, c, ml) || n + 2 > sizeof(all) / sizeof(all[0])) {
        dlock__my_bind(b, c, text, v, n);
        return;
    }
    all[0] = dlock__my_idle_val(ms, lk->ttl_ms);
    memcpy(all + 1, v, n * sizeof(*v));
    all[n + 1] = dlock__my_idle_val(ms, 0);
    dlock__my_bind(b, c, held, all, n + 2);
}

static int begin_op(struct rcall *k, struct conn *c)
{
    struct my_store *ms = k->ms;
    struct dlock_lock *lk = k->lk;
    struct my_val f = MV_U(lk->fence);
    long long period = (long long)k->rule->period_ms;
    struct my_val once = MV_I(k->rule->once != 0);
    struct my_val key = MV_S(k->ml->nkey, k->ml->nkey_len);
    struct my_val name = MV_S(lk->name, lk->name_len);
    /* sql/run_begin.sql: own.sql's values (its last not in lease mode),
     * then its own. */
    struct my_val v[] = {MV_KEY(k->ml),
                         MV_TOK(lk),
                         MV_KEY(k->ml),
                         key,
                         name,
                         key,
                         key,
                         f,
                         once,
                         MV_I(period),
                         MV_I(period / 2),
                         f,
                         once,
                         key,
                         key,
                         f,
                         name,
                         MV_Z(k->host),
                         MV_I(k->pid),
                         f,
                         key,
                         f,
                         key,
                         f,
                         key,
                         name,
                         f,
                         key,
                         name,
                         f,
                         f,
                         key,
                         key,
                         name};
    struct sb b = {0};
    MYSQL_RES *res = NULL;
    MYSQL_ROW row;
    size_t n = sizeof(v) / sizeof(v[0]);
    long long go;
    int rc;

    if (ms->lease_mode) { /* own.sql without its GET_LOCK: no third key */
        memmove(&v[2], &v[3], (n - 3) * sizeof(v[0]));
        n--;
    }
    bind_held(&b, ms, c, lk, k->ml, ms->sql.run_begin, ms->sql.run_begin_held,
              v, n);
    rc = run_tx_tables(ms, c, &b, &res, 1, "run_begin");
    dlock__my_sb_free(&b);
    if (rc != DLOCK_OK)
        return rc;
    row = res != NULL ? mysql_fetch_row(res) : NULL;
    if (row == NULL || row[0] == NULL) {
        mysql_free_result(res);
        return dlock__seterr(DLOCK_ESTORE, "run_begin on %s: no answer",
                             ms->base.url);
    }
    go = strtoll(row[0], NULL, 10);
    if (go == 2) {
        /* Suspended: no run; who suspended it and since when (the
         * record's by_whom and since_ms after the run's columns). */
        *k->go = 0;
        dlock__my_susp_run(res, row, 11, k->last);
        mysql_free_result(res);
        return DLOCK_OK;
    }
    if (go == 1 || go == 0) {
        unsigned long long show = row[1] ? strtoull(row[1], NULL, 10) : 0;
        unsigned long long okf = row[2] ? strtoull(row[2], NULL, 10) : 0;

        *k->go = (int)go;
        if (row[4] != NULL) {
            read_run(row, mysql_fetch_lengths(res), 3, k->last);
        } else if (go == 0 && show != 0) {
            /* The run that decided was dropped as too old: its fence
             * and, for a success, its result. */
            k->last->fence = show;
            k->last->status = -1;
            if (show == okf) {
                k->last->result = DLOCK_RUN_EXITED;
                k->last->status = 0;
            }
        }
    }
    mysql_free_result(res);
    if (go == 1 || go == 0)
        return DLOCK_OK;
    if (go != -1)
        return dlock__seterr(DLOCK_ESTORE,
                             "run_begin on %s: unexpected answer %lld",
                             ms->base.url, go);
    dlock__my_tidy_lost(ms, c, lk, k->ml);
    return dlock__lost(lk, "its lease ran out or it was broken");
}

static int end_op(struct rcall *k, struct conn *c)
{
    struct my_store *ms = k->ms;
    struct my_val f = MV_U(k->lk->fence);
    struct my_val key = MV_S(k->ml->nkey, k->ml->nkey_len);
    /* sql/run_end.sql; after a success with run_end_ok.sql */
    struct my_val v[] = {MV_I(k->result), MV_I(k->status), key, f, f, key, f};
    int ok = k->result == DLOCK_RUN_EXITED && k->status == 0;
    struct sb b = {0};
    MYSQL_RES *res = NULL;
    int rc;

    bind_held(&b, ms, c, k->lk, k->ml, ms->sql.run_end[ok],
              ms->sql.run_end_held[ok], v, ok ? 7 : 4);
    /* No tables: no such run (DLOCK_OK, as a run dropped as too old). */
    rc = run_tx_tables(ms, c, &b, &res, 0, "run_end");
    mysql_free_result(res);
    dlock__my_sb_free(&b);
    return rc;
}

static int rcall_fn(void *conn, void *arg, int *dead)
{
    struct rcall *k = arg;
    struct conn *c = conn;
    uint64_t w = dlock__my_watch(k->ms, c);
    int rc = k->op(k, c);

    dlock__io_unwatch(w);
    *dead = rc != DLOCK_OK && rc != DLOCK_LOST &&
            dlock__my_conn_error(mysql_errno(c->db));
    return rc;
}

/* k->op on the lock's pinned connection (session mode): its session
 * failing is the lock's loss (its GET_LOCK went with it).  *failed: the
 * connection broke (it is discarded). */
static int pinned_run(struct rcall *k, int *failed)
{
    struct my_lock *ml = k->ml;
    uint64_t w = dlock__my_watch(k->ms, ml->c);
    int rc = k->op(k, ml->c);

    dlock__io_unwatch(w);
    *failed = 0;
    if (rc != DLOCK_OK && rc != DLOCK_LOST &&
        dlock__my_conn_error(mysql_errno(ml->c->db))) {
        char why[512];

        *failed = 1;
        snprintf(why, sizeof(why),
                 "its connection to %s failed (%s), and its GET_LOCK went "
                 "with the session",
                 k->ms->base.url, mysql_error(ml->c->db));
        dlock__pool_discard(&k->ms->pool, ml->c);
        ml->c = NULL;
        rc = dlock__lost(k->lk, why);
    }
    return rc;
}

int dlock__my_run_begin(struct dlock_store *s, struct dlock_lock *lk,
                        const dlock_run_rule *rule, const char *host,
                        int64_t pid, int *go, dlock_run *last)
{
    struct rcall k = {(struct my_store *)s,
                      lk,
                      lk->priv,
                      begin_op,
                      rule,
                      host,
                      pid,
                      go,
                      last,
                      0,
                      0,
                      NULL,
                      0};
    int failed;

    *go = 0;
    if (k.ml == NULL || !k.ml->held || (!k.ms->lease_mode && k.ml->c == NULL))
        return dlock__lost(lk, "its connection was lost earlier");
    if (k.ml->c == NULL)
        return dlock__pool_run(&k.ms->pool, rcall_fn, &k);
    return pinned_run(&k, &failed);
}

int dlock__my_run_end(struct dlock_store *s, struct dlock_lock *lk, int result,
                      int status)
{
    struct rcall k = {(struct my_store *)s,
                      lk,
                      lk->priv,
                      end_op,
                      NULL,
                      NULL,
                      0,
                      NULL,
                      NULL,
                      result,
                      status,
                      NULL,
                      0};
    struct my_lock tmp;
    int failed = 1, rc;

    if (k.ml == NULL) {
        /* Its state is gone (cannot happen while the core holds lk):
         * the keys again, from the name. */
        memset(&tmp, 0, sizeof(tmp));
        rc = dlock__mysql_key(lk->name, lk->name_len, k.ms->mariadb, tmp.key,
                              &tmp.key_len);
        if (rc != DLOCK_OK)
            return rc;
        tmp.nkey_len = tmp.key_len;
        memcpy(tmp.nkey, tmp.key, tmp.key_len + 1);
        k.ml = &tmp;
    }
    /* On the lock's own session while it has one; after that broke (the
     * lock is lost, the run still ends), on a pooled one. */
    if (k.ml->c != NULL) {
        rc = pinned_run(&k, &failed);
        if (!failed)
            return rc;
    }
    return dlock__pool_run(&k.ms->pool, rcall_fn, &k);
}

/* --- elections: the leader value ---------------------------------------- */

/* sql/value_set.sql: the value, only while lk still holds its lock (as
 * run_begin checks it), in one transaction. */
static int set_op(struct rcall *k, struct conn *c)
{
    struct my_store *ms = k->ms;
    struct dlock_lock *lk = k->lk;
    /* own.sql's values (its last not in lease mode), then its own. */
    struct my_val v[] = {MV_KEY(k->ml),
                         MV_TOK(lk),
                         MV_KEY(k->ml),
                         MV_S(k->ml->nkey, k->ml->nkey_len),
                         MV_S(lk->name, lk->name_len),
                         MV_U(lk->fence),
                         MV_S(k->value, k->len)};
    struct sb b = {0};
    MYSQL_RES *res = NULL;
    MYSQL_ROW row;
    size_t n = sizeof(v) / sizeof(v[0]);
    long long own;
    int rc;

    if (ms->lease_mode) { /* own.sql without its GET_LOCK: no third key */
        memmove(&v[2], &v[3], (n - 3) * sizeof(v[0]));
        n--;
    }
    bind_held(&b, ms, c, lk, k->ml, ms->sql.value_set, ms->sql.value_set_held,
              v, n);
    rc = dlock__my_tx_tables(ms, c, &b, &res, 1, T_LEADER, "proclaim");
    dlock__my_sb_free(&b);
    if (rc != DLOCK_OK)
        return rc;
    row = res != NULL ? mysql_fetch_row(res) : NULL;
    own = row != NULL && row[0] != NULL ? strtoll(row[0], NULL, 10) : -1;
    mysql_free_result(res);
    if (own == 1)
        return DLOCK_OK;
    if (own != 0)
        return dlock__seterr(DLOCK_ESTORE, "proclaim on %s: no answer",
                             ms->base.url);
    dlock__my_tidy_lost(ms, c, lk, k->ml);
    return dlock__lost(lk, "its lease ran out or it was broken");
}

int dlock__my_value_set(struct dlock_store *s, struct dlock_lock *lk,
                        const char *value, size_t len)
{
    struct rcall k = {(struct my_store *)s,
                      lk,
                      lk->priv,
                      set_op,
                      NULL,
                      NULL,
                      0,
                      NULL,
                      NULL,
                      0,
                      0,
                      value != NULL ? value : "",
                      len};
    int failed;

    if (k.ml == NULL || !k.ml->held || (!k.ms->lease_mode && k.ml->c == NULL))
        return dlock__lost(lk, "its connection was lost earlier");
    if (k.ml->c == NULL)
        return dlock__pool_run(&k.ms->pool, rcall_fn, &k);
    return pinned_run(&k, &failed);
}

struct vget {
    struct my_store *ms;
    const char *name;
    uint64_t fence;
    char *value;
    size_t len;
};

/* A row dlock could not have written (a fence that is not a positive
 * number, a value over DLOCK_VALUE_MAX bytes or not UTF-8: anyone who
 * may write the table can plant one) is no value, as is the empty value
 * of a leader without one. */
static int get_fn(void *conn, void *arg, int *dead)
{
    struct vget *g = arg;
    struct my_store *ms = g->ms;
    struct conn *c = conn;
    char key[KEY_MAX + 1];
    size_t len = strlen(g->name), klen;
    struct sb b = {0};
    MYSQL_RES *res = NULL;
    MYSQL_ROW row;
    int rc;

    *dead = 0;
    free(g->value);
    g->value = NULL;
    g->fence = 0;
    g->len = 0;
    rc = dlock__mysql_key(g->name, len, ms->mariadb, key, &klen);
    if (rc != DLOCK_OK)
        return rc;
    MY_BIND(&b, c, ms->sql.value_get, MV_S(key, klen), MV_S(g->name, len));
    rc = dlock__my_tx_tables(ms, c, &b, &res, 0, T_LEADER, "leader value");
    dlock__my_sb_free(&b);
    row = rc == DLOCK_OK && res != NULL ? mysql_fetch_row(res) : NULL;
    if (row != NULL && row[0] != NULL && row[1] != NULL) {
        unsigned long *lens = mysql_fetch_lengths(res);
        char *end = NULL;
        unsigned long long f = strtoull(row[0], &end, 10);

        if (row[0][0] >= '1' && row[0][0] <= '9' && end != NULL &&
            *end == '\0' && f != ULLONG_MAX && lens[1] > 0 &&
            lens[1] <= DLOCK_VALUE_MAX &&
            dlock__utf8_valid((const unsigned char *)row[1], lens[1])) {
            g->value = dlock__strndup(row[1], lens[1]);
            if (g->value == NULL) {
                rc = dlock__enomem();
            } else {
                g->fence = f;
                g->len = lens[1];
            }
        }
    }
    mysql_free_result(res);
    *dead = rc != DLOCK_OK && dlock__my_conn_error(mysql_errno(c->db));
    return rc;
}

int dlock__my_value_get(struct dlock_store *s, const char *name,
                        uint64_t *fence, char **value, size_t *len)
{
    struct vget g = {(struct my_store *)s, name, 0, NULL, 0};
    int rc = dlock__pool_run(&g.ms->pool, get_fn, &g);

    if (rc != DLOCK_OK) {
        free(g.value);
        g.value = NULL;
        g.fence = 0;
        g.len = 0;
    }
    *fence = g.fence;
    *value = g.value;
    *len = g.len;
    return rc;
}

/* --- reading the records ------------------------------------------------ */

struct rlist {
    struct my_store *ms;
    const char *name; /* runs: the name; last_runs: the prefix */
    unsigned max;
    dlock_run *v;
    size_t n, cap;
};

static int rlist_add(struct rlist *l, MYSQL_ROW row, const unsigned long *lens)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 8;
        dlock_run *nv = realloc(l->v, cap * sizeof(*nv));

        if (nv == NULL)
            return dlock__enomem();
        l->v = nv;
        l->cap = cap;
    }
    read_run(row, lens, 0, &l->v[l->n++]);
    return DLOCK_OK;
}

/* The rows of b's SELECT into l, whose name starts with prefix (binary,
 * as list() compares). */
static int collect(struct my_store *ms, struct conn *c, struct sb *b,
                   struct rlist *l, const char *prefix, const char *what)
{
    size_t plen = strlen(prefix);
    MYSQL_RES *res = NULL;
    MYSQL_ROW row;
    int rc = run_tx_tables(ms, c, b, &res, 0, what);

    while (rc == DLOCK_OK && res != NULL && (row = mysql_fetch_row(res))) {
        unsigned long *lens = mysql_fetch_lengths(res);

        if (row[0] == NULL || lens[0] < plen || lens[0] > DLOCK_NAME_MAX ||
            memcmp(row[0], prefix, plen) != 0)
            continue;
        rc = rlist_add(l, row, lens);
    }
    mysql_free_result(res);
    return rc;
}

static int runs_fn(void *conn, void *arg, int *dead)
{
    struct rlist *l = arg;
    struct my_store *ms = l->ms;
    struct conn *c = conn;
    char key[KEY_MAX + 1];
    size_t len = strlen(l->name), klen;
    struct sb b = {0};
    int rc;

    l->n = 0;
    *dead = 0;
    rc = dlock__mysql_key(l->name, len, ms->mariadb, key, &klen);
    if (rc != DLOCK_OK)
        return rc;
    MY_BIND(&b, c, ms->sql.run_history, MV_S(key, klen), MV_S(l->name, len),
            MV_U(l->max));
    rc = collect(ms, c, &b, l, l->name, "history");
    dlock__my_sb_free(&b);
    *dead = rc != DLOCK_OK && dlock__my_conn_error(mysql_errno(c->db));
    return rc;
}

/* Each run to cb, with no connection held (cb may call the library). */
static int report(struct rlist *l, int rc, dlock_run_cb cb, void *payload)
{
    for (size_t i = 0; rc == DLOCK_OK && i < l->n; i++)
        rc = cb(&l->v[i], payload);
    free(l->v);
    return rc;
}

int dlock__my_runs(struct dlock_store *s, const char *name, unsigned max,
                   dlock_run_cb cb, void *payload)
{
    struct rlist l = {(struct my_store *)s, name, max, NULL, 0, 0};

    return report(&l, dlock__pool_run(&l.ms->pool, runs_fn, &l), cb, payload);
}

/* prefix as a LIKE pattern (escape character '!') and its '%', bound to
 * sql/run_last_like.sql's '?'. */
static void sb_like(struct sb *b, struct conn *c, const char *prefix,
                    const char *text)
{
    size_t n = strlen(prefix);
    char *p = malloc(2 * n + 2);
    size_t j = 0;

    if (p == NULL) {
        b->oom = 1;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (prefix[i] == '!' || prefix[i] == '%' || prefix[i] == '_')
            p[j++] = '!';
        p[j++] = prefix[i];
    }
    p[j++] = '%';
    MY_BIND(b, c, text, MV_S(p, j));
    free(p);
}

static int last_fn(void *conn, void *arg, int *dead)
{
    struct rlist *l = arg;
    struct my_store *ms = l->ms;
    struct conn *c = conn;
    struct sb b = {0};
    int rc;

    l->n = 0;
    if (l->name[0] != '\0') {
        /* sql/run_last.sql with run_last_like.sql */
        sb_like(&b, c, l->name, ms->sql.run_last[1]);
    } else {
        dlock__my_sb_add(&b, "%s", ms->sql.run_last[0]);
    }
    rc = collect(ms, c, &b, l, l->name, "last runs");
    dlock__my_sb_free(&b);
    *dead = rc != DLOCK_OK && dlock__my_conn_error(mysql_errno(c->db));
    return rc;
}

int dlock__my_last_runs(struct dlock_store *s, const char *prefix,
                        dlock_run_cb cb, void *payload)
{
    struct rlist l = {(struct my_store *)s, prefix, 0, NULL, 0, 0};

    return report(&l, dlock__pool_run(&l.ms->pool, last_fn, &l), cb, payload);
}

/* --- how many runs a name keeps ----------------------------------------- */

struct keep {
    struct my_store *ms;
    const char *name;
    unsigned n; /* keep_runs: the setting; kept_runs: the answer */
};

/* sql/run_keep_put.sql: the setting, and the runs over it dropped, in one
 * transaction (its tables made when missing: a database of an older
 * dlock). */
static int keep_fn(void *conn, void *arg, int *dead)
{
    struct keep *k = arg;
    struct my_store *ms = k->ms;
    struct conn *c = conn;
    char key[KEY_MAX + 1];
    size_t len = strlen(k->name), klen;
    struct sb b = {0};
    MYSQL_RES *res = NULL;
    int rc;

    *dead = 0;
    rc = dlock__mysql_key(k->name, len, ms->mariadb, key, &klen);
    if (rc != DLOCK_OK)
        return rc;
    {
        struct my_val kv = MV_S(key, klen);

        MY_BIND(&b, c, ms->sql.run_keep_put, kv, kv, kv, MV_U(k->n), kv, kv, kv,
                MV_S(k->name, len), MV_U(k->n));
    }
    rc = run_tx_tables(ms, c, &b, &res, 1, "keep runs");
    mysql_free_result(res);
    dlock__my_sb_free(&b);
    *dead = rc != DLOCK_OK && dlock__my_conn_error(mysql_errno(c->db));
    return rc;
}

int dlock__my_keep_runs(struct dlock_store *s, const char *name, unsigned n)
{
    struct keep k = {(struct my_store *)s, name, n};

    return dlock__pool_run(&k.ms->pool, keep_fn, &k);
}

/* sql/run_keep_get.sql.  A value dlock could not have written (not a
 * number, out of 1..DLOCK_RUNS_KEPT_MAX: anyone who may write the table
 * can plant one) is the default, never a size. */
static int kept_fn(void *conn, void *arg, int *dead)
{
    struct keep *k = arg;
    struct my_store *ms = k->ms;
    struct conn *c = conn;
    char key[KEY_MAX + 1];
    size_t len = strlen(k->name), klen;
    struct sb b = {0};
    MYSQL_RES *res = NULL;
    MYSQL_ROW row;
    int rc;

    *dead = 0;
    k->n = DLOCK_RUNS_KEPT;
    rc = dlock__mysql_key(k->name, len, ms->mariadb, key, &klen);
    if (rc != DLOCK_OK)
        return rc;
    MY_BIND(&b, c, ms->sql.run_keep_get, MV_S(key, klen));
    /* No table: nothing recorded yet, the default. */
    rc = run_tx_tables(ms, c, &b, &res, 0, "kept runs");
    dlock__my_sb_free(&b);
    row = rc == DLOCK_OK && res != NULL ? mysql_fetch_row(res) : NULL;
    if (row != NULL && row[0] != NULL) {
        char *end = NULL;
        long long v = strtoll(row[0], &end, 10);

        /* As run_begin.sql reads it: digits only, no sign or space. */
        if (row[0][0] >= '1' && row[0][0] <= '9' && *end == '\0' && v >= 1 &&
            v <= DLOCK_RUNS_KEPT_MAX)
            k->n = (unsigned)v;
    }
    mysql_free_result(res);
    *dead = rc != DLOCK_OK && dlock__my_conn_error(mysql_errno(c->db));
    return rc;
}

int dlock__my_kept_runs(struct dlock_store *s, const char *name, unsigned *n)
{
    struct keep k = {(struct my_store *)s, name, DLOCK_RUNS_KEPT};
    int rc = dlock__pool_run(&k.ms->pool, kept_fn, &k);

    *n = rc == DLOCK_OK ? k.n : DLOCK_RUNS_KEPT;
    return rc;
}
