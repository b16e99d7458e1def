/* weft: the files weft writes.  See files.h. */
#include "files.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

G_DEFINE_QUARK (weft-file-error-quark, weft_file_error)

struct _WeftOutput {
  char *path;
  char *temp;
  FILE *stream;
};

gboolean
weft_file_same (const char *a, const char *b)
{
  GStatBuf sa, sb;

  return g_stat (a, &sa) == 0 && g_stat (b, &sb) == 0 && sa.st_dev == sb.st_dev
         && sa.st_ino == sb.st_ino;
}

/* Whether the file @path begins with @mark. */
static gboolean
begins_with (const char *path, const char *mark)
{
  size_t n = strlen (mark);
  g_autofree char *head = g_malloc (n);
  FILE *f = fopen (path, "rb");
  gboolean same;

  if (f == NULL)
    return FALSE;
  same = fread (head, 1, n, f) == n && memcmp (head, mark, n) == 0;
  fclose (f);
  return same;
}

gboolean
weft_file_may_write (const char *path, const char *const *inputs,
                     const char *mark, gboolean force, GError **error)
{
  for (guint i = 0; inputs && inputs[i]; i++)
    if (weft_file_same (path, inputs[i]))
      {
        if (strcmp (path, inputs[i]) == 0)
          g_set_error (error, WEFT_FILE_ERROR, WEFT_FILE_ERROR_INPUT,
                       "%s is read by this command: name another file",
                       path);
        else
          g_set_error (error, WEFT_FILE_ERROR, WEFT_FILE_ERROR_INPUT,
                       "%s is %s, which this command reads: name another "
                       "file", path, inputs[i]);
        return FALSE;
      }
  if (force || !g_file_test (path, G_FILE_TEST_EXISTS))
    return TRUE;
  if (g_file_test (path, G_FILE_TEST_IS_DIR))
    {
      g_set_error (error, WEFT_FILE_ERROR, WEFT_FILE_ERROR_EXISTS,
                   "%s is a folder", path);
      return FALSE;
    }
  if (mark != NULL && begins_with (path, mark))
    return TRUE;
  g_set_error (error, WEFT_FILE_ERROR, WEFT_FILE_ERROR_EXISTS,
               "%s exists and weft did not write it: remove it, name another "
               "file, or give --force to replace it", path);
  return FALSE;
}

WeftOutput *
weft_output_new (const char *path, GError **error)
{
  g_autoptr (WeftOutput) out = g_new0 (WeftOutput, 1);
  g_autofree char *dir = g_path_get_dirname (path);
  g_autofree char *base = g_path_get_basename (path);
  g_autofree char *pattern = g_strdup_printf (".%s.XXXXXX", base);

  out->path = g_strdup (path);
  out->temp = g_build_filename (dir, pattern, NULL);
  int fd = g_mkstemp (out->temp);
  if (fd < 0)
    {
      int e = errno;
      g_clear_pointer (&out->temp, g_free);
      g_set_error (error, WEFT_FILE_ERROR, WEFT_FILE_ERROR_IO,
                   "%s: cannot write: %s", path, g_strerror (e));
      return NULL;
    }
  /* The permissions a file made by fopen() would get. */
  mode_t mask = umask (0);
  umask (mask);
  fchmod (fd, 0666 & ~mask);
  out->stream = fdopen (fd, "wb");
  if (out->stream == NULL)
    {
      int e = errno;
      close (fd);
      g_set_error (error, WEFT_FILE_ERROR, WEFT_FILE_ERROR_IO,
                   "%s: cannot write: %s", path, g_strerror (e));
      return NULL;
    }
  return g_steal_pointer (&out);
}

FILE *
weft_output_stream (WeftOutput *out)
{
  return out->stream;
}

const char *
weft_output_temp_path (WeftOutput *out)
{
  return out->temp;
}

gboolean
weft_output_commit (WeftOutput *out, GError **error)
{
  gboolean ok = fflush (out->stream) == 0 && !ferror (out->stream);
  int e = ok ? 0 : errno;

  if (fclose (out->stream) != 0 && ok)
    ok = FALSE, e = errno;
  out->stream = NULL;
  if (ok && g_rename (out->temp, out->path) != 0)
    ok = FALSE, e = errno;
  if (ok)
    g_clear_pointer (&out->temp, g_free);
  else
    g_set_error (error, WEFT_FILE_ERROR, WEFT_FILE_ERROR_IO,
                 "%s: cannot write: %s", out->path, g_strerror (e ? e : EIO));
  weft_output_abort (out);
  return ok;
}

void
weft_output_abort (WeftOutput *out)
{
  if (out == NULL)
    return;
  if (out->stream)
    fclose (out->stream);
  if (out->temp)
    g_remove (out->temp);
  g_free (out->temp);
  g_free (out->path);
  g_free (out);
}

const char *
weft_data_dir (void)
{
  static char *dir;

  if (g_once_init_enter (&dir))
    {
      /* An installed program is PREFIX/bin/weft beside PREFIX/share/weft;
       * one run from its build tree has no such folder beside it. */
      g_autofree char *exe = g_file_read_link ("/proc/self/exe", NULL);
      g_autofree char *bin = exe ? g_path_get_dirname (exe) : NULL;
      g_autofree char *installed = bin ? g_build_filename (bin, "..", "share",
                                                           "weft", NULL)
                                       : NULL;
      g_autofree char *probe = installed ? g_build_filename (installed,
                                                             "scenarios",
                                                             NULL)
                                         : NULL;
      char *found = probe && g_file_test (probe, G_FILE_TEST_IS_DIR)
                        ? g_canonicalize_filename (installed, NULL)
                        : g_strdup (WEFT_SOURCE_DIR);
      g_once_init_leave (&dir, found);
    }
  return dir;
}

char *
weft_data_find (const char *path)
{
  if (g_path_is_absolute (path) || g_file_test (path, G_FILE_TEST_EXISTS))
    return g_strdup (path);
  g_autofree char *data = g_build_filename (weft_data_dir (), path, NULL);
  return g_file_test (data, G_FILE_TEST_EXISTS) ? g_steal_pointer (&data)
                                                : g_strdup (path);
}
