/* weft: routing.
 *
 * Routes are least-cost paths (the sum of the links' `cost` metrics), with
 * every equal-cost next hop kept.  Between servers a route leaves the
 * source's server by the source's own NIC and enters the destination's by
 * the destination's own (the nearest gateway of each, one a GPU by place,
 * as NCCL picks NICs), crossing NVLink to another GPU's NIC only when the
 * own NICs have no route between them; least cost within that.  In the
 * fabric each switch's routing engine (route_engine.h: dmodk, ecmp or
 * adaptive, the `routing` of its fabric) picks among equal-cost next hops;
 * inside a server a deterministic hash of (source, destination, flow id)
 * picks.
 *
 * State does not grow as GPUs squared.  A server (a zone: one top-level
 * template instance) has one table of in-server costs shared by every
 * instance of its template; the fabric between servers (the root nodes) has
 * per-destination cost arrays, computed when first needed and kept, for the
 * few fabric nodes where routes enter servers (leaf switches).  A route may
 * cross its source's and destination's servers (NVLink to the NIC that is
 * best placed) but never a third server, unless servers are joined to each
 * other directly (no switch between them), when they must forward.
 */
#pragma once

#include "topology/topology.h"

G_BEGIN_DECLS

#define WEFT_ROUTE_UNREACHABLE UINT64_MAX

typedef struct _WeftRouting WeftRouting;

/* Prepare routing over the finished @topo, which must outlive it. */
WeftRouting *weft_routing_new (const WeftTopology *topo);
void weft_routing_free (WeftRouting *routing);

/* The cost of the route from @src to @dst (0 when equal): the least cost
 * of the routes that keep to the own NICs as weft_routing_path() does, or
 * WEFT_ROUTE_UNREACHABLE. */
uint64_t weft_routing_cost (WeftRouting *routing, uint32_t src, uint32_t dst);

/* Replace the contents of @links (uint32_t) with the directed links of the
 * route of flow @flow from @src to @dst.  Between servers it leaves by the
 * source's own NIC and enters by the destination's when they have a route
 * (GPU i of a DGX H100 by NIC i); among equal-cost choices in a server the
 * flow id picks one, the same one every time, and in the fabric each
 * switch's routing engine picks.  FALSE if @dst is unreachable. */
gboolean weft_routing_path (WeftRouting *routing, uint32_t src, uint32_t dst,
                            uint64_t flow, GArray *links);

/* The same from @src on behalf of @origin, a node on the way to @src (its
 * first hop): @origin's place in its server chooses the way out of it. */
gboolean weft_routing_path_for (WeftRouting *routing, uint32_t origin,
                                uint32_t src, uint32_t dst, uint64_t flow,
                                GArray *links);

/* Replace the contents of @links with the links leaving @src that start a
 * least-cost route to @dst: the equal-cost first hops (NVLink to each of a
 * server's NVSwitch chips, say).  Empty when src == dst or unreachable. */
void weft_routing_first_hops (WeftRouting *routing, uint32_t src,
                              uint32_t dst, GArray *links);

/* Whether the last route weft_routing_path() or weft_routing_path_for()
 * gave was chosen without the flow id or the links' load: the same for
 * every flow. */
gboolean weft_routing_flow_free (const WeftRouting *routing);

/* Whether to remember recent routes (on by default).  A remembered route
 * is one no flow id took part in choosing, so the routes are the same
 * either way; off is for tests that check exactly that. */
void weft_routing_set_memo (WeftRouting *routing, gboolean enabled);

/* Whether a switch of the topology routes adaptively: by the load the
 * network gives with weft_routing_set_load(). */
gboolean weft_routing_uses_load (const WeftRouting *routing);

/* Let the adaptive engine read @load, the transfers in flight on each
 * directed link, which the caller keeps up to date and owns (NULL: an idle
 * network, as after a run). */
void weft_routing_set_load (WeftRouting *routing, const uint32_t *load);

/* Bytes held by cached per-destination arrays, in-server tables and
 * remembered routes. */
size_t weft_routing_memory (const WeftRouting *routing);

/* Bytes routing over @topo may come to hold, at most: its remembered
 * routes and the fabric's cost arrays, each array one a fabric node, as
 * many as the budget for them keeps, beside the servers' tables. */
size_t weft_routing_bytes_bound (const WeftTopology *topo);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (WeftRouting, weft_routing_free)

G_END_DECLS
