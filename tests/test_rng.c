/* Tests of the random streams. */
#include "rng.h"

#include <check.h>
#include <math.h>

START_TEST (test_xoshiro_known_answer)
{
  /* xoshiro256**: the first output from state {1, 2, 3, 4} is
   * rotl(2 * 5, 7) * 9 = 11520, by the published definition. */
  WeftRng rng = { { 1, 2, 3, 4 } };

  ck_assert_uint_eq (weft_rng_next (&rng), 11520);
  /* After one step the state is {7, 0, 262146, 211106232532992}. */
  ck_assert_uint_eq (rng.s[0], 7);
  ck_assert_uint_eq (rng.s[1], 0);
  ck_assert_uint_eq (rng.s[2], 262146);
  ck_assert_uint_eq (rng.s[3], UINT64_C (211106232532992));
}
END_TEST

START_TEST (test_same_pair_same_stream)
{
  WeftRng a, b;

  weft_rng_init (&a, 1, 5);
  weft_rng_init (&b, 1, 5);
  for (int i = 0; i < 1000; i++)
    ck_assert_uint_eq (weft_rng_next (&a), weft_rng_next (&b));
}
END_TEST

START_TEST (test_streams_differ)
{
  /* Neighbouring seeds and stream ids give different streams. */
  uint64_t firsts[4];
  const uint64_t pairs[4][2] = { { 1, 5 }, { 1, 6 }, { 2, 5 }, { 5, 1 } };

  for (int i = 0; i < 4; i++)
    {
      WeftRng rng;
      weft_rng_init (&rng, pairs[i][0], pairs[i][1]);
      firsts[i] = weft_rng_next (&rng);
    }
  for (int i = 0; i < 4; i++)
    for (int j = i + 1; j < 4; j++)
      ck_assert_uint_ne (firsts[i], firsts[j]);
}
END_TEST

START_TEST (test_stream_does_not_depend_on_others)
{
  /* The stream of entity 3 is the same whether entities 0..2 drew numbers
   * before it or not: there is no shared state. */
  WeftRng lone, others[3], after;
  uint64_t expected[16];

  weft_rng_init (&lone, 9, 3);
  for (int i = 0; i < 16; i++)
    expected[i] = weft_rng_next (&lone);
  for (int e = 0; e < 3; e++)
    {
      weft_rng_init (&others[e], 9, e);
      for (int i = 0; i < 100; i++)
        weft_rng_next (&others[e]);
    }
  weft_rng_init (&after, 9, 3);
  for (int i = 0; i < 16; i++)
    ck_assert_uint_eq (weft_rng_next (&after), expected[i]);
}
END_TEST

START_TEST (test_uniform_moments)
{
  enum { N = 1000000 };
  WeftRng rng;
  double sum = 0, sum2 = 0;
  int outside = 0;

  weft_rng_init (&rng, 11, 0);
  for (int i = 0; i < N; i++)
    {
      double u = weft_rng_uniform (&rng);
      outside += !(u >= 0.0 && u < 1.0);
      sum += u;
      sum2 += u * u;
    }
  ck_assert_int_eq (outside, 0);
  /* Mean 1/2 (sd of the mean 0.29/sqrt(N) = 2.9e-4), variance 1/12. */
  ck_assert_double_eq_tol (sum / N, 0.5, 0.0015);
  ck_assert_double_eq_tol (sum2 / N - (sum / N) * (sum / N), 1.0 / 12, 0.001);
}
END_TEST

START_TEST (test_below_is_uniform)
{
  enum { N = 700000, K = 7 };
  WeftRng rng;
  uint64_t counts[K] = { 0 };
  double chi2 = 0;
  int outside = 0;

  weft_rng_init (&rng, 12, 0);
  for (int i = 0; i < N; i++)
    {
      uint64_t v = weft_rng_below (&rng, K);
      if (v < K)
        counts[v]++;
      else
        outside++;
    }
  ck_assert_int_eq (outside, 0);
  for (int k = 0; k < K; k++)
    chi2 += pow ((double) counts[k] - N / K, 2) / (N / K);
  /* 6 degrees of freedom: P(chi2 > 22.46) = 0.001. */
  ck_assert_double_lt (chi2, 22.46);
  ck_assert_uint_eq (weft_rng_below (&rng, 1), 0);
}
END_TEST

START_TEST (test_exponential_mean)
{
  enum { N = 1000000 };
  WeftRng rng;
  double sum = 0;
  int bad = 0;

  weft_rng_init (&rng, 13, 0);
  for (int i = 0; i < N; i++)
    {
      double x = weft_rng_exponential (&rng, 1000.0);
      bad += !(x >= 0.0 && isfinite (x));
      sum += x;
    }
  ck_assert_int_eq (bad, 0);
  /* The sd of the mean is 1000 / sqrt(N) = 1: allow five of them. */
  ck_assert_double_eq_tol (sum / N, 1000.0, 5.0);
}
END_TEST

static Suite *
rng_suite (void)
{
  Suite *s = suite_create ("rng");
  TCase *tc;

  tc = tcase_create ("streams");
  tcase_add_test (tc, test_xoshiro_known_answer);
  tcase_add_test (tc, test_same_pair_same_stream);
  tcase_add_test (tc, test_streams_differ);
  tcase_add_test (tc, test_stream_does_not_depend_on_others);
  suite_add_tcase (s, tc);

  tc = tcase_create ("distributions");
  tcase_add_test (tc, test_uniform_moments);
  tcase_add_test (tc, test_below_is_uniform);
  tcase_add_test (tc, test_exponential_mean);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  SRunner *runner = srunner_create (rng_suite ());

  srunner_run_all (runner, CK_NORMAL);
  int failed = srunner_ntests_failed (runner);
  srunner_free (runner);
  return failed == 0 ? 0 : 1;
}
