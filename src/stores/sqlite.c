/*
 * sqlite.c - the embedded store: a lock table in a SQLite file.
 *
 * sqlite:///absolute/path/file.db[?timeout=5s]
 *
 * One machine, many processes.  Every change runs in a short
 * BEGIN IMMEDIATE transaction on a WAL database, so writers queue on
 * SQLite's write lock for microseconds and readers never block.  SQLite's
 * own "database is locked" never reaches the user: a private busy handler
 * waits up to the operation's deadline, and running out of it on an
 * acquire attempt is simply DLOCK_BUSY.
 *
 * Leases are kept on the host's CLOCK_BOOTTIME (which, unlike
 * CLOCK_MONOTONIC, keeps counting across suspend), in ms, together with
 * the kernel's boot id.  A process in a time namespace (a container
 * restored by CRIU or podman, `unshare --time`) reads a CLOCK_BOOTTIME
 * shifted by its namespace's offset: it subtracts that offset, read from
 * /proc/self/timens_offsets (0 in the initial namespace or on a kernel
 * without time namespaces), so every process of the machine writes and
 * judges leases on the one clock of the initial namespace, the clock
 * dlock 0.2 used there (a file may be shared by 0.2 and 0.3 processes
 * while they are upgraded).  A process that cannot tell its offset (no
 * /proc) cannot relate its clock to anyone's lease: opening the store
 * fails (DLOCK_EUNAVAIL, "mount /proc") rather than judge leases on a
 * clock it cannot vouch for.  It writes no rows, so it blocks no one.
 *
 * Cannot tell is not dead.  A row is taken as left by an earlier boot
 * only when both boot ids are known and differ (without
 * /proc/sys/kernel/random/boot_id, as under `subset=pid`, the boot id is
 * "unknown" and only the lease and the pid can end a row).  A holder
 * records its host, pid, pid namespace and process start time (on the
 * host's boot clock too, as /proc shifts it by the reader's offset).  A
 * contender in the same pid namespace deletes the row at once instead of
 * waiting for the lease only on proof that the holder is gone, the fast
 * path for `kill -9`: kill(pid, 0) answers ESRCH, or /proc/PID/stat, read
 * from a /proc of our own pid namespace (NSpid in /proc/self/status shows
 * one level, not merely the number getpid() gives), shows a zombie with
 * no thread left (a process whose main thread called pthread_exit() shows
 * as a zombie while its other threads run) or another start time (another
 * process under the same pid).  A /proc entry that is
 * missing proves nothing: /proc mounted with hidepid=2 (systemd
 * ProtectProc=invisible) hides other users' processes, and kill() then
 * answers EPERM for them, which is "alive".  Anything else keeps its
 * lease until the lease ends.
 *
 * Whoever can write the file can break any lock in it, so the default
 * store (dlock_default_url()) is one file per user, 0600 in a 0700
 * directory that must be that user's own (privdir.c).  A store named
 * explicitly keeps the permissions its admin gave it; shared between
 * users, it is as safe as those.  Either way dlock never follows a
 * symbolic link at the file or its -wal/-shm/-journal, and a row is read
 * as a lease only if it looks like one dlock could have written: an
 * expires_at that is not an integer or lies further ahead than the longest
 * lease dlock grants is treated as expired, so a planted row cannot hold
 * a name forever.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sqlite_path.h"
#include "sqlite_runs.h"
#include "cancel.h"
#include "clock.h"
#include "errors.h"
#include "names.h"
#include "process.h"
#include "random.h"
#include "store.h"
#include "strutil.h"
#include "url.h"

#define DEFAULT_OP_TIMEOUT_MS 5000

#define DDL                                                                  \
    "CREATE TABLE IF NOT EXISTS dlock_locks (\n"                             \
    "    name        TEXT    NOT NULL,\n"                                    \
    "    owner       TEXT    NOT NULL,  -- random 128-bit token, hex\n"      \
    "    shared      INTEGER NOT NULL,\n"                                    \
    "    fence       INTEGER NOT NULL,\n"                                    \
    "    expires_at  INTEGER NOT NULL,  -- host CLOCK_BOOTTIME ms\n"         \
    "    boot_id     TEXT    NOT NULL,\n"                                    \
    "    acquired_at INTEGER NOT NULL,  -- Unix ms\n"                        \
    "    host        TEXT    NOT NULL,\n"                                    \
    "    pid         INTEGER NOT NULL,\n"                                    \
    "    pid_start   INTEGER NOT NULL,  -- starttime, host ticks\n"          \
    "    pid_ns      TEXT    NOT NULL,\n"                                    \
    "    \"limit\"     INTEGER NOT NULL DEFAULT 1, -- 1 lock, N semaphore\n"   \
    "    PRIMARY KEY (name, owner)\n"                                        \
    ") WITHOUT ROWID;\n"                                                     \
    "CREATE TABLE IF NOT EXISTS dlock_fences (\n"                            \
    "    name  TEXT    PRIMARY KEY,\n"                                       \
    "    fence INTEGER NOT NULL      -- highest fence handed out\n"          \
    ") WITHOUT ROWID;\n" DLOCK_SQLITE_RUNS_DDL

/* Files made by dlock 0.1 and 0.2 have no limit column: init() adds it.
 * Their rows (and those of a 0.2 client still running, which knows no
 * semaphores and takes any row as a conflict) are locks: limit 1. */
#define MIGRATE_LIMIT                                                        \
    "ALTER TABLE dlock_locks ADD COLUMN \"limit\" INTEGER NOT NULL "         \
    "DEFAULT 1"

/* Statements, prepared once per handle. */
enum {
    Q_BEGIN,
    Q_COMMIT,
    Q_ROLLBACK,
    Q_HOLDERS,
    Q_DELETE_ROW,
    Q_BUMP_FENCE,
    Q_INSERT,
    Q_EXTEND,
    Q_TTL,
    Q_RELEASE,
    Q_FORGET,
    Q_FENCE,
    Q_NAMES,
    Q_FORCE,
    Q_COUNT
};

static const char *const sql[Q_COUNT] = {
    [Q_BEGIN] = "BEGIN IMMEDIATE",
    [Q_COMMIT] = "COMMIT",
    [Q_ROLLBACK] = "ROLLBACK",
    [Q_HOLDERS] = "SELECT owner, shared, expires_at, boot_id, host, pid, "
                  "pid_start, pid_ns, acquired_at, \"limit\" "
                  "FROM dlock_locks WHERE name = ?1",
    [Q_DELETE_ROW] = "DELETE FROM dlock_locks WHERE name = ?1 AND owner = ?2",
    [Q_BUMP_FENCE] = "INSERT INTO dlock_fences (name, fence) VALUES (?1, 1) "
                     "ON CONFLICT (name) DO UPDATE SET fence = fence + 1 "
                     "RETURNING fence",
    [Q_INSERT] = "INSERT INTO dlock_locks (name, owner, shared, fence, "
                 "expires_at, boot_id, acquired_at, host, pid, pid_start, "
                 "pid_ns, \"limit\") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, "
                 "?9, ?10, ?11, ?12)",
    [Q_EXTEND] = "UPDATE dlock_locks SET expires_at = ?3 WHERE name = ?1 "
                 "AND owner = ?2 AND boot_id = ?4 AND expires_at > ?5",
    [Q_TTL] = "SELECT expires_at - ?3 FROM dlock_locks WHERE name = ?1 AND "
              "owner = ?2 AND boot_id = ?4 AND expires_at > ?3",
    [Q_RELEASE] = "DELETE FROM dlock_locks WHERE name = ?1 AND owner = ?2 "
                  "AND boot_id = ?3 AND expires_at > ?4",
    [Q_FORGET] = "DELETE FROM dlock_locks WHERE name = ?1 AND owner = ?2",
    [Q_FENCE] = "SELECT fence FROM dlock_fences WHERE name = ?1",
    [Q_NAMES] = "SELECT DISTINCT name FROM dlock_locks ORDER BY name",
    [Q_FORCE] = "DELETE FROM dlock_locks WHERE name = ?1",
};

/* What identifies this process and machine in a row, and how its clocks
 * relate to the host's: read from /proc when the store is opened (a fork
 * child opens its own store, so reads its own). */
struct ident {
    char boot_id[64]; /* "unknown" when /proc/sys cannot be read */
    int boot_known;
    char pid_ns[64];     /* "" when unknown: then no pid is looked up */
    int proc_ours;       /* /proc/PID names the pids of our namespace */
    int64_t boot_off_ns; /* our CLOCK_BOOTTIME minus the host's */
    long long tick_ns;   /* one clock tick of /proc/PID/stat */
    long long start;     /* our start time, host ticks; 0 if unknown */
};

struct sqlite_store {
    struct dlock_store base;
    pthread_mutex_t mu; /* one connection, used by one thread at a time */
    sqlite3 *db;
    sqlite3_stmt *st[Q_COUNT];
    char *path;
    int64_t op_timeout_ms;
    int64_t busy_deadline; /* monotonic ms, for the busy handler */
    struct ident id;
};

/* PROC_TIME_INIT_INO: the initial time namespace, whose offsets are 0. */
#define INIT_TIME_NS "time:[4026531834]"

/* This process's CLOCK_BOOTTIME offset from the host's (the initial time
 * namespace's).  1 and *off_ns, or 0 if it cannot be told. */
static int read_boot_offset(int64_t *off_ns)
{
    char ns[64], kids[64], line[128];
    ssize_t n, k;
    int found = 0;
    FILE *f;

    n = readlink("/proc/self/ns/time", ns, sizeof(ns) - 1);
    if (n < 0) {
        /* /proc is there but the kernel has no time namespaces: one
         * clock for all. */
        if (errno == ENOENT && access("/proc/self/ns/pid", F_OK) == 0) {
            *off_ns = 0;
            return 1;
        }
        return 0;
    }
    ns[n] = '\0';
    if (strcmp(ns, INIT_TIME_NS) == 0) {
        *off_ns = 0;
        return 1;
    }
    /* timens_offsets shows the namespace our children get: ours only if
     * we have not unshared a new one without entering it. */
    k = readlink("/proc/self/ns/time_for_children", kids, sizeof(kids) - 1);
    if (k != n || memcmp(ns, kids, (size_t)n) != 0)
        return 0;
    f = fopen("/proc/self/timens_offsets", "re");
    if (f == NULL)
        return 0;
    while (fgets(line, sizeof(line), f) != NULL) {
        char name[32];
        long long sec, nsec;

        /* "boottime SEC NSEC" (kernels before 5.6's final release: the
         * clock's number, 7). */
        if (sscanf(line, "%31s %lld %lld", name, &sec, &nsec) == 3 &&
            (strcmp(name, "boottime") == 0 || strcmp(name, "7") == 0) &&
            sec > -(INT64_MAX / 1000000000 - 1) &&
            sec < INT64_MAX / 1000000000 - 1 && nsec >= 0 &&
            nsec < 1000000000) {
            *off_ns = (int64_t)sec * 1000000000 + nsec;
            found = 1;
        }
    }
    fclose(f);
    return found;
}

/* What /proc/PID/stat says of a process. */
enum { P_UNKNOWN, P_GONE, P_ZOMBIE, P_START };

/* Field 22 (starttime, clock ticks since boot as the READER's time
 * namespace counts them) into *start. */
static int proc_stat(const char *path, long long *start)
{
    char buf[1024], *p;
    char state = 0;
    ssize_t n;
    int fd;

    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT || errno == ESRCH ? P_GONE : P_UNKNOWN;
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return n == 0 ? P_GONE : P_UNKNOWN;
    buf[n] = '\0';
    /* The command name (field 2) may contain anything, even ") ": skip
     * to the last ')'. */
    p = strrchr(buf, ')');
    if (p == NULL ||
        sscanf(p + 1, " %c %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s "
                      "%*s %*s %*s %*s %*s %*s %lld",
               &state, start) != 2)
        return P_UNKNOWN;
    return state == 'Z' || state == 'X' ? P_ZOMBIE : P_START;
}

/* A start time read in our namespace, on the host's boot clock.  With an
 * offset that is not a whole number of ticks the kernel's rounding can
 * leave it one tick off: compare with same_start(). */
static long long host_ticks(const struct ident *id, long long ticks)
{
    int64_t off = id->boot_off_ns / id->tick_ns;

    if (id->boot_off_ns % id->tick_ns < 0)
        off--; /* floor */
    return ticks - off;
}

static int same_start(long long a, long long b)
{
    return a - b <= 1 && b - a <= 1;
}

/* A start time (host ticks) that can be true: not after now.  The kernel
 * adds the reader's boottime offset to a start time in unsigned 64-bit
 * arithmetic: with a negative offset (a clock set back, as CRIU restores
 * do) a process that started before the namespace's zero shows a wrapped,
 * huge starttime, which says nothing about that process. */
static int start_possible(const struct ident *id, long long host_start)
{
    struct timespec ts;
    int64_t now_ns;

    clock_gettime(CLOCK_BOOTTIME, &ts);
    now_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec - id->boot_off_ns;
    return host_start >= 0 && host_start <= now_ns / id->tick_ns + 1;
}

/* Is /proc the mount of our own pid namespace?  NSpid in /proc/self/status
 * lists our pid in every namespace from the one of that /proc down to
 * ours: exactly one number, our getpid(), only if they are the same.
 * Comparing readlink("/proc/self") with getpid() is not enough: in a
 * child namespace a process can have the same number in both (by chance,
 * or by ns_last_pid), and /proc/PID then is another process.  Without
 * NSpid (Linux before 4.1) we cannot tell: 0. */
static int proc_is_ours(void)
{
    char line[256], extra[2];
    long long only;
    int ours = 0;
    FILE *f = fopen("/proc/self/status", "re");

    if (f == NULL)
        return 0;
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, "NSpid:", 6) != 0)
            continue;
        ours = sscanf(line + 6, "%lld %1s", &only, extra) == 1 &&
               only == (long long)getpid();
        break;
    }
    fclose(f);
    return ours;
}

/* Fill id for this process.  0, or -1 if it cannot tell its clock from
 * the host's (the caller refuses the store). */
static int ident_read(struct ident *id)
{
    long hz = sysconf(_SC_CLK_TCK);
    long long start;
    ssize_t n;
    FILE *f;

    memset(id, 0, sizeof(*id));
    id->tick_ns = 1000000000LL / (hz > 0 && hz <= 1000000000 ? hz : 100);
    if (!read_boot_offset(&id->boot_off_ns))
        return -1;
    f = fopen("/proc/sys/kernel/random/boot_id", "re");
    if (f != NULL) {
        if (fgets(id->boot_id, sizeof(id->boot_id), f) == NULL)
            id->boot_id[0] = '\0';
        id->boot_id[strcspn(id->boot_id, "\n")] = '\0';
        fclose(f);
    }
    /* "unknown" is what 0.2 wrote without /proc: never a boot id. */
    id->boot_known =
        id->boot_id[0] != '\0' && strcmp(id->boot_id, "unknown") != 0;
    if (!id->boot_known)
        dlock__strlcpy(id->boot_id, "unknown", sizeof(id->boot_id));
    n = readlink("/proc/self/ns/pid", id->pid_ns, sizeof(id->pid_ns) - 1);
    id->pid_ns[n > 0 ? n : 0] = '\0';
    /* /proc may be the mount of another pid namespace (a container's
     * /proc seen from outside, `unshare -p` or `nsenter -p` without a new
     * /proc): then /proc/PID is some other process, and only kill() can
     * look. */
    id->proc_ours = proc_is_ours();
    if (id->proc_ours && proc_stat("/proc/self/stat", &start) == P_START &&
        start_possible(id, host_ticks(id, start)))
        id->start = host_ticks(id, start);
    return 0;
}

/* The host's CLOCK_BOOTTIME in ms: ours less our namespace's offset. */
static int64_t host_ms(const struct ident *id)
{
    struct timespec ts;

    clock_gettime(CLOCK_BOOTTIME, &ts);
    return ((int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec - id->boot_off_ns) /
           1000000;
}

/* --- plumbing ------------------------------------------------------- */

static int busy_handler(void *arg, int count)
{
    struct sqlite_store *ss = arg;
    int64_t left = ss->busy_deadline - dlock__now_ms();

    /* A cancelled acquire stops waiting for other writers too. */
    if (left <= 0 || dlock__cancelled())
        return 0;
    /* Writers hold the lock for microseconds: start with short naps. */
    dlock__sleep_ms(count < 4 ? 1 : count < 20 ? 2 : 5);
    return 1;
}

static int db_error(struct sqlite_store *ss, const char *what)
{
    int code = sqlite3_extended_errcode(ss->db);

    if ((code & 0xff) == SQLITE_BUSY || (code & 0xff) == SQLITE_LOCKED)
        return dlock__seterr(DLOCK_ESTORE,
                             "%s: the database %s stayed busy for longer "
                             "than the timeout",
                             what, ss->base.url);
    return dlock__seterr(DLOCK_ESTORE, "%s: %s (%s)", what,
                         sqlite3_errmsg(ss->db), ss->base.url);
}

static int is_busy(struct sqlite_store *ss)
{
    int code = sqlite3_errcode(ss->db);

    return code == SQLITE_BUSY || code == SQLITE_LOCKED;
}

static sqlite3_stmt *stmt(struct sqlite_store *ss, int q)
{
    if (ss->st[q] == NULL &&
        sqlite3_prepare_v3(ss->db, sql[q], -1, SQLITE_PREPARE_PERSISTENT,
                           &ss->st[q], NULL) != SQLITE_OK)
        return NULL;
    sqlite3_reset(ss->st[q]);
    sqlite3_clear_bindings(ss->st[q]);
    return ss->st[q];
}

/* Run a statement that returns no rows (or whose rows are ignored). */
static int exec_q(struct sqlite_store *ss, int q)
{
    sqlite3_stmt *s = stmt(ss, q);
    int rc;

    if (s == NULL)
        return SQLITE_ERROR;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW)
        ;
    sqlite3_reset(s);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

static void lock_db(struct sqlite_store *ss, int64_t deadline)
{
    pthread_mutex_lock(&ss->mu);
    ss->busy_deadline = deadline;
}

static void unlock_db(struct sqlite_store *ss)
{
    pthread_mutex_unlock(&ss->mu);
}

static int64_t op_deadline(struct sqlite_store *ss)
{
    return dlock__now_ms() + ss->op_timeout_ms;
}

static int begin(struct sqlite_store *ss)
{
    return exec_q(ss, Q_BEGIN);
}

static void rollback(struct sqlite_store *ss)
{
    if (!sqlite3_get_autocommit(ss->db))
        (void)exec_q(ss, Q_ROLLBACK);
}

/* --- open / close ---------------------------------------------------- */

static void sqlite_close(struct dlock_store *s)
{
    struct sqlite_store *ss = (struct sqlite_store *)s;

    for (int i = 0; i < Q_COUNT; i++)
        sqlite3_finalize(ss->st[i]);
    sqlite3_close(ss->db);
    pthread_mutex_destroy(&ss->mu);
    free(ss->path);
    free(ss);
}

/* Does dlock_locks have the limit column?  1, 0, or -1 on error. */
static int has_limit_column(struct sqlite_store *ss)
{
    sqlite3_stmt *s = NULL;
    int rc;

    if (sqlite3_prepare_v2(ss->db, "SELECT 1 FROM pragma_table_info("
                           "'dlock_locks') WHERE name = 'limit'",
                           -1, &s, NULL) != SQLITE_OK)
        return -1;
    rc = sqlite3_step(s);
    sqlite3_finalize(s);
    return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1;
}

/* Add the limit column to a file made before semaphores.  Looked at
 * without the write lock first (every open comes here; only the first
 * after an upgrade migrates), then again under it, since another process
 * may be migrating the same file right now. */
static int migrate_limit(struct sqlite_store *ss, char **err)
{
    int have = has_limit_column(ss);

    if (have != 0)
        return have > 0 ? SQLITE_OK : SQLITE_ERROR;
    if (begin(ss) != SQLITE_OK)
        return SQLITE_ERROR;
    have = has_limit_column(ss);
    if (have < 0 ||
        (have == 0 &&
         sqlite3_exec(ss->db, MIGRATE_LIMIT, NULL, NULL, err) != SQLITE_OK) ||
        exec_q(ss, Q_COMMIT) != SQLITE_OK) {
        rollback(ss);
        return SQLITE_ERROR;
    }
    return SQLITE_OK;
}

static int sqlite_init(struct dlock_store *s)
{
    struct sqlite_store *ss = (struct sqlite_store *)s;
    char *err = NULL;
    int rc;

    lock_db(ss, op_deadline(ss));
    rc = sqlite3_exec(ss->db, DDL, NULL, NULL, &err);
    if (rc == SQLITE_OK)
        rc = migrate_limit(ss, &err);
    unlock_db(ss);
    if (rc != SQLITE_OK) {
        rc = dlock__seterr(DLOCK_ESTORE, "cannot create the lock tables in "
                           "%s: %s", ss->base.url,
                           err ? err : sqlite3_errmsg(ss->db));
        sqlite3_free(err);
        return rc;
    }
    return DLOCK_OK;
}

/* Switching a new file to WAL writes its header from inside a read
 * transaction.  When several processes open the same new file at once,
 * one of them holds the write lock while another wants it with its read
 * transaction open: SQLite answers SQLITE_BUSY at once, without asking the
 * busy handler (waiting there could deadlock).  Nothing is held between
 * two tries here, so retrying until the deadline is safe. */
static int set_wal(struct sqlite_store *ss, char **err)
{
    for (int tries = 0;; tries++) {
        int rc = sqlite3_exec(ss->db, "PRAGMA journal_mode = WAL; "
                                      "PRAGMA synchronous = FULL;",
                              NULL, NULL, err);

        /* The busy handler's own naps and deadline, called by hand. */
        if (rc == SQLITE_OK || !is_busy(ss) || !busy_handler(ss, tries))
            return rc;
        sqlite3_free(*err);
        *err = NULL;
    }
}

/* The class of a file that would not open (include/dlock.h): one this
 * process may not open or create (EACCES, EPERM, a read-only file
 * system) is refused for good, DLOCK_ESTORE, as a role without grants
 * is on a server; anything else (an I/O error, a full table of open
 * files) may pass: DLOCK_EUNAVAIL. */
static int open_error_code(sqlite3 *db, const char *path)
{
    int e = db != NULL ? sqlite3_system_errno(db) : 0;
    int code = db != NULL ? sqlite3_extended_errcode(db) & 0xff : 0;
    const char *slash = strrchr(path, '/');
    char dir[4200];
    struct stat st;

    if (e == EACCES || e == EPERM || e == EROFS || code == SQLITE_PERM ||
        code == SQLITE_READONLY || code == SQLITE_AUTH)
        return DLOCK_ESTORE;
    /* A new file in a directory this process may not write: SQLite's
     * last try is a read-only open, and its errno that one's ENOENT. */
    if (code == SQLITE_CANTOPEN && slash != NULL &&
        (size_t)(slash - path) + 1 < sizeof(dir) && stat(path, &st) != 0 &&
        errno == ENOENT) {
        size_t n = slash > path ? (size_t)(slash - path) : 1;

        memcpy(dir, path, n);
        dir[n] = '\0';
        if (access(dir, W_OK | X_OK) != 0 &&
            (errno == EACCES || errno == EPERM || errno == EROFS))
            return DLOCK_ESTORE;
    }
    return DLOCK_EUNAVAIL;
}

static int sqlite_open(struct dlock_store **out, const struct dlock_url *u)
{
    static const char *const known[] = {"timeout", NULL};
    struct sqlite_store *ss;
    char *err = NULL, *real = NULL;
    int rc, src;

    rc = dlock__url_check_params(u, known);
    if (rc != DLOCK_OK)
        return rc;
    if (u->host != NULL && u->host[0] != '\0' &&
        strcmp(u->host, "localhost") != 0)
        return dlock__seterr(DLOCK_EINVAL,
                             "sqlite URLs name a local file: "
                             "sqlite:///absolute/path.db, not host '%s'",
                             u->host);
    if (u->path == NULL || strlen(u->path) < 2 ||
        u->path[strlen(u->path) - 1] == '/')
        return dlock__seterr(DLOCK_EINVAL,
                             "sqlite URL needs a file path: "
                             "sqlite:///absolute/path.db");
    ss = calloc(1, sizeof(*ss));
    if (ss == NULL)
        return dlock__enomem();
    if (ident_read(&ss->id) != 0) {
        free(ss);
        return dlock__seterr(DLOCK_EUNAVAIL,
                             "cannot use %s: this process cannot tell its "
                             "boot clock from the host's "
                             "(/proc/self/ns/time unreadable; is /proc "
                             "mounted?), so it cannot judge the leases in "
                             "the file: mount /proc",
                             u->redacted);
    }
    ss->op_timeout_ms = DEFAULT_OP_TIMEOUT_MS;
    rc = dlock__url_param_ms(u, "timeout", 1000, &ss->op_timeout_ms);
    if (rc != DLOCK_OK) {
        free(ss);
        return rc;
    }
    ss->path = dlock__strdup(u->path);
    if (ss->path == NULL) {
        free(ss);
        return dlock__enomem();
    }
    pthread_mutex_init(&ss->mu, NULL);
    ss->base.url = (char *)u->redacted; /* for messages until the core sets it */

    /* The private-directory checks are for the default only: an explicit
     * store keeps the permissions its admin chose. */
    if (strcmp(u->raw, dlock_default_url()) == 0) {
        rc = dlock__sqlite_default_file(ss->path);
        if (rc != DLOCK_OK)
            goto fail;
    }
    rc = dlock__sqlite_refuse_links(ss->path);
    if (rc == DLOCK_OK)
        rc = dlock__sqlite_real_path(ss->path, &real);
    if (rc != DLOCK_OK)
        goto fail;
    src = sqlite3_open_v2(real, &ss->db,
                          SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                              SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW,
                          NULL);
    if (src != SQLITE_OK) {
        if (ss->db != NULL && sqlite3_extended_errcode(ss->db) ==
                                  SQLITE_CANTOPEN_SYMLINK)
            rc = dlock__seterr(DLOCK_EUNAVAIL,
                               "refusing %s: it is a symbolic link", real);
        else
            rc = dlock__seterr(open_error_code(ss->db, ss->path),
                               "cannot open %s: %s", ss->path,
                               ss->db ? sqlite3_errmsg(ss->db)
                                      : "no memory");
        free(real);
        goto fail;
    }
    free(real);
    sqlite3_extended_result_codes(ss->db, 1);
    sqlite3_busy_handler(ss->db, busy_handler, ss);
    ss->busy_deadline = op_deadline(ss);
    /* WAL: readers never wait for the writer.  FULL: a lock handed out is
     * on disk before anyone is told, so a crash never hands it out twice
     * (and never lets a fence go back). */
    rc = set_wal(ss, &err);
    if (rc != SQLITE_OK) {
        rc = dlock__seterr(open_error_code(ss->db, ss->path),
                           "cannot use %s as a lock database: %s", ss->path,
                           err ? err : "?");
        sqlite3_free(err);
        goto fail;
    }
    rc = sqlite_init(&ss->base);
    if (rc != DLOCK_OK)
        goto fail;
    *out = &ss->base;
    return DLOCK_OK;
fail:
    sqlite_close(&ss->base);
    return rc;
}

/* --- locks ----------------------------------------------------------- */

static void bind_name(sqlite3_stmt *s, int i, const struct dlock_lock *lk)
{
    sqlite3_bind_text(s, i, lk->name, (int)lk->name_len, SQLITE_STATIC);
}

/* The limit a holder in the current row of Q_HOLDERS asked.  A value
 * dlock could not have written (planted, or garbage) counts as 1: the
 * strictest reading, and a mismatch for any semaphore. */
static unsigned row_limit(sqlite3_stmt *s)
{
    sqlite3_int64 v = sqlite3_column_int64(s, 9);

    return sqlite3_column_type(s, 9) == SQLITE_INTEGER && v >= 1 &&
                   v <= DLOCK_LIMIT_MAX
               ? (unsigned)v
               : 1;
}

/* How many threads /proc/PID/status counts (a zombie leader counts
 * itself), or -1 if it cannot be read. */
static long proc_threads(long long pid)
{
    char path[64], line[256];
    long threads = -1;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%lld/status", pid);
    f = fopen(path, "re");
    if (f == NULL)
        return -1;
    while (fgets(line, sizeof(line), f) != NULL)
        if (sscanf(line, "Threads: %ld", &threads) == 1)
            break;
    fclose(f);
    return threads;
}

/* Is the holder (pid, recorded start time) of a row from our host and
 * pid namespace gone for good?  Only on proof: kill() answering ESRCH, or
 * a /proc of our namespace showing a zombie or another process under
 * that pid.  Anything else (EPERM: alive, another user's; a /proc entry
 * hidden by hidepid, or unreadable; a sandbox refusing kill()) keeps the
 * holder. */
static int holder_gone(const struct ident *id, long long pid, long long start)
{
    char path[64];
    long long now_start;

    if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
        return 1;
    if (!id->proc_ours)
        return 0;
    snprintf(path, sizeof(path), "/proc/%lld/stat", pid);
    switch (proc_stat(path, &now_start)) {
    case P_ZOMBIE:
        /* The thread group leader is a zombie: the whole process, unless
         * its main thread ended (pthread_exit) while others run on, one
         * of them perhaps holding the lock. */
        return proc_threads(pid) == 1;
    case P_START:
        /* A start time of 0 or less: the holder could not read its own,
         * nothing to compare; nor with one /proc shows wrapped. */
        return start > 0 && start_possible(id, host_ticks(id, now_start)) &&
               !same_start(host_ticks(id, now_start), start);
    default:
        /* Gone from /proc although kill() found it: hidden from us, or
         * it died a moment ago (the next look proves it). */
        return 0;
    }
}

/* Is the holder in the current row of Q_HOLDERS gone for good?  now is
 * the host's boot clock (host_ms()). */
static int row_dead(const struct ident *id, sqlite3_stmt *s, int64_t now)
{
    const char *boot = (const char *)sqlite3_column_text(s, 3);
    const char *host = (const char *)sqlite3_column_text(s, 4);
    const char *ns = (const char *)sqlite3_column_text(s, 7);
    long long pid = sqlite3_column_int64(s, 5);

    /* An earlier boot only if both boot ids are known and differ: a
     * process that could not read its own wrote "unknown" (or, planted,
     * nothing), and one that cannot read ours cannot compare. */
    if (id->boot_known && boot != NULL && boot[0] != '\0' &&
        strcmp(boot, "unknown") != 0 && strcmp(boot, id->boot_id) != 0)
        return 1; /* left by an earlier boot */
    if (sqlite3_column_type(s, 2) != SQLITE_INTEGER ||
        sqlite3_column_int64(s, 2) <= now)
        return 1; /* lease ran out, or not a lease at all */
    if (sqlite3_column_int64(s, 2) > now + 1 + DLOCK_TTL_MAX_MS)
        return 1; /* longer than dlock ever grants: planted, not ours */
    /* Only a process in our own pid namespace on our host can be looked
     * up; anything else keeps its lease. */
    if (host == NULL || ns == NULL || id->pid_ns[0] == '\0' ||
        strcmp(host, dlock__hostname()) != 0 || strcmp(ns, id->pid_ns) != 0)
        return 0;
    if (sqlite3_column_type(s, 5) != SQLITE_INTEGER || pid < 1 || pid > INT_MAX)
        return 1; /* no pid dlock could have written: planted */
    return holder_gone(id, pid, sqlite3_column_int64(s, 6));
}

static int sqlite_try_acquire(struct dlock_store *st, struct dlock_lock *lk,
                              int64_t deadline, int64_t *retry_ms)
{
    struct sqlite_store *ss = (struct sqlite_store *)st;
    char dead[16][DLOCK_TOKEN_HEX + 1];
    size_t ndead = 0;
    int64_t now_boot, wait = -1;
    unsigned live = 0, in_force = 0;
    int conflict = 0, rc, src;
    sqlite3_stmt *s;

    lock_db(ss, deadline);
    if (begin(ss) != SQLITE_OK) {
        rc = is_busy(ss) ? DLOCK_BUSY : db_error(ss, "begin");
        goto out;
    }
    now_boot = host_ms(&ss->id);
    s = stmt(ss, Q_HOLDERS);
    if (s == NULL)
        goto sqlerr;
    bind_name(s, 1, lk);
    while ((src = sqlite3_step(s)) == SQLITE_ROW) {
        const char *owner = (const char *)sqlite3_column_text(s, 0);

        if (row_dead(&ss->id, s, now_boot)) {
            if (ndead < sizeof(dead) / sizeof(dead[0]) && owner != NULL)
                dlock__strlcpy(dead[ndead++], owner, sizeof(dead[0]));
            continue;
        }
        /* Every live holder counts against the limit, and the soonest
         * lease to end is when a slot may free.  Shared holders (limit 1)
         * only conflict with exclusive ones. */
        live++;
        if (row_limit(s) != lk->limit)
            in_force = row_limit(s);
        if (!lk->shared || !sqlite3_column_int(s, 1)) {
            int64_t left = sqlite3_column_int64(s, 2) - now_boot;

            conflict++;
            if (wait < 0 || left < wait)
                wait = left;
        }
    }
    sqlite3_reset(s);
    if (src != SQLITE_DONE)
        goto sqlerr;
    /* A semaphore of N admits while fewer than N hold it; a lock (N = 1)
     * and a shared lock keep the rule above. */
    conflict = (unsigned)conflict >= lk->limit;
    for (size_t i = 0; i < ndead; i++) {
        s = stmt(ss, Q_DELETE_ROW);
        if (s == NULL)
            goto sqlerr;
        bind_name(s, 1, lk);
        sqlite3_bind_text(s, 2, dead[i], -1, SQLITE_STATIC);
        if (sqlite3_step(s) != SQLITE_DONE)
            goto sqlerr;
        sqlite3_reset(s);
    }
    if (in_force != 0 || conflict) {
        /* Keep the clean-up of dead rows. */
        if (exec_q(ss, Q_COMMIT) != SQLITE_OK)
            goto sqlerr;
        if (in_force != 0) {
            /* Admitting under two limits would let the larger one in past
             * the smaller: refuse, whatever the caller's wait. */
            rc = dlock__seterr(DLOCK_EINVAL,
                               "'%s' is held with limit %u (%u holder%s); "
                               "this acquire asked for limit %u: every "
                               "holder of a name must ask the same limit",
                               lk->name, in_force, live,
                               live == 1 ? "" : "s", lk->limit);
            goto out;
        }
        *retry_ms = wait;
        rc = DLOCK_BUSY;
        goto out;
    }
    /* The fence counter lives apart from the lock rows and is never
     * deleted, so fences never go back, whatever happens to the rows. */
    s = stmt(ss, Q_BUMP_FENCE);
    if (s == NULL)
        goto sqlerr;
    bind_name(s, 1, lk);
    if (sqlite3_step(s) != SQLITE_ROW)
        goto sqlerr;
    lk->fence = (uint64_t)sqlite3_column_int64(s, 0);
    sqlite3_reset(s);

    s = stmt(ss, Q_INSERT);
    if (s == NULL)
        goto sqlerr;
    bind_name(s, 1, lk);
    sqlite3_bind_text(s, 2, lk->token, -1, SQLITE_STATIC);
    sqlite3_bind_int(s, 3, lk->shared);
    sqlite3_bind_int64(s, 4, (sqlite3_int64)lk->fence);
    /* host_ms() rounds down, up to 1 ms before now: the row would end
     * that much before the lease the holder counts (from its attempt, on
     * CLOCK_MONOTONIC, whose ms do not line up with these), and another
     * holder could be admitted while this one still holds its slot (the
     * semaphore torture caught it).  Round up instead. */
    sqlite3_bind_int64(s, 5, now_boot + 1 + lk->ttl_ms);
    sqlite3_bind_text(s, 6, ss->id.boot_id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 7, dlock__wall_ms());
    sqlite3_bind_text(s, 8, dlock__hostname(), -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 9, (sqlite3_int64)dlock__pid());
    sqlite3_bind_int64(s, 10, ss->id.start);
    sqlite3_bind_text(s, 11, ss->id.pid_ns, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 12, (sqlite3_int64)lk->limit);
    if (sqlite3_step(s) != SQLITE_DONE)
        goto sqlerr;
    sqlite3_reset(s);
    if (exec_q(ss, Q_COMMIT) != SQLITE_OK)
        goto sqlerr;
    rc = DLOCK_OK;
    goto out;
sqlerr:
    /* Out of time on SQLite's write lock is "not acquired in time"; a
     * real error is an error. */
    rc = is_busy(ss) ? DLOCK_BUSY : db_error(ss, "acquire");
    rollback(ss);
out:
    unlock_db(ss);
    return rc;
}

/* Run an UPDATE/DELETE on lk's row; *changed gets the row count. */
static int run_on_row(struct sqlite_store *ss, int q,
                      const struct dlock_lock *lk, int64_t ttl_ms,
                      int *changed, const char *what)
{
    sqlite3_stmt *s;
    int64_t now;
    int rc;

    lock_db(ss, op_deadline(ss));
    s = stmt(ss, q);
    if (s == NULL) {
        rc = db_error(ss, what);
        goto out;
    }
    now = host_ms(&ss->id);
    bind_name(s, 1, lk);
    sqlite3_bind_text(s, 2, lk->token, -1, SQLITE_STATIC);
    if (q == Q_EXTEND) {
        /* + 1: host_ms() rounds down (see the insert). */
        sqlite3_bind_int64(s, 3, now + 1 + ttl_ms);
        sqlite3_bind_text(s, 4, ss->id.boot_id, -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 5, now);
    } else if (q == Q_RELEASE) {
        sqlite3_bind_text(s, 3, ss->id.boot_id, -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 4, now);
    }
    if (sqlite3_step(s) != SQLITE_DONE) {
        rc = db_error(ss, what);
        sqlite3_reset(s);
        goto out;
    }
    sqlite3_reset(s);
    *changed = sqlite3_changes(ss->db);
    rc = DLOCK_OK;
out:
    unlock_db(ss);
    return rc;
}

#define LOST_WHY "its lease ran out or it was broken"

static int sqlite_extend(struct dlock_store *st, struct dlock_lock *lk,
                         int64_t ttl_ms)
{
    struct sqlite_store *ss = (struct sqlite_store *)st;
    int changed = 0, rc;

    rc = run_on_row(ss, Q_EXTEND, lk, ttl_ms, &changed, "extend");
    if (rc != DLOCK_OK)
        return rc;
    if (changed == 0) {
        /* Expired but not yet taken: tidy our row away. */
        (void)run_on_row(ss, Q_FORGET, lk, 0, &changed, "extend");
        return dlock__lost(lk, LOST_WHY);
    }
    return DLOCK_OK;
}

static int sqlite_ttl_left(struct dlock_store *st, struct dlock_lock *lk,
                           int64_t *left_ms)
{
    struct sqlite_store *ss = (struct sqlite_store *)st;
    sqlite3_stmt *s;
    int64_t now = host_ms(&ss->id);
    int rc, src;

    lock_db(ss, op_deadline(ss));
    s = stmt(ss, Q_TTL);
    if (s == NULL) {
        rc = db_error(ss, "assert_ttl");
        goto out;
    }
    bind_name(s, 1, lk);
    sqlite3_bind_text(s, 2, lk->token, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 3, now);
    sqlite3_bind_text(s, 4, ss->id.boot_id, -1, SQLITE_STATIC);
    src = sqlite3_step(s);
    if (src == SQLITE_ROW) {
        *left_ms = sqlite3_column_int64(s, 0);
        rc = DLOCK_OK;
    } else if (src == SQLITE_DONE) {
        rc = dlock__lost(lk, LOST_WHY);
    } else {
        rc = db_error(ss, "assert_ttl");
    }
    sqlite3_reset(s);
out:
    unlock_db(ss);
    return rc;
}

static int sqlite_release(struct dlock_store *st, struct dlock_lock *lk)
{
    struct sqlite_store *ss = (struct sqlite_store *)st;
    int changed = 0, rc;

    rc = run_on_row(ss, Q_RELEASE, lk, 0, &changed, "release");
    if (rc != DLOCK_OK)
        return rc;
    if (changed == 0) {
        (void)run_on_row(ss, Q_FORGET, lk, 0, &changed, "release");
        return dlock__lost(lk, LOST_WHY);
    }
    return DLOCK_OK;
}

/* --- batched renewal (the renew thread's extend_many) ---------------- */

/* Every lease of the batch in one BEGIN IMMEDIATE transaction: one wait
 * for the write lock and one commit (one WAL append) instead of one per
 * lock, and the same UPDATE per row as sqlite_extend().  A row that is
 * gone or past its lease is tidied away in the same transaction, and that
 * lock is LOST.  If the transaction fails nothing was written: the whole
 * batch gets the failure (a transient one, retried while leases last). */
static int sqlite_extend_many(struct dlock_store *st,
                              struct dlock_lock *const *locks, size_t n,
                              int *rcs)
{
    struct sqlite_store *ss = (struct sqlite_store *)st;
    sqlite3_stmt *s;
    int64_t now;
    int rc;

    lock_db(ss, op_deadline(ss));
    if (begin(ss) != SQLITE_OK) {
        rc = db_error(ss, "renew");
        goto out;
    }
    now = host_ms(&ss->id);
    for (size_t i = 0; i < n; i++) {
        const struct dlock_lock *lk = locks[i];

        s = stmt(ss, Q_EXTEND);
        if (s == NULL)
            goto sqlerr;
        bind_name(s, 1, lk);
        sqlite3_bind_text(s, 2, lk->token, -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 3, now + 1 + lk->ttl_ms); /* as extend */
        sqlite3_bind_text(s, 4, ss->id.boot_id, -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 5, now);
        if (sqlite3_step(s) != SQLITE_DONE)
            goto sqlerr;
        sqlite3_reset(s);
        if (sqlite3_changes(ss->db) > 0) {
            rcs[i] = DLOCK_OK;
            continue;
        }
        s = stmt(ss, Q_FORGET);
        if (s == NULL)
            goto sqlerr;
        bind_name(s, 1, lk);
        sqlite3_bind_text(s, 2, lk->token, -1, SQLITE_STATIC);
        if (sqlite3_step(s) != SQLITE_DONE)
            goto sqlerr;
        sqlite3_reset(s);
        rcs[i] = dlock__lost(lk, LOST_WHY);
    }
    if (exec_q(ss, Q_COMMIT) != SQLITE_OK)
        goto sqlerr;
    rc = DLOCK_OK;
    goto out;
sqlerr:
    rc = db_error(ss, "renew");
    rollback(ss);
out:
    unlock_db(ss);
    return rc;
}

/* --- for sqlite_runs.c ------------------------------------------------ */

sqlite3 *dlock__sqlite_db(struct dlock_store *st)
{
    return ((struct sqlite_store *)st)->db;
}

void dlock__sqlite_lock(struct dlock_store *st)
{
    struct sqlite_store *ss = (struct sqlite_store *)st;

    lock_db(ss, op_deadline(ss));
}

void dlock__sqlite_unlock(struct dlock_store *st)
{
    unlock_db((struct sqlite_store *)st);
}

int dlock__sqlite_begin(struct dlock_store *st)
{
    struct sqlite_store *ss = (struct sqlite_store *)st;

    return begin(ss) == SQLITE_OK ? DLOCK_OK : db_error(ss, "begin");
}

int dlock__sqlite_commit(struct dlock_store *st)
{
    struct sqlite_store *ss = (struct sqlite_store *)st;

    return exec_q(ss, Q_COMMIT) == SQLITE_OK ? DLOCK_OK
                                             : db_error(ss, "commit");
}

void dlock__sqlite_rollback(struct dlock_store *st)
{
    rollback((struct sqlite_store *)st);
}

int dlock__sqlite_error(struct dlock_store *st, const char *what)
{
    return db_error((struct sqlite_store *)st, what);
}

int dlock__sqlite_owns(struct dlock_store *st, const struct dlock_lock *lk)
{
    struct sqlite_store *ss = (struct sqlite_store *)st;
    sqlite3_stmt *s = stmt(ss, Q_TTL);
    int src;

    if (s == NULL)
        return -1;
    bind_name(s, 1, lk);
    sqlite3_bind_text(s, 2, lk->token, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 3, host_ms(&ss->id));
    sqlite3_bind_text(s, 4, ss->id.boot_id, -1, SQLITE_STATIC);
    src = sqlite3_step(s);
    sqlite3_reset(s);
    return src == SQLITE_ROW ? 1 : src == SQLITE_DONE ? 0 : -1;
}

/* --- status, list, force_release ------------------------------------ */

/* Fill out from the live rows of name (caller holds the connection). */
static int describe(struct sqlite_store *ss, const char *name,
                    dlock_info *out)
{
    int64_t now_boot = host_ms(&ss->id), last = -1;
    sqlite3_stmt *s;
    int src;

    s = stmt(ss, Q_HOLDERS);
    if (s == NULL)
        return db_error(ss, "status");
    sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
    while ((src = sqlite3_step(s)) == SQLITE_ROW) {
        int64_t left;

        if (row_dead(&ss->id, s, now_boot))
            continue;
        left = sqlite3_column_int64(s, 2) - now_boot;
        out->held = 1;
        out->holders++;
        out->shared = sqlite3_column_int(s, 1);
        if (row_limit(s) > out->limit)
            out->limit = row_limit(s);
        if (left > last) {
            const char *host = (const char *)sqlite3_column_text(s, 4);

            last = left;
            out->ttl_ms = left;
            out->pid = sqlite3_column_int64(s, 5);
            out->since_ms = sqlite3_column_int64(s, 8);
            dlock__strlcpy(out->host, host ? host : "", sizeof(out->host));
        }
    }
    sqlite3_reset(s);
    if (src != SQLITE_DONE)
        return db_error(ss, "status");
    s = stmt(ss, Q_FENCE);
    if (s == NULL)
        return db_error(ss, "status");
    sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
    src = sqlite3_step(s);
    if (src == SQLITE_ROW)
        out->fence = (uint64_t)sqlite3_column_int64(s, 0);
    sqlite3_reset(s);
    if (src != SQLITE_ROW && src != SQLITE_DONE)
        return db_error(ss, "status");
    return DLOCK_OK;
}

static int sqlite_status(struct dlock_store *st, const char *name,
                         dlock_info *out)
{
    struct sqlite_store *ss = (struct sqlite_store *)st;
    int rc;

    lock_db(ss, op_deadline(ss));
    rc = describe(ss, name, out);
    unlock_db(ss);
    return rc;
}

static int sqlite_list(struct dlock_store *st, const char *prefix,
                       int (*cb)(const dlock_info *info, void *payload),
                       void *payload)
{
    struct sqlite_store *ss = (struct sqlite_store *)st;
    struct dlock__names names = {NULL, 0, 0};
    size_t plen = strlen(prefix);
    sqlite3_stmt *s;
    int rc = DLOCK_OK, src;

    lock_db(ss, op_deadline(ss));
    s = stmt(ss, Q_NAMES);
    if (s == NULL) {
        rc = db_error(ss, "list");
        unlock_db(ss);
        return rc;
    }
    while (rc == DLOCK_OK && (src = sqlite3_step(s)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(s, 0);
        size_t len = (size_t)sqlite3_column_bytes(s, 0);

        if (name != NULL && len >= plen && memcmp(name, prefix, plen) == 0)
            rc = dlock__names_add(&names, name, len);
    }
    sqlite3_reset(s);
    if (rc == DLOCK_OK && src != SQLITE_DONE)
        rc = db_error(ss, "list");
    unlock_db(ss);
    if (rc != DLOCK_OK) {
        dlock__names_free(&names);
        return rc;
    }
    return dlock__names_report(&names, st, sqlite_status, cb, payload);
}

static int sqlite_force_release(struct dlock_store *st, const char *name,
                                unsigned *removed)
{
    struct sqlite_store *ss = (struct sqlite_store *)st;
    sqlite3_stmt *s;
    int rc = DLOCK_OK;

    lock_db(ss, op_deadline(ss));
    s = stmt(ss, Q_FORCE);
    if (s == NULL || (sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC),
                      sqlite3_step(s)) != SQLITE_DONE)
        rc = db_error(ss, "release --force");
    else
        *removed = (unsigned)sqlite3_changes(ss->db);
    if (s != NULL)
        sqlite3_reset(s);
    unlock_db(ss);
    return rc;
}

static int sqlite_ddl(char **out, const struct dlock_url *u)
{
    (void)u;
    *out = dlock__strdup(DDL "-- A file from dlock 0.1 or 0.2 (no limit "
                         "column) is migrated on first use, or by:\n-- "
                         MIGRATE_LIMIT ";\n");
    return *out != NULL ? DLOCK_OK : dlock__enomem();
}

const struct dlock_store_ops dlock__sqlite_ops = {
    .version = DLOCK_STORE_OPS_VERSION,
    .name = "sqlite",
    .has_shared = 1,
    .has_limit = 1,
    .open = sqlite_open,
    .close = sqlite_close,
    .try_acquire = sqlite_try_acquire,
    .wait_slice = NULL, /* the core polls with jittered backoff */
    .extend = sqlite_extend,
    .extend_many = sqlite_extend_many,
    .ttl_left = sqlite_ttl_left,
    .release = sqlite_release,
    .forget = NULL,
    .status = sqlite_status,
    .list = sqlite_list,
    .force_release = sqlite_force_release,
    .init = sqlite_init,
    .ddl = sqlite_ddl,
    .run_begin = dlock__sqlite_run_begin,
    .run_end = dlock__sqlite_run_end,
    .runs = dlock__sqlite_runs,
    .last_runs = dlock__sqlite_last_runs,
};
