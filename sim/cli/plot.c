/* weft: the `weft plot` command. */
#include "cli.h"
#include "results.h"

#include <stdio.h>
#include <string.h>

/* What `weft plot` is asked to draw. */
typedef struct {
  gint64 run;                   /* G_MININT64 (not given): the latest */
  gint64 top;                   /* links in the busiest-links plot */
  char *out, *format;           /* NULL: plots, png */
  char *reference, *system;     /* measured busbw to overlay, or NULL */
  char *compare;                /* run ids, comma-separated, or NULL */
  char *x_key;                  /* a sweep parameter, or NULL */
  gboolean force;               /* replace pictures weft did not draw */
  const char *db_path;          /* in argv */
} PlotArgs;

static void
plot_args_clear (PlotArgs *args)
{
  g_free (args->out);
  g_free (args->format);
  g_free (args->reference);
  g_free (args->system);
  g_free (args->compare);
  g_free (args->x_key);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (PlotArgs, plot_args_clear)

/* Fill @args from `weft plot`'s @argv (argv[0] is "plot"), checking the
 * format and the number of links.  Returns WEFT_EXIT_OK, or
 * WEFT_EXIT_USAGE once it has said what is wrong; --help exits. */
static int
parse_options (int argc, char **argv, PlotArgs *args)
{
  GOptionEntry entries[] = {
    { "run", 0, 0, G_OPTION_ARG_INT64, &args->run,
      "The run to plot (default: the latest)", "ID" },
    { "compare", 0, 0, G_OPTION_ARG_STRING, &args->compare,
      "More runs to draw on the busbw plot, such as 2,3,4 (default: none)",
      "IDS" },
    { "out", 0, 0, G_OPTION_ARG_FILENAME, &args->out,
      "Directory the pictures go to (default: plots)", "DIR" },
    { "format", 0, 0, G_OPTION_ARG_STRING, &args->format,
      "png or svg (default: png)", "FMT" },
    { "reference", 0, 0, G_OPTION_ARG_FILENAME, &args->reference,
      "Measured busbw to overlay: nccl-tests' output saved to a file, or a "
      "CSV of docs/reference's columns (default: none)", "FILE" },
    { "system", 0, 0, G_OPTION_ARG_STRING, &args->system,
      "Which system of the CSV, by the start of its name (default: all rows)",
      "NAME" },
    { "top", 0, 0, G_OPTION_ARG_INT64, &args->top,
      "Links in the busiest-links plot (default: 8)", "N" },
    { "x", 0, 0, G_OPTION_ARG_STRING, &args->x_key,
      "Instead, busbw against this sweep parameter over every run that has "
      "it (default: none)", "KEY" },
    { "force", 0, 0, G_OPTION_ARG_NONE, &args->force,
      "Replace pictures in DIR that weft did not draw (default: only "
      "weft's own)", NULL },
    G_OPTION_ENTRY_NULL
  };
  g_autoptr (GOptionContext) context = g_option_context_new ("DB");

  g_option_context_set_description (context, "Examples:\n  weft plot weft.db --out plots\n  weft plot weft.db --run 1 --compare 2,3 --out cmp\n  weft plot weft.db --x algorithm          (after a sweep)");
  g_option_context_set_summary (
      context, "Draw a run's pictures with gnuplot: busbw and time against "
               "size, the link\nutilization heatmap, the busiest links over "
               "time, and each rank's\noperations on a timeline.  With "
               "--compare, each run's line names its\nscenario, GPUs, "
               "algorithm, protocol and sweep parameters.  Pictures are\n"
               "replaced only if weft drew them.");
  g_option_context_add_main_entries (context, entries, NULL);
  if (!weft_cli_parse (context, "plot", &argc, &argv))
    return WEFT_EXIT_USAGE;
  if (argc != 2)
    return weft_cli_usage ("plot", "expected one database");
  if (args->format && strcmp (args->format, "png") != 0
      && strcmp (args->format, "svg") != 0)
    return weft_cli_usage ("plot", "--format takes png or svg");
  if (args->top < 1 || args->top > 64)
    return weft_cli_usage ("plot", "--top takes 1 to 64");
  if (args->run == G_MININT64)
    args->run = 0;              /* weft_results_pick_run()'s latest */
  else if (args->run < 1)
    return weft_cli_usage ("plot", "--run takes a run's id, 1 or more "
                           "(left out: the latest run)");
  args->db_path = argv[1];
  return WEFT_EXIT_OK;
}

/* Busbw against a sweep parameter over every run that has it; prints
 * the picture's path.  Returns the exit status. */
static int
plot_sweep (const PlotArgs *args, WeftDb *db)
{
  g_autoptr (GError) error = NULL;
  WeftPlotOptions options = { args->out ? args->out : "plots",
                              args->format ? args->format : "png", NULL, NULL,
                              0, NULL, 0, args->force };
  g_autoptr (GPtrArray) written = g_ptr_array_new_with_free_func (g_free);

  if (!weft_results_plot_sweep (db, args->x_key, &options, written, &error))
    {
      fprintf (stderr, "weft plot: %s: %s\n", args->db_path, error->message);
      return WEFT_EXIT_USAGE;
    }
  printf ("%s\n", (char *) g_ptr_array_index (written, 0));
  return WEFT_EXIT_OK;
}

/* The runs of --compare, each of which must be in the database, into
 * @others.  FALSE once it has said which is not. */
static gboolean
compare_runs (const PlotArgs *args, WeftDb *db, GArray *others)
{
  g_auto (GStrv) ids = args->compare ? g_strsplit (args->compare, ",", -1)
                                     : NULL;

  for (int i = 0; ids && ids[i]; i++)
    {
      g_autoptr (GError) error = NULL;
      guint64 v;
      int64_t found;
      if (!g_ascii_string_to_unsigned (ids[i], 10, 1, G_MAXINT64, &v, NULL)
          || (found = weft_results_pick_run (db, (int64_t) v, &error)) == 0)
        {
          fprintf (stderr, "weft plot: --compare: '%s' is not a run of %s\n",
                   ids[i], args->db_path);
          return FALSE;
        }
      g_array_append_val (others, found);
    }
  return TRUE;
}

/* A run's pictures, with the runs to compare it with; prints each
 * picture's path.  Returns the exit status. */
static int
plot_run (const PlotArgs *args, WeftDb *db)
{
  g_autoptr (GError) error = NULL;
  int64_t id = weft_results_pick_run (db, args->run, &error);

  if (id == 0)
    {
      fprintf (stderr, "weft plot: %s: %s\n", args->db_path, error->message);
      return WEFT_EXIT_USAGE;
    }
  g_autoptr (GArray) others = g_array_new (FALSE, FALSE, sizeof (int64_t));
  if (!compare_runs (args, db, others))
    return WEFT_EXIT_USAGE;
  WeftPlotOptions options = { args->out ? args->out : "plots",
                              args->format ? args->format : "png",
                              args->reference, args->system, (int) args->top,
                              (const int64_t *) others->data, others->len,
                              args->force };
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

/* `weft plot`: read the options, find gnuplot and the database, draw.
 * Returns the exit status. */
int
weft_cmd_plot (int argc, char **argv)
{
  g_auto (PlotArgs) args = { .run = G_MININT64, .top = 8 };
  int status;

  if ((status = parse_options (argc, argv, &args)) != WEFT_EXIT_OK)
    return status;
  g_autofree char *gnuplot = g_find_program_in_path ("gnuplot");
  if (gnuplot == NULL)
    {
      fprintf (stderr, "weft plot: gnuplot is not installed; install the "
                       "Debian package gnuplot-nox\n");
      return WEFT_EXIT_USAGE;
    }
  g_autoptr (WeftDb) db = weft_cli_open_db ("plot", args.db_path);
  if (db == NULL)
    return WEFT_EXIT_USAGE;
  return args.x_key != NULL ? plot_sweep (&args, db) : plot_run (&args, db);
}
