-- value_get (elect.c): the name's leader record.  $1 the name.
SELECT fence, value FROM dlock_leaders WHERE name = $1
