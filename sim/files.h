/* weft: the files weft writes.  A file is written beside its place under a
 * temporary name and renamed into place once whole, so a full disk or a
 * signal never leaves half of it; weft never writes over one of the files
 * it reads, and replaces an existing file only if weft wrote it (it begins
 * with weft's mark for that kind of file) or the user says --force. */
#pragma once

#include <glib.h>
#include <stdio.h>

G_BEGIN_DECLS

#define WEFT_FILE_ERROR (weft_file_error_quark ())
GQuark weft_file_error_quark (void);

typedef enum {
  WEFT_FILE_ERROR_INPUT,        /* the output is one of the inputs */
  WEFT_FILE_ERROR_EXISTS,       /* a file weft did not write is there */
  WEFT_FILE_ERROR_IO,           /* it cannot be written */
} WeftFileError;

/* Whether @a and @b name the same existing file (hard and symbolic links
 * included). */
gboolean weft_file_same (const char *a, const char *b);

/* Whether weft may write @path: it is none of @inputs (NULL-terminated, may
 * be NULL), and it does not exist, or begins with @mark (NULL: no file
 * weft writes there carries a mark, so any is kept), or @force.  Fails
 * with WEFT_FILE_ERROR_INPUT or WEFT_FILE_ERROR_EXISTS saying why and what
 * to do. */
gboolean weft_file_may_write (const char *path, const char *const *inputs,
                              const char *mark, gboolean force,
                              GError **error);

typedef struct _WeftOutput WeftOutput;

/* Start writing @path: its bytes go to a temporary file beside it until
 * weft_output_commit().  Checks nothing: call weft_file_may_write()
 * first.  NULL with @error (WEFT_FILE_ERROR_IO) if the folder cannot be
 * written. */
WeftOutput *weft_output_new (const char *path, GError **error);

/* Where to write the bytes. */
FILE *weft_output_stream (WeftOutput *out);

/* The temporary file's path, for a program that writes it itself. */
const char *weft_output_temp_path (WeftOutput *out);

/* Close the temporary file and rename it to the path; on any error
 * (a write that failed, a full disk) remove it and leave what was at the
 * path as it was.  Frees @out either way. */
gboolean weft_output_commit (WeftOutput *out, GError **error);

/* Remove the temporary file; the path keeps what it had.  Frees @out;
 * NULL is ignored. */
void weft_output_abort (WeftOutput *out);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (WeftOutput, weft_output_abort)

/* The folder of weft's data (scenarios/ with its presets, analysis/ with
 * the gnuplot scripts): PREFIX/share/weft for an installed weft, found
 * from where the running program is, else the source tree it was built
 * from. */
const char *weft_data_dir (void);

/* @path itself if it exists or is absolute, else @path under
 * weft_data_dir() if it exists there (scenarios/dgx-h100.yaml from any
 * folder), else @path: a new string. */
char *weft_data_find (const char *path);

G_END_DECLS
