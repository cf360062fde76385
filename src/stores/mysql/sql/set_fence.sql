-- Write the fence %llu into our row (key %s, token '%s').
UPDATE {{table}} SET fence = %llu WHERE name = %s AND owner = '%s'
