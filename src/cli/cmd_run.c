/*
 * cmd_run.c - `dlock run NAME [options] [--] CMD [ARG...]`.
 *
 * Acquire, start CMD, keep the lock renewed while CMD runs, release when it
 * exits, and pass its exit status on.  Everything asynchronous (signals to
 * forward, the child's exit, the lock being lost on the renew thread) is
 * turned into bytes on one self-pipe, so the main loop is a plain poll()
 * with no work done in signal handlers.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

extern char **environ;

#define DEFAULT_GRACE_MS 10000
#define MAX_TRACKED_FD 4096

static const char help[] =
    "usage: dlock [-s URL] run NAME [options] [--] CMD [ARG...]\n"
    "\n"
    "Run CMD while holding the lock NAME.  The lease is renewed while CMD\n"
    "runs and the lock is released when it exits.  CMD gets DLOCK_NAME,\n"
    "DLOCK_FENCE and DLOCK_STORE (password hidden) in its environment.\n"
    "Signals sent to dlock (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, ...)\n"
    "are passed on to CMD.  If dlock itself dies (even by SIGKILL), CMD is\n"
    "killed with it, so it never runs on without the lock.\n"
    "CMD is gone before the lease ends: if no renewal has confirmed the\n"
    "lease when only the grace period and a kill margin (ttl/20, 20 ms..1 s)\n"
    "are left of it, CMD gets SIGTERM, and SIGKILL at the kill margin before\n"
    "the lease end.  If the lock is lost sooner (broken, taken over), CMD gets\n"
    "SIGTERM at once, SIGKILL after the grace period.  Either way dlock\n"
    "exits 75.\n"
    "\n"
    "options:\n"
    "  -w, --wait SEC        wait up to SEC seconds for the lock (default:\n"
    "                        forever; fractions allowed, \"250ms\" too)\n"
    "  -n, --nonblock        do not wait (same as -w 0)\n"
    "      --ttl SEC         lease (default 30): the longest a dead or hung\n"
    "                        dlock can keep others out\n"
    "  -E, --conflict-exit-code CODE\n"
    "                        exit CODE (default 1) if not acquired in time\n"
    "  -S, --shared          a shared (read) lock\n"
    "  -l, --limit N         a semaphore: CMD runs as one of at most N\n"
    "                        holders of NAME (up to 1024; default 1, a\n"
    "                        lock); every holder must give the same N\n"
    "      --grace SEC       between SIGTERM and SIGKILL when the lock is\n"
    "                        lost (default 10, at most a third of --ttl)\n"
    "      --once            run CMD until it has succeeded once (exit 0),\n"
    "                        on any host: after that, skip\n"
    "      --once-per PERIOD run CMD once per PERIOD (5m, 1h, 1d, or\n"
    "                        seconds): skip if the last run of NAME started\n"
    "                        less than PERIOD/2 ago on the store's clock.\n"
    "                        Give the schedule's interval (1h for an hourly\n"
    "                        cron job)\n"
    "      --metrics-file PATH  write the run's metrics to PATH (also\n"
    "                        $DLOCK_METRICS_FILE)\n"
    "With --once-per and no -w, a busy lock is a skip too (the run is\n"
    "someone else's); with -w, dlock waits, then decides.  --once waits as\n"
    "a plain run (default: forever), then decides; a lock still busy at\n"
    "the end of -w is not a skip but \"not acquired\" (1 or CODE).  A skip\n"
    "exits 0 (or CODE with -E) after one line on stderr saying which run\n"
    "satisfied it.  Every run of a lock (not --shared or --limit) is\n"
    "recorded: see dlock history NAME.\n"
    "\n"
    "exit: CMD's status (128+N if killed by signal N), 1 or CODE if not\n"
    "acquired, 0 or CODE if skipped, 64 usage, 69 store failing (or no run\n"
    "records for --once/--once-per), 75 lock lost, 126/127 CMD not\n"
    "executable/not found.  A CMD file without \"#!\" runs with /bin/sh, as\n"
    "with execvp(3) and flock(1); a binary it cannot run exits 126.\n";

static int sigpipe_w = -1;
static pid_t self_pid;

/* Byte codes on the self-pipe.  Signals: the number, with 0x80 set when
 * another process sent it (kill(2)); without, the kernel did (a terminal's
 * ^C, which the child, in the same process group, already got) or we did
 * (SIGPIPE or SIGXFSZ from our own write). */
#define EV_CHILD 'C'
#define EV_LOST 'L'

static void on_signal(int sig, siginfo_t *si, void *ctx)
{
    int saved = errno;
    unsigned char b;

    (void)ctx;
    if (sig == SIGCHLD)
        b = EV_CHILD;
    else
        b = (unsigned char)(sig | (si != NULL && si->si_code <= 0 &&
                                           si->si_pid != self_pid
                                       ? 0x80
                                       : 0));
    (void)!write(sigpipe_w, &b, 1);
    errno = saved;
}

/* Every signal whose default action would end dlock and leave CMD running
 * unsupervised: caught, so dlock stays to release the lock, and passed on
 * to CMD when another process sent it.  The faults (SIGSEGV, SIGABRT...)
 * and SIGKILL are left alone: CMD dies with dlock then, by
 * PR_SET_PDEATHSIG. */
static const int caught[] = {SIGHUP,  SIGINT,    SIGQUIT, SIGUSR1,
                             SIGUSR2, SIGPIPE,   SIGALRM, SIGTERM,
                             SIGIO,   SIGVTALRM, SIGPROF, SIGXCPU,
                             SIGXFSZ, SIGPWR,    SIGSTKFLT};

static void for_each_caught(void (*fn)(int sig, void *arg), void *arg)
{
    for (size_t i = 0; i < sizeof(caught) / sizeof(caught[0]); i++)
        fn(caught[i], arg);
    for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++)
        fn(sig, arg);
}

static void catch_one(int sig, void *arg)
{
    (void)sigaction(sig, arg, NULL);
}

static void on_lost(dlock_lock *lock, void *payload)
{
    unsigned char b = EV_LOST;

    (void)lock;
    (void)payload;
    (void)!write(sigpipe_w, &b, 1);
}

int cli_run_parse(struct run_opts *o, int argc, char **argv)
{
    o->wait_ms = DLOCK_WAIT_FOREVER;
    o->ttl_ms = DLOCK_DEFAULT_TTL_MS;
    o->grace_ms = DEFAULT_GRACE_MS;
    o->conflict_code = EXIT_BUSY;
    o->limit = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = NULL;
        int64_t *ms = NULL;
        int is_limit = 0, opt_len;

        if (strcmp(a, "--") == 0) {
            if (o->name == NULL && i + 1 < argc)
                o->name = argv[++i];
            if (i + 1 < argc)
                o->cmd = argv + i + 1;
            break;
        }
        if (a[0] != '-' || a[1] == '\0') {
            if (o->name == NULL) {
                o->name = a;
                continue;
            }
            o->cmd = argv + i; /* flock style: the rest is the command */
            break;
        }
        if (cli_is(a, "-h", "--help"))
            return -1;
        if (cli_is(a, "-n", "--nonblock")) {
            o->wait_ms = 0;
            o->wait_given = 1;
            continue;
        }
        if (cli_is(a, "--once", NULL)) {
            o->once = 1;
            continue;
        }
        if (cli_is(a, "--once-per", "--metrics-file") ||
            !strncmp(a, "--once-per=", 11) ||
            !strncmp(a, "--metrics-file=", 15)) {
            int per = a[2] == 'o';
            const char *v = strchr(a, '=') ? strchr(a, '=') + 1
                            : i + 1 < argc ? argv[++i]
                                           : NULL;

            if (v == NULL) {
                cli_err("run: %s needs a value", a);
                return EXIT_USAGE;
            }
            if (!per) {
                if (*v == '\0') {
                    cli_err("run: --metrics-file needs a path");
                    return EXIT_USAGE;
                }
                o->metrics_file = v;
                continue;
            }
            o->period_ms = cli_parse_duration(v);
            if (o->period_ms == -2) {
                cli_err("run: --once-per '%s' is longer than 365 days",
                        cli_arg_shown(v));
                return EXIT_USAGE;
            }
            if (o->period_ms <= 0) {
                cli_err("run: bad --once-per '%s': a period such as 5m, "
                        "1h, 1d or 90 (seconds), the schedule's interval",
                        cli_arg_shown(v));
                return EXIT_USAGE;
            }
            continue;
        }
        if (cli_is(a, "-S", "--shared")) {
            o->shared = 1;
            continue;
        }
        /* Options with a value: "-w 5", "-w5", "--wait 5", "--wait=5". */
        if (cli_is(a, "-w", "--wait") || !strncmp(a, "--wait=", 7) ||
            (!strncmp(a, "-w", 2) && a[2]))
            ms = &o->wait_ms;
        else if (cli_is(a, "--ttl", NULL) || !strncmp(a, "--ttl=", 6))
            ms = &o->ttl_ms;
        else if (cli_is(a, "--grace", NULL) || !strncmp(a, "--grace=", 8))
            ms = &o->grace_ms;
        else if (cli_is(a, "-l", "--limit") || !strncmp(a, "--limit=", 8) ||
                 (!strncmp(a, "-l", 2) && a[2]))
            is_limit = 1;
        else if (!(cli_is(a, "-E", "--conflict-exit-code") ||
                   !strncmp(a, "--conflict-exit-code=", 21) ||
                   (!strncmp(a, "-E", 2) && a[2]))) {
            if (cli_misplaced_global("run", "NAME -- CMD", a))
                return EXIT_USAGE;
            cli_err("run: unknown option '%s' (see dlock run --help)",
                    cli_arg_shown(a));
            return EXIT_USAGE;
        }
        if (a[1] != '-' && a[2] != '\0')
            val = a + 2;
        else if (strchr(a, '=') != NULL && a[1] == '-')
            val = strchr(a, '=') + 1;
        else if (i + 1 < argc)
            val = argv[++i];
        /* The option's name alone ("-w5", "--ttl=x": the value is not
         * part of it). */
        opt_len = a[1] != '-' ? 2 : (int)strcspn(a, "=");
        if (val == NULL) {
            cli_err("run: %s needs a value", a);
            return EXIT_USAGE;
        }
        if (ms == &o->wait_ms)
            o->wait_given = 1;
        if (ms != NULL) {
            *ms = cli_parse_seconds(val);
            if (*ms == -2) {
                cli_err("run: too many seconds for %s: '%s' (the maximum "
                        "is 365 days, %lld)",
                        a, val, CLI_SECONDS_MAX);
                return EXIT_USAGE;
            }
            if (*ms < 0) {
                cli_err("run: bad number of seconds for %.*s: '%s' "
                        "(decimal seconds, or a number with ms)",
                        opt_len, a, cli_arg_shown(val));
                return EXIT_USAGE;
            }
            if (ms == &o->ttl_ms && *ms < DLOCK_TTL_MIN_MS) {
                cli_err("run: --ttl %s is shorter than %d ms: renewal "
                        "could not keep such a lease", val, DLOCK_TTL_MIN_MS);
                return EXIT_USAGE;
            }
        } else if (is_limit) {
            char *end;
            long v = strtol(val, &end, 10);

            /* Digits only: strtol would also take " 3", "+3" and "-0". */
            if (strspn(val, "0123456789") != strlen(val) || *val == '\0' ||
                *end != '\0' || v < 1 || v > DLOCK_LIMIT_MAX) {
                cli_err("run: the limit must be 1..%d, not '%s'",
                        DLOCK_LIMIT_MAX, cli_arg_shown(val));
                return EXIT_USAGE;
            }
            o->limit = (unsigned)v;
        } else {
            char *end;
            long v = strtol(val, &end, 10);

            if (*val == '\0' || *end != '\0' || v < 0 || v > 255) {
                cli_err("run: the conflict exit code must be 0..255, not "
                        "'%s'", cli_arg_shown(val));
                return EXIT_USAGE;
            }
            o->conflict_code = (int)v;
            o->conflict_given = 1;
        }
    }
    if (o->metrics_file == NULL) {
        const char *env = getenv("DLOCK_METRICS_FILE");

        if (env != NULL && env[0] != '\0')
            o->metrics_file = env;
    }
    /* The decision is serialised by the lock: one holder at a time. */
    if ((o->once || o->period_ms > 0) && (o->shared || o->limit > 1)) {
        cli_err("run: --once and --once-per need an exclusive lock, not "
                "%s", o->shared ? "--shared" : "--limit");
        return EXIT_USAGE;
    }
    /* With --once-per and no -w, a busy lock is this period's run on
     * another host: a try.  --once alone waits as a plain run does: a
     * busy lock is a run that has not succeeded yet (it may fail), so
     * only its end can tell whether to skip. */
    if (o->period_ms > 0 && !o->wait_given)
        o->wait_ms = 0;
    if (o->name == NULL || o->cmd == NULL) {
        cli_err("run: %s", o->name == NULL ? "missing NAME" : "missing CMD");
        fputs(help, stderr);
        return EXIT_USAGE;
    }
    if (cli_name_secret("run", "NAME -- CMD", o->name))
        return EXIT_USAGE;
    return 0;
}

/* fds open before the store was: the user's, passed on to CMD.  Anything
 * opened since (store connections) gets close-on-exec. */
static unsigned char user_fds[MAX_TRACKED_FD];

static void scan_fds(int mark_cloexec)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;

    if (d == NULL)
        return;
    while ((e = readdir(d)) != NULL) {
        int fd = atoi(e->d_name);

        if (fd < 3 || fd >= MAX_TRACKED_FD || fd == dirfd(d))
            continue;
        if (!mark_cloexec) {
            user_fds[fd] = 1;
        } else if (!user_fds[fd]) {
            int fl = fcntl(fd, F_GETFD);

            if (fl >= 0)
                (void)fcntl(fd, F_SETFD, fl | FD_CLOEXEC);
        }
    }
    closedir(d);
}

/* environ without DLOCK_NAME/FENCE/STORE, plus ours. */
static char **child_env(const char *name, uint64_t fence, const char *url)
{
    static const char *const ours[] = {"DLOCK_NAME=", "DLOCK_FENCE=",
                                       "DLOCK_STORE="};
    size_t n = 0, k = 0;
    char **env;
    char *vals[3];

    while (environ[n] != NULL)
        n++;
    env = calloc(n + 4, sizeof(*env));
    if (env == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        int skip = 0;

        for (size_t j = 0; j < 3; j++)
            skip |= strncmp(environ[i], ours[j], strlen(ours[j])) == 0;
        if (!skip)
            env[k++] = environ[i];
    }
    vals[0] = malloc(strlen(name) + 12);
    vals[1] = malloc(48);
    vals[2] = malloc(strlen(url) + 13);
    if (vals[0] == NULL || vals[1] == NULL || vals[2] == NULL) {
        free(vals[0]);
        free(vals[1]);
        free(vals[2]);
        free(env);
        return NULL;
    }
    sprintf(vals[0], "DLOCK_NAME=%s", name);
    sprintf(vals[1], "DLOCK_FENCE=%llu", (unsigned long long)fence);
    sprintf(vals[2], "DLOCK_STORE=%s", url);
    env[k++] = vals[0];
    env[k++] = vals[1];
    env[k++] = vals[2];
    env[k] = NULL;
    return env;
}

static void free_env(char **env)
{
    size_t n = 0;

    if (env == NULL)
        return;
    while (env[n] != NULL)
        n++;
    /* Our three strings are the last three. */
    for (size_t i = n >= 3 ? n - 3 : 0; i < n; i++)
        free(env[i]);
    free(env);
}

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The host's wall clock, for the metrics file only. */
static int64_t cli_wall_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void say_holder(dlock_store *store, const char *name)
{
    dlock_info *info = NULL;
    char when[64];

    if (dlock_status(&info, store, name) == DLOCK_OK && info->held) {
        if (info->other_client)
            cli_err("waiting for '%s': held by another client (not dlock)",
                    name);
        else if (!cli_quiet) {
            /* The host comes from the store: escaped, never raw. */
            fprintf(stderr, "dlock: waiting for '%s': held by ", name);
            if (info->limit > 1)
                fprintf(stderr, "%u of %u (semaphore), the longest lease "
                        "by ", info->holders, info->limit);
            cli_print_safe(stderr, info->host[0] ? info->host : "?");
            fprintf(stderr, " pid %lld since %s (lease %lld ms left)\n",
                    (long long)info->pid,
                    cli_time(info->since_ms, when, sizeof(when)),
                    (long long)info->ttl_ms);
        }
    }
    dlock_info_free(info);
}

static int acquire(const struct cli *c, const struct run_opts *o,
                   dlock_store *store, dlock_lock **lock)
{
    dlock_options opts = DLOCK_OPTIONS_INIT;
    int rc;

    opts.ttl_ms = o->ttl_ms;
    opts.shared = o->shared;
    opts.limit = o->limit;
    opts.on_lost = on_lost;
    opts.wait_ms = o->wait_ms;
    if (c->verbose && o->wait_ms != 0) {
        opts.wait_ms = 0;
        rc = dlock_acquire(lock, store, o->name, &opts);
        if (rc != DLOCK_BUSY)
            return rc;
        say_holder(store, o->name);
        opts.wait_ms = o->wait_ms;
    }
    return dlock_acquire(lock, store, o->name, &opts);
}

/* The paths execvp() would try for file, in order (NULL-terminated;
 * free with free_argv()).  Worked out before fork(): between fork() and
 * exec the child of a threaded process may only make async-signal-safe
 * calls, which rules out malloc. */
static char **exec_paths(const char *file)
{
    const char *path = getenv("PATH"), *p;
    size_t n = 1, k = 0, flen = strlen(file);
    char **v;

    if (strchr(file, '/') != NULL || *file == '\0') {
        v = calloc(2, sizeof(*v));
        if (v != NULL && (v[0] = strdup(file)) == NULL) {
            free(v);
            v = NULL;
        }
        return v;
    }
    if (path == NULL)
        path = "/usr/local/bin:/usr/bin:/bin";
    for (p = path; *p; p++)
        n += *p == ':';
    v = calloc(n + 1, sizeof(*v));
    if (v == NULL)
        return NULL;
    for (p = path;; p++) {
        const char *end = strchrnul(p, ':');
        size_t dlen = (size_t)(end - p);

        /* An empty entry is the current directory, as in execvp(). */
        v[k] = malloc(dlen + flen + 3);
        if (v[k] == NULL)
            break;
        if (dlen == 0)
            memcpy(v[k], "./", 3);
        else {
            memcpy(v[k], p, dlen);
            memcpy(v[k] + dlen, "/", 2);
        }
        strcat(v[k], file);
        k++;
        if (*end == '\0')
            return v;
        p = end;
    }
    for (size_t i = 0; i < k; i++)
        free(v[i]);
    free(v);
    return NULL;
}

static void free_argv(char **v)
{
    for (size_t i = 0; v != NULL && v[i] != NULL; i++)
        free(v[i]);
    free(v);
}

static void default_one(int sig, void *arg)
{
    (void)arg;
    (void)signal(sig, SIG_DFL);
}

/* Is the file at path one /bin/sh may read as a script (the child's
 * ENOEXEC fallback)?  Not if it is a binary the kernel could not run
 * (another architecture's ELF, a corrupt one): its magic number, or a
 * NUL byte before the first newline in its first 80 bytes (bash's test;
 * POSIX lets the shell refuse a file that is not text).  dash would run
 * whatever lines it found in it.  Async-signal-safe. */
static int shell_script(const char *path)
{
    char buf[80];
    ssize_t n;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);

    /* Unreadable (mode 111): /bin/sh says why, as under execvp. */
    if (fd < 0)
        return 1;
    do
        n = read(fd, buf, sizeof(buf));
    while (n < 0 && errno == EINTR);
    (void)close(fd);
    if (n < 0)
        return 1;
    if (n >= 4 && memcmp(buf, "\177ELF", 4) == 0)
        return 0;
    for (ssize_t i = 0; i < n && buf[i] != '\n'; i++)
        if (buf[i] == '\0')
            return 0;
    return 1;
}

/* In the child, between fork() and exec: async-signal-safe calls only.
 * CMD must not outlive dlock (a second holder would run beside it), so it
 * is killed when dlock dies: PR_SET_PDEATHSIG, and if dlock died before
 * that was in place (we are already someone else's child), not started.
 * sh_argv has room for argv and three more (allocated before fork()). */
static void child_exec(char **paths, char **argv, char **env, char **sh_argv,
                       int errfd, pid_t parent, int own_group)
{
    sigset_t none;
    int err = ENOENT;

    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
        _exit(EXIT_LOST);
    if (own_group)
        (void)setpgid(0, 0);
    for_each_caught(default_one, NULL);
    (void)signal(SIGCHLD, SIG_DFL);
    sigemptyset(&none);
    (void)sigprocmask(SIG_SETMASK, &none, NULL);
    for (size_t i = 0; paths[i] != NULL; i++) {
        execve(paths[i], argv, env);
        /* As execvp (and so flock(1), xargs, make): an executable file the
         * kernel cannot run (ENOEXEC: a script without "#!") is a shell
         * script; run it with /bin/sh, as "/bin/sh -- PATH ARG..." ("--":
         * a path starting with '-' is the script, not sh's options).  A
         * binary is not (shell_script()): ENOEXEC, 126. */
        if (errno == ENOEXEC) {
            size_t k = 0;

            if (!shell_script(paths[i])) {
                err = ENOEXEC;
                break;
            }
            sh_argv[0] = (char *)"/bin/sh";
            sh_argv[1] = (char *)"--";
            sh_argv[2] = paths[i];
            do
                sh_argv[k + 3] = argv[k + 1];
            while (argv[++k] != NULL);
            execve(sh_argv[0], sh_argv, env);
            /* No /bin/sh to run it: this file is what could not run
             * (never a later one of the same name on PATH). */
            err = errno == ENOENT || errno == ENOTDIR ? ENOEXEC : errno;
            break;
        }
        /* As execvp: remember a permission problem, go on past a missing
         * file, stop at anything else. */
        if (errno == EACCES)
            err = EACCES;
        else if (errno != ENOENT && errno != ENOTDIR)
            err = errno;
        if (err != ENOENT && err != EACCES)
            break;
    }
    (void)!write(errfd, &err, sizeof(err));
    _exit(err == ENOENT ? 127 : 126);
}

/* Is dlock the foreground job of its terminal?  Then CMD shares its
 * process group, so that ^C, ^Z and the terminal itself work as for any
 * job.  Otherwise (cron, systemd, a script, timeout(1)) CMD gets a group of
 * its own: a signal sent to dlock's whole group (kill -INT -PGID) then
 * reaches CMD once, passed on by dlock, instead of twice. */
static int foreground_job(void)
{
    for (int fd = 0; fd <= 2; fd++) {
        pid_t fg = isatty(fd) ? tcgetpgrp(fd) : -1;

        if (fg > 0)
            return fg == getpgrp();
    }
    return 0;
}

/* Why CMD could not be started, with what to do about the common cases
 * (a file without its x bit, a directory). */
static void say_exec_failed(const char *file, int err)
{
    struct stat st;

    if (err == EACCES && strchr(file, '/') != NULL && stat(file, &st) == 0) {
        if (S_ISDIR(st.st_mode)) {
            cli_err("run: cannot run '%s': it is a directory", file);
            return;
        }
        if (S_ISREG(st.st_mode) && access(file, X_OK) != 0) {
            cli_err("run: cannot run '%s': %s (it is not executable: "
                    "chmod +x it, or run it as: sh %s)",
                    file, strerror(err), file);
            return;
        }
    }
    cli_err("run: cannot run '%s': %s", file, strerror(err));
}

/* Start CMD; returns its pid, or -(exit code) on failure. */
static pid_t spawn(char **cmd, char **env)
{
    int own_group = !foreground_job();
    char **paths = exec_paths(cmd[0]), **sh_argv;
    sigset_t all, old;
    int efd[2], err = 0;
    pid_t pid, parent = getpid();
    size_t argc = 0;
    ssize_t n;

    while (cmd[argc] != NULL)
        argc++;
    /* "/bin/sh", "--", the path, the arguments after cmd[0], NULL. */
    sh_argv = calloc(argc + 3, sizeof(*sh_argv));
    if (paths == NULL || sh_argv == NULL) {
        cli_err("run: out of memory");
        free_argv(paths);
        free(sh_argv);
        return -EXIT_INTERNAL;
    }
    if (pipe2(efd, O_CLOEXEC) != 0) {
        cli_err("run: pipe: %s", strerror(errno));
        free_argv(paths);
        free(sh_argv);
        return -EXIT_INTERNAL;
    }
    /* No handler of ours may run in the child before exec. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid = fork();
    if (pid == 0) {
        close(efd[0]);
        child_exec(paths, cmd, env, sh_argv, efd[1], parent, own_group);
    }
    if (pid > 0 && own_group)
        (void)setpgid(pid, pid); /* as the child does: whoever runs first */
    if (pid < 0)
        err = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    close(efd[1]);
    free_argv(paths);
    free(sh_argv);
    if (pid < 0) {
        close(efd[0]);
        cli_err("run: cannot start '%s': %s", cmd[0], strerror(err));
        return -EXIT_INTERNAL;
    }
    /* The exec's outcome: EOF when it worked (the pipe is close-on-exec),
     * the errno when it did not. */
    do
        n = read(efd[0], &err, sizeof(err));
    while (n < 0 && errno == EINTR);
    close(efd[0]);
    if (n == (ssize_t)sizeof(err)) {
        int status;

        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
        say_exec_failed(cmd[0], err);
        return err == ENOENT ? -127 : -126;
    }
    return pid;
}

/* When CMD must be gone: SIGKILL this long before the lease ends, so
 * that the kill has taken effect (and the kernel has reaped what it
 * kills) before the store can give the lock to someone else.  A twentieth
 * of the lease, between 20 ms and 1 s. */
static int64_t kill_margin(int64_t ttl_ms)
{
    int64_t k = ttl_ms / 20;

    return k < 20 ? 20 : k > 1000 ? 1000 : k;
}

/* The grace period in force: --grace, at most a third of the lease (what
 * is left of a lease when its renewal is a third of it overdue), so that
 * SIGTERM, the grace period and SIGKILL all fit before the lease ends. */
static int64_t grace_of(const struct run_opts *o)
{
    return o->grace_ms < o->ttl_ms / 3 ? o->grace_ms : o->ttl_ms / 3;
}

/* --- what CMD started ------------------------------------------------
 *
 * dlock is a child subreaper (PR_SET_CHILD_SUBREAPER, set before CMD is
 * started): a process CMD starts stays in dlock's tree of descendants
 * whatever it does (daemonises with a double fork, setsid(), leaves its
 * process group), since an orphan is reparented to dlock, not to init.
 * So "every process CMD started" is "every descendant of dlock", which
 * /proc tells: when the lock is lost each gets the signal CMD gets, and
 * once CMD has exited every one left is killed and reaped before dlock
 * exits.  Not covered: a process started through a daemon outside the
 * tree (systemd-run, at, ssh) and, if dlock itself is killed by SIGKILL,
 * what CMD started (CMD itself dies by PR_SET_PDEATHSIG). */

struct proc {
    pid_t pid, ppid;
    char state;
};

/* pid's parent and state from /proc/<pid>/stat ("pid (comm) S ppid ...":
 * comm may hold anything, ')' too, so the fields after the last ')').
 * 0, or -1 if pid is gone. */
static int read_stat(pid_t pid, pid_t *ppid, char *state)
{
    char path[64], buf[512], *p;
    int fd;
    ssize_t len;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    len = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (len <= 0)
        return -1;
    buf[len] = '\0';
    p = strrchr(buf, ')');
    if (p == NULL || p[1] != ' ' || p[2] == '\0' || p[3] != ' ')
        return -1;
    *state = p[2];
    *ppid = (pid_t)strtol(p + 4, NULL, 10);
    return 0;
}

/* Every process.  Returns the count, or -1 when /proc cannot be read. */
static int read_procs(struct proc **out)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    struct proc *v = NULL;
    size_t n = 0, cap = 0;

    *out = NULL;
    if (d == NULL)
        return -1;
    while ((e = readdir(d)) != NULL) {
        long pid = atol(e->d_name);

        if (pid <= 0)
            continue;
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 256;
            struct proc *nv = realloc(v, nc * sizeof(*v));

            if (nv == NULL)
                break;
            v = nv;
            cap = nc;
        }
        v[n].pid = (pid_t)pid;
        if (read_stat(v[n].pid, &v[n].ppid, &v[n].state) == 0)
            n++; /* else gone meanwhile */
    }
    closedir(d);
    *out = v;
    return (int)n;
}

/* The parent of pid now (0 if it is gone). */
static pid_t parent_of(pid_t pid)
{
    pid_t ppid;
    char state;

    return read_stat(pid, &ppid, &state) == 0 ? ppid : 0;
}

/* sig to pid, which /proc showed as a child of ppid.  Through a pidfd
 * where the kernel has them, checked to be that same process still (a
 * descendant's child may have been reaped by it and its pid reused by
 * a process that is not ours): never a stranger's process. */
static void signal_proc(pid_t pid, pid_t ppid, int sig)
{
#if defined(SYS_pidfd_open) && defined(SYS_pidfd_send_signal)
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);

    if (fd >= 0) {
        if (parent_of(pid) == ppid)
            (void)syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0);
        close(fd);
        return;
    }
    if (errno != ENOSYS)
        return; /* gone */
#endif
    if (parent_of(pid) == ppid)
        (void)kill(pid, sig);
}

/* sig to every living descendant of dlock, but CMD (skip) and the
 * members of group skip_group (signalled already; 0: none).  Returns
 * how many living descendants there were (skipped ones included). */
static int signal_descendants(int sig, pid_t skip, pid_t skip_group)
{
    struct proc *v;
    int n = read_procs(&v), alive = 0;
    pid_t self = getpid();
    unsigned char *mine;

    if (n <= 0) {
        free(v);
        return 0;
    }
    mine = calloc((size_t)n, 1);
    if (mine == NULL) {
        free(v);
        return 0;
    }
    /* The descendants of self: whose parent is self or one of them,
     * marked until a pass adds none. */
    for (int added = 1; added;) {
        added = 0;
        for (int i = 0; i < n; i++) {
            if (mine[i] || v[i].pid == self)
                continue;
            int under = v[i].ppid == self;

            for (int j = 0; !under && j < n; j++)
                under = mine[j] && v[j].pid == v[i].ppid;
            if (under) {
                mine[i] = 1;
                added = 1;
            }
        }
    }
    for (int i = 0; i < n; i++) {
        if (!mine[i] || v[i].state == 'Z' || v[i].state == 'X')
            continue;
        alive++;
        if (v[i].pid == skip ||
            (skip_group > 0 && getpgid(v[i].pid) == skip_group))
            continue;
        signal_proc(v[i].pid, v[i].ppid, sig);
    }
    free(mine);
    free(v);
    return alive;
}

/* Reap every child of dlock that has exited (orphans reparented to it
 * included); returns child if CMD was among them, its status in
 * *status. */
static pid_t reap_children(pid_t child, int *status)
{
    pid_t w, got = 0;
    int st;

    while ((w = waitpid(-1, &st, WNOHANG)) > 0) {
        if (w == child) {
            *status = st;
            got = child;
        }
    }
    return got;
}

/* CMD has exited and the lock is lost: SIGKILL every descendant left,
 * again (a process may fork while it is being killed, and a killed
 * parent's children come to dlock) until none is alive, reaping them.
 * Ends by `deadline` all the same (a process in uninterruptible I/O dies
 * when that I/O ends), saying how many were left. */
static void kill_descendants(int rfd, int64_t deadline)
{
    int status;

    for (;;) {
        int alive = signal_descendants(SIGKILL, 0, 0);
        int64_t now = now_ms();
        struct pollfd p = {rfd, POLLIN, 0};
        unsigned char buf[64];

        (void)reap_children(0, &status);
        if (alive == 0)
            return;
        if (now >= deadline) {
            cli_err("run: %d process(es) the command started did not die "
                    "of SIGKILL in time (uninterruptible I/O?)", alive);
            return;
        }
        /* A child's exit wakes this (SIGCHLD on the self-pipe); a
         * grandchild's does not: look again every 20 ms. */
        (void)poll(&p, 1, deadline - now < 20 ? (int)(deadline - now) : 20);
        while (read(rfd, buf, sizeof(buf)) > 0)
            ;
    }
}

/* Signal CMD: its process group when it has one of its own, else CMD
 * alone (it shares ours, the terminal's); and every other process CMD
 * started, wherever it went (its own session, another group). */
static void signal_cmd(pid_t child, int sig)
{
    pid_t group = getpgid(child) == child ? child : 0;

    if (group > 0)
        (void)kill(-child, sig);
    else
        (void)kill(child, sig);
    (void)signal_descendants(sig, child, group);
}

/* Wait for the child, forwarding signals and acting on loss.  Returns the
 * child's exit status as a shell would report it; *lost is set if the lock
 * was lost meanwhile, or could not be renewed in time for CMD to go on.
 *
 * CMD is gone by the lease end, whatever the store is doing: when the
 * lease left (as this process counts it, dlock_lease_left()) falls to the
 * grace period plus the kill margin without a renewal having confirmed
 * more, CMD gets SIGTERM, and SIGKILL at the kill margin before the lease
 * ends.  A lock found lost sooner (broken by an administrator, taken
 * over) gets SIGTERM at once and SIGKILL after the grace period. */
static int supervise(pid_t child, int rfd, const struct run_opts *o,
                     dlock_lock *lock, int *lost, int *raw)
{
    int64_t grace = grace_of(o), margin = kill_margin(o->ttl_ms);
    int64_t kill_at = -1;
    /* CMD's own process group, if it has one (not a terminal's job). */
    pid_t group = getpgid(child) == child ? child : 0;

    for (;;) {
        struct pollfd p = {rfd, POLLIN, 0};
        int64_t timeout = 60000, now = now_ms();
        int status;
        unsigned char buf[64];
        ssize_t n;
        pid_t w;

        if (!*lost) {
            int64_t left = dlock_lease_left(lock);

            if (left <= grace + margin) {
                *lost = 1;
                kill_at = left > 0 ? now + left - margin : now + grace;
                if (left > 0)
                    cli_err("run: lock '%s' will be lost in %lld ms: no "
                            "renewal has confirmed its lease; stopping the "
                            "command (SIGTERM, SIGKILL in %lld ms)",
                            o->name, (long long)left,
                            (long long)(kill_at - now));
                else
                    cli_err("run: lock '%s' was lost; stopping the command "
                            "(SIGTERM, SIGKILL in %lld ms)", o->name,
                            (long long)grace);
                signal_cmd(child, SIGTERM);
            } else {
                /* Look again when it would be time, unless a renewal has
                 * confirmed more by then. */
                timeout = left - grace - margin;
            }
        }
        if (kill_at >= 0) {
            if (kill_at <= now) {
                signal_cmd(child, SIGKILL);
                kill_at = -1;
            } else if (kill_at - now < timeout) {
                timeout = kill_at - now;
            }
        }
        w = reap_children(child, &status);
        if (w == child) {
            /* Stopped for the lock: what CMD started goes with it.  Its
             * process group first, which needs no /proc (a sandbox, a
             * chroot without it: the walk then finds nothing); the
             * group outlives CMD while a member does, so its id is
             * nobody else's. */
            if (*lost) {
                if (group > 0)
                    (void)kill(-group, SIGKILL);
                kill_descendants(rfd, now_ms() + grace + 1000);
            }
            *raw = status;
            return WIFEXITED(status) ? WEXITSTATUS(status)
                                     : 128 + WTERMSIG(status);
        }
        if (timeout > 60000)
            timeout = 60000;
        if (poll(&p, 1, (int)timeout) < 0 && errno != EINTR)
            return EXIT_INTERNAL;
        n = read(rfd, buf, sizeof(buf));
        for (ssize_t i = 0; i < n; i++) {
            /* EV_CHILD: waitpid() above; EV_LOST: dlock_lease_left() is 0
             * now, which the top of the loop acts on. */
            if (buf[i] & 0x80)
                kill(child, buf[i] & 0x7f);
        }
    }
}

/* CMD has exited (status) and supervise() found the lock held until
 * then: let it go, and exit as what dlock knows says.
 *
 * Whether the lock was lost BEFORE the command ended decides: lost then
 * (the lease as dlock counts it had run out, or the loss was reported,
 * by the time CMD was reaped; or the store answers the release that the
 * lock is not ours: broken or taken over since its last renewal) is 75.
 * A release that cannot reach the store (cut off, its session dying
 * under it) proves nothing of the kind: the command ran whole under the
 * lock, so its own status, and a warning that the release could not be
 * confirmed and the lock goes when its lease runs out.  A wrapper that
 * reruns on 75 must not rerun a finished job. */
static int release_after(dlock_lock *lock, const struct run_opts *o,
                         int status, int unreachable)
{
    int64_t left = dlock_lease_left(lock);
    int r = dlock_release(lock);

    /* The run's end could not reach the store just before: a session
     * store then knows its session is gone and answers the release LOST
     * without asking anyone.  That is "could not confirm" (R11), not a
     * loss seen before the command ended. */
    if (r == DLOCK_LOST && unreachable && left > 0)
        r = DLOCK_EUNAVAIL;
    if (left == 0 || r == DLOCK_LOST) {
        cli_err("run: lock '%s' was lost before the command ended%s%s",
                o->name, r == DLOCK_LOST ? ": " : "",
                r == DLOCK_LOST ? dlock_errmsg() : "");
        return EXIT_LOST;
    }
    if (r != DLOCK_OK)
        cli_err("run: warning: the command ended under the lock, but the "
                "release of '%s' could not be confirmed (%s); the lock "
                "goes when its lease runs out, at most %lld ms from now",
                o->name, dlock_errmsg(), (long long)o->ttl_ms);
    return status;
}

/* The holder's fence as dlock_status() tells it: the highest handed out. */
static void say_busy(dlock_store *store, const char *name)
{
    dlock_info *info = NULL;

    if (cli_quiet)
        return;
    fputs("dlock: run: '", stderr);
    cli_print_safe(stderr, name);
    if (dlock_status(&info, store, name) != DLOCK_OK || !info->held) {
        fputs("' is running now (its holder could not be told)\n", stderr);
    } else if (info->other_client) {
        fputs("' is held now by another client (not dlock)\n", stderr);
    } else {
        fputs("' is running now on host ", stderr);
        cli_print_safe(stderr, info->host[0] ? info->host : "?");
        fprintf(stderr, " (pid %lld, fence %llu)\n", (long long)info->pid,
                (unsigned long long)info->fence);
    }
    dlock_info_free(info);
}

/* The skip line: which run satisfied the rule. */
static void say_ran(const char *name, const dlock_run *last)
{
    char iso[64];

    if (cli_quiet)
        return;
    fputs("dlock: run: '", stderr);
    cli_print_safe(stderr, name);
    if (last == NULL) {
        fputs("' already ran (its record is no longer kept)\n", stderr);
        return;
    }
    fprintf(stderr, "' already ran at %s on host ",
            cli_time_utc(last->start_ms, iso, sizeof(iso)));
    cli_print_safe(stderr, last->host[0] ? last->host : "?");
    fprintf(stderr, " (fence %llu; ", (unsigned long long)last->fence);
    switch (last->result) {
    case DLOCK_RUN_EXITED:
        fprintf(stderr, "exit %d)\n", last->status);
        break;
    case DLOCK_RUN_SIGNALED:
        fprintf(stderr, "signal %d)\n", last->status);
        break;
    case DLOCK_RUN_RUNNING:
        /* We hold the lock: whoever ran it does not, so it will never
         * record an end (cut off, killed); the next run that goes ahead
         * marks it abandoned. */
        fputs("no end recorded: its holder is gone)\n", stderr);
        break;
    default:
        fprintf(stderr, "%s)\n", cli_run_word(last->result));
    }
}

/* Decide and record the run's start (dlock_run_begin()).  -1: go on
 * (with *recorded set when the run is recorded); else the exit code (a
 * skip, 0 by default, or a failure). */
static int begin_run(const struct run_opts *o, dlock_lock *lock,
                     int *recorded, struct cli_run_report *rep)
{
    dlock_run_rule rule = DLOCK_RUN_RULE_INIT;
    dlock_run *last = NULL;
    int ruled = o->once || o->period_ms > 0, go = 0, rc;

    rule.once = o->once;
    rule.period_ms = o->period_ms;
    rc = dlock_run_begin(lock, &rule, &go, &last);
    if (rc == DLOCK_OK && go) {
        *recorded = 1;
        dlock_run_free(last);
        return -1;
    }
    if (rc == DLOCK_OK) {
        say_ran(o->name, last);
        dlock_run_free(last);
        rep->skipped = 1;
        return o->conflict_given ? o->conflict_code : 0;
    }
    if (rc == DLOCK_LOST)
        return cli_fail(rc, "run");
    if (ruled) {
        /* Fail closed: without a decision the job must not run. */
        if (rc == DLOCK_ENOTSUP)
            cli_err("run: %s: --once and --once-per need run records; "
                    "not running the command",
                    dlock_errmsg());
        else
            cli_err("run: cannot decide whether '%s' runs (%s); not "
                    "running the command",
                    o->name, dlock_errmsg());
        return rc == DLOCK_ENOTSUP ? EXIT_UNAVAILABLE : cli_exit_code(rc);
    }
    /* A plain run goes ahead unrecorded: quietly on a store without
     * records, with a warning when the store failed to write one. */
    if (rc != DLOCK_ENOTSUP)
        cli_err("run: warning: the run of '%s' is not recorded: %s",
                o->name, dlock_errmsg());
    return -1;
}

/* Record how the run ended (before the release: the record is found by
 * the lock's fence). */
static int end_run(const struct run_opts *o, dlock_lock *lock, int raw,
                   int lost)
{
    int result, status = -1, rc;

    if (lost || dlock_lease_left(lock) == 0) {
        result = DLOCK_RUN_LOST;
        if (raw >= 0 && WIFEXITED(raw))
            status = WEXITSTATUS(raw);
    } else if (raw >= 0 && WIFSIGNALED(raw)) {
        result = DLOCK_RUN_SIGNALED;
        status = WTERMSIG(raw);
    } else {
        result = DLOCK_RUN_EXITED;
        status = raw >= 0 ? WEXITSTATUS(raw) : -1;
    }
    rc = dlock_run_end(lock, result, status);
    if (rc != DLOCK_OK)
        cli_err("run: warning: the end of the run of '%s' is not "
                "recorded: %s%s",
                o->name, dlock_errmsg(),
                o->once && result == DLOCK_RUN_EXITED && status == 0
                    ? " (--once will run it again)"
                    : "");
    return rc;
}

int cmd_run(const struct cli *c, int argc, char **argv)
{
    struct run_opts o = {0};
    struct cli_run_report rep;
    struct sigaction sa;
    dlock_store *store = NULL;
    dlock_lock *lock = NULL;
    char **env = NULL;
    int pfd[2] = {-1, -1}, rc, lost = 0, recorded = 0, raw = -1;
    int end_rc = DLOCK_OK;
    int64_t t0;
    pid_t child;

    rc = cli_run_parse(&o, argc, argv);
    if (rc != 0) {
        if (rc < 0) {
            fputs(help, stdout);
            return 0;
        }
        return rc;
    }
    memset(&rep, 0, sizeof(rep));
    rep.name = o.name;
    rep.metrics_file = o.metrics_file;
    /* The pipe first: the on_lost callback may fire as soon as the lock is
     * held. */
    if (pipe2(pfd, O_CLOEXEC | O_NONBLOCK) != 0) {
        cli_err("run: pipe: %s", strerror(errno));
        rc = EXIT_INTERNAL;
        goto out;
    }
    sigpipe_w = pfd[1];
    scan_fds(0);
    t0 = now_ms();
    rc = cli_open_waiting(c, &store, &o.wait_ms);
    if (rc != 0)
        goto out;
    rc = acquire(c, &o, store, &lock);
    rep.waited_ms = now_ms() - t0;
    if (rc == DLOCK_BUSY) {
        if (o.period_ms > 0) {
            /* Someone else's run of it: a skip, not a failure. */
            say_busy(store, o.name);
            rep.skipped = 1;
            rc = o.conflict_given ? o.conflict_code : 0;
            goto out;
        }
        if (o.once) {
            /* Not a skip: that run has not succeeded (yet), and exit 0
             * would tell `dlock run --once m -- ./migrate && ./app` that
             * the migration is done. */
            say_busy(store, o.name);
            rc = o.conflict_code;
            goto out;
        }
        if (c->verbose)
            cli_err("run: lock '%s' not acquired in time", o.name);
        rc = o.conflict_code;
        goto out;
    }
    if (rc != DLOCK_OK) {
        rc = cli_fail(rc, "run");
        goto out;
    }
    if (c->verbose)
        cli_err("run: acquired '%s' (fence %llu, lease %lld ms left)",
                o.name, (unsigned long long)dlock_fence(lock),
                (long long)dlock_lease_left(lock));
    /* Shared holders and a semaphore's run side by side: a record of
     * each would mark the others' as abandoned.  Locks only. */
    if (!o.shared && o.limit == 1) {
        rc = begin_run(&o, lock, &recorded, &rep);
        if (rc >= 0)
            goto out;
    }
    env = child_env(o.name, dlock_fence(lock), dlock_store_url(store));
    if (env == NULL) {
        cli_err("run: out of memory");
        rc = EXIT_INTERNAL;
        goto out;
    }
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_NOCLDSTOP;
    sigemptyset(&sa.sa_mask);
    self_pid = getpid();
    sigaction(SIGCHLD, &sa, NULL);
    for_each_caught(catch_one, &sa);
    scan_fds(1);
    /* Whatever CMD starts stays dlock's descendant (see signal_cmd()). */
    (void)prctl(PR_SET_CHILD_SUBREAPER, 1);
    rep.start_ms = cli_wall_ms();
    child = spawn(o.cmd, env);
    if (child < 0) {
        rc = -child;
        /* CMD not found / not executable: the run ended so. */
        raw = rc == 126 || rc == 127 ? (rc << 8) : -1;
    } else {
        rep.ran = 1;
        rc = supervise(child, pfd[0], &o, lock, &lost, &raw);
    }
    rep.end_ms = cli_wall_ms();
    if (raw >= 0 && WIFEXITED(raw)) {
        rep.exited = 1;
        rep.status = WEXITSTATUS(raw);
    } else if (raw >= 0 && WIFSIGNALED(raw)) {
        rep.signaled = 1;
        rep.sig = WTERMSIG(raw);
    }
    if (recorded)
        end_rc = end_run(&o, lock, raw, lost);
    if (lost) {
        rc = EXIT_LOST;
    } else if (child >= 0) {
        rc = release_after(lock, &o, rc, end_rc == DLOCK_EUNAVAIL);
        lock = NULL;
    }
    rep.lost = rc == EXIT_LOST && rep.ran;
out:
    if (lock != NULL)
        (void)dlock_release(lock);
    dlock_store_close(store);
    free_env(env);
    if (pfd[0] >= 0) {
        close(pfd[0]);
        close(pfd[1]);
    }
    if (rep.end_ms == 0)
        rep.end_ms = cli_wall_ms();
    rep.exit_code = rc;
    run_report(&rep);
    return rc;
}
