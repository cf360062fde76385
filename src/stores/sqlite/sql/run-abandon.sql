-- run-abandon.sql - name ?1's run ?2 (the newest, from its summary row)
-- still marked running when the next begins ended without saying how
-- (its holder died or lost the lock): abandoned.  Only the newest can be
-- running (each begin marks the one before), so no other is looked at.
-- {{running}}, {{abandoned}}: DLOCK_RUN_RUNNING, DLOCK_RUN_ABANDONED
-- (include/dlock.h).
UPDATE dlock_runs SET result = {{abandoned}} WHERE name = ?1 AND fence = ?2 AND result = {{running}}
