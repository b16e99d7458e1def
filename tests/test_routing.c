/* Tests of routing: least-cost paths, ECMP spread, and agreement with a
 * plain shortest-path search over the whole graph. */
#include "rng.h"
#include "topology/route_engine.h"
#include "topology/routing.h"
#include "topology/scenario.h"

#include <check.h>
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>

#define SCENARIOS WEFT_SOURCE_DIR "/scenarios"

static WeftScenario *
load (const char *file)
{
  g_autofree char *path = g_build_filename (SCENARIOS, file, NULL);
  g_autoptr (GError) error = NULL;
  WeftScenario *s = weft_scenario_load (path, &error);

  ck_assert_msg (s != NULL, "%s", error ? error->message : "");
  return s;
}

static uint32_t
node (const WeftTopology *topo, const char *name)
{
  uint32_t id = weft_topology_find_node (topo, name);

  ck_assert_msg (id != WEFT_NONE, "no node %s", name);
  return id;
}

/* Check that @path runs from @src to @dst link by link; return its cost. */
static uint64_t
check_path (const WeftTopology *topo, GArray *path, uint32_t src, uint32_t dst)
{
  uint32_t at = src;
  uint64_t cost = 0;

  for (guint i = 0; i < path->len; i++)
    {
      const WeftLink *l = &topo->links[g_array_index (path, uint32_t, i)];
      ck_assert_uint_eq (l->src, at);
      at = l->dst;
      cost += l->cost;
    }
  ck_assert_uint_eq (at, dst);
  return cost;
}

/* Least costs from @src over paths whose inner nodes @keep lets through
 * (@keep NULL: the whole graph), by a plain Dijkstra. */
static uint64_t *
dijkstra_over (const WeftTopology *topo, uint32_t src, const gboolean *keep)
{
  uint64_t *dist = g_new (uint64_t, topo->n_nodes);
  gboolean *done = g_new0 (gboolean, topo->n_nodes);

  for (uint32_t n = 0; n < topo->n_nodes; n++)
    dist[n] = G_MAXUINT64;
  dist[src] = 0;
  for (;;)
    {
      uint32_t best = WEFT_NONE;
      for (uint32_t n = 0; n < topo->n_nodes; n++)
        if (!done[n] && dist[n] != G_MAXUINT64
            && (best == WEFT_NONE || dist[n] < dist[best]))
          best = n;
      if (best == WEFT_NONE)
        break;
      done[best] = TRUE;
      if (keep != NULL && best != src && !keep[best])
        continue;
      for (uint32_t i = topo->out_start[best]; i < topo->out_start[best + 1];
           i++)
        {
          const WeftLink *l = &topo->links[topo->out_links[i]];
          if (dist[best] + l->cost < dist[l->dst])
            dist[l->dst] = dist[best] + l->cost;
        }
    }
  g_free (done);
  return dist;
}

/* Least costs from @src over the whole graph. */
static uint64_t *
dijkstra (const WeftTopology *topo, uint32_t src)
{
  return dijkstra_over (topo, src, NULL);
}

/* What the routes between DGX servers joined by a fabric should cost, as
 * NCCL picks NICs: out by the source GPU's own NIC (GPU i, NIC i) and in by
 * the destination's, through the fabric's switches alone; if those two
 * have no way between them (rails as planes), in by the destination's own
 * NIC from whichever NIC of the source's server is best; least cost inside
 * the servers.  Costs from each node, inside its server or through the
 * fabric, are kept as they are found. */
typedef struct {
  const WeftTopology *topo;
  GHashTable *server, *fabric, *whole;  /* node -> its costs inside its
                                           server, through the fabric, over
                                           the whole graph (uint64_t *) */
  gboolean *in_fabric;          /* per node: a switch of the fabric */
} Nics;

static void
nics_init (Nics *o, const WeftTopology *topo)
{
  o->topo = topo;
  o->server = g_hash_table_new_full (NULL, NULL, NULL, g_free);
  o->fabric = g_hash_table_new_full (NULL, NULL, NULL, g_free);
  o->whole = g_hash_table_new_full (NULL, NULL, NULL, g_free);
  o->in_fabric = g_new0 (gboolean, topo->n_nodes);
  for (uint32_t n = 0; n < topo->n_nodes; n++)
    o->in_fabric[n] = topo->nodes[n].zone == WEFT_ZONE_ROOT;
}

static void
nics_clear (Nics *o)
{
  g_hash_table_unref (o->server);
  g_hash_table_unref (o->fabric);
  g_hash_table_unref (o->whole);
  g_free (o->in_fabric);
}

/* The least cost from @a to @b inside @a's server (@b there too). */
static uint64_t
in_server (Nics *o, uint32_t a, uint32_t b)
{
  uint64_t *dist = g_hash_table_lookup (o->server, GUINT_TO_POINTER (a));

  if (dist == NULL)
    {
      g_autofree gboolean *keep = g_new0 (gboolean, o->topo->n_nodes);
      for (uint32_t n = 0; n < o->topo->n_nodes; n++)
        keep[n] = o->topo->nodes[n].zone == o->topo->nodes[a].zone;
      dist = dijkstra_over (o->topo, a, keep);
      g_hash_table_insert (o->server, GUINT_TO_POINTER (a), dist);
    }
  return dist[b];
}

/* The least cost from NIC @a to NIC @b through the fabric's switches. */
static uint64_t
through_fabric (Nics *o, uint32_t a, uint32_t b)
{
  uint64_t *dist = g_hash_table_lookup (o->fabric, GUINT_TO_POINTER (a));

  if (dist == NULL)
    {
      dist = dijkstra_over (o->topo, a, o->in_fabric);
      g_hash_table_insert (o->fabric, GUINT_TO_POINTER (a), dist);
    }
  return dist[b];
}

/* GPU i's own NIC in its DGX: NIC i. */
static uint32_t
own_nic (const WeftTopology *topo, uint32_t gpu)
{
  const char *name = topo->nodes[gpu].name, *slash = strrchr (name, '/');
  g_autofree char *server = g_strndup (name, slash - name);
  g_autofree char *nic = g_strdup_printf ("%s/nic%s", server,
                                          slash + strlen ("/gpu"));
  uint32_t id = weft_topology_find_node (topo, nic);

  ck_assert_msg (id != WEFT_NONE, "no NIC %s", nic);
  return id;
}

/* The cost from @from (@origin, or a node of its server on the way) to
 * @dst, in another server. */
static uint64_t
by_own_nics (Nics *o, uint32_t origin, uint32_t from, uint32_t dst)
{
  const WeftTopology *topo = o->topo;
  uint32_t a = own_nic (topo, origin), b = own_nic (topo, dst);
  uint64_t into = in_server (o, b, dst), best = G_MAXUINT64;
  uint64_t across = through_fabric (o, a, b);

  if (across != G_MAXUINT64)
    return in_server (o, from, a) + across + into;
  for (uint32_t g = 0; g < topo->n_nodes; g++)
    if (topo->nodes[g].kind == WEFT_NODE_NIC
        && topo->nodes[g].zone == topo->nodes[from].zone
        && (across = through_fabric (o, g, b)) != G_MAXUINT64)
      best = MIN (best, in_server (o, from, g) + across + into);
  ck_assert (best != G_MAXUINT64);
  return best;
}

static const char *
type_of (const WeftTopology *topo, uint32_t link)
{
  return ((WeftLinkType *) g_ptr_array_index (topo->link_types,
                                              topo->links[link].type))->name;
}

START_TEST (test_nvlink_through_every_nvswitch)
{
  g_autoptr (WeftScenario) s = load ("dgx-h100.yaml");
  g_autoptr (WeftRouting) r = weft_routing_new (s->topo);
  g_autoptr (GArray) path = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  uint32_t src = node (s->topo, "dgx/gpu0"), dst = node (s->topo, "dgx/gpu5");
  uint32_t via[4] = { 0 };

  for (uint64_t flow = 0; flow < 400; flow++)
    {
      ck_assert (weft_routing_path (r, src, dst, flow, path));
      ck_assert_uint_eq (path->len, 2);
      ck_assert_uint_eq (check_path (s->topo, path, src, dst), 2);
      uint32_t l = g_array_index (path, uint32_t, 0);
      ck_assert_str_eq (type_of (s->topo, l), "nvlink4");
      const char *sw = s->topo->nodes[s->topo->links[l].dst].name;
      ck_assert (g_str_has_prefix (sw, "dgx/nvswitch"));
      via[sw[strlen (sw) - 1] - '0']++;
    }
  /* Four equal-cost next hops, each taken by about a quarter of the flows
   * (binomial sd ~8.7 of 100: allow four of them). */
  for (int i = 0; i < 4; i++)
    ck_assert_msg (via[i] >= 65 && via[i] <= 135, "nvswitch%d: %u", i, via[i]);
}
END_TEST

START_TEST (test_remembered_routes_took_no_flow)
{
  /* Two GPUs on one Grace of a GB200 tray reach each other at equal cost
   * through the Grace (inside the tray) or through any of 18 NVSwitch
   * chips (out of it): the flow's hash chooses, so no such route may be
   * remembered for the next flow.  Every flow gets the route a routing
   * that remembers nothing gives it, and both ways are taken. */
  g_autoptr (WeftScenario) s = load ("gb200-nvl72.yaml");
  g_autoptr (WeftRouting) kept = weft_routing_new (s->topo);
  g_autoptr (WeftRouting) fresh = weft_routing_new (s->topo);
  g_autoptr (GArray) a = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  g_autoptr (GArray) b = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  uint32_t src = node (s->topo, "tray0/gpu0"), dst = node (s->topo, "tray0/gpu1");
  guint by_grace = 0;

  weft_routing_set_memo (fresh, FALSE);
  for (uint64_t flow = 0; flow < 200; flow++)
    {
      ck_assert (weft_routing_path (kept, src, dst, flow, a));
      ck_assert (weft_routing_path (fresh, src, dst, flow, b));
      ck_assert_uint_eq (a->len, b->len);
      ck_assert_msg (memcmp (a->data, b->data, a->len * sizeof (uint32_t))
                     == 0, "flow %" G_GUINT64_FORMAT ": another route",
                     flow);
      uint32_t via = s->topo->links[g_array_index (a, uint32_t, 0)].dst;
      by_grace += g_str_has_prefix (s->topo->nodes[via].name, "tray0/grace");
    }
  ck_assert_uint_gt (by_grace, 0);
  ck_assert_uint_lt (by_grace, 200);
}
END_TEST

START_TEST (test_cube_mesh_prefers_nvlink)
{
  g_autoptr (WeftScenario) s = load ("dgx1-v100.yaml");
  g_autoptr (WeftRouting) r = weft_routing_new (s->topo);
  g_autoptr (GArray) path = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  uint32_t src = node (s->topo, "dgx/gpu0"), dst = node (s->topo, "dgx/gpu5");
  gboolean through[8] = { FALSE };

  /* gpu0 and gpu5 share no NVLink; two NVLink hops (through gpu1 or gpu4)
   * beat the PCIe path. */
  for (uint64_t flow = 0; flow < 64; flow++)
    {
      ck_assert (weft_routing_path (r, src, dst, flow, path));
      ck_assert_uint_eq (path->len, 2);
      for (guint i = 0; i < 2; i++)
        ck_assert_str_eq (type_of (s->topo, g_array_index (path, uint32_t, i)),
                          "nvlink2");
      const char *mid = s->topo->nodes[s->topo->links[g_array_index (
                                           path, uint32_t, 0)].dst].name;
      through[mid[strlen (mid) - 1] - '0'] = TRUE;
    }
  ck_assert (through[1] && through[4]);
}
END_TEST

START_TEST (test_pcie_paths)
{
  g_autoptr (WeftScenario) s = load ("pcie-8gpu.yaml");
  g_autoptr (WeftRouting) r = weft_routing_new (s->topo);
  g_autoptr (GArray) path = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  const char *across[] = { "gpu0", "pcie0", "cpu0", "cpu1", "pcie1", "gpu5" };

  ck_assert (weft_routing_path (r, node (s->topo, "gpu0"),
                                node (s->topo, "gpu3"), 0, path));
  ck_assert_uint_eq (path->len, 2);
  ck_assert (weft_routing_path (r, node (s->topo, "gpu0"),
                                node (s->topo, "gpu5"), 0, path));
  ck_assert_uint_eq (path->len, 5);
  for (guint i = 0; i < path->len; i++)
    {
      const WeftLink *l = &s->topo->links[g_array_index (path, uint32_t, i)];
      ck_assert_str_eq (s->topo->nodes[l->src].name, across[i]);
      ck_assert_str_eq (s->topo->nodes[l->dst].name, across[i + 1]);
    }
}
END_TEST

/* What a route from @from (@origin or a node on the way) to @dst should
 * cost: the least over the whole graph, or with @nics (DGX servers joined
 * by a fabric) between servers what NCCL's choice of NICs costs. */
static uint64_t
expected (Nics *nics, uint32_t origin, uint32_t from, uint32_t dst)
{
  const WeftTopology *topo = nics->topo;

  if (from == dst)
    return 0;
  if (nics->in_fabric != NULL
      && topo->nodes[origin].zone != topo->nodes[dst].zone)
    return by_own_nics (nics, origin, from, dst);
  uint64_t *dist = g_hash_table_lookup (nics->whole, GUINT_TO_POINTER (from));
  if (dist == NULL)
    {
      dist = dijkstra (topo, from);
      g_hash_table_insert (nics->whole, GUINT_TO_POINTER (from), dist);
    }
  return dist[dst];
}

/* The first hops from @src to every GPU of @gpus are the links out of
 * @src that start a route of the expected cost, in the order of @src's
 * links. */
static void
check_first_hops (Nics *nics, WeftRouting *r, uint32_t src, const GArray *gpus)
{
  const WeftTopology *topo = nics->topo;
  uint32_t first = topo->out_start[src], n = topo->out_start[src + 1] - first;
  g_autoptr (GArray) hops = g_array_new (FALSE, FALSE, sizeof (uint32_t));

  for (guint j = 0; j < gpus->len; j++)
    {
      uint32_t dst = g_array_index (gpus, uint32_t, j), k = 0;
      uint64_t best = expected (nics, src, src, dst);
      weft_routing_first_hops (r, src, dst, hops);
      for (uint32_t i = 0; i < n && dst != src; i++)
        {
          const WeftLink *l = &topo->links[topo->out_links[first + i]];
          uint64_t rest = expected (nics, src, l->dst, dst);
          if (rest == G_MAXUINT64 || l->cost + rest != best)
            continue;
          ck_assert_msg (k < hops->len && g_array_index (hops, uint32_t, k)
                                              == topo->out_links[first + i],
                         "%s -> %s: first hop %u is not %s -> %s",
                         topo->nodes[src].name, topo->nodes[dst].name, k,
                         topo->nodes[l->src].name, topo->nodes[l->dst].name);
          k++;
        }
      ck_assert_msg (k == hops->len, "%s -> %s: %u first hops, not %u",
                     topo->nodes[src].name, topo->nodes[dst].name, hops->len,
                     k);
    }
}

/* Routes are valid paths of the expected cost (the least over the whole
 * graph; with @rails, between DGX servers, by the GPUs' own NICs), and
 * the first hops are those of such routes. */
static void
check_against_dijkstra (const WeftScenario *s, gboolean rails, int sources,
                        uint64_t seed)
{
  const WeftTopology *topo = s->topo;
  g_autoptr (WeftRouting) r = weft_routing_new (topo);
  g_autoptr (GArray) path = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  g_autoptr (GArray) gpus = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  Nics nics;
  WeftRng rng;

  nics_init (&nics, topo);
  if (!rails)
    g_clear_pointer (&nics.in_fabric, g_free);
  weft_rng_init (&rng, seed, 0);
  for (uint32_t n = 0; n < topo->n_nodes; n++)
    if (topo->nodes[n].kind == WEFT_NODE_GPU)
      g_array_append_val (gpus, n);
  for (int k = 0; k < sources; k++)
    {
      uint32_t src = g_array_index (gpus, uint32_t,
                                    weft_rng_below (&rng, gpus->len));
      for (guint j = 0; j < gpus->len; j++)
        {
          uint32_t dst = g_array_index (gpus, uint32_t, j);
          uint64_t cost = weft_routing_cost (r, src, dst);
          uint64_t want = expected (&nics, src, src, dst);
          ck_assert_msg (cost == want, "%s -> %s: %" G_GUINT64_FORMAT
                         " vs %" G_GUINT64_FORMAT, topo->nodes[src].name,
                         topo->nodes[dst].name, cost, want);
          ck_assert (weft_routing_path (r, src, dst, j, path));
          ck_assert_uint_eq (check_path (topo, path, src, dst), cost);
        }
      check_first_hops (&nics, r, src, gpus);
    }
  nics_clear (&nics);
}

START_TEST (test_rail_fabric_least_cost)
{
  g_autoptr (WeftScenario) s = load ("h100-256-rail.yaml");

  check_against_dijkstra (s, TRUE, 6, 1);
}
END_TEST

START_TEST (test_small_scenarios_least_cost)
{
  const char *files[] = { "dgx1-v100.yaml", "dgx-h100.yaml", "pcie-8gpu.yaml",
                          "gb200-nvl72.yaml" };

  for (guint i = 0; i < G_N_ELEMENTS (files); i++)
    {
      g_autoptr (WeftScenario) s = load (files[i]);
      check_against_dijkstra (s, FALSE, 4, i);
    }
}
END_TEST

START_TEST (test_rail_planes_cross_in_server)
{
  /* Rails as separate planes: a route between rails crosses NVLink or PCIe
   * in the sending or receiving server, never a third server. */
  g_autofree char *dir = g_dir_make_tmp ("weft-route-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "planes.yaml", NULL);
  g_autofree char *text = g_strdup_printf (
      "weft: 1\ninclude: %s/presets/servers.yaml\n"
      "nodes: [{name: 'node[0-3]', template: dgx-h100}]\n"
      "fabrics: [{kind: fat-tree, name: ib, endpoints: 'node[0-3]/nic[0-7]',"
      " rails: 8, planes: true, switch: quantum2, link: ib-ndr}]\n",
      SCENARIOS);
  g_autoptr (GError) error = NULL;

  ck_assert (g_file_set_contents (path, text, -1, NULL));
  g_autoptr (WeftScenario) s = weft_scenario_load (path, &error);
  ck_assert_msg (s != NULL, "%s", error ? error->message : "");
  g_remove (path);
  g_rmdir (dir);

  check_against_dijkstra (s, TRUE, 8, 7);
  g_autoptr (WeftRouting) r = weft_routing_new (s->topo);
  g_autoptr (GArray) links = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  uint32_t src = node (s->topo, "node0/gpu0"), dst = node (s->topo, "node2/gpu5");
  for (uint64_t flow = 0; flow < 50; flow++)
    {
      ck_assert (weft_routing_path (r, src, dst, flow, links));
      for (guint i = 0; i < links->len; i++)
        {
          const char *name = s->topo->nodes[s->topo->links[g_array_index (
                                                links, uint32_t, i)].dst].name;
          ck_assert_msg (g_str_has_prefix (name, "node0/")
                         || g_str_has_prefix (name, "node2/")
                         || g_str_has_prefix (name, "ib/"), "through %s", name);
        }
    }
}
END_TEST

START_TEST (test_fat_tree_ecmp_spread)
{
  g_autoptr (WeftScenario) s = load ("h100-1024-fat-tree.yaml");
  g_autoptr (WeftRouting) r = weft_routing_new (s->topo);
  g_autoptr (GArray) path = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  g_autofree uint32_t *load = g_new (uint32_t, s->topo->n_links);

  /* Switches forward by destination (D-mod-k): for every shift of the 128
   * servers (GPU i of server s to GPU i of server s + k), a permutation, no
   * fabric link carries more flows than it has lanes (a leaf's 32 NICs
   * climb to 16 spines over 2-lane links), so the tree is non-blocking for
   * it.  By flow hashing, 32 flows over 16 spines collide most of the
   * time. */
  for (uint32_t k = 1; k < 128; k++)
    {
      memset (load, 0, s->topo->n_links * sizeof (uint32_t));
      for (uint32_t a = 0; a < 128; a++)
        for (uint32_t g = 0; g < 8; g++)
          {
            g_autofree char *from = g_strdup_printf ("node%u/gpu%u", a, g);
            g_autofree char *to = g_strdup_printf ("node%u/gpu%u",
                                                   (a + k) % 128, g);
            ck_assert (weft_routing_path (r, node (s->topo, from),
                                          node (s->topo, to), a * 8 + g,
                                          path));
            for (guint i = 0; i < path->len; i++)
              load[g_array_index (path, uint32_t, i)]++;
          }
      for (uint32_t l = 0; l < s->topo->n_links; l++)
        {
          const WeftLink *link = &s->topo->links[l];
          if (g_str_has_prefix (s->topo->nodes[link->src].name, "ib/")
              || g_str_has_prefix (s->topo->nodes[link->dst].name, "ib/"))
            ck_assert_msg (load[l] <= link->lanes, "shift %u: %s -> %s "
                           "carries %u flows over %u lanes", k,
                           s->topo->nodes[link->src].name,
                           s->topo->nodes[link->dst].name, load[l],
                           link->lanes);
        }
    }

  /* Random destinations spread evenly over the 16 spines: 3200 routes
   * from one GPU, 200 a spine on average, binomial sd 13.7; every spine
   * within 25% (3.6 sd) of the mean. */
  uint32_t spines[16] = { 0 };
  WeftRng pick;
  weft_rng_init (&pick, 3, 0);
  for (uint64_t flow = 0; flow < 3200; flow++)
    {
      uint32_t b = 4 + (uint32_t) weft_rng_below (&pick, 124);
      g_autofree char *to = g_strdup_printf ("node%u/gpu%u", b,
                                             (uint32_t) weft_rng_below (&pick, 8));
      ck_assert (weft_routing_path (r, node (s->topo, "node0/gpu0"),
                                    node (s->topo, to), flow, path));
      gboolean crossed = FALSE;
      for (guint i = 0; i < path->len; i++)
        {
          const char *name = s->topo->nodes[s->topo->links[g_array_index (
                                                path, uint32_t, i)].dst].name;
          if (g_str_has_prefix (name, "ib/spine"))
            {
              spines[atoi (name + strlen ("ib/spine"))]++;
              crossed = TRUE;
            }
        }
      ck_assert (crossed);
    }
  for (int i = 0; i < 16; i++)
    ck_assert_msg (spines[i] >= 150 && spines[i] <= 250, "spine%d: %u", i,
                   spines[i]);

  /* Route state stays with the fabric: a few thousand routes need cost
   * arrays over the 48 fabric switches for the leaves they enter by, and
   * one table for the server template; nothing grows with GPU pairs (the
   * remembered routes take a fixed number of slots, left out here). */
  weft_routing_set_memo (r, FALSE);
  WeftRng rng;
  weft_rng_init (&rng, 5, 0);
  for (int i = 0; i < 2000; i++)
    {
      g_autofree char *a = g_strdup_printf ("node%u/gpu%u",
                                            (unsigned) weft_rng_below (&rng, 128),
                                            (unsigned) weft_rng_below (&rng, 8));
      g_autofree char *b = g_strdup_printf ("node%u/gpu%u",
                                            (unsigned) weft_rng_below (&rng, 128),
                                            (unsigned) weft_rng_below (&rng, 8));
      ck_assert (weft_routing_path (r, node (s->topo, a), node (s->topo, b), i,
                                    path));
    }
  ck_assert_uint_le (weft_routing_memory (r), 32 * 48 * 4 + 26 * 26 * 4);
}
END_TEST

START_TEST (test_gpu_takes_its_own_nic)
{
  /* In a DGX H100 two GPUs and two NICs share each PCIe switch: GPU i
   * leaves by NIC i and GPU j is entered by NIC j, whatever the flow and
   * wherever the other NICs are, as NCCL picks them.  By cost alone a
   * route would often take another: on rails, GPU 0's neighbour NIC 1
   * reaches rail 1 without a spine; on a 2:1 fat-tree, whose leaves of 43
   * ports split servers, the NICs on the destination's leaf (node5's
   * NICs 0 to 2 are on node0's leaf, 3 to 7 on the next) would take
   * every GPU's traffic over NVLink. */
  const char *files[] = { "h100-1024-fat-tree.yaml", "h100-1024-fat-tree.yaml",
                          "h100-256-rail.yaml" };
  const char *set[][2] = { { NULL }, { "fabrics.0.oversubscription=2:1", NULL },
                           { NULL } };

  for (guint f = 0; f < G_N_ELEMENTS (files); f++)
    {
      g_autofree char *file = g_build_filename (SCENARIOS, files[f], NULL);
      g_autoptr (GError) error = NULL;
      g_autoptr (WeftScenario) s = weft_scenario_load_with (file, set[f], NULL,
                                                            &error);
      ck_assert_msg (s != NULL, "%s", error ? error->message : "");
      g_autoptr (WeftRouting) r = weft_routing_new (s->topo);
      g_autoptr (GArray) path = g_array_new (FALSE, FALSE, sizeof (uint32_t));
      for (uint32_t i = 0; i < 8; i++)
        for (uint32_t j = 0; j < 8; j++)
          {
            g_autofree char *a = g_strdup_printf ("node0/gpu%u", i);
            g_autofree char *b = g_strdup_printf ("node5/gpu%u", j);
            g_autofree char *out = g_strdup_printf ("node0/nic%u", i);
            g_autofree char *in = g_strdup_printf ("node5/nic%u", j);
            for (uint64_t flow = 0; flow < 16; flow++)
              {
                ck_assert (weft_routing_path (r, node (s->topo, a),
                                              node (s->topo, b), flow, path));
                gboolean left = FALSE, entered = FALSE;
                guint nics = 0;
                for (guint k = 0; k < path->len; k++)
                  {
                    const WeftLink *l = &s->topo->links[g_array_index (
                        path, uint32_t, k)];
                    left |= l->dst == node (s->topo, out);
                    entered |= l->dst == node (s->topo, in);
                    nics += s->topo->nodes[l->dst].kind == WEFT_NODE_NIC;
                  }
                ck_assert_msg (left && entered && nics == 2,
                               "%s %s: %s -> %s flow %u", files[f],
                               set[f][0] ? set[f][0] : "", a, b,
                               (unsigned) flow);
              }
          }
    }
}
END_TEST

/* The 1024-GPU fat-tree with its fabric's switches routing by @engine. */
static WeftScenario *
fat_tree_by (const char *engine)
{
  g_autofree char *path = g_build_filename (SCENARIOS,
                                            "h100-1024-fat-tree.yaml", NULL);
  g_autofree char *set = g_strdup_printf ("fabrics.0.routing=%s", engine);
  const char *sets[] = { set, NULL };
  g_autoptr (GError) error = NULL;
  WeftScenario *s = weft_scenario_load_with (path, sets, NULL, &error);

  ck_assert_msg (s != NULL, "%s", error ? error->message : "");
  return s;
}

/* The spine @path climbs to (its index), or -1. */
static int
spine_of (const WeftTopology *topo, const GArray *path, uint32_t *up)
{
  for (guint i = 0; i < path->len; i++)
    {
      uint32_t l = g_array_index (path, uint32_t, i);
      const char *name = topo->nodes[topo->links[l].dst].name;
      if (g_str_has_prefix (name, "ib/spine"))
        {
          *up = l;
          return atoi (name + strlen ("ib/spine"));
        }
    }
  return -1;
}

START_TEST (test_engines_pick_up_ports)
{
  /* From node0/gpu0 to GPU 0 of a server on another leaf, the leaf has 16
   * equal-cost spines to climb to. */
  g_autoptr (GArray) path = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  uint32_t up = WEFT_NONE;

  /* dmodk: the destination chooses, the same spine for every flow and
   * from every source (so every flow to it comes down the same link); the
   * destinations of a leaf climb by distinct spines two at a time (32
   * NICs, 16 spines). */
  g_autoptr (WeftScenario) d = fat_tree_by ("dmodk");
  g_autoptr (WeftRouting) rd = weft_routing_new (d->topo);
  ck_assert (!weft_routing_uses_load (rd));
  uint32_t src = node (d->topo, "node0/gpu0"), dst = node (d->topo,
                                                         "node100/gpu0");
  ck_assert (weft_routing_path (rd, src, dst, 0, path));
  int chosen = spine_of (d->topo, path, &up);
  ck_assert_int_ge (chosen, 0);
  for (uint64_t flow = 1; flow < 64; flow++)
    {
      ck_assert (weft_routing_path (rd, src, dst, flow, path));
      ck_assert_int_eq (spine_of (d->topo, path, &up), chosen);
      ck_assert (weft_routing_flow_free (rd));
    }
  ck_assert (weft_routing_path (rd, node (d->topo, "node9/gpu3"), dst, 0,
                                path));
  ck_assert_int_eq (spine_of (d->topo, path, &up), chosen);
  guint per_spine[16] = { 0 };
  for (uint32_t b = 100; b < 104; b++)
    for (uint32_t g = 0; g < 8; g++)
      {
        g_autofree char *to = g_strdup_printf ("node%u/gpu%u", b, g);
        ck_assert (weft_routing_path (rd, src, node (d->topo, to), 0, path));
        per_spine[spine_of (d->topo, path, &up)]++;
      }
  for (int i = 0; i < 16; i++)
    ck_assert_uint_eq (per_spine[i], 2);

  /* ecmp: the flow chooses, the same spine for the same flow, and 64 flows
   * over 16 spines take most of them. */
  g_autoptr (WeftScenario) e = fat_tree_by ("ecmp");
  g_autoptr (WeftRouting) re = weft_routing_new (e->topo);
  gboolean seen[16] = { FALSE };
  guint taken = 0;
  for (uint64_t flow = 0; flow < 64; flow++)
    {
      ck_assert (weft_routing_path (re, src, dst, flow, path));
      ck_assert (!weft_routing_flow_free (re));
      int sp = spine_of (e->topo, path, &up);
      ck_assert (weft_routing_path (re, src, dst, flow, path));
      ck_assert_int_eq (spine_of (e->topo, path, &up), sp);
      taken += !seen[sp];
      seen[sp] = TRUE;
    }
  ck_assert_uint_ge (taken, 12);

  /* adaptive: on an idle fabric what dmodk takes; with transfers in
   * flight up to that spine, the next idle one after it. */
  g_autoptr (WeftScenario) a = fat_tree_by ("adaptive");
  g_autoptr (WeftRouting) ra = weft_routing_new (a->topo);
  g_autofree uint32_t *load = g_new0 (uint32_t, a->topo->n_links);
  ck_assert (weft_routing_uses_load (ra));
  ck_assert (weft_routing_path (ra, src, dst, 0, path));
  ck_assert_int_eq (spine_of (a->topo, path, &up), chosen);
  weft_routing_set_load (ra, load);
  load[up] = 1;
  ck_assert (weft_routing_path (ra, src, dst, 1, path));
  ck_assert_int_eq (spine_of (a->topo, path, &up), (chosen + 1) % 16);
  ck_assert (!weft_routing_flow_free (ra));
  load[up] = 1;
  ck_assert (weft_routing_path (ra, src, dst, 2, path));
  ck_assert_int_eq (spine_of (a->topo, path, &up), (chosen + 2) % 16);
  /* Equal loads everywhere: the tie goes to dmodk's pick. */
  for (uint32_t l = 0; l < a->topo->n_links; l++)
    load[l] = 2;
  ck_assert (weft_routing_path (ra, src, dst, 3, path));
  ck_assert_int_eq (spine_of (a->topo, path, &up), chosen);
}
END_TEST

static Suite *
routing_suite (void)
{
  Suite *s = suite_create ("routing");
  TCase *tc;

  tc = tcase_create ("in a server");
  tcase_add_test (tc, test_nvlink_through_every_nvswitch);
  tcase_add_test (tc, test_cube_mesh_prefers_nvlink);
  tcase_add_test (tc, test_pcie_paths);
  suite_add_tcase (s, tc);

  tc = tcase_create ("least cost");
  tcase_set_timeout (tc, 120);
  tcase_add_test (tc, test_small_scenarios_least_cost);
  tcase_add_test (tc, test_rail_fabric_least_cost);
  tcase_add_test (tc, test_rail_planes_cross_in_server);
  suite_add_tcase (s, tc);

  tc = tcase_create ("ecmp");
  tcase_set_timeout (tc, 60);
  tcase_add_test (tc, test_fat_tree_ecmp_spread);
  tcase_add_test (tc, test_gpu_takes_its_own_nic);
  tcase_add_test (tc, test_remembered_routes_took_no_flow);
  suite_add_tcase (s, tc);

  tc = tcase_create ("engines");
  tcase_set_timeout (tc, 60);
  tcase_add_test (tc, test_engines_pick_up_ports);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  SRunner *runner = srunner_create (routing_suite ());

  srunner_run_all (runner, CK_NORMAL);
  int failed = srunner_ntests_failed (runner);
  srunner_free (runner);
  return failed == 0 ? 0 : 1;
}
