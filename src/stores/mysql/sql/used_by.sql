-- The session holding the GET_LOCK of the key ? (0: none).
SELECT IFNULL(IS_USED_LOCK(?), 0)
