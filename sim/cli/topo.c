/* weft: the `weft topo` command. */
#include "cli.h"
#include "files.h"
#include "topology/hardware.h"
#include "topology/scenario.h"
#include "topology/tiers.h"
#include "topology/topo_stats.h"

#include <stdio.h>

/* What `weft topo` is asked to summarise. */
typedef struct {
  char *dot;                    /* a Graphviz file to write, or NULL */
  char **sets;                  /* --set KEY=VALUE overrides, or NULL */
  gint64 exact;                 /* GPUs up to which the diameter is exact */
  gboolean force;               /* replace a --dot file weft did not write */
  char *path;                   /* the scenario: as given, or found in
                                   weft's data folder */
} TopoArgs;

static void
topo_args_clear (TopoArgs *args)
{
  g_free (args->dot);
  g_strfreev (args->sets);
  g_free (args->path);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (TopoArgs, topo_args_clear)

/* Fill @args from `weft topo`'s @argv (argv[0] is "topo").  Returns
 * WEFT_EXIT_OK, or WEFT_EXIT_USAGE once it has said what is wrong; --help
 * exits. */
static int
parse_options (int argc, char **argv, TopoArgs *args)
{
  GOptionEntry entries[] = {
    { "dot", 0, 0, G_OPTION_ARG_FILENAME, &args->dot,
      "Also write the topology as a Graphviz graph to FILE (default: none)",
      "FILE" },
    { "set", 0, 0, G_OPTION_ARG_STRING_ARRAY, &args->sets,
      "Override a value of the scenario, such as fabrics.0.levels=3; may be "
      "repeated (default: none)", "KEY=VALUE" },
    { "exact-diameter", 0, 0, G_OPTION_ARG_INT64, &args->exact,
      "Compute the diameter exactly up to N GPUs (default: 4096)", "N" },
    { "force", 0, 0, G_OPTION_ARG_NONE, &args->force,
      "Replace the --dot file even if weft did not write it (default: "
      "only weft's own)", NULL },
    G_OPTION_ENTRY_NULL
  };
  g_autoptr (GOptionContext) context = g_option_context_new ("SCENARIO");

  g_option_context_set_description (context, "Examples:\n  weft topo scenarios/dgx-h100.yaml\n  weft topo --dot h100.dot scenarios/h100-256-rail.yaml\n  weft topo scenarios/h100-256-rail.yaml --set fabrics.0.oversubscription=2:1");
  g_option_context_set_summary (
      context, "Check a scenario and summarise its topology: nodes by kind, "
               "links by type,\nper-GPU injection bandwidth, bisection "
               "bandwidth, diameter, and its tiers\n(GPU-switch, GPU-NIC, "
               "leaf, spine, core) with their bandwidth and\n"
               "oversubscription.");
  g_option_context_add_main_entries (context, entries, NULL);
  if (!weft_cli_parse (context, "topo", &argc, &argv))
    return WEFT_EXIT_USAGE;
  if (argc != 2)
    return weft_cli_usage ("topo", "expected one scenario file");
  if (args->exact < 0)
    return weft_cli_usage ("topo", "--exact-diameter must not be negative");
  args->path = weft_data_find (argv[1]);
  return WEFT_EXIT_OK;
}

/* `weft topo`: read the options, load the scenario, summarise it.
 * Returns the exit status. */
int
weft_cmd_topo (int argc, char **argv)
{
  g_auto (TopoArgs) args = { .exact = 4096 };
  g_autoptr (GError) error = NULL;
  int status;

  if ((status = parse_options (argc, argv, &args)) != WEFT_EXIT_OK)
    return status;
  g_autoptr (WeftScenario) scenario = weft_scenario_load_with (
      args.path, (const char *const *) args.sets, &error);
  if (scenario == NULL)
    {
      fprintf (stderr, "%s\n", error->message);
      return WEFT_EXIT_USAGE;
    }
  /* Checked before the figures, which take long on large fabrics. */
  if (args.dot != NULL
      && !weft_file_may_write (args.dot, (const char *const *) scenario->files,
                               WEFT_TOPO_DOT_MARK, args.force, &error))
    {
      fprintf (stderr, "weft topo: %s\n", error->message);
      return WEFT_EXIT_USAGE;
    }
  WeftTopoStats stats;
  weft_topo_stats (scenario->topo, (uint32_t) MIN (args.exact, G_MAXUINT32),
                   &stats);
  printf ("scenario: %s\n", args.path);
  weft_topo_print (stdout, scenario->topo, &stats);
  g_autoptr (WeftTiers) tiers = weft_tiers_new (scenario->topo);
  weft_tiers_print (stdout, tiers);
  if (args.dot != NULL && !weft_topo_write_dot (scenario->topo, args.dot,
                                                &error))
    {
      fprintf (stderr, "weft topo: %s\n", error->message);
      return WEFT_EXIT_USAGE;
    }
  return WEFT_EXIT_OK;
}
