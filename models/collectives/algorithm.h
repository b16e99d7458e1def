/* weft: the collective algorithms, one row of one table each.
 *
 * A row says all that the rest of weft asks of an algorithm: its name, the
 * builder of each operation it implements, whether it can run on given
 * GPUs of a fabric (and what it takes from the fabric to run), which of
 * NCCL's constants it costs, and whether `auto` considers it.  Adding an
 * algorithm is its file (the builders, and the fit check if it needs one),
 * its value in WeftAlgorithm and its row in algorithm.c (docs/collectives.md,
 * "Adding an algorithm"). */
#pragma once

#include "collectives/fit.h"
#include "collectives/protocol.h"

G_BEGIN_DECLS

/* Fill @s (made with the GPUs' ranks, and the switch ranks the row's
 * switch_ranks() asks for) with the schedule of one operation for a buffer
 * of @size bytes (nccl-tests' size; never 0) over s->n_gpus ranks (two or
 * more), as @p says; its channels and chunks are never 0 here, except what
 * the row's defaults() leaves 0 on purpose.  Sends and receives pair up in
 * order (schedule.h); a builder may give the pairs itself
 * (weft_schedule_match()), all of them or none. */
typedef void (*WeftBuildFn) (WeftSchedule *s, uint64_t size,
                             const WeftCollectiveParams *p);

/* The switch ranks the algorithm adds after the @n GPU ranks. */
typedef uint32_t (*WeftSwitchRanksFn) (uint32_t n,
                                       const WeftCollectiveParams *p);

/* Fill in @p's channels and chunks left 0 for @op. */
typedef void (*WeftDefaultsFn) (WeftOp op, WeftCollectiveParams *p);

/* 1 << k for each WeftProtocolKind k an algorithm runs with. */
#define WEFT_PROTOCOL_BIT(k) (1u << (k))
#define WEFT_PROTOCOLS_ALL                                              \
  (WEFT_PROTOCOL_BIT (WEFT_PROTOCOL_LL)                                 \
   | WEFT_PROTOCOL_BIT (WEFT_PROTOCOL_LL128)                            \
   | WEFT_PROTOCOL_BIT (WEFT_PROTOCOL_SIMPLE))

typedef struct {
  const char *name;             /* as --algorithm takes it */
  WeftBuildFn build[WEFT_OP_COUNT];     /* per operation it implements;
                                           NULL for the others */
  WeftFitFn fit;                /* NULL: runs on any GPUs */
  WeftSwitchRanksFn switch_ranks;       /* NULL: none */
  WeftDefaultsFn defaults;      /* NULL: one channel, WEFT_CHUNKS chunks */
  WeftCostSet costs;            /* which of NCCL's constants it pays */
  uint32_t protocols;           /* WEFT_PROTOCOL_BIT()s it runs with; the
                                   cost set has each of them */
  gboolean in_auto;             /* auto tries it (weft_algorithm_in_auto()) */
  gboolean nccl;                /* NCCL has it, as the algorithm its cost
                                   set names: `--select nccl` estimates it
                                   as NCCL does (nccl_model.h) */
  gboolean hierarchical;        /* two levels: needs the ranks server by
                                   server, params->local in each */
  gboolean auto_one_per_server; /* auto considers it only with one GPU a
                                   server, as NCCL does PAT */
} WeftAlgorithmInfo;

/* @alg's row.  @alg must be below WEFT_ALG_COUNT. */
const WeftAlgorithmInfo *weft_algorithm_get (WeftAlgorithm alg);

G_END_DECLS
