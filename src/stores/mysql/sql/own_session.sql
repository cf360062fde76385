-- Session mode: and its GET_LOCK still held by this session (the key we
-- took, ?, not the column: see ROW_KEY in my.h).  The leading space is
-- part of the text.
 AND connection_id = CONNECTION_ID() AND IS_USED_LOCK(?) = CONNECTION_ID()
