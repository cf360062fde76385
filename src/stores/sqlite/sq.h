/*
 * sq.h - the SQLite store's private header: what its files share.
 *
 *   store.c    the ops table: open, close, init, the DDL (its header
 *              comment: what the store promises, and how)
 *   path.c     where the file may be: private directory, no symbolic links
 *   conn.c     the one connection: mutex, busy handler, statements,
 *              transactions, errors
 *   holder.c   this process's identity and clock; is a row's holder gone?
 *   acquire.c  try_acquire
 *   lease.c    extend, ttl_left, release, extend_many; does a lock still
 *              own its row (runs.c)
 *   status.c   status, list, force_release
 *   runs.c     run records: once, once per period, the kept runs
 *   values.c   election: the leader value (value_set, value_get)
 *   suspend.c  a job's suspension (suspend, resume, suspension,
 *              suspensions; run_begin reads it)
 *   wake.c     wait_slice: a FIFO per waiter beside the database, woken
 *              by the release (a wake-up only), polling as a fallback
 *   texts.c    the statements (sql/ *.sql), expanded once per open
 *
 * What the files share is named dlock__sq_*; dlock__sqlite_ops (store.c)
 * and dlock__sqlite_texts (texts.c) are the names the core and the
 * golden test know the store by.
 */
#ifndef DLOCK_STORES_SQ_H
#define DLOCK_STORES_SQ_H

#include <pthread.h>
#include <sqlite3.h>
#include <stdint.h>

#include "cancel.h"
#include "clock.h"
#include "errors.h"
#include "names.h"
#include "process.h"
#include "random.h"
#include "store.h"
#include "strutil.h"
#include "text.h"
#include "url.h"

/* The texts, one per file in sql/ (texts.c).  Every statement, those
 * before Q_COUNT, is in the one cached set: prepared on first use, kept
 * for the handle's life and reset after each (conn.c: dlock__sq_stmt).
 * The three after it are scripts, not statements: run once per open by
 * sqlite3_exec (wal and schema hold several statements; migrate-limit
 * runs once in a file's life, its message kept for init's error). */
enum {
    Q_BEGIN,
    Q_COMMIT,
    Q_ROLLBACK,
    Q_HOLDERS,
    Q_DELETE_ROW,
    Q_BUMP_FENCE,
    Q_INSERT,
    Q_EXTEND,
    Q_TTL,
    Q_RELEASE,
    Q_FENCE,
    Q_NAMES,
    Q_FORCE,
    Q_HAS_LIMIT,
    Q_RUN_SUMMARY,
    Q_RUN_ONE,
    Q_RUN_NEWEST,
    Q_RUN_ABANDON,
    Q_RUN_INSERT,
    Q_RUN_NAMES,
    Q_RUN_TRIM,
    Q_RUN_END,
    Q_RUN_OK,
    Q_RUN_LAST,
    Q_VALUE_SET,
    Q_VALUE_GET,
    Q_RUN_KEEP_GET,
    Q_RUN_KEEP_PUT,
    Q_RUN_COUNT,
    Q_SUSPEND_GET,
    Q_SUSPEND_PUT,
    Q_SUSPEND_DELETE,
    Q_SUSPEND_ALL,
    Q_COUNT,
    T_WAL = Q_COUNT,
    T_SCHEMA,
    T_MIGRATE_LIMIT,
    T_COUNT
};

/* What identifies this process and machine in a row, and how its clocks
 * relate to the host's: read from /proc when the store is opened (a fork
 * child opens its own store, so reads its own). */
struct ident {
    char boot_id[64]; /* "unknown" when /proc/sys cannot be read */
    int boot_known;
    char pid_ns[64];     /* "" when unknown: then no pid is looked up */
    int proc_ours;       /* /proc/PID names the pids of our namespace */
    int64_t boot_off_ns; /* our CLOCK_BOOTTIME minus the host's */
    long long tick_ns;   /* one clock tick of /proc/PID/stat */
    long long start;     /* our start time, host ticks; 0 if unknown */
};

struct sqlite_store {
    struct dlock_store base;
    pthread_mutex_t mu; /* one connection, used by one thread at a time */
    sqlite3 *db;
    sqlite3_stmt *st[Q_COUNT];
    char *sql[T_COUNT]; /* every statement, expanded at open (texts.c) */
    char *path;
    int64_t op_timeout_ms;
    int64_t busy_deadline; /* monotonic ms, for the busy handler */
    int wake_dir;          /* PATH-wake (wake.c): -2 not opened yet, -1 none */
    struct ident id;
};

static inline void dlock__sq_bind_name(sqlite3_stmt *s, int i,
                                       const struct dlock_lock *lk)
{
    sqlite3_bind_text(s, i, lk->name, (int)lk->name_len, SQLITE_STATIC);
}

/* texts.c: every statement (sql/ *.sql) with its placeholders filled,
 * malloc'd into out (DLOCK_OK, or a code with the message set, out all
 * NULL), and freed; the golden test's hook (src/core/text.h). */
int dlock__sq_texts_build(char *out[T_COUNT]);
void dlock__sq_texts_free(char *out[T_COUNT]);
void dlock__sqlite_texts(dlock__text_emit emit, void *arg);

/* conn.c: the connection, taken for one operation until deadline
 * (monotonic ms; dlock__sq_deadline(): now plus the store's timeout); the
 * busy handler (also called by hand when SQLite will not); statement q
 * prepared once and reset (NULL on error); q run to its end (an SQLite
 * code); BEGIN IMMEDIATE; ROLLBACK if a transaction is open; the last
 * error as a dlock code with its message.  One API for every file of
 * the store, runs.c's too. */
void dlock__sq_lock(struct sqlite_store *ss, int64_t deadline);
void dlock__sq_unlock(struct sqlite_store *ss);
int64_t dlock__sq_deadline(struct sqlite_store *ss);
int dlock__sq_busy_handler(void *arg, int count);
int dlock__sq_is_busy(struct sqlite_store *ss);
sqlite3_stmt *dlock__sq_stmt(struct sqlite_store *ss, int q);
int dlock__sq_exec(struct sqlite_store *ss, int q);
int dlock__sq_begin(struct sqlite_store *ss);
void dlock__sq_rollback(struct sqlite_store *ss);
int dlock__sq_error(struct sqlite_store *ss, const char *what);

/* holder.c: fill id for this process (0, or -1 if it cannot tell its
 * clock from the host's: the caller refuses the store); the host's
 * CLOCK_BOOTTIME in ms; of the current row of Q_HOLDERS, the limit its
 * holder asked (1 for a value dlock could not have written) and whether
 * its holder is gone for good (now: dlock__sq_host_ms()). */
int dlock__sq_ident_read(struct ident *id);
int64_t dlock__sq_host_ms(const struct ident *id);
unsigned dlock__sq_row_limit(sqlite3_stmt *s);
int dlock__sq_row_dead(const struct ident *id, sqlite3_stmt *s, int64_t now);

/* acquire.c, lease.c, status.c: the ops of dlock__sqlite_ops. */
int dlock__sq_try_acquire(struct dlock_store *st, struct dlock_lock *lk,
                          int64_t deadline, int64_t *retry_ms);
int dlock__sq_extend(struct dlock_store *st, struct dlock_lock *lk,
                     int64_t ttl_ms);
int dlock__sq_extend_many(struct dlock_store *st,
                          struct dlock_lock *const *locks, size_t n, int *rcs);
int dlock__sq_ttl_left(struct dlock_store *st, struct dlock_lock *lk,
                       int64_t *left_ms);
int dlock__sq_release(struct dlock_store *st, struct dlock_lock *lk);
int dlock__sq_status(struct dlock_store *st, const char *name, dlock_info *out);
int dlock__sq_list(struct dlock_store *st, const char *prefix,
                   int (*cb)(const dlock_info *info, void *payload),
                   void *payload);
int dlock__sq_force_release(struct dlock_store *st, const char *name,
                            unsigned *removed);

/* suspend.c: the suspension ops of dlock__sqlite_ops, and for
 * run_begin (in its transaction): 1 and *r filled as store.h says when
 * lk's name is suspended, 0 when not, SQLERR-style -1 on a failed step
 * (the caller reports it with dlock__sq_error()). */
int dlock__sq_suspend(struct dlock_store *st, const char *name, const char *by,
                      const char *reason, int *was, dlock_suspension *cur);
int dlock__sq_resume(struct dlock_store *st, const char *name, int *was,
                     dlock_suspension *cur);
int dlock__sq_suspension(struct dlock_store *st, const char *name, int *was,
                         dlock_suspension *cur);
int dlock__sq_suspensions(struct dlock_store *st, const char *prefix,
                          dlock_suspension_cb cb, void *payload);
int dlock__sq_suspended_run(struct sqlite_store *ss,
                            const struct dlock_lock *lk, dlock_run *r);

/* values.c: value_set and value_get of dlock__sqlite_ops. */
int dlock__sq_value_set(struct dlock_store *st, struct dlock_lock *lk,
                        const char *value, size_t len);
int dlock__sq_value_get(struct dlock_store *st, const char *name,
                        uint64_t *fence, char **value, size_t *len);

/* lease.c: does lk still own its row (lease not over, this boot)?  1,
 * 0, or -1 on a store error (connection held, inside a transaction):
 * runs.c, values.c. */
int dlock__sq_owns(struct sqlite_store *ss, const struct dlock_lock *lk);

/* path.c: the default store: its private directory (privdir.c) and its
 * file, created 0600 if missing.  DLOCK_OK or a code with the message
 * set. */
int dlock__sq_default_file(const char *path);
/* DLOCK_EUNAVAIL if the database or its -wal, -shm, -journal is a
 * symbolic link. */
int dlock__sq_refuse_links(const char *path);
/* path with its directory resolved, malloc'd into *out. */
int dlock__sq_real_path(const char *path, char **out);

/* wake.c: wait_slice, forget and forget_inherited of dlock__sqlite_ops;
 * wake the oldest waiter for a name (connection held: after a release
 * commits); the longest poll between attempts (0: the core's backoff, a
 * test's knob). */
int dlock__sq_wait_slice(struct dlock_store *st, struct dlock_lock *lk,
                         int64_t slice_ms, int64_t *retry_ms);
int dlock__sq_forget(struct dlock_store *st, struct dlock_lock *lk);
void dlock__sq_forget_inherited(struct dlock_store *st, struct dlock_lock *lk);
void dlock__sq_wake(struct sqlite_store *ss, const char *name, size_t len);
extern int64_t dlock__sq_poll_max_ms;

/* runs.c: the four run ops of dlock__sqlite_ops. */
int dlock__sq_run_begin(struct dlock_store *st, struct dlock_lock *lk,
                        const dlock_run_rule *rule, const char *host,
                        int64_t pid, int *go, dlock_run *last);
int dlock__sq_run_end(struct dlock_store *st, struct dlock_lock *lk, int result,
                      int status);
int dlock__sq_runs(struct dlock_store *st, const char *name, unsigned max,
                   dlock_run_cb cb, void *payload);
int dlock__sq_keep_runs(struct dlock_store *st, const char *name, unsigned n);
int dlock__sq_kept_runs(struct dlock_store *st, const char *name, unsigned *n);
int dlock__sq_last_runs(struct dlock_store *st, const char *prefix,
                        dlock_run_cb cb, void *payload);

#endif
