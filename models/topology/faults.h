/* weft: faults.  A scenario's `faults:` section (and weft run's --fault)
 * takes links, switches and NICs down, or runs them at a share of their
 * bandwidth, and slows GPUs' compute and reduction (stragglers), for the
 * whole run or from one time until another (`from`, `until`: from the
 * start of each simulation).  A link that is down stays in the topology
 * (its statistics show it idle) but in no route: routing, every engine
 * alike, chooses among what is up.  docs/faults.md documents the format. */
#pragma once

#include "config.h"
#include "topology/topology.h"

G_BEGIN_DECLS

typedef struct {
  char *what;                   /* as written: "ib/spine0", "a - b" */
  double share;                 /* of the bandwidth left: 0 down, (0, 1];
                                   1 for a straggler whose links are whole */
  double compute;               /* of the GPUs' compute speed left: 1 but
                                   for a straggler */
  uint32_t links;               /* full-duplex links it applies to */
  uint32_t gpus;                /* GPUs slowed (compute) */
  WeftTime from, until;         /* ps: it holds in [from, until) */
  uint32_t *link_ids;           /* its links (each pair's first), and */
  uint32_t *gpu_ids;            /* its GPUs, ascending */
} WeftFault;

/* A fault's `until` when it holds to the end. */
#define WEFT_FOREVER G_MAXUINT64

/* Whether @fault holds at time @t. */
static inline gboolean
weft_fault_holds (const WeftFault *fault, WeftTime t)
{
  return fault->from <= t && t < fault->until;
}

void weft_fault_free (WeftFault *fault);

/* Apply each of @entries (maps: `node`, or `a` and `b`, and `speed`; or
 * `node` and `compute`) to the unfinished @topo: cut the bandwidth of the
 * links they name, or take them down, or slow the GPUs they name, and list
 * them in topo->faults.  A zone whose own links
 * change no longer shares its template's routes.  Bad input (a name that
 * matches no node, an entry that names no link, a GPU taken down) fails
 * with "file:line:col: what is wrong". */
gboolean weft_faults_apply (WeftTopology *topo, const GPtrArray *entries,
                            GError **error);

/* With faults that start or end during a run in the finished @topo: its
 * topology from each time one does on (topo->phases).  One may cut GPUs
 * apart: a run that needs a path between them then fails at that moment
 * (weft_network_failure()), which weft topo foretells. */
void weft_faults_phases (WeftTopology *topo);

/* When a GPU that starts @work ps of compute (or reduction) at full speed at
 * @start finishes it, slowed by the stragglers of @topo that hold on it
 * meanwhile. */
WeftTime weft_faults_compute_end (const WeftTopology *topo, uint32_t gpu,
                                  WeftTime start, double work);

/* The map a --fault @arg stands for: "NODES" takes the nodes down, "A B"
 * every link between a node of A and one of B; a last word such as "50%"
 * or "0.5" runs them at that share of their bandwidth instead; "GPUS
 * compute 50%" slows the GPUs' compute and reduction to that share.  Each
 * may end in "from T", "until T" or both.  Positions in its errors are
 * "--fault ARG:1:COL". */
WeftCfg *weft_fault_from_arg (const char *arg, GError **error);

G_END_DECLS
