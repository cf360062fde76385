/*
 * internal.h - the one door from bench/ into libdlock's private headers.
 * Test-only: never installed, included by bench/ alone.  Everything else
 * bench/ calls is include/dlock.h.  What it lets in, and why no public
 * call can give it:
 *
 *   - dlock__renewals() (src/core/registry.h): how many leases the renew
 *     thread has renewed in this process; the renewal part (renewal.c)
 *     divides it by the time.  The public API says whether a lock is
 *     lost, not how often it was renewed, and the figure is the bench's,
 *     not a user's.
 *   - the URL parser (src/core/url.h): the no-op clients (noop.c, and the
 *     TLS no-op of uncontended.c) connect where the store does, read from
 *     the same URL the same way (host, port, user, password, path, the
 *     hosts of a list, ?cacert=...); a parser of their own could read a
 *     URL otherwise (threat-model.md R7).
 *   - the Redis store's transport (src/stores/redis/rconn.h), rediss://
 *     only: Debian's hiredis has no TLS, so the TLS no-op (a PING) goes
 *     over the store's own TLS connection, as its commands do.
 *
 * The bench targets have no private include directory: the paths below
 * are the only way in, so a new use shows up here.
 */
#ifndef DLOCK_BENCH_INTERNAL_H
#define DLOCK_BENCH_INTERNAL_H

#include "../src/core/registry.h"
#include "../src/core/url.h"
#ifdef DLOCK_HAVE_REDIS
#include "../src/stores/redis/rconn.h"
#endif

#endif
