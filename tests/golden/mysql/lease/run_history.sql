SELECT full_name, fence, host, pid, start_ms, end_ms, result, status FROM `shared_locks_runs` WHERE name = %s AND full_name = %s ORDER BY fence DESC LIMIT %u
