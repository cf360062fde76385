-- value-get.sql - name ?1's leader value and the fence (term) it was
-- written under; no row: none.  elect.c shows it only while that fence is
-- the holder's.
SELECT fence, value FROM dlock_leaders WHERE name = ?1
