-- Fragment: a try's lock step (l).  A try runs on a session shared by
-- many locks of this process, and a session's advisory locks stack: it
-- first makes sure this session has no row of the name in a conflicting
-- mode (its rows live exactly as long as its keys: a release deletes the
-- row and unlocks in one statement).  {{lock_fn}}: pg_try_advisory_lock
-- or pg_try_advisory_lock_shared.
WITH l AS (SELECT CASE WHEN EXISTS (SELECT 1 FROM dlock_held t
WHERE t.name = $1 AND t.sess = $8::bigint AND (NOT $3::boolean OR
NOT t.shared)) THEN false ELSE {{lock_fn}}({{key}}) END AS got
WHERE $7::bigint = 0)
