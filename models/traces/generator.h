/* weft: the trace of a Megatron-style training job (generator.c says what
 * it holds), written as docs/trace-format.md describes. */
#pragma once

#include "sim.h"

#include <stdio.h>

G_BEGIN_DECLS

/* The job: its parallelism, sizes and compute times. */
typedef struct {
  uint32_t tp, pp, dp;          /* ranks = tp x pp x dp */
  uint32_t layers;              /* a multiple of pp */
  uint32_t microbatches, steps;
  uint32_t buckets;             /* gradient buckets per stage */
  uint64_t tp_size;             /* bytes per rank of a layer's tp all_reduce */
  uint64_t activation_size;     /* bytes a rank hands the next stage */
  uint64_t grad_size;           /* bytes of a layer's gradients on a rank */
  uint64_t moe_size;            /* 0, or bytes per rank of a layer's
                                   all_to_all over dp */
  WeftTime layer_time;          /* ps, forward; backward takes twice */
  WeftTime optimizer_time;      /* ps */
} WeftTraceJobShape;

/* The first line of the traces weft trace generate writes. */
#define WEFT_TRACE_GENERATE_MARK "# weft trace generate"

/* Write the trace of @shape's job to @out, beginning with
 * WEFT_TRACE_GENERATE_MARK.  Returns the ops written; the
 * caller checks @out for write errors. */
uint64_t weft_trace_generate (const WeftTraceJobShape *shape, FILE *out);

G_END_DECLS
