/* Tests of reading nccl-tests' output.  The logs are written here in the
 * shapes nccl-tests prints (src/common.cu and src/util.cu of
 * NVIDIA/nccl-tests); their figures are made up. */
#include "nccl_log.h"

#include <check.h>
#include <glib/gstdio.h>
#include <string.h>

static char *tmp_dir;

static void
setup (void)
{
  tmp_dir = g_dir_make_tmp ("weft-nccl-log-XXXXXX", NULL);
  ck_assert_ptr_nonnull (tmp_dir);
}

static void
teardown (void)
{
  g_autoptr (GDir) dir = g_dir_open (tmp_dir, 0, NULL);
  const char *name;

  while (dir && (name = g_dir_read_name (dir)))
    {
      g_autofree char *p = g_build_filename (tmp_dir, name, NULL);
      g_remove (p);
    }
  g_rmdir (tmp_dir);
  g_clear_pointer (&tmp_dir, g_free);
}

/* Write @text to a file of the test's folder and read it as a log. */
static WeftNcclLog *
read_text (const char *text, GError **error)
{
  g_autofree char *path = g_build_filename (tmp_dir, "nccl.log", NULL);

  ck_assert (g_file_set_contents (path, text, -1, NULL));
  return weft_nccl_log_read (path, error);
}

static const WeftNcclRow *
row (const WeftNcclLog *log, guint i)
{
  ck_assert_uint_lt (i, log->rows->len);
  return &g_array_index (log->rows, WeftNcclRow, i);
}

#define HEAD_COLUMNS                                                        \
  "#       size         count      type   redop    root     time   algbw " \
  "  busbw #wrong     time   algbw   busbw #wrong\n"

START_TEST (test_one_process_eight_gpus)
{
  /* `all_reduce_perf -g 8` under mpirun --tag-output: every line carries
   * the prefix; one process lists its eight GPUs. */
  g_autoptr (GString) text = g_string_new (NULL);
  const char *p = "[1,0]<stdout>:";

  g_string_append_printf (text, "%s# nccl-tests version 2.13.9 "
                          "nccl-headers=21903 nccl-library=21903\n", p);
  g_string_append_printf (text, "%s# Collective test starting: "
                          "all_reduce_perf\n", p);
  g_string_append_printf (text, "%s# nThread 1 nGpus 8 minBytes 1048576 "
                          "maxBytes 4194304 step: 2(factor) warmup iters: 5 "
                          "iters: 20 agg iters: 1 validation: 0 graph: 0\n"
                          "%s#\n%s# Using devices\n", p, p, p);
  for (int r = 0; r < 8; r++)
    g_string_append_printf (text, "%s#  Rank %2d Group  0 Pid  41234 on "
                            "    dgx-01 device %2d [0x%02x] NVIDIA A100-SXM4"
                            "-80GB\n", p, r, r, 7 + r);
  g_string_append_printf (text, "%s#\n%s" HEAD_COLUMNS, p, p);
  g_string_append_printf (text,
      "%s     1048576        262144     float     sum      -1    52.10   "
      "20.13   35.22    N/A    51.80   20.24   35.42    N/A\n"
      "\n"
      "%s     4194304       1048576     float     sum      -1    95.00   "
      "44.15   77.27    N/A    94.50   44.38   77.67    N/A\n"
      "%s# Out of bounds values : 0 OK\n"
      "%s# Avg bus bandwidth    : 56.395\n%s#\n", p, p, p, p, p);
  g_autoptr (GError) error = NULL;
  g_autoptr (WeftNcclLog) log = read_text (text->str, &error);

  ck_assert_msg (log != NULL, "%s", error ? error->message : "");
  ck_assert_str_eq (log->collective, "all_reduce");
  ck_assert_str_eq (log->program, "all_reduce_perf");
  ck_assert_uint_eq (log->collective_line, 2);
  ck_assert_uint_eq (log->ranks, 8);
  ck_assert_uint_eq (log->rows->len, 2);
  const WeftNcclRow *r = row (log, 1);
  ck_assert_uint_eq (r->size, 4194304);
  ck_assert_uint_eq (r->count, 1048576);
  ck_assert_str_eq (r->type, "float");
  ck_assert_str_eq (r->redop, "sum");
  ck_assert_int_eq (r->root, -1);
  ck_assert_double_eq_tol (r->time[WEFT_NCCL_OUT_OF_PLACE], 95.0, 1e-9);
  ck_assert_double_eq_tol (r->busbw[WEFT_NCCL_OUT_OF_PLACE], 77.27, 1e-9);
  ck_assert_double_eq_tol (r->time[WEFT_NCCL_IN_PLACE], 94.5, 1e-9);
  ck_assert_double_eq_tol (r->busbw[WEFT_NCCL_IN_PLACE], 77.67, 1e-9);
  ck_assert_uint_eq (r->line, 18);
}
END_TEST

START_TEST (test_mpi_ranks_and_types)
{
  /* Two processes of `-t 2 -g 1`, srun --label's prefix, `-d all`: the
   * rank lines of both processes, the table once per type. */
  const char *text =
    "0: # Collective test starting: all_gather_perf\n"
    "0: # nThread 2 nGpus 1 minBytes 1024 maxBytes 2048 step: 2(factor)\n"
    "0: # Using devices\n"
    "0: #  Rank  0 Group  0 Pid   1001 on     node-a device  0 [0x07] H100\n"
    "0: #  Rank  1 Group  0 Pid   1001 on     node-a device  1 [0x0f] H100\n"
    "0: #  Rank  2 Group  0 Pid   2002 on     node-b device  0 [0x07] H100\n"
    "0: #  Rank  3 Group  0 Pid   2002 on     node-b device  1 [0x0f] H100\n"
    "node-a:1001:1001 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
    "0: " HEAD_COLUMNS
    "0:         1024            64     float    none      -1    20.00    "
    "0.05    0.04      0    19.00    0.05    0.04      0\n"
    "0:         2048           128     float    none      -1    21.00    "
    "0.10    0.07      0    20.00    0.10    0.08      0\n"
    "0:         1024           128      half    none      -1    20.50    "
    "0.05    0.04      0    19.50    0.05    0.04      0\n"
    "0:         2048           256      half    none      -1    21.50    "
    "0.10    0.07      0    20.50    0.10    0.07      0\n";
  g_autoptr (GError) error = NULL;
  g_autoptr (WeftNcclLog) log = read_text (text, &error);

  ck_assert_msg (log != NULL, "%s", error ? error->message : "");
  ck_assert_str_eq (log->collective, "all_gather");
  ck_assert_uint_eq (log->ranks, 4);
  ck_assert_uint_eq (log->rows->len, 4);
  ck_assert_str_eq (row (log, 2)->type, "half");
  ck_assert_uint_eq (row (log, 2)->size, 1024);
  ck_assert_str_eq (row (log, 3)->redop, "none");
}
END_TEST

START_TEST (test_no_collective_named)
{
  /* A table alone says neither its collective nor its ranks; a command
   * line before it names the program. */
  const char *table =
    HEAD_COLUMNS
    "     1048576        262144     float     sum      -1    52.10   20.13 "
    "  35.22      0    51.80   20.24   35.42      0\n";
  g_autoptr (GError) error = NULL;
  g_autoptr (WeftNcclLog) log = read_text (table, &error);

  ck_assert_msg (log != NULL, "%s", error ? error->message : "");
  ck_assert_ptr_null (log->collective);
  ck_assert_uint_eq (log->ranks, 0);
  ck_assert_uint_eq (log->rows->len, 1);

  g_autofree char *echoed = g_strconcat (
      "$ mpirun -np 16 ./build/reduce_scatter_perf -b 1M -e 1M\n", table,
      NULL);
  g_autoptr (WeftNcclLog) guessed = read_text (echoed, &error);
  ck_assert_msg (guessed != NULL, "%s", error ? error->message : "");
  ck_assert_str_eq (guessed->collective, "reduce_scatter");
  ck_assert_str_eq (guessed->program, "reduce_scatter_perf");
}
END_TEST

START_TEST (test_other_shapes)
{
  /* Before nccl-tests had a root column; and large times printed with no
   * decimals. */
  const char *text =
    "# Collective test starting: alltoall_perf\n"
    "#       size         count    type   redop     time   algbw   busbw  "
    "error     time   algbw   busbw  error\n"
    "  1073741824     268435456   float    none    12345   86.98   76.11  "
    "0e+00    12340   87.01   76.14  0e+00\n";
  g_autoptr (GError) error = NULL;
  g_autoptr (WeftNcclLog) log = read_text (text, &error);

  ck_assert_msg (log != NULL, "%s", error ? error->message : "");
  ck_assert_str_eq (log->collective, "all_to_all");
  ck_assert_int_eq (row (log, 0)->root, -1);
  ck_assert_double_eq_tol (row (log, 0)->time[0], 12345, 1e-9);
  ck_assert_double_eq_tol (row (log, 0)->busbw[1], 76.14, 1e-9);
}
END_TEST

START_TEST (test_bad_input)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *path = g_build_filename (tmp_dir, "nccl.log", NULL);

  /* A row cut short, and a figure that is not one: file:line:col. */
  ck_assert_ptr_null (read_text ("# Collective test starting: "
                                 "all_reduce_perf\n\n"
                                 "        1024           256     float     "
                                 "sum      -1    20.00\n", &error));
  ck_assert (g_error_matches (error, WEFT_NCCL_LOG_ERROR,
                              WEFT_NCCL_LOG_ERROR_LINE));
  g_autofree char *want = g_strdup_printf ("%s:3:9: ", path);
  ck_assert_msg (g_str_has_prefix (error->message, want), "%s",
                 error->message);
  g_clear_error (&error);
  ck_assert_ptr_null (read_text (
      "        1024           256     float     sum      -1    20.00    "
      "0.05   fast      0    19.00    0.05    0.09      0\n", &error));
  g_free (want);
  want = g_strdup_printf ("%s:1:73: 'fast' is not a busbw (GB/s)", path);
  ck_assert_str_eq (error->message, want);
  g_clear_error (&error);

  /* A collective weft does not run, and two in one log. */
  ck_assert_ptr_null (read_text ("# Collective test starting: gather_perf\n",
                                 &error));
  ck_assert (g_error_matches (error, WEFT_NCCL_LOG_ERROR,
                              WEFT_NCCL_LOG_ERROR_COLLECTIVE));
  g_free (want);
  want = g_strdup_printf ("%s:1: gather_perf runs a collective", path);
  ck_assert_msg (g_str_has_prefix (error->message, want), "%s",
                 error->message);
  g_clear_error (&error);
  ck_assert_ptr_null (read_text ("# Collective test starting: "
                                 "all_reduce_perf\n"
                                 "# Collective test starting: "
                                 "all_gather_perf\n", &error));
  ck_assert (g_error_matches (error, WEFT_NCCL_LOG_ERROR,
                              WEFT_NCCL_LOG_ERROR_COLLECTIVE));
  g_clear_error (&error);

  /* No table at all, and no file. */
  ck_assert_ptr_null (read_text ("# Avg bus bandwidth    : 0\n", &error));
  ck_assert (g_error_matches (error, WEFT_NCCL_LOG_ERROR,
                              WEFT_NCCL_LOG_ERROR_NO_ROWS));
  g_clear_error (&error);
  g_remove (path);
  ck_assert_ptr_null (weft_nccl_log_read (path, &error));
  ck_assert (g_error_matches (error, G_FILE_ERROR, G_FILE_ERROR_NOENT));
}
END_TEST

static Suite *
nccl_log_suite (void)
{
  Suite *s = suite_create ("nccl_log");
  TCase *tc = tcase_create ("read");

  tcase_add_checked_fixture (tc, setup, teardown);
  tcase_add_test (tc, test_one_process_eight_gpus);
  tcase_add_test (tc, test_mpi_ranks_and_types);
  tcase_add_test (tc, test_no_collective_named);
  tcase_add_test (tc, test_other_shapes);
  tcase_add_test (tc, test_bad_input);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  SRunner *runner = srunner_create (nccl_log_suite ());

  srunner_run_all (runner, CK_NORMAL);
  int failed = srunner_ntests_failed (runner);
  srunner_free (runner);
  return failed == 0 ? 0 : 1;
}
