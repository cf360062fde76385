SELECT full_name, fence, host, pid, start_ms, end_ms, result, status FROM `shared_locks_runs` WHERE name = ? AND full_name = ? ORDER BY fence DESC LIMIT ?
