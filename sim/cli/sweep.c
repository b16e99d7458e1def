/* weft: the `weft sweep` command: the cartesian product of --grid values,
 * each point a `weft run` with those --set overrides, run by worker
 * processes that write a database shard each; the shards are merged into
 * the one database, with each point's parameters in run_params. */
#include "cli.h"
#include "sweep_options.h"
#include "files.h"
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

/* Signals that stop the sweep: its workers are told to stop, what they
 * finished is taken in, and the sweep ends with status 130.  The one
 * global of the command, as a signal handler has nowhere else to write. */
static volatile int stopped;

static void
on_signal (int sig)
{
  (void) sig;
  stopped = 1;
}

typedef struct {
  char **values;                /* one per grid */
  int64_t run;                  /* in the database, once done */
  GPid pid;                     /* while running */
  char *shard, *err;            /* its database shard and stderr file */
} Point;

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
      (*keys)[g] = g_array_index (grids, WeftGrid, g).key;
      (*values)[g] = p->values[g];
    }
  (*keys)[grids->len] = SWEEP_KEY;
  (*values)[grids->len] = sweep_id;
  return n;
}

/* The arguments of a `weft run` of @scenario at the point @values (one a
 * grid) with @flags: each grid's value as --set KEY=VALUE, or --KEY VALUE
 * for an option of weft run. */
static GPtrArray *
point_argv (const char *self, const char *scenario, const GArray *grids,
            const GPtrArray *flags, char *const *values)
{
  GPtrArray *argv = g_ptr_array_new_with_free_func (g_free);

  g_ptr_array_add (argv, g_strdup (self));
  g_ptr_array_add (argv, g_strdup ("run"));
  g_ptr_array_add (argv, g_strdup (scenario));
  for (guint g = 0; g < grids->len; g++)
    {
      const char *key = g_array_index (grids, WeftGrid, g).key;
      if (weft_sweep_is_run_key (key))
        {
          g_ptr_array_add (argv, g_strdup_printf ("--%s", key));
          g_ptr_array_add (argv, g_strdup (values[g]));
        }
      else
        {
          g_ptr_array_add (argv, g_strdup ("--set"));
          g_ptr_array_add (argv, g_strdup_printf ("%s=%s", key, values[g]));
        }
    }
  for (guint i = 0; i < flags->len; i++)
    g_ptr_array_add (argv, g_strdup (g_ptr_array_index (flags, i)));
  return argv;
}

#ifdef __linux__
#include <sys/prctl.h>
#endif

/* In a worker, before it runs: it is stopped (SIGTERM, its run marked
 * interrupted) if the sweep ends first, however the sweep ended. */
static void
stop_with_parent (gpointer data)
{
  (void) data;
#ifdef __linux__
  prctl (PR_SET_PDEATHSIG, SIGTERM);
#endif
}

/* Start point @p's worker, a `weft run` of the scenario with the point's
 * values and @flags, one core, and its own shard and stderr file.  FALSE
 * with @error if it cannot be started. */
static gboolean
start_point (const char *self, const char *scenario, const GArray *grids,
             const GPtrArray *flags, const char *sweep_id, Point *p,
             GError **error)
{
  g_autoptr (GPtrArray) argv = point_argv (self, scenario, grids, flags,
                                           p->values);

  /* The run records its own parameters, so that a shard left behind by a
   * sweep that was stopped still says which point it is. */
  for (guint g = 0; g < grids->len; g++)
    {
      g_ptr_array_add (argv, g_strdup ("--param"));
      g_ptr_array_add (argv, g_strdup_printf (
                                 "%s=%s", g_array_index (grids, WeftGrid, g).key,
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
                                           G_SPAWN_DO_NOT_REAP_CHILD,
                                           stop_with_parent, NULL, &p->pid,
                                           -1, out, err, error);
  if (err < 0 || out < 0)
    g_set_error (error, G_SPAWN_ERROR, G_SPAWN_ERROR_FAILED, "%s: %s", p->err, g_strerror (errno));
  if (out >= 0)
    close (out);
  if (err >= 0)
    close (err);
  return ok;
}

/* `weft run --check` at the point @values: TRUE if the point can run; if
 * not, weft run's message (less its pointer to its help) in @message. */
static gboolean
check_point (const char *self, const char *scenario, const GArray *grids,
             const GPtrArray *flags, char *const *values, char **message)
{
  g_autoptr (GPtrArray) argv = point_argv (self, scenario, grids, flags,
                                           values);
  g_autofree char *err = NULL;
  g_autoptr (GError) error = NULL;
  int status;

  g_ptr_array_add (argv, g_strdup ("--check"));
  g_ptr_array_add (argv, NULL);
  if (!g_spawn_sync (NULL, (char **) argv->pdata, NULL,
                     G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL, &err,
                     &status, &error))
    {
      *message = g_strdup_printf ("%s\n", error->message);
      return FALSE;
    }
  if (g_spawn_check_wait_status (status, NULL))
    return TRUE;
  char *help = err ? strstr (err, "'weft run --help'") : NULL;
  if (help)
    *help = '\0';
  *message = g_strdup (err ? g_strchug (err) : "failed\n");
  return FALSE;
}

/* Check every value of every grid before any point runs, by `weft run
 * --check`: a misspelt key or a bad value stops the sweep at once, with
 * weft run's own message, instead of failing every point.  A value is
 * tried with the other grids at their first values and, if it cannot
 * run so, with each other value of one other grid at a time: one that
 * runs with none of them is refused.  A combination that cannot run is
 * left to its point.  Returns WEFT_EXIT_OK, or WEFT_EXIT_USAGE once it
 * has said what is wrong. */
static int
check_grids (const char *self, const char *scenario, const GArray *grids,
             const GPtrArray *flags)
{
  g_autofree char **values = g_new0 (char *, grids->len + 1);

  for (guint g = 0; g < grids->len; g++)
    values[g] = g_array_index (grids, WeftGrid, g).values[0];
  for (guint g = 0; g < grids->len; g++)
    {
      const WeftGrid *grid = &g_array_index (grids, WeftGrid, g);
      for (guint v = 0; v < grid->n; v++)
        {
          g_autofree char *first = NULL;
          values[g] = grid->values[v];
          gboolean ok = check_point (self, scenario, grids, flags, values,
                                     &first);
          for (guint h = 0; !ok && h < grids->len; h++)
            {
              const WeftGrid *other = &g_array_index (grids, WeftGrid, h);
              if (h == g)
                continue;
              for (guint w = 1; !ok && w < other->n; w++)
                {
                  g_autofree char *again = NULL;
                  values[h] = other->values[w];
                  ok = check_point (self, scenario, grids, flags, values,
                                    &again);
                }
              values[h] = other->values[0];
            }
          if (!ok)
            {
              fprintf (stderr, "weft sweep: --grid %s=%s: %s", grid->key,
                       grid->values[v], first);
              return WEFT_EXIT_USAGE;
            }
        }
      values[g] = grid->values[0];
    }
  return WEFT_EXIT_OK;
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
  /* weft run's message, less its pointer to its help: one line in the
   * table and in the run's row. */
  char *help = message ? strstr (message, "'weft run --help'") : NULL;
  if (help)
    *help = '\0';
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
  /* A worker that was stopped (130) has marked its run interrupted. */
  gboolean good = WIFEXITED (wait_status) && (WEXITSTATUS (wait_status) == 0
                                              || WEXITSTATUS (wait_status)
                                                     == 130);
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

/* The table of the points: each one's run (found by its parameters,
 * wherever and by whichever rank it ran), size, time, bus bandwidth and
 * busiest link, or why it failed. */
static void
print_summary (WeftDb *db, const GArray *grids, const char *sweep_id,
               Point *points, guint n)
{
  guint k = grids->len + 1;
  g_autofree const char **keys = g_new (const char *, k);
  g_autofree const char **values = g_new (const char *, k);

  /* Each point's run, wherever (and by whichever rank) it ran. */
  for (guint g = 0; g < grids->len; g++)
    keys[g] = g_array_index (grids, WeftGrid, g).key;
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
    printf (" %14s", g_array_index (grids, WeftGrid, g).key);
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
          printf ("     -  not run\n");
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

/* The sweep under way: where its points are recorded, which of them
 * this process runs, and how they went. */
typedef struct {
  gboolean mpi;                 /* under mpirun or srun */
  int rank, ranks;              /* this process's rank, of ranks */
  WeftDb *db;                   /* the database, as rank 0 left it */
  WeftDb *own;                  /* with several ranks: this rank's shard,
                                   which rank 0 takes in at the end */
  GPtrArray *flags;             /* weft run's options for every point */
  char *sweep_id;               /* what the points share, so that a resumed
                                   sweep finds its own */
  Point *points;                /* every combination, first grid slowest */
  guint n_points;
  guint started;                /* this rank's points run */
  guint skipped, failed;        /* this rank's points already complete, and
                                   those that failed */
} Sweep;

static void
sweep_clear (Sweep *sw)
{
  for (guint i = 0; i < sw->n_points; i++)
    {
      g_strfreev (sw->points[i].values);
      g_free (sw->points[i].shard);
      g_free (sw->points[i].err);
    }
  g_clear_pointer (&sw->points, g_free);
  g_clear_pointer (&sw->own, weft_db_close);
  g_clear_pointer (&sw->db, weft_db_close);
  g_clear_pointer (&sw->flags, g_ptr_array_unref);
  g_clear_pointer (&sw->sweep_id, g_free);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (Sweep, sweep_clear)

/* Under mpirun (or srun), the points are shared among the ranks. */
static void
start_mpi (Sweep *sw)
{
  sw->rank = 0;
  sw->ranks = 1;
#ifdef WEFT_HAVE_MPI
  sw->mpi = g_getenv ("OMPI_COMM_WORLD_SIZE") || g_getenv ("PMI_SIZE")
            || g_getenv ("PMIX_RANK");
  if (sw->mpi)
    {
      MPI_Init (NULL, NULL);
      MPI_Comm_rank (MPI_COMM_WORLD, &sw->rank);
      MPI_Comm_size (MPI_COMM_WORLD, &sw->ranks);
    }
#endif
}

/* Every rank waits here for the others (under MPI). */
static void
wait_for_ranks (const Sweep *sw)
{
#ifdef WEFT_HAVE_MPI
  if (sw->mpi)
    MPI_Barrier (MPI_COMM_WORLD);
#else
  (void) sw;
#endif
}

/* A rank that cannot go on stops the others too (under MPI), with
 * @status. */
static void
abort_ranks (const Sweep *sw, int status)
{
#ifdef WEFT_HAVE_MPI
  if (sw->mpi)
    MPI_Abort (MPI_COMM_WORLD, status);
#else
  (void) sw;
  (void) status;
#endif
}

/* Shards that a stopped sweep left next to the database hold finished
 * points (with their parameters): take them in first.  One that cannot
 * be is reported and left where it is. */
static void
take_in_shards (WeftDb *db, const char *db_file)
{
  g_autofree char *dir = g_path_get_dirname (db_file);
  g_autofree char *base = g_path_get_basename (db_file);
  g_autofree char *prefix = g_strdup_printf ("%s.shard-", base);
  GDir *d = g_dir_open (dir, 0, NULL);
  const char *name;

  while (d && (name = g_dir_read_name (d)))
    {
      g_autofree char *full = g_build_filename (dir, name, NULL);
      g_autoptr (GError) error = NULL;
      if (!g_str_has_prefix (name, prefix))
        continue;
      if (g_str_has_suffix (name, ".err"))
        g_remove (full);
      else if (g_str_has_suffix (name, ".db"))
        {
          /* A worker that could not write its shard at all (a full disk)
           * leaves an empty file: it holds no run. */
          GStatBuf st;
          if (g_stat (full, &st) == 0 && st.st_size == 0)
            {
              g_remove (full);
              continue;
            }
          g_autoptr (GArray) merged = g_array_new (FALSE, FALSE,
                                                   sizeof (int64_t));
          if (weft_db_merge (db, full, merged, &error))
            g_remove (full);
          else
            fprintf (stderr, "weft sweep: %s\n", error->message);
        }
    }
  if (d)
    g_dir_close (d);
}

/* Rank 0 opens the database (an unwritable one is a usage error, found
 * before any point runs) and takes in what a stopped sweep left. */
static int
open_database (const WeftSweepArgs *opts, Sweep *sw)
{
  g_autoptr (GError) error = NULL;

  sw->db = weft_db_open (opts->db_file, &error);
  if (sw->db == NULL)
    {
      fprintf (stderr, "weft sweep: %s\n", error->message);
      abort_ranks (sw, WEFT_EXIT_USAGE);
      return WEFT_EXIT_USAGE;
    }
  take_in_shards (sw->db, opts->db_file);
  return WEFT_EXIT_OK;
}

/* Every other rank sees the database as rank 0 left it; with several,
 * each writes its points to a shard of its own, which rank 0 takes in at
 * the end. */
static int
open_rank_databases (const WeftSweepArgs *opts, Sweep *sw)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *shard = g_strdup_printf ("%s.shard-rank%d.db",
                                            opts->db_file, sw->rank);

  if (sw->db == NULL)
    sw->db = weft_db_open (opts->db_file, &error);
  if (sw->db != NULL && sw->ranks > 1)
    sw->own = weft_db_open (shard, &error);
  if (error == NULL)
    return WEFT_EXIT_OK;
  fprintf (stderr, "weft sweep: rank %d: %s\n", sw->rank, error->message);
  abort_ranks (sw, WEFT_EXIT_FAILURE);
  return WEFT_EXIT_FAILURE;
}

/* The points, first grid slowest, each with the shard and error file its
 * worker writes next to the database. */
static void
make_points (const WeftSweepArgs *opts, Sweep *sw)
{
  const GArray *grids = opts->grids;

  sw->n_points = opts->total;
  sw->points = g_new0 (Point, opts->total);
  for (guint i = 0; i < opts->total; i++)
    {
      Point *p = &sw->points[i];
      guint rest = i;
      p->values = g_new0 (char *, grids->len + 1);
      for (guint g = grids->len; g-- > 0;)
        {
          const WeftGrid *gr = &g_array_index (grids, WeftGrid, g);
          p->values[g] = g_strdup (gr->values[rest % gr->n]);
          rest /= gr->n;
        }
      p->shard = g_strdup_printf ("%s.shard-%d-%d-%u.db", opts->db_file,
                                  sw->rank, (int) getpid (), i);
      p->err = g_strdup_printf ("%s.err", p->shard);
    }
}

/* Plan the sweep into @sw (the caller's to clear): the ranks, the
 * databases, what the points share and the points.  Returns WEFT_EXIT_OK,
 * or the exit status once it has said why the sweep cannot start. */
static int
plan_sweep (const WeftSweepArgs *opts, Sweep *sw)
{
  int status;

  start_mpi (sw);
  if (sw->rank == 0 && (status = open_database (opts, sw)) != WEFT_EXIT_OK)
    return status;
  sw->flags = weft_sweep_run_flags (&opts->f);
  g_ptr_array_add (sw->flags, NULL);
  g_autofree char *joined = g_strjoinv (" ", (char **) sw->flags->pdata);
  g_ptr_array_remove_index (sw->flags, sw->flags->len - 1);
  sw->sweep_id = g_strdup_printf ("%s %s", opts->path, joined);
  if (sw->rank == 0)
    {
      g_autofree char *self = g_file_read_link ("/proc/self/exe", NULL);
      if ((status = check_grids (self ? self : "weft", opts->path,
                                 opts->grids, sw->flags)) != WEFT_EXIT_OK)
        {
          abort_ranks (sw, status);
          return status;
        }
    }
  wait_for_ranks (sw);
  if ((status = open_rank_databases (opts, sw)) != WEFT_EXIT_OK)
    return status;
  make_points (opts, sw);
  return WEFT_EXIT_OK;
}

/* Start this rank's next points while fewer than `jobs` run, skipping
 * those the database holds complete already.  FALSE if a point could not
 * be started (said on stderr); the sweep goes on without it. */
static gboolean
start_points (const WeftSweepArgs *opts, Sweep *sw, const char *self,
              guint *next, guint *running)
{
  g_autoptr (GError) error = NULL;

  while (*running < opts->jobs && *next < opts->total)
    {
      Point *p = &sw->points[(*next)++];
      if ((*next - 1) % (guint) sw->ranks != (guint) sw->rank)
        continue;               /* another rank's */
      g_autofree const char **keys = NULL;
      g_autofree const char **values = NULL;
      guint n = point_params (opts->grids, p, sw->sweep_id, &keys, &values);
      p->run = weft_db_find_point (sw->db, keys, values, n);
      if (p->run > 0)
        {
          sw->skipped++;
          continue;
        }
      if (!start_point (self, opts->path, opts->grids, sw->flags,
                        sw->sweep_id, p, &error))
        {
          fprintf (stderr, "weft sweep: %s\n", error->message);
          return FALSE;
        }
      (*running)++;
      sw->started++;
    }
  return TRUE;
}

/* The worker @pid ended with @wait_status: take its point's shard in.
 * FALSE if that failed (said on stderr). */
static gboolean
reap_point (const WeftSweepArgs *opts, Sweep *sw, GPid pid, int wait_status,
            guint next, guint *running)
{
  g_autoptr (GError) error = NULL;
  WeftDb *target = sw->own ? sw->own : sw->db;
  gboolean ok = TRUE;

  for (guint i = 0; i < next; i++)
    if (sw->points[i].pid == pid)
      {
        (*running)--;
        sw->points[i].pid = 0;
        if (!WIFEXITED (wait_status)
            || (WEXITSTATUS (wait_status) != 0
                && WEXITSTATUS (wait_status) != 130))
          sw->failed++;
        if (!finish_point (target, opts->path, opts->grids, sw->sweep_id,
                           &sw->points[i], wait_status, &error))
          {
            fprintf (stderr, "weft sweep: %s\n", error->message);
            g_clear_error (&error);
            ok = FALSE;
          }
        if (isatty (STDERR_FILENO))
          fprintf (stderr, "\rweft sweep: %u of %u points done",
                   next - *running, opts->total);
      }
  return ok;
}

/* Run this rank's points, `jobs` at once, each a `weft run` process of
 * its own, taking each one in as it ends.  Returns WEFT_EXIT_OK, or
 * WEFT_EXIT_FAILURE if a point could not be started or taken in (the
 * others still run). */
static int
run_points (const WeftSweepArgs *opts, Sweep *sw)
{
  g_autofree char *self = g_file_read_link ("/proc/self/exe", NULL);
  guint next = 0, running = 0;
  int status = WEFT_EXIT_OK;
  gboolean told = FALSE;
  struct sigaction sa;

  memset (&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  /* System calls go on (SQLite takes an fdatasync cut short by a signal
   * for a disk error), so the wait for the workers looks at the flag
   * every few milliseconds instead of being woken by the signal. */
  sa.sa_flags = SA_RESTART;
  sigemptyset (&sa.sa_mask);
  sigaction (SIGINT, &sa, NULL);
  sigaction (SIGTERM, &sa, NULL);
  for (;;)
    {
      if (!stopped
          && !start_points (opts, sw, self ? self : "weft", &next, &running))
        status = WEFT_EXIT_FAILURE;
      if (stopped && !told)
        {
          /* The workers mark their runs interrupted and end. */
          for (guint i = 0; i < next; i++)
            if (sw->points[i].pid > 0)
              kill (sw->points[i].pid, SIGTERM);
          told = TRUE;
        }
      if (running == 0)
        break;
      int wait_status;
      GPid pid = waitpid (-1, &wait_status, WNOHANG);
      if (pid == 0 || (pid < 0 && errno == EINTR))
        {
          g_usleep (10 * 1000);
          continue;
        }
      if (pid < 0)
        break;
      if (!reap_point (opts, sw, pid, wait_status, next, &running))
        status = WEFT_EXIT_FAILURE;
    }
  if (isatty (STDERR_FILENO))
    fprintf (stderr, "\r%60s\r", "");
  return status;
}

#ifdef WEFT_HAVE_MPI
/* Rank 0 takes every rank's shard in, and the counts of every rank into
 * @counts; the ranks end MPI.  FALSE if a shard could not be taken in
 * (said on stderr). */
static gboolean
gather_ranks (const WeftSweepArgs *opts, Sweep *sw, guint counts[3])
{
  gboolean ok = TRUE;
  guint sum[3];

  g_clear_pointer (&sw->own, weft_db_close);
  MPI_Reduce (counts, sum, 3, MPI_UNSIGNED, MPI_SUM, 0, MPI_COMM_WORLD);
  memcpy (counts, sum, sizeof sum);
  MPI_Barrier (MPI_COMM_WORLD);
  for (int r = 0; sw->rank == 0 && r < sw->ranks && sw->ranks > 1; r++)
    {
      g_autoptr (GError) error = NULL;
      g_autofree char *shard = g_strdup_printf ("%s.shard-rank%d.db",
                                                opts->db_file, r);
      g_autoptr (GArray) merged = g_array_new (FALSE, FALSE,
                                               sizeof (int64_t));
      if (weft_db_merge (sw->db, shard, merged, &error))
        g_remove (shard);
      else
        {
          fprintf (stderr, "weft sweep: %s\n", error->message);
          ok = FALSE;
        }
    }
  MPI_Finalize ();
  return ok;
}
#endif

/* Bring the sweep's points together in the database and report them:
 * under MPI, rank 0 takes every rank's shard in; it then indexes the
 * database and prints each point's run and the totals.  Returns @status,
 * or WEFT_EXIT_FAILURE if a shard could not be taken in. */
static int
record (const WeftSweepArgs *opts, Sweep *sw, int status)
{
  guint counts[3] = { sw->skipped, sw->failed, sw->started };
  g_autoptr (GError) error = NULL;

#ifdef WEFT_HAVE_MPI
  if (sw->mpi && !gather_ranks (opts, sw, counts))
    status = WEFT_EXIT_FAILURE;
#endif
  if (sw->rank != 0)
    return status;
  if (!weft_db_index (sw->db, &error))
    fprintf (stderr, "weft sweep: %s\n", error->message);
  print_summary (sw->db, opts->grids, sw->sweep_id, sw->points, opts->total);
  guint left = opts->total - counts[0] - counts[2];
  printf ("# %u points: %u run, %u already complete, %u failed", opts->total,
          counts[2], counts[0], counts[1]);
  printf (left ? ", %u not run\n" : "\n", left);
  if (stopped)
    {
      fprintf (stderr, "weft sweep: interrupted; run it again to finish\n");
      return 130;
    }
  /* A point that failed fails the sweep, the others kept. */
  return counts[1] > 0 && status == WEFT_EXIT_OK ? WEFT_EXIT_FAILURE : status;
}

/* `weft sweep`: read the options, plan the points, run them and record
 * them.  Returns the exit status. */
int
weft_cmd_sweep (int argc, char **argv)
{
  g_auto (WeftSweepArgs) opts = { .f = { .stepfactor = G_MININT64,
                                        .seed = G_MININT64 } };
  g_auto (Sweep) sw = { 0 };
  int status;

  if ((status = weft_sweep_args_parse (argc, argv, &opts)) != WEFT_EXIT_OK
      || (status = plan_sweep (&opts, &sw)) != WEFT_EXIT_OK)
    return status;
  status = run_points (&opts, &sw);
  return record (&opts, &sw, status);
}
