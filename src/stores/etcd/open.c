/*
 * open.c - the etcd store's open and close: the URL, TLS files, the
 * first request (a wrong address or password is reported by open), and
 * letting go of the leases at close.
 *
 * etcd://[user:password@]host[:port][,host[:port]...][?prefix=P]
 *     [&timeout=5s][&connect_timeout=5s]
 * etcds://... over TLS (verification always on): ?cacert=, ?cert=, ?key=.
 */
#include <openssl/err.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "errors.h"
#include "etcd.h"
#include "strutil.h"
#include "url.h"

static int opt_dup(char **dst, const char *v)
{
    if (v == NULL)
        return DLOCK_OK;
    *dst = dlock__strdup(v);
    return *dst != NULL ? DLOCK_OK : dlock__enomem();
}

static int endpoints(struct etcd_store *es, const struct dlock_url *u)
{
    char **hosts = NULL;
    int *ports = NULL, n = 0;
    int rc = dlock__url_hosts(u, ETCD_DEFAULT_PORT, "etcd", &hosts, &ports, &n);

    if (rc == DLOCK_OK && (u->host == NULL || u->host[0] == '\0'))
        rc = dlock__seterr(DLOCK_EINVAL,
                           "expected etcd://host[:port][,...], "
                           "got %s",
                           u->redacted);
    if (rc == DLOCK_OK) {
        es->endpoints = calloc((size_t)n, sizeof(char *));
        if (es->endpoints == NULL)
            rc = dlock__enomem();
    }
    for (int i = 0; rc == DLOCK_OK && i < n; i++) {
        size_t len = strlen(hosts[i]) + 32;
        int v6 = strchr(hosts[i], ':') != NULL;

        /* The host must be a host: nothing libcurl would read as more. */
        if (strpbrk(hosts[i], "/?#@[] \t\r\n") != NULL) {
            rc =
                dlock__seterr(DLOCK_EINVAL, "bad etcd host in %s", u->redacted);
            break;
        }
        es->endpoints[i] = malloc(len);
        if (es->endpoints[i] == NULL) {
            rc = dlock__enomem();
            break;
        }
        snprintf(es->endpoints[i], len, "%s://%s%s%s:%d",
                 es->tls ? "https" : "http", v6 ? "[" : "", hosts[i],
                 v6 ? "]" : "", ports[i]);
        es->nendpoints = i + 1;
    }
    for (int i = 0; i < n; i++)
        free(hosts[i]);
    free(hosts);
    free(ports);
    return rc;
}

/* OpenSSL's pass phrase callback: never a prompt.  Left to OpenSSL's
 * default, an encrypted key makes it print "Enter PEM pass phrase:" and
 * read the terminal (the library never prints, never reads stdin), past
 * ?timeout=.  Returns no pass phrase and says it was asked. */
static int no_pass_phrase(char *buf, int size, int rwflag, void *asked)
{
    (void)buf;
    (void)size;
    (void)rwflag;
    *(int *)asked = 1;
    return 0;
}

/* ?key= is read here once, with no pass phrase: an encrypted key is
 * refused at open with the Redis store's words (libcurl would hand it to
 * OpenSSL's prompting default on every new connection).  Any other
 * trouble with the file is libcurl's to report, as before. */
static int check_key(const char *key, const char *url)
{
    FILE *f = fopen(key, "re");
    EVP_PKEY *k;
    int asked = 0;

    if (f == NULL)
        return DLOCK_OK;
    k = PEM_read_PrivateKey(f, NULL, no_pass_phrase, &asked);
    fclose(f);
    EVP_PKEY_free(k);
    ERR_clear_error();
    return k == NULL && asked ? dlock__encrypted_key(key, url) : DLOCK_OK;
}

/* A request every member answers without a quorum: the address, the
 * credentials and the cluster id are checked at open. */
static int hello(struct etcd_store *es)
{
    json_object *body = json_object_new_object(), *reply = NULL;
    int rc;

    if (body == NULL)
        return dlock__enomem();
    rc = dlock__etcd_post(es, "/v3/maintenance/status", body, ETCD_RETRY_SAFE,
                          &reply, NULL);
    json_object_put(body);
    json_object_put(reply);
    return rc;
}

int dlock__etcd_open(struct dlock_store **out, const struct dlock_url *u)
{
    static const char *const known[] = {
        "prefix", "timeout", "connect_timeout", "cacert", "cert", "key", NULL};
    static const char *const tls_only[] = {"cacert", "cert", "key"};
    struct etcd_store *es;
    const char *v;
    int rc;

    rc = dlock__url_check_params(u, known);
    if (rc != DLOCK_OK)
        return rc;
    if (u->path != NULL && u->path[0] != '\0' && strcmp(u->path, "/") != 0)
        return dlock__seterr(DLOCK_EINVAL,
                             "an etcd URL has no path (a key prefix is "
                             "?prefix=): %s",
                             u->redacted);
    es = calloc(1, sizeof(*es));
    if (es == NULL)
        return dlock__enomem();
    pthread_mutex_init(&es->mu, NULL);
    es->url = u->redacted;
    es->tls = strcmp(u->scheme, "etcds") == 0;
    for (size_t i = 0; !es->tls && i < sizeof(tls_only) / sizeof(*tls_only);
         i++)
        if (dlock__url_param(u, tls_only[i]) != NULL) {
            rc = dlock__seterr(DLOCK_EINVAL,
                               "?%s= is for TLS, which is spelled etcds://: %s",
                               tls_only[i], u->redacted);
            goto fail;
        }
    es->timeout_ms = ETCD_DEFAULT_TIMEOUT_MS;
    es->connect_timeout_ms = ETCD_DEFAULT_TIMEOUT_MS;
    rc = dlock__url_param_ms(u, "timeout", 1000, &es->timeout_ms);
    if (rc == DLOCK_OK)
        rc = dlock__url_param_ms(u, "connect_timeout", 1000,
                                 &es->connect_timeout_ms);
    if (rc != DLOCK_OK)
        goto fail;
    if (es->timeout_ms <= 0 || es->connect_timeout_ms <= 0) {
        rc = dlock__seterr(DLOCK_EINVAL, "timeouts must be positive in %s",
                           u->redacted);
        goto fail;
    }
    v = dlock__url_param(u, "prefix");
    es->prefix = dlock__strdup(v != NULL ? v : "");
    if (es->prefix == NULL) {
        rc = dlock__enomem();
        goto fail;
    }
    es->prefix_len = strlen(es->prefix);
    if (dlock__utf8_valid((const unsigned char *)es->prefix, es->prefix_len) ==
        0) {
        rc = dlock__seterr(DLOCK_EINVAL, "prefix is not UTF-8 in %s",
                           u->redacted);
        goto fail;
    }
    rc = endpoints(es, u);
    if (rc == DLOCK_OK)
        rc = opt_dup(&es->cacert, dlock__url_param(u, "cacert"));
    if (rc == DLOCK_OK)
        rc = opt_dup(&es->cert, dlock__url_param(u, "cert"));
    if (rc == DLOCK_OK)
        rc = opt_dup(&es->key, dlock__url_param(u, "key"));
    if (rc == DLOCK_OK && es->key != NULL)
        rc = check_key(es->key, u->redacted);
    /* "etcd://:pw@h": an empty user is no user (and then no password). */
    if (rc == DLOCK_OK && u->user != NULL && u->user[0] != '\0')
        rc = opt_dup(&es->user, u->user);
    if (rc == DLOCK_OK)
        rc = opt_dup(&es->password, u->password);
    if (rc != DLOCK_OK)
        goto fail;
    if (es->password != NULL && es->user == NULL) {
        rc = dlock__seterr(DLOCK_EINVAL, "a password needs a user in %s",
                           u->redacted);
        goto fail;
    }
    es->secrets_owned = dlock__url_secrets(u->raw);
    es->secrets = (const char *const *)es->secrets_owned;
    rc = dlock__etcd_http_init(es);
    if (rc == DLOCK_OK && es->user != NULL)
        rc = dlock__etcd_authenticate(es);
    if (rc == DLOCK_OK)
        rc = hello(es);
    if (rc != DLOCK_OK)
        goto fail;
    *out = &es->base;
    return DLOCK_OK;
fail:
    dlock__etcd_close(&es->base);
    return rc;
}

void dlock__etcd_close(struct dlock_store *s)
{
    struct etcd_store *es = (struct etcd_store *)s;

    if (es == NULL)
        return;
    dlock__etcd_lease_free_all(es);
    dlock__etcd_http_free(es);
    for (int i = 0; i < es->nendpoints; i++)
        free(es->endpoints[i]);
    free(es->endpoints);
    free(es->cacert);
    free(es->cert);
    free(es->key);
    free(es->user);
    free(es->password);
    free(es->prefix);
    free(es->token);
    dlock__secrets_free(es->secrets_owned);
    pthread_mutex_destroy(&es->mu);
    free(es);
}
