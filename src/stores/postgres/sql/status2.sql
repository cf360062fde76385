-- A name's highest fence known, how many sessions hold its key, and
-- whether all of them hold it shared (Q_STATUS2).  $1 name.
SELECT greatest((SELECT max(fence) FROM dlock_held WHERE name = $1),
(SELECT fence FROM dlock_fences WHERE name = $1)), (SELECT count(*)
FROM pg_locks p WHERE
-- @include part-keymatch.sql
= {{key}}), coalesce((SELECT bool_and(p.mode = 'ShareLock') FROM
pg_locks p WHERE
-- @include part-keymatch.sql
= {{key}}), false)
