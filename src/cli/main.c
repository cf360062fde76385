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
    "Named locks kept in a database: SQLite (default), Redis, PostgreSQL,\n"
    "MySQL/MariaDB.\n"
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
    "  history NAME [--json] [-n N]  the recorded runs of NAME\n"
    "  release --force NAME [--json]  break a stuck lock (administration)\n"
    "  init [--print] [--json]  create the store's tables (or print the DDL)\n"
    "  (every command takes --json: JSON on stdout, an error as one JSON\n"
    "  object on stderr)\n"
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
    "--once-per; 64 usage; 69 store unreachable or\n"
    "failing; 70 internal error; 75 lock lost while the command ran.\n";

static void usage(FILE *f)
{
    fprintf(f, usage_fmt, dlock_default_url());
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
    static const struct {
        const char *name;
        int (*fn)(const struct cli *, int, char **);
    } cmds[] = {
        {"run", cmd_run},     {"status", cmd_status},
        {"list", cmd_list},   {"release", cmd_release},
        {"init", cmd_init},   {"history", cmd_history},
        {"elect", cmd_elect}, {"leader", cmd_leader},
    };
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
    for (i = 1; i < argc && argv[i][0] == '-'; i++) {
        const char *a = argv[i];

        if (cli_is(a, "-h", "--help")) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--version") == 0) {
            printf("dlock %s (stores: %s)\n", dlock_version(), dlock_schemes());
            return 0;
        } else if (cli_is(a, "-v", "--verbose")) {
            c.verbose = 1;
        } else if (cli_is(a, "-s", "--store") ||
                   cli_is(a, "--store-file", NULL)) {
            if (++i == argc) {
                cli_err("%s needs a %s", a, a[2] == 's' ? "URL" : "FILE");
                return EXIT_USAGE;
            }
            if (strcmp(a, "--store-file") == 0)
                file = argv[i], c.url = NULL;
            else if ((c.url = take_url_arg(argv[i], &owned)) == NULL)
                return EXIT_INTERNAL;
            else
                file = NULL;
        } else if (cli_is(a, "--log-format", NULL) ||
                   strncmp(a, "--log-format=", 13) == 0) {
            const char *v = a[12] == '=' ? a + 13 : ++i < argc ? argv[i] : NULL;

            if (v == NULL) {
                cli_err("--log-format needs a FORMAT: text or json");
                return EXIT_USAGE;
            }
            if (cli_log_format(v) != 0) {
                cli_err("--log-format must be text or json, not '%s'",
                        cli_arg_shown(v));
                return EXIT_USAGE;
            }
        } else if (strncmp(a, "--store-file=", 13) == 0) {
            file = (char *)a + 13, c.url = NULL;
        } else if (strncmp(a, "--store=", 8) == 0) {
            if ((c.url = take_url_arg((char *)a + 8, &owned)) == NULL)
                return EXIT_INTERNAL;
            file = NULL;
        } else if (strncmp(a, "-s", 2) == 0) {
            if ((c.url = take_url_arg((char *)a + 2, &owned)) == NULL)
                return EXIT_INTERNAL;
            file = NULL;
        } else {
            cli_err("unknown option '%s' (see dlock --help)", cli_arg_shown(a));
            return EXIT_USAGE;
        }
    }
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
    rc = -1;
    for (size_t k = 0; k < sizeof(cmds) / sizeof(cmds[0]); k++)
        if (strcmp(argv[i], cmds[k].name) == 0) {
            cli_log_cmd = cmds[k].name;
            rc = cmds[k].fn(&c, argc - i, argv + i);
        }
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

    /* Under --json, what failed as one object (cli_finish()). */
    cli_finish(rc);
    if (owned != NULL) {
        memset(owned, 0, strlen(owned));
        free(owned);
    }
    return rc;
}
