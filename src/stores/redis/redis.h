/*
 * redis.h - the Redis store's handle (struct redis_store) and the types
 * and constants its files share.  Functions are declared by layer, each
 * header above the one before and calling only down:
 *
 *   rconn.h     the transport: one connection, TCP, unix socket or TLS
 *               (OpenSSL), with hiredis's command formatting and reply
 *               reader (rconn.c)
 *   link.h      a link to one server: connect and authenticate, send a
 *               command, error classes, WAIT, retry-once on a pool
 *               (link.c)
 *   scripts.h   the Lua scripts' text (lua/ *.lua, expanded per variant)
 *               and loading them on a new connection (scripts.c)
 *   topology.h  where commands go: the master, with Sentinel (master.c),
 *               Redis Cluster (cluster.c), the command pool and exec
 *               over either (route.c)
 *   eval.h      running a script: EVALSHA, EVAL on NOSCRIPT (eval.c)
 *   locks.h     the operations: a held lock (held.c), SCAN (scan.c),
 *               the wait and its subscriber (wait.c, sub.c), batched
 *               renewals (renew.c), run records (runs.c), leader values
 *               and observers (elect.c), and the ops
 *               table on top (store.c)
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
 *   P NAME \xff leader  its leader value: a hash (fence: the term it was
 *                       written under, value) (elect.c)
 *   P NAME \xff w TOKEN a waiter's own channel: "g" + fence when a
 *                       release hands the lock to it (a wake-up only:
 *                       anyone may publish; the waiter's attempt tells)
 * Names are valid UTF-8, which never contains the byte 0xff, so no lock
 * key can be mistaken for a derived one, whatever the names (rkeys.c).
 *
 * Every operation is one Lua script, one round trip (EVALSHA, EVAL when
 * the server has forgotten the script).  Scripts read the server's clock
 * (TIME), never the client's.
 *
 * Threads: one command connection per store handle, used under the mutex
 * mu.  Each command is a sub-millisecond round trip and a lock never pins
 * a connection, so more connections would only add load on the server.
 * The connection sits in a core pool of one (link.c, route.c), for the pool's
 * retry-once policy.  Waiting uses a second connection, subscribed to the
 * channels of the names this handle waits on and its waiters' own
 * channels, read by a listener thread.  With ?fair=1 (the default) a
 * waiter queues on the server and a release hands the lock to the head
 * of the queue, telling only it (lua/fn_handoff.lua); otherwise a release
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

#include "../sha1.h"
#include "cancel.h"
#include "clock.h"
#include "errors.h"
#include "iobound.h"
#include "names.h"
#include "pool.h"
#include "process.h"
#include "rconn.h"
#include "rkeys.h"
#include "store.h"
#include "strutil.h"
#include "url.h"

/* --- the scripts (scripts.c, eval.c) ------------------------------- */

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
    S_KEEP_RUNS,
    S_KEPT_RUNS,
    /* elect.c's, likewise (only a candidate pays for it) */
    S_VALUE_SET,
    /* suspend.c's, likewise (run_begin reads the record itself) */
    S_SUSPEND,
    S_RESUME,
    S_SUSPENSION,
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
    int woken;         /* a message (only ever a wake-up) came */
    const char *token; /* on an own channel: the waiter's owner token */
    int64_t lease_at;  /* a hand-off to another (an "h" message on the
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
    int own;  /* a handle's own channel: "g" + token wakes that waiter */
    int keep; /* 0: unsubscribe when its last waiter leaves */
    struct waiter *head, *tail;
};

/* Channels with no waiter left stay subscribed (the next wait on the name
 * needs no SUBSCRIBE, nor its confirmation), this many per handle at
 * most: beyond, the one idle longest is let go. */
#define IDLE_CHANS_MAX 64

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
     * replicas have it, within ?replicas_timeout= (eval.c: eval_fn
     * asks, held.c and renew.c decide).  0: no WAIT. */
    int replicas;
    int64_t replicas_timeout_ms;
    long long acks; /* what the last WAIT answered (under mu), -1 none */

    /* Sentinel (master.c): the sentinels, the master's name, where it was
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
    char *lua[S_COUNT]; /* the scripts' text, made at open (scripts.c) */

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
    int idle; /* channels in chans with no waiter (refs 0) */
    /* This handle's id, 16 hex digits: its own channel for a name is
     * the lock key, 0xff, "w" and this (wait.c), kept from one wait to
     * the next. */
    char hid[17];
    unsigned char *pend; /* P_* of commands sent and not yet answered */
    size_t pend_head, pend_len, pend_cap;

    /* keyspace notifications (under mu) */
    int ks_on;          /* the server sends the events we need */
    int ks_known;       /* ks_on was asked ... */
    int64_t ks_checked; /* ... at this time */
};

/* --- Redis Cluster (cluster.c, link.c) ------------------------------ */

enum { R_MOVED = 1, R_ASK };

/* A node of the cluster: where it is and its command connection. */
struct cnode {
    struct redis_store *rs;
    char host[256];
    int port;
    int is_master; /* serves slots in the last map */
    struct dlock__pool pool;
};

/* probe.c: dlock_store_probe(). */
int dlock__redis_probe(struct dlock_store *s, dlock_probe *out);

#endif
