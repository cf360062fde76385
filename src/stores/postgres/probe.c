/*
 * probe.c - the PostgreSQL store's answer to dlock_store_probe() (`dlock
 * check`): the server's clock and dlock's objects (sql/probe.sql), and
 * whether the connection is TLS (libpq's PQsslInUse, PQsslAttribute),
 * with the server certificate's notAfter from libpq's OpenSSL object
 * (PQsslStruct(conn, "OpenSSL"); NULL for a libpq built with another TLS
 * library: then it stays unknown).
 */
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "pg.h"

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

struct probe_call {
    struct pg_store *ps;
    dlock_probe *out;
};

static int probe_fn(void *conn, void *arg, int *dead)
{
    struct probe_call *k = arg;
    dlock_probe *out = k->out;
    PGconn *c = conn;
    PGresult *res = NULL;
    const char *v;
    int64_t t0, t1;
    int rc;

    t0 = dlock__wall_ms();
    rc = dlock__pg_run(c, k->ps->base.url, "reading the server's clock",
                       k->ps->text.probe, 0, NULL, k->ps->op_timeout_ms, &res,
                       NULL);
    t1 = dlock__wall_ms();
    *dead = rc == DLOCK_EUNAVAIL;
    if (rc != DLOCK_OK)
        return rc;
    out->server_ms = dlock__pg_col_i64(res, 0, 0, 0);
    out->host_ms = t0 + (t1 - t0) / 2;
    out->rtt_ms = t1 - t0;
    v = PQgetvalue(res, 0, 1);
    if (v != NULL && v[0] != '\0') {
        out->tables_ok = 0;
        snprintf(out->tables, sizeof(out->tables), "missing: %s", v);
    } else {
        const char *runs = PQgetvalue(res, 0, 2);

        out->tables_ok = 1;
#define CORE "dlock_locks, dlock_fences, dlock_held, dlock_fence_seq"
        if (runs != NULL && runs[0] != '\0')
            snprintf(out->tables, sizeof(out->tables),
                     CORE " present; %s not made yet (the first run, "
                          "election, suspension or keep setting makes "
                          "them)",
                     runs);
        else
            snprintf(out->tables, sizeof(out->tables),
                     CORE ", dlock_runs, dlock_run_names, dlock_leaders, "
                          "dlock_suspensions present");
#undef CORE
    }
    PQclear(res);
    out->tls = PQsslInUse(c) ? 1 : 0;
    if (out->tls) {
        const char *proto = PQsslAttribute(c, "protocol");
        SSL *ssl = PQsslStruct(c, "OpenSSL");

        if (proto != NULL)
            snprintf(out->tls_version, sizeof(out->tls_version), "%s", proto);
        if (ssl != NULL)
            out->cert_not_after_ms = not_after_ms(ssl);
    }
    return DLOCK_OK;
}

int dlock__pg_probe(struct dlock_store *s, dlock_probe *out)
{
    struct probe_call k = {(struct pg_store *)s, out};

    return dlock__pool_run(&k.ps->pool, probe_fn, &k);
}
