/*
 * text.h - statement and script templates (SQL, Lua) kept as files.
 *
 * A store's SQL and Lua live in src/stores/STORE/sql/ *.sql and lua/ *.lua,
 * one statement or script per file, and reach C as
 * `dlock__text_STORE_BASE[]` (generated "STORE_text.h", cmake/embed.cmake).
 * What varies at run time (a table name, a variant's fragment) is a
 * {{name}} placeholder, filled in by dlock__text_expand() once, when the
 * store opens, into the exact text it sends.
 *
 * Golden copies: every store compiled in has a function
 *     void dlock__STORE_texts(dlock__text_emit emit, void *arg);
 * that expands every template for every variant it has, with the same code
 * open() uses, and hands each to emit().  tests/golden/test_golden.c
 * compares them with tests/golden/STORE/VARIANT/NAME, so a review shows
 * the SQL or Lua that changed.  Per-call values are never part of a
 * template: they are bound parameters ($n, ?N, ?, KEYS/ARGV), so every
 * golden file is a statement the store's own server runs or prepares as
 * it is: the golden-run-STORE entries (tests/golden/run_STORE.*) do that.
 * SQLite and Redis bind natively.
 *
 * PostgreSQL: per-call values are $n parameters; its three texts of
 * several statements (lease_acquire.sql, lease_sem_acquire.sql,
 * run_begin.sql) have them inlined as literals (docs/internals.md), and
 * golden-run-postgres runs or prepares every golden file.
 *
 * MySQL: a value a call adds is a '?' in the text, filled by the store's
 * one client-side binder (dlock__my_bind()); the renew batch alone is
 * completed per call for its size; tests/golden/run_mysql.py runs or
 * prepares every golden file on the server.
 */
#ifndef DLOCK_CORE_TEXT_H
#define DLOCK_CORE_TEXT_H

/* One expanded statement or script: VARIANT is a folder name (the store's
 * configuration it belongs to: "default", "lease", "cluster"...), NAME a
 * file name with its extension ("acquire.sql", "acquire.lua"). */
typedef void (*dlock__text_emit)(void *arg, const char *variant,
                                 const char *name, const char *text);

/* tmpl with every {{key}} replaced by its value from vars, a
 * NULL-terminated list of key, value pairs.  A malloc'd string; NULL with
 * DLOCK_ENOMEM set, or with DLOCK_EINVAL set if tmpl names a key that vars
 * lacks or a "{{" does not close (a bug the golden test finds first). */
char *dlock__text_expand(const char *tmpl, const char *const *vars);

#endif /* DLOCK_CORE_TEXT_H */
