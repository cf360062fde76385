/*
 * topology.h - where commands go, above the link and the scripts:
 * master.c (the configured server, or the one the sentinels name),
 * cluster.c (Redis Cluster's slot map and its nodes), route.c (the
 * command connection's pool and dlock__redis_exec over either).
 */
#ifndef DLOCK_STORES_REDIS_TOPOLOGY_H
#define DLOCK_STORES_REDIS_TOPOLOGY_H

#include "scripts.h"

/* --- master.c -------------------------------------------------------- */

/* A connection to the master without Cluster: the configured server, or
 * with Sentinel the one the sentinels name (and which says it is master).
 * main: the command connection, whose master change starts a new epoch. */
struct rconn *dlock__redis_master_connect(struct redis_store *rs, int main,
                                          int *rc);
/* Does a sentinel name a master for rs->master (whether or not it is
 * reachable)? */
int dlock__redis_sentinel_knows(struct redis_store *rs);
/* Parse redis-sentinel://host:port,host:port/MASTER into rs. */
int dlock__redis_sentinel_parse(struct redis_store *rs,
                                const struct dlock_url *u);
void dlock__redis_master_free(struct redis_store *rs);

/* --- cluster.c ------------------------------------------------------- */

/* Parse redis-cluster://host:port[,host:port...][/0] into rs, ask the
 * seeds for the slot map (which also checks the address and the password). */
int dlock__redis_cluster_open(struct redis_store *rs,
                              const struct dlock_url *u);
void dlock__redis_cluster_free(struct redis_store *rs);
/* The hash slot of a lock name (of its lock key). */
unsigned dlock__redis_name_slot(const struct redis_store *rs, const char *name,
                                size_t len);
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

/* --- route.c --------------------------------------------------------- */

/* A connection to the master (dlock__redis_master_connect), or with
 * Cluster to any node (dlock__redis_cluster_any, for the subscriber). */
struct rconn *dlock__redis_connect(struct redis_store *rs, int main, int *rc);

/* The pool's callbacks (ctx: the struct redis_store); a new connection
 * has its database selected and the scripts loaded. */
extern const struct dlock__pool_ops dlock__redis_pool_ops;

/* fn on the command connection (caller holds mu): with Cluster, that of
 * the master of slot (-1: any).  retry: under the pool's retry-once
 * policy; 0 for what must not run twice. */
int dlock__redis_exec(struct redis_store *rs, int slot, dlock__pool_fn fn,
                      void *arg, int retry);

/* One command on the command connection, retried as dlock__redis_exec
 * does (caller holds mu): DLOCK_OK with *out as dlock__redis_send. */
int dlock__redis_cmd(struct redis_store *rs, int slot, int retry,
                     redisReply **out, int argc, const char **argv,
                     const size_t *lens);

#endif /* DLOCK_STORES_REDIS_TOPOLOGY_H */
