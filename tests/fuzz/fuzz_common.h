/* weft: what the fuzz targets share.  Each target feeds its input to one
 * loader, as a user's file would reach it, and checks the one promise
 * every loader makes: bad input is refused with a message, never a crash,
 * a hang or an assertion. */
#pragma once

#include <glib.h>
#include <glib/gstdio.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char *fuzz_dir;

/* The folder and what it holds go when the process ends. */
static inline void
fuzz_remove_dir (void)
{
  g_autoptr (GDir) dir = g_dir_open (fuzz_dir, 0, NULL);

  for (const char *name; dir != NULL && (name = g_dir_read_name (dir));)
    {
      g_autofree char *path = g_build_filename (fuzz_dir, name, NULL);
      g_remove (path);
    }
  g_rmdir (fuzz_dir);
  g_clear_pointer (&fuzz_dir, g_free);
}

/* The input as a file of its own in a folder made for the process (some
 * loaders read paths, and what they include is found beside them). */
static inline char *
fuzz_input_file (const char *name, const uint8_t *data, size_t size)
{
  if (fuzz_dir == NULL)
    {
      /* g_dir_make_tmp() fills in the Xs. */
      fuzz_dir = g_dir_make_tmp ("weft-fuzz-XXXXXX", NULL);
      if (fuzz_dir == NULL)
        abort ();
      atexit (fuzz_remove_dir);
    }
  char *path = g_build_filename (fuzz_dir, name, NULL);
  if (!g_file_set_contents (path, (const char *) data, (gssize) size, NULL))
    abort ();
  return path;
}

/* Either a result or an error with a message: anything else is a bug. */
static inline void
fuzz_check (gboolean loaded, const GError *error)
{
  if (!loaded && (error == NULL || error->message == NULL
                  || error->message[0] == '\0'))
    abort ();
}
