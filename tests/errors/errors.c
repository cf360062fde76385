/*
 * errors.c - one failure class, one code, on every store (include/dlock.h):
 *
 *   dlock-errors CLASS URL [CLASS URL]...
 *
 * CLASS is unreachable, credentials, permission, misconfig or badurl; URL
 * is set up by errors.sh to fail that way for real (a closed port on
 * 127.0.0.1, a user with a wrong password, a user without rights on
 * dlock's table or keys, an unknown database, a URL the store refuses to
 * parse).  The store is opened, and if it opens, a
 * name is looked at and taken: the first call that fails must fail with
 * the class's code, and one of them must fail.
 *
 *   dlock-errors force-derived URL
 *
 * MySQL/MariaDB: release --force of a name spelt as a semaphore's slot key
 * ("<40 hex>#<i>") or a waiter row ("<40 hex>~<id>") is refused, and the
 * semaphore's holders stay (they were killed before).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#ifdef DLOCK_HAVE_MYSQL
#include "mysql/my_keys.h"
#endif

struct cls {
    const char *name;
    int rc;
};

/* The table of include/dlock.h, spelt out again. */
static const struct cls classes[] = {
    {"unreachable", DLOCK_EUNAVAIL}, {"credentials", DLOCK_ESTORE},
    {"permission", DLOCK_ESTORE},    {"misconfig", DLOCK_ESTORE},
    {"badurl", DLOCK_EINVAL},
};

/* The first failing call's code, or DLOCK_OK if every call worked. */
static int first_failure(const char *url, const char **what, char *msg,
                         size_t cap)
{
    dlock_store *s = NULL;
    dlock_info *info = NULL;
    dlock_lock *lk = NULL;
    dlock_options o;
    int rc;

    *what = "dlock_store_open";
    rc = dlock_store_open(&s, url);
    if (rc == DLOCK_OK) {
        *what = "dlock_status";
        rc = dlock_status(&info, s, "errors-class");
        dlock_info_free(info);
    }
    if (rc == DLOCK_OK) {
        *what = "dlock_acquire";
        dlock_options_init(&o, DLOCK_OPTIONS_VERSION);
        o.wait_ms = 0;
        rc = dlock_acquire(&lk, s, "errors-class", &o);
        if (rc == DLOCK_OK) {
            *what = "dlock_release";
            rc = dlock_release(lk);
        }
    }
    snprintf(msg, cap, "%s", dlock_errmsg());
    dlock_store_close(s);
    return rc;
}

#ifdef DLOCK_HAVE_MYSQL
static int force_derived(const char *url)
{
    dlock_store *s = NULL;
    dlock_lock *a = NULL, *b = NULL;
    dlock_options o;
    char pre[DLOCK__MYSQL_SEM_PREFIX + 1], name[64];
    unsigned removed = 9;
    int rc;

    rc = dlock_store_open(&s, url);
    if (rc != DLOCK_OK) {
        printf("FAIL cannot open %s: %s\n", url, dlock_errmsg());
        return 1;
    }
    dlock_options_init(&o, DLOCK_OPTIONS_VERSION);
    o.wait_ms = 0;
    o.limit = 2;
    EXPECT_RC(dlock_acquire(&a, s, "errors-sem", &o), DLOCK_OK);
    EXPECT_RC(dlock_acquire(&b, s, "errors-sem", &o), DLOCK_OK);
    EXPECT_RC(dlock__mysql_sem_prefix("errors-sem", strlen("errors-sem"), pre),
              DLOCK_OK);
    for (int i = 0; i < 3; i++) {
        snprintf(name, sizeof(name), "%s%d", pre, i);
        if (i == 2) /* a waiter row's name */
            snprintf(name, sizeof(name), "%.40s~12345", pre);
        rc = dlock_force_release(&removed, s, name);
        if (rc == DLOCK_EINVAL && removed == 0 &&
            strstr(dlock_errmsg(), "slot key") != NULL)
            printf("ok   release --force %s refused: %s\n", name,
                   dlock_errmsg());
        else {
            printf("FAIL release --force %s returned %d (%s), removed %u: "
                   "%s\n",
                   name, rc, dlock_strerror(rc), removed, dlock_errmsg());
            failures++;
        }
    }
    /* Both holders still hold (a killed session is found at once). */
    EXPECT_RC(dlock_extend(a, 10000), DLOCK_OK);
    EXPECT_RC(dlock_extend(b, 10000), DLOCK_OK);
    EXPECT_RC(dlock_release(a), DLOCK_OK);
    EXPECT_RC(dlock_release(b), DLOCK_OK);
    dlock_store_close(s);
    if (failures == 0)
        printf("ok   the semaphore's holders kept their slots\n");
    return failures ? 1 : 0;
}
#endif

int main(int argc, char **argv)
{
#ifdef DLOCK_HAVE_MYSQL
    if (argc == 3 && strcmp(argv[1], "force-derived") == 0)
        return force_derived(argv[2]);
#endif
    if (argc < 3 || argc % 2 != 1) {
        fprintf(stderr, "usage: %s CLASS URL [CLASS URL]...\n", argv[0]);
        return 2;
    }
    for (int i = 1; i + 1 < argc; i += 2) {
        const struct cls *c = NULL;
        const char *what;
        char msg[600];
        int rc;

        for (size_t j = 0; j < sizeof(classes) / sizeof(classes[0]); j++)
            if (strcmp(classes[j].name, argv[i]) == 0)
                c = &classes[j];
        if (c == NULL) {
            fprintf(stderr, "unknown class %s\n", argv[i]);
            return 2;
        }
        rc = first_failure(argv[i + 1], &what, msg, sizeof(msg));
        if (rc == c->rc) {
            printf("ok   %-11s %s: %s (%s)\n", c->name, what,
                   dlock_strerror(rc), msg);
        } else {
            printf("FAIL %-11s %s returned %d (%s), wanted %d (%s): %s\n",
                   c->name, what, rc, dlock_strerror(rc), c->rc,
                   dlock_strerror(c->rc), msg);
            failures++;
        }
    }
    return failures ? 1 : 0;
}
