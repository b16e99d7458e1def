/* weft: parameter tables.
 *
 * A model declares its parameters once, as a table of WeftParam.  One routine
 * fills an object from a configuration map (checking units, ranges and
 * unknown keys) and `weft params` prints the tables, as ns-3 attributes and
 * BookSim's defaults do.
 */
#pragma once

#include <stddef.h>
#include <stdio.h>

#include "config.h"

G_BEGIN_DECLS

typedef enum {
  WEFT_PARAM_RATE,              /* double, bytes per second */
  WEFT_PARAM_SIZE,              /* uint64_t, bytes */
  WEFT_PARAM_TIME,              /* WeftTime, picoseconds */
  WEFT_PARAM_NUMBER,            /* double, no unit */
  WEFT_PARAM_UINT,              /* uint32_t, no unit */
  WEFT_PARAM_BOOL,              /* gboolean */
} WeftParamType;

typedef struct {
  const char *name;
  WeftParamType type;
  size_t offset;                /* of the field in the object */
  const char *def;              /* default as a user writes it; NULL: required */
  double min, max;              /* allowed range, in base units */
  const char *help;
} WeftParam;

/* Fill @object from @map by @table.  Keys of @map must be parameters of the
 * table or among the NULL-terminated @other_keys (handled by the caller).
 * A missing parameter takes its default; a required one is an error. */
gboolean weft_params_fill (const WeftParam *table, size_t n, void *object,
                           const WeftCfg *map, const char *const *other_keys,
                           GError **error);

/* Print @table under @title: name, type and unit, default, range, help. */
void weft_params_print (FILE *out, const char *title, const WeftParam *table,
                        size_t n);

G_END_DECLS
