/*
 * names_flood.c - the list's name set (src/core/names.c) against names
 * chosen to collide.  A store's list() adds every name its scan meets,
 * and whoever may write keys under the prefix (any Redis client with
 * write rights, an etcd user with a role on it, a hostile server)
 * chooses those names.  FNV-1a's low bits depend only on the low bits of
 * its state, so names whose hashes agree in every bit a slot index uses
 * are cheap to make offline: 17 steps, each one of two 3-byte blocks that
 * take the same state to the same next one, are 131,072 names with one
 * slot.  Linear probing then costs n^2/2 string compares for n names (5e9
 * for the 100,000 a list keeps), all of it between two pages of a scan
 * or inside one grow_set(), where no ?timeout= is looked at.
 *
 * The set must take DLOCK__LIST_NAMES such names in well under the
 * default ?timeout= (5 s): 3 s of CPU here; it took minutes (stopped at
 * the bound).  A control run of random names of the same length shows
 * what the machine does.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "errors.h"
#include "names.h"

#define STEPS 17
#define MASK ((UINT64_C(1) << 18) - 1) /* the slots of 100,000 names */
#define BOUND_S 3.0

static const char alnum[] =
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

static uint64_t fnv_step(uint64_t h, unsigned char c)
{
    return (h ^ c) * UINT64_C(1099511628211);
}

/* Two 3-byte blocks taking state s to the same state, in its low bits
 * (two bytes cannot: the states after one byte differ above bit 7). */
static int pair_for(uint64_t s, char a[3], char b[3], uint64_t *next)
{
    static uint32_t seen[MASK + 1];
    static uint32_t gen;
    static uint32_t who[MASK + 1];
    size_t n = sizeof(alnum) - 1;

    gen++;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            for (size_t k = 0; k < n; k++) {
                uint64_t t =
                    fnv_step(fnv_step(fnv_step(s, (unsigned char)alnum[i]),
                                      (unsigned char)alnum[j]),
                             (unsigned char)alnum[k]) &
                    MASK;
                uint32_t w = (uint32_t)((i * n + j) * n + k);

                if (seen[t] == gen) {
                    a[0] = alnum[who[t] / (n * n)];
                    a[1] = alnum[who[t] / n % n];
                    a[2] = alnum[who[t] % n];
                    b[0] = alnum[i];
                    b[1] = alnum[j];
                    b[2] = alnum[k];
                    *next = t;
                    return 0;
                }
                seen[t] = gen;
                who[t] = w;
            }
    return -1;
}

static double cpu_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Add DLOCK__LIST_NAMES names made by make(i); the CPU seconds it took,
 * or a negative number past BOUND_S (stopped there). */
static double fill(void (*make)(size_t, char *), const char *what)
{
    struct dlock__names l = {0};
    char name[64];
    double t0 = cpu_s(), t = 0;

    for (size_t i = 0; i < DLOCK__LIST_NAMES; i++) {
        make(i, name);
        if (dlock__names_add(&l, name, strlen(name)) != 0) {
            fprintf(stderr, "%s: add %zu failed: %s\n", what, i,
                    dlock_errmsg());
            dlock__names_free(&l);
            return -1;
        }
        if (i % 256 == 0 && (t = cpu_s() - t0) > BOUND_S) {
            fprintf(stderr, "%s: %zu names in %.1f s of CPU, stopped\n", what,
                    i, t);
            dlock__names_free(&l);
            return -1;
        }
    }
    t = cpu_s() - t0;
    if (l.n != DLOCK__LIST_NAMES) {
        fprintf(stderr, "%s: %zu names kept, %d added\n", what, l.n,
                DLOCK__LIST_NAMES);
        t = -1;
    }
    dlock__names_free(&l);
    return t;
}

static char blocks[STEPS][2][3];

/* "job-" then, for each bit of i, its step's block 0 or 1. */
static void colliding(size_t i, char *out)
{
    memcpy(out, "job-", 4);
    for (int k = 0; k < STEPS; k++)
        memcpy(out + 4 + 3 * k, blocks[k][(i >> k) & 1], 3);
    out[4 + 3 * STEPS] = '\0';
}

static void spread(size_t i, char *out)
{
    unsigned long long x = (unsigned long long)i * 0x9e3779b97f4a7c15ULL;

    snprintf(out, 64, "job-%016llx%035zu", x, i);
    out[4 + 3 * STEPS] = '\0';
}

int main(void)
{
    uint64_t s = UINT64_C(14695981039346656037);
    double good, bad;

    for (const char *p = "job-"; *p; p++)
        s = fnv_step(s, (unsigned char)*p);
    for (int k = 0; k < STEPS; k++) {
        uint64_t next;

        if (pair_for(s, blocks[k][0], blocks[k][1], &next) != 0) {
            fprintf(stderr, "no colliding pair at step %d\n", k);
            return 1;
        }
        /* Both blocks end in the same low bits; the high ones differ,
         * and only the low ones carry to the low ones. */
        s = (s & ~MASK) | next;
    }
    good = fill(spread, "spread names");
    bad = fill(colliding, "colliding names");
    printf("spread names: %.2f s, colliding names: %.2f s of CPU for %d\n",
           good, bad, DLOCK__LIST_NAMES);
    if (good < 0 || bad < 0) {
        printf("FAIL: the name set is not within %.0f s\n", BOUND_S);
        return 1;
    }
    printf("ok\n");
    return 0;
}
