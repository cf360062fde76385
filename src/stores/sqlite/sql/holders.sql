-- holders.sql - every row of name ?1, live or not: try_acquire and status
-- judge each (holder.c reads the columns by position: keep the order).
SELECT owner, shared, expires_at, boot_id, host, pid, pid_start, pid_ns, acquired_at, "limit" FROM dlock_locks WHERE name = ?1
