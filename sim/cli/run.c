/* weft: the `weft run` command: a sweep of collective sizes, printed as
 * nccl-tests prints it and recorded in the results database.  The options
 * come from run_options.c, the planning, simulating and recording from
 * run_sizes.c; here are the sweep's sizes and its table. */
#include "cli.h"
#include "log.h"
#include "run_options.h"
#include "run_sizes.h"
#include "memory.h"
#include "units.h"

#include <stdio.h>

/* The sizes from the smallest to the largest, each the last times the
 * step factor, stopping before one that would overflow; *@n of them. */
static uint64_t *
list_sizes (const WeftRunArgs *args, int *n_sizes)
{
  int n = 0;

  for (uint64_t size = args->min_bytes; size <= args->max_bytes;
       size *= args->factor)
    {
      n++;
      if (size > G_MAXUINT64 / args->factor)
        break;
    }
  uint64_t *sizes = g_new (uint64_t, n);
  for (int i = 0; i < n; i++)
    sizes[i] = i == 0 ? args->min_bytes : sizes[i - 1] * args->factor;
  *n_sizes = n;
  return sizes;
}

/* A schedule file's line: what it is, whether what it computes was
 * checked, and its bytes against a bandwidth-optimal algorithm's. */
static void
print_file (const WeftRunArgs *args, const WeftSizesPlan *plan)
{
  if (args->file == NULL)
    return;
  printf ("# algorithm: %s (%s): %s; moves %.2fx the bytes of a "
          "bandwidth-optimal %s\n", weft_schedule_file_name (args->file),
          args->alg_name,
          args->unchecked_data ? "what it computes not checked"
                               : "computes its operation (checked)",
          plan->file_moves, weft_op_name (args->op));
}

/* `weft run --check`: what would run, once every option and the
 * scenario passed their checks.  Returns WEFT_EXIT_OK. */
static int
print_plan (const WeftRunArgs *args, const WeftSizesPlan *plan)
{
  g_autofree char *first = weft_format_size (plan->sizes[0]);
  g_autofree char *last = weft_format_size (plan->sizes[plan->n_sizes - 1]);

  printf ("# weft %s: %s on %s, %u ranks, %s fidelity\n", WEFT_VERSION,
          weft_op_name (args->op), args->scenario_path, plan->n,
          weft_fidelity_name (args->fidelity));
  print_file (args, plan);
  printf ("# %d size%s from %s to %s; candidates:", plan->n_sizes,
          plan->n_sizes == 1 ? "" : "s", first, last);
  for (int a = 0; a < WEFT_ALG_COUNT; a++)
    for (int pr = 0; pr < WEFT_PROTOCOL_COUNT; pr++)
      if (plan->fits[a][pr])
        printf (" %s/%s", args->file ? "file" : weft_algorithm_name (a),
                weft_protocol_name (pr));
  g_autofree char *memory = weft_format_memory (plan->memory);
  printf ("\n# memory: about %s at most", memory);
  if (plan->largest_steps > 0)
    {
      g_autofree char *at = weft_format_size (plan->largest_size);
      printf (" (the largest schedule: %s at %s, %" G_GUINT64_FORMAT
              " steps)", weft_algorithm_name (plan->largest_alg), at,
              plan->largest_steps);
    }
  printf ("\n# checked: nothing simulated or recorded\n");
  return WEFT_EXIT_OK;
}

/* With -v, after the table: the peak the run reached, and what held
 * its memory as the estimate made before it counts it. */
static void
print_memory (const WeftSizesPlan *plan)
{
  size_t peak = weft_memory_peak ();
  g_autofree char *measured = weft_format_memory (peak);
  g_autofree char *at_most = weft_format_memory (plan->memory);
  g_autofree char *before = weft_format_memory (plan->parts.before);
  g_autofree char *schedules = weft_format_memory (plan->parts.schedules);
  g_autofree char *networks = weft_format_memory (plan->parts.networks);
  g_autofree char *transfers = weft_format_memory (plan->parts.transfers);
  g_autofree char *bins = weft_format_memory (plan->parts.bins);
  g_autofree char *uncounted = weft_format_memory (plan->parts.uncounted);

  printf ("# memory: peak %s; estimated at most %s: %s before simulating "
          "(the program, the scenario and its topology), %s schedules and "
          "their executors' state, %s networks and routes, %s transfers "
          "in progress, %s link statistics, %s not counted (the heap's "
          "pages, threads, SQLite's cache)\n",
          peak ? measured : "unknown", at_most, before, schedules, networks,
          transfers, bins, uncounted);
}

/* The table's head, as nccl-tests prints it. */
static void
print_header (const WeftRunArgs *args, const WeftSizesPlan *plan)
{
  printf ("# weft %s: %s on %s, %u ranks, %s fidelity\n", WEFT_VERSION,
          weft_op_name (args->op), args->scenario_path, plan->n,
          weft_fidelity_name (args->fidelity));
  print_file (args, plan);
  printf ("#\n");
  if (args->nccl_tests)
    {
      printf ("# %10s  %12s  %8s  %6s  %6s           out-of-place          "
              "             in-place\n", "", "", "", "", "");
      printf ("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s "
              "%6s\n", "size", "count", "type", "redop", "root", "time",
              "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
      printf ("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s "
              " %5s\n", "(B)", "(elements)", "", "", "", "(us)", "(GB/s)",
              "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
      return;
    }
  printf ("# %10s %12s %8s %6s %6s %10s %8s %8s  %-9s %s\n", "size", "count",
          "type", "redop", "root", "time", "algbw", "busbw", "algorithm",
          "protocol");
  printf ("# %10s %12s %8s %6s %6s %10s %8s %8s\n", "(B)", "(elements)", "",
          "", "", "(us)", "(GB/s)", "(GB/s)");
}

/* A time as nccl-tests prints it: fewer decimals as it grows. */
static void
nccl_tests_time (char *text, size_t n, double us)
{
  g_snprintf (text, n, us >= 10000 ? "%7.0f" : us >= 100 ? "%7.1f" : "%7.2f",
              us);
}

/* Print @row as nccl-tests does, at once (a long sweep shows its
 * progress), and return its bus bandwidth. */
static double
print_row (const WeftRunArgs *args, const WeftSizesPlan *plan, const WeftSizesRow *row)
{
  WeftOp op = args->op;
  gboolean reducing = op == WEFT_OP_ALL_REDUCE || op == WEFT_OP_REDUCE
                      || op == WEFT_OP_REDUCE_SCATTER;
  int root = op == WEFT_OP_BROADCAST || op == WEFT_OP_REDUCE ? 0 : -1;
  double seconds = row->result.time * 1e-12;
  double algbw = seconds > 0 ? row->size / seconds / 1e9 : 0;
  double busbw = algbw * weft_op_bus_factor (op, plan->n);

  const char *redop = reducing ? args->redop : "none";
  if (args->nccl_tests)
    {
      char t[32];
      nccl_tests_time (t, sizeof t, row->result.time / 1e6);
      printf ("%12" G_GUINT64_FORMAT "  %12" G_GUINT64_FORMAT
              "  %8s  %6s  %6d  %7s  %6.2f  %6.2f  %5s  %7s  %6.2f  %6.2f  "
              "%5s\n", row->size, row->size / 4, "float", redop, root, t,
              algbw, busbw, "N/A", t, algbw, busbw, "N/A");
    }
  else
    printf ("  %10" G_GUINT64_FORMAT " %12" G_GUINT64_FORMAT
            " %8s %6s %6d %10.2f %8.2f %8.2f  %-9s %s\n",
            row->size, row->size / 4, "float", redop, root,
            row->result.time / 1e6, algbw, busbw,
            args->file ? "file" : weft_algorithm_name (row->alg),
            weft_protocol_name (row->proto));
  fflush (stdout);
  return busbw;
}

/* With -v: each candidate of a size, as a comment under its row: NCCL's
 * estimate where NCCL has it (for weft's own algorithms, that of NCCL's
 * ring or tree with the same protocol, by which --select nccl picks its
 * protocol), and weft's simulated time where it was simulated (or that it
 * stopped once slower than the best). */
static void
print_candidates (const WeftSizesPlan *plan, const WeftSizesRow *row)
{
  int shown = 0;

  if (plan->candidates < 2)
    return;
  printf ("#   candidates:");
  for (int pair = 0; pair < WEFT_PAIRS; pair++)
    {
      if (!plan->fits[pair / WEFT_PROTOCOL_COUNT][pair % WEFT_PROTOCOL_COUNT])
        continue;
      int k = 0;
      while (k < row->n_tried && row->tried[k] != pair)
        k++;
      printf ("%s %s/%s", shown++ ? "," : "",
              weft_algorithm_name (pair / WEFT_PROTOCOL_COUNT),
              weft_protocol_name (pair % WEFT_PROTOCOL_COUNT));
      if (row->estimate[pair] >= 0)
        printf (" NCCL %.2f us", row->estimate[pair]);
      else if (row->hint[pair] >= 0)
        printf (" NCCL's ring or tree %.2f us", row->hint[pair]);
      if (k < row->n_tried && row->time[k] == WEFT_TIME_MAX)
        printf (" weft slower (stopped)");
      else if (k < row->n_tried)
        printf (" weft %.2f us", row->time[k] / 1e6);
    }
  printf ("\n");
}

/* `weft run --trace`: run_trace.c plans, replays and records the trace. */
static int
run_trace (const WeftRunArgs *args)
{
  WeftTraceRun tr = {
    args->scenario_path, args->scenario, args->trace_path, args->fidelity,
    args->seed, args->channels, args->chunks,
    args->auto_alg ? -1 : (int) args->alg,
    args->auto_proto ? -1 : (int) args->proto, args->db_path,
    args->bin_width, args->command, weft_sizes_interrupt (),
    weft_sizes_catch_signals, args->jobs, args->check, args->max_memory,
  };

  return weft_run_trace (&tr);
}

/* What the rows printed so far add up to, for the table's last line. */
typedef struct {
  const WeftRunArgs *args;
  const WeftSizesPlan *plan;
  double busbw_sum;             /* GB/s */
} Table;

/* Print a size done as its row of the table; a WeftSizesRowFn. */
static void
on_row (const WeftSizesRow *row, void *data)
{
  Table *t = data;

  t->busbw_sum += print_row (t->args, t->plan, row);
  if (t->args->verbose)
    print_candidates (t->plan, row);
}

/* Plan the sweep's sizes; WEFT_EXIT_OK or the exit status once said. */
static int
plan_sweep (const WeftRunArgs *args, WeftSizesPlan *plan)
{
  int n;
  g_autofree uint64_t *sizes = list_sizes (args, &n);

  return weft_sizes_plan (args, sizes, n, plan);
}

/* One algorithm of a list: its plan, and what its sizes came to. */
typedef struct {
  const char *name;
  WeftSizesPlan plan;
  GArray *rows;                 /* per size done, a Done */
  double busbw_sum;
} Entry;

typedef struct {
  WeftTime time;
  int proto;
} Done;

/* A size of one algorithm of a list done: kept for the table, printed
 * once all have run. */
static void
on_listed_row (const WeftSizesRow *row, void *data)
{
  Entry *e = data;
  Done done = { row->result.time, row->proto };

  g_array_append_val (e->rows, done);
}

/* The algorithms of a list side by side: for each size, each one's time,
 * bus bandwidth and protocol. */
static void
print_side_by_side (const WeftRunArgs *args, Entry *entries, guint n,
                    const WeftSizesPlan *plan)
{
  double factor = weft_op_bus_factor (args->op, plan->n);

  printf ("# weft %s: %s on %s, %u ranks, %s fidelity; each algorithm's "
          "time, busbw and protocol\n#\n# %10s %12s", WEFT_VERSION,
          weft_op_name (args->op), args->scenario_path, plan->n,
          weft_fidelity_name (args->fidelity), "", "");
  for (guint k = 0; k < n; k++)
    printf (k + 1 < n ? "  %-26s" : "  %s", entries[k].name);
  printf ("\n# %10s %12s", "size", "count");
  for (guint k = 0; k < n; k++)
    printf (k + 1 < n ? "  %10s %8s %-6s" : "  %10s %8s %s", "time", "busbw",
            "proto");
  printf ("\n# %10s %12s", "(B)", "(elements)");
  for (guint k = 0; k < n; k++)
    printf ("  %10s %8s%s", "(us)", "(GB/s)", k + 1 < n ? "       " : "");
  printf ("\n");
  for (int i = 0; i < plan->n_sizes; i++)
    {
      uint64_t size = plan->sizes[i];
      printf ("  %10" G_GUINT64_FORMAT " %12" G_GUINT64_FORMAT, size,
              size / 4);
      for (guint k = 0; k < n; k++)
        {
          if ((guint) i >= entries[k].rows->len)
            {
              printf (k + 1 < n ? "  %10s %8s %-6s" : "  %10s %8s %s", "-",
                      "-", "-");
              continue;
            }
          const Done *d = &g_array_index (entries[k].rows, Done, i);
          double seconds = d->time * 1e-12;
          double busbw = seconds > 0 ? size / seconds / 1e9 * factor : 0;
          entries[k].busbw_sum += busbw;
          printf (k + 1 < n ? "  %10.2f %8.2f %-6s" : "  %10.2f %8.2f %s",
                  d->time / 1e6, busbw, weft_protocol_name (d->proto));
        }
      printf ("\n");
    }
  printf ("# Avg bus bandwidth    :");
  for (guint k = 0; k < n; k++)
    printf ("%s %s %g", k ? "," : "", entries[k].name,
            entries[k].rows->len ? entries[k].busbw_sum / entries[k].rows->len
                                 : 0.0);
  printf ("\n");
}

/* `weft run --algorithm A,B,...`: plan every one first (a list one of
 * which cannot run leaves nothing behind), then run and record each as a
 * run of its own, and print them side by side. */
static int
run_list (WeftRunArgs *args)
{
  guint n = g_strv_length (args->algorithms);
  g_autofree Entry *entries = g_new0 (Entry, n);
  int status = WEFT_EXIT_OK;

  for (guint k = 0; k < n; k++)
    {
      entries[k].name = args->algorithms[k];
      entries[k].rows = g_array_new (FALSE, FALSE, sizeof (Done));
    }
  for (guint k = 0; k < n && status == WEFT_EXIT_OK; k++)
    {
      weft_run_args_use_algorithm (args, entries[k].name);
      status = plan_sweep (args, &entries[k].plan);
    }
  for (guint k = 0; k < n && status == WEFT_EXIT_OK && args->check; k++)
    {
      weft_run_args_use_algorithm (args, entries[k].name);
      print_plan (args, &entries[k].plan);
    }
  gboolean ran = FALSE;
  for (guint k = 0; k < n && status == WEFT_EXIT_OK && !args->check; k++)
    {
      g_auto (WeftRecord) rec = { 0 };
      g_auto (WeftSizesOutcome) out = { 0 };
      weft_run_args_use_algorithm (args, entries[k].name);
      if ((status = weft_sizes_record_begin (args, &rec)) != WEFT_EXIT_OK)
        break;
      weft_sizes_run (args, &entries[k].plan, on_listed_row, &entries[k],
                      &out);
      status = weft_sizes_record_end (args, &entries[k].plan, &out, &rec);
      ran = TRUE;
    }
  if (ran)
    print_side_by_side (args, entries, n, &entries[0].plan);
  for (guint k = 0; k < n; k++)
    {
      weft_sizes_plan_clear (&entries[k].plan);
      g_array_unref (entries[k].rows);
    }
  return status;
}

/* `weft run`: read the options, then replay a trace or plan, begin the
 * record, simulate the sizes and record them.  Returns the exit status. */
int
weft_cmd_run (int argc, char **argv)
{
  g_auto (WeftRunArgs) args = { 0 };
  g_auto (WeftSizesPlan) plan = { 0 };
  g_auto (WeftRecord) rec = { 0 };
  g_auto (WeftSizesOutcome) out = { 0 };
  int status;

  if ((status = weft_run_args_parse (argc, argv, &args)) != WEFT_EXIT_OK)
    return status;
  weft_log_setup (args.log_level);
  if (args.trace_path != NULL)
    return run_trace (&args);
  if (args.algorithms != NULL)
    return run_list (&args);
  if ((status = plan_sweep (&args, &plan)) != WEFT_EXIT_OK)
    return status;
  if (args.check)
    return print_plan (&args, &plan);
  if ((status = weft_sizes_record_begin (&args, &rec)) != WEFT_EXIT_OK)
    return status;
  Table table = { &args, &plan, 0 };
  print_header (&args, &plan);
  weft_sizes_run (&args, &plan, on_row, &table, &out);
  if (!out.failed && !out.interrupted)
    printf ("# Avg bus bandwidth    : %g\n",
            out.rows->len ? table.busbw_sum / out.rows->len : 0.0);
  if (args.verbose)
    print_memory (&plan);
  return weft_sizes_record_end (&args, &plan, &out, &rec);
}
