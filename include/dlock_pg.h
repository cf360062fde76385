/*
 * dlock_pg.h - PostgreSQL extras of libdlock: a transaction-scoped lock on
 * the caller's own connection.
 *
 * Installed only when libdlock was built with the PostgreSQL store.  Include
 * it after (or instead of) dlock.h; it needs libpq's header.
 */
#ifndef DLOCK_PG_H
#define DLOCK_PG_H

#include <stdint.h>

#include <libpq-fe.h>

#include "dlock.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Take the advisory lock `name` for the rest of the caller's current
 * transaction on `conn` (pg_advisory_xact_lock).  There is no release call:
 * COMMIT or ROLLBACK releases it, and so does ROLLBACK TO a savepoint made
 * before this call (RELEASE SAVEPOINT keeps it).
 *
 * The key is hashtextextended(name, 0), the key of dlock's default
 * session locks (postgres:// URLs without ?keys=hashtext): a
 * transaction lock and a dlock session lock on the same name exclude each
 * other.  No row is written to dlock's lock table, so the lock has no
 * fence and does not show in dlock_status()/dlock_list().
 *
 * A finite wait runs inside a savepoint of its own, named
 * dlock_xact_lock (SAVEPOINT dlock_xact_lock ... RELEASE SAVEPOINT
 * dlock_xact_lock), so running out of time does not abort the caller's
 * transaction, and the caller's lock_timeout is left as it was.  Do not
 * use that savepoint name yourself around this call.
 *
 * conn is the caller's: this call sends statements on it and waits for
 * their answers, so no other thread may use conn until it returns (libpq
 * connections are not thread-safe), and conn must not have a query in
 * flight or be in pipeline mode.
 *
 * @param conn     an open connection inside a transaction block (after
 *                 BEGIN; PQtransactionStatus() == PQTRANS_INTRANS).
 * @param name     1..DLOCK_NAME_MAX bytes of UTF-8, no NUL.
 * @param wait_ms  0: try once; > 0: wait up to this many milliseconds
 *                 (server side, lock_timeout); DLOCK_WAIT_FOREVER: wait
 *                 until acquired.
 * @return DLOCK_OK; DLOCK_BUSY if not acquired in time; DLOCK_EINVAL for a
 *         bad name or wait, a NULL conn, or a connection not inside a
 *         transaction; DLOCK_ESTORE if the server answered with an error
 *         (an aborted transaction, say); DLOCK_EUNAVAIL if the connection
 *         is broken.  dlock_errmsg() says more.
 */
DLOCK_EXTERN dlock_rc dlock_pg_xact_lock(PGconn *conn, const char *name,
                                         int64_t wait_ms);

#ifdef __cplusplus
}
#endif

#endif /* DLOCK_PG_H */
