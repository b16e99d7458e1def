/* Random scenarios for the property tests: drawing a case from a seed,
 * writing it as YAML, loading it, and running a collective over it. */
#include "fabric_gen.h"

#include "units.h"

#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define PRESETS WEFT_SOURCE_DIR "/scenarios/presets/servers.yaml"

static const char *const family_names[] = {
  "fat-tree", "rail-optimized", "torus", "full-mesh", "star", "rack",
};

/* An integer uniform in [lo, hi]. */
static uint32_t
between (WeftRng *rng, uint32_t lo, uint32_t hi)
{
  return lo + (uint32_t) weft_rng_below (rng, hi - lo + 1);
}

static gboolean
coin (WeftRng *rng, double p)
{
  return weft_rng_uniform (rng) < p;
}

/* A figure uniform in [lo, hi], to @step: the case's text states it
 * exactly, so a rate in it is a whole number of bytes per second. */
static double
figure (WeftRng *rng, double lo, double hi, double step)
{
  return lo + step * (double) weft_rng_below (rng, (uint64_t) ((hi - lo)
                                                               / step) + 1);
}

/* ---- link types ---- */

static void
preset_link (FabricLink *l, const char *name)
{
  *l = (FabricLink) { .preset = TRUE };
  g_strlcpy (l->name, name, sizeof l->name);
}

/* The NVLink type: a preset generation, or one of random speed. */
static void
draw_nv (WeftRng *rng, FabricLink *l)
{
  static const char *const presets[] = { "nvlink2", "nvlink3", "nvlink4",
                                         "nvlink5" };
  if (coin (rng, 0.5))
    {
      preset_link (l, presets[weft_rng_below (rng, G_N_ELEMENTS (presets))]);
      return;
    }
  *l = (FabricLink) { "xnv", FALSE, "nvlink", figure (rng, 10, 100, 0.5),
                      0, between (rng, 20, 300), 256, 16, 1 };
  if (coin (rng, 0.5))
    l->nccl = figure (rng, 0.6, 0.95, 0.05) * l->bandwidth;
}

/* The network's type: InfiniBand or Ethernet, a preset or of random
 * speed. */
static void
draw_net (WeftRng *rng, FabricLink *l)
{
  static const char *const presets[] = { "ib-hdr", "ib-ndr", "ib-xdr",
                                         "roce-200g", "roce-400g" };
  if (coin (rng, 0.5))
    {
      preset_link (l, presets[weft_rng_below (rng, G_N_ELEMENTS (presets))]);
      return;
    }
  gboolean ib = coin (rng, 0.5);
  *l = (FabricLink) { "xnet", FALSE, ib ? "ib" : "eth",
                      figure (rng, 10, 100, 0.25), 0,
                      between (rng, 10, 200), 4096, ib ? 26 : 82, 2 };
  if (coin (rng, 0.5))
    l->nccl = figure (rng, 0.6, 1.0, 0.05) * l->bandwidth;
}

/* The GPU-to-NIC type: a preset PCIe x16, or of random speed. */
static void
draw_pcie (WeftRng *rng, FabricLink *l)
{
  static const char *const presets[] = { "pcie4-x16", "pcie5-x16",
                                         "pcie6-x16" };
  if (coin (rng, 0.5))
    {
      preset_link (l, presets[weft_rng_below (rng, G_N_ELEMENTS (presets))]);
      return;
    }
  *l = (FabricLink) { "xpcie", FALSE, "pcie", figure (rng, 8, 128, 1), 0,
                      between (rng, 50, 300), 256, 24, 4 };
  if (coin (rng, 0.5))
    l->nccl = figure (rng, 0.6, 0.9, 0.05) * l->bandwidth;
}

/* The port class of the network's link type. */
static const char *
net_port (const FabricCase *c)
{
  const FabricLink *l = &c->link[FABRIC_NET];

  if (!l->preset)
    return l->port;
  return g_str_has_prefix (l->name, "roce") ? "eth" : "ib";
}

/* ---- drawing ---- */

/* Servers of 2 to 8 GPUs with NVLink inside, a NIC each, and the GPUs'
 * reduction rate. */
static void
draw_servers (WeftRng *rng, FabricCase *c, uint32_t max_servers)
{
  static const uint32_t chips[] = { 0, 1, 2, 4 };

  c->servers = between (rng, 2, max_servers);
  c->gpus = between (rng, 2, 8);
  c->chips = chips[weft_rng_below (rng, G_N_ELEMENTS (chips))];
  c->lanes = between (rng, 1, c->chips == 0 ? 2 : 4);
  draw_nv (rng, &c->link[FABRIC_NV]);
  draw_net (rng, &c->link[FABRIC_NET]);
  draw_pcie (rng, &c->link[FABRIC_PCIE]);
}

/* The network of a tree case: levels, oversubscription 1:1 to 4:1 and a
 * switch radix that usually, not always, suits the endpoints. */
static void
draw_tree (WeftRng *rng, FabricCase *c)
{
  static const uint32_t ratios[][2] = { { 1, 1 }, { 3, 2 }, { 2, 1 },
                                        { 3, 1 }, { 4, 1 } };
  static const uint32_t radixes[] = { 4, 6, 8, 12, 16, 24, 32, 48, 64 };
  guint r = (guint) weft_rng_below (rng, G_N_ELEMENTS (ratios));

  c->levels = coin (rng, 0.3) ? 3 : 2;
  c->down = ratios[r][0];
  c->up = ratios[r][1];
  /* Three levels only show with switches small beside the endpoints. */
  c->radix = radixes[weft_rng_below (rng, c->levels == 3
                                              ? 4
                                              : G_N_ELEMENTS (radixes))];
  c->planes = c->family == FABRIC_RAIL && coin (rng, 0.4);
}

void
fabric_case_draw (FabricCase *c, uint64_t seed, FabricFamily family)
{
  WeftRng rng;

  weft_rng_init (&rng, seed, 0x6661627269);    /* "fabri" */
  *c = (FabricCase) { .seed = seed, .levels = 2, .down = 1, .up = 1 };
  c->family = family < FABRIC_FAMILIES
                  ? family
                  : (FabricFamily) weft_rng_below (&rng, FABRIC_FAMILIES);
  c->reduce = figure (&rng, 200, 3000, 50);
  switch (c->family)
    {
    case FABRIC_FAT_TREE:
    case FABRIC_RAIL:
      draw_servers (&rng, c, 8);
      draw_tree (&rng, c);
      break;
    case FABRIC_TORUS:
      c->n_dims = coin (&rng, 0.6) ? 2 : 3;
      c->gpus = 1;
      for (uint32_t d = 0; d < c->n_dims; d++)
        {
          c->dims[d] = between (&rng, 2, c->n_dims == 2 ? 4 : 3);
          c->gpus *= c->dims[d];
        }
      c->lanes = between (&rng, 1, 3);
      draw_nv (&rng, &c->link[FABRIC_NV]);
      break;
    case FABRIC_MESH:
      c->gpus = between (&rng, 3, 8);
      c->lanes = between (&rng, 1, 3);
      draw_nv (&rng, &c->link[FABRIC_NV]);
      break;
    case FABRIC_STAR:
      c->nic_star = coin (&rng, 0.5);
      if (c->nic_star)
        {
          draw_servers (&rng, c, 6);
          /* Mostly enough ports for every NIC; now and then too few. */
          c->radix = c->servers * c->gpus
                     + (coin (&rng, 0.9) ? between (&rng, 0, 8) : 0)
                     - (coin (&rng, 0.05) ? 1 : 0);
        }
      else
        {
          c->gpus = between (&rng, 2, 16);
          c->lanes = between (&rng, 1, 4);
          draw_nv (&rng, &c->link[FABRIC_NV]);
        }
      break;
    default:
      c->family = FABRIC_RACK;
      c->grace = coin (&rng, 0.3);
      c->servers = between (&rng, 2, 9);
      c->gpus = c->grace ? 4 : (coin (&rng, 0.5) ? 2 : 4);
      c->chips = between (&rng, 2, c->grace ? 18 : 9);
      c->lanes = c->grace ? 1 : between (&rng, 1, 2);
      if (c->grace)
        preset_link (&c->link[FABRIC_NV], "nvlink5");
      else
        {
          draw_nv (&rng, &c->link[FABRIC_NV]);
          draw_pcie (&rng, &c->link[FABRIC_PCIE]);
        }
      break;
    }
  if (coin (&rng, 0.5))
    c->chip_reduce = figure (&rng, 100, 1000, 50);
  /* A preset GPU where its 18 NVLink ports are enough. */
  if (!c->grace && coin (&rng, 0.4))
    c->gpu_preset = coin (&rng, 0.5) ? "h100" : "b200";
}

/* ---- writing ---- */

/* "gpu[0-7]", or "gpu0" for one. */
static char *
range (const char *stem, uint32_t n)
{
  return n == 1 ? g_strdup_printf ("%s0", stem)
                : g_strdup_printf ("%s[0-%u]", stem, n - 1);
}

/* The NVLink ports a GPU of @c uses. */
static uint32_t
gpu_nvlinks (const FabricCase *c)
{
  uint32_t links = 0;

  switch (c->family)
    {
    case FABRIC_TORUS:
      for (uint32_t d = 0; d < c->n_dims; d++)
        links += c->dims[d] > 2 ? 2 : c->dims[d] == 2 ? 1 : 0;
      break;
    case FABRIC_MESH:
      links = c->gpus - 1;
      break;
    case FABRIC_STAR:
      links = c->nic_star ? (c->chips ? c->chips : c->gpus - 1) : 1;
      break;
    default:
      links = c->chips ? c->chips : c->gpus - 1;
      break;
    }
  return links * c->lanes;
}

/* The GPU device the case's text names. */
static const char *
gpu_device (const FabricCase *c)
{
  if (c->grace)
    return "gb200";
  if (c->gpu_preset && gpu_nvlinks (c) <= 18)
    return c->gpu_preset;
  return "xgpu";
}

static void
put_link_type (GString *y, const FabricLink *l)
{
  if (l->name[0] == '\0' || l->preset)
    return;
  g_string_append_printf (y, "  %s: {port: %s, bandwidth: %.2fGB/s, "
                          "payload: %uB, header: %uB, latency: %uns, "
                          "cost: %u",
                          l->name, l->port, l->bandwidth, l->payload,
                          l->header, l->latency, l->cost);
  if (l->nccl > 0)
    g_string_append_printf (y, ", nccl_bandwidth: %.2fGB/s", l->nccl);
  g_string_append (y, "}\n");
}

/* The devices of the case's own: a GPU, NVSwitch chips, a NIC and a
 * network switch, with as many ports as the case needs (the network
 * switch: its radix). */
static void
put_devices (GString *y, const FabricCase *c)
{
  uint32_t chip_ports = c->gpus * c->lanes;

  if (c->family == FABRIC_RACK)
    chip_ports *= c->servers;
  g_string_append (y, "devices:\n");
  g_string_append_printf (y, "  xgpu: {kind: gpu, ports: {nvlink: %u, "
                          "pcie: 1}, reduce_bandwidth: %.0fGB/s}\n",
                          MAX (gpu_nvlinks (c), 1), c->reduce);
  g_string_append_printf (y, "  xnvs: {kind: switch, ports: {nvlink: %u}, "
                          "latency: 100ns",
                          MAX (chip_ports, 1));
  if (c->chip_reduce > 0)
    g_string_append_printf (y, ", reduce_bandwidth: %.0fGB/s",
                            c->chip_reduce);
  g_string_append (y, "}\n");
  if (c->link[FABRIC_NET].name[0])
    {
      g_string_append_printf (y, "  xnic: {kind: nic, ports: {pcie: 1, "
                              "%s: 1}, latency: 150ns}\n", net_port (c));
      g_string_append_printf (y, "  xsw: {kind: switch, ports: {%s: %u}, "
                              "latency: 200ns}\n", net_port (c), c->radix);
    }
}

/* The server template "srv": GPUs on NVSwitch chips or joined pair by
 * pair, and a NIC for each GPU. */
static void
put_server (GString *y, const FabricCase *c)
{
  g_autofree char *gpus = range ("gpu", c->gpus);
  g_autofree char *nics = range ("nic", c->gpus);
  g_autofree char *chips = range ("nvs", c->chips);

  g_string_append_printf (y, "templates:\n  srv:\n    nodes:\n"
                          "      - {name: \"%s\", device: %s}\n"
                          "      - {name: \"%s\", device: xnic}\n",
                          gpus, gpu_device (c), nics);
  if (c->chips)
    g_string_append_printf (y, "      - {name: \"%s\", device: xnvs}\n",
                            chips);
  g_string_append (y, "    links:\n");
  for (uint32_t k = 0; k < c->chips; k++)
    g_string_append_printf (y, "      - {a: \"%s\", b: nvs%u, type: %s, "
                            "lanes: %u}\n",
                            gpus, k, c->link[FABRIC_NV].name, c->lanes);
  for (uint32_t i = 0; c->chips == 0 && i + 1 < c->gpus; i++)
    g_string_append_printf (y, "      - {a: gpu%u, b: \"gpu[%u-%u]\", "
                            "type: %s, lanes: %u}\n",
                            i, i + 1, c->gpus - 1, c->link[FABRIC_NV].name,
                            c->lanes);
  g_string_append_printf (y, "      - {a: \"%s\", b: \"%s\", type: %s}\n",
                          gpus, nics, c->link[FABRIC_PCIE].name);
}

/* The rack: trays of GPUs (the preset GB200 tray, or a tray of the case's
 * own with a NIC per GPU) and NVSwitch chips that every GPU joins. */
static void
put_rack (GString *y, const FabricCase *c)
{
  g_autofree char *gpus = range ("gpu", c->gpus);
  g_autofree char *nics = range ("nic", c->gpus);
  g_autofree char *trays = range ("tray", c->servers);
  const char *tray = c->grace ? "gb200-tray" : "xtray";

  if (!c->grace)
    g_string_append_printf (y, "templates:\n  xtray:\n    nodes:\n"
                            "      - {name: \"%s\", device: %s}\n"
                            "      - {name: \"%s\", device: xnic}\n"
                            "    links:\n"
                            "      - {a: \"%s\", b: \"%s\", type: %s}\n",
                            gpus, gpu_device (c), nics, gpus, nics,
                            c->link[FABRIC_PCIE].name);
  g_string_append_printf (y, "nodes:\n  - {name: \"%s\", template: %s}\n"
                          "  - {name: \"nvs[0-%u]\", device: %s}\n"
                          "links:\n",
                          trays, tray, c->chips - 1,
                          c->grace ? "nvswitch4" : "xnvs");
  for (uint32_t k = 0; k < c->chips; k++)
    g_string_append_printf (y, "  - {a: \"%s/%s\", b: nvs%u, type: %s, "
                            "lanes: %u}\n",
                            trays, gpus, k, c->link[FABRIC_NV].name,
                            c->lanes);
}

/* The fabric of a case of servers: a tree, or a star of their NICs. */
static void
put_server_fabric (GString *y, const FabricCase *c)
{
  g_autofree char *servers = range ("srv", c->servers);
  g_autofree char *nics = range ("nic", c->gpus);

  g_string_append_printf (y, "nodes:\n  - {name: \"%s\", template: srv}\n"
                          "fabrics:\n", servers);
  if (c->family == FABRIC_STAR)
    {
      g_string_append_printf (y, "  - {kind: star, name: net, nodes: "
                              "\"%s/%s\", switch: xsw, link: %s}\n",
                              servers, nics, c->link[FABRIC_NET].name);
      return;
    }
  g_string_append_printf (y, "  - {kind: %s, name: net, endpoints: "
                          "\"%s/%s\", levels: %u, switch: xsw, link: %s, "
                          "oversubscription: \"%u:%u\"",
                          family_names[c->family], servers, nics, c->levels,
                          c->link[FABRIC_NET].name, c->down, c->up);
  if (c->family == FABRIC_RAIL)
    g_string_append_printf (y, ", rails: %u, planes: %s", c->gpus,
                            c->planes ? "true" : "false");
  g_string_append (y, "}\n");
}

/* A fabric of GPUs alone: a torus, a full mesh or a star. */
static void
put_gpu_fabric (GString *y, const FabricCase *c)
{
  g_autofree char *gpus = range ("gpu", c->gpus);
  const char *nv = c->link[FABRIC_NV].name;

  g_string_append_printf (y, "nodes:\n  - {name: \"%s\", device: %s}\n"
                          "fabrics:\n", gpus, gpu_device (c));
  if (c->family == FABRIC_TORUS)
    {
      g_string_append_printf (y, "  - {kind: torus, nodes: \"%s\", dims: "
                              "[%u, %u", gpus, c->dims[0], c->dims[1]);
      if (c->n_dims == 3)
        g_string_append_printf (y, ", %u", c->dims[2]);
      g_string_append_printf (y, "], link: %s, lanes: %u}\n", nv, c->lanes);
    }
  else if (c->family == FABRIC_MESH)
    g_string_append_printf (y, "  - {kind: full-mesh, nodes: \"%s\", link: "
                            "%s, lanes: %u}\n", gpus, nv, c->lanes);
  else
    g_string_append_printf (y, "  - {kind: star, name: nvs, nodes: \"%s\", "
                            "switch: xnvs, link: %s, lanes: %u}\n",
                            gpus, nv, c->lanes);
}

char *
fabric_case_yaml (const FabricCase *c)
{
  GString *y = g_string_new ("weft: 1\n");
  g_autofree char *what = fabric_case_describe (c);

  g_string_append_printf (y, "description: \"%s\"\ninclude: \"%s\"\n", what,
                          PRESETS);
  gboolean own = FALSE;
  for (int r = 0; r < FABRIC_ROLES; r++)
    own = own || (c->link[r].name[0] && !c->link[r].preset);
  if (own)
    g_string_append (y, "link_types:\n");
  for (int r = 0; r < FABRIC_ROLES; r++)
    put_link_type (y, &c->link[r]);
  put_devices (y, c);
  if (c->family == FABRIC_RACK)
    put_rack (y, c);
  else if (c->servers > 0)
    {
      put_server (y, c);
      put_server_fabric (y, c);
    }
  else
    put_gpu_fabric (y, c);
  return g_string_free (y, FALSE);
}

char *
fabric_case_describe (const FabricCase *c)
{
  GString *d = g_string_new (NULL);

  g_string_append_printf (d, "seed %" G_GUINT64_FORMAT ": %s", c->seed,
                          family_names[c->family]);
  if (c->servers)
    g_string_append_printf (d, " of %u %s of %u GPUs (%u chips, %u lanes)",
                            c->servers,
                            c->family == FABRIC_RACK ? "trays" : "servers",
                            c->gpus, c->chips, c->lanes);
  else
    g_string_append_printf (d, " of %u GPUs (%u lanes)", c->gpus, c->lanes);
  if (c->family == FABRIC_FAT_TREE || c->family == FABRIC_RAIL)
    g_string_append_printf (d, ", %u levels, %u:%u, radix %u%s", c->levels,
                            c->down, c->up, c->radix,
                            c->planes ? ", planes" : "");
  for (int r = 0; r < FABRIC_ROLES; r++)
    if (c->link[r].name[0])
      g_string_append_printf (d, ", %s%s", c->link[r].name,
                              c->link[r].preset ? "" : " (own)");
  return g_string_free (d, FALSE);
}

WeftScenario *
fabric_case_load (const FabricCase *c, const char *const *sets,
                  GError **error)
{
  g_autofree char *path = NULL;
  g_autofree char *text = fabric_case_yaml (c);
  int fd = g_file_open_tmp ("weft-fabric-XXXXXX.yaml", &path, error);

  if (fd < 0)
    return NULL;
  close (fd);
  if (!g_file_set_contents (path, text, -1, error))
    {
      g_remove (path);
      return NULL;
    }
  WeftScenario *s = weft_scenario_load_with (path, sets, NULL, error);
  g_remove (path);
  return s;
}

/* The down ports the fabric generator gives a leaf of radix @k at
 * @down:@up (models/topology/fabric.c). */
static uint32_t
leaf_down (uint32_t k, uint32_t down, uint32_t up)
{
  double ratio = (double) down / up;
  uint32_t d = (uint32_t) (k * ratio / (ratio + 1.0) + 0.5);

  return CLAMP (d, 1, k - 1);
}

gboolean
fabric_case_oversubscribe (FabricCase *c, uint32_t wanted, uint32_t down,
                           uint32_t up)
{
  uint32_t best = 0;

  for (uint32_t k = wanted + 1; k <= 4 * wanted + 4; k++)
    if (leaf_down (k, down, up) == wanted)
      best = k;
  if (best == 0)
    return FALSE;
  c->radix = best;
  c->down = down;
  c->up = up;
  return TRUE;
}

GArray *
fabric_gpus (const WeftTopology *topo)
{
  GArray *gpus = g_array_new (FALSE, FALSE, sizeof (uint32_t));

  for (uint32_t n = 0; n < topo->n_nodes; n++)
    if (topo->nodes[n].kind == WEFT_NODE_GPU)
      g_array_append_val (gpus, n);
  return gpus;
}

gboolean
fabric_pick (WeftRng *rng, const WeftTopology *topo, const WeftOp *ops,
             guint n_ops, WeftProtocolKind protocol, FabricRun *run)
{
  g_autoptr (GArray) gpus = fabric_gpus (topo);
  guint first = (guint) weft_rng_below (rng, n_ops);

  /* From a random operation on, the first that some algorithm runs. */
  for (guint k = 0; k < n_ops; k++)
    {
      WeftOp op = ops[(first + k) % n_ops];
      WeftAlgorithm fits[WEFT_ALG_COUNT];
      guint n = 0;
      for (int a = 0; a < WEFT_ALG_COUNT; a++)
        if (weft_algorithm_supports (a, op)
            && weft_collective_fits (topo, (uint32_t *) gpus->data, gpus->len,
                                     op, a, protocol, NULL))
          fits[n++] = a;
      if (n == 0)
        continue;
      run->op = op;
      run->alg = fits[weft_rng_below (rng, n)];
      run->protocol = protocol;
      return TRUE;
    }
  return FALSE;
}

gboolean
fabric_run (const WeftTopology *topo, const FabricRun *run, WeftTime bins,
            WeftCollectiveResult *result, GError **error)
{
  g_autoptr (GArray) gpus = fabric_gpus (topo);
  WeftCollectiveParams params = { run->channels, run->chunks, 0, NULL, 1,
                                  NULL, NULL, 0, FALSE, NULL };
  WeftRunOptions options = { run->fidelity, 1, bins, NULL, FALSE, 0, 0, NULL,
                             1, NULL };

  if (!weft_collective_run (topo, (uint32_t *) gpus->data, gpus->len,
                            run->op, run->alg, run->protocol, run->size,
                            &params, &options, result, error))
    return FALSE;
  if (bins == 0)
    {
      weft_link_stats_free (result->stats);
      g_free (result->spans);
      result->stats = NULL;
      result->spans = NULL;
    }
  return TRUE;
}

char *
fabric_run_describe (const FabricRun *run)
{
  g_autofree char *size = weft_format_size (run->size);

  return g_strdup_printf ("%s by %s, %s, %s, chunks %u, channels %u, %s",
                          weft_op_name (run->op),
                          weft_algorithm_name (run->alg),
                          weft_protocol_name (run->protocol), size,
                          run->chunks, run->channels,
                          weft_fidelity_name (run->fidelity));
}

double
fabric_busbw (const FabricRun *run, uint32_t n,
              const WeftCollectiveResult *result)
{
  return (double) run->size / ((double) result->time * 1e-12)
         * weft_op_bus_factor (run->op, n);
}
