SELECT last_start, last_fence, ok_fence FROM dlock_run_names WHERE name = ?1
