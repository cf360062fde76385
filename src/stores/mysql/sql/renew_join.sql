-- The batch's locks ({{rows}}: renew_row_first.sql, then renew_row_next.sql
-- for each other), joined by token.  The lock table comes first: a range
-- on its name index, then each row's lock found by token in b
-- (materialised, with a key on tok).  The leading space is sent.
 AS l STRAIGHT_JOIN ({{rows}}) AS b ON l.owner = b.tok
