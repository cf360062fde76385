/*
 * test_golden.c - every statement and script a store sends, as it sends
 * it, against the copies under tests/golden/STORE/VARIANT/NAME.
 *
 *   test_golden GOLDEN_DIR STORE...           compare (the test)
 *   test_golden --update GOLDEN_DIR STORE...  write the copies anew
 *
 * Each STORE's dlock__STORE_texts() (src/core/text.h) expands every
 * template for every variant with the code its open() uses.  The test
 * fails when an expanded text differs from its copy (with a diff), when a
 * copy has no text any more (a stale file), when a STORE has no texts
 * function, and when a Lua script calls a function that is neither
 * defined in it nor one of Lua's or Redis's globals: a script that lacks
 * a helper fails here, not in production.  After a change to a .sql or
 * .lua file, `make golden` (or --update) rewrites the copies, and the diff
 * of tests/golden/ is what a reviewer reads.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "text.h"

/* Weak: a store that is not compiled in, or has no texts yet, is NULL
 * here, and the test says so for each STORE it is asked about. */
#define HOOK(s)                                                                \
    void dlock__##s##_texts(dlock__text_emit, void *) __attribute__((weak));
HOOK(sqlite)
HOOK(redis)
HOOK(postgres)
HOOK(mysql)
HOOK(etcd)

static const struct {
    const char *name;
    void (*fn)(dlock__text_emit, void *);
} hooks[] = {
    {"sqlite", dlock__sqlite_texts},     {"redis", dlock__redis_texts},
    {"postgres", dlock__postgres_texts}, {"mysql", dlock__mysql_texts},
    {"etcd", dlock__etcd_texts},
};

struct run {
    const char *dir; /* GOLDEN_DIR */
    const char *store;
    int update;
    int fails;
    size_t nseen, capseen;
    char **seen; /* "VARIANT/NAME" emitted for this store */
};

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t cap = 0, n = 0, r;

    if (f == NULL)
        return NULL;
    do {
        if (n + 4096 + 1 > cap) {
            char *nb = realloc(buf, cap = (n + 4096 + 1) * 2);

            if (nb == NULL) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
        }
        r = fread(buf + n, 1, 4096, f);
        n += r;
    } while (r > 0);
    fclose(f);
    buf[n] = '\0';
    *len = n;
    return buf;
}

static int write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");

    if (f == NULL)
        return -1;
    fputs(text, f);
    return fclose(f);
}

static void mkdirs(const char *path)
{
    char buf[4096];

    snprintf(buf, sizeof(buf), "%s", path);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(buf, 0755);
            *p = '/';
        }
    mkdir(buf, 0755);
}

/* Lua: every bare call NAME( must be to a function the script defines or
 * to a global of Redis's Lua 5.1.  Strings and comments are skipped. */
static const char *const lua_globals[] = {
    "assert", "error",        "ipairs",       "next",     "pairs",
    "pcall",  "print",        "rawequal",     "rawget",   "rawset",
    "select", "setmetatable", "getmetatable", "tonumber", "tostring",
    "type",   "unpack",       "xpcall",       NULL};
static const char *const lua_keywords[] = {
    "and",      "break", "do",   "else",  "elseif", "end", "false", "for",
    "function", "if",    "in",   "local", "nil",    "not", "or",    "repeat",
    "return",   "then",  "true", "until", "while",  NULL};

static int in_list(const char *const *l, const char *w, size_t n)
{
    for (; *l != NULL; l++)
        if (strlen(*l) == n && memcmp(*l, w, n) == 0)
            return 1;
    return 0;
}

/* Skip a string or comment starting at p; the position after it, or p. */
static const char *lua_skip(const char *p)
{
    if (p[0] == '-' && p[1] == '-') {
        while (*p && *p != '\n')
            p++;
        return p;
    }
    if (p[0] == '[' && (p[1] == '[' || p[1] == '=')) {
        const char *q = p + 1;
        size_t eq = 0;
        char close[64] = "]";

        while (*q == '=')
            q++, eq++;
        if (*q != '[' || eq > 60)
            return p;
        memset(close + 1, '=', eq);
        close[eq + 1] = ']';
        close[eq + 2] = '\0';
        q = strstr(q + 1, close);
        return q != NULL ? q + eq + 2 : p + strlen(p);
    }
    if (*p == '\'' || *p == '"') {
        char c = *p++;

        while (*p && *p != c) {
            if (*p == '\\' && p[1])
                p++;
            p++;
        }
        return *p ? p + 1 : p;
    }
    return p;
}

/* Whether text defines w (n bytes) before the call at w: a Redis script
 * has locals only (no globals), and a local is seen from where it is
 * declared on, so a helper pasted after its first caller is nil there. */
static int lua_defines(const char *text, const char *w, size_t n)
{
    char pat[3][160];

    if (n > 100)
        return 0;
    snprintf(pat[0], sizeof(pat[0]), "function %.*s(", (int)n, w);
    snprintf(pat[1], sizeof(pat[1]), "local %.*s =", (int)n, w);
    snprintf(pat[2], sizeof(pat[2]), "local %.*s,", (int)n, w);
    for (int i = 0; i < 3; i++) {
        const char *q = strstr(text, pat[i]);

        /* a whole word: not the tail of a longer name */
        while (q != NULL && q > text &&
               (isalnum((unsigned char)q[-1]) || q[-1] == '_' || q[-1] == '.'))
            q = strstr(q + 1, pat[i]);
        if (q != NULL && q < w)
            return 1;
    }
    return 0;
}

/* The library functions a script may call as LIB.NAME(: a misspelled one
 * (redis.cal) is nil at run time like an undefined helper. */
static const char *const lua_lib_redis[] = {
    "call",  "pcall",         "sha1hex",  "error_reply",        "status_reply",
    "log",   "setresp",       "set_repl", "replicate_commands", "breakpoint",
    "debug", "acl_check_cmd", NULL};
static const char *const lua_lib_string[] = {
    "byte",  "char",  "dump", "find",    "format", "gmatch", "gsub", "len",
    "lower", "match", "rep",  "reverse", "sub",    "upper",  NULL};
static const char *const lua_lib_math[] = {
    "abs",  "ceil",   "cos",        "exp",   "floor", "fmod", "frexp",
    "huge", "ldexp",  "log",        "log10", "max",   "min",  "modf",
    "pow",  "random", "randomseed", "sin",   "sqrt",  "tan",  NULL};
static const char *const lua_lib_table[] = {"concat", "insert", "maxn",
                                            "remove", "sort",   NULL};

/* For a call LIB.NAME( at w (NAME's first byte): 0 when LIB is not one of
 * the tables above or NAME is theirs, else 1. */
static int lua_lib_unknown(const char *text, const char *w, size_t n)
{
    static const struct {
        const char *lib;
        const char *const *names;
    } libs[] = {{"redis", lua_lib_redis},
                {"string", lua_lib_string},
                {"math", lua_lib_math},
                {"table", lua_lib_table}};

    for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]); i++) {
        size_t l = strlen(libs[i].lib);

        if ((size_t)(w - text) < l + 1 ||
            memcmp(w - l - 1, libs[i].lib, l) != 0)
            continue;
        if (w - l - 1 > text && (isalnum((unsigned char)w[-l - 2]) ||
                                 w[-l - 2] == '_' || w[-l - 2] == '.'))
            continue;
        return !in_list(libs[i].names, w, n);
    }
    return 0;
}

static int lua_check(const char *what, const char *text)
{
    int bad = 0;
    const char *p = text;

    while (*p) {
        const char *s = lua_skip(p);

        if (s != p) {
            p = s;
            continue;
        }
        if (isalpha((unsigned char)*p) || *p == '_') {
            const char *w = p, *q;
            size_t n;

            while (isalnum((unsigned char)*p) || *p == '_')
                p++;
            n = (size_t)(p - w);
            q = p;
            while (*q == ' ' || *q == '\t')
                q++;
            /* f(...), and f'...', f"...", f{...}: calls too */
            if ((*q != '(' && *q != '\'' && *q != '"' && *q != '{') ||
                in_list(lua_keywords, w, n) || in_list(lua_globals, w, n))
                continue;
            /* a field or method (x.f(, x:f(), not a concatenation (..f() */
            if (w > text && (w[-1] == '.' || w[-1] == ':') &&
                !(w - 1 > text && w[-1] == '.' && w[-2] == '.')) {
                if (w[-1] == '.' && lua_lib_unknown(text, w, n)) {
                    fprintf(stderr,
                            "FAIL %s: calls .%.*s(), which its library "
                            "(redis, string, math, table) does not have\n",
                            what, (int)n, w);
                    bad = 1;
                }
                continue;
            }
            if (w >= text + 9 && memcmp(w - 9, "function ", 9) == 0)
                continue;
            if (!lua_defines(text, w, n)) {
                fprintf(stderr,
                        "FAIL %s: calls %.*s(), which it does not "
                        "define before\n",
                        what, (int)n, w);
                bad = 1;
            }
            continue;
        }
        p++;
    }
    return bad;
}

static void emit(void *arg, const char *variant, const char *name,
                 const char *text)
{
    struct run *r = arg;
    char path[4096], what[512];
    size_t len = 0;
    char *old;

    snprintf(what, sizeof(what), "%s/%s/%s", r->store, variant, name);
    snprintf(path, sizeof(path), "%s/%s", r->dir, what);
    if (r->nseen == r->capseen) {
        size_t cap = r->capseen ? r->capseen * 2 : 64;
        char **ns = realloc(r->seen, cap * sizeof(*ns));

        if (ns == NULL)
            abort();
        r->seen = ns;
        r->capseen = cap;
    }
    r->seen[r->nseen] = malloc(strlen(variant) + strlen(name) + 2);
    if (r->seen[r->nseen] == NULL)
        abort();
    sprintf(r->seen[r->nseen++], "%s/%s", variant, name);
    if (text == NULL) {
        fprintf(stderr, "FAIL %s: did not expand\n", what);
        r->fails++;
        return;
    }
    if (strlen(name) > 4 && strcmp(name + strlen(name) - 4, ".lua") == 0)
        r->fails += lua_check(what, text);
    if (r->update) {
        char dir[4096];

        snprintf(dir, sizeof(dir), "%s/%s/%s", r->dir, r->store, variant);
        mkdirs(dir);
        if (write_file(path, text) != 0) {
            fprintf(stderr, "FAIL cannot write %s: %s\n", path,
                    strerror(errno));
            r->fails++;
        }
        return;
    }
    old = slurp(path, &len);
    if (old == NULL) {
        fprintf(stderr,
                "FAIL %s: no golden copy (run `make golden`, "
                "then review and commit %s)\n",
                what, path);
        r->fails++;
        return;
    }
    if (len != strlen(text) || memcmp(old, text, len) != 0) {
        char tmp[] = "/tmp/dlock-golden-XXXXXX", cmd[8192];
        int fd = mkstemp(tmp);

        fprintf(stderr, "FAIL %s differs from its golden copy:\n", what);
        if (fd >= 0) {
            FILE *f = fdopen(fd, "w");

            if (f != NULL) {
                fputs(text, f);
                fclose(f);
                snprintf(cmd, sizeof(cmd), "diff -u '%s' '%s' >&2", path, tmp);
                if (system(cmd) == -1)
                    perror("diff");
            }
            unlink(tmp);
        }
        r->fails++;
    }
    free(old);
}

/* Golden files of this store that nothing emitted: stale copies. */
static void stale(struct run *r)
{
    char base[4096];
    DIR *d;
    struct dirent *v;

    snprintf(base, sizeof(base), "%s/%s", r->dir, r->store);
    d = opendir(base);
    if (d == NULL)
        return;
    while ((v = readdir(d)) != NULL) {
        char sub[4096 + 512];
        DIR *e;
        struct dirent *f;

        if (v->d_name[0] == '.')
            continue;
        snprintf(sub, sizeof(sub), "%s/%s", base, v->d_name);
        e = opendir(sub);
        if (e == NULL)
            continue;
        while ((f = readdir(e)) != NULL) {
            char key[600];
            int found = 0;

            if (f->d_name[0] == '.')
                continue;
            snprintf(key, sizeof(key), "%s/%s", v->d_name, f->d_name);
            for (size_t i = 0; i < r->nseen && !found; i++)
                found = strcmp(r->seen[i], key) == 0;
            if (found)
                continue;
            if (r->update) {
                char path[8192];

                snprintf(path, sizeof(path), "%s/%s", sub, f->d_name);
                unlink(path);
            } else {
                fprintf(stderr,
                        "FAIL %s/%s: a golden copy of a text the "
                        "store no longer has\n",
                        r->store, key);
                r->fails++;
            }
        }
        closedir(e);
    }
    closedir(d);
}

/* --self-test: the Lua check catches what fails at run time (each bad
 * script errors in Redis: nil global, nil field) and passes the good. */
static int self_test(void)
{
    static const char *const bad[] = {
        "return fenc(1)\n",
        ("local function a() return b() end\n"
         "local function b() return 1 end\nreturn a()\n"),
        "local r = helper(1)\nlocal function helper(x) return x end\n",
        "local function fence(n) return n end\nreturn 'x'..fenc(1)\n",
        "return redis.cal('GET', KEYS[1])\n",
        "return string.fromat('%d', 1)\n",
        "return helper'x'\n",
    };
    static const char *const good[] = {
        "local function f(n) return n end\nreturn 'x'..f(1)\n",
        ("local function g(n) if n > 0 then return g(n - 1) end return 0 end\n"
         "return g(2)\n"),
        "return redis.call('GET', KEYS[1]) .. string.format('%d', 1)\n",
        "local t = {}\ntable.insert(t, math.floor(1.5))\nreturn t\n",
    };
    int fails = 0;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (!lua_check("self-test (expected)", bad[i])) {
            fprintf(stderr, "FAIL self-test: not caught:\n%s", bad[i]);
            fails++;
        }
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        if (lua_check("self-test", good[i]))
            fails++;
    printf("%s lua check self-test\n", fails ? "FAIL" : "ok  ");
    return fails != 0;
}

int main(int argc, char **argv)
{
    int update = 0, fails = 0, i = 1;
    const char *dir;

    if (argc == 2 && strcmp(argv[1], "--self-test") == 0)
        return self_test();
    if (argc > 1 && strcmp(argv[1], "--update") == 0)
        update = 1, i++;
    if (argc - i < 2) {
        fprintf(stderr, "usage: %s [--update] GOLDEN_DIR STORE...\n", argv[0]);
        return 2;
    }
    dir = argv[i++];
    for (; i < argc; i++) {
        struct run r = {.dir = dir, .store = argv[i], .update = update};
        void (*fn)(dlock__text_emit, void *) = NULL;

        for (size_t k = 0; k < sizeof(hooks) / sizeof(hooks[0]); k++)
            if (strcmp(hooks[k].name, argv[i]) == 0)
                fn = hooks[k].fn;
        if (fn == NULL) {
            fprintf(stderr,
                    "FAIL %s: no dlock__%s_texts() in the library "
                    "(src/core/text.h)\n",
                    argv[i], argv[i]);
            fails++;
            continue;
        }
        fn(emit, &r);
        if (r.nseen == 0) {
            fprintf(stderr, "FAIL %s: its texts function emitted nothing\n",
                    argv[i]);
            r.fails++;
        }
        stale(&r);
        printf("%s %s: %zu texts, %d failures\n",
               update ? "updated" : "checked", argv[i], r.nseen, r.fails);
        for (size_t k = 0; k < r.nseen; k++)
            free(r.seen[k]);
        free(r.seen);
        fails += r.fails;
    }
    return fails ? 1 : 0;
}
