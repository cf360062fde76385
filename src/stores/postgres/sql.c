/*
 * sql.c - the PostgreSQL store's SQL text, and nothing else.
 *
 * Keyed statements come in two sets, one per key function (see pg.h); the
 * server computes the key, so dlock and other clients of the same key
 * (psql, mpyw/laravel-database-advisory-lock) agree on it.
 */
#include "pg.h"

/* clang-format off */

/* Session fences (one sequence, all names): the least one (a crash
 * resets the UNLOGGED sequence to 1; below this means re-seed), and the
 * block by which the durable ceiling (dlock_fences' row '') is raised
 * when a fence comes within half a block of it.  A new store's fences
 * start at 10^15 and stay below 2^53 (JSON's exact integers) for 250
 * years at a million fences per second; a crash costs a block at most. */
#define FENCE_MIN "1000000000000000"
#define FENCE_BLOCK "1048576"
#define FENCE_HALF "524288"
/* The ceiling as this session last read or wrote it, committed.  A
 * committed ceiling is durable (raised with synchronous_commit on, and
 * PostgreSQL shows a commit only once its record is flushed) and only
 * ever goes up, so a fence half a block below the session's copy is
 * below the durable ceiling: the fast path reads no table.  A session
 * does not outlive a crash; a transaction that aborts undoes the copy.
 * The setting is named after the backend's pid, which no one knows
 * before the session starts: a value preset by the session's options
 * (URL options=-c, PGOPTIONS, ALTER ROLE/DATABASE ... SET) is never
 * taken for the copy.  Believing one would hand out fences above the
 * durable ceiling, which repeat after a crash, for every client. */
#define FENCE_GUC "'dlock.fence_ceiling_' || pg_backend_pid()"

#define LEFT_MS(E)                                                           \
    "ceil(extract(epoch FROM " E " - clock_timestamp()) * 1000)::bigint"

/* Semaphores (limit N > 1): holder rows say their limit and slot (added
 * columns: dlock 0.2.0's tables get them on the next init).  Keys, all
 * hashtextextended(name, seed) whatever ?keys= says: seed i + 1 is slot
 * i, held exclusively by that slot's holder; seed -1 ("the semaphore
 * key") is held shared by every semaphore holder; seed -2 serialises
 * admissions as a transaction lock.  Every holder also holds the name's
 * own key K (the limit-1 key) shared, so a limit-1 lock and a semaphore
 * exclude each other on the server. */
#define SEM_KEYMATCH(K)                                                      \
    "p.locktype = 'advisory' AND p.granted AND p.objsubid = 1 AND "          \
    "p.database = db AND ((p.classid::bigint << 32) | p.objid::bigint) = " K
#define SEM_DDL                                                              \
    "ALTER TABLE dlock_held ADD COLUMN IF NOT EXISTS lim integer NOT NULL "  \
    "DEFAULT 1, ADD COLUMN IF NOT EXISTS slot integer NOT NULL DEFAULT 0;\n" \
    "ALTER TABLE dlock_locks ADD COLUMN IF NOT EXISTS lim integer NOT NULL " \
    "DEFAULT 1;\n"                                                           \
    "-- One admission to a semaphore of session mode: under the name's\n"    \
    "-- admission lock (so it reads every earlier admission's row), check\n" \
    "-- the limit in force, take a free slot (or p_have, already taken),\n"  \
    "-- the semaphore key and the name's key k0 shared, and write the row.\n"\
    "CREATE OR REPLACE FUNCTION dlock_sem_acquire_v2(p_name text,\n"         \
    "    p_owner text, p_lim integer, p_ttl bigint, p_host text,\n"          \
    "    p_pid bigint, p_sess bigint, p_k0 bigint, p_have integer,\n"        \
    "    OUT o_got boolean, OUT o_fence bigint, OUT o_lim integer,\n"        \
    "    OUT o_slot integer, OUT o_left bigint, OUT o_wait integer,\n"       \
    "    OUT o_host text, OUT o_pid bigint, OUT o_killed integer)\n"         \
    "LANGUAGE plpgsql AS $$\n"                                               \
    "DECLARE\n"                                                              \
    "    db oid;\n"                                                          \
    "    ks bigint := hashtextextended(p_name, -1);\n"                       \
    "    s integer;\n"                                                       \
    "    have_slot boolean := false;\n"                                      \
    "BEGIN\n"                                                                \
    "    o_got := false; o_slot := -1; o_wait := -1; o_killed := 0;\n"       \
    "    PERFORM pg_advisory_xact_lock(hashtextextended(p_name, -2));\n"     \
    "    SELECT d.oid INTO db FROM pg_database d\n"                          \
    "        WHERE d.datname = current_database();\n"                        \
    "    -- A live holder of another limit (its key still held).\n"          \
    "    SELECT h.lim INTO o_lim FROM dlock_held h WHERE h.name = p_name\n"  \
    "        AND h.lim <> p_lim AND h.expires_at > clock_timestamp()\n"      \
    "        AND EXISTS (SELECT 1 FROM pg_locks p WHERE p.pid =\n"           \
    "        h.backend_pid AND " SEM_KEYMATCH("CASE WHEN h.lim > 1 THEN "    \
    "hashtextextended(p_name, h.slot + 1) ELSE p_k0 END") ") LIMIT 1;\n"     \
    "    IF o_lim IS NOT NULL THEN\n"                                        \
    "        IF p_have >= 0 THEN\n"                                          \
    "            PERFORM pg_advisory_unlock(hashtextextended(p_name,\n"      \
    "                                                        p_have + 1));\n"\
    "        END IF;\n"                                                      \
    "        RETURN;\n"                                                      \
    "    END IF;\n"                                                          \
    "    IF p_have >= 0 THEN\n"                                              \
    "        s := p_have; have_slot := true;\n"                              \
    "    ELSE\n"                                                             \
    "        -- Slots without a row first; never one this session holds\n"   \
    "        -- (session advisory locks stack).\n"                           \
    "        FOR s IN SELECT g FROM generate_series(0, p_lim - 1) g\n"       \
    "            LEFT JOIN (SELECT h.slot, bool_or(h.sess = p_sess) AS\n"    \
    "            mine FROM dlock_held h WHERE h.name = p_name AND h.lim > 1\n"\
    "            GROUP BY h.slot) o ON o.slot = g WHERE o.mine IS NOT TRUE\n"\
    "            ORDER BY o.slot IS NOT NULL, g LOOP\n"                      \
    "            IF pg_try_advisory_lock(hashtextextended(p_name, s + 1))\n" \
    "            THEN\n"                                                     \
    "                have_slot := true;\n"                                   \
    "                EXIT;\n"                                                \
    "            END IF;\n"                                                  \
    "        END LOOP;\n"                                                    \
    "    END IF;\n"                                                          \
    "    IF NOT have_slot THEN\n"                                            \
    "        -- Full.  Fence off holders past their lease whose session\n"   \
    "        -- still holds their slot (hung), then say who holds it and\n"  \
    "        -- which slot to wait on (a random one of other sessions).\n"   \
    "        BEGIN\n"                                                        \
    "            SELECT count(*) FILTER (WHERE pg_terminate_backend(\n"      \
    "                h.backend_pid)) INTO o_killed FROM dlock_held h\n"      \
    "                WHERE h.name = p_name AND h.lim > 1 AND h.expires_at\n" \
    "                <= clock_timestamp() AND h.backend_pid <>\n"            \
    "                pg_backend_pid() AND EXISTS (SELECT 1 FROM pg_locks p\n"\
    "                WHERE p.pid = h.backend_pid AND " SEM_KEYMATCH(         \
    "hashtextextended(p_name, h.slot + 1)") ");\n"                           \
    "        EXCEPTION WHEN insufficient_privilege THEN\n"                   \
    "            o_killed := -1;\n"                                          \
    "        END;\n"                                                         \
    "        SELECT min(" LEFT_MS("h.expires_at") ") INTO o_left\n"          \
    "            FROM dlock_held h WHERE h.name = p_name AND h.lim > 1\n"    \
    "            AND h.expires_at > clock_timestamp();\n"                    \
    "        SELECT h.slot, h.host, h.pid INTO o_wait, o_host, o_pid\n"      \
    "            FROM dlock_held h WHERE h.name = p_name AND h.lim > 1\n"    \
    "            AND h.sess <> p_sess AND h.slot < p_lim\n"                  \
    "            ORDER BY random() LIMIT 1;\n"                               \
    "        IF o_wait IS NULL THEN\n"                                       \
    "            o_wait := floor(random() * p_lim)::integer;\n"              \
    "        END IF;\n"                                                      \
    "        RETURN;\n"                                                      \
    "    END IF;\n"                                                          \
    "    PERFORM pg_advisory_lock_shared(ks);\n"                             \
    "    -- k0 held exclusively (a limit-1 lock), or shared by a session\n"  \
    "    -- without the semaphore key (a shared lock, another client):\n"    \
    "    -- not admitted.  The rows check above named the limit if the\n"    \
    "    -- holder is dlock's and committed.\n"                              \
    "    IF NOT pg_try_advisory_lock_shared(p_k0) THEN\n"                    \
    "        PERFORM pg_advisory_unlock_shared(ks);\n"                       \
    "        PERFORM pg_advisory_unlock(hashtextextended(p_name, s + 1));\n" \
    "        RETURN;\n"                                                      \
    "    END IF;\n"                                                          \
    "    IF EXISTS (SELECT 1\n"                                              \
    "        FROM (SELECT p.pid, bool_or(k = p_k0) AS k0, bool_or(k = ks)\n" \
    "        AS s FROM (SELECT p.pid, (p.classid::bigint << 32) |\n"         \
    "        p.objid::bigint AS k FROM pg_locks p WHERE p.locktype =\n"      \
    "        'advisory' AND p.granted AND p.objsubid = 1 AND p.database =\n" \
    "        db) p WHERE p.k IN (p_k0, ks) GROUP BY p.pid) x WHERE x.k0\n"   \
    "        AND NOT x.s AND x.pid <> pg_backend_pid()) THEN\n"              \
    "        PERFORM pg_advisory_unlock_shared(p_k0);\n"                     \
    "        PERFORM pg_advisory_unlock_shared(ks);\n"                       \
    "        PERFORM pg_advisory_unlock(hashtextextended(p_name, s + 1));\n" \
    "        RETURN;\n"                                                      \
    "    END IF;\n"                                                          \
    "    -- Ours now: rows of other sessions for this slot, or of an\n"      \
    "    -- exclusive lock, are a dead session's.\n"                         \
    "    DELETE FROM dlock_held h WHERE h.name = p_name AND h.sess <>\n"     \
    "        p_sess AND ((h.lim > 1 AND h.slot = s) OR (h.lim = 1 AND NOT\n" \
    "        h.shared));\n"                                                  \
    "    o_fence := dlock_fence_raise_v1(nextval('dlock_fence_seq'));\n"     \
    "    INSERT INTO dlock_held (name, owner, shared, fence, backend_pid,\n" \
    "        sess, host, pid, expires_at, acquired_at, lim, slot) VALUES\n"  \
    "        (p_name, p_owner, false, o_fence, pg_backend_pid(), p_sess,\n"  \
    "        p_host, p_pid, clock_timestamp() + p_ttl *\n"                   \
    "        interval '1 millisecond', clock_timestamp(), p_lim, s);\n"      \
    "    o_got := true; o_slot := s;\n"                                      \
    "END $$;\n"

/* Run records (runs.c), the same in both modes, durable: a record is
 * what an operator reads after a crash.  Names in the "C" collation, so
 * that a prefix (LIKE 'p%') is a range of the primary key. */
#define RUNS_DDL                                                             \
    "-- Run records (dlock run --once, --once-per; dlock history): the\n"   \
    "-- last runs of each name (20 kept), and per name the start of its\n"  \
    "-- last run and its last success.  Times: ms since the epoch on the\n" \
    "-- server's clock.\n"                                                  \
    "CREATE TABLE IF NOT EXISTS dlock_runs (\n"                             \
    "    name     text COLLATE \"C\" NOT NULL,\n"                          \
    "    fence    bigint   NOT NULL, -- the fence of the run's lock\n"      \
    "    host     text     NOT NULL,\n"                                     \
    "    pid      bigint   NOT NULL,\n"                                     \
    "    start_ms bigint   NOT NULL,\n"                                     \
    "    end_ms   bigint,            -- NULL: running or abandoned\n"       \
    "    result   smallint NOT NULL, -- 0 running, 1 exited, 2 signaled,\n" \
    "                                -- 3 lost, 4 abandoned\n"              \
    "    status   integer  NOT NULL, -- exit status, signal, or -1\n"       \
    "    PRIMARY KEY (name, fence)\n"                                       \
    ");\n"                                                                  \
    "CREATE TABLE IF NOT EXISTS dlock_run_names (\n"                        \
    "    name            text COLLATE \"C\" PRIMARY KEY,\n"                \
    "    last_start_ms   bigint, -- start of its last run\n"               \
    "    succeeded_fence bigint, -- its last run that exited 0 (NULL: none)\n"\
    "    succeeded_ms    bigint\n"                                          \
    ");\n"

/* Lease mode's rows and the per-name fences of lease mode (and of dlock
 * 0.1's session mode) are durable.  Session mode's rows and its fence
 * sequence are UNLOGGED: a holder row dies with its session anyway, so
 * neither is worth a durable commit (see the fence functions for what a
 * crash does). */
#define DDL                                                                  \
    "CREATE TABLE IF NOT EXISTS dlock_locks (\n"                             \
    "    name        text        NOT NULL,\n"                                \
    "    owner       text        NOT NULL, -- random 128-bit token, hex\n"   \
    "    shared      boolean     NOT NULL,\n"                                \
    "    fence       bigint      NOT NULL,\n"                                \
    "    backend_pid integer     NOT NULL, -- 0: lease mode\n"               \
    "    host        text        NOT NULL,\n"                                \
    "    pid         bigint      NOT NULL,\n"                                \
    "    expires_at  timestamptz NOT NULL, -- server clock\n"                \
    "    acquired_at timestamptz NOT NULL,\n"                                \
    "    PRIMARY KEY (name, owner)\n"                                        \
    ");\n"                                                                   \
    "CREATE TABLE IF NOT EXISTS dlock_fences (\n"                            \
    "    name  text   PRIMARY KEY, -- '': ceiling of the session fences\n"   \
    "    fence bigint NOT NULL     -- highest fence handed out ('':\n"       \
    "                              -- above every one handed out)\n"         \
    ");\n"                                                                   \
    "-- Session mode: one row per held lock, written by the statement\n"     \
    "-- that takes the advisory lock; gone with a crash, like the locks.\n"  \
    "CREATE UNLOGGED TABLE IF NOT EXISTS dlock_held (\n"                     \
    "    name        text        NOT NULL,\n"                                \
    "    owner       text        NOT NULL, -- random 128-bit token, hex\n"   \
    "    shared      boolean     NOT NULL,\n"                                \
    "    fence       bigint      NOT NULL,\n"                                \
    "    backend_pid integer     NOT NULL, -- holding session\n"             \
    "    sess        bigint      NOT NULL, -- its random id\n"               \
    "    host        text        NOT NULL,\n"                                \
    "    pid         bigint      NOT NULL,\n"                                \
    "    expires_at  timestamptz NOT NULL, -- server clock\n"                \
    "    acquired_at timestamptz NOT NULL,\n"                                \
    "    PRIMARY KEY (name, owner)\n"                                        \
    ");\n"                                                                   \
    "-- Session mode's fences (all names): UNLOGGED from PostgreSQL 15.\n"   \
    "DO $$ BEGIN\n"                                                          \
    "    IF current_setting('server_version_num')::int >= 150000 THEN\n"     \
    "        EXECUTE 'CREATE UNLOGGED SEQUENCE IF NOT EXISTS "               \
    "dlock_fence_seq';\n"                                                    \
    "    ELSE\n"                                                             \
    "        EXECUTE 'CREATE SEQUENCE IF NOT EXISTS dlock_fence_seq';\n"     \
    "    END IF;\n"                                                          \
    "END $$;\n"                                                              \
    "-- Every session fence handed out is below the ceiling, the row ''\n"   \
    "-- of dlock_fences (durable): a drawing statement that finds its\n"     \
    "-- fence within half a block of it raises it a block above the\n"       \
    "-- fence in its own transaction, committed durably before the\n"        \
    "-- fence is returned.  A crash resets the UNLOGGED sequence to 1:\n"    \
    "-- a value below 10^15 re-seeds it (once, under a transaction\n"        \
    "-- advisory lock) above every fence in dlock_fences, the ceiling\n"     \
    "-- included.  No clock.  p_v: the value nextval() drew.\n"              \
    "CREATE OR REPLACE FUNCTION dlock_fence_raise_v1(p_v bigint)\n"          \
    "RETURNS bigint LANGUAGE plpgsql AS $$\n"                                \
    "DECLARE f bigint := p_v; r bigint;\n"                                   \
    "BEGIN\n"                                                                \
    "    IF f < " FENCE_MIN " THEN\n"                                        \
    "        PERFORM pg_advisory_xact_lock(hashtextextended("                \
    "'dlock: fence seed', 0));\n"                                            \
    "        f := nextval('dlock_fence_seq');\n"                             \
    "        IF f < " FENCE_MIN " THEN\n"                                    \
    "            SELECT greatest(max(x.fence) + 1, " FENCE_MIN ") INTO f\n"  \
    "                FROM dlock_fences x;\n"                                 \
    "            PERFORM setval('dlock_fence_seq', f);\n"                    \
    "        END IF;\n"                                                      \
    "    END IF;\n"                                                          \
    "    SELECT x.fence INTO r FROM dlock_fences x WHERE x.name = '';\n"     \
    "    IF r IS NULL OR f >= r - " FENCE_HALF " THEN\n"                     \
    "        PERFORM set_config('synchronous_commit', 'on', true);\n"        \
    "        INSERT INTO dlock_fences AS x (name, fence) VALUES ('',\n"      \
    "            f + " FENCE_BLOCK ") ON CONFLICT (name) DO UPDATE SET\n"    \
    "            fence = greatest(x.fence, excluded.fence)\n"                \
    "            RETURNING x.fence INTO r;\n"                                \
    "    END IF;\n"                                                          \
    "    -- The session's copy (undone if this transaction aborts).\n"       \
    "    PERFORM set_config(" FENCE_GUC ", r::text, false);\n"               \
    "    RETURN f;\n"                                                        \
    "END $$;\n"                                                              \
    SEM_DDL RUNS_DDL

#define KEY_X "hashtextextended($1::text, 0)"
#define KEY_H "hashtext($1::text)::bigint"

/* pg_locks shows a bigint advisory key as classid (high half), objid (low
 * half) and objsubid 1, in the current database. */
#define KEYMATCH(K)                                                          \
    "p.locktype = 'advisory' AND p.granted AND p.objsubid = 1 AND "          \
    "p.database = (SELECT oid FROM pg_database WHERE datname = "             \
    "current_database()) AND ((p.classid::bigint << 32) | "                  \
    "p.objid::bigint) = " K
#define HOLDS(PID, K)                                                        \
    "EXISTS (SELECT 1 FROM pg_locks p WHERE p.pid = " PID " AND "            \
    KEYMATCH(K) ")"

/* $1 name, $2 owner, $3 shared, $4 ttl ms, $5 host, $6 pid, $7 wait ms
 * (0: try), $8 the session's id.  The advisory lock, then (if granted) the
 * row and the fence, in one statement and one snapshot.  Rows of the
 * name whose sessions cannot hold the key any more are tidied away
 * (exclusive: every other session's; SKIP LOCKED: a row being released
 * is going anyway); pg_locks is read only if a shared acquire finds
 * other sessions' shared rows.
 *
 * A try runs on a session shared by many locks of this process, and a
 * session's advisory locks stack: it first makes sure this session has
 * no row of the name in a conflicting mode (its rows live exactly as
 * long as its keys: a release deletes the row and unlocks in one
 * statement).  A wait runs on a session of its own. */
#define ACQ_TRY(FN, K)                                                       \
    "WITH l AS (SELECT CASE WHEN EXISTS (SELECT 1 FROM dlock_held t "        \
    "WHERE t.name = $1 AND t.sess = $8::bigint AND (NOT $3::boolean OR "     \
    "NOT t.shared)) THEN false ELSE " FN "(" K ") END AS got "               \
    "WHERE $7::bigint = 0)"
#define ACQ_WAIT(FN, K)                                                      \
    "WITH l AS (SELECT true AS got, " FN "(" K ") FROM (SELECT "             \
    "set_config('lock_timeout', $7::text, true) AS c OFFSET 0) s)"
/* If G got the key: the fence (f) and our row, shared SH, (i).  The
 * fence is the sequence's value as it is when it is at least 10^15 and
 * half a block below the session's copy of the durable ceiling (no table
 * read, no write); otherwise dlock_fence_raise_v1 reads the ceiling,
 * re-seeds the sequence after a crash and raises the ceiling, durably,
 * in this statement's transaction, before the fence is returned. */
#define FENCE_ROW(G, SH)                                                     \
    ", f AS (SELECT CASE WHEN s.v >= " FENCE_MIN " AND s.v < nullif("        \
    "current_setting(" FENCE_GUC ", true), '')::bigint - " FENCE_HALF        \
    " THEN s.v ELSE dlock_fence_raise_v1(s.v) END AS fence FROM (SELECT "    \
    "nextval('dlock_fence_seq') AS v FROM " G " WHERE " G ".got OFFSET 0) "  \
    "s)"                                                                     \
    ", i AS (INSERT INTO dlock_held (name, owner, shared, fence, "           \
    "backend_pid, sess, host, pid, expires_at, acquired_at) SELECT $1, $2, " \
    SH ", f.fence, pg_backend_pid(), $8::bigint, $5, $6::bigint, "           \
    "clock_timestamp() + $4::bigint * interval '1 millisecond', "            \
    "clock_timestamp() FROM f RETURNING fence)"
#define ACQ_REST(K, G, X)                                                    \
    ", d AS (DELETE FROM dlock_held WHERE ctid IN (SELECT t.ctid FROM "      \
    "dlock_held t WHERE (SELECT got FROM " G ") AND t.name = $1 AND t.sess <> "  \
    "$8::bigint AND (NOT $3::boolean OR NOT t.shared OR t.expires_at <= "    \
    "clock_timestamp() OR NOT " HOLDS("t.backend_pid", K) ") FOR UPDATE "   \
    "OF t SKIP LOCKED))"                                                     \
    FENCE_ROW(G, "$3::boolean")                                              \
    " SELECT " G ".got, (SELECT fence FROM i)" X " FROM " G

/* The uncontended exclusive try, without the tidying of other sessions'
 * rows of the name (ACQ_REST's d): one index probe less, and no row
 * locks.  Stale rows (of sessions that died holding the name) are
 * harmless to it: the primary key is (name, owner), every reader of rows
 * also asks pg_locks whether the row's backend holds the key, and
 * TERMINATE never picks a backend that has a live row of the name (a
 * dead holder's pid reused by the live one).  They are tidied by the
 * full statement (Q_TRY_X), which a session sends instead at least every
 * TIDY_MS (session.c), by shared tries, waits and semaphores.
 * Q_TRY_X1 runs on a session of the lock's own, fresh from the pool,
 * which holds no key and has no row (its id is new): no check of its
 * own rows either.  Q_TRY_XM, on the mux session, keeps that check. */
#define ACQ_FAST(G)                                                          \
    FENCE_ROW(G, "false") " SELECT " G ".got, (SELECT fence FROM i) FROM " G
#define ACQ_TRY1(K)                                                          \
    "WITH l AS (SELECT pg_try_advisory_lock(" K ") AS got WHERE "            \
    "$7::bigint = 0 AND NOT $3::boolean)"

/* Shared locks only: a semaphore's holders hold the name's key shared
 * too, and the semaphore key (KEY_SEM) as well.  Having taken the key, a
 * shared acquire looks for KEY_SEM in pg_locks and, if someone holds it,
 * lets the key go again and reports it not got (its holders then say
 * the limit in force).  The semaphore's admission takes KEY_SEM before
 * it looks for holders of the name's key without it, so of two that
 * race at least one sees the other. */
#define KEY_SEM "hashtextextended($1::text, -1)"
#define SEM_GATE(K)                                                          \
    ", m AS (SELECT CASE WHEN l.got THEN NOT EXISTS (SELECT 1 FROM "         \
    "pg_locks p WHERE " KEYMATCH(KEY_SEM) ") ELSE false END AS got FROM l "  \
    "OFFSET 0), u AS (SELECT pg_advisory_unlock_shared(" K ") FROM l, m "    \
    "WHERE l.got AND NOT m.got)"
#define ACQ_REST_S(K)                                                        \
    SEM_GATE(K) ACQ_REST(K, "m", ", (SELECT count(*) FROM u)")

/* $1 name, $2 shared: the dlock holders in our way, by their rows. */
#define HOLDERS(K)                                                           \
    "SELECT count(*), max(" LEFT_MS("t.expires_at") ") FILTER (WHERE "       \
    "t.expires_at > clock_timestamp()), count(*) FILTER (WHERE "             \
    "t.expires_at <= clock_timestamp()), max(t.host), max(t.pid), "          \
    "max(t.backend_pid), max(t.lim) FROM dlock_held t WHERE t.name = $1 "    \
    "AND (NOT "                                                              \
    "$2::boolean OR NOT t.shared) AND " HOLDS("t.backend_pid", K)
/* $1 name, $2 shared: fence off holders past their lease. */
#define TERMINATE(K)                                                         \
    "SELECT pg_terminate_backend(t.backend_pid) FROM dlock_held t WHERE "    \
    "t.name = $1 AND (NOT $2::boolean OR NOT t.shared) AND t.expires_at "    \
    "<= clock_timestamp() AND t.backend_pid <> pg_backend_pid() AND NOT "    \
    "EXISTS (SELECT 1 FROM dlock_held o WHERE o.name = $1 AND "              \
    "o.backend_pid = t.backend_pid AND o.expires_at > clock_timestamp()) "   \
    "AND " HOLDS("t.backend_pid", K)
/* A holder row broken by release --force (FORCE_HELD below) is renamed
 * to BROKEN + its owner; its holder's release still deletes it (so its
 * session, which may take the name again, keeps no row it does not
 * hold), and is told it was not live. */
#define BROKEN "'broken:'"
#define MINE "owner IN ($2, " BROKEN " || $2)"
#define LIVE "owner = $2 AND expires_at > clock_timestamp()"
/* $1 name, $2 owner */
#define RELEASE_S(FN, K)                                                     \
    "WITH d AS (DELETE FROM dlock_held WHERE name = $1 AND " MINE " "        \
    "RETURNING " LIVE " AS live) SELECT (SELECT bool_or(live) FROM d), "     \
    FN "(" K ")"
/* An exclusive lock's release, by the row's whole primary key (one
 * index probe): a row broken by release --force is not found, and
 * then the client deletes it with dlock__pg_sql_drop_broken. */
#define RELEASE_X1(K)                                                        \
    "WITH d AS (DELETE FROM dlock_held WHERE name = $1 AND owner = $2 "      \
    "RETURNING expires_at > clock_timestamp() AS live) SELECT (SELECT "      \
    "bool_or(live) FROM d), pg_advisory_unlock(" K ")"
/* $1 name: live holders (lease mode: any live row, see below). */
#define STATUS(K)                                                            \
    "SELECT t.shared, t.host, t.pid, greatest(1, " LEFT_MS("t.expires_at")   \
    "), floor(extract(epoch FROM t.acquired_at) * 1000)::bigint, t.lim "     \
    "FROM dlock_held t WHERE t.name = $1 AND t.expires_at > "                \
    "clock_timestamp() "                                                     \
    "AND " HOLDS("t.backend_pid", K)
/* $1 name: the highest fence known for it, and sessions holding the key. */
#define STATUS2(K)                                                           \
    "SELECT greatest((SELECT max(fence) FROM dlock_held WHERE name = $1), "  \
    "(SELECT fence FROM dlock_fences WHERE name = $1)), (SELECT count(*) "   \
    "FROM pg_locks p WHERE " KEYMATCH(K) "), coalesce((SELECT bool_and("     \
    "p.mode = 'ShareLock') FROM pg_locks p WHERE " KEYMATCH(K) "), false)"
/* $1 name, $2 int[] of backend pids */
#define FORCE_KILL(K)                                                        \
    "SELECT pg_terminate_backend(p.pid) FROM pg_locks p WHERE p.pid = "      \
    "ANY($2::int[]) AND p.pid <> pg_backend_pid() AND " KEYMATCH(K)

/* Semaphores (session mode).  $1 name, $2 owner, $3 limit, $4 ttl ms,
 * $5 host, $6 pid, $7 the session's id, $8 the slot this session already
 * holds (after a wait) or -1. */
#define SEM(K)                                                               \
    "SELECT * FROM dlock_sem_acquire_v2($1::text, $2, $3::integer, "         \
    "$4::bigint, $5, $6::bigint, $7::bigint, " K ", $8::integer)"
/* $1 name, $2 owner, $3 slot: row, slot key, semaphore key, name's key. */
#define RELEASE_M(K)                                                         \
    "WITH d AS (DELETE FROM dlock_held WHERE name = $1 AND " MINE " "        \
    "RETURNING " LIVE " AS live) SELECT (SELECT bool_or(live) FROM d), "     \
    "pg_advisory_unlock(hashtextextended($1::text, $3::integer + "  \
    "1)) AND pg_advisory_unlock_shared(" KEY_SEM ") AND "                    \
    "pg_advisory_unlock_shared(" K ")"

#define KEYED_SQL(K)                                                         \
    {                                                                        \
        [Q_TRY_X] = ACQ_TRY("pg_try_advisory_lock", K) ACQ_REST(K, "l", ""), \
        [Q_TRY_S] = ACQ_TRY("pg_try_advisory_lock_shared", K) ACQ_REST_S(K), \
        [Q_WAIT_X] = ACQ_WAIT("pg_advisory_lock", K) ACQ_REST(K, "l", ""),   \
        [Q_WAIT_S] = ACQ_WAIT("pg_advisory_lock_shared", K) ACQ_REST_S(K),   \
        [Q_HOLDERS] = HOLDERS(K),                                            \
        [Q_TERMINATE] = TERMINATE(K),                                        \
        [Q_RELEASE_X] = RELEASE_S("pg_advisory_unlock", K),                  \
        [Q_RELEASE_S] = RELEASE_S("pg_advisory_unlock_shared", K),           \
        [Q_STATUS] = STATUS(K),                                              \
        [Q_STATUS2] = STATUS2(K),                                            \
        [Q_FORCE_KILL] = FORCE_KILL(K),                                      \
        [Q_SEM] = SEM(K),                                                    \
        [Q_RELEASE_M] = RELEASE_M(K),                                        \
        [Q_TRY_X1] = ACQ_TRY1(K) ACQ_FAST("l"),                              \
        [Q_TRY_XM] = ACQ_TRY("pg_try_advisory_lock", K) ACQ_FAST("l"),       \
        [Q_RELEASE_X1] = RELEASE_X1(K),                                      \
    }

const char *const dlock__pg_sql_x[Q_KEYED] = KEYED_SQL(KEY_X);
const char *const dlock__pg_sql_h[Q_KEYED] = KEYED_SQL(KEY_H);

/* Key-independent statements, per mode ([0] session, [1] lease).
 * $1 name, $2 owner, $3 ttl ms. */
#define EXTEND(T)                                                            \
    "UPDATE " T " SET expires_at = clock_timestamp() + $3::bigint * "        \
    "interval '1 millisecond' WHERE name = $1 AND owner = $2 AND "           \
    "expires_at > clock_timestamp()"
#define TTL(T)                                                               \
    "SELECT greatest(1, " LEFT_MS("expires_at") ") FROM " T " WHERE "        \
    "name = $1 AND owner = $2 AND expires_at > clock_timestamp()"
#define NAMES(T)                                                             \
    "SELECT DISTINCT name FROM " T " WHERE starts_with(name, $1) AND "       \
    "expires_at > clock_timestamp() ORDER BY name"
/* $1 name: each holder's backend to terminate now (0: none), and
 * whether its lease was live.  Lease mode: its rows are all there is. */
#define FORCE(T)                                                             \
    "DELETE FROM " T " WHERE name = $1 RETURNING backend_pid, "              \
    "expires_at > clock_timestamp()"
/* Session mode: the holder's key is on its session, which often holds
 * the process's other locks too (the mux): terminating it would make
 * them all LOST.  So a live holder whose session holds rows of other
 * names is not terminated: its row is renamed (BROKEN), which its next
 * renewal sees (no row of its owner: LOST), and lets go of the key on
 * its own session.  Renewals come every third of the lease, so the next
 * is due within a third of what is left of it (R): the row's lease is
 * cut to R / 2 (1 s at least), past which a waiter fences off a holder
 * that still has the key, as any hung holder (TERMINATE).  A session
 * that holds nothing else, or a holder already past its lease, is
 * terminated now, as before. */
#define FORCE_HELD                                                           \
    "WITH u AS (UPDATE dlock_held t SET owner = CASE WHEN starts_with("      \
    "t.owner, " BROKEN ") THEN t.owner ELSE " BROKEN " || t.owner END, "     \
    "expires_at = least(t.expires_at, clock_timestamp() + greatest("        \
    "interval '1 second', (t.expires_at - clock_timestamp()) / 2)) WHERE "   \
    "t.name = $1 RETURNING t.backend_pid, t.sess, t.expires_at > "           \
    "clock_timestamp() AS live) SELECT CASE WHEN NOT u.live OR NOT EXISTS "  \
    "(SELECT 1 FROM dlock_held o WHERE o.sess = u.sess AND o.name <> $1) "   \
    "THEN u.backend_pid ELSE 0 END, u.live FROM u"
const char *const dlock__pg_sql_extend[2] = {EXTEND("dlock_held"),
                                             EXTEND("dlock_locks")};
const char *const dlock__pg_sql_ttl[2] = {TTL("dlock_held"),
                                          TTL("dlock_locks")};
const char *const dlock__pg_sql_names[2] = {NAMES("dlock_held"),
                                            NAMES("dlock_locks")};
const char *const dlock__pg_sql_force[2] = {FORCE_HELD,
                                            FORCE("dlock_locks")};
const char dlock__pg_sql_release_l[] =
    "DELETE FROM dlock_locks WHERE name = $1 AND owner = $2 RETURNING "
    "expires_at > clock_timestamp()";
const char dlock__pg_sql_unlock_all[] = "SELECT pg_advisory_unlock_all()";
/* After RELEASE_X1 found no row: our row, if release --force broke it. */
const char dlock__pg_sql_drop_broken[] =
    "DELETE FROM dlock_held WHERE name = $1 AND owner = " BROKEN " || $2";
/* A semaphore's wait: block on one slot's key, $1 name, $2 slot, $3
 * lock_timeout ms. */
const char dlock__pg_sql_sem_wait[] =
    "SELECT pg_advisory_lock(hashtextextended($1::text, $2::integer + 1)) "
    "FROM (SELECT set_config('lock_timeout', $3::text, true) AS c OFFSET 0) "
    "s";
/* Lease mode's status: $1 name. */
const char dlock__pg_sql_status_l[] =
    "SELECT t.shared, t.host, t.pid, greatest(1, " LEFT_MS("t.expires_at")
    "), floor(extract(epoch FROM t.acquired_at) * 1000)::bigint, t.lim "
    "FROM dlock_locks t WHERE t.name = $1 AND t.expires_at > clock_timestamp()";
const char dlock__pg_sql_status2_l[] =
    "SELECT (SELECT fence FROM dlock_fences WHERE name = $1), 0, false";
/* Lease mode, one round trip: two statements in one implicit
 * transaction.  The first locks the name's fence row, so acquirers of a
 * name queue there; the second (a new snapshot, READ COMMITTED) sees every
 * row committed before it and decides.  Literals, not parameters: a
 * multi-statement query cannot take them, and poolers in transaction mode
 * cannot follow prepared statements.  SET LOCAL: no bitmap scans in
 * this transaction only (a plain index scan marks the dead rows of the
 * name it steps on, a bitmap scan revisits them at every acquire until
 * autovacuum: postgres.md), nothing a pooler could leak.  Arguments:
 * name, name, name,
 * shared, name, name, name, owner, shared, host, pid, ttl ms.  The third
 * column says the largest limit of the live rows (a semaphore's). */
const char dlock__pg_sql_lease_fmt[] =
    "SET LOCAL enable_bitmapscan = off; "
    "INSERT INTO dlock_fences AS x (name, fence) VALUES (%s, 0) ON "
    "CONFLICT (name) DO UPDATE SET fence = x.fence; "
    "WITH del AS (DELETE FROM dlock_locks WHERE name = %s AND expires_at "
    "<= clock_timestamp()), c AS (SELECT count(*) AS n, max("
    LEFT_MS("expires_at") ") AS left_ms FROM dlock_locks WHERE name = %s "
    "AND expires_at > clock_timestamp() AND (NOT %s OR NOT shared)), "
    "lim AS (SELECT max(lim) AS hi FROM dlock_locks WHERE name = %s AND "
    "expires_at > clock_timestamp()), "
    "f AS (UPDATE dlock_fences SET fence = fence + 1 WHERE name = %s AND "
    "(SELECT n FROM c) = 0 RETURNING fence), i AS (INSERT INTO "
    "dlock_locks (name, owner, shared, fence, backend_pid, host, pid, "
    "expires_at, acquired_at) SELECT %s, '%s', %s, f.fence, 0, %s, "
    "%s::bigint, clock_timestamp() + %s::bigint * interval '1 "
    "millisecond', clock_timestamp() FROM f RETURNING fence) "
    "SELECT (SELECT fence FROM i), (SELECT left_ms FROM c), (SELECT hi FROM "
    "lim)";
/* Lease mode's semaphores: admitted while fewer than the limit live rows
 * hold the name and all of them asked the same limit.  Arguments: name x4,
 * limit x5, name, owner, host, pid, ttl ms, limit x2. */
const char dlock__pg_sql_lease_sem_fmt[] =
    "SET LOCAL enable_bitmapscan = off; "
    "INSERT INTO dlock_fences AS x (name, fence) VALUES (%s, 0) ON "
    "CONFLICT (name) DO UPDATE SET fence = x.fence; "
    "WITH del AS (DELETE FROM dlock_locks WHERE name = %s AND expires_at "
    "<= clock_timestamp()), c AS (SELECT count(*) AS n, min("
    LEFT_MS("expires_at") ") AS left_ms, min(lim) AS lo, max(lim) AS hi "
    "FROM dlock_locks WHERE name = %s AND expires_at > clock_timestamp()), "
    "f AS (UPDATE dlock_fences SET fence = fence + 1 WHERE name = %s AND "
    "(SELECT n < %u AND coalesce(lo, %u) = %u AND coalesce(hi, %u) = %u "
    "FROM c) RETURNING fence), i AS (INSERT INTO dlock_locks (name, owner, "
    "shared, fence, backend_pid, host, pid, expires_at, acquired_at, lim) "
    "SELECT %s, '%s', false, f.fence, 0, %s, %s::bigint, clock_timestamp() "
    "+ %s::bigint * interval '1 millisecond', clock_timestamp(), %u FROM f "
    "RETURNING fence) SELECT (SELECT fence FROM i), (SELECT left_ms FROM "
    "c), (SELECT CASE WHEN lo <> %u THEN lo ELSE hi END FROM c)";
/* Every object of the DDL (an 0.1 server has only the first two). */
const char dlock__pg_sql_have_tables[] =
    "SELECT to_regclass('dlock_locks') IS NOT NULL AND "
    "to_regclass('dlock_fences') IS NOT NULL AND "
    "to_regclass('dlock_held') IS NOT NULL AND "
    "to_regclass('dlock_fence_seq') IS NOT NULL AND "
    "to_regproc('dlock_fence_raise_v1') IS NOT NULL AND "
    "to_regproc('dlock_sem_acquire_v2') IS NOT NULL, "
    /* the shared lock table's entries (PostgreSQL's NLOCKENTS): every
     * session advisory key takes one, and when they run out every client
     * of the server gets "out of shared memory" */
    "current_setting('max_locks_per_transaction')::bigint * "
    "(current_setting('max_connections')::bigint + "
    "current_setting('autovacuum_max_workers')::bigint + 1 + "
    "current_setting('max_worker_processes')::bigint + "
    "current_setting('max_wal_senders')::bigint + "
    "current_setting('max_prepared_transactions')::bigint), "
    "current_setting('max_locks_per_transaction')::bigint";
/* Serialised by a transaction-scoped advisory lock: concurrent CREATE
 * TABLE IF NOT EXISTS can otherwise fail on the catalog's unique keys. */
const char dlock__pg_sql_init[] =
    "BEGIN; SELECT pg_advisory_xact_lock(hashtextextended('dlock: create "
    "tables', 0)); " DDL "COMMIT;";

/* The run tables alone, for a server whose other objects predate them
 * (runs.c): CREATE on the schema is all it needs, where the whole DDL
 * needs to own the functions it replaces.  One implicit transaction (an
 * error rolls it back), under init's lock. */
const char dlock__pg_sql_init_runs[] =
    "SELECT pg_advisory_xact_lock(hashtextextended('dlock: create "
    "tables', 0)); " RUNS_DDL;

/* clang-format on */

const char dlock__pg_sql_ddl[] = DDL;
