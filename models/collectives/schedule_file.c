/* weft: collective algorithms written as data. */
#include "collectives/schedule_file.h"

#include <string.h>

#include "collectives/collective-private.h"
#include "config.h"

typedef struct {
  WeftStepKind kind;
  uint32_t peer, tag;
  uint32_t first_chunk, n_chunks;       /* into chunk_pool */
  uint32_t first_dep, n_deps;           /* into dep_pool */
} Template;

struct _WeftScheduleFile {
  char *path;
  char *name;
  WeftOp op;
  uint32_t n_ranks;
  uint32_t n_chunks;
  GArray **steps;               /* per rank: Template */
  GArray *chunk_pool;           /* uint32_t */
  GArray *dep_pool;             /* uint32_t */
};

void
weft_schedule_file_free (WeftScheduleFile *f)
{
  if (f == NULL)
    return;
  for (uint32_t r = 0; f->steps && r < f->n_ranks; r++)
    g_array_unref (f->steps[r]);
  g_free (f->steps);
  if (f->chunk_pool)
    g_array_unref (f->chunk_pool);
  if (f->dep_pool)
    g_array_unref (f->dep_pool);
  g_free (f->path);
  g_free (f->name);
  g_free (f);
}

WeftOp
weft_schedule_file_op (const WeftScheduleFile *f)
{
  return f->op;
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
                 .first_dep = f->dep_pool->len };
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

WeftScheduleFile *
weft_schedule_file_load (const char *path, GError **error)
{
  g_autoptr (WeftCfg) root = weft_cfg_load_file (path, error);
  g_autoptr (WeftScheduleFile) f = NULL;
  WeftCfg *v, *program;
  uint64_t n;

  if (root == NULL)
    return NULL;
  if (!weft_cfg_expect_map (root, "a schedule file", error)
      || !weft_cfg_check_keys (root, file_keys, error))
    return NULL;
  if (!(v = weft_cfg_require (root, "weft_schedule", error))
      || !weft_cfg_expect_scalar (v, "weft_schedule", error))
    return NULL;
  if (strcmp (v->text, "1") != 0)
    {
      weft_cfg_error (error, v, "schedule format version '%s' is not one "
                      "this weft reads; it reads version 1", v->text);
      return NULL;
    }

  f = g_new0 (WeftScheduleFile, 1);
  f->path = g_strdup (path);
  f->chunk_pool = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  f->dep_pool = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  if (!(v = weft_cfg_require (root, "op", error))
      || !weft_cfg_expect_scalar (v, "op", error))
    return NULL;
  if (!weft_op_parse (v->text, &f->op))
    {
      weft_cfg_error (error, v, "unknown operation '%s'; valid: %s", v->text,
                      weft_op_names ());
      return NULL;
    }
  v = weft_cfg_get (root, "name");
  f->name = g_strdup (v && v->kind == WEFT_CFG_SCALAR ? v->text : path);
  if (!(v = weft_cfg_require (root, "ranks", error))
      || !weft_cfg_uint (v, 1, 1 << 20, &n, error))
    return NULL;
  f->n_ranks = (uint32_t) n;
  if (!(v = weft_cfg_require (root, "chunks", error))
      || !weft_cfg_uint (v, 1, 1 << 24, &n, error))
    return NULL;
  f->n_chunks = (uint32_t) n;

  f->steps = g_new (GArray *, f->n_ranks);
  for (uint32_t r = 0; r < f->n_ranks; r++)
    f->steps[r] = g_array_new (FALSE, FALSE, sizeof (Template));
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
  g_autoptr (WeftSchedule) s = weft_schedule_new (f->n_ranks);
  g_autoptr (GError) cause = NULL;

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
                           &g_array_index (f->dep_pool, uint32_t, t->first_dep),
                           t->n_deps);
      }
  if (!weft_schedule_check (s, &cause))
    {
      g_set_error (error, WEFT_SCHEDULE_ERROR, WEFT_SCHEDULE_ERROR_INVALID, "%s: %s", f->path,
                   cause->message);
      return NULL;
    }
  uint64_t moved = weft_schedule_bytes_sent (s);
  uint64_t expected = weft_op_bytes (f->op, f->n_ranks, size);
  if (moved != expected)
    {
      g_set_error (error, WEFT_SCHEDULE_ERROR, WEFT_SCHEDULE_ERROR_INVALID,
                   "%s: the schedule moves %" G_GUINT64_FORMAT " bytes for a "
                   "%s of %" G_GUINT64_FORMAT " bytes over %u ranks, which "
                   "moves %" G_GUINT64_FORMAT,
                   f->path, moved, weft_op_name (f->op), size, f->n_ranks,
                   expected);
      return NULL;
    }
  return g_steal_pointer (&s);
}
