/*
 * test_postgres.c - what only the PostgreSQL store promises.
 *
 *     test_postgres URL [CASE...]     (no CASE: all of them)
 *
 * URL is the throwaway server's postgres:// URL (scripts/server-postgres.sh
 * start prints it; its roles "dlock" and "other" are used as made there).
 * Cases:
 *   interop     a raw libpq session doing what psql or a Laravel app does
 *               (pg_advisory_lock(hashtext('job'))) excludes dlock
 *               ?keys=hashtext on the same name, and the reverse; the
 *               default keys are hashtextextended(name, 0)
 *   xact        dlock_pg_xact_lock: refused outside a transaction, held
 *               until COMMIT, savepoint behaviour, a timed-out wait leaves
 *               the caller's transaction and lock_timeout alone
 *   hung        a SIGSTOPped holder past its lease is terminated by a
 *               contender; resumed, it finds the lock LOST; without the
 *               privilege to terminate, the contender waits and says why
 *   killed      the holder's backend terminated from outside: LOST via
 *               on_lost, and the store recovers (its pool)
 *   badinput    wrong password, missing database, bad options, nothing
 *               listening, a server that is not PostgreSQL, one that never
 *               answers: clear errors in bounded time, no password shown
 *   lease       ?mode=lease writes rows only: no advisory lock is taken
 *   mux         hundreds of locks held through one session; locks of one
 *               process on one session still exclude each other
 *   semaphore   limit N: N holders on separate handles (and N on one
 *               session), the N+1st BUSY, a waiter gets a released slot,
 *               fences rise, status says limit and holders, disagreeing
 *               limits (and a limit-1 lock, shared or not) are EINVAL;
 *               kill -9 of a holder frees its slot at once; also with
 *               ?keys=hashtext and ?mode=lease
 *   max_keys    ?max_keys=N: past N advisory keys on a handle an acquire
 *               (try or wait, lock or semaphore) is ESTORE at once and
 *               takes nothing; a release, or a wait given up, makes room
 *   force_one   release --force of one of two names a process holds on
 *               one session: only that lock is LOST, the other stays
 *               held; a stopped holder is fenced off after a short bound
 *   runs        run records: holders of a semaphore that begin runs of
 *               one period at once (queued on the name's summary row):
 *               one goes ahead, in both modes; names with quotes,
 *               backslashes, LIKE wildcards, UTF-8 are stored as given
 *               and a prefix is taken literally; a store without the
 *               run tables, used by a role that owns none of its
 *               objects: no runs, then the first begin creates them
 *   suspend     suspension records planted with garbage (texts too long,
 *               an escape sequence, a table of other column types, bytes
 *               that are not UTF-8) still suspend and read back as "?";
 *               a role with only SELECT gets "permission denied" from
 *               suspend and resume; tables from before suspension: the
 *               readers create nothing, the first suspend or run does
 *   keep        runs kept per name, in both modes: a name keeping 10,000
 *               filled with more keeps exactly 10,000, the newest; the
 *               count in the summary row is what a run goes by (no
 *               count per run), counted again after an older client's
 *               run; settings planted out of range or of another type
 *               read as the default; run tables from before keep_runs
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "check.h"
#include "dlock.h"
#include "dlock_pg.h"

static const char *url;
static char run_id[64];

/* A name unique to this run. */
static const char *nm(const char *base)
{
    static char buf[8][256];
    static int next;
    char *b = buf[next++ % 8];

    snprintf(b, sizeof(buf[0]), "%s/%s", run_id, base);
    return b;
}

static dlock_options opts(int64_t wait_ms, int64_t ttl_ms, int renew)
{
    dlock_options o = DLOCK_OPTIONS_INIT;

    o.wait_ms = wait_ms;
    o.ttl_ms = ttl_ms;
    o.auto_renew = renew;
    return o;
}

/* url with "?extra" or "&extra" appended. */
static int msg_has(const char *what)
{
    if (strstr(dlock_errmsg(), what) != NULL)
        return 1;
    fprintf(stderr, "  message \"%s\" lacks \"%s\"\n", dlock_errmsg(), what);
    return 0;
}

static const char *with(const char *extra)
{
    static char buf[4][1024];
    static int next;
    char *b = buf[next++ % 4];

    snprintf(b, sizeof(buf[0]), "%s%c%s", url,
             strchr(url, '?') != NULL ? '&' : '?', extra);
    return b;
}

static dlock_store *open_url(const char *u)
{
    dlock_store *s = NULL;

    if (dlock_store_open(&s, u) != DLOCK_OK) {
        fprintf(stderr, "cannot open %s: %s\n", u, dlock_errmsg());
        exit(2);
    }
    return s;
}

static PGconn *raw(void)
{
    PGconn *c = PQconnectdb(url);

    if (PQstatus(c) != CONNECTION_OK) {
        fprintf(stderr, "raw connect: %s", PQerrorMessage(c));
        exit(2);
    }
    return c;
}

/* Run SQL with one text parameter; return the first value as a newly
 * allocated string ("" if no row), or NULL on error. */
static char *q1(PGconn *c, const char *sql, const char *p1)
{
    const char *v[1] = {p1};
    PGresult *r = PQexecParams(c, sql, p1 != NULL, NULL, v, NULL, NULL, 0);
    char *out = NULL;

    if (PQresultStatus(r) == PGRES_TUPLES_OK ||
        PQresultStatus(r) == PGRES_COMMAND_OK)
        out = strdup(PQntuples(r) > 0 && PQnfields(r) > 0 ? PQgetvalue(r, 0, 0)
                                                          : "");
    PQclear(r);
    return out;
}

/* q1 that must answer `want`. */
static int q1_is(PGconn *c, const char *sql, const char *p1, const char *want)
{
    char *got = q1(c, sql, p1);
    int ok = got != NULL && strcmp(got, want) == 0;

    if (!ok)
        fprintf(stderr, "  %s -> %s (want %s): %s", sql, got ? got : "(error)",
                want, PQerrorMessage(c));
    free(got);
    return ok;
}

static int try_lock(dlock_store *s, const char *name)
{
    dlock_options o = opts(0, 5000, 1);
    dlock_lock *l = NULL;
    int rc = dlock_acquire(&l, s, name, &o);

    if (rc == DLOCK_OK)
        EXPECT(dlock_release(l) == DLOCK_OK);
    return rc;
}

/* --- interop ------------------------------------------------------------ */

static void t_interop(void)
{
    dlock_store *ht = open_url(with("keys=hashtext"));
    dlock_store *dflt = open_url(url);
    dlock_options o = opts(0, 5000, 1);
    const char *job = nm("job");
    PGconn *c = raw();
    dlock_info info;
    dlock_lock *l;

    /* psql / Laravel holds it: dlock (hashtext keys) is BUSY and says the
     * holder is not one of its own. */
    EXPECT(q1_is(c, "SELECT pg_advisory_lock(hashtext($1))", job, ""));
    EXPECT(try_lock(ht, job) == DLOCK_BUSY);
    EXPECT(strstr(dlock_errmsg(), "no dlock row") != NULL);
    EXPECT(test_status(ht, job, &info) == DLOCK_OK && info.held &&
           info.holders == 1 && info.pid == 0 && info.other_client);
    /* A finite wait ends on time, natively. */
    {
        dlock_options w = opts(300, 5000, 1);
        int64_t t0 = now_ms();

        EXPECT(dlock_acquire(&l, ht, job, &w) == DLOCK_BUSY);
        EXPECT(now_ms() - t0 >= 250 && now_ms() - t0 < 1000);
    }
    /* Different keys: the default mapping does not collide with it. */
    EXPECT(try_lock(dflt, job) == DLOCK_OK);
    EXPECT(q1_is(c, "SELECT pg_advisory_unlock(hashtext($1))", job, "t"));
    EXPECT(try_lock(ht, job) == DLOCK_OK);

    /* The reverse: dlock holds it, the raw session cannot have it. */
    EXPECT(dlock_acquire(&l, ht, job, &o) == DLOCK_OK);
    EXPECT(q1_is(c, "SELECT pg_try_advisory_lock(hashtext($1))", job, "f"));
    /* The row says who and which session. */
    EXPECT(q1_is(c,
                 "SELECT count(*) FROM dlock_held t JOIN pg_locks p "
                 "ON p.pid = t.backend_pid AND p.locktype = 'advisory' "
                 "AND p.objsubid = 1 AND ((p.classid::bigint << 32) | "
                 "p.objid::bigint) = hashtext(t.name) WHERE t.name = $1",
                 job, "1"));
    EXPECT(dlock_release(l) == DLOCK_OK);
    EXPECT(q1_is(c, "SELECT pg_try_advisory_lock(hashtext($1))", job, "t"));
    EXPECT(q1_is(c, "SELECT pg_advisory_unlock(hashtext($1))", job, "t"));

    /* Default keys: hashtextextended(name, 0). */
    EXPECT(dlock_acquire(&l, dflt, job, &o) == DLOCK_OK);
    EXPECT(q1_is(c, "SELECT pg_try_advisory_lock(hashtextextended($1, 0))", job,
                 "f"));
    EXPECT(dlock_release(l) == DLOCK_OK);
    EXPECT(
        q1_is(c, "SELECT pg_advisory_lock(hashtextextended($1, 0))", job, ""));
    EXPECT(try_lock(dflt, job) == DLOCK_BUSY);
    EXPECT(q1_is(c, "SELECT pg_advisory_unlock(hashtextextended($1, 0))", job,
                 "t"));

    /* Shared: two dlock readers and a raw reader coexist; a raw writer
     * waits. */
    {
        dlock_options sh = opts(0, 5000, 1);
        dlock_lock *r1;

        sh.shared = 1;
        EXPECT(dlock_acquire(&r1, dflt, job, &sh) == DLOCK_OK);
        EXPECT(q1_is(c,
                     "SELECT pg_try_advisory_lock_shared("
                     "hashtextextended($1, 0))",
                     job, "t"));
        EXPECT(q1_is(c,
                     "SELECT pg_advisory_unlock_shared("
                     "hashtextextended($1, 0))",
                     job, "t"));
        EXPECT(q1_is(c,
                     "SELECT pg_try_advisory_lock(hashtextextended($1, "
                     "0))",
                     job, "f"));
        EXPECT(dlock_release(r1) == DLOCK_OK);
    }
    PQfinish(c);
    dlock_store_close(ht);
    dlock_store_close(dflt);
}

/* --- xact ----------------------------------------------------------------- */

static int exec_ok(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK ||
             PQresultStatus(r) == PGRES_TUPLES_OK;

    if (!ok)
        fprintf(stderr, "  %s: %s", sql, PQerrorMessage(c));
    PQclear(r);
    return ok;
}

static void t_xact(void)
{
    dlock_store *s = open_url(url);
    const char *n = nm("xact");
    PGconn *a = raw(), *b = raw();
    int64_t t0;

    EXPECT(dlock_pg_xact_lock(NULL, n, 0) == DLOCK_EINVAL);
    EXPECT(dlock_pg_xact_lock(a, "", 0) == DLOCK_EINVAL);
    EXPECT(dlock_pg_xact_lock(a, n, -2) == DLOCK_EINVAL);
    /* Outside a transaction: refused, nothing taken. */
    EXPECT(dlock_pg_xact_lock(a, n, 0) == DLOCK_EINVAL);
    EXPECT(strstr(dlock_errmsg(), "not inside a transaction") != NULL);
    EXPECT(try_lock(s, n) == DLOCK_OK);

    /* Held until COMMIT, against dlock session locks too. */
    EXPECT(exec_ok(a, "BEGIN"));
    EXPECT(dlock_pg_xact_lock(a, n, 0) == DLOCK_OK);
    EXPECT(try_lock(s, n) == DLOCK_BUSY);
    EXPECT(exec_ok(b, "BEGIN"));
    EXPECT(dlock_pg_xact_lock(b, n, 0) == DLOCK_BUSY);
    /* A timed-out wait: on time, b's transaction still usable, its own
     * lock_timeout untouched. */
    EXPECT(exec_ok(b, "SET LOCAL lock_timeout = '7s'"));
    t0 = now_ms();
    EXPECT(dlock_pg_xact_lock(b, n, 200) == DLOCK_BUSY);
    EXPECT(now_ms() - t0 >= 150 && now_ms() - t0 < 1000);
    EXPECT(PQtransactionStatus(b) == PQTRANS_INTRANS);
    EXPECT(q1_is(b, "SELECT current_setting('lock_timeout')", NULL, "7s"));
    EXPECT(exec_ok(a, "COMMIT"));
    EXPECT(try_lock(s, n) == DLOCK_OK);
    /* b can have it now, waiting; lock_timeout still b's own. */
    EXPECT(dlock_pg_xact_lock(b, n, 1000) == DLOCK_OK);
    EXPECT(q1_is(b, "SELECT current_setting('lock_timeout')", NULL, "7s"));
    EXPECT(try_lock(s, n) == DLOCK_BUSY);
    EXPECT(exec_ok(b, "ROLLBACK"));
    EXPECT(try_lock(s, n) == DLOCK_OK);

    /* Taken after a savepoint: ROLLBACK TO releases it... */
    EXPECT(exec_ok(a, "BEGIN"));
    EXPECT(exec_ok(a, "SAVEPOINT sp"));
    EXPECT(dlock_pg_xact_lock(a, n, DLOCK_WAIT_FOREVER) == DLOCK_OK);
    EXPECT(try_lock(s, n) == DLOCK_BUSY);
    EXPECT(exec_ok(a, "ROLLBACK TO SAVEPOINT sp"));
    EXPECT(try_lock(s, n) == DLOCK_OK);
    /* ...RELEASE SAVEPOINT keeps it until the end of the transaction. */
    EXPECT(exec_ok(a, "SAVEPOINT sp2"));
    EXPECT(dlock_pg_xact_lock(a, n, 0) == DLOCK_OK);
    EXPECT(exec_ok(a, "RELEASE SAVEPOINT sp2"));
    EXPECT(try_lock(s, n) == DLOCK_BUSY);
    EXPECT(exec_ok(a, "COMMIT"));
    EXPECT(try_lock(s, n) == DLOCK_OK);

    /* An aborted transaction: an error, not a lock. */
    EXPECT(exec_ok(a, "BEGIN"));
    PQclear(PQexec(a, "SELECT 1/0"));
    EXPECT(dlock_pg_xact_lock(a, n, 0) == DLOCK_ESTORE);
    EXPECT(exec_ok(a, "ROLLBACK"));
    PQfinish(a);
    PQfinish(b);
    dlock_store_close(s);
}

/* --- hung holder -------------------------------------------------------- */

/* Child: hold `name` (ttl 500 ms, no renewal) through holder_url, say 'H',
 * wait for a byte, then report what extend says: 'L' if LOST with the
 * session gone, else 'X'. */
static int hung_renew; /* the holder renews (a mux session) or not */

static void hung_child(const char *holder_url, const char *name, int in,
                       int outfd)
{
    dlock_store *s;
    dlock_options o = opts(0, 500, hung_renew);
    dlock_lock *l;
    char c;
    int rc;

    if (dlock_store_open(&s, holder_url) != DLOCK_OK ||
        dlock_acquire(&l, s, name, &o) != DLOCK_OK) {
        fprintf(stderr, "child: %s\n", dlock_errmsg());
        _exit(3);
    }
    (void)!write(outfd, "H", 1);
    if (read(in, &c, 1) != 1)
        _exit(4);
    rc = dlock_extend(l, 0);
    /* Renewing, its renew thread may have found the loss first; and the
     * core itself answers LOST once the lease ran out locally (it did:
     * the child slept through it), before asking the store. */
    c = rc == DLOCK_LOST &&
                (hung_renew || strstr(dlock_errmsg(), "session") != NULL ||
                 strstr(dlock_errmsg(), "lease ran out") != NULL)
            ? 'L'
            : 'X';
    if (c == 'X')
        fprintf(stderr, "child: extend -> %d %s\n", rc, dlock_errmsg());
    (void)!write(outfd, &c, 1);
    EXPECT(dlock_release(l) == DLOCK_LOST);
    dlock_store_close(s);
    _exit(failures ? 5 : 0);
}

static pid_t spawn_hung(const char *holder_url, const char *name, int *to,
                        int *from)
{
    int a[2], b[2];
    pid_t pid;
    char c = 0;

    if (pipe(a) != 0 || pipe(b) != 0)
        exit(2);
    pid = fork();
    if (pid == 0) {
        close(a[1]);
        close(b[0]);
        hung_child(holder_url, name, a[0], b[1]);
    }
    close(a[0]);
    close(b[1]);
    *to = a[1];
    *from = b[0];
    EXPECT(read(*from, &c, 1) == 1 && c == 'H');
    return pid;
}

static void t_hung(void)
{
    dlock_store *s = open_url(url);
    dlock_options w = opts(5000, 5000, 1);
    const char *n = nm("hung");
    dlock_lock *l;
    int to, from, status;
    int64_t t0;
    char c = 0;
    pid_t pid;

    /* Without renewal (a session of its own) and with it (the shared
     * session, whose renew thread stops with the process). */
    for (hung_renew = 0; hung_renew <= 1; hung_renew++) {
        n = nm(hung_renew ? "hung-renew" : "hung");
        pid = spawn_hung(url, n, &to, &from);
        kill(pid, SIGSTOP);
        t0 = now_ms();
        EXPECT(dlock_acquire(&l, s, n, &w) == DLOCK_OK);
        /* Not before its lease ran out, not long after. */
        EXPECT(now_ms() - t0 >= 300 && now_ms() - t0 < 2500);
        kill(pid, SIGCONT);
        EXPECT(write(to, "g", 1) == 1);
        EXPECT(read(from, &c, 1) == 1 && c == 'L');
        EXPECT(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
               WEXITSTATUS(status) == 0);
        EXPECT(dlock_assert_ttl(l, 1000) == DLOCK_OK);
        EXPECT(dlock_release(l) == DLOCK_OK);
        close(to);
        close(from);
    }
    hung_renew = 0;

    /* Held by another role, which we may not signal: we wait, and the
     * message says why. */
    if (strstr(url, "dlock:dlock-test-pw@") != NULL) {
        char other[1024];
        const char *at = strstr(url, "dlock:dlock-test-pw@");
        dlock_options w2 = opts(1500, 5000, 1);

        snprintf(other, sizeof(other), "%.*sother:other-pw@%s", (int)(at - url),
                 url, at + strlen("dlock:dlock-test-pw@"));
        n = nm("hung-other");
        pid = spawn_hung(other, n, &to, &from);
        kill(pid, SIGSTOP);
        t0 = now_ms();
        EXPECT(dlock_acquire(&l, s, n, &w2) == DLOCK_BUSY);
        EXPECT(now_ms() - t0 >= 1400 && now_ms() - t0 < 3000);
        EXPECT(strstr(dlock_errmsg(), "could not be terminated") != NULL);
        EXPECT(strstr(dlock_errmsg(), "pg_signal_backend") != NULL);
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        close(to);
        close(from);
        /* Its session ends with the process: free at once. */
        w2.wait_ms = 2000;
        EXPECT(dlock_acquire(&l, s, n, &w2) == DLOCK_OK);
        EXPECT(dlock_release(l) == DLOCK_OK);
    } else {
        printf("  (not the test server's roles: privilege case skipped)\n");
    }
    dlock_store_close(s);
}

/* --- killed connection ------------------------------------------------ */

static int lost_pipe[2];
static void lost_cb(dlock_lock *l, void *payload)
{
    (void)l;
    (void)payload;
    (void)!write(lost_pipe[1], "L", 1);
}

static void t_killed(void)
{
    dlock_store *s = open_url(url);
    dlock_options o = opts(0, 600, 1), o2 = opts(0, 60000, 0);
    const char *n = nm("killed");
    PGconn *c = raw();
    struct pollfd p;
    dlock_lock *l, *l2, *l3;
    dlock_info info;
    char ch;

    EXPECT(pipe(lost_pipe) == 0);
    o.on_lost = lost_cb;
    EXPECT(dlock_acquire(&l, s, n, &o) == DLOCK_OK);
    EXPECT(q1_is(c,
                 "SELECT count(pg_terminate_backend(backend_pid)) FROM "
                 "dlock_held WHERE name = $1",
                 n, "1"));
    p.fd = lost_pipe[0];
    p.events = POLLIN;
    EXPECT(poll(&p, 1, 3000) == 1);
    EXPECT(read(lost_pipe[0], &ch, 1) == 1 && ch == 'L');
    EXPECT(dlock_is_lost(l));
    EXPECT(dlock_release(l) == DLOCK_LOST);
    EXPECT(try_lock(s, n) == DLOCK_OK);

    /* Every dlock session gone at once (as in a server restart): a held
     * lock is LOST, and the handle reconnects for everything else. */
    EXPECT(dlock_acquire(&l2, s, nm("killed-2"), &o2) == DLOCK_OK);
    EXPECT(try_lock(s, nm("warm-pool")) == DLOCK_OK); /* an idle conn */
    EXPECT(q1_is(c,
                 "SELECT count(pg_terminate_backend(pid)) > 0 FROM "
                 "pg_stat_activity WHERE application_name = 'dlock' AND "
                 "datname = current_database()",
                 NULL, "t"));
    EXPECT(dlock_extend(l2, 0) == DLOCK_LOST);
    EXPECT(dlock_release(l2) == DLOCK_LOST);
    EXPECT(dlock_acquire(&l3, s, nm("killed-2"), &o2) == DLOCK_OK);
    EXPECT(test_status(s, nm("killed-2"), &info) == DLOCK_OK && info.held);
    EXPECT(dlock_release(l3) == DLOCK_OK);
    close(lost_pipe[0]);
    close(lost_pipe[1]);
    PQfinish(c);
    dlock_store_close(s);
}

/* --- force-release of one of a process's locks (issue 25) ------------- */

/* Two names held through one handle share its session (the mux): a
 * release --force of one costs the holder that lock only.  Its renewal
 * finds the row broken (LOST) and lets go of the key itself, which also
 * leaves its session free to take the name again at once; the other
 * lock stays held.  A holder that cannot let go (SIGSTOPped) is
 * terminated by a waiter once the broken row's short lease is over. */
static void t_force_one(void)
{
    dlock_store *s = open_url(url), *s2 = open_url(url);
    dlock_options o = opts(0, 1500, 1), w = opts(10000, 5000, 0);
    const char *n1 = nm("force-1"), *n2 = nm("force-2");
    dlock_lock *l1, *l2, *again, *l;
    unsigned removed = 0;
    struct pollfd p;
    int fds[2], status;
    int64_t t0;
    char ch;
    pid_t pid;

    EXPECT(pipe(lost_pipe) == 0);
    o.on_lost = lost_cb;
    EXPECT(dlock_acquire(&l1, s, n1, &o) == DLOCK_OK);
    EXPECT(dlock_acquire(&l2, s, n2, &o) == DLOCK_OK);
    EXPECT(dlock_force_release(&removed, s2, n1) == DLOCK_OK);
    EXPECT(removed == 1);
    p.fd = lost_pipe[0];
    p.events = POLLIN;
    EXPECT(poll(&p, 1, 3000) == 1); /* renewal at ttl/3 finds it broken */
    EXPECT(read(lost_pipe[0], &ch, 1) == 1 && ch == 'L');
    EXPECT(dlock_is_lost(l1));
    EXPECT(!dlock_is_lost(l2));
    EXPECT(dlock_extend(l2, 0) == DLOCK_OK);
    EXPECT(dlock_assert_ttl(l2, 500) == DLOCK_OK);
    /* The key is let go: free for others and for its own session. */
    EXPECT(try_lock(s2, n1) == DLOCK_OK);
    EXPECT(dlock_acquire(&again, s, n1, &o) == DLOCK_OK);
    EXPECT(dlock_release(again) == DLOCK_OK);
    EXPECT(dlock_release(l1) == DLOCK_LOST);
    EXPECT(poll(&p, 1, 600) == 0); /* l2 was never lost */
    EXPECT(dlock_assert_ttl(l2, 500) == DLOCK_OK);
    EXPECT(dlock_release(l2) == DLOCK_OK);

    /* A holder of two names that cannot let go: a waiter fences it off
     * after the broken row's lease (at most R / 2 of the 5 s), not
     * after the holder's whole lease. */
    EXPECT(pipe(fds) == 0);
    pid = fork();
    if (pid == 0) {
        dlock_store *cs = open_url(url);
        dlock_options co = opts(0, 5000, 1);

        if (dlock_acquire(&l, cs, nm("force-3"), &co) != DLOCK_OK ||
            dlock_acquire(&l, cs, nm("force-4"), &co) != DLOCK_OK)
            _exit(3);
        (void)!write(fds[1], "H", 1);
        for (;;)
            pause();
    }
    close(fds[1]);
    EXPECT(read(fds[0], &ch, 1) == 1 && ch == 'H');
    kill(pid, SIGSTOP);
    EXPECT(dlock_force_release(&removed, s2, nm("force-3")) == DLOCK_OK);
    t0 = now_ms();
    EXPECT(dlock_acquire(&l, s2, nm("force-3"), &w) == DLOCK_OK);
    EXPECT(now_ms() - t0 < 4000);
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    EXPECT(dlock_release(l) == DLOCK_OK);
    close(fds[0]);
    close(lost_pipe[0]);
    close(lost_pipe[1]);
    dlock_store_close(s2);
    dlock_store_close(s);
}

/* --- bad input ---------------------------------------------------------- */

/* A TCP listener on loopback that answers every connection with `reply`
 * (or nothing at all). */
struct fake {
    int fd;
    int port;
    const char *reply;
    pthread_t thr;
};

static void *fake_main(void *arg)
{
    struct fake *f = arg;

    for (;;) {
        int c = accept(f->fd, NULL, NULL);
        char buf[512];

        if (c < 0)
            return NULL;
        if (f->reply != NULL) {
            (void)!read(c, buf, sizeof(buf));
            (void)!write(c, f->reply, strlen(f->reply));
            close(c);
        }
        /* no reply: keep it open and silent (leaked until exit) */
    }
}

static void fake_start(struct fake *f, const char *reply)
{
    struct sockaddr_in a;
    socklen_t len = sizeof(a);

    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    f->fd = socket(AF_INET, SOCK_STREAM, 0);
    if (f->fd < 0 || bind(f->fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
        listen(f->fd, 8) != 0 ||
        getsockname(f->fd, (struct sockaddr *)&a, &len) != 0)
        exit(2);
    f->port = ntohs(a.sin_port);
    f->reply = reply;
    pthread_create(&f->thr, NULL, fake_main, f);
    pthread_detach(f->thr);
}

static int open_rc(const char *u, int64_t *took)
{
    dlock_store *s = NULL;
    int64_t t0 = now_ms();
    int rc = dlock_store_open(&s, u);

    *took = now_ms() - t0;
    dlock_store_close(s);
    return rc;
}

static void t_badinput(void)
{
    char u[1024];
    int64_t took;
    int rc;
    char *ddl = NULL;
    struct fake garbage, silent;
    const char *at = strstr(url, "@");

    /* Wrong password: an error, and the password is not in it. */
    if (at != NULL) {
        snprintf(u, sizeof(u), "postgres://dlock:Wr0ngSecret%s", at);
        rc = open_rc(u, &took);
        EXPECT(rc == DLOCK_EUNAVAIL || rc == DLOCK_ESTORE);
        EXPECT(strstr(dlock_errmsg(), "password authentication") != NULL);
        EXPECT(strstr(dlock_errmsg(), "Wr0ngSecret") == NULL);
    }
    /* A database that does not exist. */
    {
        const char *slash = strrchr(url, '/');
        const char *q = strchr(url, '?');

        snprintf(u, sizeof(u), "%.*s/no_such_db_%d%s", (int)(slash - url), url,
                 (int)getpid(), q ? q : "");
        rc = open_rc(u, &took);
        EXPECT(rc == DLOCK_EUNAVAIL || rc == DLOCK_ESTORE);
        EXPECT(strstr(dlock_errmsg(), "does not exist") != NULL);
    }
    /* dlock's options are checked and not passed to libpq. */
    EXPECT(open_rc(with("keys=md5"), &took) == DLOCK_EINVAL);
    EXPECT(open_rc(with("mode=fast"), &took) == DLOCK_EINVAL);
    EXPECT(open_rc(with("timeout=abc"), &took) == DLOCK_EINVAL);
    /* Given twice: which one counts is nobody's guess, so neither does. */
    EXPECT(open_rc(with("mode=lease&mode=session"), &took) == DLOCK_EINVAL &&
           msg_has("\"mode\" is given twice"));
    EXPECT(open_rc(with("keys=hashtext&keys=hashtext"), &took) ==
               DLOCK_EINVAL &&
           msg_has("\"keys\""));
    EXPECT(open_rc(with("keys=hashtext&mode=lease&timeout=3s&"
                        "application_name=dlock-test"),
                   &took) == DLOCK_OK);
    /* libpq's own options pass through, and libpq judges them. */
    EXPECT(open_rc(with("sslmode=bogus"), &took) != DLOCK_OK);
    EXPECT(open_rc("postgres://[::1", &took) == DLOCK_EINVAL);
    /* The DDL without a connection. */
    EXPECT(dlock_ddl(&ddl, "postgres://nobody@192.0.2.1:1/x") == DLOCK_OK);
    EXPECT(ddl != NULL && strstr(ddl, "dlock_locks") != NULL &&
           strstr(ddl, "dlock_fences") != NULL);
    dlock_free(ddl);

    /* Nothing listening: a prompt EUNAVAIL. */
    fake_start(&garbage, "HTTP/1.0 400 Bad Request\r\n\r\nnot postgres\n");
    close(garbage.fd); /* stop listening: connection refused from now */
    snprintf(u, sizeof(u), "postgres://dlock:pw@127.0.0.1:%d/x", garbage.port);
    rc = open_rc(u, &took);
    EXPECT(rc == DLOCK_EUNAVAIL && took < 3000);

    /* A server that is not PostgreSQL. */
    fake_start(&garbage, "HTTP/1.0 400 Bad Request\r\n\r\nnot postgres\n");
    snprintf(u, sizeof(u), "postgres://dlock:pw@127.0.0.1:%d/x", garbage.port);
    rc = open_rc(u, &took);
    EXPECT(rc == DLOCK_EUNAVAIL && took < 3000);
    EXPECT(strstr(dlock_errmsg(), "127.0.0.1") != NULL);

    /* One that accepts and never answers: bounded by connect_timeout. */
    fake_start(&silent, NULL);
    snprintf(u, sizeof(u),
             "postgres://dlock:pw@127.0.0.1:%d/x?connect_timeout=2",
             silent.port);
    rc = open_rc(u, &took);
    EXPECT(rc == DLOCK_EUNAVAIL && took >= 1500 && took < 6000);
}

/* --- many locks, few connections ------------------------------------ */

static long dlock_backends(PGconn *c)
{
    char *v = q1(c,
                 "SELECT count(*) FROM pg_stat_activity WHERE "
                 "application_name = 'dlock' AND datname = "
                 "current_database()",
                 NULL);
    long n = v != NULL ? atol(v) : -1;

    free(v);
    return n;
}

static void t_mux(void)
{
    enum { N = 400 };
    dlock_store *s = open_url(url), *s2 = open_url(url);
    dlock_options o = opts(0, 10000, 1), sh = o, w = opts(300, 5000, 1);
    static dlock_lock *l[N];
    PGconn *c = raw();
    char base[32];
    dlock_lock *a, *b, *x;
    long before = dlock_backends(c);

    for (int i = 0; i < N; i++) {
        snprintf(base, sizeof(base), "mux/%03d", i);
        EXPECT(dlock_acquire(&l[i], s, nm(base), &o) == DLOCK_OK);
    }
    /* Held through one shared session (plus a pooled connection). */
    EXPECT(dlock_backends(c) - before <= 2);
    /* The same process, the same session: still exclusive... */
    EXPECT(dlock_acquire(&x, s, nm("mux/007"), &o) == DLOCK_BUSY);
    EXPECT(dlock_acquire(&x, s2, nm("mux/007"), &o) == DLOCK_BUSY);
    /* ...also for a waiter, which waits on a session of its own. */
    EXPECT(dlock_acquire(&x, s, nm("mux/007"), &w) == DLOCK_BUSY);
    /* Readers share, in one session too; a writer waits for both. */
    sh.shared = 1;
    EXPECT(dlock_acquire(&a, s, nm("mux-sh"), &sh) == DLOCK_OK);
    EXPECT(dlock_acquire(&b, s, nm("mux-sh"), &sh) == DLOCK_OK);
    EXPECT(dlock_acquire(&x, s, nm("mux-sh"), &o) == DLOCK_BUSY);
    EXPECT(dlock_release(a) == DLOCK_OK);
    EXPECT(dlock_acquire(&x, s, nm("mux-sh"), &o) == DLOCK_BUSY);
    EXPECT(dlock_release(b) == DLOCK_OK);
    EXPECT(dlock_acquire(&x, s, nm("mux-sh"), &o) == DLOCK_OK);
    EXPECT(dlock_release(x) == DLOCK_OK);
    /* Releasing one leaves the others held. */
    EXPECT(dlock_release(l[7]) == DLOCK_OK);
    EXPECT(dlock_acquire(&x, s2, nm("mux/007"), &o) == DLOCK_OK);
    EXPECT(dlock_acquire(&l[7], s, nm("mux/008"), &o) == DLOCK_BUSY);
    EXPECT(dlock_release(x) == DLOCK_OK);
    for (int i = 0; i < N; i++)
        if (i != 7)
            EXPECT(dlock_assert_ttl(l[i], 1000) == DLOCK_OK);
    for (int i = 0; i < N; i++)
        if (i != 7)
            EXPECT(dlock_release(l[i]) == DLOCK_OK);
    EXPECT(q1_is(c,
                 "SELECT count(*) FROM pg_locks WHERE locktype = "
                 "'advisory' AND pid IN (SELECT pid FROM "
                 "pg_stat_activity WHERE application_name = 'dlock')",
                 NULL, "0"));
    PQfinish(c);
    dlock_store_close(s);
    dlock_store_close(s2);
}

/* --- lease mode ----------------------------------------------------------- */

static void t_lease(void)
{
    dlock_store *s = open_url(with("mode=lease"));
    dlock_options o = opts(0, 5000, 1);
    const char *n = nm("lease");
    PGconn *c = raw();
    dlock_lock *l;

    EXPECT(dlock_acquire(&l, s, n, &o) == DLOCK_OK);
    /* A row, and no advisory lock anywhere for it. */
    EXPECT(q1_is(c,
                 "SELECT count(*) FROM dlock_locks WHERE name = $1 AND "
                 "backend_pid = 0",
                 n, "1"));
    EXPECT(q1_is(c, "SELECT pg_try_advisory_lock(hashtextextended($1, 0))", n,
                 "t"));
    EXPECT(
        q1_is(c, "SELECT pg_advisory_unlock(hashtextextended($1, 0))", n, "t"));
    EXPECT(try_lock(s, n) == DLOCK_BUSY);
    EXPECT(dlock_release(l) == DLOCK_OK);
    EXPECT(
        q1_is(c, "SELECT count(*) FROM dlock_locks WHERE name = $1", n, "0"));
    PQfinish(c);
    dlock_store_close(s);
}

/* --- semaphores ------------------------------------------------------------
 */

static dlock_options sem(int64_t wait_ms, unsigned limit)
{
    dlock_options o = opts(wait_ms, 5000, 1);

    o.limit = limit;
    return o;
}

struct sem_waiter {
    dlock_store *s;
    const char *name;
    unsigned limit;
    int done[2]; /* written when the acquire returns */
    int rc;
    dlock_lock *l;
};

static void *sem_wait_main(void *arg)
{
    struct sem_waiter *w = arg;
    dlock_options o = sem(10000, w->limit);

    w->rc = dlock_acquire(&w->l, w->s, w->name, &o);
    (void)!write(w->done[1], "W", 1);
    return NULL;
}

/* 1 if fd becomes readable within ms. */
static int readable(int fd, int ms)
{
    struct pollfd p = {fd, POLLIN, 0};

    return poll(&p, 1, ms) == 1;
}

/* A process holding one slot (its own store, default lease) until it is
 * killed; returns once it holds it. */
static pid_t spawn_sem_holder(const char *u, const char *name, unsigned limit)
{
    int p[2];
    pid_t pid;
    char c = 0;

    if (pipe(p) != 0)
        exit(2);
    pid = fork();
    if (pid == 0) {
        dlock_options o = sem(0, limit);
        dlock_store *s;
        dlock_lock *l;

        close(p[0]);
        o.ttl_ms = 30000;
        if (dlock_store_open(&s, u) != DLOCK_OK ||
            dlock_acquire(&l, s, name, &o) != DLOCK_OK) {
            fprintf(stderr, "sem holder: %s\n", dlock_errmsg());
            _exit(3);
        }
        (void)!write(p[1], "H", 1);
        for (;;)
            pause();
    }
    close(p[1]);
    EXPECT(read(p[0], &c, 1) == 1 && c == 'H');
    close(p[0]);
    return pid;
}

static void sem_case(const char *u, const char *base, int session)
{
    enum { N = 3 };
    const char *n = nm(base);
    char other[300];
    dlock_store *s[N + 1];
    dlock_lock *l[N], *x = NULL, *m[N];
    dlock_options o;
    dlock_info *info = NULL;
    struct sem_waiter w;
    pthread_t th;
    uint64_t last = 0;
    int64_t t0;
    char c;

    snprintf(other, sizeof(other), "%s-other", n);
    for (int i = 0; i <= N; i++)
        s[i] = open_url(u);
    /* N holders, each on a handle of its own; fences rise. */
    for (int i = 0; i < N; i++) {
        o = sem(0, N);
        EXPECT(dlock_acquire(&l[i], s[i], n, &o) == DLOCK_OK);
        EXPECT(dlock_fence(l[i]) > last);
        last = dlock_fence(l[i]);
    }
    o = sem(0, N);
    EXPECT(dlock_acquire(&x, s[N], n, &o) == DLOCK_BUSY);
    EXPECT(dlock_status(&info, s[N], n) == DLOCK_OK);
    EXPECT(info != NULL && info->held && info->holders == N &&
           info->limit == N && !info->shared && info->fence >= last);
    dlock_info_free(info);
    /* Another limit, or a lock, while it is held: EINVAL naming it. */
    o = sem(0, N + 1);
    EXPECT(dlock_acquire(&x, s[N], n, &o) == DLOCK_EINVAL &&
           msg_has("limit 3"));
    o = sem(2000, 2);
    EXPECT(dlock_acquire(&x, s[N], n, &o) == DLOCK_EINVAL &&
           msg_has("limit 3"));
    o = opts(0, 5000, 1);
    EXPECT(dlock_acquire(&x, s[N], n, &o) == DLOCK_EINVAL &&
           msg_has("limit 3"));
    o.shared = 1;
    EXPECT(dlock_acquire(&x, s[N], n, &o) == DLOCK_EINVAL &&
           msg_has("limit 3"));
    o = opts(300, 5000, 1);
    EXPECT(dlock_acquire(&x, s[N], n, &o) == DLOCK_EINVAL &&
           msg_has("limit 3"));

    /* A waiter blocks, and gets the slot released. */
    w.s = s[N];
    w.name = n;
    w.limit = N;
    w.l = NULL;
    if (pipe(w.done) != 0)
        exit(2);
    pthread_create(&th, NULL, sem_wait_main, &w);
    EXPECT(!readable(w.done[0], 300)); /* still waiting */
    t0 = now_ms();
    EXPECT(dlock_release(l[1]) == DLOCK_OK);
    EXPECT(readable(w.done[0], 3000) && read(w.done[0], &c, 1) == 1);
    pthread_join(th, NULL);
    EXPECT(w.rc == DLOCK_OK && dlock_fence(w.l) > last);
    EXPECT(now_ms() - t0 < 1500);
    if (w.l != NULL)
        last = dlock_fence(w.l);
    close(w.done[0]);
    close(w.done[1]);
    l[1] = w.l;
    o = sem(0, N);
    EXPECT(dlock_acquire(&x, s[N], n, &o) == DLOCK_BUSY);
    for (int i = 0; i < N; i++)
        EXPECT(dlock_release(l[i]) == DLOCK_OK);

    /* N holders through one handle (one session in session mode). */
    for (int i = 0; i < N; i++) {
        o = sem(0, N);
        EXPECT(dlock_acquire(&m[i], s[0], n, &o) == DLOCK_OK);
        EXPECT(dlock_fence(m[i]) > last);
        last = dlock_fence(m[i]);
    }
    o = sem(0, N);
    EXPECT(dlock_acquire(&x, s[0], n, &o) == DLOCK_BUSY);
    EXPECT(dlock_acquire(&x, s[1], n, &o) == DLOCK_BUSY);
    o = opts(0, 5000, 1);
    EXPECT(dlock_acquire(&x, s[0], n, &o) == DLOCK_EINVAL &&
           msg_has("limit 3"));
    o.shared = 1;
    EXPECT(dlock_acquire(&x, s[0], n, &o) == DLOCK_EINVAL &&
           msg_has("limit 3"));
    for (int i = 0; i < N; i++)
        EXPECT(dlock_release(m[i]) == DLOCK_OK);
    EXPECT(dlock_status(&info, s[N], n) == DLOCK_OK);
    EXPECT(info != NULL && !info->held && info->holders == 0);
    dlock_info_free(info);

    /* A lock (exclusive, then shared) in force refuses a semaphore. */
    o = opts(0, 5000, 1);
    EXPECT(dlock_acquire(&x, s[0], other, &o) == DLOCK_OK);
    o = sem(0, N);
    EXPECT(dlock_acquire(&l[0], s[1], other, &o) == DLOCK_EINVAL &&
           msg_has("limit 1"));
    EXPECT(dlock_release(x) == DLOCK_OK);
    o = opts(0, 5000, 1);
    o.shared = 1;
    EXPECT(dlock_acquire(&x, s[0], other, &o) == DLOCK_OK);
    o = sem(0, N);
    EXPECT(dlock_acquire(&l[0], s[1], other, &o) == DLOCK_EINVAL &&
           msg_has("limit 1"));
    EXPECT(dlock_acquire(&l[0], s[0], other, &o) == DLOCK_EINVAL &&
           msg_has("limit 1"));
    EXPECT(dlock_release(x) == DLOCK_OK);
    EXPECT(dlock_acquire(&l[0], s[1], other, &o) == DLOCK_OK);
    EXPECT(dlock_release(l[0]) == DLOCK_OK);

    if (session) {
        /* kill -9 of a holder: its session ends, its slot is free at
         * once (its lease has 30 s left). */
        pid_t pid;
        int st;

        for (int i = 0; i < N - 1; i++) {
            o = sem(0, N);
            EXPECT(dlock_acquire(&l[i], s[i], n, &o) == DLOCK_OK);
        }
        pid = spawn_sem_holder(u, n, N);
        o = sem(0, N);
        EXPECT(dlock_acquire(&x, s[N], n, &o) == DLOCK_BUSY);
        t0 = now_ms();
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        o = sem(5000, N);
        EXPECT(dlock_acquire(&x, s[N], n, &o) == DLOCK_OK);
        EXPECT(now_ms() - t0 < 2000);
        EXPECT(x != NULL && dlock_fence(x) > last);
        EXPECT(dlock_release(x) == DLOCK_OK);
        for (int i = 0; i < N - 1; i++)
            EXPECT(dlock_release(l[i]) == DLOCK_OK);
    }
    for (int i = 0; i <= N; i++)
        dlock_store_close(s[i]);
}

static void t_semaphore(void)
{
    PGconn *c = raw();
    dlock_store *s = open_url(url);
    dlock_options o = sem(0, 2);
    const char *n = nm("sem-raw");
    dlock_lock *l;

    sem_case(url, "sem", 1);
    sem_case(with("keys=hashtext"), "sem-ht", 1);
    sem_case(with("mode=lease"), "sem-lease", 0);
    /* A client that is not dlock holding the name's key: BUSY, not
     * EINVAL (no limit is known). */
    EXPECT(q1_is(c, "SELECT pg_try_advisory_lock(hashtextextended($1, 0))", n,
                 "t"));
    EXPECT(dlock_acquire(&l, s, n, &o) == DLOCK_BUSY);
    EXPECT(
        q1_is(c, "SELECT pg_advisory_unlock(hashtextextended($1, 0))", n, "t"));
    EXPECT(dlock_acquire(&l, s, n, &o) == DLOCK_OK);
    EXPECT(dlock_release(l) == DLOCK_OK);
    /* Nothing left behind. */
    EXPECT(q1_is(c,
                 "SELECT count(*) FROM pg_locks WHERE locktype = "
                 "'advisory' AND pid IN (SELECT pid FROM "
                 "pg_stat_activity WHERE application_name = 'dlock')",
                 NULL, "0"));
    PQfinish(c);
    dlock_store_close(s);
}

/* --- the server's lock table ---------------------------------------------- */

/* ?max_keys=N: a handle holds at most N session advisory keys (a lock 1,
 * a semaphore holder 3).  Past it an acquire, try or wait, is ESTORE at
 * once, naming the limit, and takes nothing; the held locks go on; a
 * release makes room.  Bad values are EINVAL. */
static void t_max_keys(void)
{
    dlock_store *s = open_url(with("max_keys=3")), *bad = NULL;
    dlock_options o = opts(0, 10000, 1), w = opts(2000, 10000, 1),
                  so = sem(0, 2);
    dlock_lock *l[3] = {NULL, NULL, NULL}, *x = NULL;
    PGconn *c = raw();
    char four[256];
    int64_t t0;

    snprintf(four, sizeof(four), "%s", nm("mk/3")); /* nm's buffers rotate */
    for (int i = 0; i < 3; i++) {
        char base[32];

        snprintf(base, sizeof(base), "mk/%d", i);
        EXPECT(dlock_acquire(&l[i], s, nm(base), &o) == DLOCK_OK);
    }
    EXPECT(dlock_acquire(&x, s, four, &o) == DLOCK_ESTORE);
    EXPECT(msg_has("max_keys=3"));
    t0 = now_ms();
    EXPECT(dlock_acquire(&x, s, four, &w) == DLOCK_ESTORE);
    EXPECT(now_ms() - t0 < 1000); /* refused, not waited for */
    EXPECT(dlock_acquire(&x, s, nm("mk/sem"), &so) == DLOCK_ESTORE);
    /* Nothing of the refused ones was taken. */
    EXPECT(q1_is(c, "SELECT pg_try_advisory_lock(hashtextextended($1, 0))",
                 four, "t"));
    EXPECT(q1_is(c, "SELECT pg_advisory_unlock(hashtextextended($1, 0))", four,
                 "t"));
    for (int i = 0; i < 3; i++)
        EXPECT(dlock_assert_ttl(l[i], 1000) == DLOCK_OK);
    /* A release makes room, for a lock, then (three free) a semaphore. */
    EXPECT(dlock_release(l[0]) == DLOCK_OK);
    EXPECT(dlock_acquire(&x, s, four, &o) == DLOCK_OK);
    EXPECT(dlock_release(x) == DLOCK_OK);
    EXPECT(dlock_acquire(&x, s, nm("mk/sem"), &so) == DLOCK_ESTORE);
    EXPECT(dlock_release(l[1]) == DLOCK_OK);
    EXPECT(dlock_release(l[2]) == DLOCK_OK);
    EXPECT(dlock_acquire(&x, s, nm("mk/sem"), &so) == DLOCK_OK);
    EXPECT(dlock_release(x) == DLOCK_OK);
    /* A wait given up gives its count back. */
    EXPECT(dlock_acquire(&l[0], s, nm("mk/0"), &o) == DLOCK_OK);
    EXPECT(dlock_acquire(&l[1], s, nm("mk/1"), &o) == DLOCK_OK);
    EXPECT(q1_is(c, "SELECT pg_try_advisory_lock(hashtextextended($1, 0))",
                 four, "t"));
    w.wait_ms = 100;
    EXPECT(dlock_acquire(&x, s, four, &w) == DLOCK_BUSY);
    EXPECT(dlock_acquire(&x, s, four, &w) == DLOCK_BUSY);
    EXPECT(q1_is(c, "SELECT pg_advisory_unlock(hashtextextended($1, 0))", four,
                 "t"));
    EXPECT(dlock_acquire(&x, s, four, &o) == DLOCK_OK);
    EXPECT(dlock_release(x) == DLOCK_OK);
    EXPECT(dlock_release(l[0]) == DLOCK_OK);
    EXPECT(dlock_release(l[1]) == DLOCK_OK);
    /* ?max_keys=0: no limit. */
    dlock_store_close(s);
    s = open_url(with("max_keys=0"));
    for (int i = 0; i < 3; i++) {
        char base[32];

        snprintf(base, sizeof(base), "mk/%d", i);
        EXPECT(dlock_acquire(&l[i], s, nm(base), &o) == DLOCK_OK);
    }
    EXPECT(dlock_acquire(&x, s, four, &o) == DLOCK_OK);
    EXPECT(dlock_release(x) == DLOCK_OK);
    for (int i = 0; i < 3; i++)
        EXPECT(dlock_release(l[i]) == DLOCK_OK);
    dlock_store_close(s);
    /* A semaphore holder needs 3: a limit under that says so, and what
     * the handle holds (nothing). */
    s = open_url(with("max_keys=2"));
    EXPECT(dlock_acquire(&x, s, nm("mk/sem"), &so) == DLOCK_ESTORE);
    EXPECT(msg_has("needs 3 advisory keys") && msg_has("holds 0") &&
           msg_has("max_keys=2"));
    dlock_store_close(s);
    EXPECT(dlock_store_open(&bad, with("max_keys=-1")) == DLOCK_EINVAL);
    EXPECT(msg_has("max_keys=-1"));
    EXPECT(dlock_store_open(&bad, with("max_keys=lots")) == DLOCK_EINVAL);
    EXPECT(dlock_store_open(&bad, with("max_keys=")) == DLOCK_EINVAL);
    EXPECT(dlock_store_open(&bad, with("max_keys=99999999999999999999")) ==
           DLOCK_EINVAL);
    PQfinish(c);
}

/* --- the durable ceiling of session fences ------------------------------ */

static uint64_t ceiling(PGconn *c)
{
    char *v = q1(c, "SELECT fence FROM dlock_fences WHERE name = ''", NULL);
    uint64_t r = v != NULL ? strtoull(v, NULL, 10) : 0;

    free(v);
    return r;
}

/* A handle's sessions (the mux, and a pooled one of a lock without
 * auto-renewal) drawing across the ceiling, three times: each fence
 * rises and is below the row '' of dlock_fences once handed out.  Each
 * session keeps a copy of the ceiling; the copy has to follow the raises
 * of its own and of the other session.  The crash itself:
 * postgres-fence-crash. */
static void t_ceiling(void)
{
    dlock_store *s = open_url(url);
    PGconn *c = raw();
    dlock_options mux = opts(0, 5000, 1), own = opts(0, 5000, 0);
    uint64_t last = 0;
    char to[32];

    for (int round = 0; round < 3; round++) {
        /* Half a block (2^19) below the ceiling, less 3; never back. */
        snprintf(to, sizeof(to), "%llu",
                 (unsigned long long)(ceiling(c) - 524288 - 3));
        free(q1(c,
                "SELECT setval('dlock_fence_seq', greatest(last_value, "
                "$1::bigint)) FROM dlock_fence_seq",
                to));
        for (int i = 0; i < 6; i++) {
            dlock_lock *l = NULL;
            uint64_t f;

            EXPECT(dlock_acquire(&l, s, nm("ceiling"), i % 2 ? &mux : &own) ==
                   DLOCK_OK);
            if (l == NULL)
                continue;
            f = dlock_fence(l);
            EXPECT(f > last);
            EXPECT(f < ceiling(c));
            if (f >= ceiling(c))
                fprintf(stderr, "  fence %llu, ceiling %llu\n",
                        (unsigned long long)f, (unsigned long long)ceiling(c));
            last = f;
            EXPECT(dlock_release(l) == DLOCK_OK);
        }
    }
    PQfinish(c);
    dlock_store_close(s);
}

/* --- run records ------------------------------------------------------- */

struct run_racer {
    dlock_lock *l;
    dlock_run_rule rule;
    int rc, go;
    int done[2];
};

static void *run_racer_main(void *p)
{
    struct run_racer *r = p;

    r->rc = dlock_run_begin(r->l, &r->rule, &r->go, NULL);
    if (write(r->done[1], "x", 1) != 1)
        r->rc = -1;
    return NULL;
}

/* Sessions of this server waiting for a lock whose query names what. */
static int lock_waiters(PGconn *c, const char *what)
{
    char *v = q1(c,
                 "SELECT count(*) FROM pg_stat_activity WHERE "
                 "application_name = 'dlock' AND wait_event_type = 'Lock' "
                 "AND strpos(query, $1) > 0",
                 what);
    int n = v != NULL ? atoi(v) : -1;

    free(v);
    return n;
}

/* Three holders of a semaphore of 3 begin runs of a name at once, by one
 * period: one goes ahead.  A raw transaction holds the name's summary row
 * (uncommitted, as a first run would) until all three wait on it, so
 * they decide one after the other, each seeing the one before. */
static void runs_sem_race(const char *u, const char *base)
{
    enum { N = 3 };
    const char *n = nm(base);
    dlock_store *s[N];
    struct run_racer r[N];
    pthread_t th[N];
    /* c holds the row; w looks (a transaction sees pg_stat_activity as
     * it was when it first looked). */
    PGconn *c = raw(), *w = raw();
    int went = 0, waiting = 0;

    /* The run tables, on a server whose lock tables predate them. */
    s[0] = open_url(u);
    EXPECT(dlock_store_init(s[0]) == DLOCK_OK);
    dlock_store_close(s[0]);
    free(q1(c, "BEGIN", NULL));
    {
        char *v = q1(c,
                     "INSERT INTO dlock_run_names (name) VALUES ($1) "
                     "RETURNING 1",
                     n);

        EXPECT(v != NULL && strcmp(v, "1") == 0);
        free(v);
    }
    for (int i = 0; i < N; i++) {
        dlock_options o = sem(0, N);

        s[i] = open_url(u);
        memset(&r[i], 0, sizeof(r[i]));
        r[i].rule.period_ms = 60000;
        r[i].rc = -1;
        EXPECT(dlock_acquire(&r[i].l, s[i], n, &o) == DLOCK_OK);
        if (pipe(r[i].done) != 0)
            exit(2);
        if (r[i].l != NULL)
            pthread_create(&th[i], NULL, run_racer_main, &r[i]);
    }
    for (int t = 0; t < 500 && waiting < N; t++) {
        waiting = lock_waiters(w, "dlock_run_names");
        if (waiting < N)
            sleep_ms(10);
    }
    if (waiting != N)
        fprintf(stderr, "  %d of %d run_begin wait on the summary row\n",
                waiting, N);
    EXPECT(waiting == N);
    for (int i = 0; i < N; i++)
        EXPECT(!readable(r[i].done[0], 0)); /* all still waiting */
    free(q1(c, "COMMIT", NULL));
    for (int i = 0; i < N; i++) {
        if (r[i].l == NULL)
            continue;
        EXPECT(readable(r[i].done[0], 5000));
        pthread_join(th[i], NULL);
        if (r[i].rc != DLOCK_OK)
            fprintf(stderr, "  run_begin: %d\n", r[i].rc);
        EXPECT(r[i].rc == DLOCK_OK);
        went += r[i].go;
        if (r[i].go)
            EXPECT(dlock_run_end(r[i].l, DLOCK_RUN_EXITED, 0) == DLOCK_OK);
        EXPECT(dlock_release(r[i].l) == DLOCK_OK);
    }
    EXPECT(went == 1);
    for (int i = 0; i < N; i++) {
        close(r[i].done[0]);
        close(r[i].done[1]);
        dlock_store_close(s[i]);
    }
    PQfinish(c);
    PQfinish(w);
}

static int runs_cb(const dlock_run *run, void *p)
{
    char *out = p;
    size_t len = strlen(out);

    snprintf(out + len, 4096 - len, "%s|", strrchr(run->name, '/') + 1);
    return 0;
}

/* Names of any bytes are stored and found as given; a prefix's LIKE
 * wildcards and escape character are taken literally. */
static void runs_names(const char *u)
{
    static const char *const names[] = {
        "o'k", "b\\s",  "a_b",
        "axb", "p%q",   "pxq",
        "e!x", "dd$$x", "\xc3\xa9t\xc3\xa9",
    };
    dlock_store *s = open_url(u);
    dlock_run_rule rule = DLOCK_RUN_RULE_INIT;
    char name[300], pre[300], out[4096];

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        dlock_options o = opts(0, 5000, 1);
        dlock_lock *l = NULL;
        int go = 0;

        snprintf(name, sizeof(name), "%s/%s", nm("names"), names[i]);
        EXPECT(dlock_acquire(&l, s, name, &o) == DLOCK_OK);
        EXPECT(dlock_run_begin(l, &rule, &go, NULL) == DLOCK_OK && go);
        EXPECT(dlock_run_end(l, DLOCK_RUN_EXITED, (int)i) == DLOCK_OK);
        EXPECT(dlock_release(l) == DLOCK_OK);
        out[0] = '\0';
        EXPECT(dlock_history(s, name, 0, runs_cb, out) == DLOCK_OK);
        snprintf(pre, sizeof(pre), "%s|", names[i]);
        EXPECT(strcmp(out, pre) == 0);
    }
    {
        static const char *const want[][2] = {
            {"a_", "a_b|"},
            {"p%", "p%q|"},
            {"e!", "e!x|"},
            {"o'", "o'k|"},
            {"b\\", "b\\s|"},
            {"dd$", "dd$$x|"},
            {"\xc3\xa9", "\xc3\xa9t\xc3\xa9|"},
        };

        for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
            snprintf(pre, sizeof(pre), "%s/%s", nm("names"), want[i][0]);
            out[0] = '\0';
            EXPECT(dlock_last_runs(s, pre, runs_cb, out) == DLOCK_OK);
            if (strcmp(out, want[i][1]) != 0)
                fprintf(stderr, "  last_runs(%s): %s, want %s\n", pre, out,
                        want[i][1]);
            EXPECT(strcmp(out, want[i][1]) == 0);
        }
    }
    dlock_store_close(s);
}

static int count_cb(const dlock_run *run, void *p)
{
    (void)run;
    ++*(int *)p;
    return 0;
}

/* A store whose lock tables predate run records, used by a role that
 * owns none of its objects (only CREATE on the schema): the readers see
 * no runs, the first run begin creates the run tables and records.  In
 * a schema of its own, so that tests running beside it keep theirs. */
static void runs_lazy(void)
{
    PGconn *c = raw();
    char schema[64], sql[512], u[1024], *o;
    const char *at;
    dlock_store *s;
    dlock_lock *l = NULL;
    dlock_options opt = opts(0, 5000, 1);
    dlock_run_rule rule = DLOCK_RUN_RULE_INIT;
    int go = 0, n = 0;

    snprintf(schema, sizeof(schema), "runs_lazy_%d", (int)getpid());
    snprintf(sql, sizeof(sql), "CREATE SCHEMA %s", schema);
    free(q1(c, sql, NULL));
    /* as the owner (dlock): every object, then the run tables dropped */
    snprintf(u, sizeof(u), "%s%coptions=-csearch_path%%3D%s", url,
             strchr(url, '?') != NULL ? '&' : '?', schema);
    dlock_store_close(open_url(u));
    {
        static const char *const fmt[] = {
            "DROP TABLE %s.dlock_runs, %s.dlock_run_names",
            "GRANT USAGE, CREATE ON SCHEMA %s TO other",
            "GRANT ALL ON ALL TABLES IN SCHEMA %s TO other",
            "GRANT ALL ON ALL SEQUENCES IN SCHEMA %s TO other",
        };

        for (size_t i = 0; i < sizeof(fmt) / sizeof(fmt[0]); i++) {
            snprintf(sql, sizeof(sql), fmt[i], schema, schema);
            o = q1(c, sql, NULL);
            if (o == NULL)
                fprintf(stderr, "  %s: %s", sql, PQerrorMessage(c));
            EXPECT(o != NULL);
            free(o);
        }
    }
    /* as "other" */
    at = strchr(url, '@');
    CHECK(at != NULL);
    snprintf(u, sizeof(u),
             "postgres://other:other-pw%s%coptions=-csearch_"
             "path%%3D%s",
             at, strchr(url, '?') != NULL ? '&' : '?', schema);
    s = open_url(u);
    EXPECT(dlock_history(s, nm("lazy"), 0, count_cb, &n) == DLOCK_OK && n == 0);
    EXPECT(dlock_last_runs(s, "", count_cb, &n) == DLOCK_OK && n == 0);
    EXPECT(dlock_acquire(&l, s, nm("lazy"), &opt) == DLOCK_OK);
    EXPECT(dlock_run_begin(l, &rule, &go, NULL) == DLOCK_OK && go);
    EXPECT(dlock_run_end(l, DLOCK_RUN_EXITED, 0) == DLOCK_OK);
    EXPECT(dlock_release(l) == DLOCK_OK);
    EXPECT(dlock_history(s, nm("lazy"), 0, count_cb, &n) == DLOCK_OK && n == 1);
    dlock_store_close(s);
    free(q1(c, "SET client_min_messages = warning", NULL));
    snprintf(sql, sizeof(sql), "DROP SCHEMA %s CASCADE", schema);
    o = q1(c, sql, NULL);
    EXPECT(o != NULL);
    free(o);
    PQfinish(c);
}

static void t_runs(void)
{
    runs_sem_race(url, "runs-sem");
    runs_sem_race(with("mode=lease"), "runs-sem-lease");
    runs_names(url);
    runs_lazy();
}

/* --- runs kept per name ------------------------------------------------- */

/* A name's runs as dlock_history() gives them: how many, the newest and
 * the oldest fence, and whether each was older than the one before. */
struct kept_seen {
    int n, ordered;
    uint64_t newest, oldest;
};

static int kept_cb(const dlock_run *run, void *p)
{
    struct kept_seen *k = p;

    if (k->n == 0)
        k->newest = run->fence;
    else if (run->fence >= k->oldest)
        k->ordered = 0;
    k->oldest = run->fence;
    k->n++;
    return 0;
}

static struct kept_seen kept_look(dlock_store *s, const char *name)
{
    struct kept_seen k = {0, 1, 0, 0};

    EXPECT(dlock_history(s, name, 0, kept_cb, &k) == DLOCK_OK);
    EXPECT(k.ordered);
    return k;
}

/* One run of name, begun and ended exited 0: its fence (0: it failed). */
static uint64_t kept_run(dlock_store *s, const char *name)
{
    dlock_options o = opts(0, 5000, 1);
    dlock_run_rule rule = DLOCK_RUN_RULE_INIT;
    dlock_lock *l = NULL;
    uint64_t f = 0;
    int go = 0;

    if (dlock_acquire(&l, s, name, &o) != DLOCK_OK) {
        fprintf(stderr, "  acquire %s: %s\n", name, dlock_errmsg());
        failures++;
        return 0;
    }
    if (dlock_run_begin(l, &rule, &go, NULL) == DLOCK_OK && go &&
        dlock_run_end(l, DLOCK_RUN_EXITED, 0) == DLOCK_OK)
        f = dlock_fence(l);
    else
        fprintf(stderr, "  run %s: %s\n", name, dlock_errmsg());
    EXPECT(f != 0);
    EXPECT(dlock_release(l) == DLOCK_OK);
    return f;
}

/* Plant n runs of name with fences 1..n (below any dlock gives: lease
 * mode's fences of the name are raised past them), as an older dlock or
 * an import would leave them. */
static void kept_plant(PGconn *c, const char *name, int n)
{
    char sql[512];
    char *o;

    o = q1(c,
           "INSERT INTO dlock_fences AS x (name, fence) VALUES ($1, 1000000) "
           "ON CONFLICT (name) DO UPDATE SET fence = greatest(x.fence, "
           "excluded.fence)",
           name);
    EXPECT(o != NULL);
    free(o);

    snprintf(sql, sizeof(sql),
             "INSERT INTO dlock_runs SELECT $1, g, 'planted', 1, g, g, 1, 0 "
             "FROM generate_series(1, %d) g",
             n);
    o = q1(c, sql, name);
    if (o == NULL)
        fprintf(stderr, "  plant: %s", PQerrorMessage(c));
    EXPECT(o != NULL);
    free(o);
}

/* A statement on the summary row of name (its one parameter). */
static void kept_set(PGconn *c, const char *sql, const char *name)
{
    char *o = q1(c, sql, name);

    if (o == NULL)
        fprintf(stderr, "  %s: %s", sql, PQerrorMessage(c));
    EXPECT(o != NULL);
    free(o);
}

/* A run of name by rule --once (ended exited status): whether it went
 * (-1: the begin failed). */
static int kept_once(dlock_store *s, const char *name, int status)
{
    dlock_options o = opts(0, 5000, 1);
    dlock_run_rule rule = DLOCK_RUN_RULE_INIT;
    dlock_lock *l = NULL;
    int go = -1;

    rule.once = 1;
    if (dlock_acquire(&l, s, name, &o) != DLOCK_OK) {
        fprintf(stderr, "  acquire %s: %s\n", name, dlock_errmsg());
        failures++;
        return -1;
    }
    if (dlock_run_begin(l, &rule, &go, NULL) != DLOCK_OK) {
        fprintf(stderr, "  once %s: %s\n", name, dlock_errmsg());
        go = -1;
    } else if (go) {
        EXPECT(dlock_run_end(l, DLOCK_RUN_EXITED, status) == DLOCK_OK);
    }
    EXPECT(dlock_release(l) == DLOCK_OK);
    return go;
}

/* The count drifting from the runs (deleted or planted by hand, a value
 * planted in range): the run just begun is never what the trim drops,
 * so --once's success holds; a count above the runs with older runs
 * left comes right within keep runs (uncounted: a count afresh every
 * keep runs), and the runs grow back to the setting. */
static void kept_drift(PGconn *c, dlock_store *s, const char *name)
{
    const char *exact = "SELECT kept_runs = (SELECT count(*) FROM dlock_runs "
                        "WHERE name = $1) FROM dlock_run_names WHERE name = $1";

    CHECK(dlock_keep_runs(s, name, 3) == DLOCK_OK);
    for (int i = 0; i < 3; i++)
        EXPECT(kept_once(s, name, 1) == 1);
    /* All but the newest deleted by hand (the count is 3 and still
     * current by kept_fence), then planted far above, in range. */
    kept_set(c,
             "DELETE FROM dlock_runs WHERE name = $1 AND fence < (SELECT "
             "max(fence) FROM dlock_runs WHERE name = $1)",
             name);
    kept_set(c,
             "UPDATE dlock_run_names SET kept_runs = 9000, uncounted = 0 "
             "WHERE name = $1",
             name);
    EXPECT(kept_once(s, name, 0) == 1);
    EXPECT(q1_is(c,
                 "SELECT count(*) FROM dlock_runs WHERE name = $1 AND fence = "
                 "(SELECT succeeded_fence FROM dlock_run_names WHERE name = "
                 "$1) AND result = 1 AND status = 0",
                 name, "1"));
    EXPECT(q1_is(c, exact, name, "t")); /* fewer dropped than asked */
    EXPECT(kept_once(s, name, 0) == 0);
    /* Everything deleted by hand, the count kept: the same. */
    kept_set(c, "DELETE FROM dlock_runs WHERE name = $1", name);
    kept_set(c,
             "UPDATE dlock_run_names SET succeeded_fence = NULL, kept_runs = "
             "3 WHERE name = $1",
             name);
    EXPECT(kept_once(s, name, 0) == 1);
    EXPECT(kept_once(s, name, 0) == 0);
    EXPECT(kept_look(s, name).n == 1);
    /* 2 too high with older runs left: right within 3 runs, and the runs
     * back at 3 after 3 more. */
    kept_set(c,
             "UPDATE dlock_run_names SET succeeded_fence = NULL WHERE "
             "name = $1",
             name);
    for (int i = 0; i < 4; i++)
        kept_run(s, name);
    EXPECT(kept_look(s, name).n == 3);
    EXPECT(q1_is(c, exact, name, "t"));
    kept_set(c,
             "UPDATE dlock_run_names SET kept_runs = kept_runs + 2 WHERE "
             "name = $1",
             name);
    for (int i = 0; i < 3; i++)
        kept_run(s, name);
    EXPECT(q1_is(c, exact, name, "t"));
    for (int i = 0; i < 3; i++)
        kept_run(s, name);
    EXPECT(kept_look(s, name).n == 3);
    EXPECT(q1_is(c, exact, name, "t"));
    /* 2 too low: 2 over the setting at most, for at most 3 runs. */
    kept_set(c,
             "UPDATE dlock_run_names SET kept_runs = kept_runs - 2 WHERE "
             "name = $1",
             name);
    for (int i = 0; i < 3; i++) {
        kept_run(s, name);
        EXPECT(kept_look(s, name).n <= 5);
    }
    EXPECT(q1_is(c, exact, name, "t"));
    kept_run(s, name);
    EXPECT(kept_look(s, name).n == 3);
}

/* A name keeping DLOCK_RUNS_KEPT_MAX runs, filled with more: exactly
 * that many stay, the newest; run_begin trusts the count in the summary
 * row while its newest run is the one it was taken at (no count per
 * run: a count planted low lets the runs grow past the setting until
 * keep_runs counts them again), and counts again after runs it did not
 * count (an older client's); settings planted out of range or of
 * another type are the default.  In a schema of its own (a column's
 * type is changed), in mode extra ("" or "mode=lease"). */
static void keep_mode(const char *extra)
{
    PGconn *c = raw();
    char schema[64], sql[512], u[1024], *o;
    const char *name = nm("keep-big"), *small = nm("keep-planted");
    struct kept_seen k;
    dlock_store *s;
    uint64_t f = 0;
    unsigned n = 0;

    snprintf(schema, sizeof(schema), "keep_%s_%d", extra[0] ? "lease" : "s",
             (int)getpid());
    snprintf(sql, sizeof(sql), "CREATE SCHEMA %s", schema);
    free(q1(c, sql, NULL));
    snprintf(sql, sizeof(sql), "SET search_path = %s", schema);
    free(q1(c, sql, NULL));
    snprintf(u, sizeof(u), "%s%coptions=-csearch_path%%3D%s%s%s", url,
             strchr(url, '?') != NULL ? '&' : '?', schema, extra[0] ? "&" : "",
             extra);
    s = open_url(u);
    /* Filled: 10,000 + 5 planted runs, then three of dlock's. */
    CHECK(dlock_keep_runs(s, name, DLOCK_RUNS_KEPT_MAX) == DLOCK_OK);
    kept_plant(c, name, DLOCK_RUNS_KEPT_MAX + 5);
    for (int i = 0; i < 3; i++)
        f = kept_run(s, name);
    k = kept_look(s, name);
    EXPECT(k.n == DLOCK_RUNS_KEPT_MAX);
    EXPECT(k.newest == f);
    EXPECT(k.oldest == 9); /* 10,008 runs: the 8 oldest went */
    EXPECT(q1_is(c,
                 "SELECT kept_runs FROM dlock_run_names WHERE name = $1 "
                 "AND kept_fence = (SELECT max(fence) FROM dlock_runs "
                 "WHERE name = $1)",
                 name, "10000"));
    /* The count is what run_begin goes by: planted 10 low, the runs
     * grow 10 past the setting without anything being counted... */
    kept_set(c,
             "UPDATE dlock_run_names SET kept_runs = kept_runs - 10 "
             "WHERE name = $1",
             name);
    for (int i = 0; i < 10; i++)
        f = kept_run(s, name);
    EXPECT(q1_is(c, "SELECT count(*) FROM dlock_runs WHERE name = $1", name,
                 "10010"));
    /* ...then one more stays at that, and keep_runs counts afresh. */
    kept_run(s, name);
    EXPECT(q1_is(c, "SELECT count(*) FROM dlock_runs WHERE name = $1", name,
                 "10010"));
    CHECK(dlock_keep_runs(s, name, DLOCK_RUNS_KEPT_MAX) == DLOCK_OK);
    k = kept_look(s, name);
    EXPECT(k.n == DLOCK_RUNS_KEPT_MAX);
    /* An older client's run (not counted, newer than the count's): the
     * next begin counts again and drops just what is over. */
    kept_set(c,
             "INSERT INTO dlock_runs SELECT $1, max(fence) + 1, 'old', 1, 0, "
             "0, 1, 0 FROM dlock_runs WHERE name = $1",
             name);
    f = kept_run(s, name);
    k = kept_look(s, name);
    EXPECT(k.n == DLOCK_RUNS_KEPT_MAX);
    EXPECT(k.newest == f);
    /* Lowered: the oldest go at once, in one step. */
    CHECK(dlock_keep_runs(s, name, 3) == DLOCK_OK);
    k = kept_look(s, name);
    EXPECT(k.n == 3 && k.newest == f);
    kept_drift(c, s, nm("keep-drift"));

    /* Planted settings: 0, negative, huge, a count out of range, then
     * a column of another type: the default, and the runs trim to it. */
    {
        static const char *const plant[] = {
            "UPDATE dlock_run_names SET keep_runs = 0 WHERE name = $1",
            "UPDATE dlock_run_names SET keep_runs = -5, kept_runs = -7 "
            "WHERE name = $1",
            "UPDATE dlock_run_names SET keep_runs = 2147483647, kept_runs = "
            "2147483647, uncounted = 2147483647 WHERE name = $1",
            "UPDATE dlock_run_names SET keep_runs = 0, uncounted = -1 WHERE "
            "name = $1",
            "UPDATE dlock_run_names SET keep_runs = 10001 WHERE name = $1",
        };

        for (size_t i = 0; i < sizeof(plant) / sizeof(plant[0]); i++) {
            CHECK(dlock_keep_runs(s, small, 1) == DLOCK_OK);
            kept_plant(c, small, DLOCK_RUNS_KEPT + 10);
            kept_set(c, plant[i], small);
            CHECK(dlock_kept_runs(&n, s, small) == DLOCK_OK);
            EXPECT(n == DLOCK_RUNS_KEPT);
            f = kept_run(s, small);
            k = kept_look(s, small);
            if (k.n != DLOCK_RUNS_KEPT)
                fprintf(stderr, "  planted %s: %d runs kept\n", plant[i], k.n);
            EXPECT(k.n == DLOCK_RUNS_KEPT && k.newest == f);
            kept_set(c, "DELETE FROM dlock_runs WHERE name = $1", small);
        }
    }
    /* The biggest values a bigint holds: no overflow, the default. */
    kept_set(c,
             "ALTER TABLE dlock_run_names ALTER COLUMN keep_runs TYPE bigint, "
             "ALTER COLUMN kept_runs TYPE bigint, ALTER COLUMN uncounted TYPE "
             "bigint",
             NULL);
    kept_plant(c, small, DLOCK_RUNS_KEPT + 10);
    kept_set(c,
             "UPDATE dlock_run_names SET keep_runs = 9223372036854775807, "
             "kept_runs = 9223372036854775807, kept_fence = "
             "9223372036854775807, uncounted = 9223372036854775807 WHERE "
             "name = $1",
             small);
    f = kept_run(s, small);
    k = kept_look(s, small);
    EXPECT(k.n == DLOCK_RUNS_KEPT && k.newest == f);
    kept_set(c,
             "UPDATE dlock_run_names SET kept_runs = 9223372036854775807, "
             "uncounted = 9223372036854775806 WHERE name = $1",
             small);
    f = kept_run(s, small);
    k = kept_look(s, small);
    EXPECT(k.n == DLOCK_RUNS_KEPT && k.newest == f);
    kept_set(c, "DELETE FROM dlock_runs WHERE name = $1", small);
    kept_set(c,
             "ALTER TABLE dlock_run_names ALTER COLUMN keep_runs TYPE text, "
             "ALTER COLUMN kept_runs TYPE text, ALTER COLUMN kept_fence TYPE "
             "text, ALTER COLUMN uncounted TYPE text",
             NULL);
    kept_set(c,
             "UPDATE dlock_run_names SET keep_runs = 'lots', kept_runs = "
             "'-1e99', kept_fence = 'x', uncounted = 'y' WHERE name = $1",
             small);
    kept_plant(c, small, DLOCK_RUNS_KEPT + 10);
    CHECK(dlock_kept_runs(&n, s, small) == DLOCK_OK);
    EXPECT(n == DLOCK_RUNS_KEPT);
    f = kept_run(s, small);
    k = kept_look(s, small);
    EXPECT(k.n == DLOCK_RUNS_KEPT && k.newest == f);
    /* Run tables from before uncounted: the first run adds it. */
    kept_set(c, "ALTER TABLE dlock_run_names DROP COLUMN uncounted", NULL);
    f = kept_run(s, small);
    EXPECT(kept_look(s, small).newest == f);
    EXPECT(q1_is(c,
                 "SELECT count(*) FROM pg_attribute WHERE attrelid = "
                 "'dlock_run_names'::regclass AND attname = 'uncounted' AND "
                 "NOT attisdropped",
                 NULL, "1"));
    /* Run tables from before keep_runs: the reader creates nothing and
     * says the default; a keep setting adds the columns. */
    kept_set(c,
             "ALTER TABLE dlock_run_names DROP COLUMN keep_runs, DROP COLUMN "
             "kept_runs, DROP COLUMN kept_fence, DROP COLUMN uncounted",
             NULL);
    CHECK(dlock_kept_runs(&n, s, name) == DLOCK_OK);
    EXPECT(n == DLOCK_RUNS_KEPT);
    EXPECT(q1_is(c,
                 "SELECT count(*) FROM pg_attribute WHERE attrelid = "
                 "'dlock_run_names'::regclass AND attname = 'keep_runs'",
                 NULL, "0"));
    CHECK(dlock_keep_runs(s, name, 2) == DLOCK_OK);
    CHECK(dlock_kept_runs(&n, s, name) == DLOCK_OK);
    EXPECT(n == 2);
    EXPECT(kept_look(s, name).n == 2);
    dlock_store_close(s);
    free(q1(c, "SET client_min_messages = warning", NULL));
    snprintf(sql, sizeof(sql), "DROP SCHEMA %s CASCADE", schema);
    o = q1(c, sql, NULL);
    EXPECT(o != NULL);
    free(o);
    PQfinish(c);
}

static void t_keep(void)
{
    keep_mode("");
    keep_mode("mode=lease");
}

/* --- election ------------------------------------------------------------ */

/* An observer on a thread of its own: each change it reports, and how
 * dlock_observe() ended. */
struct watcher {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    dlock_store *s;
    const char *name;
    dlock_cancel *cancel;
    int n, held[64], done, rc;
    int64_t at[64];
};

static int watcher_cb(const dlock_info *info, void *payload)
{
    struct watcher *w = payload;

    pthread_mutex_lock(&w->mu);
    if (w->n < 64) {
        w->held[w->n] = info->held;
        w->at[w->n] = now_ms();
        w->n++;
    }
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return 0;
}

static void *watcher_main(void *arg)
{
    struct watcher *w = arg;
    int rc = dlock_observe(w->s, w->name, watcher_cb, w, w->cancel);

    pthread_mutex_lock(&w->mu);
    w->rc = rc;
    w->done = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* Until the watcher has reported n changes (or ended), at most ms:
 * whether it has. */
static int watcher_wait(struct watcher *w, int n, int64_t ms)
{
    int64_t end = now_ms() + ms;
    int got;

    pthread_mutex_lock(&w->mu);
    while (w->n < n && !w->done && now_ms() < end) {
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 10 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&w->cv, &w->mu, &ts);
    }
    got = w->n >= n;
    pthread_mutex_unlock(&w->mu);
    return got;
}

/* One mode (extra: "" or "mode=lease"): the value in dlock_leaders under
 * the term, an observer woken by NOTIFY at elect, proclaim and
 * resignation (well within the 1 s re-read it would otherwise wait
 * for), a forged NOTIFY reported as nothing, and its session terminated:
 * DLOCK_EUNAVAIL at once, not a hang. */
static void elect_mode(const char *extra)
{
    char app[96], obs[1200], fence[32];
    const char *base = extra[0] ? with(extra) : url;
    dlock_options o = opts(0, 5000, 1);
    const char *n = nm(extra[0] ? "elect-lease" : "elect");
    dlock_store *s = open_url(base);
    struct watcher w;
    PGconn *c = raw();
    dlock_lock *a;
    pthread_t t;
    int64_t t0, worst;
    int k;

    snprintf(app, sizeof(app), "obs-%s", run_id);
    snprintf(obs, sizeof(obs), "%s%capplication_name=%s", base,
             strchr(base, '?') != NULL ? '&' : '?', app);
    memset(&w, 0, sizeof(w));
    pthread_mutex_init(&w.mu, NULL);
    pthread_cond_init(&w.cv, NULL);
    w.s = open_url(obs);
    w.name = n;
    EXPECT(dlock_cancel_new(&w.cancel) == DLOCK_OK);
    EXPECT(pthread_create(&t, NULL, watcher_main, &w) == 0);
    EXPECT(watcher_wait(&w, 1, 5000) && !w.held[0]);

    t0 = now_ms();
    EXPECT(dlock_elect(&a, s, n, "v-one", &o) == DLOCK_OK);
    EXPECT(watcher_wait(&w, 2, 5000) && w.held[1]);
    worst = w.at[1] - t0;
    snprintf(fence, sizeof(fence), "%llu", (unsigned long long)dlock_fence(a));
    EXPECT(
        q1_is(c, "SELECT fence FROM dlock_leaders WHERE name = $1", n, fence));
    EXPECT(q1_is(c, "SELECT value FROM dlock_leaders WHERE name = $1", n,
                 "v-one"));
    for (int i = 0; i < 5; i++) {
        char v[16];

        snprintf(v, sizeof(v), "v-%d", i);
        k = w.n;
        t0 = now_ms();
        EXPECT(dlock_proclaim(a, v) == DLOCK_OK);
        EXPECT(watcher_wait(&w, k + 1, 5000));
        if (w.at[k] - t0 > worst)
            worst = w.at[k] - t0;
    }
    /* A forged NOTIFY on the name's channel: a wake-up, nothing new. */
    k = w.n;
    EXPECT(q1_is(c,
                 "SELECT 1 FROM (SELECT pg_notify('dlock_' || "
                 "hashtextextended($1, 0)::text, 'forged')) f",
                 n, "1"));
    EXPECT(!watcher_wait(&w, k + 1, 300));
    t0 = now_ms();
    EXPECT(dlock_release(a) == DLOCK_OK);
    EXPECT(watcher_wait(&w, k + 1, 5000) && !w.held[k]);
    if (w.at[k] - t0 > worst)
        worst = w.at[k] - t0;
    printf("  %s: observer woken within %lld ms (elect, 5 proclaims, "
           "resign)\n",
           extra[0] ? extra : "session mode", (long long)worst);
    EXPECT(worst < 500);

    /* Its session terminated: EUNAVAIL, promptly. */
    t0 = now_ms();
    EXPECT(q1_is(c,
                 "SELECT count(pg_terminate_backend(pid)) > 0 FROM "
                 "pg_stat_activity WHERE application_name = $1",
                 app, "t"));
    pthread_mutex_lock(&w.mu);
    while (!w.done && now_ms() - t0 < 5000) {
        pthread_mutex_unlock(&w.mu);
        sleep_ms(5);
        pthread_mutex_lock(&w.mu);
    }
    pthread_mutex_unlock(&w.mu);
    EXPECT(w.done && w.rc == DLOCK_EUNAVAIL);
    printf("  terminated observer: rc %d after %lld ms\n", w.rc,
           (long long)(now_ms() - t0));
    EXPECT(now_ms() - t0 < 1500);
    if (!w.done)
        dlock_cancel_fire(w.cancel);
    pthread_join(t, NULL);
    dlock_cancel_free(w.cancel);
    dlock_store_close(w.s);
    PQfinish(c);
    dlock_store_close(s);
}

static void t_elect(void)
{
    elect_mode("");
    elect_mode("mode=lease");
}

/* --- suspension ---------------------------------------------------------- */

/* A run of name on s: its go, and *last (freed by the caller); -1 when
 * the lock or the begin failed. */
static int susp_begin(dlock_store *s, const char *name, dlock_run **last)
{
    dlock_options o = opts(0, 5000, 1);
    dlock_run_rule rule = DLOCK_RUN_RULE_INIT;
    dlock_lock *l = NULL;
    int go = -1;

    *last = NULL;
    if (dlock_acquire(&l, s, name, &o) != DLOCK_OK) {
        fprintf(stderr, "  acquire %s: %s\n", name, dlock_errmsg());
        return -1;
    }
    if (dlock_run_begin(l, &rule, &go, last) != DLOCK_OK) {
        fprintf(stderr, "  run begin %s: %s\n", name, dlock_errmsg());
        go = -1;
    } else if (go) {
        EXPECT(dlock_run_end(l, DLOCK_RUN_EXITED, 0) == DLOCK_OK);
    }
    EXPECT(dlock_release(l) == DLOCK_OK);
    return go;
}

/* name is suspended on s with every text shown as "?" and since 0, and
 * its runs skip saying so. */
static void susp_all_unknown(dlock_store *s, const char *name)
{
    dlock_suspension *x = NULL;
    dlock_run *last = NULL;

    CHECK_RC(dlock_suspended(&x, s, name), DLOCK_OK);
    CHECK(x != NULL);
    EXPECT(strcmp(x->by, "?") == 0);
    EXPECT(strcmp(x->reason, "?") == 0);
    EXPECT(x->since_ms == 0);
    dlock_suspension_free(x);
    EXPECT(susp_begin(s, name, &last) == 0);
    CHECK(last != NULL);
    EXPECT(last->result == DLOCK_RUN_SUSPENDED);
    EXPECT(strcmp(last->host, "?") == 0);
    EXPECT(last->fence == 0 && last->pid == 0 && last->start_ms == 0);
    dlock_run_free(last);
}

static int susp_cb(const dlock_suspension *x, void *p)
{
    int *n = p;

    if (strcmp(x->by, "?") == 0 && strcmp(x->reason, "?") == 0)
        n[0]++;
    n[1]++;
    return 0;
}

static void exec_each(PGconn *c, const char *const *fmt, size_t n,
                      const char *schema)
{
    char sql[1024], *o;

    for (size_t i = 0; i < n; i++) {
        snprintf(sql, sizeof(sql), fmt[i], schema, schema);
        o = q1(c, sql, NULL);
        if (o == NULL)
            fprintf(stderr, "  %s: %s", sql, PQerrorMessage(c));
        EXPECT(o != NULL);
        free(o);
    }
}

/* Rows planted in dlock_suspensions by anyone who may write it: texts
 * too long or with an escape sequence, a negative since_ms; then, in a
 * schema of its own, a table of other column types (an integer by_whom,
 * a text since_ms, a bytea reason of bytes that are not UTF-8).  Each
 * still suspends, reads back as "?" and 0, is listed, and resumes. */
static void susp_planted(void)
{
    PGconn *c = raw();
    dlock_store *s = open_url(url);
    dlock_suspension *x = NULL;
    char schema[64], u[1024], prefix[96];
    const char *at;
    int n[2] = {0, 0}, was = -1;

    EXPECT(q1_is(c,
                 "INSERT INTO dlock_suspensions VALUES ($1, repeat('b', "
                 "300), -5, E'\\x1b[31mred') RETURNING 1",
                 nm("susp-long-by"), "1"));
    EXPECT(q1_is(c,
                 "INSERT INTO dlock_suspensions VALUES ($1, E'ops\\x07', "
                 "-1, repeat('r', 1100)) RETURNING 1",
                 nm("susp-long-reason"), "1"));
    susp_all_unknown(s, nm("susp-long-by"));
    susp_all_unknown(s, nm("susp-long-reason"));
    snprintf(prefix, sizeof(prefix), "%s/susp-long-", run_id);
    CHECK_RC(dlock_suspensions(s, prefix, susp_cb, n), DLOCK_OK);
    EXPECT(n[0] == 2 && n[1] == 2);
    /* A suspend leaves the planted row as it is and says so. */
    CHECK_RC(dlock_suspend(&was, s, nm("susp-long-by"), NULL, "x"), DLOCK_OK);
    EXPECT(was == 1);
    CHECK_RC(dlock_resume(&x, s, nm("susp-long-by")), DLOCK_OK);
    CHECK(x != NULL);
    EXPECT(strcmp(x->by, "?") == 0 && x->since_ms == 0);
    dlock_suspension_free(x);
    CHECK_RC(dlock_resume(NULL, s, nm("susp-long-reason")), DLOCK_OK);
    CHECK_RC(dlock_suspended(&x, s, nm("susp-long-by")), DLOCK_OK);
    EXPECT(x == NULL);
    dlock_store_close(s);

    /* A table of other types, in a schema of its own. */
    snprintf(schema, sizeof(schema), "susp_types_%d", (int)getpid());
    {
        static const char *const fmt[] = {"CREATE SCHEMA %s"};

        exec_each(c, fmt, 1, schema);
    }
    at = strchr(url, '?');
    snprintf(u, sizeof(u), "%s%coptions=-csearch_path%%3D%s", url,
             at != NULL ? '&' : '?', schema);
    dlock_store_close(open_url(u));
    {
        static const char *const fmt[] = {
            "DROP TABLE %s.dlock_suspensions",
            "CREATE TABLE %s.dlock_suspensions (name text COLLATE \"C\" "
            "PRIMARY KEY, by_whom integer, since_ms text, reason bytea)",
        };

        exec_each(c, fmt, 2, schema);
    }
    {
        char sql[512];

        snprintf(sql, sizeof(sql),
                 "INSERT INTO %s.dlock_suspensions VALUES ($1, 42, "
                 "'yesterday', '\\xfffe') RETURNING 1",
                 schema);
        EXPECT(q1_is(c, sql, nm("susp-types"), "1"));
    }
    s = open_url(u);
    susp_all_unknown(s, nm("susp-types"));
    n[0] = n[1] = 0;
    CHECK_RC(dlock_suspensions(s, "", susp_cb, n), DLOCK_OK);
    EXPECT(n[0] == 1 && n[1] == 1);
    /* A suspend cannot write into that table (its types are not
     * dlock's): a clear error, never a crash or a silent success. */
    was = -1;
    {
        int rc = dlock_suspend(&was, s, nm("susp-types"), NULL, "x");

        EXPECT(rc == DLOCK_ESTORE && dlock_errmsg()[0] != '\0');
    }
    CHECK_RC(dlock_resume(&x, s, nm("susp-types")), DLOCK_OK);
    CHECK(x != NULL);
    EXPECT(strcmp(x->by, "?") == 0 && strcmp(x->reason, "?") == 0);
    dlock_suspension_free(x);
    {
        dlock_run *last = NULL;

        EXPECT(susp_begin(s, nm("susp-types"), &last) == 1);
        dlock_run_free(last);
    }
    dlock_store_close(s);
    free(q1(c, "SET client_min_messages = warning", NULL));
    {
        static const char *const fmt[] = {"DROP SCHEMA %s CASCADE"};

        exec_each(c, fmt, 1, schema);
    }
    PQfinish(c);
}

/* A role that may only read dlock's tables (SELECT, in a schema of its
 * own): suspend and resume are DLOCK_ESTORE with the server's "permission
 * denied", nothing written; reading works.  And a store whose tables
 * predate suspension: the readers say "not suspended" and create nothing,
 * the first suspend (or run begin) creates dlock_suspensions. */
static void susp_reader(void)
{
    PGconn *c = raw();
    char schema[64], u[1024], ro[1024], sql[256];
    const char *at;
    dlock_store *s, *r;
    dlock_suspension *x = NULL;
    dlock_run *last = NULL;
    int was = -1, rc;

    snprintf(schema, sizeof(schema), "susp_ro_%d", (int)getpid());
    {
        static const char *const fmt[] = {"CREATE SCHEMA %s"};

        exec_each(c, fmt, 1, schema);
    }
    snprintf(u, sizeof(u), "%s%coptions=-csearch_path%%3D%s", url,
             strchr(url, '?') != NULL ? '&' : '?', schema);
    s = open_url(u);
    {
        static const char *const fmt[] = {
            "GRANT USAGE ON SCHEMA %s TO other",
            "GRANT SELECT ON ALL TABLES IN SCHEMA %s TO other",
        };

        exec_each(c, fmt, 2, schema);
    }
    at = strchr(url, '@');
    CHECK(at != NULL);
    snprintf(ro, sizeof(ro),
             "postgres://other:other-pw%s%coptions=-csearch_path%%3D%s", at,
             strchr(url, '?') != NULL ? '&' : '?', schema);
    r = open_url(ro);
    rc = dlock_suspend(&was, r, nm("susp-ro"), NULL, "reader");
    EXPECT(rc == DLOCK_ESTORE || rc == DLOCK_EUNAVAIL);
    EXPECT(msg_has("permission denied"));
    EXPECT(msg_has("suspend"));
    CHECK_RC(dlock_suspended(&x, s, nm("susp-ro")), DLOCK_OK);
    EXPECT(x == NULL);
    CHECK_RC(dlock_suspend(&was, s, nm("susp-ro"), "ops@here", "owner"),
             DLOCK_OK);
    EXPECT(was == 0);
    rc = dlock_resume(&x, r, nm("susp-ro"));
    EXPECT(rc == DLOCK_ESTORE || rc == DLOCK_EUNAVAIL);
    EXPECT(msg_has("permission denied"));
    EXPECT(msg_has("resume"));
    /* Read: it is still there, for the reader too. */
    CHECK_RC(dlock_suspended(&x, r, nm("susp-ro")), DLOCK_OK);
    CHECK(x != NULL);
    EXPECT(strcmp(x->by, "ops@here") == 0 && strcmp(x->reason, "owner") == 0);
    dlock_suspension_free(x);
    CHECK_RC(dlock_resume(&x, s, nm("susp-ro")), DLOCK_OK);
    CHECK(x != NULL);
    dlock_suspension_free(x);
    dlock_store_close(r);

    /* Tables from before suspension. */
    snprintf(sql, sizeof(sql), "DROP TABLE %s.dlock_suspensions", schema);
    free(q1(c, sql, NULL));
    snprintf(sql, sizeof(sql),
             "SELECT to_regclass('%s.dlock_suspensions') "
             "IS NULL",
             schema);
    CHECK_RC(dlock_suspended(&x, s, nm("susp-old")), DLOCK_OK);
    EXPECT(x == NULL);
    CHECK_RC(dlock_resume(&x, s, nm("susp-old")), DLOCK_OK);
    EXPECT(x == NULL);
    EXPECT(dlock_suspensions(s, "", susp_cb, (int[2]){0, 0}) == DLOCK_OK);
    EXPECT(q1_is(c, sql, NULL, "t"));
    CHECK_RC(dlock_suspend(&was, s, nm("susp-old"), NULL, NULL), DLOCK_OK);
    EXPECT(was == 0);
    EXPECT(q1_is(c, sql, NULL, "f"));
    EXPECT(susp_begin(s, nm("susp-old"), &last) == 0);
    dlock_run_free(last);
    CHECK_RC(dlock_resume(NULL, s, nm("susp-old")), DLOCK_OK);
    /* ... and the first run begin makes it too. */
    snprintf(sql, sizeof(sql), "DROP TABLE %s.dlock_suspensions", schema);
    free(q1(c, sql, NULL));
    EXPECT(susp_begin(s, nm("susp-old"), &last) == 1);
    dlock_run_free(last);
    snprintf(sql, sizeof(sql),
             "SELECT to_regclass('%s.dlock_suspensions') "
             "IS NOT NULL",
             schema);
    EXPECT(q1_is(c, sql, NULL, "t"));
    dlock_store_close(s);
    free(q1(c, "SET client_min_messages = warning", NULL));
    {
        static const char *const fmt[] = {"DROP SCHEMA %s CASCADE"};

        exec_each(c, fmt, 1, schema);
    }
    PQfinish(c);
}

static void t_suspend(void)
{
    susp_planted();
    susp_reader();
}

static const struct {
    const char *name;
    void (*fn)(void);
} cases[] = {
    {"interop", t_interop},   {"xact", t_xact},
    {"hung", t_hung},         {"killed", t_killed},
    {"badinput", t_badinput}, {"lease", t_lease},
    {"mux", t_mux},           {"semaphore", t_semaphore},
    {"max_keys", t_max_keys}, {"force_one", t_force_one},
    {"ceiling", t_ceiling},   {"runs", t_runs},
    {"elect", t_elect},       {"suspend", t_suspend},
    {"keep", t_keep},
};

int main(int argc, char **argv)
{
    int ran = 0;

    if (argc < 2 || argv[1][0] == '\0') {
        fprintf(stderr,
                "usage: %s URL [CASE...] (is "
                "DLOCK_TEST_POSTGRES_URL set?)\n",
                argv[0]);
        return 2;
    }
    url = argv[1];
    signal(SIGPIPE, SIG_IGN);
    snprintf(run_id, sizeof(run_id), "pgtest-%d-%lld", (int)getpid(),
             (long long)now_ms());
    /* The tables exist before any raw query looks at them. */
    dlock_store_close(open_url(url));
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int pick = argc == 2, before = failures;

        for (int a = 2; a < argc; a++)
            pick |= strcmp(argv[a], cases[i].name) == 0;
        if (!pick)
            continue;
        cases[i].fn();
        ran++;
        printf("%-4s %s\n", failures != before ? "FAIL" : "ok", cases[i].name);
        fflush(stdout);
    }
    if (ran == 0) {
        fprintf(stderr, "no such case\n");
        return 2;
    }
    return failures != 0;
}
