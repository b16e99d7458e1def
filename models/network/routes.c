/* weft: whole transfers' routes, remembered (network-private.h). */
#include "network/network-private.h"

#include "rng.h"

#include <string.h>

/* Routes start in 1,024 slots and double while half of them are filled
 * or a route's set is, up to 32 a GPU: a network built to try one
 * collective on a few GPUs asks for few. */
static void
routes_alloc (WeftNetwork *net, uint32_t n)
{
  net->n_routes = n;
  net->routes_filled = 0;
  net->routes = g_new (Route, n);
  net->route_keys = g_aligned_alloc0 (n, sizeof (uint64_t), 64);
}

void
weft_routes_free (WeftNetwork *net)
{
  g_clear_pointer (&net->routes, g_free);
  g_clear_pointer (&net->route_keys, g_aligned_free);
  g_clear_pointer (&net->route_pool, g_free);
  g_clear_pointer (&net->unlearnt, g_hash_table_unref);
  net->pool_used = net->pool_cap = net->pool_dead = 0;
}

void
weft_routes_init (WeftNetwork *net)
{
  uint32_t gpus = 0;

  weft_routes_free (net);
  if (!net->klass->whole_stripes || net->plain)
    return;
  for (uint32_t n = 0; n < net->topo->n_nodes; n++)
    gpus += net->topo->nodes[n].kind == WEFT_NODE_GPU;
  net->routes_max = 4096;
  while (net->routes_max < (1u << 24) && net->routes_max < 32 * (uint64_t) gpus)
    net->routes_max *= 2;
  routes_alloc (net, 1024);
}

/* The first slot of the set of @key. */
static inline uint32_t
route_set (const WeftNetwork *net, uint64_t key)
{
  return (uint32_t) weft_mix64 (key) & (net->n_routes - ROUTE_WAYS);
}

Route *
weft_route_find (WeftNetwork *net, uint32_t src, uint32_t dst)
{
  uint64_t key = route_key (src, dst);
  uint32_t set = route_set (net, key);
  const uint64_t *keys = net->route_keys + set;

  for (uint32_t i = 0; i < ROUTE_WAYS; i++)
    if (keys[i] == key)
      {
        Route *r = &net->routes[set + i];
        r->used = ++net->route_clock;
        return r;
      }
  return NULL;
}

/* A slot for @key: an empty one of its set, or the least recently used
 * (its route's words in the pool are then dead). */
static uint32_t
route_free_slot (WeftNetwork *net, uint64_t key)
{
  uint32_t set = route_set (net, key), best = set;

  for (uint32_t i = set; i < set + ROUTE_WAYS; i++)
    {
      if (net->route_keys[i] == 0)
        {
          net->routes_filled++;
          return i;
        }
      if (net->routes[i].used < net->routes[best].used)
        best = i;
    }
  net->pool_dead += route_words (net->routes[best].n_hops,
                                 net->routes[best].n_links);
  return best;
}

/* Copy the live routes' words into a new pool with room for @more. */
static void
pool_compact (WeftNetwork *net, uint64_t more)
{
  uint64_t live = net->pool_used - net->pool_dead;
  uint64_t cap = MAX (2 * (live + more), 4096);
  g_assert (cap < G_MAXUINT32);
  uint32_t *pool = g_new (uint32_t, cap), used = 0;

  for (uint32_t i = 0; i < net->n_routes; i++)
    if (net->route_keys[i] != 0)
      {
        Route *r = &net->routes[i];
        uint32_t words = route_words (r->n_hops, r->n_links);
        memcpy (pool + used, net->route_pool + r->body,
                words * sizeof (uint32_t));
        r->body = used;
        used += words;
      }
  g_free (net->route_pool);
  net->route_pool = pool;
  net->pool_used = used;
  net->pool_cap = (uint32_t) cap;
  net->pool_dead = 0;
}

/* What @n @links cross: WEFT_CROSSES_* bits. */
static uint32_t
links_cross (const WeftNetwork *net, const uint32_t *links, uint32_t n)
{
  uint32_t crosses = 0;

  for (uint32_t i = 0; i < n; i++)
    {
      const WeftLink *l = &net->topo->links[links[i]];
      const WeftLinkType *t = g_ptr_array_index (net->topo->link_types,
                                                 l->type);
      if (t->family == WEFT_FAMILY_PCIE || t->family == WEFT_FAMILY_OTHER)
        crosses |= WEFT_CROSSES_PCIE;
      else if (t->family == WEFT_FAMILY_NETWORK)
        crosses |= WEFT_CROSSES_NETWORK;
    }
  return crosses;
}

/* What flow 0's route from @src to @dst crosses (in net->scratch). */
static uint32_t
path_crosses (WeftNetwork *net, uint32_t src, uint32_t dst)
{
  weft_routing_path (net->routing, src, dst, 0, net->scratch);
  return links_cross (net, (const uint32_t *) net->scratch->data,
                      net->scratch->len);
}

/* What flow 0's route from @src to @dst crosses, of a route of @n_hops
 * first hops over @links: a route in one part (remembered only where the
 * routing takes no flow into account) is flow 0's own, and is not made
 * again; of stripes, flow 0 takes one. */
static uint32_t
route_crosses (WeftNetwork *net, uint32_t src, uint32_t dst,
               const uint32_t *links, uint32_t n_links, uint32_t n_hops)
{
  return n_hops <= 1 ? links_cross (net, links, n_links)
                     : path_crosses (net, src, dst);
}

uint32_t
weft_network_crosses (WeftNetwork *net, uint32_t src, uint32_t dst)
{
  /* A fault may have left no route: the send that asks fails as it
   * starts (weft_network_joined()). */
  if (G_UNLIKELY (net->phase > 0)
      && weft_routing_cost (net->routing, src, dst) == WEFT_ROUTE_UNREACHABLE)
    return WEFT_CROSSES_NETWORK;
  if (net->routes)
    {
      /* The send that asks is about to take the route: it is made once,
       * for both. */
      const Route *r = weft_route_find (net, src, dst);
      if (r == NULL && weft_route_learn (net, src, dst))
        r = weft_route_find (net, src, dst);
      if (r != NULL)
        return r->crosses;
    }
  return path_crosses (net, src, dst);
}

/* Remember the route from @src to @dst: @n_links @links, leaving by the
 * @n_hops first hops @hops (0 or 1: one part), @stripes saying which
 * stripes cross each link (NULL for one part, which crosses them all). */
void
weft_route_remember (WeftNetwork *net, uint32_t src, uint32_t dst,
                const uint32_t *links, uint32_t n_links, const uint32_t *hops,
                uint32_t n_hops, const uint32_t *stripes, WeftTime latency)
{
  uint64_t key = route_key (src, dst);
  if (net->n_routes < net->routes_max
      && (net->routes_filled >= net->n_routes / 2
          || net->route_keys[route_set (net, key) + ROUTE_WAYS - 1] != 0))
    {
      /* Twice the slots, the routes held put again (sets fill in order). */
      Route *old = net->routes;
      uint64_t *old_keys = net->route_keys;
      uint32_t n = net->n_routes;
      routes_alloc (net, n * 2);
      for (uint32_t i = 0; i < n; i++)
        if (old_keys[i] != 0)
          {
            uint32_t slot = route_free_slot (net, old_keys[i]);
            net->route_keys[slot] = old_keys[i];
            net->routes[slot] = old[i];
          }
      g_free (old);
      g_aligned_free (old_keys);
    }
  uint32_t words = route_words (n_hops, n_links);
  if (net->pool_used + words > net->pool_cap)
    pool_compact (net, words);
  uint32_t slot = route_free_slot (net, key);
  Route *r = &net->routes[slot];
  net->route_keys[slot] = key;
  *r = (Route) { .latency = latency, .used = ++net->route_clock,
                 .body = net->pool_used,
                 .n_links = (uint8_t) n_links, .n_hops = (uint8_t) n_hops,
                 .crosses = (uint8_t) route_crosses (net, src, dst, links,
                                                     n_links, n_hops) };
  uint32_t *body = net->route_pool + net->pool_used;
  net->pool_used += words;
  memcpy (body, hops, n_hops * sizeof (uint32_t));
  memcpy (body + n_hops, links, n_links * sizeof (uint32_t));
  if (n_hops > 1)
    {
      memcpy (body + n_hops + n_links, stripes, n_links * sizeof (uint32_t));
      memset (route_memo (net, r), 0, sizeof (uint64_t));
    }
}


void
weft_network_prefetch (WeftNetwork *net, uint32_t src, uint32_t dst,
                       int stage)
{
  if (net->routes == NULL || src == dst || !net->deep)
    return;
  uint64_t key = route_key (src, dst);
  uint32_t set = route_set (net, key);
  if (stage == 0)
    {
      __builtin_prefetch (net->route_keys + set);
      return;
    }
  for (uint32_t i = 0; i < ROUTE_WAYS; i++)
    if (net->route_keys[set + i] == key)
      {
        const Route *r = &net->routes[set + i];
        if (stage == 1)
          __builtin_prefetch (r);
        else if (stage == 2)
          __builtin_prefetch (route_links (net, r));
        else if (net->klass->prefetch)
          net->klass->prefetch (net, route_links (net, r), r->n_links);
        return;
      }
}
