/*
 * elect.c - leader election on top of the lock (include/dlock.h,
 * "Election").  Leadership is holding the name: the lock's fence is the
 * term, its lease and renewal are the leader's, its loss is the
 * leader's.  What this file adds is the value: published right after the
 * grant and on each dlock_proclaim(), in one step the store guards with
 * the lock (store.h: value_set), and read back paired with the holder's
 * fence so that a value written under an earlier term is never shown as
 * the current leader's.  dlock_observe() re-reads on every wake-up: a
 * notification says "look", never what changed (threat model R1).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "cancel.h"
#include "clock.h"
#include "errors.h"
#include "held.h"
#include "names.h"
#include "strutil.h"

/* The longest dlock_observe() waits for a notification before it reads
 * again: a leader whose lease ran out is announced by no store. */
#define OBSERVE_SLICE_MS 1000
/* The least time between two reads of one observer: anyone who may
 * publish on the name's channel (or NOTIFY, or write a key under it) can
 * wake it, and a flood of wake-ups must not become a flood of reads. */
#define OBSERVE_GAP_MS 20

static int check_value(const char *value, size_t *len)
{
    *len = value != NULL ? strlen(value) : 0;
    if (*len > DLOCK_VALUE_MAX)
        return dlock__seterr(DLOCK_EINVAL,
                             "the leader value is %zu bytes, over the "
                             "%d-byte maximum",
                             *len, DLOCK_VALUE_MAX);
    if (!dlock__utf8_valid((const unsigned char *)(value != NULL ? value : ""),
                           *len))
        return dlock__seterr(DLOCK_EINVAL,
                             "the leader value is not valid UTF-8");
    return DLOCK_OK;
}

static int no_election(const struct dlock_store *s)
{
    return dlock__seterr(DLOCK_ENOTSUP, "the %s store has no leader election",
                         s->ops->name);
}

struct set_args {
    const char *value;
    size_t len;
};

static int set_call(struct dlock_store *s, struct dlock_lock *lk, void *arg)
{
    struct set_args *a = arg;

    return s->ops->value_set(s, lk, a->value, a->len);
}

dlock_rc dlock_elect(dlock_lock **out, dlock_store *s, const char *name,
                     const char *value, const dlock_options *opts)
{
    static const dlock_options defaults = DLOCK_OPTIONS_INIT;
    struct set_args a;
    dlock_lock *lock;
    int64_t deadline = 0;
    size_t len;
    int rc;

    dlock__clearerr();
    if (out == NULL)
        return dlock__seterr(DLOCK_EINVAL, "out is NULL");
    *out = NULL;
    rc = dlock__store_usable(s);
    if (rc != DLOCK_OK)
        return rc;
    if (name == NULL)
        return dlock__seterr(DLOCK_EINVAL, "lock name is NULL");
    rc = check_value(value, &len);
    if (rc != DLOCK_OK)
        return rc;
    if (opts == NULL)
        opts = &defaults;
    if (opts->version >= 1 && opts->shared)
        return dlock__seterr(DLOCK_EINVAL, "a leader cannot be shared");
    if (opts->version >= 2 && opts->limit > 1)
        return dlock__seterr(
            DLOCK_EINVAL, "a leader is alone: limit %u is not 1", opts->limit);
    if (s->ops->value_set == NULL || s->ops->value_get == NULL)
        return no_election(s);
    if (opts->wait_ms > 0)
        deadline = dlock__now_ms() + dlock__clamp_ms(opts->wait_ms);
    for (;;) {
        dlock_options left = *opts;
        char msg[512];

        if (deadline != 0)
            left.wait_ms = dlock__remaining_ms(deadline);
        rc = dlock__acquire(&lock, s, name, strlen(name), &left, value, len, 1);
        if (rc != DLOCK_OK)
            return rc;
        /* The value, under the lock: the same pointer the store was given
         * at acquire, so a store that wrote it there sends nothing more. */
        a.value = dlock__held_of(lock)->value;
        a.len = len;
        rc = dlock__lock_call(dlock__held_of(lock), 1, set_call, &a);
        if (rc == DLOCK_OK)
            break;
        /* Resign: a leader nobody can see is a lock held for nothing.  The
         * message is the failure's, not the release's. */
        snprintf(msg, sizeof(msg), "%s", dlock_errmsg());
        (void)dlock_release(lock);
        lock = NULL;
        /* A candidate that may wait campaigns again after a store that
         * blinked or a lease lost at once, within the same wait. */
        if ((rc != DLOCK_EUNAVAIL && rc != DLOCK_LOST) || opts->wait_ms == 0 ||
            (deadline != 0 && dlock__remaining_ms(deadline) <= 100) ||
            (opts->version >= 3 && dlock_cancel_fired(opts->cancel)))
            return dlock__seterr(rc, "%s", msg);
        dlock__sleep_ms(100);
    }
    dlock__clearerr();
    *out = lock;
    return DLOCK_OK;
}

dlock_rc dlock_proclaim(dlock_lock *lock, const char *value)
{
    struct dlock__held *lk = dlock__held_of(lock);
    struct set_args a;
    char *copy;
    int rc;

    dlock__clearerr();
    if (lk == NULL)
        return dlock__seterr(DLOCK_EINVAL, "lock is NULL");
    if (!lk->view.is_candidate)
        return dlock__seterr(DLOCK_EINVAL,
                             "lock '%s' was not taken with dlock_elect()",
                             lk->view.name);
    rc = check_value(value, &a.len);
    if (rc != DLOCK_OK)
        return rc;
    /* The copy first: once the store has it, nothing may fail. */
    copy = dlock__strndup(value != NULL ? value : "", a.len);
    if (copy == NULL)
        return dlock__enomem();
    a.value = copy;
    rc = dlock__lock_call(lk, 1, set_call, &a);
    if (rc != DLOCK_OK) {
        free(copy);
        return rc;
    }
    /* Store calls on the lock read view.value under mu. */
    pthread_mutex_lock(&lk->mu);
    free(lk->value);
    lk->value = copy;
    lk->view.value = a.len > 0 ? copy : NULL;
    lk->view.value_len = a.len;
    pthread_mutex_unlock(&lk->mu);
    dlock__clearerr();
    return DLOCK_OK;
}

/* The leader of name as the store has it now: status paired with the
 * value written under the holder's term. */
static int read_leader(struct dlock_store *s, const char *name,
                       dlock_info **out)
{
    dlock_info *info;
    uint64_t vfence = 0;
    char *v = NULL;
    size_t vlen = 0;
    int rc;

    rc = dlock_status(&info, s, name);
    if (rc != DLOCK_OK)
        return rc;
    rc = s->ops->value_get(s, name, &vfence, &v, &vlen);
    if (rc != DLOCK_OK) {
        dlock_info_free(info);
        return rc;
    }
    /* Only a value dlock could have written (R9): a peer's (etcdctl
     * elect's proposal is any bytes) that is longer, holds a NUL or is not
     * UTF-8 is not shown at all, rather than shown in part. */
    if (v != NULL && (vlen > DLOCK_VALUE_MAX || memchr(v, '\0', vlen) != NULL ||
                      !dlock__utf8_valid((const unsigned char *)v, vlen))) {
        free(v);
        v = NULL;
    }
    if (info->held && v != NULL && vfence != 0 && vfence == info->fence) {
        info->value = v;
        info->value_len = vlen;
    } else {
        free(v);
    }
    *out = info;
    return DLOCK_OK;
}

static int leader_args_ok(struct dlock_store *s, const char *name)
{
    int rc = dlock__store_usable(s);

    if (rc != DLOCK_OK)
        return rc;
    if (name == NULL)
        return dlock__seterr(DLOCK_EINVAL, "lock name is NULL");
    rc = dlock__check_name(name, strlen(name));
    if (rc != DLOCK_OK)
        return rc;
    if (s->ops->value_get == NULL)
        return no_election(s);
    return DLOCK_OK;
}

dlock_rc dlock_leader(dlock_info **out, dlock_store *s, const char *name)
{
    int rc;

    dlock__clearerr();
    if (out == NULL)
        return dlock__seterr(DLOCK_EINVAL, "out is NULL");
    *out = NULL;
    rc = leader_args_ok(s, name);
    if (rc != DLOCK_OK)
        return rc;
    rc = read_leader(s, name, out);
    if (rc == DLOCK_OK)
        dlock__clearerr();
    return rc;
}

/* What an observer last reported: a change is another term, another
 * value, or a leader coming or going. */
struct seen {
    int held;
    uint64_t fence;
    char *value;
    size_t value_len;
};

static int changed(const struct seen *a, const dlock_info *b)
{
    if (a->held != (b->held != 0))
        return 1;
    if (!a->held)
        return 0;
    if (a->fence != b->fence || (a->value == NULL) != (b->value == NULL))
        return 1;
    return a->value != NULL && (a->value_len != b->value_len ||
                                memcmp(a->value, b->value, a->value_len) != 0);
}

static int remember(struct seen *a, const dlock_info *b)
{
    char *v = NULL;

    if (b->value != NULL) {
        v = dlock__strndup(b->value, b->value_len);
        if (v == NULL)
            return dlock__enomem();
    }
    free(a->value);
    a->held = b->held != 0;
    a->fence = b->fence;
    a->value = v;
    a->value_len = b->value_len;
    return DLOCK_OK;
}

int dlock_observe(dlock_store *s, const char *name, dlock_observe_cb cb,
                  void *payload, dlock_cancel *cancel)
{
    struct dlock_cancel *outer;
    struct seen last = {0, 0, NULL, 0};
    void *state = NULL;
    int64_t last_read = 0;
    int watching = 0, first = 1, rc;

    dlock__clearerr();
    rc = leader_args_ok(s, name);
    if (rc != DLOCK_OK)
        return rc;
    if (cb == NULL)
        return dlock__seterr(DLOCK_EINVAL, "callback is NULL");
    if (dlock_cancel_fired(cancel))
        return dlock__ecanceled();
    outer = dlock__cancel_cur;
    dlock__cancel_cur = cancel;
    /* Subscribe before the first read: a change between that read and
     * the first wait is then still announced. */
    if (s->ops->watch != NULL) {
        watching = 1;
        rc = s->ops->watch(s, name, &state, 0);
    }
    while (rc == DLOCK_OK) {
        dlock_info *info;

        if (dlock_cancel_fired(cancel)) {
            rc = dlock__ecanceled();
            break;
        }
        last_read = dlock__now_ms();
        rc = read_leader(s, name, &info);
        if (rc != DLOCK_OK)
            break;
        if (first || changed(&last, info)) {
            first = 0;
            rc = remember(&last, info);
            if (rc == DLOCK_OK) {
                dlock__clearerr();
                rc = cb(info, payload);
            }
        }
        dlock_info_free(info);
        if (rc != DLOCK_OK)
            break;
        if (watching) {
            int64_t since;

            rc = s->ops->watch(s, name, &state, OBSERVE_SLICE_MS);
            /* A rate, not a delay: a wake-up long after the last read is
             * read at once. */
            since = dlock__now_ms() - last_read;
            if (rc == DLOCK_OK && since < OBSERVE_GAP_MS &&
                dlock__cancel_sleep_ms(OBSERVE_GAP_MS - since))
                rc = dlock__ecanceled();
        } else if (dlock__cancel_sleep_ms(DLOCK_OBSERVE_POLL_MS)) {
            rc = dlock__ecanceled();
        }
    }
    if (watching && s->ops->watch_end != NULL)
        s->ops->watch_end(s, state);
    dlock__cancel_cur = outer;
    /* A store call the cancel cut short reports the cancel. */
    if (rc < 0 && rc != DLOCK_ECANCELED && dlock_cancel_fired(cancel))
        rc = dlock__ecanceled();
    free(last.value);
    return rc;
}
