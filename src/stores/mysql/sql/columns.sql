-- The select list of a lock table row (12 columns, struct holder in
-- my.h; dlock__my_columns()).  {{used}}: used_mariadb.sql or
-- used_mysql.sql; {{lim}}: lim, or NULL where the table has no lim column.
connection_id, owner, lock_acquired, {{expires}} - {{nowms}}, IFNULL({{used}}, 0), created, fence, host, pid, COALESCE(acquired_ms, created * 1000), COALESCE(full_name, name), {{lim}}
