-- The WHERE of a held lock's own row, still live (dlock__my_sb_own()):
-- %s the key, '%s' the owner token, and in session mode
-- ({{own_session}}: own_session.sql) the key again.
WHERE name = %s AND owner = '%s' AND {{expires}} > {{nowms}}{{own_session}}
