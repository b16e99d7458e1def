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
 *
 *   weft-bench packet [--bytes B]
 *
 * All-to-all among the 8 GPUs of a DGX H100 (NVLink, 256-byte packets) at
 * packet fidelity: packet-hops per second.
 *
 *   weft-bench flow [--flows N] [--departures D]
 *
 * N concurrent flows between random GPUs of the 1024-GPU fat-tree at flow
 * fidelity; each departure starts a new flow.  Arrivals and departures per
 * second.
 *
 *   weft-bench db [--rows N]
 *
 * Writes N link_util rows (links x 1000 bins) to a fresh database, as weft
 * run writes them: rows per second.
 *
 *   weft-bench versus [--servers S] [--bytes B]
 *
 * All-to-all among GPU 0 of S servers of the 1024-GPU fat-tree, large
 * messages, at packet and at flow fidelity: wall time of each and the ratio.
 *
 *   weft-bench scale [--servers S] [--algorithm A] [--bytes B] [--chunks N]
 *                    [--plain] [--threads T] [SCENARIO]
 *
 * One all_reduce (default: hierarchical-rhd of 1 GiB, Simple protocol, flow
 * fidelity, no link statistics) over every GPU of the scenario (default:
 * scenarios/h100-131072-fat-tree.yaml), with --servers S keeping servers
 * node0 to node(S-1) by overriding the node range and the fabric's
 * endpoints as `weft run --set` does.  Prints the load and simulation times,
 * the peak memory, the events, the simulated time and busbw.  --plain turns
 * the simulator's speed-ups off (the results must not change); --threads T
 * lets T threads share the run's work (the results do not change).
 *
 *   weft-bench properties [--cases N] [--seed S] [--property NAME]
 *                         [--case SEED]
 *
 * The property tests of test-properties (tests/fabric_props.c) over N
 * random cases each (default 1000) drawn under seed S: for each property
 * the cases that held, did not qualify and failed, and the time taken;
 * each failure's case, with its scenario, on stderr.  --case checks the
 * one case of that seed (as a failure names it).  Exits 1 if a property
 * failed.
 */
#include "collectives/collective_run.h"
#include "db.h"
#include "fabric_gen.h"
#include "fabric_props.h"
#include "memory.h"
#include "network/network.h"
#include "rng.h"
#include "topology/routing.h"
#include "topology/scenario.h"
#include "sim.h"
#include "traces/trace_run.h"

#include <glib/gstdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "units.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static const char *
scenario_path (const char *file)
{
  static char path[4096];

  g_snprintf (path, sizeof path, "%s/scenarios/%s", WEFT_SOURCE_DIR, file);
  return path;
}

static WeftScenario *
load_or_die (const char *file)
{
  g_autoptr (GError) error = NULL;
  WeftScenario *s = weft_scenario_load (scenario_path (file), &error);

  if (s == NULL)
    {
      fprintf (stderr, "%s\n", error->message);
      exit (2);
    }
  return s;
}

static void
count_done (WeftSim *sim, void *target, void *data)
{
  (void) sim, (void) data;
  (*(uint64_t *) target)++;
}

static uint32_t
gpu_named (const WeftTopology *topo, const char *format, int a, int b)
{
  g_autofree char *name = g_strdup_printf (format, a, b);
  return weft_topology_find_node (topo, name);
}

/* All-to-all among @gpus: every ordered pair moves @bytes.  Returns the
 * simulation's wall time in seconds. */
static double
all_to_all (const WeftTopology *topo, const uint32_t *gpus, int n,
            uint64_t bytes, WeftFidelity fidelity, WeftTime *sim_time,
            uint64_t *hops, uint64_t *events)
{
  g_autoptr (WeftSim) sim = weft_sim_new ();
  WeftNetworkConfig config = { fidelity, WEFT_US, 0, 0 };
  gint64 t0 = g_get_monotonic_time ();
  g_autoptr (WeftNetwork) net = weft_network_new (sim, topo, &config);
  uint64_t done = 0;

  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++)
      if (i != j)
        weft_network_transfer (net, gpus[i], gpus[j], bytes, 0, count_done,
                               &done, NULL);
  weft_sim_run (sim);
  *sim_time = weft_sim_now (sim);
  *hops = net->packet_hops;
  *events = weft_sim_events_run (sim);
  return seconds_since (t0);
}

static int
bench_packet (int argc, char **argv)
{
  g_autofree char *size = NULL;
  GOptionEntry entries[] = {
    { "bytes", 0, 0, G_OPTION_ARG_STRING, &size,
      "Bytes per GPU pair (default: 16MiB)", "B" },
    G_OPTION_ENTRY_NULL
  };
  g_autoptr (GOptionContext) context = g_option_context_new (NULL);
  g_autoptr (GError) error = NULL;
  uint64_t bytes = 16 << 20;

  g_option_context_add_main_entries (context, entries, NULL);
  if (!g_option_context_parse (context, &argc, &argv, &error)
      || (size && !weft_parse_size (size, &bytes, &error)))
    {
      fprintf (stderr, "weft-bench packet: %s\n", error->message);
      return 2;
    }
  g_autoptr (WeftScenario) s = load_or_die ("dgx-h100.yaml");
  uint32_t gpus[8];
  for (int i = 0; i < 8; i++)
    gpus[i] = gpu_named (s->topo, "dgx/gpu%d", i, 0);
  WeftTime t;
  uint64_t hops, events;
  double seconds = all_to_all (s->topo, gpus, 8, bytes, WEFT_FIDELITY_PACKET,
                               &t, &hops, &events);
  printf ("packet gpus=8 bytes_per_pair=%" G_GUINT64_FORMAT " packet_hops=%"
          G_GUINT64_FORMAT " events=%" G_GUINT64_FORMAT " seconds=%.3f "
          "packet_hops_per_sec=%.0f simulated_us=%.1f\n",
          bytes, hops, events, seconds, hops / seconds, t / 1e6);
  return 0;
}

typedef struct {
  WeftNetwork *net;
  GArray *gpus;
  WeftRng rng;
  uint64_t departures, target;
  uint64_t arrivals;
} Churn;

static void churn_done (WeftSim *sim, void *target, void *data);

static void
churn_start (Churn *c)
{
  uint32_t a = g_array_index (c->gpus, uint32_t,
                              weft_rng_below (&c->rng, c->gpus->len));
  uint32_t b = g_array_index (c->gpus, uint32_t,
                              weft_rng_below (&c->rng, c->gpus->len));
  uint64_t bytes = 1 + (uint64_t) weft_rng_exponential (&c->rng, 16 << 20);

  c->arrivals++;
  weft_network_transfer (c->net, a, b, bytes, 0, churn_done, c, NULL);
}

static void
churn_done (WeftSim *sim, void *target, void *data)
{
  Churn *c = target;
  (void) data;

  if (++c->departures >= c->target)
    {
      weft_sim_stop (sim);
      return;
    }
  churn_start (c);
}

static int
bench_flow (int argc, char **argv)
{
  gint64 flows = 100000, departures = 200000;
  GOptionEntry entries[] = {
    { "flows", 0, 0, G_OPTION_ARG_INT64, &flows,
      "Concurrent flows (default: 100000)", "N" },
    { "departures", 0, 0, G_OPTION_ARG_INT64, &departures,
      "Departures to run for (default: 200000)", "D" },
    G_OPTION_ENTRY_NULL
  };
  g_autoptr (GOptionContext) context = g_option_context_new (NULL);
  g_autoptr (GError) error = NULL;

  g_option_context_add_main_entries (context, entries, NULL);
  if (!g_option_context_parse (context, &argc, &argv, &error) || flows < 1)
    {
      fprintf (stderr, "weft-bench flow: %s\n",
               error ? error->message : "--flows must be positive");
      return 2;
    }
  g_autoptr (WeftScenario) s = load_or_die ("h100-1024-fat-tree.yaml");
  g_autoptr (WeftSim) sim = weft_sim_new ();
  /* Bins of 100 us: about a thousand over the run, as weft run uses. */
  WeftNetworkConfig config = { WEFT_FIDELITY_FLOW, 100 * WEFT_US, 0, 0 };
  Churn c = { .net = weft_network_new (sim, s->topo, &config),
              .gpus = g_array_new (FALSE, FALSE, sizeof (uint32_t)),
              .target = (uint64_t) departures };
  weft_rng_init (&c.rng, 1, 0);
  for (uint32_t n = 0; n < s->topo->n_nodes; n++)
    if (s->topo->nodes[n].kind == WEFT_NODE_GPU)
      g_array_append_val (c.gpus, n);

  gint64 t0 = g_get_monotonic_time ();
  for (gint64 i = 0; i < flows; i++)
    churn_start (&c);
  double setup = seconds_since (t0);
  t0 = g_get_monotonic_time ();
  weft_sim_run (sim);
  double seconds = seconds_since (t0);
  printf ("flow gpus=%u concurrent=%" G_GINT64_FORMAT " arrivals=%"
          G_GUINT64_FORMAT " departures=%" G_GUINT64_FORMAT
          " setup_s=%.2f seconds=%.2f changes_per_sec=%.0f\n",
          c.gpus->len, flows, c.arrivals, c.departures, setup, seconds,
          (c.arrivals - (uint64_t) flows + c.departures) / seconds);
  weft_network_free (c.net);
  g_array_unref (c.gpus);
  return 0;
}

static int
bench_versus (int argc, char **argv)
{
  gint64 servers = 16;
  g_autofree char *size = NULL;
  GOptionEntry entries[] = {
    { "servers", 0, 0, G_OPTION_ARG_INT64, &servers,
      "Servers whose GPU 0 take part (default: 16)", "S" },
    { "bytes", 0, 0, G_OPTION_ARG_STRING, &size,
      "Bytes per GPU pair (default: 16MiB)", "B" },
    G_OPTION_ENTRY_NULL
  };
  g_autoptr (GOptionContext) context = g_option_context_new (NULL);
  g_autoptr (GError) error = NULL;
  uint64_t bytes = 16 << 20;

  g_option_context_add_main_entries (context, entries, NULL);
  if (!g_option_context_parse (context, &argc, &argv, &error)
      || (size && !weft_parse_size (size, &bytes, &error)) || servers < 2
      || servers > 128)
    {
      fprintf (stderr, "weft-bench versus: %s\n",
               error ? error->message : "--servers must be 2 to 128");
      return 2;
    }
  g_autoptr (WeftScenario) s = load_or_die ("h100-1024-fat-tree.yaml");
  g_autofree uint32_t *gpus = g_new (uint32_t, servers);
  for (int i = 0; i < servers; i++)
    gpus[i] = gpu_named (s->topo, "node%d/gpu%d", i * (128 / (int) servers), 0);
  WeftTime tp, tf;
  uint64_t hops, events_p, events_f, unused;
  double packet = all_to_all (s->topo, gpus, (int) servers, bytes,
                              WEFT_FIDELITY_PACKET, &tp, &hops, &events_p);
  double flow = all_to_all (s->topo, gpus, (int) servers, bytes,
                            WEFT_FIDELITY_FLOW, &tf, &unused, &events_f);
  printf ("versus gpus=%" G_GINT64_FORMAT " bytes_per_pair=%" G_GUINT64_FORMAT
          " packet_s=%.3f packet_events=%" G_GUINT64_FORMAT " flow_s=%.4f "
          "flow_events=%" G_GUINT64_FORMAT " speedup=%.0f "
          "simulated_packet_us=%.1f simulated_flow_us=%.1f\n",
          servers, bytes, packet, events_p, flow, events_f, packet / flow,
          tp / 1e6, tf / 1e6);
  return 0;
}

static int
bench_db (int argc, char **argv)
{
  gint64 rows = 10000000;
  GOptionEntry entries[] = {
    { "rows", 0, 0, G_OPTION_ARG_INT64, &rows,
      "link_util rows to write (default: 10000000)", "N" },
    G_OPTION_ENTRY_NULL
  };
  g_autoptr (GOptionContext) context = g_option_context_new (NULL);
  g_autoptr (GError) error = NULL;

  g_option_context_add_main_entries (context, entries, NULL);
  if (!g_option_context_parse (context, &argc, &argv, &error) || rows < 1000)
    {
      fprintf (stderr, "weft-bench db: %s\n",
               error ? error->message : "--rows must be at least 1000");
      return 2;
    }
  g_autofree char *dir = g_dir_make_tmp ("weft-bench-db-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "bench.db", NULL);
  uint32_t bins = 1000, links = (uint32_t) (rows / bins);
  WeftTime width = WEFT_US;
  g_autoptr (WeftLinkStats) stats = weft_link_stats_new (links, width);
  for (uint32_t l = 0; l < links; l++)
    {
      weft_link_stats_spread (stats, l, 0, bins * width, 1e9);
      weft_link_stats_count (stats, l, 1000000000);
    }
  WeftDb *db = weft_db_open (path, &error);
  if (db == NULL)
    {
      fprintf (stderr, "%s\n", error->message);
      return 1;
    }
  WeftRunInfo info = { "bench", "0", "flow", 1, "weft-bench db" };
  int64_t run = weft_db_begin_run (db, &info, &error);
  WeftOpRow op = { "all_reduce", "ring", "Simple", 1, 2, 0, bins * width, 1,
                   1 };
  gint64 t0 = g_get_monotonic_time ();
  if (!weft_db_write_op (db, run, 0, &op, stats, NULL, NULL, 0, &error))
    {
      fprintf (stderr, "%s\n", error->message);
      return 1;
    }
  double seconds = seconds_since (t0);
  weft_db_close (db);
  struct stat st;
  g_stat (path, &st);
  printf ("db rows=%u seconds=%.2f rows_per_sec=%.0f file_MiB=%.0f\n",
          links * bins, seconds, links * bins / seconds,
          st.st_size / 1048576.0);
  g_remove (path);
  g_rmdir (dir);
  return 0;
}

static int
bench_scale (int argc, char **argv)
{
  gint64 servers = 0, chunks = 8, threads = 1;
  gboolean plain = FALSE;
  g_autofree char *alg_name = NULL, *size = NULL;
  GOptionEntry entries[] = {
    { "servers", 0, 0, G_OPTION_ARG_INT64, &servers,
      "Keep servers node0 to node(S-1) (default: all)", "S" },
    { "algorithm", 0, 0, G_OPTION_ARG_STRING, &alg_name,
      "Algorithm (default: hierarchical-rhd)", "A" },
    { "bytes", 0, 0, G_OPTION_ARG_STRING, &size,
      "Buffer size (default: 1GiB)", "B" },
    { "chunks", 0, 0, G_OPTION_ARG_INT64, &chunks,
      "Pieces that follow each other (default: 8)", "N" },
    { "plain", 0, 0, G_OPTION_ARG_NONE, &plain,
      "Switch the speed-ups off", NULL },
    { "threads", 0, 0, G_OPTION_ARG_INT64, &threads,
      "Threads that share the run's work (default: 1)", "T" },
    G_OPTION_ENTRY_NULL
  };
  g_autoptr (GOptionContext) context = g_option_context_new ("[SCENARIO]");
  g_autoptr (GError) error = NULL;
  uint64_t bytes = (uint64_t) 1 << 30;
  WeftAlgorithm alg = WEFT_ALG_HIER_RHD;

  g_option_context_add_main_entries (context, entries, NULL);
  if (!g_option_context_parse (context, &argc, &argv, &error) || argc > 2
      || (size && !weft_parse_size (size, &bytes, &error))
      || (alg_name && !weft_algorithm_parse (alg_name, &alg)))
    {
      fprintf (stderr, "weft-bench scale: %s\n",
               error ? error->message : "bad algorithm or arguments");
      return 2;
    }
  const char *path = argc == 2 ? argv[1]
                               : scenario_path ("h100-131072-fat-tree.yaml");
  g_autofree char *set_nodes = g_strdup_printf (
      "nodes.0.name=node[0-%" G_GINT64_FORMAT "]", servers - 1);
  g_autofree char *set_ends = g_strdup_printf (
      "fabrics.0.endpoints=node[0-%" G_GINT64_FORMAT "]/nic[0-7]",
      servers - 1);
  const char *sets[] = { set_nodes, set_ends, NULL };

  gint64 t0 = g_get_monotonic_time ();
  g_autoptr (WeftScenario) s = weft_scenario_load_with (
      path, servers > 0 ? sets : NULL, NULL, &error);
  if (s == NULL)
    {
      fprintf (stderr, "%s\n", error->message);
      return 2;
    }
  double load = seconds_since (t0);
  const WeftTopology *topo = s->topo;
  g_autoptr (GArray) gpus = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  for (uint32_t n = 0; n < topo->n_nodes; n++)
    if (topo->nodes[n].kind == WEFT_NODE_GPU)
      g_array_append_val (gpus, n);

  WeftCollectiveParams params = { 1, (uint32_t) MAX (chunks, 1), 0, NULL, 0, NULL, NULL, 0, FALSE, NULL };
  WeftRunOptions options = { WEFT_FIDELITY_FLOW, 1, 0, NULL, plain, 0, 0, NULL,
                             (uint32_t) CLAMP (threads, 1, WEFT_MAX_THREADS), NULL };
  WeftCollectiveResult result;
  t0 = g_get_monotonic_time ();
  if (!weft_collective_run (topo, (uint32_t *) gpus->data, gpus->len,
                            WEFT_OP_ALL_REDUCE, alg, WEFT_PROTOCOL_SIMPLE,
                            bytes, &params, &options, &result, &error))
    {
      fprintf (stderr, "%s\n", error->message);
      return 2;
    }
  double run = seconds_since (t0);
  struct rusage usage;
  getrusage (RUSAGE_SELF, &usage);
  double algbw = bytes / (result.time * 1e-12) / 1e9;
  printf ("scale gpus=%u links=%u algorithm=%s bytes=%" G_GUINT64_FORMAT
          " chunks=%u plain=%d threads=%u load_s=%.2f run_s=%.2f"
          " events=%" G_GUINT64_FORMAT
          " simulated_us=%.2f busbw=%.2f peak_rss_MiB=%.0f\n",
          gpus->len, topo->n_links / 2, weft_algorithm_name (alg), bytes,
          params.chunks, plain, options.threads, load, run, result.events,
          result.time / 1e6,
          algbw * weft_op_bus_factor (WEFT_OP_ALL_REDUCE, gpus->len),
          usage.ru_maxrss / 1024.0);
  return 0;
}

/* Load a trace and replay it, timing each (no database). */
static int
bench_trace (int argc, char **argv)
{
  gint64 chunks = 8, jobs = 1;
  GOptionEntry entries[] = {
    { "chunks", 0, 0, G_OPTION_ARG_INT64, &chunks,
      "Pieces that follow each other in each collective (default: 8)", "N" },
    { "jobs", 0, 0, G_OPTION_ARG_INT64, &jobs,
      "Candidates of auto simulated at once (default: 1)", "N" },
    G_OPTION_ENTRY_NULL
  };
  g_autoptr (GOptionContext) context = g_option_context_new ("TRACE "
                                                             "[SCENARIO]");
  g_autoptr (GError) error = NULL;

  g_option_context_add_main_entries (context, entries, NULL);
  if (!g_option_context_parse (context, &argc, &argv, &error) || argc < 2
      || argc > 3)
    {
      fprintf (stderr, "weft-bench trace: %s\n",
               error ? error->message : "expected TRACE [SCENARIO]");
      return 2;
    }
  const char *path = argc == 3 ? argv[2]
                               : scenario_path ("h100-1024-fat-tree.yaml");
  g_autoptr (WeftScenario) s = weft_scenario_load (path, &error);
  if (s == NULL)
    {
      fprintf (stderr, "%s\n", error->message);
      return 2;
    }
  gint64 t0 = g_get_monotonic_time ();
  g_autoptr (WeftTrace) t = weft_trace_load (argv[1], s->topo, &error);
  if (t == NULL)
    {
      fprintf (stderr, "%s\n", error->message);
      return 2;
    }
  double load = seconds_since (t0);
  WeftTraceOptions options = {
    { WEFT_FIDELITY_FLOW, 1, 0, NULL, FALSE, 0, 0, NULL, 1, NULL },
    { 1, (uint32_t) MAX (chunks, 1), 0, NULL, 1, NULL, NULL, 0, FALSE, NULL },
    WEFT_TRACE_AUTO, WEFT_TRACE_AUTO, NULL, NULL, (int) CLAMP (jobs, 1, 64),
  };
  WeftTraceResult r;
  t0 = g_get_monotonic_time ();
  if (!weft_trace_run (s->topo, t, &options, &r, &error))
    {
      fprintf (stderr, "%s\n", error->message);
      return 2;
    }
  double run = seconds_since (t0);
  struct rusage usage;
  getrusage (RUSAGE_SELF, &usage);
  printf ("trace ops=%u slots=%u ranks=%u chunks=%u jobs=%d load_s=%.2f "
          "run_s=%.2f events=%" G_GUINT64_FORMAT " simulated_us=%.2f "
          "peak_rss_MiB=%.0f\n",
          t->ops->len, t->ranks->len, t->gpus->len, options.params.chunks,
          options.jobs, load, run, r.events, r.time / 1e6,
          usage.ru_maxrss / 1024.0);
  weft_trace_result_clear (&r);
  return 0;
}

/* Check @p on the case of @seed, counting its verdict in @counts; print a
 * failure's reasons to stderr. */
static void
property_case (const FabricProperty *p, uint64_t seed, guint *counts)
{
  g_autoptr (GString) why = g_string_new (NULL);
  FabricVerdict v = p->check (seed, why);

  counts[v]++;
  if (v == FABRIC_FAIL)
    fprintf (stderr, "property '%s' failed: %s\n", p->name, why->str);
}

static int
bench_properties (int argc, char **argv)
{
  gint64 cases = 1000, seed = 1;
  guint64 one = 0;
  g_autofree char *only = NULL, *one_text = NULL;
  GOptionEntry entries[] = {
    { "cases", 0, 0, G_OPTION_ARG_INT64, &cases,
      "Cases of each property (default: 1000)", "N" },
    { "seed", 0, 0, G_OPTION_ARG_INT64, &seed,
      "Seed the cases are drawn under (default: 1)", "S" },
    { "property", 0, 0, G_OPTION_ARG_STRING, &only,
      "Check only this property (default: all)", "NAME" },
    { "case", 0, 0, G_OPTION_ARG_STRING, &one_text,
      "Check the one case of this seed, as a failure names it", "SEED" },
    G_OPTION_ENTRY_NULL
  };
  g_autoptr (GOptionContext) context = g_option_context_new (NULL);
  g_autoptr (GError) error = NULL;
  int failed = 0;

  g_option_context_set_summary (context, "Property tests over random "
                                "fabrics, many cases of each.");
  g_option_context_add_main_entries (context, entries, NULL);
  if (!g_option_context_parse (context, &argc, &argv, &error) || cases < 1
      || seed < 0
      || (one_text && !g_ascii_string_to_unsigned (one_text, 10, 0,
                                                   G_MAXUINT64, &one,
                                                   &error)))
    {
      fprintf (stderr, "weft-bench properties: %s\n",
               error ? error->message : "--cases must be positive");
      return 2;
    }
  gboolean known = only == NULL;
  for (guint p = 0; p < fabric_n_properties; p++)
    known = known || strcmp (only, fabric_properties[p].name) == 0;
  if (!known)
    {
      fprintf (stderr, "weft-bench properties: no property '%s'; they are:",
               only);
      for (guint p = 0; p < fabric_n_properties; p++)
        fprintf (stderr, " %s", fabric_properties[p].name);
      fprintf (stderr, "\n");
      return 2;
    }
  for (guint p = 0; p < fabric_n_properties; p++)
    {
      const FabricProperty *prop = &fabric_properties[p];
      guint counts[3] = { 0 };
      if (only && strcmp (only, prop->name) != 0)
        continue;
      gint64 t0 = g_get_monotonic_time ();
      if (one_text)
        property_case (prop, one, counts);
      for (gint64 i = 0; i < cases && !one_text; i++)
        property_case (prop, fabric_property_seed ((uint64_t) seed, p,
                                                   (guint) i),
                       counts);
      double seconds = seconds_since (t0);
      guint n = counts[0] + counts[1] + counts[2];
      printf ("properties name=%s cases=%u held=%u did_not_qualify=%u "
              "failed=%u seconds=%.2f cases_per_sec=%.1f\n",
              prop->name, n, counts[FABRIC_PASS], counts[FABRIC_SKIP],
              counts[FABRIC_FAIL], seconds, n / seconds);
      failed += counts[FABRIC_FAIL] > 0;
    }
  return failed ? 1 : 0;
}

int
main (int argc, char **argv)
{
  weft_memory_tune ();
  if (argc >= 2 && g_strcmp0 (argv[1], "properties") == 0)
    return bench_properties (argc - 1, argv + 1);
  if (argc >= 2 && g_strcmp0 (argv[1], "trace") == 0)
    return bench_trace (argc - 1, argv + 1);
  if (argc >= 2 && g_strcmp0 (argv[1], "scale") == 0)
    return bench_scale (argc - 1, argv + 1);
  if (argc >= 2 && g_strcmp0 (argv[1], "db") == 0)
    return bench_db (argc - 1, argv + 1);
  if (argc >= 2 && g_strcmp0 (argv[1], "packet") == 0)
    return bench_packet (argc - 1, argv + 1);
  if (argc >= 2 && g_strcmp0 (argv[1], "flow") == 0)
    return bench_flow (argc - 1, argv + 1);
  if (argc >= 2 && g_strcmp0 (argv[1], "versus") == 0)
    return bench_versus (argc - 1, argv + 1);
  if (argc >= 2 && g_strcmp0 (argv[1], "routes") == 0)
    return bench_routes (argc - 1, argv + 1);
  if (argc >= 2 && g_strcmp0 (argv[1], "phold") == 0)
    return bench_phold (argc - 1, argv + 1);
  fprintf (stderr, "Usage: weft-bench BENCHMARK [OPTIONS...]\n\n"
                   "Benchmarks:\n"
                   "  phold   the PHOLD hold model on the event engine\n"
                   "  routes  load, build and route a scenario\n"
                   "  packet  packet-hops per second, all-to-all on NVLink\n"
                   "  flow    flow arrivals and departures per second\n"
                   "  versus  packet against flow on one all-to-all\n"
                   "  db      writing link_util rows to the database\n"
                   "  scale   one all_reduce over thousands of GPUs\n"
                   "  trace   load and replay a trace\n"
                   "  properties  the property tests over many random "
                   "fabrics\n"
                   "\n'weft-bench BENCHMARK --help' lists its options.\n");
  return 2;
}
