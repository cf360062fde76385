/*
 * dlock.h - named, distributed locks kept in databases you already run.
 *
 * This is the only public header of libdlock.  One API and one set of
 * semantics over every store: SQLite (embedded default), Redis, PostgreSQL
 * and MySQL/MariaDB.
 *
 * Conventions (libgit2 style):
 *  - Handles are opaque.  Out parameters come first; the caller owns what
 *    an out parameter returns and frees it with the matching function:
 *    dlock_store_close(), dlock_release(), dlock_info_free(), and
 *    dlock_free() for strings.  Never free() what the library allocated.
 *  - Every free/close function accepts NULL.
 *  - Functions return a dlock_rc: DLOCK_OK (0) on success and a negative
 *    code otherwise.  "Someone else holds it" is DLOCK_BUSY, never an
 *    error.
 *  - Every function that returns a dlock_rc sets the calling thread's
 *    message (dlock_errmsg()) when it fails or returns BUSY, and clears it
 *    when it succeeds, so a message never belongs to an earlier call.  The
 *    accessors (dlock_fence(), dlock_store_url(), dlock_errmsg()...) leave
 *    it alone.  The library never prints anything.
 *  - Strings the library returns as `const char *` stay valid as long as
 *    the object they come from (the store, the lock, the dlock_info);
 *    static ones (dlock_strerror(), dlock_version(), dlock_schemes(),
 *    dlock_default_url()) for the life of the process.  dlock_errmsg()'s
 *    text is valid until the thread's next call into the library.
 *
 * Thread safety: a dlock_store may be shared by any number of threads.  A
 * dlock_lock belongs to one holder; calls on the same lock from several
 * threads are serialised internally but make little sense.  As with
 * fclose(), dlock_store_close() must not run while another thread still
 * calls on the store or on a lock taken through it: the caller orders
 * the close after those calls (the Python binding does this for you).
 *
 * Fork: a child made by fork() never releases or renews its parent's locks.
 * Calls on an inherited dlock_lock or dlock_store in the child return
 * DLOCK_EINVAL; the child opens its own store if it needs one.
 *
 * Process-wide hooks: the first dlock_acquire() with valid arguments (or
 * the first dlock_store_close()) installs, once per process, an atexit()
 * handler that releases the locks still held at exit() and
 * pthread_atfork() handlers that keep the library's own mutexes
 * consistent across fork() and make a fork child forget (never release)
 * its parent's locks.  The first acquire with auto_renew starts one renew
 * thread, which lives until exit.  Nothing is installed before that.
 * Locks are not released by _exit() or by a fatal signal: the store's
 * lease (or its session end) frees them then.  The shared library is
 * linked with -z nodelete: dlclose() never unmaps it under its own
 * threads, and its atexit handler still runs at exit.
 */
#ifndef DLOCK_H
#define DLOCK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define DLOCK_EXTERN __attribute__((visibility("default")))
#else
#define DLOCK_EXTERN
#endif

/** Library version: the version of this header.  project(VERSION) in
 * CMakeLists.txt is the one place the version is decided; these follow it
 * (the `version` test fails when they do not). */
#define DLOCK_VERSION_MAJOR 0
#define DLOCK_VERSION_MINOR 2
#define DLOCK_VERSION_PATCH 0
#define DLOCK_VERSION_STRING "0.2.0"

/** Return codes.  0 is success; everything else is negative.
 *
 * Failure classes: each kind of failure gets the same code on every store,
 * so a retry policy can be built on the code alone.
 *
 *  class                      code            retrying may help
 *  -------------------------  --------------  -----------------
 *  unreachable: refused or    DLOCK_EUNAVAIL  yes
 *  timed-out connection, a
 *  connection lost, no answer
 *  in time, a server starting
 *  up or shutting down, too
 *  many connections (server-
 *  wide)
 *  refused credentials: a     DLOCK_ESTORE    no
 *  wrong password, an unknown
 *  user, a password the server
 *  wants and the URL lacks
 *  permission: no rights on   DLOCK_ESTORE    no
 *  the database, table or keys
 *  (a role without grants, a
 *  Redis ACL), a SQLite file
 *  or directory this process
 *  may not open
 *  misconfiguration the       DLOCK_ESTORE    no
 *  server rejects: an unknown
 *  database or Redis db index,
 *  a table that is not dlock's
 *  a server error             DLOCK_ESTORE    no
 *  a bad URL, option or name  DLOCK_EINVAL    no
 *  (found before any server
 *  is asked)
 *
 * PostgreSQL: libpq gives no SQLSTATE for a failed connection, so a
 * connection is counted as refused (DLOCK_ESTORE) when the server asked
 * for a password (or needs one the URL lacks) and the connection still
 * failed; a refusal before any password is asked (no pg_hba.conf line, an
 * unknown database under trust or certificate authentication) cannot be
 * told from an unreachable server and stays DLOCK_EUNAVAIL.  A per-role
 * connection limit (after the password) is DLOCK_ESTORE. */
typedef enum dlock_rc {
    /** Success. */
    DLOCK_OK = 0,
    /** The lock is held by someone else and was not acquired in time. */
    DLOCK_BUSY = -1,
    /** The lock was lost: its lease ran out, it was taken over or broken. */
    DLOCK_LOST = -2,
    /** The lock is held, but with less lease left than asked for. */
    DLOCK_EXPIRING = -3,
    /** Invalid argument: a bad name, URL, option or handle. */
    DLOCK_EINVAL = -4,
    /** The store cannot be reached (connection refused, timed out, gone)
     * or cannot serve now: retrying later may help (see above). */
    DLOCK_EUNAVAIL = -5,
    /** The store answered with an error that retrying will not change:
     * refused credentials, no permission, a misconfiguration the server
     * rejects, a server error (see above). */
    DLOCK_ESTORE = -6,
    /** The store does not support this (or was not compiled in). */
    DLOCK_ENOTSUP = -7,
    /** Out of memory. */
    DLOCK_ENOMEM = -8,
    /** The wait was cancelled (dlock_cancel_fire()): nothing is held. */
    DLOCK_ECANCELED = -9
} dlock_rc;

/** Wait forever for a lock (the value of dlock_options.wait_ms). */
#define DLOCK_WAIT_FOREVER (-1)

/** Longest lock name, in bytes.  Names are 1..DLOCK_NAME_MAX bytes of UTF-8
 * without NUL. */
#define DLOCK_NAME_MAX 1024

/** Default lease, in milliseconds. */
#define DLOCK_DEFAULT_TTL_MS 30000

/** The clock-rate margin: a holder counts its lease as ending 1/DLOCK_DRIFT_DIV
 * of the lease (at least 1 ms) before the store does, from the moment the
 * request that started or renewed it left.  dlock assumes the holder's
 * clock and the store's advance at rates within 1% of each other
 * (docs/semantics.md says what happens outside that bound). */
#define DLOCK_DRIFT_DIV 100

/** Shortest lease dlock grants, in milliseconds: renewal (every third of
 * the lease) needs room for a round trip, and a shorter lease would be
 * lost as soon as it was taken. */
#define DLOCK_TTL_MIN_MS 100

/** A store: a connection (or pool) to one database.  Thread-safe. */
typedef struct dlock_store dlock_store;

/** A held lock.  Owned by the caller until dlock_release(). */
typedef struct dlock_lock dlock_lock;

/**
 * Called once when a held lock is found lost: by the renew thread (the
 * store says it is gone), by dlock_extend()/dlock_assert_ttl(), or by the
 * library's lease thread at the lease end as this process counts it
 * (DLOCK_DRIFT_DIV) when no renewal has confirmed a later end by then,
 * whatever the store is doing: a renewal stuck in a store that stopped
 * answering does not delay it.  It runs on the thread that found the loss,
 * without any library lock held; it may call dlock_release() on the lock
 * (which then returns DLOCK_LOST and frees it; from the lease thread that
 * waits for a renewal in flight on the same lock, bounded by the lease)
 * but must not block for long, since it delays the loss of other locks.
 */
typedef void (*dlock_lost_cb)(dlock_lock *lock, void *payload);

/**
 * A cancel: a way to stop a waiting dlock_acquire() from another thread or
 * from a signal handler (libpq's PQcancel, a CancellationToken).
 *
 * Create it with dlock_cancel_new(), name it in dlock_options.cancel of
 * one or more acquires, and call dlock_cancel_fire() to stop them.  Every
 * acquire that names a fired cancel returns DLOCK_ECANCELED promptly
 * (within about 100 ms on every store, whatever the wait was doing) with
 * nothing held and nothing left in the store on its behalf: no queue
 * entry, waiter row, advisory or GET_LOCK lock, session.  A grant that
 * races the cancel is released again before the acquire returns; an
 * acquire that names an already fired cancel returns DLOCK_ECANCELED
 * without sending anything.  A fired cancel stays fired until
 * dlock_cancel_reset().  It never affects a lock already held.
 *
 * A cancel is a flag and a pipe (two file descriptors, close-on-exec).
 * A fork child shares its parent's pipe: firing it there stops the
 * parent's waits too.
 */
typedef struct dlock_cancel dlock_cancel;

/**
 * Make a cancel (not fired).
 * @param out  receives it; free it with dlock_cancel_free().
 * @return DLOCK_OK, DLOCK_EINVAL (out NULL, or no pipe: too many open
 *         files), DLOCK_ENOMEM.
 */
DLOCK_EXTERN dlock_rc dlock_cancel_new(dlock_cancel **out);

/**
 * Fire the cancel: every acquire waiting with it, now or later, returns
 * DLOCK_ECANCELED.  Idempotent; accepts NULL.  Async-signal-safe (an
 * atomic store and one write() to a pipe; errno is preserved) and
 * thread-safe: call it from a signal handler (installed without
 * SA_RESTART or with, either works) or from any thread.
 */
DLOCK_EXTERN void dlock_cancel_fire(dlock_cancel *cancel);

/** Nonzero once the cancel was fired (and not reset since).
 * Async-signal-safe. */
DLOCK_EXTERN int dlock_cancel_fired(const dlock_cancel *cancel);

/**
 * Make a fired cancel usable again.  Not while an acquire that names it
 * still runs, and not concurrently with dlock_cancel_fire(): a fire that
 * overlaps a reset may be lost.  Accepts NULL.
 */
DLOCK_EXTERN void dlock_cancel_reset(dlock_cancel *cancel);

/** Free a cancel (its pipe is closed).  No acquire may still name it, and
 * no signal handler may fire it any more.  Accepts NULL. */
DLOCK_EXTERN void dlock_cancel_free(dlock_cancel *cancel);

/** Version of dlock_options this header describes (2 added limit, 3
 * cancel). */
#define DLOCK_OPTIONS_VERSION 3

/** Largest semaphore limit (dlock_options.limit). */
#define DLOCK_LIMIT_MAX 1024

/** Options for dlock_acquire().  Initialise with DLOCK_OPTIONS_INIT or
 * dlock_options_init(); fields added later go at the end, and a library
 * reads only the fields of the version a caller names, so a program built
 * against an older header keeps working with a newer library. */
typedef struct dlock_options {
    /** 1..DLOCK_OPTIONS_VERSION: the version of this header the caller
     * was built with (DLOCK_OPTIONS_INIT sets it). */
    unsigned version;
    /** 0: try once; > 0: wait up to this many milliseconds;
     * DLOCK_WAIT_FOREVER: wait until acquired.  Measured on a monotonic
     * clock.  A wait over 365 days (the longest lease; INT64_MAX, say) is
     * the same as DLOCK_WAIT_FOREVER. */
    int64_t wait_ms;
    /** Lease in milliseconds (DLOCK_TTL_MIN_MS up to 365 days).  A holder
     * that dies or hangs blocks others for at most this long.  Stores may round
     * it up to their granularity.  Default DLOCK_DEFAULT_TTL_MS. */
    int64_t ttl_ms;
    /** Nonzero (default): a background thread renews the lease every
     * ttl_ms / 3 while the lock is held. */
    int auto_renew;
    /** Nonzero: a shared (read) lock, compatible with other shared holders
     * and exclusive of writers.  DLOCK_ENOTSUP on stores without them. */
    int shared;
    /** Called once if the lock is lost while held; may be NULL. */
    dlock_lost_cb on_lost;
    /** Passed to on_lost. */
    void *payload;
    /** (Version 2.)  1 (default; 0 means the same): a lock, one holder at a
     * time.  N in 2..DLOCK_LIMIT_MAX: a semaphore, at most N holders of
     * the name at once, each with its own lease, renewal, LOST and fence
     * (fences rise per name across all holders).  Every holder of a name
     * must ask the same limit: an acquire that asks another while the name
     * is held gets DLOCK_EINVAL saying the limit in force, never a silent
     * over-admission.  Not together with shared.  DLOCK_ENOTSUP on a store
     * without semaphores. */
    unsigned limit;
    /** (Version 3.)  NULL (default), or a cancel (dlock_cancel_new()):
     * firing it stops this acquire, which returns DLOCK_ECANCELED with
     * nothing held.  The acquire only reads it; the caller keeps it alive
     * until the acquire has returned. */
    dlock_cancel *cancel;
} dlock_options;

/** Static initialiser for dlock_options with the defaults. */
#define DLOCK_OPTIONS_INIT                                                     \
    {                                                                          \
        DLOCK_OPTIONS_VERSION, 0, DLOCK_DEFAULT_TTL_MS, 1, 0, NULL, NULL, 1,   \
            NULL                                                               \
    }

/**
 * What dlock_status() and dlock_list() report about one name.
 *
 * Always allocated by the library (dlock_status() hands one out, to be
 * freed with dlock_info_free(); dlock_list() lends one to its callback for
 * the duration of the call), never by the caller: that is what lets later
 * versions add fields at the end without breaking programs built against
 * this header.  Do not declare, copy by value or allocate one yourself.
 */
typedef struct dlock_info {
    /** The lock name, NUL-terminated (names never contain NUL). */
    char name[DLOCK_NAME_MAX + 1];
    /** Nonzero if someone holds the lock now. */
    int held;
    /** Nonzero if the current holders hold it shared. */
    int shared;
    /** Number of current holders (more than 1 only for shared locks and
     * semaphores). */
    unsigned holders;
    /** Highest fence handed out for this name so far (0 if unknown). */
    uint64_t fence;
    /** Lease left of the holder that expires last, in milliseconds;
     * -1 if unknown or not held. */
    int64_t ttl_ms;
    /** Holder's host name, "" if unknown. */
    char host[256];
    /** Holder's process id, 0 if unknown. */
    int64_t pid;
    /** When the holder acquired it, milliseconds since the Unix epoch;
     * 0 if unknown. */
    int64_t since_ms;
    /** Nonzero if the lock is held by a client that is not dlock (a plain
     * GET_LOCK, advisory lock or SET NX, a peer library's row): then host,
     * pid and fence say nothing about it; since_ms and ttl_ms are what its
     * row says (its-mieger/mysql-shared-locks' created and ttl), or
     * unknown. */
    int other_client;
    /** The limit its holders asked: 1 for a lock, N for a semaphore of N
     * (holders says how many of the N are taken); 0 when free or unknown. */
    unsigned limit;
    /** A holder that is not dlock (other_client), on PostgreSQL and
     * MariaDB/MySQL: its session as the server reports it.  client_id is
     * the session's id (MariaDB's connection id, PostgreSQL's backend
     * pid), 0 if unknown; client_user its login and client_addr its
     * client's address ("127.0.0.1:40522", "localhost", "local"), "" where
     * the server does not show them to this login (MariaDB: without the
     * PROCESS privilege; PostgreSQL: the address, without
     * pg_read_all_stats).  Text from the server: print it escaped. */
    int64_t client_id;
    char client_user[128];
    char client_addr[128];
    /** (Election; only from dlock_leader() and dlock_observe(), NULL
     * elsewhere.)  The value the leader published (dlock_elect(),
     * dlock_proclaim()), NUL-terminated, value_len bytes of UTF-8; NULL
     * when there is no leader, or it published none that the store can
     * vouch is its own (a value written under an earlier term is never
     * shown, nor one dlock could not have written: a peer's over
     * DLOCK_VALUE_MAX bytes, with a NUL, or not UTF-8).  Owned by the
     * info. */
    const char *value;
    size_t value_len;
} dlock_info;

/**
 * Called by dlock_list() for each held lock.  info is lent for the call
 * only.  Return 0 to go on; a nonzero value stops the walk and is what
 * dlock_list() returns.  The callback may call the library (dlock_status(),
 * dlock_acquire()...) on the same store.
 */
typedef int (*dlock_list_cb)(const dlock_info *info, void *payload);

/**
 * Fill opts with the defaults (the same as DLOCK_OPTIONS_INIT).
 * @param version  DLOCK_OPTIONS_VERSION (any of 1..DLOCK_OPTIONS_VERSION).
 * @return DLOCK_OK, or DLOCK_EINVAL if opts is NULL or version is unknown.
 */
DLOCK_EXTERN dlock_rc dlock_options_init(dlock_options *opts, unsigned version);

/**
 * The store used when no URL is given (see dlock_store_open()): the SQLite
 * file private to the calling user,
 * "sqlite:///var/tmp/dlock-EUID/dlock.db" where EUID is the effective user
 * id.  Every process of one user gets the same store; processes of
 * different users get different ones, so a lock taken through the default
 * store excludes only that user's other processes.  To lock across users,
 * name a store they can all write (and accept that each of them can break
 * the others' locks: see docs/security.md).
 *
 * Opening it creates /var/tmp/dlock-EUID with mode 0700 if missing, and
 * refuses (DLOCK_EUNAVAIL, with the path and the reason in dlock_errmsg())
 * an existing one that is a symbolic link, not a directory, owned by
 * another user, or writable by group or others.
 *
 * @return a string owned by the library, computed once per process (with
 *         the euid of that moment) and valid until the process exits.
 *         Thread-safe.
 */
DLOCK_EXTERN const char *dlock_default_url(void);

/**
 * Open a store.
 *
 * @param out  receives the store; set to NULL on failure.
 * @param url  "sqlite:///path/file.db", "redis://...", "unix:///sock",
 *             "postgres://...", "postgresql://...", "mysql://...",
 *             "mariadb://..."; NULL or "" means dlock_default_url().
 *             A sqlite store refuses (DLOCK_EUNAVAIL) a symbolic link at
 *             the file or at its -wal, -shm or -journal files.
 * @return DLOCK_OK; DLOCK_EINVAL for a malformed URL; DLOCK_ENOTSUP for a
 *         scheme whose support was not compiled in; DLOCK_EUNAVAIL or
 *         DLOCK_ESTORE if the store cannot be opened (or is refused as
 *         unsafe).
 */
DLOCK_EXTERN int dlock_store_open(dlock_store **out, const char *url);

/**
 * dlock_store_open(), given up within a bound: every store call the open
 * makes (connecting, logging in, TLS, creating the tables) ends by
 * within_ms from now as well as at the URL's own timeouts, so that a
 * server that accepts connections and never answers (frozen, stopped)
 * costs a caller with a deadline no more than that.  What the store does
 * after the open (acquire, renew, release) keeps the URL's timeouts.
 * dlock(1) opens so for a finite wait: its wait's deadline + 1 s.
 * Thread-safe.
 * @param within_ms  > 0; more than 365 days is no bound (the URL's
 *                   timeouts alone).
 * @return as dlock_store_open(), and DLOCK_EINVAL if within_ms <= 0; a
 *         store that did not answer in time is DLOCK_EUNAVAIL.
 */
DLOCK_EXTERN dlock_rc dlock_store_open_within(dlock_store **out,
                                              const char *url,
                                              int64_t within_ms);

/**
 * Close a store.  Locks still held through it are released first (as by
 * dlock_release(), ignoring the result).  Their handles stay valid: every
 * later call on one returns DLOCK_LOST ("its store was closed"), and each
 * must still be freed with dlock_release().  In a fork child, closing its
 * parent's store frees nothing and leaves the parent's connections alone.
 * Accepts NULL.
 */
DLOCK_EXTERN void dlock_store_close(dlock_store *store);

/**
 * Create the store's tables if they do not exist (stores do this on first
 * use anyway).
 */
DLOCK_EXTERN dlock_rc dlock_store_init(dlock_store *store);

/**
 * The DDL a store would run, for a DBA to run instead.  Does not connect.
 * @param out  receives a string; free it with dlock_free().
 * @return DLOCK_OK, DLOCK_EINVAL, DLOCK_ENOTSUP or DLOCK_ENOMEM.
 */
DLOCK_EXTERN dlock_rc dlock_ddl(char **out, const char *url);

/** Version of dlock_probe this header describes. */
#define DLOCK_PROBE_VERSION 1

/**
 * What dlock_store_probe() learns of a store's connection, for `dlock
 * check`.  The caller sets version (DLOCK_PROBE_VERSION) and the library
 * fills the fields of that version; fields added later go at the end.
 * Everything here is what the server said: a check, never a proof.
 */
typedef struct dlock_probe {
    /** 1..DLOCK_PROBE_VERSION, set by the caller. */
    unsigned version;
    /** The store's clock, ms since the Unix epoch, as read in one round
     * trip (Redis TIME, clock_timestamp(), NOW(6); SQLite: this host's
     * CLOCK_REALTIME); 0 if the store gave none. */
    int64_t server_ms;
    /** This host's CLOCK_REALTIME at the middle of that round trip, and
     * the round trip's length (ms). */
    int64_t host_ms;
    int64_t rtt_ms;
    /** How fine server_ms is: 1 ms, or 1000 where the store tells only
     * seconds. */
    int64_t resolution_ms;
    /** 1: the connection is TLS; 0: it is not (or a local file); -1: not
     * known. */
    int tls;
    /** The TLS protocol ("TLSv1.3"), "" if not known. */
    char tls_version[32];
    /** The server certificate's notAfter, ms since the Unix epoch; 0 if
     * not known for this store. */
    int64_t cert_not_after_ms;
    /** What the store says of its tables: 1 all there, 0 some missing
     * (tables says which), -1 a store without tables (keys). */
    int tables_ok;
    /** Their names ("dlock_locks, dlock_runs"), or what is missing. */
    char tables[256];
} dlock_probe;

/**
 * Ask the store for its clock, its TLS session and its tables (one round
 * trip or two, on a connection of the store's).
 * @param out  version set by the caller; the rest is filled.
 * @return DLOCK_OK; DLOCK_ENOTSUP for a store that cannot say (out holds
 *         what is known: unknowns as documented above); DLOCK_EINVAL;
 *         DLOCK_EUNAVAIL or DLOCK_ESTORE with dlock_errmsg().
 */
DLOCK_EXTERN dlock_rc dlock_store_probe(dlock_store *store, dlock_probe *out);

/**
 * The store's URL with any password replaced by "***".  Owned by the store.
 */
DLOCK_EXTERN const char *dlock_store_url(const dlock_store *store);

/**
 * Copy a URL with any password replaced by "***".  Works on malformed URLs
 * too (best effort: anything between "//" and "@" loses its password).
 * @param out  receives a string; free it with dlock_free().
 */
DLOCK_EXTERN dlock_rc dlock_url_redact(char **out, const char *url);

/** Free a string the library returned through an out parameter
 * (dlock_ddl(), dlock_url_redact()).  Accepts NULL. */
DLOCK_EXTERN void dlock_free(char *str);

/**
 * Acquire a lock.
 *
 * @param out    receives the lock on DLOCK_OK, NULL otherwise.
 * @param store  an open store.
 * @param name   1..DLOCK_NAME_MAX bytes, no NUL.
 * @param opts   options; NULL means the defaults.
 * A waiter whose store goes away while it waits (a restart, a failover, a
 * dropped connection) keeps waiting for it to come back, within the same
 * deadline; it returns DLOCK_EUNAVAIL only if the store is still
 * unreachable then (a try-lock, wait_ms 0, says so at once).
 *
 * @return DLOCK_OK; DLOCK_BUSY if not acquired in time (including wait 0);
 *         DLOCK_ECANCELED if opts->cancel was fired before it returned
 *         (nothing held; see dlock_cancel);
 *         DLOCK_EINVAL for a bad name or options (nothing is sent);
 *         DLOCK_ENOTSUP (e.g. shared on a store without shared locks);
 *         DLOCK_EUNAVAIL, DLOCK_ESTORE, DLOCK_ENOMEM.
 */
DLOCK_EXTERN dlock_rc dlock_acquire(dlock_lock **out, dlock_store *store,
                                    const char *name,
                                    const dlock_options *opts);

/**
 * dlock_acquire() with a name of name_len bytes that need not be
 * NUL-terminated (for bindings whose strings carry a length).  A NUL byte
 * inside the name is DLOCK_EINVAL.
 */
DLOCK_EXTERN dlock_rc dlock_acquire_len(dlock_lock **out, dlock_store *store,
                                        const char *name, size_t name_len,
                                        const dlock_options *opts);

/**
 * Release a lock and free its handle (always, whatever the result).
 * Accepts NULL (returns DLOCK_OK).
 * @return DLOCK_OK; DLOCK_LOST if the lock had been lost or taken over
 *         (someone else's lock is never deleted); DLOCK_EUNAVAIL or
 *         DLOCK_ESTORE if the store could not be told (the lease then
 *         frees the lock).
 */
DLOCK_EXTERN dlock_rc dlock_release(dlock_lock *lock);

/**
 * Renew the lease to ttl_ms from now (ttl_ms <= 0: the lock's own ttl;
 * otherwise at least DLOCK_TTL_MIN_MS, else DLOCK_EINVAL).
 * Later automatic renewals use the new length.
 * @return DLOCK_OK or DLOCK_LOST (also on every call after a loss).
 */
DLOCK_EXTERN dlock_rc dlock_extend(dlock_lock *lock, int64_t ttl_ms);

/**
 * Check against the store that the lock is still held with at least
 * min_remaining_ms of lease left.
 * @return DLOCK_OK, DLOCK_EXPIRING (held, less left), DLOCK_LOST.
 */
DLOCK_EXTERN dlock_rc dlock_assert_ttl(dlock_lock *lock,
                                       int64_t min_remaining_ms);

/** The fence of this acquisition: strictly greater than every fence handed
 * out before for the same name in the same store.  0 for NULL. */
DLOCK_EXTERN uint64_t dlock_fence(const dlock_lock *lock);

/** The name the lock was acquired with; valid until dlock_release(). */
DLOCK_EXTERN const char *dlock_lock_name(const dlock_lock *lock);

/** Nonzero once the lock is known to be lost, or once its lease, as this
 * process counts it, has run out without a renewal (auto_renew off, or
 * renewal fell behind): the lock is lost from then on, even if nobody took
 * it.  dlock_extend(), dlock_assert_ttl() and dlock_release() say
 * DLOCK_LOST then too, without asking the store. */
DLOCK_EXTERN int dlock_is_lost(const dlock_lock *lock);

/** Milliseconds of lease left as this process counts it (the margin of
 * DLOCK_DRIFT_DIV taken): when the lock will be LOST unless a renewal
 * confirms a later end before then.  0 once lost (and for NULL).  Never
 * blocks, not even while a renewal is in flight: a program that must stop
 * using the resource before its lease ends (dlock run stops its command)
 * reads it. */
DLOCK_EXTERN int64_t dlock_lease_left(const dlock_lock *lock);

/**
 * What the store knows about one name (held or not).
 * @param out  receives a dlock_info (see info->held) on DLOCK_OK, NULL
 *             otherwise; free it with dlock_info_free().
 * @return DLOCK_OK, DLOCK_EINVAL, DLOCK_EUNAVAIL, DLOCK_ESTORE,
 *         DLOCK_ENOMEM.
 */
DLOCK_EXTERN dlock_rc dlock_status(dlock_info **out, dlock_store *store,
                                   const char *name);

/** Free what dlock_status() returned.  Accepts NULL. */
DLOCK_EXTERN void dlock_info_free(dlock_info *info);

/**
 * Call cb for every held lock whose name starts with prefix (NULL or "": all
 * names), in an unspecified order.
 * @return a dlock_rc, or the callback's nonzero value if it stopped the
 *         walk (so give it values that cannot be mistaken for one:
 *         positive ones).
 */
DLOCK_EXTERN int dlock_list(dlock_store *store, const char *prefix,
                            dlock_list_cb cb, void *payload);

/**
 * Break a lock whoever holds it (administration).  Its holder finds it lost
 * on its next renewal.  Fences are kept.  name may be any 1..DLOCK_NAME_MAX
 * bytes without NUL, UTF-8 or not, so that a name another client wrote
 * into the store can be broken too.
 * @param out_removed  receives how many holders were removed (0 if the
 *                     name was free); may be NULL.
 * @return DLOCK_OK, DLOCK_EINVAL, DLOCK_EUNAVAIL, DLOCK_ESTORE.
 */
DLOCK_EXTERN dlock_rc dlock_force_release(unsigned *out_removed,
                                          dlock_store *store, const char *name);

/* --- Runs: once, once per period, and the record of each run --------- */

/**
 * What dlock_run_begin() decides by (`dlock run --once`, `--once-per`).
 * Initialise with DLOCK_RUN_RULE_INIT (both off: every run goes ahead and
 * is recorded).
 */
typedef struct dlock_run_rule {
    /** Nonzero: not again once a run of this name has succeeded (exit
     * status 0), on any host, ever: a migration, an idempotency key. */
    int once;
    /** > 0: not again within period_ms / 2 of the start of the last run
     * of this name, judged on the store's clock (never the hosts').  Give
     * the schedule's interval: 3600000 for an hourly job.  Hosts whose
     * schedules fire up to period_ms / 2 apart run the job once; the next
     * period's run (period_ms later) goes ahead.  At most 365 days. */
    int64_t period_ms;
} dlock_run_rule;

#define DLOCK_RUN_RULE_INIT                                                    \
    {                                                                          \
        0, 0                                                                   \
    }

/** How a recorded run ended. */
typedef enum dlock_run_result {
    /** Still running (its holder has not recorded an end). */
    DLOCK_RUN_RUNNING = 0,
    /** The command exited; status is its exit status (0: success). */
    DLOCK_RUN_EXITED = 1,
    /** The command died of signal status. */
    DLOCK_RUN_SIGNALED = 2,
    /** The lock was lost while it ran (status: what it ended with, or -1). */
    DLOCK_RUN_LOST = 3,
    /** Its holder went away without recording an end (killed, cut off);
     * set when a later run of the name began. */
    DLOCK_RUN_ABANDONED = 4,
    /** Stopped for running past its time limit (`dlock run
     * --max-runtime`); status: what it ended with as a shell says it
     * (143 for SIGTERM), or -1.  The stores keep the number as it is;
     * a reader older than this value shows such a run as unknown
     * (PostgreSQL, MariaDB/MySQL, etcd), as abandoned (SQLite: it reads
     * a result out of its range so), or not at all (Redis: it passes
     * over a record it cannot parse, in history and last runs alike). */
    DLOCK_RUN_TIMEDOUT = 5,
    /** Never a stored run: in the *last of a dlock_run_begin() that
     * skipped because the name is suspended (dlock_suspend()).  host is
     * who suspended it (USER@HOST), start_ms since when (the store's
     * clock); fence, pid and end_ms are 0, status -1.  The reason is
     * dlock_suspended()'s. */
    DLOCK_RUN_SUSPENDED = 6
} dlock_run_result;

/** One recorded run of a name.  Allocated by the library (dlock_run_free()
 * for dlock_run_begin()'s, lent to dlock_history()'s callback). */
typedef struct dlock_run {
    /** The name (NUL-terminated). */
    char name[DLOCK_NAME_MAX + 1];
    /** The fence of the lock the run held: it identifies the run. */
    uint64_t fence;
    /** Host name and process id of the run's holder. */
    char host[256];
    int64_t pid;
    /** Start and end, milliseconds since the Unix epoch on the store's
     * clock (SQLite: the host's); end_ms is 0 while running or abandoned. */
    int64_t start_ms;
    int64_t end_ms;
    /** A dlock_run_result. */
    int result;
    /** The exit status (EXITED), signal (SIGNALED), or -1. */
    int status;
} dlock_run;

/** How many runs the store keeps per name by default (older ones are
 * dropped); dlock_keep_runs() sets it per name. */
#define DLOCK_RUNS_KEPT 20
/** The most runs one name may keep (dlock_keep_runs()). */
#define DLOCK_RUNS_KEPT_MAX 10000

/**
 * Decide whether the holder of lock runs its job now, by rule, and if so
 * record the run's start (host, pid, fence, the store's time) in the same
 * call.  Called with the lock held: the lock serialises the decision, so
 * of hosts racing for one period exactly one goes ahead.
 * @param go    receives 1: go ahead (recorded; end it with
 *              dlock_run_end()); 0: skip, a run already satisfied rule,
 *              or the name is suspended (then *last is a
 *              DLOCK_RUN_SUSPENDED entry), whatever rule says.
 * @param last  if not NULL, receives the run that decided a skip (or the
 *              last run before this one when going ahead; NULL if none);
 *              free it with dlock_run_free().
 * @return DLOCK_OK; DLOCK_LOST (not held any more: nothing recorded);
 *         DLOCK_EINVAL (also for a second call on a lock that went
 *         ahead: one run per acquisition); DLOCK_ENOTSUP (a store without
 *         run records); DLOCK_EUNAVAIL, DLOCK_ESTORE.
 */
DLOCK_EXTERN dlock_rc dlock_run_begin(dlock_lock *lock,
                                      const dlock_run_rule *rule, int *go,
                                      dlock_run **last);

/**
 * Record how the run dlock_run_begin() started on lock ended.  Works on a
 * lock that is LOST too (the record is the run's, found by its fence):
 * call it before dlock_release().  Its store I/O gets a third of the TTL,
 * and on a lock still held no more than the lease left.  It may be called
 * again after DLOCK_EUNAVAIL (a try whose answer was lost may have
 * landed: the next writes the same end over it); `dlock run` does, while
 * the lease lasts.
 * @param result  DLOCK_RUN_EXITED, _SIGNALED, _LOST or _TIMEDOUT.
 * @param status  exit status, signal number, or -1.
 * @return DLOCK_OK; DLOCK_EINVAL (no run begun on lock, bad result);
 *         DLOCK_EUNAVAIL, DLOCK_ESTORE.
 */
DLOCK_EXTERN dlock_rc dlock_run_end(dlock_lock *lock, int result, int status);

/** Called by dlock_history() for each kept run, newest first; run is lent
 * for the call.  Return nonzero to stop (dlock_history() returns it). */
typedef int (*dlock_run_cb)(const dlock_run *run, void *payload);

/**
 * The kept runs of name, newest first, at most max (0: all kept, up to
 * DLOCK_RUNS_KEPT_MAX).
 * @return DLOCK_OK (also when there are none), or the callback's nonzero
 *         value, or DLOCK_EINVAL, DLOCK_ENOTSUP, DLOCK_EUNAVAIL,
 *         DLOCK_ESTORE.
 */
DLOCK_EXTERN int dlock_history(dlock_store *store, const char *name,
                               unsigned max, dlock_run_cb cb, void *payload);

/**
 * The last run of every name under prefix that has run records (held now
 * or not), in no set order; each run is lent for the call.  What
 * `dlock list` shows beside the held locks.
 * @return as dlock_history().
 */
DLOCK_EXTERN int dlock_last_runs(dlock_store *store, const char *prefix,
                                 dlock_run_cb cb, void *payload);

/**
 * How many runs the store keeps of name, as Kubernetes CronJob's history
 * limits: n of them (1..DLOCK_RUNS_KEPT_MAX), or DLOCK_RUNS_KEPT for 0.
 * The setting is recorded with the name's run records, so every host's
 * runs of it keep to it, and the runs beyond it are dropped in the same
 * step, oldest (lowest fence) first.  Each run that goes ahead then
 * drops what its own record puts over the limit: whatever the setting, a
 * run's bookkeeping costs the same.  (A client older than this call
 * keeps DLOCK_RUNS_KEPT whatever the setting says.)  etcd keeps at most
 * 500 (its runs share one key: docs/stores/etcd.md); more is
 * DLOCK_EINVAL there, the bound in the message.
 * @return DLOCK_OK; DLOCK_EINVAL; DLOCK_ENOTSUP (a store without run
 *         records); DLOCK_EUNAVAIL, DLOCK_ESTORE.
 */
DLOCK_EXTERN dlock_rc dlock_keep_runs(dlock_store *store, const char *name,
                                      unsigned n);

/**
 * The number of runs name keeps: *out receives its setting
 * (dlock_keep_runs()), DLOCK_RUNS_KEPT when none was recorded.
 * @return as dlock_keep_runs().
 */
DLOCK_EXTERN dlock_rc dlock_kept_runs(unsigned *out, dlock_store *store,
                                      const char *name);

/** Free a dlock_run from dlock_run_begin().  Accepts NULL. */
DLOCK_EXTERN void dlock_run_free(dlock_run *run);

/* --- Suspension: pause a job everywhere ------------------------------ */

/** Longest suspension reason, in bytes (UTF-8, no control characters). */
#define DLOCK_REASON_MAX 1024

/** A name's suspension, as the store keeps it.  Allocated by the library
 * (dlock_suspension_free()), or lent to dlock_suspensions()'s callback. */
typedef struct dlock_suspension {
    /** The name (NUL-terminated). */
    char name[DLOCK_NAME_MAX + 1];
    /** Who suspended it: USER@HOST unless the caller said otherwise. */
    char by[256];
    /** Since when: milliseconds since the Unix epoch on the store's clock
     * (SQLite: the host's), as run records. */
    int64_t since_ms;
    /** Why (UTF-8, may be empty). */
    char reason[DLOCK_REASON_MAX + 1];
} dlock_suspension;

/**
 * Suspend name everywhere: from now on dlock_run_begin() of it skips
 * (go = 0), on every host, until dlock_resume().  A run already going on
 * goes on.  The record is kept in the store, beside the run records;
 * writing it (and lifting it) takes a login that may write the store.
 * A record read back that dlock could not have written (too long, not
 * UTF-8, control characters) still suspends: its text shows as "?".
 * @param out_was  receives 1 if name was suspended already (the record
 *                 is left as it was), else 0; may be NULL.
 * @param by       who: at most 255 bytes of UTF-8 without control
 *                 characters, or NULL for USER@HOST (the effective user's
 *                 name and this host's).
 * @param reason   at most DLOCK_REASON_MAX bytes of UTF-8 without
 *                 control characters, or NULL (none).
 * @return DLOCK_OK; DLOCK_EINVAL (name, by, reason); DLOCK_ENOTSUP;
 *         DLOCK_EUNAVAIL, DLOCK_ESTORE (a read-only login among them).
 */
DLOCK_EXTERN dlock_rc dlock_suspend(int *out_was, dlock_store *store,
                                    const char *name, const char *by,
                                    const char *reason);

/**
 * Lift name's suspension.
 * @param out  if not NULL, receives the suspension lifted (free it with
 *             dlock_suspension_free()), or NULL when name was not
 *             suspended.
 * @return DLOCK_OK (also when it was not suspended); DLOCK_EINVAL;
 *         DLOCK_ENOTSUP; DLOCK_EUNAVAIL, DLOCK_ESTORE.
 */
DLOCK_EXTERN dlock_rc dlock_resume(dlock_suspension **out, dlock_store *store,
                                   const char *name);

/**
 * Name's suspension: *out receives it (dlock_suspension_free()), or NULL
 * when name is not suspended.
 * @return DLOCK_OK; DLOCK_EINVAL; DLOCK_ENOTSUP; DLOCK_EUNAVAIL,
 *         DLOCK_ESTORE.
 */
DLOCK_EXTERN dlock_rc dlock_suspended(dlock_suspension **out,
                                      dlock_store *store, const char *name);

/** Called by dlock_suspensions() for each suspended name; s is lent for
 * the call.  Return nonzero to stop (dlock_suspensions() returns it). */
typedef int (*dlock_suspension_cb)(const dlock_suspension *s, void *payload);

/**
 * Every suspended name under prefix ("" or NULL: all), in no set order.
 * @return DLOCK_OK, the callback's nonzero value, DLOCK_EINVAL,
 *         DLOCK_ENOTSUP, DLOCK_EUNAVAIL, DLOCK_ESTORE.
 */
DLOCK_EXTERN int dlock_suspensions(dlock_store *store, const char *prefix,
                                   dlock_suspension_cb cb, void *payload);

/** Free a dlock_suspension.  Accepts NULL. */
DLOCK_EXTERN void dlock_suspension_free(dlock_suspension *s);

/* --- Election: one leader of a name, with a term and a value --------- */

/** Longest leader value, in bytes (valid UTF-8, no NUL). */
#define DLOCK_VALUE_MAX 4096

/**
 * Campaign for name: wait (opts->wait_ms, as dlock_acquire()) until this
 * candidate leads, then publish value as the leader's.  The handle is a
 * held lock in every respect (renewed, LOST, released by
 * dlock_release(), which resigns); its fence, dlock_fence(), is the
 * term: strictly greater than every earlier leader's of name in the
 * store.  Leadership is the lock: candidates of one name exclude each
 * other, and dlock_acquire() of the same name too.
 *
 * On etcd the candidate's key is what Go's concurrency.Election (and
 * `etcdctl elect NAME VALUE`) writes: NAME "/" lease-id-hex, its value
 * the value, the leader the lowest create revision (the term).  Other
 * stores keep the value in a record of their own beside the lock, tagged
 * with the term; the value of an earlier term is never shown.
 *
 * @param value      1..DLOCK_VALUE_MAX bytes of UTF-8 without NUL, or
 *                   NULL or "" (no value).
 * @param opts       as dlock_acquire() (shared and limit > 1 are
 *                   DLOCK_EINVAL: a leader is alone).
 * @return as dlock_acquire(); DLOCK_ENOTSUP on a store without election.
 *         A leader that could not publish its value (its lock lost at
 *         once, the store gone) resigns; a candidate that may still wait
 *         campaigns again within the same wait, else the call returns
 *         that failure with nothing held.
 */
DLOCK_EXTERN dlock_rc dlock_elect(dlock_lock **out, dlock_store *store,
                                  const char *name, const char *value,
                                  const dlock_options *opts);

/**
 * Change the value a leader publishes, only while it still leads: the
 * write is guarded by its term, so a deposed leader's value is never
 * written over its successor's.
 * @return DLOCK_OK; DLOCK_LOST (no longer leads: nothing written);
 *         DLOCK_EINVAL (a lock not from dlock_elect(), a bad value);
 *         DLOCK_EUNAVAIL, DLOCK_ESTORE.
 */
DLOCK_EXTERN dlock_rc dlock_proclaim(dlock_lock *lock, const char *value);

/**
 * Who leads name now, read from the store: *out is a dlock_info with
 * held (0: no leader), fence (the term), host, pid, since_ms when the
 * store records them, and value.  Free it with dlock_info_free().
 * @return DLOCK_OK (with or without a leader), DLOCK_EINVAL,
 *         DLOCK_EUNAVAIL, DLOCK_ESTORE, DLOCK_ENOTSUP, DLOCK_ENOMEM.
 */
DLOCK_EXTERN dlock_rc dlock_leader(dlock_info **out, dlock_store *store,
                                   const char *name);

/** Called by dlock_observe() with the leader (info->held 0: none), lent
 * for the call.  Return 0 to go on; nonzero stops the observation and is
 * what dlock_observe() returns (give positive values). */
typedef int (*dlock_observe_cb)(const dlock_info *leader, void *payload);

/**
 * Call cb with name's leader at once, then each time it changes (another
 * term, another value, or no leader), until cb returns nonzero, cancel
 * is fired (DLOCK_ECANCELED, promptly, as a wait's) or the store fails.
 * Every call reports what was read from the store: a notification only
 * wakes the observer (on Redis, PostgreSQL and etcd a change is seen
 * within a second; on SQLite and MariaDB/MySQL it is polled every
 * DLOCK_OBSERVE_POLL_MS).  Changes closer together than that may be
 * seen as one.
 * @param cancel  NULL or a cancel (dlock_cancel_new()).
 * @return cb's nonzero value, DLOCK_ECANCELED, or a failure
 *         (DLOCK_EUNAVAIL when the store went away: call again to go on,
 *         and cb is called at once with what is true then).
 */
DLOCK_EXTERN int dlock_observe(dlock_store *store, const char *name,
                               dlock_observe_cb cb, void *payload,
                               dlock_cancel *cancel);

/** How often dlock_observe() re-reads the leader on a store without
 * notifications (on the others: at least once a second, for a leader
 * whose lease ran out, which no store announces). */
#define DLOCK_OBSERVE_POLL_MS 250

/** A static description of a return code ("lock is busy", ...). */
DLOCK_EXTERN const char *dlock_strerror(int rc);

/** Detail of the calling thread's last failed (or BUSY) call; "" after a
 * call that succeeded. */
DLOCK_EXTERN const char *dlock_errmsg(void);

/** Comma-separated URL schemes compiled into this library. */
DLOCK_EXTERN const char *dlock_schemes(void);

/** The library version string (may differ from DLOCK_VERSION_STRING of the
 * header a program was built with). */
DLOCK_EXTERN const char *dlock_version(void);

#ifdef __cplusplus
}
#endif

#endif /* DLOCK_H */
