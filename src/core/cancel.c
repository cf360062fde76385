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
 * (watch.c) polls the armed cancels and calls the store's wake-up (a
 * KILL QUERY from another connection, a condition signalled) for the one
 * that fired, each on a short-lived thread of its own, so that one store
 * that hangs delays no other wait's cancel.  The signal handler itself never
 * does more than the store and the write.
 */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "cancel.h"
#include "clock.h"
#include "dlock.h"
#include "errors.h"
#include "iobound.h"
#include "watch.h"

struct dlock_cancel {
    int fired;  /* atomic */
    int rd, wr; /* the pipe */
};

_Thread_local struct dlock_cancel *dlock__cancel_cur;

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
    if (dlock__pipe_nonblock_cloexec(p) != 0) {
        int e = errno;

        free(c);
        return dlock__seterr(e == ENOMEM ? DLOCK_ENOMEM : DLOCK_EINVAL,
                             "dlock_cancel_new: no pipe (errno %d)", e);
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

/* --- the watch --------------------------------------------------------- */

/* The watch thread (watch.c) polls the armed cancels' pipes; fn runs on
 * a thread of its own (a KILL QUERY may wait on its store), under the
 * arming thread's I/O deadline. */
uint64_t dlock__cancel_watch(void (*fn)(void *), void *arg)
{
    struct dlock__watch_spec w;

    if (dlock__cancel_cur == NULL)
        return 0;
    w = (struct dlock__watch_spec){.fd = dlock__cancel_cur->rd,
                                   .flag = &dlock__cancel_cur->fired,
                                   .deadline = INT64_MAX,
                                   .fn = fn,
                                   .arg = arg,
                                   .own_thread = 1,
                                   .io_deadline = dlock__io_deadline};
    /* No thread or no room: the wait is cancelled when it ends (its
     * slices are bounded), not at once. */
    return dlock__watch_arm(DLOCK__WATCH_CANCEL, &w);
}

void dlock__cancel_unwatch(uint64_t id)
{
    dlock__watch_disarm(DLOCK__WATCH_CANCEL, id);
}
