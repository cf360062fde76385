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
