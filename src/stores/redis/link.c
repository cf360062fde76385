/*
 * link.c - a link to one Redis server, over a transport connection
 * (rconn.c): connect and authenticate, send a command and read its answer
 * (error classes, Cluster redirections, WAIT for replicas), and the
 * retry-once policy over a pool of one such connection.  Nothing here
 * knows where the server is (master.c, cluster.c) or what is sent
 * (scripts.c, eval.c).
 *
 * Why a pool of one and not a pool: every command is one short round
 * trip and no lock pins a connection, so the handle keeps a single
 * command connection and serialises its users with its mutex mu.  The
 * pool (max_idle 1, only ever used under mu) holds that connection
 * between calls and brings the core's policy: a connection that died
 * while idle (server restart, idle timeout, CLIENT KILL) is replaced and
 * the command sent once more; a fresh connection's failure is final.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "link.h"

/* The class of an error answer (include/dlock.h): a server loading its
 * data, running a script past its time (BUSY), without its master or a
 * replica still (MASTERDOWN, READONLY) can serve again soon:
 * DLOCK_EUNAVAIL; refused credentials (WRONGPASS, NOAUTH), permissions
 * (NOPERM), a bad db index and every other error: DLOCK_ESTORE. */
int dlock__redis_error_code(const char *msg)
{
    /* NOREPLICAS: fewer replicas in reach than min-replicas-to-write
     * (a replica restarting, a partition, a failover): writes come back
     * with them.  "max number of clients": maxclients, server-wide (the
     * server says it to a new connection, whatever it sends first, AUTH
     * included), as "too many connections" is on the other stores. */
    static const char *const transient[] = {"LOADING",
                                            "BUSY ",
                                            "MASTERDOWN",
                                            "READONLY",
                                            "TRYAGAIN",
                                            "CLUSTERDOWN",
                                            "NOREPLICAS",
                                            "ERR max number of clients "
                                            "reached",
                                            NULL};

    for (int i = 0; msg != NULL && transient[i] != NULL; i++)
        if (strncmp(msg, transient[i], strlen(transient[i])) == 0)
            return DLOCK_EUNAVAIL;
    return DLOCK_ESTORE;
}

int dlock__redis_reply_error(struct redis_store *rs, const redisReply *r,
                             const char *what)
{
    return dlock__seterr(dlock__redis_error_code(r->str), "redis %s: %s (%s)",
                         what, r->str ? r->str : "error", rs->url);
}

int dlock__redis_bad_reply(struct redis_store *rs, redisReply *r)
{
    freeReplyObject(r);
    return dlock__seterr(DLOCK_ESTORE, "unexpected reply from %s", rs->url);
}

/* Connect, authenticate, and check that the peer speaks Redis. */
/* A server's answer to AUTH, fit to show: a server that does not know
 * AUTH (renamed away, a proxy) says "ERR unknown command 'AUTH', with
 * args beginning with: 'PASSWORD'", each argument cut to fit 128 bytes,
 * so the password may come back whole or cut (scrubbing it whole would
 * miss the cut one).  The echoed arguments are dropped; what is left is
 * scrubbed of the password all the same. */
static void auth_error_text(char *dst, size_t cap, const char *said,
                            const char *password)
{
    const char *const sec[] = {password, NULL};
    char tmp[256];
    const char *args = strstr(said, ", with args");

    snprintf(tmp, sizeof(tmp), "%.*s%s",
             (int)(args != NULL ? (size_t)(args - said) : strlen(said)), said,
             args != NULL ? " (its arguments not shown)" : "");
    dlock__scrub(dst, cap, tmp, sec);
}

struct rconn *dlock__redis_connect_to(struct redis_store *rs, const char *host,
                                      int port, int *rc)
{
    /* A connection made for a held lock's call (a renewal reconnecting)
     * is bounded by its lease too (dlock__io_bound()). */
    int64_t ct = dlock__io_bound(rs->connect_timeout_ms);
    int64_t t = dlock__io_bound(rs->timeout_ms);
    struct rconn *c;
    redisReply *r;

    c = dlock__rconn_connect(rs->tls, host, port,
                             host == NULL ? rs->sock : NULL, ct);
    if (c == NULL) {
        *rc = dlock__enomem();
        return NULL;
    }
    if (c->err) {
        /* With Sentinel or Cluster the URL names several servers: which. */
        if (host != NULL && (rs->cluster || rs->master != NULL))
            *rc = dlock__seterr(DLOCK_EUNAVAIL,
                                "cannot connect to %s:%d "
                                "(%s): %s",
                                host, port, rs->url, c->errstr);
        else
            *rc = dlock__seterr(DLOCK_EUNAVAIL, "cannot connect to %s: %s",
                                rs->url, c->errstr);
        dlock__rconn_free(c);
        return NULL;
    }
    dlock__rconn_set_timeout(c, t);
    dlock__rconn_keepalive(c);
    /* A user without a password (redis://alice@host) is sent all the
     * same, with an empty password: an ACL user with nopass takes any
     * password, any other one is refused (WRONGPASS), and a server
     * without ACLs (Redis 5) refuses AUTH with two arguments.  Never the
     * `default` user in its place. */
    if (rs->password != NULL || (rs->user != NULL && rs->user[0] != '\0')) {
        const char *pw = rs->password != NULL ? rs->password : "";

        r = rs->user != NULL && rs->user[0] != '\0'
                ? dlock__rconn_command(c, "AUTH %s %s", rs->user, pw)
                : dlock__rconn_command(c, "AUTH %s", pw);
        if (r == NULL || r->type == REDIS_REPLY_ERROR) {
            char said[256];

            if (r != NULL)
                auth_error_text(said, sizeof(said), r->str, pw);
            *rc = r == NULL ? dlock__seterr(DLOCK_EUNAVAIL,
                                            "%s: no answer to AUTH: %s",
                                            rs->url, c->errstr)
                  : dlock__redis_error_code(r->str) == DLOCK_EUNAVAIL
                      ? dlock__seterr(DLOCK_EUNAVAIL, "%s: %s", rs->url, said)
                      : dlock__seterr(DLOCK_ESTORE,
                                      "%s: authentication "
                                      "failed: %s",
                                      rs->url, said);
            freeReplyObject(r);
            dlock__rconn_free(c);
            return NULL;
        }
        freeReplyObject(r);
    }
    r = dlock__rconn_command(c, "PING");
    if (r == NULL || r->type != REDIS_REPLY_STATUS) {
        if (r != NULL && r->type == REDIS_REPLY_ERROR)
            *rc = dlock__seterr(dlock__redis_error_code(r->str), "%s: %s",
                                rs->url, r->str);
        else if (c->err && c->ssl != NULL)
            /* A server that wants a client certificate says so now,
             * after the handshake (TLS 1.3). */
            *rc = dlock__seterr(DLOCK_EUNAVAIL, "cannot connect to %s: %s",
                                rs->url, c->errstr);
        else
            *rc =
                dlock__seterr(DLOCK_EUNAVAIL,
                              "%s does not answer like a Redis server "
                              "(%s)",
                              rs->url, c->err ? c->errstr : "unexpected reply");
        freeReplyObject(r);
        dlock__rconn_free(c);
        return NULL;
    }
    freeReplyObject(r);
    if (t != rs->timeout_ms)
        dlock__rconn_set_timeout(c, rs->timeout_ms);
    return c;
}

static int exec_once(struct dlock__pool *pool, dlock__pool_fn fn, void *arg,
                     int retry);

/* "MOVED 3999 127.0.0.1:6381" or "ASK ...": where to, into rs->redir
 * (an empty host is the one the answer came from).  0 if it parsed. */
static int parse_redirect(struct redis_store *rs, struct rconn *c,
                          const char *msg)
{
    const char *p = strchr(msg, ' '), *colon;
    char *end;
    unsigned long slot;
    long port;

    if (p == NULL)
        return -1;
    slot = strtoul(p + 1, &end, 10);
    if (end == p + 1 || *end != ' ' || slot > 16383)
        return -1;
    p = end + 1;
    colon = strrchr(p, ':');
    if (colon == NULL || (size_t)(colon - p) >= sizeof(rs->redir.host))
        return -1;
    port = strtol(colon + 1, &end, 10);
    if (*end != '\0' || port < 1 || port > 65535)
        return -1;
    if (colon == p && c->host[0] != '\0')
        dlock__strlcpy(rs->redir.host, c->host, sizeof(rs->redir.host));
    else {
        memcpy(rs->redir.host, p, (size_t)(colon - p));
        rs->redir.host[colon - p] = '\0';
    }
    rs->redir.slot = (unsigned)slot;
    rs->redir.port = (int)port;
    rs->redir.kind = msg[0] == 'M' ? R_MOVED : R_ASK;
    return 0;
}

/* An error answer that says where the key is (MOVED, ASK) or that the
 * cluster cannot serve it now (CLUSTERDOWN, TRYAGAIN during a slot's
 * migration): DLOCK_EUNAVAIL, the connection still good; a redirection
 * is left in rs->redir for dlock__redis_cluster_exec().  Without Cluster
 * a MOVED or CROSSSLOT says the URL is wrong.  0: none of these. */
static int cluster_answer(struct redis_store *rs, struct rconn *c,
                          const char *msg)
{
    if (!rs->cluster && strncmp(msg, "CROSSSLOT", 9) == 0)
        return dlock__seterr(DLOCK_ESTORE,
                             "%s is a node of a Redis Cluster: "
                             "use redis-cluster://",
                             rs->url);
    if (strncmp(msg, "MOVED ", 6) == 0 || strncmp(msg, "ASK ", 4) == 0) {
        if (!rs->cluster)
            return dlock__seterr(DLOCK_ESTORE,
                                 "%s is a node of a Redis "
                                 "Cluster: use redis-cluster://",
                                 rs->url);
        if (parse_redirect(rs, c, msg) != 0)
            return dlock__seterr(DLOCK_ESTORE, "%s: bad redirection: %.80s",
                                 rs->url, msg);
        return dlock__seterr(DLOCK_EUNAVAIL, "%s: %.80s", rs->url, msg);
    }
    if (strncmp(msg, "CLUSTERDOWN", 11) == 0 ||
        strncmp(msg, "TRYAGAIN", 8) == 0)
        return dlock__seterr(DLOCK_EUNAVAIL, "%s: %.80s", rs->url, msg);
    return 0;
}

int dlock__redis_bound(struct redis_store *rs, struct rconn *c)
{
    int64_t t = dlock__io_bound(rs->timeout_ms);

    if (t >= rs->timeout_ms)
        return 0;
    dlock__rconn_set_timeout(c, t);
    return 1;
}

void dlock__redis_unbound(struct redis_store *rs, struct rconn *c, int bound)
{
    if (bound && c->err == 0)
        dlock__rconn_set_timeout(c, rs->timeout_ms);
}

static int send_once(struct redis_store *rs, struct rconn *c, int argc,
                     const char **argv, const size_t *lens, redisReply **out,
                     int *dead)
{
    int rc;

    /* A slot being imported answers a key it does not have yet only
     * right after ASKING, on the same connection. */
    if (rs->asking) {
        redisReply *a = dlock__rconn_command(c, "ASKING");

        if (a == NULL) {
            *out = NULL;
            *dead = 1;
            return dlock__seterr(DLOCK_EUNAVAIL,
                                 "lost the connection to "
                                 "%s: %s",
                                 rs->url, c->errstr);
        }
        freeReplyObject(a);
    }
    *out = dlock__rconn_command_argv(c, argc, argv, lens);
    if (*out != NULL && (*out)->type == REDIS_REPLY_ERROR &&
        (*out)->str != NULL && (rc = cluster_answer(rs, c, (*out)->str)) != 0) {
        freeReplyObject(*out);
        *out = NULL;
        return rc;
    }
    /* A master that became a replica (a failover) answers READONLY, one
     * still loading its data LOADING: this connection is of no more use,
     * a new one asks the sentinels where the master is now. */
    if (*out != NULL && (*out)->type == REDIS_REPLY_ERROR &&
        (strncmp((*out)->str, "READONLY", 8) == 0 ||
         strncmp((*out)->str, "LOADING", 7) == 0)) {
        *dead = 1;
        dlock__seterr(DLOCK_EUNAVAIL, "%s: %s", rs->url, (*out)->str);
        freeReplyObject(*out);
        *out = NULL;
        return DLOCK_EUNAVAIL;
    }
    if (*out != NULL)
        return DLOCK_OK;
    *dead = 1;
    return dlock__seterr(DLOCK_EUNAVAIL, "lost the connection to %s: %s",
                         rs->url, c->errstr);
}

long long dlock__redis_wait_acks(struct redis_store *rs, struct rconn *c,
                                 int *dead)
{
    /* Within the lease, and well within the socket's timeout: a WAIT
     * that outlived it would cost the connection, not just the ack. */
    int64_t ms = dlock__io_bound(rs->replicas_timeout_ms),
            half = dlock__io_bound(rs->timeout_ms) / 2;
    char n[24], t[24];
    const char *argv[3] = {"WAIT", n, t};
    size_t lens[3];
    redisReply *r = NULL;
    long long acks = -1;

    if (ms > half)
        ms = half;
    if (ms < 1)
        ms = 1; /* WAIT's 0 would wait for ever */
    snprintf(n, sizeof(n), "%d", rs->replicas);
    snprintf(t, sizeof(t), "%lld", (long long)ms);
    lens[0] = 4;
    lens[1] = strlen(n);
    lens[2] = strlen(t);
    if (dlock__redis_send(rs, c, 3, argv, lens, &r, dead) == DLOCK_OK &&
        r->type == REDIS_REPLY_INTEGER)
        acks = r->integer;
    freeReplyObject(r);
    return acks;
}

int dlock__redis_unacked(struct redis_store *rs, const char *what,
                         const char *name, long long acks)
{
    if (acks < 0) {
        char why[256];

        dlock__strlcpy(why, dlock_errmsg(), sizeof(why));
        return dlock__seterr(DLOCK_EUNAVAIL,
                             "%s of '%s': no count from "
                             "WAIT (?replicas=%d): %s",
                             what, name, rs->replicas, why[0] ? why : rs->url);
    }
    return dlock__seterr(DLOCK_EUNAVAIL,
                         "%s of '%s': %lld of the %d "
                         "replicas asked for (?replicas=) acknowledged it "
                         "within %lld ms (%s)",
                         what, name, acks, rs->replicas,
                         (long long)rs->replicas_timeout_ms, rs->url);
}

int dlock__redis_send(struct redis_store *rs, struct rconn *c, int argc,
                      const char **argv, const size_t *lens, redisReply **out,
                      int *dead)
{
    int bound = dlock__redis_bound(rs, c);
    int rc = send_once(rs, c, argc, argv, lens, out, dead);

    dlock__redis_unbound(rs, c, bound);
    return rc;
}

/* hiredis writes with write(): a server that went away (a killed master)
 * would end the program with SIGPIPE.  Blocked in this thread while we
 * write, and a SIGPIPE we caused is taken off again (libpq does the
 * same where it cannot use MSG_NOSIGNAL).  One that another process sent
 * meanwhile (kill -PIPE: dlock run gives up its wait on it) is not ours
 * to take: when every thread blocked it, it waited in the process's
 * queue, and it is put back, with its sender, on this thread. */
void dlock__redis_nopipe_begin(struct dlock__nopipe *np)
{
    sigset_t pipe, pend;

    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    sigpending(&pend);
    np->was_pending = sigismember(&pend, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe, &np->old);
}

void dlock__redis_nopipe_end(struct dlock__nopipe *np)
{
    sigset_t pipe, pend;

    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    sigpending(&pend);
    if (!np->was_pending && sigismember(&pend, SIGPIPE) == 1) {
        struct timespec zero = {0, 0};
        siginfo_t si;

        memset(&si, 0, sizeof(si));
        /* Ours: SI_USER from this process (the kernel's EPIPE). */
        if (sigtimedwait(&pipe, &si, &zero) == SIGPIPE &&
            !(si.si_code == SI_USER && si.si_pid == getpid())) {
            pthread_sigmask(SIG_SETMASK, &np->old, NULL);
            if (syscall(SYS_rt_tgsigqueueinfo, getpid(), syscall(SYS_gettid),
                        SIGPIPE, &si) != 0)
                (void)kill(getpid(), SIGPIPE);
            return;
        }
    }
    pthread_sigmask(SIG_SETMASK, &np->old, NULL);
}

int dlock__redis_exec_on(struct dlock__pool *pool, dlock__pool_fn fn, void *arg,
                         int retry)
{
    struct dlock__nopipe np;
    int rc;

    dlock__redis_nopipe_begin(&np);
    rc = exec_once(pool, fn, arg, retry);
    dlock__redis_nopipe_end(&np);
    return rc;
}

static int exec_once(struct dlock__pool *pool, dlock__pool_fn fn, void *arg,
                     int retry)
{
    void *c;
    int dead = 0, rc;

    if (retry)
        return dlock__pool_run(pool, fn, arg);
    /* Not idempotent (a release): an answer lost on the way back may
     * mean it ran, so it is sent once, whatever the connection. */
    rc = dlock__pool_get(pool, &c, NULL);
    if (rc != DLOCK_OK)
        return rc;
    rc = fn(c, arg, &dead);
    if (dead)
        dlock__pool_discard(pool, c);
    else
        dlock__pool_put(pool, c);
    return rc;
}

/* --- the pool's callbacks (every Redis pool's) -------------------------- */

void dlock__redis_pool_close(void *ctx, void *c)
{
    (void)ctx;
    dlock__rconn_free(c);
}

/* A local check only: a connection that died while idle still looks
 * fine here, and is found out by its next command (the retry). */
int dlock__redis_pool_healthy(void *ctx, void *c, int64_t idle_ms)
{
    (void)ctx;
    (void)idle_ms;
    return ((struct rconn *)c)->err == 0;
}

int dlock__redis_role_is(struct rconn *c, const char *role)
{
    redisReply *r = dlock__rconn_command(c, "ROLE");
    int yes = r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
              r->element[0]->type == REDIS_REPLY_STRING &&
              strcmp(r->element[0]->str, role) == 0;

    freeReplyObject(r);
    return yes;
}
