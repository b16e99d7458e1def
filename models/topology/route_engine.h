/* weft: routing engines: how a fabric's switches choose among equal-cost
 * next hops.  Routing (routing.h) finds the equal-cost next hops at each
 * switch on the way; the engine of the fabric that made the switch picks
 * one.  Each engine is a row in one table (route_engine.c):
 *
 *   dmodk     by the destination's index, digit by digit (OpenSM's fat-tree
 *             routing): the same for every flow to a destination;
 *   ecmp      by a hash of (source, destination, flow): per flow;
 *   adaptive  the least-loaded next hop as the flow starts (transfers in
 *             flight per link, which the network keeps), ties to dmodk's.
 *
 * docs/network-models.md describes them. */
#pragma once

#include "topology/topology.h"

G_BEGIN_DECLS

typedef enum {
  WEFT_ROUTE_DMODK,             /* the default: 0 in a WeftNode's routing */
  WEFT_ROUTE_ECMP,
  WEFT_ROUTE_ADAPTIVE,
  WEFT_ROUTE_ENGINE_COUNT,
} WeftRouteEngine;

/* One choice among @n equal-cost next hops at a switch. */
typedef struct {
  const WeftTopology *topo;
  uint32_t n;                   /* equal-cost next hops, at least 1 */
  const uint32_t *links;        /* each one's directed link, or WEFT_NONE
                                   for a way through a server that forwards */
  uint64_t dest;                /* the destination's index among the ways
                                   into the fabric, numbered switch by
                                   switch and port by port */
  uint64_t stride;              /* the product of the choices before this
                                   one on the way (dmodk's digit) */
  uint64_t hash;                /* of (source, destination, flow, hop) */
  const uint32_t *load;         /* transfers in flight per directed link,
                                   or NULL: an idle network */
} WeftRouteChoice;

typedef struct {
  const char *name;
  const char *help;             /* one line for the docs and messages */
  gboolean by_flow;             /* two flows of one pair may be routed
                                   apart: its routes are not remembered */
  uint32_t (*pick) (const WeftRouteChoice *choice);  /* 0 .. n - 1 */
} WeftRouteEngineClass;

/* The row of @engine.  Static. */
const WeftRouteEngineClass *weft_route_engine_class (WeftRouteEngine engine);

/* The engine named @name; FALSE if none is. */
gboolean weft_route_engine_parse (const char *name, WeftRouteEngine *engine);

/* "dmodk, ecmp, adaptive": the valid names, for messages.  Static. */
const char *weft_route_engine_names (void);

G_END_DECLS
