DELETE FROM dlock_runs WHERE name = ?1 AND fence IN (SELECT fence FROM dlock_runs WHERE name = ?1 AND fence < ?3 ORDER BY fence LIMIT ?2)
