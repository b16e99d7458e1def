/* weft: the network interface, and what the fidelities share. */
#include "network/network-private.h"
#include "topology/faults.h"
#include "units.h"

#include "rng.h"

#include <math.h>
#include <string.h>

static const char *const fidelity_names[] = {
  [WEFT_FIDELITY_PACKET] = "packet",
  [WEFT_FIDELITY_FLOW] = "flow",
  [WEFT_FIDELITY_ANALYTICAL] = "analytical",
  [WEFT_FIDELITY_ANALYTICAL_FREE] = "analytical-free",
};
G_STATIC_ASSERT (G_N_ELEMENTS (fidelity_names)
                 == WEFT_FIDELITY_ANALYTICAL_FREE + 1);

gboolean
weft_fidelity_parse (const char *name, WeftFidelity *fidelity)
{
  for (int i = 0; i < (int) G_N_ELEMENTS (fidelity_names); i++)
    if (g_strcmp0 (name, fidelity_names[i]) == 0)
      {
        *fidelity = (WeftFidelity) i;
        return TRUE;
      }
  return FALSE;
}

const char *
weft_fidelity_name (WeftFidelity fidelity)
{
  return fidelity_names[fidelity];
}

static const WeftNetworkClass *const classes[] = {
  [WEFT_FIDELITY_PACKET] = &weft_network_packet_class,
  [WEFT_FIDELITY_FLOW] = &weft_network_flow_class,
  [WEFT_FIDELITY_ANALYTICAL] = &weft_network_analytical_class,
  [WEFT_FIDELITY_ANALYTICAL_FREE] = &weft_network_analytical_free_class,
};

/* Routing over @topo: one a network before left, with what it learnt
 * (remembered routes, cost arrays: a sweep's runs would otherwise each
 * route from nothing), or a new one.  A remembered route is one no flow id
 * took part in choosing, so the routes are the same either way. */
static WeftRouting *
routing_take (const WeftTopology *topo)
{
  WeftTopology *t = (WeftTopology *) topo;  /* its spare routings only */
  WeftRouting *routing = NULL;

  g_mutex_lock (&t->spare_lock);
  if (t->spare && t->spare->len > 0)
    routing = g_ptr_array_steal_index (t->spare, t->spare->len - 1);
  g_mutex_unlock (&t->spare_lock);
  return routing ? routing : weft_routing_new (topo);
}

/* @routing, which @net used, for the next network over its topology; one
 * whose remembered routes were switched off (plain) is freed. */
static void
routing_give (WeftNetwork *net, WeftRouting *routing)
{
  WeftTopology *t = (WeftTopology *) net->topo;

  weft_routing_set_load (routing, NULL);        /* freed with @net */
  if (net->plain)
    {
      weft_routing_free (routing);
      return;
    }
  g_mutex_lock (&t->spare_lock);
  if (t->spare == NULL)
    t->spare = g_ptr_array_new_with_free_func (
        (GDestroyNotify) weft_routing_free);
  g_ptr_array_add (t->spare, routing);
  g_mutex_unlock (&t->spare_lock);
}

static void phase_begins (WeftSim *sim, void *target, void *data);

WeftNetwork *
weft_network_new (WeftSim *sim, const WeftTopology *topo,
                  const WeftNetworkConfig *config)
{
  const WeftNetworkClass *klass = classes[config->fidelity];
  WeftNetwork *net = klass->create ();

  net->klass = klass;
  net->sim = sim;
  net->topo = topo;
  net->n_links = topo->n_links;
  net->part = 1;
  net->routing = routing_take (topo);
  net->stats = weft_link_stats_new (topo->n_links, config->bin_width);
  net->scratch = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  net->hops = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  net->stripe_links = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  net->stripe_bytes = g_array_new (FALSE, FALSE, sizeof (uint64_t));
  net->plane_links = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  net->plane_bytes = g_array_new (FALSE, FALSE, sizeof (uint64_t));
  net->reduce_free_at = g_new0 (WeftTime, MAX (topo->n_nodes, 1));
  net->free_transfers = g_new (uint32_t, MAX (topo->n_nodes, 1));
  for (uint32_t i = 0; i < topo->n_nodes; i++)
    net->free_transfers[i] = WEFT_NONE;
  /* What data moves at: the link's effective bandwidth, or for collectives
   * NCCL's model of the link times the protocol's share (NCCL's kernels do
   * not fill a link). */
  net->capacity = g_new (double, MAX (topo->n_links, 1));
  for (uint32_t l = 0; l < topo->n_links; l++)
    {
      const WeftLink *link = &topo->links[l];
      net->capacity[l] = config->nccl > 0
                             ? weft_link_nccl_rate (topo, link) * config->nccl
                             : link->bandwidth;
    }
  net->deep = topo->n_links >= WEFT_DEEP_LINKS;
  net->adopted = g_ptr_array_new_with_free_func (g_free);
  net->splits = g_hash_table_new_full (g_direct_hash, g_direct_equal, g_free,
                                       NULL);
  weft_routes_init (net);
  /* Adaptive routing reads what is in flight on each link as a transfer
   * starts; counted only when a switch routes so. */
  if (weft_routing_uses_load (net->routing))
    {
      net->load = g_new0 (uint32_t, MAX (topo->n_links, 1));
      weft_routing_set_load (net->routing, net->load);
    }
  /* Flow ids feed the ECMP hash; the seed decides where they start. */
  net->next_flow = config->seed ? weft_mix64 (config->seed) : 0;
  net->nccl = config->nccl;
  net->keep_paths = topo->phases != NULL;
  for (guint i = 0; topo->phases && i < topo->phases->len; i++)
    weft_sim_schedule_at (sim,
                          g_array_index (topo->phases, WeftTopoPhase, i).at,
                          phase_begins, net, GUINT_TO_POINTER (i));
  return net;
}

size_t
weft_network_bytes (const WeftTopology *topo, WeftFidelity fidelity)
{
  size_t per_link = classes[fidelity]->link_state + sizeof (double)
                    + sizeof (uint32_t) + sizeof (WeftLinkStat)
                    + sizeof (WeftLinkBins) + sizeof (uint32_t);
  size_t per_node = sizeof (WeftTime) + sizeof (uint32_t);
  size_t gpus = 0;

  /* A GPU's send engine is a link of the network's own, and takes each
   * node an entry in the table of engines. */
  for (uint32_t v = 0; v < topo->n_nodes; v++)
    gpus += topo->nodes[v].kind == WEFT_NODE_GPU;
  return ((size_t) topo->n_links + gpus) * per_link
         + (size_t) topo->n_nodes * (per_node + sizeof (uint32_t));
}

/* Links a route crosses at most, for the estimate: GPU, PCIe switch,
 * NIC, three levels of switches up and down, and back in. */
#define ESTIMATE_PATH_LINKS 16

size_t
weft_network_transfer_bytes (const WeftTopology *topo, WeftFidelity fidelity)
{
  const WeftNetworkClass *klass = classes[fidelity];
  uint32_t striped = 0;

  for (uint32_t n = 0; n < topo->n_nodes; n++)
    if (topo->nodes[n].kind == WEFT_NODE_GPU)
      striped = MAX (striped,
                     2 * (topo->out_start[n + 1] - topo->out_start[n]));
  uint32_t links = MAX (ESTIMATE_PATH_LINKS, striped);
  /* Routes through a fabric stay within a model's near links; a striped
   * one may not. */
  size_t far = klass->near_links && striped > klass->near_links
                   ? 2 * (size_t) striped * klass->far_state
                   : 0;
  return sizeof (WeftTransfer) + klass->transfer_state + far
         + links * (sizeof (uint32_t) + sizeof (uint64_t)
                    + klass->path_state);
}

void
weft_network_free (WeftNetwork *net)
{
  if (net == NULL)
    return;
  for (guint i = 0; i < net->adopted->len; i += 2)
    ((GDestroyNotify) g_ptr_array_index (net->adopted, i + 1)) (
        g_ptr_array_index (net->adopted, i));
  g_ptr_array_set_free_func (net->adopted, NULL);
  g_ptr_array_unref (net->adopted);
  g_hash_table_unref (net->splits);
  if (net->engine_links)
    {
      g_array_unref (net->engine_links);
      g_array_unref (net->engine_shares);
    }
  for (uint32_t i = 0; i < net->n_transfers; i++)
    {
      g_free (net->transfers[i].path);
      g_free (net->transfers[i].link_bytes);
    }
  g_aligned_free (net->transfers);
  g_free (net->free_transfers);
  g_array_unref (net->scratch);
  g_array_unref (net->hops);
  g_array_unref (net->stripe_links);
  g_array_unref (net->stripe_bytes);
  g_array_unref (net->plane_links);
  g_array_unref (net->plane_bytes);
  if (net->plane_routes)
    g_hash_table_unref (net->plane_routes);
  g_free (net->reduce_free_at);
  g_free (net->capacity);
  weft_routes_free (net);
  g_free (net->load);
  g_free (net->failure);
  routing_give (net, g_steal_pointer (&net->routing));
  weft_link_stats_free (net->stats);
  net->klass->destroy (net);
}

WeftTime
weft_network_node_latency (const WeftNetwork *net, uint32_t node)
{
  const WeftNode *n = &net->topo->nodes[node];

  return n->kind == WEFT_NODE_SWITCH || n->kind == WEFT_NODE_NIC
             ? n->device->latency
             : 0;
}

/* Latency and bottleneck of the path in @links. */
static void
path_figures (const WeftNetwork *net, const uint32_t *links, uint32_t n,
              WeftTime *latency, double *bottleneck)
{
  *latency = 0;
  *bottleneck = INFINITY;
  for (uint32_t i = 0; i < n; i++)
    {
      const WeftLink *l = &net->topo->links[links[i]];
      *latency += l->latency;
      if (i + 1 < n)
        *latency += weft_network_node_latency (net, l->dst);
      *bottleneck = MIN (*bottleneck, net->capacity[links[i]]);
    }
}

/* Where @v is in @a (uint32_t), or a->len: a path's few links, looked
 * through. */
static inline guint
index_in (const GArray *a, uint32_t v)
{
  guint j = 0;

  while (j < a->len && g_array_index (a, uint32_t, j) != v)
    j++;
  return j;
}

/* A transfer split over several first hops finishes with its last part.
 * The network keeps the splits in progress, so that a run stopped early
 * frees them too. */
typedef struct {
  WeftNetwork *net;
  uint32_t parts;               /* not yet finished */
  WeftEventFn done;
  void *target, *data;
} Split;

static void
part_done (WeftSim *sim, void *target, void *data)
{
  Split *split = target;
  (void) data;

  if (--split->parts > 0)
    return;
  WeftEventFn done = split->done;
  void *t = split->target, *d = split->data;
  g_hash_table_remove (split->net->splits, split);
  done (sim, t, d);
}

/* The route of part @part, leaving by first hop @first (or routed whole
 * when @first is WEFT_NONE), into net->scratch. */
static void
route_part (WeftNetwork *net, uint32_t src, uint32_t dst, uint32_t first,
            uint64_t flow)
{
  if (first == WEFT_NONE)
    {
      gboolean routed = weft_routing_path (net->routing, src, dst, flow,
                                           net->scratch);
      /* The loader refuses GPUs that cannot reach each other at the
       * start; once a fault has changed the links, weft_network_joined()
       * has looked. */
      g_assert (routed);
      return;
    }
  uint32_t via = net->topo->links[first].dst;
  gboolean routed = weft_routing_path_for (net->routing, src, via, dst, flow,
                                           net->scratch);
  g_assert (routed);
  g_array_prepend_val (net->scratch, first);
}

/* The bandwidth of the narrowest of the @n @links of a stripe's path: the
 * most the stripe can carry on its own. */
static double
stripe_width (const WeftNetwork *net, const uint32_t *links, guint n)
{
  double width = INFINITY;

  for (guint k = 0; k < n; k++)
    width = MIN (width, net->topo->links[links[k]].bandwidth);
  return width;
}

/* The width of the stripe from @src to @dst that leaves by first hop
 * @first, routed as flow @flow (in net->scratch). */
static double
route_width (WeftNetwork *net, uint32_t src, uint32_t dst, uint32_t first,
             uint64_t flow)
{
  route_part (net, src, dst, first, flow);
  return stripe_width (net, (const uint32_t *) net->scratch->data,
                       net->scratch->len);
}

/* How @bytes split over @n stripes of widths @width, into @parts: in
 * proportion to their widths, the remainder to the first.  A stripe's
 * width is its path's narrowest link, not its first hop: where equal-cost
 * ways out lead to paths of other widths (a GPU's NVLink to a neighbour
 * whose NIC is on the destination's rail, beside its own PCIe link to its
 * own NIC), a share by first hop would load the narrow path as much as a
 * wide one, and a faster first hop would slow the transfer down.  With no
 * stripes, all of it in parts[0]. */
static void
shares (const double *width, guint n, uint64_t bytes, uint64_t *parts)
{
  double total = 0;
  uint64_t given = 0;

  parts[0] = 0;
  for (guint k = 0; k < n; k++)
    total += width[k];
  for (guint k = 0; k < n; k++)
    {
      parts[k] = (uint64_t) floor ((double) bytes * width[k] / total);
      given += parts[k];
    }
  parts[0] += bytes - given;
  /* A transfer striped over n links moves at least n bytes, one a stripe
   * at least: a link much slower than the others would otherwise get no
   * bytes and carry a stripe of nothing.  Each such byte comes from the
   * largest part (at least two bytes whenever a part is empty). */
  if (bytes >= n)
    for (guint k = 0; k < n; k++)
      if (parts[k] == 0)
        {
          guint m = 0;
          for (guint j = 1; j < n; j++)
            if (parts[j] > parts[m])
              m = j;
          parts[m]--;
          parts[k] = 1;
        }
}

/* Route the stripes of a transfer of @bytes from @src to @dst, one over
 * each of the first hops @hops (as flow @flow), and gather their links
 * into net->stripe_links, each once however many stripes cross it, with
 * the bytes they put on it in net->stripe_bytes.  With @stripes, which
 * stripes cross each of the first ROUTE_LINKS links.  Returns the latency
 * of the slowest stripe's path; *flow_free says whether every stripe's
 * route is the same for any flow. */
static WeftTime
gather_stripes (WeftNetwork *net, uint32_t src, uint32_t dst, uint64_t bytes,
                const GArray *hops, uint64_t flow, uint32_t *stripes,
                gboolean *flow_free)
{
  GArray *links = net->stripe_links, *carried = net->stripe_bytes;
  WeftTime latency = 0;
  guint n_hops = hops->len;
  uint64_t parts[n_hops];
  double width[n_hops];
  guint ends[n_hops];
  /* Stripe by stripe, the places in `links` of the links it crosses. */
  g_autoptr (GArray) crossed = g_array_new (FALSE, FALSE, sizeof (guint));

  *flow_free = TRUE;
  memset (width, 0, sizeof width);
  g_array_set_size (links, 0);
  for (guint i = 0; i < n_hops; i++)
    {
      WeftTime part_latency;
      double unused;
      width[i] = route_width (net, src, dst, g_array_index (hops, uint32_t, i),
                              flow);
      *flow_free &= weft_routing_flow_free (net->routing);
      path_figures (net, (uint32_t *) net->scratch->data, net->scratch->len,
                    &part_latency, &unused);
      latency = MAX (latency, part_latency);
      for (guint k = 0; k < net->scratch->len; k++)
        {
          uint32_t l = g_array_index (net->scratch, uint32_t, k);
          guint j = index_in (links, l);
          if (j == links->len)
            g_array_append_val (links, l);
          g_array_append_val (crossed, j);
          if (stripes != NULL && j < ROUTE_LINKS && i < ROUTE_HOPS)
            stripes[j] |= 1u << i;
        }
      ends[i] = crossed->len;
    }
  shares (width, n_hops, bytes, parts);
  g_array_set_size (carried, links->len);
  memset (carried->data, 0, links->len * sizeof (uint64_t));
  for (guint i = 0, c = 0; i < n_hops; i++)
    for (; c < ends[i]; c++)
      g_array_index (carried, uint64_t, g_array_index (crossed, guint, c))
          += parts[i];
  return latency;
}

WeftTime
weft_network_ideal_time (WeftNetwork *net, uint32_t src, uint32_t dst,
                         uint64_t bytes)
{
  if (src == dst || bytes == 0)
    return 0;
  weft_routing_first_hops (net->routing, src, dst, net->hops);
  guint n = net->hops->len;
  if (n <= 1 || bytes < n)
    {
      WeftTime latency;
      double bottleneck;
      route_part (net, src, dst,
                  n == 1 ? g_array_index (net->hops, uint32_t, 0) : WEFT_NONE,
                  0);
      path_figures (net, (uint32_t *) net->scratch->data, net->scratch->len,
                    &latency, &bottleneck);
      return latency + (WeftTime) ceil ((double) bytes * 1e12 / bottleneck);
    }
  /* Stripes that meet again on a link share it: what holds the transfer
   * back is the link whose stripes' bytes take longest there, not each
   * stripe's own bottleneck. */
  gboolean unused;
  WeftTime latency = gather_stripes (net, src, dst, bytes, net->hops, 0, NULL,
                                     &unused);
  WeftTime longest = 0;
  for (guint k = 0; k < net->stripe_links->len; k++)
    {
      uint32_t l = g_array_index (net->stripe_links, uint32_t, k);
      uint64_t b = g_array_index (net->stripe_bytes, uint64_t, k);
      longest = MAX (longest, (WeftTime) ceil ((double) b * 1e12
                                               / net->capacity[l]));
    }
  return latency + longest;
}

G_STATIC_ASSERT (sizeof (WeftTransfer) == 128
                 && G_STRUCT_OFFSET (WeftTransfer, path) == 64);

/* A transfer slot for a transfer from node @src.  A node reuses the slots
 * its own transfers freed: a collective's ranks send in order in each
 * lockstep instant, and so visit their flows in the order of memory. */
static uint32_t
new_transfer (WeftNetwork *net, uint32_t src)
{
  uint32_t id = net->free_transfers[src];

  if (id != WEFT_NONE)
    net->free_transfers[src] = net->transfers[id].next_free;
  else
    {
      if (net->n_transfers == net->transfers_cap)
        {
          uint32_t old = net->transfers_cap;
          net->transfers_cap = old ? old * 2 : 64;
          WeftTransfer *moved = g_aligned_alloc0 (net->transfers_cap,
                                                  sizeof (WeftTransfer), 64);
          if (old > 0)
            memcpy (moved, net->transfers, old * sizeof (WeftTransfer));
          g_aligned_free (net->transfers);
          net->transfers = moved;
        }
      id = net->n_transfers++;
    }
  return id;
}

/* Transfer @t's own buffers, sized for @len path links: a free slot keeps
 * them for the next transfer. */
static void
transfer_buffers (WeftTransfer *t, uint32_t len)
{
  if (t->path_cap < len)
    {
      t->path_cap = MAX (len, 8);
      t->path = g_renew (uint32_t, t->path, t->path_cap);
      t->link_bytes = g_renew (uint64_t, t->link_bytes, t->path_cap);
    }
}

static void
fill_transfer (WeftTransfer *t, uint32_t src, uint64_t bytes, double cap,
               WeftEventFn done, void *target, void *data)
{
  t->src = src;
  t->bytes = bytes;
  t->cap = cap;
  t->done = done;
  t->target = target;
  t->data = data;
}

uint32_t
weft_network_add_engines (WeftNetwork *net, const double *rate)
{
  const WeftTopology *topo = net->topo;
  uint32_t added = 0;

  g_assert (net->n_transfers == 0);
  if (net->engine_links == NULL)
    {
      net->engine_links = g_array_new (FALSE, FALSE, sizeof (uint32_t));
      net->engine_shares = g_array_new (FALSE, FALSE, sizeof (double));
    }
  guint base = net->engine_links->len;
  g_array_set_size (net->engine_links, base + topo->n_nodes);
  for (uint32_t v = 0; v < topo->n_nodes; v++)
    added += rate[v] > 0;
  net->capacity = g_renew (double, net->capacity,
                           MAX (net->n_links + added, 1));
  for (uint32_t v = 0; v < topo->n_nodes; v++)
    {
      uint32_t e = WEFT_NONE;
      if (rate[v] > 0)
        {
          e = net->n_links++;
          net->capacity[e] = rate[v];
        }
      g_array_index (net->engine_links, uint32_t, base + v) = e;
    }
  weft_link_stats_hide (net->stats, added);
  if (net->load != NULL)
    {
      net->load = g_renew (uint32_t, net->load, MAX (net->n_links, 1));
      memset (&net->load[net->n_links - added], 0, added * sizeof (uint32_t));
      weft_routing_set_load (net->routing, net->load);
    }
  return net->engine_links->len / topo->n_nodes;
}

/* Transfer @t's path with its source's send engine @engine first: into
 * its own buffers, where @links (and @link_bytes, @shares) may already
 * be; the engine carries all its bytes. */
static void
through_engine (WeftNetwork *net, WeftTransfer *t, uint32_t engine,
                const uint32_t **links, uint32_t *n, gboolean striped,
                const void **link_bytes, const void **shares)
{
  gboolean own_links = *links == t->path;
  gboolean own_bytes = striped && *link_bytes == (const void *) t->link_bytes;

  /* Growing keeps what the buffers hold: what was in them moves up in
   * place, what was elsewhere (a remembered route) is copied in. */
  transfer_buffers (t, *n + 1);
  if (own_links)
    memmove (t->path + 1, t->path, *n * sizeof (uint32_t));
  else
    memcpy (t->path + 1, *links, *n * sizeof (uint32_t));
  if (own_bytes)
    memmove (t->link_bytes + 1, t->link_bytes, *n * sizeof (uint64_t));
  else if (striped)
    memcpy (t->link_bytes + 1, *link_bytes, *n * sizeof (uint64_t));
  t->path[0] = engine;
  t->link_bytes[0] = t->bytes;
  if (*shares != NULL)
    {
      GArray *s = net->engine_shares;
      double whole = 1.0;
      g_array_set_size (s, 0);
      g_array_append_val (s, whole);
      g_array_append_vals (s, *shares, *n);
      *shares = s->data;
    }
  *links = t->path;
  *link_bytes = striped ? t->link_bytes : NULL;
  (*n)++;
}

/* Start transfer @id on the @n links @links, with @striped the bytes each
 * carries (@link_bytes) and their shares of its bytes (@shares, or NULL),
 * each maybe unaligned. */
static void
start_on (WeftNetwork *net, uint32_t id, const uint32_t *links, uint32_t n,
          gboolean striped, const void *link_bytes, const void *shares)
{
  WeftTransfer *t = &net->transfers[id];

  t->part = net->part;
  if (G_UNLIKELY (net->engine_kind != 0))
    {
      uint32_t e = g_array_index (net->engine_links, uint32_t,
                                  (net->engine_kind - 1) * net->topo->n_nodes
                                      + t->src);
      if (e != WEFT_NONE)
        through_engine (net, t, e, &links, &n, striped, &link_bytes, &shares);
    }
  if (net->load != NULL || G_UNLIKELY (net->keep_paths))
    {
      /* Its links, to count it off when it ends, or to move it should one
       * go down (a remembered route's lie with the route, not the
       * transfer). */
      if (links != t->path)
        {
          transfer_buffers (t, n);
          memcpy (t->path, links, n * sizeof (uint32_t));
        }
      if (striped && link_bytes != t->link_bytes)
        {
          transfer_buffers (t, n);
          memcpy (t->link_bytes, link_bytes, n * sizeof (uint64_t));
        }
    }
  if (net->load != NULL)
    for (uint32_t i = 0; i < n; i++)
      net->load[links[i]]++;
  t->path_len = n;
  t->striped = striped;
  t->places = net->asked.places;
  t->from = net->asked.from;
  t->to = net->asked.to;
  t->engine = (uint16_t) net->engine_kind;
  t->live = TRUE;
  net->starting.links = links;
  net->starting.link_bytes = link_bytes;
  net->starting.shares = shares;
  net->klass->start (net, id);
}

/* Start a transfer in one part, leaving by @first (routed whole when
 * WEFT_NONE); with @remember, keep its route if no flow id chose it. */
static void
start_part (WeftNetwork *net, uint32_t src, uint32_t dst, uint64_t bytes,
            double cap, uint32_t first, gboolean remember, WeftEventFn done,
            void *target, void *data)
{
  uint64_t flow = net->next_flow++;
  route_part (net, src, dst, first, flow);
  uint32_t id = new_transfer (net, src), n = net->scratch->len;
  WeftTransfer *t = &net->transfers[id];

  fill_transfer (t, src, bytes, cap, done, target, data);
  transfer_buffers (t, n);
  memcpy (t->path, net->scratch->data, n * sizeof (uint32_t));
  path_figures (net, t->path, n, &t->latency, &t->bottleneck);
  if (remember && net->routes && n <= ROUTE_LINKS
      && weft_routing_flow_free (net->routing))
    weft_route_remember (net, src, dst, t->path, n, &first, first != WEFT_NONE,
                    NULL, t->latency);
  start_on (net, id, t->path, n, FALSE, NULL, NULL);
}

gboolean
weft_route_learn (WeftNetwork *net, uint32_t src, uint32_t dst)
{
  WeftTime latency;
  double bottleneck;

  if (net->routes == NULL || src == dst
      || weft_routing_uses_load (net->routing))
    return FALSE;
  weft_routing_first_hops (net->routing, src, dst, net->hops);
  if (net->hops->len > 1)
    return FALSE;
  uint32_t first = net->hops->len == 1
                       ? g_array_index (net->hops, uint32_t, 0)
                       : WEFT_NONE;
  /* Flow 0: a route that takes no flow's hash is every flow's. */
  route_part (net, src, dst, first, 0);
  uint32_t n = net->scratch->len;
  if (n > ROUTE_LINKS || !weft_routing_flow_free (net->routing))
    return FALSE;
  path_figures (net, (const uint32_t *) net->scratch->data, n, &latency,
                &bottleneck);
  weft_route_remember (net, src, dst, (const uint32_t *) net->scratch->data,
                       n, &first, first != WEFT_NONE, NULL, latency);
  return TRUE;
}

/* Start a transfer on a remembered route: its links, and a striped one's
 * split, are read where the route keeps them (only the flow model takes
 * remembered routes, and it copies what it keeps). */
static void
start_remembered (WeftNetwork *net, const Route *r, uint32_t src,
                  uint64_t bytes, double cap, WeftEventFn done, void *target,
                  void *data)
{
  net->next_flow++;             /* the id ECMP would have chosen by */
  uint32_t id = new_transfer (net, src);
  WeftTransfer *t = &net->transfers[id];

  fill_transfer (t, src, bytes, cap, done, target, data);
  t->latency = r->latency;
  if (r->n_hops <= 1)
    {
      start_on (net, id, route_links (net, r), r->n_links, FALSE, NULL,
                NULL);
      return;
    }
  uint32_t *memo = route_memo (net, r);
  uint64_t last;
  memcpy (&last, memo, sizeof last);
  if (last != bytes)
    {
      uint64_t parts[ROUTE_HOPS], carried[ROUTE_LINKS];
      double width[ROUTE_HOPS];
      const uint32_t *stripes = route_stripes (net, r);
      const uint32_t *links = route_links (net, r);
      for (uint32_t i = 0; i < r->n_hops; i++)
        width[i] = INFINITY;
      for (uint32_t k = 0; k < r->n_links; k++)
        for (uint32_t bits = stripes[k]; bits != 0; bits &= bits - 1)
          width[__builtin_ctz (bits)]
              = MIN (width[__builtin_ctz (bits)],
                     net->topo->links[links[k]].bandwidth);
      shares (width, r->n_hops, bytes, parts);
      for (uint32_t k = 0; k < r->n_links; k++)
        {
          carried[k] = 0;
          for (uint32_t bits = stripes[k]; bits != 0; bits &= bits - 1)
            carried[k] += parts[__builtin_ctz (bits)];
        }
      memcpy (memo, &bytes, sizeof bytes);
      memcpy (memo + 2, carried, r->n_links * sizeof (uint64_t));
      for (uint32_t k = 0; k < r->n_links; k++)
        {
          double share = (double) carried[k] / (double) bytes;
          memcpy (memo + 2 + 2 * r->n_links + 2 * k, &share, sizeof share);
        }
    }
  start_on (net, id, route_links (net, r), r->n_links, TRUE, memo + 2,
            memo + 2 + 2 * r->n_links);
}

/* One transfer over every stripe: its path holds the links of all of them
 * (a link two stripes share, once), each with the bytes its stripes put on
 * it.  The stripes keep their shares as they go, so the transfer moves at
 * one rate; it is done when the stripe of longest latency has arrived. */
static void
start_striped (WeftNetwork *net, uint32_t src, uint32_t dst, uint64_t bytes,
               double cap, const GArray *hops, WeftEventFn done, void *target,
               void *data)
{
  uint64_t flow = net->next_flow++;
  uint32_t stripes[ROUTE_LINKS] = { 0 };
  gboolean flow_free;
  WeftTime latency = gather_stripes (net, src, dst, bytes, hops, flow, stripes,
                                     &flow_free);
  gboolean remember = net->routes && hops->len <= ROUTE_HOPS && flow_free;

  uint32_t id = new_transfer (net, src), n = net->stripe_links->len;
  WeftTransfer *t = &net->transfers[id];
  fill_transfer (t, src, bytes, cap, done, target, data);
  transfer_buffers (t, n);
  memcpy (t->path, net->stripe_links->data, n * sizeof (uint32_t));
  memcpy (t->link_bytes, net->stripe_bytes->data, n * sizeof (uint64_t));
  t->latency = latency;
  if (remember && n <= ROUTE_LINKS)
    weft_route_remember (net, src, dst, t->path, n, (uint32_t *) hops->data,
                    hops->len, stripes, latency);
  start_on (net, id, t->path, n, TRUE, t->link_bytes, NULL);
}

/* Remember the striped route from @src to @dst over the first hops @hops,
 * as a transfer of as many bytes as stripes would, if no flow's hash
 * takes part in it: the route any larger transfer takes. */
#define UNLEARNT_MAX 4096
G_STATIC_ASSERT (sizeof (gpointer) >= sizeof (uint64_t));

static guint
pair_hash (gconstpointer key)
{
  return (guint) weft_mix64 ((uint64_t) (uintptr_t) key);
}

static void
learn_stripes (WeftNetwork *net, uint32_t src, uint32_t dst,
               const GArray *hops)
{
  uint32_t stripes[ROUTE_LINKS] = { 0 };
  gboolean flow_free;
  gpointer key = (gpointer) (uintptr_t) route_key (src, dst);

  if (net->unlearnt != NULL && g_hash_table_contains (net->unlearnt, key))
    return;
  if (hops->len <= ROUTE_HOPS)
    {
      WeftTime latency = gather_stripes (net, src, dst, hops->len, hops,
                                         net->next_flow, stripes,
                                         &flow_free);
      uint32_t n = net->stripe_links->len;
      if (flow_free && n <= ROUTE_LINKS)
        {
          weft_route_remember (net, src, dst,
                               (const uint32_t *) net->stripe_links->data, n,
                               (const uint32_t *) hops->data, hops->len,
                               stripes, latency);
          return;
        }
    }
  if (net->unlearnt == NULL)
    net->unlearnt = g_hash_table_new (pair_hash, NULL);
  if (g_hash_table_size (net->unlearnt) >= UNLEARNT_MAX)
    g_hash_table_remove_all (net->unlearnt);
  g_hash_table_add (net->unlearnt, key);
}

WeftTime
weft_network_gather_route (WeftNetwork *net, uint32_t src, uint32_t dst,
                           uint64_t bytes, GArray *links, GArray *carried,
                           gboolean *fixed)
{
  WeftTime latency;
  double unused;
  const uint32_t *route;
  const uint64_t *each = NULL;
  guint n;

  weft_routing_first_hops (net->routing, src, dst, net->hops);
  guint n_hops = net->hops->len;
  if (n_hops <= 1 || bytes < n_hops)
    {
      route_part (net, src, dst,
                  n_hops == 1 ? g_array_index (net->hops, uint32_t, 0)
                              : WEFT_NONE,
                  net->next_flow++);
      *fixed = weft_routing_flow_free (net->routing);
      route = (const uint32_t *) net->scratch->data;
      n = net->scratch->len;
      path_figures (net, route, n, &latency, &unused);
    }
  else
    {
      gboolean flow_free;
      latency = gather_stripes (net, src, dst, bytes, net->hops,
                                net->next_flow++, NULL, &flow_free);
      *fixed = FALSE;
      route = (const uint32_t *) net->stripe_links->data;
      each = (const uint64_t *) net->stripe_bytes->data;
      n = net->stripe_links->len;
    }
  for (guint k = 0; k < n; k++)
    {
      uint64_t b = each ? each[k] : bytes;
      guint j = index_in (links, route[k]);
      if (j == links->len)
        {
          g_array_append_val (links, route[k]);
          g_array_append_val (carried, b);
        }
      else
        g_array_index (carried, uint64_t, j) += b;
    }
  return latency;
}

void
weft_network_start_gathered (WeftNetwork *net, uint32_t src, uint64_t bytes,
                             double cap, const uint32_t *links,
                             const uint64_t *carried, uint32_t n,
                             WeftTime latency, WeftEventFn done, void *target,
                             void *data)
{
  g_assert (net->klass->whole_stripes);
  uint32_t id = new_transfer (net, src);
  WeftTransfer *t = &net->transfers[id];

  fill_transfer (t, src, bytes, cap, done, target, data);
  transfer_buffers (t, n);
  memcpy (t->path, links, n * sizeof (uint32_t));
  memcpy (t->link_bytes, carried, n * sizeof (uint64_t));
  t->latency = latency;
  start_on (net, id, t->path, n, TRUE, t->link_bytes, NULL);
}

WeftEventFn
weft_network_join (WeftNetwork *net, uint32_t parts, WeftEventFn done,
                   void *target, void *data, void **join_target)
{
  Split *split = g_new (Split, 1);

  *split = (Split) { net, parts, done, target, data };
  g_hash_table_add (net->splits, split);
  *join_target = split;
  return part_done;
}

void
weft_network_transfer (WeftNetwork *net, uint32_t src, uint32_t dst,
                       uint64_t bytes, double cap, WeftEventFn done,
                       void *target, void *data)
{
  g_assert (src < net->topo->n_nodes && dst < net->topo->n_nodes);
  net->started++;
  net->asked.places = NULL;
  net->asked.from = src;
  net->asked.to = dst;
  if (src == dst || bytes == 0)
    {
      net->finished++;
      weft_sim_schedule (net->sim, 0, done, target, data);
      return;
    }
  if (G_UNLIKELY (net->phase > 0) && !weft_network_joined (net, src, dst))
    return;

  const Route *known = NULL;
  if (net->routes)
    {
      known = weft_route_find (net, src, dst);
      if (known != NULL && bytes >= known->n_hops)
        {
          start_remembered (net, known, src, bytes, cap, done, target, data);
          return;
        }
      net->routes_missed++;
    }

  /* Traffic leaving by several equal-cost links is striped over all of
   * them, as a GPU spreads its NVLink traffic over every NVSwitch chip;
   * each stripe is routed on from there (ECMP by flow) and carries a share
   * in proportion to its path's bandwidth (shares()).  A remembered
   * striped route already says which links those are. */
  if (known != NULL)
    {
      g_array_set_size (net->hops, 0);
      g_array_append_vals (net->hops, net->route_pool + known->body,
                           known->n_hops);
    }
  else
    weft_routing_first_hops (net->routing, src, dst, net->hops);
  guint n = net->hops->len;
  if (n <= 1 || bytes < n)
    {
      /* Fewer bytes than stripes go whole.  The stripes' route is learnt
       * all the same, so that the next such transfer (a collective's
       * small pieces, sent over and over) need not find its first hops
       * again. */
      if (n > 1 && known == NULL && net->routes)
        learn_stripes (net, src, dst, net->hops);
      start_part (net, src, dst, bytes, cap, n == 1
                  ? g_array_index (net->hops, uint32_t, 0) : WEFT_NONE,
                  n <= 1, done, target, data);
      return;
    }
  if (net->klass->whole_stripes)
    {
      start_striped (net, src, dst, bytes, cap, net->hops, done, target, data);
      return;
    }
  Split *split = g_new (Split, 1);
  *split = (Split) { net, (uint32_t) n, done, target, data };
  g_hash_table_add (net->splits, split);
  g_autoptr (GArray) hops = g_array_copy (net->hops);
  uint64_t parts[n];
  double width[n];
  /* Part i is flow next_flow + i (each part takes a flow id). */
  for (guint i = 0; i < n; i++)
    width[i] = route_width (net, src, dst, g_array_index (hops, uint32_t, i),
                            net->next_flow + i);
  shares (width, n, bytes, parts);
  net->started += n - 1;        /* each part is a transfer of its own */
  /* Each part carries its share of the bytes, and of the cap. */
  double whole = net->part;
  for (guint i = 0; i < n; i++)
    {
      net->part = whole * (double) parts[i] / (double) bytes;
      start_part (net, src, dst, parts[i], cap * net->part / whole,
                  g_array_index (hops, uint32_t, i), FALSE, part_done, split,
                  NULL);
    }
  net->part = whole;
}

void
weft_network_complete (WeftNetwork *net, uint32_t id, WeftTime delay)
{
  WeftTransfer *t = &net->transfers[id];

  if (!net->klass->counts_bytes)
    for (uint32_t i = 0; i < t->path_len; i++)
      weft_link_stats_count (net->stats, t->path[i],
                             t->striped ? t->link_bytes[i] : t->bytes);
  if (net->load != NULL)
    for (uint32_t i = 0; i < t->path_len; i++)
      net->load[t->path[i]]--;
  net->finished++;
  net->bytes_delivered += t->bytes;
  weft_sim_schedule (net->sim, delay, t->done, t->target, t->data);
  weft_network_release (net, id);
}

gboolean
weft_network_joined (WeftNetwork *net, uint32_t src, uint32_t dst)
{
  if (net->phase == 0 || src == dst
      || weft_routing_cost (net->routing, src, dst) != WEFT_ROUTE_UNREACHABLE)
    return TRUE;
  if (net->failure == NULL)
    {
      const WeftTopology *base = net->topo->base ? net->topo->base : net->topo;
      WeftTime now = weft_sim_now (net->sim);
      g_autofree char *when = weft_format_time (now);
      GString *what = g_string_new (NULL);
      for (guint f = 0; f < base->faults->len; f++)
        {
          const WeftFault *k = g_ptr_array_index (base->faults, f);
          if (k->links == 0 || k->share > 0 || !weft_fault_holds (k, now))
            continue;
          g_autofree char *from = weft_format_time (k->from);
          g_string_append_printf (what, "%s'%s'", what->len ? ", " : "",
                                  k->what);
          if (k->from > 0)
            g_string_append_printf (what, " from %s", from);
        }
      net->failure = g_strdup_printf ("at %s no path of links that are up "
                                      "joins '%s' to '%s': down then %s",
                                      when, net->topo->nodes[src].name,
                                      net->topo->nodes[dst].name, what->str);
      g_string_free (what, TRUE);
      weft_sim_stop (net->sim);
    }
  return FALSE;
}

void
weft_network_release (WeftNetwork *net, uint32_t id)
{
  WeftTransfer *t = &net->transfers[id];

  t->live = FALSE;
  t->next_free = net->free_transfers[t->src];
  net->free_transfers[t->src] = id;
}

void
weft_network_flush_stats (WeftNetwork *net)
{
  if (net->klass->flush)
    net->klass->flush (net);
}

void
weft_network_set_plain (WeftNetwork *net, uint32_t plain)
{
  net->plain = (plain & WEFT_PLAIN_SPEEDUPS) != 0;
  weft_routing_set_memo (net->routing, !net->plain);
  weft_routes_init (net);
  if (net->klass->set_bundles)
    net->klass->set_bundles (net, !(plain & WEFT_PLAIN_BUNDLES));
}

void
weft_network_set_scan (WeftNetwork *net, WeftScan scan)
{
  if (net->klass->set_scan)
    net->klass->set_scan (net, scan);
}

void
weft_network_set_threads (WeftNetwork *net, uint32_t threads)
{
  if (net->klass->set_threads)
    net->klass->set_threads (net, CLAMP (threads, 1, WEFT_MAX_THREADS));
}

void
weft_network_adopt (WeftNetwork *net, gpointer object, GDestroyNotify destroy)
{
  g_ptr_array_set_free_func (net->adopted, NULL);
  g_ptr_array_add (net->adopted, object);
  g_ptr_array_add (net->adopted, (gpointer) destroy);
}

void
weft_network_switch_reduce (WeftNetwork *net, uint32_t node, uint64_t bytes,
                            WeftEventFn done, void *target, void *data)
{
  const WeftNode *n = &net->topo->nodes[node];
  WeftTime now = weft_sim_now (net->sim);

  g_assert (n->kind == WEFT_NODE_SWITCH && n->device->reduce_bandwidth > 0);
  WeftTime start = MAX (now, net->reduce_free_at[node]);
  WeftTime end = start + (WeftTime) ceil ((double) bytes * 1e12
                                          / n->device->reduce_bandwidth);
  net->reduce_free_at[node] = end;
  weft_sim_schedule_at (net->sim, end, done, target, data);
}

/* Transfer @id goes on over the routes of links that are up now (@lost:
 * one of its own has gone down): what it has yet to deliver is sent again,
 * as what it was asked as, to the same done function (its time so far
 * counts). */
static void
move (WeftNetwork *net, uint32_t id, gboolean lost)
{
  WeftTransfer *t = &net->transfers[id];
  uint64_t bytes = t->bytes;
  double cap = t->cap, part = t->part;
  WeftEventFn done = t->done;
  void *target = t->target, *data = t->data;
  const uint32_t *places = t->places;
  uint32_t from = t->from, to = t->to, engine = t->engine;
  gboolean keeps = FALSE;
  uint64_t left = net->klass->withdraw (net, id, lost, &keeps);

  if (left == 0)
    return;
  if (keeps)
    {
      /* It delivers what is beyond the link, the new one the rest. */
      Split *split = g_new (Split, 1);
      *split = (Split) { net, 2, done, target, data };
      g_hash_table_add (net->splits, split);
      t->done = part_done;
      t->target = split;
      t->data = NULL;
      done = part_done;
      target = split;
      data = NULL;
    }
  else
    {
      /* Off the network: what it carried counts as delivered. */
      if (net->load != NULL)
        for (uint32_t i = 0; i < t->path_len; i++)
          net->load[t->path[i]]--;
      net->bytes_delivered += bytes - left;
    }
  uint32_t kind = net->engine_kind;
  double whole = net->part;
  net->engine_kind = engine;
  net->part = part;
  if (places != NULL)
    weft_network_transfer_places (net, places, from, to, left, cap, done,
                                  target, data);
  else
    weft_network_transfer (net, from, to, left, cap, done, target, data);
  net->started--;               /* the same transfer, not another */
  net->engine_kind = kind;
  net->part = whole;
}

/* Whether transfer @t, in flight, would take other links now that some
 * have come back (since the links of @was): its links against those a
 * send from its source to its destination would take now (flow 0's,
 * where a flow's id chooses), as a set for one over every stripe, else
 * those of its own first hop, whose split changes if a first hop came
 * back.  One to or from planes is taken anew whatever. */
static gboolean
route_changed (WeftNetwork *net, const WeftTransfer *t,
               const WeftTopology *was)
{
  const uint32_t *path = t->path;
  uint32_t n = t->path_len;

  if (t->places != NULL
      || weft_routing_cost (net->routing, t->from, t->to)
             == WEFT_ROUTE_UNREACHABLE)
    return TRUE;
  if (n > 0 && path[0] >= net->topo->n_links)
    {
      path++;                   /* its send engine's */
      n--;
    }
  g_autoptr (GArray) now = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  weft_routing_first_hops (net->routing, t->from, t->to, net->hops);
  guint hops = net->hops->len;
  if (hops <= 1)
    route_part (net, t->from, t->to,
                hops ? g_array_index (net->hops, uint32_t, 0) : WEFT_NONE, 0);
  for (guint h = 0; hops <= 1 ? h < 1 : h < hops; h++)
    {
      uint32_t first = hops > 1 ? g_array_index (net->hops, uint32_t, h)
                                : WEFT_NONE;
      if (hops > 1 && !t->striped && was->links[first].share == 0)
        return TRUE;            /* a part of a split that is no more */
      if (hops > 1 && !t->striped && first != path[0])
        continue;               /* a part of its own: another's hop */
      if (hops > 1)
        route_part (net, t->from, t->to, first, 0);
      for (guint k = 0; k < net->scratch->len; k++)
        {
          uint32_t l = g_array_index (net->scratch, uint32_t, k);
          if (index_in (now, l) == now->len)
            g_array_append_val (now, l);
        }
    }
  if (now->len != n)
    return TRUE;
  for (uint32_t i = 0; i < n; i++)
    if (index_in (now, path[i]) == now->len)
      return TRUE;
  return FALSE;
}

/* Phase @data of the topology's faults begins: from now on its links are
 * as its topology has them.  A link's new rate holds for what is on it at
 * once.  Where a link goes down or comes up, routes are made anew among
 * the links that are up, and they hold for what is in flight too, as a
 * switch's forwarding tables and a GPU's NVLink striping do for the
 * packets still to come: a transfer on a link that has gone down moves to
 * them (a lossless fabric reroutes what it carries), and when a link comes
 * back a transfer in flight whose route changes takes the new one for what
 * it has left; one that finds no path ends the run (weft_network_joined()). */
static void
phase_begins (WeftSim *sim, void *target, void *data)
{
  WeftNetwork *net = target;
  const WeftTopology *base = net->topo->base ? net->topo->base : net->topo;
  const WeftTopology *next
      = g_array_index (base->phases, WeftTopoPhase, GPOINTER_TO_UINT (data))
            .topo;
  const WeftTopology *was = net->topo;
  gboolean turned = FALSE, back = FALSE;
  (void) sim;

  net->phase++;
  /* A link that comes back has turned too: the look may stop there. */
  for (uint32_t l = 0; l < next->n_links && !back; l++)
    {
      gboolean up = next->links[l].share > 0;
      turned |= up != (was->links[l].share > 0);
      back |= up && was->links[l].share == 0;
    }
  if (turned)
    routing_give (net, g_steal_pointer (&net->routing));
  net->topo = next;
  for (uint32_t l = 0; l < next->n_links; l++)
    {
      const WeftLink *link = &next->links[l];
      double rate = net->nccl > 0 ? weft_link_nccl_rate (next, link) * net->nccl
                                  : link->bandwidth;
      if (rate == net->capacity[l])
        continue;
      double old = net->capacity[l];
      net->capacity[l] = rate;
      net->klass->relink (net, l, old);
    }
  if (!turned)
    return;
  net->routing = routing_take (next);
  if (net->plain)
    weft_routing_set_memo (net->routing, FALSE);
  if (net->load != NULL)
    weft_routing_set_load (net->routing, net->load);
  weft_routes_init (net);
  if (net->plane_routes)
    g_hash_table_remove_all (net->plane_routes);

  /* Each transfer to move, with whether it crossed a link gone down. */
  g_autoptr (GArray) moving = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  for (uint32_t id = 0; id < net->n_transfers; id++)
    {
      const WeftTransfer *t = &net->transfers[id];
      uint32_t down = 0;
      for (uint32_t i = 0; t->live && !down && i < t->path_len; i++)
        down = t->path[i] < next->n_links
               && next->links[t->path[i]].share == 0;
      if (t->live && (down || (back && route_changed (net, t, was))))
        {
          uint32_t entry = id << 1 | down;
          g_array_append_val (moving, entry);
        }
    }
  for (guint i = 0; i < moving->len && net->failure == NULL; i++)
    {
      uint32_t entry = g_array_index (moving, uint32_t, i);
      move (net, entry >> 1, entry & 1);
    }
}
