-- Session mode's one-statement release (have_fseq): the row, and the
-- GET_LOCK in the same statement.  ? the key, ? the token, ? the key.
DELETE FROM {{table}} WHERE name = ? AND owner = ? AND IF(connection_id = CONNECTION_ID(), RELEASE_LOCK(?), 0) = 1
