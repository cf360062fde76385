-- An observer's LISTEN (elect.c), first: the name, in a setting of the
-- observer's own session, for listen.sql (LISTEN takes no parameter, and
-- a name is never written into a statement's text).  $1 the name.
SELECT set_config('dlock.observe', $1, false)
