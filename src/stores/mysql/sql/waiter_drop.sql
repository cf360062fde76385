-- Drop this wait's waiter row (its name '%s', our token '%s').
DELETE FROM {{table}} WHERE name = '%s' AND owner = '%s'
