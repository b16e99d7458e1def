/* weft: what an algorithm looks at in the fabric before it is built: the
 * ranks' servers, the switches that reduce.  Its fit check says whether it
 * can run there, and what it found. */
#pragma once

#include "collectives/collective.h"
#include "topology/topology.h"

G_BEGIN_DECLS

/* What an algorithm's fit check looks at, and what it finds there. */
typedef struct {
  const WeftTopology *topo;
  const uint32_t *gpus;         /* rank i runs on node gpus[i] */
  uint32_t n;                   /* GPU ranks */
  WeftOp op;
  uint64_t size;                /* nccl-tests' size */
  uint32_t local;               /* two-level algorithms: ranks per server,
                                   found before the fit check runs */
  GArray *nodes;                /* uint32_t: the node of every rank; holds
                                   the GPUs, and the check appends the
                                   switches of the ranks it adds */
  GArray *shares;               /* double: each added switch's share of
                                   the buffer */
  uint32_t *server;             /* each rank's server, if the check found
                                   them (freed by weft_fit_clear()) */
  WeftRings *rings;             /* the rings it found (likewise) */
  GArray *planes;               /* uint32_t, or NULL: where the check may
                                   join switches into one place of planes
                                   (network.h), their lists, which the
                                   caller appends to `nodes`, each place
                                   there then moved by the length of
                                   `nodes` before (weft_fit_place_planes()) */
  uint32_t *parent;             /* each rank's parent on an aggregation
                                   tree, if the check found one (likewise) */
} WeftFit;

/* Whether the algorithm can run on @fit's GPUs: FALSE with @error
 * (WEFT_SCHEDULE_ERROR_UNFIT) saying why not.  With @p NULL that is all
 * it says, as cheaply as it can; otherwise it also fills in @p what the
 * builder needs of the fabric (switches, servers, rings, channels and
 * chunks chosen by the fabric), pointing into @fit. */
typedef gboolean (*WeftFitFn) (WeftFit *fit, WeftCollectiveParams *p,
                               GError **error);

/* Free what a fit check found (@fit->server, @fit->rings, @fit->parent),
 * not the arrays
 * the caller gave it. */
void weft_fit_clear (WeftFit *fit);

/* Each of the @n GPUs' server, as NCCL counts nodes: the GPUs that reach
 * each other without crossing the network (NVLink, PCIe, the links between
 * sockets), so a GB200 NVL72 rack is one; a server is named by its first
 * node.  The caller frees the array. */
uint32_t *weft_fit_servers (const WeftTopology *topo, const uint32_t *gpus,
                            uint32_t n);

/* As weft_fit_servers(), and into @network[r] (unless NULL) what rank r's
 * server's network links carry out of it at NCCL's model of them, each
 * NIC at most what its host side brings it, in proportion to the
 * server's GPUs that are among the @gpus (B/s, one way; 0 if it has
 * none): what rings across servers can take out of it. */
uint32_t *weft_fit_servers_network (const WeftTopology *topo,
                                    const uint32_t *gpus, uint32_t n,
                                    double *network);

/* The ranks a server has in @gpus[0..n-1], which must come server by
 * server (a server: a top-level template instance), as many in each, into
 * @local; FALSE with @error (WEFT_SCHEDULE_ERROR_UNFIT) if they do not,
 * which is what the two-level algorithms need. */
gboolean weft_fit_ranks_per_server (const WeftTopology *topo,
                                    const uint32_t *gpus, uint32_t n,
                                    uint32_t *local, GError **error);

/* The switches that reduce (reduce_bandwidth above 0) joined to every one
 * of the @n GPUs @gpus, appended to @nodes (uint32_t) with their share of
 * the buffer (the lanes the first GPU has to each) in @shares (double);
 * FALSE with @error (WEFT_SCHEDULE_ERROR_UNFIT) if there are none. */
gboolean weft_fit_switches (const WeftTopology *topo, const uint32_t *gpus,
                            uint32_t n, GArray *nodes, GArray *shares,
                            GError **error);

/* Whether the @m switches @sw, of @lanes lanes each from the first GPU,
 * may act as planes of one place for the @n GPUs @gpus: each has as many
 * lanes (so that their reduction engines, each at its own rate, finish
 * their shares together) and every GPU's links to and from each of them
 * carry as much, so that one transfer over all of them moves as one
 * transfer to each would. */
gboolean weft_fit_planes (const WeftTopology *topo, const uint32_t *gpus,
                          uint32_t n, const uint32_t *sw, const double *lanes,
                          uint32_t m);

/* Add to @fit->planes the list of the @m planes @sw (weights @lanes) and
 * return their place, as the fit check's `nodes` holds it. */
uint32_t weft_fit_add_planes (WeftFit *fit, const uint32_t *sw,
                              const double *lanes, uint32_t m);

/* Once the check has run: append @fit->planes to @fit->nodes, each place
 * of planes among the ranks' moved to where its list now lies. */
void weft_fit_place_planes (WeftFit *fit);

/* The pieces, 1 to WEFT_CHUNKS, of a pipeline in two stages (into a
 * switch and back out) whose pieces follow each other on each way, each
 * send waiting @hop seconds before it moves and the whole buffer taking
 * @move seconds each way: P pieces take about (P + 1) hop + (1 + 1/P)
 * move, the P that makes that least.  Few pieces for a small buffer, as
 * NCCL cuts NVLS and CollNet into smaller chunks for smaller messages. */
uint32_t weft_fit_pieces (double hop, double move);

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (WeftFit, weft_fit_clear)

G_END_DECLS
