/* weft: what the network's own files share beyond network.h. */
#pragma once

#include "network/network.h"

G_BEGIN_DECLS

/* Append the route of @bytes from @src to @dst, as weft_network_transfer()
 * would take it (striped over equal-cost first hops, each stripe its
 * share), to @links (uint32_t) and @carried (uint64_t, the bytes each of
 * them carries), a link already there gaining the bytes; returns the
 * route's latency (its slowest stripe's).  Takes flow ids as a transfer
 * would.  *@fixed says whether the route is one part, the same for any
 * flow id, so that another transfer between the two may take it again. */
WeftTime weft_network_gather_route (WeftNetwork *net, uint32_t src,
                                    uint32_t dst, uint64_t bytes,
                                    GArray *links, GArray *carried,
                                    gboolean *fixed);

/* Start one transfer of @bytes from node @src over the @n links @links,
 * each carrying @carried of it, arriving @latency after its last byte
 * leaves (a fidelity that takes whole stripes only). */
void weft_network_start_gathered (WeftNetwork *net, uint32_t src,
                                  uint64_t bytes, double cap,
                                  const uint32_t *links,
                                  const uint64_t *carried, uint32_t n,
                                  WeftTime latency, WeftEventFn done,
                                  void *target, void *data);

/* Run done(sim, target, data) once @parts calls of the event function this
 * returns (with the target it sets) have run: a transfer in parts.  Kept
 * by the network until then, so that a run stopped early frees it. */
WeftEventFn weft_network_join (WeftNetwork *net, uint32_t parts,
                               WeftEventFn done, void *target, void *data,
                               void **join_target);

G_END_DECLS
