-- The session that holds a row's GET_LOCK key, on MariaDB: it refuses
-- IS_USED_LOCK() of a name over 192 bytes (and fails the whole query).
IF(LENGTH({{row_key}}) > 192, NULL, IS_USED_LOCK({{row_key}}))
