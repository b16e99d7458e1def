/* weft: parameter tables. */
#include "params.h"

#include <math.h>
#include <string.h>

#include "units.h"

static const char *const type_names[] = {
  [WEFT_PARAM_RATE] = "rate", [WEFT_PARAM_SIZE] = "size",
  [WEFT_PARAM_TIME] = "time", [WEFT_PARAM_NUMBER] = "number",
  [WEFT_PARAM_UINT] = "integer", [WEFT_PARAM_BOOL] = "true/false",
};

/* Parse @text for @p into @slot; on failure set a position-less error. */
static gboolean
parse_value (const WeftParam *p, const char *text, void *slot, double *as_double,
             GError **error)
{
  switch (p->type)
    {
    case WEFT_PARAM_RATE:
      if (!weft_parse_rate (text, slot, error))
        return FALSE;
      *as_double = *(double *) slot;
      return TRUE;
    case WEFT_PARAM_SIZE:
      if (!weft_parse_size (text, slot, error))
        return FALSE;
      *as_double = (double) *(uint64_t *) slot;
      return TRUE;
    case WEFT_PARAM_TIME:
      if (!weft_parse_time (text, slot, error))
        return FALSE;
      *as_double = (double) *(WeftTime *) slot;
      return TRUE;
    case WEFT_PARAM_NUMBER:
      if (!weft_parse_number (text, slot, error))
        return FALSE;
      *as_double = *(double *) slot;
      return TRUE;
    case WEFT_PARAM_UINT:
      {
        guint64 v;
        if (!g_ascii_string_to_unsigned (text, 10, 0, G_MAXUINT32, &v, NULL))
          {
            g_set_error (error, WEFT_UNITS_ERROR, WEFT_UNITS_ERROR_INVALID,
                         "'%s' should be a whole number", text);
            return FALSE;
          }
        *(uint32_t *) slot = (uint32_t) v;
        *as_double = (double) v;
        return TRUE;
      }
    case WEFT_PARAM_BOOL:
      if (strcmp (text, "true") != 0 && strcmp (text, "false") != 0)
        {
          g_set_error (error, WEFT_UNITS_ERROR, WEFT_UNITS_ERROR_INVALID,
                       "'%s' should be true or false", text);
          return FALSE;
        }
      *(gboolean *) slot = strcmp (text, "true") == 0;
      *as_double = *(gboolean *) slot;
      return TRUE;
    }
  g_assert_not_reached ();
}

gboolean
weft_params_fill (const WeftParam *table, size_t n, void *object,
                  const WeftCfg *map, const char *const *other_keys,
                  GError **error)
{
  g_autoptr (GPtrArray) allowed = g_ptr_array_new ();

  for (size_t i = 0; i < n; i++)
    g_ptr_array_add (allowed, (char *) table[i].name);
  for (size_t i = 0; other_keys && other_keys[i]; i++)
    g_ptr_array_add (allowed, (char *) other_keys[i]);
  g_ptr_array_add (allowed, NULL);
  if (!weft_cfg_check_keys (map, (const char *const *) allowed->pdata, error))
    return FALSE;

  for (size_t i = 0; i < n; i++)
    {
      const WeftParam *p = &table[i];
      WeftCfg *value = weft_cfg_get (map, p->name);
      void *slot = (char *) object + p->offset;
      double v;

      if (value == NULL)
        {
          if (p->def == NULL)
            return weft_cfg_error (error, map, "missing parameter '%s' (%s)",
                                   p->name, p->help);
          gboolean ok = parse_value (p, p->def, slot, &v, NULL);
          g_assert (ok);
          continue;
        }
      if (!weft_cfg_expect_scalar (value, p->name, error))
        return FALSE;
      GError *cause = NULL;
      if (!parse_value (p, value->text, slot, &v, &cause))
        return weft_cfg_error_at (error, value, cause);
      if (v < p->min || v > p->max)
        return weft_cfg_error (error, value, "%s '%s' is out of range (%g to %g)",
                               p->name, value->text, p->min, p->max);
    }
  return TRUE;
}

void
weft_params_print (FILE *out, const char *title, const WeftParam *table,
                   size_t n)
{
  fprintf (out, "%s\n", title);
  for (size_t i = 0; i < n; i++)
    {
      const WeftParam *p = &table[i];
      fprintf (out, "  %-18s %-10s default %-10s %s\n", p->name,
               type_names[p->type], p->def ? p->def : "(required)", p->help);
    }
}
