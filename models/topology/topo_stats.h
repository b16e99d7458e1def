/* weft: what `weft topo` reports about a topology: counts, per-GPU injection
 * bandwidth, bisection bandwidth and diameter, and a Graphviz drawing. */
#pragma once

#include <stdio.h>

#include "topology/topology.h"

G_BEGIN_DECLS

typedef struct {
  uint32_t by_kind[WEFT_NODE_KIND_COUNT];
  double nvlink_min, nvlink_max;        /* B/s per GPU, one direction */
  double network_min, network_max;      /* B/s per GPU, one direction */
  double bisection;                     /* B/s, one direction */
  uint32_t diameter;                    /* hops, GPU to GPU */
  gboolean diameter_exact;              /* FALSE: a lower bound */
} WeftTopoStats;

/* The bandwidth that can cross from the first half of the GPUs (in the
 * order they are declared) to the second half: a maximum flow, B/s. */
double weft_topo_bisection (const WeftTopology *topo);

/* Compute every figure of @stats.  The diameter is exact up to
 * @exact_gpus GPUs and a two-sweep lower bound above that. */
void weft_topo_stats (const WeftTopology *topo, uint32_t exact_gpus,
                      WeftTopoStats *stats);

/* Print the summary of `weft topo`. */
void weft_topo_print (FILE *out, const WeftTopology *topo,
                      const WeftTopoStats *stats);

/* The first line of the Graphviz files weft writes: a file that begins so
 * is weft's own, which it may replace. */
#define WEFT_TOPO_DOT_MARK "// weft topo --dot"

/* Write the topology as a Graphviz graph, one edge per cable, to @path
 * whole or not at all (sim/files.h); the caller checks weft may write
 * there (weft_file_may_write()). */
gboolean weft_topo_write_dot (const WeftTopology *topo, const char *path,
                              GError **error);

G_END_DECLS
