/*
 * sha1_fail.c - libcrypto refusing SHA1 is an error, never abort().
 *
 * The MySQL store hashes a long name's GET_LOCK key and a semaphore's slot
 * prefix, the Redis store its Lua scripts, with EVP_Digest (src/stores/
 * sha1.c).  EVP_Digest fails when libcrypto is out of memory or no
 * provider offers SHA1 (an OPENSSL_CONF that activates none); sha1.c used
 * to abort() the host process then.  This program defines EVP_Digest
 * itself (the executable's definition interposes on libdlock's calls),
 * passing through to libcrypto's unless told to fail, and asserts that
 * each caller returns DLOCK_EINVAL or DLOCK_ENOMEM with a message naming
 * libcrypto, and works again once libcrypto does.
 *
 *     adv44_sha1_fail mysql|redis URL
 *
 * No URL (the store's server not there): 77, a failure with CI=true.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlock.h"

#define MARK "adv44-sha1-"

/* 0: libcrypto's; 1: fail for data starting with MARK (a name's key and
 * slot prefix; the client library's own digests pass); 2: fail all. */
static int fail_mode;

/* Default visibility: the build hides symbols (-fvisibility=hidden), and
 * a hidden one is not in the dynamic table libdlock's calls look in. */
__attribute__((visibility("default"))) int
EVP_Digest(const void *data, size_t count, unsigned char *md,
           unsigned int *size, const EVP_MD *type, ENGINE *impl)
{
    typedef int (*fn)(const void *, size_t, unsigned char *, unsigned int *,
                      const EVP_MD *, ENGINE *);
    static fn real;

    if (fail_mode == 2 || (fail_mode == 1 && count >= strlen(MARK) &&
                           memcmp(data, MARK, strlen(MARK)) == 0))
        return 0;
    if (real == NULL)
        *(void **)&real = dlsym(RTLD_NEXT, "EVP_Digest");
    if (real == NULL)
        return 0;
    return real(data, count, md, size, type, impl);
}

static int failures;

static void expect_err(const char *what, int rc)
{
    if ((rc == DLOCK_EINVAL || rc == DLOCK_ENOMEM) &&
        strstr(dlock_errmsg(), "libcrypto") != NULL) {
        printf("ok   %s: rc %d: %s\n", what, rc, dlock_errmsg());
        return;
    }
    printf("FAIL %s: rc %d (%s), want EINVAL/ENOMEM naming libcrypto\n", what,
           rc, dlock_errmsg());
    failures++;
}

static void expect_ok(const char *what, int rc)
{
    if (rc == DLOCK_OK) {
        printf("ok   %s\n", what);
        return;
    }
    printf("FAIL %s: rc %d (%s)\n", what, rc, dlock_errmsg());
    failures++;
}

static int mysql_case(const char *url)
{
    char name[128];
    dlock_store *s = NULL;
    dlock_lock *lk = NULL;
    dlock_info *info = NULL;
    dlock_options o;
    unsigned removed = 0;
    int rc;

    /* 90 characters: a key of 24 of them and the SHA1 of all. */
    snprintf(name, sizeof(name), "%s%079d", MARK, 44);
    if (dlock_store_open(&s, url) != DLOCK_OK) {
        printf("FAIL cannot open %s: %s\n", url, dlock_errmsg());
        return 1;
    }
    dlock_options_init(&o, DLOCK_OPTIONS_VERSION);
    o.wait_ms = 0;
    fail_mode = 1;
    expect_err("acquire of a long name", dlock_acquire(&lk, s, name, &o));
    o.wait_ms = 300;
    expect_err("waiting acquire of a long name",
               dlock_acquire(&lk, s, name, &o));
    o.wait_ms = 0;
    o.limit = 2;
    expect_err("acquire of a semaphore", dlock_acquire(&lk, s, MARK "sem", &o));
    o.limit = 1;
    expect_err("status of a long name", dlock_status(&info, s, name));
    dlock_info_free(info);
    info = NULL;
    expect_err("force-release of a long name",
               dlock_force_release(&removed, s, name));
    fail_mode = 0;
    rc = dlock_acquire(&lk, s, name, &o);
    expect_ok("acquire of a long name once libcrypto works", rc);
    if (rc == DLOCK_OK)
        expect_ok("release", dlock_release(lk));
    o.limit = 2;
    rc = dlock_acquire(&lk, s, MARK "sem", &o);
    expect_ok("acquire of a semaphore once libcrypto works", rc);
    if (rc == DLOCK_OK)
        expect_ok("release of the semaphore", dlock_release(lk));
    dlock_store_close(s);
    return 0;
}

static int redis_case(const char *url)
{
    dlock_store *s = NULL;
    int rc;

    fail_mode = 2;
    expect_err("open (the scripts' SHA1)", dlock_store_open(&s, url));
    fail_mode = 0;
    rc = dlock_store_open(&s, url);
    expect_ok("open once libcrypto works", rc);
    if (rc == DLOCK_OK)
        dlock_store_close(s);
    return 0;
}

int main(int argc, char **argv)
{
    const char *ci = getenv("CI");
    const char *url = argc > 2 ? argv[2] : "";

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2 || (strcmp(argv[1], "mysql") && strcmp(argv[1], "redis"))) {
        fprintf(stderr, "usage: %s mysql|redis URL\n", argv[0]);
        return 2;
    }
    if (url[0] == '\0') {
        printf("no %s URL: skipped\n", argv[1]);
        return ci != NULL && strcmp(ci, "true") == 0 ? 1 : 77;
    }
    if ((strcmp(argv[1], "mysql") == 0 ? mysql_case : redis_case)(url) != 0)
        return 1;
    printf("%s\n", failures ? "FAILED" : "PASSED");
    return failures ? 1 : 0;
}
