SELECT r.full_name, r.fence, r.host, r.pid, r.start_ms, r.end_ms, r.result, r.status FROM "app_locks_runsum" AS s JOIN "app_locks_runs" AS r ON r.name = s.name AND r.fence = s.last_fence
