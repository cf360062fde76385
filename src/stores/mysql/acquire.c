/*
 * acquire.c - one attempt at a MySQL lock or semaphore slot: GET_LOCK,
 * the row, taking over a holder that is dead or past its lease (the try
 * and the wait's slices around it: wait.c).
 */
#include <mysqld_error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "my.h"

void dlock__my_sb_key(struct sb *b, struct conn *c, const struct my_lock *ml)
{
    dlock__my_sb_lit(b, c, ml->key, ml->key_len);
}

/* Best effort: drop our GET_LOCK (once) on this connection. */
void dlock__my_release_getlock(struct my_store *ms, struct conn *c,
                               const struct my_lock *ml)
{
    struct sb b = {0};
    long long v;
    int found;

    dlock__my_sb_add(&b, "SELECT RELEASE_LOCK(");
    dlock__my_sb_key(&b, c, ml);
    dlock__my_sb_add(&b, ")");
    (void)dlock__my_run_int(ms, c, &b, &v, &found, "RELEASE_LOCK");
    dlock__my_sb_free(&b);
}

/* Delete our own row (whatever state it is in). */
int dlock__my_delete_own_row(struct my_store *ms, struct conn *c,
                             const struct dlock_lock *lk,
                             const struct my_lock *ml)
{
    struct sb b = {0};
    int rc;

    dlock__my_sb_add(&b, "DELETE FROM %s WHERE name = ", ms->table);
    dlock__my_sb_key(&b, c, ml);
    dlock__my_sb_add(&b, " AND owner = '%s'", lk->token);
    rc = dlock__my_run(ms, c, &b, NULL, "deleting a lock row");
    dlock__my_sb_free(&b);
    return rc;
}

/* End the session conn_id that holds ml's GET_LOCK past its lease, so it
 * loses the GET_LOCK and its pending work fails.  *killed is set when the
 * KILL was sent. */
static int kill_holder(struct my_store *ms, struct conn *c,
                       const struct my_lock *ml, unsigned long long conn_id,
                       int *killed)
{
    char sql[64];
    int n = snprintf(sql, sizeof(sql), "KILL CONNECTION %llu", conn_id);

    if (dlock__my_query(c, sql, (size_t)n) == 0) {
        *killed = 1;
        return DLOCK_OK;
    }
    if (mysql_errno(c->db) == ER_KILL_DENIED_ERROR)
        return dlock__seterr(DLOCK_BUSY,
                             "lock '%.*s': its holder's lease ran out "
                             "but this user may not KILL its connection "
                             "%llu (needs CONNECTION ADMIN or SUPER): %s",
                             (int)ml->key_len, ml->key, conn_id,
                             mysql_error(c->db));
    if (mysql_errno(c->db) != ER_NO_SUCH_THREAD)
        return dlock__my_db_err(ms, c, "KILL of an expired holder");
    return DLOCK_OK;
}

/* Take over a dead holder's row: delete exactly that row if it is still
 * dead, then KILL its session if (and only if) that session still holds
 * our key's GET_LOCK.  *killed is set when a KILL was sent. */
static int take_over(struct my_store *ms, struct conn *c,
                     const struct my_lock *ml, const struct holder *h,
                     int *killed)
{
    struct sb b = {0};
    long long used = 0;
    int found, rc;

    dlock__my_sb_add(&b, "DELETE FROM %s WHERE name = ", ms->table);
    dlock__my_sb_key(&b, c, ml);
    dlock__my_sb_add(&b, " AND connection_id = %llu AND created = %lld AND ",
                     h->conn_id, h->created);
    if (h->has_owner)
        dlock__my_sb_add(&b, "owner = '%s'", h->owner);
    else
        dlock__my_sb_add(&b, "owner IS NULL");
    dlock__my_sb_add(&b,
                     " AND (" EXPIRES " <= " NOWMS " OR (lock_acquired AND "
                     "IFNULL(IS_USED_LOCK(" ROW_KEY "), 0) <> connection_id))");
    rc = dlock__my_run(ms, c, &b, NULL, "taking over an expired lock");
    if (rc != DLOCK_OK || mysql_affected_rows(c->db) != 1 || h->conn_id == 0 ||
        h->conn_id == c->id) {
        dlock__my_sb_free(&b);
        return rc;
    }
    dlock__my_sb_reset(&b);
    dlock__my_sb_add(&b, "SELECT IFNULL(IS_USED_LOCK(");
    dlock__my_sb_key(&b, c, ml);
    dlock__my_sb_add(&b, "), 0)");
    rc = dlock__my_run_int(ms, c, &b, &used, &found, "IS_USED_LOCK");
    dlock__my_sb_free(&b);
    if (rc == DLOCK_OK && found && (unsigned long long)used == h->conn_id)
        rc = kill_holder(ms, c, ml, h->conn_id, killed);
    return rc;
}

/* The row holding ml's key, if any (*found). */
static int read_row_n(struct my_store *ms, struct conn *c,
                      const struct my_lock *ml, struct holder *h, int *found,
                      int want_name)
{
    struct sb b = {0};
    MYSQL_RES *res;
    MYSQL_ROW row;
    int rc;

    *found = 0;
    dlock__my_sb_add(&b,
                     "SELECT %s FROM %s WHERE name = ", dlock__my_columns(ms),
                     ms->table);
    dlock__my_sb_key(&b, c, ml);
    rc = dlock__my_run(ms, c, &b, &res, "acquire");
    dlock__my_sb_free(&b);
    if (rc != DLOCK_OK)
        return rc;
    row = res != NULL ? mysql_fetch_row(res) : NULL;
    if (row != NULL) {
        dlock__my_read_holder(row, mysql_fetch_lengths(res), h, want_name);
        *found = 1;
        if (want_name && h->name == NULL)
            rc = dlock__enomem();
    }
    mysql_free_result(res);
    return rc;
}

static int read_row(struct my_store *ms, struct conn *c,
                    const struct my_lock *ml, struct holder *h, int *found)
{
    return read_row_n(ms, c, ml, h, found, 0);
}

/* lk was taken by a statement sent at `sent` (this process's clock) that
 * wrote a lease of a whole ttl on the server's clock, which started when
 * the server ran it: no earlier than `sent`.  The lease this process
 * counts starts there too, not when the attempt or the wait slice began
 * (the core's guess): a takeover comes after a wait for the old holder's
 * lease, and after a KILL, which must not come out of the new one. */
static void lease_from(struct dlock_lock *lk, int64_t sent)
{
    if (sent + lk->ttl_ms > lk->lease_end)
        lk->lease_end = sent + lk->ttl_ms;
}

/* --- semaphores: the head row and the slots -----------------------------
 *
 * A semaphore of N holds, per holder, slot i's GET_LOCK (session mode)
 * and a row named by slot i's key (lim N, slot i); and, while any holder
 * is in, one head row named by the name's own key K (lim N, owner NULL,
 * connection 0, a lease of DLOCK_TTL_MAX_MS that no client renews): what
 * a limit-1 acquirer of the name runs into.  A head is live while a live
 * slot row of its name is; a dead one is deleted by whoever finds it, but
 * only if its fence is still what was read before counting the slots:
 * every admission writes its own fence into the head after inserting its
 * slot row, and backs out if that finds no head of its limit.  So an
 * admission and a deletion of the head that overlap cannot both win. */

/* Slot key i of ml's semaphore into ml->key. */
void dlock__my_set_slot(struct my_lock *ml, unsigned i)
{
    if (ml->slot != (int)i) {
        ml->seen_conn = 0;
        ml->rowless_since = 0;
    }
    ml->slot = (int)i;
    ml->key_len = (size_t)snprintf(ml->key, sizeof(ml->key), "%s%u",
                                   ml->prefix, i);
}

/* The live slot rows of the semaphore whose slot keys start with prefix
 * (any limit): how many (*count), which slots below n are taken (taken,
 * may be NULL), the soonest lease end among them (*soonest, -1 none). */
static int sem_live(struct my_store *ms, struct conn *c, const char *prefix,
                    unsigned char *taken, unsigned n, long long *count,
                    int64_t *soonest)
{
    struct sb b = {0};
    MYSQL_RES *res = NULL;
    MYSQL_ROW row;
    int rc;

    *count = 0;
    *soonest = -1;
    dlock__my_sb_add(&b,
                     "SELECT slot, " EXPIRES " - " NOWMS " FROM %s WHERE "
                     "name LIKE '%s%%' AND " EXPIRES " > " NOWMS " AND "
                     "(lock_acquired = 0 OR IFNULL(IS_USED_LOCK(" ROW_KEY
                     "), 0) = connection_id)",
                     ms->table, prefix);
    rc = dlock__my_run(ms, c, &b, &res, "counting semaphore holders");
    dlock__my_sb_free(&b);
    while (rc == DLOCK_OK && res != NULL && (row = mysql_fetch_row(res))) {
        long long left = row[1] ? strtoll(row[1], NULL, 10) : 0;

        (*count)++;
        if (taken != NULL && row[0] != NULL) {
            long long i = strtoll(row[0], NULL, 10);

            if (i >= 0 && (unsigned long long)i < n)
                taken[i] = 1;
        }
        if (*soonest < 0 || left < *soonest)
            *soonest = left;
    }
    mysql_free_result(res);
    return rc;
}

/* The row h at the name's own key is a semaphore's head.  No live holder
 * of it: deleted (if unchanged), *gone = 1 (look again).  Else *gone = 0,
 * and DLOCK_EINVAL if want (the limit asked; 0: any) is not its limit. */
static int sem_head(struct my_store *ms, struct conn *c,
                    const struct my_lock *hd, const struct holder *h,
                    const char *name, unsigned want, int *gone)
{
    char prefix[DLOCK__MYSQL_SEM_PREFIX + 1];
    struct sb b = {0};
    long long count;
    int64_t soonest;
    int rc;

    *gone = 0;
    /* The head's own name: under a case-insensitive collation the row at
     * our key may be another name's. */
    dlock__mysql_sem_prefix(h->name != NULL ? h->name : name,
                            h->name != NULL ? h->name_len : strlen(name),
                            prefix);
    rc = sem_live(ms, c, prefix, NULL, 0, &count, &soonest);
    if (rc != DLOCK_OK)
        return rc;
    if (count > 0) {
        if (want != 0 && want != h->lim)
            return dlock__seterr(DLOCK_EINVAL,
                                 "lock '%s' is held with limit %u; this "
                                 "acquire asked limit %u",
                                 name, h->lim, want);
        return DLOCK_OK;
    }
    dlock__my_sb_add(&b, "DELETE FROM %s WHERE name = ", ms->table);
    dlock__my_sb_key(&b, c, hd);
    dlock__my_sb_add(&b,
                     " AND lim > 1 AND owner IS NULL AND IFNULL(fence, 0) "
                     "= %llu",
                     h->fence);
    rc = dlock__my_run(ms, c, &b, NULL, "deleting a semaphore's head");
    dlock__my_sb_free(&b);
    *gone = rc == DLOCK_OK;
    return rc;
}

/* A limit-1 acquire met row h at its key: a semaphore's head is EINVAL
 * while it has live holders; *gone: it had none and went (look again). */
static int lock_meets_head(struct my_store *ms, struct conn *c,
                           const struct dlock_lock *lk,
                           const struct my_lock *ml, int *gone)
{
    struct holder h;
    int found, rc;

    *gone = 1;
    rc = read_row_n(ms, c, ml, &h, &found, 1);
    if (rc != DLOCK_OK || !found)
        return rc;
    if (h.lim > 1 && !h.has_owner)
        rc = sem_head(ms, c, ml, &h, lk->name, 1, gone);
    else
        *gone = 0;
    free(h.name);
    return rc;
}

/* Insert our row, then take a fence as its holder and write it into the
 * row, in one transaction where the tables are transactional (InnoDB:
 * one commit; on MyISAM each statement stands alone, and a failure
 * deletes the row again).  *dup: a row for the key is there already
 * (nothing changed). */
static int insert_row(struct my_store *ms, struct conn *c,
                      struct dlock_lock *lk, const struct my_lock *ml, int *dup)
{
    struct sb b = {0};
    uint64_t fence = 0;
    int64_t sent = 0;
    int rc = DLOCK_OK;

    for (int tries = 0;; tries++) {
        unsigned e;

        *dup = 0;
        if (mysql_real_query(c->db, "START TRANSACTION", 17) != 0) {
            rc = dlock__my_db_err(ms, c, "acquire");
            break;
        }
        dlock__my_sb_reset(&b);
        dlock__my_sb_add(
            &b,
            "INSERT INTO %s (name, connection_id, created, ttl, "
            "lock_acquired, owner, expires_ms, acquired_ms, host, "
            "pid, full_name%s) VALUES (",
            ms->table, lk->limit > 1 ? ", lim, slot" : "");
        dlock__my_sb_key(&b, c, ml);
        dlock__my_sb_add(&b,
                         ", CONNECTION_ID(), UNIX_TIMESTAMP(), %lld, %d, '%s', "
                         NOWMS " + %lld, " NOWMS ", ",
                         (long long)((lk->ttl_ms + 999) / 1000),
                         ms->lease_mode ? 0 : 1, lk->token,
                         (long long)lk->ttl_ms);
        dlock__my_sb_lit(&b, c, dlock__hostname(), strlen(dlock__hostname()));
        dlock__my_sb_add(&b, ", %lld, ", (long long)dlock__pid());
        dlock__my_sb_lit(&b, c, lk->name, lk->name_len);
        if (lk->limit > 1)
            dlock__my_sb_add(&b, ", %u, %d", lk->limit, ml->slot);
        dlock__my_sb_add(&b, ")");
        if (b.oom) {
            rc = dlock__enomem();
            goto rollback;
        }
        /* The row's lease starts when the server runs this INSERT. */
        sent = dlock__now_ms();
        if (mysql_real_query(c->db, b.p, (unsigned long)b.len) != 0) {
            if (mysql_errno(c->db) == ER_DUP_ENTRY) {
                *dup = 1;
                rc = DLOCK_OK;
                goto rollback;
            }
            goto failed;
        }
        if (mysql_warning_count(c->db) != 0) {
            /* Without a strict sql_mode the server stores what the column
             * cannot hold as '?' and warns: that row is not our key.  A
             * MyISAM table keeps it through ROLLBACK, so it goes by its
             * owner token (the name in it is not ours to match). */
            (void)mysql_real_query(c->db, "ROLLBACK", 8);
            dlock__my_sb_reset(&b);
            dlock__my_sb_add(&b, "DELETE FROM %s WHERE owner = '%s'", ms->table,
                             lk->token);
            (void)dlock__my_run(ms, c, &b, NULL, "deleting a lock row");
            rc = dlock__my_unstorable(
                ms, lk->name, "the server stored it with substitutions");
            break;
        }
        if (ms->have_fseq) {
            /* The fence sequence (schema.c).  Lease mode also records
             * it in the name's durable counter, and if that counter was
             * higher (set there by an earlier client, or a DBA), raises
             * the sequence to it: every later fence is above it. */
            uint64_t n = 0;

            rc = dlock__my_fseq_next(ms, c, &n);
            if (rc != DLOCK_OK) {
                if (dlock__my_conn_error(mysql_errno(c->db)))
                    break;
                goto undo;
            }
            fence = n;
            if (ms->lease_mode) {
                struct sb k = {0};

                dlock__my_sb_reset(&b);
                dlock__my_sb_lit(&k, c, ml->nkey, ml->nkey_len);
                dlock__my_sb_add(&b,
                                 "INSERT INTO %s (name, fence) VALUES (%s, "
                                 "LAST_INSERT_ID(%llu)) ON DUPLICATE KEY "
                                 "UPDATE fence = LAST_INSERT_ID(GREATEST("
                                 "fence + 1, %llu))",
                                 ms->fences, k.oom ? "''" : k.p,
                                 (unsigned long long)n,
                                 (unsigned long long)n);
                if (k.oom)
                    b.oom = 1;
                dlock__my_sb_free(&k);
                if (b.oom) {
                    rc = dlock__enomem();
                    goto undo;
                }
                if (mysql_real_query(c->db, b.p, (unsigned long)b.len) != 0)
                    goto failed;
                fence = (uint64_t)mysql_insert_id(c->db);
                if (fence > n) {
                    dlock__my_sb_reset(&b);
                    dlock__my_sb_add(&b, "DO SETVAL(%s, %llu)", ms->fseq,
                                     (unsigned long long)fence);
                    if (b.oom) {
                        rc = dlock__enomem();
                        goto undo;
                    }
                    if (mysql_real_query(c->db, b.p, (unsigned long)b.len) !=
                        0)
                        goto failed;
                }
            }
        } else {
        /* LAST_INSERT_ID(expr) hands the new value back to this session
         * only: an atomic per-name increment in one statement. */
        dlock__my_sb_reset(&b);
        dlock__my_sb_fence(&b, ms, c, ml->nkey, ml->nkey_len, ms->lease_mode);
        if (b.oom) {
            rc = dlock__enomem();
            goto undo;
        }
        if (mysql_real_query(c->db, b.p, (unsigned long)b.len) != 0)
            goto failed;
        fence = (uint64_t)mysql_insert_id(c->db);
        }
        if (ms->lease_mode && ms->have_seq && !ms->have_fseq && fence != 0) {
            dlock__my_sb_reset(&b);
            dlock__my_sb_seq_raise(&b, ms, c, ml->nkey, ml->nkey_len, fence);
            if (b.oom) {
                rc = dlock__enomem();
                goto undo;
            }
            if (mysql_real_query(c->db, b.p, (unsigned long)b.len) != 0)
                goto failed;
        }
        dlock__my_sb_reset(&b);
        dlock__my_sb_add(&b, "UPDATE %s SET fence = %llu WHERE name = ",
                         ms->table, (unsigned long long)fence);
        dlock__my_sb_key(&b, c, ml);
        dlock__my_sb_add(&b, " AND owner = '%s'", lk->token);
        if (b.oom) {
            rc = dlock__enomem();
            goto undo;
        }
        if (mysql_real_query(c->db, b.p, (unsigned long)b.len) != 0 ||
            mysql_real_query(c->db, "COMMIT", 6) != 0)
            goto failed;
        if (fence == 0) {
            rc = dlock__seterr(DLOCK_ESTORE,
                               "taking a fence on %s: the "
                               "server returned no value",
                               ms->base.url);
            break; /* committed a row with no fence: caller cleans up */
        }
        lk->fence = fence;
        lease_from(lk, sent);
        rc = DLOCK_OK;
        break;
    failed:
        e = mysql_errno(c->db);
        rc = dlock__my_db_err(ms, c, "acquire");
        (void)mysql_real_query(c->db, "ROLLBACK", 8);
        /* A deadlock or lock wait timeout undid the whole transaction:
         * run it again (a MyISAM row stays: ours, deleted first). */
        if ((e == ER_LOCK_DEADLOCK || e == ER_LOCK_WAIT_TIMEOUT) && tries < 20) {
            (void)dlock__my_delete_own_row(ms, c, lk, ml);
            continue;
        }
        /* The caller deletes our row if the connection still works. */
        break;
    undo:
        (void)mysql_real_query(c->db, "ROLLBACK", 8);
        (void)dlock__my_delete_own_row(ms, c, lk, ml);
        break;
    rollback:
        (void)mysql_real_query(c->db, "ROLLBACK", 8);
        break;
    }
    dlock__my_sb_free(&b);
    return rc;
}

/* Insert our row (in lock mode: holding the key's GET_LOCK).  DLOCK_OK:
 * inserted; DLOCK_BUSY: a live holder has it (*retry_ms its lease left). */
static int claim_row(struct my_store *ms, struct conn *c, struct dlock_lock *lk,
                     const struct my_lock *ml, int64_t *retry_ms)
{
    int rc = DLOCK_BUSY;

    for (int tries = 0; tries < 4; tries++) {
        struct holder h;
        int dup, found, killed = 0;

        rc = insert_row(ms, c, lk, ml, &dup);
        if (rc != DLOCK_OK || !dup)
            break;
        /* Taken: look at the holder. */
        rc = read_row(ms, c, ml, &h, &found);
        if (rc != DLOCK_OK)
            break;
        rc = DLOCK_BUSY;
        if (!found)
            continue; /* gone meanwhile: insert again */
        if (lk->limit == 1 && h.lim > 1 && !h.has_owner) {
            int gone;

            /* A semaphore's head: EINVAL while it has holders. */
            rc = lock_meets_head(ms, c, lk, ml, &gone);
            if (rc != DLOCK_OK)
                break;
            rc = DLOCK_BUSY;
            continue;
        }
        /* While we hold the GET_LOCK, a row marked acquired is dead: its
         * session does not hold the GET_LOCK any more. */
        if (!dlock__my_holder_dead(&h)) {
            *retry_ms = h.left;
            break;
        }
        rc = take_over(ms, c, ml, &h, &killed);
        if (rc != DLOCK_OK)
            break;
        rc = DLOCK_BUSY;
    }
    return rc;
}

/* Remember who holds the key with a row (see dlock__my_rowless()). */
static void saw_row(struct my_lock *ml, const struct holder *h)
{
    if (h->conn_id == 0 || h->used_by != h->conn_id)
        return;
    ml->seen_conn = h->conn_id;
    ml->seen_until = dlock__now_ms() + (h->left > 0 ? h->left : 0);
    ml->rowless_since = 0;
}

/* --- waiters' leases (see my.h) ---------------------------------------- */

void dlock__my_wait_name(const char *key, size_t key_len,
                         unsigned long long conn_id, char out[WNAME_MAX + 1])
{
    char buf[KEY_MAX + 6], p[DLOCK__MYSQL_SEM_PREFIX + 1];

    if (key_len > KEY_MAX)
        key_len = KEY_MAX;
    memcpy(buf, key, key_len);
    memcpy(buf + key_len, "\0wait", 5);
    dlock__mysql_sem_prefix(buf, key_len + 5, p);
    snprintf(out, WNAME_MAX + 1, "%.40s~%llu", p, conn_id);
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

int dlock__my_read_waiter(struct my_store *ms, struct conn *c,
                          const char *key, size_t key_len,
                          unsigned long long conn_id, struct holder *h,
                          int *found)
{
    struct my_lock w;
    int rc;

    memset(&w, 0, sizeof(w));
    dlock__my_wait_name(key, key_len, conn_id, w.key);
    w.key_len = strlen(w.key);
    memset(h, 0, sizeof(*h));
    rc = read_row_n(ms, c, &w, h, found, 1);
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
                        const struct holder *w, int64_t *retry_ms,
                        int *killed)
{
    char wname[WNAME_MAX + 1];
    struct sb b = {0};
    long long now_used = 0;
    int found, rc;

    dlock__my_wait_name(ml->key, ml->key_len, used, wname);
    dlock__my_sb_add(&b,
                     "DELETE FROM %s WHERE name = '%s' AND connection_id = "
                     "%llu AND owner = '%s' AND lock_acquired = 0 AND "
                     EXPIRES " <= " NOWMS,
                     ms->table, wname, used, w->owner);
    rc = dlock__my_run(ms, c, &b, NULL, "fencing off a waiter");
    *retry_ms = 0;
    if (rc != DLOCK_OK || mysql_affected_rows(c->db) != 1) {
        dlock__my_sb_free(&b);
        return rc; /* renewed or fenced off meanwhile: look again */
    }
    dlock__my_sb_reset(&b);
    dlock__my_sb_add(&b, "SELECT IFNULL(IS_USED_LOCK(");
    dlock__my_sb_key(&b, c, ml);
    dlock__my_sb_add(&b, "), 0)");
    rc = dlock__my_run_int(ms, c, &b, &now_used, &found, "IS_USED_LOCK");
    dlock__my_sb_free(&b);
    if (rc == DLOCK_OK && found && (unsigned long long)now_used == used)
        rc = kill_holder(ms, c, ml, used, killed);
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
    struct holder h;
    long long used = 0;
    int64_t now, bound;
    int found, rc;

    dlock__my_sb_add(&b, "SELECT IFNULL(IS_USED_LOCK(");
    dlock__my_sb_key(&b, c, ml);
    dlock__my_sb_add(&b, "), 0)");
    rc = dlock__my_run_int(ms, c, &b, &used, &found, "IS_USED_LOCK");
    dlock__my_sb_free(&b);
    if (rc != DLOCK_OK)
        return rc;
    if (used == 0) {
        *retry_ms = 0; /* let go meanwhile */
        return DLOCK_BUSY;
    }
    /* A waiter granted the GET_LOCK that has not claimed it (yet): its
     * waiter row's lease bounds the wait for it. */
    rc = dlock__my_read_waiter(ms, c, ml->key, ml->key_len,
                               (unsigned long long)used, &h, &found);
    if (rc != DLOCK_OK)
        return rc;
    if (found) {
        ml->rowless_since = 0;
        if (h.left > 0) {
            *retry_ms = h.left;
            return dlock__seterr(DLOCK_BUSY,
                                 "lock '%s' was granted to a waiting "
                                 "client (MySQL session %lld, pid %lld on "
                                 "%s) that has not claimed it yet; its "
                                 "wait's lease has %lld ms left",
                                 c->name ? c->name : ml->key, used, h.pid,
                                 h.host, h.left);
        }
        return fence_waiter(ms, c, ml, (unsigned long long)used, &h,
                            retry_ms, killed);
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
    rc = read_row(ms, c, ml, &h, &found);
    if (rc != DLOCK_OK)
        return rc;
    if (found) {
        *retry_ms = 0;
        return DLOCK_BUSY;
    }
    return kill_holder(ms, c, ml, ml->seen_conn, killed);
}

/* GET_LOCK(key, wait_ms): *got 1 if this session now holds it. */
int dlock__my_get_lock(struct my_store *ms, struct conn *c,
                    const struct my_lock *ml, int64_t wait_ms, int *got)
{
    struct sb b = {0};
    long long v = 0;
    int found, rc;

    dlock__my_sb_add(&b, "SELECT GET_LOCK(");
    dlock__my_sb_key(&b, c, ml);
    /* MariaDB takes fractional seconds; MySQL whole ones (rounded down
     * here, never up past the caller's deadline). */
    if (c->frac)
        dlock__my_sb_add(&b, ", %lld.%03lld)", (long long)(wait_ms / 1000),
                         (long long)(wait_ms % 1000));
    else
        dlock__my_sb_add(&b, ", %lld)", (long long)(wait_ms / 1000));
    rc = dlock__my_run_int(ms, c, &b, &v, &found, "GET_LOCK");
    dlock__my_sb_free(&b);
    if (rc == DLOCK_OK && !found)
        rc = dlock__seterr(DLOCK_ESTORE,
                           "GET_LOCK failed on %s (the "
                           "server returned NULL)",
                           ms->base.url);
    *got = rc == DLOCK_OK && v == 1;
    return rc;
}

/* The procedure was refused or is gone (dropped, EXECUTE revoked, a
 * server of another version): the plain statements from now on. */
static int proc_unusable(unsigned e)
{
    return e == ER_SP_DOES_NOT_EXIST || e == ER_PROCACCESS_DENIED_ERROR ||
           e == ER_SP_WRONG_NO_OF_ARGS || e == ER_TABLEACCESS_DENIED_ERROR ||
           e == ER_DBACCESS_DENIED_ERROR || e == ER_NO_SUCH_TABLE;
}

/* Read the one-row answer of a CALL and the end of the CALL after it. */
static int call_result(struct my_store *ms, struct conn *c, long long *v0,
                       long long *v1, const char *what)
{
    MYSQL_RES *res = mysql_store_result(c->db);
    MYSQL_ROW row;
    int rc = DLOCK_OK, st;

    if (res == NULL)
        return mysql_errno(c->db) != 0
                   ? dlock__my_db_err(ms, c, what)
                   : dlock__seterr(DLOCK_ESTORE, "%s on %s: no result", what,
                                   ms->base.url);
    row = mysql_fetch_row(res);
    if (row == NULL || row[0] == NULL)
        rc = dlock__seterr(DLOCK_ESTORE, "%s on %s: no result", what,
                           ms->base.url);
    else {
        *v0 = strtoll(row[0], NULL, 10);
        if (v1 != NULL)
            *v1 = mysql_num_fields(res) > 1 && row[1] != NULL
                      ? strtoll(row[1], NULL, 10)
                      : 0;
    }
    mysql_free_result(res);
    while ((st = mysql_next_result(c->db)) == 0) {
        res = mysql_store_result(c->db);
        mysql_free_result(res);
    }
    if (st > 0 && rc == DLOCK_OK)
        rc = dlock__my_db_err(ms, c, what);
    return rc;
}

/* Run a CALL of a session-mode procedure: DLOCK_OK with its answer, a
 * failure, or DLOCK_ENOTSUP (nothing happened) if the procedure cannot be
 * used, and then never again on this handle. */
int dlock__my_call(struct my_store *ms, struct conn *c, struct sb *b,
                   long long *v0, long long *v1, const char *what)
{
    if (b->oom)
        return dlock__enomem();
    c->used_ms = dlock__now_ms();
    if (mysql_real_query(c->db, b->p, (unsigned long)b->len) != 0) {
        if (proc_unusable(mysql_errno(c->db))) {
            __atomic_store_n(&ms->have_proc, 0, __ATOMIC_RELAXED);
            return DLOCK_ENOTSUP;
        }
        return dlock__my_db_err(ms, c, what);
    }
    return call_result(ms, c, v0, v1, what);
}

/* An acquire that took the row but got no fence (cannot happen): the
 * row and the GET_LOCK go again. */
static int no_fence(struct my_store *ms, const struct dlock_lock *lk,
                    const struct my_lock *ml)
{
    (void)dlock__my_delete_own_row(ms, ml->c, lk, ml);
    dlock__my_release_getlock(ms, ml->c, ml);
    return dlock__seterr(DLOCK_ESTORE,
                         "taking a fence on %s: the server returned no value",
                         ms->base.url);
}

/* The uncontended acquire in one statement: CALL NAME_acq2 (see ddl_procs
 * in schema.c).  *got: 0, the GET_LOCK is taken and nothing happened; 1,
 * acquired (lk->fence set); 2, we hold the GET_LOCK and a row is there.
 * DLOCK_ENOTSUP: use the plain statements. */
static int call_acquire(struct my_store *ms, struct dlock_lock *lk,
                        const struct my_lock *ml, int *got)
{
    struct conn *c = ml->c;
    struct sb b = {0};
    long long v = 0, fence = 0;
    int64_t sent;
    int rc;

    dlock__my_sb_add(&b, "CALL %s(", ms->proc_acq);
    dlock__my_sb_key(&b, c, ml);
    dlock__my_sb_add(&b, ", ");
    dlock__my_sb_lit(&b, c, lk->name, lk->name_len);
    dlock__my_sb_add(&b, ", '%s', %lld, ", lk->token, (long long)lk->ttl_ms);
    dlock__my_sb_lit(&b, c, dlock__hostname(), strlen(dlock__hostname()));
    dlock__my_sb_add(&b, ", %lld)", (long long)dlock__pid());
    sent = dlock__now_ms();
    rc = dlock__my_call(ms, c, &b, &v, &fence, "acquire");
    dlock__my_sb_free(&b);
    if (rc != DLOCK_OK)
        return rc;
    if (v == 1 && fence <= 0)
        return no_fence(ms, lk, ml);
    if (v == 1) {
        lk->fence = (uint64_t)fence;
        lease_from(lk, sent);
    }
    *got = (int)v;
    return DLOCK_OK;
}

/* The uncontended acquire in one plain statement (ms->fast): GET_LOCK,
 * the row and the fence (NEXTVAL, under the GET_LOCK) in one
 * INSERT ... SELECT.  The fence sequence is seeded since the server
 * started (NAME_boot) before a connection's first use of it: a
 * connection does not outlive the server process, so it looks once.
 * *got: 1, acquired (lk->fence set); 2, we hold the GET_LOCK and a row
 * is there (the caller judges it); 0, the GET_LOCK is taken (the
 * caller's plain path says by whom). */
static int fast_acquire(struct my_store *ms, struct dlock_lock *lk,
                        const struct my_lock *ml, int *got)
{
    struct conn *c = ml->c;
    struct sb b = {0};
    int64_t sent;
    unsigned e;
    int full;

    *got = 0;
    if (!c->seeded) {
        int rc = dlock__my_fseq_seed(ms, c);

        if (rc != DLOCK_OK)
            return rc;
    }
    /* full_name only where the key is not the name itself (readers take
     * COALESCE(full_name, name)): a shorter row to copy in and out. */
    full = ml->key_len != lk->name_len ||
           memcmp(ml->key, lk->name, lk->name_len) != 0;
    dlock__my_sb_add(&b,
                     "INSERT INTO %s (name, connection_id, created, ttl, "
                     "lock_acquired, owner, fence, expires_ms, acquired_ms, "
                     "host, pid%s) SELECT ",
                     ms->table, full ? ", full_name" : "");
    dlock__my_sb_key(&b, c, ml);
    dlock__my_sb_add(&b,
                     ", CONNECTION_ID(), UNIX_TIMESTAMP(), %lld, 1, '%s', "
                     "LAST_INSERT_ID(NEXTVAL(%s)), " NOWMS " + %lld, " NOWMS
                     ", ",
                     (long long)((lk->ttl_ms + 999) / 1000), lk->token,
                     ms->fseq, (long long)lk->ttl_ms);
    dlock__my_sb_lit(&b, c, dlock__hostname(), strlen(dlock__hostname()));
    dlock__my_sb_add(&b, ", %lld", (long long)dlock__pid());
    if (full) {
        dlock__my_sb_add(&b, ", ");
        dlock__my_sb_lit(&b, c, lk->name, lk->name_len);
    }
    dlock__my_sb_add(&b, " FROM DUAL WHERE GET_LOCK(");
    dlock__my_sb_key(&b, c, ml);
    dlock__my_sb_add(&b, ", 0) = 1");
    if (b.oom) {
        dlock__my_sb_free(&b);
        return dlock__enomem();
    }
    c->used_ms = sent = dlock__now_ms();
    if (mysql_real_query(c->db, b.p, (unsigned long)b.len) == 0) {
        dlock__my_sb_free(&b);
        if (mysql_affected_rows(c->db) != 1)
            return DLOCK_OK; /* taken */
        lk->fence = (uint64_t)mysql_insert_id(c->db);
        if (lk->fence == 0)
            return no_fence(ms, lk, ml);
        lease_from(lk, sent);
        *got = 1;
        return DLOCK_OK;
    }
    dlock__my_sb_free(&b);
    e = mysql_errno(c->db);
    if (e == ER_DUP_ENTRY) {
        /* The row is inserted after GET_LOCK answered 1: we hold it. */
        *got = 2;
        return DLOCK_OK;
    }
    if (dlock__my_conn_error(e))
        return dlock__my_db_err(ms, c, "acquire");
    {
        /* Whether GET_LOCK ran is not known: let go of it (a no-op if
         * not ours), keeping the error's message. */
        int rc = dlock__my_db_err(ms, c, "acquire");

        dlock__my_release_getlock(ms, c, ml);
        return rc;
    }
}

/* One attempt on ml->c: GET_LOCK(key, 0), then our row.  have_gl: this
 * session holds the key's GET_LOCK already (from a wait).  Unless we
 * return DLOCK_OK, the GET_LOCK is given up again. */
int dlock__my_attempt(struct my_store *ms, struct dlock_lock *lk,
                   struct my_lock *ml, int have_gl, int64_t deadline,
                   int64_t *retry_ms)
{
    struct conn *c = ml->c;
    int rc, got = -1;

    if (!ms->lease_mode && !have_gl && lk->limit == 1 && ms->fast) {
        rc = fast_acquire(ms, lk, ml, &got);
        if (rc != DLOCK_OK || got == 1)
            return rc;
        if (got == 0)
            got = -1; /* the plain statements say why */
    } else if (!ms->lease_mode && !have_gl && lk->limit == 1 &&
        __atomic_load_n(&ms->have_proc, __ATOMIC_RELAXED)) {
        rc = call_acquire(ms, lk, ml, &got);
        if (rc == DLOCK_OK && got == 1)
            return DLOCK_OK;
        if (rc != DLOCK_OK && rc != DLOCK_ENOTSUP)
            return rc;
        if (rc == DLOCK_ENOTSUP)
            got = -1; /* nothing happened: the plain statements */
    }
    if (!ms->lease_mode && !have_gl && got != 2) {
        if (got != 0) {
            rc = dlock__my_get_lock(ms, c, ml, 0, &got);
            if (rc != DLOCK_OK)
                return rc;
        }
        if (!got) {
            struct holder h;
            int found, killed = 0;
            int64_t wait;

            /* Someone holds the GET_LOCK: live, or past its lease? */
            rc = read_row(ms, c, ml, &h, &found);
            if (rc != DLOCK_OK)
                return rc;
            if (!found) {
                rc = dlock__my_rowless(ms, c, ml, retry_ms, &killed);
            } else if (lk->limit == 1 && h.lim > 1 && !h.has_owner) {
                int gone;

                /* A semaphore's head (someone is looking at it). */
                rc = lock_meets_head(ms, c, lk, ml, &gone);
                if (rc != DLOCK_OK)
                    return rc;
                *retry_ms = 0;
                return DLOCK_BUSY;
            } else if (!dlock__my_holder_dead(&h)) {
                saw_row(ml, &h);
                *retry_ms = h.left;
                return DLOCK_BUSY;
            } else {
                saw_row(ml, &h);
                rc = take_over(ms, c, ml, &h, &killed);
            }
            if (rc != DLOCK_OK || !killed)
                return rc != DLOCK_OK ? rc : DLOCK_BUSY;
            /* A KILLed session lets go of its GET_LOCK a moment later. */
            wait = dlock__remaining_ms(deadline);
            if (wait > 2000)
                wait = 2000;
            if (wait > dlock__my_max_slice(ms->timeout_ms))
                wait = dlock__my_max_slice(ms->timeout_ms);
            rc = dlock__my_get_lock(ms, c, ml, wait, &got);
            if (rc != DLOCK_OK)
                return rc;
            if (!got)
                return DLOCK_BUSY;
        }
    }
    rc = claim_row(ms, c, lk, ml, retry_ms);
    if (rc != DLOCK_OK) {
        if (rc != DLOCK_BUSY && mysql_errno(c->db) == 0)
            (void)dlock__my_delete_own_row(ms, c, lk,
                                           ml); /* committed, unusable */
        if (!ms->lease_mode)
            dlock__my_release_getlock(ms, c, ml);
    }
    return rc;
}

/* Insert the head of lk's semaphore at hd's key (the name's own): *dup
 * if a row is there already. */
static int insert_head(struct my_store *ms, struct conn *c,
                       const struct dlock_lock *lk, const struct my_lock *hd,
                       int *dup)
{
    struct sb b = {0};
    int rc;

    *dup = 0;
    dlock__my_sb_add(&b,
                     "INSERT INTO %s (name, connection_id, created, ttl, "
                     "lock_acquired, owner, expires_ms, acquired_ms, "
                     "full_name, lim) VALUES (",
                     ms->table);
    dlock__my_sb_key(&b, c, hd);
    dlock__my_sb_add(&b,
                     ", 0, UNIX_TIMESTAMP(), %lld, 0, NULL, " NOWMS
                     " + %lld, " NOWMS ", ",
                     DLOCK_TTL_MAX_MS / 1000, DLOCK_TTL_MAX_MS);
    dlock__my_sb_lit(&b, c, lk->name, lk->name_len);
    dlock__my_sb_add(&b, ", %u)", lk->limit);
    if (b.oom) {
        dlock__my_sb_free(&b);
        return dlock__enomem();
    }
    if (mysql_real_query(c->db, b.p, (unsigned long)b.len) != 0) {
        if (mysql_errno(c->db) == ER_DUP_ENTRY) {
            *dup = 1;
            rc = DLOCK_OK;
        } else {
            rc = dlock__my_db_err(ms, c, "acquire");
        }
    } else if (mysql_warning_count(c->db) != 0) {
        /* Stored with substitutions: not our key (see insert_row). */
        dlock__my_sb_reset(&b);
        dlock__my_sb_add(&b,
                         "DELETE FROM %s WHERE owner IS NULL AND "
                         "connection_id = 0 AND lim = %u AND full_name = ",
                         ms->table, lk->limit);
        dlock__my_sb_lit(&b, c, lk->name, lk->name_len);
        (void)dlock__my_run(ms, c, &b, NULL, "deleting a lock row");
        rc = dlock__my_unstorable(ms, lk->name,
                                  "the server stored it with substitutions");
    } else {
        rc = DLOCK_OK;
    }
    dlock__my_sb_free(&b);
    return rc;
}

/* Admitted to slot ml->slot (row in, fence taken): write the fence into
 * the head, which must still be there with our limit (*ok), else the
 * admission backs out. */
static int bump_head(struct my_store *ms, struct conn *c,
                     const struct dlock_lock *lk, const struct my_lock *hd,
                     int *ok)
{
    struct sb b = {0};
    int rc;

    dlock__my_sb_add(&b, "UPDATE %s SET fence = %llu WHERE name = ",
                     ms->table, (unsigned long long)lk->fence);
    dlock__my_sb_key(&b, c, hd);
    dlock__my_sb_add(&b, " AND lim = %u AND owner IS NULL", lk->limit);
    rc = dlock__my_run(ms, c, &b, NULL, "acquire");
    dlock__my_sb_free(&b);
    *ok = rc == DLOCK_OK && mysql_affected_rows(c->db) == 1;
    return rc;
}

/* One admission to lk's semaphore on ml->c: the head (ours, made, or
 * EINVAL for another limit), then a free slot, in random order.
 * have_slot: the slot whose GET_LOCK this session holds already (a
 * wait's), -1 none; given up again unless admitted to it. */
int dlock__my_sem_attempt(struct my_store *ms, struct dlock_lock *lk,
                       struct my_lock *ml, int have_slot, int64_t deadline,
                       int64_t *retry_ms)
{
    struct conn *c = ml->c;
    struct my_lock hd;
    unsigned n = lk->limit;
    unsigned char *taken = NULL;
    int rc = DLOCK_BUSY, used_have = 0;

    memset(&hd, 0, sizeof(hd));
    hd.c = c;
    hd.key_len = ml->nkey_len;
    memcpy(hd.key, ml->nkey, ml->nkey_len + 1);
    taken = malloc(n);
    if (taken == NULL) {
        rc = dlock__enomem();
        goto out;
    }
    ml->wait_slot = -1;
    for (int tries = 0; tries < 8; tries++) {
        struct holder h;
        int found, dup, gone, killed = 0, ok, raced = 0;
        long long count;
        int64_t soonest, best = -1;
        unsigned start, nbusy = 0;

        rc = read_row_n(ms, c, &hd, &h, &found, 1);
        if (rc != DLOCK_OK)
            goto out;
        if (!found) {
            rc = insert_head(ms, c, lk, &hd, &dup);
            if (rc != DLOCK_OK)
                goto out;
            if (dup)
                continue;
        } else if (h.lim > 1 && !h.has_owner) {
            rc = sem_head(ms, c, &hd, &h, lk->name, n, &gone);
            free(h.name);
            if (rc != DLOCK_OK)
                goto out;
            if (gone)
                continue;
        } else {
            /* A limit-1 holder (dlock's, its-mieger's, lease mode's). */
            free(h.name);
            if (!dlock__my_holder_dead(&h)) {
                rc = dlock__seterr(DLOCK_EINVAL,
                                   "lock '%s' is held with limit 1; this "
                                   "acquire asked limit %u",
                                   lk->name, n);
                goto out;
            }
            rc = take_over(ms, c, &hd, &h, &killed);
            if (rc != DLOCK_OK)
                goto out;
            continue;
        }
        memset(taken, 0, n);
        rc = sem_live(ms, c, ml->prefix, taken, n, &count, &soonest);
        if (rc != DLOCK_OK)
            goto out;
        start = dlock__rand32() % n;
        for (unsigned k = 0; k <= n && !raced; k++) {
            int64_t r = -1;
            int mine = k == 0;
            unsigned i;

            if (mine && have_slot < 0)
                continue;
            i = mine ? (unsigned)have_slot : (start + k - 1) % n;
            if (!mine && (int)i == have_slot)
                continue;
            if (!mine && taken[i]) {
                /* A live holder: a slot to wait on. */
                if (dlock__rand32() % (++nbusy) == 0)
                    ml->wait_slot = (int)i;
                continue;
            }
            dlock__my_set_slot(ml, i);
            used_have |= mine;
            rc = dlock__my_attempt(ms, lk, ml, mine, deadline, &r);
            if (rc == DLOCK_OK) {
                rc = bump_head(ms, c, lk, &hd, &ok);
                if (rc == DLOCK_OK && ok)
                    goto out;
                /* The head went meanwhile: back out, look again. */
                (void)dlock__my_delete_own_row(ms, c, lk, ml);
                if (!ms->lease_mode)
                    dlock__my_release_getlock(ms, c, ml);
                if (rc != DLOCK_OK)
                    goto out;
                rc = DLOCK_BUSY;
                raced = 1;
                break;
            }
            if (rc != DLOCK_BUSY)
                goto out;
            if (dlock__rand32() % (++nbusy) == 0)
                ml->wait_slot = (int)i;
            if (r >= 0 && (best < 0 || r < best))
                best = r;
        }
        if (used_have)
            have_slot = -1; /* its GET_LOCK went with the attempt */
        if (raced)
            continue;
        rc = DLOCK_BUSY;
        if (count >= n) {
            /* Full: look again when the soonest lease ends. */
            *retry_ms = soonest;
            dlock__seterr(DLOCK_BUSY,
                          "semaphore '%s' has all its %u slots taken",
                          lk->name, n);
            goto out;
        }
        *retry_ms = best;
        goto out;
    }
out:
    if (have_slot >= 0 && !used_have && !ms->lease_mode) {
        /* Not used: its GET_LOCK goes (ml keeps the slot it holds). */
        hd.prefix[0] = '\0';
        memcpy(hd.prefix, ml->prefix, sizeof(hd.prefix));
        hd.slot = -1;
        dlock__my_set_slot(&hd, (unsigned)have_slot);
        dlock__my_release_getlock(ms, c, &hd);
    }
    free(taken);
    return rc;
}

/* --- semaphores: release and status ------------------------------------ */

void dlock__my_sem_tidy(struct my_store *ms, struct conn *c,
                        const struct dlock_lock *lk, const struct my_lock *ml)
{
    struct my_lock hd;
    struct holder h;
    int found, gone;

    memset(&hd, 0, sizeof(hd));
    hd.key_len = ml->nkey_len;
    memcpy(hd.key, ml->nkey, ml->nkey_len + 1);
    if (read_row_n(ms, c, &hd, &h, &found, 1) == DLOCK_OK && found) {
        if (h.lim > 1 && !h.has_owner)
            (void)sem_head(ms, c, &hd, &h, lk->name, 0, &gone);
        free(h.name);
    }
    dlock__clearerr();
}

int dlock__my_sem_status(struct my_store *ms, struct conn *c,
                         const struct holder *h, dlock_info *out)
{
    char prefix[DLOCK__MYSQL_SEM_PREFIX + 1];
    struct sb b = {0};
    MYSQL_RES *res = NULL;
    MYSQL_ROW row;
    int rc;

    if (h->name == NULL)
        return DLOCK_OK;
    dlock__mysql_sem_prefix(h->name, h->name_len, prefix);
    dlock__my_sb_add(&b, "SELECT %s FROM %s WHERE name LIKE '%s%%'",
                     dlock__my_columns(ms), ms->table, prefix);
    rc = dlock__my_run(ms, c, &b, &res, "status");
    dlock__my_sb_free(&b);
    while (rc == DLOCK_OK && res != NULL && (row = mysql_fetch_row(res))) {
        struct holder s;

        dlock__my_read_holder(row, mysql_fetch_lengths(res), &s, 0);
        if (dlock__my_holder_dead(&s))
            continue;
        if (out->holders == 0 || s.left > out->ttl_ms) {
            out->ttl_ms = s.left;
            out->pid = s.pid;
            out->since_ms = s.since;
            dlock__strlcpy(out->host, s.host, sizeof(out->host));
        }
        out->held = 1;
        out->holders++;
        out->limit = h->lim;
    }
    mysql_free_result(res);
    return rc;
}
