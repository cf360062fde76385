-- Fragment: the run records' tables (runs.c), the same in both modes,
-- durable: a record is what an operator reads after a crash.  Names in
-- the "C" collation, so that a prefix (LIKE 'p%') is a range of the
-- primary key.
-- @keep-comments: these comments are sent and printed (dlock ddl).

-- Run records (dlock run --once, --once-per; dlock history): the
-- last runs of each name (20 kept), and per name the start of its
-- last run and its last success.  Times: ms since the epoch on the
-- server's clock.
CREATE TABLE IF NOT EXISTS dlock_runs (
    name     text COLLATE "C" NOT NULL,
    fence    bigint   NOT NULL, -- the fence of the run's lock
    host     text     NOT NULL,
    pid      bigint   NOT NULL,
    start_ms bigint   NOT NULL,
    end_ms   bigint,            -- NULL: running or abandoned
    result   smallint NOT NULL, -- 0 running 1 exited 2 signaled 3 lost 4 abandoned
    status   integer  NOT NULL, -- exit status, signal, or -1
    PRIMARY KEY (name, fence)
);
CREATE TABLE IF NOT EXISTS dlock_run_names (
    name            text COLLATE "C" PRIMARY KEY,
    last_start_ms   bigint, -- start of its last run
    succeeded_fence bigint, -- its last run that exited 0 (NULL: none)
    succeeded_ms    bigint
);

-- Leader election (dlock elect; dlock leader): each name's leader value,
-- with the term (the lock's fence) it was written under; shown only
-- while that fence is the holder's.  One row per name, replaced by each
-- leader.
CREATE TABLE IF NOT EXISTS dlock_leaders (
    name  text COLLATE "C" PRIMARY KEY,
    fence bigint NOT NULL, -- the term (the leader's lock fence)
    value text              -- NULL: a leader without a value
);

-- Suspension (dlock suspend; dlock resume): a suspended job, one row per
-- name: who suspended it, since when (ms since the epoch on the server's
-- clock) and why ('' for no reason).  A run of a name with a row is
-- skipped, whatever its rule; resuming deletes the row.
CREATE TABLE IF NOT EXISTS dlock_suspensions (
    name     text COLLATE "C" PRIMARY KEY,
    by_whom  text   NOT NULL, -- USER@HOST unless told, UTF-8
    since_ms bigint NOT NULL, -- server clock
    reason   text   NOT NULL  -- UTF-8, at most DLOCK_REASON_MAX bytes
);
