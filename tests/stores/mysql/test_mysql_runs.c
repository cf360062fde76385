/*
 * test_mysql_runs.c - the MySQL store's run records beyond the common
 * contract (tests/runs): names SQL and keys make awkward (quotes,
 * backslashes, LIKE's wildcards, over 64 characters), a user who may not
 * create the tables, a lock whose session is KILLed before and during a
 * run, a semaphore's holders, both modes.
 *
 *     test_mysql_runs URL     (or DLOCK_TEST_MYSQL_URL)
 */
#include "raw.h"

static dlock_store *open_url(const char *url)
{
    dlock_store *s = NULL;

    if (dlock_store_open(&s, url) != DLOCK_OK) {
        fprintf(stderr, "cannot open %s: %s\n", url, dlock_errmsg());
        exit(2);
    }
    return s;
}

static dlock_lock *take(dlock_store *s, const char *name, unsigned limit)
{
    dlock_options o = DLOCK_OPTIONS_INIT;
    dlock_lock *l = NULL;

    o.wait_ms = 5000;
    o.ttl_ms = 10000;
    o.limit = limit;
    if (dlock_acquire(&l, s, name, &o) != DLOCK_OK) {
        fprintf(stderr, "  acquire %s: %s\n", name, dlock_errmsg());
        failures++;
        return NULL;
    }
    return l;
}

/* One whole run of name that exits with status; returns go. */
static int one_run(dlock_store *s, const char *name, int status)
{
    dlock_run_rule r = DLOCK_RUN_RULE_INIT;
    dlock_lock *l = take(s, name, 1);
    int go = -1;

    if (l == NULL)
        return -1;
    EXPECT_RC(dlock_run_begin(l, &r, &go, NULL), DLOCK_OK);
    if (go == 1)
        EXPECT_RC(dlock_run_end(l, DLOCK_RUN_EXITED, status), DLOCK_OK);
    EXPECT_RC(dlock_release(l), DLOCK_OK);
    return go;
}

struct seen {
    char names[16][DLOCK_NAME_MAX + 1];
    int status[16];
    unsigned n;
    const char *only; /* names starting with this */
};

static int seen_cb(const dlock_run *r, void *p)
{
    struct seen *v = p;

    if (v->only != NULL && strncmp(r->name, v->only, strlen(v->only)) != 0)
        return 0;
    if (v->n < 16) {
        snprintf(v->names[v->n], sizeof(v->names[0]), "%s", r->name);
        v->status[v->n] = r->status;
    }
    v->n++;
    return 0;
}

static int has(const struct seen *v, const char *name)
{
    for (unsigned i = 0; i < v->n && i < 16; i++)
        if (strcmp(v->names[i], name) == 0)
            return 1;
    return 0;
}

/* Names that SQL and LIKE would misread, and names over 64 characters
 * whose keys are hashed (24 characters in common): each keeps its own
 * records; a prefix matches literally. */
static void t_names(dlock_store *s)
{
    char base[128], a[400], b[400], c[400], d[400], e[400], longa[400],
        longb[400], prefix[400];
    struct seen v;

    snprintf(base, sizeof(base), "%.100s", uniq("names/"));
    snprintf(a, sizeof(a), "%sq'uo\"te\\`x", base);
    snprintf(b, sizeof(b), "%s%%pct", base);
    snprintf(c, sizeof(c), "%sXpct", base);
    snprintf(d, sizeof(d), "%s_und!er", base);
    snprintf(e, sizeof(e), "%s\xf0\x9f\x94\x92-emoji", base);
    snprintf(longa, sizeof(longa), "%s%s-a", base,
             "0123456789012345678901234567890123456789012345678901234567890");
    snprintf(longb, sizeof(longb), "%s%s-b", base,
             "0123456789012345678901234567890123456789012345678901234567890");
    CHECK(one_run(s, a, 1) == 1);
    CHECK(one_run(s, b, 2) == 1);
    CHECK(one_run(s, c, 3) == 1);
    CHECK(one_run(s, d, 4) == 1);
    CHECK(one_run(s, e, 5) == 1);
    CHECK(one_run(s, longa, 6) == 1);
    CHECK(one_run(s, longb, 7) == 1);
    CHECK(one_run(s, longb, 8) == 1);

    memset(&v, 0, sizeof(v));
    CHECK_RC(dlock_history(s, a, 0, seen_cb, &v), DLOCK_OK);
    EXPECT(v.n == 1 && strcmp(v.names[0], a) == 0 && v.status[0] == 1);
    memset(&v, 0, sizeof(v));
    CHECK_RC(dlock_history(s, e, 0, seen_cb, &v), DLOCK_OK);
    EXPECT(v.n == 1 && strcmp(v.names[0], e) == 0 && v.status[0] == 5);
    memset(&v, 0, sizeof(v));
    CHECK_RC(dlock_history(s, longa, 0, seen_cb, &v), DLOCK_OK);
    EXPECT(v.n == 1 && strcmp(v.names[0], longa) == 0 && v.status[0] == 6);
    memset(&v, 0, sizeof(v));
    CHECK_RC(dlock_history(s, longb, 0, seen_cb, &v), DLOCK_OK);
    EXPECT(v.n == 2 && strcmp(v.names[0], longb) == 0 && v.status[0] == 8 &&
           v.status[1] == 7);

    memset(&v, 0, sizeof(v));
    CHECK_RC(dlock_last_runs(s, base, seen_cb, &v), DLOCK_OK);
    EXPECT(v.n == 7);
    EXPECT(has(&v, a) && has(&v, b) && has(&v, c) && has(&v, d) && has(&v, e) &&
           has(&v, longa) && has(&v, longb));
    /* '%' and '_' are themselves, not wildcards. */
    snprintf(prefix, sizeof(prefix), "%s%%", base);
    memset(&v, 0, sizeof(v));
    CHECK_RC(dlock_last_runs(s, prefix, seen_cb, &v), DLOCK_OK);
    EXPECT(v.n == 1 && has(&v, b));
    snprintf(prefix, sizeof(prefix), "%s_", base);
    memset(&v, 0, sizeof(v));
    CHECK_RC(dlock_last_runs(s, prefix, seen_cb, &v), DLOCK_OK);
    EXPECT(v.n == 1 && has(&v, d));
    snprintf(prefix, sizeof(prefix), "%s_und!", base);
    memset(&v, 0, sizeof(v));
    CHECK_RC(dlock_last_runs(s, prefix, seen_cb, &v), DLOCK_OK);
    EXPECT(v.n == 1 && has(&v, d));
    /* A prefix is compared byte for byte (utf8mb4_bin: no case folding). */
    snprintf(prefix, sizeof(prefix), "%sxpct", base);
    memset(&v, 0, sizeof(v));
    CHECK_RC(dlock_last_runs(s, prefix, seen_cb, &v), DLOCK_OK);
    EXPECT(v.n == 0);
    /* The whole store: at least ours. */
    memset(&v, 0, sizeof(v));
    v.only = base;
    CHECK_RC(dlock_last_runs(s, "", seen_cb, &v), DLOCK_OK);
    EXPECT(v.n == 7);
}

/* Session mode: the lock's session KILLed before run_begin is LOST with
 * nothing recorded; KILLed during the run, its end is still recorded
 * (on another connection). */
static void t_killed(dlock_store *s, MYSQL *raw, const char *table)
{
    const char *n = uniq("killed");
    dlock_run_rule r = DLOCK_RUN_RULE_INIT;
    dlock_lock *l;
    dlock_run *last = NULL;
    struct seen v;
    long long id;
    int go = 7;

    l = take(s, n, 1);
    CHECK(l != NULL);
    id = sqlf(raw, NULL, "SELECT connection_id FROM `%s` WHERE name = %s",
              table, lit(raw, n));
    CHECK(id > 0);
    sqlf(raw, NULL, "KILL CONNECTION %lld", id);
    EXPECT_RC(dlock_run_begin(l, &r, &go, &last), DLOCK_LOST);
    EXPECT(go == 0 && last == NULL);
    EXPECT_RC(dlock_release(l), DLOCK_LOST);
    memset(&v, 0, sizeof(v));
    CHECK_RC(dlock_history(s, n, 0, seen_cb, &v), DLOCK_OK);
    EXPECT(v.n == 0);

    l = take(s, n, 1);
    CHECK(l != NULL);
    EXPECT_RC(dlock_run_begin(l, &r, &go, &last), DLOCK_OK);
    EXPECT(go == 1 && last == NULL);
    id = sqlf(raw, NULL, "SELECT connection_id FROM `%s` WHERE name = %s",
              table, lit(raw, n));
    CHECK(id > 0);
    sqlf(raw, NULL, "KILL CONNECTION %lld", id);
    EXPECT_RC(dlock_run_end(l, DLOCK_RUN_LOST, 9), DLOCK_OK);
    (void)dlock_release(l);
    memset(&v, 0, sizeof(v));
    CHECK_RC(dlock_history(s, n, 0, seen_cb, &v), DLOCK_OK);
    EXPECT(v.n == 1 && v.status[0] == 9);
}

/* A semaphore of 2: both holders hold, one run per period. */
static void t_semaphore(dlock_store *s)
{
    const char *n = uniq("sem");
    dlock_run_rule r = DLOCK_RUN_RULE_INIT;
    dlock_lock *l1, *l2;
    dlock_run *last = NULL;
    int go1 = -1, go2 = -1;

    r.period_ms = 60000;
    l1 = take(s, n, 2);
    l2 = take(s, n, 2);
    CHECK(l1 != NULL && l2 != NULL);
    EXPECT_RC(dlock_run_begin(l1, &r, &go1, NULL), DLOCK_OK);
    EXPECT_RC(dlock_run_begin(l2, &r, &go2, &last), DLOCK_OK);
    EXPECT(go1 == 1 && go2 == 0);
    EXPECT(last != NULL && last->fence == dlock_fence(l1) &&
           last->result == DLOCK_RUN_RUNNING);
    dlock_run_free(last);
    EXPECT_RC(dlock_run_end(l1, DLOCK_RUN_EXITED, 0), DLOCK_OK);
    EXPECT_RC(dlock_release(l1), DLOCK_OK);
    EXPECT_RC(dlock_release(l2), DLOCK_OK);
}

/* A user without CREATE, on lock tables that are there but run record
 * tables and the leader value table that are not: a clear error, nothing
 * read (an election cannot publish and resigns; no leader value is
 * read); once a DBA made them (dlock init), it works. */
static void t_no_create(const char *url, const struct target *t)
{
    char table[64], main_url[1024], other[1024];
    dlock_store *mine, *s = NULL;
    dlock_run_rule r = DLOCK_RUN_RULE_INIT;
    dlock_lock *l, *e = NULL;
    dlock_info *info = NULL;
    struct seen v;
    MYSQL *probe = raw_connect_as(t, "other", "other-pw");
    MYSQL *raw;
    int go = 7;

    if (probe == NULL) {
        printf("  (no 'other' user on this server: skipped)\n");
        return;
    }
    mysql_close(probe);
    snprintf(table, sizeof(table), "runs_nc%x", (unsigned)getpid());
    snprintf(main_url, sizeof(main_url), "mysql://%s:%s@%s:%u/%s?table=%s%s",
             t->user, t->password, t->host, t->port, t->db, table,
             strstr(url, "mode=lease") ? "&mode=lease" : "");
    snprintf(other, sizeof(other), "mysql://other:other-pw@%s:%u/%s?table=%s%s",
             t->host, t->port, t->db, table,
             strstr(url, "mode=lease") ? "&mode=lease" : "");
    mine = open_url(main_url); /* makes the lock tables, not the runs' */
    s = open_url(other);
    l = take(s, uniq("nc"), 1);
    CHECK(l != NULL);
    EXPECT_RC(dlock_run_begin(l, &r, &go, NULL), DLOCK_ESTORE);
    EXPECT(go == 0);
    EXPECT(strstr(dlock_errmsg(), "may not create") != NULL);
    EXPECT(strstr(dlock_errmsg(), "other-pw") == NULL);
    memset(&v, 0, sizeof(v));
    EXPECT_RC(dlock_history(s, uniq("nc"), 0, seen_cb, &v), DLOCK_OK);
    EXPECT_RC(dlock_last_runs(s, "", seen_cb, &v), DLOCK_OK);
    EXPECT(v.n == 0);
    EXPECT_RC(dlock_elect(&e, s, uniq("nc-elect"), "v", NULL), DLOCK_ESTORE);
    EXPECT(e == NULL);
    EXPECT(strstr(dlock_errmsg(), "leader value table") != NULL &&
           strstr(dlock_errmsg(), "may not create it") != NULL &&
           strstr(dlock_errmsg(), "dlock init --print") != NULL);
    EXPECT(strstr(dlock_errmsg(), "other-pw") == NULL);
    EXPECT_RC(dlock_leader(&info, s, uniq("nc-elect")), DLOCK_OK);
    EXPECT(info != NULL && !info->held && info->value == NULL);
    dlock_info_free(info);
    info = NULL;
    CHECK_RC(dlock_store_init(mine), DLOCK_OK);
    EXPECT_RC(dlock_elect(&e, s, uniq("nc-elect"), "v", NULL), DLOCK_OK);
    EXPECT_RC(dlock_leader(&info, s, uniq("nc-elect")), DLOCK_OK);
    EXPECT(info != NULL && info->held && info->value != NULL &&
           strcmp(info->value, "v") == 0);
    dlock_info_free(info);
    EXPECT_RC(dlock_release(e), DLOCK_OK);
    EXPECT_RC(dlock_run_begin(l, &r, &go, NULL), DLOCK_OK);
    EXPECT(go == 1);
    EXPECT_RC(dlock_run_end(l, DLOCK_RUN_EXITED, 0), DLOCK_OK);
    EXPECT_RC(dlock_release(l), DLOCK_OK);
    memset(&v, 0, sizeof(v));
    EXPECT_RC(dlock_history(s, uniq("nc"), 0, seen_cb, &v), DLOCK_OK);
    EXPECT(v.n == 1);
    dlock_store_close(s);
    dlock_store_close(mine);
    raw = raw_connect(t);
    sqlf(raw, NULL,
         "DROP TABLE IF EXISTS `%s`, `%s_fences`, `%s_seq`, "
         "`%s_runs`, `%s_runsum`, `%s_boot`, `%s_leader`",
         table, table, table, table, table, table, table);
    sqlf(raw, NULL, "DROP SEQUENCE IF EXISTS `%s_fseq`", table);
    sqlf(raw, NULL, "DROP PROCEDURE IF EXISTS `%s_acq2`", table);
    sqlf(raw, NULL, "DROP PROCEDURE IF EXISTS `%s_rel1`", table);
    mysql_close(raw);
}

/* Leader value rows dlock could not have written (anyone who may write
 * NAME_leader can plant them, under the holder's own fence): a value over
 * DLOCK_VALUE_MAX bytes, an empty one, fence 0.  Each is no value; a
 * well-formed row is shown, so the planting itself is right. */
static void t_planted_values(dlock_store *s, MYSQL *raw, const char *table)
{
    static const char *const bad[] = {"REPEAT('x', 4097)", "''", "'ok'"};
    const char *n = uniq("planted-value");
    dlock_lock *l = NULL;

    CHECK_RC(dlock_elect(&l, s, n, "real", NULL), DLOCK_OK);
    for (int i = 0; i < 4; i++) {
        dlock_info *info = NULL;
        int good = i == 3;

        sqlf(raw, NULL,
             "UPDATE `%s_leader` SET fence = %s, value = %s WHERE "
             "full_name = '%s'",
             table, i == 2 ? "0" : "fence", i < 3 ? bad[i] : "'ok'", n);
        EXPECT_RC(dlock_leader(&info, s, n), DLOCK_OK);
        EXPECT(info != NULL && info->held);
        if (info != NULL && (info->value != NULL) != good)
            fprintf(stderr, "  planted row %d: value %s\n", i,
                    info->value != NULL ? "shown" : "not shown");
        EXPECT(info != NULL && (info->value != NULL) == good);
        dlock_info_free(info);
        if (i == 2) /* fence 0 with a good value: the fence back */
            sqlf(raw, NULL,
                 "UPDATE `%s_leader` SET fence = %llu WHERE full_name = '%s'",
                 table, (unsigned long long)dlock_fence(l), n);
    }
    EXPECT_RC(dlock_release(l), DLOCK_OK);
}

int main(int argc, char **argv)
{
    const char *url = test_url(argc, argv);
    const char *q = strstr(url, "table=");
    char table[80] = "shared_locks";
    struct target t;
    dlock_store *s;
    MYSQL *raw;

    if (parse_target(url, &t) != 0)
        return 2;
    if (q != NULL)
        snprintf(table, sizeof(table), "%.*s", (int)strcspn(q + 6, "&"), q + 6);
    raw = raw_connect(&t);
    s = open_url(url);
    printf("run records on %s\n", dlock_store_url(s));
    t_names(s);
    printf("names: %d failures so far\n", failures);
    if (strstr(url, "mode=lease") == NULL) {
        t_killed(s, raw, table);
        printf("killed: %d failures so far\n", failures);
    }
    t_semaphore(s);
    printf("semaphore: %d failures so far\n", failures);
    t_planted_values(s, raw, table);
    printf("planted values: %d failures so far\n", failures);
    dlock_store_close(s);
    t_no_create(url, &t);
    printf("no create: %d failures so far\n", failures);
    mysql_close(raw);
    printf("%d failures\n", failures);
    return failures ? 1 : 0;
}
