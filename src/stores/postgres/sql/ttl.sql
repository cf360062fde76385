-- Ms left of our live lease ({{table}} as in extend.sql).  $1 name,
-- $2 owner.
SELECT greatest(1, ceil(extract(epoch FROM expires_at -
clock_timestamp()) * 1000)::bigint) FROM {{table}} WHERE name = $1 AND
owner = $2 AND expires_at > clock_timestamp()
