/* weft: NCCL's estimate of a collective's time, as NCCL computes it to
 * choose an algorithm and protocol.  The constants are NCCL's (NCCL 2.30.7
 * src/graph/tuning.cc and src/graph/search.cc; docs/reference/hardware.md,
 * section 2); the latencies are read from protocol.c, which the executor
 * pays too. */
#include "collectives/nccl_model.h"

#include "collectives/algorithm.h"
#include "collectives/collective_run.h"

#include "union_find.h"

#include <math.h>

/* NCCL's rows by architecture: Volta, Ampere, Hopper, Blackwell. */
enum { VOLTA, AMPERE, HOPPER, BLACKWELL, ARCHS };

/* NCCL's index of a compute capability (times ten): anything below 8.0,
 * or not said, takes Volta's row, as NCCL's `minCompCap >= 80` does. */
static int
arch_of (uint32_t cc)
{
  return cc >= 100 ? BLACKWELL : cc >= 90 ? HOPPER : cc >= 80 ? AMPERE
                                                               : VOLTA;
}

/* tuning.cc's caps on a channel's bus bandwidth, GB/s, by architecture and
 * by nodes (one, two, more). */
static const double ring_ll128_max[ARCHS][3] = {        /* perChMaxRingLL128Bws */
  { 20.0, 20.0, 20.0 }, { 20.0, 20.0, 20.0 },
  { 36.7, 36.7, 36.7 }, { 40.0, 40.0, 40.0 },
};
static const double tree_ll128_max[ARCHS][3] = {        /* perChMaxTreeLL128Bws */
  { 20.0, 20.0, 20.0 }, { 20.0, 20.0, 20.0 },
  { 36.7, 36.7, 29.0 }, { 55.6, 31.67, 20.0 },
};
static const double tree_max[ARCHS][3] = {              /* perChMaxTreeBws */
  { 26.5, 18.5, 10.0 }, { 24.0, 23.6, 17.8 },
  { 38.7, 41.4, 36.0 }, { 70.0, 42.8, 24.0 },
};
static const double nvls_tree_max[ARCHS][3] = {         /* perChMaxNVLSTreeBws */
  { 26.5, 18.5, 10.0 }, { 24.0, 23.6, 17.8 },
  { 0.0, 57.7, 45.5 }, { 0.0, 96.0, 80.0 },
};
/* nvlsEfficiency: NVLS needs Hopper or later. */
static const double nvls_efficiency[ARCHS] = { 0.0, 0.0, 0.85, 0.74 };

double
weft_nccl_nvls_efficiency (const WeftTopology *topo, const uint32_t *gpus,
                           uint32_t n)
{
  uint32_t cc = G_MAXUINT32;

  for (uint32_t r = 0; r < n; r++)
    cc = MIN (cc, topo->nodes[gpus[r]].device->compute_capability);
  double share = nvls_efficiency[arch_of (cc)];
  return share > 0 ? share : nvls_efficiency[HOPPER];
}

/* tuning.cc's model refinements. */
#define TREE_SHARE 0.92                 /* tree all_reduce busBw * .92 */
#define TREE_LL_DIVISOR 3.8             /* tree LL busBw / 3.8 */
#define TREE_LL128_ONE_NODE (7.0 / 9.0)
#define TREE_LL128_NODES (120.0 / 128.0)
#define TREE_RATIO 0.5                  /* tree busBw to algBw */
#define PAT_SHARE 0.75                  /* PAT busBw * .75 */
/* CollNet Direct on Hopper and later: busBw * .85; and 0.4 us of "arity
 * serialization" a local rank, twice. */
#define COLLNET_SHARE_HOPPER 0.85
#define COLLNET_ARITY_LAT 0.4
/* ncclPatEnable(): PAT needs CUDA's atomics of sm60 and later. */
#define PAT_MIN_CC 60
/* getNetOverhead(): 1 us per network post (x86 Intel, and anything but
 * AMD, 2 us), three times for Simple; a ring across servers pays at least
 * that per step. */
#define NET_OVERHEAD 1.0
#define NET_OVERHEAD_SIMPLE 3.0
/* The ring's plateau: multi-node Simple all_reduce latency times 1.4
 * (1.9 before Ampere) once each rank's part of a channel is 64 B. */
#define RING_PLATEAU 1.4
#define RING_PLATEAU_OLD 1.9
#define RING_PLATEAU_BYTES 64

/* treeCorrectionFactor[protocol][log2 (bytes / 64)]: NCCL's correction of
 * the tree's bandwidth at middle sizes, 64 B to 256 MiB. */
static const double tree_correction[WEFT_PROTOCOL_RAW][23] = {
  { 1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7,
    .8, .9, 1.0, 1.0, 1.0, 1.0 },
  { 1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8,
    .9, .9, .9, .9, 1.0, 1.0 },
  { .9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8,
    .7, .7, .8, .9, .9 },
};

/* search.cc's per-channel speeds, GB/s, tried from the fastest down:
 * inside one server and across servers, before Hopper, Hopper, and
 * Blackwell. */
static const double speeds_intra[3][12] = {
  { 40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0 },
  { 60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0 },
  { 90.0, 80.0, 70.0, 60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0 },
};
static const double speeds_inter[3][19] = {
  { 48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0,
    5.0, 4.0, 3.0, 2.4, 1.2, 0.24, 0.12 },
  { 48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0,
    3.0, 2.4, 1.2, 0.24, 0.12 },
  { 96.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0,
    6.0, 3.0, 2.4, 1.2, 0.24, 0.12 },
};
/* A speed array ends at its first 0. */
#define N_SPEEDS(a) G_N_ELEMENTS (a[0])

/* Ring and tree graphs look for at most MAXCHANNELS / 2 channels
 * (src/include/device.h MAXCHANNELS 64, init.cc), NVLS for one a GPU of
 * the server, at most NCCL_MAX_NVLS_ARITY. */
#define MAX_CHANNELS 32
#define MAX_NVLS_ARITY 32
/* Point-to-point channels: at most MAXCHANNELS (NCCL_MAX_P2P_NCHANNELS's
 * default). */
#define P2P_MAX_CHANNELS 64
/* search.cc: a lower speed is tried while it is at least this share of
 * the best found; channels of 25 GB/s or more are doubled at half the
 * speed (but on Hopper and later those under 50 GB/s when there are more
 * than four). */
#define SLOWER_SHARE 0.49
#define DUP_MIN_BW 25.0
#define DUP_MIN_BW_HOPPER 50.0
#define DUP_MAX_CHANNELS 4
/* search.cc's graph when nothing fits: one channel at 0.1 GB/s. */
#define FALLBACK_BW 0.1

/* The order NCCL goes through its algorithms, which decides between equal
 * estimates (NCCL_ALGO_TREE is 0, RING 1, COLLNET_DIRECT 2, NVLS 4,
 * NVLS_TREE 5, PAT 6). */
static const WeftCostSet nccl_order[WEFT_COSTS_COUNT] = {
  WEFT_COSTS_TREE, WEFT_COSTS_RING, WEFT_COSTS_COLLNET, WEFT_COSTS_NVLS,
  WEFT_COSTS_NVLS_TREE, WEFT_COSTS_PAT,
};

/* How many channels of @speed fit: each takes @speed of every GPU's
 * links (@per_gpu in all) and, across servers, of one NIC. */
static uint32_t
channels_at (const WeftNcclServer *s, double per_gpu, uint32_t max,
             double speed)
{
  /* A hair over, so that 6 x 60 fits in 360. */
  double c = floor (per_gpu / speed + 1e-9);

  if (s->nics > 0)
    c = MIN (c, s->nics * floor (s->nic / speed + 1e-9));
  return (uint32_t) MIN (c, (double) max);
}

WeftNcclGraph
weft_nccl_search (const WeftNcclServer *s, WeftNcclPattern pattern)
{
  int row = s->compute_capability >= 100 ? 2 : s->compute_capability >= 90;
  const double *speeds = s->nics > 0 ? speeds_inter[row] : speeds_intra[row];
  int n = s->nics > 0 ? (int) N_SPEEDS (speeds_inter)
                      : (int) N_SPEEDS (speeds_intra);
  uint32_t min = 1, max = MAX_CHANNELS;
  /* Patterns other than a ring need not come back to where they began:
   * NCCL lets them have a GPU's links over n - 1 of its GPUs. */
  double per_gpu = s->gpu_total;
  WeftNcclGraph best = { 0, 0, 0 };

  while (n > 0 && speeds[n - 1] == 0)
    n--;
  if (pattern != WEFT_NCCL_PATTERN_RING && s->gpus > 1)
    per_gpu *= s->gpus / (s->gpus - 1.0);
  if (pattern == WEFT_NCCL_PATTERN_NVLS)
    {
      max = MIN (MAX_NVLS_ARITY, s->gpus);
      /* One server's NVLS pulls from every GPU alike. */
      if (s->nics == 0)
        min = max;
    }
  int i = 0;
  while (i < n - 1 && (speeds[i] > s->gpu_path || speeds[i] * min > per_gpu))
    i++;
  /* First pass: from the fastest speed down, keep the most channels times
   * speed; stop once that is all a GPU has, or the next speed is under
   * half the best. */
  for (; i < n; i++)
    {
      uint32_t c = channels_at (s, per_gpu, max, speeds[i]);
      if (c >= min && c * speeds[i] > best.channels * best.bw_intra)
        best = (WeftNcclGraph) { c, speeds[i], speeds[i] };
      if (best.channels > 0
          && (best.channels * best.bw_inter >= s->gpu_total
              || (i + 1 < n && speeds[i + 1] / best.bw_inter <= SLOWER_SHARE)))
        break;
    }
  if (best.channels == 0)
    return (WeftNcclGraph) { 1, FALLBACK_BW, FALLBACK_BW };
  /* Fast channels are doubled at half the speed, to use more SMs. */
  if (pattern != WEFT_NCCL_PATTERN_NVLS && best.bw_intra >= DUP_MIN_BW
      && !(s->compute_capability > 80 && best.bw_intra < DUP_MIN_BW_HOPPER
           && best.channels > DUP_MAX_CHANNELS))
    {
      uint32_t dup = MIN (best.channels * 2, max);
      uint32_t split = (dup + best.channels - 1) / best.channels;
      best = (WeftNcclGraph) { dup, best.bw_intra / split,
                               best.bw_inter / split };
    }
  /* Second pass, rings only: a faster speed with as many channels. */
  if (pattern == WEFT_NCCL_PATTERN_RING)
    {
      int j = 0;
      while (j < n - 1 && speeds[j] > best.bw_inter)
        j++;
      while (j > 0
             && channels_at (s, per_gpu, max, speeds[j - 1]) >= best.channels)
        {
          j--;
          best.bw_intra = best.bw_inter = speeds[j];
        }
    }
  return best;
}

/* The least power of two not under @v. */
static uint32_t
pow2_up (uint32_t v)
{
  uint32_t p = 1;

  while (p < v)
    p <<= 1;
  return p;
}

/* NCCL's channels for a send or receive to one peer (paths.cc,
 * ncclTopoComputeP2pChannels()): the least over the pairs of
 * ncclTopoGetNchannels(), rounded up to a power of two, and at most its
 * point-to-point channels, the collectives' (init.cc: the least of the
 * ring's and the tree's graphs, doubled) rounded up likewise.  A peer in
 * the server over an NVLink path takes two a lane of the path (through
 * NVSwitch chips, every lane of the GPU's: @lanes, the least of the
 * GPUs'), any other in the server two; without NVSwitch chips some pair
 * is not one NVLink path (a hop through another GPU, or PCIe), so the
 * least is two.  A peer across the network takes two, halved while every
 * rank's would pass four for each point-to-point channel (counted before
 * their rounding), and at least one for each NIC its bandwidth needs,
 * which weft takes as one. */
static uint32_t
p2p_channels (const WeftNcclSystem *sys, uint32_t lanes)
{
  uint32_t coll = 2 * MIN (sys->graph[WEFT_COSTS_RING].channels,
                           sys->graph[WEFT_COSTS_TREE].channels);
  uint32_t p2p = CLAMP (coll, 1, P2P_MAX_CHANNELS);
  uint32_t least = sys->nvswitch ? 2 * MAX (lanes, 1) : 2;

  if (sys->n_nodes > 1)
    {
      uint32_t net = 2;
      while (net * sys->n_ranks > 4 * p2p && net > 1)
        net /= 2;
      least = MIN (least, net);
    }
  return MIN (pow2_up (least), pow2_up (p2p));
}

WeftProtocolKind
weft_nccl_p2p_protocol (const WeftNcclSystem *sys, uint64_t bytes)
{
  return bytes <= (uint64_t) MAX (sys->p2p_channels, 1)
                      * WEFT_NCCL_P2P_LL_THRESHOLD
             ? WEFT_PROTOCOL_LL
             : WEFT_PROTOCOL_SIMPLE;
}

/* The server of @topo's node @v: the root of the links that are not the
 * network's, in @parent. */
static void
servers_of (const WeftTopology *topo, uint32_t *parent)
{
  for (uint32_t v = 0; v < topo->n_nodes; v++)
    parent[v] = v;
  for (uint32_t l = 0; l < topo->n_links; l++)
    {
      const WeftLink *link = &topo->links[l];
      const WeftLinkType *t = g_ptr_array_index (topo->link_types,
                                                 link->type);
      if (t->family != WEFT_FAMILY_NETWORK)
        weft_union (parent, link->src, link->dst);
    }
}

static const WeftLinkType *
type_of (const WeftTopology *topo, const WeftLink *link)
{
  return g_ptr_array_index (topo->link_types, link->type);
}

/* What NCCL's search sees of the GPU @gpu: its NVLinks in all (and
 * whether they go to switches, which NCCL merges into one), its fastest
 * NVLink, and its other links in all (PCIe); and the lanes of its
 * NVLinks to switches. */
typedef struct {
  double nvlink, nvlink_to_switch, nvlink_widest, other;
  uint32_t lanes_to_switch;
} GpuLinks;

static GpuLinks
gpu_links (const WeftTopology *topo, uint32_t gpu)
{
  GpuLinks g = { 0, 0, 0, 0, 0 };

  for (uint32_t i = topo->out_start[gpu]; i < topo->out_start[gpu + 1]; i++)
    {
      const WeftLink *l = &topo->links[topo->out_links[i]];
      double rate = weft_link_nccl_rate (topo, l) / 1e9;
      WeftLinkFamily family = type_of (topo, l)->family;
      if (family == WEFT_FAMILY_NVLINK)
        {
          g.nvlink += rate;
          g.nvlink_widest = MAX (g.nvlink_widest, rate);
          if (topo->nodes[l->dst].kind == WEFT_NODE_SWITCH)
            {
              g.nvlink_to_switch += rate;
              g.lanes_to_switch += l->lanes;
            }
        }
      else if (family != WEFT_FAMILY_NETWORK)
        g.other = MAX (g.other, rate);
    }
  return g;
}

/* What one NIC @nic carries out: its network links, at most what its
 * host side brings it (GB/s). */
static double
nic_rate (const WeftTopology *topo, uint32_t nic)
{
  double net = 0, host = 0;

  for (uint32_t i = topo->out_start[nic]; i < topo->out_start[nic + 1]; i++)
    {
      const WeftLink *l = &topo->links[topo->out_links[i]];
      double rate = weft_link_nccl_rate (topo, l) / 1e9;
      if (type_of (topo, l)->family == WEFT_FAMILY_NETWORK)
        net += rate;
      else
        host += rate;
    }
  return MIN (net, host);
}

/* The server NCCL's search sees from the first rank's: its GPUs' links at
 * the least of any rank's, and with several servers its NICs. */
static void
server_of (WeftNcclServer *s, WeftNcclSystem *sys, const WeftTopology *topo,
           const uint32_t *gpus, uint32_t n, const uint32_t *parent,
           uint32_t *lanes)
{
  uint32_t home = weft_find_root ((uint32_t *) parent, gpus[0]);
  double nvlink = G_MAXDOUBLE, to_switch = G_MAXDOUBLE;
  double widest = G_MAXDOUBLE, other = G_MAXDOUBLE;

  sys->compute_capability = G_MAXUINT32;
  *lanes = G_MAXUINT32;
  for (uint32_t r = 0; r < n; r++)
    {
      GpuLinks g = gpu_links (topo, gpus[r]);
      *lanes = MIN (*lanes, g.lanes_to_switch);
      nvlink = MIN (nvlink, g.nvlink);
      to_switch = MIN (to_switch, g.nvlink_to_switch);
      widest = MIN (widest, g.nvlink_widest);
      other = MIN (other, g.other);
      sys->compute_capability = MIN (sys->compute_capability,
                                     topo->nodes[gpus[r]].device
                                         ->compute_capability);
    }
  sys->nvlink = nvlink > 0;
  sys->nvswitch = to_switch > 0;
  *s = (WeftNcclServer) { .compute_capability = sys->compute_capability };
  s->gpu_total = sys->nvlink ? nvlink : other;
  /* NVLinks to switches are one path to every GPU; between GPUs, each
   * link is a path of its own. */
  s->gpu_path = !sys->nvlink ? other : to_switch > 0 ? to_switch : widest;
  s->gpus = n / sys->n_nodes;
  if (sys->n_nodes == 1)
    return;
  for (uint32_t v = 0; v < topo->n_nodes; v++)
    if (topo->nodes[v].kind == WEFT_NODE_NIC
        && weft_find_root ((uint32_t *) parent, v) == home)
      {
        double rate = nic_rate (topo, v);
        if (rate > 0)
          {
            s->nic = s->nics ? MIN (s->nic, rate) : rate;
            s->nics++;
          }
      }
  /* A GPU reaches a NIC through its host links (PCIe). */
  if (s->nics > 0)
    s->gpu_path = MIN (other > 0 ? other : s->nic, s->nic);
}

/* Whether every GPU reaches a switch that reduces (NVLS). */
static gboolean
has_nvls (const WeftTopology *topo, const uint32_t *gpus, uint32_t n)
{
  for (uint32_t r = 0; r < n; r++)
    {
      gboolean found = FALSE;
      for (uint32_t i = topo->out_start[gpus[r]];
           i < topo->out_start[gpus[r] + 1] && !found; i++)
        {
          const WeftLink *l = &topo->links[topo->out_links[i]];
          const WeftNode *d = &topo->nodes[l->dst];
          found = d->kind == WEFT_NODE_SWITCH
                  && d->device->reduce_bandwidth > 0
                  && type_of (topo, l)->family == WEFT_FAMILY_NVLINK;
        }
      if (!found)
        return FALSE;
    }
  return TRUE;
}

void
weft_nccl_system_from_topology (WeftNcclSystem *sys, const WeftTopology *topo,
                                const uint32_t *gpus, uint32_t n)
{
  g_autofree uint32_t *parent = g_new (uint32_t, topo->n_nodes);
  g_autoptr (GHashTable) seen = g_hash_table_new (NULL, NULL);
  WeftNcclServer server;
  uint32_t lanes;

  g_assert (n >= 2);
  servers_of (topo, parent);
  for (uint32_t r = 0; r < n; r++)
    g_hash_table_add (seen, GUINT_TO_POINTER (weft_find_root (parent,
                                                              gpus[r])));
  *sys = (WeftNcclSystem) { .n_ranks = n,
                            .n_nodes = g_hash_table_size (seen) };
  server_of (&server, sys, topo, gpus, n, parent, &lanes);
  int row = sys->n_nodes <= 1 ? 0 : sys->n_nodes == 2 ? 1 : 2;
  sys->ll_max_bw = G_MAXDOUBLE;
  for (uint32_t r = 0; r < n; r++)
    sys->ll_max_bw = MIN (sys->ll_max_bw,
                          topo->nodes[gpus[r]].device->ll_bandwidth[row]
                              / 1e9);
  sys->nvls = sys->compute_capability >= 90 && has_nvls (topo, gpus, n);
  sys->graph[WEFT_COSTS_RING] = weft_nccl_search (&server,
                                                  WEFT_NCCL_PATTERN_RING);
  sys->graph[WEFT_COSTS_TREE] = weft_nccl_search (&server,
                                                  WEFT_NCCL_PATTERN_TREE);
  /* PAT runs on the tree's graph (init.cc's graphs[]); CollNet's own
   * graph is searched with its own pattern, which weft takes as the
   * tree's. */
  sys->graph[WEFT_COSTS_PAT] = sys->graph[WEFT_COSTS_TREE];
  sys->graph[WEFT_COSTS_COLLNET] = sys->graph[WEFT_COSTS_TREE];
  if (sys->nvls)
    sys->graph[WEFT_COSTS_NVLS] = sys->graph[WEFT_COSTS_NVLS_TREE]
        = weft_nccl_search (&server, WEFT_NCCL_PATTERN_NVLS);
  sys->p2p_channels = p2p_channels (sys, lanes);
}

/* NCCL's log2i(): the floor of log2 (@v), -1 for 0. */
static int
log2i (uint64_t v)
{
  int l = -1;

  for (; v; v >>= 1)
    l++;
  return l;
}

/* Whether NCCL considers @set with @p for @op on @sys at all. */
static gboolean
considered (const WeftNcclSystem *sys, WeftOp op, WeftCostSet set,
            WeftProtocolKind p)
{
  gboolean nvls = set == WEFT_COSTS_NVLS || set == WEFT_COSTS_NVLS_TREE;

  if ((nvls || set == WEFT_COSTS_PAT || set == WEFT_COSTS_COLLNET)
      && p != WEFT_PROTOCOL_SIMPLE)
    return FALSE;
  switch (set)
    {
    case WEFT_COSTS_RING:
      /* Point-to-point (all_to_all, send_recv) has no cost model. */
      if (op == WEFT_OP_ALL_TO_ALL || op == WEFT_OP_SEND_RECV)
        return FALSE;
      break;
    case WEFT_COSTS_TREE:
      if (op != WEFT_OP_ALL_REDUCE)
        return FALSE;
      break;
    case WEFT_COSTS_NVLS:
      /* all_reduce, and from NCCL 2.19 on all_gather and reduce_scatter
       * (tuning.cc); across servers NVLS needs CollNet, which weft does
       * not have. */
      if ((op != WEFT_OP_ALL_REDUCE && op != WEFT_OP_ALL_GATHER
           && op != WEFT_OP_REDUCE_SCATTER)
          || !sys->nvls || sys->n_nodes > 1)
        return FALSE;
      break;
    case WEFT_COSTS_NVLS_TREE:
      if (op != WEFT_OP_ALL_REDUCE || !sys->nvls || sys->n_nodes == 1)
        return FALSE;
      break;
    case WEFT_COSTS_COLLNET:
      /* Across servers, on NVSwitch systems only (tuning.cc); whether the
       * network reduces is the fit check's to say. */
      if (op != WEFT_OP_ALL_REDUCE || sys->n_nodes < 2 || !sys->nvswitch)
        return FALSE;
      break;
    case WEFT_COSTS_PAT:
      /* ncclPatEnable(): one GPU a node. */
      if ((op != WEFT_OP_ALL_GATHER && op != WEFT_OP_REDUCE_SCATTER)
          || sys->n_nodes != sys->n_ranks
          || sys->compute_capability < PAT_MIN_CC)
        return FALSE;
      break;
    default:
      return FALSE;
    }
  /* LL128 only where every path of a server is NVLink (typeIntra <=
   * PATH_NVB), from Volta on. */
  return p != WEFT_PROTOCOL_LL128
         || (sys->nvlink && sys->compute_capability >= 70);
}

/* busBw of @set with @p: channels times their bandwidth, with NCCL's
 * corrections (GB/s). */
static double
bus_bandwidth (const WeftNcclSystem *sys, WeftOp op, WeftCostSet set,
               WeftProtocolKind p)
{
  const WeftNcclGraph *g = &sys->graph[set];
  int arch = arch_of (sys->compute_capability);
  int nodes = sys->n_nodes <= 1 ? 0 : sys->n_nodes == 2 ? 1 : 2;
  double bw = sys->n_nodes <= 2 ? g->bw_intra : g->bw_inter;
  double ll_max = sys->ll_max_bw > 0 ? sys->ll_max_bw : G_MAXDOUBLE;

  if (set == WEFT_COSTS_NVLS || set == WEFT_COSTS_NVLS_TREE)
    {
      if (g->channels < 2)
        return 0;
      double ppn = (double) sys->n_ranks / sys->n_nodes;
      double intra = g->bw_intra * nvls_efficiency[arch]
                     * (g->channels - 1) / g->channels;
      /* all_reduce pipelines its reduction and its multicast. */
      intra *= op == WEFT_OP_ALL_REDUCE ? 2.0 : (ppn - 1) / ppn;
      double inter = g->bw_inter * (sys->n_nodes <= 2
                                    && set == WEFT_COSTS_NVLS_TREE ? 2 : 1);
      bw = MIN (intra, inter);
      if (set == WEFT_COSTS_NVLS_TREE)
        bw = MIN (bw, nvls_tree_max[arch][nodes]);
    }
  double bus = g->channels * bw;
  double share = weft_protocol_costs (set, p)->efficiency;
  if (set == WEFT_COSTS_PAT)
    return bus * PAT_SHARE;
  if (set == WEFT_COSTS_COLLNET)
    {
      /* Always bwIntra; full speed needs a NIC a GPU: divided by the GPUs
       * a channel, less half of the excess. */
      double ppn = (double) sys->n_ranks / sys->n_nodes;
      double factor = ppn / g->channels;
      factor -= (factor - 1) / 2;
      bus = g->channels * g->bw_intra / factor;
      return sys->compute_capability >= 90 ? bus * COLLNET_SHARE_HOPPER : bus;
    }
  if (set == WEFT_COSTS_RING && p == WEFT_PROTOCOL_LL)
    bus = MIN (ll_max, bus * share);
  if (set == WEFT_COSTS_RING && p == WEFT_PROTOCOL_LL128)
    bus = MIN (bus * share, g->channels * ring_ll128_max[arch][nodes]);
  if (set == WEFT_COSTS_TREE)
    {
      bus = MIN (bus * TREE_SHARE, g->channels * tree_max[arch][nodes]);
      if (p == WEFT_PROTOCOL_LL)
        bus = MIN (bus / TREE_LL_DIVISOR, ll_max);
      if (p == WEFT_PROTOCOL_LL128)
        bus = MIN (bus * (sys->n_nodes == 1 ? TREE_LL128_ONE_NODE
                                            : TREE_LL128_NODES),
                   g->channels * tree_ll128_max[arch][nodes]);
    }
  return bus;
}

double
weft_nccl_channel_cap (const WeftNcclSystem *sys, WeftCostSet set,
                       WeftProtocolKind p)
{
  const WeftNcclGraph *g = &sys->graph[set];
  int arch = arch_of (sys->compute_capability);
  int nodes = sys->n_nodes <= 1 ? 0 : sys->n_nodes == 2 ? 1 : 2;
  double cap = 0;

  if (set == WEFT_COSTS_RING && p == WEFT_PROTOCOL_LL128)
    cap = g->channels * ring_ll128_max[arch][nodes];
  else if (set == WEFT_COSTS_TREE && p < WEFT_PROTOCOL_RAW)
    {
      cap = g->channels * tree_max[arch][nodes];
      if (p == WEFT_PROTOCOL_LL128)
        cap = MIN (cap, g->channels * tree_ll128_max[arch][nodes]);
    }
  return cap * 1e9;
}

/* NCCL's latency of @set with @p for @op (us). */
static double
latency (const WeftNcclSystem *sys, WeftOp op, WeftCostSet set,
         WeftProtocolKind p, int nsteps)
{
  WeftNcclHw intra_hw = sys->nvlink ? WEFT_NCCL_HW_NVLINK : WEFT_NCCL_HW_PCI;
  double ppn = sys->n_ranks / sys->n_nodes;
  double base = weft_protocol_nccl_base (set, p);
  double intra = weft_protocol_nccl_hw (intra_hw, set, p);
  /* With one GPU a node nothing hides the network's latency: NCCL takes
   * the tree's. */
  double inter = weft_protocol_nccl_hw (WEFT_NCCL_HW_NET,
                                        ppn == 1 ? WEFT_COSTS_TREE : set, p);
  int log_nodes = log2i (sys->n_nodes);

  switch (set)
    {
    case WEFT_COSTS_RING:
      if (op == WEFT_OP_BROADCAST || op == WEFT_OP_REDUCE)
        /* Channels that are all the same ring pipeline: one step. */
        return base + weft_protocol_nccl_hw (sys->n_nodes == 1
                                             ? intra_hw : WEFT_NCCL_HW_NET,
                                             set, p);
      {
        int n_inter = sys->n_nodes == 1 ? 0
                      : op == WEFT_OP_ALL_REDUCE ? 2 * ((int) sys->n_nodes - 1)
                                                 : (int) sys->n_nodes - 1;
        if (sys->n_nodes > 1)
          intra = MAX (intra, p == WEFT_PROTOCOL_SIMPLE ? NET_OVERHEAD_SIMPLE
                                                        : NET_OVERHEAD);
        return base + (nsteps - n_inter) * intra + n_inter * inter;
      }
    case WEFT_COSTS_TREE:
      return base + 2 * ((ppn - 1) * intra + log_nodes * inter);
    case WEFT_COSTS_NVLS:
      return intra + (sys->n_nodes > 1 ? inter : 0);
    case WEFT_COSTS_NVLS_TREE:
      return base + intra + 2 * log_nodes * inter;
    case WEFT_COSTS_COLLNET:
      return base + 2 * (MIN (1, ppn - 1) * intra
                         + (ppn - 1) * COLLNET_ARITY_LAT)
             + inter;
    case WEFT_COSTS_PAT:
      return base + log_nodes * (inter / WEFT_PAT_LOG_DIVISOR)
             + sys->n_ranks * WEFT_PAT_PER_RANK;
    default:
      g_assert_not_reached ();
    }
}

void
weft_nccl_model_tune (WeftNcclModel *m, const WeftNcclSystem *sys, WeftOp op)
{
  uint32_t n = sys->n_ranks;
  int nsteps = op == WEFT_OP_ALL_REDUCE ? 2 * ((int) n - 1)
               : op == WEFT_OP_ALL_GATHER || op == WEFT_OP_REDUCE_SCATTER
                   ? (int) n - 1 : (int) n;

  *m = (WeftNcclModel) { op, n, sys->n_nodes,
                         sys->graph[WEFT_COSTS_RING].channels,
                         sys->compute_capability, { { 0 } }, { { 0 } } };
  for (int set = 0; set < WEFT_COSTS_COUNT; set++)
    for (int p = 0; p < WEFT_PROTOCOL_RAW; p++)
      {
        if (!considered (sys, op, set, p))
          continue;
        double bus = bus_bandwidth (sys, op, set, p);
        /* Bus bandwidth to algorithm bandwidth: a tree moves the buffer
         * up and down; NCCL leaves PAT's as it is. */
        double ratio = set == WEFT_COSTS_TREE || set == WEFT_COSTS_COLLNET
                           ? TREE_RATIO
                       : set == WEFT_COSTS_PAT ? 1.0
                                               : (double) n / nsteps;
        m->bandwidth[set][p] = bus * ratio;
        m->latency[set][p] = latency (sys, op, set, p, nsteps);
      }
}

double
weft_nccl_model_time (const WeftNcclModel *m, WeftCostSet set,
                      WeftProtocolKind protocol, uint64_t bytes)
{
  g_assert (protocol < WEFT_PROTOCOL_RAW);
  double bw = m->bandwidth[set][protocol];
  double lat = m->latency[set][protocol];
  int log_size = log2i (bytes >> 6);

  if (bw <= 0)
    return -1;
  if (set == WEFT_COSTS_TREE && m->op == WEFT_OP_ALL_REDUCE && log_size >= 0
      && log_size < (int) G_N_ELEMENTS (tree_correction[0]))
    bw *= tree_correction[protocol][log_size];
  if (set == WEFT_COSTS_RING && protocol == WEFT_PROTOCOL_SIMPLE
      && m->n_nodes > 1 && m->op == WEFT_OP_ALL_REDUCE
      && bytes / ((uint64_t) MAX (m->channels, 1) * m->n_ranks)
             >= RING_PLATEAU_BYTES)
    lat *= m->compute_capability < 80 ? RING_PLATEAU_OLD : RING_PLATEAU;
  /* GB/s is 1000 bytes a microsecond. */
  return lat + bytes / (1000.0 * bw);
}

int
weft_nccl_model_pick (const WeftNcclModel *m,
                      const gboolean (*fits)[WEFT_PROTOCOL_COUNT],
                      uint64_t bytes, double *estimate)
{
  double least = G_MAXDOUBLE;
  int pick = -1;

  for (int pair = 0; pair < WEFT_PAIRS; pair++)
    estimate[pair] = -1;
  for (int k = 0; k < WEFT_COSTS_COUNT; k++)
    for (int a = 0; a < WEFT_ALG_COUNT; a++)
      for (int p = 0; p < WEFT_PROTOCOL_RAW; p++)
        {
          int pair = a * WEFT_PROTOCOL_COUNT + p;
          if (!fits[a][p] || !weft_algorithm_in_nccl (a)
              || weft_algorithm_get (a)->costs != nccl_order[k])
            continue;
          estimate[pair] = weft_nccl_model_time (m, nccl_order[k], p, bytes);
          if (estimate[pair] >= 0 && estimate[pair] < least)
            {
              least = estimate[pair];
              pick = pair;
            }
        }
  return pick;
}
