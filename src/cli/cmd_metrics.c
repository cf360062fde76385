/*
 * cmd_metrics.c - `dlock metrics [PREFIX] [-w SEC]`: the Prometheus text
 * of every name under PREFIX, read from the store (fleet.c), on stdout;
 * with --listen ADDR:PORT served over HTTP instead (metrics_http.c).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fleet.h"
#include "metrics_http.h"

static const char help[] =
    "usage: dlock [-s URL] metrics [PREFIX] [-w SEC] [--listen ADDR:PORT]\n"
    "\n"
    "Print the Prometheus text exposition (format 0.0.4) of every name\n"
    "(whose name starts with PREFIX) as the store knows it: each name's\n"
    "last run on any host (start, end, exit status, how it ended), its\n"
    "last successful run, whether it is held now, by how many, and its\n"
    "fence; dlock_job_* series labelled name= (and host=), then\n"
    "dlock_metrics_scrape_ok.  When the store cannot be read it prints\n"
    "dlock_metrics_scrape_ok 0 and dlock_metrics_scrape_error, says why\n"
    "on stderr and exits 69.  See docs/metrics.md.\n"
    "  -w, --timeout SEC  give up opening the store after SEC (default 10),\n"
    "                     and reading it after SEC more (each read gets the\n"
    "                     URL's ?timeout=)\n"
    "  --listen ADDR:PORT serve the text over HTTP at /metrics, read from\n"
    "                     the store on each scrape (a 503 with the error\n"
    "                     series while it cannot be read), until SIGTERM\n"
    "                     or SIGINT: 127.0.0.1:9188, [::1]:9188, :9188\n";

/* The default bound of the open: a store that is down or frozen is an
 * exit 69 within it, never a scrape that hangs. */
#define OPEN_DEFAULT_MS 10000

/* `dlock metrics`'s options (its parser's, the completions').  An option
 * more is one entry here and one case in take(). */
enum { OPT_LISTEN = 300 };
const struct cli_opt cli_metrics_opts[] = {
    {'w', "timeout", "SEC", "give up opening the store after SEC"},
    {OPT_LISTEN, "listen", "ADDR:PORT", "serve the text over HTTP"},
    {'h', "help", NULL, NULL},
    {0, NULL, NULL, NULL},
};

struct metrics_opts {
    int64_t open_ms;
    const char *listen; /* NULL: print once */
};

static int take(void *ctx, int key, const char *a, const char *val)
{
    struct metrics_opts *o = ctx;

    if (key == OPT_LISTEN) {
        o->listen = val;
    } else if (key == 'w') {
        int64_t ms = cli_parse_seconds(val);

        if (ms <= 0) {
            cli_err("metrics: %s wants seconds above 0 (10, 2.5, 500ms), "
                    "not '%s'",
                    a, cli_arg_shown(val));
            return EXIT_USAGE;
        }
        o->open_ms = ms;
    }
    return 0;
}

/* The text on stdout as it is, but for a terminal: there a control byte
 * of a lock name (names may hold any but NUL) is '?', so that a name
 * someone chose cannot send the terminal escapes.  A pipe or a file (a
 * collector) gets the exact label values. */
static void write_text(const char *text, size_t len)
{
    if (!isatty(STDOUT_FILENO)) {
        fwrite(text, 1, len, stdout);
        return;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)text[i];

        putchar((ch < 0x20 && ch != '\n') || ch == 0x7f ? '?' : ch);
    }
}

/* The failed scrape's text on stdout (a textfile collector's file then
 * says scrape_ok 0), code unchanged. */
static int say_failure(int code)
{
    char *text;
    size_t len;

    if (cli_fleet_failure(code, &text, &len) == 0)
        fwrite(text, 1, len, stdout);
    free(text);
    return code;
}

int cmd_metrics(const struct cli *c, int argc, char **argv)
{
    static const struct cli_args args = {
        "metrics", cli_metrics_opts, "", "PREFIX", 0, help};
    struct metrics_opts o = {OPEN_DEFAULT_MS, NULL};
    const char *prefix = NULL;
    char *text = NULL, *err = NULL;
    dlock_store *store;
    size_t len = 0;
    int rc;

    rc = cli_args_parse(&args, argc, argv, take, &o, &prefix);
    if (rc != 0)
        return rc < 0 ? 0 : rc;
    /* A prefix no name can start with is said now, not on every scrape. */
    if (prefix != NULL && strlen(prefix) > DLOCK_NAME_MAX) {
        cli_err("metrics: PREFIX is longer than a name (%d bytes)",
                DLOCK_NAME_MAX);
        return EXIT_USAGE;
    }
    if (o.listen != NULL)
        return cli_metrics_serve(c, prefix, o.listen, o.open_ms);
    rc = cli_open_result(dlock_store_open_within(&store, c->url, o.open_ms));
    if (rc != 0)
        return say_failure(rc);
    rc = cli_fleet_metrics(store, prefix, o.open_ms, &text, &len, &err);
    dlock_store_close(store);
    if (rc != 0) {
        cli_log_safe(CLI_LOG_ERR, err != NULL ? err : "metrics: failed");
        free(err);
        return say_failure(rc);
    }
    write_text(text, len);
    free(text);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        cli_err("metrics: cannot write the text");
        return EXIT_INTERNAL;
    }
    return 0;
}
