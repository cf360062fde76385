/*
 * renewal.c - dlock-bench part 5 (--only renew): one process holding N
 * names with auto-renew on a 3 s lease for a while: renewals/s, locks
 * lost, the renew thread's CPU, the server's requests per second.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "internal.h" /* dlock__renewals() */
#include "run.h"

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

void bench_renew(void)
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
