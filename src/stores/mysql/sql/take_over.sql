-- Take over a dead holder's row: delete exactly that row (key %s,
-- connection %llu, created %lld, {{owner_is}}) if it is still dead.
-- {{owner_is}}: owner = '%s' (its token), or owner IS NULL.
DELETE FROM {{table}} WHERE name = %s AND connection_id = %llu AND created = %lld AND {{owner_is}} AND ({{expires}} <= {{nowms}} OR (lock_acquired AND IFNULL(IS_USED_LOCK({{row_key}}), 0) <> connection_id))
