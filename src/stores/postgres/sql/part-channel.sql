-- Fragment: the NOTIFY channel of the name $1, whatever the handle's key
-- function: 'dlock_' and its 64-bit hash.  Two names may share one (a
-- wake-up too many, nothing more: an observer only reads again).
'dlock_' || hashtextextended($1, 0)::text
