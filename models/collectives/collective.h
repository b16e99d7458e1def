/* weft: collective operations and the algorithms that turn them into
 * schedules. */
#pragma once

#include "collectives/rings.h"
#include "collectives/schedule.h"

G_BEGIN_DECLS

typedef enum {
  WEFT_OP_ALL_REDUCE,
  WEFT_OP_ALL_GATHER,
  WEFT_OP_REDUCE_SCATTER,
  WEFT_OP_BROADCAST,
  WEFT_OP_REDUCE,
  WEFT_OP_ALL_TO_ALL,
  WEFT_OP_SEND_RECV,
  WEFT_OP_COUNT,
} WeftOp;

/* The built-in algorithms, each the index of its row in the table of
 * algorithms (algorithm.h).  The order numbers auto's candidates
 * (WEFT_PAIRS), and of equal times the first wins: a new one goes last. */
typedef enum {
  WEFT_ALG_RING,
  WEFT_ALG_TREE,                /* double binary tree */
  WEFT_ALG_RHD,                 /* recursive halving-doubling */
  WEFT_ALG_DIRECT,
  WEFT_ALG_PAIRWISE,
  WEFT_ALG_NVLS,                /* in-switch reduction (NVLink SHARP) */
  WEFT_ALG_HIER,                /* two levels: NVLink in, ring across */
  WEFT_ALG_HIER_RHD,            /* ... halving-doubling across */
  WEFT_ALG_HIER_TREE,           /* ... double binary tree across */
  WEFT_ALG_NVLS_TREE,           /* NVLS inside servers, tree across */
  WEFT_ALG_PAT,                 /* parallel aggregated trees (NCCL's PAT) */
  WEFT_ALG_COLLNET,             /* CollNet Direct: SHARP in the network */
  WEFT_ALG_COUNT,
} WeftAlgorithm;

typedef struct {
  uint32_t channels;            /* independent rings or trees of pieces;
                                   0: as many as suit the fabric (across
                                   servers, one for each GPU of a server,
                                   as NCCL's channels use every network
                                   interface; else one) */
  uint32_t chunks;              /* pipeline depth within a channel; 0:
                                   WEFT_CHUNKS, shared out among a ring's
                                   channels; the tree, NVLS, CollNet and
                                   the two-level algorithms cut by size,
                                   1 to WEFT_CHUNKS (their fit checks and
                                   the tree's builder) */
  uint32_t n_switches;          /* NVLS: switches that reduce, ranks n..
                                   (nvls-tree: per server, server by
                                   server) */
  const double *switch_share;   /* NVLS: each one's share of the buffer */
  uint32_t local;               /* hierarchical: ranks per server */
  const uint32_t *server;       /* tree: each rank's server (any number
                                   that the server's ranks share), or NULL
                                   for a server a rank */
  const WeftRings *rings;       /* ring, its chains and the tree in one
                                   server: the rings along the links, each
                                   cut into `channels`; NULL: rank order */
  uint32_t threads;             /* that may share the making of a large
                                   schedule (0 or 1: this one alone); the
                                   schedule is the same for any number */
  gboolean split_planes;        /* NVLS: each switch chip a rank of its
                                   own, not the chips of a server one
                                   place of planes (network.h), which moves
                                   the same in fewer transfers; for
                                   tests */
  const uint32_t *parent;       /* collnet: each rank's parent on the
                                   switches' aggregation tree (a GPU's: its
                                   first switch), WEFT_NONE at the root;
                                   NULL: the first of n_switches the root of
                                   the others, server g under switch g mod
                                   n_switches */
} WeftCollectiveParams;

/* The chunks a channel is cut into by default (a ring's channels share
 * them out). */
#define WEFT_CHUNKS 8

const char *weft_op_name (WeftOp op);
gboolean weft_op_parse (const char *name, WeftOp *op);

/* @alg's name, or the algorithm named @name (FALSE if none is).  These and
 * the other weft_algorithm_ functions below read the table of algorithms
 * (algorithm.h). */
const char *weft_algorithm_name (WeftAlgorithm alg);
gboolean weft_algorithm_parse (const char *name, WeftAlgorithm *alg);

/* The valid names, comma-separated, for messages (the algorithms' with
 * auto first and a schedule file last).  Static. */
const char *weft_op_names (void);
const char *weft_algorithm_names (void);

/* "auto, ring, tree, ...": every name --algorithm takes but a file, for
 * help texts.  Static; made once, from the table of algorithms. */
const char *weft_algorithm_list (void);

/* The help of --algorithm, from the table: the names, a schedule file,
 * which of them auto leaves out, and the default.  Static. */
const char *weft_algorithm_help (void);

/* Whether @alg implements @op (its row has a builder for it). */
gboolean weft_algorithm_supports (WeftAlgorithm alg, WeftOp op);

/* Whether @alg is one of the two-level algorithms, which need the ranks
 * server by server (params->local of them in each). */
gboolean weft_algorithm_is_hierarchical (WeftAlgorithm alg);

/* Whether `auto` considers @alg (its row's in_auto): all but the
 * algorithms with halving-doubling or a tree across servers, which NCCL
 * lacks, so that auto picks much as NCCL would. */
gboolean weft_algorithm_in_auto (WeftAlgorithm alg);

/* Whether NCCL has @alg (ring, tree, nvls, nvls-tree), so that NCCL's own
 * cost model can estimate it. */
gboolean weft_algorithm_in_nccl (WeftAlgorithm alg);

/* The bytes @op over @n ranks moves in all for a buffer of @size bytes, as
 * the bandwidth-optimal algorithms (ring, tree, halving-doubling) do:
 * 2(n-1) size for all_reduce, n size for send_recv, (n-1) size for the
 * rest.  Written schedules must move exactly this. */
uint64_t weft_op_bytes (WeftOp op, uint32_t n, uint64_t size);

/* nccl-tests' bus bandwidth factor: busbw = algbw x factor. */
double weft_op_bus_factor (WeftOp op, uint32_t n_ranks);

/* Build the schedule of @op by @alg (its row's builder) over @n_ranks
 * ranks for a buffer of @size bytes, as nccl-tests counts size: per rank
 * for all_reduce, broadcast, reduce, all_to_all and send_recv; the whole
 * gathered or scattered buffer for all_gather and reduce_scatter.  Sizes
 * that do not divide evenly are split exactly.  Broadcast and reduce use
 * rank 0 as the root.  NVLS adds params->n_switches switch ranks after the
 * GPUs, and nvls-tree that many for each server.  @alg must implement @op
 * (an assertion); the caller frees the schedule. */
WeftSchedule *weft_collective_schedule (WeftOp op, WeftAlgorithm alg,
                                        uint32_t n_ranks, uint64_t size,
                                        const WeftCollectiveParams *params);

/* The same, keeping where each step's bytes lie in its rank's buffer
 * (weft_schedule_track_regions()), for the data check. */
WeftSchedule *weft_collective_schedule_regions (
    WeftOp op, WeftAlgorithm alg, uint32_t n_ranks, uint64_t size,
    const WeftCollectiveParams *params);

/* The same, counted and not kept (weft_schedule_new_counting()): what the
 * schedule will hold, found without the memory it takes. */
WeftSchedule *weft_collective_count (WeftOp op, WeftAlgorithm alg,
                                     uint32_t n_ranks, uint64_t size,
                                     const WeftCollectiveParams *params);

/* The same, streamed (weft_schedule_new_streaming()): a builder that can
 * hands each rank's steps to @sink as it makes them, and the schedule
 * returned is then empty (its `streamed` set); else it holds them all. */
WeftSchedule *weft_collective_stream (WeftOp op, WeftAlgorithm alg,
                                      uint32_t n_ranks, uint64_t size,
                                      const WeftCollectiveParams *params,
                                      WeftRankSink sink,
                                      WeftAlikeSink alike, void *sink_data);

/* The ranks of @alg's schedule over @n GPUs: the GPUs, and the switches
 * that reduce. */
uint32_t weft_collective_ranks (WeftAlgorithm alg, uint32_t n,
                                const WeftCollectiveParams *params);

G_END_DECLS
