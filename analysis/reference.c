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

GArray *
weft_reference_read (const char *csv, const char *system,
                     const char *collective, GError **error)
{
  g_autofree char *text = NULL;
  GArray *rows = g_array_new (FALSE, FALSE, sizeof (WeftMeasured));

  if (!g_file_get_contents (csv, &text, NULL, error))
    {
      g_array_unref (rows);
      return NULL;
    }
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  for (int i = 1; lines[i]; i++)
    {
      g_autoptr (GPtrArray) f = csv_fields (lines[i]);
      if (f->len < 11
          || (system && !g_str_has_prefix (g_ptr_array_index (f, 0), system))
          || strcmp (g_ptr_array_index (f, 7), collective) != 0)
        continue;
      WeftMeasured m = {
        g_ascii_strtoull (g_ptr_array_index (f, 8), NULL, 10),
        g_ascii_strtod (g_ptr_array_index (f, 10), NULL),
      };
      g_array_append_val (rows, m);
    }
  if (rows->len == 0)
    {
      g_set_error (error, WEFT_DB_ERROR, WEFT_DB_ERROR_NO_DATA, "%s has no %s rows%s%s", csv,
                   collective, system ? " for system " : "",
                   system ? system : "");
      g_array_unref (rows);
      return NULL;
    }
  return rows;
}
