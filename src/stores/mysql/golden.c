/*
 * golden.c - the MySQL store's golden test hook (src/core/text.h): every
 * statement text of every variant, expanded by sql.c as open expands it,
 * and `dlock init --print`'s script (schema.c), for tests/golden/mysql/.
 */
#include <stdlib.h>
#include <string.h>

#include "my.h"

/* The variants: what the URL may change in the texts (the mode, the
 * table's name and quoting, ?timeout= in the init command). */
static const struct {
    const char *variant, *url;
} variants[] = {
    {"default", "mysql://u@localhost/db"},
    {"lease", "mysql://u@localhost/db?mode=lease"},
    {"ansi", "mysql://u@localhost/db?table=app_locks&quote=ansi&timeout=30s"},
};

/* The golden test's hook (src/core/text.h): every text of every variant,
 * built by dlock__my_sql_build() as open builds it, one file each, and
 * `dlock init --print`'s whole script as ddl.sql.  Each golden file is
 * the text as sent plus a final newline. */
void dlock__mysql_texts(dlock__text_emit emit, void *arg)
{
    for (size_t v = 0; v < sizeof(variants) / sizeof(variants[0]); v++) {
        struct dlock_url *u = NULL;
        struct my_store *ms = calloc(1, sizeof(*ms));
        const char *mode;
        char *ddl = NULL;

        if (ms == NULL || dlock__url_parse(&u, variants[v].url) != DLOCK_OK ||
            dlock__my_parse_names(u, ms) != DLOCK_OK) {
            emit(arg, variants[v].variant, "error.sql", dlock_errmsg());
            goto next;
        }
        mode = dlock__url_param(u, "mode");
        ms->lease_mode = mode != NULL && strcmp(mode, "lease") == 0;
        ms->timeout_ms = 5000;
        (void)dlock__url_param_ms(u, "timeout", 1000, &ms->timeout_ms);
        if (dlock__my_sql_build(ms) != DLOCK_OK) {
            emit(arg, variants[v].variant, "error.sql", dlock_errmsg());
            goto next;
        }
        for (size_t i = 0;; i++) {
            const char *file, *t = dlock__my_sql_nth(ms, i, &file);
            char *line;

            if (t == NULL)
                break;
            line = malloc(strlen(t) + 2);

            if (line == NULL)
                continue;
            strcpy(line, t);
            strcat(line, "\n");
            emit(arg, variants[v].variant, file, line);
            free(line);
        }
        /* The renew thread's batch as sent for two locks (renew.c). */
        {
            char *batch = dlock__my_renew_text(&ms->sql, 2);

            if (batch != NULL) {
                char *line = malloc(strlen(batch) + 2);

                if (line != NULL) {
                    strcpy(line, batch);
                    strcat(line, "\n");
                    emit(arg, variants[v].variant, "renew_batch2.sql", line);
                }
                free(line);
            }
            free(batch);
        }
        if (dlock__my_ddl(&ddl, u) == DLOCK_OK)
            emit(arg, variants[v].variant, "ddl.sql", ddl);
        else
            emit(arg, variants[v].variant, "error.sql", dlock_errmsg());
        free(ddl);
    next:
        if (ms != NULL)
            dlock__my_sql_free(ms);
        free(ms);
        dlock__url_free(u);
    }
}
