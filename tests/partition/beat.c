/*
 * beat: signs of life on the monotonic clock, for the partition tests.
 *
 *   beat FILE MS [COUNT]   append the CLOCK_MONOTONIC time ("S.NNNNNNNNN\n")
 *                          to FILE at once and then every MS milliseconds,
 *                          COUNT lines in all (default: until killed)
 *   beat -n                print the CLOCK_MONOTONIC time once
 *
 * Every network namespace shares the kernel's monotonic clock, so lines
 * written by commands on different "hosts" compare directly.  One write(2)
 * per line on an O_APPEND descriptor: a line is whole or absent, and the
 * last line of a killed command is its last sign of life.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int format_now(char *buf, size_t len, struct timespec *now)
{
    clock_gettime(CLOCK_MONOTONIC, now);
    return snprintf(buf, len, "%lld.%09ld\n", (long long)now->tv_sec,
                    now->tv_nsec);
}

int main(int argc, char **argv)
{
    char line[64];
    struct timespec now, next;
    long ms, count = -1;
    int fd, n;

    if (argc == 2 && strcmp(argv[1], "-n") == 0) {
        n = format_now(line, sizeof line, &now);
        return fwrite(line, 1, (size_t)n, stdout) == (size_t)n ? 0 : 1;
    }
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: beat FILE MS [COUNT] | beat -n\n");
        return 64;
    }
    ms = strtol(argv[2], NULL, 10);
    if (argc == 4)
        count = strtol(argv[3], NULL, 10);
    if (ms <= 0 || (argc == 4 && count <= 0)) {
        fprintf(stderr, "beat: MS and COUNT must be > 0\n");
        return 64;
    }
    fd = open(argv[1], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
        fprintf(stderr, "beat: %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &next);
    for (;;) {
        n = format_now(line, sizeof line, &now);
        if (write(fd, line, (size_t)n) != n) {
            fprintf(stderr, "beat: write: %s\n", strerror(errno));
            return 1;
        }
        if (count > 0 && --count == 0)
            break;
        next.tv_nsec += ms % 1000 * 1000000L;
        next.tv_sec += ms / 1000 + next.tv_nsec / 1000000000L;
        next.tv_nsec %= 1000000000L;
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) ==
               EINTR)
            ;
    }
    return close(fd) == 0 ? 0 : 1;
}
