/*
 * test_cancel_adv.c - one store's trouble must not slow another's cancel:
 *
 *     test_cancel_adv MYSQL_URL REDIS_URL HOLD_REPLIES_PY
 *
 * Waits that block inside a client library or on a condition variable
 * are woken by cancel.c's watch thread, through a wake-up of the store's
 * own: a MariaDB GET_LOCK by a KILL QUERY sent on another connection, a
 * Redis waiter by a signalled condition.  A KILL QUERY to a server that
 * has stopped answering waits for that server (its read timeout).  Thread
 * A waits in a GET_LOCK on a MariaDB reached through hold_replies.py,
 * thread B on a Redis lock; the proxy then holds back every reply, A's
 * cancel is fired, and once A's KILL QUERY was sent (the proxy holds its
 * answer) B's cancel is fired: B must end within the cancel's promise
 * (asserted: under 1 s, dlock.h says about 100 ms), not when A's KILL
 * gives up.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <unistd.h>

#include <mysql.h>

#include "check.h"
#include "dlock.h"

#define TTL_MS 30000
#define PROMPT_MS 1000

struct waiter {
    dlock_store *s;
    const char *name;
    dlock_cancel *c;
    pthread_t t;
    int rc;
    dlock_lock *lk;
    int64_t ended;
    int pipe[2]; /* written once the acquire returned */
};

static void *waiter_main(void *arg)
{
    struct waiter *w = arg;
    dlock_options o = DLOCK_OPTIONS_INIT;

    o.ttl_ms = TTL_MS;
    o.wait_ms = DLOCK_WAIT_FOREVER;
    o.cancel = w->c;
    w->rc = dlock_acquire(&w->lk, w->s, w->name, &o);
    w->ended = now_ms();
    (void)!write(w->pipe[1], "x", 1);
    return NULL;
}

static void waiter_start(struct waiter *w, dlock_store *s, const char *name,
                         dlock_cancel *c)
{
    memset(w, 0, sizeof(*w));
    w->s = s;
    w->name = name;
    w->c = c;
    if (pipe(w->pipe) != 0 ||
        pthread_create(&w->t, NULL, waiter_main, w) != 0) {
        perror("waiter_start");
        exit(2);
    }
}

/* 1 if the waiter ended within ms (then joined). */
static int waiter_ended(struct waiter *w, int64_t ms)
{
    struct timeval tv = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000};
    fd_set r;

    FD_ZERO(&r);
    FD_SET(w->pipe[0], &r);
    if (select(w->pipe[0] + 1, &r, NULL, NULL, &tv) != 1)
        return 0;
    pthread_join(w->t, NULL);
    return 1;
}

/* A line from fd within ms, into buf; 0 if none. */
static int read_line(int fd, char *buf, size_t len, int64_t ms)
{
    size_t n = 0;
    int64_t end = now_ms() + ms;

    while (n + 1 < len) {
        struct timeval tv;
        fd_set r;
        int64_t left = end - now_ms();

        if (left <= 0)
            return 0;
        tv.tv_sec = (time_t)(left / 1000);
        tv.tv_usec = (long)(left % 1000) * 1000;
        FD_ZERO(&r);
        FD_SET(fd, &r);
        if (select(fd + 1, &r, NULL, NULL, &tv) != 1 ||
            read(fd, buf + n, 1) != 1)
            return 0;
        if (buf[n] == '\n') {
            buf[n] = '\0';
            return 1;
        }
        n++;
    }
    return 0;
}

/* mysql://user:pw@HOST:PORT/db... split at HOST:PORT. */
static int split_url(const char *u, char *pre, char *host, int *port,
                     const char **rest)
{
    const char *at = strrchr(u, '@'), *hp, *colon, *end;

    if (at == NULL)
        return -1;
    hp = at + 1;
    end = hp + strcspn(hp, "/?");
    colon = memchr(hp, ':', (size_t)(end - hp));
    if (colon == NULL)
        return -1;
    memcpy(pre, u, (size_t)(hp - u));
    pre[hp - u] = '\0';
    memcpy(host, hp, (size_t)(colon - hp));
    host[colon - hp] = '\0';
    *port = atoi(colon + 1);
    *rest = end;
    return 0;
}

/* A session of the server waits in GET_LOCK (polled up to 10 s). */
static int in_get_lock(MYSQL *m)
{
    for (int i = 0; i < 1000; i++) {
        MYSQL_RES *r;
        MYSQL_ROW row;
        long n = 0;

        if (mysql_query(m, "SELECT COUNT(*) FROM information_schema."
                           "PROCESSLIST WHERE INFO LIKE '%GET_LOCK(%' AND "
                           "ID <> CONNECTION_ID()") == 0 &&
            (r = mysql_store_result(m)) != NULL) {
            if ((row = mysql_fetch_row(r)) != NULL && row[0] != NULL)
                n = atol(row[0]);
            mysql_free_result(r);
        }
        if (n > 0)
            return 1;
        sleep_ms(10);
    }
    return 0;
}

int main(int argc, char **argv)
{
    char pre[512], host[256], purl[1024], line[64], name[128];
    const char *rest;
    int port, out[2];
    pid_t proxy;
    dlock_store *mh, *mw, *rh, *rw;
    dlock_lock *hm = NULL, *hr = NULL;
    dlock_cancel *ca = NULL, *cb = NULL;
    dlock_options o = DLOCK_OPTIONS_INIT;
    struct waiter a, b;
    MYSQL *m;
    int64_t fired;

    if (argc < 4 || argv[1][0] == '\0' || argv[2][0] == '\0') {
        fprintf(stderr, "usage: test_cancel_adv MYSQL_URL REDIS_URL "
                        "HOLD_REPLIES_PY\n");
        return 2;
    }
    if (split_url(argv[1], pre, host, &port, &rest) != 0) {
        fprintf(stderr, "cannot read host:port in the MySQL URL\n");
        return 2;
    }
    if (pipe(out) != 0)
        return 2;
    proxy = fork();
    if (proxy == 0) {
        char ps[16];

        snprintf(ps, sizeof(ps), "%d", port);
        dup2(out[1], 1);
        execlp("python3", "python3", argv[3], host, ps, (char *)NULL);
        _exit(127);
    }
    close(out[1]);
    if (!read_line(out[0], line, sizeof(line), 10000)) {
        fprintf(stderr, "the proxy did not start\n");
        return 2;
    }
    snprintf(purl, sizeof(purl), "%s127.0.0.1:%s%s", pre, line, rest);
    snprintf(name, sizeof(name), "cancel-adv-%ld-%lld", (long)getpid(),
             (long long)now_ms());
    if (dlock_store_open(&mh, argv[1]) != DLOCK_OK ||
        dlock_store_open(&mw, purl) != DLOCK_OK ||
        dlock_store_open(&rh, argv[2]) != DLOCK_OK ||
        dlock_store_open(&rw, argv[2]) != DLOCK_OK) {
        fprintf(stderr, "cannot open the stores: %s\n", dlock_errmsg());
        kill(proxy, SIGTERM);
        return 2;
    }
    m = mysql_init(NULL);
    {
        char user[128] = "", pw[128] = "", db[128] = "";
        const char *u = pre + strlen("mysql://");

        (void)sscanf(u, "%127[^:]:%127[^@]", user, pw);
        (void)sscanf(rest, "/%127[^?]", db);
        if (mysql_real_connect(m, host, user, pw, db, (unsigned)port, NULL,
                               0) == NULL) {
            fprintf(stderr, "raw connect: %s\n", mysql_error(m));
            kill(proxy, SIGTERM);
            return 2;
        }
    }

    o.ttl_ms = TTL_MS;
    o.wait_ms = 0;
    if (dlock_acquire(&hm, mh, name, &o) != DLOCK_OK ||
        dlock_acquire(&hr, rh, name, &o) != DLOCK_OK ||
        dlock_cancel_new(&ca) != DLOCK_OK ||
        dlock_cancel_new(&cb) != DLOCK_OK) {
        fprintf(stderr, "setup: %s\n", dlock_errmsg());
        kill(proxy, SIGTERM);
        return 2;
    }
    waiter_start(&a, mw, name, ca);
    EXPECT(in_get_lock(m));
    waiter_start(&b, rw, name, cb);
    sleep_ms(300); /* B in its wait (a cancel before it ends it the same) */

    /* The MariaDB stops answering; A's KILL QUERY is sent, unanswered. */
    kill(proxy, SIGUSR1);
    dlock_cancel_fire(ca);
    EXPECT(read_line(out[0], line, sizeof(line), 10000) &&
           strcmp(line, "held") == 0);

    fired = now_ms();
    dlock_cancel_fire(cb);
    EXPECT(waiter_ended(&b, 30000));
    EXPECT_RC(b.rc, DLOCK_ECANCELED);
    printf("redis cancel took %lld ms while the MariaDB hangs\n",
           (long long)(b.ended - fired));
    EXPECT(b.ended - fired < PROMPT_MS);

    /* The MariaDB goes away: A ends too. */
    kill(proxy, SIGTERM);
    waitpid(proxy, NULL, 0);
    EXPECT(waiter_ended(&a, 30000));
    EXPECT_RC(a.rc, DLOCK_ECANCELED);
    EXPECT_RC(dlock_release(hm), DLOCK_OK);
    EXPECT_RC(dlock_release(hr), DLOCK_OK);
    dlock_cancel_free(ca);
    dlock_cancel_free(cb);
    mysql_close(m);
    dlock_store_close(mh);
    dlock_store_close(mw);
    dlock_store_close(rh);
    dlock_store_close(rw);
    printf("watch: %d failure(s)\n", failures);
    return failures > 100 ? 100 : failures;
}
