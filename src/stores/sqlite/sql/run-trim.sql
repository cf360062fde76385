-- run-trim.sql - name ?1's runs but the newest ?2 (DLOCK_RUNS_KEPT) go.
DELETE FROM dlock_runs WHERE name = ?1 AND fence NOT IN (SELECT fence FROM dlock_runs WHERE name = ?1 ORDER BY fence DESC LIMIT ?2)
