/*
 * run_spawn.c - starting CMD for `dlock run`: the fds and environment it
 * inherits, the paths execvp() would try (worked out before fork()), the
 * fork, the child's async-signal-safe way to exec (PR_SET_PDEATHSIG, its
 * own process group off a terminal, /bin/sh for a script without "#!"),
 * and why it could not start.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run.h"

extern char **environ;

#define MAX_TRACKED_FD 4096

/* fds open before the store was: the user's, passed on to CMD.  Anything
 * opened since (store connections) gets close-on-exec. */
static unsigned char user_fds[MAX_TRACKED_FD];

void run_scan_fds(int mark_cloexec)
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

/* Every DLOCK_ variable dlock reads (main.c, run_opts.c) or sets for
 * CMD: an inherited one never reaches CMD (a nested dlock would take a
 * parent's store file or metrics file for its own). */
static const char *const dlock_env[] = {
    "DLOCK_NAME=",       "DLOCK_FENCE=",        "DLOCK_STORE=",
    "DLOCK_STORE_FILE=", "DLOCK_METRICS_FILE=", "DLOCK_LEADER_VALUE="};

/* environ without dlock_env[], plus DLOCK_NAME/FENCE/STORE of ours. */
char **run_child_env(const char *name, uint64_t fence, const char *url,
                     const char *leader_value)
{
    size_t n = 0, k = 0;
    char **env;
    char *vals[4];

    while (environ[n] != NULL)
        n++;
    env = calloc(n + 5, sizeof(*env));
    if (env == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        int skip = 0;

        for (size_t j = 0; j < sizeof(dlock_env) / sizeof(dlock_env[0]); j++)
            skip |=
                strncmp(environ[i], dlock_env[j], strlen(dlock_env[j])) == 0;
        if (!skip)
            env[k++] = environ[i];
    }
    vals[0] = malloc(strlen(name) + 12);
    vals[1] = malloc(48);
    vals[2] = malloc(strlen(url) + 13);
    /* dlock elect only (leader_value "" without --value); an inherited
     * one is dropped either way: it would be another leader's. */
    vals[3] = malloc((leader_value != NULL ? strlen(leader_value) : 0) + 20);
    if (vals[0] == NULL || vals[1] == NULL || vals[2] == NULL ||
        vals[3] == NULL) {
        free(vals[0]);
        free(vals[1]);
        free(vals[2]);
        free(vals[3]);
        free(env);
        return NULL;
    }
    sprintf(vals[0], "DLOCK_NAME=%s", name);
    sprintf(vals[1], "DLOCK_FENCE=%llu", (unsigned long long)fence);
    sprintf(vals[2], "DLOCK_STORE=%s", url);
    env[k++] = vals[0];
    env[k++] = vals[1];
    env[k++] = vals[2];
    if (leader_value != NULL) {
        sprintf(vals[3], "DLOCK_LEADER_VALUE=%s", leader_value);
        env[k++] = vals[3];
    } else {
        free(vals[3]);
    }
    env[k] = NULL;
    return env;
}

void run_free_env(char **env)
{
    size_t n = 0, ours;

    if (env == NULL)
        return;
    while (env[n] != NULL)
        n++;
    /* Our strings are the last three, or four with DLOCK_LEADER_VALUE. */
    ours = n > 0 && strncmp(env[n - 1], "DLOCK_LEADER_VALUE=", 19) == 0 ? 4 : 3;
    for (size_t i = n >= ours ? n - ours : 0; i < n; i++)
        free(env[i]);
    free(env);
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
    run_signals_default();
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

/* What the "#!" line of the file at path names as its interpreter, into
 * buf, and the word after it into arg ("" when there is none, or no
 * line).  As the kernel reads it: after "#!" and blanks, up to a blank
 * or the end of the line; a '\r' (a script saved with CRLF line endings)
 * is part of the name. */
/* The kernel's buffer for the "#!" line (BINPRM_BUF_SIZE, Linux 5.1+). */
#define SHEBANG_BUF 256

static void interpreter_of(const char *path, char *buf, char *arg, size_t len)
{
    char head[SHEBANG_BUF + 1];
    ssize_t n;
    size_t i = 2;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

    buf[0] = arg[0] = '\0';
    if (fd < 0)
        return;
    do
        n = read(fd, head, SHEBANG_BUF);
    while (n < 0 && errno == EINTR);
    (void)close(fd);
    if (n < 3 || head[0] != '#' || head[1] != '!')
        return;
    head[n] = '\0';
    /* As fs/binfmt_script.c: a line longer than the buffer whose
     * interpreter runs to the buffer's last byte (no blank, tab or NUL
     * after it within the buffer) is taken as cut short: the exec fails
     * with ENOEXEC, and execvp() (so the child here, flock(1), a shell)
     * runs the file with /bin/sh.  No verdict on it, then: the name read
     * is not the interpreter's. */
    if (n == SHEBANG_BUF && memchr(head, '\n', SHEBANG_BUF) == NULL) {
        size_t s = 2;

        while (s < SHEBANG_BUF - 1 && (head[s] == ' ' || head[s] == '\t'))
            s++;
        if (s >= SHEBANG_BUF - 1 ||
            strcspn(head + s, " \t") >= SHEBANG_BUF - 1 - s)
            return;
        head[SHEBANG_BUF - 1] = '\0'; /* the kernel reads no further */
    }
    for (char *out = buf; out != NULL; out = out == buf ? arg : NULL) {
        size_t k = 0;

        while (head[i] == ' ' || head[i] == '\t')
            i++;
        while (head[i] != '\0' && head[i] != ' ' && head[i] != '\t' &&
               head[i] != '\n' && k + 1 < len)
            out[k++] = head[i++];
        out[k] = '\0';
    }
}

/* Can the interpreter of the script at path run?  0, else ENOENT or
 * EACCES with what is missing in ip ("/bin/bash\r"; for "#!/usr/bin/env
 * bash" a bash that is not on PATH: "/usr/bin/env bash"). */
static int interpreter_fails(const char *path, char *ip, size_t len)
{
    char arg[256], **paths;
    struct stat st;
    const char *base;
    int found = 0;

    interpreter_of(path, ip, arg, len);
    if (ip[0] == '\0')
        return 0;
    if (stat(ip, &st) != 0)
        return ENOENT;
    if (!S_ISREG(st.st_mode) || access(ip, X_OK) != 0)
        return EACCES;
    base = strrchr(ip, '/') != NULL ? strrchr(ip, '/') + 1 : ip;
    /* env(1) looks its program up on PATH: it says so itself, but only
     * once CMD runs under the lock. */
    if (strcmp(base, "env") != 0 || arg[0] == '\0' || arg[0] == '-' ||
        strchr(arg, '=') != NULL || (paths = exec_paths(arg)) == NULL)
        return 0;
    for (size_t i = 0; paths[i] != NULL && !found; i++)
        found = stat(paths[i], &st) == 0 && S_ISREG(st.st_mode) &&
                access(paths[i], X_OK) == 0;
    free_argv(paths);
    if (found)
        return 0;
    if (strlen(ip) + 1 + strlen(arg) < len) {
        strcat(ip, " ");
        strcat(ip, arg);
    }
    return ENOENT;
}

/* How execvp() would fare with file: 0 when it would find one to run
 * (its path in found), else the errno it would end with (ENOENT: none;
 * EACCES: one that cannot be run), found then the path it would
 * complain of ("" for none) and interp the missing "#!" interpreter, if
 * that is why ("" if not). */
static int resolve(const char *file, char *found, size_t flen, char *interp,
                   size_t ilen)
{
    char **paths = exec_paths(file);
    int err = ENOENT;

    found[0] = interp[0] = '\0';
    if (paths == NULL)
        return 0; /* out of memory: let the exec tell */
    for (size_t i = 0; paths[i] != NULL; i++) {
        struct stat st;
        char ip[512];
        int ierr;

        if (stat(paths[i], &st) != 0) {
            if (errno != ENOENT && errno != ENOTDIR && err == ENOENT) {
                err = EACCES;
                snprintf(found, flen, "%s", paths[i]);
            }
            continue;
        }
        if (!S_ISREG(st.st_mode) || access(paths[i], X_OK) != 0) {
            /* A directory, a file without its x bit: execve() says
             * EACCES, and execvp() goes on to the next. */
            if (err == ENOENT || interp[0] != '\0') {
                err = EACCES;
                snprintf(found, flen, "%s", paths[i]);
                interp[0] = '\0';
            }
            continue;
        }
        ierr = interpreter_fails(paths[i], ip, sizeof(ip));
        if (ierr != 0) {
            /* execve() fails for its interpreter (ENOENT, or EACCES),
             * and execvp() goes on to the next. */
            if (err == ENOENT && interp[0] == '\0') {
                err = ierr;
                snprintf(found, flen, "%s", paths[i]);
                snprintf(interp, ilen, "%s", ip);
            }
            continue;
        }
        snprintf(found, flen, "%s", paths[i]);
        interp[0] = '\0';
        free_argv(paths);
        return 0;
    }
    free_argv(paths);
    return err;
}

/* Why CMD could not be started (err: the exec's errno, or resolve()'s),
 * with what to do about the common cases: a file without its x bit, a
 * directory, a "#!" interpreter that is missing (CRLF line endings), a
 * NAME that took CMD's place.  The lock is named: the command is not
 * always what it seems ("dlock run my job -- true" runs "job"). */
static void say_exec_failed(const char *name, char **cmd, int dashdash, int err)
{
    const char *file = cmd[0];
    char found[4096], interp[512], ignored[4096];
    struct stat st;
    size_t k;

    int rerr = resolve(file, found, sizeof(found), interp, sizeof(interp));

    if (rerr == 0) {
        /* It looks runnable: say what the exec said.  A file that is
         * there and "not there" is a binary whose loader is missing. */
        if (err == ENOENT && found[0] != '\0')
            cli_err("lock '%s': cannot run '%s': %s (%s is there: its ELF "
                    "interpreter or a library may be missing)",
                    name, file, strerror(err), found);
        else
            cli_err("lock '%s': cannot run '%s': %s", name, file,
                    strerror(err));
    } else if (interp[0] != '\0') {
        size_t n = strlen(interp);

        cli_err("lock '%s': cannot run '%s': its interpreter '%s' is %s%s",
                name, file, interp,
                rerr == EACCES ? "not executable" : "missing",
                n > 0 && interp[n - 1] == '\r' ? " (CRLF line endings?)" : "");
    } else if (err == EACCES && strchr(file, '/') != NULL &&
               stat(file, &st) == 0 && S_ISDIR(st.st_mode)) {
        cli_err("lock '%s': cannot run '%s': it is a directory", name, file);
    } else if (err == EACCES && found[0] != '\0' && stat(found, &st) == 0 &&
               S_ISREG(st.st_mode) && access(found, X_OK) != 0) {
        cli_err("lock '%s': cannot run '%s': %s (%s is not executable: "
                "chmod +x it, or run it as: sh %s)",
                name, file, strerror(err),
                strcmp(found, file) == 0 ? "it" : found, found);
    } else if (err == ENOENT && strchr(file, '/') == NULL) {
        cli_err("lock '%s': cannot run '%s': not found in PATH", name, file);
    } else {
        cli_err("lock '%s': cannot run '%s': %s", name, file, strerror(err));
    }
    if (dashdash)
        return;
    /* "dlock run my job -- true": NAME was "my job", unquoted. */
    for (k = 1; cmd[k] != NULL && strcmp(cmd[k], "--") != 0; k++)
        ;
    if (cmd[k] != NULL) {
        char guess[1024];
        int len = snprintf(guess, sizeof(guess), "%s", name);

        for (size_t i = 0; i < k && len < (int)sizeof(guess); i++)
            len += snprintf(guess + len, sizeof(guess) - (size_t)len, " %s",
                            cmd[i]);
        cli_err("was the lock name '%s'? quote a NAME with spaces: "
                "dlock run '%s' -- ...",
                guess, guess);
    } else if (resolve(name, ignored, sizeof(ignored), interp,
                       sizeof(interp)) == 0) {
        /* "dlock run echo hi": the command took NAME's place. */
        cli_err("is '%s' the command? NAME comes first: dlock run NAME -- "
                "%s ...",
                name, name);
    }
}

int run_check_cmd(const char *name, char **cmd, int dashdash)
{
    char found[4096], interp[512];
    int err = resolve(cmd[0], found, sizeof(found), interp, sizeof(interp));

    if (err == 0)
        return 0;
    say_exec_failed(name, cmd, dashdash, err);
    return err == ENOENT ? 127 : 126;
}

/* Start CMD; returns its pid, or -(exit code) on failure. */
pid_t run_spawn(const char *name, char **cmd, char **env)
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
        cli_err("lock '%s': cannot start '%s': %s", name, cmd[0],
                strerror(err));
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
        say_exec_failed(name, cmd, 1, err);
        return err == ENOENT ? -127 : -126;
    }
    return pid;
}
