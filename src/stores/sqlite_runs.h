/*
 * sqlite_runs.h - what sqlite_runs.c (the run records) needs of sqlite.c,
 * and the run tables' DDL, part of the store's DDL.
 */
#ifndef DLOCK_SQLITE_RUNS_H
#define DLOCK_SQLITE_RUNS_H

#include <sqlite3.h>
#include <stdint.h>

#include "clock.h"
#include "errors.h"
#include "store.h"
#include "strutil.h"

/* Run records: one row per kept run (DLOCK_RUNS_KEPT per name, the newest
 * by fence), and one summary row per name that ever ran: the start of
 * its last run and the fence of its last success (0: none). */
#define DLOCK_SQLITE_RUNS_DDL                                                \
    "CREATE TABLE IF NOT EXISTS dlock_runs (\n"                              \
    "    name      TEXT    NOT NULL,\n"                                      \
    "    fence     INTEGER NOT NULL,  -- the run's lock fence\n"             \
    "    host      TEXT    NOT NULL,\n"                                      \
    "    pid       INTEGER NOT NULL,\n"                                      \
    "    start_ms  INTEGER NOT NULL,  -- Unix ms (CLOCK_REALTIME)\n"         \
    "    end_ms    INTEGER NOT NULL DEFAULT 0,\n"                            \
    "    result    INTEGER NOT NULL,  -- dlock_run_result\n"                 \
    "    status    INTEGER NOT NULL DEFAULT -1,\n"                           \
    "    PRIMARY KEY (name, fence)\n"                                        \
    ") WITHOUT ROWID;\n"                                                     \
    "CREATE TABLE IF NOT EXISTS dlock_run_names (\n"                         \
    "    name       TEXT    PRIMARY KEY,\n"                                  \
    "    last_start INTEGER NOT NULL,  -- Unix ms of the last run's start\n" \
    "    last_fence INTEGER NOT NULL,\n"                                     \
    "    ok_fence   INTEGER NOT NULL DEFAULT 0  -- last success, 0: none\n"  \
    ") WITHOUT ROWID;\n"

/* sqlite.c: the connection, taken for one operation (lock/unlock), a
 * BEGIN IMMEDIATE / COMMIT / ROLLBACK on it, errors as dlock codes. */
sqlite3 *dlock__sqlite_db(struct dlock_store *st);
void dlock__sqlite_lock(struct dlock_store *st);
void dlock__sqlite_unlock(struct dlock_store *st);
int dlock__sqlite_begin(struct dlock_store *st);
int dlock__sqlite_commit(struct dlock_store *st);
void dlock__sqlite_rollback(struct dlock_store *st);
int dlock__sqlite_error(struct dlock_store *st, const char *what);
/* Does lk still own its row (lease not over, this boot)?  1, 0, or -1
 * on a store error (connection held, inside a transaction). */
int dlock__sqlite_owns(struct dlock_store *st, const struct dlock_lock *lk);

/* sqlite_runs.c: the four run ops of dlock__sqlite_ops. */
int dlock__sqlite_run_begin(struct dlock_store *st, struct dlock_lock *lk,
                            const dlock_run_rule *rule, const char *host,
                            int64_t pid, int *go, dlock_run *last);
int dlock__sqlite_run_end(struct dlock_store *st, struct dlock_lock *lk,
                          int result, int status);
int dlock__sqlite_runs(struct dlock_store *st, const char *name,
                       unsigned max, dlock_run_cb cb, void *payload);
int dlock__sqlite_last_runs(struct dlock_store *st, const char *prefix,
                            dlock_run_cb cb, void *payload);

#endif
