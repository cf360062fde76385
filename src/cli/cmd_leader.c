/*
 * cmd_leader.c - `dlock leader NAME [--json] [--watch]`: who leads NAME
 * (dlock_leader()), or every change of it (dlock_observe()) until a
 * signal ends the watch.  What the store holds (host, value) was written
 * by whoever can write the store: printed escaped, never raw.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

static const char help[] =
    "usage: dlock [-s URL] leader NAME [--json] [--watch]\n"
    "\n"
    "Show who leads NAME (see dlock elect): its value, host, pid, term and\n"
    "since when.  Exit 0 if NAME has a leader, 1 if not.\n"
    "  --json    one JSON object: \"held\" (false: no leader), \"fence\" (the\n"
    "            term, a string of digits), \"value\" (null: none), \"host\",\n"
    "            \"pid\", \"since_ms\", \"since\"\n"
    "  --watch   print a line (with --json an object per line) now and each\n"
    "            time the leader changes (another term, another value, no\n"
    "            leader), until killed: SIGINT or SIGTERM end it with\n"
    "            128+N; a reader of stdout gone (| head -1) with 141.\n"
    "            A store that cannot be read is a warning on stderr and\n"
    "            the watch goes on (never \"no leader\": it cannot tell).\n"
    "            Changes show within a second on Redis, PostgreSQL and etcd,\n"
    "            within the poll interval (250 ms) on SQLite and MariaDB.\n";

enum { OPT_JSON = 256, OPT_WATCH };

/* `dlock leader`'s options (its parser's, the completions'). */
const struct cli_opt cli_leader_opts[] = {
    {OPT_JSON, "json", NULL, "one JSON object (with --watch one per line)"},
    {OPT_WATCH, "watch", NULL, "a line now and at each change, until killed"},
    {'h', "help", NULL, NULL},
    {0, NULL, NULL, NULL},
};

/* set[0]: --json, set[1]: --watch. */
static int take(void *ctx, int key, const char *a, const char *val)
{
    int *set = ctx;

    (void)a, (void)val;
    set[key == OPT_WATCH] = 1;
    return 0;
}

/* The watch's cancel, fired by SIGINT/SIGTERM/SIGHUP (async-signal-safe:
 * dlock_cancel_fire() is, as run_signals.c relies on). */
static dlock_cancel *watch_cancel;
static volatile sig_atomic_t watch_sig;

static void on_watch_signal(int sig)
{
    if (watch_sig == 0)
        watch_sig = sig;
    dlock_cancel_fire(watch_cancel);
}

static void print_text(const dlock_info *in)
{
    char when[64];

    cli_print_safe(stdout, in->name);
    if (!in->held) {
        fputs(": no leader\n", stdout);
        return;
    }
    fputs(": led by ", stdout);
    cli_print_safe(stdout, in->host[0] ? in->host : "?");
    printf(" pid %lld since %s, term %llu, ", (long long)in->pid,
           cli_time_utc(in->since_ms, when, sizeof(when)),
           (unsigned long long)in->fence);
    if (in->value != NULL) {
        fputs("value '", stdout);
        cli_print_safe(stdout, in->value);
        fputs("'\n", stdout);
    } else {
        fputs("no value\n", stdout);
    }
}

static void print_json(const dlock_info *in)
{
    char when[64];

    cli_json_info_open(stdout, in);
    fputs(",\"since\":", stdout);
    if (in->held && cli_time_ok(in->since_ms))
        cli_json_string(stdout, cli_time_utc(in->since_ms, when, sizeof(when)));
    else
        fputs("null", stdout);
    fputs(",\"value\":", stdout);
    if (in->held && in->value != NULL)
        cli_json_string(stdout, in->value);
    else
        fputs("null", stdout);
    fputs("}\n", stdout);
}

/* What the watch printed last: after the store came back, observe()
 * reports at once what is true then, which may be no change. */
struct watch {
    int json;
    int printed;
    int held;
    uint64_t fence;
    char *value;
    /* Reads the store answered (each observe()'s first is reported). */
    unsigned long reads;
};

static int on_change(const dlock_info *in, void *payload)
{
    struct watch *w = payload;
    const char *v = in->held ? in->value : NULL;

    w->reads++;
    if (w->printed && w->held == (in->held != 0) &&
        (!in->held ||
         (w->fence == in->fence && (w->value == NULL) == (v == NULL) &&
          (v == NULL || strcmp(w->value, v) == 0))))
        return 0;
    free(w->value);
    w->value = v != NULL ? strdup(v) : NULL;
    w->printed = 1;
    w->held = in->held != 0;
    w->fence = in->fence;
    if (w->json)
        print_json(in);
    else
        print_text(in);
    /* One line at a time to whoever reads (a pipe is block-buffered). */
    if (fflush(stdout) != 0)
        return 1;
    return 0;
}

/* The reader of stdout gone (`dlock leader --watch | head -1`): a pipe's
 * write end polls POLLERR, a socket's or a hung-up terminal's POLLHUP.
 * The watch writes only on a change, so without this it would wait for
 * the next change (maybe never) to learn it by SIGPIPE: the pipeline
 * would hang.  Ends the watch as SIGPIPE would (128+SIGPIPE).  events 0:
 * a regular file or /dev/null never wakes it. */
static void *stdout_gone(void *arg)
{
    struct pollfd p = {STDOUT_FILENO, 0, 0};

    (void)arg;
    for (;;) {
        int n = poll(&p, 1, -1);

        if (n > 0 && (p.revents & POLLNVAL))
            return NULL; /* closed: the next write fails and says so */
        if (n > 0 && (p.revents & (POLLERR | POLLHUP))) {
            if (watch_sig == 0)
                watch_sig = SIGPIPE;
            dlock_cancel_fire(watch_cancel);
            return NULL;
        }
        if (n < 0 && errno != EINTR)
            return NULL;
    }
}

/* Sleep ms unless a signal ends the watch first. */
static void nap(int64_t ms)
{
    while (ms > 0 && watch_sig == 0) {
        int step = ms < 50 ? (int)ms : 50;

        (void)poll(NULL, 0, step);
        ms -= step;
    }
}

static int watch(dlock_store *store, const char *name, int json)
{
    struct watch w = {json, 0, 0, 0, NULL, 0};
    struct sigaction sa;
    pthread_t gone;
    sigset_t all, old;
    int64_t backoff = 250;
    int rc, gone_ok;

    rc = dlock_cancel_new(&watch_cancel);
    if (rc != DLOCK_OK)
        return cli_fail(rc, "leader");
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_watch_signal;
    sigemptyset(&sa.sa_mask);
    (void)sigaction(SIGINT, &sa, NULL);
    (void)sigaction(SIGTERM, &sa, NULL);
    (void)sigaction(SIGHUP, &sa, NULL);
    /* The signals stay the main thread's (the thread is started with all
     * of them blocked). */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    gone_ok = pthread_create(&gone, NULL, stdout_gone, NULL) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    for (;;) {
        unsigned long reads = w.reads;

        rc = dlock_observe(store, name, on_change, &w, watch_cancel);
        if (watch_sig != 0 || rc == DLOCK_ECANCELED)
            break;
        if (rc == DLOCK_EUNAVAIL || rc == DLOCK_ESTORE) {
            /* Cannot tell is not "no leader": say so, look again.  The
             * back-off grows while the store cannot be read at all, and
             * starts again once it was: a subscription broken now and
             * then (a failover a day) must not leave every later one 5 s
             * blind. */
            if (w.reads != reads)
                backoff = 250;
            cli_warn("leader: warning: cannot read the leader of '%s' (%s); "
                     "trying again in %lld ms",
                     name, dlock_errmsg(), (long long)backoff);
            nap(backoff);
            if (watch_sig != 0)
                break;
            backoff = backoff * 2 > 5000 ? 5000 : backoff * 2;
            continue;
        }
        break;
    }
    if (gone_ok) {
        (void)pthread_cancel(gone); /* poll() is a cancellation point */
        (void)pthread_join(gone, NULL);
    }
    free(w.value);
    if (watch_sig != 0)
        rc = 128 + watch_sig;
    else if (rc == 1)
        rc = EXIT_INTERNAL; /* stdout could not be written */
    else
        rc = cli_fail(rc, "leader");
    dlock_cancel_free(watch_cancel);
    watch_cancel = NULL;
    return rc;
}

int cmd_leader(const struct cli *c, int argc, char **argv)
{
    const char *name = NULL;
    dlock_store *store;
    dlock_info *info = NULL;
    int json = 0, watching = 0, rc;

    static const struct cli_args args = {
        "leader", cli_leader_opts, "NAME", "NAME", 1, help};
    int set[2] = {0, 0};

    rc = cli_args_parse(&args, argc, argv, take, set, &name);
    if (rc != 0)
        return rc < 0 ? 0 : rc;
    json = set[0];
    watching = set[1];
    rc = cli_open(c, &store);
    if (rc != 0)
        return rc;
    if (watching) {
        rc = watch(store, name, json);
    } else {
        rc = dlock_leader(&info, store, name);
        if (rc != DLOCK_OK) {
            rc = cli_fail(rc, "leader");
        } else {
            if (json)
                print_json(info);
            else
                print_text(info);
            rc = info->held ? 0 : EXIT_BUSY;
        }
        dlock_info_free(info);
    }
    dlock_store_close(store);
    return rc;
}
