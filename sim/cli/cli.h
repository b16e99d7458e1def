/* weft: the command line's shared pieces. */
#pragma once

#include <glib.h>

#include "network/network.h"
#include "topology/scenario.h"

G_BEGIN_DECLS

/* Exit statuses of the weft program. */
enum {
  WEFT_EXIT_OK = 0,
  WEFT_EXIT_FAILURE = 1,        /* the run itself failed */
  WEFT_EXIT_USAGE = 2,          /* bad input: options, files, values */
};

/* Parse @argv (argv[0] is the subcommand's name) with @context.  On an
 * unknown or malformed option print "weft CMD: what is wrong" and the
 * command's usage to stderr and return FALSE.  --help prints the full help
 * to stdout and exits 0, as GOptionContext does. */
gboolean weft_cli_parse (GOptionContext *context, const char *command,
                         int *argc, char ***argv);

/* Print "weft CMD: message" to stderr, and where to find CMD's options. */
void weft_cli_usage_error (const char *command, const char *message);

/* weft_cli_usage_error() with the message as printf() writes @format;
 * returns WEFT_EXIT_USAGE, so that a check of a value can end with
 * `return weft_cli_usage (...)`. */
int weft_cli_usage (const char *command, const char *format, ...)
  G_GNUC_PRINTF (2, 3);

/* `weft run --trace`: what the command line asked for. */
typedef struct {
  const char *scenario_path;
  const WeftScenario *scenario;
  const char *trace_path;
  WeftFidelity fidelity;
  uint64_t seed;
  uint32_t channels, chunks;
  int algorithm, protocol;      /* for collectives left to auto: a
                                   WeftAlgorithm / WeftProtocolKind, or -1 */
  const char *db_path;          /* NULL: weft.db */
  WeftTime bin_width;           /* 0: widening bins within a budget */
  const char *command;
  const volatile int *interrupted;
  void (*catch_signals) (void); /* from then on SIGINT and SIGTERM set
                                   *interrupted: called once the trace is
                                   read, as its run is recorded */
  int jobs;                     /* auto's candidates simulated at once */
  gboolean check;               /* read and check the trace, and stop */
  uint64_t max_memory;          /* bytes the replay may take; 0: what the
                                   machine has free */
} WeftTraceRun;

/* Replay a trace, print each job's ranks and the critical path, and record
 * it all in the database.  Returns the exit status. */
int weft_run_trace (const WeftTraceRun *run);

/* Open the existing results database at @path for `weft COMMAND`, or print
 * why not to stderr and return NULL. */
struct _WeftDb *weft_cli_open_db (const char *command, const char *path);

/* The commands.  Each takes argv from its own name on (argv[0] is "run"
 * for `weft run`), says on stderr what went wrong, and returns the exit
 * status. */
int weft_cmd_run (int argc, char **argv);
int weft_cmd_compare (int argc, char **argv);
int weft_cmd_topo (int argc, char **argv);
int weft_cmd_trace (int argc, char **argv);
int weft_cmd_params (int argc, char **argv);
int weft_cmd_report (int argc, char **argv);
int weft_cmd_plot (int argc, char **argv);
int weft_cmd_sweep (int argc, char **argv);

G_END_DECLS
