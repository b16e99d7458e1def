/* weft: a run's row in the results database, as weft run keeps it for a
 * sweep of sizes and for a trace's replay: begun before the first
 * simulation, so that a run stopped or failed part way is still there,
 * saying so. */
#pragma once

#include "db.h"

G_BEGIN_DECLS

typedef struct {
  WeftDb *db;
  const char *db_path;          /* as given, for messages */
  int64_t id;
  gint64 wall_start;            /* us, on g_get_monotonic_time()'s clock */
} WeftRecord;

/* Open the database at @db_path (NULL: weft.db) and begin a run in it:
 * @info's row, @topo's nodes and links, and @n parameters @keys =
 * @values; from then on *@interrupt stops any write.  Returns the exit
 * status: an unwritable path is a usage error, found before simulating;
 * a database that fails later, WEFT_EXIT_FAILURE (said on stderr); a
 * signal while the topology is written, 130 with the run marked
 * interrupted. */
int weft_record_begin (WeftRecord *rec, const char *db_path,
                       const WeftRunInfo *info, const WeftTopology *topo,
                       const char *const *keys, const char *const *values,
                       guint n, const volatile int *interrupt);

/* End the run with @status, as far as it got, and for a failed one @why
 * (may be NULL), the message the user was told.  For the ends that
 * already have an error to report: a failure here is not reported. */
void weft_record_end (const WeftRecord *rec, const char *status,
                      uint64_t events, const char *why);

/* A run stopped by SIGINT or SIGTERM: say where it is kept and mark it
 * interrupted.  Returns 130, the status of a command a SIGINT ended. */
int weft_record_interrupted (const WeftRecord *rec, uint64_t events);

void weft_record_clear (WeftRecord *rec);

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (WeftRecord, weft_record_clear)

G_END_DECLS
