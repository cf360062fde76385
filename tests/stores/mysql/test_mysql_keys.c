/*
 * test_mysql_keys.c - lock names become the same GET_LOCK keys as
 * mpyw/laravel-database-advisory-lock computes them on the server:
 *
 *     CASE WHEN CHAR_LENGTH(n) > 64 THEN CONCAT(SUBSTR(n, 1, 24), SHA1(n))
 *     ELSE n END
 *
 * for names of 10, 64, 65 and 300 characters, ASCII and multibyte, so a
 * Laravel application holding a key blocks dlock, and the reverse.
 *
 *     test_mysql_keys URL     (or DLOCK_TEST_MYSQL_URL)
 */
#include "raw.h"

/* prefix + copies of `unit` up to `chars` characters in all. */
static void make_name(char *out, size_t len, const char *prefix,
                      const char *unit, size_t chars)
{
    size_t n = strlen(prefix), have = 0;

    /* A prefix longer than out is cut to fit (counting only what is kept). */
    if (n >= len)
        n = len - 1;
    memcpy(out, prefix, n);
    out[n] = '\0';
    for (size_t i = 0; i < n; i++)
        have += ((unsigned char)prefix[i] & 0xc0) != 0x80;
    while (have < chars && strlen(out) + strlen(unit) < len) {
        strcat(out, unit);
        have++;
    }
}

static const char *mpyw_key(MYSQL *db, const char *n, char *buf, size_t len)
{
    char sql[12000];

    snprintf(sql, sizeof(sql),
             "SELECT CASE WHEN CHAR_LENGTH(%s) > 64 THEN "
             "CONCAT(SUBSTR(%s, 1, 24), SHA1(%s)) ELSE %s END",
             lit(db, n), lit(db, n), lit(db, n), lit(db, n));
    return sqls(db, buf, len, sql);
}

static int hashed_anyway;

static void check_name(dlock_store *s, MYSQL *db, const char *n)
{
    dlock_options o = DLOCK_OPTIONS_INIT;
    char key[512], row_key[512], sql[12000], *expr;
    dlock_lock *l = NULL, *l2 = NULL;
    dlock_info info;

    mpyw_key(db, n, key, sizeof(key));
    EXPECT(key[0] != '\0');
    /* mpyw's exact expression, evaluated by the server. */
    snprintf(sql, sizeof(sql),
             "CASE WHEN CHAR_LENGTH(%s) > 64 THEN CONCAT(SUBSTR(%s, 1, 24), "
             "SHA1(%s)) ELSE %s END",
             lit(db, n), lit(db, n), lit(db, n), lit(db, n));
    if (strlen(key) > 192 && strstr(mysql_get_server_info(db), "MariaDB")) {
        unsigned err = 0;

        /* MariaDB refuses such a key (so Laravel cannot lock this name
         * there at all); dlock hashes it like a long name instead. */
        long long got = sqlf(db, &err, "SELECT GET_LOCK(%s, 0)", sql);

        /* Refused: error 1059, or NULL ("an error occurred"). */
        if (got != -1 && (got != -2 || err != 1059))
            fprintf(stderr, "  GET_LOCK of a %zu-byte key: %lld, error %u\n",
                    strlen(key), got, err);
        EXPECT(got == -1 || (got == -2 && err == 1059));
        snprintf(sql, sizeof(sql), "CONCAT(SUBSTR(%s, 1, 24), SHA1(%s))",
                 lit(db, n), lit(db, n));
        {
            char *q = malloc(strlen(sql) + 8);

            sprintf(q, "SELECT %s", sql);
            sqls(db, key, sizeof(key), q);
            free(q);
        }
        hashed_anyway++;
    }
    expr = strdup(sql);

    /* dlock's row carries the same key. */
    EXPECT_RC(dlock_acquire(&l, s, n, &o), DLOCK_OK);
    snprintf(
        sql, sizeof(sql),
        "SELECT name FROM shared_locks WHERE COALESCE(full_name, name) = %s",
        lit(db, n));
    sqls(db, row_key, sizeof(row_key), sql);
    if (strcmp(row_key, key) != 0)
        fprintf(stderr,
                "  name of %zu bytes: dlock key '%s', server key "
                "'%s'\n",
                strlen(n), row_key, key);
    EXPECT(strcmp(row_key, key) == 0);
    /* Another session's GET_LOCK on the key fails while dlock holds. */
    EXPECT(sqlf(db, NULL, "SELECT GET_LOCK(%s, 0)", expr) == 0);
    EXPECT_RC(dlock_release(l), DLOCK_OK);

    /* The reverse: Laravel holds the key, dlock is BUSY and sees it. */
    EXPECT(sqlf(db, NULL, "SELECT GET_LOCK(%s, 0)", expr) == 1);
    EXPECT_RC(dlock_acquire(&l2, s, n, &o), DLOCK_BUSY);
    EXPECT_RC(test_status(s, n, &info), DLOCK_OK);
    EXPECT(info.held == 1);
    o.wait_ms = 300;
    EXPECT_RC(dlock_acquire(&l2, s, n, &o), DLOCK_BUSY);
    EXPECT(sqlf(db, NULL, "SELECT RELEASE_LOCK(%s)", expr) == 1);
    o.wait_ms = 0;
    EXPECT_RC(dlock_acquire(&l2, s, n, &o), DLOCK_OK);
    EXPECT_RC(dlock_release(l2), DLOCK_OK);
    free(expr);
}

int main(int argc, char **argv)
{
    static const char *const units[] = {"a", "é", "鍵", "🔒"};
    static const size_t lengths[] = {10, 64, 65, 300};
    const char *url = test_url(argc, argv);
    struct target t;
    dlock_store *s;
    MYSQL *db;
    char name[2048];
    int checked = 0;

    if (parse_target(url, &t) != 0) {
        fprintf(stderr, "cannot parse %s\n", url);
        return 2;
    }
    if (dlock_store_open(&s, url) != DLOCK_OK) {
        fprintf(stderr, "open: %s\n", dlock_errmsg());
        return 2;
    }
    db = raw_connect(&t);
    for (size_t u = 0; u < sizeof(units) / sizeof(units[0]); u++) {
        for (size_t i = 0; i < sizeof(lengths) / sizeof(lengths[0]); i++) {
            make_name(name, sizeof(name), uniq("k-"), units[u], lengths[i]);
            if (strlen(name) > DLOCK_NAME_MAX)
                continue; /* 300 four-byte characters: too long a name */
            check_name(s, db, name);
            checked++;
        }
    }
    /* Exactly 64 characters is kept; a 24th character that is multibyte
     * is cut on the character, not the byte. */
    make_name(name, sizeof(name), "", "é", 64);
    check_name(s, db, name);
    {
        char head[64];

        make_name(head, sizeof(head), "", "x", 23);
        strcat(head, "🔒");
        make_name(name, sizeof(name), head, "y", 80);
    }
    check_name(s, db, name);
    mysql_close(db);
    dlock_store_close(s);
    printf("%d names checked (%d hashed for MariaDB's 192-byte limit), "
           "%d failure(s)\n",
           checked + 2, hashed_anyway, failures);
    return failures != 0;
}
