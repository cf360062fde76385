/*
 * conn.c - the SQLite store's one connection: its mutex, the busy handler
 * that waits for SQLite's write lock up to a deadline, prepared
 * statements (the one cached set), BEGIN IMMEDIATE / ROLLBACK, errors as
 * dlock codes.
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
