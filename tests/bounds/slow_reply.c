/*
 * slow_reply.c - a store call after open, against a server that answers
 * one byte at a time (dribble.py "fast", switched to dribbling once the
 * store is open), ends within the URL's timeout + a margin, with
 * DLOCK_EUNAVAIL (issue 34, item 1).
 *   bounds-slow-reply URL CONTROLPORT LIMIT_MS
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "dlock.h"

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Tell the proxy to dribble from now on; returns once it does. */
static int start_dribbling(int port)
{
    struct sockaddr_in sa;
    char ok[4] = "";
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((unsigned short)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
        write(fd, "dribble\n", 8) != 8 || read(fd, ok, 3) != 3 ||
        strncmp(ok, "ok\n", 3) != 0) {
        perror("control");
        return -1;
    }
    close(fd);
    return 0;
}

static int check(const char *what, int rc, double t0, double limit_s)
{
    double took = now_s() - t0;
    int bad = rc != DLOCK_EUNAVAIL || took > limit_s;

    printf("%s %s: rc %d after %.2f s (limit %.2f s): %s\n",
           bad ? "FAIL" : "ok  ", what, rc, took, limit_s, dlock_errmsg());
    return bad;
}

int main(int argc, char **argv)
{
    dlock_options o = DLOCK_OPTIONS_INIT;
    dlock_store *s = NULL;
    dlock_info *info = NULL;
    dlock_lock *lk = NULL;
    double limit_s, t0;
    int fails = 0, rc;

    if (argc != 4) {
        fprintf(stderr, "usage: %s URL CONTROLPORT LIMIT_MS\n", argv[0]);
        return 2;
    }
    limit_s = atof(argv[3]) / 1000.0;
    if (dlock_store_open(&s, argv[1]) != DLOCK_OK) {
        printf("FAIL open (not dribbling yet): %s\n", dlock_errmsg());
        return 1;
    }
    if (start_dribbling(atoi(argv[2])) != 0)
        return 1;
    t0 = now_s();
    rc = dlock_status(&info, s, "bounds-slow");
    fails += check("status", rc, t0, limit_s);
    dlock_info_free(info);
    o.wait_ms = 0;
    t0 = now_s();
    rc = dlock_acquire(&lk, s, "bounds-slow", &o);
    fails += check("try-acquire", rc, t0, limit_s);
    if (lk != NULL)
        dlock_release(lk);
    dlock_store_close(s);
    printf("%d of 2 checks failed\n", fails);
    return fails != 0;
}
