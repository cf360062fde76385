/*
 * privdir.h - a directory only this user can change (privdir.c), for
 * stores that keep files (SQLite's default database).
 */
#ifndef DLOCK_CORE_PRIVDIR_H
#define DLOCK_CORE_PRIVDIR_H

/* Make sure dir is a directory only this process's euid can change:
 * create it 0700 if missing; if it exists, refuse (DLOCK_EUNAVAIL, with
 * a message naming dir and the reason) a symbolic link, a non-directory,
 * one owned by another uid, or one writable by group or others.  Never
 * changes an existing directory. */
int dlock__private_dir(const char *dir);

#endif /* DLOCK_CORE_PRIVDIR_H */
