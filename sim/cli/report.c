/* weft: the `weft report` command. */
#include "cli.h"
#include "results.h"

#include <stdio.h>
#include <string.h>

/* What `weft report` is asked to summarise. */
typedef struct {
  gint64 run;                   /* G_MININT64 (not given): the latest */
  gint64 top;                   /* busiest links listed */
  const char *db_path;          /* in argv */
} ReportArgs;

/* Fill @args from `weft report`'s @argv (argv[0] is "report").  Returns
 * WEFT_EXIT_OK, or WEFT_EXIT_USAGE once it has said what is wrong; --help
 * exits. */
static int
parse_options (int argc, char **argv, ReportArgs *args)
{
  GOptionEntry entries[] = {
    { "run", 0, 0, G_OPTION_ARG_INT64, &args->run,
      "The run to report (default: the latest)", "ID" },
    { "top", 0, 0, G_OPTION_ARG_INT64, &args->top,
      "How many of the busiest links to list (default: 10)", "N" },
    G_OPTION_ENTRY_NULL
  };
  g_autoptr (GOptionContext) context = g_option_context_new ("DB");

  g_option_context_set_description (context, "Examples:\n  weft report weft.db\n  weft report weft.db --run 3 --top 20");
  g_option_context_set_summary (context, "Summarise a run of a results "
                                "database: its operations as nccl-tests\n"
                                "prints them (for a trace: each job's step, "
                                "the ops by kind and\nthe critical path), "
                                "the busiest links, where the time went, and "
                                "how busy\neach family and tier of links "
                                "was.");
  g_option_context_add_main_entries (context, entries, NULL);
  if (!weft_cli_parse (context, "report", &argc, &argv))
    return WEFT_EXIT_USAGE;
  if (argc != 2)
    return weft_cli_usage ("report", "expected one database");
  if (args->top < 1 || args->top > 10000)
    return weft_cli_usage ("report", "--top takes 1 to 10000");
  if (args->run == G_MININT64)
    args->run = 0;              /* weft_results_pick_run()'s latest */
  else if (args->run < 1)
    return weft_cli_usage ("report", "--run takes a run's id, 1 or more "
                           "(left out: the latest run)");
  args->db_path = argv[1];
  return WEFT_EXIT_OK;
}

/* `weft report`: read the options, open the database, report the run.
 * Returns the exit status. */
int
weft_cmd_report (int argc, char **argv)
{
  ReportArgs args = { .run = G_MININT64, .top = 10 };
  g_autoptr (GError) error = NULL;
  int status;

  if ((status = parse_options (argc, argv, &args)) != WEFT_EXIT_OK)
    return status;
  g_autoptr (WeftDb) db = weft_cli_open_db ("report", args.db_path);
  if (db == NULL)
    return WEFT_EXIT_USAGE;
  int64_t id = weft_results_pick_run (db, args.run, &error);
  if (id == 0)
    {
      fprintf (stderr, "weft report: %s: %s\n", args.db_path, error->message);
      return WEFT_EXIT_USAGE;
    }
  if (!weft_results_report (db, id, (int) args.top, stdout, &error))
    {
      fprintf (stderr, "weft report: %s\n", error->message);
      return WEFT_EXIT_FAILURE;
    }
  return WEFT_EXIT_OK;
}
