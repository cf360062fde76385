/*
 * cmd_status.c - `dlock status NAME [--json]`.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char help[] =
    "usage: dlock [-s URL] status NAME [--json]\n"
    "\n"
    "Show whether NAME is held, by whom (host, pid, since when), how much\n"
    "lease is left and the highest fence handed out.\n"
    "A semaphore (run --limit N) shows how many of its N slots are taken\n"
    "and the holder whose lease lasts longest.  Then the last recorded run\n"
    "of NAME, if any: how it ended, where, when (see dlock history), and\n"
    "its suspension, if suspended (see dlock suspend).\n"
    "  --json   one JSON object; \"last_run\" is the last run (null if none),\n"
    "           \"suspended\" the suspension (null if none)\n"
    "\n"
    "exit status (as `systemctl is-active`; the same with --json):\n"
    "  0 held (by dlock or another client), 3 free (held by no one),\n"
    "  64 usage, 69 store unreachable or failing, 70 internal error.\n";

enum { OPT_JSON = 256 };

/* `dlock status`'s options (its parser's, the completions'). */
const struct cli_opt cli_status_opts[] = {
    {OPT_JSON, "json", NULL, "one JSON object"},
    {'h', "help", NULL, NULL},
    {0, NULL, NULL, NULL},
};

static int take(void *ctx, int key, const char *a, const char *val)
{
    (void)a, (void)val;
    if (key == OPT_JSON)
        *(int *)ctx = 1;
    return 0;
}

/* A holder that is not dlock, as its server reports it (PostgreSQL,
 * MariaDB): ": user 'U' from ADDR, session N", each part only when known.
 * The text comes from the server: escaped, never raw. */
void cli_print_other(FILE *f, const dlock_info *in)
{
    const char *sep = ": ";

    fputs(" by another client (not dlock)", f);
    if (in->client_user[0] != '\0') {
        fprintf(f, "%suser '", sep);
        cli_print_safe(f, in->client_user);
        fputc('\'', f);
        sep = " ";
    }
    if (in->client_addr[0] != '\0') {
        fprintf(f, "%sfrom ", sep);
        cli_print_safe(f, in->client_addr);
        sep = ", ";
    } else if (in->client_user[0] != '\0') {
        sep = ", ";
    }
    if (in->client_id != 0)
        fprintf(f, "%ssession %lld", sep, (long long)in->client_id);
}

/* Held by a session that holds the name's key and nothing else of dlock's
 * (no row): any login of the server may do that, so ?mode=lease is the way
 * out (docs/security.md). */
int cli_other_key_only(const dlock_info *in)
{
    return in->other_client && in->client_id != 0 && in->since_ms == 0;
}

void cli_print_info(const dlock_info *in)
{
    char when[64];

    cli_print_safe(stdout, in->name);
    printf(": %s", in->held ? "held" : "free");
    if (in->other_client) {
        /* Seen by the server, or by a peer library's row: what they say
         * of it. */
        cli_print_other(stdout, in);
        if (in->since_ms != 0)
            printf(", since %s",
                   cli_time_utc(in->since_ms, when, sizeof(when)));
        if (in->ttl_ms >= 0)
            printf(", lease %lld ms left", (long long)in->ttl_ms);
    } else if (in->held) {
        if (in->limit > 1)
            printf(" by %u of %u (semaphore), the longest lease", in->holders,
                   in->limit);
        else if (in->shared)
            printf(" (shared, %u holder%s)", in->holders,
                   in->holders == 1 ? "" : "s");
        fputs(" by ", stdout);
        cli_print_safe(stdout, in->host[0] ? in->host : "?");
        printf(" pid %lld since %s", (long long)in->pid,
               cli_time_utc(in->since_ms, when, sizeof(when)));
        if (in->ttl_ms >= 0)
            printf(", lease %lld ms left", (long long)in->ttl_ms);
        else
            printf(", lease unknown");
    }
    printf(", fence %llu\n", (unsigned long long)in->fence);
    if (cli_other_key_only(in))
        printf("  %s\n", CLI_KEY_ONLY_HINT);
}

static int keep_first(const dlock_run *run, void *payload)
{
    *(dlock_run *)payload = *run;
    return 0;
}

/* The last run of name into *out (out->fence = 0: none, or a store
 * without run records).  0, or an exit code after saying why. */
int cli_last_run(dlock_store *store, const char *name, dlock_run *out)
{
    int rc;

    memset(out, 0, sizeof(*out));
    rc = dlock_history(store, name, 1, keep_first, out);
    if (rc == DLOCK_ENOTSUP || rc == DLOCK_EINVAL) {
        /* No records kept, or a name history cannot take: none. */
        memset(out, 0, sizeof(*out));
        return 0;
    }
    return rc == DLOCK_OK ? 0 : cli_fail(rc, "last run");
}

struct runs {
    dlock_run *v;
    size_t n, cap;
};

static int keep_run(const dlock_run *run, void *payload)
{
    struct runs *r = payload;

    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 32;
        dlock_run *v = realloc(r->v, cap * sizeof(*v));

        if (v == NULL)
            return DLOCK_ENOMEM;
        r->v = v;
        r->cap = cap;
    }
    r->v[r->n++] = *run;
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const dlock_run *)a)->name, ((const dlock_run *)b)->name);
}

int cli_last_runs(dlock_store *store, const char *prefix, dlock_run **runs,
                  size_t *n)
{
    struct runs r = {NULL, 0, 0};
    int rc = dlock_last_runs(store, prefix, keep_run, &r);

    if (rc == DLOCK_ENOTSUP) { /* a store without run records: none */
        r.n = 0;
        rc = DLOCK_OK;
    }
    if (rc == DLOCK_OK && r.n > 0)
        qsort(r.v, r.n, sizeof(*r.v), by_name);
    if (rc != DLOCK_OK) {
        free(r.v);
        r.v = NULL;
        r.n = 0;
    }
    *runs = r.v;
    *n = r.n;
    return rc;
}

void cli_print_info_run(const dlock_info *info, const dlock_run *last,
                        const dlock_suspension *susp)
{
    cli_print_info(info);
    if (last != NULL && last->fence != 0) {
        fputs("  last run: ", stdout);
        cli_print_run(stdout, last);
        putchar('\n');
    }
    if (susp != NULL) {
        fputs("  ", stdout);
        cli_print_suspension(stdout, susp);
        fputs(" (runs skip until `dlock resume`)\n", stdout);
    }
}

void cli_json_info_run(FILE *f, const dlock_info *info, const dlock_run *last,
                       const dlock_suspension *susp)
{
    cli_json_info_open(f, info);
    fputs(",\"last_run\":", f);
    if (last != NULL && last->fence != 0)
        cli_json_run(f, last);
    else
        fputs("null", f);
    fputs(",\"suspended\":", f);
    cli_json_suspension(f, susp);
    fputc('}', f);
}

int cmd_status(const struct cli *c, int argc, char **argv)
{
    const char *name = NULL;
    dlock_store *store;
    dlock_info *info = NULL;
    dlock_suspension *susp = NULL;
    dlock_run last;
    int json = 0, rc;

    static const struct cli_args args = {
        "status", cli_status_opts, "NAME", "NAME", 1, help};

    rc = cli_args_parse(&args, argc, argv, take, &json, &name);
    if (rc != 0)
        return rc < 0 ? 0 : rc;
    rc = cli_open(c, &store);
    if (rc != 0)
        return rc;
    rc = dlock_status(&info, store, name);
    if (rc != DLOCK_OK) {
        rc = cli_fail(rc, "status");
    } else if ((rc = cli_last_run(store, name, &last)) != 0 ||
               (rc = cli_suspension(store, name, &susp)) != 0) {
        /* said */
    } else {
        if (json) {
            cli_json_info_run(stdout, info, &last, susp);
            putchar('\n');
        } else {
            cli_print_info_run(info, &last, susp);
        }
        /* A script tests held or free by the status alone. */
        rc = info->held ? 0 : EXIT_FREE;
    }
    dlock_info_free(info);
    dlock_suspension_free(susp);
    dlock_store_close(store);
    return rc;
}
