/*
 * process.h - who this process is: its pid, its incarnation (which tells
 * a fork child from its parent) and its host name; and letting go of a
 * connection a fork child inherited (process.c).  Stores
 * record pid and host with each holder; the core refuses a fork child's
 * use of its parent's stores and locks by generation.
 */
#ifndef DLOCK_CORE_PROCESS_H
#define DLOCK_CORE_PROCESS_H

#include <stdint.h>
#include <sys/types.h>

/* getpid(), cached (and refreshed in fork children). */
pid_t dlock__pid(void);
/* This process's incarnation: changes in every fork child, even one that
 * has its parent's pid (a pid 1 forking into a new pid namespace).  What
 * tells "made by this process", where a pid cannot. */
uint64_t dlock__generation(void);
const char *dlock__hostname(void);

/* In a fork child: point fd at /dev/null, so that a client library's
 * close function (PQfinish, mysql_close) can free an inherited
 * connection while what it sends goes nowhere and the parent's session
 * lives on.  Returns 0, or -1 with errno. */
int dlock__fd_detach(int fd);

#endif /* DLOCK_CORE_PROCESS_H */
