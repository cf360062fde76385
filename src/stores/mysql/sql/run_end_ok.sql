-- After a run that succeeded: the name's last good fence (?, key ?,
-- ?).  The leading "; " is sent.
; UPDATE {{runsum}} SET ok_fence = ? WHERE name = ? AND (ok_fence IS NULL OR ok_fence < ?)
