/* weft: measured nccl-tests sweeps: as docs/reference keeps them (CSV:
 * system, gpus, nodes, fabric, nccl, tool, algorithm, collective,
 * size_bytes, time_us, busbw_GBps, source), or as nccl-tests prints them
 * (its output, saved to a file). */
#pragma once

#include <glib.h>
#include <stdint.h>

G_BEGIN_DECLS

typedef struct {
  uint64_t size;                /* bytes */
  double time;                  /* us; 0 if the source gives none */
  double busbw;                 /* GB/s */
} WeftMeasured;

/* The measured rows of @path for @collective, as WeftMeasured in the
 * order they come.  A CSV of docs/reference's columns gives its rows of
 * @collective whose system starts with @system (all systems if NULL).
 * Anything else is read as nccl-tests' output (weft_nccl_log_read()):
 * each row's size and out-of-place time and busbw (in place where a row
 * has no other); its collective is the one the program ran, so
 * @collective and @system do not apply.  Fails if the file cannot be
 * read, a row of it does not, or it has no such row. */
GArray *weft_reference_read (const char *path, const char *system,
                             const char *collective, GError **error);

G_END_DECLS
