-- A wait slice's GET_LOCK after its lease was written (try_wait.c): never
-- past half a ttl (? ms) before the lease's end; key ?, at most
-- ? s, the half ttl again.
SELECT IF(@dlock_wexp - {{nowms}} - ? > 0, GET_LOCK(?, LEAST(?, (@dlock_wexp - {{nowms}} - ?) / 1000)), 0)
