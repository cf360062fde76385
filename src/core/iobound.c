/*
 * iobound.c - the I/O deadline of store calls (iobound.h): the thread's
 * dlock__io_deadline, and dlock__io_bound() that stores pass their
 * timeouts through.  (The socket watch that enforces it on a library
 * that takes no deadline per call: iowatch.c.)
 */
#include <stdint.h>

#include "clock.h"
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
