/* Tests of traces: reading them, replaying them against closed forms, and
 * refusing bad ones. */
#include "traces/chakra.h"
#include "chakra.pb-c.h"
#include "collectives/collective_run.h"
#include "topology/scenario.h"
#include "traces/trace_run.h"

#include <glib/gstdio.h>

#include <check.h>
#include <signal.h>
#include <sys/resource.h>
#include <math.h>
#include <string.h>

#define SCENARIOS WEFT_SOURCE_DIR "/scenarios"
#define US ((WeftTime) 1000000)

static WeftScenario *h100;

static void
setup (void)
{
  g_autoptr (GError) error = NULL;

  h100 = weft_scenario_load (SCENARIOS "/dgx-h100.yaml", &error);
  ck_assert_msg (h100 != NULL, "%s", error ? error->message : "");
}

static void
teardown (void)
{
  weft_scenario_free (h100);
}

static WeftTrace *
parse (const char *text, GError **error)
{
  return weft_trace_load_data ("t.yaml", text, strlen (text), h100->topo,
                               error);
}

static const WeftTraceOptions defaults = {
  { WEFT_FIDELITY_FLOW, 1, 0, NULL, FALSE, 0, 0, NULL, 1, NULL },
  { 1, 8, 0, NULL, 1, NULL, NULL, 0, FALSE, NULL },
  WEFT_TRACE_AUTO, WEFT_TRACE_AUTO, NULL, NULL, 1,
};

/* Replay @text and return the result (the caller clears it). */
static WeftTraceResult
replay (const char *text, WeftTrace **keep)
{
  g_autoptr (GError) error = NULL;
  WeftTrace *t = parse (text, &error);
  WeftTraceResult r;

  ck_assert_msg (t != NULL, "%s", error ? error->message : "");
  ck_assert_msg (weft_trace_run (h100->topo, t, &defaults, &r, &error), "%s",
                 error ? error->message : "");
  if (keep)
    *keep = t;
  else
    weft_trace_free (t);
  return r;
}

/* When op @name finished on its last rank. */
static WeftTime
op_end (const WeftTrace *t, const WeftTraceResult *r, const char *name)
{
  for (guint i = 0; i < t->ops->len; i++)
    {
      const WeftTraceOp *op = weft_trace_op (t, i);
      if (strcmp (op->name, name) != 0)
        continue;
      WeftTime end = 0;
      for (uint32_t s = op->first_rank; s < op->first_rank + op->n_ranks; s++)
        end = MAX (end, r->end[s]);
      return end;
    }
  ck_abort_msg ("no op %s", name);
  return 0;
}

START_TEST (test_compute_serialises_sleep_does_not)
{
  /* Two computes on one rank with no order between them still run one
   * after the other (one compute stream); a sleep beside them takes no
   * compute; `at` holds an op back. */
  WeftTrace *t;
  WeftTraceResult r = replay (
      "ranks: 2\n"
      "ops:\n"
      "  - {id: a, kind: compute, rank: 0, time: 30us}\n"
      "  - {id: b, kind: compute, rank: 0, time: 50us}\n"
      "  - {id: z, kind: sleep, rank: 0, time: 70us}\n"
      "  - {id: c, kind: compute, rank: 1, time: 10us, at: 25us}\n"
      "  - {id: d, kind: compute, rank: 1, time: 5us, deps: [c]}\n",
      &t);

  ck_assert_uint_eq (r.step[0], 80 * US);
  ck_assert_uint_eq (r.compute[0], 80 * US);
  ck_assert_uint_eq (r.exposed[0], 0);
  ck_assert_uint_eq (op_end (t, &r, "z"), 70 * US);
  ck_assert_uint_eq (op_end (t, &r, "c"), 35 * US);
  ck_assert_uint_eq (r.step[1], 40 * US);
  ck_assert_uint_eq (r.time, 80 * US);
  /* The critical path: b waited for a's compute. */
  ck_assert_uint_eq (r.critical->len, 2);
  ck_assert_str_eq (weft_trace_op (t, g_array_index (r.critical, uint32_t,
                                                     0))->name, "a");
  weft_trace_result_clear (&r);
  weft_trace_free (t);
}
END_TEST

START_TEST (test_critical_path_adds_up)
{
  /* Each op on the critical path holds it up from when the path reached
   * it to when the path went on: the spans follow each other, and from
   * the start they add up to the trace's time, a straggler's slower
   * compute included (GPU 3 at half speed: its 1120 us of compute take
   * 2240, all of it on the path, which stays on its rank). */
  const char *faults[] = { "dgx/gpu3 compute 50%", NULL };
  g_autoptr (GError) error = NULL;
  WeftScenario *slow = weft_scenario_load_with (SCENARIOS "/dgx-h100.yaml",
                                                NULL, faults, &error);
  ck_assert_msg (slow != NULL, "%s", error ? error->message : "");
  WeftTrace *t = weft_trace_load (SCENARIOS "/traces/dgx-h100-step.yaml",
                                  slow->topo, &error);
  ck_assert_msg (t != NULL, "%s", error ? error->message : "");
  WeftTraceResult r;
  ck_assert (weft_trace_run (slow->topo, t, &defaults, &r, &error));

  const WeftTime *span = (const WeftTime *) r.critical_span->data;
  WeftTime held = 0, compute = 0;
  ck_assert_uint_eq (r.critical_span->len, 2 * r.critical->len);
  ck_assert_uint_eq (span[0], 0);
  for (guint k = 0; k < r.critical->len; k++)
    {
      ck_assert_uint_le (span[2 * k], span[2 * k + 1]);
      if (k > 0)
        ck_assert_uint_le (span[2 * k - 1], span[2 * k]);
      held += span[2 * k + 1] - span[2 * k];
      if (weft_trace_op (t, g_array_index (r.critical, uint32_t, k))->kind
          == WEFT_TRACE_COMPUTE)
        compute += span[2 * k + 1] - span[2 * k];
    }
  ck_assert_uint_eq (span[2 * r.critical->len - 1], r.time);
  ck_assert_uint_eq (held, r.time);
  ck_assert_uint_eq (compute, r.compute[3]);
  ck_assert_uint_eq (r.compute[3], 2 * r.compute[0]);
  weft_trace_result_clear (&r);
  weft_trace_free (t);
  weft_scenario_free (slow);
}
END_TEST

START_TEST (test_collective_as_alone)
{
  /* A collective in a trace takes what it takes alone (the sweep's
   * figure), for each protocol: the network runs at Simple's share and
   * LL's and LL128's sends carry their overhead on the wire instead. */
  g_autoptr (GArray) gpus = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  for (uint32_t n = 0; n < h100->topo->n_nodes; n++)
    if (h100->topo->nodes[n].kind == WEFT_NODE_GPU)
      g_array_append_val (gpus, n);
  const char *protos[] = { "LL", "LL128", "Simple" };
  for (int p = 0; p < 3; p++)
    {
      g_autofree char *text = g_strdup_printf (
          "ranks: 8\n"
          "ops:\n"
          "  - {id: ar, kind: all_reduce, ranks: \"0-7\", size: 16MiB,\n"
          "     algorithm: ring, protocol: %s}\n", protos[p]);
      WeftTraceResult r = replay (text, NULL);
      WeftCollectiveResult alone;
      ck_assert (weft_collective_run (h100->topo, (uint32_t *) gpus->data, 8,
                                      WEFT_OP_ALL_REDUCE, WEFT_ALG_RING, p,
                                      16 << 20, &defaults.params,
                                      &defaults.run, &alone, NULL));
      /* Equal but for rounding: each transfer's time is rounded to the
       * picosecond, from the bytes inflated by 1 / LL's share (held to the
       * H100's ll_bandwidth over its NVLinks, 141 / 370.8, not exact in
       * binary) or from the rate times it. */
      ck_assert_msg (fabs ((double) r.time - (double) alone.time)
                         <= 1e-4 * alone.time,
                     "%s: trace %" G_GUINT64_FORMAT " alone %"
                     G_GUINT64_FORMAT, protos[p], r.time, alone.time);
      /* All of it is communication nothing hides. */
      ck_assert_uint_eq (r.exposed[3], r.time);
      ck_assert_uint_eq (r.compute[3], 0);
      weft_trace_result_clear (&r);
    }
}
END_TEST

START_TEST (test_overlap_hides_communication)
{
  /* An all_reduce beside compute: exposed communication is the part of
   * it that compute does not cover, max(0, T - compute). */
  WeftTrace *t;
  WeftTraceResult alone = replay (
      "ranks: 8\n"
      "ops:\n"
      "  - {id: ar, kind: all_reduce, ranks: \"0-7\", size: 64MiB}\n",
      NULL);
  WeftTime T = alone.time;
  weft_trace_result_clear (&alone);

  WeftTraceResult r = replay (
      "ranks: 8\n"
      "ops:\n"
      "  - {id: ar, kind: all_reduce, ranks: \"0-7\", size: 64MiB}\n"
      "  - {id: long, kind: compute, rank: 0, time: 1ms}\n"
      "  - {id: short, kind: compute, rank: 1, time: 100us}\n"
      "  - {id: after, kind: compute, ranks: \"0-7\", time: 10us,\n"
      "     deps: [ar]}\n",
      &t);
  ck_assert_uint_gt (T, 100 * US);
  ck_assert_uint_lt (T, 1000 * US);
  ck_assert_uint_eq (op_end (t, &r, "ar"), T);
  ck_assert_uint_eq (r.exposed[0], 0);
  ck_assert_uint_eq (r.exposed[1], T - 100 * US);
  ck_assert_uint_eq (r.exposed[2], T);
  /* `after` waits for the all_reduce, and on rank 0 for its compute too. */
  ck_assert_uint_eq (r.step[0], 1010 * US);
  ck_assert_uint_eq (r.step[2], T + 10 * US);
  ck_assert_uint_eq (r.compute[1], 110 * US);
  weft_trace_result_clear (&r);
  weft_trace_free (t);
}
END_TEST

START_TEST (test_pipeline_send_recv)
{
  /* A pipeline stage hands its activations on: rank 1 computes once they
   * are there.  Sending 1 GiB over NVLink runs at the GPU's NCCL rate (18
   * links of 20.6 GB/s), plus latencies of a few microseconds. */
  WeftTrace *t;
  WeftTraceResult r = replay (
      "ranks: 2\n"
      "ops:\n"
      "  - {id: f0, kind: compute, rank: 0, time: 100us}\n"
      "  - {id: s, kind: send, rank: 0, peer: 1, size: 1GiB, deps: [f0]}\n"
      "  - {id: r, kind: recv, rank: 1, peer: 0, size: 1GiB}\n"
      "  - {id: f1, kind: compute, rank: 1, time: 100us, deps: [r]}\n",
      &t);
  double wire = (double) (1 << 30) / (18 * 20.6e9) * 1e12;
  WeftTime p2p = op_end (t, &r, "r") - 100 * US;
  ck_assert_msg (p2p > wire && p2p < wire + 30 * US, "p2p %" G_GUINT64_FORMAT
                 " wire %.0f", p2p, wire);
  ck_assert_uint_eq (r.step[1], op_end (t, &r, "r") + 100 * US);
  /* The path runs f0, then the send, its receive and f1. */
  ck_assert_uint_eq (r.critical->len, 4);
  const char *path[] = { "f0", "s", "r", "f1" };
  for (int k = 0; k < 4; k++)
    ck_assert_str_eq (weft_trace_op (t, g_array_index (r.critical, uint32_t,
                                                       k))->name, path[k]);
  /* Rank 1 waited for the data: the receive is exposed; rank 0's send is
   * after its compute, exposed too. */
  ck_assert_uint_eq (r.exposed[1], op_end (t, &r, "r"));
  weft_trace_result_clear (&r);
  weft_trace_free (t);
}
END_TEST

START_TEST (test_jobs_share_links)
{
  /* Two jobs on the same two GPUs each send 1 GiB the same way: they share
   * the links, so each takes about twice as long as alone (max-min: half
   * the rate each). */
  WeftTraceResult alone = replay (
      "jobs:\n"
      "  - name: a\n"
      "    placement: [dgx/gpu0, dgx/gpu1]\n"
      "    ops:\n"
      "      - {id: s, kind: send, rank: 0, peer: 1, size: 1GiB}\n"
      "      - {id: r, kind: recv, rank: 1, peer: 0, size: 1GiB}\n",
      NULL);
  WeftTrace *t;
  WeftTraceResult both = replay (
      "jobs:\n"
      "  - name: a\n"
      "    placement: [dgx/gpu0, dgx/gpu1]\n"
      "    ops:\n"
      "      - {id: s, kind: send, rank: 0, peer: 1, size: 1GiB}\n"
      "      - {id: r, kind: recv, rank: 1, peer: 0, size: 1GiB}\n"
      "  - name: b\n"
      "    placement: \"dgx/gpu[0-1]\"\n"
      "    ops:\n"
      "      - {id: s, kind: send, rank: 0, peer: 1, size: 1GiB}\n"
      "      - {id: r, kind: recv, rank: 1, peer: 0, size: 1GiB}\n",
      &t);
  double ratio = (double) both.time / (double) alone.time;
  ck_assert_msg (ratio > 1.95 && ratio < 2.0, "ratio %.4f", ratio);
  ck_assert_uint_eq (t->jobs->len, 2);
  ck_assert_uint_eq (both.step[0], both.step[2]);
  weft_trace_result_clear (&alone);
  weft_trace_result_clear (&both);
  weft_trace_free (t);

  /* Jobs on one GPU share its compute too: 10 us each, one after the
   * other (the first job's first). */
  both = replay (
      "jobs:\n"
      "  - {name: a, placement: [dgx/gpu3], ops: [{id: c, kind: compute,\n"
      "     rank: 0, time: 10us}]}\n"
      "  - {name: b, placement: [dgx/gpu3], ops: [{id: c, kind: compute,\n"
      "     rank: 0, time: 10us}]}\n", &t);
  ck_assert_uint_eq (both.step[0], 10 * US);
  ck_assert_uint_eq (both.step[1], 20 * US);
  ck_assert_uint_eq (both.compute[1], 10 * US);
  alone = replay ("ranks: 1\nops: [{id: c, kind: compute, rank: 0, "
                  "time: 10us}]\n", NULL);
  weft_trace_result_clear (&alone);
  weft_trace_result_clear (&both);
  weft_trace_free (t);
}
END_TEST

START_TEST (test_speedups_and_seed_change_nothing)
{
  /* Same trace, same seed: the same times, slot for slot, and the same
   * choices of auto; remembered routes on or off, or auto's candidates
   * simulated three at once, changes nothing. */
  const char *text =
      "ranks: 8\n"
      "communicators: {even: \"0-6:2\", odd: [1, 3, 5, 7]}\n"
      "ops:\n"
      "  - {id: c, kind: compute, ranks: \"0-7\", time: 20us}\n"
      "  - {id: e, kind: all_gather, comm: even, size: 8MiB, deps: [c]}\n"
      "  - {id: o, kind: reduce_scatter, comm: odd, size: 8MiB, deps: [c]}\n"
      "  - {id: w, kind: all_to_all, ranks: \"0-7\", size: 1MiB,\n"
      "     deps: [e, o]}\n";
  g_autoptr (GError) error = NULL;
  g_autoptr (WeftTrace) t = parse (text, &error);
  ck_assert_msg (t != NULL, "%s", error ? error->message : "");
  WeftTraceResult a, b, c;
  WeftTraceOptions plain = defaults, jobs = defaults;
  plain.run.plain = TRUE;
  jobs.jobs = 3;                /* auto's candidates three at once */
  ck_assert (weft_trace_run (h100->topo, t, &defaults, &a, NULL));
  ck_assert (weft_trace_run (h100->topo, t, &jobs, &b, NULL));
  ck_assert (weft_trace_run (h100->topo, t, &plain, &c, NULL));
  ck_assert_uint_gt (a.time, 20 * US);
  for (guint s = 0; s < t->ranks->len; s++)
    {
      ck_assert_uint_eq (a.end[s], b.end[s]);
      ck_assert_uint_eq (a.end[s], c.end[s]);
    }
  for (guint i = 0; i < t->ops->len; i++)
    {
      ck_assert_int_eq (a.algorithm[i], b.algorithm[i]);
      ck_assert_int_eq (a.protocol[i], b.protocol[i]);
    }
  weft_trace_result_clear (&a);
  weft_trace_result_clear (&b);
  weft_trace_result_clear (&c);
}
END_TEST

START_TEST (test_bins_stay_within_budget)
{
  /* A budget of bins widens them as the run goes; the bytes stay. */
  g_autoptr (GError) error = NULL;
  g_autoptr (WeftTrace) t = parse (
      "ranks: 8\n"
      "ops:\n"
      "  - {id: ar, kind: all_reduce, ranks: \"0-7\", size: 256MiB,\n"
      "     algorithm: ring}\n", &error);
  WeftTraceOptions o = defaults;
  WeftTraceResult wide, fine;
  o.run.bin_width = 1000;       /* 1 ns */
  ck_assert (weft_trace_run (h100->topo, t, &o, &fine, NULL));
  o.run.max_bins = 5000;
  ck_assert (weft_trace_run (h100->topo, t, &o, &wide, NULL));
  ck_assert_uint_gt (wide.stats->bin_width, 1000);
  uint64_t bins = 0;
  for (uint32_t l = 0; l < wide.stats->n_links; l++)
    {
      bins += wide.stats->bins[l].n;
      ck_assert_uint_eq (wide.stats->links[l].bytes,
                         fine.stats->links[l].bytes);
    }
  ck_assert_uint_le (bins, 5000);
  ck_assert_uint_eq (wide.time, fine.time);
  weft_trace_result_clear (&wide);
  weft_trace_result_clear (&fine);
}
END_TEST

/* @text fails to load with a message containing each of the strings
 * after it. */
static void
refused (const char *text, ...)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (WeftTrace) t = parse (text, &error);
  va_list ap;

  ck_assert_msg (t == NULL, "accepted:\n%s", text);
  ck_assert_msg (error != NULL, "refused without a message:\n%s", text);
  /* Bad input, whether the YAML loader or the trace's own checks found
   * it. */
  ck_assert_msg (error->domain == WEFT_CONFIG_ERROR
                     || g_error_matches (error, WEFT_TRACE_ERROR,
                                         WEFT_TRACE_ERROR_INVALID),
                 "%s: %s %d", text, g_quark_to_string (error->domain),
                 error->code);
  va_start (ap, text);
  for (const char *s = va_arg (ap, const char *); s; s = va_arg (ap, const char *))
    ck_assert_msg (strstr (error->message, s) != NULL,
                   "'%s' not in '%s'", s, error->message);
  va_end (ap);
}

START_TEST (test_bad_traces)
{
  refused ("ranks: 2\nops:\n"
           "  - {id: a, kind: compute, rank: 0, time: 1us, deps: [c]}\n"
           "  - {id: b, kind: compute, rank: 0, time: 1us, deps: [a]}\n"
           "  - {id: c, kind: compute, rank: 0, time: 1us, deps: [b]}\n",
           "t.yaml:", "cycle: 'b' -> 'c' -> 'a' -> 'b'", NULL);
  refused ("ranks: 2\nops:\n"
           "  - {id: a, kind: compute, rank: 0, time: 1us, deps: [nope]}\n",
           "t.yaml:3:", "depends on 'nope', which is no op", NULL);
  refused ("ranks: 2\nops:\n"
           "  - {id: a, kind: compute, rank: 2, time: 1us}\n",
           "t.yaml:3:", "rank 2 is outside the placement", NULL);
  refused ("ranks: 4\ncommunicators: {c: \"0-5\"}\nops: []\n",
           "t.yaml:2:", "rank 5 is outside the placement",
           "the job has 4 ranks", NULL);
  refused ("ranks: 2\nops:\n"
           "  - {id: s, kind: send, rank: 0, peer: 1, size: 1MiB}\n",
           "t.yaml:3:", "send 's' from rank 0 to rank 1",
           "no matching recv on rank 1 from rank 0", NULL);
  refused ("ranks: 2\nops:\n"
           "  - {id: s, kind: send, rank: 0, peer: 1, size: 1MiB}\n"
           "  - {id: r, kind: recv, rank: 1, peer: 0, size: 2MiB}\n",
           "t.yaml:4:", "the sizes differ", NULL);
  refused ("ranks: 2\nops:\n"
           "  - {id: a, kind: all_reduce, ranks: \"0-1\", size: -5MiB}\n",
           "t.yaml:3:51:", "is negative", NULL);
  refused ("ranks: 2\nops:\n"
           "  - {id: a, kind: all_reduce, ranks: \"0-1\"}\n",
           "t.yaml:3:", "has no size", NULL);
  refused ("ranks: 2\nops:\n"
           "  - {id: a, kind: compute, rank: 0}\n",
           "t.yaml:3:", "has no time", NULL);
  refused ("ranks: 2\nops:\n"
           "  - {id: a, kind: all_reduce, ranks: \"0-1\", size: 64}\n",
           "t.yaml:3:", NULL);
  refused ("ranks: 2\nops:\n"
           "  - {id: a, kind: allreduce, ranks: \"0-1\", size: 1MiB}\n",
           "t.yaml:3:", "unknown kind 'allreduce'", NULL);
  refused ("ranks: 2\nops:\n"
           "  - {id: a, kind: compute, rank: 0, time: 1us}\n"
           "  - {id: a, kind: compute, rank: 1, time: 1us}\n",
           "t.yaml:4:", "duplicate op id 'a'", NULL);
  refused ("ranks: 2\nops:\n"
           "  - {id: a, kind: compute, rank: 0, time: 1us}\n"
           "  - {id: b, kind: compute, rank: 1, time: 1us, deps: [a]}\n",
           "t.yaml:4:", "runs on none of its ranks", NULL);
  refused ("ranks: 2\nops:\n"
           "  - {id: a, kind: all_reduce, comm: tp, size: 1MiB}\n",
           "t.yaml:3:", "unknown communicator 'tp'", NULL);
  refused ("ranks: 2\nops:\n"
           "  - {id: a, kind: all_reduce, ranks: \"0-1\", size: 1MiB,\n"
           "     algorithm: pairwise}\n",
           "t.yaml:3:", "pairwise cannot run all_reduce", NULL);
  refused ("placement: [dgx/gpu0, dgx/nvswitch0]\nops: []\n",
           "t.yaml:1:", "'dgx/nvswitch0' is no GPU", NULL);
  refused ("ranks: 9\nops: []\n", "t.yaml:1:", "9 ranks", NULL);
  /* Ops are read as they come: what they refer to comes first. */
  refused ("ops:\n  - {id: a, kind: all_reduce, comm: c, size: 1MiB}\n"
           "communicators: {c: \"0-1\"}\n",
           "t.yaml:2:", "unknown communicator 'c'", NULL);
  refused ("ranks: 2\nops: []\ncommunicators: {c: \"0-1\"}\n",
           "t.yaml:3:1:", "'communicators' must come before 'ops'", NULL);
  refused ("ranks: 2\n", "t.yaml:1:1:", "ops", NULL);
  refused ("ranks: 2\nops: ~\n", "t.yaml:2:6:", "ops should be a list", NULL);
  refused ("ranks: 2\nops:\n", "t.yaml:2:5:", "ops should be a list", NULL);
  refused ("ranks: 2\nops: 3\n", "t.yaml:2:6:", "ops should be a list", NULL);
  refused ("ranks: 2\nops: {a: 1}\n", "t.yaml:2:6:", "ops should be a list",
           NULL);
  refused ("jobs:\n  - {name: a, ranks: 2, ops: 3}\n", "t.yaml:2:",
           "ops should be a list", NULL);
  refused ("jobs:\n  - {name: a, ranks: 2, ops: []}\n  - {name: b, ranks: 2}\n",
           "t.yaml:3:5:", "ops", NULL);
  refused ("jobs:\n  - {name: a, ranks: 2, ops: []}\n"
           "  - {name: a, ranks: 2, ops: []}\n",
           "t.yaml:3:", "two jobs are named 'a'", NULL);
}
END_TEST

START_TEST (test_deadlock_named)
{
  /* Rank 0 runs x then y, rank 1 y then x: each all_reduce waits for a
   * rank that waits for the other. */
  g_autoptr (GError) error = NULL;
  g_autoptr (WeftTrace) t = parse (
      "ranks: 2\n"
      "ops:\n"
      "  - {id: a0, kind: compute, rank: 0, time: 1us}\n"
      "  - {id: a1, kind: compute, rank: 1, time: 1us}\n"
      "  - {id: x, kind: all_reduce, ranks: \"0-1\", size: 1MiB,\n"
      "     deps: [a0, y]}\n"
      "  - {id: y, kind: all_reduce, ranks: \"0-1\", size: 1MiB,\n"
      "     deps: [a1]}\n", &error);
  /* x waits for y on both ranks: no deadlock, a chain. */
  ck_assert_msg (t != NULL, "%s", error ? error->message : "");
  WeftTraceResult r;
  ck_assert (weft_trace_run (h100->topo, t, &defaults, &r, NULL));
  weft_trace_result_clear (&r);

  g_autoptr (WeftTrace) bad = parse (
      "ranks: 2\n"
      "ops:\n"
      "  - {id: s0, kind: recv, rank: 0, peer: 1, size: 1MiB}\n"
      "  - {id: s1, kind: recv, rank: 1, peer: 0, size: 1MiB}\n"
      "  - {id: r0, kind: send, rank: 0, peer: 1, size: 1MiB, deps: [s0]}\n"
      "  - {id: r1, kind: send, rank: 1, peer: 0, size: 1MiB, deps: [s1]}\n",
      &error);
  ck_assert_msg (bad != NULL, "%s", error ? error->message : "");
  ck_assert (!weft_trace_run (h100->topo, bad, &defaults, &r, &error));
  ck_assert (g_error_matches (error, WEFT_TRACE_ERROR,
                              WEFT_TRACE_ERROR_DEADLOCK));
  ck_assert_msg (strstr (error->message, "t.yaml:3:") != NULL
                     && strstr (error->message, "never finishes") != NULL
                     && strstr (error->message, "'r1'") != NULL,
                 "%s", error->message);
}
END_TEST

/* Run `weft trace generate` with @args into @path. */
static void
generate (const char *path, const char *args)
{
  g_autofree char *cmd = g_strdup_printf ("%s trace generate %s -o %s",
                                          WEFT_BINARY, args, path);
  int status;
  g_autofree char *err = NULL;

  ck_assert (g_spawn_command_line_sync (cmd, NULL, &err, &status, NULL));
  ck_assert_msg (g_spawn_check_wait_status (status, NULL), "%s", err);
}

/* `weft ARGS` in @dir: its exit status, and its standard error in @err. */
static int
weft_in (const char *dir, const char *args, char **err)
{
  g_autofree char *cmd = g_strdup_printf ("%s %s", WEFT_BINARY, args);
  g_auto (GStrv) argv = NULL;
  int status;

  ck_assert (g_shell_parse_argv (cmd, NULL, &argv, NULL));
  ck_assert (g_spawn_sync (dir, argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL,
                           NULL, NULL, err, &status, NULL));
  return WIFEXITED (status) ? WEXITSTATUS (status) : -1;
}

START_TEST (test_outputs_spare_inputs)
{
  /* The traces weft writes replace their own earlier selves, never the
   * trace they read nor a file weft did not write (unless --force). */
  g_autofree char *dir = g_dir_make_tmp ("weft-trace-XXXXXX", NULL);
  g_autofree char *job = g_build_filename (dir, "job.yaml", NULL);
  g_autofree char *notes = g_build_filename (dir, "notes.yaml", NULL);
  g_autofree char *text = NULL, *err = NULL;

  ck_assert_int_eq (weft_in (dir, "trace generate --tp 4 -o job.yaml", &err),
                    0);
  g_clear_pointer (&err, g_free);
  ck_assert_int_eq (weft_in (dir, "trace generate --tp 4 -o job.yaml", &err),
                    0);
  g_clear_pointer (&err, g_free);
  ck_assert (g_file_set_contents (notes, "mine\n", -1, NULL));
  ck_assert_int_eq (weft_in (dir, "trace generate -o notes.yaml", &err), 2);
  ck_assert_msg (strstr (err, "weft did not write it"), "%s", err);
  g_clear_pointer (&err, g_free);
  ck_assert (g_file_get_contents (notes, &text, NULL, NULL));
  ck_assert_str_eq (text, "mine\n");
  g_clear_pointer (&text, g_free);

  /* The README's old tour: the Chakra wrapper named like its input. */
  ck_assert (g_file_get_contents (job, &text, NULL, NULL));
  ck_assert_int_eq (weft_in (dir, "trace chakra --force job.yaml job", &err), 2);
  ck_assert_msg (strstr (err, "is read by this command"), "%s", err);
  g_clear_pointer (&err, g_free);
  g_autofree char *after = NULL;
  ck_assert (g_file_get_contents (job, &after, NULL, NULL));
  ck_assert_str_eq (text, after);
  g_autofree char *rank0 = g_build_filename (dir, "job.0.et", NULL);
  ck_assert (!g_file_test (rank0, G_FILE_TEST_EXISTS));

  ck_assert_int_eq (weft_in (dir, "trace chakra job.yaml et", &err), 0);
  g_clear_pointer (&err, g_free);
  ck_assert_int_eq (weft_in (dir, "trace chakra job.yaml et", &err), 0);
  g_clear_pointer (&err, g_free);
  /* Its own Chakra files are its inputs when it reads them. */
  ck_assert_int_eq (weft_in (dir, "trace chakra et.yaml et", &err), 2);
  g_clear_pointer (&err, g_free);
  /* Rank files with no wrapper of weft's beside them are someone's. */
  g_autofree char *wrapper = g_build_filename (dir, "et.yaml", NULL);
  g_remove (wrapper);
  ck_assert_int_eq (weft_in (dir, "trace chakra job.yaml et", &err), 2);
  ck_assert_msg (strstr (err, "et.0.et exists"), "%s", err);
  g_clear_pointer (&err, g_free);
  ck_assert_int_eq (weft_in (dir, "trace chakra --force job.yaml et", &err), 0);

  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  const char *name;
  while ((name = g_dir_read_name (d)))
    {
      g_autofree char *p = g_build_filename (dir, name, NULL);
      ck_assert_msg (name[0] != '.', "left behind: %s", name);
      g_remove (p);
    }
  g_rmdir (dir);
}
END_TEST

/* In a child: files may grow to 512 bytes at most, as if the disk were full
 * (writes fail with EFBIG rather than SIGXFSZ ending the process). */
static void
small_disk (gpointer data)
{
  struct rlimit r = { 512, 512 };

  (void) data;
  signal (SIGXFSZ, SIG_IGN);
  setrlimit (RLIMIT_FSIZE, &r);
}

START_TEST (test_full_disk_leaves_nothing)
{
  /* Chakra files of a job are there all together or not at all. */
  g_autofree char *dir = g_dir_make_tmp ("weft-trace-XXXXXX", NULL);
  g_autofree char *err = NULL;
  char *gen[] = { (char *) WEFT_BINARY, "trace", "generate", "--tp", "4",
                  "--dp", "4", "-o", "job.yaml", NULL };
  char *chakra[] = { (char *) WEFT_BINARY, "trace", "chakra", "job.yaml",
                     "et", NULL };
  int status;

  ck_assert (g_spawn_sync (dir, gen, NULL, G_SPAWN_STDERR_TO_DEV_NULL, NULL,
                           NULL, NULL, NULL, &status, NULL));
  ck_assert (g_spawn_check_wait_status (status, NULL));
  ck_assert (g_spawn_sync (dir, chakra, NULL, G_SPAWN_DEFAULT, small_disk,
                           NULL, NULL, &err, &status, NULL));
  ck_assert_msg (!g_spawn_check_wait_status (status, NULL), "%s", err);
  ck_assert_msg (strstr (err, "cannot write"), "%s", err);
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  const char *name;
  while ((name = g_dir_read_name (d)))
    {
      g_autofree char *p = g_build_filename (dir, name, NULL);
      ck_assert_msg (strcmp (name, "job.yaml") == 0, "left behind: %s",
                     name);
      g_remove (p);
    }
  g_rmdir (dir);
}
END_TEST

START_TEST (test_generated_traces)
{
  g_autofree char *dir = g_dir_make_tmp ("weft-trace-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "t.yaml", NULL);
  g_autoptr (GError) error = NULL;

  /* No parallelism: no communication, and the step is every layer's
   * forward and backward (twice as long) for every microbatch, then the
   * optimizer. */
  generate (path, "--tp 1 --layers 6 --microbatches 3 --layer-time 10us "
            "--optimizer-time 7us --steps 2");
  g_autoptr (WeftTrace) alone = weft_trace_load (path, h100->topo, &error);
  ck_assert_msg (alone != NULL, "%s", error ? error->message : "");
  ck_assert_uint_eq (alone->ops->len, 2 * (3 * 6 * 2 + 1));
  WeftTraceResult r;
  ck_assert (weft_trace_run (h100->topo, alone, &defaults, &r, NULL));
  ck_assert_uint_eq (r.time, 2 * (3 * 6 * 30 + 7) * US);
  ck_assert_uint_eq (r.exposed[0], 0);
  weft_trace_result_clear (&r);

  /* tp 2 x pp 2 x dp 2 on the 8 GPUs, with mixture of experts: the ops
   * counted by kind, and the replay finishes with every rank computing
   * exactly its layers. */
  generate (path, "--tp 2 --pp 2 --dp 2 --layers 4 --microbatches 3 "
            "--buckets 2 --moe-size 1MiB --layer-time 10us "
            "--optimizer-time 5us");
  g_autoptr (WeftTrace) t = weft_trace_load (path, h100->topo, &error);
  ck_assert_msg (t != NULL, "%s", error ? error->message : "");
  guint kinds[5] = { 0 }, a2a = 0;
  for (guint i = 0; i < t->ops->len; i++)
    {
      kinds[weft_trace_op (t, i)->kind]++;
      a2a += weft_trace_op (t, i)->kind == WEFT_TRACE_COLLECTIVE
             && weft_trace_op (t, i)->op == WEFT_OP_ALL_TO_ALL;
    }
  /* Per rank, 3 microbatches x 2 layers of its stage, forward and back,
   * and the optimizer. */
  ck_assert_uint_eq (kinds[WEFT_TRACE_COMPUTE], 8 * (3 * 2 * 2 + 1));
  /* Each layer on each stage: a tp all_reduce per dp replica and a dp
   * all_to_all per tp rank; plus the gradient buckets (2 per stage and tp
   * rank). */
  ck_assert_uint_eq (a2a, 3 * 4 * 2 * 2);
  ck_assert_uint_eq (kinds[WEFT_TRACE_COLLECTIVE],
                     3 * 4 * 2 * 2 * 2 + 2 * 2 * 2);
  /* Activations forward and gradients back, a send and a receive each,
   * for every microbatch and tp rank of both replicas. */
  ck_assert_uint_eq (kinds[WEFT_TRACE_SEND], 3 * 2 * 2 * 2);
  ck_assert_uint_eq (kinds[WEFT_TRACE_RECV], 3 * 2 * 2 * 2);
  ck_assert (weft_trace_run (h100->topo, t, &defaults, &r, NULL));
  for (uint32_t k = 0; k < 8; k++)
    ck_assert_uint_eq (r.compute[k], (3 * 2 * 30 + 5) * US);
  /* The step is at least a stage's compute plus the pipeline's fill. */
  ck_assert_uint_gt (r.time, (3 * 2 * 30 + 5 + 2 * 10) * US);
  weft_trace_result_clear (&r);
  g_remove (path);
  g_rmdir (dir);
}
END_TEST

#define CHAKRA_DATA WEFT_SOURCE_DIR "/tests/data/chakra"

/* Replay @path and return the result; the trace goes to *@keep. */
static WeftTraceResult
replay_file (const char *path, WeftTrace **keep)
{
  g_autoptr (GError) error = NULL;
  WeftTraceResult r;

  *keep = weft_trace_load (path, h100->topo, &error);
  ck_assert_msg (*keep != NULL, "%s", error ? error->message : "");
  ck_assert_msg (weft_trace_run (h100->topo, *keep, &defaults, &r, &error),
                 "%s", error ? error->message : "");
  return r;
}

START_TEST (test_chakra_round_trip)
{
  /* A trace and the Chakra files written from it replay alike, rank for
   * rank: the shipped small one, and the example training step written
   * now. */
  const char *pairs[][2] = {
    { CHAKRA_DATA "/source.yaml", CHAKRA_DATA "/small.yaml" },
    { WEFT_SOURCE_DIR "/scenarios/traces/dgx-h100-step.yaml", NULL },
  };
  g_autofree char *dir = g_dir_make_tmp ("weft-chakra-XXXXXX", NULL);
  g_autofree char *prefix = g_build_filename (dir, "step", NULL);
  g_autofree char *step_yaml = g_strdup_printf ("%s.yaml", prefix);

  for (guint p = 0; p < G_N_ELEMENTS (pairs); p++)
    {
      WeftTrace *a, *b;
      WeftTraceResult ra = replay_file (pairs[p][0], &a);
      if (pairs[p][1] == NULL)
        {
          g_autoptr (GError) error = NULL;
          ck_assert_msg (weft_chakra_write (a, 0, prefix, &error), "%s",
                         error ? error->message : "");
        }
      WeftTraceResult rb = replay_file (pairs[p][1] ? pairs[p][1] : step_yaml,
                                        &b);
      ck_assert_uint_eq (a->ranks->len, b->ranks->len);
      ck_assert_uint_eq (a->gpus->len, b->gpus->len);
      ck_assert_uint_gt (ra.time, 0);
      ck_assert_uint_eq (ra.time, rb.time);
      for (guint r = 0; r < a->gpus->len; r++)
        {
          ck_assert_uint_eq (ra.step[r], rb.step[r]);
          ck_assert_uint_eq (ra.compute[r], rb.compute[r]);
          ck_assert_uint_eq (ra.exposed[r], rb.exposed[r]);
        }
      weft_trace_result_clear (&ra);
      weft_trace_result_clear (&rb);
      weft_trace_free (a);
      weft_trace_free (b);
    }

  /* The shipped files are what the writer makes, byte for byte. */
  g_autoptr (GError) error = NULL;
  g_autoptr (WeftTrace) src = weft_trace_load (CHAKRA_DATA "/source.yaml",
                                               NULL, &error);
  ck_assert_msg (src != NULL, "%s", error ? error->message : "");
  g_autofree char *again = g_build_filename (dir, "small", NULL);
  ck_assert (weft_chakra_write (src, 0, again, NULL));
  for (int r = 0; r < 4; r++)
    {
      g_autofree char *mine = g_strdup_printf ("%s.%d.et", again, r);
      g_autofree char *shipped = g_strdup_printf (CHAKRA_DATA "/small.%d.et",
                                                  r);
      g_autofree char *x = NULL, *y = NULL;
      gsize nx, ny;
      ck_assert (g_file_get_contents (mine, &x, &nx, NULL));
      ck_assert (g_file_get_contents (shipped, &y, &ny, NULL));
      ck_assert_uint_eq (nx, ny);
      ck_assert (memcmp (x, y, nx) == 0);
      g_remove (mine);
    }
  g_autofree char *small_yaml = g_strdup_printf ("%s.yaml", again);
  g_remove (small_yaml);
  for (int r = 0; r < 8; r++)
    {
      g_autofree char *f = g_strdup_printf ("%s.%d.et", prefix, r);
      g_remove (f);
    }
  g_remove (step_yaml);
  g_rmdir (dir);
}
END_TEST

/* Chakra files made by hand for the errors: per rank, nodes given as
 * (id, type, dep or -1, comm_type or -1, pg or NULL, peer or -1). */
typedef struct {
  int rank, id, type, dep, comm_type;
  const char *pg;
  int peer;
} Hand;

static char *
write_hand (const char *dir, const Hand *nodes, guint n, const char *comms)
{
  g_autofree char *prefix = g_build_filename (dir, "h", NULL);

  for (int r = 0; r < 2; r++)
    {
      g_autofree char *path = g_strdup_printf ("%s.%d.et", prefix, r);
      GByteArray *bytes = g_byte_array_new ();
      ChakraProtoMsg__GlobalMetadata meta
          = CHAKRA_PROTO_MSG__GLOBAL_METADATA__INIT;
      uint8_t buf[256];
      size_t len = chakra_proto_msg__global_metadata__pack (&meta, buf);
      uint8_t head = (uint8_t) len;
      g_byte_array_append (bytes, &head, 1);
      g_byte_array_append (bytes, buf, len);
      for (guint i = 0; i < n; i++)
        {
          if (nodes[i].rank != r)
            continue;
          ChakraProtoMsg__Node node = CHAKRA_PROTO_MSG__NODE__INIT;
          ChakraProtoMsg__AttributeProto a[3], *ap[3];
          uint64_t dep = (uint64_t) nodes[i].dep;
          node.id = (uint64_t) nodes[i].id;
          node.type = nodes[i].type;
          node.duration_micros = 1;
          if (nodes[i].dep >= 0)
            node.n_data_deps = 1, node.data_deps = &dep;
          for (int k = 0; k < 3; k++)
            {
              chakra_proto_msg__attribute_proto__init (&a[k]);
              ap[k] = &a[k];
            }
          node.attr = ap;
          if (nodes[i].comm_type >= 0)
            {
              a[0].name = "comm_type";
              a[0].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL;
              a[0].int64_val = nodes[i].comm_type;
              a[1].name = "comm_size";
              a[1].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT64_VAL;
              a[1].uint64_val = 1024;
              node.n_attr = 2;
              if (nodes[i].pg)
                {
                  a[2].name = "pg_name";
                  a[2].value_case
                      = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL;
                  a[2].string_val = (char *) nodes[i].pg;
                  node.n_attr = 3;
                }
            }
          if (nodes[i].peer >= 0)
            {
              gboolean send = nodes[i].type
                              == CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE;
              a[0].name = send ? "comm_dst" : "comm_src";
              a[0].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_VAL;
              a[0].int32_val = nodes[i].peer;
              a[1].name = "comm_size";
              a[1].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_VAL;
              a[1].int32_val = 4096;
              node.n_attr = 2;
            }
          len = chakra_proto_msg__node__pack (&node, buf);
          head = (uint8_t) len;
          g_byte_array_append (bytes, &head, 1);
          g_byte_array_append (bytes, buf, len);
        }
      ck_assert (g_file_set_contents (path, (char *) bytes->data, bytes->len,
                                      NULL));
      g_byte_array_unref (bytes);
    }
  g_autofree char *yaml = g_strdup_printf ("chakra: h\ncommunicators: %s\n",
                                           comms);
  char *path = g_build_filename (dir, "h.yaml", NULL);
  ck_assert (g_file_set_contents (path, yaml, -1, NULL));
  return path;
}

START_TEST (test_placement_too_many_names)
{
  /* A placement pattern that stands for millions of names is refused
   * before they are made: a scenario has fewer GPUs than that. */
  static const char text[] =
      "ranks: 2\nplacement: \"gpu[100000000-108000000]\"\nops: []\n";
  g_autoptr (GError) error = NULL;
  g_autoptr (WeftTrace) t = parse (text, &error);

  ck_assert (t == NULL);
  ck_assert_msg (strstr (error->message, "stands for more than"), "%s",
                 error->message);
}
END_TEST

START_TEST (test_chakra_too_few_gpus)
{
  /* A Chakra job of four files, placed on fewer GPUs, with no 'ranks'
   * saying how many it has: an error at the job, not a crash. */
  g_autofree char *yaml = g_strdup_printf (
      "jobs:\n  - {chakra: %s/small, placement: [dgx/gpu0, dgx/gpu1]}\n",
      CHAKRA_DATA);
  g_autoptr (GError) error = NULL;
  g_autoptr (WeftTrace) t = weft_trace_load_data ("few.yaml", yaml,
                                                  strlen (yaml), h100->topo,
                                                  &error);
  ck_assert (t == NULL);
  /* At the placement, past the files' folder on line 2. */
  g_autofree char *want = g_strdup_printf (
      "few.yaml:2:%zu: the job has 4 ranks and its placement 2 GPUs",
      strlen ("  - {chakra: ") + strlen (CHAKRA_DATA)
          + strlen ("/small, placement: ") + 1);
  ck_assert_msg (g_str_has_prefix (error->message, want), "%s",
                 error->message);
  g_clear_error (&error);
  g_autofree char *job = g_strdup_printf (
      "  - {chakra: %s/small, communicators: {pg0: [0, 1], pg1: [0, 1, 2, "
      "3]}}\n", CHAKRA_DATA);
  g_autofree char *many = g_strdup_printf ("jobs:\n%s%s%s", job, job, job);
  g_autoptr (WeftTrace) u = weft_trace_load_data ("many.yaml", many,
                                                  strlen (many), h100->topo,
                                                  &error);
  ck_assert (u == NULL);
  ck_assert_msg (g_str_has_prefix (error->message, "many.yaml:4:5: the job "
                                   "has 4 ranks and the scenario 0 GPUs"),
                 "%s", error->message);
}
END_TEST

START_TEST (test_chakra_errors)
{
  enum { COMP = 4, SEND = 5, RECV = 6, COLL = 7 };
  g_autofree char *dir = g_dir_make_tmp ("weft-chakra-XXXXXX", NULL);
  struct {
    Hand nodes[4];
    guint n;
    const char *comms, *want[3];
  } cases[] = {
    { { { 0, 1, COMP, 9, -1, NULL, -1 } }, 1, "{}",
      { "h.0.et: node 1", "depends on node 9, which is not in the file" } },
    { { { 0, 1, COMP, 2, -1, NULL, -1 }, { 0, 2, COMP, 1, -1, NULL, -1 } }, 2,
      "{}", { "h.0.et:", "cycle: nodes" } },
    { { { 0, 1, COLL, -1, 0, "tp", -1 }, { 1, 1, COLL, -1, 0, "tp", -1 } }, 2,
      "{}", { "h.0.et: node 1", "process group 'tp' is not among" } },
    { { { 0, 1, COLL, -1, 0, NULL, -1 }, { 0, 2, COLL, 1, 0, NULL, -1 },
        { 1, 1, COLL, -1, 0, NULL, -1 } }, 3, "{}",
      { "h.1.et: 1 collectives", "every rank of a group runs the same" } },
    { { { 0, 1, COLL, -1, 3, NULL, -1 }, { 1, 1, COLL, -1, 3, NULL, -1 } }, 2,
      "{}", { "h.0.et: node 1", "cannot run" } },
    { { { 0, 1, SEND, -1, -1, NULL, 1 } }, 1, "{}",
      { "h.0.et: node 1", "send '1' from rank 0 to rank 1",
        "no matching recv on rank 1" } },
    { { { 0, 1, RECV, -1, -1, NULL, 0 } }, 1, "{}",
      { "h.0.et: node 1", "comm_src is the rank itself" } },
  };
  for (guint c = 0; c < G_N_ELEMENTS (cases); c++)
    {
      g_autofree char *path = write_hand (dir, cases[c].nodes, cases[c].n,
                                          cases[c].comms);
      g_autoptr (GError) error = NULL;
      g_autoptr (WeftTrace) t = weft_trace_load (path, h100->topo, &error);
      ck_assert_msg (t == NULL, "case %u accepted", c);
      for (int k = 0; k < 3 && cases[c].want[k]; k++)
        ck_assert_msg (strstr (error->message, cases[c].want[k]) != NULL,
                       "case %u: '%s' not in '%s'", c, cases[c].want[k],
                       error->message);
    }

  /* Not a Chakra file at all, and one cut short. */
  g_autofree char *path = write_hand (dir, NULL, 0, "{}");
  g_autofree char *zero = g_build_filename (dir, "h.0.et", NULL);
  ck_assert (g_file_set_contents (zero, "\x7fnot a trace", -1, NULL));
  g_autoptr (GError) error = NULL;
  ck_assert (weft_trace_load (path, h100->topo, &error) == NULL);
  ck_assert_msg (strstr (error->message, "h.0.et: byte 0: a message runs "
                                         "past the end") != NULL,
                 "%s", error->message);
  g_autofree char *small = NULL;
  gsize len;
  ck_assert (g_file_get_contents (CHAKRA_DATA "/small.0.et", &small, &len,
                                  NULL));
  ck_assert (g_file_set_contents (zero, small, (gssize) len - 3, NULL));
  g_clear_error (&error);
  ck_assert (weft_trace_load (path, h100->topo, &error) == NULL);
  ck_assert_msg (strstr (error->message, "runs past the end") != NULL, "%s",
                 error->message);

  const char *names[] = { "h.0.et", "h.1.et", "h.yaml" };
  for (guint k = 0; k < G_N_ELEMENTS (names); k++)
    {
      g_autofree char *f = g_build_filename (dir, names[k], NULL);
      g_remove (f);
    }
  g_rmdir (dir);
}
END_TEST

static Suite *
trace_suite (void)
{
  Suite *s = suite_create ("trace");
  TCase *tc = tcase_create ("replay");

  tcase_add_checked_fixture (tc, setup, teardown);
  tcase_set_timeout (tc, 120);
  tcase_add_test (tc, test_compute_serialises_sleep_does_not);
  tcase_add_test (tc, test_critical_path_adds_up);
  tcase_add_test (tc, test_collective_as_alone);
  tcase_add_test (tc, test_overlap_hides_communication);
  tcase_add_test (tc, test_pipeline_send_recv);
  tcase_add_test (tc, test_jobs_share_links);
  tcase_add_test (tc, test_speedups_and_seed_change_nothing);
  tcase_add_test (tc, test_bins_stay_within_budget);
  tcase_add_test (tc, test_generated_traces);
  tcase_add_test (tc, test_chakra_round_trip);
  suite_add_tcase (s, tc);

  tc = tcase_create ("errors");
  tcase_add_checked_fixture (tc, setup, teardown);
  tcase_add_test (tc, test_bad_traces);
  tcase_add_test (tc, test_deadlock_named);
  tcase_add_test (tc, test_chakra_errors);
  tcase_add_test (tc, test_chakra_too_few_gpus);
  tcase_add_test (tc, test_placement_too_many_names);
  tcase_add_test (tc, test_outputs_spare_inputs);
  tcase_add_test (tc, test_full_disk_leaves_nothing);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  SRunner *runner = srunner_create (trace_suite ());

  srunner_run_all (runner, CK_NORMAL);
  int failed = srunner_ntests_failed (runner);
  srunner_free (runner);
  return failed == 0 ? 0 : 1;
}
