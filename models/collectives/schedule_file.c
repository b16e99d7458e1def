/* weft: collective algorithms written as data. */
#include "collectives/schedule_file.h"

#include <string.h>

#include "collectives/collective-private.h"
#include "collectives/msccl.h"
#include "collectives/schedule_program.h"
#include "config.h"

typedef struct {
  WeftStepKind kind;
  uint32_t peer, tag;
  uint32_t first_chunk, n_chunks;       /* into chunk_pool */
  uint32_t first_dep, n_deps;           /* into dep_pool */
  int line, col;                        /* where the file writes it */
} Template;

struct _WeftScheduleFile {
  char *path;
  char *name;
  WeftOp op;
  uint32_t n_ranks;
  uint32_t switches;            /* the last ranks are switches that reduce
                                   (a built-in's NVLS), not GPUs */
  gboolean out_of_place;        /* a built-in's all_to_all or send_recv:
                                   the chunks are an input, then an output
                                   of as many */
  uint32_t n_chunks;
  GArray **steps;               /* per rank: Template */
  GArray *chunk_pool;           /* uint32_t */
  GArray *dep_pool;             /* uint32_t */
  WeftMsccl *msccl;             /* an MSCCL XML file: all of the above but
                                   path, name, op and n_ranks unused */
  WeftProgram *program;         /* a file for any number of ranks (version
                                   2): the above are its expansion for
                                   n_ranks, 0 until it is expanded */
  gboolean has_op;              /* op is known (an MSCCL file may not say) */
};

/* Forget @f's steps and their pools. */
static void
clear_steps (WeftScheduleFile *f)
{
  for (uint32_t r = 0; f->steps && r < f->n_ranks; r++)
    g_array_unref (f->steps[r]);
  g_clear_pointer (&f->steps, g_free);
  g_clear_pointer (&f->chunk_pool, g_array_unref);
  g_clear_pointer (&f->dep_pool, g_array_unref);
}

/* Room for @n ranks' steps, none yet. */
static void
new_steps (WeftScheduleFile *f, uint32_t n)
{
  f->chunk_pool = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  f->dep_pool = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  f->n_ranks = n;
  f->steps = g_new (GArray *, n);
  for (uint32_t r = 0; r < n; r++)
    f->steps[r] = g_array_new (FALSE, FALSE, sizeof (Template));
}

void
weft_schedule_file_free (WeftScheduleFile *f)
{
  if (f == NULL)
    return;
  clear_steps (f);
  weft_msccl_free (f->msccl);
  weft_program_free (f->program);
  g_free (f->path);
  g_free (f->name);
  g_free (f);
}

WeftOp
weft_schedule_file_op (const WeftScheduleFile *f)
{
  return f->op;
}

gboolean
weft_schedule_file_has_op (const WeftScheduleFile *f)
{
  return f->has_op;
}

void
weft_schedule_file_set_op (WeftScheduleFile *f, WeftOp op)
{
  f->op = op;
  f->has_op = TRUE;
}

gboolean
weft_schedule_file_protocol (const WeftScheduleFile *f,
                             WeftProtocolKind *kind)
{
  return f->msccl != NULL && weft_msccl_protocol (f->msccl, kind);
}

const char *
weft_schedule_file_name (const WeftScheduleFile *f)
{
  return f->name;
}

uint32_t
weft_schedule_file_ranks (const WeftScheduleFile *f)
{
  return f->n_ranks;
}

static const char *const file_keys[] = { "weft_schedule", "name", "op",
                                         "ranks", "chunks", "program",
                                         "description", NULL };
static const char *const program_keys[] = { "weft_schedule", "name", "op",
                                            "let", "requires", "chunks",
                                            "program", "description", NULL };
static const char *const step_keys[] = { "id", "op", "peer", "chunk", "chunks",
                                         "tag", "after", "description", NULL };

static gboolean
read_chunk (WeftScheduleFile *f, const WeftCfg *cfg, GError **error)
{
  uint64_t c;

  if (!weft_cfg_uint (cfg, 0, f->n_chunks - 1, &c, error))
    return FALSE;
  uint32_t v = (uint32_t) c;
  g_array_append_val (f->chunk_pool, v);
  return TRUE;
}

static gboolean
read_step (WeftScheduleFile *f, uint32_t rank, const WeftCfg *cfg,
           GHashTable *ids, GError **error)
{
  WeftCfg *op, *v;
  Template t = { .first_chunk = f->chunk_pool->len,
                 .first_dep = f->dep_pool->len,
                 .line = cfg->line, .col = cfg->col };
  uint64_t n;

  if (!weft_cfg_expect_map (cfg, "a step", error)
      || !weft_cfg_check_keys (cfg, step_keys, error)
      || !(op = weft_cfg_require (cfg, "op", error))
      || !weft_cfg_expect_scalar (op, "op", error))
    return FALSE;
  if (strcmp (op->text, "send") == 0)
    t.kind = WEFT_STEP_SEND;
  else if (strcmp (op->text, "recv") == 0)
    t.kind = WEFT_STEP_RECV;
  else if (strcmp (op->text, "reduce") == 0)
    t.kind = WEFT_STEP_REDUCE;
  else
    return weft_cfg_error (error, op, "unknown step '%s'; valid: send, recv, "
                           "reduce", op->text);

  if (t.kind != WEFT_STEP_REDUCE)
    {
      if (!(v = weft_cfg_require (cfg, "peer", error))
          || !weft_cfg_uint (v, 0, f->n_ranks - 1, &n, error))
        return FALSE;
      if (n == rank)
        return weft_cfg_error (error, v, "rank %u cannot %s itself", rank,
                               op->text);
      t.peer = (uint32_t) n;
    }
  else if (weft_cfg_get (cfg, "peer"))
    return weft_cfg_error (error, weft_cfg_get_key (cfg, "peer"),
                           "a reduce step has no peer");
  if ((v = weft_cfg_get (cfg, "tag")))
    {
      if (!weft_cfg_uint (v, 0, G_MAXUINT16, &n, error))
        return FALSE;
      t.tag = (uint32_t) n;
    }

  WeftCfg *one = weft_cfg_get (cfg, "chunk"), *many = weft_cfg_get (cfg, "chunks");
  if ((one == NULL) == (many == NULL))
    return weft_cfg_error (error, cfg, "a step needs 'chunk' (one chunk) or "
                           "'chunks' (a list), not both or neither");
  if (one && !read_chunk (f, one, error))
    return FALSE;
  if (many)
    {
      if (!weft_cfg_expect_seq (many, "chunks", error))
        return FALSE;
      for (size_t i = 0; i < many->n; i++)
        if (!read_chunk (f, many->items[i], error))
          return FALSE;
    }
  t.n_chunks = f->chunk_pool->len - t.first_chunk;

  if ((v = weft_cfg_get (cfg, "after")))
    {
      if (!weft_cfg_expect_seq (v, "after", error))
        return FALSE;
      if (v->n > WEFT_STEP_MAX_DEPS)
        return weft_cfg_error (error, v, "a step waits for at most %d "
                               "steps, not %zu", WEFT_STEP_MAX_DEPS, v->n);
      for (size_t i = 0; i < v->n; i++)
        {
          if (!weft_cfg_expect_scalar (v->items[i], "a step id", error))
            return FALSE;
          gpointer at = g_hash_table_lookup (ids, v->items[i]->text);
          if (at == NULL)
            return weft_cfg_error (error, v->items[i], "no earlier step of "
                                   "rank %u has the id '%s'",
                                   rank, v->items[i]->text);
          uint32_t dep = GPOINTER_TO_UINT (at) - 1;
          g_array_append_val (f->dep_pool, dep);
        }
      t.n_deps = f->dep_pool->len - t.first_dep;
    }
  if ((v = weft_cfg_get (cfg, "id")))
    {
      if (!weft_cfg_expect_scalar (v, "id", error))
        return FALSE;
      if (g_hash_table_contains (ids, v->text))
        return weft_cfg_error (error, v, "rank %u has two steps with the id "
                               "'%s'", rank, v->text);
      g_hash_table_insert (ids, v->text,
                           GUINT_TO_POINTER (f->steps[rank]->len + 1));
    }
  g_array_append_val (f->steps[rank], t);
  return TRUE;
}

gboolean
weft_schedule_file_parametric (const WeftScheduleFile *f)
{
  return f->program != NULL;
}

/* A step of a program's expansion, into the file's lists. */
static void
take_step (void *data, uint32_t rank, const WeftProgramStep *step)
{
  WeftScheduleFile *f = data;
  Template t = { step->kind, step->peer, step->tag, f->chunk_pool->len,
                 step->n_chunks, f->dep_pool->len, step->n_deps, step->line,
                 step->col };

  g_array_append_vals (f->chunk_pool, step->chunks, step->n_chunks);
  g_array_append_vals (f->dep_pool, step->deps, step->n_deps);
  g_array_append_val (f->steps[rank], t);
}

/* The most steps a program expands into, over all ranks (each some 40
 * bytes, beside the schedule made of them). */
#define PROGRAM_STEPS (1u << 26)

gboolean
weft_schedule_file_expand (WeftScheduleFile *f, uint32_t n, GError **error)
{
  if (f->program == NULL)
    {
      if (n == f->n_ranks)
        return TRUE;
      g_set_error (error, WEFT_SCHEDULE_ERROR, WEFT_SCHEDULE_ERROR_INVALID,
                   "%s is written for %u ranks and the run has %u (choose "
                   "GPUs with --ranks)", f->path, f->n_ranks, n);
      return FALSE;
    }
  clear_steps (f);
  new_steps (f, n);
  if (weft_program_expand (f->program, n, PROGRAM_STEPS, &f->n_chunks,
                           take_step, f, error))
    return TRUE;
  clear_steps (f);
  f->n_ranks = 0;
  return FALSE;
}

gboolean
weft_schedule_verify_regions (const WeftSchedule *s, WeftOp op,
                              uint64_t size, const char *name, GError **error)
{
  g_autoptr (WeftScheduleFile) f = g_new0 (WeftScheduleFile, 1);

  g_return_val_if_fail (s->offsets != NULL, FALSE);
  g_return_val_if_fail (size > 0 && size <= WEFT_CHECK_CHUNKS, FALSE);
  f->path = g_strdup (name);
  f->name = g_strdup (name);
  f->op = op;
  f->has_op = TRUE;
  new_steps (f, s->n_ranks);
  f->switches = s->n_ranks - s->n_gpus;
  f->out_of_place = op == WEFT_OP_ALL_TO_ALL || op == WEFT_OP_SEND_RECV;
  f->n_chunks = (uint32_t) (f->out_of_place ? 2 * size : size);
  for (uint32_t r = 0; r < s->n_ranks; r++)
    for (uint32_t i = 0; i < s->n_steps[r]; i++)
      {
        const WeftStep *st = weft_schedule_step (s, r, i);
        uint64_t at = i < s->offsets_cap[r] ? s->offsets[r][i] : UINT64_MAX;
        /* Its places: one, or a list. */
        uint64_t one[2] = { at, st->bytes }, count = 1, total = 0;
        const uint64_t *places = one;
        if (at != UINT64_MAX && (at & WEFT_REGION_LIST))
          {
            const uint64_t *list = &g_array_index (
                s->region_lists, uint64_t, at & ~WEFT_REGION_LIST);
            count = list[0];
            places = list + 1;
          }
        for (uint64_t k = 0; k < count; k++)
          total += places[2 * k + 1];
        gboolean inside = at != UINT64_MAX && total == st->bytes;
        for (uint64_t k = 0; inside && k < count; k++)
          inside = places[2 * k] + places[2 * k + 1] <= f->n_chunks;
        if (st->bytes > 0 && !inside)
          {
            g_set_error (error, WEFT_SCHEDULE_ERROR,
                         WEFT_SCHEDULE_ERROR_INVALID, "%s: rank %u step %u "
                         "(%" G_GUINT64_FORMAT " bytes) says no region of "
                         "the %" G_GUINT64_FORMAT "-byte buffer", name, r, i,
                         st->bytes, size);
            return FALSE;
          }
        Template t = { st->kind, st->peer, st->tag, f->chunk_pool->len,
                       (uint32_t) st->bytes, f->dep_pool->len, st->n_deps, 0,
                       0 };
        for (uint64_t k = 0; st->bytes > 0 && k < count; k++)
          for (uint64_t b = 0; b < places[2 * k + 1]; b++)
            {
              uint32_t c = (uint32_t) (places[2 * k] + b);
              g_array_append_val (f->chunk_pool, c);
            }
        for (uint32_t d = 0; d < st->n_deps; d++)
          {
            uint32_t dep = weft_schedule_dep (s, st, d);
            g_array_append_val (f->dep_pool, dep);
          }
        g_array_append_val (f->steps[r], t);
      }
  return weft_schedule_file_verify (f, error);
}

/* An MSCCL XML file, in a WeftScheduleFile. */
static WeftScheduleFile *
load_msccl (const char *path, GError **error)
{
  WeftMsccl *m = weft_msccl_load (path, error);
  WeftScheduleFile *f;

  if (m == NULL)
    return NULL;
  f = g_new0 (WeftScheduleFile, 1);
  f->msccl = m;
  f->path = g_strdup (path);
  f->name = g_strdup (weft_msccl_name (m));
  f->n_ranks = weft_msccl_ranks (m);
  f->has_op = weft_msccl_op (m, &f->op);
  return f;
}

WeftScheduleFile *
weft_schedule_file_load (const char *path, GError **error)
{
  g_autoptr (WeftCfg) root = NULL;
  g_autoptr (WeftScheduleFile) f = NULL;
  WeftCfg *v, *program;
  uint64_t n;

  if (g_str_has_suffix (path, ".xml") || g_str_has_suffix (path, ".XML"))
    return load_msccl (path, error);
  root = weft_cfg_load_file (path, error);
  if (root == NULL)
    return NULL;
  if (!weft_cfg_expect_map (root, "a schedule file", error))
    return NULL;
  if (!(v = weft_cfg_require (root, "weft_schedule", error))
      || !weft_cfg_expect_scalar (v, "weft_schedule", error))
    return NULL;
  gboolean parametric = strcmp (v->text, "2") == 0;
  if (strcmp (v->text, "1") != 0 && !parametric)
    {
      weft_cfg_error (error, v, "schedule format version '%s' is not one "
                      "this weft reads; it reads 1 (steps for a number of "
                      "ranks) and 2 (a program for any number)", v->text);
      return NULL;
    }
  if (!weft_cfg_check_keys (root, parametric ? program_keys : file_keys,
                            error))
    return NULL;

  f = g_new0 (WeftScheduleFile, 1);
  f->path = g_strdup (path);
  if (!(v = weft_cfg_require (root, "op", error))
      || !weft_cfg_expect_scalar (v, "op", error))
    return NULL;
  f->has_op = TRUE;
  if (!weft_op_parse (v->text, &f->op))
    {
      weft_cfg_error (error, v, "unknown operation '%s'; valid: %s", v->text,
                      weft_op_names ());
      return NULL;
    }
  v = weft_cfg_get (root, "name");
  f->name = g_strdup (v && v->kind == WEFT_CFG_SCALAR ? v->text : path);
  if (parametric)
    {
      f->program = weft_program_load (root, error);
      return f->program ? g_steal_pointer (&f) : NULL;
    }
  if (!(v = weft_cfg_require (root, "ranks", error))
      || !weft_cfg_uint (v, 1, 1 << 20, &n, error))
    return NULL;
  uint32_t ranks = (uint32_t) n;
  if (!(v = weft_cfg_require (root, "chunks", error))
      || !weft_cfg_uint (v, 1, 1 << 24, &n, error))
    return NULL;
  f->n_chunks = (uint32_t) n;
  new_steps (f, ranks);
  if (!(program = weft_cfg_require (root, "program", error))
      || !weft_cfg_expect_map (program, "program (rank: list of steps)", error))
    return NULL;
  for (size_t i = 0; i < program->n; i++)
    {
      guint64 rank;
      WeftCfg *key = program->keys[i], *list = program->items[i];
      if (!g_ascii_string_to_unsigned (key->text, 10, 0, f->n_ranks - 1, &rank,
                                       NULL))
        {
          weft_cfg_error (error, key, "'%s' is not a rank; ranks are 0 to %u",
                          key->text, f->n_ranks - 1);
          return NULL;
        }
      if (!weft_cfg_expect_seq (list, "a rank's steps", error))
        return NULL;
      g_autoptr (GHashTable) ids = g_hash_table_new (g_str_hash, g_str_equal);
      for (size_t k = 0; k < list->n; k++)
        if (!read_step (f, (uint32_t) rank, list->items[k], ids, error))
          return NULL;
    }
  return g_steal_pointer (&f);
}

WeftSchedule *
weft_schedule_file_build (const WeftScheduleFile *f, uint64_t size,
                          GError **error)
{
  g_autoptr (WeftSchedule) s = NULL;
  g_autoptr (GError) cause = NULL;

  if (f->msccl != NULL)
    return weft_msccl_build (f->msccl, size, error);
  g_return_val_if_fail (f->n_ranks > 0, NULL);
  s = weft_schedule_new (f->n_ranks);
  for (uint32_t r = 0; r < f->n_ranks; r++)
    for (guint i = 0; i < f->steps[r]->len; i++)
      {
        const Template *t = &g_array_index (f->steps[r], Template, i);
        uint64_t bytes = 0;
        for (uint32_t c = 0; c < t->n_chunks; c++)
          bytes += weft_part (size, f->n_chunks,
                              g_array_index (f->chunk_pool, uint32_t,
                                             t->first_chunk + c));
        weft_schedule_add (s, r, t->kind, t->peer, t->tag, bytes,
                           t->n_deps ? &g_array_index (f->dep_pool, uint32_t,
                                                       t->first_dep)
                                     : NULL,
                           t->n_deps);
      }
  if (!weft_schedule_check (s, &cause))
    {
      g_set_error (error, WEFT_SCHEDULE_ERROR, WEFT_SCHEDULE_ERROR_INVALID, "%s: %s", f->path,
                   cause->message);
      return NULL;
    }
  return g_steal_pointer (&s);
}

/* ---- what the schedule computes ---- */

/* What a chunk of a rank's buffer holds: a rank's contribution is its
 * signature (for all_to_all and send_recv, each rank's for each
 * destination), so that a contribution missing or counted twice shows. */
typedef WeftHeld Value;

static Value
one_of (uint64_t who)
{
  return (Value) { weft_signature (who), 1, TRUE };
}

/* Chunk @c's block: chunks are the buffer's blocks, n of them, in order,
 * as even as whole chunks allow (weft_part(): the first ones a chunk
 * larger). */
static uint32_t
block_of (const WeftScheduleFile *f, uint32_t c)
{
  uint32_t gpus = f->n_ranks - f->switches;
  uint32_t chunks = f->out_of_place ? f->n_chunks / 2 : f->n_chunks;
  uint32_t q = chunks / gpus, rem = chunks % gpus;

  if (f->out_of_place && c >= chunks)
    c -= chunks;

  if (c < rem * (q + 1))
    return c / (q + 1);
  return rem + (c - rem * (q + 1)) / q;
}

/* Whether @op's chunks must come in blocks, one a rank. */
static gboolean
blocked (WeftOp op)
{
  return op == WEFT_OP_ALL_GATHER || op == WEFT_OP_REDUCE_SCATTER
         || op == WEFT_OP_ALL_TO_ALL;
}

/* What rank @r's chunk @c holds before the operation (@start) or must hold
 * after it (a Value not held: anything); @all is every rank's contribution
 * added up. */
static Value
value_at (const WeftScheduleFile *f, uint32_t r, uint32_t c, gboolean start,
          Value all)
{
  uint32_t n = f->n_ranks - f->switches;
  uint32_t b = blocked (f->op) ? block_of (f, c) : 0;

  /* A switch starts with a sum of nothing, and may end with anything. */
  if (r >= n)
    return start ? (Value) { 0, 0, TRUE } : (Value) { 0 };
  /* Out of place: the input starts as the operation's input and may end
   * as anything; the output starts empty and ends as its output, but for
   * a rank's own block of an all_to_all, a copy inside the GPU that the
   * schedules leave out. */
  if (f->out_of_place && (c < f->n_chunks / 2) != start)
    return (Value) { 0 };
  if (f->out_of_place && !start && f->op == WEFT_OP_ALL_TO_ALL && b == r)
    return (Value) { 0 };
  switch (f->op)
    {
    case WEFT_OP_ALL_REDUCE:
      return start ? one_of (r) : all;
    case WEFT_OP_REDUCE:
      return start ? one_of (r) : r == 0 ? all : (Value) { 0 };
    case WEFT_OP_REDUCE_SCATTER:
      return start ? one_of (r) : b == r ? all : (Value) { 0 };
    case WEFT_OP_ALL_GATHER:
      return start && b != r ? (Value) { 0 } : one_of (b);
    case WEFT_OP_BROADCAST:
      return start && r != 0 ? (Value) { 0 } : one_of (0);
    case WEFT_OP_ALL_TO_ALL:
      /* Block b of rank r is for rank b; after, it is rank b's for r. */
      return start ? one_of ((uint64_t) r * n + b)
                   : one_of ((uint64_t) b * n + r);
    case WEFT_OP_SEND_RECV:
      return one_of (start ? r : (r + n - 1) % n);
    default:
      g_assert_not_reached ();
    }
}

static const char *
what_of (const WeftScheduleFile *f)
{
  switch (f->op)
    {
    case WEFT_OP_ALL_REDUCE:
    case WEFT_OP_REDUCE:
    case WEFT_OP_REDUCE_SCATTER:
      return "the sum of every rank's";
    default:
      return "what the operation delivers there";
    }
}

/* The check's state. */
typedef struct {
  const WeftScheduleFile *f;
  const WeftSchedule *s;
  Value **buffer;               /* per rank, per chunk */
  uint32_t **wrote;             /* per rank, per chunk: the last step that
                                   wrote it, or WEFT_NO_STEP */
  Value ***message;             /* per rank, per step: what a send carried
                                   (its chunks' values), for its receive */
  gboolean **reduced;           /* per rank, per step: a receive a reduce
                                   adds in, not copied into the buffer */
  Value *adding;                /* per chunk: what the reduce in hand adds
                                   to it, where... */
  uint64_t *adding_stamp;       /* ...this is its stamp */
  uint64_t stamp;
} Check;

static const Template *
template_of (const WeftScheduleFile *f, uint32_t r, uint32_t i)
{
  return &g_array_index (f->steps[r], Template, i);
}

static uint32_t
chunk_of (const WeftScheduleFile *f, const Template *t, uint32_t k)
{
  return g_array_index (f->chunk_pool, uint32_t, t->first_chunk + k);
}

static uint32_t
dep_of (const WeftScheduleFile *f, const Template *t, uint32_t d)
{
  return g_array_index (f->dep_pool, uint32_t, t->first_dep + d);
}

/* "path:line:col: rank R step I" and @format. */
G_GNUC_PRINTF (5, 6) static gboolean
step_error (GError **error, const WeftScheduleFile *f, uint32_t r,
            uint32_t i, const char *format, ...)
{
  const Template *t = template_of (f, r, i);
  va_list ap;

  va_start (ap, format);
  g_autofree char *message = g_strdup_vprintf (format, ap);
  va_end (ap);
  g_set_error (error, WEFT_SCHEDULE_ERROR, WEFT_SCHEDULE_ERROR_INVALID,
               "%s:%d:%d: rank %u step %u %s", f->path, t->line, t->col, r, i,
               message);
  return FALSE;
}

/* Whether step @t of rank @r writes its chunks into the buffer. */
static gboolean
writes (const Check *x, uint32_t r, uint32_t i)
{
  const Template *t = template_of (x->f, r, i);

  return t->kind == WEFT_STEP_REDUCE
         || (t->kind == WEFT_STEP_RECV && !x->reduced[r][i]);
}

/* Steps of all ranks at most for which races are looked for (the check
 * keeps which steps come before each, a bit a pair). */
#define RACE_STEPS 16384

/* Rank @r's steps that touch a chunk, one writing it, must come one before
 * the other, by its dependencies or through other ranks' (a receive comes
 * after its send): else what is sent, or what stays, depends on timing.
 * @before holds, for each step (numbered from @first), the steps that come
 * before it, @words words a step. */
static gboolean
check_races (const Check *x, uint32_t r, const uint64_t *before,
             const uint32_t *first, uint32_t words, GError **error)
{
  const WeftScheduleFile *f = x->f;
  uint32_t n = f->steps[r]->len, base = first[r];
  /* Per chunk, the last writer and the senders since it: a writer must
   * come after both, a sender after the writer. */
  g_autofree uint32_t *last_write = g_new (uint32_t, f->n_chunks);
  g_autofree GArray **readers = g_new0 (GArray *, f->n_chunks);
  gboolean ok = TRUE;

  for (uint32_t c = 0; c < f->n_chunks; c++)
    {
      last_write[c] = WEFT_NO_STEP;
      readers[c] = g_array_new (FALSE, FALSE, sizeof (uint32_t));
    }
  for (uint32_t i = 0; i < n && ok; i++)
    {
      const Template *t = template_of (f, r, i);
      const uint64_t *mine = &before[(size_t) (base + i) * words];
      gboolean w = writes (x, r, i);
      gboolean reads = t->kind != WEFT_STEP_RECV;
      for (uint32_t k = 0; k < t->n_chunks && ok; k++)
        {
          uint32_t c = chunk_of (f, t, k), other = WEFT_NO_STEP;
          uint32_t lw = last_write[c];
          if ((w || reads) && lw != WEFT_NO_STEP
              && !(mine[(base + lw) / 64] >> ((base + lw) % 64) & 1))
            other = lw;
          for (guint e = 0; w && other == WEFT_NO_STEP && e < readers[c]->len;
               e++)
            {
              uint32_t q = g_array_index (readers[c], uint32_t, e);
              if (q != i && !(mine[(base + q) / 64] >> ((base + q) % 64) & 1))
                other = q;
            }
          if (other != WEFT_NO_STEP)
            ok = step_error (error, f, r, i, "and step %u both touch chunk "
                             "%u, one writing it, and neither comes before "
                             "the other: what it holds depends on which "
                             "runs first (add 'after')", other, c);
          if (w)
            {
              last_write[c] = i;
              g_array_set_size (readers[c], 0);
            }
          if (t->kind == WEFT_STEP_SEND)
            g_array_append_val (readers[c], i);
        }
    }
  for (uint32_t c = 0; c < f->n_chunks; c++)
    g_array_unref (readers[c]);
  return ok;
}

/* Step @i of rank @r, now that what it waits for is done. */
static gboolean
apply (Check *x, uint32_t r, uint32_t i, GError **error)
{
  const WeftScheduleFile *f = x->f;
  const Template *t = template_of (f, r, i);
  Value *buf = x->buffer[r];

  switch (t->kind)
    {
    case WEFT_STEP_SEND:
      {
        Value *m = g_new (Value, MAX (t->n_chunks, 1));
        for (uint32_t k = 0; k < t->n_chunks; k++)
          {
            uint32_t c = chunk_of (f, t, k);
            if (!buf[c].held)
              {
                g_free (m);
                return step_error (error, f, r, i, "sends chunk %u, which "
                                   "the rank does not hold yet", c);
              }
            m[k] = buf[c];
          }
        x->message[r][i] = m;
        return TRUE;
      }
    case WEFT_STEP_RECV:
      {
        uint32_t j = weft_schedule_matches (x->s, r)[i];
        const Template *sent = template_of (f, t->peer, j);
        Value *m = g_steal_pointer (&x->message[t->peer][j]);
        if (sent->n_chunks != t->n_chunks)
          {
            g_free (m);
            return step_error (error, f, r, i, "receives %u chunks where "
                               "rank %u step %u sends %u", t->n_chunks,
                               t->peer, j, sent->n_chunks);
          }
        if (x->reduced[r][i])
          {
            x->message[r][i] = m;       /* for the reduce that adds it in */
            return TRUE;
          }
        for (uint32_t k = 0; k < t->n_chunks; k++)
          {
            uint32_t c = chunk_of (f, t, k);
            buf[c] = m[k];
            x->wrote[r][c] = i;
          }
        g_free (m);
        return TRUE;
      }
    case WEFT_STEP_REDUCE:
      /* What the receives it adds in bring, chunk by chunk. */
      x->stamp++;
      for (uint32_t d = 0; d < t->n_deps; d++)
        {
          uint32_t on = dep_of (f, t, d);
          const Template *from = template_of (f, r, on);
          if (!x->reduced[r][on])
            continue;
          for (uint32_t e = 0; e < from->n_chunks; e++)
            {
              uint32_t c = chunk_of (f, from, e);
              const Value *v = &x->message[r][on][e];
              if (x->adding_stamp[c] != x->stamp)
                {
                  x->adding_stamp[c] = x->stamp;
                  x->adding[c] = (Value) { 0, 0, TRUE };
                }
              x->adding[c].sum += v->sum;
              x->adding[c].count += v->count;
            }
        }
      for (uint32_t k = 0; k < t->n_chunks; k++)
        {
          uint32_t c = chunk_of (f, t, k);
          if (!buf[c].held)
            return step_error (error, f, r, i, "reduces into chunk %u, "
                               "which the rank does not hold", c);
          if (x->adding_stamp[c] != x->stamp)
            return step_error (error, f, r, i, "reduces chunk %u, but no "
                               "receive it waits for brings chunk %u", c, c);
          buf[c].sum += x->adding[c].sum;
          buf[c].count += x->adding[c].count;
          x->wrote[r][c] = i;
        }
      return TRUE;
    }
  return TRUE;
}

gboolean
weft_schedule_file_verify (const WeftScheduleFile *f, GError **error)
{
  uint32_t n = f->n_ranks;

  g_return_val_if_fail (f->has_op, FALSE);
  g_return_val_if_fail (f->msccl != NULL || f->n_ranks > 0, FALSE);
  if (f->msccl != NULL)
    return weft_msccl_verify (f->msccl, f->op, error);
  if ((uint64_t) n * f->n_chunks > WEFT_CHECK_CHUNKS)
    {
      g_set_error (error, WEFT_SCHEDULE_ERROR, WEFT_SCHEDULE_ERROR_INVALID,
                   "%s: the check would follow %" G_GUINT64_FORMAT " chunks "
                   "(%u ranks' %u); it follows at most %u (run with "
                   "--no-data-check to skip it)", f->path,
                   (uint64_t) n * f->n_chunks, n, f->n_chunks,
                   WEFT_CHECK_CHUNKS);
      return FALSE;
    }
  /* The pairs, from the schedule of one byte a chunk. */
  g_autoptr (WeftSchedule) s = weft_schedule_file_build (f, f->n_chunks,
                                                         error);
  if (s == NULL)
    return FALSE;
  Check x = { f, s, g_new (Value *, n), g_new (uint32_t *, n),
              g_new (Value **, n), g_new (gboolean *, n),
              g_new (Value, MAX (f->n_chunks, 1)),
              g_new0 (uint64_t, MAX (f->n_chunks, 1)), 0 };
  g_autofree uint32_t *remaining = NULL;
  g_autoptr (GArray) ready = g_array_new (FALSE, FALSE, sizeof (uint64_t));
  g_autofree uint32_t *first = g_new (uint32_t, n + 1);
  /* The chunks of the reduce in hand, by the reduce's stamp. */
  g_autofree uint64_t *mark = g_new0 (uint64_t, MAX (f->n_chunks, 1));
  uint64_t stamp = 0;
  gboolean ok = TRUE;

  Value all = { 0, n - f->switches, TRUE };
  for (uint32_t q = 0; q < n - f->switches; q++)
    all.sum += weft_signature (q);
  first[0] = 0;
  for (uint32_t r = 0; r < n; r++)
    {
      uint32_t steps = f->steps[r]->len;
      first[r + 1] = first[r] + steps;
      x.buffer[r] = g_new (Value, f->n_chunks);
      x.wrote[r] = g_new (uint32_t, f->n_chunks);
      for (uint32_t c = 0; c < f->n_chunks; c++)
        {
          x.buffer[r][c] = value_at (f, r, c, TRUE, all);
          x.wrote[r][c] = WEFT_NO_STEP;
        }
      x.message[r] = g_new0 (Value *, MAX (steps, 1));
      x.reduced[r] = g_new0 (gboolean, MAX (steps, 1));
      /* A receive is added in by a reduce that waits for it directly and
       * names one of its chunks; else it is copied into the buffer. */
      for (uint32_t i = 0; i < steps; i++)
        {
          const Template *t = template_of (f, r, i);
          if (t->kind != WEFT_STEP_REDUCE)
            continue;
          stamp++;
          for (uint32_t b = 0; b < t->n_chunks; b++)
            mark[chunk_of (f, t, b)] = stamp;
          for (uint32_t d = 0; d < t->n_deps; d++)
            {
              uint32_t on = dep_of (f, t, d);
              const Template *from = template_of (f, r, on);
              for (uint32_t a = 0; from->kind == WEFT_STEP_RECV
                                   && a < from->n_chunks; a++)
                x.reduced[r][on] |= mark[chunk_of (f, from, a)] == stamp;
            }
        }
    }
  /* The steps in an order their dependencies and pairs allow: with no
   * race, any such order gives the same buffers. */
  remaining = g_new (uint32_t, MAX (first[n], 1));
  for (uint32_t r = 0; r < n; r++)
    for (uint32_t i = 0; i < f->steps[r]->len; i++)
      {
        const Template *t = template_of (f, r, i);
        /* A receive waits for its send too. */
        remaining[first[r] + i] = t->n_deps + (t->kind == WEFT_STEP_RECV);
        if (remaining[first[r] + i] == 0)
          {
            uint64_t key = (uint64_t) r << 32 | i;
            g_array_append_val (ready, key);
          }
      }
  /* The steps that wait for each (its rank's), in one list: those of
   * step k from after[k] to after[k + 1]. */
  g_autofree uint32_t *after = g_new0 (uint32_t, first[n] + 1);
  g_autofree uint32_t *dependents = NULL;
  for (uint32_t r = 0; r < n; r++)
    for (uint32_t i = 0; i < f->steps[r]->len; i++)
      {
        const Template *t = template_of (f, r, i);
        for (uint32_t d = 0; d < t->n_deps; d++)
          after[first[r] + dep_of (f, t, d) + 1]++;
      }
  for (uint32_t k = 0; k < first[n]; k++)
    after[k + 1] += after[k];
  dependents = g_new (uint32_t, MAX (after[first[n]], 1));
  {
    g_autofree uint32_t *filled = g_new0 (uint32_t, MAX (first[n], 1));
    for (uint32_t r = 0; r < n; r++)
      for (uint32_t i = 0; i < f->steps[r]->len; i++)
        {
          const Template *t = template_of (f, r, i);
          for (uint32_t d = 0; d < t->n_deps; d++)
            {
              uint32_t at = first[r] + dep_of (f, t, d);
              dependents[after[at] + filled[at]++] = i;
            }
        }
  }
  /* Which steps come before each, where there are few enough. */
  uint32_t total = first[n], words = (total + 63) / 64;
  g_autofree uint64_t *before = total <= RACE_STEPS
                                    ? g_new0 (uint64_t, (size_t) total * words)
                                    : NULL;
  for (guint k = 0; ok && k < ready->len; k++)
    {
      uint64_t key = g_array_index (ready, uint64_t, k);
      uint32_t r = (uint32_t) (key >> 32), i = (uint32_t) key;
      const Template *t = template_of (f, r, i);
      if (before != NULL)
        {
          /* Its dependencies and, for a receive, its send, are done. */
          uint64_t *mine = &before[(size_t) (first[r] + i) * words];
          for (uint32_t d = 0; d <= t->n_deps; d++)
            {
              uint32_t on;
              if (d < t->n_deps)
                on = first[r] + dep_of (f, t, d);
              else if (t->kind == WEFT_STEP_RECV)
                on = first[t->peer] + weft_schedule_matches (s, r)[i];
              else
                break;
              const uint64_t *theirs = &before[(size_t) on * words];
              for (uint32_t w = 0; w < words; w++)
                mine[w] |= theirs[w];
              mine[on / 64] |= (uint64_t) 1 << (on % 64);
            }
        }
      ok = apply (&x, r, i, error);
      for (uint32_t e = after[first[r] + i]; ok && e < after[first[r] + i + 1];
           e++)
        {
          uint32_t j = dependents[e];
          if (--remaining[first[r] + j] == 0)
            {
              uint64_t next = (uint64_t) r << 32 | j;
              g_array_append_val (ready, next);
            }
        }
      if (ok && t->kind == WEFT_STEP_SEND)
        {
          uint32_t j = weft_schedule_matches (s, r)[i];
          if (--remaining[first[t->peer] + j] == 0)
            {
              uint64_t next = (uint64_t) t->peer << 32 | j;
              g_array_append_val (ready, next);
            }
        }
    }
  for (uint32_t r = 0; r < n && ok && before != NULL; r++)
    ok = check_races (&x, r, before, first, words, error);
  /* What every rank ends with, against what it must. */
  for (uint32_t r = 0; r < n && ok; r++)
    for (uint32_t c = 0; c < f->n_chunks && ok; c++)
      {
        Value want = value_at (f, r, c, FALSE, all), got = x.buffer[r][c];
        if (!want.held || (got.held && got.sum == want.sum
                           && got.count == want.count))
          continue;
        g_autofree char *holds
            = !got.held ? g_strdup ("nothing")
              : g_strdup_printf ("%u contribution%s%s", got.count,
                                 got.count == 1 ? "" : "s",
                                 got.count == want.count ? " (not each one "
                                                           "once)"
                                                         : "");
        uint32_t last = x.wrote[r][c];
        if (last == WEFT_NO_STEP)
          {
            g_set_error (error, WEFT_SCHEDULE_ERROR,
                         WEFT_SCHEDULE_ERROR_INVALID,
                         "%s: rank %u ends with chunk %u holding %s, not %s "
                         "(%u contribution%s), and no step writes it",
                         f->path, r, c, holds, what_of (f), want.count,
                         want.count == 1 ? "" : "s");
            ok = FALSE;
          }
        else
          ok = step_error (error, f, r, last, "is the last to write chunk "
                           "%u, which the rank ends with holding %s, not %s "
                           "(%u contribution%s)", c, holds, what_of (f),
                           want.count, want.count == 1 ? "" : "s");
      }
  for (uint32_t r = 0; r < n; r++)
    {
      for (uint32_t i = 0; i < f->steps[r]->len; i++)
        g_free (x.message[r][i]);
      g_free (x.message[r]);
      g_free (x.reduced[r]);
      g_free (x.buffer[r]);
      g_free (x.wrote[r]);
    }
  g_free (x.message);
  g_free (x.reduced);
  g_free (x.adding);
  g_free (x.adding_stamp);
  g_free (x.buffer);
  g_free (x.wrote);
  return ok;
}
