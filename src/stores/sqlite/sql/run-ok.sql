-- run-ok.sql - run ?2 of name ?1 succeeded: the summary's last success,
-- never moved back to an older fence.
UPDATE dlock_run_names SET ok_fence = ?2 WHERE name = ?1 AND ok_fence < ?2
