/*
 * run_signals.c - the signals of `dlock run`.
 *
 * While CMD runs, the self-pipe: every signal dlock catches, CMD's exit
 * (SIGCHLD) and the lock's loss (the on_lost callback, on the renew
 * thread) become one byte each on a pipe that run_supervise()'s poll()
 * reads, so no work is done in a handler.
 *
 * Before CMD starts (the store's open, the wait, the run's start
 * record), the same signals (those not ignored when dlock started) end
 * dlock with 128+N instead, without ever leaving a place in a queue
 * behind: until the first acquire begins nothing of dlock's is in the
 * store, and the handler ends dlock at once (_exit); from then on it
 * fires the acquire's cancel (dlock_cancel_fire, async-signal-safe), the
 * acquire gives up its place and returns DLOCK_ECANCELED, and cmd_run()
 * lets go of whatever it holds.  A store that hangs while that happens
 * is given up by a second signal: another one, or the same one a second
 * or more after the first (one SIGHUP may come twice, from the terminal
 * and from the shell).
 *
 * A signal ignored when dlock started is never caught before CMD; nohup's
 * SIGHUP is not while CMD runs either, and CMD starts with it ignored.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "run.h"

static int sigpipe_w = -1;
static pid_t self_pid;

/* Before CMD: the acquire's cancel (never freed: a handler on any thread
 * may fire it until dlock exits), whether the store may hold something
 * of ours (the first acquire has begun), the first signal and when. */
static dlock_cancel *early_cancel;
static int early_held;   /* atomic */
static int early_sig;    /* atomic */
static int64_t early_at; /* atomic: CLOCK_MONOTONIC ms */

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

/* The signals ignored when dlock started (nohup's SIGHUP, a background
 * job's SIGINT and SIGQUIT): whoever started dlock asked for it to go on
 * through them.  They stay ignored before CMD; while it runs nohup's
 * SIGHUP does, and CMD inherits it ignored (run_signals_catch(),
 * run_signals_default()). */
static sigset_t ignored;

static void note_ignored(int sig, void *arg)
{
    struct sigaction old;

    (void)arg;
    if (sigaction(sig, NULL, &old) == 0 && !(old.sa_flags & SA_SIGINFO) &&
        old.sa_handler == SIG_IGN)
        sigaddset(&ignored, sig);
}

/* Our handler (arg), except for a signal ignored when dlock started. */
static void catch_unignored(int sig, void *arg)
{
    if (!sigismember(&ignored, sig))
        (void)sigaction(sig, arg, NULL);
}

/* A signal before CMD starts: async-signal-safe only (atomics, _exit,
 * dlock_cancel_fire), and on whichever thread the kernel chose. */
static void on_early_signal(int sig, siginfo_t *si, void *ctx)
{
    int saved = errno, first = 0;
    /* Our own doing (SIGPIPE or SIGXFSZ from a write of ours): ends the
     * wait as its default action would, but never forces the exit. */
    int own = si != NULL && si->si_code <= 0 && si->si_pid == self_pid;

    (void)ctx;
    if (!__atomic_load_n(&early_held, __ATOMIC_SEQ_CST))
        _exit(128 + sig); /* nothing of ours in the store yet */
    if (__atomic_compare_exchange_n(&early_sig, &first, sig, 0,
                                    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
        __atomic_store_n(&early_at, cli_mono_ms(), __ATOMIC_SEQ_CST);
        dlock_cancel_fire(early_cancel);
    } else if (!own &&
               (sig != first ||
                cli_mono_ms() - __atomic_load_n(&early_at, __ATOMIC_SEQ_CST) >=
                    1000)) {
        /* A second one: the store hangs in letting go, and the caller
         * will not wait for it. */
        _exit(128 + sig);
    }
    errno = saved;
}

int run_signals_early(void)
{
    struct sigaction sa;
    int rc;

    /* Called again by dlock elect before it campaigns again (after it
     * yielded): the same cancel, unfired (no signal has come, or dlock
     * would have ended). */
    if (early_cancel != NULL) {
        dlock_cancel_reset(early_cancel);
    } else {
        rc = dlock_cancel_new(&early_cancel);
        if (rc != DLOCK_OK)
            return rc;
    }
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_early_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    /* One handler at a time: the first signal's bookkeeping is done
     * before a second one (on this thread) is looked at. */
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof(caught) / sizeof(caught[0]); i++)
        sigaddset(&sa.sa_mask, caught[i]);
    self_pid = getpid();
    sigemptyset(&ignored);
    for_each_caught(note_ignored, NULL);
    for_each_caught(catch_unignored, &sa);
    return DLOCK_OK;
}

dlock_cancel *run_signals_cancel(void)
{
    __atomic_store_n(&early_held, 1, __ATOMIC_SEQ_CST);
    return early_cancel;
}

int run_signals_got(void)
{
    return __atomic_load_n(&early_sig, __ATOMIC_SEQ_CST);
}

void run_on_lost(dlock_lock *lock, void *payload)
{
    unsigned char b = EV_LOST;

    (void)lock;
    (void)payload;
    (void)!write(sigpipe_w, &b, 1);
}

void run_signals_wake(void)
{
    unsigned char b = EV_WAKE;

    (void)!write(sigpipe_w, &b, 1);
}

/* In CMD (between fork and exec): sigismember() and signal() are
 * async-signal-safe; an ignored one stays so across the exec. */
static void default_one(int sig, void *arg)
{
    (void)arg;
    if (!sigismember(&ignored, sig))
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
    /* While CMD runs, only nohup's SIGHUP stays ignored (and CMD starts
     * with it ignored): a SIGINT or SIGQUIT that a shell ignores in a
     * background job is still caught and, sent by someone, passed on
     * (`kill -QUIT` of a background `dlock run` stops CMD, cli-*). */
    if (sigismember(&ignored, SIGHUP)) {
        sigemptyset(&ignored);
        sigaddset(&ignored, SIGHUP);
    } else {
        sigemptyset(&ignored);
    }
    for_each_caught(catch_unignored, &sa);
}

void run_signals_default(void)
{
    for_each_caught(default_one, NULL);
}
