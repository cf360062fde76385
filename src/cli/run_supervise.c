/*
 * run_supervise.c - while CMD runs under the lock: signals passed on to
 * it, CMD stopped (SIGTERM, SIGKILL) before the lease can end unconfirmed
 * or as soon as the lock is lost, and once it has exited the release and
 * the verdict: its own status, or 75 when the lock was lost first.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run.h"

/* When CMD must be gone: SIGKILL this long before the lease ends, so
 * that the kill has taken effect (and the kernel has reaped what it
 * kills) before the store can give the lock to someone else.  A twentieth
 * of the lease, between 20 ms and 1 s. */
int64_t run_kill_margin(int64_t ttl_ms)
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

/* Wait for the child, forwarding signals and acting on loss.  Returns the
 * child's exit status as a shell would report it; *lost is set if the lock
 * was lost meanwhile, or could not be renewed in time for CMD to go on.
 *
 * CMD is gone by the lease end, whatever the store is doing: when the
 * lease left (as this process counts it, dlock_lease_left()) falls to the
 * grace period plus the kill margin without a renewal having confirmed
 * more, CMD gets SIGTERM, and SIGKILL at the kill margin before the lease
 * ends.  A lock found lost sooner (broken by an administrator, taken
 * over) gets SIGTERM at once and SIGKILL after the grace period.  So
 * does CMD that has run --max-runtime (*timedout), as timeout(1) does
 * with --kill-after. */
int run_supervise(pid_t child, int rfd, const struct run_opts *o,
                  dlock_lock *lock, int *lost, int *timedout, int *raw)
{
    int64_t grace = grace_of(o), margin = run_kill_margin(o->ttl_ms);
    int64_t kill_at = -1;
    int64_t time_up =
        o->max_runtime_ms > 0 ? run_now_ms() + o->max_runtime_ms : -1;
    /* CMD's own process group, if it has one (not a terminal's job). */
    pid_t group = getpgid(child) == child ? child : 0;

    for (;;) {
        struct pollfd p = {rfd, POLLIN, 0};
        int64_t timeout = 60000, now = run_now_ms();
        int status;
        unsigned char buf[64];
        ssize_t n;
        pid_t w;

        if (time_up >= 0 && !*lost && !*timedout) {
            if (now >= time_up) {
                *timedout = 1;
                kill_at = now + grace;
                cli_err("run: '%s' ran its --max-runtime (%lld ms); stopping "
                        "the command (SIGTERM, SIGKILL in %lld ms)",
                        o->name, (long long)o->max_runtime_ms,
                        (long long)grace);
                run_signal_cmd(child, SIGTERM);
            } else if (time_up - now < timeout) {
                timeout = time_up - now;
            }
        }
        if (!*lost) {
            int64_t left = dlock_lease_left(lock);

            if (left <= grace + margin) {
                int64_t at = left > 0 ? now + left - margin : now + grace;

                *lost = 1;
                /* Stopping for the time limit already: the sooner. */
                kill_at = kill_at >= 0 && kill_at < at ? kill_at : at;
                if (left > 0)
                    cli_err("run: lock '%s' will be lost in %lld ms: no "
                            "renewal has confirmed its lease; stopping the "
                            "command (SIGTERM, SIGKILL in %lld ms)",
                            o->name, (long long)left,
                            (long long)(kill_at - now));
                else
                    cli_err("run: lock '%s' was lost; stopping the command "
                            "(SIGTERM, SIGKILL in %lld ms)",
                            o->name, (long long)grace);
                run_signal_cmd(child, SIGTERM);
            } else {
                /* Look again when it would be time, unless a renewal has
                 * confirmed more by then. */
                if (left - grace - margin < timeout)
                    timeout = left - grace - margin;
            }
        }
        if (!*lost) {
            /* dlock elect: a leader steps down (a candidate of higher
             * priority, failed health checks) as it stops CMD on a
             * loss: SIGTERM, SIGKILL after the grace period. */
            int64_t next = -1;
            int why = run_elect_check(o, now, &next);

            if (why != 0) {
                *lost = 1;
                kill_at = now + grace;
                cli_notice("elect: stepping down from '%s' (%s); stopping the "
                           "command (SIGTERM, SIGKILL in %lld ms)",
                           o->name,
                           why == RUN_YIELD ? "a candidate of higher priority"
                                            : "failed health checks",
                           (long long)grace);
                run_signal_cmd(child, SIGTERM);
            } else if (next >= 0 && next - now < timeout) {
                timeout = next > now ? next - now : 0;
            }
        }
        if (!*lost && !*timedout) {
            /* --replace: a newer run of the job asks for it.  Not while
             * CMD is being stopped for its time limit already: the
             * release follows as soon, and a step-down now would move
             * that SIGKILL a whole grace period later (and record the
             * run lost, exit 75, instead of timed out). */
            int64_t next = -1;

            if (run_replace_check(o, now, &next)) {
                *lost = 1;
                kill_at = now + grace;
                cli_err("run: '%s' is taken over by a --replace run (%s); "
                        "stopping the command (SIGTERM, SIGKILL in %lld ms)",
                        o->name, run_replace_who(), (long long)grace);
                run_signal_cmd(child, SIGTERM);
            } else if (next >= 0 && next - now < timeout) {
                timeout = next > now ? next - now : 0;
            }
        }
        if (kill_at >= 0) {
            if (kill_at <= now) {
                run_signal_cmd(child, SIGKILL);
                kill_at = -1;
            } else if (kill_at - now < timeout) {
                timeout = kill_at - now;
            }
        }
        w = run_reap_children(child, &status);
        if (w == child) {
            /* Stopped for the lock: what CMD started goes with it.  Its
             * process group first, which needs no /proc (a sandbox, a
             * chroot without it: the walk then finds nothing); the
             * group outlives CMD while a member does, so its id is
             * nobody else's. */
            if (*lost || *timedout) {
                if (group > 0)
                    (void)kill(-group, SIGKILL);
                run_kill_descendants(rfd, run_now_ms() + grace + 1000);
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
             * now, which the top of the loop acts on; EV_WAKE: a --replace
             * look found a request (run_replace_check()). */
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
int run_release_after(dlock_lock *lock, const struct run_opts *o, int status,
                      int unreachable)
{
    int64_t left = dlock_lease_left(lock);
    int r = dlock_release(lock), gone = 0;

    /* The run's end met an outage just before (run_end() tried it again
     * while the lease lasted): a session store then knows its session is
     * gone and answers the release LOST without asking anyone, and a
     * lease that ran out meanwhile ran out after the command ended (it
     * was held when CMD was reaped, or run_supervise() would have said
     * lost).  Either is "could not confirm" (R11), not a loss seen
     * before the command ended. */
    if (unreachable && (r == DLOCK_LOST || left == 0)) {
        /* A LOST then cannot be dated: the lock went after its last
         * renewal, before or after CMD ended, and the warning says so
         * rather than "ended under the lock". */
        gone = r == DLOCK_LOST;
        r = DLOCK_EUNAVAIL;
        left = 1;
    }
    if (left == 0 || r == DLOCK_LOST) {
        cli_err("run: lock '%s' was lost before the command ended%s%s", o->name,
                r == DLOCK_LOST ? ": " : "",
                r == DLOCK_LOST ? dlock_errmsg() : "");
        return EXIT_LOST;
    }
    if (gone)
        cli_warn("run: warning: the release of '%s' could not be confirmed "
                 "(%s): found lost after the store had been unreachable as "
                 "the command ended, it went after its last renewal, before "
                 "or after the command ended",
                 o->name, dlock_errmsg());
    else if (r != DLOCK_OK)
        cli_warn("run: warning: the command ended under the lock, but the "
                 "release of '%s' could not be confirmed (%s); the lock "
                 "goes when its lease runs out, at most %lld ms from now",
                 o->name, dlock_errmsg(), (long long)o->ttl_ms);
    return status;
}
