-- Take over a dead holder's row: delete exactly that row (key ?,
-- connection ?, created ?, {{owner_is}}) if it is still dead.
-- {{owner_is}}: owner = ? (its token), or owner IS NULL.
DELETE FROM {{table}} WHERE name = ? AND connection_id = ? AND created = ? AND {{owner_is}} AND ({{expires}} <= {{nowms}} OR (lock_acquired AND IFNULL(IS_USED_LOCK({{row_key}}), 0) <> connection_id))
