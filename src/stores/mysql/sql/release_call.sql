-- Session mode's release by the procedure (create_proc_rel.sql).
CALL {{proc_rel}}(?, ?)
