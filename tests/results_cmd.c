/* Tests' helpers for the suites that run the weft program: see
 * results_cmd.h. */
#include "results_cmd.h"

#include <glib/gstdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

char *tmp_dir;

void
setup (void)
{
  tmp_dir = g_dir_make_tmp ("weft-db-XXXXXX", NULL);
}

void
teardown (void)
{
  GDir *dir = g_dir_open (tmp_dir, 0, NULL);
  const char *name;

  while (dir && (name = g_dir_read_name (dir)))
    {
      g_autofree char *p = g_build_filename (tmp_dir, name, NULL);
      if (g_file_test (p, G_FILE_TEST_IS_DIR))
        {
          GDir *sub = g_dir_open (p, 0, NULL);
          const char *n2;
          while (sub && (n2 = g_dir_read_name (sub)))
            {
              g_autofree char *q = g_build_filename (p, n2, NULL);
              g_remove (q);
            }
          if (sub)
            g_dir_close (sub);
          g_rmdir (p);
        }
      else
        g_remove (p);
    }
  if (dir)
    g_dir_close (dir);
  g_rmdir (tmp_dir);
  g_clear_pointer (&tmp_dir, g_free);
}


Result
weft_cmd (const char *const *args)
{
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  Result r = { 0 };
  int wait_status;

  g_ptr_array_add (argv, (char *) WEFT_BINARY);
  for (int i = 0; args[i]; i++)
    g_ptr_array_add (argv, (char *) args[i]);
  g_ptr_array_add (argv, NULL);
  ck_assert (g_spawn_sync (tmp_dir, (char **) argv->pdata, NULL,
                           G_SPAWN_DEFAULT, NULL, NULL, &r.out, &r.err,
                           &wait_status, NULL));
  r.status = WIFEXITED (wait_status) ? WEXITSTATUS (wait_status) : -1;
  return r;
}

void
result_clear (Result *r)
{
  g_free (r->out);
  g_free (r->err);
}

sqlite3 *
open_db (const char *name)
{
  g_autofree char *path = g_build_filename (tmp_dir, name, NULL);
  sqlite3 *h;

  ck_assert_int_eq (sqlite3_open_v2 (path, &h, SQLITE_OPEN_READONLY, NULL),
                    SQLITE_OK);
  return h;
}

sqlite3_int64
scalar (sqlite3 *h, const char *sql)
{
  sqlite3_stmt *st;
  sqlite3_int64 v = -1;

  ck_assert_msg (sqlite3_prepare_v2 (h, sql, -1, &st, NULL) == SQLITE_OK, "%s",
                 sqlite3_errmsg (h));
  if (sqlite3_step (st) == SQLITE_ROW)
    v = sqlite3_column_int64 (st, 0);
  sqlite3_finalize (st);
  return v;
}

char *
text (sqlite3 *h, const char *sql)
{
  sqlite3_stmt *st;
  char *v = NULL;

  ck_assert (sqlite3_prepare_v2 (h, sql, -1, &st, NULL) == SQLITE_OK);
  if (sqlite3_step (st) == SQLITE_ROW)
    v = g_strdup ((const char *) sqlite3_column_text (st, 0));
  sqlite3_finalize (st);
  return v;
}


void
new_group (gpointer data)
{
  (void) data;
  setpgid (0, 0);
}


guint
processes_with (const char *needle)
{
  GDir *proc = g_dir_open ("/proc", 0, NULL);
  const char *name;
  guint found = 0;

  while (proc && (name = g_dir_read_name (proc)))
    {
      g_autofree char *path = g_strdup_printf ("/proc/%s/cmdline", name);
      g_autofree char *cmd = NULL;
      gsize len;
      if (!g_ascii_isdigit (name[0])
          || !g_file_get_contents (path, &cmd, &len, NULL))
        continue;
      for (gsize i = 0; i < len; i += strlen (cmd + i) + 1)
        if (strstr (cmd + i, needle))
          {
            found++;
            break;
          }
    }
  if (proc)
    g_dir_close (proc);
  return found;
}

