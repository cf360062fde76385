-- Session mode's one-CALL acquire (create_proc_acq.sql): key %s, name %s,
-- token '%s', ttl %lld ms, host %s, pid %lld.
CALL {{proc_acq}}(%s, %s, '%s', %lld, %s, %lld)
