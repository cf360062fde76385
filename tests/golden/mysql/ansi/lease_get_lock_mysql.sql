SELECT IF(@dlock_wexp - CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) - %lld > 0, GET_LOCK(%s, LEAST(%lld, FLOOR((@dlock_wexp - CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) - %lld) / 1000))), 0)
