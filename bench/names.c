/*
 * names.c - dlock-bench part 8 (--only names): what `dlock status NAME`,
 * `dlock list PREFIX` and an uncontended acquire cost with 10, 10,000
 * and 1,000,000 names held in the store: an index makes them flat, a
 * scan makes them grow with the store.
 *
 * status: the library calls cmd_status.c makes (dlock_status(),
 * dlock_history(name, 1), dlock_suspended()); list: cmd_list.c's
 * (dlock_last_runs(), dlock_suspensions(), dlock_list()) on a prefix ten
 * held names match; acquire: dlock_acquire() of a name never used (the
 * release after it is not timed).
 *
 * The names are planted in bulk with the bare client (bench_noop_conn()),
 * in the store's own layout, by copying the rows or keys of one name dlock
 * holds (the template) under new names: SQLite, PostgreSQL and MariaDB an
 * INSERT ... SELECT of its row, Redis a script that DUMPs its keys and
 * RESTOREs them under each new name; the copies are live holders as long
 * as the template (held for 10 min, not renewed).  etcd has no such bulk
 * path (a key per holder, each on its own lease): its names are taken by
 * dlock_acquire() in 4 processes at once, as many as fit in one time
 * budget for the three counts (60 s, 10 s with --quick).  A store that refuses
 * more rows (MariaDB's MEMORY table is full) stops there.  Both are said in the
 * output and the JSON ("capped").  The planted names are removed afterwards.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>
#ifdef DLOCK_HAVE_REDIS
#include <hiredis/hiredis.h>
#endif
#ifdef DLOCK_HAVE_POSTGRES
#include <libpq-fe.h>
#endif
#ifdef DLOCK_HAVE_MYSQL
#include <mysql.h>
#endif

#include "bench.h"
#include "run.h"

#define NAMES_PROCS 4 /* etcd: processes taking names at once */
#define NAMES_CHUNK 100000

static char tmpl[96];  /* the template name, held by dlock */
static char plant[96]; /* the planted names' prefix: plant + %07d */

/* --- bulk planting with the bare client -------------------------------- */

#ifdef DLOCK_HAVE_POSTGRES
static const char *pg_table(void)
{
    return strstr(url, "mode=lease") != NULL ? "dlock_locks" : "dlock_held";
}
#endif

#ifdef DLOCK_HAVE_REDIS
/* Redis: the template's lock key and the keys derived from it (rkeys.h),
 * as suffixes of its lock key, found by KEYS once while the store holds a
 * few names. */
static char *suf[16];
static size_t suflen[16], nsuf;

/* ARGV[1] the template's lock key, ARGV[2] the planted names' prefix,
 * ARGV[3..4] the range, ARGV[5..] the suffixes (the keys are derived in
 * the script: a standalone server's bench, never a Cluster). */
static const char REDIS_PLANT[] =
    "local d, t = {}, {} "
    "for j = 5, #ARGV do local k = ARGV[1] .. ARGV[j] "
    "d[j] = redis.call('DUMP', k) local p = redis.call('PTTL', k) "
    "t[j] = p > 0 and p or 0 end "
    "for i = tonumber(ARGV[3]), tonumber(ARGV[4]) do "
    "local n = ARGV[2] .. string.format('%07d', i) "
    "for j = 5, #ARGV do if d[j] then redis.call('RESTORE', "
    "n .. ARGV[j], t[j], d[j], 'REPLACE') end end end "
    "return 1";
static const char REDIS_UNPLANT[] =
    "for i = tonumber(ARGV[3]), tonumber(ARGV[4]) do "
    "local n = ARGV[2] .. string.format('%07d', i) "
    "for j = 5, #ARGV do redis.call('UNLINK', n .. ARGV[j]) end end "
    "return 1";

/* Runs script over the names [from, to); 0 or -1 (said). */
static int redis_each(redisContext *conn, const char *script, long from,
                      long to)
{
    const char *argv[24];
    size_t argl[24];
    char a[32], b[32], full[256], pfx[256];
    redisReply *r;
    int n = 0, ok;

    snprintf(full, sizeof(full), "dlock:%s", tmpl);
    snprintf(pfx, sizeof(pfx), "dlock:%s", plant);
    if (nsuf == 0) {
        size_t fl = strlen(full);

        r = redisCommand(conn, "KEYS %s*", full);
        if (r == NULL || r->type != REDIS_REPLY_ARRAY)
            return -1;
        for (size_t i = 0; i < r->elements && nsuf < 16; i++) {
            suflen[nsuf] = r->element[i]->len - fl;
            suf[nsuf] = malloc(suflen[nsuf] + 1);
            if (suf[nsuf] == NULL)
                exit(1);
            memcpy(suf[nsuf], r->element[i]->str + fl, suflen[nsuf] + 1);
            nsuf++;
        }
        freeReplyObject(r);
    }
    snprintf(a, sizeof(a), "%ld", from);
    snprintf(b, sizeof(b), "%ld", to - 1);
    argv[n] = "EVAL", argl[n++] = 4;
    argv[n] = script, argl[n++] = strlen(script);
    argv[n] = "0", argl[n++] = 1;
    argv[n] = full, argl[n++] = strlen(full);
    argv[n] = pfx, argl[n++] = strlen(pfx);
    argv[n] = a, argl[n++] = strlen(a);
    argv[n] = b, argl[n++] = strlen(b);
    for (size_t i = 0; i < nsuf; i++)
        argv[n] = suf[i], argl[n++] = suflen[i];
    r = redisCommandArgv(conn, n, argv, argl);
    ok = r != NULL && r->type == REDIS_REPLY_INTEGER;
    if (!ok)
        fprintf(stderr, "dlock-bench: names: %s\n",
                r != NULL && r->str != NULL ? r->str : "no reply");
    if (r != NULL)
        freeReplyObject(r);
    return ok ? 0 : -1;
}
#endif

/* Copies [from, to) of the template; the number copied, -1 on an error
 * (said), or fewer when the store is full. */
static long plant_bulk(struct bench_noop *nc, long from, long to)
{
    char sql[2048];
    void *conn = bench_noop_conn(nc);

    switch (bench_noop_kind(nc)) {
    case 's': {
        char *err = NULL;

        snprintf(sql, sizeof(sql),
                 "WITH RECURSIVE c(v) AS (SELECT %ld UNION ALL SELECT v + 1 "
                 "FROM c WHERE v < %ld) INSERT INTO dlock_locks SELECT "
                 "'%s' || printf('%%07d', c.v), owner, shared, fence, "
                 "expires_at, boot_id, acquired_at, host, pid, pid_start, "
                 "pid_ns, \"limit\" FROM dlock_locks, c WHERE name = '%s'",
                 from, to - 1, plant, tmpl);
        if (sqlite3_exec(conn, sql, NULL, NULL, &err) != SQLITE_OK) {
            fprintf(stderr, "dlock-bench: names: %s\n", err);
            sqlite3_free(err);
            return -1;
        }
        return to - from;
    }
#ifdef DLOCK_HAVE_POSTGRES
    case 'p': {
        const int sess = strcmp(pg_table(), "dlock_held") == 0;
        PGresult *r;
        int ok;

        snprintf(sql, sizeof(sql),
                 "INSERT INTO %s SELECT '%s' || lpad(g::text, 7, '0'), owner, "
                 "shared, fence, backend_pid, %shost, pid, expires_at, "
                 "acquired_at FROM %s, generate_series(%ld, %ld) g WHERE "
                 "name = '%s'",
                 pg_table(), plant, sess ? "sess, " : "", pg_table(), from,
                 to - 1, tmpl);
        r = PQexec(conn, sql);
        ok = PQresultStatus(r) == PGRES_COMMAND_OK;
        if (!ok)
            fprintf(stderr, "dlock-bench: names: %s", PQerrorMessage(conn));
        PQclear(r);
        /* The planner's statistics as autovacuum would make them soon:
         * a million rows planted at once and read at once would be
         * planned as the empty table they were (a sequential scan; 494
         * ms against 0.33 ms on the primary key after an ANALYZE). */
        if (ok) {
            snprintf(sql, sizeof(sql), "ANALYZE %s", pg_table());
            PQclear(PQexec(conn, sql));
        }
        return ok ? to - from : -1;
    }
#endif
#ifdef DLOCK_HAVE_MYSQL
    case 'm':
        /* MariaDB's SEQUENCE engine: the numbers, no table of them. */
        snprintf(sql, sizeof(sql),
                 "INSERT INTO shared_locks (name, connection_id, created, "
                 "ttl, lock_acquired, owner, fence, expires_ms, acquired_ms, "
                 "host, pid, full_name, lim, slot) SELECT CONCAT('%s', "
                 "LPAD(s.seq, 7, '0')), t.connection_id, t.created, t.ttl, "
                 "t.lock_acquired, t.owner, t.fence, t.expires_ms, "
                 "t.acquired_ms, t.host, t.pid, t.full_name, t.lim, t.slot "
                 "FROM seq_%ld_to_%ld s JOIN shared_locks t WHERE t.name = "
                 "'%s'",
                 plant, from, to - 1, tmpl);
        if (mysql_query(conn, sql) != 0) {
            /* 1114: the MEMORY table is full, and kept the rows it took
             * (no transaction): count them. */
            if (mysql_errno(conn) == 1114) {
                MYSQL_RES *res;
                MYSQL_ROW row;
                long n = -1;

                snprintf(sql, sizeof(sql),
                         "SELECT COUNT(*) FROM shared_locks WHERE name LIKE "
                         "'%s%%'",
                         plant);
                if (mysql_query(conn, sql) == 0 &&
                    (res = mysql_store_result(conn)) != NULL) {
                    if ((row = mysql_fetch_row(res)) != NULL)
                        n = atol(row[0]) - from;
                    mysql_free_result(res);
                }
                return n;
            }
            fprintf(stderr, "dlock-bench: names: %s\n", mysql_error(conn));
            return -1;
        }
        return (long)mysql_affected_rows(conn);
#endif
#ifdef DLOCK_HAVE_REDIS
    case 'r':
        return redis_each(conn, REDIS_PLANT, from, to) == 0 ? to - from : -1;
#endif
    default:
        return -1;
    }
}

/* MariaDB, when its table is full: removes the last k of the n planted;
 * the number left. */
static long unplant_from(struct bench_noop *nc, long n, long k)
{
#ifdef DLOCK_HAVE_MYSQL
    char sql[512];

    if (bench_noop_kind(nc) == 'm' && n > k) {
        snprintf(sql, sizeof(sql),
                 "DELETE FROM shared_locks WHERE name >= '%s%07ld' AND name "
                 "LIKE '%s%%'",
                 plant, n - k, plant);
        if (mysql_query(bench_noop_conn(nc), sql) == 0)
            return n - k;
    }
#else
    (void)nc;
    (void)k;
#endif
    return n;
}

/* Removes the planted names [0, n). */
static void unplant_bulk(struct bench_noop *nc, long n)
{
    char sql[512];
    void *conn = bench_noop_conn(nc);

    (void)n; /* Redis's chunks only */

    switch (bench_noop_kind(nc)) {
    case 's':
        snprintf(sql, sizeof(sql),
                 "DELETE FROM dlock_locks WHERE name >= '%s' AND name < "
                 "'%s~'",
                 plant, plant);
        sqlite3_exec(conn, sql, NULL, NULL, NULL);
        break;
#ifdef DLOCK_HAVE_POSTGRES
    case 'p':
        snprintf(sql, sizeof(sql),
                 "DELETE FROM %s WHERE name >= '%s' AND name < '%s~'",
                 pg_table(), plant, plant);
        PQclear(PQexec(conn, sql));
        break;
#endif
#ifdef DLOCK_HAVE_MYSQL
    case 'm':
        snprintf(sql, sizeof(sql),
                 "DELETE FROM shared_locks WHERE name LIKE '%s%%'", plant);
        mysql_query(conn, sql);
        break;
#endif
#ifdef DLOCK_HAVE_REDIS
    case 'r':
        for (long i = 0; i < n; i += NAMES_CHUNK)
            redis_each(conn, REDIS_UNPLANT, i,
                       i + NAMES_CHUNK < n ? i + NAMES_CHUNK : n);
        break;
#endif
    default:
        break;
    }
}

/* --- etcd: names taken by dlock in NAMES_PROCS processes --------------- */

struct taker {
    volatile long next, taken, target;
    volatile int64_t deadline; /* now_ns() */
};

/* Takes names plant%07d from the shared counter until target or the
 * deadline, answers a byte on out, and again on each byte read from in;
 * releases them all when in closes. */
static void taker(struct taker *t, int in, int out)
{
    dlock_store *s = open_store();
    dlock_options o = DLOCK_OPTIONS_INIT;
    dlock_lock **l = NULL;
    size_t n = 0, cap = 0;
    char name[256], c = 0;

    o.auto_renew = 0;
    o.ttl_ms = 600000;
    while (read(in, &c, 1) == 1) {
        for (;;) {
            long i = __atomic_fetch_add(&t->next, 1, __ATOMIC_SEQ_CST);

            if (i >= t->target || now_ns() > t->deadline)
                break;
            if (n == cap) {
                cap = cap ? 2 * cap : 1024;
                l = realloc(l, cap * sizeof(*l));
                if (l == NULL)
                    exit(1);
            }
            snprintf(name, sizeof(name), "%s%07ld", plant, i);
            if (dlock_acquire(&l[n], s, name, &o) != DLOCK_OK)
                die("names: plant");
            n++;
            __atomic_fetch_add(&t->taken, 1, __ATOMIC_SEQ_CST);
        }
        if (write(out, &c, 1) != 1)
            exit(1);
    }
    for (size_t i = 0; i < n; i++)
        dlock_release(l[i]);
    _exit(0); /* not the parent's stdio buffers, a second time */
}

/* --- the measures ------------------------------------------------------ */

static int count_info(const dlock_info *info, void *payload)
{
    (void)info;
    ++*(int *)payload;
    return 0;
}

static int count_run(const dlock_run *run, void *payload)
{
    (void)run;
    ++*(int *)payload;
    return 0;
}

static int count_susp(const dlock_suspension *sp, void *payload)
{
    (void)sp;
    ++*(int *)payload;
    return 0;
}

/* A measure's loop: reps times, or fewer (5 at least) once it has taken
 * 3 s (a scan of 1,000,000 names takes a third of a second a call). */
static int more(int r, int reps, int64_t since)
{
    return r < reps && (r < 5 || now_ns() - since < 3000000000LL);
}

static double p50_us(int64_t *v, int n)
{
    return (double)pct(v, (size_t)n, 0.5) / 1e3;
}

void bench_names(void)
{
    static const long counts[] = {10, 10000, 1000000};
    const int reps = quick ? 30 : 100;
    const int etcd = strncmp(url, "etcd", 4) == 0;
    const int64_t budget_ns = (quick ? 10 : 60) * (int64_t)1000000000;
    struct bench_noop *nc = NULL;
    dlock_store *s = open_store();
    dlock_options o = DLOCK_OPTIONS_INIT;
    dlock_lock *held[11], *l;
    int64_t *v = malloc(sizeof(int64_t) * (size_t)reps);
    int64_t *part[3] = {malloc(sizeof(int64_t) * (size_t)reps),
                        malloc(sizeof(int64_t) * (size_t)reps),
                        malloc(sizeof(int64_t) * (size_t)reps)};
    struct taker *t = NULL;
    int to[NAMES_PROCS][2], from[NAMES_PROCS][2];
    pid_t pids[NAMES_PROCS];
    long planted = 0;
    const char *capped = NULL;
    char name[256], prefix[96];
    int first = 1;

    if (v == NULL || part[0] == NULL || part[1] == NULL || part[2] == NULL)
        exit(1);
    if (!etcd && bench_noop_open(&nc, url) != 0) {
        printf("names: skipped (no client of our own on %s)\n", url);
        dlock_store_close(s);
        free(v);
        return;
    }
    o.auto_renew = 0;
    o.ttl_ms = 600000;
    snprintf(tmpl, sizeof(tmpl), "%s/names/t", run_id);
    snprintf(plant, sizeof(plant), "%s/names/x/", run_id);
    snprintf(prefix, sizeof(prefix), "%s/names/p/", run_id);
    /* The ten names list finds, and the template: 11 held by dlock. */
    for (int i = 0; i < 10; i++) {
        snprintf(name, sizeof(name), "%s%d", prefix, i);
        if (dlock_acquire(&held[i], s, name, &o) != DLOCK_OK)
            die("names: acquire");
    }
    if (dlock_acquire(&held[10], s, tmpl, &o) != DLOCK_OK)
        die("names: acquire the template");
    if (etcd) {
        t = mmap(NULL, sizeof(*t), PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (t == MAP_FAILED)
            exit(1);
        fflush(NULL);
        for (int p = 0; p < NAMES_PROCS; p++) {
            if (pipe(to[p]) != 0 || pipe(from[p]) != 0)
                exit(1);
            pids[p] = fork();
            if (pids[p] == 0) {
                for (int q = 0; q <= p; q++) {
                    close(to[q][1]);
                    close(from[q][0]);
                }
                taker(t, to[p][0], from[p][1]);
            }
            close(to[p][0]);
            close(from[p][1]);
        }
    }
    if (json != NULL)
        fprintf(json, "  \"name_scaling\": [\n");
    for (size_t c = 0; c < sizeof(counts) / sizeof(*counts); c++) {
        const long want = counts[c] > 11 ? counts[c] - 11 : 0;
        int64_t t0 = now_ns();
        double st, li, ac, sp[3], lp[3];
        int n_;

        if (capped != NULL)
            break;
        if (etcd) {
            char b = 0;

            t->target = want;
            if (t->deadline == 0) /* one budget for all the counts */
                t->deadline = t0 + budget_ns;
            for (int p = 0; p < NAMES_PROCS; p++)
                if (write(to[p][1], &b, 1) != 1)
                    exit(1);
            for (int p = 0; p < NAMES_PROCS; p++)
                if (read(from[p][0], &b, 1) != 1)
                    exit(1);
            planted = t->taken;
            t->next = planted;
            if (planted < want)
                capped = "etcd: as many as 4 processes took in the time "
                         "budget";
        } else {
            while (planted < want) {
                long end =
                    planted + NAMES_CHUNK < want ? planted + NAMES_CHUNK : want;
                long got = plant_bulk(nc, planted, end);

                if (got < 0)
                    die("names: plant");
                planted += got;
                if (got < end - (planted - got)) {
                    /* Room for the acquires measured: the last 10,000
                     * planted go again. */
                    capped = "the store refused more (its table is full; "
                             "10,000 fewer kept for the acquires)";
                    planted = unplant_from(nc, planted, 10000);
                    break;
                }
            }
        }
        printf("names        %ld held: planted %ld in %.1f s%s%s\n",
               planted + 11, planted, (now_ns() - t0) / 1e9,
               capped ? "; capped: " : "", capped ? capped : "");
        /* status NAME, as cmd_status.c asks it: the three calls' p50s
         * (sp[]) and their sum's (st) */
        snprintf(name, sizeof(name), "%s3", prefix);
        n_ = 0;
        for (int64_t since = now_ns(); more(n_, reps, since); n_++) {
            const int r = n_;
            dlock_info *info = NULL;
            dlock_suspension *su = NULL;
            int n = 0;
            int64_t a = now_ns(), b, d;

            if (dlock_status(&info, s, name) != DLOCK_OK || !info->held)
                die("names: status");
            b = now_ns();
            if (dlock_history(s, name, 1, count_run, &n) != DLOCK_OK)
                die("names: history");
            d = now_ns();
            if (dlock_suspended(&su, s, name) != DLOCK_OK)
                die("names: suspended");
            v[r] = now_ns() - a;
            part[0][r] = b - a;
            part[1][r] = d - b;
            part[2][r] = v[r] - (d - a);
            dlock_info_free(info);
            dlock_suspension_free(su);
        }
        st = p50_us(v, n_);
        for (int k = 0; k < 3; k++)
            sp[k] = p50_us(part[k], n_);
        /* list PREFIX, as cmd_list.c asks it: ten names.  A store that
         * cannot answer (Redis's SCAN of the whole keyspace past
         * ?timeout=) is said, and the list left out (-1). */
        li = 0;
        n_ = 0;
        for (int64_t since = now_ns(); li == 0 && more(n_, reps, since); n_++) {
            const int r = n_;
            int n = 0, m = 0, rc;
            int64_t a = now_ns(), b, d;

            rc = dlock_last_runs(s, prefix, count_run, &m);
            b = now_ns();
            if (rc == DLOCK_OK)
                rc = dlock_suspensions(s, prefix, count_susp, &m);
            d = now_ns();
            if (rc == DLOCK_OK)
                rc = dlock_list(s, prefix, count_info, &n);
            v[r] = now_ns() - a;
            part[0][r] = b - a;
            part[1][r] = d - b;
            part[2][r] = v[r] - (d - a);
            if (rc != DLOCK_OK) {
                char e[512];

                /* The message quotes key patterns: bytes that are not
                 * text (Redis's 0xff) printed as '?'. */
                snprintf(e, sizeof(e), "%s", dlock_errmsg());
                for (char *q = e; *q; q++)
                    if ((unsigned char)*q < 0x20 || (unsigned char)*q > 0x7e)
                        *q = '?';
                printf("names        %ld held: list failed after %.0f ms: "
                       "%s\n",
                       planted + 11, (double)v[r] / 1e6, e);
                li = -1;
            } else if (n != 10) {
                fprintf(stderr,
                        "dlock-bench: names: list %s found %d, not "
                        "10\n",
                        prefix, n);
                exit(1);
            }
        }
        if (li == 0) {
            li = p50_us(v, n_);
            for (int k = 0; k < 3; k++)
                lp[k] = p50_us(part[k], n_);
        } else {
            lp[0] = lp[1] = lp[2] = -1;
        }
        /* an acquire of a name never used (its release not timed) */
        n_ = 0;
        for (int64_t since = now_ns(); more(n_, reps, since); n_++) {
            const int r = n_;
            int64_t a;

            snprintf(name, sizeof(name), "%s/names/a/%zu/%d", run_id, c, r);
            a = now_ns();
            if (dlock_acquire(&l, s, name, &o) != DLOCK_OK)
                die("names: acquire");
            v[r] = now_ns() - a;
            if (dlock_release(l) != DLOCK_OK)
                die("names: release");
        }
        ac = p50_us(v, n_);
        printf("names        %ld held: status p50 %8.1f us (%.1f + history "
               "%.1f + suspended %.1f)  list PREFIX (10 names) p50 %8.1f us "
               "(last runs %.1f + suspensions %.1f + list %.1f)  acquire p50 "
               "%8.1f us\n",
               planted + 11, st, sp[0], sp[1], sp[2], li, lp[0], lp[1], lp[2],
               ac);
        fflush(stdout);
        if (json != NULL) {
            fprintf(json,
                    "%s    {\"names\": %ld, \"status_us\": %.6g, \"list_us\": "
                    "%.6g, \"acquire_us\": %.6g, \"status_parts_us\": "
                    "[%.6g, %.6g, %.6g], \"list_parts_us\": [%.6g, %.6g, "
                    "%.6g]}",
                    first ? "" : ",\n", planted + 11, st, li, ac, sp[0], sp[1],
                    sp[2], lp[0], lp[1], lp[2]);
            first = 0;
        }
    }
    if (json != NULL) {
        fprintf(json, "\n  ],\n");
        if (capped != NULL)
            fprintf(json, "  \"name_scaling_capped\": \"%s\",\n", capped);
    }
    if (etcd) {
        for (int p = 0; p < NAMES_PROCS; p++)
            close(to[p][1]);
        for (int p = 0; p < NAMES_PROCS; p++)
            waitpid(pids[p], NULL, 0);
        munmap(t, sizeof(*t));
    } else {
        unplant_bulk(nc, planted);
        bench_noop_close(nc);
    }
    for (int i = 0; i < 11; i++)
        dlock_release(held[i]);
    dlock_store_close(s);
    free(v);
    for (int k = 0; k < 3; k++)
        free(part[k]);
}
