/* weft: the flow fidelity.
 *
 * Each transfer is a fluid flow over its path.  When flows start or end,
 * the rates of the flows that share a link with them are recomputed by
 * progressive filling (max-min fairness), the rates of all other flows held
 * fixed; changes at the same instant are gathered into one recomputation,
 * which takes the affected flows in order of id, however it finds them.
 * A flow's last byte arrives when it has drained plus its path's latency.
 * A flow that starts alone on its links is filled alone, without touching
 * them, unless another joins it in the same instant.
 *
 * A transfer striped over several first hops is one flow over all its
 * stripes' links, each carrying its share c_l of the flow's rate r (the
 * share of the bytes its stripes put on it); a link fills when the sum of
 * c_l r over its flows reaches its capacity.  With every share 1 this is
 * plain max-min fairness.
 *
 * A link that cannot fill (see find_unfilled()) takes no part in filling:
 * it joins no flows into a group and sets no level, and its sum of rates
 * is brought up once the rates are known.
 *
 * This file holds the class and the flows' lifecycle; flow-private.h says
 * where the rest of the model is.
 */
#include "network/flow-private.h"

#include <string.h>

static WeftNetwork *
flow_create (void)
{
  FlowNet *f = g_new0 (FlowNet, 1);

  f->solver = weft_maxmin_new ();
  f->threads = 1;
  return &f->base;
}

static void
flow_destroy (WeftNetwork *net)
{
  FlowNet *f = (FlowNet *) net;

  if (f->flows != NULL)
    weft_sim_pool_place (net->sim, f->timers, NULL, 0, 0);
  for (uint32_t i = 0; i < f->flows_cap; i++)
    g_free (f->flows[i].far);
  g_aligned_free (f->flows);
  g_aligned_free (f->sides);
  if (f->links)
    for (uint32_t l = 0; l < net->n_links; l++)
      if (f->links[l].cap)
        g_free (f->links[l].flows);
  g_aligned_free (f->links);
  g_free (f->dirty_bits);
  g_free (f->unfilled);
  g_free (f->relays);
  g_free (f->found_bits);
  if (f->huge)
    g_hash_table_unref (f->huge);
  g_free (f->dirty);
  Ids *ids[] = { &f->affected, &f->sort_scratch, &f->touched,
                 &f->touched_owner,
                 &f->group_of, &f->group_start, &f->by_group,
                 &f->links_by_group, &f->link_group_start, &f->part_start };
  for (guint i = 0; i < G_N_ELEMENTS (ids); i++)
    g_free (ids[i]->v);
  weft_flow_workers_stop (f);
  weft_maxmin_free (f->solver);
  g_free (f);
}

static void drained (WeftSim *sim, void *target, void *data);

/* The rare part of mark_dirty(): room for more, the recomputation not yet
 * asked for. */
static void
dirty_slow (FlowNet *f)
{
  if (f->n_dirty == f->dirty_cap)
    {
      f->dirty_cap = f->dirty_cap ? f->dirty_cap * 2 : 64;
      f->dirty = g_renew (uint32_t, f->dirty, f->dirty_cap);
    }
  if (!f->pending)
    {
      f->pending = TRUE;
      weft_sim_schedule (f->base.sim, 0, weft_flow_recompute, f, NULL);
    }
}

static inline void
push_dirty (FlowNet *f, uint32_t entry)
{
  if (G_UNLIKELY (f->n_dirty == f->dirty_cap || !f->pending))
    dirty_slow (f);
  f->dirty[f->n_dirty++] = entry;
}

static inline void
mark_dirty (FlowNet *f, uint32_t l)
{
  if (f->links[l].mark == DIRTY)
    return;
  f->links[l].mark = DIRTY;
  f->dirty_bits[l / 64] |= (uint64_t) 1 << (l % 64);
  push_dirty (f, l);
}

/* Links that cannot fill.  A flow's path never visits a node twice, and a
 * switch or a NIC sends nothing of its own, so what leaves one over a link
 * has come in over its other links, from anywhere but the link's far end.
 * Where those links' capacities together come to no more than this link's
 * (to within rounding), they fill before it does, or with it, whatever the
 * flows: the link never sets a flow's rate, and leaving it out of filling
 * changes no rate.  In a fat-tree these are a NIC's link up to its leaf
 * (fed by one PCIe link, which NCCL's model rates below the NIC) and the
 * bundled links between the aggregation and core switches of two pods.
 * Leaving them out keeps a recomputation's groups apart: through them a
 * fat-tree's pods would chain most of its flows into groups of hundreds
 * of links.
 * Should a switch or NIC send a transfer of its own (an in-switch
 * reduction's results), the rule no longer holds and no link is left out
 * from then on (see flow_start()). */
static void
find_unfilled (FlowNet *f)
{
  const WeftTopology *topo = f->base.topo;
  const double *capacity = f->base.capacity;
  g_autofree double *in = g_new0 (double, MAX (topo->n_nodes, 1));

  f->unfilled = g_new0 (uint64_t, f->base.n_links / 64 + 1);
  f->relays = g_new0 (uint64_t, topo->n_nodes / 64 + 1);
  f->any_unfilled = FALSE;
  f->links_unfilled = 0;
  if (f->base.plain)
    return;
  for (uint32_t l = 0; l < topo->n_links; l++)
    in[topo->links[l].dst] += capacity[l];
  for (uint32_t l = 0; l < topo->n_links; l++)
    {
      const WeftLink *link = &topo->links[l];
      WeftNodeKind kind = topo->nodes[link->src].kind;
      if ((kind != WEFT_NODE_SWITCH && kind != WEFT_NODE_NIC)
          || capacity[l] <= 0)
        continue;
      double rest = in[link->src];
      uint32_t back = l ^ 1;
      if (back < topo->n_links && topo->links[back].src == link->dst
          && topo->links[back].dst == link->src)
        rest -= capacity[back];
      if (rest <= capacity[l] * (1 + 1e-12))
        {
          f->unfilled[l / 64] |= (uint64_t) 1 << (l % 64);
          f->relays[link->src / 64] |= (uint64_t) 1 << (link->src % 64);
          f->any_unfilled = TRUE;
          f->links_unfilled++;
        }
    }
}

/* A switch or NIC with links left out sends a transfer: none is left out
 * any longer.  Their sums of rates are kept whether left out or not. */
static void
unfilled_clear (FlowNet *f)
{
  memset (f->unfilled, 0,
          (f->base.n_links / 64 + 1) * sizeof (uint64_t));
  f->any_unfilled = FALSE;
  f->links_unfilled = 0;
}

static void
flow_flush (WeftNetwork *net)
{
  FlowNet *f = (FlowNet *) net;

  if (f->links)
    for (uint32_t l = 0; l < net->topo->n_links; l++)
      {
        net->stats->links[l].busy += f->links[l].busy;
        net->stats->links[l].bytes += f->links[l].bytes;
        f->links[l].busy = 0;
        f->links[l].bytes = 0;
      }
}

/* Most links carry a flow or two at a time: their lists live in the link
 * (one cache miss less wherever a link's flows are read), and longer ones
 * in an array of their own until the link is empty again.
 *
 * A flow leaving a link takes the last flow of its list into its place.
 * In a list of up to SEARCH_FLOWS (one cache line of ids, which the swap
 * reads anyway) it is found by looking; a longer list keeps each flow's
 * place in its slot for that link, and the moved flow's slot is set anew.
 * Short lists keep no slots: a slot costs, for each link a flow leaves,
 * two reads that miss the caches at scale (its slot, and the moved flow's
 * path to find which of its slots to set), and a write for each it
 * joins. */
#define SEARCH_FLOWS 16

/* Whether link @link's flows keep their places in their slots. */
static inline gboolean
slotted (const Link *link)
{
  return link->cap > SEARCH_FLOWS;
}

/* Flow @id's slot for link @l is set to @place. */
static void
set_slot (FlowNet *f, uint32_t id, uint32_t l, uint32_t place)
{
  Flow *flow = &f->flows[id];
  const uint32_t *path = flow_path (flow);

  for (uint32_t k = 0; k < flow->path_len; k++)
    if (path[k] == l)
      {
        flow_slot (f, flow)[k] = place;
        return;
      }
  g_assert_not_reached ();
}

/* Flow @id, the @k-th link of whose path is @l, joins link @l's list. */
static void
link_add (FlowNet *f, uint32_t l, uint32_t id, uint32_t k)
{
  Link *link = &f->links[l];

  if (link->n == (link->cap ? link->cap : NEAR_FLOWS))
    {
      uint32_t cap = link->n * 2;
      uint32_t *flows = g_new (uint32_t, cap);
      memcpy (flows, link_flows (link), link->n * sizeof (uint32_t));
      gboolean were = slotted (link);
      if (link->cap)
        g_free (link->flows);
      link->flows = flows;
      link->cap = cap;
      if (!were && slotted (link))
        for (uint32_t i = 0; i < link->n; i++)
          set_slot (f, flows[i], l, i);
    }
  if (slotted (link))
    flow_slot (f, &f->flows[id])[k] = link->n;
  link_flows (link)[link->n++] = id;
}

/* The bytes the starting transfer puts on its @i-th link. */
static inline uint64_t
link_bytes_at (const WeftNetwork *net, uint32_t i)
{
  uint64_t bytes;

  memcpy (&bytes, (const char *) net->starting.link_bytes + i * sizeof bytes,
          sizeof bytes);
  return bytes;
}

/* The bytes a striped flow of @bytes puts on a link where its share is
 * @share (as flow_start() worked it out, carried / bytes): carried again,
 * exactly, for a flow of fewer than HUGE_FLOW bytes.  share is carried /
 * bytes within a relative 2^-53 and the product adds as much, so
 * share * bytes lies within carried * 2^-52 of carried: within 2^-4 while
 * carried < 2^48.  Adding 0.5 there rounds by at most 2^-6, and
 * truncating gives carried.  A flow of more bytes (256 TiB) keeps what its
 * links carry in f->huge. */
#define HUGE_FLOW ((uint64_t) 1 << 48)

static inline uint64_t
carried_bytes (double share, uint64_t bytes)
{
  return (uint64_t) (share * (double) bytes + 0.5);
}

static void
flow_start (WeftNetwork *net, uint32_t id)
{
  FlowNet *f = (FlowNet *) net;
  const WeftTransfer *t = &net->transfers[id];

  if (f->links == NULL)
    {
      uint32_t n = MAX (net->n_links, 1);
      f->links = g_aligned_alloc0 (n, sizeof (Link), 64);
      f->dirty_bits = g_new0 (uint64_t, n / 64 + 1);
      for (uint32_t l = 0; l < net->n_links; l++)
        f->links[l].capacity = net->capacity[l];
      find_unfilled (f);
    }
  if (G_UNLIKELY (f->any_unfilled
                  && ((f->relays[t->src / 64] >> (t->src % 64)) & 1)))
    unfilled_clear (f);
  if (id >= f->flows_cap)
    {
      uint32_t cap = MAX (net->transfers_cap, id + 1);
      Flow *flows = g_aligned_alloc0 (cap, sizeof (Flow), 64);
      FlowSide *sides = g_aligned_alloc (cap, sizeof (FlowSide), 64);
      if (f->flows_cap > 0)
        {
          memcpy (flows, f->flows, f->flows_cap * sizeof (Flow));
          memcpy (sides, f->sides, f->flows_cap * sizeof (FlowSide));
        }
      if (f->flows == NULL)
        f->timers = weft_sim_pool_new (net->sim, drained, f);
      g_aligned_free (f->flows);
      g_aligned_free (f->sides);
      f->flows = flows;
      f->sides = sides;
      g_free (f->found_bits);   /* clear between recomputations */
      f->found_bits = g_new0 (uint64_t, cap / 64 + 1);
      f->flows_cap = cap;
      weft_sim_pool_place (net->sim, f->timers, flows, sizeof (Flow),
                           G_STRUCT_OFFSET (Flow, timer));
    }

  Flow *flow = &f->flows[id];
  flow->rate = 0;
  flow->remaining = (double) t->bytes;
  flow->updated = weft_sim_now (net->sim);
  flow->capped = t->cap > 0;
  if (t->path_len > NEAR_LINKS
      && (flow->far == NULL || ((size_t) 1 << flow->room_log2) < t->path_len))
    {
      /* Shares, links and slots side by side: one buffer, kept. */
      uint8_t lg = 4;
      while (((size_t) 1 << lg) < t->path_len)
        lg++;
      flow->room_log2 = lg;
      flow->far = g_realloc_n (flow->far, (size_t) 1 << lg,
                               sizeof (double) + 2 * sizeof (uint32_t));
    }
  flow->path_len = t->path_len;
  uint32_t *path = flow_path (flow);
  memcpy (path, net->starting.links, t->path_len * sizeof (uint32_t));
  gboolean unit = t->path_len <= NEAR_LINKS;
  for (uint32_t i = 0; unit && t->striped && i < t->path_len; i++)
    unit = link_bytes_at (net, i) == t->bytes;
  flow->unit = unit;
  if (!unit)
    {
      double *share = t->path_len <= NEAR_LINKS ? flow_side (f, flow)->share
                                                : flow->far;
      if (net->starting.shares != NULL)
        memcpy (share, net->starting.shares, t->path_len * sizeof (double));
      else
        for (uint32_t i = 0; i < t->path_len; i++)
          share[i] = t->striped ? (double) link_bytes_at (net, i)
                                      / (double) t->bytes
                                : 1.0;
      if (t->striped && t->bytes >= HUGE_FLOW)
        {
          if (f->huge == NULL)
            f->huge = g_hash_table_new_full (NULL, NULL, NULL, g_free);
          g_hash_table_insert (f->huge, GUINT_TO_POINTER (id),
                               g_memdup2 (net->starting.link_bytes,
                                          t->path_len * sizeof (uint64_t)));
        }
    }

  /* A flow on links no other flow crosses and none has changed in this
   * instant is marked fresh and goes in the dirty list itself instead of
   * its links: the recomputation fills it alone if it still is.  (A flow
   * that joins it later marks the shared links.) */
  gboolean alone = !net->plain;
  for (uint32_t i = 0; alone && i < t->path_len; i++)
    {
      const Link *link = &f->links[path[i]];
      alone = link->n == 0 && link->mark != DIRTY;
    }
  for (uint32_t i = 0; i < t->path_len; i++)
    {
      link_add (f, path[i], id, i);
      if (!alone)
        mark_dirty (f, path[i]);
    }
  flow->fresh = alone && t->path_len > 0;
  if (flow->fresh)
    push_dirty (f, id | ALONE);
}

/* Flow @id has sent its last byte: off its links, its transfer done. */
static void
drain_one (FlowNet *f, uint32_t id, WeftTime now)
{
  Flow *flow = &f->flows[id];
  const WeftTransfer *t = &f->base.transfers[id];
  const uint32_t *path = flow_path (flow);
  const double *share = flow_share (f, flow);
  const uint64_t *huge = NULL;
  if (G_UNLIKELY (t->bytes >= HUGE_FLOW && t->striped && !flow->unit))
    huge = g_hash_table_lookup (f->huge, GUINT_TO_POINTER (id));

  /* Closing each link's rate segment spreads bytes over its bins: fetch
   * their records, then their last bins, ahead. */
  gboolean bins = f->base.stats->bin_width > 0;
  if (bins)
    for (uint32_t i = 0; i < flow->path_len; i++)
      weft_link_stats_prefetch_record (f->base.stats, path[i]);
  for (uint32_t i = 0; i < flow->path_len; i++)
    {
      uint32_t l = path[i];
      Link *link = &f->links[l];
      if (bins && i + 2 < flow->path_len)
        weft_link_stats_prefetch_bins (f->base.stats, path[i + 2]);
      close_segment (f, l, now);
      link->bytes += flow->unit || !t->striped ? t->bytes
                     : huge != NULL ? huge[i]
                                    : carried_bytes (share[i], t->bytes);
      link->rate_sum -= flow->rate * share[i];
      if (link->rate_sum < 0 || link->n == 1)
        link->rate_sum = 0;
      /* Swap the last flow of the list into this one's place. */
      uint32_t *flows = link_flows (link), s;
      if (slotted (link))
        s = flow_slot (f, flow)[i];
      else
        for (s = 0; flows[s] != id; s++)
          g_assert (s + 1 < link->n);
      uint32_t moved = flows[--link->n];
      flows[s] = moved;
      if (moved != id && slotted (link))
        set_slot (f, moved, l, s);
      /* A link left empty has no rate to recompute, nor a mark that a
       * recomputation would leave as it is. */
      if (link->n > 0)
        mark_dirty (f, l);
      else
        {
          link->mark = 0;
          f->dirty_bits[l / 64] &= ~((uint64_t) 1 << (l % 64));
          if (link->cap)
            {
              g_free (link->flows);
              link->cap = 0;
            }
        }
    }
  if (huge != NULL)
    g_hash_table_remove (f->huge, GUINT_TO_POINTER (id));
  flow->rate = 0;
  flow->path_len = 0;           /* not in flight: see find_by_scan() */
  weft_network_complete (&f->base, id, f->base.transfers[id].latency);
}

/* Flows drained at once, at most. */
#define DRAIN_BATCH 16

/* How far ahead in a batch its flows' links, and their lists of flows,
 * are fetched. */
#define DRAIN_LINKS_AHEAD 4
#define DRAIN_LISTS_AHEAD 2

static void
drained (WeftSim *sim, void *target, void *data)
{
  FlowNet *f = target;
  WeftTime now = weft_sim_now (sim);
  uint32_t batch[DRAIN_BATCH], n = 1;

  /* Flows drain together in a collective's lockstep instants, and at
   * scale each one's record, links and lists of flows are cache misses:
   * the drained events that come next, at this time, are taken up with
   * this one (in the order they would have run), and each flow's record
   * and its transfer's, then its links, then their lists are fetched
   * while the flows before it are done. */
  batch[0] = GPOINTER_TO_UINT (data);
  while (n < DRAIN_BATCH && weft_sim_pool_take (sim, f->timers, &batch[n]))
    n++;
  if (!f->base.deep)
    {
      /* A loop of its own: a shallow network has nothing to fetch, and
       * one loop for both would test the depth at each flow and carry
       * the fetching's code and registers through it. */
      for (uint32_t i = 0; i < n; i++)
        drain_one (f, batch[i], now);
      return;
    }
  for (uint32_t i = 1; i < n; i++)
    {
      const Flow *flow = &f->flows[batch[i]];
      __builtin_prefetch (flow);
      __builtin_prefetch (flow->path);
      __builtin_prefetch (&f->base.transfers[batch[i]]);
    }
  for (uint32_t i = 0; i < n; i++)
    {
      if (i + DRAIN_LINKS_AHEAD < n)
        {
          Flow *ahead = &f->flows[batch[i + DRAIN_LINKS_AHEAD]];
          const uint32_t *path = flow_path (ahead);
          for (uint32_t k = 0; k < ahead->path_len; k++)
            __builtin_prefetch (&f->links[path[k]]);
          if (!ahead->unit)
            __builtin_prefetch (f->sides[batch[i + DRAIN_LINKS_AHEAD]].share);
        }
      if (i + DRAIN_LISTS_AHEAD < n)
        {
          Flow *ahead = &f->flows[batch[i + DRAIN_LISTS_AHEAD]];
          const uint32_t *path = flow_path (ahead);
          for (uint32_t k = 0; k < ahead->path_len; k++)
            prefetch_flows (&f->links[path[k]]);
        }
      drain_one (f, batch[i], now);
    }
}

static void
flow_prefetch (WeftNetwork *net, const uint32_t *links, uint32_t n)
{
  FlowNet *f = (FlowNet *) net;

  if (f->links != NULL)
    for (uint32_t i = 0; i < n; i++)
      __builtin_prefetch (&f->links[links[i]]);
}

static void
flow_set_scan (WeftNetwork *net, WeftScan scan)
{
  ((FlowNet *) net)->scan = scan;
}

static void
flow_set_threads (WeftNetwork *net, uint32_t threads)
{
  ((FlowNet *) net)->threads = threads;
}

uint32_t
weft_flow_links_unfilled (const WeftNetwork *net)
{
  return net->klass == &weft_network_flow_class
             ? ((const FlowNet *) net)->links_unfilled
             : 0;
}

const WeftNetworkClass weft_network_flow_class = {
  .name = "flow",
  .create = flow_create,
  .start = flow_start,
  .destroy = flow_destroy,
  .flush = flow_flush,
  .prefetch = flow_prefetch,
  .set_scan = flow_set_scan,
  .set_threads = flow_set_threads,
  .counts_bytes = TRUE,
  .whole_stripes = TRUE,
  .link_state = sizeof (Link) + sizeof (uint64_t),
  .transfer_state = sizeof (Flow) + sizeof (FlowSide),
  /* Its place in each link's list of flows, which grows by doubling; a
   * path longer than NEAR_LINKS: its shares, links and slots in `far`. */
  .path_state = 2 * sizeof (uint32_t),
  .near_links = NEAR_LINKS,
  .far_state = sizeof (double) + 2 * sizeof (uint32_t),
};
