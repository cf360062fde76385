-- release --force, session mode.  $1 name: each holder's backend to
-- terminate now (0: none), and whether its lease was live.  The holder's
-- key is on its session, which often holds the process's other locks too
-- (the mux): terminating it would make them all LOST.  So a live holder
-- whose session holds rows of other names is not terminated: its row is
-- renamed ('broken:' || owner), which its next renewal sees (no row of
-- its owner: LOST), and lets go of the key on its own session.  Renewals
-- come every third of the lease, so the next is due within a third of
-- what is left of it (R): the row's lease is cut to R / 2 (1 s at
-- least), past which a waiter fences off a holder that still has the key,
-- as any hung holder (terminate.sql).  A session that holds nothing else,
-- or a holder already past its lease, is terminated now.
WITH u AS (UPDATE dlock_held t SET owner = CASE WHEN starts_with(
t.owner, 'broken:') THEN t.owner ELSE 'broken:' || t.owner END,
expires_at = least(t.expires_at, clock_timestamp() + greatest(
interval '1 second', (t.expires_at - clock_timestamp()) / 2)) WHERE
t.name = $1 RETURNING t.backend_pid, t.sess, t.expires_at >
clock_timestamp() AS live) SELECT CASE WHEN NOT u.live OR NOT EXISTS
(SELECT 1 FROM dlock_held o WHERE o.sess = u.sess AND o.name <> $1)
THEN u.backend_pid ELSE 0 END, u.live FROM u
