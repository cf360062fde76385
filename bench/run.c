/*
 * run.c - what the parts of dlock-bench share: the run's settings, the
 * clock, percentiles, the JSON writer (run.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "run.h"

const char *url;
char run_id[64];
FILE *json;
int quick;
int many_n;
int etcd_own;
int no_floor;
int renew_n = 10000;
int renew_s;
int herd_w; /* 0: 1, 20 and 100 in turn */

int64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void sleep_us(int64_t us)
{
    struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return x < y ? -1 : x > y;
}

int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

int64_t pct(int64_t *v, size_t n, double p)
{
    size_t i;

    if (n == 0)
        return 0;
    qsort(v, n, sizeof(*v), cmp_i64);
    i = (size_t)(p * (double)(n - 1) + 0.5);
    return v[i];
}

void die(const char *what)
{
    fprintf(stderr, "dlock-bench: %s: %s\n", what, dlock_errmsg());
    exit(1);
}

dlock_store *open_store(void)
{
    dlock_store *s;

    if (dlock_store_open(&s, url) != DLOCK_OK)
        die("open");
    return s;
}

void jnum(const char *key, double v, int last)
{
    if (json != NULL)
        fprintf(json, "    \"%s\": %.6g%s\n", key, v, last ? "" : ",");
}
