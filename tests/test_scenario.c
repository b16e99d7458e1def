/* Tests of scenarios: the ready ones, bad input, and mutated input. */
#include "rng.h"
#include "topology/names.h"
#include "topology/scenario.h"
#include "topology/tiers.h"
#include "topology/topo_stats.h"

#include <check.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#define SCENARIOS WEFT_SOURCE_DIR "/scenarios"

/* ---- helpers ---- */

static char *tmp_dir;

static void
setup (void)
{
  tmp_dir = g_dir_make_tmp ("weft-test-XXXXXX", NULL);
  ck_assert_ptr_nonnull (tmp_dir);
}

static void
remove_tree (const char *path)
{
  GDir *dir = g_dir_open (path, 0, NULL);
  const char *name;

  if (dir == NULL)
    {
      g_remove (path);
      return;
    }
  while ((name = g_dir_read_name (dir)) != NULL)
    {
      g_autofree char *child = g_build_filename (path, name, NULL);
      remove_tree (child);
    }
  g_dir_close (dir);
  g_rmdir (path);
}

static void
teardown (void)
{
  remove_tree (tmp_dir);
  g_clear_pointer (&tmp_dir, g_free);
}

static char *
write_file (const char *name, const char *text)
{
  char *path = g_build_filename (tmp_dir, name, NULL);

  ck_assert (g_file_set_contents (path, text, -1, NULL));
  return path;
}

/* Hardware every bad-input case builds on. */
#define HEADER                                                                \
  "weft: 1\n"                                                                 \
  "link_types:\n"                                                             \
  "  nv: {port: nvlink, bandwidth: 25GB/s}\n"                                 \
  "  pci: {port: pcie, bandwidth: 64GB/s}\n"                                  \
  "devices:\n"                                                                \
  "  g: {kind: gpu, ports: {nvlink: 2, pcie: 1}, reduce_bandwidth: 1TB/s}\n"  \
  "  s: {kind: switch, ports: {nvlink: 4}}\n"

/* Load @text as t.yaml and return the error message (or fail). */
static char *
load_error (const char *text)
{
  g_autofree char *path = write_file ("t.yaml", text);
  g_autoptr (GError) error = NULL;
  g_autoptr (WeftScenario) scenario = weft_scenario_load (path, &error);

  ck_assert_msg (scenario == NULL, "loaded: %s", text);
  ck_assert_ptr_nonnull (error);
  /* Strip the temporary directory so that tests can compare. */
  const char *msg = error->message;
  if (g_str_has_prefix (msg, tmp_dir))
    msg += strlen (tmp_dir) + 1;
  return g_strdup (msg);
}

#define EXPECT_ERROR(text, expected)                                          \
  do {                                                                        \
    g_autofree char *got_ = load_error (text);                                \
    ck_assert_msg (strstr (got_, expected) != NULL, "expected '%s'\n got '%s'", \
                   expected, got_);                                           \
  } while (0)

/* ---- the ready scenarios ---- */

typedef struct {
  const char *file;
  uint32_t gpus, switches, nics, cpus;
  const char *nvlink_type;
  uint64_t nvlink_lanes;        /* over the whole scenario */
  double nvlink_per_gpu;        /* B/s one way, from the hardware figures */
  double network_per_gpu;
} Expect;

/* NVLink: 25 GB/s per link (50 for NVLink5) carrying 256 B in 272. */
#define NV4 (25e9 * 256 / 272)
#define NV5 (50e9 * 256 / 272)
#define NDR (50e9 * 4096 / 4122)
#define XDR (100e9 * 4096 / 4122)

static const Expect ready[] = {
  { "dgx1-v100.yaml", 8, 4, 0, 2, "nvlink2", 24, 6 * NV4, 0 },
  { "dgx-a100.yaml", 8, 10, 8, 2, "nvlink3", 96, 12 * NV4, 0 },
  { "dgx-h100.yaml", 8, 8, 8, 2, "nvlink4", 144, 18 * NV4, 0 },
  { "hgx-b200.yaml", 8, 6, 8, 2, "nvlink5", 144, 18 * NV5, 0 },
  { "gb200-nvl72.yaml", 72, 18, 72, 36, "nvlink5", 72 * 18, 18 * NV5, 0 },
  { "pcie-8gpu.yaml", 8, 2, 0, 2, NULL, 0, 0, 0 },
  /* 8 leaves (one per rail) and 4 spines over 32 servers' 8 switches. */
  { "h100-256-rail.yaml", 256, 32 * 8 + 12, 256, 64, "nvlink4", 32 * 144,
    18 * NV4, NDR },
  /* 8 leaves of four servers and 4 spines. */
  { "h100-256-fat-tree.yaml", 256, 32 * 8 + 12, 256, 64, "nvlink4", 32 * 144,
    18 * NV4, NDR },
  /* 32 leaves and 16 spines. */
  { "h100-1024-fat-tree.yaml", 1024, 128 * 8 + 48, 1024, 256, "nvlink4",
    128 * 144, 18 * NV4, NDR },
  /* NVL72 racks: 18 NVSwitch chips, 72 NICs and 36 Grace CPUs a rack, and
   * the leaves and spines the rail-optimized generator lays out for four
   * rails (Quantum-2 has 64 ports, Quantum-X800 144). */
  { "gb200-nvl72-x2-ndr.yaml", 144, 2 * 18 + 12, 144, 72, "nvlink5",
    2 * 72 * 18, 18 * NV5, NDR },
  { "gb200-nvl72-x8-ndr.yaml", 576, 8 * 18 + 36, 576, 288, "nvlink5",
    8 * 72 * 18, 18 * NV5, NDR },
  { "gb200-nvl72-x18-ndr.yaml", 1296, 18 * 18 + 76, 1296, 648, "nvlink5",
    18 * 72 * 18, 18 * NV5, NDR },
  /* 832 fabric switches in three levels. */
  { "gb200-nvl72-x128-ndr.yaml", 9216, 128 * 18 + 832, 9216, 4608, "nvlink5",
    128 * 72 * 18, 18 * NV5, NDR },
  { "gb200-nvl72-x2-xdr.yaml", 144, 2 * 18 + 6, 144, 72, "nvlink5",
    2 * 72 * 18, 18 * NV5, XDR },
  { "gb200-nvl72-x8-xdr.yaml", 576, 8 * 18 + 12, 576, 288, "nvlink5",
    8 * 72 * 18, 18 * NV5, XDR },
  { "gb200-nvl72-x18-xdr.yaml", 1296, 18 * 18 + 32, 1296, 648, "nvlink5",
    18 * 72 * 18, 18 * NV5, XDR },
  /* 8 planes of 512 leaves, 16 pods x 32 aggregation switches and 32 core
   * groups of 8. */
  { "h100-131072-fat-tree.yaml", 131072, 16384 * 8 + 8 * (512 + 512 + 256),
    131072, 32768, "nvlink4", 16384 * 144, 18 * NV4, NDR },
};

static uint64_t
lanes_of (const WeftTopology *topo, const char *type_name)
{
  uint32_t type;
  uint64_t lanes = 0;

  if (weft_topology_link_type (topo, type_name, &type) == NULL)
    return 0;
  for (uint32_t l = 0; l < topo->n_links; l += 2)
    if (topo->links[l].type == type)
      lanes += topo->links[l].lanes;
  return lanes;
}

START_TEST (test_ready_scenario)
{
  const Expect *e = &ready[_i];
  g_autofree char *path = g_build_filename (SCENARIOS, e->file, NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (WeftScenario) scenario = weft_scenario_load (path, &error);

  ck_assert_msg (scenario != NULL, "%s", error ? error->message : "");
  const WeftTopology *topo = scenario->topo;
  ck_assert_uint_eq (weft_topology_count (topo, WEFT_NODE_GPU), e->gpus);
  ck_assert_uint_eq (weft_topology_count (topo, WEFT_NODE_SWITCH), e->switches);
  ck_assert_uint_eq (weft_topology_count (topo, WEFT_NODE_NIC), e->nics);
  ck_assert_uint_eq (weft_topology_count (topo, WEFT_NODE_CPU), e->cpus);
  if (e->nvlink_type)
    ck_assert_uint_eq (lanes_of (topo, e->nvlink_type), e->nvlink_lanes);

  WeftTopoStats stats;
  weft_topo_stats (topo, 256, &stats);
  ck_assert_double_eq_tol (stats.nvlink_min, e->nvlink_per_gpu, 1e3);
  ck_assert_double_eq_tol (stats.nvlink_max, e->nvlink_per_gpu, 1e3);
  ck_assert_double_eq_tol (stats.network_max, e->network_per_gpu, 1e3);
}
END_TEST

START_TEST (test_dgx_h100_lanes)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (WeftScenario) scenario = weft_scenario_load (
      SCENARIOS "/dgx-h100.yaml", &error);
  const WeftTopology *topo = scenario->topo;
  const uint32_t expected[4] = { 5, 4, 4, 5 };

  /* Every GPU reaches the four NVSwitch chips over 5, 4, 4 and 5 lanes. */
  for (int g = 0; g < 8; g++)
    {
      g_autofree char *name = g_strdup_printf ("dgx/gpu%d", g);
      uint32_t gpu = weft_topology_find_node (topo, name);
      for (int s = 0; s < 4; s++)
        {
          g_autofree char *sw_name = g_strdup_printf ("dgx/nvswitch%d", s);
          uint32_t sw = weft_topology_find_node (topo, sw_name);
          uint32_t lanes = 0;
          for (uint32_t i = topo->out_start[gpu]; i < topo->out_start[gpu + 1];
               i++)
            if (topo->links[topo->out_links[i]].dst == sw)
              lanes += topo->links[topo->out_links[i]].lanes;
          ck_assert_uint_eq (lanes, expected[s]);
        }
    }
}
END_TEST

START_TEST (test_fat_tree_bisection_closed_form)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (WeftScenario) scenario = weft_scenario_load (
      SCENARIOS "/h100-1024-fat-tree.yaml", &error);

  /* Non-blocking: half of the 1024 NICs can send to the other half at full
   * rate, so the bisection is 512 NDR links. */
  ck_assert_double_eq_tol (weft_topo_bisection (scenario->topo), 512 * NDR,
                           1e3);
}
END_TEST

/* ---- generators ---- */

#define GEN_HEADER                                                            \
  "weft: 1\n"                                                                 \
  "link_types:\n"                                                             \
  "  l: {port: ib, bandwidth: 100Gb/s}\n"                                     \
  "devices:\n"                                                                \
  "  host: {kind: gpu, ports: {ib: 6}, reduce_bandwidth: 1TB/s}\n"            \
  "  sw4: {kind: switch, ports: {ib: 4}}\n"                                   \
  "  sw8: {kind: switch, ports: {ib: 8}}\n"                                   \
  "  big: {kind: switch, ports: {ib: 64}}\n"

#define BW 12.5e9               /* 100 Gb/s with no overhead */

static WeftScenario *
load_text (const char *text)
{
  g_autofree char *path = write_file ("gen.yaml", text);
  g_autoptr (GError) error = NULL;
  WeftScenario *scenario = weft_scenario_load (path, &error);

  ck_assert_msg (scenario != NULL, "%s", error ? error->message : "");
  return scenario;
}

static uint32_t
count_prefix (const WeftTopology *topo, const char *prefix)
{
  uint32_t n = 0;

  for (uint32_t i = 0; i < topo->n_nodes; i++)
    n += g_str_has_prefix (topo->nodes[i].name, prefix);
  return n;
}

START_TEST (test_ring_torus_mesh_star)
{
  struct {
    const char *fabric;
    uint32_t hosts, links, switches;
  } cases[] = {
    { "{kind: ring, nodes: 'h[0-7]', link: l}", 8, 8, 0 },
    { "{kind: ring, nodes: 'h[0-1]', link: l}", 2, 1, 0 },
    { "{kind: torus, nodes: 'h[0-15]', dims: [4, 4], link: l}", 16, 32, 0 },
    { "{kind: torus, nodes: 'h[0-7]', dims: [2, 2, 2], link: l}", 8, 12, 0 },
    { "{kind: torus, nodes: 'h[0-26]', dims: [3, 3, 3], link: l}", 27, 81, 0 },
    { "{kind: full-mesh, nodes: 'h[0-4]', link: l}", 5, 10, 0 },
    { "{kind: star, name: sw, nodes: 'h[0-3]', switch: sw4, link: l}", 4, 4, 1 },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *text = g_strdup_printf (
          GEN_HEADER "nodes: [{name: 'h[0-%u]', device: host}]\n"
                     "fabrics: [%s]\n",
          cases[i].hosts - 1, cases[i].fabric);
      g_autoptr (WeftScenario) s = load_text (text);
      ck_assert_msg (s->topo->n_links / 2 == cases[i].links, "%s: %u links",
                     cases[i].fabric, s->topo->n_links / 2);
      ck_assert_uint_eq (weft_topology_count (s->topo, WEFT_NODE_SWITCH),
                         cases[i].switches);
    }
}
END_TEST

START_TEST (test_fat_tree_shapes)
{
  /* Radix 8, non-blocking: 4 hosts per leaf, 8 leaves, 4 spines of one link
   * to each leaf; half the hosts reach the other half at full rate. */
  g_autoptr (WeftScenario) a = load_text (
      GEN_HEADER "nodes: [{name: 'h[0-31]', device: host}]\n"
      "fabrics: [{kind: fat-tree, name: ft, endpoints: 'h[0-31]', switch: sw8,"
      " link: l}]\n");
  ck_assert_uint_eq (count_prefix (a->topo, "ft/leaf"), 8);
  ck_assert_uint_eq (count_prefix (a->topo, "ft/spine"), 4);
  ck_assert_double_eq_tol (weft_topo_bisection (a->topo), 16 * BW, 1);

  /* 3:1 oversubscribed: 6 hosts and 2 uplinks per leaf; 48 hosts fill 8
   * leaves, and the bisection is (N/2) * bw * up / down = 24 * bw / 3. */
  g_autoptr (WeftScenario) b = load_text (
      GEN_HEADER "nodes: [{name: 'h[0-47]', device: host}]\n"
      "fabrics: [{kind: fat-tree, name: ft, endpoints: 'h[0-47]', switch: sw8,"
      " link: l, oversubscription: '3:1'}]\n");
  ck_assert_uint_eq (count_prefix (b->topo, "ft/leaf"), 8);
  ck_assert_double_eq_tol (weft_topo_bisection (b->topo), 24 * BW / 3, 1);

  /* The k = 4 three-level fat-tree of Al-Fares et al.: 16 hosts, 4 pods of
   * 2 edge and 2 aggregation switches, 4 cores: 5k^2/4 = 20 switches, and
   * full bisection. */
  g_autoptr (WeftScenario) c = load_text (
      GEN_HEADER "nodes: [{name: 'h[0-15]', device: host}]\n"
      "fabrics: [{kind: fat-tree, name: ft, endpoints: 'h[0-15]', switch: sw4,"
      " link: l, levels: 3}]\n");
  ck_assert_uint_eq (weft_topology_count (c->topo, WEFT_NODE_SWITCH), 20);
  ck_assert_uint_eq (count_prefix (c->topo, "ft/core"), 4);
  ck_assert_uint_eq (count_prefix (c->topo, "ft/pod3/agg"), 2);
  ck_assert_double_eq_tol (weft_topo_bisection (c->topo), 8 * BW, 1);
}
END_TEST

/* The tier of @topo's tiers named @name (which must be there). */
static const WeftTier *
tier (const WeftTiers *tiers, const char *name)
{
  for (uint32_t t = 0; t < tiers->n_tiers; t++)
    if (strcmp (tiers->tiers[t].name, name) == 0)
      return &tiers->tiers[t];
  ck_abort_msg ("no tier %s", name);
  return NULL;
}

START_TEST (test_tiers)
{
  /* The k = 4 three-level tree of hosts with network ports: 16 host links
   * to the leaves, 16 leaf-aggregation and 16 aggregation-core links, each
   * tier as wide as the next; the host's direction up, the leaf's down. */
  g_autoptr (WeftScenario) c = load_text (
      GEN_HEADER "nodes: [{name: 'h[0-15]', device: host}]\n"
      "fabrics: [{kind: fat-tree, name: ft, endpoints: 'h[0-15]', switch: sw4,"
      " link: l, levels: 3}]\n");
  g_autoptr (WeftTiers) t = weft_tiers_new (c->topo);
  const char *names[] = { "leaf", "spine", "core" };
  ck_assert_uint_eq (t->n_tiers, 3);
  for (uint32_t i = 0; i < 3; i++)
    {
      ck_assert_str_eq (t->tiers[i].name, names[i]);
      ck_assert_uint_eq (t->tiers[i].links, 16);
      ck_assert_double_eq_tol (t->tiers[i].bandwidth, 16 * BW, 1);
      ck_assert_double_eq_tol (weft_tiers_oversubscription (t, i),
                               i < 2 ? 1 : 0, 1e-9);
      ck_assert_int_gt (weft_tier_order (names[i]),
                        weft_tier_order (i ? names[i - 1] : "GPU-NIC"));
    }
  uint32_t h0 = weft_topology_find_node (c->topo, "h0");
  uint32_t out = c->topo->out_links[c->topo->out_start[h0]];
  ck_assert_uint_eq (t->of_link[out], 0);
  ck_assert_uint_eq (t->up[out], 1);
  ck_assert_uint_eq (t->up[out ^ 1], 0);

  /* 3:1: six hosts and two uplinks a leaf, 48 hosts on 8 leaves. */
  g_autoptr (WeftScenario) b = load_text (
      GEN_HEADER "nodes: [{name: 'h[0-47]', device: host}]\n"
      "fabrics: [{kind: fat-tree, name: ft, endpoints: 'h[0-47]', switch: sw8,"
      " link: l, oversubscription: '3:1'}]\n");
  g_autoptr (WeftTiers) tb = weft_tiers_new (b->topo);
  ck_assert_uint_eq (tier (tb, "leaf")->links, 48);
  ck_assert_uint_eq (tier (tb, "spine")->links, 16);
  ck_assert_double_eq_tol (weft_tiers_oversubscription (tb, 0), 3, 1e-9);

  /* Complete trees: every leaf full, every pod whole.  And 44 hosts at 3:1,
   * whose last leaf holds two: a full leaf's six hosts bring 75 GB/s, the
   * last leaf's two 25. */
  g_autofree char *why = NULL;
  ck_assert (weft_tiers_complete (c->topo, t, NULL));
  ck_assert (weft_tiers_complete (b->topo, tb, NULL));
  g_autoptr (WeftScenario) p = load_text (
      GEN_HEADER "nodes: [{name: 'h[0-43]', device: host}]\n"
      "fabrics: [{kind: fat-tree, name: ft, endpoints: 'h[0-43]', switch: sw8,"
      " link: l, oversubscription: '3:1'}]\n");
  g_autoptr (WeftTiers) tp = weft_tiers_new (p->topo);
  ck_assert (!weft_tiers_complete (p->topo, tp, &why));
  ck_assert_str_eq (why, "its leaf switches take in 25.0 to 75.0 GB/s from "
                         "below");

  /* A ring of GPUs over NVLink: GPU to GPU, no oversubscription. */
  g_autoptr (WeftScenario) r = load_text (
      HEADER "nodes: [{name: 'g[0-3]', device: g}]\n"
      "fabrics: [{kind: ring, nodes: 'g[0-3]', link: nv}]\n");
  g_autoptr (WeftTiers) tr = weft_tiers_new (r->topo);
  ck_assert_uint_eq (tr->n_tiers, 1);
  ck_assert_str_eq (tr->tiers[0].name, "GPU-GPU");
  ck_assert_uint_eq (tr->tiers[0].links, 4);
  ck_assert_double_eq (weft_tiers_oversubscription (tr, 0), 0);

  /* A DGX H100 alone: its GPUs' NVLinks to the NVSwitch chips, its NICs'
   * PCIe links with no network above them, and the rest of PCIe and the
   * CPUs' link. */
  g_autofree char *dgx = g_build_filename (SCENARIOS, "dgx-h100.yaml", NULL);
  g_autoptr (WeftScenario) d = weft_scenario_load (dgx, NULL);
  g_autoptr (WeftTiers) td = weft_tiers_new (d->topo);
  ck_assert_uint_eq (td->n_tiers, 3);
  ck_assert_uint_eq (tier (td, "GPU-switch")->links, 32);
  ck_assert_double_eq_tol (tier (td, "GPU-switch")->bandwidth, 8 * 18 * NV4,
                           1);
  ck_assert_uint_eq (tier (td, "GPU-NIC")->links, 8);
  ck_assert_uint_eq (tier (td, "other")->links, 13);
  ck_assert_int_eq (tier (td, "GPU-NIC")->above, -1);
}
END_TEST

START_TEST (test_rail_optimized_leaves)
{
  /* 8 servers of 2 rails under radix-8 switches: leaf r of each unit of 4
   * servers joins NIC r of those servers only. */
  g_autoptr (WeftScenario) s = load_text (
      GEN_HEADER
      "templates:\n"
      "  srv: {nodes: [{name: 'nic[0-1]', device: host}]}\n"
      "nodes: [{name: 'srv[0-7]', template: srv}]\n"
      "fabrics: [{kind: rail-optimized, name: r, endpoints: 'srv[0-7]/nic[0-1]',"
      " rails: 2, switch: sw8, link: l}]\n");
  const WeftTopology *topo = s->topo;

  ck_assert_uint_eq (count_prefix (topo, "r/leaf"), 4);
  for (int leaf = 0; leaf < 4; leaf++)
    {
      g_autofree char *name = g_strdup_printf ("r/leaf%d", leaf);
      g_autofree char *rail = g_strdup_printf ("/nic%d", leaf % 2);
      uint32_t id = weft_topology_find_node (topo, name), hosts = 0;
      for (uint32_t i = topo->out_start[id]; i < topo->out_start[id + 1]; i++)
        {
          const WeftNode *peer = &topo->nodes[topo->links[topo->out_links[i]].dst];
          if (peer->kind == WEFT_NODE_GPU)
            {
              ck_assert_msg (g_str_has_suffix (peer->name, rail), "%s on %s",
                             peer->name, name);
              hosts++;
            }
        }
      ck_assert_uint_eq (hosts, 4);
    }
}
END_TEST

/* ---- features of the format ---- */

START_TEST (test_include_and_override)
{
  g_free (write_file ("base.yaml", HEADER));
  g_autoptr (WeftScenario) s = load_text (
      "weft: 1\n"
      "include: base.yaml\n"
      "link_types:\n"
      "  nv: {override: true, port: nvlink, bandwidth: 50GB/s}\n"
      "nodes: [{name: 'g[0-1]', device: g}]\n"
      "links: [{a: g0, b: g1, type: nv, lanes: 2}]\n");
  ck_assert_double_eq_tol (s->topo->links[0].bandwidth, 2 * 50e9 * 256 / 256,
                           1);

  /* A file reached twice (base.yaml directly and through mid.yaml) is
   * read once: its definitions are not taken for a second definition. */
  g_free (write_file ("mid.yaml", "weft: 1\ninclude: base.yaml\n"));
  g_autoptr (WeftScenario) d = load_text (
      "weft: 1\n"
      "include: [base.yaml, mid.yaml]\n"
      "nodes: [{name: 'g[0-1]', device: g}]\n"
      "links: [{a: g0, b: g1, type: nv}]\n");
  ck_assert_uint_eq (d->topo->n_links, 2);
}
END_TEST

START_TEST (test_templates_and_ranges)
{
  g_autoptr (WeftScenario) s = load_text (
      HEADER
      "templates:\n"
      "  pair:\n"
      "    nodes: [{name: 'g[0-1]', device: g}, {name: sw, device: s}]\n"
      "    links: [{a: 'g[0-1]', b: sw, type: nv}]\n"
      "nodes: [{name: 'node[0-2]', template: pair}]\n"
      "links: [{a: 'node[0-1]/g0:pcie', b: 'node[1-2]/g1:pcie', type: pci}]\n");
  const WeftTopology *topo = s->topo;

  ck_assert_uint_eq (topo->n_nodes, 9);
  ck_assert_uint_ne (weft_topology_find_node (topo, "node2/sw"), WEFT_NONE);
  ck_assert_uint_eq (topo->n_zones, 3);
  ck_assert_uint_eq (topo->n_links / 2, 6 + 2);
  ck_assert_str_eq (topo->nodes[topo->links[12].src].name, "node0/g0");
  ck_assert_str_eq (topo->nodes[topo->links[12].dst].name, "node1/g1");
}
END_TEST

/* ---- bad input: one clear message each ---- */

START_TEST (test_bad_syntax)
{
  EXPECT_ERROR ("weft: 1\nnodes: [\n", "t.yaml:3:1: YAML syntax error");
}
END_TEST

START_TEST (test_bad_unknown_key)
{
  EXPECT_ERROR (HEADER "nodez: []\n",
                "t.yaml:8:1: unknown key 'nodez'; did you mean 'nodes'?");
  EXPECT_ERROR ("weft: 1\nlink_types:\n  x: {port: ib, bandwith: 1Gb/s}\n",
                "t.yaml:3:17: unknown key 'bandwith'; did you mean "
                "'bandwidth'?");
}
END_TEST

START_TEST (test_bad_units)
{
  EXPECT_ERROR ("weft: 1\nlink_types:\n  x: {port: ib, bandwidth: 400}\n",
                "t.yaml:3:28: '400' has no unit; a rate needs one of");
  EXPECT_ERROR ("weft: 1\nlink_types:\n  x: {port: ib, bandwidth: 400Gbps}\n",
                "t.yaml:3:28: '400Gbps' has an unknown rate unit 'Gbps'");
  EXPECT_ERROR ("weft: 1\nlink_types:\n"
                "  x: {port: ib, bandwidth: 1Gb/s, latency: 5}\n",
                "t.yaml:3:44: '5' has no unit; a time needs one of: ps ns us "
                "ms s");
}
END_TEST

START_TEST (test_bad_names)
{
  EXPECT_ERROR (HEADER "nodes: [{name: a, device: gpu-x}]\n",
                "t.yaml:8:27: unknown device 'gpu-x'");
  EXPECT_ERROR (HEADER "nodes: [{name: a, device: gg}]\n",
                "unknown device 'gg'; did you mean 'g'?");
  EXPECT_ERROR ("weft: 1\ndevices:\n  d: {kind: tpu, ports: {}}\n",
                "t.yaml:3:13: unknown kind 'tpu'; valid: gpu, switch, nic, "
                "cpu");
  EXPECT_ERROR (HEADER "nodes: [{name: a, template: srv}]\n",
                "t.yaml:8:29: unknown template 'srv'");
  EXPECT_ERROR (HEADER "nodes: [{name: 'g[0-1]', device: g}]\n"
                "links: [{a: g0, b: g1, type: nvl}]\n",
                "t.yaml:9:30: unknown link type 'nvl'; did you mean 'nv'?");
  EXPECT_ERROR (HEADER "nodes: [{name: 'g[0-1]', device: g}]\n"
                "fabrics: [{kind: rings, nodes: 'g[0-1]', link: nv}]\n",
                "t.yaml:9:18: unknown fabric kind 'rings'; did you mean "
                "'ring'?");
  /* Instances of instances are held to the cap on names: refused once
   * the first instance shows what they would come to. */
  EXPECT_ERROR (HEADER "templates:\n  rack:\n    nodes: [{name: 'g[0-9999]', "
                "device: g}]\nnodes: [{name: 'r[0-9999]', template: rack}]\n",
                "t.yaml:11:16: the scenario declares more than 10000000 nodes "
                "(10000 instances of 10000 nodes here)");
}
END_TEST

START_TEST (test_name_patterns)
{
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GError) error = NULL;

  ck_assert (weft_names_expand ("n[0-1]/g[2,4-5]", names, &error));
  ck_assert_uint_eq (names->len, 6);
  ck_assert_str_eq (g_ptr_array_index (names, 0), "n0/g2");
  ck_assert_str_eq (g_ptr_array_index (names, 5), "n1/g5");
  const char *bad[] = { "g[3-1]", "g[0-1", "g0-1]", "g[a]", "",
                        "g[0-99999999]", "g[111111111111111111119]",
                        "g[18446744073709551615]",
                        "g[1-1111111111111111111111]" };
  for (guint i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      g_clear_error (&error);
      ck_assert_msg (!weft_names_expand (bad[i], names, &error), "%s",
                     bad[i]);
      ck_assert_msg (g_error_matches (error, WEFT_TOPOLOGY_ERROR,
                                      WEFT_TOPOLOGY_ERROR_NAME), "%s: %s",
                     bad[i], error->message);
    }
}
END_TEST

START_TEST (test_bad_links)
{
  EXPECT_ERROR (HEADER "nodes: [{name: 'g[0-1]', device: g}]\n"
                "links: [{a: g0, b: g7, type: nv}]\n",
                "t.yaml:9:20: no node named 'g7'");
  EXPECT_ERROR (HEADER "nodes: [{name: 'g[0-1]', device: g}]\n"
                "links: [{a: 'g0:eth', b: g1, type: nv}]\n",
                "t.yaml:9:9: 'g0' (g) has no eth port; its ports: nvlink, "
                "pcie");
  EXPECT_ERROR (HEADER "nodes: [{name: 'g[0-1]', device: g}]\n"
                "links: [{a: g0, b: g1, type: nv, lanes: 3}]\n",
                "t.yaml:9:9: 'g0' (g) has 2 nvlink ports and 0 are taken; this "
                "link needs 3 more");
  EXPECT_ERROR (HEADER "nodes: [{name: 'g[0-2]', device: g}, "
                "{name: sw, device: s}]\n"
                "links: [{a: 'g[0-2]', b: sw, type: nv, lanes: 2}]\n",
                "'sw' (s) has 4 nvlink ports and 4 are taken; this link needs "
                "2 more");
  EXPECT_ERROR (HEADER "nodes: [{name: 'g[0-2]', device: g}]\n"
                "links: [{a: 'g[0-2]', b: 'g[0-1]', type: nv}]\n",
                "'a' names 3 nodes and 'b' 2");
}
END_TEST

START_TEST (test_bad_duplicates)
{
  EXPECT_ERROR (HEADER "nodes: [{name: 'g[0-1]', device: g}, "
                "{name: g1, device: s}]\n",
                "t.yaml:8:45: duplicate node name 'g1' (first declared at ");
  EXPECT_ERROR (HEADER "link_types:\n  nv: {port: nvlink, bandwidth: 1GB/s}\n",
                "t.yaml:8:1: duplicate key 'link_types'");
  g_free (write_file ("base.yaml", HEADER));
  EXPECT_ERROR ("weft: 1\ninclude: base.yaml\nlink_types:\n"
                "  nv: {port: nvlink, bandwidth: 50GB/s}\n",
                "t.yaml:4:3: link type 'nv' is already defined at ");
  EXPECT_ERROR ("weft: 1\nlink_types:\n"
                "  nv: {override: true, port: nvlink, bandwidth: 50GB/s}\n",
                "t.yaml:3:18: link type 'nv' overrides nothing");
}
END_TEST

START_TEST (test_bad_isolated_gpu)
{
  EXPECT_ERROR (HEADER "nodes: [{name: 'g[0-2]', device: g}]\n"
                "links: [{a: g0, b: g1, type: nv}]\n",
                "t.yaml:8:16: GPU 'g2' cannot reach any other GPU");
  /* Two islands of two GPUs: every pair must be joined, or a collective
   * over all of them has no route. */
  EXPECT_ERROR (HEADER "nodes: [{name: 'g[0-3]', device: g}]\n"
                "links: [{a: g0, b: g1, type: nv}, {a: g2, b: g3, type: nv}]\n",
                "t.yaml:8:16: GPUs 'g0' and 'g2' have no path of links between "
                "them");
}
END_TEST

START_TEST (test_bad_includes)
{
  g_free (write_file ("a.yaml", "weft: 1\ninclude: b.yaml\n"));
  g_free (write_file ("b.yaml", "weft: 1\ninclude: a.yaml\n"));
  EXPECT_ERROR ("weft: 1\ninclude: a.yaml\n", "b.yaml:2:10: include cycle: ");
  EXPECT_ERROR ("weft: 1\ninclude: [missing.yaml]\n",
                "t.yaml:2:11: ");
  EXPECT_ERROR ("link_types: {}\n", "t.yaml:1:1: missing key 'weft'");
  EXPECT_ERROR ("weft: 2\n", "t.yaml:1:7: format version '2' is not one this "
                "weft reads");
}
END_TEST

START_TEST (test_bad_generators)
{
  EXPECT_ERROR (GEN_HEADER "nodes: [{name: 'h[0-7]', device: host}]\n"
                "fabrics: [{kind: torus, nodes: 'h[0-7]', dims: [3, 3], "
                "link: l}]\n",
                "the dimensions make 9 positions but 'nodes' names 8 nodes");
  EXPECT_ERROR (GEN_HEADER "nodes: [{name: 'h[0-99]', device: host}]\n"
                "fabrics: [{kind: fat-tree, name: f, endpoints: 'h[0-99]', "
                "switch: sw4, link: l}]\n",
                "100 endpoints need 50 leaf switches, more than a 2-level tree "
                "of radix 4 can join; use levels: 3");
  EXPECT_ERROR (GEN_HEADER "nodes: [{name: 'h[0-3]', device: host}]\n"
                "fabrics: [{kind: star, name: s, nodes: 'h[0-3]', switch: host,"
                " link: l}]\n",
                "device 'host' is a gpu, not a switch");
  EXPECT_ERROR (GEN_HEADER "nodes: [{name: 'h[0-3]', device: host}]\n"
                "fabrics: [{kind: star, name: s/x, nodes: 'h[0-3]', "
                "switch: sw4, link: l}]\n",
                "t.yaml:10:30: a fabric name cannot be empty or hold '[', "
                "']', ':' or '/'");
  /* Routing engines: by name, and only for fabrics with switches. */
  EXPECT_ERROR (GEN_HEADER "nodes: [{name: 'h[0-3]', device: host}]\n"
                "fabrics: [{kind: fat-tree, name: f, endpoints: 'h[0-3]', "
                "switch: sw8, link: l, routing: sideways}]\n",
                "t.yaml:10:89: unknown routing engine 'sideways'; valid: "
                "dmodk, ecmp, adaptive");
  EXPECT_ERROR (GEN_HEADER "nodes: [{name: 'h[0-3]', device: host}]\n"
                "fabrics: [{kind: ring, nodes: 'h[0-3]', link: l, "
                "routing: ecmp}]\n",
                "t.yaml:10:50: a ring fabric makes no switches to route; "
                "'routing' is for star, fat-tree and rail-optimized fabrics");
}
END_TEST

/* ---- mutated input never crashes the loader ---- */

static void
mutate_and_load (const char *name, const char *text, size_t len, WeftRng *rng,
                 int rounds)
{
  g_autofree char *copy = g_malloc (len + 64);

  for (int r = 0; r < rounds; r++)
    {
      size_t n = len;
      memcpy (copy, text, len);
      switch (weft_rng_below (rng, 4))
        {
        case 0: /* truncate */
          n = weft_rng_below (rng, len + 1);
          break;
        case 1: /* flip bytes */
          for (int k = 0; k < 1 + (int) weft_rng_below (rng, 4); k++)
            copy[weft_rng_below (rng, len)] = "0123456789[]{}:,-'\"x #\n&*"
                [weft_rng_below (rng, 25)];
          break;
        case 2: /* delete a line */
          {
            size_t at = weft_rng_below (rng, len);
            char *eol = memchr (copy + at, '\n', len - at);
            if (eol)
              {
                size_t cut = (size_t) (eol - (copy + at)) + 1;
                memmove (copy + at, eol + 1, len - at - cut);
                n = len - cut;
              }
            break;
          }
        default: /* duplicate a span */
          {
            size_t at = weft_rng_below (rng, len), span = MIN (40, len - at);
            memmove (copy + at + span, copy + at, len - at);
            n = len + span;
            break;
          }
        }
      g_autofree char *path = g_build_filename (tmp_dir, name, NULL);
      ck_assert (g_file_set_contents (path, copy, (gssize) n, NULL));
      g_autoptr (GError) error = NULL;
      g_autofree char *scenario = g_build_filename (tmp_dir, "scenario.yaml",
                                                    NULL);
      g_autoptr (WeftScenario) s = weft_scenario_load (scenario, &error);
      /* Either it loads, or it says where the problem is. */
      if (s == NULL)
        ck_assert_msg (error != NULL && strchr (error->message, ':') != NULL,
                       "no position in '%s'", error ? error->message : "");
    }
}

START_TEST (test_mutated_scenarios)
{
  const char *presets[] = { "links.yaml", "devices.yaml", "servers.yaml" };
  g_autofree char *dir = g_build_filename (tmp_dir, "presets", NULL);
  WeftRng rng;

  weft_rng_init (&rng, 99, 0);
  g_mkdir (dir, 0700);
  for (guint i = 0; i < G_N_ELEMENTS (presets); i++)
    {
      g_autofree char *src = g_build_filename (SCENARIOS, "presets",
                                               presets[i], NULL);
      g_autofree char *text = NULL;
      gsize len;
      ck_assert (g_file_get_contents (src, &text, &len, NULL));
      g_autofree char *dst = g_build_filename (dir, presets[i], NULL);
      ck_assert (g_file_set_contents (dst, text, len, NULL));
    }

  const char *scenarios[] = { "dgx-h100.yaml", "gb200-nvl72.yaml",
                              "h100-256-rail.yaml", "pcie-8gpu.yaml" };
  for (guint i = 0; i < G_N_ELEMENTS (scenarios); i++)
    {
      g_autofree char *src = g_build_filename (SCENARIOS, scenarios[i], NULL);
      g_autofree char *text = NULL;
      gsize len;
      ck_assert (g_file_get_contents (src, &text, &len, NULL));
      mutate_and_load ("scenario.yaml", text, len, &rng, 60);
      /* Restore it, then mutate the presets it includes. */
      g_autofree char *dst = g_build_filename (tmp_dir, "scenario.yaml", NULL);
      ck_assert (g_file_set_contents (dst, text, len, NULL));
    }
  for (guint i = 0; i < G_N_ELEMENTS (presets); i++)
    {
      g_autofree char *name = g_build_filename ("presets", presets[i], NULL);
      g_autofree char *path = g_build_filename (tmp_dir, name, NULL);
      g_autofree char *text = NULL;
      gsize len;
      ck_assert (g_file_get_contents (path, &text, &len, NULL));
      mutate_and_load (name, text, len, &rng, 60);
      ck_assert (g_file_set_contents (path, text, len, NULL));
    }
}
END_TEST

static Suite *
scenario_suite (void)
{
  Suite *s = suite_create ("scenario");
  TCase *tc;

  tc = tcase_create ("ready scenarios");
  tcase_set_timeout (tc, 60);
  tcase_add_loop_test (tc, test_ready_scenario, 0, G_N_ELEMENTS (ready));
  tcase_add_test (tc, test_dgx_h100_lanes);
  tcase_add_test (tc, test_fat_tree_bisection_closed_form);
  suite_add_tcase (s, tc);

  tc = tcase_create ("generators");
  tcase_add_checked_fixture (tc, setup, teardown);
  tcase_add_test (tc, test_ring_torus_mesh_star);
  tcase_add_test (tc, test_fat_tree_shapes);
  tcase_add_test (tc, test_rail_optimized_leaves);
  tcase_add_test (tc, test_tiers);
  suite_add_tcase (s, tc);

  tc = tcase_create ("format");
  tcase_add_checked_fixture (tc, setup, teardown);
  tcase_add_test (tc, test_include_and_override);
  tcase_add_test (tc, test_templates_and_ranges);
  suite_add_tcase (s, tc);

  tc = tcase_create ("bad input");
  tcase_add_checked_fixture (tc, setup, teardown);
  tcase_add_test (tc, test_bad_syntax);
  tcase_add_test (tc, test_bad_unknown_key);
  tcase_add_test (tc, test_bad_units);
  tcase_add_test (tc, test_bad_names);
  tcase_add_test (tc, test_name_patterns);
  tcase_add_test (tc, test_bad_links);
  tcase_add_test (tc, test_bad_duplicates);
  tcase_add_test (tc, test_bad_isolated_gpu);
  tcase_add_test (tc, test_bad_includes);
  tcase_add_test (tc, test_bad_generators);
  suite_add_tcase (s, tc);

  tc = tcase_create ("mutated input");
  tcase_set_timeout (tc, 120);
  tcase_add_checked_fixture (tc, setup, teardown);
  tcase_add_test (tc, test_mutated_scenarios);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  SRunner *runner = srunner_create (scenario_suite ());

  srunner_run_all (runner, CK_NORMAL);
  int failed = srunner_ntests_failed (runner);
  srunner_free (runner);
  return failed == 0 ? 0 : 1;
}
