-- A wait slice's GET_LOCK after its lease was written (try_wait.c): never
-- past half a ttl (%lld ms) before the lease's end; key %s, at most
-- %lld.%03lld s, the half ttl again.
SELECT IF(@dlock_wexp - {{nowms}} - %lld > 0, GET_LOCK(%s, LEAST(%lld.%03lld, (@dlock_wexp - {{nowms}} - %lld) / 1000)), 0)
