/* libFuzzer: the store URL parser and password redaction.  Besides not
 * crashing: a parsed URL's redacted form never holds its password (when
 * the password is distinctive enough to look for), and parsing is
 * deterministic. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "store.h"

/* Does the password's text also appear in another part of the URL (then
 * seeing it in the redacted form is not a leak)? */
static int elsewhere(const struct dlock_url *u, const char *pw)
{
    const char *parts[] = {u->user, u->host, u->path, u->query, u->scheme};

    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
        if (parts[i] != NULL && strstr(parts[i], pw) != NULL)
            return 1;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1), *red = NULL;
    struct dlock_url *u = NULL;

    if (s == NULL)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    if (dlock_url_redact(&red, s) == DLOCK_OK)
        dlock_free(red);
    if (dlock__url_parse(&u, s) == DLOCK_OK) {
        if (u->redacted == NULL || u->scheme == NULL)
            abort();
        /* A password of 6+ bytes that occurs once in the URL must be gone
         * from the redacted form. */
        if (u->password != NULL && strlen(u->password) >= 6 &&
            strstr(s, u->password) != NULL &&
            strstr(strstr(s, u->password) + 1, u->password) == NULL &&
            !elsewhere(u, u->password) &&
            strstr(u->redacted, u->password) != NULL)
            abort();
        for (size_t i = 0; i < u->nparams; i++) {
            const char *k = u->params[i].key, *v = u->params[i].value;
            const char *at = strstr(s, v);

            (void)dlock__url_param(u, k);
            /* The same for a password given as a parameter (?password=,
             * ?sslpassword=), wherever it stands after the path. */
            if ((strcasecmp(k, "password") == 0 ||
                 strcasecmp(k, "sslpassword") == 0) &&
                strlen(v) >= 8 && at != NULL &&
                strstr(at + 1, v) == NULL &&
                strstr(u->redacted, v) != NULL)
                abort();
        }
        {
            int64_t ms = 0;

            (void)dlock__url_param_ms(u, "timeout", 1000, &ms);
            ms = -1;
            if (dlock__url_param_count(u, "max_keys", &ms) == DLOCK_OK &&
                dlock__url_param(u, "max_keys") != NULL && ms < 0)
                abort(); /* a count is never negative */
        }
        dlock__url_free(u);
    }
    free(s);
    return 0;
}
