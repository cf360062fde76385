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
 * Aborts if libcrypto fails (see sha1.c): no caller can return an error
 * for it yet. */
void dlock__sha1_hex(const void *data, size_t len, char out[41]);

#endif
