/*
 * fleet.h - the Prometheus text of every name in a store (`dlock
 * metrics`, and whatever serves it over HTTP): the last runs, the holders
 * and fences the store knows, read at the moment of the call.
 */
#ifndef DLOCK_CLI_FLEET_H
#define DLOCK_CLI_FLEET_H

#include <stddef.h>
#include <stdint.h>

#include "cli.h"

/* Prometheus text for every name under prefix, read from store.
 * 0 with *text malloc'd (NUL-terminated, *len bytes); else an exit
 * code (69 store unavailable, 70 internal) with *err malloc'd (one
 * line, no password).  (64 too: a prefix the store refuses as no name's
 * start, too long.)  Nothing is printed; each store call is bounded by
 * the store's own I/O timeout (the URL's ?timeout=), the whole by
 * budget_ms (> 0; checked between the calls: 69 when it has passed), and
 * the first that fails ends the scrape. */
int cli_fleet_metrics(dlock_store *store, const char *prefix, int64_t budget_ms,
                      char **text, size_t *len, char **err);

/* The text of a scrape that failed with exit code code (from
 * cli_fleet_metrics()): dlock_metrics_scrape_ok 0 and
 * dlock_metrics_scrape_error{error="unavailable"|"usage"|"internal"} 1,
 * with their # HELP and # TYPE lines.  0 with *text malloc'd (*len
 * bytes), or 70 (out of memory). */
int cli_fleet_failure(int code, char **text, size_t *len);

#endif
