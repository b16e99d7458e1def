/* weft: `weft run --trace`: replay a trace and report each rank's step. */
#include "cli.h"
#include "record.h"
#include "db.h"
#include "run_sizes.h"
#include "collectives/algorithm.h"
#include "collectives/collective_run.h"
#include "memory.h"
#include "units.h"
#include "topology/routing.h"
#include "traces/trace_run.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The database keeps at most about this many link_util rows of a trace:
 * the bins widen as the run goes on. */
#define BIN_BUDGET 2000000
/* With --bin, the bins kept at most before they widen (768 MiB). */
#define BIN_ASKED_BUDGET 32000000
/* Bins start this wide (then widen to stay within the budget). */
#define FIRST_BIN_WIDTH ((WeftTime) 1000000)    /* 1 us */
/* Jobs with more ranks than this get a summary instead of a line a rank. */
#define RANK_LINES 32
/* The critical path is printed up to this many ops. */
#define PATH_LINES 24

/* qsort() order of WeftTimes, smallest first. */
static int
cmp_time (const void *a, const void *b)
{
  WeftTime x = *(const WeftTime *) a, y = *(const WeftTime *) b;
  return (x > y) - (x < y);
}

/* The ranks of @op, as job ranks, in runs such as "0-7,16" (cut short
 * past about 40 characters), and a send's or receive's peer; the caller
 * frees it. */
static char *
rank_list (const WeftTrace *t, const WeftTraceOp *op)
{
  const WeftTraceJob *job = &g_array_index (t->jobs, WeftTraceJob, op->job);
  GString *s = g_string_new (NULL);
  uint32_t n = op->n_ranks;
  const uint32_t *r = &g_array_index (t->ranks, uint32_t, op->first_rank);

  /* Runs of consecutive ranks as a-b. */
  for (uint32_t i = 0; i < n;)
    {
      uint32_t j = i;
      while (j + 1 < n && r[j + 1] == r[j] + 1)
        j++;
      if (s->len > 40)
        {
          g_string_append (s, ",...");
          break;
        }
      g_string_append_printf (s, "%s%u", s->len ? "," : "",
                              r[i] - job->first_rank);
      if (j > i)
        g_string_append_printf (s, "-%u", r[j] - job->first_rank);
      i = j + 1;
    }
  if (op->kind == WEFT_TRACE_SEND || op->kind == WEFT_TRACE_RECV)
    g_string_append_printf (s, "%s%u", op->kind == WEFT_TRACE_SEND ? "->"
                                                                   : "<-",
                            op->peer - job->first_rank);
  return g_string_free (s, FALSE);
}

/* Each job's step, and each rank's step, compute and exposed
 * communication: a line a rank for small jobs, their spread for large
 * ones (the database keeps every rank). */
static void
print_ranks (const WeftTopology *topo, const WeftTrace *t,
             const WeftTraceResult *r)
{
  for (guint j = 0; j < t->jobs->len; j++)
    {
      const WeftTraceJob *job = &g_array_index (t->jobs, WeftTraceJob, j);
      WeftTime step = 0, compute = 0, exposed = 0;
      uint32_t slowest = 0;
      for (uint32_t k = 0; k < job->n_ranks; k++)
        {
          uint32_t g = job->first_rank + k;
          if (r->step[g] > step)
            step = r->step[g], slowest = k;
          compute += r->compute[g];
          exposed += r->exposed[g];
        }
      printf ("#\n# job %s: %u ranks, step %.2f us (rank %u), mean compute "
              "%.2f us, mean exposed communication %.2f us\n", job->name,
              job->n_ranks, step / 1e6, slowest,
              compute / 1e6 / job->n_ranks, exposed / 1e6 / job->n_ranks);
      if (job->n_ranks <= RANK_LINES)
        {
          printf ("# %6s  %-24s %12s %12s %12s\n", "rank", "gpu",
                  "step (us)", "compute", "exposed");
          for (uint32_t k = 0; k < job->n_ranks; k++)
            {
              uint32_t g = job->first_rank + k;
              printf ("  %6u  %-24s %12.2f %12.2f %12.2f\n", k,
                      topo->nodes[g_array_index (t->gpus, uint32_t, g)].name,
                      r->step[g] / 1e6, r->compute[g] / 1e6,
                      r->exposed[g] / 1e6);
            }
          continue;
        }
      /* Many ranks: the spread of each figure. */
      printf ("# %-10s %12s %12s %12s %12s   (us over %u ranks; each rank in "
              "the database, trace_ranks)\n", "", "min", "median", "mean",
              "max", job->n_ranks);
      const WeftTime *cols[3] = { r->step, r->compute, r->exposed };
      const char *names[3] = { "step", "compute", "exposed" };
      g_autofree WeftTime *v = g_new (WeftTime, job->n_ranks);
      for (int c = 0; c < 3; c++)
        {
          double sum = 0;
          for (uint32_t k = 0; k < job->n_ranks; k++)
            {
              v[k] = cols[c][job->first_rank + k];
              sum += v[k];
            }
          qsort (v, job->n_ranks, sizeof *v, cmp_time);
          printf ("  %-10s %12.2f %12.2f %12.2f %12.2f\n", names[c],
                  v[0] / 1e6, v[job->n_ranks / 2] / 1e6,
                  sum / job->n_ranks / 1e6, v[job->n_ranks - 1] / 1e6);
        }
    }
}

/* The critical path: how much of it is compute, and its ops, each with
 * the span it held the path up, the middle left out past PATH_LINES. */
static void
print_path (const WeftTrace *t, const WeftTraceResult *r)
{
  guint n = r->critical->len;
  const WeftTime *span = (const WeftTime *) r->critical_span->data;
  WeftTime on_compute = 0;

  for (guint k = 0; k < n; k++)
    {
      const WeftTraceOp *op = weft_trace_op (t, g_array_index (r->critical,
                                                               uint32_t, k));
      if (op->kind == WEFT_TRACE_COMPUTE)
        on_compute += span[2 * k + 1] - span[2 * k];
    }
  printf ("#\n# critical path: %u ops, %.2f us of compute on it\n", n,
          on_compute / 1e6);
  printf ("# %-16s %-8s %-14s %-24s %12s %12s\n", "op", "job", "kind",
          "ranks", "start (us)", "end (us)");
  for (guint k = 0; k < n; k++)
    {
      if (n > PATH_LINES && k == PATH_LINES / 2)
        {
          printf ("  ... %u more ...\n", n - PATH_LINES);
          k = n - PATH_LINES / 2;
        }
      const WeftTraceOp *op = weft_trace_op (t, g_array_index (r->critical,
                                                               uint32_t, k));
      g_autofree char *ranks = rank_list (t, op);
      printf ("  %-16s %-8s %-14s %-24s %12.2f %12.2f\n", op->name,
              g_array_index (t->jobs, WeftTraceJob, op->job).name,
              weft_trace_op_kind (op), ranks, span[2 * k] / 1e6,
              span[2 * k + 1] / 1e6);
    }
}

/* The replay's progress on a terminal, over itself. */
static void
show_progress (uint64_t done, uint64_t total, void *data)
{
  (void) data;
  fprintf (stderr, "\rweft run: %.0f%% of the trace's (op, rank) pairs done",
           100.0 * (double) done / (double) total);
}

/* Load the trace for the scenario's topology, which checks that its ranks
 * name GPUs there.  NULL after saying on stderr what is wrong. */
static WeftTrace *
plan_trace (const WeftTraceRun *run)
{
  g_autoptr (GError) error = NULL;
  WeftTrace *trace = weft_trace_load (run->trace_path, run->scenario->topo,
                                      &error);

  if (trace == NULL)
    fprintf (stderr, "%s\n", error->message);
  return trace;
}

/* What collective @op on @gpus, asked to run by @alg, may take as the
 * replay plans it: the largest footprint of the algorithms that may run
 * it (kept while the replay goes on), and all of them together (while its
 * algorithm is chosen). */
static void
collective_need (const WeftTraceRun *run, const WeftTraceOp *op, int alg,
                 const uint32_t *gpus, size_t per_transfer, size_t *kept,
                 size_t *choosing, uint64_t *steps)
{
  const WeftTopology *topo = run->scenario->topo;
  WeftCollectiveParams params = { run->channels, run->chunks, 0, NULL, 1,
                                  NULL, NULL, 0, FALSE, NULL };

  *kept = *choosing = 0;
  for (int a = 0; a < WEFT_ALG_COUNT; a++)
    {
      WeftFootprint f;
      if (!weft_trace_may_run (op, alg, a)
          || !weft_collective_footprint (topo, gpus, op->n_ranks, op->op, a,
                                         op->bytes, &params, &f, NULL))
        continue;
      size_t one = f.schedule + f.image + f.run
                   + f.in_progress * per_transfer;
      *kept = MAX (*kept, one);
      *choosing += one;
      *steps = MAX (*steps, f.steps);
    }
}

/* What the replay will take at most, in bytes: what the process holds,
 * the network and its routes, each distinct collective's schedule and
 * run (the replay keeps every one it planned), the most that choosing
 * one's algorithm holds at once, the link statistics' budget, and what is
 * not counted.  An upper bound: every collective may be in flight at
 * once.  *@steps: the largest schedule's steps. */
static size_t
estimate_trace (const WeftTraceRun *run, const WeftTrace *trace,
                uint64_t *steps)
{
  const WeftTopology *topo = run->scenario->topo;
  size_t per_transfer = weft_network_transfer_bytes (topo, run->fidelity);
  size_t kept = 0, choosing = 0;
  g_autoptr (GHashTable) seen = g_hash_table_new_full (
      g_bytes_hash, g_bytes_equal, (GDestroyNotify) g_bytes_unref, NULL);

  *steps = 0;
  for (guint i = 0; i < trace->ops->len; i++)
    {
      const WeftTraceOp *op = weft_trace_op (trace, i);
      if (op->kind != WEFT_TRACE_COLLECTIVE)
        continue;
      /* A collective planned once for every op of the same kind, size,
       * algorithm, protocol and GPUs, as the replay does. */
      int alg = op->algorithm == WEFT_TRACE_AUTO ? run->algorithm
                                                  : op->algorithm;
      int proto = op->protocol == WEFT_TRACE_AUTO ? run->protocol
                                                   : op->protocol;
      g_autofree uint32_t *gpus = weft_trace_op_gpus (trace, op);
      GBytes *k = weft_trace_plan_key (op, alg, proto, gpus);
      if (!g_hash_table_add (seen, k))
        continue;
      size_t one, all;
      collective_need (run, op, alg, gpus, per_transfer, &one, &all, steps);
      kept += one;
      choosing = MAX (choosing, all);
    }
  return weft_memory_resident () + weft_network_bytes (topo, run->fidelity)
         + weft_routing_bytes_bound (topo) + kept + choosing
         + (size_t) (run->bin_width ? BIN_ASKED_BUDGET : BIN_BUDGET) * 2
               * (sizeof (uint32_t) + sizeof (double))
         + WEFT_MEMORY_ALLOWANCE
         + (size_t) MAX (run->jobs, 1) * WEFT_THREAD_ALLOWANCE;
}

/* Refuse, before anything is written, a replay that would pass
 * --max-memory or the memory the machine has free; print the estimate
 * with --check.  Returns the exit status. */
static int
check_trace_memory (const WeftTraceRun *run, const WeftTrace *trace)
{
  uint64_t steps;
  size_t bytes = estimate_trace (run, trace, &steps);
  size_t limit = run->max_memory;

  g_autofree char *need = weft_format_memory (bytes);

  if (run->check)
    printf ("# memory: about %s at most (the largest schedule: %"
            G_GUINT64_FORMAT " steps)\n", need, steps);
  if (limit == 0 && weft_memory_available () > 0)
    limit = weft_memory_available () + weft_memory_resident ();
  if (limit == 0 || bytes <= limit)
    return WEFT_EXIT_OK;
  g_autofree char *have = weft_format_memory (limit);
  return weft_cli_usage ("run", "replaying %s would take about %s of "
                         "memory, more than the %s %s (the largest "
                         "schedule has %" G_GUINT64_FORMAT " steps); choose "
                         "fewer channels or chunks, or other algorithms",
                         run->trace_path, need, have,
                         run->max_memory ? "--max-memory allows"
                                         : "this machine has free",
                         steps);
}

/* Open the database and begin the replay in it: its scenario, topology
 * and trace.  Returns the exit status. */
static int
record_begin (const WeftTraceRun *run, WeftRecord *rec)
{
  const char *key = "trace";
  WeftRunInfo info = { run->scenario_path, run->scenario->sha256,
                       weft_fidelity_name (run->fidelity), run->seed,
                       run->command };

  return weft_record_begin (rec, run->db_path, &info, run->scenario->topo,
                            &key, &run->trace_path, 1, run->interrupted);
}

/* Replay @trace as @run says into @result, and print each job's ranks
 * and the critical path if it ran to its end.  FALSE with @error if it
 * could not run (ranks that wait for each other, found by running it). */
static gboolean
replay (const WeftTraceRun *run, const WeftTrace *trace,
        WeftTraceResult *result, GError **error)
{
  const WeftTopology *topo = run->scenario->topo;
  WeftTraceOptions options = {
    { run->fidelity, run->seed, run->bin_width ? run->bin_width
                                               : FIRST_BIN_WIDTH,
      run->interrupted, FALSE,
      run->bin_width ? BIN_ASKED_BUDGET : BIN_BUDGET, 0, NULL, 1, NULL },
    { run->channels, run->chunks, 0, NULL, 1, NULL, NULL, 0, FALSE, NULL },
    run->algorithm, run->protocol,
    isatty (STDERR_FILENO) ? show_progress : NULL, NULL, run->jobs,
  };

  gboolean ran = weft_trace_run (topo, trace, &options, result, error);
  if (options.progress)
    fprintf (stderr, "\r%60s\r", "");
  /* A signal after the last event still stops what is left to do. */
  if (ran && *run->interrupted)
    result->interrupted = TRUE;
  if (!ran || result->interrupted)
    return ran;
  if (run->bin_width && result->stats
      && result->stats->bin_width > run->bin_width)
    {
      g_autofree char *asked = weft_format_time (run->bin_width);
      g_autofree char *got = weft_format_time (result->stats->bin_width);
      fprintf (stderr, "weft run: bins of %s would be more than the %d link "
               "bins a run keeps; the link statistics are in bins of %s\n",
               asked, BIN_ASKED_BUDGET, got);
    }
  printf ("# weft %s: trace %s on %s, %u job%s, %u ranks, %u ops, %s "
          "fidelity\n", WEFT_VERSION, run->trace_path, run->scenario_path,
          trace->jobs->len, trace->jobs->len == 1 ? "" : "s",
          trace->gpus->len, trace->ops->len,
          weft_fidelity_name (run->fidelity));
  print_ranks (topo, trace, result);
  print_path (trace, result);
  printf ("#\n# Trace time: %.2f us\n", result->time / 1e6);
  return TRUE;
}

/* Record what the replay came to, and return the command's exit status:
 * a replay that could not run (@result NULL, @why says why: bad input)
 * is marked failed, one interrupted so; a finished one is written out and
 * marked complete. */
static int
record_end (const WeftTrace *trace,
            const WeftTraceResult *result, const GError *why,
            const WeftRecord *rec)
{
  g_autoptr (GError) error = NULL;

  if (result == NULL)
    {
      fprintf (stderr, "%s\n", why->message);
      weft_record_end (rec, "failed", 0, why->message);
      return WEFT_EXIT_USAGE;
    }
  gboolean written = !result->interrupted
                     && weft_db_write_trace (rec->db, rec->id, trace, result,
                                             &error);
  if (result->interrupted
      || g_error_matches (error, WEFT_DB_ERROR, WEFT_DB_ERROR_INTERRUPTED))
    return weft_record_interrupted (rec, result->events);
  if (!written
      || !weft_db_end_run (rec->db, rec->id, "complete",
                           (g_get_monotonic_time () - rec->wall_start) / 1e6,
                           result->events, &error))
    {
      fprintf (stderr, "weft run: %s\n", error->message);
      weft_record_end (rec, "failed", result->events, error->message);
      return WEFT_EXIT_FAILURE;
    }
  return WEFT_EXIT_OK;
}

/* Plan, replay and record as a sweep is; see cli.h. */
int
weft_run_trace (const WeftTraceRun *run)
{
  g_autoptr (WeftTrace) trace = NULL;
  g_auto (WeftRecord) rec = { 0 };
  g_autoptr (GError) error = NULL;
  WeftTraceResult result;
  int status;

  if ((trace = plan_trace (run)) == NULL)
    return WEFT_EXIT_USAGE;
  if (run->check)
    printf ("# weft %s: trace %s on %s, %u job%s, %u ranks, %u ops\n",
            WEFT_VERSION, run->trace_path, run->scenario_path,
            trace->jobs->len, trace->jobs->len == 1 ? "" : "s",
            trace->gpus->len, trace->ops->len);
  if ((status = check_trace_memory (run, trace)) != WEFT_EXIT_OK)
    return status;
  if (!weft_trace_check_fits (run->scenario->topo, trace, run->algorithm,
                              run->protocol, &error))
    {
      fprintf (stderr, "%s\n", error->message);
      return WEFT_EXIT_USAGE;
    }
  if (run->check)
    {
      printf ("# checked: nothing simulated or recorded\n");
      return WEFT_EXIT_OK;
    }
  run->catch_signals ();
  if ((status = record_begin (run, &rec)) != WEFT_EXIT_OK)
    return status;
  if (!replay (run, trace, &result, &error))
    return record_end (trace, NULL, error, &rec);
  status = record_end (trace, &result, NULL, &rec);
  weft_trace_result_clear (&result);
  return status;
}
