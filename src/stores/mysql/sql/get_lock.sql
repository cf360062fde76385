-- GET_LOCK of the key ?, waiting {{wait}}: ? seconds on
-- MariaDB (fractional), ? whole ones on MySQL.
SELECT GET_LOCK(?, {{wait}})
