/* Tests' helpers for the suites that run the weft program and read its
 * databases: a temporary folder per test, a command run in it, and
 * queries of one value. */
#pragma once

#include <check.h>
#include <glib.h>
#include <sqlite3.h>

/* The test's temporary folder, made by setup() and removed, with what
 * is in it, by teardown(): a checked fixture. */
extern char *tmp_dir;
void setup (void);
void teardown (void);

/* What a command did: its exit status (-1 if a signal ended it), and
 * what it wrote. */
typedef struct {
  int status;
  char *out, *err;
} Result;

/* Run `weft ARGS` (NULL-terminated) in tmp_dir and wait for it. */
Result weft_cmd (const char *const *args);
void result_clear (Result *r);

/* The database @name of tmp_dir, read-only. */
sqlite3 *open_db (const char *name);

/* The first column of the first row of @sql, or -1 (or NULL) if none. */
sqlite3_int64 scalar (sqlite3 *h, const char *sql);
char *text (sqlite3 *h, const char *sql);

/* A child's setup: a process group of its own, to be killed whole. */
void new_group (gpointer data);

/* The processes whose command line holds @needle. */
guint processes_with (const char *needle);
