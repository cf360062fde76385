-- The session holding the GET_LOCK of the key %s (0: none).
SELECT IFNULL(IS_USED_LOCK(%s), 0)
