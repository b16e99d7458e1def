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

/* The links alone: no latency but the fabric's, every byte at each link's
 * own rate (WeftNetworkConfig.nccl 0), whatever the algorithm. */
static const WeftProtocol raw = { "raw", 0, 0, 0, 0, 1.0, FALSE, TRUE };

/* [set][protocol]; a set without a protocol has no name there. */
static const WeftProtocol table[WEFT_COSTS_COUNT][WEFT_PROTOCOL_COUNT] = {
  [WEFT_COSTS_RING] = {
    { "LL", US (6.6), US (0.6), US (1.0), US (2.7), 0.5, TRUE, FALSE },
    { "LL128", US (14.0), US (1.9), US (2.5), US (4.0), 0.92, FALSE, FALSE },
    { "Simple", US (8.4), US (3.4), US (5.7), US (14.0), 1.0, FALSE, FALSE },
  },
  [WEFT_COSTS_TREE] = {
    { "LL", US (6.8), US (0.6), US (1.0), US (5.0), 0.5, TRUE, FALSE },
    { "LL128", US (14.0), US (1.25), US (1.9), US (8.5), 0.92, FALSE, FALSE },
    { "Simple", US (8.4), US (4.0), US (4.0), US (14.0), 1.0, FALSE, FALSE },
  },
  /* NVLS runs Simple only: no base latency and 25 us over NVLink (NCCL's
   * NVLS hwLat), paid half on the way to the switch and half on the way
   * back, and NCCL's nvlsEfficiency for Hopper, 0.85. */
  [WEFT_COSTS_NVLS] = {
    [WEFT_PROTOCOL_SIMPLE] = { "Simple", 0, US (12.5), US (12.5), US (9.0),
                               0.85, FALSE, FALSE },
  },
  /* NVLS_TREE runs Simple only: no base latency; NCCL's NVLSTree latency
   * is intraLat + 2 log2(nodes) interLat, 25 us over NVLink and 20.9 us
   * over the network: the 25 us are split over the four NVLink sends on
   * the way (to the switch and back, for the reduction and for the
   * multicast), and each send of the tree across servers pays 20.9 us.
   * Its bandwidth is the network's: Simple's full share. */
  [WEFT_COSTS_NVLS_TREE] = {
    [WEFT_PROTOCOL_SIMPLE] = { "Simple", 0, US (6.25), US (6.25), US (20.9),
                               1.0, FALSE, FALSE },
  },
};

const WeftProtocol *
weft_protocol_costs (WeftCostSet set, WeftProtocolKind kind)
{
  if (kind == WEFT_PROTOCOL_RAW)
    return &raw;
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
  return weft_protocol_costs (WEFT_COSTS_RING, kind)->name;
}

gboolean
weft_protocol_in_auto (WeftProtocolKind kind)
{
  return kind != WEFT_PROTOCOL_RAW;
}
