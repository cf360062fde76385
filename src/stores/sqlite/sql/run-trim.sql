-- run-trim.sql - name ?1's ?2 oldest runs below fence ?3 go (those over
-- its keep setting: usually one; never the run just recorded, ?3).  By
-- the primary key (name, fence): what it costs is what it drops.
DELETE FROM dlock_runs WHERE name = ?1 AND fence IN (SELECT fence FROM dlock_runs WHERE name = ?1 AND fence < ?3 ORDER BY fence LIMIT ?2)
