/* weft: a collective simulated at a list of sizes on a scenario's GPUs,
 * and recorded in the results database, as `weft run` sweeps its sizes
 * and `weft compare` runs a log's: planned before the database is
 * touched, simulated size by size, then recorded. */
#pragma once

#include <glib.h>

#include "collectives/collective_run.h"
#include "record.h"
#include "run_options.h"

G_BEGIN_DECLS

/* Memory an estimate adds for what it does not count (the heap handed out
 * in huge pages, SQLite's page cache), for the process and for each
 * thread (its stack and arena). */
#define WEFT_MEMORY_ALLOWANCE ((size_t) 64 << 20)
#define WEFT_THREAD_ALLOWANCE ((size_t) 8 << 20)

/* What the options come to on the scenario: the ranks, the candidates
 * that can run there, and the sizes, all known before the database is
 * touched, so that a request that cannot run leaves nothing behind. */
typedef struct {
  GArray *gpus;                 /* the ranks' node ids, in rank order */
  uint32_t n;                   /* ranks */
  WeftCollectiveParams params;  /* channels and chunks */
  gboolean fits[WEFT_ALG_COUNT][WEFT_PROTOCOL_COUNT];
  int candidates;               /* (algorithm, protocol) pairs that fit */
  uint64_t *sizes;              /* bytes, in the order they run */
  int n_sizes;
  size_t memory;                /* bytes the run will take at most... */
  struct {
    size_t before;              /* ...the process before simulating (the
                                   program, the scenario, its topology) */
    size_t schedules;           /* the schedules and executors' images */
    size_t networks;            /* the simulations' networks and routes */
    size_t transfers;           /* their transfers in progress */
    size_t bins;                /* the link statistics */
    size_t uncounted;           /* the allowance for the heap's pages,
                                   threads and SQLite's cache */
  } parts;                      /* ...and what holds it */
  uint64_t bin_budget;          /* with --bin, the link bins the run may
                                   hold in all before they widen */
  uint64_t largest_steps;       /* the largest schedule's steps... */
  int largest_alg;              /* ...its algorithm (-1: a file)... */
  uint64_t largest_size;        /* ...and size */
  double file_moves;            /* a schedule file: the bytes it moves at
                                   the first size over what a
                                   bandwidth-optimal algorithm moves */
  int *pick;                    /* per size, the one pair simulated, or -1:
                                   each candidate is, and the fastest kept */
  double *hint;                 /* the same, with weft's own algorithms
                                   estimated as the algorithms whose costs
                                   they pay: the order they are tried in */
  double *estimate;             /* per size, WEFT_PAIRS of NCCL's estimates
                                   (us; below 0 where NCCL has none) */
} WeftSizesPlan;

/* The GPUs the run uses: all of them in declaration order, or those named
 * by @selector (a name pattern such as "node[0-3]/gpu[0-7]"), each a GPU
 * of the scenario, named once.  A collective needs two of them.  NULL
 * with @error otherwise. */
GArray *weft_sizes_select_ranks (const WeftTopology *topo,
                                 const char *selector, GError **error);

/* Plan @args's collective at the @n @sizes (bytes, at least one; copied):
 * the ranks (--ranks, or every GPU), whether their memory holds the
 * largest size twice, the candidates that fit, NCCL's estimate of each
 * and, with --select nccl, which one each size runs, and the memory the
 * run will take, which must fit --max-memory or what the machine has
 * free, into @plan (the caller's to clear).  Returns WEFT_EXIT_OK, or
 * WEFT_EXIT_USAGE after saying why the request cannot run. */
int weft_sizes_plan (const WeftRunArgs *args, const uint64_t *sizes, int n,
                     WeftSizesPlan *plan);

void weft_sizes_plan_clear (WeftSizesPlan *plan);

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (WeftSizesPlan, weft_sizes_plan_clear)

/* A size done: the candidate that ran it fastest, and its result. */
typedef struct {
  uint64_t size;
  int alg;                      /* WeftAlgorithm, or -1: the schedule file */
  int proto;
  WeftCollectiveResult result;  /* with its link bins and rank spans */
  int n_tried;                  /* the candidates simulated, each pair's
                                   time */
  int tried[WEFT_PAIRS];
  WeftTime time[WEFT_PAIRS];
  const double *estimate;       /* NCCL's, per pair (the plan's) */
  const double *hint;           /* the same, and for weft's own algorithms
                                   NCCL's of its ring or tree */
} WeftSizesRow;

/* What the sizes came to. */
typedef struct {
  GArray *rows;                 /* a WeftSizesRow per size done, in order */
  uint64_t events;              /* run over every simulation */
  int failed;                   /* a size could not run: the exit status */
  char *why;                    /* ...and why */
  gboolean interrupted;         /* stopped by SIGINT or SIGTERM */
} WeftSizesOutcome;

void weft_sizes_outcome_clear (WeftSizesOutcome *out);

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (WeftSizesOutcome, weft_sizes_outcome_clear)

/* Called with each size as soon as it is done, before the next. */
typedef void (*WeftSizesRowFn) (const WeftSizesRow *row, void *data);

/* From here on, SIGINT and SIGTERM set the flag weft_sizes_interrupt()
 * points to instead of ending the process, so that a run begun in the
 * database is marked interrupted. */
void weft_sizes_catch_signals (void);

/* The flag a signal sets once weft_sizes_catch_signals() was called. */
const volatile int *weft_sizes_interrupt (void);

/* Open the database and begin the run in it: its scenario, topology and
 * the --param KEY=VALUE pairs of weft sweep's point.  From then on a
 * signal marks the run interrupted (weft_sizes_catch_signals()); one
 * that came while it was begun is the exit status 130.  Returns the exit
 * status. */
int weft_sizes_record_begin (const WeftRunArgs *args, WeftRecord *rec);

/* Simulate @plan's sizes in order into @out (the caller's to clear),
 * calling @on_row (may be NULL) with each; a terminal is shown the
 * progress of a long run.  Stops at the first size that cannot run, or
 * at SIGINT or SIGTERM, which @out then says. */
void weft_sizes_run (const WeftRunArgs *args, const WeftSizesPlan *plan,
                     WeftSizesRowFn on_row, void *data,
                     WeftSizesOutcome *out);

/* Record what the sizes came to, and return the command's exit status: a
 * run that failed or was interrupted is marked so; a finished one gets
 * its operations (each row's link bins are freed as they are written)
 * and is marked complete. */
int weft_sizes_record_end (const WeftRunArgs *args, const WeftSizesPlan *plan,
                           WeftSizesOutcome *out, const WeftRecord *rec);

G_END_DECLS
