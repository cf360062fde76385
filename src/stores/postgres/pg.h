/*
 * pg.h - the PostgreSQL store's private header: its handle, its sessions,
 * and what its files share.
 *
 *   statements.c  the SQL statements, built from sql/ *.sql at open
 *   conn.c     one connection: connect, run a statement within a deadline
 *   sessions.c session mode's database sessions, the mux, a held lock's
 *              statements on its session
 *   acquire.c  session mode's acquire: the try, the wait's slices
 *   held.c     a held lock's calls (extend, ttl_left, release), found lost,
 *              a control statement on a pooled connection
 *   store.c    the ops table: open, lease mode's acquire, status, list
 *   xact.c     dlock_pg_xact_lock() on the caller's connection
 *   renew.c    the renew thread's batches: many extends in one UPDATE
 *   runs.c     run records: once, once per period, the kept runs
 *   elect.c    leader values (dlock_leaders) and observers (LISTEN)
 *   suspend.c  a job's suspension (dlock_suspensions); run_begin reads it
 *
 * postgres://[user[:password]@]host[:port]/db[?keys=hashtext][&mode=lease]
 *     [&max_keys=N]
 *                                          [&timeout=5s][&<libpq options>]
 *
 * Default (session) mode.  The lock itself is a session advisory lock on
 * the 64-bit key hashtextextended(name, 0) (?keys=hashtext: hashtext(name),
 * the key of mpyw/laravel-database-advisory-lock), computed by the server.
 * A held lock lives as long as the database session that took it, so a
 * holder that dies frees it at once.  Try-locks of a process share one
 * session (the "mux"); a lock that had to wait keeps the session it
 * waited on; a lock without auto-renewal gets a session of its own (see
 * acquire.c).  A row in the UNLOGGED table dlock_held, written by the
 * same statement that takes the
 * advisory lock, carries the owner token, fence, lease and holder
 * details; fences come from one UNLOGGED sequence, below a durable
 * ceiling raised a block at a time, and re-seeded from the ceiling after
 * a crash (no clock).  The uncontended path waits for a durable commit
 * once per half a block of fences.  A holder whose lease
 * ran out but whose session still holds the key (a hung process) is
 * fenced off by pg_terminate_backend(), after pg_locks shows that this
 * backend holds that very key; pg_locks is read only on that path.
 *
 * Semaphores (limit N > 1).  Session mode: a holder holds one of N slot
 * keys hashtextextended(name, slot + 1) exclusively, plus the semaphore
 * key hashtextextended(name, -1) and the name's key shared, all taken by
 * one call of the SQL function dlock_sem_acquire_v2, which admits under a
 * per-name transaction lock (hashtextextended(name, -2)) so it sees every
 * earlier holder's row and limit.  A wait blocks on one taken slot's key
 * per slice.  Lease mode counts live rows.  Rows record lim and slot.
 *
 * Lease mode (?mode=lease).  Rows only, no session state, so it works
 * through PgBouncer's transaction pooling, durably (dlock_locks and the
 * per-name dlock_fences): an acquire locks the name's fence row, drops expired
 * rows, and inserts its own row if no live row conflicts.  Waiting polls with
 * jittered backoff (the core's loop).
 *
 * Leases are measured on the server's clock.  A server that stops
 * answering costs at most the operation timeout (?timeout=, default 5 s).
 *
 * Threads: connections come from one core pool (src/core/pool.h).
 * Status, list, force-release, init and everything in lease mode take a
 * pooled connection per call, under the pool's retry-once policy.  In
 * session mode each lock's acquire, extend, assert and release run on its
 * own session, serialised by that session's mutex.
 */
#ifndef DLOCK_STORES_PG_H
#define DLOCK_STORES_PG_H

#include <pthread.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "cancel.h"
#include "clock.h"
#include "errors.h"
#include "iobound.h"
#include "names.h"
#include "pool.h"
#include "process.h"
#include "quota.h"
#include "random.h"
#include "store.h"
#include "strutil.h"
#include "text.h"
#include "url.h"

#define DLOCK__PG_POOL_MAX_IDLE 8

/* --- statements.c ----------------------------------------------------------
 */

enum {
    Q_TRY_X,
    Q_TRY_S,
    Q_WAIT_X,
    Q_WAIT_S,
    Q_HOLDERS,
    Q_TERMINATE,
    Q_RELEASE_X,
    Q_RELEASE_S,
    Q_STATUS,
    Q_STATUS2,
    Q_FORCE_KILL,
    Q_SEM,
    Q_RELEASE_M,
    Q_TRY_X1,     /* exclusive try on a session of its own, no tidying */
    Q_TRY_XM,     /* exclusive try on the mux, no tidying */
    Q_RELEASE_X1, /* exclusive release by (name, owner) */
    Q_KEYED,
    /* Key-independent, prepared too (ids for dlock__pg_runp()). */
    Q_EXTEND = Q_KEYED,
    Q_TTL,
    Q_RELEASE_L,
    Q_UNLOCK_ALL,
    Q_SEM_WAIT,
    Q_DROP_BROKEN
};

/* Every statement, expanded from sql/ *.sql once, at open (one set per
 * handle: its key function).  keyed[]: by Q_*.  Per mode, indexed by
 * lease_mode: [0] session mode's rows (dlock_held), [1] lease mode's
 * (dlock_locks).  lease_acq, lease_sem and run_begin are several
 * statements each: sent through dlock__pg_inline() (conn.c). */
struct dlock__pg_sql {
    char *q[Q_KEYED];
    char *extend[2], *ttl[2], *names[2], *force[2], *renew[2], *run_begin[2],
        *value_set[2];
    char *release_l, *unlock_all, *drop_broken, *sem_wait, *status_l,
        *status2_l, *lease_acq, *lease_sem, *have_tables, *init, *ddl,
        *init_runs, *run_end, *runs, *last_runs, *gone, *session_setup,
        *value_get, *notify, *listen_name, *listen, *probe, *suspend, *resume,
        *suspension, *suspensions, *keep_runs, *kept_runs;
};
/* Fill q for a handle using hashtext() keys (else hashtextextended()):
 * DLOCK_OK, or an error with q all NULL. */
int dlock__pg_sql_build(struct dlock__pg_sql *q, int hashtext);
void dlock__pg_sql_free(struct dlock__pg_sql *q);
/* Every statement of every variant, to emit() (text.h; the golden test). */
void dlock__postgres_texts(dlock__text_emit emit, void *arg);

/* --- the handle ------------------------------------------------------ */

struct sess;

struct pg_store {
    struct dlock_store base;
    /* For libpq: the parts dlock parsed from the URL as keyword/value
     * pairs (never the URL text: libpq would read it otherwise), and what
     * in the URL may be a secret, scrubbed from libpq's messages. */
    char **conn_kw, **conn_val, **secrets;
    /* conn.c no_key_prompt(): the URL gave no ?sslpassword=, and libpq
     * got one that unlocks no key, so an encrypted key fails instead of
     * prompting. */
    int key_guard;
    struct dlock__pg_sql text; /* the statements, built at open */
    const char *const *sql;    /* text.q */
    int lease_mode;
    int64_t op_timeout_ms;

    /* Session mode's advisory keys held through this handle (a lock 1, a
     * semaphore holder 3) against ?max_keys=, else half the server's lock
     * table (read at open, with max_locks_per_transaction for messages). */
    struct dlock__quota keys;
    int64_t locks_per_xact;

    struct dlock__pool pool; /* idle connections (PGconn *) */
    pthread_mutex_t sess_mu; /* mux, and every session's refs and is_mux */
    struct sess *mux;        /* the session try-locks share */
    int64_t tidied_ms;       /* last exclusive try that tidied (acquire.c) */
};

/* --- conn.c ---------------------------------------------------------- */

/* The pool's callbacks (ctx: the struct pg_store). */
extern const struct dlock__pool_ops dlock__pg_pool_ops;
/* Run one statement (n > 0 or v != NULL: with text parameters; else a
 * simple query, possibly several statements) and wait for its result, for
 * at most timeout_ms.  DLOCK_OK with *out set (caller clears it);
 * DLOCK_ESTORE when the server answered with an error (SQLSTATE in state,
 * the connection still usable); DLOCK_EUNAVAIL when the connection broke
 * or did not answer in time: the caller must drop it. */
int dlock__pg_run(PGconn *c, const char *url, const char *what, const char *sql,
                  int n, const char *const *v, int64_t timeout_ms,
                  PGresult **out, char state[6]);
/* The same as a prepared statement `id`, prepared on c first if needed. */
int dlock__pg_runp(PGconn *c, const char *url, const char *what, int id,
                   const char *sql, int n, const char *const *v,
                   int64_t timeout_ms, PGresult **out, char state[6]);
/* runp() for id >= 0, else run(). */
int dlock__pg_runq(PGconn *c, const char *url, const char *what, int id,
                   const char *sql, int n, const char *const *v,
                   int64_t timeout_ms, PGresult **out, char state[6]);
/* The one text sent with its parameters inlined (docs/internals.md: a
 * query of several statements, one round trip, takes no parameters): sql
 * with each $k (k <= n) replaced by v[k-1] as an E'' literal (NULL:
 * NULL).  Malloc'd, or NULL (DLOCK_ENOMEM set). */
char *dlock__pg_inline(const char *sql, int n, const char *const *v);
int dlock__pg_connect(struct pg_store *ps, PGconn **out);
/* Fill ps->conn_kw/conn_val/secrets from u; free them. */
int dlock__pg_conn_params(struct pg_store *ps, const struct dlock_url *u);
void dlock__pg_conn_params_free(struct pg_store *ps);
/* Fit to be used again: connected, no transaction open. */
int dlock__pg_conn_clean(PGconn *c);
int64_t dlock__pg_col_i64(const PGresult *r, int row, int col, int64_t dflt);
int dlock__pg_col_bool(const PGresult *r, int row, int col);

/* --- sessions.c ----------------------------------------------------- */

/*
 * A database session that holds advisory locks.  Try-locks share the
 * store's current "mux" session, so a process holding thousands of locks
 * needs one connection, not thousands; a lock that had to wait got its
 * own session for the wait and keeps it.  Statements on a session are
 * serialised by its mutex.  When a session dies every lock on it is lost,
 * which is the truth: the server dropped their keys.
 */
struct sess {
    pthread_mutex_t mu; /* one statement at a time */
    PGconn *c;          /* NULL once the session is known to be gone */
    unsigned refs;      /* locks (and attempts) using it; under sess_mu */
    int reused;         /* has run a statement before (may have died idle) */
    int is_mux;         /* ps->mux; under sess_mu */
    int dirty;          /* may hold a key nobody owns: close, not pool */
    int own;            /* one lock's (or wait's) own, never the mux */
    char id[24];        /* random, for its rows: a backend pid is reused */
};

/* A lock's priv: held, or (keyed 0) waiting for it on s. */
struct held {
    struct sess *s;
    int keyed; /* its key and row are still on s */
    int slot;  /* a semaphore's slot; -1 for a lock */
    int nkeys; /* counted in ps->keys until freed */
};

/* Advisory keys a holder of lk takes (counted in ps->keys). */
int dlock__pg_keys_of(const struct dlock_lock *lk);
/* Count lk's keys against the handle's limit, or fail saying why. */
int dlock__pg_keys_take(struct pg_store *ps, const struct dlock_lock *lk);
/* A session (refs 1) on a pooled connection, or on a new one with
 * `fresh`. */
int dlock__pg_sess_new(struct pg_store *ps, struct sess **out, int fresh);
void dlock__pg_sess_unref(struct pg_store *ps, struct sess *s);
/* No new locks on s (gone: closed now); caller holds s->mu. */
void dlock__pg_sess_retire(struct pg_store *ps, struct sess *s, int gone);
/* The mux session, with a reference taken; *reused: it may have run
 * statements before (and died idle since). */
int dlock__pg_mux_get(struct pg_store *ps, struct sess **out, int fresh,
                      int *reused);
/* After a failed acquire statement: let the keys it may have taken go
 * (or retire a shared session).  DLOCK_OK, or the error that retired s. */
int dlock__pg_let_keys_go(struct pg_store *ps, struct sess *s);
/* A statement for a held lock, on its session; the session's failure
 * means the lock is lost (DLOCK_LOST). */
int dlock__pg_held_run(struct pg_store *ps, struct dlock_lock *lk,
                       const char *what, int id, const char *sql, int n,
                       const char *const *v, PGresult **res);
/* The same, with the SQLSTATE of a server's error in state (as
 * dlock__pg_run()). */
int dlock__pg_held_run_st(struct pg_store *ps, struct dlock_lock *lk,
                          const char *what, int id, const char *sql, int n,
                          const char *const *v, PGresult **res, char state[6]);
/* Delete our row and let our key go.  *live: the row was there and within
 * its lease. */
int dlock__pg_held_drop(struct pg_store *ps, struct dlock_lock *lk, int *live);
/* Free lk->priv, giving its session reference back. */
void dlock__pg_held_free(struct pg_store *ps, struct dlock_lock *lk);
int dlock__pg_forget(struct dlock_store *s, struct dlock_lock *lk);
void dlock__pg_forget_inherited(struct dlock_store *s, struct dlock_lock *lk);
/* Store close: the mux session goes (no lock is held any more). */
void dlock__pg_sessions_close(struct pg_store *ps);
/* The session holding lk's key (an opaque identity), or NULL. */
const void *dlock__pg_held_session(const struct dlock_lock *lk);

/* --- acquire.c ------------------------------------------------------ */

int dlock__pg_session_try(struct pg_store *ps, struct dlock_lock *lk,
                          int64_t deadline, int64_t *retry_ms);
int dlock__pg_wait_slice(struct dlock_store *s, struct dlock_lock *lk,
                         int64_t slice_ms, int64_t *retry_ms);

/* acquire's parameters: $1 name .. $6 pid, $7 lock_timeout ms (0: try),
 * $8 the session's id (sess NULL: none, lease mode). */
struct dlock__pg_acq_params {
    char ttl[24], pid[24], timeout[24];
    const char *v[8];
};
void dlock__pg_acq_params(struct dlock__pg_acq_params *p,
                          const struct dlock_lock *lk, int64_t lock_timeout_ms,
                          const char *sess);

/* --- held.c: a held lock's calls, below store.c, renew.c, runs.c ---- */

/* One statement on a pooled connection (retried once on a fresh one if
 * the pooled one died while idle); id < 0, or lease mode: unnamed. */
int dlock__pg_ctl_run(struct pg_store *ps, const char *what, int id,
                      const char *sql, int n, const char *const *v,
                      PGresult **res);
/* lk's row is gone or past its lease: let its key go (session mode) and
 * return DLOCK_LOST. */
int dlock__pg_found_lost(struct pg_store *ps, struct dlock_lock *lk);
/* The ops (store.h). */
int dlock__pg_extend(struct dlock_store *s, struct dlock_lock *lk,
                     int64_t ttl_ms);
int dlock__pg_ttl_left(struct dlock_store *s, struct dlock_lock *lk,
                       int64_t *left_ms);
int dlock__pg_release(struct dlock_store *s, struct dlock_lock *lk);

/* --- runs.c: run records (store.h, "run_begin") ---------------------- */

int dlock__pg_run_begin(struct dlock_store *s, struct dlock_lock *lk,
                        const dlock_run_rule *rule, const char *host,
                        int64_t pid, int *go, dlock_run *last);
int dlock__pg_run_end(struct dlock_store *s, struct dlock_lock *lk, int result,
                      int status);
int dlock__pg_runs(struct dlock_store *s, const char *name, unsigned max,
                   dlock_run_cb cb, void *payload);
int dlock__pg_last_runs(struct dlock_store *s, const char *prefix,
                        dlock_run_cb cb, void *payload);
int dlock__pg_keep_runs(struct dlock_store *s, const char *name, unsigned n);
int dlock__pg_kept_runs(struct dlock_store *s, const char *name, unsigned *n);

/* --- suspend.c: a job's suspension (store.h, "Suspension") -------- */

int dlock__pg_suspend(struct dlock_store *s, const char *name, const char *by,
                      const char *reason, int *was, dlock_suspension *cur);
int dlock__pg_resume(struct dlock_store *s, const char *name, int *was,
                     dlock_suspension *cur);
int dlock__pg_suspension(struct dlock_store *s, const char *name, int *was,
                         dlock_suspension *cur);
int dlock__pg_suspensions(struct dlock_store *s, const char *prefix,
                          dlock_suspension_cb cb, void *payload);
/* run_begin's answer of a suspended name (runs.c): row i's column c, who
 * suspended it, into run->host ("?" when dlock cannot have written it). */
void dlock__pg_suspended_run(dlock_run *run, const PGresult *r, int i, int c);

/* --- elect.c: leader values and observers (store.h, "Election") ---- */

int dlock__pg_value_set(struct dlock_store *s, struct dlock_lock *lk,
                        const char *value, size_t len);
int dlock__pg_value_get(struct dlock_store *s, const char *name,
                        uint64_t *fence, char **value, size_t *len);
int dlock__pg_watch(struct dlock_store *s, const char *name, void **state,
                    int64_t slice_ms);
void dlock__pg_watch_end(struct dlock_store *s, void *state);
/* --- notify.c --------------------------------------------------------- */
/* One statement (unnamed: PgBouncer-safe) on a pooled connection; state
 * (may be NULL): its SQLSTATE on a server's error. */
int dlock__pg_pooled(struct pg_store *ps, const char *what, const char *sql,
                     int n, const char *const *v, PGresult **res,
                     char state[6]);
/* probe.c: dlock_store_probe(). */
int dlock__pg_probe(struct dlock_store *s, dlock_probe *out);
/* After a candidate's release: wake the name's observers (best effort). */
void dlock__pg_notify(struct pg_store *ps, const char *name);

/* --- renew.c --------------------------------------------------------- */

int dlock__pg_extend_many(struct dlock_store *s,
                          struct dlock_lock *const *locks, size_t n, int *rcs);

/* conn.c: set around a wait statement (pg_advisory_lock under
 * lock_timeout): the acquire's cancel (dlock__cancel_fd()) cancels it on
 * the server. */
extern _Thread_local int dlock__pg_cancellable;

#endif /* DLOCK_STORES_PG_H */
