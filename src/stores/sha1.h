/*
 * sha1.h - the SHA1 hex digest the MySQL and Redis stores name things by
 * (a long name's GET_LOCK key, a Lua script), from OpenSSL's libcrypto.
 * Compiled in with either store, never into the core (CMakeLists.txt):
 * a SQLite-only build links no libcrypto.
 */
#ifndef DLOCK_STORES_SHA1_H
#define DLOCK_STORES_SHA1_H

#include <stddef.h>

/* The SHA1 (FIPS 180-1) of data in lower-case hex, NUL-terminated: the
 * MySQL key of a long name, and the digest Redis names a script by.
 * Returns DLOCK_OK, or, if libcrypto fails (out of memory, no provider
 * offers SHA1), DLOCK_ENOMEM or DLOCK_EINVAL with the thread's message
 * naming libcrypto, and out empty: never abort()s the host process. */
int dlock__sha1_hex(const void *data, size_t len, char out[41]);

#endif
