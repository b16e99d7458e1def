/* weft: traces, DAGs of operations from a training job (or several) to
 * replay on a fabric.  docs/trace-format.md documents the file.
 *
 * Each job has ranks, placed on GPUs of the scenario, communicators (named
 * groups of its ranks) and operations: collectives on a communicator or a
 * list of ranks, point-to-point sends and receives, computation and
 * sleeps.  A dependency orders work on the ranks the two operations share:
 * on each of its ranks an operation starts once its dependencies that run
 * on that rank have finished there; ranks meet only through
 * communication. */
#pragma once

#include "collectives/collective.h"
#include "config.h"
#include "collectives/protocol.h"
#include "sim.h"
#include "topology/topology.h"

G_BEGIN_DECLS

typedef enum {
  WEFT_TRACE_COLLECTIVE,
  WEFT_TRACE_SEND,
  WEFT_TRACE_RECV,
  WEFT_TRACE_COMPUTE,           /* occupies its ranks' compute for a time */
  WEFT_TRACE_SLEEP,             /* waits for a time, occupying nothing */
} WeftTraceKind;

#define WEFT_TRACE_AUTO (-1)     /* algorithm or protocol: chosen per op */

typedef struct {
  WeftTraceKind kind;
  WeftOp op;                    /* collectives */
  int algorithm;                /* WeftAlgorithm or WEFT_TRACE_AUTO */
  int protocol;                 /* WeftProtocolKind or WEFT_TRACE_AUTO */
  uint32_t job;
  const char *name;             /* the id written in the trace */
  int line, col;                /* where it is written */
  uint32_t first_rank, n_ranks; /* global ranks, in trace->ranks: each
                                   (op, rank) is a slot, numbered as its
                                   place in that array */
  uint32_t peer;                /* send and receive: the other global rank */
  uint32_t match;               /* send and receive: the paired op */
  uint32_t tag;
  uint64_t bytes;               /* collectives: nccl-tests' size */
  WeftTime duration;            /* ps: compute and sleep */
  WeftTime at;                  /* ps: not before this (0: no bound) */
  uint32_t first_dep, n_deps;   /* op indices, in trace->deps */
} WeftTraceOp;

typedef struct {
  char *name;
  uint32_t first_rank, n_ranks; /* its ranks are global ranks first_rank.. */
  char *chakra;                 /* read from Chakra files <chakra>.<rank>.et,
                                   or NULL; its ops' line is 0 and col the
                                   job rank of the node */
} WeftTraceJob;

typedef struct {
  char *path;
  GArray *ops;                  /* WeftTraceOp */
  GArray *ranks;                /* uint32_t global ranks of each op's slots */
  GArray *deps;                 /* uint32_t op indices */
  GArray *jobs;                 /* WeftTraceJob */
  GArray *gpus;                 /* uint32_t: global rank -> GPU node
                                   (WEFT_NONE when read without a topology) */
  GArray *slot_edges;           /* uint32_t pairs (from, to): slot to slot
                                   dependencies besides those of deps
                                   (Chakra's, which are per rank) */
  GStringChunk *names;
} WeftTrace;

#define WEFT_TRACE_ERROR (weft_trace_error_quark ())
GQuark weft_trace_error_quark (void);

typedef enum {
  WEFT_TRACE_ERROR_INVALID,     /* a trace (or Chakra file) that says
                                   something wrong: a cycle, an unknown
                                   op, a send without its receive */
  WEFT_TRACE_ERROR_DEADLOCK,    /* ranks that wait for each other, found
                                   by running the trace */
  WEFT_TRACE_ERROR_UNFIT,       /* an algorithm that cannot run an op */
  WEFT_TRACE_ERROR_IO,          /* a file that cannot be read or written */
  WEFT_TRACE_ERROR_CUT,         /* faults during the run left two places it
                                   joins with no path */
} WeftTraceError;

/* Read the trace at @path for the GPUs of @topo (NULL: without placing
 * the ranks, for converting; every job must then give `ranks`).  Any mistake (a
 * dependency cycle, naming the ops on it; an unknown id; a rank outside
 * the placement; a send without its receive, naming both sides; a missing
 * or malformed size) fails with "file:line:col: what is wrong".  The ops
 * are read as they come (a million of them cost the memory of the ops, not
 * of their YAML), so what they refer to (ranks, placement,
 * communicators) comes before them in a job. */
WeftTrace *weft_trace_load (const char *path, const WeftTopology *topo,
                            GError **error);

/* As weft_trace_load(), from @len bytes of @text named @name. */
WeftTrace *weft_trace_load_data (const char *name, const char *text,
                                 size_t len, const WeftTopology *topo,
                                 GError **error);

void weft_trace_free (WeftTrace *trace);

/* Every slot-to-slot dependency: for op b, its dependency a and each rank
 * they share, a's slot on the rank before b's; then slot_edges.  Appends
 * the pairs to @from and @to (uint32_t). */
void weft_trace_slot_edges (const WeftTrace *trace, GArray *from, GArray *to);

/* "file:line:col" of @op, or for an op read from Chakra files
 * "<prefix>.<rank>.et: node <id>". */
char *weft_trace_where (const WeftTrace *trace, const WeftTraceOp *op);

static inline const WeftTraceOp *
weft_trace_op (const WeftTrace *t, uint32_t i)
{
  return &g_array_index (t->ops, WeftTraceOp, i);
}

/* The op that slot @slot (a place in trace->ranks) belongs to. */
uint32_t weft_trace_op_of_slot (const WeftTrace *trace, uint32_t slot);

/* The kind's name as the trace writes it: the collective's name, "send",
 * "recv", "compute" or "sleep". */
const char *weft_trace_op_kind (const WeftTraceOp *op);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (WeftTrace, weft_trace_free)

G_END_DECLS
