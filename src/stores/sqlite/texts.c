/*
 * texts.c - the SQLite store's statements, kept in sql/ *.sql (embedded as
 * dlock__text_sqlite_*, "sqlite_text.h"), expanded once per open by
 * dlock__sq_texts_build(), and by dlock__sqlite_texts() with that same
 * builder for the golden copies (tests/golden/sqlite/default/).  The
 * store has one variant, "default"; its placeholders are C constants.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sq.h"
#include "sqlite_text.h"
#include "text.h"

static const struct {
    const char *name; /* its file in sql/ */
    const char *tmpl;
} texts[T_COUNT] = {
    [Q_BEGIN] = {"begin.sql", dlock__text_sqlite_begin},
    [Q_COMMIT] = {"commit.sql", dlock__text_sqlite_commit},
    [Q_ROLLBACK] = {"rollback.sql", dlock__text_sqlite_rollback},
    [Q_HOLDERS] = {"holders.sql", dlock__text_sqlite_holders},
    [Q_DELETE_ROW] = {"delete-row.sql", dlock__text_sqlite_delete_row},
    [Q_BUMP_FENCE] = {"bump-fence.sql", dlock__text_sqlite_bump_fence},
    [Q_INSERT] = {"insert.sql", dlock__text_sqlite_insert},
    [Q_EXTEND] = {"extend.sql", dlock__text_sqlite_extend},
    [Q_TTL] = {"ttl.sql", dlock__text_sqlite_ttl},
    [Q_RELEASE] = {"release.sql", dlock__text_sqlite_release},
    [Q_FENCE] = {"fence.sql", dlock__text_sqlite_fence},
    [Q_NAMES] = {"names.sql", dlock__text_sqlite_names},
    [Q_FORCE] = {"force.sql", dlock__text_sqlite_force},
    [T_WAL] = {"wal.sql", dlock__text_sqlite_wal},
    [T_SCHEMA] = {"schema.sql", dlock__text_sqlite_schema},
    [Q_HAS_LIMIT] = {"has-limit.sql", dlock__text_sqlite_has_limit},
    [T_MIGRATE_LIMIT] = {"migrate-limit.sql", dlock__text_sqlite_migrate_limit},
    [Q_RUN_SUMMARY] = {"run-summary.sql", dlock__text_sqlite_run_summary},
    [Q_RUN_ONE] = {"run-one.sql", dlock__text_sqlite_run_one},
    [Q_RUN_NEWEST] = {"run-newest.sql", dlock__text_sqlite_run_newest},
    [Q_RUN_ABANDON] = {"run-abandon.sql", dlock__text_sqlite_run_abandon},
    [Q_RUN_INSERT] = {"run-insert.sql", dlock__text_sqlite_run_insert},
    [Q_RUN_NAMES] = {"run-names.sql", dlock__text_sqlite_run_names},
    [Q_RUN_TRIM] = {"run-trim.sql", dlock__text_sqlite_run_trim},
    [Q_RUN_END] = {"run-end.sql", dlock__text_sqlite_run_end},
    [Q_RUN_OK] = {"run-ok.sql", dlock__text_sqlite_run_ok},
    [Q_RUN_LAST] = {"run-last.sql", dlock__text_sqlite_run_last},
    [Q_VALUE_SET] = {"value-set.sql", dlock__text_sqlite_value_set},
    [Q_VALUE_GET] = {"value-get.sql", dlock__text_sqlite_value_get},
    [Q_RUN_KEEP_GET] = {"run-keep-get.sql", dlock__text_sqlite_run_keep_get},
    [Q_RUN_KEEP_PUT] = {"run-keep-put.sql", dlock__text_sqlite_run_keep_put},
    [Q_RUN_COUNT] = {"run-count.sql", dlock__text_sqlite_run_count},
    [Q_SUSPEND_GET] = {"suspend-get.sql", dlock__text_sqlite_suspend_get},
    [Q_SUSPEND_PUT] = {"suspend-put.sql", dlock__text_sqlite_suspend_put},
    [Q_SUSPEND_DELETE] = {"suspend-delete.sql",
                          dlock__text_sqlite_suspend_delete},
    [Q_SUSPEND_ALL] = {"suspend-all.sql", dlock__text_sqlite_suspend_all},
};

void dlock__sq_texts_free(char *out[T_COUNT])
{
    for (int i = 0; i < T_COUNT; i++) {
        free(out[i]);
        out[i] = NULL;
    }
}

int dlock__sq_texts_build(char *out[T_COUNT])
{
    char running[16], abandoned[16];
    const char *const vars[] = {"running", running, "abandoned", abandoned,
                                NULL};

    snprintf(running, sizeof(running), "%d", (int)DLOCK_RUN_RUNNING);
    snprintf(abandoned, sizeof(abandoned), "%d", (int)DLOCK_RUN_ABANDONED);
    for (int i = 0; i < T_COUNT; i++)
        out[i] = NULL;
    for (int i = 0; i < T_COUNT; i++) {
        out[i] = dlock__text_expand(texts[i].tmpl, vars);
        if (out[i] == NULL) {
            /* The message is set: no memory, or a template naming a
             * placeholder vars lacks (the golden test finds that first). */
            dlock__sq_texts_free(out);
            return DLOCK_ENOMEM;
        }
    }
    return DLOCK_OK;
}

void dlock__sqlite_texts(dlock__text_emit emit, void *arg)
{
    char *t[T_COUNT];

    /* Nothing emitted on failure: the golden test then fails on every
     * copy it no longer sees. */
    if (dlock__sq_texts_build(t) != DLOCK_OK)
        return;
    for (int i = 0; i < T_COUNT; i++)
        emit(arg, "default", texts[i].name, t[i]);
    dlock__sq_texts_free(t);
}
