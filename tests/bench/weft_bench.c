/* weft-bench: benchmarks that print figures (not pass/fail tests).
 *
 *   weft-bench phold [--lps N] [--events-per-lp K] [--events E] [--seed S]
 *
 * PHOLD: N logical processes start with K events each; every event draws an
 * exponential delay (mean 1 us) plus 100 ns of lookahead and schedules one new
 * event on a uniformly random process, until E events have run.
 *
 *   weft-bench routes SCENARIO [--pairs N] [--seed S]
 *
 * Loads the scenario, builds its topology and routing, then routes every GPU
 * to the next one (a ring over all GPUs) and N random GPU pairs.  Prints the
 * time of each stage, the routing state's size and the peak memory.
 */
#include "rng.h"
#include "routing.h"
#include "scenario.h"
#include "sim.h"

#include <sys/resource.h>

#include <stdio.h>
#include <stdlib.h>

typedef struct Phold Phold;

typedef struct {
  WeftRng rng;
  Phold *model;
} Lp;

struct Phold {
  Lp *lps;
  uint64_t n_lps;
  uint64_t target;              /* events to run */
  uint64_t ran;
};

#define MEAN_DELAY_PS 1e6       /* 1 us */
#define LOOKAHEAD_PS 100000     /* 100 ns */

static void
phold_event (WeftSim *sim, void *target, void *data)
{
  Lp *lp = target;
  Phold *model = lp->model;
  (void) data;

  if (++model->ran >= model->target)
    {
      weft_sim_stop (sim);
      return;
    }
  WeftTime delay = (WeftTime) weft_rng_exponential (&lp->rng, MEAN_DELAY_PS)
                   + LOOKAHEAD_PS;
  Lp *dest = &model->lps[weft_rng_below (&lp->rng, model->n_lps)];
  weft_sim_schedule (sim, delay, phold_event, dest, NULL);
}

static int
bench_phold (int argc, char **argv)
{
  gint64 lps = 1024, per_lp = 16, events = 10000000, seed = 1;
  GOptionEntry entries[] = {
    { "lps", 0, 0, G_OPTION_ARG_INT64, &lps,
      "Logical processes (default: 1024)", "N" },
    { "events-per-lp", 0, 0, G_OPTION_ARG_INT64, &per_lp,
      "Initial events per process (default: 16)", "K" },
    { "events", 0, 0, G_OPTION_ARG_INT64, &events,
      "Events to run (default: 10000000)", "E" },
    { "seed", 0, 0, G_OPTION_ARG_INT64, &seed, "Seed (default: 1)", "S" },
    G_OPTION_ENTRY_NULL
  };
  g_autoptr (GOptionContext) context = g_option_context_new (NULL);
  g_autoptr (GError) error = NULL;

  g_option_context_set_summary (context, "The classic PHOLD hold model.");
  g_option_context_add_main_entries (context, entries, NULL);
  if (!g_option_context_parse (context, &argc, &argv, &error))
    {
      fprintf (stderr, "weft-bench phold: %s\n", error->message);
      return 2;
    }
  if (lps < 1 || per_lp < 1 || events < 1)
    {
      fprintf (stderr, "weft-bench phold: counts must be positive\n");
      return 2;
    }

  g_autoptr (WeftSim) sim = weft_sim_new ();
  Phold model = { .n_lps = lps, .target = events };

  model.lps = g_new (Lp, lps);
  for (gint64 i = 0; i < lps; i++)
    {
      Lp *lp = &model.lps[i];
      lp->model = &model;
      weft_rng_init (&lp->rng, seed, i);
      for (gint64 k = 0; k < per_lp; k++)
        weft_sim_schedule (
            sim,
            (WeftTime) weft_rng_exponential (&lp->rng, MEAN_DELAY_PS)
                + LOOKAHEAD_PS,
            phold_event, lp, NULL);
    }

  gint64 t0 = g_get_monotonic_time ();
  weft_sim_run (sim);
  double seconds = (g_get_monotonic_time () - t0) / 1e6;

  printf ("phold lps=%" G_GINT64_FORMAT " pending=%" G_GINT64_FORMAT
          " events=%" G_GUINT64_FORMAT " seconds=%.3f events_per_sec=%.0f\n",
          lps, lps * per_lp, weft_sim_events_run (sim), seconds,
          weft_sim_events_run (sim) / seconds);
  g_free (model.lps);
  return 0;
}

static double
seconds_since (gint64 t0)
{
  return (g_get_monotonic_time () - t0) / 1e6;
}

static int
bench_routes (int argc, char **argv)
{
  gint64 pairs = 1000000, seed = 1;
  GOptionEntry entries[] = {
    { "pairs", 0, 0, G_OPTION_ARG_INT64, &pairs,
      "Random GPU pairs to route (default: 1000000)", "N" },
    { "seed", 0, 0, G_OPTION_ARG_INT64, &seed, "Seed (default: 1)", "S" },
    G_OPTION_ENTRY_NULL
  };
  g_autoptr (GOptionContext) context = g_option_context_new ("SCENARIO");
  g_autoptr (GError) error = NULL;

  g_option_context_set_summary (context, "Load, build and route a scenario.");
  g_option_context_add_main_entries (context, entries, NULL);
  if (!g_option_context_parse (context, &argc, &argv, &error) || argc != 2)
    {
      fprintf (stderr, "weft-bench routes: %s\n",
               error ? error->message : "expected one scenario");
      return 2;
    }

  gint64 t0 = g_get_monotonic_time ();
  g_autoptr (WeftScenario) s = weft_scenario_load (argv[1], &error);
  if (s == NULL)
    {
      fprintf (stderr, "%s\n", error->message);
      return 2;
    }
  double load = seconds_since (t0);
  const WeftTopology *topo = s->topo;

  t0 = g_get_monotonic_time ();
  g_autoptr (WeftRouting) r = weft_routing_new (topo);
  double build = seconds_since (t0);

  g_autoptr (GArray) gpus = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  for (uint32_t n = 0; n < topo->n_nodes; n++)
    if (topo->nodes[n].kind == WEFT_NODE_GPU)
      g_array_append_val (gpus, n);
  g_autoptr (GArray) path = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  uint64_t hops = 0;

  t0 = g_get_monotonic_time ();
  for (guint i = 0; i < gpus->len; i++)
    {
      uint32_t a = g_array_index (gpus, uint32_t, i);
      uint32_t b = g_array_index (gpus, uint32_t, (i + 1) % gpus->len);
      if (!weft_routing_path (r, a, b, i, path))
        return 1;
      hops += path->len;
    }
  double ring = seconds_since (t0);

  WeftRng rng;
  weft_rng_init (&rng, (uint64_t) seed, 0);
  t0 = g_get_monotonic_time ();
  for (gint64 i = 0; i < pairs; i++)
    {
      uint32_t a = g_array_index (gpus, uint32_t,
                                  weft_rng_below (&rng, gpus->len));
      uint32_t b = g_array_index (gpus, uint32_t,
                                  weft_rng_below (&rng, gpus->len));
      if (!weft_routing_path (r, a, b, (uint64_t) i, path))
        return 1;
      hops += path->len;
    }
  double random = seconds_since (t0);

  struct rusage usage;
  getrusage (RUSAGE_SELF, &usage);
  printf ("routes gpus=%u nodes=%u links=%u load_s=%.2f routing_s=%.2f "
          "ring_routes=%u ring_s=%.2f random_routes=%" G_GINT64_FORMAT
          " random_s=%.2f hops=%" G_GUINT64_FORMAT " route_state_MiB=%.1f "
          "peak_rss_MiB=%.0f\n",
          gpus->len, topo->n_nodes, topo->n_links / 2, load, build, gpus->len,
          ring, pairs, random, hops, weft_routing_memory (r) / 1048576.0,
          usage.ru_maxrss / 1024.0);
  return 0;
}

int
main (int argc, char **argv)
{
  if (argc >= 2 && g_strcmp0 (argv[1], "routes") == 0)
    return bench_routes (argc - 1, argv + 1);
  if (argc >= 2 && g_strcmp0 (argv[1], "phold") == 0)
    return bench_phold (argc - 1, argv + 1);
  fprintf (stderr, "Usage: weft-bench BENCHMARK [OPTIONS...]\n\n"
                   "Benchmarks:\n"
                   "  phold   the PHOLD hold model on the event engine\n"
                   "  routes  load, build and route a scenario\n"
                   "\n'weft-bench BENCHMARK --help' lists its options.\n");
  return 2;
}
