/* weft: `weft run`'s options: the command line, the scenario's workload:
 * section for what it leaves out, the defaults, and the checks of each
 * value, in the order a user meets their messages. */
#include "run_options.h"
#include "run_sizes.h"
#include "files.h"
#include "cli.h"
#include "config.h"
#include "units.h"

#include <stdio.h>
#include <string.h>


/* The options as GOptionContext leaves them: text as written, and numbers
 * G_MININT64 where not given, so that the workload section or the default
 * can tell them apart from a value the user chose. */
typedef struct {
  char *op, *algorithm, *protocol, *minbytes, *maxbytes, *ranks, *fidelity;
  char *channels_text, *chunks_text, *trace, *db, *bin, *log_level;
  char *max_memory;
  char *select;
  char **sets, **params, **faults;
  gint64 stepfactor, seed, jobs;
  gint64 channels, chunks;      /* 0: auto; read from the text above or
                                   the workload section */
  gboolean check, nccl_tests, verbose, unchecked_data;
  char *collective, *redop;     /* -c, and -o as nccl-tests takes it */
  const WeftRunCommand *cmd;    /* the command they are for */
} Flags;

static void
flags_clear (Flags *f)
{
  g_free (f->op);
  g_free (f->collective);
  g_free (f->redop);
  g_free (f->algorithm);
  g_free (f->protocol);
  g_free (f->minbytes);
  g_free (f->maxbytes);
  g_free (f->ranks);
  g_free (f->fidelity);
  g_free (f->channels_text);
  g_free (f->chunks_text);
  g_free (f->trace);
  g_free (f->db);
  g_free (f->bin);
  g_free (f->log_level);
  g_free (f->max_memory);
  g_free (f->select);
  g_strfreev (f->sets);
  g_strfreev (f->faults);
  g_strfreev (f->params);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (Flags, flags_clear)

void
weft_run_args_clear (WeftRunArgs *args)
{
  g_free (args->command);
  g_free (args->scenario_path);
  g_clear_pointer (&args->scenario, weft_scenario_free);
  g_free (args->trace_path);
  g_free (args->db_path);
  g_strfreev (args->params);
  g_free (args->ranks);
  g_free (args->alg_name);
  g_strfreev (args->algorithms);
  g_free (args->redop);
  g_clear_pointer (&args->file, weft_schedule_file_free);
}

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

/* Add @entries to @context but those f->cmd leaves out.  GOptionContext
 * copies the entries, so they may live on the stack. */
static void
add_entries (GOptionContext *context, const GOptionEntry *entries,
             const Flags *f)
{
  g_autoptr (GArray) kept = g_array_new (TRUE, TRUE, sizeof (GOptionEntry));
  const char *const *left_out = f->cmd->left_out;

  for (const GOptionEntry *e = entries; e->long_name; e++)
    if (left_out == NULL || !g_strv_contains (left_out, e->long_name))
      g_array_append_val (kept, *e);
  g_option_context_add_main_entries (context, (GOptionEntry *) kept->data,
                                     NULL);
}

/* The options that say which collective is swept, over which sizes, and
 * how it is simulated. */
static void
add_sweep_entries (GOptionContext *context, Flags *f)
{
  GOptionEntry entries[] = {
    { "collective", 'c', 0, G_OPTION_ARG_STRING, &f->collective,
      "all_reduce, all_gather, reduce_scatter, broadcast, reduce, all_to_all "
      "or send_recv (default: all_reduce)", "COLL" },
    { "op", 'o', 0, G_OPTION_ARG_STRING, &f->op,
      "The reduction operator, as nccl-tests takes it: sum, prod, max, min "
      "or avg (printed; they cost the same); or a collective, as -c "
      "(default: sum)", "OP" },
    { "algorithm", 'a', 0, G_OPTION_ARG_STRING, &f->algorithm,
      weft_algorithm_help (), "ALG" },
    { "protocol", 'p', 0, G_OPTION_ARG_STRING, &f->protocol,
      "auto, LL, LL128 or Simple (NCCL's), or raw: the links alone, no "
      "NCCL latency or efficiency (default: auto)", "PROTO" },
    { "select", 0, 0, G_OPTION_ARG_STRING, &f->select,
      "How auto chooses each size's algorithm and protocol: nccl, as "
      "NCCL does (its cost model, or for all_to_all and send_recv its "
      "point-to-point rule), simulating only its choice; or fastest, "
      "simulating every candidate and keeping the fastest (default: nccl)",
      "HOW" },
    { "minbytes", 'b', 0, G_OPTION_ARG_STRING, &f->minbytes,
      "Smallest size, as in nccl-tests: 8, 64K, 8G or 8GiB (default: 8)",
      "SIZE" },
    { "maxbytes", 'e', 0, G_OPTION_ARG_STRING, &f->maxbytes,
      "Largest size (default: 8G)", "SIZE" },
    { "stepfactor", 'f', 0, G_OPTION_ARG_INT64, &f->stepfactor,
      "Multiply the size by this from one row to the next (default: 2)", "F" },
    { "ranks", 0, 0, G_OPTION_ARG_STRING, &f->ranks,
      "GPUs to run on, as a name pattern such as 'node[0-3]/gpu[0-7]' "
      "(default: every GPU, in declaration order)", "SELECTOR" },
    { "fidelity", 0, 0, G_OPTION_ARG_STRING, &f->fidelity,
      "Network model: packet, flow, analytical (each link shared fairly, "
      "on its own) or analytical-free (no sharing of links) (default: "
      "flow)", "F" },
    { "channels", 0, 0, G_OPTION_ARG_STRING, &f->channels_text,
      "Rings or trees the buffer is split over, or auto: across servers one "
      "for each GPU of a server (each crossing between servers beside its "
      "own GPU, as NCCL's channels use every network interface), else one "
      "(default: auto)", "N" },
    { "chunks", 0, 0, G_OPTION_ARG_STRING, &f->chunks_text,
      "Pieces that follow each other through a channel, or auto: 8, shared "
      "out among a ring's channels (a ring step of 8 rings moves one piece "
      "on each); for tree, nvls, nvls-tree and the two-level algorithms 1 "
      "to 8 by size (default: auto)", "N" },
    { "seed", 0, 0, G_OPTION_ARG_INT64, &f->seed,
      "Seed of every random stream (default: 1)", "N" },
    G_OPTION_ENTRY_NULL
  };

  add_entries (context, entries, f);
}

/* The options that say what else the run reads and where it goes: a
 * trace, overrides of the scenario, the database, the machine's cores.
 * GOptionContext copies the entries, so they may live on the stack. */
static void
add_run_entries (GOptionContext *context, Flags *f)
{
  GOptionEntry entries[] = {
    { "trace", 0, 0, G_OPTION_ARG_FILENAME, &f->trace,
      "Replay this trace (docs/trace-format.md) instead of a sweep; "
      "--algorithm and --protocol then apply to the collectives the trace "
      "leaves to auto (default: none)", "FILE" },
    { "set", 0, 0, G_OPTION_ARG_STRING_ARRAY, &f->sets,
      "Override a value of the scenario, such as fabrics.0.levels=3; may be "
      "repeated (default: none)", "KEY=VALUE" },
    { "fault", 0, 0, G_OPTION_ARG_STRING_ARRAY, &f->faults,
      "Take a link, switch or NIC down, or run it slow: NODES, or A B for "
      "the links between them, then a speed such as 50% to run them at that "
      "share instead, or GPUS compute 50% for a straggler; for a while with "
      "from T, until T (docs/faults.md); may be repeated (default: none)",
      "FAULT" },
    { "db", 0, 0, G_OPTION_ARG_FILENAME, &f->db,
      "SQLite database the run is added to (default: weft.db)", "FILE" },
    { "param", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_STRING_ARRAY, &f->params,
      "Record KEY=VALUE in run_params (weft sweep's points)", "KEY=VALUE" },
    { "bin", 0, 0, G_OPTION_ARG_STRING, &f->bin,
      "Time bin of the link statistics, such as 10us (default: a thousandth "
      "of the run, wider if the database would get over 2 million link bins)",
      "WIDTH" },
    { "max-memory", 0, 0, G_OPTION_ARG_STRING, &f->max_memory,
      "Refuse, before simulating, a run whose memory would pass SIZE, such "
      "as 16GiB (default: the memory the machine has free)", "SIZE" },
    { "jobs", 'j', 0, G_OPTION_ARG_INT64, &f->jobs,
      "Simulations at once, each on a core of its own: auto's candidates of "
      "a size, or with one algorithm and protocol the sizes; a simulation "
      "run alone shares its work among N threads (default: the number of "
      "cores)", "N" },
    { "log-level", 0, 0, G_OPTION_ARG_STRING, &f->log_level,
      "error, warning, info or debug (default: warning)", "LEVEL" },
    { "nccl-tests", 0, 0, G_OPTION_ARG_NONE, &f->nccl_tests,
      "Print the table exactly as nccl-tests does: its out-of-place and "
      "in-place columns (the same figures: weft does not model the copy "
      "between them), #wrong as N/A, without weft's algorithm and protocol "
      "(default: weft's table)", NULL },
    { "verbose", 'v', 0, G_OPTION_ARG_NONE, &f->verbose,
      "Under each size's row, auto's candidates with NCCL's estimate and "
      "weft's simulated time of each, where known (default: the row alone)",
      NULL },
    { "check", 0, 0, G_OPTION_ARG_NONE, &f->check,
      "Check the options, the scenario and what can run, print the plan "
      "and stop, simulating and recording nothing (default: run)", NULL },
    { "no-data-check", 0, 0, G_OPTION_ARG_NONE, &f->unchecked_data,
      "Run a schedule file (--algorithm FILE.yaml or FILE.xml) without "
      "checking that "
      "it computes its operation (default: check, and refuse one that does "
      "not)", NULL },
    G_OPTION_ENTRY_NULL
  };

  add_entries (context, entries, f);
}

/* The command line as one string, for the runs table: read before
 * GOptionContext takes the options out of argv.  A word a shell would
 * split or expand is quoted, so that the line can be run again. */
static char *
command_line (int argc, char **argv)
{
  g_autoptr (GPtrArray) words = g_ptr_array_new_with_free_func (g_free);

  g_ptr_array_add (words, g_strdup ("weft"));
  for (int i = 0; i < argc; i++)
    g_ptr_array_add (words, argv[i][strcspn (argv[i], " \t\n'\"\\$`*?[]{}()<>|&;!#~")]
                                ? g_shell_quote (argv[i])
                                : g_strdup (argv[i]));
  g_ptr_array_add (words, NULL);
  return g_strjoinv (" ", (char **) words->pdata);
}

/* weft run itself: a sweep of sizes, or a trace. */
static const WeftRunCommand run_command = {
  "run", "[SCENARIO]",
  "Simulate a sweep of collective sizes and print it as nccl-tests does:\n"
  "time, algbw and busbw (GB/s, 10^9 bytes).  With no SCENARIO, runs the\n"
  "bundled DGX H100 all_reduce sweep from 8 B to 8 GiB.",
  "Examples:\n  weft run\n  weft run scenarios/dgx-a100.yaml -c all_gather -b 1M -e 1G\n  weft run scenarios/h100-256-rail.yaml --ranks 'node[0-3]/gpu[0-7]' -a hierarchical\n  weft run scenarios/dgx-h100.yaml --trace scenarios/traces/dgx-h100-step.yaml\n  weft run --check -a nvls            (plan only)",
  NULL, NULL, 0, NULL, NULL,
};

/* Parse the flags into @f, leaving the command's inputs and the scenario
 * in argv; a malformed option, or other arguments than the command
 * takes, is a usage error. */
static int
read_flags (int *argc, char ***argv, Flags *f)
{
  const WeftRunCommand *cmd = f->cmd;
  g_autoptr (GOptionContext) context = g_option_context_new (cmd->arguments);

  g_option_context_set_description (context, cmd->examples);
  g_option_context_set_summary (context, cmd->summary);
  if (cmd->own)
    g_option_context_add_main_entries (context, cmd->own, NULL);
  add_sweep_entries (context, f);
  add_run_entries (context, f);
  if (!weft_cli_parse (context, cmd->name, argc, argv))
    return WEFT_EXIT_USAGE;
  if (cmd->n_inputs == 0 && *argc > 2)
    return weft_cli_usage (cmd->name, "expected at most one scenario");
  if (cmd->n_inputs > 0 && *argc != cmd->n_inputs + 2)
    return weft_cli_usage (cmd->name, "expected %s", cmd->arguments);
  /* -o is nccl-tests' reduction operator, or a collective as weft took it
   * before -c; from here on f->op is the collective alone. */
  static const char *const redops[] = { "sum", "prod", "max", "min", "avg",
                                        NULL };
  if (f->op && g_strv_contains (redops, f->op))
    f->redop = g_steal_pointer (&f->op);
  if (f->collective && f->op)
    return weft_cli_usage (cmd->name, "-c names the collective: -o takes a "
                           "reduction operator (sum, prod, max, min, avg)");
  if (f->collective)
    f->op = g_steal_pointer (&f->collective);
  return WEFT_EXIT_OK;
}

/* The command's inputs before the scenario: read them, taking the
 * collective they ran, and leave the scenario as argv[1]. */
static int
read_inputs (int *argc, char ***argv, Flags *f)
{
  const WeftRunCommand *cmd = f->cmd;
  int status;

  if (cmd->n_inputs == 0)
    return WEFT_EXIT_OK;
  g_clear_pointer (&f->op, g_free);
  if ((status = cmd->read_inputs (*argv + 1, &f->op, cmd->data))
      != WEFT_EXIT_OK)
    return status;
  *argv += cmd->n_inputs;
  *argc -= cmd->n_inputs;
  return WEFT_EXIT_OK;
}

/* Load the scenario argv names (or the bundled one) with the --set
 * overrides into @args; its own errors say file, line and column. */
static int
load_scenario (int argc, char **argv, Flags *f, WeftRunArgs *args)
{
  g_autoptr (GError) error = NULL;

  /* Paths not found here are looked for in weft's data folder, so that
   * the bundled scenarios run from anywhere. */
  args->scenario_path = argc == 2 ? weft_data_find (argv[1])
                                  : g_build_filename (weft_data_dir (),
                                                      "scenarios",
                                                      "dgx-h100.yaml", NULL);
  if (f->trace && *f->trace)
    {
      char *found = weft_data_find (f->trace);
      g_free (f->trace);
      f->trace = found;
    }
  args->scenario = weft_scenario_load_with (args->scenario_path,
                                            (const char *const *) f->sets,
                                            (const char *const *) f->faults,
                                            &error);
  if (args->scenario == NULL)
    {
      fprintf (stderr, "%s\n", error->message);
      return WEFT_EXIT_USAGE;
    }
  return WEFT_EXIT_OK;
}

/* --channels and --chunks: auto or a count, checked before the workload
 * section is read, as the flags win over it. */
static int
read_counts (Flags *f)
{
  struct { const char *name, *text; gint64 *var, max; } counts[] = {
    { "channels", f->channels_text, &f->channels, 64 },
    { "chunks", f->chunks_text, &f->chunks, 1024 },
  };

  for (guint i = 0; i < G_N_ELEMENTS (counts); i++)
    if (counts[i].text
        && !parse_count (counts[i].text, counts[i].max, counts[i].var))
      return weft_cli_usage (f->cmd->name, "--%s takes auto or 1 to %"
                             G_GINT64_FORMAT ", not '%s'", counts[i].name,
                             counts[i].max, counts[i].text);
  return WEFT_EXIT_OK;
}

/* @path relative to the scenario @scenario, as the workload section's
 * file names are written; a newly allocated string. */
static char *
beside_scenario (const WeftScenario *scenario, const char *path)
{
  g_autofree char *dir = g_path_get_dirname (scenario->path);

  return g_path_is_absolute (path) ? g_strdup (path)
                                   : g_build_filename (dir, path, NULL);
}

/* The workload section's trace, unless the command line gave one (or
 * sweep options, which leave f->trace ""). */
static gboolean
workload_trace (const WeftScenario *scenario, const WeftCfg *w, Flags *f,
                GError **error)
{
  WeftCfg *v;

  if (f->trace != NULL || !(v = weft_cfg_get (w, "trace")))
    return TRUE;
  if (!weft_cfg_expect_scalar (v, "trace", error))
    return FALSE;
  f->trace = beside_scenario (scenario, v->text);
  if (!g_file_test (f->trace, G_FILE_TEST_EXISTS))
    return weft_cfg_error (error, v, "no trace file '%s'", f->trace);
  return TRUE;
}

/* Whether @text is a valid value of the workload section's @key, for the
 * keys whose values are checked where they are written. */
static gboolean
workload_value_ok (const char *key, const char *text)
{
  uint64_t bytes;
  WeftOp o;
  WeftProtocolKind p;
  WeftFidelity f;

  if (strcmp (key, "op") == 0)
    return weft_op_parse (text, &o);
  if (strcmp (key, "protocol") == 0)
    return strcmp (text, "auto") == 0 || weft_protocol_parse (text, &p);
  if (strcmp (key, "fidelity") == 0)
    return weft_fidelity_parse (text, &f);
  if (strcmp (key, "minbytes") == 0 || strcmp (key, "maxbytes") == 0)
    return parse_size (text, &bytes, NULL);
  return TRUE;
}

/* The workload section's sizes against each other and the command line's,
 * where the section wrote them (-b and -e say the same of the flags). */
static gboolean
workload_sizes (const WeftCfg *w, const Flags *f, GError **error)
{
  WeftCfg *min_cfg = weft_cfg_get (w, "minbytes");
  WeftCfg *max_cfg = weft_cfg_get (w, "maxbytes");
  uint64_t min = 8, max = (uint64_t) 8 << 30;

  /* A key the command line overrides is not the one in force. */
  if (min_cfg && f->minbytes && strcmp (f->minbytes, min_cfg->text) != 0)
    min_cfg = NULL;
  if (max_cfg && f->maxbytes && strcmp (f->maxbytes, max_cfg->text) != 0)
    max_cfg = NULL;
  if ((f->minbytes && !parse_size (f->minbytes, &min, NULL))
      || (f->maxbytes && !parse_size (f->maxbytes, &max, NULL)))
    return TRUE;                /* a flag's own error, reported with it */
  if (min_cfg && min == 0)
    return weft_cfg_error (error, min_cfg, "the smallest size must be at "
                           "least 1 byte: each size is the last times "
                           "stepfactor");
  if (min > max && (max_cfg || min_cfg))
    return weft_cfg_error (error, max_cfg ? max_cfg : min_cfg,
                           max_cfg ? "maxbytes is smaller than the smallest "
                                     "size, %s"
                                   : "minbytes is larger than the largest "
                                     "size, %s",
                           max_cfg ? (f->minbytes ? f->minbytes : "8B")
                                   : (f->maxbytes ? f->maxbytes : "8GiB"));
  return TRUE;
}

/* The workload section's rank selector, where the section wrote it: the
 * GPUs it names must be the scenario's. */
static gboolean
workload_ranks (const WeftScenario *scenario, const WeftCfg *w,
                const Flags *f, GError **error)
{
  WeftCfg *v = weft_cfg_get (w, "ranks");
  g_autoptr (GError) why = NULL;

  if (v == NULL || f->ranks == NULL || strcmp (f->ranks, v->text) != 0)
    return TRUE;
  g_autoptr (GArray) gpus = weft_sizes_select_ranks (scenario->topo, v->text,
                                                     &why);
  if (gpus == NULL)
    return weft_cfg_error (error, v, "%s", why->message);
  return TRUE;
}

/* The workload section's values kept as text (checked later with the
 * flags'), each where the command line left it out.  An algorithm that
 * is not built in names a schedule file, relative to the scenario. */
static gboolean
workload_strings (const WeftScenario *scenario, const WeftCfg *w, Flags *f,
                  GError **error)
{
  struct { const char *key; char **var; } strings[] = {
    { "op", &f->op }, { "algorithm", &f->algorithm },
    { "protocol", &f->protocol }, { "minbytes", &f->minbytes },
    { "maxbytes", &f->maxbytes }, { "ranks", &f->ranks },
    { "fidelity", &f->fidelity },
  };
  WeftCfg *v;
  WeftAlgorithm a;

  for (guint i = 0; i < G_N_ELEMENTS (strings); i++)
    {
      const char *key = strings[i].key;
      if (*strings[i].var || !(v = weft_cfg_get (w, key)))
        continue;
      if (!weft_cfg_expect_scalar (v, key, error))
        return FALSE;
      const char *t = v->text;
      if (!workload_value_ok (key, t))
        return weft_cfg_error (error, v, "'%s' is not a valid %s", t, key);
      if (strcmp (key, "algorithm") == 0 && strcmp (t, "auto") != 0
          && !weft_algorithm_parse (t, &a))
        {
          *strings[i].var = beside_scenario (scenario, t);
          if (!g_file_test (*strings[i].var, G_FILE_TEST_EXISTS))
            return weft_cfg_error (error, v, "unknown algorithm '%s'; valid: "
                                   "%s", t, weft_algorithm_names ());
          continue;
        }
      *strings[i].var = g_strdup (t);
    }
  return workload_sizes (w, f, error) && workload_ranks (scenario, w, f, error);
}

/* The workload section's counts and whole numbers, each where the
 * command line left it out. */
static gboolean
workload_numbers (const WeftCfg *w, Flags *f, GError **error)
{
  struct { const char *key; gint64 *var, max; } counts[] = {
    { "channels", &f->channels, 64 }, { "chunks", &f->chunks, 1024 },
  };
  struct { const char *key; gint64 *var; uint64_t min, max; } ints[] = {
    { "stepfactor", &f->stepfactor, 2, 1 << 20 },
    { "seed", &f->seed, 0, G_MAXINT64 },
  };
  WeftCfg *v;

  for (guint i = 0; i < G_N_ELEMENTS (counts); i++)
    {
      if (*counts[i].var != G_MININT64
          || !(v = weft_cfg_get (w, counts[i].key)))
        continue;
      if (!weft_cfg_expect_scalar (v, counts[i].key, error))
        return FALSE;
      if (!parse_count (v->text, counts[i].max, counts[i].var))
        return weft_cfg_error (error, v, "'%s' should be auto or a whole "
                               "number from 1 to %" G_GINT64_FORMAT, v->text,
                               counts[i].max);
    }
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

/* Take the workload section's values for the options not given on the
 * command line, checking each where it is written. */
static gboolean
apply_workload (const WeftScenario *scenario, Flags *f, GError **error)
{
  static const char *const keys[] = {
    "op", "algorithm", "protocol", "minbytes", "maxbytes", "stepfactor",
    "ranks", "fidelity", "channels", "chunks", "seed", "trace",
    "description", NULL
  };
  WeftCfg *w = weft_cfg_get (scenario->root, "workload");

  if (w == NULL)
    return TRUE;
  return weft_cfg_expect_map (w, "workload", error)
         && weft_cfg_check_keys (w, keys, error)
         && workload_trace (scenario, w, f, error)
         && workload_strings (scenario, w, f, error)
         && workload_numbers (w, f, error);
}

/* The scenario's workload section fills in what the flags leave out.
 * Sweep options the command line gives rule out a trace the scenario
 * names, and --trace rules out sweep options. */
static int
fill_from_workload (const WeftScenario *scenario, Flags *f)
{
  g_autoptr (GError) error = NULL;
  gboolean sweep_flags = f->op || f->minbytes || f->maxbytes || f->ranks
                         || f->stepfactor != G_MININT64;
  gboolean own_trace = f->trace != NULL;

  if (sweep_flags && f->trace == NULL)
    f->trace = g_strdup ("");
  if (!apply_workload (scenario, f, &error))
    {
      fprintf (stderr, "%s\n", error->message);
      return WEFT_EXIT_USAGE;
    }
  if (f->trace && *f->trace == '\0')
    g_clear_pointer (&f->trace, g_free);
  if (own_trace && sweep_flags)
    return weft_cli_usage (f->cmd->name,
                           "--trace replays a trace: --op, -b, -e, -f "
                           "and --ranks are for sweeps");
  return WEFT_EXIT_OK;
}

/* The defaults of the numbers neither the flags nor the workload gave. */
static int
fill_defaults (Flags *f, WeftRunArgs *args)
{
  f->stepfactor = f->stepfactor == G_MININT64 ? 2 : f->stepfactor;
  f->seed = f->seed == G_MININT64 ? 1 : f->seed;
  if (f->seed < 0)
    return weft_cli_usage (f->cmd->name, "--seed must not be negative");
  args->seed = (uint64_t) f->seed;
  args->channels = (uint32_t) (f->channels == G_MININT64 ? 0 : f->channels);
  args->chunks = (uint32_t) (f->chunks == G_MININT64 ? 0 : f->chunks);
  return WEFT_EXIT_OK;
}

/* --algorithm names no built-in: a schedule file, which says its own
 * operation, or a mistake. */
static int
load_schedule_file (const Flags *f, WeftRunArgs *args)
{
  g_autoptr (GError) error = NULL;
  const char *name = f->algorithm;
  g_autofree char *path = weft_data_find (name);

  if (!g_file_test (path, G_FILE_TEST_EXISTS))
    return weft_cli_usage (f->cmd->name,
                           "unknown algorithm '%s'; valid: %s", name,
                           weft_algorithm_names ());
  args->unchecked_data = f->unchecked_data;
  args->file = weft_schedule_file_load (path, &error);
  if (args->file == NULL)
    {
      fprintf (stderr, "%s\n", error->message);
      return WEFT_EXIT_USAGE;
    }
  if (!weft_schedule_file_has_op (args->file) && f->op == NULL)
    return weft_cli_usage (f->cmd->name, "%s does not say which collective "
                           "it runs (MSCCL's coll): name it with --op",
                           name);
  if (!weft_schedule_file_has_op (args->file))
    weft_schedule_file_set_op (args->file, args->op);
  WeftOp op = weft_schedule_file_op (args->file);
  if (f->op && op != args->op)
    return weft_cli_usage (f->cmd->name,
                           "%s is a schedule for %s, not %s", name,
                           weft_op_name (op), f->op);
  /* A program for any number of ranks is checked once it is expanded for
   * the run's (run_sizes.c). */
  if (!args->unchecked_data && !weft_schedule_file_parametric (args->file)
      && !weft_schedule_file_verify (args->file, &error))
    {
      fprintf (stderr, "%s\n", error->message);
      return WEFT_EXIT_USAGE;
    }
  args->op = op;
  args->alg = WEFT_ALG_RING;    /* for its protocol costs */
  return WEFT_EXIT_OK;
}

/* An algorithm that cannot run @op: say which can. */
static int
refuse_algorithm (const Flags *f, const char *name, WeftOp op)
{
  g_autoptr (GString) valid = g_string_new (NULL);

  for (int a = 0; a < WEFT_ALG_COUNT; a++)
    if (weft_algorithm_supports (a, op))
      g_string_append_printf (valid, "%s%s", valid->len ? ", " : "",
                              weft_algorithm_name (a));
  return weft_cli_usage (f->cmd->name,
                         "algorithm '%s' cannot run %s; valid for %s: "
                         "auto, %s", name, weft_op_name (op),
                         weft_op_name (op), valid->str);
}

void
weft_run_args_use_algorithm (WeftRunArgs *args, const char *name)
{
  args->auto_alg = strcmp (name, "auto") == 0;
  args->alg = WEFT_ALG_RING;
  if (!args->auto_alg)
    weft_algorithm_parse (name, &args->alg);
  g_free (args->alg_name);
  args->alg_name = g_strdup (name);
}

/* --algorithm A,B,...: each auto or a built-in algorithm that can run
 * the operation, into args->algorithms, the first to run first. */
static int
choose_algorithms (const Flags *f, WeftRunArgs *args)
{
  g_auto (GStrv) names = g_strsplit (f->algorithm, ",", -1);

  if (f->trace)
    return weft_cli_usage (f->cmd->name, "--algorithm takes one name with "
                           "--trace (the trace's collectives are its runs)");
  if (f->nccl_tests)
    return weft_cli_usage (f->cmd->name, "--nccl-tests prints one "
                           "algorithm's table: name one algorithm");
  for (guint i = 0; names[i] != NULL; i++)
    {
      WeftAlgorithm a;
      if (strcmp (names[i], "auto") == 0)
        continue;
      if (!weft_algorithm_parse (names[i], &a))
        return weft_cli_usage (f->cmd->name, "unknown algorithm '%s' in "
                               "'%s'; a list takes auto and built-in "
                               "algorithms: %s", names[i], f->algorithm,
                               weft_algorithm_list ());
      if (!weft_algorithm_supports (a, args->op))
        return refuse_algorithm (f, names[i], args->op);
    }
  if (g_strv_length (names) < 2)
    return weft_cli_usage (f->cmd->name, "'%s' is not a list of "
                           "algorithms", f->algorithm);
  args->algorithms = g_steal_pointer (&names);
  weft_run_args_use_algorithm (args, args->algorithms[0]);
  return WEFT_EXIT_OK;
}

/* The operation and the algorithm that runs it: auto, a built-in one
 * that can run it (a trace's collectives are checked when it is read),
 * a schedule file, or a list of algorithms. */
static int
choose_collective (const Flags *f, WeftRunArgs *args)
{
  int status;

  args->op = WEFT_OP_ALL_REDUCE;
  if (f->op && !weft_op_parse (f->op, &args->op))
    return weft_cli_usage (f->cmd->name,
                           "unknown collective '%s'; valid: %s (and "
                           "-o takes the reduction operators sum, prod, max, "
                           "min and avg)", f->op, weft_op_names ());
  if (f->algorithm != NULL && strchr (f->algorithm, ',') != NULL)
    return choose_algorithms (f, args);
  args->auto_alg = f->algorithm == NULL || strcmp (f->algorithm, "auto") == 0;
  args->alg = WEFT_ALG_RING;
  if (!args->auto_alg && !weft_algorithm_parse (f->algorithm, &args->alg)
      && (status = load_schedule_file (f, args)) != WEFT_EXIT_OK)
    return status;
  if (!f->trace && !args->auto_alg && args->file == NULL
      && !weft_algorithm_supports (args->alg, args->op))
    return refuse_algorithm (f, f->algorithm, args->op);
  return WEFT_EXIT_OK;
}

/* The sweep's sizes: from -b to -e, times -f from one to the next. */
static int
check_sizes (const Flags *f, WeftRunArgs *args)
{
  g_autoptr (GError) error = NULL;

  args->min_bytes = 8;
  args->max_bytes = (uint64_t) 8 << 30;
  if ((f->minbytes && !parse_size (f->minbytes, &args->min_bytes, &error))
      || (f->maxbytes && !parse_size (f->maxbytes, &args->max_bytes, &error)))
    return weft_cli_usage (f->cmd->name, "%s", error->message);
  if (args->min_bytes == 0)
    return weft_cli_usage (f->cmd->name,
                           "the smallest size (-b) must be at least "
                           "1 byte: each size is the last times -f");
  if (args->min_bytes > args->max_bytes)
    return weft_cli_usage (f->cmd->name,
                           "the smallest size (-b) is larger than the "
                           "largest (-e)");
  if (f->stepfactor < 2)
    return weft_cli_usage (f->cmd->name, "-f must be at least 2");
  args->factor = (uint64_t) f->stepfactor;
  return WEFT_EXIT_OK;
}

/* The protocol, fidelity, sizes, jobs, bin width and log level, each
 * against the values it may take. */
static int
check_values (const Flags *f, WeftRunArgs *args)
{
  g_autoptr (GError) error = NULL;
  int status;

  args->auto_proto = f->protocol == NULL
                     || g_ascii_strcasecmp (f->protocol, "auto") == 0;
  args->proto = WEFT_PROTOCOL_SIMPLE;
  if (!args->auto_proto && !weft_protocol_parse (f->protocol, &args->proto))
    return weft_cli_usage (f->cmd->name,
                           "unknown protocol '%s'; valid: auto, LL, "
                           "LL128, Simple, raw", f->protocol);
  /* An MSCCL file runs with the protocol it names, unless told another. */
  if (args->auto_proto && args->file
      && weft_schedule_file_protocol (args->file, &args->proto))
    args->auto_proto = FALSE;
  args->select = WEFT_SELECT_NCCL;
  if (f->select && strcmp (f->select, "fastest") == 0)
    args->select = WEFT_SELECT_FASTEST;
  else if (f->select && strcmp (f->select, "nccl") != 0)
    return weft_cli_usage (f->cmd->name, "unknown selection '%s'; valid: "
                           "nccl, fastest", f->select);
  args->fidelity = WEFT_FIDELITY_FLOW;
  if (f->fidelity && !weft_fidelity_parse (f->fidelity, &args->fidelity))
    return weft_cli_usage (f->cmd->name,
                           "unknown fidelity '%s'; valid: packet, "
                           "flow, analytical, analytical-free", f->fidelity);
  if ((status = check_sizes (f, args)) != WEFT_EXIT_OK)
    return status;
  gint64 jobs = f->jobs == G_MININT64 ? CLAMP (g_get_num_processors (), 1, 64)
                                      : f->jobs;
  if (jobs < 1 || jobs > 64)
    return weft_cli_usage (f->cmd->name, "--jobs takes 1 to 64");
  args->jobs = (int) jobs;
  args->max_memory = 0;
  if (f->max_memory && (!weft_parse_size (f->max_memory, &args->max_memory,
                                          &error)
                        || args->max_memory == 0))
    return weft_cli_usage (f->cmd->name, "--max-memory: %s",
                           error ? error->message : "must be above 0");
  args->bin_width = 0;
  if (f->bin && (!weft_parse_time (f->bin, &args->bin_width, &error)
                 || args->bin_width == 0))
    return weft_cli_usage (f->cmd->name, "--bin: %s", error ? error->message
                                                     : "must be above 0");
  args->log_level = WEFT_LOG_WARNING;
  if (f->log_level && !weft_log_level_parse (f->log_level, &args->log_level))
    return weft_cli_usage (f->cmd->name,
                           "unknown log level '%s'; valid: error, "
                           "warning, info, debug", f->log_level);
  return WEFT_EXIT_OK;
}

int
weft_run_args_parse (int argc, char **argv, WeftRunArgs *args)
{
  return weft_run_args_parse_as (&run_command, argc, argv, args);
}

int
weft_run_args_parse_as (const WeftRunCommand *cmd, int argc, char **argv,
                        WeftRunArgs *args)
{
  g_auto (Flags) f = { .stepfactor = G_MININT64, .seed = G_MININT64,
                       .jobs = G_MININT64, .channels = G_MININT64,
                       .chunks = G_MININT64, .cmd = cmd };
  int status;

  args->name = cmd->name;
  args->command = command_line (argc, argv);
  if ((status = read_flags (&argc, &argv, &f)) != WEFT_EXIT_OK
      || (status = read_inputs (&argc, &argv, &f)) != WEFT_EXIT_OK
      || (status = load_scenario (argc, argv, &f, args)) != WEFT_EXIT_OK
      || (status = read_counts (&f)) != WEFT_EXIT_OK
      || (status = fill_from_workload (args->scenario, &f)) != WEFT_EXIT_OK
      || (status = fill_defaults (&f, args)) != WEFT_EXIT_OK
      || (status = choose_collective (&f, args)) != WEFT_EXIT_OK
      || (status = check_values (&f, args)) != WEFT_EXIT_OK)
    return status;
  if (f.trace && args->file)
    return weft_cli_usage (cmd->name, "a schedule file cannot run a trace's "
                           "collectives: name a built-in algorithm");
  args->trace_path = g_steal_pointer (&f.trace);
  args->db_path = g_steal_pointer (&f.db);
  args->params = g_steal_pointer (&f.params);
  args->ranks = g_steal_pointer (&f.ranks);
  if (args->algorithms == NULL)
    args->alg_name = g_steal_pointer (&f.algorithm);
  args->check = f.check;
  args->nccl_tests = f.nccl_tests;
  args->verbose = f.verbose;
  args->redop = g_strdup (f.redop ? f.redop : "sum");
  return WEFT_EXIT_OK;
}
