/* weft: measured nccl-tests sweeps. */
#include "reference.h"

#include <string.h>

#include "db.h"

/* Split a CSV line into fields, honouring double quotes. */
static GPtrArray *
csv_fields (const char *line)
{
  GPtrArray *fields = g_ptr_array_new_with_free_func (g_free);
  GString *field = g_string_new (NULL);
  gboolean quoted = FALSE;

  for (const char *p = line; *p && *p != '\r'; p++)
    {
      if (*p == '"')
        quoted = !quoted;
      else if (*p == ',' && !quoted)
        {
          g_ptr_array_add (fields, g_strdup (field->str));
          g_string_truncate (field, 0);
        }
      else
        g_string_append_c (field, *p);
    }
  g_ptr_array_add (fields, g_string_free (field, FALSE));
  return fields;
}

/* A line of nccl-tests' table into @m: "size count type redop root time
 * algbw busbw ...", after any prefix up to a ':' (mpirun's
 * "[1,0]<stdout>:").  FALSE for any other line. */
static gboolean
nccl_tests_row (const char *line, WeftMeasured *m)
{
  const char *colon = strchr (line, ':');
  if (colon && line[0] == '[')
    line = colon + 1;
  g_auto (GStrv) f = g_strsplit_set (line, " \t\r", -1);
  const char *w[8];
  int n = 0;

  for (int i = 0; f[i] && n < 8; i++)
    if (*f[i])
      w[n++] = f[i];
  if (n < 8 || !g_ascii_isdigit (w[0][0]) || !g_ascii_isdigit (w[1][0]))
    return FALSE;
  char *end;
  m->size = g_ascii_strtoull (w[0], &end, 10);
  if (*end)
    return FALSE;
  m->time = g_ascii_strtod (w[5], &end);
  if (*end)
    return FALSE;
  m->busbw = g_ascii_strtod (w[7], &end);
  return *end == '\0';
}

GArray *
weft_reference_read (const char *path, const char *system,
                     const char *collective, GError **error)
{
  g_autofree char *text = NULL;
  g_autoptr (GArray) rows = g_array_new (FALSE, FALSE, sizeof (WeftMeasured));

  if (!g_file_get_contents (path, &text, NULL, error))
    return NULL;
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  gboolean csv = g_str_has_prefix (text, "system,");
  for (int i = csv ? 1 : 0; lines[i]; i++)
    {
      WeftMeasured m = { 0 };
      if (!csv)
        {
          if (nccl_tests_row (lines[i], &m))
            g_array_append_val (rows, m);
          continue;
        }
      g_autoptr (GPtrArray) f = csv_fields (lines[i]);
      if (f->len < 11
          || (system && !g_str_has_prefix (g_ptr_array_index (f, 0), system))
          || strcmp (g_ptr_array_index (f, 7), collective) != 0)
        continue;
      m.size = g_ascii_strtoull (g_ptr_array_index (f, 8), NULL, 10);
      m.time = g_ascii_strtod (g_ptr_array_index (f, 9), NULL);
      m.busbw = g_ascii_strtod (g_ptr_array_index (f, 10), NULL);
      g_array_append_val (rows, m);
    }
  if (rows->len == 0)
    {
      if (csv)
        g_set_error (error, WEFT_DB_ERROR, WEFT_DB_ERROR_NO_DATA,
                     "%s has no %s rows%s%s", path, collective,
                     system ? " for system " : "", system ? system : "");
      else
        g_set_error (error, WEFT_DB_ERROR, WEFT_DB_ERROR_NO_DATA,
                     "%s has no rows of nccl-tests' table (size, count, "
                     "type, redop, root, time, algbw, busbw)", path);
      return NULL;
    }
  return g_steal_pointer (&rows);
}
