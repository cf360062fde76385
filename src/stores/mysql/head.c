/*
 * head.c - a MySQL semaphore's head row (limit > 1): the row at the
 * name's own key that a limit-1 acquirer of the name runs into, counting
 * the live slot rows behind it, making, bumping and deleting it, and a
 * semaphore's release tidying and status.  The admission to a slot that
 * uses it is semaphore.c's.
 */
#include <mysqld_error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "my.h"

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

/* The live slot rows of the semaphore whose slot keys start with prefix
 * (any limit): how many (*count), which slots below n are taken (taken,
 * may be NULL), the soonest lease end among them (*soonest, -1 none). */
int dlock__my_sem_live(struct my_store *ms, struct conn *c, const char *prefix,
                       unsigned char *taken, unsigned n, long long *count,
                       int64_t *soonest)
{
    char pat[DLOCK__MYSQL_SEM_PREFIX + 2];
    struct sb b = {0};
    MYSQL_RES *res = NULL;
    MYSQL_ROW row;
    int rc;

    *count = 0;
    *soonest = -1;
    snprintf(pat, sizeof(pat), "%s%%", prefix); /* LIKE: the prefix's */
    MY_BIND(&b, c, ms->sql.sem_live, MV_Z(pat));
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
int dlock__my_sem_head(struct my_store *ms, struct conn *c,
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
    rc = dlock__mysql_sem_prefix(h->name != NULL ? h->name : name,
                                 h->name != NULL ? h->name_len : strlen(name),
                                 prefix);
    if (rc != DLOCK_OK)
        return rc;
    rc = dlock__my_sem_live(ms, c, prefix, NULL, 0, &count, &soonest);
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
    MY_BIND(&b, c, ms->sql.sem_delete_head, MV_KEY(hd), MV_U(h->fence));
    rc = dlock__my_run(ms, c, &b, NULL, "deleting a semaphore's head");
    dlock__my_sb_free(&b);
    *gone = rc == DLOCK_OK;
    return rc;
}

/* A limit-1 acquire met row h at its key: a semaphore's head is EINVAL
 * while it has live holders; *gone: it had none and went (look again). */
int dlock__my_lock_meets_head(struct my_store *ms, struct conn *c,
                              const struct dlock_lock *lk,
                              const struct my_lock *ml, int *gone)
{
    struct holder h;
    int found, rc;

    *gone = 1;
    rc = dlock__my_read_row(ms, c, ml, &h, &found, 1);
    if (rc != DLOCK_OK || !found)
        return rc;
    if (h.lim > 1 && !h.has_owner)
        rc = dlock__my_sem_head(ms, c, ml, &h, lk->name, 1, gone);
    else
        *gone = 0;
    free(h.name);
    return rc;
}

/* Insert the head of lk's semaphore at hd's key (the name's own): *dup
 * if a row is there already. */
int dlock__my_insert_head(struct my_store *ms, struct conn *c,
                          const struct dlock_lock *lk, const struct my_lock *hd,
                          int *dup)
{
    struct sb b = {0};
    int rc;

    *dup = 0;
    MY_BIND(&b, c, ms->sql.sem_insert_head, MV_KEY(hd),
            MV_S(lk->name, lk->name_len), MV_U(lk->limit));
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
        MY_BIND(&b, c, ms->sql.sem_delete_bad_head, MV_U(lk->limit),
                MV_S(lk->name, lk->name_len));
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
int dlock__my_bump_head(struct my_store *ms, struct conn *c,
                        const struct dlock_lock *lk, const struct my_lock *hd,
                        int *ok)
{
    struct sb b = {0};
    int rc;

    MY_BIND(&b, c, ms->sql.sem_bump_head, MV_U(lk->fence), MV_KEY(hd),
            MV_U(lk->limit));
    rc = dlock__my_run(ms, c, &b, NULL, "acquire");
    dlock__my_sb_free(&b);
    *ok = rc == DLOCK_OK && mysql_affected_rows(c->db) == 1;
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
    if (dlock__my_read_row(ms, c, &hd, &h, &found, 1) == DLOCK_OK && found) {
        if (h.lim > 1 && !h.has_owner)
            (void)dlock__my_sem_head(ms, c, &hd, &h, lk->name, 0, &gone);
        free(h.name);
    }
    dlock__clearerr();
}

int dlock__my_sem_status(struct my_store *ms, struct conn *c,
                         const struct holder *h, dlock_info *out)
{
    char prefix[DLOCK__MYSQL_SEM_PREFIX + 2];
    struct sb b = {0};
    MYSQL_RES *res = NULL;
    MYSQL_ROW row;
    int rc;

    if (h->name == NULL)
        return DLOCK_OK;
    rc = dlock__mysql_sem_prefix(h->name, h->name_len, prefix);
    if (rc != DLOCK_OK)
        return rc;
    strcat(prefix, "%"); /* LIKE: the prefix's */
    MY_BIND(&b, c, ms->sql.sem_rows[ms->mariadb != 0][ms->have_lim != 0],
            MV_Z(prefix));
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
