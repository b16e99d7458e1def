/* Tests of how the process takes memory (sim/memory.c). */
#include "memory.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

/* Whether the mapping that holds @p is advised for huge pages: its
 * VmFlags in /proc/self/smaps show "hg". */
static gboolean
advised_huge (const void *p)
{
  g_autofree char *smaps = NULL;
  uintptr_t a = (uintptr_t) p;
  gboolean inside = FALSE;

  if (!g_file_get_contents ("/proc/self/smaps", &smaps, NULL, NULL))
    return FALSE;
  g_auto (GStrv) lines = g_strsplit (smaps, "\n", -1);
  for (char **l = lines; *l != NULL; l++)
    {
      unsigned long lo, hi;
      if (sscanf (*l, "%lx-%lx ", &lo, &hi) == 2)
        inside = a >= lo && a < hi;
      else if (inside && g_str_has_prefix (*l, "VmFlags:"))
        return strstr (*l, " hg") != NULL;
    }
  return FALSE;
}

START_TEST (test_tune_readies_huge_pages)
{
#ifdef __GLIBC__
  weft_memory_tune ();
  /* A block of a few MiB, under what anything asks to reserve for. */
  char *block = malloc ((size_t) 8 << 20);
  ck_assert_ptr_nonnull (block);
  /* Only glibc's own malloc() has room left in its heap after that. */
  if (weft_memory_reserve (1)
      && g_file_test ("/sys/kernel/mm/transparent_hugepage/enabled",
                      G_FILE_TEST_EXISTS))
    ck_assert (advised_huge (block + ((size_t) 4 << 20)));
  else
    ck_assert (!advised_huge (block + ((size_t) 4 << 20)));
  free (block);
#endif
}
END_TEST

START_TEST (test_reserve_makes_room_in_huge_pages)
{
#ifdef __GLIBC__
  size_t bytes = (size_t) 256 << 20;

  weft_memory_tune ();
  if (!weft_memory_reserve (bytes))
    {
      /* Not glibc's malloc (valgrind, AddressSanitizer): it must not
       * have advised anything of the heap. */
      char *small = malloc (1024);
      ck_assert (!advised_huge (small));
      free (small);
      return;
    }
  ck_assert_uint_ge (mallinfo2 ().keepcost, bytes);
  /* What is allocated next comes from that room, advised for huge
   * pages. */
  char *block = malloc ((size_t) 64 << 20);
  ck_assert_ptr_nonnull (block);
  if (g_file_test ("/sys/kernel/mm/transparent_hugepage/enabled",
                   G_FILE_TEST_EXISTS))
    ck_assert (advised_huge (block + ((size_t) 32 << 20)));
  free (block);
#endif
}
END_TEST

static Suite *
memory_suite (void)
{
  Suite *s = suite_create ("memory");
  TCase *tc = tcase_create ("huge pages");

  tcase_add_test (tc, test_tune_readies_huge_pages);
  tcase_add_test (tc, test_reserve_makes_room_in_huge_pages);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  SRunner *runner = srunner_create (memory_suite ());

  srunner_run_all (runner, CK_NORMAL);
  int failed = srunner_ntests_failed (runner);
  srunner_free (runner);
  return failed == 0 ? 0 : 1;
}
