/* bench.h - the raw round trip of each store's server, for ratios. */
#ifndef DLOCK_BENCH_H
#define DLOCK_BENCH_H

struct bench_noop;

/* Connect our own client to the server behind a dlock URL; 0 on success. */
int bench_noop_open(struct bench_noop **out, const char *url);
/* One no-op round trip (PING, SELECT 1, DO 1, empty BEGIN IMMEDIATE/COMMIT,
 * etcd: a serializable range of a missing key). */
int bench_noop(struct bench_noop *n);
/* SQLite only (else -1): the cheapest durable commit, one row, fsync
 * included: the physical limit of a lock store that survives power loss. */
int bench_noop_durable(struct bench_noop *n);
/* The server's count of requests from clients, all connections together
 * (Redis: top-level commands, nested script calls left out; PostgreSQL:
 * top-level statements in pg_stat_statements; MariaDB: the Questions
 * status; etcd: grpc_server_started_total in /metrics), this function's own
 * requests excluded; -1 where the server keeps no such count that is current
 * (SQLite; PostgreSQL without pg_stat_statements). */
long long bench_server_requests(struct bench_noop *n);
void bench_noop_close(struct bench_noop *n);
/* The no-op's own connection (PGconn *, MYSQL *, redisContext *,
 * sqlite3 *, struct cfloor_etcd *) and its kind ('p', 'm', 'r', 's',
 * 'e'), for dlock-floors, which
 * times its candidates on the connection its no-op uses. */
void *bench_noop_conn(struct bench_noop *n);
char bench_noop_kind(struct bench_noop *n);
/* "SQLite 3.40.1", "Redis 7.0.15", ... (static buffer). */
const char *bench_server_version(const char *url);

#endif
