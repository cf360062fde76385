-- Sent once on each new session-mode connection (conn.c says why): the
-- prepared statements' generic plans, and no bitmap scans.  Not in lease
-- mode: behind a transaction pooler a SET would leak to other clients'
-- sessions.
SET plan_cache_mode = force_generic_plan;
SET enable_bitmapscan = off
