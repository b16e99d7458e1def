/* weft: the `weft run` command. */
#include "cli.h"
#include "log.h"

#include <stdio.h>

#define DEFAULT_SCENARIO "dgx-h100.yaml"

static const char *const fidelities[] = { "packet", "flow", "analytical" };

int
weft_cmd_run (int argc, char **argv)
{
  /* GOptionContext does not free a string option's previous value, so the
   * defaults are filled in after parsing. */
  g_autofree char *fidelity = NULL;
  g_autofree char *db = NULL;
  g_autofree char *log_level = NULL;
  gint64 seed = 1;
  GOptionEntry entries[] = {
    { "fidelity", 0, 0, G_OPTION_ARG_STRING, &fidelity,
      "Network model: packet, flow or analytical (default: flow)", "F" },
    { "seed", 0, 0, G_OPTION_ARG_INT64, &seed,
      "Seed of every random stream (default: 1)", "N" },
    { "db", 0, 0, G_OPTION_ARG_FILENAME, &db,
      "SQLite database the results go to (default: weft.db)", "FILE" },
    { "log-level", 0, 0, G_OPTION_ARG_STRING, &log_level,
      "error, warning, info or debug (default: warning)", "LEVEL" },
    G_OPTION_ENTRY_NULL
  };
  g_autoptr (GOptionContext) context = g_option_context_new ("[SCENARIO]");

  g_option_context_set_summary (
      context,
      "Simulate a scenario's workload and print timings as nccl-tests does.\n"
      "With no SCENARIO, runs the bundled DGX H100 all_reduce sweep.");
  g_option_context_add_main_entries (context, entries, NULL);
  if (!weft_cli_parse (context, "run", &argc, &argv))
    return WEFT_EXIT_USAGE;

  if (fidelity == NULL)
    fidelity = g_strdup ("flow");
  if (db == NULL)
    db = g_strdup ("weft.db");
  if (log_level == NULL)
    log_level = g_strdup ("warning");

  if (argc > 2)
    {
      weft_cli_usage_error (context, "run", "expected at most one scenario");
      return WEFT_EXIT_USAGE;
    }

  gboolean known = FALSE;
  for (guint i = 0; i < G_N_ELEMENTS (fidelities); i++)
    known = known || g_strcmp0 (fidelity, fidelities[i]) == 0;
  if (!known)
    {
      g_autofree char *message = g_strdup_printf (
          "unknown fidelity '%s'; valid: packet, flow, analytical", fidelity);
      weft_cli_usage_error (context, "run", message);
      return WEFT_EXIT_USAGE;
    }

  WeftLogLevel level;
  if (!weft_log_level_parse (log_level, &level))
    {
      g_autofree char *message = g_strdup_printf (
          "unknown log level '%s'; valid: error, warning, info, debug",
          log_level);
      weft_cli_usage_error (context, "run", message);
      return WEFT_EXIT_USAGE;
    }
  weft_log_setup (level);

  const char *scenario = argc == 2 ? argv[1] : NULL;
  if (scenario != NULL && !g_file_test (scenario, G_FILE_TEST_IS_REGULAR))
    {
      fprintf (stderr, "weft run: %s: no such scenario file\n", scenario);
      return WEFT_EXIT_USAGE;
    }

  printf ("weft run would simulate:\n"
          "  scenario  %s\n"
          "  workload  %s\n"
          "  fidelity  %s\n"
          "  seed      %" G_GINT64_FORMAT "\n"
          "  database  %s\n"
          "The scenario loader and network models are not part of this "
          "build yet, so nothing was simulated.\n",
          scenario ? scenario : DEFAULT_SCENARIO " (bundled)",
          scenario ? "the scenario's workload section"
                   : "all_reduce, 8 B to 8 GiB, factor 2",
          fidelity, seed, db);
  return WEFT_EXIT_OK;
}
