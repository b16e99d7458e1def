/* weft: what `weft sweep` is asked to do: its flags, its grids, and the
 * options of weft run it passes on to every point. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* One grid: a key (a scenario key, or an option of weft run) and its
 * values. */
typedef struct {
  char *key;
  char **values;
  guint n;
} WeftGrid;

void weft_grid_clear (WeftGrid *g);

/* Whether grid key @key is an option of weft run (passed to a point as
 * --KEY VALUE) rather than a scenario key (--set KEY=VALUE). */
gboolean weft_sweep_is_run_key (const char *key);

/* Options of `weft run` that a sweep passes on to every point. */
typedef struct {
  char *op, *algorithm, *protocol, *minbytes, *maxbytes, *ranks, *fidelity;
  char *bin, *channels, *chunks, *collective, *select;
  gint64 stepfactor, seed;
} WeftSweepFlags;

/* The options of @f that were given, as arguments of weft run, in a fixed
 * order; the caller frees the array. */
GPtrArray *weft_sweep_run_flags (const WeftSweepFlags *f);

typedef struct {
  char *path;                   /* the scenario */
  char *db_file;                /* the database, weft.db by default */
  char *db_path;                /* --db as given, or NULL */
  char **grid_specs;            /* KEY=V1,V2,...: --grid, or the scenario's
                                   sweep section */
  gint64 jobs;                  /* points at once (0: a core each) */
  WeftSweepFlags f;                   /* weft run's options, for every point */
  GArray *grids;                /* Grid, in the order given */
  guint total;                  /* points: every combination */
} WeftSweepArgs;

/* Fill @opts from `weft sweep`'s @argv (argv[0] is "sweep"): the flags,
 * the grids (from the scenario when no --grid is given) and the
 * defaults.  Returns WEFT_EXIT_OK, or WEFT_EXIT_USAGE once it has said on
 * stderr what is wrong; --help exits.  The values are checked against
 * the scenario later, by weft run --check. */
int weft_sweep_args_parse (int argc, char **argv, WeftSweepArgs *opts);

void weft_sweep_args_clear (WeftSweepArgs *opts);

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (WeftSweepArgs, weft_sweep_args_clear)

G_END_DECLS
