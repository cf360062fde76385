/*
 * cmd_suspend.c - `dlock suspend NAME [--reason TEXT]` and `dlock resume
 * NAME`: pause a job on every host (dlock_suspend(), kept in the store),
 * and the words status, list, history and run say of a suspension.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char suspend_help[] =
    "usage: dlock [-s URL] suspend NAME [--reason TEXT] [--json]\n"
    "\n"
    "Suspend the job NAME on every host: from now on each `dlock run NAME`\n"
    "skips (exit 0, or -E CODE) and says \"suspended by USER@HOST at T:\n"
    "REASON\", until `dlock resume NAME`.  A run going on now goes on.\n"
    "The suspension is kept in the store; writing it, and lifting it,\n"
    "takes a login that may write the store.  A name suspended already\n"
    "keeps its first suspension (who, when, why), and is said so.\n"
    "  --reason TEXT  why (at most 1024 bytes, one line), shown to every\n"
    "                 run that skips\n"
    "  --json         one JSON object: {\"name\", \"suspended\" (the\n"
    "                 suspension now), \"already\" (true: it was)}\n";

static const char resume_help[] =
    "usage: dlock [-s URL] resume NAME [--json]\n"
    "\n"
    "Lift NAME's suspension (dlock suspend): the next `dlock run NAME`\n"
    "goes ahead again.  A name that is not suspended is said so (exit 0).\n"
    "Takes a login that may write the store.\n"
    "  --json   one JSON object: {\"name\", \"lifted\" (the suspension\n"
    "           lifted, or null)}\n";

enum { OPT_JSON = 256, OPT_REASON };

/* `dlock suspend`'s and `dlock resume`'s options (their parsers', the
 * completions'). */
const struct cli_opt cli_suspend_opts[] = {
    {OPT_REASON, "reason", "TEXT", "why (shown to every run that skips)"},
    {OPT_JSON, "json", NULL, "one JSON object"},
    {'h', "help", NULL, NULL},
    {0, NULL, NULL, NULL},
};

const struct cli_opt cli_resume_opts[] = {
    {OPT_JSON, "json", NULL, "one JSON object"},
    {'h', "help", NULL, NULL},
    {0, NULL, NULL, NULL},
};

void cli_print_suspension(FILE *f, const dlock_suspension *s)
{
    char when[64];

    fputs("suspended by ", f);
    cli_print_safe(f, s->by);
    fprintf(f, " at %s", cli_time_utc(s->since_ms, when, sizeof(when)));
    if (s->reason[0] != '\0') {
        fputs(": ", f);
        cli_print_safe(f, s->reason);
    }
}

void cli_json_suspension(FILE *f, const dlock_suspension *s)
{
    char when[64];

    if (s == NULL) {
        fputs("null", f);
        return;
    }
    fputs("{\"by\":", f);
    cli_json_string(f, s->by);
    fprintf(f, ",\"since_ms\":%lld,\"since\":", (long long)s->since_ms);
    if (cli_time_ok(s->since_ms))
        cli_json_string(f, cli_time_utc(s->since_ms, when, sizeof(when)));
    else
        fputs("null", f);
    fputs(",\"reason\":", f);
    cli_json_string(f, s->reason);
    fputc('}', f);
}

int cli_suspension(dlock_store *store, const char *name, dlock_suspension **out)
{
    int rc = dlock_suspended(out, store, name);

    if (rc == DLOCK_ENOTSUP) { /* a store that cannot suspend: none */
        *out = NULL;
        return 0;
    }
    return rc == DLOCK_OK ? 0 : cli_fail(rc, "suspension");
}

struct gather {
    dlock_suspension *v;
    size_t n, cap;
};

static int keep(const dlock_suspension *s, void *payload)
{
    struct gather *g = payload;

    if (g->n == g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 16;
        dlock_suspension *v = realloc(g->v, cap * sizeof(*v));

        if (v == NULL)
            return DLOCK_ENOMEM;
        g->v = v;
        g->cap = cap;
    }
    g->v[g->n++] = *s;
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const dlock_suspension *)a)->name,
                  ((const dlock_suspension *)b)->name);
}

int cli_suspensions(dlock_store *store, const char *prefix,
                    dlock_suspension **out, size_t *n, int *kept)
{
    struct gather g = {NULL, 0, 0};
    int rc = dlock_suspensions(store, prefix, keep, &g);

    if (kept != NULL)
        *kept = rc != DLOCK_ENOTSUP;
    if (rc == DLOCK_ENOTSUP) {
        g.n = 0;
        rc = DLOCK_OK;
    }
    if (rc == DLOCK_OK && g.n > 0)
        qsort(g.v, g.n, sizeof(*g.v), by_name);
    if (rc != DLOCK_OK) {
        free(g.v);
        g.v = NULL;
        g.n = 0;
    }
    *out = g.v;
    *n = g.n;
    return rc;
}

const dlock_suspension *cli_suspension_find(const dlock_suspension *v, size_t n,
                                            const char *name)
{
    dlock_suspension key;

    if (n == 0 || strlen(name) >= sizeof(key.name))
        return NULL;
    snprintf(key.name, sizeof(key.name), "%s", name);
    return bsearch(&key, v, n, sizeof(*v), by_name);
}

struct opts {
    int json;
    const char *reason;
};

static int take(void *ctx, int key, const char *a, const char *val)
{
    struct opts *o = ctx;

    (void)a;
    if (key == OPT_JSON)
        o->json = 1;
    else if (key == OPT_REASON)
        o->reason = val;
    return 0;
}

/* "NAME is held by HOST pid N since T" when a run goes on now (said by
 * suspend: that run goes on), from dlock_status(); nothing if free or the
 * store cannot tell. */
static void say_running(dlock_store *store, const char *name)
{
    dlock_info *info = NULL;
    char when[64];

    if (dlock_status(&info, store, name) == DLOCK_OK && info->held) {
        fputs("  ", stdout);
        cli_print_safe(stdout, name);
        fputs(" is held now", stdout);
        if (!info->other_client && info->host[0] != '\0') {
            fputs(" by ", stdout);
            cli_print_safe(stdout, info->host);
            printf(" pid %lld since %s", (long long)info->pid,
                   cli_time_utc(info->since_ms, when, sizeof(when)));
        }
        printf(": that run goes on; the next runs skip\n");
    }
    dlock_info_free(info);
}

int cmd_suspend(const struct cli *c, int argc, char **argv)
{
    static const struct cli_args args = {
        "suspend", cli_suspend_opts, "NAME", "NAME", 1, suspend_help};
    struct opts o = {0, NULL};
    dlock_suspension *now = NULL;
    const char *name = NULL;
    dlock_store *store;
    int rc, was = 0;

    rc = cli_args_parse(&args, argc, argv, take, &o, &name);
    if (rc != 0)
        return rc < 0 ? 0 : rc;
    rc = cli_open(c, &store);
    if (rc != 0)
        return rc;
    /* A bad --reason is the library's DLOCK_EINVAL: 64 with its words. */
    rc = dlock_suspend(&was, store, name, NULL, o.reason);
    if (rc != DLOCK_OK) {
        rc = cli_fail(rc, "suspend");
        goto out;
    }
    /* What is kept now: ours, or the first suspension's. */
    rc = cli_suspension(store, name, &now);
    if (rc != 0)
        goto out;
    if (o.json) {
        fputs("{\"name\":", stdout);
        cli_json_string(stdout, name);
        fputs(",\"suspended\":", stdout);
        cli_json_suspension(stdout, now);
        printf(",\"already\":%s}\n", was ? "true" : "false");
    } else {
        cli_print_safe(stdout, name);
        fputs(was ? ": already " : ": ", stdout);
        if (now != NULL)
            cli_print_suspension(stdout, now);
        else /* resumed by someone else meanwhile */
            fputs("suspended, and resumed since", stdout);
        putchar('\n');
        if (!was)
            say_running(store, name);
    }
out:
    dlock_suspension_free(now);
    dlock_store_close(store);
    return rc;
}

int cmd_resume(const struct cli *c, int argc, char **argv)
{
    static const struct cli_args args = {
        "resume", cli_resume_opts, "NAME", "NAME", 1, resume_help};
    struct opts o = {0, NULL};
    dlock_suspension *was = NULL;
    const char *name = NULL;
    dlock_store *store;
    int rc;

    rc = cli_args_parse(&args, argc, argv, take, &o, &name);
    if (rc != 0)
        return rc < 0 ? 0 : rc;
    rc = cli_open(c, &store);
    if (rc != 0)
        return rc;
    rc = dlock_resume(&was, store, name);
    if (rc != DLOCK_OK) {
        rc = cli_fail(rc, "resume");
    } else if (o.json) {
        fputs("{\"name\":", stdout);
        cli_json_string(stdout, name);
        fputs(",\"lifted\":", stdout);
        cli_json_suspension(stdout, was);
        fputs("}\n", stdout);
    } else {
        cli_print_safe(stdout, name);
        if (was == NULL) {
            fputs(": is not suspended (nothing to resume)\n", stdout);
        } else {
            fputs(": resumed (was ", stdout);
            cli_print_suspension(stdout, was);
            fputs(")\n", stdout);
        }
    }
    dlock_suspension_free(was);
    dlock_store_close(store);
    return rc;
}
