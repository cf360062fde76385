/*
 * suspend_tool.c - the checks of test_etcd_suspend.sh on one name whose
 * suspension record the script planted or made:
 *
 *     suspend_tool URL planted NAME BY REASON
 *         NAME's record (planted with etcdctl: garbage) still suspends:
 *         dlock_suspended() reads BY and REASON back ("?" for what dlock
 *         cannot have written), a second dlock_suspend() finds it (was 1)
 *         and leaves it, dlock_run_begin() skips with DLOCK_RUN_SUSPENDED
 *         and host BY, dlock_suspensions() lists it so, and
 *         dlock_resume() lifts it and hands the same back.
 *     suspend_tool URL readonly NAME
 *         URL's login may only read: NAME (suspended by another login)
 *         reads back, but dlock_suspend() of another name and
 *         dlock_resume() of NAME fail with DLOCK_ESTORE or
 *         DLOCK_EUNAVAIL and a message, and change nothing.
 *     suspend_tool URL suspend NAME | resume NAME
 *         as the script's writer login (exit 0 on DLOCK_OK).
 *
 * Prints "ok ..." / "  FILE:LINE: ..." lines and exits 1 on a failure.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

struct seen {
    const char *want;
    int found;
    dlock_suspension rec;
};

static int seen_cb(const dlock_suspension *x, void *p)
{
    struct seen *s = p;

    if (strcmp(x->name, s->want) == 0) {
        s->found++;
        s->rec = *x;
    }
    return 0;
}

static void planted(dlock_store *s, const char *name, const char *by,
                    const char *reason)
{
    dlock_options o = DLOCK_OPTIONS_INIT;
    dlock_run_rule r = DLOCK_RUN_RULE_INIT;
    dlock_suspension *x = NULL;
    dlock_run *last = NULL;
    dlock_lock *l = NULL;
    struct seen seen = {.want = name};
    int was = -1, go = -1;

    CHECK_RC(dlock_suspended(&x, s, name), DLOCK_OK);
    CHECK(x != NULL);
    EXPECT(strcmp(x->name, name) == 0);
    EXPECT(strcmp(x->by, by) == 0);
    EXPECT(strcmp(x->reason, reason) == 0);
    EXPECT(x->since_ms >= 0);
    printf("ok   %s reads back: by '%s', since %lld, reason '%.40s'\n", name,
           x->by, (long long)x->since_ms, x->reason);
    dlock_suspension_free(x);
    x = NULL;
    /* A second suspension finds it and leaves it. */
    CHECK_RC(dlock_suspend(&was, s, name, "tester@here", "again"), DLOCK_OK);
    EXPECT(was == 1);
    CHECK_RC(dlock_suspended(&x, s, name), DLOCK_OK);
    CHECK(x != NULL);
    EXPECT(strcmp(x->by, by) == 0);
    dlock_suspension_free(x);
    x = NULL;
    /* It suspends. */
    o.wait_ms = 5000;
    CHECK_RC(dlock_acquire(&l, s, name, &o), DLOCK_OK);
    EXPECT_RC(dlock_run_begin(l, &r, &go, &last), DLOCK_OK);
    EXPECT(go == 0);
    EXPECT(last != NULL);
    if (last != NULL) {
        EXPECT(last->result == DLOCK_RUN_SUSPENDED);
        EXPECT(strcmp(last->host, by) == 0);
        EXPECT(last->fence == 0 && last->end_ms == 0);
        printf("ok   %s: dlock_run_begin skips (suspended by '%s')\n", name,
               last->host);
    }
    dlock_run_free(last);
    EXPECT_RC(dlock_release(l), DLOCK_OK);
    /* Listed, with the same texts. */
    EXPECT_RC(dlock_suspensions(s, name, seen_cb, &seen), DLOCK_OK);
    EXPECT(seen.found == 1);
    EXPECT(seen.found != 1 || (strcmp(seen.rec.by, by) == 0 &&
                               strcmp(seen.rec.reason, reason) == 0));
    /* Lifted: what was there comes back. */
    CHECK_RC(dlock_resume(&x, s, name), DLOCK_OK);
    CHECK(x != NULL);
    EXPECT(strcmp(x->by, by) == 0 && strcmp(x->reason, reason) == 0);
    dlock_suspension_free(x);
    x = (dlock_suspension *)&x;
    CHECK_RC(dlock_suspended(&x, s, name), DLOCK_OK);
    EXPECT(x == NULL);
    printf("ok   %s: listed, resumed\n", name);
}

static int refused(int rc)
{
    return (rc == DLOCK_ESTORE || rc == DLOCK_EUNAVAIL) &&
           dlock_errmsg()[0] != '\0';
}

static void readonly(dlock_store *s, const char *name)
{
    dlock_suspension *x = NULL;
    char other[DLOCK_NAME_MAX + 1];
    int rc, was = -1;

    CHECK_RC(dlock_suspended(&x, s, name), DLOCK_OK);
    CHECK(x != NULL);
    printf("ok   the reader reads %s's suspension (by '%s')\n", name, x->by);
    dlock_suspension_free(x);
    x = NULL;
    snprintf(other, sizeof(other), "%s-other", name);
    rc = dlock_suspend(&was, s, other, "ro@here", "may not");
    EXPECT(refused(rc));
    printf("%s the reader's dlock_suspend: %d (%s): %s\n",
           refused(rc) ? "ok  " : "FAIL", rc, dlock_strerror(rc),
           dlock_errmsg());
    rc = dlock_suspend(&was, s, name, "ro@here", "may not");
    /* Suspended already: nothing to write, it says so. */
    EXPECT(rc == DLOCK_OK && was == 1);
    rc = dlock_resume(&x, s, name);
    EXPECT(refused(rc));
    EXPECT(x == NULL);
    printf("%s the reader's dlock_resume: %d (%s): %s\n",
           refused(rc) ? "ok  " : "FAIL", rc, dlock_strerror(rc),
           dlock_errmsg());
    dlock_suspension_free(x);
    x = NULL;
    CHECK_RC(dlock_suspended(&x, s, name), DLOCK_OK);
    EXPECT(x != NULL);
    dlock_suspension_free(x);
    x = (dlock_suspension *)&x;
    CHECK_RC(dlock_suspended(&x, s, other), DLOCK_OK);
    EXPECT(x == NULL);
    printf("ok   nothing changed\n");
}

int main(int argc, char **argv)
{
    dlock_store *s = NULL;
    const char *mode = argc >= 4 ? argv[2] : "";
    int rc;

    if (argc < 4) {
        fprintf(stderr, "usage: suspend_tool URL planted|readonly|suspend|"
                        "resume NAME [BY REASON]\n");
        return 2;
    }
    rc = dlock_store_open(&s, argv[1]);
    if (rc != DLOCK_OK) {
        fprintf(stderr, "open: %d %s\n", rc, dlock_errmsg());
        return 1;
    }
    if (strcmp(mode, "planted") == 0 && argc == 6)
        planted(s, argv[3], argv[4], argv[5]);
    else if (strcmp(mode, "readonly") == 0)
        readonly(s, argv[3]);
    else if (strcmp(mode, "suspend") == 0)
        EXPECT_RC(dlock_suspend(NULL, s, argv[3], "writer@here", "test"),
                  DLOCK_OK);
    else if (strcmp(mode, "resume") == 0)
        EXPECT_RC(dlock_resume(NULL, s, argv[3]), DLOCK_OK);
    else {
        fprintf(stderr, "suspend_tool: bad mode %s\n", mode);
        failures++;
    }
    dlock_store_close(s);
    return failures ? 1 : 0;
}
