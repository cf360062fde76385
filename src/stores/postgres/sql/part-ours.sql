-- Fragment: lk's row ({{table}}) is still ours and within its lease; $1
-- the name, $2 the owner token.
EXISTS (SELECT 1 FROM {{table}} WHERE name = $1 AND owner = $2 AND
expires_at > clock_timestamp())
