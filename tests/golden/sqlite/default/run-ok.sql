UPDATE dlock_run_names SET ok_fence = ?2 WHERE name = ?1 AND ok_fence < ?2
