/*
 * run.h - the pieces of `dlock run` (cmd_run.c) shared between its files:
 * option parsing (run_opts.c), the self-pipe signals and loss arrive on
 * (run_signals.c), starting CMD (run_spawn.c), the processes CMD started
 * (run_procs.c), watching CMD and the lease (run_supervise.c) and the
 * run records behind --once / --once-per (run_records.c).  Private to
 * src/cli: the command's interface is cli.h.
 */
#ifndef DLOCK_CLI_RUN_H
#define DLOCK_CLI_RUN_H

#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "cli.h"

/* run_opts.c: `dlock run`'s options, one entry each, ended by a NULL
 * name (getopt_long's table, the help and shell completions come from
 * it), and its --help (the text around the table's). */
extern const struct cli_opt cli_run_opts[];
void cli_run_usage(FILE *f);
/* `dlock elect`'s, the same way. */
extern const struct cli_opt cli_elect_opts[];
void cli_elect_usage(FILE *f);

/* The monotonic clock in ms: waits, the lease's deadlines. */
static inline int64_t run_now_ms(void)
{
    return cli_mono_ms();
}

/* --- run_signals.c: the self-pipe ----------------------------------- */

/* Byte codes on the self-pipe.  Signals: the number, with 0x80 set when
 * another process sent it (kill(2)); without, the kernel did (a terminal's
 * ^C, which the child, in the same process group, already got) or we did
 * (SIGPIPE or SIGXFSZ from our own write). */
#define EV_CHILD 'C'
#define EV_LOST 'L'
#define EV_WAKE 'W'

/* The pipe's write end: where the handlers and run_on_lost() write. */
void run_signals_pipe(int wfd);
/* Before CMD: every signal in the caught set ends dlock with 128+N (see
 * run_signals.c): at once, until run_signals_cancel() is first called.
 * DLOCK_OK or dlock_cancel_new()'s error. */
int run_signals_early(void);
/* The cancel every acquire is given (opts.cancel): the store may hold
 * something of ours from the call on, so a signal fires it instead of
 * ending dlock at once. */
dlock_cancel *run_signals_cancel(void);
/* The first signal that came before CMD (0: none). */
int run_signals_got(void);
/* Catch SIGCHLD and every signal in the caught set onto the self-pipe. */
void run_signals_catch(void);
/* In CMD's child before exec (async-signal-safe): the caught set back to
 * SIG_DFL. */
void run_signals_default(void);
/* The lock's on_lost callback (the renew thread): EV_LOST on the pipe. */
void run_on_lost(dlock_lock *lock, void *payload);
/* Wake run_supervise()'s loop (a --replace look found a request). */
void run_signals_wake(void);

/* --- run_spawn.c: starting CMD -------------------------------------- */

/* mark_cloexec 0: note the fds open now (the user's, for CMD); 1: set
 * close-on-exec on every fd opened since (store connections). */
void run_scan_fds(int mark_cloexec);
/* environ without DLOCK_NAME/FENCE/STORE, plus ours; free with
 * run_free_env(). */
char **run_child_env(const char *name, uint64_t fence, const char *url,
                     const char *leader_value);
void run_free_env(char **env);
/* Can CMD[0] be run, as execvp() would find it (PATH; a name with '/'
 * as it is; a "#!" interpreter there)?  0, or 127 (not found) / 126
 * (not executable) after saying why, naming the lock NAME; dashdash: CMD
 * followed "--" (else a NAME that took CMD's place gets a hint).  Before
 * the lock: a CMD that cannot run takes no lock and records no run. */
int run_check_cmd(const char *name, char **cmd, int dashdash);
/* Start CMD under the lock name; returns its pid, or -(exit code) on
 * failure (said, naming the lock). */
pid_t run_spawn(const char *name, char **cmd, char **env);

/* --- run_procs.c: what CMD started ---------------------------------- */

/* Reap every child of dlock that has exited; child if CMD was among them,
 * its status in *status. */
pid_t run_reap_children(pid_t child, int *status);
/* CMD has exited and the lock is lost: SIGKILL every descendant left
 * until none is, or until deadline (run_now_ms()). */
void run_kill_descendants(int rfd, int64_t deadline);
/* SIGKILL child and every process under it (a health check overrun). */
void run_kill_tree(pid_t child);
/* sig to CMD (its group if it has its own) and every process it started. */
void run_signal_cmd(pid_t child, int sig);

/* --- run_supervise.c: while CMD runs -------------------------------- */

/* How long before the lease end CMD must be gone (SIGKILL): a twentieth
 * of the lease, 20 ms..1 s.  Also what the release keeps of the lease
 * when the end record is tried again (run_records.c). */
int64_t run_kill_margin(int64_t ttl_ms);

/* Wait for CMD, forwarding signals and stopping it before the lease
 * ends; its status as a shell reports it, *lost, *raw (waitpid()'s),
 * *timedout (stopped by --max-runtime). */
int run_supervise(pid_t child, int rfd, const struct run_opts *o,
                  dlock_lock *lock, int *lost, int *timedout, int *raw);
/* CMD has exited under the lock: release it; the exit code.
 * unreachable: the end record met an outage (run_end()'s *outage). */
int run_release_after(dlock_lock *lock, const struct run_opts *o, int status,
                      int unreachable);

/* --- run_elect.c: what `dlock elect` adds ---------------------------- */

/* What a candidate's marker lock adds to NAME: "dlock.candidates/",
 * "/", up to 4 digits of priority, "/" and 16 hex digits. */
#define ELECT_MARKER_EXTRA (17 + 1 + 4 + 1 + 16)

/* Why a leader stepped down (run_elect_check(), run_elect_stepped()). */
#define RUN_YIELD 1     /* a candidate of higher priority campaigns */
#define RUN_UNHEALTHY 2 /* --health-cmd failed --health-fails times */

/* The campaign: the marker of o's priority, then dlock_elect() with
 * opts (wait_ms: the rest of -w).  Priority 0 waits for a signal or the
 * end of -w (DLOCK_BUSY).  As dlock_acquire() returns. */
int run_campaign(dlock_store *store, const struct run_opts *o,
                 dlock_options *opts, dlock_lock **lock);
/* It leads now and CMD starts with env (the health command gets it);
 * the looks for a candidate of higher priority start, on a thread of
 * their own (a look is a store call: never in run_supervise()'s loop). */
void run_elect_leading(char **env, const struct run_opts *o);
/* Its term's CMD has ended: no more looks; join: wait for one under way
 * to end (else run_elect_end() does). */
void run_elect_unlead(int join);
/* Called by run_supervise() (now: run_now_ms()): 0, or RUN_YIELD /
 * RUN_UNHEALTHY once (the leader steps down); *next is when to call
 * again.  0 and *next untouched for a plain run. */
int run_elect_check(const struct run_opts *o, int64_t now, int64_t *next);
int run_elect_stepped(void);
/* Let the marker go (at the end, or before exit). */
void run_elect_end(void);
/* The health command running (0: none) and its waitpid() status (-1
 * until reaped by run_reap_children()). */
extern pid_t run_health_pid;
extern int run_health_status;

/* --- run_replace.c: --replace, a run that takes over ---------------- */

/* What "dlock.replace/" adds to NAME (the request's lock). */
#define REPLACE_MARKER_EXTRA 14
/* Before NAME's acquire: hold the request (within opts->wait_ms, which
 * is left as the rest of the wait).  As dlock_acquire() returns. */
int run_replace_request(dlock_store *store, const struct run_opts *o,
                        dlock_options *opts);
/* Let the request go (NAME held, or the wait given up). */
void run_replace_done(void);
/* NAME is held and CMD starts: look for requests from now on, on a
 * thread of its own (a look is a store call, which may take the URL's
 * timeout: never in run_supervise()'s loop); a request seen wakes the
 * loop through the self-pipe. */
void run_replace_holding(dlock_store *store, const struct run_opts *o);
/* CMD has ended: no more looks (run_replace_stop()), and one under way
 * waited for (run_replace_end(), before the store is closed). */
void run_replace_stop(void);
void run_replace_end(void);
/* Called by run_supervise(): 1 once a --replace run asks for NAME (the
 * holder steps down), else 0; no store call.  *next is left untouched. */
int run_replace_check(const struct run_opts *o, int64_t now, int64_t *next);
/* Who asked: "HOST pid N", escaped. */
const char *run_replace_who(void);

/* --- run_records.c: the run records (--once, --once-per) ------------ */

/* -q given (no busy or skip lines): set by cmd_run.c. */
extern int run_quiet;

/* Someone else holds name (a busy --once / --once-per run): say who. */
void run_say_busy(dlock_store *store, const char *name);
/* A shared or semaphore run's suspension check (it records no run): -1
 * to go on, else the exit code (a skip, said; or a failure: a store that
 * cannot tell does not run CMD). */
int run_suspended(const struct run_opts *o, dlock_store *store);
/* Decide and record the run's start: -1 to go on, else the exit code. */
int run_begin(const struct run_opts *o, dlock_store *store, dlock_lock *lock,
              int *recorded, struct cli_run_report *rep);
/* Record how the run ended, trying again through an outage while the
 * lease lasts (rfd: the self-pipe, for a signal that stops the tries);
 * dlock_run_end()'s last rc, *outage set if a try could not reach the
 * store. */
int run_end(const struct run_opts *o, dlock_lock *lock, int rfd, int raw,
            int lost, int timedout, int *outage);

#endif
