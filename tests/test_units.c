/* Tests of numbers with units. */
#include "units.h"

#include <check.h>
#include <string.h>

START_TEST (test_sizes)
{
  struct { const char *text; uint64_t bytes; } cases[] = {
    { "1B", 1 }, { "256 B", 256 }, { "1KB", 1000 }, { "1KiB", 1024 },
    { "1.5KiB", 1536 }, { "8GB", UINT64_C (8000000000) },
    { "8GiB", UINT64_C (8589934592) }, { "1TiB", UINT64_C (1) << 40 },
    { "0.5MB", 500000 }, { "2e3B", 2000 },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      uint64_t bytes = 0;
      g_autoptr (GError) error = NULL;
      ck_assert_msg (weft_parse_size (cases[i].text, &bytes, &error), "%s: %s",
                     cases[i].text, error ? error->message : "");
      ck_assert_uint_eq (bytes, cases[i].bytes);
    }
}
END_TEST

START_TEST (test_rates)
{
  struct { const char *text; double bps; } cases[] = {
    { "400Gb/s", 50e9 }, { "50GB/s", 50e9 }, { "25 GB/s", 25e9 },
    { "1Tb/s", 125e9 }, { "1.8TB/s", 1.8e12 }, { "1GiB/s", 1073741824.0 },
    { "100Mb/s", 12.5e6 }, { "8b/s", 1 },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      double bps = 0;
      g_autoptr (GError) error = NULL;
      ck_assert_msg (weft_parse_rate (cases[i].text, &bps, &error), "%s",
                     cases[i].text);
      ck_assert_double_eq_tol (bps, cases[i].bps, cases[i].bps * 1e-12);
    }
}
END_TEST

START_TEST (test_times)
{
  struct { const char *text; WeftTime ps; } cases[] = {
    { "500ns", 500000 }, { "1us", 1000000 }, { "1.5us", 1500000 },
    { "10ps", 10 }, { "2ms", UINT64_C (2000000000) },
    { "1s", UINT64_C (1000000000000) }, { "0ns", 0 }, { "0.001ns", 1 },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      WeftTime ps = 1;
      g_autoptr (GError) error = NULL;
      ck_assert_msg (weft_parse_time (cases[i].text, &ps, &error), "%s",
                     cases[i].text);
      ck_assert_uint_eq (ps, cases[i].ps);
    }
}
END_TEST

static void
expect_error (gboolean ok, GError *error, int code, const char *fragment)
{
  /* Called as expect_error (parse (..., &error), error, ...) through the
   * EXPECT macro below, which sequences the parse before reading error. */
  ck_assert (!ok);
  ck_assert_ptr_nonnull (error);
  ck_assert_int_eq (error->code, code);
  ck_assert_msg (strstr (error->message, fragment) != NULL,
                 "'%s' not in '%s'", fragment, error->message);
  g_error_free (error);
}

#define EXPECT(call, code, fragment)                                         \
  do {                                                                        \
    gboolean ok_ = (call);                                                    \
    expect_error (ok_, error, code, fragment);                                \
    error = NULL;                                                             \
  } while (0)

START_TEST (test_errors)
{
  uint64_t bytes;
  double bps;
  WeftTime ps;
  GError *error = NULL;

  EXPECT (weft_parse_size ("1024", &bytes, &error),
                WEFT_UNITS_ERROR_UNIT, "has no unit");
  EXPECT (weft_parse_size ("1 GiG", &bytes, &error),
                WEFT_UNITS_ERROR_UNIT, "unknown size unit 'GiG'");
  EXPECT (weft_parse_size ("1.5B", &bytes, &error),
                WEFT_UNITS_ERROR_RANGE, "not a whole number of bytes");
  /* A fraction of 130 decimal places is a fraction, not a division by
   * zero. */
  EXPECT (weft_parse_size ("0.00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000005GB", &bytes, &error),
                WEFT_UNITS_ERROR_RANGE, "not a whole number of bytes");
  EXPECT (weft_parse_size ("-1B", &bytes, &error),
                WEFT_UNITS_ERROR_RANGE, "negative");
  EXPECT (weft_parse_size ("99999999999TiB", &bytes, &error),
                WEFT_UNITS_ERROR_RANGE, "too large");
  EXPECT (weft_parse_size ("GiB", &bytes, &error),
                WEFT_UNITS_ERROR_INVALID, "not a number");
  EXPECT (weft_parse_rate ("400G", &bps, &error),
                WEFT_UNITS_ERROR_UNIT, "Gb/s");
  EXPECT (weft_parse_rate ("400", &bps, &error),
                WEFT_UNITS_ERROR_UNIT, "has no unit");
  EXPECT (weft_parse_time ("0.5ps", &ps, &error),
                WEFT_UNITS_ERROR_RANGE, "picoseconds");
  EXPECT (weft_parse_time ("5 sec", &ps, &error),
                WEFT_UNITS_ERROR_UNIT, "unknown time unit");
}
END_TEST

START_TEST (test_format)
{
  g_autofree char *a = weft_format_size (UINT64_C (8589934592));
  g_autofree char *b = weft_format_size (1500);
  g_autofree char *c = weft_format_time (1250000);
  g_autofree char *d = weft_format_rate (450e9);
  g_autofree char *e = weft_format_size (UINT64_C (80000000000));

  ck_assert_str_eq (a, "8 GiB");
  ck_assert_str_eq (b, "1.5 KB");
  ck_assert_str_eq (c, "1.250 us");
  ck_assert_str_eq (d, "450.0 GB/s");
  ck_assert_str_eq (e, "80 GB");
}
END_TEST

static Suite *
units_suite (void)
{
  Suite *s = suite_create ("units");
  TCase *tc = tcase_create ("parse");

  tcase_add_test (tc, test_sizes);
  tcase_add_test (tc, test_rates);
  tcase_add_test (tc, test_times);
  tcase_add_test (tc, test_errors);
  suite_add_tcase (s, tc);
  tc = tcase_create ("format");
  tcase_add_test (tc, test_format);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  SRunner *runner = srunner_create (units_suite ());

  srunner_run_all (runner, CK_NORMAL);
  int failed = srunner_ntests_failed (runner);
  srunner_free (runner);
  return failed == 0 ? 0 : 1;
}
