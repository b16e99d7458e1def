/* weft: `weft sweep`'s options: its flags, the grids (from --grid or the
 * scenario's sweep: section) and the options of weft run it passes on to
 * every point. */
#include "sweep_options.h"
#include "cli.h"
#include "config.h"
#include "files.h"

#include <stdio.h>
#include <string.h>

/* Grid keys that are options of weft run, passed to a point as --KEY
 * VALUE; any other key is a scenario key, passed as --set KEY=VALUE. */
static const char *const run_keys[] = {
  "collective", "op", "algorithm", "protocol", "minbytes", "maxbytes",
  "stepfactor", "ranks", "fidelity", "channels", "chunks", "seed", "bin",
  "fault", "select",
  NULL
};

gboolean
weft_sweep_is_run_key (const char *key)
{
  return g_strv_contains (run_keys, key);
}

void
weft_grid_clear (WeftGrid *g)
{
  g_free (g->key);
  g_strfreev (g->values);
}

static void
run_flags_clear (WeftSweepFlags *f)
{
  g_free (f->op);
  g_free (f->collective);
  g_free (f->algorithm);
  g_free (f->protocol);
  g_free (f->select);
  g_free (f->minbytes);
  g_free (f->maxbytes);
  g_free (f->ranks);
  g_free (f->fidelity);
  g_free (f->bin);
  g_free (f->channels);
  g_free (f->chunks);
}

/* --NAME VALUE, if given. */
static void
add_flag (GPtrArray *args, const char *name, const char *value)
{
  if (value == NULL)
    return;
  g_ptr_array_add (args, g_strdup (name));
  g_ptr_array_add (args, g_strdup (value));
}

/* --NAME N, if given. */
static void
add_int_flag (GPtrArray *args, const char *name, gint64 value)
{
  if (value == G_MININT64)
    return;
  g_ptr_array_add (args, g_strdup (name));
  g_ptr_array_add (args, g_strdup_printf ("%" G_GINT64_FORMAT, value));
}

GPtrArray *
weft_sweep_run_flags (const WeftSweepFlags *f)
{
  GPtrArray *args = g_ptr_array_new_with_free_func (g_free);

  add_flag (args, "--collective", f->collective);
  add_flag (args, "--op", f->op);
  add_flag (args, "--algorithm", f->algorithm);
  add_flag (args, "--protocol", f->protocol);
  add_flag (args, "--select", f->select);
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


void
weft_sweep_args_clear (WeftSweepArgs *opts)
{
  g_free (opts->path);
  g_free (opts->db_file);
  g_free (opts->db_path);
  g_strfreev (opts->grid_specs);
  run_flags_clear (&opts->f);
  g_clear_pointer (&opts->grids, g_array_unref);
}

/* Parse the flags into @opts, leaving the scenario in argv: exactly one
 * is a usage error otherwise. */
static int
read_flags (int *argc, char ***argv, WeftSweepArgs *opts)
{
  WeftSweepFlags *f = &opts->f;
  GOptionEntry entries[] = {
    { "grid", 'g', 0, G_OPTION_ARG_STRING_ARRAY, &opts->grid_specs,
      "A value to vary and its values, KEY=V1,V2,... (a --set key); may be "
      "repeated, and the points are every combination (required)", "GRID" },
    { "jobs", 'j', 0, G_OPTION_ARG_INT64, &opts->jobs,
      "Points to run at once (default: the number of cores)", "N" },
    { "db", 0, 0, G_OPTION_ARG_FILENAME, &opts->db_path,
      "The database every point is added to (default: weft.db)", "FILE" },
    { "collective", 'c', 0, G_OPTION_ARG_STRING, &f->collective,
      "As weft run (default: all_reduce)", "COLL" },
    { "op", 'o', 0, G_OPTION_ARG_STRING, &f->op, "As weft run: a reduction "
      "operator, or a collective (default: sum)", "OP" },
    { "algorithm", 'a', 0, G_OPTION_ARG_STRING, &f->algorithm,
      "As weft run (default: auto)", "ALG" },
    { "protocol", 'p', 0, G_OPTION_ARG_STRING, &f->protocol,
      "As weft run (default: auto)", "PROTO" },
    { "select", 0, 0, G_OPTION_ARG_STRING, &f->select,
      "As weft run: nccl or fastest (default: nccl)", "HOW" },
    { "minbytes", 'b', 0, G_OPTION_ARG_STRING, &f->minbytes,
      "As weft run (default: 8)", "SIZE" },
    { "maxbytes", 'e', 0, G_OPTION_ARG_STRING, &f->maxbytes,
      "As weft run (default: 8G)", "SIZE" },
    { "stepfactor", 'f', 0, G_OPTION_ARG_INT64, &f->stepfactor,
      "As weft run (default: 2)", "F" },
    { "ranks", 0, 0, G_OPTION_ARG_STRING, &f->ranks,
      "As weft run (default: every GPU)", "SELECTOR" },
    { "fidelity", 0, 0, G_OPTION_ARG_STRING, &f->fidelity,
      "As weft run (default: flow)", "F" },
    { "channels", 0, 0, G_OPTION_ARG_STRING, &f->channels,
      "As weft run: auto or 1 to 64 (default: auto)", "N" },
    { "chunks", 0, 0, G_OPTION_ARG_STRING, &f->chunks,
      "As weft run: auto or 1 to 1024 (default: auto)", "N" },
    { "seed", 0, 0, G_OPTION_ARG_INT64, &f->seed, "As weft run (default: 1)",
      "N" },
    { "bin", 0, 0, G_OPTION_ARG_STRING, &f->bin,
      "As weft run (default: a thousandth of the run, wider on large "
      "fabrics)", "WIDTH" },
    G_OPTION_ENTRY_NULL
  };
  g_autoptr (GOptionContext) context = g_option_context_new ("SCENARIO");

  g_option_context_set_description (context, "Examples:\n  weft sweep scenarios/dgx-h100.yaml --grid link_types.nvlink4.latency=100ns,200ns\n  weft sweep scenarios/dgx-h100.yaml --grid algorithm=ring,tree,nvls -b 1M -e 1G -j 2");
  g_option_context_set_summary (
      context,
      "Run a design-space sweep: every combination of the --grid values is a\n"
      "point, run as `weft run SCENARIO --set KEY=VALUE ...` by worker\n"
      "processes and added to one database with its parameters.  Points\n"
      "already complete in the database are skipped, so a sweep that was\n"
      "stopped is resumed by running it again.");
  g_option_context_add_main_entries (context, entries, NULL);
  if (!weft_cli_parse (context, "sweep", argc, argv))
    return WEFT_EXIT_USAGE;
  if (*argc != 2)
    return weft_cli_usage ("sweep", "expected one scenario");
  /* A point is one run: several algorithms are a grid of them. */
  if (f->algorithm != NULL && strchr (f->algorithm, ',') != NULL)
    return weft_cli_usage ("sweep", "--algorithm takes one name in a sweep; "
                           "for several, --grid algorithm=%s",
                           f->algorithm);
  return WEFT_EXIT_OK;
}

/* One grid of a sweep section, KEY: [V1, ...], as --grid writes it,
 * KEY=V1,V2,...; NULL with @error unless it is a list of values. */
static char *
grid_spec (const WeftCfg *key, const WeftCfg *list, GError **error)
{
  if (!weft_cfg_expect_seq (list, "a list of values", error))
    return NULL;
  g_autoptr (GString) spec = g_string_new (key->text);
  for (size_t k = 0; k < list->n; k++)
    {
      if (!weft_cfg_expect_scalar (list->items[k], "a value", error))
        return NULL;
      g_string_append_printf (spec, "%c%s", k ? ',' : '=',
                              list->items[k]->text);
    }
  if (list->n == 0)
    {
      weft_cfg_error (error, list, "a grid needs at least one value");
      return NULL;
    }
  return g_string_free (g_steal_pointer (&spec), FALSE);
}

/* No --grid: the scenario's sweep section, {grid: {KEY: [V1, ...]}}, as
 * --grid would give it, into @specs.  Its errors say file, line and
 * column. */
static int
grid_from_scenario (const char *path, char ***specs)
{
  static const char *const keys[] = { "grid", "description", NULL };
  g_autoptr (GError) error = NULL;
  g_autoptr (WeftCfg) root = weft_cfg_load_file (path, &error);
  WeftCfg *section = root ? weft_cfg_get (root, "sweep") : NULL;
  WeftCfg *grid = NULL;

  if (root == NULL)
    {
      fprintf (stderr, "%s\n", error->message);
      return WEFT_EXIT_USAGE;
    }
  if (section == NULL)
    return weft_cli_usage ("sweep", "give at least one --grid "
                           "KEY=V1,V2,..., or a sweep: section in the "
                           "scenario");
  g_autoptr (GPtrArray) found = g_ptr_array_new_with_free_func (g_free);
  if (weft_cfg_expect_map (section, "sweep", &error)
      && weft_cfg_check_keys (section, keys, &error)
      && (grid = weft_cfg_require (section, "grid", &error))
      && weft_cfg_expect_map (grid, "grid (key: list of values)", &error))
    for (size_t i = 0; i < grid->n; i++)
      {
        char *spec = grid_spec (grid->keys[i], grid->items[i], &error);
        if (spec == NULL)
          break;
        g_ptr_array_add (found, spec);
      }
  if (error != NULL)
    {
      fprintf (stderr, "%s\n", error->message);
      return WEFT_EXIT_USAGE;
    }
  g_ptr_array_add (found, NULL);
  *specs = g_strdupv ((char **) found->pdata);
  return WEFT_EXIT_OK;
}

/* Each KEY=V1,V2,... into opts->grids, and the number of points. */
static int
parse_grids (WeftSweepArgs *opts)
{
  opts->grids = g_array_new (FALSE, FALSE, sizeof (WeftGrid));
  g_array_set_clear_func (opts->grids, (GDestroyNotify) weft_grid_clear);
  opts->total = 1;
  for (int i = 0; opts->grid_specs[i]; i++)
    {
      const char *spec = opts->grid_specs[i];
      const char *eq = strchr (spec, '=');
      if (eq == NULL || eq == spec || eq[1] == '\0')
        return weft_cli_usage ("sweep", "--grid %s: write KEY=V1,V2,...",
                               spec);
      WeftGrid g = { g_strndup (spec, eq - spec), g_strsplit (eq + 1, ",", -1),
                 0 };
      g_autofree char *flag = g_strdup_printf ("--%s", g.key);
      g_autoptr (GPtrArray) given = weft_sweep_run_flags (&opts->f);
      for (guint k = 0; k < given->len; k += 2)
        if (strcmp (g_ptr_array_index (given, k), flag) == 0)
          {
            weft_grid_clear (&g);
            return weft_cli_usage ("sweep", "%s is both a grid and an "
                                   "option: give it once", flag);
          }
      g.n = g_strv_length (g.values);
      /* A key or a value twice would run points that are the same and
       * record them as one. */
      for (guint k = 0; k < opts->grids->len; k++)
        if (strcmp (g_array_index (opts->grids, WeftGrid, k).key, g.key) == 0)
          {
            int status = weft_cli_usage ("sweep", "--grid %s is given twice: "
                                         "give its values once, %s=V1,V2,...",
                                         g.key, g.key);
            weft_grid_clear (&g);
            return status;
          }
      for (guint v = 0; v < g.n; v++)
        for (guint w = 0; w < v; w++)
          if (strcmp (g.values[v], g.values[w]) == 0)
            {
              int status = weft_cli_usage ("sweep", "--grid %s: the value "
                                           "'%s' is given twice", spec,
                                           g.values[v]);
              weft_grid_clear (&g);
              return status;
            }
      opts->total *= g.n;
      g_array_append_val (opts->grids, g);
    }
  return WEFT_EXIT_OK;
}

/* See sweep_options.h. */
int
weft_sweep_args_parse (int argc, char **argv, WeftSweepArgs *opts)
{
  int status;

  if ((status = read_flags (&argc, &argv, opts)) != WEFT_EXIT_OK)
    return status;
  /* Found in weft's data folder if not here, as weft run finds it. */
  opts->path = weft_data_find (argv[1]);
  if (opts->grid_specs == NULL
      && (status = grid_from_scenario (opts->path, &opts->grid_specs))
             != WEFT_EXIT_OK)
    return status;
  if (opts->jobs < 0 || opts->jobs > 1024)
    return weft_cli_usage ("sweep", "-j takes 1 to 1024");
  if (opts->jobs == 0)
    opts->jobs = MAX (g_get_num_processors (), 1);
  if ((status = parse_grids (opts)) != WEFT_EXIT_OK)
    return status;
  if (!g_file_test (opts->path, G_FILE_TEST_IS_REGULAR))
    {
      fprintf (stderr, "weft sweep: %s: no such scenario file\n", argv[1]);
      return WEFT_EXIT_USAGE;
    }
  opts->db_file = g_strdup (opts->db_path ? opts->db_path : "weft.db");
  return WEFT_EXIT_OK;
}

