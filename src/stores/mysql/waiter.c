/*
 * waiter.c - waiter rows, a wait's lease on the server (see my.h): their
 * names, reading them, and judging a session that holds a key's GET_LOCK
 * with no row (dlock__my_rowless()).
 */
#include <mysqld_error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "my.h"

/* --- waiters' leases (see my.h) ---------------------------------------- */

int dlock__my_wait_name(const char *key, size_t key_len,
                        unsigned long long conn_id, char out[WNAME_MAX + 1])
{
    char buf[KEY_MAX + 6], p[DLOCK__MYSQL_SEM_PREFIX + 1];
    int rc;

    if (key_len > KEY_MAX)
        key_len = KEY_MAX;
    memcpy(buf, key, key_len);
    memcpy(buf + key_len, "\0wait", 5);
    out[0] = '\0';
    rc = dlock__mysql_sem_prefix(buf, key_len + 5, p);
    if (rc != DLOCK_OK)
        return rc;
    snprintf(out, WNAME_MAX + 1, "%.40s~%llu", p, conn_id);
    return DLOCK_OK;
}

int dlock__my_is_waiter(const struct holder *h)
{
    size_t i;

    if (h->acquired || !h->has_owner || h->fence != 0 || h->name == NULL ||
        h->name_len < 42 || h->name_len > WNAME_MAX)
        return 0;
    for (i = 0; i < 40; i++)
        if (!((h->name[i] >= '0' && h->name[i] <= '9') ||
              (h->name[i] >= 'a' && h->name[i] <= 'f')))
            return 0;
    if (h->name[i++] != '~')
        return 0;
    for (; i < h->name_len; i++)
        if (h->name[i] < '0' || h->name[i] > '9')
            return 0;
    return 1;
}

int dlock__my_read_waiter(struct my_store *ms, struct conn *c, const char *key,
                          size_t key_len, unsigned long long conn_id,
                          struct holder *h, int *found)
{
    struct my_lock w;
    int rc;

    memset(&w, 0, sizeof(w));
    memset(h, 0, sizeof(*h));
    *found = 0;
    rc = dlock__my_wait_name(key, key_len, conn_id, w.key);
    if (rc != DLOCK_OK)
        return rc;
    w.key_len = strlen(w.key);
    rc = dlock__my_read_row(ms, c, &w, h, found, 1);
    if (rc == DLOCK_OK && *found &&
        (!dlock__my_is_waiter(h) || h->conn_id != conn_id))
        *found = 0; /* not a waiter row of that session: not one */
    free(h->name);
    h->name = NULL;
    return rc;
}

/* Session `used` holds ml's key with no row at the key, and its waiter
 * row w (read) says its lease is over: delete exactly that row, still
 * over, and then KILL the session if it still holds the key.  The delete
 * decides against the waiter's own (which asks that the lease still be
 * current): a waiter that claimed in time kept its row and is not
 * KILLed; one that did not can no more claim. */
static int fence_waiter(struct my_store *ms, struct conn *c,
                        const struct my_lock *ml, unsigned long long used,
                        const struct holder *w, int64_t *retry_ms, int *killed)
{
    char wname[WNAME_MAX + 1];
    struct sb b = {0};
    long long now_used = 0;
    int found, rc;

    *retry_ms = 0;
    rc = dlock__my_wait_name(ml->key, ml->key_len, used, wname);
    if (rc != DLOCK_OK)
        return rc;
    MY_BIND(&b, c, ms->sql.waiter_fence_off, MV_Z(wname), MV_U(used),
            MV_Z(w->owner));
    rc = dlock__my_run(ms, c, &b, NULL, "fencing off a waiter");
    *retry_ms = 0;
    if (rc != DLOCK_OK || mysql_affected_rows(c->db) != 1) {
        dlock__my_sb_free(&b);
        return rc; /* renewed or fenced off meanwhile: look again */
    }
    dlock__my_sb_reset(&b);
    MY_BIND(&b, c, ms->sql.used_by, MV_KEY(ml));
    rc = dlock__my_run_int(ms, c, &b, &now_used, &found, "IS_USED_LOCK");
    dlock__my_sb_free(&b);
    if (rc == DLOCK_OK && found && (unsigned long long)now_used == used)
        rc = dlock__my_kill_holder(ms, c, ml, used, killed);
    return rc;
}

/* The key's GET_LOCK is held and no row is there.  A session this acquire
 * saw holding it with a row lost that row to someone else (its-mieger's
 * clean-up of an expired row, `release --force` without KILL rights, a
 * DBA): it has no lease left to honour once that row's lease is over, and
 * is KILLed then like any holder past its lease, but not before it has
 * been seen without a row for ?timeout= (a session taking the key again
 * holds the GET_LOCK for a moment before its row is in).  Any other
 * session never had a row: a GET_LOCK-only client (an application using
 * GET_LOCK directly, mpyw/laravel-database-advisory-lock) is a legitimate
 * holder with no lease, waited for without bound, never KILLed.  *retry_ms
 * is when to look again (-1: when it lets go). */
int dlock__my_rowless(struct my_store *ms, struct conn *c, struct my_lock *ml,
                      int64_t *retry_ms, int *killed)
{
    struct sb b = {0};
    struct holder w;
    long long used = 0;
    int found, rc;

    MY_BIND(&b, c, ms->sql.used_by, MV_KEY(ml));
    rc = dlock__my_run_int(ms, c, &b, &used, &found, "IS_USED_LOCK");
    dlock__my_sb_free(&b);
    if (rc != DLOCK_OK)
        return rc;
    memset(&w, 0, sizeof(w));
    found = 0;
    if (used != 0)
        rc = dlock__my_read_waiter(ms, c, ml->key, ml->key_len,
                                   (unsigned long long)used, &w, &found);
    if (rc != DLOCK_OK)
        return rc;
    return dlock__my_rowless_read(ms, c, ml, used, &w, found, retry_ms, killed);
}

int dlock__my_read_contended(struct my_store *ms, struct conn *c,
                             const struct my_lock *ml, struct holder *h,
                             int *found, long long *used, struct holder *w,
                             int *wfound)
{
    char wname[WNAME_MAX + 1];
    struct sb b = {0};
    MYSQL_RES *res;
    MYSQL_ROW row;
    int rc;

    *found = *wfound = 0;
    *used = 0;
    memset(h, 0, sizeof(*h));
    memset(w, 0, sizeof(*w));
    rc = dlock__my_wait_name(ml->key, ml->key_len, 0, wname);
    if (rc != DLOCK_OK)
        return rc;
    wname[41] = '\0'; /* the prefix: 40 hex digits and '~' */
    MY_BIND(&b, c, ms->sql.read_contended[ms->mariadb != 0][ms->have_lim != 0],
            MV_KEY(ml), MV_Z(wname), MV_KEY(ml), MV_KEY(ml));
    rc = dlock__my_run(ms, c, &b, &res, "acquire");
    dlock__my_sb_free(&b);
    if (rc != DLOCK_OK)
        return rc;
    while (res != NULL && (row = mysql_fetch_row(res)) != NULL) {
        unsigned long *lens = mysql_fetch_lengths(res);
        const char *tag = mysql_num_fields(res) == 13 ? row[12] : NULL;

        if (tag == NULL || lens == NULL) {
            rc = dlock__seterr(DLOCK_ESTORE,
                               "%s answered a row of another shape",
                               ms->base.url);
            break;
        }
        if (tag[0] == '0' && !*found) {
            dlock__my_read_holder(row, lens, h, 0);
            *found = 1;
        } else if (tag[0] == '1' && !*wfound) {
            dlock__my_read_holder(row, lens, w, 1);
            *wfound = 1;
            if (w->name == NULL) {
                rc = dlock__enomem();
                break;
            }
        } else if (tag[0] == '2' && row[4] != NULL) {
            *used = strtoll(row[4], NULL, 10);
        }
    }
    mysql_free_result(res);
    /* Not a waiter row of that very session: not one (as
     * dlock__my_read_waiter() judges). */
    if (rc == DLOCK_OK && *wfound &&
        (!dlock__my_is_waiter(w) || *used <= 0 ||
         w->conn_id != (unsigned long long)*used))
        *wfound = 0;
    free(w->name);
    w->name = NULL;
    if (rc != DLOCK_OK)
        *found = *wfound = 0;
    return rc;
}

int dlock__my_rowless_read(struct my_store *ms, struct conn *c,
                           struct my_lock *ml, long long used,
                           const struct holder *w, int wfound,
                           int64_t *retry_ms, int *killed)
{
    struct holder h;
    int64_t now, bound;
    int found, rc;

    if (used == 0) {
        *retry_ms = 0; /* let go meanwhile */
        return DLOCK_BUSY;
    }
    /* A waiter granted the GET_LOCK that has not claimed it (yet): its
     * waiter row's lease bounds the wait for it. */
    if (wfound) {
        ml->rowless_since = 0;
        if (w->left > 0) {
            *retry_ms = w->left;
            return dlock__seterr(DLOCK_BUSY,
                                 "lock '%s' was granted to a waiting "
                                 "client (MySQL session %lld, pid %lld on "
                                 "%s) that has not claimed it yet; its "
                                 "wait's lease has %lld ms left",
                                 c->name ? c->name : ml->key, used, w->pid,
                                 w->host, w->left);
        }
        return fence_waiter(ms, c, ml, (unsigned long long)used, w, retry_ms,
                            killed);
    }
    if ((unsigned long long)used != ml->seen_conn) {
        ml->rowless_since = 0;
        return dlock__seterr(DLOCK_BUSY,
                             "lock '%s' is held by MySQL session %lld "
                             "with GET_LOCK only, with no row in %s (not "
                             "a lease this acquire saw): waiting for it "
                             "to let go, without a lease to bound the wait",
                             c->name ? c->name : ml->key, used, ms->raw_table);
    }
    now = dlock__now_ms();
    if (ml->rowless_since == 0)
        ml->rowless_since = now;
    bound = ml->rowless_since + ms->timeout_ms;
    if (bound < ml->seen_until)
        bound = ml->seen_until;
    if (now < bound) {
        *retry_ms = bound - now;
        return DLOCK_BUSY;
    }
    /* Still no row (a row back means a holder with a lease again)? */
    rc = dlock__my_read_row(ms, c, ml, &h, &found, 0);
    if (rc != DLOCK_OK)
        return rc;
    if (found) {
        *retry_ms = 0;
        return DLOCK_BUSY;
    }
    return dlock__my_kill_holder(ms, c, ml, ml->seen_conn, killed);
}
