/*
 * eval.h - running a script (eval.c), above the topology: on the master
 * of its keys' slot, by its sha, its text on NOSCRIPT.
 */
#ifndef DLOCK_STORES_REDIS_EVAL_H
#define DLOCK_STORES_REDIS_EVAL_H

#include "topology.h"

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
                                  const char *const *keys, const size_t *klen,
                                  int nargs, const char **args,
                                  const size_t *alen, int retry, int *rc);

#endif /* DLOCK_STORES_REDIS_EVAL_H */
