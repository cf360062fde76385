-- dlock list: each name's last run{{like}} (run_last_like.sql: of the
-- names starting with a prefix).
SELECT {{run_cols}} FROM {{runsum}} AS s JOIN {{runs}} AS r ON r.name = s.name AND r.fence = s.last_fence{{like}}
