/*
 * watch.c - the watch threads (watch.h): for each kind, a table of armed
 * watches and one small detached thread, started at the first watch,
 * that polls the watches' descriptors and its own wake-up pipe until the
 * nearest deadline, and fires each watch once.  cancel.c arms a watch on
 * a cancel's pipe whose wake-up may block (it runs on a thread of its
 * own); iowatch.c arms one on a deadline whose action, a shutdown(),
 * never does (it runs on the watch thread, under the kind's mutex, so a
 * disarm that returned means it will not run).
 *
 * A fork child has no watch thread and watches nothing of its parent: its
 * handler empties both tables and closes the parent's wake-up pipes.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "clock.h"
#include "iobound.h"
#include "watch.h"

/* The longest poll between two looks at the table (a deadline further
 * off is looked at again then). */
#define POLL_MAX_MS 60000

struct slot {
    uint64_t id; /* 0: free */
    struct dlock__watch_spec w;
    int called;  /* fired or spent: not looked at again */
    int calling; /* its fn runs now, without mu (own_thread) */
};

struct kind {
    const char *name; /* the thread's, for a profiler or ps */
    pthread_mutex_t mu;
    pthread_cond_t done_cv; /* a calling fn returned */
    int running, ctl[2];    /* the thread, its wake-up pipe */
    uint64_t next_id;
    struct slot s[DLOCK__WATCH_MAX];
    /* The thread's own, not on its stack. */
    struct pollfd p[DLOCK__WATCH_MAX + 1];
    size_t at[DLOCK__WATCH_MAX + 1];
    uint64_t ids[DLOCK__WATCH_MAX + 1];
};

static struct kind kinds[2] = {
    [DLOCK__WATCH_CANCEL] = {.name = "dlock-cancel",
                             .mu = PTHREAD_MUTEX_INITIALIZER,
                             .done_cv = PTHREAD_COND_INITIALIZER,
                             .ctl = {-1, -1},
                             .next_id = 1},
    [DLOCK__WATCH_IO] = {.name = "dlock-iowatch",
                         .mu = PTHREAD_MUTEX_INITIALIZER,
                         .done_cv = PTHREAD_COND_INITIALIZER,
                         .ctl = {-1, -1},
                         .next_id = 1},
};
static pthread_once_t once = PTHREAD_ONCE_INIT;

int dlock__fd_nonblock_cloexec(int fd)
{
    int fl = fcntl(fd, F_GETFL);

    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0)
        return -1;
    fl = fcntl(fd, F_GETFD);
    return fl < 0 || fcntl(fd, F_SETFD, fl | FD_CLOEXEC) != 0 ? -1 : 0;
}

int dlock__pipe_nonblock_cloexec(int p[2])
{
#ifdef __linux__
    return pipe2(p, O_NONBLOCK | O_CLOEXEC);
#else
    if (pipe(p) != 0)
        return -1;
    if (dlock__fd_nonblock_cloexec(p[0]) != 0 ||
        dlock__fd_nonblock_cloexec(p[1]) != 0) {
        int e = errno;

        close(p[0]);
        close(p[1]);
        errno = e;
        return -1;
    }
    return 0;
#endif
}

static void fork_child(void)
{
    for (size_t k = 0; k < 2; k++) {
        struct kind *t = &kinds[k];

        pthread_mutex_init(&t->mu, NULL);
        pthread_cond_init(&t->done_cv, NULL);
        t->running = 0;
        for (size_t i = 0; i < DLOCK__WATCH_MAX; i++)
            t->s[i].id = 0;
        /* Its own wake-up pipe: reading the parent's would steal its
         * wake-ups. */
        if (t->ctl[0] >= 0) {
            close(t->ctl[0]);
            close(t->ctl[1]);
            t->ctl[0] = t->ctl[1] = -1;
        }
    }
}

static void init_once(void)
{
    pthread_atfork(NULL, NULL, fork_child);
}

/* An own_thread fn runs on a thread of its own: it may wait on its store
 * (a KILL QUERY sent to a server that stopped answering waits out its
 * read timeout), and the watch thread must go on firing the other
 * watches, whatever their stores do.  It runs under the I/O deadline the
 * watch was armed with (a finite wait's deadline + 1 s): the disarm waits
 * for it, and a store that hangs must not hold a cancelled wait past the
 * bound its own calls have. */
struct call {
    struct kind *t;
    struct slot *w;
    void (*fn)(void *);
    void *arg;
    int64_t io_deadline;
};

static void call_done(struct kind *t, struct slot *w)
{
    pthread_mutex_lock(&t->mu);
    w->calling = 0;
    pthread_cond_broadcast(&t->done_cv);
    pthread_mutex_unlock(&t->mu);
}

static void *call_main(void *arg)
{
    struct call *k = arg;

    dlock__io_deadline = k->io_deadline;
    k->fn(k->arg);
    call_done(k->t, k->w); /* still k->w's slot: disarm waits for this */
    free(k);
    return NULL;
}

/* Fire w (caller holds t->mu; w->called set). */
static void fire(struct kind *t, struct slot *w)
{
    struct call *k;
    pthread_attr_t a;
    pthread_t th;
    int ok = 0;

    if (!w->w.own_thread) {
        w->w.fn(w->w.arg);
        return;
    }
    w->calling = 1;
    k = malloc(sizeof(*k));
    if (k != NULL) {
        *k = (struct call){t, w, w->w.fn, w->w.arg, w->w.io_deadline};
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        ok = pthread_create(&th, &a, call_main, k) == 0;
        pthread_attr_destroy(&a);
    }
    if (ok)
        return;
    /* No thread: here, then (the others wait for it). */
    free(k);
    pthread_mutex_unlock(&t->mu);
    dlock__io_deadline = w->w.io_deadline;
    w->w.fn(w->w.arg);
    dlock__io_deadline = 0;
    pthread_mutex_lock(&t->mu);
    w->calling = 0;
    pthread_cond_broadcast(&t->done_cv);
}

static void *watch_main(void *arg)
{
    struct kind *t = arg;

#ifdef __linux__
    (void)prctl(PR_SET_NAME, t->name, 0, 0, 0);
#endif
    pthread_mutex_lock(&t->mu);
    for (;;) {
        int64_t now = dlock__now_ms(), next = INT64_MAX;
        nfds_t n = 1;
        int ms = -1;
        char buf[64];

        t->p[0].fd = t->ctl[0];
        t->p[0].events = POLLIN;
        for (size_t i = 0; i < DLOCK__WATCH_MAX; i++) {
            struct slot *w = &t->s[i];

            if (w->id == 0 || w->called)
                continue;
            if (w->w.deadline <= now) {
                w->called = 1;
                fire(t, w);
                continue;
            }
            if (w->w.deadline < next)
                next = w->w.deadline;
            if (w->w.fd < 0)
                continue;
            t->p[n].fd = w->w.fd;
            t->p[n].events = POLLIN;
            t->ids[n] = w->id;
            t->at[n++] = i;
        }
        if (next != INT64_MAX)
            ms = next - now < POLL_MAX_MS ? (int)(next - now) : POLL_MAX_MS;
        pthread_mutex_unlock(&t->mu);
        (void)poll(t->p, n, ms);
        while (read(t->ctl[0], buf, sizeof(buf)) > 0)
            ;
        pthread_mutex_lock(&t->mu);
        for (nfds_t k = 1; k < n; k++) {
            struct slot *w = &t->s[t->at[k]];

            /* The slot may have been disarmed (and reused) meanwhile:
             * only the watch that was polled is fired. */
            if (!(t->p[k].revents & POLLIN) || w->id != t->ids[k] || w->called)
                continue;
            /* Readable once is enough: a cancel's pipe stays readable,
             * and a byte without the flag (a reset racing a fire) is no
             * fire. */
            w->called = 1;
            if (w->w.flag != NULL &&
                !__atomic_load_n(w->w.flag, __ATOMIC_SEQ_CST))
                continue;
            fire(t, w);
        }
    }
    return NULL;
}

uint64_t dlock__watch_arm(enum dlock__watch_kind kind,
                          const struct dlock__watch_spec *w)
{
    struct kind *t = &kinds[kind];
    uint64_t id = 0;

    pthread_once(&once, init_once);
    pthread_mutex_lock(&t->mu);
    if (t->ctl[0] < 0) {
        int p[2];

        if (dlock__pipe_nonblock_cloexec(p) == 0) {
            t->ctl[0] = p[0];
            t->ctl[1] = p[1];
        }
    }
    if (!t->running && t->ctl[0] >= 0) {
        pthread_t th;
        pthread_attr_t a;

        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        t->running = pthread_create(&th, &a, watch_main, t) == 0;
        pthread_attr_destroy(&a);
    }
    for (size_t i = 0; t->running && i < DLOCK__WATCH_MAX; i++) {
        if (t->s[i].id != 0)
            continue;
        id = t->next_id++;
        t->s[i] = (struct slot){id, *w, 0, 0};
        (void)!write(t->ctl[1], "w", 1);
        break;
    }
    pthread_mutex_unlock(&t->mu);
    return id;
}

void dlock__watch_disarm(enum dlock__watch_kind kind, uint64_t id)
{
    struct kind *t = &kinds[kind];

    if (id == 0)
        return;
    pthread_mutex_lock(&t->mu);
    for (size_t i = 0; i < DLOCK__WATCH_MAX; i++) {
        if (t->s[i].id != id)
            continue;
        /* Never return while its fn still runs: what it touches (a
         * connection, a condition variable) is the caller's. */
        while (t->s[i].calling)
            pthread_cond_wait(&t->done_cv, &t->mu);
        t->s[i].id = 0;
    }
    pthread_mutex_unlock(&t->mu);
}
