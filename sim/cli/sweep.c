/* weft: the `weft sweep` command: the cartesian product of --grid values,
 * each point a `weft run` with those --set overrides, run by worker
 * processes that write a database shard each; the shards are merged into
 * the one database, with each point's parameters in run_params. */
#include "cli.h"
#include "config.h"
#include "db.h"
#include "results.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef WEFT_HAVE_MPI
#include <mpi.h>
#endif

#define SWEEP_KEY "_sweep"      /* run_params key: what else the point ran */

typedef struct {
  char **values;                /* one per grid */
  int64_t run;                  /* in the database, once done */
  GPid pid;                     /* while running */
  char *shard, *err;            /* its database shard and stderr file */
} Point;

typedef struct {
  char *key;
  char **values;
  guint n;
} Grid;

/* Point @p's parameters as run_params keys and values: each grid's key
 * and the point's value, then SWEEP_KEY and @sweep_id.  Fills @keys and
 * @values (grids->len + 1 each, owned by the caller, their strings not)
 * and returns how many. */
static guint
point_params (const GArray *grids, const Point *p, const char *sweep_id,
              const char ***keys, const char ***values)
{
  guint n = grids->len + 1;

  *keys = g_new (const char *, n);
  *values = g_new (const char *, n);
  for (guint g = 0; g < grids->len; g++)
    {
      (*keys)[g] = g_array_index (grids, Grid, g).key;
      (*values)[g] = p->values[g];
    }
  (*keys)[grids->len] = SWEEP_KEY;
  (*values)[grids->len] = sweep_id;
  return n;
}

static void
grid_clear (Grid *g)
{
  g_free (g->key);
  g_strfreev (g->values);
}

/* Options of `weft run` that a sweep passes on to every point. */
typedef struct {
  char *op, *algorithm, *protocol, *minbytes, *maxbytes, *ranks, *fidelity;
  char *bin, *channels, *chunks;
  gint64 stepfactor, seed;
} RunFlags;

static void
run_flags_clear (RunFlags *f)
{
  g_free (f->op);
  g_free (f->algorithm);
  g_free (f->protocol);
  g_free (f->minbytes);
  g_free (f->maxbytes);
  g_free (f->ranks);
  g_free (f->fidelity);
  g_free (f->bin);
  g_free (f->channels);
  g_free (f->chunks);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (RunFlags, run_flags_clear)

static void
add_flag (GPtrArray *args, const char *name, const char *value)
{
  if (value == NULL)
    return;
  g_ptr_array_add (args, g_strdup (name));
  g_ptr_array_add (args, g_strdup (value));
}

static void
add_int_flag (GPtrArray *args, const char *name, gint64 value)
{
  if (value == G_MININT64)
    return;
  g_ptr_array_add (args, g_strdup (name));
  g_ptr_array_add (args, g_strdup_printf ("%" G_GINT64_FORMAT, value));
}

/* The run options as arguments, in a fixed order. */
static GPtrArray *
run_flags (const RunFlags *f)
{
  GPtrArray *args = g_ptr_array_new_with_free_func (g_free);

  add_flag (args, "--op", f->op);
  add_flag (args, "--algorithm", f->algorithm);
  add_flag (args, "--protocol", f->protocol);
  add_flag (args, "--minbytes", f->minbytes);
  add_flag (args, "--maxbytes", f->maxbytes);
  add_int_flag (args, "--stepfactor", f->stepfactor);
  add_flag (args, "--ranks", f->ranks);
  add_flag (args, "--fidelity", f->fidelity);
  add_flag (args, "--channels", f->channels);
  add_flag (args, "--chunks", f->chunks);
  add_int_flag (args, "--seed", f->seed);
  add_flag (args, "--bin", f->bin);
  return args;
}

static gboolean
start_point (const char *self, const char *scenario, const GArray *grids,
             const GPtrArray *flags, const char *sweep_id, Point *p,
             GError **error)
{
  g_autoptr (GPtrArray) argv = g_ptr_array_new_with_free_func (g_free);

  g_ptr_array_add (argv, g_strdup (self));
  g_ptr_array_add (argv, g_strdup ("run"));
  g_ptr_array_add (argv, g_strdup (scenario));
  for (guint g = 0; g < grids->len; g++)
    {
      g_ptr_array_add (argv, g_strdup ("--set"));
      g_ptr_array_add (argv, g_strdup_printf (
                                 "%s=%s", g_array_index (grids, Grid, g).key,
                                 p->values[g]));
    }
  for (guint i = 0; i < flags->len; i++)
    g_ptr_array_add (argv, g_strdup (g_ptr_array_index (flags, i)));
  /* The run records its own parameters, so that a shard left behind by a
   * sweep that was stopped still says which point it is. */
  for (guint g = 0; g < grids->len; g++)
    {
      g_ptr_array_add (argv, g_strdup ("--param"));
      g_ptr_array_add (argv, g_strdup_printf (
                                 "%s=%s", g_array_index (grids, Grid, g).key,
                                 p->values[g]));
    }
  g_ptr_array_add (argv, g_strdup ("--param"));
  g_ptr_array_add (argv, g_strdup_printf ("%s=%s", SWEEP_KEY, sweep_id));
  /* The sweep runs points side by side: each on one core. */
  g_ptr_array_add (argv, g_strdup ("--jobs"));
  g_ptr_array_add (argv, g_strdup ("1"));
  g_ptr_array_add (argv, g_strdup ("--db"));
  g_ptr_array_add (argv, g_strdup (p->shard));
  g_ptr_array_add (argv, NULL);

  int out = open ("/dev/null", O_WRONLY);
  int err = open (p->err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  gboolean ok = err >= 0 && out >= 0
                && g_spawn_async_with_fds (NULL, (char **) argv->pdata, NULL,
                                           G_SPAWN_DO_NOT_REAP_CHILD, NULL,
                                           NULL, &p->pid, -1, out, err, error);
  if (err < 0 || out < 0)
    g_set_error (error, G_SPAWN_ERROR, 0, "%s: %s", p->err, g_strerror (errno));
  if (out >= 0)
    close (out);
  if (err >= 0)
    close (err);
  return ok;
}

/* Bring a finished point's shard into the database, with its parameters;
 * a point that failed is recorded as failed with its message. */
static gboolean
finish_point (WeftDb *db, const char *scenario, const GArray *grids,
              const char *sweep_id, Point *p, int wait_status, GError **error)
{
  g_autoptr (GArray) runs = g_array_new (FALSE, FALSE, sizeof (int64_t));
  g_autofree char *message = NULL;
  gboolean ok = TRUE;

  g_file_get_contents (p->err, &message, NULL, NULL);
  if (message)
    g_strstrip (message);
  if (WIFSIGNALED (wait_status))
    {
      g_free (message);
      message = g_strdup_printf ("the worker was killed by signal %d",
                                 WTERMSIG (wait_status));
    }
  if (g_file_test (p->shard, G_FILE_TEST_EXISTS))
    ok = weft_db_merge (db, p->shard, runs, error);
  if (!ok)
    return FALSE;
  gboolean good = WIFEXITED (wait_status) && WEXITSTATUS (wait_status) == 0;
  if (runs->len > 0)
    p->run = g_array_index (runs, int64_t, runs->len - 1);
  else
    {
      WeftRunInfo info = { scenario, "", "", 0, "weft sweep" };
      p->run = weft_db_record_failed (db, &info,
                                      message && *message ? message
                                                          : "the point failed",
                                      error);
      if (p->run == 0)
        return FALSE;
    }
  if (!good && runs->len > 0
      && !weft_db_fail_run (db, p->run,
                            message && *message ? message : "the point failed",
                            error))
    return FALSE;
  g_autofree const char **keys = NULL;
  g_autofree const char **values = NULL;
  guint n = point_params (grids, p, sweep_id, &keys, &values);
  ok = weft_db_set_params (db, p->run, keys, values, n, error);
  g_remove (p->shard);
  g_remove (p->err);
  return ok;
}

static void
print_summary (WeftDb *db, const GArray *grids, const char *sweep_id,
               Point *points, guint n)
{
  guint k = grids->len + 1;
  g_autofree const char **keys = g_new (const char *, k);
  g_autofree const char **values = g_new (const char *, k);

  /* Each point's run, wherever (and by whichever rank) it ran. */
  for (guint g = 0; g < grids->len; g++)
    keys[g] = g_array_index (grids, Grid, g).key;
  keys[grids->len] = SWEEP_KEY;
  values[grids->len] = sweep_id;
  for (guint i = 0; i < n; i++)
    {
      for (guint g = 0; g < grids->len; g++)
        values[g] = points[i].values[g];
      points[i].run = weft_db_find_run (db, keys, values, k, FALSE);
    }

  printf ("#");
  for (guint g = 0; g < grids->len; g++)
    printf (" %14s", g_array_index (grids, Grid, g).key);
  printf (" %5s %10s %12s %10s  %s\n", "run", "size", "time(us)",
          "busbw", "busiest link (mean, peak utilization)");
  for (guint i = 0; i < n; i++)
    {
      Point *p = &points[i];
      WeftRunSummary sum;
      printf (" ");
      for (guint g = 0; g < grids->len; g++)
        printf (" %14s", p->values[g]);
      if (!weft_results_summary (db, p->run, &sum, NULL))
        {
          printf (" %5" G_GINT64_FORMAT "  missing\n", p->run);
          continue;
        }
      if (sum.has_op)
        {
          printf (" %5" G_GINT64_FORMAT " %10" G_GUINT64_FORMAT
                  " %12.2f %10.2f", p->run, sum.bytes, sum.time_us,
                  sum.busbw);
          if (sum.busiest)
            printf ("  %s (%.1f%%, %.1f%%)", sum.busiest,
                    100 * sum.mean_util, 100 * sum.peak_util);
          printf ("\n");
        }
      else
        printf (" %5" G_GINT64_FORMAT "  %s: %s\n", p->run, sum.status,
                sum.message);
      weft_run_summary_clear (&sum);
    }
}

int
weft_cmd_sweep (int argc, char **argv)
{
  g_auto (GStrv) grid_specs = NULL;
  g_autofree char *db_path = NULL;
  gint64 jobs = 0;
  g_auto (RunFlags) f = { .stepfactor = G_MININT64, .seed = G_MININT64 };
  GOptionEntry entries[] = {
    { "grid", 'g', 0, G_OPTION_ARG_STRING_ARRAY, &grid_specs,
      "A value to vary and its values, KEY=V1,V2,... (a --set key); may be "
      "repeated, and the points are every combination (required)", "GRID" },
    { "jobs", 'j', 0, G_OPTION_ARG_INT64, &jobs,
      "Points to run at once (default: the number of cores)", "N" },
    { "db", 0, 0, G_OPTION_ARG_FILENAME, &db_path,
      "The database every point is added to (default: weft.db)", "FILE" },
    { "op", 'o', 0, G_OPTION_ARG_STRING, &f.op, "As weft run (default: "
      "all_reduce)", "OP" },
    { "algorithm", 'a', 0, G_OPTION_ARG_STRING, &f.algorithm,
      "As weft run (default: auto)", "ALG" },
    { "protocol", 'p', 0, G_OPTION_ARG_STRING, &f.protocol,
      "As weft run (default: auto)", "PROTO" },
    { "minbytes", 'b', 0, G_OPTION_ARG_STRING, &f.minbytes,
      "As weft run (default: 8)", "SIZE" },
    { "maxbytes", 'e', 0, G_OPTION_ARG_STRING, &f.maxbytes,
      "As weft run (default: 8G)", "SIZE" },
    { "stepfactor", 'f', 0, G_OPTION_ARG_INT64, &f.stepfactor,
      "As weft run (default: 2)", "F" },
    { "ranks", 0, 0, G_OPTION_ARG_STRING, &f.ranks,
      "As weft run (default: every GPU)", "SELECTOR" },
    { "fidelity", 0, 0, G_OPTION_ARG_STRING, &f.fidelity,
      "As weft run (default: flow)", "F" },
    { "channels", 0, 0, G_OPTION_ARG_STRING, &f.channels,
      "As weft run: auto or 1 to 64 (default: auto)", "N" },
    { "chunks", 0, 0, G_OPTION_ARG_STRING, &f.chunks,
      "As weft run: auto or 1 to 1024 (default: auto)", "N" },
    { "seed", 0, 0, G_OPTION_ARG_INT64, &f.seed, "As weft run (default: 1)",
      "N" },
    { "bin", 0, 0, G_OPTION_ARG_STRING, &f.bin,
      "As weft run (default: a thousandth of the run, wider on large fabrics)", "WIDTH" },
    G_OPTION_ENTRY_NULL
  };
  g_autoptr (GOptionContext) context = g_option_context_new ("SCENARIO");
  g_autoptr (GError) error = NULL;

  g_option_context_set_summary (
      context,
      "Run a design-space sweep: every combination of the --grid values is a\n"
      "point, run as `weft run SCENARIO --set KEY=VALUE ...` by worker\n"
      "processes and added to one database with its parameters.  Points\n"
      "already complete in the database are skipped, so a sweep that was\n"
      "stopped is resumed by running it again.");
  g_option_context_add_main_entries (context, entries, NULL);
  if (!weft_cli_parse (context, "sweep", &argc, &argv))
    return WEFT_EXIT_USAGE;
  if (argc != 2)
    {
      weft_cli_usage_error ("sweep", "expected one scenario");
      return WEFT_EXIT_USAGE;
    }
  if (grid_specs == NULL)
    {
      /* No --grid: the scenario's sweep section, {grid: {KEY: [V1, ...]}}. */
      g_autoptr (WeftCfg) root = weft_cfg_load_file (argv[1], &error);
      WeftCfg *section = root ? weft_cfg_get (root, "sweep") : NULL;
      WeftCfg *grid = section ? weft_cfg_get (section, "grid") : NULL;
      static const char *const keys[] = { "grid", "description", NULL };
      if (root == NULL)
        {
          fprintf (stderr, "%s\n", error->message);
          return WEFT_EXIT_USAGE;
        }
      if (section == NULL)
        {
          weft_cli_usage_error ("sweep", "give at least one --grid "
                                "KEY=V1,V2,..., or a sweep: section in the "
                                "scenario");
          return WEFT_EXIT_USAGE;
        }
      if (!weft_cfg_expect_map (section, "sweep", &error)
          || !weft_cfg_check_keys (section, keys, &error)
          || !(grid = weft_cfg_require (section, "grid", &error))
          || !weft_cfg_expect_map (grid, "grid (key: list of values)", &error))
        {
          fprintf (stderr, "%s\n", error->message);
          return WEFT_EXIT_USAGE;
        }
      g_autoptr (GPtrArray) specs = g_ptr_array_new_with_free_func (g_free);
      for (size_t i = 0; i < grid->n; i++)
        {
          WeftCfg *list = grid->items[i];
          if (!weft_cfg_expect_seq (list, "a list of values", &error))
            {
              fprintf (stderr, "%s\n", error->message);
              return WEFT_EXIT_USAGE;
            }
          GString *spec = g_string_new (grid->keys[i]->text);
          for (size_t k = 0; k < list->n; k++)
            {
              if (!weft_cfg_expect_scalar (list->items[k], "a value", &error))
                {
                  g_string_free (spec, TRUE);
                  fprintf (stderr, "%s\n", error->message);
                  return WEFT_EXIT_USAGE;
                }
              g_string_append_printf (spec, "%c%s", k ? ',' : '=',
                                      list->items[k]->text);
            }
          if (list->n == 0)
            {
              g_string_free (spec, TRUE);
              weft_cfg_error (&error, list, "a grid needs at least one value");
              fprintf (stderr, "%s\n", error->message);
              return WEFT_EXIT_USAGE;
            }
          g_ptr_array_add (specs, g_string_free (spec, FALSE));
        }
      g_ptr_array_add (specs, NULL);
      grid_specs = g_strdupv ((char **) specs->pdata);
    }
  if (jobs < 0 || jobs > 1024)
    {
      weft_cli_usage_error ("sweep", "-j takes 1 to 1024");
      return WEFT_EXIT_USAGE;
    }
  if (jobs == 0)
    jobs = MAX (g_get_num_processors (), 1);

  g_autoptr (GArray) grids = g_array_new (FALSE, FALSE, sizeof (Grid));
  g_array_set_clear_func (grids, (GDestroyNotify) grid_clear);
  guint total = 1;
  for (int i = 0; grid_specs[i]; i++)
    {
      const char *eq = strchr (grid_specs[i], '=');
      if (eq == NULL || eq == grid_specs[i] || eq[1] == '\0')
        {
          g_autofree char *m = g_strdup_printf ("--grid %s: write "
                                                "KEY=V1,V2,...",
                                                grid_specs[i]);
          weft_cli_usage_error ("sweep", m);
          return WEFT_EXIT_USAGE;
        }
      Grid g = { g_strndup (grid_specs[i], eq - grid_specs[i]),
                 g_strsplit (eq + 1, ",", -1), 0 };
      g.n = g_strv_length (g.values);
      total *= g.n;
      g_array_append_val (grids, g);
    }

  const char *path = argv[1];
  if (!g_file_test (path, G_FILE_TEST_IS_REGULAR))
    {
      fprintf (stderr, "weft sweep: %s: no such scenario file\n", path);
      return WEFT_EXIT_USAGE;
    }
  const char *db_file = db_path ? db_path : "weft.db";
  int rank = 0, ranks = 1;
#ifdef WEFT_HAVE_MPI
  /* Under mpirun (or srun), the points are shared among the ranks. */
  gboolean mpi = g_getenv ("OMPI_COMM_WORLD_SIZE") || g_getenv ("PMI_SIZE")
                 || g_getenv ("PMIX_RANK");
  if (mpi)
    {
      MPI_Init (NULL, NULL);
      MPI_Comm_rank (MPI_COMM_WORLD, &rank);
      MPI_Comm_size (MPI_COMM_WORLD, &ranks);
    }
#endif
  g_autoptr (WeftDb) db = NULL;
  if (rank == 0)
    {
      db = weft_db_open (db_file, &error);
      if (db == NULL)
        {
          fprintf (stderr, "weft sweep: %s\n", error->message);
#ifdef WEFT_HAVE_MPI
          if (mpi)
            MPI_Abort (MPI_COMM_WORLD, WEFT_EXIT_USAGE);
#endif
          return WEFT_EXIT_USAGE;
        }
    }

  /* Shards that a stopped sweep left next to the database hold finished
   * points (with their parameters): take them in first. */
  if (rank == 0)
  {
    g_autofree char *dir = g_path_get_dirname (db_file);
    g_autofree char *base = g_path_get_basename (db_file);
    g_autofree char *prefix = g_strdup_printf ("%s.shard-", base);
    GDir *d = g_dir_open (dir, 0, NULL);
    const char *name;
    while (d && (name = g_dir_read_name (d)))
      {
        g_autofree char *full = g_build_filename (dir, name, NULL);
        if (g_str_has_prefix (name, prefix) && g_str_has_suffix (name, ".err"))
          g_remove (full);
        else if (g_str_has_prefix (name, prefix) && g_str_has_suffix (name, ".db"))
          {
            g_autoptr (GArray) merged = g_array_new (FALSE, FALSE,
                                                     sizeof (int64_t));
            if (weft_db_merge (db, full, merged, &error))
              g_remove (full);
            else
              {
                fprintf (stderr, "weft sweep: %s\n", error->message);
                g_clear_error (&error);
              }
          }
      }
    if (d)
      g_dir_close (d);
  }

  /* What the points share, so that a resumed sweep finds its own. */
  g_autoptr (GPtrArray) flags = run_flags (&f);
  g_ptr_array_add (flags, NULL);
  g_autofree char *joined = g_strjoinv (" ", (char **) flags->pdata);
  g_ptr_array_remove_index (flags, flags->len - 1);
  g_autofree char *sweep_id = g_strdup_printf ("%s %s", path, joined);

#ifdef WEFT_HAVE_MPI
  if (mpi)
    MPI_Barrier (MPI_COMM_WORLD);
#endif
  /* Every rank sees the database as rank 0 left it; each writes its points
   * to a shard of its own, which rank 0 takes in at the end. */
  if (db == NULL)
    {
      db = weft_db_open (db_file, &error);
      if (db == NULL)
        {
          fprintf (stderr, "weft sweep: rank %d: %s\n", rank, error->message);
#ifdef WEFT_HAVE_MPI
          MPI_Abort (MPI_COMM_WORLD, WEFT_EXIT_FAILURE);
#endif
          return WEFT_EXIT_FAILURE;
        }
    }
  g_autofree char *rank_shard = g_strdup_printf ("%s.shard-rank%d.db", db_file,
                                                 rank);
  g_autoptr (WeftDb) own = NULL;
  if (ranks > 1)
    {
      own = weft_db_open (rank_shard, &error);
      if (own == NULL)
        {
          fprintf (stderr, "weft sweep: rank %d: %s\n", rank, error->message);
#ifdef WEFT_HAVE_MPI
          MPI_Abort (MPI_COMM_WORLD, WEFT_EXIT_FAILURE);
#endif
          return WEFT_EXIT_FAILURE;
        }
    }
  WeftDb *target = own ? own : db;

  /* The points, first grid slowest. */
  Point *points = g_new0 (Point, total);
  for (guint i = 0; i < total; i++)
    {
      guint rest = i;
      points[i].values = g_new0 (char *, grids->len + 1);
      for (guint g = grids->len; g-- > 0;)
        {
          const Grid *gr = &g_array_index (grids, Grid, g);
          points[i].values[g] = g_strdup (gr->values[rest % gr->n]);
          rest /= gr->n;
        }
      points[i].shard = g_strdup_printf ("%s.shard-%d-%d-%u.db", db_file,
                                         rank, (int) getpid (), i);
      points[i].err = g_strdup_printf ("%s.err", points[i].shard);
    }

  g_autofree char *self = g_file_read_link ("/proc/self/exe", NULL);
  guint next = 0, running = 0, skipped = 0, failed = 0;
  int status = WEFT_EXIT_OK;
  for (;;)
    {
      /* Start points while there is room. */
      while (running < jobs && next < total)
        {
          Point *p = &points[next++];
          if ((next - 1) % (guint) ranks != (guint) rank)
            continue;           /* another rank's */
          g_autofree const char **keys = NULL;
          g_autofree const char **values = NULL;
          guint n = point_params (grids, p, sweep_id, &keys, &values);
          p->run = weft_db_find_point (db, keys, values, n);
          if (p->run > 0)
            {
              skipped++;
              continue;
            }
          if (!start_point (self ? self : "weft", path, grids, flags, sweep_id,
                            p, &error))
            {
              fprintf (stderr, "weft sweep: %s\n", error->message);
              status = WEFT_EXIT_FAILURE;
              break;
            }
          running++;
        }
      if (running == 0)
        break;
      int wait_status;
      GPid pid = waitpid (-1, &wait_status, 0);
      if (pid < 0)
        break;
      for (guint i = 0; i < next; i++)
        if (points[i].pid == pid)
          {
            running--;
            points[i].pid = 0;
            if (!WIFEXITED (wait_status) || WEXITSTATUS (wait_status) != 0)
              failed++;
            if (!finish_point (target, path, grids, sweep_id, &points[i],
                               wait_status, &error))
              {
                fprintf (stderr, "weft sweep: %s\n", error->message);
                g_clear_error (&error);
                status = WEFT_EXIT_FAILURE;
              }
            if (isatty (STDERR_FILENO))
              fprintf (stderr, "\rweft sweep: %u of %u points done",
                       next - running, total);
          }
    }
  if (isatty (STDERR_FILENO))
    fprintf (stderr, "\r%60s\r", "");
  guint counts[2] = { skipped, failed };
#ifdef WEFT_HAVE_MPI
  if (mpi)
    {
      /* Rank 0 takes every rank's shard in, then reports. */
      g_clear_pointer (&own, weft_db_close);
      guint sum[2];
      MPI_Reduce (counts, sum, 2, MPI_UNSIGNED, MPI_SUM, 0, MPI_COMM_WORLD);
      memcpy (counts, sum, sizeof sum);
      MPI_Barrier (MPI_COMM_WORLD);
      for (int r = 0; rank == 0 && r < ranks && ranks > 1; r++)
        {
          g_autofree char *shard = g_strdup_printf ("%s.shard-rank%d.db",
                                                    db_file, r);
          g_autoptr (GArray) merged = g_array_new (FALSE, FALSE,
                                                   sizeof (int64_t));
          if (weft_db_merge (db, shard, merged, &error))
            g_remove (shard);
          else
            {
              fprintf (stderr, "weft sweep: %s\n", error->message);
              g_clear_error (&error);
              status = WEFT_EXIT_FAILURE;
            }
        }
      MPI_Finalize ();
    }
#endif
  if (rank == 0)
    {
      if (!weft_db_index (db, &error))
        {
          fprintf (stderr, "weft sweep: %s\n", error->message);
          g_clear_error (&error);
        }
      print_summary (db, grids, sweep_id, points, total);
      printf ("# %u points: %u run, %u already complete, %u failed\n", total,
              total - counts[0], counts[0], counts[1]);
    }
  for (guint i = 0; i < total; i++)
    {
      g_strfreev (points[i].values);
      g_free (points[i].shard);
      g_free (points[i].err);
    }
  g_free (points);
  return status;
}
