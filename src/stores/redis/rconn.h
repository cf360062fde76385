/*
 * rconn.h - the transport: one connection to a Redis server, TCP, a unix
 * socket, or TLS over TCP, behind one interface that every call site of
 * the store uses.
 *
 * Why not hiredis's redisContext: Debian's hiredis (0.14) has no TLS, and
 * its context reads and writes the socket itself with no hook for another
 * transport.  So the transport is ours (a socket, and an OpenSSL SSL on it
 * for rediss://), and hiredis keeps what it is good at: formatting
 * commands (redisFormatCommandArgv, redisvFormatCommand) and its reply
 * reader (redisReader), so there is no RESP parser of our own.  Plaintext
 * and TLS take the same path; only the two calls that move bytes differ.
 *
 * The interface mirrors the part of hiredis's the store used, returning
 * REDIS_OK / REDIS_ERR where hiredis did, so the call sites read as
 * before.  A connection that failed (err set) stays failed: every command
 * on it returns NULL / REDIS_ERR at once, as a redisContext does.
 * Writes never raise SIGPIPE (send with MSG_NOSIGNAL, TLS included).
 */
#ifndef DLOCK_STORES_REDIS_RCONN_H
#define DLOCK_STORES_REDIS_RCONN_H

#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdint.h>

/* The TLS settings of a store handle (rediss://): made once by open,
 * shared by its connections.  NULL everywhere: plaintext. */
struct rtls;

struct rconn {
    int fd;
    void *ssl; /* SSL *, or NULL (plaintext) */
    redisReader *reader;
    char *obuf; /* formatted commands not yet written */
    size_t olen, ocap;
    int dontwait;       /* reads must not block (the subscriber's listener) */
    int answered;       /* a reply came: TLS is past the server's checks */
    int client_cert;    /* TLS with a client certificate */
    int64_t timeout_ms; /* dlock__rconn_set_timeout(): 0 none */
    int64_t deadline;   /* monotonic ms: the answers due are due by then */
    size_t pending;     /* commands written or appended, not answered */
    int err;            /* nonzero: broken, of no more use */
    char errstr[256];
    char host[256]; /* the address connected to; "" for a unix socket */
    int port;
};

/* The settings of ?cacert= ?cert= ?key= ?sni=: *out, or DLOCK_EINVAL
 * with a message (a file that cannot be read, a key that does not fit
 * the certificate).  Verification of the server's certificate and name
 * is always on. */
int dlock__rtls_new(struct rtls **out, const char *cacert, const char *cert,
                    const char *key, const char *sni, const char *url);
void dlock__rtls_free(struct rtls *t);

/* Connect to host:port (path != NULL: that unix socket), then with tls do
 * the TLS handshake, all within timeout_ms.  NULL only when out of
 * memory; else a connection whose err/errstr say whether it worked. */
struct rconn *dlock__rconn_connect(const struct rtls *tls, const char *host,
                                   int port, const char *path,
                                   int64_t timeout_ms);
void dlock__rconn_free(struct rconn *c);
/* The bound on each command's whole answer, from when it is written
 * (a server that sends it a byte at a time gets no longer), and the
 * socket's send and receive timeout (hiredis's redisSetTimeout).  The
 * answers of a pipeline share the deadline of the write that sent them. */
void dlock__rconn_set_timeout(struct rconn *c, int64_t ms);
/* TCP keepalive, as hiredis's redisEnableKeepAlive. */
void dlock__rconn_keepalive(struct rconn *c);
/* One command and its answer; NULL when the connection broke. */
redisReply *dlock__rconn_command(struct rconn *c, const char *fmt, ...);
redisReply *dlock__rconn_command_argv(struct rconn *c, int argc,
                                      const char **argv, const size_t *lens);
/* A pipeline: append commands, then read their answers in order (the
 * first read writes what was appended).  REDIS_OK or REDIS_ERR. */
int dlock__rconn_append_argv(struct rconn *c, int argc, const char **argv,
                             const size_t *lens);
int dlock__rconn_get_reply(struct rconn *c, void **reply);
/* Write what was appended (blocking, within the timeout). */
int dlock__rconn_flush(struct rconn *c);
/* For a poll() loop: read what has arrived without blocking (REDIS_OK
 * with nothing read is fine), then take the answers it completed one by
 * one (*reply NULL: no more). */
int dlock__rconn_read(struct rconn *c);
int dlock__rconn_next_reply(struct rconn *c, void **reply);

#endif /* DLOCK_STORES_REDIS_RCONN_H */
