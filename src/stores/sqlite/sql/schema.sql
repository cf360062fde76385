-- schema.sql - the SQLite store's tables, created if missing by every open
-- (init()) and printed by `dlock init --print` (with migrate-limit.sql
-- after it, as a comment).
--
-- dlock_locks: one row per holder (a lock has one, a shared lock or a
-- semaphore of N several).  A row is a lease on the host's CLOCK_BOOTTIME
-- of the boot in boot_id; host, pid, pid_start and pid_ns let a contender
-- in the same pid namespace prove the holder gone (store.c).
-- dlock_fences: the highest fence each name handed out; never deleted, so
-- fences never go back.
-- dlock_runs: run records, one row per kept run (DLOCK_RUNS_KEPT per name,
-- the newest by fence); dlock_run_names: one summary row per name that
-- ever ran, the start of its last run and the fence of its last success
-- (0: none).
-- dlock_leaders: an election's leader value (dlock_elect(), dlock_proclaim()),
-- one row per name, written by the holder under its lock with its fence
-- (the term); shown only while that fence is the holder's.  A file made
-- before elections gains it on its first open by this version.
-- dlock_run_keep: how many runs a name keeps (dlock_keep_runs(); no row:
-- DLOCK_RUNS_KEPT) and how many it holds now, so that a run drops the
-- oldest over the setting without counting them (counted again once
-- every KEEP runs: a count put wrong by hand comes right).
-- dlock_suspensions: a suspended job (dlock_suspend(), `dlock suspend`),
-- one row per name: who, since when (Unix ms) and why; run_begin skips a
-- name with a row.  A file made before it gains it on its first open.
--
-- The comments after a column are part of the DDL, as the tables in a file
-- show them (sqlite3 FILE .schema).
CREATE TABLE IF NOT EXISTS dlock_locks (
    name        TEXT    NOT NULL,
    owner       TEXT    NOT NULL,  -- random 128-bit token, hex
    shared      INTEGER NOT NULL,
    fence       INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL,  -- host CLOCK_BOOTTIME ms
    boot_id     TEXT    NOT NULL,
    acquired_at INTEGER NOT NULL,  -- Unix ms
    host        TEXT    NOT NULL,
    pid         INTEGER NOT NULL,
    pid_start   INTEGER NOT NULL,  -- starttime, host ticks
    pid_ns      TEXT    NOT NULL,
    "limit"     INTEGER NOT NULL DEFAULT 1, -- 1 lock, N semaphore
    PRIMARY KEY (name, owner)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS dlock_fences (
    name  TEXT    PRIMARY KEY,
    fence INTEGER NOT NULL      -- highest fence handed out
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS dlock_runs (
    name      TEXT    NOT NULL,
    fence     INTEGER NOT NULL,  -- the run's lock fence
    host      TEXT    NOT NULL,
    pid       INTEGER NOT NULL,
    start_ms  INTEGER NOT NULL,  -- Unix ms (CLOCK_REALTIME)
    end_ms    INTEGER NOT NULL DEFAULT 0,
    result    INTEGER NOT NULL,  -- dlock_run_result
    status    INTEGER NOT NULL DEFAULT -1,
    PRIMARY KEY (name, fence)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS dlock_run_names (
    name       TEXT    PRIMARY KEY,
    last_start INTEGER NOT NULL,  -- Unix ms of the last run's start
    last_fence INTEGER NOT NULL,
    ok_fence   INTEGER NOT NULL DEFAULT 0  -- last success, 0: none
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS dlock_leaders (
    name  TEXT    PRIMARY KEY,
    fence INTEGER NOT NULL,  -- the term (lock fence) it was written under
    value TEXT    NOT NULL   -- UTF-8, at most DLOCK_VALUE_MAX bytes
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS dlock_suspensions (
    name     TEXT    PRIMARY KEY,
    by_whom  TEXT    NOT NULL,  -- USER@HOST, UTF-8
    since_ms INTEGER NOT NULL,  -- Unix ms (CLOCK_REALTIME)
    reason   TEXT    NOT NULL   -- UTF-8, at most DLOCK_REASON_MAX bytes
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS dlock_run_keep (
    name      TEXT    PRIMARY KEY,
    keep      INTEGER NOT NULL,  -- 1..DLOCK_RUNS_KEPT_MAX
    kept      INTEGER NOT NULL,  -- runs of the name in dlock_runs now
    uncounted INTEGER NOT NULL   -- runs begun since they were counted
) WITHOUT ROWID;
