/*
 * privdir.c - a directory that only its owner can change: the home of the
 * default SQLite store (/var/tmp/dlock-EUID).
 *
 * /var/tmp is writable by everyone, so the name dlock-EUID may already be
 * taken by another user: a symbolic link into a directory of theirs (or a
 * root-only one), a directory they own, or one they can write.  Any of
 * those lets them replace, read or redirect our lock database, so they are
 * refused, never repaired: dlock does not chmod or chown a directory it did
 * not just create.  The checks are made on the opened directory (fstat of
 * an O_NOFOLLOW descriptor), so what was checked is what exists; the
 * sticky bit of /var/tmp then keeps others from renaming it away.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "errors.h"
#include "privdir.h"

static int refuse(const char *dir, const char *why)
{
    return dlock__seterr(DLOCK_EUNAVAIL,
                         "refusing %s: %s; remove it or choose a store "
                         "with -s",
                         dir, why);
}

/* What is wrong with st for a private directory of me, or NULL. */
static const char *wrong(const struct stat *st, uid_t me, char *why, size_t len)
{
    if (S_ISLNK(st->st_mode))
        return "it is a symbolic link";
    if (!S_ISDIR(st->st_mode))
        return "it is not a directory";
    if (st->st_uid != me) {
        snprintf(why, len, "owned by uid %u, not by you (uid %u)",
                 (unsigned)st->st_uid, (unsigned)me);
        return why;
    }
    if ((st->st_mode & (S_IWGRP | S_IWOTH)) != 0) {
        snprintf(why, len,
                 "writable by group or others (mode %04o), so others could "
                 "replace the lock database",
                 (unsigned)(st->st_mode & 07777));
        return why;
    }
    return NULL;
}

int dlock__private_dir(const char *dir)
{
    struct stat st;
    char why[160];
    const char *bad;
    int created = 0, fd, rc = DLOCK_OK;
    uid_t me = geteuid();

    if (mkdir(dir, 0700) == 0)
        created = 1;
    else if (errno != EEXIST)
        return dlock__seterr(DLOCK_EUNAVAIL, "cannot create directory %s: %s",
                             dir, strerror(errno));
    /* lstat first to name the problem even when we cannot open it (a
     * stranger's 0700 directory); the decision that counts is made below
     * on what O_NOFOLLOW opened. */
    if (lstat(dir, &st) == 0 && (bad = wrong(&st, me, why, sizeof(why))))
        return refuse(dir, bad);
    fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ELOOP)
            return refuse(dir, "it is a symbolic link");
        if (errno == ENOTDIR)
            return refuse(dir, "it is not a directory");
        return dlock__seterr(DLOCK_EUNAVAIL, "cannot open directory %s: %s",
                             dir, strerror(errno));
    }
    if (fstat(fd, &st) != 0)
        rc = dlock__seterr(DLOCK_EUNAVAIL, "cannot stat directory %s: %s", dir,
                           strerror(errno));
    else if ((bad = wrong(&st, me, why, sizeof(why))) != NULL)
        rc = refuse(dir, bad);
    else if (created && (st.st_mode & 07777) != 0700 && fchmod(fd, 0700) != 0)
        /* Ours and new: a umask may have taken owner bits away. */
        rc = dlock__seterr(DLOCK_EUNAVAIL, "cannot chmod %s: %s", dir,
                           strerror(errno));
    close(fd);
    return rc;
}
