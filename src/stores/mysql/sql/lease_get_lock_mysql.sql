-- As lease_get_lock_mariadb.sql, in whole seconds (%lld).
SELECT IF(@dlock_wexp - {{nowms}} - %lld > 0, GET_LOCK(%s, LEAST(%lld, FLOOR((@dlock_wexp - {{nowms}} - %lld) / 1000))), 0)
