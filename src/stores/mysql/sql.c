/*
 * sql.c - the MySQL store's statement texts: sql/ *.sql (embedded by
 * cmake/embed.cmake as dlock__text_mysql_NAME) expanded ONCE, when the
 * store opens, into struct my_sql; and the table of them by file, which
 * the golden test's hook (golden.c) walks (tests/golden/mysql/VARIANT/NAME).
 *
 * Table names (from ?table= and ?quote=) and the shared fragments
 * (sql/frag_*.sql: the server's clock, a row's expiry and GET_LOCK key)
 * are filled in here, once.  What a statement takes per call is a '?' in
 * the expanded text, filled by dlock__my_bind() (conn.c) with a literal
 * escaped for the connection or a number.  The one text completed per
 * call is the renew thread's batch (renew.c: its {{join}} and {{where}}
 * for the batch's size; docs/internals.md).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "my.h"
#include "mysql_text.h"
#include "text.h"

/* tmpl expanded with the pairs of vars (more specific ones first: the
 * first match wins), its file's final newline dropped: the text as sent.
 * NULL (the error set) on a failure. */
static char *expand(const char *tmpl, const char *const *vars)
{
    char *s = dlock__text_expand(tmpl, vars);
    size_t n;

    if (s != NULL && (n = strlen(s)) > 0 && s[n - 1] == '\n')
        s[n - 1] = '\0';
    return s;
}

/* The lock table's engine (create_locks.sql).  Session mode creates it
 * MEMORY: its rows die with their sessions anyway (a row whose session
 * is gone is tidied by the next acquirer; a server restart ends every
 * session and empties the table), an InnoDB row costs a durable commit
 * (an fsync) per acquire and per release, and a MyISAM row written by
 * INSERT ... SELECT costs far more than a MEMORY one
 * (docs/stores/mysql.md, "Performance").  Lease mode creates it InnoDB:
 * there the row is all there is of a lock, it must survive anything the
 * server survives, and on Galera only InnoDB tables are replicated.
 * Either mode works on either engine. */
static const char *ddl_engine(const struct my_store *ms)
{
    return ms->lease_mode ? "InnoDB" : "MEMORY";
}

/* Seconds, rounded up (the idle bound's unit). */
static unsigned secs_up(int64_t ms)
{
    return (unsigned)((ms + 999) / 1000);
}

/* The pairs every text may use, after a text's own (the first match
 * wins; a NULL key ends the list). */
#define V(...)                                                                 \
    (const char *const[])                                                      \
    {                                                                          \
        __VA_ARGS__, "table", ms->table, "fences", ms->fences, "seq", ms->seq, \
            "fseq", ms->fseq, "boot", ms->boot, "index", ms->index,            \
            "proc_acq", ms->proc_acq, "proc_rel", ms->proc_rel, "runs",        \
            ms->runs, "runsum", ms->runsum, "leader", ms->leader, "susp",      \
            ms->susp, "rkeep", ms->rkeep, "nowms", frag[0], "nowus", frag[1],  \
            "expires", frag[2], "row_key", frag[3], "runnow", frag[4],         \
            "engine", ddl_engine(ms), NULL                                     \
    }
#define X(dst, tmpl, vars)                                                     \
    do {                                                                       \
        if (((dst) = expand(tmpl, vars)) == NULL)                              \
            goto fail;                                                         \
    } while (0)

int dlock__my_sql_build(struct my_store *ms)
{
    struct my_sql *q = &ms->sql;
    char secs[24];
    char seed_key[51], ttl_s[24], ttl_ms[24];
    char *idle_now = NULL, *fence_p_key = NULL, *used[2] = {NULL, NULL};
    char *and_seq = NULL, *own_session = NULL, *seq_fence = NULL;
    char *part[3] = {NULL, NULL, NULL};
    const char *const frags[5] = {
        dlock__text_mysql_frag_now_ms, dlock__text_mysql_frag_now_us,
        dlock__text_mysql_frag_expires, dlock__text_mysql_frag_row_key,
        dlock__text_mysql_frag_run_now};
    char *frag[5] = {NULL, NULL, NULL, NULL, NULL};
    char running[12], abandoned[12], kept[12], kept_max[12];
    char *run_cols[2] = {NULL, NULL}, *run_ok = NULL, *run_like = NULL;
    const char *const lim[2] = {"NULL", "lim"};
    int rc = DLOCK_OK;

    dlock__my_sql_free(ms);
    /* The shared fragments (sql/frag_*.sql), filled into the others. */
    for (int i = 0; i < 5; i++)
        if ((frag[i] = expand(frags[i], (const char *const[]){NULL})) == NULL)
            goto fail;
    X(q->create_locks, dlock__text_mysql_create_locks, V("_", ""));
    X(q->create_fences, dlock__text_mysql_create_fences, V("_", ""));
    X(q->create_seq, dlock__text_mysql_create_seq, V("_", ""));
    X(q->create_fseq, dlock__text_mysql_create_fseq, V("_", ""));
    X(q->create_boot, dlock__text_mysql_create_boot, V("_", ""));
    X(q->create_runs, dlock__text_mysql_create_runs, V("_", ""));
    X(q->create_runsum, dlock__text_mysql_create_runsum, V("_", ""));
    X(q->create_leader, dlock__text_mysql_create_leader, V("_", ""));
    X(q->create_susp, dlock__text_mysql_create_susp, V("_", ""));
    X(q->create_rkeep, dlock__text_mysql_create_rkeep, V("_", ""));
    /* The procedure's fence: session mode's counters, for p_key. */
    X(fence_p_key, dlock__text_mysql_fence_next,
      V("counter", ms->seq, "key", "p_key"));
    X(q->create_proc_acq, dlock__text_mysql_create_proc_acq,
      V("fence_next", fence_p_key));
    X(q->create_proc_rel, dlock__text_mysql_create_proc_rel, V("_", ""));
    /* Per call: the key, an escaped literal, as %s. */
    X(q->fence_seq, dlock__text_mysql_fence_next,
      V("counter", ms->seq, "key", "?"));
    X(q->fence_fences, dlock__text_mysql_fence_next,
      V("counter", ms->fences, "key", "?"));
    X(q->fence_durable, dlock__text_mysql_fence_next_durable, V("key", "?"));
    X(q->idle_set, dlock__text_mysql_idle_set, V("secs", "?"));
    X(q->set_idle, dlock__text_mysql_set_idle, V("idle_set", q->idle_set));
    /* A new connection's: the idle bound at ?timeout= (conn.c). */
    snprintf(secs, sizeof(secs), "%u", secs_up(ms->timeout_ms));
    X(idle_now, dlock__text_mysql_idle_set, V("secs", secs));
    X(q->init_session, dlock__text_mysql_init_session, V("idle_set", idle_now));
    X(q->init_isolation, dlock__text_mysql_init_isolation, V("_", ""));
    X(q->conn_info, dlock__text_mysql_conn_info, V("_", ""));
    X(q->probe, dlock__text_mysql_probe, V("_", ""));
    X(q->tx_begin, dlock__text_mysql_tx_begin, V("_", ""));
    X(q->tx_commit, dlock__text_mysql_tx_commit, V("_", ""));
    X(q->tx_rollback, dlock__text_mysql_tx_rollback, V("_", ""));
    X(q->heap_big, dlock__text_mysql_heap_big, V("_", ""));
    X(q->heap_default, dlock__text_mysql_heap_default, V("_", ""));
    /* The holder columns: MariaDB refuses IS_USED_LOCK() of a name over
     * 192 bytes (and fails the whole query): such a row, which only
     * another tool can have written, reads as not holding the GET_LOCK
     * there.  The last is the limit, NULL (1) on a table with no lim
     * column (a table of dlock 0.2 or of its-mieger not yet altered). */
    X(used[0], dlock__text_mysql_used_mysql, V("_", ""));
    X(used[1], dlock__text_mysql_used_mariadb, V("_", ""));
    for (int m = 0; m < 2; m++)
        for (int l = 0; l < 2; l++)
            X(q->columns[m][l], dlock__text_mysql_columns,
              V("used", used[m], "lim", lim[l]));
    X(q->check_locks, dlock__text_mysql_check_locks, V("_", ""));
    X(q->check_fences, dlock__text_mysql_check_fences, V("_", ""));
    X(q->check_seq, dlock__text_mysql_check_seq, V("_", ""));
    X(q->check_lim, dlock__text_mysql_check_lim, V("_", ""));
    X(q->check_fseq, dlock__text_mysql_check_fseq, V("_", ""));
    X(q->name_charset, dlock__text_mysql_name_charset, V("_", ""));
    X(q->table_engine, dlock__text_mysql_table_engine, V("_", ""));
    X(q->count_procs, dlock__text_mysql_count_procs, V("_", ""));
    X(q->alter_add_lim, dlock__text_mysql_alter_add_lim, V("_", ""));
    X(q->alter_add_columns, dlock__text_mysql_alter_add_columns, V("_", ""));
    X(q->alter_name_utf8mb4, dlock__text_mysql_alter_name_utf8mb4, V("_", ""));
    X(q->alter_engine_myisam, dlock__text_mysql_alter_engine_myisam,
      V("_", ""));
    /* The seed's GET_LOCK: named after the table (its first 50
     * characters: a name of letters, digits, '_' and '$'). */
    snprintf(seed_key, sizeof(seed_key), "%.50s", ms->raw_table);
    X(q->fseq_seeded, dlock__text_mysql_fseq_seeded, V("_", ""));
    X(q->fseq_seed_lock, dlock__text_mysql_fseq_seed_lock,
      V("seed_key", seed_key));
    X(q->fseq_seed_unlock, dlock__text_mysql_fseq_seed_unlock,
      V("seed_key", seed_key));
    X(and_seq, dlock__text_mysql_fseq_seed_and_seq, V("_", ""));
    X(q->fseq_seed_value[0], dlock__text_mysql_fseq_seed_value,
      V("and_seq", ""));
    X(q->fseq_seed_value[1], dlock__text_mysql_fseq_seed_value,
      V("and_seq", and_seq));
    X(q->fseq_setval, dlock__text_mysql_fseq_setval, V("n", "?"));
    X(q->fseq_record_seed, dlock__text_mysql_fseq_record_seed, V("_", ""));
    X(q->fseq_mark_seeded, dlock__text_mysql_fseq_mark_seeded, V("_", ""));
    X(q->fseq_next, dlock__text_mysql_fseq_next, V("_", ""));
    X(q->seq_raise, dlock__text_mysql_seq_raise, V("_", ""));
    /* A held lock's own row: in session mode, its GET_LOCK too. */
    if (ms->lease_mode)
        own_session = strdup("");
    else
        X(own_session, dlock__text_mysql_own_session, V("_", ""));
    if (own_session == NULL)
        goto fail;
    X(q->own, dlock__text_mysql_own, V("own_session", own_session));
    X(q->extend, dlock__text_mysql_extend, V("own", q->own));
    X(q->ttl_left, dlock__text_mysql_ttl_left, V("own", q->own));
    X(q->release, dlock__text_mysql_release, V("own", q->own));
    X(q->release_fast, dlock__text_mysql_release_fast, V("_", ""));
    X(q->release_call, dlock__text_mysql_release_call, V("_", ""));
    X(q->release_getlock, dlock__text_mysql_release_getlock, V("_", ""));
    X(q->release_getlock_if_ours, dlock__text_mysql_release_getlock_if_ours,
      V("_", ""));
    X(q->delete_own_row, dlock__text_mysql_delete_own_row, V("_", ""));
    for (int m = 0; m < 2; m++)
        for (int l = 0; l < 2; l++)
            X(q->read_row[m][l], dlock__text_mysql_read_row,
              V("columns", q->columns[m][l]));
    for (int m = 0; m < 2; m++)
        for (int l = 0; l < 2; l++)
            X(q->read_contended[m][l], dlock__text_mysql_read_contended,
              V("columns", q->columns[m][l]));
    X(q->take_over[0], dlock__text_mysql_take_over,
      V("owner_is", "owner IS NULL"));
    X(q->take_over[1], dlock__text_mysql_take_over, V("owner_is", "owner = ?"));
    X(q->used_by, dlock__text_mysql_used_by, V("_", ""));
    X(q->session_of, dlock__text_mysql_session_of, V("_", ""));
    X(q->kill, dlock__text_mysql_kill, V("_", ""));
    X(q->get_lock[0], dlock__text_mysql_get_lock, V("wait", "?"));
    X(q->get_lock[1], dlock__text_mysql_get_lock, V("wait", "?"));
    X(q->call_acquire, dlock__text_mysql_call_acquire, V("_", ""));
    X(q->fast_acquire[0], dlock__text_mysql_fast_acquire,
      V("full_col", "", "full_val", ""));
    X(q->fast_acquire[1], dlock__text_mysql_fast_acquire,
      V("full_col", ", full_name", "full_val", ", ?"));
    X(q->insert_row[0], dlock__text_mysql_insert_row,
      V("sem_cols", "", "sem_vals", ""));
    X(q->insert_row[1], dlock__text_mysql_insert_row,
      V("sem_cols", ", lim, slot", "sem_vals", ", ?, ?"));
    X(q->delete_by_owner, dlock__text_mysql_delete_by_owner, V("_", ""));
    X(q->fence_record, dlock__text_mysql_fence_record, V("_", ""));
    X(q->fseq_raise, dlock__text_mysql_fseq_setval, V("n", "?"));
    X(q->set_fence, dlock__text_mysql_set_fence, V("_", ""));
    X(q->sem_live, dlock__text_mysql_sem_live, V("_", ""));
    X(q->sem_delete_head, dlock__text_mysql_sem_delete_head, V("_", ""));
    snprintf(ttl_s, sizeof(ttl_s), "%lld", DLOCK_TTL_MAX_MS / 1000);
    snprintf(ttl_ms, sizeof(ttl_ms), "%lld", DLOCK_TTL_MAX_MS);
    X(q->sem_insert_head, dlock__text_mysql_sem_insert_head,
      V("ttl_max_s", ttl_s, "ttl_max_ms", ttl_ms));
    X(q->sem_delete_bad_head, dlock__text_mysql_sem_delete_bad_head,
      V("_", ""));
    X(q->sem_bump_head, dlock__text_mysql_sem_bump_head, V("_", ""));
    for (int m = 0; m < 2; m++)
        for (int l = 0; l < 2; l++)
            X(q->sem_rows[m][l], dlock__text_mysql_sem_rows,
              V("columns", q->columns[m][l]));
    X(q->waiter_fence_off, dlock__text_mysql_waiter_fence_off, V("_", ""));
    X(q->waiter_drop, dlock__text_mysql_waiter_drop, V("_", ""));
    X(q->waiter_tidy, dlock__text_mysql_waiter_tidy, V("_", ""));
    X(q->waiter_renew, dlock__text_mysql_waiter_renew, V("_", ""));
    X(q->waiter_insert, dlock__text_mysql_waiter_insert, V("_", ""));
    X(q->waiter_confirm, dlock__text_mysql_waiter_confirm, V("_", ""));
    X(q->waiter_claim[0], dlock__text_mysql_waiter_claim, V("full_set", ""));
    X(q->waiter_claim[1], dlock__text_mysql_waiter_claim,
      V("full_set", ", full_name = ?"));
    X(q->kill_query, dlock__text_mysql_kill_query, V("_", ""));
    X(q->lease_get_lock[0], dlock__text_mysql_lease_get_lock_mysql, V("_", ""));
    X(q->lease_get_lock[1], dlock__text_mysql_lease_get_lock_mariadb,
      V("_", ""));
    X(seq_fence, dlock__text_mysql_status_seq_fence, V("_", ""));
    for (int m = 0; m < 2; m++)
        for (int l = 0; l < 2; l++) {
            X(q->status[0][m][l], dlock__text_mysql_status,
              V("columns", q->columns[m][l], "seq_fence", "0"));
            X(q->status[1][m][l], dlock__text_mysql_status,
              V("columns", q->columns[m][l], "seq_fence", seq_fence));
            X(q->list[m][l], dlock__text_mysql_list,
              V("columns", q->columns[m][l]));
        }
    X(q->force_delete, dlock__text_mysql_force_delete, V("_", ""));
    /* The batch's join and WHERE are filled per batch (renew.c). */
    X(q->renew, dlock__text_mysql_renew,
      V("join", "{{join}}", "where", "{{where}}"));
    /* Run records: the run results' values and how many are kept. */
    snprintf(running, sizeof(running), "%d", DLOCK_RUN_RUNNING);
    snprintf(abandoned, sizeof(abandoned), "%d", DLOCK_RUN_ABANDONED);
    snprintf(kept, sizeof(kept), "%d", DLOCK_RUNS_KEPT);
    snprintf(kept_max, sizeof(kept_max), "%d", DLOCK_RUNS_KEPT_MAX);
    X(run_cols[0], dlock__text_mysql_run_cols, V("p", ""));
    X(run_cols[1], dlock__text_mysql_run_cols, V("p", "r."));
    X(q->run_begin, dlock__text_mysql_run_begin,
      V("run_cols", run_cols[1], "running", running, "abandoned", abandoned,
        "kept", kept, "kept_max", kept_max, "own", q->own, "for_update",
        ms->lease_mode ? " FOR UPDATE" : ""));
    X(run_ok, dlock__text_mysql_run_end_ok, V("_", ""));
    X(q->run_end[0], dlock__text_mysql_run_end, V("ok", ""));
    X(q->run_end[1], dlock__text_mysql_run_end, V("ok", run_ok));
    /* On the lock's own session, its idle bound around them (runs.c). */
    X(q->run_begin_held, dlock__text_mysql_held_tx,
      V("set_idle", q->set_idle, "tx", q->run_begin));
    for (int i = 0; i < 2; i++)
        X(q->run_end_held[i], dlock__text_mysql_held_tx,
          V("set_idle", q->set_idle, "tx", q->run_end[i]));
    X(q->value_set, dlock__text_mysql_value_set,
      V("own", q->own, "for_update", ms->lease_mode ? " FOR UPDATE" : ""));
    X(q->value_set_held, dlock__text_mysql_held_tx,
      V("set_idle", q->set_idle, "tx", q->value_set));
    X(q->value_get, dlock__text_mysql_value_get, V("_", ""));
    X(q->susp_put, dlock__text_mysql_susp_put, V("_", ""));
    X(q->susp_delete, dlock__text_mysql_susp_delete, V("_", ""));
    X(q->susp_get, dlock__text_mysql_susp_get, V("_", ""));
    X(q->susp_all, dlock__text_mysql_susp_all, V("_", ""));
    X(q->run_keep_put, dlock__text_mysql_run_keep_put, V("_", ""));
    X(q->run_keep_get, dlock__text_mysql_run_keep_get, V("_", ""));
    X(q->run_history, dlock__text_mysql_run_history,
      V("run_cols", run_cols[0]));
    X(run_like, dlock__text_mysql_run_last_like, V("_", ""));
    X(q->run_last[0], dlock__text_mysql_run_last,
      V("run_cols", run_cols[1], "like", ""));
    X(q->run_last[1], dlock__text_mysql_run_last,
      V("run_cols", run_cols[1], "like", run_like));
    X(q->renew_join, dlock__text_mysql_renew_join, V("rows", "{{rows}}"));
    /* Session mode's parts: each lock's key and session. */
    X(part[0], dlock__text_mysql_renew_row_first_session, V("_", ""));
    X(part[1], dlock__text_mysql_renew_row_next_session, V("_", ""));
    X(part[2], dlock__text_mysql_renew_where_session, V("_", ""));
    X(q->renew_row[0], dlock__text_mysql_renew_row_first,
      V("session", ms->lease_mode ? "" : part[0]));
    X(q->renew_row[1], dlock__text_mysql_renew_row_next,
      V("session", ms->lease_mode ? "" : part[1]));
    X(q->renew_where, dlock__text_mysql_renew_where,
      V("session", ms->lease_mode ? "" : part[2], "keys", "{{keys}}"));
    X(q->renew_key[0], dlock__text_mysql_renew_key_first, V("_", ""));
    X(q->renew_key[1], dlock__text_mysql_renew_key_next, V("_", ""));
    X(q->force_delete_slots, dlock__text_mysql_force_delete_slots, V("_", ""));
    X(q->force_delete_waiter, dlock__text_mysql_force_delete_waiter,
      V("_", ""));
    goto out;
fail:
    /* A missing {{key}} (a bug the golden test finds first) or memory. */
    rc = strncmp(dlock_errmsg(), "template", 8) == 0 ? DLOCK_EINVAL
                                                     : DLOCK_ENOMEM;
    dlock__my_sql_free(ms);
out:
    for (int i = 0; i < 3; i++)
        free(part[i]);
    for (int i = 0; i < 5; i++)
        free(frag[i]);
    free(run_cols[0]);
    free(run_cols[1]);
    free(run_ok);
    free(run_like);
    free(seq_fence);
    free(own_session);
    free(and_seq);
    free(idle_now);
    free(fence_p_key);
    free(used[0]);
    free(used[1]);
    return rc;
}

/* Every text of struct my_sql, with its golden file's name. */
static const struct {
    const char *file;
    size_t off;
} texts[] = {
#define T(f)                                                                   \
    {                                                                          \
#f ".sql", offsetof(struct my_sql, f)                                  \
    }
    T(create_locks),
    T(create_fences),
    T(create_seq),
    T(create_fseq),
    T(create_boot),
    T(create_runs),
    T(create_runsum),
    T(create_leader),
    T(create_susp),
    T(create_rkeep),
    T(create_proc_acq),
    T(create_proc_rel),
    T(fence_seq),
    T(fence_fences),
    T(fence_durable),
    T(idle_set),
    T(set_idle),
    T(init_session),
    T(init_isolation),
    T(heap_big),
    T(heap_default),
    T(conn_info),
    T(probe),
    T(tx_begin),
    T(tx_commit),
    T(tx_rollback),
    T(check_locks),
    T(check_fences),
    T(check_seq),
    T(check_lim),
    T(check_fseq),
    T(name_charset),
    T(table_engine),
    T(count_procs),
    T(alter_add_lim),
    T(alter_add_columns),
    T(alter_name_utf8mb4),
    T(alter_engine_myisam),
    T(fseq_seeded),
    T(fseq_seed_lock),
    T(fseq_seed_unlock),
    T(fseq_setval),
    T(fseq_record_seed),
    T(fseq_mark_seeded),
    T(fseq_next),
    T(seq_raise),
    T(own),
    T(extend),
    T(ttl_left),
    T(release),
    T(release_fast),
    T(release_call),
    T(release_getlock),
    T(release_getlock_if_ours),
    T(delete_own_row),
    T(used_by),
    T(session_of),
    T(kill),
    T(call_acquire),
    T(delete_by_owner),
    T(fence_record),
    T(fseq_raise),
    T(set_fence),
    T(sem_live),
    T(sem_delete_head),
    T(sem_insert_head),
    T(sem_delete_bad_head),
    T(sem_bump_head),
    T(waiter_fence_off),
    T(waiter_drop),
    T(waiter_tidy),
    T(waiter_renew),
    T(waiter_insert),
    T(waiter_confirm),
    T(kill_query),
    T(force_delete),
    T(force_delete_slots),
    T(force_delete_waiter),
    T(renew),
    T(renew_join),
    T(renew_where),
    T(run_begin),
    T(run_begin_held),
    T(run_history),
    T(run_keep_put),
    T(run_keep_get),
    T(value_set),
    T(value_set_held),
    T(value_get),
    T(susp_put),
    T(susp_delete),
    T(susp_get),
    T(susp_all),
#define T2(f, i, n)                                                            \
    {                                                                          \
#f n ".sql", offsetof(struct my_sql, f[i])                             \
    }
    T2(take_over, 0, "_owner_null"),
    T2(take_over, 1, ""),
    T2(get_lock, 0, "_mysql"),
    T2(get_lock, 1, "_mariadb"),
    T2(fast_acquire, 0, ""),
    T2(fast_acquire, 1, "_full_name"),
    T2(waiter_claim, 0, ""),
    T2(waiter_claim, 1, "_full_name"),
    T2(insert_row, 0, ""),
    T2(insert_row, 1, "_slot"),
    T2(lease_get_lock, 0, "_mysql"),
    T2(lease_get_lock, 1, "_mariadb"),
    T2(renew_row, 0, "_first"),
    T2(renew_row, 1, "_next"),
    T2(renew_key, 0, "_first"),
    T2(renew_key, 1, "_next"),
    T2(run_end, 0, ""),
    T2(run_end, 1, "_ok"),
    T2(run_end_held, 0, ""),
    T2(run_end_held, 1, "_ok"),
    T2(run_last, 0, ""),
    T2(run_last, 1, "_prefix"),
#undef T2
#define T4(f, n) /* [mariadb][have_lim] */                                     \
    {n "_mysql_nolim.sql", offsetof(struct my_sql, f[0][0])},                  \
        {n "_mysql.sql", offsetof(struct my_sql, f[0][1])},                    \
        {n "_mariadb_nolim.sql", offsetof(struct my_sql, f[1][0])},            \
    {                                                                          \
        n "_mariadb.sql", offsetof(struct my_sql, f[1][1])                     \
    }
    T4(list, "list"),
    T4(status[0], "status"),
    T4(status[1], "status_seq"),
    T4(sem_rows, "sem_rows"),
    T4(read_row, "read_row"),
    T4(read_contended, "read_contended"),
    T4(columns, "columns"),
#undef T4
    {"fseq_seed_value.sql", offsetof(struct my_sql, fseq_seed_value[0])},
    {"fseq_seed_value_seq.sql", offsetof(struct my_sql, fseq_seed_value[1])},
#undef T
};

void dlock__my_sql_free(struct my_store *ms)
{
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        char **p = (char **)((char *)&ms->sql + texts[i].off);

        free(*p);
        *p = NULL;
    }
}

/* Text i of the table (its file's name in *file), NULL past the end:
 * for the golden test's hook (golden.c). */
const char *dlock__my_sql_nth(const struct my_store *ms, size_t i,
                              const char **file)
{
    if (i >= sizeof(texts) / sizeof(texts[0]))
        return NULL;
    *file = texts[i].file;
    return *(char *const *)((const char *)&ms->sql + texts[i].off);
}
