SELECT pg_advisory_xact_lock(hashtextextended('dlock: create tables', 0));

-- Run records (dlock run --once, --once-per; dlock history): the
-- last runs of each name (20 kept, or the name's keep_runs), and per
-- name the start of its last run, its last success, and how many runs
-- it keeps (dlock_keep_runs(); NULL: 20) with how many it holds, so a
-- run drops the oldest over the setting without counting them.  Times:
-- ms since the epoch on the server's clock.
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
    succeeded_ms    bigint,
    keep_runs       integer, -- runs kept, 1..10000 (NULL: 20)
    kept_runs       integer, -- runs of the name in dlock_runs, as counted
    kept_fence      bigint,  -- its newest run then (another: recount)
    uncounted       integer  -- runs begun since (keep_runs of them: recount)
);
-- Tables made before keep_runs (or before uncounted) gain its columns;
-- only when they lack them, so that a login owning none of the tables
-- may still run this.
DO $$ BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid =
        'dlock_run_names'::regclass AND attname = 'uncounted' AND
        NOT attisdropped) THEN
        ALTER TABLE dlock_run_names ADD COLUMN IF NOT EXISTS keep_runs
            integer, ADD COLUMN IF NOT EXISTS kept_runs integer,
            ADD COLUMN IF NOT EXISTS kept_fence bigint,
            ADD COLUMN IF NOT EXISTS uncounted integer;
    END IF;
END $$;

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
