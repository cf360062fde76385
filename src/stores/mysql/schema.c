/*
 * schema.c - the MySQL store's tables: their DDL, checking and creating
 * them, the columns read from a row of the lock table, and the packets of
 * the run records, leader values and suspensions (dlock__my_tx_tables():
 * one transaction, its tables created when missing).
 */
#include <mysqld_error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "my.h"

/* --- DDL ------------------------------------------------------------------
 *
 * The statements are sql/create_*.sql (ms->sql, expanded at open).  The
 * lock table's engine: see ddl_engine() in sql.c.  The fences (MariaDB
 * 10.3 and later) are one SEQUENCE, NAME_fseq, seeded again after every
 * server start before its first use: NAME_boot (MEMORY: empty after any
 * restart) holds a row once it is. */

/* The fence sequence and its boot table, statements separated by sep. */
static void ddl_fseq(struct sb *b, const struct my_store *ms, const char *sep)
{
    dlock__my_sb_add(b, "%s%s%s", ms->sql.create_fseq, sep,
                     ms->sql.create_boot);
}

/* Seed NAME_fseq above every fence handed out before: its own value
 * (a clean restart), the durable fences (lease mode's, and the seeds
 * recorded in the '' row) and dlock 0.2's per-name counters, and the
 * server's clock in microseconds (what a crash may have taken back of
 * the sequence itself: every fence was at most the clock of its moment
 * plus the fences handed out since the last seed, fewer than one per
 * microsecond).  Under a GET_LOCK of its own, once per server start. */
/* The seed lock is held by another session: say which, as the server
 * reports it.  A GET_LOCK key, so any login of the server may hold it
 * (docs/security.md, "SQL session mode"). */
static int seed_held(struct my_store *ms, struct conn *c, struct sb *b)
{
    char key[80], user[128] = "", addr[128] = "", who[300] = "";
    long long id = 0;
    int found = 0;

    /* The key as sql/fseq_seed_lock.sql spells it. */
    snprintf(key, sizeof(key), "dlock-seed:%.50s", ms->raw_table);
    dlock__my_sb_reset(b);
    MY_BIND(b, c, ms->sql.used_by, MV_Z(key));
    if (dlock__my_run_int(ms, c, b, &id, &found, "seeding the fences") ==
            DLOCK_OK &&
        id > 0)
        (void)dlock__my_session_of(ms, c, (unsigned long long)id, user,
                                   sizeof(user), addr, sizeof(addr));
    if (user[0] != '\0')
        snprintf(who, sizeof(who), ", user '%s'%s%s", user,
                 addr[0] ? " from " : "", addr);
    return dlock__seterr(DLOCK_ESTORE,
                         "seeding the fences on %s: another client holds "
                         "the seed lock '%s' (session %lld%s), a GET_LOCK "
                         "key any login of the server may take: it is "
                         "taken once after each server start, and no fence "
                         "is drawn until that session lets go",
                         ms->base.url, key, id, who);
}

int dlock__my_fseq_seed(struct my_store *ms, struct conn *c)
{
    struct sb b = {0};
    long long v = 0;
    int found = 0, got = 0, rc;

    if (c->seeded)
        return DLOCK_OK;
    /* Seeded already (every connection but the first after a start). */
    dlock__my_sb_add(&b, "%s", ms->sql.fseq_seeded);
    rc = dlock__my_run_int(ms, c, &b, &v, &found, "seeding the fences");
    if (rc == DLOCK_OK && v > 0) {
        c->seeded = 1;
        dlock__my_sb_free(&b);
        return DLOCK_OK;
    }
    if (rc != DLOCK_OK) {
        dlock__my_sb_free(&b);
        return rc;
    }
    dlock__my_sb_reset(&b);
    MY_BIND(&b, c, ms->sql.fseq_seed_lock,
            MV_I(ms->timeout_ms / 1000 > 0 ? ms->timeout_ms / 1000 : 1));
    rc = dlock__my_run_int(ms, c, &b, &v, &found, "seeding the fences");
    got = rc == DLOCK_OK && found && v == 1;
    if (rc == DLOCK_OK && !got)
        rc = seed_held(ms, c, &b);
    if (rc == DLOCK_OK) {
        dlock__my_sb_reset(&b);
        dlock__my_sb_add(&b, "%s", ms->sql.fseq_seeded);
        rc = dlock__my_run_int(ms, c, &b, &v, &found, "seeding the fences");
    }
    if (rc == DLOCK_OK && v == 0) {
        dlock__my_sb_reset(&b);
        dlock__my_sb_add(&b, "%s", ms->sql.fseq_seed_value[ms->have_seq != 0]);
        rc = dlock__my_run_int(ms, c, &b, &v, &found, "seeding the fences");
        if (rc == DLOCK_OK) {
            dlock__my_sb_reset(&b);
            MY_BIND(&b, c, ms->sql.fseq_setval, MV_I(v));
            rc = dlock__my_run(ms, c, &b, NULL, "seeding the fences");
        }
        if (rc == DLOCK_OK) {
            /* Durable (InnoDB, autocommit): a later seed starts above
             * this one even if the clock is set back. */
            dlock__my_sb_reset(&b);
            MY_BIND(&b, c, ms->sql.fseq_record_seed, MV_I(v), MV_I(v));
            rc = dlock__my_run(ms, c, &b, NULL, "seeding the fences");
        }
        if (rc == DLOCK_OK) {
            dlock__my_sb_reset(&b);
            dlock__my_sb_add(&b, "%s", ms->sql.fseq_mark_seeded);
            rc = dlock__my_run(ms, c, &b, NULL, "seeding the fences");
        }
    }
    if (rc == DLOCK_OK)
        c->seeded = 1;
    if (got && c->db != NULL) {
        dlock__my_sb_reset(&b);
        dlock__my_sb_add(&b, "%s", ms->sql.fseq_seed_unlock);
        if (!b.oom)
            (void)dlock__my_query(c, b.p, b.len);
    }
    dlock__my_sb_free(&b);
    return rc;
}

int dlock__my_fseq_next(struct my_store *ms, struct conn *c, uint64_t *out)
{
    struct sb b = {0};
    long long v = 0;
    int found = 0, rc = DLOCK_OK;

    rc = dlock__my_fseq_seed(ms, c);
    if (rc == DLOCK_OK) {
        dlock__my_sb_add(&b, "%s", ms->sql.fseq_next);
        rc = dlock__my_run_int(ms, c, &b, &v, &found, "taking a fence");
    }
    if (rc == DLOCK_OK && found && v > 0)
        *out = (uint64_t)v;
    else if (rc == DLOCK_OK)
        rc = dlock__seterr(DLOCK_ESTORE,
                           "taking a fence on %s: the server returned no "
                           "value",
                           ms->base.url);
    dlock__my_sb_free(&b);
    return rc;
}

/* The next fence of a name: above the name's counter and at least the
 * server's clock in microseconds, so that a counter a crash took back, or
 * lost, is overtaken at once.  Lease mode (durable) also reads session
 * mode's counter, and passes each fence it hands out on to it
 * (dlock__my_sb_seq_raise): so session mode's counter is never below a
 * fence of either mode, and session mode reads only its own (MyISAM)
 * counter, not the InnoDB one, in its one-CALL acquire.  The caller takes
 * it after its row is in, as the holder, so that fences follow the order
 * in which holders held the lock whatever excluded them (GET_LOCK, the
 * row, its-mieger's library). */
void dlock__my_sb_fence(struct sb *b, struct my_store *ms, struct conn *c,
                        const char *key, size_t key_len, int durable)
{
    const char *mine = durable || !ms->have_seq ? ms->fences : ms->seq;
    struct my_val k = MV_S(key, key_len);

    if (mine == ms->fences && ms->have_seq)
        MY_BIND(b, c, ms->sql.fence_durable, k, k, k);
    else
        MY_BIND(b, c,
                mine == ms->fences ? ms->sql.fence_fences : ms->sql.fence_seq,
                k);
}

/* Lease mode, after taking fence from the durable counter: raise session
 * mode's counter to it (MyISAM: at once, whatever the transaction does
 * next; a fence a rollback gives up leaves a gap, never a step back). */
void dlock__my_sb_seq_raise(struct sb *b, struct my_store *ms, struct conn *c,
                            const char *key, size_t key_len, uint64_t fence)
{
    MY_BIND(b, c, ms->sql.seq_raise, MV_S(key, key_len), MV_U(fence),
            MV_U(fence));
}

/* The session-mode procedures (sql/create_proc_*.sql): an uncontended
 * acquire is one CALL, and so is a release (the server counts a CALL as
 * one statement, whatever runs inside).  Each followed by sep. */
static void ddl_procs(struct sb *b, struct my_store *ms, const char *sep)
{
    dlock__my_sb_add(b, "%s%s%s%s", ms->sql.create_proc_acq, sep,
                     ms->sql.create_proc_rel, sep);
}

/* text, every line of it commented out ("-- "), then ";\n". */
static void commented(struct sb *b, const char *text)
{
    for (const char *p = text; *p != '\0';) {
        const char *nl = strchr(p, '\n');
        int n = nl != NULL ? (int)(nl - p) : (int)strlen(p);

        dlock__my_sb_add(b, "-- %.*s%s", n, p, nl != NULL ? "\n" : "");
        p += n + (nl != NULL);
    }
    dlock__my_sb_add(b, ";\n");
}

/* The ALTERs for a DBA (sql/alter_*.sql), commented out. */
static void ddl_alter(struct sb *b, const struct my_store *ms)
{
    dlock__my_sb_add(
        b, "-- For a table made by its-mieger/mysql-shared-locks, instead:\n");
    commented(b, ms->sql.alter_add_columns);
    dlock__my_sb_add(
        b, "-- (a table of dlock 0.2: only the last two, which a client that\n"
           "-- may ALTER the table adds by itself; semaphores need them)\n"
           "-- and, as its name column is latin1 (names outside latin1, such\n"
           "-- as Greek, CJK or emoji, are refused until then):\n");
    commented(b, ms->sql.alter_name_utf8mb4);
    dlock__my_sb_add(b, "-- For a session-mode table of dlock 0.1 (InnoDB: a "
                        "durable\n"
                        "-- commit per acquire and per release):\n");
    commented(b, ms->sql.alter_engine_myisam);
}

/* Are the tables there, with our columns? */
static int check_tables(struct my_store *ms, struct conn *c)
{
    struct sb b = {0};
    MYSQL_RES *res;
    int rc;

    dlock__my_sb_add(&b, "%s", ms->sql.check_locks);
    rc = dlock__my_run(ms, c, &b, &res, "checking the lock table");
    mysql_free_result(res);
    if (rc == DLOCK_OK) {
        dlock__my_sb_reset(&b);
        dlock__my_sb_add(&b, "%s", ms->sql.check_fences);
        rc = dlock__my_run(ms, c, &b, &res, "checking the fence table");
        mysql_free_result(res);
    }
    if (rc == DLOCK_OK) {
        MYSQL_ROW row;

        /* For messages, and whether the procedures fit (a name it cannot
         * store is refused by the server): best effort. */
        dlock__my_sb_reset(&b);
        MY_BIND(&b, c, ms->sql.name_charset, MV_Z(ms->raw_table));
        if (dlock__my_run(ms, c, &b, &res,
                          "reading the name column's charset") == DLOCK_OK &&
            res != NULL && (row = mysql_fetch_row(res)) != NULL &&
            row[0] != NULL)
            dlock__strlcpy(ms->name_charset, row[0], sizeof(ms->name_charset));
        mysql_free_result(res);
        dlock__my_sb_reset(&b);
        MY_BIND(&b, c, ms->sql.table_engine, MV_Z(ms->raw_table));
        ms->engine[0] = '\0';
        if (dlock__my_run(ms, c, &b, &res, "reading the table's engine") ==
                DLOCK_OK &&
            res != NULL && (row = mysql_fetch_row(res)) != NULL &&
            row[0] != NULL)
            dlock__strlcpy(ms->engine, row[0], sizeof(ms->engine));
        mysql_free_result(res);
        dlock__clearerr();
        /* Lease mode keeps a lock only in its row: on a table that forgets
         * its rows when the server restarts, a holder would go on while
         * another took its name. */
        if (ms->lease_mode && strcasecmp(ms->engine, "MEMORY") == 0)
            rc = dlock__seterr(
                DLOCK_EINVAL,
                "?mode=lease on %s: the lock table %s is a MEMORY table "
                "(session mode creates it so), whose rows are gone when "
                "the server restarts, and lease mode's locks are only "
                "rows: give lease mode a table of its own (?table=NAME; "
                "dlock creates it InnoDB), or make this one InnoDB",
                ms->base.url, ms->table);
    }
    dlock__my_sb_free(&b);
    return rc;
}

/* A CREATE of the WHAT tables T1 and T2 (NULL: the one table T1) failed: a user
 * without the right is told to have a DBA run `dlock init --print`; anything
 * else is the server's error. */
static int ddl_failed(struct my_store *ms, struct conn *c, const char *what,
                      const char *t1, const char *t2)
{
    unsigned e = mysql_errno(c->db);
    char doing[48];

    if ((e == ER_TABLEACCESS_DENIED_ERROR || e == ER_DBACCESS_DENIED_ERROR) &&
        t2 == NULL)
        return dlock__seterr(DLOCK_ESTORE,
                             "the %s %s is missing in %s and this user may "
                             "not create it: ask a DBA to run the DDL of "
                             "`dlock init --print` (%s)",
                             what, t1, ms->base.url, mysql_error(c->db));
    if (e == ER_TABLEACCESS_DENIED_ERROR || e == ER_DBACCESS_DENIED_ERROR)
        return dlock__seterr(DLOCK_ESTORE,
                             "the %s %s and %s are missing in %s and this "
                             "user may not create them: ask a DBA to run "
                             "the DDL of `dlock init --print` (%s)",
                             what, t1, t2, ms->base.url, mysql_error(c->db));
    snprintf(doing, sizeof(doing), "creating the %s", what);
    return dlock__my_db_err(ms, c, doing);
}

static int create_tables(struct my_store *ms, struct conn *c)
{
    struct sb b = {0};
    int rc = DLOCK_OK;

    for (int i = 0; i < 2 && rc == DLOCK_OK; i++) {
        dlock__my_sb_reset(&b);
        dlock__my_sb_add(&b, "%s",
                         i == 0 ? ms->sql.create_locks : ms->sql.create_fences);
        if (b.oom) {
            rc = dlock__enomem();
            break;
        }
        if (i == 0 && !ms->lease_mode)
            (void)dlock__my_query(c, ms->sql.heap_big,
                                  strlen(ms->sql.heap_big));
        if (dlock__my_query(c, b.p, b.len) == 0) {
            if (i == 0 && !ms->lease_mode)
                (void)dlock__my_query(c, ms->sql.heap_default,
                                      strlen(ms->sql.heap_default));
            continue;
        }
        rc = ddl_failed(ms, c, "lock tables", ms->table, ms->fences);
    }
    dlock__my_sb_free(&b);
    return rc;
}

/* What makes session mode fast, none of it required (a user who may not
 * create it, or tables of dlock 0.1 a DBA made, work without): NAME_seq,
 * then the procedures.  Created if missing and allowed, then looked for.
 * The procedures are used only on a utf8mb4 name column: on another
 * one, a name it cannot store takes the checks of the plain path. */
static void ensure_extras(struct my_store *ms, struct conn *c)
{
    struct sb b = {0};
    MYSQL_RES *res;

    /* Semaphores' columns, added after 0.2 (nullable: rows of older
     * clients and of its-mieger's library are limit-1 holders). */
    for (int i = 0; i < 2 && !ms->have_lim; i++) {
        dlock__my_sb_reset(&b);
        dlock__my_sb_add(&b, "%s", ms->sql.check_lim);
        ms->have_lim = dlock__my_run(ms, c, &b, &res, "lim") == DLOCK_OK;
        mysql_free_result(res);
        if (ms->have_lim || i == 1)
            break;
        dlock__my_sb_reset(&b);
        dlock__my_sb_add(&b, "%s", ms->sql.alter_add_lim);
        /* No ALTER right, or another client added them meanwhile. */
        if (!b.oom)
            (void)dlock__my_query(c, b.p, b.len);
    }
    dlock__my_sb_reset(&b);

    dlock__my_sb_add(&b, "%s", ms->sql.create_seq);
    if (!b.oom)
        (void)dlock__my_query(c, b.p, b.len);
    dlock__my_sb_reset(&b);
    dlock__my_sb_add(&b, "%s", ms->sql.check_seq);
    ms->have_seq = dlock__my_run(ms, c, &b, &res, "seq") == DLOCK_OK;
    mysql_free_result(res);
    /* The fence sequence (MariaDB 10.3+; MySQL has no SEQUENCE), on a
     * MEMORY lock table only (what session mode creates).  Every client
     * of a table takes its fences the same way, decided by the table's
     * engine: a MyISAM or InnoDB table (its-mieger's, dlock 0.2's, lease
     * mode's) keeps the per-name counters, and its clients the
     * procedures or the plain statements.  Not INSERT ... SELECT there:
     * MyISAM syncs its data and index files at the end of every
     * INSERT ... SELECT (two fsyncs per acquire; a plain INSERT ...
     * VALUES none). */
    ms->have_fseq = 0;
    ms->fast = 0;
    if (ms->mariadb && strcasecmp(ms->engine, "MEMORY") == 0) {
        dlock__my_sb_reset(&b);
        ddl_fseq(&b, ms, "\n;;\n");
        for (char *p = b.oom ? NULL : b.p; p != NULL && *p != '\0';) {
            char *end = strstr(p, "\n;;\n");
            size_t n = end != NULL ? (size_t)(end - p) : strlen(p);

            (void)dlock__my_query(c, p, n); /* no CREATE right: below */
            p = end != NULL ? end + 4 : NULL;
        }
        dlock__my_sb_reset(&b);
        dlock__my_sb_add(&b, "%s", ms->sql.check_fseq);
        {
            long long n = 0;
            int found;

            ms->have_fseq =
                dlock__my_run_int(ms, c, &b, &n, &found, "fseq") == DLOCK_OK;
        }
        ms->fast = ms->have_fseq && !ms->lease_mode &&
                   strcmp(ms->name_charset, "utf8mb4") == 0;
    }
    __atomic_store_n(&ms->have_proc, 0, __ATOMIC_RELAXED);
    if (ms->lease_mode || !ms->have_seq || ms->have_fseq ||
        strcmp(ms->name_charset, "utf8mb4") != 0)
        goto out;
    dlock__my_sb_reset(&b);
    ddl_procs(&b, ms, "\n;;\n");
    for (char *p = b.oom ? NULL : b.p; p != NULL && *p != '\0';) {
        char *end = strstr(p, "\n;;\n");
        size_t n = end != NULL ? (size_t)(end - p) : strlen(p);

        /* ER_SP_ALREADY_EXISTS, or no CREATE ROUTINE: looked for below. */
        (void)dlock__my_query(c, p, n);
        p = end != NULL ? end + 4 : NULL;
    }
    dlock__my_sb_reset(&b);
    /* Their bare names (the quoted identifiers without their quotes). */
    MY_BIND(&b, c, ms->sql.count_procs,
            MV_S(ms->proc_acq + 1, strlen(ms->proc_acq) - 2),
            MV_S(ms->proc_rel + 1, strlen(ms->proc_rel) - 2));
    {
        long long n = 0;
        int found;

        if (dlock__my_run_int(ms, c, &b, &n, &found, "procedures") ==
                DLOCK_OK &&
            found && n == 2)
            __atomic_store_n(&ms->have_proc, 1, __ATOMIC_RELAXED);
    }
out:
    dlock__clearerr();
    dlock__my_sb_free(&b);
}

/* On open: use the tables if they are there (a DBA may have made them for
 * a user without CREATE), else create them. */
int dlock__my_ensure_tables(struct my_store *ms, struct conn *c)
{
    int rc = check_tables(ms, c);

    if (rc != DLOCK_OK && mysql_errno(c->db) == ER_NO_SUCH_TABLE) {
        rc = create_tables(ms, c);
        if (rc == DLOCK_OK)
            rc = check_tables(ms, c);
    }
    if (rc == DLOCK_OK)
        ensure_extras(ms, c);
    return rc;
}

static int init_fn(void *conn, void *arg, int *dead)
{
    struct my_store *ms = arg;
    struct conn *c = conn;
    int rc = create_tables(ms, c);

    if (rc == DLOCK_OK)
        rc = check_tables(ms, c);
    if (rc == DLOCK_OK)
        ensure_extras(ms, c);
    if (rc == DLOCK_OK)
        rc = dlock__my_create_runs(ms, c);
    if (rc == DLOCK_OK)
        rc = dlock__my_create_leader(ms, c);
    if (rc == DLOCK_OK)
        rc = dlock__my_create_susp(ms, c);
    *dead = rc != DLOCK_OK && dlock__my_conn_error(mysql_errno(c->db));
    return rc;
}

/* `dlock init`: create the tables (if missing) and check them. */
int dlock__my_init(struct dlock_store *s)
{
    struct my_store *ms = (struct my_store *)s;

    return dlock__pool_run(&ms->pool, init_fn, ms);
}

static int valid_table(const char *t)
{
    size_t n = strlen(t);

    if (n == 0 || n > TABLE_MAX - 7)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char ch = t[i];

        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
              (ch >= '0' && ch <= '9') || ch == '_' || ch == '$'))
            return 0;
    }
    return 1;
}

/* Table and quote settings (shared by open and ddl). */
int dlock__my_parse_names(const struct dlock_url *u, struct my_store *ms)
{
    const char *table = dlock__url_param(u, "table");
    const char *quote = dlock__url_param(u, "quote");
    char q = '`';

    if (table == NULL)
        table = "shared_locks";
    if (!valid_table(table))
        return dlock__seterr(DLOCK_EINVAL,
                             "table '%s' in %s: use 1..57 letters, digits, "
                             "'_' or '$'",
                             table, u->redacted);
    if (quote != NULL) {
        if (strcmp(quote, "ansi") == 0)
            q = '"';
        else if (strcmp(quote, "backtick") != 0)
            return dlock__seterr(DLOCK_EINVAL,
                                 "quote=%s in %s: use quote=ansi or "
                                 "quote=backtick",
                                 quote, u->redacted);
    }
    snprintf(ms->raw_table, sizeof(ms->raw_table), "%s", table);
    snprintf(ms->table, sizeof(ms->table), "%c%s%c", q, table, q);
    snprintf(ms->fences, sizeof(ms->fences), "%c%s_fences%c", q, table, q);
    snprintf(ms->seq, sizeof(ms->seq), "%c%s_seq%c", q, table, q);
    snprintf(ms->fseq, sizeof(ms->fseq), "%c%s_fseq%c", q, table, q);
    snprintf(ms->boot, sizeof(ms->boot), "%c%s_boot%c", q, table, q);
    snprintf(ms->proc_acq, sizeof(ms->proc_acq), "%c%s_acq2%c", q, table, q);
    snprintf(ms->proc_rel, sizeof(ms->proc_rel), "%c%s_rel1%c", q, table, q);
    snprintf(ms->index, sizeof(ms->index), "%c%s_ix1%c", q, table, q);
    snprintf(ms->runs, sizeof(ms->runs), "%c%s_runs%c", q, table, q);
    snprintf(ms->runsum, sizeof(ms->runsum), "%c%s_runsum%c", q, table, q);
    snprintf(ms->leader, sizeof(ms->leader), "%c%s_leader%c", q, table, q);
    snprintf(ms->susp, sizeof(ms->susp), "%c%s_susp%c", q, table, q);
    snprintf(ms->rkeep, sizeof(ms->rkeep), "%c%s_rkeep%c", q, table, q);
    return DLOCK_OK;
}

/* The DDL for a DBA: the tables and procedures, and the ALTERs for
 * its-mieger's table and for dlock 0.1's. */
int dlock__my_ddl(char **out, const struct dlock_url *u)
{
    struct my_store *ms = calloc(1, sizeof(*ms));
    const char *mode = dlock__url_param(u, "mode");
    struct sb b = {0};
    int rc;

    if (ms == NULL)
        return dlock__enomem();
    rc = dlock__my_parse_names(u, ms);
    if (rc != DLOCK_OK) {
        free(ms);
        return rc;
    }
    ms->lease_mode = mode != NULL && strcmp(mode, "lease") == 0;
    ms->have_seq = 1;
    ms->timeout_ms = DEFAULT_TIMEOUT_MS;
    rc = dlock__my_sql_build(ms);
    if (rc != DLOCK_OK) {
        free(ms);
        return rc;
    }
    if (!ms->lease_mode)
        dlock__my_sb_add(&b,
                         "-- The MEMORY table's size is capped when it "
                         "is created:\n%s;\n",
                         ms->sql.heap_big);
    dlock__my_sb_add(&b, "%s;\n%s;\n%s", ms->sql.create_locks,
                     ms->sql.create_fences, ms->sql.create_seq);
    dlock__my_sb_add(&b, ";\n-- MariaDB 10.3 and later, on a MEMORY lock "
                         "table: the fences of both modes (a MyISAM or\n"
                         "-- InnoDB lock table, or MySQL: the counters "
                         "above)\n");
    ddl_fseq(&b, ms, ";\n");
    dlock__my_sb_add(&b, ";\n-- Run records (dlock run --once, --once-per, "
                         "dlock history)\n");
    dlock__my_ddl_runs(&b, ms, ";\n");
    dlock__my_sb_add(&b,
                     ";\n-- Leader values (dlock_elect, dlock_proclaim, "
                     "dlock_leader)\n%s;\n",
                     ms->sql.create_leader);
    dlock__my_sb_add(&b,
                     "-- Suspended jobs (dlock_suspend, dlock_resume, "
                     "dlock_suspensions)\n%s;\n",
                     ms->sql.create_susp);
    if (!ms->lease_mode) {
        dlock__my_sb_add(&b, "-- Without the fence sequence (MySQL, "
                             "MariaDB < 10.3), session mode's two\n"
                             "-- statements per lock (optional; needs "
                             "CREATE ROUTINE once, then EXECUTE):\n"
                             "DELIMITER //\n");
        ddl_procs(&b, ms, "\n//\n");
        dlock__my_sb_add(&b, "DELIMITER ;\n");
    }
    ddl_alter(&b, ms);
    dlock__my_sql_free(ms);
    free(ms);
    if (b.oom) {
        dlock__my_sb_free(&b);
        return dlock__enomem();
    }
    *out = b.p;
    return DLOCK_OK;
}

void dlock__my_ddl_runs(struct sb *b, const struct my_store *ms,
                        const char *sep)
{
    dlock__my_sb_add(b, "%s%s%s%s%s", ms->sql.create_runs, sep,
                     ms->sql.create_runsum, sep, ms->sql.create_rkeep);
}

int dlock__my_create_runs(struct my_store *ms, struct conn *c)
{
    struct sb b = {0};
    int rc = DLOCK_OK;

    dlock__my_ddl_runs(&b, ms, "\n;;\n");
    if (b.oom)
        rc = dlock__enomem();
    for (char *p = b.oom ? NULL : b.p; p != NULL && rc == DLOCK_OK;) {
        char *end = strstr(p, "\n;;\n");
        size_t n = end != NULL ? (size_t)(end - p) : strlen(p);
        const char *stmt = p;

        p = end != NULL ? end + 4 : NULL;
        if (dlock__my_query(c, stmt, n) == 0)
            continue;
        {
            char two[2 * (TABLE_MAX + 10) + 3];

            snprintf(two, sizeof(two), "%s, %s", ms->runs, ms->runsum);
            rc = ddl_failed(ms, c, "run record tables", two, ms->rkeep);
        }
    }
    dlock__my_sb_free(&b);
    return rc;
}

int dlock__my_create_leader(struct my_store *ms, struct conn *c)
{
    if (dlock__my_query(c, ms->sql.create_leader,
                        strlen(ms->sql.create_leader)) == 0)
        return DLOCK_OK;
    return ddl_failed(ms, c, "leader value table", ms->leader, NULL);
}

int dlock__my_create_susp(struct my_store *ms, struct conn *c)
{
    if (dlock__my_query(c, ms->sql.create_susp, strlen(ms->sql.create_susp)) ==
        0)
        return DLOCK_OK;
    return ddl_failed(ms, c, "suspension table", ms->susp, NULL);
}

/* --- the run records' and suspensions' packets (runs.c, suspend.c) --- */

#define NO_TABLE (-1000) /* run_tx(): a table is missing */

/* Send b's statements (one transaction, START TRANSACTION ... COMMIT,
 * or a single statement) and read every result: the last result set goes to
 * *res (NULL if none).  On a failure the transaction is rolled back (best
 * effort; an InnoDB deadlock or lock wait timeout: the whole packet goes again)
 * and the failure's code returned, NO_TABLE (no message) when a table is
 * missing. */
static int run_tx(struct my_store *ms, struct conn *c, const struct sb *b,
                  MYSQL_RES **res, const char *what)
{
    *res = NULL;
    if (b->oom)
        return dlock__enomem();
    for (int tries = 0;; tries++) {
        unsigned e;
        int st, rc;

        c->used_ms = dlock__now_ms();
        st = mysql_real_query(c->db, b->p, (unsigned long)b->len);
        while (st == 0) {
            MYSQL_RES *r = mysql_store_result(c->db);

            if (r != NULL) {
                mysql_free_result(*res);
                *res = r;
            } else if (mysql_field_count(c->db) != 0) {
                st = 1; /* the result did not arrive */
                break;
            }
            st = mysql_next_result(c->db);
        }
        if (st == -1)
            return DLOCK_OK;
        mysql_free_result(*res);
        *res = NULL;
        e = mysql_errno(c->db);
        if (dlock__my_conn_error(e))
            return dlock__my_db_err(ms, c, what);
        rc = e == ER_NO_SUCH_TABLE ? NO_TABLE : dlock__my_db_err(ms, c, what);
        if (mysql_query(c->db, ms->sql.tx_rollback) != 0)
            return dlock__my_db_err(ms, c, what);
        if (!ms->lease_mode) {
            /* The packet raised the idle bound first (bind_held) and
             * stopped before setting it back: set it back here, or the
             * connection keeps a lease-long bound, in the pool after
             * this lock (R13). */
            struct sb r = {0};
            int oom, st;

            MY_BIND(&r, c, ms->sql.set_idle, dlock__my_idle_val(ms, 0));
            oom = r.oom;
            st = oom ? -1 : mysql_real_query(c->db, r.p, (unsigned long)r.len);
            dlock__my_sb_free(&r);
            if (st != 0)
                return oom ? dlock__enomem() : dlock__my_db_err(ms, c, what);
        }
        /* ER_DUP_ENTRY: a suspend whose INSERT met another's row
         * (READ COMMITTED takes no gap lock): again, it finds that row. */
        if ((e != ER_LOCK_DEADLOCK && e != ER_LOCK_WAIT_TIMEOUT &&
             e != ER_DUP_ENTRY) ||
            tries >= 20)
            return rc;
        dlock__sleep_ms(tries < 3 ? 0 : 1);
    }
}

int dlock__my_tx_tables(struct my_store *ms, struct conn *c, const struct sb *b,
                        MYSQL_RES **res, int create, int tables,
                        const char *what)
{
    int rc = run_tx(ms, c, b, res, what);

    if (rc != NO_TABLE)
        return rc;
    if (!create)
        return DLOCK_OK;
    rc = DLOCK_OK;
    if (tables == T_LEADER)
        rc = dlock__my_create_leader(ms, c);
    else if (tables == T_RUNS)
        rc = dlock__my_create_runs(ms, c);
    if (rc == DLOCK_OK && tables != T_LEADER)
        rc = dlock__my_create_susp(ms, c);
    if (rc != DLOCK_OK)
        return rc;
    rc = run_tx(ms, c, b, res, what);
    if (rc == NO_TABLE && tables == T_SUSP)
        rc = dlock__seterr(DLOCK_ESTORE,
                           "%s on %s: the suspension table %s is missing "
                           "after creating it",
                           what, ms->base.url, ms->susp);
    else if (rc == NO_TABLE && tables == T_LEADER)
        rc = dlock__seterr(DLOCK_ESTORE,
                           "%s on %s: the leader value table %s is missing "
                           "after creating it",
                           what, ms->base.url, ms->leader);
    else if (rc == NO_TABLE)
        rc = dlock__seterr(DLOCK_ESTORE,
                           "%s on %s: the run record tables %s, %s and %s "
                           "or the suspension table %s are missing after "
                           "creating them",
                           what, ms->base.url, ms->runs, ms->runsum, ms->rkeep,
                           ms->susp);
    return rc;
}
