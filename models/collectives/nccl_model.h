/* weft: NCCL's own estimate of a collective's time, by which NCCL chooses
 * its algorithm and protocol: ncclTopoTuneModel() and ncclTopoGetAlgoTime()
 * (NCCL 2.30.7 src/graph/tuning.cc) over channels that approximate what
 * NCCL's topology search (src/graph/search.cc) finds on the fabric
 * (docs/collectives.md, "How auto chooses"). */
#pragma once

#include "collectives/protocol.h"
#include "topology/topology.h"

G_BEGIN_DECLS

/* What NCCL's topology search finds for one pattern: its channels and
 * the bandwidth each is given inside a server and across servers. */
typedef struct {
  uint32_t channels;            /* 0: NCCL finds none */
  double bw_intra;              /* GB/s per channel (graph->bwIntra) */
  double bw_inter;              /* GB/s per channel (graph->bwInter) */
} WeftNcclGraph;

/* The fabric as NCCL's model sees it. */
typedef struct {
  uint32_t n_ranks;
  uint32_t n_nodes;             /* servers, as NCCL counts nodes */
  uint32_t compute_capability;  /* the GPUs' lowest, times ten */
  gboolean nvlink;              /* a server's GPUs reach each other over
                                   NVLink (NCCL's typeIntra LINK_NVL); else
                                   PCIe */
  gboolean nvls;                /* switches that reduce (nvlsSupport) */
  double ll_max_bw;             /* GB/s: NCCL's llMaxBw for n_nodes (the
                                   GPUs' ll_bandwidth; 0: no bound) */
  WeftNcclGraph graph[WEFT_COSTS_COUNT];        /* ring, tree, NVLS; NVLS
                                                   tree runs on NVLS's, PAT
                                                   and CollNet on the
                                                   tree's */
  gboolean nvswitch;            /* a server's GPUs are joined by NVLink
                                   switches (NCCL's nvsCount above 0) */
  uint32_t p2p_channels;        /* channels of a send or receive to one
                                   peer (NCCL's p2pnChannelsPerPeer) */
} WeftNcclSystem;

/* The fabric of @topo's GPUs @gpus[0..n-1] (n at least 2) as NCCL's model
 * sees it, into @sys; its graphs are found as weft_nccl_search() finds
 * them. */
void weft_nccl_system_from_topology (WeftNcclSystem *sys,
                                     const WeftTopology *topo,
                                     const uint32_t *gpus, uint32_t n);

/* What NCCL's search looks for: its channels' patterns. */
typedef enum {
  WEFT_NCCL_PATTERN_RING,
  WEFT_NCCL_PATTERN_TREE,
  WEFT_NCCL_PATTERN_NVLS,
} WeftNcclPattern;

/* What the search sees of a server: GB/s, one direction. */
typedef struct {
  uint32_t gpus;                /* in the server (NCCL's ngpus) */
  uint32_t compute_capability;
  double gpu_total;             /* what a GPU's links carry in all
                                   (NCCL's totalBw) */
  double gpu_path;              /* the fastest one path from a GPU to
                                   another GPU, or with a network to a NIC
                                   (NCCL's maxBw) */
  uint32_t nics;                /* 0: one server, no network */
  double nic;                   /* what one NIC carries, at most what its
                                   host side brings it */
} WeftNcclServer;

/* NCCL's search for @pattern on @server: the most channels times
 * bandwidth that fit, trying NCCL's per-channel speeds from the fastest
 * down, then its doubling of fast channels and its second pass. */
WeftNcclGraph weft_nccl_search (const WeftNcclServer *server,
                                WeftNcclPattern pattern);

/* NCCL's latency (us) and bandwidth (GB/s of algorithm bandwidth) of each
 * cost set (NCCL's algorithm) and protocol for one operation; bandwidth 0
 * where NCCL would not consider the pair. */
typedef struct {
  WeftOp op;
  uint32_t n_ranks, n_nodes, channels, compute_capability;
  double latency[WEFT_COSTS_COUNT][WEFT_PROTOCOL_RAW];
  double bandwidth[WEFT_COSTS_COUNT][WEFT_PROTOCOL_RAW];
} WeftNcclModel;

/* What NCCL's per-channel speed tables (tuning.cc's perChMaxRingLL128Bws,
 * perChMaxTreeBws, perChMaxTreeLL128Bws) let @set with @protocol reach on
 * @sys: its channels times a channel's most bus bandwidth, B/s; 0 where
 * they set no bound (other sets and protocols). */
double weft_nccl_channel_cap (const WeftNcclSystem *sys, WeftCostSet set,
                              WeftProtocolKind protocol);

/* NCCL's nvlsEfficiency for the GPU nodes @gpus[0 .. @n - 1] of @topo:
 * the share of NCCL's rate of the links NVLS moves data at, by their
 * lowest compute capability (0.85 on Hopper, 0.74 on Blackwell).  NCCL has
 * no NVLS before Hopper; asked for anyway (a switch that reduces beside
 * an older GPU, or one whose architecture is not said), NVLS moves at
 * Hopper's. */
double weft_nccl_nvls_efficiency (const WeftTopology *topo,
                                  const uint32_t *gpus, uint32_t n);

/* NCCL's point-to-point (send and receive, all_to_all) has no cost model:
 * it runs a message to a peer of at most NCCL_P2P_LL_THRESHOLD (16 KiB)
 * for each of the peer's channels with LL, a larger one with Simple,
 * never with LL128 (enqueue.cc, addP2pToPlan()).  The protocol for a
 * message of @bytes to one peer on @sys. */
#define WEFT_NCCL_P2P_LL_THRESHOLD 16384
WeftProtocolKind weft_nccl_p2p_protocol (const WeftNcclSystem *sys,
                                         uint64_t bytes);

/* ncclTopoTuneModel() for @op on @sys, into @m. */
void weft_nccl_model_tune (WeftNcclModel *m, const WeftNcclSystem *sys,
                           WeftOp op);

/* ncclTopoGetAlgoTime(): NCCL's estimate of @set with @protocol for a
 * buffer of @bytes (nccl-tests' size), in us; below 0 if NCCL would not
 * consider it. */
double weft_nccl_model_time (const WeftNcclModel *m, WeftCostSet set,
                             WeftProtocolKind protocol, uint64_t bytes);

/* NCCL's estimate of each of weft's algorithms (that NCCL has) with each
 * protocol for @bytes into @estimate[WEFT_PAIRS] (us; below 0 for the
 * others and those @fits[a][p] leaves out), and the pair NCCL picks: the
 * least estimate, of equal ones the first in NCCL's order (tree, ring,
 * NVLS, NVLS tree; LL, LL128, Simple); -1 if NCCL has none of them. */
int weft_nccl_model_pick (const WeftNcclModel *m,
                          const gboolean (*fits)[WEFT_PROTOCOL_COUNT],
                          uint64_t bytes, double *estimate);

G_END_DECLS
