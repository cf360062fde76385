/*
 * schema.c - the MySQL store's tables: their DDL, checking and creating
 * them, and the columns read from a row of the lock table.
 */
#include <mysqld_error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "my.h"

/* What the holder-reading queries select (see struct holder).  MariaDB
 * refuses IS_USED_LOCK() of a name over 192 bytes (and fails the whole
 * query): such a row, which only another tool can have written, reads as
 * not holding the GET_LOCK there. */
#define COLUMNS(used, lim)                                                     \
    "connection_id, owner, lock_acquired, " EXPIRES " - " NOWMS                \
    ", IFNULL(" used ", 0), created, fence, host, pid, "                       \
    "COALESCE(acquired_ms, created * 1000), COALESCE(full_name, name), " lim
#define MARIA_USED "IF(LENGTH(" ROW_KEY ") > 192, NULL, IS_USED_LOCK(" ROW_KEY "))"
#define MY_USED "IS_USED_LOCK(" ROW_KEY ")"

/* The twelfth column is the holder's limit: NULL (1) where the table has
 * no lim column (a table of dlock 0.2 or of its-mieger not yet altered). */
const char *dlock__my_columns(const struct my_store *ms)
{
    if (ms->have_lim)
        return ms->mariadb ? COLUMNS(MARIA_USED, "lim")
                           : COLUMNS(MY_USED, "lim");
    return ms->mariadb ? COLUMNS(MARIA_USED, "NULL") : COLUMNS(MY_USED, "NULL");
}

void dlock__my_read_holder(MYSQL_ROW row, unsigned long *lens, struct holder *h,
                           int want_name)
{
    memset(h, 0, sizeof(*h));
    h->conn_id = row[0] ? strtoull(row[0], NULL, 10) : 0;
    h->has_owner = row[1] != NULL;
    dlock__strlcpy(h->owner, row[1] ? row[1] : "", sizeof(h->owner));
    h->acquired = row[2] ? atoi(row[2]) : 0;
    h->left = row[3] ? strtoll(row[3], NULL, 10) : 0;
    h->used_by = row[4] ? strtoull(row[4], NULL, 10) : 0;
    h->created = row[5] ? strtoll(row[5], NULL, 10) : 0;
    h->fence = row[6] ? strtoull(row[6], NULL, 10) : 0;
    dlock__strlcpy(h->host, row[7] ? row[7] : "", sizeof(h->host));
    h->pid = row[8] ? strtoll(row[8], NULL, 10) : 0;
    h->since = row[9] ? strtoll(row[9], NULL, 10) : 0;
    h->lim = row[11] ? (unsigned)strtoul(row[11], NULL, 10) : 1;
    if (h->lim == 0)
        h->lim = 1;
    if (want_name && row[10] != NULL) {
        h->name = dlock__strndup(row[10], lens[10]);
        h->name_len = lens[10];
    }
}

/* A row whose holder is gone: lease over, or (GET_LOCK-style rows) the
 * session that took the GET_LOCK no longer holds it. */
int dlock__my_holder_dead(const struct holder *h)
{
    return h->left <= 0 || (h->acquired && h->used_by != h->conn_id);
}

/* --- DDL ------------------------------------------------------------------ */

/* The lock table.  Session mode creates it MEMORY: its rows die with
 * their sessions anyway (a row whose session is gone is tidied by the
 * next acquirer; a server restart ends every session and empties the
 * table), an InnoDB row costs a durable commit (an fsync) per acquire
 * and per release, and a MyISAM row written by INSERT ... SELECT costs
 * far more than a MEMORY one (docs/stores/mysql.md, "Performance").
 * Its size is capped when it is created, by max_heap_table_size: dlock
 * creates it with 1 GiB (about 400,000 rows of 2.5 KiB).
 * Lease mode creates it InnoDB: there the row is all there is of a lock,
 * it must survive anything the server survives, and on Galera only InnoDB
 * tables are replicated.  Either mode works on either engine. */
static void ddl_locks(struct sb *b, const char *t, const char *ix, int lease)
{
    dlock__my_sb_add(
        b,
        "CREATE TABLE IF NOT EXISTS %s (\n"
        "    name          VARCHAR(64) CHARACTER SET utf8mb4 "
        "COLLATE utf8mb4_bin NOT NULL,\n"
        "    connection_id BIGINT NOT NULL,\n"
        "    created       BIGINT NOT NULL,      -- unix seconds\n"
        "    ttl           BIGINT NOT NULL,      -- seconds\n"
        "    lock_acquired TINYINT(1) NOT NULL,\n"
        "    owner         CHAR(32) CHARACTER SET ascii NULL,\n"
        "    fence         BIGINT UNSIGNED NULL,\n"
        "    expires_ms    BIGINT NULL,          -- unix ms\n"
        "    acquired_ms   BIGINT NULL,          -- unix ms\n"
        "    host          VARCHAR(255) CHARACTER SET utf8mb4 NULL,\n"
        "    pid           BIGINT NULL,\n"
        "    full_name     VARBINARY(1024) NULL,\n"
        "    lim           INT NULL,             -- semaphore limit (NULL: 1)\n"
        "    slot          INT NULL,             -- semaphore slot\n"
        "    UNIQUE KEY %s (name)\n"
        ") ENGINE=%s DEFAULT CHARSET=utf8mb4",
        t, ix, lease ? "InnoDB" : "MEMORY");
}

/* The durable fence floor: lease mode's counters (a durable commit per
 * acquire, like its rows), and the counters of dlock 0.1. */
static void ddl_fences(struct sb *b, const char *f)
{
    dlock__my_sb_add(
        b,
        "CREATE TABLE IF NOT EXISTS %s (\n"
        "    name  VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin "
        "NOT NULL PRIMARY KEY,\n"
        "    fence BIGINT UNSIGNED NOT NULL  -- highest fence handed out\n"
        ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
        f);
}

/* Session mode's counters: no durable commit.  What a crash may lose of
 * them is made up for by the clock floor of FENCE_NEXT. */
static void ddl_seq(struct sb *b, const char *q)
{
    dlock__my_sb_add(
        b,
        "CREATE TABLE IF NOT EXISTS %s (\n"
        "    name  VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin "
        "NOT NULL PRIMARY KEY,\n"
        "    fence BIGINT UNSIGNED NOT NULL  -- highest fence handed out\n"
        ") ENGINE=MyISAM DEFAULT CHARSET=utf8mb4",
        q);
}

/* The fences (MariaDB 10.3 and later): one SEQUENCE for all names, so
 * a fence is one NEXTVAL, no row to lock or write.  It may jump forward
 * (CACHE: a restart skips what was cached) and, after a crash, go back
 * (its last reservations may not have reached the disk), so it is seeded
 * again after every server start, before its first use: NAME_boot
 * (MEMORY: empty after any restart) holds a row once it is. */
static void ddl_fseq(struct sb *b, const struct my_store *ms, const char *sep)
{
    dlock__my_sb_add(b,
                     "CREATE SEQUENCE IF NOT EXISTS %s CACHE 1000%s"
                     "CREATE TABLE IF NOT EXISTS %s (\n"
                     "    id TINYINT NOT NULL PRIMARY KEY -- 1: %s is "
                     "seeded since the server started\n"
                     ") ENGINE=MEMORY",
                     ms->fseq, sep, ms->boot, ms->fseq);
}

/* Seed NAME_fseq above every fence handed out before: its own value
 * (a clean restart), the durable fences (lease mode's, and the seeds
 * recorded in the '' row) and dlock 0.2's per-name counters, and the
 * server's clock in microseconds (what a crash may have taken back of
 * the sequence itself: every fence was at most the clock of its moment
 * plus the fences handed out since the last seed, fewer than one per
 * microsecond).  Under a GET_LOCK of its own, once per server start. */
int dlock__my_fseq_seed(struct my_store *ms, struct conn *c)
{
    struct sb b = {0};
    long long v = 0;
    int found = 0, got = 0, rc;
    char key[64];

    if (c->seeded)
        return DLOCK_OK;
    /* Seeded already (every connection but the first after a start). */
    dlock__my_sb_add(&b, "SELECT COUNT(*) FROM %s", ms->boot);
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
    snprintf(key, sizeof(key), "'dlock-seed:%.50s'", ms->raw_table);
    dlock__my_sb_add(&b, "SELECT GET_LOCK(%s, %lld)", key,
                     (long long)(ms->timeout_ms / 1000 > 0
                                     ? ms->timeout_ms / 1000
                                     : 1));
    rc = dlock__my_run_int(ms, c, &b, &v, &found, "seeding the fences");
    got = rc == DLOCK_OK && found && v == 1;
    if (rc == DLOCK_OK && !got)
        rc = dlock__seterr(DLOCK_ESTORE,
                           "seeding the fences on %s: another client "
                           "holds the seed lock",
                           ms->base.url);
    if (rc == DLOCK_OK) {
        dlock__my_sb_reset(&b);
        dlock__my_sb_add(&b, "SELECT COUNT(*) FROM %s", ms->boot);
        rc = dlock__my_run_int(ms, c, &b, &v, &found, "seeding the fences");
    }
    if (rc == DLOCK_OK && v == 0) {
        dlock__my_sb_reset(&b);
        dlock__my_sb_add(&b,
                         "SELECT GREATEST(NEXTVAL(%s), " NOWUS
                         ", IFNULL((SELECT MAX(fence) FROM %s), 0) + 1",
                         ms->fseq, ms->fences);
        if (ms->have_seq)
            dlock__my_sb_add(&b, ", IFNULL((SELECT MAX(fence) FROM %s), 0) + 1",
                             ms->seq);
        dlock__my_sb_add(&b, ")");
        rc = dlock__my_run_int(ms, c, &b, &v, &found, "seeding the fences");
        if (rc == DLOCK_OK) {
            dlock__my_sb_reset(&b);
            dlock__my_sb_add(&b, "DO SETVAL(%s, %lld)", ms->fseq, v);
            rc = dlock__my_run(ms, c, &b, NULL, "seeding the fences");
        }
        if (rc == DLOCK_OK) {
            /* Durable (InnoDB, autocommit): a later seed starts above
             * this one even if the clock is set back. */
            dlock__my_sb_reset(&b);
            dlock__my_sb_add(&b,
                             "INSERT INTO %s (name, fence) VALUES ('', %lld) "
                             "ON DUPLICATE KEY UPDATE fence = GREATEST("
                             "fence, %lld)",
                             ms->fences, v, v);
            rc = dlock__my_run(ms, c, &b, NULL, "seeding the fences");
        }
        if (rc == DLOCK_OK) {
            dlock__my_sb_reset(&b);
            dlock__my_sb_add(&b, "INSERT IGNORE INTO %s VALUES (1)", ms->boot);
            rc = dlock__my_run(ms, c, &b, NULL, "seeding the fences");
        }
    }
    if (rc == DLOCK_OK)
        c->seeded = 1;
    if (got && c->db != NULL) {
        dlock__my_sb_reset(&b);
        dlock__my_sb_add(&b, "DO RELEASE_LOCK(%s)", key);
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
        dlock__my_sb_add(&b, "SELECT NEXTVAL(%s)", ms->fseq);
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
 * row, its-mieger's library).  key is a literal for c, or (c NULL) SQL
 * text such as a variable's name. */
void dlock__my_sb_fence(struct sb *b, struct my_store *ms, struct conn *c,
                        const char *key, size_t key_len, int durable)
{
    const char *mine = durable || !ms->have_seq ? ms->fences : ms->seq;
    struct sb k = {0};

    if (c != NULL)
        dlock__my_sb_lit(&k, c, key, key_len);
    else
        dlock__my_sb_add(&k, "%.*s", (int)key_len, key);
    if (k.oom) {
        b->oom = 1;
        return;
    }
    dlock__my_sb_add(b, "INSERT INTO %s (name, fence) VALUES (%s, ", mine,
                     k.p);
    if (mine == ms->fences && ms->have_seq)
        dlock__my_sb_add(b,
                         "LAST_INSERT_ID(GREATEST(" NOWUS
                         ", IFNULL((SELECT fence FROM %s WHERE name = %s), "
                         "0) + 1))) ON DUPLICATE KEY UPDATE fence = "
                         "LAST_INSERT_ID(GREATEST(fence + 1, " NOWUS
                         ", IFNULL((SELECT fence FROM %s WHERE name = %s), "
                         "0) + 1))",
                         ms->seq, k.p, ms->seq, k.p);
    else
        dlock__my_sb_add(b,
                         "LAST_INSERT_ID(" NOWUS ")) ON DUPLICATE KEY UPDATE "
                         "fence = LAST_INSERT_ID(GREATEST(fence + 1, " NOWUS
                         "))");
    dlock__my_sb_free(&k);
}

/* Lease mode, after taking fence from the durable counter: raise session
 * mode's counter to it (MyISAM: at once, whatever the transaction does
 * next; a fence a rollback gives up leaves a gap, never a step back). */
void dlock__my_sb_seq_raise(struct sb *b, struct my_store *ms, struct conn *c,
                            const char *key, size_t key_len, uint64_t fence)
{
    dlock__my_sb_add(b, "INSERT INTO %s (name, fence) VALUES (", ms->seq);
    dlock__my_sb_lit(b, c, key, key_len);
    dlock__my_sb_add(b,
                     ", %llu) ON DUPLICATE KEY UPDATE fence = "
                     "GREATEST(fence, %llu)",
                     (unsigned long long)fence, (unsigned long long)fence);
}

/* The session-mode procedures: an uncontended acquire is one CALL, and so
 * is a release (the server counts a CALL as one statement, whatever runs
 * inside).  acq2 answers one row (got, fence): got 0, GET_LOCK is taken
 * and nothing happened; 1, acquired with fence; 2, we hold the GET_LOCK
 * but a row is there (the caller judges it, still holding the GET_LOCK).
 * Any error inside undoes what acq2 did (its row, its GET_LOCK) before it
 * reaches the caller.  rel1 answers the number of rows deleted, and lets
 * go of the GET_LOCK only if it deleted our row.  The names carry a
 * version: a later dlock with other procedures makes new ones. */
static void ddl_procs(struct sb *b, struct my_store *ms, const char *sep)
{
    dlock__my_sb_add(
        b,
        "CREATE PROCEDURE %s(p_key VARCHAR(64) CHARACTER SET utf8mb4, "
        "p_full VARBINARY(1024), p_owner CHAR(32) CHARACTER SET ascii, "
        "p_ttl_ms BIGINT, p_host VARCHAR(255) CHARACTER SET utf8mb4, "
        "p_pid BIGINT)\n"
        "    MODIFIES SQL DATA SQL SECURITY INVOKER\n"
        "BEGIN\n"
        "    DECLARE v_got INT DEFAULT 0;\n"
        "    DECLARE v_fence BIGINT UNSIGNED DEFAULT 0;\n"
        "    DECLARE EXIT HANDLER FOR 1062 SELECT 2, 0;\n"
        "    DECLARE EXIT HANDLER FOR SQLEXCEPTION\n"
        "    BEGIN\n"
        "        IF v_got = 1 THEN\n"
        "            DELETE FROM %s WHERE name = p_key AND owner = p_owner;\n"
        "            DO RELEASE_LOCK(p_key);\n"
        "        END IF;\n"
        "        RESIGNAL;\n"
        "    END;\n"
        "    SET v_got = IFNULL(GET_LOCK(p_key, 0), 0);\n"
        "    IF v_got <> 1 THEN\n"
        "        SELECT 0, 0;\n"
        "    ELSE\n"
        "        INSERT INTO %s (name, connection_id, created, ttl, "
        "lock_acquired, owner, expires_ms, acquired_ms, host, pid, "
        "full_name)\n"
        "            VALUES (p_key, CONNECTION_ID(), UNIX_TIMESTAMP(), "
        "(p_ttl_ms + 999) DIV 1000, 1, p_owner, " NOWMS " + p_ttl_ms, " NOWMS
        ", p_host, p_pid, p_full);\n"
        "        ",
        ms->proc_acq, ms->table, ms->table);
    dlock__my_sb_fence(b, ms, NULL, "p_key", 5, 0);
    dlock__my_sb_add(
        b,
        ";\n"
        "        SET v_fence = LAST_INSERT_ID();\n"
        "        UPDATE %s SET fence = v_fence WHERE name = p_key AND "
        "owner = p_owner;\n"
        "        SELECT 1, v_fence;\n"
        "    END IF;\n"
        "END%s",
        ms->table, sep);
    dlock__my_sb_add(
        b,
        "CREATE PROCEDURE %s(p_key VARCHAR(64) CHARACTER SET utf8mb4, "
        "p_owner CHAR(32) CHARACTER SET ascii)\n"
        "    MODIFIES SQL DATA SQL SECURITY INVOKER\n"
        "BEGIN\n"
        "    DECLARE v_n INT DEFAULT 0;\n"
        "    DELETE FROM %s WHERE name = p_key AND owner = p_owner AND "
        EXPIRES " > " NOWMS " AND connection_id = CONNECTION_ID() AND "
        "IS_USED_LOCK(p_key) = CONNECTION_ID();\n"
        "    SET v_n = ROW_COUNT();\n"
        "    IF v_n = 1 THEN\n"
        "        DO RELEASE_LOCK(p_key);\n"
        "    END IF;\n"
        "    SELECT v_n;\n"
        "END%s",
        ms->proc_rel, ms->table, sep);
}

static void ddl_alter(struct sb *b, const char *t)
{
    dlock__my_sb_add(
        b,
        "-- For a table made by its-mieger/mysql-shared-locks, instead:\n"
        "-- ALTER TABLE %s\n"
        "--     ADD COLUMN owner CHAR(32) CHARACTER SET ascii NULL,\n"
        "--     ADD COLUMN fence BIGINT UNSIGNED NULL,\n"
        "--     ADD COLUMN expires_ms BIGINT NULL,\n"
        "--     ADD COLUMN acquired_ms BIGINT NULL,\n"
        "--     ADD COLUMN host VARCHAR(255) CHARACTER SET utf8mb4 NULL,\n"
        "--     ADD COLUMN pid BIGINT NULL,\n"
        "--     ADD COLUMN full_name VARBINARY(1024) NULL,\n"
        "--     ADD COLUMN lim INT NULL,\n"
        "--     ADD COLUMN slot INT NULL;\n"
        "-- (a table of dlock 0.2: only the last two, which a client that\n"
        "-- may ALTER the table adds by itself; semaphores need them)\n"
        "-- and, as its name column is latin1 (names outside latin1, such\n"
        "-- as Greek, CJK or emoji, are refused until then):\n"
        "-- ALTER TABLE %s\n"
        "--     MODIFY name VARCHAR(64) CHARACTER SET utf8mb4 "
        "COLLATE utf8mb4_bin NOT NULL;\n"
        "-- For a session-mode table of dlock 0.1 (InnoDB: a durable\n"
        "-- commit per acquire and per release):\n"
        "-- ALTER TABLE %s ENGINE=MyISAM;\n",
        t, t, t);
}

/* Are the tables there, with our columns? */
static int check_tables(struct my_store *ms, struct conn *c)
{
    struct sb b = {0};
    MYSQL_RES *res;
    int rc;

    dlock__my_sb_add(
        &b,
        "SELECT name, connection_id, created, ttl, lock_acquired, "
        "owner, fence, expires_ms, acquired_ms, host, pid, full_name "
        "FROM %s LIMIT 0",
        ms->table);
    rc = dlock__my_run(ms, c, &b, &res, "checking the lock table");
    mysql_free_result(res);
    if (rc == DLOCK_OK) {
        dlock__my_sb_reset(&b);
        dlock__my_sb_add(&b, "SELECT name, fence FROM %s LIMIT 0", ms->fences);
        rc = dlock__my_run(ms, c, &b, &res, "checking the fence table");
        mysql_free_result(res);
    }
    if (rc == DLOCK_OK) {
        MYSQL_ROW row;

        /* For messages, and whether the procedures fit (a name it cannot
         * store is refused by the server): best effort. */
        dlock__my_sb_reset(&b);
        dlock__my_sb_add(
            &b, "SELECT CHARACTER_SET_NAME FROM information_schema.COLUMNS "
                "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ");
        dlock__my_sb_lit(&b, c, ms->raw_table, strlen(ms->raw_table));
        dlock__my_sb_add(&b, " AND COLUMN_NAME = 'name'");
        if (dlock__my_run(ms, c, &b, &res,
                          "reading the name column's charset") == DLOCK_OK &&
            res != NULL && (row = mysql_fetch_row(res)) != NULL &&
            row[0] != NULL)
            dlock__strlcpy(ms->name_charset, row[0], sizeof(ms->name_charset));
        mysql_free_result(res);
        dlock__my_sb_reset(&b);
        dlock__my_sb_add(&b, "SELECT ENGINE FROM information_schema.TABLES "
                             "WHERE TABLE_SCHEMA = DATABASE() AND "
                             "TABLE_NAME = ");
        dlock__my_sb_lit(&b, c, ms->raw_table, strlen(ms->raw_table));
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

#define HEAP_BIG "SET SESSION max_heap_table_size = 1073741824"
#define HEAP_DEFAULT "SET SESSION max_heap_table_size = DEFAULT"

static int create_tables(struct my_store *ms, struct conn *c)
{
    struct sb b = {0};
    int rc = DLOCK_OK;

    for (int i = 0; i < 2 && rc == DLOCK_OK; i++) {
        dlock__my_sb_reset(&b);
        if (i == 0)
            ddl_locks(&b, ms->table, ms->index, ms->lease_mode);
        else
            ddl_fences(&b, ms->fences);
        if (b.oom) {
            rc = dlock__enomem();
            break;
        }
        if (i == 0 && !ms->lease_mode)
            (void)dlock__my_query(c, HEAP_BIG, strlen(HEAP_BIG));
        if (dlock__my_query(c, b.p, b.len) == 0) {
            if (i == 0 && !ms->lease_mode)
                (void)dlock__my_query(c, HEAP_DEFAULT,
                                      strlen(HEAP_DEFAULT));
            continue;
        }
        if (mysql_errno(c->db) == ER_TABLEACCESS_DENIED_ERROR ||
            mysql_errno(c->db) == ER_DBACCESS_DENIED_ERROR)
            rc = dlock__seterr(DLOCK_ESTORE,
                               "the lock tables %s and %s are missing in %s "
                               "and this user may not create them: ask a "
                               "DBA to run the DDL of `dlock init --print` "
                               "(%s)",
                               ms->table, ms->fences, ms->base.url,
                               mysql_error(c->db));
        else
            rc = dlock__my_db_err(ms, c, "creating the lock tables");
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
        dlock__my_sb_add(&b, "SELECT lim, slot FROM %s LIMIT 0", ms->table);
        ms->have_lim = dlock__my_run(ms, c, &b, &res, "lim") == DLOCK_OK;
        mysql_free_result(res);
        if (ms->have_lim || i == 1)
            break;
        dlock__my_sb_reset(&b);
        dlock__my_sb_add(&b, "ALTER TABLE %s ADD COLUMN lim INT NULL, "
                             "ADD COLUMN slot INT NULL", ms->table);
        /* No ALTER right, or another client added them meanwhile. */
        if (!b.oom)
            (void)dlock__my_query(c, b.p, b.len);
    }
    dlock__my_sb_reset(&b);

    ddl_seq(&b, ms->seq);
    if (!b.oom)
        (void)dlock__my_query(c, b.p, b.len);
    dlock__my_sb_reset(&b);
    dlock__my_sb_add(&b, "SELECT name, fence FROM %s LIMIT 0", ms->seq);
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
        dlock__my_sb_add(&b, "SELECT COUNT(*) FROM %s, %s", ms->fseq,
                         ms->boot);
        {
            long long n = 0;
            int found;

            ms->have_fseq = dlock__my_run_int(ms, c, &b, &n, &found,
                                              "fseq") == DLOCK_OK;
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
    dlock__my_sb_add(&b,
                     "SELECT COUNT(*) FROM information_schema.ROUTINES "
                     "WHERE ROUTINE_SCHEMA = DATABASE() AND ROUTINE_TYPE = "
                     "'PROCEDURE' AND ROUTINE_NAME IN (");
    dlock__my_sb_lit(&b, c, ms->proc_acq + 1, strlen(ms->proc_acq) - 2);
    dlock__my_sb_add(&b, ", ");
    dlock__my_sb_lit(&b, c, ms->proc_rel + 1, strlen(ms->proc_rel) - 2);
    dlock__my_sb_add(&b, ")");
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
    if (!ms->lease_mode)
        dlock__my_sb_add(&b, "-- The MEMORY table's size is capped when it "
                             "is created:\n%s;\n", HEAP_BIG);
    ddl_locks(&b, ms->table, ms->index, ms->lease_mode);
    dlock__my_sb_add(&b, ";\n");
    ddl_fences(&b, ms->fences);
    dlock__my_sb_add(&b, ";\n");
    ddl_seq(&b, ms->seq);
    dlock__my_sb_add(&b, ";\n-- MariaDB 10.3 and later, on a MEMORY lock "
                         "table: the fences of both modes (a MyISAM or\n"
                         "-- InnoDB lock table, or MySQL: the counters "
                         "above)\n");
    ddl_fseq(&b, ms, ";\n");
    dlock__my_sb_add(&b, ";\n-- Run records (dlock run --once, --once-per, "
                         "dlock history)\n");
    dlock__my_ddl_runs(&b, ms, ";\n");
    dlock__my_sb_add(&b, ";\n");
    if (!ms->lease_mode) {
        dlock__my_sb_add(&b, "-- Without the fence sequence (MySQL, "
                             "MariaDB < 10.3), session mode's two\n"
                             "-- statements per lock (optional; needs "
                             "CREATE ROUTINE once, then EXECUTE):\n"
                             "DELIMITER //\n");
        ddl_procs(&b, ms, "\n//\n");
        dlock__my_sb_add(&b, "DELIMITER ;\n");
    }
    ddl_alter(&b, ms->table);
    free(ms);
    if (b.oom) {
        dlock__my_sb_free(&b);
        return dlock__enomem();
    }
    *out = b.p;
    return DLOCK_OK;
}
