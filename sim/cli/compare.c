/* weft: the `weft compare` command: a user's own nccl-tests log beside
 * weft's simulation of the same sizes on a scenario, size by size.  The
 * simulation is a run like weft run's, recorded in the database; the
 * comparison is printed, and drawn on request. */
#include "cli.h"
#include "log.h"
#include "nccl_log.h"
#include "results.h"
#include "run_options.h"
#include "run_sizes.h"
#include "units.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The geometric mean of the error is taken over sizes from here up, where
 * bandwidth rather than launch latency sets the time. */
#define LARGE_SIZE ((uint64_t) 1 << 20)                 /* 1 MiB */

/* compare's own options, and the log they go with. */
typedef struct {
  char *collective;             /* -c: for a log that does not say */
  char *out;                    /* --out DIR, or NULL: no picture */
  gboolean in_place;            /* the in-place columns, not out-of-place */
  gboolean force;               /* replace pictures weft did not draw */
  char *log_path;
  WeftNcclLog *log;
} CompareArgs;

static void
compare_args_clear (CompareArgs *c)
{
  g_free (c->collective);
  g_free (c->out);
  g_free (c->log_path);
  g_clear_pointer (&c->log, weft_nccl_log_free);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (CompareArgs, compare_args_clear)

/* Read the log inputs[0] into @data, a CompareArgs, and take its
 * collective, or -c's for a log that does not say; a
 * WeftRunCommand.read_inputs. */
static int
read_log (char **inputs, char **collective, void *data)
{
  CompareArgs *c = data;
  g_autoptr (GError) error = NULL;

  c->log_path = g_strdup (inputs[0]);
  c->log = weft_nccl_log_read (c->log_path, &error);
  if (c->log == NULL)
    {
      /* The log's own errors begin with its path and line. */
      fprintf (stderr, "%s%s\n",
               error->domain == WEFT_NCCL_LOG_ERROR ? "" : "weft compare: ",
               error->message);
      return WEFT_EXIT_USAGE;
    }
  const WeftNcclLog *log = c->log;
  if (log->collective && c->collective
      && strcmp (log->collective, c->collective) != 0)
    {
      fprintf (stderr, "%s:%u: the log ran %s (weft's %s), and -c asks for "
               "%s\n", c->log_path, log->collective_line, log->program,
               log->collective, c->collective);
      return WEFT_EXIT_USAGE;
    }
  if (log->collective == NULL && c->collective == NULL)
    return weft_cli_usage ("compare", "%s does not say which collective it "
                           "ran (no \"# Collective test starting:\" line): "
                           "name it with -c, such as -c all_reduce",
                           c->log_path);
  *collective = g_strdup (log->collective ? log->collective : c->collective);
  return WEFT_EXIT_OK;
}

/* The options: compare's own, then those of weft run that apply; the
 * log gives the collective and the sizes. */
static int
parse_options (int argc, char **argv, CompareArgs *c, WeftRunArgs *args)
{
  GOptionEntry own[] = {
    { "collective", 'c', 0, G_OPTION_ARG_STRING, &c->collective,
      "The collective, for a log that does not say which it ran: "
      "all_reduce, all_gather, reduce_scatter, broadcast, reduce, "
      "all_to_all or send_recv (default: the log's)", "COLL" },
    { "in-place", 0, 0, G_OPTION_ARG_NONE, &c->in_place,
      "Compare with the log's in-place columns (default: out-of-place)",
      NULL },
    { "out", 0, 0, G_OPTION_ARG_FILENAME, &c->out,
      "Also draw busbw and the error against size into DIR/compare.png "
      "(default: no picture)", "DIR" },
    { "force", 0, 0, G_OPTION_ARG_NONE, &c->force,
      "Replace a compare.png in DIR that weft did not draw (default: only "
      "weft's own)", NULL },
    G_OPTION_ENTRY_NULL
  };
  static const char *const left_out[] = {
    "collective", "op", "minbytes", "maxbytes", "stepfactor", "trace",
    "param", "nccl-tests", "verbose", "check", NULL
  };
  const WeftRunCommand cmd = {
    "compare", "LOG SCENARIO",
    "Read nccl-tests' output (LOG, saved as the program printed it), simulate\n"
    "its collective at exactly its sizes on SCENARIO's GPUs as weft run does,\n"
    "and print, size by size, the measured and the simulated time and busbw\n"
    "and weft's error.  The run is recorded like weft run's.",
    "Examples:\n"
    "  weft compare all_reduce.log scenarios/dgx-a100.yaml\n"
    "  weft compare ag.log scenarios/h100-256-rail.yaml --ranks "
    "'node[0-1]/gpu[0-7]' --out plots\n"
    "  weft compare table.txt scenarios/dgx-h100.yaml -c all_gather "
    "--in-place",
    left_out, own, 1, read_log, c,
  };

  return weft_run_args_parse_as (&cmd, argc, argv, args);
}

static gint
by_size (gconstpointer a, gconstpointer b)
{
  uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

  return x < y ? -1 : x > y;
}

/* The log's sizes, each once, ascending; *@n of them (none of 0 bytes,
 * which weft does not run). */
static uint64_t *
log_sizes (const WeftNcclLog *log, int *n)
{
  GArray *sizes = g_array_new (FALSE, FALSE, sizeof (uint64_t));

  for (guint i = 0; i < log->rows->len; i++)
    {
      const WeftNcclRow *r = &g_array_index (log->rows, WeftNcclRow, i);
      if (r->size > 0)
        g_array_append_val (sizes, r->size);
    }
  g_array_sort (sizes, by_size);
  guint k = 0;
  for (guint i = 0; i < sizes->len; i++)
    if (k == 0 || g_array_index (sizes, uint64_t, i)
                      != g_array_index (sizes, uint64_t, k - 1))
      g_array_index (sizes, uint64_t, k++) = g_array_index (sizes, uint64_t,
                                                            i);
  *n = (int) k;
  return (uint64_t *) g_array_free (sizes, FALSE);
}

/* The log's ranks against the run's GPUs: a log that lists its ranks
 * must have as many as the run. */
static int
check_ranks (const CompareArgs *c, const WeftRunArgs *args,
             const WeftSizesPlan *plan)
{
  guint ranks = c->log->ranks;

  if (ranks == 0)
    {
      fprintf (stderr, "weft compare: %s lists no ranks (no \"#  Rank N "
               "Group ...\" lines): comparing on the run's %u GPUs\n",
               c->log_path, plan->n);
      return WEFT_EXIT_OK;
    }
  if (ranks != plan->n)
    return weft_cli_usage ("compare", "%s ran on %u ranks, and %s %u GPUs: "
                           "choose %u with --ranks", c->log_path, ranks,
                           args->ranks ? "--ranks picks"
                                       : "the scenario has",
                           plan->n, ranks);
  return WEFT_EXIT_OK;
}

/* --out: gnuplot must be there, and the picture replaceable, before
 * anything is simulated. */
static int
check_picture (const CompareArgs *c, const WeftRunArgs *args)
{
  g_autoptr (GError) error = NULL;
  const char *inputs[] = { c->log_path, args->scenario_path, NULL };
  WeftPlotOptions o = { c->out, "png", NULL, NULL, 0, NULL, 0, c->force };

  if (c->out == NULL)
    return WEFT_EXIT_OK;
  g_autofree char *gnuplot = g_find_program_in_path ("gnuplot");
  if (gnuplot == NULL)
    return weft_cli_usage ("compare", "--out draws with gnuplot, which is "
                           "not installed; install the Debian package "
                           "gnuplot-nox");
  if (!weft_results_plot_compare_check (&o, inputs, &error))
    return weft_cli_usage ("compare", "%s", error->message);
  return WEFT_EXIT_OK;
}

/* One row of the log against weft's run of its size. */
typedef struct {
  const WeftNcclRow *row;
  double time, busbw;           /* measured: us, GB/s */
  double weft_time, weft_busbw; /* simulated: us, GB/s */
  double error;                 /* %: weft's time against the measured;
                                   NaN if the log's time is 0 */
} Compared;

/* Row @r of the log against @out's row of its size. */
static Compared
compare_row (const CompareArgs *c, const WeftRunArgs *args,
             const WeftSizesPlan *plan, const WeftSizesOutcome *out,
             const WeftNcclRow *r)
{
  /* A row with no out-of-place figures (nccl-tests' trace replay) is
   * compared in place. */
  int k = c->in_place || r->time[WEFT_NCCL_OUT_OF_PLACE] < 0
              ? WEFT_NCCL_IN_PLACE
              : WEFT_NCCL_OUT_OF_PLACE;
  Compared m = { r, r->time[k], r->busbw[k], 0, 0, NAN };

  for (guint i = 0; i < out->rows->len; i++)
    {
      const WeftSizesRow *w = &g_array_index (out->rows, WeftSizesRow, i);
      if (w->size != r->size)
        continue;
      double seconds = w->result.time * 1e-12;
      m.weft_time = w->result.time / 1e6;
      m.weft_busbw = seconds > 0 ? w->size / seconds / 1e9
                                       * weft_op_bus_factor (args->op, plan->n)
                                 : 0;
      if (m.time > 0)
        m.error = (m.weft_time - m.time) / m.time * 100;
      break;
    }
  return m;
}

/* The table's head: what is compared with what, and where it is kept. */
static void
print_header (const CompareArgs *c, const WeftRunArgs *args,
              const WeftSizesPlan *plan, const WeftRecord *rec)
{
  printf ("# weft %s: %s (%s) against %s on %s, %u ranks, %s fidelity\n",
          WEFT_VERSION, c->log_path, c->log->program ? c->log->program
                                                     : "collective from -c",
          weft_op_name (args->op), args->scenario_path, plan->n,
          weft_fidelity_name (args->fidelity));
  printf ("# measured: the log's %s columns; error: weft's time against the "
          "measured (+: weft slower)\n",
          c->in_place ? "in-place" : "out-of-place");
  printf ("# recorded as run %" G_GINT64_FORMAT " of %s\n#\n", rec->id,
          args->db_path ? args->db_path : "weft.db");
  printf ("# %10s  %8s  %6s  %-19s  %-19s\n", "", "", "", "     measured",
          "       weft");
  printf ("# %10s  %8s  %6s  %9s  %8s  %9s  %8s  %7s\n", "size", "type",
          "redop", "time", "busbw", "time", "busbw", "error");
  printf ("# %10s  %8s  %6s  %9s  %8s  %9s  %8s  %7s\n", "(B)", "", "",
          "(us)", "(GB/s)", "(us)", "(GB/s)", "(%)");
}

/* The summary under the table: the geometric mean of |error| over the
 * large sizes, and the largest |error| of all. */
static void
print_summary (const Compared *rows, guint n)
{
  double log_sum = 0, worst = -1;
  guint large = 0, at = 0;
  gboolean zero = FALSE;

  for (guint i = 0; i < n; i++)
    {
      double e = fabs (rows[i].error);
      if (isnan (e))
        continue;
      if (e > worst)
        worst = e, at = i;
      if (rows[i].row->size < LARGE_SIZE)
        continue;
      large++;
      if (e == 0)
        zero = TRUE;
      else
        log_sum += log (e);
    }
  printf ("#\n");
  if (large > 0)
    printf ("# |error| over the %u row%s from 1 MiB: geometric mean %.2f %%\n",
            large, large == 1 ? "" : "s", zero ? 0.0 : exp (log_sum / large));
  else
    printf ("# |error| over the rows from 1 MiB: none (the log has no size of "
            "1 MiB or more)\n");
  if (worst >= 0)
    {
      g_autofree char *size = weft_format_size (rows[at].row->size);
      printf ("# |error| at most: %.2f %% (%s, %s, line %u of the log)\n",
              worst, size, rows[at].row->type, rows[at].row->line);
    }
}

/* Print the log's rows, in its order, beside weft's; the comparison of
 * each into @compared. */
static void
print_table (const CompareArgs *c, const WeftRunArgs *args,
             const WeftSizesPlan *plan, const WeftSizesOutcome *out,
             GArray *compared)
{
  for (guint i = 0; i < c->log->rows->len; i++)
    {
      const WeftNcclRow *r = &g_array_index (c->log->rows, WeftNcclRow, i);
      if (r->size == 0)
        continue;
      Compared m = compare_row (c, args, plan, out, r);
      char error[16] = "n/a";
      if (!isnan (m.error))
        g_snprintf (error, sizeof error, "%+.2f", m.error);
      printf ("  %10" G_GUINT64_FORMAT "  %8s  %6s  %9.2f  %8.2f  %9.2f  "
              "%8.2f  %7s\n", r->size, r->type, r->redop, m.time, m.busbw,
              m.weft_time, m.weft_busbw, error);
      g_array_append_val (compared, m);
    }
  print_summary ((const Compared *) compared->data, compared->len);
}

/* --out: draw the comparison; prints the picture's path.  Returns the
 * exit status: gnuplot's own failure is not the input's. */
static int
draw_picture (const CompareArgs *c, const WeftRunArgs *args,
              const WeftSizesPlan *plan, const GArray *compared)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GArray) points = g_array_new (FALSE, FALSE,
                                           sizeof (WeftComparePoint));
  g_autoptr (GPtrArray) written = g_ptr_array_new_with_free_func (g_free);
  WeftPlotOptions o = { c->out, "png", NULL, NULL, 0, NULL, 0, c->force };
  g_autofree char *log = g_path_get_basename (c->log_path);
  g_autofree char *scenario = g_path_get_basename (args->scenario_path);
  g_autofree char *title = g_strdup_printf ("%s against weft: %s, %s, %u "
                                            "ranks, %s fidelity", log,
                                            scenario, weft_op_name (args->op),
                                            plan->n, weft_fidelity_name (
                                                args->fidelity));

  for (guint i = 0; i < compared->len; i++)
    {
      const Compared *m = &g_array_index (compared, Compared, i);
      WeftComparePoint p = { m->row->size, m->busbw, m->weft_busbw,
                             m->error };
      g_array_append_val (points, p);
    }
  if (!weft_results_plot_compare ((const WeftComparePoint *) points->data,
                                  points->len, title, &o, written, &error))
    {
      fprintf (stderr, "weft compare: %s\n", error->message);
      return g_error_matches (error, WEFT_DB_ERROR, WEFT_DB_ERROR_PLOT)
                 ? WEFT_EXIT_FAILURE
                 : WEFT_EXIT_USAGE;
    }
  for (guint i = 0; i < written->len; i++)
    printf ("%s\n", (char *) g_ptr_array_index (written, i));
  return WEFT_EXIT_OK;
}

/* Plan the log's sizes on the scenario and check what must hold before
 * the database is touched.  Returns the exit status. */
static int
plan_compare (const CompareArgs *c, const WeftRunArgs *args,
              WeftSizesPlan *plan)
{
  int n, status;
  g_autofree uint64_t *sizes = log_sizes (c->log, &n);

  if (n == 0)
    return weft_cli_usage ("compare", "%s has only rows of 0 bytes, which "
                           "weft does not simulate", c->log_path);
  if ((status = weft_sizes_plan (args, sizes, n, plan)) != WEFT_EXIT_OK
      || (status = check_ranks (c, args, plan)) != WEFT_EXIT_OK)
    return status;
  return check_picture (c, args);
}

/* `weft compare`: read the options and the log, plan, begin the record,
 * simulate the log's sizes, record them, and print and draw the
 * comparison.  Returns the exit status. */
int
weft_cmd_compare (int argc, char **argv)
{
  g_auto (CompareArgs) c = { 0 };
  g_auto (WeftRunArgs) args = { 0 };
  g_auto (WeftSizesPlan) plan = { 0 };
  g_auto (WeftRecord) rec = { 0 };
  g_auto (WeftSizesOutcome) out = { 0 };
  int status;

  if ((status = parse_options (argc, argv, &c, &args)) != WEFT_EXIT_OK)
    return status;
  if (args.algorithms != NULL)
    return weft_cli_usage (args.name, "--algorithm takes one name: the log "
                           "is one algorithm's");
  weft_log_setup (args.log_level);
  if ((status = plan_compare (&c, &args, &plan)) != WEFT_EXIT_OK)
    return status;
  if ((status = weft_sizes_record_begin (&args, &rec)) != WEFT_EXIT_OK)
    return status;
  weft_sizes_run (&args, &plan, NULL, NULL, &out);
  g_autoptr (GArray) compared = g_array_new (FALSE, FALSE, sizeof (Compared));
  if (!out.failed && !out.interrupted)
    {
      print_header (&c, &args, &plan, &rec);
      print_table (&c, &args, &plan, &out, compared);
    }
  if ((status = weft_sizes_record_end (&args, &plan, &out, &rec))
      != WEFT_EXIT_OK || c.out == NULL)
    return status;
  return draw_picture (&c, &args, &plan, compared);
}
