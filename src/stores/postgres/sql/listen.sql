-- An observer's LISTEN (elect.c), then: on the channel of the name that
-- listen_name.sql set, computed as part-channel.sql computes it (the
-- same expression, on the setting).
DO 'BEGIN EXECUTE format(''LISTEN %I'', ''dlock_'' ||
hashtextextended(coalesce(current_setting(''dlock.observe'', true), ''''),
0)::text); END'
