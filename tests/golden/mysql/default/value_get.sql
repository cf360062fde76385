SELECT fence, value FROM `shared_locks_leader` WHERE name = ? AND full_name = ?
