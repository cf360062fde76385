SELECT keep_runs FROM "app_locks_rkeep" WHERE name = ?
