/*
 * path.c - where a SQLite store's file may be: the default store's
 * private directory and file, no symbolic link at the database or its
 * companions, the directory above it resolved.  Pure path checks, apart
 * from the database file they open; store.c opens the database.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "errors.h"
#include "privdir.h"
#include "sq.h"
#include "strutil.h"
#include "url.h"

/* The default store lives in a directory private to its user
 * (privdir.c); its file is created 0600 (SQLite gives the -wal and -shm
 * files the database file's permissions). */
int dlock__sq_default_file(const char *path)
{
    char dir[4096];
    char *slash;
    int fd, rc;

    dlock__strlcpy(dir, path, sizeof(dir));
    slash = strrchr(dir, '/');
    if (slash != NULL && slash != dir) {
        *slash = '\0';
        rc = dlock__private_dir(dir);
        if (rc != DLOCK_OK)
            return rc;
    }
    fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0)
        close(fd);
    return DLOCK_OK;
}

/* Whoever can create a symbolic link where dlock opens a database (a
 * directory writable by others) could make it create, convert to WAL and
 * write into any file the caller can write.  So no sqlite store follows a
 * link at the file or at its companions; SQLITE_OPEN_NOFOLLOW covers the
 * race on the file itself. */
int dlock__sq_refuse_links(const char *path)
{
    static const char *const suffix[] = {"", "-wal", "-shm", "-journal"};
    char p[4200];
    struct stat st;

    for (size_t i = 0; i < sizeof(suffix) / sizeof(suffix[0]); i++) {
        if ((size_t)snprintf(p, sizeof(p), "%s%s", path, suffix[i]) >=
            sizeof(p))
            return dlock__seterr(DLOCK_EINVAL, "sqlite path too long: %s",
                                 path);
        if (lstat(p, &st) == 0 && S_ISLNK(st.st_mode))
            return dlock__seterr(DLOCK_EUNAVAIL,
                                 "refusing %s: it is a symbolic link (dlock "
                                 "does not follow links at a lock database "
                                 "or its -wal, -shm, -journal files); use "
                                 "the real path",
                                 p);
    }
    return DLOCK_OK;
}

/* path with its directory resolved (malloc'd in *out).  SQLite's
 * SQLITE_OPEN_NOFOLLOW refuses a link anywhere in the path, but links in
 * the directories above the file (/var/run -> /run, a symlinked home) are
 * the admin's choice and worked before: only the file itself (and its
 * companions, dlock__sq_refuse_links()) must not be one. */
int dlock__sq_real_path(const char *path, char **out)
{
    const char *slash = strrchr(path, '/');
    char *dir, *rdir;
    size_t need;

    dir = dlock__strndup(path, slash > path ? (size_t)(slash - path) : 1);
    if (dir == NULL)
        return dlock__enomem();
    rdir = realpath(dir, NULL);
    if (rdir == NULL) {
        int e = errno;
        int rc = dlock__seterr(
            e == EACCES || e == EPERM ? DLOCK_ESTORE : DLOCK_EUNAVAIL,
            "cannot open %s: directory %s: %s", path, dir, strerror(e));

        free(dir);
        return rc;
    }
    free(dir);
    need = strlen(rdir) + strlen(slash) + 1;
    *out = malloc(need);
    if (*out == NULL) {
        free(rdir);
        return dlock__enomem();
    }
    /* rdir is "/" only for a file in the root directory. */
    snprintf(*out, need, "%s%s", strcmp(rdir, "/") == 0 ? "" : rdir, slash);
    free(rdir);
    return DLOCK_OK;
}
