/* NCCL's cost model: its estimate against the closed form tuning.cc
 * computes, its channels as NCCL's search finds them, and what it picks
 * on a DGX H100, a DGX A100 and a GB200 NVL72 rack. */
#include "collectives/collective_run.h"
#include "collectives/nccl_model.h"
#include "topology/scenario.h"

#include <check.h>
#include <math.h>

#define SCENARIOS WEFT_SOURCE_DIR "/scenarios"

/* Within a thousandth of a microsecond (or of a GB/s). */
#define CLOSE(a, b) (fabs ((a) - (b)) < 1e-3)

/* One server of 8 Hopper GPUs on NVSwitch whose ring NCCL's search gives
 * 12 channels of 30 GB/s. */
static WeftNcclSystem
one_server (void)
{
  WeftNcclSystem sys = { 8, 1, 90, TRUE, FALSE, 141.0, { { 0, 0, 0 } }, TRUE,
                         32 };

  sys.graph[WEFT_COSTS_RING] = (WeftNcclGraph) { 12, 30, 30 };
  sys.graph[WEFT_COSTS_TREE] = (WeftNcclGraph) { 14, 30, 30 };
  return sys;
}

START_TEST (test_ring_closed_form)
{
  /* tuning.cc for a ring all_reduce on one node of 8 GPUs over NVLink:
   * latency baseLat + 2 (n - 1) hwLat[NVLINK], bus bandwidth nChannels x
   * bwIntra (LL: half of it, at most llMaxBw; LL128: 0.92 of it, at most
   * nChannels x 36.7), algorithm bandwidth busBw x n / (2 (n - 1)). */
  WeftNcclSystem sys = one_server ();
  WeftNcclModel m;
  struct { WeftProtocolKind p; double lat, bus; } want[] = {
    { WEFT_PROTOCOL_LL, 6.6 + 14 * 0.6, MIN (141.0, 0.5 * 12 * 30) },
    { WEFT_PROTOCOL_LL128, 14.0 + 14 * 1.9, MIN (0.92 * 12 * 30,
                                                 12 * 36.7) },
    { WEFT_PROTOCOL_SIMPLE, 8.4 + 14 * 3.4, 12 * 30 },
  };

  weft_nccl_model_tune (&m, &sys, WEFT_OP_ALL_REDUCE);
  for (guint i = 0; i < G_N_ELEMENTS (want); i++)
    {
      double algbw = want[i].bus * 8 / 14;
      ck_assert (CLOSE (m.latency[WEFT_COSTS_RING][want[i].p], want[i].lat));
      ck_assert (CLOSE (m.bandwidth[WEFT_COSTS_RING][want[i].p], algbw));
      for (uint64_t bytes = 8; bytes <= ((uint64_t) 1 << 33); bytes *= 16)
        ck_assert (CLOSE (weft_nccl_model_time (&m, WEFT_COSTS_RING,
                                                want[i].p, bytes),
                          want[i].lat + bytes / (1000.0 * algbw)));
    }
  /* hardware.md's worked examples: ring 15.0 / 40.6 / 56.0 us. */
  ck_assert (CLOSE (m.latency[WEFT_COSTS_RING][WEFT_PROTOCOL_LL], 15.0));
  ck_assert (CLOSE (m.latency[WEFT_COSTS_RING][WEFT_PROTOCOL_LL128], 40.6));
  ck_assert (CLOSE (m.latency[WEFT_COSTS_RING][WEFT_PROTOCOL_SIMPLE], 56.0));
}
END_TEST

START_TEST (test_tree_and_others)
{
  WeftNcclSystem sys = one_server ();
  WeftNcclModel m;

  weft_nccl_model_tune (&m, &sys, WEFT_OP_ALL_REDUCE);
  /* Tree: baseLat + 2 (ppn - 1) hwLat, hardware.md's 15.2 / 31.5 / 64.4
   * us; Simple's bus bandwidth 0.92 of nChannels x bwIntra (under 14 x
   * 38.7), halved to algorithm bandwidth. */
  ck_assert (CLOSE (m.latency[WEFT_COSTS_TREE][WEFT_PROTOCOL_LL], 15.2));
  ck_assert (CLOSE (m.latency[WEFT_COSTS_TREE][WEFT_PROTOCOL_LL128], 31.5));
  ck_assert (CLOSE (m.latency[WEFT_COSTS_TREE][WEFT_PROTOCOL_SIMPLE], 64.4));
  ck_assert (CLOSE (m.bandwidth[WEFT_COSTS_TREE][WEFT_PROTOCOL_SIMPLE],
                    0.92 * 14 * 30 * 0.5));
  /* Its correction at 1 MiB (log2 (1 MiB / 64) = 14): Simple 0.5. */
  double at = weft_nccl_model_time (&m, WEFT_COSTS_TREE,
                                    WEFT_PROTOCOL_SIMPLE, 1 << 20);
  ck_assert (CLOSE (at, 64.4 + (1 << 20) / (1000.0 * 0.92 * 14 * 30 * 0.5
                                            * 0.5)));
  /* No NVLS without switches that reduce, no NVLS tree on one node, and
   * a tree for all_reduce only. */
  ck_assert (weft_nccl_model_time (&m, WEFT_COSTS_NVLS, WEFT_PROTOCOL_SIMPLE,
                                   1024) < 0);
  ck_assert (weft_nccl_model_time (&m, WEFT_COSTS_NVLS_TREE,
                                   WEFT_PROTOCOL_SIMPLE, 1024) < 0);
  weft_nccl_model_tune (&m, &sys, WEFT_OP_ALL_GATHER);
  ck_assert (weft_nccl_model_time (&m, WEFT_COSTS_TREE, WEFT_PROTOCOL_LL,
                                   1024) < 0);
  /* all_gather's ring: n - 1 steps. */
  ck_assert (CLOSE (m.latency[WEFT_COSTS_RING][WEFT_PROTOCOL_SIMPLE],
                    8.4 + 7 * 3.4));
  ck_assert (CLOSE (m.bandwidth[WEFT_COSTS_RING][WEFT_PROTOCOL_SIMPLE],
                    360.0 * 8 / 7));
}
END_TEST

START_TEST (test_pat_closed_form)
{
  /* tuning.cc for PAT on 64 nodes of one Hopper GPU: all_gather and
   * reduce_scatter only, Simple only; latency baseLat 8 + log2 (nodes)
   * x hwLat[NET][TREE][Simple] / 3.5 + 2.8 a rank; bus bandwidth 0.75 of
   * the tree graph's nChannels x bwInter, which NCCL does not convert to
   * algorithm bandwidth. */
  WeftNcclSystem sys = { 64, 64, 90, FALSE, FALSE, 35.0, { { 0, 0, 0 } },
                         FALSE, 1 };
  WeftNcclModel m;

  sys.graph[WEFT_COSTS_RING] = (WeftNcclGraph) { 2, 24, 24 };
  sys.graph[WEFT_COSTS_TREE] = (WeftNcclGraph) { 2, 20, 20 };
  sys.graph[WEFT_COSTS_PAT] = sys.graph[WEFT_COSTS_TREE];
  double lat = 8 + 6 * 14 / 3.5 + 64 * 2.8, bw = 0.75 * 2 * 20;
  for (WeftOp op = WEFT_OP_ALL_GATHER; op <= WEFT_OP_REDUCE_SCATTER; op++)
    {
      weft_nccl_model_tune (&m, &sys, op);
      ck_assert (CLOSE (m.latency[WEFT_COSTS_PAT][WEFT_PROTOCOL_SIMPLE], lat));
      ck_assert (CLOSE (m.bandwidth[WEFT_COSTS_PAT][WEFT_PROTOCOL_SIMPLE],
                        bw));
      ck_assert (weft_nccl_model_time (&m, WEFT_COSTS_PAT, WEFT_PROTOCOL_LL,
                                       1024) < 0);
      ck_assert (CLOSE (weft_nccl_model_time (&m, WEFT_COSTS_PAT,
                                              WEFT_PROTOCOL_SIMPLE, 1 << 20),
                        lat + (1 << 20) / (1000.0 * bw)));
    }
  weft_nccl_model_tune (&m, &sys, WEFT_OP_ALL_REDUCE);
  ck_assert (weft_nccl_model_time (&m, WEFT_COSTS_PAT, WEFT_PROTOCOL_SIMPLE,
                                   1024) < 0);
  /* Not with more than one GPU a node (ncclPatEnable()). */
  sys.n_nodes = 8;
  weft_nccl_model_tune (&m, &sys, WEFT_OP_ALL_GATHER);
  ck_assert (weft_nccl_model_time (&m, WEFT_COSTS_PAT, WEFT_PROTOCOL_SIMPLE,
                                   1024) < 0);
}
END_TEST

START_TEST (test_collnet_closed_form)
{
  /* tuning.cc for CollNet Direct on 4 nodes of 8 Hopper GPUs on NVSwitch:
   * all_reduce only, Simple only; bus bandwidth nChannels x bwIntra over
   * the GPU/NIC factor (8 GPUs / 4 channels = 2, less half its excess:
   * 1.5), times 0.85 from Hopper on, halved to algorithm bandwidth;
   * latency 2 (intraLat + 0.4 us a local rank but one) + interLat, 3.7
   * and 31 us. */
  WeftNcclSystem sys = { 32, 4, 90, TRUE, FALSE, 35.0, { { 0, 0, 0 } },
                         TRUE, 2 };
  WeftNcclModel m;

  sys.graph[WEFT_COSTS_RING] = (WeftNcclGraph) { 8, 45, 45 };
  sys.graph[WEFT_COSTS_COLLNET] = (WeftNcclGraph) { 4, 45, 40 };
  weft_nccl_model_tune (&m, &sys, WEFT_OP_ALL_REDUCE);
  ck_assert (CLOSE (m.latency[WEFT_COSTS_COLLNET][WEFT_PROTOCOL_SIMPLE],
                    2 * (3.7 + 7 * 0.4) + 31));
  ck_assert (CLOSE (m.bandwidth[WEFT_COSTS_COLLNET][WEFT_PROTOCOL_SIMPLE],
                    4 * 45 / 1.5 * 0.85 * 0.5));
  ck_assert (weft_nccl_model_time (&m, WEFT_COSTS_COLLNET, WEFT_PROTOCOL_LL,
                                   1024) < 0);
  /* Nor for all_gather, on one node, or without NVSwitch. */
  weft_nccl_model_tune (&m, &sys, WEFT_OP_ALL_GATHER);
  ck_assert (weft_nccl_model_time (&m, WEFT_COSTS_COLLNET,
                                   WEFT_PROTOCOL_SIMPLE, 1024) < 0);
  sys.nvswitch = FALSE;
  weft_nccl_model_tune (&m, &sys, WEFT_OP_ALL_REDUCE);
  ck_assert (weft_nccl_model_time (&m, WEFT_COSTS_COLLNET,
                                   WEFT_PROTOCOL_SIMPLE, 1024) < 0);
  sys.nvswitch = TRUE;
  sys.n_nodes = 1;
  weft_nccl_model_tune (&m, &sys, WEFT_OP_ALL_REDUCE);
  ck_assert (weft_nccl_model_time (&m, WEFT_COSTS_COLLNET,
                                   WEFT_PROTOCOL_SIMPLE, 1024) < 0);
}
END_TEST

START_TEST (test_search)
{
  /* DGX H100: 18 NVLinks of 20.6 GB/s to NVSwitch.  NCCL's first pass
   * finds 6 channels of 60 GB/s (360 of 370.8), doubles them to 12 of 30;
   * the tree may use 8/7 of a GPU's links and gets 7 of 60, doubled. */
  WeftNcclServer h100 = { 8, 90, 18 * 20.6, 18 * 20.6, 0, 0 };
  WeftNcclGraph g = weft_nccl_search (&h100, WEFT_NCCL_PATTERN_RING);
  ck_assert_uint_eq (g.channels, 12);
  ck_assert (CLOSE (g.bw_intra, 30));
  g = weft_nccl_search (&h100, WEFT_NCCL_PATTERN_TREE);
  ck_assert_uint_eq (g.channels, 14);
  ck_assert (CLOSE (g.bw_intra, 30));
  /* NVLS: a channel a GPU, never doubled. */
  g = weft_nccl_search (&h100, WEFT_NCCL_PATTERN_NVLS);
  ck_assert_uint_eq (g.channels, 8);
  ck_assert (CLOSE (g.bw_intra, 50));

  /* DGX A100: 12 NVLinks of 20 GB/s; Ampere's speeds start at 40: 6 of
   * 40, doubled to 12 of 20. */
  WeftNcclServer a100 = { 8, 80, 12 * 20.0, 12 * 20.0, 0, 0 };
  g = weft_nccl_search (&a100, WEFT_NCCL_PATTERN_RING);
  ck_assert_uint_eq (g.channels, 12);
  ck_assert (CLOSE (g.bw_intra, 20));

  /* Two DGX H100: eight NICs of 48 GB/s (PCIe gen5 before the 50 GB/s
   * NIC).  48 GB/s fits 7 channels in the NVLinks, 45 fits 8 (360); on
   * Hopper channels under 50 GB/s are not doubled. */
  WeftNcclServer two = { 8, 90, 18 * 20.6, 48, 8, 48 };
  g = weft_nccl_search (&two, WEFT_NCCL_PATTERN_RING);
  ck_assert_uint_eq (g.channels, 8);
  ck_assert (CLOSE (g.bw_inter, 45));
}
END_TEST

/* The GPUs of @s. */
static GArray *
all_gpus (const WeftScenario *s)
{
  GArray *gpus = g_array_new (FALSE, FALSE, sizeof (uint32_t));

  for (uint32_t n = 0; n < s->topo->n_nodes; n++)
    if (s->topo->nodes[n].kind == WEFT_NODE_GPU)
      g_array_append_val (gpus, n);
  return gpus;
}

/* NCCL's pick for @op of @bytes over every GPU of @s, among auto's
 * candidates. */
static int
pick_op (const WeftScenario *s, WeftOp op, uint64_t bytes)
{
  g_autoptr (GArray) gpus = all_gpus (s);
  gboolean fits[WEFT_ALG_COUNT][WEFT_PROTOCOL_COUNT];
  double estimate[WEFT_PAIRS];
  WeftNcclSystem sys;
  WeftNcclModel m;

  for (int a = 0; a < WEFT_ALG_COUNT; a++)
    for (int p = 0; p < WEFT_PROTOCOL_COUNT; p++)
      fits[a][p] = weft_algorithm_in_auto (a) && weft_protocol_in_auto (p)
                   && weft_collective_fits (s->topo, (uint32_t *) gpus->data,
                                            gpus->len, op, a, p, NULL);
  weft_nccl_system_from_topology (&sys, s->topo, (uint32_t *) gpus->data,
                                  gpus->len);
  weft_nccl_model_tune (&m, &sys, op);
  return weft_nccl_model_pick (&m, (const gboolean (*)[WEFT_PROTOCOL_COUNT])
                                       fits, bytes, estimate);
}

static int
pick (const WeftScenario *s, uint64_t bytes)
{
  return pick_op (s, WEFT_OP_ALL_REDUCE, bytes);
}

START_TEST (test_dgx_h100_picks)
{
  /* NCCL on a DGX H100 runs LL for small messages, where latency rules,
   * and Simple (NVLS, which has no other protocol) for large ones. */
  g_autoptr (WeftScenario) s = weft_scenario_load (SCENARIOS
                                                   "/dgx-h100.yaml", NULL);

  ck_assert_ptr_nonnull (s);
  for (uint64_t bytes = 8; bytes <= 64 << 10; bytes *= 2)
    ck_assert_int_eq (pick (s, bytes) % WEFT_PROTOCOL_COUNT,
                      WEFT_PROTOCOL_LL);
  for (uint64_t bytes = 64 << 20; bytes <= (uint64_t) 8 << 30; bytes *= 2)
    {
      int p = pick (s, bytes);
      ck_assert_int_eq (p % WEFT_PROTOCOL_COUNT, WEFT_PROTOCOL_SIMPLE);
      ck_assert_int_eq (p / WEFT_PROTOCOL_COUNT, WEFT_ALG_NVLS);
    }
}
END_TEST

START_TEST (test_dgx_a100_picks)
{
  /* No NVLS on Ampere: LL small, LL128 in between, ring Simple large
   * (their crossings: about 2 and 24 MB). */
  g_autoptr (WeftScenario) s = weft_scenario_load (SCENARIOS
                                                   "/dgx-a100.yaml", NULL);

  ck_assert_ptr_nonnull (s);
  ck_assert_int_eq (pick (s, 8), WEFT_ALG_RING * WEFT_PROTOCOL_COUNT
                                     + WEFT_PROTOCOL_LL);
  ck_assert_int_eq (pick (s, 8 << 20), WEFT_ALG_RING * WEFT_PROTOCOL_COUNT
                                           + WEFT_PROTOCOL_LL128);
  ck_assert_int_eq (pick (s, 1 << 30), WEFT_ALG_RING * WEFT_PROTOCOL_COUNT
                                           + WEFT_PROTOCOL_SIMPLE);
}
END_TEST

START_TEST (test_nvls_gather_scatter)
{
  /* NVLS all_gather and reduce_scatter (NCCL 2.19 on, one node): one step
   * of NVLS's latency; the bus bandwidth of its channels, each at
   * bwIntra times NVLS's efficiency times (nChannels - 1) / nChannels
   * times (ppn - 1) / ppn (a GPU's links carry the whole buffer one way),
   * under bwInter; algorithm bandwidth n / (n - 1) of that. */
  WeftNcclSystem sys = one_server ();
  WeftNcclModel m;
  const WeftOp ops[] = { WEFT_OP_ALL_GATHER, WEFT_OP_REDUCE_SCATTER };

  sys.nvls = TRUE;
  sys.graph[WEFT_COSTS_NVLS] = (WeftNcclGraph) { 16, 24, 24 };
  for (guint o = 0; o < G_N_ELEMENTS (ops); o++)
    {
      weft_nccl_model_tune (&m, &sys, ops[o]);
      ck_assert (CLOSE (m.latency[WEFT_COSTS_NVLS][WEFT_PROTOCOL_SIMPLE],
                        weft_protocol_nccl_hw (WEFT_NCCL_HW_NVLINK,
                                               WEFT_COSTS_NVLS,
                                               WEFT_PROTOCOL_SIMPLE)));
      ck_assert (CLOSE (m.bandwidth[WEFT_COSTS_NVLS][WEFT_PROTOCOL_SIMPLE],
                        16 * 24 * 0.85 * 15 / 16 * 7 / 8 * 8 / 7));
    }
  /* Not for a broadcast, nor across servers. */
  weft_nccl_model_tune (&m, &sys, WEFT_OP_BROADCAST);
  ck_assert (weft_nccl_model_time (&m, WEFT_COSTS_NVLS, WEFT_PROTOCOL_SIMPLE,
                                   1024) < 0);
  sys.n_nodes = 2;
  weft_nccl_model_tune (&m, &sys, WEFT_OP_ALL_GATHER);
  ck_assert (weft_nccl_model_time (&m, WEFT_COSTS_NVLS, WEFT_PROTOCOL_SIMPLE,
                                   1024) < 0);

  /* On a GB200 NVL72 rack a ring's 71 steps cost far more than NVLS's
   * one: NCCL gathers and scatters by NVLS while latency rules, and by
   * the ring (its links carry (n - 1) / n of the buffer, NVLS's the
   * whole of it) once bandwidth does. */
  g_autoptr (WeftScenario) rack = weft_scenario_load (SCENARIOS
                                                      "/gb200-nvl72.yaml",
                                                      NULL);
  ck_assert_ptr_nonnull (rack);
  for (guint o = 0; o < G_N_ELEMENTS (ops); o++)
    {
      for (uint64_t bytes = 64 << 10; bytes <= 8 << 20; bytes *= 2)
        ck_assert_int_eq (pick_op (rack, ops[o], bytes),
                          WEFT_ALG_NVLS * WEFT_PROTOCOL_COUNT
                              + WEFT_PROTOCOL_SIMPLE);
      ck_assert_int_eq (pick_op (rack, ops[o], (uint64_t) 4 << 30)
                            / WEFT_PROTOCOL_COUNT,
                        WEFT_ALG_RING);
    }
}
END_TEST

/* NCCL's system for every GPU of the scenario @file. */
static WeftNcclSystem
system_of (const char *file)
{
  g_autofree char *path = g_build_filename (SCENARIOS, file, NULL);
  g_autoptr (WeftScenario) s = weft_scenario_load (path, NULL);
  WeftNcclSystem sys;

  ck_assert_ptr_nonnull (s);
  g_autoptr (GArray) gpus = all_gpus (s);
  weft_nccl_system_from_topology (&sys, s->topo, (uint32_t *) gpus->data,
                                  gpus->len);
  return sys;
}

START_TEST (test_p2p_protocol)
{
  /* NCCL's point-to-point: LL up to 16 KiB for each of a peer's channels,
   * Simple above, never LL128.  A peer's channels (paths.cc): over the
   * NVSwitch chips two a lane (a DGX H100 GPU's 18: 36, rounded up to 64),
   * at most the point-to-point channels, the collectives' 24 rounded up
   * to 32; direct NVLink without switches or PCIe, two; across the
   * network two, halved while each rank's would pass four for each
   * point-to-point channel (144 ranks on 32: one). */
  const struct {
    const char *file;
    uint32_t channels;
  } cases[] = {
    { "dgx-h100.yaml", 32 },
    { "dgx1-v100.yaml", 2 },
    { "pcie-8gpu.yaml", 2 },
    { "gb200-nvl72-x2-ndr.yaml", 1 },
  };

  for (guint c = 0; c < G_N_ELEMENTS (cases); c++)
    {
      WeftNcclSystem sys = system_of (cases[c].file);
      uint64_t most = (uint64_t) cases[c].channels * 16384;
      ck_assert_msg (sys.p2p_channels == cases[c].channels, "%s: %u",
                     cases[c].file, sys.p2p_channels);
      ck_assert_int_eq (weft_nccl_p2p_protocol (&sys, 1), WEFT_PROTOCOL_LL);
      ck_assert_int_eq (weft_nccl_p2p_protocol (&sys, most), WEFT_PROTOCOL_LL);
      ck_assert_int_eq (weft_nccl_p2p_protocol (&sys, most + 1),
                        WEFT_PROTOCOL_SIMPLE);
    }
}
END_TEST

static Suite *
nccl_model_suite (void)
{
  Suite *s = suite_create ("nccl_model");
  TCase *tc;

  tc = tcase_create ("closed form");
  tcase_add_test (tc, test_ring_closed_form);
  tcase_add_test (tc, test_tree_and_others);
  tcase_add_test (tc, test_pat_closed_form);
  tcase_add_test (tc, test_collnet_closed_form);
  suite_add_tcase (s, tc);

  tc = tcase_create ("search");
  tcase_add_test (tc, test_search);
  suite_add_tcase (s, tc);

  tc = tcase_create ("picks");
  tcase_add_test (tc, test_dgx_h100_picks);
  tcase_add_test (tc, test_dgx_a100_picks);
  tcase_add_test (tc, test_nvls_gather_scatter);
  tcase_add_test (tc, test_p2p_protocol);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  SRunner *runner = srunner_create (nccl_model_suite ());

  srunner_run_all (runner, CK_NORMAL);
  int failed = srunner_ntests_failed (runner);
  srunner_free (runner);
  return failed == 0 ? 0 : 1;
}
