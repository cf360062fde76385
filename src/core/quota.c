/*
 * quota.c - a store handle's share of a server-wide resource (quota.h).
 */
#include "quota.h"

#include "dlock.h"
#include "errors.h"
#include "url.h"

int dlock__quota_init(struct dlock__quota *q, const struct dlock_url *u,
                      const char *key)
{
    int64_t max = -1;
    int rc = dlock__url_param_count(u, key, &max);

    q->used = 0;
    q->server = 0;
    q->is_auto = max < 0;
    q->max = max < 0 ? 0 : max; /* auto: no limit until the server says */
    return rc;
}

void dlock__quota_server(struct dlock__quota *q, int64_t capacity)
{
    __atomic_store_n(&q->server, capacity, __ATOMIC_RELAXED);
    if (q->is_auto)
        __atomic_store_n(&q->max, capacity / 2, __ATOMIC_RELAXED);
}

int dlock__quota_take(struct dlock__quota *q, int64_t n, int64_t *held)
{
    int64_t max = __atomic_load_n(&q->max, __ATOMIC_RELAXED);
    int64_t now = __atomic_add_fetch(&q->used, n, __ATOMIC_RELAXED);

    *held = now - n;
    if (max == 0 || now <= max)
        return 1;
    __atomic_sub_fetch(&q->used, n, __ATOMIC_RELAXED);
    return 0;
}

void dlock__quota_give(struct dlock__quota *q, int64_t n)
{
    __atomic_sub_fetch(&q->used, n, __ATOMIC_RELAXED);
}
