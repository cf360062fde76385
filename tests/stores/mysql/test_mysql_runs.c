/*
 * test_mysql_runs.c - the MySQL store's run records beyond the common
 * contract (tests/runs): names SQL and keys make awkward (quotes,
 * backslashes, LIKE's wildcards, over 64 characters), a user who may not
 * create the tables, a lock whose session is KILLed before and during a
 * run, a semaphore's holders, both modes.  With `suspend` after the
 * URL, instead: job suspension records (NAME_susp) planted with garbage,
 * and a login that may only SELECT (a user made as root over the test
 * server's socket, DLOCK_TEST_MYSQL_DIR/mysql.sock).  With `keep`: runs
 * kept per name (NAME_rkeep): a name keeping DLOCK_RUNS_KEPT_MAX filled
 * past it, an older client's run, a count that drifted from the runs
 * (too high, the biggest the column holds), keep rows planted with
 * garbage, a database without the keep table.
 *
 *     test_mysql_runs URL [suspend|keep]    (or DLOCK_TEST_MYSQL_URL)
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
         "`%s_runs`, `%s_runsum`, `%s_boot`, `%s_leader`, `%s_susp`, "
         "`%s_rkeep`",
         table, table, table, table, table, table, table, table, table);
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

/* --- suspension ---------------------------------------------------------- */

/* A URL for table on t, in url's mode. */
static void url_for(char *out, size_t size, const char *url,
                    const struct target *t, const char *user,
                    const char *password, const char *table)
{
    snprintf(out, size, "mysql://%s:%s@%s:%u/%s?table=%s%s", user, password,
             t->host, t->port, t->db, table,
             strstr(url, "mode=lease") ? "&mode=lease" : "");
}

static void drop_tables(MYSQL *raw, const char *table)
{
    sqlf(raw, NULL,
         "DROP TABLE IF EXISTS `%s`, `%s_fences`, `%s_seq`, "
         "`%s_runs`, `%s_runsum`, `%s_boot`, `%s_leader`, `%s_susp`, "
         "`%s_rkeep`",
         table, table, table, table, table, table, table, table, table);
    sqlf(raw, NULL, "DROP SEQUENCE IF EXISTS `%s_fseq`", table);
    sqlf(raw, NULL, "DROP PROCEDURE IF EXISTS `%s_acq2`", table);
    sqlf(raw, NULL, "DROP PROCEDURE IF EXISTS `%s_rel1`", table);
}

/* name is suspended as dlock shows it: by, since_ms and reason as
 * expected (since_ms < 0: any > 0), and run_begin skips it with who
 * suspended it; and dlock_suspensions() lists it so. */
static void expect_susp(dlock_store *s, const char *name, const char *by,
                        int64_t since_ms, const char *reason)
{
    dlock_run_rule r = DLOCK_RUN_RULE_INIT;
    dlock_suspension *x = NULL;
    dlock_run *last = NULL;
    dlock_lock *l;
    int go = 7;

    EXPECT_RC(dlock_suspended(&x, s, name), DLOCK_OK);
    EXPECT(x != NULL);
    if (x != NULL) {
        if (strcmp(x->by, by) != 0 || strcmp(x->reason, reason) != 0 ||
            (since_ms < 0 ? x->since_ms <= 0 : x->since_ms != since_ms))
            fprintf(stderr, "  %s: by '%s' since %lld reason '%.40s'\n", name,
                    x->by, (long long)x->since_ms, x->reason);
        EXPECT(strcmp(x->name, name) == 0);
        EXPECT(strcmp(x->by, by) == 0);
        EXPECT(strcmp(x->reason, reason) == 0);
        EXPECT(since_ms < 0 ? x->since_ms > 0 : x->since_ms == since_ms);
    }
    dlock_suspension_free(x);
    l = take(s, name, 1);
    if (l == NULL)
        return;
    EXPECT_RC(dlock_run_begin(l, &r, &go, &last), DLOCK_OK);
    EXPECT(go == 0);
    EXPECT(last != NULL && last->result == DLOCK_RUN_SUSPENDED &&
           last->fence == 0 && strcmp(last->host, by) == 0 &&
           (since_ms < 0 ? last->start_ms > 0 : last->start_ms == since_ms));
    dlock_run_free(last);
    EXPECT_RC(dlock_release(l), DLOCK_OK);
}

struct sseen {
    const char *name;
    char by[256], reason[DLOCK_REASON_MAX + 1];
    int n;
};

static int sseen_cb(const dlock_suspension *x, void *p)
{
    struct sseen *v = p;

    if (strcmp(x->name, v->name) == 0) {
        snprintf(v->by, sizeof(v->by), "%s", x->by);
        snprintf(v->reason, sizeof(v->reason), "%s", x->reason);
        v->n++;
    }
    return 0;
}

/* Suspension records dlock could not have written (anyone who may write
 * NAME_susp can plant them), in dlock's own table and in one a user made
 * beforehand with other column types: each still suspends, its texts
 * read back as "?", its time as 0, and resume lifts it. */
static void t_planted_susp(const char *url, const struct target *t, MYSQL *raw)
{
    char table[64], purl[1024], prefix[256];
    const char *n1 = uniq("psusp-long"), *n2 = uniq("psusp-nul");
    const char *n3 = uniq("psusp-types"), *n4 = uniq("psusp-big");
    const char *n5 = uniq("psusp-badname");
    struct sseen v = {0};
    dlock_suspension *x = NULL;
    dlock_store *s;
    int was = 7;

    snprintf(table, sizeof(table), "psusp%x", (unsigned)getpid());
    url_for(purl, sizeof(purl), url, t, t->user, t->password, table);
    drop_tables(raw, table);
    /* dlock's own table, rows rewritten: a by over 255 bytes (255
     * characters of two bytes each), a NUL in the reason, since < 0. */
    s = open_url(purl);
    CHECK_RC(dlock_suspend(&was, s, n1, "ops@a", "r1"), DLOCK_OK);
    EXPECT(was == 0);
    CHECK_RC(dlock_suspend(&was, s, n2, "ops@b", "r2"), DLOCK_OK);
    sqlf(raw, NULL,
         "UPDATE `%s_susp` SET by_whom = REPEAT(_utf8mb4 x'c3a9', 255), "
         "since_ms = -5, reason = REPEAT('y', 1025) WHERE full_name = '%s'",
         table, n1);
    sqlf(raw, NULL,
         "UPDATE `%s_susp` SET by_whom = CONCAT('a', CHAR(0), 'b'), "
         "reason = CONCAT('x', CHAR(0)) WHERE full_name = '%s'",
         table, n2);
    expect_susp(s, n1, "?", 0, "?");
    expect_susp(s, n2, "?", -1, "?");
    v.name = n1;
    /* the prefix of n1 and n2: "tRUN-psusp-" */
    snprintf(prefix, sizeof(prefix), "%.*s", (int)(strlen(n1) - 4), n1);
    EXPECT_RC(dlock_suspensions(s, prefix, sseen_cb, &v), DLOCK_OK);
    EXPECT(v.n == 1 && strcmp(v.by, "?") == 0 && strcmp(v.reason, "?") == 0);
    CHECK_RC(dlock_resume(&x, s, n1), DLOCK_OK);
    EXPECT(x != NULL && strcmp(x->by, "?") == 0 && x->since_ms == 0);
    dlock_suspension_free(x);
    x = NULL;
    CHECK_RC(dlock_suspended(&x, s, n1), DLOCK_OK);
    EXPECT(x == NULL);
    dlock_store_close(s);
    /* A table made before dlock's, other types: by_whom INT, since_ms
     * text, reason BLOB with bytes that are no UTF-8 or too many, a full
     * name that is no UTF-8. */
    drop_tables(raw, table);
    sqlf(raw, NULL,
         "CREATE TABLE `%s_susp` (name VARCHAR(64) CHARACTER SET utf8mb4 "
         "COLLATE utf8mb4_bin NOT NULL PRIMARY KEY, full_name VARBINARY(1024) "
         "NOT NULL, by_whom INT NULL, since_ms VARCHAR(32) NULL, reason "
         "BLOB NULL) ENGINE=InnoDB",
         table);
    sqlf(raw, NULL,
         "INSERT INTO `%s_susp` VALUES ('%s', '%s', 42, 'soon', x'fffe41'), "
         "('%s', '%s', NULL, NULL, REPEAT('z', 5000)), "
         "('%s', CONCAT('%s', x'ff'), 7, '12', NULL)",
         table, n3, n3, n4, n4, n5, n5);
    s = open_url(purl);
    expect_susp(s, n3, "?", 0, "?");
    expect_susp(s, n4, "?", 0, "?");
    memset(&v, 0, sizeof(v));
    v.name = n3;
    EXPECT_RC(dlock_suspensions(s, "", sseen_cb, &v), DLOCK_OK);
    EXPECT(v.n == 1 && strcmp(v.by, "?") == 0 && strcmp(v.reason, "?") == 0);
    /* suspend of a planted name: it was, the record left as it was */
    was = 7;
    CHECK_RC(dlock_suspend(&was, s, n3, "ops@c", "again"), DLOCK_OK);
    EXPECT(was == 1);
    expect_susp(s, n3, "?", 0, "?");
    CHECK_RC(dlock_resume(&x, s, n4), DLOCK_OK);
    EXPECT(x != NULL && strcmp(x->reason, "?") == 0);
    dlock_suspension_free(x);
    x = NULL;
    CHECK_RC(dlock_suspended(&x, s, n4), DLOCK_OK);
    EXPECT(x == NULL);
    dlock_store_close(s);
    drop_tables(raw, table);
}

/* root on the test server's socket (DLOCK_TEST_MYSQL_DIR, as
 * scripts/server-mysql.sh ctl DIR sql --root), or NULL. */
static MYSQL *root_connect(void)
{
    const char *dir = getenv("DLOCK_TEST_MYSQL_DIR");
    char sock[1024];
    MYSQL *db;

    if (dir == NULL || dir[0] == '\0')
        return NULL;
    snprintf(sock, sizeof(sock), "%s/mysql.sock", dir);
    db = mysql_init(NULL);
    if (mysql_real_connect(db, "localhost", "root", NULL, NULL, 0, sock, 0) ==
        NULL) {
        fprintf(stderr, "  root on %s: %s\n", sock, mysql_error(db));
        mysql_close(db);
        return NULL;
    }
    return db;
}

/* The error of a suspend or resume by the read-only user: clear, and
 * without its password. */
static void expect_refused(int rc, const char *what)
{
    const char *m = dlock_errmsg();

    if (rc != DLOCK_ESTORE && rc != DLOCK_EUNAVAIL)
        fprintf(stderr, "  read-only %s: %d (%s)\n", what, rc, m);
    EXPECT(rc == DLOCK_ESTORE || rc == DLOCK_EUNAVAIL);
    EXPECT(m != NULL && m[0] != '\0');
    EXPECT(strstr(m, "ro-pw") == NULL);
    printf("  read-only %s: %s\n", what, m);
}

/* A user with SELECT only: it reads suspensions, and each suspend and
 * resume it tries is an error (never a success that wrote nothing),
 * on a name suspended and on one not, with the suspension table there
 * and missing; what it tried leaves the records as they were. */
static void t_readonly_susp(const char *url, const struct target *t, MYSQL *raw)
{
    MYSQL *root = root_connect();
    char table[64], user[32], murl[1024], rurl[1024];
    const char *on = uniq("ro-on"), *off = uniq("ro-off");
    dlock_suspension *x = NULL;
    struct sseen v = {0};
    dlock_store *mine, *ro;
    int was = 7;

    if (root == NULL) {
        fprintf(stderr, "  no root login (DLOCK_TEST_MYSQL_DIR): the "
                        "read-only case cannot run\n");
        failures++;
        return;
    }
    /* A user of its own: the session and lease mode entries run at once. */
    snprintf(table, sizeof(table), "rosusp%x", (unsigned)getpid());
    snprintf(user, sizeof(user), "dlro%x", (unsigned)getpid());
    drop_tables(raw, table);
    sqlf(root, NULL, "DROP USER IF EXISTS '%s'@'%s'", user, t->host);
    CHECK(sqlf(root, NULL, "CREATE USER '%s'@'%s' IDENTIFIED BY 'ro-pw'", user,
               t->host) >= 0);
    CHECK(sqlf(root, NULL, "GRANT SELECT ON `%s`.* TO '%s'@'%s'", t->db, user,
               t->host) >= 0);
    url_for(murl, sizeof(murl), url, t, t->user, t->password, table);
    url_for(rurl, sizeof(rurl), url, t, user, "ro-pw", table);
    mine = open_url(murl); /* the lock tables, not the suspension table */
    ro = open_url(rurl);
    /* No suspension table yet: the read-only user may not create it. */
    expect_refused(dlock_suspend(&was, ro, off, NULL, "ro"),
                   "suspend, no table");
    EXPECT(strstr(dlock_errmsg(), "may not create") != NULL);
    EXPECT_RC(dlock_resume(&x, ro, off), DLOCK_OK); /* nothing to lift */
    EXPECT(x == NULL);
    EXPECT_RC(dlock_suspended(&x, ro, off), DLOCK_OK);
    EXPECT(x == NULL);
    /* The table there (dlock init), one name suspended. */
    CHECK_RC(dlock_store_init(mine), DLOCK_OK);
    CHECK_RC(dlock_suspend(&was, mine, on, "ops@main", "by the writer"),
             DLOCK_OK);
    expect_refused(dlock_suspend(&was, ro, off, NULL, "ro"), "suspend");
    expect_refused(dlock_suspend(&was, ro, on, NULL, "ro"),
                   "suspend of a suspended name");
    expect_refused(dlock_resume(&x, ro, on), "resume");
    EXPECT(x == NULL);
    expect_refused(dlock_resume(&x, ro, off), "resume of a free name");
    EXPECT(x == NULL);
    /* It reads them, and nothing changed. */
    EXPECT_RC(dlock_suspended(&x, ro, on), DLOCK_OK);
    EXPECT(x != NULL && strcmp(x->by, "ops@main") == 0 &&
           strcmp(x->reason, "by the writer") == 0);
    dlock_suspension_free(x);
    x = NULL;
    EXPECT_RC(dlock_suspended(&x, ro, off), DLOCK_OK);
    EXPECT(x == NULL);
    v.name = on;
    EXPECT_RC(dlock_suspensions(ro, "", sseen_cb, &v), DLOCK_OK);
    EXPECT(v.n == 1);
    EXPECT(sqlf(raw, NULL, "SELECT COUNT(*) FROM `%s_susp`", table) == 1);
    dlock_store_close(ro);
    dlock_store_close(mine);
    sqlf(root, NULL, "DROP USER IF EXISTS '%s'@'%s'", user, t->host);
    mysql_close(root);
    drop_tables(raw, table);
}

/* --- runs kept per name (NAME_rkeep) ------------------------------------- */

/* How many runs of name the run table holds, and its lowest fence. */
static long long raw_runs(MYSQL *raw, const char *table, const char *name,
                          long long *lowest)
{
    if (lowest != NULL)
        *lowest = sqlf(raw, NULL,
                       "SELECT MIN(fence) FROM `%s_runs` WHERE "
                       "full_name = %s",
                       table, lit(raw, name));
    return sqlf(raw, NULL,
                "SELECT COUNT(*) FROM `%s_runs` WHERE full_name = %s", table,
                lit(raw, name));
}

/* n old runs of name planted with fences 1..n (below any real one: the
 * fences are on the server's clock in microseconds). */
static void plant_runs(MYSQL *raw, const char *table, const char *name, long n)
{
    sqlf(raw, NULL,
         "INSERT INTO `%s_runs` (name, fence, full_name, host, pid, "
         "start_ms, end_ms, result, status) SELECT %s, x.n, %s, 'planted', "
         "1, 1, 2, 1, 0 FROM (SELECT a.d + 10 * b.d + 100 * c.d + 1000 * "
         "e.d + 10000 * f.d AS n FROM (SELECT 0 d UNION ALL SELECT 1 UNION "
         "ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL "
         "SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 "
         "UNION ALL SELECT 9) a, (SELECT 0 d UNION ALL SELECT 1 UNION ALL "
         "SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 "
         "UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION "
         "ALL SELECT 9) b, (SELECT 0 d UNION ALL SELECT 1 UNION ALL SELECT "
         "2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION "
         "ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL "
         "SELECT 9) c, (SELECT 0 d UNION ALL SELECT 1 UNION ALL SELECT 2 "
         "UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION "
         "ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL "
         "SELECT 9) e, (SELECT 0 d UNION ALL SELECT 1) f) x WHERE x.n "
         "BETWEEN 1 AND %ld",
         table, lit(raw, name), lit(raw, name), n);
}

struct hcount {
    unsigned n, planted;
    uint64_t first, prev;
    int ordered;
};

static int hcount_cb(const dlock_run *r, void *p)
{
    struct hcount *h = p;

    if (h->n == 0)
        h->first = r->fence;
    else if (r->fence >= h->prev)
        h->ordered = 0;
    h->prev = r->fence;
    h->planted += strcmp(r->host, "planted") == 0;
    h->n++;
    return 0;
}

/* The rows a run_begin reads, from the server's Handler_read_* counters
 * (global: the least of three tries, as other clients add to them). */
static long long reads_of_a_run(dlock_store *s, MYSQL *raw, const char *name)
{
    static const char *const q =
        "SELECT SUM(VARIABLE_VALUE) FROM information_schema.GLOBAL_STATUS "
        "WHERE VARIABLE_NAME IN ('HANDLER_READ_NEXT', 'HANDLER_READ_PREV', "
        "'HANDLER_READ_RND_NEXT', 'HANDLER_READ_FIRST', 'HANDLER_READ_KEY')";
    long long least = -1;

    for (int i = 0; i < 3; i++) {
        long long a = sqlf(raw, NULL, "%s", q), b;

        if (one_run(s, name, 0) != 1)
            failures++;
        b = sqlf(raw, NULL, "%s", q);
        if (a >= 0 && b >= a && (least < 0 || b - a < least))
            least = b - a;
    }
    return least;
}

/* A name that keeps DLOCK_RUNS_KEPT_MAX, filled past it (planted old
 * runs, then real ones): dlock_keep_runs() drops what is over at once,
 * each run after drops one, the newest stay, and a run reads about as
 * many rows as one of a name that keeps the default. */
static void t_keep_max(dlock_store *s, MYSQL *raw, const char *table)
{
    const char *name = uniq("keep-max"), *small = uniq("keep-small");
    struct hcount h = {0, 0, 0, 0, 1};
    long long lowest = 0, big, little;
    unsigned n = 0;

    CHECK_RC(dlock_keep_runs(s, name, DLOCK_RUNS_KEPT_MAX), DLOCK_OK);
    CHECK(one_run(s, name, 0) == 1);
    plant_runs(raw, table, name, DLOCK_RUNS_KEPT_MAX + 50);
    EXPECT(raw_runs(raw, table, name, NULL) == DLOCK_RUNS_KEPT_MAX + 51);
    CHECK_RC(dlock_keep_runs(s, name, DLOCK_RUNS_KEPT_MAX), DLOCK_OK);
    EXPECT(raw_runs(raw, table, name, &lowest) == DLOCK_RUNS_KEPT_MAX);
    EXPECT(lowest == 52);
    for (int i = 0; i < 5; i++)
        EXPECT(one_run(s, name, 0) == 1);
    EXPECT(raw_runs(raw, table, name, &lowest) == DLOCK_RUNS_KEPT_MAX);
    EXPECT(lowest == 57);
    EXPECT(sqlf(raw, NULL, "SELECT kept_runs FROM `%s_rkeep` WHERE name = %s",
                table, lit(raw, name)) == DLOCK_RUNS_KEPT_MAX);
    /* All of them, newest first, the six real ones on top. */
    EXPECT_RC(dlock_history(s, name, 0, hcount_cb, &h), DLOCK_OK);
    EXPECT(h.n == DLOCK_RUNS_KEPT_MAX);
    EXPECT(h.ordered);
    EXPECT(h.planted == DLOCK_RUNS_KEPT_MAX - 6);
    EXPECT(h.first == (uint64_t)sqlf(raw, NULL,
                                     "SELECT MAX(fence) FROM `%s_runs` "
                                     "WHERE name = %s",
                                     table, lit(raw, name)));
    CHECK_RC(dlock_kept_runs(&n, s, name), DLOCK_OK);
    EXPECT(n == DLOCK_RUNS_KEPT_MAX);
    /* What a run reads does not grow with the runs kept. */
    for (int i = 0; i < DLOCK_RUNS_KEPT + 2; i++)
        EXPECT(one_run(s, small, 0) == 1);
    little = reads_of_a_run(s, raw, small);
    big = reads_of_a_run(s, raw, name);
    printf("  rows read by a run: %lld keeping %d, %lld keeping %d\n", little,
           DLOCK_RUNS_KEPT, big, DLOCK_RUNS_KEPT_MAX);
    EXPECT(big >= 0 && big < 1000);
    EXPECT(raw_runs(raw, table, name, NULL) == DLOCK_RUNS_KEPT_MAX);
    EXPECT(raw_runs(raw, table, small, NULL) == DLOCK_RUNS_KEPT);
}

/* A run of an older dlock (it writes the run and the summary, never the
 * keep row, and trims to DLOCK_RUNS_KEPT by itself): the next run counts
 * again, so the name still keeps its setting exactly. */
static void t_keep_older(dlock_store *s, MYSQL *raw, const char *table)
{
    const char *name = uniq("keep-older");
    dlock_lock *l;
    long long lowest = 0;

    CHECK_RC(dlock_keep_runs(s, name, 5), DLOCK_OK);
    for (int i = 0; i < 6; i++)
        EXPECT(one_run(s, name, 0) == 1);
    EXPECT(raw_runs(raw, table, name, NULL) == 5);
    l = take(s, name, 1);
    CHECK(l != NULL);
    sqlf(raw, NULL,
         "INSERT INTO `%s_runs` (name, fence, full_name, host, pid, "
         "start_ms, end_ms, result, status) VALUES (%s, %llu, %s, 'older', "
         "1, 1, 2, 1, 0)",
         table, lit(raw, name), (unsigned long long)dlock_fence(l),
         lit(raw, name));
    sqlf(raw, NULL, "UPDATE `%s_runsum` SET last_fence = %llu WHERE name = %s",
         table, (unsigned long long)dlock_fence(l), lit(raw, name));
    EXPECT_RC(dlock_release(l), DLOCK_OK);
    EXPECT(raw_runs(raw, table, name, &lowest) == 6);
    EXPECT(one_run(s, name, 0) == 1);
    EXPECT(raw_runs(raw, table, name, NULL) == 5);
    EXPECT(one_run(s, name, 0) == 1);
    EXPECT(raw_runs(raw, table, name, NULL) == 5);
}

/* One whole run of name under --once (rule.once); returns go. */
static int once_run(dlock_store *s, const char *name, int status)
{
    dlock_run_rule r = DLOCK_RUN_RULE_INIT;
    dlock_lock *l = take(s, name, 1);
    int go = -1;

    if (l == NULL)
        return -1;
    r.once = 1;
    EXPECT_RC(dlock_run_begin(l, &r, &go, NULL), DLOCK_OK);
    if (go == 1)
        EXPECT_RC(dlock_run_end(l, DLOCK_RUN_EXITED, status), DLOCK_OK);
    EXPECT_RC(dlock_release(l), DLOCK_OK);
    return go;
}

static long long keep_col(MYSQL *raw, const char *table, const char *name,
                          const char *col)
{
    return sqlf(raw, NULL, "SELECT %s FROM `%s_rkeep` WHERE name = %s", col,
                table, lit(raw, name));
}

/* A count that drifted from the runs there are (runs deleted by hand, a
 * value planted in range, the biggest the column holds): the trim never
 * drops the run just recorded (so --once keeps its success), and the
 * count comes right within the setting's runs (the amortized recount). */
static void t_keep_drift(dlock_store *s, MYSQL *raw, const char *table)
{
    const char *name = uniq("keep-drift"), *five = uniq("keep-drift5"),
               *big = uniq("keep-drift-big");
    long long real;
    int i;

    /* The reproduction: three failures, every row deleted by hand, the
     * count (3) left above the runs (0). */
    CHECK_RC(dlock_keep_runs(s, name, 3), DLOCK_OK);
    for (i = 0; i < 3; i++)
        EXPECT(once_run(s, name, 1) == 1);
    sqlf(raw, NULL, "DELETE FROM `%s_runs` WHERE full_name = %s", table,
         lit(raw, name));
    sqlf(raw, NULL,
         "UPDATE `%s_rkeep` SET kept_runs = 3, uncounted = 0 WHERE name = %s",
         table, lit(raw, name));
    EXPECT(once_run(s, name, 0) == 1);
    EXPECT(raw_runs(raw, table, name, NULL) == 1);
    EXPECT(keep_col(raw, table, name, "kept_runs") == 1);
    /* Its success is kept: --once does not run it again. */
    EXPECT(once_run(s, name, 0) == 0);
    EXPECT(once_run(s, name, 0) == 0);
    EXPECT(raw_runs(raw, table, name, NULL) == 1);

    /* Two too high with older rows left: right within 5 runs, then the
     * name fills to its setting again. */
    CHECK_RC(dlock_keep_runs(s, five, 5), DLOCK_OK);
    for (i = 0; i < 5; i++)
        EXPECT(one_run(s, five, 0) == 1);
    EXPECT(raw_runs(raw, table, five, NULL) == 5);
    sqlf(raw, NULL,
         "DELETE FROM `%s_runs` WHERE full_name = %s ORDER BY fence LIMIT 2",
         table, lit(raw, five));
    sqlf(raw, NULL,
         "UPDATE `%s_rkeep` SET kept_runs = 5, uncounted = 0 WHERE name = %s",
         table, lit(raw, five));
    for (i = 0; i < 5; i++) {
        EXPECT(one_run(s, five, 0) == 1);
        if (keep_col(raw, table, five, "kept_runs") ==
            raw_runs(raw, table, five, NULL))
            break;
    }
    printf("  a count 2 too high came right after %d runs\n", i + 1);
    EXPECT(i < 5);
    for (i = 0; i < 5; i++)
        EXPECT(one_run(s, five, 0) == 1);
    EXPECT(raw_runs(raw, table, five, NULL) == 5);
    EXPECT(keep_col(raw, table, five, "kept_runs") == 5);

    /* The biggest values the columns hold: no setting (the default),
     * no count (counted again), no overflow; the run and its success
     * stay. */
    for (i = 0; i < 2; i++)
        EXPECT(once_run(s, big, 1) == 1);
    sqlf(raw, NULL,
         "UPDATE `%s_rkeep` SET keep_runs = 2147483647, kept_runs = "
         "2147483647, uncounted = 2147483647, kept_at = "
         "18446744073709551615 WHERE name = %s",
         table, lit(raw, big));
    EXPECT(once_run(s, big, 0) == 1);
    EXPECT(raw_runs(raw, table, big, NULL) == 3);
    EXPECT(keep_col(raw, table, big, "kept_runs") == 3);
    EXPECT(keep_col(raw, table, big, "uncounted") == 0);
    EXPECT(once_run(s, big, 0) == 0);
    /* A count in range with the biggest uncounted: counted again. */
    sqlf(raw, NULL,
         "UPDATE `%s_rkeep` SET kept_runs = 19, uncounted = 2147483647, "
         "kept_at = (SELECT last_fence FROM `%s_runsum` WHERE name = %s) "
         "WHERE name = %s",
         table, table, lit(raw, big), lit(raw, big));
    EXPECT(one_run(s, big, 0) == 1);
    real = raw_runs(raw, table, big, NULL);
    EXPECT(real == 4);
    EXPECT(keep_col(raw, table, big, "kept_runs") == real);
    EXPECT(keep_col(raw, table, big, "uncounted") == 0);
}

/* Keep rows planted with what dlock never writes: a setting out of
 * 1..DLOCK_RUNS_KEPT_MAX or not a number reads as DLOCK_RUNS_KEPT and
 * runs keep that many; a count out of range or not a number is counted
 * again, never taken as how many to drop. */
static void t_keep_planted(dlock_store *s, MYSQL *raw, const char *table)
{
    static const char *const keeps[] = {"0",
                                        "-5",
                                        "2147483647",
                                        "'abc'",
                                        "'5x'",
                                        "' 7'",
                                        "'99999999999999999999'",
                                        "'3.5'"};
    static const char *const counts[] = {
        "-3", "2147483647", "'abc'", "'-1'", "'1e9'", "'99999999999999999999'"};
    const char *name = uniq("keep-planted");
    unsigned n = 0;
    long long had;

    CHECK_RC(dlock_keep_runs(s, name, 3), DLOCK_OK);
    for (int i = 0; i < 4; i++)
        EXPECT(one_run(s, name, 0) == 1);
    EXPECT(raw_runs(raw, table, name, NULL) == 3);
    /* Any text, as a DBA who changed the columns could plant it. */
    sqlf(raw, NULL,
         "ALTER TABLE `%s_rkeep` MODIFY keep_runs VARCHAR(40) NOT NULL, "
         "MODIFY kept_runs VARCHAR(40) NOT NULL, "
         "MODIFY uncounted VARCHAR(40) NOT NULL",
         table);
    for (size_t i = 0; i < sizeof(keeps) / sizeof(keeps[0]); i++) {
        sqlf(raw, NULL, "UPDATE `%s_rkeep` SET keep_runs = %s WHERE name = %s",
             table, keeps[i], lit(raw, name));
        CHECK_RC(dlock_kept_runs(&n, s, name), DLOCK_OK);
        if (n != DLOCK_RUNS_KEPT)
            fprintf(stderr, "  planted keep %s read as %u\n", keeps[i], n);
        EXPECT(n == DLOCK_RUNS_KEPT);
        had = raw_runs(raw, table, name, NULL);
        EXPECT(one_run(s, name, 0) == 1);
        /* The default's bound: one more, up to DLOCK_RUNS_KEPT. */
        if (raw_runs(raw, table, name, NULL) !=
            (had < DLOCK_RUNS_KEPT ? had + 1 : DLOCK_RUNS_KEPT)) {
            fprintf(stderr, "  planted keep %s: %lld runs, then %lld\n",
                    keeps[i], had, raw_runs(raw, table, name, NULL));
            failures++;
        }
    }
    CHECK_RC(dlock_keep_runs(s, name, 3), DLOCK_OK);
    EXPECT(raw_runs(raw, table, name, NULL) == 3);
    for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
        sqlf(raw, NULL,
             "UPDATE `%s_rkeep` SET kept_runs = %s, uncounted = %s WHERE "
             "name = %s",
             table, counts[i], counts[i], lit(raw, name));
        EXPECT(one_run(s, name, 0) == 1);
        if (raw_runs(raw, table, name, NULL) != 3) {
            fprintf(stderr, "  planted count %s: %lld runs kept, not 3\n",
                    counts[i], raw_runs(raw, table, name, NULL));
            failures++;
        }
    }
    /* No row: the default, and the first run writes one. */
    sqlf(raw, NULL, "DELETE FROM `%s_rkeep` WHERE name = %s", table,
         lit(raw, name));
    CHECK_RC(dlock_kept_runs(&n, s, name), DLOCK_OK);
    EXPECT(n == DLOCK_RUNS_KEPT);
    EXPECT(one_run(s, name, 0) == 1);
    EXPECT(raw_runs(raw, table, name, NULL) == 4);
    EXPECT(sqlf(raw, NULL, "SELECT kept_runs FROM `%s_rkeep` WHERE name = %s",
                table, lit(raw, name)) == 4);
}

/* A database of a dlock before keep settings: the keep table is made by
 * the first run (or dlock_keep_runs()), and kept_runs reads the default
 * without one. */
static void t_keep_no_table(dlock_store *s, MYSQL *raw, const char *table)
{
    const char *name = uniq("keep-new-table");
    unsigned n = 0;

    sqlf(raw, NULL, "DROP TABLE IF EXISTS `%s_rkeep`", table);
    CHECK_RC(dlock_kept_runs(&n, s, name), DLOCK_OK);
    EXPECT(n == DLOCK_RUNS_KEPT);
    EXPECT(one_run(s, name, 0) == 1);
    EXPECT(sqlf(raw, NULL, "SELECT kept_runs FROM `%s_rkeep` WHERE name = %s",
                table, lit(raw, name)) == 1);
    sqlf(raw, NULL, "DROP TABLE IF EXISTS `%s_rkeep`", table);
    CHECK_RC(dlock_keep_runs(s, name, 7), DLOCK_OK);
    CHECK_RC(dlock_kept_runs(&n, s, name), DLOCK_OK);
    EXPECT(n == 7);
}

static void t_keep(const char *url, const struct target *t, MYSQL *raw)
{
    char u[1024];
    const char *table =
        strstr(url, "mode=lease") != NULL ? "keep_lease" : "keep_session";
    dlock_store *s;

    drop_tables(raw, table);
    url_for(u, sizeof(u), url, t, t->user, t->password, table);
    s = open_url(u);
    t_keep_no_table(s, raw, table);
    printf("no keep table: %d failures so far\n", failures);
    t_keep_max(s, raw, table);
    printf("keep %d: %d failures so far\n", DLOCK_RUNS_KEPT_MAX, failures);
    t_keep_older(s, raw, table);
    printf("an older client's run: %d failures so far\n", failures);
    t_keep_drift(s, raw, table);
    printf("a count that drifted: %d failures so far\n", failures);
    t_keep_planted(s, raw, table);
    printf("planted keep rows: %d failures so far\n", failures);
    dlock_store_close(s);
    drop_tables(raw, table);
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
    if (argc > 2 && strcmp(argv[2], "keep") == 0) {
        printf("runs kept per name (%s mode)\n",
               strstr(url, "mode=lease") != NULL ? "lease" : "session");
        t_keep(url, &t, raw);
        mysql_close(raw);
        printf("%d failures\n", failures);
        return failures ? 1 : 0;
    }
    if (argc > 2 && strcmp(argv[2], "suspend") == 0) {
        printf("suspension records (%s mode)\n",
               strstr(url, "mode=lease") != NULL ? "lease" : "session");
        t_planted_susp(url, &t, raw);
        printf("planted suspensions: %d failures so far\n", failures);
        t_readonly_susp(url, &t, raw);
        printf("read-only suspend: %d failures so far\n", failures);
        mysql_close(raw);
        printf("%d failures\n", failures);
        return failures ? 1 : 0;
    }
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
