/* weft: reading runs back from the results database: `weft report` and
 * `weft plot`. */
#pragma once

#include <sqlite3.h>
#include <stdio.h>

#include "db.h"

G_BEGIN_DECLS

/* The run to show: @run if above 0, else the latest.  Fails if there is
 * none. */
int64_t weft_results_pick_run (WeftDb *db, int64_t run, GError **error);

/* A fault of the faults table as a person reads it: "ib/spine0 down",
 * "A - B at 50%", "dgx/gpu3 computes at 50%", then when it holds if not
 * all along: " from 100 us until 300 us" (@until_ps below 0: to the
 * end). */
char *weft_results_fault_text (const char *what, double speed,
                               double compute, int64_t from_ps,
                               int64_t until_ps);

/* A statement selecting @columns of the faults of a run (its one
 * parameter), in order, then when each holds (from_ps, and until_ps or
 * -1), 0 and -1 in a database older than those columns; NULL in one
 * older than the table. */
sqlite3_stmt *weft_results_faults (sqlite3 *h, const char *columns);

/* Print the text summary of @run: the operations in nccl-tests' form, the
 * @top busiest links with mean and peak utilization, and where the time
 * went. */
gboolean weft_results_report (WeftDb *db, int64_t run, int top, FILE *out,
                              GError **error);

/* What a sweep prints of one run: its largest operation and busiest link,
 * or its status and message when it has no operation. */
typedef struct {
  gboolean has_op;
  uint64_t bytes;               /* the largest operation's size */
  double time_us, busbw;        /* ...its time and bus bandwidth (GB/s) */
  char *busiest;                /* the busiest link's name, or NULL */
  double mean_util, peak_util;  /* ...its utilization, 0 to 1 */
  char *status, *message;       /* the run's; message may be "" */
} WeftRunSummary;

/* Fill @summary with @run's; weft_run_summary_clear() frees its strings. */
gboolean weft_results_summary (WeftDb *db, int64_t run,
                               WeftRunSummary *summary, GError **error);
void weft_run_summary_clear (WeftRunSummary *summary);

typedef struct {
  const char *out_dir;          /* where the pictures go */
  const char *format;           /* "png" or "svg" */
  const char *reference;        /* a measured CSV to overlay, or NULL */
  const char *system;           /* its rows to take (a prefix), or NULL */
  int top;                      /* links in the busiest-links plot */
  const int64_t *compare;       /* more runs to draw on the busbw plot */
  guint n_compare;
  gboolean force;               /* replace pictures weft did not draw */
} WeftPlotOptions;

/* Draw @run's pictures with gnuplot (run as a child process): busbw
 * against size, the link utilization heatmap and the busiest links over
 * time.  The names of the files written are added to @written. */
gboolean weft_results_plot (WeftDb *db, int64_t run,
                            const WeftPlotOptions *options, GPtrArray *written,
                            GError **error);

/* A sweep value as a number on a plot's axis, in @unit: a time in ns, a
 * rate in GB/s, a size in bytes, a ratio "d:u" as d/u, or a plain number
 * ("" unit).  FALSE for anything else (an algorithm's name). */
gboolean weft_results_sweep_value (const char *value, double *x,
                                   const char **unit);

/* Draw busbw against the sweep parameter @key over every complete run
 * that has it into OUT/sweep.FORMAT: each run's largest size, one line
 * per value of the other parameters; a numeric axis when every value is
 * a number of one unit (weft_results_sweep_value()), else the values in
 * the order runs first had them. */
gboolean weft_results_plot_sweep (WeftDb *db, const char *key,
                                  const WeftPlotOptions *options,
                                  GPtrArray *written, GError **error);

/* A size of weft compare: the measured busbw and weft's, and weft's
 * error. */
typedef struct {
  uint64_t size;                /* bytes */
  double measured, weft;        /* busbw, GB/s */
  double error;                 /* %: weft's time against the measured */
} WeftComparePoint;

/* Whether weft compare's picture may be drawn into @options->out_dir: it
 * is none of @inputs (NULL-terminated, may be NULL), and is absent, or
 * weft drew it, or options->force.  For a check before anything runs. */
gboolean weft_results_plot_compare_check (const WeftPlotOptions *options,
                                          const char *const *inputs,
                                          GError **error);

/* Draw the @n @points into OUT/compare.FORMAT with gnuplot: busbw
 * measured and simulated against size, and the error at each size. */
gboolean weft_results_plot_compare (const WeftComparePoint *points, guint n,
                                    const char *title,
                                    const WeftPlotOptions *options,
                                    GPtrArray *written, GError **error);

G_END_DECLS
