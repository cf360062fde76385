-- The names held now that start with $1 ({{table}} as in extend.sql).
SELECT DISTINCT name FROM {{table}} WHERE starts_with(name, $1) AND
expires_at > clock_timestamp() ORDER BY name
