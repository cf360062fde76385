/*
 * text.c - {{placeholder}} expansion of statement and script templates.
 */
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "text.h"

static const char *lookup(const char *const *vars, const char *key, size_t len)
{
    for (size_t i = 0; vars != NULL && vars[i] != NULL; i += 2)
        if (strlen(vars[i]) == len && memcmp(vars[i], key, len) == 0)
            return vars[i + 1] != NULL ? vars[i + 1] : "";
    return NULL;
}

char *dlock__text_expand(const char *tmpl, const char *const *vars)
{
    size_t cap = strlen(tmpl) + 1, n = 0;
    char *out = NULL;

    /* Two passes: the size, then the text. */
    for (int pass = 0; pass < 2; pass++) {
        const char *p = tmpl;

        if (pass == 1) {
            out = malloc(cap);
            if (out == NULL) {
                dlock__enomem();
                return NULL;
            }
        }
        n = 0;
        while (*p != '\0') {
            const char *open = strstr(p, "{{"), *close, *val;
            size_t lit = open != NULL ? (size_t)(open - p) : strlen(p);

            if (pass == 1)
                memcpy(out + n, p, lit);
            n += lit;
            if (open == NULL)
                break;
            close = strstr(open + 2, "}}");
            if (close == NULL) {
                if (pass == 1)
                    free(out);
                dlock__seterr(DLOCK_EINVAL, "template: '{{' without '}}'");
                return NULL;
            }
            val = lookup(vars, open + 2, (size_t)(close - open - 2));
            if (val == NULL) {
                if (pass == 1)
                    free(out);
                dlock__seterr(DLOCK_EINVAL, "template: no value for {{%.*s}}",
                              (int)(close - open - 2), open + 2);
                return NULL;
            }
            if (pass == 1)
                memcpy(out + n, val, strlen(val));
            n += strlen(val);
            p = close + 2;
        }
        cap = n + 1;
    }
    out[n] = '\0';
    return out;
}
