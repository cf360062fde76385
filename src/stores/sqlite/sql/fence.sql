-- fence.sql - the last fence name ?1 handed out (status).
SELECT fence FROM dlock_fences WHERE name = ?1
