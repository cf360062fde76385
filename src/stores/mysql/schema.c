/*
 * schema.c - the MySQL store's tables: their DDL, checking and creating
 * them, and the columns read from a row of the lock table.
 */
#include <mysqld_error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "my.h"

/* What the holder-reading queries select (see struct holder).  MariaDB
 * refuses IS_USED_LOCK() of a name over 192 bytes (and fails the whole
 * query): such a row, which only another tool can have written, reads as
 * not holding the GET_LOCK there. */
#define COLUMNS(used)                                                          \
    "connection_id, owner, lock_acquired, " EXPIRES " - " NOWMS                \
    ", IFNULL(" used ", 0), created, fence, host, pid, "                       \
    "COALESCE(acquired_ms, created * 1000), COALESCE(full_name, name)"

const char *dlock__my_columns(const struct my_store *ms)
{
    return ms->mariadb ? COLUMNS("IF(LENGTH(" ROW_KEY ") > 192, NULL, "
                                 "IS_USED_LOCK(" ROW_KEY "))")
                       : COLUMNS("IS_USED_LOCK(" ROW_KEY ")");
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

static void ddl_locks(struct sb *b, const char *t, const char *ix)
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
        "    UNIQUE KEY %s (name)\n"
        ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
        t, ix);
}

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
        "--     ADD COLUMN full_name VARBINARY(1024) NULL;\n"
        "-- and, as its name column is latin1 (names outside latin1, such\n"
        "-- as Greek, CJK or emoji, are refused until then):\n"
        "-- ALTER TABLE %s\n"
        "--     MODIFY name VARCHAR(64) CHARACTER SET utf8mb4 "
        "COLLATE utf8mb4_bin NOT NULL;\n",
        t, t);
}

/* Are both tables there, with our columns? */
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

        /* For messages only (a name it cannot store is refused by the
         * server): best effort. */
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
        dlock__clearerr();
    }
    dlock__my_sb_free(&b);
    return rc;
}

static int create_tables(struct my_store *ms, struct conn *c)
{
    struct sb b = {0};
    int rc = DLOCK_OK;

    for (int i = 0; i < 2 && rc == DLOCK_OK; i++) {
        dlock__my_sb_reset(&b);
        if (i == 0)
            ddl_locks(&b, ms->table, ms->index);
        else
            ddl_fences(&b, ms->fences);
        if (b.oom) {
            rc = dlock__enomem();
            break;
        }
        if (dlock__my_query(c, b.p, b.len) == 0)
            continue;
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

/* On open: use the tables if they are there (a DBA may have made them for
 * a user without CREATE), else create them. */
int dlock__my_ensure_tables(struct my_store *ms, struct conn *c)
{
    int rc = check_tables(ms, c);

    if (rc == DLOCK_OK || mysql_errno(c->db) != ER_NO_SUCH_TABLE)
        return rc;
    rc = create_tables(ms, c);
    return rc == DLOCK_OK ? check_tables(ms, c) : rc;
}

static int init_fn(void *conn, void *arg, int *dead)
{
    struct my_store *ms = arg;
    struct conn *c = conn;
    int rc = create_tables(ms, c);

    if (rc == DLOCK_OK)
        rc = check_tables(ms, c);
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

/* Table and quote settings (shared by open and ddl): the quoted lock
 * table, fence table and index names, and the table's bare name. */
int dlock__my_parse_names(const struct dlock_url *u, char *t, char *f, char *ix,
                          char *raw)
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
        else if (strcmp(quote, "backtick") != 0 && strcmp(quote, "") != 0)
            return dlock__seterr(DLOCK_EINVAL,
                                 "quote=%s in %s: use quote=ansi or "
                                 "quote=backtick",
                                 quote, u->redacted);
    }
    snprintf(raw, TABLE_MAX + 1, "%s", table);
    snprintf(t, TABLE_MAX + 3, "%c%s%c", q, table, q);
    snprintf(f, TABLE_MAX + 10, "%c%s_fences%c", q, table, q);
    snprintf(ix, TABLE_MAX + 7, "%c%s_ix1%c", q, table, q);
    return DLOCK_OK;
}

/* The DDL for a DBA: both tables, and the ALTER for its-mieger's. */
int dlock__my_ddl(char **out, const struct dlock_url *u)
{
    char t[TABLE_MAX + 3], f[TABLE_MAX + 10], ix[TABLE_MAX + 7],
        raw[TABLE_MAX + 1];
    struct sb b = {0};
    int rc = dlock__my_parse_names(u, t, f, ix, raw);

    if (rc != DLOCK_OK)
        return rc;
    ddl_locks(&b, t, ix);
    dlock__my_sb_add(&b, ";\n");
    ddl_fences(&b, f);
    dlock__my_sb_add(&b, ";\n");
    ddl_alter(&b, t);
    if (b.oom) {
        dlock__my_sb_free(&b);
        return dlock__enomem();
    }
    *out = b.p;
    return DLOCK_OK;
}
