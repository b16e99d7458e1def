/* Monotonic properties stated for every run, which no model that shares
 * links fairly between dependent transfers can meet (Graham's timing
 * anomaly, test_faster_link_can_be_slower): kept to measure how often and
 * by how much generated fabrics meet the anomaly.  Built only with
 * WEFT_PENDING_PROPERTIES defined (cmake -DWEFT_PENDING_PROPERTIES=ON),
 * when the suite and weft-bench properties run them beside the others. */
#include "fabric_props-private.h"

#ifdef WEFT_PENDING_PROPERTIES

/* ---- the monotonic properties where transfers share links ---- */

/* fabric_bandwidth() at flow fidelity: where pieces in flight share links
 * (a GPU's LL send engine among them) fairly, a faster link can change
 * which of them meet and end a run later. */
FabricVerdict
fabric_check_bandwidth_shared (uint64_t seed, GString *why)
{
  return fabric_bandwidth (seed, WEFT_FIDELITY_FLOW, why);
}

/* fabric_oversubscription() over two and three levels and every
 * operation, on complete trees: schedules of dependent steps meet the
 * sharing above. */
FabricVerdict
fabric_check_oversubscription_shared (uint64_t seed, GString *why)
{
  return fabric_oversubscription (seed, TRUE, why);
}

#endif /* WEFT_PENDING_PROPERTIES */
