-- A name's status (store.c): its row if any (columns.sql), its highest
-- fence, and the session holding its GET_LOCK.  The key ? is the same
-- each time; {{seq_fence}}: status_seq_fence.sql where the table
-- {{seq}} is there, else 0 (and one ? fewer).  With the fence sequence
-- a lock's fence is only in its row.
SELECT {{columns}}, GREATEST(IFNULL((SELECT fence FROM {{fences}} WHERE name = ?), 0), IFNULL((SELECT {{seq_fence}}), 0), IFNULL({{table}}.fence, 0)), IFNULL(IS_USED_LOCK(?), 0) FROM (SELECT 1) AS one LEFT JOIN {{table}} ON name = ?
