/* Tests of the weft program's command line, run as a user would. */
#include <check.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

typedef struct {
  int status;
  char *out;
  char *err;
} Result;

static Result
weft (const char *first, ...)
{
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  g_autoptr (GError) error = NULL;
  Result r = { 0 };
  int wait_status;
  va_list ap;

  g_ptr_array_add (argv, (char *) WEFT_BINARY);
  va_start (ap, first);
  for (const char *arg = first; arg != NULL; arg = va_arg (ap, const char *))
    g_ptr_array_add (argv, (char *) arg);
  va_end (ap);
  g_ptr_array_add (argv, NULL);

  gboolean spawned = g_spawn_sync (NULL, (char **) argv->pdata, NULL,
                                   G_SPAWN_DEFAULT, NULL, NULL, &r.out,
                                   &r.err, &wait_status, &error);
  ck_assert_msg (spawned, "spawn: %s", error ? error->message : "?");
  ck_assert (WIFEXITED (wait_status));
  r.status = WEXITSTATUS (wait_status);
  return r;
}

static void
result_clear (Result *r)
{
  g_free (r->out);
  g_free (r->err);
}

START_TEST (test_no_command_is_usage_error)
{
  Result r = weft (NULL);

  ck_assert_int_eq (r.status, 2);
  ck_assert_ptr_nonnull (strstr (r.err, "Usage: weft COMMAND"));
  ck_assert_str_eq (r.out, "");
  result_clear (&r);
}
END_TEST

START_TEST (test_unknown_command)
{
  Result r = weft ("frobnicate", NULL);

  ck_assert_int_eq (r.status, 2);
  ck_assert_ptr_nonnull (strstr (r.err, "unknown command 'frobnicate'"));
  ck_assert_ptr_nonnull (strstr (r.err, "Usage: weft COMMAND"));
  ck_assert_str_eq (r.out, "");
  result_clear (&r);
}
END_TEST

START_TEST (test_unknown_option)
{
  Result r = weft ("run", "--frobnicate", NULL);

  ck_assert_int_eq (r.status, 2);
  ck_assert_ptr_nonnull (strstr (r.err, "Unknown option --frobnicate"));
  /* The error and where the options are, not the options themselves, which
   * would push the error off the screen. */
  ck_assert_ptr_nonnull (strstr (r.err, "'weft run --help' lists its options"));
  ck_assert_ptr_null (strstr (r.err, "--minbytes"));
  ck_assert_str_eq (r.out, "");
  result_clear (&r);
}
END_TEST

START_TEST (test_bad_option_value)
{
  Result r = weft ("run", "--fidelity", "quantum", NULL);

  ck_assert_int_eq (r.status, 2);
  ck_assert_ptr_nonnull (strstr (r.err, "unknown fidelity 'quantum'"));
  ck_assert_ptr_nonnull (strstr (r.err, "packet, flow, analytical, "
                                        "analytical-free"));
  result_clear (&r);

  r = weft ("run", "--seed", "many", NULL);
  ck_assert_int_eq (r.status, 2);
  ck_assert_ptr_nonnull (strstr (r.err, "many"));
  result_clear (&r);
}
END_TEST

START_TEST (test_missing_scenario_file)
{
  Result r = weft ("run", "/nonexistent/scenario.yaml", NULL);

  ck_assert_int_eq (r.status, 2);
  ck_assert_ptr_nonnull (strstr (r.err, "/nonexistent/scenario.yaml"));
  ck_assert_str_eq (r.out, "");
  result_clear (&r);
}
END_TEST

START_TEST (test_run_help_lists_defaults)
{
  Result r = weft ("run", "--help", NULL);
  const char *options[] = { "--op", "--algorithm", "--protocol", "--minbytes",
                            "--maxbytes", "--stepfactor", "--ranks",
                            "--fidelity", "--channels", "--chunks", "--seed",
                            "--log-level" };

  ck_assert_int_eq (r.status, 0);
  for (guint i = 0; i < G_N_ELEMENTS (options); i++)
    {
      const char *at = strstr (r.out, options[i]);
      ck_assert_msg (at != NULL, "%s not listed", options[i]);
      const char *eol = strchr (at, '\n');
      g_autofree char *line = g_strndup (at, eol - at);
      ck_assert_msg (strstr (line, "(default: ") != NULL,
                     "no default on: %s", line);
    }
  result_clear (&r);
}
END_TEST

START_TEST (test_help_command)
{
  Result r = weft ("help", NULL);

  ck_assert_int_eq (r.status, 0);
  ck_assert_ptr_nonnull (strstr (r.out, "  run "));
  ck_assert_ptr_nonnull (strstr (r.out, "  help "));
  ck_assert_ptr_nonnull (strstr (r.out, "  version "));
  result_clear (&r);

  r = weft ("help", "run", NULL);
  ck_assert_int_eq (r.status, 0);
  ck_assert_ptr_nonnull (strstr (r.out, "--fidelity"));
  result_clear (&r);

  r = weft ("help", "nothing", NULL);
  ck_assert_int_eq (r.status, 2);
  ck_assert_ptr_nonnull (strstr (r.err, "unknown command 'nothing'"));
  result_clear (&r);

  /* Every command and sub-command answers --help with its usage and an
   * example. */
  const char *commands[][2] = {
    { "run", NULL }, { "topo", NULL }, { "sweep", NULL },
    { "trace", "generate" }, { "trace", "chakra" }, { "report", NULL },
    { "plot", NULL }, { "params", NULL }, { "help", NULL },
  };
  for (guint i = 0; i < G_N_ELEMENTS (commands); i++)
    {
      r = commands[i][1] ? weft (commands[i][0], commands[i][1], "--help",
                                 NULL)
                         : weft (commands[i][0], "--help", NULL);
      ck_assert_msg (r.status == 0, "%s --help: %s", commands[i][0], r.err);
      ck_assert_msg (strstr (r.out, "Usage:") && strstr (r.out, "Examples:"),
                     "%s %s --help:\n%s", commands[i][0],
                     commands[i][1] ? commands[i][1] : "", r.out);
      result_clear (&r);
    }
  /* weft trace has two: its help names both. */
  r = weft ("trace", "--help", NULL);
  ck_assert_int_eq (r.status, 0);
  ck_assert (strstr (r.out, "weft trace generate")
             && strstr (r.out, "weft trace chakra"));
  result_clear (&r);
}
END_TEST

START_TEST (test_version)
{
  Result r = weft ("version", NULL);

  ck_assert_int_eq (r.status, 0);
  ck_assert (g_str_has_prefix (r.out, "weft "));
  /* Every library weft is built with, and its version. */
  const char *libraries[] = { "\nGLib 2.", "\nlibyaml 0.", "\nSQLite 3.",
                              "\nprotobuf-c 1.", "\nMPI: ", "\ngnuplot" };
  for (guint i = 0; i < G_N_ELEMENTS (libraries); i++)
    ck_assert_msg (strstr (r.out, libraries[i]), "%s not in\n%s",
                   libraries[i] + 1, r.out);
  result_clear (&r);

  r = weft ("version", "extra", NULL);
  ck_assert_int_eq (r.status, 2);
  result_clear (&r);
}
END_TEST

static int
count_rows (const char *out)
{
  int rows = 0;
  g_auto (GStrv) lines = g_strsplit (out, "\n", -1);

  for (int i = 0; lines[i]; i++)
    rows += lines[i][0] == ' ';
  return rows;
}

START_TEST (test_run_default_job)
{
  /* The bundled DGX H100 all_reduce sweep, 8 B to 8 GiB by factors of 2. */
  Result r = weft ("run", NULL);

  ck_assert_int_eq (r.status, 0);
  ck_assert_ptr_nonnull (strstr (r.out, "all_reduce on "));
  ck_assert_ptr_nonnull (strstr (r.out, "dgx-h100.yaml, 8 ranks"));
  ck_assert_int_eq (count_rows (r.out), 31);
  ck_assert_ptr_nonnull (strstr (r.out, "# Avg bus bandwidth    : "));
  ck_assert_str_eq (r.err, "");
  result_clear (&r);
}
END_TEST

/* Each row's size and time (us) in @out, weft's table, into @sizes and
 * @times (@max at most); returns how many. */
static int
row_times (const char *out, uint64_t *sizes, double *times, int max)
{
  g_auto (GStrv) lines = g_strsplit (out, "\n", -1);
  int n = 0;

  for (int i = 0; lines[i] && n < max; i++)
    if (lines[i][0] == ' '
        && sscanf (lines[i], "%" G_GUINT64_FORMAT " %*s %*s %*s %*s %lf",
                   &sizes[n], &times[n]) == 2)
      n++;
  return n;
}

/* Run the sweep of @scenario from 8 B to 8 GiB by factors of 4, with
 * --select @how, into @db; its rows' sizes and times. */
static int
sweep_times (const char *scenario, const char *how, const char *db,
             uint64_t *sizes, double *times, int max)
{
  Result r = weft ("run", scenario, "--select", how, "-b", "8", "-e", "8G",
                   "-f", "4", "--db", db, NULL);

  ck_assert_int_eq (r.status, 0);
  int n = row_times (r.out, sizes, times, max);
  result_clear (&r);
  return n;
}

START_TEST (test_select_fastest_never_slower)
{
  /* --select fastest simulates every candidate NCCL's pick is one of, so
   * at no size can it be slower; on these fabrics NCCL's pick is also not
   * far off: never more than twice the fastest. */
  static const char *const scenarios[] = {
    WEFT_SOURCE_DIR "/scenarios/dgx-h100.yaml",
    WEFT_SOURCE_DIR "/scenarios/dgx-a100.yaml",
  };
  g_autofree char *dir = g_dir_make_tmp ("weft-select-XXXXXX", NULL);
  g_autofree char *db = g_build_filename (dir, "w.db", NULL);

  for (guint k = 0; k < G_N_ELEMENTS (scenarios); k++)
    {
      uint64_t sizes[2][32];
      double times[2][32];
      int n = sweep_times (scenarios[k], "nccl", db, sizes[0], times[0], 32);
      ck_assert_int_eq (sweep_times (scenarios[k], "fastest", db, sizes[1],
                                     times[1], 32), n);
      ck_assert_int_eq (n, 16);
      for (int i = 0; i < n; i++)
        {
          ck_assert_uint_eq (sizes[0][i], sizes[1][i]);
          ck_assert_msg (times[1][i] <= times[0][i], "%s %" G_GUINT64_FORMAT
                         ": fastest %.2f us, nccl %.2f us", scenarios[k],
                         sizes[0][i], times[1][i], times[0][i]);
          ck_assert (times[0][i] <= 2 * times[1][i]);
        }
    }
  g_unlink (db);
  g_rmdir (dir);
}
END_TEST

START_TEST (test_select_own_algorithm)
{
  /* An algorithm of weft's own with the protocol left to auto: by default
   * one protocol a size, the one NCCL's model gives its ring or tree (LL
   * for the smallest sizes, Simple for the largest); fastest tries each
   * and is never slower. */
  g_autofree char *dir = g_dir_make_tmp ("weft-select-XXXXXX", NULL);
  g_autofree char *db = g_build_filename (dir, "w.db", NULL);
  const char *how[] = { "nccl", "fastest" };
  uint64_t sizes[2][8];
  double times[2][8];
  int n[2];

  for (int k = 0; k < 2; k++)
    {
      Result r = weft ("run", "-v",
                       WEFT_SOURCE_DIR "/scenarios/h100-256-rail.yaml",
                       "--ranks", "node[0-1]/gpu[0-7]", "-a", "hierarchical",
                       "-b", "8", "-e", "256M", "-f", "32", "--select",
                       how[k], "--db", db, NULL);
      g_auto (GStrv) lines = g_strsplit (r.out, "\n", -1);
      const char *first = NULL, *last = NULL;
      ck_assert_int_eq (r.status, 0);
      n[k] = row_times (r.out, sizes[k], times[k], 8);
      ck_assert_int_eq (n[k], 6);
      for (int i = 0; lines[i]; i++)
        {
          if (lines[i][0] == ' ')
            last = first == NULL ? (first = lines[i]) : lines[i];
          if (!g_str_has_prefix (lines[i], "#   candidates:"))
            continue;
          int simulated = 0, estimated = 0;
          for (const char *c = lines[i]; (c = strstr (c, " weft ")); c++)
            simulated++;
          for (const char *c = lines[i];
               (c = strstr (c, " NCCL's ring or tree ")); c++)
            estimated++;
          /* Each protocol with the estimate it was picked by. */
          ck_assert_int_eq (estimated, 3);
          if (k == 0)
            ck_assert_int_eq (simulated, 1);
        }
      if (k == 0)
        {
          ck_assert (g_str_has_suffix (first, " LL"));
          ck_assert (g_str_has_suffix (last, " Simple"));
        }
      result_clear (&r);
    }
  for (int i = 0; i < n[0]; i++)
    ck_assert (times[1][i] <= times[0][i]);
  g_unlink (db);
  g_rmdir (dir);
}
END_TEST

START_TEST (test_select_point_to_point)
{
  /* all_to_all is NCCL's point-to-point, which has no cost model: by
   * default weft runs it as NCCL does, every peer at once (direct), LL up
   * to 16 KiB for each of a peer's channels (32 on a DGX H100: 512 KiB a
   * peer, 4 MiB in all) and Simple above; NCCL never runs it with LL128,
   * so neither selection tries that. */
  g_autofree char *dir = g_dir_make_tmp ("weft-p2p-XXXXXX", NULL);
  g_autofree char *db = g_build_filename (dir, "w.db", NULL);
  const char *how[] = { "nccl", "fastest" };

  for (int k = 0; k < 2; k++)
    {
      Result r = weft ("run", "-v", WEFT_SOURCE_DIR "/scenarios/dgx-h100.yaml",
                       "-o", "all_to_all", "-b", "4M", "-e", "8M",
                       "--select", how[k], "--db", db, NULL);
      g_auto (GStrv) lines = g_strsplit (r.out, "\n", -1);
      int rows = 0, lists = 0;
      ck_assert_int_eq (r.status, 0);
      ck_assert (strstr (r.out, "LL128") == NULL);
      for (int i = 0; lines[i]; i++)
        {
          /* Each candidate is listed; NCCL's choice alone is simulated
           * by default, every one of them with fastest. */
          if (g_str_has_prefix (lines[i], "#   candidates:"))
            {
              ck_assert (strstr (lines[i], "pairwise/Simple") != NULL);
              ck_assert ((strstr (lines[i], "pairwise/Simple weft") != NULL)
                         == (k == 1));
              lists++;
            }
          if (lines[i][0] != ' ' || k == 1)
            continue;
          ck_assert (strstr (lines[i], " direct ") != NULL);
          ck_assert (g_str_has_suffix (lines[i], rows == 0 ? " LL"
                                                           : " Simple"));
          rows++;
        }
      ck_assert_int_eq (lists, 2);
      ck_assert_int_eq (rows, k == 0 ? 2 : 0);
      result_clear (&r);
    }
  g_unlink (db);
  g_rmdir (dir);
}
END_TEST

START_TEST (test_select_simulates_one)
{
  /* By default a size simulates the one candidate NCCL picks: under each
   * row -v lists every candidate with NCCL's estimate, and weft's time
   * for one of them; with fastest, weft's for each. */
  g_autofree char *dir = g_dir_make_tmp ("weft-select-XXXXXX", NULL);
  g_autofree char *db = g_build_filename (dir, "w.db", NULL);
  const char *how[] = { NULL, "fastest" };

  for (int k = 0; k < 2; k++)
    {
      Result r = weft ("run", "-v", "-b", "8", "-e", "1G", "-f", "8", "--db",
                       db, how[k] ? "--select" : NULL, how[k], NULL);
      g_auto (GStrv) lines = g_strsplit (r.out, "\n", -1);
      int rows = 0, lists = 0;
      ck_assert_int_eq (r.status, 0);
      for (int i = 0; lines[i]; i++)
        {
          rows += lines[i][0] == ' ';
          if (!g_str_has_prefix (lines[i], "#   candidates:"))
            continue;
          lists++;
          int simulated = 0, estimated = 0;
          for (const char *c = lines[i]; (c = strstr (c, " weft ")); c++)
            simulated++;
          for (const char *c = lines[i]; (c = strstr (c, " NCCL ")); c++)
            estimated++;
          /* ring, tree with three protocols each, and NVLS. */
          ck_assert_int_eq (estimated, 7);
          if (k == 0)
            ck_assert_int_eq (simulated, 1);
          else
            ck_assert_int_ge (simulated, 7);
        }
      ck_assert_int_eq (rows, 10);
      ck_assert_int_eq (lists, rows);
      result_clear (&r);
    }
  Result bad = weft ("run", "--select", "best", "--db", db, NULL);
  ck_assert_int_eq (bad.status, 2);
  ck_assert_ptr_nonnull (strstr (bad.err, "valid: nccl, fastest"));
  result_clear (&bad);
  g_unlink (db);
  g_rmdir (dir);
}
END_TEST

START_TEST (test_pat_where_nccl_has_it)
{
  /* NCCL considers PAT for all_gather and reduce_scatter with one GPU a
   * node, and there picks it for small sizes (log2 n steps, not n - 1);
   * never on a server of 8 GPUs, where it still runs when asked for. */
  g_autofree char *dir = g_dir_make_tmp ("weft-pat-XXXXXX", NULL);
  g_autofree char *db = g_build_filename (dir, "p.db", NULL);
  const char *star = WEFT_SOURCE_DIR "/scenarios/h100-4096-star.yaml";
  const char *ops[] = { "all_gather", "reduce_scatter" };

  for (int k = 0; k < 2; k++)
    {
      Result r = weft ("run", star, "--set", "nodes.0.name=host[0-63]",
                       "--set", "fabrics.0.nodes=host[0-63]/nic0", "-c",
                       ops[k], "-b", "64K", "-e", "64K", "-v", "--db", db,
                       NULL);
      ck_assert_msg (r.status == 0, "%s", r.err);
      const char *row = strstr (r.out, "\n       65536");
      ck_assert_msg (row && strstr (row, " pat ") < strstr (row + 1, "\n")
                     && strstr (row, " pat ") != NULL, "%s", r.out);
      ck_assert_ptr_nonnull (strstr (r.out, "pat/Simple NCCL "));
      result_clear (&r);
      r = weft ("run", "-c", ops[k], "-b", "64K", "-e", "64K", "-v",
                "--select", "fastest", "--db", db, NULL);
      ck_assert_msg (r.status == 0, "%s", r.err);
      ck_assert_msg (strstr (r.out, "pat") == NULL, "%s", r.out);
      result_clear (&r);
      r = weft ("run", "-c", ops[k], "-a", "pat", "-b", "64K", "-e", "64K",
                "--db", db, NULL);
      ck_assert_msg (r.status == 0 && strstr (r.out, " pat "), "%s%s",
                     r.out, r.err);
      result_clear (&r);
    }
  Result bad = weft ("run", "-a", "pat", "--db", db, NULL);
  ck_assert_int_eq (bad.status, 2);
  ck_assert_ptr_nonnull (strstr (bad.err, "'pat' cannot run all_reduce"));
  result_clear (&bad);
  bad = weft ("run", "-c", "all_gather", "-a", "pat", "-p", "LL", "--db", db,
              NULL);
  ck_assert_int_eq (bad.status, 2);
  ck_assert_ptr_nonnull (strstr (bad.err, "does not run with the LL"));
  result_clear (&bad);
  g_unlink (db);
  g_rmdir (dir);
}
END_TEST

START_TEST (test_collnet_where_the_network_reduces)
{
  /* CollNet is a candidate where the switches between servers reduce
   * (SHARP), and there NCCL picks it for a small all_reduce (one trip
   * into the network and back); elsewhere asking for it says why not. */
  g_autofree char *dir = g_dir_make_tmp ("weft-collnet-XXXXXX", NULL);
  g_autofree char *db = g_build_filename (dir, "c.db", NULL);
  const char *tree = WEFT_SOURCE_DIR "/scenarios/h100-256-fat-tree.yaml";

  Result r = weft ("run", tree, "--set",
                   "devices.quantum2.reduce_bandwidth=3200GB/s", "-b", "1K",
                   "-e", "1K", "-v", "--db", db, NULL);
  ck_assert_msg (r.status == 0, "%s", r.err);
  const char *row = strstr (r.out, "\n        1024");
  ck_assert_msg (row && strstr (row, "collnet") != NULL
                 && strstr (row, "collnet") < strstr (row, "#"), "%s", r.out);
  ck_assert_ptr_nonnull (strstr (r.out, "collnet/Simple NCCL "));
  result_clear (&r);
  r = weft ("run", tree, "-b", "1K", "-e", "1K", "-v", "--db", db, NULL);
  ck_assert_msg (r.status == 0 && strstr (r.out, "collnet") == NULL, "%s",
                 r.out);
  result_clear (&r);
  r = weft ("run", tree, "-a", "collnet", "--db", db, NULL);
  ck_assert_int_eq (r.status, 2);
  ck_assert_msg (strstr (r.err, "collnet needs switches that reduce (SHARP: "
                         "reduce_bandwidth above 0) between the servers: "
                         "ib/leaf0 has none"), "%s", r.err);
  result_clear (&r);
  r = weft ("run", "-a", "collnet", "--db", db, NULL);
  ck_assert_int_eq (r.status, 2);
  ck_assert_msg (strstr (r.err, "collnet needs GPUs in two servers or more"),
                 "%s", r.err);
  result_clear (&r);
  g_unlink (db);
  g_rmdir (dir);
}
END_TEST

START_TEST (test_run_options)
{
  Result r = weft ("run", "--op", "all_gather", "-b", "1M", "-e", "4M",
                   "--algorithm", "ring", "--ranks", "dgx/gpu[0-3]", NULL);

  ck_assert_int_eq (r.status, 0);
  ck_assert_ptr_nonnull (strstr (r.out, "all_gather on "));
  ck_assert_ptr_nonnull (strstr (r.out, "4 ranks"));
  ck_assert_int_eq (count_rows (r.out), 3);
  ck_assert_ptr_nonnull (strstr (r.out, "   1048576 "));
  ck_assert_ptr_nonnull (strstr (r.out, "   4194304 "));
  result_clear (&r);
}
END_TEST

START_TEST (test_run_channels_auto)
{
  /* auto, the default, and explicit counts run; over one server auto is
   * one ring of 8 chunks, so the tables agree. */
  Result a = weft ("run", "-b", "1M", "-e", "1M", "-a", "ring", "-p", "Simple",
                   "--channels", "auto", "--chunks", "auto", NULL);
  Result b = weft ("run", "-b", "1M", "-e", "1M", "-a", "ring", "-p", "Simple",
                   "--channels", "1", "--chunks", "8", NULL);
  Result c = weft ("run", "-b", "1M", "-e", "1M", "-a", "ring", "-p", "Simple",
                   "--channels", "2", "--chunks", "1", NULL);

  ck_assert_int_eq (a.status, 0);
  ck_assert_int_eq (b.status, 0);
  ck_assert_int_eq (c.status, 0);
  const char *ra = strstr (a.out, "   1048576 "), *rb = strstr (b.out,
                                                              "   1048576 ");
  ck_assert (ra && rb);
  ck_assert (strncmp (ra, rb, strcspn (ra, "\n")) == 0);
  ck_assert (strstr (c.out, "   1048576 ") != NULL);
  result_clear (&a);
  result_clear (&b);
  result_clear (&c);
}
END_TEST

START_TEST (test_run_bad_requests)
{
  struct {
    const char *args[6];
    const char *message;
  } cases[] = {
    { { "--op", "allreduce" }, "unknown collective 'allreduce'; valid: "
                               "all_reduce, all_gather" },
    { { "-c", "all_gather", "-o", "all_reduce" }, "-c names the collective" },
    { { "--algorithm", "hypercube" }, "unknown algorithm 'hypercube'; valid: "
                                      "auto, ring, tree" },
    { { "--op", "reduce_scatter", "--algorithm", "tree" },
      "algorithm 'tree' cannot run reduce_scatter; valid for reduce_scatter: "
      "auto, ring" },
    { { "--ranks", "gpu[0-3]" }, "rank selector 'gpu[0-3]' names 'gpu0', which is no node" },
    { { "-e", "8X" }, "'8X' is not a size" },
    { { "-b", "1G", "-e", "1M" }, "the smallest size (-b) is larger" },
    { { "--protocol", "LL64" }, "unknown protocol 'LL64'" },
    { { "-e", "64G" }, "a size of 64 GiB does not fit the GPUs' memory: h100 "
                       "(dgx/gpu0) has 80 GB" },
    { { "--algorithm", "nvls", "--op", "broadcast" },
      "algorithm 'nvls' cannot run broadcast" },
    { { "--jobs", "65" }, "--jobs takes 1 to 64" },
    { { "--jobs", "0" }, "--jobs takes 1 to 64" },
    { { "--channels", "0" }, "--channels takes auto or 1 to 64, not '0'" },
    { { "--channels", "eight" },
      "--channels takes auto or 1 to 64, not 'eight'" },
    { { "--chunks", "1025" }, "--chunks takes auto or 1 to 1024, not '1025'" },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      const char *const *a = cases[i].args;
      Result r = weft ("run", a[0], a[1], a[2], a[3], a[4], a[5], NULL);
      ck_assert_int_eq (r.status, 2);
      ck_assert_msg (strstr (r.err, cases[i].message) != NULL, "%s not in %s",
                     cases[i].message, r.err);
      ck_assert_str_eq (r.out, "");
      result_clear (&r);
    }
}
END_TEST

START_TEST (test_topo)
{
  Result r = weft ("topo", WEFT_SOURCE_DIR "/scenarios/dgx-h100.yaml", NULL);

  ck_assert_int_eq (r.status, 0);
  ck_assert_ptr_nonnull (strstr (r.out, "nodes: 26 (gpu 8, switch 8, nic 8, "
                                        "cpu 2)"));
  ck_assert_ptr_nonnull (strstr (r.out, "NVLink   423.5 GB/s"));
  ck_assert_ptr_nonnull (strstr (r.out, "diameter: 2 hops"));
  /* Its tiers: 8 GPUs' 18 NVLink4 lanes to the chips; the NICs' PCIe
   * links, with no network above them. */
  ck_assert_ptr_nonnull (strstr (r.out, "tiers, from the GPUs outward"));
  ck_assert_ptr_nonnull (strstr (r.out, "  GPU-switch             32 links "
                                        "      3388.2 GB/s  down:up -\n"));
  ck_assert_ptr_nonnull (strstr (r.out, "  GPU-NIC                 8 links "
                                        "       460.9 GB/s  down:up -\n"));
  /* No network: no tree to speak of. */
  ck_assert_ptr_null (strstr (r.out, "complete tree"));
  result_clear (&r);

  g_autofree char *dir = g_dir_make_tmp ("weft-cli-XXXXXX", NULL);
  g_autofree char *bad = g_build_filename (dir, "bad.yaml", NULL);
  g_autofree char *dot = g_build_filename (dir, "out.dot", NULL);

  /* Hosts joined in a ring by network links: a network, but no tree. */
  g_autofree char *ring = g_build_filename (dir, "ring.yaml", NULL);
  ck_assert (g_file_set_contents (ring, "weft: 1\nlink_types:\n"
                                  "  l: {port: ib, bandwidth: 100Gb/s}\n"
                                  "devices:\n  host: {kind: gpu, ports: "
                                  "{ib: 2}, reduce_bandwidth: 1TB/s}\n"
                                  "nodes: [{name: 'h[0-7]', device: host}]\n"
                                  "fabrics: [{kind: ring, nodes: 'h[0-7]', "
                                  "link: l}]\n", -1, NULL));
  r = weft ("topo", ring, NULL);
  ck_assert_int_eq (r.status, 0);
  ck_assert_ptr_nonnull (strstr (r.out, "  leaf "));
  ck_assert_ptr_null (strstr (r.out, "complete tree"));
  result_clear (&r);
  g_remove (ring);
  ck_assert (g_file_set_contents (bad, "weft: 1\nnodes: [{name: a, "
                                  "device: nope}]\n", -1, NULL));
  r = weft ("topo", bad, NULL);
  ck_assert_int_eq (r.status, 2);
  g_autofree char *expected = g_strdup_printf (
      "%s:2:27: unknown device 'nope'\n", bad);
  ck_assert_str_eq (r.err, expected);
  ck_assert_str_eq (r.out, "");
  result_clear (&r);

  r = weft ("topo", "--dot", dot, WEFT_SOURCE_DIR "/scenarios/pcie-8gpu.yaml",
            NULL);
  ck_assert_int_eq (r.status, 0);
  g_autofree char *graph = NULL;
  ck_assert (g_file_get_contents (dot, &graph, NULL, NULL));
  ck_assert_ptr_nonnull (strstr (graph, "\"cpu0\" -- \"cpu1\""));
  result_clear (&r);
  /* Its own earlier graph it replaces; anything else only with --force,
   * and never the scenario it reads. */
  r = weft ("topo", "--dot", dot, WEFT_SOURCE_DIR "/scenarios/pcie-8gpu.yaml",
            NULL);
  ck_assert_int_eq (r.status, 0);
  result_clear (&r);
  ck_assert (g_file_set_contents (dot, "notes\n", -1, NULL));
  r = weft ("topo", "--dot", dot, WEFT_SOURCE_DIR "/scenarios/pcie-8gpu.yaml",
            NULL);
  ck_assert_int_eq (r.status, 2);
  ck_assert_ptr_nonnull (strstr (r.err, "weft did not write it"));
  g_clear_pointer (&graph, g_free);
  ck_assert (g_file_get_contents (dot, &graph, NULL, NULL));
  ck_assert_str_eq (graph, "notes\n");
  result_clear (&r);
  r = weft ("topo", "--force", "--dot", dot,
            WEFT_SOURCE_DIR "/scenarios/pcie-8gpu.yaml", NULL);
  ck_assert_int_eq (r.status, 0);
  result_clear (&r);
  ck_assert (g_file_set_contents (bad, "weft: 1\ninclude: " WEFT_SOURCE_DIR
                                  "/scenarios/pcie-8gpu.yaml\n", -1, NULL));
  g_autofree char *before = NULL, *after = NULL;
  ck_assert (g_file_get_contents (bad, &before, NULL, NULL));
  r = weft ("topo", "--force", "--dot", bad, bad, NULL);
  ck_assert_int_eq (r.status, 2);
  ck_assert_ptr_nonnull (strstr (r.err, "is read by this command"));
  ck_assert (g_file_get_contents (bad, &after, NULL, NULL));
  ck_assert_str_eq (before, after);
  result_clear (&r);
  /* No file is left beside it. */
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  guint files = 0;
  while (g_dir_read_name (d))
    files++;
  ck_assert_uint_eq (files, 2);
  g_remove (bad);
  g_remove (dot);
  g_rmdir (dir);
}
END_TEST

START_TEST (test_ranks_named_exactly)
{
  /* Each case is refused before anything is simulated or recorded. */
  const char *cases[][3] = {
    { "--ranks", "dgx/gpu[0-8]", "names 'dgx/gpu8', which is no node" },
    { "--ranks", "dgx/gpu[0,0]", "names 'dgx/gpu0' twice" },
    { "--ranks", "dgx/nvswitch[0-1]", "names 'dgx/nvswitch0', which is not "
      "a GPU" },
    { "--ranks", "dgx/gpu0", "a collective needs two GPUs or more" },
    { "-b", "0", "must be at least 1 byte" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      Result r = weft ("run", cases[i][0], cases[i][1], "--db",
                       "/nonexistent-dir/x.db", NULL);
      ck_assert_int_eq (r.status, 2);
      ck_assert_msg (strstr (r.err, cases[i][2]), "%s: %s", cases[i][1],
                     r.err);
      ck_assert_str_eq (r.out, "");
      result_clear (&r);
    }
  /* A schedule file runs with any protocol asked for. */
  Result r = weft ("run", "--algorithm", WEFT_SOURCE_DIR
                   "/scenarios/algorithms/ring-allreduce-8.yaml", "-p", "LL",
                   "-b", "1M", "-e", "1M", "--db", "/nonexistent-dir/x.db",
                   NULL);
  ck_assert_int_eq (r.status, 2);
  ck_assert_msg (strstr (r.err, "/nonexistent-dir/x.db"), "%s", r.err);
  result_clear (&r);
  /* A schedule file that does not compute its operation is refused, where
   * it goes wrong, unless the check is skipped; one that does says so,
   * and how its bytes compare with a bandwidth-optimal algorithm's. */
  g_autofree char *dir = g_dir_make_tmp ("weft-cli-XXXXXX", NULL);
  g_autofree char *bad = g_build_filename (dir, "bad.yaml", NULL);
  ck_assert (g_file_set_contents (bad,
      "weft_schedule: 1\nop: all_reduce\nranks: 2\nchunks: 1\nprogram:\n"
      "  0: [{id: s, op: send, peer: 1, chunk: 0}, "
      "{op: recv, peer: 1, chunk: 0, after: [s]}]\n"
      "  1: [{id: s, op: send, peer: 0, chunk: 0}, "
      "{op: recv, peer: 0, chunk: 0, after: [s]}]\n", -1, NULL));
  r = weft ("run", "--algorithm", bad, "--ranks", "dgx/gpu[0-1]", "--check",
            NULL);
  ck_assert_int_eq (r.status, 2);
  ck_assert_msg (strstr (r.err, "bad.yaml:6:45: rank 0 step 1 is the last "
                         "to write chunk 0"), "%s", r.err);
  result_clear (&r);
  r = weft ("run", "--algorithm", bad, "--ranks", "dgx/gpu[0-1]", "--check",
            "--no-data-check", NULL);
  ck_assert_msg (r.status == 0
                 && strstr (r.out, "what it computes not checked; moves "
                                   "1.00x the bytes"), "%s%s", r.out, r.err);
  result_clear (&r);
  r = weft ("run", "--algorithm", WEFT_SOURCE_DIR
            "/scenarios/algorithms/ring-allreduce-8.yaml", "--check", NULL);
  ck_assert_msg (r.status == 0
                 && strstr (r.out, "computes its operation (checked); moves "
                                   "1.00x the bytes of a bandwidth-optimal "
                                   "all_reduce"), "%s%s", r.out, r.err);
  result_clear (&r);
  /* An MSCCL file runs with its protocol; one that does not compute its
   * operation is refused at its line, with nothing written; one that does
   * not name its collective takes --op. */
  r = weft ("run", "--algorithm", WEFT_SOURCE_DIR
            "/scenarios/algorithms/msccl-allpairs-allreduce-8.xml", "--check",
            NULL);
  ck_assert_msg (r.status == 0
                 && strstr (r.out, "computes its operation (checked)")
                 && strstr (r.out, "candidates: file/LL\n"), "%s%s", r.out,
                 r.err);
  result_clear (&r);
  g_autofree char *xml = g_build_filename (dir, "bad.xml", NULL);
  g_autofree char *db = g_build_filename (dir, "x.db", NULL);
  static const char two[] =
      "<algo nchunksperloop=\"2\" ngpus=\"2\"%s inplace=\"1\">\n"
      " <gpu id=\"0\" i_chunks=\"2\"><tb id=\"0\" send=\"1\" recv=\"1\">\n"
      "  <step s=\"0\" type=\"s\" srcoff=\"0\"/>\n"
      "  <step s=\"1\" type=\"%s\" srcoff=\"1\" dstoff=\"1\"/>\n"
      "  <step s=\"2\" type=\"r\" dstoff=\"0\"/></tb></gpu>\n"
      " <gpu id=\"1\" i_chunks=\"2\"><tb id=\"0\" send=\"0\" recv=\"0\">\n"
      "  <step s=\"0\" type=\"s\" srcoff=\"1\"/>\n"
      "  <step s=\"1\" type=\"rrcs\" srcoff=\"0\" dstoff=\"0\"/>\n"
      "  <step s=\"2\" type=\"r\" dstoff=\"1\"/></tb></gpu>\n</algo>\n";
  g_autofree char *wrong = g_strdup_printf (two, " coll=\"allreduce\"",
                                            "rcs");
  ck_assert (g_file_set_contents (xml, wrong, -1, NULL));
  r = weft ("run", "--algorithm", xml, "--ranks", "dgx/gpu[0-1]", "--db", db,
            NULL);
  ck_assert_int_eq (r.status, 2);
  ck_assert_msg (strstr (r.err, "bad.xml:4:3: gpu 0 thread block 0 step 1 "
                         "(rcs) is the last to write output chunk i[1]"),
                 "%s", r.err);
  ck_assert (!g_file_test (db, G_FILE_TEST_EXISTS));
  result_clear (&r);
  g_autofree char *unnamed = g_strdup_printf (two, "", "rrcs");
  ck_assert (g_file_set_contents (xml, unnamed, -1, NULL));
  r = weft ("run", "--algorithm", xml, "--ranks", "dgx/gpu[0-1]", "--check",
            NULL);
  ck_assert_int_eq (r.status, 2);
  ck_assert_msg (strstr (r.err, "does not say which collective it runs"),
                 "%s", r.err);
  result_clear (&r);
  r = weft ("run", "--algorithm", xml, "--ranks", "dgx/gpu[0-1]", "--check",
            "--op", "all_reduce", NULL);
  ck_assert_msg (r.status == 0 && strstr (r.out, "computes its operation"),
                 "%s%s", r.out, r.err);
  result_clear (&r);
  /* A program for any number of ranks is expanded for the run's, and
   * refused where it cannot be, with nothing written. */
  r = weft ("run", "--algorithm", WEFT_SOURCE_DIR
            "/scenarios/algorithms/recursive-doubling-allreduce.yaml",
            "--ranks", "dgx/gpu[0-5]", "--db", db, NULL);
  ck_assert_int_eq (r.status, 2);
  ck_assert_msg (strstr (r.err, "recursive-doubling-allreduce.yaml:10:12: "
                         "the schedule requires ispow2(n), which does not "
                         "hold for 6 ranks"), "%s", r.err);
  ck_assert (!g_file_test (db, G_FILE_TEST_EXISTS));
  result_clear (&r);
  r = weft ("run", "--algorithm", WEFT_SOURCE_DIR
            "/scenarios/algorithms/ring-allreduce.yaml", "--ranks",
            "dgx/gpu[0-2]", "--check", NULL);
  ck_assert_msg (r.status == 0
                 && strstr (r.out, "3 ranks")
                 && strstr (r.out, "computes its operation (checked); moves "
                                   "1.00x"), "%s%s", r.out, r.err);
  result_clear (&r);
  g_remove (xml);
  g_remove (bad);
  g_rmdir (dir);
}
END_TEST

START_TEST (test_nccl_tests_flags)
{
  /* -o is the reduction operator, as in nccl-tests, and -c the
   * collective; -o still takes a collective. */
  g_autofree char *dir = g_dir_make_tmp ("weft-cli-XXXXXX", NULL);
  g_autofree char *db = g_build_filename (dir, "o.db", NULL);
  Result r = weft ("run", "-o", "max", "-b", "1M", "-e", "1M", "--db", db,
                   NULL);
  ck_assert_int_eq (r.status, 0);
  ck_assert_ptr_nonnull (strstr (r.out, "all_reduce on"));
  ck_assert_ptr_nonnull (strstr (r.out, " float    max "));
  result_clear (&r);
  /* -v lists auto's candidates under each row, the chosen one's time the
   * row's: NCCL's pick by default (at 1 MiB its model puts the ring with
   * LL just ahead of NVLS), the fastest with --select fastest. */
  r = weft ("run", "-v", "-b", "1M", "-e", "1M", "--db", db, NULL);
  ck_assert_int_eq (r.status, 0);
  ck_assert_msg (strstr (r.out, "\n#   candidates: ")
                 && strstr (r.out, "ring/LL NCCL 28.01 us weft 36.44 us")
                 && strstr (r.out, "nvls/Simple NCCL 29.59 us,")
                 && strstr (r.out, "36.44    28.78"), "%s", r.out);
  result_clear (&r);
  r = weft ("run", "-v", "--select", "fastest", "-b", "1M", "-e", "1M",
            "--db", db, NULL);
  ck_assert_int_eq (r.status, 0);
  ck_assert_msg (strstr (r.out, "nvls/Simple NCCL 29.59 us weft 32.50 us")
                 && strstr (r.out, "32.50    32.26"), "%s", r.out);
  result_clear (&r);
  g_remove (db);
  g_rmdir (dir);
  const char *forms[][2] = { { "-c", "all_gather" }, { "-o", "all_gather" } };
  for (guint i = 0; i < G_N_ELEMENTS (forms); i++)
    {
      r = weft ("run", forms[i][0], forms[i][1], "-b", "1M", "-e", "1M",
                "--check", NULL);
      ck_assert_int_eq (r.status, 0);
      ck_assert_ptr_nonnull (strstr (r.out, "all_gather on"));
      result_clear (&r);
    }
}
END_TEST

/* The estimate `weft run --check` prints, in MiB. */
static double
check_memory (const char *chunks)
{
  Result r = weft ("run", WEFT_SOURCE_DIR "/scenarios/h100-256-rail.yaml",
                   "-a", "ring", "-b", "1G", "-e", "1G", "--chunks", chunks,
                   "--check", NULL);
  ck_assert_msg (r.status == 0, "%s", r.err);
  const char *at = strstr (r.out, "# memory: about ");
  ck_assert_msg (at != NULL, "%s", r.out);
  double value = g_ascii_strtod (at + strlen ("# memory: about "), NULL);
  if (strstr (at, " GiB at most"))
    value *= 1024;
  result_clear (&r);
  return value;
}

START_TEST (test_memory_known_before)
{
  /* --check says what a run will take, more with more pieces in flight;
   * a run that would pass --max-memory is refused before anything is
   * written, saying how much it would take and which schedule is the
   * largest. */
  ck_assert (check_memory ("8") > check_memory ("1"));
  g_autofree char *dir = g_dir_make_tmp ("weft-cli-XXXXXX", NULL);
  g_autofree char *db = g_build_filename (dir, "m.db", NULL);
  Result r = weft ("run", WEFT_SOURCE_DIR "/scenarios/h100-1024-fat-tree.yaml",
                   "-a", "ring", "-b", "1G", "-e", "1G", "--max-memory",
                   "64MiB", "--db", db, NULL);
  ck_assert_int_eq (r.status, 2);
  ck_assert_msg (strstr (r.err, "weft run: this run would take about ")
                 && strstr (r.err, "more than the 64 MiB --max-memory allows")
                 && strstr (r.err, "ring at 1 GiB over 1024 ranks"), "%s",
                 r.err);
  ck_assert (!g_file_test (db, G_FILE_TEST_EXISTS));
  result_clear (&r);
  /* A trace replay is estimated too, and refused likewise. */
  r = weft ("run", WEFT_SOURCE_DIR "/scenarios/dgx-h100.yaml", "--trace",
            WEFT_SOURCE_DIR "/scenarios/traces/dgx-h100-step.yaml",
            "--max-memory", "20MiB", "--db", db, NULL);
  ck_assert_int_eq (r.status, 2);
  ck_assert_msg (strstr (r.err, "would take about ")
                 && strstr (r.err, "more than the 20 MiB --max-memory allows"),
                 "%s", r.err);
  ck_assert (!g_file_test (db, G_FILE_TEST_EXISTS));
  result_clear (&r);
  r = weft ("run", WEFT_SOURCE_DIR "/scenarios/dgx-h100.yaml", "--trace",
            WEFT_SOURCE_DIR "/scenarios/traces/dgx-h100-step.yaml", "--check",
            NULL);
  ck_assert_msg (r.status == 0 && strstr (r.out, "# memory: about "), "%s%s",
                 r.out, r.err);
  result_clear (&r);
  /* -v ends with the peak the run reached, within the estimate, and what
   * held the memory. */
  r = weft ("run", "-v", "-b", "1M", "-e", "4M", "--db", db, NULL);
  ck_assert_msg (r.status == 0, "%s", r.err);
  const char *line = strstr (r.out, "# memory: peak ");
  ck_assert_msg (line != NULL, "%s", r.out);
  double peak, most;
  char peak_unit[4], most_unit[4];
  ck_assert_int_eq (sscanf (line, "# memory: peak %lf %3[GMi]B; estimated at "
                            "most %lf %3[GMi]B", &peak, peak_unit, &most,
                            most_unit), 4);
  peak *= strcmp (peak_unit, "GiB") == 0 ? 1024 : 1;
  most *= strcmp (most_unit, "GiB") == 0 ? 1024 : 1;
  ck_assert_msg (peak > 0 && peak <= most, "%s", line);
  ck_assert (strstr (line, "schedules") && strstr (line, "link statistics"));
  result_clear (&r);
  g_unlink (db);
  r = weft ("run", "--max-memory", "lots", "--db", db, NULL);
  ck_assert_int_eq (r.status, 2);
  ck_assert_ptr_nonnull (strstr (r.err, "--max-memory"));
  result_clear (&r);
  g_rmdir (dir);
}
END_TEST

START_TEST (test_narrow_bins_held)
{
  /* Bins narrower than memory holds (--bin 1ps) widen within what the
   * run may take, saying so, rather than take the machine: here what
   * --max-memory leaves over the run without bins. */
  g_autofree char *dir = g_dir_make_tmp ("weft-cli-XXXXXX", NULL);
  g_autofree char *db = g_build_filename (dir, "b.db", NULL);
  Result r = weft ("run", "-b", "64K", "-e", "64K", "--check", NULL);
  ck_assert_msg (r.status == 0, "%s", r.err);
  const char *at = strstr (r.out, "# memory: about ");
  ck_assert_msg (at && strstr (at, " MiB at most"), "%s", r.out);
  /* The estimate with default bins counts 2 million of them (46 MiB). */
  double mib = g_ascii_strtod (at + strlen ("# memory: about "), NULL) - 40;
  result_clear (&r);
  g_autofree char *most = g_strdup_printf ("%.0fMiB", mib);
  r = weft ("run", "-b", "64K", "-e", "64K", "--bin", "1ps", "--max-memory",
            most, "-v", "--db", db, NULL);
  ck_assert_msg (r.status == 0, "%s", r.err);
  unsigned long long kept;
  const char *say = strstr (r.err, "weft run: bins of 1 ps would be more "
                                   "than the ");
  ck_assert_msg (say && sscanf (say, "weft run: bins of 1 ps would be more "
                                "than the %llu link bins", &kept) == 1
                     && strstr (say, "a run keeps; the link statistics are "
                                     "in bins of "),
                 "%s", r.err);
  ck_assert_msg (kept < 1000000, "%s", say);
  const char *line = strstr (r.out, "# memory: peak ");
  double peak, estimate;
  char peak_unit[4], estimate_unit[4];
  ck_assert_msg (line && sscanf (line, "# memory: peak %lf %3[GMi]B; "
                                 "estimated at most %lf %3[GMi]B", &peak,
                                 peak_unit, &estimate, estimate_unit) == 4,
                 "%s", r.out);
  ck_assert_msg (strcmp (peak_unit, estimate_unit) != 0 || peak <= estimate,
                 "%s", line);
  result_clear (&r);
  g_unlink (db);
  g_rmdir (dir);
}
END_TEST

START_TEST (test_algorithm_list)
{
  /* --algorithm A,B,C runs each as a run of its own and prints them side
   * by side: each column is what that algorithm alone gives.  A list one
   * of which cannot run is refused before anything is written. */
  g_autofree char *dir = g_dir_make_tmp ("weft-cli-XXXXXX", NULL);
  g_autofree char *db = g_build_filename (dir, "l.db", NULL);
  Result r = weft ("run", "--algorithm", "ring,tree,nvls", "-b", "1M", "-e",
                   "4M", "-f", "4", "--db", db, NULL);
  ck_assert_msg (r.status == 0, "%s", r.err);
  ck_assert_msg (strstr (r.out, "ring") && strstr (r.out, "tree")
                 && strstr (r.out, "nvls")
                 && strstr (r.out, "# Avg bus bandwidth    : ring "),
                 "%s", r.out);
  const char *row = strstr (r.out, "\n     4194304");
  ck_assert_msg (row != NULL, "%s", r.out);
  double t[3], bw[3];
  char proto[3][8];
  ck_assert_int_eq (sscanf (row, " %*u %*u %lf %lf %7s %lf %lf %7s %lf %lf "
                            "%7s", &t[0], &bw[0], proto[0], &t[1], &bw[1],
                            proto[1], &t[2], &bw[2], proto[2]), 9);
  result_clear (&r);
  const char *names[] = { "ring", "tree", "nvls" };
  for (int k = 0; k < 3; k++)
    {
      g_autofree char *alone = g_build_filename (dir, "a.db", NULL);
      r = weft ("run", "-a", names[k], "-b", "4M", "-e", "4M", "--db", alone,
                NULL);
      ck_assert_msg (r.status == 0, "%s", r.err);
      double time;
      const char *line = strstr (r.out, "\n     4194304");
      ck_assert (line != NULL);
      ck_assert_int_eq (sscanf (line, " %*u %*u %*s %*s %*d %lf", &time), 1);
      ck_assert_msg (fabs (time - t[k]) < 0.006, "%s: %.2f alone, %.2f in "
                     "the list", names[k], time, t[k]);
      ck_assert_ptr_nonnull (strstr (line, proto[k]));
      result_clear (&r);
      g_unlink (alone);
    }
  /* Each a run of its own: the third is nvls's. */
  r = weft ("report", db, "--run", "3", NULL);
  ck_assert_msg (r.status == 0, "%s", r.err);
  ck_assert_msg (strstr (r.out, "# run 3:") && strstr (r.out, "complete")
                 && strstr (r.out, "nvls"), "%s", r.out);
  result_clear (&r);
  g_unlink (db);
  r = weft ("run", WEFT_SOURCE_DIR "/scenarios/pcie-8gpu.yaml", "--algorithm",
            "ring,nvls", "--db", db, NULL);
  ck_assert_int_eq (r.status, 2);
  ck_assert_ptr_nonnull (strstr (r.err, "cannot run nvls"));
  ck_assert (!g_file_test (db, G_FILE_TEST_EXISTS));
  result_clear (&r);
  /* Across servers the reducing switches are there, but not shared. */
  r = weft ("run", WEFT_SOURCE_DIR "/scenarios/h100-256-rail.yaml", "--ranks",
            "node[0-1]/gpu[0-7]", "--algorithm", "nvls", "--db", db, NULL);
  ck_assert_int_eq (r.status, 2);
  ck_assert_msg (strstr (r.err, "'node1/gpu0' is joined to none of those of "
                                "'node0/gpu0'"), "%s", r.err);
  result_clear (&r);
  r = weft ("run", "--algorithm", "ring,bogus", "--db", db, NULL);
  ck_assert_int_eq (r.status, 2);
  ck_assert_ptr_nonnull (strstr (r.err, "unknown algorithm 'bogus'"));
  result_clear (&r);
  /* A sweep's point is one run: a list there is a grid. */
  r = weft ("sweep", WEFT_SOURCE_DIR "/scenarios/dgx-h100.yaml", "--grid",
            "chunks=1,2", "--algorithm", "ring,tree", "--db", db, NULL);
  ck_assert_int_eq (r.status, 2);
  ck_assert_ptr_nonnull (strstr (r.err, "--grid algorithm=ring,tree"));
  ck_assert (!g_file_test (db, G_FILE_TEST_EXISTS));
  result_clear (&r);
  g_rmdir (dir);
}
END_TEST

START_TEST (test_bundled_from_anywhere)
{
  /* From a folder with no scenarios/ in it, the bundled scenarios are
   * found in weft's data folder. */
  g_autofree char *here = g_get_current_dir ();
  g_autofree char *dir = g_dir_make_tmp ("weft-cli-XXXXXX", NULL);
  ck_assert_int_eq (g_chdir (dir), 0);
  Result r = weft ("topo", "scenarios/pcie-8gpu.yaml", NULL);
  ck_assert_msg (r.status == 0, "%s", r.err);
  ck_assert_ptr_nonnull (strstr (r.out, "gpu 8"));
  result_clear (&r);
  r = weft ("topo", "scenarios/no-such.yaml", NULL);
  ck_assert_int_eq (r.status, 2);
  ck_assert_ptr_nonnull (strstr (r.err, "scenarios/no-such.yaml"));
  result_clear (&r);
  /* A scenario written there includes the presets by their names in
   * weft's scenarios; a file beside it of that name comes first. */
  ck_assert (g_file_set_contents ("mine.yaml", "weft: 1\n"
                                  "include: presets/servers.yaml\n"
                                  "nodes: [{name: dgx, template: dgx-h100}]\n",
                                  -1, NULL));
  r = weft ("topo", "mine.yaml", NULL);
  ck_assert_msg (r.status == 0 && strstr (r.out, "gpu 8"), "%s", r.err);
  result_clear (&r);
  ck_assert_int_eq (g_mkdir ("presets", 0755), 0);
  ck_assert (g_file_set_contents ("presets/servers.yaml", "weft: 1\n"
                                  "nodes: [{name: x, devic: gpu}]\n", -1,
                                  NULL));
  r = weft ("topo", "mine.yaml", NULL);
  ck_assert_int_eq (r.status, 2);
  ck_assert_msg (strstr (r.err, "presets/servers.yaml:2:19: unknown key "
                                "'devic'"), "%s", r.err);
  result_clear (&r);
  g_unlink ("presets/servers.yaml");
  g_rmdir ("presets");
  g_unlink ("mine.yaml");
  ck_assert_int_eq (g_chdir (here), 0);
  g_rmdir (dir);
}
END_TEST

START_TEST (test_topo_route)
{
  /* A route hop by hop: on the 2:1 fat-tree node5's NIC 0 is on leaf 0 and
   * node9's on leaf 1, so GPU 0's traffic climbs to a spine, one of the
   * three its fabric's engine chooses among, and never crosses NVLink. */
  const char *tree = WEFT_SOURCE_DIR "/scenarios/h100-256-fat-tree.yaml";
  Result r = weft ("topo", tree, "--set", "fabrics.0.oversubscription=2:1",
                   "--route", "node5/gpu0", "node9/gpu0", NULL);

  ck_assert_int_eq (r.status, 0);
  const char *want[] = {
    "route of flow 0 from node5/gpu0 to node9/gpu0: 8 links, cost 24",
    "node5/gpu0 -> node5/pcie0", "node5/pcie0 -> node5/nic0",
    "ib/leaf0 -> ib/spine0", "one of 3, by dmodk", "node9/nic0 -> node9/pcie0",
  };
  for (guint i = 0; i < G_N_ELEMENTS (want); i++)
    ck_assert_msg (strstr (r.out, want[i]) != NULL, "%s not in %s", want[i],
                   r.out);
  ck_assert_ptr_null (strstr (r.out, "nvlink"));
  result_clear (&r);

  r = weft ("topo", tree, "--set", "fabrics.0.routing=ecmp", "--route",
            "node5/gpu0", "node9/gpu0", "--flow", "3", NULL);
  ck_assert_int_eq (r.status, 0);
  ck_assert_ptr_nonnull (strstr (r.out, "by ecmp"));
  result_clear (&r);

  r = weft ("topo", tree, "--route", "node5/gpu0", "node99/gpu0", NULL);
  ck_assert_int_eq (r.status, 2);
  ck_assert_ptr_nonnull (strstr (r.err, "no node named 'node99/gpu0'"));
  ck_assert_str_eq (r.out, "");
  result_clear (&r);
  r = weft ("topo", tree, "--route", "node5/gpu0", NULL);
  ck_assert_int_eq (r.status, 2);
  ck_assert_ptr_nonnull (strstr (r.err, "--route takes two nodes"));
  result_clear (&r);
}
END_TEST

START_TEST (test_set_overrides)
{
  /* --set changes any single value of the scenario, here the servers of
   * a generated fat-tree; bad keys and values are bad input. */
  Result r = weft ("topo", WEFT_SOURCE_DIR "/scenarios/h100-1024-fat-tree.yaml",
                   "--set", "nodes.0.name=node[0-63]", "--set",
                   "fabrics.0.endpoints=node[0-63]/nic[0-7]", NULL);
  ck_assert_int_eq (r.status, 0);
  ck_assert_ptr_nonnull (strstr (r.out, "(gpu 512, "));
  result_clear (&r);

  /* A key the scenario leaves at its default can be added to its map. */
  r = weft ("topo", WEFT_SOURCE_DIR "/scenarios/h100-1024-fat-tree.yaml",
            "--set", "fabrics.0.oversubscription=3:1", NULL);
  ck_assert_int_eq (r.status, 0);
  /* 48 down and 16 up per leaf: far less than the non-blocking 25438.5. */
  ck_assert_ptr_nonnull (strstr (r.out, "bisection bandwidth: 9539.4 GB/s"));
  /* The 1024 NICs fill 22 leaves (the last a third full), whose 352
   * uplinks make the leaves 2.91:1 as a whole; a NIC takes 57.6 GB/s of
   * PCIe gen5 from its GPU and sends 49.7 GB/s of NDR on. */
  ck_assert_ptr_nonnull (strstr (r.out, "  leaf                 1024 links "
                                        "     50877.0 GB/s  down:up 2.91:1\n"));
  ck_assert_ptr_nonnull (strstr (r.out, "  spine                 176 links "
                                        "     17489.0 GB/s  down:up -\n"));
  ck_assert_ptr_nonnull (strstr (r.out, "  GPU-NIC              1024 links "
                                        "     58996.8 GB/s  down:up 1.16:1\n"));
  /* 48 NICs on 21 leaves and 16 on the last: 2384.9 and 795.0 GB/s. */
  ck_assert_ptr_nonnull (strstr (r.out, "the network is not a complete tree: "
                                        "its leaf switches take in 795.0 to "
                                        "2384.9 GB/s from below;"));
  result_clear (&r);

  struct {
    const char *set, *message;
  } bad[] = {
    { "fabrics.0.levels=x", "--set fabrics.0.levels=x:1:1: 'x' should be a "
                            "whole number from 2 to 3" },
    { "fabrics.0.level=3", "--set fabrics.0.level=3:1:1: unknown key 'level'; "
                           "did you mean 'levels'?" },
    { "fabric.0.levels=3", "--set fabric.0.levels=3: the scenario has no key "
                           "'fabric.0.levels'" },
    { "fabrics.0=3", "is not a single value" },
    { "levels", "write KEY=VALUE" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      r = weft ("topo", WEFT_SOURCE_DIR "/scenarios/h100-1024-fat-tree.yaml",
                "--set", bad[i].set, NULL);
      ck_assert_int_eq (r.status, 2);
      ck_assert_msg (strstr (r.err, bad[i].message) != NULL, "%s", r.err);
      result_clear (&r);
    }
}
END_TEST

START_TEST (test_params)
{
  Result r = weft ("params", NULL);

  ck_assert_int_eq (r.status, 0);
  ck_assert_ptr_nonnull (strstr (r.out, "bandwidth"));
  ck_assert_ptr_nonnull (strstr (r.out, "reduce_bandwidth"));
  result_clear (&r);
}
END_TEST

/* Write a DGX H100 scenario with @workload (its 4th line) to @path. */
static void
write_workload (const char *path, const char *workload)
{
  g_autofree char *text = g_strdup_printf (
      "weft: 1\ninclude: %s/scenarios/presets/servers.yaml\n"
      "nodes: [{name: dgx, template: dgx-h100}]\n"
      "workload: %s\n", WEFT_SOURCE_DIR, workload);
  ck_assert (g_file_set_contents (path, text, -1, NULL));
}

START_TEST (test_run_workload_section)
{
  /* The scenario's workload section sets what the flags do not. */
  g_autofree char *dir = g_dir_make_tmp ("weft-wl-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "w.yaml", NULL);
  g_autofree char *db = g_build_filename (dir, "w.db", NULL);
  write_workload (path, "{op: all_gather, minbytes: 1MiB, maxbytes: 4MiB}");
  Result r = weft ("run", path, "--db", db, NULL);
  ck_assert_int_eq (r.status, 0);
  ck_assert_ptr_nonnull (strstr (r.out, "all_gather on "));
  ck_assert_int_eq (count_rows (r.out), 3);
  result_clear (&r);

  /* A flag wins over the section. */
  r = weft ("run", path, "-e", "1M", "--op", "broadcast", "--db", db, NULL);
  ck_assert_int_eq (r.status, 0);
  ck_assert_ptr_nonnull (strstr (r.out, "broadcast on "));
  ck_assert_int_eq (count_rows (r.out), 1);
  result_clear (&r);

  /* A bad value is reported where it is written. */
  write_workload (path, "{op: allreduce}");
  r = weft ("run", path, NULL);
  ck_assert_int_eq (r.status, 2);
  g_autofree char *expected = g_strdup_printf (
      "%s:4:16: 'allreduce' is not a valid op\n", path);
  ck_assert_str_eq (r.err, expected);
  result_clear (&r);

  /* channels and chunks take auto or a count. */
  write_workload (path, "{maxbytes: 1MiB, channels: auto, chunks: 2}");
  r = weft ("run", path, "-b", "1M", "--db", db, NULL);
  ck_assert_int_eq (r.status, 0);
  ck_assert_int_eq (count_rows (r.out), 1);
  result_clear (&r);
  write_workload (path, "{channels: many}");
  r = weft ("run", path, NULL);
  ck_assert_int_eq (r.status, 2);
  g_autofree char *where = g_strdup_printf (
      "%s:4:22: 'many' should be auto or a whole number from 1 to 64\n",
      path);
  ck_assert_str_eq (r.err, where);
  result_clear (&r);

  /* Sizes that do not go together, and ranks the scenario lacks, are
   * reported where the section writes them too; a flag's own value is
   * weighed against the section's. */
  const char *cases[][3] = {
    { "{minbytes: 4MiB, maxbytes: 1MiB}", NULL,
      ":4:38: maxbytes is smaller than the smallest size, 4MiB\n" },
    { "{minbytes: 0B}", NULL, ":4:22: the smallest size must be at least "
      "1 byte" },
    { "{maxbytes: 1MiB}", "4M",
      ":4:22: maxbytes is smaller than the smallest size, 4M\n" },
    { "{ranks: 'dgx/gpu[0-9]'}", NULL, ":4:19: rank selector 'dgx/gpu[0-9]' "
      "names 'dgx/gpu8', which is no node of the scenario\n" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      write_workload (path, cases[i][0]);
      r = cases[i][1] ? weft ("run", path, "-b", cases[i][1], "--db", db,
                              NULL)
                      : weft ("run", path, "--db", db, NULL);
      ck_assert_int_eq (r.status, 2);
      g_autofree char *at = g_strconcat (path, cases[i][2], NULL);
      ck_assert_msg (g_str_has_prefix (r.err, at), "%s", r.err);
      result_clear (&r);
    }
  g_remove (path);
  g_remove (db);
  g_rmdir (dir);
}
END_TEST

START_TEST (test_trace_command)
{
  /* A generated trace on standard output; bad requests exit 2. */
  Result r = weft ("trace", "generate", "--tp", "2", "--dp", "2", "--layers",
                   "2", "--microbatches", "1", NULL);
  ck_assert_int_eq (r.status, 0);
  ck_assert (g_str_has_prefix (r.out, "# weft trace generate --tp 2 --pp 1 "
                                      "--dp 2"));
  ck_assert_ptr_nonnull (strstr (r.out, "\nranks: 4\n"));
  ck_assert_ptr_nonnull (strstr (r.out, "kind: all_reduce, comm: tp0.0"));
  result_clear (&r);

  r = weft ("trace", "generate", "--pp", "2", "--layers", "5", NULL);
  ck_assert_int_eq (r.status, 2);
  ck_assert_ptr_nonnull (strstr (r.err, "--layers must be a multiple of "
                                        "--pp"));
  ck_assert_str_eq (r.out, "");
  result_clear (&r);

  r = weft ("trace", "generate", "--tp-size", "16", NULL);
  ck_assert_int_eq (r.status, 2);
  ck_assert_ptr_nonnull (strstr (r.err, "--tp-size"));
  result_clear (&r);

  r = weft ("trace", "frobnicate", NULL);
  ck_assert_int_eq (r.status, 2);
  ck_assert_ptr_nonnull (strstr (r.err, "expected 'generate' or 'chakra'"));
  result_clear (&r);

  r = weft ("trace", "chakra", "/nonexistent/t.yaml", "/tmp/x", NULL);
  ck_assert_int_eq (r.status, 2);
  ck_assert_ptr_nonnull (strstr (r.err, "/nonexistent/t.yaml"));
  result_clear (&r);
}
END_TEST

static Suite *
cli_suite (void)
{
  Suite *s = suite_create ("cli");
  TCase *tc;

  tc = tcase_create ("usage errors");
  tcase_add_test (tc, test_no_command_is_usage_error);
  tcase_add_test (tc, test_unknown_command);
  tcase_add_test (tc, test_unknown_option);
  tcase_add_test (tc, test_bad_option_value);
  tcase_add_test (tc, test_missing_scenario_file);
  suite_add_tcase (s, tc);

  tc = tcase_create ("help and version");
  tcase_add_test (tc, test_run_help_lists_defaults);
  tcase_add_test (tc, test_help_command);
  tcase_add_test (tc, test_version);
  suite_add_tcase (s, tc);

  tc = tcase_create ("run");
  tcase_set_timeout (tc, 120);
  tcase_add_test (tc, test_run_default_job);
  tcase_add_test (tc, test_select_fastest_never_slower);
  tcase_add_test (tc, test_select_simulates_one);
  tcase_add_test (tc, test_select_point_to_point);
  tcase_add_test (tc, test_select_own_algorithm);
  tcase_add_test (tc, test_pat_where_nccl_has_it);
  tcase_add_test (tc, test_collnet_where_the_network_reduces);
  tcase_add_test (tc, test_run_options);
  tcase_add_test (tc, test_run_channels_auto);
  tcase_add_test (tc, test_run_bad_requests);
  tcase_add_test (tc, test_run_workload_section);
  tcase_add_test (tc, test_topo);
  tcase_add_test (tc, test_topo_route);
  tcase_add_test (tc, test_params);
  tcase_add_test (tc, test_set_overrides);
  tcase_add_test (tc, test_bundled_from_anywhere);
  tcase_add_test (tc, test_memory_known_before);
  tcase_add_test (tc, test_narrow_bins_held);
  tcase_add_test (tc, test_algorithm_list);
  tcase_add_test (tc, test_ranks_named_exactly);
  tcase_add_test (tc, test_nccl_tests_flags);
  tcase_add_test (tc, test_trace_command);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  SRunner *runner = srunner_create (cli_suite ());

  srunner_run_all (runner, CK_NORMAL);
  int failed = srunner_ntests_failed (runner);
  srunner_free (runner);
  return failed == 0 ? 0 : 1;
}
