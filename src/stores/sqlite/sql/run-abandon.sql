-- run-abandon.sql - a run of name ?1 still marked running when the next
-- begins ended without saying how (its holder died or lost the lock):
-- abandoned.  {{running}}, {{abandoned}}: DLOCK_RUN_RUNNING,
-- DLOCK_RUN_ABANDONED (include/dlock.h).
UPDATE dlock_runs SET result = {{abandoned}} WHERE name = ?1 AND result = {{running}}
