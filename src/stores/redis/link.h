/*
 * link.h - a link to one Redis server (link.c), the layer above the
 * transport (rconn.h) and below everything else: connect and
 * authenticate, send a command and read its answer, error classes, WAIT
 * for replicas, the retry-once policy on a pool.
 */
#ifndef DLOCK_STORES_REDIS_LINK_H
#define DLOCK_STORES_REDIS_LINK_H

#include "redis.h"

/* Connect to host:port (NULL: the unix socket), authenticate and check
 * that the peer speaks Redis.  Returns a ready context, or NULL with *rc
 * and the message set. */
struct rconn *dlock__redis_connect_to(struct redis_store *rs, const char *host,
                                      int port, int *rc);

/* DLOCK_EUNAVAIL or DLOCK_ESTORE for a server's error answer msg
 * (include/dlock.h's failure classes). */
int dlock__redis_error_code(const char *msg);
/* The error of the server's error answer r (not freed), its code by
 * dlock__redis_error_code(). */
int dlock__redis_reply_error(struct redis_store *rs, const redisReply *r,
                             const char *what);
/* Frees r: DLOCK_ESTORE, "unexpected reply". */
int dlock__redis_bad_reply(struct redis_store *rs, redisReply *r);
/* The socket timeout of c for the exchanges that follow: the URL's, or
 * less when the call is for a held lock whose lease ends sooner
 * (dlock__io_bound()).  Returns whether it changed it, for
 * dlock__redis_unbound() to put the URL's back. */
int dlock__redis_bound(struct redis_store *rs, struct rconn *c);
void dlock__redis_unbound(struct redis_store *rs, struct rconn *c, int bound);
/* WAIT rs->replicas on c: how many replicas acknowledged every write of
 * c so far, within ?replicas_timeout= (less near a held lock's lease
 * end); -1 when the connection broke (*dead set) or the answer was not a
 * count. */
long long dlock__redis_wait_acks(struct redis_store *rs, struct rconn *c,
                                 int *dead);
/* DLOCK_EUNAVAIL: what of name[0..len) (an acquire, a renewal) fewer
 * than rs->replicas acknowledged (acks). */
int dlock__redis_unacked(struct redis_store *rs, const char *what,
                         const char *name, long long acks);
/* Send one command on c and read its answer: DLOCK_OK with *out (an
 * error answer too: the caller looks), or DLOCK_EUNAVAIL with *dead set
 * when the connection broke or did not answer in time. */
int dlock__redis_send(struct redis_store *rs, struct rconn *c, int argc,
                      const char **argv, const size_t *lens, redisReply **out,
                      int *dead);
/* SIGPIPE blocked in this thread from begin to end (link.c). */
struct dlock__nopipe {
    sigset_t old;
    int was_pending;
};
void dlock__redis_nopipe_begin(struct dlock__nopipe *np);
void dlock__redis_nopipe_end(struct dlock__nopipe *np);

/* As dlock__redis_exec(), on one pool (the single-server path, and each
 * cluster node's). */
int dlock__redis_exec_on(struct dlock__pool *pool, dlock__pool_fn fn, void *arg,
                         int retry);

/* The close and healthy callbacks of every Redis pool (cluster nodes'
 * too); ctx unused. */
void dlock__redis_pool_close(void *ctx, void *c);
int dlock__redis_pool_healthy(void *ctx, void *c, int64_t idle_ms);

/* Does the server on c say (ROLE) it is a `role`: "master", "sentinel"? */
int dlock__redis_role_is(struct rconn *c, const char *role);

#endif /* DLOCK_STORES_REDIS_LINK_H */
