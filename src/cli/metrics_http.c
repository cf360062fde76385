/*
 * metrics_http.c - `dlock metrics [PREFIX] --listen ADDR:PORT`: an HTTP
 * exporter on libmicrohttpd.  GET (or HEAD) /metrics reads the store
 * (cli_fleet_metrics(), fleet.c) and answers its Prometheus text; "/" is
 * a one-line pointer; any other path is a 404, any other method a 405.
 * A store that cannot be read is a 503 whose body is still Prometheus
 * text (dlock_metrics_scrape_ok 0 and the error series), in the time the
 * store's own reads are bounded by, never a hang.
 *
 * One thread serves: libmicrohttpd's internal polling thread, without a
 * thread per connection, calls the handler for one request at a time, so
 * the one store handle is never used by two threads at once, and a
 * client that is slow to send its request (a slow loris) holds nothing
 * but its connection, which the connection timeout cuts.  Connections
 * are bounded in number (in all and per client address) and in memory.
 * The main thread opens the listening socket itself (so that a bad or
 * busy address is an exit 64 before anything is served, and port 0 can
 * be told), then waits in sigwait() for SIGTERM or SIGINT, blocked in
 * every thread, and stops the daemon: exit 0.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fleet.h"
#include "metrics_http.h"

#ifndef DLOCK_HAVE_MHD

int cli_metrics_serve(const struct cli *c, const char *prefix,
                      const char *listen, int64_t open_ms)
{
    (void)c;
    (void)prefix;
    (void)listen;
    (void)open_ms;
    cli_err("metrics: --listen: dlock was built without libmicrohttpd "
            "(install libmicrohttpd-dev and build again)");
    return EXIT_USAGE;
}

#else

#include <microhttpd.h>

/* The bounds of hostile or slow scrapers.  Prometheus opens one
 * connection per target and keeps it alive; 16 leave room for a few
 * Prometheus servers and a curl.  A request is a line and a few headers:
 * 32 KiB of buffer per connection is plenty (a longer one is refused by
 * libmicrohttpd with a 431).  The timeout is of an idle or slow
 * connection, not of the store's read (bounded by the store itself). */
#define CONN_LIMIT 16
#define CONN_PER_IP 8
#define CONN_TIMEOUT_S 10
#define CONN_MEMORY (32 * 1024)

#define PROM_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* A scrape is read from the store at most once in this long: scrapes
 * that come closer (several Prometheus servers, a loop of HEADs) get the
 * last answer again, so the store's load does not follow the scrapers'. */
#define CACHE_MS 1000

struct server {
    const struct cli *c;
    const char *prefix;
    int64_t open_ms;
    dlock_store *store; /* NULL until an open succeeds */
    int failing;        /* the last scrape failed (said once) */
    char *last;         /* the last answer's body, status and time */
    size_t last_len;
    unsigned last_status;
    int64_t last_at; /* CLOCK_MONOTONIC ms; 0: none */
};

/* spec "ADDR:PORT" as a socket address: 0, or -1 (nothing said). */
static int parse_listen(const char *spec, struct sockaddr_storage *ss,
                        socklen_t *sslen)
{
    struct addrinfo hints, *res = NULL;
    char host[64];
    const char *colon, *port, *h = host;
    size_t hlen;
    int any;

    colon = strrchr(spec, ':');
    if (colon == NULL)
        return -1;
    port = colon + 1;
    if (*port == '\0' || strspn(port, "0123456789") != strlen(port) ||
        strlen(port) > 5 || atoi(port) > 65535)
        return -1;
    hlen = (size_t)(colon - spec);
    if (hlen >= 2 && spec[0] == '[' && spec[hlen - 1] == ']') {
        if (hlen == 2)
            return -1; /* "[]:PORT" is no address (":PORT" is every one) */
        spec++;
        hlen -= 2;
    } else if (memchr(spec, ':', hlen) != NULL) {
        return -1; /* an IPv6 address wants its brackets */
    }
    if (hlen >= sizeof host)
        return -1;
    memcpy(host, spec, hlen);
    host[hlen] = '\0';
    any = hlen == 0;
    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = SOCK_STREAM;
    /* A literal address only: a name would be a DNS look-up, and which
     * of its addresses dlock listens on a guess. */
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE;
    hints.ai_family = any ? AF_INET6 : AF_UNSPEC;
    if (getaddrinfo(any ? NULL : h, port, &hints, &res) != 0) {
        if (!any)
            return -1;
        /* No IPv6 here: every IPv4 address. */
        hints.ai_family = AF_INET;
        if (getaddrinfo(NULL, port, &hints, &res) != 0)
            return -1;
    }
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    *sslen = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

/* The listening socket on spec, with the address it got (port 0: the
 * one the kernel picked) in shown; -1 or the exit code after saying why. */
static int open_listener(const char *spec, char *shown, size_t shown_len,
                         int *exit_code)
{
    struct sockaddr_storage ss;
    socklen_t sslen = sizeof ss;
    char addr[INET6_ADDRSTRLEN], port[8];
    int fd, on = 1, off = 0;

    *exit_code = EXIT_USAGE;
    if (parse_listen(spec, &ss, &sslen) != 0) {
        cli_err("metrics: --listen wants ADDR:PORT with ADDR an IP address "
                "(127.0.0.1:9188, [::1]:9188, :9188 for all), not '%s'",
                cli_arg_shown(spec));
        return -1;
    }
    fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        cli_err("metrics: --listen %s: cannot make a socket: %s",
                cli_arg_shown(spec), strerror(errno));
        *exit_code = EXIT_INTERNAL;
        return -1;
    }
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    /* ":PORT" is every address, IPv4 ones too. */
    if (ss.ss_family == AF_INET6)
        (void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
    if (bind(fd, (struct sockaddr *)&ss, sslen) != 0 || listen(fd, 64) != 0) {
        cli_err("metrics: --listen %s: %s", cli_arg_shown(spec),
                errno == EADDRINUSE ? "the address is already in use"
                                    : strerror(errno));
        close(fd);
        return -1;
    }
    sslen = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &sslen) != 0 ||
        getnameinfo((struct sockaddr *)&ss, sslen, addr, sizeof addr, port,
                    sizeof port, NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
        cli_err("metrics: --listen %s: cannot read the bound address",
                cli_arg_shown(spec));
        close(fd);
        *exit_code = EXIT_INTERNAL;
        return -1;
    }
    snprintf(shown, shown_len, ss.ss_family == AF_INET6 ? "[%s]:%s" : "%s:%s",
             addr, port);
    return fd;
}

/* A response of text (malloc'd, taken) with status and content type. */
static enum MHD_Result answer(struct MHD_Connection *conn, unsigned status,
                              char *text, size_t len, const char *type)
{
    struct MHD_Response *r;
    enum MHD_Result ok;

    r = MHD_create_response_from_buffer_with_free_callback(len, text, free);
    if (r == NULL) {
        free(text);
        return MHD_NO; /* libmicrohttpd closes the connection */
    }
    (void)MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        (void)MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    ok = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result answer_const(struct MHD_Connection *conn,
                                    unsigned status, const char *text)
{
    char *copy = strdup(text);

    if (copy == NULL)
        return MHD_NO;
    return answer(conn, status, copy, strlen(copy), "text/plain");
}

static enum MHD_Result scrape_store(struct server *s,
                                    struct MHD_Connection *conn);

/* Answer text (taken) with status, keeping a copy as the last answer. */
static enum MHD_Result answer_kept(struct server *s,
                                   struct MHD_Connection *conn, unsigned status,
                                   char *text, size_t len)
{
    char *copy = malloc(len + 1);

    free(s->last);
    s->last = copy;
    s->last_at = 0;
    if (copy != NULL) {
        memcpy(copy, text, len);
        copy[len] = '\0';
        s->last_len = len;
        s->last_status = status;
        s->last_at = cli_mono_ms();
    }
    return answer(conn, status, text, len, PROM_TYPE);
}

/* One scrape: the store's text (200), or the failure's (503); the last
 * answer again within CACHE_MS of it.  A change between readable and
 * not is said once on stderr, not on every scrape. */
static enum MHD_Result scrape(struct server *s, struct MHD_Connection *conn)
{
    if (s->last != NULL && s->last_at != 0 &&
        cli_mono_ms() - s->last_at < CACHE_MS) {
        char *copy = malloc(s->last_len + 1);

        if (copy == NULL)
            return MHD_NO;
        memcpy(copy, s->last, s->last_len + 1);
        return answer(conn, s->last_status, copy, s->last_len, PROM_TYPE);
    }
    return scrape_store(s, conn);
}

/* A scrape read from the store. */
static enum MHD_Result scrape_store(struct server *s,
                                    struct MHD_Connection *conn)
{
    char *text = NULL, *err = NULL, *msg = NULL;
    size_t len = 0;
    int rc = EXIT_INTERNAL; /* set on every path below (gcc -Os cannot tell) */

    if (s->store == NULL) {
        rc = dlock_store_open_within(&s->store, s->c->url, s->open_ms);
        if (rc != DLOCK_OK) {
            s->store = NULL;
            if (asprintf(&msg, "metrics: cannot open the store: %s",
                         dlock_errmsg()[0] != '\0' ? dlock_errmsg()
                                                   : dlock_strerror(rc)) < 0)
                msg = NULL;
            rc = cli_exit_code(rc);
        }
    }
    if (s->store != NULL) {
        rc = cli_fleet_metrics(s->store, s->prefix, s->open_ms, &text, &len,
                               &err);
        if (rc == 0) {
            if (s->failing)
                cli_notice("metrics: the store can be read again");
            s->failing = 0;
            return answer_kept(s, conn, MHD_HTTP_OK, text, len);
        }
        msg = err;
    }
    if (!s->failing)
        cli_log_safe(CLI_LOG_WARNING, msg != NULL ? msg : "metrics: failed");
    s->failing = 1;
    free(msg);
    if (cli_fleet_failure(rc, &text, &len) != 0) {
        free(text);
        return MHD_NO;
    }
    return answer_kept(s, conn, MHD_HTTP_SERVICE_UNAVAILABLE, text, len);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
                                  const char *url, const char *method,
                                  const char *version, const char *upload,
                                  size_t *upload_len, void **req)
{
    struct server *s = cls;

    (void)version;
    (void)upload;
    (void)upload_len;
    (void)req;
    /* Answered on the first call, before any body: a request to serve
     * has none, and one that has it is not read. */
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 &&
        strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
        return answer_const(conn, MHD_HTTP_METHOD_NOT_ALLOWED,
                            "only GET /metrics is served\n");
    if (strcmp(url, "/metrics") == 0)
        return scrape(s, conn);
    if (strcmp(url, "/") == 0)
        return answer_const(conn, MHD_HTTP_OK,
                            "dlock metrics: the Prometheus text is at "
                            "/metrics\n");
    return answer_const(conn, MHD_HTTP_NOT_FOUND,
                        "not found: the Prometheus text is at /metrics\n");
}

/* libmicrohttpd's own messages (a refused connection, a timeout): -v. */
static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    const struct server *s = cls;
    char line[512];
    size_t n;

    if (!s->c->verbose)
        return;
    vsnprintf(line, sizeof line, fmt, ap);
    n = strlen(line);
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        line[--n] = '\0';
    cli_debug("metrics: libmicrohttpd: %s", line);
}

int cli_metrics_serve(const struct cli *c, const char *prefix,
                      const char *listen, int64_t open_ms)
{
    struct server s = {c, prefix, open_ms, NULL, 0, NULL, 0, 0, 0};
    struct MHD_Daemon *d;
    char shown[INET6_ADDRSTRLEN + 16], *red = NULL;
    sigset_t stop, old;
    int fd, code, sig = 0, rc;

    fd = open_listener(listen, shown, sizeof shown, &code);
    if (fd < 0)
        return code;
    rc = dlock_store_open_within(&s.store, c->url, open_ms);
    if (rc != DLOCK_OK) {
        code = cli_fail(rc, "cannot open the store");
        s.store = NULL;
        if (code != EXIT_UNAVAILABLE) {
            close(fd);
            return code;
        }
        /* Down now, maybe up at the next scrape: each one tries again,
         * and gets a 503 until then. */
        cli_warn("metrics: serving anyway: each scrape opens it again");
        s.failing = 1;
    }
    /* Blocked before the daemon's thread starts, so that it inherits the
     * mask and the signals come to sigwait() below. */
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, &old);
    signal(SIGPIPE, SIG_IGN);
    d = MHD_start_daemon(
        MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL,
        on_request, &s, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, &s,
        MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)CONN_LIMIT, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
        (unsigned)CONN_PER_IP, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)CONN_TIMEOUT_S, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        (size_t)CONN_MEMORY, MHD_OPTION_END);
    if (d == NULL) {
        cli_err("metrics: --listen %s: libmicrohttpd could not start",
                cli_arg_shown(listen));
        close(fd);
        dlock_store_close(s.store);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        return EXIT_INTERNAL;
    }
    if (dlock_url_redact(&red, c->url) != DLOCK_OK)
        red = NULL;
    cli_notice("serving metrics of %s at http://%s/metrics",
               red != NULL ? red : "the store", shown);
    dlock_free(red);
    while (sigwait(&stop, &sig) != 0)
        ;
    if (c->verbose)
        cli_debug("metrics: signal %d: stopping", sig);
    /* Waits for the scrape in progress (bounded by the store's reads),
     * and closes fd: libmicrohttpd owns it from a successful start on. */
    MHD_stop_daemon(d);
    dlock_store_close(s.store);
    free(s.last);
    /* A second SIGTERM/SIGINT, pending while we stopped, would end the
     * process with 143 once unblocked: ignoring them discards it (POSIX),
     * and dlock only exits from here. */
    signal(SIGTERM, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return 0;
}

#endif
