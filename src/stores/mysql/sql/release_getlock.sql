-- Drop our GET_LOCK of the key %s (best effort).
SELECT RELEASE_LOCK(%s)
