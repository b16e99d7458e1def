/* weft: MSCCL's XML algorithm files.
 *
 * The format is MSCCL's (msccl-executor-nccl, src/misc/msccl/
 * msccl_parser.cc): an <algo> of <gpu>s, each of thread blocks <tb> with a
 * send peer, a receive peer and a channel, each a list of <step>s that run
 * one after another.  A step's type says what it does with `cnt` chunks at
 * srcbuf[srcoff] and dstbuf[dstoff] of the GPU's input (i), output (o) and
 * scratch (s) buffers: s sends, r receives into dst, rcs receives into dst
 * and sends on, rrc adds what it receives to src into dst, rrs sends on
 * src plus what it receives, rrcs both, re adds src into dst, cpy copies
 * src to dst, nop does nothing.  A step may also wait for step `deps` of
 * thread block `depid` of its GPU.  The k-th send of a GPU to a peer on a
 * channel meets the peer's k-th receive from it on that channel. */
#include "collectives/msccl.h"

#include <string.h>

#include "collectives/collective-private.h"
#include "collectives/schedule_file.h"

enum { BUF_I, BUF_O, BUF_S, N_BUFS };

typedef enum {
  T_S, T_R, T_RCS, T_RRS, T_RRC, T_RRCS, T_RE, T_CPY, T_NOP,
} Type;

typedef struct {
  const char *name;
  gboolean sends, recvs, reads, writes, adds;
} TypeInfo;

static const TypeInfo types[] = {
  /* reads: src; writes: dst; adds: what it writes or sends is a sum */
  [T_S] = { "s", TRUE, FALSE, TRUE, FALSE, FALSE },
  [T_R] = { "r", FALSE, TRUE, FALSE, TRUE, FALSE },
  [T_RCS] = { "rcs", TRUE, TRUE, FALSE, TRUE, FALSE },
  [T_RRS] = { "rrs", TRUE, TRUE, TRUE, FALSE, TRUE },
  [T_RRC] = { "rrc", FALSE, TRUE, TRUE, TRUE, TRUE },
  [T_RRCS] = { "rrcs", TRUE, TRUE, TRUE, TRUE, TRUE },
  [T_RE] = { "re", FALSE, FALSE, TRUE, TRUE, TRUE },
  [T_CPY] = { "cpy", FALSE, FALSE, TRUE, TRUE, FALSE },
  [T_NOP] = { "nop", FALSE, FALSE, FALSE, FALSE, FALSE },
};

typedef struct {
  uint8_t type, srcbuf, dstbuf;
  uint32_t srcoff, dstoff, cnt;
  int32_t depid, deps;          /* -1: none */
  uint32_t dep_tb;              /* depid's index among the GPU's blocks */
  int line, col;
} Step;

typedef struct {
  int32_t id, send, recv;       /* peers: -1 none */
  uint32_t chan;
  GArray *steps;                /* Step */
  int line, col;
} Block;

typedef struct {
  uint32_t chunks[N_BUFS];
  GArray *tbs;                  /* Block, as written */
  gboolean seen;
  uint32_t *order;              /* (block << 16 | step), in an order the
                                   blocks and dependencies allow */
  uint32_t n_order;
} Gpu;

struct _WeftMsccl {
  char *path, *name;
  gboolean has_op, has_proto, inplace, outofplace;
  WeftOp op;
  WeftProtocolKind proto;
  uint32_t n_gpus, n_chunks, n_channels;
  Gpu *gpus;
  /* while parsing */
  int depth;
  uint32_t gpu, tb;
};

void
weft_msccl_free (WeftMsccl *m)
{
  if (m == NULL)
    return;
  for (uint32_t g = 0; m->gpus && g < m->n_gpus; g++)
    {
      GArray *tbs = m->gpus[g].tbs;
      for (guint t = 0; tbs && t < tbs->len; t++)
        g_array_unref (g_array_index (tbs, Block, t).steps);
      if (tbs)
        g_array_unref (tbs);
      g_free (m->gpus[g].order);
    }
  g_free (m->gpus);
  g_free (m->path);
  g_free (m->name);
  g_free (m);
}

const char *
weft_msccl_name (const WeftMsccl *m)
{
  return m->name;
}

gboolean
weft_msccl_op (const WeftMsccl *m, WeftOp *op)
{
  *op = m->op;
  return m->has_op;
}

uint32_t
weft_msccl_ranks (const WeftMsccl *m)
{
  return m->n_gpus;
}

gboolean
weft_msccl_protocol (const WeftMsccl *m, WeftProtocolKind *kind)
{
  *kind = m->proto;
  return m->has_proto;
}

/* ---- reading ---- */

typedef struct {
  WeftMsccl *m;
  GMarkupParseContext *ctx;
  const char *text;
  GArray *lines;                /* offset in text of each line's start */
  gboolean in_tag;              /* positions are a start tag's end */
} Reader;

/* Where the parser is, as line and column from 1: within a start tag, the
 * tag's '<' (the parser reports the tag's end). */
static void
position (const Reader *rd, int *line, int *col)
{
  g_markup_parse_context_get_position (rd->ctx, line, col);
  if (!rd->in_tag || *line < 1 || (guint) *line > rd->lines->len)
    return;
  size_t at = g_array_index (rd->lines, size_t, *line - 1)
              + (size_t) MAX (*col - 1, 0);
  /* The parser may report the character after the tag's end: stay on its
   * line. */
  if ((guint) *line < rd->lines->len)
    at = MIN (at, g_array_index (rd->lines, size_t, *line) - 1);
  if (at > 0)
    at--;
  while (at > 0 && rd->text[at] != '<')
    at--;
  guint l = (guint) *line;
  while (l > 1 && g_array_index (rd->lines, size_t, l - 1) > at)
    l--;
  *line = (int) l;
  *col = (int) (at - g_array_index (rd->lines, size_t, l - 1)) + 1;
}

G_GNUC_PRINTF (3, 4) static void
fail_at (GError **error, const Reader *rd, const char *format, ...)
{
  int line, col;
  va_list ap;

  position (rd, &line, &col);
  va_start (ap, format);
  g_autofree char *message = g_strdup_vprintf (format, ap);
  va_end (ap);
  g_set_error (error, WEFT_SCHEDULE_ERROR, WEFT_SCHEDULE_ERROR_INVALID,
               "%s:%d:%d: %s", rd->m->path, line, col, message);
}

static const char *
attr (const char **names, const char **values, const char *key)
{
  for (int i = 0; names[i] != NULL; i++)
    if (strcmp (names[i], key) == 0)
      return values[i];
  return NULL;
}

/* Attribute @key of <@elem> as a whole number in [@min, @max]: @fallback
 * when absent and @fallback >= @min, else an error. */
static gboolean
int_attr (const Reader *rd, const char *elem, const char **names,
          const char **values, const char *key, int64_t min, int64_t max,
          int64_t fallback, int64_t *out, GError **error)
{
  const char *text = attr (names, values, key);

  if (text == NULL && fallback >= min)
    {
      *out = fallback;
      return TRUE;
    }
  if (text == NULL)
    {
      fail_at (error, rd, "<%s> has no attribute '%s'", elem, key);
      return FALSE;
    }
  gint64 v;
  if (!g_ascii_string_to_signed (text, 10, min, max, &v, NULL))
    {
      fail_at (error, rd, "attribute '%s' of <%s> is '%s', not a whole "
               "number from %" G_GINT64_FORMAT " to %" G_GINT64_FORMAT, key,
               elem, text, min, max);
      return FALSE;
    }
  *out = v;
  return TRUE;
}

static gboolean
buffer_attr (const Reader *rd, const char **names, const char **values,
             const char *key, uint8_t *buf, GError **error)
{
  const char *text = attr (names, values, key);
  static const char *const bufs[N_BUFS] = { "i", "o", "s" };

  if (text == NULL)
    {
      *buf = BUF_I;
      return TRUE;
    }
  for (int b = 0; b < N_BUFS; b++)
    if (strcmp (text, bufs[b]) == 0)
      {
        *buf = (uint8_t) b;
        return TRUE;
      }
  fail_at (error, rd, "attribute '%s' of <step> is '%s'; valid buffers: i "
           "(input), o (output), s (scratch)", key, text);
  return FALSE;
}

static gboolean
read_algo (Reader *rd, const char **names, const char **values,
           GError **error)
{
  WeftMsccl *m = rd->m;
  int64_t v;
  const char *text;

  if (!int_attr (rd, "algo", names, values, "ngpus", 1, 1 << 16, -1, &v,
                 error))
    return FALSE;
  m->n_gpus = (uint32_t) v;
  if (!int_attr (rd, "algo", names, values, "nchunksperloop", 1, 1 << 20, -1,
                 &v, error))
    return FALSE;
  m->n_chunks = (uint32_t) v;
  if (!int_attr (rd, "algo", names, values, "nchannels", 1, 64, 1, &v, error))
    return FALSE;
  m->n_channels = (uint32_t) v;
  if (!int_attr (rd, "algo", names, values, "inplace", 0, 1, 0, &v, error))
    return FALSE;
  m->inplace = v == 1;
  if (!int_attr (rd, "algo", names, values, "outofplace", 0, 1,
                 attr (names, values, "inplace") ? 0 : 1, &v, error))
    return FALSE;
  m->outofplace = v == 1;
  if (!m->inplace && !m->outofplace)
    {
      fail_at (error, rd, "the algo runs neither in place nor out of place "
               "(inplace and outofplace are both 0)");
      return FALSE;
    }
  if ((text = attr (names, values, "name")) != NULL && *text)
    {
      g_free (m->name);
      m->name = g_strdup (text);
    }
  if ((text = attr (names, values, "proto")) != NULL)
    {
      static const struct { const char *name; WeftProtocolKind kind; }
      protos[] = { { "Simple", WEFT_PROTOCOL_SIMPLE },
                   { "LL128", WEFT_PROTOCOL_LL128 },
                   { "LL", WEFT_PROTOCOL_LL } };
      for (size_t p = 0; p < G_N_ELEMENTS (protos) && !m->has_proto; p++)
        if (strcmp (text, protos[p].name) == 0)
          {
            m->proto = protos[p].kind;
            m->has_proto = TRUE;
          }
      if (!m->has_proto)
        {
          fail_at (error, rd, "unknown proto '%s'; valid: Simple, LL128, LL",
                   text);
          return FALSE;
        }
    }
  if ((text = attr (names, values, "coll")) != NULL)
    {
      static const struct { const char *name; WeftOp op; } colls[] = {
        { "allreduce", WEFT_OP_ALL_REDUCE },
        { "allgather", WEFT_OP_ALL_GATHER },
        { "reducescatter", WEFT_OP_REDUCE_SCATTER },
        { "alltoall", WEFT_OP_ALL_TO_ALL },
        { "broadcast", WEFT_OP_BROADCAST },
        { "reduce", WEFT_OP_REDUCE },
      };
      for (size_t c = 0; c < G_N_ELEMENTS (colls) && !m->has_op; c++)
        if (strcmp (text, colls[c].name) == 0)
          {
            m->op = colls[c].op;
            m->has_op = TRUE;
          }
      if (!m->has_op)
        {
          fail_at (error, rd, "coll '%s' is not one weft runs; valid: "
                   "allreduce, allgather, reducescatter, alltoall, "
                   "broadcast, reduce", text);
          return FALSE;
        }
    }
  m->gpus = g_new0 (Gpu, m->n_gpus);
  return TRUE;
}

static gboolean
read_gpu (Reader *rd, const char **names, const char **values,
          GError **error)
{
  WeftMsccl *m = rd->m;
  static const char *const keys[N_BUFS] = { "i_chunks", "o_chunks",
                                            "s_chunks" };
  int64_t v;

  if (!int_attr (rd, "gpu", names, values, "id", 0, m->n_gpus - 1, -1, &v,
                 error))
    return FALSE;
  Gpu *g = &m->gpus[v];
  if (g->seen)
    {
      fail_at (error, rd, "a second <gpu id=\"%" G_GINT64_FORMAT "\">", v);
      return FALSE;
    }
  g->seen = TRUE;
  m->gpu = (uint32_t) v;
  for (int b = 0; b < N_BUFS; b++)
    {
      int64_t c;
      if (!int_attr (rd, "gpu", names, values, keys[b], 0, 1 << 20, 0, &c,
                     error))
        return FALSE;
      g->chunks[b] = (uint32_t) c;
    }
  g->tbs = g_array_new (FALSE, FALSE, sizeof (Block));
  return TRUE;
}

static gboolean
read_tb (Reader *rd, const char **names, const char **values,
         GError **error)
{
  WeftMsccl *m = rd->m;
  Gpu *g = &m->gpus[m->gpu];
  Block b = { .steps = g_array_new (FALSE, FALSE, sizeof (Step)) };
  int64_t v;

  position (rd, &b.line, &b.col);
  g_array_append_val (g->tbs, b);
  Block *tb = &g_array_index (g->tbs, Block, g->tbs->len - 1);
  m->tb = g->tbs->len - 1;
  if (!int_attr (rd, "tb", names, values, "id", 0, G_MAXINT16, -1, &v, error))
    return FALSE;
  tb->id = (int32_t) v;
  if (!int_attr (rd, "tb", names, values, "send", -1, m->n_gpus - 1, -1, &v,
                 error))
    return FALSE;
  tb->send = (int32_t) v;
  if (!int_attr (rd, "tb", names, values, "recv", -1, m->n_gpus - 1, -1, &v,
                 error))
    return FALSE;
  tb->recv = (int32_t) v;
  if (!int_attr (rd, "tb", names, values, "chan", 0, m->n_channels - 1, 0,
                 &v, error))
    return FALSE;
  tb->chan = (uint32_t) v;
  if (tb->send == (int32_t) m->gpu || tb->recv == (int32_t) m->gpu)
    {
      fail_at (error, rd, "gpu %u's thread block %d names gpu %u itself as "
               "a peer", m->gpu, tb->id, m->gpu);
      return FALSE;
    }
  for (guint t = 0; t + 1 < g->tbs->len; t++)
    {
      const Block *o = &g_array_index (g->tbs, Block, t);
      const char *clash = o->id == tb->id ? "its id"
                          : tb->send >= 0 && o->send == tb->send
                                  && o->chan == tb->chan
                              ? "its send peer and channel"
                          : tb->recv >= 0 && o->recv == tb->recv
                                  && o->chan == tb->chan
                              ? "its receive peer and channel"
                              : NULL;
      if (clash)
        {
          fail_at (error, rd, "gpu %u's thread block %d has %s as thread "
                   "block %d (line %d): each connection (peer and channel) "
                   "is one thread block's", m->gpu, tb->id, clash, o->id,
                   o->line);
          return FALSE;
        }
    }
  return TRUE;
}

static gboolean
read_step (Reader *rd, const char **names, const char **values,
           GError **error)
{
  WeftMsccl *m = rd->m;
  Gpu *g = &m->gpus[m->gpu];
  Block *tb = &g_array_index (g->tbs, Block, m->tb);
  Step st = { 0 };
  const char *type = attr (names, values, "type");
  int64_t v;

  position (rd, &st.line, &st.col);
  if (!int_attr (rd, "step", names, values, "s", 0, G_MAXINT16, -1, &v,
                 error))
    return FALSE;
  if (v != tb->steps->len)
    {
      fail_at (error, rd, "step s=\"%" G_GINT64_FORMAT "\" is step %u of its "
               "thread block: steps are numbered in order from 0", v,
               tb->steps->len);
      return FALSE;
    }
  if (type == NULL)
    {
      fail_at (error, rd, "<step> has no attribute 'type'");
      return FALSE;
    }
  st.type = G_N_ELEMENTS (types);
  for (size_t t = 0; t < G_N_ELEMENTS (types); t++)
    if (strcmp (type, types[t].name) == 0)
      st.type = (uint8_t) t;
  if (st.type == G_N_ELEMENTS (types))
    {
      fail_at (error, rd, "unknown step type '%s'; valid: s, r, rcs, rrs, "
               "rrc, rrcs, re, cpy, nop", type);
      return FALSE;
    }
  if (!buffer_attr (rd, names, values, "srcbuf", &st.srcbuf, error)
      || !buffer_attr (rd, names, values, "dstbuf", &st.dstbuf, error))
    return FALSE;
  if (!int_attr (rd, "step", names, values, "srcoff", -1, 1 << 20, 0, &v,
                 error))
    return FALSE;
  st.srcoff = (uint32_t) MAX (v, 0);
  if (!int_attr (rd, "step", names, values, "dstoff", -1, 1 << 20, 0, &v,
                 error))
    return FALSE;
  st.dstoff = (uint32_t) MAX (v, 0);
  if (!int_attr (rd, "step", names, values, "cnt", st.type == T_NOP ? 0 : 1,
                 1 << 20, st.type == T_NOP ? 0 : 1, &v, error))
    return FALSE;
  st.cnt = (uint32_t) v;
  if (!int_attr (rd, "step", names, values, "depid", -1, G_MAXINT16, -1, &v,
                 error))
    return FALSE;
  st.depid = (int32_t) v;
  if (!int_attr (rd, "step", names, values, "deps", -1, G_MAXINT16, -1, &v,
                 error))
    return FALSE;
  st.deps = (int32_t) v;
  if ((st.depid < 0) != (st.deps < 0))
    {
      fail_at (error, rd, "a step waits for thread block depid's step deps: "
               "give both or neither");
      return FALSE;
    }
  if (types[st.type].sends && tb->send < 0)
    {
      fail_at (error, rd, "a '%s' step sends, and its thread block %d has "
               "no send peer", type, tb->id);
      return FALSE;
    }
  if (types[st.type].recvs && tb->recv < 0)
    {
      fail_at (error, rd, "a '%s' step receives, and its thread block %d "
               "has no receive peer", type, tb->id);
      return FALSE;
    }
  for (int side = 0; side < 2; side++)
    {
      gboolean used = side == 0 ? types[st.type].reads
                                    || st.type == T_RE
                                : types[st.type].writes;
      uint8_t buf = side == 0 ? st.srcbuf : st.dstbuf;
      uint32_t off = side == 0 ? st.srcoff : st.dstoff;
      if (used && (uint64_t) off + st.cnt > g->chunks[buf])
        {
          static const char *const bufs = "ios";
          fail_at (error, rd, "the step's %s chunks %c[%u..%u] pass the end "
                   "of gpu %u's %c buffer (%u chunks)",
                   side == 0 ? "source" : "destination", bufs[buf], off,
                   off + st.cnt - 1, m->gpu, bufs[buf], g->chunks[buf]);
          return FALSE;
        }
    }
  g_array_append_val (tb->steps, st);
  return TRUE;
}

static void
start_element (GMarkupParseContext *ctx, const char *elem, const char **names,
               const char **values, gpointer data, GError **error)
{
  Reader *rd = data;
  static const char *const nest[] = { "algo", "gpu", "tb", "step" };
  int depth = rd->m->depth++;

  (void) ctx;
  rd->in_tag = TRUE;
  if (depth >= (int) G_N_ELEMENTS (nest) || strcmp (elem, nest[depth]) != 0)
    {
      if (depth < (int) G_N_ELEMENTS (nest))
        fail_at (error, rd, "<%s> where <%s> belongs: an MSCCL algorithm is "
                 "<algo>, its <gpu>s, their <tb>s and their <step>s", elem,
                 nest[depth]);
      else
        fail_at (error, rd, "<%s> inside a <step>, which holds nothing",
                 elem);
      return;
    }
  if (depth == 0 && rd->m->gpus != NULL)
    fail_at (error, rd, "a second <algo>: a file holds one algorithm");
  else if (depth == 0)
    read_algo (rd, names, values, error);
  else if (depth == 1)
    read_gpu (rd, names, values, error);
  else if (depth == 2)
    read_tb (rd, names, values, error);
  else
    read_step (rd, names, values, error);
  rd->in_tag = FALSE;
}

static void
end_element (GMarkupParseContext *ctx, const char *elem, gpointer data,
             GError **error)
{
  Reader *rd = data;

  (void) ctx;
  (void) elem;
  (void) error;
  rd->m->depth--;
}

/* "file:line:col: message" of a GMarkup error, whose message begins
 * "Error on line L char C: " where it knows them. */
static void
markup_error (const Reader *rd, GError *cause, GError **error)
{
  const char *message = cause->message;
  const char *colon = g_str_has_prefix (message, "Error on line ")
                          ? strstr (message, ": ")
                          : NULL;

  fail_at (error, rd, "%s", colon ? colon + 2 : message);
}

/* Each step's dependency: a thread block of its GPU, a step of it.  Then
 * an order of each GPU's steps that the blocks and dependencies allow: a
 * GPU whose blocks wait for each other in a circle never finishes. */
static gboolean
link_steps (WeftMsccl *m, GError **error)
{
  for (uint32_t gi = 0; gi < m->n_gpus; gi++)
    {
      Gpu *g = &m->gpus[gi];
      uint32_t total = 0, n_tbs = g->tbs->len;
      for (uint32_t t = 0; t < n_tbs; t++)
        {
          Block *tb = &g_array_index (g->tbs, Block, t);
          total += tb->steps->len;
          for (guint s = 0; s < tb->steps->len; s++)
            {
              Step *st = &g_array_index (tb->steps, Step, s);
              gboolean found = st->depid < 0;
              for (uint32_t o = 0; !found && o < n_tbs; o++)
                {
                  const Block *on = &g_array_index (g->tbs, Block, o);
                  if (on->id != st->depid)
                    continue;
                  if ((guint) st->deps >= on->steps->len)
                    {
                      g_set_error (error, WEFT_SCHEDULE_ERROR,
                                   WEFT_SCHEDULE_ERROR_INVALID,
                                   "%s:%d:%d: gpu %u's thread block %d has "
                                   "no step %d to wait for (it has %u)",
                                   m->path, st->line, st->col, gi,
                                   st->depid, st->deps, on->steps->len);
                      return FALSE;
                    }
                  st->dep_tb = o;
                  found = TRUE;
                }
              if (!found)
                {
                  g_set_error (error, WEFT_SCHEDULE_ERROR,
                               WEFT_SCHEDULE_ERROR_INVALID,
                               "%s:%d:%d: gpu %u has no thread block %d to "
                               "wait for", m->path, st->line, st->col, gi,
                               st->depid);
                  return FALSE;
                }
            }
        }
      /* Take each block's steps as far as their dependencies are taken,
       * round after round. */
      g_autofree uint32_t *next = g_new0 (uint32_t, MAX (n_tbs, 1));
      g->order = g_new (uint32_t, MAX (total, 1));
      gboolean moved = TRUE;
      while (moved)
        {
          moved = FALSE;
          for (uint32_t t = 0; t < n_tbs; t++)
            {
              const Block *tb = &g_array_index (g->tbs, Block, t);
              while (next[t] < tb->steps->len)
                {
                  const Step *st = &g_array_index (tb->steps, Step,
                                                   next[t]);
                  if (st->depid >= 0
                      && next[st->dep_tb] <= (uint32_t) st->deps)
                    break;
                  g->order[g->n_order++] = t << 16 | next[t]++;
                  moved = TRUE;
                }
            }
        }
      for (uint32_t t = 0; t < n_tbs && g->n_order < total; t++)
        {
          const Block *tb = &g_array_index (g->tbs, Block, t);
          if (next[t] < tb->steps->len)
            {
              const Step *st = &g_array_index (tb->steps, Step, next[t]);
              g_set_error (error, WEFT_SCHEDULE_ERROR,
                           WEFT_SCHEDULE_ERROR_INVALID,
                           "%s:%d:%d: gpu %u thread block %d step %u waits "
                           "for thread block %d step %d, which waits, "
                           "through its own, for it: neither can run",
                           m->path, st->line, st->col, gi, tb->id, next[t],
                           st->depid, st->deps);
              return FALSE;
            }
        }
    }
  return TRUE;
}

WeftMsccl *
weft_msccl_load (const char *path, GError **error)
{
  g_autoptr (WeftMsccl) m = g_new0 (WeftMsccl, 1);
  g_autofree char *text = NULL;
  g_autoptr (GError) cause = NULL;
  gsize len;
  static const GMarkupParser parser = { start_element, end_element, NULL,
                                        NULL, NULL };

  m->path = g_strdup (path);
  m->name = g_path_get_basename (path);
  if (!g_file_get_contents (path, &text, &len, &cause))
    {
      g_set_error (error, WEFT_SCHEDULE_ERROR, WEFT_SCHEDULE_ERROR_INVALID,
                   "%s: %s", path, cause->message);
      return NULL;
    }
  Reader rd = { m, NULL, text, g_array_new (FALSE, FALSE, sizeof (size_t)),
                FALSE };
  for (size_t at = 0, start = 0; at <= len; at++)
    if (at == len || text[at] == '\n')
      {
        g_array_append_val (rd.lines, start);
        start = at + 1;
      }
  rd.ctx = g_markup_parse_context_new (&parser, 0, &rd, NULL);
  gboolean ok = g_markup_parse_context_parse (rd.ctx, text, (gssize) len,
                                              &cause)
                && g_markup_parse_context_end_parse (rd.ctx, &cause);
  if (!ok)
    {
      if (cause->domain == G_MARKUP_ERROR)
        markup_error (&rd, cause, error);
      else
        g_propagate_error (error, g_steal_pointer (&cause));
      g_markup_parse_context_free (rd.ctx);
      g_array_unref (rd.lines);
      return NULL;
    }
  g_markup_parse_context_free (rd.ctx);
  g_array_unref (rd.lines);
  if (m->gpus == NULL)
    {
      g_set_error (error, WEFT_SCHEDULE_ERROR, WEFT_SCHEDULE_ERROR_INVALID,
                   "%s:1:1: no <algo>: an MSCCL algorithm file is one <algo> "
                   "of <gpu>s", path);
      return NULL;
    }
  for (uint32_t g = 0; g < m->n_gpus; g++)
    if (!m->gpus[g].seen)
      {
        g_set_error (error, WEFT_SCHEDULE_ERROR, WEFT_SCHEDULE_ERROR_INVALID,
                     "%s: the algo is for %u GPUs and has no <gpu id=\"%u\">",
                     path, m->n_gpus, g);
        return NULL;
      }
  if (!link_steps (m, error))
    return NULL;
  return g_steal_pointer (&m);
}

/* ---- its schedule ---- */

static const Block *
block_of (const WeftMsccl *m, uint32_t g, uint32_t t)
{
  return &g_array_index (m->gpus[g].tbs, Block, t);
}

static const Step *
step_of (const WeftMsccl *m, uint32_t g, uint32_t t, uint32_t s)
{
  return &g_array_index (block_of (m, g, t)->steps, Step, s);
}

/* The bytes of @cnt chunks from @off of a buffer. */
static uint64_t
chunk_bytes (const WeftMsccl *m, uint64_t size, uint32_t off, uint32_t cnt)
{
  uint64_t bytes = 0;

  for (uint32_t k = 0; k < cnt; k++)
    bytes += weft_part (size, m->n_chunks, (off + k) % m->n_chunks);
  return bytes;
}

WeftSchedule *
weft_msccl_build (const WeftMsccl *m, uint64_t size, GError **error)
{
  g_autoptr (WeftSchedule) s = weft_schedule_new (m->n_gpus);
  g_autoptr (GError) cause = NULL;

  for (uint32_t g = 0; g < m->n_gpus; g++)
    {
      const Gpu *gpu = &m->gpus[g];
      /* Per block, per step: the schedule's step that ends it. */
      g_autofree uint32_t **last = g_new0 (uint32_t *, MAX (gpu->tbs->len, 1));
      for (guint t = 0; t < gpu->tbs->len; t++)
        last[t] = g_new (uint32_t, MAX (block_of (m, g, t)->steps->len, 1));
      for (uint32_t k = 0; k < gpu->n_order; k++)
        {
          uint32_t t = gpu->order[k] >> 16, i = gpu->order[k] & 0xffff;
          const Block *tb = block_of (m, g, t);
          const Step *st = step_of (m, g, t, i);
          uint64_t bytes = chunk_bytes (m, size, types[st->type].reads
                                                     ? st->srcoff
                                                     : st->dstoff,
                                        st->cnt);
          uint32_t deps[2], n = 0, at = 0;
          if (i > 0)
            deps[n++] = last[t][i - 1];
          if (st->depid >= 0)
            deps[n++] = last[st->dep_tb][st->deps];
          if (types[st->type].recvs)
            {
              at = weft_schedule_add (s, g, WEFT_STEP_RECV, (uint32_t) tb->recv,
                                      tb->chan, bytes, deps, n);
              deps[0] = at;
              n = 1;
            }
          if (types[st->type].adds || st->type == T_CPY || st->type == T_NOP)
            {
              at = weft_schedule_add (s, g, WEFT_STEP_REDUCE, 0, 0,
                                      st->type == T_NOP ? 0 : bytes, deps, n);
              deps[0] = at;
              n = 1;
            }
          if (types[st->type].sends)
            at = weft_schedule_add (s, g, WEFT_STEP_SEND, (uint32_t) tb->send,
                                    tb->chan, bytes, deps, n);
          last[t][i] = at;
        }
      for (guint t = 0; t < gpu->tbs->len; t++)
        g_free (last[t]);
    }
  if (!weft_schedule_check (s, &cause))
    {
      g_set_error (error, WEFT_SCHEDULE_ERROR, WEFT_SCHEDULE_ERROR_INVALID,
                   "%s: %s", m->path, cause->message);
      return NULL;
    }
  return g_steal_pointer (&s);
}

/* ---- what it computes ---- */

/* What a chunk holds: a contribution is a rank's chunk's signature. */
typedef WeftHeld Value;

static Value
one_of (const WeftMsccl *m, uint32_t rank, uint32_t chunk)
{
  return (Value) { weft_signature ((uint64_t) rank * m->n_chunks + chunk), 1,
                   TRUE };
}

static Value
sum_of (const WeftMsccl *m, uint32_t chunk)
{
  Value v = { 0, m->n_gpus, TRUE };

  for (uint32_t q = 0; q < m->n_gpus; q++)
    v.sum += one_of (m, q, chunk).sum;
  return v;
}

static Value
plus (Value a, Value b)
{
  return (Value) { a.sum + b.sum, a.count + b.count, TRUE };
}

/* One run of the check: a step is (gpu, block, step), numbered in `first`
 * order; a GPU's chunks are cells, its buffers laid out one after another,
 * or the output over the input where the operation runs in place. */
typedef struct {
  const WeftMsccl *m;
  WeftOp op;
  gboolean inplace;
  uint32_t **first;             /* per GPU, per block: its first step's
                                   number */
  uint32_t n_steps;
  uint32_t *cells;              /* per GPU: how many */
  Value **value;                /* per GPU, per cell */
  uint32_t **wrote;             /* per GPU, per cell: the last step that
                                   wrote it, or UINT32_MAX */
  Value **message;              /* per step that sends: what it sent */
  uint32_t *from;               /* per step that receives: the send it
                                   meets */
  uint32_t *to;                 /* per step that sends: the receive */
  uint64_t *where;              /* per step number: gpu, block, step */
} Check;

static uint64_t
where_of (uint32_t g, uint32_t t, uint32_t s)
{
  return (uint64_t) g << 40 | (uint64_t) t << 20 | s;
}

static gboolean
step_error (GError **error, const Check *x, uint32_t id, const char *format,
            ...) G_GNUC_PRINTF (4, 5);

static gboolean
step_error (GError **error, const Check *x, uint32_t id, const char *format,
            ...)
{
  uint64_t w = x->where[id];
  uint32_t g = (uint32_t) (w >> 40), t = (uint32_t) (w >> 20) & 0xfffff,
           s = (uint32_t) w & 0xfffff;
  const Step *st = step_of (x->m, g, t, s);
  va_list ap;

  va_start (ap, format);
  g_autofree char *message = g_strdup_vprintf (format, ap);
  va_end (ap);
  g_set_error (error, WEFT_SCHEDULE_ERROR, WEFT_SCHEDULE_ERROR_INVALID,
               "%s:%d:%d: gpu %u thread block %d step %u (%s%s) %s",
               x->m->path, st->line, st->col, g, block_of (x->m, g, t)->id, s,
               types[st->type].name,
               x->m->inplace && x->m->outofplace
                   ? (x->inplace ? ", in place" : ", out of place")
                   : "",
               message);
  return FALSE;
}

/* The cell of chunk @off of buffer @buf of GPU @g, and its name. */
static uint32_t
cell_of (const Check *x, uint32_t g, uint8_t buf, uint32_t off)
{
  const uint32_t *c = x->m->gpus[g].chunks;
  uint32_t per = x->m->n_chunks / x->m->n_gpus;

  if (x->inplace)
    switch (x->op)
      {
      case WEFT_OP_ALL_GATHER:
        /* The input is the GPU's block of the output. */
        if (buf == BUF_I && off < per && (uint64_t) g * per + off < c[BUF_O])
          return c[BUF_I] + g * per + off;
        break;
      case WEFT_OP_REDUCE_SCATTER:
        /* The output is the GPU's block of the input. */
        if (buf == BUF_O && off < per && (uint64_t) g * per + off < c[BUF_I])
          return g * per + off;
        break;
      default:
        if (buf == BUF_O && off < c[BUF_I])
          return off;
      }
  return (buf >= BUF_O ? c[BUF_I] : 0) + (buf == BUF_S ? c[BUF_O] : 0) + off;
}

static char *
cell_name (uint8_t buf, uint32_t off)
{
  return g_strdup_printf ("%c[%u]", "ios"[buf], off);
}

/* The name of GPU @g's cell @c, by the buffer it lies in. */
static char *
name_of_cell (const Check *x, uint32_t g, uint32_t c)
{
  const uint32_t *n = x->m->gpus[g].chunks;

  if (c < n[BUF_I])
    return cell_name (BUF_I, c);
  if (c < n[BUF_I] + n[BUF_O])
    return cell_name (BUF_O, c - n[BUF_I]);
  return cell_name (BUF_S, c - n[BUF_I] - n[BUF_O]);
}

/* What chunk @k of GPU @g's input holds before, or its output must hold
 * after (a Value not held: anything), of @x's operation; FALSE if the
 * buffer is too small for the operation's chunks. */
static Value
value_in (const Check *x, uint32_t g, uint32_t k)
{
  const WeftMsccl *m = x->m;
  uint32_t per = m->n_chunks / m->n_gpus;

  switch (x->op)
    {
    case WEFT_OP_ALL_GATHER:
      return k < per ? one_of (m, g, k) : (Value) { 0 };
    case WEFT_OP_BROADCAST:
      return g == 0 && k < m->n_chunks ? one_of (m, 0, k) : (Value) { 0 };
    default:
      return k < m->n_chunks ? one_of (m, g, k) : (Value) { 0 };
    }
}

static Value
value_out (const Check *x, uint32_t g, uint32_t k)
{
  const WeftMsccl *m = x->m;
  uint32_t n = m->n_gpus, per = m->n_chunks / n;

  switch (x->op)
    {
    case WEFT_OP_ALL_REDUCE:
      return sum_of (m, k);
    case WEFT_OP_REDUCE:
      return g == 0 ? sum_of (m, k) : (Value) { 0 };
    case WEFT_OP_REDUCE_SCATTER:
      return sum_of (m, g * per + k);
    case WEFT_OP_ALL_GATHER:
      return one_of (m, k / per, k % per);
    case WEFT_OP_BROADCAST:
      return one_of (m, 0, k);
    case WEFT_OP_ALL_TO_ALL:
      return one_of (m, k / per, g * per + k % per);
    default:
      g_assert_not_reached ();
    }
}

/* Chunks of the input and output @x's operation reads and writes. */
static void
extents (const Check *x, uint32_t *in, uint32_t *out)
{
  uint32_t per = x->m->n_chunks / x->m->n_gpus;

  *in = x->op == WEFT_OP_ALL_GATHER ? per : x->m->n_chunks;
  *out = x->op == WEFT_OP_REDUCE_SCATTER ? per : x->m->n_chunks;
}

/* Apply step @id, whose predecessors are done. */
static gboolean
apply (Check *x, uint32_t id, GError **error)
{
  uint64_t w = x->where[id];
  uint32_t g = (uint32_t) (w >> 40), t = (uint32_t) (w >> 20) & 0xfffff,
           s = (uint32_t) w & 0xfffff;
  const Step *st = step_of (x->m, g, t, s);
  const TypeInfo *ty = &types[st->type];
  Value *cell = x->value[g];
  g_autofree Value *got = NULL, *out = g_new0 (Value, MAX (st->cnt, 1));

  if (ty->recvs)
    got = g_steal_pointer (&x->message[x->from[id]]);
  for (uint32_t k = 0; k < st->cnt; k++)
    {
      uint32_t src = cell_of (x, g, st->srcbuf, st->srcoff + k);
      uint32_t dst = cell_of (x, g, st->dstbuf, st->dstoff + k);
      Value v = { 0 };
      for (int r = 0; r < 2; r++)
        {
          uint8_t buf = r == 0 ? st->srcbuf : st->dstbuf;
          uint32_t off = (r == 0 ? st->srcoff : st->dstoff) + k;
          uint32_t c = r == 0 ? src : dst;
          gboolean reads = r == 0 ? ty->reads : st->type == T_RE;
          if (reads && !cell[c].held)
            {
              g_autofree char *name = cell_name (buf, off);
              return step_error (error, x, id, "reads chunk %s, which gpu %u "
                                 "does not hold yet", name, g);
            }
        }
      if (ty->recvs && ty->adds)
        v = plus (cell[src], got[k]);
      else if (ty->recvs)
        v = got[k];
      else if (st->type == T_RE)
        v = plus (cell[dst], cell[src]);
      else if (ty->reads)
        v = cell[src];
      out[k] = v;
      if (ty->writes)
        {
          cell[dst] = v;
          x->wrote[g][dst] = id;
        }
    }
  if (ty->sends)
    x->message[id] = g_steal_pointer (&out);
  return TRUE;
}

/* Steps of all GPUs at most for which races are looked for (the check
 * keeps which steps come before each, a bit a pair). */
#define RACE_STEPS 16384

/* Two steps of a GPU that touch a cell, one writing it, must come one
 * before the other (by their block, a dependency, or through other GPUs:
 * a receive comes after its send).  @order lists the steps as applied,
 * @before per step the steps before it. */
static gboolean
check_races (const Check *x, const uint32_t *order, const uint64_t *before,
             uint32_t words, GError **error)
{
  for (uint32_t g = 0; g < x->m->n_gpus; g++)
    {
      uint32_t n_cells = x->cells[g];
      g_autofree uint32_t *last_write = g_new (uint32_t, MAX (n_cells, 1));
      g_autoptr (GArray) readers = g_array_new (FALSE, FALSE,
                                                sizeof (uint64_t));
      for (uint32_t c = 0; c < n_cells; c++)
        last_write[c] = UINT32_MAX;
      for (uint32_t k = 0; k < x->n_steps; k++)
        {
          uint32_t id = order[k];
          uint64_t w = x->where[id];
          if ((uint32_t) (w >> 40) != g)
            continue;
          const Step *st = step_of (x->m, g, (uint32_t) (w >> 20) & 0xfffff,
                                    (uint32_t) w & 0xfffff);
          const uint64_t *mine = &before[(size_t) id * words];
          for (uint32_t e = 0; e < st->cnt; e++)
            for (int side = 0; side < 2; side++)
              {
                gboolean reads = side == 0 ? types[st->type].reads
                                           : st->type == T_RE;
                gboolean writes = side == 1 && types[st->type].writes;
                if (!reads && !writes)
                  continue;
                uint8_t buf = side == 0 ? st->srcbuf : st->dstbuf;
                uint32_t off = (side == 0 ? st->srcoff : st->dstoff) + e;
                uint32_t c = cell_of (x, g, buf, off), other = UINT32_MAX;
                uint32_t lw = last_write[c];
                if (lw != UINT32_MAX && lw != id
                    && !(mine[lw / 64] >> (lw % 64) & 1))
                  other = lw;
                for (guint r = 0; writes && other == UINT32_MAX
                                  && r < readers->len; r++)
                  {
                    uint64_t rc = g_array_index (readers, uint64_t, r);
                    uint32_t q = (uint32_t) rc;
                    if ((uint32_t) (rc >> 32) == c && q != id
                        && !(mine[q / 64] >> (q % 64) & 1))
                      other = q;
                  }
                if (other != UINT32_MAX)
                  {
                    uint64_t ow = x->where[other];
                    uint32_t ot = (uint32_t) (ow >> 20) & 0xfffff;
                    g_autofree char *name = cell_name (buf, off);
                    return step_error (error, x, id, "and thread block %d "
                                       "step %u (line %d) both touch chunk "
                                       "%s, one writing it, and neither "
                                       "comes before the other: what it "
                                       "holds depends on which runs first",
                                       block_of (x->m, g, ot)->id,
                                       (uint32_t) ow & 0xfffff,
                                       step_of (x->m, g, ot,
                                                (uint32_t) ow & 0xfffff)
                                           ->line,
                                       name);
                  }
                if (writes)
                  {
                    last_write[c] = id;
                    /* Readers of this cell are now ordered before it. */
                    guint keep = 0;
                    for (guint r = 0; r < readers->len; r++)
                      {
                        uint64_t rc = g_array_index (readers, uint64_t, r);
                        if ((uint32_t) (rc >> 32) != c)
                          g_array_index (readers, uint64_t, keep++) = rc;
                      }
                    g_array_set_size (readers, keep);
                  }
                else
                  {
                    uint64_t rc = (uint64_t) c << 32 | id;
                    g_array_append_val (readers, rc);
                  }
              }
        }
    }
  return TRUE;
}

/* Pair each send with its receive: the k-th send of a GPU to a peer on a
 * channel with the peer's k-th receive from it on that channel. */
static gboolean
pair_steps (Check *x, GError **error)
{
  const WeftMsccl *m = x->m;
  /* Per (from, to, channel): the sends not yet met, in order. */
  g_autoptr (GHashTable) queues = g_hash_table_new_full (
      g_int64_hash, g_int64_equal, g_free, (GDestroyNotify) g_array_unref);

  for (int pass = 0; pass < 2; pass++)
    for (uint32_t g = 0; g < m->n_gpus; g++)
      for (guint t = 0; t < m->gpus[g].tbs->len; t++)
        {
          const Block *tb = block_of (m, g, t);
          for (guint s = 0; s < tb->steps->len; s++)
            {
              const Step *st = step_of (m, g, t, s);
              uint32_t id = x->first[g][t] + s;
              gboolean mine = pass == 0 ? types[st->type].sends
                                        : types[st->type].recvs;
              if (!mine)
                continue;
              int64_t key = pass == 0
                                ? ((int64_t) g << 40 | (int64_t) tb->send << 8
                                   | tb->chan)
                                : ((int64_t) tb->recv << 40
                                   | (int64_t) g << 8 | tb->chan);
              GArray *q = g_hash_table_lookup (queues, &key);
              if (pass == 0)
                {
                  if (q == NULL)
                    {
                      q = g_array_new (FALSE, FALSE, sizeof (uint32_t));
                      g_hash_table_insert (queues, g_memdup2 (&key,
                                                              sizeof key),
                                           q);
                    }
                  g_array_append_val (q, id);
                  continue;
                }
              if (q == NULL || q->len == 0)
                return step_error (error, x, id, "receives from gpu %d on "
                                   "channel %u, which sends it nothing more",
                                   tb->recv, tb->chan);
              uint32_t from = g_array_index (q, uint32_t, 0);
              g_array_remove_index (q, 0);
              uint64_t fw = x->where[from];
              const Step *sent = step_of (m, (uint32_t) (fw >> 40),
                                          (uint32_t) (fw >> 20) & 0xfffff,
                                          (uint32_t) fw & 0xfffff);
              if (sent->cnt != st->cnt)
                return step_error (error, x, id, "receives %u chunks where "
                                   "its send (line %d) sends %u", st->cnt,
                                   sent->line, sent->cnt);
              x->from[id] = from;
              x->to[from] = id;
            }
        }
  GHashTableIter it;
  gpointer key, value;
  g_hash_table_iter_init (&it, queues);
  while (g_hash_table_iter_next (&it, &key, &value))
    {
      GArray *q = value;
      if (q->len > 0)
        {
          uint32_t id = g_array_index (q, uint32_t, 0);
          return step_error (error, x, id, "sends to gpu %u on channel %u, "
                             "which receives nothing more from it",
                             (uint32_t) (*(int64_t *) key >> 8) & 0xffffffff,
                             (uint32_t) (*(int64_t *) key & 0xff));
        }
    }
  return TRUE;
}

static void
free_list (gpointer list)
{
  if (list != NULL)
    g_array_unref (list);
}

static gboolean
verify_mode (const WeftMsccl *m, WeftOp op, gboolean inplace, GError **error)
{
  uint32_t n = m->n_gpus;
  Check x = { .m = m, .op = op, .inplace = inplace };
  gboolean ok = TRUE;

  x.first = g_new0 (uint32_t *, n);
  x.cells = g_new (uint32_t, n);
  x.value = g_new0 (Value *, n);
  x.wrote = g_new0 (uint32_t *, n);
  for (uint32_t g = 0; g < n; g++)
    {
      const Gpu *gpu = &m->gpus[g];
      x.first[g] = g_new (uint32_t, MAX (gpu->tbs->len, 1));
      for (guint t = 0; t < gpu->tbs->len; t++)
        {
          x.first[g][t] = x.n_steps;
          x.n_steps += block_of (m, g, t)->steps->len;
        }
      x.cells[g] = gpu->chunks[BUF_I] + gpu->chunks[BUF_O]
                   + gpu->chunks[BUF_S];
      x.value[g] = g_new0 (Value, MAX (x.cells[g], 1));
      x.wrote[g] = g_new (uint32_t, MAX (x.cells[g], 1));
      for (uint32_t c = 0; c < x.cells[g]; c++)
        x.wrote[g][c] = UINT32_MAX;
    }
  uint32_t total = MAX (x.n_steps, 1);
  x.where = g_new (uint64_t, total);
  x.message = g_new0 (Value *, total);
  x.from = g_new (uint32_t, total);
  x.to = g_new (uint32_t, total);
  for (uint32_t g = 0; g < n; g++)
    for (guint t = 0; t < m->gpus[g].tbs->len; t++)
      for (guint s = 0; s < block_of (m, g, t)->steps->len; s++)
        x.where[x.first[g][t] + s] = where_of (g, t, s);

  /* The operation's input, where it starts, and room for its output. */
  uint32_t in, out;
  extents (&x, &in, &out);
  for (uint32_t g = 0; g < n && ok; g++)
    {
      /* In place, the input and output are one buffer: the larger. */
      const uint32_t *c = m->gpus[g].chunks;
      uint32_t need_i = in, need_o = out;
      if (inplace && op == WEFT_OP_ALL_GATHER)
        need_i = 0, need_o = m->n_chunks;
      else if (inplace)
        need_i = m->n_chunks, need_o = 0;
      if (c[BUF_I] < need_i || c[BUF_O] < need_o)
        {
          g_set_error (error, WEFT_SCHEDULE_ERROR, WEFT_SCHEDULE_ERROR_INVALID,
                       "%s: %s, the %s of %u chunks over %u GPUs needs at least "
                       "%u input and %u output chunks a GPU (i_chunks, "
                       "o_chunks); gpu %u has %u and %u", m->path,
                       inplace ? "in place" : "out of place",
                       weft_op_name (op), m->n_chunks, n, need_i, need_o, g,
                       c[BUF_I], c[BUF_O]);
          ok = FALSE;
        }
      for (uint32_t k = 0; ok && k < in; k++)
        x.value[g][cell_of (&x, g, BUF_I, k)] = value_in (&x, g, k);
    }
  ok = ok && pair_steps (&x, error);

  /* Run the steps in an order their blocks, dependencies and pairs
   * allow; which steps come before each, where there are few enough. */
  g_autofree uint32_t *remaining = g_new0 (uint32_t, total);
  g_autofree uint32_t *order = g_new (uint32_t, total);
  uint32_t n_done = 0, n_ready = 0, words = (total + 63) / 64;
  g_autofree uint64_t *before = ok && x.n_steps <= RACE_STEPS
                                    ? g_new0 (uint64_t,
                                              (size_t) total * words)
                                    : NULL;
  /* Dependents of each step on its own GPU: the next of its block, and
   * the steps that wait for it. */
  g_autoptr (GPtrArray) waiting = g_ptr_array_new_full (total, free_list);
  for (uint32_t i = 0; i < total; i++)
    g_ptr_array_add (waiting, NULL);
  for (uint32_t g = 0; g < n && ok; g++)
    for (guint t = 0; t < m->gpus[g].tbs->len; t++)
      for (guint s = 0; s < block_of (m, g, t)->steps->len; s++)
        {
          const Step *st = step_of (m, g, t, s);
          uint32_t id = x.first[g][t] + s;
          remaining[id] = (s > 0) + (st->depid >= 0)
                          + (types[st->type].recvs ? 1 : 0);
          if (st->depid >= 0)
            {
              uint32_t on = x.first[g][st->dep_tb] + (uint32_t) st->deps;
              if (waiting->pdata[on] == NULL)
                waiting->pdata[on] = g_array_new (FALSE, FALSE,
                                                  sizeof (uint32_t));
              g_array_append_val (waiting->pdata[on], id);
            }
          if (remaining[id] == 0)
            order[n_ready++] = id;
        }
  while (ok && n_done < n_ready)
    {
      uint32_t id = order[n_done++];
      uint64_t w = x.where[id];
      uint32_t g = (uint32_t) (w >> 40), t = (uint32_t) (w >> 20) & 0xfffff,
               s = (uint32_t) w & 0xfffff;
      const Step *st = step_of (m, g, t, s);
      if (before != NULL)
        {
          uint32_t pred[3], np = 0;
          if (s > 0)
            pred[np++] = id - 1;
          if (st->depid >= 0)
            pred[np++] = x.first[g][st->dep_tb] + (uint32_t) st->deps;
          if (types[st->type].recvs)
            pred[np++] = x.from[id];
          uint64_t *mine = &before[(size_t) id * words];
          for (uint32_t p = 0; p < np; p++)
            {
              const uint64_t *theirs = &before[(size_t) pred[p] * words];
              for (uint32_t v = 0; v < words; v++)
                mine[v] |= theirs[v];
              mine[pred[p] / 64] |= (uint64_t) 1 << (pred[p] % 64);
            }
        }
      ok = apply (&x, id, error);
      uint32_t next[2], nn = 0;
      if (s + 1 < block_of (m, g, t)->steps->len)
        next[nn++] = id + 1;
      if (types[st->type].sends)
        next[nn++] = x.to[id];
      GArray *after = waiting->pdata[id];
      for (uint32_t k = 0; ok && k < nn; k++)
        if (--remaining[next[k]] == 0)
          order[n_ready++] = next[k];
      for (guint k = 0; ok && after && k < after->len; k++)
        {
          uint32_t j = g_array_index (after, uint32_t, k);
          if (--remaining[j] == 0)
            order[n_ready++] = j;
        }
    }
  if (ok && n_done < x.n_steps)
    {
      /* Some steps never ran: the first of them, by number. */
      for (uint32_t id = 0; id < x.n_steps && ok; id++)
        if (remaining[id] > 0)
          ok = step_error (error, &x, id, "never runs: it waits for a step "
                           "of its own GPU or for a send from its peer that "
                           "never comes, or they wait for each other");
    }
  if (ok && before != NULL)
    ok = check_races (&x, order, before, words, error);

  /* What each GPU ends with, against what it must. */
  for (uint32_t g = 0; g < n && ok; g++)
    for (uint32_t k = 0; k < out && ok; k++)
      {
        uint32_t c = cell_of (&x, g, BUF_O, k);
        Value want = value_out (&x, g, k), got = x.value[g][c];
        if (!want.held || (got.held && got.sum == want.sum
                           && got.count == want.count))
          continue;
        g_autofree char *holds
            = !got.held ? g_strdup ("nothing")
              : g_strdup_printf ("%u contribution%s%s", got.count,
                                 got.count == 1 ? "" : "s",
                                 got.count == want.count
                                     ? " (not the right ones, each once)"
                                     : "");
        g_autofree char *name = name_of_cell (&x, g, c);
        const char *what = op == WEFT_OP_ALL_REDUCE || op == WEFT_OP_REDUCE
                                   || op == WEFT_OP_REDUCE_SCATTER
                               ? "the sum of every GPU's"
                               : "what the operation delivers there";
        if (x.wrote[g][c] == UINT32_MAX)
          {
            g_set_error (error, WEFT_SCHEDULE_ERROR,
                         WEFT_SCHEDULE_ERROR_INVALID,
                         "%s: gpu %u ends with output chunk %s holding %s, "
                         "not %s (%u contribution%s), and no step writes it%s",
                         m->path, g, name, holds, what, want.count,
                         want.count == 1 ? "" : "s",
                         m->inplace && m->outofplace
                             ? (inplace ? " (in place)" : " (out of place)")
                             : "");
            ok = FALSE;
          }
        else
          ok = step_error (error, &x, x.wrote[g][c], "is the last to write "
                           "output chunk %s, which gpu %u ends with holding "
                           "%s, not %s (%u contribution%s)", name, g, holds,
                           what, want.count, want.count == 1 ? "" : "s");
      }

  for (uint32_t i = 0; i < total; i++)
    g_free (x.message[i]);
  for (uint32_t g = 0; g < n; g++)
    {
      g_free (x.first[g]);
      g_free (x.value[g]);
      g_free (x.wrote[g]);
    }
  g_free (x.first);
  g_free (x.cells);
  g_free (x.value);
  g_free (x.wrote);
  g_free (x.where);
  g_free (x.message);
  g_free (x.from);
  g_free (x.to);
  return ok;
}

gboolean
weft_msccl_verify (const WeftMsccl *m, WeftOp op, GError **error)
{
  gboolean blocked = op == WEFT_OP_ALL_GATHER
                     || op == WEFT_OP_REDUCE_SCATTER
                     || op == WEFT_OP_ALL_TO_ALL;

  if (op == WEFT_OP_SEND_RECV)
    {
      g_set_error (error, WEFT_SCHEDULE_ERROR, WEFT_SCHEDULE_ERROR_INVALID,
                   "%s: weft runs MSCCL files for allreduce, allgather, "
                   "reducescatter, alltoall, broadcast and reduce, not %s",
                   m->path, weft_op_name (op));
      return FALSE;
    }
  if (blocked && m->n_chunks % m->n_gpus != 0)
    {
      g_set_error (error, WEFT_SCHEDULE_ERROR, WEFT_SCHEDULE_ERROR_INVALID,
                   "%s: the %s's chunks come in one block a GPU: "
                   "nchunksperloop %u does not split over %u GPUs", m->path,
                   weft_op_name (op), m->n_chunks, m->n_gpus);
      return FALSE;
    }
  uint64_t cells = 0;
  for (uint32_t g = 0; g < m->n_gpus; g++)
    cells += (uint64_t) m->gpus[g].chunks[BUF_I] + m->gpus[g].chunks[BUF_O]
             + m->gpus[g].chunks[BUF_S];
  if (cells > WEFT_CHECK_CHUNKS)
    {
      g_set_error (error, WEFT_SCHEDULE_ERROR, WEFT_SCHEDULE_ERROR_INVALID,
                   "%s: the check would follow %" G_GUINT64_FORMAT " chunks "
                   "(every GPU's buffers); it follows at most %u (run with "
                   "--no-data-check to skip it)", m->path, cells,
                   WEFT_CHECK_CHUNKS);
      return FALSE;
    }
  return (!m->outofplace || verify_mode (m, op, FALSE, error))
         && (!m->inplace || verify_mode (m, op, TRUE, error));
}
