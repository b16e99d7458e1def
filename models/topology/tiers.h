/* weft: a fabric's tiers: its links by how far from the GPUs they are.
 *
 * Two chains of tiers climb from the GPUs.  The scale-up chain is the
 * NVLink domain: the links (of no network or PCIe family) between GPUs,
 * "GPU-GPU", between a GPU and a switch it reaches that way, "GPU-switch",
 * and between such switches a level higher, "switch level 2" and up.  The
 * scale-out chain is the network: the links of each NIC on its host side,
 * "GPU-NIC", then the network's links by the level of the switch they
 * climb to, counted in network hops from the endpoints (the NICs, or
 * anything not a switch with a network port): "leaf", "spine", "core",
 * then "level 4" and up.  A link between two switches of one level counts
 * in that level's tier.  Everything else (PCIe and CPU links inside a
 * server, switches no endpoint reaches) is "other".
 *
 * A tier's oversubscription is its bandwidth over that of the tier above
 * it in its chain: what its upper ends take in from below against what
 * they send on up (a leaf's down:up ratio, a NIC's host side against its
 * network port).  docs/scenario-format.md describes it for users. */
#pragma once

#include <stdio.h>

#include "topology/topology.h"

G_BEGIN_DECLS

typedef struct {
  char *name;                   /* "GPU-switch", "leaf", "level 4" */
  uint32_t links;               /* full-duplex links in it */
  double bandwidth;             /* B/s one way, all its links */
  int32_t above;                /* the tier above it in its chain, or -1 */
} WeftTier;

typedef struct {
  WeftTier *tiers;              /* in order, from the GPUs outward, the
                                   scale-up chain first, "other" last;
                                   only tiers with links */
  uint32_t n_tiers;
  uint32_t *of_link;            /* each directed link's tier */
  guint8 *up;                   /* each directed link: 1 if it leads away
                                   from the GPUs (to a higher level, or
                                   from a host into its NIC) */
} WeftTiers;

/* The tiers of the finished @topo; the caller frees them. */
WeftTiers *weft_tiers_new (const WeftTopology *topo);
void weft_tiers_free (WeftTiers *tiers);

/* Tier @t's bandwidth over that of the tier above it, or 0 if none is. */
double weft_tiers_oversubscription (const WeftTiers *tiers, uint32_t t);

/* A key that puts tiers named @name in the order weft_tiers_new() gives
 * (for reading them back from a database); unknown names after the known
 * ones but "other". */
int weft_tier_order (const char *name);

/* Whether @topo's network is a complete tree: in each of its tiers (leaf,
 * spine, ...) every node below sends up as much bandwidth as every other,
 * and every node above takes in as much from below; that is, every leaf
 * is full and every pod whole.  Destination-based routing keeps a shift's
 * flows apart only on such a tree.  If not, @why (if not NULL) gets where
 * not, for people (the caller frees it).  TRUE where no tier is uneven,
 * which holds too where there is no network, or no switch in it (hosts
 * joined directly): the caller tells whether there is a tree at all. */
gboolean weft_tiers_complete (const WeftTopology *topo,
                              const WeftTiers *tiers, char **why);

/* Print the tiers as `weft topo` shows them. */
void weft_tiers_print (FILE *out, const WeftTiers *tiers);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (WeftTiers, weft_tiers_free)

G_END_DECLS
