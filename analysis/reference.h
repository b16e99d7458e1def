/* weft: measured nccl-tests sweeps, as docs/reference keeps them
 * (CSV: system, gpus, nodes, fabric, nccl, tool, algorithm, collective,
 * size_bytes, time_us, busbw_GBps, source). */
#pragma once

#include <glib.h>
#include <stdint.h>

G_BEGIN_DECLS

typedef struct {
  uint64_t size;                /* bytes */
  double busbw;                 /* GB/s */
} WeftMeasured;

/* The rows of @csv for @collective whose system starts with @system (all
 * systems if NULL), as WeftMeasured.  Fails if the file cannot be read or
 * has no such row. */
GArray *weft_reference_read (const char *csv, const char *system,
                             const char *collective, GError **error);

G_END_DECLS
