/*
 * handoff_sqlite.c - SQLite's hand-off floor (handoff.h), with bare
 * sqlite3 on a file of its own beside the URL's (PATH-handoff-floor, WAL,
 * synchronous=FULL as the store's, so every commit is durable): the take
 * is one BEGIN IMMEDIATE transaction that sets the lock row's holder and
 * bumps its fence if the row is free; the release is one that frees it.
 * The waiter sleeps on a FIFO of its own in a directory beside the file
 * (the store's wake-up, src/stores/sqlite/wake.c, without its checks);
 * the releaser, after its commit, writes one byte into the oldest
 * waiter's FIFO, and the woken waiter takes the row with its own
 * transaction.  Two durable commits and one FIFO wake-up per cycle.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "handoff.h"

struct sq_floor {
    sqlite3 *db;
    sqlite3_stmt *take, *give;
    char dir[4400], fifo[4500];
    int fd; /* our FIFO while we wait, else -1 */
    unsigned seq;
};

/* The file path of a sqlite:// URL, with a suffix. */
static int floor_path(const char *url, const char *suffix, char *out, size_t n)
{
    const char *p = strstr(url, "://");
    size_t len;

    if (p == NULL || (p = strchr(p + 3, '/')) == NULL)
        return -1;
    len = strcspn(p, "?");
    return (size_t)snprintf(out, n, "%.*s%s", (int)len, p, suffix) < n ? 0 : -1;
}

static int sq_exec(sqlite3 *db, const char *sql)
{
    if (sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK)
        return 0;
    fprintf(stderr, "dlock-bench: hand-off floor: %s: %s\n", sql,
            sqlite3_errmsg(db));
    return -1;
}

static int sq_setup(const char *url)
{
    char path[4300];
    sqlite3 *db = NULL;
    int rc;

    if (floor_path(url, "-handoff-floor", path, sizeof(path)) != 0)
        return -1;
    if (sqlite3_open(path, &db) != SQLITE_OK) {
        sqlite3_close(db);
        return -1;
    }
    sqlite3_busy_timeout(db, 5000);
    rc = sq_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                     "CREATE TABLE IF NOT EXISTS floor_lock (name TEXT "
                     "PRIMARY KEY, holder INTEGER NOT NULL, fence INTEGER "
                     "NOT NULL)");
    sqlite3_close(db);
    strcat(path, "-wake");
    if (rc == 0 && mkdir(path, 0700) != 0 && errno != EEXIST)
        rc = -1;
    return rc;
}

static void sq_teardown(const char *url)
{
    char path[4300];
    DIR *d;
    struct dirent *e;

    if (floor_path(url, "-handoff-floor-wake", path, sizeof(path)) != 0)
        return;
    d = opendir(path);
    if (d != NULL) {
        while ((e = readdir(d)) != NULL)
            if (e->d_name[0] != '.')
                (void)unlinkat(dirfd(d), e->d_name, 0);
        closedir(d);
    }
    rmdir(path);
}

static void sq_close(void *p)
{
    struct sq_floor *f = p;

    sqlite3_finalize(f->take);
    sqlite3_finalize(f->give);
    sqlite3_close(f->db);
    free(f);
}

static void *sq_open(const char *url, const char *name)
{
    struct sq_floor *f = calloc(1, sizeof(*f));
    char path[4300];
    char sql[512];

    if (f == NULL)
        return NULL;
    f->fd = -1;
    if (floor_path(url, "-handoff-floor", path, sizeof(path)) != 0 ||
        sqlite3_open(path, &f->db) != SQLITE_OK) {
        sq_close(f);
        return NULL;
    }
    snprintf(f->dir, sizeof(f->dir), "%s-wake", path);
    sqlite3_busy_timeout(f->db, 5000);
    snprintf(sql, sizeof(sql),
             "PRAGMA synchronous=FULL; INSERT OR IGNORE INTO floor_lock "
             "VALUES ('%s', 0, 0)",
             name);
    if (sq_exec(f->db, sql) != 0 ||
        sqlite3_prepare_v2(f->db,
                           "UPDATE floor_lock SET holder = ?1, fence = fence "
                           "+ 1 WHERE name = ?2 AND holder = 0 RETURNING fence",
                           -1, &f->take, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(f->db,
                           "UPDATE floor_lock SET holder = 0 WHERE name = ?2 "
                           "AND holder = ?1",
                           -1, &f->give, NULL) != SQLITE_OK) {
        sq_close(f);
        return NULL;
    }
    sqlite3_bind_int64(f->take, 1, (sqlite3_int64)getpid());
    sqlite3_bind_text(f->take, 2, name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(f->give, 1, (sqlite3_int64)getpid());
    sqlite3_bind_text(f->give, 2, name, -1, SQLITE_TRANSIENT);
    return f;
}

/* One durable transaction around s: 1 if it changed the row, 0 if not,
 * -1 on an error. */
static int sq_tx(struct sq_floor *f, sqlite3_stmt *s)
{
    int rc, changed = 0;

    if (sq_exec(f->db, "BEGIN IMMEDIATE") != 0)
        return -1;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW)
        changed = 1;
    sqlite3_reset(s);
    if (rc != SQLITE_DONE) {
        sq_exec(f->db, "ROLLBACK");
        return -1;
    }
    if (sqlite3_changes(f->db) > 0)
        changed = 1;
    return sq_exec(f->db, "COMMIT") == 0 ? changed : -1;
}

static int sq_acquire(void *p)
{
    struct sq_floor *f = p;
    char tmp[4500];
    struct timespec ts;
    int rc = sq_tx(f, f->take);

    if (rc != 0)
        return rc > 0 ? 0 : -1;
    /* Our FIFO under a name that sorts by arrival, then look again. */
    clock_gettime(CLOCK_BOOTTIME, &ts);
    snprintf(tmp, sizeof(tmp), "%s/t.%d", f->dir, (int)getpid());
    snprintf(f->fifo, sizeof(f->fifo), "%s/w.%020lld.%d.%u", f->dir,
             (long long)ts.tv_sec * 1000000000 + ts.tv_nsec, (int)getpid(),
             f->seq++);
    unlink(tmp);
    if (mkfifo(tmp, 0600) != 0 ||
        (f->fd = open(tmp, O_RDWR | O_NONBLOCK | O_CLOEXEC)) < 0 ||
        rename(tmp, f->fifo) != 0) {
        perror("dlock-bench: hand-off floor: fifo");
        return -1;
    }
    while ((rc = sq_tx(f, f->take)) == 0) {
        struct pollfd pf = {f->fd, POLLIN, 0};
        char buf[64];

        /* A lost wake-up would show as a 1 s hand-off, not a hang. */
        if (poll(&pf, 1, 1000) > 0)
            while (read(f->fd, buf, sizeof(buf)) > 0)
                ;
    }
    unlink(f->fifo);
    close(f->fd);
    f->fd = -1;
    return rc > 0 ? 0 : -1;
}

static int sq_release(void *p)
{
    struct sq_floor *f = p;
    char best[256] = "", path[4800];
    struct dirent *e;
    DIR *d;

    if (sq_tx(f, f->give) != 1)
        return -1;
    d = opendir(f->dir);
    if (d == NULL)
        return -1;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] == 'w' && strlen(e->d_name) < sizeof(best) &&
            (best[0] == '\0' || strcmp(e->d_name, best) < 0))
            snprintf(best, sizeof(best), "%s", e->d_name);
    closedir(d);
    if (best[0] != '\0') {
        int fd;

        snprintf(path, sizeof(path), "%s/%s", f->dir, best);
        fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        if (fd >= 0) {
            (void)!write(fd, "w", 1);
            close(fd);
        }
    }
    return 0;
}

const struct handoff_ops handoff_floor_sqlite = {
    "BEGIN IMMEDIATE; UPDATE the lock row (holder, fence + 1) if free; "
    "COMMIT (durable); a FIFO per waiter, the oldest woken by one byte "
    "after the release's durable commit",
    sq_setup,
    sq_open,
    sq_acquire,
    sq_release,
    sq_close,
    sq_teardown};
