/*
 * cmd_check.c - `dlock check [--json] [--metrics-file PATH]
 * [--max-skew DURATION]`: is this store usable by dlock from this host,
 * as `nginx -t` or `pg_isready` say of theirs.
 *
 * The checks, in order, one line each (docs/cli.md, "dlock check"):
 *   url      the URL parses and names a store compiled in (dlock_ddl():
 *            no connection)                                    64
 *   connect  the store opens: the server answers, the login and TLS
 *            are accepted (a wrong password says so)           69
 *   tls      the connection's TLS and the server certificate's days
 *            left, where the store can tell (dlock_store_probe()) 69
 *   tables   dlock's tables are there (the probe) and its own reads of
 *            them (status, history) run                        69
 *   rights   take, read and give back a lock of its own,
 *            dlock-check/HOST/PID, try-once with a short lease   69
 *   clock    the store's clock against this host's, and what a skew
 *            would touch (a warning past --max-skew, never a failure)
 *   metrics  --metrics-file's directory takes a new file (created and
 *            removed, as metrics.c makes its temporary copy)   73
 * A check whose prerequisite failed is "skip".  The exit status is 0, or
 * that of the first failure.  What the server says is shown escaped: the
 * check believes it (docs/threat-model.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

#define EXIT_CANTCREAT 73 /* sysexits.h EX_CANTCREAT */

/* The open's bound, and the lease of the check's own lock. */
#define CHECK_OPEN_MS 10000
#define CHECK_TTL_MS 5000
/* Certificates that end sooner than this are a warning. */
#define CERT_WARN_DAYS 14

static const char help[] =
    "usage: dlock [-s URL] check [--json] [--metrics-file PATH]\n"
    "                            [--max-skew DURATION]\n"
    "\n"
    "Check that the store works for dlock from this host, one line per\n"
    "check: url, connect (login, TLS), tls (the certificate's days left),\n"
    "tables, rights (take and give back a lock dlock-check/HOST/PID),\n"
    "clock (the store's against this host's) and metrics.\n"
    "  --json               one JSON object with an array of the checks\n"
    "  --metrics-file PATH  check that PATH's directory takes a new file\n"
    "                       (default $DLOCK_METRICS_FILE; none: skipped)\n"
    "  --max-skew DURATION  warn past this clock skew (default 1s)\n"
    "\n"
    "exit codes: 0 every check passed (warnings included); else the first\n"
    "failure's: 64 bad URL or usage, 69 store unreachable, login refused,\n"
    "TLS, tables or rights failing, 70 internal error, 73 metrics\n"
    "directory not writable.\n";

enum { ST_OK, ST_WARN, ST_FAIL, ST_SKIP };
static const char *const words[] = {"ok", "warn", "FAIL", "skip"};

struct line {
    const char *name;
    int status;
    char detail[1024];
    /* JSON numbers (clock, tls): set ones only. */
    int has_clock;
    int64_t skew_ms, rtt_ms, resolution_ms, server_ms;
    int has_cert;
    int64_t cert_not_after_ms, cert_days_left;
    int tls; /* -1 unknown */
};

/* What dlock_store_probe() said when it failed (later calls replace
 * dlock_errmsg()). */
static char probe_msg[1024];

struct check {
    int json;
    int exit_code; /* the first failure's */
    struct line lines[8];
    int n;
};

static struct line *add(struct check *k, const char *name, int status, int code,
                        const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static struct line *add(struct check *k, const char *name, int status, int code,
                        const char *fmt, ...)
{
    struct line *l = &k->lines[k->n++];
    va_list ap;

    memset(l, 0, sizeof(*l));
    l->name = name;
    l->status = status;
    l->tls = -1;
    va_start(ap, fmt);
    vsnprintf(l->detail, sizeof(l->detail), fmt, ap);
    va_end(ap);
    if (status == ST_FAIL && k->exit_code == 0)
        k->exit_code = code;
    return l;
}

/* The text form, as each check ends (a hang shows where it is). */
static void show(const struct check *k, const struct line *l)
{
    if (k->json)
        return;
    printf("%-4s %-8s ", words[l->status], l->name);
    cli_print_safe(stdout, l->detail);
    putchar('\n');
    fflush(stdout);
}

static void json_out(const struct check *k, const char *url)
{
    char t[40];

    printf("{\"store\": ");
    cli_json_string(stdout, url);
    printf(", \"ok\": %s, \"exit_code\": %d, \"checks\": [",
           k->exit_code == 0 ? "true" : "false", k->exit_code);
    for (int i = 0; i < k->n; i++) {
        const struct line *l = &k->lines[i];

        printf("%s{\"name\": \"%s\", \"status\": \"%s\", \"ok\": %s, "
               "\"detail\": ",
               i ? ", " : "", l->name,
               l->status == ST_FAIL   ? "fail"
               : l->status == ST_WARN ? "warn"
               : l->status == ST_SKIP ? "skip"
                                      : "ok",
               l->status == ST_SKIP   ? "null"
               : l->status == ST_FAIL ? "false"
                                      : "true");
        cli_json_string(stdout, l->detail);
        if (l->tls >= 0)
            printf(", \"tls\": %s", l->tls ? "true" : "false");
        if (l->has_cert)
            printf(", \"cert_not_after\": \"%s\", \"cert_days_left\": %lld",
                   cli_time_utc(l->cert_not_after_ms, t, sizeof(t)),
                   (long long)l->cert_days_left);
        if (l->has_clock)
            printf(", \"skew_ms\": %lld, \"rtt_ms\": %lld, "
                   "\"resolution_ms\": %lld, \"store_time\": \"%s\"",
                   (long long)l->skew_ms, (long long)l->rtt_ms,
                   (long long)l->resolution_ms,
                   cli_time_utc(l->server_ms, t, sizeof(t)));
        putchar('}');
    }
    printf("]}\n");
}

static int64_t wall_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The library's message for rc, or its name. */
static const char *why(int rc)
{
    const char *m = dlock_errmsg();

    return m[0] != '\0' ? m : dlock_strerror(rc);
}

/* Does the message say the login was refused?  Then the line says so in
 * dlock's words before the server's. */
static int says_auth(const char *m)
{
    /* PostgreSQL "password authentication failed", MariaDB "Access
     * denied ... (using password: YES)", Redis WRONGPASS/NOAUTH, etcd
     * "authentication failed, invalid user ID or password". */
    static const char *const w[] = {"authentication",   "using password",
                                    "WRONGPASS",        "NOAUTH",
                                    "invalid password", NULL};

    for (int i = 0; w[i] != NULL; i++)
        if (strcasestr(m, w[i]) != NULL)
            return 1;
    return 0;
}

static int check_connect(struct check *k, const char *url, dlock_store **store)
{
    int rc = dlock_store_open_within(store, url, CHECK_OPEN_MS);
    const char *m;

    if (rc == DLOCK_OK) {
        show(k, add(k, "connect", ST_OK, 0, "%s", dlock_store_url(*store)));
        return 0;
    }
    m = why(rc);
    show(k, add(k, "connect", ST_FAIL,
                rc == DLOCK_EINVAL   ? EXIT_USAGE
                : rc == DLOCK_ENOMEM ? EXIT_INTERNAL
                                     : EXIT_UNAVAILABLE,
                "%s%s",
                says_auth(m) && strcasestr(m, "authentication failed") == NULL
                    ? "authentication failed: "
                    : "",
                m));
    return -1;
}

static void check_tls(struct check *k, const dlock_probe *p, int prc)
{
    struct line *l;
    char t[40];

    if (prc != DLOCK_OK && prc != DLOCK_ENOTSUP) {
        show(k, add(k, "tls", ST_FAIL, EXIT_UNAVAILABLE,
                    "cannot ask the store: %s", probe_msg));
        return;
    }
    if (p->tls == 0) {
        l = add(k, "tls", ST_OK, 0,
                "not in use (a plain connection or a "
                "local file)");
    } else if (p->tls < 0) {
        l = add(k, "tls", ST_SKIP, 0,
                "not known for this store whether the connection is TLS");
    } else if (p->cert_not_after_ms == 0) {
        l = add(k, "tls", ST_OK, 0,
                "in use%s%s; certificate expiry not known for this store",
                p->tls_version[0] ? ", " : "", p->tls_version);
    } else {
        int64_t left = p->cert_not_after_ms - wall_ms();
        int64_t days = left / (24 * 3600 * 1000LL);

        cli_time_utc(p->cert_not_after_ms, t, sizeof(t));
        if (left <= 0)
            l = add(k, "tls", ST_FAIL, EXIT_UNAVAILABLE,
                    "in use%s%s; the server certificate EXPIRED at %s",
                    p->tls_version[0] ? ", " : "", p->tls_version, t);
        else
            l = add(k, "tls", days < CERT_WARN_DAYS ? ST_WARN : ST_OK, 0,
                    "in use%s%s; server certificate valid %lld more day%s "
                    "(until %s)",
                    p->tls_version[0] ? ", " : "", p->tls_version,
                    (long long)days, days == 1 ? "" : "s", t);
        l->has_cert = 1;
        l->cert_not_after_ms = p->cert_not_after_ms;
        l->cert_days_left = days;
    }
    l->tls = p->tls;
    show(k, l);
}

static int no_run(const dlock_run *run, void *payload)
{
    (void)run;
    (void)payload;
    return 0;
}

static void check_tables(struct check *k, dlock_store *store,
                         const dlock_probe *p, int prc, const char *name)
{
    dlock_info *info = NULL;
    int rc;

    if (prc == DLOCK_OK && p->tables_ok == 0) {
        show(k, add(k, "tables", ST_FAIL, EXIT_UNAVAILABLE,
                    "%s: run `dlock init` (or have a DBA run `dlock init "
                    "--print`)",
                    p->tables));
        return;
    }
    /* dlock's own reads of its tables: a column it reads that is not
     * there fails here, with the server's words. */
    rc = dlock_status(&info, store, name);
    dlock_info_free(info);
    if (rc == DLOCK_OK) {
        rc = dlock_history(store, name, 1, no_run, NULL);
        if (rc == DLOCK_ENOTSUP)
            rc = DLOCK_OK;
    }
    if (rc != DLOCK_OK) {
        show(k, add(k, "tables", ST_FAIL, EXIT_UNAVAILABLE,
                    "reading them failed: %s (%s)", why(rc),
                    strcasestr(why(rc), "denied") != NULL ||
                            strcasestr(why(rc), "NOPERM") != NULL
                        ? "this login may not read dlock's tables: grant it "
                          "the rights docs/stores/STORE.md lists"
                        : "missing ones are made by `dlock init`"));
        return;
    }
    if (prc == DLOCK_OK && p->tables[0] != '\0')
        show(k, add(k, "tables", ST_OK, 0, "%s; status and history read them",
                    p->tables));
    else
        show(k, add(k, "tables", ST_OK, 0, "status and history read them"));
}

static void check_rights(struct check *k, dlock_store *store, const char *name)
{
    dlock_options o = DLOCK_OPTIONS_INIT;
    dlock_info *info = NULL;
    dlock_lock *lk = NULL;
    int rc;

    o.wait_ms = 0;
    o.ttl_ms = CHECK_TTL_MS;
    o.auto_renew = 0;
    rc = dlock_acquire(&lk, store, name, &o);
    if (rc == DLOCK_BUSY) {
        show(k, add(k, "rights", ST_FAIL, EXIT_UNAVAILABLE,
                    "cannot take the lock %s: busy (another check of this "
                    "process's pid?): %s",
                    name, why(rc)));
        return;
    }
    if (rc != DLOCK_OK) {
        show(k, add(k, "rights", ST_FAIL, cli_exit_code(rc),
                    "cannot take the lock %s: %s", name, why(rc)));
        return;
    }
    rc = dlock_status(&info, store, name);
    if (rc != DLOCK_OK) {
        show(k, add(k, "rights", ST_FAIL, cli_exit_code(rc),
                    "took %s but cannot read its status: %s", name, why(rc)));
        dlock_info_free(info);
        (void)dlock_release(lk);
        return;
    }
    if (!info->held) {
        show(k, add(k, "rights", ST_FAIL, EXIT_UNAVAILABLE,
                    "took %s but its status says it is free", name));
        dlock_info_free(info);
        (void)dlock_release(lk);
        return;
    }
    dlock_info_free(info);
    rc = dlock_release(lk);
    if (rc != DLOCK_OK) {
        show(k, add(k, "rights", ST_FAIL,
                    rc == DLOCK_LOST ? EXIT_UNAVAILABLE : cli_exit_code(rc),
                    "took %s but cannot give it back: %s", name, why(rc)));
        return;
    }
    show(k, add(k, "rights", ST_OK, 0,
                "took, read and gave back the lock %s (written and deleted "
                "on the store)",
                name));
}

static void check_clock(struct check *k, const dlock_probe *p, int prc,
                        int64_t max_skew_ms)
{
    static const char affects[] =
        "a skew moves only the times shown (status, list and history show "
        "the store's) against this host's (logs, metrics); leases and "
        "--once-per periods are judged on the store's clock alone";
    struct line *l;
    int64_t skew, abs_skew, slack;

    if (prc == DLOCK_ENOTSUP || (prc == DLOCK_OK && p->server_ms == 0)) {
        show(k, add(k, "clock", ST_SKIP, 0,
                    "this store gives no reading of its clock"));
        return;
    }
    if (prc != DLOCK_OK) {
        show(k, add(k, "clock", ST_FAIL, EXIT_UNAVAILABLE,
                    "cannot read the store's clock: %s", probe_msg));
        return;
    }
    /* A reading from the server (any int64): only a time is compared,
     * so that no arithmetic on it can overflow. */
    if (!cli_time_ok(p->server_ms) || !cli_time_ok(p->host_ms)) {
        show(k, add(k, "clock", ST_WARN, 0,
                    "the store's clock reads %lld ms since the epoch, not a "
                    "time between 1970 and 9999: the times status and "
                    "history show are the store's",
                    (long long)p->server_ms));
        return;
    }
    skew = p->server_ms - p->host_ms;
    abs_skew = skew < 0 ? -skew : skew;
    /* What the reading cannot tell apart: half the round trip, and the
     * store's resolution (etcd's Date header: whole seconds). */
    slack = p->rtt_ms / 2 + (p->resolution_ms > 1 ? p->resolution_ms / 2 : 0);
    if (p->resolution_ms >= 1000)
        l = add(k, "clock", abs_skew > max_skew_ms + slack ? ST_WARN : ST_OK, 0,
                "store %s this host by %lld ms (+-%lld ms: the store tells "
                "whole seconds only, the HTTP Date header); %s",
                skew >= 0 ? "ahead of" : "behind", (long long)abs_skew,
                (long long)slack, affects);
    else if (abs_skew > max_skew_ms + slack)
        l = add(k, "clock", ST_WARN, 0,
                "store %s this host by %lld ms (over %lld ms; round trip "
                "%lld ms): %s",
                skew >= 0 ? "ahead of" : "behind", (long long)abs_skew,
                (long long)max_skew_ms, (long long)p->rtt_ms, affects);
    else
        l = add(k, "clock", ST_OK, 0,
                "skew %+lld ms (round trip %lld ms; warning past %lld ms): "
                "%s",
                (long long)skew, (long long)p->rtt_ms, (long long)max_skew_ms,
                affects);
    l->has_clock = 1;
    l->skew_ms = skew;
    l->rtt_ms = p->rtt_ms;
    l->resolution_ms = p->resolution_ms;
    l->server_ms = p->server_ms;
    show(k, l);
}

/* As metrics.c writes PATH: a new file of a name nobody can guess, made
 * O_EXCL in PATH's directory, then removed. */
static void check_metrics(struct check *k, const char *path)
{
    char dir[4096], tname[4096];
    const char *slash, *base;
    unsigned char r[8];
    unsigned long long v = 0;
    int dfd, fd;

    if (path == NULL) {
        show(k, add(k, "metrics", ST_SKIP, 0,
                    "no --metrics-file or DLOCK_METRICS_FILE given"));
        return;
    }
    if (path[0] == '\0' || path[strlen(path) - 1] == '/') {
        show(k, add(k, "metrics", ST_FAIL, EXIT_USAGE,
                    "metrics file '%s': not a file name", path));
        return;
    }
    slash = strrchr(path, '/');
    base = slash != NULL ? slash + 1 : path;
    if (slash == NULL)
        snprintf(dir, sizeof(dir), ".");
    else if (slash == path)
        snprintf(dir, sizeof(dir), "/");
    else
        snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        show(k, add(k, "metrics", ST_FAIL, EXIT_CANTCREAT,
                    "metrics file %s: directory %s: %s", path, dir,
                    strerror(errno)));
        return;
    }
    if (getrandom(r, sizeof(r), GRND_NONBLOCK) == (ssize_t)sizeof(r))
        for (size_t i = 0; i < sizeof(r); i++)
            v = v << 8 | r[i];
    else
        v = (unsigned long long)getpid() << 20 ^ (unsigned long long)time(NULL);
    snprintf(tname, sizeof(tname), "%s.%016llx.tmp", base, v);
    fd = openat(dfd, tname,
                O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        show(k, add(k, "metrics", ST_FAIL, EXIT_CANTCREAT,
                    "metrics file %s: cannot create a file in %s: %s", path,
                    dir, strerror(errno)));
        close(dfd);
        return;
    }
    close(fd);
    if (unlinkat(dfd, tname, 0) != 0) {
        show(k, add(k, "metrics", ST_FAIL, EXIT_CANTCREAT,
                    "metrics file %s: cannot remove %s/%s again: %s", path, dir,
                    tname, strerror(errno)));
        close(dfd);
        return;
    }
    close(dfd);
    show(k, add(k, "metrics", ST_OK, 0, "%s: its directory %s takes new files",
                path, dir));
}

enum { OPT_JSON = 256, OPT_METRICS_FILE, OPT_MAX_SKEW };

const struct cli_opt cli_check_opts[] = {
    {OPT_JSON, "json", NULL, "one JSON object"},
    {OPT_METRICS_FILE, "metrics-file", "PATH",
     "check that PATH's directory takes a new file\n"
     "(also $DLOCK_METRICS_FILE)"},
    {OPT_MAX_SKEW, "max-skew", "DURATION",
     "warn past this clock skew (default 1s)"},
    {'h', "help", NULL, NULL},
    {0, NULL, NULL, NULL},
};

struct check_args {
    int json;
    const char *metrics;
    int64_t max_skew_ms;
};

static int take(void *ctx, int key, const char *a, const char *val)
{
    struct check_args *ca = ctx;

    (void)a;
    if (key == OPT_JSON) {
        ca->json = 1;
    } else if (key == OPT_METRICS_FILE) {
        ca->metrics = val;
    } else if (key == OPT_MAX_SKEW &&
               (ca->max_skew_ms = cli_parse_duration(val)) < 0) {
        cli_err("check: --max-skew '%s': expected a duration (\"1s\", "
                "\"250ms\")",
                cli_arg_shown(val));
        return EXIT_USAGE;
    }
    return 0;
}

int cmd_check(const struct cli *c, int argc, char **argv)
{
    struct check k;
    const char *metrics = getenv("DLOCK_METRICS_FILE");
    int64_t max_skew_ms = 1000;
    dlock_probe probe;
    dlock_store *store = NULL;
    char *shown = NULL, *ddl = NULL, host[256], name[320];
    int rc, prc = DLOCK_ENOTSUP;

    memset(&k, 0, sizeof(k));
    if (metrics != NULL && metrics[0] == '\0')
        metrics = NULL;
    {
        static const struct cli_args args = {
            "check", cli_check_opts, "", NULL, 0, help};
        struct check_args ca = {0, NULL, 1000};
        const char *none;

        ca.metrics = metrics;
        rc = cli_args_parse(&args, argc, argv, take, &ca, &none);
        if (rc != 0)
            return rc < 0 ? 0 : rc;
        k.json = ca.json;
        metrics = ca.metrics;
        max_skew_ms = ca.max_skew_ms;
    }

    /* url: parsed, its scheme compiled in; nothing is connected. */
    if (dlock_url_redact(&shown, c->url) != DLOCK_OK) {
        cli_err("out of memory");
        return EXIT_INTERNAL;
    }
    rc = dlock_ddl(&ddl, c->url);
    dlock_free(ddl);
    if (rc != DLOCK_OK) {
        show(&k, add(&k, "url", ST_FAIL,
                     rc == DLOCK_ENOMEM ? EXIT_INTERNAL : EXIT_USAGE, "%s",
                     why(rc)));
    } else {
        show(&k, add(&k, "url", ST_OK, 0, "%s", shown));
        check_connect(&k, c->url, &store);
    }
    if (store != NULL) {
        memset(&probe, 0, sizeof(probe));
        probe.version = DLOCK_PROBE_VERSION;
        prc = dlock_store_probe(store, &probe);
        snprintf(probe_msg, sizeof(probe_msg), "%s", why(prc));
        if (gethostname(host, sizeof(host)) != 0)
            snprintf(host, sizeof(host), "host");
        host[sizeof(host) - 1] = '\0';
        snprintf(name, sizeof(name), "dlock-check/%s/%ld", host,
                 (long)getpid());
        check_tls(&k, &probe, prc);
        check_tables(&k, store, &probe, prc, name);
        check_rights(&k, store, name);
        check_clock(&k, &probe, prc, max_skew_ms);
        dlock_store_close(store);
    } else {
        static const char *const rest[] = {"tls", "tables", "rights", "clock",
                                           NULL};

        if (k.n == 1) /* the URL failed */
            show(&k, add(&k, "connect", ST_SKIP, 0, "the URL is not usable"));
        for (int i = 0; rest[i] != NULL; i++)
            show(&k, add(&k, rest[i], ST_SKIP, 0, "not connected"));
    }
    check_metrics(&k, metrics);
    if (k.json)
        json_out(&k, shown);
    dlock_free(shown);
    return k.exit_code;
}
