-- Extend our lease ({{table}}: dlock_held in session mode, dlock_locks in
-- lease mode), if it is still live.  $1 name, $2 owner, $3 ttl ms.
UPDATE {{table}} SET expires_at = clock_timestamp() + $3::bigint *
interval '1 millisecond' WHERE name = $1 AND owner = $2 AND
expires_at > clock_timestamp()
