-- insert.sql - our row, once try_acquire found room: ?1 name, ?2 owner
-- token, ?3 shared, ?4 fence, ?5 lease end (host CLOCK_BOOTTIME ms),
-- ?6 boot id, ?7 Unix ms now, ?8 host, ?9 pid, ?10 pid start, ?11 pid
-- namespace, ?12 limit.
INSERT INTO dlock_locks (name, owner, shared, fence, expires_at, boot_id, acquired_at, host, pid, pid_start, pid_ns, "limit") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
