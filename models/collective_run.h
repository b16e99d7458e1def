/* weft: running one collective on a topology and timing it. */
#pragma once

#include "collective.h"
#include "network.h"
#include "protocol.h"

G_BEGIN_DECLS

typedef struct {
  WeftTime time;                /* ps, from the call to the last step */
  uint64_t bytes_sent;          /* data bytes the schedule moves */
  uint64_t events;              /* events the simulation ran */
} WeftCollectiveResult;

/* Simulate @op by @alg with @protocol over the GPUs @gpus[0..n-1] of
 * @topo, at @fidelity, for @size bytes (nccl-tests' size); @seed picks the
 * ECMP choices.  Fails (WEFT_SCHEDULE_ERROR) if the algorithm cannot run on
 * this fabric or with this protocol (code 1), or the schedule cannot run. */
gboolean weft_collective_run (const WeftTopology *topo, const uint32_t *gpus,
                              uint32_t n, WeftOp op, WeftAlgorithm alg,
                              WeftProtocolKind protocol, uint64_t size,
                              const WeftCollectiveParams *params,
                              WeftFidelity fidelity, uint64_t seed,
                              WeftCollectiveResult *result, GError **error);

/* Run the checked @schedule with @costs, rank r on node @nodes[r], at
 * @fidelity; @seed picks the ECMP choices. */
void weft_schedule_run (const WeftTopology *topo, const uint32_t *nodes,
                        const WeftSchedule *schedule, const WeftProtocol *costs,
                        WeftFidelity fidelity, uint64_t seed,
                        WeftCollectiveResult *result);

/* Whether @alg with @protocol can run @op on these GPUs of @topo, without
 * simulating it; on FALSE, @error says why. */
gboolean weft_collective_fits (const WeftTopology *topo, const uint32_t *gpus,
                               uint32_t n, WeftOp op, WeftAlgorithm alg,
                               WeftProtocolKind protocol, GError **error);

G_END_DECLS
