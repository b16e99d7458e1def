/* Properties of complete trees (every leaf full, every pod whole:
 * weft_tiers_complete()), where destination-based routing keeps a shift's
 * flows apart (Zahavi et al., "Optimized InfiniBand fat-tree routing for
 * shift all-to-all communication patterns", Concurrency and Computation
 * 22(2), 2010): the hierarchical all_reduce's closed form and evenly
 * loaded uplinks. */
#include "fabric_props-private.h"

#include <math.h>
#include <string.h>

#include "topology/tiers.h"

/* ---- hierarchical all_reduce on a non-blocking tree ---- */

/* The time a ring phase of one piece takes on idle paths: ring @k of
 * @rings, over the @len ranks @first, @first + @stride, ... of @gpus, each
 * sending @bytes to the next and adding in what it gets (@reduce, B/s; 0:
 * no reduction).  A rank's step waits only for what it got at the step
 * before, so a phase's last step ends a chain of @len - 1 steps over all
 * but one of the ring's links: every link's time but the quickest, and
 * the reductions.  The slowest ring's. */
static double
ring_phase (WeftNetwork *idle, const GArray *gpus, uint32_t rings,
            uint32_t ring_step, uint32_t len, uint32_t stride,
            uint64_t bytes, double reduce)
{
  double worst = 0;

  for (uint32_t k = 0; k < rings; k++)
    {
      double sum = 0, quickest = INFINITY;
      for (uint32_t q = 0; q < len; q++)
        {
          uint32_t a = k * ring_step + q * stride;
          uint32_t b = k * ring_step + ((q + 1) % len) * stride;
          double t = (double) weft_network_ideal_time (
              idle, g_array_index (gpus, uint32_t, a),
              g_array_index (gpus, uint32_t, b), bytes);
          sum += t;
          quickest = MIN (quickest, t);
        }
      double phase = sum - quickest
                     + (reduce > 0 ? (len - 1) * ceil (bytes * 1e12 / reduce)
                                   : 0);
      worst = MAX (worst, phase);
    }
  return worst;
}

/* On a complete non-blocking tree (1:1) the transfers of a hierarchical
 * all_reduce, one piece at a time and raw, share no link, so it takes what
 * its rings take on idle paths (ring_phase()): for m servers of g GPUs, a
 * ring of g steps of S/g with reductions inside every server, a ring of
 * S/gm over the servers for every local index, reducing and then
 * gathering, and a ring of S/g inside again. */
FabricVerdict
fabric_check_hierarchical (uint64_t seed, GString *why)
{
  FabricCase c;
  WeftRng rng;

  fabric_case_draw (&c, seed, seed % 2 ? FABRIC_RAIL : FABRIC_FAT_TREE);
  c.down = c.up = 1;
  g_autoptr (WeftScenario) s = fabric_case_load (&c, NULL, NULL);
  if (s == NULL)
    return FABRIC_SKIP;
  g_autoptr (WeftTiers) tiers = weft_tiers_new (s->topo);
  if (!weft_tiers_complete (s->topo, tiers, NULL))
    return FABRIC_SKIP;
  weft_rng_init (&rng, seed, 8);
  FabricRun run = { WEFT_OP_ALL_REDUCE, WEFT_ALG_HIER, WEFT_PROTOCOL_RAW,
                    fabric_draw_size (&rng, 22, 26), 1, 1,
                    WEFT_FIDELITY_FLOW };
  WeftTime got = fabric_time_of (s->topo, &run, &c, why);
  if (got == 0)
    return FABRIC_FAIL;

  g_autoptr (GArray) gpus = fabric_gpus (s->topo);
  g_autoptr (WeftSim) sim = weft_sim_new ();
  WeftNetworkConfig config = { WEFT_FIDELITY_FLOW, 0, 1, 0 };
  g_autoptr (WeftNetwork) idle = weft_network_new (sim, s->topo, &config);
  uint32_t g = c.gpus, m = c.servers;
  double reduce = s->topo->nodes[g_array_index (gpus, uint32_t, 0)]
                      .device->reduce_bandwidth;
  uint64_t piece = (run.size + g - 1) / g;
  uint64_t slice = (piece + m - 1) / m;
  double in = ring_phase (idle, gpus, m, g, g, 1, piece, reduce);
  double gather = ring_phase (idle, gpus, m, g, g, 1, piece, 0);
  double out = ring_phase (idle, gpus, g, 1, m, g, slice, reduce)
               + ring_phase (idle, gpus, g, 1, m, g, slice, 0);
  double closed = in + out + gather;
  if (fabs ((double) got - closed) > 0.02 * closed)
    {
      g_autofree char *what = fabric_run_describe (&run);
      return fabric_fail (why, &c, "%s: %" G_GUINT64_FORMAT " ps, the closed "
                          "form %.0f ps (%.0f ps inside the servers, %.0f "
                          "across, %.0f inside)", what, got, closed, in, out,
                          gather);
    }
  return FABRIC_PASS;
}

/* ---- symmetric traffic loads the uplinks evenly ---- */

/* The least and the most bytes the links of tier @name that lead up
 * carried in @stats, and how many there are. */
static guint
up_loads (const WeftTopology *topo, const WeftTiers *tiers, const char *name,
          const WeftLinkStats *stats, uint64_t *least, uint64_t *most)
{
  guint n = 0;

  *least = G_MAXUINT64;
  *most = 0;
  for (uint32_t l = 0; l < topo->n_links; l++)
    if (tiers->up[l]
        && strcmp (tiers->tiers[tiers->of_link[l]].name, name) == 0)
      {
        *least = MIN (*least, stats->links[l].bytes);
        *most = MAX (*most, stats->links[l].bytes);
        n++;
      }
  return n;
}

/* Whether destination-based routing can spread the traffic of every
 * leaf of @topo's complete tree evenly over its uplinks, the endpoints
 * being servers' NICs in groups of @server (1 on rails, whose leaves hold
 * a NIC of each server): a leaf's sources send up to every endpoint but
 * those of their leaf, or of their server where the server spans leaves
 * (inside a server data goes over NVLink), and the leaf's uplinks divide
 * that block and all the endpoints, so that the destinations fall on each
 * uplink equally often.  Else some uplinks take a destination more than
 * others, and with few destinations an uplink takes none; and a leaf
 * holding part of a server sends less than its neighbours. */
static gboolean
even_destinations (const WeftTopology *topo, const WeftTiers *tiers,
                   uint32_t server)
{
  g_autofree uint32_t *held = g_new0 (uint32_t, topo->n_nodes);
  g_autofree uint32_t *ups = g_new0 (uint32_t, topo->n_nodes);
  uint32_t endpoints = 0;

  for (uint32_t l = 0; l < topo->n_links; l++)
    {
      if (!tiers->up[l])
        continue;
      const char *name = tiers->tiers[tiers->of_link[l]].name;
      if (strcmp (name, "leaf") == 0)
        {
          held[topo->links[l].dst]++;
          endpoints++;
        }
      else if (strcmp (name, "spine") == 0)
        ups[topo->links[l].src]++;
    }
  for (uint32_t v = 0; v < topo->n_nodes; v++)
    if (held[v] > 0 && ups[v] > 0)
      {
        uint32_t block = MAX (held[v], server);
        if (block % MIN (held[v], server) != 0 || block % ups[v] != 0
            || endpoints % ups[v] != 0)
          return FALSE;
      }
  return TRUE;
}

/* An all_to_all by direct sends among every GPU of a complete fat-tree or
 * rail case whose uplinks divide its destinations (even_destinations())
 * is the same for every NIC and every leaf: the bytes each NIC sends up
 * to its leaf lie within 10% of each other, and so do those each leaf's
 * uplinks carry. */
FabricVerdict
fabric_check_uplinks (uint64_t seed, GString *why)
{
  FabricCase c;
  WeftRng rng;

  fabric_case_draw (&c, seed, seed % 2 ? FABRIC_RAIL : FABRIC_FAT_TREE);
  g_autoptr (WeftScenario) s = fabric_case_load (&c, NULL, NULL);
  if (s == NULL)
    return FABRIC_SKIP;
  g_autoptr (WeftTiers) tiers = weft_tiers_new (s->topo);
  if (!weft_tiers_complete (s->topo, tiers, NULL)
      || !even_destinations (s->topo, tiers,
                             c.family == FABRIC_RAIL ? 1 : c.gpus))
    return FABRIC_SKIP;
  weft_rng_init (&rng, seed, 9);
  FabricRun run = { WEFT_OP_ALL_TO_ALL, WEFT_ALG_DIRECT, WEFT_PROTOCOL_RAW,
                    fabric_draw_size (&rng, 20, 24), 0, 0,
                    WEFT_FIDELITY_FLOW };
  WeftCollectiveResult r;
  g_autoptr (GError) error = NULL;
  g_autofree char *what = fabric_run_describe (&run);
  if (!fabric_run (s->topo, &run, 1000 * WEFT_US, &r, &error))
    return fabric_fail (why, &c, "%s did not run: %s", what, error->message);
  const char *names[] = { "leaf", "spine" };
  FabricVerdict v = FABRIC_SKIP;
  for (guint k = 0; k < G_N_ELEMENTS (names) && v != FABRIC_FAIL; k++)
    {
      uint64_t least, most;
      if (up_loads (s->topo, tiers, names[k], r.stats, &least, &most) < 2)
        continue;
      v = FABRIC_PASS;
      if ((double) most > 1.1 * (double) least)
        v = fabric_fail (why, &c, "%s: the uplinks into the %s tier carry "
                         "%" G_GUINT64_FORMAT " to %" G_GUINT64_FORMAT
                         " bytes", what, names[k], least, most);
    }
  weft_link_stats_free (r.stats);
  g_free (r.spans);
  return v;
}
