/*
 * dlock-bench - speed against the physical limit: every figure is also
 * given as a ratio to the same server's raw round trip, measured in the
 * same run, so the numbers hold on a noisy machine.
 *
 *   dlock-bench URL [--json FILE] [--quick] [--many N] [--only PART]
 *               [--renew N] [--renew-seconds S] [--waiters N]
 *
 * 1. uncontended: acquire + release on one name, one client, in blocks
 *    alternating with blocks of no-ops (PING, SELECT 1, DO 1, or an empty
 *    BEGIN IMMEDIATE/COMMIT for SQLite, a serializable range of a missing
 *    key for etcd) on a connection of our own; the
 *    ratio (cycle time) / (2 x no-op time) = noop/s / (2 x cycles/s) per
 *    pair of blocks, median and spread: 1.0 is a cycle that costs exactly
 *    its two round trips.  rediss:// (TLS): the no-op is a PING over TLS
 *    through the store's own transport (src/stores/redis/rconn.c), with
 *    the URL's ?cacert= ?cert= ?key= ?sni=.
 *    Redis (plain redis:// or unix://; also --only redis-cpu): the
 *    server's CPU (INFO cpu) per cycle of the seed cycle, SET NX PX + a
 *    compare-and-delete EVALSHA on a raw connection, and of dlock's
 *    acquire + release, 20,000 each in one run, and their ratio.
 * 2. contended: 8 processes on one name, hold 1 ms, think 1 ms; cycles/s,
 *    hand-off latency (release by A -> acquire by B != A), Jain's fairness
 *    index, share of acquisitions that went back to the releaser.
 * 3. many locks: one process holding N names with auto-renew: RSS per held
 *    lock and renewals per second; and 100 waiters on one name: what one
 *    release costs (client requests the server counted, per hand-off) and
 *    how long the hand-off takes with that many waiting.
 * 4. dead holder: time until a contender holds the lock after kill -9 of
 *    the holder.
 * 5. renewal at scale (--only renew): one process holds N names (default
 *    10,000; --renew N) with auto-renew on a 3 s lease for a while
 *    (--renew-seconds S, or $DLOCK_BENCH_RENEW_SECONDS; default 60, 5
 *    with --quick): renewals/s, locks lost (must be 0), the renew
 *    thread's CPU time as a share of one core, and the server's requests
 *    per second where it counts them (batching: far fewer than
 *    renewals).
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "contract.h"
#include "dlock.h"
#include "registry.h" /* dlock__renewals() */
#include "url.h"
#ifdef DLOCK_HAVE_REDIS
#include "../src/stores/redis/rconn.h"
#endif

static int64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_us(int64_t us)
{
    struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return x < y ? -1 : x > y;
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static int64_t pct(int64_t *v, size_t n, double p)
{
    size_t i;

    if (n == 0)
        return 0;
    qsort(v, n, sizeof(*v), cmp_i64);
    i = (size_t)(p * (double)(n - 1) + 0.5);
    return v[i];
}

static const char *url;
static char run_id[64];
static FILE *json;
static int quick;
static int many_n;
static const char
    *only; /* --only uncontended|redis-cpu|contended|many|herd|dead|renew
            * |etcd-own */
static int etcd_own; /* --only etcd-own: etcd locks not auto-renewed */
static int renew_n = 10000;
static int renew_s; /* 0: the default */

static int want(const char *part)
{
    return only == NULL || strcmp(only, part) == 0;
}

static void die(const char *what)
{
    fprintf(stderr, "dlock-bench: %s: %s\n", what, dlock_errmsg());
    exit(1);
}

static dlock_store *open_store(void)
{
    dlock_store *s;

    if (dlock_store_open(&s, url) != DLOCK_OK)
        die("open");
    return s;
}

static void jnum(const char *key, double v, int last)
{
    if (json != NULL)
        fprintf(json, "    \"%s\": %.6g%s\n", key, v, last ? "" : ",");
}

/* --- 1. uncontended --------------------------------------------------- */

/* rediss://: PING over TLS on a connection of our own, as bench_noop()
 * does in plaintext (noop.c: hiredis has no TLS). */
#ifdef DLOCK_HAVE_REDIS
static struct rtls *tls_cfg;
static struct rconn *tls_conn;

static int tls_noop_open(void)
{
    struct dlock_url *u;
    int ok = -1;

    if (strncmp(url, "rediss://", 9) != 0 || dlock__url_parse(&u, url) != 0)
        return -1;
    if (dlock__rtls_new(&tls_cfg, dlock__url_param(u, "cacert"),
                        dlock__url_param(u, "cert"), dlock__url_param(u, "key"),
                        dlock__url_param(u, "sni"), u->redacted) == DLOCK_OK &&
        (tls_conn = dlock__rconn_connect(
             tls_cfg, u->host ? u->host : "127.0.0.1", u->port ? u->port : 6379,
             NULL, 5000)) != NULL &&
        !tls_conn->err) {
        redisReply *r =
            u->password == NULL ? NULL
            : u->user != NULL && u->user[0] != '\0'
                ? dlock__rconn_command(tls_conn, "AUTH %s %s", u->user,
                                       u->password)
                : dlock__rconn_command(tls_conn, "AUTH %s", u->password);

        freeReplyObject(r);
        dlock__rconn_set_timeout(tls_conn, 5000);
        ok = 0;
    }
    dlock__url_free(u);
    return ok;
}

static int tls_noop(void)
{
    redisReply *r = dlock__rconn_command(tls_conn, "PING");
    int ok = r != NULL && r->type == REDIS_REPLY_STATUS ? 0 : -1;

    freeReplyObject(r);
    return ok;
}

static void tls_noop_close(void)
{
    dlock__rconn_free(tls_conn);
    dlock__rtls_free(tls_cfg);
}
#else
static int tls_noop_open(void)
{
    return -1;
}

static int tls_noop(void)
{
    return -1;
}

static void tls_noop_close(void)
{
}
#endif
/* The contract's floor (PostgreSQL, MariaDB, etcd): 'p', 'm', 'e' or 0
 * (none). */
static int no_floor; /* --no-floor */
static char floor_kind;
static long server_pid = -1;
static int floor_engine; /* MariaDB: 0 MEMORY, 1 MyISAM latin1 */
static int floor_cycle(struct bench_noop *noop);

static void floor_setup(struct bench_noop *noop)
{
    const char *e = getenv("DLOCK_BENCH_FLOOR_ENGINE");

    floor_engine = e != NULL && !strcmp(e, "myisam");
    switch (bench_noop_kind(noop)) {
#ifdef DLOCK_HAVE_POSTGRES
    case 'p':
        if (cfloor_pg_setup(bench_noop_conn(noop)) == 0) {
            floor_kind = 'p';
            server_pid = cfloor_pg_server_pid(bench_noop_conn(noop));
        }
        break;
#endif
#ifdef DLOCK_HAVE_MYSQL
    case 'm':
        if (cfloor_my_setup(bench_noop_conn(noop)) == 0) {
            floor_kind = 'm';
            server_pid = cfloor_my_server_pid(bench_noop_conn(noop));
        }
        break;
#endif
#ifdef DLOCK_HAVE_ETCD
    case 'e':
        ((struct cfloor_etcd *)bench_noop_conn(noop))->txn =
            e != NULL && !strcmp(e, "txn");
        if (cfloor_etcd_setup(bench_noop_conn(noop)) == 0) {
            floor_kind = 'e';
            server_pid = cfloor_etcd_server_pid();
        }
        break;
#endif
    }
    if (floor_kind == 0)
        return;
    for (int i = 0; i < 100; i++) /* warm */
        if (floor_cycle(noop) != 0)
            die("contract floor");
}

static int floor_cycle(struct bench_noop *noop)
{
    (void)noop; /* a build with neither SQL store */
    switch (floor_kind) {
#ifdef DLOCK_HAVE_POSTGRES
    case 'p':
        return cfloor_pg_cycle(bench_noop_conn(noop));
#endif
#ifdef DLOCK_HAVE_MYSQL
    case 'm':
        return cfloor_my_cycle(bench_noop_conn(noop), floor_engine);
#endif
#ifdef DLOCK_HAVE_ETCD
    case 'e':
        return cfloor_etcd_cycle(bench_noop_conn(noop));
#endif
    }
    return -1;
}

static void floor_teardown(struct bench_noop *noop)
{
    (void)noop; /* a build with neither SQL store */
    switch (floor_kind) {
#ifdef DLOCK_HAVE_POSTGRES
    case 'p':
        cfloor_pg_teardown(bench_noop_conn(noop));
        break;
#endif
#ifdef DLOCK_HAVE_MYSQL
    case 'm':
        cfloor_my_teardown(bench_noop_conn(noop));
        break;
#endif
#ifdef DLOCK_HAVE_ETCD
    case 'e':
        cfloor_etcd_teardown(bench_noop_conn(noop));
        break;
#endif
    }
}

static void bench_uncontended(void)
{
    const int blocks = quick ? 5 : 15, per = quick ? 200 : 1000;
    struct bench_noop *noop;
    dlock_store *s = open_store();
    dlock_options o = DLOCK_OPTIONS_INIT;
    int64_t *lat = malloc(sizeof(int64_t) * (size_t)(blocks * per));
    double ratio[64], cyc_rate[64], noop_rate[64], floor_rate[64], fratio[64];
    long long floor_cpu = 0, dlock_cpu = 0, floor_n = 0, dlock_n = 0;
    char name[128];
    size_t nl = 0;
    double req;

    if (lat == NULL)
        exit(1);
    if (bench_noop_open(&noop, url) != 0) {
        noop = NULL;
        if (tls_noop_open() != 0) {
            fprintf(stderr, "dlock-bench: no baseline for %s\n", url);
            exit(1);
        }
    }
    snprintf(name, sizeof(name), "%s/uncontended", run_id);
    o.auto_renew = 0; /* nothing in the background during the timing */
    /* etcd: a lock that is not auto-renewed takes a lease of its own (a
     * grant per acquire: 3 round trips a cycle); the default, renewed
     * locks of one TTL share the handle's lease, refreshed by the
     * acquires about once a second, and that is the cycle timed (each
     * lock lives far less than the third of its TTL at which the renew
     * thread would first renew it).  --only etcd-own times the other. */
    if (strncmp(url, "etcd", 4) == 0 && !etcd_own)
        o.auto_renew = 1;
    /* The contract's floor (contract.h), on the no-op's connection, in
     * blocks alternating with dlock's, and the server's CPU time over
     * each: dlock's cycle / the floor's, beside the round-trip ratio. */
    if (!no_floor)
        floor_setup(noop);
    for (int b = 0; b < blocks; b++) {
        int64_t t0 = now_ns(), t1;
        long long c0 = -1, c1 = -1;

        for (int i = 0; i < per; i++)
            if ((noop != NULL ? bench_noop(noop) : tls_noop()) != 0)
                die("no-op");
        t1 = now_ns();
        noop_rate[b] = per / ((double)(t1 - t0) / 1e9);
        if (floor_kind != 0) {
            c0 = cfloor_server_cpu_ns(server_pid);
            t0 = now_ns();
            for (int i = 0; i < per; i++)
                if (floor_cycle(noop) != 0)
                    die("contract floor");
            t1 = now_ns();
            c1 = cfloor_server_cpu_ns(server_pid);
            floor_rate[b] = per / ((double)(t1 - t0) / 1e9);
            if (c0 >= 0 && c1 >= c0)
                floor_cpu += c1 - c0, floor_n += per;
        }
        c0 = floor_kind != 0 ? cfloor_server_cpu_ns(server_pid) : -1;
        t0 = now_ns();
        for (int i = 0; i < per; i++) {
            int64_t q0 = now_ns();
            dlock_lock *l;

            if (dlock_acquire(&l, s, name, &o) != DLOCK_OK)
                die("acquire");
            if (dlock_release(l) != DLOCK_OK)
                die("release");
            lat[nl++] = now_ns() - q0;
        }
        t1 = now_ns();
        c1 = floor_kind != 0 ? cfloor_server_cpu_ns(server_pid) : -1;
        if (c0 >= 0 && c1 >= c0)
            dlock_cpu += c1 - c0, dlock_n += per;
        cyc_rate[b] = per / ((double)(t1 - t0) / 1e9);
        ratio[b] = noop_rate[b] / (2.0 * cyc_rate[b]);
        if (floor_kind != 0)
            fratio[b] = floor_rate[b] / cyc_rate[b];
    }
    /* What the server counted per cycle (statements where it can tell):
     * the round trips, as the server sees them. */
    {
        long long r0 = noop != NULL ? bench_server_requests(noop) : -1, r1 = -1;

        if (r0 >= 0) {
            for (int i = 0; i < 100; i++) {
                dlock_lock *l;

                if (dlock_acquire(&l, s, name, &o) != DLOCK_OK ||
                    dlock_release(l) != DLOCK_OK)
                    die("cycle");
            }
            r1 = bench_server_requests(noop);
        }
        req = r0 >= 0 && r1 >= 0 ? (double)(r1 - r0) / 100 : -1;
    }
    qsort(ratio, (size_t)blocks, sizeof(double), cmp_dbl);
    qsort(cyc_rate, (size_t)blocks, sizeof(double), cmp_dbl);
    qsort(noop_rate, (size_t)blocks, sizeof(double), cmp_dbl);
    {
        double med = ratio[blocks / 2], lo = ratio[0], hi = ratio[blocks - 1];
        int64_t p50 = pct(lat, nl, 0.5), p99 = pct(lat, nl, 0.99);

        printf("%s  %9.0f cycles/s  p50 %7.1f us  p99 %7.1f us  "
               "no-op %9.0f/s  cycle/(2 x no-op) %.2f (%.2f..%.2f)",
               etcd_own ? "uncontended, not auto-renewed" : "uncontended",
               cyc_rate[blocks / 2], p50 / 1e3, p99 / 1e3,
               noop_rate[blocks / 2], med, lo, hi);
        if (req >= 0)
            printf("  server-counted requests/cycle %.2f", req);
        printf("\n");
        if (floor_kind != 0) {
            qsort(fratio, (size_t)blocks, sizeof(double), cmp_dbl);
            qsort(floor_rate, (size_t)blocks, sizeof(double), cmp_dbl);
            printf("             contract floor %9.0f cycles/s: "
                   "cycle/floor %.2f (%.2f..%.2f)",
                   floor_rate[blocks / 2], fratio[blocks / 2], fratio[0],
                   fratio[blocks - 1]);
            if (floor_n > 0 && dlock_n > 0 && floor_cpu > 0)
                printf("  server CPU/cycle %.1f us, floor %.1f us: "
                       "cycle/floor %.2f",
                       dlock_cpu / 1e3 / dlock_n, floor_cpu / 1e3 / floor_n,
                       ((double)dlock_cpu / dlock_n) /
                           ((double)floor_cpu / floor_n));
            printf("\n");
        }
        if (json != NULL)
            fprintf(json, "  \"uncontended\": {\n");
        jnum("cycles_per_s", cyc_rate[blocks / 2], 0);
        jnum("p50_us", p50 / 1e3, 0);
        jnum("p99_us", p99 / 1e3, 0);
        jnum("noop_per_s", noop_rate[blocks / 2], 0);
        jnum("noop_rtt_us", 1e6 / noop_rate[blocks / 2], 0);
        jnum("ratio_median", med, 0);
        jnum("ratio_min", lo, 0);
        jnum("ratio_max", hi, 0);
        if (floor_kind != 0) {
            jnum("floor_cycles_per_s", floor_rate[blocks / 2], 0);
            jnum("floor_ratio_median", fratio[blocks / 2], 0);
            jnum("floor_ratio_min", fratio[0], 0);
            jnum("floor_ratio_max", fratio[blocks - 1], 0);
            if (floor_n > 0 && dlock_n > 0 && floor_cpu > 0) {
                jnum("server_cpu_us_per_cycle", dlock_cpu / 1e3 / dlock_n, 0);
                jnum("floor_server_cpu_us_per_cycle", floor_cpu / 1e3 / floor_n,
                     0);
                jnum("server_cpu_ratio_to_floor",
                     ((double)dlock_cpu / dlock_n) /
                         ((double)floor_cpu / floor_n),
                     0);
            }
        }
        jnum("requests_per_cycle", req, 1);
        if (json != NULL)
            fprintf(json, "  },\n");
    }
    if (floor_kind != 0)
        floor_teardown(noop);
    /* SQLite's empty transaction never touches the disk, while every lock
     * change is a durable commit: compare with a one-row commit too. */
    if (noop != NULL && bench_noop_durable(noop) == 0) {
        int64_t t0 = now_ns();
        double rate;

        for (int i = 0; i < per; i++)
            if (bench_noop_durable(noop) != 0)
                die("durable no-op");
        rate = per / ((double)(now_ns() - t0) / 1e9);
        printf("             durable one-row commit %9.0f/s: "
               "cycle/(2 x commit) %.2f\n",
               rate, rate / (2.0 * cyc_rate[blocks / 2]));
        if (json != NULL)
            fprintf(json, "  \"uncontended_durable\": {\n");
        jnum("commit_per_s", rate, 0);
        jnum("ratio", rate / (2.0 * cyc_rate[blocks / 2]), 1);
        if (json != NULL)
            fprintf(json, "  },\n");
    }
    if (noop != NULL)
        bench_noop_close(noop);
    else
        tls_noop_close();
    dlock_store_close(s);
    free(lat);
}

/* --- 1b. Redis: the server's CPU per uncontended cycle ------------------ */

#ifdef DLOCK_HAVE_REDIS
/* The server's own CPU time (used_cpu_sys + used_cpu_user of INFO cpu),
 * in us; -1 if unknown. */
static double redis_cpu_us(redisContext *rc)
{
    redisReply *r = redisCommand(rc, "INFO cpu");
    double sys = -1, user = -1;

    if (r != NULL && r->type == REDIS_REPLY_STRING) {
        const char *p = strstr(r->str, "used_cpu_sys:");
        const char *q = strstr(r->str, "used_cpu_user:");

        if (p != NULL)
            sys = strtod(p + 13, NULL);
        if (q != NULL)
            user = strtod(q + 14, NULL);
    }
    freeReplyObject(r);
    return sys < 0 || user < 0 ? -1 : (sys + user) * 1e6;
}

/* The seed cycle, the classic single-instance Redis lock: SET key token
 * NX PX ttl, then the compare-and-delete script by EVALSHA, on a raw
 * hiredis connection; against dlock's uncontended acquire + release, N
 * cycles each, alternating blocks, in one run: the server's CPU per cycle
 * of each and their ratio (issue 26: <= 1.5).  Only a plain redis:// or
 * unix:// server (the no-op's connection); Sentinel, Cluster and TLS run
 * the same scripts. */
static void bench_redis_cpu(void)
{
    static const char cad[] =
        "if redis.call('get',KEYS[1])==ARGV[1] then "
        "return redis.call('del',KEYS[1]) else return 0 end";
    const int n = quick ? 4000 : 20000, blocks = 4, per = n / blocks;
    struct bench_noop *noop;
    redisContext *rc;
    redisReply *r;
    dlock_store *s;
    dlock_options o = DLOCK_OPTIONS_INIT;
    char sha[41], key[160], name[128], tok[40];
    double seed_us = 0, dl_us = 0, seed_s = 0, dl_s = 0;

    if (bench_noop_open(&noop, url) != 0)
        return;
    if (bench_noop_kind(noop) != 'r') {
        bench_noop_close(noop);
        return;
    }
    rc = bench_noop_conn(noop);
    r = redisCommand(rc, "SCRIPT LOAD %s", cad);
    if (r == NULL || r->type != REDIS_REPLY_STRING || r->len != 40 ||
        redis_cpu_us(rc) < 0) {
        /* a Cluster node or Sentinel, or no INFO: no figure */
        freeReplyObject(r);
        bench_noop_close(noop);
        return;
    }
    memcpy(sha, r->str, 40);
    sha[40] = '\0';
    freeReplyObject(r);
    s = open_store();
    o.auto_renew = 0;
    snprintf(name, sizeof(name), "%s/cpu", run_id);
    snprintf(key, sizeof(key), "{%s}/seed", run_id);
    for (int b = 0; b < blocks; b++) {
        double c0 = redis_cpu_us(rc), c1;
        int64_t t0 = now_ns();

        for (int i = 0; i < per; i++) {
            snprintf(tok, sizeof(tok), "%08x%08x%08x%08x", (unsigned)b,
                     (unsigned)i, (unsigned)getpid(), 0x5eedu);
            r = redisCommand(rc, "SET %s %s NX PX 30000", key, tok);
            if (r == NULL || r->type != REDIS_REPLY_STATUS)
                die("seed SET");
            freeReplyObject(r);
            r = redisCommand(rc, "EVALSHA %s 1 %s %s", sha, key, tok);
            if (r == NULL || r->type != REDIS_REPLY_INTEGER || r->integer != 1)
                die("seed EVALSHA");
            freeReplyObject(r);
        }
        seed_s += (double)(now_ns() - t0) / 1e9;
        c1 = redis_cpu_us(rc);
        seed_us += c1 - c0;
        t0 = now_ns();
        for (int i = 0; i < per; i++) {
            dlock_lock *l;

            if (dlock_acquire(&l, s, name, &o) != DLOCK_OK)
                die("acquire");
            if (dlock_release(l) != DLOCK_OK)
                die("release");
        }
        dl_s += (double)(now_ns() - t0) / 1e9;
        dl_us += redis_cpu_us(rc) - c1;
    }
    /* each block's INFO cpu itself is counted once per side: the same */
    printf("redis cpu    server CPU per cycle: seed (SET NX PX + "
           "compare-and-delete) %.2f us, dlock %.2f us, ratio %.2f; "
           "%.0f vs %.0f cycles/s (%d each)\n",
           seed_us / (blocks * per), dl_us / (blocks * per), dl_us / seed_us,
           blocks * per / seed_s, blocks * per / dl_s, blocks * per);
    if (json != NULL)
        fprintf(json, "  \"redis_server_cpu\": {\n");
    jnum("seed_us_per_cycle", seed_us / (blocks * per), 0);
    jnum("dlock_us_per_cycle", dl_us / (blocks * per), 0);
    jnum("ratio", dl_us / seed_us, 0);
    jnum("seed_cycles_per_s", blocks * per / seed_s, 0);
    jnum("dlock_cycles_per_s", blocks * per / dl_s, 0);
    jnum("cycles", blocks * per, 1);
    if (json != NULL)
        fprintf(json, "  },\n");
    dlock_store_close(s);
    bench_noop_close(noop);
}
#else
static void bench_redis_cpu(void)
{
}
#endif

/* --- 2. contended ------------------------------------------------------ */

struct event {
    int64_t acquired, released; /* ns, monotonic */
    int proc;
};

struct shared {
    volatile int go;
    int n;
    struct event ev[];
};

static void contender(struct shared *sh, int proc, int64_t end, int max)
{
    dlock_store *s = open_store();
    dlock_options o = DLOCK_OPTIONS_INIT;
    char name[128];

    snprintf(name, sizeof(name), "%s/contended", run_id);
    o.wait_ms = DLOCK_WAIT_FOREVER;
    while (!sh->go)
        sleep_us(100);
    while (now_ns() < end) {
        dlock_lock *l;
        int i;

        if (dlock_acquire(&l, s, name, &o) != DLOCK_OK)
            die("contended acquire");
        i = __atomic_fetch_add(&sh->n, 1, __ATOMIC_SEQ_CST);
        if (i >= max)
            _exit(2);
        sh->ev[i].acquired = now_ns();
        sh->ev[i].proc = proc;
        sleep_us(1000); /* hold */
        sh->ev[i].released = now_ns();
        if (dlock_release(l) != DLOCK_OK)
            die("contended release");
        sleep_us(1000); /* think */
    }
    dlock_store_close(s);
    _exit(0);
}

static int cmp_ev(const void *a, const void *b)
{
    const struct event *x = a, *y = b;

    return x->acquired < y->acquired ? -1 : x->acquired > y->acquired;
}

static void bench_contended(void)
{
    enum { P = 8 };
    const int secs = quick ? 3 : 10, max = 400000;
    size_t size = sizeof(struct shared) + sizeof(struct event) * max;
    struct shared *sh = mmap(NULL, size, PROT_READ | PROT_WRITE,
                             MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    int64_t end, *hand = NULL;
    long per[P] = {0}, back = 0, nh = 0;
    double sum = 0, sumsq = 0, jain;
    pid_t pids[P];
    struct bench_noop *noop = NULL;
    long long r0 = -1, r1 = -1;
    int n;

    if (sh == MAP_FAILED)
        exit(1);
    end = now_ns() + (int64_t)(secs + 1) * 1000000000;
    for (int p = 0; p < P; p++) {
        pids[p] = fork();
        if (pids[p] == 0)
            contender(sh, p, end, max);
    }
    sleep_us(1000000); /* all connected: the clock starts at "go" */
    if (bench_noop_open(&noop, url) == 0)
        r0 = bench_server_requests(noop);
    sh->go = 1;
    for (int p = 0; p < P; p++)
        waitpid(pids[p], NULL, 0);
    if (noop != NULL)
        r1 = bench_server_requests(noop);
    bench_noop_close(noop);
    n = sh->n;
    qsort(sh->ev, (size_t)n, sizeof(struct event), cmp_ev);
    hand = malloc(sizeof(int64_t) * (size_t)(n + 1));
    if (hand == NULL)
        exit(1);
    for (int i = 0; i < n; i++) {
        per[sh->ev[i].proc]++;
        if (i == 0)
            continue;
        if (sh->ev[i].proc == sh->ev[i - 1].proc)
            back++;
        else
            hand[nh++] = sh->ev[i].acquired - sh->ev[i - 1].released;
    }
    for (int p = 0; p < P; p++) {
        sum += (double)per[p];
        sumsq += (double)per[p] * (double)per[p];
    }
    jain = sumsq > 0 ? sum * sum / (P * sumsq) : 0;
    {
        double rate = n / (double)secs;
        int64_t p50 = pct(hand, (size_t)nh, 0.5),
                p99 = pct(hand, (size_t)nh, 0.99);
        int64_t mx = nh ? hand[nh - 1] : 0;

        double req = r0 >= 0 && r1 >= 0 && n > 0 ? (double)(r1 - r0) / n : -1;

        printf("contended    %9.0f cycles/s  hand-off p50 %7.1f us  p99 %7.1f "
               "us  max %7.1f us  Jain %.3f  back to releaser %.1f%%  "
               "requests/cycle %.2f\n",
               rate, p50 / 1e3, p99 / 1e3, mx / 1e3, jain,
               n > 1 ? 100.0 * back / (n - 1) : 0.0, req);
        if (json != NULL)
            fprintf(json, "  \"contended\": {\n");
        jnum("processes", P, 0);
        jnum("cycles_per_s", rate, 0);
        jnum("handoff_p50_us", p50 / 1e3, 0);
        jnum("handoff_p99_us", p99 / 1e3, 0);
        jnum("handoff_max_us", mx / 1e3, 0);
        jnum("jain_fairness", jain, 0);
        jnum("back_to_releaser", n > 1 ? (double)back / (n - 1) : 0, 0);
        jnum("requests_per_cycle", req, 1);
        if (json != NULL)
            fprintf(json, "  },\n");
    }
    free(hand);
    munmap(sh, size);
}

/* --- 3. many locks ------------------------------------------------------ */

static long rss_kb(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, res = 0;

    if (f != NULL) {
        if (fscanf(f, "%ld %ld", &pages, &res) != 2)
            res = 0;
        fclose(f);
    }
    return res * (sysconf(_SC_PAGESIZE) / 1024);
}

static void bench_many(void)
{
    const int n = many_n > 0 ? many_n : quick ? 1000 : 10000;
    const int64_t ttl = 30000;
    dlock_store *s = open_store();
    dlock_options o = DLOCK_OPTIONS_INIT;
    dlock_lock **l = calloc((size_t)n, sizeof(*l));
    long before, after;
    int64_t t0, t1;
    char name[128];

    if (l == NULL)
        exit(1);
    o.ttl_ms = ttl;
    before = rss_kb();
    t0 = now_ns();
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof(name), "%s/many/%06d", run_id, i);
        if (dlock_acquire(&l[i], s, name, &o) != DLOCK_OK)
            die("many acquire");
    }
    t1 = now_ns();
    after = rss_kb();
    printf("many locks   %d held: %.0f acquires/s, %.2f KiB RSS per held "
           "lock (client side), renewals %.0f/s (one per lock per ttl/3 = "
           "%.0f s)\n",
           n, n / ((double)(t1 - t0) / 1e9), (double)(after - before) / n,
           n / (ttl / 3000.0), ttl / 3000.0);
    if (json != NULL)
        fprintf(json, "  \"many\": {\n");
    jnum("held", n, 0);
    jnum("acquires_per_s", n / ((double)(t1 - t0) / 1e9), 0);
    jnum("rss_kib_per_lock", (double)(after - before) / n, 0);
    jnum("renewals_per_s", n / (ttl / 3000.0), 1);
    if (json != NULL)
        fprintf(json, "  },\n");
    for (int i = 0; i < n; i++)
        if (dlock_release(l[i]) != DLOCK_OK)
            die("many release");
    free(l);
    dlock_store_close(s);
}

/* --- 5. renewal at scale ---------------------------------------------- */

/* The renew thread's CPU time so far, in ns, found by its name in
 * /proc/self/task (-1 when it cannot be found).  schedstat counts
 * nanoseconds; stat's utime + stime (clock ticks) where it is missing. */
static int64_t renew_cpu_ns(void)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    int64_t ns = -1;

    if (d == NULL)
        return -1;
    while (ns < 0 && (e = readdir(d)) != NULL) {
        char path[300], comm[32] = "";
        unsigned long long run, ut, st;
        FILE *f;

        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
        f = fopen(path, "r");
        if (f == NULL)
            continue;
        if (fgets(comm, sizeof(comm), f) == NULL)
            comm[0] = '\0';
        fclose(f);
        if (strcmp(comm, "dlock-renew\n") != 0)
            continue;
        snprintf(path, sizeof(path), "/proc/self/task/%s/schedstat", e->d_name);
        f = fopen(path, "r");
        if (f != NULL && fscanf(f, "%llu", &run) == 1)
            ns = (int64_t)run;
        if (f != NULL)
            fclose(f);
        if (ns >= 0)
            break;
        snprintf(path, sizeof(path), "/proc/self/task/%s/stat", e->d_name);
        f = fopen(path, "r");
        if (f != NULL &&
            fscanf(f,
                   "%*d (%*[^)]) %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u "
                   "%*u %llu %llu",
                   &ut, &st) == 2)
            ns = (int64_t)((ut + st) *
                           (1000000000ULL /
                            (unsigned long long)sysconf(_SC_CLK_TCK)));
        if (f != NULL)
            fclose(f);
    }
    closedir(d);
    return ns;
}

static int renew_lost;
static void renew_on_lost(dlock_lock *l, void *payload)
{
    (void)l;
    (void)payload;
    __atomic_add_fetch(&renew_lost, 1, __ATOMIC_SEQ_CST);
}

static void bench_renew(void)
{
    const int n = renew_n;
    const int64_t ttl = 3000;
    const char *env = getenv("DLOCK_BENCH_RENEW_SECONDS");
    int secs = renew_s > 0                    ? renew_s
               : env != NULL && atoi(env) > 0 ? atoi(env)
               : quick                        ? 5
                                              : 60;
    dlock_store *s = open_store();
    dlock_options o = DLOCK_OPTIONS_INIT;
    dlock_lock **l = calloc((size_t)n, sizeof(*l));
    struct bench_noop *noop = NULL;
    long long req0 = -1, req1 = -1;
    int64_t cpu0, cpu1, t0, t1, ta;
    uint64_t r0, r1;
    int lost = 0, bad = 0;
    double rate, cpu_pct, req_rate = -1;
    char name[128];

    if (l == NULL)
        exit(1);
    o.ttl_ms = ttl;
    o.on_lost = renew_on_lost;
    ta = now_ns();
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof(name), "%s/renew/%06d", run_id, i);
        if (dlock_acquire(&l[i], s, name, &o) != DLOCK_OK) {
            fprintf(stderr, "renew acquire %d: %s\n", i, dlock_errmsg());
            die("renew acquire");
        }
    }
    if (bench_noop_open(&noop, url) == 0)
        req0 = bench_server_requests(noop);
    /* Measured from the end of the acquires: a steady state. */
    t0 = now_ns();
    r0 = dlock__renewals();
    cpu0 = renew_cpu_ns();
    sleep_us((int64_t)secs * 1000000);
    t1 = now_ns();
    r1 = dlock__renewals();
    cpu1 = renew_cpu_ns();
    if (noop != NULL) {
        req1 = bench_server_requests(noop);
        bench_noop_close(noop);
    }
    for (int i = 0; i < n; i++)
        if (dlock_is_lost(l[i]))
            lost++;
    for (int i = 0; i < n; i++)
        if (dlock_release(l[i]) != DLOCK_OK)
            bad++;
    rate = (double)(r1 - r0) / ((double)(t1 - t0) / 1e9);
    cpu_pct = cpu0 >= 0 && cpu1 >= 0
                  ? 100.0 * (double)(cpu1 - cpu0) / (double)(t1 - t0)
                  : -1;
    if (req0 >= 0 && req1 >= req0)
        req_rate = (double)(req1 - req0) / ((double)(t1 - t0) / 1e9);
    printf("renew        %d locks, lease %lld ms, %d s (acquired in %.1f "
           "s): %.0f renewals/s, %d lost (%d on_lost, %d releases failed), "
           "renew thread %.1f%% of a core",
           n, (long long)ttl, secs, (double)(t0 - ta) / 1e9, rate, lost,
           __atomic_load_n(&renew_lost, __ATOMIC_SEQ_CST), bad, cpu_pct);
    if (req_rate >= 0)
        printf(", server requests %.0f/s", req_rate);
    printf("\n");
    if (json != NULL)
        fprintf(json, "  \"renew\": {\n");
    jnum("locks", n, 0);
    jnum("lease_ms", (double)ttl, 0);
    jnum("seconds", secs, 0);
    jnum("renewals_per_s", rate, 0);
    jnum("lost", lost + bad, 0);
    jnum("server_requests_per_s", req_rate, 0);
    jnum("renew_thread_cpu_pct", cpu_pct, 1);
    if (json != NULL)
        fprintf(json, "  },\n");
    free(l);
    dlock_store_close(s);
}

/* --- 3b. a herd: 100 (--waiters) waiters on one name ------------------- */

static int herd_w = 100;

struct herd {
    volatile int ready, stop;
    int n;
    int64_t released[]; /* [i]: when holder i let go; [0] is the parent */
};

/* Wait, hold for nothing, release, wait again, until the parent has
 * counted enough hand-offs (then it kills us). */
static void herd_waiter(struct herd *h, const char *name, int k)
{
    dlock_store *s = open_store();
    dlock_options o = DLOCK_OPTIONS_INIT;

    o.wait_ms = DLOCK_WAIT_FOREVER;
    o.auto_renew = 0;
    __atomic_fetch_add(&h->ready, 1, __ATOMIC_SEQ_CST);
    for (;;) {
        dlock_lock *l;
        int i;

        if (dlock_acquire(&l, s, name, &o) != DLOCK_OK)
            die("herd acquire");
        i = __atomic_add_fetch(&h->n, 1, __ATOMIC_SEQ_CST);
        if (i <= k)
            h->released[i + k + 1] = now_ns(); /* acquired */
        if (i >= k)
            h->stop = 1;
        if (i <= k)
            h->released[i] = now_ns();
        if (dlock_release(l) != DLOCK_OK)
            die("herd release");
    }
}

static void bench_herd(void)
{
    const int W = herd_w;
    const int k = quick ? 100 : 300;
    size_t size = sizeof(struct herd) + sizeof(int64_t) * (2 * k + 2);
    struct herd *h = mmap(NULL, size, PROT_READ | PROT_WRITE,
                          MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    struct bench_noop *noop = NULL;
    dlock_store *s = open_store();
    dlock_options o = DLOCK_OPTIONS_INIT;
    dlock_lock *l;
    int64_t *hand = malloc(sizeof(int64_t) * (size_t)k), t0, t1;
    long long r0 = -1, r1 = -1;
    double base = -1;
    pid_t *pids = calloc((size_t)W, sizeof(*pids));
    char name[128];
    int nh = 0;

    if (h == MAP_FAILED || hand == NULL || pids == NULL)
        exit(1);
    snprintf(name, sizeof(name), "%s/herd", run_id);
    o.auto_renew = 0;
    o.ttl_ms = 60000;
    /* What one uncontended acquire + release costs, for comparison. */
    if (bench_noop_open(&noop, url) == 0 &&
        (r0 = bench_server_requests(noop)) >= 0) {
        for (int i = 0; i < 50; i++) {
            if (dlock_acquire(&l, s, name, &o) != DLOCK_OK ||
                dlock_release(l) != DLOCK_OK)
                die("herd baseline");
        }
        r1 = bench_server_requests(noop);
        base = r1 >= 0 ? (double)(r1 - r0) / 50 : -1;
    }
    if (dlock_acquire(&l, s, name, &o) != DLOCK_OK)
        die("herd first acquire");
    for (int w = 0; w < W; w++) {
        pids[w] = fork();
        if (pids[w] == 0)
            herd_waiter(h, name, k);
    }
    /* Everyone connected and (after a moment) blocked in the wait. */
    while (h->ready < W)
        sleep_us(1000);
    sleep_us(1000000);
    r0 = r1 = -1;
    if (noop != NULL)
        r0 = bench_server_requests(noop);
    t0 = now_ns();
    h->released[0] = t0;
    if (dlock_release(l) != DLOCK_OK)
        die("herd release");
    while (!h->stop)
        sleep_us(200);
    t1 = now_ns();
    if (noop != NULL)
        r1 = bench_server_requests(noop);
    for (int w = 0; w < W; w++)
        kill(pids[w], SIGKILL);
    for (int w = 0; w < W; w++)
        waitpid(pids[w], NULL, 0);
    for (int i = 1; i <= k; i++)
        hand[nh++] = h->released[i + k + 1] - h->released[i - 1];
    qsort(hand, (size_t)nh, sizeof(*hand), cmp_i64);
    {
        double per = r0 >= 0 && r1 >= 0 ? (double)(r1 - r0) / k : -1;
        int64_t p50 = pct(hand, (size_t)nh, 0.5);
        int64_t p99 = pct(hand, (size_t)nh, 0.99);

        printf("%d waiters  %d hand-offs in %.2f s: hand-off p50 %7.1f us  "
               "p99 %7.1f us; ",
               W, k, (t1 - t0) / 1e9, p50 / 1e3, p99 / 1e3);
        if (per >= 0)
            printf("%.2f client requests per hand-off, %.2f per "
                   "uncontended acquire + release\n",
                   per, base);
        else
            printf("requests per hand-off: n/a (%s)\n",
                   url[0] == 's' ? "waiters poll the file"
                                 : "the server counts none at once");
        if (json != NULL)
            fprintf(json, "  \"herd\": {\n");
        jnum("waiters", W, 0);
        jnum("handoffs", k, 0);
        jnum("handoff_p50_us", p50 / 1e3, 0);
        jnum("handoff_p99_us", p99 / 1e3, 0);
        jnum("requests_per_handoff", per, 0);
        jnum("requests_per_uncontended_cycle", base, 1);
        if (json != NULL)
            fprintf(json, "  },\n");
    }
    bench_noop_close(noop);
    dlock_store_close(s);
    free(hand);
    free(pids);
    munmap(h, size);
}

/* --- 4. dead holder ------------------------------------------------------ */

static void bench_dead_holder(void)
{
    const int rounds = quick ? 3 : 5;
    int64_t t[16];
    char name[128];

    snprintf(name, sizeof(name), "%s/dead", run_id);
    for (int r = 0; r < rounds; r++) {
        int p[2];
        pid_t pid;
        char c;
        dlock_store *s;
        dlock_lock *l;
        dlock_options o = DLOCK_OPTIONS_INIT;
        int64_t t0;

        if (pipe(p) != 0)
            exit(1);
        pid = fork();
        if (pid == 0) {
            dlock_store *cs = open_store();
            dlock_options co = DLOCK_OPTIONS_INIT;
            dlock_lock *cl;

            co.ttl_ms = 5000;
            if (dlock_acquire(&cl, cs, name, &co) != DLOCK_OK)
                _exit(1);
            (void)!write(p[1], "H", 1);
            for (;;)
                pause();
        }
        close(p[1]);
        if (read(p[0], &c, 1) != 1)
            die("holder did not start");
        close(p[0]);
        s = open_store();
        o.wait_ms = 20000;
        kill(pid, SIGKILL);
        t0 = now_ns();
        waitpid(pid, NULL, 0);
        if (dlock_acquire(&l, s, name, &o) != DLOCK_OK)
            die("acquire after kill");
        t[r] = now_ns() - t0;
        dlock_release(l);
        dlock_store_close(s);
    }
    {
        int64_t med = pct(t, (size_t)rounds, 0.5);

        printf("dead holder  free again %.1f ms after kill -9 (median of %d, "
               "lease 5000 ms)\n",
               med / 1e6, rounds);
        if (json != NULL)
            fprintf(json, "  \"dead_holder\": {\n");
        jnum("ms_after_kill", med / 1e6, 0);
        jnum("lease_ms", 5000, 1);
        if (json != NULL)
            fprintf(json, "  },\n");
    }
}

int main(int argc, char **argv)
{
    const char *json_path = NULL;
    struct utsname un;
    char *redacted = NULL;

    if (argc < 2) {
        fprintf(stderr, "usage: dlock-bench URL [--json FILE] [--quick] "
                        "[--many N] [--only PART] [--renew N] "
                        "[--renew-seconds S] [--waiters N]\n");
        return 64;
    }
    url = argv[1];
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0 && i + 1 < argc)
            json_path = argv[++i];
        else if (strcmp(argv[i], "--quick") == 0)
            quick = 1;
        else if (strcmp(argv[i], "--no-floor") == 0)
            no_floor = 1;
        else if (strcmp(argv[i], "--many") == 0 && i + 1 < argc)
            many_n = atoi(argv[++i]);
        else if (strcmp(argv[i], "--waiters") == 0 && i + 1 < argc &&
                 atoi(argv[i + 1]) > 0)
            herd_w = atoi(argv[++i]);
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
            only = argv[++i];
        else if (strcmp(argv[i], "--renew") == 0 && i + 1 < argc)
            renew_n = atoi(argv[++i]);
        else if (strcmp(argv[i], "--renew-seconds") == 0 && i + 1 < argc)
            renew_s = atoi(argv[++i]);
        else
            return 64;
    }
    snprintf(run_id, sizeof(run_id), "bench-%d", (int)getpid());
    dlock_url_redact(&redacted, url);
    uname(&un);
    if (json_path != NULL) {
        json = fopen(json_path, "w");
        if (json == NULL) {
            perror(json_path);
            return 1;
        }
        fprintf(json,
                "{\n  \"store\": \"%s\",\n  \"machine\": \"%s %s, %ld "
                "cpus\",\n  \"server\": \"%s\",\n  \"dlock\": \"%s\",\n",
                redacted, un.machine, un.release, sysconf(_SC_NPROCESSORS_ONLN),
                bench_server_version(url), dlock_version());
    }
    printf("dlock-bench %s on %s (%s %s, %ld cpus), server %s\n",
           dlock_version(), redacted, un.machine, un.release,
           sysconf(_SC_NPROCESSORS_ONLN), bench_server_version(url));
    fflush(stdout);
    etcd_own = only != NULL && strcmp(only, "etcd-own") == 0;
    if (want("uncontended") || etcd_own)
        bench_uncontended();
    fflush(stdout);
    if (want("uncontended") || want("redis-cpu"))
        bench_redis_cpu();
    fflush(stdout);
    if (want("contended"))
        bench_contended();
    fflush(stdout);
    if (want("many"))
        bench_many();
    fflush(stdout);
    if (want("herd"))
        bench_herd();
    fflush(stdout);
    if (want("dead"))
        bench_dead_holder();
    fflush(stdout);
    if (want("renew"))
        bench_renew();
    if (json != NULL) {
        fprintf(json, "  \"end\": true\n}\n");
        fclose(json);
    }
    dlock_free(redacted);
    return 0;
}
