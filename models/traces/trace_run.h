/* weft: replaying a trace on a fabric. */
#pragma once

#include "collectives/collective_run.h"
#include "traces/trace.h"

G_BEGIN_DECLS

typedef struct {
  WeftRunOptions run;           /* fidelity, seed, bins and their budget,
                                   stop */
  WeftCollectiveParams params;  /* channels and chunks of every collective */
  int algorithm;                /* for collectives the trace leaves to auto:
                                   a WeftAlgorithm or WEFT_TRACE_AUTO */
  int protocol;                 /* likewise, a WeftProtocolKind */
  /* If not NULL, called now and then with the (op, rank) slots finished
   * and their number. */
  void (*progress) (uint64_t done, uint64_t total, void *data);
  void *progress_data;
  int jobs;                     /* auto's candidates simulated at once (0:
                                   one at a time) */
} WeftTraceOptions;

typedef struct {
  WeftTime time;                /* ps: when the last op ended */
  uint64_t events;
  gboolean interrupted;
  WeftTime *start, *end;        /* per slot (an op on one of its ranks): when
                                   the rank reached it (compute: began on the
                                   rank's compute) and finished it; ps */
  int8_t *algorithm;            /* per op: collectives' algorithm, or -1 */
  int8_t *protocol;             /* per op: collectives' and p2p protocol, or -1 */
  WeftTime *step;               /* per global rank: when its last op ended */
  WeftTime *compute;            /* ...time it spent computing */
  WeftTime *exposed;            /* ...time communicating while not computing */
  GArray *critical;             /* uint32_t ops, first to last: the chain of
                                   ops each of which held up the next */
  GArray *critical_span;        /* WeftTime, two an op of critical: when it
                                   held up the path, from and to (ps) */
  WeftLinkStats *stats;         /* link bytes (binned if bins were asked) */
  uint32_t links_used;
} WeftTraceResult;

/* Replay @trace on @topo.  Collectives whose algorithm or protocol is auto
 * take the one that is fastest alone on their GPUs (chosen once per kind,
 * size and rank set).  Fails with @error, before simulating, if a
 * collective cannot run on its ranks' GPUs (its position in the trace), and
 * after, if the trace never finishes (ops that wait for each other across
 * ranks: names them).  @result's arrays are freed by
 * weft_trace_result_clear(). */
gboolean weft_trace_run (const WeftTopology *topo, const WeftTrace *trace,
                         const WeftTraceOptions *options,
                         WeftTraceResult *result, GError **error);

void weft_trace_result_clear (WeftTraceResult *result);

/* How the replay plans a collective, for what estimates it beforehand:
 * the GPU nodes of @op's ranks (the caller frees them); the key under
 * which ops share one plan (same kind, size, algorithm @alg, protocol
 * @proto, resolved or WEFT_TRACE_AUTO, and GPUs); and whether algorithm
 * @a is a candidate for @op when @alg was asked for (auto: any that runs
 * it and that auto considers). */
uint32_t *weft_trace_op_gpus (const WeftTrace *trace, const WeftTraceOp *op);
GBytes *weft_trace_plan_key (const WeftTraceOp *op, int alg, int proto,
                             const uint32_t *gpus);
gboolean weft_trace_may_run (const WeftTraceOp *op, int alg, int a);

/* Whether every collective of @trace has an algorithm and protocol that
 * fit its GPUs of @topo (@algorithm and @protocol where the op leaves them
 * to the run, each WEFT_TRACE_AUTO or resolved), without simulating: the
 * replay's own check, made before anything is recorded.  FALSE with
 * @error, at the first op that has none. */
gboolean weft_trace_check_fits (const WeftTopology *topo,
                                const WeftTrace *trace, int algorithm,
                                int protocol, GError **error);

G_END_DECLS
