/*
 * pool.c - idle connections and the retry-once policy (see pool.h).
 *
 * The pool is a stack: the most recently used connection goes out first,
 * so a handle that needs one connection at a time keeps using the same
 * one, and the older idle ones are those a server's idle timeout ends.
 */
#include "pool.h"

#include "clock.h"
#include "errors.h"
#include "iobound.h"
#include "names.h"

void dlock__pool_init(struct dlock__pool *p, const struct dlock__pool_ops *ops,
                      void *ctx, unsigned max_idle)
{
    p->ops = ops;
    p->ctx = ctx;
    p->max_idle =
        max_idle < DLOCK__POOL_MAX_IDLE ? max_idle : DLOCK__POOL_MAX_IDLE;
    p->nidle = 0;
    pthread_mutex_init(&p->mu, NULL);
}

void dlock__pool_destroy(struct dlock__pool *p)
{
    while (p->nidle > 0) {
        p->nidle--;
        p->ops->close(p->ctx, p->idle[p->nidle].conn);
    }
    pthread_mutex_destroy(&p->mu);
}

int dlock__pool_open(struct dlock__pool *p, void **out)
{
    *out = NULL;
    return p->ops->open(p->ctx, out);
}

int dlock__pool_get(struct dlock__pool *p, void **out, int *pooled)
{
    for (;;) {
        void *c = NULL;
        int64_t since = 0;

        pthread_mutex_lock(&p->mu);
        if (p->nidle > 0) {
            p->nidle--;
            c = p->idle[p->nidle].conn;
            since = p->idle[p->nidle].since;
        }
        pthread_mutex_unlock(&p->mu);
        if (c == NULL)
            break;
        if (p->ops->healthy == NULL ||
            p->ops->healthy(p->ctx, c, dlock__now_ms() - since)) {
            if (pooled != NULL)
                *pooled = 1;
            *out = c;
            return DLOCK_OK;
        }
        p->ops->close(p->ctx, c);
    }
    if (pooled != NULL)
        *pooled = 0;
    return dlock__pool_open(p, out);
}

void dlock__pool_put(struct dlock__pool *p, void *c)
{
    if (c == NULL)
        return;
    if (p->ops->healthy != NULL && !p->ops->healthy(p->ctx, c, 0)) {
        p->ops->close(p->ctx, c);
        return;
    }
    pthread_mutex_lock(&p->mu);
    if (p->nidle < p->max_idle) {
        p->idle[p->nidle].conn = c;
        p->idle[p->nidle].since = dlock__now_ms();
        p->nidle++;
        c = NULL;
    }
    pthread_mutex_unlock(&p->mu);
    if (c != NULL)
        p->ops->close(p->ctx, c);
}

void dlock__pool_discard(struct dlock__pool *p, void *c)
{
    if (c != NULL)
        p->ops->close(p->ctx, c);
}

int dlock__pool_run(struct dlock__pool *p, dlock__pool_fn fn, void *arg)
{
    void *c;
    int pooled, dead = 0, rc;

    rc = dlock__pool_get(p, &c, &pooled);
    if (rc != DLOCK_OK)
        return rc;
    rc = fn(c, arg, &dead);
    if (dead && pooled &&
        (dlock__io_deadline == 0 || dlock__now_ms() < dlock__io_deadline)) {
        /* It died while idle: the server never saw the operation.  (Not
         * when the call was for a lease that has ended meanwhile: it is
         * of no use, and a store cut off would only make it wait out a
         * connect timeout.) */
        dlock__pool_discard(p, c);
        rc = dlock__pool_open(p, &c);
        if (rc != DLOCK_OK)
            return rc;
        dead = 0;
        rc = fn(c, arg, &dead);
    }
    if (dead)
        dlock__pool_discard(p, c);
    else
        dlock__pool_put(p, c);
    return rc;
}

/* The names first, then each described on its own: the callback runs
 * without a connection held, so it may call back into the library. */
int dlock__pool_list(struct dlock__pool *p, dlock__pool_fn fn, void *arg,
                     struct dlock__names *names, struct dlock_store *s,
                     int (*describe)(struct dlock_store *, const char *,
                                     dlock_info *),
                     int (*cb)(const dlock_info *, void *), void *payload)
{
    int rc = dlock__pool_run(p, fn, arg);

    if (rc != DLOCK_OK) {
        dlock__names_free(names);
        return rc;
    }
    return dlock__names_report(names, s, describe, cb, payload);
}
