/* weft: the `weft plot` command. */
#include "cli.h"
#include "results.h"

#include <stdio.h>
#include <string.h>

int
weft_cmd_plot (int argc, char **argv)
{
  gint64 run = 0, top = 8;
  g_autofree char *out = NULL, *format = NULL, *reference = NULL;
  g_autofree char *system = NULL, *compare = NULL, *x_key = NULL;
  gboolean force = FALSE;
  GOptionEntry entries[] = {
    { "run", 0, 0, G_OPTION_ARG_INT64, &run,
      "The run to plot (default: the latest)", "ID" },
    { "compare", 0, 0, G_OPTION_ARG_STRING, &compare,
      "More runs to draw on the busbw plot, such as 2,3,4 (default: none)",
      "IDS" },
    { "out", 0, 0, G_OPTION_ARG_FILENAME, &out,
      "Directory the pictures go to (default: plots)", "DIR" },
    { "format", 0, 0, G_OPTION_ARG_STRING, &format,
      "png or svg (default: png)", "FMT" },
    { "reference", 0, 0, G_OPTION_ARG_FILENAME, &reference,
      "A measured nccl-tests CSV to overlay on busbw (default: none)", "CSV" },
    { "system", 0, 0, G_OPTION_ARG_STRING, &system,
      "Which system of the CSV, by the start of its name (default: all rows)",
      "NAME" },
    { "top", 0, 0, G_OPTION_ARG_INT64, &top,
      "Links in the busiest-links plot (default: 8)", "N" },
    { "x", 0, 0, G_OPTION_ARG_STRING, &x_key,
      "Instead, busbw against this sweep parameter over every run that has "
      "it (default: none)", "KEY" },
    { "force", 0, 0, G_OPTION_ARG_NONE, &force,
      "Replace pictures in DIR that weft did not draw (default: only "
      "weft's own)", NULL },
    G_OPTION_ENTRY_NULL
  };
  g_autoptr (GOptionContext) context = g_option_context_new ("DB");
  g_autoptr (GError) error = NULL;

  g_option_context_set_summary (
      context, "Draw a run's pictures with gnuplot: busbw against size, the "
               "link\nutilization heatmap, the busiest links over time, and "
               "each rank's\noperations on a timeline.  Pictures are replaced "
               "only if weft drew them.");
  g_option_context_add_main_entries (context, entries, NULL);
  if (!weft_cli_parse (context, "plot", &argc, &argv))
    return WEFT_EXIT_USAGE;
  if (argc != 2)
    {
      weft_cli_usage_error ("plot", "expected one database");
      return WEFT_EXIT_USAGE;
    }
  if (format && strcmp (format, "png") != 0 && strcmp (format, "svg") != 0)
    {
      weft_cli_usage_error ("plot", "--format takes png or svg");
      return WEFT_EXIT_USAGE;
    }
  if (top < 1 || top > 64)
    {
      weft_cli_usage_error ("plot", "--top takes 1 to 64");
      return WEFT_EXIT_USAGE;
    }
  g_autofree char *gnuplot = g_find_program_in_path ("gnuplot");
  if (gnuplot == NULL)
    {
      fprintf (stderr, "weft plot: gnuplot is not installed; install the "
                       "Debian package gnuplot-nox\n");
      return WEFT_EXIT_USAGE;
    }
  g_autoptr (WeftDb) db = weft_cli_open_db ("plot", argv[1]);
  if (db == NULL)
    return WEFT_EXIT_USAGE;
  if (x_key != NULL)
    {
      WeftPlotOptions options = { out ? out : "plots",
                                  format ? format : "png", NULL, NULL, 0,
                                  NULL, 0, force };
      g_autoptr (GPtrArray) written = g_ptr_array_new_with_free_func (g_free);
      if (!weft_results_plot_sweep (db, x_key, &options, written, &error))
        {
          fprintf (stderr, "weft plot: %s: %s\n", argv[1], error->message);
          return WEFT_EXIT_USAGE;
        }
      printf ("%s\n", (char *) g_ptr_array_index (written, 0));
      return WEFT_EXIT_OK;
    }
  int64_t id = weft_results_pick_run (db, run, &error);
  if (id == 0)
    {
      fprintf (stderr, "weft plot: %s: %s\n", argv[1], error->message);
      return WEFT_EXIT_USAGE;
    }
  g_autoptr (GArray) others = g_array_new (FALSE, FALSE, sizeof (int64_t));
  g_auto (GStrv) ids = compare ? g_strsplit (compare, ",", -1) : NULL;
  for (int i = 0; ids && ids[i]; i++)
    {
      guint64 v;
      int64_t found;
      if (!g_ascii_string_to_unsigned (ids[i], 10, 1, G_MAXINT64, &v, NULL)
          || (found = weft_results_pick_run (db, (int64_t) v, &error)) == 0)
        {
          fprintf (stderr, "weft plot: --compare: '%s' is not a run of %s\n",
                   ids[i], argv[1]);
          return WEFT_EXIT_USAGE;
        }
      g_array_append_val (others, found);
    }
  WeftPlotOptions options = { out ? out : "plots", format ? format : "png",
                              reference, system, (int) top,
                              (const int64_t *) others->data, others->len,
                              force };
  g_autoptr (GPtrArray) written = g_ptr_array_new_with_free_func (g_free);
  if (!weft_results_plot (db, id, &options, written, &error))
    {
      fprintf (stderr, "weft plot: %s\n", error->message);
      /* Only gnuplot's own failures are not the input's. */
      return g_error_matches (error, WEFT_DB_ERROR, WEFT_DB_ERROR_PLOT)
                 ? WEFT_EXIT_FAILURE
                 : WEFT_EXIT_USAGE;
    }
  for (guint i = 0; i < written->len; i++)
    printf ("%s\n", (char *) g_ptr_array_index (written, i));
  return WEFT_EXIT_OK;
}
