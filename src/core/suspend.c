/*
 * suspend.c - a job's suspension (include/dlock.h, "Suspension"): the
 * argument checks, the default "who" (USER@HOST), and the vetting of what
 * a store reads back (store.h: suspend, resume, suspension, suspensions;
 * run_begin skips a suspended name in its own atomic step).
 *
 * A record is text anyone who can write the store may have planted, and
 * `dlock` prints it: a field that is not UTF-8 without control characters
 * (an escape sequence for the operator's terminal) shows as "?".  It still
 * suspends: someone who may write the store asked for it, and a job that
 * does not run is the safe side of "cannot tell".
 */
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api.h"
#include "errors.h"
#include "names.h"
#include "process.h"
#include "strutil.h"

/* UTF-8 without C0 controls or DEL (a tab neither). */
static int plain_text(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return 0;
    return dlock__utf8_valid((const unsigned char *)s, len);
}

static void vet(char *field, size_t size)
{
    size_t len = strnlen(field, size);

    if (len == size || !plain_text(field, len))
        snprintf(field, size, "?");
}

void dlock__suspension_vet_by(char *field, size_t size)
{
    vet(field, size);
}

/* What the caller gets of a record the store read: name set, texts
 * vetted. */
static void vet_record(dlock_suspension *cur, const char *name)
{
    snprintf(cur->name, sizeof(cur->name), "%s", name);
    vet(cur->by, sizeof(cur->by));
    vet(cur->reason, sizeof(cur->reason));
}

static int no_suspension(const struct dlock_store *s)
{
    return dlock__seterr(DLOCK_ENOTSUP, "the %s store cannot suspend a job",
                         s->ops->name);
}

/* The checks every call on one name shares (the store's support is
 * asked after the caller's arguments: a bad one is DLOCK_EINVAL on any
 * store). */
static int name_call_ok(dlock_store *s, const char *name)
{
    int rc = dlock__store_usable(s);

    if (rc != DLOCK_OK)
        return rc;
    if (name == NULL)
        return dlock__seterr(DLOCK_EINVAL, "lock name is NULL");
    rc = dlock__check_name(name, strlen(name));
    if (rc != DLOCK_OK)
        return rc;
    return DLOCK_OK;
}

/* USER@HOST: the effective user's name (its number if it has none). */
static void default_by(char *out, size_t size)
{
    struct passwd pw, *res = NULL;
    char buf[1024];

    if (getpwuid_r(geteuid(), &pw, buf, sizeof(buf), &res) == 0 &&
        res != NULL && plain_text(res->pw_name, strlen(res->pw_name)) &&
        strchr(res->pw_name, '@') == NULL)
        snprintf(out, size, "%.100s@%.150s", res->pw_name, dlock__hostname());
    else
        snprintf(out, size, "%lu@%.150s", (unsigned long)geteuid(),
                 dlock__hostname());
}

dlock_rc dlock_suspend(int *out_was, dlock_store *s, const char *name,
                       const char *by, const char *reason)
{
    dlock_suspension cur;
    char who[256];
    int rc, was = 0;

    dlock__clearerr();
    if (out_was != NULL)
        *out_was = 0;
    rc = name_call_ok(s, name);
    if (rc != DLOCK_OK)
        return rc;
    if (by == NULL)
        default_by(who, sizeof(who));
    else if (by[0] == '\0' || strlen(by) >= sizeof(who) ||
             !plain_text(by, strlen(by)))
        return dlock__seterr(DLOCK_EINVAL,
                             "by must be 1..%zu bytes of UTF-8 without "
                             "control characters",
                             sizeof(who) - 1);
    else
        snprintf(who, sizeof(who), "%s", by);
    if (reason == NULL)
        reason = "";
    if (strlen(reason) > DLOCK_REASON_MAX ||
        !plain_text(reason, strlen(reason)))
        return dlock__seterr(DLOCK_EINVAL,
                             "the reason must be at most %d bytes of UTF-8 "
                             "without control characters",
                             DLOCK_REASON_MAX);
    if (s->ops->suspend == NULL)
        return no_suspension(s);
    memset(&cur, 0, sizeof(cur));
    rc = s->ops->suspend(s, name, who, reason, &was, &cur);
    if (rc != DLOCK_OK)
        return rc;
    if (out_was != NULL)
        *out_was = was != 0;
    dlock__clearerr();
    return DLOCK_OK;
}

/* resume and suspension: one record or none, handed out. */
static dlock_rc one(dlock_suspension **out, dlock_store *s, const char *name,
                    int (*op)(struct dlock_store *, const char *, int *,
                              dlock_suspension *))
{
    dlock_suspension *cur;
    int rc, was = 0;

    cur = calloc(1, sizeof(*cur));
    if (cur == NULL)
        return dlock__enomem();
    rc = op(s, name, &was, cur);
    if (rc != DLOCK_OK || !was || out == NULL) {
        free(cur);
        return rc;
    }
    vet_record(cur, name);
    *out = cur;
    dlock__clearerr();
    return DLOCK_OK;
}

dlock_rc dlock_resume(dlock_suspension **out, dlock_store *s, const char *name)
{
    int rc;

    dlock__clearerr();
    if (out != NULL)
        *out = NULL;
    rc = name_call_ok(s, name);
    if (rc != DLOCK_OK)
        return rc;
    if (s->ops->resume == NULL)
        return no_suspension(s);
    return one(out, s, name, s->ops->resume);
}

dlock_rc dlock_suspended(dlock_suspension **out, dlock_store *s,
                         const char *name)
{
    int rc;

    dlock__clearerr();
    if (out == NULL)
        return dlock__seterr(DLOCK_EINVAL, "out is NULL");
    *out = NULL;
    rc = name_call_ok(s, name);
    if (rc != DLOCK_OK)
        return rc;
    if (s->ops->suspension == NULL)
        return no_suspension(s);
    return one(out, s, name, s->ops->suspension);
}

struct each {
    dlock_suspension_cb cb;
    void *payload;
};

static int vet_each(const dlock_suspension *rec, void *payload)
{
    struct each *e = payload;
    dlock_suspension copy = *rec;

    /* A name the store holds that dlock could not have written is no
     * name of a job (list and last_runs pass over such names too). */
    if (dlock__check_name(copy.name, strnlen(copy.name, sizeof(copy.name))) !=
        DLOCK_OK)
        return 0;
    vet_record(&copy, rec->name);
    return e->cb(&copy, e->payload);
}

int dlock_suspensions(dlock_store *s, const char *prefix,
                      dlock_suspension_cb cb, void *payload)
{
    struct each e = {cb, payload};
    int rc = dlock__prefix_call_ok(s, cb != NULL, &prefix);

    if (rc != DLOCK_OK)
        return rc;
    if (s->ops->suspensions == NULL)
        return no_suspension(s);
    rc = s->ops->suspensions(s, prefix, vet_each, &e);
    if (rc == DLOCK_OK)
        dlock__clearerr();
    return rc;
}

void dlock_suspension_free(dlock_suspension *s)
{
    free(s);
}
