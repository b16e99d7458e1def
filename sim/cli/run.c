/* weft: the `weft run` command: a sweep of collective sizes, printed as
 * nccl-tests prints it. */
#include "cli.h"
#include "collectives/collective_run.h"
#include "config.h"
#include "db.h"
#include "log.h"
#include "topology/names.h"
#include "topology/scenario.h"
#include "collectives/schedule_file.h"
#include "units.h"

#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_SCENARIO WEFT_SOURCE_DIR "/scenarios/dgx-h100.yaml"

/* Sizes as nccl-tests takes them: a number of bytes with an optional K, M
 * or G (powers of 1024), or any of weft's size units ("8GiB", "1MB"). */
static gboolean
parse_size (const char *text, uint64_t *bytes, GError **error)
{
  char *end;
  guint64 v;

  if (weft_parse_size (text, bytes, NULL))
    return TRUE;
  if (!g_ascii_isdigit (text[0]))
    goto bad;
  v = g_ascii_strtoull (text, &end, 10);
  int shift = 0;
  if (*end == 'K' || *end == 'k')
    shift = 10, end++;
  else if (*end == 'M' || *end == 'm')
    shift = 20, end++;
  else if (*end == 'G' || *end == 'g')
    shift = 30, end++;
  if (*end != '\0' || v > (G_MAXUINT64 >> shift))
    goto bad;
  *bytes = v << shift;
  return TRUE;

bad:
  g_set_error (error, WEFT_UNITS_ERROR, WEFT_UNITS_ERROR_UNIT,
               "'%s' is not a size: write bytes with K, M or G as nccl-tests "
               "does (8, 64K, 8G), or a unit (8B, 1MiB, 8GiB)",
               text);
  return FALSE;
}

/* The GPUs the run uses: all of them in declaration order, or those named
 * by @selector (a name pattern such as "node[0-3]/gpu[0-7]"). */
static GArray *
select_ranks (const WeftTopology *topo, const char *selector, GError **error)
{
  GArray *gpus = g_array_new (FALSE, FALSE, sizeof (uint32_t));

  if (selector == NULL)
    {
      for (uint32_t n = 0; n < topo->n_nodes; n++)
        if (topo->nodes[n].kind == WEFT_NODE_GPU)
          g_array_append_val (gpus, n);
      return gpus;
    }
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  if (!weft_names_expand (selector, names, error))
    {
      g_array_unref (gpus);
      return NULL;
    }
  for (guint i = 0; i < names->len; i++)
    {
      uint32_t id = weft_topology_find_node (topo, g_ptr_array_index (names, i));
      if (id != WEFT_NONE && topo->nodes[id].kind == WEFT_NODE_GPU)
        g_array_append_val (gpus, id);
    }
  if (gpus->len == 0)
    {
      g_set_error (error, WEFT_TOPOLOGY_ERROR, 0,
                   "rank selector '%s' matches no GPU of the scenario",
                   selector);
      g_array_unref (gpus);
      return NULL;
    }
  return gpus;
}

/* Set by SIGINT or SIGTERM: the run ends cleanly at the next check. */
static volatile int interrupted;

static void
on_signal (int sig)
{
  (void) sig;
  interrupted = 1;
}

static void
catch_signals (void)
{
  struct sigaction sa;

  memset (&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset (&sa.sa_mask);
  sigaction (SIGINT, &sa, NULL);
  sigaction (SIGTERM, &sa, NULL);
}

typedef struct {
  uint64_t size;
  int alg;                      /* WeftAlgorithm, or -1: the schedule file */
  int proto;
  WeftCollectiveResult result;  /* with its link bins and rank spans */
} Row;

static void
result_clear (WeftCollectiveResult *r)
{
  weft_link_stats_free (r->stats);
  g_free (r->spans);
  r->stats = NULL;
  r->spans = NULL;
}

static void
row_clear (Row *row)
{
  result_clear (&row->result);
}

/* The database gets at most about this many link_util rows from a run by
 * default: a large fabric gets wider bins, not a database of gigabytes. */
#define BIN_ROW_BUDGET 2000000
/* Bins start this wide, and double as the budget needs. */
#define FIRST_BIN_WIDTH ((WeftTime) 1000000)      /* 1 us */

/* The common bin width of @rows: a thousandth of the run at least, and
 * as wide as the widest any operation needed within its share of the
 * budget; a power of two times FIRST_BIN_WIDTH, as theirs are. */
static WeftTime
common_bin_width (const GArray *rows)
{
  WeftTime total = 0, need = 0, width = FIRST_BIN_WIDTH;

  for (guint i = 0; i < rows->len; i++)
    {
      const Row *row = &g_array_index (rows, Row, i);
      total += row->result.time;
      need = MAX (need, row->result.stats->bin_width);
    }
  need = MAX (need, total / 1000);
  while (width < need)
    width *= 2;
  return width;
}

/* A count of channels or chunks as written: auto (0) or 1 to @max. */
static gboolean
parse_count (const char *text, gint64 max, gint64 *count)
{
  char *rest = NULL;
  gint64 c = g_ascii_strtoll (text, &rest, 10);

  if (strcmp (text, "auto") == 0)
    c = 0;
  else if (rest == text || *rest != '\0' || c < 1 || c > max)
    return FALSE;
  *count = c;
  return TRUE;
}

/* Take the workload section's values for the options not given on the
 * command line, checking each where it is written. */
static gboolean
apply_workload (const WeftScenario *scenario, char **op, char **alg,
                char **proto, char **begin, char **end, char **ranks,
                char **fidelity, char **trace, gint64 *factor,
                gint64 *channels, gint64 *chunks, gint64 *seed,
                GError **error)
{
  static const char *const keys[] = {
    "op", "algorithm", "protocol", "minbytes", "maxbytes", "stepfactor",
    "ranks", "fidelity", "channels", "chunks", "seed", "trace",
    "description", NULL
  };
  WeftCfg *w = weft_cfg_get (scenario->root, "workload");
  WeftCfg *v;
  uint64_t bytes;
  WeftOp o;
  WeftAlgorithm a;
  WeftProtocolKind p;
  WeftFidelity f;

  if (w == NULL)
    return TRUE;
  if (!weft_cfg_expect_map (w, "workload", error)
      || !weft_cfg_check_keys (w, keys, error))
    return FALSE;
  if (*trace == NULL && (v = weft_cfg_get (w, "trace")))
    {
      /* A trace file, relative to the scenario. */
      if (!weft_cfg_expect_scalar (v, "trace", error))
        return FALSE;
      g_autofree char *dir = g_path_get_dirname (scenario->path);
      *trace = g_path_is_absolute (v->text)
                   ? g_strdup (v->text)
                   : g_build_filename (dir, v->text, NULL);
      if (!g_file_test (*trace, G_FILE_TEST_EXISTS))
        return weft_cfg_error (error, v, "no trace file '%s'", *trace);
    }
  struct { const char *key; char **var; } strings[] = {
    { "op", op }, { "algorithm", alg }, { "protocol", proto },
    { "minbytes", begin }, { "maxbytes", end }, { "ranks", ranks },
    { "fidelity", fidelity },
  };
  for (guint i = 0; i < G_N_ELEMENTS (strings); i++)
    {
      if (*strings[i].var || !(v = weft_cfg_get (w, strings[i].key)))
        continue;
      if (!weft_cfg_expect_scalar (v, strings[i].key, error))
        return FALSE;
      const char *t = v->text;
      gboolean ok = TRUE;
      if (strcmp (strings[i].key, "op") == 0)
        ok = weft_op_parse (t, &o);
      else if (strcmp (strings[i].key, "protocol") == 0)
        ok = strcmp (t, "auto") == 0 || weft_protocol_parse (t, &p);
      else if (strcmp (strings[i].key, "fidelity") == 0)
        ok = weft_fidelity_parse (t, &f);
      else if (strcmp (strings[i].key, "minbytes") == 0
               || strcmp (strings[i].key, "maxbytes") == 0)
        ok = parse_size (t, &bytes, NULL);
      if (!ok)
        return weft_cfg_error (error, v, "'%s' is not a valid %s", t,
                               strings[i].key);
      if (strcmp (strings[i].key, "algorithm") == 0
          && strcmp (t, "auto") != 0 && !weft_algorithm_parse (t, &a))
        {
          /* A schedule file, relative to the scenario. */
          g_autofree char *dir = g_path_get_dirname (scenario->path);
          *strings[i].var = g_path_is_absolute (t)
                                ? g_strdup (t)
                                : g_build_filename (dir, t, NULL);
          if (!g_file_test (*strings[i].var, G_FILE_TEST_EXISTS))
            return weft_cfg_error (error, v, "unknown algorithm '%s'; valid: "
                                   "%s", t, weft_algorithm_names ());
          continue;
        }
      *strings[i].var = g_strdup (t);
    }
  struct { const char *key; gint64 *var, max; } counts[] = {
    { "channels", channels, 64 }, { "chunks", chunks, 1024 },
  };
  for (guint i = 0; i < G_N_ELEMENTS (counts); i++)
    {
      if (*counts[i].var != G_MININT64 || !(v = weft_cfg_get (w, counts[i].key)))
        continue;
      if (!weft_cfg_expect_scalar (v, counts[i].key, error))
        return FALSE;
      if (!parse_count (v->text, counts[i].max, counts[i].var))
        return weft_cfg_error (error, v, "'%s' should be auto or a whole "
                               "number from 1 to %" G_GINT64_FORMAT, v->text,
                               counts[i].max);
    }
  struct { const char *key; gint64 *var; uint64_t min, max; } ints[] = {
    { "stepfactor", factor, 2, 1 << 20 }, { "seed", seed, 0, G_MAXINT64 },
  };
  for (guint i = 0; i < G_N_ELEMENTS (ints); i++)
    {
      uint64_t n;
      if (*ints[i].var != G_MININT64 || !(v = weft_cfg_get (w, ints[i].key)))
        continue;
      if (!weft_cfg_uint (v, ints[i].min, ints[i].max, &n, error))
        return FALSE;
      *ints[i].var = (gint64) n;
    }
  return TRUE;
}

static int
usage_error (const char *format, ...)
{
  va_list ap;

  va_start (ap, format);
  g_autofree char *message = g_strdup_vprintf (format, ap);
  va_end (ap);
  weft_cli_usage_error ("run", message);
  return WEFT_EXIT_USAGE;
}

/* What every candidate of a size runs. */
typedef struct {
  WeftCollectiveCall call;      /* its size set for each size */
  WeftScheduleFile *file;       /* or NULL: built-in algorithms */
  WeftPlans *plans;             /* built-in: the size's schedules, or NULL */
} Candidates;

static gboolean
run_candidate (int pair, const WeftRunOptions *options,
               WeftCollectiveResult *result, GError **error, void *data)
{
  const Candidates *c = data;
  int a = pair / WEFT_PROTOCOL_COUNT, pr = pair % WEFT_PROTOCOL_COUNT;

  if (c->file == NULL && c->plans != NULL)
    return weft_plans_run (c->plans, a, pr, options, result, error);
  if (c->file == NULL)
    return weft_collective_run (c->call.topo, c->call.gpus, c->call.n,
                                c->call.op, a, pr, c->call.size,
                                c->call.params, options, result, error);
  g_autoptr (WeftSchedule) sched = weft_schedule_file_build (c->file,
                                                             c->call.size,
                                                             error);
  if (sched == NULL)
    return FALSE;
  weft_schedule_run (c->call.topo, c->call.gpus, sched, c->call.op,
                     weft_protocol_get (pr, WEFT_ALG_RING), options, result);
  return TRUE;
}

/* A sweep with one candidate a size (one algorithm and protocol): the
 * sizes are independent runs, simulated `jobs` at once; the caller takes
 * their results in order of size as they come. */
typedef struct {
  Candidates cands;             /* size set per row */
  int pair;
  WeftRunOptions options;
  const uint64_t *sizes;
  int n;
  WeftChoice *rows;             /* per size, once done[] */
  gboolean *done;
  atomic_int next;
  GMutex lock;
  GCond cond;
  GThread *threads[64];
  int n_threads;
} SizePool;

static gpointer
pool_worker (gpointer data)
{
  SizePool *p = data;

  for (int k; (k = atomic_fetch_add (&p->next, 1)) < p->n;)
    {
      WeftChoice *row = &p->rows[k];
      Candidates c = p->cands;
      *row = (WeftChoice) { .pair = p->pair, .failed = -1 };
      c.call.size = p->sizes[k];
      if (p->options.interrupt != NULL && *p->options.interrupt)
        row->interrupted = TRUE;
      else if (!run_candidate (p->pair, &p->options, &row->result,
                               &row->error, &c))
        row->failed = p->pair;
      else
        row->interrupted = row->result.interrupted;
      g_mutex_lock (&p->lock);
      p->done[k] = TRUE;
      g_cond_broadcast (&p->cond);
      g_mutex_unlock (&p->lock);
    }
  return NULL;
}

static SizePool *
pool_start (const Candidates *cands, int pair, const WeftRunOptions *options,
            const uint64_t *sizes, int n, int jobs)
{
  SizePool *p = g_new0 (SizePool, 1);

  p->cands = *cands;
  p->pair = pair;
  p->options = *options;
  p->sizes = sizes;
  p->n = n;
  p->rows = g_new0 (WeftChoice, MAX (n, 1));
  p->done = g_new0 (gboolean, MAX (n, 1));
  atomic_init (&p->next, 0);
  g_mutex_init (&p->lock);
  g_cond_init (&p->cond);
  p->n_threads = CLAMP (MIN (jobs, n), 1, (int) G_N_ELEMENTS (p->threads));
  for (int i = 0; i < p->n_threads; i++)
    p->threads[i] = g_thread_new ("weft-size", pool_worker, p);
  return p;
}

/* Row @k's result, once simulated: the caller's from now on. */
static WeftChoice
pool_take (SizePool *p, int k)
{
  g_mutex_lock (&p->lock);
  while (!p->done[k])
    g_cond_wait (&p->cond, &p->lock);
  g_mutex_unlock (&p->lock);
  WeftChoice row = p->rows[k];
  p->rows[k] = (WeftChoice) { .pair = -1, .failed = -1 };
  return row;
}

/* Wait for the workers and free what was not taken.  The run leaves
 * rows untaken only once the interrupt flag is set (Ctrl-C, or a row that
 * failed), so the workers stop soon. */
static void
pool_free (SizePool *p)
{
  if (p == NULL)
    return;
  for (int i = 0; i < p->n_threads; i++)
    g_thread_join (p->threads[i]);
  for (int k = 0; k < p->n; k++)
    weft_choice_clear (&p->rows[k]);
  g_mutex_clear (&p->lock);
  g_cond_clear (&p->cond);
  g_free (p->rows);
  g_free (p->done);
  g_free (p);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC (SizePool, pool_free)

int
weft_cmd_run (int argc, char **argv)
{
  g_autofree char *op_name = NULL, *alg_name = NULL, *proto_name = NULL;
  g_autofree char *begin = NULL, *end = NULL, *fidelity_name = NULL;
  g_autofree char *ranks = NULL, *log_level = NULL, *channels_text = NULL;
  g_autofree char *chunks_text = NULL;
  g_autofree char *db_path = NULL, *bin_text = NULL, *trace_path = NULL;
  g_auto (GStrv) sets = NULL;
  g_auto (GStrv) params_kv = NULL;
  /* G_MININT64: not given, so the workload section or the default. */
  gint64 factor = G_MININT64, seed = G_MININT64, channels = G_MININT64;
  gint64 chunks = G_MININT64, jobs = G_MININT64;
  GOptionEntry entries[] = {
    { "op", 'o', 0, G_OPTION_ARG_STRING, &op_name,
      "Collective: all_reduce, all_gather, reduce_scatter, broadcast, reduce, "
      "all_to_all, send_recv (default: all_reduce)", "OP" },
    { "algorithm", 'a', 0, G_OPTION_ARG_STRING, &alg_name,
      "auto, ring, tree, rhd, direct, pairwise, nvls, hierarchical, "
      "hierarchical-rhd, hierarchical-tree, nvls-tree, or a "
      "schedule file; "
      "auto runs each that fits (all but rhd and hierarchical-rhd/-tree, "
      "which NCCL lacks) and keeps the "
      "fastest (default: auto)", "ALG" },
    { "protocol", 'p', 0, G_OPTION_ARG_STRING, &proto_name,
      "auto, LL, LL128 or Simple (default: auto)", "PROTO" },
    { "minbytes", 'b', 0, G_OPTION_ARG_STRING, &begin,
      "Smallest size, as in nccl-tests: 8, 64K, 8G or 8GiB (default: 8)",
      "SIZE" },
    { "maxbytes", 'e', 0, G_OPTION_ARG_STRING, &end,
      "Largest size (default: 8G)", "SIZE" },
    { "stepfactor", 'f', 0, G_OPTION_ARG_INT64, &factor,
      "Multiply the size by this from one row to the next (default: 2)", "F" },
    { "ranks", 0, 0, G_OPTION_ARG_STRING, &ranks,
      "GPUs to run on, as a name pattern such as 'node[0-3]/gpu[0-7]' "
      "(default: every GPU, in declaration order)", "SELECTOR" },
    { "fidelity", 0, 0, G_OPTION_ARG_STRING, &fidelity_name,
      "Network model: packet, flow or analytical (default: flow)", "F" },
    { "channels", 0, 0, G_OPTION_ARG_STRING, &channels_text,
      "Rings or trees the buffer is split over, or auto: across servers one "
      "for each GPU of a server (each crossing between servers beside its "
      "own GPU, as NCCL's channels use every network interface), else one "
      "(default: auto)", "N" },
    { "chunks", 0, 0, G_OPTION_ARG_STRING, &chunks_text,
      "Pieces that follow each other through a channel, or auto: 8, shared "
      "out among a ring's channels (a ring step of 8 rings moves one piece "
      "on each); for nvls 1 to 8 by size (default: auto)", "N" },
    { "seed", 0, 0, G_OPTION_ARG_INT64, &seed,
      "Seed of every random stream (default: 1)", "N" },
    { "trace", 0, 0, G_OPTION_ARG_FILENAME, &trace_path,
      "Replay this trace (docs/trace-format.md) instead of a sweep; "
      "--algorithm and --protocol then apply to the collectives the trace "
      "leaves to auto (default: none)", "FILE" },
    { "set", 0, 0, G_OPTION_ARG_STRING_ARRAY, &sets,
      "Override a value of the scenario, such as fabrics.0.levels=3; may be "
      "repeated (default: none)", "KEY=VALUE" },
    { "db", 0, 0, G_OPTION_ARG_FILENAME, &db_path,
      "SQLite database the run is added to (default: weft.db)", "FILE" },
    { "param", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_STRING_ARRAY, &params_kv,
      "Record KEY=VALUE in run_params (weft sweep's points)", "KEY=VALUE" },
    { "bin", 0, 0, G_OPTION_ARG_STRING, &bin_text,
      "Time bin of the link statistics, such as 10us (default: a thousandth "
      "of the run, wider if the database would get over 2 million link bins)",
      "WIDTH" },
    { "jobs", 'j', 0, G_OPTION_ARG_INT64, &jobs,
      "Simulations at once, each on a core of its own: auto's candidates of "
      "a size, or with one algorithm and protocol the sizes; a simulation "
      "run alone shares its work among N threads (default: the number of "
      "cores)", "N" },
    { "log-level", 0, 0, G_OPTION_ARG_STRING, &log_level,
      "error, warning, info or debug (default: warning)", "LEVEL" },
    G_OPTION_ENTRY_NULL
  };
  g_autoptr (GOptionContext) context = g_option_context_new ("[SCENARIO]");
  g_autoptr (GError) error = NULL;
  g_autofree char *command = NULL;
  {
    g_autoptr (GPtrArray) words = g_ptr_array_new ();
    g_ptr_array_add (words, "weft");
    for (int i = 0; i < argc; i++)
      g_ptr_array_add (words, argv[i]);
    g_ptr_array_add (words, NULL);
    command = g_strjoinv (" ", (char **) words->pdata);
  }

  g_option_context_set_summary (
      context,
      "Simulate a sweep of collective sizes and print it as nccl-tests does:\n"
      "time, algbw and busbw (GB/s, 10^9 bytes).  With no SCENARIO, runs the\n"
      "bundled DGX H100 all_reduce sweep from 8 B to 8 GiB.");
  g_option_context_add_main_entries (context, entries, NULL);
  if (!weft_cli_parse (context, "run", &argc, &argv))
    return WEFT_EXIT_USAGE;
  if (argc > 2)
    return usage_error ("expected at most one scenario");

  const char *path = argc == 2 ? argv[1] : DEFAULT_SCENARIO;
  g_autoptr (WeftScenario) scenario = weft_scenario_load_with (
      path, (const char *const *) sets, &error);
  if (scenario == NULL)
    {
      fprintf (stderr, "%s\n", error->message);
      return WEFT_EXIT_USAGE;
    }
  struct { const char *name, *text; gint64 *var, max; } counts[] = {
    { "channels", channels_text, &channels, 64 },
    { "chunks", chunks_text, &chunks, 1024 },
  };
  for (guint i = 0; i < G_N_ELEMENTS (counts); i++)
    if (counts[i].text
        && !parse_count (counts[i].text, counts[i].max, counts[i].var))
      return usage_error ("--%s takes auto or 1 to %" G_GINT64_FORMAT
                          ", not '%s'", counts[i].name, counts[i].max,
                          counts[i].text);
  /* The scenario's workload section fills in what the flags leave out. */
  /* Sweep options the command line gives rule out a trace the scenario
   * names, and the other way round. */
  gboolean sweep_flags = op_name || begin || end || ranks
                         || factor != G_MININT64;
  g_autofree char *own_trace = trace_path ? g_strdup (trace_path) : NULL;
  if (sweep_flags && trace_path == NULL)
    trace_path = g_strdup ("");
  if (!apply_workload (scenario, &op_name, &alg_name, &proto_name, &begin,
                       &end, &ranks, &fidelity_name, &trace_path, &factor,
                       &channels, &chunks, &seed, &error))
    {
      fprintf (stderr, "%s\n", error->message);
      return WEFT_EXIT_USAGE;
    }
  if (trace_path && *trace_path == '\0')
    g_clear_pointer (&trace_path, g_free);
  if (own_trace && sweep_flags)
    return usage_error ("--trace replays a trace: --op, -b, -e, -f "
                        "and --ranks are for sweeps");
  factor = factor == G_MININT64 ? 2 : factor;
  seed = seed == G_MININT64 ? 1 : seed;
  channels = channels == G_MININT64 ? 0 : channels;
  chunks = chunks == G_MININT64 ? 0 : chunks;
  if (seed < 0)
    return usage_error ("--seed must not be negative");

  WeftOp op = WEFT_OP_ALL_REDUCE;
  if (op_name && !weft_op_parse (op_name, &op))
    return usage_error ("unknown operation '%s'; valid: %s", op_name,
                        weft_op_names ());
  gboolean auto_alg = alg_name == NULL || strcmp (alg_name, "auto") == 0;
  WeftAlgorithm alg = WEFT_ALG_RING;
  g_autoptr (WeftScheduleFile) file = NULL;
  if (!auto_alg && !weft_algorithm_parse (alg_name, &alg))
    {
      /* Not a built-in: a schedule file, or a mistake. */
      if (!g_file_test (alg_name, G_FILE_TEST_EXISTS))
        return usage_error ("unknown algorithm '%s'; valid: %s",
                            alg_name, weft_algorithm_names ());
      file = weft_schedule_file_load (alg_name, &error);
      if (file == NULL)
        {
          fprintf (stderr, "%s\n", error->message);
          return WEFT_EXIT_USAGE;
        }
      if (op_name && weft_schedule_file_op (file) != op)
        return usage_error ("%s is a schedule for %s, not %s",
                            alg_name, weft_op_name (weft_schedule_file_op (file)),
                            op_name);
      op = weft_schedule_file_op (file);
      alg = WEFT_ALG_RING;      /* for its protocol costs */
    }
  if (!trace_path && !auto_alg && file == NULL && !weft_algorithm_supports (alg, op))
    {
      GString *valid = g_string_new (NULL);
      for (int a = 0; a < WEFT_ALG_COUNT; a++)
        if (weft_algorithm_supports (a, op))
          g_string_append_printf (valid, "%s%s", valid->len ? ", " : "",
                                  weft_algorithm_name (a));
      int status = usage_error ("algorithm '%s' cannot run %s; "
                                "valid for %s: auto, %s",
                                alg_name, weft_op_name (op), weft_op_name (op),
                                valid->str);
      g_string_free (valid, TRUE);
      return status;
    }
  gboolean auto_proto = proto_name == NULL
                        || g_ascii_strcasecmp (proto_name, "auto") == 0;
  WeftProtocolKind proto = WEFT_PROTOCOL_SIMPLE;
  if (!auto_proto && !weft_protocol_parse (proto_name, &proto))
    return usage_error ("unknown protocol '%s'; valid: auto, LL, "
                        "LL128, Simple", proto_name);
  WeftFidelity fidelity = WEFT_FIDELITY_FLOW;
  if (fidelity_name && !weft_fidelity_parse (fidelity_name, &fidelity))
    return usage_error ("unknown fidelity '%s'; valid: packet, flow, "
                        "analytical", fidelity_name);
  uint64_t min_bytes = 8, max_bytes = (uint64_t) 8 << 30;
  if ((begin && !parse_size (begin, &min_bytes, &error))
      || (end && !parse_size (end, &max_bytes, &error)))
    return usage_error ("%s", error->message);
  if (min_bytes > max_bytes)
    return usage_error ("the smallest size (-b) is larger than the "
                        "largest (-e)");
  if (factor < 2)
    return usage_error ("-f must be at least 2");
  if (jobs == G_MININT64)
    jobs = CLAMP (g_get_num_processors (), 1, 64);
  if (jobs < 1 || jobs > 64)
    return usage_error ("--jobs takes 1 to 64");
  WeftTime bin_width = 0;
  if (bin_text && (!weft_parse_time (bin_text, &bin_width, &error)
                   || bin_width == 0))
    return usage_error ("--bin: %s", error ? error->message
                                                     : "must be above 0");
  WeftLogLevel level = WEFT_LOG_WARNING;
  if (log_level && !weft_log_level_parse (log_level, &level))
    return usage_error ("unknown log level '%s'; valid: error, "
                        "warning, info, debug", log_level);
  weft_log_setup (level);

  if (trace_path)
    {
      if (file)
        return usage_error ("a schedule file cannot run a trace's "
                            "collectives: name a built-in algorithm");
      catch_signals ();
      WeftTraceRun tr = {
        path, scenario, trace_path, fidelity, (uint64_t) seed,
        (uint32_t) channels, (uint32_t) chunks,
        auto_alg ? -1 : (int) alg, auto_proto ? -1 : (int) proto, db_path,
        bin_width, command, &interrupted, (int) jobs,
      };
      return weft_run_trace (&tr);
    }

  g_autoptr (GArray) gpus = select_ranks (scenario->topo, ranks, &error);
  if (gpus == NULL)
    return usage_error ("%s", error->message);
  uint32_t n = gpus->len;

  /* nccl-tests allocates a send and a receive buffer on every GPU. */
  for (uint32_t r = 0; r < n; r++)
    {
      const WeftDevice *d = scenario->topo->nodes[g_array_index (gpus, uint32_t,
                                                                 r)].device;
      if (d->memory > 0 && max_bytes > d->memory / 2)
        {
          g_autofree char *have = weft_format_size (d->memory);
          g_autofree char *want = weft_format_size (max_bytes);
          return usage_error ("a size of %s does not fit the GPUs' "
                              "memory: %s (%s) has %s for a send and a "
                              "receive buffer of that size",
                              want, d->name, scenario->topo->nodes[g_array_index (
                                                 gpus, uint32_t, r)].name,
                              have);
        }
    }
  WeftCollectiveParams params = { (uint32_t) channels, (uint32_t) chunks, 0,
                                  NULL, 1, NULL, NULL, 0 };
  gboolean reducing = op == WEFT_OP_ALL_REDUCE || op == WEFT_OP_REDUCE
                      || op == WEFT_OP_REDUCE_SCATTER;
  int root = op == WEFT_OP_BROADCAST || op == WEFT_OP_REDUCE ? 0 : -1;

  /* Which (algorithm, protocol) pairs can run here: refuse before writing
   * anything if none can. */
  gboolean fits[WEFT_ALG_COUNT][WEFT_PROTOCOL_COUNT] = { { FALSE } };
  gboolean any = FALSE;
  g_autoptr (GError) why = NULL;
  if (file != NULL)
    {
      if (weft_schedule_file_ranks (file) != n)
        return usage_error ("%s is written for %u ranks and the run "
                            "has %u (choose GPUs with --ranks)",
                            alg_name, weft_schedule_file_ranks (file), n);
      g_autoptr (WeftSchedule) trial = weft_schedule_file_build (file,
                                                                 min_bytes,
                                                                 &error);
      if (trial == NULL)
        return usage_error ("%s", error->message);
    }
  for (int a = 0; a < WEFT_ALG_COUNT && file == NULL; a++)
    for (int pr = 0; pr < WEFT_PROTOCOL_COUNT; pr++)
      {
        if ((auto_alg ? !weft_algorithm_supports (a, op)
                            || !weft_algorithm_in_auto (a)
                      : a != (int) alg)
            || (!auto_proto && pr != (int) proto))
          continue;
        g_clear_error (&why);
        fits[a][pr] = weft_collective_fits (scenario->topo,
                                            (uint32_t *) gpus->data, n, op, a,
                                            pr, &why);
        any = any || fits[a][pr];
      }
  for (int pr = 0; pr < WEFT_PROTOCOL_COUNT && file != NULL; pr++)
    any = fits[WEFT_ALG_RING][pr] = auto_proto || pr == (int) proto;
  if (!any)
    return usage_error ("%s", why ? why->message
                                           : "no algorithm can run this");

  /* The database: an unwritable path is reported before simulating. */
  g_autoptr (WeftDb) db = weft_db_open (db_path ? db_path : "weft.db", &error);
  if (db == NULL)
    {
      fprintf (stderr, "weft run: %s\n", error->message);
      return WEFT_EXIT_USAGE;
    }
  WeftRunInfo info = { path, scenario->sha256, weft_fidelity_name (fidelity),
                       (uint64_t) seed, command };
  int64_t run_id = weft_db_begin_run (db, &info, &error);
  if (run_id == 0 || !weft_db_write_topology (db, run_id, scenario->topo,
                                              &error))
    {
      fprintf (stderr, "weft run: %s\n", error->message);
      return WEFT_EXIT_FAILURE;
    }
  for (int i = 0; params_kv && params_kv[i]; i++)
    {
      const char *eq = strchr (params_kv[i], '=');
      g_autofree char *k = eq ? g_strndup (params_kv[i], eq - params_kv[i])
                              : g_strdup (params_kv[i]);
      const char *v = eq ? eq + 1 : "";
      const char *keys[] = { k }, *values[] = { v };
      if (!weft_db_set_params (db, run_id, keys, values, 1, &error))
        {
          fprintf (stderr, "weft run: %s\n", error->message);
          return WEFT_EXIT_FAILURE;
        }
    }
  catch_signals ();
  gint64 wall_start = g_get_monotonic_time ();
  uint64_t events = 0;
  g_autoptr (GArray) rows_done = g_array_new (FALSE, FALSE, sizeof (Row));
  g_array_set_clear_func (rows_done, (GDestroyNotify) row_clear);

  printf ("# weft %s: %s on %s, %u ranks, %s fidelity\n", WEFT_VERSION,
          weft_op_name (op), path, n, weft_fidelity_name (fidelity));
  if (file != NULL)
    printf ("# algorithm: %s (%s)\n", weft_schedule_file_name (file), alg_name);
  printf ("#\n");
  printf ("# %10s %12s %8s %6s %6s %10s %8s %8s  %-9s %s\n", "size", "count",
          "type", "redop", "root", "time", "algbw", "busbw", "algorithm",
          "protocol");
  printf ("# %10s %12s %8s %6s %6s %10s %8s %8s\n", "(B)", "(elements)", "",
          "", "", "(us)", "(GB/s)", "(GB/s)");

  gboolean progress = isatty (STDERR_FILENO);
  double busbw_sum = 0;
  int rows = 0, total_rows = 0;
  for (uint64_t size = min_bytes; size <= max_bytes; size *= (uint64_t) factor)
    {
      total_rows++;
      if (size > G_MAXUINT64 / (uint64_t) factor)
        break;
    }
  /* Link bins are kept by the run that is written, each operation within
   * its share of the database's budget: with one candidate that is the
   * only run; with several, they are tried without bins and the fastest is
   * run again with them (bins cost more than a run when there are many). */
  int candidates = 0;
  for (int a = 0; a < WEFT_ALG_COUNT; a++)
    for (int pr = 0; pr < WEFT_PROTOCOL_COUNT; pr++)
      candidates += fits[a][pr];
  WeftRunOptions binned = {
    fidelity, (uint64_t) seed, bin_width ? bin_width : FIRST_BIN_WIDTH,
    &interrupted, FALSE,
    bin_width ? 0 : MAX (BIN_ROW_BUDGET / (uint64_t) total_rows, 10000), 0,
    NULL, (uint32_t) jobs,
  };
  /* A run alone shares its work among `jobs` threads; runs at once (the
   * candidates of a size, or sizes) take one each. */
  WeftRunOptions options = binned;
  if (candidates > 1)
    {
      options.bin_width = options.max_bins = 0;
      options.threads = 1;
    }
  /* The candidates of a size are tried starting with the last size's
   * fastest, which is most often the fastest again and sets the time the
   * others stop at; see weft_collective_choose().  With one candidate a
   * size, the sizes are simulated `jobs` at once instead. */
  int last_winner = -1;
  Candidates cands = { { scenario->topo, (uint32_t *) gpus->data, n, op, 0,
                         &params },
                       file, NULL };
  g_autofree uint64_t *sizes = g_new (uint64_t, total_rows);
  for (int i = 0; i < total_rows; i++)
    sizes[i] = i == 0 ? min_bytes : sizes[i - 1] * (uint64_t) factor;
  g_autoptr (SizePool) pool = NULL;
  WeftRunOptions one_each = options;
  one_each.threads = 1;
  if (candidates == 1 && jobs > 1 && total_rows > 1)
    for (int pair = 0; pair < WEFT_PAIRS && pool == NULL; pair++)
      if (fits[pair / WEFT_PROTOCOL_COUNT][pair % WEFT_PROTOCOL_COUNT])
        pool = pool_start (&cands, pair, &one_each, sizes, total_rows,
                           (int) jobs);
  for (int i = 0; i < total_rows; i++)
    {
      uint64_t size = sizes[i];
      cands.call.size = size;
      if (progress)
        fprintf (stderr, "\rweft run: size %d of %d", rows + 1, total_rows);
      WeftChoice choice;
      if (pool != NULL)
        choice = pool_take (pool, i);
      else
        {
          int order[WEFT_PAIRS], n_order = 0;
          if (last_winner >= 0)
            order[n_order++] = last_winner;
          for (int pair = 0; pair < WEFT_PAIRS; pair++)
            if (pair != last_winner
                && fits[pair / WEFT_PROTOCOL_COUNT]
                       [pair % WEFT_PROTOCOL_COUNT])
              order[n_order++] = pair;
          /* The schedules of the size, each planned once for all its
           * candidates and the fastest's second run. */
          if (file == NULL)
            cands.plans = weft_plans_new (&cands.call, order, n_order);
          weft_collective_choose (order, n_order, (int) jobs, &options,
                                  run_candidate, &cands, &choice);
        }
      if (choice.failed >= 0)
        {
          /* A schedule file that does not fit this size is bad input;
           * the run is marked failed. */
          fprintf (stderr, "weft run: %s\n", choice.error->message);
          weft_choice_clear (&choice);
          g_clear_pointer (&cands.plans, weft_plans_free);
          weft_db_end_run (db, run_id, "failed",
                           (g_get_monotonic_time () - wall_start) / 1e6,
                           events, NULL);
          interrupted = 1;      /* sizes still running beside it stop */
          return file != NULL ? WEFT_EXIT_USAGE : WEFT_EXIT_FAILURE;
        }
      if (choice.interrupted)
        {
          weft_choice_clear (&choice);
          g_clear_pointer (&cands.plans, weft_plans_free);
          goto stopped;
        }
      g_clear_error (&choice.error);
      WeftCollectiveResult best = choice.result;
      int best_index = choice.pair;
      WeftAlgorithm best_alg = best_index / WEFT_PROTOCOL_COUNT;
      WeftProtocolKind best_proto = best_index % WEFT_PROTOCOL_COUNT;
      if (candidates == 1)
        events += best.events;
      last_winner = best_index;
      if (candidates > 1)
        {
          /* The fastest again, with its bins: the same run, so the same
           * time. */
          WeftTime time = best.time;
          gboolean ran = run_candidate (best_index, &binned, &best, &error,
                                        &cands);
          g_assert (ran);
          events += best.events;
          if (best.interrupted)
            {
              result_clear (&best);
              g_clear_pointer (&cands.plans, weft_plans_free);
              goto stopped;
            }
          g_assert (best.time == time);
        }
      g_clear_pointer (&cands.plans, weft_plans_free);
      double seconds = best.time * 1e-12;
      double algbw = seconds > 0 ? size / seconds / 1e9 : 0;
      double busbw = algbw * weft_op_bus_factor (op, n);
      printf ("  %10" G_GUINT64_FORMAT " %12" G_GUINT64_FORMAT
              " %8s %6s %6d %10.2f %8.2f %8.2f  %-9s %s\n",
              size, size / 4, "float", reducing ? "sum" : "none", root,
              best.time / 1e6, algbw, busbw,
              file ? "file" : weft_algorithm_name (best_alg),
              weft_protocol_name (best_proto));
      fflush (stdout);
      busbw_sum += busbw;
      rows++;
      Row row = { size, file ? -1 : (int) best_alg, best_proto, best };
      g_array_append_val (rows_done, row);
    }
  if (progress)
    fprintf (stderr, "\r%40s\r", "");
  printf ("# Avg bus bandwidth    : %g\n", rows ? busbw_sum / rows : 0.0);

  /* Record the operations one after another on the run's clock, with the
   * link bytes of each in bins of one width. */
  WeftTime width = bin_width ? bin_width : common_bin_width (rows_done);
  WeftTime clock = 0;
  for (guint i = 0; i < rows_done->len; i++)
    {
      Row *row = &g_array_index (rows_done, Row, i);
      const WeftCollectiveResult *result = &row->result;
      if (interrupted)
        goto stopped;
      weft_link_stats_widen (result->stats, width);
      double algbw = row->size / (result->time * 1e-12) / 1e9;
      WeftOpRow op_row = {
        weft_op_name (op),
        row->alg < 0 ? "file" : weft_algorithm_name (row->alg),
        weft_protocol_name (row->proto), row->size, n, clock,
        clock + result->time, algbw, algbw * weft_op_bus_factor (op, n),
      };
      gboolean written = weft_db_write_op (db, run_id, i, &op_row,
                                           result->stats, result->spans,
                                           (uint32_t *) gpus->data,
                                           result->n_spans, &error);
      clock += result->time;
      row_clear (row);          /* its bins are in the database now */
      if (!written)
        {
          fprintf (stderr, "weft run: %s\n", error->message);
          weft_db_end_run (db, run_id, "failed",
                           (g_get_monotonic_time () - wall_start) / 1e6,
                           events, NULL);
          return WEFT_EXIT_FAILURE;
        }
    }
  if (!weft_db_end_run (db, run_id, "complete",
                        (g_get_monotonic_time () - wall_start) / 1e6, events,
                        &error))
    {
      fprintf (stderr, "weft run: %s\n", error->message);
      return WEFT_EXIT_FAILURE;
    }
  return WEFT_EXIT_OK;

stopped:
  fflush (stdout);
  fprintf (stderr, "\nweft run: interrupted; run %" G_GINT64_FORMAT
           " is marked interrupted in %s\n", run_id,
           db_path ? db_path : "weft.db");
  weft_db_end_run (db, run_id, "interrupted",
                   (g_get_monotonic_time () - wall_start) / 1e6, events, NULL);
  return 130;
}
