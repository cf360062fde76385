/*
 * store.c - the embedded store: a lock table in a SQLite file.  This
 * file: the ops table, open, close, init (the tables, the migration of
 * old files), the DDL.
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
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sq.h"

#define DEFAULT_OP_TIMEOUT_MS 5000

static void sqlite_close(struct dlock_store *s)
{
    struct sqlite_store *ss = (struct sqlite_store *)s;

    for (int i = 0; i < Q_COUNT; i++)
        sqlite3_finalize(ss->st[i]);
    sqlite3_close(ss->db);
    if (ss->wake_dir >= 0)
        close(ss->wake_dir);
    dlock__sq_texts_free(ss->sql);
    pthread_mutex_destroy(&ss->mu);
    free(ss->path);
    free(ss);
}

/* Does dlock_locks have the limit column?  1, 0, or -1 on error. */
static int has_limit_column(struct sqlite_store *ss)
{
    sqlite3_stmt *s = dlock__sq_stmt(ss, Q_HAS_LIMIT);
    int rc;

    if (s == NULL)
        return -1;
    rc = sqlite3_step(s);
    sqlite3_reset(s);
    return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1;
}

/* Add the limit column to a file made before semaphores
 * (migrate-limit.sql).  Looked at without the write lock first (every
 * open comes here; only the first after an upgrade migrates), then again
 * under it, since another process may be migrating the same file right
 * now. */
static int migrate_limit(struct sqlite_store *ss, char **err)
{
    int have = has_limit_column(ss);

    if (have != 0)
        return have > 0 ? SQLITE_OK : SQLITE_ERROR;
    if (dlock__sq_begin(ss) != SQLITE_OK)
        return SQLITE_ERROR;
    have = has_limit_column(ss);
    if (have < 0 ||
        (have == 0 && sqlite3_exec(ss->db, ss->sql[T_MIGRATE_LIMIT], NULL, NULL,
                                   err) != SQLITE_OK) ||
        dlock__sq_exec(ss, Q_COMMIT) != SQLITE_OK) {
        dlock__sq_rollback(ss);
        return SQLITE_ERROR;
    }
    return SQLITE_OK;
}

static int sqlite_init(struct dlock_store *s)
{
    struct sqlite_store *ss = (struct sqlite_store *)s;
    char *err = NULL;
    int rc;

    dlock__sq_lock(ss, dlock__sq_deadline(ss));
    rc = sqlite3_exec(ss->db, ss->sql[T_SCHEMA], NULL, NULL, &err);
    if (rc == SQLITE_OK)
        rc = migrate_limit(ss, &err);
    dlock__sq_unlock(ss);
    if (rc != SQLITE_OK) {
        rc = dlock__seterr(DLOCK_ESTORE,
                           "cannot create the lock tables in "
                           "%s: %s",
                           ss->base.url, err ? err : sqlite3_errmsg(ss->db));
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
        int rc = sqlite3_exec(ss->db, ss->sql[T_WAL], NULL, NULL, err);

        /* The busy handler's own naps and deadline, called by hand. */
        if (rc == SQLITE_OK || !dlock__sq_is_busy(ss) ||
            !dlock__sq_busy_handler(ss, tries))
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
        return dlock__seterr(DLOCK_EINVAL, "sqlite URL needs a file path: "
                                           "sqlite:///absolute/path.db");
    ss = calloc(1, sizeof(*ss));
    if (ss == NULL)
        return dlock__enomem();
    ss->wake_dir = -2;
    if (dlock__sq_ident_read(&ss->id) != 0) {
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
    ss->base.url =
        (char *)u->redacted; /* for messages until the core sets it */
    /* Every statement, once (texts.c). */
    rc = dlock__sq_texts_build(ss->sql);
    if (rc != DLOCK_OK)
        goto fail;

    /* The private-directory checks are for the default only: an explicit
     * store keeps the permissions its admin chose. */
    if (strcmp(u->raw, dlock_default_url()) == 0) {
        rc = dlock__sq_default_file(ss->path);
        if (rc != DLOCK_OK)
            goto fail;
    }
    rc = dlock__sq_refuse_links(ss->path);
    if (rc == DLOCK_OK)
        rc = dlock__sq_real_path(ss->path, &real);
    if (rc != DLOCK_OK)
        goto fail;
    src = sqlite3_open_v2(real, &ss->db,
                          SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                              SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW,
                          NULL);
    if (src != SQLITE_OK) {
        if (ss->db != NULL &&
            sqlite3_extended_errcode(ss->db) == SQLITE_CANTOPEN_SYMLINK)
            rc = dlock__seterr(DLOCK_EUNAVAIL,
                               "refusing %s: it is a symbolic link", real);
        else
            rc = dlock__seterr(open_error_code(ss->db, ss->path),
                               "cannot open %s: %s", ss->path,
                               ss->db ? sqlite3_errmsg(ss->db) : "no memory");
        free(real);
        goto fail;
    }
    free(real);
    sqlite3_extended_result_codes(ss->db, 1);
    sqlite3_busy_handler(ss->db, dlock__sq_busy_handler, ss);
    ss->busy_deadline = dlock__sq_deadline(ss);
    /* WAL and synchronous FULL (wal.sql says why). */
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

/* schema.sql, then migrate-limit.sql as a comment for a DBA. */
static int sqlite_ddl(char **out, const struct dlock_url *u)
{
    static const char how[] = "-- A file from dlock 0.1 or 0.2 (no limit "
                              "column) is migrated on first use, or by:\n-- ";
    char *t[T_COUNT];
    size_t schema, migrate;
    int rc;

    (void)u;
    rc = dlock__sq_texts_build(t);
    if (rc != DLOCK_OK)
        return rc;
    schema = strlen(t[T_SCHEMA]);
    /* The statement without its final newline, then ";\n". */
    migrate = strcspn(t[T_MIGRATE_LIMIT], "\n");
    *out = malloc(schema + sizeof(how) - 1 + migrate + 3);
    if (*out != NULL)
        snprintf(*out, schema + sizeof(how) - 1 + migrate + 3, "%s%s%.*s;\n",
                 t[T_SCHEMA], how, (int)migrate, t[T_MIGRATE_LIMIT]);
    dlock__sq_texts_free(t);
    return *out != NULL ? DLOCK_OK : dlock__enomem();
}

/* dlock_store_probe(): the store's clock is this host's (run records
 * are stamped with CLOCK_REALTIME here), no TLS (a local file), and the
 * tables open() made or found (sqlite_init). */
static int sqlite_probe(struct dlock_store *s, dlock_probe *out)
{
    (void)s;
    out->host_ms = out->server_ms = dlock__wall_ms();
    out->tls = 0;
    out->tables_ok = 1;
    snprintf(out->tables, sizeof(out->tables),
             "dlock_locks, dlock_fences, dlock_runs, dlock_run_names, "
             "dlock_leaders, dlock_suspensions, dlock_run_keep "
             "present (made or checked at open)");
    return DLOCK_OK;
}

const struct dlock_store_ops dlock__sqlite_ops = {
    .version = DLOCK_STORE_OPS_VERSION,
    .name = "sqlite",
    .has_shared = 1,
    .has_limit = 1,
    .open = sqlite_open,
    .close = sqlite_close,
    .try_acquire = dlock__sq_try_acquire,
    .wait_slice = dlock__sq_wait_slice, /* a FIFO wake-up, polling too */
    .extend = dlock__sq_extend,
    .extend_many = dlock__sq_extend_many,
    .ttl_left = dlock__sq_ttl_left,
    .release = dlock__sq_release,
    .forget = dlock__sq_forget,
    .forget_inherited = dlock__sq_forget_inherited,
    .status = dlock__sq_status,
    .list = dlock__sq_list,
    .force_release = dlock__sq_force_release,
    .init = sqlite_init,
    .probe = sqlite_probe,
    .ddl = sqlite_ddl,
    .run_begin = dlock__sq_run_begin,
    .run_end = dlock__sq_run_end,
    .runs = dlock__sq_runs,
    .last_runs = dlock__sq_last_runs,
    .keep_runs = dlock__sq_keep_runs,
    .kept_runs = dlock__sq_kept_runs,
    .value_set = dlock__sq_value_set,
    .value_get = dlock__sq_value_get,
    .suspend = dlock__sq_suspend,
    .resume = dlock__sq_resume,
    .suspension = dlock__sq_suspension,
    .suspensions = dlock__sq_suspensions,
    .watch = NULL, /* dlock_observe() polls (DLOCK_OBSERVE_POLL_MS) */
    .watch_end = NULL,
};
