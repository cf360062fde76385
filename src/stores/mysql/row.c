/*
 * row.c - one key's row and its lock, at the bottom of the MySQL store:
 * reading the row at a key and the holder in it, deleting our own row,
 * taking over a dead holder's row and KILLing a session past its lease,
 * GET_LOCK and RELEASE_LOCK, tidying a lost lock away, the CALL of a
 * session-mode procedure, and a session's login as the server shows it.  Every
 * other file of the store builds on these; this one calls only conn.c.
 */
#include <mysqld_error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "my.h"

/* Best effort: drop our GET_LOCK (once) on this connection. */
void dlock__my_release_getlock(struct my_store *ms, struct conn *c,
                               const struct my_lock *ml)
{
    struct sb b = {0};
    long long v;
    int found;

    MY_BIND(&b, c, ms->sql.release_getlock, MV_KEY(ml));
    (void)dlock__my_run_int(ms, c, &b, &v, &found, "RELEASE_LOCK");
    dlock__my_sb_free(&b);
}

/* Delete our own row (whatever state it is in). */
int dlock__my_delete_own_row(struct my_store *ms, struct conn *c,
                             const struct dlock_lock *lk,
                             const struct my_lock *ml)
{
    struct sb b = {0};
    int rc;

    MY_BIND(&b, c, ms->sql.delete_own_row, MV_KEY(ml), MV_TOK(lk));
    rc = dlock__my_run(ms, c, &b, NULL, "deleting a lock row");
    dlock__my_sb_free(&b);
    return rc;
}

/* End the session conn_id that holds ml's GET_LOCK past its lease, so it
 * loses the GET_LOCK and its pending work fails.  *killed is set when the
 * KILL was sent. */
int dlock__my_kill_holder(struct my_store *ms, struct conn *c,
                          const struct my_lock *ml, unsigned long long conn_id,
                          int *killed)
{
    struct sb b = {0};
    int sent;

    MY_BIND(&b, c, ms->sql.kill, MV_U(conn_id));
    if (b.oom) {
        dlock__my_sb_free(&b);
        return dlock__enomem();
    }
    sent = dlock__my_query(c, b.p, b.len) == 0;
    dlock__my_sb_free(&b);
    if (sent) {
        *killed = 1;
        return DLOCK_OK;
    }
    if (mysql_errno(c->db) == ER_KILL_DENIED_ERROR)
        return dlock__seterr(DLOCK_BUSY,
                             "lock '%.*s': its holder's lease ran out "
                             "but this user may not KILL its connection "
                             "%llu (needs CONNECTION ADMIN or SUPER): %s",
                             (int)ml->key_len, ml->key, conn_id,
                             mysql_error(c->db));
    if (mysql_errno(c->db) != ER_NO_SUCH_THREAD)
        return dlock__my_db_err(ms, c, "KILL of an expired holder");
    return DLOCK_OK;
}

/* Take over a dead holder's row: delete exactly that row if it is still
 * dead, then KILL its session if (and only if) that session still holds
 * our key's GET_LOCK.  *killed is set when a KILL was sent. */
int dlock__my_take_over(struct my_store *ms, struct conn *c,
                        const struct my_lock *ml, const struct holder *h,
                        int *killed)
{
    struct sb b = {0};
    long long used = 0;
    int found, rc;

    /* sql/take_over.sql: owner NULL has no '?' for it. */
    MY_BIND(&b, c, ms->sql.take_over[h->has_owner != 0], MV_KEY(ml),
            MV_U(h->conn_id), MV_I(h->created), MV_Z(h->owner));
    rc = dlock__my_run(ms, c, &b, NULL, "taking over an expired lock");
    if (rc != DLOCK_OK || mysql_affected_rows(c->db) != 1 || h->conn_id == 0 ||
        h->conn_id == c->id) {
        dlock__my_sb_free(&b);
        return rc;
    }
    dlock__my_sb_reset(&b);
    MY_BIND(&b, c, ms->sql.used_by, MV_KEY(ml));
    rc = dlock__my_run_int(ms, c, &b, &used, &found, "IS_USED_LOCK");
    dlock__my_sb_free(&b);
    if (rc == DLOCK_OK && found && (unsigned long long)used == h->conn_id)
        rc = dlock__my_kill_holder(ms, c, ml, h->conn_id, killed);
    return rc;
}

/* The row holding ml's key, if any (*found). */
int dlock__my_read_row(struct my_store *ms, struct conn *c,
                       const struct my_lock *ml, struct holder *h, int *found,
                       int want_name)
{
    struct sb b = {0};
    MYSQL_RES *res;
    MYSQL_ROW row;
    int rc;

    *found = 0;
    MY_BIND(&b, c, ms->sql.read_row[ms->mariadb != 0][ms->have_lim != 0],
            MV_KEY(ml));
    rc = dlock__my_run(ms, c, &b, &res, "acquire");
    dlock__my_sb_free(&b);
    if (rc != DLOCK_OK)
        return rc;
    row = res != NULL ? mysql_fetch_row(res) : NULL;
    if (row != NULL) {
        dlock__my_read_holder(row, mysql_fetch_lengths(res), h, want_name);
        *found = 1;
        if (want_name && h->name == NULL)
            rc = dlock__enomem();
    }
    mysql_free_result(res);
    return rc;
}

/* GET_LOCK(key, wait_ms): *got 1 if this session now holds it. */
int dlock__my_get_lock(struct my_store *ms, struct conn *c,
                       const struct my_lock *ml, int64_t wait_ms, int *got)
{
    struct sb b = {0};
    long long v = 0;
    int found, rc;

    /* MariaDB takes fractional seconds; MySQL whole ones (rounded down
     * here, never up past the caller's deadline). */
    MY_BIND(&b, c, ms->sql.get_lock[c->frac != 0], MV_KEY(ml),
            c->frac ? MV_MS(wait_ms) : MV_I(wait_ms / 1000));
    rc = dlock__my_run_int(ms, c, &b, &v, &found, "GET_LOCK");
    dlock__my_sb_free(&b);
    if (rc == DLOCK_OK && !found)
        rc = dlock__seterr(DLOCK_ESTORE,
                           "GET_LOCK failed on %s (the "
                           "server returned NULL)",
                           ms->base.url);
    *got = rc == DLOCK_OK && v == 1;
    return rc;
}

/* The procedure was refused or is gone (dropped, EXECUTE revoked, a
 * server of another version): the plain statements from now on. */
static int proc_unusable(unsigned e)
{
    return e == ER_SP_DOES_NOT_EXIST || e == ER_PROCACCESS_DENIED_ERROR ||
           e == ER_SP_WRONG_NO_OF_ARGS || e == ER_TABLEACCESS_DENIED_ERROR ||
           e == ER_DBACCESS_DENIED_ERROR || e == ER_NO_SUCH_TABLE;
}

/* Read the one-row answer of a CALL and the end of the CALL after it. */
static int call_result(struct my_store *ms, struct conn *c, long long *v0,
                       long long *v1, const char *what)
{
    MYSQL_RES *res = mysql_store_result(c->db);
    MYSQL_ROW row;
    int rc = DLOCK_OK, st;

    if (res == NULL)
        return mysql_errno(c->db) != 0
                   ? dlock__my_db_err(ms, c, what)
                   : dlock__seterr(DLOCK_ESTORE, "%s on %s: no result", what,
                                   ms->base.url);
    row = mysql_fetch_row(res);
    if (row == NULL || row[0] == NULL)
        rc = dlock__seterr(DLOCK_ESTORE, "%s on %s: no result", what,
                           ms->base.url);
    else {
        *v0 = strtoll(row[0], NULL, 10);
        if (v1 != NULL)
            *v1 = mysql_num_fields(res) > 1 && row[1] != NULL
                      ? strtoll(row[1], NULL, 10)
                      : 0;
    }
    mysql_free_result(res);
    while ((st = mysql_next_result(c->db)) == 0) {
        res = mysql_store_result(c->db);
        mysql_free_result(res);
    }
    if (st > 0 && rc == DLOCK_OK)
        rc = dlock__my_db_err(ms, c, what);
    return rc;
}

/* Run a CALL of a session-mode procedure: DLOCK_OK with its answer, a
 * failure, or DLOCK_ENOTSUP (nothing happened) if the procedure cannot be
 * used, and then never again on this handle. */
int dlock__my_call(struct my_store *ms, struct conn *c, struct sb *b,
                   long long *v0, long long *v1, const char *what)
{
    if (b->oom)
        return dlock__enomem();
    c->used_ms = dlock__now_ms();
    if (mysql_real_query(c->db, b->p, (unsigned long)b->len) != 0) {
        if (proc_unusable(mysql_errno(c->db))) {
            __atomic_store_n(&ms->have_proc, 0, __ATOMIC_RELAXED);
            return DLOCK_ENOTSUP;
        }
        return dlock__my_db_err(ms, c, what);
    }
    return call_result(ms, c, v0, v1, what);
}

void dlock__my_read_holder(MYSQL_ROW row, unsigned long *lens, struct holder *h,
                           int want_name)
{
    memset(h, 0, sizeof(*h));
    h->conn_id = row[0] ? strtoull(row[0], NULL, 10) : 0;
    h->has_owner = row[1] != NULL;
    dlock__strlcpy(h->owner, row[1] ? row[1] : "", sizeof(h->owner));
    h->acquired = row[2] ? atoi(row[2]) : 0;
    h->left = row[3] ? strtoll(row[3], NULL, 10) : 0;
    h->used_by = row[4] ? strtoull(row[4], NULL, 10) : 0;
    h->created = row[5] ? strtoll(row[5], NULL, 10) : 0;
    h->fence = row[6] ? strtoull(row[6], NULL, 10) : 0;
    dlock__strlcpy(h->host, row[7] ? row[7] : "", sizeof(h->host));
    h->pid = row[8] ? strtoll(row[8], NULL, 10) : 0;
    h->since = row[9] ? strtoll(row[9], NULL, 10) : 0;
    h->lim = row[11] ? (unsigned)strtoul(row[11], NULL, 10) : 1;
    if (h->lim == 0)
        h->lim = 1;
    if (want_name && row[10] != NULL) {
        h->name = dlock__strndup(row[10], lens[10]);
        h->name_len = lens[10];
    }
}

/* A row whose holder is gone: lease over, or (GET_LOCK-style rows) the
 * session that took the GET_LOCK no longer holds it. */
int dlock__my_holder_dead(const struct holder *h)
{
    return h->left <= 0 || (h->acquired && h->used_by != h->conn_id);
}

/* After finding the lock lost: tidy our row and GET_LOCK away. */
void dlock__my_tidy_lost(struct my_store *ms, struct conn *c,
                         const struct dlock_lock *lk, struct my_lock *ml)
{
    (void)dlock__my_delete_own_row(ms, c, lk, ml);
    if (!ms->lease_mode && ml->c != NULL) {
        long long v;
        int found;
        struct sb b = {0};

        /* Only if this session still holds it (after a takeover it does
         * not, and RELEASE_LOCK would just say so). */
        MY_BIND(&b, c, ms->sql.release_getlock_if_ours, MV_KEY(ml), MV_KEY(ml));
        (void)dlock__my_run_int(ms, c, &b, &v, &found, "RELEASE_LOCK");
        dlock__my_sb_free(&b);
    }
}

/* Session id's login and client address as the server shows them to us
 * (sql/session_of.sql): "" where it does not (another login's session,
 * without the PROCESS privilege). */
int dlock__my_session_of(struct my_store *ms, struct conn *c,
                         unsigned long long id, char *user, size_t ulen,
                         char *addr, size_t alen)
{
    struct sb b = {0};
    MYSQL_RES *res = NULL;
    MYSQL_ROW row;
    int rc;

    user[0] = addr[0] = '\0';
    MY_BIND(&b, c, ms->sql.session_of, MV_U(id));
    rc = dlock__my_run(ms, c, &b, &res, "status");
    dlock__my_sb_free(&b);
    if (rc == DLOCK_OK && res != NULL && (row = mysql_fetch_row(res)) != NULL) {
        dlock__strlcpy(user, row[0] ? row[0] : "", ulen);
        dlock__strlcpy(addr, row[1] ? row[1] : "", alen);
    }
    mysql_free_result(res);
    return rc;
}
