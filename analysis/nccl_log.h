/* weft: a log of nccl-tests, as the program prints it: which collective
 * it ran, on how many ranks, and its table's rows with both the
 * out-of-place and the in-place figures. */
#pragma once

#include <glib.h>
#include <stdint.h>

G_BEGIN_DECLS

#define WEFT_NCCL_LOG_ERROR (weft_nccl_log_error_quark ())
GQuark weft_nccl_log_error_quark (void);

typedef enum {
  WEFT_NCCL_LOG_ERROR_LINE,     /* a line of the table that does not read */
  WEFT_NCCL_LOG_ERROR_NO_ROWS,  /* no table in the file */
  WEFT_NCCL_LOG_ERROR_COLLECTIVE, /* one weft does not run, or two */
} WeftNcclLogError;

/* Which of a row's two measurements. */
enum { WEFT_NCCL_OUT_OF_PLACE, WEFT_NCCL_IN_PLACE };

/* One row of the table: a size as nccl-tests ran it. */
typedef struct {
  uint64_t size;                /* bytes */
  uint64_t count;               /* elements of the type */
  char *type, *redop;           /* as printed: "float", "sum", "none" */
  int root;                     /* -1 where the collective has none, or
                                   the log has no root column */
  double time[2];               /* us, out of place and in place; below 0
                                   where the row does not print one */
  double busbw[2];              /* GB/s, as printed */
  guint line;                   /* in the file, from 1 */
} WeftNcclRow;

typedef struct {
  char *program;                /* "all_reduce_perf" as the log names it,
                                   or NULL */
  char *collective;             /* weft's name for it ("all_reduce"), or
                                   NULL when the log does not say */
  guint collective_line;        /* where the log says it, or 0 */
  guint ranks;                  /* distinct ranks the header lists ("#  Rank
                                   N Group ..."), 0 if it lists none */
  GArray *rows;                 /* WeftNcclRow, in the order of the file */
} WeftNcclLog;

/* Read the nccl-tests output saved at @path.  Lines may carry a prefix
 * such as mpirun's "[1,0]<stdout>:" or srun's "0: "; anything that is not
 * the table's (NCCL's INFO lines, the "# Avg bus bandwidth" trailer,
 * blank lines) is passed over, but a line that starts as a row (a size
 * and a count) must be a whole one: "path:line:col: what is wrong"
 * otherwise.  The collective comes from "# Collective test starting:
 * NAME_perf", else from the one program a line before the table names
 * (its command line); a weft run's --nccl-tests output says its own
 * collective and ranks in its first line.  Fails as well if the file
 * cannot be read, has no row, or ran two collectives. */
WeftNcclLog *weft_nccl_log_read (const char *path, GError **error);

void weft_nccl_log_free (WeftNcclLog *log);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (WeftNcclLog, weft_nccl_log_free)

G_END_DECLS
