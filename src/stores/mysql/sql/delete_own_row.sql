-- Delete our own row (key %s, owner token '%s'), whatever state it is in.
DELETE FROM {{table}} WHERE name = %s AND owner = '%s'
