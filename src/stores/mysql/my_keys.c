/*
 * my_keys.c - lock names to GET_LOCK keys (see my_keys.h).
 */
#include <string.h>

#include "../sha1.h"
#include "my_keys.h"

/* The GET_LOCK key of a name: itself up to 64 characters, else its first
 * 24 characters and the SHA1 hex of all of it.  Characters are UTF-8 code
 * points (the core has checked the name is valid UTF-8), as CHAR_LENGTH()
 * and SUBSTR() count them in utf8mb4.  MariaDB refuses GET_LOCK names over
 * 192 bytes (MySQL counts 64 characters), so there a short name of many
 * multibyte characters is hashed too: no other client can use such a name
 * as a key on MariaDB anyway. */
int dlock__mysql_key(const char *name, size_t len, int mariadb,
                     char out[DLOCK__MYSQL_KEY_MAX + 1], size_t *key_len)
{
    size_t chars = 0, cut = 0;
    int rc;

    for (size_t i = 0; i < len; i++) {
        if (((unsigned char)name[i] & 0xc0) != 0x80) {
            if (chars == 24)
                cut = i;
            chars++;
        }
    }
    if (chars <= 64 && (!mariadb || len <= 192)) {
        memcpy(out, name, len);
        out[len] = '\0';
        *key_len = len;
        return 0;
    }
    *key_len = 0;
    memcpy(out, name, cut);
    rc = dlock__sha1_hex(name, len, out + cut);
    if (rc != 0) {
        out[0] = '\0';
        return rc;
    }
    *key_len = cut + 40;
    return 0;
}

/* The prefix of a semaphore's slot keys: the SHA1 hex of the name, a NUL
 * byte and "dlock-sem", then '#'; slot i's key is the prefix and i in
 * decimal (at most 45 ASCII characters).  No name holds a NUL byte, so
 * the hashed text is no name: the prefix equals the SHA1 part of a long
 * name's key only by a SHA1 collision.  Only a name spelt on purpose as
 * "<40 hex>#<digits>" is its own key equal to a slot key. */
int dlock__mysql_sem_prefix(const char *name, size_t len,
                            char out[DLOCK__MYSQL_SEM_PREFIX + 1])
{
    static const char tail[] = "dlock-sem";
    char buf[1024 + sizeof(tail) + 1];
    int rc;

    if (len > 1024)
        len = 1024; /* names are at most DLOCK_NAME_MAX bytes */
    memcpy(buf, name, len);
    buf[len] = '\0';
    memcpy(buf + len + 1, tail, sizeof(tail) - 1);
    rc = dlock__sha1_hex(buf, len + sizeof(tail), out);
    if (rc != 0)
        return rc;
    out[40] = '#';
    out[41] = '\0';
    return 0;
}

int dlock__mysql_reserved_key(const char *key, size_t len)
{
    size_t i;

    if (len < 42)
        return 0;
    for (i = 0; i < 40; i++)
        if (!((key[i] >= '0' && key[i] <= '9') ||
              (key[i] >= 'a' && key[i] <= 'f')))
            return 0;
    if (key[i] != '#' && key[i] != '~')
        return 0;
    for (i++; i < len; i++)
        if (key[i] < '0' || key[i] > '9')
            return 0;
    return 1;
}
