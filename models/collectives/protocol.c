/* weft: NCCL's protocols as costs, with NCCL's published constants
 * (docs/reference/hardware.md, section 2: NVIDIA/nccl v2.30.7,
 * src/graph/tuning.cc, baseLat and hwLat).  Bandwidth relative to Simple is
 * NCCL's correction: LL gets half (4 data bytes and a 4-byte flag in each
 * 8), at most the GPU's ll_bandwidth (NCCL's llMaxBw),
 * LL128 0.92. */
#include "collectives/protocol.h"

#include "collectives/algorithm.h"

#include <string.h>

#define US(x) ((WeftTime) ((x) * 1e6 + 0.5))

/* NCCL's constants, in us as tuning.cc writes them (NCCL 2.30.7
 * src/graph/tuning.cc, baseLat and hwLat; docs/reference/hardware.md,
 * section 2), by cost set (NCCL's algorithm) and protocol.  Both the
 * executor's costs below and NCCL's own estimate (nccl_model.c) read
 * them here. */
static const double base_lat[WEFT_COSTS_COUNT][WEFT_PROTOCOL_RAW] = {
  [WEFT_COSTS_RING] = { 6.6, 14.0, 8.4 },
  [WEFT_COSTS_TREE] = { 6.8, 14.0, 8.4 },
  [WEFT_COSTS_NVLS] = { 0, 0, 0 },
  [WEFT_COSTS_NVLS_TREE] = { 0, 0, 0 },
  [WEFT_COSTS_PAT] = { 8.0, 8.0, 8.0 },
  [WEFT_COSTS_COLLNET] = { 0, 0, 0 },
};

/* [hardware][set][protocol]; NVLS, NVLS_TREE, PAT and CollNet (NCCL's
 * CollNetDirect) run Simple only. */
static const double hw_lat[WEFT_NCCL_HW_COUNT][WEFT_COSTS_COUNT]
                          [WEFT_PROTOCOL_RAW] = {
  [WEFT_NCCL_HW_NVLINK] = {
    [WEFT_COSTS_RING] = { 0.6, 1.9, 3.4 },
    [WEFT_COSTS_TREE] = { 0.6, 1.25, 4.0 },
    [WEFT_COSTS_NVLS] = { 0, 0, 25.0 },
    [WEFT_COSTS_NVLS_TREE] = { 0, 0, 25.0 },
    [WEFT_COSTS_PAT] = { 0, 0, 4.0 },
    [WEFT_COSTS_COLLNET] = { 0, 0, 3.7 },
  },
  [WEFT_NCCL_HW_PCI] = {
    [WEFT_COSTS_RING] = { 1.0, 2.5, 5.7 },
    [WEFT_COSTS_TREE] = { 1.0, 1.9, 4.0 },
    [WEFT_COSTS_PAT] = { 0, 0, 4.0 },
    [WEFT_COSTS_COLLNET] = { 0, 0, 3.7 },
  },
  [WEFT_NCCL_HW_NET] = {
    [WEFT_COSTS_RING] = { 2.7, 4.0, 14.0 },
    [WEFT_COSTS_TREE] = { 5.0, 8.5, 14.0 },
    [WEFT_COSTS_NVLS] = { 0, 0, 18.0 },
    [WEFT_COSTS_NVLS_TREE] = { 0, 0, 20.9 },
    [WEFT_COSTS_PAT] = { 0, 0, 14.0 },
    [WEFT_COSTS_COLLNET] = { 0, 0, 31.0 },
  },
};

/* The share of Simple's bandwidth each protocol moves data at: LL half
 * (4 data bytes and a 4-byte flag in each 8; NCCL's ring LL busBw * .5),
 * LL128 NCCL's 0.92 (120 of each 128 bytes), and NVLS NCCL's
 * nvlsEfficiency for Hopper, 0.85 (tuning.cc), which a collective's run
 * and a trace's replace with their GPUs' architecture's
 * (weft_nccl_nvls_efficiency()). */
#define LL_SHARE 0.5
#define LL128_SHARE 0.92
#define NVLS_SHARE 0.85

/* The links alone: no latency but the fabric's, every byte at each link's
 * own rate (WeftNetworkConfig.nccl 0), whatever the algorithm. */
static const WeftProtocol raw = { "raw", 0, 0, 0, 0, 0, 1.0, FALSE, TRUE, 0 };

static const char *const names[WEFT_PROTOCOL_RAW] = { "LL", "LL128",
                                                      "Simple" };

/* [set][protocol], made once from NCCL's constants; a set without a
 * protocol has no name there. */
static WeftProtocol table[WEFT_COSTS_COUNT][WEFT_PROTOCOL_COUNT];

/* NCCL's ring and tree pay their latency per send, by what the send
 * crosses.  NVLS pays 25 us over NVLink (its hwLat), half on the way to
 * the switch and half on the way back, and half of its 18 us over the
 * network each way likewise.  NVLS_TREE's NCCL latency is intraLat + 2
 * log2(nodes) interLat: the 25 us are split over the four NVLink sends on
 * the way (to the switch and back, for the reduction and for the
 * multicast), and each send of the tree across servers pays 20.9 us; its
 * bandwidth is the network's, Simple's full share. */
static void
fill_table (void)
{
  static const double share[WEFT_PROTOCOL_RAW] = { LL_SHARE, LL128_SHARE,
                                                   1.0 };

  for (int set = 0; set < WEFT_COSTS_COUNT; set++)
    for (int p = 0; p < WEFT_PROTOCOL_RAW; p++)
      {
        gboolean nvls = set == WEFT_COSTS_NVLS || set == WEFT_COSTS_NVLS_TREE;
        if ((nvls || set == WEFT_COSTS_PAT || set == WEFT_COSTS_COLLNET)
            && p != WEFT_PROTOCOL_SIMPLE)
          continue;
        if (set == WEFT_COSTS_PAT)
          {
            /* Each send is one step of a tree's dimensions. */
            table[set][p] = (WeftProtocol) {
              names[p], US (base_lat[set][p]), US (WEFT_PAT_PER_RANK),
              US (hw_lat[WEFT_NCCL_HW_NVLINK][set][p] / WEFT_PAT_LOG_DIVISOR),
              US (hw_lat[WEFT_NCCL_HW_PCI][set][p] / WEFT_PAT_LOG_DIVISOR),
              US (hw_lat[WEFT_NCCL_HW_NET][set][p] / WEFT_PAT_LOG_DIVISOR),
              1.0, FALSE, FALSE, 0,
            };
            continue;
          }
        /* CollNet pays its network latency half on the way into the
         * network and half on the way out, as NVLS. */
        gboolean halves = set == WEFT_COSTS_NVLS || set == WEFT_COSTS_COLLNET;
        double split = set == WEFT_COSTS_NVLS ? 2 : set == WEFT_COSTS_NVLS_TREE
                                                    ? 4 : 1;
        double nvlink = hw_lat[WEFT_NCCL_HW_NVLINK][set][p] / split;
        table[set][p] = (WeftProtocol) {
          names[p], US (base_lat[set][p]), 0, US (nvlink),
          US (nvls ? nvlink : hw_lat[WEFT_NCCL_HW_PCI][set][p]),
          US (hw_lat[WEFT_NCCL_HW_NET][set][p] / (halves ? 2 : 1)),
          set == WEFT_COSTS_NVLS ? NVLS_SHARE : share[p],
          p == WEFT_PROTOCOL_LL, FALSE, 0,
        };
      }
}

double
weft_protocol_nccl_base (WeftCostSet set, WeftProtocolKind kind)
{
  g_assert (kind < WEFT_PROTOCOL_RAW);
  return base_lat[set][kind];
}

double
weft_protocol_nccl_hw (WeftNcclHw hw, WeftCostSet set, WeftProtocolKind kind)
{
  g_assert (kind < WEFT_PROTOCOL_RAW);
  return hw_lat[hw][set][kind];
}

const WeftProtocol *
weft_protocol_costs (WeftCostSet set, WeftProtocolKind kind)
{
  static gsize made;

  if (kind == WEFT_PROTOCOL_RAW)
    return &raw;
  if (g_once_init_enter (&made))
    {
      fill_table ();
      g_once_init_leave (&made, 1);
    }
  const WeftProtocol *costs = &table[set][kind];

  return costs->name ? costs : NULL;
}

const WeftProtocol *
weft_protocol_get (WeftProtocolKind kind, WeftAlgorithm alg)
{
  const WeftAlgorithmInfo *a = weft_algorithm_get (alg);

  if (kind != WEFT_PROTOCOL_RAW && !(a->protocols & WEFT_PROTOCOL_BIT (kind)))
    return NULL;
  return weft_protocol_costs (a->costs, kind);
}

gboolean
weft_protocol_parse (const char *name, WeftProtocolKind *kind)
{
  for (int i = 0; i < WEFT_PROTOCOL_COUNT; i++)
    if (g_ascii_strcasecmp (name, weft_protocol_name (i)) == 0)
      {
        *kind = (WeftProtocolKind) i;
        return TRUE;
      }
  return FALSE;
}

const char *
weft_protocol_name (WeftProtocolKind kind)
{
  return kind == WEFT_PROTOCOL_RAW ? raw.name : names[kind];
}

gboolean
weft_protocol_in_auto (WeftProtocolKind kind)
{
  return kind != WEFT_PROTOCOL_RAW;
}
