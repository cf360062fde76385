/*
 * fleet.c - the Prometheus text exposition (format 0.0.4) of every name
 * under a prefix, read from the store: what `dlock metrics` prints and an
 * HTTP exporter serves.  Where metrics.c keeps one host's view of its own
 * runs in a file, this reads what every host recorded: each name's last
 * run (dlock_last_runs()), its last successful run (dlock_history()),
 * who holds it now with its fence (dlock_list(), dlock_status()), and
 * whether it is suspended (dlock_suspensions()).
 *
 * A scrape reads the whole answer before writing a line: a store that
 * fails midway gives an error, never half a fleet that would look like
 * jobs gone missing.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fleet.h"

#define PREFIX "dlock_job_"
#define VALUE_LEN 32

/* One name and what the store says of it. */
struct job {
    char name[DLOCK_NAME_MAX + 1];
    int has_run; /* last: its last recorded run */
    dlock_run last;
    int has_success; /* its last run that exited 0 (among the kept ones) */
    int64_t success_ms;
    char success_host[256];
    int has_info; /* what dlock_list() / dlock_status() said */
    int held;
    unsigned holders;
    uint64_t fence;
    int has_susp; /* the store keeps suspensions (a 0 is known) */
    int suspended;
    int64_t susp_ms;
    int skip; /* not a lock name (planted by hand): no series */
};

struct scrape {
    struct job *jobs;
    size_t n, cap;
    size_t nruns;     /* jobs[0..nruns): from the last runs, sorted by name */
    int64_t deadline; /* CLOCK_MONOTONIC ms; 0: none */
    int overrun;      /* the deadline passed before the reads were done */
};

/* Before each read after the first: has the whole scrape's deadline
 * passed?  (Each read is bounded by the store's ?timeout=; a fleet of
 * many names read one by one is bounded here.) */
static int overrun(struct scrape *s)
{
    if (s->deadline != 0 && cli_mono_ms() > s->deadline)
        s->overrun = 1;
    return s->overrun;
}

static struct job *job_add(struct scrape *s, const char *name)
{
    struct job *j;

    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 32;
        struct job *v = realloc(s->jobs, cap * sizeof(*v));

        if (v == NULL)
            return NULL;
        s->jobs = v;
        s->cap = cap;
    }
    j = &s->jobs[s->n++];
    memset(j, 0, sizeof(*j));
    snprintf(j->name, sizeof(j->name), "%s", name);
    /* A label value is UTF-8: a name that is not cannot be said (and
     * is no name dlock writes). */
    j->skip = !cli_utf8_valid(name);
    return j;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct job *)a)->name, ((const struct job *)b)->name);
}

static void take_info(struct job *j, const dlock_info *info)
{
    j->has_info = 1;
    j->held = info->held;
    j->holders = info->holders;
    j->fence = info->fence;
}

static int keep_held(const dlock_info *info, void *payload)
{
    struct scrape *s = payload;
    struct job key, *j;

    snprintf(key.name, sizeof(key.name), "%s", info->name);
    j = s->nruns == 0
            ? NULL
            : bsearch(&key, s->jobs, s->nruns, sizeof(*s->jobs), by_name);
    if (j == NULL && (j = job_add(s, info->name)) == NULL)
        return DLOCK_ENOMEM;
    take_info(j, info);
    return 0;
}

static int find_success(const dlock_run *run, void *payload)
{
    struct job *j = payload;

    if (run->result != DLOCK_RUN_EXITED || run->status != 0 ||
        !cli_time_ok(run->end_ms))
        return 0;
    j->has_success = 1;
    j->success_ms = run->end_ms;
    snprintf(j->success_host, sizeof(j->success_host), "%s", run->host);
    return 1; /* the newest is the one */
}

/* What each name of the runs lacks: its fence (not held now: only
 * dlock_status() says it) and its last success. */
static int fill(dlock_store *store, struct job *j, const char **what)
{
    int rc;

    if (!j->has_info) {
        dlock_info *info = NULL;

        *what = "cannot read the status";
        rc = dlock_status(&info, store, j->name);
        if (rc == DLOCK_OK)
            take_info(j, info);
        dlock_info_free(info);
        if (rc == DLOCK_EINVAL) {
            /* A run record under a name dlock never writes (planted
             * by hand): not a reason to say nothing of the others. */
            j->skip = 1;
            return DLOCK_OK;
        }
        if (rc != DLOCK_OK)
            return rc;
    }
    /* The last run succeeded: no need to read the history. */
    if (find_success(&j->last, j) == 1)
        return DLOCK_OK;
    *what = "cannot read the history";
    rc = dlock_history(store, j->name, 0, find_success, j);
    return rc == 1 || rc == DLOCK_ENOTSUP ? DLOCK_OK : rc;
}

/* The suspensions under prefix into s (sorted by name, as both are): a
 * suspended name neither held nor run gets a job of its own. */
static int suspensions(dlock_store *store, const char *prefix, struct scrape *s,
                       const char **what)
{
    dlock_suspension *v;
    size_t n, had = s->n;
    int rc, kept;

    *what = "cannot read the suspensions";
    rc = cli_suspensions(store, prefix, &v, &n, &kept);
    if (rc != DLOCK_OK)
        return rc;
    if (!kept)
        return DLOCK_OK; /* no series: a 0 would be a claim */
    for (size_t i = 0; i < s->n; i++)
        s->jobs[i].has_susp = 1;
    for (size_t i = 0; rc == DLOCK_OK && i < n; i++) {
        struct job key, *j;

        snprintf(key.name, sizeof(key.name), "%s", v[i].name);
        j = had == 0 ? NULL
                     : bsearch(&key, s->jobs, had, sizeof(*s->jobs), by_name);
        if (j == NULL && (j = job_add(s, v[i].name)) == NULL) {
            rc = DLOCK_ENOMEM;
            break;
        }
        j->has_susp = 1;
        j->suspended = 1;
        j->susp_ms = v[i].since_ms;
        if (!j->has_info && !j->skip && overrun(s)) {
            rc = DLOCK_EUNAVAIL;
        } else if (!j->has_info && !j->skip) {
            dlock_info *info = NULL;

            *what = "cannot read the status";
            rc = dlock_status(&info, store, j->name);
            if (rc == DLOCK_OK)
                take_info(j, info);
            dlock_info_free(info);
            if (rc == DLOCK_EINVAL) {
                j->skip = 1;
                rc = DLOCK_OK;
            }
        }
    }
    free(v);
    if (rc == DLOCK_OK && s->n > had)
        qsort(s->jobs, s->n, sizeof(*s->jobs), by_name);
    return rc;
}

/* The store's answer for every name under prefix into s, sorted by
 * name; DLOCK_OK or the failing call's rc (*what: which). */
static int gather(dlock_store *store, const char *prefix, struct scrape *s,
                  const char **what)
{
    dlock_run *runs;
    size_t n;
    int rc;

    *what = "cannot read the last runs";
    rc = cli_last_runs(store, prefix, &runs, &n); /* sorted by name */
    for (size_t i = 0; rc == DLOCK_OK && i < n; i++) {
        struct job *j = job_add(s, runs[i].name);

        if (j == NULL) {
            rc = DLOCK_ENOMEM;
        } else {
            j->has_run = 1;
            j->last = runs[i];
        }
    }
    free(runs);
    if (rc != DLOCK_OK)
        return rc;
    s->nruns = s->n;
    *what = "cannot list the held locks";
    rc = dlock_list(store, prefix, keep_held, s);
    if (rc != DLOCK_OK)
        return rc;
    for (size_t i = 0; i < s->nruns; i++) {
        if (overrun(s))
            return DLOCK_EUNAVAIL;
        if (!s->jobs[i].skip && (rc = fill(store, &s->jobs[i], what)) != 0)
            return rc;
    }
    if (s->n > 1) /* the held names without runs among the others */
        qsort(s->jobs, s->n, sizeof(*s->jobs), by_name);
    return suspensions(store, prefix, s, what);
}

/* --- The families ---------------------------------------------------- */

/* One series' value of a job: 0 for none; else its text in v (exact:
 * a fence to the last digit, a time to the millisecond), and *host
 * (NULL: no host label) and *result (NULL: no result label). */
typedef int (*value_fn)(const struct job *j, char v[VALUE_LEN],
                        const char **host, const char **result);

/* A time in ms as seconds with three decimals. */
static void seconds(char v[VALUE_LEN], int64_t ms)
{
    snprintf(v, VALUE_LEN, "%lld.%03d", (long long)(ms / 1000),
             (int)(ms % 1000));
}

static int v_running(const struct job *j, char v[VALUE_LEN], const char **h,
                     const char **r)
{
    (void)h, (void)r;
    snprintf(v, VALUE_LEN, "%d", j->held ? 1 : 0);
    return j->has_info;
}

static int v_holders(const struct job *j, char v[VALUE_LEN], const char **h,
                     const char **r)
{
    (void)h, (void)r;
    snprintf(v, VALUE_LEN, "%u", j->held ? j->holders : 0);
    return j->has_info;
}

static int v_fence(const struct job *j, char v[VALUE_LEN], const char **h,
                   const char **r)
{
    (void)h, (void)r;
    snprintf(v, VALUE_LEN, "%llu", (unsigned long long)j->fence);
    return j->has_info && j->fence > 0; /* 0: unknown */
}

static int v_start(const struct job *j, char v[VALUE_LEN], const char **h,
                   const char **r)
{
    (void)r;
    seconds(v, j->last.start_ms);
    *h = j->last.host;
    return j->has_run && cli_time_ok(j->last.start_ms);
}

static int v_end(const struct job *j, char v[VALUE_LEN], const char **h,
                 const char **r)
{
    (void)r;
    seconds(v, j->last.end_ms);
    *h = j->last.host;
    return j->has_run && cli_time_ok(j->last.end_ms);
}

/* What the last run ended with as a shell says it: the exit status, or
 * -1 for a signal (as the metrics file says it); what a lost or timed
 * out run ended with; none while running or when abandoned. */
static int v_exit(const struct job *j, char v[VALUE_LEN], const char **h,
                  const char **r)
{
    (void)r;
    *h = j->last.host;
    switch (j->last.result) {
    case DLOCK_RUN_EXITED:
    case DLOCK_RUN_LOST:
    case DLOCK_RUN_TIMEDOUT:
        snprintf(v, VALUE_LEN, "%d", j->last.status);
        break;
    case DLOCK_RUN_SIGNALED:
        snprintf(v, VALUE_LEN, "-1");
        break;
    default:
        return 0;
    }
    return j->has_run;
}

static int v_result(const struct job *j, char v[VALUE_LEN], const char **h,
                    const char **r)
{
    snprintf(v, VALUE_LEN, "1");
    *h = j->last.host;
    *r = cli_run_word(j->last.result);
    return j->has_run;
}

static int v_success(const struct job *j, char v[VALUE_LEN], const char **h,
                     const char **r)
{
    (void)r;
    seconds(v, j->success_ms);
    *h = j->success_host;
    return j->has_success;
}

static int v_suspended(const struct job *j, char v[VALUE_LEN], const char **h,
                       const char **r)
{
    (void)h, (void)r;
    snprintf(v, VALUE_LEN, "%d", j->suspended);
    return j->has_susp;
}

static int v_suspended_since(const struct job *j, char v[VALUE_LEN],
                             const char **h, const char **r)
{
    (void)h, (void)r;
    seconds(v, j->susp_ms);
    return j->suspended && cli_time_ok(j->susp_ms);
}

struct family {
    const char *name;
    const char *help;
    value_fn value;
};

/* In the order written.  A gauge more is one entry and its value_fn. */
static const struct family families[] = {
    {PREFIX "running",
     "1 while the lock NAME is held (by a dlock run or any holder), else 0.",
     v_running},
    {PREFIX "holders",
     "How many hold NAME now (more than 1: shared or a semaphore).", v_holders},
    {PREFIX "fence", "The highest fence handed out for NAME.", v_fence},
    {PREFIX "last_start_timestamp_seconds",
     "When the last recorded run of NAME started (Unix time, the store's "
     "clock), on host.",
     v_start},
    {PREFIX "last_end_timestamp_seconds",
     "When the last recorded run of NAME ended (no series while it runs).",
     v_end},
    {PREFIX "last_exit_status",
     "Exit status of the last run of NAME (-1: killed by a signal; no "
     "series while it runs or when abandoned).",
     v_exit},
    {PREFIX "last_result",
     "1 for how the last run of NAME ended: running, exited, signaled, "
     "lost, abandoned, timedout.",
     v_result},
    {PREFIX "last_success_timestamp_seconds",
     "When the last kept run of NAME that exited 0 ended (no series if "
     "none of the kept runs did).",
     v_success},
    {PREFIX "suspended",
     "1 while NAME is suspended (dlock suspend: every run skips), else 0.",
     v_suspended},
    {PREFIX "suspended_timestamp_seconds",
     "Since when NAME is suspended (Unix time, the store's clock; no "
     "series when it is not).",
     v_suspended_since},
};

/* A label value another host wrote (its host name): escaped; a control
 * byte (a terminal escape) as '?', and when it is not UTF-8 (planted by
 * hand) every byte above 0x7f too, since label values are UTF-8. */
static void label(FILE *f, const char *key, const char *val)
{
    int utf8 = cli_utf8_valid(val);
    char *copy = strdup(val);

    fprintf(f, ",%s=\"", key);
    if (copy != NULL) {
        for (unsigned char *p = (unsigned char *)copy; *p; p++)
            if ((*p < 0x20 && *p != '\n') || *p == 0x7f ||
                (!utf8 && *p >= 0x80))
                *p = '?';
        cli_prom_escape(f, copy);
    }
    free(copy);
    fputc('"', f);
}

static void write_family(FILE *f, const struct family *fam,
                         const struct scrape *s)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n", fam->name, fam->help,
            fam->name);
    for (size_t i = 0; i < s->n; i++) {
        const struct job *j = &s->jobs[i];
        const char *host = NULL, *result = NULL;
        char v[VALUE_LEN];

        if (j->skip || !fam->value(j, v, &host, &result))
            continue;
        fprintf(f, "%s{name=\"", fam->name);
        cli_prom_escape(f, j->name);
        fputc('"', f);
        if (host != NULL)
            label(f, "host", host);
        if (result != NULL)
            label(f, "result", result);
        fprintf(f, "} %s\n", v);
    }
}

static const char scrape_ok_head[] =
    "# HELP dlock_metrics_scrape_ok 1 if the store was read whole, else "
    "0 (see dlock_metrics_scrape_error).\n"
    "# TYPE dlock_metrics_scrape_ok gauge\n";

/* Close f (opened on *text) into *text and *len; 0 or 70. */
static int finish(FILE *f, char **text, size_t *len, int failed)
{
    if (fclose(f) != 0 || failed) {
        free(*text);
        *text = NULL;
        *len = 0;
        return EXIT_INTERNAL;
    }
    return 0;
}

static char *one_line(const char *what, int rc)
{
    const char *msg = dlock_errmsg();
    char *line = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&line, &n);

    if (f == NULL)
        return NULL;
    fprintf(f, "metrics: %s: ", what);
    /* Escaped: a server's text may hold controls (never a password: the
     * library's messages carry the URL redacted). */
    cli_print_safe(f, msg[0] != '\0' ? msg : dlock_strerror(rc));
    if (fclose(f) != 0) {
        free(line);
        return NULL;
    }
    return line;
}

static char *overrun_line(int64_t budget_ms)
{
    char line[160];

    snprintf(line, sizeof(line),
             "metrics: the store's answers took over %lld ms in all (-w); "
             "the other names were not read",
             (long long)budget_ms);
    return strdup(line);
}

int cli_fleet_metrics(dlock_store *store, const char *prefix, int64_t budget_ms,
                      char **text, size_t *len, char **err)
{
    struct scrape s = {NULL, 0, 0, 0, 0, 0};
    const char *what = "";
    FILE *f;
    int rc;

    *text = NULL;
    *len = 0;
    *err = NULL;
    if (budget_ms > 0)
        s.deadline = cli_mono_ms() + budget_ms;
    rc = gather(store, prefix, &s, &what);
    if (rc != DLOCK_OK) {
        int code = rc == DLOCK_ENOMEM ? EXIT_INTERNAL : cli_exit_code(rc);

        free(s.jobs);
        if (code == EXIT_INTERNAL && rc == DLOCK_ENOMEM)
            *err = strdup("metrics: out of memory");
        else if (s.overrun)
            *err = overrun_line(budget_ms);
        else
            *err = one_line(what, rc);
        return code == 0 ? EXIT_INTERNAL : code;
    }
    f = open_memstream(text, len);
    if (f == NULL) {
        free(s.jobs);
        *err = strdup("metrics: out of memory");
        return EXIT_INTERNAL;
    }
    for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++)
        write_family(f, &families[i], &s);
    fprintf(f, "%sdlock_metrics_scrape_ok 1\n", scrape_ok_head);
    free(s.jobs);
    rc = finish(f, text, len, ferror(f));
    if (rc != 0)
        *err = strdup("metrics: out of memory");
    return rc;
}

int cli_fleet_failure(int code, char **text, size_t *len)
{
    const char *word = code == EXIT_UNAVAILABLE ? "unavailable"
                       : code == EXIT_USAGE     ? "usage"
                                                : "internal";
    FILE *f;

    *text = NULL;
    *len = 0;
    f = open_memstream(text, len);
    if (f == NULL)
        return EXIT_INTERNAL;
    fprintf(f,
            "%sdlock_metrics_scrape_ok 0\n"
            "# HELP dlock_metrics_scrape_error 1 for why the store could "
            "not be read: unavailable, usage, internal.\n"
            "# TYPE dlock_metrics_scrape_error gauge\n"
            "dlock_metrics_scrape_error{error=\"%s\"} 1\n",
            scrape_ok_head, word);
    return finish(f, text, len, ferror(f));
}
