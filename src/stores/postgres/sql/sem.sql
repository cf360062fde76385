-- A semaphore's admission, session mode (Q_SEM; dlock_sem_acquire_v2 in
-- ddl.sql).  $1 name, $2 owner, $3 limit, $4 ttl ms, $5 host, $6 pid,
-- $7 the session's id, $8 the slot this session already holds (after a
-- wait) or -1.
SELECT * FROM dlock_sem_acquire_v2($1::text, $2, $3::integer,
$4::bigint, $5, $6::bigint, $7::bigint, {{key}}, $8::integer)
