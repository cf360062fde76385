/*
 * statements.c - the PostgreSQL store's statements, built once from their
 * templates (sql/ *.sql, embedded as "postgres_text.h"): the one builder
 * that open() and the golden test (dlock__postgres_texts()) both call.
 *
 * Keyed statements come in two sets, one per key function (pg.h); the
 * server computes the key, so dlock and other clients of the same key
 * (psql, mpyw/laravel-database-advisory-lock) agree on it.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "pg.h"
#include "postgres_text.h"
#include "text.h"

/* Session fences (one sequence, all names): the least one (a crash
 * resets the UNLOGGED sequence to 1; below this means re-seed), and the
 * block by which the durable ceiling (dlock_fences' row '') is raised
 * when a fence comes within half a block of it.  A new store's fences
 * start at 10^15 and stay below 2^53 (JSON's exact integers) for 250
 * years at a million fences per second; a crash costs a block at most. */
#define FENCE_MIN "1000000000000000"
#define FENCE_BLOCK "1048576"
#define FENCE_HALF "524288"
/* The ceiling as this session last read or wrote it, committed.  A
 * committed ceiling is durable (raised with synchronous_commit on, and
 * PostgreSQL shows a commit only once its record is flushed) and only
 * ever goes up, so a fence half a block below the session's copy is
 * below the durable ceiling: the fast path reads no table.  A session
 * does not outlive a crash; a transaction that aborts undoes the copy.
 * The setting is named after the backend's pid, which no one knows
 * before the session starts: a value preset by the session's options
 * (URL options=-c, PGOPTIONS, ALTER ROLE/DATABASE ... SET) is never
 * taken for the copy.  Believing one would hand out fences above the
 * durable ceiling, which repeat after a crash, for every client. */
#define FENCE_GUC dlock__text_postgres_frag_fence_guc

/* The name's key, per key function ({{key}}). */
#define KEY_X dlock__text_postgres_frag_key_x
#define KEY_H dlock__text_postgres_frag_key_h

/* Placeholders every template may use. */
#define COMMON_VARS                                                            \
    "fence_min", FENCE_MIN, "fence_block", FENCE_BLOCK, "fence_half",          \
        FENCE_HALF, "fence_guc", FENCE_GUC

/* The acquire's variants: the lock function, the CTE whose got decides
 * ({{got}}: l, or m after part-sem-gate.sql), the row's shared column,
 * and more columns (the sql/frag-*.sql files: {{}} values of SQL text). */
#define ACQ_X(FN)                                                              \
    "lock_fn", FN, "got", "l", "shared",                                       \
        dlock__text_postgres_frag_shared_param, "extra", ""
#define ACQ_S(FN)                                                              \
    "lock_fn", FN, "got", "m", "shared",                                       \
        dlock__text_postgres_frag_shared_param, "extra",                       \
        dlock__text_postgres_frag_sem_count
/* The exclusive tries add what the rows say of the holder's lease. */
#define ACQ_XT(FN)                                                             \
    "lock_fn", FN, "got", "l", "shared",                                       \
        dlock__text_postgres_frag_shared_param, "extra",                       \
        dlock__text_postgres_frag_lease_left
#define ACQ_FAST(FN)                                                           \
    "lock_fn", FN, "got", "l", "shared", "false", "extra",                     \
        dlock__text_postgres_frag_lease_left

struct tmpl {
    const char *name; /* golden file name */
    const char *text;
    /* its own {{key}}, value pairs, NULL-ended (all NULL: none) */
    const char *vars[10];
};

/* Keyed, by Q_*. */
static const struct tmpl keyed[Q_KEYED] = {
    [Q_TRY_X] = {"try_x.sql",
                 dlock__text_postgres_try_x,
                 {ACQ_XT("pg_try_advisory_lock"), NULL}},
    [Q_TRY_S] = {"try_s.sql",
                 dlock__text_postgres_try_s,
                 {ACQ_S("pg_try_advisory_lock_shared"), NULL}},
    [Q_WAIT_X] = {"wait_x.sql",
                  dlock__text_postgres_wait_x,
                  {ACQ_X("pg_advisory_lock"), NULL}},
    [Q_WAIT_S] = {"wait_s.sql",
                  dlock__text_postgres_wait_s,
                  {ACQ_S("pg_advisory_lock_shared"), NULL}},
    [Q_HOLDERS] = {"holders.sql", dlock__text_postgres_holders, {NULL}},
    [Q_TERMINATE] = {"terminate.sql", dlock__text_postgres_terminate, {NULL}},
    [Q_RELEASE_X] = {"release_x.sql",
                     dlock__text_postgres_release,
                     {"unlock_fn", "pg_advisory_unlock", NULL}},
    [Q_RELEASE_S] = {"release_s.sql",
                     dlock__text_postgres_release,
                     {"unlock_fn", "pg_advisory_unlock_shared", NULL}},
    [Q_STATUS] = {"status.sql", dlock__text_postgres_status, {NULL}},
    [Q_STATUS2] = {"status2.sql", dlock__text_postgres_status2, {NULL}},
    [Q_FORCE_KILL] = {"force_kill.sql",
                      dlock__text_postgres_force_kill,
                      {NULL}},
    [Q_SEM] = {"sem.sql", dlock__text_postgres_sem, {NULL}},
    [Q_RELEASE_M] = {"release_m.sql", dlock__text_postgres_release_m, {NULL}},
    [Q_TRY_X1] = {"try_x1.sql",
                  dlock__text_postgres_try_x1,
                  {ACQ_FAST("pg_try_advisory_lock"), NULL}},
    [Q_TRY_XM] = {"try_xm.sql",
                  dlock__text_postgres_try_xm,
                  {ACQ_FAST("pg_try_advisory_lock"), NULL}},
    [Q_RELEASE_X1] = {"release_x1.sql",
                      dlock__text_postgres_release_x1,
                      {NULL}},
};

/* Per mode ([0] session mode's dlock_held, [1] lease mode's dlock_locks):
 * golden file names are the same in both variants. */
static const struct tmpl extend[2] = {
    {"extend.sql", dlock__text_postgres_extend, {"table", "dlock_held", NULL}},
    {"extend.sql",
     dlock__text_postgres_extend,
     {"table", "dlock_locks", NULL}}};
static const struct tmpl ttl[2] = {
    {"ttl.sql", dlock__text_postgres_ttl, {"table", "dlock_held", NULL}},
    {"ttl.sql", dlock__text_postgres_ttl, {"table", "dlock_locks", NULL}}};
static const struct tmpl names[2] = {
    {"names.sql", dlock__text_postgres_names, {"table", "dlock_held", NULL}},
    {"names.sql", dlock__text_postgres_names, {"table", "dlock_locks", NULL}}};
static const struct tmpl force[2] = {
    {"force.sql", dlock__text_postgres_force_held, {NULL}},
    {"force.sql", dlock__text_postgres_force_lease, {NULL}}};
static const struct tmpl renew[2] = {
    {"renew.sql", dlock__text_postgres_renew, {"table", "dlock_held", NULL}},
    {"renew.sql", dlock__text_postgres_renew, {"table", "dlock_locks", NULL}}};
static const struct tmpl run_begin[2] = {{"run_begin.sql",
                                          dlock__text_postgres_run_begin,
                                          {"table", "dlock_held", NULL}},
                                         {"run_begin.sql",
                                          dlock__text_postgres_run_begin,
                                          {"table", "dlock_locks", NULL}}};
static const struct tmpl value_set[2] = {{"value_set.sql",
                                          dlock__text_postgres_value_set,
                                          {"table", "dlock_held", NULL}},
                                         {"value_set.sql",
                                          dlock__text_postgres_value_set,
                                          {"table", "dlock_locks", NULL}}};

/* The rest, each in one variant: "default" (session mode; what both modes
 * share) or "lease". */
static const struct {
    size_t off; /* of its field in struct dlock__pg_sql */
    int lease;
    struct tmpl t;
} other[] = {
    {offsetof(struct dlock__pg_sql, release_l),
     1,
     {"release.sql", dlock__text_postgres_release_lease, {NULL}}},
    {offsetof(struct dlock__pg_sql, status_l),
     1,
     {"status.sql", dlock__text_postgres_status_lease, {NULL}}},
    {offsetof(struct dlock__pg_sql, status2_l),
     1,
     {"status2.sql", dlock__text_postgres_status2_lease, {NULL}}},
    {offsetof(struct dlock__pg_sql, lease_acq),
     1,
     {"acquire.sql", dlock__text_postgres_lease_acquire, {NULL}}},
    {offsetof(struct dlock__pg_sql, lease_sem),
     1,
     {"acquire_sem.sql", dlock__text_postgres_lease_sem_acquire, {NULL}}},
    {offsetof(struct dlock__pg_sql, unlock_all),
     0,
     {"unlock_all.sql", dlock__text_postgres_unlock_all, {NULL}}},
    {offsetof(struct dlock__pg_sql, drop_broken),
     0,
     {"drop_broken.sql", dlock__text_postgres_drop_broken, {NULL}}},
    {offsetof(struct dlock__pg_sql, sem_wait),
     0,
     {"sem_wait.sql", dlock__text_postgres_sem_wait, {NULL}}},
    {offsetof(struct dlock__pg_sql, have_tables),
     0,
     {"have_tables.sql", dlock__text_postgres_have_tables, {NULL}}},
    {offsetof(struct dlock__pg_sql, init),
     0,
     {"init.sql", dlock__text_postgres_init, {NULL}}},
    {offsetof(struct dlock__pg_sql, ddl),
     0,
     {"ddl.sql", dlock__text_postgres_ddl, {NULL}}},
    {offsetof(struct dlock__pg_sql, init_runs),
     0,
     {"init_runs.sql", dlock__text_postgres_init_runs, {NULL}}},
    {offsetof(struct dlock__pg_sql, run_end),
     0,
     {"run_end.sql", dlock__text_postgres_run_end, {NULL}}},
    {offsetof(struct dlock__pg_sql, runs),
     0,
     {"runs.sql", dlock__text_postgres_runs, {NULL}}},
    {offsetof(struct dlock__pg_sql, last_runs),
     0,
     {"last_runs.sql", dlock__text_postgres_last_runs, {NULL}}},
    {offsetof(struct dlock__pg_sql, gone),
     0,
     {"gone.sql", dlock__text_postgres_gone, {NULL}}},
    {offsetof(struct dlock__pg_sql, session_setup),
     0,
     {"session_setup.sql", dlock__text_postgres_session_setup, {NULL}}},
    {offsetof(struct dlock__pg_sql, value_get),
     0,
     {"value_get.sql", dlock__text_postgres_value_get, {NULL}}},
    {offsetof(struct dlock__pg_sql, notify),
     0,
     {"notify.sql", dlock__text_postgres_notify, {NULL}}},
    {offsetof(struct dlock__pg_sql, listen_name),
     0,
     {"listen_name.sql", dlock__text_postgres_listen_name, {NULL}}},
    {offsetof(struct dlock__pg_sql, listen),
     0,
     {"listen.sql", dlock__text_postgres_listen, {NULL}}},
    {offsetof(struct dlock__pg_sql, probe),
     0,
     {"probe.sql", dlock__text_postgres_probe, {NULL}}},
    {offsetof(struct dlock__pg_sql, suspend),
     0,
     {"suspend.sql", dlock__text_postgres_suspend, {NULL}}},
    {offsetof(struct dlock__pg_sql, resume),
     0,
     {"resume.sql", dlock__text_postgres_resume, {NULL}}},
    {offsetof(struct dlock__pg_sql, suspension),
     0,
     {"suspension.sql", dlock__text_postgres_suspension, {NULL}}},
    {offsetof(struct dlock__pg_sql, suspensions),
     0,
     {"suspensions.sql", dlock__text_postgres_suspensions, {NULL}}},
    {offsetof(struct dlock__pg_sql, keep_runs),
     0,
     {"keep_runs.sql", dlock__text_postgres_keep_runs, {NULL}}},
    {offsetof(struct dlock__pg_sql, kept_runs),
     0,
     {"kept_runs.sql", dlock__text_postgres_kept_runs, {NULL}}},
};

/* A value from a sql/frag-*.sql file is one line: its final newline
 * (cmake/embed.cmake ends every line in one) is not part of the value. */
#define VAL_MAX 128

static char *expand(const struct tmpl *t, const char *key)
{
    const char *vars[32] = {COMMON_VARS};
    char line[16][VAL_MAX];
    size_t n = 8, i, k = 0;

    if (key != NULL) {
        vars[n++] = "key";
        vars[n++] = key;
    }
    for (i = 0; t->vars[i] != NULL; i++)
        vars[n++] = t->vars[i];
    vars[n] = NULL;
    for (i = 1; i < n; i += 2) {
        size_t len = strlen(vars[i]);

        if (len > 0 && vars[i][len - 1] == '\n' && len <= VAL_MAX &&
            k < sizeof(line) / sizeof(line[0])) {
            memcpy(line[k], vars[i], len - 1);
            line[k][len - 1] = '\0';
            vars[i] = line[k++];
        }
    }
    return dlock__text_expand(t->text, vars);
}

static char **other_slot(struct dlock__pg_sql *q, size_t i)
{
    return (char **)((char *)q + other[i].off);
}

/* Every statement into q (all NULL first); with emit, each (NULL if it did
 * not expand) is also handed to emit() under its variant. */
static int build(struct dlock__pg_sql *q, int hashtext, dlock__text_emit emit,
                 void *arg)
{
    const char *keyv = hashtext ? "keys-hashtext" : "default";
    int rc = DLOCK_OK, m;
    size_t i;

#define ONE(DST, T, KEY, VARIANT)                                              \
    do {                                                                       \
        (DST) = expand((T), (KEY));                                            \
        if ((DST) == NULL)                                                     \
            rc = DLOCK_ENOMEM; /* or a bug the golden test finds */            \
        if (emit != NULL)                                                      \
            emit(arg, (VARIANT), (T)->name, (DST));                            \
    } while (0)
    for (i = 0; i < Q_KEYED; i++)
        ONE(q->q[i], &keyed[i], hashtext ? KEY_H : KEY_X, keyv);
    if (hashtext && emit != NULL)
        return rc; /* the golden test: the rest is in "default" */
    for (m = 0; m < 2; m++) {
        const char *v = m ? "lease" : "default";

        ONE(q->extend[m], &extend[m], NULL, v);
        ONE(q->ttl[m], &ttl[m], NULL, v);
        ONE(q->names[m], &names[m], NULL, v);
        ONE(q->force[m], &force[m], NULL, v);
        ONE(q->renew[m], &renew[m], NULL, v);
        ONE(q->run_begin[m], &run_begin[m], NULL, v);
        ONE(q->value_set[m], &value_set[m], NULL, v);
    }
    for (i = 0; i < sizeof(other) / sizeof(other[0]); i++)
        ONE(*other_slot(q, i), &other[i].t, NULL,
            other[i].lease ? "lease" : "default");
#undef ONE
    return rc;
}

void dlock__pg_sql_free(struct dlock__pg_sql *q)
{
    size_t i;
    int m;

    for (i = 0; i < Q_KEYED; i++)
        free(q->q[i]);
    for (m = 0; m < 2; m++) {
        free(q->extend[m]);
        free(q->ttl[m]);
        free(q->names[m]);
        free(q->force[m]);
        free(q->renew[m]);
        free(q->run_begin[m]);
        free(q->value_set[m]);
    }
    for (i = 0; i < sizeof(other) / sizeof(other[0]); i++)
        free(*other_slot(q, i));
    memset(q, 0, sizeof(*q));
}

int dlock__pg_sql_build(struct dlock__pg_sql *q, int hashtext)
{
    int rc;

    memset(q, 0, sizeof(*q));
    rc = build(q, hashtext, NULL, NULL);
    if (rc != DLOCK_OK)
        dlock__pg_sql_free(q);
    return rc;
}

/* xact.c's, sent as they are (no handle, no placeholders). */
static const struct tmpl xact[] = {
    {"xact_try.sql", dlock__text_postgres_xact_try, {NULL}},
    {"xact_savepoint.sql", dlock__text_postgres_xact_savepoint, {NULL}},
    {"xact_wait.sql", dlock__text_postgres_xact_wait, {NULL}},
    {"xact_release.sql", dlock__text_postgres_xact_release, {NULL}},
    {"xact_restore.sql", dlock__text_postgres_xact_restore, {NULL}},
    {"xact_undo.sql", dlock__text_postgres_xact_undo, {NULL}},
};

void dlock__postgres_texts(dlock__text_emit emit, void *arg)
{
    struct dlock__pg_sql q;
    int hashtext;

    for (size_t i = 0; i < sizeof(xact) / sizeof(xact[0]); i++)
        emit(arg, "default", xact[i].name, xact[i].text);

    for (hashtext = 0; hashtext < 2; hashtext++) {
        memset(&q, 0, sizeof(q));
        (void)build(&q, hashtext, emit, arg);
        dlock__pg_sql_free(&q);
    }
}
