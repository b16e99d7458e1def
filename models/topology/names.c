/* weft: name patterns. */
#include "topology/names.h"

#include <stdint.h>
#include <string.h>

#include "topology/topology.h"

typedef struct {
  uint64_t *values;
  size_t n;
} Choice;

static gboolean
parse_bracket (const char *pattern, const char *start, const char *end,
               uint64_t max, Choice *choice, GError **error)
{
  g_autoptr (GArray) values = g_array_new (FALSE, FALSE, sizeof (uint64_t));
  const char *p = start;

  while (p < end)
    {
      char *after;
      if (!g_ascii_isdigit (*p))
        goto bad;
      uint64_t a = g_ascii_strtoull (p, &after, 10), b = a;
      /* Eighteen digits at most: a number that does not fit would wrap,
       * and a range ending at the largest number would never end. */
      if (after - p > 18)
        goto too_large;
      p = after;
      if (p < end && *p == '-')
        {
          p++;
          if (!g_ascii_isdigit (*p))
            goto bad;
          b = g_ascii_strtoull (p, &after, 10);
          if (after - p > 18)
            goto too_large;
          p = after;
          if (b < a)
            {
              g_set_error (error, WEFT_TOPOLOGY_ERROR, WEFT_TOPOLOGY_ERROR_NAME,
                           "name pattern '%s': range %" G_GUINT64_FORMAT
                           "-%" G_GUINT64_FORMAT " runs backwards",
                           pattern, a, b);
              return FALSE;
            }
        }
      if (b - a >= max || values->len + (b - a) >= max)
        {
          g_set_error (error, WEFT_TOPOLOGY_ERROR, WEFT_TOPOLOGY_ERROR_NAME,
                       "name pattern '%s' stands for more than %"
                       G_GUINT64_FORMAT " names", pattern, max);
          return FALSE;
        }
      for (uint64_t v = a; v <= b; v++)
        g_array_append_val (values, v);
      if (p < end)
        {
          if (*p != ',')
            goto bad;
          p++;
          if (p == end)
            goto bad;
        }
    }
  if (values->len == 0)
    goto bad;
  choice->n = values->len;
  choice->values = (uint64_t *) g_array_free (g_steal_pointer (&values), FALSE);
  return TRUE;

bad:
  g_set_error (error, WEFT_TOPOLOGY_ERROR, WEFT_TOPOLOGY_ERROR_NAME,
               "name pattern '%s': a bracket holds numbers and ranges such "
               "as [0-7] or [0,2,4-5]",
               pattern);
  return FALSE;

too_large:
  g_set_error (error, WEFT_TOPOLOGY_ERROR, WEFT_TOPOLOGY_ERROR_NAME,
               "name pattern '%s': a number in brackets has at most 18 "
               "digits", pattern);
  return FALSE;
}

gboolean
weft_names_expand (const char *pattern, GPtrArray *out, GError **error)
{
  return weft_names_expand_at_most (pattern, WEFT_NAMES_MAX, out, error);
}

gboolean
weft_names_expand_at_most (const char *pattern, uint64_t max, GPtrArray *out,
                           GError **error)
{
  g_autoptr (GPtrArray) literals = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GArray) choices = g_array_new (FALSE, TRUE, sizeof (Choice));
  const char *p = pattern;
  g_autofree size_t *at = NULL;
  gboolean ok = FALSE;
  uint64_t total = 1;

  for (;;)
    {
      const char *open = strchr (p, '[');
      const char *close_early = strchr (p, ']');
      if (close_early && (!open || close_early < open))
        {
          g_set_error (error, WEFT_TOPOLOGY_ERROR, WEFT_TOPOLOGY_ERROR_NAME,
                       "name pattern '%s' has a ']' without '['", pattern);
          goto out;
        }
      if (open == NULL)
        {
          g_ptr_array_add (literals, g_strdup (p));
          break;
        }
      const char *close = strchr (open, ']');
      if (close == NULL)
        {
          g_set_error (error, WEFT_TOPOLOGY_ERROR, WEFT_TOPOLOGY_ERROR_NAME,
                       "name pattern '%s' has a '[' without ']'", pattern);
          goto out;
        }
      g_ptr_array_add (literals, g_strndup (p, open - p));
      Choice c = { 0 };
      if (!parse_bracket (pattern, open + 1, close, max, &c, error))
        goto out;
      g_array_append_val (choices, c);
      total *= c.n;
      if (total > max)
        {
          g_set_error (error, WEFT_TOPOLOGY_ERROR, WEFT_TOPOLOGY_ERROR_NAME,
                       "name pattern '%s' stands for more than %"
                       G_GUINT64_FORMAT " names", pattern, max);
          goto out;
        }
      p = close + 1;
    }
  if (*pattern == '\0')
    {
      g_set_error (error, WEFT_TOPOLOGY_ERROR, WEFT_TOPOLOGY_ERROR_NAME, "a name cannot be empty");
      goto out;
    }

  /* Count through the choices like an odometer, last bracket fastest. */
  at = g_new0 (size_t, choices->len + 1);
  GString *name = g_string_new (NULL);
  for (;;)
    {
      g_string_truncate (name, 0);
      for (guint i = 0; i < choices->len; i++)
        {
          Choice *c = &g_array_index (choices, Choice, i);
          g_string_append (name, g_ptr_array_index (literals, i));
          g_string_append_printf (name, "%" G_GUINT64_FORMAT, c->values[at[i]]);
        }
      g_string_append (name, g_ptr_array_index (literals, choices->len));
      g_ptr_array_add (out, g_strdup (name->str));

      guint i = choices->len;
      while (i > 0)
        {
          Choice *c = &g_array_index (choices, Choice, i - 1);
          if (++at[i - 1] < c->n)
            break;
          at[i - 1] = 0;
          i--;
        }
      if (i == 0)
        break;
    }
  g_string_free (name, TRUE);
  ok = TRUE;

out:
  for (guint i = 0; i < choices->len; i++)
    g_free (g_array_index (choices, Choice, i).values);
  return ok;
}
