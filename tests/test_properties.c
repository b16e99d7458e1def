/* Property tests over random fabrics (fabric_props.c): each property over
 * a few hundred generated cases.  WEFT_PROPERTY_CASES=N runs N cases of
 * each instead (fewer under a sanitizer or valgrind, more by hand), and
 * WEFT_PROPERTY_SEED=S draws another set of cases. */
#include "fabric_props.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

/* The cases a property runs: its own count, or the environment's. */
static guint
cases_for (const FabricProperty *p)
{
  const char *env = g_getenv ("WEFT_PROPERTY_CASES");
  guint64 n;

  if (env != NULL && g_ascii_string_to_unsigned (env, 10, 1, 1000000, &n,
                                                 NULL))
    return (guint) n;
  return p->cases;
}

static uint64_t
run_seed (void)
{
  const char *env = g_getenv ("WEFT_PROPERTY_SEED");
  guint64 seed;

  if (env != NULL && g_ascii_string_to_unsigned (env, 10, 0, G_MAXUINT64,
                                                 &seed, NULL))
    return seed;
  return 1;
}

/* Property _i over its cases: none may fail, and enough must qualify for
 * the property to have said something (counted over 20 cases or more: a
 * few say little of how many qualify). */
START_TEST (test_property)
{
  const FabricProperty *p = &fabric_properties[_i];
  guint n = cases_for (p), passed = 0;

  for (guint i = 0; i < n; i++)
    {
      uint64_t seed = fabric_property_seed (run_seed (), (guint) _i, i);
      g_autoptr (GString) why = g_string_new (NULL);
      FabricVerdict v = p->check (seed, why);
      if (v == FABRIC_FAIL)
        {
          /* Check cuts long messages: the whole case goes to stderr. */
          fprintf (stderr, "property '%s' (%s) failed on case %u:\n%s\n",
                   p->name, p->says, i, why->str);
          ck_abort_msg ("property '%s' failed on case %u: %.300s", p->name, i,
                        why->str);
        }
      passed += v == FABRIC_PASS;
    }
  ck_assert_msg (n < 20 || passed * 100 >= p->min_pass * n, "property '%s': "
                 "only %u of %u cases qualified", p->name, passed, n);
}
END_TEST

static Suite *
properties_suite (void)
{
  Suite *s = suite_create ("properties");
  TCase *tc = tcase_create ("generated fabrics");

  tcase_set_timeout (tc, 120);
  tcase_add_loop_test (tc, test_property, 0, (int) fabric_n_properties);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  SRunner *runner = srunner_create (properties_suite ());

  srunner_run_all (runner, CK_NORMAL);
  int failed = srunner_ntests_failed (runner);
  srunner_free (runner);
  return failed == 0 ? 0 : 1;
}
