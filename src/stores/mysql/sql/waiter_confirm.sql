-- Granted and claimed: delete the waiter row (?, token ?) on
-- condition that its lease is still current.
DELETE FROM {{table}} WHERE name = ? AND owner = ? AND {{expires}} > {{nowms}}
