-- The session that holds a row's GET_LOCK key, on MySQL.
IS_USED_LOCK({{row_key}})
