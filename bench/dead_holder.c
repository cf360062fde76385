/*
 * dead_holder.c - dlock-bench part 4: how long after kill -9 of its
 * holder a contender holds the lock.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run.h"

void bench_dead_holder(void)
{
    const int rounds = quick ? 3 : 5;
    int64_t t[16];
    char name[128];

    snprintf(name, sizeof(name), "%s/dead", run_id);
    for (int r = 0; r < rounds; r++) {
        int p[2];
        pid_t pid;
        char c;
        dlock_store *s;
        dlock_lock *l;
        dlock_options o = DLOCK_OPTIONS_INIT;
        int64_t t0;

        if (pipe(p) != 0)
            exit(1);
        pid = fork();
        if (pid == 0) {
            dlock_store *cs = open_store();
            dlock_options co = DLOCK_OPTIONS_INIT;
            dlock_lock *cl;

            co.ttl_ms = 5000;
            if (dlock_acquire(&cl, cs, name, &co) != DLOCK_OK)
                _exit(1);
            (void)!write(p[1], "H", 1);
            for (;;)
                pause();
        }
        close(p[1]);
        if (read(p[0], &c, 1) != 1)
            die("holder did not start");
        close(p[0]);
        s = open_store();
        o.wait_ms = 20000;
        kill(pid, SIGKILL);
        t0 = now_ns();
        waitpid(pid, NULL, 0);
        if (dlock_acquire(&l, s, name, &o) != DLOCK_OK)
            die("acquire after kill");
        t[r] = now_ns() - t0;
        dlock_release(l);
        dlock_store_close(s);
    }
    {
        int64_t med = pct(t, (size_t)rounds, 0.5);

        printf("dead holder  free again %.1f ms after kill -9 (median of %d, "
               "lease 5000 ms)\n",
               med / 1e6, rounds);
        if (json != NULL)
            fprintf(json, "  \"dead_holder\": {\n");
        jnum("ms_after_kill", med / 1e6, 0);
        jnum("lease_ms", 5000, 1);
        if (json != NULL)
            fprintf(json, "  },\n");
    }
}
