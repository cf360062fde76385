/*
 * test_mysql_interop.c - dlock and its-mieger/mysql-shared-locks exclude
 * each other, and a holder past its lease is KILLed: exactly its own
 * connection, never another.
 *
 * The PHP library is played by a raw client sending the statements of
 * reference 000 word for word (shared/reference/README.md).
 *
 *     test_mysql_interop URL     (or DLOCK_TEST_MYSQL_URL)
 */
#include <poll.h>
#include <signal.h>
#include <strings.h>
#include <sys/wait.h>

#include "raw.h"

/* its-mieger's register + GET_LOCK + mark; 1 if it got the lock. */
static int php_lock(MYSQL *db, const char *n, int ttl)
{
    unsigned err = 0;

    if (sqlf(db, &err,
             "INSERT INTO `shared_locks` (`name`,`created`,`ttl`,"
             "`connection_id`,`lock_acquired`) VALUES (%s, unix_timestamp(), "
             "%d, connection_id(), false)",
             lit(db, n), ttl) == -2) {
        if (err != 1062)
            fprintf(stderr, "  php insert: error %u\n", err);
        /* Its clean-up of obsolete rows after a failed register. */
        sqlf(db, NULL,
             "DELETE FROM `shared_locks` WHERE name=%s AND "
             "(`created`+`ttl` < unix_timestamp() OR (`lock_acquired` AND "
             "IFNULL(IS_USED_LOCK(%s),0) != `connection_id`))",
             lit(db, n), lit(db, n));
        return 0;
    }
    if (sqlf(db, NULL, "SELECT GET_LOCK(%s, 0)", lit(db, n)) != 1) {
        sqlf(db, NULL,
             "DELETE FROM `shared_locks` WHERE `name`=%s AND "
             "`connection_id`=connection_id()",
             lit(db, n));
        return 0;
    }
    sqlf(db, NULL,
         "UPDATE `shared_locks` SET `lock_acquired`=true WHERE `name`=%s "
         "AND `connection_id`=connection_id()",
         lit(db, n));
    return 1;
}

/* its-mieger's release: 1 if its row was there. */
static int php_release(MYSQL *db, const char *n)
{
    long long rows = sqlf(db, NULL,
                          "DELETE FROM `shared_locks` WHERE `name`=%s AND "
                          "`connection_id`=connection_id()",
                          lit(db, n));

    sqlf(db, NULL, "SELECT RELEASE_LOCK(%s)", lit(db, n));
    return rows == 1;
}

static int alive(MYSQL *db)
{
    unsigned err = 0;

    return sqlf(db, &err, "SELECT 1") == 1;
}

/* A PHP holder blocks dlock until its TTL has passed; then dlock takes
 * over, KILLs the PHP session and no other. */
static void t_php_holds(dlock_store *s, const struct target *t)
{
    MYSQL *php = raw_connect(t), *bystander = raw_connect(t);
    dlock_options o = DLOCK_OPTIONS_INIT;
    const char *n = uniq("php-holds");
    dlock_lock *l = NULL;
    dlock_info info;
    long long t0, took;

    EXPECT(php_lock(php, n, 1) == 1);
    EXPECT(sqlf(bystander, NULL, "SELECT GET_LOCK(%s, 0)",
                lit(bystander, uniq("bystander"))) == 1);
    EXPECT_RC(dlock_acquire(&l, s, n, &o), DLOCK_BUSY);
    EXPECT_RC(test_status(s, n, &info), DLOCK_OK);
    EXPECT(info.held && info.holders == 1 && info.ttl_ms > 0);
    o.wait_ms = 6000;
    t0 = mono_ms();
    EXPECT_RC(dlock_acquire(&l, s, n, &o), DLOCK_OK);
    took = mono_ms() - t0;
    /* Obsolete for PHP once unix_timestamp() > created + 1: 1..2 s. */
    EXPECT(took >= 500 && took < 3500);
    EXPECT(dlock_fence(l) > 0);
    EXPECT(!alive(php));      /* the expired holder's session is gone */
    EXPECT(alive(bystander)); /* and nobody else's */
    EXPECT(sqlf(bystander, NULL, "SELECT IS_USED_LOCK(%s) = CONNECTION_ID()",
                lit(bystander, uniq("bystander"))) == 1);
    EXPECT_RC(dlock_release(l), DLOCK_OK);
    mysql_close(php);
    mysql_close(bystander);
}

/* dlock holds: the PHP library's register fails, its clean-up removes
 * nothing, its GET_LOCK fails; after dlock's release it gets the lock, and
 * while it holds it dlock is BUSY. */
static void t_dlock_holds(dlock_store *s, const struct target *t)
{
    MYSQL *php = raw_connect(t);
    dlock_options o = DLOCK_OPTIONS_INIT;
    const char *n = uniq("dlock-holds");
    dlock_lock *l = NULL;

    o.ttl_ms = 5000;
    EXPECT_RC(dlock_acquire(&l, s, n, &o), DLOCK_OK);
    EXPECT(php_lock(php, n, 10) == 0);
    EXPECT(sqlf(php, NULL,
                "SELECT COUNT(*) FROM `shared_locks` WHERE "
                "`name`=%s",
                lit(php, n)) == 1);
    EXPECT(sqlf(php, NULL, "SELECT GET_LOCK(%s, 0)", lit(php, n)) == 0);
    /* Its wait sees our lease in its own columns. */
    EXPECT(sqlf(php, NULL,
                "SELECT `created`+`ttl`-unix_timestamp() FROM "
                "`shared_locks` WHERE `name`=%s",
                lit(php, n)) >= 3);
    EXPECT_RC(dlock_release(l), DLOCK_OK);
    EXPECT(php_lock(php, n, 10) == 1);
    /* its assertTTL on its own row */
    EXPECT(sqlf(php, NULL,
                "SELECT 1 FROM `shared_locks` WHERE `name`=%s AND "
                "`connection_id`=connection_id() AND "
                "`created`+`ttl` > unix_timestamp()+%d",
                lit(php, n), 5) == 1);
    EXPECT_RC(dlock_acquire(&l, s, n, &o), DLOCK_BUSY);
    EXPECT(php_release(php, n) == 1);
    EXPECT_RC(dlock_acquire(&l, s, n, &o), DLOCK_OK);
    EXPECT_RC(dlock_release(l), DLOCK_OK);
    mysql_close(php);
}

/* Rows naming some other live session: an expired row whose session does
 * not hold the key is deleted, that session is left alone; a live row is
 * respected (BUSY), nobody killed. */
static void t_kill_only_the_holder(dlock_store *s, const struct target *t)
{
    MYSQL *other = raw_connect(t), *plant = raw_connect(t);
    dlock_options o = DLOCK_OPTIONS_INIT;
    const char *n = uniq("planted");
    long long id = sqlf(other, NULL, "SELECT CONNECTION_ID()");
    dlock_lock *l = NULL;

    /* Expired, "acquired", but its session holds another key only. */
    EXPECT(sqlf(other, NULL, "SELECT GET_LOCK(%s, 0)",
                lit(other, uniq("other-key"))) == 1);
    EXPECT(sqlf(plant, NULL,
                "INSERT INTO shared_locks (name, created, ttl, "
                "connection_id, lock_acquired) VALUES (%s, "
                "unix_timestamp() - 100, 1, %lld, 1)",
                lit(plant, n), id) == 1);
    EXPECT_RC(dlock_acquire(&l, s, n, &o), DLOCK_OK);
    EXPECT(alive(other));
    EXPECT_RC(dlock_release(l), DLOCK_OK);

    /* Live (lease not over) and its session holds the key: BUSY. */
    EXPECT(sqlf(other, NULL, "SELECT GET_LOCK(%s, 0)", lit(other, n)) == 1);
    EXPECT(sqlf(plant, NULL,
                "INSERT INTO shared_locks (name, created, ttl, "
                "connection_id, lock_acquired) VALUES (%s, "
                "unix_timestamp(), 30, %lld, 1)",
                lit(plant, n), id) == 1);
    EXPECT_RC(dlock_acquire(&l, s, n, &o), DLOCK_BUSY);
    EXPECT(alive(other));
    /* A row whose session died (GET_LOCK gone) is dead at once. */
    EXPECT(sqlf(other, NULL, "SELECT RELEASE_LOCK(%s)", lit(other, n)) == 1);
    EXPECT_RC(dlock_acquire(&l, s, n, &o), DLOCK_OK);
    EXPECT(alive(other));
    EXPECT_RC(dlock_release(l), DLOCK_OK);
    mysql_close(other);
    mysql_close(plant);
}

static int lost_fd = -1;
static void on_lost(dlock_lock *l, void *p)
{
    (void)l;
    (void)p;
    (void)!write(lost_fd, "L", 1);
}

/* A holder stopped past its lease: a contender has the lock within
 * lease + 1 s, the holder's session is gone, and the resumed holder is
 * told LOST. */
static void t_sigstop_holder(dlock_store *s, const char *url,
                             const struct target *t)
{
    const char *n = uniq("stopped");
    MYSQL *db = raw_connect(t);
    dlock_options w = DLOCK_OPTIONS_INIT;
    int p[2];
    char c = 0;
    long long t0, took, id;
    dlock_lock *l = NULL;
    struct pollfd pf;
    pid_t pid;

    if (pipe(p) != 0)
        exit(2);
    pid = fork();
    if (pid == 0) {
        dlock_options o = DLOCK_OPTIONS_INIT;
        dlock_store *cs;
        dlock_lock *cl;

        close(p[0]);
        lost_fd = p[1];
        o.ttl_ms = 1000;
        o.on_lost = on_lost;
        if (dlock_store_open(&cs, url) != DLOCK_OK ||
            dlock_acquire(&cl, cs, n, &o) != DLOCK_OK)
            _exit(3);
        (void)!write(p[1], "H", 1);
        for (;;)
            pause();
    }
    close(p[1]);
    EXPECT(read(p[0], &c, 1) == 1 && c == 'H');
    id = sqlf(db, NULL,
              "SELECT connection_id FROM shared_locks WHERE "
              "name = %s",
              lit(db, n));
    EXPECT(id > 0);
    kill(pid, SIGSTOP);
    t0 = mono_ms();
    w.wait_ms = 5000;
    EXPECT_RC(dlock_acquire(&l, s, n, &w), DLOCK_OK);
    took = mono_ms() - t0;
    EXPECT(took < 1000 + 1000);
    EXPECT(sqlf(db, NULL,
                "SELECT COUNT(*) FROM information_schema.PROCESSLIST "
                "WHERE ID = %lld",
                id) == 0);
    kill(pid, SIGCONT);
    pf.fd = p[0];
    pf.events = POLLIN;
    c = 0;
    EXPECT(poll(&pf, 1, 3000) == 1 && read(p[0], &c, 1) == 1 && c == 'L');
    EXPECT_RC(dlock_assert_ttl(l, 100), DLOCK_OK);
    EXPECT_RC(dlock_release(l), DLOCK_OK);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    close(p[0]);
    mysql_close(db);
}

/* Lease mode keeps a lock only in its row: it refuses the MEMORY table
 * session mode creates (a server restart forgets its rows, and a holder
 * would go on while another took its name), saying what to do. */
static void t_lease_refuses_memory(const char *url, const struct target *t)
{
    MYSQL *db = raw_connect(t);
    char lease_url[2048], engine[64];
    dlock_store *ls = NULL;

    if (db == NULL)
        return;
    sqls(db, engine, sizeof(engine),
         "SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA "
         "= DATABASE() AND TABLE_NAME = 'shared_locks'");
    EXPECT(strcasecmp(engine, "MEMORY") == 0); /* session mode made it */
    snprintf(lease_url, sizeof(lease_url), "%s%cmode=lease", url,
             strchr(url, '?') != NULL ? '&' : '?');
    EXPECT_RC(dlock_store_open(&ls, lease_url), DLOCK_EINVAL);
    EXPECT(ls == NULL);
    EXPECT(strstr(dlock_errmsg(), "MEMORY") != NULL &&
           strstr(dlock_errmsg(), "?table=") != NULL);
    EXPECT(strstr(dlock_errmsg(), t->password) == NULL);
    if (ls != NULL)
        dlock_store_close(ls);
    mysql_close(db);
}

/* Fences rise across modes on one name, on a table both modes use (made
 * InnoDB by lease mode, which opens it first).  Lease mode's durable
 * counter is planted far above the clock (as lease mode could have left
 * it after the server's clock was set back); session mode, which reads
 * only its own counter, must still hand out more than lease mode did:
 * lease mode passes each fence it takes on to session mode's counter. */
static void t_fences_across_modes(const char *url, const struct target *t)
{
    const unsigned long long far = 4000000000000000000ULL; /* ~2^61.8 */
    MYSQL *db = raw_connect(t);
    dlock_options o = DLOCK_OPTIONS_INIT;
    const char *n = uniq("fence-modes");
    char lease_url[2048], session_url[2048];
    dlock_store *ls = NULL, *s = NULL;
    dlock_lock *l = NULL;
    uint64_t f0 = 0, f1 = 0, f2 = 0;
    char sep = strchr(url, '?') != NULL ? '&' : '?';

    if (db == NULL)
        return;
    o.ttl_ms = 5000;
    o.auto_renew = 0;
    snprintf(lease_url, sizeof(lease_url), "%s%cmode=lease&table=mixed_locks",
             url, sep);
    snprintf(session_url, sizeof(session_url), "%s%ctable=mixed_locks", url,
             sep);
    EXPECT_RC(dlock_store_open(&ls, lease_url), DLOCK_OK);
    EXPECT_RC(dlock_store_open(&s, session_url), DLOCK_OK);
    if (ls == NULL || s == NULL) {
        if (ls != NULL)
            dlock_store_close(ls);
        if (s != NULL)
            dlock_store_close(s);
        mysql_close(db);
        return;
    }
    EXPECT_RC(dlock_acquire(&l, s, n, &o), DLOCK_OK);
    if (l != NULL) {
        f0 = dlock_fence(l);
        EXPECT_RC(dlock_release(l), DLOCK_OK);
    }
    EXPECT(sqlf(db, NULL,
                "INSERT INTO `mixed_locks_fences` (name, fence) VALUES "
                "(%s, %llu) ON DUPLICATE KEY UPDATE fence = %llu",
                lit(db, n), far, far) >= 1);
    EXPECT_RC(dlock_acquire(&l, ls, n, &o), DLOCK_OK);
    if (l != NULL) {
        f1 = dlock_fence(l);
        EXPECT_RC(dlock_release(l), DLOCK_OK);
    }
    EXPECT_RC(dlock_acquire(&l, s, n, &o), DLOCK_OK);
    if (l != NULL) {
        f2 = dlock_fence(l);
        EXPECT_RC(dlock_release(l), DLOCK_OK);
    }
    EXPECT(f0 > 0 && f0 < far);
    EXPECT(f1 > far);
    EXPECT(f2 > f1);
    if (!(f2 > f1))
        fprintf(stderr, "  session %llu, lease %llu, session again %llu\n",
                (unsigned long long)f0, (unsigned long long)f1,
                (unsigned long long)f2);
    dlock_store_close(ls);
    dlock_store_close(s);
    mysql_close(db);
}

/* ?max_conns=N: session mode pins a connection per held lock and per
 * wait; past N on a handle an acquire (try or wait) is ESTORE at once,
 * naming the limit, and takes nothing; a release, or a wait given up,
 * makes room.  Bad values are EINVAL. */
static void t_max_conns(const char *url, const struct target *t)
{
    MYSQL *db = raw_connect(t);
    dlock_options o = DLOCK_OPTIONS_INIT, w = DLOCK_OPTIONS_INIT;
    char u2[2048], third[256], other[256];
    dlock_store *s = NULL, *bad = NULL;
    dlock_lock *l[2] = {NULL, NULL}, *x = NULL;
    long long t0;

    o.ttl_ms = w.ttl_ms = 10000;
    w.wait_ms = 2000;
    snprintf(third, sizeof(third), "%s", uniq("maxc-3"));
    snprintf(other, sizeof(other), "%s", uniq("maxc-o"));
    snprintf(u2, sizeof(u2), "%s%cmax_conns=2", url,
             strchr(url, '?') != NULL ? '&' : '?');
    EXPECT_RC(dlock_store_open(&s, u2), DLOCK_OK);
    if (s == NULL) {
        mysql_close(db);
        return;
    }
    EXPECT_RC(dlock_acquire(&l[0], s, uniq("maxc-1"), &o), DLOCK_OK);
    EXPECT_RC(dlock_acquire(&l[1], s, uniq("maxc-2"), &o), DLOCK_OK);
    EXPECT_RC(dlock_acquire(&x, s, third, &o), DLOCK_ESTORE);
    EXPECT(strstr(dlock_errmsg(), "max_conns=2") != NULL);
    t0 = mono_ms();
    EXPECT_RC(dlock_acquire(&x, s, third, &w), DLOCK_ESTORE);
    EXPECT(mono_ms() - t0 < 1000); /* refused, not waited for */
    /* Nothing was taken for it. */
    EXPECT(sqlf(db, NULL, "SELECT IS_FREE_LOCK(%s)", lit(db, third)) == 1);
    EXPECT_RC(dlock_assert_ttl(l[0], 1000), DLOCK_OK);
    EXPECT_RC(dlock_assert_ttl(l[1], 1000), DLOCK_OK);
    /* A release makes room. */
    EXPECT_RC(dlock_release(l[1]), DLOCK_OK);
    EXPECT_RC(dlock_acquire(&x, s, third, &o), DLOCK_OK);
    EXPECT_RC(dlock_release(x), DLOCK_OK);
    /* A wait given up gives its connection back. */
    EXPECT(sqlf(db, NULL, "SELECT GET_LOCK(%s, 0)", lit(db, other)) == 1);
    w.wait_ms = 100;
    EXPECT_RC(dlock_acquire(&x, s, other, &w), DLOCK_BUSY);
    EXPECT_RC(dlock_acquire(&x, s, other, &w), DLOCK_BUSY);
    EXPECT(sqlf(db, NULL, "SELECT RELEASE_LOCK(%s)", lit(db, other)) == 1);
    EXPECT_RC(dlock_acquire(&x, s, third, &o), DLOCK_OK);
    EXPECT_RC(dlock_release(x), DLOCK_OK);
    EXPECT_RC(dlock_release(l[0]), DLOCK_OK);
    dlock_store_close(s);
    snprintf(u2, sizeof(u2), "%s%cmax_conns=-1", url,
             strchr(url, '?') != NULL ? '&' : '?');
    EXPECT_RC(dlock_store_open(&bad, u2), DLOCK_EINVAL);
    snprintf(u2, sizeof(u2), "%s%cmax_conns=many", url,
             strchr(url, '?') != NULL ? '&' : '?');
    EXPECT_RC(dlock_store_open(&bad, u2), DLOCK_EINVAL);
    mysql_close(db);
}

int main(int argc, char **argv)
{
    const char *url = test_url(argc, argv);
    struct target t;
    dlock_store *s;

    if (parse_target(url, &t) != 0) {
        fprintf(stderr, "cannot parse the URL\n");
        return 2;
    }
    if (dlock_store_open(&s, url) != DLOCK_OK) {
        fprintf(stderr, "open: %s\n", dlock_errmsg());
        return 2;
    }
    t_php_holds(s, &t);
    t_dlock_holds(s, &t);
    t_kill_only_the_holder(s, &t);
    t_sigstop_holder(s, url, &t);
    t_lease_refuses_memory(url, &t);
    t_fences_across_modes(url, &t);
    t_max_conns(url, &t);
    dlock_store_close(s);
    printf("interop: %d failure(s)\n", failures);
    return failures != 0;
}
