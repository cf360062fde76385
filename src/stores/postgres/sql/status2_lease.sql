-- Lease mode's status2.sql: the name's fence; no session holds a key.
SELECT (SELECT fence FROM dlock_fences WHERE name = $1), 0, false,
NULL::integer, NULL::text, NULL::text
