/*
 * test_mysql_bad.c - bad input and bad servers: clear errors, bounded
 * time, no crash or leak, no password in any message.
 *
 *     test_mysql_bad URL     (or DLOCK_TEST_MYSQL_URL)
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>

#include "raw.h"

/* A TCP server on 127.0.0.1 that either never says a word (mode 0) or
 * answers garbage and hangs up (mode 1). */
struct fake {
    int fd, mode, port;
    pthread_t thread;
};

static void *fake_main(void *arg)
{
    struct fake *f = arg;
    int c;

    while ((c = accept(f->fd, NULL, NULL)) >= 0) {
        if (f->mode == 1) {
            static const char junk[] = "\x05\x00\x00\x00garbage, not MySQL";

            (void)!write(c, junk, sizeof(junk));
            close(c);
        }
        /* mode 0: keep it open and silent (leaked until exit) */
    }
    return NULL;
}

static void fake_start(struct fake *f, int mode)
{
    struct sockaddr_in a;
    socklen_t len = sizeof(a);

    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    f->mode = mode;
    f->fd = socket(AF_INET, SOCK_STREAM, 0);
    if (f->fd < 0 || bind(f->fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
        listen(f->fd, 8) != 0 ||
        getsockname(f->fd, (struct sockaddr *)&a, &len) != 0) {
        perror("fake server");
        exit(2);
    }
    f->port = ntohs(a.sin_port);
    pthread_create(&f->thread, NULL, fake_main, f);
}

/* A port nobody listens on (bound, then closed). */
static int dead_port(void)
{
    struct fake f;
    int port;

    memset(&f, 0, sizeof(f));
    f.fd = socket(AF_INET, SOCK_STREAM, 0);
    {
        struct sockaddr_in a;
        socklen_t len = sizeof(a);

        memset(&a, 0, sizeof(a));
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (bind(f.fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
            getsockname(f.fd, (struct sockaddr *)&a, &len) != 0)
            exit(2);
        port = ntohs(a.sin_port);
    }
    close(f.fd);
    return port;
}

static void expect_open_fails(const char *url, int want1, int want2,
                              long long max_ms, const char *secret,
                              const char *needle)
{
    dlock_store *s = (dlock_store *)&s;
    long long t0 = mono_ms(), took;
    int rc = dlock_store_open(&s, url);

    took = mono_ms() - t0;
    if (rc != want1 && rc != want2)
        fprintf(stderr, "  open(%s) = %d: %s\n", url, rc, dlock_errmsg());
    EXPECT(rc == want1 || rc == want2);
    EXPECT(s == NULL);
    EXPECT(dlock_errmsg()[0] != '\0');
    if (took > max_ms)
        fprintf(stderr, "  open(%s) took %lld ms\n", url, took);
    EXPECT(took <= max_ms);
    if (secret != NULL)
        EXPECT(strstr(dlock_errmsg(), secret) == NULL);
    if (needle != NULL && strstr(dlock_errmsg(), needle) == NULL)
        fprintf(stderr, "  '%s' not in: %s\n", needle, dlock_errmsg());
    if (needle != NULL)
        EXPECT(strstr(dlock_errmsg(), needle) != NULL);
}

static void t_bad_urls(const struct target *t)
{
    static const char *const bad[] = {
        "mysql://",
        "mysql://u:p@127.0.0.1", /* no database */
        "mysql://u:p@127.0.0.1/",
        "mysql://u:p@127.0.0.1/db/extra",
        "mysql://u:p@127.0.0.1/db?table=bad-name",
        "mysql://u:p@127.0.0.1/db?table=a%60b",
        "mysql://u:p@127.0.0.1/db?table=",
        "mysql://u:p@127.0.0.1/db?quote=weird",
        "mysql://u:p@127.0.0.1/db?mode=fast",
        "mysql://u:p@127.0.0.1/db?bogus=1",
        "mysql://u:p@127.0.0.1/db?timeout=abc",
        "mysql://u:p@127.0.0.1/db?timeout=0",
        "mysql://u:p@127.0.0.1/db?ssl=maybe",
    };
    /* Refused by the name of the parameter: given twice (which one
     * counted was anyone's guess), or empty. */
    static const char *const named[][2] = {
        {"mysql://u:p@127.0.0.1/db?quote=", "quote="},
        {"mysql://u:p@127.0.0.1/db?table=a&table=b", "\"table\""},
        {"mysql://u:p@127.0.0.1/db?mode=lease&mode=lock", "\"mode\""},
    };
    (void)t;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        expect_open_fails(bad[i], DLOCK_EINVAL, DLOCK_EINVAL, 200, NULL, NULL);
    for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++)
        expect_open_fails(named[i][0], DLOCK_EINVAL, DLOCK_EINVAL, 200, NULL,
                          named[i][1]);
    /* ddl needs no server, checks the same things */
    {
        char *ddl = NULL;

        EXPECT_RC(dlock_ddl(&ddl, "mysql://u:p@h/db?table=my_locks&quote=ansi"),
                  DLOCK_OK);
        EXPECT(ddl != NULL && strstr(ddl, "\"my_locks\"") != NULL &&
               strstr(ddl, "\"my_locks_fences\"") != NULL);
        dlock_free(ddl);
        EXPECT_RC(dlock_ddl(&ddl, "mysql://u:p@h/db?table=x;y"), DLOCK_EINVAL);
    }
}

static void t_bad_servers(const struct target *t)
{
    char url[512];
    struct fake silent, junk;

    /* wrong password: refused, password not echoed */
    snprintf(url, sizeof(url), "mysql://%s:Wrong-Secret-42@%s:%u/%s", t->user,
             t->host, t->port, t->db);
    expect_open_fails(url, DLOCK_ESTORE, DLOCK_EUNAVAIL, 6000,
                      "Wrong-Secret-42", "Access denied");
    /* unknown database */
    snprintf(url, sizeof(url), "mysql://%s:%s@%s:%u/no_such_db_here", t->user,
             t->password, t->host, t->port);
    expect_open_fails(url, DLOCK_ESTORE, DLOCK_ESTORE, 6000, t->password,
                      "no_such_db_here");
    /* nobody listening */
    snprintf(url, sizeof(url), "mysql://%s:%s@127.0.0.1:%d/%s", t->user,
             t->password, dead_port(), t->db);
    expect_open_fails(url, DLOCK_EUNAVAIL, DLOCK_EUNAVAIL, 3000, t->password,
                      NULL);
    /* a server that never answers: bounded by ?timeout= */
    fake_start(&silent, 0);
    snprintf(url, sizeof(url), "mysql://%s:%s@127.0.0.1:%d/%s?timeout=1s",
             t->user, t->password, silent.port, t->db);
    expect_open_fails(url, DLOCK_EUNAVAIL, DLOCK_EUNAVAIL, 8000, t->password,
                      NULL);
    /* a server that answers garbage */
    fake_start(&junk, 1);
    snprintf(url, sizeof(url), "mysql://%s:%s@127.0.0.1:%d/%s?timeout=1s",
             t->user, t->password, junk.port, t->db);
    expect_open_fails(url, DLOCK_EUNAVAIL, DLOCK_ESTORE, 8000, t->password,
                      NULL);
}

/* A user who may use but not create tables: a clear message for a missing
 * table; with the tables there, it works; a KILL it may not send is
 * reported. */
static void t_privileges(const char *main_url, const struct target *t)
{
    dlock_options o = DLOCK_OPTIONS_INIT;
    char url[512];
    dlock_store *s = NULL, *mine = NULL;
    dlock_lock *l = NULL, *l2 = NULL;
    MYSQL *probe = raw_connect_as(t, "other", "other-pw");
    const char *n = uniq("no-kill");

    if (probe == NULL) {
        printf("  (no 'other' user on this server: privilege checks "
               "skipped)\n");
        return;
    }
    mysql_close(probe);
    snprintf(url, sizeof(url), "mysql://other:other-pw@%s:%u/%s?table=%s",
             t->host, t->port, t->db, "dlock_never_created");
    expect_open_fails(url, DLOCK_ESTORE, DLOCK_ESTORE, 6000, "other-pw",
                      "may not create");
    snprintf(url, sizeof(url), "mysql://other:other-pw@%s:%u/%s", t->host,
             t->port, t->db);
    if (dlock_store_open(&mine, main_url) != DLOCK_OK) /* makes the tables */
        exit(2);
    EXPECT_RC(dlock_store_open(&s, url), DLOCK_OK);
    if (s == NULL) {
        dlock_store_close(mine);
        return;
    }
    /* The holder's lease runs out; another user cannot KILL it. */
    o.ttl_ms = 300;
    o.auto_renew = 0;
    EXPECT_RC(dlock_acquire(&l, mine, n, &o), DLOCK_OK);
    usleep(1300 * 1000); /* lease over: that is the point */
    EXPECT_RC(dlock_acquire(&l2, s, n, &o), DLOCK_BUSY);
    if (strstr(dlock_errmsg(), "may not KILL") == NULL)
        fprintf(stderr, "  message: %s\n", dlock_errmsg());
    EXPECT(strstr(dlock_errmsg(), "may not KILL") != NULL);
    /* The holder finds its lease gone; once it lets go the other user
     * gets the lock. */
    EXPECT_RC(dlock_release(l), DLOCK_LOST);
    EXPECT_RC(dlock_acquire(&l2, s, n, &o), DLOCK_OK);
    EXPECT_RC(dlock_release(l2), DLOCK_OK);
    dlock_store_close(s);
    dlock_store_close(mine);
}

/* The connection of a held lock dies under it (as on a server restart):
 * LOST everywhere, nothing crashes, the name is free again. */
static void t_connection_dies(const char *url, const struct target *t)
{
    dlock_options o = DLOCK_OPTIONS_INIT;
    MYSQL *db = raw_connect(t);
    const char *n = uniq("conn-dies");
    dlock_store *s;
    dlock_lock *l = NULL, *l2 = NULL;
    long long id;

    if (dlock_store_open(&s, url) != DLOCK_OK)
        exit(2);
    o.auto_renew = 0;
    EXPECT_RC(dlock_acquire(&l, s, n, &o), DLOCK_OK);
    id = sqlf(db, NULL,
              "SELECT connection_id FROM shared_locks WHERE "
              "name = %s",
              lit(db, n));
    EXPECT(id > 0 && sqlf(db, NULL, "KILL CONNECTION %lld", id) == 0);
    EXPECT_RC(dlock_extend(l, 0), DLOCK_LOST);
    EXPECT_RC(dlock_assert_ttl(l, 0), DLOCK_LOST);
    EXPECT_RC(dlock_release(l), DLOCK_LOST);
    EXPECT_RC(dlock_acquire(&l2, s, n, &o), DLOCK_OK); /* free at once */
    /* Its connection goes back to the pool when released; it dies there
     * (as on a server restart): the next acquire still works. */
    id = sqlf(db, NULL,
              "SELECT connection_id FROM shared_locks WHERE "
              "name = %s",
              lit(db, n));
    EXPECT_RC(dlock_release(l2), DLOCK_OK);
    EXPECT(id > 0 && sqlf(db, NULL, "KILL CONNECTION %lld", id) == 0);
    EXPECT_RC(dlock_acquire(&l2, s, n, &o), DLOCK_OK);
    EXPECT(sqlf(db, NULL,
                "SELECT connection_id FROM shared_locks WHERE "
                "name = %s",
                lit(db, n)) != id);
    EXPECT_RC(dlock_release(l2), DLOCK_OK);
    dlock_store_close(s);
    mysql_close(db);
}

static void t_odd_names(const char *url)
{
    static const char *const odd[] = {"back`tick`", "`; DROP TABLE `x",
                                      "\\'\\\"", "quote'' twice", "%s%n%x"};
    dlock_options o = DLOCK_OPTIONS_INIT;
    dlock_store *s;
    dlock_info info;

    if (dlock_store_open(&s, url) != DLOCK_OK)
        exit(2);
    for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
        dlock_lock *l = NULL, *l2 = NULL;
        const char *n = uniq(odd[i]);

        EXPECT_RC(dlock_acquire(&l, s, n, &o), DLOCK_OK);
        EXPECT_RC(dlock_acquire(&l2, s, n, &o), DLOCK_BUSY);
        EXPECT_RC(test_status(s, n, &info), DLOCK_OK);
        EXPECT(info.held && strcmp(info.name, n) == 0);
        EXPECT_RC(dlock_release(l), DLOCK_OK);
    }
    dlock_store_close(s);
}

int main(int argc, char **argv)
{
    const char *url = test_url(argc, argv);
    struct target t;

    if (parse_target(url, &t) != 0) {
        fprintf(stderr, "cannot parse the URL\n");
        return 2;
    }
    t_bad_urls(&t);
    t_bad_servers(&t);
    t_privileges(url, &t);
    t_connection_dies(url, &t);
    t_odd_names(url);
    printf("bad input: %d failure(s)\n", failures);
    return failures != 0;
}
