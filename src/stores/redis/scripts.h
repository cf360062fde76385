/*
 * scripts.h - the Lua scripts' text and loading them on a new connection
 * (scripts.c), above the link (link.h): every connection the topology
 * opens, to whichever server, is made ready here.
 */
#ifndef DLOCK_STORES_REDIS_SCRIPTS_H
#define DLOCK_STORES_REDIS_SCRIPTS_H

#include "link.h"
#include "text.h"

/* The scripts' text for rs's variant (standalone or Cluster), made once
 * at open; freed by dlock__redis_scripts_free. */
int dlock__redis_scripts_init(struct redis_store *rs);
void dlock__redis_scripts_free(struct redis_store *rs);
/* Every script, as each variant of the store ("standalone", "cluster")
 * sends it, to emit(): the golden copies (src/core/text.h). */
void dlock__redis_texts(dlock__text_emit emit, void *arg);
/* SCRIPT LOAD every script on a new connection, into rs->sha. */
int dlock__redis_load_scripts(struct redis_store *rs, struct rconn *c);

/* A connection made ready for commands: its database selected, the
 * scripts loaded; *out = c, or c freed and an error. */
int dlock__redis_ready(struct redis_store *rs, struct rconn *c, void **out);

#endif /* DLOCK_STORES_REDIS_SCRIPTS_H */
