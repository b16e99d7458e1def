/* weft: the executor runs any schedule over any network fidelity. */
#pragma once

#include "network.h"
#include "schedule.h"

G_BEGIN_DECLS

/* What a protocol costs (NCCL's LL, LL128 and Simple): a fixed latency
 * per collective, a latency per send that depends on what the send
 * crosses, and the fraction of link bandwidth that carries data. */
typedef struct {
  const char *name;
  WeftTime base;                /* ps, once per collective */
  WeftTime hop_nvlink;          /* ps per send over NVLink only */
  WeftTime hop_pcie;            /* ps per send that crosses PCIe */
  WeftTime hop_network;         /* ps per send that crosses the network */
  double efficiency;            /* share of NCCL's Simple bandwidth */
} WeftProtocol;

/* Run @schedule on @net: rank r is GPU node @gpus[r].  The schedule must
 * have passed weft_schedule_check().  done(sim, target, data) runs when
 * every step of every rank has finished.  Its state goes with the network.
 * If @spans is not NULL, spans[2r] and spans[2r + 1] receive when rank r
 * started its first step and finished its last (ps; the caller's array). */
void weft_execute (WeftNetwork *net, const WeftSchedule *schedule,
                   const uint32_t *gpus, const WeftProtocol *protocol,
                   WeftTime *spans, WeftEventFn done, void *target,
                   void *data);

G_END_DECLS
