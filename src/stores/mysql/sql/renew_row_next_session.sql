-- Session mode's part of renew_row_next.sql.
, ?, ?
