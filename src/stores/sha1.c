/*
 * sha1.c - the SHA1 hex digest of the MySQL and Redis stores (sha1.h),
 * computed by OpenSSL's libcrypto.
 */
#include <openssl/err.h>
#include <openssl/evp.h>
#include <stdio.h>

#include "errors.h"
#include "sha1.h"

int dlock__sha1_hex(const void *data, size_t len, char out[41])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    unsigned long e;
    char why[256];

    /* EVP_Digest fails when libcrypto cannot allocate its context or no
     * provider offers SHA1 (an OPENSSL_CONF that activates none).  A key
     * must never be other than the name's own (another key would let two
     * clients hold one name): the caller gets an error, never a key, and
     * the host process goes on (a library does not abort it). */
    out[0] = '\0';
    if (EVP_Digest(data, len, md, &n, EVP_sha1(), NULL) != 1 || n != 20) {
        e = ERR_get_error();
        ERR_clear_error();
        if (e == 0) {
            snprintf(why, sizeof(why), "no reason given");
        } else {
            ERR_error_string_n(e, why, sizeof(why));
        }
        return dlock__seterr(
            ERR_GET_REASON(e) == ERR_R_MALLOC_FAILURE ? DLOCK_ENOMEM
                                                      : DLOCK_EINVAL,
            "libcrypto could not compute a SHA1 (EVP_Digest failed: %s); "
            "check OPENSSL_CONF and its providers",
            why);
    }
    for (unsigned int i = 0; i < 20; i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 15];
    }
    out[40] = '\0';
    return DLOCK_OK;
}
