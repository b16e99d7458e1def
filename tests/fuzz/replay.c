/* weft: a fuzz target's seed corpus as a test of every build (the
 * sanitizers' and valgrind's too): each file of WEFT_CORPUS fed to the
 * target once, in order of name, so that an input the fuzzer once found
 * is checked the same way every time, not only when a fuzzer meets it. */
#include <glib.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

static gint
by_name (gconstpointer a, gconstpointer b)
{
  return strcmp (*(const char *const *) a, *(const char *const *) b);
}

int
main (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GDir) dir = g_dir_open (WEFT_CORPUS, 0, &error);
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);

  if (dir == NULL)
    {
      fprintf (stderr, "%s\n", error->message);
      return 1;
    }
  for (const char *name; (name = g_dir_read_name (dir)) != NULL;)
    g_ptr_array_add (names, g_strdup (name));
  g_ptr_array_sort (names, by_name);
  for (guint i = 0; i < names->len; i++)
    {
      g_autofree char *path = g_build_filename (
          WEFT_CORPUS, (const char *) g_ptr_array_index (names, i), NULL);
      g_autofree char *data = NULL;
      gsize size;
      if (!g_file_get_contents (path, &data, &size, &error))
        {
          fprintf (stderr, "%s\n", error->message);
          return 1;
        }
      printf ("%s\n", path);
      fflush (stdout);
      LLVMFuzzerTestOneInput ((const uint8_t *) data, size);
    }
  printf ("%u inputs, none refused without a message\n", names->len);
  return names->len > 0 ? 0 : 1;
}
