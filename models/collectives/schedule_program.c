/* weft: a schedule file's program for any number of ranks. */
#include "collectives/schedule_program.h"

#include <string.h>

#include "collectives/expr.h"

/* Loops around a step, at most. */
#define MAX_DEPTH 8

typedef enum { ITEM_STEP, ITEM_LOOP, ITEM_GROUP } ItemKind;

typedef struct _Item Item;

/* A step waited for: a step's id and the indices of the loops around it
 * that are given (the innermost ones; the others are the waiting step's). */
typedef struct {
  char *name;
  int decl;
  uint32_t n_idx;
  WeftExpr *idx[MAX_DEPTH];
  int line, col;
} Ref;

struct _Item {
  ItemKind kind;
  int line, col;
  WeftExpr *when;               /* or NULL */
  /* a loop: its name's slot, its range (both ends in), what it repeats;
   * a group: what it holds */
  uint32_t slot;
  char *var;
  WeftExpr *from, *to;
  GPtrArray *items;             /* Item */
  /* a step */
  WeftStepKind op;
  WeftExpr *peer, *tag;         /* or NULL */
  GPtrArray *chunks;            /* WeftExpr: chunks one by one, or */
  WeftExpr *first, *count;      /* ...consecutive ones */
  int decl;                     /* its id's, or -1 */
  GArray *refs;                 /* Ref */
  uint32_t depth;               /* loops around it */
  const Item *loops[MAX_DEPTH]; /* ...outermost first */
};

typedef struct {
  char *name;
  const Item *step;
} Decl;

struct _WeftProgram {
  char *path;
  GPtrArray *names;             /* char: r, n, then the lets' */
  GPtrArray *lets;              /* WeftExpr, for names[2...] */
  GPtrArray *requires;          /* WeftExpr */
  GArray *requires_at;          /* int pairs: line, col */
  WeftExpr *chunks;
  int chunks_line, chunks_col;
  GPtrArray *items;             /* Item: the program */
  GArray *decls;                /* Decl */
};

static void
item_free (gpointer data)
{
  Item *it = data;

  weft_expr_free (it->when);
  g_free (it->var);
  weft_expr_free (it->from);
  weft_expr_free (it->to);
  weft_expr_free (it->peer);
  weft_expr_free (it->tag);
  weft_expr_free (it->first);
  weft_expr_free (it->count);
  if (it->items)
    g_ptr_array_unref (it->items);
  if (it->chunks)
    g_ptr_array_unref (it->chunks);
  for (guint i = 0; it->refs && i < it->refs->len; i++)
    {
      Ref *ref = &g_array_index (it->refs, Ref, i);
      g_free (ref->name);
      for (uint32_t k = 0; k < ref->n_idx; k++)
        weft_expr_free (ref->idx[k]);
    }
  if (it->refs)
    g_array_unref (it->refs);
  g_free (it);
}

void
weft_program_free (WeftProgram *p)
{
  if (p == NULL)
    return;
  g_free (p->path);
  g_ptr_array_unref (p->names);
  g_ptr_array_unref (p->lets);
  g_ptr_array_unref (p->requires);
  g_array_unref (p->requires_at);
  weft_expr_free (p->chunks);
  g_ptr_array_unref (p->items);
  for (guint i = 0; i < p->decls->len; i++)
    g_free (g_array_index (p->decls, Decl, i).name);
  g_array_unref (p->decls);
  g_free (p);
}

/* ---- reading ---- */

/* The names an expression may use where it is: the program's, then the
 * loops' around it. */
typedef struct {
  const char *names[64 + MAX_DEPTH];
  guint n;
} Scope;

static gboolean
is_name (const char *text)
{
  if (!g_ascii_isalpha (text[0]) && text[0] != '_')
    return FALSE;
  for (const char *c = text; *c; c++)
    if (!g_ascii_isalnum (*c) && *c != '_')
      return FALSE;
  return TRUE;
}

/* @text (a part of @cfg's scalar from @offset on) as an expression. */
static WeftExpr *
expr_of_text (const WeftCfg *cfg, const char *text, guint offset,
              const Scope *scope, GError **error)
{
  guint at = 0;
  g_autofree char *message = NULL;
  WeftExpr *e = weft_expr_parse (text, scope->names, scope->n, &at, &message);

  if (e == NULL)
    g_set_error (error, WEFT_SCHEDULE_ERROR, WEFT_SCHEDULE_ERROR_INVALID,
                 "%s:%d:%d: in '%s': %s", cfg->file, cfg->line,
                 cfg->col + (int) (offset + at) + (cfg->plain ? 0 : 1), text,
                 message);
  return e;
}

static WeftExpr *
expr_of (const WeftCfg *cfg, const char *what, const Scope *scope,
         GError **error)
{
  if (!weft_cfg_expect_scalar (cfg, what, error))
    return NULL;
  return expr_of_text (cfg, cfg->text, 0, scope, error);
}

/* An optional expression @key of @map. */
static gboolean
optional_expr (const WeftCfg *map, const char *key, const Scope *scope,
               WeftExpr **out, GError **error)
{
  const WeftCfg *v = weft_cfg_get (map, key);

  *out = NULL;
  return v == NULL || (*out = expr_of (v, key, scope, error)) != NULL;
}

/* "name" or "name(e, ...)": a step waited for. */
static gboolean
read_ref (const WeftCfg *cfg, const Scope *scope, Ref *ref, GError **error)
{
  const char *text = cfg->text;
  guint len = 0;

  if (!weft_cfg_expect_scalar (cfg, "a step's id", error))
    return FALSE;
  while (g_ascii_isalnum (text[len]) || text[len] == '_')
    len++;
  ref->name = g_strndup (text, len);
  ref->line = cfg->line;
  ref->col = cfg->col;
  if (len == 0 || !is_name (ref->name))
    return weft_cfg_error (error, cfg, "'%s' is not a step's id, or an id "
                           "with the indices of its loops, as add(s - 1)",
                           text);
  const char *rest = text + len;
  while (g_ascii_isspace (*rest))
    rest++;
  if (*rest == '\0')
    return TRUE;
  size_t end = strlen (rest);
  while (end > 0 && g_ascii_isspace (rest[end - 1]))
    end--;
  if (*rest != '(' || rest[end - 1] != ')')
    return weft_cfg_error (error, cfg, "'%s' is not a step's id, or an id "
                           "with the indices of its loops, as add(s - 1)",
                           text);
  /* The indices, split at the commas outside parentheses. */
  guint start = (guint) (rest - text) + 1, depth = 0;
  for (guint i = start; i < (guint) (rest - text) + end; i++)
    {
      char c = text[i];
      gboolean last = i + 1 == (guint) (rest - text) + end;
      if (c == '(')
        depth++;
      else if (c == ')' && !last)
        depth--;
      if ((c == ',' && depth == 0) || last)
        {
          if (ref->n_idx == MAX_DEPTH)
            return weft_cfg_error (error, cfg, "more indices than loops: "
                                   "at most %d", MAX_DEPTH);
          g_autofree char *arg = g_strndup (text + start, i - start);
          ref->idx[ref->n_idx] = expr_of_text (cfg, arg, start, scope, error);
          if (ref->idx[ref->n_idx] == NULL)
            return FALSE;
          ref->n_idx++;
          start = i + 1;
        }
    }
  return TRUE;
}

typedef struct {
  WeftProgram *p;
  Scope scope;
  const Item *loops[MAX_DEPTH];
  uint32_t depth;
} Reader;

static gboolean read_items (Reader *rd, const WeftCfg *seq, GPtrArray *into,
                            GError **error);

static const char *const step_keys[] = { "id", "op", "peer", "chunk",
                                         "chunks", "tag", "after", "when",
                                         "description", NULL };
static const char *const loop_keys[] = { "for", "from", "to", "steps", "when",
                                         "description", NULL };
static const char *const group_keys[] = { "when", "steps", "description",
                                          NULL };

static gboolean
read_step (Reader *rd, const WeftCfg *cfg, Item *it, GError **error)
{
  const WeftCfg *v, *op = weft_cfg_get (cfg, "op");
  const Scope *sc = &rd->scope;

  if (!weft_cfg_check_keys (cfg, step_keys, error)
      || !weft_cfg_expect_scalar (op, "op", error))
    return FALSE;
  if (strcmp (op->text, "send") == 0)
    it->op = WEFT_STEP_SEND;
  else if (strcmp (op->text, "recv") == 0)
    it->op = WEFT_STEP_RECV;
  else if (strcmp (op->text, "reduce") == 0)
    it->op = WEFT_STEP_REDUCE;
  else
    return weft_cfg_error (error, op, "unknown step '%s'; valid: send, recv, "
                           "reduce", op->text);
  it->depth = rd->depth;
  memcpy (it->loops, rd->loops, sizeof it->loops);
  if (!optional_expr (cfg, "when", sc, &it->when, error)
      || !optional_expr (cfg, "tag", sc, &it->tag, error))
    return FALSE;
  v = weft_cfg_get (cfg, "peer");
  if (it->op == WEFT_STEP_REDUCE && v != NULL)
    return weft_cfg_error (error, weft_cfg_get_key (cfg, "peer"),
                           "a reduce step has no peer");
  if (it->op != WEFT_STEP_REDUCE
      && (!(v = weft_cfg_require (cfg, "peer", error))
          || !(it->peer = expr_of (v, "peer", sc, error))))
    return FALSE;

  const WeftCfg *one = weft_cfg_get (cfg, "chunk");
  const WeftCfg *many = weft_cfg_get (cfg, "chunks");
  if ((one == NULL) == (many == NULL))
    return weft_cfg_error (error, cfg, "a step needs 'chunk' (one chunk) or "
                           "'chunks' (a list, or {from: C, count: K}), not "
                           "both or neither");
  it->chunks = g_ptr_array_new_with_free_func ((GDestroyNotify) weft_expr_free);
  if (one != NULL)
    {
      WeftExpr *e = expr_of (one, "chunk", sc, error);
      if (e == NULL)
        return FALSE;
      g_ptr_array_add (it->chunks, e);
    }
  else if (many->kind == WEFT_CFG_MAP)
    {
      static const char *const range_keys[] = { "from", "count", NULL };
      const WeftCfg *f, *c;
      if (!weft_cfg_check_keys (many, range_keys, error)
          || !(f = weft_cfg_require (many, "from", error))
          || !(c = weft_cfg_require (many, "count", error))
          || !(it->first = expr_of (f, "from", sc, error))
          || !(it->count = expr_of (c, "count", sc, error)))
        return FALSE;
    }
  else
    {
      if (!weft_cfg_expect_seq (many, "chunks (a list, or {from: C, count: "
                                "K})", error))
        return FALSE;
      for (size_t i = 0; i < many->n; i++)
        {
          WeftExpr *e = expr_of (many->items[i], "a chunk", sc, error);
          if (e == NULL)
            return FALSE;
          g_ptr_array_add (it->chunks, e);
        }
    }

  it->refs = g_array_new (FALSE, TRUE, sizeof (Ref));
  if ((v = weft_cfg_get (cfg, "after")))
    {
      if (!weft_cfg_expect_seq (v, "after", error))
        return FALSE;
      for (size_t i = 0; i < v->n; i++)
        {
          g_array_set_size (it->refs, it->refs->len + 1);
          if (!read_ref (v->items[i], sc,
                         &g_array_index (it->refs, Ref, it->refs->len - 1),
                         error))
            return FALSE;
        }
    }
  it->decl = -1;
  if ((v = weft_cfg_get (cfg, "id")))
    {
      if (!weft_cfg_expect_scalar (v, "id", error))
        return FALSE;
      if (!is_name (v->text))
        return weft_cfg_error (error, v, "an id is a name (letters, digits "
                               "and _), not '%s'", v->text);
      for (guint d = 0; d < rd->p->decls->len; d++)
        {
          const Decl *o = &g_array_index (rd->p->decls, Decl, d);
          if (strcmp (o->name, v->text) == 0)
            return weft_cfg_error (error, v, "a second step with the id "
                                   "'%s' (the first is on line %d)", v->text,
                                   o->step->line);
        }
      Decl decl = { g_strdup (v->text), it };
      it->decl = (int) rd->p->decls->len;
      g_array_append_val (rd->p->decls, decl);
    }
  return TRUE;
}

static gboolean
read_loop (Reader *rd, const WeftCfg *cfg, Item *it, GError **error)
{
  const WeftCfg *var = weft_cfg_get (cfg, "for"), *v;

  if (!weft_cfg_check_keys (cfg, loop_keys, error)
      || !weft_cfg_expect_scalar (var, "for (a loop's name)", error))
    return FALSE;
  if (!is_name (var->text))
    return weft_cfg_error (error, var, "a loop's name is a name (letters, "
                           "digits and _), not '%s'", var->text);
  for (guint i = 0; i < rd->scope.n; i++)
    if (strcmp (rd->scope.names[i], var->text) == 0)
      return weft_cfg_error (error, var, "'%s' is already a name here",
                             var->text);
  if (rd->depth == MAX_DEPTH)
    return weft_cfg_error (error, var, "loops nest %d deep at most",
                           MAX_DEPTH);
  if (!optional_expr (cfg, "when", &rd->scope, &it->when, error)
      || !(v = weft_cfg_require (cfg, "from", error))
      || !(it->from = expr_of (v, "from", &rd->scope, error))
      || !(v = weft_cfg_require (cfg, "to", error))
      || !(it->to = expr_of (v, "to", &rd->scope, error))
      || !(v = weft_cfg_require (cfg, "steps", error)))
    return FALSE;
  it->slot = rd->scope.n;
  it->var = g_strdup (var->text);
  rd->scope.names[rd->scope.n++] = var->text;
  rd->loops[rd->depth++] = it;
  it->items = g_ptr_array_new_with_free_func (item_free);
  gboolean ok = read_items (rd, v, it->items, error);
  rd->depth--;
  rd->scope.n--;
  return ok;
}

static gboolean
read_items (Reader *rd, const WeftCfg *seq, GPtrArray *into, GError **error)
{
  if (!weft_cfg_expect_seq (seq, "steps (a list of steps, loops and "
                            "groups)", error))
    return FALSE;
  for (size_t i = 0; i < seq->n; i++)
    {
      const WeftCfg *cfg = seq->items[i];
      Item *it = g_new0 (Item, 1);
      gboolean ok;
      g_ptr_array_add (into, it);
      it->line = cfg->line;
      it->col = cfg->col;
      if (!weft_cfg_expect_map (cfg, "a step, a loop or a group", error))
        return FALSE;
      if (weft_cfg_get (cfg, "for"))
        {
          it->kind = ITEM_LOOP;
          ok = read_loop (rd, cfg, it, error);
        }
      else if (weft_cfg_get (cfg, "op"))
        {
          it->kind = ITEM_STEP;
          ok = read_step (rd, cfg, it, error);
        }
      else if (weft_cfg_get (cfg, "steps"))
        {
          const WeftCfg *w;
          it->kind = ITEM_GROUP;
          it->items = g_ptr_array_new_with_free_func (item_free);
          ok = weft_cfg_check_keys (cfg, group_keys, error)
               && (w = weft_cfg_require (cfg, "when", error))
               && (it->when = expr_of (w, "when", &rd->scope, error))
               && read_items (rd, weft_cfg_get (cfg, "steps"), it->items,
                              error);
        }
      else
        ok = weft_cfg_error (error, cfg, "an item of a program is a step "
                             "(op: ...), a loop (for: ...) or a group "
                             "(when: ..., steps: ...)");
      if (!ok)
        return FALSE;
    }
  return TRUE;
}

/* Each step waited for is a step with that id, and the loops whose
 * indices are not given are around the waiting step too. */
static gboolean
resolve (WeftProgram *p, GPtrArray *items, GError **error)
{
  for (guint i = 0; i < items->len; i++)
    {
      Item *it = items->pdata[i];
      if (it->kind != ITEM_STEP)
        {
          if (!resolve (p, it->items, error))
            return FALSE;
          continue;
        }
      for (guint k = 0; k < it->refs->len; k++)
        {
          Ref *ref = &g_array_index (it->refs, Ref, k);
          const Decl *decl = NULL;
          for (guint d = 0; d < p->decls->len && decl == NULL; d++)
            if (strcmp (g_array_index (p->decls, Decl, d).name, ref->name)
                == 0)
              {
                decl = &g_array_index (p->decls, Decl, d);
                ref->decl = (int) d;
              }
          if (decl == NULL)
            {
              g_set_error (error, WEFT_SCHEDULE_ERROR,
                           WEFT_SCHEDULE_ERROR_INVALID, "%s:%d:%d: no step "
                           "has the id '%s'", p->path, ref->line, ref->col,
                           ref->name);
              return FALSE;
            }
          const Item *on = decl->step;
          if (ref->n_idx > on->depth)
            {
              g_set_error (error, WEFT_SCHEDULE_ERROR,
                           WEFT_SCHEDULE_ERROR_INVALID, "%s:%d:%d: '%s' is "
                           "inside %u loop%s: give at most %u ind%s",
                           p->path, ref->line, ref->col, ref->name, on->depth,
                           on->depth == 1 ? "" : "s", on->depth,
                           on->depth == 1 ? "ex" : "ices");
              return FALSE;
            }
          for (uint32_t d = 0; d + ref->n_idx < on->depth; d++)
            if (d >= it->depth || it->loops[d] != on->loops[d])
              {
                g_set_error (error, WEFT_SCHEDULE_ERROR,
                             WEFT_SCHEDULE_ERROR_INVALID, "%s:%d:%d: '%s' is "
                             "inside %u loop%s and this step is not inside "
                             "the same outer ones: give all %u ind%s, as "
                             "%s(...)", p->path, ref->line, ref->col,
                             ref->name, on->depth, on->depth == 1 ? "" : "s",
                             on->depth, on->depth == 1 ? "ex" : "ices",
                             ref->name);
                return FALSE;
              }
        }
    }
  return TRUE;
}

WeftProgram *
weft_program_load (const WeftCfg *root, GError **error)
{
  g_autoptr (WeftProgram) p = g_new0 (WeftProgram, 1);
  Reader rd = { .p = p };
  const WeftCfg *v;

  p->path = g_strdup (root->file);
  p->names = g_ptr_array_new_with_free_func (g_free);
  p->lets = g_ptr_array_new_with_free_func ((GDestroyNotify) weft_expr_free);
  p->requires = g_ptr_array_new_with_free_func ((GDestroyNotify)
                                                weft_expr_free);
  p->requires_at = g_array_new (FALSE, FALSE, sizeof (int));
  p->items = g_ptr_array_new_with_free_func (item_free);
  p->decls = g_array_new (FALSE, FALSE, sizeof (Decl));
  g_ptr_array_add (p->names, g_strdup ("r"));
  g_ptr_array_add (p->names, g_strdup ("n"));
  rd.scope.names[rd.scope.n++] = "r";
  rd.scope.names[rd.scope.n++] = "n";
  if ((v = weft_cfg_get (root, "let")))
    {
      if (!weft_cfg_expect_map (v, "let (name: expression)", error))
        return NULL;
      if (v->n > 64 - 2)
        {
          weft_cfg_error (error, v, "at most %d names", 64 - 2);
          return NULL;
        }
      for (size_t i = 0; i < v->n; i++)
        {
          const char *name = v->keys[i]->text;
          gboolean taken = !is_name (name);
          for (guint k = 0; k < rd.scope.n && !taken; k++)
            taken = strcmp (rd.scope.names[k], name) == 0;
          if (taken)
            {
              weft_cfg_error (error, v->keys[i], "'%s' cannot be a name "
                              "here: a name is letters, digits and _, and "
                              "not one already given (r, n, ...)", name);
              return NULL;
            }
          WeftExpr *e = expr_of (v->items[i], name, &rd.scope, error);
          if (e == NULL)
            return NULL;
          g_ptr_array_add (p->lets, e);
          g_ptr_array_add (p->names, g_strdup (name));
          rd.scope.names[rd.scope.n++] = p->names->pdata[p->names->len - 1];
        }
    }
  if ((v = weft_cfg_get (root, "requires")))
    {
      if (!weft_cfg_expect_seq (v, "requires (a list of conditions)", error))
        return NULL;
      for (size_t i = 0; i < v->n; i++)
        {
          WeftExpr *e = expr_of (v->items[i], "a condition", &rd.scope,
                                 error);
          if (e == NULL)
            return NULL;
          g_ptr_array_add (p->requires, e);
          g_array_append_val (p->requires_at, v->items[i]->line);
          g_array_append_val (p->requires_at, v->items[i]->col);
        }
    }
  if (!(v = weft_cfg_require (root, "chunks", error))
      || !(p->chunks = expr_of (v, "chunks", &rd.scope, error)))
    return NULL;
  p->chunks_line = v->line;
  p->chunks_col = v->col;
  if (!(v = weft_cfg_require (root, "program", error))
      || !read_items (&rd, v, p->items, error)
      || !resolve (p, p->items, error))
    return NULL;
  return g_steal_pointer (&p);
}

/* ---- expanding ---- */

typedef struct {
  const WeftProgram *p;
  uint32_t n, rank;
  int64_t vars[64 + MAX_DEPTH];
  uint32_t n_chunks;
  uint64_t steps, max_steps;
  uint32_t made;                /* the rank's steps so far */
  GHashTable *ids;              /* key_of() -> step + 1 */
  GArray *chunks, *deps;        /* uint32_t, the step's */
  const char *names[64 + MAX_DEPTH];   /* by slot: r, n, lets, loops */
  WeftProgramSink sink;
  void *data;
} Expand;

/* "file:line:col: rank R (s = 1, ...): " and @format. */
static gboolean
expand_error (GError **error, const Expand *x, const Item *it,
              guint n_loops_names, const char *format, ...)
    G_GNUC_PRINTF (5, 6);

static gboolean
expand_error (GError **error, const Expand *x, const Item *it,
              guint n_names, const char *format, ...)
{
  va_list ap;
  g_autoptr (GString) where = g_string_new (NULL);
  guint base = x->p->names->len;

  for (guint k = base; k < n_names; k++)
    g_string_append_printf (where, "%s%s = %" G_GINT64_FORMAT,
                            k == base ? " (" : ", ", x->names[k],
                            x->vars[k]);
  if (where->len)
    g_string_append (where, ")");
  va_start (ap, format);
  g_autofree char *message = g_strdup_vprintf (format, ap);
  va_end (ap);
  g_set_error (error, WEFT_SCHEDULE_ERROR, WEFT_SCHEDULE_ERROR_INVALID,
               "%s:%d:%d: rank %u%s: %s", x->p->path, it->line, it->col,
               x->rank, where->str, message);
  return FALSE;
}

static gboolean
value (Expand *x, const Item *it, guint n_names, const WeftExpr *e,
       int64_t *out, GError **error)
{
  g_autofree char *message = NULL;

  if (weft_expr_eval (e, x->vars, out, &message))
    return TRUE;
  return expand_error (error, x, it, n_names, "%s: %s", weft_expr_text (e),
                       message);
}

/* A made step's key: its id and its loops' indices, as bytes. */
static GBytes *
key_of (int decl, const int64_t *idx, uint32_t n)
{
  int64_t key[1 + MAX_DEPTH];

  key[0] = decl;
  memcpy (key + 1, idx, n * sizeof *idx);
  return g_bytes_new (key, (1 + n) * sizeof *key);
}

static gboolean
expand_step (Expand *x, const Item *it, guint n_names, GError **error)
{
  int64_t v, peer = 0, tag = 0;

  if (x->steps++ >= x->max_steps)
    return expand_error (error, x, it, n_names, "the program for %u ranks "
                         "takes over %" G_GUINT64_FORMAT " steps and loop "
                         "turns, more than weft expands", x->n,
                         x->max_steps);
  if (it->op != WEFT_STEP_REDUCE)
    {
      if (!value (x, it, n_names, it->peer, &peer, error))
        return FALSE;
      if (peer < 0 || peer >= x->n || peer == x->rank)
        return expand_error (error, x, it, n_names, "peer %s is %"
                             G_GINT64_FORMAT ", not a rank from 0 to %u "
                             "other than %u", weft_expr_text (it->peer), peer,
                             x->n - 1, x->rank);
    }
  if (it->tag && !value (x, it, n_names, it->tag, &tag, error))
    return FALSE;
  if (tag < 0 || tag > G_MAXUINT16)
    return expand_error (error, x, it, n_names, "tag %" G_GINT64_FORMAT
                         " is not from 0 to %u", tag, G_MAXUINT16);
  g_array_set_size (x->chunks, 0);
  if (it->first != NULL)
    {
      int64_t first, count;
      if (!value (x, it, n_names, it->first, &first, error)
          || !value (x, it, n_names, it->count, &count, error))
        return FALSE;
      if (count < 1 || count > x->n_chunks)
        return expand_error (error, x, it, n_names, "count %s is %"
                             G_GINT64_FORMAT ", not from 1 to the %u "
                             "chunks", weft_expr_text (it->count), count,
                             x->n_chunks);
      if (first < 0 || first >= x->n_chunks)
        return expand_error (error, x, it, n_names, "from %s is %"
                             G_GINT64_FORMAT ", not a chunk from 0 to %u",
                             weft_expr_text (it->first), first,
                             x->n_chunks - 1);
      for (int64_t k = 0; k < count; k++)
        {
          uint32_t c = (uint32_t) ((first + k) % x->n_chunks);
          g_array_append_val (x->chunks, c);
        }
    }
  for (guint k = 0; k < it->chunks->len; k++)
    {
      const WeftExpr *e = it->chunks->pdata[k];
      if (!value (x, it, n_names, e, &v, error))
        return FALSE;
      if (v < 0 || v >= x->n_chunks)
        return expand_error (error, x, it, n_names, "chunk %s is %"
                             G_GINT64_FORMAT ", not from 0 to %u",
                             weft_expr_text (e), v, x->n_chunks - 1);
      uint32_t c = (uint32_t) v;
      g_array_append_val (x->chunks, c);
    }
  /* What it waits for: steps made before it; one not made (an iteration
   * outside its loop's range, a step whose `when` was false) is none. */
  g_array_set_size (x->deps, 0);
  for (guint k = 0; k < it->refs->len; k++)
    {
      const Ref *ref = &g_array_index (it->refs, Ref, k);
      const Item *on = g_array_index (x->p->decls, Decl, ref->decl).step;
      int64_t idx[MAX_DEPTH];
      uint32_t outer = on->depth - ref->n_idx;
      for (uint32_t d = 0; d < outer; d++)
        idx[d] = x->vars[on->loops[d]->slot];
      for (uint32_t d = 0; d < ref->n_idx; d++)
        if (!value (x, it, n_names, ref->idx[d], &idx[outer + d], error))
          return FALSE;
      g_autoptr (GBytes) key = key_of (ref->decl, idx, on->depth);
      gpointer at = g_hash_table_lookup (x->ids, key);
      if (at == NULL)
        continue;
      uint32_t dep = GPOINTER_TO_UINT (at) - 1;
      gboolean again = FALSE;
      for (guint e = 0; e < x->deps->len && !again; e++)
        again = g_array_index (x->deps, uint32_t, e) == dep;
      if (!again)
        g_array_append_val (x->deps, dep);
    }
  if (x->deps->len > WEFT_STEP_MAX_DEPS)
    return expand_error (error, x, it, n_names, "the step waits for %u "
                         "steps, more than %d", x->deps->len,
                         WEFT_STEP_MAX_DEPS);
  WeftProgramStep step = { it->op, (uint32_t) peer, (uint32_t) tag,
                           (const uint32_t *) x->chunks->data, x->chunks->len,
                           (const uint32_t *) x->deps->data, x->deps->len,
                           it->line, it->col };
  x->sink (x->data, x->rank, &step);
  if (it->decl >= 0)
    {
      int64_t idx[MAX_DEPTH];
      for (uint32_t d = 0; d < it->depth; d++)
        idx[d] = x->vars[it->loops[d]->slot];
      g_hash_table_insert (x->ids, key_of (it->decl, idx, it->depth),
                           GUINT_TO_POINTER (x->made + 1));
    }
  x->made++;
  return TRUE;
}

static gboolean
expand_items (Expand *x, const GPtrArray *items, guint n_names,
              GError **error)
{
  for (guint i = 0; i < items->len; i++)
    {
      const Item *it = items->pdata[i];
      int64_t when = 1, from, to;
      if (it->when && !value (x, it, n_names, it->when, &when, error))
        return FALSE;
      if (!when)
        continue;
      switch (it->kind)
        {
        case ITEM_STEP:
          if (!expand_step (x, it, n_names, error))
            return FALSE;
          break;
        case ITEM_GROUP:
          if (!expand_items (x, it->items, n_names, error))
            return FALSE;
          break;
        case ITEM_LOOP:
          if (!value (x, it, n_names, it->from, &from, error)
              || !value (x, it, n_names, it->to, &to, error))
            return FALSE;
          for (int64_t k = from; k <= to; k++)
            {
              /* Turns count as steps: a loop of nothing still takes time. */
              if (x->steps++ >= x->max_steps)
                return expand_error (error, x, it, n_names, "the program "
                                     "for %u ranks takes over %"
                                     G_GUINT64_FORMAT " steps and loop "
                                     "turns, more than weft expands", x->n,
                                     x->max_steps);
              x->vars[it->slot] = k;
              x->names[it->slot] = it->var;
              if (!expand_items (x, it->items, it->slot + 1, error))
                return FALSE;
            }
          break;
        }
    }
  return TRUE;
}

gboolean
weft_program_expand (const WeftProgram *p, uint32_t n, uint64_t max_steps,
                     uint32_t *chunks, WeftProgramSink sink, void *data,
                     GError **error)
{
  Expand x = { .p = p, .n = n, .max_steps = max_steps, .sink = sink,
               .data = data };
  Item top = { .line = p->chunks_line, .col = p->chunks_col };
  gboolean ok = TRUE;

  for (guint k = 0; k < p->names->len; k++)
    x.names[k] = p->names->pdata[k];
  x.chunks = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  x.deps = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  for (uint32_t r = 0; r < n && ok; r++)
    {
      x.rank = r;
      x.made = 0;
      x.vars[0] = r;
      x.vars[1] = n;
      for (guint k = 0; k < p->lets->len && ok; k++)
        {
          g_autofree char *message = NULL;
          ok = weft_expr_eval (p->lets->pdata[k], x.vars, &x.vars[2 + k],
                               &message);
          if (!ok)
            g_set_error (error, WEFT_SCHEDULE_ERROR,
                         WEFT_SCHEDULE_ERROR_INVALID, "%s: rank %u: %s is "
                         "%s: %s", p->path, r,
                         (char *) p->names->pdata[2 + k],
                         weft_expr_text (p->lets->pdata[k]), message);
        }
      for (guint k = 0; k < p->requires->len && ok; k++)
        {
          int64_t holds;
          g_autofree char *message = NULL;
          int line = g_array_index (p->requires_at, int, 2 * k);
          int col = g_array_index (p->requires_at, int, 2 * k + 1);
          if (!weft_expr_eval (p->requires->pdata[k], x.vars, &holds,
                               &message))
            message = g_strdup_printf ("it cannot be evaluated: %s",
                                       message);
          if (message != NULL || !holds)
            {
              g_set_error (error, WEFT_SCHEDULE_ERROR,
                           WEFT_SCHEDULE_ERROR_INVALID, "%s:%d:%d: the "
                           "schedule requires %s, which %s for %u ranks "
                           "(rank %u)", p->path, line, col,
                           weft_expr_text (p->requires->pdata[k]),
                           message ? message : "does not hold", n, r);
              ok = FALSE;
            }
        }
      int64_t c;
      if (ok && !value (&x, &top, p->names->len, p->chunks, &c, error))
        ok = FALSE;
      if (ok && (c < 1 || c > (1 << 24)
                 || (r > 0 && (uint32_t) c != x.n_chunks)))
        {
          g_set_error (error, WEFT_SCHEDULE_ERROR, WEFT_SCHEDULE_ERROR_INVALID,
                       "%s: chunks (%s) is %" G_GINT64_FORMAT " for rank %u: "
                       "it must be 1 to %u, the same for every rank",
                       p->path, weft_expr_text (p->chunks), c, r, 1u << 24);
          ok = FALSE;
        }
      if (!ok)
        break;
      x.n_chunks = (uint32_t) c;
      x.ids = g_hash_table_new_full (g_bytes_hash, g_bytes_equal,
                                     (GDestroyNotify) g_bytes_unref, NULL);
      ok = expand_items (&x, p->items, p->names->len, error);
      g_hash_table_unref (x.ids);
    }
  *chunks = x.n_chunks;
  g_array_unref (x.chunks);
  g_array_unref (x.deps);
  return ok;
}
