/*
 * test_mysql_latin1.c - dlock on the `shared_locks` table exactly as
 * its-mieger/mysql-shared-locks creates it (MyISAM, latin1: reference 000)
 * with the ALTER of `dlock init --print` applied:
 *
 *   - names latin1 can store (ASCII, "grüße"): a live holder, dlock's or
 *     the PHP library's, is never taken over or KILLed inside its lease; a
 *     second acquire is BUSY; extend, assert_ttl and release say OK, not
 *     LOST; status says held;
 *   - names latin1 cannot store (Greek, CJK, emoji): a clear DLOCK_EINVAL
 *     naming the column's character set, never a lock;
 *   - a GET_LOCK holder whose row was deleted by someone else is KILLed once
 *     its lease (as last seen) is over plus a grace; a GET_LOCK-only client
 *     that never had a row is waited for and left alone.
 *
 * Each run uses a table of its own (?table=).
 *
 *     test_mysql_latin1 URL     (or DLOCK_TEST_MYSQL_URL)
 */
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>

#include "raw.h"

static char table[64];

/* The PHP library's register + GET_LOCK + mark (reference README). */
static int php_lock(MYSQL *db, const char *n, int ttl)
{
    unsigned err = 0;

    if (sqlf(db, &err,
             "INSERT INTO `%s` (`name`,`created`,`ttl`,`connection_id`,"
             "`lock_acquired`) VALUES (%s, unix_timestamp(), %d, "
             "connection_id(), false)",
             table, lit(db, n), ttl) == -2)
        return 0;
    if (sqlf(db, NULL, "SELECT GET_LOCK(%s, 0)", lit(db, n)) != 1) {
        sqlf(db, NULL,
             "DELETE FROM `%s` WHERE `name`=%s AND "
             "`connection_id`=connection_id()",
             table, lit(db, n));
        return 0;
    }
    sqlf(db, NULL,
         "UPDATE `%s` SET `lock_acquired`=true WHERE `name`=%s AND "
         "`connection_id`=connection_id()",
         table, lit(db, n));
    return 1;
}

static int php_release(MYSQL *db, const char *n)
{
    long long rows = sqlf(db, NULL,
                          "DELETE FROM `%s` WHERE `name`=%s AND "
                          "`connection_id`=connection_id()",
                          table, lit(db, n));

    sqlf(db, NULL, "SELECT RELEASE_LOCK(%s)", lit(db, n));
    return rows == 1;
}

static int alive(MYSQL *db)
{
    unsigned err = 0;

    return sqlf(db, &err, "SELECT 1") == 1;
}

/* The seed's DDL word for word (but for the table's name), then the
 * commented ALTER that `dlock init --print` shows for such a table. */
static void make_table(MYSQL *db, const char *url)
{
    char *ddl = NULL, sql[2048], *p, *out = sql;

    CHECK(sqlf(db, NULL,
               "CREATE TABLE `%s` (\n"
               "`name` varchar(64) NOT NULL,\n"
               "`connection_id` bigint(20) NOT NULL,\n"
               "`created` bigint(20) NOT NULL,\n"
               "`ttl` bigint(20) NOT NULL,\n"
               "`lock_acquired` tinyint(1) NOT NULL,\n"
               "UNIQUE KEY `%s_ix1` (`name`)\n"
               ") ENGINE=MyISAM DEFAULT CHARSET=latin1",
               table, table) != -2);
    CHECK_RC(dlock_ddl(&ddl, url), DLOCK_OK);
    p = strstr(ddl, "-- ALTER TABLE");
    CHECK(p != NULL);
    /* Uncomment the ALTER up to its ';'. */
    while (*p != '\0' && *p != ';' && out < sql + sizeof(sql) - 2) {
        if (strncmp(p, "-- ", 3) == 0)
            p += 3;
        *out++ = *p++;
    }
    *out = '\0';
    dlock_free(ddl);
    CHECK(sqlf(db, NULL, "%s", sql) != -2);
}

struct name_case {
    const char *label, *text;
    int storable; /* in latin1 */
};

/* dlock holds: a second store (other connections) is BUSY, also after
 * waiting; the holder is never LOST; status says held. */
static void t_dlock_holder(const char *url, const char *n)
{
    dlock_store *a = NULL, *b = NULL;
    dlock_options o = DLOCK_OPTIONS_INIT;
    dlock_lock *l = NULL, *l2 = NULL;
    dlock_info info;

    CHECK_RC(dlock_store_open(&a, url), DLOCK_OK);
    CHECK_RC(dlock_store_open(&b, url), DLOCK_OK);
    o.ttl_ms = 10000;
    EXPECT_RC(dlock_acquire(&l, a, n, &o), DLOCK_OK);
    EXPECT_RC(dlock_acquire(&l2, b, n, &o), DLOCK_BUSY);
    o.wait_ms = 1200;
    EXPECT_RC(dlock_acquire(&l2, b, n, &o), DLOCK_BUSY);
    memset(&info, 0, sizeof(info));
    EXPECT_RC(test_status(b, n, &info), DLOCK_OK);
    EXPECT(info.held == 1 && info.ttl_ms > 5000);
    EXPECT(info.pid == (long long)getpid());
    EXPECT_RC(dlock_extend(l, 10000), DLOCK_OK);
    EXPECT_RC(dlock_assert_ttl(l, 5000), DLOCK_OK);
    EXPECT_RC(dlock_release(l), DLOCK_OK);
    o.wait_ms = 0;
    EXPECT_RC(dlock_acquire(&l2, b, n, &o), DLOCK_OK);
    if (l2 != NULL)
        EXPECT_RC(dlock_release(l2), DLOCK_OK);
    dlock_store_close(a);
    dlock_store_close(b);
}

/* The PHP library holds (10 s TTL): dlock neither KILLs nor takes over
 * inside it, status says held; after its release dlock gets the lock. */
static void t_php_holder(dlock_store *s, const struct target *t, const char *n)
{
    MYSQL *php = raw_connect(t);
    dlock_options o = DLOCK_OPTIONS_INIT;
    dlock_lock *l = NULL;
    dlock_info info;

    CHECK(php_lock(php, n, 10) == 1);
    EXPECT_RC(dlock_acquire(&l, s, n, &o), DLOCK_BUSY);
    o.wait_ms = 1200;
    EXPECT_RC(dlock_acquire(&l, s, n, &o), DLOCK_BUSY);
    EXPECT(alive(php));
    memset(&info, 0, sizeof(info));
    EXPECT_RC(test_status(s, n, &info), DLOCK_OK);
    EXPECT(info.held == 1 && info.ttl_ms > 0);
    EXPECT(php_release(php, n) == 1);
    o.wait_ms = 0;
    EXPECT_RC(dlock_acquire(&l, s, n, &o), DLOCK_OK);
    /* and the PHP library is refused while dlock holds */
    EXPECT(php_lock(php, n, 10) == 0);
    if (l != NULL)
        EXPECT_RC(dlock_release(l), DLOCK_OK);
    mysql_close(php);
}

/* A name the latin1 column cannot hold: a clear error, no lock, no row. */
static void t_unstorable(dlock_store *s, MYSQL *db, const char *n)
{
    dlock_options o = DLOCK_OPTIONS_INIT;
    dlock_lock *l = NULL;
    dlock_info info;

    EXPECT_RC(dlock_acquire(&l, s, n, &o), DLOCK_EINVAL);
    EXPECT(strstr(dlock_errmsg(), "latin1") != NULL &&
           strstr(dlock_errmsg(), "utf8mb4") != NULL &&
           strstr(dlock_errmsg(), "cannot store") != NULL);
    if (l != NULL)
        dlock_release(l);
    o.wait_ms = 500;
    EXPECT_RC(dlock_acquire(&l, s, n, &o), DLOCK_EINVAL);
    EXPECT_RC(test_status(s, n, &info), DLOCK_EINVAL);
    EXPECT(strstr(dlock_errmsg(), "cannot store") != NULL);
    /* Nothing left behind: no row, no GET_LOCK. */
    EXPECT(sqlf(db, NULL, "SELECT COUNT(*) FROM `%s` WHERE pid = %lld", table,
                (long long)getpid()) == 0);
    EXPECT(sqlf(db, NULL, "SELECT IS_USED_LOCK(%s)", lit(db, n)) == -1);
}

/* Under latin1_swedish_ci "grüße" and "gryße" are one row: a holder of
 * either is alive to a contender for the other (the row is the lock), not
 * taken over because the two GET_LOCK keys differ. */
static void t_collation_alias(const char *url)
{
    dlock_store *a = NULL, *b = NULL;
    dlock_options o = DLOCK_OPTIONS_INIT;
    dlock_lock *l = NULL, *l2 = NULL;

    CHECK_RC(dlock_store_open(&a, url), DLOCK_OK);
    CHECK_RC(dlock_store_open(&b, url), DLOCK_OK);
    o.ttl_ms = 10000;
    EXPECT_RC(dlock_acquire(&l, a, uniq("grüße-alias"), &o), DLOCK_OK);
    EXPECT_RC(dlock_acquire(&l2, b, uniq("gryße-alias"), &o), DLOCK_BUSY);
    EXPECT_RC(dlock_extend(l, 10000), DLOCK_OK);
    if (l2 != NULL)
        dlock_release(l2);
    EXPECT_RC(dlock_release(l), DLOCK_OK);
    dlock_store_close(a);
    dlock_store_close(b);
}

/* --- a GET_LOCK holder without a row ------------------------------------ */

static int lost_fd = -1;
static void on_lost(dlock_lock *l, void *p)
{
    (void)l;
    (void)p;
    (void)!write(lost_fd, "L", 1);
}

struct waiter {
    dlock_store *s;
    const char *name;
    int64_t wait_ms;
    int rc;
    long long took;
    dlock_lock *l;
};

static void *waiter_main(void *arg)
{
    struct waiter *w = arg;
    dlock_options o = DLOCK_OPTIONS_INIT;
    long long t0 = mono_ms();

    o.wait_ms = w->wait_ms;
    w->rc = dlock_acquire(&w->l, w->s, w->name, &o);
    w->took = mono_ms() - t0;
    return NULL;
}

/* Until a session other than `self` sleeps in GET_LOCK (the waiter has
 * looked at the row and waits natively): 1, or 0 after 5 s.  A
 * GET_LOCK(key, 0) is a try that has not looked at the row yet (deleted
 * then, the waiter never saw it, and rightly waits without bound): only
 * a GET_LOCK that waits counts. */
static int waiter_sleeping(MYSQL *db, const char *n)
{
    for (long long until = mono_ms() + 5000; mono_ms() < until;) {
        if (sqlf(db, NULL,
                 "SELECT COUNT(*) FROM information_schema.PROCESSLIST "
                 "WHERE ID <> CONNECTION_ID() AND INFO LIKE "
                 "CONCAT('%%GET_LOCK(''', %s, ''', %%') AND INFO NOT "
                 "LIKE CONCAT('%%GET_LOCK(''', %s, ''', 0%%')",
                 lit(db, n), lit(db, n)) > 0)
            return 1;
        poll(NULL, 0, 5);
    }
    return 0;
}

/* A dlock holder hangs (SIGSTOP) and another client deletes its row (as
 * its-mieger's clean-up or `release --force` without KILL rights do).  A
 * waiter that saw the row takes over within lease + grace, KILLing that
 * session (and only it). */
static void t_rowless_holder(const char *url, const struct target *t,
                             const char *n)
{
    MYSQL *db = raw_connect(t);
    char wurl[1100];
    dlock_store *s = NULL;
    struct waiter w = {NULL, n, 8000, -1, 0, NULL};
    pthread_t th;
    int p[2];
    char c = 0;
    long long id;
    pid_t pid;
    struct pollfd pf;

    /* The waiter's grace for a rowless session is its ?timeout=. */
    snprintf(wurl, sizeof(wurl), "%s&timeout=2s", url);
    CHECK_RC(dlock_store_open(&s, wurl), DLOCK_OK);
    w.s = s;
    if (pipe(p) != 0)
        exit(2);
    pid = fork();
    if (pid == 0) {
        dlock_options o = DLOCK_OPTIONS_INIT;
        dlock_store *cs;
        dlock_lock *cl;

        close(p[0]);
        lost_fd = p[1];
        o.ttl_ms = 2000;
        o.on_lost = on_lost;
        if (dlock_store_open(&cs, url) != DLOCK_OK ||
            dlock_acquire(&cl, cs, n, &o) != DLOCK_OK)
            _exit(3);
        (void)!write(p[1], "H", 1);
        for (;;)
            pause();
    }
    close(p[1]);
    CHECK(read(p[0], &c, 1) == 1 && c == 'H');
    kill(pid, SIGSTOP);
    id = sqlf(db, NULL, "SELECT connection_id FROM `%s` WHERE name = %s", table,
              lit(db, n));
    EXPECT(id > 0);
    CHECK(pthread_create(&th, NULL, waiter_main, &w) == 0);
    EXPECT(waiter_sleeping(db, n));
    /* The foreign client removes the row; the hung session keeps its
     * GET_LOCK. */
    EXPECT(sqlf(db, NULL, "DELETE FROM `%s` WHERE name = %s", table,
                lit(db, n)) == 1);
    pthread_join(th, NULL);
    if (w.rc != DLOCK_OK)
        fprintf(stderr, "  rowless waiter: rc %d after %lld ms: %s\n", w.rc,
                w.took, dlock_errmsg());
    EXPECT_RC(w.rc, DLOCK_OK);
    /* Seen without a row at the lease's end (2 s), KILLed after the grace
     * (2 s): never before the lease, well before the waiter's 8 s. */
    if (!(w.took >= 1900 && w.took < 6500))
        fprintf(stderr, "  rowless waiter took %lld ms\n", w.took);
    EXPECT(w.took >= 1900 && w.took < 6500);
    EXPECT(sqlf(db, NULL,
                "SELECT COUNT(*) FROM information_schema.PROCESSLIST "
                "WHERE ID = %lld",
                id) == 0);
    kill(pid, SIGCONT);
    pf.fd = p[0];
    pf.events = POLLIN;
    c = 0;
    EXPECT(poll(&pf, 1, 5000) == 1 && read(p[0], &c, 1) == 1 && c == 'L');
    if (w.l != NULL) {
        EXPECT_RC(dlock_assert_ttl(w.l, 100), DLOCK_OK);
        EXPECT_RC(dlock_release(w.l), DLOCK_OK);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    close(p[0]);
    dlock_store_close(s);
    mysql_close(db);
}

/* A GET_LOCK-only client (mpyw/laravel-database-advisory-lock) that never
 * had a row is a legitimate holder: waited for past any lease or grace,
 * never KILLed. */
static void t_getlock_only(dlock_store *s, const struct target *t,
                           const char *n)
{
    MYSQL *app = raw_connect(t);
    dlock_options o = DLOCK_OPTIONS_INIT;
    dlock_lock *l = NULL;
    dlock_info info;
    long long t0;

    CHECK(sqlf(app, NULL, "SELECT GET_LOCK(%s, 0)", lit(app, n)) == 1);
    o.ttl_ms = 1000;
    o.wait_ms = 3500;
    t0 = mono_ms();
    EXPECT_RC(dlock_acquire(&l, s, n, &o), DLOCK_BUSY);
    EXPECT(mono_ms() - t0 >= 3000);
    EXPECT(alive(app));
    memset(&info, 0, sizeof(info));
    EXPECT_RC(test_status(s, n, &info), DLOCK_OK);
    /* held; what only a row could tell is unknown (-1 / 0 / empty, as
     * dlock.h defines "unknown") */
    if (!(info.held == 1 && info.ttl_ms == -1 && info.pid == 0 &&
          info.host[0] == '\0'))
        fprintf(stderr, "  status: held %d ttl %lld pid %lld host '%s'\n",
                info.held, (long long)info.ttl_ms, (long long)info.pid,
                info.host);
    EXPECT(info.held == 1 && info.ttl_ms == -1 && info.pid == 0 &&
           info.host[0] == '\0' && info.other_client);
    EXPECT(sqlf(app, NULL, "SELECT RELEASE_LOCK(%s)", lit(app, n)) == 1);
    o.wait_ms = 0;
    EXPECT_RC(dlock_acquire(&l, s, n, &o), DLOCK_OK);
    if (l != NULL)
        EXPECT_RC(dlock_release(l), DLOCK_OK);
    mysql_close(app);
}

static int count_cb(const dlock_info *info, void *payload)
{
    int *count = payload;

    if (info->held)
        (*count)++;
    return DLOCK_OK;
}

static void t_list_held(dlock_store *s, const char *n)
{
    dlock_options o = DLOCK_OPTIONS_INIT;
    dlock_lock *l = NULL;
    int count = 0;

    CHECK_RC(dlock_acquire(&l, s, n, &o), DLOCK_OK);
    EXPECT_RC(dlock_list(s, n, count_cb, &count), DLOCK_OK);
    EXPECT(count == 1);
    EXPECT_RC(dlock_release(l), DLOCK_OK);
}

int main(int argc, char **argv)
{
    static const struct name_case names[] = {
        {"ascii", "plain-name", 1}, {"latin1", "grüße", 1},
        {"greek", "αβγ-λ", 0},      {"cyrillic", "ключ", 0},
        {"cjk", "鍵", 0},           {"emoji", "🔒", 0},
    };
    const char *base = test_url(argc, argv);
    char url[1024];
    struct target t;
    dlock_store *s;
    MYSQL *db;

    if (parse_target(base, &t) != 0) {
        fprintf(stderr, "cannot parse the URL\n");
        return 2;
    }
    snprintf(table, sizeof(table), "l1_%x_%x", (unsigned)time(NULL),
             (unsigned)getpid());
    snprintf(url, sizeof(url), "%s%ctable=%s", base,
             strchr(base, '?') ? '&' : '?', table);
    db = raw_connect(&t);
    make_table(db, url);
    if (failures != 0)
        return 1;
    if (dlock_store_open(&s, url) != DLOCK_OK) {
        fprintf(stderr, "open: %s\n", dlock_errmsg());
        return 2;
    }
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        const char *n = uniq(names[i].text);
        int before = failures;

        if (names[i].storable) {
            t_dlock_holder(url, n);
            t_php_holder(s, &t, n);
            t_list_held(s, n);
        } else {
            t_unstorable(s, db, n);
        }
        printf("%-8s %s: %s\n", names[i].label, n,
               failures == before ? "ok" : "FAILED");
    }
    t_collation_alias(url);
    /* ASCII first: the bound itself, apart from the charset bug. */
    t_rowless_holder(url, &t, uniq("rowless"));
    t_rowless_holder(url, &t, uniq("rowless-grüße"));
    t_getlock_only(s, &t, uniq("getlock-only-grüße"));
    dlock_store_close(s);
    sqlf(db, NULL, "DROP TABLE IF EXISTS `%s`, `%s_fences`", table, table);
    mysql_close(db);
    printf("latin1: %d failure(s)\n", failures);
    return failures != 0;
}
