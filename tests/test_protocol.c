/* Tests of NCCL's protocols as weft runs them: LL held to the GPUs'
 * ll_bandwidth, NVLS's pieces by size, the latency of a small message;
 * and the raw protocol's closed forms. */
#include "collectives/collective_run.h"
#include "network_jobs.h"
#include "topology/scenario.h"

#include <check.h>
#include <glib/gstdio.h>
#include <math.h>

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

static GArray *
all_gpus (const WeftTopology *topo)
{
  GArray *gpus = g_array_new (FALSE, FALSE, sizeof (uint32_t));

  for (uint32_t n = 0; n < topo->n_nodes; n++)
    if (topo->nodes[n].kind == WEFT_NODE_GPU)
      g_array_append_val (gpus, n);
  return gpus;
}

static WeftTime
h100_all_reduce (const WeftScenario *s, WeftAlgorithm alg,
                 WeftProtocolKind proto, uint32_t chunks, uint64_t size)
{
  g_autoptr (GArray) gpus = all_gpus (s->topo);
  WeftCollectiveParams params = { 0, chunks, 0, NULL, 1, NULL, NULL, 0, FALSE, NULL };
  WeftRunOptions options = { WEFT_FIDELITY_FLOW, 1, 0, NULL, FALSE, 0, 0,
                             NULL, 1, NULL };
  WeftCollectiveResult r;

  ck_assert (weft_collective_run (s->topo, (uint32_t *) gpus->data, 8,
                                  WEFT_OP_ALL_REDUCE, alg, proto, size,
                                  &params, &options, &r, NULL));
  g_free (r.spans);
  return r.time;
}

/* @n GPUs on one switch, each by a link of 25 GB/s and 500 ns, the
 * switch 100 ns: every transfer crosses two links and the switch. */
static WeftScenario *
star (uint32_t n)
{
  g_autofree char *text = g_strdup_printf (
      "weft: 1\nlink_types:\n"
      "  nv: {port: nvlink, bandwidth: 25GB/s, latency: 500ns}\n"
      "devices:\n"
      "  g: {kind: gpu, ports: {nvlink: 1}, reduce_bandwidth: 1TB/s}\n"
      "  s: {kind: switch, ports: {nvlink: %u}, latency: 100ns}\n"
      "nodes: [{name: 'g[0-%u]', device: g}]\n"
      "fabrics: [{kind: star, name: sw, nodes: 'g[0-%u]', switch: s, "
      "link: nv}]\n", n, n - 1, n - 1);
  return load_text (text);
}

START_TEST (test_raw_is_alpha_beta)
{
  /* With the raw protocol a ring all_reduce is the textbook's: 2(n-1)
   * steps of a latency and a chunk over the link, and n-1 reductions of a
   * chunk, at every fidelity.  Eight GPUs on one switch: a step crosses
   * two links and the switch. */
  g_autoptr (WeftScenario) s = star (8);
  g_autoptr (GArray) gpus = all_gpus (s->topo);
  WeftCollectiveParams params = { 1, 1, 0, NULL, 1, NULL, NULL, 0, FALSE, NULL };
  const WeftFidelity fidelities[] = { WEFT_FIDELITY_FLOW,
                                      WEFT_FIDELITY_ANALYTICAL,
                                      WEFT_FIDELITY_PACKET };
  const uint64_t sizes[] = { 8 << 20, 1000003 };
  for (guint i = 0; i < G_N_ELEMENTS (fidelities); i++)
    for (guint k = 0; k < G_N_ELEMENTS (sizes); k++)
      {
        WeftRunOptions options = { fidelities[i], 1, 0, NULL, FALSE, 0, 0,
                                   NULL, 1, NULL };
        WeftCollectiveResult r;
        ck_assert (weft_collective_run (s->topo, (uint32_t *) gpus->data, 8,
                                        WEFT_OP_ALL_REDUCE, WEFT_ALG_RING,
                                        WEFT_PROTOCOL_RAW, sizes[k], &params,
                                        &options, &r, NULL));
        g_free (r.spans);
        double n = 8, c = sizes[k] / n, latency = 2 * 500e-9 + 100e-9;
        double closed = 2 * (n - 1) * (latency + c / 25e9)
                        + (n - 1) * c / 1e12;
        double t = r.time * 1e-12;
        ck_assert_msg (fabs (t / closed - 1) < 1e-3, "fidelity %u, %"
                       G_GUINT64_FORMAT " B: %.4f us against %.4f us", i,
                       sizes[k], t * 1e6, closed * 1e6);
      }
  /* NCCL's own choice never takes it. */
  ck_assert (!weft_protocol_in_auto (WEFT_PROTOCOL_RAW));
  ck_assert (weft_protocol_in_auto (WEFT_PROTOCOL_SIMPLE));
}
END_TEST

static void
ended (WeftSim *sim, void *target, void *data)
{
  (void) data;
  *(WeftTime *) target = weft_sim_now (sim);
}

/* The time of @sched, checked, on @s's GPUs (rank r the r-th) at
 * @fidelity with the raw protocol, link bins @bin_width ps wide. */
static double
raw_run (const WeftScenario *s, const WeftSchedule *sched,
         WeftFidelity fidelity, WeftTime bin_width)
{
  g_autoptr (GArray) gpus = all_gpus (s->topo);
  g_autoptr (GError) error = NULL;

  ck_assert_msg (weft_schedule_check (sched, &error), "%s", error->message);
  g_autoptr (WeftSim) sim = weft_sim_new ();
  WeftNetworkConfig config = { fidelity, bin_width, 0, 0 };
  g_autoptr (WeftNetwork) net = weft_network_new (sim, s->topo, &config);
  WeftTime end = 0;
  weft_execute (net, sched, (uint32_t *) gpus->data,
                weft_protocol_get (WEFT_PROTOCOL_RAW, WEFT_ALG_RING), NULL,
                ended, &end, NULL);
  weft_sim_run (sim);
  return (double) end * 1e-12;
}

/* The time of @n sends from the first GPU of @s to the second, with the
 * raw protocol: send k of @bytes[k] (or @bytes[0] for all), on tag 0 or
 * (@apart) tag k, after the send @after[k] (WEFT_NO_STEP: at once; NULL:
 * all at once). */
static double
sends_run (const WeftScenario *s, uint32_t n, const uint64_t *bytes,
           gboolean each_size, const uint32_t *after, gboolean apart)
{
  g_autoptr (WeftSchedule) sched = weft_schedule_new (2);

  for (uint32_t k = 0; k < n; k++)
    {
      uint64_t b = bytes[each_size ? k : 0];
      weft_schedule_send (sched, 0, 1, apart ? k : 0, b,
                          after ? after[k] : WEFT_NO_STEP);
      weft_schedule_recv (sched, 1, 0, apart ? k : 0, b, WEFT_NO_STEP);
    }
  return raw_run (s, sched, WEFT_FIDELITY_FLOW, WEFT_US);
}

static double
sends_at_once (const WeftScenario *s, uint32_t n, uint64_t bytes,
               gboolean one_tag)
{
  return sends_run (s, n, &bytes, FALSE, NULL, !one_tag);
}

START_TEST (test_connection_slots)
{
  /* A connection (a GPU's sends to one GPU on one tag) has NCCL_STEPS
   * slots: of twenty sends ready at once, eight share the link, then the
   * next eight once their receives are done, then four: three latencies
   * and the twenty sends' bytes.  On twenty tags all go at once: one
   * latency.  Two GPUs on one switch: a send crosses two links of 500 ns
   * and 25 GB/s and the switch's 100 ns. */
  g_autoptr (WeftScenario) s = star (2);
  double latency = 2 * 500e-9 + 100e-9, bytes = 65536, rate = 25e9;

  ck_assert_uint_eq (WEFT_CONNECTION_SLOTS, 8);
  double one = sends_at_once (s, 20, 65536, TRUE);
  double closed = 3 * latency + 20 * bytes / rate;
  ck_assert_msg (fabs (one / closed - 1) < 1e-6, "%.4f us against %.4f us",
                 one * 1e6, closed * 1e6);
  double apart = sends_at_once (s, 20, 65536, FALSE);
  closed = latency + 20 * bytes / rate;
  ck_assert_msg (fabs (apart / closed - 1) < 1e-6,
                 "%.4f us against %.4f us", apart * 1e6, closed * 1e6);
  /* As many as the slots: no wait. */
  double eight = sends_at_once (s, 8, 65536, TRUE);
  closed = latency + 8 * bytes / rate;
  ck_assert_msg (fabs (eight / closed - 1) < 1e-6,
                 "%.4f us against %.4f us", eight * 1e6, closed * 1e6);

  /* Twenty sends that wait for a step first (as a ring's wait for the
   * data), then for a slot: the same. */
  uint32_t after[20];
  uint64_t size[20];
  for (uint32_t k = 0; k < 20; k++)
    after[k] = k == 0 ? WEFT_NO_STEP : 0;
  double waited = sends_run (s, 20, (const uint64_t[]) { 65536 }, FALSE,
                             after, FALSE);
  /* Send 0 alone, then 1-8 together (send 0's receive freed send 8's
   * slot), 9-16, 17-19. */
  closed = (latency + bytes / rate) + (latency + 8 * bytes / rate)
           + (latency + 8 * bytes / rate) + (latency + 3 * bytes / rate);
  ck_assert_msg (fabs (waited / closed - 1) < 1e-6,
                 "%.4f us against %.4f us", waited * 1e6, closed * 1e6);

  /* A slot is the receive's of the send eight before, not any receive's:
   * send 0 is twice as large as sends 1-7, which end first, their
   * receives' slots going to sends 9-15, which wait for send 8 too; send
   * 8 waits for send 0's slot.  Sends 0-7 share the link until 1-7 end
   * (8 S at B), send 0's second S goes alone, then send 8, then 9-15. */
  for (uint32_t k = 0; k < 16; k++)
    {
      size[k] = k == 0 ? 2 * 65536 : 65536;
      after[k] = k > 8 ? 8 : WEFT_NO_STEP;
    }
  double turns = sends_run (s, 16, size, TRUE, after, FALSE);
  closed = (latency + 9 * bytes / rate) + (latency + bytes / rate)
           + (latency + 7 * bytes / rate);
  ck_assert_msg (fabs (turns / closed - 1) < 1e-6,
                 "%.4f us against %.4f us", turns * 1e6, closed * 1e6);
}
END_TEST

START_TEST (test_ll_held_to_ll_bandwidth)
{
  /* Inside a server LL reaches at most the GPU's ll_bandwidth of bus
   * bandwidth (NCCL's llMaxBw, 141 GB/s on an H100), below half of NCCL's
   * 370.8 GB/s over its NVLinks: a large ring all_reduce with LL comes to
   * it, within the latencies. */
  g_autoptr (WeftScenario) s = load ("dgx-h100.yaml");
  uint64_t size = 256 << 20;
  double t = (double) h100_all_reduce (s, WEFT_ALG_RING, WEFT_PROTOCOL_LL, 0,
                                       size) * 1e-12;
  double busbw = size / t * 2 * 7 / 8 / 1e9;
  ck_assert_msg (busbw <= 141 && busbw >= 0.99 * 141, "%.2f GB/s", busbw);
}
END_TEST

/* The busbw (GB/s) of a ring all_reduce of @size with @protocol over the
 * first @n GPUs of @s (the rail scenario's servers, in order), at
 * @fidelity with @chunks a channel (0: auto). */
static double
rail_ring_busbw_at (const WeftScenario *s, uint32_t n,
                    WeftProtocolKind protocol, uint64_t size,
                    WeftFidelity fidelity, uint32_t chunks)
{
  g_autoptr (GArray) gpus = all_gpus (s->topo);
  WeftCollectiveParams params = { 0, chunks, 0, NULL, 1, NULL, NULL, 0, FALSE,
                                  NULL };
  WeftRunOptions options = { fidelity, 1, 0, NULL, FALSE, 0, 0, NULL, 1,
                             NULL };
  WeftCollectiveResult r;

  ck_assert (weft_collective_run (s->topo, (uint32_t *) gpus->data, n,
                                  WEFT_OP_ALL_REDUCE, WEFT_ALG_RING, protocol,
                                  size, &params, &options, &r, NULL));
  g_free (r.spans);
  return size / (r.time * 1e-12) / 1e9 * 2 * (n - 1) / n;
}

static double
rail_ring_busbw (const WeftScenario *s, uint32_t n, WeftProtocolKind protocol,
                 uint64_t size)
{
  return rail_ring_busbw_at (s, n, protocol, size, WEFT_FIDELITY_FLOW, 0);
}

START_TEST (test_ll_held_across_servers)
{
  /* Across servers NCCL's llMaxBw is lower (an H100's 45 GB/s across two
   * servers, 35 across more): a large ring all_reduce with LL over 2 and 4
   * DGX H100 comes to it, less what weft's ring loses to NCCL's model
   * there (its Simple ring reaches 345 of 370.8 GB/s over 2 servers). */
  g_autoptr (WeftScenario) s = load ("h100-256-rail.yaml");
  const uint32_t ranks[] = { 16, 32 };
  const double cap[] = { 45, 35 };

  for (int i = 0; i < 2; i++)
    {
      double busbw = rail_ring_busbw (s, ranks[i], WEFT_PROTOCOL_LL,
                                      256 << 20);
      ck_assert_msg (busbw <= cap[i] && busbw >= 0.9 * cap[i],
                     "%u GPUs: %.2f GB/s", ranks[i], busbw);
    }
}
END_TEST

START_TEST (test_channel_caps)
{
  /* NCCL holds a channel's bus bandwidth to its per-channel speed tables
   * (tuning.cc's perChMaxRingLL128Bws: 36.7 GB/s on Hopper): a ring with
   * LL128 over two DGX H100, on NCCL's 8 channels there, reaches at most
   * 8 x 36.7 = 293.6 GB/s busbw, below the 0.92 x 8 x 45 = 331 its links
   * would carry; inside one, 12 channels (440.4) do not bind below the
   * NVLinks' 0.92 x 370.8 = 341. */
  g_autoptr (WeftScenario) s = load ("h100-256-rail.yaml");
  g_autoptr (GArray) gpus = all_gpus (s->topo);
  const uint32_t *g = (const uint32_t *) gpus->data;

  ck_assert (fabs (weft_protocol_channel_cap (WEFT_ALG_RING,
                                              WEFT_PROTOCOL_LL128, s->topo,
                                              g, 16) / 293.6e9 - 1) < 1e-9);
  ck_assert (fabs (weft_protocol_channel_cap (WEFT_ALG_RING,
                                              WEFT_PROTOCOL_LL128, s->topo,
                                              g, 8) / 440.4e9 - 1) < 1e-9);
  ck_assert (weft_protocol_channel_cap (WEFT_ALG_RING, WEFT_PROTOCOL_SIMPLE,
                                        s->topo, g, 16) == 0);
  ck_assert (weft_protocol_channel_cap (WEFT_ALG_HIER, WEFT_PROTOCOL_LL128,
                                        s->topo, g, 16) == 0);
  const uint32_t ranks[] = { 16, 8 };
  const double low[] = { 0.9 * 293.6, 0.9 * 341 }, high[] = { 293.6, 341 };
  for (int i = 0; i < 2; i++)
    {
      double busbw = rail_ring_busbw (s, ranks[i], WEFT_PROTOCOL_LL128,
                                      1 << 30);
      ck_assert_msg (busbw <= high[i] && busbw >= low[i], "%u GPUs: %.2f GB/s",
                     ranks[i], busbw);
    }
  /* Each fidelity holds the GPUs to the same bound, whatever link each
   * channel leaves by: pipelined in 8 chunks a channel across two servers,
   * the analytical and packet models come within 3% of the flow model. */
  const WeftFidelity others[] = { WEFT_FIDELITY_ANALYTICAL,
                                  WEFT_FIDELITY_PACKET };
  double flow = rail_ring_busbw_at (s, 16, WEFT_PROTOCOL_LL128, 16 << 20,
                                    WEFT_FIDELITY_FLOW, 8);
  for (int i = 0; i < 2; i++)
    {
      double busbw = rail_ring_busbw_at (s, 16, WEFT_PROTOCOL_LL128, 16 << 20,
                                         others[i], 8);
      ck_assert_msg (fabs (busbw / flow - 1) < 0.03 && busbw <= 293.6,
                     "%s: %.2f GB/s, flow %.2f", weft_fidelity_name (others[i]),
                     busbw, flow);
    }
}
END_TEST

/* A ring all_reduce of 256 MiB with LL over two servers of two H100 whose
 * NVLinks are @lanes lanes of NVLink4, with a NIC each on PCIe gen5 to a
 * network of link type @network: its time. */
static WeftTime
narrow_network_ll (int lanes, const char *network)
{
  g_autofree char *dir = g_dir_make_tmp ("weft-ll-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "two.yaml", NULL);
  g_autofree char *text = g_strdup_printf (
      "weft: 1\ninclude: %s/presets/servers.yaml\n"
      "templates:\n  srv:\n    nodes:\n"
      "      - {name: 'gpu[0-1]', device: h100}\n"
      "      - {name: nvs, device: nvswitch3}\n"
      "      - {name: 'nic[0-1]', device: connectx6}\n"
      "    links:\n"
      "      - {a: 'gpu[0-1]', b: nvs, type: nvlink4, lanes: %d}\n"
      "      - {a: 'gpu[0-1]', b: 'nic[0-1]', type: pcie5-x16}\n"
      "nodes: [{name: 'srv[0-1]', template: srv}]\n"
      "fabrics: [{kind: star, name: sw, nodes: 'srv[0-1]/nic[0-1]', "
      "switch: quantum-x800, link: %s}]\n", SCENARIOS, lanes, network);
  ck_assert (g_file_set_contents (path, text, -1, NULL));
  g_autoptr (GError) error = NULL;
  g_autoptr (WeftScenario) s = weft_scenario_load (path, &error);
  g_remove (path);
  g_rmdir (dir);
  ck_assert_msg (s != NULL, "%s", error ? error->message : "");
  g_autoptr (GArray) gpus = all_gpus (s->topo);
  WeftCollectiveParams params = { 0, 0, 0, NULL, 1, NULL, NULL, 0, FALSE, NULL };
  WeftRunOptions options = { WEFT_FIDELITY_FLOW, 1, 0, NULL, FALSE, 0, 0,
                             NULL, 1, NULL };
  WeftCollectiveResult r;
  ck_assert (weft_collective_run (s->topo, (uint32_t *) gpus->data, 4,
                                  WEFT_OP_ALL_REDUCE, WEFT_ALG_RING,
                                  WEFT_PROTOCOL_LL, 256 << 20, &params,
                                  &options, &r, NULL));
  g_free (r.spans);
  return r.time;
}

START_TEST (test_ll_across_a_narrow_network)
{
  /* Across servers whose network (two HDR NICs, 50 GB/s) is narrower than
   * a GPU's NVLinks, the ring runs at half of its Simple rate over the
   * network, under the H100's 45 GB/s for two servers, however wide the
   * NVLinks: LL's bound is on what each GPU sends, not a share of every
   * link, so 18 lanes (370.8 GB/s) hold the network no tighter than 4.
   * (The two differ by the picoseconds their events round to.) */
  WeftTime four = narrow_network_ll (4, "ib-hdr");
  WeftTime eighteen = narrow_network_ll (18, "ib-hdr");
  double busbw = (256 << 20) / (eighteen * 1e-12) / 1e9 * 2 * 3 / 4;

  ck_assert_msg (eighteen <= four + 1000 && four <= 1.02 * eighteen,
                 "4 lanes: %" G_GUINT64_FORMAT " ps, 18: %" G_GUINT64_FORMAT
                 " ps", four, eighteen);
  ck_assert_msg (busbw <= 45 && busbw >= 20, "%.2f GB/s", busbw);

  /* An XDR network behind the same PCIe links: a NIC carries no more than
   * PCIe brings it (48 GB/s at NCCL's rate), so the ring's rate is the
   * PCIe links', and LL is no slower than over HDR. */
  WeftTime xdr = narrow_network_ll (18, "ib-xdr");
  ck_assert_msg (xdr <= eighteen, "XDR: %" G_GUINT64_FORMAT " ps, HDR: %"
                 G_GUINT64_FORMAT " ps", xdr, eighteen);
}
END_TEST

/* GPU 0 sends @a bytes to GPU 1 and @b to GPU 2 at once, at @fidelity,
 * with links at their own rates and LL's send engines: three GPUs on a
 * switch, GPUs 0 and 1 by links of 25 GB/s, GPU 2 by one of @slow, all
 * of 500 ns, the switch 100 ns; each GPU's ll_bandwidth 10 GB/s. */
static double
engine_run (const char *slow, WeftFidelity fidelity, uint64_t a, uint64_t b)
{
  g_autofree char *text = g_strdup_printf (
      "weft: 1\nlink_types:\n"
      "  nv: {port: nvlink, bandwidth: 25GB/s, latency: 500ns}\n"
      "  slow: {port: nvlink, bandwidth: %s, latency: 500ns}\n"
      "devices:\n"
      "  g: {kind: gpu, ports: {nvlink: 1}, reduce_bandwidth: 1TB/s,\n"
      "      ll_bandwidth: 10GB/s, ll_bandwidth_two: 10GB/s,\n"
      "      ll_bandwidth_more: 10GB/s}\n"
      "  s: {kind: switch, ports: {nvlink: 3}, latency: 100ns}\n"
      "nodes: [{name: 'g[0-2]', device: g}, {name: sw, device: s}]\n"
      "links: [{a: 'g[0-1]', b: sw, type: nv}, {a: g2, b: sw, type: slow}]\n",
      slow);
  g_autoptr (WeftScenario) s = load_text (text);
  g_autoptr (GArray) gpus = all_gpus (s->topo);
  g_autoptr (WeftSchedule) sched = weft_schedule_new (3);

  weft_schedule_send (sched, 0, 1, 0, a, WEFT_NO_STEP);
  weft_schedule_recv (sched, 1, 0, 0, a, WEFT_NO_STEP);
  weft_schedule_send (sched, 0, 2, 0, b, WEFT_NO_STEP);
  weft_schedule_recv (sched, 2, 0, 0, b, WEFT_NO_STEP);
  ck_assert (weft_schedule_check (sched, NULL));
  WeftProtocol ll = *weft_protocol_get (WEFT_PROTOCOL_RAW, WEFT_ALG_RING);
  ll.ll = TRUE;
  WeftRunOptions options = { fidelity, 1, 0, NULL, FALSE, 0, 0, NULL, 1,
                             NULL };
  WeftCollectiveResult r;
  weft_schedule_run (s->topo, (uint32_t *) gpus->data, sched,
                     WEFT_OP_ALL_REDUCE, &ll, &options, &r);
  g_free (r.spans);
  return r.time * 1e-12;
}

START_TEST (test_ll_engine_per_gpu)
{
  /* NCCL's llMaxBw bounds what a GPU's LL sends move together, whatever
   * links they leave by.  GPU 0 sends 16 MB to GPU 1 and 2 MB to GPU 2,
   * whose link runs at 2 or 4 GB/s, under an engine of 10 GB/s: the send
   * to GPU 2 moves as its link lets it, the other takes the rest of the
   * engine, and both are done after (16 + 2) MB / 10 GB/s and a send's
   * latency L (two links and the switch), however fast GPU 2's link.  As
   * a share of every link's rate instead, a faster link would have made
   * the engine's bound tighter, and the run slower.  Without engines the
   * 16 MB would take 0.64 ms. */
  const uint64_t a = 16000000, b = 2000000;
  const double L = 2 * 500e-9 + 100e-9, form = L + (a + b) / 10e9;
  const WeftFidelity fidelities[] = { WEFT_FIDELITY_FLOW,
                                      WEFT_FIDELITY_ANALYTICAL,
                                      WEFT_FIDELITY_PACKET };

  for (guint i = 0; i < G_N_ELEMENTS (fidelities); i++)
    {
      /* Packets take turns at the engine: within 0.1%. */
      double within = fidelities[i] == WEFT_FIDELITY_PACKET ? 1e-3 : 1e-6;
      double two = engine_run ("2GB/s", fidelities[i], a, b);
      double four = engine_run ("4GB/s", fidelities[i], a, b);
      ck_assert_msg (fabs (two / form - 1) < within
                     && fabs (four / form - 1) < within,
                     "%s: %.4f us at 2 GB/s, %.4f at 4 GB/s; closed form "
                     "%.4f", weft_fidelity_name (fidelities[i]), two * 1e6,
                     four * 1e6, form * 1e6);
    }
}
END_TEST

START_TEST (test_nvls_pieces_by_size)
{
  /* Left to auto, NVLS cuts a buffer into the pieces that make its
   * pipeline's latencies against its fill least: one for a small buffer,
   * eight (the most) for a large one, and in between about as fast as the
   * best count simulated. */
  g_autoptr (WeftScenario) s = load ("dgx-h100.yaml");
  uint64_t sizes[] = { 1 << 20, 16 << 20, 64 << 20, 1 << 30 };
  for (guint i = 0; i < G_N_ELEMENTS (sizes); i++)
    {
      WeftTime got = h100_all_reduce (s, WEFT_ALG_NVLS, WEFT_PROTOCOL_SIMPLE,
                                      0, sizes[i]);
      WeftTime best = WEFT_TIME_MAX;
      for (uint32_t c = 1; c <= 8; c++)
        best = MIN (best, h100_all_reduce (s, WEFT_ALG_NVLS,
                                           WEFT_PROTOCOL_SIMPLE, c, sizes[i]));
      ck_assert_msg (got <= best * 1.01,
                     "%" G_GUINT64_FORMAT ": %" G_GUINT64_FORMAT " ps, best %"
                     G_GUINT64_FORMAT, sizes[i], got, best);
    }
  ck_assert_uint_eq (h100_all_reduce (s, WEFT_ALG_NVLS, WEFT_PROTOCOL_SIMPLE,
                                      0, 1 << 20),
                     h100_all_reduce (s, WEFT_ALG_NVLS, WEFT_PROTOCOL_SIMPLE,
                                      1, 1 << 20));
  ck_assert_uint_eq (h100_all_reduce (s, WEFT_ALG_NVLS, WEFT_PROTOCOL_SIMPLE,
                                      0, 1 << 30),
                     h100_all_reduce (s, WEFT_ALG_NVLS, WEFT_PROTOCOL_SIMPLE,
                                      8, 1 << 30));
}
END_TEST

START_TEST (test_small_message_latency)
{
  /* An 8-byte ring all_reduce over 8 GPUs with LL costs NCCL's base
   * latency and 14 NVLink hops: 6.6 + 14 x 0.6 = 15.0 us (hardware.md's
   * worked example), plus what the network adds for 8 bytes. */
  g_autoptr (WeftScenario) s = load ("dgx-h100.yaml");
  g_autoptr (GArray) gpus = all_gpus (s->topo);
  WeftCollectiveParams params = { 1, 1, 0, NULL, 1, NULL, NULL, 0, FALSE, NULL };
  WeftCollectiveResult r;

  ck_assert (weft_collective_run (s->topo, (uint32_t *) gpus->data, 8,
                                  WEFT_OP_ALL_REDUCE, WEFT_ALG_RING,
                                  WEFT_PROTOCOL_LL, 8, &params,
                                  &(WeftRunOptions) { WEFT_FIDELITY_FLOW, 1, 0, NULL, FALSE, 0, 0, NULL, 1, NULL }, &r, NULL));
  double us = r.time / 1e6;
  ck_assert_msg (us >= 15.0 && us <= 15.0 + 14 * 0.5, "%.2f us", us);
}
END_TEST

START_TEST (test_pat_is_alpha_beta)
{
  /* PAT with the raw protocol, one channel and one chunk, on one switch:
   * each of the log2 n dimensions sends its blocks in messages of at most
   * NCCL's aggregation A, one after another, so all_gather takes the sum
   * over dimensions of its messages' latencies, plus n - 1 blocks over
   * the link; reduce_scatter adds each block once through the reduction,
   * a message's blocks while the next message of its dimension moves but
   * for the last.  With 8 ranks A = 4 (NCCL_STEPS' 8 slots, up to n / 2):
   * one message a dimension.  With 32 ranks and blocks larger than a
   * chunk A = 8: the nearest dimension's 16 blocks go in two messages,
   * the first's 8 added while the second moves. */
  const struct { uint32_t n, messages, hidden; } cases[] = { { 8, 3, 0 },
                                                             { 32, 6, 8 } };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    for (WeftOp op = WEFT_OP_ALL_GATHER; op <= WEFT_OP_REDUCE_SCATTER; op++)
      {
        uint32_t n = cases[i].n;
        g_autoptr (WeftScenario) s = star (n);
        g_autoptr (GArray) gpus = all_gpus (s->topo);
        WeftCollectiveParams params = { 1, 1, 0, NULL, 1, NULL, NULL, 0,
                                        FALSE, NULL };
        WeftRunOptions options = { WEFT_FIDELITY_FLOW, 1, 0, NULL, FALSE, 0,
                                   0, NULL, 1, NULL };
        WeftCollectiveResult r;
        uint64_t size = (uint64_t) n << 20;
        ck_assert (weft_collective_run (s->topo, (uint32_t *) gpus->data, n,
                                        op, WEFT_ALG_PAT, WEFT_PROTOCOL_RAW,
                                        size, &params, &options, &r, NULL));
        g_free (r.spans);
        double block = size / (double) n, latency = 2 * 500e-9 + 100e-9;
        double closed = cases[i].messages * latency
                        + (n - 1) * block / 25e9
                        + (op == WEFT_OP_REDUCE_SCATTER
                               ? (n - 1 - cases[i].hidden) * block / 1e12
                               : 0);
        double t = r.time * 1e-12;
        ck_assert_msg (fabs (t / closed - 1) < 1e-3, "%s over %u: %.4f us "
                       "against %.4f us", weft_op_name (op), n, t * 1e6,
                       closed * 1e6);
      }
}
END_TEST

START_TEST (test_collnet_is_alpha_beta)
{
  /* CollNet with the raw protocol and one chunk, hosts of one GPU on one
   * switch that reduces: each GPU's buffer goes up to the switch (a PCIe
   * link of 100 ns and an InfiniBand link of 500 ns, at the slower's 25
   * GB/s), the switch adds the buffers up at its 400 GB/s and sends the
   * sum back down the same way. */
  g_autofree char *dir = g_dir_make_tmp ("weft-sharp-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "sharp.yaml", NULL);
  ck_assert (g_file_set_contents (path,
      "weft: 1\nlink_types:\n"
      "  pc: {port: pcie, bandwidth: 100GB/s, latency: 100ns}\n"
      "  wire: {port: ib, bandwidth: 25GB/s, latency: 500ns}\n"
      "devices:\n"
      "  g: {kind: gpu, ports: {pcie: 1}, reduce_bandwidth: 1TB/s}\n"
      "  nic: {kind: nic, ports: {pcie: 1, ib: 1}}\n"
      "  x: {kind: switch, ports: {ib: 8}, reduce_bandwidth: 400GB/s}\n"
      "templates:\n"
      "  host:\n"
      "    nodes: [{name: gpu0, device: g}, {name: nic0, device: nic}]\n"
      "    links: [{a: gpu0, b: nic0, type: pc}]\n"
      "nodes: [{name: 'host[0-7]', template: host}]\n"
      "fabrics: [{kind: star, name: xb, nodes: 'host[0-7]/nic0', "
      "switch: x, link: wire}]\n", -1, NULL));
  g_autoptr (GError) error = NULL;
  g_autoptr (WeftScenario) s = weft_scenario_load (path, &error);
  ck_assert_msg (s != NULL, "%s", error ? error->message : "");
  g_remove (path);
  g_rmdir (dir);
  g_autoptr (GArray) gpus = all_gpus (s->topo);
  WeftCollectiveParams params = { 1, 1, 0, NULL, 1, NULL, NULL, 0, FALSE,
                                  NULL };
  WeftRunOptions options = { WEFT_FIDELITY_FLOW, 1, 0, NULL, FALSE, 0, 0,
                             NULL, 1, NULL };
  const uint64_t sizes[] = { 8 << 20, 1000003 };
  for (guint k = 0; k < G_N_ELEMENTS (sizes); k++)
    {
      WeftCollectiveResult r;
      g_clear_error (&error);
      ck_assert_msg (weft_collective_run (s->topo, (uint32_t *) gpus->data, 8,
                                          WEFT_OP_ALL_REDUCE,
                                          WEFT_ALG_COLLNET, WEFT_PROTOCOL_RAW,
                                          sizes[k], &params, &options, &r,
                                          &error),
                     "%s", error ? error->message : "");
      g_free (r.spans);
      double size = sizes[k];
      double closed = 2 * (600e-9 + size / 25e9) + size / 400e9;
      double t = r.time * 1e-12;
      ck_assert_msg (fabs (t / closed - 1) < 1e-3, "%.0f B: %.4f us against "
                     "%.4f us", size, t * 1e6, closed * 1e6);
    }
}
END_TEST

START_TEST (test_pat_beats_ring_small)
{
  /* NCCL's reason for PAT: at 32 ranks a small all_gather takes log2 n
   * steps, not the ring's n - 1, with NCCL's own costs (Simple). */
  g_autoptr (WeftScenario) s = star (32);
  g_autoptr (GArray) gpus = all_gpus (s->topo);
  WeftCollectiveParams params = { 1, 0, 0, NULL, 1, NULL, NULL, 0, FALSE, NULL };
  WeftRunOptions options = { WEFT_FIDELITY_FLOW, 1, 0, NULL, FALSE, 0, 0,
                             NULL, 1, NULL };
  WeftTime t[2];
  const WeftAlgorithm algs[2] = { WEFT_ALG_PAT, WEFT_ALG_RING };

  for (int i = 0; i < 2; i++)
    {
      WeftCollectiveResult r;
      ck_assert (weft_collective_run (s->topo, (uint32_t *) gpus->data, 32,
                                      WEFT_OP_ALL_GATHER, algs[i],
                                      WEFT_PROTOCOL_SIMPLE, 32 << 10, &params,
                                      &options, &r, NULL));
      g_free (r.spans);
      t[i] = r.time;
    }
  ck_assert_msg (t[0] < t[1], "pat %.2f us, ring %.2f us", t[0] / 1e6,
                 t[1] / 1e6);
}
END_TEST

/* Four GPUs on one switch as star (4), but GPU 0's link runs at @side;
 * ranks are GPUs.  Rank 2 sends b to rank 3, which then sends d back;
 * rank 0 sends a to rank 1, which then sends c to rank 3, sharing the
 * switch's link to rank 3 with b if the two meet.  Raw: the links alone.
 * The time of the whole, at @fidelity. */
static double
meeting_run (const char *side, WeftFidelity fidelity, uint64_t a, uint64_t b,
             uint64_t c, uint64_t d)
{
  g_autofree char *text = g_strdup_printf (
      "weft: 1\nlink_types:\n"
      "  nv: {port: nvlink, bandwidth: 25GB/s, latency: 500ns}\n"
      "  side: {port: nvlink, bandwidth: %s, latency: 500ns}\n"
      "devices:\n"
      "  g: {kind: gpu, ports: {nvlink: 1}, reduce_bandwidth: 1TB/s}\n"
      "  s: {kind: switch, ports: {nvlink: 4}, latency: 100ns}\n"
      "nodes: [{name: 'g[0-3]', device: g}, {name: sw, device: s}]\n"
      "links: [{a: g0, b: sw, type: side}, {a: 'g[1-3]', b: sw, type: nv}]\n",
      side);
  g_autoptr (WeftScenario) s = load_text (text);
  g_autoptr (WeftSchedule) sched = weft_schedule_new (4);

  weft_schedule_send (sched, 0, 1, 0, a, WEFT_NO_STEP);
  uint32_t got_a = weft_schedule_recv (sched, 1, 0, 0, a, WEFT_NO_STEP);
  weft_schedule_send (sched, 1, 3, 0, c, got_a);
  weft_schedule_send (sched, 2, 3, 0, b, WEFT_NO_STEP);
  weft_schedule_recv (sched, 2, 3, 0, d, WEFT_NO_STEP);
  uint32_t got_b = weft_schedule_recv (sched, 3, 2, 0, b, WEFT_NO_STEP);
  weft_schedule_recv (sched, 3, 1, 0, c, WEFT_NO_STEP);
  weft_schedule_send (sched, 3, 2, 0, d, got_b);
  return raw_run (s, sched, fidelity, 0);
}

START_TEST (test_faster_link_can_be_slower)
{
  /* Where transfers that wait for each other share a link fairly, a
   * faster link can make the whole later: Graham's anomaly of list
   * scheduling ("Bounds on multiprocessing timing anomalies", SIAM J.
   * Appl. Math. 17(2), 1969), which no model of fair sharing escapes.
   * With GPU 0's link at 1 GB/s, a arrives after b has gone, c crosses
   * the link to rank 3 alone, and d starts once b is there: 2L + (b +
   * d) / B.  At 25 GB/s, c starts while b is under way and takes half of
   * that link until it is done, so b, and d after it, end c / B later:
   * 2L + (b + c + d) / B.  L is a send's latency (two links and the
   * switch), B 25 GB/s. */
  const uint64_t a = 2000000, b = 25000000, c = 12500000, d = 50000000;
  const double L = 2 * 500e-9 + 100e-9, B = 25e9;
  double slow_form = 2 * L + (b + d) / B;
  double fast_form = 2 * L + (b + c + d) / B;
  const WeftFidelity fidelities[] = { WEFT_FIDELITY_FLOW,
                                      WEFT_FIDELITY_ANALYTICAL,
                                      WEFT_FIDELITY_PACKET };

  for (guint i = 0; i < G_N_ELEMENTS (fidelities); i++)
    {
      /* The fluid models to the closed form; packets, which take turns
       * on the link, within 1%. */
      double within = fidelities[i] == WEFT_FIDELITY_PACKET ? 0.01 : 1e-6;
      double slow = meeting_run ("1GB/s", fidelities[i], a, b, c, d);
      double fast = meeting_run ("25GB/s", fidelities[i], a, b, c, d);
      ck_assert_msg (fabs (slow / slow_form - 1) < within
                     && fabs (fast / fast_form - 1) < within,
                     "%s: %.4f us at 1 GB/s, %.4f at 25 GB/s; closed forms "
                     "%.4f and %.4f",
                     weft_fidelity_name (fidelities[i]), slow * 1e6,
                     fast * 1e6, slow_form * 1e6, fast_form * 1e6);
    }
}
END_TEST

static Suite *
protocol_suite (void)
{
  Suite *s = suite_create ("protocol");
  TCase *tc;

  tc = tcase_create ("costs");
  tcase_set_timeout (tc, 60);
  tcase_add_test (tc, test_ll_held_to_ll_bandwidth);
  tcase_add_test (tc, test_raw_is_alpha_beta);
  tcase_add_test (tc, test_connection_slots);
  tcase_add_test (tc, test_ll_held_across_servers);
  tcase_add_test (tc, test_ll_across_a_narrow_network);
  tcase_add_test (tc, test_ll_engine_per_gpu);
  tcase_add_test (tc, test_channel_caps);
  tcase_add_test (tc, test_nvls_pieces_by_size);
  tcase_add_test (tc, test_small_message_latency);
  tcase_add_test (tc, test_pat_is_alpha_beta);
  tcase_add_test (tc, test_pat_beats_ring_small);
  tcase_add_test (tc, test_collnet_is_alpha_beta);
  tcase_add_test (tc, test_faster_link_can_be_slower);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  SRunner *runner = srunner_create (protocol_suite ());

  srunner_run_all (runner, CK_NORMAL);
  int failed = srunner_ntests_failed (runner);
  srunner_free (runner);
  return failed == 0 ? 0 : 1;
}
