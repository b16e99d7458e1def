/* weft: the `weft topo` command. */
#include "cli.h"
#include "files.h"
#include "topology/hardware.h"
#include "topology/scenario.h"
#include "topology/topo_stats.h"

#include <stdio.h>

int
weft_cmd_topo (int argc, char **argv)
{
  g_autofree char *dot = NULL;
  g_auto (GStrv) sets = NULL;
  gint64 exact = 4096;
  gboolean force = FALSE;
  GOptionEntry entries[] = {
    { "dot", 0, 0, G_OPTION_ARG_FILENAME, &dot,
      "Also write the topology as a Graphviz graph to FILE (default: none)",
      "FILE" },
    { "set", 0, 0, G_OPTION_ARG_STRING_ARRAY, &sets,
      "Override a value of the scenario, such as fabrics.0.levels=3; may be "
      "repeated (default: none)", "KEY=VALUE" },
    { "exact-diameter", 0, 0, G_OPTION_ARG_INT64, &exact,
      "Compute the diameter exactly up to N GPUs (default: 4096)", "N" },
    { "force", 0, 0, G_OPTION_ARG_NONE, &force,
      "Replace the --dot file even if weft did not write it (default: "
      "only weft's own)", NULL },
    G_OPTION_ENTRY_NULL
  };
  g_autoptr (GOptionContext) context = g_option_context_new ("SCENARIO");
  g_autoptr (GError) error = NULL;

  g_option_context_set_summary (
      context, "Check a scenario and summarise its topology: nodes by kind, "
               "links by type,\nper-GPU injection bandwidth, bisection "
               "bandwidth and diameter.");
  g_option_context_add_main_entries (context, entries, NULL);
  if (!weft_cli_parse (context, "topo", &argc, &argv))
    return WEFT_EXIT_USAGE;
  if (argc != 2)
    {
      weft_cli_usage_error ("topo", "expected one scenario file");
      return WEFT_EXIT_USAGE;
    }
  if (exact < 0)
    {
      weft_cli_usage_error ("topo", "--exact-diameter must not be "
                            "negative");
      return WEFT_EXIT_USAGE;
    }

  g_autoptr (WeftScenario) scenario = weft_scenario_load_with (
      argv[1], (const char *const *) sets, &error);
  if (scenario == NULL)
    {
      fprintf (stderr, "%s\n", error->message);
      return WEFT_EXIT_USAGE;
    }
  /* Checked before the figures, which take long on large fabrics. */
  if (dot != NULL
      && !weft_file_may_write (dot, (const char *const *) scenario->files,
                               WEFT_TOPO_DOT_MARK, force, &error))
    {
      fprintf (stderr, "weft topo: %s\n", error->message);
      return WEFT_EXIT_USAGE;
    }
  WeftTopoStats stats;
  weft_topo_stats (scenario->topo, (uint32_t) MIN (exact, G_MAXUINT32),
                   &stats);
  printf ("scenario: %s\n", argv[1]);
  weft_topo_print (stdout, scenario->topo, &stats);
  if (dot != NULL && !weft_topo_write_dot (scenario->topo, dot, &error))
    {
      fprintf (stderr, "weft topo: %s\n", error->message);
      return WEFT_EXIT_USAGE;
    }
  return WEFT_EXIT_OK;
}
