/* weft: the executor runs any schedule over any network fidelity. */
#pragma once

#include "network/network.h"
#include "collectives/schedule.h"

G_BEGIN_DECLS

/* What a protocol costs (NCCL's LL, LL128 and Simple): a fixed latency
 * per collective, a latency per send that depends on what the send
 * crosses, and the fraction of link bandwidth that carries data. */
typedef struct {
  const char *name;
  WeftTime base;                /* ps, once per collective */
  WeftTime per_rank;            /* ps per GPU of the collective, once */
  WeftTime hop_nvlink;          /* ps per send over NVLink only */
  WeftTime hop_pcie;            /* ps per send that crosses PCIe */
  WeftTime hop_network;         /* ps per send that crosses the network */
  double efficiency;            /* share of NCCL's Simple bandwidth */
  gboolean ll;                  /* NCCL's LL, held to the GPUs' ll_bandwidth
                                   (weft_protocol_engines()) */
  gboolean raw;                 /* the links alone: data at each link's own
                                   rate, not NCCL's model of it */
  uint32_t engines;             /* 0, or the kind of the network's send
                                   engines its sends cross
                                   (weft_network_add_engines()) */
} WeftProtocol;

/* Run @schedule on @net: rank r is at place @gpus[r], a node or planes
 * (network.h), whose lists follow the ranks' places in @gpus.  The schedule must
 * have passed weft_schedule_check().  done(sim, target, data) runs when
 * every step of every rank has finished.  Its state goes with the network.
 * If @spans is not NULL, spans[2r] and spans[2r + 1] receive when rank r
 * started its first step and finished its last (ps; the caller's array). */
void weft_execute (WeftNetwork *net, const WeftSchedule *schedule,
                   const uint32_t *gpus, const WeftProtocol *protocol,
                   WeftTime *spans, WeftEventFn done, void *target,
                   void *data);

/* What the executor makes of a checked schedule before running it, the
 * same for every run: made once, it can be shared by runs of the schedule
 * in any thread (weft_execute_image()).  It holds all a run needs: the
 * schedule may be freed once it is made.  Ranks whose steps are the same
 * but for the peers they name share their steps in it, so that a
 * collective whose ranks all do alike (a ring, recursive halving and
 * doubling) takes the memory of one rank's steps, not of every rank's. */
typedef struct _WeftExecImage WeftExecImage;

WeftExecImage *weft_exec_image_new (const WeftSchedule *schedule);

/* An image made rank by rank, for a builder that makes one rank's steps
 * at a time and forgets them (weft_schedule_stream()): give it ranks 0,
 * 1, ... in order, whose steps are paired (weft_schedule_match() or the
 * like), then finish it. */
WeftExecImage *weft_exec_image_start (uint32_t n_ranks, uint32_t n_gpus);
void weft_exec_image_add_rank (WeftExecImage *image,
                               const WeftSchedule *schedule, uint32_t rank);
WeftExecImage *weft_exec_image_finish (WeftExecImage *image);
/* Add rank @rank as doing what the earlier rank @like does, with @peers
 * in place of @like's (weft_schedule_flush_alike()). */
void weft_exec_image_add_alike (WeftExecImage *image, uint32_t rank,
                                uint32_t like, const uint32_t *peers,
                                uint32_t n_peers);

/* Whether @a and @b are the same image, rank by rank. */
gboolean weft_exec_image_equal (const WeftExecImage *a,
                                const WeftExecImage *b);
void weft_exec_image_free (WeftExecImage *image);

uint32_t weft_exec_image_ranks (const WeftExecImage *image);
uint32_t weft_exec_image_gpus (const WeftExecImage *image);
/* How many different ranks' steps it holds. */
uint32_t weft_exec_image_templates (const WeftExecImage *image);
uint64_t weft_exec_image_bytes_sent (const WeftExecImage *image);

/* Bytes @image holds. */
size_t weft_exec_image_memory (const WeftExecImage *image);

/* Bytes the image of @steps steps (of all ranks' kinds) and @deps
 * dependencies over @n_ranks ranks that name @peers peers in all holds, at
 * most; and
 * what a run adds to it, with @waiting steps waiting at once (for some of
 * their dependencies, or a receive for its bytes) and @peers connections
 * (counted as weft_exec_image_bytes() counts them). */
size_t weft_exec_image_bytes (uint64_t steps, uint64_t deps, uint64_t peers,
                              uint32_t n_ranks);
size_t weft_exec_run_bytes (uint64_t waiting, uint32_t n_ranks,
                            uint64_t peers);

/* weft_execute() of the schedule @image was made of: @image may be shared
 * by other runs at once (each keeps its own state). */
void weft_execute_image (WeftNetwork *net, const WeftExecImage *image,
                         const uint32_t *gpus, const WeftProtocol *protocol,
                         WeftTime *spans, WeftEventFn done, void *target,
                         void *data);

/* weft_execute_image() for an image no other run uses: the run takes it
 * and frees it. */
void weft_execute_own (WeftNetwork *net, WeftExecImage *image,
                       const uint32_t *gpus, const WeftProtocol *protocol,
                       WeftTime *spans, WeftEventFn done, void *target,
                       void *data);

/* An instance of a schedule whose ranks join one at a time, as the ranks
 * of a traced collective reach it: each joining rank starts its steps after
 * the protocol's base latency; rank_done(sim, target, r) runs (as an event
 * of its own, so it may free the instance) when rank r has joined and
 * finished all its steps.  rank r is node @nodes[r]; @image (of the
 * schedule) and @nodes must outlive the instance, which the caller frees.
 * Instances of different protocols share a network whose links run at
 * NCCL's Simple rate (WeftNetworkConfig.nccl = 1): a send puts bytes /
 * efficiency on the wire (LL's flags, say). */
typedef struct _WeftExec WeftExec;
typedef void (*WeftRankFn) (WeftSim *sim, void *target, uint32_t rank);

WeftExec *weft_exec_new (WeftNetwork *net, const WeftExecImage *image,
                         const uint32_t *nodes, const WeftProtocol *protocol,
                         WeftRankFn rank_done, void *target);
void weft_exec_join (WeftExec *exec, uint32_t rank);
void weft_exec_free (WeftExec *exec);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (WeftExecImage, weft_exec_image_free)

G_END_DECLS
