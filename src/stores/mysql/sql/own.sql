-- The WHERE of a held lock's own row, still live (dlock__my_sb_own()):
-- ? the key, ? the owner token, and in session mode
-- ({{own_session}}: own_session.sql) the key again.
WHERE name = ? AND owner = ? AND {{expires}} > {{nowms}}{{own_session}}
