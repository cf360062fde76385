INSERT INTO dlock_locks (name, owner, shared, fence, expires_at, boot_id, acquired_at, host, pid, pid_start, pid_ns, "limit") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
