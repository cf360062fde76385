/*
 * elect.c - the PostgreSQL store's leader values and observers
 * (store.h: value_set, value_get, watch, watch_end), in both modes.
 *
 * The value lives in dlock's own table dlock_leaders (one row per name:
 * the term it was written under and the value; sql/part-runs-ddl.sql,
 * created with the run tables).  value_set is one statement
 * (sql/value_set.sql): ownership as run_begin checks it, the record, and
 * a NOTIFY on the name's channel, delivered when it commits.  It runs
 * where the lock's other statements run: the lock's session, or a pooled
 * connection in lease mode.  A server whose tables predate it gets the
 * table created by the first value_set, as run_begin does.
 *
 * An observer LISTENs on the name's channel ('dlock_' and the name's
 * 64-bit hash, sql/part-channel.sql) on a connection of its own.
 * value_set and a candidate's release (held.c) NOTIFY there; nothing
 * else dlock does on the name does, so plain locks pay nothing.  A
 * notification is a wake-up only (R1): its channel and payload are not
 * read.  A holder whose session died, or whose lease ran out, is
 * announced by nobody: the core reads again every second.  Through a
 * pooler in transaction mode (PgBouncer) LISTEN hears nothing, and the
 * observer is left with that re-read.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg.h"

/* SQLSTATE undefined_table: dlock_leaders is not there (yet). */
#define UNDEFINED_TABLE "42P01"

static int set_once(struct pg_store *ps, struct dlock_lock *lk,
                    const char *const *v, PGresult **res, char state[6])
{
    const char *sql = ps->text.value_set[ps->lease_mode];

    if (ps->lease_mode)
        return dlock__pg_pooled(ps, "leader value", sql, 4, v, res, state);
    return dlock__pg_held_run_st(ps, lk, "leader value", -1, sql, 4, v, res,
                                 state);
}

int dlock__pg_value_set(struct dlock_store *s, struct dlock_lock *lk,
                        const char *value, size_t len)
{
    struct pg_store *ps = (struct pg_store *)s;
    char fence[24], state[6] = "";
    /* An empty value is none (as the core's dlock_lock view has it). */
    const char *v[4] = {lk->name, lk->token, fence,
                        value != NULL && len > 0 ? value : NULL};
    PGresult *res = NULL;
    int rc, ours;

    snprintf(fence, sizeof(fence), "%lld", (long long)lk->fence);
    rc = set_once(ps, lk, v, &res, state);
    if (rc == DLOCK_ESTORE && strcmp(state, UNDEFINED_TABLE) == 0) {
        /* A server whose tables predate election: create them (the
         * statement above changed nothing), then again. */
        rc = dlock__pg_pooled(ps, "creating the run tables", ps->text.init_runs,
                              0, NULL, &res, state);
        PQclear(res);
        res = NULL;
        if (rc == DLOCK_OK)
            rc = set_once(ps, lk, v, &res, state);
    }
    if (rc != DLOCK_OK) {
        PQclear(res);
        return rc;
    }
    if (PQntuples(res) != 1 || PQnfields(res) != 3) {
        PQclear(res);
        return dlock__seterr(DLOCK_ESTORE,
                             "postgres leader value: unexpected answer (%s)",
                             ps->base.url);
    }
    ours = dlock__pg_col_bool(res, 0, 0);
    PQclear(res);
    return ours ? DLOCK_OK : dlock__pg_found_lost(ps, lk);
}

int dlock__pg_value_get(struct dlock_store *s, const char *name,
                        uint64_t *fence, char **value, size_t *len)
{
    struct pg_store *ps = (struct pg_store *)s;
    const char *v[1] = {name};
    char state[6] = "";
    PGresult *res = NULL;
    int64_t f;
    int rc, n;

    *fence = 0;
    *value = NULL;
    *len = 0;
    rc = dlock__pg_pooled(ps, "leader value", ps->text.value_get, 1, v, &res,
                          state);
    if (rc == DLOCK_ESTORE && strcmp(state, UNDEFINED_TABLE) == 0) {
        PQclear(res);
        dlock__clearerr();
        return DLOCK_OK; /* no table: nobody ever published */
    }
    if (rc != DLOCK_OK) {
        PQclear(res);
        return rc;
    }
    f = dlock__pg_col_i64(res, 0, 0, 0);
    if (PQntuples(res) != 1 || PQnfields(res) != 2 || f <= 0 ||
        PQgetisnull(res, 0, 1)) {
        PQclear(res);
        return DLOCK_OK;
    }
    n = PQgetlength(res, 0, 1);
    *value = dlock__strndup(PQgetvalue(res, 0, 1), (size_t)n);
    PQclear(res);
    if (*value == NULL)
        return dlock__enomem();
    *len = (size_t)n;
    *fence = (uint64_t)f;
    return DLOCK_OK;
}

/* --- watch ----------------------------------------------------------- */

struct watch {
    PGconn *c;
};

static int watch_broken(struct pg_store *ps, PGconn *c)
{
    const char *m = PQerrorMessage(c);

    return dlock__seterr(
        DLOCK_EUNAVAIL, "%s: the observer's connection broke%s%.*s",
        ps->base.url, *m ? ": " : "", (int)strcspn(m, "\n"), m);
}

static int subscribe(struct pg_store *ps, const char *name, struct watch **out)
{
    const char *v[1] = {name};
    char state[6] = "";
    PGresult *res = NULL;
    struct watch *w;
    int rc;

    w = calloc(1, sizeof(*w));
    if (w == NULL)
        return dlock__enomem();
    rc = dlock__pg_connect(ps, &w->c);
    if (rc == DLOCK_OK)
        rc = dlock__pg_run(w->c, ps->base.url, "observe", ps->text.listen_name,
                           1, v, ps->op_timeout_ms, &res, state);
    PQclear(res);
    res = NULL;
    /* Committed when it returns: a NOTIFY committed after this is
     * heard. */
    if (rc == DLOCK_OK)
        rc = dlock__pg_run(w->c, ps->base.url, "observe", ps->text.listen, 0,
                           NULL, ps->op_timeout_ms, &res, state);
    PQclear(res);
    if (rc != DLOCK_OK) {
        if (w->c != NULL)
            PQfinish(w->c);
        free(w);
        return rc;
    }
    *out = w;
    return DLOCK_OK;
}

/* Notifications that have arrived: 1 if any (each freed unread). */
static int take_notifies(PGconn *c)
{
    PGnotify *n;
    int got = 0;

    while ((n = PQnotifies(c)) != NULL) {
        got = 1;
        PQfreemem(n);
    }
    return got;
}

int dlock__pg_watch(struct dlock_store *s, const char *name, void **state,
                    int64_t slice_ms)
{
    struct pg_store *ps = (struct pg_store *)s;
    struct watch *w = *state;
    int64_t end = dlock__now_ms() + slice_ms;

    if (w == NULL) {
        int rc = subscribe(ps, name, &w);

        if (rc != DLOCK_OK)
            return rc;
        *state = w;
        if (slice_ms <= 0)
            return DLOCK_OK;
    }
    if (take_notifies(w->c))
        return DLOCK_OK;
    for (;;) {
        struct pollfd p[2] = {{PQsocket(w->c), POLLIN, 0}, {-1, POLLIN, 0}};
        int64_t left = end - dlock__now_ms();
        int n;

        if (p[0].fd < 0 || PQstatus(w->c) != CONNECTION_OK)
            return watch_broken(ps, w->c);
        p[1].fd = dlock__cancel_fd();
        if (left <= 0 || dlock__cancelled())
            return DLOCK_OK;
        n = poll(p, p[1].fd >= 0 ? 2 : 1, (int)(left < 1000 ? left : 1000));
        if (n < 0)
            continue; /* EINTR: the loop looks at the time again */
        if (p[1].fd >= 0 && (p[1].revents & POLLIN))
            return DLOCK_OK; /* the core sees the cancel */
        if (n == 0)
            continue;
        if (!PQconsumeInput(w->c))
            return watch_broken(ps, w->c);
        if (take_notifies(w->c))
            return DLOCK_OK;
    }
}

void dlock__pg_watch_end(struct dlock_store *s, void *state)
{
    struct watch *w = state;

    (void)s;
    if (w == NULL)
        return;
    /* Closing the session ends its LISTEN. */
    PQfinish(w->c);
    free(w);
}
