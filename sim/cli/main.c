/* weft: the program's entry point and its subcommands' dispatch. */
#include "cli.h"
#include "config.h"
#include "db.h"
#include "traces/chakra.h"
#include "log.h"
#include "memory.h"
#include "sim.h"

#include <stdio.h>

#ifdef WEFT_HAVE_MPI
#include <mpi.h>
#endif

typedef struct {
  const char *name;
  const char *summary;
  int (*main) (int argc, char **argv);
} Command;

static int cmd_help (int argc, char **argv);
static int cmd_version (int argc, char **argv);

static const Command commands[] = {
  { "run", "simulate a scenario's workload and print nccl-tests style timings",
    weft_cmd_run },
  { "compare", "simulate the sizes of an nccl-tests log, print weft's error "
    "at each", weft_cmd_compare },
  { "topo", "check a scenario and summarise its topology", weft_cmd_topo },
  { "sweep", "run every combination of values, points in parallel",
    weft_cmd_sweep },
  { "trace", "write a training job's trace (weft trace generate), or a "
    "trace as Chakra files (weft trace chakra)",
    weft_cmd_trace },
  { "report", "summarise a run of a results database", weft_cmd_report },
  { "plot", "draw a run's pictures with gnuplot", weft_cmd_plot },
  { "params", "list the parameters of link types and devices",
    weft_cmd_params },
  { "help", "show this overview, or a command's options (weft help CMD)",
    cmd_help },
  { "version", "print weft's version and the libraries it was built with",
    cmd_version },
};

/* The overview `weft help` prints: every command and what it does. */
static void
print_usage (FILE *out)
{
  fprintf (out,
           "Usage: weft COMMAND [OPTIONS...]\n"
           "\n"
           "weft simulates GPU interconnect fabrics: describe the hardware in "
           "YAML,\nrun collectives over it, read timings and per-link "
           "statistics.\n\nCommands:\n");
  for (guint i = 0; i < G_N_ELEMENTS (commands); i++)
    fprintf (out, "  %-10s %s\n", commands[i].name, commands[i].summary);
  fprintf (out, "\n'weft COMMAND --help' lists a command's options and their "
                "defaults.\n");
}

/* The command named @name, or NULL. */
static const Command *
find_command (const char *name)
{
  for (guint i = 0; i < G_N_ELEMENTS (commands); i++)
    if (g_strcmp0 (commands[i].name, name) == 0)
      return &commands[i];
  return NULL;
}

void
weft_cli_usage_error (const char *command, const char *message)
{
  /* The message alone: forty lines of options after it would push it off
   * a terminal's screen. */
  fprintf (stderr, "weft %s: %s\n'weft %s --help' lists its options.\n",
           command, message, command);
}

int
weft_cli_usage (const char *command, const char *format, ...)
{
  va_list ap;

  va_start (ap, format);
  g_autofree char *message = g_strdup_vprintf (format, ap);
  va_end (ap);
  weft_cli_usage_error (command, message);
  return WEFT_EXIT_USAGE;
}

gboolean
weft_cli_parse (GOptionContext *context, const char *command, int *argc,
                char ***argv)
{
  g_autoptr (GError) error = NULL;

  if (!g_option_context_parse (context, argc, argv, &error))
    {
      weft_cli_usage_error (command, error->message);
      return FALSE;
    }
  return TRUE;
}

/* The results database at @path, which must exist, or NULL after saying
 * why on stderr. */
WeftDb *
weft_cli_open_db (const char *command, const char *path)
{
  g_autoptr (GError) error = NULL;
  WeftDb *db = weft_db_open_existing (path, &error);

  if (db == NULL)
    fprintf (stderr, "weft %s: %s\n", command, error->message);
  return db;
}

/* `weft help [CMD]`: the overview, or CMD's options as `weft CMD --help`
 * prints them. */
static int
cmd_help (int argc, char **argv)
{
  if (argc > 2)
    {
      fprintf (stderr, "weft help: expected at most one command name\n\n");
      print_usage (stderr);
      return WEFT_EXIT_USAGE;
    }
  if (argc == 2 && (g_strcmp0 (argv[1], "--help") == 0
                    || g_strcmp0 (argv[1], "-h") == 0))
    {
      printf ("Usage:\n  weft help [COMMAND]\n\nThe overview of weft's "
              "commands, or COMMAND's options with their defaults\n(as "
              "'weft COMMAND --help').\n\nExamples:\n  weft help\n"
              "  weft help run\n");
      return WEFT_EXIT_OK;
    }
  if (argc == 2 && g_strcmp0 (argv[1], "help") != 0)
    {
      const Command *command = find_command (argv[1]);
      char *args[] = { argv[1], "--help", NULL };

      if (command == NULL)
        {
          fprintf (stderr, "weft help: unknown command '%s'\n\n", argv[1]);
          print_usage (stderr);
          return WEFT_EXIT_USAGE;
        }
      g_autofree char *prgname = g_strdup_printf ("weft %s", command->name);
      g_set_prgname (prgname);
      return command->main (2, args);
    }
  print_usage (stdout);
  return WEFT_EXIT_OK;
}

/* `weft version`: weft's version and what it was built with. */
static int
cmd_version (int argc, char **argv)
{
  GOptionEntry entries[] = { G_OPTION_ENTRY_NULL };
  g_autoptr (GOptionContext) context = g_option_context_new (NULL);

  g_option_context_set_summary (context, "Print weft's version and the "
                                "versions of the libraries it was built with.");
  g_option_context_set_description (context, "Examples:\n  weft version\n");
  g_option_context_add_main_entries (context, entries, NULL);
  if (!weft_cli_parse (context, "version", &argc, &argv))
    return WEFT_EXIT_USAGE;
  if (argc > 1)
    {
      weft_cli_usage_error ("version", "takes no arguments");
      return WEFT_EXIT_USAGE;
    }
  printf ("weft %s\n", WEFT_VERSION);
  printf ("GLib %u.%u.%u\n", glib_major_version, glib_minor_version,
          glib_micro_version);
  printf ("libyaml %s\n", weft_cfg_yaml_version ());
  printf ("SQLite %s\n", weft_db_sqlite_version ());
  printf ("protobuf-c %s\n", weft_chakra_protobuf_version ());
#ifdef WEFT_HAVE_MPI
  char mpi[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version (mpi, &len);
  mpi[MIN (len, MPI_MAX_LIBRARY_VERSION_STRING - 1)] = '\0';
  g_strdelimit (mpi, "\n", ' ');
  printf ("MPI: %s (weft sweep runs under mpirun or srun)\n",
          g_strchomp (mpi));
#else
  printf ("MPI: not built in (weft sweep runs on one machine)\n");
#endif
  /* gnuplot is a program weft runs, found at run time. */
  char *argv_gp[] = { "gnuplot", "--version", NULL };
  g_autofree char *gp = NULL;
  int status;
  if (g_spawn_sync (NULL, argv_gp, NULL,
                    G_SPAWN_SEARCH_PATH | G_SPAWN_STDERR_TO_DEV_NULL, NULL,
                    NULL, &gp, NULL, &status, NULL)
      && g_spawn_check_wait_status (status, NULL) && gp)
    printf ("%s\n", g_strstrip (gp));
  else
    printf ("gnuplot: not found (weft plot needs it: the Debian package "
            "gnuplot-nox)\n");
  return WEFT_EXIT_OK;
}

/* Run the command argv[1] names with the rest of argv; --help and
 * --version are the commands of those names. */
int
main (int argc, char **argv)
{
  g_set_prgname ("weft");
  weft_log_setup (WEFT_LOG_WARNING);
  weft_memory_tune ();

  if (argc < 2)
    {
      fprintf (stderr, "weft: no command given\n\n");
      print_usage (stderr);
      return WEFT_EXIT_USAGE;
    }

  const char *name = argv[1];
  if (g_strcmp0 (name, "--help") == 0 || g_strcmp0 (name, "-h") == 0)
    name = "help";
  else if (g_strcmp0 (name, "--version") == 0)
    name = "version";

  const Command *command = find_command (name);
  if (command == NULL)
    {
      fprintf (stderr, "weft: unknown command '%s'\n\n", argv[1]);
      print_usage (stderr);
      return WEFT_EXIT_USAGE;
    }
  g_autofree char *prgname = g_strdup_printf ("weft %s", command->name);
  g_set_prgname (prgname);
  return command->main (argc - 1, argv + 1);
}
