/*
 * api.h - the argument checks the public API's calls share (store.c;
 * core only).
 */
#ifndef DLOCK_CORE_API_H
#define DLOCK_CORE_API_H

#ifdef DLOCK__STORE_SOURCE
#error "api.h is the core's own: stores see store.h only"
#endif

#include "store.h"

/* DLOCK_OK, or DLOCK_EINVAL for NULL or a fork child's use of its
 * parent's store. */
int dlock__store_usable(const struct dlock_store *store);
/* The checks dlock_list() and dlock_last_runs() share: a usable store, a
 * callback, and a prefix (NULL: "") of at most DLOCK_NAME_MAX bytes.
 * Clears the thread's message first. */
int dlock__prefix_call_ok(const struct dlock_store *store, int has_cb,
                          const char **prefix);
/* DLOCK_OK, or DLOCK_ENOTSUP with a message when ops was built for
 * another version of the store contract (ops->version is not
 * DLOCK_STORE_OPS_VERSION).  dlock_store_open() and dlock_ddl() check
 * every store's table before using it. */
int dlock__ops_check(const struct dlock_store_ops *ops);

/* Replace a text read from a suspension record (its "by") with "?"
 * unless it is UTF-8 without control characters (suspend.c). */
void dlock__suspension_vet_by(char *field, size_t size);

#endif /* DLOCK_CORE_API_H */
