-- GET_LOCK of the key %s, waiting {{wait}}: %lld.%03lld seconds on
-- MariaDB (fractional), %lld whole ones on MySQL.
SELECT GET_LOCK(%s, {{wait}})
