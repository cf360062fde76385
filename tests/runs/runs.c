/*
 * runs.c - the run records' contract (include/dlock.h, "Runs"), the same
 * on every store:  dlock-runs URL [TEST...]
 * once (not again after a success; a failure or an abandoned run tries
 * again), once per period (on the store's clock), the kept history, a
 * lost lock records nothing, racing handles go ahead exactly once.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static const char *url;
static char run_id[64];

static const char *nm(const char *base)
{
    static _Thread_local char buf[4][DLOCK_NAME_MAX + 1];
    static _Thread_local int i;

    i = (i + 1) % 4;
    snprintf(buf[i], sizeof(buf[i]), "%s/%s", run_id, base);
    return buf[i];
}

static dlock_store *open_store(void)
{
    dlock_store *s = NULL;

    if (dlock_store_open(&s, url) != DLOCK_OK) {
        fprintf(stderr, "cannot open %s: %s\n", url, dlock_errmsg());
        exit(100);
    }
    return s;
}

static dlock_lock *take(dlock_store *s, const char *name)
{
    dlock_options o = DLOCK_OPTIONS_INIT;
    dlock_lock *l = NULL;

    o.wait_ms = 5000;
    o.ttl_ms = 10000;
    if (dlock_acquire(&l, s, name, &o) != DLOCK_OK) {
        fprintf(stderr, "  acquire %s: %s\n", name, dlock_errmsg());
        failures++;
        return NULL;
    }
    return l;
}

/* Take name, begin a run by rule; returns go (-1: an error, counted). */
static int begin(dlock_store *s, const char *name, const dlock_run_rule *r,
                 dlock_lock **out, dlock_run **last)
{
    int go = -1, rc;

    *out = take(s, name);
    if (*out == NULL)
        return -1;
    rc = dlock_run_begin(*out, r, &go, last);
    if (rc != DLOCK_OK) {
        fprintf(stderr, "  dlock_run_begin(%s): %d %s\n", name, rc,
                dlock_errmsg());
        failures++;
        return -1;
    }
    return go;
}

struct hist {
    dlock_run v[DLOCK_RUNS_KEPT + 5];
    unsigned n;
};

static int hist_cb(const dlock_run *r, void *p)
{
    struct hist *h = p;

    if (h->n < sizeof(h->v) / sizeof(h->v[0]))
        h->v[h->n] = *r;
    h->n++;
    return 0;
}

struct susp_seen {
    const char *want;
    int n, found;
    dlock_suspension rec;
};

static int64_t now_wall_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int history(dlock_store *s, const char *name, struct hist *h)
{
    memset(h, 0, sizeof(*h));
    return dlock_history(s, name, 0, hist_cb, h);
}

/* A plain run is recorded whole: who, when, how it ended. */
static void t_record(dlock_store *s)
{
    dlock_run_rule r = DLOCK_RUN_RULE_INIT;
    dlock_run *last = NULL;
    dlock_lock *l;
    struct hist h;
    char host[256] = "";
    uint64_t fence;

    gethostname(host, sizeof(host) - 1);
    CHECK(begin(s, nm("record"), &r, &l, &last) == 1);
    EXPECT(last == NULL); /* no run before */
    fence = dlock_fence(l);
    EXPECT_RC(dlock_run_end(l, DLOCK_RUN_EXITED, 3), DLOCK_OK);
    EXPECT_RC(dlock_release(l), DLOCK_OK);
    CHECK_RC(history(s, nm("record"), &h), DLOCK_OK);
    CHECK(h.n == 1);
    EXPECT(strcmp(h.v[0].name, nm("record")) == 0);
    EXPECT(h.v[0].fence == fence);
    EXPECT(strcmp(h.v[0].host, host) == 0);
    EXPECT(h.v[0].pid == (int64_t)getpid());
    EXPECT(h.v[0].start_ms > 1700000000000LL);
    EXPECT(h.v[0].end_ms >= h.v[0].start_ms);
    EXPECT(h.v[0].result == DLOCK_RUN_EXITED);
    EXPECT(h.v[0].status == 3);
    /* A signal is told from an exit. */
    CHECK(begin(s, nm("record"), &r, &l, &last) == 1);
    CHECK(last != NULL);
    EXPECT(last->result == DLOCK_RUN_EXITED && last->status == 3);
    dlock_run_free(last);
    EXPECT_RC(dlock_run_end(l, DLOCK_RUN_SIGNALED, 9), DLOCK_OK);
    EXPECT_RC(dlock_release(l), DLOCK_OK);
    CHECK_RC(history(s, nm("record"), &h), DLOCK_OK);
    CHECK(h.n == 2);
    EXPECT(h.v[0].result == DLOCK_RUN_SIGNALED && h.v[0].status == 9);
    EXPECT(h.v[0].fence > h.v[1].fence); /* newest first */
}

/* --once: a failure and an abandoned run try again; after a success no
 * run goes ahead, and the one that succeeded is named. */
static void t_once(dlock_store *s)
{
    dlock_run_rule r = DLOCK_RUN_RULE_INIT;
    dlock_run *last = NULL;
    dlock_lock *l;
    struct hist h;
    uint64_t ok_fence;

    r.once = 1;
    CHECK(begin(s, nm("once"), &r, &l, &last) == 1);
    EXPECT_RC(dlock_run_end(l, DLOCK_RUN_EXITED, 1), DLOCK_OK); /* fails */
    EXPECT_RC(dlock_release(l), DLOCK_OK);
    CHECK(begin(s, nm("once"), &r, &l, &last) == 1); /* tries again */
    dlock_run_free(last);
    EXPECT_RC(dlock_release(l), DLOCK_OK);           /* abandoned: no end */
    CHECK(begin(s, nm("once"), &r, &l, &last) == 1); /* tries again */
    dlock_run_free(last);
    ok_fence = dlock_fence(l);
    EXPECT_RC(dlock_run_end(l, DLOCK_RUN_EXITED, 0), DLOCK_OK);
    EXPECT_RC(dlock_release(l), DLOCK_OK);
    for (int i = 0; i < 3; i++) {
        last = NULL;
        CHECK(begin(s, nm("once"), &r, &l, &last) == 0);
        CHECK(last != NULL);
        EXPECT(last->fence == ok_fence);
        EXPECT(last->result == DLOCK_RUN_EXITED && last->status == 0);
        dlock_run_free(last);
        EXPECT_RC(dlock_run_end(l, DLOCK_RUN_EXITED, 0), DLOCK_EINVAL);
        EXPECT_RC(dlock_release(l), DLOCK_OK);
    }
    CHECK_RC(history(s, nm("once"), &h), DLOCK_OK);
    CHECK(h.n == 3); /* skips are not runs */
    EXPECT(h.v[0].result == DLOCK_RUN_EXITED && h.v[0].status == 0);
    EXPECT(h.v[1].result == DLOCK_RUN_ABANDONED);
    EXPECT(h.v[2].result == DLOCK_RUN_EXITED && h.v[2].status == 1);
    /* A success of a plain run counts for --once too. */
    r.once = 0;
    CHECK(begin(s, nm("once-plain"), &r, &l, &last) == 1);
    EXPECT_RC(dlock_run_end(l, DLOCK_RUN_EXITED, 0), DLOCK_OK);
    EXPECT_RC(dlock_release(l), DLOCK_OK);
    r.once = 1;
    CHECK(begin(s, nm("once-plain"), &r, &l, &last) == 0);
    dlock_run_free(last);
    EXPECT_RC(dlock_release(l), DLOCK_OK);
}

/* --once-per: not again within half the period of the last start, on
 * the store's clock, whatever the run's result; then again. */
static void t_period(dlock_store *s)
{
    dlock_run_rule r = DLOCK_RUN_RULE_INIT;
    dlock_run *last = NULL;
    dlock_lock *l;
    int64_t t0, start;
    /* etcd's clock is the Date of its replies, whole seconds, less one
     * for members' clocks: a run there goes ahead 1 to 3 s after half
     * the period (docs/stores/etcd.md). */
    int64_t slack = strncmp(url, "etcd", 4) == 0 ? 2000 : 0;

    r.period_ms = 3000;
    t0 = now_ms();
    CHECK(begin(s, nm("period"), &r, &l, &last) == 1);
    EXPECT_RC(dlock_run_end(l, DLOCK_RUN_EXITED, 1), DLOCK_OK);
    EXPECT_RC(dlock_release(l), DLOCK_OK);
    CHECK(begin(s, nm("period"), &r, &l, &last) == 0);
    CHECK(last != NULL);
    start = last->start_ms;
    EXPECT(last->result == DLOCK_RUN_EXITED && last->status == 1);
    dlock_run_free(last);
    EXPECT_RC(dlock_release(l), DLOCK_OK);
    /* Poll until it goes ahead: not before half the period (less a
     * clock-reading margin), and within it plus a second. */
    for (;;) {
        int go;

        last = NULL;
        go = begin(s, nm("period"), &r, &l, &last);
        CHECK(go >= 0);
        if (go == 1) {
            EXPECT(now_ms() - t0 >= 1500 - 50);
            CHECK(last != NULL);
            EXPECT(last->start_ms == start);
            dlock_run_free(last);
            EXPECT_RC(dlock_run_end(l, DLOCK_RUN_EXITED, 0), DLOCK_OK);
            EXPECT_RC(dlock_release(l), DLOCK_OK);
            break;
        }
        dlock_run_free(last);
        EXPECT_RC(dlock_release(l), DLOCK_OK);
        CHECK(now_ms() - t0 < 2500 + 1000 + slack);
        sleep_ms(50);
    }
}

/* The store keeps DLOCK_RUNS_KEPT runs, newest first. */
static void t_kept(dlock_store *s)
{
    dlock_run_rule r = DLOCK_RUN_RULE_INIT;
    dlock_run *last = NULL;
    dlock_lock *l;
    struct hist h;
    int n = DLOCK_RUNS_KEPT + 5;

    for (int i = 0; i < n; i++) {
        CHECK(begin(s, nm("kept"), &r, &l, &last) == 1);
        dlock_run_free(last);
        EXPECT_RC(dlock_run_end(l, DLOCK_RUN_EXITED, i), DLOCK_OK);
        EXPECT_RC(dlock_release(l), DLOCK_OK);
    }
    CHECK_RC(history(s, nm("kept"), &h), DLOCK_OK);
    CHECK(h.n == DLOCK_RUNS_KEPT);
    for (unsigned i = 0; i < h.n; i++) {
        EXPECT(h.v[i].status == n - 1 - (int)i);
        if (i > 0)
            EXPECT(h.v[i - 1].fence > h.v[i].fence);
    }
    memset(&h, 0, sizeof(h));
    CHECK_RC(dlock_history(s, nm("kept"), 2, hist_cb, &h), DLOCK_OK);
    EXPECT(h.n == 2 && h.v[0].status == n - 1);
    memset(&h, 0, sizeof(h));
    CHECK_RC(dlock_history(s, nm("never-ran"), 0, hist_cb, &h), DLOCK_OK);
    EXPECT(h.n == 0);
}

/* A lock lost before the run began records nothing; a run whose lock is
 * lost records LOST. */
static void t_lost(dlock_store *s)
{
    dlock_run_rule r = DLOCK_RUN_RULE_INIT;
    dlock_run *last = NULL;
    dlock_lock *l;
    struct hist h;
    int go = 7;

    l = take(s, nm("lost"));
    CHECK(l != NULL);
    CHECK_RC(dlock_force_release(NULL, s, nm("lost")), DLOCK_OK);
    EXPECT_RC(dlock_run_begin(l, &r, &go, &last), DLOCK_LOST);
    EXPECT(go == 0 && last == NULL);
    EXPECT_RC(dlock_release(l), DLOCK_LOST);
    CHECK_RC(history(s, nm("lost"), &h), DLOCK_OK);
    EXPECT(h.n == 0);
    CHECK(begin(s, nm("lost"), &r, &l, &last) == 1);
    CHECK_RC(dlock_force_release(NULL, s, nm("lost")), DLOCK_OK);
    EXPECT_RC(dlock_run_end(l, DLOCK_RUN_LOST, -1), DLOCK_OK);
    EXPECT_RC(dlock_release(l), DLOCK_LOST);
    CHECK_RC(history(s, nm("lost"), &h), DLOCK_OK);
    CHECK(h.n == 1);
    EXPECT(h.v[0].result == DLOCK_RUN_LOST);
}

static int last_cb(const dlock_run *r, void *p)
{
    if (strncmp(r->name, run_id, strlen(run_id)) != 0)
        return 0; /* not ours: the prefix was wider */
    return hist_cb(r, p);
}

/* The newest run of each name under a prefix. */
static void t_last_runs(dlock_store *s)
{
    dlock_run_rule r = DLOCK_RUN_RULE_INIT;
    dlock_run *last = NULL;
    dlock_lock *l;
    struct hist h;
    char prefix[DLOCK_NAME_MAX + 1];

    for (int i = 0; i < 2; i++) {
        CHECK(begin(s, nm("last/a"), &r, &l, &last) == 1);
        dlock_run_free(last);
        EXPECT_RC(dlock_run_end(l, DLOCK_RUN_EXITED, 10 + i), DLOCK_OK);
        EXPECT_RC(dlock_release(l), DLOCK_OK);
    }
    CHECK(begin(s, nm("last/b"), &r, &l, &last) == 1);
    EXPECT_RC(dlock_release(l), DLOCK_OK); /* abandoned, still running */
    snprintf(prefix, sizeof(prefix), "%s", nm("last/"));
    memset(&h, 0, sizeof(h));
    CHECK_RC(dlock_last_runs(s, prefix, last_cb, &h), DLOCK_OK);
    CHECK(h.n == 2);
    for (unsigned i = 0; i < h.n; i++) {
        if (strcmp(h.v[i].name, nm("last/a")) == 0)
            EXPECT(h.v[i].status == 11);
        else
            EXPECT(strcmp(h.v[i].name, nm("last/b")) == 0 &&
                   h.v[i].result == DLOCK_RUN_RUNNING);
    }
}

/* Ten handles race for one period: exactly one goes ahead. */
struct race {
    const char *name;
    int went, skipped, busy, errors;
    pthread_mutex_t mu;
};

static void *race_main(void *p)
{
    struct race *rc = p;
    dlock_store *s = open_store();
    dlock_options o = DLOCK_OPTIONS_INIT;
    dlock_run_rule r = DLOCK_RUN_RULE_INIT;
    dlock_lock *l = NULL;
    int go = 0, a;

    r.period_ms = 60000;
    o.wait_ms = 0;
    a = dlock_acquire(&l, s, rc->name, &o);
    if (a == DLOCK_OK && dlock_run_begin(l, &r, &go, NULL) != DLOCK_OK)
        a = -100;
    pthread_mutex_lock(&rc->mu);
    if (a == DLOCK_BUSY)
        rc->busy++;
    else if (a != DLOCK_OK)
        rc->errors++;
    else if (go)
        rc->went++;
    else
        rc->skipped++;
    pthread_mutex_unlock(&rc->mu);
    if (a == DLOCK_OK) {
        if (go)
            sleep_ms(20); /* a short job */
        if (go && dlock_run_end(l, DLOCK_RUN_EXITED, 0) != DLOCK_OK)
            rc->errors++;
        dlock_release(l);
    }
    dlock_store_close(s);
    return NULL;
}

static void t_race(dlock_store *s)
{
    enum { T = 10 };
    pthread_t t[T];
    struct race rc = {nm("race"), 0, 0, 0, 0, PTHREAD_MUTEX_INITIALIZER};

    (void)s;
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < T; i++) {
            CHECK(pthread_create(&t[i], NULL, race_main, &rc) == 0);
            sleep_ms(5 * (i % 3));
        }
        for (int i = 0; i < T; i++)
            pthread_join(t[i], NULL);
    }
    EXPECT(rc.errors == 0);
    EXPECT(rc.went == 1);
    EXPECT(rc.went + rc.skipped + rc.busy == 3 * T);
}

static int count_cb(const dlock_suspension *x, void *p)
{
    struct susp_seen *seen = p;

    seen->n++;
    if (strcmp(x->name, seen->want) == 0) {
        seen->found++;
        seen->rec = *x;
    }
    return 0;
}

/* Suspension: a suspended name skips every run (whatever the rule, on
 * another handle as well), writes nothing, and says who, when and why; a
 * run begun before goes on and ends recorded; resume lifts it; the edges
 * answer clearly. */
static void t_suspend(dlock_store *s)
{
    dlock_run_rule r = DLOCK_RUN_RULE_INIT;
    dlock_store *s2 = open_store();
    dlock_suspension *x = NULL;
    dlock_run *last = NULL;
    dlock_lock *l, *running;
    struct susp_seen seen;
    struct hist h;
    char big[DLOCK_REASON_MAX + 2], prefix[DLOCK_NAME_MAX + 1];
    const char *name = nm("suspend"), *other = nm("suspend-other");
    int was = -1, go;
    int64_t t0 = now_wall_ms();

    CHECK_RC(dlock_suspended(&x, s, name), DLOCK_OK);
    CHECK(x == NULL);
    /* One run starts before the suspension: it goes on. */
    CHECK(begin(s, name, &r, &running, &last) == 1);
    dlock_run_free(last);
    CHECK_RC(dlock_suspend(&was, s, name, "ops@bastion", "disk full on db2"),
             DLOCK_OK);
    EXPECT(was == 0);
    /* A second suspension keeps the first's record. */
    CHECK_RC(dlock_suspend(&was, s2, name, NULL, "again"), DLOCK_OK);
    EXPECT(was == 1);
    CHECK_RC(dlock_suspended(&x, s2, name), DLOCK_OK);
    CHECK(x != NULL);
    EXPECT(strcmp(x->name, name) == 0);
    EXPECT(strcmp(x->by, "ops@bastion") == 0);
    EXPECT(strcmp(x->reason, "disk full on db2") == 0);
    /* The store's clock, near ours (same machine). */
    EXPECT(x->since_ms > t0 - 60000 && x->since_ms < now_wall_ms() + 60000);
    dlock_suspension_free(x);
    x = NULL;
    EXPECT_RC(dlock_run_end(running, DLOCK_RUN_EXITED, 0), DLOCK_OK);
    EXPECT_RC(dlock_release(running), DLOCK_OK);
    CHECK_RC(history(s, name, &h), DLOCK_OK);
    EXPECT(h.n == 1 && h.v[0].result == DLOCK_RUN_EXITED);
    /* Every later run skips, on either handle, plain or ruled; nothing is
     * recorded. */
    for (int i = 0; i < 2; i++) {
        r.once = i;
        last = NULL;
        go = begin(i ? s2 : s, name, &r, &l, &last);
        EXPECT(go == 0);
        CHECK(last != NULL);
        EXPECT(last->result == DLOCK_RUN_SUSPENDED);
        EXPECT(strcmp(last->host, "ops@bastion") == 0);
        EXPECT(last->fence == 0 && last->end_ms == 0);
        EXPECT(last->start_ms > t0 - 60000);
        EXPECT(strcmp(last->name, name) == 0);
        dlock_run_free(last);
        EXPECT_RC(dlock_run_end(l, DLOCK_RUN_EXITED, 0), DLOCK_EINVAL);
        EXPECT_RC(dlock_release(l), DLOCK_OK);
    }
    r.once = 0;
    CHECK_RC(history(s, name, &h), DLOCK_OK);
    EXPECT(h.n == 1);
    /* Listed under its prefix, not under another's; the other name of
     * the same prefix is not suspended. */
    snprintf(prefix, sizeof(prefix), "%s/", run_id);
    memset(&seen, 0, sizeof(seen));
    seen.want = name;
    CHECK_RC(dlock_suspensions(s2, prefix, count_cb, &seen), DLOCK_OK);
    EXPECT(seen.found == 1);
    EXPECT(strcmp(seen.rec.reason, "disk full on db2") == 0);
    EXPECT(strcmp(seen.rec.by, "ops@bastion") == 0);
    memset(&seen, 0, sizeof(seen));
    seen.want = name;
    CHECK_RC(dlock_suspensions(s2, "runs-no-such-prefix/", count_cb, &seen),
             DLOCK_OK);
    EXPECT(seen.n == 0);
    CHECK(begin(s, other, &r, &l, &last) == 1);
    dlock_run_free(last);
    EXPECT_RC(dlock_run_end(l, DLOCK_RUN_EXITED, 0), DLOCK_OK);
    EXPECT_RC(dlock_release(l), DLOCK_OK);
    /* Resume: hands back what it lifted; a second finds nothing. */
    CHECK_RC(dlock_resume(&x, s2, name), DLOCK_OK);
    CHECK(x != NULL);
    EXPECT(strcmp(x->by, "ops@bastion") == 0);
    dlock_suspension_free(x);
    x = (dlock_suspension *)&x;
    CHECK_RC(dlock_resume(&x, s, name), DLOCK_OK);
    EXPECT(x == NULL);
    CHECK_RC(dlock_suspended(&x, s, name), DLOCK_OK);
    EXPECT(x == NULL);
    CHECK(begin(s, name, &r, &l, &last) == 1);
    dlock_run_free(last);
    EXPECT_RC(dlock_run_end(l, DLOCK_RUN_EXITED, 0), DLOCK_OK);
    EXPECT_RC(dlock_release(l), DLOCK_OK);
    /* The default who is USER@HOST; an empty reason is kept empty. */
    CHECK_RC(dlock_suspend(NULL, s, name, NULL, NULL), DLOCK_OK);
    CHECK_RC(dlock_suspended(&x, s, name), DLOCK_OK);
    CHECK(x != NULL);
    EXPECT(strchr(x->by, '@') != NULL && x->by[0] != '@');
    EXPECT(x->reason[0] == '\0');
    dlock_suspension_free(x);
    CHECK_RC(dlock_resume(NULL, s, name), DLOCK_OK);
    /* Edges: clear errors, nothing written. */
    EXPECT_RC(dlock_suspend(NULL, s, name, NULL, "two\nlines"), DLOCK_EINVAL);
    EXPECT_RC(dlock_suspend(NULL, s, name, NULL, "\x1b[31mred"), DLOCK_EINVAL);
    EXPECT_RC(dlock_suspend(NULL, s, name, NULL, "\xff\xfe"), DLOCK_EINVAL);
    memset(big, 'r', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    EXPECT_RC(dlock_suspend(NULL, s, name, NULL, big), DLOCK_EINVAL);
    big[DLOCK_REASON_MAX] = '\0'; /* exactly the most: fine */
    EXPECT_RC(dlock_suspend(NULL, s, name, "", "x"), DLOCK_EINVAL);
    EXPECT_RC(dlock_suspend(NULL, s, "", NULL, "x"), DLOCK_EINVAL);
    EXPECT_RC(dlock_suspend(NULL, NULL, name, NULL, "x"), DLOCK_EINVAL);
    EXPECT_RC(dlock_resume(NULL, s, ""), DLOCK_EINVAL);
    EXPECT_RC(dlock_suspended(NULL, s, name), DLOCK_EINVAL);
    EXPECT_RC(dlock_suspensions(s, "", NULL, NULL), DLOCK_EINVAL);
    CHECK_RC(dlock_suspended(&x, s, name), DLOCK_OK);
    EXPECT(x == NULL);
    CHECK_RC(dlock_suspend(&was, s, name, NULL, big), DLOCK_OK);
    EXPECT(was == 0);
    CHECK_RC(dlock_suspended(&x, s, name), DLOCK_OK);
    CHECK(x != NULL);
    EXPECT(strlen(x->reason) == DLOCK_REASON_MAX);
    dlock_suspension_free(x);
    CHECK_RC(dlock_resume(NULL, s, name), DLOCK_OK);
    dlock_store_close(s2);
}

/* n plain runs of name, each ended exited 0; 0 or a failure counted. */
static int run_n(dlock_store *s, const char *name, int n)
{
    dlock_run_rule r = DLOCK_RUN_RULE_INIT;

    for (int i = 0; i < n; i++) {
        dlock_run *last = NULL;
        dlock_lock *l;

        if (begin(s, name, &r, &l, &last) != 1)
            return -1;
        dlock_run_free(last);
        EXPECT_RC(dlock_run_end(l, DLOCK_RUN_EXITED, 0), DLOCK_OK);
        EXPECT_RC(dlock_release(l), DLOCK_OK);
    }
    return 0;
}

/* The runs kept, checked newest first and gapless against the fences
 * seen: count, and that each is older than the one before. */
static unsigned kept_now(dlock_store *s, const char *name, struct hist *h)
{
    if (history(s, name, h) != DLOCK_OK) {
        failures++;
        return 0;
    }
    for (unsigned i = 1; i < h->n && i < sizeof(h->v) / sizeof(h->v[0]); i++)
        EXPECT(h->v[i].fence < h->v[i - 1].fence);
    return h->n;
}

/* dlock_keep_runs(): a setting per name, kept by every handle's runs,
 * applied at once when lowered, back to the default with 0. */
static void t_keep(dlock_store *s)
{
    static struct hist h; /* DLOCK_RUNS_KEPT + 5 runs: not on the stack */
    dlock_store *s2 = open_store();
    char name[DLOCK_NAME_MAX + 1], other[DLOCK_NAME_MAX + 1],
        fresh[DLOCK_NAME_MAX + 1];
    unsigned n = 0;
    uint64_t newest;
    int rc;

    /* Copies: nm()'s buffers are reused. */
    snprintf(name, sizeof(name), "%s", nm("keep"));
    snprintf(other, sizeof(other), "%s", nm("keep-other"));
    snprintf(fresh, sizeof(fresh), "%s", nm("keep-fresh"));
    CHECK_RC(dlock_kept_runs(&n, s, name), DLOCK_OK);
    EXPECT(n == DLOCK_RUNS_KEPT);
    CHECK_RC(dlock_keep_runs(s, name, 3), DLOCK_OK);
    CHECK_RC(dlock_kept_runs(&n, s2, name), DLOCK_OK);
    EXPECT(n == 3);
    CHECK(run_n(s, name, 5) == 0);
    EXPECT(kept_now(s, name, &h) == 3);
    /* Raised: the runs grow to it, by either handle, then stay. */
    CHECK_RC(dlock_keep_runs(s2, name, DLOCK_RUNS_KEPT + 4), DLOCK_OK);
    CHECK(run_n(s2, name, DLOCK_RUNS_KEPT) == 0);
    EXPECT(kept_now(s, name, &h) == DLOCK_RUNS_KEPT + 3);
    CHECK(run_n(s, name, 3) == 0);
    EXPECT(kept_now(s, name, &h) == DLOCK_RUNS_KEPT + 4);
    newest = h.v[0].fence;
    /* Lowered: the oldest go at once, the newest stay. */
    CHECK_RC(dlock_keep_runs(s, name, 2), DLOCK_OK);
    EXPECT(kept_now(s2, name, &h) == 2);
    EXPECT(h.v[0].fence == newest);
    CHECK(run_n(s, name, 2) == 0);
    EXPECT(kept_now(s, name, &h) == 2);
    EXPECT(h.v[1].fence > newest);
    /* 0: the default again. */
    CHECK_RC(dlock_keep_runs(s, name, 0), DLOCK_OK);
    CHECK_RC(dlock_kept_runs(&n, s, name), DLOCK_OK);
    EXPECT(n == DLOCK_RUNS_KEPT);
    CHECK(run_n(s, name, DLOCK_RUNS_KEPT + 1) == 0);
    EXPECT(kept_now(s, name, &h) == DLOCK_RUNS_KEPT);
    /* Another name is not touched by this one's setting. */
    CHECK_RC(dlock_keep_runs(s, name, 1), DLOCK_OK);
    CHECK_RC(dlock_kept_runs(&n, s, other), DLOCK_OK);
    EXPECT(n == DLOCK_RUNS_KEPT);
    CHECK(run_n(s, other, 2) == 0);
    EXPECT(kept_now(s, other, &h) == 2);
    EXPECT(kept_now(s, name, &h) == 1);
    /* A name that never ran may keep a setting before its first run;
     * the most is DLOCK_RUNS_KEPT_MAX, or less where a store says so
     * (etcd: 500) with DLOCK_EINVAL, and then nothing changes. */
    CHECK_RC(dlock_keep_runs(s, fresh, 500), DLOCK_OK);
    CHECK_RC(dlock_kept_runs(&n, s2, fresh), DLOCK_OK);
    EXPECT(n == 500);
    rc = dlock_keep_runs(s, fresh, DLOCK_RUNS_KEPT_MAX);
    EXPECT(rc == DLOCK_OK || rc == DLOCK_EINVAL);
    CHECK_RC(dlock_kept_runs(&n, s2, fresh), DLOCK_OK);
    EXPECT(n == (rc == DLOCK_OK ? DLOCK_RUNS_KEPT_MAX : 500));
    /* Edges. */
    EXPECT_RC(dlock_keep_runs(s, name, DLOCK_RUNS_KEPT_MAX + 1), DLOCK_EINVAL);
    EXPECT_RC(dlock_keep_runs(s, "", 3), DLOCK_EINVAL);
    EXPECT_RC(dlock_keep_runs(NULL, name, 3), DLOCK_EINVAL);
    EXPECT_RC(dlock_kept_runs(NULL, s, name), DLOCK_EINVAL);
    CHECK_RC(dlock_kept_runs(&n, s, name), DLOCK_OK);
    EXPECT(n == 1);
    dlock_store_close(s2);
}

static void t_bad(dlock_store *s)
{
    dlock_run_rule r = DLOCK_RUN_RULE_INIT;
    dlock_lock *l;
    int go;

    l = take(s, nm("bad"));
    CHECK(l != NULL);
    r.period_ms = -1;
    EXPECT_RC(dlock_run_begin(l, &r, &go, NULL), DLOCK_EINVAL);
    r.period_ms = 0;
    EXPECT_RC(dlock_run_begin(l, NULL, &go, NULL), DLOCK_EINVAL);
    EXPECT_RC(dlock_run_begin(l, &r, NULL, NULL), DLOCK_EINVAL);
    EXPECT_RC(dlock_run_end(l, DLOCK_RUN_EXITED, 0), DLOCK_EINVAL);
    EXPECT_RC(dlock_run_begin(l, &r, &go, NULL), DLOCK_OK);
    EXPECT_RC(dlock_run_end(l, DLOCK_RUN_RUNNING, 0), DLOCK_EINVAL);
    EXPECT_RC(dlock_run_end(l, DLOCK_RUN_EXITED, 0), DLOCK_OK);
    EXPECT_RC(dlock_release(l), DLOCK_OK);
    EXPECT_RC(dlock_history(s, nm("bad"), 0, NULL, NULL), DLOCK_EINVAL);
    EXPECT_RC(dlock_run_begin(NULL, &r, &go, NULL), DLOCK_EINVAL);
}

static const struct {
    const char *name;
    void (*fn)(dlock_store *s);
} tests[] = {
    {"record", t_record}, {"once", t_once}, {"period", t_period},
    {"kept", t_kept},     {"lost", t_lost}, {"last_runs", t_last_runs},
    {"race", t_race},     {"bad", t_bad},   {"suspend", t_suspend},
    {"keep", t_keep},
};

int main(int argc, char **argv)
{
    unsigned char rnd[4];
    int failed = 0;
    dlock_store *s;
    FILE *ur;

    if (argc < 2 || argv[1][0] == '\0') {
        fprintf(stderr, "usage: %s URL [TEST...]\n", argv[0]);
        return 100;
    }
    url = argv[1];
    ur = fopen("/dev/urandom", "r");
    if (ur == NULL || fread(rnd, 1, sizeof(rnd), ur) != sizeof(rnd))
        return 100;
    fclose(ur);
    snprintf(run_id, sizeof(run_id), "runs-%ld-%02x%02x%02x%02x",
             (long)getpid(), rnd[0], rnd[1], rnd[2], rnd[3]);
    s = open_store();
    printf("run records on %s (%s)\n", dlock_store_url(s), run_id);
    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
        int before = failures, want = argc <= 2;
        int64_t t0;

        for (int a = 2; a < argc; a++)
            want |= strcmp(argv[a], tests[i].name) == 0;
        if (!want)
            continue;
        t0 = now_ms();
        tests[i].fn(s);
        printf("%s %-12s %5lld ms\n", failures == before ? "ok  " : "FAIL",
               tests[i].name, (long long)(now_ms() - t0));
        failed += failures != before;
    }
    dlock_store_close(s);
    printf("%d failed\n", failed);
    return failed ? 1 : 0;
}
