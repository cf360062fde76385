CREATE TABLE IF NOT EXISTS dlock_locks (
    name        text        NOT NULL,
    owner       text        NOT NULL, -- random 128-bit token, hex
    shared      boolean     NOT NULL,
    fence       bigint      NOT NULL,
    backend_pid integer     NOT NULL, -- 0: lease mode
    host        text        NOT NULL,
    pid         bigint      NOT NULL,
    expires_at  timestamptz NOT NULL, -- server clock
    acquired_at timestamptz NOT NULL,
    PRIMARY KEY (name, owner)
);
CREATE TABLE IF NOT EXISTS dlock_fences (
    name  text   PRIMARY KEY, -- '': ceiling of the session fences
    fence bigint NOT NULL     -- highest handed out ('': above every one)
);
-- Session mode: one row per held lock, written by the statement
-- that takes the advisory lock; gone with a crash, like the locks.
CREATE UNLOGGED TABLE IF NOT EXISTS dlock_held (
    name        text        NOT NULL,
    owner       text        NOT NULL, -- random 128-bit token, hex
    shared      boolean     NOT NULL,
    fence       bigint      NOT NULL,
    backend_pid integer     NOT NULL, -- holding session
    sess        bigint      NOT NULL, -- its random id
    host        text        NOT NULL,
    pid         bigint      NOT NULL,
    expires_at  timestamptz NOT NULL, -- server clock
    acquired_at timestamptz NOT NULL,
    PRIMARY KEY (name, owner)
);
-- Session mode's fences (all names): UNLOGGED from PostgreSQL 15.
DO $$ BEGIN
    IF current_setting('server_version_num')::int >= 150000 THEN
        EXECUTE 'CREATE UNLOGGED SEQUENCE IF NOT EXISTS dlock_fence_seq';
    ELSE
        EXECUTE 'CREATE SEQUENCE IF NOT EXISTS dlock_fence_seq';
    END IF;
END $$;
-- Every session fence handed out is below the ceiling, the row ''
-- of dlock_fences (durable): a drawing statement that finds its
-- fence within half a block of it raises it a block above the
-- fence in its own transaction, committed durably before the
-- fence is returned.  A crash resets the UNLOGGED sequence to 1:
-- a value below 10^15 re-seeds it (once, under a transaction
-- advisory lock) above every fence in dlock_fences, the ceiling
-- included.  No clock.  p_v: the value nextval() drew.
CREATE OR REPLACE FUNCTION dlock_fence_raise_v1(p_v bigint)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE f bigint := p_v; r bigint;
BEGIN
    IF f < 1000000000000000 THEN
        PERFORM pg_advisory_xact_lock(hashtextextended('dlock: fence seed', 0));
        f := nextval('dlock_fence_seq');
        IF f < 1000000000000000 THEN
            SELECT greatest(max(x.fence) + 1, 1000000000000000) INTO f
                FROM dlock_fences x;
            PERFORM setval('dlock_fence_seq', f);
        END IF;
    END IF;
    SELECT x.fence INTO r FROM dlock_fences x WHERE x.name = '';
    IF r IS NULL OR f >= r - 524288 THEN
        PERFORM set_config('synchronous_commit', 'on', true);
        INSERT INTO dlock_fences AS x (name, fence) VALUES ('',
            f + 1048576) ON CONFLICT (name) DO UPDATE SET
            fence = greatest(x.fence, excluded.fence)
            RETURNING x.fence INTO r;
    END IF;
    -- The session's copy (undone if this transaction aborts).
    PERFORM set_config('dlock.fence_ceiling_' || pg_backend_pid(), r::text, false);
    RETURN f;
END $$;
-- Semaphores (limit N > 1): holder rows say their limit and slot (added
-- columns: dlock 0.2.0's tables get them on the next init).  Keys, all
-- hashtextextended(name, seed) whatever ?keys= says: seed i + 1 is slot
-- i, held exclusively by that slot's holder; seed -1 ("the semaphore
-- key") is held shared by every semaphore holder; seed -2 serialises
-- admissions as a transaction lock.  Every holder also holds the name's
-- own key p_k0 (the limit-1 key) shared, so a limit-1 lock and a
-- semaphore exclude each other on the server.
ALTER TABLE dlock_held ADD COLUMN IF NOT EXISTS lim integer NOT NULL
    DEFAULT 1, ADD COLUMN IF NOT EXISTS slot integer NOT NULL DEFAULT 0;
ALTER TABLE dlock_locks ADD COLUMN IF NOT EXISTS lim integer NOT NULL DEFAULT 1;
-- One admission to a semaphore of session mode: under the name's
-- admission lock (so it reads every earlier admission's row), check
-- the limit in force, take a free slot (or p_have, already taken),
-- the semaphore key and the name's key k0 shared, and write the row.
CREATE OR REPLACE FUNCTION dlock_sem_acquire_v2(p_name text,
    p_owner text, p_lim integer, p_ttl bigint, p_host text,
    p_pid bigint, p_sess bigint, p_k0 bigint, p_have integer,
    OUT o_got boolean, OUT o_fence bigint, OUT o_lim integer,
    OUT o_slot integer, OUT o_left bigint, OUT o_wait integer,
    OUT o_host text, OUT o_pid bigint, OUT o_killed integer)
LANGUAGE plpgsql AS $$
DECLARE
    db oid;
    ks bigint := hashtextextended(p_name, -1);
    s integer;
    have_slot boolean := false;
BEGIN
    o_got := false; o_slot := -1; o_wait := -1; o_killed := 0;
    PERFORM pg_advisory_xact_lock(hashtextextended(p_name, -2));
    SELECT d.oid INTO db FROM pg_database d
        WHERE d.datname = current_database();
    -- A live holder of another limit (its key still held).
    SELECT h.lim INTO o_lim FROM dlock_held h WHERE h.name = p_name
        AND h.lim <> p_lim AND h.expires_at > clock_timestamp()
        AND EXISTS (SELECT 1 FROM pg_locks p WHERE p.pid =
        h.backend_pid AND p.locktype = 'advisory' AND p.granted AND
        p.objsubid = 1 AND p.database = db AND ((p.classid::bigint << 32)
        | p.objid::bigint) = CASE WHEN h.lim > 1 THEN
        hashtextextended(p_name, h.slot + 1) ELSE p_k0 END) LIMIT 1;
    IF o_lim IS NOT NULL THEN
        IF p_have >= 0 THEN
            PERFORM pg_advisory_unlock(hashtextextended(p_name,
                                                        p_have + 1));
        END IF;
        RETURN;
    END IF;
    IF p_have >= 0 THEN
        s := p_have; have_slot := true;
    ELSE
        -- Slots without a row first; never one this session holds
        -- (session advisory locks stack).
        FOR s IN SELECT g FROM generate_series(0, p_lim - 1) g
            LEFT JOIN (SELECT h.slot, bool_or(h.sess = p_sess) AS
            mine FROM dlock_held h WHERE h.name = p_name AND h.lim > 1
            GROUP BY h.slot) o ON o.slot = g WHERE o.mine IS NOT TRUE
            ORDER BY o.slot IS NOT NULL, g LOOP
            IF pg_try_advisory_lock(hashtextextended(p_name, s + 1))
            THEN
                have_slot := true;
                EXIT;
            END IF;
        END LOOP;
    END IF;
    IF NOT have_slot THEN
        -- Full.  Fence off holders past their lease whose session
        -- still holds their slot (hung), then say who holds it and
        -- which slot to wait on (a random one of other sessions).
        BEGIN
            SELECT count(*) FILTER (WHERE pg_terminate_backend(
                h.backend_pid)) INTO o_killed FROM dlock_held h
                WHERE h.name = p_name AND h.lim > 1 AND h.expires_at
                <= clock_timestamp() AND h.backend_pid <>
                pg_backend_pid() AND EXISTS (SELECT 1 FROM pg_locks p
                WHERE p.pid = h.backend_pid AND p.locktype = 'advisory'
                AND p.granted AND p.objsubid = 1 AND p.database = db AND
                ((p.classid::bigint << 32) | p.objid::bigint) =
                hashtextextended(p_name, h.slot + 1));
        EXCEPTION WHEN insufficient_privilege THEN
            o_killed := -1;
        END;
        SELECT min(ceil(extract(epoch FROM h.expires_at -
            clock_timestamp()) * 1000)::bigint) INTO o_left
            FROM dlock_held h WHERE h.name = p_name AND h.lim > 1
            AND h.expires_at > clock_timestamp();
        SELECT h.slot, h.host, h.pid INTO o_wait, o_host, o_pid
            FROM dlock_held h WHERE h.name = p_name AND h.lim > 1
            AND h.sess <> p_sess AND h.slot < p_lim
            ORDER BY random() LIMIT 1;
        IF o_wait IS NULL THEN
            o_wait := floor(random() * p_lim)::integer;
        END IF;
        RETURN;
    END IF;
    PERFORM pg_advisory_lock_shared(ks);
    -- k0 held exclusively (a limit-1 lock), or shared by a session
    -- without the semaphore key (a shared lock, another client):
    -- not admitted.  The rows check above named the limit if the
    -- holder is dlock's and committed.
    IF NOT pg_try_advisory_lock_shared(p_k0) THEN
        PERFORM pg_advisory_unlock_shared(ks);
        PERFORM pg_advisory_unlock(hashtextextended(p_name, s + 1));
        RETURN;
    END IF;
    IF EXISTS (SELECT 1
        FROM (SELECT p.pid, bool_or(k = p_k0) AS k0, bool_or(k = ks)
        AS s FROM (SELECT p.pid, (p.classid::bigint << 32) |
        p.objid::bigint AS k FROM pg_locks p WHERE p.locktype =
        'advisory' AND p.granted AND p.objsubid = 1 AND p.database =
        db) p WHERE p.k IN (p_k0, ks) GROUP BY p.pid) x WHERE x.k0
        AND NOT x.s AND x.pid <> pg_backend_pid()) THEN
        PERFORM pg_advisory_unlock_shared(p_k0);
        PERFORM pg_advisory_unlock_shared(ks);
        PERFORM pg_advisory_unlock(hashtextextended(p_name, s + 1));
        RETURN;
    END IF;
    -- Ours now: rows of other sessions for this slot, or of an
    -- exclusive lock, are a dead session's.
    DELETE FROM dlock_held h WHERE h.name = p_name AND h.sess <>
        p_sess AND ((h.lim > 1 AND h.slot = s) OR (h.lim = 1 AND NOT
        h.shared));
    o_fence := dlock_fence_raise_v1(nextval('dlock_fence_seq'));
    INSERT INTO dlock_held (name, owner, shared, fence, backend_pid,
        sess, host, pid, expires_at, acquired_at, lim, slot) VALUES
        (p_name, p_owner, false, o_fence, pg_backend_pid(), p_sess,
        p_host, p_pid, clock_timestamp() + p_ttl *
        interval '1 millisecond', clock_timestamp(), p_lim, s);
    o_got := true; o_slot := s;
END $$;

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
