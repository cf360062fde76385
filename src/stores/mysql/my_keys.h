/*
 * my_keys.h - how the MySQL/MariaDB store maps lock names to GET_LOCK
 * keys.  Pure functions, no client library: the fuzzer
 * (tests/fuzz/fuzz_keys.c) calls them directly.
 */
#ifndef DLOCK_STORES_MY_KEYS_H
#define DLOCK_STORES_MY_KEYS_H

#include <stddef.h>

/* MySQL/MariaDB: 64 characters of at most 4 bytes each. */
#define DLOCK__MYSQL_KEY_MAX (64 * 4)

/* The GET_LOCK key of a valid UTF-8 name: the name itself up to 64
 * characters (and, on MariaDB, 192 bytes), else its first 24 characters
 * followed by the SHA1 hex of the whole name (seed mpyw's mapping).
 * Writes a NUL-terminated key to out and its length to *key_len;
 * returns 0, or if libcrypto could not hash a long name the DLOCK_*
 * code of dlock__sha1_hex() (../sha1.h: the thread's message says why),
 * out empty. */
int dlock__mysql_key(const char *name, size_t len, int mariadb,
                     char out[DLOCK__MYSQL_KEY_MAX + 1], size_t *key_len);

/* MySQL/MariaDB semaphores: the prefix of the name's slot keys ("<SHA1
 * hex of name, NUL, "dlock-sem">#"); slot i's key is the prefix and i in
 * decimal.  Writes a NUL-terminated prefix of DLOCK__MYSQL_SEM_PREFIX
 * characters; returns 0 or an error as dlock__mysql_key() does. */
#define DLOCK__MYSQL_SEM_PREFIX 41
int dlock__mysql_sem_prefix(const char *name, size_t len,
                            char out[DLOCK__MYSQL_SEM_PREFIX + 1]);

/* MySQL/MariaDB: is key spelt as a semaphore's slot key ("<40 hex>#<i>")
 * or a waiter row's name ("<40 hex>~<session id>")?  Such keys belong to
 * another lock: release --force refuses a name whose key is one. */
int dlock__mysql_reserved_key(const char *key, size_t len);

#endif
