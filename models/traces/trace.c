/* weft: reading traces. */
#include "traces/trace.h"

#include <string.h>

#include "traces/chakra.h"
#include "topology/names.h"
#include "units.h"

G_DEFINE_QUARK (weft-trace-error-quark, weft_trace_error)

void
weft_trace_free (WeftTrace *t)
{
  if (t == NULL)
    return;
  for (guint j = 0; t->jobs && j < t->jobs->len; j++)
    {
      g_free (g_array_index (t->jobs, WeftTraceJob, j).name);
      g_free (g_array_index (t->jobs, WeftTraceJob, j).chakra);
    }
  if (t->slot_edges)
    g_array_unref (t->slot_edges);
  if (t->jobs)
    g_array_unref (t->jobs);
  if (t->ops)
    g_array_unref (t->ops);
  if (t->ranks)
    g_array_unref (t->ranks);
  if (t->deps)
    g_array_unref (t->deps);
  if (t->gpus)
    g_array_unref (t->gpus);
  if (t->names)
    g_string_chunk_free (t->names);
  g_free (t->path);
  g_free (t);
}

uint32_t
weft_trace_op_of_slot (const WeftTrace *t, uint32_t slot)
{
  uint32_t lo = 0, hi = t->ops->len;

  /* Ops hold their slots in order: the last op starting at or before. */
  while (hi - lo > 1)
    {
      uint32_t mid = (lo + hi) / 2;
      if (weft_trace_op (t, mid)->first_rank <= slot)
        lo = mid;
      else
        hi = mid;
    }
  return lo;
}

const char *
weft_trace_op_kind (const WeftTraceOp *op)
{
  switch (op->kind)
    {
    case WEFT_TRACE_COLLECTIVE:
      return weft_op_name (op->op);
    case WEFT_TRACE_SEND:
      return "send";
    case WEFT_TRACE_RECV:
      return "recv";
    case WEFT_TRACE_COMPUTE:
      return "compute";
    case WEFT_TRACE_SLEEP:
      return "sleep";
    }
  g_assert_not_reached ();
}

/* What one job is being read with. */
typedef struct {
  WeftTrace *t;
  const WeftTopology *topo;
  uint32_t job;
  uint32_t base, n;             /* its global ranks: base .. base + n - 1 */
  int algorithm, protocol;      /* the job's defaults */
  GHashTable *comms;            /* name -> GArray of job ranks */
  GHashTable *ids;              /* name -> op index + 1 */
  const WeftCfg *at;            /* the job's map */
  uint32_t first_op;
  GArray *pending;              /* Pending: deps named, resolved at the end */
} Job;

/* A dependency as written, until every id of the job is known. */
typedef struct {
  uint32_t op;
  const char *name;             /* in the trace's string chunk */
  int line, col;
} Pending;

static gboolean
rank_number (const WeftCfg *at, const char *text, uint32_t limit,
             uint32_t *rank, GError **error)
{
  char *end;
  guint64 v;

  if (!g_ascii_isdigit (text[0]))
    goto bad;
  v = g_ascii_strtoull (text, &end, 10);
  if (*end != '\0')
    goto bad;
  if (v >= limit)
    return weft_cfg_error (error, at, "rank %" G_GUINT64_FORMAT " is outside "
                           "the placement: the job has %u ranks (0-%u)", v,
                           limit, limit - 1);
  *rank = (uint32_t) v;
  return TRUE;
bad:
  return weft_cfg_error (error, at, "'%s' is not a rank: write a number from "
                         "0, a range 'a-b' or a strided range 'a-b:s'", text);
}

/* Ranks written as a list of numbers, or as a string of comma-separated
 * numbers, ranges "a-b" and strided ranges "a-b:s". */
static gboolean
rank_set (const WeftCfg *cfg, uint32_t limit, GArray *out, GError **error)
{
  if (cfg->kind == WEFT_CFG_SEQ)
    {
      for (size_t i = 0; i < cfg->n; i++)
        {
          uint32_t r;
          if (!weft_cfg_expect_scalar (cfg->items[i], "a rank", error)
              || !rank_number (cfg->items[i], cfg->items[i]->text, limit, &r,
                               error))
            return FALSE;
          g_array_append_val (out, r);
        }
    }
  else if (cfg->kind == WEFT_CFG_SCALAR)
    {
      g_auto (GStrv) parts = g_strsplit (cfg->text, ",", -1);
      for (int i = 0; parts[i]; i++)
        {
          char *item = g_strstrip (parts[i]);
          char *colon = strchr (item, ':'), *dash = strchr (item, '-');
          uint32_t a = 0, b = 0, step = 1;
          if (colon)
            {
              *colon = '\0';
              if (!rank_number (cfg, colon + 1, G_MAXUINT32, &step, error))
                return FALSE;
              if (step == 0)
                return weft_cfg_error (error, cfg, "a stride must be above 0");
            }
          if (dash)
            *dash = '\0';
          if (!rank_number (cfg, item, limit, &a, error)
              || !rank_number (cfg, dash ? dash + 1 : item, limit, &b, error))
            return FALSE;
          if (b < a)
            return weft_cfg_error (error, cfg, "the range %u-%u runs "
                                   "backwards", a, b);
          for (uint64_t r = a; r <= b; r += step)
            {
              uint32_t v = (uint32_t) r;
              g_array_append_val (out, v);
            }
        }
    }
  else
    return weft_cfg_error (error, cfg, "ranks are a list of numbers or a "
                           "string such as \"0-7\" or \"0-63:8\"");
  if (out->len == 0)
    return weft_cfg_error (error, cfg, "no ranks");
  /* A rank may appear once. */
  g_autofree uint8_t *seen = g_new0 (uint8_t, limit);
  for (guint i = 0; i < out->len; i++)
    {
      uint32_t r = g_array_index (out, uint32_t, i);
      if (seen[r]++)
        return weft_cfg_error (error, cfg, "rank %u appears twice", r);
    }
  return TRUE;
}

static gboolean
algorithm_of (const WeftCfg *map, int *alg, int *proto, GError **error)
{
  WeftCfg *v;
  WeftAlgorithm a;
  WeftProtocolKind p;

  if ((v = weft_cfg_get (map, "algorithm")))
    {
      if (!weft_cfg_expect_scalar (v, "algorithm", error))
        return FALSE;
      if (strcmp (v->text, "auto") == 0)
        *alg = WEFT_TRACE_AUTO;
      else if (weft_algorithm_parse (v->text, &a))
        *alg = a;
      else
        return weft_cfg_error (error, v, "unknown algorithm '%s'; valid: %s",
                               v->text, weft_algorithm_list ());
    }
  if ((v = weft_cfg_get (map, "protocol")))
    {
      if (!weft_cfg_expect_scalar (v, "protocol", error))
        return FALSE;
      if (g_ascii_strcasecmp (v->text, "auto") == 0)
        *proto = WEFT_TRACE_AUTO;
      else if (weft_protocol_parse (v->text, &p) && p != WEFT_PROTOCOL_RAW)
        *proto = p;
      else if (weft_protocol_parse (v->text, &p))
        /* The ops of a replay share one network, at NCCL's rates or at the
         * links' own: raw is the whole replay's, or none of it. */
        return weft_cfg_error (error, v, "raw is for a whole replay (weft "
                               "run --protocol raw), not one job or op");
      else
        return weft_cfg_error (error, v, "unknown protocol '%s'; valid: "
                               "auto, LL, LL128, Simple", v->text);
    }
  return TRUE;
}

static gboolean
kind_of (const WeftCfg *v, WeftTraceOp *op, GError **error)
{
  if (!weft_cfg_expect_scalar (v, "kind", error))
    return FALSE;
  const char *k = v->text;
  if (strcmp (k, "send") == 0)
    op->kind = WEFT_TRACE_SEND;
  else if (strcmp (k, "recv") == 0)
    op->kind = WEFT_TRACE_RECV;
  else if (strcmp (k, "compute") == 0)
    op->kind = WEFT_TRACE_COMPUTE;
  else if (strcmp (k, "sleep") == 0)
    op->kind = WEFT_TRACE_SLEEP;
  else if (weft_op_parse (k, &op->op) && op->op != WEFT_OP_SEND_RECV)
    op->kind = WEFT_TRACE_COLLECTIVE;
  else
    return weft_cfg_error (error, v, "unknown kind '%s'; valid: all_reduce, "
                           "all_gather, reduce_scatter, broadcast, reduce, "
                           "all_to_all, send, recv, compute, sleep", k);
  return TRUE;
}

/* The op's ranks, global, appended to t->ranks. */
static gboolean
op_ranks (Job *job, const WeftCfg *map, WeftTraceOp *op, GError **error)
{
  WeftCfg *rank = weft_cfg_get (map, "rank"), *ranks = weft_cfg_get (map,
                                                                     "ranks");
  WeftCfg *comm = weft_cfg_get (map, "comm");
  g_autoptr (GArray) set = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  gboolean p2p = op->kind == WEFT_TRACE_SEND || op->kind == WEFT_TRACE_RECV;

  if ((rank != NULL) + (ranks != NULL) + (comm != NULL) != 1)
    return weft_cfg_error (error, map, "op '%s' needs exactly one of %s",
                           op->name, p2p ? "rank" : "comm, ranks or rank");
  if (p2p && rank == NULL)
    return weft_cfg_error (error, ranks ? ranks : comm, "a %s runs on one "
                           "rank: write 'rank' and 'peer'",
                           weft_trace_op_kind (op));
  if (rank)
    {
      uint32_t r;
      if (!weft_cfg_expect_scalar (rank, "rank", error)
          || !rank_number (rank, rank->text, job->n, &r, error))
        return FALSE;
      g_array_append_val (set, r);
    }
  else if (ranks && !rank_set (ranks, job->n, set, error))
    return FALSE;
  else if (comm)
    {
      if (!weft_cfg_expect_scalar (comm, "comm", error))
        return FALSE;
      GArray *members = g_hash_table_lookup (job->comms, comm->text);
      if (members == NULL)
        return weft_cfg_error (error, comm, "unknown communicator '%s'",
                               comm->text);
      g_array_append_vals (set, members->data, members->len);
    }
  op->first_rank = job->t->ranks->len;
  op->n_ranks = set->len;
  for (guint i = 0; i < set->len; i++)
    {
      uint32_t g = job->base + g_array_index (set, uint32_t, i);
      g_array_append_val (job->t->ranks, g);
    }
  if (p2p)
    {
      WeftCfg *peer = weft_cfg_require (map, "peer", error);
      uint32_t r;
      if (peer == NULL || !weft_cfg_expect_scalar (peer, "peer", error)
          || !rank_number (peer, peer->text, job->n, &r, error))
        return FALSE;
      if (r == g_array_index (set, uint32_t, 0))
        return weft_cfg_error (error, peer, "a rank cannot %s to itself",
                               weft_trace_op_kind (op));
      op->peer = job->base + r;
      WeftCfg *tag = weft_cfg_get (map, "tag");
      uint64_t v = 0;
      if (tag && !weft_cfg_uint (tag, 0, G_MAXUINT32, &v, error))
        return FALSE;
      op->tag = (uint32_t) v;
    }
  return TRUE;
}

static gboolean
read_op (Job *job, const WeftCfg *map, GError **error)
{
  static const char *const keys[] = {
    "id", "kind", "comm", "ranks", "rank", "peer", "tag", "size", "time",
    "deps", "at", "algorithm", "protocol", NULL
  };
  WeftTraceOp op = { 0 };
  WeftCfg *v;

  if (!weft_cfg_expect_map (map, "an op", error)
      || !weft_cfg_check_keys (map, keys, error))
    return FALSE;
  WeftCfg *id = weft_cfg_require (map, "id", error);
  if (id == NULL || !weft_cfg_expect_scalar (id, "id", error))
    return FALSE;
  gpointer first;
  if ((first = g_hash_table_lookup (job->ids, id->text)))
    return weft_cfg_error (error, id, "duplicate op id '%s' (first at line "
                           "%d)", id->text,
                           weft_trace_op (job->t, GPOINTER_TO_UINT (first)
                                                      - 1)->line);
  op.name = g_string_chunk_insert_const (job->t->names, id->text);
  op.line = map->line;
  op.col = map->col;
  op.job = job->job;
  op.algorithm = job->algorithm;
  op.protocol = job->protocol;
  v = weft_cfg_require (map, "kind", error);
  if (v == NULL || !kind_of (v, &op, error)
      || !algorithm_of (map, &op.algorithm, &op.protocol, error)
      || !op_ranks (job, map, &op, error))
    return FALSE;
  gboolean timed = op.kind == WEFT_TRACE_COMPUTE
                   || op.kind == WEFT_TRACE_SLEEP;
  const char *need = timed ? "time" : "size";
  const char *other = timed ? "size" : "time";
  if ((v = weft_cfg_get_key (map, other)))
    return weft_cfg_error (error, v, "a %s op takes a %s, not a %s",
                           weft_trace_op_kind (&op), need, other);
  if ((v = weft_cfg_get (map, need)) == NULL)
    return weft_cfg_error (error, map, "op '%s' (%s) has no %s", op.name,
                           weft_trace_op_kind (&op), need);
  if (timed ? !weft_cfg_time (v, &op.duration, error)
            : !weft_cfg_size (v, &op.bytes, error))
    return FALSE;
  if ((v = weft_cfg_get (map, "at")) && !weft_cfg_time (v, &op.at, error))
    return FALSE;
  if (op.kind == WEFT_TRACE_COLLECTIVE && op.algorithm != WEFT_TRACE_AUTO
      && !weft_algorithm_supports (op.algorithm, op.op))
    return weft_cfg_error (error, map, "algorithm %s cannot run %s",
                           weft_algorithm_name (op.algorithm),
                           weft_op_name (op.op));
  if ((v = weft_cfg_get (map, "deps")) && v->kind != WEFT_CFG_SEQ)
    return weft_cfg_error (error, v, "deps is a list of op ids");
  for (size_t d = 0; v && d < v->n; d++)
    {
      const WeftCfg *name = v->items[d];
      if (!weft_cfg_expect_scalar (name, "a dependency", error))
        return FALSE;
      Pending p = { job->t->ops->len,
                    g_string_chunk_insert_const (job->t->names, name->text),
                    name->line, name->col };
      g_array_append_val (job->pending, p);
    }
  g_hash_table_insert (job->ids, (gpointer) op.name,
                       GUINT_TO_POINTER (job->t->ops->len + 1));
  g_array_append_val (job->t->ops, op);
  return TRUE;
}

/* Whether ops @a and @b share a rank (their rank lists are short, or one
 * is: mark the shorter). */
static gboolean
share_rank (const WeftTrace *t, const WeftTraceOp *a, const WeftTraceOp *b,
            GHashTable *scratch)
{
  const uint32_t *ra = &g_array_index (t->ranks, uint32_t, a->first_rank);
  const uint32_t *rb = &g_array_index (t->ranks, uint32_t, b->first_rank);

  if (a->n_ranks * (uint64_t) b->n_ranks <= 64)
    {
      for (uint32_t i = 0; i < a->n_ranks; i++)
        for (uint32_t j = 0; j < b->n_ranks; j++)
          if (ra[i] == rb[j])
            return TRUE;
      return FALSE;
    }
  g_hash_table_remove_all (scratch);
  for (uint32_t i = 0; i < a->n_ranks; i++)
    g_hash_table_add (scratch, GUINT_TO_POINTER (ra[i] + 1));
  for (uint32_t j = 0; j < b->n_ranks; j++)
    if (g_hash_table_contains (scratch, GUINT_TO_POINTER (rb[j] + 1)))
      return TRUE;
  return FALSE;
}

/* Deps, now that every id of the job is known: each op's in order. */
static gboolean
read_deps (Job *job, GError **error)
{
  WeftTrace *t = job->t;
  g_autoptr (GHashTable) scratch = g_hash_table_new (g_direct_hash,
                                                     g_direct_equal);
  guint p = 0;

  for (uint32_t i = job->first_op; i < t->ops->len; i++)
    {
      WeftTraceOp *op = &g_array_index (t->ops, WeftTraceOp, i);
      op->first_dep = t->deps->len;
      for (; p < job->pending->len
             && g_array_index (job->pending, Pending, p).op == i;
           p++)
        {
          const Pending *d = &g_array_index (job->pending, Pending, p);
          gpointer k = g_hash_table_lookup (job->ids, d->name);
          const char *why = NULL;
          uint32_t dep = k ? GPOINTER_TO_UINT (k) - 1 : 0;
          if (k == NULL)
            why = "which is no op of the job";
          else if (dep == i)
            why = "itself";
          else if (!share_rank (t, op, weft_trace_op (t, dep), scratch))
            why = "which runs on none of its ranks (a dependency orders work "
                  "on the ranks two ops share; ranks wait for each other "
                  "through communication)";
          if (why)
            {
              g_set_error (error, WEFT_TRACE_ERROR, WEFT_TRACE_ERROR_INVALID, "%s:%d:%d: op '%s' "
                           "depends on %s%s%s%s", t->path, d->line, d->col,
                           op->name, dep == i && k ? "" : "'",
                           dep == i && k ? "" : d->name,
                           dep == i && k ? "" : "', ", why);
              return FALSE;
            }
          g_array_append_val (t->deps, dep);
        }
      op->n_deps = t->deps->len - op->first_dep;
    }
  return TRUE;
}

char *
weft_trace_where (const WeftTrace *t, const WeftTraceOp *op)
{
  const WeftTraceJob *job = &g_array_index (t->jobs, WeftTraceJob, op->job);

  if (op->line == 0 && job->chakra)
    return g_strdup_printf ("%s.%d.et: node %s", job->chakra, op->col,
                            op->name);
  return g_strdup_printf ("%s:%d:%d", t->path, op->line, op->col);
}

#define op_where weft_trace_where

void
weft_trace_slot_edges (const WeftTrace *t, GArray *from, GArray *to)
{
  g_autofree uint32_t *slot_on = g_new (uint32_t, MAX (t->gpus->len, 1));

  memset (slot_on, 0xff, MAX (t->gpus->len, 1) * sizeof (uint32_t));
  for (uint32_t b = 0; b < t->ops->len; b++)
    {
      const WeftTraceOp *ob = weft_trace_op (t, b);
      const uint32_t *rb = &g_array_index (t->ranks, uint32_t, ob->first_rank);
      for (uint32_t d = 0; d < ob->n_deps; d++)
        {
          const WeftTraceOp *oa = weft_trace_op (
              t, g_array_index (t->deps, uint32_t, ob->first_dep + d));
          const uint32_t *ra = &g_array_index (t->ranks, uint32_t,
                                               oa->first_rank);
          for (uint32_t k = 0; k < oa->n_ranks; k++)
            slot_on[ra[k]] = oa->first_rank + k;
          for (uint32_t k = 0; k < ob->n_ranks; k++)
            if (slot_on[rb[k]] != G_MAXUINT32)
              {
                uint32_t f = slot_on[rb[k]], s = ob->first_rank + k;
                g_array_append_val (from, f);
                g_array_append_val (to, s);
              }
          for (uint32_t k = 0; k < oa->n_ranks; k++)
            slot_on[ra[k]] = G_MAXUINT32;
        }
    }
  for (guint e = 0; e < t->slot_edges->len; e += 2)
    {
      g_array_append_val (from, g_array_index (t->slot_edges, uint32_t, e));
      g_array_append_val (to, g_array_index (t->slot_edges, uint32_t, e + 1));
    }
}

/* Pair the k-th send from a to b with tag t with the k-th receive on b
 * from a with tag t. */
static gboolean
match_p2p (WeftTrace *t, uint32_t first_op, GError **error)
{
  g_autoptr (GHashTable) queues = g_hash_table_new_full (
      g_bytes_hash, g_bytes_equal, (GDestroyNotify) g_bytes_unref,
      (GDestroyNotify) g_array_unref);

  for (uint32_t i = first_op; i < t->ops->len; i++)
    {
      WeftTraceOp *op = &g_array_index (t->ops, WeftTraceOp, i);
      if (op->kind != WEFT_TRACE_SEND && op->kind != WEFT_TRACE_RECV)
        continue;
      uint32_t self = g_array_index (t->ranks, uint32_t, op->first_rank);
      gboolean send = op->kind == WEFT_TRACE_SEND;
      uint32_t key[4] = { send ? self : op->peer, send ? op->peer : self,
                          op->tag, send };
      g_autoptr (GBytes) mine = g_bytes_new (key, sizeof key);
      key[3] = !send;
      g_autoptr (GBytes) theirs = g_bytes_new (key, sizeof key);
      GArray *waiting = g_hash_table_lookup (queues, theirs);
      if (waiting && waiting->len > 0)
        {
          uint32_t other = g_array_index (waiting, uint32_t, 0);
          g_array_remove_index (waiting, 0);
          WeftTraceOp *o = &g_array_index (t->ops, WeftTraceOp, other);
          if (o->bytes != op->bytes)
            {
              g_autofree char *where = op_where (t, op);
              g_autofree char *a = weft_format_size (o->bytes);
              g_autofree char *b = weft_format_size (op->bytes);
              g_set_error (error, WEFT_TRACE_ERROR, WEFT_TRACE_ERROR_INVALID, "%s: %s '%s' of %s "
                           "pairs with %s '%s' (line %d) of %s: the sizes "
                           "differ", where, weft_trace_op_kind (op), op->name,
                           b, weft_trace_op_kind (o), o->name, o->line, a);
              return FALSE;
            }
          o->match = i;
          op->match = other;
          continue;
        }
      GArray *q = g_hash_table_lookup (queues, mine);
      if (q == NULL)
        {
          q = g_array_new (FALSE, FALSE, sizeof (uint32_t));
          g_hash_table_insert (queues, g_bytes_ref (mine), q);
        }
      g_array_append_val (q, i);
    }
  /* What is left has no partner: report the first in the file. */
  uint32_t worst = G_MAXUINT32;
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init (&it, queues);
  while (g_hash_table_iter_next (&it, &k, &v))
    if (((GArray *) v)->len > 0)
      worst = MIN (worst, g_array_index ((GArray *) v, uint32_t, 0));
  if (worst == G_MAXUINT32)
    return TRUE;
  const WeftTraceOp *op = weft_trace_op (t, worst);
  const WeftTraceJob *job = &g_array_index (t->jobs, WeftTraceJob, op->job);
  uint32_t self = g_array_index (t->ranks, uint32_t, op->first_rank)
                  - job->first_rank;
  uint32_t peer = op->peer - job->first_rank;
  gboolean send = op->kind == WEFT_TRACE_SEND;
  g_autofree char *where = op_where (t, op);
  g_set_error (error, WEFT_TRACE_ERROR, WEFT_TRACE_ERROR_INVALID, "%s: %s '%s' %s rank %u %s rank "
               "%u (tag %u) has no matching %s on rank %u %s rank %u",
               where, send ? "send" : "recv", op->name, send ? "from" : "on",
               self, send ? "to" : "from", peer, op->tag,
               send ? "recv" : "send", peer, send ? "from" : "to", self);
  return FALSE;
}

/* Refuse a dependency cycle, naming the ops on it. */
static gboolean
check_acyclic (WeftTrace *t, GError **error)
{
  uint32_t n = t->ops->len;
  g_autofree uint32_t *indeg = g_new0 (uint32_t, MAX (n, 1));
  g_autofree uint32_t *start = g_new0 (uint32_t, n + 1);
  g_autofree uint32_t *succ = g_new (uint32_t, MAX (t->deps->len, 1));
  g_autofree uint32_t *queue = g_new (uint32_t, MAX (n, 1));
  uint32_t head = 0, tail = 0;

  for (uint32_t i = 0; i < n; i++)
    {
      const WeftTraceOp *op = weft_trace_op (t, i);
      indeg[i] = op->n_deps;
      for (uint32_t d = 0; d < op->n_deps; d++)
        start[g_array_index (t->deps, uint32_t, op->first_dep + d) + 1]++;
    }
  for (uint32_t i = 0; i < n; i++)
    start[i + 1] += start[i];
  g_autofree uint32_t *fill = g_memdup2 (start, (n + 1) * sizeof (uint32_t));
  for (uint32_t i = 0; i < n; i++)
    {
      const WeftTraceOp *op = weft_trace_op (t, i);
      for (uint32_t d = 0; d < op->n_deps; d++)
        succ[fill[g_array_index (t->deps, uint32_t, op->first_dep + d)]++] = i;
    }
  for (uint32_t i = 0; i < n; i++)
    if (indeg[i] == 0)
      queue[tail++] = i;
  while (head < tail)
    {
      uint32_t i = queue[head++];
      for (uint32_t e = start[i]; e < start[i + 1]; e++)
        if (--indeg[succ[e]] == 0)
          queue[tail++] = succ[e];
    }
  if (tail == n)
    return TRUE;
  /* Every op left waits for another op left: walk back along unfinished
   * dependencies until an op repeats; the ops from there on form a cycle. */
  uint32_t i = 0;
  while (indeg[i] == 0)
    i++;
  g_autofree uint32_t *seen_at = g_new (uint32_t, n);
  memset (seen_at, 0xff, n * sizeof (uint32_t));
  g_autoptr (GArray) walk = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  while (seen_at[i] == G_MAXUINT32)
    {
      seen_at[i] = walk->len;
      g_array_append_val (walk, i);
      const WeftTraceOp *op = weft_trace_op (t, i);
      for (uint32_t d = 0; d < op->n_deps; d++)
        {
          uint32_t dep = g_array_index (t->deps, uint32_t, op->first_dep + d);
          if (indeg[dep] > 0)
            {
              i = dep;
              break;
            }
        }
    }
  GString *names = g_string_new (NULL);
  for (guint k = walk->len; k-- > seen_at[i];)
    g_string_append_printf (names, "'%s' -> ",
                            weft_trace_op (t, g_array_index (walk, uint32_t,
                                                             k))->name);
  /* Back to where it started. */
  g_string_append_printf (names, "'%s'",
                          weft_trace_op (t, g_array_index (walk, uint32_t,
                                                           walk->len - 1))->name);
  g_autofree char *where = op_where (t, weft_trace_op (t, i));
  g_set_error (error, WEFT_TRACE_ERROR, WEFT_TRACE_ERROR_INVALID, "%s: the dependencies form a "
               "cycle: %s (each runs after the one before)", where,
               names->str);
  g_string_free (names, TRUE);
  return FALSE;
}

/* The job's GPUs: @placement (a name pattern or a list of GPU names), or
 * the next @n GPUs of the scenario in order from *@next. */
static gboolean
place (Job *job, const WeftCfg *placement, const WeftCfg *ranks,
       uint64_t files, uint32_t *next, GError **error)
{
  const WeftTopology *topo = job->topo;
  GArray *gpus = job->t->gpus;
  uint64_t n = files;

  if (ranks && !weft_cfg_uint (ranks, 1, 1 << 24, &n, error))
    return FALSE;
  if (topo == NULL)
    {
      /* Not placed: converting. */
      if (n == 0)
        return weft_cfg_error (error, placement ? placement : job->at,
                               "the job needs 'ranks' here");
      uint32_t none = WEFT_NONE;
      for (uint64_t i = 0; i < n; i++)
        g_array_append_val (gpus, none);
      job->n = (uint32_t) n;
      return TRUE;
    }
  if (placement == NULL)
    {
      uint32_t have = 0;
      for (uint32_t i = *next; i < topo->n_nodes; i++)
        if (topo->nodes[i].kind == WEFT_NODE_GPU && (n == 0 || have < n))
          {
            g_array_append_val (gpus, i);
            have++;
            *next = i + 1;
          }
      /* Without 'ranks' the count is its Chakra files'. */
      if (n == 0 && have == 0)
        return weft_cfg_error (error, ranks ? ranks : job->at,
                               "no GPU of the scenario is left for the job");
      if (have < n)
        return weft_cfg_error (error, ranks ? ranks : job->at,
                               "the job has %" G_GUINT64_FORMAT
                               " ranks and the scenario %u GPUs after those "
                               "of the jobs before it", n, have);
      job->n = have;
      return TRUE;
    }
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  if (placement->kind == WEFT_CFG_SCALAR)
    {
      g_autoptr (GError) why = NULL;
      /* It names GPUs of the scenario: no more names than there are. */
      if (!weft_names_expand_at_most (placement->text,
                                      MAX (topo->n_nodes, 1), names, &why))
        return weft_cfg_error (error, placement, "%s", why->message);
    }
  else if (placement->kind == WEFT_CFG_SEQ)
    for (size_t i = 0; i < placement->n; i++)
      {
        if (!weft_cfg_expect_scalar (placement->items[i], "a GPU", error))
          return FALSE;
        g_ptr_array_add (names, g_strdup (placement->items[i]->text));
      }
  else
    return weft_cfg_error (error, placement, "placement is a GPU name "
                           "pattern or a list of GPU names");
  for (guint i = 0; i < names->len; i++)
    {
      const char *name = g_ptr_array_index (names, i);
      uint32_t id = weft_topology_find_node (topo, name);
      if (id == WEFT_NONE || topo->nodes[id].kind != WEFT_NODE_GPU)
        return weft_cfg_error (error, placement, "'%s' is no GPU of the "
                               "scenario", name);
      g_array_append_val (gpus, id);
    }
  if (n && n != names->len)
    return weft_cfg_error (error, ranks ? ranks : placement,
                           "the job has %" G_GUINT64_FORMAT
                           " ranks and its placement %u GPUs", n,
                           names->len);
  job->n = names->len;
  return TRUE;
}

/* What reading a trace keeps between the items it streams. */
typedef struct {
  WeftTrace *t;
  const WeftTopology *topo;
  uint32_t next;                /* default placement: the next GPU */
  Job job;
  const WeftCfg *open;          /* the map of the job being read, or NULL */
} Reader;

static void
job_clear (Job *job)
{
  g_clear_pointer (&job->comms, g_hash_table_unref);
  g_clear_pointer (&job->ids, g_hash_table_unref);
  g_clear_pointer (&job->pending, g_array_unref);
}

static const char *const job_keys[] = {
  "name", "ranks", "placement", "algorithm", "protocol", "communicators",
  "ops", "chakra", "description", NULL
};

/* Start reading the job @map (as far as it is read: the keys before its
 * ops).  A Chakra job is read whole. */
static gboolean
job_begin (Reader *rd, const WeftCfg *map, GError **error)
{
  WeftTrace *t = rd->t;
  Job *job = &rd->job;
  WeftCfg *v;
  g_autofree char *chakra = NULL;
  uint64_t files = 0;

  job_clear (job);
  *job = (Job) { t, rd->topo, t->jobs->len, t->gpus->len, 0, WEFT_TRACE_AUTO,
                 WEFT_TRACE_AUTO, NULL, NULL, map, t->ops->len, NULL };
  job->comms = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                      (GDestroyNotify) g_array_unref);
  job->ids = g_hash_table_new (g_str_hash, g_str_equal);
  job->pending = g_array_new (FALSE, FALSE, sizeof (Pending));
  rd->open = map;
  if (!weft_cfg_expect_map (map, "a job", error)
      || !weft_cfg_check_keys (map, job_keys, error))
    return FALSE;
  if ((v = weft_cfg_get (map, "chakra")))
    {
      /* Chakra files beside the trace: as many ranks as files, unless
       * said. */
      if (!weft_cfg_expect_scalar (v, "chakra", error))
        return FALSE;
      if ((v = weft_cfg_get_key (map, "ops")))
        return weft_cfg_error (error, v, "a job has 'ops' or 'chakra' files, "
                               "not both");
      v = weft_cfg_get (map, "chakra");
      g_autofree char *dir = g_path_get_dirname (t->path);
      chakra = g_path_is_absolute (v->text)
                   ? g_strdup (v->text)
                   : g_build_filename (dir, v->text, NULL);
      for (;; files++)
        {
          g_autofree char *f = g_strdup_printf ("%s.%" G_GUINT64_FORMAT ".et",
                                                chakra, files);
          if (!g_file_test (f, G_FILE_TEST_EXISTS))
            break;
        }
      if (files == 0)
        return weft_cfg_error (error, v, "no Chakra file %s.0.et", chakra);
    }
  if (!place (job, weft_cfg_get (map, "placement"),
              weft_cfg_get (map, "ranks"), files, &rd->next, error)
      || !algorithm_of (map, &job->algorithm, &job->protocol, error))
    return FALSE;
  g_autofree char *name = g_strdup_printf ("job%u", t->jobs->len);
  if ((v = weft_cfg_get (map, "name")))
    {
      if (!weft_cfg_expect_scalar (v, "name", error))
        return FALSE;
      g_free (name);
      name = g_strdup (v->text);
    }
  for (guint k = 0; k < t->jobs->len; k++)
    if (strcmp (g_array_index (t->jobs, WeftTraceJob, k).name, name) == 0)
      return weft_cfg_error (error, v ? v : map, "two jobs are named '%s'",
                             name);
  WeftTraceJob j = { g_steal_pointer (&name), job->base, job->n,
                     g_steal_pointer (&chakra) };
  g_array_append_val (t->jobs, j);

  if ((v = weft_cfg_get (map, "communicators")))
    {
      if (!weft_cfg_expect_map (v, "communicators", error))
        return FALSE;
      for (size_t i = 0; i < v->n; i++)
        {
          GArray *set = g_array_new (FALSE, FALSE, sizeof (uint32_t));
          g_hash_table_insert (job->comms, g_strdup (v->keys[i]->text), set);
          if (!rank_set (v->items[i], job->n, set, error))
            return FALSE;
        }
    }
  if (j.chakra)
    {
      rd->open = NULL;
      return weft_chakra_read (t, job->job, job->comms, job->algorithm,
                               job->protocol, error)
             && match_p2p (t, job->first_op, error);
    }
  return TRUE;
}

/* Whether the job @map gave its 'ops' as a list (an empty one is a job
 * that does nothing). */
static gboolean
check_ops (const WeftCfg *map, GError **error)
{
  const WeftCfg *key = weft_cfg_get_key (map, "ops");
  const WeftCfg *value = weft_cfg_get (map, "ops");

  if (key == NULL)
    return weft_cfg_require (map, "ops", error) != NULL;
  if (value != NULL && value->kind != WEFT_CFG_SEQ)
    return weft_cfg_expect_seq (value, "ops", error);
  return TRUE;
}

/* Finish the job @map, read whole now: its dependencies and pairs. */
static gboolean
job_end (Reader *rd, const WeftCfg *map, GError **error)
{
  WeftCfg *ops = weft_cfg_get_key (map, "ops");

  rd->open = NULL;
  if (!weft_cfg_check_keys (map, job_keys, error)
      || !check_ops (map, error))
    return FALSE;
  /* Its ops were read as they came: what they depend on comes first. */
  for (size_t i = 0; ops && i < map->n; i++)
    if (map->keys[i]->line > ops->line
        || (map->keys[i]->line == ops->line && map->keys[i]->col > ops->col))
      {
        const char *k = map->keys[i]->text;
        if (strcmp (k, "description") != 0)
          return weft_cfg_error (error, map->keys[i], "'%s' must come before "
                                 "'ops' in a job: a trace is read as it "
                                 "comes, and its ops need it", k);
      }
  return read_deps (&rd->job, error) && match_p2p (rd->t, rd->job.first_op,
                                                   error);
}

/* The streamed items: each job's ops as they come, and with several jobs
 * each job once it is read whole. */
static gboolean
stream_item (const WeftCfg *map, const char *key, const WeftCfg *item,
             void *data, GError **error)
{
  Reader *rd = data;

  if (strcmp (key, "ops") == 0)
    return item == NULL ? job_begin (rd, map, error)
                        : read_op (&rd->job, item, error);
  /* A job of the list, whole: finish it, or read it now if it had no ops
   * to start it (Chakra files). */
  if (item == NULL)
    return TRUE;
  if (rd->open == item)
    return job_end (rd, item, error);
  return job_begin (rd, item, error) && (rd->open == NULL
                                         || job_end (rd, item, error));
}

static WeftTrace *
trace_new (const char *path)
{
  WeftTrace *t = g_new0 (WeftTrace, 1);

  t->path = g_strdup (path);
  t->ops = g_array_new (FALSE, FALSE, sizeof (WeftTraceOp));
  t->ranks = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  t->deps = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  t->jobs = g_array_new (FALSE, FALSE, sizeof (WeftTraceJob));
  t->gpus = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  t->slot_edges = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  t->names = g_string_chunk_new (4096);
  return t;
}

/* Read @text (or the file @path when @text is NULL). */
static WeftTrace *
load (const char *path, const char *text, size_t len,
      const WeftTopology *topo, GError **error)
{
  static const char *const streamed[] = { "ops", "jobs", NULL };
  g_autoptr (WeftTrace) t = trace_new (path);
  Reader rd = { t, topo, 0, { 0 }, NULL };
  g_autoptr (WeftCfg) root = NULL;
  gboolean ok = FALSE;

  root = text ? weft_cfg_load_data_streaming (path, text, len, streamed,
                                              stream_item, &rd, error)
              : weft_cfg_load_file_streaming (path, streamed, stream_item,
                                              &rd, error);
  if (root == NULL || !weft_cfg_expect_map (root, "a trace", error))
    goto out;
  WeftCfg *jobs = weft_cfg_get (root, "jobs");
  if (jobs)
    {
      static const char *const keys[] = { "jobs", "description", NULL };
      if (!weft_cfg_check_keys (root, keys, error)
          || !weft_cfg_expect_seq (jobs, "jobs", error))
        goto out;
      if (t->jobs->len == 0)
        {
          weft_cfg_error (error, jobs, "no jobs");
          goto out;
        }
    }
  else if (rd.open == root)
    {
      if (!job_end (&rd, root, error))
        goto out;
    }
  else if (t->jobs->len == 0)
    {
      /* No ops were streamed: Chakra files, or a mistake. */
      if (!job_begin (&rd, root, error))
        goto out;
      if (rd.open)
        {
          /* A job with a list of ops always streams it: this is none. */
          if (check_ops (root, error))
            weft_cfg_error (error, root, "'ops' should be a list of ops");
          goto out;
        }
    }
  ok = check_acyclic (t, error);

out:
  job_clear (&rd.job);
  return ok ? g_steal_pointer (&t) : NULL;
}

WeftTrace *
weft_trace_load_data (const char *name, const char *text, size_t len,
                      const WeftTopology *topo, GError **error)
{
  return load (name, text, len, topo, error);
}

WeftTrace *
weft_trace_load (const char *path, const WeftTopology *topo, GError **error)
{
  return load (path, NULL, 0, topo, error);
}
