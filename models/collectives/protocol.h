/* weft: NCCL's protocols (LL, LL128, Simple) as costs for the executor. */
#pragma once

#include "collectives/collective.h"
#include "collectives/executor.h"

G_BEGIN_DECLS

typedef enum {
  WEFT_PROTOCOL_LL,
  WEFT_PROTOCOL_LL128,
  WEFT_PROTOCOL_SIMPLE,
  WEFT_PROTOCOL_RAW,            /* no NCCL at all: the fabric's latency and
                                   bandwidth alone, for other libraries and
                                   textbook checks; never chosen by auto */
  WEFT_PROTOCOL_COUNT,
} WeftProtocolKind;

/* NCCL's sets of constants, each an algorithm of NCCL's (tuning.cc); an
 * algorithm of weft pays one of them (its row's `costs`). */
typedef enum {
  WEFT_COSTS_RING,              /* NCCL's ring, and the algorithms it lacks */
  WEFT_COSTS_TREE,
  WEFT_COSTS_NVLS,              /* Simple only */
  WEFT_COSTS_NVLS_TREE,         /* Simple only */
  WEFT_COSTS_PAT,               /* Simple only */
  WEFT_COSTS_COLLNET,           /* CollNet Direct, Simple only */
  WEFT_COSTS_COUNT,
} WeftCostSet;

/* NCCL's PAT latency (tuning.cc): baseLat, plus interLat / 3.5 for each
 * of log2 (nodes) steps ("log latency"), plus 2.8 us a rank ("still a
 * linear part"). */
#define WEFT_PAT_LOG_DIVISOR 3.5
#define WEFT_PAT_PER_RANK 2.8

/* What a send crosses, as NCCL's latencies tell it apart. */
typedef enum {
  WEFT_NCCL_HW_NVLINK,
  WEFT_NCCL_HW_PCI,
  WEFT_NCCL_HW_NET,
  WEFT_NCCL_HW_COUNT,
} WeftNcclHw;

/* NCCL's base latency of protocol @kind (LL, LL128 or Simple) in @set,
 * and its latency per step over @hw (NCCL 2.30.7 src/graph/tuning.cc,
 * baseLat and hwLat), in us as NCCL writes them; 0 where NCCL has none. */
double weft_protocol_nccl_base (WeftCostSet set, WeftProtocolKind kind);
double weft_protocol_nccl_hw (WeftNcclHw hw, WeftCostSet set,
                              WeftProtocolKind kind);

/* Protocol @kind's costs in @set, or NULL if the set has none for it
 * (NVLS and NVLS_TREE run Simple only).  Static. */
const WeftProtocol *weft_protocol_costs (WeftCostSet set,
                                         WeftProtocolKind kind);

/* The costs of protocol @kind for algorithm @alg: those of the cost set
 * its row names, or NULL if the algorithm does not run with @kind. */
const WeftProtocol *weft_protocol_get (WeftProtocolKind kind,
                                       WeftAlgorithm alg);
gboolean weft_protocol_parse (const char *name, WeftProtocolKind *kind);

/* Whether `auto` considers protocol @kind: NCCL's own, LL, LL128 and
 * Simple. */
gboolean weft_protocol_in_auto (WeftProtocolKind kind);
const char *weft_protocol_name (WeftProtocolKind kind);

G_END_DECLS
