/* weft: the results database. */
#include "db-private.h"
#include "topology/faults.h"
#include "topology/tiers.h"

#include <sqlite3.h>
#include <string.h>
#include <unistd.h>

G_DEFINE_QUARK (weft-db-error-quark, weft_db_error)

/* Link bins are most of what a run writes, a million rows and more at
 * scale: they go in statements of this many rows, which SQLite takes in
 * a fraction of the time of as many statements of one. */
#define UTIL_BATCH 64

struct _WeftDb {
  sqlite3 *handle;
  char *path;
  sqlite3_stmt *insert_util;
  sqlite3_stmt *insert_utils;           /* UTIL_BATCH rows at once */
  sqlite3_stmt *insert_op;
  sqlite3_stmt *insert_rank;
  const volatile int *interrupt;        /* weft_db_set_interrupt()'s */
};

static const char schema[] =
  "CREATE TABLE IF NOT EXISTS runs ("
  "  id INTEGER PRIMARY KEY,"
  "  scenario TEXT NOT NULL,"
  "  scenario_sha256 TEXT NOT NULL,"
  "  fidelity TEXT NOT NULL,"
  "  seed INTEGER NOT NULL,"
  "  weft_version TEXT NOT NULL,"
  "  started_at TEXT NOT NULL,"
  "  wall_seconds REAL,"
  "  events INTEGER,"
  "  status TEXT NOT NULL CHECK (status IN"
  "    ('running', 'complete', 'interrupted', 'failed')),"
  "  command TEXT,"
  "  message TEXT);"
  "CREATE TABLE IF NOT EXISTS run_params ("
  "  run_id INTEGER NOT NULL REFERENCES runs(id),"
  "  key TEXT NOT NULL,"
  "  value TEXT NOT NULL,"
  "  PRIMARY KEY (run_id, key));"
  "CREATE INDEX IF NOT EXISTS run_params_by_key ON run_params (key, value);"
  "CREATE TABLE IF NOT EXISTS nodes ("
  "  run_id INTEGER NOT NULL REFERENCES runs(id),"
  "  id INTEGER NOT NULL,"
  "  name TEXT NOT NULL,"
  "  kind TEXT NOT NULL,"
  "  PRIMARY KEY (run_id, id));"
  "CREATE TABLE IF NOT EXISTS links ("
  "  run_id INTEGER NOT NULL REFERENCES runs(id),"
  "  id INTEGER NOT NULL,"
  "  name TEXT NOT NULL,"
  "  src_node INTEGER NOT NULL,"
  "  dst_node INTEGER NOT NULL,"
  "  type TEXT NOT NULL,"
  "  family TEXT NOT NULL,"
  "  lanes INTEGER NOT NULL,"
  "  bandwidth_Bps REAL NOT NULL,"
  "  latency_ps INTEGER NOT NULL,"
  "  tier TEXT,"                /* schema 3; NULL in older runs */
  "  PRIMARY KEY (run_id, id));"
  "CREATE TABLE IF NOT EXISTS faults ("  /* schema 4 */
  "  run_id INTEGER NOT NULL REFERENCES runs(id),"
  "  id INTEGER NOT NULL,"
  "  what TEXT NOT NULL,"
  "  speed REAL NOT NULL,"
  "  compute REAL NOT NULL,"
  "  links INTEGER NOT NULL,"
  "  gpus INTEGER NOT NULL,"
  "  from_ps INTEGER NOT NULL DEFAULT 0,"  /* schema 5 */
  "  until_ps INTEGER,"         /* NULL: to the end */
  "  PRIMARY KEY (run_id, id));"
  "CREATE TABLE IF NOT EXISTS link_util ("
  "  run_id INTEGER NOT NULL,"
  "  link_id INTEGER NOT NULL,"
  "  t0_ps INTEGER NOT NULL,"
  "  t1_ps INTEGER NOT NULL,"
  "  bytes INTEGER NOT NULL);"

  "CREATE TABLE IF NOT EXISTS rank_ops ("
  "  run_id INTEGER NOT NULL,"
  "  op_id INTEGER NOT NULL,"
  "  rank INTEGER NOT NULL,"
  "  node INTEGER NOT NULL,"
  "  start_ps INTEGER NOT NULL,"
  "  end_ps INTEGER NOT NULL,"
  "  PRIMARY KEY (run_id, op_id, rank));"
  "CREATE TABLE IF NOT EXISTS ops ("
  "  run_id INTEGER NOT NULL REFERENCES runs(id),"
  "  id INTEGER NOT NULL,"
  "  op TEXT NOT NULL,"
  "  algorithm TEXT NOT NULL,"
  "  protocol TEXT NOT NULL,"
  "  bytes INTEGER NOT NULL,"
  "  nranks INTEGER NOT NULL,"
  "  start_ps INTEGER NOT NULL,"
  "  end_ps INTEGER NOT NULL,"
  "  time_us REAL NOT NULL,"
  "  algbw_GBps REAL NOT NULL,"
  "  busbw_GBps REAL NOT NULL,"
  "  PRIMARY KEY (run_id, id));"
  /* Traces (schema 2): what each op is in the trace, and each rank's
   * step. */
  "CREATE TABLE IF NOT EXISTS trace_ops ("
  "  run_id INTEGER NOT NULL,"
  "  op_id INTEGER NOT NULL,"
  "  job TEXT NOT NULL,"
  "  name TEXT NOT NULL,"
  "  critical INTEGER NOT NULL,"
  "  critical_ps INTEGER,"         /* schema 6; NULL in older runs */
  "  PRIMARY KEY (run_id, op_id));"
  "CREATE TABLE IF NOT EXISTS trace_ranks ("
  "  run_id INTEGER NOT NULL,"
  "  job TEXT NOT NULL,"
  "  rank INTEGER NOT NULL,"
  "  node INTEGER NOT NULL,"
  "  step_ps INTEGER NOT NULL,"
  "  compute_ps INTEGER NOT NULL,"
  "  exposed_ps INTEGER NOT NULL,"
  "  PRIMARY KEY (run_id, job, rank));"
  /* Per link over a run: bytes, mean utilization over the run's span, peak
   * utilization of a bin. */
  "CREATE VIEW IF NOT EXISTS link_summary AS"
  "  SELECT l.run_id, l.id AS link_id, l.name, l.type, l.family,"
  "         l.bandwidth_Bps,"
  "         COALESCE(SUM(u.bytes), 0) AS bytes,"
  "         COALESCE(SUM(u.bytes), 0)"
  "           / (l.bandwidth_Bps * (s.span_ps * 1e-12)) AS mean_util,"
  "         MIN(1.0, COALESCE(MAX(u.bytes / (l.bandwidth_Bps"
  "                     * ((u.t1_ps - u.t0_ps) * 1e-12))), 0)) AS peak_util"
  "  FROM links l"
  "  JOIN (SELECT run_id, MAX(end_ps) - MIN(start_ps) AS span_ps FROM ops"
  "        GROUP BY run_id) s ON s.run_id = l.run_id"
  "  LEFT JOIN link_util u ON u.run_id = l.run_id AND u.link_id = l.id"
  "  GROUP BY l.run_id, l.id;"
  /* Utilization of each bin.  Bins hold whole bytes, so a full bin may
   * come to a byte more than bandwidth x width: that is shown as 1. */
  "CREATE VIEW IF NOT EXISTS link_util_ratio AS"
  "  SELECT u.run_id, u.link_id, u.t0_ps, u.t1_ps, u.bytes,"
  "         MIN(1.0, u.bytes / (l.bandwidth_Bps * ((u.t1_ps - u.t0_ps) * 1e-12)))"
  "           AS utilization"
  "  FROM link_util u JOIN links l ON l.run_id = u.run_id AND l.id = u.link_id;"
  "CREATE VIEW IF NOT EXISTS hottest_links AS"
  "  SELECT * FROM link_summary WHERE bytes > 0"
  "  ORDER BY run_id, mean_util DESC, link_id;";

static gboolean
fail (WeftDb *db, GError **error, const char *what)
{
  /* A statement stopped by the flag may have been reset since: the flag
   * says what stopped it. */
  gboolean stopped = sqlite3_errcode (db->handle) == SQLITE_INTERRUPT
                     || (db->interrupt && *db->interrupt);

  g_set_error (error, WEFT_DB_ERROR,
               stopped ? WEFT_DB_ERROR_INTERRUPTED : WEFT_DB_ERROR_IO,
               "%s: %s: %s", db->path, what, sqlite3_errmsg (db->handle));
  return FALSE;
}

/* SQLite's progress handler: a nonzero return stops the statement. */
static int
stop_if_set (void *flag)
{
  return *(const volatile int *) flag != 0;
}

void
weft_db_set_interrupt (WeftDb *db, const volatile int *flag)
{
  /* Every thousand virtual machine steps: a long write of link bins or
   * trace rows stops within microseconds of the flag. */
  db->interrupt = flag;
  sqlite3_progress_handler (db->handle, 1000, flag ? stop_if_set : NULL,
                            (void *) flag);
}

static gboolean
exec (WeftDb *db, const char *sql, GError **error)
{
  char *message = NULL;

  int rc = sqlite3_exec (db->handle, sql, NULL, NULL, &message);

  if (rc != SQLITE_OK)
    {
      g_set_error (error, WEFT_DB_ERROR,
                   rc == SQLITE_INTERRUPT || (db->interrupt && *db->interrupt)
                       ? WEFT_DB_ERROR_INTERRUPTED
                       : WEFT_DB_ERROR_IO,
                   "%s: %s", db->path, message ? message : "error");
      sqlite3_free (message);
      return FALSE;
    }
  return TRUE;
}

void
weft_db_close (WeftDb *db)
{
  if (db == NULL)
    return;
  sqlite3_finalize (db->insert_util);
  sqlite3_finalize (db->insert_utils);
  sqlite3_finalize (db->insert_op);
  sqlite3_finalize (db->insert_rank);
  sqlite3_close (db->handle);
  g_free (db->path);
  g_free (db);
}

sqlite3 *
weft_db_handle (WeftDb *db)
{
  return db->handle;
}

gboolean
weft_db_index (WeftDb *db, GError **error)
{
  /* link_util is written as a plain append, with no index to keep up;
   * readers build the index they need the first time.  A database they
   * may not write is read without it, only slower. */
  if (sqlite3_db_readonly (db->handle, "main") == 1)
    return TRUE;
  return exec (db, "CREATE INDEX IF NOT EXISTS link_util_by_link "
                   "ON link_util (run_id, link_id, t0_ps)", error);
}

/* The schema version of @db's file, or -1 with @error if it is not an
 * SQLite database.  Reading it touches the file: an unreadable or foreign
 * file is found out here, before any simulation. */
static int
schema_version (WeftDb *db, GError **error)
{
  sqlite3_stmt *st;
  int version = 0;

  if (sqlite3_prepare_v2 (db->handle, "PRAGMA user_version", -1, &st, NULL)
      != SQLITE_OK)
    {
      fail (db, error, "not an SQLite database");
      return -1;
    }
  if (sqlite3_step (st) == SQLITE_ROW)
    version = sqlite3_column_int (st, 0);
  sqlite3_finalize (st);
  if (version > WEFT_DB_SCHEMA_VERSION)
    {
      g_set_error (error, WEFT_DB_ERROR, WEFT_DB_ERROR_FOREIGN, "%s: a "
                   "database of schema "
                   "version %d, newer than this weft's %d", db->path, version,
                   WEFT_DB_SCHEMA_VERSION);
      return -1;
    }
  return version;
}

/* Whether @db's file is weft's own (of @version), or empty: weft writes
 * into no other program's database. */
static gboolean
own_or_empty (WeftDb *db, int version, GError **error)
{
  sqlite3_stmt *st;
  int tables = 0;

  if (version == 0)
    {
      if (sqlite3_prepare_v2 (db->handle, "SELECT count(*) FROM "
                              "sqlite_master", -1, &st, NULL) != SQLITE_OK)
        return fail (db, error, "not an SQLite database");
      if (sqlite3_step (st) == SQLITE_ROW)
        tables = sqlite3_column_int (st, 0);
      sqlite3_finalize (st);
      if (tables == 0)
        return TRUE;
    }
  /* weft's own has its runs table, column by column. */
  if (sqlite3_prepare_v2 (db->handle, "SELECT id, scenario, scenario_sha256, "
                          "fidelity, seed, weft_version, started_at, "
                          "wall_seconds, events, status, command, message "
                          "FROM runs LIMIT 0", -1, &st, NULL) == SQLITE_OK)
    {
      sqlite3_finalize (st);
      if (version > 0)
        return TRUE;
    }
  g_set_error (error, WEFT_DB_ERROR, WEFT_DB_ERROR_FOREIGN, "%s: not a weft "
               "results database "
               "(it holds another program's tables); name a new file with "
               "--db", db->path);
  return FALSE;
}

/* Bring the tables of a database of schema @version up to this weft's,
 * inside the transaction that opens it.  Schema 2 added the trace tables,
 * which the schema creates where they are missing; schema 3 each link's
 * tier, which runs recorded before it lack (NULL); schema 4 the faults
 * table, created the same way; schema 5 when each fault holds, which
 * faults recorded before it held all along (0 and NULL); schema 6 how long
 * each op of a trace's critical path held it up (NULL before). */
static gboolean
migrate (WeftDb *db, int version, GError **error)
{
  if (version >= 1 && version < 3 && !weft_db_has_tiers (db)
      && !exec (db, "ALTER TABLE links ADD COLUMN tier TEXT", error))
    return FALSE;
  if (version >= 1 && version < 5 && !weft_db_has_fault_times (db->handle)
      && !exec (db, "ALTER TABLE faults ADD COLUMN from_ps INTEGER NOT NULL "
                "DEFAULT 0; ALTER TABLE faults ADD COLUMN until_ps INTEGER",
                error))
    return FALSE;
  if (version >= 1 && version < 6 && !weft_db_has_critical_spans (db->handle)
      && !exec (db, "ALTER TABLE trace_ops ADD COLUMN critical_ps INTEGER",
                error))
    return FALSE;
  return TRUE;
}

/* Whether @sql prepares on @handle: whether the columns it names exist. */
static gboolean
prepares (sqlite3 *handle, const char *sql)
{
  sqlite3_stmt *st;

  if (sqlite3_prepare_v2 (handle, sql, -1, &st, NULL) != SQLITE_OK)
    return FALSE;
  sqlite3_finalize (st);
  return TRUE;
}

gboolean
weft_db_has_fault_times (sqlite3 *handle)
{
  return prepares (handle, "SELECT from_ps, until_ps FROM faults LIMIT 0");
}

gboolean
weft_db_has_critical_spans (sqlite3 *handle)
{
  return prepares (handle, "SELECT critical_ps FROM trace_ops LIMIT 0");
}

gboolean
weft_db_has_tiers (WeftDb *db)
{
  return prepares (db->handle, "SELECT tier FROM links LIMIT 0");
}

/* A statement inserting @rows rows of @columns values into @table, or
 * NULL. */
static sqlite3_stmt *
prepare_rows (WeftDb *db, const char *table, int columns, int rows)
{
  g_autoptr (GString) sql = g_string_new ("INSERT INTO ");
  sqlite3_stmt *st = NULL;

  g_string_append_printf (sql, "%s VALUES ", table);
  for (int r = 0; r < rows; r++)
    {
      g_string_append (sql, r ? ", (" : "(");
      for (int c = 0; c < columns; c++)
        g_string_append (sql, c ? ", ?" : "?");
      g_string_append_c (sql, ')');
    }
  if (sqlite3_prepare_v2 (db->handle, sql->str, -1, &st, NULL) != SQLITE_OK)
    return NULL;
  return st;
}

WeftDb *
weft_db_open (const char *path, GError **error)
{
  g_autoptr (WeftDb) db = g_new0 (WeftDb, 1);
  int version;

  db->path = g_strdup (path);
  /* A connection is used by one thread at a time: SQLite's own locking
   * of it (a mutex taken at every call) buys nothing. */
  if (sqlite3_open_v2 (path, &db->handle,
                       SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
                           | SQLITE_OPEN_NOMUTEX,
                       NULL)
      != SQLITE_OK)
    {
      fail (db, error, "cannot open the database");
      return NULL;
    }
  sqlite3_busy_timeout (db->handle, 5000);
  if ((version = schema_version (db, error)) < 0
      || !own_or_empty (db, version, error))
    return NULL;
  if (!exec (db, "PRAGMA journal_mode = DELETE; PRAGMA synchronous = NORMAL;",
             error)
      || !exec (db, "BEGIN IMMEDIATE", error))
    return NULL;
  if (!exec (db, schema, error) || !migrate (db, version, error)
      || !exec (db, "PRAGMA user_version = " G_STRINGIFY (WEFT_DB_SCHEMA_VERSION),
                error)
      || !exec (db, "COMMIT", error))
    {
      exec (db, "ROLLBACK", NULL);
      return NULL;
    }
  if ((db->insert_util = prepare_rows (db, "link_util", 5, 1)) == NULL
      || (db->insert_utils = prepare_rows (db, "link_util", 5, UTIL_BATCH))
             == NULL
      || sqlite3_prepare_v2 (db->handle,
                             "INSERT INTO ops (run_id, id, op, algorithm, "
                             "protocol, bytes, nranks, start_ps, end_ps, "
                             "time_us, algbw_GBps, busbw_GBps) VALUES "
                             "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                             -1, &db->insert_op, NULL) != SQLITE_OK
      || sqlite3_prepare_v2 (db->handle,
                             "INSERT INTO rank_ops VALUES (?, ?, ?, ?, ?, ?)",
                             -1, &db->insert_rank, NULL) != SQLITE_OK)
    {
      fail (db, error, "cannot prepare statements");
      return NULL;
    }
  return g_steal_pointer (&db);
}

WeftDb *
weft_db_open_existing (const char *path, GError **error)
{
  g_autoptr (WeftDb) db = g_new0 (WeftDb, 1);
  int version;

  db->path = g_strdup (path);
  if (!g_file_test (path, G_FILE_TEST_IS_REGULAR))
    {
      g_set_error (error, WEFT_DB_ERROR, WEFT_DB_ERROR_NO_DATA,
                   "%s: no such database", path);
      return NULL;
    }
  /* Read-only if that is all the file allows: reading needs no more. */
  int flags = access (path, W_OK) == 0 ? SQLITE_OPEN_READWRITE
                                       : SQLITE_OPEN_READONLY;
  if (sqlite3_open_v2 (path, &db->handle, flags | SQLITE_OPEN_NOMUTEX, NULL)
      != SQLITE_OK)
    {
      fail (db, error, "cannot open the database");
      return NULL;
    }
  sqlite3_busy_timeout (db->handle, 5000);
  if ((version = schema_version (db, error)) < 0
      || !own_or_empty (db, version, error))
    return NULL;
  if (version == 0)
    {
      g_set_error (error, WEFT_DB_ERROR, WEFT_DB_ERROR_NO_DATA,
                   "%s: the database holds no run",
                   path);
      return NULL;
    }
  return g_steal_pointer (&db);
}

int64_t
weft_db_begin_run (WeftDb *db, const WeftRunInfo *info, GError **error)
{
  sqlite3_stmt *st;
  g_autoptr (GDateTime) now = g_date_time_new_now_utc ();
  g_autofree char *started = g_date_time_format_iso8601 (now);
  int64_t id = 0;

  if (sqlite3_prepare_v2 (db->handle,
                          "INSERT INTO runs (scenario, scenario_sha256, "
                          "fidelity, seed, weft_version, started_at, status, "
                          "command) VALUES (?, ?, ?, ?, ?, ?, 'running', ?)",
                          -1, &st, NULL) != SQLITE_OK)
    {
      fail (db, error, "cannot record the run");
      return 0;
    }
  sqlite3_bind_text (st, 1, info->scenario, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text (st, 2, info->scenario_sha256, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text (st, 3, info->fidelity, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64 (st, 4, (sqlite3_int64) info->seed);
  sqlite3_bind_text (st, 5, WEFT_VERSION, -1, SQLITE_STATIC);
  sqlite3_bind_text (st, 6, started, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text (st, 7, info->command, -1, SQLITE_TRANSIENT);
  if (sqlite3_step (st) == SQLITE_DONE)
    id = sqlite3_last_insert_rowid (db->handle);
  else
    fail (db, error, "cannot record the run");
  sqlite3_finalize (st);
  return id;
}

/* Rows of nodes and links inserted by one statement: a large fabric has
 * millions, and a statement of many rows costs about as much to run as
 * one of a single row. */
#define TOPO_BATCH 32

/* Row @i of @n into @many (TOPO_BATCH rows) or, for the last rows that
 * fill no batch, @one: the statement to bind its @columns values in, and
 * the index of its first.  After the row's values are bound,
 * rows_step() runs the statement once it is full. */
static sqlite3_stmt *
row_in (sqlite3_stmt *many, sqlite3_stmt *one, uint32_t i, uint32_t n,
        int columns, int *first)
{
  gboolean batched = i < n - n % TOPO_BATCH;

  *first = batched ? (int) (i % TOPO_BATCH) * columns + 1 : 1;
  return batched ? many : one;
}

static gboolean
rows_step (sqlite3_stmt *st, sqlite3_stmt *many, uint32_t i)
{
  if (st == many && i % TOPO_BATCH != TOPO_BATCH - 1)
    return TRUE;
  gboolean ok = sqlite3_step (st) == SQLITE_DONE;
  sqlite3_reset (st);
  return ok;
}

gboolean
weft_db_write_topology (WeftDb *db, int64_t run, const WeftTopology *topo,
                        GError **error)
{
  sqlite3_stmt *node = NULL, *link = NULL, *fault = NULL;
  sqlite3_stmt *nodes = NULL, *links = NULL;
  gboolean ok = FALSE;
  g_autoptr (WeftTiers) tiers = weft_tiers_new (topo);

  if (!exec (db, "BEGIN", error))
    return FALSE;
  if ((node = prepare_rows (db, "nodes", 4, 1)) == NULL
      || (nodes = prepare_rows (db, "nodes", 4, TOPO_BATCH)) == NULL
      || (link = prepare_rows (db, "links", 11, 1)) == NULL
      || (links = prepare_rows (db, "links", 11, TOPO_BATCH)) == NULL
      || (fault = prepare_rows (db, "faults", 9, 1)) == NULL)
    goto out;
  for (uint32_t n = 0; n < topo->n_nodes; n++)
    {
      int c;
      sqlite3_stmt *st = row_in (nodes, node, n, topo->n_nodes, 4, &c);
      sqlite3_bind_int64 (st, c, run);
      sqlite3_bind_int64 (st, c + 1, n);
      sqlite3_bind_text (st, c + 2, topo->nodes[n].name, -1, SQLITE_STATIC);
      sqlite3_bind_text (st, c + 3, weft_node_kind_name (topo->nodes[n].kind),
                         -1, SQLITE_STATIC);
      if (!rows_step (st, nodes, n))
        goto out;
    }
  for (uint32_t l = 0; l < topo->n_links; l++)
    {
      const WeftLink *k = &topo->links[l];
      const WeftLinkType *t = g_ptr_array_index (topo->link_types, k->type);
      g_autofree char *name = g_strdup_printf ("%s->%s",
                                               topo->nodes[k->src].name,
                                               topo->nodes[k->dst].name);
      int c;
      sqlite3_stmt *st = row_in (links, link, l, topo->n_links, 11, &c);
      sqlite3_bind_int64 (st, c, run);
      sqlite3_bind_int64 (st, c + 1, l);
      sqlite3_bind_text (st, c + 2, name, -1, SQLITE_TRANSIENT);
      sqlite3_bind_int64 (st, c + 3, k->src);
      sqlite3_bind_int64 (st, c + 4, k->dst);
      sqlite3_bind_text (st, c + 5, t->name, -1, SQLITE_STATIC);
      sqlite3_bind_text (st, c + 6, weft_link_family_name (t->family), -1,
                         SQLITE_STATIC);
      sqlite3_bind_int64 (st, c + 7, k->lanes);
      sqlite3_bind_double (st, c + 8, k->bandwidth);
      sqlite3_bind_int64 (st, c + 9, (sqlite3_int64) k->latency);
      sqlite3_bind_text (st, c + 10, tiers->tiers[tiers->of_link[l]].name, -1,
                         SQLITE_STATIC);
      if (!rows_step (st, links, l))
        goto out;
    }
  for (guint f = 0; f < topo->faults->len; f++)
    {
      const WeftFault *k = g_ptr_array_index (topo->faults, f);
      sqlite3_bind_int64 (fault, 1, run);
      sqlite3_bind_int64 (fault, 2, f);
      sqlite3_bind_text (fault, 3, k->what, -1, SQLITE_STATIC);
      sqlite3_bind_double (fault, 4, k->share);
      sqlite3_bind_double (fault, 5, k->compute);
      sqlite3_bind_int64 (fault, 6, k->links);
      sqlite3_bind_int64 (fault, 7, k->gpus);
      sqlite3_bind_int64 (fault, 8, (sqlite3_int64) k->from);
      if (k->until == WEFT_FOREVER)
        sqlite3_bind_null (fault, 9);
      else
        sqlite3_bind_int64 (fault, 9, (sqlite3_int64) k->until);
      if (sqlite3_step (fault) != SQLITE_DONE)
        goto out;
      sqlite3_reset (fault);
    }
  ok = exec (db, "COMMIT", error);

out:
  if (!ok)
    {
      if (error && !*error)
        fail (db, error, "cannot record the topology");
      exec (db, "ROLLBACK", NULL);
    }
  sqlite3_finalize (node);
  sqlite3_finalize (nodes);
  sqlite3_finalize (link);
  sqlite3_finalize (links);
  sqlite3_finalize (fault);
  return ok;
}

typedef struct {
  WeftDb *db;
  int64_t run;
  uint32_t link;
  WeftTime start, end, width;
  gboolean ok;
  int n;                        /* rows in row[] */
  sqlite3_int64 row[UTIL_BATCH][4];     /* link, t0, t1, bytes */
} BinWriter;

/* Insert @w's rows: a whole batch in one statement, fewer one by one. */
static void
flush_bins (BinWriter *w)
{
  int per = w->n == UTIL_BATCH ? UTIL_BATCH : 1;
  sqlite3_stmt *st = per > 1 ? w->db->insert_utils : w->db->insert_util;

  for (int i = 0; w->ok && i < w->n;)
    {
      for (int k = 0; k < per; k++, i++)
        {
          sqlite3_bind_int64 (st, 5 * k + 1, w->run);
          for (int c = 0; c < 4; c++)
            sqlite3_bind_int64 (st, 5 * k + 2 + c, w->row[i][c]);
        }
      w->ok = sqlite3_step (st) == SQLITE_DONE;
      sqlite3_reset (st);
    }
  w->n = 0;
}

static void
write_bin (uint32_t bin, uint64_t bytes, void *user_data)
{
  BinWriter *w = user_data;
  WeftTime t0 = w->start + (WeftTime) bin * w->width;
  WeftTime t1 = MIN (t0 + w->width, w->end);

  if (t1 <= t0)
    t1 = t0 + 1;
  sqlite3_int64 *row = w->row[w->n++];
  row[0] = w->link;
  row[1] = (sqlite3_int64) t0;
  row[2] = (sqlite3_int64) t1;
  row[3] = (sqlite3_int64) bytes;
  if (w->n == UTIL_BATCH)
    flush_bins (w);
}

gboolean
weft_db_write_op (WeftDb *db, int64_t run, int64_t op_id, const WeftOpRow *op,
                  const WeftLinkStats *stats, const WeftTime *spans,
                  const uint32_t *nodes, uint32_t n_ranks, GError **error)
{
  sqlite3_stmt *st = db->insert_op;

  if (!exec (db, "BEGIN", error))
    return FALSE;
  sqlite3_bind_int64 (st, 1, run);
  sqlite3_bind_int64 (st, 2, op_id);
  sqlite3_bind_text (st, 3, op->op, -1, SQLITE_STATIC);
  sqlite3_bind_text (st, 4, op->algorithm, -1, SQLITE_STATIC);
  sqlite3_bind_text (st, 5, op->protocol, -1, SQLITE_STATIC);
  sqlite3_bind_int64 (st, 6, (sqlite3_int64) op->bytes);
  sqlite3_bind_int64 (st, 7, op->nranks);
  sqlite3_bind_int64 (st, 8, (sqlite3_int64) op->start);
  sqlite3_bind_int64 (st, 9, (sqlite3_int64) op->end);
  sqlite3_bind_double (st, 10, (op->end - op->start) / 1e6);
  sqlite3_bind_double (st, 11, op->algbw);
  sqlite3_bind_double (st, 12, op->busbw);
  gboolean ok = sqlite3_step (st) == SQLITE_DONE;
  sqlite3_reset (st);

  BinWriter w = { db, run, 0, op->start, op->end,
                  stats ? stats->bin_width : 0, ok, 0, { { 0 } } };
  for (uint32_t l = 0; stats && w.ok && l < stats->n_links; l++)
    {
      w.link = l;
      weft_link_stats_bins (stats, l, write_bin, &w);
    }
  flush_bins (&w);
  ok = w.ok;
  for (uint32_t r = 0; ok && spans && r < n_ranks; r++)
    {
      if (spans[2 * r] == WEFT_TIME_MAX)
        continue;               /* a rank with nothing to do */
      sqlite3_stmt *rk = db->insert_rank;
      sqlite3_bind_int64 (rk, 1, run);
      sqlite3_bind_int64 (rk, 2, op_id);
      sqlite3_bind_int64 (rk, 3, r);
      sqlite3_bind_int64 (rk, 4, nodes[r]);
      sqlite3_bind_int64 (rk, 5, (sqlite3_int64) (op->start + spans[2 * r]));
      sqlite3_bind_int64 (rk, 6, (sqlite3_int64) (op->start + spans[2 * r + 1]));
      ok = sqlite3_step (rk) == SQLITE_DONE;
      sqlite3_reset (rk);
    }
  if (ok)
    return exec (db, "COMMIT", error);
  fail (db, error, "cannot record an operation");
  exec (db, "ROLLBACK", NULL);
  return FALSE;
}

static gboolean
step_row (sqlite3_stmt *st)
{
  gboolean ok = sqlite3_step (st) == SQLITE_DONE;

  sqlite3_reset (st);
  return ok;
}

gboolean
weft_db_write_trace (WeftDb *db, int64_t run, const WeftTrace *t,
                     const WeftTraceResult *r, GError **error)
{
  sqlite3_stmt *top = NULL, *trk = NULL;
  gboolean ok;

  if (sqlite3_prepare_v2 (db->handle, "INSERT INTO trace_ops VALUES "
                          "(?, ?, ?, ?, ?, ?)", -1, &top, NULL) != SQLITE_OK
      || sqlite3_prepare_v2 (db->handle, "INSERT INTO trace_ranks VALUES "
                             "(?, ?, ?, ?, ?, ?, ?)", -1, &trk, NULL)
             != SQLITE_OK)
    {
      sqlite3_finalize (top);
      return fail (db, error, "cannot prepare statements");
    }
  ok = exec (db, "BEGIN", error);
  g_autofree uint8_t *critical = g_new0 (uint8_t, MAX (t->ops->len, 1));
  g_autofree WeftTime *held = g_new0 (WeftTime, MAX (t->ops->len, 1));
  for (guint k = 0; r->critical && k < r->critical->len; k++)
    {
      uint32_t i = g_array_index (r->critical, uint32_t, k);
      const WeftTime *span = &g_array_index (r->critical_span, WeftTime,
                                             2 * k);
      critical[i] = 1;
      held[i] += span[1] - span[0];
    }
  for (uint32_t i = 0; ok && i < t->ops->len; i++)
    {
      const WeftTraceOp *op = weft_trace_op (t, i);
      const WeftTraceJob *job = &g_array_index (t->jobs, WeftTraceJob,
                                                op->job);
      WeftTime start = WEFT_TIME_MAX, end = 0;
      for (uint32_t k = 0; k < op->n_ranks; k++)
        {
          start = MIN (start, r->start[op->first_rank + k]);
          end = MAX (end, r->end[op->first_rank + k]);
        }
      double seconds = (end - start) * 1e-12;
      double algbw = 0, busbw = 0;
      if (op->kind == WEFT_TRACE_COLLECTIVE && seconds > 0)
        {
          algbw = op->bytes / seconds / 1e9;
          busbw = algbw * weft_op_bus_factor (op->op, op->n_ranks);
        }
      else if (op->kind != WEFT_TRACE_COMPUTE
               && op->kind != WEFT_TRACE_SLEEP && seconds > 0)
        algbw = busbw = op->bytes / seconds / 1e9;
      sqlite3_stmt *st = db->insert_op;
      sqlite3_bind_int64 (st, 1, run);
      sqlite3_bind_int64 (st, 2, i);
      sqlite3_bind_text (st, 3, weft_trace_op_kind (op), -1, SQLITE_STATIC);
      sqlite3_bind_text (st, 4, r->algorithm[i] >= 0
                                    ? weft_algorithm_name (r->algorithm[i])
                                    : "", -1, SQLITE_STATIC);
      sqlite3_bind_text (st, 5, r->protocol[i] >= 0
                                    ? weft_protocol_name (r->protocol[i])
                                    : "", -1, SQLITE_STATIC);
      sqlite3_bind_int64 (st, 6, (sqlite3_int64) op->bytes);
      sqlite3_bind_int64 (st, 7, op->n_ranks);
      sqlite3_bind_int64 (st, 8, (sqlite3_int64) start);
      sqlite3_bind_int64 (st, 9, (sqlite3_int64) end);
      sqlite3_bind_double (st, 10, (end - start) / 1e6);
      sqlite3_bind_double (st, 11, algbw);
      sqlite3_bind_double (st, 12, busbw);
      ok = step_row (st);
      for (uint32_t k = 0; ok && k < op->n_ranks; k++)
        {
          uint32_t s = op->first_rank + k;
          uint32_t g = g_array_index (t->ranks, uint32_t, s);
          sqlite3_stmt *rk = db->insert_rank;
          sqlite3_bind_int64 (rk, 1, run);
          sqlite3_bind_int64 (rk, 2, i);
          sqlite3_bind_int64 (rk, 3, g - job->first_rank);
          sqlite3_bind_int64 (rk, 4, g_array_index (t->gpus, uint32_t, g));
          sqlite3_bind_int64 (rk, 5, (sqlite3_int64) r->start[s]);
          sqlite3_bind_int64 (rk, 6, (sqlite3_int64) r->end[s]);
          ok = step_row (rk);
        }
      sqlite3_bind_int64 (top, 1, run);
      sqlite3_bind_int64 (top, 2, i);
      sqlite3_bind_text (top, 3, job->name, -1, SQLITE_STATIC);
      sqlite3_bind_text (top, 4, op->name, -1, SQLITE_STATIC);
      sqlite3_bind_int (top, 5, critical[i]);
      if (critical[i])
        sqlite3_bind_int64 (top, 6, (sqlite3_int64) held[i]);
      else
        sqlite3_bind_null (top, 6);
      ok = ok && step_row (top);
    }
  for (guint j = 0; ok && j < t->jobs->len; j++)
    {
      const WeftTraceJob *job = &g_array_index (t->jobs, WeftTraceJob, j);
      for (uint32_t k = 0; ok && k < job->n_ranks; k++)
        {
          uint32_t g = job->first_rank + k;
          sqlite3_bind_int64 (trk, 1, run);
          sqlite3_bind_text (trk, 2, job->name, -1, SQLITE_STATIC);
          sqlite3_bind_int64 (trk, 3, k);
          sqlite3_bind_int64 (trk, 4, g_array_index (t->gpus, uint32_t, g));
          sqlite3_bind_int64 (trk, 5, (sqlite3_int64) r->step[g]);
          sqlite3_bind_int64 (trk, 6, (sqlite3_int64) r->compute[g]);
          sqlite3_bind_int64 (trk, 7, (sqlite3_int64) r->exposed[g]);
          ok = step_row (trk);
        }
    }
  const WeftLinkStats *stats = r->stats;
  BinWriter w = { db, run, 0, 0, r->time, stats ? stats->bin_width : 0, ok,
                  0, { { 0 } } };
  for (uint32_t l = 0; stats && stats->bin_width && w.ok && l < stats->n_links;
       l++)
    {
      w.link = l;
      weft_link_stats_bins (stats, l, write_bin, &w);
    }
  flush_bins (&w);
  ok = w.ok;
  sqlite3_finalize (top);
  sqlite3_finalize (trk);
  if (ok)
    return exec (db, "COMMIT", error);
  if (error && *error == NULL)
    fail (db, error, "cannot record the trace");
  exec (db, "ROLLBACK", NULL);
  return FALSE;
}

gboolean
weft_db_end_run (WeftDb *db, int64_t run, const char *status,
                 double wall_seconds, uint64_t events, GError **error)
{
  sqlite3_stmt *st;
  gboolean ok;

  /* The run's end is written whatever stopped it. */
  weft_db_set_interrupt (db, NULL);
  if (sqlite3_prepare_v2 (db->handle,
                          "UPDATE runs SET status = ?, wall_seconds = ?, "
                          "events = ? WHERE id = ?",
                          -1, &st, NULL) != SQLITE_OK)
    return fail (db, error, "cannot end the run");
  sqlite3_bind_text (st, 1, status, -1, SQLITE_STATIC);
  sqlite3_bind_double (st, 2, wall_seconds);
  sqlite3_bind_int64 (st, 3, (sqlite3_int64) events);
  sqlite3_bind_int64 (st, 4, run);
  ok = sqlite3_step (st) == SQLITE_DONE;
  sqlite3_finalize (st);
  return ok || fail (db, error, "cannot end the run");
}

gboolean
weft_db_set_params (WeftDb *db, int64_t run, const char *const *keys,
                    const char *const *values, guint n, GError **error)
{
  sqlite3_stmt *st;
  gboolean ok = TRUE;

  if (sqlite3_prepare_v2 (db->handle, "INSERT OR REPLACE INTO run_params "
                          "VALUES (?, ?, ?)", -1, &st, NULL) != SQLITE_OK)
    return fail (db, error, "cannot record parameters");
  for (guint i = 0; i < n && ok; i++)
    {
      sqlite3_bind_int64 (st, 1, run);
      sqlite3_bind_text (st, 2, keys[i], -1, SQLITE_TRANSIENT);
      sqlite3_bind_text (st, 3, values[i], -1, SQLITE_TRANSIENT);
      ok = sqlite3_step (st) == SQLITE_DONE;
      sqlite3_reset (st);
    }
  sqlite3_finalize (st);
  return ok || fail (db, error, "cannot record parameters");
}

int64_t
weft_db_find_point (WeftDb *db, const char *const *keys,
                    const char *const *values, guint n)
{
  return weft_db_find_run (db, keys, values, n, TRUE);
}

int64_t
weft_db_find_run (WeftDb *db, const char *const *keys,
                  const char *const *values, guint n, gboolean complete)
{
  GString *sql = g_string_new (complete ? "SELECT r.id FROM runs r WHERE "
                                          "r.status = 'complete'"
                                        : "SELECT r.id FROM runs r WHERE 1");
  sqlite3_stmt *st;
  int64_t found = 0;

  for (guint i = 0; i < n; i++)
    g_string_append_printf (sql, " AND EXISTS (SELECT 1 FROM run_params p "
                            "WHERE p.run_id = r.id AND p.key = ?%u AND "
                            "p.value = ?%u)", 2 * i + 1, 2 * i + 2);
  g_string_append_printf (sql, " AND (SELECT COUNT(*) FROM run_params p WHERE "
                          "p.run_id = r.id) = %u ORDER BY r.status = "
                          "'complete' DESC, r.id DESC LIMIT 1", n);
  if (sqlite3_prepare_v2 (db->handle, sql->str, -1, &st, NULL) == SQLITE_OK)
    {
      for (guint i = 0; i < n; i++)
        {
          sqlite3_bind_text (st, 2 * i + 1, keys[i], -1, SQLITE_TRANSIENT);
          sqlite3_bind_text (st, 2 * i + 2, values[i], -1, SQLITE_TRANSIENT);
        }
      if (sqlite3_step (st) == SQLITE_ROW)
        found = sqlite3_column_int64 (st, 0);
      sqlite3_finalize (st);
    }
  g_string_free (sql, TRUE);
  return found;
}

gboolean
weft_db_fail_run (WeftDb *db, int64_t run, const char *message,
                  GError **error)
{
  sqlite3_stmt *st;

  if (sqlite3_prepare_v2 (db->handle, "UPDATE runs SET status = 'failed', "
                          "message = ? WHERE id = ?", -1, &st, NULL)
      != SQLITE_OK)
    return fail (db, error, "cannot record a failed run");
  sqlite3_bind_text (st, 1, message, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64 (st, 2, run);
  gboolean ok = sqlite3_step (st) == SQLITE_DONE;
  sqlite3_finalize (st);
  if (!ok)
    return fail (db, error, "cannot record a failed run");
  return TRUE;
}

int64_t
weft_db_record_failed (WeftDb *db, const WeftRunInfo *info,
                       const char *message, GError **error)
{
  int64_t run = weft_db_begin_run (db, info, error);

  if (run == 0 || !weft_db_fail_run (db, run, message, error))
    return 0;
  return run;
}

/* Move every run of the database @shard into @db, with new ids; a run the
 * shard left `running` (its writer died) comes over as `interrupted`.  The
 * new ids are appended to @runs. */
gboolean
weft_db_merge (WeftDb *db, const char *shard, GArray *runs, GError **error)
{
  sqlite3_stmt *st = NULL;
  g_autoptr (GArray) old = g_array_new (FALSE, FALSE, sizeof (int64_t));
  char *sql;
  gboolean ok = FALSE;

  sql = sqlite3_mprintf ("ATTACH %Q AS shard", shard);
  ok = exec (db, sql, error);
  sqlite3_free (sql);
  if (!ok)
    return FALSE;
  ok = FALSE;
  if (!exec (db, "BEGIN IMMEDIATE", error))
    goto detach;
  if (sqlite3_prepare_v2 (db->handle, "SELECT id FROM shard.runs ORDER BY id",
                          -1, &st, NULL) != SQLITE_OK)
    goto rollback;
  while (sqlite3_step (st) == SQLITE_ROW)
    {
      int64_t id = sqlite3_column_int64 (st, 0);
      g_array_append_val (old, id);
    }
  sqlite3_finalize (st);
  for (guint i = 0; i < old->len; i++)
    {
      int64_t from = g_array_index (old, int64_t, i);
      sql = sqlite3_mprintf (
          "INSERT INTO runs (scenario, scenario_sha256, fidelity, seed, "
          "weft_version, started_at, wall_seconds, events, status, command, "
          "message) SELECT scenario, scenario_sha256, fidelity, seed, "
          "weft_version, started_at, wall_seconds, events, CASE status WHEN "
          "'running' THEN 'interrupted' ELSE status END, command, message "
          "FROM shard.runs WHERE id = %lld", (long long) from);
      ok = exec (db, sql, error);
      sqlite3_free (sql);
      if (!ok)
        goto rollback;
      int64_t to = sqlite3_last_insert_rowid (db->handle);
      sql = sqlite3_mprintf (
          "INSERT INTO nodes SELECT %lld, id, name, kind FROM shard.nodes "
          "WHERE run_id = %lld;"
          "INSERT INTO links SELECT %lld, id, name, src_node, dst_node, type, "
          "family, lanes, bandwidth_Bps, latency_ps, tier FROM shard.links "
          "WHERE "
          "run_id = %lld;"
          "INSERT INTO ops SELECT %lld, id, op, algorithm, protocol, bytes, "
          "nranks, start_ps, end_ps, time_us, algbw_GBps, busbw_GBps FROM "
          "shard.ops WHERE run_id = %lld;"
          "INSERT INTO rank_ops SELECT %lld, op_id, rank, node, start_ps, "
          "end_ps FROM shard.rank_ops WHERE run_id = %lld;"
          "INSERT INTO link_util SELECT %lld, link_id, t0_ps, t1_ps, bytes "
          "FROM shard.link_util WHERE run_id = %lld;"
          "INSERT INTO run_params SELECT %lld, key, value FROM "
          "shard.run_params WHERE run_id = %lld;"
          "INSERT INTO trace_ops SELECT %lld, op_id, job, name, critical, "
          "critical_ps FROM shard.trace_ops WHERE run_id = %lld;"
          "INSERT INTO trace_ranks SELECT %lld, job, rank, node, step_ps, "
          "compute_ps, exposed_ps FROM shard.trace_ranks WHERE run_id = %lld;"
          "INSERT INTO faults SELECT %lld, id, what, speed, compute, links, "
          "gpus, from_ps, until_ps FROM "
          "shard.faults WHERE run_id = %lld;",
          (long long) to, (long long) from,
          (long long) to, (long long) from, (long long) to, (long long) from,
          (long long) to, (long long) from, (long long) to, (long long) from,
          (long long) to, (long long) from, (long long) to, (long long) from,
          (long long) to, (long long) from, (long long) to, (long long) from);
      ok = exec (db, sql, error);
      sqlite3_free (sql);
      if (!ok)
        goto rollback;
      g_array_append_val (runs, to);
    }
  /* The shard gives up its runs in the same transaction (both files keep a
   * rollback journal, so SQLite commits the two together): a shard left
   * behind after this, by a sweep stopped before it could remove the
   * file, brings nothing in twice. */
  ok = exec (db, "DELETE FROM shard.runs", error) && exec (db, "COMMIT", error);
  if (!ok)
    goto rollback;
  goto detach;

rollback:
  if (error && !*error)
    fail (db, error, "cannot merge a shard");
  exec (db, "ROLLBACK", NULL);
  ok = FALSE;
detach:
  exec (db, "DETACH shard", NULL);
  return ok;
}

const char *
weft_db_sqlite_version (void)
{
  return sqlite3_libversion ();
}
