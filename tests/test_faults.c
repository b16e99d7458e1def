/* Tests of faults: links, switches and NICs down or slow for a whole run
 * or for a while, against closed forms, and their errors. */
#include "collectives/collective_run.h"
#include "network/network.h"
#include "topology/faults.h"
#include "topology/routing.h"
#include "topology/scenario.h"
#include "traces/trace_run.h"

#include <check.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#define SCENARIOS WEFT_SOURCE_DIR "/scenarios"

static char *tmp_dir;

static void
setup (void)
{
  tmp_dir = g_dir_make_tmp ("weft-faults-XXXXXX", NULL);
  ck_assert (tmp_dir != NULL);
}

static void
teardown (void)
{
  g_autoptr (GDir) dir = g_dir_open (tmp_dir, 0, NULL);
  const char *name;

  while (dir && (name = g_dir_read_name (dir)))
    {
      g_autofree char *path = g_build_filename (tmp_dir, name, NULL);
      g_remove (path);
    }
  g_rmdir (tmp_dir);
  g_clear_pointer (&tmp_dir, g_free);
}

/* @file of weft's scenarios (or a path) with @faults (--fault's), or NULL
 * with @error. */
static WeftScenario *
load (const char *file, const char *const *sets, const char *const *faults,
      GError **error)
{
  g_autofree char *path = g_path_is_absolute (file)
                              ? g_strdup (file)
                              : g_build_filename (SCENARIOS, file, NULL);
  return weft_scenario_load_with (path, sets, faults, error);
}

static WeftScenario *
load_ok (const char *file, const char *const *faults)
{
  g_autoptr (GError) error = NULL;
  WeftScenario *s = load (file, NULL, faults, &error);

  ck_assert_msg (s != NULL, "%s", error ? error->message : "");
  return s;
}

static char *
write_scenario (const char *name, const char *text)
{
  char *path = g_build_filename (tmp_dir, name, NULL);

  ck_assert (g_file_set_contents (path, text, -1, NULL));
  return path;
}

static GArray *
all_gpus (const WeftTopology *topo)
{
  GArray *gpus = g_array_new (FALSE, FALSE, sizeof (uint32_t));

  for (uint32_t n = 0; n < topo->n_nodes; n++)
    if (topo->nodes[n].kind == WEFT_NODE_GPU)
      g_array_append_val (gpus, n);
  return gpus;
}

/* Seconds an all_reduce of @size bytes by @alg with @proto takes over all
 * of @s's GPUs at @fidelity. */
static double
all_reduce (const WeftScenario *s, WeftFidelity fidelity, WeftAlgorithm alg,
            WeftProtocolKind proto, const WeftCollectiveParams *params,
            uint64_t size)
{
  g_autoptr (GArray) gpus = all_gpus (s->topo);
  WeftRunOptions options = { fidelity, 1, 0, NULL, FALSE, 0, 0, NULL, 1,
                             NULL };
  WeftCollectiveResult r;
  g_autoptr (GError) error = NULL;

  ck_assert_msg (weft_collective_run (s->topo, (uint32_t *) gpus->data,
                                      gpus->len, WEFT_OP_ALL_REDUCE, alg,
                                      proto, size, params, &options, &r,
                                      &error),
                 "%s", error ? error->message : "");
  g_free (r.spans);
  return r.time * 1e-12;
}

static const WeftFidelity fidelities[] = { WEFT_FIDELITY_FLOW,
                                           WEFT_FIDELITY_ANALYTICAL,
                                           WEFT_FIDELITY_PACKET };

START_TEST (test_slow_link_is_alpha_beta)
{
  /* Two GPUs on one switch, g0's link at a quarter of its bandwidth: each
   * of a ring all_reduce's two steps is one transfer over the slow link,
   * so with the raw protocol it takes the textbook's 2(L + c/(fB)) + c/R
   * (chunk c, the two links' and the switch's latency L) at every
   * fidelity. */
  g_autofree char *path = write_scenario ("star.yaml",
      "weft: 1\nlink_types:\n"
      "  nv: {port: nvlink, bandwidth: 25GB/s, latency: 500ns}\n"
      "devices:\n"
      "  g: {kind: gpu, ports: {nvlink: 1}, reduce_bandwidth: 1TB/s}\n"
      "  s: {kind: switch, ports: {nvlink: 8}, latency: 100ns}\n"
      "nodes: [{name: 'g[0-1]', device: g}]\n"
      "fabrics: [{kind: star, name: sw, nodes: 'g[0-1]', switch: s, "
      "link: nv}]\n"
      "faults: [{a: g0, b: sw, speed: 25%}]\n");
  g_autoptr (WeftScenario) s = load_ok (path, NULL);
  WeftCollectiveParams params = { 1, 1, 0, NULL, 1, NULL, NULL, 0, FALSE, NULL };
  const uint64_t sizes[] = { 8 << 20, 1000003 };

  for (guint i = 0; i < G_N_ELEMENTS (fidelities); i++)
    for (guint k = 0; k < G_N_ELEMENTS (sizes); k++)
      {
        double t = all_reduce (s, fidelities[i], WEFT_ALG_RING,
                               WEFT_PROTOCOL_RAW, &params, sizes[k]);
        double c = sizes[k] / 2.0, latency = 2 * 500e-9 + 100e-9;
        double closed = 2 * (latency + c / (0.25 * 25e9)) + c / 1e12;
        ck_assert_msg (fabs (t / closed - 1) < 1e-3, "fidelity %u, %"
                       G_GUINT64_FORMAT " B: %.4f us against %.4f us", i,
                       sizes[k], t * 1e6, closed * 1e6);
      }
}
END_TEST

START_TEST (test_nvswitch_chip_down)
{
  /* A DGX H100's GPUs reach its four NVSwitch chips by 5, 4, 4 and 5
   * NVLinks.  With one chip down a large ring all_reduce runs at the rate
   * of the lanes left: 13/18 without chip 0, 14/18 without chip 1.  With
   * chip 0 down from 1 ms until 3 ms it runs at 13/18 for those 2 ms and
   * at all of it before and after (a transfer takes the routes of the
   * moment for what it has left, when the chip goes and when it comes
   * back): 2 ms x (1 - 13/18) longer than whole, within 1%, the rest being
   * the transfers' latencies, which do not scale. */
  const char *down[][2] = { { "dgx/nvswitch0", NULL },
                            { "dgx/nvswitch1", NULL } };
  const char *window[] = { "dgx/nvswitch0 from 1ms until 3ms", NULL };
  const double lanes[] = { 13, 14 };
  g_autoptr (WeftScenario) whole = load_ok ("dgx-h100.yaml", NULL);
  WeftCollectiveParams params = { 0, 0, 0, NULL, 1, NULL, NULL, 0, FALSE, NULL };
  const WeftFidelity checked[] = { WEFT_FIDELITY_FLOW,
                                   WEFT_FIDELITY_ANALYTICAL };

  for (guint f = 0; f < G_N_ELEMENTS (checked); f++)
    {
      double t0 = all_reduce (whole, checked[f], WEFT_ALG_RING,
                              WEFT_PROTOCOL_SIMPLE, &params, 1ull << 30);
      for (guint d = 0; d < G_N_ELEMENTS (down); d++)
        {
          g_autoptr (WeftScenario) s = load_ok ("dgx-h100.yaml", down[d]);
          double t = all_reduce (s, checked[f], WEFT_ALG_RING,
                                 WEFT_PROTOCOL_SIMPLE, &params, 1ull << 30);
          double rate = t0 / t, expected = lanes[d] / 18;
          ck_assert_msg (fabs (rate / expected - 1) < 0.01,
                         "fidelity %u, %s down: %.4f of the rate, not %.4f",
                         f, down[d][0], rate, expected);
        }
      g_autoptr (WeftScenario) w = load_ok ("dgx-h100.yaml", window);
      double t = all_reduce (w, checked[f], WEFT_ALG_RING,
                             WEFT_PROTOCOL_SIMPLE, &params, 1ull << 30);
      double closed = t0 + 2e-3 * (1 - 13.0 / 18);
      ck_assert_msg (fabs (t / closed - 1) < 0.01, "fidelity %u, chip 0 down "
                     "for 2 ms: %.2f us, not %.2f us", f, t * 1e6,
                     closed * 1e6);
    }
}
END_TEST

START_TEST (test_routes_avoid_what_is_down)
{
  /* With a spine down, no route of any routing engine crosses it, and a
   * NIC's link down moves its GPU's traffic to another NIC of its server;
   * the routes still reach every destination. */
  const char *engines[][2] = { { "fabrics.0.routing=dmodk", NULL },
                               { "fabrics.0.routing=ecmp", NULL },
                               { "fabrics.0.routing=adaptive", NULL } };
  const char *faults[] = { "ib/spine1", "node0/nic0 ib/leaf0", NULL };

  for (guint e = 0; e < G_N_ELEMENTS (engines); e++)
    {
      g_autoptr (GError) error = NULL;
      g_autoptr (WeftScenario) s = load ("h100-256-fat-tree.yaml",
                                         engines[e], faults, &error);
      ck_assert_msg (s != NULL, "%s", error ? error->message : "");
      const WeftTopology *topo = s->topo;
      uint32_t spine = weft_topology_find_node (topo, "ib/spine1");
      uint32_t nic = weft_topology_find_node (topo, "node0/nic0");
      g_autoptr (WeftRouting) r = weft_routing_new (topo);
      g_autoptr (GArray) path = g_array_new (FALSE, FALSE, sizeof (uint32_t));
      for (uint32_t d = 1; d < 32; d++)
        for (uint64_t flow = 0; flow < 8; flow++)
          {
            g_autofree char *dst = g_strdup_printf ("node%u/gpu%u", d,
                                                    (uint32_t) flow);
            ck_assert (weft_routing_path (
                r, weft_topology_find_node (topo, "node0/gpu0"),
                weft_topology_find_node (topo, dst), flow, path));
            ck_assert_uint_gt (path->len, 0);
            for (guint k = 0; k < path->len; k++)
              {
                const WeftLink *l = &topo->links[g_array_index (path,
                                                                uint32_t, k)];
                ck_assert_msg (l->share > 0, "engine %u: a route to %s "
                               "crosses a link that is down", e, dst);
                ck_assert (l->src != spine && l->dst != spine);
                ck_assert (l->src != nic && l->dst != nic);
              }
          }
    }
}
END_TEST

START_TEST (test_faults_recorded)
{
  /* What each fault names, how much of the bandwidth it leaves and over
   * how many links, in the order given; the least share of two faults on
   * one link wins. */
  const char *faults[] = { "ib/spine0", "ib/leaf1 ib/spine[1-2] 50%",
                           "ib/leaf1 ib/spine1 0.25", NULL };
  g_autoptr (WeftScenario) s = load_ok ("h100-256-fat-tree.yaml", faults);
  const WeftTopology *topo = s->topo;

  ck_assert_uint_eq (topo->faults->len, 3);
  const WeftFault *f0 = g_ptr_array_index (topo->faults, 0);
  const WeftFault *f1 = g_ptr_array_index (topo->faults, 1);
  ck_assert_str_eq (f0->what, "ib/spine0");
  ck_assert (f0->share == 0);
  ck_assert_uint_eq (f0->links, 8);       /* one to each leaf */
  ck_assert_str_eq (f1->what, "ib/leaf1 - ib/spine[1-2]");
  ck_assert (f1->share == 0.5);
  ck_assert_uint_eq (f1->links, 2);
  uint32_t leaf = weft_topology_find_node (topo, "ib/leaf1");
  uint32_t sp1 = weft_topology_find_node (topo, "ib/spine1");
  uint32_t sp2 = weft_topology_find_node (topo, "ib/spine2");
  uint32_t sp3 = weft_topology_find_node (topo, "ib/spine3");
  for (uint32_t l = 0; l < topo->n_links; l++)
    {
      const WeftLink *k = &topo->links[l];
      const WeftLinkType *t = g_ptr_array_index (topo->link_types, k->type);
      double full = weft_link_type_effective (t) * k->lanes;
      double share = k->src == leaf || k->dst == leaf
                         ? (k->src == sp1 || k->dst == sp1   ? 0.25
                            : k->src == sp2 || k->dst == sp2 ? 0.5
                            : k->src == sp3 || k->dst == sp3 ? 1
                                                             : -1)
                         : -1;
      if (share < 0)
        continue;
      ck_assert_msg (fabs (k->bandwidth - share * full) < 1e-6 * full,
                     "link %u: %.3g B/s", l, k->bandwidth);
      ck_assert (fabs (k->share - share) < 1e-6);
    }
}
END_TEST

START_TEST (test_cut_off)
{
  /* A leaf with every up-link down cuts its servers off the rest: the
   * scenario is refused, at the fault, naming two GPUs it parts. */
  const char *faults[] = { "ib/leaf0 ib/spine[0-3]", NULL };
  g_autoptr (GError) error = NULL;
  g_autoptr (WeftScenario) s = load ("h100-256-fat-tree.yaml", NULL, faults,
                                     &error);

  ck_assert (s == NULL);
  ck_assert_msg (g_str_has_prefix (error->message,
                                   "--fault ib/leaf0 ib/spine[0-3]:1:1: "),
                 "%s", error->message);
  ck_assert_msg (strstr (error->message, "no path of links that are up"),
                 "%s", error->message);
}
END_TEST

START_TEST (test_fault_errors)
{
  /* Bad faults are reported where they are written. */
  static const struct {
    const char *fault;          /* the scenario's faults: entry */
    const char *message;
  } cases[] = {
    { "{node: nvswitch9}", "f.yaml:10:12: no node named 'nvswitch9'" },
    { "{node: gpu0}", "f.yaml:10:12: 'gpu0' is a GPU" },
    { "{node: gpu0, speed: 0%}", "f.yaml:10:12: 'gpu0' is a GPU" },
    { "{a: gpu0, b: gpu1}", "f.yaml:10:5: no link joins 'gpu0' to 'gpu1'" },
    { "{a: gpu0}", "f.yaml:10:5: missing key 'b'" },
    { "{node: sw, a: gpu0, b: sw}", "f.yaml:10:5: a fault names a node" },
    { "{node: sw, speed: 120%}", "f.yaml:10:23: speed '120%' is outside" },
    { "{node: sw, speed: fast}", "f.yaml:10:23: speed 'fast' is not a share" },
    { "{nodes: sw}", "f.yaml:10:6: unknown key 'nodes'" },
    { "{node: sw, compute: 50%}", "f.yaml:10:12: 'sw' is not a GPU" },
    { "{a: gpu0, b: sw, compute: 50%}", "f.yaml:10:31: compute slows GPUs" },
    { "{node: gpu0, compute: 0}", "f.yaml:10:27: compute '0' stops the GPUs" },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *text = g_strdup_printf (
          "weft: 1\nlink_types:\n"
          "  nv: {port: nvlink, bandwidth: 25GB/s, latency: 500ns}\n"
          "devices:\n"
          "  g: {kind: gpu, ports: {nvlink: 1}, reduce_bandwidth: 1TB/s}\n"
          "  s: {kind: switch, ports: {nvlink: 8}}\n"
          "nodes: [{name: 'gpu[0-3]', device: g}, {name: sw, device: s}]\n"
          "links: [{a: 'gpu[0-3]', b: sw, type: nv}]\nfaults:\n  - %s\n",
          cases[i].fault);
      g_autofree char *path = write_scenario ("f.yaml", text);
      g_autoptr (GError) error = NULL;
      g_autoptr (WeftScenario) s = load (path, NULL, NULL, &error);
      ck_assert_msg (s == NULL, "%s was taken", cases[i].fault);
      const char *base = strrchr (error->message, '/');
      ck_assert_msg (base && g_str_has_prefix (base + 1, cases[i].message),
                     "%s: %s", cases[i].fault, error->message);
    }

  /* On the command line, positions are in the argument. */
  static const struct {
    const char *arg, *message;
  } args[] = {
    { "dgx/gpu0 dgx/nvswitch0 1.5",
      "--fault dgx/gpu0 dgx/nvswitch0 1.5:1:24: speed '1.5' is outside" },
    { "a b c d", "--fault a b c d:1:1: write NODES" },
    { "dgx/nic9", "--fault dgx/nic9:1:1: no node named 'dgx/nic9'" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (args); i++)
    {
      const char *faults[] = { args[i].arg, NULL };
      g_autoptr (GError) error = NULL;
      g_autoptr (WeftScenario) s = load ("dgx-h100.yaml", NULL, faults,
                                         &error);
      ck_assert (s == NULL);
      ck_assert_msg (g_str_has_prefix (error->message, args[i].message),
                     "%s", error->message);
    }
}
END_TEST

START_TEST (test_slow_reduction)
{
  /* Two GPUs on one switch, g0 a straggler at a quarter of its speed: a
   * ring all_reduce's one reduction on g0 takes c/(sR), and the all-gather
   * step that follows it waits for it, so with the raw protocol the time
   * is 2(L + c/B) + c/(sR) at every fidelity. */
  g_autofree char *path = write_scenario ("star.yaml",
      "weft: 1\nlink_types:\n"
      "  nv: {port: nvlink, bandwidth: 25GB/s, latency: 500ns}\n"
      "devices:\n"
      "  g: {kind: gpu, ports: {nvlink: 1}, reduce_bandwidth: 10GB/s}\n"
      "  s: {kind: switch, ports: {nvlink: 8}, latency: 100ns}\n"
      "nodes: [{name: 'g[0-1]', device: g}]\n"
      "fabrics: [{kind: star, name: sw, nodes: 'g[0-1]', switch: s, "
      "link: nv}]\n"
      "faults: [{node: g0, compute: 25%}]\n");
  g_autoptr (WeftScenario) s = load_ok (path, NULL);
  WeftCollectiveParams params = { 1, 1, 0, NULL, 1, NULL, NULL, 0, FALSE, NULL };

  for (guint i = 0; i < G_N_ELEMENTS (fidelities); i++)
    {
      double t = all_reduce (s, fidelities[i], WEFT_ALG_RING,
                             WEFT_PROTOCOL_RAW, &params, 8 << 20);
      double c = (8 << 20) / 2.0, latency = 2 * 500e-9 + 100e-9;
      double closed = 2 * (latency + c / 25e9) + c / (0.25 * 10e9);
      ck_assert_msg (fabs (t / closed - 1) < 1e-3, "fidelity %u: %.4f us "
                     "against %.4f us", i, t * 1e6, closed * 1e6);
    }
}
END_TEST

/* Replay @trace on @s into @r (the caller clears it). */
static void
replay (const WeftScenario *s, const char *trace, WeftTraceResult *r)
{
  static const WeftTraceOptions options = {
    { WEFT_FIDELITY_FLOW, 1, 0, NULL, FALSE, 0, 0, NULL, 1, NULL },
    { 0, 0, 0, NULL, 1, NULL, NULL, 0, FALSE, NULL },
    WEFT_TRACE_AUTO, WEFT_TRACE_AUTO, NULL, NULL, 1,
  };
  g_autoptr (GError) error = NULL;
  g_autoptr (WeftTrace) t = weft_trace_load_data ("t.yaml", trace,
                                                  strlen (trace), s->topo,
                                                  &error);

  ck_assert_msg (t != NULL, "%s", error ? error->message : "");
  ck_assert_msg (weft_trace_run (s->topo, t, &options, r, &error), "%s",
                 error ? error->message : "");
}

START_TEST (test_straggler_step)
{
  /* A step of two compute phases of 1 ms around an all_gather, with GPU 3
   * at half speed: its phases take 2 ms each; every rank waits for it, so
   * no rank's step ends before its first phase and the second phase
   * after it; and the step grows by what the straggler's phases lost,
   * 2 x (1 ms / 0.5 - 1 ms), less at most the all_gather, which the
   * others may start before it joins (no reduction to slow). */
  static const char trace[] =
      "ranks: 8\ncommunicators: {all: \"0-7\"}\nops:\n"
      "  - {id: c1, kind: compute, comm: all, time: 1ms}\n"
      "  - {id: ag, kind: all_gather, comm: all, size: 64MiB, deps: [c1]}\n"
      "  - {id: c2, kind: compute, comm: all, time: 1ms, deps: [ag]}\n";
  const char *slow[] = { "dgx/gpu3 compute 50%", NULL };
  g_autoptr (WeftScenario) whole = load_ok ("dgx-h100.yaml", NULL);
  g_autoptr (WeftScenario) s = load_ok ("dgx-h100.yaml", slow);
  WeftTraceResult a, b;

  replay (whole, trace, &a);
  replay (s, trace, &b);
  const WeftTime ms = 1000000000;
  for (uint32_t r = 0; r < 8; r++)
    {
      ck_assert_uint_eq (b.compute[r], r == 3 ? 4 * ms : 2 * ms);
      ck_assert_uint_ge (b.step[r], 2 * ms + ms);
    }
  double gather = (double) (a.time - 2 * ms);
  double grew = (double) b.time - (double) a.time;
  ck_assert_msg (grew <= 2 * ms && grew >= 2 * ms - gather,
                 "%.6f ms then %.6f ms", a.time / 1e9, b.time / 1e9);
  weft_trace_result_clear (&a);
  weft_trace_result_clear (&b);
}
END_TEST

/* Two GPUs, each joined to two switches s1 and s2 by one link of 25 GB/s
 * and 500 ns; @faults, a `faults:` list, on its line 9: as a file. */
static char *
two_ways_file (const char *faults)
{
  g_autofree char *text = g_strdup_printf (
      "weft: 1\nlink_types:\n"
      "  nv: {port: nvlink, bandwidth: 25GB/s, latency: 500ns}\n"
      "devices:\n"
      "  g: {kind: gpu, ports: {nvlink: 2}, reduce_bandwidth: 1TB/s}\n"
      "  s: {kind: switch, ports: {nvlink: 8}, latency: 100ns}\n"
      "nodes: [{name: 'g[0-1]', device: g}, {name: 's[1-2]', device: s}]\n"
      "links: [{a: 'g[0-1]', b: s1, type: nv}, "
      "{a: 'g[0-1]', b: s2, type: nv}]\n"
      "faults: %s\n", faults);
  return write_scenario ("two.yaml", text);
}

static WeftScenario *
two_ways (const char *faults)
{
  g_autofree char *path = two_ways_file (faults);
  return load_ok (path, NULL);
}

static void
arrived (WeftSim *sim, void *target, void *data)
{
  (void) data;
  *(WeftTime *) target = weft_sim_now (sim);
}

typedef struct {
  uint64_t from;                /* bin */
  uint64_t bytes;
} Late;

static void
count_late (uint32_t bin, uint64_t bytes, void *data)
{
  Late *late = data;

  if (bin >= late->from)
    late->bytes += bytes;
}

/* Seconds @bytes take from g0 to g1 of @s alone at @fidelity; the bytes
 * delivered into @delivered, and what links out of switch @quiet carried
 * from @after on into @late. */
static double
one_transfer (const WeftScenario *s, WeftFidelity fidelity, uint64_t bytes,
              uint64_t *delivered, const char *quiet, WeftTime after,
              uint64_t *late)
{
  g_autoptr (WeftSim) sim = weft_sim_new ();
  const WeftNetworkConfig config = { fidelity, 1000000, 0, 0 };
  g_autoptr (WeftNetwork) net = weft_network_new (sim, s->topo, &config);
  uint32_t g0 = weft_topology_find_node (s->topo, "g0");
  uint32_t g1 = weft_topology_find_node (s->topo, "g1");
  uint32_t sw = quiet ? weft_topology_find_node (s->topo, quiet) : WEFT_NONE;
  WeftTime end = 0;

  weft_network_transfer (net, g0, g1, bytes, 0, arrived, &end, NULL);
  weft_sim_run (sim);
  ck_assert_msg (weft_network_failure (net) == NULL, "%s",
                 weft_network_failure (net));
  weft_network_flush_stats (net);
  *delivered = net->bytes_delivered;
  Late count = { after / net->stats->bin_width, 0 };
  for (uint32_t l = 0; l < s->topo->n_links; l++)
    if (s->topo->links[l].src == sw || s->topo->links[l].dst == sw)
      weft_link_stats_bins (net->stats, l, count_late, &count);
  *late = count.bytes;
  return end * 1e-12;
}

static const WeftFidelity all_fidelities[] = {
  WEFT_FIDELITY_FLOW, WEFT_FIDELITY_ANALYTICAL, WEFT_FIDELITY_ANALYTICAL_FREE,
  WEFT_FIDELITY_PACKET };

START_TEST (test_link_fails_under_transfer)
{
  /* 10 MB from g0 to g1 go over both switches at once (2B) until s1 fails
   * at 100 us; what is left then goes over s2 alone (B): the transfer
   * takes t + (S - 2Bt) / B + L at every fidelity, delivers every byte,
   * and nothing crosses s1 after it failed.  The packet model loses what
   * was on s1's links when it failed and sends it again: a few packets
   * more. */
  g_autoptr (WeftScenario) s = two_ways ("[{node: s1, from: 100us}]");
  const double bytes = 1e7, b = 25e9, t = 100e-6, l = 2 * 500e-9 + 100e-9;
  double closed = t + (bytes - 2 * b * t) / b + l;

  for (guint f = 0; f < G_N_ELEMENTS (all_fidelities); f++)
    {
      uint64_t delivered, late;
      double took = one_transfer (s, all_fidelities[f], (uint64_t) bytes,
                                  &delivered, "s1", 101000000, &late);
      /* Packets: what s1's path held (its latency's worth at B, the
       * bandwidth-delay product) is sent again at B. */
      double more = all_fidelities[f] == WEFT_FIDELITY_PACKET ? 2 * l : 0;
      ck_assert_msg (took > closed * (1 - 1e-6)
                     && took < (closed + more) * (1 + 1e-6),
                     "%s: %.4f us against %.4f us",
                     weft_fidelity_name (all_fidelities[f]), took * 1e6,
                     closed * 1e6);
      ck_assert_uint_eq (delivered, (uint64_t) bytes);
      ck_assert_msg (late == 0, "%s: %" G_GUINT64_FORMAT " bytes on s1's "
                     "links after it failed",
                     weft_fidelity_name (all_fidelities[f]), late);
    }
}
END_TEST

START_TEST (test_slow_for_a_while)
{
  /* s2 down all along, s1's links at half speed from 100 us until 300 us:
   * 10 MB go at B, then B/2, then B again, so they take
   * t1 + (t2 - t1) + (S - B t1 - B (t2 - t1) / 2) / B + L. */
  g_autoptr (WeftScenario) s = two_ways (
      "[{node: s2}, {node: s1, speed: 50%, from: 100us, until: 300us}]");
  const double bytes = 1e7, b = 25e9, t1 = 100e-6, t2 = 300e-6;
  const double l = 2 * 500e-9 + 100e-9;
  double closed = t2 + (bytes - b * t1 - b * (t2 - t1) / 2) / b + l;

  for (guint f = 0; f < G_N_ELEMENTS (all_fidelities); f++)
    {
      uint64_t delivered, late;
      if (all_fidelities[f] == WEFT_FIDELITY_ANALYTICAL_FREE)
        continue;               /* its transfers keep their start's rate */
      double took = one_transfer (s, all_fidelities[f], (uint64_t) bytes,
                                  &delivered, NULL, 0, &late);
      ck_assert_msg (fabs (took / closed - 1) < 1e-4,
                     "%s: %.4f us against %.4f us",
                     weft_fidelity_name (all_fidelities[f]), took * 1e6,
                     closed * 1e6);
      ck_assert_uint_eq (delivered, (uint64_t) bytes);
    }
}
END_TEST

START_TEST (test_straggler_for_a_while)
{
  /* GPU g0 at 25% from 1 ms until 2 ms: work of 1.5 ms at full speed
   * started at 0.5 ms does 0.5 ms of it by 1 ms, 0.25 ms by 2 ms and the
   * rest, 0.75 ms, by 2.75 ms; started at 3 ms it is not slowed. */
  g_autoptr (WeftScenario) s = two_ways (
      "[{node: g0, compute: 25%, from: 1ms, until: 2ms}]");
  const WeftTime ms = 1000000000;
  uint32_t g0 = weft_topology_find_node (s->topo, "g0");
  uint32_t g1 = weft_topology_find_node (s->topo, "g1");

  ck_assert_uint_eq (weft_faults_compute_end (s->topo, g0, ms / 2,
                                              1.5 * ms),
                     2 * ms + 3 * ms / 4);
  ck_assert_uint_eq (weft_faults_compute_end (s->topo, g0, 3 * ms, 1.5 * ms),
                     3 * ms + 3 * ms / 2);
  ck_assert_uint_eq (weft_faults_compute_end (s->topo, g1, ms / 2, 1.5 * ms),
                     2 * ms);
  ck_assert (s->topo->phases == NULL);  /* no link changes */
}
END_TEST

START_TEST (test_idle_link_for_a_while)
{
  /* A link no transfer crosses, down for a while, changes nothing: when
   * it comes back, transfers in flight whose routes stay the same are left
   * as they are, at every fidelity. */
  const char *idle[] = { "dgx/cpu0 dgx/cpu1 until 100us", NULL };
  g_autoptr (WeftScenario) whole = load_ok ("dgx-h100.yaml", NULL);
  g_autoptr (WeftScenario) s = load_ok ("dgx-h100.yaml", idle);
  WeftCollectiveParams params = { 0, 0, 0, NULL, 1, NULL, NULL, 0, FALSE, NULL };

  ck_assert (s->topo->phases != NULL);
  for (guint f = 0; f < G_N_ELEMENTS (all_fidelities); f++)
    {
      double t0 = all_reduce (whole, all_fidelities[f], WEFT_ALG_RING,
                              WEFT_PROTOCOL_SIMPLE, &params, 64 << 20);
      double t = all_reduce (s, all_fidelities[f], WEFT_ALG_RING,
                             WEFT_PROTOCOL_SIMPLE, &params, 64 << 20);
      ck_assert_msg (t == t0 && t > 100e-6, "%s: %.6f us, not %.6f us",
                     weft_fidelity_name (all_fidelities[f]), t * 1e6,
                     t0 * 1e6);
    }
}
END_TEST

START_TEST (test_timed_fault_errors)
{
  static const struct {
    const char *faults, *message;
  } cases[] = {
    { "[{node: s1, from: 2us, until: 1us}]",
      "two.yaml:9:39: until '1us' is not after from" },
    { "[{node: s1, from: soon}]", "two.yaml:9:27: 'soon' is not" },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *path = two_ways_file (cases[i].faults);
      g_autoptr (GError) error = NULL;
      g_autoptr (WeftScenario) s = load (path, NULL, NULL, &error);
      ck_assert_msg (s == NULL, "%s was taken", cases[i].faults);
      const char *base = strrchr (error->message, '/');
      ck_assert_msg (base && g_str_has_prefix (base + 1, cases[i].message),
                     "%s: %s", cases[i].faults, error->message);
    }

  /* A fault that cuts the GPUs apart later on fails the run then, at
   * every fidelity, saying between which nodes and what was down. */
  g_autoptr (WeftScenario) cut = two_ways ("[{node: s1}, {node: s2, "
                                           "from: 5us}]");
  for (guint f = 0; f < G_N_ELEMENTS (all_fidelities); f++)
    {
      g_autoptr (WeftSim) sim = weft_sim_new ();
      const WeftNetworkConfig config = { all_fidelities[f], 0, 0, 0 };
      g_autoptr (WeftNetwork) net = weft_network_new (sim, cut->topo, &config);
      WeftTime end = 0;
      weft_network_transfer (net, weft_topology_find_node (cut->topo, "g0"),
                             weft_topology_find_node (cut->topo, "g1"),
                             10000000, 0, arrived, &end, NULL);
      weft_sim_run (sim);
      const char *why = weft_network_failure (net);
      ck_assert_msg (end == 0 && why != NULL
                     && g_str_has_prefix (why, "at 5.000 us no path of links "
                                               "that are up joins 'g0' to "
                                               "'g1': down then 's1', 's2' "
                                               "from 5.000 us"),
                     "%s: %s", weft_fidelity_name (all_fidelities[f]), why);
    }

  /* --fault takes its times last. */
  const char *args[] = { "dgx/nvswitch0 from 10us until 20us",
                         "dgx/gpu0 dgx/nvswitch0 50% until 1ms",
                         "dgx/gpu3 compute 50% from 1ms", NULL };
  for (guint i = 0; args[i]; i++)
    {
      const char *faults[] = { args[i], NULL };
      g_autoptr (WeftScenario) s = load_ok ("dgx-h100.yaml", faults);
      const WeftFault *k = g_ptr_array_index (s->topo->faults, 0);
      ck_assert_msg (k->from > 0 || k->until != WEFT_FOREVER, "%s", args[i]);
    }
}
END_TEST

static Suite *
faults_suite (void)
{
  Suite *s = suite_create ("faults");
  TCase *tc = tcase_create ("faults");

  tcase_add_checked_fixture (tc, setup, teardown);
  tcase_set_timeout (tc, 600);
  tcase_add_test (tc, test_slow_link_is_alpha_beta);
  tcase_add_test (tc, test_nvswitch_chip_down);
  tcase_add_test (tc, test_slow_reduction);
  tcase_add_test (tc, test_straggler_step);
  tcase_add_test (tc, test_routes_avoid_what_is_down);
  tcase_add_test (tc, test_faults_recorded);
  tcase_add_test (tc, test_cut_off);
  tcase_add_test (tc, test_fault_errors);
  tcase_add_test (tc, test_link_fails_under_transfer);
  tcase_add_test (tc, test_slow_for_a_while);
  tcase_add_test (tc, test_straggler_for_a_while);
  tcase_add_test (tc, test_idle_link_for_a_while);
  tcase_add_test (tc, test_timed_fault_errors);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  SRunner *sr = srunner_create (faults_suite ());
  srunner_run_all (sr, CK_NORMAL);
  int failed = srunner_ntests_failed (sr);
  srunner_free (sr);
  return failed == 0 ? 0 : 1;
}
