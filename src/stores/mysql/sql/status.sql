-- A name's status (store.c): its row if any (columns.sql), its highest
-- fence, and the session holding its GET_LOCK.  The key %s is the same
-- each time; {{seq_fence}}: status_seq_fence.sql where the table
-- {{seq}} is there, else 0 (and one %s fewer).  With the fence sequence
-- a lock's fence is only in its row.
SELECT {{columns}}, GREATEST(IFNULL((SELECT fence FROM {{fences}} WHERE name = %s), 0), IFNULL((SELECT {{seq_fence}}), 0), IFNULL({{table}}.fence, 0)), IFNULL(IS_USED_LOCK(%s), 0) FROM (SELECT 1) AS one LEFT JOIN {{table}} ON name = %s
