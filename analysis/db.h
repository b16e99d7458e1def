/* weft: the results database (SQLite).  docs/database.md documents the
 * schema.  Everything is written with prepared statements inside
 * transactions; a run is marked `running` when it starts and `complete`,
 * `interrupted` or `failed` when it ends, so an interrupted run leaves a
 * database that says so. */
#pragma once

#include "network/link_stats.h"
#include "topology/topology.h"
#include "traces/trace_run.h"

G_BEGIN_DECLS

#define WEFT_DB_SCHEMA_VERSION 6

#define WEFT_DB_ERROR (weft_db_error_quark ())
GQuark weft_db_error_quark (void);

typedef enum {
  WEFT_DB_ERROR_IO,             /* SQLite could not open, read or write */
  WEFT_DB_ERROR_FOREIGN,        /* not a weft database this weft reads */
  WEFT_DB_ERROR_NO_DATA,        /* no such run, or nothing to show of it */
  WEFT_DB_ERROR_PLOT,           /* gnuplot failed */
  WEFT_DB_ERROR_INTERRUPTED,    /* stopped by weft_db_set_interrupt()'s
                                   flag, and rolled back */
} WeftDbError;

typedef struct _WeftDb WeftDb;

/* Open (creating if needed) the database at @path and bring its schema up
 * to date.  Fails, before anything is simulated, if the file cannot be
 * written, or holds another program's tables, or is a weft database of a
 * version this weft does not read. */
WeftDb *weft_db_open (const char *path, GError **error);

/* Open the existing weft database at @path to read it (reports, plots):
 * nothing is created or changed, and a file weft may not write is read
 * all the same.  Fails if there is no such file, or it is not a weft
 * database of a version this weft reads. */
WeftDb *weft_db_open_existing (const char *path, GError **error);
void weft_db_close (WeftDb *db);

typedef struct {
  const char *scenario;
  const char *scenario_sha256;
  const char *fidelity;
  uint64_t seed;
  const char *command;          /* the command line, for the record */
} WeftRunInfo;

/* From now on, stop any write as soon as *@flag is not 0 (a signal):
 * the write fails with WEFT_DB_ERROR_INTERRUPTED and what it had written
 * of its transaction is rolled back.  weft_db_end_run() still writes.
 * NULL: never stop. */
void weft_db_set_interrupt (WeftDb *db, const volatile int *flag);

/* Start a run: a row in `runs` with status `running`.  Returns its id, or
 * 0 with @error. */
int64_t weft_db_begin_run (WeftDb *db, const WeftRunInfo *info,
                           GError **error);

/* Record @topo's nodes and directed links for @run, each link with its
 * tier (topology/tiers.h). */
gboolean weft_db_write_topology (WeftDb *db, int64_t run,
                                 const WeftTopology *topo, GError **error);

typedef struct {
  const char *op, *algorithm, *protocol;
  uint64_t bytes;
  uint32_t nranks;
  WeftTime start, end;          /* ps, on the run's clock */
  double algbw, busbw;          /* GB/s */
} WeftOpRow;

/* Record one operation and the link bytes it caused: @stats (whose bins
 * start at the operation's own time 0) is shifted to op->start.  @spans
 * (2 per rank, from the operation's start; @n_ranks of them, rank r on node
 * @nodes[r]) go to rank_ops when not NULL. */
gboolean weft_db_write_op (WeftDb *db, int64_t run, int64_t op_id,
                           const WeftOpRow *op, const WeftLinkStats *stats,
                           const WeftTime *spans, const uint32_t *nodes,
                           uint32_t n_ranks, GError **error);

/* Record a replayed trace in one transaction: every op in ops (its kind,
 * algorithm and protocol as chosen, its span from the first rank reaching
 * it to the last finishing it), each (op, rank) in rank_ops (job ranks),
 * trace_ops (job, id, on the critical path), trace_ranks (step, compute
 * and exposed communication per rank) and link_util from @r->stats. */
gboolean weft_db_write_trace (WeftDb *db, int64_t run, const WeftTrace *t,
                              const WeftTraceResult *r, GError **error);

/* End @run with @status ("complete", "interrupted" or "failed"). */
gboolean weft_db_end_run (WeftDb *db, int64_t run, const char *status,
                          double wall_seconds, uint64_t events,
                          GError **error);

/* Record @n parameters (key, value) of @run (a sweep point). */
gboolean weft_db_set_params (WeftDb *db, int64_t run, const char *const *keys,
                             const char *const *values, guint n,
                             GError **error);

/* The first complete run whose parameters are exactly these @n pairs, or
 * 0. */
int64_t weft_db_find_point (WeftDb *db, const char *const *keys,
                            const char *const *values, guint n);

/* The run with exactly these @n parameters: a complete one if any, else
 * (unless @complete) the latest; 0 if none. */
int64_t weft_db_find_run (WeftDb *db, const char *const *keys,
                          const char *const *values, guint n,
                          gboolean complete);

/* Mark @run failed, with @message. */
gboolean weft_db_fail_run (WeftDb *db, int64_t run, const char *message,
                           GError **error);

/* Record a run that failed before it could start, with @message. */
int64_t weft_db_record_failed (WeftDb *db, const WeftRunInfo *info,
                               const char *message, GError **error);

/* Move every run of the database file @shard into @db, with new ids
 * (appended to @runs, int64_t): @db gains them and @shard loses them in
 * one transaction.  A run the shard left `running` comes over as
 * `interrupted`. */
gboolean weft_db_merge (WeftDb *db, const char *shard, GArray *runs,
                        GError **error);

/* Build the index that reports and plots read link_util by (kept out of
 * the way of writing). */
gboolean weft_db_index (WeftDb *db, GError **error);

/* The version of SQLite weft writes with. */
const char *weft_db_sqlite_version (void);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (WeftDb, weft_db_close)

G_END_DECLS
