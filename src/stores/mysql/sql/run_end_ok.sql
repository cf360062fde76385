-- After a run that succeeded: the name's last good fence (%llu, key %s,
-- %llu).  The leading "; " is sent.
; UPDATE {{runsum}} SET ok_fence = %llu WHERE name = %s AND (ok_fence IS NULL OR ok_fence < %llu)
