SELECT r.name, r.fence, r.host, r.pid, r.start_ms, r.end_ms, r.result, r.status FROM dlock_run_names n JOIN dlock_runs r ON r.name = n.name AND r.fence = n.last_fence
