/*
 * test_cluster.c - what the Redis Cluster store promises, checked from
 * outside with raw hiredis connections to the nodes:
 *
 *     test_cluster URL TEST     against the cluster of
 *                               scripts/server-redis-cluster.sh in
 *                               $DLOCK_TEST_REDIS_CLUSTER_DIR
 *
 * keys_one_slot    every key a name uses is on its lock key's master, in
 *                  its slot, and on no other master
 * wrong_scheme     redis:// at a cluster node, redis-cluster:// at a plain
 *                  server ($DLOCK_TEST_REDIS_URL), databases: clear errors
 * list_masters     list sees locks on every master
 * migrate_keeps    a held lock's slot moved to another master (MIGRATE):
 *                  renewals follow it, the lock stays held and exclusive
 * ask_half_migrated  a slot half migrated: its names are DLOCK_EUNAVAIL
 *                  (ASK, then TRYAGAIN), a waiter waits it out, a held
 *                  lock survives it; then all go on, on the target
 * runs_slots       run records: their keys in the lock key's slot,
 *                  whatever the name's braces; last_runs on every master
 * suspend_slots    suspensions: each record in its lock key's slot, run_begin
 *                  skips there, suspensions() from every master
 * failover_loses   the master of a held lock's slot is killed: the holder
 *                  is told LOST (never trusted, though the replica may have
 *                  the key), another client gets the lock with a higher
 *                  fence; prints how long the failover took for dlock
 */
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "dlock.h"
#include "rtest.h"

static const char *url;
static const char *cdir;

static redisContext *node(int port)
{
    struct timeval tv = {5, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);

    if (c == NULL || c->err) {
        fprintf(stderr, "cannot connect to node %d\n", port);
        exit(100);
    }
    redisSetTimeout(c, tv);
    return c;
}

/* The first port of the URL (a seed node). */
static int seed_port(void)
{
    const char *p = strstr(url, "127.0.0.1:");

    return p != NULL ? atoi(p + 10) : 0;
}

/* The hash slot of key and the port of the master that serves it, as
 * the cluster says (CLUSTER KEYSLOT, CLUSTER SLOTS). */
static int owner_of(const char *key, int *slot_out)
{
    redisContext *c = node(seed_port());
    redisReply *r = redisCommand(c, "CLUSTER KEYSLOT %s", key);
    long long slot =
        r != NULL && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    int port = 0;

    freeReplyObject(r);
    r = redisCommand(c, "CLUSTER SLOTS");
    for (size_t i = 0;
         r != NULL && r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
        redisReply *e = r->element[i];

        if (slot >= e->element[0]->integer && slot <= e->element[1]->integer)
            port = (int)e->element[2]->element[1]->integer;
    }
    freeReplyObject(r);
    redisFree(c);
    if (slot_out != NULL)
        *slot_out = (int)slot;
    return port;
}

/* The master ports (up to 8). */
static int masters(int *ports)
{
    redisContext *c = node(seed_port());
    redisReply *r = redisCommand(c, "CLUSTER SLOTS");
    int n = 0;

    for (size_t i = 0;
         r != NULL && r->type == REDIS_REPLY_ARRAY && i < r->elements && n < 8;
         i++) {
        int p = (int)r->element[i]->element[2]->element[1]->integer, seen = 0;

        for (int j = 0; j < n; j++)
            seen |= ports[j] == p;
        if (!seen)
            ports[n++] = p;
    }
    freeReplyObject(r);
    redisFree(c);
    return n;
}

/* Keys on node port whose name contains `part`, into keys (SCAN). */
static int keys_with(int port, const char *part, char keys[][600], int max)
{
    redisContext *c = node(port);
    char cursor[32] = "0", pattern[600];
    int n = 0;

    snprintf(pattern, sizeof(pattern), "*%s*", part);
    do {
        redisReply *r =
            redisCommand(c, "SCAN %s MATCH %s COUNT 1000", cursor, pattern);

        if (r == NULL || r->type != REDIS_REPLY_ARRAY) {
            freeReplyObject(r);
            break;
        }
        snprintf(cursor, sizeof(cursor), "%s", r->element[0]->str);
        for (size_t i = 0; i < r->element[1]->elements; i++)
            if (n < max) {
                redisReply *k = r->element[1]->element[i];

                memcpy(keys[n], k->str, k->len < 599 ? k->len : 599);
                keys[n][k->len < 599 ? k->len : 599] = '\0';
                n++;
            }
        freeReplyObject(r);
    } while (strcmp(cursor, "0") != 0);
    redisFree(c);
    return n;
}

static void t_keys_one_slot(void)
{
    static const char *const bases[] = {"plain", "{tag}x", "br}ace", "a{b",
                                        "{}empty"};
    dlock_options o = opts(0, 10000, 1);
    dlock_store *s = must_open(url);
    int ms[8], nm_ = masters(ms);

    CHECK(nm_ == 3);
    for (size_t b = 0; b < sizeof(bases) / sizeof(bases[0]); b++) {
        const char *name = nm(bases[b]);
        char key[600], found[16][600];
        dlock_lock *l, *w;
        dlock_options tw = opts(0, 10000, 1);
        int slot, port, n;

        snprintf(key, sizeof(key), "dlock:%s", name);
        port = owner_of(key, &slot);
        CHECK_RC(dlock_acquire(&l, s, name, &o), DLOCK_OK);
        /* A waiter that gave up leaves nothing behind; one try keeps the
         * busy path (the queue) exercised. */
        CHECK_RC(dlock_acquire(&w, s, name, &tw), DLOCK_BUSY);
        n = keys_with(port, run_id, found, 16);
        {
            int mine = 0;

            for (int i = 0; i < n; i++) {
                int ks = -1;

                if (strstr(found[i], bases[b]) == NULL)
                    continue;
                mine++;
                /* In the lock key's slot, on its master. */
                CHECK(owner_of(found[i], &ks) == port);
                CHECK(ks == slot);
            }
            CHECK(mine >= 3); /* the lock, its fence, its holder info */
        }
        for (int m = 0; m < nm_; m++) {
            if (ms[m] == owner_of(key, NULL))
                continue;
            n = keys_with(ms[m], bases[b], found, 16);
            for (int i = 0; i < n; i++)
                CHECK(strstr(found[i], run_id) == NULL);
        }
        CHECK_RC(dlock_release(l), DLOCK_OK);
    }
    dlock_store_close(s);
}

static void t_wrong_scheme(void)
{
    const char *plain = getenv("DLOCK_TEST_REDIS_URL");
    char u[256];
    dlock_store *s;
    dlock_lock *l;
    dlock_options o = opts(0, 5000, 0);
    int slot, port, other = 0, ms[8], n = masters(ms);

    /* redis:// at one node: a name another master serves is MOVED, which
     * says to use redis-cluster://. */
    for (int i = 0; i < 100 && other == 0; i++) {
        char base[32], key[600];

        snprintf(base, sizeof(base), "moved-%d", i);
        snprintf(key, sizeof(key), "dlock:%s", nm(base));
        port = owner_of(key, &slot);
        if (port != ms[0]) {
            other = 1;
            snprintf(u, sizeof(u), "redis://127.0.0.1:%d", ms[0]);
            s = must_open(u);
            CHECK_RC(dlock_acquire(&l, s, nm(base), &o), DLOCK_ESTORE);
            CHECK(strstr(dlock_errmsg(), "use redis-cluster://") != NULL);
            dlock_store_close(s);
        }
    }
    CHECK(other == 1 && n == 3);
    snprintf(u, sizeof(u), "redis-cluster://127.0.0.1:%d/2", ms[0]);
    CHECK_RC(dlock_store_open(&s, u), DLOCK_EINVAL);
    CHECK(strstr(dlock_errmsg(), "database 0") != NULL);
    snprintf(u, sizeof(u), "redis-cluster://127.0.0.1:%d?db=1", ms[0]);
    CHECK_RC(dlock_store_open(&s, u), DLOCK_EINVAL);
    snprintf(u, sizeof(u), "redis-cluster://127.0.0.1:%d/0?db=0", ms[0]);
    CHECK_RC(dlock_store_open(&s, u), DLOCK_OK);
    dlock_store_close(s);
    /* A dead seed first, then a live one: opens. */
    snprintf(u, sizeof(u), "redis-cluster://127.0.0.1:1,127.0.0.1:%d", ms[1]);
    CHECK_RC(dlock_store_open(&s, u), DLOCK_OK);
    dlock_store_close(s);
    CHECK_RC(dlock_store_open(&s, "redis-cluster://127.0.0.1:1,127.0.0.1:2"),
             DLOCK_EUNAVAIL);
    CHECK_RC(dlock_store_open(&s, "redis-cluster://127.0.0.1:99999"),
             DLOCK_EINVAL);
    if (plain != NULL && strncmp(plain, "redis://", 8) == 0) {
        snprintf(u, sizeof(u), "redis-cluster://%s", plain + 8);
        CHECK_RC(dlock_store_open(&s, u), DLOCK_EINVAL);
        CHECK(strstr(dlock_errmsg(), "not a Redis Cluster node") != NULL);
    }
}

static int count_cb(const dlock_info *info, void *payload)
{
    if (strstr(info->name, run_id) != NULL)
        (*(int *)payload)++;
    return 0;
}

static void t_list_masters(void)
{
    dlock_options o = opts(0, 10000, 1);
    dlock_store *s = must_open(url);
    dlock_lock *l[3] = {NULL, NULL, NULL};
    int ms[8], n = masters(ms), got = 0, seen = 0;

    CHECK(n == 3);
    /* One name per master. */
    for (int i = 0; i < 300 && got < 3; i++) {
        char base[32], key[600];
        int port;

        snprintf(base, sizeof(base), "list-%d", i);
        snprintf(key, sizeof(key), "dlock:%s", nm(base));
        port = owner_of(key, NULL);
        for (int m = 0; m < 3; m++)
            if (port == ms[m] && l[m] == NULL) {
                CHECK_RC(dlock_acquire(&l[m], s, nm(base), &o), DLOCK_OK);
                got++;
            }
    }
    CHECK(got == 3);
    CHECK_RC(dlock_list(s, run_id, count_cb, &seen), DLOCK_OK);
    CHECK(seen == 3);
    for (int m = 0; m < 3; m++)
        if (l[m] != NULL)
            CHECK_RC(dlock_release(l[m]), DLOCK_OK);
    dlock_store_close(s);
}

static int ctl(char *out, size_t len, const char *what)
{
    return script(out, len, "ctl '%s' %s", cdir, what);
}

static void t_migrate_keeps(void)
{
    dlock_options o = opts(0, 1000, 1), t = opts(0, 1000, 0);
    dlock_store *s = must_open(url), *s2 = must_open(url);
    const char *name = nm("migrate");
    char key[600], out[64], cmd[64], found[16][600];
    dlock_lock *l, *l2;
    uint64_t fence;
    int slot, from, to;

    snprintf(key, sizeof(key), "dlock:%s", name);
    from = owner_of(key, &slot);
    CHECK_RC(dlock_acquire(&l, s, name, &o), DLOCK_OK);
    fence = dlock_fence(l);
    snprintf(cmd, sizeof(cmd), "migrate %d", slot);
    CHECK(ctl(out, sizeof(out), cmd) == 0);
    to = owner_of(key, NULL);
    CHECK(to == atoi(out) && to != from);
    /* The keys went with the slot. */
    CHECK(keys_with(to, "migrate", found, 16) >= 3);
    /* Three leases pass: renewals must have found the new master. */
    usleep(3000 * 1000);
    CHECK(!dlock_is_lost(l));
    CHECK_RC(dlock_assert_ttl(l, 100), DLOCK_OK);
    CHECK(dlock_fence(l) == fence);
    CHECK_RC(dlock_acquire(&l2, s2, name, &t), DLOCK_BUSY);
    CHECK_RC(dlock_release(l), DLOCK_OK);
    CHECK_RC(dlock_acquire(&l2, s2, name, &t), DLOCK_OK);
    CHECK(dlock_fence(l2) > fence);
    CHECK_RC(dlock_release(l2), DLOCK_OK);
    dlock_store_close(s);
    dlock_store_close(s2);
}

static char *node_id(int port)
{
    static char id[4][64];
    static int i;
    redisContext *c = node(port);
    redisReply *r = redisCommand(c, "CLUSTER MYID");

    i = (i + 1) % 4;
    snprintf(id[i], sizeof(id[i]), "%s",
             r != NULL && r->type == REDIS_REPLY_STRING ? r->str : "?");
    freeReplyObject(r);
    redisFree(c);
    return id[i];
}

/* A slot half way through a migration (source MIGRATING, target
 * IMPORTING).  Redis 7.0 serves no command of several keys there unless
 * all are on one side: the source answers ASK for a name whose keys are
 * not all there, the target (after ASKING) TRYAGAIN.  So a name of that
 * slot cannot be taken, and a held one's renewals fail, until the slot is
 * handed over: DLOCK_EUNAVAIL, which a waiter waits out and a renewal
 * retries within the lease; then both go on, on the target. */
struct ask_waiter {
    dlock_store *s;
    const char *name;
    int rc;
    dlock_lock *l;
};

static void *ask_waiter_main(void *arg)
{
    struct ask_waiter *w = arg;
    dlock_options o = opts(15000, 3000, 1);

    w->rc = dlock_acquire(&w->l, w->s, w->name, &o);
    return NULL;
}

static void t_ask_half_migrated(void)
{
    dlock_options o = opts(0, 3000, 1), t = opts(0, 3000, 0);
    dlock_store *s = must_open(url), *s2 = must_open(url);
    char key[600], key2[600], base[32], base2[32];
    dlock_lock *l, *x;
    struct ask_waiter w = {s2, NULL, -100, NULL};
    pthread_t th;
    int slot = -1, slot2 = -2, from, to = 0, ms[8], n = masters(ms), started;
    redisContext *src, *dst;

    /* Two names in one slot: "{tag}" makes them share it. */
    snprintf(base, sizeof(base), "{ask-%d}a", (int)getpid());
    snprintf(base2, sizeof(base2), "{ask-%d}b", (int)getpid());
    snprintf(key, sizeof(key), "dlock:%s", base);
    snprintf(key2, sizeof(key2), "dlock:%s", base2);
    from = owner_of(key, &slot);
    (void)owner_of(key2, &slot2);
    CHECK(slot == slot2 && n == 3);
    for (int m = 0; m < n; m++)
        if (ms[m] != from)
            to = ms[m];
    CHECK_RC(dlock_acquire(&l, s, base, &o), DLOCK_OK);
    src = node(from);
    dst = node(to);
    EXPECT(strcmp(raw_str(dst, "CLUSTER SETSLOT %d IMPORTING %s", slot,
                          node_id(from)),
                  "OK") == 0);
    EXPECT(strcmp(raw_str(src, "CLUSTER SETSLOT %d MIGRATING %s", slot,
                          node_id(to)),
                  "OK") == 0);
    /* From here to the hand-over nothing returns early (EXPECT): a
     * half-migrated slot would be left behind for the tests after.  Not
     * now (ASK, then TRYAGAIN), and said so at once. */
    EXPECT_RC(dlock_acquire(&x, s, base2, &t), DLOCK_EUNAVAIL);
    EXPECT(strstr(dlock_errmsg(), "TRYAGAIN") != NULL);
    /* A waiter waits it out. */
    w.name = base2;
    started = pthread_create(&th, NULL, ask_waiter_main, &w) == 0;
    EXPECT(started);
    /* A second of failing renewals, within the 3 s lease. */
    usleep(1000 * 1000);
    EXPECT(!dlock_is_lost(l));
    /* Finish the migration: the source's keys of the slot, then the
     * slot, as redis-cli --cluster reshard does. */
    {
        redisReply *r = redisCommand(src, "CLUSTER GETKEYSINSLOT %d 100", slot);

        for (size_t i = 0;
             r != NULL && r->type == REDIS_REPLY_ARRAY && i < r->elements;
             i++) {
            redisReply *m =
                redisCommand(src, "MIGRATE 127.0.0.1 %d %b 0 5000", to,
                             r->element[i]->str, r->element[i]->len);

            EXPECT(m != NULL && m->type == REDIS_REPLY_STATUS);
            freeReplyObject(m);
        }
        freeReplyObject(r);
    }
    for (int m = 0; m < n; m++) {
        redisContext *c = node(ms[m]);

        EXPECT(
            strcmp(raw_str(c, "CLUSTER SETSLOT %d NODE %s", slot, node_id(to)),
                   "OK") == 0);
        redisFree(c);
    }
    if (started)
        pthread_join(th, NULL);
    CHECK_RC(w.rc, DLOCK_OK);
    CHECK(owner_of(key, NULL) == to);
    /* The held lock was renewed on the target, and is still exclusive. */
    usleep(1500 * 1000);
    CHECK(!dlock_is_lost(l));
    CHECK_RC(dlock_assert_ttl(l, 100), DLOCK_OK);
    CHECK_RC(dlock_acquire(&x, s2, base, &t), DLOCK_BUSY);
    CHECK_RC(dlock_release(l), DLOCK_OK);
    if (w.l != NULL)
        CHECK_RC(dlock_release(w.l), DLOCK_OK);
    redisFree(src);
    redisFree(dst);
    dlock_store_close(s);
    dlock_store_close(s2);
}

static void t_failover_loses(void)
{
    dlock_options o = opts(0, 4000, 1), w = opts(30000, 4000, 0);
    dlock_store *s = must_open(url), *s2;
    const char *name = nm("failover");
    char key[600], out[64], cmd[64];
    dlock_lock *l, *l2;
    uint64_t fence;
    int64_t t0, t1;
    int slot, port, rc;

    snprintf(key, sizeof(key), "dlock:%s", name);
    port = owner_of(key, &slot);
    CHECK_RC(dlock_acquire(&l, s, name, &o), DLOCK_OK);
    fence = dlock_fence(l);
    /* Let the replica have the key: the holder must still not trust it. */
    {
        redisContext *c = node(port);

        freeReplyObject(redisCommand(c, "WAIT 1 2000"));
        redisFree(c);
    }
    snprintf(cmd, sizeof(cmd), "kill-master %d", port);
    t0 = now_ms();
    CHECK(ctl(out, sizeof(out), cmd) == 0);
    t1 = now_ms();
    CHECK(owner_of(key, NULL) == atoi(out));
    rc = dlock_assert_ttl(l, 100);
    CHECK_RC(rc, DLOCK_LOST);
    CHECK(dlock_is_lost(l));
    (void)dlock_release(l);
    s2 = must_open(url);
    CHECK_RC(dlock_acquire(&l2, s2, name, &w), DLOCK_OK);
    printf("  failover: kill -9 to the cluster settled %lld ms, a new "
           "holder %lld ms after the kill\n",
           (long long)(t1 - t0), (long long)(now_ms() - t0));
    CHECK(dlock_fence(l2) > fence);
    CHECK_RC(dlock_release(l2), DLOCK_OK);
    dlock_store_close(s2);
    dlock_store_close(s);
}

/* Run records on a cluster: the run keys of every spelling of a name
 * (a hash tag of its own, a '}' that needs a borrowed tag, a lone '{',
 * an empty tag) are in the lock key's slot on its master, and
 * last_runs finds the names on every master. */
struct run_seen {
    int n, mine;
};

static int run_seen_cb(const dlock_run *r, void *p)
{
    struct run_seen *rs = p;

    rs->n++;
    rs->mine +=
        strstr(r->name, "/rs-") != NULL && r->result == 1 && r->status == 3;
    return 0;
}

static void t_runs_slots(void)
{
    static const char *const bases[] = {"rs-plain", "rs-{tag}x", "rs-br}ace",
                                        "rs-a{b", "rs-{}empty"};
    dlock_options o = opts(0, 10000, 0);
    dlock_run_rule rule = DLOCK_RUN_RULE_INIT;
    dlock_store *s = must_open(url);
    char names[16][128];
    int ms[8], nms = masters(ms), n = 0, on[8] = {0};
    struct run_seen seen = {0, 0};

    CHECK(nms == 3);
    for (size_t b = 0; b < sizeof(bases) / sizeof(bases[0]); b++)
        snprintf(names[n++], sizeof(names[0]), "%s", nm(bases[b]));
    /* and a name on every master */
    for (int i = 0; i < 300 && n < 16; i++) {
        char base[32], key[600];
        int port;

        snprintf(base, sizeof(base), "rs-m%d", i);
        snprintf(key, sizeof(key), "dlock:%s", nm(base));
        port = owner_of(key, NULL);
        for (int m = 0; m < nms; m++)
            if (port == ms[m] && !on[m]) {
                on[m] = 1;
                snprintf(names[n++], sizeof(names[0]), "%s", nm(base));
            }
        if (on[0] && on[1] && on[2])
            break;
    }
    CHECK(n == 8);
    for (int i = 0; i < n; i++) {
        char key[600], found[16][600];
        dlock_lock *l;
        int go = 0, slot, port, k, runkeys = 0;

        unsigned kept = 0;

        /* The keep setting's script goes to the name's slot too. */
        CHECK_RC(dlock_keep_runs(s, names[i], 5), DLOCK_OK);
        CHECK_RC(dlock_kept_runs(&kept, s, names[i]), DLOCK_OK);
        CHECK(kept == 5);
        CHECK_RC(dlock_acquire(&l, s, names[i], &o), DLOCK_OK);
        CHECK_RC(dlock_run_begin(l, &rule, &go, NULL), DLOCK_OK);
        CHECK(go == 1);
        CHECK_RC(dlock_run_end(l, DLOCK_RUN_EXITED, 3), DLOCK_OK);
        CHECK_RC(dlock_release(l), DLOCK_OK);
        snprintf(key, sizeof(key), "dlock:%.500s", names[i]);
        port = owner_of(key, &slot);
        k = keys_with(port, names[i], found, 16);
        for (int j = 0; j < k; j++) {
            const char *at = strstr(found[j], names[i]);
            int ks = -1;

            /* this name's (not rs-m10's for rs-m1) run keys */
            if (at == NULL ||
                strchr("}\xfe\xff", at[strlen(names[i])]) == NULL ||
                strstr(found[j], "\xffrun") == NULL)
                continue;
            runkeys++;
            CHECK(owner_of(found[j], &ks) == port);
            CHECK(ks == slot);
        }
        CHECK(runkeys == 2); /* the runs and the summary */
    }
    CHECK_RC(dlock_last_runs(s, run_id, run_seen_cb, &seen), DLOCK_OK);
    CHECK(seen.n == n && seen.mine == n);
    dlock_store_close(s);
}

/* Suspensions: each name's record in its lock key's slot, whatever the
 * name's braces; run_begin skips there (the script reads it); a prefix's
 * suspensions come from every master, and from no other name. */
static int susp_count_cb(const dlock_suspension *x, void *p)
{
    int *n = p;

    *n += strcmp(x->by, "ops@cluster") == 0 && strcmp(x->reason, "r") == 0;
    return 0;
}

static void t_suspend_slots(void)
{
    static const char *const bases[] = {"ss-plain", "ss-{tag}x", "ss-br}ace",
                                        "ss-a{b", "ss-{}empty"};
    dlock_options o = opts(0, 10000, 0);
    dlock_run_rule rule = DLOCK_RUN_RULE_INIT;
    dlock_store *s = must_open(url);
    char names[16][128], prefix[128];
    int ms[8], nms = masters(ms), n = 0, on[8] = {0}, seen = 0;

    CHECK(nms == 3);
    for (size_t b = 0; b < sizeof(bases) / sizeof(bases[0]); b++)
        snprintf(names[n++], sizeof(names[0]), "%s", nm(bases[b]));
    for (int i = 0; i < 300 && n < 16; i++) {
        char base[32], key[600];
        int port;

        snprintf(base, sizeof(base), "ss-m%d", i);
        snprintf(key, sizeof(key), "dlock:%s", nm(base));
        port = owner_of(key, NULL);
        for (int m = 0; m < nms; m++)
            if (port == ms[m] && !on[m]) {
                on[m] = 1;
                snprintf(names[n++], sizeof(names[0]), "%s", nm(base));
            }
        if (on[0] && on[1] && on[2])
            break;
    }
    CHECK(n == 8);
    for (int i = 0; i < n; i++) {
        char key[600], found[16][600];
        dlock_lock *l;
        dlock_run *last = NULL;
        int go = 1, slot, port, k, recs = 0, was = 1;

        CHECK_RC(dlock_suspend(&was, s, names[i], "ops@cluster", "r"),
                 DLOCK_OK);
        CHECK(was == 0);
        snprintf(key, sizeof(key), "dlock:%.500s", names[i]);
        port = owner_of(key, &slot);
        k = keys_with(port, names[i], found, 16);
        for (int j = 0; j < k; j++) {
            const char *at = strstr(found[j], names[i]);
            int ks = -1;

            if (at == NULL ||
                strchr("}\xfe\xff", at[strlen(names[i])]) == NULL ||
                strstr(found[j], "\xffsuspended") == NULL)
                continue;
            recs++;
            CHECK(owner_of(found[j], &ks) == port);
            CHECK(ks == slot);
        }
        CHECK(recs == 1);
        CHECK_RC(dlock_acquire(&l, s, names[i], &o), DLOCK_OK);
        CHECK_RC(dlock_run_begin(l, &rule, &go, &last), DLOCK_OK);
        CHECK(go == 0 && last != NULL && last->result == DLOCK_RUN_SUSPENDED &&
              strcmp(last->host, "ops@cluster") == 0);
        dlock_run_free(last);
        CHECK_RC(dlock_release(l), DLOCK_OK);
    }
    snprintf(prefix, sizeof(prefix), "%s", nm("ss-"));
    CHECK_RC(dlock_suspensions(s, prefix, susp_count_cb, &seen), DLOCK_OK);
    CHECK(seen == n);
    for (int i = 0; i < n; i++) {
        dlock_suspension *x = NULL;

        CHECK_RC(dlock_resume(&x, s, names[i]), DLOCK_OK);
        CHECK(x != NULL && strcmp(x->by, "ops@cluster") == 0);
        dlock_suspension_free(x);
    }
    seen = 0;
    CHECK_RC(dlock_suspensions(s, prefix, susp_count_cb, &seen), DLOCK_OK);
    CHECK(seen == 0);
    dlock_store_close(s);
}

static const struct rt_test tests[] = {
    {"keys_one_slot", t_keys_one_slot, 0},
    {"wrong_scheme", t_wrong_scheme, 0},
    {"list_masters", t_list_masters, 0},
    {"migrate_keeps", t_migrate_keeps, 0},
    {"ask_half_migrated", t_ask_half_migrated, 0},
    {"failover_loses", t_failover_loses, 0},
    {"runs_slots", t_runs_slots, 0},
    {"suspend_slots", t_suspend_slots, 0},
};

int main(int argc, char **argv)
{
    cdir = getenv("DLOCK_TEST_REDIS_CLUSTER_DIR");
    if (cdir == NULL) {
        fprintf(stderr, "DLOCK_TEST_REDIS_CLUSTER_DIR is not set\n");
        return 100;
    }
    return rt_main(argc, argv, "cluster-test", tests,
                   sizeof(tests) / sizeof(tests[0]), &url, &failures);
}
