/*
 * pool.h - a small pool of idle store connections, and the retry-once
 * policy every store follows for them.
 *
 * A store gives the pool three callbacks (open, close, healthy) and an
 * opaque context; the pool keeps at most `max_idle` idle connections
 * behind its own mutex.  Connections are `void *` to the pool: a PGconn,
 * a struct holding a MYSQL, a redisContext.
 *
 * The policy: a connection that sat idle in the pool may have died there
 * (a server restart, an idle timeout, a KILL).  When one turns out dead on
 * its first use the operation never reached the server, so it is
 * discarded and the operation retried once on a freshly opened
 * connection.  A fresh connection's failure is final: the server is
 * really unreachable, and retrying would only double the wait.
 */
#ifndef DLOCK_CORE_POOL_H
#define DLOCK_CORE_POOL_H

#include <pthread.h>
#include <stdint.h>

#include "dlock.h"

#define DLOCK__POOL_MAX_IDLE 8

struct dlock__pool_ops {
    /* Open a new connection: DLOCK_OK with *out set, or a DLOCK_* code
     * with the thread's message set. */
    int (*open)(void *ctx, void **out);
    /* Close a connection (never NULL). */
    void (*close)(void *ctx, void *conn);
    /* Optional (NULL: always): may conn be kept or handed out again?
     * idle_ms is how long it has sat in the pool: 0 when it is given
     * back, more when it is about to be reused (a store may ping an old
     * one then). */
    int (*healthy)(void *ctx, void *conn, int64_t idle_ms);
};

struct dlock__pool {
    const struct dlock__pool_ops *ops;
    void *ctx;
    pthread_mutex_t mu;
    unsigned max_idle, nidle;
    struct {
        void *conn;
        int64_t since; /* monotonic ms it went idle */
    } idle[DLOCK__POOL_MAX_IDLE];
};

/* max_idle is capped at DLOCK__POOL_MAX_IDLE; 0 keeps nothing idle. */
void dlock__pool_init(struct dlock__pool *p, const struct dlock__pool_ops *ops,
                      void *ctx, unsigned max_idle);
/* Close the idle connections.  Connections handed out are the caller's. */
void dlock__pool_destroy(struct dlock__pool *p);

/* An idle connection that healthy() accepts (*pooled = 1), else a new
 * one (*pooled = 0).  pooled may be NULL. */
int dlock__pool_get(struct dlock__pool *p, void **out, int *pooled);
/* A new connection, never an idle one (for the retry). */
int dlock__pool_open(struct dlock__pool *p, void **out);
/* Give conn back: kept if healthy() and there is room, else closed.
 * NULL is ignored. */
void dlock__pool_put(struct dlock__pool *p, void *conn);
/* Close conn: it broke, or holds state nobody else may inherit. */
void dlock__pool_discard(struct dlock__pool *p, void *conn);

/* One operation on a pooled connection, under the retry-once policy.
 * fn returns a DLOCK_* code and sets *dead when the failure was the
 * connection's (it broke or did not answer), as opposed to the server's
 * answer.  A dead connection is discarded; if it came from the pool, fn
 * runs once more on a fresh one.  Otherwise conn goes back with
 * dlock__pool_put(). */
typedef int (*dlock__pool_fn)(void *conn, void *arg, int *dead);
int dlock__pool_run(struct dlock__pool *p, dlock__pool_fn fn, void *arg);

/* A store's list(): collect the names with fn (on a pooled connection,
 * under dlock__pool_run(); fn fills `names` through arg), then describe
 * and report each with dlock__names_report(), with no connection held.
 * Frees names. */
struct dlock__names;
struct dlock_store;
int dlock__pool_list(struct dlock__pool *p, dlock__pool_fn fn, void *arg,
                     struct dlock__names *names, struct dlock_store *s,
                     int (*describe)(struct dlock_store *, const char *,
                                     dlock_info *),
                     int (*cb)(const dlock_info *, void *), void *payload);

#endif /* DLOCK_CORE_POOL_H */
