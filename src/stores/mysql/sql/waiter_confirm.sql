-- Granted and claimed: delete the waiter row ('%s', token '%s') on
-- condition that its lease is still current.
DELETE FROM {{table}} WHERE name = '%s' AND owner = '%s' AND {{expires}} > {{nowms}}
