/* weft: numbers with units, as people type them.
 *
 * Sizes:  B KB MB GB TB KiB MiB GiB TiB   (KB = 10^3 B, KiB = 2^10 B)
 * Rates:  b/s Kb/s Mb/s Gb/s Tb/s  B/s KB/s MB/s GB/s TB/s  KiB/s MiB/s GiB/s
 * Times:  ps ns us ms s
 *
 * GB is 10^9 bytes and GiB 2^30, as NVIDIA and nccl-tests use them.  A number
 * without a unit is refused.  Sizes and times must come out whole (bytes,
 * picoseconds); a decimal mantissa is read exactly, not through a double.
 */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "sim.h"

G_BEGIN_DECLS

#define WEFT_UNITS_ERROR (weft_units_error_quark ())
GQuark weft_units_error_quark (void);

typedef enum {
  WEFT_UNITS_ERROR_INVALID,     /* not a number followed by a unit */
  WEFT_UNITS_ERROR_UNIT,        /* missing or unknown unit */
  WEFT_UNITS_ERROR_RANGE,       /* too large, negative, or not whole */
} WeftUnitsError;

/* Parse a size such as "1GiB" or "256 B" into bytes. */
gboolean weft_parse_size (const char *text, uint64_t *bytes, GError **error);

/* Parse a rate such as "400Gb/s" or "25GB/s" into bytes per second. */
gboolean weft_parse_rate (const char *text, double *bytes_per_s,
                          GError **error);

/* Parse a time such as "500ns" or "1.5us" into picoseconds. */
gboolean weft_parse_time (const char *text, WeftTime *ps, GError **error);

/* Parse a plain non-negative decimal number with no unit ("0.85", "3"). */
gboolean weft_parse_number (const char *text, double *value, GError **error);

/* Format @bytes with the largest binary (GiB...) or decimal (GB...) unit that
 * keeps it readable, into a newly allocated string: "8 GiB", "1.5 KB". */
char *weft_format_size (uint64_t bytes);

/* An amount of memory as a person reads it, rounded: "3.2 GiB" from one
 * GiB, "640 MiB", "7.5 MiB" below ten. */
char *weft_format_memory (uint64_t bytes);

/* Format a rate in GB/s (10^9 bytes per second): "450.0 GB/s". */
char *weft_format_rate (double bytes_per_s);

/* Format a time with a unit chosen for readability: "1.250 us". */
char *weft_format_time (WeftTime ps);

G_END_DECLS
