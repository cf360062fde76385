/*
 * run.h - what the parts of dlock-bench share (run.c): the run's settings
 * from the command line, the clock, percentiles, the JSON writer, and the
 * entry of each part, one file per part by what it measures (the list is
 * dlock-bench.c's header).
 */
#ifndef DLOCK_BENCH_RUN_H
#define DLOCK_BENCH_RUN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "dlock.h"

/* The settings (dlock-bench.c's main() sets them from argv). */
extern const char *url; /* the store's URL */
extern char run_id[64]; /* "bench-<pid>": the prefix of every name */
extern FILE *json;      /* --json FILE, or NULL */
extern int quick;       /* --quick: fewer and shorter blocks */
extern int many_n;      /* --many N (0: the default) */
extern int etcd_own;    /* --only etcd-own: etcd locks not auto-renewed */
extern int no_floor;    /* --no-floor */
extern int renew_n;     /* --renew N */
extern int renew_s;     /* --renew-seconds S (0: the default) */
extern int herd_w;      /* --waiters N (0: 1, 20 and 100) */

/* CLOCK_MONOTONIC in ns; a sleep that EINTR does not cut short. */
int64_t now_ns(void);
void sleep_us(int64_t us);
/* qsort comparators, and the p-quantile of v[n] (sorted in place). */
int cmp_i64(const void *a, const void *b);
int cmp_dbl(const void *a, const void *b);
int64_t pct(int64_t *v, size_t n, double p);
/* Print "dlock-bench: WHAT: <dlock_errmsg()>" and exit 1. */
void die(const char *what);
/* A handle on url, or die. */
dlock_store *open_store(void);
/* One "key": v line of the JSON object being written (last: no comma). */
void jnum(const char *key, double v, int last);

/* The parts, in the order main() runs them. */
void bench_uncontended(void); /* uncontended.c */
void bench_redis_cpu(void);   /* redis_cpu.c */
void bench_contended(void);   /* contended.c */
void bench_many(void);        /* many.c */
void bench_herd(void);        /* herd.c */
void bench_dead_holder(void); /* dead_holder.c */
void bench_renew(void);       /* renewal.c */
void bench_elect(void);       /* election.c */
void bench_runs_kept(void);   /* runs_kept.c */
void bench_names(void);       /* names.c */

#endif
