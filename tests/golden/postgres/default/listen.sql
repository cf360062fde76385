DO 'BEGIN EXECUTE format(''LISTEN %I'', ''dlock_'' ||
hashtextextended(coalesce(current_setting(''dlock.observe'', true), ''''),
0)::text); END'
