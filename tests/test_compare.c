/* Tests of weft compare, run as a user would: a log against the scenario
 * it came from, and the logs it must refuse without writing anything. */
#include "results_cmd.h"

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#define SCENARIO WEFT_SOURCE_DIR "/scenarios/dgx-h100.yaml"

/* Write @text to @name in the test's folder; its path. */
static char *
write_log (const char *name, const char *text)
{
  char *path = g_build_filename (tmp_dir, name, NULL);

  ck_assert (g_file_set_contents (path, text, -1, NULL));
  return path;
}

static gboolean
exists (const char *name)
{
  g_autofree char *path = g_build_filename (tmp_dir, name, NULL);

  return g_file_test (path, G_FILE_TEST_EXISTS);
}

/* The decimals nccl-tests prints a time of @us with. */
static double
printed_step (double us)
{
  return us >= 10000 ? 1 : us >= 100 ? 0.1 : 0.01;
}

START_TEST (test_own_output_has_no_error)
{
  /* weft's own --nccl-tests table of a sweep, compared on the same
   * scenario, is the same model at the same sizes: weft's time differs
   * from the logged one only by the logged one's rounding. */
  const char *run[] = { "run", SCENARIO, "--db", "own.db", "-b", "64K", "-e",
                        "256M", "-f", "4", "--nccl-tests", NULL };
  Result r = weft_cmd (run);
  ck_assert_msg (r.status == 0, "%s", r.err);
  g_autofree char *log = write_log ("own.log", r.out);
  result_clear (&r);

  const char *compare[] = { "compare", log, SCENARIO, "--db", "c.db", NULL };
  r = weft_cmd (compare);
  ck_assert_msg (r.status == 0, "%s", r.err);
  ck_assert_ptr_nonnull (strstr (r.out, "# recorded as run 1 of c.db"));
  g_auto (GStrv) lines = g_strsplit (r.out, "\n", -1);
  int rows = 0;
  for (char **l = lines; *l; l++)
    {
      guint64 size;
      char type[16], redop[16];
      double t, bw, wt, wbw, err;
      if (sscanf (*l, "%" G_GUINT64_FORMAT " %15s %15s %lf %lf %lf %lf %lf",
                  &size, type, redop, &t, &bw, &wt, &wbw, &err) != 8)
        continue;
      rows++;
      /* Half a printed digit of the logged time, in %, and the table's
       * own two decimals. */
      double tol = printed_step (wt) / 2 / t * 100 + 0.005;
      ck_assert_msg (fabs (err) <= tol, "%s: error %g%% above %g%%", *l,
                     err, tol);
      ck_assert_double_eq_tol (wt, t, printed_step (wt) / 2 + 0.005);
    }
  ck_assert_int_eq (rows, 7);
  ck_assert_ptr_nonnull (strstr (r.out, "# |error| over the 5 rows from "
                                        "1 MiB: geometric mean 0.0"));
  result_clear (&r);

  /* The run is a normal run: its operations are those of the log's
   * sizes, and weft report reads it. */
  sqlite3 *h = open_db ("c.db");
  ck_assert_int_eq (scalar (h, "SELECT COUNT(*) FROM ops WHERE run_id = 1"),
                    7);
  g_autofree char *status = text (h, "SELECT status FROM runs WHERE id = 1");
  ck_assert_str_eq (status, "complete");
  g_autofree char *cmd = text (h, "SELECT command FROM runs WHERE id = 1");
  ck_assert (g_str_has_prefix (cmd, "weft compare "));
  sqlite3_close (h);
  const char *report[] = { "report", "c.db", NULL };
  r = weft_cmd (report);
  ck_assert_msg (r.status == 0, "%s", r.err);
  result_clear (&r);
}
END_TEST

START_TEST (test_sizes_as_logged)
{
  /* nccl-tests' own header with mpirun's prefixes and four ranks, sizes
   * that are no geometric series, and two types of one size: each size is
   * simulated once, exactly, and each row compared. */
  g_autoptr (GString) t = g_string_new (NULL);
  const char *p = "[1,0]<stdout>:";
  g_string_append_printf (t, "%s# Collective test starting: "
                          "all_gather_perf\n%s# Using devices\n", p, p);
  for (int r = 0; r < 4; r++)
    g_string_append_printf (t, "%s#  Rank %2d Group  0 Pid %6d on   host-a "
                            "device %2d [0x%02x] NVIDIA H100\n", p, r,
                            100 + r / 2, r, r);
  static const char *const rows[] = {
    "     1000000        250000     float    none      -1    30.00   33.33 "
    "  25.00    N/A    29.00   34.48   25.86    N/A",
    "     3000000        750000     float    none      -1    50.00   60.00 "
    "  45.00    N/A    49.00   61.22   45.92    N/A",
    "     3000000       1500000      half    none      -1    51.00   58.82 "
    "  44.12    N/A    50.00   60.00   45.00    N/A",
  };
  for (guint i = 0; i < G_N_ELEMENTS (rows); i++)
    g_string_append_printf (t, "%s%s\n", p, rows[i]);
  g_string_append_printf (t, "%s# Avg bus bandwidth    : 38.04\n", p);
  g_autofree char *log = write_log ("ag.log", t->str);

  const char *compare[] = { "compare", log, SCENARIO, "--db", "ag.db",
                            "--ranks", "dgx/gpu[0-3]", "--in-place", NULL };
  Result r = weft_cmd (compare);
  ck_assert_msg (r.status == 0, "%s", r.err);
  ck_assert_ptr_nonnull (strstr (r.out, "in-place columns"));
  ck_assert_ptr_nonnull (strstr (r.out, "     3000000      half"));
  ck_assert_ptr_nonnull (strstr (r.out, "    50.00     45.00"));
  result_clear (&r);
  sqlite3 *h = open_db ("ag.db");
  ck_assert_int_eq (scalar (h, "SELECT COUNT(*) FROM ops"), 2);
  ck_assert_int_eq (scalar (h, "SELECT SUM(bytes) FROM ops"), 4000000);
  ck_assert_int_eq (scalar (h, "SELECT MAX(nranks) FROM ops"), 4);
  g_autofree char *op = text (h, "SELECT DISTINCT op FROM ops");
  ck_assert_str_eq (op, "all_gather");
  sqlite3_close (h);
}
END_TEST

START_TEST (test_ranks_must_match)
{
  /* The log ran on two ranks; the scenario has eight GPUs. */
  g_autofree char *log = write_log ("two.log",
      "# Collective test starting: all_reduce_perf\n"
      "#  Rank  0 Group  0 Pid  11 on a device  0 [0x01] NVIDIA H100\n"
      "#  Rank  1 Group  0 Pid  11 on a device  1 [0x02] NVIDIA H100\n"
      "     1048576        262144     float     sum      -1    20.00   52.43 "
      "  52.43      0    20.00   52.43   52.43      0\n");
  const char *compare[] = { "compare", log, SCENARIO, "--db", "r.db", NULL };
  Result r = weft_cmd (compare);

  ck_assert_int_eq (r.status, 2);
  ck_assert_msg (strstr (r.err, "ran on 2 ranks, and the scenario has 8 "
                                "GPUs") != NULL, "%s", r.err);
  ck_assert (!exists ("r.db"));
  result_clear (&r);

  const char *picked[] = { "compare", log, SCENARIO, "--db", "r.db",
                           "--ranks", "dgx/gpu[0-2]", NULL };
  r = weft_cmd (picked);
  ck_assert_int_eq (r.status, 2);
  ck_assert_msg (strstr (r.err, "ran on 2 ranks, and --ranks picks 3 GPUs")
                 != NULL, "%s", r.err);
  ck_assert (!exists ("r.db"));
  result_clear (&r);
}
END_TEST

/* `weft compare @log SCENARIO --db bad.db` and @more must exit 2 saying
 * @says (the start of stderr when @at_start) and write no database. */
static void
refused (const char *log, const char *more, const char *says,
         gboolean at_start)
{
  const char *compare[] = { "compare", log, SCENARIO, "--db", "bad.db",
                            more, NULL };
  Result r = weft_cmd (compare);

  ck_assert_int_eq (r.status, 2);
  ck_assert_msg (at_start ? g_str_has_prefix (r.err, says)
                          : strstr (r.err, says) != NULL,
                 "'%s' does not say '%s'", r.err, says);
  ck_assert_str_eq (r.out, "");
  ck_assert (!exists ("bad.db"));
  result_clear (&r);
}

START_TEST (test_bad_logs_write_nothing)
{
  const char *row = "     1048576        262144     float     sum      -1    "
                    "20.00   52.43   91.75      0    20.00   52.43   91.75   "
                    "   0\n";
  g_autofree char *cut = write_log ("cut.log", "# a log\n#\n     1048576   "
                                    "     262144     float     sum      -1\n");
  g_autofree char *want = g_strdup_printf ("%s:3:6: ", cut);
  refused (cut, NULL, want, TRUE);

  g_autofree char *missing = g_build_filename (tmp_dir, "none.log", NULL);
  refused (missing, NULL, "weft compare: ", TRUE);
  g_autofree char *empty = write_log ("empty.log", "# Avg bus bandwidth : "
                                      "0\n");
  refused (empty, NULL, "no rows of nccl-tests' table", FALSE);

  /* No collective named and none given; then a wrong one given. */
  g_autofree char *bare = write_log ("bare.log", row);
  refused (bare, NULL, "does not say which collective it ran", FALSE);
  g_autofree char *named = g_strconcat ("# Collective test starting: "
                                        "all_reduce_perf\n", row, NULL);
  g_autofree char *ar = write_log ("ar.log", named);
  g_autofree char *conflict = g_strdup_printf ("%s:1: the log ran "
                                               "all_reduce_perf", ar);
  refused (ar, "--collective=all_gather", conflict, TRUE);
  refused (bare, "--collective=gather", "unknown collective 'gather'", FALSE);

  /* With -c, the bare table runs; it lists no ranks, which is said. */
  const char *compare[] = { "compare", bare, SCENARIO, "--db", "ok.db", "-c",
                            "all_reduce", NULL };
  Result r = weft_cmd (compare);
  ck_assert_msg (r.status == 0, "%s", r.err);
  ck_assert_ptr_nonnull (strstr (r.err, "lists no ranks"));
  ck_assert_ptr_nonnull (strstr (r.out, "     1048576     float"));
  result_clear (&r);
}
END_TEST

START_TEST (test_picture)
{
  /* --out draws compare.png and lists it among weft's pictures; a
   * picture weft did not draw is kept, before anything runs. */
  g_autofree char *log = write_log ("p.log",
      "# Collective test starting: all_reduce_perf\n"
      "     1048576        262144     float     sum      -1    20.00   52.43 "
      "  91.75      0    20.00   52.43   91.75      0\n");
  g_autofree char *pics = g_build_filename (tmp_dir, "pics", NULL);
  g_autofree char *own = g_build_filename (pics, "compare.png", NULL);
  ck_assert_int_eq (g_mkdir (pics, 0755), 0);
  ck_assert (g_file_set_contents (own, "mine", -1, NULL));
  refused (log, "--out=pics", "compare.png", FALSE);
  /* A folder that cannot be made (under a file) is refused as early. */
  refused (log, "--out=p.log/pics", "p.log/pics: cannot create: ", FALSE);
  g_autofree char *kept = NULL;
  ck_assert (g_file_get_contents (own, &kept, NULL, NULL));
  ck_assert_str_eq (kept, "mine");

  g_remove (own);
  const char *compare[] = { "compare", log, SCENARIO, "--db", "p.db",
                            "--out", "pics", NULL };
  Result r = weft_cmd (compare);
  ck_assert_msg (r.status == 0, "%s", r.err);
  ck_assert_ptr_nonnull (strstr (r.out, "pics/compare.png\n"));
  result_clear (&r);
  ck_assert (exists ("pics/compare.png"));
  g_autofree char *listed = g_build_filename (pics, ".weft-plots", NULL);
  g_autofree char *names = NULL;
  ck_assert (g_file_get_contents (listed, &names, NULL, NULL));
  ck_assert_ptr_nonnull (strstr (names, "compare.png"));
}
END_TEST

static Suite *
compare_suite (void)
{
  Suite *s = suite_create ("compare");
  TCase *tc = tcase_create ("compare");
  g_autofree char *gnuplot = g_find_program_in_path ("gnuplot");

  tcase_set_timeout (tc, 120);
  tcase_add_checked_fixture (tc, setup, teardown);
  tcase_add_test (tc, test_own_output_has_no_error);
  tcase_add_test (tc, test_sizes_as_logged);
  tcase_add_test (tc, test_ranks_must_match);
  tcase_add_test (tc, test_bad_logs_write_nothing);
  if (gnuplot != NULL)
    tcase_add_test (tc, test_picture);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  SRunner *runner = srunner_create (compare_suite ());

  srunner_run_all (runner, CK_NORMAL);
  int failed = srunner_ntests_failed (runner);
  srunner_free (runner);
  return failed == 0 ? 0 : 1;
}
