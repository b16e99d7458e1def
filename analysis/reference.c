/* weft: measured nccl-tests sweeps. */
#include "reference.h"

#include <string.h>

#include "db.h"
#include "nccl_log.h"

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

/* The out-of-place rows of the nccl-tests output at @path (the in-place
 * ones where a row has no other). */
static GArray *
nccl_tests_rows (const char *path, GError **error)
{
  g_autoptr (WeftNcclLog) log = weft_nccl_log_read (path, error);
  if (log == NULL)
    return NULL;
  GArray *rows = g_array_new (FALSE, FALSE, sizeof (WeftMeasured));
  for (guint i = 0; i < log->rows->len; i++)
    {
      const WeftNcclRow *r = &g_array_index (log->rows, WeftNcclRow, i);
      int k = r->time[WEFT_NCCL_OUT_OF_PLACE] >= 0 ? WEFT_NCCL_OUT_OF_PLACE
                                                   : WEFT_NCCL_IN_PLACE;
      WeftMeasured m = { r->size, r->time[k], r->busbw[k] };
      g_array_append_val (rows, m);
    }
  return rows;
}

GArray *
weft_reference_read (const char *path, const char *system,
                     const char *collective, GError **error)
{
  g_autofree char *text = NULL;
  g_autoptr (GArray) rows = g_array_new (FALSE, FALSE, sizeof (WeftMeasured));

  if (!g_file_get_contents (path, &text, NULL, error))
    return NULL;
  if (!g_str_has_prefix (text, "system,"))
    return nccl_tests_rows (path, error);
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  for (int i = 1; lines[i]; i++)
    {
      WeftMeasured m = { 0 };
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
      g_set_error (error, WEFT_DB_ERROR, WEFT_DB_ERROR_NO_DATA,
                   "%s has no %s rows%s%s", path, collective,
                   system ? " for system " : "", system ? system : "");
      return NULL;
    }
  return g_steal_pointer (&rows);
}
