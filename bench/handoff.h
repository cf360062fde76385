/*
 * handoff.h - one way to take and give back a named lock, so that the
 * contended part (contended.c) times dlock and each store's hand-off
 * floor (handoff_<store>.c) in exactly the same shape: P processes on one
 * name, hold 1 ms, think 1 ms, the hand-off being the time from one
 * holder's release to another's acquire.
 *
 * A floor is the least exchange that keeps the rules, with the bare
 * client library: the releaser sends one request that frees the lock and
 * notifies; the waiter is woken by the server (a notification, or its own
 * blocked call where the store has one); the waiter sends one request
 * that takes the lock, never taking it on the message's word (rule R1,
 * docs/threat-model.md).
 */
#ifndef DLOCK_BENCH_HANDOFF_H
#define DLOCK_BENCH_HANDOFF_H

struct handoff_ops {
    const char *what; /* one line: what the exchange is */
    /* Once, in the parent, before any open (NULL: nothing to do): what
     * every contender shares (a sequence for the fence, say); 0 on
     * success. */
    int (*setup)(const char *url);
    /* In each contender process, before the clock starts: its own
     * connection for NAME; NULL (after a message on stderr) if it cannot. */
    void *(*open)(const char *url, const char *name);
    /* Wait as long as it takes; 0 once held, -1 on an error. */
    int (*acquire)(void *c);
    /* 0 once given back, -1 on an error. */
    int (*release)(void *c);
    void (*close)(void *c);
    /* Once, in the parent, after the last contender (NULL: nothing). */
    void (*teardown)(const char *url);
};

/* The floor for URL's store, or NULL where none is written. */
const struct handoff_ops *handoff_floor(const char *url);

/* One per store (handoff_<store>.c), for handoff_floor(). */
extern const struct handoff_ops handoff_floor_sqlite, handoff_floor_redis,
    handoff_floor_postgres, handoff_floor_mysql, handoff_floor_etcd;

#endif
