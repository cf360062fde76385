/*
 * status.c - the MySQL store's calls on a name that need no lock of
 * ours: status (a row, a semaphore's slots, a waiter granted the key, a
 * GET_LOCK-only session or a peer library's holder), list and
 * release --force (deleting the rows, KILLing their sessions).
 */
#include <mysqld_error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "my.h"
#include "strutil.h"

/* --- status, list, force_release ---------------------------------------- */

static void fill_info(dlock_info *out, const struct holder *h)
{
    out->held = 1;
    out->holders = 1;
    out->limit = 1;
    out->shared = 0;
    out->ttl_ms = h->left;
    out->pid = h->pid;
    out->since_ms = h->since;
    dlock__strlcpy(out->host, h->host, sizeof(out->host));
}

struct name_call {
    struct my_store *ms;
    const char *name; /* status, force: the lock's; list: the prefix */
    dlock_info *out;
    unsigned *removed;
    struct dlock__names *names;
    const dlock_info *blank; /* status: *out as the caller filled it */
};

/* A holder that is not dlock (a session holding the key's GET_LOCK with
 * no row of dlock's, or a peer library's row): held, and its session as
 * the server reports it: its id always, its login and address where the
 * server shows them to us (PROCESS privilege). */
static int other_client(struct my_store *ms, struct conn *c,
                        unsigned long long id, dlock_info *out)
{
    out->held = 1;
    out->holders = 1;
    out->limit = 1;
    out->other_client = 1;
    out->host[0] = '\0';
    out->pid = 0;
    out->client_id = id <= INT64_MAX ? (int64_t)id : 0;
    if (id == 0)
        return DLOCK_OK;
    return dlock__my_session_of(ms, c, id, out->client_user,
                                sizeof(out->client_user), out->client_addr,
                                sizeof(out->client_addr));
}

static int status_fn(void *conn, void *arg, int *dead)
{
    struct name_call *k = arg;
    struct my_store *ms = k->ms;
    const char *name = k->name;
    dlock_info *out = k->out;
    struct my_lock ml;
    struct conn *c = conn;
    struct sb b = {0};
    MYSQL_RES *res;
    MYSQL_ROW row;
    int rc;

    *out = *k->blank; /* a retry starts from what the caller gave */
    *dead = 0;
    rc = dlock__mysql_key(name, strlen(name), ms->mariadb, ml.key, &ml.key_len);
    if (rc != DLOCK_OK)
        return rc;
    c->name = name;
    /* sql/status.sql: the key three times, four with NAME_seq. */
    MY_BIND(
        &b, c,
        ms->sql.status[ms->have_seq != 0][ms->mariadb != 0][ms->have_lim != 0],
        MV_KEY(&ml), MV_KEY(&ml), MV_KEY(&ml), MV_KEY(&ml));
    rc = dlock__my_run(ms, c, &b, &res, "status");
    dlock__my_sb_free(&b);
    if (rc == DLOCK_OK && res != NULL) {
        row = mysql_fetch_row(res);
        if (row != NULL) {
            struct holder h;
            unsigned long long used =
                row[13] != NULL ? strtoull(row[13], NULL, 10) : 0;
            int rowless = row[0] == NULL;

            out->fence = row[12] ? strtoull(row[12], NULL, 10) : 0;
            if (row[0] != NULL) {
                dlock__my_read_holder(row, mysql_fetch_lengths(res), &h, 1);
                if (h.lim > 1 && !h.has_owner) {
                    /* A semaphore's head: its live slot rows say. */
                    MYSQL_RES *r2 = res;

                    res = NULL;
                    mysql_free_result(r2);
                    rc = dlock__my_sem_status(ms, c, &h, out);
                } else if (!dlock__my_holder_dead(&h)) {
                    fill_info(out, &h);
                    /* No owner token: not dlock's row but a peer
                     * library's (its-mieger/mysql-shared-locks): its
                     * connection, created and ttl are what it says. */
                    if (!h.has_owner) {
                        mysql_free_result(res);
                        res = NULL;
                        rc = other_client(ms, c, h.conn_id, out);
                    }
                } else {
                    /* A dead row, and the key held by another session
                     * than the row's: as if there were no row. */
                    rowless = used != h.conn_id;
                }
                free(h.name);
            }
            if (rc == DLOCK_OK && rowless && !ms->lease_mode && used != 0) {
                struct holder w;
                int wf = 0;

                /* A waiter granted the GET_LOCK that has not claimed it:
                 * held while its wait's lease lasts; after that it is
                 * fenced off by the next acquire, so not held.  Else a
                 * GET_LOCK-only holder (an application using the key
                 * directly, or any login of the server: GET_LOCK needs
                 * no rights): held, known only by its session. */
                mysql_free_result(res);
                res = NULL;
                rc = dlock__my_read_waiter(ms, c, ml.key, ml.key_len, used, &w,
                                           &wf);
                if (rc == DLOCK_OK && wf && w.left > 0)
                    fill_info(out, &w);
                else if (rc == DLOCK_OK && !wf)
                    rc = other_client(ms, c, used, out);
            }
        }
        mysql_free_result(res);
    }
    *dead = rc != DLOCK_OK && dlock__my_conn_error(mysql_errno(c->db));
    return rc;
}

int dlock__my_status(struct dlock_store *s, const char *name, dlock_info *out)
{
    dlock_info blank = *out;
    struct name_call k = {(struct my_store *)s, name, out, NULL, NULL, &blank};

    return dlock__pool_run(&k.ms->pool, status_fn, &k);
}

/* sql/list.sql's LIKE pattern for prefix, into p (room for 2 * 24 * 4 +
 * 2 bytes): the prefix up to its first byte that does not begin a
 * complete valid UTF-8 character (no name holds one, and the server would
 * not take it as utf8mb4), at most 24 characters (dlock__mysql_key(): a
 * hashed key keeps the name's first 24), '!', '%' and '_' escaped by
 * '!', then '%'.  Every row whose key or name starts with the prefix
 * matches it; the caller checks the whole name.  Returns its length. */
static size_t list_pattern(const char *prefix, char *p)
{
    size_t head = dlock__utf8_head(prefix, strlen(prefix), 24), j = 0;

    for (size_t i = 0; i < head; i++) {
        if (prefix[i] == '!' || prefix[i] == '%' || prefix[i] == '_')
            p[j++] = '!';
        p[j++] = prefix[i];
    }
    p[j++] = '%';
    return j;
}

/* The names of the live rows under the prefix. */
static int names_fn(void *conn, void *arg, int *dead)
{
    struct name_call *k = arg;
    struct my_store *ms = k->ms;
    size_t plen = strlen(k->name);
    struct conn *c = conn;
    struct sb b = {0};
    MYSQL_RES *res = NULL;
    MYSQL_ROW row;
    char pat[2 * 24 * 4 + 2];
    int rc;

    MY_BIND(&b, c, ms->sql.list[ms->mariadb != 0][ms->have_lim != 0],
            MV_S(pat, list_pattern(k->name, pat)));
    if (b.oom) {
        dlock__my_sb_free(&b);
        return dlock__enomem();
    }
    rc = dlock__my_run(ms, c, &b, &res, "list");
    dlock__my_sb_free(&b);
    *dead = rc != DLOCK_OK && dlock__my_conn_error(mysql_errno(c->db));
    if (rc != DLOCK_OK &&
        (mysql_errno(c->db) == ER_CANT_AGGREGATE_2COLLATIONS ||
         mysql_errno(c->db) == ER_CANT_AGGREGATE_3COLLATIONS ||
         mysql_errno(c->db) == ER_CANT_AGGREGATE_NCOLLATIONS)) {
        /* A prefix the name column cannot store (its-mieger's latin1
         * table: Greek, CJK): no key in it starts so, no name to list. */
        dlock__clearerr();
        return DLOCK_OK;
    }
    while (rc == DLOCK_OK && res != NULL && (row = mysql_fetch_row(res))) {
        struct holder h;

        dlock__my_read_holder(row, mysql_fetch_lengths(res), &h, 1);
        if (row[10] != NULL && h.name == NULL) {
            rc = dlock__enomem();
            break;
        }
        if (h.name != NULL && !dlock__my_holder_dead(&h) &&
            !dlock__my_is_waiter(&h) && h.name_len >= plen &&
            h.name_len <= DLOCK_NAME_MAX && memcmp(h.name, k->name, plen) == 0)
            rc = dlock__names_add(k->names, h.name, h.name_len);
        free(h.name);
    }
    mysql_free_result(res);
    return rc;
}

int dlock__my_list(struct dlock_store *s, const char *prefix,
                   int (*cb)(const dlock_info *info, void *payload),
                   void *payload)
{
    struct dlock__names names = {0};
    struct name_call k = {
        (struct my_store *)s, prefix, NULL, NULL, &names, NULL};

    return dlock__pool_list(&k.ms->pool, names_fn, &k, &names, s,
                            dlock__my_status, cb, payload);
}

/* The holders to break: connections holding GET_LOCK(key), session mode
 * only. */
struct victims {
    struct victim {
        unsigned long long conn_id;
        char key[KEY_MAX + 1]; /* GET_LOCK's key, raw */
        size_t key_len;
        int killed;
    } * v;
    size_t n, cap;
};

/* Holder h's connection, if it still holds key (nothing in lease mode). */
static int add_victim(struct my_store *ms, struct victims *vs,
                      const struct holder *h, const char *key, size_t len)
{
    if (ms->lease_mode || h->conn_id == 0 || h->used_by != h->conn_id ||
        len > KEY_MAX)
        return DLOCK_OK;
    if (vs->n == vs->cap) {
        size_t cap = vs->cap ? 2 * vs->cap : 8;
        struct victim *nv = realloc(vs->v, cap * sizeof(*nv));

        if (nv == NULL)
            return dlock__enomem();
        vs->v = nv;
        vs->cap = cap;
    }
    vs->v[vs->n].conn_id = h->conn_id;
    memcpy(vs->v[vs->n].key, key, len);
    vs->v[vs->n].key_len = len;
    vs->v[vs->n].killed = 0;
    vs->n++;
    return DLOCK_OK;
}

/* KILL the victims' connections; then, since KILL returns before the
 * session ends, wait (bounded) until their GET_LOCKs are free, so an
 * acquire right after us succeeds. */
static int kill_victims(struct my_store *ms, struct conn *c, const char *name,
                        struct victims *vs)
{
    struct victim *v = vs->v;
    struct sb b = {0};
    int rc = DLOCK_OK;

    for (size_t i = 0; i < vs->n && rc == DLOCK_OK; i++) {
        dlock__my_sb_reset(&b);
        MY_BIND(&b, c, ms->sql.kill, MV_U(v[i].conn_id));
        if (dlock__my_query(c, b.p, b.len) == 0)
            v[i].killed = 1;
        else if (mysql_errno(c->db) == ER_KILL_DENIED_ERROR)
            rc = dlock__seterr(DLOCK_ESTORE,
                               "'%s': row removed, but this user may not "
                               "KILL the holder's connection %llu (needs "
                               "CONNECTION ADMIN or SUPER); it keeps its "
                               "GET_LOCK until it notices: %s",
                               name, v[i].conn_id, mysql_error(c->db));
        else if (mysql_errno(c->db) != ER_NO_SUCH_THREAD)
            rc = dlock__my_db_err(ms, c, "release --force");
    }
    for (size_t i = 0; i < vs->n && rc == DLOCK_OK; i++) {
        int gone = !v[i].killed;

        for (int64_t until = dlock__now_ms() + ms->timeout_ms;
             !gone && dlock__now_ms() < until;) {
            long long used = 0;
            int found;
            dlock__my_sb_reset(&b);
            MY_BIND(&b, c, ms->sql.used_by, MV_S(v[i].key, v[i].key_len));
            rc = dlock__my_run_int(ms, c, &b, &used, &found, "release --force");
            if (rc != DLOCK_OK)
                break;
            if ((unsigned long long)used != v[i].conn_id)
                gone = 1;
            else
                dlock__sleep_ms(2);
        }
        /* The wait ran out with the KILLed session still ending (a long
         * statement, a loaded server): the row is gone, but an acquire
         * right now would still find the GET_LOCK taken.  Not OK. */
        if (rc == DLOCK_OK && !gone)
            rc = dlock__seterr(DLOCK_EUNAVAIL,
                               "'%s': row removed and the holder's "
                               "connection %llu KILLed, but it still holds "
                               "its GET_LOCK after %lld ms (the session is "
                               "still ending; the lock is free once it has)",
                               name, v[i].conn_id, (long long)ms->timeout_ms);
    }
    dlock__my_sb_free(&b);
    return rc;
}

/* A semaphore's head h: its holders are the slot rows.  Delete them
 * (*removed: how many) and add the connections still holding their
 * slot's GET_LOCK to vs. */
static int force_slots(struct my_store *ms, struct conn *c,
                       const struct holder *h, unsigned *removed,
                       struct victims *vs)
{
    char prefix[DLOCK__MYSQL_SEM_PREFIX + 2];
    struct sb b = {0};
    MYSQL_RES *res = NULL;
    MYSQL_ROW row;
    int rc = dlock__mysql_sem_prefix(h->name, h->name_len, prefix);

    if (rc != DLOCK_OK)
        return rc;
    strcat(prefix, "%"); /* LIKE: the slot keys under it */
    /* An admission that slips in between this read and the delete loses
     * its row too, unkilled: like every holder here it is told LOST at its
     * next renewal, and its slot's GET_LOCK lasts only until then. */
    MY_BIND(&b, c, ms->sql.sem_rows[ms->mariadb != 0][ms->have_lim != 0],
            MV_Z(prefix));
    rc = dlock__my_run(ms, c, &b, &res, "release --force");
    while (rc == DLOCK_OK && res != NULL && (row = mysql_fetch_row(res))) {
        struct holder s;

        dlock__my_read_holder(row, mysql_fetch_lengths(res), &s, 1);
        rc = s.name == NULL ? dlock__enomem()
                            : add_victim(ms, vs, &s, s.name, s.name_len);
        free(s.name);
    }
    mysql_free_result(res);
    if (rc == DLOCK_OK) {
        dlock__my_sb_reset(&b);
        MY_BIND(&b, c, ms->sql.force_delete_slots, MV_Z(prefix));
        rc = dlock__my_run(ms, c, &b, NULL, "release --force");
        if (rc == DLOCK_OK)
            *removed = (unsigned)mysql_affected_rows(c->db);
    }
    dlock__my_sb_free(&b);
    return rc;
}

/* No row at the key: if the session holding its GET_LOCK is a waiter
 * granted it that has not claimed it (its waiter row for the key is
 * there, live or not), that row goes (*removed) and the session is a
 * victim.  A session with no waiter row holds the key with GET_LOCK only
 * (not a dlock holder): left alone. */
static int force_waiter(struct my_store *ms, struct conn *c,
                        const struct my_lock *ml, unsigned *removed,
                        struct victims *vs)
{
    char wname[WNAME_MAX + 1];
    struct holder w;
    struct sb b = {0};
    long long used = 0;
    int found, rc;

    MY_BIND(&b, c, ms->sql.used_by, MV_KEY(ml));
    rc = dlock__my_run_int(ms, c, &b, &used, &found, "release --force");
    if (rc != DLOCK_OK || !found || used <= 0)
        goto out;
    rc = dlock__my_read_waiter(ms, c, ml->key, ml->key_len,
                               (unsigned long long)used, &w, &found);
    if (rc != DLOCK_OK || !found)
        goto out;
    rc = dlock__my_wait_name(ml->key, ml->key_len, (unsigned long long)used,
                             wname);
    if (rc != DLOCK_OK)
        goto out;
    dlock__my_sb_reset(&b);
    MY_BIND(&b, c, ms->sql.force_delete_waiter, MV_Z(wname), MV_I(used));
    rc = dlock__my_run(ms, c, &b, NULL, "release --force");
    if (rc != DLOCK_OK)
        goto out;
    *removed = (unsigned)mysql_affected_rows(c->db);
    w.used_by = w.conn_id = (unsigned long long)used;
    rc = add_victim(ms, vs, &w, ml->key, ml->key_len);
out:
    dlock__my_sb_free(&b);
    return rc;
}

static int force_fn(void *conn, void *arg, int *dead)
{
    struct name_call *k = arg;
    struct my_store *ms = k->ms;
    const char *name = k->name;
    unsigned *removed = k->removed;
    struct my_lock ml;
    struct conn *c = conn;
    struct sb b = {0};
    MYSQL_RES *res;
    MYSQL_ROW row;
    struct holder h = {0};
    struct victims vs = {0};
    int rc, have = 0, sem;

    *removed = 0;
    *dead = 0;
    rc = dlock__mysql_key(name, strlen(name), ms->mariadb, ml.key, &ml.key_len);
    if (rc != DLOCK_OK)
        return rc;
    if (dlock__mysql_reserved_key(ml.key, ml.key_len)) {
        *dead = 0;
        return dlock__seterr(DLOCK_EINVAL,
                             "refusing to force-release a name spelt as a "
                             "semaphore's slot key or a waiter's row "
                             "(40 hex digits, '#' or '~', digits): it "
                             "would break another lock's holder or waiter");
    }
    c->name = name;
    MY_BIND(&b, c, ms->sql.read_row[ms->mariadb != 0][ms->have_lim != 0],
            MV_KEY(&ml));
    rc = dlock__my_run(ms, c, &b, &res, "release --force");
    if (rc == DLOCK_OK && res != NULL) {
        row = mysql_fetch_row(res);
        if (row != NULL) {
            dlock__my_read_holder(row, mysql_fetch_lengths(res), &h, 1);
            have = 1;
            if (h.name == NULL)
                rc = dlock__enomem();
        }
        mysql_free_result(res);
    }
    if (rc == DLOCK_OK && !have && !ms->lease_mode)
        rc = force_waiter(ms, c, &ml, removed, &vs);
    if (rc != DLOCK_OK || !have) {
        if (rc == DLOCK_OK && vs.n > 0)
            rc = kill_victims(ms, c, name, &vs);
        goto out;
    }
    /* A semaphore's head row: break every holder (the slot rows), not just
     * the head.  A lock's row: break its holder. */
    sem = h.lim > 1 && !h.has_owner;
    rc = sem ? force_slots(ms, c, &h, removed, &vs)
             : add_victim(ms, &vs, &h, ml.key, ml.key_len);
    if (rc == DLOCK_OK) {
        dlock__my_sb_reset(&b);
        MY_BIND(&b, c, ms->sql.force_delete, MV_KEY(&ml));
        rc = dlock__my_run(ms, c, &b, NULL, "release --force");
        if (rc == DLOCK_OK && !sem)
            *removed = (unsigned)mysql_affected_rows(c->db);
    }
    if (rc == DLOCK_OK)
        rc = kill_victims(ms, c, name, &vs);
out:
    free(vs.v);
    free(h.name);
    dlock__my_sb_free(&b);
    *dead = rc != DLOCK_OK && dlock__my_conn_error(mysql_errno(c->db));
    return rc;
}

int dlock__my_force_release(struct dlock_store *s, const char *name,
                            unsigned *removed)
{
    struct name_call k = {
        (struct my_store *)s, name, NULL, removed, NULL, NULL};

    return dlock__pool_run(&k.ms->pool, force_fn, &k);
}
