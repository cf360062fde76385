/* handoff.c - which store's hand-off floor (handoff.h) a URL gets. */
#include <string.h>

#include "handoff.h"

static int scheme(const char *url, const char *s)
{
    size_t n = strlen(s);

    return strncmp(url, s, n) == 0 && strncmp(url + n, "://", 3) == 0;
}

const struct handoff_ops *handoff_floor(const char *url)
{
    (void)scheme;
#ifdef DLOCK_BENCH_FLOOR_REDIS
    if (scheme(url, "redis") || scheme(url, "unix"))
        return &handoff_floor_redis;
#endif
#ifdef DLOCK_BENCH_FLOOR_POSTGRES
    if (scheme(url, "postgres") || scheme(url, "postgresql"))
        return &handoff_floor_postgres;
#endif
#ifdef DLOCK_BENCH_FLOOR_MYSQL
    if (scheme(url, "mysql") || scheme(url, "mariadb"))
        return &handoff_floor_mysql;
#endif
#ifdef DLOCK_BENCH_FLOOR_ETCD
    if (scheme(url, "etcd"))
        return &handoff_floor_etcd;
#endif
#ifdef DLOCK_BENCH_FLOOR_SQLITE
    if (scheme(url, "sqlite"))
        return &handoff_floor_sqlite;
#endif
    return NULL;
}
