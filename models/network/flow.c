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
 * Transfers in flight on the same path, with the same shares and cap, are
 * one flow of as many members, a bundle (flow-private.h): a transfer that
 * starts on such a path joins the bundle there, counted at its rate until
 * the filling of the instant, and a bundle whose first member drains
 * completes every member whose time has come, then fills again with the
 * rest.  What follows says "flow" for a bundle.
 *
 * This file holds the class and the flows' lifecycle; flow-private.h says
 * where the rest of the model is.
 */
#include "network/flow-private.h"

#include <math.h>
#include <string.h>

static WeftNetwork *
flow_create (void)
{
  FlowNet *f = g_new0 (FlowNet, 1);

  f->solver = weft_maxmin_new ();
  f->threads = 1;
  f->bundling = TRUE;
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
  g_free (f->members);
  g_free (f->owner);
  g_free (f->start_share);
  Ids *ids[] = { &f->spare, &f->done, &f->affected,
                 &f->sort_scratch, &f->touched, &f->touched_owner,
                 &f->group_of, &f->group_start, &f->by_group,
                 &f->links_by_group, &f->link_group_start, &f->part_start };
  for (guint i = 0; i < G_N_ELEMENTS (ids); i++)
    g_free (ids[i]->v);
  weft_flow_workers_stop (f);
  weft_maxmin_free (f->solver);
  g_free (f);
}

static void drained (WeftSim *sim, void *target, void *data);
static void leave (FlowNet *f, uint32_t b, uint32_t gone);

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

/* The bundle, if any, that a transfer over @path (@len links) with
 * shares @share (unit: all 1) and cap @cap joins: one on the same links in
 * the same order, with the same shares and cap.  Looked for in the list
 * of whichever of its end links has fewer flows. */
static uint32_t
find_bundle (FlowNet *f, const uint32_t *path, uint32_t len,
             const double *share, gboolean unit, double cap)
{
  const Link *first = &f->links[path[0]], *last = &f->links[path[len - 1]];
  const Link *link = last->n < first->n ? last : first;
  const uint32_t *flows = link_flows (link);

  for (uint32_t i = 0; i < link->n; i++)
    {
      Flow *b = &f->flows[flows[i]];
      if (b->path_len != len || b->unit != unit
          || b->capped != (cap > 0)
          || memcmp (flow_path (b), path, len * sizeof (uint32_t)) != 0
          || (!unit && memcmp (flow_share (f, b), share,
                               len * sizeof (double)) != 0)
          || (cap > 0
              && f->base.transfers[b->head].cap != cap))
        continue;
      return flows[i];
    }
  return WEFT_NONE;
}

/* Room for bundle ids below @n. */
static void
bundles_reserve (FlowNet *f, uint32_t n)
{
  WeftNetwork *net = &f->base;

  if (n <= f->flows_cap)
    return;
  uint32_t cap = MAX (MAX (net->transfers_cap, n), f->flows_cap * 2);
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
  g_free (f->found_bits);       /* clear between recomputations */
  f->found_bits = g_new0 (uint64_t, cap / 64 + 1);
  f->flows_cap = cap;
  weft_sim_pool_place (net->sim, f->timers, flows, sizeof (Flow),
                       G_STRUCT_OFFSET (Flow, timer));
}

/* The id of a new bundle whose first member is transfer @id: @id itself
 * where no bundle holds it, so that a bundle of one, the most common, sits
 * where its transfer's flow would (a source reuses its transfers' ids, and
 * their records stay in the caches); else a spare one above the
 * transfers' ids.  A bundle holds the id of a member that has ended until
 * its last member ends. */
static uint32_t
new_bundle (FlowNet *f, uint32_t id)
{
  uint32_t b = id;

  bundles_reserve (f, id + 1);
  if (f->flows[b].mult != 0)
    {
      b = WEFT_NONE;
      while (b == WEFT_NONE && f->spare.n > 0)
        {
          uint32_t s = f->spare.v[--f->spare.n];
          if (f->flows[s].mult == 0)
            b = s;
        }
      if (b == WEFT_NONE)
        {
          b = MAX (f->n_bundles, f->base.transfers_cap);
          bundles_reserve (f, b + 1);
        }
    }
  f->n_bundles = MAX (f->n_bundles, b + 1);
  return b;
}

/* Bundle @flow's served bytes brought up to @now at its rate. */
static inline void
serve (Flow *flow, WeftTime now)
{
  flow->served += flow->rate * (double) (now - flow->updated) * 1e-12;
  flow->updated = now;
}

/* Transfer @id, of @bytes, joins bundle @b: placed among its members by
 * tag; returns whether it comes first.  A bundle of one keeps its member
 * in the flow alone (head and head_tag): its member's record, and its
 * side's tail, are written only once a second joins. */
static gboolean
member_add (FlowNet *f, uint32_t b, uint32_t id, uint64_t bytes)
{
  Flow *flow = &f->flows[b];
  double tag = flow->served + (double) bytes;

  if (flow->mult++ == 0)
    {
      flow->head = id;
      flow->head_tag = tag;
      return TRUE;
    }
  FlowSide *side = flow_side (f, flow);
  Member *m = &f->members[id];
  if (flow->mult == 2)
    {
      f->members[flow->head].tag = flow->head_tag;
      f->members[flow->head].next = WEFT_NONE;
      side->tail = flow->head;
    }
  m->tag = tag;
  m->next = WEFT_NONE;
  /* Members mostly join in order of tag: after the last. */
  if (f->members[side->tail].tag <= tag)
    {
      f->members[side->tail].next = id;
      side->tail = id;
      return FALSE;
    }
  if (tag < flow->head_tag)
    {
      m->next = flow->head;
      flow->head = id;
      flow->head_tag = tag;
      return TRUE;
    }
  uint32_t at = flow->head;
  while (f->members[f->members[at].next].tag <= tag)
    at = f->members[at].next;
  m->next = f->members[at].next;
  f->members[at].next = id;
  return FALSE;
}

static void
flow_start (WeftNetwork *net, uint32_t id)
{
  FlowNet *f = (FlowNet *) net;
  const WeftTransfer *t = &net->transfers[id];
  WeftTime now = weft_sim_now (net->sim);

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
  if (id >= f->members_cap)
    {
      f->members_cap = MAX (net->transfers_cap, id + 1);
      f->members = g_renew (Member, f->members, f->members_cap);
    }

  /* Its shares: all 1 but for a striped transfer's links, each the part
   * of its bytes that link carries. */
  const uint32_t *links = net->starting.links;
  gboolean unit = t->path_len <= NEAR_LINKS;
  for (uint32_t i = 0; unit && t->striped && i < t->path_len; i++)
    unit = link_bytes_at (net, i) == t->bytes;
  const double *share = unit_shares;
  if (!unit)
    {
      if (t->path_len > f->start_share_cap)
        {
          f->start_share_cap = MAX (t->path_len, 2 * f->start_share_cap);
          f->start_share = g_renew (double, f->start_share,
                                    f->start_share_cap);
        }
      if (net->starting.shares != NULL)
        memcpy (f->start_share, net->starting.shares,
                t->path_len * sizeof (double));
      else
        for (uint32_t i = 0; i < t->path_len; i++)
          f->start_share[i] = t->striped ? (double) link_bytes_at (net, i)
                                               / (double) t->bytes
                                         : 1.0;
      share = f->start_share;
    }
  if (t->striped && !unit && t->bytes >= HUGE_FLOW)
    {
      if (f->huge == NULL)
        f->huge = g_hash_table_new_full (NULL, NULL, NULL, g_free);
      g_hash_table_insert (f->huge, GUINT_TO_POINTER (id),
                           g_memdup2 (net->starting.link_bytes,
                                      t->path_len * sizeof (uint64_t)));
    }

  uint32_t b = f->bundling && t->path_len > 0
                   ? find_bundle (f, links, t->path_len, share, unit, t->cap)
                   : WEFT_NONE;
  if (b != WEFT_NONE)
    {
      /* One more member: counted at the bundle's rate on its links until
       * the recomputation of this instant (which fills it again), its
       * tag what the others have been served by now plus its bytes. */
      Flow *flow = &f->flows[b];
      const uint32_t *path = flow_path (flow);
      prefetch_stats (f, path, t->path_len);
      serve (flow, now);
      if (member_add (f, b, id, t->bytes) && flow->timer.pending)
        weft_sim_pool_cancel (net->sim, f->timers, b);
      gboolean alone = !net->plain;
      for (uint32_t i = 0; i < t->path_len; i++)
        {
          Link *link = &f->links[path[i]];
          close_segment (f, path[i], now);
          link->rate_sum += flow->rate * share[i];
          alone = alone && link->n == 1 && link->mark != DIRTY;
        }
      if (alone)
        {
          if (!flow->fresh)
            push_dirty (f, b | ALONE);
          flow->fresh = TRUE;
        }
      else
        for (uint32_t i = 0; i < t->path_len; i++)
          mark_dirty (f, path[i]);
      return;
    }

  b = new_bundle (f, id);
  Flow *flow = &f->flows[b];
  flow->rate = 0;
  flow->served = 0;
  flow->updated = now;
  flow->capped = t->cap > 0;
  flow->mult = 0;
  member_add (f, b, id, t->bytes);
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
  memcpy (path, links, t->path_len * sizeof (uint32_t));
  flow->unit = unit;
  if (!unit)
    memcpy (t->path_len <= NEAR_LINKS ? flow_side (f, flow)->share
                                      : flow->far,
            share, t->path_len * sizeof (double));

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
      link_add (f, path[i], b, i);
      if (!alone)
        mark_dirty (f, path[i]);
    }
  flow->fresh = alone && t->path_len > 0;
  if (flow->fresh)
    push_dirty (f, b | ALONE);
}

/* Member @id of bundle @flow has sent its last byte: its bytes go to its
 * links' counts, its transfer is done. */
static void
member_done (FlowNet *f, Flow *flow, uint32_t id)
{
  const WeftTransfer *t = &f->base.transfers[id];
  const uint32_t *path = flow_path (flow);

  if (flow->unit || !t->striped)
    for (uint32_t i = 0; i < flow->path_len; i++)
      f->links[path[i]].bytes += t->bytes;
  else if (G_UNLIKELY (t->bytes >= HUGE_FLOW))
    {
      const uint64_t *huge = g_hash_table_lookup (f->huge,
                                                  GUINT_TO_POINTER (id));
      for (uint32_t i = 0; i < flow->path_len; i++)
        f->links[path[i]].bytes += huge[i];
      g_hash_table_remove (f->huge, GUINT_TO_POINTER (id));
    }
  else
    {
      const double *share = flow_share (f, flow);
      for (uint32_t i = 0; i < flow->path_len; i++)
        f->links[path[i]].bytes += carried_bytes (share[i], t->bytes);
    }
  ids_push (&f->done, id);
}

/* The transfers that ended in this instant's drained bundles are done in
 * order of id, whichever bundles they were members of: what waits on
 * them (a GPU's reductions, one after another) then takes them in the
 * same order as if each had been a flow of its own, its timer set in
 * order of id. */
static void
complete_done (FlowNet *f)
{
  weft_flow_sort_ids (&f->done, &f->sort_scratch, f->base.n_transfers);
  const uint32_t *v = f->done.v;
  for (uint32_t i = 0; i < f->done.n; i++)
    weft_network_complete (&f->base, v[i], f->base.transfers[v[i]].latency);
  f->done.n = 0;
}

/* Bundle @b's timer: its first member has sent its last byte, and with
 * it any other whose own drain time has come (as its own timer would
 * have fired now).  A bundle left with members counts fewer on its links,
 * which changed; an empty one leaves them. */
static void
drain_one (FlowNet *f, uint32_t b, WeftTime now)
{
  Flow *flow = &f->flows[b];
  const uint32_t *path = flow_path (flow);
  uint32_t done = 0;

  prefetch_stats (f, path, flow->path_len);
  for (uint32_t i = 0; i < flow->path_len; i++)
    close_segment (f, path[i], now);
  do
    {
      uint32_t id = flow->head;
      flow->mult--;
      done++;
      if (flow->mult > 0)
        {
          flow->head = f->members[id].next;
          flow->head_tag = f->members[flow->head].tag;
        }
      member_done (f, flow, id);
    }
  while (flow->mult > 0
         && flow->updated
                    + (WeftTime) ceil (MAX (flow->head_tag - flow->served, 0)
                                       * 1e12 / flow->rate)
                <= now);
  serve (flow, now);
  leave (f, b, done);
}

/* @gone members of bundle @b have left it: its links carry less of it, and
 * an empty bundle leaves them. */
static void
leave (FlowNet *f, uint32_t b, uint32_t gone)
{
  Flow *flow = &f->flows[b];
  const uint32_t *path = flow_path (flow);
  const double *share = flow_share (f, flow);

  for (uint32_t i = 0; i < flow->path_len; i++)
    {
      uint32_t l = path[i];
      Link *link = &f->links[l];
      link->rate_sum -= flow->rate * share[i] * gone;
      if (link->rate_sum < 0 || (link->n == 1 && flow->mult == 0))
        link->rate_sum = 0;
      if (flow->mult > 0)
        {
          mark_dirty (f, l);
          continue;
        }
      /* Swap the last flow of the list into this one's place. */
      uint32_t *flows = link_flows (link), s;
      if (slotted (link))
        s = flow_slot (f, flow)[i];
      else
        for (s = 0; flows[s] != b; s++)
          g_assert (s + 1 < link->n);
      uint32_t moved = flows[--link->n];
      flows[s] = moved;
      if (moved != b && slotted (link))
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
  if (flow->mult == 0)
    {
      flow->rate = 0;
      flow->path_len = 0;       /* not in flight: see find_by_scan() */
      flow->fresh = FALSE;
      if (b >= f->base.transfers_cap)
        ids_push (&f->spare, b);
    }
}

/* A link's capacity changes: its flows are filled anew, and no link is
 * left out of filling any more (find_unfilled() reasoned from the old
 * capacities). */
static void
flow_relink (WeftNetwork *net, uint32_t l, double old_capacity)
{
  FlowNet *f = (FlowNet *) net;
  (void) old_capacity;

  if (f->links == NULL)
    return;                     /* read from net->capacity at the first */
  f->links[l].capacity = net->capacity[l];
  if (f->any_unfilled)
    unfilled_clear (f);
  if (f->links[l].n > 0)
    mark_dirty (f, l);
}

/* Member @id leaves its bundle with what it has not been served: the
 * bytes it carried so far go to its links' counts. */
static uint64_t
flow_withdraw (WeftNetwork *net, uint32_t id, gboolean lost, gboolean *keeps)
{
  FlowNet *f = (FlowNet *) net;
  const WeftTransfer *t = &net->transfers[id];
  WeftTime now = weft_sim_now (net->sim);
  uint32_t prev = WEFT_NONE;

  (void) lost;                  /* a fluid loses nothing */
  *keeps = FALSE;
  /* Members do not say whose they are: once a phase, every bundle says.
   * (Transfers that start meanwhile are on the new routes, and stay.) */
  if (f->owner == NULL || f->owner_phase != net->phase)
    {
      f->owner_phase = net->phase;
      f->owner_len = net->n_transfers;
      f->owner = g_renew (uint32_t, f->owner, MAX (f->owner_len, 1));
      memset (f->owner, 0xff, f->owner_len * sizeof (uint32_t));
      for (uint32_t k = 0; k < f->n_bundles; k++)
        {
          const Flow *flow = &f->flows[k];
          uint32_t m = flow->head;
          for (uint32_t c = 0; flow->path_len > 0 && c < flow->mult; c++)
            {
              f->owner[m] = k;
              m = f->members[m].next;
            }
        }
    }
  uint32_t b = id < f->owner_len ? f->owner[id] : WEFT_NONE;
  if (b == WEFT_NONE)
    return 0;
  Flow *flow = &f->flows[b];
  for (uint32_t m = flow->head; m != id; m = f->members[m].next)
    prev = m;
  const uint32_t *path = flow_path (flow);
  const double *share = flow_share (f, flow);
  serve (flow, now);
  double tag = id == flow->head ? flow->head_tag : f->members[id].tag;
  uint64_t left = CLAMP ((uint64_t) ceil (MAX (tag - flow->served, 0)), 1,
                         t->bytes);
  uint64_t carried = t->bytes - left;
  for (uint32_t i = 0; i < flow->path_len; i++)
    {
      close_segment (f, path[i], now);
      f->links[path[i]].bytes += flow->unit || !t->striped
                                     ? carried
                                     : carried_bytes (share[i], carried);
    }
  if (f->huge != NULL)
    g_hash_table_remove (f->huge, GUINT_TO_POINTER (id));
  if (id == flow->head)
    {
      if (flow->timer.pending)
        weft_sim_pool_cancel (net->sim, f->timers, b);
      if (flow->mult > 1)
        {
          flow->head = f->members[id].next;
          flow->head_tag = f->members[flow->head].tag;
        }
    }
  else
    {
      f->members[prev].next = f->members[id].next;
      if (flow_side (f, flow)->tail == id)
        flow_side (f, flow)->tail = prev;
    }
  flow->mult--;
  leave (f, b, 1);
  weft_network_release (net, id);
  return left;
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
      complete_done (f);
      return;
    }
  for (uint32_t i = 1; i < n; i++)
    {
      const Flow *flow = &f->flows[batch[i]];
      __builtin_prefetch (flow);
      __builtin_prefetch (flow->path);
    }
  for (uint32_t i = 0; i < n; i++)
    {
      if (i + DRAIN_LINKS_AHEAD < n)
        {
          Flow *ahead = &f->flows[batch[i + DRAIN_LINKS_AHEAD]];
          const uint32_t *path = flow_path (ahead);
          for (uint32_t k = 0; k < ahead->path_len; k++)
            __builtin_prefetch (&f->links[path[k]]);
          __builtin_prefetch (&f->base.transfers[ahead->head]);
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
  complete_done (f);
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

static void
flow_set_bundles (WeftNetwork *net, gboolean bundles)
{
  ((FlowNet *) net)->bundling = bundles;
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
  .set_bundles = flow_set_bundles,
  .relink = flow_relink,
  .withdraw = flow_withdraw,
  .counts_bytes = TRUE,
  .whole_stripes = TRUE,
  .link_state = sizeof (Link) + sizeof (uint64_t),
  .transfer_state = sizeof (Flow) + sizeof (FlowSide) + sizeof (Member),
  /* Its place in each link's list of flows, which grows by doubling; a
   * path longer than NEAR_LINKS: its shares, links and slots in `far`. */
  .path_state = 2 * sizeof (uint32_t),
  .near_links = NEAR_LINKS,
  .far_state = sizeof (double) + 2 * sizeof (uint32_t),
};
