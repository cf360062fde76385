-- {{key}} with ?keys=hashtext (statements.c): the name's key as
-- mpyw/laravel-database-advisory-lock's default.  $1 the name.
hashtext($1::text)::bigint
