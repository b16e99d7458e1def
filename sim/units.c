/* weft: numbers with units. */
#include "units.h"

#include <math.h>
#include <string.h>

G_DEFINE_QUARK (weft-units-error-quark, weft_units_error)

typedef struct {
  const char *name;
  uint64_t num;                 /* the unit is num / den of the base */
  uint64_t den;
} Unit;

#define K1 UINT64_C (1000)
#define G10 (K1 * K1 * K1)
#define KI UINT64_C (1024)

static const Unit size_units[] = {
  { "B", 1, 1 },
  { "KB", K1, 1 }, { "MB", K1 * K1, 1 }, { "GB", G10, 1 }, { "TB", G10 * K1, 1 },
  { "KiB", KI, 1 }, { "MiB", KI * KI, 1 }, { "GiB", KI * KI * KI, 1 },
  { "TiB", KI * KI * KI * KI, 1 },
};

/* Rates: base unit is bytes per second; bits are an eighth of a byte. */
static const Unit rate_units[] = {
  { "b/s", 1, 8 }, { "Kb/s", K1, 8 }, { "Mb/s", K1 * K1, 8 },
  { "Gb/s", G10, 8 }, { "Tb/s", G10 * K1, 8 },
  { "B/s", 1, 1 }, { "KB/s", K1, 1 }, { "MB/s", K1 * K1, 1 },
  { "GB/s", G10, 1 }, { "TB/s", G10 * K1, 1 },
  { "KiB/s", KI, 1 }, { "MiB/s", KI * KI, 1 }, { "GiB/s", KI * KI * KI, 1 },
};

static const Unit time_units[] = {
  { "ps", 1, 1 }, { "ns", K1, 1 }, { "us", K1 * K1, 1 }, { "ms", G10, 1 },
  { "s", G10 * K1, 1 },
};

static char *
unit_list (const Unit *units, size_t n)
{
  GString *s = g_string_new (NULL);

  for (size_t i = 0; i < n; i++)
    g_string_append_printf (s, "%s%s", i ? " " : "", units[i].name);
  return g_string_free (s, FALSE);
}

/* Split "12.5 GB/s" into an exact decimal (digits, exponent) and a unit. */
static gboolean
split_number (const char *text, uint64_t *digits, int *exp10,
              const char **unit, GError **error)
{
  const char *p = text;
  uint64_t d = 0;
  int frac = 0, n_digits = 0;
  gboolean dot = FALSE;

  while (*p == ' ')
    p++;
  if (*p == '-')
    {
      g_set_error (error, WEFT_UNITS_ERROR, WEFT_UNITS_ERROR_RANGE,
                   "'%s' is negative", text);
      return FALSE;
    }
  if (*p == '+')
    p++;
  for (;; p++)
    {
      if (*p >= '0' && *p <= '9')
        {
          if (d > (UINT64_MAX - 9) / 10)
            {
              g_set_error (error, WEFT_UNITS_ERROR, WEFT_UNITS_ERROR_RANGE,
                           "'%s' has too many digits", text);
              return FALSE;
            }
          d = d * 10 + (uint64_t) (*p - '0');
          n_digits++;
          frac += dot;
        }
      else if (*p == '.' && !dot)
        dot = TRUE;
      else
        break;
    }
  if (n_digits == 0)
    {
      g_set_error (error, WEFT_UNITS_ERROR, WEFT_UNITS_ERROR_INVALID,
                   "'%s' is not a number", text);
      return FALSE;
    }
  int exp = 0;
  if ((*p == 'e' || *p == 'E') && p[1] != '\0'
      && (g_ascii_isdigit (p[1]) || ((p[1] == '-' || p[1] == '+')
                                     && g_ascii_isdigit (p[2]))))
    {
      char *end;
      long e = strtol (p + 1, &end, 10);
      if (e > 30 || e < -30)
        {
          g_set_error (error, WEFT_UNITS_ERROR, WEFT_UNITS_ERROR_RANGE,
                       "'%s' has an exponent out of range", text);
          return FALSE;
        }
      exp = (int) e;
      p = end;
    }
  while (*p == ' ')
    p++;
  *digits = d;
  *exp10 = exp - frac;
  *unit = p;
  return TRUE;
}

static const Unit *
find_unit (const char *text, const char *unit, const Unit *units, size_t n,
           const char *what, GError **error)
{
  for (size_t i = 0; i < n; i++)
    if (strcmp (unit, units[i].name) == 0)
      return &units[i];

  g_autofree char *list = unit_list (units, n);
  if (*unit == '\0')
    g_set_error (error, WEFT_UNITS_ERROR, WEFT_UNITS_ERROR_UNIT,
                 "'%s' has no unit; a %s needs one of: %s", text, what, list);
  else
    g_set_error (error, WEFT_UNITS_ERROR, WEFT_UNITS_ERROR_UNIT,
                 "'%s' has an unknown %s unit '%s'; valid: %s", text, what,
                 unit, list);
  return NULL;
}

/* digits * 10^exp10 * num / den as an exact whole number, or an error. */
static gboolean
exact_whole (const char *text, uint64_t digits, int exp10, const Unit *u,
             const char *base, uint64_t *out, GError **error)
{
  unsigned __int128 num = (unsigned __int128) digits * u->num;
  unsigned __int128 den = u->den;
  const unsigned __int128 limit = (unsigned __int128) UINT64_MAX;

  for (; exp10 > 0; exp10--)
    {
      num *= 10;
      if (num > limit * den)
        goto too_large;
    }
  /* Once the divisor passes the number the quotient is 0 and the rest the
   * number, however far the exponent goes: stop before it overflows. */
  for (; exp10 < 0 && den <= num; exp10++)
    den *= 10;
  if (num / den > limit)
    goto too_large;
  if (num % den != 0)
    {
      g_set_error (error, WEFT_UNITS_ERROR, WEFT_UNITS_ERROR_RANGE,
                   "'%s' is not a whole number of %s", text, base);
      return FALSE;
    }
  *out = (uint64_t) (num / den);
  return TRUE;

too_large:
  g_set_error (error, WEFT_UNITS_ERROR, WEFT_UNITS_ERROR_RANGE,
               "'%s' is too large", text);
  return FALSE;
}

gboolean
weft_parse_size (const char *text, uint64_t *bytes, GError **error)
{
  uint64_t digits;
  int exp10;
  const char *unit;

  if (!split_number (text, &digits, &exp10, &unit, error))
    return FALSE;
  const Unit *u = find_unit (text, unit, size_units,
                             G_N_ELEMENTS (size_units), "size", error);
  return u && exact_whole (text, digits, exp10, u, "bytes", bytes, error);
}

gboolean
weft_parse_time (const char *text, WeftTime *ps, GError **error)
{
  uint64_t digits;
  int exp10;
  const char *unit;

  if (!split_number (text, &digits, &exp10, &unit, error))
    return FALSE;
  const Unit *u = find_unit (text, unit, time_units,
                             G_N_ELEMENTS (time_units), "time", error);
  return u && exact_whole (text, digits, exp10, u, "picoseconds", ps, error);
}

gboolean
weft_parse_rate (const char *text, double *bytes_per_s, GError **error)
{
  uint64_t digits;
  int exp10;
  const char *unit;

  if (!split_number (text, &digits, &exp10, &unit, error))
    return FALSE;
  const Unit *u = find_unit (text, unit, rate_units,
                             G_N_ELEMENTS (rate_units), "rate", error);
  if (u == NULL)
    return FALSE;
  *bytes_per_s = (double) digits * pow (10.0, exp10) * (double) u->num
                 / (double) u->den;
  return TRUE;
}

gboolean
weft_parse_number (const char *text, double *value, GError **error)
{
  uint64_t digits;
  int exp10;
  const char *unit;

  if (!split_number (text, &digits, &exp10, &unit, error))
    return FALSE;
  if (*unit != '\0')
    {
      g_set_error (error, WEFT_UNITS_ERROR, WEFT_UNITS_ERROR_UNIT,
                   "'%s' should be a plain number, without a unit", text);
      return FALSE;
    }
  *value = (double) digits * pow (10.0, exp10);
  return TRUE;
}

char *
weft_format_size (uint64_t bytes)
{
  static const char *const bin[] = { "B", "KiB", "MiB", "GiB", "TiB" };
  static const char *const dec[] = { "B", "KB", "MB", "GB", "TB" };
  int kb = 0, kd = 0;
  uint64_t p = 1;

  /* The largest unit, binary or decimal, of which it is a whole number
   * (binary on a tie): 8 GiB, 80 GB. */
  for (int i = 1; i <= 4; i++)
    {
      if (bytes >= (UINT64_C (1) << (10 * i))
          && bytes % (UINT64_C (1) << (10 * i)) == 0)
        kb = i;
      p *= 1000;
      if (bytes >= p && bytes % p == 0)
        kd = i;
    }
  if (kb > 0 && kb >= kd)
    return g_strdup_printf ("%" G_GUINT64_FORMAT " %s", bytes >> (10 * kb),
                            bin[kb]);
  if (kd > 0)
    return g_strdup_printf ("%" G_GUINT64_FORMAT " %s",
                            bytes / (uint64_t) pow (1000.0, kd), dec[kd]);
  for (int i = 4; i > 0; i--)
    {
      double unit = pow (1000.0, i);
      if ((double) bytes >= unit)
        return g_strdup_printf ("%.4g %s", (double) bytes / unit, dec[i]);
    }
  return g_strdup_printf ("%" G_GUINT64_FORMAT " B", bytes);
}

char *
weft_format_rate (double bytes_per_s)
{
  return g_strdup_printf ("%.1f GB/s", bytes_per_s / 1e9);
}

char *
weft_format_time (WeftTime ps)
{
  if (ps >= WEFT_S)
    return g_strdup_printf ("%.3f s", (double) ps / WEFT_S);
  if (ps >= WEFT_MS)
    return g_strdup_printf ("%.3f ms", (double) ps / WEFT_MS);
  if (ps >= WEFT_US)
    return g_strdup_printf ("%.3f us", (double) ps / WEFT_US);
  if (ps >= WEFT_NS)
    return g_strdup_printf ("%.3f ns", (double) ps / WEFT_NS);
  return g_strdup_printf ("%" G_GUINT64_FORMAT " ps", ps);
}

char *
weft_format_memory (uint64_t bytes)
{
  if (bytes >= (UINT64_C (1) << 30))
    return g_strdup_printf ("%.1f GiB", bytes / (double) (UINT64_C (1) << 30));
  if (bytes >= (UINT64_C (10) << 20))
    return g_strdup_printf ("%.0f MiB", bytes / (double) (1 << 20));
  return g_strdup_printf ("%.1f MiB", bytes / (double) (1 << 20));
}
