/* What the property files share (fabric_props.c, the properties the suite
 * runs by default, and fabric_pending.c, those that wait for changes in
 * progress): drawing runs, timing them, and properties checked on more
 * than one footing. */
#pragma once

#include "fabric_gen.h"
#include "fabric_props.h"

G_BEGIN_DECLS

/* Say that a property failed on @c: @format, then the case in a line and
 * its scenario text, so that it can be run again by hand.  Returns
 * FABRIC_FAIL. */
FabricVerdict fabric_fail (GString *why, const FabricCase *c,
                           const char *format, ...) G_GNUC_PRINTF (3, 4);

/* A figure uniform in [lo, hi] to @step. */
double fabric_figure (WeftRng *rng, double lo, double hi, double step);

/* A buffer size between 2^@lo and 2^@hi bytes, now and then not a power
 * of two, so that pieces split unevenly. */
uint64_t fabric_draw_size (WeftRng *rng, int lo, int hi);

/* One of NCCL's protocols, at random. */
WeftProtocolKind fabric_draw_protocol (WeftRng *rng);

/* Run @run on @topo, which must run it: its time, or 0 once @why says
 * why it did not run. */
WeftTime fabric_time_of (const WeftTopology *topo, const FabricRun *run,
                         const FabricCase *c, GString *why);

/* More bandwidth on one link type (its rate on the wire and NCCL's model
 * of it, by 1.25 to 4) never makes a run of the case of @seed slower, at
 * @fidelity, with any of NCCL's protocols or raw. */
FabricVerdict fabric_bandwidth (uint64_t seed, WeftFidelity fidelity,
                                GString *why);

/* More oversubscription of a fat-tree or rail case of @seed, each leaf
 * keeping its endpoints, never makes a run faster: with @any, of two or
 * three levels and any operation, where both trees are complete
 * (weft_tiers_complete()); else of two levels and an all_to_all by
 * direct sends. */
FabricVerdict fabric_oversubscription (uint64_t seed, gboolean any,
                                       GString *why);

/* A transfer of a permutation, and when it ended. */
typedef struct {
  uint32_t src, dst;
  uint64_t bytes;
  WeftTime done;
} FabricMove;

/* Run the @n @moves at once at @fidelity over @topo (each source sends
 * one), filling in their ends; with @apart, FALSE (and not run) if two of
 * them, or two stripes of one, share a link. */
gboolean fabric_run_moves (const WeftTopology *topo, WeftFidelity fidelity,
                           FabricMove *moves, guint n, gboolean apart);

/* The fidelities in the order the checks time them. */
extern const WeftFidelity fabric_fidelities[3];

/* Whether the times @t of the three fidelities lie within 3%. */
gboolean fabric_agree (const WeftTime *t);

#ifdef WEFT_PENDING_PROPERTIES
/* The properties that wait (fabric_pending.c). */
FabricVerdict fabric_check_bandwidth_shared (uint64_t seed, GString *why);
FabricVerdict fabric_check_oversubscription_shared (uint64_t seed,
                                                    GString *why);
#endif

/* Properties of complete trees (fabric_trees.c). */
FabricVerdict fabric_check_hierarchical (uint64_t seed, GString *why);
FabricVerdict fabric_check_uplinks (uint64_t seed, GString *why);

G_END_DECLS
