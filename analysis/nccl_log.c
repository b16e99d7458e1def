/* weft: reading nccl-tests' output.  nccl-tests prints its table with
 * printf, one row per size and data type: "size count type redop root",
 * then time, algbw, busbw and #wrong out of place and again in place.
 * Older versions have no root column, newer ones may add per-iteration
 * statistics or a timestamp; rows of those shapes are read too. */
#include "nccl_log.h"

#include <math.h>
#include <string.h>

G_DEFINE_QUARK (weft-nccl-log-error-quark, weft_nccl_log_error)

/* nccl-tests' programs that run a collective weft simulates, by their
 * name without "_perf", with weft's name of the collective. */
static const struct {
  const char *program, *collective;
} programs[] = {
  { "all_reduce", "all_reduce" }, { "all_gather", "all_gather" },
  { "reduce_scatter", "reduce_scatter" }, { "broadcast", "broadcast" },
  { "reduce", "reduce" }, { "alltoall", "all_to_all" },
  { "sendrecv", "send_recv" },
};

/* weft's collective for nccl-tests' program @name ("all_reduce_perf", or
 * a path to it), or NULL. */
static const char *
program_collective (const char *name)
{
  g_autofree char *base = g_path_get_basename (name);

  if (!g_str_has_suffix (base, "_perf"))
    return NULL;
  base[strlen (base) - strlen ("_perf")] = '\0';
  for (guint i = 0; i < G_N_ELEMENTS (programs); i++)
    if (strcmp (base, programs[i].program) == 0)
      return programs[i].collective;
  return NULL;
}

static void
row_clear (gpointer p)
{
  WeftNcclRow *row = p;

  g_free (row->type);
  g_free (row->redop);
}

void
weft_nccl_log_free (WeftNcclLog *log)
{
  if (log == NULL)
    return;
  g_free (log->program);
  g_free (log->collective);
  g_clear_pointer (&log->rows, g_array_unref);
  g_free (log);
}

/* The words of a line, each with its column (from 1) in the file. */
#define MAX_WORDS 32
typedef struct {
  char *text[MAX_WORDS];
  int col[MAX_WORDS];
  int n;                        /* may exceed MAX_WORDS: those not kept */
} Words;

static void
words_clear (Words *w)
{
  for (int i = 0; i < MIN (w->n, MAX_WORDS); i++)
    g_free (w->text[i]);
}

static void
split_words (const char *line, int offset, Words *w)
{
  const char *p = line;

  w->n = 0;
  while (*p)
    {
      while (*p == ' ' || *p == '\t')
        p++;
      if (*p == '\0')
        break;
      const char *start = p;
      while (*p && *p != ' ' && *p != '\t')
        p++;
      if (w->n < MAX_WORDS)
        {
          w->text[w->n] = g_strndup (start, p - start);
          w->col[w->n] = offset + (int) (start - line) + 1;
        }
      w->n++;
    }
}

/* The length of the prefix a launcher puts before each line: mpirun's
 * "[1,0]<stdout>:" (or "[1,0]:"), or srun --label's "0: ". */
static size_t
prefix_length (const char *line)
{
  const char *p = line;

  if (*p == '[')
    {
      const char *close = strchr (p, ']');
      if (close == NULL)
        return 0;
      p = close + 1;
      if (g_str_has_prefix (p, "<stdout>") || g_str_has_prefix (p, "<stderr>"))
        p += strlen ("<stdout>");
      return *p == ':' ? (size_t) (p + 1 - line) : 0;
    }
  while (g_ascii_isdigit (*p))
    p++;
  return p > line && p[0] == ':' && p[1] == ' ' ? (size_t) (p + 2 - line) : 0;
}

static gboolean
all_digits (const char *s)
{
  if (*s == '\0')
    return FALSE;
  for (; *s; s++)
    if (!g_ascii_isdigit (*s))
      return FALSE;
  return TRUE;
}

/* Where a row of @n words keeps its figures: the root column (or -1),
 * and the first word (the time) of the out-of-place and the in-place
 * figures (-1 for none).  FALSE for a shape nccl-tests does not print. */
static gboolean
row_layout (int n, int *root, int *oop, int *ip)
{
  *root = 4;
  switch (n)
    {
    case 13:                    /* the usual row */
    case 14:                    /* ...with a timestamp */
      *oop = 5, *ip = 9;
      return TRUE;
    case 12:                    /* before the root column was added */
      *root = -1, *oop = 4, *ip = 8;
      return TRUE;
    case 21:                    /* each with min, max, p99 and cv */
    case 22:
      *oop = 5, *ip = 13;
      return TRUE;
    case 9:                     /* in place only (trace replay) */
      *oop = -1, *ip = 5;
      return TRUE;
    default:
      return FALSE;
    }
}

/* Set @error to "path:line:col: " and the message. */
static gboolean G_GNUC_PRINTF (5, 6)
bad_line (GError **error, const char *path, guint line, int col,
          const char *format, ...)
{
  va_list ap;

  va_start (ap, format);
  g_autofree char *what = g_strdup_vprintf (format, ap);
  va_end (ap);
  g_set_error (error, WEFT_NCCL_LOG_ERROR, WEFT_NCCL_LOG_ERROR_LINE,
               "%s:%u:%d: %s", path, line, col, what);
  return FALSE;
}

/* A figure of the table: a finite number, not negative. */
static gboolean
figure (const char *text, double *v)
{
  char *end;

  *v = g_ascii_strtod (text, &end);
  return end != text && *end == '\0' && isfinite (*v) && *v >= 0;
}

/* Time and busbw from the four words from @at of @w (time algbw busbw
 * #wrong) into @row's measurement @which. */
static gboolean
read_figures (const Words *w, int at, int which, WeftNcclRow *row,
              const char *path, GError **error)
{
  static const char *const what[] = { "a time (us)", "an algbw (GB/s)",
                                      "a busbw (GB/s)" };
  double v[3];

  for (int k = 0; k < 3; k++)
    if (!figure (w->text[at + k], &v[k]))
      return bad_line (error, path, row->line, w->col[at + k],
                       "'%s' is not %s", w->text[at + k], what[k]);
  /* #wrong: a count, "N/A" when nccl-tests did not check, or older
   * versions' maximum error as a float. */
  double wrong;
  if (strcmp (w->text[at + 3], "N/A") != 0 && !figure (w->text[at + 3],
                                                       &wrong))
    return bad_line (error, path, row->line, w->col[at + 3],
                     "'%s' is not a #wrong (a count, or N/A)",
                     w->text[at + 3]);
  row->time[which] = v[0];
  row->busbw[which] = v[2];
  return TRUE;
}

/* The row of words @w, line @line of @path, into @row. */
static gboolean
read_row (const Words *w, guint line, const char *path, WeftNcclRow *row,
          GError **error)
{
  int root, oop, ip;

  *row = (WeftNcclRow) { .line = line, .root = -1,
                         .time = { -1, -1 }, .busbw = { -1, -1 } };
  if (!row_layout (w->n, &root, &oop, &ip))
    return bad_line (error, path, line, w->col[0], "a row of nccl-tests' "
                     "table has size, count, type, redop, root, then time, "
                     "algbw, busbw and #wrong out of place and in place; "
                     "this line has %d words", w->n);
  char *end;
  row->size = g_ascii_strtoull (w->text[0], &end, 10);
  row->count = g_ascii_strtoull (w->text[1], &end, 10);
  if (root >= 0)
    {
      gint64 r = g_ascii_strtoll (w->text[root], &end, 10);
      if (*end != '\0' || end == w->text[root] || r < -1 || r > G_MAXINT)
        return bad_line (error, path, line, w->col[root],
                         "'%s' is not a root (a rank, or -1)",
                         w->text[root]);
      row->root = (int) r;
    }
  if ((oop >= 0 && !read_figures (w, oop, WEFT_NCCL_OUT_OF_PLACE, row, path,
                                  error))
      || !read_figures (w, ip, WEFT_NCCL_IN_PLACE, row, path, error))
    return FALSE;
  row->type = g_strdup (w->text[2]);
  row->redop = g_strdup (w->text[3]);
  return TRUE;
}

/* What the lines before and between the rows say. */
typedef struct {
  const char *path;
  GHashTable *ranks;            /* rank numbers + 1 */
  GRegex *rank_re, *weft_re, *program_re;
  char *guess;                  /* a program a command line names */
  gboolean ambiguous;           /* ...or more than one */
  gboolean table;               /* a row has been read */
} Header;

static void
header_clear (Header *h)
{
  g_clear_pointer (&h->ranks, g_hash_table_unref);
  g_clear_pointer (&h->rank_re, g_regex_unref);
  g_clear_pointer (&h->weft_re, g_regex_unref);
  g_clear_pointer (&h->program_re, g_regex_unref);
  g_clear_pointer (&h->guess, g_free);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (Header, header_clear)

/* The program "# Collective test starting: NAME" names at @line: weft's
 * collective of it, which must be the one earlier lines named. */
static gboolean
starting (WeftNcclLog *log, const char *name, guint line, const char *path,
          GError **error)
{
  const char *coll = program_collective (name);

  if (coll == NULL)
    {
      g_set_error (error, WEFT_NCCL_LOG_ERROR, WEFT_NCCL_LOG_ERROR_COLLECTIVE,
                   "%s:%u: %s runs a collective weft does not simulate; "
                   "weft runs all_reduce_perf's, all_gather_perf's, "
                   "reduce_scatter_perf's, broadcast_perf's, reduce_perf's, "
                   "alltoall_perf's and sendrecv_perf's", path, line, name);
      return FALSE;
    }
  if (log->collective && strcmp (log->collective, coll) != 0)
    {
      g_set_error (error, WEFT_NCCL_LOG_ERROR, WEFT_NCCL_LOG_ERROR_COLLECTIVE,
                   "%s:%u: %s after %s (line %u): compare one collective's "
                   "log at a time", path, line, name, log->program,
                   log->collective_line);
      return FALSE;
    }
  if (log->collective == NULL)
    {
      log->program = g_strdup (name);
      log->collective = g_strdup (coll);
      log->collective_line = line;
    }
  return TRUE;
}

/* A comment line @text (after its '#'): the collective, a rank, or weft's
 * own first line, which says both. */
static gboolean
comment (WeftNcclLog *log, Header *h, const char *text, guint line,
         GError **error)
{
  g_autoptr (GMatchInfo) m = NULL;
  const char *p = text + strspn (text, " \t");

  if (g_str_has_prefix (p, "Collective test starting:"))
    {
      g_auto (GStrv) words = g_strsplit_set (p + strlen ("Collective test "
                                                         "starting:"),
                                             " \t\r", -1);
      for (char **w = words; *w; w++)
        if (**w)
          return starting (log, *w, line, h->path, error);
      return TRUE;
    }
  if (g_regex_match (h->rank_re, p, 0, &m))
    {
      g_autofree char *r = g_match_info_fetch (m, 1);
      guint64 rank = g_ascii_strtoull (r, NULL, 10);
      g_hash_table_add (h->ranks, GSIZE_TO_POINTER ((gsize) rank + 1));
      return TRUE;
    }
  g_clear_pointer (&m, g_match_info_unref);
  if (log->collective == NULL && g_regex_match (h->weft_re, p, 0, &m))
    {
      log->collective = g_match_info_fetch (m, 1);
      log->program = g_strdup_printf ("weft's %s", log->collective);
      log->collective_line = line;
      g_autofree char *n = g_match_info_fetch (m, 2);
      log->ranks = (guint) g_ascii_strtoull (n, NULL, 10);
    }
  return TRUE;
}

/* A line before the table that is neither a comment nor a row, such as
 * the command line a script echoed: the one program of nccl-tests it
 * names, if it names one. */
static void
guess_program (Header *h, const char *text)
{
  g_autoptr (GMatchInfo) m = NULL;

  if (h->table || h->ambiguous)
    return;
  g_regex_match (h->program_re, text, 0, &m);
  for (; g_match_info_matches (m); g_match_info_next (m, NULL))
    {
      g_autofree char *name = g_match_info_fetch (m, 1);
      const char *coll = program_collective (name);
      if (coll == NULL)
        continue;
      if (h->guess && strcmp (program_collective (h->guess), coll) != 0)
        h->ambiguous = TRUE;
      else if (h->guess == NULL)
        h->guess = g_path_get_basename (name);
    }
}

/* Line @no of the file: a row, a comment or something else. */
static gboolean
read_line (WeftNcclLog *log, Header *h, const char *line, guint no,
           GError **error)
{
  size_t skip = prefix_length (line);
  const char *text = line + skip;
  const char *p = text + strspn (text, " \t");

  if (*p == '#')
    return comment (log, h, p + 1, no, error);
  Words w = { 0 };
  split_words (text, (int) skip, &w);
  gboolean is_row = w.n >= 2 && all_digits (w.text[0])
                    && all_digits (w.text[1]);
  gboolean ok = TRUE;
  if (is_row)
    {
      WeftNcclRow row;
      ok = read_row (&w, no, h->path, &row, error);
      if (ok)
        g_array_append_val (log->rows, row);
      h->table = TRUE;
    }
  else if (w.n > 0)
    guess_program (h, text);
  words_clear (&w);
  return ok;
}

WeftNcclLog *
weft_nccl_log_read (const char *path, GError **error)
{
  g_autofree char *text = NULL;
  g_autoptr (WeftNcclLog) log = g_new0 (WeftNcclLog, 1);
  g_auto (Header) h = { path, g_hash_table_new (NULL, NULL),
                        g_regex_new ("^Rank\\s+(\\d+)\\s+Group", 0, 0, NULL),
                        g_regex_new ("^weft \\S+: (\\w+) on .*, (\\d+) ranks, "
                                     "\\w+ fidelity", 0, 0, NULL),
                        g_regex_new ("(?:^|[/\\s])(\\w+_perf)\\b", 0, 0, NULL),
                        NULL, FALSE, FALSE };

  if (!g_file_get_contents (path, &text, NULL, error))
    return NULL;
  log->rows = g_array_new (FALSE, FALSE, sizeof (WeftNcclRow));
  g_array_set_clear_func (log->rows, row_clear);
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  for (guint i = 0; lines[i]; i++)
    {
      g_strchomp (lines[i]);
      if (!read_line (log, &h, lines[i], i + 1, error))
        return NULL;
    }
  if (log->rows->len == 0)
    {
      g_set_error (error, WEFT_NCCL_LOG_ERROR, WEFT_NCCL_LOG_ERROR_NO_ROWS,
                   "%s: no rows of nccl-tests' table (size, count, type, "
                   "redop, root, time, algbw, busbw, ...) in it", path);
      return NULL;
    }
  if (log->collective == NULL && h.guess && !h.ambiguous)
    {
      log->collective = g_strdup (program_collective (h.guess));
      log->program = g_steal_pointer (&h.guess);
    }
  if (g_hash_table_size (h.ranks) > 0)
    log->ranks = g_hash_table_size (h.ranks);
  return g_steal_pointer (&log);
}
