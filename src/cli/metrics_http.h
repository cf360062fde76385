/*
 * metrics_http.h - `dlock metrics [PREFIX] --listen ADDR:PORT`: the text
 * of `dlock metrics` (fleet.c) served over HTTP at /metrics, read from
 * the store on each scrape, for Prometheus to scrape (metrics_http.c,
 * on libmicrohttpd; called by cmd_metrics.c).
 */
#ifndef DLOCK_CLI_METRICS_HTTP_H
#define DLOCK_CLI_METRICS_HTTP_H

#include <stdint.h>

#include "cli.h"

/* Serve c's store's metrics of the names under prefix (NULL: all) at
 * http://listen/metrics until SIGTERM or SIGINT; listen is "ADDR:PORT"
 * ("127.0.0.1:9188", "[::1]:9188", ":9188" for every address; port 0
 * picks one, said in the start line).  Each open of the store is given
 * open_ms.  Returns the exit code: 0 after a signal, 64 for a bad or busy
 * address (before serving) or a build without libmicrohttpd. */
int cli_metrics_serve(const struct cli *c, const char *prefix,
                      const char *listen, int64_t open_ms);

#endif
