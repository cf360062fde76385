/*
 * store.h - the private contract between the dlock core and its stores.
 *
 * Each store is one `static const struct dlock_store_ops` (SQLite's
 * sqlite3_io_methods is the model).  A store's open() allocates its own
 * struct whose first member is `struct dlock_store`; the core fills in the
 * base fields after open() returns.
 *
 * The core owns everything that is the same for every store: name and
 * option checks, the owner token, the wait loop and its deadline, the renew
 * thread, LOST bookkeeping, the registry of held locks, atexit and fork.
 * A store only talks to its database.
 *
 * Store functions return DLOCK_* codes and, on failure, set the thread's
 * message with dlock__seterr().  They must never print and never put a
 * password in a message (use store->url, which is redacted).
 */
#ifndef DLOCK_CORE_STORE_H
#define DLOCK_CORE_STORE_H

#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "dlock.h"

#if defined(__GNUC__)
#define DLOCK_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define DLOCK_PRINTF(f, a)
#endif

/* Owner tokens: 128 random bits as 32 lowercase hex digits. */
#define DLOCK_TOKEN_HEX 32

/* A parsed store URL: scheme://[user[:password]@]host[:port][/path][?k=v&..]
 * Every component is percent-decoded; absent ones are NULL (port: 0). */
struct dlock_url_param {
    char *key;
    char *value;
};

struct dlock_url {
    char *scheme;   /* lower case */
    char *user;
    char *password;
    char *host;     /* "[v6]" brackets removed */
    int port;
    char *path;     /* from the first '/' after the authority, decoded */
    char *query;    /* raw text after '?', not decoded (libpq wants it) */
    char *redacted; /* the whole URL with the password as "***" */
    char *raw;      /* the whole URL as given: may hold a password */
    size_t nparams;
    struct dlock_url_param *params;
};

int dlock__url_parse(struct dlock_url **out, const char *url);
void dlock__url_free(struct dlock_url *url);
/* The value of ?key=, or NULL if absent ("" if present without value). */
const char *dlock__url_param(const struct dlock_url *url, const char *key);
/* DLOCK_EINVAL (with a message) if the URL has a parameter not in the
 * NULL-terminated list `known`. */
/* DLOCK_EINVAL for the unknown option u->params[i]: named, unless it
 * follows a credential (then it may be a password's tail). */
int dlock__url_unknown_option(const struct dlock_url *u, size_t i);
int dlock__url_check_params(const struct dlock_url *url,
                            const char *const *known);
/* Parse a non-negative integer parameter with an optional unit suffix
 * "ms" or "s" (no suffix: `unit_ms` per unit).  Absent: *out untouched. */
int dlock__url_param_ms(const struct dlock_url *url, const char *key,
                        int64_t unit_ms, int64_t *out);
/* Parse a whole number parameter, 0 or more (a count: ?max_keys=).
 * Absent: *out untouched. */
int dlock__url_param_count(const struct dlock_url *url, const char *key,
                           int64_t *out);

/* What in the URL text may be a secret: the password (up to the
 * authority's last '@', and up to the URL's last '@'), and the values of
 * credential parameters (?password=...), each as written and decoded.
 * A NULL-terminated malloc'd list for dlock__scrub(); NULL if out of
 * memory.  dlock__secrets_free() wipes and frees it. */
char **dlock__url_secrets(const char *url);
void dlock__secrets_free(char **secrets);
/* Copy src (a driver's or server's text) to dst[cap] with every secret of
 * the NULL-terminated list replaced by "***"; a secret under 4 bytes that
 * occurs drops the whole text.  No text from libpq, the Redis transport
 * or libmariadb reaches a message without passing here. */
void dlock__scrub(char *dst, size_t cap, const char *src,
                  const char *const *secrets);
/* dlock__scrub() on the thread's message. */
void dlock__scrub_errmsg(const char *const *secrets);

/* The base of every store handle. */
struct dlock_store {
    const struct dlock_store_ops *ops;
    char *url; /* redacted, for messages and dlock_store_url() */
    pid_t pid;      /* the process that opened it (for messages) */
    uint64_t gen;   /* its dlock__generation(): a fork child may not use it */
    /* Set by open(): this handle has no native wait (a table-only lease
     * mode, say), so the core polls try_acquire even though the ops
     * table has wait_slice. */
    int poll_wait;
};

/* Lock states, owned by the core. */
enum dlock_state {
    DLOCK_STATE_HELD = 0,
    DLOCK_STATE_LOST,
    DLOCK_STATE_DETACHED /* its store was closed under it */
};

/* lk->state is written under lk->mu but read without it (lease_left(),
 * the registry scans): every access goes through these two. */
#define DLOCK_STATE_GET(lk) __atomic_load_n(&(lk)->state, __ATOMIC_ACQUIRE)
#define DLOCK_STATE_SET(lk, v)                                               \
    __atomic_store_n(&(lk)->state, (v), __ATOMIC_RELEASE)

/* A held lock.  Stores read name..shared and set fence and priv; the rest
 * belongs to the core (src/core/lock.c), except lease_end, which a store
 * may move later during a native wait (see wait_slice). */
struct dlock_lock {
    struct dlock_store *store;
    char *name;
    size_t name_len;
    char token[DLOCK_TOKEN_HEX + 1];
    int64_t ttl_ms;
    int shared;
    /* 1: a lock; N > 1: a semaphore of N (only on stores with has_limit).
     * A store admits lk while fewer than limit hold the name and all of
     * them asked the same limit; a holder that asked another limit makes
     * the attempt DLOCK_EINVAL, with a message naming the limit in force.
     * It records limit with the holder so that status can report it. */
    unsigned limit;
    uint64_t fence; /* set by the store on acquire */
    void *priv;     /* the store's per-lock state (a pinned connection...) */

    /* core-private */
    pthread_mutex_t mu; /* serialises store calls on this lock */
    pid_t pid;          /* the owning process (for messages) */
    uint64_t gen;       /* its dlock__generation() */
    enum dlock_state state;
    int auto_renew;
    int lost_notified;  /* declared lost (atomic: the lease thread sets
                         * it without mu); on_lost ran or is running */
    dlock_lost_cb on_lost;
    void *payload;
    int64_t lease_end;  /* monotonic ms: lease end as this process knows;
                         * the core writes it, a waiting store may too.
                         * Once held: the store's end less the clock-rate
                         * margin (lock.c), the moment the lock is LOST */
    int64_t next_renew; /* monotonic ms */
    /* under the registry mutex: two heaps, [0] the renew thread's (key:
     * min(next_renew, lease_end)), [1] the lease thread's (key: lease_end
     * when last looked at) */
    int64_t due[2];
    size_t heap_idx[2]; /* place in each heap, or SIZE_MAX */
    int heap_slot[2];   /* a place in that heap is reserved for it */
    unsigned refs;      /* library threads (and store close) using it now */
    int renewable;      /* the renew thread may pick it */
    int free_on_unref;  /* released from its own on_lost callback */
    int run_begun;      /* dlock_run_begin() recorded a run (under mu) */
    int release_on_unref; /* ...while a renewal held mu: the last ref
                           * tells the store */
    struct dlock_lock *prev, *next; /* registry list */
};

#define DLOCK_STORE_OPS_VERSION 1

struct dlock_store_ops {
    int version;      /* DLOCK_STORE_OPS_VERSION */
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
     * NULL: the core polls try_acquire with jittered backoff (SQLite). */
    int (*wait_slice)(struct dlock_store *store, struct dlock_lock *lk,
                      int64_t slice_ms, int64_t *retry_ms);
    /* Renew the lease to ttl_ms from now, only if lk still owns it:
     * DLOCK_OK or DLOCK_LOST. */
    int (*extend)(struct dlock_store *store, struct dlock_lock *lk,
                  int64_t ttl_ms);
    /* Optional: renew many leases of this store in one round trip (the
     * renew thread's batches, at most DLOCK_RENEW_BATCH locks).  Each
     * locks[i] is held (the core holds its mu) and is renewed to its own
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
     * dlock__fd_detach()).  The core calls it when the child frees such a
     * lock; those it never frees stay reachable from the registry.  With
     * it, a store needs no list of its held locks. */
    void (*forget_inherited)(struct dlock_store *store,
                             struct dlock_lock *lk);

    int (*status)(struct dlock_store *store, const char *name,
                  dlock_info *out);
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
     * run_begin: lk is held (the core holds lk->mu).  In ONE atomic step
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
     *    DLOCK_RUNS_KEPT (oldest first), and fill *last with the run
     *    before it if any (last->fence = 0 when none).
     * last is zeroed by the core before the call.
     *
     * run_end: record result/status and end = now on the run whose fence
     * is lk->fence (whether lk is still held or not); a success (EXITED,
     * status 0) also marks the name's summary as succeeded.  DLOCK_OK
     * when there is no such run any more (dropped as too old).
     *
     * runs: the kept runs of name, newest first, at most max (max >= 1),
     * each passed to cb (stop and return its value when nonzero).
     * last_runs: the newest run of each name starting with prefix ("" for
     * all) that has runs, to cb likewise.
     * Run records live in dlock's own tables/keys, never in a peer
     * library's (its-mieger's shared_locks, a plain SET NX). */
    int (*run_begin)(struct dlock_store *store, struct dlock_lock *lk,
                     const dlock_run_rule *rule, const char *host,
                     int64_t pid, int *go, dlock_run *last);
    int (*run_end)(struct dlock_store *store, struct dlock_lock *lk,
                   int result, int status);
    int (*runs)(struct dlock_store *store, const char *name, unsigned max,
                dlock_run_cb cb, void *payload);
    int (*last_runs)(struct dlock_store *store, const char *prefix,
                     dlock_run_cb cb, void *payload);
};

/* The most locks the renew thread hands one extend_many() call. */
#define DLOCK_RENEW_BATCH 500

/* The longest lease dlock grants (lock.c).  A store may treat a row whose
 * lease ends later than now + this as corrupt: no dlock wrote it. */
#define DLOCK_TTL_MAX_MS (365LL * 24 * 3600 * 1000)

/* privdir.c: make sure dir is a directory only this process's euid can
 * change: create it 0700 if missing; if it exists, refuse (DLOCK_EUNAVAIL,
 * with a message naming dir and the reason) a symbolic link, a
 * non-directory, one owned by another uid, or one writable by group or
 * others.  Never changes an existing directory. */
int dlock__private_dir(const char *dir);

/* errors.c */
int dlock__seterr(int rc, const char *fmt, ...) DLOCK_PRINTF(2, 3);
int dlock__vseterr(int rc, const char *fmt, va_list ap);
void dlock__clearerr(void);
int dlock__enomem(void);
/* DLOCK_LOST with "lock 'NAME' is no longer ours: WHY". */
int dlock__lost(const struct dlock_lock *lk, const char *why);

/* util.c */
int64_t dlock__now_ms(void);      /* CLOCK_MONOTONIC */
int64_t dlock__wall_ms(void);     /* CLOCK_REALTIME, for display only */
void dlock__sleep_ms(int64_t ms); /* restarts after EINTR */
/* Remaining ms until deadline (>= 0); INT64_MAX for DLOCK_WAIT_FOREVER. */
int64_t dlock__remaining_ms(int64_t deadline);
/* The longest duration dlock takes from outside (a URL's timeouts, a
 * store's answer saying how long a holder's lease has left): a year, the
 * longest lease.  now + any duration in range cannot overflow. */
#define DLOCK_DURATION_MAX_MS DLOCK_TTL_MAX_MS
/* A duration from outside, where it is parsed: more than
 * DLOCK_DURATION_MAX_MS is that much, any negative is -1 ("not known"). */
int64_t dlock__clamp_ms(int64_t ms);
/* A bound on store I/O for the calling thread (monotonic ms, 0: none).
 * The core sets it around store calls made for a held lock (renewal,
 * release, assert_ttl) to that lock's lease end: past it the call is of
 * no use, and a store that stopped answering must not keep the renew
 * thread or the holder waiting for the URL's whole timeout.  Stores pass
 * their own timeout through dlock__io_bound() wherever they wait. */
extern _Thread_local int64_t dlock__io_deadline;
/* timeout_ms, or less when dlock__io_deadline comes sooner (at least 1). */
int64_t dlock__io_bound(int64_t timeout_ms);
/* iowatch.c: for a client library whose calls take no deadline: while
 * armed, the socket fd is shut down at dlock__io_deadline, so that a
 * call blocked on it fails then.  Armed only when that deadline comes
 * before timeout_ms (the library's own); 0 when not armed.  Unwatch
 * before the call returns to its caller (and before fd is closed). */
uint64_t dlock__io_watch(int fd, int64_t timeout_ms);
void dlock__io_unwatch(uint64_t id);
int dlock__random(void *buf, size_t len);
int dlock__token(char out[DLOCK_TOKEN_HEX + 1]);
/* getpid(), cached (and refreshed in fork children). */
pid_t dlock__pid(void);
/* This process's incarnation: changes in every fork child, even one that
 * has its parent's pid (a pid 1 forking into a new pid namespace).  What
 * tells "made by this process", where a pid cannot. */
uint64_t dlock__generation(void);
/* DLOCK_OK or DLOCK_EINVAL with a message: 1..DLOCK_NAME_MAX bytes, valid
 * UTF-8.  len is the byte length. */
int dlock__check_name(const char *name, size_t len);
/* Poll delay for attempt n (0-based): exponential from 1 ms to
 * DLOCK_POLL_MAX_MS, scaled by a jitter factor in [0.5, 1) from rnd. */
#define DLOCK_POLL_MAX_MS 50
int64_t dlock__backoff_ms(unsigned attempt, uint32_t rnd);
uint32_t dlock__rand32(void);
char *dlock__strdup(const char *s);
char *dlock__strndup(const char *s, size_t n);
/* Bounded copy that always terminates dst (dstlen > 0). */
void dlock__strlcpy(char *dst, const char *src, size_t dstlen);
const char *dlock__hostname(void);
/* In a fork child: point fd at /dev/null, so that a client library's
 * close function (PQfinish, mysql_close) can free an inherited
 * connection while what it sends goes nowhere and the parent's session
 * lives on.  Returns 0, or -1 with errno. */
int dlock__fd_detach(int fd);

/* cancel.c: the cancel of the acquire running on this thread (NULL:
 * none), set by acquire.c for the whole acquire and cleared before it
 * lets go of what a cancelled wait left (so that cleanup is never
 * cancelled itself).  A store's wait checks dlock__cancelled() between
 * its steps and wakes on it: a wait that polls descriptors adds
 * dlock__cancel_fd() (readable once fired); one that blocks elsewhere
 * arms dlock__cancel_watch(fn, arg): fn(arg) runs once, on another
 * thread, when the cancel fires while armed; unwatch() returns only once
 * fn has returned, so arm it around the blocking call and unwatch before
 * touching what fn touches.  A store returns what its wait ended with;
 * the core turns it into DLOCK_ECANCELED and releases a grant that raced
 * the cancel. */
extern _Thread_local struct dlock_cancel *dlock__cancel_cur;
int dlock__cancelled(void);
int dlock__cancel_fd(void);
/* DLOCK_ECANCELED with its message. */
int dlock__ecanceled(void);
/* Sleep up to ms, less if the cancel fires: 1 if it did. */
int dlock__cancel_sleep_ms(int64_t ms);
uint64_t dlock__cancel_watch(void (*fn)(void *), void *arg);
void dlock__cancel_unwatch(uint64_t id);

/* Store ops compiled in (store.c has the scheme table). */
extern const struct dlock_store_ops dlock__sqlite_ops;
extern const struct dlock_store_ops dlock__redis_ops;
extern const struct dlock_store_ops dlock__postgres_ops;
extern const struct dlock_store_ops dlock__mysql_ops;

/* store.c: names a list() collected (with the connection held) before
 * describing each (without it, so the callback may call the library). */
struct dlock__names {
    char **v;
    size_t n, cap;
};
/* Add name[0..len) unless already there; DLOCK_OK or DLOCK_ENOMEM. */
int dlock__names_add(struct dlock__names *l, const char *name, size_t len);
/* describe() each name and call cb for those held; stops at the first
 * error or nonzero cb.  Frees the list. */
int dlock__names_report(struct dlock__names *l, struct dlock_store *s,
                        int (*describe)(struct dlock_store *, const char *,
                                        dlock_info *),
                        int (*cb)(const dlock_info *, void *), void *payload);
void dlock__names_free(struct dlock__names *l);

/* store.c: DLOCK_OK, or DLOCK_EINVAL for NULL or a fork child's use of its
 * parent's store. */
int dlock__store_usable(const struct dlock_store *store);
/* The checks dlock_list() and dlock_last_runs() share: a usable store, a
 * callback, and a prefix (NULL: "") of at most DLOCK_NAME_MAX bytes.
 * Clears the thread's message first. */
int dlock__prefix_call_ok(const struct dlock_store *store, int has_cb,
                          const char **prefix);
/* A store call on lk under its mu (lock.c); held_only: lk must be held
 * (a lapsed lease or DLOCK_LOST marks it lost, as dlock_assert_ttl()). */
int dlock__lock_call(struct dlock_lock *lk, int held_only,
                     int (*fn)(struct dlock_store *s, struct dlock_lock *lk,
                               void *arg),
                     void *arg);

/* lock.c, for acquire.c: the registry of held locks.  start() installs
 * the process hooks once and, for an auto-renewed lock, starts the renew
 * thread; reserve() makes room in the renew heap before the store is
 * asked (so registering a held lock cannot fail), unreserve() gives it
 * back when the acquire fails; add() registers a held lock. */
int dlock__registry_start(int auto_renew);
int dlock__registry_reserve(struct dlock_lock *lk, int auto_renew);
void dlock__registry_unreserve(struct dlock_lock *lk);
void dlock__registry_add(struct dlock_lock *lk);
void dlock__lock_free(struct dlock_lock *lk);

/* lock.c: the store is closing; release (best effort) and detach the locks
 * this process holds through it. */
void dlock__registry_detach_store(struct dlock_store *store);
/* lock.c: the clock-rate margin of a lease of ttl_ms (DLOCK_DRIFT_DIV):
 * a holder counts its lease as ending that much before the store does. */
int64_t dlock__drift_margin(int64_t ttl_ms);
/* lock.c: leases the renew thread has renewed in this process so far
 * (dlock-bench reads it; the thread is named "dlock-renew" on Linux). */
uint64_t dlock__renewals(void);

#endif /* DLOCK_CORE_STORE_H */
