/*
 * test_sqlite_secure.c - the SQLite store against a hostile local user.
 *
 *     test_sqlite_secure DIR      (works in a fresh temp directory in DIR)
 *
 * - dlock__private_dir(), the check behind the default store's directory
 *   /var/tmp/dlock-EUID, run on temp paths (never the real one): a
 *   missing directory is created 0700; a good one is accepted untouched;
 *   a symbolic link, a file, a group/other-writable directory and one
 *   owned by another uid are refused with a message naming the path and
 *   the reason, and left as they were.
 * - A symbolic link at a database path or at its -wal, -shm, -journal:
 *   dlock_store_open() refuses it and the link's target is neither
 *   created nor changed.  A link among the directories above it is
 *   followed (the admin's choice).
 * - Rows planted with the sqlite3 API (a lease ending in 292 million
 *   years, or not a number at all) do not block a name, while a lease as
 *   long as dlock grants still does.
 */
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "dlock.h"
#include "privdir.h"

static char base[4096];

static const char precious[] = "precious bytes of another application\n";

static void path_of(char *out, size_t len, const char *name)
{
    snprintf(out, len, "%s/%s", base, name);
}

static int rm_one(const char *p, const struct stat *st, int flag,
                  struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    (void)remove(p); /* best effort: keep going */
    return 0;
}

static void write_file(const char *p, const char *text)
{
    FILE *f = fopen(p, "w");

    if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0) {
        perror(p);
        exit(2);
    }
}

/* The file's bytes are exactly text. */
static int has_bytes(const char *p, const char *text)
{
    char buf[256];
    size_t n;
    FILE *f = fopen(p, "r");

    if (f == NULL)
        return 0;
    n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    return n == strlen(text) && memcmp(buf, text, n) == 0;
}

static int exists(const char *p)
{
    struct stat st;

    return lstat(p, &st) == 0;
}

static unsigned mode_of(const char *p)
{
    struct stat st;

    return lstat(p, &st) == 0 ? (unsigned)(st.st_mode & 07777) : 0xffffu;
}

/* dlock__private_dir(p) is refused with DLOCK_EUNAVAIL and a message that
 * names p and contains why. */
static void expect_refused(const char *p, const char *why)
{
    int rc = dlock__private_dir(p);

    EXPECT_RC(rc, DLOCK_EUNAVAIL);
    if (strstr(dlock_errmsg(), p) == NULL ||
        strstr(dlock_errmsg(), why) == NULL ||
        strncmp(dlock_errmsg(), "refusing ", 9) != 0) {
        fprintf(stderr, "  message for %s lacks \"%s\": %s\n", p, why,
                dlock_errmsg());
        failures++;
    }
}

static void test_private_dir(void)
{
    char p[4200], q[4200];
    mode_t old;
    struct stat st;

    /* Missing: created 0700 and ours, whatever the umask. */
    path_of(p, sizeof(p), "new");
    EXPECT_RC(dlock__private_dir(p), DLOCK_OK);
    EXPECT(mode_of(p) == 0700);
    EXPECT(lstat(p, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid());
    old = umask(0777);
    path_of(p, sizeof(p), "new-umask");
    EXPECT_RC(dlock__private_dir(p), DLOCK_OK);
    umask(old);
    EXPECT(mode_of(p) == 0700);

    /* Existing and good: accepted and left alone. */
    path_of(p, sizeof(p), "good");
    CHECK(mkdir(p, 0700) == 0);
    EXPECT_RC(dlock__private_dir(p), DLOCK_OK);
    EXPECT(mode_of(p) == 0700);
    path_of(p, sizeof(p), "readable");
    CHECK(mkdir(p, 0700) == 0 && chmod(p, 0755) == 0);
    EXPECT_RC(dlock__private_dir(p), DLOCK_OK);
    EXPECT(mode_of(p) == 0755);

    /* Writable by others: the old shared layout (1777), or just group. */
    path_of(p, sizeof(p), "sticky");
    CHECK(mkdir(p, 0700) == 0 && chmod(p, 01777) == 0);
    expect_refused(p, "writable by group or others (mode 1777)");
    EXPECT(mode_of(p) == 01777); /* refused, not chmodded */
    path_of(p, sizeof(p), "group");
    CHECK(mkdir(p, 0700) == 0 && chmod(p, 0770) == 0);
    expect_refused(p, "writable by group or others (mode 0770)");
    EXPECT(mode_of(p) == 0770);

    /* A symbolic link to a directory of ours, and a dangling one: the
     * target of the dangling one must not be created. */
    path_of(q, sizeof(q), "good");
    path_of(p, sizeof(p), "link");
    CHECK(symlink(q, p) == 0);
    expect_refused(p, "it is a symbolic link");
    path_of(q, sizeof(q), "absent");
    path_of(p, sizeof(p), "dangling");
    CHECK(symlink(q, p) == 0);
    expect_refused(p, "it is a symbolic link");
    EXPECT(!exists(q));

    /* Not a directory. */
    path_of(p, sizeof(p), "file");
    write_file(p, precious);
    expect_refused(p, "it is not a directory");
    EXPECT(has_bytes(p, precious));

    /* Owned by someone else (only root can give a directory away). */
    path_of(p, sizeof(p), "theirs");
    CHECK(mkdir(p, 0700) == 0);
    if (geteuid() == 0) {
        char why[128];

        CHECK(chown(p, 65534, 65534) == 0);
        snprintf(why, sizeof(why), "owned by uid 65534, not by you (uid %u)",
                 (unsigned)geteuid());
        expect_refused(p, why);
        EXPECT(lstat(p, &st) == 0 && st.st_uid == 65534);
    } else if (getenv("CI") != NULL && strcmp(getenv("CI"), "true") == 0) {
        fprintf(stderr, "  CI=true but not root: cannot check a directory "
                        "owned by another uid\n");
        failures++;
    } else {
        printf("skip: a directory owned by another uid (needs root)\n");
    }
}

/* A link at DB+suffix: opening DB is refused, and the link's target keeps
 * its bytes (or is still absent). */
static void test_links(void)
{
    static const char *const suffix[] = {"", "-wal", "-shm", "-journal"};
    char dir[4200], db[4300], link[4400], victim[4300], url[4500];

    path_of(dir, sizeof(dir), "stores");
    CHECK(mkdir(dir, 0755) == 0);
    for (size_t i = 0; i < sizeof(suffix) / sizeof(suffix[0]); i++) {
        for (int dangling = 0; dangling < 2; dangling++) {
            dlock_store *s = NULL;

            snprintf(db, sizeof(db), "%s/lock-%zu-%d.db", dir, i, dangling);
            snprintf(link, sizeof(link), "%s%s", db, suffix[i]);
            snprintf(victim, sizeof(victim), "%s/victim-%zu-%d", base, i,
                     dangling);
            if (!dangling)
                write_file(victim, precious);
            CHECK(symlink(victim, link) == 0);
            snprintf(url, sizeof(url), "sqlite://%s", db);
            EXPECT_RC(dlock_store_open(&s, url), DLOCK_EUNAVAIL);
            EXPECT(s == NULL);
            dlock_store_close(s);
            if (strstr(dlock_errmsg(), link) == NULL ||
                strstr(dlock_errmsg(), "symbolic link") == NULL) {
                fprintf(stderr, "  link at %s: message \"%s\"\n", link,
                        dlock_errmsg());
                failures++;
            }
            if (dangling)
                EXPECT(!exists(victim));
            else
                EXPECT(has_bytes(victim, precious));
            if (suffix[i][0] != '\0')
                EXPECT(!exists(db)); /* refused before anything is made */
        }
    }

    /* A link among the directories above the file is the admin's choice
     * (/var/run -> /run): it still works. */
    {
        dlock_store *s = NULL;

        path_of(link, sizeof(link), "dir-link");
        CHECK(symlink(dir, link) == 0);
        snprintf(url, sizeof(url), "sqlite://%s/via-link.db", link);
        EXPECT_RC(dlock_store_open(&s, url), DLOCK_OK);
        dlock_store_close(s);
        snprintf(db, sizeof(db), "%s/via-link.db", dir);
        EXPECT(exists(db));
    }
}

static void plant_sql(const char *db, const char *sql)
{
    sqlite3 *h;

    if (sqlite3_open(db, &h) != SQLITE_OK) {
        fprintf(stderr, "open %s: %s\n", db, sqlite3_errmsg(h));
        exit(3);
    }
    sqlite3_busy_timeout(h, 5000);
    if (sqlite3_exec(h, sql, NULL, NULL, NULL) != SQLITE_OK) {
        fprintf(stderr, "plant: %s\n", sqlite3_errmsg(h));
        exit(4);
    }
    sqlite3_close(h);
}

/* Take name, then rewrite our row into a stranger's (another host, so
 * only the lease counts) with `set` applied. */
static void plant(dlock_store *s, const char *db, const char *name,
                  const char *set)
{
    dlock_options o = DLOCK_OPTIONS_INIT;
    dlock_lock *l = NULL;
    char sql[1024];

    o.ttl_ms = 60000;
    o.auto_renew = 0;
    if (dlock_acquire(&l, s, name, &o) != DLOCK_OK)
        exit(5);
    snprintf(sql, sizeof(sql),
             "UPDATE dlock_locks SET owner = 'planted', host = 'elsewhere', "
             "%s WHERE name = '%s'",
             set, name);
    plant_sql(db, sql);
    EXPECT_RC(dlock_release(l), DLOCK_LOST);
}

/* One try (wait 0); the result, and it answers within 2 s. */
static int try_now(dlock_store *s, const char *name)
{
    dlock_options o = DLOCK_OPTIONS_INIT;
    dlock_lock *l = NULL;
    int64_t t0 = now_ms();
    int rc = dlock_acquire(&l, s, name, &o);

    EXPECT(now_ms() - t0 < 2000);
    if (rc == DLOCK_OK)
        EXPECT_RC(dlock_release(l), DLOCK_OK);
    return rc;
}

static void test_planted_rows(void)
{
    static const struct {
        const char *name, *set;
    } junk[] = {
        {"int64-max", "expires_at = 9223372036854775807"},
        {"real", "expires_at = 1e300"},
        {"text", "expires_at = 'forever'"},
        {"blob", "expires_at = X'7fffffffffffffff'"},
        {"all-junk", "expires_at = 9223372036854775807, pid = 'x', "
                     "pid_start = X'00', boot_id = 42, shared = 'yes'"},
    };
    char db[4200], url[4300];
    dlock_store *s;
    dlock_info info;

    path_of(db, sizeof(db), "planted.db");
    snprintf(url, sizeof(url), "sqlite://%s", db);
    CHECK_RC(dlock_store_open(&s, url), DLOCK_OK);
    for (size_t i = 0; i < sizeof(junk) / sizeof(junk[0]); i++) {
        plant(s, db, junk[i].name, junk[i].set);
        /* status and list read the row without crashing... */
        memset(&info, 0, sizeof(info));
        EXPECT_RC(test_status(s, junk[i].name, &info), DLOCK_OK);
        /* ...and it does not hold the name. */
        if (try_now(s, junk[i].name) != DLOCK_OK) {
            fprintf(stderr, "  planted row (%s) blocks its name\n",
                    junk[i].set);
            failures++;
        }
    }
    /* The longest lease dlock grants still holds: the bound is not
     * "ignore every stranger". */
    plant(s, db, "a-year",
          "expires_at = expires_at - 60000 + 365 * 24 * 3600 * 1000 - "
          "60000");
    EXPECT_RC(try_now(s, "a-year"), DLOCK_BUSY);
    memset(&info, 0, sizeof(info));
    EXPECT_RC(test_status(s, "a-year", &info), DLOCK_OK);
    EXPECT(info.held == 1);
    dlock_store_close(s);
}

static void *default_url_thread(void *arg)
{
    (void)arg;
    return (void *)dlock_default_url();
}

static void test_default_url(void)
{
    char want[128];
    pthread_t t[4];
    void *got;

    snprintf(want, sizeof(want), "sqlite:///var/tmp/dlock-%u/dlock.db",
             (unsigned)geteuid());
    for (int i = 0; i < 4; i++)
        CHECK(pthread_create(&t[i], NULL, default_url_thread, NULL) == 0);
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], &got);
        EXPECT(got == (void *)dlock_default_url());
    }
    EXPECT(strcmp(dlock_default_url(), want) == 0);
}

int main(int argc, char **argv)
{
    char *abs;

    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    abs = realpath(argv[1], NULL); /* URLs need absolute paths */
    if (abs == NULL) {
        perror(argv[1]);
        return 2;
    }
    snprintf(base, sizeof(base), "%s/secure.XXXXXX", abs);
    free(abs);
    if (mkdtemp(base) == NULL) {
        perror(base);
        return 2;
    }
    test_default_url();
    test_private_dir();
    test_links();
    test_planted_rows();
    nftw(base, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    if (failures == 0)
        printf("sqlite store security: all passed\n");
    return failures != 0;
}
