-- dlock_keep_runs() (runs.c, keep_fn): one transaction in one packet.
-- It locks the name's summary (key ?; as run_begin does, first) and its
-- keep row (key ?), finds the newest run past the ? to keep (key ?; by
-- the key (name, fence): what it reads is what it keeps), drops it and
-- every older one (key ?), counts what is left (key ?), and
-- records the setting and the count (key ?, full name ?, keep ?), with
-- no run begun since it (uncounted 0).
START TRANSACTION; SET @dl_lastf = 0, @dl_cut = 0, @dl_kept = 0, @dl_had = NULL; SELECT last_fence INTO @dl_lastf FROM {{runsum}} WHERE name = ? FOR UPDATE; SELECT kept_runs INTO @dl_had FROM {{rkeep}} WHERE name = ? FOR UPDATE; SELECT fence INTO @dl_cut FROM {{runs}} WHERE name = ? ORDER BY fence DESC LIMIT 1 OFFSET ?; DELETE FROM {{runs}} WHERE name = ? AND fence <= @dl_cut; SELECT COUNT(*) INTO @dl_kept FROM {{runs}} WHERE name = ?; INSERT INTO {{rkeep}} (name, full_name, keep_runs, kept_runs, kept_at, uncounted) VALUES (?, ?, ?, @dl_kept, @dl_lastf, 0) ON DUPLICATE KEY UPDATE full_name = VALUES(full_name), keep_runs = VALUES(keep_runs), kept_runs = VALUES(kept_runs), kept_at = VALUES(kept_at), uncounted = 0; COMMIT
