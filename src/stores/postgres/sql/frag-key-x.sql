-- {{key}} by default (statements.c): the name's 64-bit advisory key,
-- computed by the server, as mpyw/laravel-database-advisory-lock's
-- hashtextextended mode.  $1 the name.
hashtextextended($1::text, 0)
