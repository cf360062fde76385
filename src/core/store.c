/*
 * store.c - the scheme table and the store-level API.
 *
 * Like curl's scheme table, this knows every scheme dlock has a store for,
 * whether or not that store was built, so a URL for a store left out of the
 * build gets "X support was not compiled in" rather than "unknown scheme".
 * It is the one list of schemes in the code: dlock_schemes() (so
 * `dlock --version` and `--help`) and the "unknown scheme" error are made
 * from it; cmake/stores.list is the same list for the texts written by
 * hand, and scripts/stores.py --check (docs-stores) keeps the two equal.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api.h"
#include "clock.h"
#include "errors.h"
#include "iobound.h"
#include "names.h"
#include "process.h"
#include "registry.h"
#include "store.h"
#include "strutil.h"
#include "url.h"

#ifdef DLOCK_HAVE_SQLITE
#define SQLITE_OPS (&dlock__sqlite_ops)
#else
#define SQLITE_OPS NULL
#endif
#ifdef DLOCK_HAVE_REDIS
#define REDIS_OPS (&dlock__redis_ops)
#else
#define REDIS_OPS NULL
#endif
#ifdef DLOCK_HAVE_POSTGRES
#define POSTGRES_OPS (&dlock__postgres_ops)
#else
#define POSTGRES_OPS NULL
#endif
#ifdef DLOCK_HAVE_MYSQL
#define MYSQL_OPS (&dlock__mysql_ops)
#else
#define MYSQL_OPS NULL
#endif
#ifdef DLOCK_HAVE_ETCD
#define ETCD_OPS (&dlock__etcd_ops)
#else
#define ETCD_OPS NULL
#endif

static const struct scheme {
    const char *scheme;
    const char *label; /* for "X support was not compiled in" */
    const struct dlock_store_ops *ops;
} schemes[] = {
    {.scheme = "sqlite", .label = "sqlite://", .ops = SQLITE_OPS},
    {.scheme = "redis", .label = "redis://", .ops = REDIS_OPS},
    {.scheme = "unix", .label = "unix:// (Redis)", .ops = REDIS_OPS},
    {.scheme = "redis-sentinel",
     .label = "redis-sentinel://",
     .ops = REDIS_OPS},
    {.scheme = "redis-cluster", .label = "redis-cluster://", .ops = REDIS_OPS},
    {.scheme = "rediss", .label = "rediss://", .ops = REDIS_OPS},
    {.scheme = "rediss-sentinel",
     .label = "rediss-sentinel://",
     .ops = REDIS_OPS},
    {.scheme = "rediss-cluster",
     .label = "rediss-cluster://",
     .ops = REDIS_OPS},
    {.scheme = "postgres", .label = "postgres://", .ops = POSTGRES_OPS},
    {.scheme = "postgresql", .label = "postgresql://", .ops = POSTGRES_OPS},
    {.scheme = "mysql", .label = "mysql://", .ops = MYSQL_OPS},
    {.scheme = "mariadb", .label = "mariadb://", .ops = MYSQL_OPS},
    {.scheme = "etcd", .label = "etcd://", .ops = ETCD_OPS},
    {.scheme = "etcds", .label = "etcds://", .ops = ETCD_OPS},
};

/* The table's schemes (the built ones only if built_only), sep between
 * them, into buf (size bytes; cut short if it were too small): the one
 * list that --version, "not compiled in" and "unknown scheme" say. */
static void scheme_list(char *buf, size_t size, const char *sep, int built_only)
{
    size_t len = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++) {
        int n;

        if (built_only && schemes[i].ops == NULL)
            continue;
        n = snprintf(buf + len, size - len, "%s%s", len > 0 ? sep : "",
                     schemes[i].scheme);
        if (n < 0 || (size_t)n >= size - len)
            break;
        len += (size_t)n;
    }
}

/* Every scheme's name and separator fits (the table's are short). */
#define SCHEME_LIST_MAX 512
static pthread_once_t schemes_once = PTHREAD_ONCE_INIT;
static char built_schemes[SCHEME_LIST_MAX], known_schemes[SCHEME_LIST_MAX];

static void schemes_init(void)
{
    scheme_list(built_schemes, sizeof(built_schemes), ",", 1);
    scheme_list(known_schemes, sizeof(known_schemes), ", ", 0);
}

const char *dlock_schemes(void)
{
    pthread_once(&schemes_once, schemes_init);
    return built_schemes;
}

/* The default store is per user: /var/tmp/dlock-EUID/dlock.db.  The same
 * for every process of a user (a cron job and a shell share it), in
 * /var/tmp so that it and its fences survive a reboot, and in a directory
 * only that user can write (see privdir.c).  Computed once per process. */
static pthread_once_t default_once = PTHREAD_ONCE_INIT;
static char default_url[64];

static void default_url_init(void)
{
    snprintf(default_url, sizeof(default_url),
             "sqlite:///var/tmp/dlock-%u/dlock.db", (unsigned)geteuid());
}

const char *dlock_default_url(void)
{
    pthread_once(&default_once, default_url_init);
    return default_url;
}

const char *dlock_version(void)
{
    return DLOCK_VERSION_STRING;
}

dlock_rc dlock_options_init(dlock_options *opts, unsigned version)
{
    static const dlock_options defaults = DLOCK_OPTIONS_INIT;

    dlock__clearerr();
    if (opts == NULL)
        return dlock__seterr(DLOCK_EINVAL, "options are NULL");
    if (version < 1 || version > DLOCK_OPTIONS_VERSION)
        return dlock__seterr(DLOCK_EINVAL,
                             "unknown dlock_options version %u (this "
                             "library knows 1..%u)",
                             version, DLOCK_OPTIONS_VERSION);
    /* Only the fields of that version: a caller built against an older
     * header has a smaller struct, which ends where the next version's
     * first field begins. */
    memcpy(opts, &defaults,
           version == 1   ? offsetof(dlock_options, limit)
           : version == 2 ? offsetof(dlock_options, cancel)
                          : sizeof(defaults));
    opts->version = version;
    return DLOCK_OK;
}

int dlock__ops_check(const struct dlock_store_ops *ops)
{
    /* A store written for another version of store.h: its idea of what
     * the core passes and expects is not ours. */
    if (ops->version != DLOCK_STORE_OPS_VERSION)
        return dlock__seterr(DLOCK_ENOTSUP,
                             "the %s store was built for store contract "
                             "version %d; this dlock's core speaks version "
                             "%d",
                             ops->name, ops->version, DLOCK_STORE_OPS_VERSION);
    return DLOCK_OK;
}

/* Parse url and find its store's ops. */
static int lookup(struct dlock_url **out, const struct dlock_store_ops **ops,
                  const char *url)
{
    int rc;

    if (url == NULL || url[0] == '\0')
        url = dlock_default_url();
    rc = dlock__url_parse(out, url);
    if (rc != DLOCK_OK)
        return rc;
    for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++) {
        if (strcmp(schemes[i].scheme, (*out)->scheme) != 0)
            continue;
        if (schemes[i].ops == NULL)
            rc = dlock__seterr(DLOCK_ENOTSUP,
                               "%s support was not compiled in (this dlock "
                               "has: %s)",
                               schemes[i].label, dlock_schemes());
        else
            rc = dlock__ops_check(schemes[i].ops);
        *ops = schemes[i].ops;
        goto done;
    }
    pthread_once(&schemes_once, schemes_init);
    rc = dlock__seterr(DLOCK_EINVAL,
                       "unknown store scheme \"%s\" in %s (known: %s)",
                       (*out)->scheme, (*out)->redacted, known_schemes);
done:
    if (rc != DLOCK_OK) {
        dlock__url_free(*out);
        *out = NULL;
    }
    return rc;
}

dlock_rc dlock_store_open(dlock_store **out, const char *url)
{
    const struct dlock_store_ops *ops = NULL;
    struct dlock_url *u;
    dlock_store *s = NULL;
    int rc;

    dlock__clearerr();
    if (out == NULL)
        return dlock__seterr(DLOCK_EINVAL, "out is NULL");
    *out = NULL;
    rc = lookup(&u, &ops, url);
    if (rc != DLOCK_OK)
        return rc;
    rc = ops->open(&s, u);
    if (rc != DLOCK_OK) {
        /* Whatever a driver said, not one secret of the URL in it. */
        char **sec = dlock__url_secrets(u->raw);

        if (sec != NULL)
            dlock__scrub_errmsg((const char *const *)sec);
        else
            dlock__seterr(rc, "cannot open %s (no memory to tell more)",
                          u->redacted);
        dlock__secrets_free(sec);
    }
    if (rc == DLOCK_OK) {
        s->ops = ops;
        s->pid = dlock__pid();
        s->gen = dlock__generation();
        s->url = u->redacted;
        u->redacted = NULL;
        *out = s;
    }
    dlock__url_free(u);
    return rc;
}

dlock_rc dlock_store_open_within(dlock_store **out, const char *url,
                                 int64_t within_ms)
{
    int64_t saved = dlock__io_deadline;
    int rc;

    if (within_ms <= 0) {
        dlock__clearerr();
        if (out != NULL)
            *out = NULL;
        return dlock__seterr(DLOCK_EINVAL,
                             "dlock_store_open_within: within_ms %lld is not "
                             "positive",
                             (long long)within_ms);
    }
    /* The stores' connects and reads all wait through dlock__io_bound()
     * (or the connector's io_wait, which reads the deadline), as a
     * finite wait's calls do; past a year is no bound at all. */
    if (within_ms <= DLOCK_TTL_MAX_MS) {
        int64_t end = dlock__now_ms() + within_ms;

        if (saved == 0 || end < saved)
            dlock__io_deadline = end;
    }
    rc = dlock_store_open(out, url);
    dlock__io_deadline = saved;
    return rc;
}

/* A fork child must not talk to its parent's connections (they are shared
 * sockets and file locks); it opens its own store. */
int dlock__store_usable(const dlock_store *s)
{
    if (s == NULL)
        return dlock__seterr(DLOCK_EINVAL, "store is NULL");
    if (s->gen != dlock__generation())
        return dlock__seterr(DLOCK_EINVAL,
                             "store was opened by process %ld; a forked "
                             "child must open its own",
                             (long)s->pid);
    return DLOCK_OK;
}

void dlock_store_close(dlock_store *s)
{
    char *url;

    /* In a fork child the parent's connections are left alone (and
     * leaked): closing them could disturb the parent. */
    if (s == NULL || s->gen != dlock__generation())
        return;
    dlock__registry_detach_store(s);
    url = s->url;
    s->ops->close(s);
    free(url);
}

dlock_rc dlock_store_probe(dlock_store *s, dlock_probe *out)
{
    unsigned version;
    int rc;

    dlock__clearerr();
    if (out == NULL)
        return dlock__seterr(DLOCK_EINVAL, "out is NULL");
    version = out->version;
    if (version < 1 || version > DLOCK_PROBE_VERSION)
        return dlock__seterr(DLOCK_EINVAL,
                             "dlock_probe version %u (this library knows "
                             "1..%d)",
                             version, DLOCK_PROBE_VERSION);
    /* Version 1 is the whole struct.  A later version that adds fields
     * must zero only the caller's version's part: a program built for
     * version 1 passes the shorter struct. */
    memset(out, 0, sizeof(*out));
    out->version = version;
    out->tls = -1;
    out->tables_ok = -1;
    out->resolution_ms = 1;
    rc = dlock__store_usable(s);
    if (rc != DLOCK_OK)
        return rc;
    if (s->ops->probe == NULL)
        return dlock__seterr(DLOCK_ENOTSUP,
                             "the %s store cannot report its clock or TLS "
                             "session",
                             s->ops->name);
    return s->ops->probe(s, out);
}

const char *dlock_store_url(const dlock_store *s)
{
    return s != NULL && s->url != NULL ? s->url : "";
}

dlock_rc dlock_store_init(dlock_store *s)
{
    int rc;

    dlock__clearerr();
    rc = dlock__store_usable(s);
    return rc != DLOCK_OK ? rc : s->ops->init(s);
}

dlock_rc dlock_ddl(char **out, const char *url)
{
    const struct dlock_store_ops *ops = NULL;
    struct dlock_url *u;
    int rc;

    dlock__clearerr();
    if (out == NULL)
        return dlock__seterr(DLOCK_EINVAL, "out is NULL");
    *out = NULL;
    rc = lookup(&u, &ops, url);
    if (rc != DLOCK_OK)
        return rc;
    rc = ops->ddl(out, u);
    dlock__url_free(u);
    return rc;
}

/* A holder the store knows nothing about but that it is held: a client
 * that is not dlock (stores record host, pid and time for every dlock
 * holder).  A store may say so itself, of a peer's row that tells a time
 * (MariaDB: its-mieger's created and ttl). */
static void mark_other_client(dlock_info *info)
{
    info->other_client =
        info->held &&
        (info->other_client ||
         (info->host[0] == '\0' && info->pid == 0 && info->since_ms == 0));
}

dlock_rc dlock_status(dlock_info **out, dlock_store *s, const char *name)
{
    dlock_info *info;
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
    rc = dlock__check_name(name, strlen(name));
    if (rc != DLOCK_OK)
        return rc;
    info = calloc(1, sizeof(*info));
    if (info == NULL)
        return dlock__enomem();
    info->ttl_ms = -1;
    memcpy(info->name, name, strlen(name) + 1);
    rc = s->ops->status(s, name, info);
    if (rc != DLOCK_OK) {
        free(info);
        return rc;
    }
    mark_other_client(info);
    *out = info;
    return DLOCK_OK;
}

void dlock_info_free(dlock_info *info)
{
    if (info != NULL)
        free((char *)info->value);
    free(info);
}

struct list_relay {
    dlock_list_cb cb;
    void *payload;
    dlock_info copy;
};

static int list_relay(const dlock_info *info, void *arg)
{
    struct list_relay *r = arg;

    r->copy = *info;
    mark_other_client(&r->copy);
    return r->cb(&r->copy, r->payload);
}

int dlock__prefix_call_ok(const dlock_store *s, int has_cb, const char **prefix)
{
    int rc;

    dlock__clearerr();
    rc = dlock__store_usable(s);
    if (rc != DLOCK_OK)
        return rc;
    if (!has_cb)
        return dlock__seterr(DLOCK_EINVAL, "callback is NULL");
    if (*prefix == NULL)
        *prefix = "";
    if (strlen(*prefix) > DLOCK_NAME_MAX)
        return dlock__seterr(DLOCK_EINVAL, "prefix is longer than %d bytes",
                             DLOCK_NAME_MAX);
    return DLOCK_OK;
}

int dlock_list(dlock_store *s, const char *prefix, dlock_list_cb cb,
               void *payload)
{
    struct list_relay *r;
    int rc = dlock__prefix_call_ok(s, cb != NULL, &prefix);

    if (rc != DLOCK_OK)
        return rc;
    r = malloc(sizeof(*r));
    if (r == NULL)
        return dlock__enomem();
    r->cb = cb;
    r->payload = payload;
    rc = s->ops->list(s, prefix, list_relay, r);
    free(r);
    return rc;
}

dlock_rc dlock_force_release(unsigned *out_removed, dlock_store *s,
                             const char *name)
{
    unsigned removed = 0;
    int rc;

    dlock__clearerr();
    rc = dlock__store_usable(s);
    if (out_removed != NULL)
        *out_removed = 0;
    if (rc != DLOCK_OK)
        return rc;
    if (name == NULL)
        return dlock__seterr(DLOCK_EINVAL, "lock name is NULL");
    /* Any bytes: a name another client planted that is not UTF-8 (which
     * dlock never hands out) must still be breakable. */
    if (name[0] == '\0' || strlen(name) > DLOCK_NAME_MAX)
        return dlock__check_name(name, strlen(name));
    rc = s->ops->force_release(s, name, &removed);
    if (out_removed != NULL)
        *out_removed = removed;
    return rc;
}
