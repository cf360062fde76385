/*
 * cancel_cloexec.c - a cancel's pipe never reaches a program another
 * thread execs.
 *
 * dlock_cancel_new() (src/core/cancel.c) and the watch threads' wake-up
 * pipes (src/core/watch.c) made their pipe with pipe(2) and set
 * FD_CLOEXEC with fcntl(2) after: a fork+exec by another thread of the
 * host between the two handed both ends to the new program, which then
 * kept them for its life (a cancel's reader, or writer, outside dlock).
 * One thread here makes and frees cancels as fast as it can while the
 * main one fork+execs itself in probe mode, which reports any FIFO it
 * was given beyond stdin, stdout, stderr and what the test itself was
 * given.
 *
 *     adv44_cancel_cloexec          (exit 0: no leak in 300 execs)
 */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dlock.h"

static volatile int stop;

static void *churn(void *arg)
{
    (void)arg;
    while (!stop) {
        dlock_cancel *c = NULL;

        if (dlock_cancel_new(&c) == DLOCK_OK)
            dlock_cancel_free(c);
    }
    return NULL;
}

/* Probe mode: how many FIFOs beyond 0..2 this program was given. */
static int probe(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int n = 0, self;

    if (d == NULL)
        return 0; /* no /proc: nothing to tell */
    self = dirfd(d);
    while ((e = readdir(d)) != NULL) {
        int fd = atoi(e->d_name);
        struct stat st;

        if (e->d_name[0] == '.' || fd <= 2 || fd == self)
            continue;
        if (fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode))
            n++;
    }
    closedir(d);
    return n;
}

/* The probe's count, fork+exec'd; -1 if it did not run. */
static int run_probe(const char *argv0)
{
    pid_t pid = fork();
    int st;

    if (pid == 0) {
        execl("/proc/self/exe", argv0, "probe", (char *)NULL);
        _exit(127);
    }
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
        WEXITSTATUS(st) > 100)
        return -1;
    return WEXITSTATUS(st);
}

int main(int argc, char **argv)
{
    pthread_t th;
    int leaks = 0, runs = 300, base;

    if (argc > 1 && strcmp(argv[1], "probe") == 0)
        return probe() < 100 ? probe() : 100;
    /* What the host itself hands on (a test runner's pipe): the probe
     * before any cancel, the baseline each exec is compared with. */
    base = run_probe(argv[0]);
    if (base < 0) {
        printf("FAIL the probe does not run\n");
        return 1;
    }
    if (pthread_create(&th, NULL, churn, NULL) != 0) {
        printf("FAIL no thread\n");
        return 1;
    }
    for (int i = 0; i < runs && leaks == 0; i++) {
        if (run_probe(argv[0]) > base) {
            printf("FAIL exec %d: the program got a cancel's pipe (no "
                   "O_CLOEXEC at pipe creation)\n",
                   i);
            leaks++;
        }
    }
    stop = 1;
    pthread_join(th, NULL);
    if (leaks == 0)
        printf("ok   %d execs beside dlock_cancel_new(): no pipe leaked\n",
               runs);
    return leaks != 0;
}
