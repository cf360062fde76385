/*
 * metrics.h - `dlock run --metrics-file PATH`: the figures of each run in
 * the Prometheus text format, for node_exporter's textfile collector.
 * run_report() (cli.h) calls it; tests/runs/metrics_driver.c too.
 */
#ifndef DLOCK_CLI_METRICS_H
#define DLOCK_CLI_METRICS_H

#include "cli.h"

/*
 * Record r in the file at path, atomically: writers of one file are
 * serialised by flock(2) on "PATH.lock"; the new text goes to "PATH.tmp"
 * (same directory), is fsync'd and renamed over PATH, so the collector
 * never reads half a file.  The series of other names are kept; r->name's
 * counters go up, its gauges are replaced by r's (those of a run only when
 * r->ran; the last success only when it succeeded).
 * Returns 0, or -1 after printing why (the file is left as it was).
 */
int cli_metrics_record(const char *path, const struct cli_run_report *r);

#endif
