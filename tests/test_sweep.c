/* Tests of weft sweep: points, grids, checks, resuming, signals, MPI. */
#include "db.h"
#include "results.h"
#include "results_cmd.h"

#include <check.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

START_TEST (test_sweep_points_resume_and_failures)
{
  /* Every combination is a run with its parameters; a combination that
   * cannot run fails its point alone, and the sweep; running again skips
   * what is complete.  Grids may vary weft run's own options. */
  const char *sweep[] = { "sweep", WEFT_SOURCE_DIR "/scenarios/dgx-h100.yaml",
                          "--grid", "algorithm=ring,nvls",
                          "--grid", "protocol=LL,Simple",
                          "--grid", "workload.maxbytes=1MiB,4MiB", "-b", "1M",
                          "-j", "2", "--db", "s.db", NULL };
  g_autofree char *with_workload = g_build_filename (tmp_dir, "w.yaml", NULL);
  g_autofree char *text = g_strdup_printf (
      "weft: 1\ninclude: %s/scenarios/presets/servers.yaml\n"
      "nodes: [{name: dgx, template: dgx-h100}]\n"
      "workload: {maxbytes: 1MiB}\n", WEFT_SOURCE_DIR);
  ck_assert (g_file_set_contents (with_workload, text, -1, NULL));
  sweep[1] = with_workload;

  Result r = weft_cmd (sweep);
  ck_assert_int_eq (r.status, 1);
  ck_assert_ptr_nonnull (strstr (r.out, "# 8 points: 8 run, 0 already "
                                        "complete, 2 failed\n"));
  ck_assert_ptr_nonnull (strstr (r.out, "nvls does not run with the LL "
                                        "protocol"));
  result_clear (&r);
  sqlite3 *h = open_db ("s.db");
  ck_assert_int_eq (scalar (h, "SELECT COUNT(*) FROM runs WHERE status = "
                               "'complete'"), 6);
  ck_assert_int_eq (scalar (h, "SELECT COUNT(*) FROM runs WHERE status = "
                               "'failed' AND message LIKE '%LL protocol%'"),
                    2);
  /* The message is weft run's own, on one line, without its help. */
  ck_assert_int_eq (scalar (h, "SELECT COUNT(*) FROM runs WHERE status = "
                               "'failed' AND (message LIKE '%--help%' OR "
                               "instr (message, char (10)) > 0)"), 0);
  ck_assert_int_eq (scalar (h, "SELECT COUNT(DISTINCT run_id) FROM "
                               "run_params WHERE key = 'workload.maxbytes'"),
                    8);
  ck_assert_int_eq (scalar (h, "SELECT COUNT(*) FROM ops o JOIN run_params p "
                               "ON p.run_id = o.run_id AND p.key = "
                               "'workload.maxbytes' AND p.value = '4MiB'"), 9);
  ck_assert_int_eq (scalar (h, "SELECT COUNT(*) FROM ops o JOIN run_params p "
                               "ON p.run_id = o.run_id AND p.key = "
                               "'algorithm' AND p.value = 'nvls' WHERE "
                               "o.algorithm = 'nvls'"), 4);
  /* The points' links come over from their shards with their tiers. */
  ck_assert_int_eq (scalar (h, "SELECT COUNT(*) FROM links WHERE tier = "
                               "'GPU-switch'"), 6 * 64);
  ck_assert_int_eq (scalar (h, "SELECT COUNT(*) FROM links WHERE tier IS "
                               "NULL"), 0);
  sqlite3_close (h);

  r = weft_cmd (sweep);
  ck_assert_int_eq (r.status, 1);
  ck_assert_ptr_nonnull (strstr (r.out, "# 8 points: 2 run, 6 already "
                                        "complete, 2 failed\n"));
  result_clear (&r);

  const char *plot[] = { "plot", "s.db", "--x", "algorithm", "--out",
                         "sp", NULL };
  r = weft_cmd (plot);
  ck_assert_int_eq (r.status, 0);
  ck_assert_ptr_nonnull (strstr (r.out, "sweep.png"));
  result_clear (&r);
}
END_TEST

START_TEST (test_sweep_checks_first)
{
  /* A misspelt key, a value no point can run with, or a key or value
   * given twice stops the sweep before any point runs, with weft run's
   * own message for the first two; a shard left
   * empty by a worker that could not write it is dropped. */
  g_autofree char *empty = g_build_filename (tmp_dir, "c.db.shard-0-1-0.db",
                                             NULL);
  ck_assert (g_file_set_contents (empty, "", 0, NULL));
  const char *cases[][3] = {
    { "link_types.nvlink4.latncy=100ns,200ns", "protocol=Simple",
      "--grid link_types.nvlink4.latncy=100ns: --set "
      "link_types.nvlink4.latncy=100ns:1:1: unknown key 'latncy'; did you "
      "mean 'latency'?" },
    { "nodes.0.template=dgx-h100,nope", "protocol=Simple",
      "--grid nodes.0.template=nope:" },
    { "algorithm=ring,tre", "protocol=LL,Simple",
      "--grid algorithm=tre: weft run: unknown algorithm 'tre'" },
    /* A key or a value twice would be points alike, recorded as one. */
    { "algorithm=ring", "algorithm=tree",
      "--grid algorithm is given twice: give its values once" },
    { "algorithm=ring,tree,ring", "protocol=Simple",
      "--grid algorithm=ring,tree,ring: the value 'ring' is given twice" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      const char *sweep[] = { "sweep", WEFT_SOURCE_DIR
                              "/scenarios/dgx-h100.yaml", "--grid",
                              cases[i][0], "--grid", cases[i][1], "-b", "1M",
                              "-e", "1M", "--db", "c.db", NULL };
      Result r = weft_cmd (sweep);
      ck_assert_int_eq (r.status, 2);
      ck_assert_msg (strstr (r.err, cases[i][2]), "%s", r.err);
      ck_assert_str_eq (r.out, "");
      result_clear (&r);
    }
  ck_assert (!g_file_test (empty, G_FILE_TEST_EXISTS));
  sqlite3 *h = open_db ("c.db");
  ck_assert_int_eq (scalar (h, "SELECT COUNT(*) FROM runs"), 0);
  sqlite3_close (h);
}
END_TEST

START_TEST (test_sweep_section)
{
  /* The grid may be written in the scenario. */
  g_autofree char *path = g_build_filename (tmp_dir, "g.yaml", NULL);
  g_autofree char *text = g_strdup_printf (
      "weft: 1\ninclude: %s/scenarios/presets/servers.yaml\n"
      "nodes: [{name: dgx, template: dgx-h100}]\n"
      "sweep:\n  grid:\n    link_types.nvlink4.latency: [100ns, 300ns]\n"
      "    nodes.0.template: [dgx-h100, dgx-h200]\n", WEFT_SOURCE_DIR);
  ck_assert (g_file_set_contents (path, text, -1, NULL));
  const char *sweep[] = { "sweep", path, "-b", "1M", "-e", "1M", "--db",
                          "g.db", NULL };
  Result r = weft_cmd (sweep);
  ck_assert_int_eq (r.status, 0);
  ck_assert_ptr_nonnull (strstr (r.out, "# 4 points: 4 run, 0 already "
                                        "complete, 0 failed"));
  result_clear (&r);
  /* busbw against either key: one a number with a unit, one names. */
  const char *keys[] = { "link_types.nvlink4.latency", "nodes.0.template" };
  for (guint i = 0; i < G_N_ELEMENTS (keys); i++)
    {
      const char *plot[] = { "plot", "g.db", "--x", keys[i], "--out",
                             "gp", "--force", NULL };
      r = weft_cmd (plot);
      ck_assert_msg (r.status == 0, "%s", r.err);
      ck_assert_ptr_nonnull (strstr (r.out, "sweep.png"));
      result_clear (&r);
    }
  double x;
  const char *unit;
  ck_assert (weft_results_sweep_value ("300ns", &x, &unit));
  ck_assert_double_eq_tol (x, 300, 1e-9);
  ck_assert_str_eq (unit, "ns");
  ck_assert (weft_results_sweep_value ("400Gb/s", &x, &unit));
  ck_assert_double_eq_tol (x, 50, 1e-9);
  ck_assert (weft_results_sweep_value ("2:1", &x, &unit));
  ck_assert_double_eq_tol (x, 2, 1e-9);
  ck_assert (weft_results_sweep_value ("8.5", &x, &unit));
  ck_assert_str_eq (unit, "");
  ck_assert (!weft_results_sweep_value ("dgx-h100", &x, &unit));
  ck_assert (!weft_results_sweep_value ("ring", &x, &unit));
}
END_TEST

START_TEST (test_shard_moved_once)
{
  /* A shard merged into the database gives up its runs in the same
   * transaction: a sweep stopped after the merge but before it removed
   * the file leaves a shard that brings nothing in again. */
  const char *run[] = { "run", "-b", "1M", "-e", "1M", "--db", "s.db", NULL };
  Result r = weft_cmd (run);
  ck_assert_int_eq (r.status, 0);
  result_clear (&r);
  sqlite3 *h = open_db ("s.db");
  sqlite3_int64 ops = scalar (h, "SELECT COUNT(*) FROM ops");
  sqlite3_close (h);
  ck_assert_int_gt (ops, 0);

  g_autofree char *path = g_build_filename (tmp_dir, "into.db", NULL);
  g_autofree char *shard = g_build_filename (tmp_dir, "s.db", NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (WeftDb) db = weft_db_open (path, &error);
  ck_assert_msg (db != NULL, "%s", error ? error->message : "");
  g_autoptr (GArray) runs = g_array_new (FALSE, FALSE, sizeof (int64_t));
  ck_assert (weft_db_merge (db, shard, runs, &error));
  ck_assert_uint_eq (runs->len, 1);
  ck_assert (weft_db_merge (db, shard, runs, &error));
  ck_assert_uint_eq (runs->len, 1);

  h = open_db ("into.db");
  ck_assert_int_eq (scalar (h, "SELECT COUNT(*) FROM runs"), 1);
  ck_assert_int_eq (scalar (h, "SELECT COUNT(*) FROM ops"), ops);
  sqlite3_close (h);
  h = open_db ("s.db");
  ck_assert_int_eq (scalar (h, "SELECT COUNT(*) FROM runs"), 0);
  sqlite3_close (h);
}
END_TEST

START_TEST (test_sweep_killed_then_resumed)
{
  /* A sweep killed with its workers mid-way is finished by running it
   * again: one complete run per point in the end. */
  g_autofree char *db = g_build_filename (tmp_dir, "k.db", NULL);
  char *argv[] = { (char *) WEFT_BINARY, "sweep",
                   WEFT_SOURCE_DIR "/scenarios/dgx-h100.yaml", "--grid",
                   "link_types.nvlink4.latency=100ns,200ns,300ns,400ns",
                   "--fidelity", "packet", "-b", "16M", "-e", "16M", "-j", "2",
                   "--db", db, NULL };
  GPid pid;
  int wait_status;

  ck_assert (g_spawn_async (tmp_dir, argv, NULL,
                            G_SPAWN_DO_NOT_REAP_CHILD
                                | G_SPAWN_STDOUT_TO_DEV_NULL
                                | G_SPAWN_STDERR_TO_DEV_NULL,
                            new_group, NULL, &pid, NULL));
  g_usleep (1500 * 1000);
  kill (-pid, SIGKILL);
  waitpid (pid, &wait_status, 0);

  const char *again[] = { "sweep", WEFT_SOURCE_DIR "/scenarios/dgx-h100.yaml",
                          "--grid",
                          "link_types.nvlink4.latency=100ns,200ns,300ns,400ns",
                          "--fidelity", "packet", "-b", "16M", "-e", "16M",
                          "-j", "2", "--db", db, NULL };
  Result r = weft_cmd (again);
  ck_assert_int_eq (r.status, 0);
  result_clear (&r);
  sqlite3 *h = open_db ("k.db");
  ck_assert_int_eq (scalar (h, "SELECT COUNT(*) FROM runs WHERE status = "
                               "'complete'"), 4);
  ck_assert_int_eq (scalar (h, "SELECT COUNT(*) FROM (SELECT p.value FROM "
                               "runs r JOIN run_params p ON p.run_id = r.id "
                               "WHERE r.status = 'complete' AND p.key = "
                               "'link_types.nvlink4.latency' GROUP BY p.value "
                               "HAVING COUNT(*) = 1)"), 4);
  g_autofree char *check = text (h, "PRAGMA integrity_check");
  ck_assert_str_eq (check, "ok");
  sqlite3_close (h);
}
END_TEST

/* The processes whose command line holds @needle. */
/* The shards of the database @name in tmp_dir that hold a run. */
static guint
shards_with_runs (const char *name)
{
  g_autofree char *prefix = g_strdup_printf ("%s.shard-", name);
  g_autoptr (GDir) d = g_dir_open (tmp_dir, 0, NULL);
  const char *f;
  guint found = 0;

  while (d && (f = g_dir_read_name (d)))
    {
      g_autofree char *path = g_build_filename (tmp_dir, f, NULL);
      sqlite3 *h;
      sqlite3_stmt *st;
      if (!g_str_has_prefix (f, prefix) || !g_str_has_suffix (f, ".db")
          || sqlite3_open_v2 (path, &h, SQLITE_OPEN_READONLY, NULL)
                 != SQLITE_OK)
        continue;
      sqlite3_busy_timeout (h, 1000);
      if (sqlite3_prepare_v2 (h, "SELECT COUNT(*) FROM runs", -1, &st, NULL)
          == SQLITE_OK)
        {
          if (sqlite3_step (st) == SQLITE_ROW && sqlite3_column_int (st, 0))
            found++;
          sqlite3_finalize (st);
        }
      sqlite3_close (h);
    }
  return found;
}

START_TEST (test_sweep_stopped_alone)
{
  /* A signal to the sweep alone (not its process group) stops its
   * workers too: SIGTERM takes in what they did, marked interrupted, and
   * ends with 130; after SIGKILL they end on their own. */
  for (int sig = 0; sig < 2; sig++)
    {
      g_autofree char *name = g_strdup_printf ("alone%d.db", sig);
      g_autofree char *db = g_build_filename (tmp_dir, name, NULL);
      char *argv[] = { (char *) WEFT_BINARY, "sweep",
                       WEFT_SOURCE_DIR "/scenarios/dgx-h100.yaml", "--grid",
                       "link_types.nvlink4.latency=100ns,200ns,300ns,400ns",
                       "--fidelity", "packet", "-b", "1G", "-e", "1G", "-a",
                       "ring", "-j", "2", "--db", db, NULL };
      GPid pid;
      int wait_status;
      ck_assert (g_spawn_async (tmp_dir, argv, NULL,
                                G_SPAWN_DO_NOT_REAP_CHILD
                                    | G_SPAWN_STDOUT_TO_DEV_NULL
                                    | G_SPAWN_STDERR_TO_DEV_NULL,
                                NULL, NULL, &pid, NULL));
      /* Until both workers have their runs in their shards (before that a
       * signal ends a worker with nothing to record, slow as the build
       * may be). */
      for (int tries = 0; tries < 1200 && shards_with_runs (name) < 2;
           tries++)
        g_usleep (50 * 1000);
      ck_assert_uint_eq (shards_with_runs (name), 2);
      kill (pid, sig == 0 ? SIGTERM : SIGKILL);
      ck_assert_int_eq (waitpid (pid, &wait_status, 0), pid);
      if (sig == 0)
        {
          ck_assert (WIFEXITED (wait_status));
          ck_assert_int_eq (WEXITSTATUS (wait_status), 130);
          sqlite3 *h = open_db (name);
          ck_assert_int_eq (scalar (h, "SELECT COUNT(*) FROM runs WHERE "
                                       "status = 'interrupted'"), 2);
          ck_assert_int_eq (scalar (h, "SELECT COUNT(*) FROM runs WHERE "
                                       "status NOT IN ('interrupted', "
                                       "'complete')"), 0);
          sqlite3_close (h);
        }
      for (int tries = 0; tries < 100 && processes_with (name) > 0; tries++)
        g_usleep (50 * 1000);
      ck_assert_uint_eq (processes_with (name), 0);
    }
}
END_TEST

#ifdef WEFT_MPIRUN
/* mpirun, with Open MPI's leaks left out of AddressSanitizer's report. */
static int
mpirun (const char *const *args, gboolean wait, GPid *pid)
{
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  g_auto (GStrv) envp = g_get_environ ();
  int status = -1;

  envp = g_environ_setenv (envp, "ASAN_OPTIONS", "detect_leaks=0", TRUE);
  g_ptr_array_add (argv, (char *) WEFT_MPIRUN);
  g_ptr_array_add (argv, "--oversubscribe");
  g_ptr_array_add (argv, "--allow-run-as-root");
  g_ptr_array_add (argv, "-n");
  g_ptr_array_add (argv, "3");
  g_ptr_array_add (argv, (char *) WEFT_BINARY);
  for (int i = 0; args[i]; i++)
    g_ptr_array_add (argv, (char *) args[i]);
  g_ptr_array_add (argv, NULL);
  if (wait)
    {
      ck_assert (g_spawn_sync (tmp_dir, (char **) argv->pdata, envp,
                               G_SPAWN_STDOUT_TO_DEV_NULL
                                   | G_SPAWN_STDERR_TO_DEV_NULL,
                               NULL, NULL, NULL, NULL, &status, NULL));
      return WIFEXITED (status) ? WEXITSTATUS (status) : -1;
    }
  ck_assert (g_spawn_async (tmp_dir, (char **) argv->pdata, envp,
                            G_SPAWN_DO_NOT_REAP_CHILD
                                | G_SPAWN_STDOUT_TO_DEV_NULL
                                | G_SPAWN_STDERR_TO_DEV_NULL,
                            new_group, NULL, pid, NULL));
  return 0;
}

/* Kill the weft process that is MPI rank @rank of a sweep into @db. */
static gboolean
kill_rank (const char *db, int rank)
{
  GDir *proc = g_dir_open ("/proc", 0, NULL);
  const char *name;
  g_autofree char *want = g_strdup_printf ("OMPI_COMM_WORLD_RANK=%d", rank);
  gboolean killed = FALSE;

  while (proc && !killed && (name = g_dir_read_name (proc)))
    {
      g_autofree char *cmd_path = g_strdup_printf ("/proc/%s/cmdline", name);
      g_autofree char *env_path = g_strdup_printf ("/proc/%s/environ", name);
      g_autofree char *cmd = NULL, *env = NULL;
      gsize cmd_len, env_len;
      if (!g_file_get_contents (cmd_path, &cmd, &cmd_len, NULL)
          || !g_file_get_contents (env_path, &env, &env_len, NULL))
        continue;
      gboolean sweep = FALSE, ours = FALSE, is_rank = FALSE;
      for (gsize i = 0; i < cmd_len; i += strlen (cmd + i) + 1)
        {
          sweep |= strcmp (cmd + i, "sweep") == 0;
          ours |= strcmp (cmd + i, db) == 0;
        }
      for (gsize i = 0; i < env_len; i += strlen (env + i) + 1)
        is_rank |= strcmp (env + i, want) == 0;
      if (sweep && ours && is_rank)
        killed = kill (atoi (name), SIGKILL) == 0;
    }
  if (proc)
    g_dir_close (proc);
  return killed;
}

START_TEST (test_sweep_over_mpi)
{
  /* Three MPI ranks share the points; rank 0 merges their shards: one
   * complete run per point.  Then a rank killed mid-sweep, and the sweep
   * run again, which finishes it. */
  g_autofree char *db = g_build_filename (tmp_dir, "m.db", NULL);
  const char *args[] = { "sweep", WEFT_SOURCE_DIR "/scenarios/dgx-h100.yaml",
                         "--grid", "link_types.nvlink4.latency=100ns,200ns,"
                         "300ns,400ns,500ns", "-b", "1M", "-e", "4M", "-j",
                         "1", "--db", db, NULL };
  ck_assert_int_eq (mpirun (args, TRUE, NULL), 0);
  sqlite3 *h = open_db ("m.db");
  ck_assert_int_eq (scalar (h, "SELECT COUNT(*) FROM runs WHERE status = "
                               "'complete'"), 5);
  ck_assert_int_eq (scalar (h, "SELECT COUNT(DISTINCT value) FROM run_params "
                               "WHERE key = 'link_types.nvlink4.latency'"), 5);
  sqlite3_close (h);

  g_autofree char *db2 = g_build_filename (tmp_dir, "m2.db", NULL);
  const char *slow[] = { "sweep", WEFT_SOURCE_DIR "/scenarios/dgx-h100.yaml",
                         "--grid", "link_types.nvlink4.latency=100ns,200ns,"
                         "300ns,400ns,500ns,600ns", "--fidelity", "packet",
                         "-b", "16M", "-e", "16M", "-j", "1", "--db", db2,
                         /* every candidate: points long enough to be
                          * caught running */
                         "--select", "fastest", NULL };
  GPid pid;
  int wait_status;
  mpirun (slow, FALSE, &pid);
  gboolean killed = FALSE;
  for (int tries = 0; tries < 100 && !killed; tries++)
    {
      g_usleep (200 * 1000);
      killed = tries >= 5 && kill_rank (db2, 1);
    }
  ck_assert (killed);
  waitpid (pid, &wait_status, 0);
  kill (-pid, SIGKILL);
  ck_assert_int_eq (mpirun (slow, TRUE, NULL), 0);
  h = open_db ("m2.db");
  ck_assert_int_eq (scalar (h, "SELECT COUNT(*) FROM (SELECT p.value FROM "
                               "runs r JOIN run_params p ON p.run_id = r.id "
                               "WHERE r.status = 'complete' AND p.key = "
                               "'link_types.nvlink4.latency' GROUP BY p.value "
                               "HAVING COUNT(*) = 1)"), 6);
  ck_assert_int_eq (scalar (h, "SELECT COUNT(*) FROM runs WHERE status = "
                               "'complete'"), 6);
  sqlite3_close (h);
}
END_TEST
#endif
static Suite *
sweep_suite (void)
{
  Suite *s = suite_create ("sweep");
  TCase *tc = tcase_create ("sweeps");

  tcase_set_timeout (tc, 300);
  tcase_add_checked_fixture (tc, setup, teardown);
  tcase_add_test (tc, test_sweep_points_resume_and_failures);
  tcase_add_test (tc, test_sweep_checks_first);
  tcase_add_test (tc, test_sweep_stopped_alone);
  tcase_add_test (tc, test_sweep_section);
  tcase_add_test (tc, test_shard_moved_once);
  tcase_add_test (tc, test_sweep_killed_then_resumed);
#ifdef WEFT_MPIRUN
  tcase_add_test (tc, test_sweep_over_mpi);
#endif
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  SRunner *runner = srunner_create (sweep_suite ());

  srunner_run_all (runner, CK_NORMAL);
  int failed = srunner_ntests_failed (runner);
  srunner_free (runner);
  return failed == 0 ? 0 : 1;
}
