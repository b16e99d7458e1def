/* Tests of the analytical fidelities: links shared fairly, each on its own
 * (analytical), against their closed forms and the flow model, and the
 * congestion-unaware option (analytical-free) against the first where
 * nothing is shared. */
#include "collectives/collective_run.h"
#include "network_jobs.h"

#include <math.h>

/* A star of @hosts hosts h0.. around one switch, links of type l (12.5 GB/s,
 * 50 ns) and a switch of 100 ns: a path between two hosts has 200 ns of
 * latency. */
static WeftScenario *
star (int hosts)
{
  g_autofree char *text = g_strdup_printf (
      STAR "nodes: [{name: 'h[0-%d]', device: h}]\n"
      "fabrics: [{kind: star, name: sw, nodes: 'h[0-%d]', switch: s, "
      "link: l}]\n",
      hosts - 1, hosts - 1);

  return load_text (text);
}

static uint32_t
host (const WeftTopology *topo, int i)
{
  g_autofree char *name = g_strdup_printf ("h%d", i);

  return node (topo, name);
}

/* Work in ps of @bytes on a link of type l, as the model rounds it. */
static WeftTime
work_on_l (uint64_t bytes)
{
  return (WeftTime) ceil ((double) bytes * 1e12 / 12.5e9);
}

#define STAR_LATENCY ((WeftTime) 200000)

/* The link from the star's switch to host @h. */
static uint32_t
link_into (const WeftTopology *topo, int h)
{
  for (uint32_t l = 0; l < topo->n_links; l++)
    if (topo->links[l].dst == host (topo, h))
      return l;
  g_assert_not_reached ();
}

/* ---- alone on an idle path ---- */

START_TEST (test_alone_is_the_closed_form)
{
  /* A transfer alone takes latency plus bytes over the bottleneck, to the
   * picosecond in both analytical models: inside a DGX H100 (striped over
   * its four NVSwitch chips), and across servers of the rail-optimized
   * fabric (PCIe, NIC, leaf).  Flow and packet agree within 0.1%. */
  const char *files[] = { "dgx-h100.yaml", "h100-256-rail.yaml" };
  const char *pairs[][2] = { { "dgx/gpu0", "dgx/gpu5" },
                             { "node0/gpu0", "node1/gpu0" } };
  const WeftFidelity fidelities[] = { WEFT_FIDELITY_ANALYTICAL,
                                      WEFT_FIDELITY_ANALYTICAL_FREE,
                                      WEFT_FIDELITY_FLOW,
                                      WEFT_FIDELITY_PACKET };
  const uint64_t bytes = 8 << 20;

  for (guint c = 0; c < G_N_ELEMENTS (files); c++)
    {
      g_autofree char *path = g_build_filename (SCENARIOS, files[c], NULL);
      g_autoptr (WeftScenario) s = weft_scenario_load (path, NULL);
      ck_assert (s != NULL);
      uint32_t src = node (s->topo, pairs[c][0]);
      uint32_t dst = node (s->topo, pairs[c][1]);
      for (guint f = 0; f < G_N_ELEMENTS (fidelities); f++)
        {
          g_autoptr (WeftSim) sim = weft_sim_new ();
          Job job = { src, dst, bytes, 0, 0 };
          g_autoptr (WeftNetwork) net = run (sim, s->topo, fidelities[f],
                                             &job, 1);
          WeftTime closed = weft_network_ideal_time (net, src, dst, bytes);
          if (f < 2)
            ck_assert_msg (job.done == closed,
                           "%s, %s: %" G_GUINT64_FORMAT " ps vs %"
                           G_GUINT64_FORMAT " ps", files[c],
                           weft_fidelity_name (fidelities[f]), job.done,
                           closed);
          else
            ck_assert_msg (fabs ((double) job.done / closed - 1) <= 1e-3,
                           "%s, %s: %" G_GUINT64_FORMAT " ps vs %"
                           G_GUINT64_FORMAT " ps", files[c],
                           weft_fidelity_name (fidelities[f]), job.done,
                           closed);
          check_link_bins (net);
        }
    }
}
END_TEST

START_TEST (test_stripes_meet_again)
{
  /* h0 reaches h1 by two equal-cost ways, through s0 or s1, which meet
   * again at s2: its transfer is striped in halves over them, and both
   * halves cross s2's one link to h1.  That link carries all the bytes, so
   * a transfer alone takes latency plus all its bytes over it, in every
   * model and in the closed form: a stripe is not given the link's
   * bandwidth of its own. */
  g_autoptr (WeftScenario) s = load_text (
      STAR "nodes: [{name: 'h[0-1]', device: h}, {name: 's[0-2]', "
      "device: s}]\n"
      "links: [{a: h0, b: 's[0-1]', type: l}, {a: 's[0-1]', b: s2, "
      "type: l}, {a: s2, b: h1, type: l}]\n");
  const WeftFidelity fidelities[] = { WEFT_FIDELITY_ANALYTICAL,
                                      WEFT_FIDELITY_ANALYTICAL_FREE,
                                      WEFT_FIDELITY_FLOW,
                                      WEFT_FIDELITY_PACKET };
  const uint64_t bytes = 4 << 20;
  const uint32_t h0 = host (s->topo, 0), h1 = host (s->topo, 1);
  /* Three links of 50 ns and two switches of 100 ns. */
  const WeftTime closed = 350000 + work_on_l (bytes);

  for (guint f = 0; f < G_N_ELEMENTS (fidelities); f++)
    {
      g_autoptr (WeftSim) sim = weft_sim_new ();
      Job job = { h0, h1, bytes, 0, 0 };
      g_autoptr (WeftNetwork) net = run (sim, s->topo, fidelities[f], &job,
                                         1);
      ck_assert_uint_eq (weft_network_ideal_time (net, h0, h1, bytes),
                         closed);
      if (f < 2)
        ck_assert_msg (job.done == closed, "%s: %" G_GUINT64_FORMAT " ps vs %"
                       G_GUINT64_FORMAT " ps",
                       weft_fidelity_name (fidelities[f]), job.done, closed);
      else
        ck_assert_msg (fabs ((double) job.done / closed - 1) <= 1e-3,
                       "%s: %" G_GUINT64_FORMAT " ps vs %" G_GUINT64_FORMAT
                       " ps", weft_fidelity_name (fidelities[f]), job.done,
                       closed);
      check_link_bins (net);
    }
}
END_TEST

/* ---- one link shared ---- */

START_TEST (test_started_together_share)
{
  /* k hosts send to one: the switch's link to it is shared.  Started in
   * one instant, the k transfers share it equally to the end: each takes k
   * times as long as one alone.  Without congestion each takes one's
   * time. */
  const int k = 6;
  g_autoptr (WeftScenario) s = star (k + 1);
  const uint64_t bytes = 3 << 20;
  WeftTime w = work_on_l (bytes);

  for (int f = 0; f < 2; f++)
    {
      WeftFidelity fidelity = f == 0 ? WEFT_FIDELITY_ANALYTICAL
                                     : WEFT_FIDELITY_ANALYTICAL_FREE;
      g_autoptr (WeftSim) sim = weft_sim_new ();
      Job jobs[6];
      for (int i = 0; i < k; i++)
        jobs[i] = (Job) { host (s->topo, i), host (s->topo, k), bytes, 0, 0 };
      g_autoptr (WeftNetwork) net = run (sim, s->topo, fidelity, jobs, k);
      WeftTime closed = STAR_LATENCY + (f == 0 ? (WeftTime) k * w : w);
      for (int i = 0; i < k; i++)
        ck_assert_msg (jobs[i].done == closed,
                       "%s, job %d: %" G_GUINT64_FORMAT " ps vs %"
                       G_GUINT64_FORMAT " ps", weft_fidelity_name (fidelity),
                       i, jobs[i].done, closed);
      check_link_bins (net);
      /* The shared link was busy for the k works, no more. */
      if (f == 0)
        ck_assert_uint_eq (net->stats->links[link_into (s->topo, k)].busy,
                           (WeftTime) k * w);
    }
}
END_TEST

START_TEST (test_joins_halfway)
{
  /* One transfer alone on a link for half its work w, then a second of
   * the same bytes joins: from then on they share it, each at half its
   * rate.  The first has w / 2 left, which takes w: it ends at 3w / 2; the
   * second has had w / 2 by then and ends alone w / 2 later, at 2w.  The
   * link was busy 2w, its whole work. */
  g_autoptr (WeftScenario) s = star (3);
  const uint64_t bytes = 3 << 20;
  WeftTime w = work_on_l (bytes);
  WeftNetworkConfig config = { WEFT_FIDELITY_ANALYTICAL, WEFT_US, 0, 0 };
  g_autoptr (WeftSim) sim = weft_sim_new ();
  g_autoptr (WeftNetwork) net = weft_network_new (sim, s->topo, &config);
  Job jobs[2];
  Start starts[2];

  ck_assert_uint_eq (w % 2, 0);
  for (int i = 0; i < 2; i++)
    {
      jobs[i] = (Job) { host (s->topo, i), host (s->topo, 2), bytes, 0, 0 };
      starts[i] = (Start) { net, &jobs[i] };
      weft_sim_schedule_at (sim, i * (w / 2), start_job, &starts[i], NULL);
    }
  weft_sim_run (sim);
  weft_network_flush_stats (net);
  ck_assert_uint_eq (jobs[0].done, STAR_LATENCY + 3 * w / 2);
  ck_assert_uint_eq (jobs[1].done, STAR_LATENCY + 2 * w);
  ck_assert_uint_eq (net->stats->links[link_into (s->topo, 2)].busy, 2 * w);
  check_link_bins (net);
}
END_TEST

START_TEST (test_joins_one_by_one)
{
  /* k = 4 transfers of work w = 4g join one link g apart.  The first has
   * the link alone for g, shares it two ways for g, three ways for g: by
   * the last arrival it has had g (1 + 1/2 + 1/3) = 11g/6 and leaves
   * 4 (4g - 11g/6) = 26g/3 later, first, at 35g/3.  The link never idles
   * while they wait, so the last leaves when its 4w of work is done; each
   * departure rounds up to the picosecond, by at most one each. */
  const int k = 4;
  g_autoptr (WeftScenario) s = star (k + 1);
  const uint64_t bytes = 3 << 20;
  WeftTime w = work_on_l (bytes), g = w / k;
  WeftNetworkConfig config = { WEFT_FIDELITY_ANALYTICAL, WEFT_US, 0, 0 };
  g_autoptr (WeftSim) sim = weft_sim_new ();
  g_autoptr (WeftNetwork) net = weft_network_new (sim, s->topo, &config);
  Job jobs[4];
  Start starts[4];

  ck_assert_uint_eq (w % (k * 6), 0);
  for (int i = 0; i < k; i++)
    {
      jobs[i] = (Job) { host (s->topo, i), host (s->topo, k), bytes, 0, 0 };
      starts[i] = (Start) { net, &jobs[i] };
      weft_sim_schedule_at (sim, i * g, start_job, &starts[i], NULL);
    }
  weft_sim_run (sim);
  ck_assert_uint_eq (jobs[0].done, STAR_LATENCY + 35 * g / 3);
  for (int i = 1; i < k; i++)
    ck_assert_uint_gt (jobs[i].done, jobs[i - 1].done);
  ck_assert_uint_ge (jobs[k - 1].done, STAR_LATENCY + k * w);
  ck_assert_uint_le (jobs[k - 1].done, STAR_LATENCY + k * w + k);
}
END_TEST

START_TEST (test_links_share_on_their_own)
{
  /* A sends h0 -> h4, B h1 -> h4, C h1 -> h2 and D h1 -> h3, all of w
   * and started together.  The link out of h1 is shared three ways: B, C
   * and D each get a third of it and leave it at 3w.  The link into h4
   * is shared two ways: A and B each get half of it, though B cannot use
   * more than a third, and both are served there at 2w.  So A is done at
   * 2w, where max-min fairness along the paths (the flow model) gives A
   * the two thirds that B leaves and ends it at 3w / 2; the others at 3w
   * in both. */
  g_autoptr (WeftScenario) s = star (5);
  const uint64_t bytes = 3 << 20;
  WeftTime w = work_on_l (bytes);
  const int pairs[][2] = { { 0, 4 }, { 1, 4 }, { 1, 2 }, { 1, 3 } };
  const WeftTime ends[][4] = { { 2 * w, 3 * w, 3 * w, 3 * w },
                               { 3 * w / 2, 3 * w, 3 * w, 3 * w } };

  ck_assert_uint_eq (w % 2, 0);
  for (int f = 0; f < 2; f++)
    {
      WeftFidelity fidelity = f == 0 ? WEFT_FIDELITY_ANALYTICAL
                                     : WEFT_FIDELITY_FLOW;
      g_autoptr (WeftSim) sim = weft_sim_new ();
      Job jobs[4];
      for (int i = 0; i < 4; i++)
        jobs[i] = (Job) { host (s->topo, pairs[i][0]),
                          host (s->topo, pairs[i][1]), bytes, 0, 0 };
      g_autoptr (WeftNetwork) net = run (sim, s->topo, fidelity, jobs, 4);
      for (int i = 0; i < 4; i++)
        ck_assert_msg (f == 0 ? jobs[i].done == STAR_LATENCY + ends[f][i]
                              : fabs ((double) jobs[i].done
                                      / (STAR_LATENCY + ends[f][i]) - 1)
                                    <= 1e-3,
                       "%s, job %d: %" G_GUINT64_FORMAT " ps vs %"
                       G_GUINT64_FORMAT " ps", weft_fidelity_name (fidelity),
                       i, jobs[i].done, STAR_LATENCY + ends[f][i]);
      check_link_bins (net);
    }
}
END_TEST

START_TEST (test_cap_holds_its_own)
{
  /* Two transfers of w over one link, one capped at a quarter of the
   * link's rate: the link still shares itself equally, and the uncapped
   * one leaves at 2w as if the other could use its half; the capped one
   * leaves when its cap allows, at 4w. */
  g_autoptr (WeftScenario) s = star (3);
  const uint64_t bytes = 3 << 20;
  WeftTime w = work_on_l (bytes);
  g_autoptr (WeftSim) sim = weft_sim_new ();
  Job jobs[] = {
    { host (s->topo, 0), host (s->topo, 2), bytes, 12.5e9 / 4, 0 },
    { host (s->topo, 1), host (s->topo, 2), bytes, 0, 0 },
  };
  g_autoptr (WeftNetwork) net = run (sim, s->topo, WEFT_FIDELITY_ANALYTICAL,
                                     jobs, 2);

  ck_assert_uint_eq (jobs[1].done, STAR_LATENCY + 2 * w);
  ck_assert_uint_eq (jobs[0].done, STAR_LATENCY + 4 * w);
  check_link_bins (net);
}
END_TEST

START_TEST (test_unequal_share)
{
  /* Started together, transfers of unequal work share the link equally
   * while they are on it: with works w, 3w and 3w, the short one ends at
   * 3w (each of the three served w), the long ones 2w each later at half
   * the link, at 7w. */
  g_autoptr (WeftScenario) s = star (4);
  const uint64_t bytes = 1 << 20;
  WeftTime w = work_on_l (bytes), w3 = work_on_l (3 * bytes);
  g_autoptr (WeftSim) sim = weft_sim_new ();
  Job jobs[] = {
    { host (s->topo, 0), host (s->topo, 3), 3 * bytes, 0, 0 },
    { host (s->topo, 1), host (s->topo, 3), bytes, 0, 0 },
    { host (s->topo, 2), host (s->topo, 3), 3 * bytes, 0, 0 },
  };
  g_autoptr (WeftNetwork) net = run (sim, s->topo, WEFT_FIDELITY_ANALYTICAL,
                                     jobs, 3);

  ck_assert_uint_eq (jobs[1].done, STAR_LATENCY + 3 * w);
  ck_assert_uint_eq (jobs[0].done, STAR_LATENCY + w + 2 * w3);
  ck_assert_uint_eq (jobs[2].done, jobs[0].done);
  check_link_bins (net);
}
END_TEST

/* ---- collectives against the flow model ---- */

/* @s's GPUs: all of them, or with @servers those of servers node0 to
 * node(servers - 1). */
static GArray *
gpus_of (const WeftScenario *s, int servers)
{
  GArray *gpus = g_array_new (FALSE, FALSE, sizeof (uint32_t));

  for (uint32_t n = 0; n < s->topo->n_nodes; n++)
    {
      if (s->topo->nodes[n].kind != WEFT_NODE_GPU)
        continue;
      gboolean in = servers == 0;
      for (int k = 0; k < servers && !in; k++)
        {
          g_autofree char *prefix = g_strdup_printf ("node%d/", k);
          in = g_str_has_prefix (s->topo->nodes[n].name, prefix);
        }
      if (in)
        g_array_append_val (gpus, n);
    }
  return gpus;
}

/* Bus bandwidth of all_reduce by @alg and @protocol of @size over @gpus
 * of @s at @fidelity, with channels and chunks chosen as weft run's. */
static double
busbw (const WeftScenario *s, const GArray *gpus, WeftAlgorithm alg,
       WeftProtocolKind protocol, uint64_t size, WeftFidelity fidelity)
{
  WeftCollectiveParams params = { 0, 0, 0, NULL, 0, NULL, NULL, 0, FALSE, NULL };
  WeftRunOptions options = { fidelity, 1, 0, NULL, FALSE, 0, 0, NULL, 1,
                             NULL };
  WeftCollectiveResult r;
  g_autoptr (GError) error = NULL;

  ck_assert_msg (weft_collective_run (s->topo, (uint32_t *) gpus->data,
                                      gpus->len, WEFT_OP_ALL_REDUCE, alg,
                                      protocol, size, &params, &options, &r,
                                      &error),
                 "%s", error ? error->message : "");
  g_free (r.spans);
  return (double) size / ((double) r.time * 1e-12) * 1e-9
         * weft_op_bus_factor (WEFT_OP_ALL_REDUCE, gpus->len);
}

/* A collective whose transfers share links. */
typedef struct {
  const char *file;
  int servers;                  /* 0: every GPU */
  WeftAlgorithm alg;
  WeftProtocolKind protocol;
  uint64_t size;
} Shared;

/* Holds case @c's analytical bus bandwidth to 15% of the flow model's;
 * with @free_above, the congestion-unaware model's must be over
 * free_above times the flow model's. */
static void
near_flow (const Shared *c, double free_above)
{
  g_autofree char *path = g_build_filename (SCENARIOS, c->file, NULL);
  g_autoptr (WeftScenario) s = weft_scenario_load (path, NULL);
  ck_assert (s != NULL);
  g_autoptr (GArray) gpus = gpus_of (s, c->servers);
  double flow = busbw (s, gpus, c->alg, c->protocol, c->size,
                       WEFT_FIDELITY_FLOW);
  double shared = busbw (s, gpus, c->alg, c->protocol, c->size,
                         WEFT_FIDELITY_ANALYTICAL);

  ck_assert_msg (fabs (shared / flow - 1) <= 0.15,
                 "%s, %d servers, %s, %s: analytical %.1f GB/s, flow %.1f "
                 "GB/s", c->file, c->servers, weft_algorithm_name (c->alg),
                 weft_protocol_name (c->protocol), shared, flow);
  if (free_above > 0)
    {
      double free = busbw (s, gpus, c->alg, c->protocol, c->size,
                           WEFT_FIDELITY_ANALYTICAL_FREE);
      ck_assert_msg (free > free_above * flow, "%s, %s: analytical-free %.1f"
                     " GB/s, flow %.1f GB/s", c->file,
                     weft_protocol_name (c->protocol), free, flow);
    }
}

START_TEST (test_shared_near_flow)
{
  /* Where a collective's transfers share links, and do not always start
   * in step, the analytical model's bus bandwidth is within 15% of the
   * flow model's: a DGX H100's ring of eight channels over each GPU's
   * NVLinks, the hierarchical all_reduce of 32 servers, and a ring over
   * two servers, whose pieces come to the network links one after
   * another.  The congestion-unaware model lets every channel of the DGX
   * H100 have the links to itself, and is far off. */
  const Shared cases[] = {
    { "dgx-h100.yaml", 0, WEFT_ALG_RING, WEFT_PROTOCOL_SIMPLE, 256 << 20 },
    { "dgx-h100.yaml", 0, WEFT_ALG_RING, WEFT_PROTOCOL_LL128, 256 << 20 },
    { "h100-256-rail.yaml", 0, WEFT_ALG_HIER, WEFT_PROTOCOL_SIMPLE,
      256 << 20 },
    { "h100-256-rail.yaml", 0, WEFT_ALG_HIER, WEFT_PROTOCOL_LL128,
      256 << 20 },
    { "h100-256-rail.yaml", 2, WEFT_ALG_RING, WEFT_PROTOCOL_SIMPLE,
      64 << 20 },
    { "h100-256-rail.yaml", 2, WEFT_ALG_RING, WEFT_PROTOCOL_LL128,
      64 << 20 },
  };

  for (guint c = 0; c < G_N_ELEMENTS (cases); c++)
    near_flow (&cases[c], c < 2 ? 2 : 0);
}
END_TEST

START_TEST (test_fat_tree_near_flow)
{
  /* The hierarchical all_reduce of 1 GiB over the 1,024 GPUs of a
   * fat-tree, whose transfers meet on the fabric's links out of step:
   * within 15% of the flow model. */
  const Shared c = { "h100-1024-fat-tree.yaml", 0, WEFT_ALG_HIER,
                     WEFT_PROTOCOL_LL128, (uint64_t) 1 << 30 };

  near_flow (&c, 0);
}
END_TEST

START_TEST (test_same_times_plain_or_not)
{
  /* A DGX H100 ring all_reduce twice, and once with the speed-ups off
   * (whole transfers' routes not remembered): the same time each run,
   * and links that add up. */
  g_autofree char *path = g_build_filename (SCENARIOS, "dgx-h100.yaml", NULL);
  g_autoptr (WeftScenario) s = weft_scenario_load (path, NULL);
  ck_assert (s != NULL);
  uint32_t gpus[8];
  for (int g = 0; g < 8; g++)
    {
      g_autofree char *name = g_strdup_printf ("dgx/gpu%d", g);
      gpus[g] = node (s->topo, name);
    }
  WeftCollectiveParams params = { 0, 0, 0, NULL, 0, NULL, NULL, 0, FALSE, NULL };
  WeftTime time[3];

  for (int i = 0; i < 3; i++)
    {
      WeftRunOptions options = { WEFT_FIDELITY_ANALYTICAL, 1, WEFT_US, NULL,
                                 i == 2, 0, 0, NULL, 1, NULL };
      WeftCollectiveResult r;
      ck_assert (weft_collective_run (s->topo, gpus, 8, WEFT_OP_ALL_REDUCE,
                                      WEFT_ALG_RING, WEFT_PROTOCOL_SIMPLE,
                                      64 << 20, &params, &options, &r,
                                      NULL));
      time[i] = r.time;
      uint64_t carried = 0;
      for (uint32_t l = 0; l < s->topo->n_links; l++)
        carried += r.stats->links[l].bytes;
      ck_assert_uint_gt (carried, 0);
      weft_link_stats_free (r.stats);
      g_free (r.spans);
    }
  ck_assert_uint_eq (time[1], time[0]);
  ck_assert_uint_eq (time[2], time[0]);
}
END_TEST

/* ---- nothing shared ---- */

static const WeftFidelity every[] = { WEFT_FIDELITY_PACKET, WEFT_FIDELITY_FLOW,
                                      WEFT_FIDELITY_ANALYTICAL,
                                      WEFT_FIDELITY_ANALYTICAL_FREE };

START_TEST (test_disjoint_pairs_agree)
{
  /* The GPUs of a DGX H100 exchange with their partners (0 with 1, 2 with
   * 3, ...) all at once: no two transfers share a link, so every model
   * gives each the time it takes alone, within 3% of the flow model's. */
  g_autoptr (WeftScenario) s = load_text (
      "weft: 1\ninclude: " SCENARIOS "/presets/servers.yaml\n"
      "nodes: [{name: dgx, template: dgx-h100}]\n");
  const uint64_t bytes = 8 << 20;
  Job jobs[G_N_ELEMENTS (every)][8];

  for (guint f = 0; f < G_N_ELEMENTS (every); f++)
    {
      for (int g = 0; g < 8; g++)
        {
          g_autofree char *from = g_strdup_printf ("dgx/gpu%d", g);
          g_autofree char *to = g_strdup_printf ("dgx/gpu%d", g ^ 1);
          jobs[f][g] = (Job) { node (s->topo, from), node (s->topo, to),
                               bytes, 0, 0 };
        }
      g_autoptr (WeftSim) sim = weft_sim_new ();
      weft_network_free (run (sim, s->topo, every[f], jobs[f], 8));
    }
  for (guint f = 0; f < G_N_ELEMENTS (every); f++)
    for (int g = 0; g < 8; g++)
      ck_assert_msg (fabs ((double) jobs[f][g].done / jobs[1][g].done - 1)
                         <= 0.03,
                     "%s, gpu%d: %" G_GUINT64_FORMAT " ps, flow %"
                     G_GUINT64_FORMAT " ps", weft_fidelity_name (every[f]),
                     g, jobs[f][g].done, jobs[1][g].done);
}
END_TEST

START_TEST (test_send_recv_agrees)
{
  /* One send_recv between GPU 0 of two servers of the rail-optimized
   * fabric, each byte once through PCIe, NICs and a leaf: every model's
   * time is within 3% of the flow model's. */
  g_autofree char *path = g_build_filename (SCENARIOS, "h100-256-rail.yaml",
                                            NULL);
  g_autoptr (WeftScenario) s = weft_scenario_load (path, NULL);
  ck_assert (s != NULL);
  uint32_t gpus[] = { node (s->topo, "node0/gpu0"),
                      node (s->topo, "node1/gpu0") };
  WeftCollectiveParams params = { 1, 1, 0, NULL, 0, NULL, NULL, 0, FALSE, NULL };
  WeftTime time[G_N_ELEMENTS (every)];

  for (guint f = 0; f < G_N_ELEMENTS (every); f++)
    {
      WeftRunOptions options = { every[f], 1, 0, NULL, FALSE, 0, 0, NULL, 1,
                                 NULL };
      WeftCollectiveResult r;
      g_autoptr (GError) error = NULL;
      ck_assert_msg (weft_collective_run (s->topo, gpus, 2,
                                          WEFT_OP_SEND_RECV, WEFT_ALG_RING,
                                          WEFT_PROTOCOL_SIMPLE, 16 << 20,
                                          &params, &options, &r, &error),
                     "%s", error ? error->message : "");
      g_free (r.spans);
      time[f] = r.time;
    }
  for (guint f = 0; f < G_N_ELEMENTS (every); f++)
    ck_assert_msg (fabs ((double) time[f] / time[1] - 1) <= 0.03,
                   "%s: %" G_GUINT64_FORMAT " ps, flow %" G_GUINT64_FORMAT
                   " ps", weft_fidelity_name (every[f]), time[f], time[1]);
}
END_TEST

static Suite *
analytical_suite (void)
{
  Suite *s = suite_create ("analytical");
  TCase *tc;

  tc = tcase_create ("closed forms");
  tcase_set_timeout (tc, 60);
  tcase_add_test (tc, test_alone_is_the_closed_form);
  tcase_add_test (tc, test_stripes_meet_again);
  tcase_add_test (tc, test_started_together_share);
  tcase_add_test (tc, test_joins_halfway);
  tcase_add_test (tc, test_joins_one_by_one);
  tcase_add_test (tc, test_unequal_share);
  tcase_add_test (tc, test_links_share_on_their_own);
  tcase_add_test (tc, test_cap_holds_its_own);
  tcase_add_test (tc, test_same_times_plain_or_not);
  suite_add_tcase (s, tc);

  tc = tcase_create ("against the flow model");
  tcase_set_timeout (tc, 300);
  tcase_add_test (tc, test_shared_near_flow);
  tcase_add_test (tc, test_fat_tree_near_flow);
  tcase_add_test (tc, test_disjoint_pairs_agree);
  tcase_add_test (tc, test_send_recv_agrees);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  SRunner *runner = srunner_create (analytical_suite ());

  srunner_run_all (runner, CK_NORMAL);
  int failed = srunner_ntests_failed (runner);
  srunner_free (runner);
  return failed == 0 ? 0 : 1;
}
