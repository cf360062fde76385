UPDATE dlock_runs SET result = ?3, status = ?4, end_ms = ?5 WHERE name = ?1 AND fence = ?2
