/* weft: the results database's connection, for the queries of analysis/
 * (reports, plots, references) and for tests that read rows back.  Only
 * analysis/ talks to SQLite. */
#pragma once

#include "db.h"

#include <sqlite3.h>

G_BEGIN_DECLS

/* The raw connection, owned by @db. */
sqlite3 *weft_db_handle (WeftDb *db);

/* Whether @db's links table has the tier column (schema 3; a database of
 * an older weft opened only to be read lacks it). */
gboolean weft_db_has_tiers (WeftDb *db);
/* Whether the faults table says when each fault holds (schema 5). */
gboolean weft_db_has_fault_times (sqlite3 *handle);
/* Whether trace_ops says how long each op held up the critical path
 * (schema 6). */
gboolean weft_db_has_critical_spans (sqlite3 *handle);

G_END_DECLS
