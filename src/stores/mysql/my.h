/*
 * my.h - the MySQL/MariaDB store's private header: its handle, its
 * per-lock state, and what its files share.
 *
 *   conn.c     one connection: connect, the pool's callbacks, SQL text
 *              and escaping, running statements, errors
 *   sql.c      the statement texts of sql/ *.sql, expanded at open
 *   row.c      one key's row and its lock: reading it, our own row's
 *              WHERE and deletion, taking over a dead holder, GET_LOCK
 *   schema.c   the tables (the run records' too): DDL, checking and
 *              creating them, the fences, init and ddl; the run
 *              records', leader values' and suspensions' packets
 *   waiter.c   waiter rows (a wait's lease) and rowless GET_LOCK holders
 *   head.c     a semaphore's head row, its release tidying and status
 *   acquire.c  one attempt: the one-statement acquire, the procedure,
 *              the plain statements
 *   semaphore.c  one admission to a semaphore's slot
 *   try_wait.c the ops' try_acquire and wait_slice around an attempt
 *   held.c     extend, ttl_left, release, forget
 *   renew.c    the renew thread's batches (extend_many)
 *   runs.c     run records: run_begin, run_end, runs, last_runs; the
 *              leader value of elections: value_set, value_get
 *   suspend.c  a job's suspension: suspend, resume, suspension,
 *              suspensions (run_begin reads it)
 *   status.c   status, list, force-release
 *   golden.c   the golden copies' hook
 *   store.c    open, close and the ops table
 *
 * mysql://user:pass@host[:port]/database[?options]   (or mariadb://)
 * options: timeout=5s, table=shared_locks, quote=ansi|backtick,
 *          mode=lock|lease, socket=/path.sock, ssl=0|1|verify,
 *          ssl-ca=, ssl-cert=, ssl-key=
 *
 * GET_LOCK plus the `shared_locks` table of its-mieger/mysql-shared-locks,
 * with its TTL enforced by KILL.  A lock is two things held together on
 * one dedicated autocommit connection, pinned to the lock while it is
 * held: a row in the lock table (the lease: owner token, expiry on the
 * server's clock, fence) and GET_LOCK(key) (the native mutual exclusion,
 * which the server drops the moment the session ends, so a crashed holder
 * frees the lock at once).  The row is the lock; the GET_LOCK is how
 * waiters sleep and how death is seen.  A holder past its lease has its
 * row deleted and, if and only if IS_USED_LOCK(key) is the connection id
 * recorded in its row, its connection KILLed: that drops its GET_LOCK and
 * makes anything it still does on that connection fail.  A session that
 * a waiter saw hold the key with a row, and that still holds the GET_LOCK
 * after someone else deleted the row, is KILLed the same way once that
 * row's lease and a grace are over; a session that never had a row (an
 * application using GET_LOCK directly) is a legitimate holder and is
 * waited for without bound (see dlock__my_rowless() in waiter.c).
 *
 * A waiter leaves a lease on the server before it can be granted: before
 * each GET_LOCK wait it writes (or renews) a waiter row, named after the
 * key it waits for and its session (dlock__my_wait_name(): never a lock's
 * key, lock_acquired 0, no fence), whose lease covers the wait and half
 * its ttl after it.  Granted, it writes its holder row and only then
 * deletes the waiter row, on condition that its lease is still current;
 * if it is not, it lets go again.  A contender that finds the key's
 * GET_LOCK held by a session with no row at the key but with a waiter
 * row for it waits for that lease, and once it is over deletes that
 * exact row and KILLs the session (see dlock__my_rowless()): whichever
 * of the two deletes the row decides, so a granted waiter that hangs or
 * is cut off blocks the name for at most its own lease, and one that
 * goes on in time is never KILLed.
 *
 * GET_LOCK compares names byte for byte, so every key handed to GET_LOCK,
 * IS_USED_LOCK or RELEASE_LOCK is text in the connection's utf8mb4: our
 * own key as a literal, or a row's name explicitly CONVERTed (the table
 * of its-mieger's DDL is latin1, and its column read raw gives latin1
 * bytes, which no holder took).  A name the column's character set cannot
 * store is refused with DLOCK_EINVAL.
 *
 * Keys: a name of up to 64 characters is its own key; a longer one becomes
 * its first 24 characters followed by the SHA1 hex of the whole name, as
 * mpyw/laravel-database-advisory-lock computes it (my_keys.c).
 *
 * ?mode=lease keeps only the row (for Galera and other servers where
 * GET_LOCK is not cluster-wide): waiting polls (the core's loop), and a
 * dead holder blocks others until its lease runs out.
 *
 * Fences come from a separate counter table that deleting lock rows never
 * touches.
 *
 * Threads: connections come from one core pool (src/core/pool.h).
 * Status, list, force-release, init and every call in lease mode take a
 * pooled connection per call, under the pool's retry-once policy.  In
 * lock mode a lock pins its own connection from its acquire (or its wait)
 * to its release; the core serialises calls on one lock.
 */
#ifndef DLOCK_STORES_MY_H
#define DLOCK_STORES_MY_H

#include <mysql.h>
#include <stddef.h>
#include <stdint.h>

#include "cancel.h"
#include "clock.h"
#include "errors.h"
#include "iobound.h"
#include "my_keys.h"
#include "names.h"
#include "pool.h"
#include "process.h"
#include "quota.h"
#include "random.h"
#include "store.h"
#include "strutil.h"
#include "text.h"
#include "url.h"

/* Longest single GET_LOCK wait (never longer than ?timeout=).  A
 * connection's read timeout, fixed when it connects, is ?timeout= plus one
 * slice: so a statement that hangs is given up after at most twice the
 * operation timeout, and a GET_LOCK wait is never mistaken for a hang. */
#define MAX_SLICE_MS 5000
/* An idle pooled connection older than this is pinged before reuse. */
#define IDLE_PING_MS 1000
#define KEY_MAX DLOCK__MYSQL_KEY_MAX
/* A waiter row's name: 40 hex digits, '~', the session's id. */
#define WNAME_MAX (40 + 1 + 20)
#define TABLE_MAX 64

/* The server's clock, a row's expiry and a row's GET_LOCK key are the
 * fragments sql/frag_*.sql, filled into the statements as {{nowms}},
 * {{nowus}}, {{runnow}}, {{expires}} and {{row_key}} (sql.c). */

/* ?timeout= when the URL gives none. */
#define DEFAULT_TIMEOUT_MS 5000

/* --- the handle -------------------------------------------------------- */

/* The statement texts, from sql/ *.sql, expanded once at open
 * (dlock__my_sql_build(), sql.c): table names and fragments filled in,
 * what a call adds left as a '?' that dlock__my_bind() fills (conn.c).
 * Golden copies: tests/golden/mysql/. */
struct my_sql {
    char *create_locks, *create_fences, *create_seq; /* DDL, one each */
    char *create_fseq, *create_boot;                 /* MariaDB 10.3+ */
    char *create_runs, *create_runsum;
    char *create_leader; /* elections' leader values (runs.c) */
    char *create_susp;   /* suspended jobs (runs.c) */
    char *create_rkeep;  /* how many runs each name keeps (runs.c) */
    char *create_proc_acq, *create_proc_rel;
    /* The next fence of the key ? (dlock__my_sb_fence()): in NAME_seq,
     * in NAME_fences, and in NAME_fences above NAME_seq (? three times). */
    char *fence_seq, *fence_fences, *fence_durable;
    char *idle_set; /* the assignments of the idle bound, ? seconds */
    char *set_idle; /* the SET of them */
    char *init_session, *init_isolation; /* a connection's init commands */
    char *conn_info; /* its id, @@wait_timeout, @@max_connections */
    char *probe;     /* the server's clock (probe.c) */
    char *tx_begin, *tx_commit, *tx_rollback;
    char *heap_big, *heap_default; /* around creating the MEMORY table */
    char *columns[2][2]; /* a holder's select list [mariadb][have_lim] */
    /* Checking the tables, and what makes session mode fast (schema.c) */
    char *check_locks, *check_fences, *check_seq, *check_lim, *check_fseq;
    char *name_charset, *table_engine, *count_procs; /* ? literals */
    char *alter_add_lim;
    /* For a DBA (`dlock init --print`, commented out) */
    char *alter_add_columns, *alter_name_utf8mb4, *alter_engine_myisam;
    /* The fence sequence's seed and use (schema.c) */
    char *fseq_seeded, *fseq_seed_lock, *fseq_seed_unlock;
    char *fseq_seed_value[2]; /* [have_seq] */
    char *fseq_setval, *fseq_record_seed, *fseq_mark_seeded, *fseq_next;
    char *seq_raise; /* ? the key, ? the fence twice */
    /* A held lock (held.c; own: its row's WHERE, ? key, ? token, ? key
     * again in session mode) */
    char *own, *extend, *ttl_left, *release, *release_fast, *release_call;
    char *release_getlock, *release_getlock_if_ours, *delete_own_row;
    /* An attempt (acquire.c) */
    char *read_row[2][2];       /* [mariadb][have_lim], ? the key */
    char *read_contended[2][2]; /* [mariadb][have_lim] */
    char *take_over[2];         /* [has_owner] */
    char *used_by, *kill;       /* ? a key; ? a session */
    char *get_lock[2];          /* [frac]: ? seconds, fractional or whole */
    char *call_acquire;
    char *fast_acquire[2]; /* [full name column] */
    char *insert_row[2];   /* [semaphore slot] */
    char *delete_by_owner, *fence_record, *fseq_raise, *set_fence;
    /* Semaphores (semaphore.c) and waiter rows (waiter.c) */
    char *sem_live, *sem_delete_head, *sem_insert_head, *sem_delete_bad_head;
    char *sem_bump_head, *sem_rows[2][2]; /* [mariadb][have_lim] */
    char *waiter_fence_off;
    /* A wait's lease and GET_LOCK (try_wait.c) */
    char *waiter_drop, *waiter_tidy, *waiter_renew, *waiter_insert;
    char *waiter_confirm, *kill_query;
    char *waiter_claim[2];   /* [full name column] */
    char *lease_get_lock[2]; /* [frac] */
    /* status, list, release --force (store.c) */
    char *status[2][2][2]; /* [have_seq][mariadb][have_lim], ? the key */
    char *list[2][2];      /* [mariadb][have_lim] */
    char *force_delete, *force_delete_slots, *force_delete_waiter;
    char *session_of; /* ? a session: its login and client address */
    /* The renew thread's batch (renew.c): the statements ({{join}} and
     * {{where}}, filled per batch), the join ({{rows}}), a row ([0] the
     * first, [1] the others), the WHERE ({{keys}}), a key ([0], [1]) */
    char *renew, *renew_join, *renew_row[2], *renew_where, *renew_key[2];
    /* Run records (runs.c) */
    char *run_begin, *run_end[2];           /* [a success: the summary too] */
    char *run_begin_held, *run_end_held[2]; /* the same, held_tx.sql */
    char *run_history, *run_last[2];        /* [a prefix] */
    char *run_keep_put, *run_keep_get;      /* dlock_keep_runs(), kept */
    /* Elections (runs.c): the guarded write, the same on the lock's own
     * session (held_tx.sql), the read */
    char *value_set, *value_set_held, *value_get;
    /* Suspension (runs.c): suspend, resume, one record, all of them */
    char *susp_put, *susp_delete, *susp_get, *susp_all;
};

/* One connection (the pool's `void *`). */
struct conn {
    MYSQL *db;
    unsigned long id;    /* CONNECTION_ID() */
    int frac;            /* GET_LOCK takes fractional seconds (MariaDB) */
    const char *name;    /* the lock name it works for, for messages */
    int64_t used_ms;     /* monotonic ms of its last statement (connect) */
    int64_t idle_max_ms; /* the server ends it after this idle
                            (@@wait_timeout); 0 unknown */
    int seeded;          /* NAME_fseq was seeded when this connection looked: so
                            for as long as it lives (a server restart ends it) */
};

struct my_store {
    struct dlock_store base;
    struct my_sql sql;       /* its statements (sql.c) */
    struct dlock__pool pool; /* idle connections (struct conn *) */

    char *host, *user, *password, *database, *socket;
    unsigned port;
    char *ssl_ca, *ssl_cert, *ssl_key;
    int ssl; /* 0 off, 1 required, 2 required and verified */
    int lease_mode;
    int mariadb; /* the server is MariaDB (checked on open) */
    int64_t timeout_ms;
    char table[TABLE_MAX + 3]; /* quoted identifiers */
    char fences[TABLE_MAX + 10];
    char seq[TABLE_MAX + 7];      /* NAME_seq: dlock 0.2's per-name counters */
    char fseq[TABLE_MAX + 8];     /* NAME_fseq: the fences (a SEQUENCE) */
    char boot[TABLE_MAX + 8];     /* NAME_boot: MEMORY, a row once fseq is
                                     seeded since the server started */
    char proc_acq[TABLE_MAX + 8]; /* NAME_acq2: GET_LOCK + row + fence */
    char proc_rel[TABLE_MAX + 8]; /* NAME_rel1: row + RELEASE_LOCK */
    char index[TABLE_MAX + 7];
    char runs[TABLE_MAX + 10];   /* NAME_runs: the kept runs (runs.c) */
    char runsum[TABLE_MAX + 10]; /* NAME_runsum: each name's summary */
    char leader[TABLE_MAX + 10]; /* NAME_leader: leader values (runs.c) */
    char susp[TABLE_MAX + 10];   /* NAME_susp: suspended jobs (runs.c) */
    char rkeep[TABLE_MAX + 10];  /* NAME_rkeep: runs kept per name */
    char raw_table[TABLE_MAX + 1];
    char name_charset[65]; /* of the table's name column ("" unknown) */
    char engine[65];       /* the lock table's ENGINE ("" unknown) */
    int have_seq;          /* NAME_seq is there */
    int have_fseq;         /* the lock table is MEMORY and NAME_fseq and
                              NAME_boot are there (MariaDB >= 10.3):
                              every fence comes from NAME_fseq */
    int fast;              /* session mode's one-statement acquire and
                              release (have_fseq, utf8mb4 name column) */
    int have_lim;          /* the lim and slot columns are there */
    unsigned waits;        /* waits begun (atomic): every TIDY_EVERY-th
                              tidies its key's stale waiter rows */
    int have_proc;         /* the procedures are there and usable
                              (atomic: cleared by any thread that finds
                              them gone or not executable) */
    /* Session mode pins a server connection per held lock and per wait,
     * counted against ?max_conns=, else half the server's
     * @@max_connections (read by every new connection). */
    struct dlock__quota conns;
};

/* A lock's priv: held, or (held 0) waiting for it on c. */
struct my_lock {
    struct conn *c; /* pinned (lock mode); NULL in lease mode */
    int held;
    size_t key_len;
    char key[KEY_MAX + 1];
    /* While acquiring: the session last seen holding the key's GET_LOCK
     * with a row, the end of that row's lease (monotonic ms), and since
     * when it has held the GET_LOCK with no row (0: not seen so). */
    unsigned long long seen_conn;
    int64_t seen_until, rowless_since;
    unsigned spins; /* backoff naps of the wait so far */
    /* The name's own key: its fence counter's, and (semaphores) its head
     * row's.  For a lock, equal to key; for a semaphore key is the key of
     * its slot (taken, or tried last). */
    size_t nkey_len;
    char nkey[KEY_MAX + 1];
    char prefix[DLOCK__MYSQL_SEM_PREFIX + 1]; /* semaphores: slot keys' */
    int slot;      /* semaphores: the slot key is set for (-1 none) */
    int wait_slot; /* semaphores: a taken slot to wait on (-1 none) */
    int counted;   /* in ms->conns until conns_give() */
    /* A wait's lease on the server (lock mode): its waiter row's name,
     * whether the row is there (as far as we know), and whether this
     * wait has tidied its key's stale waiter rows yet. */
    char wname[WNAME_MAX + 1];
    int wleased, wtidied;
};

/* The files' functions, bottom first: each file calls only the files
 * above it here (conn.c at the bottom, store.c, with nothing above it, on
 * top), so no two call each other (scripts/circles.py checks it). */

/* --- conn.c ------------------------------------------------------------ */

/* mysql_library_init(), once per process: DLOCK_OK or DLOCK_ESTORE. */
int dlock__my_lib_init(void);
/* The pool's callbacks (ctx: the struct my_store). */
extern const struct dlock__pool_ops dlock__my_pool_ops;
/* A watch on c's socket for a call made for a held lock: shut down at
 * that lock's lease end when it comes before the connector's own timeout
 * (dlock__io_watch(); the connector takes no deadline per call).  Pass
 * the result to dlock__io_unwatch() before the call returns. */
uint64_t dlock__my_watch(const struct my_store *ms, const struct conn *c);
/* The longest GET_LOCK wait for ?timeout= (see MAX_SLICE_MS). */
int64_t dlock__my_max_slice(int64_t timeout_ms);
/* The error is the connection's (it broke or did not answer). */
int dlock__my_conn_error(unsigned mysql_errno);
/* The return code of MySQL error e (include/dlock.h's failure classes). */
int dlock__my_err_code(unsigned mysql_errno);
/* DLOCK_EINVAL: the name column cannot store name. */
int dlock__my_unstorable(struct my_store *ms, const char *name,
                         const char *detail);
/* The code and message for c's last error. */
int dlock__my_db_err(struct my_store *ms, struct conn *c, const char *what);

/* SQL text being built; oom is sticky, checked when it is run. */
struct sb {
    char *p;
    size_t len, cap;
    int oom;
    int bad; /* more '?' than values were bound (with oom: never sent) */
};
void dlock__my_sb_add(struct sb *b, const char *fmt, ...) DLOCK_PRINTF(2, 3);
/* A quoted string literal, escaped for c. */
void dlock__my_sb_lit(struct sb *b, struct conn *c, const char *s, size_t len);
/* A value for a '?' of a statement text (dlock__my_bind()). */
struct my_val {
    enum { MV_STR, MV_INT, MV_UINT, MV_SECS } kind;
    const char *s; /* MV_STR: s[0..len) */
    size_t len;
    long long i;          /* MV_INT; MV_SECS: milliseconds */
    unsigned long long u; /* MV_UINT */
};
#define MV_S(p, n) ((struct my_val){MV_STR, (p), (n), 0, 0})
#define MV_Z(p) MV_S((p), strlen(p))
#define MV_I(x) ((struct my_val){MV_INT, NULL, 0, (long long)(x), 0})
#define MV_U(x) ((struct my_val){MV_UINT, NULL, 0, 0, (unsigned long long)(x)})
#define MV_MS(x) ((struct my_val){MV_SECS, NULL, 0, (long long)(x), 0})
/* Append tmpl (a text of struct my_sql) to b with each placeholder '?'
 * (outside quotes and comments) replaced, in order, by v[0..n): a string
 * as a quoted literal escaped for c (mysql_real_escape_string), a number
 * as a number.  Values are written once, never scanned again.  Values
 * left over are ignored (a variant without the last ones, such as
 * own.sql in lease mode); a '?' left over marks b bad (a bug). */
void dlock__my_bind(struct sb *b, struct conn *c, const char *tmpl,
                    const struct my_val *v, size_t n);
#define MY_VALS(...) ((const struct my_val[]){__VA_ARGS__})
#define MY_NVALS(...) (sizeof(MY_VALS(__VA_ARGS__)) / sizeof(struct my_val))
#define MY_BIND(b, c, tmpl, ...)                                               \
    dlock__my_bind((b), (c), (tmpl), MY_VALS(__VA_ARGS__),                     \
                   MY_NVALS(__VA_ARGS__))
void dlock__my_sb_reset(struct sb *b);
/* The value of sql/set_idle.sql's '?': how long the server lets a
 * transaction of this session sit idle before it ends the session
 * (threat model R13), in seconds: at least `timeout`, and at least
 * idle_ms (MariaDB 10.3+ only: on other servers a no-op). */
struct my_val dlock__my_idle_val(const struct my_store *ms, int64_t idle_ms);
void dlock__my_sb_free(struct sb *b);
/* Send one statement (InnoDB deadlocks retried): 0, or -1 with c's error
 * set. */
/* probe.c: dlock_store_probe(). */
int dlock__my_probe(struct dlock_store *s, dlock_probe *out);
int dlock__my_query(struct conn *c, const char *sql, size_t len);
/* Run b's statement.  res (may be NULL) receives its result set. */
int dlock__my_run(struct my_store *ms, struct conn *c, struct sb *b,
                  MYSQL_RES **res, const char *what);
/* Run a statement returning one integer (or NULL, or no row: *found 0). */
int dlock__my_run_int(struct my_store *ms, struct conn *c, struct sb *b,
                      long long *val, int *found, const char *what);

/* --- sql.c ------------------------------------------------------------- */

/* Expand ms's statement texts (ms->sql) for its table names, mode and
 * timeout: once, at open.  DLOCK_OK, or DLOCK_ENOMEM / DLOCK_EINVAL. */
int dlock__my_sql_build(struct my_store *ms);
void dlock__my_sql_free(struct my_store *ms);
/* Text i of ms->sql (*file: its file's name); NULL past the last. */
const char *dlock__my_sql_nth(const struct my_store *ms, size_t i,
                              const char **file);

/* --- row.c ------------------------------------------------------------- */

/* A row of the lock table, as sql/columns.sql selects it. */
struct holder {
    unsigned long long conn_id, used_by;
    char owner[DLOCK_TOKEN_HEX + 1];
    int has_owner;
    int acquired;
    long long left, created, pid, since;
    unsigned long long fence;
    char host[256];
    unsigned lim; /* the limit it asked (1: a lock, or an older row) */
    char *name;   /* malloc'd, want_name only */
    size_t name_len;
};

/* A row read with ms->sql.columns (sql/columns.sql: 12 columns). */
void dlock__my_read_holder(MYSQL_ROW row, unsigned long *lens, struct holder *h,
                           int want_name);
/* A row whose holder is gone. */
int dlock__my_holder_dead(const struct holder *h);
/* ml's key and lk's owner token as values for a '?'. */
#define MV_KEY(ml) MV_S((ml)->key, (ml)->key_len)
#define MV_TOK(lk) MV_Z((lk)->token)
/* The row at ml's key (*found; with its name if want_name). */
int dlock__my_read_row(struct my_store *ms, struct conn *c,
                       const struct my_lock *ml, struct holder *h, int *found,
                       int want_name);
/* Take over a dead holder's row, ending a session that holds ml's
 * GET_LOCK past its lease (*killed: KILL sent). */
int dlock__my_take_over(struct my_store *ms, struct conn *c,
                        const struct my_lock *ml, const struct holder *h,
                        int *killed);
int dlock__my_kill_holder(struct my_store *ms, struct conn *c,
                          const struct my_lock *ml, unsigned long long conn_id,
                          int *killed);
/* GET_LOCK(key, wait_ms): *got 1 if this session now holds it. */
int dlock__my_get_lock(struct my_store *ms, struct conn *c,
                       const struct my_lock *ml, int64_t wait_ms, int *got);
/* Best effort: drop our GET_LOCK (once) on c. */
void dlock__my_release_getlock(struct my_store *ms, struct conn *c,
                               const struct my_lock *ml);
/* Delete our own row (whatever state it is in). */
int dlock__my_delete_own_row(struct my_store *ms, struct conn *c,
                             const struct dlock_lock *lk,
                             const struct my_lock *ml);
/* After finding lk lost on c (its pinned connection, or in lease mode any
 * one): best effort, delete its row and (lock mode) drop its GET_LOCK if
 * c still holds it. */
void dlock__my_tidy_lost(struct my_store *ms, struct conn *c,
                         const struct dlock_lock *lk, struct my_lock *ml);
/* A CALL of a session-mode procedure answering one row: DLOCK_OK (*v0,
 * *v1 its first two columns; v1 may be NULL), a failure, or DLOCK_ENOTSUP
 * when the procedure cannot be used (nothing happened; have_proc is
 * cleared). */
int dlock__my_call(struct my_store *ms, struct conn *c, struct sb *b,
                   long long *v0, long long *v1, const char *what);
/* Session id's login and client address as the server shows them to us
 * ("" where it does not: another login's, without PROCESS). */
int dlock__my_session_of(struct my_store *ms, struct conn *c,
                         unsigned long long id, char *user, size_t ulen,
                         char *addr, size_t alen);

/* --- schema.c ---------------------------------------------------------- */

/* Table and quote settings of the URL (shared by open and ddl): the
 * quoted identifiers of ms (table, fences, seq, procedures, index) and
 * the table's bare name. */
int dlock__my_parse_names(const struct dlock_url *u, struct my_store *ms);
/* The statement that takes the next fence of the name key (lease: in the
 * durable NAME_fences, else in NAME_seq) and leaves it in
 * LAST_INSERT_ID(); see schema.c. */
void dlock__my_sb_fence(struct sb *b, struct my_store *ms, struct conn *c,
                        const char *key, size_t key_len, int durable);
/* Lease mode, with NAME_seq: the statement that raises the name's
 * session-mode counter to the fence it just took. */
void dlock__my_sb_seq_raise(struct sb *b, struct my_store *ms, struct conn *c,
                            const char *key, size_t key_len, uint64_t fence);
/* The next fence from NAME_fseq (have_fseq), seeding it first if the
 * server started since it was last seeded (NAME_boot empty). */
int dlock__my_fseq_next(struct my_store *ms, struct conn *c, uint64_t *out);
/* Seed NAME_fseq if NAME_boot says it is not seeded since the server
 * started: DLOCK_OK when it is seeded now (and c->seeded set). */
int dlock__my_fseq_seed(struct my_store *ms, struct conn *c);
/* The DDL of the run record tables, statements separated by sep. */
void dlock__my_ddl_runs(struct sb *b, const struct my_store *ms,
                        const char *sep);
/* Create the run record tables if missing (`dlock init`, and on first
 * use): DLOCK_OK, or why not. */
int dlock__my_create_runs(struct my_store *ms, struct conn *c);
/* The same for the leader value table (elections). */
int dlock__my_create_leader(struct my_store *ms, struct conn *c);
/* The same for the suspension table. */
int dlock__my_create_susp(struct my_store *ms, struct conn *c);
/* On open: use the tables if they are there, else create them. */
int dlock__my_ensure_tables(struct my_store *ms, struct conn *c);
int dlock__my_init(struct dlock_store *s);
int dlock__my_ddl(char **out, const struct dlock_url *u);

/* The tables a packet uses (dlock__my_tx_tables()). */
enum { T_RUNS, T_LEADER, T_SUSP };
/* Send b's packet (one transaction, or one statement) and read every
 * result, the last result set to *res (NULL if none), creating the tables
 * first if they are missing.  create: make them (run_begin, proclaim,
 * suspend); else a missing table is DLOCK_OK with *res NULL (nothing
 * recorded yet).  tables: T_RUNS the run records and the suspension
 * table (run_begin reads it), T_LEADER the leader value table
 * (elections), T_SUSP the suspension table. */
int dlock__my_tx_tables(struct my_store *ms, struct conn *c, const struct sb *b,
                        MYSQL_RES **res, int create, int tables,
                        const char *what);

/* --- waiter.c ---------------------------------------------------------- */

/* The name of the waiter row of session conn_id waiting for key: the
 * first 40 hex digits of dlock__mysql_sem_prefix() of key + "\0wait"
 * (a name holds no NUL, so no semaphore's slot prefix), '~', conn_id.
 * DLOCK_OK, or the error of a SHA1 libcrypto could not compute. */
int dlock__my_wait_name(const char *key, size_t key_len,
                        unsigned long long conn_id, char out[WNAME_MAX + 1]);
/* A row read with sql/columns.sql is a waiter row. */
int dlock__my_is_waiter(const struct holder *h);
/* Session conn_id's waiter row for key, if any (*found). */
int dlock__my_read_waiter(struct my_store *ms, struct conn *c, const char *key,
                          size_t key_len, unsigned long long conn_id,
                          struct holder *h, int *found);
/* The key's GET_LOCK is held and no row is there: wait for, or fence off
 * and KILL, the session that holds it (*retry_ms, *killed). */
int dlock__my_rowless(struct my_store *ms, struct conn *c, struct my_lock *ml,
                      int64_t *retry_ms, int *killed);
/* ml's key is taken: its row (*found, h) and, in the same statement, the
 * session holding its GET_LOCK (*used, 0: none) and that session's
 * waiter row (*wfound, w). */
int dlock__my_read_contended(struct my_store *ms, struct conn *c,
                             const struct my_lock *ml, struct holder *h,
                             int *found, long long *used, struct holder *w,
                             int *wfound);
/* dlock__my_rowless() on what dlock__my_read_contended() read. */
int dlock__my_rowless_read(struct my_store *ms, struct conn *c,
                           struct my_lock *ml, long long used,
                           const struct holder *w, int wfound,
                           int64_t *retry_ms, int *killed);

/* --- head.c ------------------------------------------------------------ */

/* The live slot rows of the semaphore whose slot keys start with prefix
 * (any limit): how many (*count), which slots below n are taken (taken,
 * may be NULL), the soonest lease end among them (*soonest, -1 none). */
int dlock__my_sem_live(struct my_store *ms, struct conn *c, const char *prefix,
                       unsigned char *taken, unsigned n, long long *count,
                       int64_t *soonest);
/* The row h at the name's own key (hd's) is a semaphore's head: gone
 * with no live holder (*gone), else EINVAL if want (0: any) is not its
 * limit. */
int dlock__my_sem_head(struct my_store *ms, struct conn *c,
                       const struct my_lock *hd, const struct holder *h,
                       const char *name, unsigned want, int *gone);
/* A limit-1 acquire met a row at its key; a semaphore's head is EINVAL
 * while it has live holders (*gone: it had none and went). */
int dlock__my_lock_meets_head(struct my_store *ms, struct conn *c,
                              const struct dlock_lock *lk,
                              const struct my_lock *ml, int *gone);
/* Insert the head of lk's semaphore at hd's key: *dup if a row is there. */
int dlock__my_insert_head(struct my_store *ms, struct conn *c,
                          const struct dlock_lock *lk, const struct my_lock *hd,
                          int *dup);
/* Write lk's fence into the head, still there with lk's limit (*ok). */
int dlock__my_bump_head(struct my_store *ms, struct conn *c,
                        const struct dlock_lock *lk, const struct my_lock *hd,
                        int *ok);
/* Semaphores: after releasing a slot, delete the name's head row if no
 * live holder is left (best effort). */
void dlock__my_sem_tidy(struct my_store *ms, struct conn *c,
                        const struct dlock_lock *lk, const struct my_lock *ml);
/* Semaphores: the status of a name whose row is a head (h, read with its
 * name): holders, limit, the longest lease left. */
int dlock__my_sem_status(struct my_store *ms, struct conn *c,
                         const struct holder *h, dlock_info *out);

/* --- acquire.c --------------------------------------------------------- */

/* One attempt at ml's key on ml->c (have_gl: its GET_LOCK is held
 * already, from a wait). */
int dlock__my_attempt(struct my_store *ms, struct dlock_lock *lk,
                      struct my_lock *ml, int have_gl, int64_t deadline,
                      int64_t *retry_ms);

/* --- semaphore.c ------------------------------------------------------- */

void dlock__my_set_slot(struct my_lock *ml, unsigned i);
int dlock__my_sem_attempt(struct my_store *ms, struct dlock_lock *lk,
                          struct my_lock *ml, int have_slot, int64_t deadline,
                          int64_t *retry_ms);

/* --- try_wait.c -------------------------------------------------------- */

/* Free a lock's priv, giving back its count of pinned connections. */
void dlock__my_free_lock(struct my_store *ms, struct my_lock *ml);
int dlock__my_try_acquire(struct dlock_store *s, struct dlock_lock *lk,
                          int64_t deadline, int64_t *retry_ms);
int dlock__my_wait_slice(struct dlock_store *s, struct dlock_lock *lk,
                         int64_t slice_ms, int64_t *retry_ms);
/* Free a wait's state (not held): its connection goes back. */
void dlock__my_unwait(struct my_store *ms, struct dlock_lock *lk);

/* --- held.c ------------------------------------------------------------ */

/* The ops' extend: on the lock's pinned connection (lease mode: a pooled
 * one). */
int dlock__my_extend(struct dlock_store *s, struct dlock_lock *lk,
                     int64_t ttl_ms);
int dlock__my_ttl_left(struct dlock_store *s, struct dlock_lock *lk,
                       int64_t *left_ms);
int dlock__my_release(struct dlock_store *s, struct dlock_lock *lk);
int dlock__my_forget(struct dlock_store *s, struct dlock_lock *lk);
void dlock__my_forget_inherited(struct dlock_store *s, struct dlock_lock *lk);

/* --- renew.c ----------------------------------------------------------- */

/* The text of a renew batch of n locks, every value a '?' (malloc'd;
 * NULL on a failure): the one text completed per call (renew.c). */
char *dlock__my_renew_text(const struct my_sql *q, size_t n);
/* The ops' extend_many: the renew thread's batches (see renew.c). */
int dlock__my_extend_many(struct dlock_store *s,
                          struct dlock_lock *const *locks, size_t n, int *rcs);

/* --- runs.c ------------------------------------------------------------ */

int dlock__my_run_begin(struct dlock_store *s, struct dlock_lock *lk,
                        const dlock_run_rule *rule, const char *host,
                        int64_t pid, int *go, dlock_run *last);
int dlock__my_run_end(struct dlock_store *s, struct dlock_lock *lk, int result,
                      int status);
int dlock__my_runs(struct dlock_store *s, const char *name, unsigned max,
                   dlock_run_cb cb, void *payload);
int dlock__my_keep_runs(struct dlock_store *s, const char *name, unsigned n);
int dlock__my_kept_runs(struct dlock_store *s, const char *name, unsigned *n);
int dlock__my_last_runs(struct dlock_store *s, const char *prefix,
                        dlock_run_cb cb, void *payload);
/* Elections: the leader value (store.h: value_set, value_get). */
int dlock__my_value_set(struct dlock_store *s, struct dlock_lock *lk,
                        const char *value, size_t len);
int dlock__my_value_get(struct dlock_store *s, const char *name,
                        uint64_t *fence, char **value, size_t *len);
/* --- suspend.c --------------------------------------------------------- */

/* run_begin's answer for a suspended name (store.h): *r from the
 * record's by_whom and since_ms at row[i], row[i + 1]. */
void dlock__my_susp_run(MYSQL_RES *res, MYSQL_ROW row, unsigned i,
                        dlock_run *r);
/* A job's suspension (store.h: suspend, resume, suspension, suspensions). */
int dlock__my_suspend(struct dlock_store *s, const char *name, const char *by,
                      const char *reason, int *was, dlock_suspension *cur);
int dlock__my_resume(struct dlock_store *s, const char *name, int *was,
                     dlock_suspension *cur);
int dlock__my_suspension(struct dlock_store *s, const char *name, int *was,
                         dlock_suspension *cur);
int dlock__my_suspensions(struct dlock_store *s, const char *prefix,
                          dlock_suspension_cb cb, void *payload);

/* --- status.c ---------------------------------------------------------- */

int dlock__my_status(struct dlock_store *s, const char *name, dlock_info *out);
int dlock__my_list(struct dlock_store *s, const char *prefix,
                   int (*cb)(const dlock_info *info, void *payload),
                   void *payload);
int dlock__my_force_release(struct dlock_store *s, const char *name,
                            unsigned *removed);

/* --- golden.c ---------------------------------------------------------- */

/* The golden test's hook (src/core/text.h). */
void dlock__mysql_texts(dlock__text_emit emit, void *arg);

#endif /* DLOCK_STORES_MY_H */
