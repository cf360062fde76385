SELECT fence, value FROM "app_locks_leader" WHERE name = ? AND full_name = ?
