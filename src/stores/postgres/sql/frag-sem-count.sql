-- {{extra}} of the shared acquires (statements.c): one more column,
-- whether part-sem-gate.sql let the key go again (u: a semaphore holds
-- the name).
, (SELECT count(*) FROM u)
