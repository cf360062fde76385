/*
 * cancel.h - what a store's wait does about dlock_cancel (cancel.c).
 *
 * The cancel of the acquire running on this thread (NULL: none) is set
 * by acquire.c for the whole acquire and cleared before it lets go of
 * what a cancelled wait left (so that cleanup is never cancelled
 * itself).  A store's wait checks dlock__cancelled() between its steps
 * and wakes on it: a wait that polls descriptors adds dlock__cancel_fd()
 * (readable once fired); one that blocks elsewhere arms
 * dlock__cancel_watch(fn, arg): fn(arg) runs once, on another thread,
 * when the cancel fires while armed; unwatch() returns only once fn has
 * returned, so arm it around the blocking call and unwatch before
 * touching what fn touches.  A store returns what its wait ended with;
 * the core turns it into DLOCK_ECANCELED and releases a grant that raced
 * the cancel.
 */
#ifndef DLOCK_CORE_CANCEL_H
#define DLOCK_CORE_CANCEL_H

#include <stdint.h>

struct dlock_cancel;

extern _Thread_local struct dlock_cancel *dlock__cancel_cur;
int dlock__cancelled(void);
int dlock__cancel_fd(void);
/* DLOCK_ECANCELED with its message. */
int dlock__ecanceled(void);
/* Sleep up to ms, less if the cancel fires: 1 if it did. */
int dlock__cancel_sleep_ms(int64_t ms);
uint64_t dlock__cancel_watch(void (*fn)(void *), void *arg);
void dlock__cancel_unwatch(uint64_t id);

#endif /* DLOCK_CORE_CANCEL_H */
