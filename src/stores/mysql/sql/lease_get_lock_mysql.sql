-- As lease_get_lock_mariadb.sql, in whole seconds (?).
SELECT IF(@dlock_wexp - {{nowms}} - ? > 0, GET_LOCK(?, LEAST(?, FLOOR((@dlock_wexp - {{nowms}} - ?) / 1000))), 0)
