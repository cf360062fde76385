/*
 * uncontended.c - dlock-bench part 1: acquire + release on one name,
 * one client, in blocks alternating with blocks of the server's no-op (and,
 * on PostgreSQL, MariaDB and etcd, of the contract's floor: contract.h);
 * SQLite also against a durable one-row commit.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "contract.h"
#include "internal.h" /* rediss://: the store's TLS transport */
#include "run.h"

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

void bench_uncontended(void)
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
