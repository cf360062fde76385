SELECT owner, shared, expires_at, boot_id, host, pid, pid_start, pid_ns, acquired_at, "limit" FROM dlock_locks WHERE name = ?1
