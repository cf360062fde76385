/*
 * iowatch.c - the watch that enforces the I/O deadline of store calls
 * (iobound.h; the deadline itself: iobound.c) on a blocking call of a
 * client library that takes none per call.
 *
 * MariaDB Connector/C fixes a connection's read timeout (in whole seconds)
 * when it connects; a renewal or release for a held lock must not outlive
 * that lock's lease (dlock__io_deadline), or a store that stopped
 * answering keeps the renew thread, and the holder's release, waiting for
 * the whole timeout.  So the store arms a watch on the connection's socket
 * around such a call: if the call is still running at the deadline, one
 * small thread (watch.c) shuts the socket down (both ways), and the call
 * blocked on it fails at once with a lost connection, which the store handles
 * as it handles any other.  The watch is taken off under the same mutex the
 * thread shuts down under, so a socket is never touched after its call
 * returned (and its descriptor may have been reused).
 */
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "iobound.h"
#include "watch.h"

static void shut_down(void *arg)
{
    (void)shutdown((int)(intptr_t)arg, SHUT_RDWR);
}

/* On the watch thread (watch.c) at the deadline, under the mutex the
 * unwatch takes: once unwatched, fd is never shut down. */
uint64_t dlock__io_watch(int fd, int64_t timeout_ms)
{
    struct dlock__watch_spec w;

    if (fd < 0 || dlock__io_deadline == 0 ||
        dlock__io_bound(timeout_ms) >= timeout_ms)
        return 0; /* the library's own timeout comes first */
    w = (struct dlock__watch_spec){.fd = -1,
                                   .flag = NULL,
                                   .deadline = dlock__io_deadline,
                                   .fn = shut_down,
                                   .arg = (void *)(intptr_t)fd,
                                   .own_thread = 0,
                                   .io_deadline = 0};
    /* No thread or no room: the library's own timeout still bounds it. */
    return dlock__watch_arm(DLOCK__WATCH_IO, &w);
}

void dlock__io_unwatch(uint64_t id)
{
    dlock__watch_disarm(DLOCK__WATCH_IO, id);
}
