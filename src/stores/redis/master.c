/*
 * master.c - where the master is: the one configured server, or the one the
 * sentinels name.
 *
 * redis-sentinel://[user:pass@]host:port[,host:port...]/MASTER[?db=N&...]
 * (lettuce spells it redis-sentinel:// too; redis-py and go-redis take a
 * list of sentinels and a master name in code, not a URL.)  user:pass is
 * for the data nodes; the sentinels are asked without AUTH.
 *
 * Each new connection asks the sentinels in turn (starting with the one
 * that answered last) SENTINEL get-master-addr-by-name, connects there and
 * checks ROLE: during a failover a sentinel may still name the old master,
 * now a replica, which is refused (EUNAVAIL: a waiter waits it out, a
 * renewal retries while its lease runs).  Commands that meet a demoted
 * master (READONLY) drop the connection (link.c), so the next one asks
 * again.  When the command connection finds the master at another address
 * than before, a new epoch starts: locks taken before are LOST (held.c),
 * because the promoted replica may lack them (asynchronous replication)
 * and someone may have taken them there meanwhile.  Fences stay rising:
 * the fence script never hands out less than the server's clock in us
 * (lua/fn_fence.lua), which covers a replica that had not seen the last
 * INCRs as long as the failover takes longer than the clocks of the two
 * servers differ.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topology.h"

int dlock__redis_sentinel_parse(struct redis_store *rs,
                                const struct dlock_url *u)
{
    if (u->path == NULL || strlen(u->path) < 2 || strchr(u->path + 1, '/'))
        return dlock__seterr(DLOCK_EINVAL,
                             "expected redis-sentinel://host:"
                             "port[,host:port...]/MASTERNAME, got %s",
                             u->redacted);
    rs->master = dlock__strdup(u->path + 1);
    if (rs->master == NULL)
        return dlock__enomem();
    return dlock__url_hosts(u, 26379, "sentinel", &rs->sent_host,
                            &rs->sent_port, &rs->nsent);
}

void dlock__redis_master_free(struct redis_store *rs)
{
    for (int i = 0; i < rs->nsent; i++)
        free(rs->sent_host[i]);
    free(rs->sent_host);
    free(rs->sent_port);
    free(rs->master);
}

/* Ask sentinel i where the master is: 0 with host and *port.  Within
 * the call's I/O bound (dlock__io_bound()) as the master's own connection
 * is: a finite wait's open, a renewal reconnecting, all the sentinels
 * asked in turn end by its deadline, not each at the URL's timeout. */
static int ask_sentinel(struct redis_store *rs, int i, char *host, size_t hlen,
                        int *port)
{
    struct rconn *c =
        dlock__rconn_connect(rs->tls, rs->sent_host[i], rs->sent_port[i], NULL,
                             dlock__io_bound(rs->connect_timeout_ms));
    redisReply *r = NULL;
    int ok = -1;

    if (c != NULL && !c->err) {
        dlock__rconn_set_timeout(c, dlock__io_bound(rs->connect_timeout_ms));
        r = dlock__rconn_command(c, "SENTINEL get-master-addr-by-name %s",
                                 rs->master);
    }
    if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
        r->element[0]->type == REDIS_REPLY_STRING &&
        r->element[1]->type == REDIS_REPLY_STRING) {
        dlock__strlcpy(host, r->element[0]->str, hlen);
        *port = atoi(r->element[1]->str);
        ok = 0;
    }
    freeReplyObject(r);
    dlock__rconn_free(c);
    return ok;
}

static struct rconn *sentinel_connect(struct redis_store *rs, int main, int *rc)
{
    static _Thread_local int first; /* the sentinel that answered last */
    char host[256], where[300];
    int port = 0;

    for (int k = 0; k < rs->nsent; k++) {
        int i = (first + k) % rs->nsent;
        struct rconn *c;

        if (ask_sentinel(rs, i, host, sizeof(host), &port) != 0)
            continue;
        first = i;
        c = dlock__redis_connect_to(rs, host, port, rc);
        if (c == NULL)
            return NULL;
        if (!dlock__redis_role_is(c, "master")) {
            dlock__rconn_free(c);
            *rc = dlock__seterr(DLOCK_EUNAVAIL,
                                "%s: %s:%d is not (yet) the "
                                "master of %s",
                                rs->url, host, port, rs->master);
            return NULL;
        }
        snprintf(where, sizeof(where), "%s:%d", host, port);
        if (main) {
            pthread_mutex_lock(&rs->tmu);
            if (strcmp(where, rs->cur_master) != 0) {
                if (rs->cur_master[0] != '\0')
                    rs->epoch++;
                dlock__strlcpy(rs->cur_master, where, sizeof(rs->cur_master));
            }
            pthread_mutex_unlock(&rs->tmu);
        }
        return c;
    }
    *rc = dlock__seterr(DLOCK_EUNAVAIL,
                        "%s: no sentinel answered where the "
                        "master %s is",
                        rs->url, rs->master);
    return NULL;
}

int dlock__redis_sentinel_knows(struct redis_store *rs)
{
    char host[256];
    int port;

    for (int i = 0; i < rs->nsent; i++)
        if (ask_sentinel(rs, i, host, sizeof(host), &port) == 0)
            return 1;
    return 0;
}

struct rconn *dlock__redis_master_connect(struct redis_store *rs, int main,
                                          int *rc)
{
    if (rs->master != NULL)
        return sentinel_connect(rs, main, rc);
    return dlock__redis_connect_to(rs, rs->sock != NULL ? NULL : rs->host,
                                   rs->port, rc);
}
