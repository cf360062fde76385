/* pg_xact: a lock that lives exactly as long as your own transaction, on
 * your own libpq connection (no second connection, nothing to release).
 *   pg_xact CONNINFO      e.g. postgres://app@db/app */
#include <dlock_pg.h>
#include <libpq-fe.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    PGconn *conn = PQconnectdb(argc > 1 ? argv[1] : "");
    PGresult *r;
    int rc;

    if (PQstatus(conn) != CONNECTION_OK) {
        fprintf(stderr, "pg_xact: %s", PQerrorMessage(conn));
        PQfinish(conn);
        return 69;
    }
    PQclear(PQexec(conn, "BEGIN"));
    rc = dlock_pg_xact_lock(conn, "examples/nightly-report", 2000);
    if (rc == DLOCK_OK) {
        /* ... the transaction's work, alone ... */
        r = PQexec(conn, "COMMIT"); /* releases the lock */
        printf("did the work under the lock: %s\n",
               PQresultStatus(r) == PGRES_COMMAND_OK ? "committed" : "failed");
        PQclear(r);
    } else {
        printf("not now: %s\n", rc == DLOCK_BUSY ? "busy" : dlock_errmsg());
        PQclear(PQexec(conn, "ROLLBACK"));
    }
    PQfinish(conn);
    return rc == DLOCK_OK || rc == DLOCK_BUSY ? 0 : 1;
}
