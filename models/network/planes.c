/* weft: planes, nodes that act as one place (network.h). */
#include "network/network-private.h"

#include <math.h>
#include <string.h>

/* @bytes over the @m planes at @pairs (node, weight) in proportion to
 * their weights, into @parts. */
static void
plane_parts (const uint32_t *pairs, uint32_t m, uint64_t bytes,
             uint64_t *parts)
{
  uint64_t total = 0, given = 0;

  g_assert (m > 0);
  for (uint32_t j = 0; j < m; j++)
    total += pairs[2 * j + 1];
  for (uint32_t j = 0; j < m; j++)
    {
      parts[j] = (uint64_t) floor ((double) bytes * pairs[2 * j + 1]
                                   / (double) total);
      given += parts[j];
    }
  /* What is left, a byte a plane: one plane given them all would hold the
   * transfer back (it moves at the pace of its fullest link). */
  for (uint32_t j = 0; given < bytes; j = (j + 1) % m)
    {
      parts[j]++;
      given++;
    }
}

/* The route of a transfer between a node and planes, kept: each link
 * carries the part of one plane, whatever the bytes. */
typedef struct {
  uint64_t key;
  uint32_t a, b;                /* the node, WEFT_NONE on the planes' side */
  uint32_t m, n_links;
  uint32_t *pairs;              /* the planes' (node, weight) pairs */
  uint32_t *links, *plane;      /* each link, and the plane it carries */
  WeftTime latency;
} PlaneRoute;

static void
plane_route_free (gpointer p)
{
  PlaneRoute *r = p;

  g_free (r->pairs);
  g_free (r->links);
  g_free (r->plane);
  g_free (r);
}

static uint64_t
plane_key (uint32_t a, uint32_t b, const uint32_t *pairs, uint32_t m)
{
  uint64_t h = (((uint64_t) a << 32) | b) * UINT64_C (0x9e3779b97f4a7c15);

  for (uint32_t i = 0; i < 2 * m; i++)
    h = (h ^ pairs[i]) * UINT64_C (0x100000001b3);
  return h;
}

static const PlaneRoute *
find_route (WeftNetwork *net, uint32_t a, uint32_t b, const uint32_t *pairs,
            uint32_t m)
{
  if (net->plane_routes == NULL)
    return NULL;
  uint64_t key = plane_key (a, b, pairs, m);
  const PlaneRoute *r = g_hash_table_lookup (net->plane_routes, &key);
  if (r == NULL || r->a != a || r->b != b || r->m != m
      || memcmp (r->pairs, pairs, 2 * m * sizeof (uint32_t)) != 0)
    return NULL;
  return r;
}

static void
keep_route (WeftNetwork *net, uint32_t a, uint32_t b, const uint32_t *pairs,
            uint32_t m, const GArray *links, const uint32_t *plane,
            WeftTime latency)
{
  PlaneRoute *r = g_new (PlaneRoute, 1);

  if (net->plane_routes == NULL)
    net->plane_routes = g_hash_table_new_full (g_int64_hash, g_int64_equal,
                                               NULL, plane_route_free);
  *r = (PlaneRoute) {
    .key = plane_key (a, b, pairs, m),
    .a = a, .b = b, .m = m, .n_links = links->len,
    .pairs = g_memdup2 (pairs, 2 * m * sizeof (uint32_t)),
    .links = g_memdup2 (links->data, links->len * sizeof (uint32_t)),
    .plane = g_memdup2 (plane, links->len * sizeof (uint32_t)),
    .latency = latency,
  };
  /* A key another route has: the first stays. */
  if (g_hash_table_contains (net->plane_routes, &r->key))
    plane_route_free (r);
  else
    g_hash_table_add (net->plane_routes, r);
}

void
weft_network_transfer_places (WeftNetwork *net, const uint32_t *places,
                              uint32_t src, uint32_t dst, uint64_t bytes,
                              double cap, WeftEventFn done, void *target,
                              void *data)
{
  if (!weft_place_is_planes (src) && !weft_place_is_planes (dst))
    {
      weft_network_transfer (net, src, dst, bytes, cap, done, target, data);
      return;
    }
  g_assert (!(weft_place_is_planes (src) && weft_place_is_planes (dst)));
  uint32_t at = (weft_place_is_planes (src) ? src : dst) & ~WEFT_PLANES;
  uint32_t m = places[at];
  const uint32_t *pairs = places + at + 1;
  uint64_t parts[m];

  plane_parts (pairs, m, bytes, parts);
  if (!net->klass->whole_stripes)
    {
      /* A fidelity that takes transfers in parts: one a plane. */
      void *join;
      WeftEventFn part = weft_network_join (net, m, done, target, data,
                                            &join);
      double whole = net->part;
      for (uint32_t j = 0; j < m; j++)
        {
          net->part = bytes ? whole * (double) parts[j] / (double) bytes
                            : whole;
          weft_network_transfer (net,
                                 weft_place_is_planes (src) ? pairs[2 * j]
                                                            : src,
                                 weft_place_is_planes (dst) ? pairs[2 * j]
                                                            : dst,
                                 parts[j], cap * net->part / whole, part,
                                 join, NULL);
        }
      net->part = whole;
      return;
    }
  if (bytes == 0)
    {
      weft_network_transfer (net, weft_place_node (places, src),
                             weft_place_node (places, dst), 0, cap, done,
                             target, data);
      return;
    }
  GArray *links = net->plane_links, *carried = net->plane_bytes;
  WeftTime latency = 0;
  uint32_t from = weft_place_node (places, src);
  uint32_t a = weft_place_is_planes (src) ? WEFT_NONE : src;
  uint32_t b = weft_place_is_planes (dst) ? WEFT_NONE : dst;
  for (uint32_t j = 0; G_UNLIKELY (net->phase > 0) && j < m; j++)
    if (parts[j] > 0
        && !weft_network_joined (net, a != WEFT_NONE ? a : pairs[2 * j],
                                 b != WEFT_NONE ? b : pairs[2 * j]))
      return;
  const PlaneRoute *kept = find_route (net, a, b, pairs, m);
  g_array_set_size (links, 0);
  g_array_set_size (carried, 0);
  if (kept != NULL)
    {
      g_array_append_vals (links, kept->links, kept->n_links);
      g_array_set_size (carried, kept->n_links);
      for (uint32_t k = 0; k < kept->n_links; k++)
        g_array_index (carried, uint64_t, k) = parts[kept->plane[k]];
      latency = kept->latency;
      /* The ids ECMP would have chosen by, one a plane routed. */
      for (uint32_t j = 0; j < m; j++)
        net->next_flow += parts[j] > 0;
    }
  else
    {
      gboolean fixed = TRUE;
      g_autofree uint32_t *plane = NULL;
      for (uint32_t j = 0; j < m; j++)
        {
          guint before = links->len;
          gboolean one;
          if (parts[j] == 0)
            {
              fixed = FALSE;
              continue;
            }
          /* Not inside MAX(), which would take the route twice. */
          WeftTime route = weft_network_gather_route (
              net, a != WEFT_NONE ? a : pairs[2 * j],
              b != WEFT_NONE ? b : pairs[2 * j], parts[j], links, carried,
              &one);
          latency = MAX (latency, route);
          /* A link two planes share carries both parts: not kept. */
          fixed = fixed && one && links->len - before > 0;
          plane = g_renew (uint32_t, plane, links->len);
          for (guint k = before; k < links->len; k++)
            plane[k] = j;
          for (guint k = 0; k < before && fixed; k++)
            fixed = g_array_index (carried, uint64_t, k)
                    == parts[plane[k]];
        }
      if (fixed && !net->plain)
        keep_route (net, a, b, pairs, m, links, plane, latency);
    }
  net->started++;
  net->asked.places = places;
  net->asked.from = src;
  net->asked.to = dst;
  weft_network_start_gathered (net, from, bytes, cap,
                               (const uint32_t *) links->data,
                               (const uint64_t *) carried->data, links->len,
                               latency, done, target, data);
}

void
weft_network_reduce_places (WeftNetwork *net, const uint32_t *places,
                            uint32_t place, uint64_t bytes, WeftEventFn done,
                            void *target, void *data)
{
  if (!weft_place_is_planes (place))
    {
      weft_network_switch_reduce (net, place, bytes, done, target, data);
      return;
    }
  uint32_t at = place & ~WEFT_PLANES, m = places[at];
  const uint32_t *pairs = places + at + 1;
  uint64_t parts[m];
  WeftTime now = weft_sim_now (net->sim), end = now;

  plane_parts (pairs, m, bytes, parts);
  for (uint32_t j = 0; j < m; j++)
    {
      uint32_t node = pairs[2 * j];
      const WeftNode *n = &net->topo->nodes[node];
      g_assert (n->kind == WEFT_NODE_SWITCH && n->device->reduce_bandwidth > 0);
      if (parts[j] == 0)
        continue;
      WeftTime start = MAX (now, net->reduce_free_at[node]);
      net->reduce_free_at[node]
          = start + (WeftTime) ceil ((double) parts[j] * 1e12
                                     / n->device->reduce_bandwidth);
      end = MAX (end, net->reduce_free_at[node]);
    }
  weft_sim_schedule_at (net->sim, end, done, target, data);
}
