/* weft: the network, one interface with three fidelities.
 *
 * Everything above the network (collectives, traces) asks for
 * weft_network_transfer(): move these bytes from this node to that one and
 * call me when the last byte has arrived.  What answers is chosen per run:
 *
 *   packet      messages cut into packets, per-port queues with finite
 *               buffers, credit-based lossless flow control, ECMP;
 *   flow        fluid flows whose rates are max-min fair over the links,
 *               recomputed when a flow starts or ends;
 *   analytical  latency plus bytes over the path's bottleneck, each link
 *               sharing itself fairly among the transfers on it, on its
 *               own (not max-min along their paths);
 *   analytical-free  the same with no sharing: every transfer has its
 *               path to itself (congestion unaware).
 *
 * docs/network-models.md gives the equations. */
#pragma once

#include "network/link_stats.h"
#include "topology/routing.h"
#include "sim.h"
#include "topology/topology.h"

G_BEGIN_DECLS

typedef enum {
  WEFT_FIDELITY_PACKET,
  WEFT_FIDELITY_FLOW,
  WEFT_FIDELITY_ANALYTICAL,
  WEFT_FIDELITY_ANALYTICAL_FREE,
} WeftFidelity;

/* Parse "packet", "flow", "analytical" or "analytical-free". */
gboolean weft_fidelity_parse (const char *name, WeftFidelity *fidelity);
const char *weft_fidelity_name (WeftFidelity fidelity);

typedef struct _WeftNetwork WeftNetwork;

typedef enum {
  WEFT_SCAN_AUTO,
  WEFT_SCAN_ALWAYS,
  WEFT_SCAN_NEVER,
} WeftScan;

/* Per-fidelity operations: a const table, as model kinds are. */
typedef struct {
  const char *name;
  WeftNetwork *(*create) (void);
  void (*start) (WeftNetwork *net, uint32_t transfer);
  void (*destroy) (WeftNetwork *net);
  void (*flush) (WeftNetwork *net); /* NULL, or bring net->stats up to date */
  void (*prefetch) (WeftNetwork *net, const uint32_t *links, uint32_t n);
                                /* NULL, or fetch the model's state of these
                                   links into the cache ahead of use */
  void (*set_scan) (WeftNetwork *net, WeftScan scan);
                                /* NULL, or see weft_network_set_scan() */
  void (*set_threads) (WeftNetwork *net, uint32_t threads);
                                /* NULL, or see weft_network_set_threads() */
  void (*set_bundles) (WeftNetwork *net, gboolean bundles);
                                /* NULL, or see weft_network_set_plain() */
  void (*relink) (WeftNetwork *net, uint32_t link, double old_capacity);
                                /* net->capacity[link] has changed now (a
                                   fault starts or ends) */
  uint64_t (*withdraw) (WeftNetwork *net, uint32_t id, gboolean lost,
                        gboolean *keeps);
                                /* transfer @id is routed anew (@lost: a
                                   link of its path has gone down): the
                                   bytes it has yet to deliver (0: none, it
                                   goes on as it is), taken off the network
                                   (its slot freed now or once its pending
                                   events have come); or with *keeps set,
                                   it goes on with what it has on its way
                                   (its bytes lowered to what it will
                                   deliver) and completes on its own */
  gboolean whole_stripes;       /* a striped transfer is one transfer over
                                   every stripe's links (see link_bytes) */
  gboolean counts_bytes;        /* it counts the bytes links carry itself
                                   (added to net->stats by flush) */
  size_t link_state;            /* bytes of its own state per directed link */
  size_t transfer_state;        /* ...and per transfer in progress, beside
                                   the transfer's own record and path */
  size_t path_state;            /* ...and per link of such a transfer's
                                   path, at most... */
  uint32_t near_links;          /* ...and for a path of more links than
                                   this (0: none), far_state per link of
                                   twice its length */
  size_t far_state;
} WeftNetworkClass;

/* One transfer in progress.  Its first line holds all that its start and
 * end read of it in the flow model, which keeps the path itself: at scale
 * each line of it is a cache miss. */
typedef struct {
  _Alignas (64) uint64_t bytes;
  double cap;                   /* B/s, 0: none */
  WeftTime latency;             /* ps: links and the nodes between them */
  WeftEventFn done;
  void *target, *data;
  uint32_t src;                 /* node */
  uint32_t next_free;           /* a free slot: the next of its node's */
  uint32_t path_len;
  gboolean striped;             /* else every path link carries all bytes */
  /* Its own route, which the models that take it in parts (packet,
   * analytical) read after its start; the flow model reads the route only
   * while it starts, in net->starting, which may lie elsewhere. */
  _Alignas (64) uint32_t *path; /* its directed links, in order */
  uint64_t *link_bytes;         /* with `striped`: the bytes each path link
                                   carries (its stripe's share) */
  double bottleneck;            /* B/s one part could move at alone */
  double part;                  /* its share of the transfer it is a part
                                   of (planes, stripes), else 1 */
  uint32_t path_cap;            /* the slot keeps its buffers for the next */
  /* What it was asked as, to send it again over other links should one of
   * its own go down: between places @from and @to of @places (NULL:
   * nodes), behind send engines of kind @engine. */
  const uint32_t *places;
  uint32_t from, to;
  uint16_t engine;
  uint8_t live;                 /* in flight */
} WeftTransfer;

struct _WeftNetwork {
  const WeftNetworkClass *klass;
  WeftSim *sim;
  const WeftTopology *topo;
  uint32_t n_links;             /* directed links the models keep: the
                                   topology's, then send engines' */
  double *capacity;             /* B/s per directed link that data moves at */
  WeftRouting *routing;         /* owned */
  WeftLinkStats *stats;         /* owned */

  WeftTransfer *transfers;      /* by id; slots are reused */
  /* The route of the transfer being started, valid only while the
   * fidelity's start() runs: its path_len links, and with `striped` the
   * bytes each carries (uint64_t) and, or NULL, their shares of its bytes
   * (double), worked out for a transfer before.  Maybe unaligned: copy
   * them out. */
  struct {
    const uint32_t *links;
    const void *link_bytes, *shares;
  } starting;
  uint32_t n_transfers, transfers_cap;
  uint32_t *free_transfers;     /* per source node: its last freed slot */
  GArray *scratch;              /* a path being routed */
  GArray *hops;                 /* first hops of a transfer being split */
  GArray *stripe_links;         /* a striped transfer's links being gathered */
  GArray *stripe_bytes;         /* ...and the bytes each carries */
  GArray *plane_links;          /* the same of a transfer to or from planes */
  GArray *plane_bytes;
  GHashTable *plane_routes;     /* transfers to or from planes: their
                                   routes, kept (planes.c) */

  uint64_t next_flow;
  uint64_t started, finished;   /* transfers */
  uint64_t bytes_delivered;
  uint64_t packet_hops;         /* packet model: packets moved over a link */

  /* In-switch reduction engines: when each switch's engine is next free. */
  WeftTime *reduce_free_at;

  gboolean plain;               /* speed-ups off (weft_network_set_plain()) */
  gboolean deep;                /* its state outgrows the caches: fetching
                                   ahead (weft_network_prefetch()) pays */
  struct _WeftRoute *routes;    /* whole transfers' routes remembered */
  uint64_t *route_keys;         /* their (src, dst), by slot */
  uint32_t *route_pool;         /* their hops, links and stripes */
  uint32_t pool_used, pool_cap, pool_dead;
  uint32_t n_routes, routes_max, routes_filled, route_clock;
  uint64_t routes_missed;       /* transfers routed while routes were kept */
  GHashTable *unlearnt;         /* (src, dst) pairs, at most a few thousand,
                                   whose striped route is not kept (a flow's
                                   hash chose it, or it is too long): their
                                   small transfers do not try again */
  GPtrArray *adopted;           /* objects freed with the network */
  uint32_t *load;               /* transfers in flight per directed link,
                                   kept only for adaptive routing, or NULL */
  GHashTable *splits;           /* striped transfers still in progress */
  /* Send engines (weft_network_add_engines()): per kind and node, the
   * engine's link or WEFT_NONE; the kind the
   * transfers started now cross (0: none); a path with its engine. */
  GArray *engine_links;
  uint32_t engine_kind;
  GArray *engine_shares;
  /* The share of the transfer being started that a part started now
   * carries (WeftTransfer.part). */
  double part;
  /* What the transfer being started was asked as (WeftTransfer.places,
   * from, to). */
  struct {
    const uint32_t *places;
    uint32_t from, to;
  } asked;
  double nccl;                  /* WeftNetworkConfig.nccl */
  uint32_t phase;               /* faults with times: phases begun */
  gboolean keep_paths;          /* ...which need each transfer's links */
  char *failure;                /* why the run cannot go on, or NULL */
};

typedef struct {
  WeftFidelity fidelity;
  WeftTime bin_width;           /* ps, for the link statistics */
  uint64_t seed;                /* picks the ECMP choices */
  double nccl;                  /* above 0: links carry data at NCCL's model
                                   of them (nccl_bandwidth) times this, the
                                   protocol's share; 0: at their own rate */
} WeftNetworkConfig;

/* A network of @config's fidelity over the finished @topo, driven by @sim.
 * Both must outlive it. */
WeftNetwork *weft_network_new (WeftSim *sim, const WeftTopology *topo,
                               const WeftNetworkConfig *config);
void weft_network_free (WeftNetwork *net);

/* Fetch into the cache, ahead, what a transfer from @src to @dst will read:
 * at @stage 0 where its remembered route would be; at each later stage,
 * once what the one before fetched has had time to arrive, the next thing
 * it leads to: at stage 1 the route's record, at stage 2 its list of
 * links, at stage 3 the links (WEFT_PREFETCH_STAGES in all).  Changes
 * nothing: a caller about to start many transfers calls it a few transfers
 * ahead of each stage. */
#define WEFT_PREFETCH_STAGES 4
void weft_network_prefetch (WeftNetwork *net, uint32_t src, uint32_t dst,
                            int stage);

/* Links from which a network counts as deep: their flow model's records
 * alone fill 2 MiB, a server core's L2 cache.  Below, fetching ahead
 * costs instructions and saves no wait. */
#define WEFT_DEEP_LINKS 32768

/* Move @bytes from node @src to node @dst, at most at @cap B/s (0: no cap),
 * and run done(sim, target, data) when the last byte has arrived.  A
 * transfer to the node itself, or of no bytes, completes at once.  When
 * several equal-cost links leave @src toward @dst, the bytes are striped
 * over all of them in proportion to the bandwidth of each stripe's path
 * (its narrowest link). */
void weft_network_transfer (WeftNetwork *net, uint32_t src, uint32_t dst,
                            uint64_t bytes, double cap, WeftEventFn done,
                            void *target, void *data);

/* Reduce @bytes in switch @node's in-network reduction engine (NVLS,
 * SHARP): requests are served one after another at the switch's
 * reduce_bandwidth; done runs when this one is finished.  The switch must
 * have that capability. */
void weft_network_switch_reduce (WeftNetwork *net, uint32_t node,
                                 uint64_t bytes, WeftEventFn done,
                                 void *target, void *data);

/* ---- planes ----
 *
 * Nodes that act as one place: the NVSwitch chips of a server, over which
 * NVLS spreads every piece, each chip taking its weight's share (the lanes
 * each GPU has to it).  A send to or from planes is one transfer over all
 * their paths (one flow in the flow model, as a striped transfer is), and
 * a reduction in them is each reducing its share at once: what the chips
 * taken one by one would do, as one event where they would make one each.
 *
 * A list of places holds for each rank its node, or WEFT_PLANES | i, where
 * list[i] is the number m of planes and list[i + 1 .. i + 2m] their m
 * (node, weight) pairs. */
#define WEFT_PLANES 0x80000000u

static inline gboolean
weft_place_is_planes (uint32_t place)
{
  return (place & WEFT_PLANES) != 0;
}

/* The node of @place in @places: itself, or its first plane's. */
static inline uint32_t
weft_place_node (const uint32_t *places, uint32_t place)
{
  return weft_place_is_planes (place) ? places[(place & ~WEFT_PLANES) + 1]
                                      : place;
}

/* weft_network_transfer() between places @src and @dst of @places (nodes,
 * or planes on one side). */
void weft_network_transfer_places (WeftNetwork *net, const uint32_t *places,
                                   uint32_t src, uint32_t dst, uint64_t bytes,
                                   double cap, WeftEventFn done, void *target,
                                   void *data);

/* weft_network_switch_reduce() at place @place of @places: a switch, or
 * planes, each reducing its share of @bytes. */
void weft_network_reduce_places (WeftNetwork *net, const uint32_t *places,
                                 uint32_t place, uint64_t bytes,
                                 WeftEventFn done, void *target, void *data);

/* ---- send engines ----
 *
 * What a GPU's kernels can move may bound its sends however many links
 * they leave by: NCCL holds LL's bus bandwidth to llMaxBw whatever the
 * links (a ring's bus bandwidth is what each GPU sends).  A send engine is
 * a link of the network's own, of rate @rate[node] B/s for each node whose
 * rate is above 0, that every transfer from that node crosses first while
 * its kind is in use (weft_network_use_engines()): the node's transfers
 * share it as they share any link, and no fabric link slows down.  Its
 * traffic is in no statistics.  Returns the engines' kind (1, 2, ...);
 * call before the first transfer. */
uint32_t weft_network_add_engines (WeftNetwork *net, const double *rate);

/* Transfers started from now on cross their source's engine of @kind (0:
 * none), until it changes. */
static inline void
weft_network_use_engines (WeftNetwork *net, uint32_t kind)
{
  net->engine_kind = kind;
}

/* Bring net->stats up to date: a fidelity may keep some figures (the flow
 * model's busy times and bytes) with its own state while it runs.  Call before
 * reading the statistics after a run. */
void weft_network_flush_stats (WeftNetwork *net);

/* What weft_network_set_plain() switches off, for tests: the speed-ups
 * (remembered routes and whole transfers' routes, filling flows in groups
 * that share no link), after which results must not change; and the flow
 * model's bundles (transfers on one path filled as one flow), after which
 * they change by rounding alone. */
#define WEFT_PLAIN_SPEEDUPS 1u
#define WEFT_PLAIN_BUNDLES 2u

/* Switch off what @plain names (WEFT_PLAIN_SPEEDUPS, WEFT_PLAIN_BUNDLES, or
 * both; TRUE is the first). */
void weft_network_set_plain (WeftNetwork *net, uint32_t plain);

/* How the flow model finds the flows that a change of rates affects: by
 * each changed link's list of flows, or by reading every flow in flight
 * (faster when most of them are affected).  AUTO, the default, picks by
 * the number of changes; the others are for tests: results must not
 * change.  The other fidelities have nothing to find and ignore it. */
void weft_network_set_scan (WeftNetwork *net, WeftScan scan);

/* Let up to @threads threads (1, the default, to WEFT_MAX_THREADS) share
 * the work of simulating: the flow model fills large recomputations'
 * independent groups of flows on several; the other fidelities use one.
 * Results do not change. */
#define WEFT_MAX_THREADS 64
void weft_network_set_threads (WeftNetwork *net, uint32_t threads);

/* Free @object with @destroy when the network is freed (the executor's
 * state, which must outlive any event still pending). */
void weft_network_adopt (WeftNetwork *net, gpointer object,
                         GDestroyNotify destroy);

/* Bytes a network of @fidelity over @topo holds for its links and nodes
 * (the model's state of each link, its capacity and statistics' head),
 * before any transfer: what each simulation at once adds. */
size_t weft_network_bytes (const WeftTopology *topo, WeftFidelity fidelity);

/* Bytes each transfer in progress over @topo takes in a network of
 * @fidelity, at most: its path as long as routes through a fabric of
 * three levels are, or as a transfer striped over every link of a GPU
 * and back in (a GB200's eighteen NVSwitch chips). */
size_t weft_network_transfer_bytes (const WeftTopology *topo,
                                    WeftFidelity fidelity);

/* The time an idle path from @src to @dst would take for @bytes: its
 * latency plus bytes over its bottleneck.  The closed form every fidelity
 * meets on an uncongested transfer. */
WeftTime weft_network_ideal_time (WeftNetwork *net, uint32_t src,
                                  uint32_t dst, uint64_t bytes);

/* What the route from @src to @dst crosses, as bits: WEFT_CROSSES_PCIE
 * (PCIe, or links of no family), WEFT_CROSSES_NETWORK.  The answer is
 * flow 0's route's (not every stripe's), kept with a remembered route. */
#define WEFT_CROSSES_PCIE 1u
#define WEFT_CROSSES_NETWORK 2u
uint32_t weft_network_crosses (WeftNetwork *net, uint32_t src, uint32_t dst);

/* Why the run on @net stopped before its end (a fault left no path
 * between two places it had to join), or NULL: weft_sim_run() then
 * returns with the run unfinished. */
static inline const char *
weft_network_failure (const WeftNetwork *net)
{
  return net->failure;
}

/* ---- for the fidelities ---- */

/* Finish transfer @id now: account it and call its done function after the
 * path's latency has passed (@delay ps). */
void weft_network_complete (WeftNetwork *net, uint32_t id, WeftTime delay);

/* Free transfer @id's slot without completing it: a fidelity whose
 * withdrawn transfer (WeftNetworkClass.withdraw) still had an event
 * pending frees it once that has come. */
void weft_network_release (WeftNetwork *net, uint32_t id);

/* The latency a node adds when traffic passes through it. */
WeftTime weft_network_node_latency (const WeftNetwork *net, uint32_t node);

extern const WeftNetworkClass weft_network_packet_class;
extern const WeftNetworkClass weft_network_flow_class;
extern const WeftNetworkClass weft_network_analytical_class;
extern const WeftNetworkClass weft_network_analytical_free_class;

G_DEFINE_AUTOPTR_CLEANUP_FUNC (WeftNetwork, weft_network_free)

G_END_DECLS
