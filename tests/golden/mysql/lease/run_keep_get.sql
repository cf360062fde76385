SELECT keep_runs FROM `shared_locks_rkeep` WHERE name = ?
