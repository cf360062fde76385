/*
 * conn.c - the SQLite store's one connection: its mutex, the busy handler
 * that waits for SQLite's write lock up to a deadline, prepared
 * statements, BEGIN IMMEDIATE / COMMIT / ROLLBACK, errors as dlock codes;
 * and the same, by store handle, for runs.c.
 */
#include <pthread.h>
#include <sqlite3.h>
#include <stdint.h>

#include "sq.h"

int dlock__sq_busy_handler(void *arg, int count)
{
    struct sqlite_store *ss = arg;
    int64_t left = ss->busy_deadline - dlock__now_ms();

    /* A cancelled acquire stops waiting for other writers too. */
    if (left <= 0 || dlock__cancelled())
        return 0;
    /* Writers hold the lock for microseconds: start with short naps. */
    dlock__sleep_ms(count < 4 ? 1 : count < 20 ? 2 : 5);
    return 1;
}

int dlock__sq_error(struct sqlite_store *ss, const char *what)
{
    int code = sqlite3_extended_errcode(ss->db);

    if ((code & 0xff) == SQLITE_BUSY || (code & 0xff) == SQLITE_LOCKED)
        return dlock__seterr(DLOCK_ESTORE,
                             "%s: the database %s stayed busy for longer "
                             "than the timeout",
                             what, ss->base.url);
    return dlock__seterr(DLOCK_ESTORE, "%s: %s (%s)", what,
                         sqlite3_errmsg(ss->db), ss->base.url);
}

int dlock__sq_is_busy(struct sqlite_store *ss)
{
    int code = sqlite3_errcode(ss->db);

    return code == SQLITE_BUSY || code == SQLITE_LOCKED;
}

sqlite3_stmt *dlock__sq_stmt(struct sqlite_store *ss, int q)
{
    if (ss->st[q] == NULL &&
        sqlite3_prepare_v3(ss->db, ss->sql[q], -1, SQLITE_PREPARE_PERSISTENT,
                           &ss->st[q], NULL) != SQLITE_OK)
        return NULL;
    sqlite3_reset(ss->st[q]);
    sqlite3_clear_bindings(ss->st[q]);
    return ss->st[q];
}

/* Run a statement that returns no rows (or whose rows are ignored). */
int dlock__sq_exec(struct sqlite_store *ss, int q)
{
    sqlite3_stmt *s = dlock__sq_stmt(ss, q);
    int rc;

    if (s == NULL)
        return SQLITE_ERROR;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW)
        ;
    sqlite3_reset(s);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

void dlock__sq_lock(struct sqlite_store *ss, int64_t deadline)
{
    pthread_mutex_lock(&ss->mu);
    ss->busy_deadline = deadline;
}

void dlock__sq_unlock(struct sqlite_store *ss)
{
    pthread_mutex_unlock(&ss->mu);
}

int64_t dlock__sq_deadline(struct sqlite_store *ss)
{
    return dlock__now_ms() + ss->op_timeout_ms;
}

int dlock__sq_begin(struct sqlite_store *ss)
{
    return dlock__sq_exec(ss, Q_BEGIN);
}

void dlock__sq_rollback(struct sqlite_store *ss)
{
    if (!sqlite3_get_autocommit(ss->db))
        (void)dlock__sq_exec(ss, Q_ROLLBACK);
}

/* --- for runs.c ---------------------------------------------------- */

sqlite3 *dlock__sqlite_db(struct dlock_store *st)
{
    return ((struct sqlite_store *)st)->db;
}

void dlock__sqlite_lock(struct dlock_store *st)
{
    struct sqlite_store *ss = (struct sqlite_store *)st;

    dlock__sq_lock(ss, dlock__sq_deadline(ss));
}

void dlock__sqlite_unlock(struct dlock_store *st)
{
    dlock__sq_unlock((struct sqlite_store *)st);
}

int dlock__sqlite_begin(struct dlock_store *st)
{
    struct sqlite_store *ss = (struct sqlite_store *)st;

    return dlock__sq_begin(ss) == SQLITE_OK ? DLOCK_OK
                                            : dlock__sq_error(ss, "begin");
}

int dlock__sqlite_commit(struct dlock_store *st)
{
    struct sqlite_store *ss = (struct sqlite_store *)st;

    return dlock__sq_exec(ss, Q_COMMIT) == SQLITE_OK
               ? DLOCK_OK
               : dlock__sq_error(ss, "commit");
}

void dlock__sqlite_rollback(struct dlock_store *st)
{
    dlock__sq_rollback((struct sqlite_store *)st);
}

int dlock__sqlite_error(struct dlock_store *st, const char *what)
{
    return dlock__sq_error((struct sqlite_store *)st, what);
}

int dlock__sqlite_owns(struct dlock_store *st, const struct dlock_lock *lk)
{
    struct sqlite_store *ss = (struct sqlite_store *)st;
    sqlite3_stmt *s = dlock__sq_stmt(ss, Q_TTL);
    int src;

    if (s == NULL)
        return -1;
    dlock__sq_bind_name(s, 1, lk);
    sqlite3_bind_text(s, 2, lk->token, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 3, dlock__sq_host_ms(&ss->id));
    sqlite3_bind_text(s, 4, ss->id.boot_id, -1, SQLITE_STATIC);
    src = sqlite3_step(s);
    sqlite3_reset(s);
    return src == SQLITE_ROW ? 1 : src == SQLITE_DONE ? 0 : -1;
}
