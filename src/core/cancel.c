/*
 * cancel.c - dlock_cancel: stopping a waiting acquire from another thread
 * or from a signal handler.
 *
 * A cancel is a flag and a pipe.  dlock_cancel_fire() sets the flag and
 * writes one byte to the pipe: both async-signal-safe, and the byte
 * keeps the read end readable until dlock_cancel_reset(), so a wait that
 * polls it wakes however late it starts polling.  The acquire that was
 * given the cancel makes it the calling thread's current one
 * (dlock__cancel_cur) for its duration; the waits that poll a descriptor
 * (the core's backoff sleeps, PostgreSQL's statements) poll it too, and
 * those that block inside a client library or on a condition variable
 * (a MariaDB GET_LOCK, a Redis waiter) arm a watch: one small thread
 * polls the armed cancels and calls the store's wake-up (a KILL QUERY
 * from another connection, a condition signalled) for the one that
 * fired, each on a short-lived thread of its own, so that one store that
 * hangs delays no other wait's cancel.  The signal handler itself never
 * does more than the store and the write.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "cancel.h"
#include "clock.h"
#include "dlock.h"
#include "errors.h"
#include "iobound.h"

struct dlock_cancel {
    int fired;  /* atomic */
    int rd, wr; /* the pipe */
};

_Thread_local struct dlock_cancel *dlock__cancel_cur;

static int set_flags(int fd)
{
    int fl = fcntl(fd, F_GETFL);

    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0)
        return -1;
    fl = fcntl(fd, F_GETFD);
    return fl < 0 || fcntl(fd, F_SETFD, fl | FD_CLOEXEC) != 0 ? -1 : 0;
}

dlock_rc dlock_cancel_new(dlock_cancel **out)
{
    struct dlock_cancel *c;
    int p[2];

    dlock__clearerr();
    if (out == NULL)
        return dlock__seterr(DLOCK_EINVAL, "out is NULL");
    *out = NULL;
    c = calloc(1, sizeof(*c));
    if (c == NULL)
        return dlock__enomem();
    if (pipe(p) != 0) {
        int e = errno;

        free(c);
        return dlock__seterr(e == ENOMEM ? DLOCK_ENOMEM : DLOCK_EINVAL,
                             "dlock_cancel_new: no pipe (errno %d)", e);
    }
    if (set_flags(p[0]) != 0 || set_flags(p[1]) != 0) {
        int e = errno;

        close(p[0]);
        close(p[1]);
        free(c);
        return dlock__seterr(DLOCK_EINVAL,
                             "dlock_cancel_new: fcntl failed (errno %d)", e);
    }
    c->rd = p[0];
    c->wr = p[1];
    *out = c;
    return DLOCK_OK;
}

/* Async-signal-safe: an atomic exchange and at most one write(). */
void dlock_cancel_fire(dlock_cancel *c)
{
    if (c == NULL)
        return;
    if (__atomic_exchange_n(&c->fired, 1, __ATOMIC_SEQ_CST) == 0) {
        int e = errno;
        ssize_t n;

        do
            n = write(c->wr, "x", 1);
        while (n < 0 && errno == EINTR);
        errno = e;
    }
}

int dlock_cancel_fired(const dlock_cancel *c)
{
    return c != NULL && __atomic_load_n(&c->fired, __ATOMIC_SEQ_CST);
}

void dlock_cancel_reset(dlock_cancel *c)
{
    char buf[64];

    if (c == NULL)
        return;
    while (read(c->rd, buf, sizeof(buf)) > 0)
        ;
    __atomic_store_n(&c->fired, 0, __ATOMIC_SEQ_CST);
}

void dlock_cancel_free(dlock_cancel *c)
{
    if (c == NULL)
        return;
    close(c->rd);
    close(c->wr);
    free(c);
}

/* --- for the core and the stores ------------------------------------- */

int dlock__cancelled(void)
{
    return dlock_cancel_fired(dlock__cancel_cur);
}

int dlock__cancel_fd(void)
{
    return dlock__cancel_cur != NULL ? dlock__cancel_cur->rd : -1;
}

int dlock__ecanceled(void)
{
    return dlock__seterr(DLOCK_ECANCELED,
                         "the wait was cancelled (dlock_cancel_fire)");
}

int dlock__cancel_sleep_ms(int64_t ms)
{
    int64_t end = dlock__now_ms() + ms;
    struct pollfd p;

    if (dlock__cancel_cur == NULL) {
        dlock__sleep_ms(ms);
        return 0;
    }
    p.fd = dlock__cancel_cur->rd;
    p.events = POLLIN;
    while (!dlock__cancelled()) {
        int64_t left = end - dlock__now_ms();

        if (left <= 0)
            return 0;
        (void)poll(&p, 1, left > 60000 ? 60000 : (int)left);
    }
    return 1;
}

/* --- the watch thread -------------------------------------------------- */

#define MAX_WATCHES 256

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done_cv = PTHREAD_COND_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int running, ctl[2] = {-1, -1};
static uint64_t next_id = 1;
static struct cwatch {
    uint64_t id; /* 0: free */
    struct dlock_cancel *c;
    void (*fn)(void *);
    void *arg;
    int64_t io_deadline; /* the arming thread's dlock__io_deadline */
    int called;          /* fn ran or runs: not polled again */
    int calling;         /* fn runs now, without mu */
} watches[MAX_WATCHES];

/* A fork child has no watch thread and watches nothing of its parent. */
static void fork_child(void)
{
    pthread_mutex_init(&mu, NULL);
    pthread_cond_init(&done_cv, NULL);
    running = 0;
    for (size_t i = 0; i < MAX_WATCHES; i++)
        watches[i].id = 0;
    /* Its own wake-up pipe: reading the parent's would steal its wake-ups. */
    if (ctl[0] >= 0) {
        close(ctl[0]);
        close(ctl[1]);
        ctl[0] = ctl[1] = -1;
    }
}

static void init_once(void)
{
    pthread_atfork(NULL, NULL, fork_child);
}

/* A wake-up runs on a thread of its own: one may wait on its store (a
 * KILL QUERY sent to a server that stopped answering waits out its read
 * timeout), and the watch thread must go on waking the other waits,
 * whatever their stores do.  It runs under the I/O deadline of the wait
 * it wakes (a finite wait's deadline + 1 s): the wait's unwatch waits
 * for it, and a store that hangs must not hold a cancelled wait past the
 * bound its own calls have. */
struct call {
    struct cwatch *w;
    void (*fn)(void *);
    void *arg;
    int64_t io_deadline;
};

static void call_done(struct cwatch *w)
{
    pthread_mutex_lock(&mu);
    w->calling = 0;
    pthread_cond_broadcast(&done_cv);
    pthread_mutex_unlock(&mu);
}

static void *call_main(void *arg)
{
    struct call *k = arg;

    dlock__io_deadline = k->io_deadline;
    k->fn(k->arg);
    call_done(k->w); /* the slot is still k->w's: unwatch waits for this */
    free(k);
    return NULL;
}

/* Start w's wake-up (caller holds mu, w->calling set). */
static void call_start(struct cwatch *w)
{
    struct call *k = malloc(sizeof(*k));
    pthread_attr_t a;
    pthread_t t;
    int ok = 0;

    if (k != NULL) {
        *k = (struct call){w, w->fn, w->arg, w->io_deadline};
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        ok = pthread_create(&t, &a, call_main, k) == 0;
        pthread_attr_destroy(&a);
    }
    if (ok)
        return;
    /* No thread: here, then (the others wait for it). */
    free(k);
    pthread_mutex_unlock(&mu);
    dlock__io_deadline = w->io_deadline;
    w->fn(w->arg);
    dlock__io_deadline = 0;
    pthread_mutex_lock(&mu);
    w->calling = 0;
    pthread_cond_broadcast(&done_cv);
}

static void *watch_main(void *arg)
{
    static struct pollfd p[MAX_WATCHES + 1];
    static size_t at[MAX_WATCHES + 1];

    (void)arg;
#ifdef __linux__
    (void)prctl(PR_SET_NAME, "dlock-cancel", 0, 0, 0);
#endif
    pthread_mutex_lock(&mu);
    for (;;) {
        nfds_t n = 1;
        char buf[64];

        p[0].fd = ctl[0];
        p[0].events = POLLIN;
        for (size_t i = 0; i < MAX_WATCHES; i++) {
            if (watches[i].id == 0 || watches[i].called)
                continue;
            p[n].fd = watches[i].c->rd;
            p[n].events = POLLIN;
            at[n++] = i;
        }
        pthread_mutex_unlock(&mu);
        (void)poll(p, n, -1);
        while (read(ctl[0], buf, sizeof(buf)) > 0)
            ;
        pthread_mutex_lock(&mu);
        for (nfds_t k = 1; k < n; k++) {
            struct cwatch *w = &watches[at[k]];

            /* The slot may have been unwatched (and reused) meanwhile:
             * only a watch still armed on a fired cancel is called. */
            if (!(p[k].revents & POLLIN) || w->id == 0 || w->called ||
                w->c->rd != p[k].fd)
                continue;
            /* Readable once is enough: the pipe stays readable, and a
             * byte without the flag (a reset racing a fire) is no fire. */
            w->called = 1;
            if (!dlock_cancel_fired(w->c))
                continue;
            w->calling = 1;
            call_start(w);
        }
    }
    return NULL;
}

uint64_t dlock__cancel_watch(void (*fn)(void *), void *arg)
{
    uint64_t id = 0;

    if (dlock__cancel_cur == NULL)
        return 0;
    pthread_once(&once, init_once);
    pthread_mutex_lock(&mu);
    if (ctl[0] < 0) {
        int p[2];

        if (pipe(p) == 0) {
            if (set_flags(p[0]) == 0 && set_flags(p[1]) == 0) {
                ctl[0] = p[0];
                ctl[1] = p[1];
            } else {
                close(p[0]);
                close(p[1]);
            }
        }
    }
    if (!running && ctl[0] >= 0) {
        pthread_t t;
        pthread_attr_t a;

        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        running = pthread_create(&t, &a, watch_main, NULL) == 0;
        pthread_attr_destroy(&a);
    }
    for (size_t i = 0; running && i < MAX_WATCHES; i++) {
        if (watches[i].id != 0)
            continue;
        id = next_id++;
        watches[i] = (struct cwatch){
            id, dlock__cancel_cur, fn, arg, dlock__io_deadline, 0, 0};
        (void)!write(ctl[1], "w", 1);
        break;
    }
    /* No thread or no room: the wait is cancelled when it ends (its
     * slices are bounded), not at once. */
    pthread_mutex_unlock(&mu);
    return id;
}

void dlock__cancel_unwatch(uint64_t id)
{
    if (id == 0)
        return;
    pthread_mutex_lock(&mu);
    for (size_t i = 0; i < MAX_WATCHES; i++) {
        if (watches[i].id != id)
            continue;
        /* Never return while its wake-up still runs: what it touches
         * (a connection, a condition variable) is the caller's. */
        while (watches[i].calling)
            pthread_cond_wait(&done_cv, &mu);
        watches[i].id = 0;
    }
    pthread_mutex_unlock(&mu);
}
