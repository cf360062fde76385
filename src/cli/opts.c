/*
 * opts.c - option tables into getopt_long's, and the parser of the
 * commands that take options and at most one operand (status, list,
 * history, leader, release, init, completion); the global options.
 */
#include <string.h>

#include "cli.h"

/* The longest table (getopt_long's arrays are on the stack). */
#define OPTS_MAX 64

/* dlock's own options, before the command: main.c parses them, with
 * cli_getopt_tables(), and cli_misplaced_global() knows them.  These with
 * getopt_long (cli_getopt_tables()). */
const struct cli_opt cli_global_opts[] = {
    {'s', "store", "URL", "the store, a URL (default: $DLOCK_STORE)"},
    {CLI_OPT_STORE_FILE, "store-file", "FILE",
     "read the store URL from FILE's first line"},
    {'v', "verbose", NULL, "say more (who holds a lock while waiting)"},
    {CLI_OPT_LOG_FORMAT, "log-format", "FORMAT",
     "text (default) or json: one JSON object a line\n"
     "on stderr (also $DLOCK_LOG_FORMAT)"},
    {'h', "help", NULL, "the help; dlock COMMAND --help for a command"},
    {CLI_OPT_VERSION, "version", NULL,
     "the version and the stores compiled in"},
    {0, NULL, NULL, NULL},
};

size_t cli_opts_count(const struct cli_opt *table)
{
    size_t n = 0;

    while (table[n].key != 0)
        n++;
    return n;
}

void cli_getopt_tables(const struct cli_opt *table, struct option *lo, char *so)
{
    size_t n = 0;

    *so++ = '+';
    *so++ = ':';
    for (const struct cli_opt *p = table; p->key != 0; p++) {
        if (p->name != NULL)
            lo[n++] = (struct option){
                p->name, p->arg != NULL ? required_argument : no_argument, NULL,
                p->key};
        if (p->key < 256) {
            *so++ = (char)p->key;
            if (p->arg != NULL)
                *so++ = ':';
        }
    }
    lo[n] = (struct option){NULL, 0, NULL, 0};
    *so = '\0';
}

const struct cli_opt *cli_opt_of(const struct cli_opt *table, const char *a)
{
    if (a[0] != '-')
        return NULL;
    for (const struct cli_opt *p = table; p->key != 0; p++) {
        size_t n = p->name != NULL ? strlen(p->name) : 0;

        if (a[1] == '-'
                ? p->name != NULL && strncmp(a + 2, p->name, n) == 0 &&
                      (a[2 + n] == '\0' || (a[2 + n] == '=' && p->arg != NULL))
                : p->key < 256 && p->key == (unsigned char)a[1] &&
                      (a[2] == '\0' || p->arg != NULL))
            return p;
    }
    return NULL;
}

int cli_misplaced_global(const char *cmd, const char *rest, const char *arg)
{
    /* As main.c takes them (cli_global_opts): "-s URL", "-sURL", "--store
     * URL", "--store=URL", "--store-file FILE", "--store-file=FILE",
     * "-v", "--verbose", "--version"; -h is the command's own. */
    for (const struct cli_opt *p = cli_global_opts; p->key != 0; p++) {
        char form[2][64];
        int forms = 0;

        if (p->key == 'h')
            continue;
        if (p->name != NULL)
            snprintf(form[forms++], sizeof(form[0]), "--%s", p->name);
        if (p->key < 256)
            snprintf(form[forms++], sizeof(form[0]), "-%c", p->key);
        for (int f = 0; f < forms; f++) {
            size_t n = strlen(form[f]);

            if (strncmp(arg, form[f], n) != 0)
                continue;
            if (arg[n] != '\0' && !(p->arg != NULL && arg[n] == '=') &&
                !(p->arg != NULL && n == 2)) /* -sURL */
                continue;
            if (p->key == CLI_OPT_VERSION)
                cli_err("%s: --version is a global option: dlock --version",
                        cmd);
            else
                cli_err("%s: %s is a global option; put it before '%s': "
                        "dlock %s%s%s %s%s%s",
                        cmd, form[f], cmd, form[f], p->arg ? " " : "",
                        p->arg ? p->arg : "", cmd, rest[0] ? " " : "", rest);
            return 1;
        }
    }
    return 0;
}

/* a is no option of d's: a global one given after the command, else
 * unknown (or, for a command without an operand, unexpected). */
static int unknown(const struct cli_args *d, const char *a)
{
    if (cli_misplaced_global(d->cmd, d->rest, a))
        return EXIT_USAGE;
    if (d->operand == NULL)
        cli_err("%s: unexpected argument '%s'", d->cmd, cli_arg_shown(a));
    else
        cli_err("%s: unknown option '%s'", d->cmd, cli_arg_shown(a));
    return EXIT_USAGE;
}

int cli_args_parse(const struct cli_args *d, int argc, char **argv,
                   int (*take)(void *ctx, int key, const char *a,
                               const char *val),
                   void *ctx, const char **operand)
{
    struct option lo[OPTS_MAX + 1];
    char so[2 * OPTS_MAX + 3];
    static char *none[] = {"dlock", NULL};
    int at = 1;

    *operand = NULL;
    if (cli_opts_count(d->opts) > OPTS_MAX) {
        cli_err("%s: internal error: too many options", d->cmd);
        return EXIT_INTERNAL;
    }
    cli_getopt_tables(d->opts, lo, so);
    /* A fresh scan (getopt keeps state between calls): on an argv with
     * nothing to scan, so that every call below starts where it is put
     * (optind) and ends at a whole argv element.  getopt_long never sees
     * "--" or an operand (this loop takes them), so its state stays
     * that of the start. */
    optind = 0;
    opterr = 0;
    getopt_long(1, none, so, lo, NULL);
    while (at < argc) {
        const char *a = argv[at];
        int c, rc;

        if (strcmp(a, "--") == 0) {
            /* "--": the next word is the operand, whatever it starts
             * with. */
            if (d->operand == NULL || *operand != NULL || at + 1 >= argc)
                return unknown(d, a);
            *operand = argv[at + 1];
            at += 2;
            continue;
        }
        if (a[0] != '-' || a[1] == '\0') {
            if (d->operand == NULL)
                return unknown(d, a);
            if (*operand != NULL) {
                cli_err("%s: one %s only", d->cmd, d->operand);
                return EXIT_USAGE;
            }
            *operand = a;
            at++;
            continue;
        }
        if (cli_opt_of(d->opts, a) == NULL)
            return unknown(d, a);
        optind = at;
        c = getopt_long(argc, argv, so, lo, NULL);
        at = optind;
        if (c == 'h') {
            fputs(d->help, stdout);
            return -1;
        }
        if (c == ':') {
            const struct cli_opt *p = cli_opt_of(d->opts, a);

            cli_err("%s: %.*s needs a value (%s)", d->cmd, (int)strcspn(a, "="),
                    a, p != NULL ? p->arg : "?");
            return EXIT_USAGE;
        }
        if (c == '?' || c == -1)
            return unknown(d, a);
        {
            /* --json: its errors from here on are JSON (a usage error
             * before it is not: put it first). */
            const struct cli_opt *p = cli_opt_of(d->opts, a);

            if (p != NULL && p->name != NULL && strcmp(p->name, "json") == 0)
                cli_json = 1;
        }
        rc = take(ctx, c, a, optarg);
        if (rc != 0)
            return rc;
    }
    if (d->required && *operand == NULL)
        return cli_missing_name(d->cmd, d->help);
    /* A NAME, given (history's is optional) or required. */
    if (*operand != NULL && d->operand != NULL &&
        strcmp(d->operand, "NAME") == 0) {
        if (cli_name_secret(d->cmd, d->rest, *operand))
            return EXIT_USAGE;
        cli_log_name = *operand; /* in --log-format json lines */
    } else if (d->required && cli_name_secret(d->cmd, d->rest, *operand)) {
        return EXIT_USAGE;
    }
    return 0;
}
