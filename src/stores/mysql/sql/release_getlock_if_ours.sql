-- After a lock was found lost: drop the GET_LOCK of the key ? only if
-- this session still holds it.
SELECT IF(IS_USED_LOCK(?) = CONNECTION_ID(), RELEASE_LOCK(?), 0)
