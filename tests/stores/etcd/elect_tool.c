/*
 * elect_tool.c - a dlock candidate and observer for the etcdctl elect
 * interop test (test_etcd_elect.sh):
 *
 *     elect_tool campaign URL NAME VALUE TTL_MS
 *         dlock_elect(NAME, VALUE), waiting for ever: prints "leader
 *         FENCE" once it leads, then reads stdin; a line (or EOF)
 *         resigns: prints "resigned RC" and exits 0.  A campaign that
 *         fails prints "failed RC MESSAGE" and exits 1.
 *     elect_tool leader URL NAME
 *         dlock_leader(): "leader FENCE VALUE" (VALUE "-" when none), or
 *         "none"; exit 0 (2 on a failure).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlock.h"

static int campaign(const char *url, const char *name, const char *value,
                    long ttl)
{
    dlock_options o = DLOCK_OPTIONS_INIT;
    dlock_store *s = NULL;
    dlock_lock *l = NULL;
    char line[64];
    int rc;

    o.wait_ms = DLOCK_WAIT_FOREVER;
    o.ttl_ms = ttl;
    rc = dlock_store_open(&s, url);
    if (rc == DLOCK_OK)
        rc = dlock_elect(&l, s, name, value, &o);
    if (rc != DLOCK_OK) {
        printf("failed %d %s\n", rc, dlock_errmsg());
        fflush(stdout);
        dlock_store_close(s);
        return 1;
    }
    printf("leader %llu\n", (unsigned long long)dlock_fence(l));
    fflush(stdout);
    (void)fgets(line, sizeof(line), stdin);
    rc = dlock_release(l);
    printf("resigned %d\n", rc);
    fflush(stdout);
    dlock_store_close(s);
    return 0;
}

static int leader(const char *url, const char *name)
{
    dlock_store *s = NULL;
    dlock_info *info = NULL;
    int rc = dlock_store_open(&s, url);

    if (rc == DLOCK_OK)
        rc = dlock_leader(&info, s, name);
    if (rc != DLOCK_OK) {
        printf("failed %d %s\n", rc, dlock_errmsg());
        dlock_store_close(s);
        return 2;
    }
    if (info->held)
        printf("leader %llu %s\n", (unsigned long long)info->fence,
               info->value != NULL ? info->value : "-");
    else
        printf("none\n");
    dlock_info_free(info);
    dlock_store_close(s);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 6 && strcmp(argv[1], "campaign") == 0)
        return campaign(argv[2], argv[3], argv[4], strtol(argv[5], NULL, 10));
    if (argc == 4 && strcmp(argv[1], "leader") == 0)
        return leader(argv[2], argv[3]);
    fprintf(stderr, "usage: elect_tool campaign URL NAME VALUE TTL_MS | "
                    "leader URL NAME\n");
    return 2;
}
