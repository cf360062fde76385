-- Every other lock of the batch (as renew_row_first.sql).  The leading
-- space is sent.
 UNION ALL SELECT ?, CONVERT(? USING ascii), ?, ?{{session}}
