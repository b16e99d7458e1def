/* weft: the `weft report` command. */
#include "cli.h"
#include "results.h"

#include <stdio.h>
#include <string.h>

int
weft_cmd_report (int argc, char **argv)
{
  gint64 run = 0, top = 10;
  GOptionEntry entries[] = {
    { "run", 0, 0, G_OPTION_ARG_INT64, &run,
      "The run to report (default: the latest)", "ID" },
    { "top", 0, 0, G_OPTION_ARG_INT64, &top,
      "How many of the busiest links to list (default: 10)", "N" },
    G_OPTION_ENTRY_NULL
  };
  g_autoptr (GOptionContext) context = g_option_context_new ("DB");
  g_autoptr (GError) error = NULL;

  g_option_context_set_summary (context, "Summarise a run of a results "
                                "database: its operations as nccl-tests\n"
                                "prints them (for a trace: each job's step, "
                                "the ops by kind and\nthe critical path), "
                                "the busiest links, and where the time went.");
  g_option_context_add_main_entries (context, entries, NULL);
  if (!weft_cli_parse (context, "report", &argc, &argv))
    return WEFT_EXIT_USAGE;
  if (argc != 2)
    {
      weft_cli_usage_error ("report", "expected one database");
      return WEFT_EXIT_USAGE;
    }
  if (top < 1 || top > 10000)
    {
      weft_cli_usage_error ("report", "--top takes 1 to 10000");
      return WEFT_EXIT_USAGE;
    }
  g_autoptr (WeftDb) db = weft_cli_open_db ("report", argv[1]);
  if (db == NULL)
    return WEFT_EXIT_USAGE;
  int64_t id = weft_results_pick_run (db, run, &error);
  if (id == 0)
    {
      fprintf (stderr, "weft report: %s: %s\n", argv[1], error->message);
      return WEFT_EXIT_USAGE;
    }
  if (!weft_results_report (db, id, (int) top, stdout, &error))
    {
      fprintf (stderr, "weft report: %s\n", error->message);
      return WEFT_EXIT_FAILURE;
    }
  return WEFT_EXIT_OK;
}
