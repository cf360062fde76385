/*
 * semaphore.c - the MySQL store's semaphores (limit > 1): the head row at
 * the name's own key, the slot rows and their keys, an attempt at a slot,
 * and a semaphore's release tidying and status.
 */
#include <mysqld_error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* Slot key i of ml's semaphore into ml->key. */
void dlock__my_set_slot(struct my_lock *ml, unsigned i)
{
    if (ml->slot != (int)i) {
        ml->seen_conn = 0;
        ml->rowless_since = 0;
    }
    ml->slot = (int)i;
    ml->key_len =
        (size_t)snprintf(ml->key, sizeof(ml->key), "%s%u", ml->prefix, i);
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
    dlock__my_sb_add(&b, ms->sql.sem_live, prefix);
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
    char prefix[DLOCK__MYSQL_SEM_PREFIX + 1], k[KEY_LIT_MAX];
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
    dlock__my_sb_add(&b, ms->sql.sem_delete_head, dlock__my_key_lit(c, hd, k),
                     h->fence);
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
        rc = sem_head(ms, c, ml, &h, lk->name, 1, gone);
    else
        *gone = 0;
    free(h.name);
    return rc;
}
/* Insert the head of lk's semaphore at hd's key (the name's own): *dup
 * if a row is there already. */
static int insert_head(struct my_store *ms, struct conn *c,
                       const struct dlock_lock *lk, const struct my_lock *hd,
                       int *dup)
{
    struct sb b = {0}, nm = {0};
    char k[KEY_LIT_MAX];
    int rc;

    *dup = 0;
    dlock__my_sb_lit(&nm, c, lk->name, lk->name_len);
    if (nm.oom)
        b.oom = 1;
    else
        dlock__my_sb_add(&b, ms->sql.sem_insert_head,
                         dlock__my_key_lit(c, hd, k), nm.p, lk->limit);
    if (b.oom) {
        dlock__my_sb_free(&nm);
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
        dlock__my_sb_add(&b, ms->sql.sem_delete_bad_head, lk->limit, nm.p);
        (void)dlock__my_run(ms, c, &b, NULL, "deleting a lock row");
        rc = dlock__my_unstorable(ms, lk->name,
                                  "the server stored it with substitutions");
    } else {
        rc = DLOCK_OK;
    }
    dlock__my_sb_free(&nm);
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
    char k[KEY_LIT_MAX];
    int rc;

    dlock__my_sb_add(&b, ms->sql.sem_bump_head, (unsigned long long)lk->fence,
                     dlock__my_key_lit(c, hd, k), lk->limit);
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

        rc = dlock__my_read_row(ms, c, &hd, &h, &found, 1);
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
            rc = dlock__my_take_over(ms, c, &hd, &h, &killed);
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
                          "semaphore '%s' has all its %u slots taken", lk->name,
                          n);
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
    if (dlock__my_read_row(ms, c, &hd, &h, &found, 1) == DLOCK_OK && found) {
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
    dlock__my_sb_add(&b, ms->sql.sem_rows[ms->mariadb != 0][ms->have_lim != 0],
                     prefix);
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
