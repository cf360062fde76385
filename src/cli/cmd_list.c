/*
 * cmd_list.c - `dlock list [PREFIX] [--json]`.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char help[] =
    "usage: dlock [-s URL] list [PREFIX] [--json]\n"
    "\n"
    "List the held locks (whose names start with PREFIX), one per line,\n"
    "then the names that are not held but have recorded runs or are\n"
    "suspended; each with its last run (see dlock history) and its\n"
    "suspension (see dlock suspend).\n"
    "  --json   a JSON array of objects, as `status --json` prints\n";

enum { OPT_JSON = 256 };

/* `dlock list`'s options (its parser's, the completions'). */
const struct cli_opt cli_list_opts[] = {
    {OPT_JSON, "json", NULL, "a JSON array of objects"},
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

struct walk {
    int json;
    unsigned n;
    dlock_run *runs; /* the last run of each name that has runs */
    unsigned char *shown;
    size_t nruns;
    dlock_suspension *susp; /* every suspension under the prefix, sorted */
    unsigned char *susp_shown;
    size_t nsusp;
};

static void print_one(struct walk *w, const dlock_info *info,
                      const dlock_run *last)
{
    const dlock_suspension *susp =
        cli_suspension_find(w->susp, w->nsusp, info->name);

    if (susp != NULL)
        w->susp_shown[susp - w->susp] = 1;
    if (w->json) {
        fputs(w->n == 0 ? "\n  " : ",\n  ", stdout);
        cli_json_info_run(stdout, info, last, susp);
    } else {
        cli_print_info_run(info, last, susp);
    }
    w->n++;
}

/* A name list shows by dlock_status(), with last (NULL: none); a name
 * dlock never writes (planted by hand) is skipped, said on stderr. */
static int show_name(dlock_store *store, struct walk *w, const char *name,
                     const dlock_run *last)
{
    dlock_info *info = NULL;
    int rc = dlock_status(&info, store, name);

    if (rc == DLOCK_OK)
        print_one(w, info, last);
    dlock_info_free(info);
    if (rc == DLOCK_EINVAL) {
        /* Not UTF-8, too long: not a reason to list nothing else, nor to
         * exit as if the command line were wrong.  Said escaped. */
        cli_warn("list: a record's name is not a lock name (%s); skipped",
                 dlock_errmsg());
        rc = DLOCK_OK;
    }
    return rc;
}

static int show(const dlock_info *info, void *payload)
{
    struct walk *w = payload;
    const dlock_run *last = NULL;

    for (size_t i = 0; i < w->nruns; i++) {
        if (!w->shown[i] && strcmp(w->runs[i].name, info->name) == 0) {
            w->shown[i] = 1;
            last = &w->runs[i];
            break;
        }
    }
    print_one(w, info, last);
    return 0;
}

int cmd_list(const struct cli *c, int argc, char **argv)
{
    const char *prefix = NULL;
    struct walk w;
    dlock_store *store;
    int rc;

    static const struct cli_args args = {"list", cli_list_opts, "", "PREFIX",
                                         0,      help};

    memset(&w, 0, sizeof(w));
    rc = cli_args_parse(&args, argc, argv, take, &w.json, &prefix);
    if (rc != 0)
        return rc < 0 ? 0 : rc;
    rc = cli_open(c, &store);
    if (rc != 0)
        return rc;
    /* The runs first: a store without run records lists its locks. */
    rc = cli_last_runs(store, prefix, &w.runs, &w.nruns);
    if (rc == DLOCK_OK)
        rc = cli_suspensions(store, prefix, &w.susp, &w.nsusp, NULL);
    if (rc == DLOCK_OK) {
        w.shown = calloc(w.nruns + 1, 1);
        w.susp_shown = calloc(w.nsusp + 1, 1);
        if (w.shown == NULL || w.susp_shown == NULL)
            rc = DLOCK_ENOMEM;
    }
    if (rc != DLOCK_OK) {
        rc = rc == DLOCK_ENOMEM
                 ? (cli_err("list: out of memory"), EXIT_INTERNAL)
                 : cli_fail(rc, "list");
        goto out;
    }
    if (w.json)
        putchar('[');
    rc = dlock_list(store, prefix, show, &w);
    /* Then the names that are not held now but have run, then those that
     * neither but are suspended. */
    for (size_t i = 0; rc == DLOCK_OK && i < w.nruns; i++)
        if (!w.shown[i])
            rc = show_name(store, &w, w.runs[i].name, &w.runs[i]);
    for (size_t i = 0; rc == DLOCK_OK && i < w.nsusp; i++)
        if (!w.susp_shown[i])
            rc = show_name(store, &w, w.susp[i].name, NULL);
    if (w.json)
        fputs(w.n ? "\n]\n" : "]\n", stdout);
    if (rc != DLOCK_OK)
        rc = cli_fail(rc, "list");
out:
    free(w.runs);
    free(w.shown);
    free(w.susp);
    free(w.susp_shown);
    dlock_store_close(store);
    return rc;
}
