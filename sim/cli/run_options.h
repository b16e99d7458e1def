/* weft: what `weft run` is asked to do, from its command line and the
 * scenario's workload: section, each value checked. */
#pragma once

#include <glib.h>

#include "collectives/collective.h"
#include "collectives/protocol.h"
#include "collectives/schedule_file.h"
#include "log.h"
#include "network/network.h"
#include "topology/scenario.h"

G_BEGIN_DECLS

/* How auto chooses among the candidates of a size. */
typedef enum {
  WEFT_SELECT_NCCL,             /* by NCCL's own estimate, simulating the
                                   one it picks */
  WEFT_SELECT_FASTEST,          /* by simulating each, keeping the fastest */
} WeftSelect;

/* The options of one `weft run`, every default filled in.  (Not
 * WeftRunOptions: that is what one simulation is run with.) */
typedef struct {
  const char *name;             /* the command: "run", for messages */
  char *command;                /* the command line, for the runs table */
  char *scenario_path;          /* as given, or the bundled DGX H100 */
  WeftScenario *scenario;       /* loaded, with the --set overrides */
  char *trace_path;             /* a trace to replay, or NULL: a sweep */
  char *db_path;                /* NULL: weft.db */
  char **params;                /* --param KEY=VALUE for run_params, or NULL */
  char *ranks;                  /* a GPU selector, or NULL: every GPU */
  char *alg_name;               /* as written, for messages; NULL: auto */
  char **algorithms;            /* --algorithm A,B,...: each name (auto or
                                   built-in), run one after another and
                                   printed side by side; NULL: one */
  WeftOp op;
  gboolean auto_alg;            /* try each algorithm auto may choose */
  WeftAlgorithm alg;            /* with a schedule file: ring, whose
                                   protocol costs it runs with */
  WeftScheduleFile *file;       /* --algorithm FILE, or NULL */
  gboolean auto_proto;          /* try each protocol */
  WeftSelect select;
  WeftProtocolKind proto;
  WeftFidelity fidelity;
  uint64_t min_bytes, max_bytes;/* the sweep's first and last size */
  uint64_t factor;              /* from one size to the next, at least 2 */
  uint64_t seed;
  uint32_t channels, chunks;    /* 0: auto */
  int jobs;                     /* simulations at once, 1 to 64 */
  uint64_t max_memory;          /* bytes a run may take; 0: what the
                                   machine has free */
  WeftTime bin_width;           /* ps; 0: widening within a budget */
  WeftLogLevel log_level;
  gboolean check;               /* plan only: simulate and record nothing */
  gboolean unchecked_data;      /* a schedule file runs without the check of
                                   what it computes */
  char *redop;                  /* the reduction operator, as printed */
  gboolean nccl_tests;          /* print nccl-tests' own table */
  gboolean verbose;             /* list each size's candidates */
} WeftRunArgs;

/* Fill @args from `weft run`'s @argv (argv[0] is "run"), the scenario it
 * names (loaded here, since its workload: section fills in what the flags
 * leave out) and the defaults.  Returns WEFT_EXIT_OK, or the exit status
 * once it has said on stderr what is wrong; --help exits.  @args is the
 * caller's to clear either way. */
int weft_run_args_parse (int argc, char **argv, WeftRunArgs *args);

/* Make @args run algorithm @name (auto or a built-in one, as a list of
 * --algorithm gives them). */
void weft_run_args_use_algorithm (WeftRunArgs *args, const char *name);

/* A command that runs a collective on a scenario as weft run does and
 * takes weft run's options, but those it leaves out.  Its inputs come
 * before the scenario, which it must be given. */
typedef struct {
  const char *name;             /* "compare" */
  const char *arguments;        /* as --help shows them: "LOG SCENARIO" */
  const char *summary, *examples;
  const char *const *left_out;  /* long names of weft run's options it does
                                   not take, NULL-terminated; or NULL */
  const GOptionEntry *own;      /* its own options, or NULL */
  int n_inputs;                 /* arguments before the scenario */
  /* Read the @n_inputs arguments @inputs, once the options are parsed,
   * into @data; set *@collective to weft's name of the collective they
   * ran (newly allocated).  Returns the exit status, once said what is
   * wrong. */
  int (*read_inputs) (char **inputs, char **collective, void *data);
  void *data;
} WeftRunCommand;

/* weft_run_args_parse() for the command @cmd (argv[0] is its name). */
int weft_run_args_parse_as (const WeftRunCommand *cmd, int argc, char **argv,
                            WeftRunArgs *args);

void weft_run_args_clear (WeftRunArgs *args);

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (WeftRunArgs, weft_run_args_clear)

G_END_DECLS
