/* weft: routing engines, one row each.  See route_engine.h. */
#include "topology/route_engine.h"

#include <string.h>

/* D-mod-k: the destination's index, read as digits whose bases are the
 * numbers of choices on the way (the first choice takes dest mod n1, the
 * next (dest / n1) mod n2, ...).  The endpoints of a leaf differ in their
 * lowest digits, so a leaf's traffic to the endpoints of another leaf
 * climbs by distinct up-links: on a non-blocking tree a permutation meets
 * no other flow, and every flow to one destination takes the same way
 * down, as OpenSM's fat-tree routing fills forwarding tables. */
static uint32_t
pick_dmodk (const WeftRouteChoice *c)
{
  return (uint32_t) (c->dest / c->stride % c->n);
}

/* A hash of (source, destination, flow): each flow on a way of its own,
 * the same way every time it is asked, spread evenly over many flows but
 * colliding by chance among few. */
static uint32_t
pick_ecmp (const WeftRouteChoice *c)
{
  return (uint32_t) (c->hash % c->n);
}

/* The next hop with the fewest transfers in flight for its bandwidth, as
 * the flow starts (InfiniBand's adaptive routing, Spectrum-X): the count
 * is what the network knows when the transfer starts, so the choice is
 * the same for the same scenario and seed.  Ties go to the first from
 * D-mod-k's pick on, so an idle fabric routes as dmodk does. */
static uint32_t
pick_adaptive (const WeftRouteChoice *c)
{
  uint32_t start = pick_dmodk (c), best = start;

  if (c->load == NULL)
    return start;
  for (uint32_t k = 1; k < c->n; k++)
    {
      uint32_t i = (start + k) % c->n;
      uint32_t a = c->links[i], b = c->links[best];
      double load_a = a == WEFT_NONE ? 0 : c->load[a];
      double load_b = b == WEFT_NONE ? 0 : c->load[b];
      double bw_a = a == WEFT_NONE ? 1 : c->topo->links[a].bandwidth;
      double bw_b = b == WEFT_NONE ? 1 : c->topo->links[b].bandwidth;
      if (load_a * bw_b < load_b * bw_a)
        best = i;
    }
  return best;
}

static const WeftRouteEngineClass engines[WEFT_ROUTE_ENGINE_COUNT] = {
  [WEFT_ROUTE_DMODK] = { "dmodk", "by the destination's index, digit by "
                         "digit (OpenSM's fat-tree routing)", FALSE,
                         pick_dmodk },
  [WEFT_ROUTE_ECMP] = { "ecmp", "by a hash of source, destination and flow",
                        TRUE, pick_ecmp },
  [WEFT_ROUTE_ADAPTIVE] = { "adaptive", "the least-loaded next hop as each "
                            "flow starts", TRUE, pick_adaptive },
};

const WeftRouteEngineClass *
weft_route_engine_class (WeftRouteEngine engine)
{
  g_assert (engine < WEFT_ROUTE_ENGINE_COUNT);
  return &engines[engine];
}

gboolean
weft_route_engine_parse (const char *name, WeftRouteEngine *engine)
{
  for (int e = 0; e < WEFT_ROUTE_ENGINE_COUNT; e++)
    if (strcmp (name, engines[e].name) == 0)
      {
        *engine = (WeftRouteEngine) e;
        return TRUE;
      }
  return FALSE;
}

const char *
weft_route_engine_names (void)
{
  static gsize done;
  static char *names;

  if (g_once_init_enter (&done))
    {
      GString *s = g_string_new (NULL);
      for (int e = 0; e < WEFT_ROUTE_ENGINE_COUNT; e++)
        g_string_append_printf (s, "%s%s", e ? ", " : "", engines[e].name);
      names = g_string_free (s, FALSE);
      g_once_init_leave (&done, 1);
    }
  return names;
}
