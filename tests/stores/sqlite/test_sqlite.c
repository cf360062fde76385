/*
 * test_sqlite.c - what only the SQLite store promises: a holder whose
 * process is gone (or whose pid now belongs to another process, or whose
 * row is from an earlier boot) is taken over at once; a live holder keeps
 * its lease, also when its row leaves something unknown; SQLite's "database is
 * locked" never reaches the caller, not even when many processes open one new
 * file at once; a file made before elections gains dlock_leaders on open, and
 * a leader value row dlock could not have written is no value.
 *
 *     test_sqlite DBFILE
 *
 * Rows are planted with the sqlite3 API exactly as the store writes them,
 * with one field changed, so each case isolates one rule.
 */
#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "dlock.h"

static const char *path;
static char url[8192];

static sqlite3 *raw(void)
{
    sqlite3 *db;

    if (sqlite3_open(path, &db) != SQLITE_OK)
        exit(2);
    sqlite3_busy_timeout(db, 5000);
    return db;
}

/* Copy the row of a lock we hold to a fake owner under `name`, with one
 * column overridden (`set`, an SQL assignment list), then drop ours. */
static void plant(const char *name, const char *set)
{
    dlock_store *s;
    dlock_lock *l;
    dlock_options o = DLOCK_OPTIONS_INIT;
    char sql[1024];
    sqlite3 *db = raw();

    o.ttl_ms = 60000;
    o.auto_renew = 0;
    if (dlock_store_open(&s, url) != DLOCK_OK ||
        dlock_acquire(&l, s, name, &o) != DLOCK_OK)
        exit(3);
    snprintf(sql, sizeof(sql),
             "UPDATE dlock_locks SET owner = 'planted', %s WHERE name = '%s'",
             set, name);
    if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK) {
        fprintf(stderr, "plant: %s\n", sqlite3_errmsg(db));
        exit(4);
    }
    sqlite3_close(db);
    /* Our row is gone (renamed): release says LOST and deletes nothing. */
    EXPECT(dlock_release(l) == DLOCK_LOST);
    dlock_store_close(s);
}

static int try_once(const char *name)
{
    dlock_store *s;
    dlock_lock *l = NULL;
    dlock_options o = DLOCK_OPTIONS_INIT;
    int rc;

    if (dlock_store_open(&s, url) != DLOCK_OK)
        exit(5);
    rc = dlock_acquire(&l, s, name, &o);
    dlock_release(l);
    dlock_store_close(s);
    return rc;
}

/* A holder whose main thread has ended (pthread_exit) while another
 * thread holds the lock: /proc/PID/stat shows the thread group leader as
 * a zombie, yet the process lives and renews.  Cannot tell is not dead:
 * a contender must see it BUSY.  Runs before this process has threads,
 * because it forks. */
struct zl {
    int ready, go;
};

static void *zl_hold(void *arg)
{
    struct zl *z = arg;
    dlock_store *s;
    dlock_lock *l = NULL;
    dlock_options o = DLOCK_OPTIONS_INIT;
    char c;
    int rc;

    o.ttl_ms = 60000;
    if (dlock_store_open(&s, url) != DLOCK_OK ||
        dlock_acquire(&l, s, "zombie-leader", &o) != DLOCK_OK)
        _exit(3);
    (void)!write(z->ready, "u", 1);
    (void)!read(z->go, &c, 1); /* EOF: the test is done */
    rc = dlock_release(l);
    dlock_store_close(s);
    _exit(rc == DLOCK_OK ? 0 : 1);
}

static void test_zombie_leader(void)
{
    int ready[2], go[2], st = -1, fd;
    char c = 0, path_stat[64], buf[512], *p, state = '?';
    static struct zl z;
    pthread_t t;
    pid_t pid;
    ssize_t n;

    if (pipe(ready) != 0 || pipe(go) != 0)
        exit(8);
    pid = fork();
    if (pid < 0)
        exit(8);
    if (pid == 0) {
        close(ready[0]);
        close(go[1]);
        z.ready = ready[1];
        z.go = go[0];
        if (pthread_create(&t, NULL, zl_hold, &z) != 0)
            _exit(4);
        pthread_exit(NULL);
    }
    close(ready[1]);
    close(go[0]);
    EXPECT(read(ready[0], &c, 1) == 1 && c == 'u');
    /* Not vacuous: the holder's /proc entry does say zombie. */
    snprintf(path_stat, sizeof(path_stat), "/proc/%d/stat", (int)pid);
    for (int i = 0; i < 1000 && state != 'Z'; i++) {
        fd = open(path_stat, O_RDONLY);
        n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
        if (fd >= 0)
            close(fd);
        if (n > 0) {
            buf[n] = '\0';
            p = strrchr(buf, ')');
            if (p != NULL)
                sscanf(p + 1, " %c", &state);
        }
        if (state != 'Z')
            usleep(1000); /* the main thread is still on its way out */
    }
    EXPECT(state == 'Z');
    EXPECT(try_once("zombie-leader") == DLOCK_BUSY);
    close(go[1]);
    EXPECT(waitpid(pid, &st, 0) == pid);
    /* The holder still had its lock: release was not LOST. */
    EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    close(ready[0]);

    /* A real zombie (exited, not yet reaped) is dead: taken at once. */
    if (pipe(ready) != 0)
        exit(8);
    pid = fork();
    if (pid < 0)
        exit(8);
    if (pid == 0) {
        dlock_store *s;
        dlock_lock *l = NULL;
        dlock_options o = DLOCK_OPTIONS_INIT;

        close(ready[0]);
        o.ttl_ms = 60000;
        o.auto_renew = 0;
        if (dlock_store_open(&s, url) != DLOCK_OK ||
            dlock_acquire(&l, s, "zombie", &o) != DLOCK_OK)
            _exit(3);
        _exit(0); /* never released */
    }
    close(ready[1]);
    EXPECT(read(ready[0], &c, 1) == 0); /* EOF: it is exiting */
    close(ready[0]);
    /* EOF comes when the kernel closes its files, before the process
     * becomes a zombie: until then it is still exiting and its /proc
     * entry reads as alive (CI once took it there).  WNOWAIT waits for
     * the zombie without reaping it. */
    {
        siginfo_t si;

        memset(&si, 0, sizeof(si));
        EXPECT(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT) == 0 &&
               si.si_pid == pid);
    }
    EXPECT(try_once("zombie") == DLOCK_OK);
    EXPECT(waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
           WEXITSTATUS(st) == 0);
}

static void test_dead_holders(void)
{
    char set[256];
    pid_t pid;
    int status;

    /* A live holder (this very process, right start time) keeps it. */
    plant("live", "pid = pid");
    EXPECT(try_once("live") == DLOCK_BUSY);

    /* Its pid now belongs to another process: start time differs. */
    plant("reused", "pid_start = pid_start + 12345");
    EXPECT(try_once("reused") == DLOCK_OK);

    /* A process that exited. */
    pid = fork();
    if (pid == 0)
        _exit(0);
    waitpid(pid, &status, 0);
    snprintf(set, sizeof(set), "pid = %d", (int)pid);
    plant("exited", set);
    EXPECT(try_once("exited") == DLOCK_OK);

    /* A row from an earlier boot, whatever its lease says. */
    plant("old-boot", "boot_id = 'another-boot'");
    EXPECT(try_once("old-boot") == DLOCK_OK);

    /* Cannot tell is not dead (issue 33): a holder that could not read
     * its boot id (no /proc) wrote "unknown"; that is no other boot, and
     * the live holder keeps its lease.  So does one that could not read
     * its own start time (0): there is nothing to compare. */
    plant("unknown-boot", "boot_id = 'unknown'");
    EXPECT(try_once("unknown-boot") == DLOCK_BUSY);
    plant("no-start", "pid_start = 0");
    EXPECT(try_once("no-start") == DLOCK_BUSY);
    /* ...but with a dead pid it is dead all the same. */
    snprintf(set, sizeof(set), "boot_id = 'unknown', pid = %d", (int)pid);
    plant("unknown-boot-exited", set);
    EXPECT(try_once("unknown-boot-exited") == DLOCK_OK);

    /* Another pid namespace (a container): its pids mean nothing here, so
     * only the lease counts, even though pid 1 <-> our start time differ. */
    plant("other-ns", "pid_ns = 'pid:[1]', pid = 1");
    EXPECT(try_once("other-ns") == DLOCK_BUSY);

    /* Another host sharing the file: lease only. */
    plant("other-host", "host = 'elsewhere', pid = 999999");
    EXPECT(try_once("other-host") == DLOCK_BUSY);
}

/* A long write transaction from outside: an acquire with a short wait is
 * BUSY (not "database is locked"); once it ends, acquire works. */
static void test_write_lock_held_outside(void)
{
    sqlite3 *db = raw();
    dlock_store *s;
    dlock_lock *l = NULL;
    dlock_options o = DLOCK_OPTIONS_INIT;
    struct timespec t0, t1;
    long ms;

    EXPECT(dlock_store_open(&s, url) == DLOCK_OK);
    EXPECT(sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK);
    o.wait_ms = 300;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    EXPECT(dlock_acquire(&l, s, "write-locked", &o) == DLOCK_BUSY);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
    EXPECT(ms >= 250 && ms < 2000);
    EXPECT(strstr(dlock_errmsg(), "locked") == NULL ||
           strstr(dlock_errmsg(), "database is locked") == NULL);
    EXPECT(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK);
    o.wait_ms = 0;
    EXPECT(dlock_acquire(&l, s, "write-locked", &o) == DLOCK_OK);
    EXPECT(dlock_release(l) == DLOCK_OK);
    dlock_store_close(s);
    sqlite3_close(db);
}

struct waiter {
    dlock_store *s;
    int64_t wait_ms;
    int rc;
};

static void *waiter_main(void *arg)
{
    struct waiter *w = arg;
    dlock_options o = DLOCK_OPTIONS_INIT;
    dlock_lock *l = NULL;

    o.wait_ms = w->wait_ms;
    w->rc = dlock_acquire(&l, w->s, "edge-wait", &o);
    if (w->rc == DLOCK_OK)
        w->rc = dlock_release(l);
    return NULL;
}

/* Arguments at the edges: a wait near INT64_MAX is a wait forever (the
 * deadline overflowed: BUSY at once, or an abort under UBSan), whether
 * the waiter comes before or after the release; a NULL name is called
 * NULL, not empty. */
static void test_edges(void)
{
    static const int64_t waits[] = {INT64_MAX, INT64_MAX - 1,
                                    365LL * 24 * 3600 * 1000 + 1};
    dlock_store *s, *s2;
    dlock_lock *l = NULL;
    dlock_options o = DLOCK_OPTIONS_INIT;

    EXPECT(dlock_store_open(&s, url) == DLOCK_OK);
    EXPECT(dlock_store_open(&s2, url) == DLOCK_OK);
    for (size_t i = 0; i < sizeof(waits) / sizeof(waits[0]); i++) {
        struct waiter w = {s2, waits[i], -100};
        pthread_t t;

        EXPECT(dlock_acquire(&l, s, "edge-wait", &o) == DLOCK_OK);
        EXPECT(pthread_create(&t, NULL, waiter_main, &w) == 0);
        EXPECT(dlock_release(l) == DLOCK_OK);
        pthread_join(t, NULL);
        if (w.rc != DLOCK_OK)
            fprintf(stderr, "  wait_ms %lld: %s\n", (long long)waits[i],
                    dlock_strerror(w.rc));
        EXPECT(w.rc == DLOCK_OK);
    }
    EXPECT(dlock_acquire_len(&l, s, NULL, 3, &o) == DLOCK_EINVAL);
    EXPECT(strstr(dlock_errmsg(), "NULL") != NULL);
    EXPECT(dlock_acquire_len(&l, s, "", 0, &o) == DLOCK_EINVAL);
    EXPECT(strstr(dlock_errmsg(), "empty") != NULL);
    dlock_store_close(s);
    dlock_store_close(s2);
}

/* Processes that open the same new file at the same moment all get the
 * store: the first open turns the file into WAL, and SQLite answers the
 * others "database is locked" without calling the busy handler.  Runs
 * first, while this process has no threads, because it forks. */
static void test_fresh_file_race(void)
{
    enum { ROUNDS = 40, PROCS = 8 };
    char fresh[4200], side[4300];
    int bad = 0;

    snprintf(fresh, sizeof(fresh), "%s.fresh", path);
    for (int r = 0; r < ROUNDS; r++) {
        int go[2];
        pid_t kids[PROCS];

        unlink(fresh);
        snprintf(side, sizeof(side), "%s-wal", fresh);
        unlink(side);
        snprintf(side, sizeof(side), "%s-shm", fresh);
        unlink(side);
        if (pipe(go) != 0)
            exit(7);
        for (int i = 0; i < PROCS; i++) {
            kids[i] = fork();
            if (kids[i] < 0)
                exit(7);
            if (kids[i] == 0) {
                char u[4300], c;
                dlock_store *s;

                close(go[1]);
                (void)!read(go[0], &c, 1); /* EOF: everyone starts */
                snprintf(u, sizeof(u), "sqlite://%s", fresh);
                if (dlock_store_open(&s, u) != DLOCK_OK) {
                    fprintf(stderr, "round %d: %s\n", r, dlock_errmsg());
                    _exit(1);
                }
                dlock_store_close(s);
                _exit(0);
            }
        }
        close(go[0]);
        close(go[1]);
        for (int i = 0; i < PROCS; i++) {
            int st;

            if (waitpid(kids[i], &st, 0) != kids[i] || !WIFEXITED(st) ||
                WEXITSTATUS(st) != 0)
                bad++;
        }
    }
    EXPECT(bad == 0);
    unlink(fresh);
}

/* Not a database: a clear error, no crash. */
static void test_garbage_file(void)
{
    char bad[4200];
    FILE *f;
    dlock_store *s = NULL;
    int rc;

    snprintf(bad, sizeof(bad), "%s.garbage", path);
    f = fopen(bad, "w");
    if (f == NULL)
        exit(6);
    for (int i = 0; i < 4096; i++)
        fputc("not a database "[i % 15], f);
    fclose(f);
    snprintf(url, sizeof(url), "sqlite://%s", bad);
    rc = dlock_store_open(&s, url);
    EXPECT(rc == DLOCK_EUNAVAIL || rc == DLOCK_ESTORE);
    EXPECT(s == NULL);
    EXPECT(strstr(dlock_errmsg(), "not a database") != NULL);
    unlink(bad);
    snprintf(url, sizeof(url), "sqlite://%s", path);
}

/* A leader read back: the value shown (NULL for none) and whether the
 * name is held. */
static char *leader_value(dlock_store *s, const char *name, int *held)
{
    dlock_info *info = NULL;
    char *v = NULL;

    *held = -1;
    if (dlock_leader(&info, s, name) != DLOCK_OK) {
        fprintf(stderr, "  dlock_leader(%s): %s\n", name, dlock_errmsg());
        return NULL;
    }
    *held = info->held;
    if (info->value != NULL) {
        v = malloc(info->value_len + 1);
        if (v == NULL)
            exit(7);
        memcpy(v, info->value, info->value_len + 1);
    }
    dlock_info_free(info);
    return v;
}

/* A file made before elections (every table but dlock_leaders, as dlock
 * up to issue 44 made them) gains the table on its next open, and
 * elections work on it; `dlock init --print` (ddl) shows the table. */
static void test_old_file_elect(void)
{
    char old[4200], oldurl[4300], *v;
    dlock_store *s;
    dlock_lock *l = NULL;
    sqlite3 *db;
    int held, n = -1;
    sqlite3_stmt *st;

    snprintf(old, sizeof(old), "%s.pre-elect", path);
    unlink(old);
    snprintf(oldurl, sizeof(oldurl), "sqlite://%s", old);
    EXPECT(dlock_store_open(&s, oldurl) == DLOCK_OK);
    dlock_store_close(s);
    if (sqlite3_open(old, &db) != SQLITE_OK)
        exit(2);
    EXPECT(sqlite3_exec(db, "DROP TABLE dlock_leaders", NULL, NULL, NULL) ==
           SQLITE_OK);
    sqlite3_close(db);
    EXPECT(dlock_store_open(&s, oldurl) == DLOCK_OK);
    EXPECT(dlock_elect(&l, s, "old-elect", "here", NULL) == DLOCK_OK);
    v = leader_value(s, "old-elect", &held);
    EXPECT(held == 1 && v != NULL && strcmp(v, "here") == 0);
    free(v);
    EXPECT(dlock_release(l) == DLOCK_OK);
    dlock_store_close(s);
    if (sqlite3_open(old, &db) != SQLITE_OK)
        exit(2);
    if (sqlite3_prepare_v2(db,
                           "SELECT count(*) FROM sqlite_schema WHERE type = "
                           "'table' AND name = 'dlock_leaders'",
                           -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    EXPECT(n == 1);
    unlink(old);
}

/* Leader value rows dlock could not have written (anyone who can write
 * the file can plant them, under the holder's own fence): a BLOB, a value
 * over DLOCK_VALUE_MAX, one that is not UTF-8, one with a NUL, a fence
 * that is not a positive integer.  Each is no value: the leader shows
 * none, nothing crashes; a well-formed row under the holder's fence is
 * shown, so the planting itself is right. */
static void test_planted_values(void)
{
    static const char *const bad[] = {
        "x'68657265'",               /* a BLOB */
        "printf('%.*c', 4097, 'x')", /* over DLOCK_VALUE_MAX */
        "CAST(x'c3' AS TEXT)",       /* not UTF-8 */
        "CAST(x'610062' AS TEXT)",   /* a NUL inside */
    };
    dlock_store *s;
    dlock_lock *l = NULL;
    sqlite3 *db = raw();
    char sql[512], fnum[32], *v;
    int held;

    EXPECT(dlock_store_open(&s, url) == DLOCK_OK);
    EXPECT(dlock_elect(&l, s, "planted-value", "real", NULL) == DLOCK_OK);
    snprintf(fnum, sizeof(fnum), "%llu", (unsigned long long)dlock_fence(l));
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]) + 2; i++) {
        const char *fence = fnum; /* the holder's */
        const char *value = i < sizeof(bad) / sizeof(bad[0]) ? bad[i] : "'ok'";

        if (i == sizeof(bad) / sizeof(bad[0]))
            fence = "'1x'"; /* TEXT ('1' would be made 1) */
        snprintf(sql, sizeof(sql),
                 "UPDATE dlock_leaders SET fence = %s, value = %s WHERE "
                 "name = 'planted-value'",
                 fence, value);
        if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK) {
            fprintf(stderr, "  plant %s: %s\n", sql, sqlite3_errmsg(db));
            failures++;
            continue;
        }
        v = leader_value(s, "planted-value", &held);
        EXPECT(held == 1);
        if (i == sizeof(bad) / sizeof(bad[0]) + 1) {
            EXPECT(v != NULL && strcmp(v, "ok") == 0);
        } else {
            if (v != NULL)
                fprintf(stderr, "  planted %s shown as a value\n", sql);
            EXPECT(v == NULL);
        }
        free(v);
    }
    sqlite3_close(db);
    EXPECT(dlock_release(l) == DLOCK_OK);
    dlock_store_close(s);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DBFILE\n", argv[0]);
        return 2;
    }
    path = argv[1];
    unlink(path);
    snprintf(url, sizeof(url), "sqlite://%s", path);
    test_fresh_file_race();
    test_zombie_leader();
    test_dead_holders();
    test_write_lock_held_outside();
    test_garbage_file();
    test_edges();
    test_old_file_elect();
    test_planted_values();
    if (failures == 0)
        printf("sqlite store: all passed\n");
    return failures != 0;
}
