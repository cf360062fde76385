"""The numbers of dlock.h the binding uses: return codes (dlock_rc),
limits, the library's SONAME and the run results (dlock_run_result)."""

# dlock_rc, as in dlock.h.
OK = 0
BUSY = -1
LOST = -2
EXPIRING = -3
EINVAL = -4
EUNAVAIL = -5
ESTORE = -6
ENOTSUP = -7
ENOMEM = -8
ECANCELED = -9

WAIT_FOREVER = -1
NAME_MAX = 1024
LIMIT_MAX = 1024
TTL_MIN = 0.1           # seconds (DLOCK_TTL_MIN_MS)
DEFAULT_TTL = 30.0      # seconds (DLOCK_DEFAULT_TTL_MS)
_OPTIONS_VERSION = 3    # the dlock_options layout declared below
SONAME = "libdlock.so.0.2"
VALUE_MAX = 4096        # DLOCK_VALUE_MAX: bytes of a leader's value
OBSERVE_POLL = 0.25     # seconds (DLOCK_OBSERVE_POLL_MS), polled stores

# dlock_run_result, as in dlock.h ("Runs").
RUN_RUNNING = 0
RUN_EXITED = 1
RUN_SIGNALED = 2
RUN_LOST = 3
RUN_ABANDONED = 4
RUN_TIMEDOUT = 5        # stopped by its time limit (dlock run --max-runtime)
RUN_SUSPENDED = 6       # never stored: run_begin()'s last when it skipped
                        # because the name is suspended (Store.suspend())
RUNS_KEPT = 20          # DLOCK_RUNS_KEPT: runs the store keeps per name
                        # unless Store.keep_runs() says otherwise
RUNS_KEPT_MAX = 10000   # DLOCK_RUNS_KEPT_MAX: the most Store.keep_runs() sets
_RUN_RESULTS = {
    RUN_RUNNING: "running", RUN_EXITED: "exited", RUN_SIGNALED: "signaled",
    RUN_LOST: "lost", RUN_ABANDONED: "abandoned", RUN_TIMEDOUT: "timedout",
    RUN_SUSPENDED: "suspended",
}
REASON_MAX = 1024       # DLOCK_REASON_MAX: bytes of a suspension's reason
