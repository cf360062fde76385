/* shared: two readers hold a shared lock together; a writer has to wait.
 *   shared [URL]   (SQLite, Redis, PostgreSQL; MySQL has no shared locks) */
#include <dlock.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    const char *url = argc > 1 ? argv[1] : dlock_default_url();
    dlock_options rd = DLOCK_OPTIONS_INIT, wr = DLOCK_OPTIONS_INIT;
    dlock_store *store;
    dlock_lock *r1 = NULL, *r2 = NULL, *w = NULL;
    int ok;

    rd.shared = 1;
    if (dlock_store_open(&store, url) != DLOCK_OK) {
        fprintf(stderr, "shared: %s\n", dlock_errmsg());
        return 69;
    }
    ok = dlock_acquire(&r1, store, "examples/shared", &rd) == DLOCK_OK &&
         dlock_acquire(&r2, store, "examples/shared", &rd) == DLOCK_OK &&
         dlock_acquire(&w, store, "examples/shared", &wr) == DLOCK_BUSY;
    printf("two readers at once, writer kept out: %s\n", ok ? "yes" : "no");
    if (!ok)
        fprintf(stderr, "shared: %s\n", dlock_errmsg());
    dlock_release(r1);
    dlock_release(r2);
    ok = ok && dlock_acquire(&w, store, "examples/shared", &wr) == DLOCK_OK;
    printf("writer after the readers left: %s\n", ok ? "yes" : "no");
    dlock_release(w);
    dlock_store_close(store);
    return ok ? 0 : 1;
}
