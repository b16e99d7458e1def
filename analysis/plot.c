/* weft: `weft plot`: a run's pictures, drawn by gnuplot run as a child
 * process with an argument list (never through a shell).  The data go to
 * files in a temporary directory; the scripts are in analysis/. */
#include "db-private.h"
#include "reference.h"
#include "results.h"
#include "files.h"
#include "units.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <math.h>
#include <sqlite3.h>
#include <string.h>
#include <unistd.h>

#define GRID_COLUMNS 400
/* The heatmap's value of a link that is down: below the scale. */
#define DOWN (-0.1)
#define MAX_ROWS 1000

static gboolean
query_fail (sqlite3 *h, GError **error)
{
  g_set_error (error, WEFT_DB_ERROR, WEFT_DB_ERROR_IO, "query failed: %s", sqlite3_errmsg (h));
  return FALSE;
}

static gboolean
run_gnuplot (const char *script, const char *vars, GError **error)
{
  g_autofree char *path = g_build_filename (weft_data_dir (), "analysis",
                                            script, NULL);
  char *argv[] = { "gnuplot", "-e", (char *) vars, path, NULL };
  g_autofree char *err = NULL;
  int status;

  if (!g_spawn_sync (NULL, argv, NULL, G_SPAWN_SEARCH_PATH
                     | G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL, &err,
                     &status, error))
    return FALSE;
  if (!g_spawn_check_wait_status (status, NULL))
    {
      g_set_error (error, WEFT_DB_ERROR, WEFT_DB_ERROR_PLOT,
                   "gnuplot failed on %s: %s", script,
                   err ? err : "");
      return FALSE;
    }
  return TRUE;
}

/* A gnuplot string literal of @s (single quotes, doubled inside). */
static char *
quote (const char *s)
{
  GString *q = g_string_new ("'");

  for (const char *p = s; *p; p++)
    {
      if (*p == '\'')
        g_string_append_c (q, '\'');
      g_string_append_c (q, *p);
    }
  g_string_append_c (q, '\'');
  return g_string_free (q, FALSE);
}

static char *
vars (const WeftPlotOptions *o, const char *data, const char *out,
      const char *title, const char *extra)
{
  g_autofree char *qd = quote (data), *qo = quote (out), *qt = quote (title);

  return g_strdup_printf ("data=%s; out=%s; title_text=%s; term='%s'; %s", qd,
                          qo, qt, strcmp (o->format, "svg") == 0 ? "svg"
                                                                  : "pngcairo",
                          extra ? extra : "");
}

/* Write @data (taken over) to TMP/NAME.dat and draw it with NAME.gp into
 * OUT/NAME.FORMAT, which is added to @written.  gnuplot draws into a file
 * beside it, renamed into place once drawn: a failure leaves the earlier
 * picture as it was. */
static gboolean
draw (const char *name, GString *data, const WeftPlotOptions *o,
      const char *tmp, const char *title, const char *extra,
      GPtrArray *written, GError **error)
{
  g_autofree char *file = g_strdup_printf ("%s.dat", name);
  g_autofree char *path = g_build_filename (tmp, file, NULL);
  gboolean ok = g_file_set_contents (path, data->str, -1, error);

  g_string_free (data, TRUE);
  if (!ok)
    return FALSE;
  g_autofree char *out = g_strdup_printf ("%s/%s.%s", o->out_dir, name,
                                          o->format);
  g_autoptr (WeftOutput) output = weft_output_new (out, error);
  if (output == NULL)
    return FALSE;
  g_autofree char *script = g_strdup_printf ("%s.gp", name);
  g_autofree char *v = vars (o, path, weft_output_temp_path (output), title,
                             extra);
  if (!run_gnuplot (script, v, error)
      || !weft_output_commit (g_steal_pointer (&output), error))
    return FALSE;
  g_ptr_array_add (written, g_steal_pointer (&out));
  return TRUE;
}

/* The pictures weft drew into a folder are listed in this file there:
 * PNGs carry no mark of their writer, and weft replaces only its own. */
#define PLOTS_LIST ".weft-plots"

/* The names listed in @dir's list of weft's pictures. */
static GHashTable *
own_pictures (const char *dir)
{
  GHashTable *names = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                             NULL);
  g_autofree char *list = g_build_filename (dir, PLOTS_LIST, NULL);
  g_autofree char *text = NULL;

  if (g_file_get_contents (list, &text, NULL, NULL))
    {
      g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
      for (char **l = lines; *l; l++)
        if (**l)
          g_hash_table_add (names, g_strdup (*l));
    }
  return names;
}

/* Whether the pictures @names (NULL-terminated, without the format) may be
 * drawn into o->out_dir: each is none of @inputs (NULL-terminated, may be
 * NULL), and absent, or weft's own, or o->force. */
static gboolean
may_draw (const WeftPlotOptions *o, const char *const *names,
          const char *const *inputs, GError **error)
{
  /* The folder, or the nearest of its parents that is there, must be a
   * folder weft may write in: said before anything is run or drawn. */
  g_autofree char *dir = g_strdup (o->out_dir);
  while (!g_file_test (dir, G_FILE_TEST_EXISTS))
    {
      char *up = g_path_get_dirname (dir);
      gboolean top = strcmp (up, dir) == 0;
      g_free (dir);
      dir = up;
      if (top)
        break;
    }
  if (!g_file_test (dir, G_FILE_TEST_IS_DIR) || g_access (dir, W_OK) != 0)
    {
      g_set_error (error, WEFT_DB_ERROR, WEFT_DB_ERROR_IO, "%s: cannot "
                   "create: %s %s", o->out_dir, dir,
                   g_file_test (dir, G_FILE_TEST_IS_DIR)
                       ? "is a folder weft may not write in"
                       : "is not a folder");
      return FALSE;
    }
  g_autoptr (GHashTable) own = own_pictures (o->out_dir);

  for (guint i = 0; names[i]; i++)
    {
      g_autofree char *file = g_strdup_printf ("%s.%s", names[i], o->format);
      g_autofree char *path = g_build_filename (o->out_dir, file, NULL);
      if (!weft_file_may_write (path, inputs, NULL,
                                o->force || g_hash_table_contains (own, file),
                                error))
        return FALSE;
    }
  return TRUE;
}

/* Add the pictures @written (paths) to o->out_dir's list of weft's. */
static gboolean
remember_pictures (const WeftPlotOptions *o, const GPtrArray *written,
                   GError **error)
{
  g_autoptr (GHashTable) own = own_pictures (o->out_dir);
  g_autofree char *list = g_build_filename (o->out_dir, PLOTS_LIST, NULL);

  for (guint i = 0; i < written->len; i++)
    g_hash_table_add (own, g_path_get_basename (written->pdata[i]));
  g_autoptr (GList) names = g_hash_table_get_keys (own);
  names = g_list_sort (names, (GCompareFunc) strcmp);
  g_autoptr (WeftOutput) output = weft_output_new (list, error);
  if (output == NULL)
    return FALSE;
  for (GList *n = names; n; n = n->next)
    fprintf (weft_output_stream (output), "%s\n", (const char *) n->data);
  return weft_output_commit (g_steal_pointer (&output), error);
}

/* The measured sweep of @op (o->system's, from a CSV; or nccl-tests'
 * output) as "size busbw" lines. */
static gboolean
write_reference (const char *csv, const char *system, const char *op,
                 const char *path, GError **error)
{
  g_autoptr (GArray) rows = weft_reference_read (csv, system, op, error);
  if (rows == NULL)
    return FALSE;
  GString *out = g_string_new (NULL);
  for (guint i = 0; i < rows->len; i++)
    {
      const WeftMeasured *m = &g_array_index (rows, WeftMeasured, i);
      g_string_append_printf (out, "%" G_GUINT64_FORMAT " %.4f %.4f\n",
                              m->size, m->busbw, m->time);
    }
  gboolean ok = g_file_set_contents (path, out->str, -1, error);
  g_string_free (out, TRUE);
  return ok;
}

/* What tells run @run apart on a comparison's legend: its scenario, its
 * ranks, its algorithm and protocol (or that auto chose them by size),
 * its faults and its sweep parameters. */
static char *
run_label (sqlite3 *h, int64_t run)
{
  sqlite3_stmt *st;
  GString *label = g_string_new (NULL);

  g_string_printf (label, "run %" G_GINT64_FORMAT, run);
  if (sqlite3_prepare_v2 (h, "SELECT r.scenario, MAX(o.nranks), "
                          "COUNT(DISTINCT o.algorithm), COUNT(DISTINCT "
                          "o.protocol), MIN(o.algorithm), MIN(o.protocol) "
                          "FROM runs r JOIN ops o ON o.run_id = r.id WHERE "
                          "r.id = ?", -1, &st, NULL) == SQLITE_OK)
    {
      sqlite3_bind_int64 (st, 1, run);
      if (sqlite3_step (st) == SQLITE_ROW && sqlite3_column_text (st, 0))
        {
          g_autofree char *base = g_path_get_basename (
              (const char *) sqlite3_column_text (st, 0));
          const char *alg = (const char *) sqlite3_column_text (st, 4);
          const char *proto = (const char *) sqlite3_column_text (st, 5);
          g_string_append_printf (label, ": %s, %d GPUs, ", base,
                                  sqlite3_column_int (st, 1));
          if (sqlite3_column_int (st, 2) > 1)
            g_string_append (label, "auto by size");
          else if (sqlite3_column_int (st, 3) > 1)
            g_string_append_printf (label, "%s, protocol by size", alg);
          else
            g_string_append_printf (label, "%s %s", alg, proto);
        }
      sqlite3_finalize (st);
    }
  /* Its faults (none in a database older than the faults table). */
  if ((st = weft_results_faults (h, "what, speed, compute")) != NULL)
    {
      sqlite3_bind_int64 (st, 1, run);
      for (int n = 0; sqlite3_step (st) == SQLITE_ROW; n++)
        {
          g_autofree char *fault = weft_results_fault_text (
              (const char *) sqlite3_column_text (st, 0),
              sqlite3_column_double (st, 1), sqlite3_column_double (st, 2),
              sqlite3_column_int64 (st, 3), sqlite3_column_int64 (st, 4));
          g_string_append_printf (label, "%s %s", n ? "," : "; fault:", fault);
        }
      sqlite3_finalize (st);
    }
  if (sqlite3_prepare_v2 (h, "SELECT key, value FROM run_params WHERE "
                          "run_id = ? AND key NOT LIKE '\\_%' ESCAPE '\\' "
                          "ORDER BY key", -1, &st, NULL) == SQLITE_OK)
    {
      sqlite3_bind_int64 (st, 1, run);
      while (sqlite3_step (st) == SQLITE_ROW)
        g_string_append_printf (label, ", %s=%s", sqlite3_column_text (st, 0),
                                sqlite3_column_text (st, 1));
      sqlite3_finalize (st);
    }
  return g_string_free (label, FALSE);
}

/* busbw and time against size: one line per operation of the run, or per
 * run when comparing, each labelled so that the runs can be told apart;
 * the data rows are "size busbw time_us", for both pictures. */
static gboolean
plot_busbw (sqlite3 *h, int64_t run, const WeftPlotOptions *o, const char *tmp,
            const char *title, GPtrArray *written, GError **error)
{
  sqlite3_stmt *st;
  GString *data = g_string_new (NULL);
  g_autofree char *last = NULL, *op = NULL;
  g_autoptr (GArray) runs = g_array_new (FALSE, FALSE, sizeof (int64_t));

  g_array_append_val (runs, run);
  g_array_append_vals (runs, o->compare, o->n_compare);
  if (sqlite3_prepare_v2 (h, "SELECT o.op, o.bytes, o.busbw_GBps, o.time_us "
                          "FROM ops o WHERE o.run_id = ? AND o.bytes > 0 "
                          "ORDER BY o.op, o.bytes",
                          -1, &st, NULL) != SQLITE_OK)
    return query_fail (h, error);
  for (guint i = 0; i < runs->len; i++)
    {
      int64_t id = g_array_index (runs, int64_t, i);
      g_autofree char *compared = runs->len > 1 ? run_label (h, id) : NULL;
      sqlite3_bind_int64 (st, 1, id);
      while (sqlite3_step (st) == SQLITE_ROW)
        {
          g_autofree char *label
              = compared ? g_strdup (compared)
                         : g_strdup_printf ("weft %s",
                                            sqlite3_column_text (st, 0));
          if (op == NULL)
            op = g_strdup ((const char *) sqlite3_column_text (st, 0));
          if (g_strcmp0 (label, last) != 0)
            {
              g_string_append_printf (data, "%s\"%s\"\n",
                                      last ? "\n\n" : "", label);
              g_free (last);
              last = g_strdup (label);
            }
          g_string_append_printf (data, "%lld %.6f %.6f\n",
                                  sqlite3_column_int64 (st, 1),
                                  sqlite3_column_double (st, 2),
                                  sqlite3_column_double (st, 3));
        }
      sqlite3_reset (st);
    }
  sqlite3_finalize (st);
  g_autofree char *ref = g_build_filename (tmp, "reference.dat", NULL);
  if (o->reference
      && !write_reference (o->reference, o->system,
                           op ? op : "all_reduce", ref, error))
    {
      g_string_free (data, TRUE);
      return FALSE;
    }
  g_autofree char *qref = quote (o->reference ? ref : "");
  g_autofree char *extra = g_strdup_printf ("ref=%s", qref);
  GString *copy = g_string_new (data->str);
  return draw ("busbw", data, o, tmp, title, extra, written, error)
         && draw ("time", copy, o, tmp, title, extra, written, error);
}

typedef struct {
  int64_t id;
  char *name, *type;
  double bandwidth;
} LinkRow;

static void
link_row_clear (gpointer p)
{
  LinkRow *l = p;
  g_free (l->name);
  g_free (l->type);
}

static gboolean
plot_heatmap (sqlite3 *h, int64_t run, const WeftPlotOptions *o,
              const char *tmp, const char *title, GPtrArray *written,
              GError **error)
{
  sqlite3_stmt *st;
  g_autoptr (GArray) rows = g_array_new (FALSE, FALSE, sizeof (LinkRow));
  g_array_set_clear_func (rows, link_row_clear);

  /* The links that carried traffic, grouped by family and type; on a large
   * fabric the busiest of each type, a thousand rows in all at most. */
  int types = 1;
  if (sqlite3_prepare_v2 (h, "SELECT COUNT(DISTINCT type) FROM link_summary "
                          "WHERE run_id = ? AND bytes > 0", -1, &st, NULL)
      != SQLITE_OK)
    return query_fail (h, error);
  sqlite3_bind_int64 (st, 1, run);
  if (sqlite3_step (st) == SQLITE_ROW)
    types = MAX (sqlite3_column_int (st, 0), 1);
  sqlite3_finalize (st);
  if (sqlite3_prepare_v2 (h, "SELECT link_id, name, type, bandwidth_Bps FROM "
                          "(SELECT *, ROW_NUMBER () OVER (PARTITION BY type "
                          "ORDER BY mean_util DESC, link_id) AS rank "
                          "FROM link_summary WHERE run_id = ? AND bytes > 0) "
                          "WHERE rank <= ? ORDER BY family, type, link_id",
                          -1, &st, NULL) != SQLITE_OK)
    return query_fail (h, error);
  sqlite3_bind_int64 (st, 1, run);
  sqlite3_bind_int (st, 2, MAX_ROWS / types);
  while (sqlite3_step (st) == SQLITE_ROW)
    {
      LinkRow l = { sqlite3_column_int64 (st, 0),
                    g_strdup ((const char *) sqlite3_column_text (st, 1)),
                    g_strdup ((const char *) sqlite3_column_text (st, 2)),
                    sqlite3_column_double (st, 3) };
      g_array_append_val (rows, l);
    }
  sqlite3_finalize (st);
  if (rows->len == 0)
    return TRUE;
  /* The links a fault took down, below the others, marked. */
  guint busy = rows->len;
  if (sqlite3_prepare_v2 (h, "SELECT id, name, 'down', 0 FROM links WHERE "
                          "run_id = ? AND bandwidth_Bps = 0 ORDER BY id "
                          "LIMIT ?", -1, &st, NULL) != SQLITE_OK)
    return query_fail (h, error);
  sqlite3_bind_int64 (st, 1, run);
  sqlite3_bind_int (st, 2, MAX_ROWS / 4);
  while (sqlite3_step (st) == SQLITE_ROW)
    {
      LinkRow l = { sqlite3_column_int64 (st, 0),
                    g_strdup ((const char *) sqlite3_column_text (st, 1)),
                    g_strdup ("down"), 0 };
      g_array_append_val (rows, l);
    }
  sqlite3_finalize (st);

  sqlite3_int64 t_start = 0, t_end = 1;
  if (sqlite3_prepare_v2 (h, "SELECT MIN(start_ps), MAX(end_ps) FROM ops "
                          "WHERE run_id = ?", -1, &st, NULL) != SQLITE_OK)
    return query_fail (h, error);
  sqlite3_bind_int64 (st, 1, run);
  if (sqlite3_step (st) == SQLITE_ROW)
    {
      t_start = sqlite3_column_int64 (st, 0);
      t_end = MAX (sqlite3_column_int64 (st, 1), t_start + 1);
    }
  sqlite3_finalize (st);
  double column = (double) (t_end - t_start) / GRID_COLUMNS;

  g_autoptr (GHashTable) row_of = g_hash_table_new (g_int64_hash,
                                                    g_int64_equal);
  for (guint i = 0; i < rows->len; i++)
    {
      LinkRow *l = &g_array_index (rows, LinkRow, i);
      g_hash_table_insert (row_of, &l->id, GUINT_TO_POINTER (i + 1));
    }
  g_autofree double *grid = g_new0 (double, (size_t) rows->len * GRID_COLUMNS);
  if (sqlite3_prepare_v2 (h, "SELECT link_id, t0_ps, t1_ps, bytes FROM "
                          "link_util WHERE run_id = ?", -1, &st, NULL)
      != SQLITE_OK)
    return query_fail (h, error);
  sqlite3_bind_int64 (st, 1, run);
  while (sqlite3_step (st) == SQLITE_ROW)
    {
      gint64 id = sqlite3_column_int64 (st, 0);
      guint r = GPOINTER_TO_UINT (g_hash_table_lookup (row_of, &id));
      if (r == 0)
        continue;
      /* Spread the bin's bytes over the columns it covers. */
      double t0 = sqlite3_column_int64 (st, 1) - t_start;
      double t1 = sqlite3_column_int64 (st, 2) - t_start;
      double bytes = sqlite3_column_double (st, 3);
      for (int c = (int) (t0 / column); c < GRID_COLUMNS && c * column < t1;
           c++)
        {
          double lo = MAX (t0, c * column), hi = MIN (t1, (c + 1) * column);
          if (hi > lo)
            grid[(size_t) (r - 1) * GRID_COLUMNS + c]
                += bytes * (hi - lo) / (t1 - t0);
        }
    }
  sqlite3_finalize (st);

  GString *data = g_string_new (NULL);
  GString *tics = g_string_new (NULL);
  for (guint r = 0; r < rows->len; r++)
    {
      LinkRow *l = &g_array_index (rows, LinkRow, r);
      if (r == 0 || strcmp (l->type, g_array_index (rows, LinkRow, r - 1).type))
        g_string_append_printf (tics, "%s\"%s\" %u", tics->len ? ", " : "",
                                l->type, r);
      for (int c = 0; c < GRID_COLUMNS; c++)
        {
          /* A link that is down carries nothing: below the scale, in the
           * colour of its own. */
          double util = r >= busy ? DOWN
                        : l->bandwidth > 0
                            ? grid[(size_t) r * GRID_COLUMNS + c]
                                  / (l->bandwidth * column * 1e-12)
                            : 0;
          g_string_append_printf (data, "%.4f %u %.4f\n",
                                  (c + 0.5) * column / 1e6, r, MIN (util, 1.0));
        }
    }
  g_autofree char *qtics = quote (tics->str);
  g_string_free (tics, TRUE);
  g_autofree char *extra = g_strdup_printf ("tics=%s; rows=%u; down=%d",
                                            qtics, rows->len,
                                            rows->len > busy);
  return draw ("heatmap", data, o, tmp, title, extra, written, error);
}

static gboolean
plot_busiest (sqlite3 *h, int64_t run, const WeftPlotOptions *o,
              const char *tmp, const char *title, GPtrArray *written,
              GError **error)
{
  sqlite3_stmt *top, *st;
  GString *data = g_string_new (NULL);
  int n = 0;

  if (sqlite3_prepare_v2 (h, "SELECT link_id, name FROM hottest_links WHERE "
                          "run_id = ? LIMIT ?", -1, &top, NULL) != SQLITE_OK
      || sqlite3_prepare_v2 (h, "SELECT t0_ps / 1e6, t1_ps / 1e6, utilization "
                             "FROM link_util_ratio WHERE run_id = ? AND "
                             "link_id = ? ORDER BY t0_ps", -1, &st, NULL)
             != SQLITE_OK)
    {
      g_string_free (data, TRUE);
      return query_fail (h, error);
    }
  sqlite3_bind_int64 (top, 1, run);
  sqlite3_bind_int (top, 2, o->top);
  while (sqlite3_step (top) == SQLITE_ROW)
    {
      g_string_append_printf (data, "%s\"%s\"\n", n ? "\n\n" : "",
                              sqlite3_column_text (top, 1));
      sqlite3_bind_int64 (st, 1, run);
      sqlite3_bind_int64 (st, 2, sqlite3_column_int64 (top, 0));
      /* Each bin as a flat step; where no bin was written, the link was
       * idle. */
      double last = 0;
      while (sqlite3_step (st) == SQLITE_ROW)
        {
          double t0 = sqlite3_column_double (st, 0);
          double t1 = sqlite3_column_double (st, 1);
          double u = sqlite3_column_double (st, 2);
          if (t0 > last)
            g_string_append_printf (data, "%.4f 0\n%.4f 0\n", last, t0);
          g_string_append_printf (data, "%.4f %.4f\n%.4f %.4f\n", t0, u, t1,
                                  u);
          last = t1;
        }
      sqlite3_reset (st);
      n++;
    }
  sqlite3_finalize (top);
  sqlite3_finalize (st);
  if (n == 0)
    {
      g_string_free (data, TRUE);
      return TRUE;
    }
  /* Links down carry nothing and are never among the busiest: the title
   * says how many there were. */
  int down = 0;
  if (sqlite3_prepare_v2 (h, "SELECT COUNT(*) FROM links WHERE run_id = ? AND "
                          "bandwidth_Bps = 0", -1, &st, NULL) == SQLITE_OK)
    {
      sqlite3_bind_int64 (st, 1, run);
      if (sqlite3_step (st) == SQLITE_ROW)
        down = sqlite3_column_int (st, 0);
      sqlite3_finalize (st);
    }
  g_autofree char *marked = down > 0 ? g_strdup_printf (
                                "%s, %d directed link%s down", title, down,
                                down == 1 ? "" : "s")
                                     : g_strdup (title);
  return draw ("busiest", data, o, tmp, marked, NULL, written, error);
}

static gboolean
plot_timeline (sqlite3 *h, int64_t run, const WeftPlotOptions *o,
               const char *tmp, const char *title, GPtrArray *written,
               GError **error)
{
  sqlite3_stmt *st;
  GString *data = g_string_new (NULL);
  int ranks = 0, rows = 0, trace = 0;

  /* A trace's ranks compute and communicate at once: compute in the lower
   * half of a rank's row, communication in the upper, coloured by kind.
   * A sweep's operations follow each other: full rows, coloured by op. */
  if (sqlite3_prepare_v2 (h, "SELECT EXISTS (SELECT 1 FROM trace_ops WHERE "
                          "run_id = ?)", -1, &st, NULL) != SQLITE_OK)
    {
      g_string_free (data, TRUE);
      return query_fail (h, error);
    }
  sqlite3_bind_int64 (st, 1, run);
  trace = sqlite3_step (st) == SQLITE_ROW && sqlite3_column_int (st, 0);
  sqlite3_finalize (st);
  if (sqlite3_prepare_v2 (h, "SELECT r.rank, r.start_ps / 1e6, r.end_ps / 1e6, "
                          "r.op_id, o.op FROM rank_ops r JOIN ops o ON "
                          "o.run_id = r.run_id AND o.id = r.op_id WHERE "
                          "r.run_id = ? ORDER BY r.op_id, r.rank", -1, &st,
                          NULL) != SQLITE_OK)
    {
      g_string_free (data, TRUE);
      return query_fail (h, error);
    }
  sqlite3_bind_int64 (st, 1, run);
  while (sqlite3_step (st) == SQLITE_ROW)
    {
      int rank = sqlite3_column_int (st, 0);
      const char *kind = (const char *) sqlite3_column_text (st, 4);
      double y = rank, half = 0.35;
      int colour = (int) (sqlite3_column_int64 (st, 3) % 8);
      if (trace)
        {
          gboolean computes = g_strcmp0 (kind, "compute") == 0
                              || g_strcmp0 (kind, "sleep") == 0;
          gboolean p2p = g_strcmp0 (kind, "send") == 0
                         || g_strcmp0 (kind, "recv") == 0;
          y = computes ? rank - 0.19 : rank + 0.19;
          half = 0.17;
          colour = g_strcmp0 (kind, "compute") == 0 ? 0
                   : computes                       ? 7
                   : p2p                            ? 2
                                                    : 1;
        }
      g_string_append_printf (data, "%.2f %.4f %.4f %d %.2f\n", y,
                              sqlite3_column_double (st, 1),
                              sqlite3_column_double (st, 2), colour, half);
      ranks = MAX (ranks, rank + 1);
      rows++;
    }
  sqlite3_finalize (st);
  if (rows == 0)
    {
      g_string_free (data, TRUE);
      return TRUE;
    }
  g_autofree char *extra = g_strdup_printf ("ranks=%d;trace=%d", ranks,
                                            trace);
  return draw ("timeline", data, o, tmp, title, extra, written, error);
}

static void
remove_dir (const char *dir)
{
  const char *names[] = { "busbw.dat", "time.dat", "reference.dat",
                          "heatmap.dat", "busiest.dat", "timeline.dat" };

  for (guint i = 0; i < G_N_ELEMENTS (names); i++)
    {
      g_autofree char *p = g_build_filename (dir, names[i], NULL);
      g_remove (p);
    }
  g_rmdir (dir);
}

gboolean
weft_results_plot (WeftDb *db, int64_t run, const WeftPlotOptions *o,
                   GPtrArray *written, GError **error)
{
  sqlite3 *h = weft_db_handle (db);
  sqlite3_stmt *st;
  g_autofree char *title = NULL;

  WeftRunSummary summary;
  if (!weft_results_summary (db, run, &summary, error))
    return FALSE;
  if (!summary.has_op)
    {
      g_set_error (error, WEFT_DB_ERROR, WEFT_DB_ERROR_NO_DATA, "run %"
                   G_GINT64_FORMAT " has nothing to plot: it is %s%s%s", run, summary.status,
                   *summary.message ? ": " : " with no operation",
                   summary.message);
      weft_run_summary_clear (&summary);
      return FALSE;
    }
  weft_run_summary_clear (&summary);
  if (!weft_db_index (db, error))
    return FALSE;
  if (g_mkdir_with_parents (o->out_dir, 0755) != 0)
    {
      g_set_error (error, WEFT_DB_ERROR, WEFT_DB_ERROR_IO, "%s: cannot create: %s", o->out_dir,
                   g_strerror (errno));
      return FALSE;
    }
  if (sqlite3_prepare_v2 (h, "SELECT scenario, fidelity FROM runs WHERE id = ?",
                          -1, &st, NULL) != SQLITE_OK)
    return query_fail (h, error);
  sqlite3_bind_int64 (st, 1, run);
  if (sqlite3_step (st) == SQLITE_ROW)
    {
      g_autofree char *base = g_path_get_basename (
          (const char *) sqlite3_column_text (st, 0));
      title = g_strdup_printf ("%s, run %" G_GINT64_FORMAT " (%s)", base, run,
                               sqlite3_column_text (st, 1));
    }
  sqlite3_finalize (st);

  static const char *const pictures[] = { "busbw", "time", "heatmap",
                                           "busiest", "timeline", NULL };
  if (!may_draw (o, pictures, NULL, error))
    return FALSE;
  g_autofree char *tmp = g_dir_make_tmp ("weft-plot-XXXXXX", error);
  if (tmp == NULL)
    return FALSE;
  gboolean ok = plot_busbw (h, run, o, tmp, title, written, error)
                && plot_heatmap (h, run, o, tmp, title, written, error)
                && plot_busiest (h, run, o, tmp, title, written, error)
                && plot_timeline (h, run, o, tmp, title, written, error);
  remove_dir (tmp);
  return remember_pictures (o, written, error) && ok;
}

/* A sweep value as a number: a time (in ns), a rate (in GB/s), a size
 * (in bytes), a ratio "d:u" (d/u) or a plain number, with the unit it is
 * drawn in; FALSE for anything else (an algorithm's name). */
gboolean
weft_results_sweep_value (const char *value, double *x, const char **unit)
{
  WeftTime t;
  double rate, d, u;
  uint64_t bytes;
  char *end;

  if (weft_parse_time (value, &t, NULL))
    return *x = t / 1e3, *unit = "ns", TRUE;
  if (weft_parse_rate (value, &rate, NULL))
    return *x = rate / 1e9, *unit = "GB/s", TRUE;
  if (weft_parse_size (value, &bytes, NULL))
    return *x = (double) bytes, *unit = "B", TRUE;
  if (sscanf (value, "%lf:%lf", &d, &u) == 2 && u > 0 && strchr (value, ':'))
    return *x = d / u, *unit = "down:up", TRUE;
  *x = g_ascii_strtod (value, &end);
  *unit = "";
  return end != value && *end == '\0';
}

/* One point of a sweep plot: a complete run's value of the key, the other
 * parameters it was run with, and its largest size's busbw. */
typedef struct {
  char *value, *others;
  uint64_t size;
  double busbw, x;
} SweepPoint;

static void
sweep_point_clear (gpointer p)
{
  SweepPoint *pt = p;
  g_free (pt->value);
  g_free (pt->others);
}

static int
by_x (gconstpointer a, gconstpointer b)
{
  const SweepPoint *p = a, *q = b;
  return (p->x > q->x) - (p->x < q->x);
}

/* Every complete run that has @key: its point, in the order of the runs. */
static GArray *
sweep_points (sqlite3 *h, const char *key, GError **error)
{
  sqlite3_stmt *st;
  GArray *points = g_array_new (FALSE, FALSE, sizeof (SweepPoint));

  g_array_set_clear_func (points, sweep_point_clear);
  if (sqlite3_prepare_v2 (h, "SELECT p.value, (SELECT group_concat(q.key || "
                          "'=' || q.value, ', ') FROM (SELECT key, value FROM "
                          "run_params WHERE run_id = p.run_id AND key != ?1 "
                          "AND key NOT LIKE '\\_%' ESCAPE '\\' ORDER BY key) q), "
                          "o.bytes, o.busbw_GBps FROM run_params p JOIN runs "
                          "r ON r.id = p.run_id AND r.status = 'complete' "
                          "JOIN ops o ON o.run_id = p.run_id AND o.bytes = "
                          "(SELECT MAX(bytes) FROM ops WHERE run_id = "
                          "p.run_id) WHERE p.key = ?1 ORDER BY p.run_id", -1,
                          &st, NULL) != SQLITE_OK)
    {
      g_array_unref (points);
      query_fail (h, error);
      return NULL;
    }
  sqlite3_bind_text (st, 1, key, -1, SQLITE_TRANSIENT);
  while (sqlite3_step (st) == SQLITE_ROW)
    {
      const char *others = (const char *) sqlite3_column_text (st, 1);
      SweepPoint pt = {
        g_strdup ((const char *) sqlite3_column_text (st, 0)),
        g_strdup (others ? others : ""),
        (uint64_t) sqlite3_column_int64 (st, 2),
        sqlite3_column_double (st, 3), 0,
      };
      g_array_append_val (points, pt);
    }
  sqlite3_finalize (st);
  return points;
}

gboolean
weft_results_plot_sweep (WeftDb *db, const char *key, const WeftPlotOptions *o,
                         GPtrArray *written, GError **error)
{
  sqlite3 *h = weft_db_handle (db);
  g_autoptr (GArray) points = sweep_points (h, key, error);

  if (points == NULL)
    return FALSE;
  if (points->len == 0)
    {
      g_set_error (error, WEFT_DB_ERROR, WEFT_DB_ERROR_NO_DATA, "no complete "
                   "run has the parameter '%s'", key);
      return FALSE;
    }
  /* A numeric axis when every value is a number of one unit; else the
   * values in the order the runs first had them. */
  const char *unit = NULL;
  gboolean numeric = TRUE, one_size = TRUE;
  g_autoptr (GHashTable) position = g_hash_table_new (g_str_hash,
                                                      g_str_equal);
  for (guint i = 0; i < points->len; i++)
    {
      SweepPoint *pt = &g_array_index (points, SweepPoint, i);
      const char *u;
      double x;
      if (!weft_results_sweep_value (pt->value, &x, &u) || (unit && strcmp (u, unit)))
        numeric = FALSE;
      unit = u;
      pt->x = x;
      one_size &= pt->size == g_array_index (points, SweepPoint, 0).size;
      if (!g_hash_table_contains (position, pt->value))
        g_hash_table_insert (position, pt->value,
                             GUINT_TO_POINTER (g_hash_table_size (position)));
    }
  for (guint i = 0; !numeric && i < points->len; i++)
    {
      SweepPoint *pt = &g_array_index (points, SweepPoint, i);
      pt->x = GPOINTER_TO_UINT (g_hash_table_lookup (position, pt->value));
    }
  /* One line per value of the other parameters (and per size, if the
   * runs' largest sizes differ), its points along the axis. */
  g_array_sort (points, by_x);
  g_autoptr (GPtrArray) lines = g_ptr_array_new_with_free_func (g_free);
  for (guint i = 0; i < points->len; i++)
    {
      SweepPoint *pt = &g_array_index (points, SweepPoint, i);
      g_autofree char *size = weft_format_size (pt->size);
      char *label = g_strdup_printf ("%s%s%s", pt->others,
                                     one_size ? "" : *pt->others ? ", " : "",
                                     one_size ? "" : size);
      guint k;
      if (!g_ptr_array_find_with_equal_func (lines, label, g_str_equal, &k))
        g_ptr_array_add (lines, label);
      else
        g_free (label);
    }
  GString *data = g_string_new (NULL);
  for (guint k = 0; k < lines->len; k++)
    {
      const char *line = lines->pdata[k];
      g_string_append_printf (data, "%s\"%s\"\n", k ? "\n\n" : "",
                              *line ? line : "weft");
      for (guint i = 0; i < points->len; i++)
        {
          SweepPoint *pt = &g_array_index (points, SweepPoint, i);
          g_autofree char *size = weft_format_size (pt->size);
          g_autofree char *label = g_strdup_printf (
              "%s%s%s", pt->others, one_size ? "" : *pt->others ? ", " : "",
              one_size ? "" : size);
          if (strcmp (label, line) == 0)
            g_string_append_printf (data, "%.9g \"%s\" %.4f\n", pt->x,
                                    pt->value, pt->busbw);
        }
    }
  g_autofree char *first = weft_format_size (
      g_array_index (points, SweepPoint, 0).size);
  if (g_mkdir_with_parents (o->out_dir, 0755) != 0)
    {
      g_string_free (data, TRUE);
      g_set_error (error, WEFT_DB_ERROR, WEFT_DB_ERROR_IO, "%s: cannot create: %s", o->out_dir,
                   g_strerror (errno));
      return FALSE;
    }
  g_autofree char *tmp = g_dir_make_tmp ("weft-plot-XXXXXX", error);
  if (tmp == NULL)
    {
      g_string_free (data, TRUE);
      return FALSE;
    }
  static const char *const pictures[] = { "sweep", NULL };
  g_autofree char *xlabel = numeric && *unit
                                ? g_strdup_printf ("%s (%s)", key, unit)
                                : g_strdup (key);
  g_autofree char *qkey = quote (xlabel);
  g_autofree char *extra = g_strdup_printf ("key=%s; numeric=%d", qkey,
                                            numeric);
  g_autofree char *title = one_size
      ? g_strdup_printf ("busbw of %s against %s", first, key)
      : g_strdup_printf ("busbw of each run's largest size against %s", key);
  gboolean ok = may_draw (o, pictures, NULL, error);
  if (!ok)
    g_string_free (data, TRUE);     /* draw() takes it over */
  ok = ok && draw ("sweep", data, o, tmp, title, extra, written, error)
       && remember_pictures (o, written, error);
  g_autofree char *dat = g_build_filename (tmp, "sweep.dat", NULL);
  g_remove (dat);
  g_rmdir (tmp);
  return ok;
}

/* weft compare's one picture. */
static const char *const compare_pictures[] = { "compare", NULL };

gboolean
weft_results_plot_compare_check (const WeftPlotOptions *o,
                                 const char *const *inputs, GError **error)
{
  return may_draw (o, compare_pictures, inputs, error);
}

gboolean
weft_results_plot_compare (const WeftComparePoint *points, guint n,
                           const char *title, const WeftPlotOptions *o,
                           GPtrArray *written, GError **error)
{
  if (!may_draw (o, compare_pictures, NULL, error))
    return FALSE;
  if (g_mkdir_with_parents (o->out_dir, 0755) != 0)
    {
      g_set_error (error, WEFT_DB_ERROR, WEFT_DB_ERROR_IO, "%s: cannot "
                   "create: %s", o->out_dir, g_strerror (errno));
      return FALSE;
    }
  g_autofree char *tmp = g_dir_make_tmp ("weft-plot-XXXXXX", error);
  if (tmp == NULL)
    return FALSE;
  GString *data = g_string_new (NULL);
  for (guint i = 0; i < n; i++)
    g_string_append_printf (data, "%" G_GUINT64_FORMAT " %.6f %.6f %.6f\n",
                            points[i].size, points[i].measured,
                            points[i].weft, points[i].error);
  gboolean ok = draw ("compare", data, o, tmp, title, NULL, written, error);
  g_autofree char *dat = g_build_filename (tmp, "compare.dat", NULL);
  g_remove (dat);
  g_rmdir (tmp);
  return remember_pictures (o, written, error) && ok;
}
