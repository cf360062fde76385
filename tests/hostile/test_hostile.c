/*
 * test_hostile.c - a store whose server turns hostile in the middle of a
 * session.  A relay on loopback sits between the library and a real
 * server (the URL given); once a lock is held, the relay stops passing
 * the server's answers on and instead:
 *   silent    swallows them (the server still acts on every command),
 *   garbage   sends bytes that are no protocol at all,
 *   half      passes half of the next answer on, then nothing,
 *   close     hangs up both ways.
 * Each time: releasing the held lock and acquiring another name return an
 * error (never DLOCK_OK, never BUSY) within the operation timeout, and
 * once the relay is honest again the same handle serves again and the
 * first name can be acquired (the lock was released, freed with its
 * session, or expired with its lease: nothing stays stuck).  A new handle
 * opened through a hostile relay fails within its connect timeout.
 * ASan/LSan watch for crashes and leaks.
 *
 *   test_hostile URL       (redis://, postgres://, mysql:// on 127.0.0.1)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "dlock.h"

#define TTL_MS 3000
#define OP_BOUND_MS 3500 /* twice timeout=1s (MySQL), and slack */

enum mode { M_PASS, M_SILENT, M_GARBAGE, M_HALF, M_CLOSE };
static const char *const mode_name[] = {"pass", "silent", "garbage", "half",
                                        "close"};

static atomic_int mode;
static int listen_fd, upstream_port;

#define MAX_RELAYS 512
static struct relay {
    int c, s;
    pthread_t t;
} relays[MAX_RELAYS];
static int n_relays;
static pthread_mutex_t relays_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_t acceptor;

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);

        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Pass bytes both ways; the server's are passed, dropped or spoiled as
 * the mode says at the moment they arrive. */
static void *relay_main(void *arg)
{
    struct relay *r = arg;
    int half_done = 0;
    char buf[16384];

    for (;;) {
        struct pollfd p[2] = {{r->c, POLLIN, 0}, {r->s, POLLIN, 0}};
        int m = atomic_load(&mode);
        ssize_t n;

        if (m == M_CLOSE)
            break;
        if (poll(p, 2, 50) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (p[0].revents) {
            n = read(r->c, buf, sizeof(buf));
            if (n <= 0 || write_all(r->s, buf, (size_t)n) != 0)
                break;
        }
        if (p[1].revents) {
            n = read(r->s, buf, sizeof(buf));
            if (n <= 0)
                break;
            m = atomic_load(&mode);
            if (m == M_PASS) {
                half_done = 0;
                if (write_all(r->c, buf, (size_t)n) != 0)
                    break;
            } else if (m == M_GARBAGE) {
                static const char junk[] =
                    "\x17\x03\x03 <html>garbage\xff\xfe\r\n\0\x01-ERR $-7 *x";

                if (write_all(r->c, junk, sizeof(junk)) != 0)
                    break;
            } else if (m == M_HALF && !half_done) {
                half_done = 1;
                if (write_all(r->c, buf, (size_t)(n + 1) / 2) != 0)
                    break;
            } /* silent, or half after its half: drop */
        }
    }
    shutdown(r->c, SHUT_RDWR);
    shutdown(r->s, SHUT_RDWR);
    return NULL;
}

static void *accept_main(void *arg)
{
    (void)arg;
    for (;;) {
        struct sockaddr_in a;
        int c = accept(listen_fd, NULL, NULL), s;

        if (c < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            return NULL; /* closed: the test is over */
        }
        if (atomic_load(&mode) == M_CLOSE) {
            close(c);
            continue;
        }
        memset(&a, 0, sizeof(a));
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons((uint16_t)upstream_port);
        s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof(a)) != 0) {
            close(c);
            if (s >= 0)
                close(s);
            continue;
        }
        pthread_mutex_lock(&relays_mu);
        if (n_relays == MAX_RELAYS) {
            pthread_mutex_unlock(&relays_mu);
            close(c);
            close(s);
            continue;
        }
        relays[n_relays] = (struct relay){c, s, 0};
        if (pthread_create(&relays[n_relays].t, NULL, relay_main,
                           &relays[n_relays]) != 0)
            abort();
        n_relays++;
        pthread_mutex_unlock(&relays_mu);
    }
}

static int relay_start(void)
{
    struct sockaddr_in a;
    socklen_t len = sizeof(a);

    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listen_fd < 0 || bind(listen_fd, (struct sockaddr *)&a, sizeof(a)) ||
        listen(listen_fd, 64) ||
        getsockname(listen_fd, (struct sockaddr *)&a, &len))
        return -1;
    if (pthread_create(&acceptor, NULL, accept_main, NULL) != 0)
        return -1;
    return ntohs(a.sin_port);
}

static void relay_stop(void)
{
    atomic_store(&mode, M_CLOSE);
    shutdown(listen_fd, SHUT_RDWR);
    close(listen_fd);
    pthread_join(acceptor, NULL);
    for (int i = 0; i < n_relays; i++) {
        pthread_join(relays[i].t, NULL);
        close(relays[i].c);
        close(relays[i].s);
    }
}

/* The real server's URL, pointed at the relay, with short timeouts. */
static char *relay_url(const char *url, int port)
{
    const char *h = strstr(url, "127.0.0.1:");
    const char *rest, *q;
    char *out = malloc(strlen(url) + 128);
    int up;

    if (h == NULL || out == NULL || sscanf(h + 10, "%d", &up) != 1)
        return NULL;
    upstream_port = up;
    rest = h + 10 + strspn(h + 10, "0123456789");
    q = strchr(url, '?');
    /* MySQL's timeout= covers the connect too; libpq's connect_timeout
     * takes whole seconds. */
    sprintf(out, "%.*s127.0.0.1:%d%s%ctimeout=1s%s", (int)(h - url), url, port,
            rest, q ? '&' : '?',
            strncmp(url, "postgres", 8) == 0 ? "&connect_timeout=2"
            : strncmp(url, "redis", 5) == 0  ? "&connect_timeout=1s"
                                             : "");
    return out;
}

static dlock_options opts(int64_t wait_ms)
{
    dlock_options o = DLOCK_OPTIONS_INIT;

    o.wait_ms = wait_ms;
    o.ttl_ms = TTL_MS;
    o.auto_renew = 0;
    return o;
}

static void one_mode(const char *url, enum mode m)
{
    char name[64], other[64];
    dlock_store *s = NULL;
    dlock_lock *l = NULL, *l2 = NULL;
    dlock_options o = opts(0);
    int64_t t0, took;
    int rc;

    snprintf(name, sizeof(name), "hostile-%s-%d", mode_name[m], (int)getpid());
    snprintf(other, sizeof(other), "hostile-%s-%d-b", mode_name[m],
             (int)getpid());
    atomic_store(&mode, M_PASS);
    EXPECT(dlock_store_open(&s, url) == DLOCK_OK);
    if (s == NULL)
        return;
    rc = dlock_acquire(&l, s, name, &o);
    EXPECT(rc == DLOCK_OK);
    if (rc != DLOCK_OK) {
        dlock_store_close(s);
        return;
    }

    atomic_store(&mode, (int)m);
    t0 = now_ms();
    rc = dlock_release(l);
    took = now_ms() - t0;
    printf("  %-8s release: %s after %lld ms: %s\n", mode_name[m],
           dlock_strerror(rc), (long long)took,
           rc == DLOCK_OK ? "" : dlock_errmsg());
    EXPECT(rc == DLOCK_EUNAVAIL || rc == DLOCK_ESTORE || rc == DLOCK_LOST);
    EXPECT(took < OP_BOUND_MS);

    t0 = now_ms();
    rc = dlock_acquire(&l2, s, other, &o);
    took = now_ms() - t0;
    printf("  %-8s acquire: %s after %lld ms: %s\n", mode_name[m],
           dlock_strerror(rc), (long long)took,
           rc == DLOCK_OK ? "" : dlock_errmsg());
    EXPECT(rc == DLOCK_EUNAVAIL || rc == DLOCK_ESTORE);
    EXPECT(took < OP_BOUND_MS);
    EXPECT(l2 == NULL);
    if (rc == DLOCK_OK)
        dlock_release(l2);

    /* Honest again: the same handle serves, and the first name is free
     * again within its lease. */
    atomic_store(&mode, M_PASS);
    o = opts(TTL_MS + OP_BOUND_MS);
    t0 = now_ms();
    rc = dlock_acquire(&l, s, name, &o);
    took = now_ms() - t0;
    printf("  %-8s then honest: %s after %lld ms\n", mode_name[m],
           dlock_strerror(rc), (long long)took);
    EXPECT(rc == DLOCK_OK);
    if (rc == DLOCK_OK)
        EXPECT(dlock_release(l) == DLOCK_OK);
    dlock_store_close(s);

    /* A new handle through a hostile relay: an error, in bounded time. */
    atomic_store(&mode, (int)m);
    s = NULL;
    t0 = now_ms();
    rc = dlock_store_open(&s, url);
    took = now_ms() - t0;
    printf("  %-8s open: %s after %lld ms: %s\n", mode_name[m],
           dlock_strerror(rc), (long long)took,
           rc == DLOCK_OK ? "" : dlock_errmsg());
    EXPECT(rc == DLOCK_EUNAVAIL || rc == DLOCK_ESTORE);
    EXPECT(s == NULL);
    EXPECT(took < OP_BOUND_MS);
    dlock_store_close(s);
}

/* A holder whose store goes silent mid-lease (the answers stop, as in a
 * network cut that drops packets): with a URL timeout longer than the
 * lease, the renewal in flight cannot answer in time, and the holder
 * must hear LOST at its own lease end, not when the timeout fires; the
 * calls on the lost lock answer at once, the renewal's connection is
 * given up by the lease end, and after the heal the handle serves. */
static int lost_w = -1;

static void on_lost_pipe(dlock_lock *lk, void *payload)
{
    int64_t t = now_ms();

    (void)lk;
    (void)payload;
    (void)!write(lost_w, &t, sizeof(t));
}

static void silent_holder(const char *relayed)
{
    enum { TTL = 1500 };
    char url[1024], name[64];
    dlock_store *s = NULL;
    dlock_lock *l = NULL;
    dlock_options o = DLOCK_OPTIONS_INIT;
    int pfd[2];
    int64_t t0, lost_at = -1, took;
    struct pollfd p;

    /* The relay's URL with timeout=1s made timeout=20s. */
    snprintf(url, sizeof(url), "%s", relayed);
    {
        char *t = strstr(url, "timeout=1s");

        if (t == NULL || strlen(url) + 2 >= sizeof(url))
            return;
        memmove(t + 10, t + 9, strlen(t + 9) + 1);
        memcpy(t, "timeout=20s", 11);
    }
    snprintf(name, sizeof(name), "hostile-lease-%d", (int)getpid());
    CHECK(pipe(pfd) == 0);
    lost_w = pfd[1];
    atomic_store(&mode, M_PASS);
    CHECK(dlock_store_open(&s, url) == DLOCK_OK);
    o.ttl_ms = TTL;
    o.on_lost = on_lost_pipe;
    t0 = now_ms();
    CHECK(dlock_acquire(&l, s, name, &o) == DLOCK_OK);
    EXPECT(dlock_lease_left(l) > 0 && dlock_lease_left(l) <= TTL);
    atomic_store(&mode, M_SILENT);
    p.fd = pfd[0];
    p.events = POLLIN;
    if (poll(&p, 1, 20000) == 1 &&
        read(pfd[0], &lost_at, sizeof(lost_at)) == (ssize_t)sizeof(lost_at))
        printf("  silent  holder told LOST %lld ms after acquire-invoke "
               "(lease %d ms)\n",
               (long long)(lost_at - t0), TTL);
    else
        printf("  silent  holder never told LOST\n");
    /* At its lease end less the margin, not before, and not later than
     * scheduling slack after it. */
    EXPECT(lost_at >= t0 + TTL - TTL / DLOCK_DRIFT_DIV - 1);
    EXPECT(lost_at >= 0 && lost_at <= t0 + TTL + 150);
    EXPECT(dlock_is_lost(l));
    EXPECT(dlock_lease_left(l) == 0);
    t0 = now_ms();
    EXPECT_RC(dlock_extend(l, 0), DLOCK_LOST);
    EXPECT_RC(dlock_release(l), DLOCK_LOST);
    took = now_ms() - t0;
    printf("  silent  extend + release of the lost lock: %lld ms\n",
           (long long)took);
    EXPECT(took < TTL);

    /* Healed: the same handle takes the name once the store's lease (as
     * renewed by the commands the server still got) has run out. */
    atomic_store(&mode, M_PASS);
    o.wait_ms = 3 * TTL;
    o.on_lost = NULL;
    l = NULL;
    EXPECT_RC(dlock_acquire(&l, s, name, &o), DLOCK_OK);
    EXPECT_RC(dlock_release(l), DLOCK_OK);
    dlock_store_close(s);
    close(pfd[0]);
    close(pfd[1]);
}

int main(int argc, char **argv)
{
    char *url;
    int port;

    if (argc < 2 || argv[1][0] == '\0') {
        fprintf(stderr, "usage: test_hostile URL (a server on 127.0.0.1)\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    port = relay_start();
    url = port > 0 ? relay_url(argv[1], port) : NULL;
    if (url == NULL) {
        fprintf(stderr, "test_hostile: cannot relay %s\n", argv[1]);
        return 2;
    }
    for (int m = M_SILENT; m <= M_CLOSE; m++)
        one_mode(url, (enum mode)m);
    silent_holder(url);
    relay_stop();
    free(url);
    printf("test_hostile: %s\n", failures ? "FAIL" : "PASS");
    return failures ? 1 : 0;
}
