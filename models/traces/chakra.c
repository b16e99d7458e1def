/* weft: reading and writing Chakra execution traces. */
#include "traces/chakra.h"
#include "files.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "chakra.pb-c.h"

typedef ChakraProtoMsg__Node Node;
typedef ChakraProtoMsg__AttributeProto Attr;

/* One rank's file, unpacked. */
typedef struct {
  char *path;
  GPtrArray *nodes;             /* Node, owned */
  GHashTable *index;            /* &node->id -> index + 1 */
  uint32_t *slot;               /* per node: its slot */
} RankFile;

static void
rank_file_clear (RankFile *f)
{
  if (f->nodes)
    g_ptr_array_unref (f->nodes);
  if (f->index)
    g_hash_table_unref (f->index);
  g_free (f->slot);
  g_free (f->path);
}

static void
node_free (gpointer n)
{
  chakra_proto_msg__node__free_unpacked (n, NULL);
}

/* A varint at @p (at most 10 bytes, before @end). */
static gboolean
varint (const uint8_t **p, const uint8_t *end, uint64_t *v)
{
  *v = 0;
  for (int shift = 0; shift < 64 && *p < end; shift += 7)
    {
      uint8_t b = *(*p)++;
      *v |= (uint64_t) (b & 0x7f) << shift;
      if (!(b & 0x80))
        return TRUE;
    }
  return FALSE;
}

static gboolean
read_file (RankFile *f, GError **error)
{
  g_autofree char *data = NULL;
  gsize len;
  g_autoptr (GError) io = NULL;

  if (!g_file_test (f->path, G_FILE_TEST_IS_REGULAR))
    {
      g_set_error (error, WEFT_TRACE_ERROR, WEFT_TRACE_ERROR_IO,
                   "%s: not a regular file",
                   f->path);
      return FALSE;
    }
  if (!g_file_get_contents (f->path, &data, &len, &io))
    {
      g_set_error (error, WEFT_TRACE_ERROR, WEFT_TRACE_ERROR_IO,
                   "%s: cannot read the file: %s",
                   f->path, io->message);
      return FALSE;
    }
  const uint8_t *p = (const uint8_t *) data, *end = p + len;
  f->nodes = g_ptr_array_new_with_free_func (node_free);
  f->index = g_hash_table_new (g_int64_hash, g_int64_equal);
  for (guint k = 0; p < end; k++)
    {
      uint64_t size;
      size_t at = (size_t) (p - (const uint8_t *) data);
      if (!varint (&p, end, &size) || size > (uint64_t) (end - p))
        {
          g_set_error (error, WEFT_TRACE_ERROR, WEFT_TRACE_ERROR_INVALID, "%s: byte %zu: a message "
                       "runs past the end of the file: not a Chakra "
                       "execution trace, or cut short", f->path, at);
          return FALSE;
        }
      if (k == 0)
        {
          ChakraProtoMsg__GlobalMetadata *meta =
              chakra_proto_msg__global_metadata__unpack (NULL, size, p);
          if (meta == NULL)
            {
              g_set_error (error, WEFT_TRACE_ERROR, WEFT_TRACE_ERROR_INVALID, "%s: it does not "
                           "start with Chakra's GlobalMetadata: not a "
                           "Chakra execution trace", f->path);
              return FALSE;
            }
          chakra_proto_msg__global_metadata__free_unpacked (meta, NULL);
        }
      else
        {
          Node *n = chakra_proto_msg__node__unpack (NULL, size, p);
          if (n == NULL)
            {
              g_set_error (error, WEFT_TRACE_ERROR, WEFT_TRACE_ERROR_INVALID, "%s: byte %zu: not a "
                           "Chakra node", f->path, at);
              return FALSE;
            }
          g_ptr_array_add (f->nodes, n);
          if (g_hash_table_contains (f->index, &n->id))
            {
              g_set_error (error, WEFT_TRACE_ERROR, WEFT_TRACE_ERROR_INVALID, "%s: node %"
                           G_GUINT64_FORMAT ": a second node with this id",
                           f->path, n->id);
              return FALSE;
            }
          g_hash_table_insert (f->index, &n->id,
                               GUINT_TO_POINTER (f->nodes->len));
        }
      p += size;
    }
  f->slot = g_new (uint32_t, MAX (f->nodes->len, 1));
  return TRUE;
}

/* A node's dependencies, control and data alike: how many, and the d-th. */
static size_t
n_deps (const Node *n)
{
  return n->n_ctrl_deps + n->n_data_deps;
}

static uint64_t
dep_id (const Node *n, size_t d)
{
  return d < n->n_ctrl_deps ? n->ctrl_deps[d]
                            : n->data_deps[d - n->n_ctrl_deps];
}

static const Attr *
attr (const Node *n, const char *name)
{
  for (size_t i = 0; i < n->n_attr; i++)
    if (strcmp (n->attr[i]->name, name) == 0)
      return n->attr[i];
  return NULL;
}

/* An integer attribute in any of the integer encodings (or a bool). */
static gboolean
attr_int (const Node *n, const char *name, int64_t *v)
{
  const Attr *a = attr (n, name);

  if (a == NULL)
    return FALSE;
  switch (a->value_case)
    {
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_VAL:
      *v = a->int32_val;
      return TRUE;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL:
      *v = a->int64_val;
      return TRUE;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT32_VAL:
      *v = a->uint32_val;
      return TRUE;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT64_VAL:
      *v = (int64_t) a->uint64_val;
      return TRUE;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SINT32_VAL:
      *v = a->sint32_val;
      return TRUE;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SINT64_VAL:
      *v = a->sint64_val;
      return TRUE;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FIXED32_VAL:
      *v = a->fixed32_val;
      return TRUE;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FIXED64_VAL:
      *v = (int64_t) a->fixed64_val;
      return TRUE;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SFIXED32_VAL:
      *v = a->sfixed32_val;
      return TRUE;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SFIXED64_VAL:
      *v = a->sfixed64_val;
      return TRUE;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_VAL:
      *v = a->bool_val;
      return TRUE;
    default:
      return FALSE;
    }
}

static gboolean
node_error (GError **error, const RankFile *f, const Node *n,
            const char *format, ...) G_GNUC_PRINTF (4, 5);

static gboolean
node_error (GError **error, const RankFile *f, const Node *n,
            const char *format, ...)
{
  va_list ap;

  va_start (ap, format);
  g_autofree char *what = g_strdup_vprintf (format, ap);
  va_end (ap);
  g_set_error (error, WEFT_TRACE_ERROR, WEFT_TRACE_ERROR_INVALID, "%s: node %" G_GUINT64_FORMAT
               "%s%s%s: %s", f->path, n->id, n->name[0] ? " ('" : "",
               n->name, n->name[0] ? "')" : "", what);
  return FALSE;
}

/* A required non-negative integer attribute. */
static gboolean
need_int (GError **error, const RankFile *f, const Node *n, const char *name,
          int64_t max, int64_t *v)
{
  if (!attr_int (n, name, v))
    return node_error (error, f, n, "no %s attribute (an integer)", name);
  if (*v < 0 || *v > max)
    return node_error (error, f, n, "%s is %" G_GINT64_FORMAT ", outside 0 "
                       "to %" G_GINT64_FORMAT, name, *v, max);
  return TRUE;
}

static const char *
pg_of (const Node *n)
{
  const Attr *a = attr (n, "pg_name");

  if (a && a->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL)
    return a->string_val;
  return "";
}

static gboolean
coll_op (const Node *n, WeftOp *op)
{
  int64_t type;

  if (!attr_int (n, "comm_type", &type))
    return FALSE;
  switch (type)
    {
    case CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_REDUCE:
    case CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__BARRIER:
      *op = WEFT_OP_ALL_REDUCE;
      return TRUE;
    case CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__REDUCE:
      *op = WEFT_OP_REDUCE;
      return TRUE;
    case CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_GATHER:
      *op = WEFT_OP_ALL_GATHER;
      return TRUE;
    case CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__BROADCAST:
      *op = WEFT_OP_BROADCAST;
      return TRUE;
    case CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_TO_ALL:
      *op = WEFT_OP_ALL_TO_ALL;
      return TRUE;
    case CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__REDUCE_SCATTER:
      *op = WEFT_OP_REDUCE_SCATTER;
      return TRUE;
    default:
      return FALSE;
    }
}

/* The collective's size: comm_size, but a barrier moves nothing. */
static gboolean
coll_size (GError **error, const RankFile *f, const Node *n, uint64_t *size)
{
  int64_t type = 0, v = 0;

  attr_int (n, "comm_type", &type);
  if (type == CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__BARRIER)
    {
      *size = 0;
      return TRUE;
    }
  if (!need_int (error, f, n, "comm_size", G_MAXINT64, &v))
    return FALSE;
  *size = (uint64_t) v;
  return TRUE;
}

static void
add_op (WeftTrace *t, WeftTraceOp *op, const uint32_t *ranks, uint32_t n)
{
  op->first_rank = t->ranks->len;
  op->n_ranks = n;
  op->first_dep = t->deps->len;
  op->n_deps = 0;
  g_array_append_vals (t->ranks, ranks, n);
  g_array_append_val (t->ops, *op);
}

/* The collectives: the k-th on a group on each of its ranks is one op. */
static gboolean
read_collectives (WeftTrace *t, const WeftTraceJob *job, uint32_t j,
                  RankFile *files, GHashTable *comms, int alg, int proto,
                  GError **error)
{
  uint32_t n = job->n_ranks;
  g_autoptr (GPtrArray) groups = g_ptr_array_new ();   /* names, in order */
  g_autoptr (GHashTable) lists = g_hash_table_new_full (
      g_str_hash, g_str_equal, NULL, (GDestroyNotify) g_ptr_array_unref);

  /* Per group, per rank: its collective nodes in file order. */
  for (uint32_t r = 0; r < n; r++)
    for (guint i = 0; i < files[r].nodes->len; i++)
      {
        const Node *node = g_ptr_array_index (files[r].nodes, i);
        if (node->type != CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE)
          continue;
        WeftOp op;
        if (!coll_op (node, &op))
          return node_error (error, &files[r], node, "a collective weft "
                             "cannot run (comm_type missing, or gather, "
                             "scatter or reduce_scatter_block)");
        const char *pg = pg_of (node);
        GPtrArray *per_rank = g_hash_table_lookup (lists, pg);
        if (per_rank == NULL)
          {
            GArray *members = g_hash_table_lookup (comms, pg);
            if (pg[0] != '\0' && members == NULL)
              return node_error (error, &files[r], node, "process group '%s' "
                                 "is not among the job's communicators", pg);
            per_rank = g_ptr_array_new_with_free_func (
                (GDestroyNotify) g_array_unref);
            for (uint32_t k = 0; k < n; k++)
              g_ptr_array_add (per_rank, g_array_new (FALSE, FALSE,
                                                      sizeof (uint32_t)));
            g_hash_table_insert (lists, (gpointer) pg, per_rank);
            g_ptr_array_add (groups, (gpointer) pg);
          }
        g_array_append_val (g_ptr_array_index (per_rank, r), i);
      }

  for (guint g = 0; g < groups->len; g++)
    {
      const char *pg = g_ptr_array_index (groups, g);
      GPtrArray *per_rank = g_hash_table_lookup (lists, pg);
      GArray *members = g_hash_table_lookup (comms, pg);
      g_autoptr (GArray) all = g_array_new (FALSE, FALSE, sizeof (uint32_t));
      if (members == NULL)
        for (uint32_t r = 0; r < n; r++)
          g_array_append_val (all, r);
      const GArray *m = members ? members : all;
      g_autofree uint8_t *in = g_new0 (uint8_t, n);
      for (guint k = 0; k < m->len; k++)
        in[g_array_index (m, uint32_t, k)] = 1;
      uint32_t first = g_array_index (m, uint32_t, 0);
      guint count = ((GArray *) g_ptr_array_index (per_rank, first))->len;
      for (uint32_t r = 0; r < n; r++)
        {
          GArray *mine = g_ptr_array_index (per_rank, r);
          if (mine->len > 0 && !in[r])
            return node_error (error, &files[r],
                               g_ptr_array_index (files[r].nodes,
                                                  g_array_index (mine, uint32_t,
                                                                 0)),
                               "rank %u runs a collective on process group "
                               "'%s', which it is not in", r, pg);
          if (in[r] && mine->len != count)
            {
              g_set_error (error, WEFT_TRACE_ERROR, WEFT_TRACE_ERROR_INVALID, "%s: %u collectives "
                           "on process group '%s', and %s %u: every rank of "
                           "a group runs the same collectives", files[r].path,
                           mine->len, pg, files[first].path, count);
              return FALSE;
            }
        }
      g_autofree uint32_t *ranks = g_new (uint32_t, m->len);
      for (guint k = 0; k < m->len; k++)
        ranks[k] = job->first_rank + g_array_index (m, uint32_t, k);
      for (guint c = 0; c < count; c++)
        {
          const Node *lead = g_ptr_array_index (
              files[first].nodes,
              g_array_index ((GArray *) g_ptr_array_index (per_rank, first),
                             uint32_t, c));
          WeftTraceOp op = { 0 };
          op.kind = WEFT_TRACE_COLLECTIVE;
          coll_op (lead, &op.op);
          if (!coll_size (error, &files[first], lead, &op.bytes))
            return FALSE;
          for (guint k = 0; k < m->len; k++)
            {
              uint32_t r = g_array_index (m, uint32_t, k);
              uint32_t i = g_array_index ((GArray *) g_ptr_array_index (
                                              per_rank, r), uint32_t, c);
              const Node *node = g_ptr_array_index (files[r].nodes, i);
              WeftOp o = WEFT_OP_ALL_REDUCE;
              uint64_t size;
              coll_op (node, &o);
              if (!coll_size (error, &files[r], node, &size))
                return FALSE;
              if (o != op.op || size != op.bytes)
                return node_error (error, &files[r], node, "collective %u on "
                                   "process group '%s' is a %s of %"
                                   G_GUINT64_FORMAT " bytes here and a %s of "
                                   "%" G_GUINT64_FORMAT " on rank %u", c + 1,
                                   pg, weft_op_name (o), size,
                                   weft_op_name (op.op), op.bytes, first);
              files[r].slot[i] = t->ranks->len + k;
            }
          g_autofree char *name = lead->name[0]
                                      ? g_strdup (lead->name)
                                      : g_strdup_printf ("%s#%u",
                                                         pg[0] ? pg : "world",
                                                         c);
          op.name = g_string_chunk_insert_const (t->names, name);
          op.job = j;
          op.line = 0;
          op.col = (int) first;
          op.algorithm = alg;
          op.protocol = proto;
          add_op (t, &op, ranks, m->len);
        }
    }
  return TRUE;
}

/* Refuse a cycle among a rank's nodes, naming them. */
static gboolean
check_rank_acyclic (const RankFile *f, GError **error)
{
  guint n = f->nodes->len;
  g_autofree uint32_t *state = g_new0 (uint32_t, MAX (n, 1));  /* 0 new,
                                                                  1 open,
                                                                  2 done */
  g_autofree uint32_t *stack = g_new (uint32_t, MAX (n, 1));
  g_autofree uint32_t *edge = g_new (uint32_t, MAX (n, 1));

  for (guint root = 0; root < n; root++)
    {
      if (state[root])
        continue;
      guint depth = 0;
      stack[depth] = root;
      edge[depth++] = 0;
      state[root] = 1;
      while (depth > 0)
        {
          uint32_t v = stack[depth - 1];
          const Node *node = g_ptr_array_index (f->nodes, v);
          size_t nd = n_deps (node);
          if (edge[depth - 1] == nd)
            {
              state[v] = 2;
              depth--;
              continue;
            }
          uint32_t e = edge[depth - 1]++;
          uint64_t id = dep_id (node, e);
          uint32_t u = GPOINTER_TO_UINT (g_hash_table_lookup (f->index, &id))
                       - 1;
          if (state[u] == 2)
            continue;
          if (state[u] == 1)
            {
              /* The stack from u up is the cycle: each waits for the
               * next. */
              GString *s = g_string_new (NULL);
              guint from = 0;
              while (stack[from] != u)
                from++;
              for (guint k = depth; k-- > from;)
                g_string_append_printf (
                    s, "%" G_GUINT64_FORMAT " -> ",
                    ((const Node *) g_ptr_array_index (f->nodes,
                                                       stack[k]))->id);
              g_string_append_printf (
                  s, "%" G_GUINT64_FORMAT,
                  ((const Node *) g_ptr_array_index (f->nodes,
                                                     stack[depth - 1]))->id);
              g_set_error (error, WEFT_TRACE_ERROR, WEFT_TRACE_ERROR_INVALID, "%s: the dependencies "
                           "form a cycle: nodes %s (each runs after the one "
                           "before)", f->path, s->str);
              g_string_free (s, TRUE);
              return FALSE;
            }
          state[u] = 1;
          stack[depth] = u;
          edge[depth++] = 0;
        }
    }
  return TRUE;
}

gboolean
weft_chakra_read (WeftTrace *t, uint32_t j, GHashTable *comms, int alg,
                  int proto, GError **error)
{
  const WeftTraceJob *job = &g_array_index (t->jobs, WeftTraceJob, j);
  uint32_t n = job->n_ranks;
  RankFile *files = g_new0 (RankFile, n);
  gboolean ok = FALSE;

  for (uint32_t r = 0; r < n; r++)
    {
      files[r].path = g_strdup_printf ("%s.%u.et", job->chakra, r);
      if (!read_file (&files[r], error))
        goto out;
    }
  /* Every dependency names a node of the same file. */
  for (uint32_t r = 0; r < n; r++)
    for (guint i = 0; i < files[r].nodes->len; i++)
      {
        const Node *node = g_ptr_array_index (files[r].nodes, i);
        for (size_t d = 0; d < n_deps (node); d++)
          {
            uint64_t id = dep_id (node, d);
            if (!g_hash_table_contains (files[r].index, &id))
              {
                node_error (error, &files[r], node, "depends on node %"
                            G_GUINT64_FORMAT ", which is not in the file",
                            id);
                goto out;
              }
          }
      }
  for (uint32_t r = 0; r < n; r++)
    if (!check_rank_acyclic (&files[r], error))
      goto out;
  if (!read_collectives (t, job, j, files, comms, alg, proto, error))
    goto out;

  /* The other nodes: an op on their rank each. */
  for (uint32_t r = 0; r < n; r++)
    for (guint i = 0; i < files[r].nodes->len; i++)
      {
        const Node *node = g_ptr_array_index (files[r].nodes, i);
        WeftTraceOp op = { 0 };
        int64_t v, cpu = 0;
        uint32_t rank = job->first_rank + r;
        if (node->type == CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE)
          continue;
        op.kind = WEFT_TRACE_SLEEP;
        op.duration = node->duration_micros * (WeftTime) 1000000;
        if (node->type == CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE)
          op.kind = attr_int (node, "is_cpu_op", &cpu) && cpu
                        ? WEFT_TRACE_SLEEP : WEFT_TRACE_COMPUTE;
        else if (node->type == CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE
                 || node->type == CHAKRA_PROTO_MSG__NODE_TYPE__COMM_RECV_NODE)
          {
            gboolean send = node->type
                            == CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE;
            const char *other = send ? "comm_dst" : "comm_src";
            op.kind = send ? WEFT_TRACE_SEND : WEFT_TRACE_RECV;
            op.duration = 0;
            if (!need_int (error, &files[r], node, other, n - 1, &v))
              goto out;
            if ((uint32_t) v == r)
              {
                node_error (error, &files[r], node, "%s is the rank itself",
                            other);
                goto out;
              }
            op.peer = job->first_rank + (uint32_t) v;
            if (!need_int (error, &files[r], node, "comm_size", G_MAXINT64,
                           &v))
              goto out;
            op.bytes = (uint64_t) v;
            op.tag = attr_int (node, "comm_tag", &v) ? (uint32_t) v : 0;
          }
        g_autofree char *name = node->name[0]
                                    ? g_strdup (node->name)
                                    : g_strdup_printf ("%" G_GUINT64_FORMAT,
                                                       node->id);
        op.name = g_string_chunk_insert_const (t->names, name);
        op.job = j;
        op.line = 0;
        op.col = (int) r;
        op.algorithm = alg;
        op.protocol = proto;
        files[r].slot[i] = t->ranks->len;
        add_op (t, &op, &rank, 1);
      }

  /* Dependencies, slot to slot on the same rank. */
  for (uint32_t r = 0; r < n; r++)
    for (guint i = 0; i < files[r].nodes->len; i++)
      {
        const Node *node = g_ptr_array_index (files[r].nodes, i);
        for (size_t d = 0; d < n_deps (node); d++)
          {
            uint64_t id = dep_id (node, d);
            uint32_t u = GPOINTER_TO_UINT (g_hash_table_lookup (files[r].index,
                                                                &id)) - 1;
            uint32_t edge[2] = { files[r].slot[u], files[r].slot[i] };
            g_array_append_vals (t->slot_edges, edge, 2);
          }
      }
  ok = TRUE;

out:
  for (uint32_t r = 0; r < n; r++)
    rank_file_clear (&files[r]);
  g_free (files);
  return ok;
}

/* Writing. */

static Attr *
int_attr (GPtrArray *keep, const char *name, int64_t v)
{
  Attr *a = g_new (Attr, 1);

  chakra_proto_msg__attribute_proto__init (a);
  a->name = (char *) name;
  a->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL;
  a->int64_val = v;
  g_ptr_array_add (keep, a);
  return a;
}

static gboolean
put (FILE *out, const uint8_t *buf, size_t len)
{
  uint8_t head[10];
  size_t k = 0;
  uint64_t v = len;

  do
    {
      head[k++] = (uint8_t) ((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
      v >>= 7;
    }
  while (v);
  return fwrite (head, 1, k, out) == k && fwrite (buf, 1, len, out) == len;
}

static int
comm_type (WeftOp op)
{
  switch (op)
    {
    case WEFT_OP_ALL_REDUCE:
      return CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_REDUCE;
    case WEFT_OP_REDUCE:
      return CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__REDUCE;
    case WEFT_OP_ALL_GATHER:
      return CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_GATHER;
    case WEFT_OP_BROADCAST:
      return CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__BROADCAST;
    case WEFT_OP_ALL_TO_ALL:
      return CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_TO_ALL;
    case WEFT_OP_REDUCE_SCATTER:
      return CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__REDUCE_SCATTER;
    default:
      g_assert_not_reached ();
    }
}

/* Write rank @r's nodes to @out: each of its slots, in op order, with the
 * slot's dependencies (@in_start/@in: incoming slots per slot) as
 * ctrl_deps.  FALSE if a write failed. */
static gboolean
write_rank (const WeftTrace *t, const WeftTraceJob *job, FILE *out,
            const uint32_t *slots, guint n_slots, const uint32_t *node_id,
            const uint64_t *in_start, const uint32_t *in, GHashTable *groups)
{
  gboolean ok;

  ChakraProtoMsg__GlobalMetadata meta = CHAKRA_PROTO_MSG__GLOBAL_METADATA__INIT;
  meta.version = "0.0.4";
  g_autofree uint8_t *buf = g_malloc (
      chakra_proto_msg__global_metadata__get_packed_size (&meta));
  ok = put (out, buf, chakra_proto_msg__global_metadata__pack (&meta, buf));

  for (guint k = 0; ok && k < n_slots; k++)
    {
      uint32_t s = slots[k];
      const WeftTraceOp *op = weft_trace_op (t, weft_trace_op_of_slot (t, s));
      g_autoptr (GPtrArray) keep = g_ptr_array_new_with_free_func (g_free);
      Attr *attrs[5];
      Node node = CHAKRA_PROTO_MSG__NODE__INIT;
      node.id = node_id[s];
      node.name = (char *) op->name;
      node.attr = attrs;
      g_autofree uint64_t *deps = g_new (uint64_t, in_start[s + 1]
                                                       - in_start[s] + 1);
      for (uint64_t e = in_start[s]; e < in_start[s + 1]; e++)
        deps[node.n_ctrl_deps++] = node_id[in[e]];
      node.ctrl_deps = deps;
      switch (op->kind)
        {
        case WEFT_TRACE_COMPUTE:
        case WEFT_TRACE_SLEEP:
          node.type = CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE;
          node.duration_micros = (op->duration + 500000) / 1000000;
          if (op->kind == WEFT_TRACE_SLEEP)
            attrs[node.n_attr++] = int_attr (keep, "is_cpu_op", 1);
          break;
        case WEFT_TRACE_SEND:
        case WEFT_TRACE_RECV:
          {
            gboolean send = op->kind == WEFT_TRACE_SEND;
            node.type = send ? CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE
                             : CHAKRA_PROTO_MSG__NODE_TYPE__COMM_RECV_NODE;
            attrs[node.n_attr++] = int_attr (keep, send ? "comm_dst"
                                                        : "comm_src",
                                             op->peer - job->first_rank);
            attrs[node.n_attr++] = int_attr (keep, "comm_tag", op->tag);
            attrs[node.n_attr++] = int_attr (keep, "comm_size",
                                             (int64_t) op->bytes);
            break;
          }
        case WEFT_TRACE_COLLECTIVE:
          {
            node.type = CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE;
            attrs[node.n_attr++] = int_attr (keep, "comm_type",
                                             comm_type (op->op));
            attrs[node.n_attr++] = int_attr (keep, "comm_size",
                                             (int64_t) op->bytes);
            Attr *pg = g_new (Attr, 1);
            chakra_proto_msg__attribute_proto__init (pg);
            pg->name = "pg_name";
            pg->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL;
            g_autoptr (GBytes) key = g_bytes_new (
                &g_array_index (t->ranks, uint32_t, op->first_rank),
                op->n_ranks * sizeof (uint32_t));
            pg->string_val = g_hash_table_lookup (groups, key);
            g_ptr_array_add (keep, pg);
            attrs[node.n_attr++] = pg;
            break;
          }
        }
      size_t len = chakra_proto_msg__node__get_packed_size (&node);
      g_autofree uint8_t *nb = g_malloc (len);
      ok = put (out, nb, chakra_proto_msg__node__pack (&node, nb));
    }
  return ok;
}

gboolean
weft_chakra_write (const WeftTrace *t, uint32_t j, const char *prefix,
                   GError **error)
{
  const WeftTraceJob *job = &g_array_index (t->jobs, WeftTraceJob, j);
  uint32_t n_slots = t->ranks->len;
  g_autoptr (GArray) from = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  g_autoptr (GArray) to = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  g_autoptr (GHashTable) groups = g_hash_table_new_full (
      g_bytes_hash, g_bytes_equal, (GDestroyNotify) g_bytes_unref, g_free);
  g_autoptr (GString) yaml = g_string_new (NULL);

  /* Incoming dependencies per slot. */
  weft_trace_slot_edges (t, from, to);
  g_autofree uint64_t *in_start = g_new0 (uint64_t, n_slots + 1);
  for (guint e = 0; e < to->len; e++)
    in_start[g_array_index (to, uint32_t, e) + 1]++;
  for (uint32_t s = 0; s < n_slots; s++)
    in_start[s + 1] += in_start[s];
  g_autofree uint32_t *in = g_new (uint32_t, MAX (to->len, 1));
  g_autofree uint64_t *fill = g_memdup2 (in_start,
                                         (n_slots + 1) * sizeof (uint64_t));
  for (guint e = 0; e < to->len; e++)
    in[fill[g_array_index (to, uint32_t, e)]++] = g_array_index (from,
                                                                 uint32_t, e);

  /* Slots per rank of the job, in op order; node ids count per rank. */
  g_autoptr (GPtrArray) per_rank = g_ptr_array_new_with_free_func (
      (GDestroyNotify) g_array_unref);
  for (uint32_t r = 0; r < job->n_ranks; r++)
    g_ptr_array_add (per_rank, g_array_new (FALSE, FALSE, sizeof (uint32_t)));
  g_autofree uint32_t *node_id = g_new (uint32_t, MAX (n_slots, 1));
  {
    g_autofree char *base = g_path_get_basename (prefix);
    g_string_append_printf (yaml, WEFT_CHAKRA_MARK
                            " from %s: replay with\n#   weft run SCENARIO "
                            "--trace %s.yaml\nranks: %u\nchakra: %s\n"
                            "communicators:\n", t->path, base, job->n_ranks,
                            base);
  }
  guint n_groups = 0;
  for (uint32_t i = 0; i < t->ops->len; i++)
    {
      const WeftTraceOp *op = weft_trace_op (t, i);
      if (op->job != j)
        continue;
      for (uint32_t k = 0; k < op->n_ranks; k++)
        {
          uint32_t s = op->first_rank + k;
          GArray *list = g_ptr_array_index (per_rank,
                                            g_array_index (t->ranks, uint32_t,
                                                           s)
                                                - job->first_rank);
          node_id[s] = list->len;
          g_array_append_val (list, s);
        }
      if (op->kind != WEFT_TRACE_COLLECTIVE)
        continue;
      GBytes *key = g_bytes_new (&g_array_index (t->ranks, uint32_t,
                                                 op->first_rank),
                                 op->n_ranks * sizeof (uint32_t));
      if (g_hash_table_contains (groups, key))
        {
          g_bytes_unref (key);
          continue;
        }
      char *name = g_strdup_printf ("pg%u", n_groups++);
      g_hash_table_insert (groups, key, name);
      g_string_append_printf (yaml, "  %s: [", name);
      for (uint32_t k = 0; k < op->n_ranks; k++)
        g_string_append_printf (yaml, "%s%u", k ? ", " : "",
                                g_array_index (t->ranks, uint32_t,
                                               op->first_rank + k)
                                    - job->first_rank);
      g_string_append (yaml, "]\n");
    }
  if (n_groups == 0)
    g_string_append (yaml, "  {}\n");
  /* Every file is written aside first and renamed in only once all are
   * whole: a full disk leaves the prefix's files as they were. */
  g_autoptr (GPtrArray) outputs = g_ptr_array_new_with_free_func (
      (GDestroyNotify) weft_output_abort);
  for (uint32_t r = 0; r <= job->n_ranks; r++)
    {
      g_autofree char *path = r < job->n_ranks
                                  ? g_strdup_printf ("%s.%u.et", prefix, r)
                                  : g_strdup_printf ("%s.yaml", prefix);
      WeftOutput *output = weft_output_new (path, error);
      if (output == NULL)
        return FALSE;
      g_ptr_array_add (outputs, output);
      FILE *out = weft_output_stream (output);
      gboolean ok;
      if (r < job->n_ranks)
        {
          GArray *list = g_ptr_array_index (per_rank, r);
          ok = write_rank (t, job, out, (const uint32_t *) list->data,
                           list->len, node_id, in_start, in, groups);
        }
      else
        ok = fwrite (yaml->str, 1, yaml->len, out) == yaml->len;
      if (!ok)
        {
          g_set_error (error, WEFT_TRACE_ERROR, WEFT_TRACE_ERROR_IO,
                       "cannot write %s: %s",
                       path, g_strerror (errno));
          return FALSE;
        }
    }
  for (guint k = 0; k < outputs->len; k++)
    {
      WeftOutput *output = outputs->pdata[k];
      outputs->pdata[k] = NULL;
      if (!weft_output_commit (output, error))
        return FALSE;
    }
  return TRUE;
}

gboolean
weft_chakra_may_write (const WeftTrace *t, uint32_t j, const char *prefix,
                       const char *const *inputs, gboolean force,
                       GError **error)
{
  const WeftTraceJob *job = &g_array_index (t->jobs, WeftTraceJob, j);
  g_autofree char *yaml = g_strdup_printf ("%s.yaml", prefix);

  if (!weft_file_may_write (yaml, inputs, WEFT_CHAKRA_MARK, force, error))
    return FALSE;
  /* Rank files carry no mark of their own: they are weft's when the trace
   * beside them is. */
  gboolean ours = force || g_file_test (yaml, G_FILE_TEST_EXISTS);
  for (uint32_t r = 0; r < job->n_ranks; r++)
    {
      g_autofree char *path = g_strdup_printf ("%s.%u.et", prefix, r);
      if (!weft_file_may_write (path, inputs, NULL, ours, error))
        return FALSE;
    }
  return TRUE;
}

const char *
weft_chakra_protobuf_version (void)
{
  return protobuf_c_version ();
}
