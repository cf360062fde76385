/*
 * keep_tool.c - the checks of test_etcd_keep.sh (dlock_keep_runs() on
 * etcd, src/stores/etcd/runs.c; ETCD_RUNS_KEPT is the store's cap):
 *
 *     keep_tool URL fill NAME
 *         NAME keeps the cap (500): more is DLOCK_EINVAL with a message
 *         naming it, and the setting stays; 20 runs past the cap leave
 *         exactly the cap, newest first, the newest kept.
 *     keep_tool URL lower NAME
 *         NAME (filled) lowered to 3: the 3 newest stay.
 *     keep_tool URL planted NAME
 *         NAME's keep key was planted with something dlock cannot have
 *         written (out of range, wrong type, not JSON): dlock_kept_runs()
 *         reads the default, and runs past it keep the default.
 *
 * Prints "ok ..." / "  FILE:LINE: ..." lines and exits 1 on a failure.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define CAP 500 /* ETCD_RUNS_KEPT_MAX */

struct hist {
    unsigned n;
    uint64_t newest, prev;
    int ordered;
};

static int hist_cb(const dlock_run *r, void *p)
{
    struct hist *h = p;

    if (h->n == 0)
        h->newest = r->fence;
    else if (r->fence >= h->prev)
        h->ordered = 0;
    h->prev = r->fence;
    h->n++;
    return 0;
}

static unsigned kept_now(dlock_store *s, const char *name, struct hist *h)
{
    memset(h, 0, sizeof(*h));
    h->ordered = 1;
    EXPECT_RC(dlock_history(s, name, 0, hist_cb, h), DLOCK_OK);
    EXPECT(h->ordered);
    return h->n;
}

/* n runs of name, each ended exited 0; the last one's fence, 0 on a
 * failure. */
static uint64_t run_n(dlock_store *s, const char *name, int n)
{
    dlock_options o = DLOCK_OPTIONS_INIT;
    dlock_run_rule r = DLOCK_RUN_RULE_INIT;
    uint64_t fence = 0;

    o.wait_ms = 5000;
    for (int i = 0; i < n; i++) {
        dlock_run *last = NULL;
        dlock_lock *l = NULL;
        int go = 0;

        if (dlock_acquire(&l, s, name, &o) != DLOCK_OK) {
            fprintf(stderr, "  acquire: %s\n", dlock_errmsg());
            failures++;
            return 0;
        }
        if (dlock_run_begin(l, &r, &go, &last) != DLOCK_OK || !go) {
            fprintf(stderr, "  run_begin: go %d, %s\n", go, dlock_errmsg());
            failures++;
            dlock_release(l);
            return 0;
        }
        dlock_run_free(last);
        fence = dlock_fence(l);
        EXPECT_RC(dlock_run_end(l, DLOCK_RUN_EXITED, 0), DLOCK_OK);
        EXPECT_RC(dlock_release(l), DLOCK_OK);
    }
    return fence;
}

static void fill(dlock_store *s, const char *name)
{
    struct hist h;
    unsigned n = 0;
    uint64_t newest;
    int rc;

    CHECK_RC(dlock_keep_runs(s, name, CAP), DLOCK_OK);
    CHECK_RC(dlock_kept_runs(&n, s, name), DLOCK_OK);
    EXPECT(n == CAP);
    rc = dlock_keep_runs(s, name, CAP + 1);
    EXPECT(rc == DLOCK_EINVAL && strstr(dlock_errmsg(), "1..500") != NULL);
    printf("ok   keep %d: %d (%s): %s\n", CAP + 1, rc, dlock_strerror(rc),
           dlock_errmsg());
    EXPECT_RC(dlock_keep_runs(s, name, DLOCK_RUNS_KEPT_MAX), DLOCK_EINVAL);
    CHECK_RC(dlock_kept_runs(&n, s, name), DLOCK_OK);
    EXPECT(n == CAP);
    newest = run_n(s, name, CAP + 20);
    CHECK(newest != 0);
    EXPECT(kept_now(s, name, &h) == CAP);
    EXPECT(h.newest == newest);
    printf("ok   %d runs with keep %d: %u kept, the newest %llu first\n",
           CAP + 20, CAP, h.n, (unsigned long long)h.newest);
}

static void lower(dlock_store *s, const char *name)
{
    struct hist h;
    uint64_t newest;

    EXPECT(kept_now(s, name, &h) == CAP);
    newest = h.newest;
    CHECK_RC(dlock_keep_runs(s, name, 3), DLOCK_OK);
    EXPECT(kept_now(s, name, &h) == 3);
    EXPECT(h.newest == newest);
    printf("ok   lowered to 3: %u kept, the newest stays\n", h.n);
}

static void planted(dlock_store *s, const char *name)
{
    struct hist h;
    unsigned n = 0;

    CHECK_RC(dlock_kept_runs(&n, s, name), DLOCK_OK);
    EXPECT(n == DLOCK_RUNS_KEPT);
    CHECK(run_n(s, name, DLOCK_RUNS_KEPT + 5) != 0);
    EXPECT(kept_now(s, name, &h) == DLOCK_RUNS_KEPT);
    printf("ok   %s: kept_runs %u, %u runs kept of %d\n", name, n, h.n,
           DLOCK_RUNS_KEPT + 5);
}

int main(int argc, char **argv)
{
    dlock_store *s = NULL;
    int rc;

    if (argc != 4) {
        fprintf(stderr, "usage: keep_tool URL fill|lower|planted NAME\n");
        return 2;
    }
    rc = dlock_store_open(&s, argv[1]);
    if (rc != DLOCK_OK) {
        fprintf(stderr, "open: %d %s\n", rc, dlock_errmsg());
        return 1;
    }
    if (strcmp(argv[2], "fill") == 0)
        fill(s, argv[3]);
    else if (strcmp(argv[2], "lower") == 0)
        lower(s, argv[3]);
    else if (strcmp(argv[2], "planted") == 0)
        planted(s, argv[3]);
    else {
        fprintf(stderr, "keep_tool: bad mode %s\n", argv[2]);
        failures++;
    }
    dlock_store_close(s);
    return failures ? 1 : 0;
}
