/*
 * contract.h - the contract's floor (docs/performance.md, "Cycles at the
 * cost of their contract"; issue 26) and the server's CPU time, shared by
 * dlock-floors and dlock-bench (contract.c).
 *
 * The floor is the least cycle that keeps what dlock promises: the lock,
 * a fence and a holder row (name, owner token, fence, lease end, holding
 * session, host, pid: what status, list and a waiter's judgement of a
 * hung holder read) written in ONE statement, and the row deleted and the
 * lock let go in ONE statement.  Each is sent the way dlock sends its own
 * (PostgreSQL: prepared, generic plans; MariaDB: text protocol).
 *
 *   PostgreSQL: pg_try_advisory_lock(hashtextextended(name, 0)) + nextval
 *     of an UNLOGGED sequence + INSERT of an UNLOGGED row, in one WITH;
 *     DELETE ... RETURNING + pg_advisory_unlock in one.
 *   MariaDB: GET_LOCK + NEXTVAL of a SEQUENCE + the row in one
 *     INSERT ... SELECT; DELETE ... AND RELEASE_LOCK(...) in one.  On a
 *     MEMORY table (what dlock creates for session mode) and on a MyISAM
 *     latin1 table of its-mieger's DDL with dlock's columns.
 *   etcd: a put of NAME/<lease hex> with the holder record as its value
 *     and a lease granted once (the lease is the lock's life, the key's
 *     create revision its fence), then a deleterange of that key: two
 *     POSTs to the v3 JSON gateway (/v3/kv/put, /v3/kv/deleterange) on
 *     one libcurl keep-alive connection, bodies built and replies parsed
 *     with json-c, as the store sends its own.  No compare, no queue
 *     read: the least any etcd lock keeping the contract sends.  With
 *     DLOCK_BENCH_FLOOR_ENGINE=txn: the same two round trips in the shape
 *     of etcd's own Mutex (the create-if-absent txn with the queue read,
 *     a delete guarded by the create revision), to tell the server's
 *     extra work for the recipe from dlock's client.
 *
 * Scratch objects dlock_cfloor_* are created and dropped again.  All
 * functions return 0 on success, -1 on failure.
 */
#ifndef DLOCK_BENCH_CONTRACT_H
#define DLOCK_BENCH_CONTRACT_H

#include <stddef.h>

#ifdef DLOCK_HAVE_POSTGRES
#include <libpq-fe.h>
#endif
#ifdef DLOCK_HAVE_MYSQL
#include <mysql.h>
#endif
#ifdef DLOCK_HAVE_ETCD
#include <curl/curl.h>
#endif

#if defined(DLOCK_HAVE_POSTGRES) || defined(DLOCK_HAVE_MYSQL) ||               \
    defined(DLOCK_HAVE_ETCD)
/* A new owner token (32 hex digits, as dlock's) in a static buffer, each
 * call another; the hand-off floors (handoff_*.c) draw theirs here too. */
const char *cfloor_owner(void);
#endif

#ifdef DLOCK_HAVE_POSTGRES
/* The sequence, the table and the two prepared statements on c. */
int cfloor_pg_setup(PGconn *c);
/* One acquire + release of the floor, each reply checked. */
int cfloor_pg_cycle(PGconn *c);
void cfloor_pg_teardown(PGconn *c);
/* The postmaster's pid (the parent of c's backend), -1 if unknown. */
long cfloor_pg_server_pid(PGconn *c);
#endif

#ifdef DLOCK_HAVE_MYSQL
/* The sequence and both tables; -1: the server has no SEQUENCE (MySQL,
 * MariaDB < 10.3). */
int cfloor_my_setup(MYSQL *c);
/* One cycle on engine 0 (MEMORY, utf8mb4: what dlock creates) or 1
 * (MyISAM latin1: its-mieger's DDL plus dlock's columns). */
int cfloor_my_cycle(MYSQL *c, int engine);
void cfloor_my_teardown(MYSQL *c);
/* mariadbd's pid, from its pid file (same machine only); -1 if unknown. */
long cfloor_my_server_pid(MYSQL *c);
#endif

#ifdef DLOCK_HAVE_ETCD
/* Our own client of one etcd member's JSON gateway: one libcurl easy
 * handle (one keep-alive connection), the store's options. */
struct cfloor_etcd {
    CURL *h;
    struct curl_slist *hdrs;
    char base[300]; /* http://host:port */
    char *buf;      /* the last reply */
    size_t len, cap;
    long long lease; /* the floor's lease, 0 before cfloor_etcd_setup */
    char key[128];   /* CFLOOR_NAME "/" <lease hex> */
    int txn; /* 1: the requests' shape of the Mutex (cfloor_etcd_cycle) */
};

/* A client of the member at host:port (no request sent yet). */
int cfloor_etcd_open(struct cfloor_etcd *c, const char *host, int port);
/* GET path (body NULL) or POST body to it: 0 and the reply in c->buf on
 * HTTP 200. */
int cfloor_etcd_req(struct cfloor_etcd *c, const char *path, const char *body);
/* The cheapest round trip through the gateway: a serializable range of a
 * key that is not there (no Raft, no disk). */
int cfloor_etcd_noop(struct cfloor_etcd *c);
/* The floor's lease (granted once for 600 s) and its key. */
int cfloor_etcd_setup(struct cfloor_etcd *c);
/* One cycle, each reply checked (c->txn: in the Mutex's shape). */
int cfloor_etcd_cycle(struct cfloor_etcd *c);
/* The lease revoked (nothing if none was granted). */
void cfloor_etcd_teardown(struct cfloor_etcd *c);
void cfloor_etcd_close(struct cfloor_etcd *c);
/* The member's pid: DLOCK_TEST_ETCD_DIR's first member; -1 if unknown. */
long cfloor_etcd_server_pid(void);
#endif

/* CPU time (ns) of the server: pid, its threads and its children (a
 * PostgreSQL backend is a child of the postmaster); -1 if pid is not a
 * process we can see. */
long long cfloor_server_cpu_ns(long pid);

#endif
