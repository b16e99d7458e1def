/* Tests of the YAML configuration loader. */
#include "config.h"

#include <check.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>

static WeftCfg *
load (const char *text, GError **error)
{
  return weft_cfg_load_data ("t.yaml", text, strlen (text), error);
}

static void
expect_message (const char *text, const char *message)
{
  g_autoptr (GError) error = NULL;
  WeftCfg *cfg = load (text, &error);

  ck_assert_ptr_null (cfg);
  ck_assert_ptr_nonnull (error);
  ck_assert_msg (strstr (error->message, message) != NULL, "'%s' not in '%s'",
                 message, error->message);
}

START_TEST (test_tree_and_positions)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (WeftCfg) cfg = load ("a: 1\nb:\n  - x\n  - {c: 'y'}\n", &error);

  ck_assert_ptr_nonnull (cfg);
  ck_assert_int_eq (cfg->kind, WEFT_CFG_MAP);
  ck_assert_uint_eq (cfg->n, 2);
  WeftCfg *b = weft_cfg_get (cfg, "b");
  ck_assert_int_eq (b->kind, WEFT_CFG_SEQ);
  ck_assert_int_eq (b->line, 3);
  ck_assert_int_eq (b->col, 3);
  WeftCfg *c = weft_cfg_get (b->items[1], "c");
  ck_assert_str_eq (c->text, "y");
  ck_assert (!c->plain);
  ck_assert_int_eq (c->line, 4);
  ck_assert_int_eq (c->col, 9);
  ck_assert_ptr_null (weft_cfg_get (cfg, "zz"));
}
END_TEST

START_TEST (test_anchors_and_aliases)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (WeftCfg) cfg = load ("base: &b {x: 1}\nuse: *b\n", &error);

  ck_assert_ptr_nonnull (cfg);
  ck_assert_ptr_eq (weft_cfg_get (cfg, "base"), weft_cfg_get (cfg, "use"));
  expect_message ("use: *nothing\n", "t.yaml:1:6");
}
END_TEST

START_TEST (test_errors)
{
  expect_message ("a: [1, 2\n", "t.yaml:2:1: YAML syntax error");
  expect_message ("a: 1\na: 2\n", "t.yaml:2:1: duplicate key 'a' (first at line 1)");
  expect_message ("", "the file is empty");
  expect_message ("a: 1\n---\nb: 2\n", "more than one YAML document");
  expect_message ("? [x]\n: 1\n", "a key must be a plain word");
}
END_TEST

START_TEST (test_check_keys)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (WeftCfg) cfg = load ("bandwith: 1\n", &error);
  const char *const allowed[] = { "bandwidth", "latency", NULL };

  ck_assert (!weft_cfg_check_keys (cfg, allowed, &error));
  ck_assert_str_eq (error->message, "t.yaml:1:1: unknown key 'bandwith'; did "
                                    "you mean 'bandwidth'?");
  g_clear_error (&error);

  g_autoptr (WeftCfg) other = load ("zzz: 1\n", &error);
  ck_assert (!weft_cfg_check_keys (other, allowed, &error));
  ck_assert_str_eq (error->message, "t.yaml:1:1: unknown key 'zzz'; valid "
                                    "keys: bandwidth, latency");
}
END_TEST

START_TEST (test_typed_values)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (WeftCfg) cfg = load ("r: 400Gb/s\nt: 1us\nn: 12\nbad: 12\n", &error);
  double rate;
  WeftTime t;
  uint64_t n;

  ck_assert (weft_cfg_rate (weft_cfg_get (cfg, "r"), &rate, &error));
  ck_assert_double_eq (rate, 50e9);
  ck_assert (weft_cfg_time (weft_cfg_get (cfg, "t"), &t, &error));
  ck_assert_uint_eq (t, WEFT_US);
  ck_assert (weft_cfg_uint (weft_cfg_get (cfg, "n"), 1, 20, &n, &error));
  ck_assert_uint_eq (n, 12);
  ck_assert (!weft_cfg_rate (weft_cfg_get (cfg, "bad"), &rate, &error));
  ck_assert_str_eq (error->message, "t.yaml:4:6: '12' has no unit; a rate "
                    "needs one of: b/s Kb/s Mb/s Gb/s Tb/s B/s KB/s MB/s GB/s "
                    "TB/s KiB/s MiB/s GiB/s");
}
END_TEST

START_TEST (test_missing_file)
{
  g_autoptr (GError) error = NULL;

  ck_assert_ptr_null (weft_cfg_load_file ("/nonexistent/x.yaml", &error));
  ck_assert_int_eq (error->code, WEFT_CONFIG_ERROR_IO);
  ck_assert (g_str_has_prefix (error->message, "/nonexistent/x.yaml: "));
}
END_TEST

START_TEST (test_not_utf8_is_placed)
{
  /* The bad byte is the third character of line 3; a multi-byte
   * character before it on the line counts once. */
  expect_message ("a: 1\nb: 2\nc\xc3\xa9\xff: 3\n",
                  "t.yaml:3:3: the file is not UTF-8 text");
  expect_message ("\xfe\n", "t.yaml:1:1: the file is not UTF-8 text");
}
END_TEST

START_TEST (test_only_regular_files)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *dir = g_dir_make_tmp ("weft-config-XXXXXX", NULL);
  g_autofree char *fifo = g_build_filename (dir, "f.yaml", NULL);

  /* A FIFO with no writer would block the loader for ever. */
  ck_assert_int_eq (mkfifo (fifo, 0600), 0);
  ck_assert_ptr_null (weft_cfg_load_file (fifo, &error));
  ck_assert_int_eq (error->code, WEFT_CONFIG_ERROR_IO);
  ck_assert_msg (strstr (error->message, "not a regular file"), "%s",
                 error->message);
  g_clear_error (&error);
  ck_assert_ptr_null (weft_cfg_load_file (dir, &error));
  ck_assert_int_eq (error->code, WEFT_CONFIG_ERROR_IO);
  g_remove (fifo);
  g_rmdir (dir);
}
END_TEST

static Suite *
config_suite (void)
{
  Suite *s = suite_create ("config");
  TCase *tc = tcase_create ("load");

  tcase_add_test (tc, test_tree_and_positions);
  tcase_add_test (tc, test_anchors_and_aliases);
  tcase_add_test (tc, test_errors);
  tcase_add_test (tc, test_missing_file);
  tcase_add_test (tc, test_not_utf8_is_placed);
  tcase_add_test (tc, test_only_regular_files);
  suite_add_tcase (s, tc);
  tc = tcase_create ("values");
  tcase_add_test (tc, test_check_keys);
  tcase_add_test (tc, test_typed_values);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  SRunner *runner = srunner_create (config_suite ());

  srunner_run_all (runner, CK_NORMAL);
  int failed = srunner_ntests_failed (runner);
  srunner_free (runner);
  return failed == 0 ? 0 : 1;
}
