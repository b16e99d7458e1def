/* weft: routing.  See routing.h for the scheme. */
#include "topology/routing.h"
#include "topology/route_engine.h"
#include "topology/route_memo.h"

#include <stdlib.h>
#include <string.h>

#include "rng.h"

#define INF UINT32_MAX
#define CACHE_BUDGET ((size_t) 2 << 30)         /* bytes of cost arrays */

typedef struct {
  uint32_t to;                  /* core index */
  uint32_t cost;
  uint32_t link;                /* directed link, or WEFT_NONE: a transit
                                   through a forwarding server */
} CoreEdge;

/* A way out of (or into) a server toward the core: core node @core reached
 * at @cost, through gateway @gateway and, for gateways outside the core, the
 * link @link between them. */
typedef struct {
  uint32_t core;
  uint32_t cost;
  uint32_t gateway;             /* node id, or WEFT_NONE for a core source */
  uint32_t link;                /* gateway -> core, or WEFT_NONE */
} Port;

/* A way out of a zone by gateway @gateway, and the least cost from the
 * gateway on to a destination that way. */
typedef struct {
  uint32_t gateway;
  uint32_t link;                /* the gateway's link out of the zone, or
                                   WEFT_NONE: the gateway is a core node */
  uint64_t cost;
} Tail;

typedef struct {
  uint32_t *cost;               /* n * n, in-server costs */
  uint32_t n;
} Table;

struct _WeftRouting {
  const WeftTopology *topo;

  Table *tables;                /* per template; custom zones get their own */
  uint32_t n_tables;
  uint32_t *zone_table;         /* zone -> table index */

  uint32_t *gw_start;           /* zone z's gateways: gw[gw_start[z]..] */
  uint32_t *gw;
  gboolean *forwarding;         /* per zone */

  uint32_t *core_of;            /* node -> core index, or WEFT_NONE */
  uint32_t *core_node;          /* core index -> node */
  uint32_t n_core;
  uint32_t *core_start;
  CoreEdge *core_edges;

  uint32_t *entry_of;           /* link from outside the core into it ->
                                   the destination digits of fabric routes */
  uint32_t n_entries;
  uint32_t *affinity;           /* node -> its place among the nodes of its
                                   kind in its zone (GPU 0, 1, ... of a
                                   server), or WEFT_NONE outside zones */
  uint32_t *own;                /* node -> its own way out of its server
                                   (build_own()), or WEFT_NONE: any */
  const uint32_t *load;         /* transfers in flight per directed link
                                   (the network's), or NULL */
  gboolean uses_load;           /* some switch routes adaptively */
  GArray *cand_edges, *cand_links;  /* scratch of walk_core() */
  uint32_t **to_core;           /* core index -> costs[n_core] from every
                                   core node to it, or NULL until needed */
  size_t cached_bytes;
  GArray *outs, *ins, *at;      /* scratch of choose() */
  GArray *tails;                /* scratch of weft_routing_first_hops() */
  uint32_t outs_node, ins_node; /* whose ports outs and ins hold */
  WeftRouteMemo *memo;          /* or NULL: remember nothing */
  gboolean by_flow;             /* the route being made took a flow's hash */
  size_t table_bytes;
};

static inline uint32_t
zone_of (const WeftRouting *r, uint32_t node)
{
  return r->topo->nodes[node].zone;
}

static inline uint32_t
local_cost (const WeftRouting *r, uint32_t zone, uint32_t a, uint32_t b)
{
  const Table *t = &r->tables[r->zone_table[zone]];
  uint32_t base = r->topo->zones[zone].first_node;

  return t->cost[(size_t) (a - base) * t->n + (b - base)];
}

/* ---- a binary heap of (cost, index) for Dijkstra ---- */

typedef struct {
  uint64_t *items;              /* cost << 32 | index */
  size_t n, cap;
} Heap;

static void
heap_push (Heap *h, uint32_t cost, uint32_t index)
{
  if (h->n == h->cap)
    {
      h->cap = h->cap ? h->cap * 2 : 64;
      h->items = g_renew (uint64_t, h->items, h->cap);
    }
  uint64_t item = (uint64_t) cost << 32 | index;
  size_t i = h->n++;
  while (i > 0 && h->items[(i - 1) / 2] > item)
    {
      h->items[i] = h->items[(i - 1) / 2];
      i = (i - 1) / 2;
    }
  h->items[i] = item;
}

static uint64_t
heap_pop (Heap *h)
{
  uint64_t top = h->items[0], last = h->items[--h->n];
  size_t i = 0;

  for (;;)
    {
      size_t c = 2 * i + 1;
      if (c >= h->n)
        break;
      if (c + 1 < h->n && h->items[c + 1] < h->items[c])
        c++;
      if (h->items[c] >= last)
        break;
      h->items[i] = h->items[c];
      i = c;
    }
  if (h->n > 0)
    h->items[i] = last;
  return top;
}

/* ---- in-server tables ---- */

static void
build_table (WeftRouting *r, uint32_t zone, Table *t)
{
  const WeftTopology *topo = r->topo;
  uint32_t base = topo->zones[zone].first_node, n = topo->zones[zone].n_nodes;
  Heap heap = { 0 };

  t->n = n;
  t->cost = g_new (uint32_t, (size_t) n * n);
  memset (t->cost, 0xff, (size_t) n * n * sizeof (uint32_t));
  for (uint32_t s = 0; s < n; s++)
    {
      uint32_t *cost = &t->cost[(size_t) s * n];
      cost[s] = 0;
      heap_push (&heap, 0, s);
      while (heap.n > 0)
        {
          uint64_t item = heap_pop (&heap);
          uint32_t c = (uint32_t) (item >> 32), x = (uint32_t) item;
          if (c > cost[x])
            continue;
          for (uint32_t i = topo->out_start[base + x];
               i < topo->out_start[base + x + 1]; i++)
            {
              const WeftLink *l = &topo->links[topo->out_links[i]];
              if (topo->nodes[l->dst].zone != zone)
                continue;
              uint32_t y = l->dst - base;
              if (c + l->cost < cost[y])
                {
                  cost[y] = c + l->cost;
                  heap_push (&heap, cost[y], y);
                }
            }
        }
    }
  g_free (heap.items);
  r->table_bytes += (size_t) n * n * sizeof (uint32_t);
}

static void
build_tables (WeftRouting *r)
{
  const WeftTopology *topo = r->topo;
  guint n_templates = topo->zone_templates->len;
  uint32_t custom = 0;

  for (uint32_t z = 0; z < topo->n_zones; z++)
    custom += topo->zones[z].custom;
  r->tables = g_new0 (Table, n_templates + custom + 1);
  r->zone_table = g_new (uint32_t, MAX (topo->n_zones, 1));
  r->n_tables = n_templates;
  for (guint t = 0; t < n_templates; t++)
    {
      const WeftZoneTemplate *zt = g_ptr_array_index (topo->zone_templates, t);
      if (zt->first_zone != WEFT_NONE)
        build_table (r, zt->first_zone, &r->tables[t]);
    }
  for (uint32_t z = 0; z < topo->n_zones; z++)
    {
      if (topo->zones[z].custom)
        {
          r->zone_table[z] = r->n_tables;
          build_table (r, z, &r->tables[r->n_tables++]);
        }
      else
        r->zone_table[z] = topo->zones[z].template_id;
    }
}

/* ---- gateways and the core ---- */

static void
build_core (WeftRouting *r)
{
  const WeftTopology *topo = r->topo;
  uint32_t nz = topo->n_zones;

  /* Gateways: nodes of a zone with a link leaving it. */
  r->gw_start = g_new0 (uint32_t, nz + 1);
  r->forwarding = g_new0 (gboolean, MAX (nz, 1));
  g_autoptr (GArray) gw = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  for (uint32_t z = 0; z < nz; z++)
    {
      const WeftZone *zone = &topo->zones[z];
      r->gw_start[z] = gw->len;
      for (uint32_t n = zone->first_node; n < zone->first_node + zone->n_nodes;
           n++)
        {
          gboolean is_gw = FALSE;
          for (uint32_t i = topo->out_start[n]; i < topo->out_start[n + 1]; i++)
            {
              uint32_t other = topo->nodes[topo->links[topo->out_links[i]].dst]
                                   .zone;
              if (other != z)
                {
                  is_gw = TRUE;
                  if (other != WEFT_ZONE_ROOT)
                    r->forwarding[z] = TRUE;
                }
            }
          if (is_gw)
            g_array_append_val (gw, n);
        }
    }
  r->gw_start[nz] = gw->len;
  r->gw = (uint32_t *) g_array_free (g_steal_pointer (&gw), FALSE);

  /* The core: root nodes and the gateways of forwarding zones. */
  r->core_of = g_new (uint32_t, MAX (topo->n_nodes, 1));
  g_autoptr (GArray) core = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  for (uint32_t n = 0; n < topo->n_nodes; n++)
    r->core_of[n] = WEFT_NONE;
  for (uint32_t n = 0; n < topo->n_nodes; n++)
    if (topo->nodes[n].zone == WEFT_ZONE_ROOT)
      {
        r->core_of[n] = core->len;
        g_array_append_val (core, n);
      }
  for (uint32_t z = 0; z < nz; z++)
    if (r->forwarding[z])
      for (uint32_t i = r->gw_start[z]; i < r->gw_start[z + 1]; i++)
        {
          r->core_of[r->gw[i]] = core->len;
          g_array_append_val (core, r->gw[i]);
        }
  r->n_core = core->len;
  r->core_node = (uint32_t *) g_array_free (g_steal_pointer (&core), FALSE);

  /* Core edges: links between core nodes that are not inside one zone, and
   * transits between the gateways of a forwarding zone. */
  g_autoptr (GArray) edges = g_array_new (FALSE, FALSE, sizeof (CoreEdge));
  r->core_start = g_new (uint32_t, r->n_core + 1);
  for (uint32_t c = 0; c < r->n_core; c++)
    {
      uint32_t n = r->core_node[c], z = topo->nodes[n].zone;
      r->core_start[c] = edges->len;
      for (uint32_t i = topo->out_start[n]; i < topo->out_start[n + 1]; i++)
        {
          uint32_t l = topo->out_links[i];
          const WeftLink *link = &topo->links[l];
          uint32_t to = r->core_of[link->dst];
          if (to == WEFT_NONE
              || (z != WEFT_ZONE_ROOT && topo->nodes[link->dst].zone == z))
            continue;
          CoreEdge e = { to, link->cost, l };
          g_array_append_val (edges, e);
        }
      if (z != WEFT_ZONE_ROOT)
        for (uint32_t i = r->gw_start[z]; i < r->gw_start[z + 1]; i++)
          {
            uint32_t g = r->gw[i];
            uint32_t cost = local_cost (r, z, n, g);
            if (g == n || cost == INF)
              continue;
            CoreEdge e = { r->core_of[g], cost, WEFT_NONE };
            g_array_append_val (edges, e);
          }
    }
  r->core_start[r->n_core] = edges->len;
  r->core_edges = (CoreEdge *) g_array_free (g_steal_pointer (&edges), FALSE);

  /* The ways into the core, numbered in the order of the core nodes they
   * enter and of those nodes' ports: a fat-tree's endpoints leaf by leaf. */
  r->entry_of = g_new (uint32_t, MAX (topo->n_links, 1));
  for (uint32_t l = 0; l < topo->n_links; l++)
    r->entry_of[l] = WEFT_NONE;
  for (uint32_t c = 0; c < r->n_core; c++)
    {
      uint32_t n = r->core_node[c];
      for (uint32_t i = topo->out_start[n]; i < topo->out_start[n + 1]; i++)
        {
          uint32_t l = topo->out_links[i];
          if (r->core_of[topo->links[l].dst] == WEFT_NONE)
            r->entry_of[l ^ 1] = r->n_entries++;
        }
    }
}

/* A node and a hash of its kind and its nearest gateways (build_own()):
 * nodes of equal keys share them. */
typedef struct {
  uint64_t key;
  uint32_t node;
} Near;

/* Near records by key, then by node. */
static int
near_cmp (const void *a, const void *b)
{
  const Near *x = a, *y = b;

  if (x->key != y->key)
    return x->key < y->key ? -1 : 1;
  return x->node < y->node ? -1 : x->node > y->node;
}

/* Each node's own way out of its server, as NCCL gives each GPU its
 * nearest NIC: the gateway nearest to it inside the server (a GPU's NIC on
 * its PCIe switch; a gateway itself), and of several equally near, the one
 * at its place among the nodes of its kind that have the same ones nearest
 * (GPUs 2k and 2k + 1 of a DGX H100 share NICs 2k and 2k + 1 and take one
 * each).  Traffic between servers leaves and enters by these when it can,
 * rather than by whichever NIC is cheapest to reach: by cost alone every
 * GPU of a server would cross NVLink to the few NICs nearest the
 * destination.  Servers wired to each other directly (forwarding zones)
 * keep least cost: their gateways face different neighbours. */
static void
build_own (WeftRouting *r)
{
  const WeftTopology *topo = r->topo;

  r->own = g_new (uint32_t, MAX (topo->n_nodes, 1));
  for (uint32_t n = 0; n < topo->n_nodes; n++)
    r->own[n] = WEFT_NONE;
  for (uint32_t z = 0; z < topo->n_zones; z++)
    {
      const uint32_t *gw = r->gw + r->gw_start[z];
      uint32_t n_gw = r->gw_start[z + 1] - r->gw_start[z];
      uint32_t base = topo->zones[z].first_node, n = topo->zones[z].n_nodes;
      if (r->forwarding[z] || n_gw == 0)
        continue;
      g_autofree Near *near = g_new (Near, n);
      g_autofree uint32_t *nearest = g_new (uint32_t, n);
      g_autofree uint32_t *count = g_new0 (uint32_t, n);
      uint32_t m = 0;
      for (uint32_t x = 0; x < n; x++)
        {
          uint32_t d = INF;
          uint64_t h = topo->nodes[base + x].kind;
          for (uint32_t i = 0; i < n_gw; i++)
            d = MIN (d, local_cost (r, z, base + x, gw[i]));
          nearest[x] = d;
          for (uint32_t i = 0; d != INF && i < n_gw; i++)
            if (local_cost (r, z, base + x, gw[i]) == d)
              {
                h = weft_mix64 (h ^ gw[i]);
                count[x]++;
              }
          if (count[x] > 0)
            near[m++] = (Near) { h, base + x };
        }
      /* Nodes of a kind with the same nearest gateways side by side, in
       * order: each takes the next of them. */
      qsort (near, m, sizeof (Near), near_cmp);
      for (uint32_t j = 0, place = 0; j < m; j++)
        {
          place = j > 0 && near[j].key == near[j - 1].key ? place + 1 : 0;
          uint32_t x = near[j].node - base, k = place % count[x];
          for (uint32_t i = 0; i < n_gw; i++)
            if (local_cost (r, z, near[j].node, gw[i]) == nearest[x]
                && k-- == 0)
              {
                r->own[near[j].node] = gw[i];
                break;
              }
        }
    }
}

static void
forget_costs (WeftRouting *r)
{
  for (uint32_t c = 0; c < r->n_core; c++)
    g_clear_pointer (&r->to_core[c], g_free);
  r->cached_bytes = 0;
}

WeftRouting *
weft_routing_new (const WeftTopology *topo)
{
  WeftRouting *r = g_new0 (WeftRouting, 1);

  g_assert (topo->finished);
  r->topo = topo;
  build_tables (r);
  build_core (r);
  r->affinity = g_new (uint32_t, MAX (topo->n_nodes, 1));
  for (uint32_t z = 0; z < topo->n_zones; z++)
    {
      const WeftZone *zone = &topo->zones[z];
      for (uint32_t a = zone->first_node; a < zone->first_node + zone->n_nodes;
           a++)
        {
          uint32_t k = 0;
          for (uint32_t b = zone->first_node; b < a; b++)
            k += topo->nodes[b].kind == topo->nodes[a].kind;
          r->affinity[a] = k;
        }
    }
  for (uint32_t n = 0; n < topo->n_nodes; n++)
    if (zone_of (r, n) == WEFT_ZONE_ROOT)
      r->affinity[n] = WEFT_NONE;
  build_own (r);
  for (uint32_t n = 0; n < topo->n_nodes; n++)
    r->uses_load |= topo->nodes[n].routing == WEFT_ROUTE_ADAPTIVE;
  r->cand_edges = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  r->cand_links = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  r->to_core = g_new0 (uint32_t *, MAX (r->n_core, 1));
  r->outs = g_array_new (FALSE, FALSE, sizeof (Port));
  r->ins = g_array_new (FALSE, FALSE, sizeof (Port));
  r->at = g_array_new (FALSE, FALSE, sizeof (guint));
  r->tails = g_array_new (FALSE, FALSE, sizeof (Tail));
  r->outs_node = r->ins_node = WEFT_NONE;
  weft_routing_set_memo (r, TRUE);
  return r;
}

void
weft_routing_free (WeftRouting *r)
{
  if (r == NULL)
    return;
  for (uint32_t t = 0; t < r->n_tables; t++)
    g_free (r->tables[t].cost);
  g_free (r->tables);
  g_free (r->zone_table);
  g_free (r->affinity);
  g_free (r->own);
  g_array_unref (r->cand_edges);
  g_array_unref (r->cand_links);
  g_free (r->entry_of);
  g_free (r->gw_start);
  g_free (r->gw);
  g_free (r->forwarding);
  g_free (r->core_of);
  g_free (r->core_node);
  g_free (r->core_start);
  g_free (r->core_edges);
  forget_costs (r);
  g_free (r->to_core);
  g_array_unref (r->outs);
  g_array_unref (r->ins);
  g_array_unref (r->at);
  g_array_unref (r->tails);
  weft_route_memo_free (r->memo);
  g_free (r);
}

size_t
weft_routing_bytes_bound (const WeftTopology *topo)
{
  uint64_t fabric = 0, gpus = 0;

  for (uint32_t n = 0; n < topo->n_nodes; n++)
    {
      fabric += topo->nodes[n].zone == WEFT_ZONE_ROOT;
      gpus += topo->nodes[n].kind == WEFT_NODE_GPU;
    }
  /* A server's table is its nodes squared, once a template (custom zones
   * have their own). */
  uint64_t tables = 0;
  for (uint32_t z = 0; z < topo->n_zones; z++)
    {
      const WeftZone *zone = &topo->zones[z];
      const WeftZoneTemplate *t = g_ptr_array_index (topo->zone_templates,
                                                     zone->template_id);
      if (zone->custom || t->first_zone == z)
        tables += (uint64_t) zone->n_nodes * zone->n_nodes * sizeof (uint32_t);
    }
  return MIN (fabric * fabric * sizeof (uint32_t), CACHE_BUDGET) + tables
         + weft_route_memo_bound ((uint32_t) MIN (gpus, UINT32_MAX));
}

size_t
weft_routing_memory (const WeftRouting *r)
{
  return r->cached_bytes + r->table_bytes
         + weft_route_memo_memory (r->memo);
}

void
weft_routing_set_memo (WeftRouting *r, gboolean enabled)
{
  g_clear_pointer (&r->memo, weft_route_memo_free);
  if (enabled)
    {
      uint32_t gpus = 0;
      for (uint32_t n = 0; n < r->topo->n_nodes; n++)
        gpus += r->topo->nodes[n].kind == WEFT_NODE_GPU;
      r->memo = weft_route_memo_new (gpus);
    }
}

/* Costs from every core node to core node @target (links are symmetric, so
 * a Dijkstra outwards from @target gives them). */
static const uint32_t *
costs_to (WeftRouting *r, uint32_t target)
{
  uint32_t *cost = r->to_core[target];
  if (cost != NULL)
    return cost;

  size_t bytes = (size_t) r->n_core * sizeof (uint32_t);
  if (r->cached_bytes + bytes > CACHE_BUDGET)
    forget_costs (r);   /* past the budget, start over rather than grow */
  cost = g_malloc (bytes);
  memset (cost, 0xff, bytes);

  Heap heap = { 0 };
  cost[target] = 0;
  heap_push (&heap, 0, target);
  while (heap.n > 0)
    {
      uint64_t item = heap_pop (&heap);
      uint32_t c = (uint32_t) (item >> 32), x = (uint32_t) item;
      if (c > cost[x])
        continue;
      for (uint32_t i = r->core_start[x]; i < r->core_start[x + 1]; i++)
        {
          const CoreEdge *e = &r->core_edges[i];
          if (c + e->cost < cost[e->to])
            {
              cost[e->to] = c + e->cost;
              heap_push (&heap, cost[e->to], e->to);
            }
        }
    }
  g_free (heap.items);
  r->to_core[target] = cost;
  r->cached_bytes += bytes;
  return cost;
}

/* The ways between @node and the core: itself if it is a core node;
 * otherwise through each gateway of its zone. */
static void
ports_of (const WeftRouting *r, uint32_t node, GArray *ports)
{
  const WeftTopology *topo = r->topo;
  uint32_t z = zone_of (r, node);

  g_array_set_size (ports, 0);
  if (r->core_of[node] != WEFT_NONE)
    {
      Port p = { r->core_of[node], 0, WEFT_NONE, WEFT_NONE };
      g_array_append_val (ports, p);
      if (z == WEFT_ZONE_ROOT)
        return;
    }
  for (uint32_t i = r->gw_start[z]; i < r->gw_start[z + 1]; i++)
    {
      uint32_t g = r->gw[i];
      uint32_t to_g = local_cost (r, z, node, g);
      /* A core node was added above as its own way in and out. */
      if (to_g == INF || (g == node && r->core_of[node] != WEFT_NONE))
        continue;
      if (r->core_of[g] != WEFT_NONE)
        {
          Port p = { r->core_of[g], to_g, g, WEFT_NONE };
          g_array_append_val (ports, p);
          continue;
        }
      for (uint32_t k = topo->out_start[g]; k < topo->out_start[g + 1]; k++)
        {
          uint32_t l = topo->out_links[k];
          const WeftLink *link = &topo->links[l];
          if (topo->nodes[link->dst].zone == z)
            continue;
          Port p = { r->core_of[link->dst], to_g + link->cost, g, l };
          g_array_append_val (ports, p);
        }
    }
}

/* ports_of() into @ports unless they hold @node's already (*@holds). */
static void
ports_of_cached (const WeftRouting *r, uint32_t node, GArray *ports,
                 uint32_t *holds)
{
  if (*holds == node)
    return;
  ports_of (r, node, ports);
  *holds = node;
}

typedef struct {
  uint64_t cost;
  uint32_t n_best;
  Port out, in;                 /* the chosen pair; in.core is the target */
  gboolean local;               /* the chosen route stays inside the zone */
  uint32_t own_out, own_in;     /* the gateways a route between servers
                                   leaves and enters by when it can (the
                                   GPUs' own NICs), or WEFT_NONE: any */
  unsigned tier;                /* which of them it keeps to: bit 0 clear,
                                   it leaves by own_out; bit 1 clear, it
                                   enters by own_in */
} Choice;

/* The tier of the pair (@out, @in) under @ch's own gateways: the bits of
 * the sides that do not keep to them. */
static inline unsigned
tier_of (const Choice *ch, const Port *out, const Port *in)
{
  return (unsigned) (ch->own_out != WEFT_NONE && out->gateway != ch->own_out)
         | (unsigned) (ch->own_in != WEFT_NONE && in->gateway != ch->own_in)
               << 1;
}

/* Whether @ch's tier lets the pair (@out, @in) be taken: each side keeps to
 * its own gateway unless the tier gave it up.  A tier is taken only when
 * those before it have no route, so any pair it lets in that keeps to more
 * than it asks has none either. */
static inline gboolean
in_tier (const Choice *ch, const Port *out, const Port *in)
{
  return (tier_of (ch, out, in) & ~ch->tier) == 0;
}

/* The own gateways of a route from @src on behalf of @origin (which is
 * @src or a node on the way to it) to @dst, into @ch: only between
 * servers, and only for nodes inside them (a switch of the fabric has
 * one way, itself). */
static void
own_gateways (const WeftRouting *r, uint32_t origin, uint32_t src,
              uint32_t dst, Choice *ch)
{
  uint32_t zs = zone_of (r, src), zd = zone_of (r, dst);
  gboolean between = zs != zd || zs == WEFT_ZONE_ROOT;

  ch->own_out = between && zs != WEFT_ZONE_ROOT
                        && r->core_of[src] == WEFT_NONE
                        && zone_of (r, origin) == zs
                    ? r->own[origin]
                    : WEFT_NONE;
  ch->own_in = between && zd != WEFT_ZONE_ROOT && r->core_of[dst] == WEFT_NONE
                   ? r->own[dst]
                   : WEFT_NONE;
  ch->tier = 0;
}

/* Find the least cost from @src to @dst on behalf of @origin and, when
 * @pick is not NULL and @dst can be reached, pick one of the equal-cost
 * (exit, entry) pairs with the hash value @pick.  Between servers the
 * route keeps to the own gateways of @origin and @dst when some route
 * does: first both, then the destination's (reached across the source's
 * server, as NCCL's PXN crosses NVLink to the GPU on the destination's
 * rail), then the source's, then neither; least cost within the first of
 * these with a route. */
static void
choose (WeftRouting *r, uint32_t origin, uint32_t src, uint32_t dst,
        const uint64_t *pick, Choice *ch)
{
  GArray *outs = r->outs, *ins = r->ins;
  uint32_t z = zone_of (r, src);
  uint64_t best[4];
  uint32_t n_best[4] = { 0 };
  gboolean local = FALSE;

  for (int t = 0; t < 4; t++)
    best[t] = WEFT_ROUTE_UNREACHABLE;
  own_gateways (r, origin, src, dst, ch);
  ch->local = FALSE;
  if (z != WEFT_ZONE_ROOT && z == zone_of (r, dst)
      && local_cost (r, z, src, dst) != INF)
    {
      best[0] = local_cost (r, z, src, dst);
      n_best[0] = 1;
      local = TRUE;
    }
  ports_of_cached (r, src, outs, &r->outs_node);
  ports_of_cached (r, dst, ins, &r->ins_node);

  /* The least cost of each tier... */
  for (guint j = 0; j < ins->len; j++)
    {
      const Port *in = &g_array_index (ins, Port, j);
      const uint32_t *to_in = costs_to (r, in->core);
      for (guint i = 0; i < outs->len; i++)
        {
          const Port *out = &g_array_index (outs, Port, i);
          if (to_in[out->core] == INF)
            continue;
          uint64_t c = (uint64_t) out->cost + to_in[out->core] + in->cost;
          unsigned t = tier_of (ch, out, in);
          if (c < best[t])
            {
              best[t] = c;
              n_best[t] = 1;
            }
          else if (c == best[t])
            n_best[t]++;
        }
    }
  while (ch->tier < 3 && n_best[ch->tier] == 0)
    ch->tier++;
  ch->cost = best[ch->tier];
  ch->n_best = n_best[ch->tier];
  if (pick == NULL || ch->n_best == 0)
    return;

  /* ...then the pick-th route at the least cost of the first tier with
   * one: staying inside the zone first, if it is one of them. */
  uint32_t seen = 0, target = (uint32_t) (*pick % ch->n_best);
  if (local && ch->tier == 0 && local_cost (r, z, src, dst) == ch->cost)
    {
      if (target == 0)
        {
          ch->local = TRUE;
          return;
        }
      seen = 1;
    }
  for (guint j = 0; j < ins->len; j++)
    {
      const Port *in = &g_array_index (ins, Port, j);
      const uint32_t *to_in = costs_to (r, in->core);
      for (guint i = 0; i < outs->len; i++)
        {
          const Port *out = &g_array_index (outs, Port, i);
          if (to_in[out->core] != INF && in_tier (ch, out, in)
              && (uint64_t) out->cost + to_in[out->core] + in->cost
                     == ch->cost
              && seen++ == target)
            {
              ch->out = *out;
              ch->in = *in;
              return;
            }
        }
    }
  g_assert_not_reached ();
}

/* A choice with one least-cost route (inside the zone, or one (exit,
 * entry) pair) is the same for every flow: where the path is not (the
 * walks inside servers took the flow's hash), the choice is remembered as
 * words, sparing choose() pairing every way out of a large server with
 * every way into another (a GB200 NVL72 rack has 72 of each) for each
 * small transfer routed whole. */
#define CHOICE_WORDS 12

static void
remember_choice (WeftRouting *r, uint32_t origin, uint32_t src, uint32_t dst,
                 const Choice *ch)
{
  /* A choice that stays inside the zone has no exit and entry. */
  const Port none = { 0, 0, 0, 0 };
  const Port *out = ch->local ? &none : &ch->out;
  const Port *in = ch->local ? &none : &ch->in;
  uint32_t w[CHOICE_WORDS] = {
    (uint32_t) ch->cost, (uint32_t) (ch->cost >> 32), ch->n_best,
    out->core, out->cost, out->gateway, out->link,
    in->core, in->cost, in->gateway, in->link,
    (uint32_t) ch->local | ch->tier << 1,
  };

  g_array_set_size (r->at, 0);
  g_array_append_vals (r->at, w, CHOICE_WORDS);
  weft_route_memo_put (r->memo, WEFT_MEMO_CHOICE, origin, src, dst, r->at);
}

/* Whether the choice for (@origin, @src, @dst) was remembered; if so,
 * into @ch. */
static gboolean
recall_choice (WeftRouting *r, uint32_t origin, uint32_t src, uint32_t dst,
               Choice *ch)
{
  if (r->memo == NULL
      || !weft_route_memo_get (r->memo, WEFT_MEMO_CHOICE, origin, src, dst,
                               r->at))
    return FALSE;
  const uint32_t *w = (const uint32_t *) r->at->data;
  own_gateways (r, origin, src, dst, ch);
  ch->cost = (uint64_t) w[0] | (uint64_t) w[1] << 32;
  ch->n_best = w[2];
  ch->out = (Port) { w[3], w[4], w[5], w[6] };
  ch->in = (Port) { w[7], w[8], w[9], w[10] };
  ch->local = w[11] & 1;
  ch->tier = w[11] >> 1;
  return TRUE;
}

/* Whether exit @out and entry @in make a route of @ch's tier and cost. */
static gboolean
pairs_at (WeftRouting *r, const Choice *ch, const Port *out, const Port *in)
{
  const uint32_t *to_in = costs_to (r, in->core);

  return to_in[out->core] != INF && in_tier (ch, out, in)
         && (uint64_t) out->cost + to_in[out->core] + in->cost == ch->cost;
}

/* Among the least-cost (exit, entry) pairs @ch was chosen from, take the
 * exit at place @out_place among the exits that have one, then the entry at
 * place @in_place among those that pair with it (each WEFT_NONE to keep
 * @ch's choice on that side, or the first entry that pairs). */
static void
choose_by_place (WeftRouting *r, uint32_t src, uint32_t dst,
                 uint32_t out_place, uint32_t in_place, Choice *ch)
{
  if (out_place == WEFT_NONE && in_place == WEFT_NONE)
    return;

  GArray *outs = r->outs, *ins = r->ins, *at = r->at;

  g_array_set_size (at, 0);
  ports_of_cached (r, src, outs, &r->outs_node);
  ports_of_cached (r, dst, ins, &r->ins_node);
  if (out_place != WEFT_NONE)
    {
      for (guint i = 0; i < outs->len; i++)
        for (guint k = 0; k < ins->len; k++)
          if (pairs_at (r, ch, &g_array_index (outs, Port, i),
                        &g_array_index (ins, Port, k)))
            {
              g_array_append_val (at, i);
              break;
            }
      g_assert (at->len > 0);
      ch->out = g_array_index (outs, Port,
                               g_array_index (at, guint, out_place % at->len));
    }
  g_array_set_size (at, 0);
  for (guint k = 0; k < ins->len; k++)
    if (pairs_at (r, ch, &ch->out, &g_array_index (ins, Port, k)))
      g_array_append_val (at, k);
  g_assert (at->len > 0);
  if (in_place != WEFT_NONE)
    ch->in = g_array_index (ins, Port,
                            g_array_index (at, guint, in_place % at->len));
  else if (!pairs_at (r, ch, &ch->out, &ch->in))
    ch->in = g_array_index (ins, Port, g_array_index (at, guint, 0));
}

uint64_t
weft_routing_cost (WeftRouting *r, uint32_t src, uint32_t dst)
{
  Choice ch;

  if (src == dst)
    return 0;
  choose (r, src, src, dst, NULL, &ch);
  return ch.cost;
}

static inline uint64_t
hop_hash (uint32_t src, uint32_t dst, uint64_t flow, uint32_t hop)
{
  return weft_mix64 (weft_mix64 (weft_mix64 (flow) ^ src) ^ ((uint64_t) dst << 20
                                                             ^ hop));
}

/* Append the in-zone links from @from to @to (both in @zone), choosing among
 * equal-cost next hops by hash. */
static void
walk_local (WeftRouting *r, uint32_t zone, uint32_t from, uint32_t to,
            uint64_t seed, uint32_t *hop, GArray *links)
{
  const WeftTopology *topo = r->topo;
  uint32_t candidates[64];

  while (from != to)
    {
      uint32_t left = local_cost (r, zone, from, to), n = 0, count = 0;
      uint64_t h = weft_mix64 (seed + (*hop)++);

      for (uint32_t i = topo->out_start[from]; i < topo->out_start[from + 1];
           i++)
        {
          uint32_t l = topo->out_links[i];
          const WeftLink *link = &topo->links[l];
          if (topo->nodes[link->dst].zone != zone)
            continue;
          if ((uint64_t) link->cost + local_cost (r, zone, link->dst, to)
              != left)
            continue;
          /* Reservoir choice keeps it uniform beyond the buffer's size. */
          if (n < G_N_ELEMENTS (candidates))
            candidates[n++] = l;
          else if (weft_mix64 (h + count) % (count + 1) == 0)
            candidates[h % n] = l;
          count++;
        }
      g_assert (n > 0);
      r->by_flow |= n > 1;
      uint32_t l = candidates[h % n];
      g_array_append_val (links, l);
      from = topo->links[l].dst;
    }
}

/* Append the core links from core node @from to core node @to.  Among
 * equal-cost next hops the engine of the switch that chooses picks one
 * (route_engine.h), given @dest, the destination's index among the ways
 * into the core, the flow's hash and the links' load. */
static void
walk_core (WeftRouting *r, uint32_t from, uint32_t to, uint64_t dest,
           uint64_t seed, uint32_t *hop, GArray *links)
{
  const WeftTopology *topo = r->topo;
  const uint32_t *cost = costs_to (r, to);
  WeftRouteChoice c = { .topo = topo, .dest = dest, .stride = 1,
                        .load = r->load };

  while (from != to)
    {
      g_array_set_size (r->cand_edges, 0);
      g_array_set_size (r->cand_links, 0);
      for (uint32_t i = r->core_start[from]; i < r->core_start[from + 1]; i++)
        {
          const CoreEdge *e = &r->core_edges[i];
          if (cost[e->to] != INF
              && (uint64_t) e->cost + cost[e->to] == cost[from])
            {
              g_array_append_val (r->cand_edges, i);
              g_array_append_val (r->cand_links, e->link);
            }
        }
      c.n = r->cand_edges->len;
      g_assert (c.n > 0);
      uint32_t pick = 0;
      if (c.n > 1)
        {
          const WeftRouteEngineClass *engine = weft_route_engine_class (
              topo->nodes[r->core_node[from]].routing);
          c.links = (const uint32_t *) r->cand_links->data;
          /* Only engines that hash draw on the hops' hashes, so that the
           * others leave the in-server choices after them as they were. */
          c.hash = engine->by_flow ? weft_mix64 (seed + (*hop)++) : 0;
          pick = engine->pick (&c);
          g_assert (pick < c.n);
          r->by_flow |= engine->by_flow;
          if (c.stride <= dest)
            c.stride *= c.n;
        }
      CoreEdge e = r->core_edges[g_array_index (r->cand_edges, uint32_t,
                                                pick)];
      if (e.link != WEFT_NONE)
        g_array_append_val (links, e.link);
      else
        {
          uint32_t a = r->core_node[from], b = r->core_node[e.to];
          walk_local (r, zone_of (r, a), a, b, seed, hop, links);
        }
      from = e.to;
    }
}

gboolean
weft_routing_path (WeftRouting *r, uint32_t src, uint32_t dst, uint64_t flow,
                   GArray *links)
{
  return weft_routing_path_for (r, src, src, dst, flow, links);
}

/* The route of a choice that leaves the source's server. */
static void
walk_out (WeftRouting *r, const Choice *ch, uint32_t src, uint32_t dst,
          uint64_t seed, uint32_t *hop, GArray *links)
{
  /* Out of the source's server to the core... */
  if (ch->out.gateway != WEFT_NONE)
    {
      walk_local (r, zone_of (r, src), src, ch->out.gateway, seed, hop, links);
      if (ch->out.link != WEFT_NONE)
        g_array_append_val (links, ch->out.link);
    }
  /* ...across it... */
  walk_core (r, ch->out.core, ch->in.core,
             ch->in.link != WEFT_NONE ? r->entry_of[ch->in.link]
                                      : (uint64_t) r->n_entries + ch->in.core,
             seed, hop, links);
  /* ...and into the destination's server. */
  if (ch->in.gateway != WEFT_NONE)
    {
      if (ch->in.link != WEFT_NONE)
        {
          uint32_t back = ch->in.link ^ 1;       /* core -> gateway */
          g_array_append_val (links, back);
        }
      walk_local (r, zone_of (r, dst), ch->in.gateway, dst, seed, hop, links);
    }
}

gboolean
weft_routing_path_for (WeftRouting *r, uint32_t origin, uint32_t src,
                       uint32_t dst, uint64_t flow, GArray *links)
{
  uint64_t seed = hop_hash (src, dst, flow, 0);
  uint32_t hop = 1;
  Choice ch;

  r->by_flow = FALSE;           /* remembered routes took no flow id */
  if (weft_route_memo_get (r->memo, WEFT_MEMO_PATH, origin, src, dst, links))
    return TRUE;
  g_array_set_size (links, 0);
  if (src == dst)
    return TRUE;
  uint64_t pick = weft_mix64 (seed);
  gboolean recalled = recall_choice (r, origin, src, dst, &ch);
  if (!recalled)
    choose (r, origin, src, dst, &pick, &ch);
  if (ch.cost == WEFT_ROUTE_UNREACHABLE)
    return FALSE;
  /* Which of the equal-cost ways out of the source's server and into the
   * destination's that remain (the own NICs leave one each; GB200 GPUs
   * reach their NVLink switches by many): each GPU's place among the GPUs
   * of its server, rather than by chance. */
  if (!ch.local && ch.n_best > 1)
    choose_by_place (r, src, dst, r->affinity[origin], r->affinity[dst], &ch);
  /* Whether the flow's hash took part (the walks inside servers add to
   * it): if not, the route is the same for every flow and is remembered.
   * It did if it chose between staying inside the server and going out
   * (a GB200 GPU reaches the other GPU on its Grace through the Grace or
   * through any NVSwitch chip, at equal cost), whichever it took. */
  uint32_t z = zone_of (r, src);
  gboolean local_ties = z != WEFT_ZONE_ROOT && z == zone_of (r, dst)
                        && local_cost (r, z, src, dst) == ch.cost;
  r->by_flow = ch.n_best > 1 && (local_ties
                                 || r->affinity[origin] == WEFT_NONE
                                 || r->affinity[dst] == WEFT_NONE);
  if (ch.local)
    walk_local (r, z, src, dst, seed, &hop, links);
  else
    walk_out (r, &ch, src, dst, seed, &hop, links);
  if (!r->by_flow)
    weft_route_memo_put (r->memo, WEFT_MEMO_PATH, origin, src, dst, links);
  else if (!recalled && ch.n_best == 1)
    /* The walks took the flow's hash, the choice did not: it is kept
     * where the whole path cannot be. */
    remember_choice (r, origin, src, dst, &ch);
  return TRUE;
}

gboolean
weft_routing_flow_free (const WeftRouting *r)
{
  return !r->by_flow;
}

gboolean
weft_routing_uses_load (const WeftRouting *r)
{
  return r->uses_load;
}

void
weft_routing_set_load (WeftRouting *r, const uint32_t *load)
{
  r->load = load;
}

/* The least cost from @node (of zone @z, not a core node) to @dst, by the
 * route inside the zone if @dst is in it, or out by one of the zone's ways
 * out (@tails, from zone_tails()): what choose() finds, without listing
 * @node's ports and pairing each with each of @dst's. */
static uint64_t
cost_by_tails (const WeftRouting *r, uint32_t z, uint32_t node, uint32_t dst,
               const GArray *tails)
{
  uint64_t best = WEFT_ROUTE_UNREACHABLE;

  if (node == dst)
    return 0;
  if (zone_of (r, dst) == z && local_cost (r, z, node, dst) != INF)
    best = local_cost (r, z, node, dst);
  for (guint i = 0; i < tails->len; i++)
    {
      const Tail *t = &g_array_index (tails, Tail, i);
      uint32_t to_g = local_cost (r, z, node, t->gateway);
      if (to_g != INF && t->cost != WEFT_ROUTE_UNREACHABLE)
        best = MIN (best, to_g + t->cost);
    }
  return best;
}

/* The way out of a zone by gateway @g over @link (WEFT_NONE for a core
 * gateway) into core node @core, @extra the cost of @link (0 for a core
 * gateway), with the least cost on from @g to the destination whose ports
 * r->ins holds, as choose() pairs a port with them in @ch's tier. */
static Tail
tail_of (WeftRouting *r, const Choice *ch, uint32_t g, uint32_t link,
         uint32_t core, uint32_t extra)
{
  Tail t = { g, link, WEFT_ROUTE_UNREACHABLE };
  Port out = { core, 0, g, link };

  for (guint j = 0; j < r->ins->len; j++)
    {
      const Port *in = &g_array_index (r->ins, Port, j);
      const uint32_t *to_in = costs_to (r, in->core);
      if (to_in[core] != INF && in_tier (ch, &out, in))
        t.cost = MIN (t.cost, (uint64_t) extra + to_in[core] + in->cost);
    }
  return t;
}

/* Into @tails: each way out of zone @z toward @dst that @ch's tier lets a
 * route take, as ports_of() lists a node's (a gateway that is a core node,
 * or each of a gateway's links out of the zone), with the least cost on
 * from its gateway. */
static void
zone_tails (WeftRouting *r, uint32_t z, uint32_t dst, const Choice *ch,
            GArray *tails)
{
  const WeftTopology *topo = r->topo;

  ports_of_cached (r, dst, r->ins, &r->ins_node);
  g_array_set_size (tails, 0);
  for (uint32_t i = r->gw_start[z]; i < r->gw_start[z + 1]; i++)
    {
      uint32_t g = r->gw[i];
      if (!(ch->tier & 1) && ch->own_out != WEFT_NONE && g != ch->own_out)
        continue;
      if (r->core_of[g] != WEFT_NONE)
        {
          Tail t = tail_of (r, ch, g, WEFT_NONE, r->core_of[g], 0);
          g_array_append_val (tails, t);
          continue;
        }
      for (uint32_t k = topo->out_start[g]; k < topo->out_start[g + 1]; k++)
        {
          uint32_t l = topo->out_links[k];
          const WeftLink *link = &topo->links[l];
          if (topo->nodes[link->dst].zone == z)
            continue;
          Tail t = tail_of (r, ch, g, l, r->core_of[link->dst], link->cost);
          g_array_append_val (tails, t);
        }
    }
}

/* Whether @node is inside zone @z and not a core node: its costs to a
 * destination go by the zone's ways out (cost_by_tails()). */
static inline gboolean
inside (const WeftRouting *r, uint32_t z, uint32_t node)
{
  return z != WEFT_ZONE_ROOT && zone_of (r, node) == z
         && r->core_of[node] == WEFT_NONE;
}

void
weft_routing_first_hops (WeftRouting *r, uint32_t src, uint32_t dst,
                         GArray *links)
{
  const WeftTopology *topo = r->topo;
  if (weft_route_memo_get (r->memo, WEFT_MEMO_FIRST, src, dst, 0, links))
    return;

  g_array_set_size (links, 0);
  if (src == dst)
    return;
  /* A node inside a server and its neighbours there share the server's
   * ways out: the costs on from each way out are found once, not once a
   * neighbour (a GPU has a link to each of a DGX's NVSwitch chips). */
  uint32_t z = zone_of (r, src);
  gboolean in_zone = inside (r, z, src);
  if (in_zone)
    {
      /* Between servers, the tier of own gateways that the route keeps to
       * (choose()); the neighbours go on on behalf of @src, so keep to the
       * same. */
      Choice ch;
      own_gateways (r, src, src, dst, &ch);
      if (ch.own_out != WEFT_NONE || ch.own_in != WEFT_NONE)
        choose (r, src, src, dst, NULL, &ch);
      zone_tails (r, z, dst, &ch, r->tails);
    }
  uint64_t best = in_zone ? cost_by_tails (r, z, src, dst, r->tails)
                          : weft_routing_cost (r, src, dst);
  if (best == WEFT_ROUTE_UNREACHABLE)
    return;
  for (uint32_t i = topo->out_start[src]; i < topo->out_start[src + 1]; i++)
    {
      uint32_t l = topo->out_links[i], next = topo->links[l].dst;
      uint64_t total = WEFT_ROUTE_UNREACHABLE;
      if (in_zone && inside (r, z, next))
        {
          uint64_t rest = cost_by_tails (r, z, next, dst, r->tails);
          if (rest != WEFT_ROUTE_UNREACHABLE)
            total = topo->links[l].cost + rest;
        }
      else if (in_zone && zone_of (r, next) != z)
        {
          /* @src is a gateway and @l one of its ways out. */
          for (guint k = 0; k < r->tails->len; k++)
            {
              const Tail *t = &g_array_index (r->tails, Tail, k);
              if (t->gateway == src && t->link == l)
                total = t->cost;
            }
        }
      else
        {
          uint64_t rest = weft_routing_cost (r, next, dst);
          if (rest != WEFT_ROUTE_UNREACHABLE)
            total = topo->links[l].cost + rest;
        }
      if (total == best)
        g_array_append_val (links, l);
    }
  weft_route_memo_put (r->memo, WEFT_MEMO_FIRST, src, dst, 0, links);
}
