-- {{shared}} of the acquires that take a shared flag (statements.c):
-- $3, the shared flag.
$3::boolean
