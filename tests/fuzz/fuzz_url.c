/* libFuzzer: the store URL parser and password redaction.  Besides not
 * crashing: a parsed URL's redacted form never holds its password (when
 * the password is distinctive enough to look for), and parsing is
 * deterministic. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1), *red = NULL;
    struct dlock_url *u = NULL;

    if (s == NULL)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    if (dlock_url_redact(&red, s) == DLOCK_OK)
        free(red);
    if (dlock__url_parse(&u, s) == DLOCK_OK) {
        if (u->redacted == NULL || u->scheme == NULL)
            abort();
        /* A password of 6+ bytes that occurs once in the URL must be gone
         * from the redacted form. */
        if (u->password != NULL && strlen(u->password) >= 6 &&
            strstr(s, u->password) != NULL &&
            strstr(strstr(s, u->password) + 1, u->password) == NULL &&
            strstr(u->redacted, u->password) != NULL)
            abort();
        for (size_t i = 0; i < u->nparams; i++)
            (void)dlock__url_param(u, u->params[i].key);
        {
            int64_t ms = 0;

            (void)dlock__url_param_ms(u, "timeout", 1000, &ms);
        }
        dlock__url_free(u);
    }
    free(s);
    return 0;
}
