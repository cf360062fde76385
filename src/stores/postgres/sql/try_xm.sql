-- The uncontended exclusive try on the mux session (Q_TRY_XM): as
-- try_x1.sql, but it keeps the check of this session's own rows of the
-- name (part-acq-try.sql).  Parameters as try_x.sql.
-- @include part-acq-try.sql
-- @include part-fence-row.sql
SELECT l.got, (SELECT fence FROM i){{extra}} FROM l
