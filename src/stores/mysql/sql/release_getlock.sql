-- Drop our GET_LOCK of the key ? (best effort).
SELECT RELEASE_LOCK(?)
