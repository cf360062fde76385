SELECT * FROM dlock_sem_acquire_v2($1::text, $2, $3::integer,
$4::bigint, $5, $6::bigint, $7::bigint, hashtextextended($1::text, 0), $8::integer)
