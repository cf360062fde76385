/*
 * sha1.c - the SHA1 hex digest of the MySQL and Redis stores (sha1.h),
 * computed by OpenSSL's libcrypto.
 */
#include <openssl/evp.h>
#include <stdlib.h>

#include "sha1.h"

void dlock__sha1_hex(const void *data, size_t len, char out[41])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;

    /* EVP_Digest fails only when libcrypto cannot allocate its context
     * or no provider offers SHA1 (an OPENSSL_CONF that loads none).  A
     * key must never be other than the name's own (another key would let
     * two clients hold one name), and no caller has an error path here:
     * stop rather than hand out a wrong key. */
    if (EVP_Digest(data, len, md, &n, EVP_sha1(), NULL) != 1 || n != 20)
        abort();
    for (unsigned int i = 0; i < 20; i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 15];
    }
    out[40] = '\0';
}
