/*
 * metrics.c - the metrics file of `dlock run --metrics-file PATH`: the
 * Prometheus text exposition format (version 0.0.4), one series per lock
 * name of each dlock_run_* family, for node_exporter's textfile collector.
 *
 * Several names (several cron jobs) share one file, so a run reads the
 * file, keeps every other name's series and its own counters, and writes
 * the whole file anew.  Writers of one file are serialised by flock(2) on
 * PATH.lock; the text goes to PATH.<random>.tmp and is renamed over PATH
 * after an fsync, so a collector scraping at any moment reads a whole
 * file.  Neither PATH.lock nor the temporary copy ends in ".prom": the
 * collector ignores them.
 *
 * A file holding lines that dlock did not write (another exporter's
 * series, a timestamp, a second label) is refused, not overwritten.
 *
 * PATH may sit in a directory other users can write (a sticky 1777 one,
 * as /tmp).  What they can plant there is never followed or believed:
 * PATH and PATH.lock are opened relative to one descriptor of the
 * directory, without following links and without blocking (a FIFO), and
 * used only when fstat() says they are regular files of the caller's own
 * with one link; the temporary copy has a name nobody can guess and is
 * made with O_EXCL; the mode kept from an old file never has setuid,
 * setgid or world-write.  A file that fails these is left as it is, with
 * a message: the run's exit status never depends on its metrics.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "metrics.h"

#define PREFIX "dlock_run_"
/* The biggest metrics file read back: 1024 names of 1 KiB is ~15 MiB. */
#define FILE_MAX (64L << 20)
/* How long a writer waits for another to finish with the file. */
#define LOCK_WAIT_MS 10000

enum fam_id {
    F_START,
    F_END,
    F_SUCCESS,
    F_DURATION,
    F_EXIT,
    F_SIGNAL,
    F_LOST,
    F_WAIT,
    F_ATTEMPT,
    F_RUNS,
    F_FAILURES,
    F_SKIPPED,
    F_LOST_TOTAL,
    F_NOT_RUN,
    F_LEADER,
    F_TRANSITIONS,
    F_TERM,
    F_KNOWN
};

struct family {
    const char *name;
    const char *type; /* "gauge" or "counter" */
    double initial;   /* before the name's first run */
    const char *help;
};

static const struct family known[F_KNOWN] = {
    [F_START] = {PREFIX "last_start_timestamp_seconds", "gauge", 0,
                 "When the last run of CMD under the lock started (Unix "
                 "time, this host's clock)."},
    [F_END] = {PREFIX "last_end_timestamp_seconds", "gauge", 0,
               "When the last run of CMD ended."},
    [F_SUCCESS] = {PREFIX "last_success_timestamp_seconds", "gauge", 0,
                   "When the last run that exited 0 ended (0: none yet)."},
    [F_DURATION] = {PREFIX "last_duration_seconds", "gauge", 0,
                    "How long the last run of CMD took."},
    [F_EXIT] = {PREFIX "last_exit_status", "gauge", -1,
                "Exit status of the last run of CMD (-1: it died of a "
                "signal; no series until CMD has run)."},
    [F_SIGNAL] = {PREFIX "last_signal", "gauge", 0,
                  "Signal that ended the last run of CMD (0: none)."},
    [F_LOST] = {PREFIX "last_lost", "gauge", 0,
                "1 if the lock was lost during the last run of CMD."},
    [F_WAIT] = {PREFIX "last_wait_seconds", "gauge", 0,
                "Seconds the last invocation waited for the lock."},
    [F_ATTEMPT] = {PREFIX "last_attempt_timestamp_seconds", "gauge", 0,
                   "When dlock run last ran for this name, whether CMD ran "
                   "or not."},
    [F_RUNS] = {PREFIX "runs_total", "counter", 0,
                "Runs of CMD under the lock."},
    [F_FAILURES] = {PREFIX "failures_total", "counter", 0,
                    "Runs of CMD that did not exit 0 (failed, killed, lock "
                    "lost)."},
    [F_SKIPPED] = {PREFIX "skipped_total", "counter", 0,
                   "Invocations skipped by --once or --once-per: a run "
                   "(maybe on another host) already did the job."},
    [F_LOST_TOTAL] = {PREFIX "lost_total", "counter", 0,
                      "Runs during which the lock was lost."},
    [F_NOT_RUN] = {PREFIX "not_run_total", "counter", 0,
                   "Invocations that did not run CMD for another reason: "
                   "lock busy, store unavailable, error."},
    [F_LEADER] = {PREFIX "leader", "gauge", 0,
                  "dlock elect: 1 while this candidate leads (runs CMD), "
                  "else 0."},
    [F_TRANSITIONS] = {PREFIX "leader_transitions_total", "counter", 0,
                       "dlock elect: times this candidate became leader or "
                       "stopped leading."},
    [F_TERM] = {PREFIX "leader_term", "gauge", 0,
                "dlock elect: the term (fence) this candidate led last (0: "
                "never led)."},
};

/* One series: family (index into known[], or F_KNOWN + i for the i-th
 * family of this prefix that this version does not know), name, value. */
struct series {
    size_t fam;
    char *name;
    char *value;
};

struct model {
    struct series *s;
    size_t n, cap;
    char **other; /* names of the unknown dlock_run_ families */
    size_t n_other;
};

static void model_free(struct model *m)
{
    for (size_t i = 0; i < m->n; i++) {
        free(m->s[i].name);
        free(m->s[i].value);
    }
    for (size_t i = 0; i < m->n_other; i++)
        free(m->other[i]);
    free(m->s);
    free(m->other);
}

static int model_add(struct model *m, size_t fam, char *name, char *value)
{
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 64;
        struct series *s = realloc(m->s, cap * sizeof(*s));

        if (s == NULL)
            return -1;
        m->s = s;
        m->cap = cap;
    }
    m->s[m->n].fam = fam;
    m->s[m->n].name = name;
    m->s[m->n].value = value;
    m->n++;
    return 0;
}

static size_t family_of(struct model *m, const char *metric, int *err)
{
    char **o;

    *err = 0;
    for (size_t i = 0; i < F_KNOWN; i++)
        if (strcmp(known[i].name, metric) == 0)
            return i;
    for (size_t i = 0; i < m->n_other; i++)
        if (strcmp(m->other[i], metric) == 0)
            return F_KNOWN + i;
    o = realloc(m->other, (m->n_other + 1) * sizeof(*o));
    if (o == NULL || (o[m->n_other] = strdup(metric)) == NULL) {
        if (o != NULL)
            m->other = o;
        *err = 1;
        return 0;
    }
    m->other = o;
    return F_KNOWN + m->n_other++;
}

static const char *family_name(const struct model *m, size_t fam)
{
    return fam < F_KNOWN ? known[fam].name : m->other[fam - F_KNOWN];
}

static int is_metric_char(int c, int first)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
           c == ':' || (!first && c >= '0' && c <= '9');
}

/*
 * Parse one line of a file we wrote: "# ..." (dropped: HELP and TYPE are
 * written anew) or 'dlock_run_X{name="ESCAPED"} VALUE'.  Returns 0, 1 if
 * the line is not one dlock writes, -1 out of memory.
 */
static int parse_line(struct model *m, const char *line, size_t len)
{
    size_t i = 0, mstart, mend;
    char *metric = NULL, *name = NULL, *value = NULL;
    size_t nlen = 0, fam;
    int err;
    char *end;

    if (len == 0 || line[0] == '#')
        return 0;
    mstart = i;
    while (i < len && is_metric_char((unsigned char)line[i], i == mstart))
        i++;
    mend = i;
    if (mend - mstart <= strlen(PREFIX) ||
        strncmp(line, PREFIX, strlen(PREFIX)) != 0)
        return 1;
    if (len - i < 8 || memcmp(line + i, "{name=\"", 7) != 0)
        return 1;
    i += 7;
    name = malloc(len - i + 1);
    if (name == NULL)
        return -1;
    for (;;) {
        if (i >= len)
            goto bad;
        if (line[i] == '"')
            break;
        if (line[i] == '\\') {
            if (++i >= len)
                goto bad;
            if (line[i] == 'n')
                name[nlen++] = '\n';
            else if (line[i] == '\\' || line[i] == '"')
                name[nlen++] = line[i];
            else
                goto bad;
        } else {
            if (line[i] == '\0')
                goto bad;
            name[nlen++] = line[i];
        }
        i++;
    }
    name[nlen] = '\0';
    i++;
    if (i >= len || line[i] != '}')
        goto bad;
    i++;
    if (i >= len || line[i] != ' ')
        goto bad;
    while (i < len && line[i] == ' ')
        i++;
    /* The value, alone (a timestamp after it: not a line of ours). */
    value = strndup(line + i, len - i);
    if (value == NULL) {
        free(name);
        return -1;
    }
    if (nlen == 0 || value[0] == '\0' || strpbrk(value, " \t\r") != NULL)
        goto bad;
    errno = 0;
    (void)strtod(value, &end);
    if (*end != '\0' || end == value)
        goto bad;
    metric = strndup(line + mstart, mend - mstart);
    if (metric == NULL)
        goto oom;
    fam = family_of(m, metric, &err);
    free(metric);
    if (err)
        goto oom;
    /* One series per name and family: a second one is not ours either. */
    for (size_t k = 0; k < m->n; k++)
        if (m->s[k].fam == fam && strcmp(m->s[k].name, name) == 0)
            goto bad;
    if (model_add(m, fam, name, value) != 0)
        goto oom;
    return 0;
bad:
    free(name);
    free(value);
    return 1;
oom:
    free(name);
    free(value);
    return -1;
}

/* Why st is not a file this process may take as its own (NULL: it is):
 * a regular file, owned by our effective uid, with one link (a file dlock
 * wrote by rename has one; a hard link to a file elsewhere has two). */
static const char *not_ours(const struct stat *st, char *why, size_t len)
{
    if (!S_ISREG(st->st_mode))
        return "not a regular file";
    if (st->st_uid != geteuid()) {
        snprintf(why, len, "owned by uid %u, not by you (uid %u)",
                 (unsigned)st->st_uid, (unsigned)geteuid());
        return why;
    }
    if (st->st_nlink != 1) {
        snprintf(why, len, "a file with %ju hard links",
                 (uintmax_t)st->st_nlink);
        return why;
    }
    return NULL;
}

/*
 * Open name in the directory dfd with flags, when it is a file of ours
 * (not_ours()), into *st.  No link is followed, and no open waits (a FIFO
 * opens at once, then fails the fstat()).  The fd, or -1 with errno and
 * *bad the reason when something else is there (NULL when errno says it:
 * ENOENT, EACCES on a file that is ours).
 */
static int open_ours(int dfd, const char *name, int flags, struct stat *st,
                     char *why, size_t len, const char **bad)
{
    int fd, e;

    *bad = NULL;
    fd = openat(dfd, name,
                flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, 0600);
    if (fd < 0) {
        e = errno;
        if (e == ELOOP)
            *bad = "a symbolic link";
        else if ((e == EACCES || e == ENXIO || e == EISDIR) &&
                 fstatat(dfd, name, st, AT_SYMLINK_NOFOLLOW) == 0)
            *bad = not_ours(st, why, len); /* whose it is, not EACCES */
        errno = e;
        return -1;
    }
    if (fstat(fd, st) != 0 || (*bad = not_ours(st, why, len)) != NULL) {
        e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

/* Read the file base (path, in the directory dfd) into m (none yet: an
 * empty m), and the mode its rewrite keeps into *mode.  0 or -1 (said). */
static int read_file(const char *path, int dfd, const char *base,
                     struct model *m, mode_t *mode)
{
    FILE *f;
    struct stat st;
    char *buf = NULL, why[96];
    const char *bad;
    size_t cap = 0;
    ssize_t len;
    long lineno = 0, total = 0;
    int rc = 0, fd;

    fd = open_ours(dfd, base, O_RDONLY, &st, why, sizeof(why), &bad);
    if (fd < 0) {
        if (bad != NULL)
            cli_warn("metrics file %s: it is %s; left as it is: give dlock a "
                     "file of its own",
                     path, bad);
        else if (errno == ENOENT)
            return 0;
        else
            cli_warn("metrics file %s: %s", path, strerror(errno));
        return -1;
    }
    if (st.st_size > FILE_MAX) {
        cli_warn("metrics file %s: over %ld MiB, not a dlock metrics file; "
                 "left as it is",
                 path, FILE_MAX >> 20);
        close(fd);
        return -1;
    }
    /* Keep the mode the owner gave it (readable by the collector's user),
     * never setuid, setgid, sticky or world-writable. */
    *mode = st.st_mode & 0777 & ~(mode_t)S_IWOTH;
    f = fdopen(fd, "r");
    if (f == NULL) {
        cli_warn("metrics file %s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    while ((len = getline(&buf, &cap, f)) >= 0) {
        int r;

        lineno++;
        total += len;
        if (total > FILE_MAX) {
            cli_warn("metrics file %s: over %ld MiB, not a dlock metrics "
                     "file; left as it is",
                     path, FILE_MAX >> 20);
            rc = -1;
            break;
        }
        if (len > 0 && buf[len - 1] == '\n')
            len--;
        r = parse_line(m, buf, (size_t)len);
        if (r < 0) {
            cli_warn("metrics file %s: out of memory", path);
            rc = -1;
            break;
        }
        if (r > 0) {
            cli_warn("metrics file %s: line %ld is not one dlock run writes "
                     "(a dlock_run_* series with only a name label); the "
                     "file is left as it is: give dlock a file of its own",
                     path, lineno);
            rc = -1;
            break;
        }
    }
    if (rc == 0 && ferror(f)) {
        cli_warn("metrics file %s: %s", path, strerror(errno));
        rc = -1;
    }
    free(buf);
    fclose(f);
    return rc;
}

static struct series *find(struct model *m, size_t fam, const char *name)
{
    for (size_t i = 0; i < m->n; i++)
        if (m->s[i].fam == fam && strcmp(m->s[i].name, name) == 0)
            return &m->s[i];
    return NULL;
}

static char *format_value(double v)
{
    char buf[64];

    if (isnan(v))
        snprintf(buf, sizeof(buf), "NaN");
    else if (isinf(v))
        snprintf(buf, sizeof(buf), v > 0 ? "+Inf" : "-Inf");
    /* Every integer a double holds exactly (below 2^53) in full: a
     * leader's term may be a 16-digit fence (Redis seeds its fences from
     * the server's clock). */
    else if (v > -9007199254740992.0 && v < 9007199254740992.0 &&
             v == (double)(long long)v)
        snprintf(buf, sizeof(buf), "%.0f", v);
    else
        snprintf(buf, sizeof(buf), "%.15g", v);
    return strdup(buf);
}

/* Set name's series of family fam to v (adding it if missing). */
static int set_value(struct model *m, size_t fam, const char *name, double v)
{
    struct series *s = find(m, fam, name);
    char *val = format_value(v), *nm;

    if (val == NULL)
        return -1;
    if (s != NULL) {
        free(s->value);
        s->value = val;
        return 0;
    }
    nm = strdup(name);
    if (nm == NULL || model_add(m, fam, nm, val) != 0) {
        free(nm);
        free(val);
        return -1;
    }
    return 0;
}

/* Remove name's series of family fam, if there is one. */
static void drop_value(struct model *m, size_t fam, const char *name)
{
    struct series *s = find(m, fam, name);

    if (s == NULL)
        return;
    free(s->name);
    free(s->value);
    m->n--;
    memmove(s, s + 1, (size_t)(m->s + m->n - s) * sizeof(*s));
}

static double get_value(struct model *m, size_t fam, const char *name)
{
    struct series *s = find(m, fam, name);
    double v;

    if (s == NULL)
        return known[fam].initial;
    v = strtod(s->value, NULL);
    /* A counter that went bad (edited by hand) starts again at 0. */
    if (strcmp(known[fam].type, "counter") == 0 && !(v >= 0 && v < 1e300))
        v = 0;
    return v;
}

/* Apply r to m: every family of r->name gets a value. */
static int apply(struct model *m, const struct cli_run_report *r)
{
    const char *nm = r->name;
    double start = (double)r->start_ms / 1000, end = (double)r->end_ms / 1000;
    int success = r->ran && !r->lost && r->exited && r->status == 0;
    double v[F_KNOWN];

    for (size_t f = 0; f < F_KNOWN; f++)
        v[f] = get_value(m, f, nm);
    if (r->elect) {
        v[F_LEADER] = r->leader ? 1 : 0;
        v[F_TRANSITIONS] += r->transition ? 1 : 0;
        if (r->term > 0)
            v[F_TERM] = (double)r->term;
    }
    if (r->leader_only) {
        for (size_t f = F_LEADER; f <= F_TERM; f++)
            if (set_value(m, f, nm, v[f]) != 0)
                return -1;
        return 0;
    }
    if (r->ran) {
        v[F_START] = start;
        v[F_END] = end;
        v[F_DURATION] = r->end_ms > r->start_ms
                            ? (double)(r->end_ms - r->start_ms) / 1000
                            : 0;
        v[F_EXIT] = r->exited ? r->status : -1;
        v[F_SIGNAL] = r->signaled ? r->sig : 0;
        v[F_LOST] = r->lost ? 1 : 0;
        v[F_RUNS] += 1;
        if (success)
            v[F_SUCCESS] = end;
        else
            v[F_FAILURES] += 1;
        if (r->lost)
            v[F_LOST_TOTAL] += 1;
    } else if (r->skipped) {
        v[F_SKIPPED] += 1;
    } else {
        v[F_NOT_RUN] += 1;
    }
    v[F_WAIT] = r->waited_ms > 0 ? (double)r->waited_ms / 1000 : 0;
    v[F_ATTEMPT] = r->ran ? start : end;
    for (size_t f = 0; f < F_KNOWN; f++) {
        /* A name whose CMD never ran has no exit status: no series (as
         * a Prometheus exporter leaves out what it does not know), not
         * -1, which says "died of a signal"; runs_total says 0.  One an
         * older dlock wrote (-1) goes. */
        if (f == F_EXIT && v[F_RUNS] == 0) {
            drop_value(m, f, nm);
            continue;
        }
        if ((r->elect || f < F_LEADER) && set_value(m, f, nm, v[f]) != 0)
            return -1;
    }
    return 0;
}

static int by_family_then_name(const void *a, const void *b)
{
    const struct series *x = a, *y = b;

    if (x->fam != y->fam)
        return x->fam < y->fam ? -1 : 1;
    return strcmp(x->name, y->name);
}

static void write_model(FILE *f, struct model *m)
{
    qsort(m->s, m->n, sizeof(*m->s), by_family_then_name);
    fputs("# Written by dlock run --metrics-file: do not edit (the next "
          "run rewrites it).\n",
          f);
    for (size_t i = 0; i < m->n; i++) {
        const struct series *s = &m->s[i];

        if ((i == 0 || m->s[i - 1].fam != s->fam) && s->fam < F_KNOWN)
            fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", known[s->fam].name,
                    known[s->fam].help, known[s->fam].name, known[s->fam].type);
        fprintf(f, "%s{name=\"", family_name(m, s->fam));
        cli_prom_escape(f, s->name);
        fprintf(f, "\"} %s\n", s->value);
    }
}

/* Open the directory of path, and put the last part of path in base.
 * The directory's descriptor, or -1 (said). */
static int open_dir(const char *path, char *base, size_t blen)
{
    char dir[4096];
    const char *slash = strrchr(path, '/');
    int fd;

    if (strlen(path) >= sizeof(dir) ||
        snprintf(base, blen, "%s", slash ? slash + 1 : path) >= (int)blen) {
        cli_warn("metrics file %s: path too long", path);
        return -1;
    }
    if (base[0] == '\0' || strcmp(base, ".") == 0 || strcmp(base, "..") == 0) {
        cli_warn("metrics file %s: not a file name", path);
        return -1;
    }
    if (slash == NULL)
        snprintf(dir, sizeof(dir), ".");
    else if (slash == path)
        snprintf(dir, sizeof(dir), "/");
    else
        snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
    fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        cli_warn("metrics file %s: directory %s: %s", path, dir,
                 strerror(errno));
    return fd;
}

/* A name for the temporary copy that another user cannot guess (and so
 * cannot plant first): base.<16 hex digits>.tmp. */
static int temp_name(char *out, size_t len, const char *base)
{
    unsigned char r[8];
    struct timespec ts;
    unsigned long long v = 0;

    if (getrandom(r, sizeof(r), GRND_NONBLOCK) == (ssize_t)sizeof(r)) {
        for (size_t i = 0; i < sizeof(r); i++)
            v = v << 8 | r[i];
    } else {
        /* Early in boot: O_EXCL still keeps a planted name from being
         * used; a guessed one only costs a retry. */
        clock_gettime(CLOCK_MONOTONIC, &ts);
        v = (unsigned long long)ts.tv_nsec * 2654435761u ^
            (unsigned long long)ts.tv_sec << 32 ^ (unsigned long long)getpid();
    }
    return snprintf(out, len, "%s.%016llx.tmp", base, v) < (int)len ? 0 : -1;
}

/* Open the lock file lname in dfd, or create it (0600: whoever can open
 * it can hold its flock).  What is there is opened first, not created
 * over (so that we can say whose it is; O_CREAT would also fail on
 * another user's file where fs.protected_regular is set).  O_RDWR: NFS
 * emulates an exclusive flock with a write lock.  Its fd and *st, or -1
 * (said). */
static int open_lock(const char *path, int dfd, const char *lname,
                     struct stat *st)
{
    char why[96];
    const char *bad;
    int fd = -1;

    for (int tries = 0; tries < 3 && fd < 0; tries++) {
        fd = open_ours(dfd, lname, O_RDWR, st, why, sizeof(why), &bad);
        if (fd < 0 && bad == NULL && errno == ENOENT)
            fd = open_ours(dfd, lname, O_RDWR | O_CREAT | O_EXCL, st, why,
                           sizeof(why), &bad);
        if (fd < 0 && (bad != NULL || (errno != EEXIST && errno != ENOENT)))
            break;
    }
    if (fd >= 0)
        return fd;
    if (bad != NULL)
        cli_warn("metrics file %s: its lock file %s.lock is %s; not written: "
                 "give dlock a directory others cannot write",
                 path, path, bad);
    else
        cli_warn("metrics file %s: cannot open its lock file %s.lock: %s", path,
                 path, strerror(errno));
    return -1;
}

/* A new file of ours in the directory dfd, named by temp_name() into
 * tname (mode 0600, never a link followed, a name taken tried again up
 * to 8 times).  Its fd; -1 with errno; -2 when the name is too long
 * (said). */
static int open_temp(const char *path, int dfd, const char *base, char *tname,
                     size_t len, int access)
{
    int fd = -1;

    for (int tries = 0; tries < 8 && fd < 0; tries++) {
        if (temp_name(tname, len, base) != 0) {
            cli_warn("metrics file %s: path too long", path);
            return -2;
        }
        fd = openat(dfd, tname,
                    access | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC |
                        O_NOCTTY,
                    0600);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    return fd;
}

/* Put a new 0600 lock file in the place of lname (whose mode let others
 * open it: an older dlock made it 0644).  Whoever opened the old one may
 * hold its flock for ever; the new one is nobody else's to open.  Its fd
 * and *st, or -1 (said). */
static int fresh_lock(const char *path, int dfd, const char *base,
                      const char *lname, struct stat *st)
{
    char tname[4096];
    int fd = -1;

    fd = open_temp(path, dfd, base, tname, sizeof(tname), O_RDWR);
    if (fd == -2)
        return -1;
    if (fd < 0 || fchmod(fd, 0600) != 0 || fstat(fd, st) != 0 ||
        renameat(dfd, tname, dfd, lname) != 0) {
        cli_warn("metrics file %s: cannot replace its lock file %s.lock, "
                 "which others may open: %s",
                 path, path, strerror(errno));
        if (fd >= 0) {
            (void)unlinkat(dfd, tname, 0);
            close(fd);
        }
        return -1;
    }
    return fd;
}

/* Take the lock file next to path (base.lock in the directory dfd),
 * waiting up to LOCK_WAIT_MS.  Its fd, or -1 (said). */
static int lock_file(const char *path, int dfd, const char *base)
{
    char lname[4096];
    struct timespec pause = {0, 10 * 1000 * 1000};
    struct stat st, now;
    int waited = 0;

    if (snprintf(lname, sizeof(lname), "%s.lock", base) >= (int)sizeof(lname)) {
        cli_warn("metrics file %s: path too long", path);
        return -1;
    }
    for (int tries = 0; tries < 8; tries++) {
        int fd = open_lock(path, dfd, lname, &st);

        if (fd < 0)
            return -1;
        if ((st.st_mode & 07077) != 0) {
            int nfd = fresh_lock(path, dfd, base, lname, &st);

            close(fd);
            if (nfd < 0)
                return -1;
            fd = nfd;
        } else if ((st.st_mode & 0700) != 0600 && fchmod(fd, 0600) != 0) {
            /* A umask of 0277 made it 0400: we could not open it again. */
            cli_warn("metrics file %s: chmod %s.lock: %s", path, path,
                     strerror(errno));
            close(fd);
            return -1;
        }
        /* A writer holds it for a read and a write of a small file; a
         * bounded wait keeps a writer stuck on a dead filesystem from
         * hanging us. */
        while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            if (errno != EWOULDBLOCK && errno != EINTR) {
                cli_warn("metrics file %s: flock %s.lock: %s", path, path,
                         strerror(errno));
                close(fd);
                return -1;
            }
            if (waited >= LOCK_WAIT_MS) {
                cli_warn("metrics file %s: another writer has held %s.lock "
                         "for %d s; not written",
                         path, path, LOCK_WAIT_MS / 1000);
                close(fd);
                return -1;
            }
            nanosleep(&pause, NULL);
            waited += 10;
        }
        /* A flock on a file that is no longer at the name (replaced by
         * fresh_lock() while we waited, or removed) excludes nobody: take
         * the one there now. */
        if (fstatat(dfd, lname, &now, AT_SYMLINK_NOFOLLOW) == 0 &&
            now.st_dev == st.st_dev && now.st_ino == st.st_ino)
            return fd;
        close(fd);
    }
    cli_warn("metrics file %s: its lock file %s.lock keeps being replaced; "
             "not written",
             path, path);
    return -1;
}

/* Write m to a new file in the directory dfd (mode mode), fsync, rename
 * it over base, fsync the directory. */
static int replace_file(const char *path, int dfd, const char *base,
                        struct model *m, mode_t mode)
{
    char tname[4096];
    FILE *f;
    int fd = -1, rc = -1;

    fd = open_temp(path, dfd, base, tname, sizeof(tname), O_WRONLY);
    if (fd == -2)
        return -1;
    if (fd < 0) {
        cli_warn("metrics file %s: cannot create %s next to it: %s", path,
                 tname, strerror(errno));
        return -1;
    }
    if (fchmod(fd, mode) != 0) {
        cli_warn("metrics file %s: chmod %s: %s", path, tname, strerror(errno));
        close(fd);
        goto out;
    }
    f = fdopen(fd, "w");
    if (f == NULL) {
        cli_warn("metrics file %s: %s", path, strerror(errno));
        close(fd);
        goto out;
    }
    write_model(f, m);
    if (fflush(f) != 0 || ferror(f) || fsync(fileno(f)) != 0) {
        cli_warn("metrics file %s: writing %s: %s", path, tname,
                 strerror(errno));
        fclose(f);
        goto out;
    }
    if (fclose(f) != 0) {
        cli_warn("metrics file %s: writing %s: %s", path, tname,
                 strerror(errno));
        goto out;
    }
    if (renameat(dfd, tname, dfd, base) != 0) {
        if (errno == EPERM)
            cli_warn("metrics file %s: cannot rename over it (%s): in a "
                     "directory with the sticky bit, another user's file "
                     "there cannot be replaced; not written",
                     path, strerror(errno));
        else
            cli_warn("metrics file %s: rename %s: %s", path, tname,
                     strerror(errno));
        goto out;
    }
    /* The rename itself survives a crash once the directory is synced. */
    (void)fsync(dfd);
    return 0;
out:
    (void)unlinkat(dfd, tname, 0);
    return rc;
}

int cli_metrics_record(const char *path, const struct cli_run_report *r)
{
    struct model m = {0};
    char base[4096];
    mode_t mode = 0644; /* a new file: world-readable, as collectors need */
    int dfd, lfd, rc;

    if (path == NULL || path[0] == '\0' || r == NULL || r->name == NULL ||
        r->name[0] == '\0') {
        cli_warn("metrics file: no path or no name");
        return -1;
    }
    dfd = open_dir(path, base, sizeof(base));
    if (dfd < 0)
        return -1;
    lfd = lock_file(path, dfd, base);
    if (lfd < 0) {
        close(dfd);
        return -1;
    }
    rc = read_file(path, dfd, base, &m, &mode);
    if (rc == 0 && apply(&m, r) != 0) {
        cli_warn("metrics file %s: out of memory", path);
        rc = -1;
    }
    if (rc == 0)
        rc = replace_file(path, dfd, base, &m, mode);
    model_free(&m);
    close(lfd); /* drops the flock */
    close(dfd);
    return rc;
}

void run_report(const struct cli_run_report *r)
{
    /* A metrics file that cannot be written is said on stderr; the run's
     * own exit status stays what CMD made it (an alert on a stale
     * last_success catches a file that stopped being written). */
    if (r != NULL && r->metrics_file != NULL && r->metrics_file[0] != '\0')
        (void)cli_metrics_record(r->metrics_file, r);
}
