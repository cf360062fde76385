/*
 * xact.c - dlock_pg_xact_lock(): a transaction-scoped advisory lock on the
 * caller's own connection (pg_advisory_xact_lock; seed mpyw's
 * forTransaction).  No store handle, no lock table: COMMIT or ROLLBACK
 * releases it.  Its statements: sql/xact_*.sql, sent as they are (no
 * placeholders: there is no handle to fill them at open).
 */
#include <stdio.h>
#include <string.h>

#include "dlock_pg.h"
#include "pg.h"
#include "postgres_text.h"

static int xact_run(PGconn *c, const char *sql, int n, const char *const *v,
                    PGresult **res, char state[6])
{
    /* The caller's connection: no URL of ours to show. */
    return dlock__pg_run(c, "connection", "dlock_pg_xact_lock", sql, n, v,
                         INT64_MAX / 4, res, state);
}

dlock_rc dlock_pg_xact_lock(PGconn *conn, const char *name, int64_t wait_ms)
{
    char timeout[24], state[6];
    const char *v[2] = {name, timeout};
    PGresult *res;
    int rc, got;

    dlock__clearerr();
    if (conn == NULL)
        return dlock__seterr(DLOCK_EINVAL, "conn is NULL");
    if (name == NULL)
        return dlock__seterr(DLOCK_EINVAL, "lock name is NULL");
    rc = dlock__check_name(name, strlen(name));
    if (rc != DLOCK_OK)
        return rc;
    if (wait_ms < DLOCK_WAIT_FOREVER)
        return dlock__seterr(DLOCK_EINVAL,
                             "wait_ms %lld is negative (use "
                             "DLOCK_WAIT_FOREVER to wait forever)",
                             (long long)wait_ms);
    if (PQstatus(conn) != CONNECTION_OK)
        return dlock__seterr(DLOCK_EUNAVAIL,
                             "dlock_pg_xact_lock: the connection is broken");
    switch (PQtransactionStatus(conn)) {
    case PQTRANS_INTRANS:
        break;
    case PQTRANS_IDLE:
        return dlock__seterr(
            DLOCK_EINVAL,
            "dlock_pg_xact_lock('%s'): not inside a "
            "transaction (dlock__pg_run BEGIN first); a transaction "
            "lock outside one would be released at once",
            name);
    case PQTRANS_INERROR:
        return dlock__seterr(DLOCK_ESTORE,
                             "dlock_pg_xact_lock('%s'): the transaction "
                             "is aborted; ROLLBACK first",
                             name);
    default:
        return dlock__seterr(DLOCK_EINVAL,
                             "dlock_pg_xact_lock('%s'): the connection is "
                             "busy with another command",
                             name);
    }
    if (wait_ms == 0) {
        rc = xact_run(conn, dlock__text_postgres_xact_try, 1, v, &res, NULL);
        if (rc != DLOCK_OK)
            return rc;
        got = dlock__pg_col_bool(res, 0, 0);
        PQclear(res);
        if (!got)
            return dlock__seterr(DLOCK_BUSY,
                                 "lock '%s' is held by "
                                 "someone else",
                                 name);
        dlock__clearerr();
        return DLOCK_OK;
    }
    /* A savepoint of our own: a lock timeout then aborts only it, and its
     * set_config(lock_timeout) goes with it.  On success the old value is
     * put back (RELEASE SAVEPOINT would keep ours). */
    snprintf(timeout, sizeof(timeout), "%lld",
             wait_ms == DLOCK_WAIT_FOREVER ? 0LL : (long long)wait_ms);
    rc = xact_run(conn, dlock__text_postgres_xact_savepoint, 0, NULL, &res,
                  NULL);
    if (rc != DLOCK_OK)
        return rc;
    PQclear(res);
    rc = xact_run(conn, dlock__text_postgres_xact_wait, 2, v, &res, state);
    if (rc == DLOCK_OK) {
        const char *r[1];
        PGresult *res2;
        char old[64];

        dlock__strlcpy(old, PQntuples(res) > 0 ? PQgetvalue(res, 0, 0) : "0",
                       sizeof(old));
        PQclear(res);
        r[0] = old;
        rc = xact_run(conn, dlock__text_postgres_xact_release, 0, NULL, &res,
                      NULL);
        if (rc != DLOCK_OK)
            return rc;
        PQclear(res);
        rc = xact_run(conn, dlock__text_postgres_xact_restore, 1, r, &res2,
                      NULL);
        if (rc != DLOCK_OK)
            return rc;
        PQclear(res2);
        dlock__clearerr();
        return DLOCK_OK;
    }
    if (rc == DLOCK_EUNAVAIL)
        return rc;
    {
        int rc2 =
            xact_run(conn, dlock__text_postgres_xact_undo, 0, NULL, &res, NULL);

        if (rc2 != DLOCK_OK)
            return rc2;
        PQclear(res);
    }
    if (strcmp(state, "55P03") == 0)
        return dlock__seterr(DLOCK_BUSY,
                             "lock '%s' is held by someone "
                             "else (waited %lld ms)",
                             name, (long long)wait_ms);
    return rc; /* the server's message is still the thread's */
}
