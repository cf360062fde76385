/*
 * rconn.c - the transport, the store's bottom layer (redis.h): one
 * connection, a socket (TCP or unix), TLS on it with OpenSSL for
 * rediss://, hiredis's command formatting and reply reader on top
 * (rconn.h says why).  It knows nothing of the store's handle: link.c,
 * the layer above, does.
 *
 * TLS: the server's certificate must chain to ?cacert= (else the
 * system's trusted CAs) and name the host connected to (an address the
 * sentinels or the cluster give is checked as an IP address) or ?sni=
 * when given; there is no way to turn either check off.  ?cert= and ?key=
 * present a client certificate to a server that asks for one.  The SSL
 * reads and writes through a BIO of ours that uses send(MSG_NOSIGNAL)
 * and recv() on the socket, so a server gone away never raises SIGPIPE
 * and the listener can read without blocking (dontwait).
 *
 * OpenSSL's error queue is cleared after every failure (ssl_reason), so
 * it is empty before each call, as SSL_get_error() wants, without
 * clearing it before each: that would give every thread that reads or
 * writes a per-thread error state, which a fork child's exit reports as
 * leaked (the threads that owned it are gone).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "clock.h"
#include "errors.h"
#include "rconn.h"
#include "strutil.h"
#include "url.h"

struct rtls {
    SSL_CTX *ctx;
    char *sni;       /* the name to send and to verify, or NULL: the host */
    int client_cert; /* ?cert= given */
};

static void seterr(struct rconn *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void seterr(struct rconn *c, const char *fmt, ...)
{
    va_list ap;

    if (c->err)
        return; /* the first cause is the one worth telling */
    c->err = 1;
    va_start(ap, fmt);
    vsnprintf(c->errstr, sizeof(c->errstr), fmt, ap);
    va_end(ap);
}

/* What OpenSSL's error queue says last, or "" (the queue is cleared). */
static const char *ssl_reason(char *buf, size_t len)
{
    unsigned long e = ERR_peek_last_error();

    buf[0] = '\0';
    if (e != 0) {
        const char *r = ERR_reason_error_string(e);

        if (r != NULL)
            snprintf(buf, len, "%s", r);
        else
            ERR_error_string_n(e, buf, len);
    }
    ERR_clear_error();
    return buf;
}

/* --- the settings ---------------------------------------------------- */

static int file_error(const char *what, const char *path, const char *url)
{
    char why[200];
    int eno = errno;

    ssl_reason(why, sizeof(why));
    if (access(path, R_OK) != 0)
        snprintf(why, sizeof(why), "%s", strerror(errno));
    else if (strcmp(why, "system lib") == 0)
        snprintf(why, sizeof(why), "%s", strerror(eno));
    return dlock__seterr(DLOCK_EINVAL, "cannot use %s %s: %s (%s)", what, path,
                         why[0] ? why : "unreadable", url);
}

/* OpenSSL's pass phrase callback for the client key: never a prompt.
 * Left to OpenSSL's default, an encrypted key makes it print "Enter PEM
 * pass phrase:" and read the terminal (the library never prints, never
 * reads stdin).  Returns no pass phrase and says it was asked. */
static int no_pass_phrase(char *buf, int size, int rwflag, void *asked)
{
    (void)buf;
    (void)size;
    (void)rwflag;
    if (asked != NULL)
        *(int *)asked = 1;
    return 0;
}

int dlock__rtls_new(struct rtls **out, const char *cacert, const char *cert,
                    const char *key, const char *sni, const char *url)
{
    struct rtls *t;
    int rc = DLOCK_OK;

    *out = NULL;
    if ((cert == NULL) != (key == NULL))
        return dlock__seterr(DLOCK_EINVAL,
                             "?cert= and ?key= go together "
                             "(a client certificate and its key): %s",
                             url);
    if (sni != NULL && sni[0] == '\0')
        return dlock__seterr(DLOCK_EINVAL, "empty ?sni= in %s", url);
    t = calloc(1, sizeof(*t));
    if (t == NULL)
        return dlock__enomem();
    ERR_clear_error();
    t->ctx = SSL_CTX_new(TLS_client_method());
    if (t->ctx == NULL || (sni != NULL && (t->sni = strdup(sni)) == NULL)) {
        dlock__rtls_free(t);
        return dlock__enomem();
    }
    SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(t->ctx, SSL_VERIFY_PEER, NULL);
    SSL_CTX_set_mode(t->ctx, SSL_MODE_AUTO_RETRY);
    if (cacert != NULL) {
        if (SSL_CTX_load_verify_locations(t->ctx, cacert, NULL) != 1)
            rc = file_error("the CA certificates", cacert, url);
    } else if (SSL_CTX_set_default_verify_paths(t->ctx) != 1) {
        rc = file_error("the system's CA certificates", "(default paths)", url);
    }
    if (rc == DLOCK_OK && cert != NULL) {
        int asked = 0;

        SSL_CTX_set_default_passwd_cb(t->ctx, no_pass_phrase);
        SSL_CTX_set_default_passwd_cb_userdata(t->ctx, &asked);
        if (SSL_CTX_use_certificate_chain_file(t->ctx, cert) != 1)
            rc = file_error("the client certificate", cert, url);
        else if (SSL_CTX_use_PrivateKey_file(t->ctx, key, SSL_FILETYPE_PEM) !=
                 1) {
            if (asked) {
                ERR_clear_error();
                rc = dlock__encrypted_key(key, url);
            } else
                rc = file_error("the client key", key, url);
        } else if (SSL_CTX_check_private_key(t->ctx) != 1)
            rc = file_error("the client key", key, url);
        SSL_CTX_set_default_passwd_cb_userdata(t->ctx, NULL);
    }
    if (rc != DLOCK_OK) {
        dlock__rtls_free(t);
        return rc;
    }
    t->client_cert = cert != NULL;
    *out = t;
    return DLOCK_OK;
}

void dlock__rtls_free(struct rtls *t)
{
    if (t == NULL)
        return;
    SSL_CTX_free(t->ctx);
    free(t->sni);
    free(t);
}

/* --- our BIO: the socket, without SIGPIPE ---------------------------- */

static int bio_write(BIO *b, const char *buf, int len)
{
    struct rconn *c = BIO_get_data(b);
    ssize_t n;

    BIO_clear_retry_flags(b);
    do
        n = send(c->fd, buf, (size_t)len, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        BIO_set_retry_write(b);
    return (int)n;
}

static int bio_read(BIO *b, char *buf, int len)
{
    struct rconn *c = BIO_get_data(b);
    ssize_t n;

    BIO_clear_retry_flags(b);
    do
        n = recv(c->fd, buf, (size_t)len, c->dontwait ? MSG_DONTWAIT : 0);
    while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        BIO_set_retry_read(b);
    return (int)n;
}

static long bio_ctrl(BIO *b, int cmd, long num, void *ptr)
{
    (void)b;
    (void)num;
    (void)ptr;
    return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

static int bio_create(BIO *b)
{
    BIO_set_init(b, 1);
    return 1;
}

static BIO_METHOD *bio_method;

static void bio_method_init(void)
{
    BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK,
                                 "dlock redis socket");

    if (m == NULL)
        return;
    if (BIO_meth_set_write(m, bio_write) != 1 ||
        BIO_meth_set_read(m, bio_read) != 1 ||
        BIO_meth_set_ctrl(m, bio_ctrl) != 1 ||
        BIO_meth_set_create(m, bio_create) != 1) {
        BIO_meth_free(m);
        return;
    }
    bio_method = m;
}

/* --- connect --------------------------------------------------------- */

/* Wait (poll) for fd to be ready for ev until deadline (monotonic ms):
 * 1 ready, 0 timed out, -1 error (errno). */
static int wait_fd(int fd, short ev, int64_t deadline)
{
    for (;;) {
        struct pollfd p = {fd, ev, 0};
        int64_t left = deadline - dlock__now_ms();
        int n;

        if (left <= 0)
            return 0;
        n = poll(&p, 1, left > 1000000 ? 1000000 : (int)left);
        if (n < 0 && errno == EINTR)
            continue;
        return n < 0 ? -1 : n > 0;
    }
}

static int set_blocking(int fd, int on)
{
    int fl = fcntl(fd, F_GETFL);

    if (fl < 0)
        return -1;
    fl = on ? fl & ~O_NONBLOCK : fl | O_NONBLOCK;
    return fcntl(fd, F_SETFL, fl);
}

/* A non-blocking connect of a new socket to addr within the deadline:
 * the fd, or -1 with errno (ETIMEDOUT when out of time). */
static int connect_addr(int family, const struct sockaddr *addr, socklen_t alen,
                        int64_t deadline)
{
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int err = 0, w;
    socklen_t elen = sizeof(err);

    if (fd < 0)
        return -1;
    if (connect(fd, addr, alen) == 0)
        return fd;
    if (errno != EINPROGRESS) {
        err = errno;
        goto fail;
    }
    w = wait_fd(fd, POLLOUT, deadline);
    if (w <= 0) {
        err = w == 0 ? ETIMEDOUT : errno;
        goto fail;
    }
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) != 0)
        err = errno;
    if (err == 0)
        return fd;
fail:
    close(fd);
    errno = err;
    return -1;
}

static void connect_tcp(struct rconn *c, const char *host, int port,
                        int64_t deadline)
{
    struct addrinfo hints, *res = NULL, *ai;
    char ports[16];
    int rv, err = 0;

    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    snprintf(ports, sizeof(ports), "%d", port);
    rv = getaddrinfo(host, ports, &hints, &res);
    if (rv != 0) {
        seterr(c, "%s", gai_strerror(rv));
        return;
    }
    for (ai = res; ai != NULL; ai = ai->ai_next) {
        c->fd =
            connect_addr(ai->ai_family, ai->ai_addr, ai->ai_addrlen, deadline);
        if (c->fd >= 0)
            break;
        err = errno;
    }
    freeaddrinfo(res);
    if (c->fd < 0) {
        seterr(c, "%s",
               err == ETIMEDOUT ? "Connection timed out" : strerror(err));
        return;
    }
    rv = 1;
    (void)setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &rv, sizeof(rv));
}

static void connect_unix(struct rconn *c, const char *path, int64_t deadline)
{
    struct sockaddr_un sa;

    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof(sa.sun_path)) {
        seterr(c, "socket path too long");
        return;
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    c->fd = connect_addr(AF_UNIX, (const struct sockaddr *)&sa, sizeof(sa),
                         deadline);
    if (c->fd < 0)
        seterr(c, "%s",
               errno == ETIMEDOUT ? "Connection timed out" : strerror(errno));
}

/* Is s an IP address (v4 or v6)? */
static int is_ip(const char *s)
{
    unsigned char buf[sizeof(struct in6_addr)];

    return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

/* Why the handshake (or a read or write) failed, in words. */
static void tls_error(struct rconn *c, const char *what, int ret, int eno)
{
    SSL *ssl = c->ssl;
    char why[200];
    long v = SSL_get_verify_result(ssl);
    int e = SSL_get_error(ssl, ret);

    ssl_reason(why, sizeof(why));
    if (v != X509_V_OK)
        seterr(c, "TLS %s: the server's certificate was refused: %s", what,
               X509_verify_cert_error_string(v));
    else if (e == SSL_ERROR_SSL && strstr(why, "certificate required"))
        seterr(c,
               "TLS %s: %s: the server wants a client certificate "
               "(?cert= and ?key=)",
               what, why);
    else if (e == SSL_ERROR_SSL && strstr(why, "wrong version number"))
        seterr(c, "TLS %s: %s (not a TLS port?)", what, why);
    else if (e == SSL_ERROR_SSL)
        seterr(c, "TLS %s: %s", what, why[0] ? why : "protocol error");
    else if (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && eno == 0))
        seterr(c, "TLS %s: the server closed the connection", what);
    else if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
        seterr(c, "TLS %s: timed out", what);
    else
        seterr(c, "TLS %s: %s", what, strerror(eno ? eno : EIO));
    /* TLS 1.3 checks the client's certificate after the client's side
     * of the handshake is done: a server that wants one (or refuses the
     * one given) sends an alert and closes, and a write that meets the
     * closed connection first sees only the reset. */
    if (!c->answered && strcmp(what, "handshake") != 0 && e != SSL_ERROR_SSL &&
        e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
        size_t n = strlen(c->errstr);

        snprintf(c->errstr + n, sizeof(c->errstr) - n, "%s",
                 c->client_cert ? " (did the server refuse the client "
                                  "certificate?)"
                                : " (does the server want a client "
                                  "certificate? ?cert= and ?key=)");
    }
}

static void handshake(struct rconn *c, const struct rtls *t, const char *host,
                      int64_t deadline)
{
    const char *name = t->sni != NULL ? t->sni : host;
    SSL *ssl;
    BIO *bio;

    ERR_clear_error();
    c->client_cert = t->client_cert;
    c->ssl = ssl = SSL_new(t->ctx);
    bio = bio_method != NULL ? BIO_new(bio_method) : NULL;
    if (ssl == NULL || bio == NULL) {
        BIO_free(bio);
        seterr(c, "TLS: out of memory");
        return;
    }
    BIO_set_data(bio, c);
    SSL_set_bio(ssl, bio, bio);
    /* The name the certificate must have: an address is checked against
     * the certificate's IP addresses, a name against its DNS names (and
     * sent as SNI). */
    if (t->sni == NULL && is_ip(name)) {
        if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name) != 1) {
            seterr(c, "TLS: bad address %s", name);
            return;
        }
    } else {
        SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
        if (SSL_set_tlsext_host_name(ssl, name) != 1 ||
            SSL_set1_host(ssl, name) != 1) {
            seterr(c, "TLS: bad host name %s", name);
            return;
        }
    }
    for (;;) {
        int ret = SSL_connect(ssl), e, w;

        if (ret == 1)
            return;
        e = SSL_get_error(ssl, ret);
        if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
            tls_error(c, "handshake", ret, errno);
            return;
        }
        w = wait_fd(c->fd, e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT,
                    deadline);
        if (w <= 0) {
            /* A plaintext server reads the ClientHello as the start of
             * a command and waits for the rest. */
            seterr(c, "TLS handshake: %s",
                   w == 0 ? "timed out (does the server speak TLS on "
                            "that port?)"
                          : strerror(errno));
            return;
        }
    }
}

static pthread_once_t bio_once = PTHREAD_ONCE_INIT;

struct rconn *dlock__rconn_connect(const struct rtls *tls, const char *host,
                                   int port, const char *path,
                                   int64_t timeout_ms)
{
    int64_t deadline = dlock__now_ms() + timeout_ms;
    struct rconn *c = calloc(1, sizeof(*c));

    if (c == NULL)
        return NULL;
    c->fd = -1;
    c->reader = redisReaderCreate();
    if (c->reader == NULL) {
        free(c);
        return NULL;
    }
    if (path != NULL) {
        connect_unix(c, path, deadline);
    } else {
        dlock__strlcpy(c->host, host, sizeof(c->host));
        c->port = port;
        connect_tcp(c, host, port, deadline);
    }
    if (!c->err && tls != NULL && path != NULL)
        seterr(c, "TLS over a unix socket is not supported");
    if (!c->err && tls != NULL) {
        pthread_once(&bio_once, bio_method_init);
        handshake(c, tls, host, deadline);
    }
    if (!c->err && set_blocking(c->fd, 1) != 0)
        seterr(c, "%s", strerror(errno));
    return c;
}

void dlock__rconn_free(struct rconn *c)
{
    if (c == NULL)
        return;
    if (c->ssl != NULL) {
        /* A close_notify, if the socket takes it at once; no waiting for
         * the server's. */
        if (!c->err) {
            c->dontwait = 1;
            (void)SSL_shutdown(c->ssl);
        }
        SSL_free(c->ssl);
        ERR_clear_error();
    }
    if (c->fd >= 0)
        close(c->fd);
    redisReaderFree(c->reader);
    free(c->obuf);
    free(c);
}

void dlock__rconn_set_timeout(struct rconn *c, int64_t ms)
{
    c->timeout_ms = ms;
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};

    if (c->fd < 0)
        return;
    (void)setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    (void)setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

void dlock__rconn_keepalive(struct rconn *c)
{
    int on = 1, idle = 15, intvl = 5, cnt = 3;

    if (c->fd < 0 || c->host[0] == '\0')
        return;
    (void)setsockopt(c->fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
    (void)setsockopt(c->fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
    (void)setsockopt(c->fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
    (void)setsockopt(c->fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
}

/* --- bytes in, bytes out --------------------------------------------- */

static int append(struct rconn *c, char *cmd, int len)
{
    if (len < 0) {
        seterr(c, "out of memory");
        return REDIS_ERR;
    }
    if (c->olen + (size_t)len > c->ocap) {
        size_t cap = c->ocap ? c->ocap : 256;
        char *p;

        while (cap < c->olen + (size_t)len)
            cap *= 2;
        p = realloc(c->obuf, cap);
        if (p == NULL) {
            free(cmd);
            seterr(c, "out of memory");
            return REDIS_ERR;
        }
        c->obuf = p;
        c->ocap = cap;
    }
    memcpy(c->obuf + c->olen, cmd, (size_t)len);
    c->olen += (size_t)len;
    c->pending++;
    free(cmd);
    return REDIS_OK;
}

/* A call's deadline ran out (c->deadline): the connection is of no more
 * use, an answer may still be on its way. */
static int timed_out(struct rconn *c)
{
    seterr(c,
           "Resource temporarily unavailable (timed out: no whole "
           "answer within %lld ms)",
           (long long)c->timeout_ms);
    return -1;
}

/* Wait for fd to be ready for ev until the call's deadline: 1 ready, -1
 * broken (err set). */
static int wait_call(struct rconn *c, short ev)
{
    int w = wait_fd(c->fd, ev, c->deadline > 0 ? c->deadline : INT64_MAX);

    if (w == 0)
        return timed_out(c);
    if (w < 0) {
        seterr(c, "%s", strerror(errno));
        return -1;
    }
    return 1;
}

int dlock__rconn_flush(struct rconn *c)
{
    size_t off = 0;

    if (c->err)
        return REDIS_ERR;
    /* What is written now is answered within the timeout, as a whole. */
    if (c->olen > 0)
        c->deadline = c->timeout_ms > 0 ? dlock__now_ms() + c->timeout_ms : 0;
    while (off < c->olen) {
        size_t left = c->olen - off;
        ssize_t n;

        if (c->ssl != NULL) {
            int ret = SSL_write(c->ssl, c->obuf + off,
                                left > 1 << 30 ? 1 << 30 : (int)left);

            if (ret <= 0) {
                tls_error(c, "write", ret, errno);
                return REDIS_ERR;
            }
            n = ret;
        } else {
            n = send(c->fd, c->obuf + off, left, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                if (wait_call(c, POLLOUT) < 0)
                    return REDIS_ERR;
                continue;
            }
            if (n < 0) {
                seterr(c, "%s", strerror(errno));
                return REDIS_ERR;
            }
        }
        off += (size_t)n;
    }
    c->olen = 0;
    return REDIS_OK;
}

/* Read once (blocking unless dontwait) and feed the reader: 1 read some,
 * 0 nothing there (dontwait only), -1 broken. */
static int read_some(struct rconn *c)
{
    char buf[16384];

    if (c->ssl != NULL) {
        int ret, got = 0;

        /* SSL_read returns one record at most: take every byte the
         * SSL has already decrypted too, so poll() on the socket keeps
         * telling the truth. */
        do {
            ret = SSL_read(c->ssl, buf, sizeof(buf));
            if (ret <= 0) {
                int e = SSL_get_error(c->ssl, ret);

                if (got || (c->dontwait && (e == SSL_ERROR_WANT_READ ||
                                            e == SSL_ERROR_WANT_WRITE))) {
                    ERR_clear_error();
                    return got;
                }
                tls_error(c, "read", ret, errno);
                return -1;
            }
            if (redisReaderFeed(c->reader, buf, (size_t)ret) != REDIS_OK) {
                seterr(c, "out of memory");
                return -1;
            }
            got = 1;
        } while (SSL_pending(c->ssl) > 0);
        return 1;
    }
    for (;;) {
        ssize_t n =
            recv(c->fd, buf, sizeof(buf), c->dontwait ? MSG_DONTWAIT : 0);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (c->dontwait)
                return 0;
            seterr(c, "Resource temporarily unavailable (timed out)");
            return -1;
        }
        if (n < 0) {
            seterr(c, "%s", strerror(errno));
            return -1;
        }
        if (n == 0) {
            seterr(c, "Server closed the connection");
            return -1;
        }
        if (redisReaderFeed(c->reader, buf, (size_t)n) != REDIS_OK) {
            seterr(c, "out of memory");
            return -1;
        }
        return 1;
    }
}

int dlock__rconn_next_reply(struct rconn *c, void **reply)
{
    *reply = NULL;
    if (c->err)
        return REDIS_ERR;
    if (redisReaderGetReply(c->reader, reply) != REDIS_OK) {
        seterr(c, "protocol error: %s", c->reader->errstr);
        return REDIS_ERR;
    }
    return REDIS_OK;
}

int dlock__rconn_read(struct rconn *c)
{
    int n;

    if (c->err)
        return REDIS_ERR;
    c->dontwait = 1;
    n = read_some(c);
    c->dontwait = 0;
    return n < 0 ? REDIS_ERR : REDIS_OK;
}

/* Read what arrives until the call's deadline (never blocking in a
 * read: a server that sends a byte at a time would make every read
 * succeed): 1 read some, -1 broken or out of time. */
static int read_by_deadline(struct rconn *c)
{
    for (;;) {
        int n;

        c->dontwait = 1;
        n = read_some(c);
        c->dontwait = 0;
        if (n != 0)
            return n;
        if (wait_call(c, POLLIN) < 0)
            return -1;
    }
}

int dlock__rconn_get_reply(struct rconn *c, void **reply)
{
    if (dlock__rconn_next_reply(c, reply) != REDIS_OK)
        return REDIS_ERR;
    if (*reply == NULL) {
        if (dlock__rconn_flush(c) != REDIS_OK)
            return REDIS_ERR;
        if (c->deadline == 0 && c->timeout_ms > 0)
            c->deadline = dlock__now_ms() + c->timeout_ms;
        do {
            if (read_by_deadline(c) < 0 ||
                dlock__rconn_next_reply(c, reply) != REDIS_OK)
                return REDIS_ERR;
        } while (*reply == NULL);
        c->answered = 1;
    }
    /* The last answer of the pipeline: the next command gets a deadline
     * of its own. */
    if (c->pending > 0 && --c->pending == 0)
        c->deadline = 0;
    return REDIS_OK;
}

int dlock__rconn_append_argv(struct rconn *c, int argc, const char **argv,
                             const size_t *lens)
{
    char *cmd = NULL;
    int len;

    if (c->err)
        return REDIS_ERR;
    len = redisFormatCommandArgv(&cmd, argc, argv, lens);
    return append(c, cmd, len);
}

static redisReply *roundtrip(struct rconn *c)
{
    void *r = NULL;

    return dlock__rconn_get_reply(c, &r) == REDIS_OK ? r : NULL;
}

redisReply *dlock__rconn_command_argv(struct rconn *c, int argc,
                                      const char **argv, const size_t *lens)
{
    if (dlock__rconn_append_argv(c, argc, argv, lens) != REDIS_OK)
        return NULL;
    return roundtrip(c);
}

redisReply *dlock__rconn_command(struct rconn *c, const char *fmt, ...)
{
    char *cmd = NULL;
    va_list ap;
    int len;

    if (c->err)
        return NULL;
    va_start(ap, fmt);
    len = redisvFormatCommand(&cmd, fmt, ap);
    va_end(ap);
    if (append(c, cmd, len) != REDIS_OK)
        return NULL;
    return roundtrip(c);
}
