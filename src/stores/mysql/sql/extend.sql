-- Renew a held lock (store.c, extend_op): ? the ttl in ms, ? in
-- seconds (its-mieger's ttl column), then own.sql's values.
UPDATE {{table}} SET expires_ms = {{nowms}} + ?, created = UNIX_TIMESTAMP(), ttl = ? {{own}}
