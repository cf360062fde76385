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
    "then the names that are not held but have recorded runs; each with\n"
    "its last run (see dlock history).\n"
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
};

static void print_one(struct walk *w, const dlock_info *info,
                      const dlock_run *last)
{
    if (w->json) {
        fputs(w->n == 0 ? "\n  " : ",\n  ", stdout);
        cli_json_info_run(stdout, info, last);
    } else {
        cli_print_info_run(info, last);
    }
    w->n++;
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
    if (rc == DLOCK_OK && w.nruns > 0) {
        w.shown = calloc(w.nruns, 1);
        if (w.shown == NULL)
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
    /* Then the names that are not held now but have run. */
    for (size_t i = 0; rc == DLOCK_OK && i < w.nruns; i++) {
        dlock_info *info = NULL;

        if (w.shown[i])
            continue;
        rc = dlock_status(&info, store, w.runs[i].name);
        if (rc == DLOCK_OK)
            print_one(&w, info, &w.runs[i]);
        dlock_info_free(info);
        if (rc == DLOCK_EINVAL) {
            /* A record under a name dlock never writes (not UTF-8, too
             * long: planted in the store by hand): not a reason to list
             * nothing else, nor to exit as if the command line were
             * wrong.  Said on stderr, escaped. */
            cli_warn("list: a run record's name is not a lock name (%s); "
                     "skipped",
                     dlock_errmsg());
            rc = DLOCK_OK;
        }
    }
    if (w.json)
        fputs(w.n ? "\n]\n" : "]\n", stdout);
    if (rc != DLOCK_OK)
        rc = cli_fail(rc, "list");
out:
    free(w.runs);
    free(w.shown);
    dlock_store_close(store);
    return rc;
}
