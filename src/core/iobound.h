/*
 * iobound.h - the I/O deadline of store calls: the thread's deadline,
 * and a watch that enforces it on a client library that takes no
 * deadline per call (iobound.c, iowatch.c).
 */
#ifndef DLOCK_CORE_IOBOUND_H
#define DLOCK_CORE_IOBOUND_H

#include <stdint.h>

/* A bound on store I/O for the calling thread (monotonic ms, 0: none).
 * The core sets it around store calls made for a held lock (renewal,
 * release, assert_ttl) to that lock's lease end: past it the call is of
 * no use, and a store that stopped answering must not keep the renew
 * thread or the holder waiting for the URL's whole timeout.  Stores pass
 * their own timeout through dlock__io_bound() wherever they wait. */
extern _Thread_local int64_t dlock__io_deadline;
/* timeout_ms, or less when dlock__io_deadline comes sooner (at least 1). */
int64_t dlock__io_bound(int64_t timeout_ms);

/* For a client library whose calls take no deadline: while armed, the
 * socket fd is shut down at dlock__io_deadline, so that a call blocked on
 * it fails then.  Armed only when that deadline comes before timeout_ms
 * (the library's own); 0 when not armed.  Unwatch before the call
 * returns to its caller (and before fd is closed). */
uint64_t dlock__io_watch(int fd, int64_t timeout_ms);
void dlock__io_unwatch(uint64_t id);

#endif /* DLOCK_CORE_IOBOUND_H */
