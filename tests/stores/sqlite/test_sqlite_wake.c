/*
 * test_sqlite_wake.c - the SQLite store's wake-up (src/stores/sqlite/
 * wake.c), ordered through pipes and inotify, never by time.
 *
 *     test_sqlite_wake DIR
 *
 * - A waiter whose poll interval is an hour, on a holder whose lease is an
 *   hour, takes the lock once the holder releases: only the release's
 *   wake-up can have told it.  The parent releases only once the waiter's
 *   FIFO is in the wake directory (inotify), so the waiter is waiting.
 * - The same with the wake directory full of junk sorted before the real
 *   waiter (a regular file, a symbolic link to a file, a directory, a
 *   FIFO nobody reads) and garbage written into the waiter's own FIFO:
 *   the release skips the junk and wakes the waiter; the link's target
 *   and the regular file are not written; the dead FIFO is removed.
 * - A wake directory that is a regular file: acquire still works (by
 *   polling) and the file is left as it was.
 * - The oldest entry a FIFO with a reader that never reads and a wake-up
 *   already in it (a dead waiter's FIFO that its fork child still holds
 *   open, or one that garbage filled): the release wakes the next one,
 *   the real waiter, instead of adding a byte nobody reads (adv48b).
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "dlock.h"

extern int64_t dlock__sq_poll_max_ms; /* wake.c: a test's knob */

static char base[4096];
static const char junk[] = "junk that must never be written to or trusted\n";

static int rm_one(const char *p, const struct stat *st, int flag,
                  struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(p);
}

/* The prefix wake.c gives NAME's waiters (FNV-1a, 16 hex digits). */
static void hash_of(const char *name, char out[17])
{
    unsigned long long h = 1469598103934665603ULL;

    for (; *name; name++) {
        h ^= (unsigned char)*name;
        h *= 1099511628211ULL;
    }
    snprintf(out, 17, "%016llx", h);
}

static int same_bytes(const char *p, const char *text)
{
    char buf[256];
    int fd = open(p, O_RDONLY);
    ssize_t n;

    if (fd < 0)
        return 0;
    n = read(fd, buf, sizeof(buf));
    close(fd);
    return n == (ssize_t)strlen(text) && memcmp(buf, text, (size_t)n) == 0;
}

static void write_file(const char *p, const char *text)
{
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);

    if (fd >= 0) {
        (void)!write(fd, text, strlen(text));
        close(fd);
    }
}

/* The child: wait for NAME (polling once an hour unless woken), say 'A'
 * on fd once it holds it. */
static void waiter(const char *url, const char *name, int fd, int64_t poll)
{
    dlock_options o = DLOCK_OPTIONS_INIT;
    dlock_store *s;
    dlock_lock *l;
    int rc;

    dlock__sq_poll_max_ms = poll;
    o.wait_ms = DLOCK_WAIT_FOREVER;
    if (dlock_store_open(&s, url) != DLOCK_OK)
        _exit(3);
    rc = dlock_acquire(&l, s, name, &o);
    if (rc != DLOCK_OK) {
        fprintf(stderr, "waiter: %s\n", dlock_errmsg());
        _exit(4);
    }
    (void)!write(fd, "A", 1);
    rc = dlock_release(l);
    dlock_store_close(s);
    _exit(rc == DLOCK_OK ? 0 : 5);
}

static void test_woken(int plant)
{
    const char *name = plant == 2 ? "woken-stuck"
                       : plant    ? "woken-junk"
                                  : "woken";
    char db[4200], url[4300], wake[4300], p[4600], hash[17], victim[4300];
    char buf[4096] __attribute__((aligned(8)));
    dlock_options o = DLOCK_OPTIONS_INIT;
    dlock_store *s;
    dlock_lock *l;
    int pfd[2], in, st = 0, seen = 0, stuck = -1;
    pid_t pid;

    snprintf(db, sizeof(db), "%s/%s.db", base, name);
    snprintf(url, sizeof(url), "sqlite://%s", db);
    snprintf(wake, sizeof(wake), "%s-wake", db);
    snprintf(victim, sizeof(victim), "%s/victim", base);
    hash_of(name, hash);
    CHECK_RC(dlock_store_open(&s, url), DLOCK_OK);
    o.ttl_ms = 3600 * 1000;
    CHECK_RC(dlock_acquire(&l, s, name, &o), DLOCK_OK);
    CHECK(mkdir(wake, 0700) == 0);
    if (plant == 2) {
        /* Held open, never read, a wake-up pending in it. */
        snprintf(p, sizeof(p), "%s/%s.%020d.1.1", wake, hash, 0);
        CHECK(mkfifo(p, 0600) == 0);
        stuck = open(p, O_RDWR | O_NONBLOCK);
        CHECK(stuck >= 0);
        CHECK(write(stuck, "w", 1) == 1);
    } else if (plant) {
        write_file(victim, junk);
        snprintf(p, sizeof(p), "%s/%s.%020d.1.1", wake, hash, 0);
        write_file(p, junk);
        snprintf(p, sizeof(p), "%s/%s.%020d.1.2", wake, hash, 1);
        CHECK(symlink(victim, p) == 0);
        snprintf(p, sizeof(p), "%s/%s.%020d.1.3", wake, hash, 2);
        CHECK(mkdir(p, 0700) == 0);
        snprintf(p, sizeof(p), "%s/%s.%020d.1.4", wake, hash, 3);
        CHECK(mkfifo(p, 0600) == 0); /* a waiter that died */
    }
    in = inotify_init1(IN_CLOEXEC);
    CHECK(in >= 0);
    CHECK(inotify_add_watch(in, wake, IN_MOVED_TO) >= 0);
    CHECK(pipe(pfd) == 0);
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        close(pfd[0]);
        waiter(url, name, pfd[1], 3600 * 1000);
    }
    close(pfd[1]);
    /* The waiter's FIFO under its final name: it is waiting. */
    while (!seen) {
        ssize_t n = read(in, buf, sizeof(buf));

        CHECK(n > 0);
        for (char *q = buf; q < buf + n;) {
            struct inotify_event *e = (struct inotify_event *)q;

            if (e->len > 0 && strncmp(e->name, hash, 16) == 0) {
                seen = 1;
                if (plant == 1) {
                    /* Garbage into its own FIFO: a wake-up for nothing. */
                    int fd;

                    snprintf(p, sizeof(p), "%s/%s", wake, e->name);
                    fd = open(p, O_WRONLY | O_NONBLOCK);
                    EXPECT(fd >= 0);
                    for (int i = 0; fd >= 0 && i < 100; i++)
                        if (write(fd, buf, sizeof(buf)) < 0)
                            break;
                    if (fd >= 0)
                        close(fd);
                }
            }
            q += sizeof(*e) + e->len;
        }
    }
    close(in);
    EXPECT_RC(dlock_release(l), DLOCK_OK);
    /* Only the release's wake-up can get it there within the hour. */
    EXPECT(read(pfd[0], buf, 1) == 1 && buf[0] == 'A');
    close(pfd[0]);
    EXPECT(waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
           WEXITSTATUS(st) == 0);
    if (stuck >= 0)
        close(stuck);
    if (plant == 1) {
        EXPECT(same_bytes(victim, junk));
        snprintf(p, sizeof(p), "%s/%s.%020d.1.1", wake, hash, 0);
        EXPECT(same_bytes(p, junk));
        snprintf(p, sizeof(p), "%s/%s.%020d.1.4", wake, hash, 3);
        EXPECT(access(p, F_OK) != 0 && errno == ENOENT);
    }
    dlock_store_close(s);
}

/* PATH-wake is a regular file: no wake-ups, the waiter polls. */
static void test_wrong_type(void)
{
    char db[4200], url[4300], wake[4300], buf[1];
    dlock_options o = DLOCK_OPTIONS_INIT;
    dlock_store *s;
    dlock_lock *l;
    int pfd[2], st = 0;
    pid_t pid;

    snprintf(db, sizeof(db), "%s/wrong.db", base);
    snprintf(url, sizeof(url), "sqlite://%s", db);
    snprintf(wake, sizeof(wake), "%s-wake", db);
    write_file(wake, junk);
    CHECK_RC(dlock_store_open(&s, url), DLOCK_OK);
    CHECK_RC(dlock_acquire(&l, s, "x", &o), DLOCK_OK);
    CHECK(pipe(pfd) == 0);
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        close(pfd[0]);
        waiter(url, "x", pfd[1], 0);
    }
    close(pfd[1]);
    EXPECT_RC(dlock_release(l), DLOCK_OK);
    EXPECT(read(pfd[0], buf, 1) == 1 && buf[0] == 'A');
    close(pfd[0]);
    EXPECT(waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
           WEXITSTATUS(st) == 0);
    EXPECT(same_bytes(wake, junk));
    dlock_store_close(s);
}

int main(int argc, char **argv)
{
    char *abs;

    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    abs = realpath(argv[1], NULL);
    if (abs == NULL) {
        perror(argv[1]);
        return 2;
    }
    snprintf(base, sizeof(base), "%s/wake.XXXXXX", abs);
    free(abs);
    if (mkdtemp(base) == NULL) {
        perror(base);
        return 2;
    }
    test_woken(0);
    test_woken(1);
    test_woken(2);
    test_wrong_type();
    nftw(base, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    if (failures == 0)
        printf("sqlite store wake-up: all passed\n");
    return failures != 0;
}
