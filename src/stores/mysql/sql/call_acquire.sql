-- Session mode's one-CALL acquire (create_proc_acq.sql): key ?, name ?,
-- token ?, ttl ? ms, host ?, pid ?.
CALL {{proc_acq}}(?, ?, ?, ?, ?, ?)
