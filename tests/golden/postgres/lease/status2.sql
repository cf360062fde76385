SELECT (SELECT fence FROM dlock_fences WHERE name = $1), 0, false,
NULL::integer, NULL::text, NULL::text
