/*
 * dlock-bench - speed against the physical limit: every figure is also
 * given as a ratio to the same server's raw round trip, measured in the
 * same run, so the numbers hold on a noisy machine.
 *
 *   dlock-bench URL [--json FILE] [--quick] [--many N] [--only PART]
 *               [--renew N] [--renew-seconds S] [--waiters N]
 *
 * 1. uncontended (uncontended.c): acquire + release on one name, one
 *    client, in blocks alternating with blocks of no-ops (PING, SELECT 1,
 *    DO 1, or an empty BEGIN IMMEDIATE/COMMIT for SQLite, a serializable
 *    range of a missing key for etcd) on a connection of our own; the
 *    ratio (cycle time) / (2 x no-op time) = noop/s / (2 x cycles/s) per
 *    pair of blocks, median and spread: 1.0 is a cycle that costs exactly
 *    its two round trips.  rediss:// (TLS): the no-op is a PING over TLS
 *    through the store's own transport (src/stores/redis/rconn.c), with
 *    the URL's ?cacert= ?cert= ?key= ?sni=.
 *    Redis (redis_cpu.c; plain redis:// or unix://; also --only
 *    redis-cpu): the server's CPU (INFO cpu) per cycle of the seed cycle,
 *    SET NX PX + a compare-and-delete EVALSHA on a raw connection, and of
 *    dlock's acquire + release, 20,000 each in one run, and their ratio.
 * 2. contended (contended.c): 8 processes on one name, hold 1 ms, think
 *    1 ms; cycles/s, hand-off latency (release by A -> acquire by B != A),
 *    Jain's fairness index, share of acquisitions that went back to the
 *    releaser.
 * 3. many locks (many.c): one process holding N names with auto-renew:
 *    RSS per held lock and renewals per second, and the cycle with 1, 100
 *    and 10,000 others held; and (herd.c) 1, 20 and 100 waiters
 *    on one name: what one release costs (client requests the server
 *    counted, per hand-off) and how long the hand-off takes with that
 *    many waiting.
 * 4. dead holder (dead_holder.c): time until a contender holds the lock
 *    after kill -9 of the holder.
 * 5. renewal at scale (renewal.c; --only renew): one process holds N
 *    names (default 10,000; --renew N) with auto-renew on a 3 s lease for
 *    a while (--renew-seconds S, or $DLOCK_BENCH_RENEW_SECONDS; default
 *    60, 5 with --quick): renewals/s, locks lost (must be 0), the renew
 *    thread's CPU time as a share of one core, and the server's requests
 *    per second where it counts them (batching: far fewer than
 *    renewals).
 * 6. election (election.c; --only elect): takeover after a resignation
 *    and after kill -9 of a leader, and how soon an observer
 *    (dlock_observe) sees each change.
 * 7. runs kept (runs_kept.c; --only runs): a run's bookkeeping
 *    (dlock_run_begin + _end) on a name keeping 20 runs against one
 *    keeping 10,000 (1,000 with --quick), both full: the ratio, and the
 *    cycle over the fill by tenths.
 * 8. names in the store (names.c; --only names): status, list PREFIX and
 *    an uncontended acquire with 10, 10,000 and 1,000,000 names held
 *    (planted in bulk in the store's own layout; etcd: as many as fit in
 *    a time budget).
 *
 * This file reads the command line and runs the parts; run.h is what they
 * share, bench.h the no-op clients (noop.c), contract.h the contract's
 * floor (contract.c), internal.h the library's internals bench/ uses.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "bench.h"
#include "dlock.h"
#include "run.h"

static const char
    *only; /* --only uncontended|redis-cpu|contended|many|herd|dead|renew
            * |etcd-own|elect|runs|names */

static int want(const char *part)
{
    return only == NULL || strcmp(only, part) == 0;
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
    fflush(stdout);
    if (want("elect"))
        bench_elect();
    fflush(stdout);
    if (want("runs"))
        bench_runs_kept();
    fflush(stdout);
    if (want("names"))
        bench_names();
    if (json != NULL) {
        fprintf(json, "  \"end\": true\n}\n");
        fclose(json);
    }
    dlock_free(redacted);
    return 0;
}
