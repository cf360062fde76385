/*
 * probe.c - the Redis store's answer to dlock_store_probe() (`dlock
 * check`): TIME on the command connection (the master that serves slot
 * 0 of a cluster), and that connection's TLS session: its protocol and
 * the server certificate's notAfter, read from the SSL object this
 * store made itself (rconn.c).  Redis has no tables.
 */
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "link.h"
#include "rconn.h"
#include "topology.h"

struct probe_call {
    struct redis_store *rs;
    dlock_probe *out;
};

/* notAfter of the peer's certificate, ms since the epoch; 0 if unknown. */
static int64_t not_after_ms(SSL *ssl)
{
    X509 *cert;
    struct tm tm;
    int64_t ms = 0;

#if OPENSSL_VERSION_NUMBER >= 0x30000000L
    cert = SSL_get1_peer_certificate(ssl);
#else
    cert = SSL_get_peer_certificate(ssl);
#endif
    if (cert == NULL)
        return 0;
    memset(&tm, 0, sizeof(tm));
    if (ASN1_TIME_to_tm(X509_get0_notAfter(cert), &tm) == 1)
        ms = (int64_t)timegm(&tm) * 1000;
    X509_free(cert);
    return ms;
}

static int probe_fn(void *conn, void *arg, int *dead)
{
    struct probe_call *k = arg;
    dlock_probe *out = k->out;
    struct rconn *c = conn;
    const char *argv[1] = {"TIME"};
    const size_t lens[1] = {4};
    redisReply *r = NULL;
    int64_t t0, t1;
    int rc;

    t0 = dlock__wall_ms();
    rc = dlock__redis_send(k->rs, c, 1, argv, lens, &r, dead);
    t1 = dlock__wall_ms();
    if (rc != DLOCK_OK)
        return rc;
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
        r->element[0]->type == REDIS_REPLY_STRING &&
        r->element[1]->type == REDIS_REPLY_STRING) {
        /* Whatever the server says: a reading only between the epoch
         * and the year 9999 (the product of a huge one overflowed). */
        long long sec = strtoll(r->element[0]->str, NULL, 10);
        long long usec = strtoll(r->element[1]->str, NULL, 10);

        if (sec > 0 && sec <= 253402300799LL && usec >= 0 && usec < 1000000)
            out->server_ms = sec * 1000 + usec / 1000;
        out->host_ms = t0 + (t1 - t0) / 2;
        out->rtt_ms = t1 - t0;
    }
    freeReplyObject(r);
    out->tls = c->ssl != NULL;
    if (c->ssl != NULL) {
        snprintf(out->tls_version, sizeof(out->tls_version), "%s",
                 SSL_get_version(c->ssl));
        out->cert_not_after_ms = not_after_ms(c->ssl);
    }
    return DLOCK_OK;
}

int dlock__redis_probe(struct dlock_store *s, dlock_probe *out)
{
    struct probe_call k = {(struct redis_store *)s, out};
    int rc;

    out->tables_ok = -1;
    snprintf(out->tables, sizeof(out->tables),
             "no tables (keys; the Lua scripts are loaded at connect)");
    rc = dlock__redis_exec(k.rs, 0, probe_fn, &k, 1);
    return rc;
}
