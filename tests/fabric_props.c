/* Properties over random fabrics: what each one claims, why it must hold,
 * and how it is checked on one case. */
#include "fabric_props-private.h"

#include "config.h"
#include "fabric_gen.h"
#include "topology/tiers.h"
#include "topology/topo_stats.h"
#include "units.h"

#include <math.h>
#include <string.h>

FabricVerdict
fabric_fail (GString *why, const FabricCase *c, const char *format, ...)
             {
             va_list args;
  g_autofree char *what = fabric_case_describe (c);
  g_autofree char *text = fabric_case_yaml (c);

  va_start (args, format);
  g_string_append_vprintf (why, format, args);
  va_end (args);
  g_string_append_printf (why, "\n%s\n--- the scenario:\n%s---\n", what,
                          text);
  return FABRIC_FAIL;
}

double
fabric_figure (WeftRng *rng, double lo, double hi, double step)
{
  return lo + step * (double) weft_rng_below (rng, (uint64_t) ((hi - lo)
                                                               / step) + 1);
}

uint64_t
fabric_draw_size (WeftRng *rng, int lo, int hi)
{
  uint64_t size = (uint64_t) 1 << (lo + (int) weft_rng_below (rng, hi - lo
                                                                   + 1));
  if (weft_rng_below (rng, 3) == 0)
    size += 1 + weft_rng_below (rng, 4093);
  return size;
}

WeftProtocolKind
fabric_draw_protocol (WeftRng *rng)
{
  static const WeftProtocolKind kinds[] = { WEFT_PROTOCOL_LL,
                                            WEFT_PROTOCOL_LL128,
                                            WEFT_PROTOCOL_SIMPLE };
  return kinds[weft_rng_below (rng, G_N_ELEMENTS (kinds))];
}

static gboolean
reduces_in_switches (WeftAlgorithm alg)
{
  return alg == WEFT_ALG_NVLS || alg == WEFT_ALG_NVLS_TREE;
}

/* A scenario the loader refuses must say why, where: a bad-input error
 * (what `weft` exits 2 on) whose message names the file, line and
 * column. */
static gboolean
refused_well (const GError *error)
{
  return error != NULL && error->message[0] != '\0'
         && (error->domain == WEFT_CONFIG_ERROR
             || error->domain == WEFT_TOPOLOGY_ERROR
             || error->domain == WEFT_UNITS_ERROR)
         && strstr (error->message, ".yaml:") != NULL;
}

/* ---- every case loads and runs, or is refused with a message ---- */

/* Run @run over the GPUs of @topo: it must finish, moving what its
 * operation moves, or (unless @must) be refused with a message. */
static FabricVerdict
runs (const WeftTopology *topo, const FabricRun *run, gboolean must,
      const FabricCase *c, GString *why)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *what = fabric_run_describe (run);
  uint32_t n = weft_topology_count (topo, WEFT_NODE_GPU);
  WeftCollectiveResult r;

  if (!fabric_run (topo, run, 0, &r, &error))
    {
      if (!must && error != NULL && error->domain == WEFT_SCHEDULE_ERROR
          && error->message[0] != '\0')
        return FABRIC_PASS;
      return fabric_fail (why, c, "%s did not run: %s", what,
                          error ? error->message : "no message");
    }
  if (r.time == 0 || r.interrupted || r.beaten)
    return fabric_fail (why, c, "%s ended at %" G_GUINT64_FORMAT " ps%s",
                        what, r.time,
                        r.interrupted || r.beaten ? ", unfinished" : "");
  if (!reduces_in_switches (run->alg)
      && r.bytes_sent != weft_op_bytes (run->op, n, run->size))
    return fabric_fail (why, c, "%s moved %" G_GUINT64_FORMAT " bytes, not %"
                        G_GUINT64_FORMAT, what, r.bytes_sent,
                        weft_op_bytes (run->op, n, run->size));
  return FABRIC_PASS;
}

/* Every case loads, or is refused with a message that says where; on one
 * that loads, a ring all_reduce runs, and so does any operation,
 * algorithm and protocol that fits (or it is refused with a message). */
static FabricVerdict
check_runs (uint64_t seed, GString *why)
{
  static const WeftOp ops[] = { WEFT_OP_ALL_REDUCE, WEFT_OP_ALL_GATHER,
                                WEFT_OP_REDUCE_SCATTER, WEFT_OP_BROADCAST,
                                WEFT_OP_REDUCE, WEFT_OP_ALL_TO_ALL,
                                WEFT_OP_SEND_RECV };
  g_autoptr (GError) error = NULL;
  FabricCase c;
  WeftRng rng;

  fabric_case_draw (&c, seed, FABRIC_FAMILIES);
  g_autoptr (WeftScenario) s = fabric_case_load (&c, NULL, &error);
  if (s == NULL)
    {
      if (refused_well (error))
        return FABRIC_SKIP;
      return fabric_fail (why, &c, "refused without saying where: %s",
                          error ? error->message : "no message");
    }
  weft_rng_init (&rng, seed, 1);
  /* A ring all_reduce runs wherever the GPUs reach each other, which the
   * loader checks. */
  FabricRun ring = { WEFT_OP_ALL_REDUCE, WEFT_ALG_RING, WEFT_PROTOCOL_SIMPLE,
                     fabric_draw_size (&rng, 10, 24),
                     (uint32_t) weft_rng_below (&rng, 5), 0,
                     WEFT_FIDELITY_FLOW };
  FabricVerdict v = runs (s->topo, &ring, TRUE, &c, why);
  if (v != FABRIC_PASS)
    return v;
  /* Any operation, algorithm and protocol the fabric fits. */
  WeftProtocolKind protocols[] = { WEFT_PROTOCOL_LL, WEFT_PROTOCOL_LL128,
                                   WEFT_PROTOCOL_SIMPLE, WEFT_PROTOCOL_RAW };
  FabricRun any = { .size = fabric_draw_size (&rng, 10, 24),
                    .chunks = (uint32_t) weft_rng_below (&rng, 5),
                    .channels = (uint32_t) weft_rng_below (&rng, 3),
                    .fidelity = WEFT_FIDELITY_FLOW };
  if (!fabric_pick (&rng, s->topo, ops, G_N_ELEMENTS (ops),
                    protocols[weft_rng_below (&rng, 4)], &any))
    return FABRIC_PASS;
  return runs (s->topo, &any, FALSE, &c, why);
}

/* ---- more bandwidth on a link type is never slower ---- */

/* Whether @t takes longer than @than by more than a millionth: the clock
 * rounds every event to a picosecond, so two runs that should end
 * together may end a few picoseconds apart. */
static gboolean
slower (WeftTime t, WeftTime than)
{
  return t > than + than / 1000000;
}

/* The link types @c uses (their names), into @names; their count. */
static guint
used_types (const FabricCase *c, const char **names)
{
  guint n = 0;

  for (int r = 0; r < FABRIC_ROLES; r++)
    if (c->link[r].name[0])
      names[n++] = c->link[r].name;
  return n;
}

WeftTime
fabric_time_of (const WeftTopology *topo, const FabricRun *run,
                const FabricCase *c,
         GString *why)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *what = fabric_run_describe (run);
  WeftCollectiveResult r;

  if (!fabric_run (topo, run, 0, &r, &error))
    {
      fabric_fail (why, c, "%s did not run: %s", what, error->message);
      return 0;
    }
  return r.time;
}

/* weft_protocol_channel_cap() of @run over every GPU of @topo. */
static double
channel_cap (const WeftTopology *topo, const FabricRun *run)
{
  g_autoptr (GArray) gpus = fabric_gpus (topo);

  return weft_protocol_channel_cap (run->alg, run->protocol, topo,
                                    (uint32_t *) gpus->data, gpus->len);
}

FabricVerdict
fabric_bandwidth (uint64_t seed, WeftFidelity fidelity, GString *why)
{
  static const WeftOp ops[] = { WEFT_OP_ALL_REDUCE, WEFT_OP_ALL_GATHER,
                                WEFT_OP_REDUCE_SCATTER, WEFT_OP_ALL_TO_ALL,
                                WEFT_OP_BROADCAST };
  static const WeftProtocolKind protocols[] = { WEFT_PROTOCOL_RAW,
                                                WEFT_PROTOCOL_LL,
                                                WEFT_PROTOCOL_LL128,
                                                WEFT_PROTOCOL_SIMPLE };
  const char *names[FABRIC_ROLES];
  FabricCase c;
  WeftRng rng;

  fabric_case_draw (&c, seed, FABRIC_FAMILIES);
  g_autoptr (WeftScenario) base = fabric_case_load (&c, NULL, NULL);
  if (base == NULL)
    return FABRIC_SKIP;
  weft_rng_init (&rng, seed, 2);
  FabricRun run = { .size = fabric_draw_size (&rng, 18, 26),
                    .chunks = (uint32_t) weft_rng_below (&rng, 5),
                    .fidelity = fidelity };
  WeftProtocolKind protocol
      = protocols[weft_rng_below (&rng, G_N_ELEMENTS (protocols))];
  if (!fabric_pick (&rng, base->topo, ops, G_N_ELEMENTS (ops), protocol,
                    &run))
    return FABRIC_SKIP;

  /* One link type, every lane of it faster: its rate on the wire and
   * NCCL's model of it (the collectives move data at the latter). */
  guint n = used_types (&c, names);
  const char *name = names[weft_rng_below (&rng, n)];
  const WeftLinkType *type = weft_topology_link_type (base->topo, name, NULL);
  double factor = fabric_figure (&rng, 1.25, 4, 0.25);
  g_autofree char *set_bw = g_strdup_printf ("link_types.%s.bandwidth=%.0fB/s",
                                             name, type->bandwidth * factor);
  g_autofree char *set_nccl = g_strdup_printf (
      "link_types.%s.nccl_bandwidth=%.0fB/s", name,
      type->nccl_bandwidth * factor);
  const char *sets[] = { set_bw, type->nccl_bandwidth > 0 ? set_nccl : NULL,
                         NULL };
  g_autoptr (GError) error = NULL;
  g_autoptr (WeftScenario) fast = fabric_case_load (&c, sets, &error);
  if (fast == NULL)
    return fabric_fail (why, &c, "%s refused: %s", set_bw, error->message);
  /* NCCL's search may find fewer, faster channels over faster links, and
   * its per-channel tables then bound its ring and tree lower
   * (weft_nccl_channel_cap()): NCCL's own choice, outside the property. */
  if (channel_cap (fast->topo, &run) < channel_cap (base->topo, &run))
    return FABRIC_SKIP;

  WeftTime before = fabric_time_of (base->topo, &run, &c, why);
  WeftTime after = before ? fabric_time_of (fast->topo, &run, &c, why) : 0;
  if (before == 0 || after == 0)
    return FABRIC_FAIL;
  if (slower (after, before))
    {
      g_autofree char *what = fabric_run_describe (&run);
      return fabric_fail (why, &c, "%s takes %" G_GUINT64_FORMAT " ps with %s "
                          "at %.2f times its bandwidth, %" G_GUINT64_FORMAT
                          " ps before", what, after, name, factor, before);
    }
  return FABRIC_PASS;
}

/* Where no two transfers share a link (analytical-free), each takes
 * its path's latency and its bytes over the path's bottleneck (LL's send
 * engine among its links, held to the GPU's ll_bandwidth), which a faster
 * link never lengthens, and the steps that wait for it start no later. */
static FabricVerdict
check_bandwidth (uint64_t seed, GString *why)
{
  return fabric_bandwidth (seed, WEFT_FIDELITY_ANALYTICAL_FREE, why);
}

/* ---- more oversubscription is never faster ---- */

/* Whether @s's network is a complete tree (weft_tiers_complete()). */
static gboolean
complete (const WeftScenario *s)
{
  g_autoptr (WeftTiers) tiers = weft_tiers_new (s->topo);
  return weft_tiers_complete (s->topo, tiers, NULL);
}

FabricVerdict
fabric_oversubscription (uint64_t seed, gboolean any, GString *why)
{
  static const uint32_t ratios[][2] = { { 1, 1 }, { 2, 1 }, { 3, 1 },
                                        { 4, 1 } };
  static const WeftOp ops[] = { WEFT_OP_ALL_REDUCE, WEFT_OP_ALL_TO_ALL,
                                WEFT_OP_ALL_GATHER, WEFT_OP_REDUCE_SCATTER };
  FabricCase c;
  WeftRng rng;

  fabric_case_draw (&c, seed, seed % 2 ? FABRIC_RAIL : FABRIC_FAT_TREE);
  weft_rng_init (&rng, seed, 3);
  if (!any)
    c.levels = 2;
  /* Leaves of as many endpoints (servers, on rails) at every ratio, and
   * more of them than one leaf holds: traffic crosses the uplinks.  A few
   * tries, as small leaves may make more of them than the radix joins. */
  uint32_t members = c.family == FABRIC_RAIL ? c.servers
                                             : c.servers * c.gpus;
  uint32_t most = MIN (8, members - 1), per_leaf = 0;
  FabricCase wide = c, narrow = c;
  g_autoptr (WeftScenario) a = NULL;
  g_autoptr (WeftScenario) b = NULL;
  for (int attempt = 0; attempt < 4 && b == NULL; attempt++)
    {
      per_leaf = 1 + (uint32_t) weft_rng_below (&rng, most);
      guint lo = (guint) weft_rng_below (&rng, G_N_ELEMENTS (ratios) - 1);
      guint hi = lo + 1 + (guint) weft_rng_below (&rng, G_N_ELEMENTS (ratios)
                                                            - 1 - lo);
      wide = narrow = c;
      if (!fabric_case_oversubscribe (&wide, per_leaf, ratios[lo][0],
                                      ratios[lo][1])
          || !fabric_case_oversubscribe (&narrow, per_leaf, ratios[hi][0],
                                         ratios[hi][1])
          || wide.radix == narrow.radix)
        continue;
      g_clear_pointer (&a, weft_scenario_free);
      a = fabric_case_load (&wide, NULL, NULL);
      b = a ? fabric_case_load (&narrow, NULL, NULL) : NULL;
      if (any && b != NULL && !(complete (a) && complete (b)))
        g_clear_pointer (&b, weft_scenario_free);
    }
  if (b == NULL)
    return FABRIC_SKIP;

  FabricRun run = { WEFT_OP_ALL_TO_ALL, WEFT_ALG_DIRECT,
                    fabric_draw_protocol (&rng),
                    fabric_draw_size (&rng, 20, 26),
                    (uint32_t) weft_rng_below (&rng, 5), 0,
                    WEFT_FIDELITY_FLOW };
  g_autoptr (GArray) gpus = fabric_gpus (b->topo);
  if ((any && !fabric_pick (&rng, a->topo, ops, G_N_ELEMENTS (ops),
                            run.protocol, &run))
      || !weft_collective_fits (b->topo, (uint32_t *) gpus->data, gpus->len,
                                run.op, run.alg, run.protocol, NULL))
    return FABRIC_SKIP;
  WeftTime t_wide = fabric_time_of (a->topo, &run, &wide, why);
  WeftTime t_narrow = t_wide ? fabric_time_of (b->topo, &run, &narrow, why)
                             : 0;
  if (t_wide == 0 || t_narrow == 0)
    return FABRIC_FAIL;
  if (slower (t_wide, t_narrow))
    {
      g_autofree char *what = fabric_run_describe (&run);
      g_autofree char *text = fabric_case_yaml (&wide);
      return fabric_fail (why, &narrow, "%s takes %" G_GUINT64_FORMAT " ps at "
                          "%u:%u (radix %u), %" G_GUINT64_FORMAT " ps at %u:%u "
                          "(radix %u), %u endpoints a leaf; the less "
                          "oversubscribed:\n%s",
                          what, t_narrow, narrow.down, narrow.up,
                          narrow.radix, t_wide, wide.down, wide.up,
                          wide.radix, per_leaf, text);
    }
  return FABRIC_PASS;
}

/* A two-level tree's leaves keep their endpoints and lose uplinks; with
 * the traffic all at once (all_to_all by direct sends, no step waiting for
 * another), less room above the leaves never makes it end sooner.  Three
 * levels and schedules of dependent steps are left to their own property
 * (fabric_pending.c): a three-level tree's pods change with the radix, and
 * where steps wait for each other, sharing a link fairly among the pieces
 * in flight can end a run later with more room. */
static FabricVerdict
check_oversubscription (uint64_t seed, GString *why)
{
  return fabric_oversubscription (seed, FALSE, why);
}

/* ---- busbw is bounded by injection and bisection ---- */

/* The most bus bandwidth @op by @alg can reach when GPU r's links carry
 * at most @inj[r] B/s each way.  Whatever the algorithm, all_reduce needs
 * 2(n-1) S bytes received by the GPUs in all (each element gathered over
 * n-1 links and handed back over n-1), reduce_scatter (n-1) S: so their
 * bus bandwidth is at most the GPUs' mean injection; with the switches
 * adding up (NVLS), the GPUs receive only (n-1) S for all_reduce: twice
 * that.  In all_gather and all_to_all each GPU receives (n-1)/n S, in a
 * broadcast every GPU but the root S: at most the least of theirs. */
static double
injection_bound (WeftOp op, WeftAlgorithm alg, const double *inj, uint32_t n)
{
  double sum = 0, least = INFINITY, least_rest = INFINITY;

  for (uint32_t r = 0; r < n; r++)
    {
      sum += inj[r];
      least = MIN (least, inj[r]);
      if (r > 0)
        least_rest = MIN (least_rest, inj[r]);
    }
  switch (op)
    {
    case WEFT_OP_ALL_REDUCE:
      return (reduces_in_switches (alg) ? 2 : 1) * sum / n;
    case WEFT_OP_REDUCE_SCATTER:
      return sum / n;
    case WEFT_OP_BROADCAST:
      return least_rest;
    default:
      return least;
    }
}

/* The bytes of @op over @n ranks of size @size that must cross from the
 * first half of the GPUs (a = n/2 of them) to the second: all_reduce's
 * and a broadcast from rank 0's whole buffer, the first half's share of
 * an all_gather, the second half's slices of a reduce_scatter, and a(n-a)
 * pieces of an all_to_all. */
static double
crossing (WeftOp op, uint32_t n, uint64_t size)
{
  double a = n / 2, s = (double) size;

  switch (op)
    {
    case WEFT_OP_ALL_GATHER:
      return a * s / n;
    case WEFT_OP_REDUCE_SCATTER:
      return (n - a) * s / n;
    case WEFT_OP_ALL_TO_ALL:
      return a * (n - a) * s / n;
    default:
      return s;
    }
}

/* Each GPU of @gpus's links' bandwidth one way, at their own rate or
 * NCCL's model of them, into @inj. */
static void
injection (const WeftTopology *topo, const GArray *gpus, gboolean nccl,
           double *inj)
{
  for (guint r = 0; r < gpus->len; r++)
    {
      uint32_t g = g_array_index (gpus, uint32_t, r);
      inj[r] = 0;
      for (uint32_t i = topo->out_start[g]; i < topo->out_start[g + 1]; i++)
        {
          const WeftLink *l = &topo->links[topo->out_links[i]];
          inj[r] += nccl ? weft_link_nccl_rate (topo, l) : l->bandwidth;
        }
    }
}

/* A collective's busbw, raw at the links' own rates and Simple at NCCL's,
 * stays under the injection bound, and it takes at least the time its
 * crossing bytes take over the bisection. */
static FabricVerdict
check_bounds (uint64_t seed, GString *why)
{
  static const WeftOp ops[] = { WEFT_OP_ALL_REDUCE, WEFT_OP_ALL_GATHER,
                                WEFT_OP_REDUCE_SCATTER, WEFT_OP_ALL_TO_ALL,
                                WEFT_OP_BROADCAST };
  FabricCase c;
  WeftRng rng;

  fabric_case_draw (&c, seed, FABRIC_FAMILIES);
  g_autoptr (WeftScenario) s = fabric_case_load (&c, NULL, NULL);
  if (s == NULL)
    return FABRIC_SKIP;
  weft_rng_init (&rng, seed, 4);
  FabricRun run = { .size = fabric_draw_size (&rng, 20, 26),
                    .chunks = (uint32_t) weft_rng_below (&rng, 5),
                    .fidelity = WEFT_FIDELITY_FLOW };
  if (!fabric_pick (&rng, s->topo, ops, G_N_ELEMENTS (ops),
                    WEFT_PROTOCOL_RAW, &run))
    return FABRIC_SKIP;

  g_autoptr (GArray) gpus = fabric_gpus (s->topo);
  uint32_t n = gpus->len;
  g_autofree double *inj = g_new (double, n);
  double bisection = weft_topo_bisection (s->topo);
  /* The fabric's own rates bound the raw protocol; NCCL's model of the
   * links, the protocols that move data at it. */
  const WeftProtocolKind protocols[] = { WEFT_PROTOCOL_RAW,
                                         WEFT_PROTOCOL_SIMPLE };
  for (guint k = 0; k < G_N_ELEMENTS (protocols); k++)
    {
      run.protocol = protocols[k];
      if (!weft_collective_fits (s->topo, (uint32_t *) gpus->data, n, run.op,
                                 run.alg, run.protocol, NULL))
        continue;
      g_autoptr (GError) error = NULL;
      g_autofree char *what = fabric_run_describe (&run);
      WeftCollectiveResult r;
      if (!fabric_run (s->topo, &run, 0, &r, &error))
        return fabric_fail (why, &c, "%s did not run: %s", what,
                            error->message);
      injection (s->topo, gpus, run.protocol != WEFT_PROTOCOL_RAW, inj);
      double busbw = fabric_busbw (&run, n, &r);
      double bound = injection_bound (run.op, run.alg, inj, n);
      if (busbw > bound * (1 + 1e-6))
        return fabric_fail (why, &c, "%s: busbw %.3f GB/s above the injection "
                            "bound %.3f GB/s", what, busbw / 1e9, bound / 1e9);
      /* The crossing bytes take at least their time over the bisection. */
      double least = crossing (run.op, n, run.size) / bisection * 1e12;
      if ((double) r.time < least * (1 - 1e-6))
        return fabric_fail (why, &c, "%s: %" G_GUINT64_FORMAT " ps, less than "
                            "the %.0f ps its %.0f bytes take across the bisection "
                            "(%.3f GB/s)", what, r.time, least,
                            crossing (run.op, n, run.size), bisection / 1e9);
    }
  return FABRIC_PASS;
}

/* ---- the fidelities agree where nothing is shared ---- */

/* Whether no directed link carries two of the transfers in @net, whose
 * transfers have all started and none ended.  The packet and analytical
 * models start each stripe of a transfer (its share of the bytes over one
 * of several equal-cost first hops) as a transfer of its own, so there
 * two stripes of one transfer that meet on a link share it too; the flow
 * model moves a transfer's stripes as one. */
static gboolean
disjoint (const WeftNetwork *net)
{
  g_autofree uint32_t *owner = g_new (uint32_t, MAX (net->topo->n_links, 1));

  for (uint32_t l = 0; l < net->topo->n_links; l++)
    owner[l] = WEFT_NONE;
  for (uint32_t t = 0; t < net->n_transfers; t++)
    {
      const WeftTransfer *x = &net->transfers[t];
      for (uint32_t k = 0; k < x->path_len; k++)
        {
          uint32_t l = x->path[k];
          if (owner[l] != WEFT_NONE && owner[l] != t)
            return FALSE;
          owner[l] = t;
        }
    }
  return TRUE;
}

static void
move_done (WeftSim *sim, void *target, void *data)
{
  (void) data;
  ((FabricMove *) target)->done = weft_sim_now (sim);
}

gboolean
fabric_run_moves (const WeftTopology *topo, WeftFidelity fidelity,
                  FabricMove *moves, guint n, gboolean apart)
{
  g_autoptr (WeftSim) sim = weft_sim_new ();
  WeftNetworkConfig config = { fidelity, 0, 1, 0 };
  g_autoptr (WeftNetwork) net = weft_network_new (sim, topo, &config);

  /* Plain: every transfer keeps its own route, to be read here. */
  weft_network_set_plain (net, TRUE);
  for (guint i = 0; i < n; i++)
    weft_network_transfer (net, moves[i].src, moves[i].dst, moves[i].bytes, 0,
                           move_done, &moves[i], NULL);
  if (apart && !disjoint (net))
    return FALSE;
  weft_sim_run (sim);
  return TRUE;
}

const WeftFidelity fabric_fidelities[3] = { WEFT_FIDELITY_PACKET,
                                            WEFT_FIDELITY_FLOW,
                                            WEFT_FIDELITY_ANALYTICAL };

gboolean
fabric_agree (const WeftTime *t)
{
  WeftTime lo = MIN (t[0], MIN (t[1], t[2]));
  WeftTime hi = MAX (t[0], MAX (t[1], t[2]));

  return lo > 0 && (double) hi <= 1.03 * (double) lo;
}

/* A permutation among a random subset of the GPUs, each sending a random
 * size to the next in a random cycle: where no two of its transfers share
 * a link in any fidelity, each ends at the same time in all three.  Sizes
 * are 1 MiB or more, as in pair(). */
static FabricVerdict
permutation (const WeftScenario *s, const FabricCase *c, WeftRng *rng,
             GString *why)
{
  g_autoptr (GArray) gpus = fabric_gpus (s->topo);
  guint n = 2 + (guint) weft_rng_below (rng, MIN (gpus->len, 16) - 1);
  FabricMove moves[3][16];

  for (guint i = gpus->len - 1; i > 0; i--)
    {
      guint j = (guint) weft_rng_below (rng, i + 1);
      uint32_t t = g_array_index (gpus, uint32_t, i);
      g_array_index (gpus, uint32_t, i) = g_array_index (gpus, uint32_t, j);
      g_array_index (gpus, uint32_t, j) = t;
    }
  for (guint i = 0; i < n; i++)
    moves[0][i] = (FabricMove) { g_array_index (gpus, uint32_t, i),
                           g_array_index (gpus, uint32_t, (i + 1) % n),
                           fabric_draw_size (rng, 20, 22), 0 };
  for (guint f = 0; f < G_N_ELEMENTS (fabric_fidelities); f++)
    {
      memcpy (moves[f], moves[0], n * sizeof (FabricMove));
      if (!fabric_run_moves (s->topo, fabric_fidelities[f], moves[f], n,
                             TRUE))
        return FABRIC_SKIP;
    }
  for (guint i = 0; i < n; i++)
    {
      WeftTime t[3] = { moves[0][i].done, moves[1][i].done, moves[2][i].done };
      if (!fabric_agree (t))
        return fabric_fail (why, c, "%u disjoint transfers; %s to %s, %"
                            G_GUINT64_FORMAT " bytes, ends at %" G_GUINT64_FORMAT
                            " ps (packet), %" G_GUINT64_FORMAT " (flow), %"
                            G_GUINT64_FORMAT " (analytical)", n,
                            s->topo->nodes[moves[0][i].src].name,
                            s->topo->nodes[moves[0][i].dst].name,
                            moves[0][i].bytes,
                            t[0], t[1], t[2]);
    }
  return FABRIC_PASS;
}

/* A send_recv between two random GPUs, both ways at once, raw, one piece:
 * where the stripes of neither direction meet on a link (the two
 * directions never do: least-cost routes there and back cross no link the
 * same way), the same time at every fidelity.  The size is 1
 * MiB or more: the packet model stores and forwards whole packets at
 * every node but a switch, so its first packet reaches the end a packet's
 * time per such hop later than a fluid would (some 200 ns for 4 KiB over
 * PCIe), which is a few percent of a 64 KiB transfer. */
static FabricVerdict
pair (const WeftScenario *s, const FabricCase *c, WeftRng *rng, GString *why)
{
  g_autoptr (GArray) gpus = fabric_gpus (s->topo);
  uint32_t ends[2];
  guint a = (guint) weft_rng_below (rng, gpus->len);
  guint b = (a + 1 + (guint) weft_rng_below (rng, gpus->len - 1)) % gpus->len;
  uint64_t size = fabric_draw_size (rng, 20, 23);
  WeftCollectiveParams params = { 1, 1, 0, NULL, 1, NULL, NULL, 0, FALSE, NULL };
  WeftTime t[3];

  ends[0] = g_array_index (gpus, uint32_t, a);
  ends[1] = g_array_index (gpus, uint32_t, b);
  for (guint f = 0; f < G_N_ELEMENTS (fabric_fidelities); f++)
    {
      FabricMove both[2] = { { ends[0], ends[1], size, 0 },
                       { ends[1], ends[0], size, 0 } };
      if (!fabric_run_moves (s->topo, fabric_fidelities[f], both, 2, TRUE))
        return FABRIC_SKIP;
    }
  for (guint f = 0; f < G_N_ELEMENTS (fabric_fidelities); f++)
    {
      WeftRunOptions options = { fabric_fidelities[f], 1, 0, NULL, FALSE, 0, 0,
                                 NULL,
                                 1, NULL };
      WeftCollectiveResult r;
      g_autoptr (GError) error = NULL;
      if (!weft_collective_run (s->topo, ends, 2, WEFT_OP_SEND_RECV,
                                WEFT_ALG_RING, WEFT_PROTOCOL_RAW, size,
                                &params, &options, &r, &error))
        return fabric_fail (why, c, "send_recv did not run: %s",
                            error->message);
      t[f] = r.time;
    }
  if (!fabric_agree (t))
    return fabric_fail (why, c, "send_recv of %" G_GUINT64_FORMAT " bytes "
                        "between %s and %s: %" G_GUINT64_FORMAT " ps (packet), %"
                        G_GUINT64_FORMAT " (flow), %" G_GUINT64_FORMAT
                        " (analytical)", size, s->topo->nodes[ends[0]].name,
                        s->topo->nodes[ends[1]].name, t[0], t[1], t[2]);
  return FABRIC_PASS;
}

/* A pair exchanging, or a permutation, where nothing is shared: the same
 * time at every fidelity. */
static FabricVerdict
check_fidelities (uint64_t seed, GString *why)
{
  FabricCase c;
  WeftRng rng;

  fabric_case_draw (&c, seed, FABRIC_FAMILIES);
  g_autoptr (WeftScenario) s = fabric_case_load (&c, NULL, NULL);
  if (s == NULL)
    return FABRIC_SKIP;
  weft_rng_init (&rng, seed, 5);
  return weft_rng_below (&rng, 2) ? pair (s, &c, &rng, why)
                                  : permutation (s, &c, &rng, why);
}

/* ---- one transfer alone, its stripes meeting again or not ---- */

/* A transfer alone takes the same time at every fidelity, even where its
 * stripes (its shares over several equal-cost first hops) meet again on
 * a link: they share it, in every model, and do not get its bandwidth
 * each. */
static FabricVerdict
check_stripes (uint64_t seed, GString *why)
{
  FabricCase c;
  WeftRng rng;

  fabric_case_draw (&c, seed, FABRIC_FAMILIES);
  g_autoptr (WeftScenario) s = fabric_case_load (&c, NULL, NULL);
  if (s == NULL)
    return FABRIC_SKIP;
  weft_rng_init (&rng, seed, 6);
  g_autoptr (GArray) gpus = fabric_gpus (s->topo);
  guint a = (guint) weft_rng_below (&rng, gpus->len);
  guint b = (a + 1 + (guint) weft_rng_below (&rng, gpus->len - 1)) % gpus->len;
  uint64_t bytes = fabric_draw_size (&rng, 20, 23);
  FabricMove moves[3];
  WeftTime t[3];

  for (guint f = 0; f < 3; f++)
    {
      moves[f] = (FabricMove) { g_array_index (gpus, uint32_t, a),
                                g_array_index (gpus, uint32_t, b), bytes, 0 };
      fabric_run_moves (s->topo, fabric_fidelities[f], &moves[f], 1, FALSE);
      t[f] = moves[f].done;
    }
  if (!fabric_agree (t))
    return fabric_fail (why, &c, "%s to %s alone, %" G_GUINT64_FORMAT
                        " bytes: %" G_GUINT64_FORMAT " ps (packet), %"
                        G_GUINT64_FORMAT " (flow), %" G_GUINT64_FORMAT
                        " (analytical)", s->topo->nodes[moves[0].src].name,
                        s->topo->nodes[moves[0].dst].name, moves[0].bytes,
                        t[0], t[1], t[2]);
  return FABRIC_PASS;
}

/* ---- analytical within 15% of flow where links are shared ---- */

/* An all_to_all by direct sends, where each GPU's links carry its n - 1
 * transfers at once, takes at the analytical fidelity within 15% of what
 * it takes at flow fidelity. */
static FabricVerdict
check_analytical_shared (uint64_t seed, GString *why)
{
  FabricCase c;
  WeftRng rng;

  fabric_case_draw (&c, seed, FABRIC_FAMILIES);
  g_autoptr (WeftScenario) s = fabric_case_load (&c, NULL, NULL);
  if (s == NULL || weft_topology_count (s->topo, WEFT_NODE_GPU) < 3)
    return FABRIC_SKIP;
  weft_rng_init (&rng, seed, 7);
  /* Every GPU sends to every other at once: its own links carry n - 1
   * transfers together. */
  FabricRun run = { WEFT_OP_ALL_TO_ALL, WEFT_ALG_DIRECT, WEFT_PROTOCOL_SIMPLE,
                    fabric_draw_size (&rng, 22, 26), 0, 0,
                    WEFT_FIDELITY_FLOW };
  WeftTime flow = fabric_time_of (s->topo, &run, &c, why);
  run.fidelity = WEFT_FIDELITY_ANALYTICAL;
  WeftTime analytical = flow ? fabric_time_of (s->topo, &run, &c, why) : 0;
  if (flow == 0 || analytical == 0)
    return FABRIC_FAIL;
  if (fabs ((double) analytical / (double) flow - 1) > 0.15)
    {
      g_autofree char *what = fabric_run_describe (&run);
      return fabric_fail (why, &c, "%s: %" G_GUINT64_FORMAT " ps, flow %"
                          G_GUINT64_FORMAT " ps", what, analytical, flow);
    }
  return FABRIC_PASS;
}

/* ---- the table ---- */

const FabricProperty fabric_properties[] = {
  { "runs", "every case loads and runs, or is refused with a message",
    check_runs, 400, 60 },
  { "bandwidth", "more bandwidth on a link type is never slower where "
    "transfers share no link (analytical-free; raw, LL128, Simple)",
    check_bandwidth, 300, 60 },
  { "oversubscription", "more oversubscription of a two-level tree never "
    "makes an all_to_all by direct sends faster", check_oversubscription,
    300, 40 },
  { "bounds", "busbw stays under the injection and bisection bounds",
    check_bounds, 300, 60 },
  { "fidelities", "the three fidelities agree within 3% where nothing is "
    "shared", check_fidelities, 300, 50 },
  { "stripes", "a transfer alone takes the same time at every fidelity, its "
    "stripes meeting again or not", check_stripes, 150, 60 },
  { "analytical-shared", "analytical stays within 15% of flow where links "
    "are shared", check_analytical_shared, 150, 60 },
  { "hierarchical", "a complete non-blocking fat-tree reaches the "
    "hierarchical all_reduce closed form within 2%",
    fabric_check_hierarchical, 150, 30 },
  { "uplinks", "NIC and leaf up-link loads within 10% of each other for "
    "symmetric traffic on a complete tree", fabric_check_uplinks, 150, 25 },
#ifdef WEFT_PENDING_PROPERTIES
  { "bandwidth-shared", "more bandwidth on a link type is never slower, at "
    "flow fidelity, with every protocol", fabric_check_bandwidth_shared, 200,
    60 },
  { "oversubscription-shared", "more oversubscription is never faster, two "
    "or three levels, any operation", fabric_check_oversubscription_shared,
    150, 30 },
#endif
};

const guint fabric_n_properties = G_N_ELEMENTS (fabric_properties);

uint64_t
fabric_property_seed (uint64_t seed, guint p, guint i)
{
  return weft_mix64 (seed * 1000003 + p) + i;
}
