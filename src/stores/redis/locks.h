/*
 * locks.h - what the files of the store's operations share, the top
 * layer (above eval.h), in layers of their own: held.c (a lock's keys
 * and scripts, extend, ttl_left, release), scan.c (SCAN) and sub.c (the
 * subscriber) at the bottom; wait.c (the wait), renew.c (batched
 * renewals), runs.c (run records), elect.c (leader values and
 * observers) and suspend.c (a job's suspension) above them; store.c (the
 * ops table) on top, called by none of them.
 */
#ifndef DLOCK_STORES_REDIS_LOCKS_H
#define DLOCK_STORES_REDIS_LOCKS_H

#include "eval.h"

/* --- held.c ---------------------------------------------------------- */

int dlock__redis_keys_of(struct redis_store *rs, const char *name,
                         size_t name_len, struct dlock__rkeys *k);
/* The script of kind base (S_ACQ, S_REL, S_EXT or S_TTL) for lk: a
 * lock's, a shared lock's or a semaphore's. */
int dlock__redis_script(const struct dlock_lock *lk, int base);
/* One attempt (OK: *epoch is the epoch it ran in); q is Q_WAIT, Q_TRY or
 * Q_UNFAIR.  BUSY: *retry_ms is the holder's lease left (-1 unknown), *foreign
 * is set if the holder is not a dlock client (its value is not "dlock1:" + a
 * token), which will not publish when it lets go, and *place is the place in
 * the queue (0: not queued). */
int dlock__redis_attempt(struct redis_store *rs, struct dlock_lock *lk,
                         const char *q, int64_t *retry_ms, int *foreign,
                         long long *place, uint64_t *epoch);
/* The current epoch (master.c, cluster.c); a held lock's lk->priv
 * records the one it was taken in (dlock__redis_held), tagged so it is
 * no wait's pointer. */
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
/* A script's integer answer in *out (frees r); r NULL: its failure rc. */
int dlock__redis_int_reply(struct redis_store *rs, redisReply *r, int rc,
                           long long *out);
/* The ops of dlock__redis_ops: renew, check and let go of a held lock. */
int dlock__redis_extend(struct dlock_store *s, struct dlock_lock *lk,
                        int64_t ttl_ms);
int dlock__redis_ttl_left(struct dlock_store *s, struct dlock_lock *lk,
                          int64_t *left_ms);
int dlock__redis_release(struct dlock_store *s, struct dlock_lock *lk);

/* --- scan.c ---------------------------------------------------------- */

/* SCAN the server (every master of a cluster) for the keys matching
 * pattern, calling take for each (caller does not hold mu; take runs
 * with it held and must not call into the store).  Stops at take's first
 * error. */
int dlock__redis_scan(struct redis_store *rs, const char *pattern,
                      int (*take)(struct redis_store *rs, const char *key,
                                  size_t len, void *arg),
                      void *arg);

/* Key suffix word of name's key (derived as the fence key is: same hash
 * slot, "\xff" + word) into a malloc'd *key (free it). */
int dlock__redis_derived_key(struct redis_store *rs, const char *name,
                             size_t len, const char *suffix, char **key,
                             size_t *key_len);
/* The names under prefix (matched exactly) that have a key of suffix
 * (runs.c's summaries, suspend.c's records): SCAN every master, each name
 * once into names (caller frees it, also on error). */
int dlock__redis_derived_names(struct redis_store *rs, const char *prefix,
                               const char *suffix, struct dlock__names *names);

/* --- runs.c --------------------------------------------------------- */

int dlock__redis_run_begin(struct dlock_store *s, struct dlock_lock *lk,
                           const dlock_run_rule *rule, const char *host,
                           int64_t pid, int *go, dlock_run *last);
int dlock__redis_run_end(struct dlock_store *s, struct dlock_lock *lk,
                         int result, int status);
int dlock__redis_keep_runs(struct dlock_store *s, const char *name, unsigned n);
int dlock__redis_kept_runs(struct dlock_store *s, const char *name,
                           unsigned *n);
int dlock__redis_runs(struct dlock_store *s, const char *name, unsigned max,
                      dlock_run_cb cb, void *payload);
int dlock__redis_last_runs(struct dlock_store *s, const char *prefix,
                           dlock_run_cb cb, void *payload);

/* --- suspend.c: a job's suspension --------------------------------- */

/* A name's suspension record: P NAME \xff suspended (suspend.c). */
#define DLOCK__REDIS_SUSPENDED_SUFFIX                                          \
    "\xff"                                                                     \
    "suspended"
int dlock__redis_suspend(struct dlock_store *s, const char *name,
                         const char *by, const char *reason, int *was,
                         dlock_suspension *cur);
int dlock__redis_resume(struct dlock_store *s, const char *name, int *was,
                        dlock_suspension *cur);
int dlock__redis_suspension(struct dlock_store *s, const char *name, int *was,
                            dlock_suspension *cur);
int dlock__redis_suspensions(struct dlock_store *s, const char *prefix,
                             dlock_suspension_cb cb, void *payload);
/* run_begin's {2, by, since} answer into *last as store.h says. */
void dlock__redis_suspended_run(const redisReply *by, const redisReply *since,
                                dlock_run *last);

/* --- elect.c: leader values and observers -------------------------- */

int dlock__redis_value_set(struct dlock_store *s, struct dlock_lock *lk,
                           const char *value, size_t len);
int dlock__redis_value_get(struct dlock_store *s, const char *name,
                           uint64_t *fence, char **value, size_t *len);
int dlock__redis_watch(struct dlock_store *s, const char *name, void **state,
                       int64_t slice_ms);
void dlock__redis_watch_end(struct dlock_store *s, void *state);

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

#endif /* DLOCK_STORES_REDIS_LOCKS_H */
