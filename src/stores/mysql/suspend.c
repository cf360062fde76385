/*
 * suspend.c - a job's suspension on the MySQL store (store.h: suspend,
 * resume, suspension, suspensions), in both modes, in an InnoDB table of
 * dlock's own named after the lock table, NAME_susp (sql/create_susp.sql):
 * one row per suspended name, (name, the lock's key as in the lock table)
 * -> full_name, by_whom, since_ms (the server's clock, NOW(6), as
 * run_begin's now), reason; created on first use (suspend, run_begin) or
 * by `dlock init`.  suspend and resume are one transaction in one packet
 * each on a pooled connection (sql/susp_put.sql, susp_delete.sql: the
 * record locked, then inserted or deleted); run_begin (runs.c) reads the
 * record share-locked in its own packet, before any rule, and answers it
 * through dlock__my_susp_run().
 *
 * A record is read as anyone who may write the table may have left it: a
 * text that is NULL, not a text column, too long or with a NUL inside
 * shows as "?", a since_ms that is not a non-negative integer as 0 (the
 * core vets the rest: UTF-8, control characters); it still suspends.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "my.h"

/* Column i of a suspension row into dst (size bytes): "?" for what
 * dlock cannot have written there (NULL, not a text column, too long, a
 * NUL inside); the core vets the rest (UTF-8, control characters). */
static void susp_text(MYSQL_RES *res, MYSQL_ROW row, const unsigned long *lens,
                      unsigned i, char *dst, size_t size)
{
    MYSQL_FIELD *f = mysql_fetch_field_direct(res, i);
    int text = 0;

    if (f != NULL)
        switch (f->type) {
        case MYSQL_TYPE_VARCHAR:
        case MYSQL_TYPE_VAR_STRING:
        case MYSQL_TYPE_STRING:
        case MYSQL_TYPE_TINY_BLOB:
        case MYSQL_TYPE_BLOB:
        case MYSQL_TYPE_MEDIUM_BLOB:
        case MYSQL_TYPE_LONG_BLOB:
            text = 1;
            break;
        default:
            break;
        }
    if (!text || row[i] == NULL || lens[i] >= size ||
        memchr(row[i], '\0', lens[i]) != NULL) {
        dlock__strlcpy(dst, "?", size);
        return;
    }
    memcpy(dst, row[i], lens[i]);
    dst[lens[i]] = '\0';
}

/* Column i of a suspension row as ms since the epoch: 0 when it is not
 * an integer column or not a number >= 0. */
static int64_t susp_ms(MYSQL_RES *res, MYSQL_ROW row, unsigned i)
{
    MYSQL_FIELD *f = mysql_fetch_field_direct(res, i);
    char *end = NULL;
    long long v;

    if (f == NULL || row[i] == NULL ||
        (f->type != MYSQL_TYPE_LONGLONG && f->type != MYSQL_TYPE_LONG &&
         f->type != MYSQL_TYPE_INT24 && f->type != MYSQL_TYPE_SHORT &&
         f->type != MYSQL_TYPE_TINY))
        return 0;
    v = strtoll(row[i], &end, 10);
    if (end == row[i] || *end != '\0' || v < 0 || v == LLONG_MAX)
        return 0;
    return v;
}

void dlock__my_susp_run(MYSQL_RES *res, MYSQL_ROW row, unsigned i, dlock_run *r)
{
    memset(r, 0, sizeof(*r));
    r->result = DLOCK_RUN_SUSPENDED;
    r->status = -1;
    if (mysql_num_fields(res) < i + 2) {
        dlock__strlcpy(r->host, "?", sizeof(r->host));
        return;
    }
    susp_text(res, row, mysql_fetch_lengths(res), i, r->host, sizeof(r->host));
    r->start_ms = susp_ms(res, row, i + 1);
}

struct scall {
    struct my_store *ms;
    const char *name, *by, *reason; /* by: suspend only (NULL: resume) */
    int *was;
    dlock_suspension *cur;
};

/* The by_whom, since_ms and reason of a suspension row at row[i..]. */
static void susp_read(MYSQL_RES *res, MYSQL_ROW row, unsigned i,
                      dlock_suspension *cur)
{
    unsigned long *lens = mysql_fetch_lengths(res);

    susp_text(res, row, lens, i, cur->by, sizeof(cur->by));
    cur->since_ms = susp_ms(res, row, i + 1);
    susp_text(res, row, lens, i + 2, cur->reason, sizeof(cur->reason));
}

/* suspend (sql/susp_put.sql), resume (susp_delete.sql) or suspension
 * (susp_get.sql): one packet each. */
static int susp_fn(void *conn, void *arg, int *dead)
{
    struct scall *k = arg;
    struct my_store *ms = k->ms;
    struct conn *c = conn;
    char key[KEY_MAX + 1];
    size_t len = strlen(k->name), klen;
    struct my_val kv, nv;
    struct sb b = {0};
    MYSQL_RES *res = NULL;
    MYSQL_ROW row;
    const char *what;
    int rc, put = k->by != NULL;

    *dead = 0;
    *k->was = 0;
    rc = dlock__mysql_key(k->name, len, ms->mariadb, key, &klen);
    if (rc != DLOCK_OK)
        return rc;
    kv = MV_S(key, klen);
    nv = MV_S(k->name, len);
    if (put) {
        what = "suspend";
        MY_BIND(&b, c, ms->sql.susp_put, kv, nv, kv, nv, MV_Z(k->by),
                MV_Z(k->reason), kv, nv);
    } else if (k->reason != NULL) {
        what = "resume";
        MY_BIND(&b, c, ms->sql.susp_delete, kv, nv, kv, nv);
    } else {
        what = "suspension";
        MY_BIND(&b, c, ms->sql.susp_get, kv, nv);
    }
    /* No table: nothing suspended (suspend makes it). */
    rc = dlock__my_tx_tables(ms, c, &b, &res, put, T_SUSP, what);
    dlock__my_sb_free(&b);
    row = rc == DLOCK_OK && res != NULL ? mysql_fetch_row(res) : NULL;
    if (put && rc == DLOCK_OK) {
        if (row == NULL || row[0] == NULL || mysql_num_fields(res) < 4) {
            rc = dlock__seterr(DLOCK_ESTORE, "suspend on %s: no answer",
                               ms->base.url);
        } else {
            *k->was = strcmp(row[0], "0") != 0;
            if (*k->was)
                susp_read(res, row, 1, k->cur);
        }
    } else if (rc == DLOCK_OK && row != NULL && mysql_num_fields(res) >= 3) {
        *k->was = 1;
        susp_read(res, row, 0, k->cur);
    }
    mysql_free_result(res);
    if (rc != DLOCK_OK)
        *k->was = 0;
    *dead = rc != DLOCK_OK && dlock__my_conn_error(mysql_errno(c->db));
    return rc;
}

int dlock__my_suspend(struct dlock_store *s, const char *name, const char *by,
                      const char *reason, int *was, dlock_suspension *cur)
{
    struct scall k = {(struct my_store *)s,         name, by,
                      reason != NULL ? reason : "", was,  cur};

    return dlock__pool_run(&k.ms->pool, susp_fn, &k);
}

int dlock__my_resume(struct dlock_store *s, const char *name, int *was,
                     dlock_suspension *cur)
{
    /* reason set, by NULL: resume (susp_fn) */
    struct scall k = {(struct my_store *)s, name, NULL, "", was, cur};

    return dlock__pool_run(&k.ms->pool, susp_fn, &k);
}

int dlock__my_suspension(struct dlock_store *s, const char *name, int *was,
                         dlock_suspension *cur)
{
    struct scall k = {(struct my_store *)s, name, NULL, NULL, was, cur};

    return dlock__pool_run(&k.ms->pool, susp_fn, &k);
}

struct slist {
    struct my_store *ms;
    const char *prefix;
    dlock_suspension *v;
    size_t n, cap;
};

/* Every record whose full name starts with the prefix (its bytes, not a
 * pattern). */
static int susp_all_fn(void *conn, void *arg, int *dead)
{
    struct slist *l = arg;
    struct my_store *ms = l->ms;
    struct conn *c = conn;
    size_t plen = strlen(l->prefix);
    struct sb b = {0};
    MYSQL_RES *res = NULL;
    MYSQL_ROW row;
    int rc;

    l->n = 0;
    *dead = 0;
    dlock__my_sb_add(&b, "%s", ms->sql.susp_all);
    rc = dlock__my_tx_tables(ms, c, &b, &res, 0, T_SUSP, "suspensions");
    dlock__my_sb_free(&b);
    if (rc == DLOCK_OK && res != NULL && mysql_num_fields(res) < 4)
        rc = dlock__seterr(DLOCK_ESTORE, "suspensions on %s: no answer",
                           ms->base.url);
    while (rc == DLOCK_OK && res != NULL && (row = mysql_fetch_row(res))) {
        unsigned long *lens = mysql_fetch_lengths(res);

        if (row[0] == NULL || lens[0] < plen || lens[0] > DLOCK_NAME_MAX ||
            memchr(row[0], '\0', lens[0]) != NULL ||
            memcmp(row[0], l->prefix, plen) != 0)
            continue;
        if (l->n == l->cap) {
            size_t cap = l->cap ? 2 * l->cap : 8;
            dlock_suspension *nv = realloc(l->v, cap * sizeof(*nv));

            if (nv == NULL) {
                rc = dlock__enomem();
                break;
            }
            l->v = nv;
            l->cap = cap;
        }
        memset(&l->v[l->n], 0, sizeof(l->v[l->n]));
        memcpy(l->v[l->n].name, row[0], lens[0]);
        l->v[l->n].name[lens[0]] = '\0';
        susp_read(res, row, 1, &l->v[l->n]);
        l->n++;
    }
    mysql_free_result(res);
    *dead = rc != DLOCK_OK && dlock__my_conn_error(mysql_errno(c->db));
    return rc;
}

int dlock__my_suspensions(struct dlock_store *s, const char *prefix,
                          dlock_suspension_cb cb, void *payload)
{
    struct slist l = {(struct my_store *)s, prefix, NULL, 0, 0};
    int rc = dlock__pool_run(&l.ms->pool, susp_all_fn, &l);

    /* Each to cb with no connection held (cb may call the library). */
    for (size_t i = 0; rc == DLOCK_OK && i < l.n; i++)
        rc = cb(&l.v[i], payload);
    free(l.v);
    return rc;
}
