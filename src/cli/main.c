/*
 * main.c - `dlock`: global options and dispatch to one cmd_*.c per
 * subcommand.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

static const char usage_fmt[] =
    "usage: dlock [-s URL] [-v] [--log-format FORMAT] COMMAND [ARGS]\n"
    "\n"
    "Named locks kept in a database.  The stores this dlock has, by URL\n"
    "scheme (dlock(1) lists every store; sqlite is the default):\n"
    "%s"
    "\n"
    "commands:\n"
    "  run NAME [-w SEC | -n] [--ttl SEC] [-E CODE] [--shared]\n"
    "      [--once | --once-per PERIOD] [--] CMD...\n"
    "                      run CMD while holding the lock NAME (once, or\n"
    "                      once per PERIOD, with the flags)\n"
    "  elect NAME [--value TEXT] [--ttl SEC] [-w SEC] [--priority N]\n"
    "      [--health-cmd CMD] [--] CMD...\n"
    "                      campaign for NAME; run CMD while leading\n"
    "  leader NAME [--json] [--watch]  who leads NAME (every change)\n"
    "  status NAME [--json]  who holds NAME, its last run\n"
    "  list [PREFIX] [--json]  held locks and names that have run\n"
    "  history [NAME] [--json] [-n N]  the recorded runs of NAME (without\n"
    "                      NAME: every name's last run)\n"
    "  release --force NAME [--json]  break a stuck lock (administration)\n"
    "  init [--print] [--json]  create the store's tables (or print the DDL)\n"
    "  check [--json] [--metrics-file PATH]  is the store usable from here?\n"
    "  metrics [PREFIX] [-w SEC]  every name's runs and holders as\n"
    "                      Prometheus text\n"
    "  completion bash|zsh|fish  the shell completion script\n"
    "\n"
    "Every command but completion takes --json: JSON on stdout, an error\n"
    "as one JSON object on stderr.\n"
    "\n"
    "options:\n"
    "  -s, --store URL     the store (default: $DLOCK_STORE, else the file\n"
    "                      $DLOCK_STORE_FILE names, else\n"
    "                      %s,\n"
    "                      private to your user).  A URL with a password\n"
    "                      is better kept out of the command line (ps\n"
    "                      shows it): use DLOCK_STORE or a store file.\n"
    "      --store-file FILE  read the store URL from FILE's first line\n"
    "                      (refused if others can read it and it holds a\n"
    "                      password)\n"
    "  -v, --verbose       say more (who holds a lock while waiting)\n"
    "      --log-format FORMAT  stderr's messages as text (the default) or\n"
    "                      json: one object a line, "
    "{\"ts\",\"level\",\"pid\",\n"
    "                      \"cmd\",\"name\",\"msg\"} (also $DLOCK_LOG_FORMAT)\n"
    "  -h, --help          this help; `dlock COMMAND --help` for a command\n"
    "      --version       the version and the stores compiled in\n"
    "\n"
    "exit codes: the command's own (128+N if it died of signal N); 1 (or\n"
    "-E CODE) not acquired in time; 0 (or -E CODE) skipped by --once or\n"
    "--once-per; status: 0 held, 3 free; 64 usage; 69 store unreachable or\n"
    "failing; 70 internal error; 73 (check) a metrics directory that\n"
    "takes no file; 75 lock lost while the command ran; 124 stopped by\n"
    "--max-runtime; 126 the command cannot be executed; 127 the command\n"
    "was not found.\n";

/* dlock_schemes() (the library's scheme table: what is compiled in) as
 * indented lines of at most 72 columns. */
static void wrap_schemes(char *buf, size_t size)
{
    const char *s = dlock_schemes();
    size_t len = 0, col = 0;

    buf[0] = '\0';
    while (*s != '\0' && len + 80 < size) {
        size_t w = strcspn(s, ",");
        int last = s[w] == '\0';

        if (col > 0 && col + 1 + w + 1 > 72) {
            buf[len++] = '\n';
            col = 0;
        }
        if (col == 0) {
            memcpy(buf + len, "  ", 2);
            len += 2, col += 2;
        } else {
            buf[len++] = ' ', col++;
        }
        memcpy(buf + len, s, w);
        len += w, col += w;
        if (!last)
            buf[len++] = ',', col++;
        s += w + !last;
    }
    if (col > 0)
        buf[len++] = '\n';
    buf[len] = '\0';
}

static void usage(FILE *f)
{
    char stores[1024];

    wrap_schemes(stores, sizeof(stores));
    fprintf(f, usage_fmt, stores, dlock_default_url());
}

/* Does url carry a credential (its redacted form differs)? */
static int has_secret(const char *url)
{
    char *red = NULL;
    int differs;

    if (dlock_url_redact(&red, url) != DLOCK_OK)
        return 1;
    differs = strcmp(red, url) != 0;
    dlock_free(red);
    return differs;
}

/* The store URL from the first line of a file (DLOCK_STORE_FILE,
 * --store-file), as PGPASSFILE keeps passwords out of argv and the
 * environment.  NULL after saying why. */
static char *read_store_file(const char *path, const char *from)
{
    char buf[8192];
    struct stat st;
    ssize_t n;
    char *url;
    int fd;

    if (path[0] == '\0') {
        cli_err("%s is empty: name a file holding the store URL", from);
        return NULL;
    }
    /* O_NONBLOCK: opening a FIFO for reading would otherwise wait for a
     * writer before fstat() could refuse it (a regular file's reads do
     * not care). */
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0 || fstat(fd, &st) != 0) {
        cli_err("cannot read the store file %s (%s): %s", path, from,
                strerror(errno));
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        cli_err("the store file %s (%s) is not a regular file", path, from);
        close(fd);
        return NULL;
    }
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n < 0) {
        cli_err("cannot read the store file %s: %s", path, strerror(errno));
        return NULL;
    }
    buf[n] = '\0';
    buf[strcspn(buf, "\r\n")] = '\0';
    if (buf[0] == '\0') {
        cli_err("the store file %s (%s) has no URL on its first line", path,
                from);
        return NULL;
    }
    if ((st.st_mode & 077) != 0 && has_secret(buf)) {
        cli_err("refusing the store file %s: it holds a password and others "
                "can read it (mode %04o); chmod 600 it",
                path, (unsigned)(st.st_mode & 07777));
        memset(buf, 0, sizeof(buf));
        return NULL;
    }
    url = strdup(buf);
    memset(buf, 0, sizeof(buf));
    if (url == NULL)
        cli_err("out of memory");
    return url;
}

/* A URL given with -s stays in /proc/PID/cmdline (what ps shows) for the
 * whole hold: keep a copy and write over the password in argv, for every
 * -s given (an earlier one's password is as visible as the last one's).
 * *owned is the copy of the last; an earlier copy is wiped and freed. */
static char *take_url_arg(char *arg, char **owned)
{
    char *url = strdup(arg), *red = NULL;
    size_t len = strlen(arg);

    if (*owned != NULL) {
        memset(*owned, 0, strlen(*owned));
        free(*owned);
    }
    *owned = url;
    if (url == NULL) {
        cli_err("out of memory");
        return NULL;
    }
    if (has_secret(arg)) {
        if (dlock_url_redact(&red, arg) == DLOCK_OK && strlen(red) <= len) {
            memset(arg, ' ', len);
            memcpy(arg, red, strlen(red));
        } else {
            memset(arg, '*', len);
        }
        dlock_free(red);
    }
    return url;
}

/* The copy of the store URL take_url_arg() keeps (file scope: every
 * return of cli_main() leaves it to main() to wipe and free). */
static char *owned;

static int cli_main(int argc, char **argv)
{
    /* getopt_long over cli_global_opts; "+" stops at the command. */
    struct option lo[8];
    char so[2 * 8 + 3];
    const struct cli_cmd *cmd;
    struct cli c = {NULL, 0};
    char *file = NULL;
    const char *env;
    int i, rc;

    /* The log format first: every message after it follows it. */
    env = getenv("DLOCK_LOG_FORMAT");
    if (env != NULL && env[0] != '\0' && cli_log_format(env) != 0) {
        cli_err("DLOCK_LOG_FORMAT must be text or json, not '%s'",
                cli_arg_shown(env));
        return EXIT_USAGE;
    }
    if (cli_opts_count(cli_global_opts) >= 8) {
        cli_err("internal error: too many global options");
        return EXIT_INTERNAL;
    }
    cli_getopt_tables(cli_global_opts, lo, so);
    opterr = 0;
    for (;;) {
        /* Each call starts at a whole argv element (a short option
         * without a value stands alone: "-vs" is no -v -s). */
        int at = optind, opt;
        const char *a = at < argc ? argv[at] : NULL;

        if (a == NULL || a[0] != '-')
            break;
        if (cli_opt_of(cli_global_opts, a) == NULL) {
            cli_err("unknown option '%s' (see dlock --help)", cli_arg_shown(a));
            return EXIT_USAGE;
        }
        opt = getopt_long(argc, argv, so, lo, NULL);
        if (opt == 'h') {
            usage(stdout);
            return 0;
        } else if (opt == CLI_OPT_VERSION) {
            printf("dlock %s (stores: %s)\n", dlock_version(), dlock_schemes());
            return 0;
        } else if (opt == 'v') {
            c.verbose = 1;
        } else if (opt == ':') {
            const struct cli_opt *p = cli_opt_of(cli_global_opts, a);

            cli_err("%s needs a %s", a, p != NULL ? p->arg : "value");
            return EXIT_USAGE;
        } else if (opt == CLI_OPT_LOG_FORMAT) {
            if (cli_log_format(optarg) != 0) {
                cli_err("--log-format must be text or json, not '%s'",
                        cli_arg_shown(optarg));
                return EXIT_USAGE;
            }
        } else if (opt == CLI_OPT_STORE_FILE) {
            file = optarg, c.url = NULL;
        } else if (opt == 's') {
            if ((c.url = take_url_arg(optarg, &owned)) == NULL)
                return EXIT_INTERNAL;
            file = NULL;
        } else {
            cli_err("unknown option '%s' (see dlock --help)", cli_arg_shown(a));
            return EXIT_USAGE;
        }
    }
    i = optind;
    if (i == argc) {
        if (cli_log_json) /* stderr's lines are JSON only */
            cli_err("no COMMAND given (see dlock --help)");
        else
            usage(stderr);
        return EXIT_USAGE;
    }
    /* An empty store is a mistake (an unset variable in a script), never
     * a quiet fall-back to the local default. */
    if (file != NULL) {
        if (owned != NULL) { /* an earlier -s's copy */
            memset(owned, 0, strlen(owned));
            free(owned);
        }
        owned = read_store_file(file, "--store-file");
        if (owned == NULL)
            return EXIT_USAGE;
    } else if (c.url != NULL) {
        if (c.url[0] == '\0') {
            cli_err("-s: empty store URL (leave -s out for the default "
                    "store)");
            return EXIT_USAGE;
        }
    } else if ((env = getenv("DLOCK_STORE")) != NULL) {
        if (env[0] == '\0') {
            cli_err("DLOCK_STORE is set but empty (unset it for the default "
                    "store)");
            return EXIT_USAGE;
        }
        c.url = env;
    } else if ((env = getenv("DLOCK_STORE_FILE")) != NULL) {
        owned = read_store_file(env, "DLOCK_STORE_FILE");
        if (owned == NULL)
            return EXIT_USAGE;
    } else {
        c.url = dlock_default_url();
    }
    if (owned != NULL)
        c.url = owned;
    cmd = cli_cmd_find(argv[i]);
    if (cmd != NULL)
        cli_log_cmd = cmd->name;
    rc = cmd != NULL ? cmd->fn(&c, argc - i, argv + i) : -1;
    if (rc < 0 && strstr(argv[i], "://") != NULL) {
        /* "dlock redis://h run ...": a store where the command goes. */
        cli_err("unknown command '%s': a store URL goes after -s: "
                "dlock -s URL COMMAND ...",
                cli_arg_shown(argv[i]));
        rc = EXIT_USAGE;
    } else if (rc < 0) {
        cli_err("unknown command '%s' (see dlock --help)",
                cli_arg_shown(argv[i]));
        rc = EXIT_USAGE;
    }
    return rc;
}

int main(int argc, char **argv)
{
    int rc = cli_main(argc, argv);

    /* What dlock printed on stdout (--json's object, a list) must have
     * been written: a full disk or a closed stdout is not a success with
     * nothing in the file.  CMD's status (run, elect) and a result a
     * script tests (status's 3) stay as they are; a 0 becomes 70. */
    if (fflush(stdout) != 0 || ferror(stdout)) {
        cli_err("cannot write the output (stdout): %s", strerror(errno));
        if (rc == 0)
            rc = EXIT_INTERNAL;
    }
    /* Under --json, what failed as one object (cli_finish()). */
    cli_finish(rc);
    if (owned != NULL) {
        memset(owned, 0, strlen(owned));
        free(owned);
    }
    return rc;
}
