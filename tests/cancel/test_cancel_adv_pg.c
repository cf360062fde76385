/*
 * test_cancel_adv_pg.c - a PostgreSQL wait whose key is granted in the
 * same moment its statement fails (a cancel, or its lock_timeout):
 *
 *     test_cancel_adv_pg URL CASE
 *
 * PostgreSQL grants a waiter's advisory lock in the releaser's backend; a
 * waiter whose statement is then cancelled (57014) or times out (55P03)
 * before it returns keeps the key (LockErrorCleanup -> GrantAwaitedLock)
 * although its statement failed: a session-level key is not
 * transactional.  The race is made certain by stopping the waiting
 * backend (SIGSTOP) while the grant and the interrupt reach it, then
 * letting it run on.  Whatever the acquire then answers, nothing may stay
 * behind: no key held by an idle pooled connection of the waiter's store
 * handle, which would keep the name (or a semaphore slot) taken with no
 * holder, until that connection dies.
 *
 * Cases:
 *   sem-cancel   a semaphore's slot wait, cancelled as the slot is freed
 *   sem-timeout  a semaphore's slot wait whose lock_timeout (slice end)
 *                fires as the slot is freed, the acquire's deadline then
 *   x-timeout    an exclusive wait whose lock_timeout fires as the key
 *                is granted, at the acquire's deadline
 *   x-cancel     an exclusive wait cancelled as the key is granted
 *
 * Needs to signal the server's backends (same user, or root): 77 if not.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "check.h"
#include "dlock.h"

#define TTL_MS 30000

static const char *url;
static char run_id[64];
static dlock_store *hs, *ws, *ns; /* holder's, waiter's, newcomer's */

struct waiter {
    const char *name;
    dlock_options o;
    pthread_t t;
    int rc;
    dlock_lock *lk;
    int done;
};

static void *waiter_main(void *arg)
{
    struct waiter *w = arg;

    w->rc = dlock_acquire(&w->lk, ws, w->name, &w->o);
    __atomic_store_n(&w->done, 1, __ATOMIC_SEQ_CST);
    return NULL;
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

/* The backend waiting for an advisory lock in our database, polled for up
 * to 10 s; 0 if none.  The server must be this test's own
 * (tests/own_server.sh: tests/cancel/CMakeLists.txt): on a shared one the
 * backend found could be another entry's, which the test then stops. */
static long waiting_backend(PGconn *c)
{
    for (int i = 0; i < 1000; i++) {
        PGresult *r = PQexec(
            c, "SELECT l.pid FROM pg_locks l JOIN pg_stat_activity a "
               "USING (pid) WHERE l.locktype = 'advisory' AND NOT l.granted "
               "AND a.datname = current_database()");
        long pid = 0;

        if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
            pid = atol(PQgetvalue(r, 0, 0));
        PQclear(r);
        if (pid > 0)
            return pid;
        sleep_ms(10);
    }
    return 0;
}

/* Signal sig is pending for pid (thread- or process-directed). */
static int pending(long pid, int sig)
{
    char path[64], line[256];
    FILE *f;
    int yes = 0;

    snprintf(path, sizeof(path), "/proc/%ld/status", pid);
    f = fopen(path, "r");
    if (f == NULL)
        return 0;
    while (fgets(line, sizeof(line), f) != NULL) {
        unsigned long long m;

        if ((strncmp(line, "SigPnd:", 7) == 0 ||
             strncmp(line, "ShdPnd:", 7) == 0) &&
            sscanf(line + 7, "%llx", &m) == 1 && (m & (1ULL << (sig - 1))))
            yes = 1;
    }
    fclose(f);
    return yes;
}

static int wait_pending(long pid, int sig)
{
    for (int i = 0; i < 1000; i++) {
        if (pending(pid, sig))
            return 1;
        sleep_ms(10);
    }
    return 0;
}

/* Keys held by sessions of this database that are idle: what a pooled
 * connection keeps after a wait (none must). */
/* Advisory keys of NAME still granted to another session: the name's
 * own key (seed 0), the semaphore key (-1), the admission key (-2) and
 * the slots (1..8).  Only this name's: the quick tier runs other
 * PostgreSQL entries beside this one, on the same database, and their
 * keys are none of its business. */
static long idle_keys(PGconn *c, const char *name)
{
    const char *v[1] = {name};
    PGresult *r =
        PQexecParams(c,
                     "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a "
                     "USING (pid) WHERE l.locktype = 'advisory' AND l.granted "
                     "AND l.objsubid = 1 AND a.datname = current_database() "
                     "AND a.pid <> pg_backend_pid() "
                     "AND ((l.classid::bigint << 32) | l.objid::bigint) IN "
                     "(SELECT hashtextextended($1::text, s) "
                     "FROM generate_series(-2, 8) s)",
                     1, NULL, v, NULL, NULL, 0);
    long n = -1;

    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
        n = atol(PQgetvalue(r, 0, 0));
    PQclear(r);
    return n;
}

static int skip;

static void run_case(const char *cs)
{
    int sem = strncmp(cs, "sem", 3) == 0;
    int cancel = strstr(cs, "cancel") != NULL;
    unsigned limit = sem ? 2 : 1;
    dlock_options o = DLOCK_OPTIONS_INIT;
    dlock_lock *h1 = NULL, *h2 = NULL, *n1 = NULL, *n2 = NULL;
    dlock_cancel *c = NULL;
    char name[DLOCK_NAME_MAX + 1];
    struct waiter w;
    PGconn *pc = raw();
    long pid;

    snprintf(name, sizeof(name), "%s/%s", run_id, cs);
    o.ttl_ms = TTL_MS;
    o.wait_ms = 0;
    o.limit = limit;
    CHECK_RC(dlock_acquire(&h1, hs, name, &o), DLOCK_OK);
    if (sem)
        CHECK_RC(dlock_acquire(&h2, ns, name, &o), DLOCK_OK);
    CHECK_RC(dlock_cancel_new(&c), DLOCK_OK);

    memset(&w, 0, sizeof(w));
    w.name = name;
    w.o = o;
    /* A cancel: waits forever.  A timeout: a deadline the stop outlives
     * (its slice's lock_timeout fires while the backend is stopped),
     * under the server's deadlock_timeout (1 s by default), whose timer
     * would be the first SIGALRM otherwise. */
    w.o.wait_ms = cancel ? DLOCK_WAIT_FOREVER : 800;
    w.o.cancel = c;
    CHECK(pthread_create(&w.t, NULL, waiter_main, &w) == 0);
    pid = waiting_backend(pc);
    CHECK(pid > 0);
    if (kill((pid_t)pid, SIGSTOP) != 0) {
        int e = errno;

        dlock_cancel_fire(c);
        pthread_join(w.t, NULL);
        if (e == EPERM) {
            printf("SKIP: cannot signal the server's backend %ld\n", pid);
            skip = 1;
            return;
        }
        CHECK(0);
    }
    /* The grant: in the releasers' backends, to the stopped waiter. */
    EXPECT_RC(dlock_release(h1), DLOCK_OK);
    if (h2 != NULL)
        EXPECT_RC(dlock_release(h2), DLOCK_OK);
    /* The interrupt: pending in the stopped backend. */
    if (cancel) {
        dlock_cancel_fire(c);
        EXPECT(wait_pending(pid, SIGINT));
    } else {
        EXPECT(wait_pending(pid, SIGALRM));
    }
    kill((pid_t)pid, SIGCONT);
    pthread_join(w.t, NULL);
    printf("  %s: the wait answered %s\n", cs, dlock_strerror(w.rc));
    if (w.rc == DLOCK_OK)
        EXPECT_RC(dlock_release(w.lk), DLOCK_OK);
    else
        EXPECT(w.rc == (cancel ? DLOCK_ECANCELED : DLOCK_BUSY));

    /* Nothing stays behind: the name is free to the newcomers, all of its
     * slots, and no idle connection keeps a key. */
    o.wait_ms = 0;
    EXPECT_RC(dlock_acquire(&n1, hs, name, &o), DLOCK_OK);
    if (sem)
        EXPECT_RC(dlock_acquire(&n2, ns, name, &o), DLOCK_OK);
    if (n1 != NULL)
        EXPECT_RC(dlock_release(n1), DLOCK_OK);
    if (n2 != NULL)
        EXPECT_RC(dlock_release(n2), DLOCK_OK);
    {
        long k = idle_keys(pc, name);

        if (k != 0)
            fprintf(stderr,
                    "  %s: %ld advisory key(s) still held by idle "
                    "sessions\n",
                    cs, k);
        EXPECT(k == 0);
    }
    dlock_cancel_free(c);
    PQfinish(pc);
}

int main(int argc, char **argv)
{
    if (argc < 3 || argv[1][0] == '\0') {
        fprintf(stderr, "usage: test_cancel_adv_pg URL CASE\n");
        return 2;
    }
    url = argv[1];
    snprintf(run_id, sizeof(run_id), "cancel-adv-%ld-%lld", (long)getpid(),
             (long long)now_ms());
    if (dlock_store_open(&hs, url) != DLOCK_OK ||
        dlock_store_open(&ws, url) != DLOCK_OK ||
        dlock_store_open(&ns, url) != DLOCK_OK) {
        fprintf(stderr, "cannot open %s: %s\n", url, dlock_errmsg());
        return 2;
    }
    run_case(argv[2]);
    dlock_store_close(hs);
    dlock_store_close(ws);
    dlock_store_close(ns);
    if (skip && failures == 0)
        return 77;
    printf("%s: %d failure(s)\n", argv[2], failures);
    return failures > 100 ? 100 : failures;
}
