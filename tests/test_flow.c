/* Tests of the flow model: rates by max-min fairness through transfers on
 * real topologies (against closed forms and the solver), bytes of striped
 * flows, and the ways it finds and fills the flows a change affects,
 * which must all give the same ends to the picosecond. */
#include "network/flow-private.h"
#include "network/maxmin.h"
#include "network_jobs.h"

#include <math.h>
#include <string.h>

/* ---- sharing ---- */

START_TEST (test_flows_leave_long_and_short_lists)
{
  /* N sources into one sink through a switch, flow i with a different
   * multiple of B bytes, the multiples shuffled: the sink's link is shared
   * as by a processor, so the flow of the k-th least size m_k ends at
   * latency + (m_1 + ... + m_(k-1) + (N - k + 1) m_k) B / C.  The flows
   * leave the sink link's list from every place in it: with 12 the list is
   * searched, with 40 each flow keeps its place in its slot. */
  g_autoptr (WeftScenario) s = load_text (
      STAR "nodes: [{name: 'h[0-40]', device: h}]\n"
      "fabrics: [{kind: star, name: sw, nodes: 'h[0-40]', switch: s,\n"
      "           link: l}]\n");
  const WeftTopology *topo = s->topo;
  const uint64_t b = 1 << 20;
  const double latency = 2 * 50e3 + 100e3, c = 12.5e9;

  for (guint round = 0; round < 2; round++)
    {
      guint n = round == 0 ? 12 : 40;
      g_autoptr (WeftSim) sim = weft_sim_new ();
      Job jobs[40];
      for (guint i = 0; i < n; i++)
        {
          g_autofree char *name = g_strdup_printf ("h%u", i);
          guint m = (i * 7) % n + 1;  /* 7 is prime to 12 and 40 */
          jobs[i] = (Job) { node (topo, name), node (topo, "h40"), m * b, 0,
                            0 };
        }
      g_autoptr (WeftNetwork) net =
          run (sim, topo, WEFT_FIDELITY_FLOW, jobs, n);
      for (guint i = 0; i < n; i++)
        {
          guint k = (guint) (jobs[i].bytes / b); /* its size's rank, 1 to n */
          double before = (double) (k - 1) * k / 2;
          double closed = latency + (before + (n - k + 1.0) * k) * b * 1e12 / c;
          ck_assert_msg (fabs (jobs[i].done - closed) <= 1e-9 * closed + 2,
                         "%u flows, flow %u of %u B: %" G_GUINT64_FORMAT
                         " ps, not %.0f", n, i, (guint) jobs[i].bytes,
                         (guint64) jobs[i].done, closed);
        }
      check_link_bins (net);
    }
}
END_TEST

START_TEST (test_parking_lot)
{
  /* Three switches in a line; access links are four times faster, so the
   * two trunk links (capacity C) are the only bottlenecks.  A long flow
   * crosses both trunks; two short flows cross the first and one the
   * second.  Max-min: the first trunk splits three ways (C/3 each, the long
   * flow included); the short flow on the second trunk gets what the long
   * one leaves, 2C/3. */
  g_autoptr (WeftScenario) s = load_text (
      "weft: 1\n"
      "link_types:\n"
      "  trunk: {port: p, bandwidth: 10GB/s}\n"
      "  access: {port: p, bandwidth: 40GB/s}\n"
      "devices:\n"
      "  h: {kind: gpu, ports: {p: 1}, reduce_bandwidth: 1TB/s}\n"
      "  s: {kind: switch, ports: {p: 8}}\n"
      "nodes: [{name: 'sw[0-2]', device: s}, {name: 'h[0-7]', device: h}]\n"
      "links:\n"
      "  - {a: sw0, b: sw1, type: trunk}\n"
      "  - {a: sw1, b: sw2, type: trunk}\n"
      "  - {a: 'h[0-2]', b: sw0, type: access}\n"
      "  - {a: 'h[3-5]', b: sw1, type: access}\n"
      "  - {a: 'h[6-7]', b: sw2, type: access}\n");
  const WeftTopology *topo = s->topo;
  const uint64_t bytes = 100 << 20;
  g_autoptr (WeftSim) sim = weft_sim_new ();
  Job jobs[] = {
    { node (topo, "h0"), node (topo, "h6"), bytes, 0, 0 },   /* long */
    { node (topo, "h1"), node (topo, "h3"), bytes, 0, 0 },   /* trunk 1 */
    { node (topo, "h2"), node (topo, "h4"), bytes, 0, 0 },   /* trunk 1 */
    { node (topo, "h5"), node (topo, "h7"), bytes, 0, 0 },   /* trunk 2 */
  };
  const double c = 10e9;
  weft_network_free (run (sim, topo, WEFT_FIDELITY_FLOW, jobs, 4));

  /* Rates C/3, C/3, C/3 and 2C/3 until the last flow ends, when the others
   * have long finished at the same instant: three flows of C/3. */
  ck_assert_double_eq_tol (jobs[0].done, bytes * 1e12 / (c / 3), 1e3);
  ck_assert_double_eq_tol (jobs[1].done, bytes * 1e12 / (c / 3), 1e3);
  ck_assert_double_eq_tol (jobs[2].done, bytes * 1e12 / (c / 3), 1e3);
  ck_assert_double_eq_tol (jobs[3].done, bytes * 1e12 / (2 * c / 3), 1e3);
}
END_TEST

/* ---- max-min fairness over a large group ---- */

/* The max-min fair rates the solver gives @n flows, flow i crossing
 * links path[i][0 .. len[i]-1] (of @n_links, capacities @capacity) with
 * cap @cap[i] (0: none), and putting share[i][k] of its rate on link
 * path[i][k] (all 1 if @share is NULL); test_maxmin.c holds the solver
 * to a plain reference and to the max-min property. */
static void
solver_rates (guint n, const guint (*path)[4], const double (*share)[4],
              const guint *len, const double *cap, guint n_links,
              const double *capacity, double *rate)
{
  g_autoptr (WeftMaxmin) m = weft_maxmin_new ();

  for (guint l = 0; l < n_links; l++)
    weft_maxmin_add_link (m, capacity[l], 0);
  for (guint i = 0; i < n; i++)
    {
      weft_maxmin_add_flow (m, cap[i]);
      for (guint k = 0; k < len[i]; k++)
        weft_maxmin_add_hop (m, path[i][k], share ? share[i][k] : 1);
    }
  weft_maxmin_solve (m);
  memcpy (rate, m->rate, n * sizeof (double));
}

/* How many links the largest group of flows crosses (flows that share a
 * link are in one group). */
static guint
largest_group (guint n, const guint (*path)[4], const guint *len,
               guint n_links)
{
  g_autofree guint *group = g_new (guint, n);
  g_autofree guint *least = g_new (guint, n_links);
  g_autofree guint *links = g_new0 (guint, n);
  g_autofree guint *seen = g_new (guint, n_links);

  for (guint i = 0; i < n; i++)
    group[i] = i;
  /* Flows that share a link take the least label among its flows, until
   * each group has its least flow's. */
  for (gboolean joined = TRUE; joined;)
    {
      for (guint l = 0; l < n_links; l++)
        least[l] = G_MAXUINT;
      for (guint i = 0; i < n; i++)
        for (guint k = 0; k < len[i]; k++)
          least[path[i][k]] = MIN (least[path[i][k]], group[i]);
      joined = FALSE;
      for (guint i = 0; i < n; i++)
        for (guint k = 0; k < len[i]; k++)
          if (least[path[i][k]] < group[i])
            {
              group[i] = least[path[i][k]];
              joined = TRUE;
            }
    }
  for (guint l = 0; l < n_links; l++)
    seen[l] = G_MAXUINT;
  guint most = 0;
  for (guint i = 0; i < n; i++)
    for (guint k = 0; k < len[i]; k++)
      if (seen[path[i][k]] != group[i])
        {
          seen[path[i][k]] = group[i];
          links[group[i]]++;
          most = MAX (most, links[group[i]]);
        }
  return most;
}

/* Link types t0-t3 of these speeds, for the large groups below. */
static const double speed[] = { 10e9, 25e9, 40e9, 100e9 };
#define FOUR_SPEEDS                                                          \
  "weft: 1\n"                                                                \
  "link_types:\n"                                                            \
  "  t0: {port: p, bandwidth: 10GB/s}\n"                                     \
  "  t1: {port: p, bandwidth: 25GB/s}\n"                                     \
  "  t2: {port: p, bandwidth: 40GB/s}\n"                                     \
  "  t3: {port: p, bandwidth: 100GB/s}\n"

/* A job from host h@a to host h@b, its bytes given later. */
static Job
host_job (const WeftTopology *topo, guint a, guint b, double cap)
{
  g_autofree char *src = g_strdup_printf ("h%u", a);
  g_autofree char *dst = g_strdup_printf ("h%u", b);
  return (Job) { node (topo, src), node (topo, dst), 0, cap, 0 };
}

/* Gives each of the @n jobs the bytes its @rate moves in 1 ms, runs them
 * together at flow fidelity, and checks that every one ends at 1 ms: so
 * each was given its rate, before any recomputation. */
static void
run_one_ms (const WeftTopology *topo, Job *jobs, const double *rate, guint n)
{
  const double seconds = 1e-3;
  for (guint i = 0; i < n; i++)
    jobs[i].bytes = (uint64_t) (rate[i] * seconds);
  g_autoptr (WeftSim) sim = weft_sim_new ();
  weft_network_free (run (sim, topo, WEFT_FIDELITY_FLOW, jobs, n));
  for (guint i = 0; i < n; i++)
    ck_assert_msg (fabs ((double) jobs[i].done - seconds * 1e12) < 1e3,
                   "flow %u at %.0f B/s ended at %" G_GUINT64_FORMAT " ps", i,
                   rate[i], (guint64) jobs[i].done);
}

START_TEST (test_max_min_over_many_links)
{
  /* Eight leaf switches of eight hosts under one core switch, links of
   * four speeds at random, and 48 flows between random hosts, a few with
   * caps: most of them share links, in a group of more than 64 links,
   * the size from which filling keeps its events in a heap.  Each flow is
   * given the bytes its max-min fair rate moves in 1 ms, so if every rate
   * is right all end together at 1 ms, before any recomputation. */
  enum { LEAVES = 8, HOSTS = 64, FLOWS = 48, LINKS = 4 * HOSTS };
  g_autoptr (GRand) rand = g_rand_new_with_seed (11);
  g_autoptr (GString) text = g_string_new (
      FOUR_SPEEDS
      "devices:\n"
      "  h: {kind: gpu, ports: {p: 1}, reduce_bandwidth: 1TB/s}\n"
      "  s: {kind: switch, ports: {p: 16}}\n"
      "nodes: [{name: core, device: s}, {name: 'sw[0-7]', device: s},\n"
      "        {name: 'h[0-63]', device: h}]\n"
      "links:\n");
  /* Link ids of the solver's problem: host h up 2h, down 2h + 1; leaf s
   * up to the core 2 HOSTS + 2s, down 2 HOSTS + 2s + 1. */
  double capacity[LINKS] = { 0 };
  for (guint h = 0; h < HOSTS; h++)
    {
      guint t = g_rand_int_range (rand, 0, 4);
      g_string_append_printf (text, "  - {a: h%u, b: sw%u, type: t%u}\n", h,
                              h / (HOSTS / LEAVES), t);
      capacity[2 * h] = capacity[2 * h + 1] = speed[t];
    }
  for (guint l = 0; l < LEAVES; l++)
    {
      guint t = g_rand_int_range (rand, 0, 4);
      g_string_append_printf (text, "  - {a: sw%u, b: core, type: t%u}\n", l,
                              t);
      capacity[2 * HOSTS + 2 * l] = capacity[2 * HOSTS + 2 * l + 1] = speed[t];
    }
  g_autoptr (WeftScenario) s = load_text (text->str);
  const WeftTopology *topo = s->topo;

  guint path[FLOWS][4], len[FLOWS];
  double cap[FLOWS], rate[FLOWS];
  Job jobs[FLOWS];
  for (guint i = 0; i < FLOWS; i++)
    {
      guint a = g_rand_int_range (rand, 0, HOSTS), b;
      do
        b = g_rand_int_range (rand, 0, HOSTS);
      while (b == a);
      guint la = a / (HOSTS / LEAVES), lb = b / (HOSTS / LEAVES);
      len[i] = 0;
      path[i][len[i]++] = 2 * a;
      if (la != lb)
        {
          path[i][len[i]++] = 2 * HOSTS + 2 * la;
          path[i][len[i]++] = 2 * HOSTS + 2 * lb + 1;
        }
      path[i][len[i]++] = 2 * b + 1;
      cap[i] = i % 8 == 3 ? 3e9 + 1e9 * (i % 5) : 0;
      jobs[i] = host_job (topo, a, b, cap[i]);
    }
  solver_rates (FLOWS, path, NULL, len, cap, LINKS, capacity, rate);

  ck_assert_uint_gt (largest_group (FLOWS, path, len, LINKS), 64);

  /* Rates differ (else the test would show little). */
  guint levels = 0;
  for (guint i = 0; i < FLOWS; i++)
    {
      gboolean again = FALSE;
      for (guint j = 0; j < i; j++)
        again |= fabs (rate[j] - rate[i]) < 1e-6 * rate[i];
      levels += !again;
    }
  ck_assert_uint_ge (levels, 6);

  run_one_ms (topo, jobs, rate, FLOWS);
}
END_TEST

START_TEST (test_stripes_in_a_large_group)
{
  /* 32 hosts, each joined to two switches by links of its own two speeds:
   * a transfer is striped over both ways, in proportion to each way's
   * narrowest link.  So the two links into a host carry the same flows,
   * but each with its own share of them, which differ from flow to flow
   * (with the source's speeds and the destination's): which of the two
   * fills first can change as flows freeze elsewhere.  48 flows, a few
   * capped, most in a group of more than 64 links; each is given the bytes
   * its max-min rate moves in 1 ms. */
  enum { HOSTS = 32, FLOWS = 48, LINKS = 4 * HOSTS };
  g_autoptr (GRand) rand = g_rand_new_with_seed (5);
  g_autoptr (GString) text = g_string_new (
      FOUR_SPEEDS
      "devices:\n"
      "  h: {kind: gpu, ports: {p: 2}, reduce_bandwidth: 1TB/s}\n"
      "  s: {kind: switch, ports: {p: 32}}\n"
      "nodes: [{name: 'sw[0-1]', device: s}, {name: 'h[0-31]', device: h}]\n"
      "links:\n");
  /* Link ids of the solver's problem: host h to switch w 4h + w, back
   * 4h + 2 + w. */
  double capacity[LINKS];
  for (guint h = 0; h < HOSTS; h++)
    for (guint w = 0; w < 2; w++)
      {
        guint t = g_rand_int_range (rand, 0, 4);
        g_string_append_printf (text, "  - {a: h%u, b: sw%u, type: t%u}\n",
                                h, w, t);
        capacity[4 * h + w] = capacity[4 * h + 2 + w] = speed[t];
      }
  g_autoptr (WeftScenario) s = load_text (text->str);
  const WeftTopology *topo = s->topo;

  guint path[FLOWS][4], len[FLOWS];
  double share[FLOWS][4], cap[FLOWS], rate[FLOWS];
  Job jobs[FLOWS];
  for (guint i = 0; i < FLOWS; i++)
    {
      guint a = g_rand_int_range (rand, 0, HOSTS), b;
      do
        b = g_rand_int_range (rand, 0, HOSTS);
      while (b == a);
      double way0 = MIN (capacity[4 * a], capacity[4 * b + 2]);
      double way1 = MIN (capacity[4 * a + 1], capacity[4 * b + 3]);
      double p = way0 / (way0 + way1);
      len[i] = 4;
      for (guint w = 0; w < 2; w++)
        {
          path[i][2 * w] = 4 * a + w;
          path[i][2 * w + 1] = 4 * b + 2 + w;
          share[i][2 * w] = share[i][2 * w + 1] = w == 0 ? p : 1 - p;
        }
      cap[i] = i % 8 == 5 ? 4e9 + 2e9 * (i % 3) : 0;
      jobs[i] = host_job (topo, a, b, cap[i]);
    }
  solver_rates (FLOWS, path, share, len, cap, LINKS, capacity, rate);
  ck_assert_uint_gt (largest_group (FLOWS, path, len, LINKS), 64);

  /* Some host takes flows from sources of different proportions. */
  gboolean mixed = FALSE;
  for (guint i = 0; i < FLOWS; i++)
    for (guint j = 0; j < i; j++)
      mixed |= path[i][1] == path[j][1] && share[i][0] != share[j][0];
  ck_assert (mixed);

  run_one_ms (topo, jobs, rate, FLOWS);
}
END_TEST

START_TEST (test_stripes_carry_exact_bytes)
{
  /* In the flow model a striped flow keeps each link's share of its rate
   * as a double, and works out the bytes a link carried from it when the
   * flow ends; from 256 TiB up it keeps the bytes themselves.  Transfers
   * striped 10:1 over two ways, each size twice at once (routed, then on
   * the remembered route), below and above that: each way's two links
   * carry the same bytes, and the two ways' first hops carry all the
   * bytes, to the byte.  (At the smaller size share * bytes falls just
   * short of the slow way's bytes: truncated, not rounded, it loses one.) */
  g_autoptr (WeftScenario) s = load_text (TWO_WAYS);
  const WeftTopology *topo = s->topo;
  uint32_t h0 = node (topo, "h0"), h1 = node (topo, "h1");
  const uint64_t sizes[] = { UINT64_C (4969906209878),
                             (UINT64_C (1) << 56) + 12345 };

  for (guint k = 0; k < G_N_ELEMENTS (sizes); k++)
    {
      g_autoptr (WeftSim) sim = weft_sim_new ();
      WeftNetworkConfig config = { WEFT_FIDELITY_FLOW, 0, 0, 0 };
      g_autoptr (WeftNetwork) net = weft_network_new (sim, topo, &config);
      Job jobs[2] = { { h0, h1, sizes[k], 0, 0 }, { h0, h1, sizes[k], 0, 0 } };
      for (guint i = 0; i < 2; i++)
        weft_network_transfer (net, h0, h1, sizes[k], 0, job_done, &jobs[i],
                               NULL);
      weft_sim_run (sim);
      weft_network_flush_stats (net);
      uint64_t way[2][2] = { { 0 } };
      for (uint32_t l = 0; l < topo->n_links; l++)
        {
          const WeftLink *link = &topo->links[l];
          uint32_t sw = link->src == h0 ? link->dst : link->src;
          gboolean first = link->src == h0;
          if (link->src == h0 || link->dst == h1)
            way[sw == node (topo, "sw1")][!first] += net->stats->links[l].bytes;
        }
      ck_assert_uint_eq (way[0][0], way[0][1]);
      ck_assert_uint_eq (way[1][0], way[1][1]);
      ck_assert_uint_eq (way[0][0] + way[1][0], 2 * sizes[k]);
      ck_assert (fabs ((double) way[1][0] / (2.0 * sizes[k]) - 1.0 / 11)
                 < 1e-9);
    }
}
END_TEST

/* ---- finding the flows a change affects ---- */

/* Transfers between random hosts of a star, starting in bursts (a
 * collective's lockstep instants, where most flows in flight change at
 * once) and one by one between them, some capped: whether the flows a
 * change affects are found through the changed links' lists or by reading
 * every flow in flight, and with the speed-ups off, every transfer ends at
 * the same picosecond. */
START_TEST (test_flows_found_either_way)
{
  enum { HOSTS = 48, JOBS = 4000 };
  uint32_t ids[HOSTS];
  static Job jobs[4][JOBS];
  g_autoptr (WeftScenario) s = load_hosts (HOSTS, ids);
  g_autoptr (GRand) rng = g_rand_new_with_seed (7);
  WeftTime at[JOBS];

  for (guint i = 0; i < JOBS; i++)
    {
      uint32_t a = g_rand_int_range (rng, 0, HOSTS);
      uint32_t b = (a + g_rand_int_range (rng, 1, HOSTS)) % HOSTS;
      double cap = g_rand_int_range (rng, 0, 4) == 0
                       ? g_rand_double_range (rng, 1e9, 10e9)
                       : 0;
      jobs[0][i] = (Job) { ids[a], ids[b],
                           (uint64_t) g_rand_int_range (rng, 1000, 400000),
                           cap, WEFT_TIME_MAX };
      /* Half in bursts every 20 us, half at random times. */
      at[i] = g_rand_boolean (rng)
                  ? (WeftTime) g_rand_int_range (rng, 0, 50) * 20 * WEFT_US
                  : (WeftTime) g_rand_int_range (rng, 0, 1000000) * WEFT_NS;
    }
  for (int k = 1; k < 4; k++)
    memcpy (jobs[k], jobs[0], sizeof jobs[0]);

  WeftScan scans[4] = { WEFT_SCAN_AUTO, WEFT_SCAN_ALWAYS, WEFT_SCAN_NEVER,
                        WEFT_SCAN_AUTO };
  for (int k = 0; k < 4; k++)
    run_at (s->topo, scans[k], k == 3, jobs[k], at, JOBS);
  for (int k = 1; k < 4; k++)
    for (guint i = 0; i < JOBS; i++)
      ck_assert_msg (jobs[k][i].done == jobs[0][i].done,
                     "way %d, transfer %u: %" G_GUINT64_FORMAT " ps against %"
                     G_GUINT64_FORMAT, k, i, jobs[k][i].done,
                     jobs[0][i].done);
}
END_TEST

/* Two equal transfers between the same hosts end together, leaving their
 * links empty: one sent between the same hosts afterwards takes what it
 * takes on an idle network, found whichever way. */
START_TEST (test_links_emptied_together)
{
  uint32_t ids[3];
  g_autoptr (WeftScenario) s = load_hosts (3, ids);
  WeftNetworkConfig config = { WEFT_FIDELITY_FLOW, WEFT_US, 0, 0 };
  const WeftTime later = 100 * WEFT_US;
  WeftTime alone = 0;

  for (int k = 0; k < 4; k++)
    {
      Job jobs[3];
      Start starts[3];
      for (int i = 0; i < 3; i++)
        jobs[i] = (Job) { ids[0], ids[1], 250000, 0, WEFT_TIME_MAX };
      g_autoptr (WeftSim) sim = weft_sim_new ();
      g_autoptr (WeftNetwork) net = weft_network_new (sim, s->topo, &config);
      weft_network_set_scan (net, k == 1 ? WEFT_SCAN_ALWAYS : WEFT_SCAN_NEVER);
      weft_network_set_plain (net, k == 2);
      /* k == 3: the third alone. */
      for (int i = k == 3 ? 2 : 0; i < 3; i++)
        {
          starts[i] = (Start) { net, &jobs[i] };
          weft_sim_schedule_at (sim, i == 2 ? later : 0, start_job, &starts[i],
                                NULL);
        }
      weft_sim_run (sim);
      ck_assert_msg (jobs[2].done != WEFT_TIME_MAX,
                     "way %d: the third transfer never ended", k);
      if (k < 3)
        {
          ck_assert_uint_eq (jobs[0].done, jobs[1].done);
          ck_assert_uint_lt (jobs[0].done, later);
        }
      if (k == 0)
        alone = jobs[2].done;
      else
        ck_assert_uint_eq (jobs[2].done, alone);
    }
}
END_TEST

/* Two switches of eight hosts each, joined by a bundle of @lanes links. */
static WeftScenario *
load_two_leaves (int lanes, uint32_t *ids)
{
  g_autofree char *text = g_strdup_printf (
      HOSTS_TYPES
      "nodes:\n"
      "  - {name: 'h[0-15]', device: h}\n"
      "  - {name: 's[0-1]', device: s}\n"
      "links:\n"
      "  - {a: 'h[0-7]', b: s0, type: l}\n"
      "  - {a: 'h[8-15]', b: s1, type: l}\n"
      "  - {a: s0, b: s1, type: l, lanes: %d}\n",
      16, lanes);
  WeftScenario *s = load_text (text);

  for (int i = 0; i < 16; i++)
    {
      g_autofree char *name = g_strdup_printf ("h%d", i);
      ids[i] = node (s->topo, name);
    }
  return s;
}

/* @n jobs starting at @at over @topo, with the speed-ups off if @plain;
 * a transfer from node @extra (WEFT_NONE: none) joins at @extra_at.
 * Returns how many links the flow model left out of filling at the end. */
static uint32_t
run_unfilled (const WeftTopology *topo, gboolean plain, Job *jobs,
              const WeftTime *at, guint n, Job *extra, WeftTime extra_at)
{
  WeftNetworkConfig config = { WEFT_FIDELITY_FLOW, WEFT_US, 0, 0 };
  g_autoptr (WeftSim) sim = weft_sim_new ();
  g_autoptr (WeftNetwork) net = weft_network_new (sim, topo, &config);
  g_autofree Start *starts = g_new (Start, n + 1);

  weft_network_set_plain (net, plain);
  for (guint i = 0; i < n; i++)
    {
      starts[i] = (Start) { net, &jobs[i] };
      weft_sim_schedule_at (sim, at[i], start_job, &starts[i], NULL);
    }
  if (extra != NULL)
    {
      starts[n] = (Start) { net, extra };
      weft_sim_schedule_at (sim, extra_at, start_job, &starts[n], NULL);
    }
  weft_sim_run (sim);
  ck_assert_uint_eq (net->finished, n + (extra != NULL));
  return weft_flow_links_unfilled (net);
}

/* A link out of a switch whose capacity is at least what the switch's
 * other links bring in cannot fill: the bundle of 8 lanes between two
 * switches of 8 hosts.  Leaving it out of filling keeps apart the groups
 * it would chain, and changes no transfer's end, to the picosecond: random
 * transfers within and across the switches, in bursts and one by one, some
 * capped.  A bundle of 4 lanes can fill and is kept; and once a switch
 * sends a transfer of its own, nothing more is left out, and still no end
 * moves. */
START_TEST (test_links_that_cannot_fill)
{
  enum { JOBS = 3000 };
  static Job plan[JOBS], jobs[2][JOBS];
  g_autoptr (GRand) rng = g_rand_new_with_seed (11);
  WeftTime at[JOBS];
  int lanes[] = { 8, 4 };

  for (guint i = 0; i < JOBS; i++)
    {
      uint32_t a = g_rand_int_range (rng, 0, 16);
      uint32_t b = (a + g_rand_int_range (rng, 1, 16)) % 16;
      double cap = g_rand_int_range (rng, 0, 4) == 0
                       ? g_rand_double_range (rng, 1e9, 10e9)
                       : 0;
      plan[i] = (Job) { a, b, (uint64_t) g_rand_int_range (rng, 1000,
                                                              400000),
                           cap, WEFT_TIME_MAX };
      at[i] = g_rand_boolean (rng)
                  ? (WeftTime) g_rand_int_range (rng, 0, 50) * 20 * WEFT_US
                  : (WeftTime) g_rand_int_range (rng, 0, 1000000) * WEFT_NS;
    }
  for (guint c = 0; c < G_N_ELEMENTS (lanes); c++)
    for (int relay = 0; relay < 2; relay++)
      {
        uint32_t ids[16];
        g_autoptr (WeftScenario) s = load_two_leaves (lanes[c], ids);
        uint32_t s0 = node (s->topo, "s0");
        Job extra[2];
        uint32_t left[2];
        for (int k = 0; k < 2; k++)
          {
            for (guint i = 0; i < JOBS; i++)
              {
                jobs[k][i] = plan[i];
                jobs[k][i].src = ids[plan[i].src];
                jobs[k][i].dst = ids[plan[i].dst];
              }
            extra[k] = (Job) { s0, ids[12], 200000, 0, WEFT_TIME_MAX };
            left[k] = run_unfilled (s->topo, k == 1, jobs[k], at, JOBS,
                                    relay ? &extra[k] : NULL, 500 * WEFT_US);
          }
        /* Left out: s0 -> s1 and s1 -> s0 with 8 lanes, none with 4, none
         * with the speed-ups off, none once s0 has sent. */
        ck_assert_uint_eq (left[0], lanes[c] == 8 && !relay ? 2 : 0);
        ck_assert_uint_eq (left[1], 0);
        for (guint i = 0; i < JOBS; i++)
          ck_assert_msg (jobs[0][i].done == jobs[1][i].done,
                         "%d lanes, transfer %u: %" G_GUINT64_FORMAT
                         " ps against %" G_GUINT64_FORMAT " with every link",
                         lanes[c], i, jobs[0][i].done, jobs[1][i].done);
        if (relay)
          ck_assert_uint_eq (extra[0].done, extra[1].done);
      }
}
END_TEST

/* A rank's successive sends to one peer are in flight together, on the
 * same striped path with the same unequal shares: such transfers are one
 * bundle, filled as one flow.  Equal ones started together end together
 * at the closed form; a group joined later by a flow on some of its links,
 * and random bursts (some capped, some of a few bytes striped in other
 * shares, some on paths that only overlap), end at the same picosecond as
 * with the speed-ups off, and within one of it with each transfer a flow
 * of its own. */
START_TEST (test_flows_on_one_path)
{
  enum { JOBS = 2000 };
  g_autoptr (WeftScenario) s = load_text (
      "weft: 1\n"
      "link_types:\n"
      "  fast: {port: p, bandwidth: 100GB/s, latency: 0ns, payload: 4096B}\n"
      "  slow: {port: p, bandwidth: 10GB/s, latency: 0ns, payload: 4096B}\n"
      "devices:\n"
      "  h: {kind: gpu, ports: {p: 2}, reduce_bandwidth: 1TB/s}\n"
      "  s: {kind: switch, ports: {p: 4}}\n"
      "nodes: [{name: 'h[0-3]', device: h}, {name: 'sw[0-1]', device: s}]\n"
      "links:\n"
      "  - {a: 'h[0-3]', b: sw0, type: fast}\n"
      "  - {a: 'h[0-3]', b: sw1, type: slow}\n");
  const WeftTopology *topo = s->topo;
  uint32_t h[4] = { node (topo, "h0"), node (topo, "h1"), node (topo, "h2"),
                    node (topo, "h3") };

  /* Five of 11 MB at once from h0 to h1, striped 10:1: 55 MB at 110 GB/s. */
  {
    Job jobs[5];
    for (int i = 0; i < 5; i++)
      jobs[i] = (Job) { h[0], h[1], 11000000, 0, 0 };
    g_autoptr (WeftSim) sim = weft_sim_new ();
    weft_network_free (run (sim, topo, WEFT_FIDELITY_FLOW, jobs, 5));
    for (int i = 0; i < 5; i++)
      ck_assert_msg (jobs[i].done >= 500 * WEFT_US - 2
                         && jobs[i].done <= 500 * WEFT_US + 2,
                     "transfer %d: %" G_GUINT64_FORMAT " ps, not 500 us", i,
                     jobs[i].done);
  }

  /* Three from h0 to h1 together, filled on their own; then one from h0
   * to h2, which shares h0's links with them: the second filling starts
   * from what the first left on those links. */
  {
    Job both[2][4];
    const WeftTime when[4] = { 0, 0, 0, 10 * WEFT_US };
    for (int k = 0; k < 2; k++)
      {
        for (int i = 0; i < 4; i++)
          both[k][i] = (Job) { h[0], h[i < 3 ? 1 : 2], 4000000, 0,
                               WEFT_TIME_MAX };
        run_at (topo, WEFT_SCAN_AUTO, k == 1, both[k], when, 4);
      }
    for (int i = 0; i < 4; i++)
      ck_assert_msg (both[0][i].done == both[1][i].done,
                     "transfer %d: %" G_GUINT64_FORMAT " ps, with the "
                     "speed-ups off %" G_GUINT64_FORMAT, i, both[0][i].done,
                     both[1][i].done);
  }

  static Job jobs[3][JOBS];
  WeftTime at[JOBS];
  g_autoptr (GRand) rng = g_rand_new_with_seed (11);
  for (guint i = 0; i < JOBS;)
    {
      /* Bursts of one to four on one pair every 10 us, mostly h0 -> h1 or
       * h2 -> h3; h0 -> h2 and h3 -> h1 share links with them, so that
       * flows held fixed cross the links of those refilled.  One in eight
       * capped, one in six of a few bytes. */
      static const int pairs[10][2] = { { 0, 1 }, { 0, 1 }, { 0, 1 },
                                        { 0, 1 }, { 0, 1 }, { 2, 3 },
                                        { 2, 3 }, { 2, 3 }, { 0, 2 },
                                        { 3, 1 } };
      int kind = g_rand_int_range (rng, 0, 10);
      WeftTime when = (WeftTime) (i / 2) * 10 * WEFT_US;
      for (int n = g_rand_int_range (rng, 1, 5); n > 0 && i < JOBS; n--, i++)
        {
          double cap = g_rand_int_range (rng, 0, 8) == 0 ? 20e9 : 0;
          /* A few bytes are striped in other shares than 10:1. */
          uint64_t bytes = g_rand_int_range (rng, 0, 6) == 0
                               ? (uint64_t) g_rand_int_range (rng, 2, 30)
                               : (uint64_t) g_rand_int_range (rng, 100000,
                                                              2000000);
          jobs[0][i] = (Job) { h[pairs[kind][0]], h[pairs[kind][1]], bytes,
                               cap, WEFT_TIME_MAX };
          at[i] = when;
        }
    }
  memcpy (jobs[1], jobs[0], sizeof jobs[0]);
  memcpy (jobs[2], jobs[0], sizeof jobs[0]);
  for (int k = 0; k < 3; k++)
    run_at (topo, WEFT_SCAN_AUTO,
            k == 1 ? WEFT_PLAIN_SPEEDUPS : k == 2 ? WEFT_PLAIN_BUNDLES : 0,
            jobs[k], at, JOBS);
  for (guint i = 0; i < JOBS; i++)
    {
      ck_assert_msg (jobs[1][i].done == jobs[0][i].done,
                     "transfer %u: %" G_GUINT64_FORMAT " ps, with the "
                     "speed-ups off %" G_GUINT64_FORMAT, i, jobs[0][i].done,
                     jobs[1][i].done);
      /* Bundled, a transfer's bytes left are its tag less what its
       * bundle has served, not a count of its own: the same to rounding,
       * which a drain time's ceiling may turn into a picosecond. */
      WeftTime d = jobs[2][i].done > jobs[0][i].done
                       ? jobs[2][i].done - jobs[0][i].done
                       : jobs[0][i].done - jobs[2][i].done;
      ck_assert_msg (d <= 1, "transfer %u: %" G_GUINT64_FORMAT " ps, one "
                     "flow each %" G_GUINT64_FORMAT, i, jobs[0][i].done,
                     jobs[2][i].done);
    }
}
END_TEST

static Suite *
flow_suite (void)
{
  Suite *s = suite_create ("flow");
  TCase *tc;

  tc = tcase_create ("max-min rates");
  tcase_set_timeout (tc, 120);
  tcase_add_test (tc, test_flows_leave_long_and_short_lists);
  tcase_add_test (tc, test_parking_lot);
  tcase_add_test (tc, test_max_min_over_many_links);
  tcase_add_test (tc, test_stripes_in_a_large_group);
  tcase_add_test (tc, test_stripes_carry_exact_bytes);
  suite_add_tcase (s, tc);

  tc = tcase_create ("affected flows");
  tcase_set_timeout (tc, 120);
  tcase_add_test (tc, test_flows_found_either_way);
  tcase_add_test (tc, test_flows_on_one_path);
  tcase_add_test (tc, test_links_emptied_together);
  tcase_add_test (tc, test_links_that_cannot_fill);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  SRunner *runner = srunner_create (flow_suite ());

  srunner_run_all (runner, CK_NORMAL);
  int failed = srunner_ntests_failed (runner);
  srunner_free (runner);
  return failed == 0 ? 0 : 1;
}
