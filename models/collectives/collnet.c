/* weft: CollNet all_reduce with SHARP, NCCL's CollNet Direct (src/device/
 * all_reduce.h, runRing... ncclPatternCollnetDirect; the SHARP plugin
 * nccl-rdma-sharp-plugins): inside each server every GPU scatters its
 * buffer to the server's heads, one a GPU here (NCCL's heads are the GPUs
 * beside the NICs, all of them on a DGX), head j adding up slice j of the
 * server's GPUs; each head sends its sum through its NIC into the
 * network, whose switches add up what their children send and pass the
 * sum on up an aggregation tree; the tree's root sends the total back
 * down the same tree, each switch to its children; each head then sends
 * its slice to the server's other GPUs.  Across servers each slice
 * crosses a NIC once each way, where a ring crosses it 2 (n - 1) / n
 * times.
 *
 * The aggregation tree is the routes from every GPU to one switch at the
 * top of the network (the first of the highest tier), each switch's
 * parent the next switch on the first route through it: the routes
 * to one destination of destination-based routing (D-mod-k) form a tree.
 * Every switch on it must reduce (reduce_bandwidth above 0, SHARP's
 * aggregation nodes).  The switches are ranks n .. n + m - 1. */
#include "collectives/collective-private.h"

#include "topology/routing.h"
#include "topology/tiers.h"

/* The first node, by number, at the upper end of a link of the highest
 * tier of the network chain: the top of the fabric (a spine, a core
 * switch; a single switch's own). */
static uint32_t
top_switch (const WeftTopology *topo)
{
  g_autoptr (WeftTiers) tiers = weft_tiers_new (topo);
  int32_t top = -1;

  for (uint32_t t = 0; t < tiers->n_tiers && top < 0; t++)
    if (g_strcmp0 (tiers->tiers[t].name, "GPU-NIC") == 0)
      top = (int32_t) t;
  while (top >= 0 && tiers->tiers[top].above >= 0)
    top = tiers->tiers[top].above;
  if (top < 0)
    return WEFT_NONE;
  uint32_t best = WEFT_NONE;
  for (uint32_t l = 0; l < topo->n_links; l++)
    {
      uint32_t dst = topo->links[l].dst;
      if (tiers->of_link[l] == (uint32_t) top && tiers->up[l]
          && topo->nodes[dst].kind == WEFT_NODE_SWITCH)
        best = MIN (best, dst);
    }
  return best;
}

static gboolean
unfit (GError **error, const char *format, ...) G_GNUC_PRINTF (2, 3);

static gboolean
unfit (GError **error, const char *format, ...)
{
  va_list args;

  va_start (args, format);
  g_autofree char *what = g_strdup_vprintf (format, args);
  va_end (args);
  g_set_error (error, WEFT_SCHEDULE_ERROR, WEFT_SCHEDULE_ERROR_UNFIT,
               "collnet %s", what);
  return FALSE;
}

/* While the tree's root has one child, a switch, make that its root: the
 * aggregation tree spans the switches its GPUs need (all of them under
 * one leaf: the leaf alone).  @parent holds the n GPUs' and the switches'
 * parents, the switches in @fit->nodes from @first on; both shrink. */
static void
prune_root (WeftFit *fit, GArray *parent, uint32_t n, guint first)
{
  uint32_t ranks = parent->len;
  uint32_t *up = (uint32_t *) parent->data;
  g_autofree uint32_t *children = g_new0 (uint32_t, ranks);
  g_autofree uint32_t *only = g_new (uint32_t, ranks);
  g_autofree uint32_t *index = g_new (uint32_t, ranks);
  g_autofree gboolean *gone = g_new0 (gboolean, ranks);
  uint32_t root = WEFT_NONE;

  for (uint32_t x = 0; x < ranks; x++)
    {
      if (up[x] == WEFT_NONE)
        root = x;
      else
        {
          children[up[x]]++;
          only[up[x]] = x;
        }
    }
  while (children[root] == 1 && only[root] >= n)
    {
      gone[root] = TRUE;
      root = only[root];
      up[root] = WEFT_NONE;
    }
  /* Renumber the switches left, in order. */
  uint32_t kept = 0;
  for (uint32_t x = 0; x < ranks; x++)
    if (!gone[x])
      index[x] = kept++;
  kept = n;
  for (uint32_t x = n; x < ranks; x++)
    if (!gone[x])
      {
        g_array_index (fit->nodes, uint32_t, first + (kept - n))
            = g_array_index (fit->nodes, uint32_t, first + (x - n));
        up[kept++] = up[x];
      }
  for (uint32_t x = 0; x < kept; x++)
    if (up[x] != WEFT_NONE)
      up[x] = index[up[x]];
  g_array_set_size (fit->nodes, first + (kept - n));
  g_array_set_size (parent, kept);
}

gboolean
weft_collnet_fit (WeftFit *fit, WeftCollectiveParams *p, GError **error)
{
  const WeftTopology *topo = fit->topo;
  uint32_t n = fit->n;

  if (n / MAX (fit->local, 1) < 2)
    return unfit (error, "needs GPUs in two servers or more");
  uint32_t root = top_switch (topo);
  if (root == WEFT_NONE)
    return unfit (error, "needs a network of switches between the servers");
  g_autoptr (WeftRouting) routing = weft_routing_new (topo);
  g_autoptr (GArray) links = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  g_autoptr (GHashTable) rank_of = g_hash_table_new (NULL, NULL);
  g_autoptr (GArray) parent = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  guint first = fit->nodes->len;
  double rate = G_MAXDOUBLE;    /* B/s, GPU 0's way to the top */

  g_array_set_size (parent, n);
  for (uint32_t r = 0; r < n; r++)
    {
      if (!weft_routing_path (routing, fit->gpus[r], root, 0, links))
        return unfit (error, "needs every GPU to reach the top of the network: "
                      "%s does not reach %s", topo->nodes[fit->gpus[r]].name,
                      topo->nodes[root].name);
      /* The switches after the route enters the network, each the parent
       * of the one before, until one already on the tree. */
      uint32_t below = r;
      gboolean in_network = FALSE;
      for (guint i = 0; i < links->len; i++)
        {
          const WeftLink *l = &topo->links[g_array_index (links, uint32_t, i)];
          const WeftLinkType *t = g_ptr_array_index (topo->link_types,
                                                     l->type);
          if (r == 0)
            rate = MIN (rate, weft_link_nccl_rate (topo, l));
          in_network |= t->family == WEFT_FAMILY_NETWORK;
          if (!in_network || topo->nodes[l->dst].kind != WEFT_NODE_SWITCH)
            continue;
          gpointer found;
          gboolean known = g_hash_table_lookup_extended (
              rank_of, GUINT_TO_POINTER (l->dst), NULL, &found);
          uint32_t at = known ? GPOINTER_TO_UINT (found) : n + fit->nodes->len
                                                             - first;
          g_array_index (parent, uint32_t, below) = at;
          if (known)
            {
              below = WEFT_NONE;
              break;
            }
          if (topo->nodes[l->dst].device->reduce_bandwidth <= 0)
            return unfit (error, "needs switches that reduce (SHARP: "
                          "reduce_bandwidth above 0) between the servers: %s "
                          "has none", topo->nodes[l->dst].name);
          g_hash_table_insert (rank_of, GUINT_TO_POINTER (l->dst),
                               GUINT_TO_POINTER (at));
          g_array_append_val (fit->nodes, l->dst);
          uint32_t none = WEFT_NONE;
          g_array_append_val (parent, none);
          below = at;
        }
      if (below == r)
        return unfit (error, "needs every GPU's route to the top of the "
                      "network to cross it: %s's does not",
                      topo->nodes[fit->gpus[r]].name);
    }
  if (p == NULL)
    {
      g_array_set_size (fit->nodes, first);
      return TRUE;
    }
  prune_root (fit, parent, n, first);
  g_free (fit->parent);
  fit->parent = (uint32_t *) g_array_free (g_steal_pointer (&parent), FALSE);
  p->n_switches = fit->nodes->len - first;
  p->parent = fit->parent;
  /* Pieces by size, as NVLS's: each send into and out of the network
   * waits CollNet's latency, and a head's slice crosses its way into the
   * network once each way. */
  if (p->chunks == 0 && p->channels <= 1)
    p->chunks = weft_fit_pieces (
        (double) weft_protocol_get (WEFT_PROTOCOL_SIMPLE, WEFT_ALG_COLLNET)
                ->hop_network * 1e-12,
        (double) fit->size / MAX (fit->local, 1) / rate);
  return TRUE;
}

uint32_t
weft_collnet_switch_ranks (uint32_t n, const WeftCollectiveParams *p)
{
  (void) n;
  return p->n_switches;
}

/* Each rank's children on the tree, in rank order: CSR in @start and
 * @child. */
static void
children_of (const uint32_t *parent, uint32_t ranks, uint32_t *start,
             uint32_t *child)
{
  memset (start, 0, sizeof (uint32_t) * (ranks + 1));
  for (uint32_t x = 0; x < ranks; x++)
    if (parent[x] != WEFT_NONE)
      start[parent[x] + 1]++;
  for (uint32_t x = 0; x < ranks; x++)
    start[x + 1] += start[x];
  g_autofree uint32_t *fill = g_memdup2 (start, sizeof (uint32_t) * ranks);
  for (uint32_t x = 0; x < ranks; x++)
    if (parent[x] != WEFT_NONE)
      child[fill[parent[x]]++] = x;
}

void
weft_collnet_all_reduce (WeftSchedule *s, uint64_t size,
                         const WeftCollectiveParams *p)
{
  uint32_t n = s->n_gpus, local = MAX (p->local, 1), servers = n / local;
  uint32_t ranks = n + p->n_switches, pieces = p->channels * p->chunks;
  const uint32_t *parent = p->parent;
  g_autofree uint32_t *own = NULL;
  g_autofree uint32_t *start = g_new (uint32_t, ranks + 1);
  g_autofree uint32_t *child = g_new (uint32_t, MAX (ranks, 1));
  /* Per rank, its last send to each of its server's GPUs, scattering and
   * gathering, up the tree and down to each child: a connection's pieces
   * go in order. */
  g_autofree uint32_t *to_head = g_new (uint32_t, (size_t) n * local);
  g_autofree uint32_t *from_head = g_new (uint32_t, (size_t) n * local);
  g_autofree uint32_t *up = g_new (uint32_t, ranks);
  g_autofree uint32_t *down = g_new (uint32_t, ranks);
  g_autofree uint32_t *deps = g_new (uint32_t, MAX (ranks, local) + 1);
  g_autofree uint32_t *sum = g_new (uint32_t, ranks);
  g_autofree uint32_t *got_down = g_new (uint32_t, ranks);
  /* Whether a rank carries slice j: its heads of index j, and the switches
   * on their way to the root (ranks by ranks, slice by slice). */
  g_autofree gboolean *on_slice = g_new0 (gboolean, (size_t) local * ranks);

  /* Without a fabric's tree (a schedule made alone), the switches' first
   * is the root of the others, and server g's GPUs are under switch g mod
   * the switches. */
  if (parent == NULL)
    {
      uint32_t m = p->n_switches;
      g_assert (m > 0);
      own = g_new (uint32_t, ranks);
      for (uint32_t r = 0; r < n; r++)
        own[r] = n + (r / local) % m;
      own[n] = WEFT_NONE;
      for (uint32_t x = n + 1; x < ranks; x++)
        own[x] = n;
      parent = own;
    }
  children_of (parent, ranks, start, child);
  for (size_t i = 0; i < (size_t) n * local; i++)
    to_head[i] = from_head[i] = WEFT_NO_STEP;
  for (uint32_t x = 0; x < ranks; x++)
    up[x] = down[x] = WEFT_NO_STEP;
  for (uint32_t j = 0; j < local; j++)
    for (uint32_t g = 0; g < servers; g++)
      for (uint32_t x = g * local + j;
           x != WEFT_NONE && !on_slice[(size_t) j * ranks + x]; x = parent[x])
        on_slice[(size_t) j * ranks + x] = TRUE;
  /* Piece by piece, each slice's piece k in turn: the connections the
   * slices share (a switch's up and down the tree) carry them in the order
   * they come. */
  for (uint32_t k = 0; k < pieces; k++)
    for (uint32_t j = 0; j < local; j++)
      {
        const gboolean *on = on_slice + (size_t) j * ranks;
        uint64_t slice = weft_part (size, local, j);
        uint64_t slice_at = weft_part_offset (size, local, j);
        uint64_t bytes = weft_part (slice, pieces, k);
        uint64_t at = slice_at + weft_part_offset (slice, pieces, k);
        if (bytes == 0)
          continue;
        /* Each server's GPUs scatter piece k of slice j to head j,
         * which adds them to its own. */
        for (uint32_t g = 0; g < servers; g++)
          {
            uint32_t head = g * local + j, n_deps = 0;
            for (uint32_t i = 0; i < local; i++)
              {
                uint32_t r = g * local + i;
                if (i == j)
                  continue;
                uint32_t *last = &to_head[(size_t) r * local + j];
                *last = weft_schedule_send (s, r, head, 0, bytes, *last);
                weft_schedule_region (s, r, *last, at);
                deps[n_deps] = weft_schedule_recv (s, head, r, 0, bytes,
                                                   WEFT_NO_STEP);
                weft_schedule_region (s, head, deps[n_deps++], at);
              }
            sum[head] = WEFT_NO_STEP;
            if (n_deps > 0)
              {
                sum[head] = weft_schedule_add (s, head, WEFT_STEP_REDUCE, 0,
                                               0, bytes, deps, n_deps);
                weft_schedule_region (s, head, sum[head], at);
              }
          }
        /* Up the tree: each rank's receives from its children, their
         * sum, and its send to its parent. */
        for (uint32_t x = 0; x < ranks; x++)
          {
            if (!on[x])
              continue;
            if (x >= n)
              {
                uint32_t n_deps = 0;
                for (uint32_t c = start[x]; c < start[x + 1]; c++)
                  {
                    uint32_t y = child[c];
                    if (!on[y])
                      continue;
                    deps[n_deps] = weft_schedule_recv (s, x, y, 0, bytes,
                                                       WEFT_NO_STEP);
                    weft_schedule_region (s, x, deps[n_deps++], at);
                  }
                sum[x] = deps[0];
                if (n_deps > 1)
                  {
                    sum[x] = weft_schedule_add (s, x, WEFT_STEP_REDUCE, 0,
                                                0, bytes, deps, n_deps);
                    weft_schedule_region (s, x, sum[x], at);
                  }
              }
            if (parent[x] == WEFT_NONE)
              continue;
            uint32_t after[2] = { sum[x], up[x] };
            uint32_t m = 0;
            for (int d = 0; d < 2; d++)
              if (after[d] != WEFT_NO_STEP)
                after[m++] = after[d];
            up[x] = weft_schedule_add (
                s, x, WEFT_STEP_SEND, parent[x], 0, bytes, after, m);
            weft_schedule_region (s, x, up[x], at);
          }
        /* Down the tree: each rank's receive from its parent (the
         * root's own sum), and its sends to its children. */
        for (uint32_t x = 0; x < ranks; x++)
          {
            if (!on[x])
              continue;
            uint32_t have = sum[x];
            if (parent[x] != WEFT_NONE)
              {
                have = got_down[x] = weft_schedule_recv (
                    s, x, parent[x], 0, bytes, up[x]);
                weft_schedule_region (s, x, have, at);
              }
            for (uint32_t c = start[x]; c < start[x + 1]; c++)
              {
                uint32_t y = child[c];
                if (!on[y])
                  continue;
                uint32_t after[2] = { have, down[y] };
                down[y] = weft_schedule_add (
                    s, x, WEFT_STEP_SEND, y, 0, bytes, after,
                    down[y] == WEFT_NO_STEP ? 1 : 2);
                weft_schedule_region (s, x, down[y], at);
              }
          }
        /* Each head hands the total to its server's other GPUs. */
        for (uint32_t g = 0; g < servers; g++)
          {
            uint32_t head = g * local + j;
            for (uint32_t i = 0; i < local; i++)
              {
                uint32_t r = g * local + i;
                if (i == j)
                  continue;
                uint32_t *last = &from_head[(size_t) head * local + i];
                uint32_t after[2] = { got_down[head], *last };
                *last = weft_schedule_add (s, head, WEFT_STEP_SEND, r, 0,
                                           bytes, after,
                                           *last == WEFT_NO_STEP ? 1 : 2);
                weft_schedule_region (s, head, *last, at);
                weft_schedule_region (
                    s, r, weft_schedule_recv (s, r, head, 0, bytes,
                                              WEFT_NO_STEP),
                    at);
              }
          }
      }
}
