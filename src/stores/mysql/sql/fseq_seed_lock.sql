-- The seed's own GET_LOCK (?: seconds to wait).  {{seed_key}}: the
-- first 50 characters of the table's name.
SELECT GET_LOCK('dlock-seed:{{seed_key}}', ?)
