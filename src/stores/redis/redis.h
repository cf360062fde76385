/*
 * redis.h - the Redis store's private header: its handle, and what its
 * files share.
 *
 *   conn.c     connections: connect, the command connection's pool and
 *              the retry-once policy (src/core/pool.h)
 *   scripts.c  the Lua scripts and running them (EVALSHA, EVAL on
 *              NOSCRIPT)
 *   sub.c      the subscriber connection, its listener thread, channels
 *   wait.c     the wait: one slice at a time (wait_slice), keyspace
 *              events and polling for foreign holders
 *   store.c    the ops table: open, close, acquire, extend, release,
 *              status, list, force-release
 *   renew.c    the renew thread's batches: many extends in one pipeline
 *   runs.c     run records (dlock_run_begin/_end, dlock_history,
 *              dlock_last_runs): their scripts and keys
 *   rconn.c    one connection: TCP, unix socket or TLS (OpenSSL), with
 *              hiredis's command formatting and reply reader
 *
 * redis://[user:pass@]host[:port][/db][?prefix=dlock:&connect_timeout=5s
 *                                      &timeout=5s]
 * rediss://... (and rediss-sentinel://, rediss-cluster://): the same over
 *   TLS, with ?cacert=FILE&cert=FILE&key=FILE&sni=NAME
 * any of them with ?replicas=N&replicas_timeout=1s: acquires and renewals
 *   count only once WAIT says N replicas have them
 * unix:///path/to/redis.sock[?db=0&password=...&prefix=...]
 *
 * Keys for a lock NAME (P is the prefix, default "dlock:"):
 *   P NAME              the lock: "dlock1:" + the holder's token, with the
 *                       lease as its TTL.  Exactly the key of the plain
 *                       SET NX pattern, which is what makes dlock
 *                       interoperate with other clients of that pattern.
 *   P NAME \xff fence   the fence counter (INCR, never expires)
 *   P NAME \xff readers shared holders: a sorted set token -> lease end
 *   P NAME \xff info    holder host, pid, since, fence (same TTL)
 *   P NAME \xff queue   waiting dlock clients: a sorted set token ->
 *                       arrival number (FIFO)
 *   P NAME \xff waiters their entries: token -> "ttl deadline pid host"
 *   P NAME \xff sem     a semaphore's holders: a sorted set token ->
 *                       lease end (the lock key holds "\xffsem" while
 *                       it has any, the info hash their limit)
 *   P NAME \xff release the channel a release that hands the lock to
 *                       nobody is published on ("r"), and a hand-off
 *                       the new holder's lease ("h" + ms)
 *   P NAME \xff runs    the name's kept runs, newest first: a list of
 *                       "fence start end result status pid host" (runs.c)
 *   P NAME \xff run     its run summary: a hash (start of the last run,
 *                       the record of a run that succeeded)
 *   P NAME \xff w TOKEN a waiter's own channel: "g" + fence when a
 *                       release hands the lock to it (a wake-up only:
 *                       anyone may publish; the waiter's attempt tells)
 * Names are valid UTF-8, which never contains the byte 0xff, so no lock
 * key can be mistaken for a derived one, whatever the names (keys.c).
 *
 * Every operation is one Lua script, one round trip (EVALSHA, EVAL when
 * the server has forgotten the script).  Scripts read the server's clock
 * (TIME), never the client's.
 *
 * Threads: one command connection per store handle, used under the mutex
 * mu.  Each command is a sub-millisecond round trip and a lock never pins
 * a connection, so more connections would only add load on the server.
 * The connection sits in a core pool of one (conn.c), for the pool's
 * retry-once policy.  Waiting uses a second connection, subscribed to the
 * channels of the names this handle waits on and its waiters' own
 * channels, read by a listener thread.  With ?fair=1 (the default) a
 * waiter queues on the server and a release hands the lock to the head
 * of the queue, telling only it (scripts.c: handoff); otherwise a release
 * message wakes one waiter per handle (first come, first woken).
 * A holder that is not dlock (its value lacks "dlock1:") never publishes:
 * waiters on it also subscribe to the lock key's keyspace channel when the
 * server sends keyspace events, and poll every 50..250 ms when it does
 * not (wait.c).
 */
#ifndef DLOCK_STORES_REDIS_H
#define DLOCK_STORES_REDIS_H

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "../keys.h"
#include "pool.h"
#include "rconn.h"
#include "cancel.h"
#include "clock.h"
#include "errors.h"
#include "iobound.h"
#include "names.h"
#include "process.h"
#include "store.h"
#include "strutil.h"
#include "url.h"

/* --- scripts.c ------------------------------------------------------- */

/* Per-lock scripts come in threes: a lock, a shared lock, a semaphore
 * (dlock__redis_script picks one). */
enum {
    S_ACQ,
    S_ACQ_SHARED,
    S_ACQ_SEM,
    S_REL,
    S_REL_SHARED,
    S_REL_SEM,
    S_EXT,
    S_EXT_SHARED,
    S_EXT_SEM,
    S_TTL,
    S_TTL_SHARED,
    S_TTL_SEM,
    S_STATUS,
    S_FORCE,
    S_LEAVE,
    /* runs.c's, not loaded with the others (a connection that never
     * records a run pays nothing for them): their sha is computed here,
     * and the first EVALSHA on a server that lacks them sends the text */
    S_RUN_BEGIN,
    S_RUN_END,
    S_COUNT
};
#define S_LOADED S_RUN_BEGIN

/* How many keys every script gets (the numkeys of EVALSHA): all of
 * struct dlock__rkeys. */
#define RKEYS_STR "7"
_Static_assert(DLOCK__RKEYS == 7, "RKEYS_STR must match DLOCK__RKEYS");

/* --- the handle ------------------------------------------------------ */

/* What an acquire does about the waiter queue (ARGV[5] of S_ACQ). */
#define Q_WAIT "q"   /* busy: join the queue, or keep its place in it */
#define Q_TRY "n"    /* busy: do not queue; free: queued waiters first */
#define Q_UNFAIR "u" /* ?fair=0: neither queue nor let the queue go first */

/* A waiter parked on a channel (wait.c keeps two in lk->priv: one on the
 * name's channel, one on its own; both signal the same cv). */
struct waiter {
    struct waiter *next;
    pthread_cond_t *cv;
    int woken; /* a message (only ever a wake-up) came */
    int64_t lease_at; /* a hand-off to another (an "h" message on the
                       * name's channel): monotonic ms by which the new
                       * holder's lease ends; 0 none */
};

/* A channel this handle is (or is getting) subscribed to: the release
 * channel of a name, and once a waiter met a foreign holder on a server
 * with keyspace notifications, also the keyspace channel of its lock key
 * (__keyspace@<db>__:<key>), whose del/expired/evicted events wake the
 * waiters as a release message does. */
struct chan {
    struct chan *next;
    char *name;
    size_t len;
    int refs;       /* waiters using it */
    int subscribed; /* confirmed by the server */
    char *ks;       /* keyspace channel, once SUBSCRIBE was sent, or NULL */
    size_t ks_len;
    int ks_subscribed;
    int own; /* a waiter's own channel: "g" wakes it for a hand-off */
    struct waiter *head, *tail;
};

/* What an (UN)SUBSCRIBE sent on the pub/sub connection was for: the
 * server answers each in order, and an error answer (an ACL without the
 * channel) names no channel, so the order tells whose it is. */
enum { P_SUB, P_SUB_KS, P_UNSUB };

struct redis_store {
    struct dlock_store base;

    /* configuration */
    char *host;
    int port;
    char *sock; /* unix socket path, or NULL */
    char *user;
    char *password;
    int db;
    char *prefix;
    size_t prefix_len;
    int64_t connect_timeout_ms;
    int64_t timeout_ms;
    int fair; /* ?fair=1 (default): waiters queue, FIFO hand-off */
    /* rediss://: TLS to every server (sentinels, master, cluster nodes,
     * the subscriber); NULL: plaintext (rconn.c). */
    struct rtls *tls;
    /* ?replicas=N: an acquire or a renewal counts only once WAIT says N
     * replicas have it, within ?replicas_timeout= (scripts.c: eval_fn
     * asks, store.c and renew.c decide).  0: no WAIT. */
    int replicas;
    int64_t replicas_timeout_ms;
    long long acks; /* what the last WAIT answered (under mu), -1 none */

    /* Sentinel (topo.c): the sentinels, the master's name, where it was
     * last, and the epoch: how many times the command connection found
     * the master somewhere else.  A lock taken in an older epoch is LOST
     * (the promoted replica may lack it, or have it without its holder
     * knowing what happened meanwhile). */
    char *master;
    int nsent;
    char **sent_host;
    int *sent_port;
    pthread_mutex_t tmu;
    char cur_master[300];
    uint64_t epoch;
    const char *url; /* redacted, for messages */

    /* Cluster (cluster.c): the seed nodes are sent_host/sent_port; the
     * nodes met so far, each with its own pool of one command connection;
     * which master serves each hash slot; a per-slot epoch, which moves
     * when a slot's master is no longer a master (a failover), as the
     * Sentinel epoch does.  nodes, slot_node and slot_epoch change under
     * mu and tmu, and are read under either. */
    int cluster;
    struct cnode **nodes;
    int nnodes, cap_nodes;
    int16_t *slot_node;   /* [16384]: index into nodes, -1 unknown */
    uint32_t *slot_epoch; /* [16384] */
    int64_t map_at;       /* monotonic ms of the last CLUSTER SLOTS */
    /* A redirection met by dlock__redis_send (under mu): MOVED or ASK,
     * the slot and where to; asking: send ASKING before each command. */
    struct {
        int kind; /* 0, R_MOVED, R_ASK */
        unsigned slot;
        char host[256];
        int port;
    } redir;
    int asking;

    /* commands: the one connection (a struct rconn) is used under mu */
    pthread_mutex_t mu;
    struct dlock__pool pool;
    char sha[S_COUNT][41];
    const char *lua[S_COUNT]; /* the scripts' text (scripts.c) */
    char *lua_buf[S_COUNT];   /* ... those made for Cluster */

    /* pub/sub */
    pthread_mutex_t smu;
    struct rconn *sc;
    pthread_t listener;
    int listening;  /* listener thread started and not yet joined */
    int sub_broken; /* the listener lost the connection and exited */
    int sub_denied; /* the server refused SUBSCRIBE: do not rely on it */
    int ks_denied;  /* ... refused only the keyspace channels: poll */
    int stop;
    struct chan *chans;
    unsigned char *pend; /* P_* of commands sent and not yet answered */
    size_t pend_head, pend_len, pend_cap;

    /* keyspace notifications (under mu) */
    int ks_on;          /* the server sends the events we need */
    int ks_known;       /* ks_on was asked ... */
    int64_t ks_checked; /* ... at this time */
};

/* --- cluster.c ------------------------------------------------------- */

enum { R_MOVED = 1, R_ASK };

/* A node of the cluster: where it is and its command connection. */
struct cnode {
    struct redis_store *rs;
    char host[256];
    int port;
    int is_master; /* serves slots in the last map */
    struct dlock__pool pool;
};

/* Parse redis-cluster://host:port[,host:port...][/0] into rs, ask the
 * seeds for the slot map (which also checks the address and the password). */
int dlock__redis_cluster_open(struct redis_store *rs,
                              const struct dlock_url *u);
void dlock__redis_cluster_free(struct redis_store *rs);
/* The hash slot of a lock name (of its lock key). */
unsigned dlock__redis_name_slot(const struct redis_store *rs,
                                const char *name, size_t len);
/* fn on the command connection of the master of slot (-1: any master),
 * following MOVED and ASK, and asking for the map again when a node did
 * not answer (caller holds mu). */
int dlock__redis_cluster_exec(struct redis_store *rs, int slot,
                              dlock__pool_fn fn, void *arg, int retry);
/* The node that serves slot, or -1 (caller holds mu; may ask for the
 * map). */
int dlock__redis_cluster_owner(struct redis_store *rs, unsigned slot);
/* Each master once: calls fn with a slot it serves (caller holds mu). */
int dlock__redis_cluster_each_master(struct redis_store *rs,
                                     int (*fn)(struct redis_store *, int slot,
                                               void *),
                                     void *arg);
/* A connection to any node, for the subscriber. */
struct rconn *dlock__redis_cluster_any(struct redis_store *rs, int *rc);

/* --- conn.c ---------------------------------------------------------- */

/* The pool's callbacks (ctx: the struct redis_store); a new connection
 * has its database selected and the scripts loaded. */
extern const struct dlock__pool_ops dlock__redis_pool_ops;
/* A connection made ready for commands: its database selected, the
 * scripts loaded; *out = c, or c freed and an error. */
int dlock__redis_ready(struct redis_store *rs, struct rconn *c, void **out);
/* The close and healthy callbacks of every Redis pool (cluster nodes'
 * too); ctx unused. */
void dlock__redis_pool_close(void *ctx, void *c);
int dlock__redis_pool_healthy(void *ctx, void *c, int64_t idle_ms);
/* Connect to host:port (NULL: the unix socket), authenticate and check
 * that the peer speaks Redis.  Returns a ready context, or NULL with *rc
 * and the message set. */
struct rconn *dlock__redis_connect_to(struct redis_store *rs, const char *host,
                                      int port, int *rc);

/* --- topo.c ---------------------------------------------------------- */

/* A connection to the master: the configured server, or with Sentinel
 * the one the sentinels name (and which says it is master).  main: the
 * command connection, whose master change starts a new epoch. */
struct rconn *dlock__redis_connect(struct redis_store *rs, int main, int *rc);
/* Does the server on c say (ROLE) it is a `role`: "master", "sentinel"? */
int dlock__redis_role_is(struct rconn *c, const char *role);
/* Does a sentinel name a master for rs->master (whether or not it is
 * reachable)? */
int dlock__redis_sentinel_knows(struct redis_store *rs);
/* Parse redis-sentinel://host:port,host:port/MASTER into rs. */
int dlock__redis_topo_parse(struct redis_store *rs, const struct dlock_url *u);
/* Parse host[:port][,host[:port]...] (the sentinels, a cluster's seed
 * nodes) into sent_host and sent_port; what names them in messages. */
int dlock__redis_hosts_parse(struct redis_store *rs, const struct dlock_url *u,
                             int default_port, const char *what);
void dlock__redis_topo_free(struct redis_store *rs);
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
/* SIGPIPE blocked in this thread from begin to end (conn.c). */
struct dlock__nopipe {
    sigset_t old;
    int was_pending;
};
void dlock__redis_nopipe_begin(struct dlock__nopipe *np);
void dlock__redis_nopipe_end(struct dlock__nopipe *np);
/* fn on the command connection (caller holds mu): with Cluster, that of
 * the master of slot (-1: any).  retry: under the pool's retry-once
 * policy; 0 for what must not run twice. */
int dlock__redis_exec(struct redis_store *rs, int slot, dlock__pool_fn fn,
                      void *arg, int retry);
/* As dlock__redis_exec(), on one pool (the single-server path, and each
 * cluster node's). */
int dlock__redis_exec_on(struct dlock__pool *pool, dlock__pool_fn fn,
                         void *arg, int retry);
/* One command on the command connection, retried as dlock__redis_exec
 * does (caller holds mu): DLOCK_OK with *out as dlock__redis_send. */
int dlock__redis_cmd(struct redis_store *rs, int slot, int retry,
                     redisReply **out, int argc, const char **argv,
                     const size_t *lens);

/* --- scripts.c ------------------------------------------------------- */

/* The scripts' text for rs (its Cluster variants: scripts.c, HEARD). */
int dlock__redis_scripts_init(struct redis_store *rs);
void dlock__redis_scripts_free(struct redis_store *rs);
/* SCRIPT LOAD every script on a new connection, into rs->sha. */
int dlock__redis_load_scripts(struct redis_store *rs, struct rconn *c);
/* Run script s with the 4 keys of k and nargs arguments (caller holds
 * mu).  Returns the reply (caller frees), or NULL with *rc set: an error
 * answer is DLOCK_ESTORE.  retry as for dlock__redis_exec. */
redisReply *dlock__redis_run(struct redis_store *rs, int s,
                             const struct dlock__rkeys *k, int nargs,
                             const char **args, const size_t *alen, int retry,
                             int *rc);
/* As dlock__redis_run(), with nkeys (at most RUN_KEYS_MAX) keys of one
 * hash slot and up to RUN_ARGS_MAX arguments. */
#define RUN_KEYS_MAX 8
#define RUN_ARGS_MAX 8
redisReply *dlock__redis_run_keys(struct redis_store *rs, int s, int nkeys,
                                  const char *const *keys,
                                  const size_t *klen, int nargs,
                                  const char **args, const size_t *alen,
                                  int retry, int *rc);

/* --- store.c --------------------------------------------------------- */

int dlock__redis_keys_of(struct redis_store *rs, const char *name,
                         size_t name_len, struct dlock__rkeys *k);
/* The script of kind base (S_ACQ, S_REL, S_EXT or S_TTL) for lk: a
 * lock's, a shared lock's or a semaphore's. */
int dlock__redis_script(const struct dlock_lock *lk, int base);
/* One attempt (OK: *epoch is the epoch it ran in); q is Q_WAIT, Q_TRY or Q_UNFAIR.  BUSY: *retry_ms is the
 * holder's lease left (-1 unknown), *foreign is set if the holder is not
 * a dlock client (its value is not "dlock1:" + a token), which will not
 * publish when it lets go, and *place is the place in the queue (0: not
 * queued). */
int dlock__redis_attempt(struct redis_store *rs, struct dlock_lock *lk,
                         const char *q, int64_t *retry_ms, int *foreign,
                         long long *place, uint64_t *epoch);
/* The current epoch (topo.c); a held lock's lk->priv records the one it
 * was taken in (dlock__redis_held), tagged so it is no wait's pointer. */
uint64_t dlock__redis_epoch(struct redis_store *rs,
                            const struct dlock_lock *lk);
void dlock__redis_held(struct dlock_lock *lk, uint64_t epoch);
int dlock__redis_is_held_tag(const void *priv);
/* The lease the server is asked for: one ms more than the holder counts.
 * The server's clock counts whole ms (rounded down) from when the script
 * runs, which can be up to 1 ms before the holder's count began: without
 * the margin a lease (a lock's PX, a semaphore slot's score) could end
 * before the holder's own end, and its slot be handed on while it still
 * holds (the semaphore torture saw 4 holders of 3). */
#define DLOCK__REDIS_LEASE(ttl) ((ttl) > 0 ? (ttl) + 1 : (ttl))
/* Was lk taken in an epoch before now_epoch (a failover since)? */
int dlock__redis_stale(const struct dlock_lock *lk, uint64_t now_epoch);
/* Let go of a stale lock on the new master; returns DLOCK_LOST. */
int dlock__redis_drop_stale(struct redis_store *rs, struct dlock_lock *lk);
/* A wait that ended without the lock: leave the queue (best effort). */
int dlock__redis_leave(struct redis_store *rs, struct dlock_lock *lk);

/* SCAN the server (every master of a cluster) for the keys matching
 * pattern, calling take for each (caller does not hold mu; take runs
 * with it held and must not call into the store).  Stops at take's first
 * error. */
int dlock__redis_scan(struct redis_store *rs, const char *pattern,
                      int (*take)(struct redis_store *rs, const char *key,
                                  size_t len, void *arg),
                      void *arg);

/* --- runs.c --------------------------------------------------------- */

/* The text of script s >= S_LOADED. */
const char *dlock__redis_run_lua(int s);
int dlock__redis_run_begin(struct dlock_store *s, struct dlock_lock *lk,
                           const dlock_run_rule *rule, const char *host,
                           int64_t pid, int *go, dlock_run *last);
int dlock__redis_run_end(struct dlock_store *s, struct dlock_lock *lk,
                         int result, int status);
int dlock__redis_runs(struct dlock_store *s, const char *name, unsigned max,
                      dlock_run_cb cb, void *payload);
int dlock__redis_last_runs(struct dlock_store *s, const char *prefix,
                           dlock_run_cb cb, void *payload);

/* --- sub.c (all under smu) ------------------------------------------- */

/* The pub/sub connection and its listener, started on first use or after
 * a failure (may drop and retake smu). */
int dlock__redis_sub_ensure(struct redis_store *rs);
/* Stop the listener and close the connection (smu not held). */
void dlock__redis_sub_stop(struct redis_store *rs);
/* Send (UN)SUBSCRIBE for one channel; kind is what it is for, P_*.
 * -1 when not sent (no connection, out of memory, write failed). */
int dlock__redis_sub_cmd(struct redis_store *rs, const char *verb,
                         const char *chan, size_t len, unsigned char kind);
/* Join w to the waiters of channel name[0..len), subscribing it if it
 * is new; own: a waiter's own channel.  NULL: out of memory. */
struct chan *dlock__redis_chan_join(struct redis_store *rs, const char *name,
                                    size_t len, int own, struct waiter *w);
/* Take w off c (passing on a wake-up it did not use); the last waiter
 * unsubscribes and frees c. */
void dlock__redis_chan_leave(struct redis_store *rs, struct chan *c,
                             struct waiter *w);
/* Subscribe c to the keyspace channel of k's lock key, if not yet.  Out
 * of memory leaves c->ks NULL: the waiter polls. */
void dlock__redis_chan_want_ks(struct redis_store *rs, struct chan *c,
                               const struct dlock__rkeys *k);
/* Store close: free every channel (no waiter is left). */
void dlock__redis_chans_free(struct redis_store *rs);

/* --- wait.c ---------------------------------------------------------- */

int dlock__redis_wait_slice(struct dlock_store *s, struct dlock_lock *lk,
                            int64_t slice_ms, int64_t *retry_ms);
int dlock__redis_forget(struct dlock_store *s, struct dlock_lock *lk);

/* --- renew.c -------------------------------------------------------- */

int dlock__redis_extend_many(struct dlock_store *s,
                             struct dlock_lock *const *locks, size_t n,
                             int *rcs);

#endif /* DLOCK_STORES_REDIS_H */
