/*
 * store.h - the contract between the dlock core and a store.
 *
 * This header is all a store's author needs to read: what the core asks
 * of a store (struct dlock_store_ops), the base of a store handle
 * (struct dlock_store) and the part of a lock a store may see (struct
 * dlock_lock).  SQLite's sqlite3_io_methods and libgit2's sys/ headers
 * are the model.  The helpers a store calls live in their own headers:
 *
 *   errors.h   the thread's error message (dlock__seterr, dlock__lost)
 *   url.h      the parsed URL, its parameters, scrubbing driver text
 *   clock.h    monotonic time, sleeps, deadlines, backoff
 *   iobound.h  the I/O deadline of store calls for a held lock
 *   cancel.h   waking a native wait when its acquire is cancelled
 *   process.h  pid, fork generation, host name (recorded with holders),
 *              letting go of a connection a fork child inherited
 *   random.h   owner tokens, jitter
 *   strutil.h  small string helpers
 *   names.h    name checks, the list() helper
 *   pool.h     an idle-connection pool with the retry-once policy
 *   quota.h    a handle's share of a server-wide resource
 *   text.h     SQL/Lua templates kept as files ({{placeholders}})
 *
 * THE DIVISION OF LABOUR.  The core owns everything that is the same for
 * every store: name and option checks, the owner token, the wait loop and
 * its deadline, the renew and lease threads, LOST bookkeeping, the
 * registry of held locks, atexit and fork (docs/internals.md).  A store
 * only talks to its database: one attempt, one bounded native wait
 * slice, one renewal (or a batch), one release.  It never sleeps to wait
 * for a holder unless inside wait_slice, never retries past a deadline
 * it was given, and keeps no list of held locks.
 *
 * LIFETIME.  A store is one `const struct dlock_store_ops` (declared at
 * the end of this header, listed in store.c's scheme table).  open()
 * allocates the store's own struct whose first member is `struct
 * dlock_store`; the core fills in the base fields after open() returns
 * and calls close() once, after every lock taken through the handle was
 * released or detached.
 *
 * THREADS.  Calls on one lock are serialised by the core (the user's
 * thread against the renew thread), but calls on different locks of one
 * handle come from any thread at once: a store guards its connections
 * itself (pool.h).
 *
 * ERRORS.  Store functions return DLOCK_* codes and, on failure, set the
 * thread's message with dlock__seterr().  They must never print and
 * never put a password in a message (use store->url, which is redacted,
 * and dlock__scrub() for a driver's text).
 */
#ifndef DLOCK_CORE_STORE_H
#define DLOCK_CORE_STORE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "dlock.h"
#include "random.h" /* DLOCK_TOKEN_HEX */

struct dlock_url; /* url.h */

/* The version of this contract.  Bumped when an op's meaning or a
 * struct below changes in a way an existing store must follow. */
#define DLOCK_STORE_OPS_VERSION 2

/* The longest lease dlock grants (the core refuses a longer ttl).  A
 * store may treat a row whose lease ends later than now + this as
 * corrupt: no dlock wrote it.  Equal to DLOCK_DURATION_MAX_MS (clock.h). */
#define DLOCK_TTL_MAX_MS (365LL * 24 * 3600 * 1000)

/* The most locks the renew thread hands one extend_many() call. */
#define DLOCK_RENEW_BATCH 500

/* The base of every store handle: the first member of the store's own
 * struct.  Set by the core after open(), except poll_wait. */
struct dlock_store {
    const struct dlock_store_ops *ops;
    char *url;    /* redacted, for messages and dlock_store_url() */
    pid_t pid;    /* the process that opened it (for messages) */
    uint64_t gen; /* its dlock__generation(): a fork child may not use it */
    /* Set by open(): this handle has no native wait (a table-only lease
     * mode, say), so the core polls try_acquire even though the ops
     * table has wait_slice. */
    int poll_wait;
};

/* A lock as a store sees it: the core's own bookkeeping (its mutex, its
 * place in the renew and lease schedules, its state, its LOST callback)
 * is in a struct of the core's that this one is the first member of, out
 * of a store's sight.  The public dlock_lock handle points here.
 *
 * A store reads name..limit, sets fence and priv, and may move
 * lease_end during a native wait (see wait_slice), or earlier when it
 * grants a lock: to when its server will let the lock go, if that is
 * sooner (etcd: a lease shared with other locks, refreshed a moment
 * before; the renewal then comes sooner).  Nothing here changes
 * while a store call on the lock runs, except through the store. */
struct dlock_lock {
    char *name; /* NUL-terminated; name_len bytes, valid UTF-8 */
    size_t name_len;
    char token[DLOCK_TOKEN_HEX + 1]; /* this holder's owner token */
    int64_t ttl_ms; /* the lease to ask for (dlock_extend() may change it
                     * between calls) */
    int shared;     /* a shared (read) lock: only on stores with has_shared */
    /* 1: a lock; N > 1: a semaphore of N (only on stores with has_limit).
     * A store admits lk while fewer than limit hold the name and all of
     * them asked the same limit; a holder that asked another limit makes
     * the attempt DLOCK_EINVAL, with a message naming the limit in force.
     * It records limit with the holder so that status can report it. */
    unsigned limit;
    int auto_renew; /* read-only: the renew thread will renew it (a store
                     * may keep such locks on a shared session) */
    int waits;      /* read-only: the acquire waits after a busy try (its
                     * wait_ms is not 0): a store may leave out of that
                     * try what only a final answer needs (the holder's
                     * name for the message) */
    uint64_t fence; /* set by the store on acquire */
    void *priv;     /* the store's per-lock state (a pinned connection...) */
    /* Monotonic ms: the lease end as this process knows it.  The core
     * sets it before each attempt and slice to (call time + ttl); a store
     * waiting natively may move it later, to (the time its successful
     * statement was sent + ttl), never later than that, or earlier when
     * the server will let the lock go sooner.  Once held it is
     * the core's (written under the core's atomics): read-only. */
    int64_t lease_end;
    /* An election's candidate (dlock_elect()): the value to publish,
     * value_len bytes, NUL-terminated, or NULL for a plain lock (and a
     * candidate without a value).  A store that keeps the value in the
     * lock's own record (etcd: the key's value, as etcdctl elect writes
     * it) writes it at acquire; the others ignore it there (value_set).
     * is_candidate is 1 for every lock from dlock_elect().  The core's:
     * read-only. */
    const char *value;
    size_t value_len;
    int is_candidate;
};

struct dlock_store_ops {
    /* DLOCK_STORE_OPS_VERSION as the store was compiled: dlock_store_open()
     * refuses a table whose version is not the core's. */
    int version;
    const char *name; /* "sqlite", "redis", ... */
    int has_shared;   /* supports shared (read) locks */
    int has_limit;    /* supports semaphores (dlock_lock.limit > 1) */

    /* Connect/open.  *out is the store's own struct, base first. */
    int (*open)(struct dlock_store **out, const struct dlock_url *url);
    /* Free everything.  Never called with locks still held. */
    void (*close)(struct dlock_store *store);

    /* One attempt to acquire lk.  On DLOCK_OK set lk->fence (and lk->priv).
     * On DLOCK_BUSY set *retry_ms to the holder's lease left when known
     * (else leave -1).  `deadline` (monotonic ms) bounds any blocking on
     * the store's internal contention; it is never DLOCK_WAIT_FOREVER. */
    int (*try_acquire)(struct dlock_store *store, struct dlock_lock *lk,
                       int64_t deadline, int64_t *retry_ms);
    /* Optional: block natively on the store for ONE bounded slice:
     * DLOCK_OK when acquired (lk->fence set, as try_acquire), DLOCK_BUSY
     * when the slice ran out (it may end sooner).  The core's wait loop
     * (acquire.c) does one try_acquire first, then calls this with slices it
     * sizes itself: never past the caller's deadline, never longer than
     * its cap, and ending just after the holder's lease when *retry_ms
     * (from try_acquire or the previous slice) said when that is.  On
     * DLOCK_BUSY set *retry_ms to the holder's lease left (or when it is
     * worth looking again, e.g. after fencing off a hung holder), else
     * leave it -1, and leave a message saying who holds the lock.
     *
     * The store may keep state in lk->priv between slices (a session of
     * its own to wait on), and from a try_acquire that answered BUSY to
     * the next call for the same acquire (what it saw of the holder).
     * If the acquire ends without the lock, the core calls forget() to
     * free whatever is in lk->priv (a store without forget() leaves
     * nothing there).  The core sets lk->lease_end to (call
     * time + ttl) before each slice; a store may move it later, to (time
     * its successful statement was sent + ttl), never later than that.
     * NULL: the core polls try_acquire with jittered backoff. */
    int (*wait_slice)(struct dlock_store *store, struct dlock_lock *lk,
                      int64_t slice_ms, int64_t *retry_ms);
    /* Renew the lease to ttl_ms from now, only if lk still owns it:
     * DLOCK_OK or DLOCK_LOST. */
    int (*extend)(struct dlock_store *store, struct dlock_lock *lk,
                  int64_t ttl_ms);
    /* Optional: renew many leases of this store in one round trip (the
     * renew thread's batches, at most DLOCK_RENEW_BATCH locks).  Each
     * locks[i] is held (the core holds its mutex) and is renewed to its own
     * lk->ttl_ms from now.  Returns DLOCK_OK with rcs[i] set to what
     * extend() would answer for locks[i] (DLOCK_OK, DLOCK_LOST, or a
     * transient failure), or a failure code when nothing is known of any
     * of them (the connection broke before an answer): rcs untouched, the
     * code stands for every lock.  NULL: the core calls extend() per
     * lock. */
    int (*extend_many)(struct dlock_store *store,
                       struct dlock_lock *const *locks, size_t n, int *rcs);
    /* Lease left per the store: DLOCK_OK with *left_ms > 0, or
     * DLOCK_LOST. */
    int (*ttl_left)(struct dlock_store *store, struct dlock_lock *lk,
                    int64_t *left_ms);
    /* Release if lk still owns it (DLOCK_OK), else DLOCK_LOST.  Frees
     * lk->priv whatever happens. */
    int (*release)(struct dlock_store *store, struct dlock_lock *lk);
    /* Optional: free lk->priv of a lock that is not held (LOST, or a wait
     * that ended without it), letting go of whatever the store may still
     * hold for it on a connection of this process.  NULL: the core calls
     * release() instead, for a LOST lock.  Returns DLOCK_OK, or the
     * failure of a call it made to the store (a queue left by a script
     * that got no answer: DLOCK_EUNAVAIL, with its message); lk->priv is
     * freed either way. */
    int (*forget)(struct dlock_store *store, struct dlock_lock *lk);
    /* Optional: free lk->priv in a fork child, where lk is the child's copy
     * of a lock its parent holds.  The connections in it are the
     * parent's: send nothing on them and do not end their sessions (see
     * dlock__fd_detach(), process.h).  The core calls it when the child
     * frees such a lock; those it never frees stay reachable from the
     * registry.  With it, a store needs no list of its held locks. */
    void (*forget_inherited)(struct dlock_store *store, struct dlock_lock *lk);

    int (*status)(struct dlock_store *store, const char *name, dlock_info *out);
    int (*list)(struct dlock_store *store, const char *prefix,
                int (*cb)(const dlock_info *info, void *payload),
                void *payload);
    int (*force_release)(struct dlock_store *store, const char *name,
                         unsigned *removed);
    /* Create tables if missing. */
    int (*init)(struct dlock_store *store);
    /* The DDL init() runs, as text for a DBA (malloc'd); no connection. */
    int (*ddl)(char **out, const struct dlock_url *url);

    /* Run records (include/dlock.h, "Runs"; src/core/run.c checks the
     * arguments).  Optional: NULL makes the calls DLOCK_ENOTSUP.
     *
     * run_begin: lk is held (the core holds its mutex).  In ONE atomic step
     * on the store (a script, a transaction), only if lk still owns the
     * lock (else DLOCK_LOST, nothing written):
     *  - read the name's summary: the start of its last run (store clock)
     *    and whether a run of it ever succeeded;
     *  - skip (*go = 0) if rule->once and a run succeeded, or if
     *    rule->period_ms > 0 and now - last start < period_ms / 2, with
     *    now the store's clock (Redis TIME, clock_timestamp(), NOW(6);
     *    SQLite: CLOCK_REALTIME); fill *last with the run that decided it;
     *  - else (*go = 1): mark runs of the name still RUNNING as
     *    ABANDONED, record a new run {lk->fence, host, pid, start = now,
     *    RUNNING}, set the summary's last start to now, drop runs beyond
     *    the name's keep setting (keep_runs; DLOCK_RUNS_KEPT when none),
     *    oldest first, and fill *last with the run before it if any
     *    (last->fence = 0 when none).
     *  - at a cost that does not grow with the runs kept (up to
     *    DLOCK_RUNS_KEPT_MAX): no scan of the name's runs, no rewrite of
     *    them all.  Only the newest run can still be RUNNING (each begin
     *    marks the one before), and only the oldest go: a count kept in
     *    the summary and an index by fence do it (sqlite/runs.c).
     * last is zeroed by the core before the call.
     *
     * run_end: record result/status and end = now on the run whose fence
     * is lk->fence (whether lk is still held or not); a success (EXITED,
     * status 0) also marks the name's summary as succeeded.  DLOCK_OK
     * when there is no such run any more (dropped as too old).
     *
     * keep_runs: in ONE atomic step, record n (1..DLOCK_RUNS_KEPT_MAX;
     * the core maps 0 to DLOCK_RUNS_KEPT) as how many runs name keeps,
     * and drop its runs beyond n, oldest first (this call may cost what
     * it drops, and may recount).  Optional with kept_runs: NULL makes
     * dlock_keep_runs() and dlock_kept_runs() DLOCK_ENOTSUP.
     * kept_runs: name's setting into *n, DLOCK_RUNS_KEPT when none.
     *
     * runs: the kept runs of name, newest first, at most max (1 <= max
     * <= DLOCK_RUNS_KEPT_MAX: read in pages where one answer would not
     * hold them),
     * each passed to cb (stop and return its value when nonzero).
     * last_runs: the newest run of each name starting with prefix ("" for
     * all) that has runs, to cb likewise.
     * Run records live in dlock's own tables/keys, never in a peer
     * library's (its-mieger's shared_locks, a plain SET NX). */
    int (*run_begin)(struct dlock_store *store, struct dlock_lock *lk,
                     const dlock_run_rule *rule, const char *host, int64_t pid,
                     int *go, dlock_run *last);
    int (*run_end)(struct dlock_store *store, struct dlock_lock *lk, int result,
                   int status);
    int (*keep_runs)(struct dlock_store *store, const char *name, unsigned n);
    int (*kept_runs)(struct dlock_store *store, const char *name, unsigned *n);
    int (*runs)(struct dlock_store *store, const char *name, unsigned max,
                dlock_run_cb cb, void *payload);
    int (*last_runs)(struct dlock_store *store, const char *prefix,
                     dlock_run_cb cb, void *payload);

    /* Election (include/dlock.h, "Election"; src/core/elect.c checks the
     * arguments).  value_set and value_get are optional together: NULL
     * makes dlock_elect() and dlock_leader() DLOCK_ENOTSUP.
     *
     * value_set: lk is held (the core holds its mutex) and is a candidate
     * (lk->is_candidate).  In ONE atomic step on the store, only if lk
     * still owns the lock (else DLOCK_LOST, nothing written), record
     * (lk->fence, value: len bytes, NUL-terminated, len may be 0) as
     * name's leader value, replacing whatever was there (any fence).
     * The core calls it once right after the grant, with value ==
     * lk->value (a store that wrote lk->value at acquire returns DLOCK_OK
     * without a round trip), and for each dlock_proclaim(), before it
     * sets lk->value to the new one.  A store with notifications (watch)
     * announces the change, so that observers see a new leader at once.
     *
     * value_get: name's recorded leader value: DLOCK_OK with *fence (the
     * term it was written under) and *value (malloc'd, NUL-terminated,
     * *len bytes), or DLOCK_OK with *value NULL, *fence 0 when there is
     * none.  The core pairs it with status(): it shows the value only
     * when *fence is the holder's fence (a record left by an earlier
     * leader is not the current one's).  A store whose status() cannot
     * tell a leader's fence (etcd, for a key without dlock's holder
     * record) sets info->fence there to the same term value_get gives.
     *
     * watch: optional (NULL: dlock_observe() re-reads every
     * DLOCK_OBSERVE_POLL_MS).  Block for at most slice_ms until name's
     * holders may have changed: DLOCK_OK when woken or when the slice ran
     * out (the core re-reads either way: a notification is a wake-up,
     * never a report, R1), or a failure.  *state is the store's own,
     * NULL at the first call; the first call is made with slice_ms 0,
     * before the core's first read, and only subscribes, so that no
     * change between that read and the next wait is missed.  It wakes on
     * the cancel (cancel.h) as wait_slice does.  watch_end frees *state
     * (and unsubscribes); it is called once, whatever watch returned. */
    int (*value_set)(struct dlock_store *store, struct dlock_lock *lk,
                     const char *value, size_t len);
    int (*value_get)(struct dlock_store *store, const char *name,
                     uint64_t *fence, char **value, size_t *len);
    int (*watch)(struct dlock_store *store, const char *name, void **state,
                 int64_t slice_ms);
    void (*watch_end)(struct dlock_store *store, void *state);

    /* Suspension (include/dlock.h, "Suspension"; src/core/suspend.c
     * checks the arguments and every text read back).  Optional together:
     * NULL makes dlock_suspend() and the rest DLOCK_ENOTSUP, and then
     * run_begin never skips for one.  The record is dlock's own (a table
     * or key beside the run records, never a peer library's), one per
     * name: {by, since_ms, reason}, since_ms on the store's clock as
     * run_begin's now.
     *
     * suspend: in ONE atomic step, if name has no record, write {by,
     * now, reason ("" for none)} and set *was 0; else leave the record as
     * it is, set *was 1 and fill *cur with it.
     * resume: delete name's record in one step: *was 1 and *cur filled
     * with what it was (read in the same step), or *was 0 if none.
     * suspension: read name's record: *was 1 and *cur, or *was 0.
     * suspensions: each record of a name starting with prefix ("" for
     * all) to cb (stop and return its value when nonzero).
     * *cur is zeroed by the core first; the store copies what it read
     * bounded by the fields' sizes (cut if longer) and sets cur->name.
     * The core vets the texts (UTF-8, no control characters) after.
     *
     * And run_begin, in its own atomic step: a name with a record is
     * skipped before any rule (*go = 0, nothing written) with *last =
     * {result DLOCK_RUN_SUSPENDED, host = by, start_ms = since_ms, fence
     * 0, pid 0, end_ms 0, status -1}. */
    int (*suspend)(struct dlock_store *store, const char *name, const char *by,
                   const char *reason, int *was, dlock_suspension *cur);
    int (*resume)(struct dlock_store *store, const char *name, int *was,
                  dlock_suspension *cur);
    int (*suspension)(struct dlock_store *store, const char *name, int *was,
                      dlock_suspension *cur);
    int (*suspensions)(struct dlock_store *store, const char *prefix,
                       dlock_suspension_cb cb, void *payload);

    /* Optional (NULL: dlock_store_probe() is DLOCK_ENOTSUP), for `dlock
     * check`: fill what the store can tell of out (include/dlock.h,
     * dlock_probe).  The core sets every field to "unknown" first (0,
     * tls -1, tables_ok -1, resolution_ms 1) and version to what the
     * caller asked; the store reads the server's clock in one round trip
     * and sets host_ms to the host's wall clock at its middle (rtt_ms its
     * length), and says whether the connection it used is TLS, its
     * certificate's notAfter where its driver shows the peer's
     * certificate, and whether its tables are there.  Added without a
     * version bump: a table without it is a store that cannot say. */
    int (*probe)(struct dlock_store *store, dlock_probe *out);
};

/* The stores compiled in (store.c's scheme table has their schemes).  A
 * new store defines one of these and adds its schemes there. */
extern const struct dlock_store_ops dlock__sqlite_ops;
extern const struct dlock_store_ops dlock__redis_ops;
extern const struct dlock_store_ops dlock__postgres_ops;
extern const struct dlock_store_ops dlock__mysql_ops;
extern const struct dlock_store_ops dlock__etcd_ops;

#endif /* DLOCK_CORE_STORE_H */
