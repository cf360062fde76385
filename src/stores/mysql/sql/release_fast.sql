-- Session mode's one-statement release (have_fseq): the row, and the
-- GET_LOCK in the same statement.  %s the key, '%s' the token, %s the key.
DELETE FROM {{table}} WHERE name = %s AND owner = '%s' AND IF(connection_id = CONNECTION_ID(), RELEASE_LOCK(%s), 0) = 1
