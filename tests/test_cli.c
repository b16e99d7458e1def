/* Tests of the weft program's command line, run as a user would. */
#include <check.h>
#include <glib.h>
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
  ck_assert_ptr_nonnull (strstr (r.err, "weft run [OPTION"));
  ck_assert_str_eq (r.out, "");
  result_clear (&r);
}
END_TEST

START_TEST (test_bad_option_value)
{
  Result r = weft ("run", "--fidelity", "quantum", NULL);

  ck_assert_int_eq (r.status, 2);
  ck_assert_ptr_nonnull (strstr (r.err, "unknown fidelity 'quantum'"));
  ck_assert_ptr_nonnull (strstr (r.err, "packet, flow, analytical"));
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
  const char *options[] = { "--fidelity", "--seed", "--db", "--log-level" };

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
}
END_TEST

START_TEST (test_version)
{
  Result r = weft ("version", NULL);

  ck_assert_int_eq (r.status, 0);
  ck_assert (g_str_has_prefix (r.out, "weft "));
  result_clear (&r);

  r = weft ("version", "extra", NULL);
  ck_assert_int_eq (r.status, 2);
  result_clear (&r);
}
END_TEST

START_TEST (test_run_default_job)
{
  Result r = weft ("run", NULL);

  ck_assert_int_eq (r.status, 0);
  ck_assert_ptr_nonnull (strstr (r.out, "dgx-h100"));
  ck_assert_str_eq (r.err, "");
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
  tcase_add_test (tc, test_run_default_job);
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
