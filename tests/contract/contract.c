/*
 * contract.c - the behaviour every store must show.  One suite, run
 * against any store URL:
 *
 *     dlock-contract KIND URL [TEST...]
 *     dlock-contract --list [--io]
 *
 * KIND names the store and mode under test (sqlite, redis, postgres,
 * postgres-lease, postgres-hashtext, mysql, mysql-lease): what the suite
 * expects of it comes from the table below, never from the URL's text,
 * and a store that lacks what its row promises fails.
 *
 * Each test prints "ok"/"FAIL"; the exit status is the number of failed
 * tests (capped at 100); a TEST that names no case exits 2 before any
 * runs.  --list prints the case names (--io: those the transport variants
 * run, see the table at the end).  Names are prefixed with a random run id, so
 * runs against a long-lived server do not see each other.
 *
 * Timing: lease lengths are a few hundred milliseconds so the suite stays
 * short; the only timed assertions are the ones the contract itself makes
 * (a wait ends within +-50 ms of its deadline; a waiter gets a released
 * lock promptly), with margins wide enough for ASan.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "dlock.h"

static const char *url;
static const char *kind;
static char run_id[64];

/* What each store promises beyond the common contract. */
static const struct caps {
    const char *kind;
    int shared;     /* shared (read) locks */
    int sees_death; /* a dead holder's lock is free before its lease ends */
    int semaphore;  /* limit > 1 (else it must answer DLOCK_ENOTSUP) */
} all_caps[] = {
    {"sqlite", 1, 1, 1},         /* dead pid on this host */
    {"redis", 1, 0, 1},          /* only the lease */
    {"redis-sentinel", 1, 0, 1}, /* the same, on the sentinels' master */
    {"redis-cluster", 1, 0, 1},  /* the same, on the slot's master */
    {"postgres", 1, 1, 1},       /* the session ends */
    {"postgres-hashtext", 1, 1, 1},
    {"postgres-lease", 1, 0, 1}, /* table only: the lease */
    {"mysql", 0, 1, 1},          /* the session ends */
    {"mysql-lease", 0, 0, 1},
    {"etcd", 1, 0, 1},         /* the lease (the server's) */
    {"etcd-cluster", 1, 0, 1}, /* the same, on a 3-member cluster */
};
static const struct caps *caps;
static const char *self_exe;

/* A per-run name: "<run id>/<base>". */
static const char *nm(const char *base)
{
    static _Thread_local char buf[8][DLOCK_NAME_MAX + 1];
    static _Thread_local int i;

    i = (i + 1) % 8;
    snprintf(buf[i], sizeof(buf[i]), "%s/%s", run_id, base);
    return buf[i];
}

static dlock_options opts(int64_t wait_ms, int64_t ttl_ms, int renew)
{
    dlock_options o = DLOCK_OPTIONS_INIT;

    o.wait_ms = wait_ms;
    o.ttl_ms = ttl_ms;
    o.auto_renew = renew;
    return o;
}

static dlock_store *open_store(void)
{
    dlock_store *s = NULL;
    int rc = dlock_store_open(&s, url);

    if (rc != DLOCK_OK) {
        fprintf(stderr, "cannot open %s: %s\n", url, dlock_errmsg());
        exit(100);
    }
    return s;
}

/* --- tests ------------------------------------------------------------ */

static void t_try_busy(dlock_store *s)
{
    dlock_options o = opts(0, 5000, 1);
    dlock_lock *a, *b = (dlock_lock *)&b;
    dlock_store *s2 = open_store();

    CHECK_RC(dlock_acquire(&a, s, nm("busy"), &o), DLOCK_OK);
    CHECK(a != NULL && dlock_fence(a) > 0);
    CHECK_RC(dlock_acquire(&b, s, nm("busy"), &o), DLOCK_BUSY);
    CHECK(b == NULL);
    /* Another handle (another connection) sees the same. */
    CHECK_RC(dlock_acquire(&b, s2, nm("busy"), &o), DLOCK_BUSY);
    CHECK_RC(dlock_release(a), DLOCK_OK);
    CHECK_RC(dlock_acquire(&b, s2, nm("busy"), &o), DLOCK_OK);
    CHECK_RC(dlock_release(b), DLOCK_OK);
    dlock_store_close(s2);
}

/* Every call sets or clears the thread's message: it never belongs to an
 * earlier call. */
static void t_errmsg(dlock_store *s)
{
    dlock_options o = opts(0, 5000, 1);
    dlock_lock *a, *b;
    dlock_info info;
    char einval[256];

    CHECK_RC(dlock_acquire(&a, s, nm("errmsg"), &o), DLOCK_OK);
    EXPECT(dlock_errmsg()[0] == '\0');
    CHECK_RC(dlock_acquire(&b, s, "", &o), DLOCK_EINVAL);
    EXPECT(dlock_errmsg()[0] != '\0');
    snprintf(einval, sizeof(einval), "%s", dlock_errmsg());
    /* BUSY says why in its own words, not the failure before it. */
    CHECK_RC(dlock_acquire(&b, s, nm("errmsg"), &o), DLOCK_BUSY);
    EXPECT(dlock_errmsg()[0] != '\0' && strcmp(dlock_errmsg(), einval) != 0);
    CHECK_RC(test_status(s, nm("errmsg"), &info), DLOCK_OK);
    EXPECT(dlock_errmsg()[0] == '\0');
    CHECK_RC(dlock_acquire(&b, s, "", &o), DLOCK_EINVAL);
    CHECK_RC(dlock_extend(a, 0), DLOCK_OK);
    EXPECT(dlock_errmsg()[0] == '\0');
    CHECK_RC(dlock_acquire(&b, s, "", &o), DLOCK_EINVAL);
    CHECK_RC(dlock_assert_ttl(a, 0), DLOCK_OK);
    EXPECT(dlock_errmsg()[0] == '\0');
    CHECK_RC(dlock_acquire(&b, s, "", &o), DLOCK_EINVAL);
    CHECK_RC(dlock_release(a), DLOCK_OK);
    EXPECT(dlock_errmsg()[0] == '\0');
}

struct waiter {
    dlock_store *store;
    const char *name;
    int64_t wait_ms;
    int rc;
    int64_t started, done;
    uint64_t fence;
};

static void *waiter_main(void *arg)
{
    struct waiter *w = arg;
    dlock_options o = opts(w->wait_ms, 5000, 1);
    dlock_lock *l = NULL;

    w->started = now_ms();
    w->rc = dlock_acquire(&l, w->store, w->name, &o);
    w->done = now_ms();
    w->fence = dlock_fence(l);
    dlock_release(l);
    return NULL;
}

/* A waiter (finite or forever) gets the lock soon after the holder lets
 * go.  The 200 ms before the release is not synchronisation: it makes the
 * waiter actually wait, which the test then checks. */
static void wait_then_release(dlock_store *s, int64_t wait_ms, const char *base)
{
    dlock_options o = opts(0, 5000, 1);
    struct waiter w = {s, NULL, wait_ms, -99, 0, 0, 0};
    dlock_lock *a;
    pthread_t t;
    int64_t released;

    w.name = nm(base);
    CHECK_RC(dlock_acquire(&a, s, w.name, &o), DLOCK_OK);
    CHECK(pthread_create(&t, NULL, waiter_main, &w) == 0);
    /* Time passing is the point: the waiter must be deep in its wait
     * (asleep on the store) when the release comes, not still starting. */
    sleep_ms(200);
    released = now_ms();
    CHECK_RC(dlock_release(a), DLOCK_OK);
    pthread_join(t, NULL);
    CHECK_RC(w.rc, DLOCK_OK);
    CHECK(w.done >= released);        /* not before the release */
    CHECK(w.done - w.started >= 150); /* it did wait */
    CHECK(w.done - released < 1000);  /* and was not left waiting */
}

static void t_wait_finite(dlock_store *s)
{
    wait_then_release(s, 5000, "wait-finite");
}

static void t_wait_forever(dlock_store *s)
{
    wait_then_release(s, DLOCK_WAIT_FOREVER, "wait-forever");
}

static void t_wait_zero_free(dlock_store *s)
{
    dlock_options o = opts(0, 5000, 1);
    dlock_lock *a;

    CHECK_RC(dlock_acquire(&a, s, nm("free"), &o), DLOCK_OK);
    CHECK_RC(dlock_release(a), DLOCK_OK);
}

static void t_timeout_precision(dlock_store *s)
{
    static const int64_t waits[] = {1, 120, 400};
    dlock_options o = opts(0, 10000, 1);
    dlock_lock *a, *b;
#ifdef __SANITIZE_THREAD__
    /* ThreadSanitizer makes a PostgreSQL wait's first steps (its own
     * connection, LISTEN) 60 to 90 ms slower: 120 ms took 173 to 209 ms
     * in 24 of 25 runs, on the code before issue 43 and after alike.
     * This build checks the threads' accesses, the others the pace: a
     * wait still may not end early, nor be late by more than this. */
    const int64_t late = 150;
#else
    const int64_t late = 50;
#endif

    CHECK_RC(dlock_acquire(&a, s, nm("timeout"), &o), DLOCK_OK);
    for (size_t i = 0; i < sizeof(waits) / sizeof(waits[0]); i++) {
        dlock_options w = opts(waits[i], 5000, 1);
        int64_t t0 = now_ms(), took;

        CHECK_RC(dlock_acquire(&b, s, nm("timeout"), &w), DLOCK_BUSY);
        took = now_ms() - t0;
        if (took < waits[i] - 50 || took > waits[i] + late)
            fprintf(stderr, "  wait %lld ms took %lld ms\n",
                    (long long)waits[i], (long long)took);
        CHECK(took >= waits[i] - 50 && took <= waits[i] + late);
    }
    CHECK_RC(dlock_release(a), DLOCK_OK);
}

static int lost_calls;
static void count_lost(dlock_lock *l, void *payload)
{
    (void)l;
    __atomic_add_fetch((int *)payload, 1, __ATOMIC_SEQ_CST);
}

static void t_lease_takeover(dlock_store *s)
{
    dlock_options o = opts(0, 300, 0);
    dlock_options w = opts(3000, 5000, 1);
    dlock_store *s2 = open_store();
    dlock_lock *a, *b, *c;
    int64_t t0;

    lost_calls = 0;
    o.on_lost = count_lost;
    o.payload = &lost_calls;
    CHECK_RC(dlock_acquire(&a, s, nm("lease"), &o), DLOCK_OK);
    t0 = now_ms();
    CHECK_RC(dlock_acquire(&b, s2, nm("lease"), &w), DLOCK_OK);
    CHECK(now_ms() - t0 >= 200); /* not before the lease ran out */
    CHECK(dlock_fence(b) > dlock_fence(a));
    CHECK_RC(dlock_extend(a, 0), DLOCK_LOST);
    CHECK(lost_calls == 1);
    CHECK_RC(dlock_assert_ttl(a, 0), DLOCK_LOST);
    CHECK(dlock_is_lost(a));
    CHECK(lost_calls == 1); /* once only */
    CHECK_RC(dlock_release(a), DLOCK_LOST);
    /* The old holder's release did not touch the new holder's lock. */
    CHECK_RC(dlock_acquire(&c, s, nm("lease"), &o), DLOCK_BUSY);
    CHECK_RC(dlock_assert_ttl(b, 1000), DLOCK_OK);
    CHECK_RC(dlock_release(b), DLOCK_OK);
    dlock_store_close(s2);
}

/* A lease that ran out is lost even when nobody took the lock. */
static void t_lease_expired_untaken(dlock_store *s)
{
    dlock_options o = opts(0, 200, 0);
    dlock_lock *a, *b;

    CHECK_RC(dlock_acquire(&a, s, nm("expired"), &o), DLOCK_OK);
    sleep_ms(400); /* time passing is the point here */
    CHECK_RC(dlock_assert_ttl(a, 0), DLOCK_LOST);
    CHECK_RC(dlock_release(a), DLOCK_LOST);
    CHECK_RC(dlock_acquire(&b, s, nm("expired"), &o), DLOCK_OK);
    CHECK_RC(dlock_release(b), DLOCK_OK);
}

/* A lease that ran out unrenewed is lost at its end as this process
 * counts it, even if nobody took the lock and the store would still
 * extend it: someone may have held it meanwhile. */
static void t_lapsed(dlock_store *s)
{
    dlock_options o = opts(0, 200, 0);
    dlock_lock *a;

    CHECK_RC(dlock_acquire(&a, s, nm("lapsed"), &o), DLOCK_OK);
    EXPECT(!dlock_is_lost(a));
    sleep_ms(300); /* time passing is the point: nobody renews it */
    EXPECT(dlock_is_lost(a));
    CHECK_RC(dlock_extend(a, 0), DLOCK_LOST);
    CHECK_RC(dlock_release(a), DLOCK_LOST);
    CHECK_RC(dlock_acquire(&a, s, nm("lapsed"), &o), DLOCK_OK);
    sleep_ms(300);
    CHECK_RC(dlock_release(a), DLOCK_LOST);
    /* And the store was tidied: the name is free at once. */
    CHECK_RC(dlock_acquire(&a, s, nm("lapsed"), &o), DLOCK_OK);
    CHECK_RC(dlock_release(a), DLOCK_OK);
}

static void t_fences(dlock_store *s)
{
    dlock_options o = opts(0, 5000, 1), sh = o;
    uint64_t last = 0;
    dlock_lock *l;
    dlock_store *s2;

    for (int i = 0; i < 5; i++) {
        CHECK_RC(dlock_acquire(&l, s, nm("fence"), &o), DLOCK_OK);
        CHECK(dlock_fence(l) > last);
        last = dlock_fence(l);
        CHECK_RC(dlock_release(l), DLOCK_OK);
    }
    /* A new connection, as after a client restart. */
    s2 = open_store();
    CHECK_RC(dlock_acquire(&l, s2, nm("fence"), &o), DLOCK_OK);
    CHECK(dlock_fence(l) > last);
    last = dlock_fence(l);
    CHECK_RC(dlock_release(l), DLOCK_OK);
    dlock_store_close(s2);
    /* Fences are per name but never go back for any name. */
    CHECK_RC(dlock_acquire(&l, s, nm("fence-other"), &o), DLOCK_OK);
    CHECK(dlock_fence(l) > 0);
    CHECK_RC(dlock_release(l), DLOCK_OK);
    sh.shared = 1;
    if (!caps->shared) {
        CHECK_RC(dlock_acquire(&l, s, nm("fence"), &sh), DLOCK_ENOTSUP);
        return;
    }
    CHECK_RC(dlock_acquire(&l, s, nm("fence"), &sh), DLOCK_OK);
    CHECK(dlock_fence(l) > last);
    CHECK_RC(dlock_release(l), DLOCK_OK);
}

static void t_extend(dlock_store *s)
{
    dlock_options o = opts(0, 400, 0);
    dlock_lock *a, *b;

    CHECK_RC(dlock_acquire(&a, s, nm("extend"), &o), DLOCK_OK);
    CHECK_RC(dlock_extend(a, 3000), DLOCK_OK);
    sleep_ms(600); /* past the first lease */
    CHECK_RC(dlock_assert_ttl(a, 1000), DLOCK_OK);
    CHECK_RC(dlock_acquire(&b, s, nm("extend"), &o), DLOCK_BUSY);
    CHECK_RC(dlock_extend(a, 0), DLOCK_OK); /* its own (new) ttl */
    CHECK_RC(dlock_assert_ttl(a, 2000), DLOCK_OK);
    CHECK_RC(dlock_release(a), DLOCK_OK);
}

static void t_assert_ttl(dlock_store *s)
{
    dlock_options o = opts(0, 2000, 0);
    dlock_lock *a;

    CHECK_RC(dlock_acquire(&a, s, nm("assert"), &o), DLOCK_OK);
    CHECK_RC(dlock_assert_ttl(a, 500), DLOCK_OK);
    CHECK_RC(dlock_assert_ttl(a, 60000), DLOCK_EXPIRING);
    CHECK(!dlock_is_lost(a));
    CHECK_RC(dlock_release(a), DLOCK_OK);
}

/* Breaking a lock from outside: the holder is told (on_lost, once, from
 * the renew thread) and its release does not remove the next holder. */
static int lost_pipe[2];
static void lost_to_pipe(dlock_lock *l, void *payload)
{
    (void)l;
    (void)payload;
    (void)!write(lost_pipe[1], "L", 1);
}

static void t_broken_lock(dlock_store *s)
{
    dlock_options o = opts(0, 600, 1);
    dlock_store *s2 = open_store();
    struct pollfd p;
    unsigned removed = 0;
    dlock_lock *a, *b;
    char c;

    CHECK(pipe(lost_pipe) == 0);
    o.on_lost = lost_to_pipe;
    CHECK_RC(dlock_acquire(&a, s, nm("broken"), &o), DLOCK_OK);
    CHECK_RC(dlock_force_release(&removed, s2, nm("broken")), DLOCK_OK);
    CHECK(removed == 1);
    p.fd = lost_pipe[0];
    p.events = POLLIN;
    CHECK(poll(&p, 1, 3000) == 1); /* renewal at ttl/3 finds it gone */
    CHECK(read(lost_pipe[0], &c, 1) == 1 && c == 'L');
    CHECK(dlock_is_lost(a));
    CHECK_RC(dlock_acquire(&b, s2, nm("broken"), &o), DLOCK_OK);
    CHECK_RC(dlock_release(a), DLOCK_LOST);
    CHECK_RC(dlock_assert_ttl(b, 100), DLOCK_OK);
    CHECK_RC(dlock_release(b), DLOCK_OK);
    CHECK(poll(&p, 1, 0) == 0); /* no second call */
    close(lost_pipe[0]);
    close(lost_pipe[1]);
    dlock_store_close(s2);
}

/* on_lost called from inside dlock_extend (on the caller's thread) may
 * call the library, which sets this thread's message: extend still
 * returns with its own. */
static void lost_calls_library(dlock_lock *l, void *payload)
{
    dlock_store *x = NULL;

    (void)l;
    (void)payload;
    CHECK_RC(dlock_store_open(&x, "no-such-scheme://x"), DLOCK_EINVAL);
}

static void t_lost_in_extend(dlock_store *s)
{
    dlock_options o = opts(0, 30000, 0);
    dlock_store *s2 = open_store();
    unsigned removed = 0;
    dlock_lock *a;

    o.on_lost = lost_calls_library;
    CHECK_RC(dlock_acquire(&a, s, nm("lostext"), &o), DLOCK_OK);
    CHECK_RC(dlock_force_release(&removed, s2, nm("lostext")), DLOCK_OK);
    CHECK_RC(dlock_extend(a, 0), DLOCK_LOST);
    if (strstr(dlock_errmsg(), "lostext") == NULL)
        fprintf(stderr, "  extend's message: %s\n", dlock_errmsg());
    CHECK(strstr(dlock_errmsg(), "lostext") != NULL);
    CHECK_RC(dlock_release(a), DLOCK_LOST);
    dlock_store_close(s2);
}

static void t_auto_renew(dlock_store *s)
{
    dlock_options o = opts(0, 300, 1);
    dlock_lock *a, *b;

    lost_calls = 0;
    o.on_lost = count_lost;
    o.payload = &lost_calls;
    CHECK_RC(dlock_acquire(&a, s, nm("renew"), &o), DLOCK_OK);
    sleep_ms(1000); /* more than three leases */
    CHECK_RC(dlock_assert_ttl(a, 1), DLOCK_OK);
    CHECK_RC(dlock_acquire(&b, s, nm("renew"), &o), DLOCK_BUSY);
    CHECK(lost_calls == 0);
    CHECK_RC(dlock_release(a), DLOCK_OK);
}

static void t_names(dlock_store *s)
{
    static const char *const odd[] = {
        "it's \"quoted\"",    "'; DROP TABLE x; --",      "Grüße/鍵/🔒",
        "back\\slash%_*?[x]", "with space\tand\nnewline",
    };
    dlock_options o = opts(0, 5000, 1);
    char big[DLOCK_NAME_MAX + 2];
    dlock_lock *l, *l2;
    dlock_info info;
    size_t plen;

    CHECK_RC(dlock_acquire(&l, s, "", &o), DLOCK_EINVAL);
    CHECK_RC(dlock_acquire(&l, s, NULL, &o), DLOCK_EINVAL);
    CHECK_RC(dlock_acquire_len(&l, s, "a\0b", 3, &o), DLOCK_EINVAL);
    CHECK_RC(dlock_acquire(&l, s, "bad \xff utf8", &o), DLOCK_EINVAL);
    CHECK_RC(dlock_acquire(&l, s, "overlong \xc0\xaf", &o), DLOCK_EINVAL);

    /* 1024 bytes is fine, 1025 is not: prefix + filler. */
    plen = strlen(nm(""));
    memcpy(big, nm(""), plen);
    memset(big + plen, 'n', sizeof(big) - plen);
    big[DLOCK_NAME_MAX] = '\0';
    CHECK_RC(dlock_acquire(&l, s, big, &o), DLOCK_OK);
    CHECK_RC(dlock_acquire(&l2, s, big, &o), DLOCK_BUSY);
    CHECK_RC(test_status(s, big, &info), DLOCK_OK);
    CHECK(info.held && strcmp(info.name, big) == 0);
    /* Same 1023-byte prefix, different last byte: a different lock. */
    big[DLOCK_NAME_MAX - 1] = 'm';
    CHECK_RC(dlock_acquire(&l2, s, big, &o), DLOCK_OK);
    CHECK_RC(dlock_release(l2), DLOCK_OK);
    CHECK_RC(dlock_release(l), DLOCK_OK);
    big[DLOCK_NAME_MAX] = 'n';
    big[DLOCK_NAME_MAX + 1] = '\0';
    CHECK_RC(dlock_acquire(&l, s, big, &o), DLOCK_EINVAL);

    for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
        const char *n = nm(odd[i]);

        CHECK_RC(dlock_acquire(&l, s, n, &o), DLOCK_OK);
        CHECK_RC(dlock_acquire(&l2, s, n, &o), DLOCK_BUSY);
        CHECK_RC(test_status(s, n, &info), DLOCK_OK);
        CHECK(info.held && strcmp(info.name, n) == 0);
        CHECK_RC(dlock_release(l), DLOCK_OK);
    }
    /* Case matters. */
    CHECK_RC(dlock_acquire(&l, s, nm("CaseName"), &o), DLOCK_OK);
    CHECK_RC(dlock_acquire(&l2, s, nm("casename"), &o), DLOCK_OK);
    CHECK_RC(dlock_release(l2), DLOCK_OK);
    CHECK_RC(dlock_release(l), DLOCK_OK);
    /* And after all that, the store still works. */
    CHECK_RC(dlock_acquire(&l, s, nm("after-names"), &o), DLOCK_OK);
    CHECK_RC(dlock_release(l), DLOCK_OK);
}

struct count {
    const char *prefix;
    unsigned n;
};

static int count_cb(const dlock_info *info, void *payload)
{
    struct count *c = payload;

    if (strncmp(info->name, c->prefix, strlen(c->prefix)) != 0 || !info->held)
        return 1000; /* a name that should not be listed */
    c->n++;
    return 0;
}

static int stop_cb(const dlock_info *info, void *payload)
{
    (void)info;
    (void)payload;
    return 7;
}

static void t_many_and_list(dlock_store *s)
{
    enum { N = 100 };
    dlock_options o = opts(0, 10000, 1);
    dlock_lock *l[N];
    char base[32];
    struct count c = {NULL, 0};
    dlock_info info;

    for (int i = 0; i < N; i++) {
        snprintf(base, sizeof(base), "many/%03d", i);
        CHECK_RC(dlock_acquire(&l[i], s, nm(base), &o), DLOCK_OK);
    }
    c.prefix = nm("many/");
    CHECK_RC(dlock_list(s, c.prefix, count_cb, &c), DLOCK_OK);
    CHECK(c.n == N);
    c.n = 0;
    c.prefix = nm("many/05");
    CHECK_RC(dlock_list(s, c.prefix, count_cb, &c), DLOCK_OK);
    CHECK(c.n == 10);
    CHECK(dlock_list(s, nm("many/"), stop_cb, NULL) == 7);
    CHECK_RC(test_status(s, nm("many/042"), &info), DLOCK_OK);
    CHECK(info.held && info.holders == 1 && !info.shared && !info.other_client);
    CHECK(info.fence == dlock_fence(l[42]));
    CHECK(info.pid == (int64_t)getpid() || info.pid == 0);
    CHECK(info.ttl_ms > 0 && info.ttl_ms <= 10000);
    for (int i = 0; i < N; i++)
        CHECK_RC(dlock_release(l[i]), DLOCK_OK);
    c.n = 0;
    c.prefix = nm("many/");
    CHECK_RC(dlock_list(s, c.prefix, count_cb, &c), DLOCK_OK);
    CHECK(c.n == 0);
    CHECK_RC(test_status(s, nm("many/042"), &info), DLOCK_OK);
    CHECK(!info.held && info.holders == 0);
}

/* list PREFIX returns exactly the names that start with the prefix's
 * bytes (issue 48: the stores ask an index for a range or a LIKE): LIKE's
 * '%', '_' and an escape character are plain bytes in a prefix, a prefix
 * may end inside a character or in 0xFF (no name holds that byte), and a
 * prefix longer than the 24 characters a hashed MySQL key keeps. */
static void t_list_prefix_bytes(dlock_store *s)
{
    static const char *names[] = {
        "lp/a%b",
        "lp/axb",
        "lp/a_c",
        "lp/abc",
        "lp/a!d",
        "lp/a\\e",
        "lp/\xc3\xa9",
        "lp/\xc3\xbf",
        "lp/sp x",
        "lp/spx",
        "lp/long-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
        "xxxxxxxxxxxxxxxxxx",
        "lp/long-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy"
        "yyyyyyyyyyyyyyyyyy"};
    static const struct {
        const char *prefix;
        unsigned n;
    } lists[] = {
        {"lp/a", 6},
        {"lp/a%", 1},
        {"lp/a_", 1},
        {"lp/a!", 1},
        {"lp/a\\", 1},
        {"lp/\xc3", 2},
        {"lp/\xc3\xbf", 1},
        {"lp/\xc3\xbf\xff", 0},
        {"lp/\xff", 0},
        {"lp/sp ", 1},
        {"lp/long-", 2},
        {"lp/long-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", 1},
    };
    enum { N = sizeof(names) / sizeof(names[0]) };
    dlock_options o = opts(0, 10000, 1);
    dlock_lock *l[N];
    char prefix[DLOCK_NAME_MAX + 1];
    struct count c = {prefix, 0};

    for (int i = 0; i < N; i++)
        CHECK_RC(dlock_acquire(&l[i], s, nm(names[i]), &o), DLOCK_OK);
    for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
        snprintf(prefix, sizeof(prefix), "%s", nm(lists[i].prefix));
        c.n = 0;
        CHECK_RC(dlock_list(s, prefix, count_cb, &c), DLOCK_OK);
        if (c.n != lists[i].n)
            fprintf(stderr, "list '%s': %u names, not %u\n", lists[i].prefix,
                    c.n, lists[i].n);
        CHECK(c.n == lists[i].n);
    }
    /* All 0xFF: no upper end to the range. */
    snprintf(prefix, sizeof(prefix), "\xff\xff");
    c.n = 0;
    CHECK_RC(dlock_list(s, prefix, count_cb, &c), DLOCK_OK);
    CHECK(c.n == 0);
    for (int i = 0; i < N; i++)
        CHECK_RC(dlock_release(l[i]), DLOCK_OK);
}

/* Renewal at scale (issue 19): a process holding thousands of
 * auto-renewed locks on a short lease keeps every one of them.  With one
 * round trip per renewal, and the thread scanning every lock for each,
 * renewal fell behind and leases lapsed.  The only assertion is "none
 * lost": how fast is the bench's business (dlock-bench --only renew).
 * MySQL holds 2,000: in lock mode each pins a connection of its own
 * (the test server allows 4,200, a handle half), and lock by lock (a
 * round trip each, in turn, before batched renewal) lost 859 of them
 * under ASan.
 * Redis answers fastest: one round trip per lock kept 2,000 alive now and
 * then, so it holds twice as many, which that never kept.  Runs in a
 * process of its own (t_renew_many below). */
static void renew_many_body(dlock_store *s)
{
    int mysql = strncmp(kind, "mysql", 5) == 0;
    int n = mysql ? 2000 : strcmp(kind, "redis") == 0 ? 4000 : 2000;
    /* A lease now ends on the holder's clock even while its renewal is
     * on the way: every renewal must be answered within its lease, not
     * just sent.  MySQL renews 500 rows a round trip, 150..300 ms each
     * under ASan on two busy cores, so 2,000 locks take a lease of 2 s
     * (with 600 ms, the fourth batch of a pass came back after the lease
     * it renewed had ended). */
    /* etcd counts whole seconds, 2 s at least (docs/stores/etcd.md): a
     * 600 ms lock is a 2 s lease on the server all the same, and a
     * renewal pass reads the keys 128 to a txn, 16 txns for 2,000.  On a
     * three-member cluster under ASan, the later txns of a pass came
     * back after a 600 ms lease end on the holder's clock (a fresh-clone
     * long tier: 1,333 of 2,000 lost).  It gets the lease the server
     * grants anyway. */
    int etcd = strncmp(kind, "etcd", 4) == 0;
    int64_t ttl = mysql || etcd ? 2000 : 600;
    int64_t hold = mysql || etcd ? 6000 : 3000;
    dlock_options o;
    dlock_lock **l = calloc((size_t)n, sizeof(*l));
    char base[32];
    int got = 0, lost, seen_lost = 0, bad_release = 0;

#ifdef __SANITIZE_THREAD__
    /* ThreadSanitizer runs the library 5 to 15 times slower, the renew
     * thread's batches too: the same load with leases to match.  This
     * build checks the threads' accesses, the others the pace. */
    ttl *= 8;
    hold = 3 * ttl; /* still three leases long */
#endif
    o = opts(0, ttl, 1);
    CHECK(l != NULL);
    lost_calls = 0;
    o.on_lost = count_lost;
    o.payload = &lost_calls;
    for (int i = 0; i < n; i++) {
        snprintf(base, sizeof(base), "renew-many/%05d", i);
        if (dlock_acquire(&l[i], s, nm(base), &o) == DLOCK_OK)
            got++;
    }
    EXPECT(got == n);
    sleep_ms(hold); /* time passing is the point: leases */
    for (int i = 0; i < n; i++)
        if (l[i] != NULL && dlock_is_lost(l[i]))
            seen_lost++;
    lost = __atomic_load_n(&lost_calls, __ATOMIC_SEQ_CST);
    for (int i = 0; i < n; i++)
        if (l[i] != NULL && dlock_release(l[i]) != DLOCK_OK)
            bad_release++;
    free(l);
    if (lost != 0 || seen_lost != 0 || bad_release != 0)
        fprintf(stderr,
                "renew_many: of %d locks %d lost, %d on_lost calls, %d "
                "releases failed\n",
                n, seen_lost, lost, bad_release);
    EXPECT(lost == 0);
    EXPECT(seen_lost == 0);
    EXPECT(bad_release == 0);
}

/* Threads: a shared counter guarded only by the lock.  A second holder
 * would see `inside` set. */
struct crowd {
    dlock_store *store; /* shared handle, or NULL: each opens its own */
    int inside;
    int overlaps;
    long counter;
    int errors;
};

static void *crowd_main(void *arg)
{
    struct crowd *c = arg;
    dlock_options o = opts(DLOCK_WAIT_FOREVER, 5000, 1);
    dlock_store *s = c->store != NULL ? c->store : open_store();

    for (int i = 0; i < 40; i++) {
        dlock_lock *l;
        long v;

        if (dlock_acquire(&l, s, nm("crowd"), &o) != DLOCK_OK) {
            __atomic_add_fetch(&c->errors, 1, __ATOMIC_SEQ_CST);
            continue;
        }
        if (__atomic_exchange_n(&c->inside, 1, __ATOMIC_SEQ_CST) != 0)
            __atomic_add_fetch(&c->overlaps, 1, __ATOMIC_SEQ_CST);
        v = __atomic_load_n(&c->counter, __ATOMIC_SEQ_CST);
        sched_yield();
        __atomic_store_n(&c->counter, v + 1, __ATOMIC_SEQ_CST);
        __atomic_store_n(&c->inside, 0, __ATOMIC_SEQ_CST);
        if (dlock_release(l) != DLOCK_OK)
            __atomic_add_fetch(&c->errors, 1, __ATOMIC_SEQ_CST);
    }
    if (c->store == NULL)
        dlock_store_close(s);
    return NULL;
}

static void crowd_run(dlock_store *shared)
{
    enum { T = 4 };
    struct crowd c = {shared, 0, 0, 0, 0};
    pthread_t t[T];

    for (int i = 0; i < T; i++)
        CHECK(pthread_create(&t[i], NULL, crowd_main, &c) == 0);
    for (int i = 0; i < T; i++)
        pthread_join(t[i], NULL);
    CHECK(c.errors == 0);
    CHECK(c.overlaps == 0);
    CHECK(c.counter == T * 40);
}

static void t_threads_shared_handle(dlock_store *s)
{
    crowd_run(s);
}

static void t_threads_own_handles(dlock_store *s)
{
    (void)s;
    crowd_run(NULL);
}

/* Eight threads on one handle each hold a lock and extend it and read its
 * lease while a ninth breaks the locks one by one: every extend after the
 * break says LOST, a lost lock has no lease left, and nothing else changes
 * (the TSan build checks the library's own fields as they do this). */
struct breaker {
    dlock_store *s;
    char names[8][DLOCK_NAME_MAX + 1];
    int broken[8];  /* atomic: the break of names[i] returned */
    int extends[8]; /* atomic: extends holder i made */
    int done[8];    /* atomic: holder i has ended (lost early, or failed) */
    int errors;
};

struct holder {
    struct breaker *b;
    int i;
    int lost_ok, bad;
};

static void *holder_main(void *arg)
{
    struct holder *h = arg;
    dlock_options o = opts(2000, 600, 1);
    dlock_lock *l = NULL;
    int rc;

    if (dlock_acquire(&l, h->b->s, h->b->names[h->i], &o) != DLOCK_OK) {
        h->bad++;
        __atomic_store_n(&h->b->done[h->i], 1, __ATOMIC_RELEASE);
        return NULL;
    }
    /* Read the lease all the time, extend now and then: the renew thread
     * renews in between, and may be the one that finds the lock lost. */
    for (int n = 0; n < 20000; n++) {
        int broken = __atomic_load_n(&h->b->broken[h->i], __ATOMIC_ACQUIRE);

        if (dlock_is_lost(l)) {
            if (dlock_lease_left(l) > 0)
                h->bad++;
            h->lost_ok = 1;
            break;
        }
        (void)dlock_lease_left(l);
        /* Once broken, even holders leave it to the renew thread to find
         * the loss (while they read the state), odd ones extend. */
        if (n % 200 != 0 || (broken && h->i % 2 == 0)) {
            sleep_ms(2);
            continue;
        }
        /* Lease lengths change under the renew thread's feet. */
        rc = dlock_extend(l, 600 + (n / 200 % 3) * 300);
        __atomic_add_fetch(&h->b->extends[h->i], 1, __ATOMIC_RELAXED);
        if (broken && rc != DLOCK_LOST)
            h->bad++; /* the store no longer has it: extend must see that */
        if (rc == DLOCK_LOST) {
            if (dlock_lease_left(l) > 0 || !dlock_is_lost(l))
                h->bad++;
            h->lost_ok = 1;
            break;
        }
        if (rc != DLOCK_OK)
            h->bad++;
    }
    rc = dlock_release(l);
    if (rc != DLOCK_LOST && rc != DLOCK_OK)
        h->bad++;
    __atomic_store_n(&h->b->done[h->i], 1, __ATOMIC_RELEASE);
    return NULL;
}

static void *breaker_main(void *arg)
{
    struct breaker *b = arg;
    /* Past two renewals of the shortest lease, so that the renew thread
     * has read the leases the holders keep changing. */
    int64_t start = now_ms();

    for (int i = 0; i < 8; i++) {
        unsigned removed = 0;

        /* A holder that ended before its two extends (its lease lapsed on a
         * starved machine) is an error, not a wait for ever (a fresh-clone
         * quick tier hung here for ctest's 600 s). */
        while (now_ms() < start + 1000 + 100 * i ||
               __atomic_load_n(&b->extends[i], __ATOMIC_RELAXED) < 2) {
            if (__atomic_load_n(&b->done[i], __ATOMIC_ACQUIRE))
                break;
            sleep_ms(10);
        }
        if (__atomic_load_n(&b->done[i], __ATOMIC_ACQUIRE)) {
            fprintf(stderr, "  holder %d ended before its break\n", i);
            b->errors++;
            __atomic_store_n(&b->broken[i], 1, __ATOMIC_RELEASE);
            continue;
        }
        if (dlock_force_release(&removed, b->s, b->names[i]) != DLOCK_OK ||
            removed != 1)
            b->errors++;
        __atomic_store_n(&b->broken[i], 1, __ATOMIC_RELEASE);
    }
    return NULL;
}

static void t_threads_extend_break(dlock_store *s)
{
    struct breaker b;
    struct holder h[8];
    pthread_t t[8], bt;
    dlock_info info;

    memset(&b, 0, sizeof(b));
    b.s = s;
    for (int i = 0; i < 8; i++) {
        char base[32];

        snprintf(base, sizeof(base), "tsan-%d", i);
        snprintf(b.names[i], sizeof(b.names[i]), "%s", nm(base));
        h[i] = (struct holder){&b, i, 0, 0};
        CHECK(pthread_create(&t[i], NULL, holder_main, &h[i]) == 0);
    }
    /* Break only once all eight hold: status says held. */
    for (int i = 0; i < 8; i++) {
        int64_t until = now_ms() + 5000;

        while (test_status(s, b.names[i], &info) == DLOCK_OK && !info.held &&
               now_ms() < until)
            sleep_ms(5);
        EXPECT(info.held);
    }
    CHECK(pthread_create(&bt, NULL, breaker_main, &b) == 0);
    pthread_join(bt, NULL);
    for (int i = 0; i < 8; i++) {
        pthread_join(t[i], NULL);
        EXPECT(h[i].bad == 0);
        EXPECT(h[i].lost_ok);
    }
    EXPECT(b.errors == 0);
}

/* Processes: children append "+pid" and "-pid" around their critical
 * section to one O_APPEND file; a second holder would interleave. */
static void child_crowd(const char *file, int rounds)
{
    dlock_options o = opts(DLOCK_WAIT_FOREVER, 5000, 1);
    dlock_store *s = open_store();
    int fd = open(file, O_WRONLY | O_APPEND);
    char line[32];
    int len, bad = 0;

    if (fd < 0)
        exit(101);
    for (int i = 0; i < rounds; i++) {
        dlock_lock *l;

        if (dlock_acquire(&l, s, nm("procs"), &o) != DLOCK_OK) {
            bad++;
            continue;
        }
        len = snprintf(line, sizeof(line), "+%d\n", (int)getpid());
        bad += write(fd, line, (size_t)len) != len;
        sched_yield();
        len = snprintf(line, sizeof(line), "-%d\n", (int)getpid());
        bad += write(fd, line, (size_t)len) != len;
        bad += dlock_release(l) != DLOCK_OK;
    }
    close(fd);
    dlock_store_close(s);
    exit(bad ? 102 : 0);
}

static pid_t spawn_self(const char *role, const char *arg)
{
    pid_t pid = fork();

    if (pid == 0) {
        execl(self_exe, self_exe, kind, url, "--child", role, run_id, arg,
              (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* The renew thread of that process opens connections of its own while
 * the main thread acquires (libpq's TLS and GSSAPI keep per-thread state
 * then), and LeakSanitizer in a later fork child of the same process,
 * which cannot see a thread that does not exist there, would report that
 * state as leaked (fork_child, atexit). */
static void child_renew(void)
{
    dlock_store *s = open_store();

    renew_many_body(s);
    dlock_store_close(s);
    exit(failures ? 1 : 0);
}

static void t_renew_many(dlock_store *s)
{
    pid_t pid = spawn_self("renew", "-");
    int status;

    (void)s;
    CHECK(pid > 0);
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void t_processes(dlock_store *s)
{
    enum { P = 4, ROUNDS = 25 };
    char file[] = "/tmp/dlock-contract-XXXXXX", line[64];
    pid_t kids[P];
    int fd = mkstemp(file), status, depth = 0, lines = 0;
    FILE *f;

    (void)s;
    CHECK(fd >= 0);
    close(fd);
    for (int i = 0; i < P; i++)
        kids[i] = spawn_self("crowd", file);
    for (int i = 0; i < P; i++) {
        CHECK(waitpid(kids[i], &status, 0) == kids[i]);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    f = fopen(file, "r");
    CHECK(f != NULL);
    {
        char holder[64] = "";

        while (fgets(line, sizeof(line), f) != NULL) {
            lines++;
            if (line[0] == '+') {
                depth++;
                snprintf(holder, sizeof(holder), "%s", line + 1);
            } else if (strcmp(line + 1, holder) == 0) {
                depth--;
            } else {
                depth = 99; /* a release by someone who did not hold it */
            }
            if (depth != 0 && depth != 1)
                break;
        }
    }
    fclose(f);
    unlink(file);
    CHECK(depth == 0);
    CHECK(lines == 2 * P * ROUNDS);
}

/* A holder killed with SIGKILL: the lock is free again within its lease
 * (at once where the store sees the death). */
static void child_hold(const char *ttl)
{
    dlock_options o = opts(0, atoi(ttl), 1);
    dlock_store *s = open_store();
    dlock_lock *l;

    if (dlock_acquire(&l, s, nm("killed"), &o) != DLOCK_OK)
        exit(103);
    (void)!write(1, "H", 1);
    for (;;)
        pause();
}

static pid_t spawn_holder_as(const char *role, const char *arg, int *rfd)
{
    int p[2];
    pid_t pid;

    if (pipe(p) != 0)
        return -1;
    pid = fork();
    if (pid == 0) {
        dup2(p[1], 1);
        close(p[0]);
        execl(self_exe, self_exe, kind, url, "--child", role, run_id, arg,
              (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    *rfd = p[0];
    return pid;
}

static pid_t spawn_holder(const char *ttl, int *rfd)
{
    return spawn_holder_as("hold", ttl, rfd);
}

static void t_sigkill_holder(dlock_store *s)
{
    dlock_options w = opts(6000, 5000, 1), try0 = opts(0, 5000, 1);
    dlock_lock *l;
    int rfd, status;
    char c = 0;
    pid_t pid = spawn_holder("3000", &rfd);
    int64_t t0;

    CHECK(pid > 0);
    CHECK(read(rfd, &c, 1) == 1 && c == 'H'); /* it holds the lock */
    close(rfd);
    CHECK_RC(dlock_acquire(&l, s, nm("killed"), &try0), DLOCK_BUSY);
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    t0 = now_ms();
    CHECK_RC(dlock_acquire(&l, s, nm("killed"), &w), DLOCK_OK);
    if (caps->sees_death)
        CHECK(now_ms() - t0 < 1000);
    CHECK_RC(dlock_release(l), DLOCK_OK);
}

/* Locks still held at exit() are released by the library. */
static void child_exit_holding(void)
{
    dlock_options o = opts(0, 60000, 1);
    dlock_store *s = open_store();
    dlock_lock *l;

    if (dlock_acquire(&l, s, nm("atexit"), &o) != DLOCK_OK)
        exit(104);
    exit(0); /* no release, no close */
}

static void t_atexit(dlock_store *s)
{
    dlock_options try0 = opts(0, 5000, 1);
    dlock_lock *l;
    int status;
    pid_t pid = spawn_self("atexit", "");

    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    /* Lease 60 s: only the atexit release can have freed it this soon. */
    CHECK_RC(dlock_acquire(&l, s, nm("atexit"), &try0), DLOCK_OK);
    CHECK_RC(dlock_release(l), DLOCK_OK);
}

/* A fork child neither releases nor renews its parent's locks, not even
 * when it calls exit(). */
static void t_fork_child(dlock_store *s)
{
    dlock_options o = opts(0, 5000, 1);
    dlock_lock *l, *l2;
    int status;
    pid_t pid;

    CHECK_RC(dlock_acquire(&l, s, nm("fork"), &o), DLOCK_OK);
    pid = fork();
    if (pid == 0) {
        int rc = dlock_release(l); /* refused: not the child's */
        dlock_lock *x = NULL;

        if (rc != DLOCK_EINVAL)
            _exit(1);
        if (dlock_acquire(&x, s, nm("fork-2"), &o) != DLOCK_EINVAL)
            _exit(2); /* the parent's store handle is not the child's */
        exit(0);      /* runs atexit handlers */
    }
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_RC(dlock_assert_ttl(l, 1000), DLOCK_OK);
    CHECK_RC(dlock_acquire(&l2, s, nm("fork"), &o), DLOCK_BUSY);
    CHECK_RC(dlock_release(l), DLOCK_OK);
}

/* A fork child (no exec) opens its own store and takes and releases its
 * own locks, while the parent's renew thread is busy. */
static void t_fork_child_own_store(dlock_store *s)
{
    dlock_options o = opts(0, 5000, 1), quiet = opts(0, 5000, 0);
    dlock_lock *l;
    int status;
    pid_t pid;

    /* The parent's renew thread has run and now waits with nothing to
     * renew; the parent holds a lock it renews itself. */
    for (int i = 0; i < 20; i++) {
        CHECK_RC(dlock_acquire(&l, s, nm("fork-own"), &o), DLOCK_OK);
        CHECK_RC(dlock_release(l), DLOCK_OK);
    }
    sleep_ms(50); /* the renew thread back in its wait: the state to test */
    CHECK_RC(dlock_acquire(&l, s, nm("fork-own"), &quiet), DLOCK_OK);
    pid = fork();
    if (pid == 0) {
        dlock_store *cs = NULL;
        dlock_lock *cl = NULL, *busy = NULL;
        int bad = 0;

        alarm(20); /* a hang is a failure, not a stuck suite */
        if (dlock_store_open(&cs, url) != DLOCK_OK)
            _exit(1);
        bad |= dlock_acquire(&busy, cs, nm("fork-own"), &o) != DLOCK_BUSY;
        bad |= dlock_acquire(&cl, cs, nm("fork-own-child"), &o) != DLOCK_OK;
        bad |= dlock_extend(cl, 0) != DLOCK_OK;
        bad |= dlock_release(cl) != DLOCK_OK;
        dlock_store_close(cs);
        _exit(bad ? 2 : 0);
    }
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_RC(dlock_release(l), DLOCK_OK);
}

static void t_shared(dlock_store *s)
{
    dlock_options sh = opts(0, 5000, 1), ex = sh;
    dlock_store *s2 = open_store();
    dlock_lock *r1, *r2, *w;
    dlock_info info;
    int rc;

    sh.shared = 1;
    rc = dlock_acquire(&r1, s, nm("shared"), &sh);
    if (!caps->shared) {
        /* Refused, and said so: never an exclusive lock in disguise. */
        CHECK_RC(rc, DLOCK_ENOTSUP);
        printf("  (%s has no shared locks: ENOTSUP, as promised)\n", kind);
        dlock_store_close(s2);
        return;
    }
    CHECK_RC(rc, DLOCK_OK);
    CHECK_RC(dlock_acquire(&r2, s2, nm("shared"), &sh), DLOCK_OK);
    CHECK(dlock_fence(r2) > dlock_fence(r1));
    CHECK_RC(dlock_acquire(&w, s2, nm("shared"), &ex), DLOCK_BUSY);
    CHECK_RC(test_status(s, nm("shared"), &info), DLOCK_OK);
    CHECK(info.held && info.shared && info.holders == 2);
    CHECK_RC(dlock_release(r1), DLOCK_OK);
    CHECK_RC(dlock_acquire(&w, s2, nm("shared"), &ex), DLOCK_BUSY);
    CHECK_RC(dlock_release(r2), DLOCK_OK);
    CHECK_RC(dlock_acquire(&w, s2, nm("shared"), &ex), DLOCK_OK);
    CHECK_RC(dlock_acquire(&r1, s, nm("shared"), &sh), DLOCK_BUSY);
    CHECK_RC(dlock_release(w), DLOCK_OK);
    dlock_store_close(s2);
}

/* --- semaphores (limit N > 1) ------------------------------------------ */

#define SEM_N 3

static dlock_options sem_opts(int64_t wait_ms, int64_t ttl_ms, int renew,
                              unsigned limit)
{
    dlock_options o = opts(wait_ms, ttl_ms, renew);

    o.limit = limit;
    return o;
}

/* A store whose row says no semaphores must say so, never hand out a
 * lock of one in disguise.  1: go on with the test. */
static int sem_supported(dlock_store *s, const char *base)
{
    dlock_options o = sem_opts(0, 5000, 1, SEM_N);
    dlock_lock *l = (dlock_lock *)&l;
    int rc = dlock_acquire(&l, s, nm(base), &o);

    if (caps->semaphore) {
        EXPECT_RC(rc, DLOCK_OK);
        dlock_release(rc == DLOCK_OK ? l : NULL);
        return rc == DLOCK_OK;
    }
    EXPECT_RC(rc, DLOCK_ENOTSUP);
    EXPECT(l == NULL);
    printf("  (%s has no semaphores: ENOTSUP, as promised)\n", kind);
    return 0;
}

/* N holders (on two handles) are admitted, the N+1st is BUSY, status
 * counts them, and fences rise across all of them. */
static void t_sem_admit(dlock_store *s)
{
    dlock_options o = sem_opts(0, 5000, 1, SEM_N);
    dlock_store *s2;
    dlock_lock *l[SEM_N], *x = (dlock_lock *)&x;
    dlock_info info;
    uint64_t last = 0;

    if (!sem_supported(s, "sem-admit"))
        return;
    s2 = open_store();
    for (int i = 0; i < SEM_N; i++) {
        EXPECT_RC(dlock_acquire(&l[i], i % 2 ? s2 : s, nm("sem-admit"), &o),
                  DLOCK_OK);
        EXPECT(dlock_fence(l[i]) > last);
        last = dlock_fence(l[i]);
    }
    EXPECT_RC(dlock_acquire(&x, s, nm("sem-admit"), &o), DLOCK_BUSY);
    EXPECT(x == NULL);
    EXPECT_RC(dlock_acquire(&x, s2, nm("sem-admit"), &o), DLOCK_BUSY);
    EXPECT_RC(test_status(s, nm("sem-admit"), &info), DLOCK_OK);
    EXPECT(info.held && info.holders == SEM_N && info.limit == SEM_N);
    EXPECT(!info.shared && info.fence == last);
    /* Each holder has its own lease and releases only itself. */
    EXPECT_RC(dlock_extend(l[1], 0), DLOCK_OK);
    EXPECT_RC(dlock_assert_ttl(l[2], 1000), DLOCK_OK);
    EXPECT_RC(dlock_release(l[1]), DLOCK_OK);
    EXPECT_RC(test_status(s, nm("sem-admit"), &info), DLOCK_OK);
    EXPECT(info.holders == SEM_N - 1 && info.limit == SEM_N);
    EXPECT_RC(dlock_acquire(&l[1], s2, nm("sem-admit"), &o), DLOCK_OK);
    EXPECT(dlock_fence(l[1]) > last);
    for (int i = 0; i < SEM_N; i++)
        EXPECT_RC(dlock_release(l[i]), DLOCK_OK);
    EXPECT_RC(test_status(s, nm("sem-admit"), &info), DLOCK_OK);
    EXPECT(!info.held && info.holders == 0 && info.limit == 0);
    dlock_store_close(s2);
}

/* Breaking a semaphore from outside breaks every holder: each is told
 * LOST, and the name is free for a plain lock (a limit-1 acquire) at once,
 * as after breaking a lock. */
static void t_sem_broken(dlock_store *s)
{
    dlock_options o = sem_opts(0, 600, 1, SEM_N);
    dlock_options one = opts(0, 5000, 0);
    dlock_store *s2, *s3;
    dlock_lock *l[SEM_N], *x = NULL;
    unsigned removed = 0;
    int64_t until;
    int lost;

    if (!sem_supported(s, "sem-broken"))
        return;
    s2 = open_store();
    s3 = open_store();
    for (int i = 0; i < SEM_N; i++)
        EXPECT_RC(dlock_acquire(&l[i], i % 2 ? s2 : s, nm("sem-broken"), &o),
                  DLOCK_OK);
    EXPECT_RC(dlock_force_release(&removed, s3, nm("sem-broken")), DLOCK_OK);
    EXPECT(removed == SEM_N);
    EXPECT_RC(dlock_acquire(&x, s3, nm("sem-broken"), &one), DLOCK_OK);
    /* Renewal at ttl/3 finds each holder gone. */
    until = now_ms() + 3000;
    do {
        lost = 0;
        for (int i = 0; i < SEM_N; i++)
            lost += dlock_is_lost(l[i]);
        if (lost < SEM_N)
            sleep_ms(20);
    } while (lost < SEM_N && now_ms() < until);
    EXPECT(lost == SEM_N);
    for (int i = 0; i < SEM_N; i++)
        EXPECT_RC(dlock_release(l[i]), DLOCK_LOST);
    EXPECT_RC(dlock_assert_ttl(x, 100), DLOCK_OK);
    EXPECT_RC(dlock_release(x), DLOCK_OK);
    dlock_store_close(s3);
    dlock_store_close(s2);
}

struct sem_waiter {
    dlock_store *store;
    int rc;
    int64_t done;
    uint64_t fence;
};

static void *sem_waiter_main(void *arg)
{
    struct sem_waiter *w = arg;
    dlock_options o = sem_opts(5000, 5000, 1, SEM_N);
    dlock_lock *l = NULL;

    w->rc = dlock_acquire(&l, w->store, nm("sem-wait"), &o);
    w->done = now_ms();
    w->fence = dlock_fence(l);
    dlock_release(l);
    return NULL;
}

/* A waiter gets a slot soon after one of the N holders lets go. */
static void t_sem_waiter(dlock_store *s)
{
    dlock_options o = sem_opts(0, 5000, 1, SEM_N);
    struct sem_waiter w = {NULL, -99, 0, 0};
    dlock_lock *l[SEM_N];
    pthread_t t;
    int64_t released;

    if (!sem_supported(s, "sem-wait"))
        return;
    w.store = open_store();
    for (int i = 0; i < SEM_N; i++)
        CHECK_RC(dlock_acquire(&l[i], s, nm("sem-wait"), &o), DLOCK_OK);
    CHECK(pthread_create(&t, NULL, sem_waiter_main, &w) == 0);
    /* Time passing is the point: the waiter must be deep in its wait. */
    sleep_ms(200);
    EXPECT(w.rc == -99); /* still waiting: all N slots are taken */
    released = now_ms();
    EXPECT_RC(dlock_release(l[1]), DLOCK_OK);
    pthread_join(t, NULL);
    EXPECT_RC(w.rc, DLOCK_OK);
    EXPECT(w.done >= released && w.done - released < 1000);
    EXPECT(w.fence > dlock_fence(l[2]));
    EXPECT_RC(dlock_release(l[0]), DLOCK_OK);
    EXPECT_RC(dlock_release(l[2]), DLOCK_OK);
    dlock_store_close(w.store);
}

/* A holder whose lease runs out (no renewal) frees its slot, and only
 * its own: the other holders keep theirs. */
static void t_sem_expiry(dlock_store *s)
{
    dlock_options o = sem_opts(0, 5000, 1, SEM_N);
    dlock_options short_lease = sem_opts(0, 300, 0, SEM_N);
    dlock_options w = sem_opts(3000, 5000, 1, SEM_N);
    dlock_lock *l[SEM_N], *x;
    int64_t t0;

    if (!sem_supported(s, "sem-expiry"))
        return;
    CHECK_RC(dlock_acquire(&l[0], s, nm("sem-expiry"), &short_lease), DLOCK_OK);
    for (int i = 1; i < SEM_N; i++)
        CHECK_RC(dlock_acquire(&l[i], s, nm("sem-expiry"), &o), DLOCK_OK);
    t0 = now_ms();
    EXPECT_RC(dlock_acquire(&x, s, nm("sem-expiry"), &w), DLOCK_OK);
    EXPECT(now_ms() - t0 >= 200); /* not before that lease ran out */
    EXPECT(dlock_fence(x) > dlock_fence(l[SEM_N - 1]));
    EXPECT_RC(dlock_release(l[0]), DLOCK_LOST);
    EXPECT_RC(dlock_assert_ttl(l[1], 1000), DLOCK_OK);
    EXPECT_RC(dlock_acquire(&l[0], s, nm("sem-expiry"), &o), DLOCK_BUSY);
    for (int i = 1; i < SEM_N; i++)
        EXPECT_RC(dlock_release(l[i]), DLOCK_OK);
    EXPECT_RC(dlock_release(x), DLOCK_OK);
}

/* A holder of one slot, in a child process: "--child holdsem RUN TTL". */
static void child_hold_sem(const char *ttl)
{
    dlock_options o = sem_opts(0, atoi(ttl), 1, SEM_N);
    dlock_store *s = open_store();
    dlock_lock *l;

    if (dlock_acquire(&l, s, nm("sem-killed"), &o) != DLOCK_OK)
        exit(105);
    (void)!write(1, "H", 1);
    for (;;)
        pause();
}

/* kill -9 of one holder frees its slot (at once where the store sees the
 * death, else at its lease end); the others keep theirs. */
static void t_sem_sigkill(dlock_store *s)
{
    dlock_options o = sem_opts(0, 5000, 1, SEM_N);
    dlock_options w = sem_opts(6000, 5000, 1, SEM_N);
    dlock_lock *l[SEM_N];
    int rfd, status;
    char c = 0;
    pid_t pid;
    int64_t t0;

    if (!sem_supported(s, "sem-killed"))
        return;
    pid = spawn_holder_as("holdsem", "3000", &rfd);
    CHECK(pid > 0);
    CHECK(read(rfd, &c, 1) == 1 && c == 'H'); /* it holds a slot */
    close(rfd);
    for (int i = 0; i < SEM_N - 1; i++)
        EXPECT_RC(dlock_acquire(&l[i], s, nm("sem-killed"), &o), DLOCK_OK);
    EXPECT_RC(dlock_acquire(&l[SEM_N - 1], s, nm("sem-killed"), &o),
              DLOCK_BUSY);
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    t0 = now_ms();
    EXPECT_RC(dlock_acquire(&l[SEM_N - 1], s, nm("sem-killed"), &w), DLOCK_OK);
    if (caps->sees_death)
        EXPECT(now_ms() - t0 < 1000);
    for (int i = 0; i < SEM_N - 1; i++)
        EXPECT_RC(dlock_assert_ttl(l[i], 1000), DLOCK_OK);
    for (int i = 0; i < SEM_N; i++)
        EXPECT_RC(dlock_release(l[i]), DLOCK_OK);
}

/* Holders that disagree on the limit: EINVAL naming the limit in force,
 * at once even for a waiter (waiting would not make it right), never an
 * over-admission; once all have let go, a new limit may be used. */
static void t_sem_limit_mismatch(dlock_store *s)
{
    dlock_options o = sem_opts(0, 5000, 1, SEM_N);
    dlock_options other = sem_opts(2000, 5000, 1, SEM_N + 2);
    dlock_options lock = opts(0, 5000, 1);
    dlock_options shared = lock;
    dlock_store *s2;
    dlock_lock *a, *b, *x = (dlock_lock *)&x;
    dlock_info info;
    int64_t t0;

    if (!sem_supported(s, "sem-limit"))
        return;
    s2 = open_store();
    shared.shared = 1;
    CHECK_RC(dlock_acquire(&a, s, nm("sem-limit"), &o), DLOCK_OK);
    t0 = now_ms();
    EXPECT_RC(dlock_acquire(&x, s2, nm("sem-limit"), &other), DLOCK_EINVAL);
    EXPECT(now_ms() - t0 < 1000);
    EXPECT(x == NULL);
    EXPECT(strstr(dlock_errmsg(), "limit 3") != NULL);
    EXPECT_RC(dlock_acquire(&x, s2, nm("sem-limit"), &lock), DLOCK_EINVAL);
    EXPECT(strstr(dlock_errmsg(), "limit 3") != NULL);
    if (caps->shared) {
        EXPECT_RC(dlock_acquire(&x, s2, nm("sem-limit"), &shared),
                  DLOCK_EINVAL);
    }
    EXPECT_RC(test_status(s, nm("sem-limit"), &info), DLOCK_OK);
    EXPECT(info.holders == 1 && info.limit == SEM_N);
    /* And the other way round: a lock held, a semaphore asked. */
    CHECK_RC(dlock_acquire(&b, s, nm("sem-limit-lock"), &lock), DLOCK_OK);
    EXPECT_RC(dlock_acquire(&x, s2, nm("sem-limit-lock"), &o), DLOCK_EINVAL);
    EXPECT(strstr(dlock_errmsg(), "limit 1") != NULL);
    EXPECT_RC(dlock_release(b), DLOCK_OK);
    EXPECT_RC(dlock_release(a), DLOCK_OK);
    /* Free again: the next holders decide. */
    EXPECT_RC(dlock_acquire(&a, s2, nm("sem-limit"), &other), DLOCK_OK);
    EXPECT_RC(test_status(s, nm("sem-limit"), &info), DLOCK_OK);
    EXPECT(info.limit == SEM_N + 2);
    EXPECT_RC(dlock_release(a), DLOCK_OK);
    EXPECT_RC(dlock_acquire(&a, s2, nm("sem-limit"), &lock), DLOCK_OK);
    EXPECT_RC(dlock_acquire(&x, s, nm("sem-limit"), &lock), DLOCK_BUSY);
    EXPECT_RC(dlock_release(a), DLOCK_OK);
    dlock_store_close(s2);
}

static void t_bad_options(dlock_store *s)
{
    dlock_options o = DLOCK_OPTIONS_INIT;
    dlock_lock *l = (dlock_lock *)&l;

    o.version = 99;
    CHECK_RC(dlock_acquire(&l, s, nm("opts"), &o), DLOCK_EINVAL);
    CHECK(l == NULL);
    /* Every version from 1 to ours is accepted, none outside. */
    o.version = 0;
    CHECK_RC(dlock_acquire(&l, s, nm("opts"), &o), DLOCK_EINVAL);
    o.version = DLOCK_OPTIONS_VERSION + 1;
    CHECK_RC(dlock_acquire(&l, s, nm("opts"), &o), DLOCK_EINVAL);
    CHECK_RC(dlock_options_init(&o, 0), DLOCK_EINVAL);
    CHECK_RC(dlock_options_init(&o, DLOCK_OPTIONS_VERSION + 1), DLOCK_EINVAL);
    for (unsigned v = 1; v <= DLOCK_OPTIONS_VERSION; v++) {
        CHECK_RC(dlock_options_init(&o, v), DLOCK_OK);
        CHECK(o.version == v);
        CHECK_RC(dlock_acquire(&l, s, nm("opts"), &o), DLOCK_OK);
        CHECK_RC(dlock_release(l), DLOCK_OK);
    }
    o = (dlock_options)DLOCK_OPTIONS_INIT;
    o = opts(0, 0, 1);
    CHECK_RC(dlock_acquire(&l, s, nm("opts"), &o), DLOCK_EINVAL);
    o = opts(-2, 1000, 1);
    CHECK_RC(dlock_acquire(&l, s, nm("opts"), &o), DLOCK_EINVAL);
    CHECK_RC(dlock_acquire(&l, NULL, nm("opts"), NULL), DLOCK_EINVAL);
    CHECK_RC(dlock_acquire(NULL, s, nm("opts"), NULL), DLOCK_EINVAL);
    CHECK_RC(dlock_options_init(&o, DLOCK_OPTIONS_VERSION + 1), DLOCK_EINVAL);
    /* A version 1 caller's struct ends before limit: whatever lies there
     * is not read (it would ask for a semaphore of 77). */
    o = (dlock_options)DLOCK_OPTIONS_INIT;
    o.version = 1;
    o.limit = 77;
    CHECK_RC(dlock_acquire(&l, s, nm("opts-v1"), &o), DLOCK_OK);
    CHECK_RC(dlock_release(l), DLOCK_OK);
    o.version = 2;
    o.limit = DLOCK_LIMIT_MAX + 1;
    CHECK_RC(dlock_acquire(&l, s, nm("opts-v1"), &o), DLOCK_EINVAL);
    o.limit = 2;
    o.shared = 1;
    CHECK_RC(dlock_acquire(&l, s, nm("opts-v1"), &o), DLOCK_EINVAL);
    CHECK_RC(dlock_options_init(&o, DLOCK_OPTIONS_VERSION), DLOCK_OK);
    CHECK(o.ttl_ms == DLOCK_DEFAULT_TTL_MS && o.auto_renew == 1);
    CHECK_RC(dlock_acquire(&l, s, nm("opts"), NULL), DLOCK_OK);
    CHECK_RC(dlock_release(l), DLOCK_OK);
    CHECK_RC(dlock_release(NULL), DLOCK_OK);
    CHECK_RC(dlock_extend(NULL, 0), DLOCK_EINVAL);
    CHECK(dlock_fence(NULL) == 0);
}

/* Closing a store with locks still held releases them; the handles stay
 * valid for dlock_release(), which reports them lost. */
static void t_close_with_held(dlock_store *s)
{
    dlock_options o = opts(0, 60000, 1);
    dlock_store *s2 = open_store();
    dlock_lock *a, *b;

    CHECK_RC(dlock_acquire(&a, s2, nm("closed"), &o), DLOCK_OK);
    dlock_store_close(s2);
    CHECK_RC(dlock_acquire(&b, s, nm("closed"), &o), DLOCK_OK);
    CHECK_RC(dlock_extend(a, 0), DLOCK_LOST);
    CHECK_RC(dlock_release(a), DLOCK_LOST);
    CHECK_RC(dlock_release(b), DLOCK_OK);
}

/*
 * The cases, in the order they run.  io = 1: the outcome depends on the
 * connection (round trips, waits on the subscriber or a blocking read
 * against a deadline, pipelined renewals, reconnects after fork, several
 * connections at once); the transport variants (TLS, ?replicas=1) run only
 * these: the others are lease arithmetic and argument checks, the same
 * whatever carries them.  tests/CMakeLists.txt reads this table (one case
 * a line, exactly as written here) to make one ctest entry per case.
 */
/* --- election ----------------------------------------------------------- */

/* The leader as dlock_leader() reads it, into the test's own copy (value
 * copied out: the info's own is freed). */
struct leader_seen {
    int rc, held;
    uint64_t fence;
    char value[DLOCK_VALUE_MAX + 1];
    int has_value;
    size_t value_len;
};

static struct leader_seen read_leader(dlock_store *s, const char *name)
{
    struct leader_seen r;
    dlock_info *info = NULL;

    memset(&r, 0, sizeof(r));
    r.rc = dlock_leader(&info, s, name);
    if (info != NULL) {
        r.held = info->held;
        r.fence = info->fence;
        r.has_value = info->value != NULL;
        r.value_len = info->value_len;
        if (info->value != NULL)
            snprintf(r.value, sizeof(r.value), "%s", info->value);
    }
    dlock_info_free(info);
    return r;
}

/* One leader, its term and its value; proclaim guarded by the term; a
 * value of an earlier term never shown as the current holder's. */
static void t_elect_basic(dlock_store *s)
{
    dlock_options o = opts(0, 5000, 1), short_lease = opts(0, 300, 0);
    dlock_store *s2 = open_store();
    dlock_lock *a, *b = (dlock_lock *)&b, *c, *p;
    struct leader_seen r;
    char big[DLOCK_VALUE_MAX + 2];
    const char *name = nm("elect");
    uint64_t fa;

    r = read_leader(s, name);
    CHECK_RC(r.rc, DLOCK_OK);
    CHECK(!r.held && !r.has_value); /* nobody leads yet */
    CHECK_RC(dlock_elect(&a, s, name, "alpha", &o), DLOCK_OK);
    fa = dlock_fence(a);
    CHECK(fa > 0);
    r = read_leader(s2, name);
    CHECK_RC(r.rc, DLOCK_OK);
    EXPECT(r.held && r.fence == fa);
    EXPECT(r.has_value && strcmp(r.value, "alpha") == 0 && r.value_len == 5);
    /* One leader: a second candidate and a plain lock are both refused. */
    CHECK_RC(dlock_elect(&b, s2, name, "beta", &o), DLOCK_BUSY);
    CHECK(b == NULL);
    CHECK_RC(dlock_acquire(&b, s2, name, &o), DLOCK_BUSY);
    /* Proclaim: the new value, the same term. */
    CHECK_RC(dlock_proclaim(a, "alpha-2"), DLOCK_OK);
    r = read_leader(s2, name);
    EXPECT(r.held && r.fence == fa && strcmp(r.value, "alpha-2") == 0);
    /* Bad values and options: refused before anything is sent. */
    CHECK_RC(dlock_proclaim(a, "\xff\xfe"), DLOCK_EINVAL);
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    CHECK_RC(dlock_proclaim(a, big), DLOCK_EINVAL);
    big[DLOCK_VALUE_MAX] = '\0'; /* exactly the maximum is a value */
    CHECK_RC(dlock_proclaim(a, big), DLOCK_OK);
    r = read_leader(s2, name);
    EXPECT(r.has_value && r.value_len == DLOCK_VALUE_MAX);
    CHECK_RC(dlock_proclaim(a, "alpha-3"), DLOCK_OK);
    {
        dlock_options sh = o, lim = o;

        sh.shared = 1;
        lim.limit = 2;
        CHECK_RC(dlock_elect(&b, s2, nm("elect-bad"), "x", &sh), DLOCK_EINVAL);
        CHECK_RC(dlock_elect(&b, s2, nm("elect-bad"), "x", &lim), DLOCK_EINVAL);
        CHECK_RC(dlock_elect(&b, s2, nm("elect-bad"), "\xc3", &o),
                 DLOCK_EINVAL);
    }
    CHECK_RC(dlock_acquire(&p, s, nm("elect-plain"), &o), DLOCK_OK);
    CHECK_RC(dlock_proclaim(p, "x"), DLOCK_EINVAL); /* not a candidate */
    CHECK_RC(dlock_release(p), DLOCK_OK);
    /* Resign: no leader. */
    CHECK_RC(dlock_release(a), DLOCK_OK);
    r = read_leader(s2, name);
    CHECK_RC(r.rc, DLOCK_OK);
    EXPECT(!r.held && !r.has_value);
    /* A plain holder of the name leads with no value: alpha-3 was
     * written under an earlier term and is not its. */
    CHECK_RC(dlock_acquire(&p, s2, name, &o), DLOCK_OK);
    r = read_leader(s, name);
    EXPECT(r.held && r.fence == dlock_fence(p) && r.fence > fa);
    EXPECT(!r.has_value);
    CHECK_RC(dlock_release(p), DLOCK_OK);
    /* A deposed leader (its lease ran out, unrenewed) cannot write over
     * its successor's value. */
    CHECK_RC(dlock_elect(&c, s, name, "old", &short_lease), DLOCK_OK);
    sleep_ms(500); /* time passing is the point: the lease runs out */
    {
        /* etcd keeps a 300 ms lease's key for its 2 s minimum: wait. */
        dlock_options ow = opts(10000, 5000, 1);

        CHECK_RC(dlock_elect(&b, s2, name, "new", &ow), DLOCK_OK);
    }
    EXPECT(dlock_fence(b) > dlock_fence(c));
    CHECK_RC(dlock_proclaim(c, "stale"), DLOCK_LOST);
    r = read_leader(s, name);
    EXPECT(r.held && r.fence == dlock_fence(b) && strcmp(r.value, "new") == 0);
    CHECK_RC(dlock_release(c), DLOCK_LOST);
    CHECK_RC(dlock_release(b), DLOCK_OK);
    /* No value at all. */
    CHECK_RC(dlock_elect(&a, s, name, NULL, &o), DLOCK_OK);
    r = read_leader(s2, name);
    EXPECT(r.held && r.fence == dlock_fence(a) && !r.has_value);
    CHECK_RC(dlock_release(a), DLOCK_OK);
    dlock_store_close(s2);
}

/* dlock_observe(): every change, read from the store, and a prompt end
 * on cancel. */
struct observed {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int n;
    struct {
        int held;
        uint64_t fence;
        char value[64];
        int64_t at;
    } ev[32];
    int rc;
    int done;
    dlock_store *store;
    const char *name;
    dlock_cancel *cancel;
};

static int observe_cb(const dlock_info *info, void *payload)
{
    struct observed *ob = payload;

    pthread_mutex_lock(&ob->mu);
    if (ob->n < 32) {
        ob->ev[ob->n].held = info->held;
        ob->ev[ob->n].fence = info->fence;
        snprintf(ob->ev[ob->n].value, sizeof(ob->ev[ob->n].value), "%s",
                 info->value != NULL ? info->value : "(none)");
        ob->ev[ob->n].at = now_ms();
        ob->n++;
    }
    pthread_cond_broadcast(&ob->cv);
    pthread_mutex_unlock(&ob->mu);
    return 0;
}

static void *observe_main(void *arg)
{
    struct observed *ob = arg;
    int rc = dlock_observe(ob->store, ob->name, observe_cb, ob, ob->cancel);

    pthread_mutex_lock(&ob->mu);
    ob->rc = rc;
    ob->done = 1;
    pthread_cond_broadcast(&ob->cv);
    pthread_mutex_unlock(&ob->mu);
    return NULL;
}

/* Wait (bounded: 5 s) until the observer has reported n changes. */
static int observed_wait(struct observed *ob, int n)
{
    int64_t end = now_ms() + 5000;
    int got;

    pthread_mutex_lock(&ob->mu);
    while (ob->n < n && !ob->done && now_ms() < end) {
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 50 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&ob->cv, &ob->mu, &ts);
    }
    got = ob->n;
    pthread_mutex_unlock(&ob->mu);
    return got >= n;
}

static void t_elect_observe(dlock_store *s)
{
    dlock_options o = opts(0, 5000, 1);
    struct observed ob;
    dlock_store *s2 = open_store();
    dlock_lock *a, *b;
    pthread_t t;
    int64_t t0, lat[4];

    memset(&ob, 0, sizeof(ob));
    pthread_mutex_init(&ob.mu, NULL);
    pthread_cond_init(&ob.cv, NULL);
    ob.store = s2;
    ob.name = nm("observe");
    CHECK_RC(dlock_cancel_new(&ob.cancel), DLOCK_OK);
    CHECK(pthread_create(&t, NULL, observe_main, &ob) == 0);
    EXPECT(observed_wait(&ob, 1));
    EXPECT(ob.n >= 1 && !ob.ev[0].held); /* at once: nobody leads */

    t0 = now_ms();
    CHECK_RC(dlock_elect(&a, s, ob.name, "one", &o), DLOCK_OK);
    EXPECT(observed_wait(&ob, 2));
    lat[0] = ob.ev[1].at - t0;
    EXPECT(ob.ev[1].held && ob.ev[1].fence == dlock_fence(a) &&
           strcmp(ob.ev[1].value, "one") == 0);
    t0 = now_ms();
    CHECK_RC(dlock_proclaim(a, "two"), DLOCK_OK);
    EXPECT(observed_wait(&ob, 3));
    lat[1] = ob.ev[2].at - t0;
    EXPECT(ob.ev[2].held && ob.ev[2].fence == dlock_fence(a) &&
           strcmp(ob.ev[2].value, "two") == 0);
    t0 = now_ms();
    CHECK_RC(dlock_release(a), DLOCK_OK);
    EXPECT(observed_wait(&ob, 4));
    lat[2] = ob.ev[3].at - t0;
    EXPECT(!ob.ev[3].held);
    t0 = now_ms();
    CHECK_RC(dlock_elect(&b, s, ob.name, "three", &o), DLOCK_OK);
    EXPECT(observed_wait(&ob, 5));
    lat[3] = ob.ev[4].at - t0;
    EXPECT(ob.ev[4].held && ob.ev[4].fence == dlock_fence(b) &&
           strcmp(ob.ev[4].value, "three") == 0);
    printf("     observe latency (ms): elect %lld, proclaim %lld, "
           "resign %lld, elect %lld\n",
           (long long)lat[0], (long long)lat[1], (long long)lat[2],
           (long long)lat[3]);
    /* Cancel: the observation ends promptly, nothing more is reported. */
    t0 = now_ms();
    dlock_cancel_fire(ob.cancel);
    pthread_join(t, NULL);
    EXPECT(now_ms() - t0 < 1500);
    CHECK_RC(ob.rc, DLOCK_ECANCELED);
    EXPECT(ob.n == 5);
    CHECK_RC(dlock_release(b), DLOCK_OK);
    dlock_cancel_free(ob.cancel);
    pthread_cond_destroy(&ob.cv);
    pthread_mutex_destroy(&ob.mu);
    dlock_store_close(s2);
}

/* A child candidate leads; it says "H <term>" on stdout, then after its
 * lease is gone (SIGSTOP past it, then SIGCONT) it says "L <rc of a
 * proclaim>" and exits. */
static void child_elect(const char *ttl)
{
    dlock_options o = opts(0, atoi(ttl), 1);
    dlock_store *s = open_store();
    dlock_lock *l;
    char line[64];
    int n;

    if (dlock_elect(&l, s, nm("takeover"), "child", &o) != DLOCK_OK)
        exit(103);
    n = snprintf(line, sizeof(line), "H %llu\n",
                 (unsigned long long)dlock_fence(l));
    (void)!write(1, line, (size_t)n);
    while (!dlock_is_lost(l))
        sleep_ms(20);
    n = snprintf(line, sizeof(line), "L %d\n", dlock_proclaim(l, "stale"));
    (void)!write(1, line, (size_t)n);
    exit(0);
}

/* Read one line from fd, at most 10 s. */
static int read_line_within(int fd, char *buf, size_t size)
{
    size_t n = 0;
    int64_t end = now_ms() + 10000;

    while (n + 1 < size) {
        struct pollfd p = {fd, POLLIN, 0};
        int64_t left = end - now_ms();

        if (left <= 0 || poll(&p, 1, (int)left) <= 0)
            return 0;
        if (read(fd, buf + n, 1) != 1)
            return 0;
        if (buf[n++] == '\n')
            break;
    }
    buf[n] = '\0';
    return 1;
}

/* Takeover: from a leader killed (-9), from one stopped past its lease
 * (which, once continued, finds itself deposed and cannot proclaim), and
 * from one that resigns (at once, not after the lease). */
static void t_elect_takeover(dlock_store *s)
{
    dlock_options w = opts(15000, 5000, 1), o = opts(0, 20000, 1);
    dlock_lock *l, *a;
    struct leader_seen r;
    unsigned long long child_term = 0;
    char line[64];
    int rfd, status, prc = 0;
    pid_t pid;
    int64_t t0;
    struct waiter wt;
    pthread_t t;

    /* kill -9 */
    pid = spawn_holder_as("elect", "1000", &rfd);
    CHECK(pid > 0);
    CHECK(read_line_within(rfd, line, sizeof(line)) &&
          sscanf(line, "H %llu", &child_term) == 1);
    close(rfd);
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    t0 = now_ms();
    CHECK_RC(dlock_elect(&l, s, nm("takeover"), "parent", &w), DLOCK_OK);
    printf("     takeover after kill -9 of a 1 s leader: %lld ms\n",
           (long long)(now_ms() - t0));
    EXPECT(now_ms() - t0 < 1000 + 3000); /* the TTL and a margin */
    EXPECT(dlock_fence(l) > child_term);
    CHECK_RC(dlock_release(l), DLOCK_OK);

    /* SIGSTOP past the lease */
    pid = spawn_holder_as("elect", "1000", &rfd);
    CHECK(pid > 0);
    CHECK(read_line_within(rfd, line, sizeof(line)) &&
          sscanf(line, "H %llu", &child_term) == 1);
    kill(pid, SIGSTOP);
    t0 = now_ms();
    CHECK_RC(dlock_elect(&l, s, nm("takeover"), "parent", &w), DLOCK_OK);
    printf("     takeover from a stopped 1 s leader: %lld ms\n",
           (long long)(now_ms() - t0));
    EXPECT(dlock_fence(l) > child_term);
    kill(pid, SIGCONT);
    EXPECT(read_line_within(rfd, line, sizeof(line)) &&
           sscanf(line, "L %d", &prc) == 1 && prc == DLOCK_LOST);
    close(rfd);
    waitpid(pid, &status, 0);
    r = read_leader(s, nm("takeover"));
    EXPECT(r.held && r.fence == dlock_fence(l) &&
           strcmp(r.value, "parent") == 0);
    CHECK_RC(dlock_release(l), DLOCK_OK);

    /* resign: the waiter gets it at once, not after the 20 s lease */
    CHECK_RC(dlock_elect(&a, s, nm("resign"), "first", &o), DLOCK_OK);
    memset(&wt, 0, sizeof(wt));
    wt.store = s;
    wt.name = nm("resign");
    wt.wait_ms = 15000;
    CHECK(pthread_create(&t, NULL, waiter_main, &wt) == 0);
    sleep_ms(200); /* the waiter must be waiting when the resignation comes */
    t0 = now_ms();
    CHECK_RC(dlock_release(a), DLOCK_OK);
    pthread_join(t, NULL);
    CHECK_RC(wt.rc, DLOCK_OK);
    printf("     takeover after a resignation: %lld ms\n",
           (long long)(wt.done - t0));
    EXPECT(wt.done - t0 < 2000);
}

static const struct {
    const char *name;
    void (*fn)(dlock_store *);
    int io;
} tests[] = {
    {"try_busy", t_try_busy, 1},
    {"wait_zero_free", t_wait_zero_free, 1},
    {"wait_finite", t_wait_finite, 1},
    {"wait_forever", t_wait_forever, 1},
    {"timeout_precision", t_timeout_precision, 1},
    {"lease_takeover", t_lease_takeover, 0},
    {"lease_expired_untaken", t_lease_expired_untaken, 0},
    {"lapsed", t_lapsed, 0},
    {"fences", t_fences, 1},
    {"extend", t_extend, 1},
    {"assert_ttl", t_assert_ttl, 0},
    {"broken_lock", t_broken_lock, 1},
    {"lost_in_extend", t_lost_in_extend, 1},
    {"auto_renew", t_auto_renew, 1},
    {"names", t_names, 0},
    {"many_and_list", t_many_and_list, 1},
    {"list_prefix_bytes", t_list_prefix_bytes, 1},
    {"renew_many", t_renew_many, 1},
    {"threads_shared_handle", t_threads_shared_handle, 1},
    {"threads_own_handles", t_threads_own_handles, 1},
    {"threads_extend_break", t_threads_extend_break, 0},
    {"processes", t_processes, 1},
    {"sigkill_holder", t_sigkill_holder, 0},
    {"atexit", t_atexit, 1},
    {"fork_child", t_fork_child, 1},
    {"fork_child_own_store", t_fork_child_own_store, 1},
    {"shared", t_shared, 1},
    {"errmsg", t_errmsg, 0},
    {"bad_options", t_bad_options, 0},
    {"close_with_held", t_close_with_held, 1},
    {"sem_admit", t_sem_admit, 1},
    {"sem_broken", t_sem_broken, 0},
    {"sem_waiter", t_sem_waiter, 1},
    {"sem_expiry", t_sem_expiry, 0},
    {"sem_sigkill", t_sem_sigkill, 0},
    {"sem_limit_mismatch", t_sem_limit_mismatch, 0},
    {"elect_basic", t_elect_basic, 1},
    {"elect_observe", t_elect_observe, 0},
    {"elect_takeover", t_elect_takeover, 0},
};

int main(int argc, char **argv)
{
    unsigned char rnd[4];
    int failed = 0, ran = 0;
    dlock_store *s;
    FILE *ur;
    const char *prog = argv[0];

    if (argc >= 2 && strcmp(argv[1], "--list") == 0) {
        int io_only = argc >= 3 && strcmp(argv[2], "--io") == 0;

        for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
            if (!io_only || tests[i].io)
                printf("%s\n", tests[i].name);
        return 0;
    }
    if (argc < 3 || argv[2][0] == '\0') {
        fprintf(stderr,
                "usage: %s KIND URL [TEST...]\n"
                "       %s --list [--io]\n",
                argv[0], argv[0]);
        return 100;
    }
    kind = argv[1];
    for (size_t i = 0; i < sizeof(all_caps) / sizeof(all_caps[0]); i++)
        if (strcmp(all_caps[i].kind, kind) == 0)
            caps = &all_caps[i];
    if (caps == NULL) {
        fprintf(stderr, "%s: unknown store kind '%s'\n", argv[0], kind);
        return 100;
    }
    /* From here on argv is as before: URL [TEST...]. */
    argv++;
    argc--;
    url = argv[1];
    self_exe = "/proc/self/exe";
    if (argc >= 6 && strcmp(argv[2], "--child") == 0) {
        snprintf(run_id, sizeof(run_id), "%s", argv[4]);
        if (strcmp(argv[3], "crowd") == 0)
            child_crowd(argv[5], 25);
        if (strcmp(argv[3], "hold") == 0)
            child_hold(argv[5]);
        if (strcmp(argv[3], "renew") == 0)
            child_renew();
        if (strcmp(argv[3], "holdsem") == 0)
            child_hold_sem(argv[5]);
        if (strcmp(argv[3], "atexit") == 0)
            child_exit_holding();
        if (strcmp(argv[3], "elect") == 0)
            child_elect(argv[5]);
        return 100;
    }
    /* A TEST that names no case is an error: a typo must not pass as a
     * run of nothing. */
    for (int a = 2; a < argc; a++) {
        size_t i = 0;

        while (i < sizeof(tests) / sizeof(tests[0]) &&
               strcmp(argv[a], tests[i].name) != 0)
            i++;
        if (i == sizeof(tests) / sizeof(tests[0])) {
            fprintf(stderr,
                    "%s: no contract case named '%s' (--list lists them)\n",
                    prog, argv[a]);
            return 2;
        }
    }
    ur = fopen("/dev/urandom", "r");
    if (ur == NULL || fread(rnd, 1, sizeof(rnd), ur) != sizeof(rnd))
        return 100;
    fclose(ur);
    snprintf(run_id, sizeof(run_id), "contract-%d-%02x%02x%02x%02x",
             (int)getpid(), rnd[0], rnd[1], rnd[2], rnd[3]);

    s = open_store();
    printf("contract suite on %s (run %s)\n", dlock_store_url(s), run_id);
    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
        int before = failures, pick = argc == 2;
        int64_t t0;

        for (int a = 2; a < argc; a++)
            pick |= strcmp(argv[a], tests[i].name) == 0;
        if (!pick)
            continue;
        t0 = now_ms();
        tests[i].fn(s);
        ran++;
        if (failures != before)
            failed++;
        printf("%-4s %-24s %5lld ms\n", failures != before ? "FAIL" : "ok",
               tests[i].name, (long long)(now_ms() - t0));
        fflush(stdout);
    }
    dlock_store_close(s);
    printf("%d of %d tests failed\n", failed, ran);
    return failed > 100 ? 100 : failed;
}
