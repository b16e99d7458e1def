/* Tests of the results database, weft report and weft plot. */
#include "collectives/collective_run.h"
#include "db-private.h"
#include "nccl_log.h"
#include "reference.h"
#include "results_cmd.h"
#include "topology/scenario.h"

#include <check.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define SCENARIOS WEFT_SOURCE_DIR "/scenarios"

START_TEST (test_bins_add_up_to_link_bytes)
{
  /* Record one all_reduce with its link statistics; every link's bins add
   * up to exactly the bytes the network model carried over it, and no bin
   * is fuller than its link can carry. */
  g_autofree char *path = g_build_filename (tmp_dir, "a.db", NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (WeftDb) db = weft_db_open (path, &error);
  ck_assert_msg (db != NULL, "%s", error ? error->message : "");
  g_autoptr (WeftScenario) s = weft_scenario_load (SCENARIOS "/dgx-h100.yaml",
                                                   NULL);
  g_autoptr (GArray) gpus = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  for (uint32_t n = 0; n < s->topo->n_nodes; n++)
    if (s->topo->nodes[n].kind == WEFT_NODE_GPU)
      g_array_append_val (gpus, n);

  WeftRunInfo info = { "dgx-h100.yaml", s->sha256, "flow", 1, "test" };
  int64_t run = weft_db_begin_run (db, &info, &error);
  ck_assert (run > 0);
  ck_assert (weft_db_write_topology (db, run, s->topo, &error));
  WeftCollectiveParams params = { 1, 8, 0, NULL, 1, NULL, NULL, 0, FALSE, NULL };
  WeftRunOptions options = { WEFT_FIDELITY_FLOW, 1, 7 * WEFT_US, NULL, FALSE, 0, 0, NULL, 1, NULL };
  WeftCollectiveResult r;
  ck_assert (weft_collective_run (s->topo, (uint32_t *) gpus->data, 8,
                                  WEFT_OP_ALL_REDUCE, WEFT_ALG_RING,
                                  WEFT_PROTOCOL_SIMPLE, 64 << 20, &params,
                                  &options, &r, &error));
  WeftOpRow op = { "all_reduce", "ring", "Simple", 64 << 20, 8, 1000,
                   1000 + r.time, 1, 2 };
  ck_assert (weft_db_write_op (db, run, 0, &op, r.stats, r.spans,
                               (uint32_t *) gpus->data, r.n_spans, &error));
  ck_assert (weft_db_end_run (db, run, "complete", 0.1, r.events, &error));

  sqlite3 *h = weft_db_handle (db);
  uint64_t carried = 0;
  for (uint32_t l = 0; l < s->topo->n_links; l++)
    {
      g_autofree char *sql = g_strdup_printf (
          "SELECT COALESCE(SUM(bytes), 0) FROM link_util WHERE run_id = %"
          G_GINT64_FORMAT " AND link_id = %u", run, l);
      ck_assert_uint_eq ((uint64_t) scalar (h, sql), r.stats->links[l].bytes);
      carried += r.stats->links[l].bytes;
    }
  ck_assert_uint_gt (carried, 0);
  /* Utilization of any bin: at most one byte over the link's capacity. */
  ck_assert_int_eq (scalar (h, "SELECT COUNT(*) FROM link_util u JOIN links l "
                               "ON l.run_id = u.run_id AND l.id = u.link_id "
                               "WHERE u.bytes > l.bandwidth_Bps * (u.t1_ps - "
                               "u.t0_ps) * 1e-12 + 1"), 0);
  /* Bins start at the operation's start, a bin width apart (the first
   * bytes move after NCCL's base and per-send latencies, in bin 1). */
  ck_assert_int_eq (scalar (h, "SELECT COUNT(*) FROM link_util WHERE t0_ps < "
                               "1000 OR (t0_ps - 1000) % 7000000 != 0"), 0);
  ck_assert_int_eq (scalar (h, "SELECT COUNT(*) FROM links"),
                    s->topo->n_links);
  g_autofree char *status = text (h, "SELECT status FROM runs");
  ck_assert_str_eq (status, "complete");
  ck_assert_int_eq (scalar (h, "PRAGMA user_version"), WEFT_DB_SCHEMA_VERSION);
  /* Every rank took part, within the operation. */
  ck_assert_int_eq (scalar (h, "SELECT COUNT(*) FROM rank_ops WHERE start_ps "
                               ">= 1000 AND end_ps <= (SELECT end_ps FROM ops) "
                               "AND end_ps > start_ps"), 8);
  weft_link_stats_free (r.stats);
  g_free (r.spans);
}
END_TEST

/* Each query of @tables (with %d for the run id) gives the same rows for
 * runs 1 and 2. */
static void
assert_runs_alike (sqlite3 *h, const char *const *tables, guint n)
{
  for (guint t = 0; t < n; t++)
    {
      g_autofree char *one = g_strdup_printf (tables[t], 1);
      g_autofree char *two = g_strdup_printf (tables[t], 2);
      g_autofree char *sql = g_strdup_printf (
          "SELECT (SELECT COUNT(*) FROM (%s EXCEPT %s)) + "
          "(SELECT COUNT(*) FROM (%s EXCEPT %s))", one, two, two, one);
      ck_assert_msg (scalar (h, sql) == 0, "%s", one);
    }
}

START_TEST (test_same_seed_same_rows)
{
  /* Run on one thread, then three at once (auto's candidates of a size,
   * or with one algorithm and protocol the sizes, finishing in whatever
   * order the machine's cores run them): the same table, the same rows,
   * the same events counted. */
  const char *jobs[] = { "1", "3" };
  const char *dbs[] = { "x.db", "y.db" };
  for (int w = 0; w < 2; w++)
    {
      g_autofree char *first = NULL;
      for (int i = 0; i < 2; i++)
        {
          const char *a[] = { "run", "--db", dbs[w], "-b", "1K", "-e", "64M",
                              "-f", "4", "--jobs", jobs[i],
                              w ? "--algorithm" : NULL, "ring",
                              "--protocol", "Simple", NULL };
          Result r = weft_cmd (a);
          ck_assert_int_eq (r.status, 0);
          if (first == NULL)
            first = g_strdup (r.out);
          else
            ck_assert_str_eq (r.out, first);
          result_clear (&r);
        }
      sqlite3 *h = open_db (dbs[w]);
      ck_assert_int_eq (scalar (h, "SELECT COUNT(*) FROM runs WHERE status = "
                                   "'complete'"), 2);
      ck_assert_int_eq (scalar (h, "SELECT COUNT(DISTINCT events) FROM runs"),
                        1);
      ck_assert_int_gt (scalar (h, "SELECT COUNT(*) FROM link_util"), 0);
      /* The rows of run 1 and run 2 are the same, but for the run id. */
      const char *tables[] = {
        "SELECT link_id, t0_ps, t1_ps, bytes FROM link_util WHERE run_id = %d",
        ("SELECT id, op, algorithm, protocol, bytes, start_ps, end_ps, "
         "busbw_GBps FROM ops WHERE run_id = %d"),
        "SELECT id, name, bandwidth_Bps FROM links WHERE run_id = %d",
      };
      assert_runs_alike (h, tables, G_N_ELEMENTS (tables));
      sqlite3_close (h);
    }
}
END_TEST

static void
write_file (const char *name, const char *text)
{
  g_autofree char *path = g_build_filename (tmp_dir, name, NULL);
  ck_assert (g_file_set_contents (path, text, -1, NULL));
}

START_TEST (test_trace_rows)
{
  /* A trace named by the scenario's workload, replayed twice: every op in
   * ops, each rank in trace_ranks, the critical path marked, and the same
   * rows both times. */
  write_file ("s.yaml",
              "weft: 1\n"
              "include: " WEFT_SOURCE_DIR "/scenarios/presets/servers.yaml\n"
              "nodes:\n"
              "  - {name: dgx, template: dgx-h100}\n"
              "workload: {trace: step.yaml}\n");
  g_autofree char *step = NULL;
  ck_assert (g_file_get_contents (WEFT_SOURCE_DIR
                                  "/scenarios/traces/dgx-h100-step.yaml",
                                  &step, NULL, NULL));
  write_file ("step.yaml", step);
  const char *a[] = { "run", "s.yaml", "--db", "t.db", NULL };
  for (int i = 0; i < 2; i++)
    {
      Result r = weft_cmd (a);
      ck_assert_msg (r.status == 0, "%s", r.err);
      ck_assert_ptr_nonnull (strstr (r.out, "# Trace time:"));
      ck_assert_ptr_nonnull (strstr (r.out, "critical path"));
      result_clear (&r);
    }
  /* The report speaks of jobs and the critical path; compute is no
   * bandwidth. */
  const char *rep[] = { "report", "t.db", "--run", "1", NULL };
  Result r = weft_cmd (rep);
  ck_assert_msg (r.status == 0, "%s", r.err);
  ck_assert_ptr_nonnull (strstr (r.out, "The ops by kind:"));
  ck_assert_ptr_nonnull (strstr (r.out, "the critical path, by kind"));
  ck_assert_ptr_nonnull (strstr (r.out, "job0"));
  ck_assert_ptr_null (strstr (r.out, "Avg bus bandwidth"));
  result_clear (&r);

  sqlite3 *h = open_db ("t.db");
  ck_assert_int_eq (scalar (h, "SELECT COUNT(*) FROM runs WHERE status = "
                               "'complete'"), 2);
  ck_assert_int_eq (scalar (h, "SELECT COUNT(*) FROM ops WHERE run_id = 1"),
                    17);
  ck_assert_int_eq (scalar (h, "SELECT COUNT(*) FROM trace_ranks WHERE "
                               "run_id = 1"), 8);
  ck_assert_int_gt (scalar (h, "SELECT COUNT(*) FROM trace_ops WHERE "
                               "run_id = 1 AND critical"), 2);
  /* The step ends with the last op; every rank is as long. */
  ck_assert_int_eq (scalar (h, "SELECT MAX(end_ps) FROM ops WHERE run_id = 1"),
                    scalar (h, "SELECT MAX(step_ps) FROM trace_ranks WHERE "
                               "run_id = 1"));
  ck_assert_int_gt (scalar (h, "SELECT COUNT(*) FROM link_util WHERE "
                               "run_id = 1"), 0);
  const char *tables[] = {
    "SELECT link_id, t0_ps, t1_ps, bytes FROM link_util WHERE run_id = %d",
    "SELECT id, op, algorithm, protocol, bytes, start_ps, end_ps FROM ops "
    "WHERE run_id = %d",
    "SELECT op_id, rank, node, start_ps, end_ps FROM rank_ops WHERE "
    "run_id = %d",
    "SELECT job, rank, step_ps, compute_ps, exposed_ps FROM trace_ranks "
    "WHERE run_id = %d",
    "SELECT op_id, name, critical, critical_ps FROM trace_ops WHERE "
    "run_id = %d",
  };
  assert_runs_alike (h, tables, G_N_ELEMENTS (tables));
  /* The spans the path's ops held it up add up to the step. */
  ck_assert_int_eq (scalar (h, "SELECT SUM(critical_ps) FROM trace_ops WHERE "
                               "run_id = 1"),
                    scalar (h, "SELECT MAX(end_ps) FROM ops WHERE run_id = 1"));
  ck_assert_int_eq (scalar (h, "SELECT COUNT(*) FROM trace_ops WHERE run_id = "
                               "1 AND (critical_ps IS NULL) <> critical"), 17);
  sqlite3_close (h);

  /* A database of schema 5 has no spans: read as it is, the report takes
   * each op's time; written to, it gains the column, NULL for its runs. */
  g_autofree char *path = g_build_filename (tmp_dir, "t.db", NULL);
  ck_assert_int_eq (sqlite3_open (path, &h), SQLITE_OK);
  ck_assert_int_eq (sqlite3_exec (h, "ALTER TABLE trace_ops DROP COLUMN "
                                  "critical_ps; PRAGMA user_version = 5",
                                  NULL, NULL, NULL), SQLITE_OK);
  sqlite3_close (h);
  r = weft_cmd (rep);
  ck_assert_msg (r.status == 0 && strstr (r.out, "the critical path, by kind"),
                 "%s%s", r.out, r.err);
  result_clear (&r);
  r = weft_cmd (a);
  ck_assert_msg (r.status == 0, "%s", r.err);
  result_clear (&r);
  h = open_db ("t.db");
  ck_assert_int_eq (scalar (h, "PRAGMA user_version"), WEFT_DB_SCHEMA_VERSION);
  ck_assert_int_eq (scalar (h, "SELECT COUNT(*) FROM trace_ops WHERE run_id "
                               "< 3 AND critical_ps IS NOT NULL"), 0);
  ck_assert_int_eq (scalar (h, "SELECT SUM(critical_ps) FROM trace_ops WHERE "
                               "run_id = 3"),
                    scalar (h, "SELECT MAX(end_ps) FROM ops WHERE run_id = 3"));
  sqlite3_close (h);
}
END_TEST

START_TEST (test_bad_trace_writes_nothing)
{
  /* A trace with a mistake: one message with its position, exit 2, and no
   * database.  Sweep options do not mix with a trace. */
  write_file ("bad.yaml",
              "ranks: 2\n"
              "ops:\n"
              "  - {id: a, kind: compute, rank: 0, time: 1us, deps: [b]}\n"
              "  - {id: b, kind: compute, rank: 0, time: 1us, deps: [a]}\n");
  const char *a[] = { "run", WEFT_SOURCE_DIR "/scenarios/dgx-h100.yaml",
                      "--trace", "bad.yaml", "--db", "b.db", NULL };
  Result r = weft_cmd (a);
  ck_assert_int_eq (r.status, 2);
  ck_assert_msg (strstr (r.err, "bad.yaml:") && strstr (r.err, "cycle"),
                 "%s", r.err);
  ck_assert_str_eq (r.out, "");
  result_clear (&r);
  g_autofree char *db = g_build_filename (tmp_dir, "b.db", NULL);
  ck_assert (!g_file_test (db, G_FILE_TEST_EXISTS));

  const char *b[] = { "run", WEFT_SOURCE_DIR "/scenarios/dgx-h100.yaml",
                      "--trace", "bad.yaml", "-b", "1M", "--db", "b.db",
                      NULL };
  r = weft_cmd (b);
  ck_assert_int_eq (r.status, 2);
  ck_assert_ptr_nonnull (strstr (r.err, "for sweeps"));
  result_clear (&r);

  /* A collective no algorithm and protocol it asks for can run is found
   * before anything is recorded, where the trace writes it. */
  write_file ("unfit.yaml",
              "ranks: 8\nops:\n"
              "  - {id: a, kind: all_reduce, ranks: \"0-7\", size: 1MiB, "
              "algorithm: nvls, protocol: LL}\n");
  const char *u[] = { "run", WEFT_SOURCE_DIR "/scenarios/dgx-h100.yaml",
                      "--trace", "unfit.yaml", "--db", "b.db", NULL };
  r = weft_cmd (u);
  ck_assert_int_eq (r.status, 2);
  ck_assert_msg (strstr (r.err, "unfit.yaml:3:5: op 'a': nvls does not run "
                                "with the LL protocol"), "%s", r.err);
  result_clear (&r);
  ck_assert (!g_file_test (db, G_FILE_TEST_EXISTS));

  /* A trace found bad only by running it (ranks that wait for each other)
   * leaves its run failed, with the message it printed. */
  write_file ("stuck.yaml",
              "ranks: 2\nops:\n"
              "  - {id: x, kind: all_reduce, ranks: \"0-1\", size: 1MiB}\n"
              "  - {id: s0, kind: recv, rank: 0, peer: 1, size: 1MiB, "
              "deps: [x]}\n"
              "  - {id: s1, kind: recv, rank: 1, peer: 0, size: 1MiB}\n"
              "  - {id: r0, kind: send, rank: 0, peer: 1, size: 1MiB, "
              "deps: [s0]}\n"
              "  - {id: r1, kind: send, rank: 1, peer: 0, size: 1MiB, "
              "deps: [s1]}\n");
  const char *c[] = { "run", WEFT_SOURCE_DIR "/scenarios/dgx-h100.yaml",
                      "--trace", "stuck.yaml", "--db", "c.db", NULL };
  r = weft_cmd (c);
  ck_assert_int_eq (r.status, 2);
  ck_assert_msg (strstr (r.err, "never finishes"), "%s", r.err);
  result_clear (&r);
  sqlite3 *h = open_db ("c.db");
  g_autofree char *status = text (h, "SELECT status FROM runs");
  g_autofree char *message = text (h, "SELECT message FROM runs");
  ck_assert_str_eq (status, "failed");
  ck_assert_msg (message && strstr (message, "never finishes"), "%s",
                 message ? message : "(none)");
  sqlite3_close (h);
}
END_TEST

START_TEST (test_one_candidate_bins)
{
  /* One algorithm and protocol: one simulation a size, its bins widened as
   * it went.  Every operation's bins end at one width, a power of two
   * times 1 us and at least a thousandth of the run, and the rows are the
   * same from run to run. */
  const char *a[] = { "run", "--db", "o.db", "--algorithm", "ring",
                      "--protocol", "Simple", "-b", "1M", "-e", "256M", "-f",
                      "4", NULL };
  for (int i = 0; i < 2; i++)
    {
      Result r = weft_cmd (a);
      ck_assert_msg (r.status == 0, "%s", r.err);
      result_clear (&r);
    }
  sqlite3 *h = open_db ("o.db");
  sqlite3_int64 width = scalar (h, "SELECT MAX(t1_ps - t0_ps) FROM link_util "
                                   "WHERE run_id = 1");
  sqlite3_int64 span = scalar (h, "SELECT MAX(end_ps) FROM ops WHERE "
                                  "run_id = 1");
  ck_assert_int_ge (width, span / 1000);
  ck_assert_int_eq (width % 1000000, 0);
  ck_assert_int_eq ((width / 1000000) & (width / 1000000 - 1), 0);
  /* Every bin is that wide but the last of an operation, cut at its end. */
  g_autofree char *cut = g_strdup_printf (
      "SELECT COUNT(*) FROM link_util u JOIN ops o ON o.run_id = u.run_id "
      "AND u.t0_ps >= o.start_ps AND u.t0_ps < o.end_ps WHERE u.run_id = 1 "
      "AND u.t1_ps - u.t0_ps != %lld AND u.t1_ps != o.end_ps",
      (long long) width);
  ck_assert_int_eq (scalar (h, cut), 0);
  ck_assert_int_gt (scalar (h, "SELECT COUNT(*) FROM link_util WHERE "
                               "run_id = 1"), 0);
  ck_assert_int_eq (scalar (h, "SELECT (SELECT COUNT(*) FROM (SELECT link_id, "
                               "t0_ps, t1_ps, bytes FROM link_util WHERE "
                               "run_id = 1 EXCEPT SELECT link_id, t0_ps, "
                               "t1_ps, bytes FROM link_util WHERE run_id = "
                               "2))"), 0);
  sqlite3_close (h);
}
END_TEST

START_TEST (test_unwritable_database)
{
  const char *a[] = { "run", "--db", "/nonexistent-dir/x.db", NULL };
  Result r = weft_cmd (a);

  ck_assert_int_eq (r.status, 2);
  ck_assert_ptr_nonnull (strstr (r.err, "/nonexistent-dir/x.db"));
  ck_assert_str_eq (r.out, "");
  result_clear (&r);
}
END_TEST

START_TEST (test_foreign_database_untouched)
{
  /* Another program's SQLite file gets no tables of weft's. */
  g_autofree char *path = g_build_filename (tmp_dir, "other.db", NULL);
  sqlite3 *h;
  ck_assert_int_eq (sqlite3_open (path, &h), SQLITE_OK);
  ck_assert_int_eq (sqlite3_exec (h, "CREATE TABLE runs (id, note);"
                                  "INSERT INTO runs VALUES (1, 'mine');",
                                  NULL, NULL, NULL), SQLITE_OK);
  sqlite3_close (h);
  const char *args[] = { "run", "-b", "1M", "-e", "1M", "--db", "other.db",
                         NULL };
  Result r = weft_cmd (args);
  ck_assert_int_eq (r.status, 2);
  ck_assert_msg (strstr (r.err, "not a weft results database"), "%s", r.err);
  result_clear (&r);
  const char *report[] = { "report", "other.db", NULL };
  r = weft_cmd (report);
  ck_assert_int_eq (r.status, 2);
  result_clear (&r);
  h = open_db ("other.db");
  ck_assert_int_eq (scalar (h, "SELECT count(*) FROM sqlite_master"), 1);
  ck_assert_int_eq (scalar (h, "PRAGMA user_version"), 0);
  ck_assert_int_eq (scalar (h, "SELECT count(*) FROM runs"), 1);
  sqlite3_close (h);
}
END_TEST

/* Run as nobody when the tests run as root, to whom no file is
 * read-only, if nobody may run the program where it was built. */
static void
drop_root (gpointer data)
{
  (void) data;
  if (getuid () != 0)
    return;
  if (setegid (65534) != 0 || seteuid (65534) != 0)
    _exit (99);
  gboolean can = faccessat (AT_FDCWD, WEFT_BINARY, X_OK, AT_EACCESS) == 0;
  if (seteuid (0) != 0 || setegid (0) != 0)
    _exit (99);
  if (can && (setgid (65534) != 0 || setuid (65534) != 0))
    _exit (99);
}

START_TEST (test_read_only_database)
{
  /* Reports and plots read a database they may not write, and leave it as
   * it was. */
  g_autofree char *path = g_build_filename (tmp_dir, "ro.db", NULL);
  g_autofree char *plots = g_build_filename (tmp_dir, "plots", NULL);
  const char *run[] = { "run", "-b", "1M", "-e", "4M", "--db", "ro.db",
                        NULL };
  Result r = weft_cmd (run);
  ck_assert_int_eq (r.status, 0);
  result_clear (&r);
  g_autofree char *before = NULL, *after = NULL;
  gsize n_before, n_after;
  ck_assert (g_file_get_contents (path, &before, &n_before, NULL));
  ck_assert_int_eq (g_chmod (path, 0444), 0);
  ck_assert_int_eq (g_chmod (tmp_dir, 0777), 0);

  const char *report[] = { WEFT_BINARY, "report", path, NULL };
  const char *plot[] = { WEFT_BINARY, "plot", path, "--out", plots, NULL };
  const char *const *commands[] = { report, plot };
  for (guint i = 0; i < G_N_ELEMENTS (commands); i++)
    {
      int status;
      g_autofree char *out = NULL, *err = NULL;
      ck_assert (g_spawn_sync (tmp_dir, (char **) commands[i], NULL,
                               G_SPAWN_DEFAULT, drop_root, NULL, &out, &err,
                               &status, NULL));
      ck_assert_msg (WIFEXITED (status) && WEXITSTATUS (status) == 0,
                     "weft %s: %s", commands[i][1], err);
      if (i == 0)
        ck_assert_msg (strstr (out, "all_reduce"), "%s", out);
    }
  ck_assert (g_file_get_contents (path, &after, &n_after, NULL));
  ck_assert_uint_eq (n_before, n_after);
  ck_assert (memcmp (before, after, n_before) == 0);
  g_chmod (tmp_dir, 0700);
}
END_TEST

START_TEST (test_interrupted_run)
{
  /* A long packet-level run, interrupted by SIGINT: it ends at once with
   * status 130, and the database says the run was interrupted and is
   * whole. */
  g_autofree char *db = g_build_filename (tmp_dir, "i.db", NULL);
  char *argv[] = { (char *) WEFT_BINARY, "run", "--db", db, "--fidelity",
                   "packet", "--algorithm", "ring", "-b", "4G", "-e", "4G",
                   NULL };
  GPid pid;
  int wait_status;

  ck_assert (g_spawn_async (tmp_dir, argv, NULL,
                            G_SPAWN_DO_NOT_REAP_CHILD
                                | G_SPAWN_STDOUT_TO_DEV_NULL
                                | G_SPAWN_STDERR_TO_DEV_NULL,
                            NULL, NULL, &pid, NULL));
  /* Wait until the run is under way (slow under valgrind), then stop it. */
  for (int tries = 0; tries < 600; tries++)
    {
      g_usleep (100 * 1000);
      sqlite3 *h;
      if (sqlite3_open_v2 (db, &h, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
        {
          sqlite3_close (h);
          continue;
        }
      sqlite3_busy_timeout (h, 1000);
      gboolean started = FALSE;
      sqlite3_stmt *st;
      if (sqlite3_prepare_v2 (h, "SELECT COUNT(*) FROM links", -1, &st, NULL)
          == SQLITE_OK)
        {
          started = sqlite3_step (st) == SQLITE_ROW
                    && sqlite3_column_int64 (st, 0) > 0;
          sqlite3_finalize (st);
        }
      sqlite3_close (h);
      if (started)
        break;
    }
  g_usleep (500 * 1000);
  kill (pid, SIGINT);
  ck_assert_int_eq (waitpid (pid, &wait_status, 0), pid);
  ck_assert (WIFEXITED (wait_status));
  ck_assert_int_eq (WEXITSTATUS (wait_status), 130);
  sqlite3 *h = open_db ("i.db");
  g_autofree char *status = text (h, "SELECT status FROM runs");
  g_autofree char *check = text (h, "PRAGMA integrity_check");
  ck_assert_str_eq (status, "interrupted");
  ck_assert_str_eq (check, "ok");
  sqlite3_close (h);
}
END_TEST

START_TEST (test_signal_at_any_moment)
{
  /* A trace replay stopped by SIGTERM at moments through its run (reading
   * the trace, recording the topology, simulating, writing the rows) ends
   * within a second, and never leaves its run `running`: either nothing
   * was recorded yet (the default action, 143), or the run says it was
   * interrupted (130), or it had finished (0). */
  g_autofree char *trace = g_build_filename (tmp_dir, "job.yaml", NULL);
  const char *gen[] = { "trace", "generate", "--tp", "8", "--pp", "4",
                        "--dp", "8", "-o", trace, NULL };
  Result r = weft_cmd (gen);
  ck_assert_int_eq (r.status, 0);
  result_clear (&r);
  static const int delays_ms[] = { 20, 100, 250, 500, 800, 1200, 1600 };
  for (guint i = 0; i < G_N_ELEMENTS (delays_ms); i++)
    {
      g_autofree char *name = g_strdup_printf ("sig%u.db", i);
      g_autofree char *db = g_build_filename (tmp_dir, name, NULL);
      char *argv[] = { (char *) WEFT_BINARY, "run",
                       (char *) SCENARIOS "/h100-256-rail.yaml", "--trace",
                       trace, "--chunks", "1", "--db", db, NULL };
      GPid pid;
      int wait_status;
      g_autofree char *err_path = g_build_filename (tmp_dir, "sig.err", NULL);
      int err_fd = open (err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
      ck_assert_int_ge (err_fd, 0);
      ck_assert (g_spawn_async_with_fds (tmp_dir, argv, NULL,
                                         G_SPAWN_DO_NOT_REAP_CHILD
                                             | G_SPAWN_STDOUT_TO_DEV_NULL,
                                         NULL, NULL, &pid, -1, -1, err_fd,
                                         NULL));
      close (err_fd);
      g_usleep (delays_ms[i] * 1000);
      kill (pid, SIGTERM);
      gint64 sent = g_get_monotonic_time ();
      ck_assert_int_eq (waitpid (pid, &wait_status, 0), pid);
      gint64 took = g_get_monotonic_time () - sent;
      int code = WIFEXITED (wait_status) ? WEXITSTATUS (wait_status)
                 : WIFSIGNALED (wait_status) ? 128 + WTERMSIG (wait_status)
                                             : -1;
      g_autofree char *err = NULL;
      gsize err_len = 0;
      g_file_get_contents (err_path, &err, &err_len, NULL);
      /* Its last words: Check cannot carry a long message. */
      ck_assert_msg (code == 0 || code == 130 || code == 143,
                     "after %d ms: exit %d: %s", delays_ms[i], code,
                     err ? err + (err_len > 600 ? err_len - 600 : 0) : "");
      ck_assert_msg (took < G_USEC_PER_SEC, "after %d ms: took %" G_GINT64_FORMAT
                     " us to stop", delays_ms[i], took);
      if (!g_file_test (db, G_FILE_TEST_EXISTS))
        continue;
      sqlite3 *h = open_db (name);
      g_autofree char *status = text (h, "SELECT status FROM runs");
      g_autofree char *check = text (h, "PRAGMA integrity_check");
      if (status != NULL)
        ck_assert_msg (strcmp (status, code == 0 ? "complete" : "interrupted")
                       == 0, "after %d ms: exit %d, run %s", delays_ms[i],
                       code, status);
      ck_assert_str_eq (check, "ok");
      sqlite3_close (h);
    }
}
END_TEST

START_TEST (test_report_and_plot)
{
  const char *run[] = { "run", "--db", "r.db", "-b", "1M", "-e", "256M", NULL };
  Result r = weft_cmd (run);
  ck_assert_int_eq (r.status, 0);
  result_clear (&r);

  const char *report[] = { "report", "r.db", NULL };
  r = weft_cmd (report);
  ck_assert_int_eq (r.status, 0);
  ck_assert_ptr_nonnull (strstr (r.out, "all_reduce"));
  ck_assert_ptr_nonnull (strstr (r.out, "The 10 busiest links"));
  ck_assert_ptr_nonnull (strstr (r.out, "Where the time went"));
  result_clear (&r);

  const char *plot[] = { "plot", "r.db", "--out", "pics", "--reference",
                         WEFT_SOURCE_DIR "/docs/reference/"
                         "nccl-allreduce-measured.csv",
                         "--system", "Azure ND H100", NULL };
  r = weft_cmd (plot);
  ck_assert_msg (r.status == 0, "%.400s", r.err);
  const char *pictures[] = { "busbw.png", "time.png", "heatmap.png",
                             "busiest.png", "timeline.png" };
  for (guint i = 0; i < G_N_ELEMENTS (pictures); i++)
    {
      g_autofree char *p = g_build_filename (tmp_dir, "pics", pictures[i],
                                             NULL);
      g_autofree char *bytes = NULL;
      gsize len = 0;
      ck_assert_msg (g_file_get_contents (p, &bytes, &len, NULL), "%s", p);
      ck_assert (len > 1000 && memcmp (bytes, "\x89PNG", 4) == 0);
    }
  result_clear (&r);

  /* And as SVG. */
  const char *svg[] = { "plot", "r.db", "--out", "vec", "--format", "svg", NULL };
  r = weft_cmd (svg);
  ck_assert_int_eq (r.status, 0);
  g_autofree char *svg_path = g_build_filename (tmp_dir, "vec", "busbw.svg",
                                                NULL);
  g_autofree char *svg_text = NULL;
  ck_assert (g_file_get_contents (svg_path, &svg_text, NULL, NULL));
  ck_assert_ptr_nonnull (strstr (svg_text, "<svg"));
  result_clear (&r);

  /* Its own pictures it draws again; another's only with --force. */
  r = weft_cmd (plot);
  ck_assert_msg (r.status == 0, "%.400s", r.err);
  result_clear (&r);
  g_autofree char *list = g_build_filename (tmp_dir, "pics", ".weft-plots",
                                            NULL);
  g_autofree char *heatmap = g_build_filename (tmp_dir, "pics", "heatmap.png",
                                               NULL);
  ck_assert (g_file_set_contents (list, "busbw.png\n", -1, NULL));
  ck_assert (g_file_set_contents (heatmap, "mine", -1, NULL));
  r = weft_cmd (plot);
  ck_assert_int_eq (r.status, 2);
  ck_assert_ptr_nonnull (strstr (r.err, "weft did not write it"));
  result_clear (&r);
  g_autofree char *kept = NULL;
  ck_assert (g_file_get_contents (heatmap, &kept, NULL, NULL));
  ck_assert_str_eq (kept, "mine");
  const char *forced[] = { "plot", "r.db", "--out", "pics", "--force", NULL };
  r = weft_cmd (forced);
  ck_assert_int_eq (r.status, 0);
  result_clear (&r);

  /* A run with nothing to draw says so, and why. */
  g_autofree char *db_path = g_build_filename (tmp_dir, "r.db", NULL);
  sqlite3 *h;
  ck_assert_int_eq (sqlite3_open (db_path, &h), SQLITE_OK);
  ck_assert_int_eq (sqlite3_exec (h, "INSERT INTO runs (scenario, "
                                  "scenario_sha256, fidelity, seed, "
                                  "weft_version, started_at, status, message) "
                                  "VALUES ('s.yaml', '', 'flow', 1, '0', "
                                  "'now', 'failed', 'it broke')",
                                  NULL, NULL, NULL), SQLITE_OK);
  sqlite3_close (h);
  const char *failed_report[] = { "report", "r.db", NULL };
  r = weft_cmd (failed_report);
  ck_assert_int_eq (r.status, 0);
  ck_assert_msg (strstr (r.out, "\n# failed: it broke\n"), "%s", r.out);
  result_clear (&r);
  const char *failed[] = { "plot", "r.db", "--out", "none", NULL };
  r = weft_cmd (failed);
  ck_assert_int_eq (r.status, 2);
  ck_assert_msg (strstr (r.err, "has nothing to plot: it is failed: it broke"),
                 "%s", r.err);
  result_clear (&r);

  const char *missing[] = { "report", "nothing.db", NULL };
  r = weft_cmd (missing);
  ck_assert_int_eq (r.status, 2);
  ck_assert_ptr_nonnull (strstr (r.err, "nothing.db: no such database"));
  result_clear (&r);

  /* A run's id is 1 or more: 0 and -1 are not the latest run. */
  const char *ids[][7] = {
    { "report", "r.db", "--run", "0", NULL },
    { "report", "r.db", "--run", "-1", NULL },
    { "plot", "r.db", "--run", "0", "--out", "none", NULL },
  };
  for (guint i = 0; i < G_N_ELEMENTS (ids); i++)
    {
      r = weft_cmd (ids[i]);
      ck_assert_int_eq (r.status, 2);
      ck_assert_msg (strstr (r.err, "--run takes a run's id, 1 or more"),
                     "%s", r.err);
      result_clear (&r);
    }
}
END_TEST

/* The line of @out that starts with "  @tier " (the caller frees it). */
static char *
tier_line (const char *out, const char *tier)
{
  g_autofree char *head = g_strdup_printf ("\n  %-14s ", tier);
  const char *at = strstr (out, head);

  ck_assert_msg (at != NULL, "no tier %s in\n%s", tier, out);
  at += 3;
  return g_strndup (at, strcspn (at, "\n"));
}

START_TEST (test_tiers_recorded)
{
  /* Two DGX H100 of the rail fabric: each link is recorded with its tier,
   * and the report shows how busy each tier's links were, from the GPUs
   * outward; the spines carry nothing between two servers of one unit. */
  const char *run[] = { "run", WEFT_SOURCE_DIR "/scenarios/h100-256-rail.yaml",
                        "--ranks", "node[0-1]/gpu[0-7]", "-b", "16M", "-e",
                        "16M", "--db", "t.db", NULL };
  Result r = weft_cmd (run);
  ck_assert_msg (r.status == 0, "%s", r.err);
  result_clear (&r);
  sqlite3 *h = open_db ("t.db");
  ck_assert_int_eq (scalar (h, "SELECT COUNT(*) FROM links WHERE tier = "
                               "'leaf'"), 512);
  ck_assert_int_eq (scalar (h, "SELECT COUNT(*) FROM links WHERE tier = "
                               "'spine'"), 64);
  ck_assert_int_eq (scalar (h, "SELECT COUNT(*) FROM links WHERE tier IS "
                               "NULL"), 0);
  sqlite3_int64 leaf = scalar (h, "SELECT SUM(u.bytes) FROM link_util u JOIN "
                                  "links l ON l.run_id = u.run_id AND l.id = "
                                  "u.link_id WHERE l.tier = 'leaf'");
  sqlite3_close (h);

  const char *report[] = { "report", "t.db", NULL };
  r = weft_cmd (report);
  ck_assert_int_eq (r.status, 0);
  ck_assert_ptr_nonnull (strstr (r.out, "Links by tier"));
  g_autofree char *spine = tier_line (r.out, "spine");
  ck_assert_str_eq (spine, "spine               0 of     64 links");
  /* Each server's eight NICs up to its leaves and down again: 32 of the
   * 512 links, with every byte of them. */
  g_autofree char *line = tier_line (r.out, "leaf");
  long long used, all, bytes;
  double mean, peak;
  ck_assert_int_eq (sscanf (line, "leaf %lld of %lld links, %lf%% on average, "
                            "%lf%% at the peak, %lld bytes", &used, &all,
                            &mean, &peak, &bytes), 5);
  ck_assert_int_eq (used, 32);
  ck_assert_int_eq (all, 512);
  ck_assert_int_eq (bytes, leaf);
  ck_assert (mean > 0 && mean <= peak && peak <= 100);
  ck_assert (strstr (r.out, "GPU-switch") < strstr (r.out, "  GPU-NIC")
             && strstr (r.out, "  GPU-NIC") < strstr (r.out, "  leaf")
             && strstr (r.out, "  leaf") < strstr (r.out, "  spine"));
  result_clear (&r);

  /* A database of schema 2 has no tiers: read as it is, the report says
   * so; written to, it gains the column, which its older runs leave
   * empty. */
  g_autofree char *path = g_build_filename (tmp_dir, "t.db", NULL);
  ck_assert_int_eq (sqlite3_open (path, &h), SQLITE_OK);
  ck_assert_int_eq (sqlite3_exec (h, "ALTER TABLE links DROP COLUMN tier; "
                                  "PRAGMA user_version = 2", NULL, NULL, NULL),
                    SQLITE_OK);
  sqlite3_close (h);
  r = weft_cmd (report);
  ck_assert_int_eq (r.status, 0);
  ck_assert_ptr_nonnull (strstr (r.out, "(not recorded: the database is an "
                                        "older weft's)"));
  result_clear (&r);
  r = weft_cmd (run);
  ck_assert_msg (r.status == 0, "%s", r.err);
  result_clear (&r);
  h = open_db ("t.db");
  ck_assert_int_eq (scalar (h, "PRAGMA user_version"), WEFT_DB_SCHEMA_VERSION);
  ck_assert_int_eq (scalar (h, "SELECT COUNT(*) FROM links WHERE run_id = 1 "
                               "AND tier IS NOT NULL"), 0);
  ck_assert_int_eq (scalar (h, "SELECT COUNT(*) FROM links WHERE run_id = 2 "
                               "AND tier = 'leaf'"), 512);
  sqlite3_close (h);
  const char *first[] = { "report", "t.db", "--run", "1", NULL };
  r = weft_cmd (first);
  ck_assert_int_eq (r.status, 0);
  ck_assert_ptr_nonnull (strstr (r.out, "(not recorded: the run is an older "
                                        "weft's)"));
  result_clear (&r);
  r = weft_cmd (report);
  ck_assert_int_eq (r.status, 0);
  g_autofree char *again = tier_line (r.out, "spine");
  ck_assert_str_eq (again, "spine               0 of     64 links");
  result_clear (&r);
}
END_TEST

START_TEST (test_reference_from_nccl_tests_output)
{
  /* nccl-tests' output as it prints it (these figures are made up for
   * the test), with mpirun's prefixes, its header and its in-place
   * columns, is a reference of its own collective. */
  g_autofree char *log = g_build_filename (tmp_dir, "ag.log", NULL);
  ck_assert (g_file_set_contents (log,
      "[1,0]<stdout>:# nThread 1 nGpus 1 minBytes 1048576 maxBytes 4194304\n"
      "[1,0]<stdout>:#  Rank  0 Group  0 Pid  11 on host device  0 [0x1b]\n"
      "[1,0]<stdout>:#                                                  "
      "out-of-place                       in-place\n"
      "[1,0]<stdout>:#       size         count      type   redop    root"
      "     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
      "[1,0]<stdout>:     1048576         32768     float    none      -1"
      "    40.00   26.21   22.94      0    39.00   26.89   23.53      0\n"
      "[1,0]<stdout>:     2097152         65536     float    none      -1"
      "    50.00   41.94   36.70      0    49.00   42.80   37.45      0\n"
      "[1,0]<stdout>:     4194304        131072     float    none      -1"
      "    70.00   59.92   52.43      0    69.00   60.79   53.19      0\n"
      "[1,0]<stdout>:# Avg bus bandwidth    : 37.36\n", -1, NULL));
  g_autoptr (GError) error = NULL;
  g_autoptr (GArray) rows = weft_reference_read (log, NULL, "all_gather",
                                                 &error);
  ck_assert_msg (rows != NULL, "%s", error ? error->message : "");
  ck_assert_uint_eq (rows->len, 3);
  const WeftMeasured *m = &g_array_index (rows, WeftMeasured, 2);
  ck_assert_uint_eq (m->size, 4194304);
  ck_assert_double_eq_tol (m->time, 70.0, 1e-9);
  ck_assert_double_eq_tol (m->busbw, 52.43, 1e-9);

  const char *run[] = { "run", "--db", "ag.db", "-o", "all_gather", "-b",
                        "1M", "-e", "4M", NULL };
  Result r = weft_cmd (run);
  ck_assert_int_eq (r.status, 0);
  result_clear (&r);
  const char *plot[] = { "plot", "ag.db", "--out", "agp", "--reference", log,
                         NULL };
  r = weft_cmd (plot);
  ck_assert_msg (r.status == 0, "%s", r.err);
  result_clear (&r);

  /* weft's own table in nccl-tests' form reads back as the run's rows. */
  const char *again[] = { "run", "--db", "ag2.db", "-c", "all_gather", "-b",
                          "1M", "-e", "4M", "--nccl-tests", NULL };
  r = weft_cmd (again);
  ck_assert_int_eq (r.status, 0);
  ck_assert_ptr_nonnull (strstr (r.out, "out-of-place"));
  g_autofree char *own = g_build_filename (tmp_dir, "own.log", NULL);
  ck_assert (g_file_set_contents (own, r.out, -1, NULL));
  result_clear (&r);
  g_autoptr (GArray) back = weft_reference_read (own, NULL, "all_gather",
                                                 &error);
  ck_assert_msg (back != NULL, "%s", error ? error->message : "");
  sqlite3 *h = open_db ("ag2.db");
  ck_assert_int_eq (scalar (h, "SELECT COUNT(*) FROM ops"), back->len);
  for (guint i = 0; i < back->len; i++)
    {
      const WeftMeasured *b = &g_array_index (back, WeftMeasured, i);
      g_autofree char *sql = g_strdup_printf (
          "SELECT busbw_GBps FROM ops WHERE bytes = %" G_GUINT64_FORMAT,
          b->size);
      g_autofree char *busbw = text (h, sql);
      ck_assert_ptr_nonnull (busbw);
      /* Printed with two decimals. */
      ck_assert_double_eq_tol (b->busbw, g_ascii_strtod (busbw, NULL), 0.005);
    }
  sqlite3_close (h);

  /* A file with no such rows says so. */
  g_autofree char *empty = g_build_filename (tmp_dir, "none.log", NULL);
  ck_assert (g_file_set_contents (empty, "# nothing here\n", -1, NULL));
  g_clear_error (&error);
  ck_assert_ptr_null (weft_reference_read (empty, NULL, "all_gather",
                                           &error));
  ck_assert (g_error_matches (error, WEFT_NCCL_LOG_ERROR,
                              WEFT_NCCL_LOG_ERROR_NO_ROWS));
}
END_TEST

START_TEST (test_plot_without_gnuplot)
{
  /* With no gnuplot on the PATH, one line naming the Debian package. */
  g_autofree char *db = g_build_filename (tmp_dir, "p.db", NULL);
  char *argv[] = { (char *) WEFT_BINARY, "plot", db, NULL };
  char *envp[] = { "PATH=/nonexistent", NULL };
  g_autofree char *err = NULL;
  int status;

  ck_assert (g_spawn_sync (tmp_dir, argv, envp, G_SPAWN_STDOUT_TO_DEV_NULL,
                           NULL, NULL, NULL, &err, &status, NULL));
  ck_assert (WIFEXITED (status));
  ck_assert_int_eq (WEXITSTATUS (status), 2);
  ck_assert_str_eq (err, "weft plot: gnuplot is not installed; install the "
                         "Debian package gnuplot-nox\n");
}
END_TEST

START_TEST (test_faults_recorded_and_reported)
{
  /* A run with a fault keeps it in the faults table, and the report names
   * it and sets each operation against the run without it; a fault that
   * names no link is refused before anything is written. */
  const char *whole[] = { "run", "-b", "1G", "-e", "1G", "--db", "f.db", NULL };
  const char *faulty[] = { "run", "-b", "1G", "-e", "1G", "--db", "f.db",
                           "--fault", "dgx/nvswitch0", "--fault",
                           "dgx/gpu1 dgx/nvswitch1 50%", NULL };
  Result r = weft_cmd (whole);
  ck_assert_msg (r.status == 0, "%s", r.err);
  result_clear (&r);
  r = weft_cmd (faulty);
  ck_assert_msg (r.status == 0, "%s", r.err);
  result_clear (&r);
  sqlite3 *h = open_db ("f.db");
  g_autofree char *rows = text (h, "SELECT group_concat(run_id || ' ' || what "
                                   "|| ' ' || speed || ' ' || links, '; ') "
                                   "FROM faults");
  ck_assert_str_eq (rows, "2 dgx/nvswitch0 0.0 8; "
                          "2 dgx/gpu1 - dgx/nvswitch1 0.5 1");
  g_autofree char *down = text (h, "SELECT COUNT(*) FROM links WHERE run_id = "
                                   "2 AND bandwidth_Bps = 0");
  ck_assert_str_eq (down, "16");
  sqlite3_close (h);

  const char *report[] = { "report", "f.db", NULL };
  r = weft_cmd (report);
  ck_assert_int_eq (r.status, 0);
  ck_assert_msg (strstr (r.out, "# faults: dgx/nvswitch0 down (8 links), "
                                "dgx/gpu1 - dgx/nvswitch1 at 50% (1 link)\n"),
                 "%s", r.out);
  ck_assert_msg (strstr (r.out, "# against run 1, the same without faults:"),
                 "%s", r.out);
  result_clear (&r);
  g_autofree char *gnuplot = g_find_program_in_path ("gnuplot");
  if (gnuplot != NULL)
    {
      /* The links down are drawn, in a group of their own. */
      const char *plot[] = { "plot", "f.db", "--out", "faults", NULL };
      r = weft_cmd (plot);
      ck_assert_msg (r.status == 0, "%s", r.err);
      ck_assert_ptr_nonnull (strstr (r.out, "faults/heatmap.png"));
      result_clear (&r);
    }

  const char *bad[] = { "run", "-b", "1G", "-e", "1G", "--db", "f.db",
                        "--fault", "dgx/gpu0 dgx/nic5", NULL };
  r = weft_cmd (bad);
  ck_assert_int_eq (r.status, 2);
  ck_assert_msg (g_str_has_prefix (r.err, "--fault dgx/gpu0 dgx/nic5:1:1: "
                                          "no link joins"), "%s", r.err);
  result_clear (&r);
  h = open_db ("f.db");
  g_autofree char *runs = text (h, "SELECT COUNT(*) FROM runs");
  ck_assert_str_eq (runs, "2");
  sqlite3_close (h);
}
END_TEST

START_TEST (test_timed_faults_recorded)
{
  /* A fault for a while keeps its times in the faults table and the
   * report; one that leaves a transfer in flight no path (NVLS to a chip
   * that goes down) fails the run at that moment: exit status 2, the run
   * marked failed with why, the database sound.  A database of schema 4,
   * whose faults held all along, gains the columns when written to. */
  const char *timed[] = { "run", "-a", "ring", "-b", "1G", "-e", "1G",
                          "--db", "f.db", "--fault",
                          "dgx/nvswitch0 from 100us until 300us", NULL };
  Result r = weft_cmd (timed);
  ck_assert_msg (r.status == 0, "%s", r.err);
  result_clear (&r);
  sqlite3 *h = open_db ("f.db");
  g_autofree char *rows = text (h, "SELECT what || ' ' || from_ps || ' ' || "
                                   "until_ps FROM faults");
  ck_assert_str_eq (rows, "dgx/nvswitch0 100000000 300000000");
  sqlite3_close (h);
  const char *report[] = { "report", "f.db", NULL };
  r = weft_cmd (report);
  ck_assert_msg (strstr (r.out, "# faults: dgx/nvswitch0 down from 100.000 us "
                                "until 300.000 us (8 links)\n"),
                 "%s", r.out);
  result_clear (&r);

  const char *cut[] = { "run", "-a", "nvls", "-b", "1G", "-e", "1G", "--db",
                        "f.db", "--fault", "dgx/nvswitch0 from 10us", NULL };
  r = weft_cmd (cut);
  ck_assert_int_eq (r.status, 2);
  ck_assert_msg (strstr (r.err, "no path of links that are up joins "
                                "'dgx/gpu") != NULL
                 && strstr (r.err, "'dgx/nvswitch0' from 10.000 us"),
                 "%s", r.err);
  result_clear (&r);
  /* Every up-link of a leaf failing under an all_reduce: its servers are
   * cut from the others, and the operation fails at that moment. */
  const char *leaf[] = { "run", SCENARIOS "/h100-256-fat-tree.yaml", "-b",
                         "1G", "-e", "1G", "--db", "f.db", "--fault",
                         "ib/leaf0 ib/spine[0-3] from 100us", NULL };
  r = weft_cmd (leaf);
  ck_assert_int_eq (r.status, 2);
  ck_assert_msg (strstr (r.err, "weft run: at ")
                 && strstr (r.err, "no path of links that are up joins")
                 && strstr (r.err, "'ib/leaf0 - ib/spine[0-3]' from "
                                   "100.000 us"), "%s", r.err);
  result_clear (&r);
  h = open_db ("f.db");
  g_autofree char *status = text (h, "SELECT group_concat(status) FROM runs "
                                     "WHERE id > 1");
  ck_assert_str_eq (status, "failed,failed");
  g_autofree char *sound = text (h, "PRAGMA integrity_check");
  ck_assert_str_eq (sound, "ok");
  sqlite3_close (h);
  g_autofree char *path = g_build_filename (tmp_dir, "f.db", NULL);
  ck_assert_int_eq (sqlite3_open (path, &h), SQLITE_OK);
  ck_assert_int_eq (sqlite3_exec (h, "ALTER TABLE faults DROP COLUMN from_ps; "
                                  "ALTER TABLE faults DROP COLUMN until_ps; "
                                  "PRAGMA user_version = 4", NULL, NULL, NULL),
                    SQLITE_OK);
  sqlite3_close (h);
  const char *old[] = { "report", "f.db", "--run", "1", NULL };
  r = weft_cmd (old);
  ck_assert_msg (strstr (r.out, "# faults: dgx/nvswitch0 down (8 links)\n"),
                 "%s", r.out);
  result_clear (&r);
  r = weft_cmd (timed);
  ck_assert_msg (r.status == 0, "%s", r.err);
  result_clear (&r);
  h = open_db ("f.db");
  ck_assert_int_eq (scalar (h, "PRAGMA user_version"), WEFT_DB_SCHEMA_VERSION);
  g_autofree char *both = text (h, "SELECT group_concat(run_id || ' ' || "
                                   "from_ps || ' ' || coalesce (until_ps, "
                                   "'end'), '; ') FROM faults");
  ck_assert_str_eq (both, "1 0 end; 2 0 end; 3 0 end; "
                         "4 100000000 300000000");
  sqlite3_close (h);
}
END_TEST

static Suite *
results_suite (void)
{
  Suite *s = suite_create ("results");
  TCase *tc = tcase_create ("database");

  tcase_set_timeout (tc, 180);
  tcase_add_checked_fixture (tc, setup, teardown);
  tcase_add_test (tc, test_bins_add_up_to_link_bytes);
  tcase_add_test (tc, test_timed_faults_recorded);
  tcase_add_test (tc, test_same_seed_same_rows);
  tcase_add_test (tc, test_trace_rows);
  tcase_add_test (tc, test_one_candidate_bins);
  tcase_add_test (tc, test_bad_trace_writes_nothing);
  tcase_add_test (tc, test_unwritable_database);
  tcase_add_test (tc, test_interrupted_run);
  tcase_add_test (tc, test_foreign_database_untouched);
  tcase_add_test (tc, test_signal_at_any_moment);
  tcase_add_test (tc, test_read_only_database);
  suite_add_tcase (s, tc);

  tc = tcase_create ("report and plot");
  tcase_set_timeout (tc, 120);
  tcase_add_checked_fixture (tc, setup, teardown);
  tcase_add_test (tc, test_report_and_plot);
  tcase_add_test (tc, test_tiers_recorded);
  tcase_add_test (tc, test_plot_without_gnuplot);
  tcase_add_test (tc, test_reference_from_nccl_tests_output);
  tcase_add_test (tc, test_faults_recorded_and_reported);
  suite_add_tcase (s, tc);

  return s;
}

int
main (void)
{
  SRunner *runner = srunner_create (results_suite ());

  srunner_run_all (runner, CK_NORMAL);
  int failed = srunner_ntests_failed (runner);
  srunner_free (runner);
  return failed == 0 ? 0 : 1;
}

