/*
 * watch.h - the skeleton of the two watch threads (watch.c): a table of
 * armed watches per kind, and one small thread per kind that fires each
 * watch once, when its descriptor becomes readable or its deadline
 * passes, while the thread that armed it is blocked elsewhere.  Its two
 * users: cancel.c (a cancel fired while a wait blocks inside a client
 * library) and iowatch.c (the I/O deadline of a call that takes none).
 */
#ifndef DLOCK_CORE_WATCH_H
#define DLOCK_CORE_WATCH_H

#include <stdint.h>

/* Each kind has its own thread ("dlock-cancel", "dlock-iowatch"), mutex
 * and DLOCK__WATCH_MAX watches: a slow wake-up of one kind never delays
 * the other's. */
enum dlock__watch_kind { DLOCK__WATCH_CANCEL = 0, DLOCK__WATCH_IO = 1 };
#define DLOCK__WATCH_MAX 256

struct dlock__watch_spec {
    /* Fires when fd becomes readable (-1: never) and, if flag is not
     * NULL, *flag (read atomically) is set then: readable without it, the
     * watch is spent and not looked at again. */
    int fd;
    const int *flag;
    int64_t deadline; /* or fires then (monotonic ms; INT64_MAX: never) */
    void (*fn)(void *arg);
    void *arg;
    /* 0: fn runs on the watch thread under the kind's mutex (which
     * disarm takes too), so it must not block.  1: fn may block (a
     * store's wake-up): it runs on a short-lived thread of its own, with
     * dlock__io_deadline set to io_deadline. */
    int own_thread;
    int64_t io_deadline;
};

/* Arm a watch of that kind; its id, or 0 when there is no thread or no
 * room (then nothing fires). */
uint64_t dlock__watch_arm(enum dlock__watch_kind kind,
                          const struct dlock__watch_spec *w);
/* Take watch id off (0: none); returns only once its fn, if it ran, has
 * returned. */
void dlock__watch_disarm(enum dlock__watch_kind kind, uint64_t id);

/* Make fd non-blocking and close-on-exec: 0, or -1 with errno. */
int dlock__fd_nonblock_cloexec(int fd);
/* A pipe whose ends are non-blocking and close-on-exec from the start
 * (pipe2() where there is one): a fork+exec by another thread of the
 * host never hands them on, as it could between pipe() and fcntl().  0,
 * or -1 with errno.  The watch threads' wake-up pipes, and cancel.c's. */
int dlock__pipe_nonblock_cloexec(int p[2]);

#endif /* DLOCK_CORE_WATCH_H */
