/*
 * probe.c - the MySQL store's answer to dlock_store_probe() (`dlock
 * check`): the server's clock (sql/probe.sql) and the connection's TLS
 * protocol (MariaDB Connector/C's MARIADB_CONNECTION_TLS_VERSION).  The
 * connector of Debian bookworm has no way to the peer's certificate
 * (no MARIADB_TLS_PEER_CERT_INFO), so its notAfter stays unknown.  The
 * tables were checked, or made, when the store opened (schema.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "my.h"

struct probe_call {
    struct my_store *ms;
    dlock_probe *out;
};

static int probe_fn(void *conn, void *arg, int *dead)
{
    struct probe_call *k = arg;
    struct my_store *ms = k->ms;
    dlock_probe *out = k->out;
    struct conn *c = conn;
    MYSQL_RES *res;
    MYSQL_ROW row;
    const char *tls = NULL;
    int64_t t0, t1;

    *dead = 0;
    t0 = dlock__wall_ms();
    if (mysql_query(c->db, ms->sql.probe) != 0 ||
        (res = mysql_store_result(c->db)) == NULL) {
        int rc = dlock__my_db_err(ms, c, "reading the server's clock");

        *dead = rc == DLOCK_EUNAVAIL;
        return rc;
    }
    t1 = dlock__wall_ms();
    row = mysql_fetch_row(res);
    if (row != NULL && row[0] != NULL) {
        out->server_ms = strtoll(row[0], NULL, 10);
        out->host_ms = t0 + (t1 - t0) / 2;
        out->rtt_ms = t1 - t0;
    }
    mysql_free_result(res);
    if (mariadb_get_infov(c->db, MARIADB_CONNECTION_TLS_VERSION, &tls) == 0 &&
        tls != NULL && tls[0] != '\0') {
        out->tls = 1;
        snprintf(out->tls_version, sizeof(out->tls_version), "%s", tls);
    } else {
        out->tls = ms->socket != NULL || ms->ssl == 0 ? 0 : -1;
    }
    return DLOCK_OK;
}

int dlock__my_probe(struct dlock_store *s, dlock_probe *out)
{
    struct probe_call k = {(struct my_store *)s, out};

    out->tables_ok = 1;
    snprintf(out->tables, sizeof(out->tables),
             "%s and %s present (checked, or made, at open)", k.ms->table,
             k.ms->fences);
    return dlock__pool_run(&k.ms->pool, probe_fn, &k);
}
