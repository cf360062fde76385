-- Renew a held lock (store.c, extend_op): %lld the ttl in ms, %lld in
-- seconds (its-mieger's ttl column), then own.sql's values.
UPDATE {{table}} SET expires_ms = {{nowms}} + %lld, created = UNIX_TIMESTAMP(), ttl = %lld {{own}}
