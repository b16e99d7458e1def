/* weft: the tree all_reduce, as NCCL builds it: inside each server the
 * GPUs form a chain, and across servers the chains' heads form a double
 * binary tree.  Half of the buffer is reduced up one tree and broadcast
 * back down, the other half on a second tree in which the servers are
 * shifted by one, so that most servers that are leaves in one tree are
 * inner nodes in the other.
 *
 * Each half is cut into channels, one tree each, whose chains start at
 * each server's GPU c for channel c (the second tree's at GPU c - 1,
 * running the other way); across servers there are by default as many as
 * a server has GPUs, so that every GPU's network interface carries a share
 * of the traffic between servers (NCCL's channels start their chains at
 * the GPUs beside the interfaces they use).  Every such tree is cut into
 * chunks that follow each other up and down it: a chunk's send waits for
 * the previous chunk's send on the same connection, so that a connection
 * stays in order and the chunks pipeline along the chains. */
#include "collectives/collective-private.h"

uint32_t
weft_tree_build (uint32_t lo, uint32_t hi, uint32_t *parent)
{
  uint32_t mid = lo + (hi - lo) / 2;

  if (mid > lo)
    parent[weft_tree_build (lo, mid - 1, parent)] = mid;
  if (mid < hi)
    parent[weft_tree_build (mid + 1, hi, parent)] = mid;
  return mid;
}

/* At most this many children a rank: the next in its server's chain and,
 * for a chain's head, two servers' heads. */
#define MAX_CHILDREN 3

/* The ranks grouped into servers: server g's ranks, in rank order, are
 * member[first[g] .. first[g + 1]). */
typedef struct {
  uint32_t n;                   /* servers */
  uint32_t *first;
  uint32_t *member;
  uint32_t widest;              /* ranks in the largest server */
} Servers;

static void
servers_clear (Servers *sv)
{
  g_clear_pointer (&sv->first, g_free);
  g_clear_pointer (&sv->member, g_free);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (Servers, servers_clear)

static void
servers_of (uint32_t n_ranks, const uint32_t *server, Servers *sv)
{
  g_autoptr (GHashTable) index = g_hash_table_new (g_direct_hash,
                                                   g_direct_equal);
  g_autofree uint32_t *of = g_new (uint32_t, n_ranks);
  g_autofree uint32_t *count = g_new0 (uint32_t, n_ranks + 1);

  /* Servers numbered in the order of their first rank. */
  sv->n = 0;
  for (uint32_t r = 0; r < n_ranks; r++)
    {
      gpointer key = GUINT_TO_POINTER (server ? server[r] : r);
      gpointer found;
      if (!g_hash_table_lookup_extended (index, key, NULL, &found))
        {
          found = GUINT_TO_POINTER (sv->n++);
          g_hash_table_insert (index, key, found);
        }
      of[r] = GPOINTER_TO_UINT (found);
      count[of[r] + 1]++;
    }
  sv->first = g_new0 (uint32_t, sv->n + 1);
  sv->widest = 0;
  for (uint32_t g = 0; g < sv->n; g++)
    {
      sv->first[g + 1] = sv->first[g] + count[g + 1];
      sv->widest = MAX (sv->widest, count[g + 1]);
    }
  sv->member = g_new (uint32_t, MAX (n_ranks, 1));
  for (uint32_t g = 0; g <= sv->n; g++)
    count[g] = sv->first[g];
  for (uint32_t r = 0; r < n_ranks; r++)
    sv->member[count[of[r]]++] = r;
}

/* One tree: every rank's parent (G_MAXUINT32 at the root) and children. */
typedef struct {
  uint32_t *parent;
  uint32_t *n_children;
  uint32_t *children;           /* MAX_CHILDREN a rank */
} Tree;

static void
adopt (Tree *t, uint32_t parent, uint32_t child)
{
  t->parent[child] = parent;
  t->children[MAX_CHILDREN * (size_t) parent + t->n_children[parent]++]
      = child;
}

/* Server @g's head in tree @shift of the trees for local index @j. */
static uint32_t
head_of (const Servers *sv, uint32_t g, uint32_t j, uint32_t shift)
{
  uint32_t size = sv->first[g + 1] - sv->first[g];

  return sv->member[sv->first[g] + (shift ? j + size - 1 : j) % size];
}

/* The tree whose chains start at each server's local index @j, with the
 * servers in tree @shift (0 or 1) of the double binary tree @pos_parent
 * (over server positions); tree 1's chains run the other way, from the
 * GPU before j. */
static void
tree_make (Tree *t, const Servers *sv, const uint32_t *pos_parent,
           uint32_t shift, uint32_t j, uint32_t n_ranks)
{
  for (uint32_t r = 0; r < n_ranks; r++)
    {
      t->parent[r] = G_MAXUINT32;
      t->n_children[r] = 0;
    }
  for (uint32_t g = 0; g < sv->n; g++)
    {
      uint32_t size = sv->first[g + 1] - sv->first[g];
      const uint32_t *m = sv->member + sv->first[g];
      /* The second tree's chains are the first's the other way round,
       * from the GPU before j, so that both directions between a
       * server's GPUs carry both halves. */
      uint32_t start = shift ? j + size - 1 : j, step = shift ? size - 1 : 1;
      for (uint32_t q = 1; q < size; q++)
        adopt (t, m[(start + (uint64_t) (q - 1) * step) % size],
               m[(start + (uint64_t) q * step) % size]);
    }
  for (uint32_t q = 0; q < sv->n; q++)
    if (pos_parent[q] != G_MAXUINT32)
      {
        uint32_t g = (q + shift) % sv->n, up = (pos_parent[q] + shift) % sv->n;
        adopt (t, head_of (sv, up, j, shift), head_of (sv, g, j, shift));
      }
}

/* @size bytes at @base of the buffer up and down tree @t on @tag, in
 * @chunks that follow each other: each send waits for the same
 * connection's send of the chunk before (@prev_up, @prev_down: scratch, a
 * rank's last sends). */
static void
tree_run (WeftSchedule *s, const Tree *t, uint64_t base, uint64_t size,
          uint32_t chunks, uint32_t tag, uint32_t *prev_up,
          uint32_t *prev_down)
{
  uint32_t n = s->n_gpus;

  for (uint32_t r = 0; r < n; r++)
    {
      prev_up[r] = WEFT_NO_STEP;
      for (uint32_t c = 0; c < MAX_CHILDREN; c++)
        prev_down[MAX_CHILDREN * (size_t) r + c] = WEFT_NO_STEP;
    }
  for (uint32_t k = 0; k < chunks; k++)
    {
      uint64_t bytes = weft_part (size, chunks, k);
      uint64_t at = base + weft_part_offset (size, chunks, k);
      for (uint32_t r = 0; r < n; r++)
        {
          const uint32_t *kids = t->children + MAX_CHILDREN * (size_t) r;
          /* Up: take each child's partial sum, add it, pass it on. */
          uint32_t have = WEFT_NO_STEP;
          for (uint32_t c = 0; c < t->n_children[r]; c++)
            {
              uint32_t recv = weft_schedule_recv (s, r, kids[c], tag, bytes,
                                                  WEFT_NO_STEP);
              uint32_t deps[2] = { recv, have };
              have = weft_schedule_add (s, r, WEFT_STEP_REDUCE, 0, 0, bytes,
                                        deps, 2);
              weft_schedule_region (s, r, recv, at);
              weft_schedule_region (s, r, have, at);
            }
          if (t->parent[r] != G_MAXUINT32)
            {
              uint32_t deps[2] = { have, prev_up[r] };
              prev_up[r] = weft_schedule_add (s, r, WEFT_STEP_SEND,
                                              t->parent[r], tag, bytes, deps,
                                              2);
              /* Down: the result comes back from the parent. */
              have = weft_schedule_recv (s, r, t->parent[r], tag, bytes,
                                         WEFT_NO_STEP);
              weft_schedule_region (s, r, prev_up[r], at);
              weft_schedule_region (s, r, have, at);
            }
          for (uint32_t c = 0; c < t->n_children[r]; c++)
            {
              uint32_t *prev = &prev_down[MAX_CHILDREN * (size_t) r + c];
              uint32_t deps[2] = { have, *prev };
              *prev = weft_schedule_add (s, r, WEFT_STEP_SEND, kids[c], tag,
                                         bytes, deps, 2);
              weft_schedule_region (s, r, *prev, at);
            }
        }
    }
}

/* A tree's chunks for @bytes when left to auto: NCCL moves a channel's part
 * in chunks of at least WEFT_LEAST_CHUNK, so a small buffer is one chunk
 * that goes up and down the tree whole, not pieces that each pay every
 * send's latency; at most WEFT_CHUNKS.  One rule for the three protocols,
 * whose runs share a schedule (LL128's halving stops lower, at 18,000 B). */
static uint32_t
tree_chunks (const WeftCollectiveParams *p, uint64_t bytes)
{
  if (p->chunks != 0)
    return p->chunks;
  uint64_t chunks = (bytes + WEFT_LEAST_CHUNK - 1) / WEFT_LEAST_CHUNK;
  return (uint32_t) CLAMP (chunks, 1, WEFT_CHUNKS);
}

void
weft_tree_all_reduce (WeftSchedule *s, uint64_t size,
                      const WeftCollectiveParams *p)
{
  uint32_t n = s->n_gpus;
  g_auto (Servers) sv = { 0 };

  servers_of (n, p->server, &sv);
  g_autofree uint32_t *pos_parent = g_new (uint32_t, sv.n);
  g_autofree uint32_t *parent = g_new (uint32_t, n);
  g_autofree uint32_t *n_children = g_new (uint32_t, n);
  g_autofree uint32_t *children = g_new (uint32_t, MAX_CHILDREN * (size_t) n);
  g_autofree uint32_t *prev_up = g_new (uint32_t, n);
  g_autofree uint32_t *prev_down = g_new (uint32_t, MAX_CHILDREN * (size_t) n);
  Tree t = { parent, n_children, children };
  /* Trees: across servers by default one for each GPU of a server, whose
   * chains start there (NCCL's channels start their chains beside the
   * network interfaces they use); inside one server one does. */
  uint32_t trees = p->channels ? p->channels : sv.n > 1 ? sv.widest : 1;
  /* In one server of GPUs joined directly, the chains follow the rings
   * along the links, each with its ring's share. */
  const WeftRings *rings = sv.n == 1 ? p->rings : NULL;
  uint32_t n_rings = rings ? rings->n_rings : 1;

  pos_parent[weft_tree_build (0, sv.n - 1, pos_parent)] = G_MAXUINT32;
  for (uint32_t half = 0; half < 2; half++)
    {
      /* Where ring i's share of the half begins. */
      uint64_t at = weft_part_offset (size, 2, half);
      for (uint32_t i = 0; i < n_rings; i++)
        {
          uint64_t mine = weft_part (size, 2, half);
          /* With rings, the one server's members in ring i's order. */
          Servers chains = sv;
          if (rings)
            {
              mine = weft_rings_bytes (rings, mine, i);
              chains.member = rings->order + (size_t) i * n;
            }
          for (uint32_t c = 0; c < trees; c++)
            {
              tree_make (&t, &chains, pos_parent, half, c, n);
              uint64_t part = weft_part (mine, trees, c);
              tree_run (s, &t, at + weft_part_offset (mine, trees, c), part,
                        tree_chunks (p, part),
                        (half * n_rings + i) * trees + c, prev_up, prev_down);
            }
          at += mine;
        }
    }
}

/* The tree runs anywhere; it takes each rank's server from the fabric (its
 * chains run inside them) and, for chains inside one server of GPUs joined
 * directly, the rings along the links. */
gboolean
weft_tree_fit (WeftFit *fit, WeftCollectiveParams *p, GError **error)
{
  (void) error;
  if (p == NULL)
    return TRUE;
  fit->server = weft_fit_servers (fit->topo, fit->gpus, fit->n);
  p->server = fit->server;
  fit->rings = weft_rings_find (fit->topo, fit->gpus, fit->n);
  p->rings = fit->rings;
  return TRUE;
}

/* Channels and chunks left 0 stay 0: the builder takes a channel for each
 * GPU of a server across servers (it knows the servers), one inside a
 * server, and chunks by each tree's bytes (tree_chunks()). */
void
weft_tree_defaults (WeftOp op, WeftCollectiveParams *p)
{
  (void) op;
  (void) p;
}
