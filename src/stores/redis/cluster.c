/*
 * cluster.c - Redis Cluster: which master serves a key's hash slot, and
 * following the cluster when that changes.
 *
 * redis-cluster://[user:pass@]host[:port][,host[:port]...][/0][?...]
 * names seed nodes; CLUSTER SLOTS on the first that answers gives the
 * map.  hiredis 0.14 (Debian's) has no cluster client, and the packaged
 * alternatives (hiredis-vip, hiredis-cluster) are not in Debian: what a
 * lock needs is small, so it is here.  Every script touches the keys of
 * one name, which share its lock key's hash slot (keys.c), so each runs
 * on one master.  Each node has a pool of one command connection, used
 * under the store's mutex mu like the single server's.
 *
 *   MOVED   the slot lives elsewhere now: ask for the map again, send
 *           there (also if the map's answer is older than the node's).
 *   ASK     one key of a slot being migrated has moved: ASKING + the
 *           command on the node named, once; the map stays.
 *   a node that does not answer, CLUSTERDOWN, TRYAGAIN: DLOCK_EUNAVAIL
 *           (waiters wait, renewals retry within the lease) and the map
 *           is asked for again (at most every MAP_MIN_MS), so a failover
 *           is found as soon as the cluster has made it.
 *
 * Failover and migration differ in what the new master holds.  A slot
 * migrated with MIGRATE moves its keys as they are, values and TTLs: the
 * locks stay, and every extend and release checks the holder's token on
 * the new master.  A replica promoted after its master failed may lack
 * the last writes (replication is asynchronous), like after a Sentinel
 * failover: when a slot's old master is no longer a master in the new
 * map, the slot's epoch moves, and every lock taken in that slot before
 * is LOST (held.c, as for Sentinel).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topology.h"

#define SLOTS 16384
#define MAP_MIN_MS 100 /* asking for the map again after a failure */
#define MAX_HOPS 8     /* redirections followed for one command */
#define MAX_NODES 1000 /* a cluster of 1000 nodes is Redis's own limit */

/* --- each node's pool -------------------------------------------------- */

/* A node's command connection: as the single server's (route.c), at the
 * node's address. */
static int node_open(void *ctx, void **out)
{
    struct cnode *n = ctx;
    struct rconn *c;
    int rc = DLOCK_OK;

    *out = NULL;
    c = dlock__redis_connect_to(n->rs, n->host, n->port, &rc);
    if (c == NULL)
        return rc;
    return dlock__redis_ready(n->rs, c, out);
}

static const struct dlock__pool_ops node_ops = {
    .open = node_open,
    .close = dlock__redis_pool_close,
    .healthy = dlock__redis_pool_healthy,
};

/* The node at host:port, added if new (caller holds mu); -1 when out of
 * memory or past MAX_NODES. */
static int node_get(struct redis_store *rs, const char *host, int port)
{
    struct cnode *n;

    for (int i = 0; i < rs->nnodes; i++)
        if (rs->nodes[i]->port == port && strcmp(rs->nodes[i]->host, host) == 0)
            return i;
    if (rs->nnodes >= MAX_NODES || strlen(host) >= sizeof(n->host))
        return -1;
    n = calloc(1, sizeof(*n));
    if (n == NULL)
        return -1;
    n->rs = rs;
    dlock__strlcpy(n->host, host, sizeof(n->host));
    n->port = port;
    dlock__pool_init(&n->pool, &node_ops, n, 1);
    pthread_mutex_lock(&rs->tmu);
    if (rs->nnodes == rs->cap_nodes) {
        int cap = rs->cap_nodes ? rs->cap_nodes * 2 : 8;
        struct cnode **nn = realloc(rs->nodes, (size_t)cap * sizeof(*nn));

        if (nn == NULL) {
            pthread_mutex_unlock(&rs->tmu);
            dlock__pool_destroy(&n->pool);
            free(n);
            return -1;
        }
        rs->nodes = nn;
        rs->cap_nodes = cap;
    }
    rs->nodes[rs->nnodes++] = n;
    pthread_mutex_unlock(&rs->tmu);
    return rs->nnodes - 1;
}

/* --- the slot map ------------------------------------------------------ */

/* host and port of a CLUSTER SLOTS node entry [host, port, id, ...]; an
 * empty host (a node that does not know its address) is the one asked. */
static int entry_addr(const redisReply *e, const char *asked, const char **host,
                      int *port)
{
    if (e->type != REDIS_REPLY_ARRAY || e->elements < 2 ||
        e->element[0]->type != REDIS_REPLY_STRING ||
        e->element[1]->type != REDIS_REPLY_INTEGER ||
        e->element[1]->integer < 1 || e->element[1]->integer > 65535)
        return -1;
    *host = e->element[0]->len > 0 && strcmp(e->element[0]->str, "?") != 0
                ? e->element[0]->str
                : asked;
    *port = (int)e->element[1]->integer;
    return 0;
}

/* Apply a CLUSTER SLOTS answer (caller holds mu).  A slot whose master
 * changed to a node that was not already a master while the old one is
 * one no more has failed over: its epoch moves. */
static int apply_map(struct redis_store *rs, const redisReply *r,
                     const char *asked)
{
    int16_t *owner = malloc(SLOTS * sizeof(*owner));
    unsigned char *master;

    if (owner == NULL)
        return dlock__enomem();
    for (int s = 0; s < SLOTS; s++)
        owner[s] = -1;
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *e = r->element[i];
        const char *host;
        long long lo, hi;
        int port, m;

        if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
            e->element[0]->type != REDIS_REPLY_INTEGER ||
            e->element[1]->type != REDIS_REPLY_INTEGER ||
            entry_addr(e->element[2], asked, &host, &port) != 0) {
            free(owner);
            return dlock__seterr(DLOCK_ESTORE,
                                 "unexpected CLUSTER SLOTS "
                                 "answer from %s",
                                 rs->url);
        }
        lo = e->element[0]->integer;
        hi = e->element[1]->integer;
        m = node_get(rs, host, port);
        if (m < 0) {
            free(owner);
            return dlock__enomem();
        }
        for (long long s = lo < 0 ? 0 : lo; s <= hi && s < SLOTS; s++)
            owner[s] = (int16_t)m;
        /* Its replicas: known, so refresh() can ask them for the map. */
        for (size_t j = 3; j < e->elements; j++) {
            int rp;

            if (entry_addr(e->element[j], asked, &host, &rp) == 0)
                (void)node_get(rs, host, rp);
        }
    }
    master = calloc((size_t)rs->nnodes, 1);
    if (master == NULL) {
        free(owner);
        return dlock__enomem();
    }
    for (int s = 0; s < SLOTS; s++)
        if (owner[s] >= 0)
            master[owner[s]] = 1;
    pthread_mutex_lock(&rs->tmu);
    for (int i = 0; i < rs->nnodes; i++)
        rs->nodes[i]->is_master = master[i];
    for (int s = 0; s < SLOTS; s++) {
        int old = rs->slot_node[s];

        if (owner[s] < 0)
            continue; /* unserved now: keep where it was until known */
        if (old >= 0 && old != owner[s] && !master[old])
            rs->slot_epoch[s]++;
        rs->slot_node[s] = owner[s];
    }
    rs->map_at = dlock__now_ms();
    pthread_mutex_unlock(&rs->tmu);
    free(master);
    free(owner);
    return DLOCK_OK;
}

/* Ask host:port for the map: DLOCK_OK, or an error with the message set
 * (DLOCK_EINVAL: not a cluster node at all). */
static int map_from(struct redis_store *rs, const char *host, int port)
{
    struct rconn *c;
    redisReply *r;
    int rc = DLOCK_OK;

    c = dlock__redis_connect_to(rs, host, port, &rc);
    if (c == NULL)
        return rc;
    r = dlock__rconn_command(c, "CLUSTER SLOTS");
    if (r == NULL)
        rc = dlock__seterr(DLOCK_EUNAVAIL, "lost the connection to %s: %s",
                           rs->url, c->errstr);
    else if (r->type == REDIS_REPLY_ERROR &&
             strstr(r->str, "cluster support disabled") != NULL)
        rc = dlock__seterr(DLOCK_EINVAL,
                           "%s: %s:%d is not a Redis Cluster "
                           "node (use redis://)",
                           rs->url, host, port);
    else if (r->type == REDIS_REPLY_ERROR)
        rc = dlock__redis_reply_error(rs, r, "CLUSTER SLOTS");
    else if (r->type != REDIS_REPLY_ARRAY || r->elements == 0)
        rc = dlock__seterr(DLOCK_EUNAVAIL, "%s: %s:%d serves no slots yet",
                           rs->url, host, port);
    else
        rc = apply_map(rs, r, host);
    freeReplyObject(r);
    dlock__rconn_free(c);
    return rc;
}

/* Ask the nodes that served slots, then the seeds, then the rest
 * (caller holds mu). */
static int refresh(struct redis_store *rs)
{
    int rc = DLOCK_EUNAVAIL, n = rs->nnodes;

    for (int pass = 0; pass < 3; pass++) {
        int count = pass == 1 ? rs->nsent : n;

        for (int i = 0; i < count; i++) {
            const struct cnode *nd = pass == 1 ? NULL : rs->nodes[i];

            if (nd != NULL && (pass == 0) != (nd->is_master != 0))
                continue;
            rc = nd != NULL ? map_from(rs, nd->host, nd->port)
                            : map_from(rs, rs->sent_host[i], rs->sent_port[i]);
            if (rc == DLOCK_OK || rc == DLOCK_EINVAL || rc == DLOCK_ENOMEM)
                return rc;
        }
    }
    if (rc == DLOCK_EUNAVAIL) {
        pthread_mutex_lock(&rs->tmu);
        rs->map_at = dlock__now_ms();
        pthread_mutex_unlock(&rs->tmu);
    }
    return rc;
}

/* refresh(), unless the map was asked for within MAP_MIN_MS. */
static void refresh_soon(struct redis_store *rs)
{
    if (dlock__now_ms() - rs->map_at >= MAP_MIN_MS)
        (void)refresh(rs);
}

int dlock__redis_cluster_owner(struct redis_store *rs, unsigned slot)
{
    if (rs->slot_node[slot] < 0)
        refresh_soon(rs);
    return rs->slot_node[slot];
}

/* --- open, close -------------------------------------------------------- */

int dlock__redis_cluster_open(struct redis_store *rs, const struct dlock_url *u)
{
    const char *db = dlock__url_param(u, "db");
    int rc;

    if ((u->path != NULL && strcmp(u->path, "") != 0 &&
         strcmp(u->path, "/") != 0 && strcmp(u->path, "/0") != 0) ||
        (db != NULL && strcmp(db, "0") != 0))
        return dlock__seterr(DLOCK_EINVAL,
                             "a Redis Cluster has only "
                             "database 0: %s",
                             u->redacted);
    rc = dlock__url_hosts(u, 6379, "cluster node", &rs->sent_host,
                          &rs->sent_port, &rs->nsent);
    if (rc != DLOCK_OK)
        return rc;
    rs->slot_node = malloc(SLOTS * sizeof(*rs->slot_node));
    rs->slot_epoch = calloc(SLOTS, sizeof(*rs->slot_epoch));
    if (rs->slot_node == NULL || rs->slot_epoch == NULL)
        return dlock__enomem();
    for (int s = 0; s < SLOTS; s++)
        rs->slot_node[s] = -1;
    for (int i = 0; i < rs->nsent; i++) {
        rc = map_from(rs, rs->sent_host[i], rs->sent_port[i]);
        if (rc == DLOCK_OK || rc == DLOCK_EINVAL || rc == DLOCK_ENOMEM)
            break;
    }
    if (rc == DLOCK_EUNAVAIL && rs->nsent > 1) {
        char last[256];

        dlock__strlcpy(last, dlock_errmsg(), sizeof(last));
        return dlock__seterr(DLOCK_EUNAVAIL,
                             "%s: no seed node answered "
                             "(last: %s)",
                             rs->url, last);
    }
    return rc;
}

void dlock__redis_cluster_free(struct redis_store *rs)
{
    for (int i = 0; i < rs->nnodes; i++) {
        dlock__pool_destroy(&rs->nodes[i]->pool);
        free(rs->nodes[i]);
    }
    free(rs->nodes);
    free(rs->slot_node);
    free(rs->slot_epoch);
}

unsigned dlock__redis_name_slot(const struct redis_store *rs, const char *name,
                                size_t len)
{
    char buf[512], *key = buf;
    size_t n = rs->prefix_len + len;
    unsigned slot;

    if (n > sizeof(buf) && (key = malloc(n)) == NULL)
        return 0; /* then a MOVED says where it is */
    memcpy(key, rs->prefix, rs->prefix_len);
    memcpy(key + rs->prefix_len, name, len);
    slot = dlock__redis_slot(key, n);
    if (key != buf)
        free(key);
    return slot;
}

/* --- running commands --------------------------------------------------- */

/* Some master, for what has no key (caller holds mu). */
static int any_master(struct redis_store *rs)
{
    for (int i = 0; i < rs->nnodes; i++)
        if (rs->nodes[i]->is_master)
            return i;
    refresh_soon(rs);
    for (int i = 0; i < rs->nnodes; i++)
        if (rs->nodes[i]->is_master)
            return i;
    return -1;
}

/* MOVED from node `from`: ask for the map; if its answer still has the
 * slot at `from` (the node asked had not heard yet), trust the MOVED. */
static void moved(struct redis_store *rs, int from)
{
    unsigned slot = rs->redir.slot;
    int to;

    (void)refresh(rs);
    if (rs->slot_node[slot] != from)
        return;
    to = node_get(rs, rs->redir.host, rs->redir.port);
    if (to < 0)
        return;
    pthread_mutex_lock(&rs->tmu);
    if (!rs->nodes[from]->is_master)
        rs->slot_epoch[slot]++;
    rs->slot_node[slot] = (int16_t)to;
    pthread_mutex_unlock(&rs->tmu);
}

int dlock__redis_cluster_exec(struct redis_store *rs, int slot,
                              dlock__pool_fn fn, void *arg, int retry)
{
    int ask = -1;

    for (int hop = 0; hop < MAX_HOPS; hop++) {
        int n = ask >= 0    ? ask
                : slot >= 0 ? dlock__redis_cluster_owner(rs, (unsigned)slot)
                            : any_master(rs);
        int rc, kind;

        if (n < 0)
            return slot >= 0 ? dlock__seterr(DLOCK_EUNAVAIL,
                                             "%s: no master "
                                             "serves hash slot %d (is the "
                                             "cluster down?)",
                                             rs->url, slot)
                             : dlock__seterr(DLOCK_EUNAVAIL,
                                             "%s: no master "
                                             "known",
                                             rs->url);
        rs->redir.kind = 0;
        rs->asking = ask >= 0;
        rc = dlock__redis_exec_on(&rs->nodes[n]->pool, fn, arg, retry);
        rs->asking = 0;
        kind = rs->redir.kind;
        rs->redir.kind = 0;
        if (kind == R_MOVED) {
            /* Not run there: safe to send again, whatever it is. */
            moved(rs, n);
            ask = -1;
            continue;
        }
        if (kind == R_ASK) {
            ask = node_get(rs, rs->redir.host, rs->redir.port);
            if (ask < 0)
                return dlock__enomem();
            continue;
        }
        if (rc == DLOCK_EUNAVAIL && ask < 0 && slot >= 0) {
            /* A node that did not answer may have failed over: if the
             * map now names another master, an idempotent command goes
             * there (one that must not run twice reports the failure). */
            refresh_soon(rs);
            if (retry && rs->slot_node[slot] >= 0 && rs->slot_node[slot] != n)
                continue;
        }
        return rc;
    }
    return dlock__seterr(DLOCK_EUNAVAIL,
                         "%s: too many redirections for hash "
                         "slot %d (the cluster is resharding?)",
                         rs->url, slot);
}

int dlock__redis_cluster_each_master(struct redis_store *rs,
                                     int (*fn)(struct redis_store *, int slot,
                                               void *),
                                     void *arg)
{
    unsigned char *done = calloc((size_t)rs->nnodes + 1, 1);
    int rc = DLOCK_OK;

    if (done == NULL)
        return dlock__enomem();
    if (rs->slot_node[0] < 0)
        refresh_soon(rs);
    for (int s = 0; s < SLOTS && rc == DLOCK_OK; s++) {
        int n = rs->slot_node[s];

        if (n < 0 || n >= rs->nnodes || done[n])
            continue;
        done[n] = 1;
        rc = fn(rs, s, arg);
    }
    free(done);
    return rc;
}

struct rconn *dlock__redis_cluster_any(struct redis_store *rs, int *rc)
{
    char host[256];
    int port, count;

    /* The masters first, then the seeds: classic PUBLISH reaches every
     * node of the cluster, so any node serves the subscriber. */
    pthread_mutex_lock(&rs->tmu);
    count = rs->nnodes;
    pthread_mutex_unlock(&rs->tmu);
    *rc = dlock__seterr(DLOCK_EUNAVAIL, "%s: no node answered", rs->url);
    for (int i = 0; i < count + rs->nsent; i++) {
        struct rconn *c;

        pthread_mutex_lock(&rs->tmu);
        if (i < count && !rs->nodes[i]->is_master) {
            pthread_mutex_unlock(&rs->tmu);
            continue;
        }
        dlock__strlcpy(
            host, i < count ? rs->nodes[i]->host : rs->sent_host[i - count],
            sizeof(host));
        port = i < count ? rs->nodes[i]->port : rs->sent_port[i - count];
        pthread_mutex_unlock(&rs->tmu);
        c = dlock__redis_connect_to(rs, host, port, rc);
        if (c != NULL)
            return c;
    }
    return NULL;
}
