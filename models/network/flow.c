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
 */
#include "network/flow-private.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "network/maxmin.h"
#include "union_find.h"

/* Groups of more flows than this fetch their flows and links ahead as
 * they are filled, not all at once before: links this far ahead of the
 * one being read, flows this far. */
#define FETCH_GROUP 16
#define FILL_LINKS_AHEAD 16
#define FILL_FLOWS_AHEAD 8

/* Paths of up to this many links are kept in the flow itself, and its
 * links in its second cache line.  A path between pods of a three-level
 * fat-tree is ten links (GPU to PCIe switch to NIC at each end, six
 * through the switches): behind a pointer, every read of it waited on
 * the flow's first line before it could even be asked for. */
#define NEAR_LINKS 12

/* A flow fills two cache lines and a link one: at scale every flow and
 * link a recomputation visits is a cache miss, so what it reads of them is
 * kept together (a flow's path beside its figures, not behind a pointer),
 * and what only filling needs lives in the solver's arrays.  What a
 * recomputation does not read of a flow is in its FlowSide: kept in the flow, those two
 * lines more made halving-doubling over 16,384 GPUs 3% slower. */
typedef struct {
  _Alignas (64) double rate;    /* B/s */
  double remaining;             /* bytes not yet sent */
  double old_rate;              /* during a recomputation */
  WeftTime updated;             /* when remaining was last brought up */
  WeftPoolTimer timer;          /* drained */
  double *far;                  /* a longer path's shares, links and slots:
                                   see flow_share(), flow_path() and
                                   flow_slot() */
  uint8_t room_log2;            /* far holds 2^room_log2 links */
  uint8_t capped;               /* its transfer's cap applies */
  uint8_t unit;                 /* each of its links carries all its bytes:
                                   its shares are unit_shares, and its
                                   side's share[] is never read */
  /* The links its transfer crosses: its second line, with what else a
   * scan for the flows a change affects reads (see find_by_scan()), so
   * that a flow the change does not touch costs it one line. */
  _Alignas (64) uint32_t path[NEAR_LINKS];
  uint32_t path_len;
  uint8_t fresh;                /* it started alone since the last
                                   recomputation (see flow_start()) */
} Flow;

/* What only a flow's start and end read of it, and only on links with long
 * lists (where it sits in them), and filling only if it is striped (its
 * shares), in an array beside the flows, by the same id. */
typedef struct {
  _Alignas (64) uint32_t slot[NEAR_LINKS]; /* its index in each one's list
                                              of flows, kept for lists
                                              longer than SEARCH_FLOWS */
  _Alignas (64) double share[NEAR_LINKS];  /* per path link: its part of the
                                              rate */
} FlowSide;

/* Lists of up to this many flows are kept in the link itself. */
#define NEAR_FLOWS 2

typedef struct {
  _Alignas (64) union {
    uint32_t *flows;            /* cap > 0: the live flows crossing it */
    uint32_t near[NEAR_FLOWS];  /* cap == 0: the same, in the link */
  };
  uint32_t n, cap;
  double rate_sum;              /* B/s of those flows */
  double capacity;              /* B/s, the network's */
  WeftTime last;                /* start of the current rate segment */
  WeftTime busy;                /* ps it carried anything, and */
  uint64_t bytes;               /* bytes of the flows that have crossed it,
                                   not yet in the statistics (their line is
                                   another miss) */
  uint32_t mark;                /* DIRTY alone: a flow started or ended on it
                                   since the last recomputation; the epoch of
                                   the last that touched it, with DIRTY if it
                                   was changed then (so that nothing need
                                   clear the mark afterwards) */
  uint32_t at;                  /* during a recomputation: its position among
                                   the touched links; while its group fills,
                                   among the group's */
} Link;

#define DIRTY 0x80000000u
#define ALONE 0x80000000u       /* a dirty-list entry that is a flow */

G_STATIC_ASSERT (sizeof (Flow) == 128 && G_STRUCT_OFFSET (Flow, path) == 64
                 && sizeof (FlowSide) == 192 && sizeof (Link) == 64);

/* Link @link's live flows, wherever they are kept. */
static inline uint32_t *
link_flows (const Link *link)
{
  return link->cap ? link->flows : (uint32_t *) link->near;
}

/* Fetch link @link's list of flows, if it is not in the link. */
static inline void
prefetch_flows (const Link *link)
{
  if (link->cap)
    __builtin_prefetch (link->flows);
}

static const double unit_shares[] = { 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1 };
G_STATIC_ASSERT (G_N_ELEMENTS (unit_shares) == NEAR_LINKS);

/* A growable array of ids. */
typedef struct {
  uint32_t *v;
  uint32_t n, cap;
} Ids;

static void
ids_resize (Ids *a, uint32_t n)
{
  if (n > a->cap)
    {
      a->cap = MAX (n, a->cap * 2);
      a->v = g_renew (uint32_t, a->v, a->cap);
    }
  a->n = n;
}

static inline void
ids_push (Ids *a, uint32_t id)
{
  if (a->n == a->cap)
    {
      a->cap = a->cap ? a->cap * 2 : 64;
      a->v = g_renew (uint32_t, a->v, a->cap);
    }
  a->v[a->n++] = id;
}

typedef struct _Worker Worker;

typedef struct {
  WeftNetwork base;
  Flow *flows;                  /* by transfer id */
  FlowSide *sides;              /* the same */
  uint32_t flows_cap;
  uint32_t timers;              /* the engine's pool of the flows' timers */
  Link *links;
  uint64_t *dirty_bits;         /* a bit per link: DIRTY in its mark (a
                                   scan reads these, not the links) */
  uint64_t *unfilled;           /* a bit per link: it cannot fill */
  uint64_t *relays;             /* a bit per node: links out of it are in
                                   unfilled, which holds while it sends
                                   nothing of its own */
  gboolean any_unfilled;
  uint32_t *dirty;              /* links, and flows that started alone
                                   (id | ALONE), that changed */
  uint32_t n_dirty, dirty_cap;
  gboolean pending;             /* a recomputation is scheduled */
  uint32_t epoch;
  uint64_t *found_bits;         /* a bit per flow slot: found affected
                                   (all clear between recomputations) */
  Ids affected;                 /* flow ids, ascending */
  Ids sort_scratch;              /* sort_ids()'s */
  Ids touched;                  /* link ids */
  Ids touched_owner;            /* per touched link: an affected flow on it */
  WeftMaxmin *solver;           /* the simulating thread's */
  Ids group_of, group_start;    /* grouping: per affected flow, per group */
  Ids by_group, links_by_group; /* affected flows and touched links, grouped */
  Ids link_group_start;
  Worker *workers;              /* threads that fill groups too */
  uint32_t n_workers;
  Ids part_start;               /* parts of the sorted groups, taken up in
                                   turn by whichever thread is free */
  atomic_uint next_part;
  uint64_t recomputations;
  WeftScan scan;                /* how the affected flows are found
                                   (weft_network_set_scan()) */
  uint32_t threads;             /* that may fill groups (1: this one) */
  uint32_t links_unfilled;      /* links left out of filling: see
                                   find_unfilled() */
  GHashTable *huge;             /* striped flows of HUGE_FLOW bytes or more:
                                   id -> the bytes each link carries */
} FlowNet;

/* A flow's per-link arrays: its links in the flow, its slots and shares
 * beside it, or for a longer path all three in one buffer of its own
 * (shares, then links, then slots); the shares of a flow whose every link
 * carries all its bytes (any but a striped transfer's) are all 1, and
 * multiplying or dividing by them changes nothing. */
static inline FlowSide *
flow_side (const FlowNet *f, const Flow *flow)
{
  return &f->sides[flow - f->flows];
}

static inline const double *
flow_share (const FlowNet *f, const Flow *flow)
{
  return flow->unit                      ? unit_shares
         : flow->path_len <= NEAR_LINKS ? flow_side (f, flow)->share
                                         : flow->far;
}

static inline uint32_t *
flow_path (Flow *flow)
{
  return flow->path_len <= NEAR_LINKS
             ? flow->path
             : (uint32_t *) (flow->far + ((size_t) 1 << flow->room_log2));
}

static inline uint32_t *
flow_slot (const FlowNet *f, Flow *flow)
{
  return flow->path_len <= NEAR_LINKS
             ? flow_side (f, flow)->slot
             : flow_path (flow) + ((size_t) 1 << flow->room_log2);
}

static WeftNetwork *
flow_create (void)
{
  FlowNet *f = g_new0 (FlowNet, 1);

  f->solver = weft_maxmin_new ();
  f->threads = 1;
  return &f->base;
}

static void workers_stop (FlowNet *f);

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
    for (uint32_t l = 0; l < net->topo->n_links; l++)
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
  if (f->workers != NULL)
    workers_stop (f);
  weft_maxmin_free (f->solver);
  g_free (f);
}

static void recompute (WeftSim *sim, void *target, void *data);
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
      weft_sim_schedule (f->base.sim, 0, recompute, f, NULL);
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

/* During a recomputation: link @l changed since the one before. */
static inline gboolean
link_dirty (const FlowNet *f, uint32_t l)
{
  return (f->dirty_bits[l / 64] >> (l % 64)) & 1;
}

static inline gboolean
cannot_fill (const FlowNet *f, uint32_t l)
{
  return (f->unfilled[l / 64] >> (l % 64)) & 1;
}

/* Links that cannot fill.  A flow's path never visits a node twice, and a
 * switch or a NIC sends nothing of its own, so what leaves one over a link
 * has come in over its other links, from anywhere but the link's far end.
 * Where those links' capacities together come to no more than this link's
 * (to within rounding), they fill before it does, or with it, whatever the
 * flows: the link never sets a flow's rate, and leaving it out of filling
 * changes no rate.  In a fat-tree these are a NIC's link up to its leaf
 * (fed by one PCIe link, which NCCL's model rates below the NIC) and the
 * bundled links between the aggregation and core switches of two pods;
 * without them a recomputation's groups stay apart (at 16,384 GPUs, most
 * flows filled were in groups chained through them, of hundreds of links).
 * Should a switch or NIC send a transfer of its own (an in-switch
 * reduction's results), the rule no longer holds and no link is left out
 * from then on (see flow_start()). */
static void
find_unfilled (FlowNet *f)
{
  const WeftTopology *topo = f->base.topo;
  const double *capacity = f->base.capacity;
  g_autofree double *in = g_new0 (double, MAX (topo->n_nodes, 1));

  f->unfilled = g_new0 (uint64_t, topo->n_links / 64 + 1);
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
          (f->base.topo->n_links / 64 + 1) * sizeof (uint64_t));
  f->any_unfilled = FALSE;
  f->links_unfilled = 0;
}

/* Close link @l's current rate segment at @now: its bytes go to the bins. */
static inline void
close_segment (FlowNet *f, uint32_t l, WeftTime now)
{
  Link *link = &f->links[l];

  if (now > link->last && link->rate_sum > 0)
    {
      if (f->base.stats->bin_width > 0)
        weft_link_stats_spread (f->base.stats, l, link->last, now,
                                link->rate_sum * (double) (now - link->last)
                                    * 1e-12);
      link->busy += now - link->last;
    }
  link->last = now;
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
 * Keeping the slots of every list cost two reads that miss the caches at
 * scale for each link a flow leaves (its slot, and the moved flow's path to
 * find which of its slots to set) and a write for each it joins. */
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
      uint32_t n = MAX (net->topo->n_links, 1);
      f->links = g_aligned_alloc0 (n, sizeof (Link), 64);
      f->dirty_bits = g_new0 (uint64_t, n / 64 + 1);
      for (uint32_t l = 0; l < net->topo->n_links; l++)
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
      /* A loop of its own: one loop for both, testing depth inside it,
       * measured about 10% slower at 16,384 GPUs. */
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

/* Fill the @n_aff affected flows @affected, which cross the @n_touched
 * links @touched, with solver @m, the other flows held fixed: each link
 * that can fill is given to it with what the fixed flows leave of its
 * capacity, and each flow with the rate it had, still counted on its
 * links.  A large group's links and flows are fetched here, a few ahead
 * (see fill_range()). */
static void
fill (FlowNet *f, WeftMaxmin *m, const uint32_t *affected, uint32_t n_aff,
      const uint32_t *touched, uint32_t n_touched)
{
  gboolean ahead = n_aff > FETCH_GROUP;
  uint32_t n_links = 0, hops = 0;

  weft_maxmin_reset (m);
  weft_maxmin_reserve (m, n_touched, n_aff, 0);
  WeftMaxminLink *ml = m->links;
  for (uint32_t i = 0; i < n_touched; i++)
    {
      if (ahead && i + FILL_LINKS_AHEAD < n_touched)
        __builtin_prefetch (&f->links[touched[i + FILL_LINKS_AHEAD]]);
      if (cannot_fill (f, touched[i]))
        continue;
      Link *link = &f->links[touched[i]];
      link->at = n_links;
      ml[n_links].residual = link->capacity - link->rate_sum;
      ml[n_links].load = link->rate_sum;
      ml[n_links++].id = touched[i];
    }
  for (uint32_t i = 0; i < n_aff; i++)
    {
      if (ahead && i + FILL_FLOWS_AHEAD < n_aff)
        {
          const Flow *next = &f->flows[affected[i + FILL_FLOWS_AHEAD]];
          __builtin_prefetch (next);
          __builtin_prefetch (next->path);
          __builtin_prefetch (f->sides[affected[i + FILL_FLOWS_AHEAD]].share);
        }
      Flow *flow = &f->flows[affected[i]];
      const uint32_t *path = flow_path (flow);
      const double *share = flow_share (f, flow);
      if (G_UNLIKELY (hops + flow->path_len > m->hops_room))
        weft_maxmin_reserve (m, 0, 0, hops + flow->path_len);
      uint32_t *hop_link = m->hop_link;
      double *hop_share = m->hop_share;
      m->first[i] = hops;
      m->cap[i] = flow->capped ? f->base.transfers[affected[i]].cap : 0;
      m->held[i] = flow->old_rate = flow->rate;
      for (uint32_t k = 0; k < flow->path_len; k++)
        if (!cannot_fill (f, path[k]))
          {
            hop_link[hops] = f->links[path[k]].at;
            hop_share[hops++] = share[k];
          }
    }
  m->first[n_aff] = hops;
  m->n_links = n_links;
  m->n_flows = n_aff;
  m->n_hops = hops;

  weft_maxmin_solve (m);
  for (uint32_t i = 0; i < n_aff; i++)
    f->flows[affected[i]].rate = m->rate[i];
  for (uint32_t j = 0; j < n_links; j++)
    f->links[ml[j].id].rate_sum = ml[j].load;
}

/* Whether the @n flows (two or more) all cross the same links, in the same
 * order, with the same shares, and none has a cap: see fill_path(). */
static gboolean
all_same (const FlowNet *f, const uint32_t *flows, uint32_t n)
{
  Flow *first = &f->flows[flows[0]];
  const uint32_t *path = flow_path (first);
  const double *share = flow_share (f, first);

  if (first->capped)
    return FALSE;
  for (uint32_t j = 1; j < n; j++)
    {
      Flow *flow = &f->flows[flows[j]];
      if (flow->capped || flow->path_len != first->path_len)
        return FALSE;
      const uint32_t *p = flow_path (flow);
      const double *s = flow_share (f, flow);
      for (uint32_t k = 0; k < first->path_len; k++)
        if (p[k] != path[k] || s[k] != share[k])
          return FALSE;
    }
  return TRUE;
}

/* fill() for one flow that shares none of its links with another affected
 * flow, or for @n that all_same() accepts (a rank's successive sends to one
 * peer, in flight together): they rise together, and when the first of
 * their links fills, or the one flow reaches its cap, all of them freeze
 * there.  The same operations as fill(), in the same order, without a
 * heap: the rates and the links' sums are fill()'s to the last bit. */
static void
fill_path (FlowNet *f, const uint32_t *flows, uint32_t n)
{
  Flow *first = &f->flows[flows[0]];
  const uint32_t *path = flow_path (first);
  const double *share = flow_share (f, first);
  double level = first->capped ? f->base.transfers[flows[0]].cap : INFINITY;

  for (uint32_t k = 0; k < first->path_len; k++)
    {
      if (cannot_fill (f, path[k]))
        continue;
      Link *link = &f->links[path[k]];
      double residual = link->capacity - link->rate_sum, weight = 0;
      for (uint32_t j = 0; j < n; j++)
        {
          double rate = f->flows[flows[j]].rate;
          residual += rate * share[k];
          link->rate_sum -= rate * share[k];
          weight += share[k];
        }
      level = MIN (level, MAX (residual, 0) / weight);
    }
  for (uint32_t k = 0; k < first->path_len; k++)
    if (!cannot_fill (f, path[k]))
      for (uint32_t j = 0; j < n; j++)
        f->links[path[k]].rate_sum += level * share[k];
  for (uint32_t j = 0; j < n; j++)
    {
      Flow *flow = &f->flows[flows[j]];
      flow->old_rate = flow->rate;
      flow->rate = level;
    }
}

/* Fill groups @g0 to @g1 of the sorted ones (see fill_groups()) with
 * solver @m. */
static void
fill_range (FlowNet *f, WeftMaxmin *m, uint32_t g0, uint32_t g1)
{
  const uint32_t *fs = f->group_start.v, *ls = f->link_group_start.v;
  const uint32_t *flows = f->by_group.v, *links = f->links_by_group.v;

  for (uint32_t g = g0; g < g1; g++)
    {
      uint32_t a = g > 0 ? fs[g - 1] : 0, l = g > 0 ? ls[g - 1] : 0;
      /* At scale each group's flows and links are cache misses: fetch the
       * next group's (a flow's figures, path and shares), if it is small;
       * a large one fetches its own as it goes (fetching it whole here
       * would push this one's out). */
      if (g + 1 < g1 && fs[g + 1] - fs[g] <= FETCH_GROUP)
        {
          for (uint32_t i = fs[g]; i < fs[g + 1]; i++)
            {
              const Flow *flow = &f->flows[flows[i]];
              __builtin_prefetch (flow);
              __builtin_prefetch (flow->path);
              __builtin_prefetch (f->sides[flows[i]].share);
            }
          for (uint32_t i = ls[g]; i < ls[g + 1]; i++)
            __builtin_prefetch (&f->links[links[i]]);
        }
      if (fs[g] - a == 1 || all_same (f, flows + a, fs[g] - a))
        fill_path (f, flows + a, fs[g] - a);
      else
        fill (f, m, flows + a, fs[g] - a, links + l, ls[g] - l);
    }
}

/* ---- threads that fill groups too ---- */

/* Groups share no link and no flow, so threads can fill them at once,
 * each with scratch of its own, and the rates are the same to the last bit
 * whichever thread fills a group.  Below this many affected flows handing
 * groups over costs more than it saves. */
#define PARALLEL_FLOWS 1024

struct _Worker {
  FlowNet *f;
  pthread_t thread;
  pthread_mutex_t lock;         /* POSIX's, which thread checkers know */
  pthread_cond_t cond;
  gboolean posted;              /* set by the simulating thread, cleared
                                   by the worker when the parts are all
                                   taken and its own filled */
  gboolean quit;
  WeftMaxmin *solver;
};

/* Fill parts of the groups with solver @m until none is left. */
static void
fill_parts (FlowNet *f, WeftMaxmin *m)
{
  const uint32_t *ps = f->part_start.v;
  uint32_t n_parts = f->part_start.n - 1;

  for (uint32_t p; (p = atomic_fetch_add (&f->next_part, 1)) < n_parts;)
    fill_range (f, m, ps[p], ps[p + 1]);
}

static void *
worker_main (void *data)
{
  Worker *k = data;

  pthread_mutex_lock (&k->lock);
  for (;;)
    {
      while (!k->posted && !k->quit)
        pthread_cond_wait (&k->cond, &k->lock);
      if (!k->posted)
        break;
      pthread_mutex_unlock (&k->lock);
      fill_parts (k->f, k->solver);
      pthread_mutex_lock (&k->lock);
      k->posted = FALSE;
      pthread_cond_signal (&k->cond);
    }
  pthread_mutex_unlock (&k->lock);
  return NULL;
}

static void
workers_start (FlowNet *f)
{
  f->n_workers = f->threads - 1;
  f->workers = g_new0 (Worker, f->n_workers);
  for (uint32_t i = 0; i < f->n_workers; i++)
    {
      Worker *k = &f->workers[i];
      k->f = f;
      k->solver = weft_maxmin_new ();
      pthread_mutex_init (&k->lock, NULL);
      pthread_cond_init (&k->cond, NULL);
      if (pthread_create (&k->thread, NULL, worker_main, k) != 0)
        g_error ("weft: cannot start a thread");
    }
}

static void
workers_stop (FlowNet *f)
{
  for (uint32_t i = 0; i < f->n_workers; i++)
    {
      Worker *k = &f->workers[i];
      pthread_mutex_lock (&k->lock);
      k->quit = TRUE;
      pthread_cond_signal (&k->cond);
      pthread_mutex_unlock (&k->lock);
      pthread_join (k->thread, NULL);
      pthread_mutex_destroy (&k->lock);
      pthread_cond_destroy (&k->cond);
      weft_maxmin_free (k->solver);
    }
  g_free (f->workers);
}

/* Parts of the groups per thread: enough that a thread that finds its
 * parts slower to fill (the other's caches hold what was just taken)
 * takes fewer, few enough that taking one costs nothing.  Each part
 * holds whole groups, one at least. */
#define PARTS_PER_THREAD 16

/* Fill the @n_groups sorted groups on this thread and the workers, each
 * taking up the next part of them when it is free. */
static void
fill_parallel (FlowNet *f, uint32_t n_groups)
{
  const uint32_t *fs = f->group_start.v, *ls = f->link_group_start.v;
  uint64_t total = (uint64_t) f->affected.n + f->touched.n;

  if (f->workers == NULL)
    workers_start (f);
  uint32_t threads = f->n_workers + 1, most = threads * PARTS_PER_THREAD;
  ids_resize (&f->part_start, most + 1);
  uint32_t *ps = f->part_start.v, n_parts = 0;
  ps[0] = 0;
  for (uint32_t p = 1, g = 0; p < most && g < n_groups; p++)
    {
      uint64_t share = total * p / most;
      while (g < n_groups && (uint64_t) fs[g] + ls[g] < share)
        g++;
      g = MIN (g + 1, n_groups);
      ps[++n_parts] = g;
    }
  if (ps[n_parts] < n_groups)
    ps[++n_parts] = n_groups;
  f->part_start.n = n_parts + 1;
  atomic_store (&f->next_part, 0);
  for (uint32_t t = 1; t < threads; t++)
    {
      Worker *k = &f->workers[t - 1];
      pthread_mutex_lock (&k->lock);
      k->posted = TRUE;
      pthread_cond_signal (&k->cond);
      pthread_mutex_unlock (&k->lock);
    }
  fill_parts (f, f->solver);
  for (uint32_t t = 1; t < threads; t++)
    {
      Worker *k = &f->workers[t - 1];
      pthread_mutex_lock (&k->lock);
      while (k->posted)
        pthread_cond_wait (&k->cond, &k->lock);
      pthread_mutex_unlock (&k->lock);
    }
}

/* Fill the affected flows in groups that share no touched link, each
 * alone: many small heaps instead of one over every touched link (in a
 * collective's lockstep instants thousands of flows change together, on
 * links of their own).  Groups come from the union-find recompute() builds
 * over the flows as it finds them, each link joining those that cross it;
 * flows and links keep their relative order within a group, so the rates
 * are those of one filling of all. */
static void
fill_groups (FlowNet *f)
{
  const uint32_t *affected = f->affected.v, *touched = f->touched.v;
  const uint32_t *owner = f->touched_owner.v;
  uint32_t n_aff = f->affected.n, n_touched = f->touched.n;
  uint32_t *parent = f->group_of.v;

  /* Number the groups in order of their first flow; parent[] becomes the
   * group.  A flow's parent never comes after it (roots are their groups'
   * first flows), so it is numbered by then. */
  uint32_t n_groups = 0;
  for (uint32_t i = 0; i < n_aff; i++)
    parent[i] = parent[i] == i ? n_groups++ : parent[parent[i]];
  if (n_groups == 1)
    {
      /* One flow alone may have touched no link: see recompute(). */
      if (n_aff == 1 || all_same (f, affected, n_aff))
        fill_path (f, affected, n_aff);
      else
        fill (f, f->solver, affected, n_aff, touched, n_touched);
      return;
    }

  /* Counting sorts, stable: flows, then links, by group. */
  ids_resize (&f->group_start, n_groups + 1);
  ids_resize (&f->link_group_start, n_groups + 1);
  uint32_t *fs = f->group_start.v, *ls = f->link_group_start.v;
  memset (fs, 0, (n_groups + 1) * sizeof (uint32_t));
  memset (ls, 0, (n_groups + 1) * sizeof (uint32_t));
  for (uint32_t i = 0; i < n_aff; i++)
    fs[parent[i] + 1]++;
  for (uint32_t i = 0; i < n_touched; i++)
    ls[parent[owner[i]] + 1]++;
  for (uint32_t g = 0; g < n_groups; g++)
    {
      fs[g + 1] += fs[g];
      ls[g + 1] += ls[g];
    }
  ids_resize (&f->by_group, n_aff);
  ids_resize (&f->links_by_group, n_touched);
  for (uint32_t i = 0; i < n_aff; i++)
    f->by_group.v[fs[parent[i]]++] = affected[i];
  for (uint32_t i = 0; i < n_touched; i++)
    f->links_by_group.v[ls[parent[owner[i]]]++] = touched[i];

  /* fs[g] and ls[g] now end group g. */
  if (f->threads > 1 && n_aff >= PARALLEL_FLOWS)
    fill_parallel (f, n_groups);
  else
    fill_range (f, f->solver, 0, n_groups);
}

/* Recomputation: flow @id is affected (its own group until joined), its
 * byte count brought up to now at the old rate.  Returns its place. */
static inline uint32_t
affect (FlowNet *f, uint32_t id, Flow *flow, WeftTime now, gboolean grouping)
{
  uint32_t i = f->affected.n;

  ids_push (&f->affected, id);
  if (grouping)
    ids_push (&f->group_of, i);
  flow->remaining -= flow->rate * (double) (now - flow->updated) * 1e-12;
  flow->updated = now;
  return i;
}

/* Recomputation: flow @id, found to cross a changed link or to have
 * started alone, is affected (taken in order of id); it touches its
 * links, and joins the group of the first affected flow on each. */
static inline void
take (FlowNet *f, uint32_t id, WeftTime now, gboolean grouping)
{
  Flow *flow = &f->flows[id];
  const uint32_t *path = flow_path (flow);

  if (flow->fresh)
    {
      flow->fresh = FALSE;
      gboolean still = TRUE;
      for (uint32_t p = 0; still && p < flow->path_len; p++)
        still = f->links[path[p]].n == 1;
      if (still)
        {
          /* Still alone: a group of its own, filled by fill_path(), which
           * needs none of its links touched. */
          affect (f, id, flow, now, grouping);
          for (uint32_t p = 0; p < flow->path_len; p++)
            close_segment (f, path[p], now);
          return;
        }
    }
  uint32_t i = affect (f, id, flow, now, grouping);
  uint32_t joined = WEFT_NONE;  /* flows on one path join one owner on each
                                   link: once is enough */
  for (uint32_t p = 0; p < flow->path_len; p++)
    {
      uint32_t t = path[p];
      Link *link = &f->links[t];
      if ((link->mark & ~DIRTY) != f->epoch)
        {
          link->mark = f->epoch | (link->mark == DIRTY ? DIRTY : 0);
          link->at = f->touched.n;
          close_segment (f, t, now);
          ids_push (&f->touched, t);
          ids_push (&f->touched_owner, i);
        }
      else if (grouping && f->touched_owner.v[link->at] != joined
               && !cannot_fill (f, t))
        {
          joined = f->touched_owner.v[link->at];
          weft_union (f->group_of.v, i, joined);
        }
    }
}

/* Sort @a's ids, all below @hi, ascending: least significant digit first,
 * in as few passes as digits of up to 11 bits allow, each digit about as
 * wide as the count of ids (a recomputation may find a few dozen flows
 * among millions of ids: counting 2,048 buckets twice for them cost more
 * than the sort). */
static void
sort_ids (Ids *a, Ids *scratch, uint32_t hi)
{
  uint32_t n = a->n, *v = a->v;

  if (n < 64)
    {
      for (uint32_t i = 1; i < n; i++)
        {
          uint32_t x = v[i], j = i;
          for (; j > 0 && v[j - 1] > x; j--)
            v[j] = v[j - 1];
          v[j] = x;
        }
      return;
    }
  uint32_t span = hi > 1 ? 32 - (uint32_t) __builtin_clz (hi - 1) : 1;
  uint32_t width = MIN (11, 32 - (uint32_t) __builtin_clz (n));
  uint32_t passes = (span + width - 1) / width;
  width = (span + passes - 1) / passes;
  uint32_t buckets = 1u << width, digit = buckets - 1;
  ids_resize (scratch, n);
  uint32_t *src = v, *dst = scratch->v;
  for (uint32_t pass = 0, shift = 0; pass < passes; pass++, shift += width)
    {
      uint32_t count[2048 + 1];
      memset (count, 0, (buckets + 1) * sizeof (uint32_t));
      for (uint32_t i = 0; i < n; i++)
        count[((src[i] >> shift) & digit) + 1]++;
      for (uint32_t d = 0; d < buckets; d++)
        count[d + 1] += count[d];
      for (uint32_t i = 0; i < n; i++)
        dst[count[(src[i] >> shift) & digit]++] = src[i];
      uint32_t *swap = src;
      src = dst;
      dst = swap;
    }
  if (src != v)
    memcpy (v, src, n * sizeof (uint32_t));
}

/* Recomputation: flow @id is found affected.  The first time, it goes on
 * @list, and @lo and @hi widen to take it in. */
static inline void
found (FlowNet *f, Ids *list, uint32_t id, uint32_t *lo, uint32_t *hi)
{
  uint64_t *word = &f->found_bits[id / 64], bit = (uint64_t) 1 << (id % 64);

  if (*word & bit)
    return;
  *word |= bit;
  ids_push (list, id);
  *lo = MIN (*lo, id);
  *hi = MAX (*hi, id);
}

/* The affected flows found from the dirty list: the flows on each changed
 * link and those that started alone, in order of id, then taken.  Which
 * are found is kept in a bit per flow, not in the flows, so that finding
 * them reads only the links and their lists; each flow is read once, when
 * it is taken, fetched a few ahead. */
static void
find_by_lists (FlowNet *f, WeftTime now, gboolean grouping)
{
  Ids *list = &f->by_group;     /* free until fill_groups() */
  gboolean deep = f->base.deep;
  uint32_t lo = UINT32_MAX, hi = 0;

  list->n = 0;
  for (uint32_t d = 0; d < f->n_dirty; d++)
    {
      uint32_t e = f->dirty[d];
      /* Fetch ahead: dirty links, then their flows' lists (the second's
       * address is in what the first fetched), where they may be out of
       * the caches. */
      if (deep)
        {
          if (d + 24 < f->n_dirty && !(f->dirty[d + 24] & ALONE))
            __builtin_prefetch (&f->links[f->dirty[d + 24]]);
          if (d + 12 < f->n_dirty && !(f->dirty[d + 12] & ALONE))
            prefetch_flows (&f->links[f->dirty[d + 12]]);
        }
      if (e & ALONE)
        {
          found (f, list, e & ~ALONE, &lo, &hi);
          continue;
        }
      const Link *link = &f->links[e];
      const uint32_t *flows = link_flows (link);
      for (uint32_t k = 0; k < link->n; k++)
        found (f, list, flows[k], &lo, &hi);
    }

  /* In order of id: read off the bits where they are dense, else sorted
   * (a recomputation may find a few flows among millions of ids). */
  uint32_t n = list->n;
  if (n > 0 && (hi / 64 - lo / 64) / 2 <= n)
    {
      list->n = 0;
      for (uint32_t w = lo / 64; w <= hi / 64; w++)
        for (uint64_t bits = f->found_bits[w]; bits != 0; bits &= bits - 1)
          list->v[list->n++] = w * 64 + (uint32_t) __builtin_ctzll (bits);
      memset (&f->found_bits[lo / 64], 0,
              (hi / 64 - lo / 64 + 1) * sizeof (uint64_t));
    }
  else
    {
      sort_ids (list, &f->sort_scratch, f->base.n_transfers);
      for (uint32_t i = 0; i < n; i++)
        f->found_bits[list->v[i] / 64] = 0;
    }
  g_assert (list->n == n);

  const uint32_t *ids = list->v;
  for (uint32_t i = 0; i < n; i++)
    {
      if (deep && i + 16 < n)
        {
          const Flow *ahead = &f->flows[ids[i + 16]];
          __builtin_prefetch (ahead);
          __builtin_prefetch (ahead->path);
        }
      if (deep && i + 8 < n)
        {
          Flow *ahead = &f->flows[ids[i + 8]];
          const uint32_t *path = flow_path (ahead);
          for (uint32_t p = 0; p < ahead->path_len; p++)
            __builtin_prefetch (&f->links[path[p]]);
        }
      else if (i + 4 < n)
        __builtin_prefetch (&f->flows[ids[i + 4]]);
      take (f, ids[i], now, grouping);
    }
}

/* How far ahead of the scan flows' path lines are fetched, and how far
 * ahead it decides which it will take (fetching their first lines and
 * their links).  Since a flow's first line is fetched only once the scan
 * knows it will take it, 4 flows ahead left too little time: 8 made
 * halving-doubling on one thread 2-6% faster at 8,192 and 16,384 GPUs. */
#define SCAN_FLOWS_AHEAD 16
#define SCAN_LINKS_AHEAD 8

/* Whether flow @flow crosses a changed link or started alone. */
static inline gboolean
flow_hit (const FlowNet *f, Flow *flow)
{
  const uint32_t *path = flow_path (flow);

  if (flow->fresh)
    return TRUE;
  for (uint32_t p = 0; p < flow->path_len; p++)
    if (link_dirty (f, path[p]))
      return TRUE;
  return FALSE;
}

/* The affected flows found by reading every flow in flight in order of id
 * (sequential reads where following the dirty links' lists would miss the
 * cache at each flow), each taken at once.  Whether a flow is affected is
 * read off the dirty bits, a few flows ahead, and only an affected flow's
 * links (which taking it reads) are fetched. */
static void
find_by_scan (FlowNet *f, WeftTime now, gboolean grouping)
{
  uint32_t hi = MIN (f->base.n_transfers, f->flows_cap);
  gboolean hit[SCAN_LINKS_AHEAD];

  for (uint32_t id = 0; id < MIN (hi, SCAN_LINKS_AHEAD); id++)
    hit[id] = flow_hit (f, &f->flows[id]);
  for (uint32_t id = 0; id < hi; id++)
    {
      if (id + SCAN_FLOWS_AHEAD < hi)
        __builtin_prefetch (f->flows[id + SCAN_FLOWS_AHEAD].path);
      gboolean now_hit = hit[id % SCAN_LINKS_AHEAD];
      if (id + SCAN_LINKS_AHEAD < hi)
        {
          Flow *ahead = &f->flows[id + SCAN_LINKS_AHEAD];
          gboolean h = flow_hit (f, ahead);
          hit[id % SCAN_LINKS_AHEAD] = h;
          if (h)
            {
              const uint32_t *path = flow_path (ahead);
              __builtin_prefetch (ahead);
              for (uint32_t p = 0; p < ahead->path_len; p++)
                __builtin_prefetch (&f->links[path[p]]);
            }
        }
      if (now_hit)
        take (f, id, now, grouping);
    }
}

/* A scan reads every transfer slot, in order; following the lists reads
 * one or more flows a dirty entry, each a miss: scan when there is at
 * least one dirty entry to this many slots.  Either way finds the same
 * flows, so this changes only the time taken. */
#define SCAN_FLOWS_PER_DIRTY 4

static void
recompute (WeftSim *sim, void *target, void *data)
{
  FlowNet *f = target;
  WeftTime now = weft_sim_now (sim);
  gboolean grouping = !f->base.plain;
  (void) data;

  f->pending = FALSE;
  if (G_UNLIKELY (++f->epoch == DIRTY))
    {
      /* The epoch would reach the dirty bit: start the count again. */
      for (uint32_t l = 0; l < f->base.topo->n_links; l++)
        f->links[l].mark = f->links[l].mark == DIRTY ? DIRTY : 0;
      f->epoch = 1;
    }
  f->recomputations++;
  f->affected.n = 0;
  f->touched.n = 0;
  f->touched_owner.n = 0;
  f->group_of.n = 0;

  /* The affected flows cross a dirty link or started alone.  They are
   * taken in order of id, whichever way they are found, so the rates do
   * not depend on the order of the changes nor on the way: each touches
   * its links, and the flows that share a touched link are joined. */
  WeftScan scan = f->scan;
  if (scan == WEFT_SCAN_AUTO)
    scan = grouping && (uint64_t) f->n_dirty * SCAN_FLOWS_PER_DIRTY
                               >= f->base.n_transfers
               ? WEFT_SCAN_ALWAYS
               : WEFT_SCAN_NEVER;
  if (scan == WEFT_SCAN_ALWAYS)
    find_by_scan (f, now, grouping);
  else
    find_by_lists (f, now, grouping);
  for (uint32_t d = 0; d < f->n_dirty; d++)
    if (!(f->dirty[d] & ALONE))
      f->dirty_bits[f->dirty[d] / 64] &= ~((uint64_t) 1 << (f->dirty[d] % 64));
  f->n_dirty = 0;
  if (f->affected.n == 0)
    return;
  if (grouping)
    fill_groups (f);
  else
    fill (f, f->solver, f->affected.v, f->affected.n, f->touched.v,
          f->touched.n);

  /* Drain times at the new rates, in order of id. */
  for (uint32_t i = 0; i < f->affected.n; i++)
    {
      uint32_t id = f->affected.v[i];
      Flow *flow = &f->flows[id];
      if (i + 8 < f->affected.n)
        __builtin_prefetch (&f->flows[f->affected.v[i + 8]]);
      if (f->any_unfilled && flow->rate != flow->old_rate)
        {
          /* Links left out of filling: their sums, in order of id. */
          const uint32_t *path = flow_path (flow);
          const double *share = flow_share (f, flow);
          for (uint32_t k = 0; k < flow->path_len; k++)
            if (cannot_fill (f, path[k]))
              f->links[path[k]].rate_sum
                  += (flow->rate - flow->old_rate) * share[k];
        }
      if (flow->rate == flow->old_rate && flow->timer.pending)
        continue;
      if (flow->rate <= 0)
        {
          weft_sim_pool_cancel (f->base.sim, f->timers, id);
          continue;
        }
      double ps = ceil (MAX (flow->remaining, 0) * 1e12 / flow->rate);
      weft_sim_pool_schedule (f->base.sim, f->timers, id, (WeftTime) ps);
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
};
