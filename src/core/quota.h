/*
 * quota.h - a store handle's share of a server-wide resource that every
 * client of the server draws on: PostgreSQL's shared lock table (a
 * session advisory key each), MySQL's connections (one per session-mode
 * lock).  When such a resource runs out the server fails every client,
 * not only dlock, so a handle counts what it holds and refuses more than
 * its share: ?KEY=N from the URL, else half of the server's capacity
 * once the store has read it; 0: no limit.  Each store words its own
 * refusal (it knows what the units are).
 */
#ifndef DLOCK_CORE_QUOTA_H
#define DLOCK_CORE_QUOTA_H

#include <stdint.h>

struct dlock_url;

struct dlock__quota {
    int64_t used;   /* held now (atomic) */
    int64_t max;    /* the limit (atomic); 0: none */
    int64_t server; /* the server's capacity, 0 until read (atomic) */
    int is_auto;    /* max follows server (no ?KEY=) */
};

/* From ?key=N (DLOCK_EINVAL with a message if not a whole number). */
int dlock__quota_init(struct dlock__quota *q, const struct dlock_url *u,
                      const char *key);
/* The server's capacity, as the store read it. */
void dlock__quota_server(struct dlock__quota *q, int64_t capacity);
/* Count n more if that stays within the limit: 1, else 0 (nothing
 * counted).  *held: what was held before. */
int dlock__quota_take(struct dlock__quota *q, int64_t n, int64_t *held);
void dlock__quota_give(struct dlock__quota *q, int64_t n);

#endif
