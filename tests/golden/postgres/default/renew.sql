UPDATE dlock_held AS l SET expires_at = clock_timestamp() + b.ttl *
interval '1 millisecond' FROM unnest($1::text[], $2::text[],
$3::bigint[]) WITH ORDINALITY AS b(name, owner, ttl, i) WHERE l.name =
b.name AND l.owner = b.owner AND l.expires_at > clock_timestamp()
RETURNING b.i
