/*
 * sqlite_path.h - the path checks of the SQLite store (sqlite_path.c).
 */
#ifndef DLOCK_STORES_SQLITE_PATH_H
#define DLOCK_STORES_SQLITE_PATH_H

/* The default store: its private directory (privdir.c) and its file,
 * created 0600 if missing.  DLOCK_OK or a code with the message set. */
int dlock__sqlite_default_file(const char *path);
/* DLOCK_EUNAVAIL if the database or its -wal, -shm, -journal is a
 * symbolic link. */
int dlock__sqlite_refuse_links(const char *path);
/* path with its directory resolved, malloc'd into *out. */
int dlock__sqlite_real_path(const char *path, char **out);

#endif
