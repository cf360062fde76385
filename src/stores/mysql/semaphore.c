/*
 * semaphore.c - the MySQL store's semaphores (limit > 1): the slot rows'
 * keys and one admission to a slot, around the head row (head.c) and a
 * lock's attempt at the slot's key (acquire.c).
 */
#include <mysqld_error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "my.h"

/* The head row and the slots: see head.c. */

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
            rc = dlock__my_insert_head(ms, c, lk, &hd, &dup);
            if (rc != DLOCK_OK)
                goto out;
            if (dup)
                continue;
        } else if (h.lim > 1 && !h.has_owner) {
            rc = dlock__my_sem_head(ms, c, &hd, &h, lk->name, n, &gone);
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
        rc = dlock__my_sem_live(ms, c, ml->prefix, taken, n, &count, &soonest);
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
                rc = dlock__my_bump_head(ms, c, lk, &hd, &ok);
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
    /* Eight rounds in which the head changed under us (made, taken over or
     * gone meanwhile): busy for now, to be tried again.  Never the rc of
     * the last step of a round (DLOCK_OK), which would admit no one to a
     * slot yet answer the acquire OK, without a fence (seen in a
     * torture-mysql-semaphore run under load: fence 0, its release LOST,
     * 4 holders counted on 3 slots). */
    rc = dlock__seterr(DLOCK_BUSY,
                       "semaphore '%s': its head changed during each of 8 "
                       "tries; trying again",
                       lk->name);
    *retry_ms = 0;
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
