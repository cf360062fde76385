-- Delete our own row (key ?, owner token ?), whatever state it is in.
DELETE FROM {{table}} WHERE name = ? AND owner = ?
