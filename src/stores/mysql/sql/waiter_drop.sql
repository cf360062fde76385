-- Drop this wait's waiter row (its name ?, our token ?).
DELETE FROM {{table}} WHERE name = ? AND owner = ?
