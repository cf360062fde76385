-- After a lock was found lost: drop the GET_LOCK of the key %s only if
-- this session still holds it.
SELECT IF(IS_USED_LOCK(%s) = CONNECTION_ID(), RELEASE_LOCK(%s), 0)
