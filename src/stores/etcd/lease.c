/*
 * lease.c - the etcd store's leases: one per lease length, shared by the
 * handle's locks (held or waiting) of that length.
 *
 * A lease's TTL is the lock's, rounded up to whole seconds (as etcd
 * counts).  The server keeps a key on lease l at least until
 * l->refreshed + l->granted_ms, refreshed being when the grant or
 * keepalive that etcd answered was *sent* (etcd starts counting later).
 * A lock's lease end is never later than that bound (acquire.c lowers it
 * when it takes a lease refreshed up to ETCD_REUSE_SLACK_MS ago; its
 * renewal then comes sooner).  So on the hot path a shared lease is
 * refreshed about once a second, and the uncontended acquire + release
 * stays two round trips.  A dead holder's key goes at most its TTL
 * (rounded up to seconds) after its last refresh, plus etcd's own tick.
 *
 * A keepalive answered without a TTL means etcd has no such lease (it
 * expired, or was revoked): the lease is dead, and every key on it gone.
 * A lease whose put may have landed unseen (the reply was lost) is
 * tainted: no new lock takes it, and it is revoked, with whatever stray
 * key it carries, once the last lock on it lets go.
 */
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "errors.h"
#include "etcd.h"
#include "iobound.h"

int64_t dlock__etcd_lease_until(const struct etcd_lease *l)
{
    return l->refreshed + l->granted_ms;
}

static int keepalive(struct etcd_store *es, int64_t id, int64_t *ttl_s)
{
    json_object *body = dlock__etcd_body_id(id), *reply = NULL, *res;
    int rc;

    if (body == NULL)
        return dlock__enomem();
    rc = dlock__etcd_post(es, "/v3/lease/keepalive", body, ETCD_RETRY_SAFE,
                          &reply, NULL);
    json_object_put(body);
    if (rc != DLOCK_OK)
        return rc;
    /* {"result": {"ID", "TTL"}}: no TTL (0, left out) is a dead lease. */
    *ttl_s = json_object_object_get_ex(reply, "result", &res)
                 ? dlock__etcd_ttl(res, "TTL")
                 : 0;
    json_object_put(reply);
    return DLOCK_OK;
}

int dlock__etcd_lease_cover(struct etcd_store *es, struct etcd_lease *l,
                            int64_t until)
{
    int64_t sent, ttl_s = 0;
    int rc;

    pthread_mutex_lock(&es->mu);
    rc = l->dead                               ? DLOCK_LOST
         : until <= dlock__etcd_lease_until(l) ? DLOCK_OK
                                               : 1;
    pthread_mutex_unlock(&es->mu);
    if (rc != 1)
        return rc;
    sent = dlock__now_ms();
    rc = keepalive(es, l->id, &ttl_s);
    if (rc != DLOCK_OK)
        return rc;
    pthread_mutex_lock(&es->mu);
    if (ttl_s <= 0) {
        l->dead = 1;
        rc = DLOCK_LOST;
    } else if (sent > l->refreshed) {
        l->refreshed = sent;
        l->granted_ms = ttl_s * 1000;
    }
    if (rc == DLOCK_OK && until > dlock__etcd_lease_until(l))
        rc =
            dlock__seterr(DLOCK_ESTORE,
                          "etcd renewed lease %llx for %lld s, less than "
                          "asked (%s)",
                          (unsigned long long)l->id, (long long)ttl_s, es->url);
    pthread_mutex_unlock(&es->mu);
    return rc;
}

int dlock__etcd_lease_grant(struct etcd_store *es, int64_t ttl_s, int64_t *id,
                            int64_t *granted_s)
{
    json_object *body = dlock__etcd_body_ttl(ttl_s), *reply = NULL;
    int rc;

    *id = *granted_s = 0;
    if (body == NULL)
        return dlock__enomem();
    /* Sent twice, a grant leaves a lease nobody uses: it expires. */
    rc = dlock__etcd_post(es, "/v3/lease/grant", body, ETCD_RETRY_SAFE, &reply,
                          NULL);
    json_object_put(body);
    if (rc == DLOCK_OK) {
        *id = dlock__etcd_int(reply, "ID");
        *granted_s = dlock__etcd_ttl(reply, "TTL");
        if (*id == 0)
            rc = dlock__seterr(DLOCK_ESTORE, "etcd granted no lease (%s)",
                               es->url);
    }
    json_object_put(reply);
    return rc;
}

int dlock__etcd_lease_ttl(struct etcd_store *es, int64_t id, int64_t *left_s,
                          int64_t *granted_s)
{
    json_object *body = dlock__etcd_body_id(id), *reply = NULL;
    int rc;

    *left_s = -1;
    *granted_s = 0;
    if (body == NULL)
        return dlock__enomem();
    rc = dlock__etcd_post(es, "/v3/lease/timetolive", body, ETCD_RETRY_SAFE,
                          &reply, NULL);
    json_object_put(body);
    if (rc == DLOCK_OK) {
        *left_s = dlock__etcd_ttl(reply, "TTL");
        *granted_s = dlock__etcd_ttl(reply, "grantedTTL");
    }
    json_object_put(reply);
    return rc;
}

static int grant(struct etcd_store *es, int64_t ttl_s, struct etcd_lease **out)
{
    struct etcd_lease *l;
    int64_t sent = dlock__now_ms(), id, granted;
    int rc = dlock__etcd_lease_grant(es, ttl_s, &id, &granted);

    if (rc != DLOCK_OK)
        return rc;
    if (granted < ttl_s)
        return dlock__seterr(DLOCK_ESTORE,
                             "etcd granted lease %llx for %lld s, asked %lld "
                             "s (%s)",
                             (unsigned long long)id, (long long)granted,
                             (long long)ttl_s, es->url);
    l = calloc(1, sizeof(*l));
    if (l == NULL)
        return dlock__enomem();
    l->id = id;
    l->ttl_s = ttl_s;
    l->granted_ms = granted * 1000;
    l->refreshed = sent;
    *out = l;
    return DLOCK_OK;
}

static int avoided(struct etcd_lease *l, struct etcd_lease *const *avoid,
                   size_t navoid)
{
    for (size_t i = 0; i < navoid; i++)
        if (avoid[i] == l)
            return 1;
    return 0;
}

int dlock__etcd_lease_get(struct etcd_store *es, int64_t ttl_ms, int own,
                          struct etcd_lease *const *avoid, size_t navoid,
                          struct etcd_lease **out)
{
    int64_t ttl_s = ETCD_TTL_S(ttl_ms);
    int64_t until = dlock__now_ms() + ttl_ms - ETCD_REUSE_SLACK_MS(ttl_ms);
    struct etcd_lease *l, *fresh = NULL;
    int rc;

    for (; !own;) {
        pthread_mutex_lock(&es->mu);
        for (l = es->leases; l != NULL; l = l->next)
            if (!l->dead && !l->tainted && !l->own && l->ttl_s == ttl_s &&
                !avoided(l, avoid, navoid))
                break;
        if (l != NULL)
            l->refs++;
        pthread_mutex_unlock(&es->mu);
        if (l == NULL)
            break;
        rc = dlock__etcd_lease_cover(es, l, until);
        if (rc == DLOCK_OK) {
            *out = l;
            return DLOCK_OK;
        }
        dlock__etcd_lease_put(es, l);
        if (rc != DLOCK_LOST)
            return rc;
        /* It was dead: look again, then grant. */
    }
    rc = grant(es, ttl_s, &fresh);
    if (rc != DLOCK_OK)
        return rc;
    fresh->refs = 1;
    /* A lease of one lock's own is never shared; at the lock's end it is
     * forgotten (keyless, it expires by itself: no revoke on the path of
     * a release), or revoked if retired (its key's fate unknown). */
    fresh->own = own;
    pthread_mutex_lock(&es->mu);
    fresh->next = es->leases;
    es->leases = fresh;
    pthread_mutex_unlock(&es->mu);
    *out = fresh;
    return DLOCK_OK;
}

void dlock__etcd_lease_revoke(struct etcd_store *es, int64_t id,
                              int64_t deadline)
{
    json_object *body = dlock__etcd_body_id(id), *reply = NULL;

    if (body == NULL)
        return;
    /* Best effort: a lease not revoked expires by itself. */
    (void)dlock__etcd_post_until(es, "/v3/lease/revoke", body, ETCD_RETRY_SAFE,
                                 deadline, &reply, NULL);
    json_object_put(reply);
    json_object_put(body);
}

void dlock__etcd_lease_retire(struct etcd_store *es, struct etcd_lease *l)
{
    pthread_mutex_lock(&es->mu);
    l->tainted = 1;
    pthread_mutex_unlock(&es->mu);
}

void dlock__etcd_lease_put(struct etcd_store *es, struct etcd_lease *l)
{
    struct etcd_lease **pp;
    int drop = 0, live = 0;

    pthread_mutex_lock(&es->mu);
    if (l->refs > 0)
        l->refs--;
    if (l->refs == 0 && (l->dead || l->tainted || l->own)) {
        for (pp = &es->leases; *pp != NULL; pp = &(*pp)->next)
            if (*pp == l) {
                *pp = l->next;
                break;
            }
        drop = 1;
        live = !l->dead && l->tainted;
    }
    pthread_mutex_unlock(&es->mu);
    if (!drop)
        return;
    /* Best effort, and at most a second: the call that retired it may
     * have spent the caller's whole timeout already. */
    if (live)
        dlock__etcd_lease_revoke(
            es, l->id,
            dlock__now_ms() +
                dlock__io_bound(es->timeout_ms < 1000 ? es->timeout_ms : 1000));
    free(l);
}

void dlock__etcd_lease_free_all(struct etcd_store *es)
{
    int64_t deadline = dlock__now_ms() + es->timeout_ms;

    while (es->leases != NULL) {
        struct etcd_lease *l = es->leases;

        es->leases = l->next;
        /* Nothing is held on it any more (close comes after every
         * release); revoking ends it now rather than at its TTL. */
        if (!l->dead && dlock__remaining_ms(deadline) > 0)
            dlock__etcd_lease_revoke(es, l->id, deadline);
        free(l);
    }
}
