-- run-trim.sql - name ?1's ?2 oldest runs go (those over its keep
-- setting: usually one, the run that went ahead put it over).  By the
-- primary key (name, fence): what it costs is what it drops.
DELETE FROM dlock_runs WHERE name = ?1 AND fence IN (SELECT fence FROM dlock_runs WHERE name = ?1 ORDER BY fence LIMIT ?2)
