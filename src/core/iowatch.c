/*
 * iowatch.c - the I/O deadline of store calls (iobound.h): the thread's
 * dlock__io_deadline, dlock__io_bound() that stores pass their timeouts
 * through, and a watch that enforces the deadline on a blocking call of a
 * client library that takes none per call.
 *
 * MariaDB Connector/C fixes a connection's read timeout (in whole seconds)
 * when it connects; a renewal or release for a held lock must not outlive
 * that lock's lease (dlock__io_deadline), or a store that stopped
 * answering keeps the renew thread, and the holder's release, waiting for
 * the whole timeout.  So the store arms a watch on the connection's socket
 * around such a call: if the call is still running at the deadline, one
 * small thread shuts the socket down (both ways), and the call blocked on
 * it fails at once with a lost connection, which the store handles as it
 * handles any other.  The watch is taken off under the same mutex the
 * thread shuts down under, so a socket is never touched after its call
 * returned (and its descriptor may have been reused).
 */
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "clock.h"
#include "errors.h"
#include "iobound.h"

_Thread_local int64_t dlock__io_deadline;

int64_t dlock__io_bound(int64_t timeout_ms)
{
    int64_t left;

    if (dlock__io_deadline == 0)
        return timeout_ms;
    left = dlock__io_deadline - dlock__now_ms();
    if (left < 1)
        left = 1;
    return left < timeout_ms ? left : timeout_ms;
}

#define MAX_WATCHES 256

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int running;
static uint64_t next_id = 1;
static struct watch {
    uint64_t id; /* 0: free */
    int fd;
    int64_t deadline;
} watches[MAX_WATCHES];

static void init_cv(void)
{
    pthread_condattr_t ca;

    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&cv, &ca);
    pthread_condattr_destroy(&ca);
}

/* A fork child has no watch thread and watches nothing of its parent. */
static void fork_child(void)
{
    pthread_mutex_init(&mu, NULL);
    init_cv();
    running = 0;
    for (size_t i = 0; i < MAX_WATCHES; i++)
        watches[i].id = 0;
}

static void init_once(void)
{
    init_cv();
    pthread_atfork(NULL, NULL, fork_child);
}

static void *watch_main(void *arg)
{
    (void)arg;
#ifdef __linux__
    (void)prctl(PR_SET_NAME, "dlock-iowatch", 0, 0, 0);
#endif
    pthread_mutex_lock(&mu);
    for (;;) {
        int64_t now = dlock__now_ms(), next = INT64_MAX;

        for (size_t i = 0; i < MAX_WATCHES; i++) {
            if (watches[i].id == 0)
                continue;
            if (watches[i].deadline <= now) {
                (void)shutdown(watches[i].fd, SHUT_RDWR);
                watches[i].id = 0;
            } else if (watches[i].deadline < next) {
                next = watches[i].deadline;
            }
        }
        if (next == INT64_MAX) {
            pthread_cond_wait(&cv, &mu);
        } else {
            struct timespec ts = {(time_t)(next / 1000),
                                  (long)(next % 1000) * 1000000L};

            pthread_cond_timedwait(&cv, &mu, &ts);
        }
    }
    return NULL;
}

uint64_t dlock__io_watch(int fd, int64_t timeout_ms)
{
    uint64_t id = 0;

    if (fd < 0 || dlock__io_deadline == 0 ||
        dlock__io_bound(timeout_ms) >= timeout_ms)
        return 0; /* the library's own timeout comes first */
    pthread_once(&once, init_once);
    pthread_mutex_lock(&mu);
    if (!running) {
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
        watches[i].id = id;
        watches[i].fd = fd;
        watches[i].deadline = dlock__io_deadline;
        pthread_cond_signal(&cv);
        break;
    }
    /* No thread or no room: the library's own timeout still bounds it. */
    pthread_mutex_unlock(&mu);
    return id;
}

void dlock__io_unwatch(uint64_t id)
{
    if (id == 0)
        return;
    pthread_mutex_lock(&mu);
    for (size_t i = 0; i < MAX_WATCHES; i++)
        if (watches[i].id == id)
            watches[i].id = 0;
    pthread_mutex_unlock(&mu);
}
