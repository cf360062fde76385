/*
 * run_signals.c - the self-pipe of `dlock run`: every signal dlock
 * catches, CMD's exit (SIGCHLD) and the lock's loss (the on_lost
 * callback, on the renew thread) become one byte each on a pipe that
 * run_supervise()'s poll() reads, so no work is done in a handler.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "run.h"

static int sigpipe_w = -1;
static pid_t self_pid;

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
static const int caught[] = {SIGHUP,  SIGINT,  SIGQUIT, SIGUSR1, SIGUSR2,
                             SIGPIPE, SIGALRM, SIGTERM, SIGIO,   SIGVTALRM,
                             SIGPROF, SIGXCPU, SIGXFSZ, SIGPWR,  SIGSTKFLT};

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

void run_on_lost(dlock_lock *lock, void *payload)
{
    unsigned char b = EV_LOST;

    (void)lock;
    (void)payload;
    (void)!write(sigpipe_w, &b, 1);
}

static void default_one(int sig, void *arg)
{
    (void)arg;
    (void)signal(sig, SIG_DFL);
}

void run_signals_pipe(int wfd)
{
    sigpipe_w = wfd;
}

void run_signals_catch(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_NOCLDSTOP;
    sigemptyset(&sa.sa_mask);
    self_pid = getpid();
    sigaction(SIGCHLD, &sa, NULL);
    for_each_caught(catch_one, &sa);
}

void run_signals_default(void)
{
    for_each_caught(default_one, NULL);
}
