/* weft: `weft report`: a run's summary as text. */
#include "db-private.h"
#include "results.h"
#include "topology/tiers.h"
#include "units.h"

#include <sqlite3.h>
#include <string.h>

static gboolean
query_fail (sqlite3 *h, GError **error)
{
  g_set_error (error, WEFT_DB_ERROR, WEFT_DB_ERROR_IO, "query failed: %s", sqlite3_errmsg (h));
  return FALSE;
}

int64_t
weft_results_pick_run (WeftDb *db, int64_t run, GError **error)
{
  sqlite3 *h = weft_db_handle (db);
  sqlite3_stmt *st;
  int64_t found = 0;

  if (sqlite3_prepare_v2 (h, run > 0 ? "SELECT id FROM runs WHERE id = ?"
                                     : "SELECT MAX(id) FROM runs",
                          -1, &st, NULL) != SQLITE_OK)
    return query_fail (h, error);
  if (run > 0)
    sqlite3_bind_int64 (st, 1, run);
  if (sqlite3_step (st) == SQLITE_ROW)
    found = sqlite3_column_int64 (st, 0);
  sqlite3_finalize (st);
  if (found == 0)
    {
      if (run > 0)
        g_set_error (error, WEFT_DB_ERROR, WEFT_DB_ERROR_NO_DATA, "there is no run %" G_GINT64_FORMAT
                     " in the database", run);
      else
        g_set_error (error, WEFT_DB_ERROR, WEFT_DB_ERROR_NO_DATA, "the database holds no run");
    }
  return found;
}

static char *
column_dup (sqlite3_stmt *st, int col)
{
  const unsigned char *text = sqlite3_column_text (st, col);
  return g_strdup (text ? (const char *) text : "");
}

gboolean
weft_results_summary (WeftDb *db, int64_t run, WeftRunSummary *summary,
                      GError **error)
{
  sqlite3 *h = weft_db_handle (db);
  sqlite3_stmt *st;

  *summary = (WeftRunSummary) { 0 };
  if (sqlite3_prepare_v2 (h, "SELECT status, COALESCE(message, '') FROM runs "
                          "WHERE id = ?", -1, &st, NULL) != SQLITE_OK)
    return query_fail (h, error);
  sqlite3_bind_int64 (st, 1, run);
  if (sqlite3_step (st) == SQLITE_ROW)
    {
      summary->status = column_dup (st, 0);
      summary->message = column_dup (st, 1);
    }
  sqlite3_finalize (st);
  if (summary->status == NULL)
    {
      g_set_error (error, WEFT_DB_ERROR, WEFT_DB_ERROR_NO_DATA, "there is no run %"
                   G_GINT64_FORMAT " in the database", run);
      return FALSE;
    }
  if (sqlite3_prepare_v2 (h, "SELECT time_us, busbw_GBps, bytes FROM ops "
                          "WHERE run_id = ? ORDER BY bytes DESC LIMIT 1", -1,
                          &st, NULL) != SQLITE_OK)
    return query_fail (h, error);
  sqlite3_bind_int64 (st, 1, run);
  if (sqlite3_step (st) == SQLITE_ROW)
    {
      summary->has_op = TRUE;
      summary->time_us = sqlite3_column_double (st, 0);
      summary->busbw = sqlite3_column_double (st, 1);
      summary->bytes = (uint64_t) sqlite3_column_int64 (st, 2);
    }
  sqlite3_finalize (st);
  if (sqlite3_prepare_v2 (h, "SELECT name, mean_util, peak_util FROM "
                          "hottest_links WHERE run_id = ? LIMIT 1", -1, &st,
                          NULL) != SQLITE_OK)
    return query_fail (h, error);
  sqlite3_bind_int64 (st, 1, run);
  if (sqlite3_step (st) == SQLITE_ROW)
    {
      summary->busiest = column_dup (st, 0);
      summary->mean_util = sqlite3_column_double (st, 1);
      summary->peak_util = sqlite3_column_double (st, 2);
    }
  sqlite3_finalize (st);
  return TRUE;
}

void
weft_run_summary_clear (WeftRunSummary *summary)
{
  g_free (summary->busiest);
  g_free (summary->status);
  g_free (summary->message);
  *summary = (WeftRunSummary) { 0 };
}

/* A replayed trace: each job's step from its ranks, the ops by kind, and
 * the critical path, instead of a sweep's rows. */
static gboolean
report_trace (sqlite3 *h, int64_t run, int top, FILE *out, GError **error)
{
  sqlite3_stmt *st;

  if (sqlite3_prepare_v2 (h, "SELECT job, COUNT(*), MAX(step_ps), "
                          "AVG(compute_ps), AVG(exposed_ps) FROM trace_ranks "
                          "WHERE run_id = ? GROUP BY job ORDER BY MIN(rowid)",
                          -1, &st, NULL) != SQLITE_OK)
    return query_fail (h, error);
  sqlite3_bind_int64 (st, 1, run);
  fprintf (out, "# %-14s %8s %14s %14s %14s\n", "job", "ranks", "step (us)",
           "compute", "exposed comm");
  fprintf (out, "# %-14s %8s %14s %14s %14s\n", "", "", "(slowest rank)",
           "(mean, us)", "(mean, us)");
  while (sqlite3_step (st) == SQLITE_ROW)
    fprintf (out, "  %-14s %8d %14.2f %14.2f %14.2f\n",
             sqlite3_column_text (st, 0), sqlite3_column_int (st, 1),
             sqlite3_column_double (st, 2) / 1e6,
             sqlite3_column_double (st, 3) / 1e6,
             sqlite3_column_double (st, 4) / 1e6);
  sqlite3_finalize (st);

  if (sqlite3_prepare_v2 (h, "SELECT op, algorithm, protocol, COUNT(*), "
                          "SUM(bytes), AVG(time_us), AVG(busbw_GBps) FROM ops "
                          "WHERE run_id = ? GROUP BY op, algorithm, protocol "
                          "ORDER BY SUM(time_us) DESC", -1, &st, NULL)
      != SQLITE_OK)
    return query_fail (h, error);
  sqlite3_bind_int64 (st, 1, run);
  fprintf (out, "\nThe ops by kind:\n");
  fprintf (out, "  %-14s %-18s %-8s %9s %16s %12s %10s\n", "kind", "algorithm",
           "protocol", "ops", "bytes", "mean (us)", "busbw");
  while (sqlite3_step (st) == SQLITE_ROW)
    {
      gboolean moves = sqlite3_column_int64 (st, 4) > 0;
      fprintf (out, "  %-14s %-18s %-8s %9lld %16lld %12.2f ",
               sqlite3_column_text (st, 0), sqlite3_column_text (st, 1),
               sqlite3_column_text (st, 2), sqlite3_column_int64 (st, 3),
               sqlite3_column_int64 (st, 4), sqlite3_column_double (st, 5));
      if (moves)
        fprintf (out, "%10.2f\n", sqlite3_column_double (st, 6));
      else
        fprintf (out, "%10s\n", "-");
    }
  sqlite3_finalize (st);

  /* The critical path: its time by kind, and its longest ops, each for
   * as long as it held the path up (runs recorded before weft said so:
   * the op's time from its first rank's start to its last rank's end). */
  const char *held = weft_db_has_critical_spans (h)
                         ? "coalesce (t.critical_ps / 1e6, o.time_us)"
                         : "o.time_us";
  g_autofree char *by_kind = g_strdup_printf (
      "SELECT o.op, COUNT(*), SUM(%s) FROM ops o JOIN trace_ops t ON "
      "t.run_id = o.run_id AND t.op_id = o.id WHERE o.run_id = ? AND "
      "t.critical GROUP BY o.op ORDER BY SUM(%s) DESC", held, held);
  if (sqlite3_prepare_v2 (h, by_kind, -1, &st, NULL) != SQLITE_OK)
    return query_fail (h, error);
  sqlite3_bind_int64 (st, 1, run);
  fprintf (out, "\nWhere the time went (the critical path, by kind):\n");
  while (sqlite3_step (st) == SQLITE_ROW)
    fprintf (out, "  %-14s %6lld ops %14.2f us\n", sqlite3_column_text (st, 0),
             sqlite3_column_int64 (st, 1), sqlite3_column_double (st, 2));
  sqlite3_finalize (st);
  g_autofree char *longest = g_strdup_printf (
      "SELECT t.name, t.job, o.op, o.nranks, o.start_ps, o.end_ps, %s FROM "
      "ops o JOIN trace_ops t ON t.run_id = o.run_id AND t.op_id = o.id "
      "WHERE o.run_id = ? AND t.critical ORDER BY %s DESC, o.id LIMIT ?",
      held, held);
  if (sqlite3_prepare_v2 (h, longest, -1, &st, NULL) != SQLITE_OK)
    return query_fail (h, error);
  sqlite3_bind_int64 (st, 1, run);
  sqlite3_bind_int (st, 2, top);
  fprintf (out, "\nThe %d longest ops on the critical path:\n", top);
  fprintf (out, "  %-20s %-10s %-14s %6s %12s %12s %12s\n", "op", "job", "kind",
           "ranks", "start (us)", "end (us)", "held (us)");
  while (sqlite3_step (st) == SQLITE_ROW)
    fprintf (out, "  %-20s %-10s %-14s %6d %12.2f %12.2f %12.2f\n",
             sqlite3_column_text (st, 0), sqlite3_column_text (st, 1),
             sqlite3_column_text (st, 2), sqlite3_column_int (st, 3),
             sqlite3_column_int64 (st, 4) / 1e6,
             sqlite3_column_int64 (st, 5) / 1e6, sqlite3_column_double (st, 6));
  sqlite3_finalize (st);
  fprintf (out, "\n");
  return TRUE;
}

/* A tier's figures over a run. */
typedef struct {
  char *name;
  int order;                    /* weft_tier_order() */
  int64_t links, used;          /* directed links, and those with bytes */
  double bandwidth;             /* B/s, the used links' */
  int64_t bytes;
  double peak;                  /* B/s in its fullest bin */
} TierRow;

static void
tier_row_clear (gpointer data)
{
  g_free (((TierRow *) data)->name);
}

static gint
by_tier_order (gconstpointer a, gconstpointer b)
{
  const TierRow *x = a, *y = b;
  return x->order != y->order ? (x->order > y->order) - (x->order < y->order)
                              : strcmp (x->name, y->name);
}

/* How busy each tier of the fabric was over @run, as the family table
 * counts it, over the links that carried traffic (both ways): its bytes
 * over what those links carry over the run's span, and its fullest time
 * bin (the bins of every link of an operation start and end together);
 * from the GPUs outward.  A run recorded before links had tiers says so. */
static gboolean
report_tiers (WeftDb *db, int64_t run, FILE *out, GError **error)
{
  sqlite3 *h = weft_db_handle (db);
  sqlite3_stmt *st;
  double span = 0;
  g_autoptr (GArray) rows = g_array_new (FALSE, TRUE, sizeof (TierRow));

  g_array_set_clear_func (rows, tier_row_clear);
  fprintf (out, "\nLinks by tier, those that carried traffic (mean "
                "utilization over the run, and its\nfullest time bin):\n");
  if (!weft_db_has_tiers (db))
    {
      fprintf (out, "  (not recorded: the database is an older weft's)\n");
      return TRUE;
    }
  if (sqlite3_prepare_v2 (h, "SELECT l.tier, COUNT(*), COUNT(b.bytes), "
                          "COALESCE(SUM(CASE WHEN b.bytes > 0 THEN "
                          "l.bandwidth_Bps END), 0), "
                          "COALESCE(SUM(b.bytes), 0) FROM links l LEFT JOIN "
                          "(SELECT link_id, SUM(bytes) AS bytes FROM link_util "
                          "WHERE run_id = ?1 GROUP BY link_id HAVING "
                          "SUM(bytes) > 0) b ON "
                          "b.link_id = l.id WHERE l.run_id = ?1 AND l.tier IS "
                          "NOT NULL GROUP BY l.tier", -1, &st, NULL)
      != SQLITE_OK)
    return query_fail (h, error);
  sqlite3_bind_int64 (st, 1, run);
  while (sqlite3_step (st) == SQLITE_ROW)
    {
      TierRow row = { column_dup (st, 0), 0, sqlite3_column_int64 (st, 1),
                      sqlite3_column_int64 (st, 2),
                      sqlite3_column_double (st, 3),
                      sqlite3_column_int64 (st, 4), 0 };
      row.order = weft_tier_order (row.name);
      g_array_append_val (rows, row);
    }
  sqlite3_finalize (st);
  if (rows->len == 0)
    {
      fprintf (out, "  (not recorded: the run is an older weft's)\n");
      return TRUE;
    }
  if (sqlite3_prepare_v2 (h, "SELECT tier, MAX(bytes * 1e12 / (t1 - t0)) FROM "
                          "(SELECT l.tier AS tier, u.t0_ps AS t0, u.t1_ps AS "
                          "t1, SUM(u.bytes) AS bytes FROM link_util u JOIN "
                          "links l ON l.run_id = u.run_id AND l.id = u.link_id "
                          "WHERE u.run_id = ?1 AND l.tier IS NOT NULL GROUP BY "
                          "l.tier, u.t0_ps, u.t1_ps) GROUP BY tier", -1, &st,
                          NULL) != SQLITE_OK)
    return query_fail (h, error);
  sqlite3_bind_int64 (st, 1, run);
  while (sqlite3_step (st) == SQLITE_ROW)
    for (guint i = 0; i < rows->len; i++)
      if (g_strcmp0 (g_array_index (rows, TierRow, i).name,
                     (const char *) sqlite3_column_text (st, 0)) == 0)
        g_array_index (rows, TierRow, i).peak = sqlite3_column_double (st, 1);
  sqlite3_finalize (st);
  if (sqlite3_prepare_v2 (h, "SELECT MAX(end_ps) - MIN(start_ps) FROM ops "
                          "WHERE run_id = ?", -1, &st, NULL) != SQLITE_OK)
    return query_fail (h, error);
  sqlite3_bind_int64 (st, 1, run);
  if (sqlite3_step (st) == SQLITE_ROW)
    span = sqlite3_column_double (st, 0) * 1e-12;
  sqlite3_finalize (st);

  g_array_sort (rows, by_tier_order);
  for (guint i = 0; i < rows->len; i++)
    {
      const TierRow *r = &g_array_index (rows, TierRow, i);
      fprintf (out, "  %-14s %6" G_GINT64_FORMAT " of %6" G_GINT64_FORMAT
               " links", r->name, r->used, r->links);
      if (r->used == 0)
        {
          fprintf (out, "\n");
          continue;
        }
      double mean = span > 0 && r->bandwidth > 0
                        ? r->bytes / (r->bandwidth * span) : 0;
      /* A bin holds whole bytes: a full one may come to a byte over. */
      double peak = r->bandwidth > 0 ? MIN (1.0, r->peak / r->bandwidth) : 0;
      fprintf (out, ", %5.1f%% on average, %5.1f%% at the peak, %"
               G_GINT64_FORMAT " bytes\n", 100 * mean, 100 * peak, r->bytes);
    }
  return TRUE;
}

char *
weft_results_fault_text (const char *what, double speed, double compute,
                         int64_t from_ps, int64_t until_ps)
{
  GString *text = g_string_new (what);

  if (compute < 1)
    g_string_append_printf (text, " computes at %g%%", 100 * compute);
  if (speed < 1 && compute < 1)
    g_string_append (text, ", its links");
  if (speed <= 0)
    g_string_append (text, " down");
  else if (speed < 1)
    g_string_append_printf (text, " at %g%%", 100 * speed);
  if (from_ps > 0)
    {
      g_autofree char *t = weft_format_time ((WeftTime) from_ps);
      g_string_append_printf (text, " from %s", t);
    }
  if (until_ps >= 0)
    {
      g_autofree char *t = weft_format_time ((WeftTime) until_ps);
      g_string_append_printf (text, " until %s", t);
    }
  return g_string_free (text, FALSE);
}

sqlite3_stmt *
weft_results_faults (sqlite3 *h, const char *columns)
{
  sqlite3_stmt *st = NULL;
  g_autofree char *sql = g_strdup_printf (
      "SELECT %s, %s FROM faults WHERE run_id = ? ORDER BY id", columns,
      weft_db_has_fault_times (h) ? "from_ps, coalesce (until_ps, -1)"
                                  : "0, -1");

  if (sqlite3_prepare_v2 (h, sql, -1, &st, NULL) != SQLITE_OK)
    {
      sqlite3_finalize (st);
      return NULL;
    }
  return st;
}

/* The faults of @run, if it had any, and the operations they slowed: each
 * against the same operation (collective, size, ranks) of the latest
 * complete run of the same scenario without faults, if the database holds
 * one.  Nothing for a database older than the faults table. */
static void
report_faults (sqlite3 *h, int64_t run, FILE *out)
{
  sqlite3_stmt *st;
  int n = 0;

  if ((st = weft_results_faults (h, "what, speed, compute, links, gpus"))
      == NULL)
    return;
  sqlite3_bind_int64 (st, 1, run);
  while (sqlite3_step (st) == SQLITE_ROW)
    {
      g_autofree char *fault = weft_results_fault_text (
          (const char *) sqlite3_column_text (st, 0),
          sqlite3_column_double (st, 1), sqlite3_column_double (st, 2),
          sqlite3_column_int64 (st, 5), sqlite3_column_int64 (st, 6));
      int links = sqlite3_column_int (st, 3), gpus = sqlite3_column_int (st, 4);
      fprintf (out, "%s %s (", n++ ? "," : "# faults:", fault);
      if (links)
        fprintf (out, "%d link%s%s", links, links == 1 ? "" : "s",
                 gpus ? ", " : "");
      if (gpus)
        fprintf (out, "%d GPU%s", gpus, gpus == 1 ? "" : "s");
      fprintf (out, ")");
    }
  sqlite3_finalize (st);
  if (n == 0)
    return;
  fprintf (out, "\n");
  /* The same workload: the same trace replayed, or both sweeps. */
  static const char base[] =
      "WITH base AS (SELECT r.id FROM runs r, runs me WHERE me.id = ?1 "
      "AND r.scenario = me.scenario AND r.id != me.id AND r.status = "
      "'complete' AND NOT EXISTS (SELECT 1 FROM faults f WHERE f.run_id = "
      "r.id) AND (SELECT value FROM run_params WHERE run_id = r.id AND key = "
      "'trace') IS (SELECT value FROM run_params WHERE run_id = me.id AND "
      "key = 'trace') ORDER BY r.id DESC LIMIT 1) ";
  g_autofree char *trace_sql = g_strconcat (
      base, "SELECT b.id, (SELECT (MAX(end_ps) - MIN(start_ps)) / 1e6 FROM "
      "ops WHERE run_id = b.id), (SELECT (MAX(end_ps) - MIN(start_ps)) / 1e6 "
      "FROM ops WHERE run_id = ?1) FROM base b WHERE EXISTS (SELECT 1 FROM "
      "trace_ops WHERE run_id = ?1)", NULL);
  if (sqlite3_prepare_v2 (h, trace_sql, -1, &st, NULL) == SQLITE_OK)
    {
      sqlite3_bind_int64 (st, 1, run);
      if (sqlite3_step (st) == SQLITE_ROW)
        {
          double before = sqlite3_column_double (st, 1);
          double after = sqlite3_column_double (st, 2);
          fprintf (out, "# against run %lld, the same without faults: trace "
                   "time %.2f us, now %.2f us (%+.1f%%)\n",
                   sqlite3_column_int64 (st, 0), before, after,
                   before > 0 ? 100 * (after / before - 1) : 0);
          sqlite3_finalize (st);
          return;
        }
      sqlite3_finalize (st);
    }
  g_autofree char *ops_sql = g_strconcat (
      base, "SELECT b.run_id, o.op, o.bytes, b.time_us, o.time_us FROM ops o "
      "JOIN ops b ON b.run_id = (SELECT id FROM base) AND b.op = o.op "
      "AND b.bytes = o.bytes AND b.nranks = o.nranks WHERE o.run_id = ?1 "
      "AND NOT EXISTS (SELECT 1 FROM trace_ops WHERE run_id = ?1) "
      "ORDER BY o.id", NULL);
  if (sqlite3_prepare_v2 (h, ops_sql, -1, &st, NULL) != SQLITE_OK)
    return;
  sqlite3_bind_int64 (st, 1, run);
  for (n = 0; sqlite3_step (st) == SQLITE_ROW; n++)
    {
      double before = sqlite3_column_double (st, 3);
      double after = sqlite3_column_double (st, 4);
      if (n == 0)
        fprintf (out, "# against run %lld, the same without faults:\n"
                 "#   %-14s %12s %12s %12s %8s\n", sqlite3_column_int64 (st, 0),
                 "op", "size (B)", "before (us)", "after (us)", "slower");
      fprintf (out, "#   %-14s %12lld %12.2f %12.2f %+7.1f%%\n",
               sqlite3_column_text (st, 1), sqlite3_column_int64 (st, 2),
               before, after, before > 0 ? 100 * (after / before - 1) : 0);
    }
  sqlite3_finalize (st);
}

gboolean
weft_results_report (WeftDb *db, int64_t run, int top, FILE *out,
                     GError **error)
{
  sqlite3 *h = weft_db_handle (db);
  sqlite3_stmt *st;

  if (!weft_db_index (db, error))
    return FALSE;
  /* The run. */
  if (sqlite3_prepare_v2 (h, "SELECT scenario, fidelity, seed, status, "
                          "wall_seconds, events, started_at, "
                          "COALESCE(command, ''), COALESCE(message, '') "
                          "FROM runs WHERE id = ?", -1, &st, NULL) != SQLITE_OK)
    return query_fail (h, error);
  sqlite3_bind_int64 (st, 1, run);
  if (sqlite3_step (st) == SQLITE_ROW)
    {
      fprintf (out, "# run %" G_GINT64_FORMAT ": %s\n# %s fidelity, seed "
               "%lld, %s, started %s, %.2f s, %lld events\n# %s\n", run,
               sqlite3_column_text (st, 0), sqlite3_column_text (st, 1),
               sqlite3_column_int64 (st, 2), sqlite3_column_text (st, 3),
               sqlite3_column_text (st, 6), sqlite3_column_double (st, 4),
               sqlite3_column_int64 (st, 5), sqlite3_column_text (st, 7));
      /* Why a run failed or stopped is the first thing to read of it. */
      const char *message = (const char *) sqlite3_column_text (st, 8);
      if (*message)
        fprintf (out, "# %s: %s\n", sqlite3_column_text (st, 3), message);
    }
  sqlite3_finalize (st);
  report_faults (h, run, out);
  fprintf (out, "#\n");

  gboolean trace = FALSE;
  if (sqlite3_prepare_v2 (h, "SELECT EXISTS (SELECT 1 FROM trace_ops WHERE "
                          "run_id = ?)", -1, &st, NULL) != SQLITE_OK)
    return query_fail (h, error);
  sqlite3_bind_int64 (st, 1, run);
  trace = sqlite3_step (st) == SQLITE_ROW && sqlite3_column_int (st, 0);
  sqlite3_finalize (st);
  if (trace && !report_trace (h, run, top, out, error))
    return FALSE;
  if (trace)
    goto links;

  /* The operations, as nccl-tests prints them. */
  if (sqlite3_prepare_v2 (h, "SELECT op, bytes, time_us, algbw_GBps, "
                          "busbw_GBps, algorithm, protocol, nranks FROM ops "
                          "WHERE run_id = ? ORDER BY id", -1, &st, NULL)
      != SQLITE_OK)
    return query_fail (h, error);
  sqlite3_bind_int64 (st, 1, run);
  fprintf (out, "# %14s %12s %12s %10s %8s %8s  %-12s %s\n", "op", "size",
           "count", "time", "algbw", "busbw", "algorithm", "protocol");
  fprintf (out, "# %14s %12s %12s %10s %8s %8s\n", "", "(B)", "(elements)",
           "(us)", "(GB/s)", "(GB/s)");
  double sum = 0;
  int rows = 0;
  while (sqlite3_step (st) == SQLITE_ROW)
    {
      sqlite3_int64 bytes = sqlite3_column_int64 (st, 1);
      fprintf (out, "  %14s %12lld %12lld %10.2f %8.2f %8.2f  %-12s %s\n",
               sqlite3_column_text (st, 0), bytes, bytes / 4,
               sqlite3_column_double (st, 2), sqlite3_column_double (st, 3),
               sqlite3_column_double (st, 4), sqlite3_column_text (st, 5),
               sqlite3_column_text (st, 6));
      sum += sqlite3_column_double (st, 4);
      rows++;
    }
  sqlite3_finalize (st);
  fprintf (out, "# Avg bus bandwidth    : %g\n\n", rows ? sum / rows : 0.0);

links:
  /* The busiest links. */
  if (sqlite3_prepare_v2 (h, "SELECT name, type, mean_util, peak_util, bytes "
                          "FROM hottest_links WHERE run_id = ? LIMIT ?",
                          -1, &st, NULL) != SQLITE_OK)
    return query_fail (h, error);
  sqlite3_bind_int64 (st, 1, run);
  sqlite3_bind_int (st, 2, top);
  fprintf (out, "The %d busiest links (utilization over the whole run):\n", top);
  fprintf (out, "  %-40s %-12s %8s %8s %14s\n", "link", "type", "mean", "peak",
           "bytes");
  while (sqlite3_step (st) == SQLITE_ROW)
    fprintf (out, "  %-40s %-12s %7.1f%% %7.1f%% %14lld\n",
             sqlite3_column_text (st, 0), sqlite3_column_text (st, 1),
             100 * sqlite3_column_double (st, 2),
             100 * sqlite3_column_double (st, 3), sqlite3_column_int64 (st, 4));
  sqlite3_finalize (st);

  /* Where the time went: the operations' shares of the run, and how busy
   * each family of links was while it ran. */
  if (sqlite3_prepare_v2 (h, "SELECT op, bytes, algorithm, time_us, "
                          "100.0 * time_us / (SELECT SUM(time_us) FROM ops "
                          "WHERE run_id = ?1) FROM ops WHERE run_id = ?1 "
                          "ORDER BY time_us DESC LIMIT 5", -1, &st, NULL)
      != SQLITE_OK)
    return query_fail (h, error);
  sqlite3_bind_int64 (st, 1, run);
  if (!trace)
    fprintf (out, "\nWhere the time went (the longest operations):\n");
  while (!trace && sqlite3_step (st) == SQLITE_ROW)
    fprintf (out, "  %5.1f%%  %s of %lld B by %s, %.2f us\n",
             sqlite3_column_double (st, 4), sqlite3_column_text (st, 0),
             sqlite3_column_int64 (st, 1), sqlite3_column_text (st, 2),
             sqlite3_column_double (st, 3));
  sqlite3_finalize (st);
  if (sqlite3_prepare_v2 (h, "SELECT family, COUNT(*), AVG(mean_util), "
                          "MAX(mean_util), SUM(bytes) FROM link_summary "
                          "WHERE run_id = ? AND bytes > 0 GROUP BY family "
                          "ORDER BY SUM(bytes) DESC", -1, &st, NULL)
      != SQLITE_OK)
    return query_fail (h, error);
  sqlite3_bind_int64 (st, 1, run);
  fprintf (out, "\nLinks that carried traffic, by family (mean utilization "
                "over the run):\n");
  while (sqlite3_step (st) == SQLITE_ROW)
    fprintf (out, "  %-8s %6d links, %5.1f%% on average, %5.1f%% the busiest, "
             "%lld bytes\n",
             sqlite3_column_text (st, 0), sqlite3_column_int (st, 1),
             100 * sqlite3_column_double (st, 2),
             100 * sqlite3_column_double (st, 3), sqlite3_column_int64 (st, 4));
  sqlite3_finalize (st);
  return report_tiers (db, run, out, error);
}
