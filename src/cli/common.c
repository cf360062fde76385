/*
 * common.c - error reporting, store opening, parsing and JSON output.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

int cli_quiet;
int cli_json;
int cli_log_json;
const char *cli_log_cmd;
const char *cli_log_name;

/* The errors said under --json (cli_json): kept for the one object
 * cli_json_error() prints at the end, with the library's rc of the first
 * that came from a library call (cli_fail()). */
#define ERRS_MAX 8
static char *errs[ERRS_MAX];
static int nerrs, errs_rc = 1; /* 1: no library rc */

/* Does stderr go to the journal?  systemd sets JOURNAL_STREAM to the
 * "device:inode" of the stream it connected stderr (and stdout) to; a
 * child whose stderr was redirected elsewhere inherits the variable but
 * not the stream, so it counts only when it names stderr itself
 * (sd_journal_stream_fd(3), systemd.exec(5)). */
static int to_journal(void)
{
    static int known = -1;
    const char *v;
    unsigned long long dev, ino;
    struct stat st;
    char extra;

    if (known >= 0)
        return known;
    known = 0;
    v = getenv("JOURNAL_STREAM");
    if (v != NULL && sscanf(v, "%llu:%llu%c", &dev, &ino, &extra) == 2 &&
        fstat(STDERR_FILENO, &st) == 0 &&
        (unsigned long long)st.st_dev == dev &&
        (unsigned long long)st.st_ino == ino)
        known = 1;
    return known;
}

static const char *level_word(int prio)
{
    static const char *const words[] = {"emerg",   "alert",  "crit", "err",
                                        "warning", "notice", "info", "debug"};

    return prio >= 0 && prio <= CLI_LOG_DEBUG ? words[prio] : "err";
}

static int64_t wall_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The start of a --log-format=json line, up to the message's value:
 * {"ts":"...Z","level":"err","pid":N,"cmd":"run","name":"x","msg": */
static void json_line_open(FILE *f, int prio)
{
    char ts[64];

    fprintf(f, "{\"ts\":\"%s\",\"level\":\"%s\",\"pid\":%ld",
            cli_time_utc(wall_ms(), ts, sizeof(ts)), level_word(prio),
            (long)getpid());
    if (cli_log_cmd != NULL) {
        fputs(",\"cmd\":", f);
        cli_json_string(f, cli_log_cmd);
    }
    if (cli_log_name != NULL) {
        fputs(",\"name\":", f);
        cli_json_string(f, cli_log_name);
    }
    fputs(",\"msg\":", f);
}

/* One message on stderr as the log format says, a line written at once
 * (stderr is unbuffered: one fwrite, so lines of processes sharing it do
 * not interleave mid-line). */
static void emit(int prio, const char *msg, int safe)
{
    char *line = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&line, &len);

    if (f == NULL) {
        /* Out of memory: the message still, plainly. */
        fputs("dlock: ", stderr);
        if (safe)
            fputs(msg, stderr);
        else
            cli_print_safe(stderr, msg);
        fputc('\n', stderr);
        return;
    }
    /* The journal takes "<N>" as the line's priority and strips it. */
    if (to_journal())
        fprintf(f, "<%d>", prio);
    if (cli_log_json) {
        json_line_open(f, prio);
        cli_json_string(f, msg);
        fputc('}', f);
    } else {
        fputs("dlock: ", f);
        if (safe)
            fputs(msg, f);
        else
            cli_print_safe(f, msg);
    }
    fputc('\n', f);
    if (fclose(f) == 0)
        fwrite(line, 1, len, stderr);
    free(line);
}

/* Every message goes through cli_print_safe() (or cli_json_string()):
 * much of what it quotes (a server's error text, a name, a driver's
 * message) was written by a store or another client, and a terminal must
 * not take it as escapes. */
static void cli_logv(int prio, const char *fmt, va_list ap)
{
    char small[512], *buf = small;
    va_list again;
    int n;

    if (cli_quiet)
        return;
    va_copy(again, ap);
    n = vsnprintf(small, sizeof(small), fmt, ap);
    if (n >= 0 && (size_t)n >= sizeof(small)) {
        buf = malloc((size_t)n + 1);
        if (buf != NULL)
            vsnprintf(buf, (size_t)n + 1, fmt, again);
        else
            buf = small; /* cut short, but said */
    }
    va_end(again);
    if (n < 0)
        return;
    if (cli_json && prio <= CLI_LOG_ERR) {
        /* Said once, as one object, when dlock exits. */
        if (nerrs < ERRS_MAX && (errs[nerrs] = strdup(buf)) != NULL)
            nerrs++;
    } else {
        emit(prio, buf, 0);
    }
    if (buf != small)
        free(buf);
}

void cli_log_safe(int prio, const char *msg)
{
    if (cli_quiet)
        return;
    if (cli_json && prio <= CLI_LOG_ERR) {
        if (nerrs < ERRS_MAX && (errs[nerrs] = strdup(msg)) != NULL)
            nerrs++;
    } else {
        emit(prio, msg, 1);
    }
}

FILE *cli_msg_open(struct cli_msg *m)
{
    m->text = NULL;
    m->len = 0;
    m->f = open_memstream(&m->text, &m->len);
    return m->f;
}

void cli_msg_say(struct cli_msg *m, int prio)
{
    if (m->f == NULL)
        return;
    if (fclose(m->f) == 0) {
        /* One line: a newline the parts ended with is the line's end. */
        if (m->len > 0 && m->text[m->len - 1] == '\n')
            m->text[--m->len] = '\0';
        cli_log_safe(prio, m->text);
    }
    free(m->text);
    m->f = NULL;
    m->text = NULL;
}

void cli_log(int prio, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    cli_logv(prio, fmt, ap);
    va_end(ap);
}

void cli_err(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    cli_logv(CLI_LOG_ERR, fmt, ap);
    va_end(ap);
}

int cli_log_format(const char *word)
{
    if (strcmp(word, "text") == 0)
        cli_log_json = 0;
    else if (strcmp(word, "json") == 0)
        cli_log_json = 1;
    else
        return -1;
    return 0;
}

/* The names of the library's codes, as dlock.h spells them. */
static const char *rc_name(int rc)
{
    switch (rc) {
    case DLOCK_OK:
        return "DLOCK_OK";
    case DLOCK_BUSY:
        return "DLOCK_BUSY";
    case DLOCK_LOST:
        return "DLOCK_LOST";
    case DLOCK_EXPIRING:
        return "DLOCK_EXPIRING";
    case DLOCK_EINVAL:
        return "DLOCK_EINVAL";
    case DLOCK_EUNAVAIL:
        return "DLOCK_EUNAVAIL";
    case DLOCK_ESTORE:
        return "DLOCK_ESTORE";
    case DLOCK_ENOTSUP:
        return "DLOCK_ENOTSUP";
    case DLOCK_ENOMEM:
        return "DLOCK_ENOMEM";
    case DLOCK_ECANCELED:
        return "DLOCK_ECANCELED";
    default:
        return NULL;
    }
}

int cli_json_errors(void)
{
    return nerrs;
}

void cli_json_error(FILE *f, int exit_code)
{
    const char *code = errs_rc != 1 ? rc_name(errs_rc) : NULL;

    if (nerrs == 0) {
        fputs("null", f);
        return;
    }
    fprintf(f, "{\"exit_code\":%d,\"code\":", exit_code);
    if (code != NULL)
        cli_json_string(f, code);
    else
        fputs("null", f);
    fputs(",\"message\":", f);
    cli_json_string(f, errs[0]);
    if (nerrs > 1) {
        fputs(",\"messages\":[", f);
        for (int i = 0; i < nerrs; i++) {
            if (i > 0)
                fputc(',', f);
            cli_json_string(f, errs[i]);
        }
        fputc(']', f);
    }
    fputc('}', f);
}

void cli_finish(int exit_code)
{
    if (nerrs > 0 && exit_code == 0) {
        /* Errors that did not decide the exit (none should): lines. */
        for (int i = 0; i < nerrs; i++)
            emit(CLI_LOG_ERR, errs[i], 0);
    } else if (nerrs > 0) {
        char *line = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&line, &len);

        if (f != NULL) {
            if (to_journal())
                fprintf(f, "<%d>", CLI_LOG_ERR);
            if (cli_log_json) {
                /* A log line too: its message, and the error. */
                json_line_open(f, CLI_LOG_ERR);
                cli_json_string(f, errs[0]);
                fputc(',', f);
            } else {
                fputc('{', f);
            }
            fputs("\"error\":", f);
            cli_json_error(f, exit_code);
            fputs("}\n", f);
            if (fclose(f) == 0)
                fwrite(line, 1, len, stderr);
            free(line);
        }
    }
    for (int i = 0; i < nerrs; i++)
        free(errs[i]);
    nerrs = 0;
    errs_rc = 1;
}

const char *cli_arg_shown(const char *arg)
{
    static char buf[256];
    const char *eq = strchr(arg, '=');
    char *red = NULL;
    int pre = 0;

    if (arg[0] == '-' && arg[1] == '-' && eq != NULL)
        pre = (int)(eq - arg) + 1;
    else if (arg[0] == '-' && arg[1] != '-' && arg[1] != '\0')
        pre = 2;
    if (dlock_url_redact(&red, arg + pre) != DLOCK_OK) {
        snprintf(buf, sizeof(buf), "%.*s***", pre, arg);
        return buf;
    }
    /* The redacted text holds no part of a secret: cutting it is safe. */
    snprintf(buf, sizeof(buf), "%.*s%.200s%s", pre, arg, red,
             strlen(red) > 200 ? "..." : "");
    dlock_free(red);
    return buf;
}

int cli_exit_code(int rc)
{
    switch (rc) {
    case DLOCK_OK:
        return 0;
    case DLOCK_BUSY:
        return EXIT_BUSY;
    case DLOCK_LOST:
        return EXIT_LOST;
    case DLOCK_EINVAL:
        return EXIT_USAGE;
    case DLOCK_EUNAVAIL:
    case DLOCK_ESTORE:
    case DLOCK_ENOTSUP:
        return EXIT_UNAVAILABLE;
    default:
        return EXIT_INTERNAL;
    }
}

int cli_fail(int rc, const char *what)
{
    const char *msg = dlock_errmsg();

    if (nerrs == 0 && errs_rc == 1)
        errs_rc = rc;
    cli_err("%s: %s", what, msg[0] != '\0' ? msg : dlock_strerror(rc));
    return cli_exit_code(rc);
}

/* A store call of a finite wait gives up this long after its deadline
 * (as the library's acquire does, WAIT_IO_SLACK_MS in acquire.c). */
#define OPEN_SLACK_MS 1000

/* A waiter's store open: a store that cannot be reached yet (not up, a
 * restart, a failover) is tried again with backoff (100 ms doubling to
 * 2 s, as the library waits out an outage after open) until *wait_ms
 * runs out; *wait_ms is then what is left of the wait.  The open counts
 * against a finite wait: each try gives up at the wait's deadline + 1 s,
 * as the acquire's calls do, not at the URL's whole timeout (a frozen
 * server accepts and never answers).  -w 0 tries once, and it and a
 * wait forever open under the URL's timeout, as their acquire calls
 * run. */
int cli_open_waiting(const struct cli *c, dlock_store **out, int64_t *wait_ms)
{
    int64_t t0 = cli_mono_ms(), pause = 100, spent;
    int finite = *wait_ms > 0 && *wait_ms != DLOCK_WAIT_FOREVER;
    int rc, tries = 0;

    for (;;) {
        struct timespec ts;
        int64_t nap = pause;

        if (finite) {
            int64_t left = *wait_ms + OPEN_SLACK_MS - (cli_mono_ms() - t0);

            rc = dlock_store_open_within(out, c->url, left > 1 ? left : 1);
        } else {
            rc = dlock_store_open(out, c->url);
        }
        spent = cli_mono_ms() - t0;
        /* Only a server can be "not up yet": a SQLite file (the default
         * store) that does not open will not later.  And only within a
         * deadline: an endless wait on a store that never answers (a
         * wrong host) would hang without a word. */
        if (rc != DLOCK_EUNAVAIL || *wait_ms == 0 ||
            *wait_ms == DLOCK_WAIT_FOREVER || c->url == NULL ||
            strncmp(c->url, "sqlite:", 7) == 0)
            break;
        if (spent >= *wait_ms)
            break; /* still unreachable at the deadline: say so */
        if (*wait_ms - spent < nap)
            nap = *wait_ms - spent; /* one more try at the deadline */
        /* -v: each failed try, so that a wait on a store that is down is
         * not N seconds of silence (the last error is said at the end,
         * -v or not).  The message carries the redacted URL. */
        /* A warning, said now: dlock goes on (under --json an error
         * would be held back for the end and become the run's "error"
         * even when the store came up and CMD ran). */
        if (c->verbose)
            cli_warn("cannot open the store (try %d): %s; trying again in "
                     "%lld ms, %lld ms of the wait left",
                     ++tries, dlock_errmsg(), (long long)nap,
                     (long long)(*wait_ms - spent));
        ts.tv_sec = (time_t)(nap / 1000);
        ts.tv_nsec = (long)(nap % 1000) * 1000000L;
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
        pause = pause < 1000 ? pause * 2 : 2000;
    }
    /* An open that took the whole wait leaves the acquire one last
     * millisecond, not 0: that would be a try, under the URL's timeout. */
    if (rc == DLOCK_OK && finite)
        *wait_ms = spent < *wait_ms ? *wait_ms - spent : 1;
    return cli_open_result(rc);
}

int cli_open(const struct cli *c, dlock_store **out)
{
    return cli_open_result(dlock_store_open(out, c->url));
}

int cli_open_result(int rc)
{
    if (rc != DLOCK_OK) {
        /* The message carries the redacted URL, never the password. */
        cli_fail(rc, "cannot open the store");
        return rc == DLOCK_ENOMEM ? EXIT_INTERNAL : EXIT_UNAVAILABLE;
    }
    return 0;
}

int64_t cli_parse_seconds(const char *s)
{
    char *end;
    double v;
    size_t digits;

    if (s == NULL || *s == '\0')
        return -1;
    /* Decimal only, as written: "10", "0.25", ".5", "250ms".  strtod would
     * also take "0x10" (16), "1e3", "inf" and leading blanks. */
    digits = strspn(s, "0123456789");
    if (s[digits] == '.')
        digits += 1 + strspn(s + digits + 1, "0123456789");
    if (digits == 0 || (digits == 1 && s[0] == '.'))
        return -1;
    errno = 0;
    v = strtod(s, &end);
    if (end != s + digits)
        return -1;
    if (errno != 0 || end == s || !isfinite(v) || v < 0)
        return -1;
    if (strcmp(end, "ms") == 0)
        v /= 1000.0;
    else if (strcmp(end, "s") != 0 && *end != '\0')
        return -1;
    if (v > CLI_SECONDS_MAX)
        return -2;
    return (int64_t)(v * 1000.0 + 0.5);
}

/* The valid UTF-8 sequence at p: its length (1..4) and code point, or 0
 * for a byte that starts none (names and hosts read from a store may be
 * anything). */
static size_t utf8_at(const unsigned char *p, unsigned *cp)
{
    size_t n;
    unsigned c = p[0], v;

    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if (c >= 0xc2 && c <= 0xdf)
        n = 2, v = c & 0x1f;
    else if (c >= 0xe0 && c <= 0xef)
        n = 3, v = c & 0x0f;
    else if (c >= 0xf0 && c <= 0xf4)
        n = 4, v = c & 0x07;
    else
        return 0;
    for (size_t k = 1; k < n; k++) {
        if ((p[k] & 0xc0) != 0x80)
            return 0;
        v = (v << 6) | (p[k] & 0x3f);
    }
    if ((n == 3 && (v < 0x800 || (v >= 0xd800 && v <= 0xdfff))) ||
        (n == 4 && (v < 0x10000 || v > 0x10ffff)))
        return 0;
    *cp = v;
    return n;
}

/* Characters a terminal acts on rather than shows: C0 and C1 controls,
 * DEL, and the bidirectional overrides that can make text read as other
 * text. */
static int unsafe_cp(unsigned cp)
{
    return cp < 0x20 || (cp >= 0x7f && cp < 0xa0) ||
           (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069) ||
           cp == 0x2028 || cp == 0x2029;
}

int cli_utf8_valid(const char *s)
{
    unsigned cp;

    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        size_t n = utf8_at(p, &cp);

        if (n == 0)
            return 0;
        p += n;
    }
    return 1;
}

void cli_print_safe(FILE *f, const char *s)
{
    unsigned cp;

    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        size_t n = utf8_at(p, &cp);

        if (n == 0) {
            fprintf(f, "\\x%02x", *p++);
        } else if (cp == '\\') {
            fputs("\\\\", f);
            p++;
        } else if (unsafe_cp(cp)) {
            for (size_t k = 0; k < n; k++)
                fprintf(f, "\\x%02x", p[k]);
            p += n;
        } else {
            fwrite(p, 1, n, f);
            p += n;
        }
    }
}

void cli_json_string(FILE *f, const char *s)
{
    unsigned cp;

    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        size_t n = utf8_at(p, &cp);

        if (n == 0) {
            /* Not UTF-8: JSON cannot carry the byte (see name_hex). */
            fputs("\\ufffd", f);
            p++;
            continue;
        }
        if (cp == '"' || cp == '\\')
            fprintf(f, "\\%c", (int)cp);
        else if (cp == '\n')
            fputs("\\n", f);
        else if (cp == '\t')
            fputs("\\t", f);
        else if (unsafe_cp(cp))
            fprintf(f, "\\u%04x", cp);
        else
            fwrite(p, 1, n, f);
        p += n;
    }
    fputc('"', f);
}

void cli_json_info(FILE *f, const dlock_info *in)
{
    cli_json_info_open(f, in);
    fputc('}', f);
}

void cli_json_info_open(FILE *f, const dlock_info *in)
{
    fputs("{\"name\":", f);
    cli_json_string(f, in->name);
    /* A name that is not UTF-8 (planted in the store by another client)
     * also as hex bytes, so a script can still name it exactly. */
    if (!cli_utf8_valid(in->name)) {
        fputs(",\"name_hex\":\"", f);
        for (const unsigned char *p = (const unsigned char *)in->name; *p; p++)
            fprintf(f, "%02x", *p);
        fputc('"', f);
    }
    /* The fence as a string of decimal digits: a 64-bit fence may be
     * above 2^53 (PostgreSQL stores seeded by 0.2 are), where JavaScript
     * and jq would round it and consecutive fences compare equal
     * (I-JSON, RFC 7493 2.2). */
    fprintf(f, ",\"held\":%s,\"shared\":%s,\"holders\":%u,\"fence\":\"%llu\"",
            in->held ? "true" : "false", in->shared ? "true" : "false",
            in->holders, (unsigned long long)in->fence);
    /* 1 a lock, N a semaphore of N; null when free or not known. */
    if (in->limit != 0)
        fprintf(f, ",\"limit\":%u", in->limit);
    else
        fputs(",\"limit\":null", f);
    /* What is not known is null, never a made-up 0 or "". */
    if (in->ttl_ms >= 0)
        fprintf(f, ",\"ttl_ms\":%lld", (long long)in->ttl_ms);
    else
        fputs(",\"ttl_ms\":null", f);
    fputs(",\"host\":", f);
    if (in->host[0] != '\0')
        cli_json_string(f, in->host);
    else
        fputs("null", f);
    if (in->pid != 0)
        fprintf(f, ",\"pid\":%lld", (long long)in->pid);
    else
        fputs(",\"pid\":null", f);
    if (in->since_ms != 0)
        fprintf(f, ",\"since_ms\":%lld", (long long)in->since_ms);
    else
        fputs(",\"since_ms\":null", f);
    fprintf(f, ",\"other_client\":%s", in->other_client ? "true" : "false");
    /* A holder that is not dlock as its server reports it (PostgreSQL,
     * MariaDB): its session id, login and client address, null if not
     * known. */
    if (in->client_id != 0)
        fprintf(f, ",\"client_id\":%lld", (long long)in->client_id);
    else
        fputs(",\"client_id\":null", f);
    fputs(",\"client_user\":", f);
    if (in->client_user[0] != '\0')
        cli_json_string(f, in->client_user);
    else
        fputs("null", f);
    fputs(",\"client_addr\":", f);
    if (in->client_addr[0] != '\0')
        cli_json_string(f, in->client_addr);
    else
        fputs("null", f);
}

/* A time read from a store is shown, and a duration computed from it,
 * only between the epoch and the end of year 9999 (a row anyone can
 * write may hold any int64): outside it is "unknown", so no arithmetic
 * on it can overflow. */
#define CLI_TIME_MAX_MS INT64_C(253402300799999)

int cli_time_ok(int64_t unix_ms)
{
    return unix_ms > 0 && unix_ms <= CLI_TIME_MAX_MS;
}

const char *cli_time_utc(int64_t unix_ms, char *buf, size_t len)
{
    time_t t = (time_t)(unix_ms / 1000);
    struct tm tm;
    char sec[32];

    if (!cli_time_ok(unix_ms) || gmtime_r(&t, &tm) == NULL ||
        strftime(sec, sizeof(sec), "%Y-%m-%dT%H:%M:%S", &tm) == 0)
        snprintf(buf, len, "unknown");
    else
        snprintf(buf, len, "%s.%03dZ", sec, (int)(unix_ms % 1000));
    return buf;
}

int64_t cli_parse_duration(const char *s)
{
    static const struct {
        char unit;
        int64_t sec;
    } units[] = {{'m', 60}, {'h', 3600}, {'d', 86400}};
    char num[64];
    size_t n;
    int64_t ms;

    if (s == NULL || *s == '\0')
        return -1;
    n = strlen(s);
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        /* "5m" is minutes; "250ms" and "10s" are cli_parse_seconds()'s. */
        if (s[n - 1] != units[i].unit || n >= sizeof(num))
            continue;
        memcpy(num, s, n - 1);
        num[n - 1] = '\0';
        if (num[0] == '\0' || strpbrk(num, "ms") != NULL)
            return -1;
        ms = cli_parse_seconds(num);
        if (ms < 0)
            return ms;
        if (ms > CLI_SECONDS_MAX * 1000 / units[i].sec)
            return -2;
        return ms * units[i].sec;
    }
    return cli_parse_seconds(s);
}

const char *cli_run_word(int result)
{
    switch (result) {
    case DLOCK_RUN_RUNNING:
        return "running";
    case DLOCK_RUN_EXITED:
        return "exited";
    case DLOCK_RUN_SIGNALED:
        return "signaled";
    case DLOCK_RUN_LOST:
        return "lost";
    case DLOCK_RUN_ABANDONED:
        return "abandoned";
    case DLOCK_RUN_TIMEDOUT:
        return "timedout";
    case DLOCK_RUN_SUSPENDED:
        return "suspended";
    default:
        return "unknown";
    }
}

void cli_json_run(FILE *f, const dlock_run *r)
{
    char iso[64];

    fputs("{\"name\":", f);
    cli_json_string(f, r->name);
    if (!cli_utf8_valid(r->name)) {
        fputs(",\"name_hex\":\"", f);
        for (const unsigned char *p = (const unsigned char *)r->name; *p; p++)
            fprintf(f, "%02x", *p);
        fputc('"', f);
    }
    /* The fence as a string, as cli_json_info() gives it. */
    fprintf(f, ",\"fence\":\"%llu\",\"host\":", (unsigned long long)r->fence);
    if (r->host[0] != '\0')
        cli_json_string(f, r->host);
    else
        fputs("null", f);
    if (r->pid > 0)
        fprintf(f, ",\"pid\":%lld", (long long)r->pid);
    else
        fputs(",\"pid\":null", f);
    if (cli_time_ok(r->start_ms))
        fprintf(f, ",\"start_ms\":%lld,\"start\":\"%s\"",
                (long long)r->start_ms,
                cli_time_utc(r->start_ms, iso, sizeof(iso)));
    else
        fputs(",\"start_ms\":null,\"start\":null", f);
    if (cli_time_ok(r->end_ms))
        fprintf(f, ",\"end_ms\":%lld,\"end\":\"%s\"", (long long)r->end_ms,
                cli_time_utc(r->end_ms, iso, sizeof(iso)));
    else
        fputs(",\"end_ms\":null,\"end\":null", f);
    fprintf(f, ",\"result\":\"%s\"", cli_run_word(r->result));
    /* The exit status (exited), the signal (signaled), what a lost run
     * ended with; null when there is none. */
    if ((r->result == DLOCK_RUN_EXITED || r->result == DLOCK_RUN_SIGNALED ||
         r->result == DLOCK_RUN_LOST || r->result == DLOCK_RUN_TIMEDOUT) &&
        r->status >= 0)
        fprintf(f, ",\"status\":%d}", r->status);
    else
        fputs(",\"status\":null}", f);
}

void cli_print_run(FILE *f, const dlock_run *r)
{
    char iso[64];

    switch (r->result) {
    case DLOCK_RUN_EXITED:
        fprintf(f, "exited %d", r->status);
        break;
    case DLOCK_RUN_SIGNALED:
        fprintf(f, "killed by signal %d", r->status);
        break;
    case DLOCK_RUN_LOST:
        fputs("lost the lock", f);
        if (r->status >= 0)
            fprintf(f, " (exit %d)", r->status);
        break;
    case DLOCK_RUN_ABANDONED:
        fputs("abandoned (its holder went away)", f);
        break;
    case DLOCK_RUN_TIMEDOUT:
        fputs("timed out (--max-runtime)", f);
        if (r->status >= 0)
            fprintf(f, " (exit %d)", r->status);
        break;
    default:
        fputs(r->result == DLOCK_RUN_RUNNING ? "running" : "unknown", f);
    }
    fputs(" on host ", f);
    cli_print_safe(f, r->host[0] ? r->host : "?");
    fprintf(f, " pid %lld, started %s", (long long)r->pid,
            cli_time_utc(r->start_ms, iso, sizeof(iso)));
    if (cli_time_ok(r->start_ms) && cli_time_ok(r->end_ms) &&
        r->end_ms >= r->start_ms)
        fprintf(f, ", took %lld.%03lld s",
                (long long)((r->end_ms - r->start_ms) / 1000),
                (long long)((r->end_ms - r->start_ms) % 1000));
    fprintf(f, ", fence %llu", (unsigned long long)r->fence);
}

int cli_is(const char *arg, const char *a, const char *b)
{
    return (a != NULL && strcmp(arg, a) == 0) ||
           (b != NULL && strcmp(arg, b) == 0);
}

int cli_name_secret(const char *cmd, const char *rest, const char *name)
{
    char *red = NULL;
    int secret;

    if (strstr(name, "://") == NULL)
        return 0;
    /* Redaction changes only a password (or fails: count it as one). */
    secret = dlock_url_redact(&red, name) != DLOCK_OK || strcmp(red, name) != 0;
    if (secret)
        cli_err("%s: NAME '%s' is a URL holding a password; a lock name is "
                "shown to every client of the store, so it is refused.  A "
                "store URL goes after -s: dlock -s URL %s %s",
                cmd, red != NULL ? red : "***", cmd, rest);
    dlock_free(red);
    return secret;
}

int cli_missing_name(const char *cmd, const char *help)
{
    /* The help on stderr as ever, unless stderr is JSON only. */
    if (cli_json || cli_log_json)
        cli_err("%s: NAME is missing (see dlock %s --help)", cmd, cmd);
    else
        fputs(help, stderr);
    return EXIT_USAGE;
}

void cli_prom_escape(FILE *f, const char *s)
{
    for (; *s != '\0'; s++) {
        if (*s == '\\')
            fputs("\\\\", f);
        else if (*s == '"')
            fputs("\\\"", f);
        else if (*s == '\n')
            fputs("\\n", f);
        else
            fputc(*s, f);
    }
}
