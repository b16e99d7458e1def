/* Validation: simulated all_reduce busbw against the measured nccl-tests
 * sweeps in docs/reference/nccl-allreduce-measured.csv.  Prints the
 * comparison and holds weft to the bounds docs/validation.md states. */
#include "collectives/collective_run.h"
#include "collectives/nccl_model.h"
#include "reference.h"
#include "topology/scenario.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define REFERENCE WEFT_SOURCE_DIR "/docs/reference/nccl-allreduce-measured.csv"
#define SCENARIOS WEFT_SOURCE_DIR "/scenarios"

typedef struct {
  const char *system_prefix;    /* as the CSV names it */
  const char *scenario;
  double within_10_from;        /* bytes: from here up, within 10% */
  double wide;                  /* from 1 MiB up, within this */
} System;

/* The bounds weft meets today (docs/validation.md): within 10% for large
 * sizes on every system.  DGX H200 meets the target (10% from 64 MiB, 25%
 * from 1 MiB) with room: within 10% from 1 MiB.  DGX H100 is within 10%
 * from 64 MiB and 13% from 2 MiB, and 29% fast at 1 MiB, where its sweep
 * (NCCL 2.18.5) takes 42 us for anything from 64 KiB to 1 MiB, against 31
 * on the H200's (2.20.5) on the same NVLink.  A100 is up to 51% fast at mid
 * sizes.  The second A100 sweep comes from another machine whose small
 * messages take twice as long as Azure's (18 against 36 GB/s at 1 MiB), so
 * weft is 136% above it there. */
static const System systems[] = {
  { "Azure ND A100 v4", "dgx-a100.yaml", 256 << 20, 0.55 },
  { "8x A100 node", "dgx-a100.yaml", 512 << 20, 1.40 },
  { "Azure ND H100 v5", "dgx-h100.yaml", 64 << 20, 0.30 },
  { "Azure ND H200 v5", "dgx-h200.yaml", 1 << 20, 0.10 },
};

/* busbw (GB/s) of an all_reduce of @size bytes over every GPU of @s, as
 * weft run's auto chooses it: every NCCL algorithm and protocol that
 * fits (or only @only, @only_proto unless WEFT_ALG_COUNT,
 * WEFT_PROTOCOL_COUNT), the fastest simulated, or with @nccl the one
 * NCCL's cost model picks. */
static double
simulate_as (const WeftScenario *s, uint64_t size, WeftAlgorithm only,
             WeftProtocolKind only_proto, gboolean nccl)
{
  g_autoptr (GArray) gpus = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  WeftCollectiveParams params = { 0, 0, 0, NULL, 1, NULL, NULL, 0, FALSE, NULL };
  WeftTime best = WEFT_TIME_MAX;
  gboolean fits[WEFT_ALG_COUNT][WEFT_PROTOCOL_COUNT] = { { FALSE } };

  for (uint32_t n = 0; n < s->topo->n_nodes; n++)
    if (s->topo->nodes[n].kind == WEFT_NODE_GPU)
      g_array_append_val (gpus, n);
  for (int a = 0; a < WEFT_ALG_COUNT; a++)
    for (int p = 0; p < WEFT_PROTOCOL_COUNT; p++)
      fits[a][p] = !((only != WEFT_ALG_COUNT && a != (int) only)
                     || (only == WEFT_ALG_COUNT && !weft_algorithm_in_auto (a))
                     || (only_proto != WEFT_PROTOCOL_COUNT
                         && p != (int) only_proto)
                     || (only_proto == WEFT_PROTOCOL_COUNT
                         && !weft_protocol_in_auto (p)))
                   && weft_collective_fits (s->topo,
                                            (uint32_t *) gpus->data,
                                            gpus->len, WEFT_OP_ALL_REDUCE, a,
                                            p, NULL);
  int pick = -1;
  if (nccl)
    {
      WeftNcclSystem sys;
      WeftNcclModel model;
      double estimate[WEFT_PAIRS];
      weft_nccl_system_from_topology (&sys, s->topo, (uint32_t *) gpus->data,
                                      gpus->len);
      weft_nccl_model_tune (&model, &sys, WEFT_OP_ALL_REDUCE);
      pick = weft_nccl_model_pick (&model,
                                   (const gboolean (*)[WEFT_PROTOCOL_COUNT])
                                       fits, size, estimate);
      ck_assert_int_ge (pick, 0);
    }
  for (int a = 0; a < WEFT_ALG_COUNT; a++)
    for (int p = 0; p < WEFT_PROTOCOL_COUNT; p++)
      {
        if (!fits[a][p]
            || (pick >= 0 && a * WEFT_PROTOCOL_COUNT + p != pick))
          continue;
        WeftCollectiveResult r;
        ck_assert (weft_collective_run (s->topo, (uint32_t *) gpus->data,
                                        gpus->len, WEFT_OP_ALL_REDUCE, a, p,
                                        size, &params,
                                        &(WeftRunOptions) { WEFT_FIDELITY_FLOW,
                                                            1, 0, NULL, FALSE, 0, 0, NULL, 1, NULL },
                                        &r, NULL));
        best = MIN (best, r.time);
      }
  return size / (best * 1e-12) / 1e9 * 2 * (gpus->len - 1) / gpus->len;
}

static double
simulate (const WeftScenario *s, uint64_t size, WeftAlgorithm only,
          WeftProtocolKind only_proto)
{
  return simulate_as (s, size, only, only_proto, FALSE);
}

START_TEST (test_measured_sweeps)
{
  int checked = 0;

  for (guint k = 0; k < G_N_ELEMENTS (systems); k++)
    {
      const System *sys = &systems[k];
      g_autoptr (GError) error = NULL;
      g_autoptr (GArray) rows = weft_reference_read (REFERENCE,
                                                     sys->system_prefix,
                                                     "all_reduce", &error);
      ck_assert_msg (rows != NULL, "%s", error ? error->message : "");
      g_autofree char *path = g_build_filename (SCENARIOS, sys->scenario, NULL);
      g_autoptr (WeftScenario) s = weft_scenario_load (path, NULL);
      ck_assert_ptr_nonnull (s);
      printf ("%s (%s)\n%12s %10s %10s %8s %10s %8s\n", sys->system_prefix,
              sys->scenario, "size", "measured", "fastest", "error", "nccl",
              "error");
      for (guint i = 0; i < rows->len; i++)
        {
          const WeftMeasured *m = &g_array_index (rows, WeftMeasured, i);
          if (m->size < (1 << 20) || m->busbw <= 0)
            continue;
          /* Both ways auto chooses: the fastest, and NCCL's pick (the
           * default), which can only be as fast or slower. */
          double fastest = simulate (s, m->size, WEFT_ALG_COUNT,
                                     WEFT_PROTOCOL_COUNT);
          double nccl = simulate_as (s, m->size, WEFT_ALG_COUNT,
                                     WEFT_PROTOCOL_COUNT, TRUE);
          printf ("%12" G_GUINT64_FORMAT " %10.1f %10.1f %+7.1f%% %10.1f "
                  "%+7.1f%%\n", m->size, m->busbw, fastest,
                  100 * (fastest - m->busbw) / m->busbw, nccl,
                  100 * (nccl - m->busbw) / m->busbw);
          ck_assert (nccl <= fastest * (1 + 1e-9));
          for (int way = 0; way < 2; way++)
            {
              double weft = way ? nccl : fastest;
              double error_rel = (weft - m->busbw) / m->busbw;
              if (m->size >= sys->within_10_from)
                ck_assert_msg (fabs (error_rel) <= 0.10, "%s %s %"
                               G_GUINT64_FORMAT ": %.1f vs %.1f",
                               sys->scenario, way ? "nccl" : "fastest",
                               m->size, weft, m->busbw);
              ck_assert_msg (fabs (error_rel) <= sys->wide, "%s %s %"
                             G_GUINT64_FORMAT ": %.1f vs %.1f", sys->scenario,
                             way ? "nccl" : "fastest", m->size, weft,
                             m->busbw);
            }
          checked++;
        }
    }
  ck_assert_int_ge (checked, 50);
}
END_TEST

START_TEST (test_h100_ring_370)
{
  /* NCCL's ring all_reduce on 8 H100 reaches about 370 GB/s busbw
   * (hardware.md section 3, nccl-tests#212): within 5% from 1 GiB up. */
  g_autoptr (WeftScenario) s = weft_scenario_load (SCENARIOS "/dgx-h100.yaml",
                                                   NULL);

  for (uint64_t size = (uint64_t) 1 << 30; size <= (uint64_t) 8 << 30;
       size *= 2)
    {
      double busbw = simulate (s, size, WEFT_ALG_RING, WEFT_PROTOCOL_SIMPLE);
      ck_assert_msg (fabs (busbw - 370) <= 0.05 * 370, "%" G_GUINT64_FORMAT
                     ": %.1f GB/s", size, busbw);
    }
}
END_TEST

/* busbw (GB/s), or the time (us) with @time_us, of @op of @size bytes by
 * @alg with @proto over the first @n GPUs of @s, with the default channels
 * and chunks (auto). */
static double
one_run (const WeftScenario *s, uint32_t n, WeftOp op, WeftAlgorithm alg,
         WeftProtocolKind proto, uint64_t size, gboolean time_us)
{
  g_autoptr (GArray) gpus = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  WeftCollectiveParams params = { 0, 0, 0, NULL, 1, NULL, NULL, 0, FALSE, NULL };
  WeftRunOptions options = { WEFT_FIDELITY_FLOW, 1, 0, NULL, FALSE, 0, 0,
                             NULL, 1, NULL };
  WeftCollectiveResult r;
  g_autoptr (GError) error = NULL;

  for (uint32_t v = 0; v < s->topo->n_nodes && gpus->len < n; v++)
    if (s->topo->nodes[v].kind == WEFT_NODE_GPU)
      g_array_append_val (gpus, v);
  ck_assert_msg (weft_collective_run (s->topo, (uint32_t *) gpus->data, n, op,
                                      alg, proto, size, &params, &options, &r,
                                      &error),
                 "%s", error ? error->message : "");
  g_free (r.spans);
  double seconds = r.time * 1e-12;
  return time_us ? seconds * 1e6
                 : size / seconds * weft_op_bus_factor (op, n) / 1e9;
}

START_TEST (test_single_points)
{
  /* Single measured points (hardware.md section 3), each within 5% but
   * the small message's time, within 10%:
   * - 8 H100: reduce_scatter about 360 GB/s busbw, all_gather about 350
   *   (NVIDIA/nccl#1281), here at 1 GiB by ring;
   * - 256 H100 (32 DGX on rail planes): all_reduce at 2 GB about 340
   *   (NVIDIA/nccl#1218), by ring, whose rings use every NIC;
   * - 2 DGX H100 over NDR: a small all_reduce about 46 us, by ring with
   *   LL, 8 bytes. */
  g_autoptr (WeftScenario) dgx = weft_scenario_load (SCENARIOS
                                                     "/dgx-h100.yaml", NULL);
  g_autoptr (WeftScenario) rail = weft_scenario_load (SCENARIOS
                                                      "/h100-256-rail.yaml",
                                                      NULL);
  struct {
    const WeftScenario *s;
    uint32_t n;
    WeftOp op;
    WeftProtocolKind proto;
    uint64_t size;
    gboolean time_us;
    double measured, within;
  } points[] = {
    { dgx, 8, WEFT_OP_REDUCE_SCATTER, WEFT_PROTOCOL_SIMPLE, 1 << 30, FALSE,
      360, 0.05 },
    { dgx, 8, WEFT_OP_ALL_GATHER, WEFT_PROTOCOL_SIMPLE, 1 << 30, FALSE, 350,
      0.05 },
    { rail, 256, WEFT_OP_ALL_REDUCE, WEFT_PROTOCOL_SIMPLE,
      (uint64_t) 2 << 30, FALSE, 340, 0.05 },
    { rail, 16, WEFT_OP_ALL_REDUCE, WEFT_PROTOCOL_LL, 8, TRUE, 46, 0.10 },
  };

  for (guint i = 0; i < G_N_ELEMENTS (points); i++)
    {
      double weft = one_run (points[i].s, points[i].n, points[i].op,
                             WEFT_ALG_RING, points[i].proto, points[i].size,
                             points[i].time_us);
      printf ("%s %u GPUs, %" G_GUINT64_FORMAT " B: measured %.1f, weft "
              "%.1f %s\n", weft_op_name (points[i].op), points[i].n,
              points[i].size, points[i].measured, weft,
              points[i].time_us ? "us" : "GB/s");
      ck_assert_msg (fabs (weft - points[i].measured)
                         <= points[i].within * points[i].measured,
                     "point %u: %.1f against %.1f", i, weft,
                     points[i].measured);
    }
}
END_TEST

static Suite *
validation_suite (void)
{
  Suite *s = suite_create ("validation");
  TCase *tc = tcase_create ("nccl-tests");

  tcase_set_timeout (tc, 300);
  tcase_add_test (tc, test_measured_sweeps);
  tcase_add_test (tc, test_h100_ring_370);
  tcase_add_test (tc, test_single_points);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  SRunner *runner = srunner_create (validation_suite ());

  srunner_run_all (runner, CK_NORMAL);
  int failed = srunner_ntests_failed (runner);
  srunner_free (runner);
  return failed == 0 ? 0 : 1;
}
