/* weft: the topology: nodes, directed links, link types and devices.
 *
 * A WeftTopology is a plain data structure built once (by the scenario loader
 * and the fabric generators) and then read by routing, the network models and
 * the reports.  Nodes and links are dense integer ids.  Every physical link is
 * full duplex: it is stored as two directed links, 2i and 2i + 1.
 *
 * Nodes may belong to a zone: the nodes of one top-level template instance (a
 * server) form a zone and are numbered contiguously.  Routing uses zones to
 * keep its state proportional to the fabric, not to GPUs squared.
 */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "sim.h"

G_BEGIN_DECLS

typedef enum {
  WEFT_NODE_GPU,
  WEFT_NODE_SWITCH,
  WEFT_NODE_NIC,
  WEFT_NODE_CPU,
  WEFT_NODE_KIND_COUNT,
} WeftNodeKind;

/* The families that link types belong to, for summaries. */
typedef enum {
  WEFT_FAMILY_NVLINK,
  WEFT_FAMILY_PCIE,
  WEFT_FAMILY_NETWORK,          /* InfiniBand, Ethernet */
  WEFT_FAMILY_OTHER,            /* CPU socket links, chip-to-chip */
  WEFT_FAMILY_COUNT,
} WeftLinkFamily;

#define WEFT_TOPOLOGY_ERROR (weft_topology_error_quark ())
GQuark weft_topology_error_quark (void);

typedef enum {
  WEFT_TOPOLOGY_ERROR_NAME,     /* a name pattern or selector that is
                                   malformed or names the wrong nodes */
  WEFT_TOPOLOGY_ERROR_LINK,     /* a link the nodes' ports cannot take */
} WeftTopologyError;

#define WEFT_ZONE_ROOT UINT32_MAX
#define WEFT_NONE UINT32_MAX

typedef struct {
  char *name;
  char *port;                   /* port class it plugs into: nvlink, pcie... */
  WeftLinkFamily family;
  double bandwidth;             /* B/s per lane, one direction, on the wire */
  double encoding;              /* line-code efficiency, 128/130 for PCIe 3-5 */
  uint64_t payload;             /* bytes of data per packet or flit */
  uint64_t header;              /* bytes of overhead per packet */
  WeftTime latency;             /* ps, one way, per hop */
  uint32_t cost;                /* routing metric of one hop */
  double nccl_bandwidth;        /* B/s per lane that NCCL's Simple protocol
                                   moves over it (NCCL's model); 0: the
                                   effective bandwidth */
} WeftLinkType;

typedef struct {
  char *name;
  WeftNodeKind kind;
  char **port_names;            /* port classes */
  uint32_t *port_counts;        /* ports of each class */
  uint32_t n_port_classes;
  double reduce_bandwidth;      /* B/s: a GPU's local reduction; a switch's
                                   in-network reduction (0: none) */
  uint64_t memory;              /* bytes: a GPU's memory (0: not said) */
  double ll_bandwidth[3];       /* B/s: the most bus bandwidth NCCL's LL
                                   protocol reaches on a GPU (NCCL's
                                   llMaxBw) inside a server, across two,
                                   across three or more; 0: no bound */
  uint32_t compute_capability;  /* a GPU's, times ten (90: Hopper), for
                                   NCCL's constants by architecture; 0:
                                   not said */
  WeftTime latency;             /* ps: a switch's port-to-port latency */
  uint64_t buffer;              /* bytes per port (switches) */
  gboolean cut_through;         /* switches: forward before the whole packet */
} WeftDevice;

typedef struct {
  char *name;                   /* hierarchical: "node12/gpu3" */
  const WeftDevice *device;
  WeftNodeKind kind;
  uint32_t zone;                /* WEFT_ZONE_ROOT or a zone id */
  uint32_t port_base;           /* its port counters in ports_used */
  uint8_t routing;              /* how it picks among equal-cost next hops:
                                   a WeftRouteEngine (route_engine.h), that
                                   of the fabric that made it; 0: dmodk */
  float compute;                /* GPUs: the share of their compute and
                                   reduction speed they keep: 1, or less for
                                   a straggler (`faults:`) */
} WeftNode;

typedef struct {
  uint32_t src, dst;            /* node ids */
  uint32_t type;                /* index into the topology's link types */
  uint32_t lanes;               /* parallel links bundled into this one */
  double bandwidth;             /* B/s, one direction, after encoding and
                                   packet overhead, all lanes */
  WeftTime latency;             /* ps, one way */
  uint32_t cost;                /* routing metric */
  float share;                  /* of its bandwidth it runs at: 1, or less
                                   under a fault (`faults:`; bandwidth is
                                   then already cut); 0: down, in no
                                   route */
} WeftLink;

typedef struct {
  uint32_t template_id;         /* which template the zone instantiates */
  uint32_t first_node;          /* its nodes are first_node .. + n_nodes - 1 */
  uint32_t n_nodes;
  gboolean custom;              /* links added inside it after instantiation */
} WeftZone;

typedef struct {
  char *name;
  uint32_t n_nodes;             /* nodes per instance */
  uint32_t first_zone;          /* a zone that instantiates it unchanged, or
                                   WEFT_NONE */
} WeftZoneTemplate;

typedef struct _WeftTopology WeftTopology;

struct _WeftTopology {
  GPtrArray *link_types;        /* WeftLinkType *, owned */
  GPtrArray *devices;           /* WeftDevice *, owned */
  GHashTable *link_type_index;  /* name -> index + 1 */
  GHashTable *device_index;     /* name -> WeftDevice * */

  WeftNode *nodes;
  uint32_t n_nodes, nodes_cap;
  GHashTable *node_index;       /* name -> id + 1 (names owned by nodes) */

  WeftLink *links;              /* directed: 2i and 2i + 1 are one cable */
  uint32_t n_links, links_cap;

  /* Ports in use, per node and port class of its device, for the "more
   * links than ports" check: node n's classes start at nodes[n].port_base. */
  uint32_t *ports_used;
  uint32_t n_ports_used, ports_used_cap;
  uint32_t open_zone;           /* zone being instantiated, or WEFT_NONE */

  WeftZone *zones;
  uint32_t n_zones, zones_cap;
  GPtrArray *zone_templates;    /* WeftZoneTemplate *, owned */

  /* Adjacency, built by weft_topology_finish(): the directed links leaving
   * node n are out_links[out_start[n] .. out_start[n + 1] - 1]. */
  uint32_t *out_start;
  uint32_t *out_links;
  gboolean finished;

  /* Routing state that networks over the topology leave for the next (see
   * weft_network_new()), opaque here and freed with it. */
  GMutex spare_lock;
  GPtrArray *spare;             /* or NULL */

  GPtrArray *faults;            /* WeftFault * (faults.h), owned: what was
                                   taken down or slowed, as written */

  /* Faults that start or end during a run (faults.h): each directed link's
   * bandwidth with no fault, and the topology as it is from each time one
   * starts or ends (WeftTopoPhase, by time), owned; NULL without.  This
   * topology is the one at time 0. */
  double *whole_bandwidth;
  GArray *phases;
  gboolean compute_windows;     /* a straggler slows a GPU for a while */
  /* A phase's topology: the one whose phase it is.  It owns its links,
   * zones and adjacency; the rest is the base's. */
  const WeftTopology *base;
};

typedef struct {
  WeftTime at;                  /* ps from the start of a simulation */
  WeftTopology *topo;
} WeftTopoPhase;

/* Whether every GPU of @topo reaches every other over links that are up;
 * if not, @a and @b are two that do not.  @parent (a node each) receives
 * the parts the links join (weft_find_root() gives a node's). */
gboolean weft_topology_gpus_joined (const WeftTopology *topo, uint32_t *parent,
                                    uint32_t *a, uint32_t *b);

/* A finished topology as @base but for its links' shares: @share[l] of
 * directed link l's whole bandwidth (0: down), for a phase of timed
 * faults.  Zones with a link not whole get routes of their own.  Freed
 * with weft_topology_free() before @base. */
WeftTopology *weft_topology_phase_new (const WeftTopology *base,
                                       const float *share);

const char *weft_node_kind_name (WeftNodeKind kind);
gboolean weft_node_kind_parse (const char *name, WeftNodeKind *kind);
const char *weft_link_family_name (WeftLinkFamily family);

/* The bandwidth one lane of @type carries for data: on-wire rate times
 * encoding efficiency times payload / (payload + header). */
double weft_link_type_effective (const WeftLinkType *type);

/* What collectives move over @link of @topo, B/s: NCCL's model of it (its
 * type's nccl_bandwidth, all lanes, at the link's share), never above the
 * link's own rate, or the link's own rate where the type gives none. */
double weft_link_nccl_rate (const WeftTopology *topo, const WeftLink *link);

WeftTopology *weft_topology_new (void);
void weft_topology_free (WeftTopology *topo);

/* Add a link type or device; the topology takes ownership.  The name must
 * be new (the scenario loader checks and reports duplicates). */
uint32_t weft_topology_add_link_type (WeftTopology *topo, WeftLinkType *type);
void weft_topology_add_device (WeftTopology *topo, WeftDevice *device);
void weft_link_type_free (WeftLinkType *type);
void weft_device_free (WeftDevice *device);

/* Look-ups by name; NULL or WEFT_NONE when absent. */
const WeftLinkType *weft_topology_link_type (const WeftTopology *topo,
                                             const char *name,
                                             uint32_t *index);
const WeftDevice *weft_topology_device (const WeftTopology *topo,
                                        const char *name);
uint32_t weft_topology_find_node (const WeftTopology *topo, const char *name);

/* Add a node named @name (taken over) of @device in @zone.  Returns its id,
 * or WEFT_NONE if the name is taken. */
uint32_t weft_topology_add_node (WeftTopology *topo, char *name,
                                 const WeftDevice *device, uint32_t zone);

/* Add a full-duplex link of @lanes lanes of link type @type between @a and
 * @b, through their ports of class @port (the type's own class if NULL).
 * Fails with a message (no position) if a node has no such port class or not
 * enough free ports of it.  Returns the id of the a->b direction. */
gboolean weft_topology_add_link (WeftTopology *topo, uint32_t a, uint32_t b,
                                 uint32_t type, uint32_t lanes,
                                 const char *port_a, const char *port_b,
                                 uint32_t *id, GError **error);

/* Start a zone instantiating template @template_id; nodes added until the
 * next call belong to it.  Returns the zone id. */
uint32_t weft_topology_begin_zone (WeftTopology *topo, uint32_t template_id);
void weft_topology_end_zone (WeftTopology *topo, uint32_t zone);

/* Build the adjacency, of the links that are up.  No nodes or links may
 * be added afterwards. */
void weft_topology_finish (WeftTopology *topo);

/* The number of nodes of @kind. */
uint32_t weft_topology_count (const WeftTopology *topo, WeftNodeKind kind);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (WeftTopology, weft_topology_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC (WeftLinkType, weft_link_type_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC (WeftDevice, weft_device_free)

G_END_DECLS
