/* Random scenarios for the property tests (test_properties.c) and their
 * benchmark (weft-bench properties): fabrics of every kind weft generates,
 * with random sizes, link speeds and hardware, drawn from a seed and
 * written as YAML text that the scenario loader reads like any user's
 * file (fabric_gen.c). */
#pragma once

#include "collectives/collective_run.h"
#include "rng.h"
#include "topology/scenario.h"

G_BEGIN_DECLS

typedef enum {
  FABRIC_FAT_TREE,              /* servers' NICs on a fat-tree */
  FABRIC_RAIL,                  /* ...on a rail-optimized tree, maybe in
                                   planes */
  FABRIC_TORUS,                 /* GPUs in a 2-D or 3-D torus of NVLinks */
  FABRIC_MESH,                  /* GPUs, every pair joined by NVLink */
  FABRIC_STAR,                  /* GPUs on one NVLink switch, or servers'
                                   NICs on one network switch */
  FABRIC_RACK,                  /* trays of GPUs on NVSwitch chips, as in a
                                   GB200 NVL72 */
  FABRIC_FAMILIES,              /* as a request: any of them */
} FabricFamily;

/* What each link type of a case is for. */
enum {
  FABRIC_NV,                    /* NVLink: GPU to GPU or to a chip */
  FABRIC_NET,                   /* the network: NIC to switch, switches */
  FABRIC_PCIE,                  /* GPU to NIC */
  FABRIC_ROLES,
};

/* A link type a case uses: a preset's (scenarios/presets/links.yaml) or
 * one the case defines with random figures. */
typedef struct {
  char name[24];                /* empty: the role is unused */
  gboolean preset;
  /* the case's own types only: */
  const char *port;             /* port class: nvlink, ib, eth, pcie */
  double bandwidth;             /* GB/s per lane, one way, on the wire */
  double nccl;                  /* GB/s per lane NCCL moves; 0: none given */
  uint32_t latency;             /* ns */
  uint32_t payload, header;     /* bytes per packet */
  uint32_t cost;                /* routing metric */
} FabricLink;

/* One random scenario's parameters; fabric_case_yaml() writes it out. */
typedef struct {
  FabricFamily family;
  uint64_t seed;
  FabricLink link[FABRIC_ROLES];
  /* The GPUs: in servers (fat-tree, rail, star of NICs), trays (rack), or
   * alone (torus, mesh, star of GPUs). */
  uint32_t servers;             /* servers or trays; 0: GPUs alone */
  uint32_t gpus;                /* per server or tray, or in all */
  uint32_t chips;               /* NVSwitch chips per server (0: NVLink
                                   between every pair of its GPUs), or the
                                   rack's */
  uint32_t lanes;               /* NVLink lanes of each GPU's links */
  const char *gpu_preset;       /* h100 or b200, or NULL: a GPU of the
                                   case's own */
  double reduce;                /* GB/s: own GPUs' reduction rate */
  double chip_reduce;           /* GB/s: chips' in-switch reduction, 0:
                                   none */
  gboolean grace;               /* rack: the preset GB200 tray (Grace
                                   CPUs, NVLink-C2C, NICs) */
  /* The network (fat-tree, rail, star of NICs). */
  uint32_t levels;              /* 2 or 3 */
  uint32_t down, up;            /* oversubscription down:up */
  uint32_t radix;               /* the network switches' ports */
  gboolean planes;              /* rail: a tree per rail */
  /* The fabric of GPUs alone. */
  uint32_t dims[3], n_dims;     /* torus */
  gboolean nic_star;            /* star: of the servers' NICs */
} FabricCase;

/* Draw the case of @seed in @family (FABRIC_FAMILIES: any).  Sizes stay
 * small enough for a test to run hundreds of them; some cases are meant
 * to be refused (a tree too large for its switches' radix). */
void fabric_case_draw (FabricCase *c, uint64_t seed, FabricFamily family);

/* The scenario text of @c (which includes the presets by absolute path),
 * and a one-line summary of it for messages.  The caller frees both. */
char *fabric_case_yaml (const FabricCase *c);
char *fabric_case_describe (const FabricCase *c);

/* Write @c's text to a temporary file, load it with @sets (KEY=VALUE
 * overrides, NULL-terminated, or NULL) as weft_scenario_load_with() does,
 * and remove the file.  NULL with @error if the loader refuses it. */
WeftScenario *fabric_case_load (const FabricCase *c, const char *const *sets,
                                GError **error);

/* Make the tree of fat-tree or rail case @c oversubscribed @down:@up while
 * each leaf keeps @leaf_down endpoints: the switches' radix is the largest
 * for which the generator gives a leaf that many down ports, so that a
 * higher ratio leaves the endpoints where they were and takes uplinks
 * away.  FALSE if no radix does. */
gboolean fabric_case_oversubscribe (FabricCase *c, uint32_t leaf_down,
                                    uint32_t down, uint32_t up);

/* The GPUs of @topo in the order they were declared (server by server). */
GArray *fabric_gpus (const WeftTopology *topo);

/* What one collective run of a property is. */
typedef struct {
  WeftOp op;
  WeftAlgorithm alg;
  WeftProtocolKind protocol;
  uint64_t size;                /* bytes, nccl-tests' size */
  uint32_t chunks;              /* 0: the default */
  uint32_t channels;            /* 0: the default */
  WeftFidelity fidelity;
} FabricRun;

/* Pick at random among @ops (@n_ops of them) an operation and an
 * algorithm that can run it over every GPU of @topo with @protocol, into
 * @run (op and alg); FALSE if none fits. */
gboolean fabric_pick (WeftRng *rng, const WeftTopology *topo,
                      const WeftOp *ops, guint n_ops,
                      WeftProtocolKind protocol, FabricRun *run);

/* Run @run over every GPU of @topo; FALSE with @error if it cannot run
 * there.  The result's statistics are freed unless @bins is above 0 (ps,
 * then the caller frees them). */
gboolean fabric_run (const WeftTopology *topo, const FabricRun *run,
                     WeftTime bins, WeftCollectiveResult *result,
                     GError **error);

/* "all_reduce by ring, Simple, 4 MiB, flow" for messages. */
char *fabric_run_describe (const FabricRun *run);

/* nccl-tests' bus bandwidth of @result over @n ranks, B/s. */
double fabric_busbw (const FabricRun *run, uint32_t n,
                     const WeftCollectiveResult *result);

G_END_DECLS
