/* weft: the `weft topo` command. */
#include "cli.h"
#include "files.h"
#include "topology/hardware.h"
#include "topology/route_engine.h"
#include "topology/routing.h"
#include "topology/scenario.h"
#include "topology/tiers.h"
#include "topology/topo_stats.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* What `weft topo` is asked to summarise. */
typedef struct {
  char *dot;                    /* a Graphviz file to write, or NULL */
  char **sets;                  /* --set KEY=VALUE overrides, or NULL */
  char **faults;                /* --fault's, or NULL */
  gint64 exact;                 /* GPUs up to which the diameter is exact */
  gboolean force;               /* replace a --dot file weft did not write */
  char *path;                   /* the scenario: as given, or found in
                                   weft's data folder */
  char *route[2];               /* --route SRC DST: the nodes, or NULL */
  char *route_text;             /* --route=X as GOption read it (refused) */
  gint64 flow;                  /* --flow: whose route */
} TopoArgs;

static void
topo_args_clear (TopoArgs *args)
{
  g_free (args->dot);
  g_strfreev (args->sets);
  g_strfreev (args->faults);
  g_free (args->path);
  g_free (args->route[0]);
  g_free (args->route[1]);
  g_free (args->route_text);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (TopoArgs, topo_args_clear)

/* Fill @args from `weft topo`'s @argv (argv[0] is "topo").  Returns
 * WEFT_EXIT_OK, or WEFT_EXIT_USAGE once it has said what is wrong; --help
 * exits.  --route takes two values, which GOption cannot: it is taken out
 * of @argv first (its entry below is for the help). */
static int
parse_options (int argc, char **argv, TopoArgs *args)
{
  g_autofree char **rest = g_new0 (char *, argc + 1);
  int n = 0;

  for (int i = 0; i < argc; i++)
    {
      if (strcmp (argv[i], "--route") != 0)
        {
          rest[n++] = argv[i];
          continue;
        }
      if (i + 2 >= argc || args->route[0] != NULL)
        return weft_cli_usage ("topo", "--route takes two nodes, once: "
                               "--route SRC DST");
      args->route[0] = g_strdup (argv[++i]);
      args->route[1] = g_strdup (argv[++i]);
    }
  argc = n;
  argv = rest;

  GOptionEntry entries[] = {
    { "dot", 0, 0, G_OPTION_ARG_FILENAME, &args->dot,
      "Also write the topology as a Graphviz graph to FILE (default: none)",
      "FILE" },
    { "set", 0, 0, G_OPTION_ARG_STRING_ARRAY, &args->sets,
      "Override a value of the scenario, such as fabrics.0.levels=3; may be "
      "repeated (default: none)", "KEY=VALUE" },
    { "fault", 0, 0, G_OPTION_ARG_STRING_ARRAY, &args->faults,
      "Take a link, switch or NIC down, or run it slow: NODES, or A B for "
      "the links between them, then a speed such as 50% to run them at that "
      "share instead, or GPUS compute 50% for a straggler; for a while with "
      "from T, until T (docs/faults.md); may be repeated (default: none)",
      "FAULT" },
    { "exact-diameter", 0, 0, G_OPTION_ARG_INT64, &args->exact,
      "Compute the diameter exactly up to N GPUs (default: 4096)", "N" },
    { "force", 0, 0, G_OPTION_ARG_NONE, &args->force,
      "Replace the --dot file even if weft did not write it (default: "
      "only weft's own)", NULL },
    { "route", 0, 0, G_OPTION_ARG_STRING, &args->route_text,
      "Print the route a flow from node SRC to node DST takes, hop by hop, "
      "instead of the summary (default: none)", "SRC DST" },
    { "flow", 0, 0, G_OPTION_ARG_INT64, &args->flow,
      "With --route, the flow whose route to print: routes hashed by flow "
      "(ecmp, and inside servers) differ from flow to flow (default: 0)",
      "N" },
    G_OPTION_ENTRY_NULL
  };
  g_autoptr (GOptionContext) context = g_option_context_new ("SCENARIO");

  g_option_context_set_description (context, "Examples:\n  weft topo scenarios/dgx-h100.yaml\n  weft topo --dot h100.dot scenarios/h100-256-rail.yaml\n  weft topo scenarios/h100-256-rail.yaml --set fabrics.0.oversubscription=2:1\n  weft topo scenarios/h100-256-fat-tree.yaml --route node5/gpu3 node9/gpu3");
  g_option_context_set_summary (
      context, "Check a scenario and summarise its topology: nodes by kind, "
               "links by type,\nper-GPU injection bandwidth, bisection "
               "bandwidth, diameter, and its tiers\n(GPU-switch, GPU-NIC, "
               "leaf, spine, core) with their bandwidth and\n"
               "oversubscription.");
  g_option_context_add_main_entries (context, entries, NULL);
  if (!weft_cli_parse (context, "topo", &argc, &argv))
    return WEFT_EXIT_USAGE;
  if (argc != 2)
    return weft_cli_usage ("topo", "expected one scenario file");
  if (args->exact < 0)
    return weft_cli_usage ("topo", "--exact-diameter must not be negative");
  if (args->route_text != NULL)
    return weft_cli_usage ("topo", "--route takes two nodes: --route SRC "
                           "DST");
  if (args->flow < 0)
    return weft_cli_usage ("topo", "--flow must not be negative");
  args->path = weft_data_find (argv[1]);
  return WEFT_EXIT_OK;
}

/* The latency @node adds to traffic through it, as the network counts it:
 * a switch's or NIC's. */
static WeftTime
through (const WeftTopology *topo, uint32_t node)
{
  const WeftNode *n = &topo->nodes[node];

  return n->kind == WEFT_NODE_SWITCH || n->kind == WEFT_NODE_NIC
             ? n->device->latency
             : 0;
}

/* Print the route of flow @flow from node @src to node @dst of @topo, hop
 * by hop: each link with its type, lanes and rate, and where a fabric's
 * switch chose among equal-cost next hops, how many and by which engine.
 * Returns the exit status: bad node names are bad input. */
static int
print_route (const WeftTopology *topo, const char *src_name,
             const char *dst_name, uint64_t flow)
{
  uint32_t src = weft_topology_find_node (topo, src_name);
  uint32_t dst = weft_topology_find_node (topo, dst_name);

  if (src == WEFT_NONE || dst == WEFT_NONE)
    return weft_cli_usage ("topo", "--route: no node named '%s' in the "
                           "scenario (names are full: node3/gpu0)",
                           src == WEFT_NONE ? src_name : dst_name);
  g_autoptr (WeftRouting) routing = weft_routing_new (topo);
  g_autoptr (GArray) path = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  g_autoptr (GArray) first = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  if (!weft_routing_path (routing, src, dst, flow, path))
    {
      fprintf (stderr, "weft topo: no route from %s to %s\n", src_name,
               dst_name);
      return WEFT_EXIT_USAGE;
    }
  weft_routing_first_hops (routing, src, dst, first);

  WeftTime latency = 0;
  for (guint i = 0; i < path->len; i++)
    {
      const WeftLink *l = &topo->links[g_array_index (path, uint32_t, i)];
      latency += l->latency + (i + 1 < path->len ? through (topo, l->dst) : 0);
    }
  printf ("route of flow %" PRIu64 " from %s to %s: %u links, cost %" PRIu64
          ", latency %.3f us\n", flow, src_name, dst_name, path->len,
          weft_routing_cost (routing, src, dst), (double) latency / 1e6);
  if (first->len > 1)
    printf ("(a transfer is striped over the %u equal-cost links out of %s, "
            "each stripe routed on from there; this is flow %" PRIu64
            "'s)\n", first->len, src_name, flow);
  for (guint i = 0; i < path->len; i++)
    {
      uint32_t id = g_array_index (path, uint32_t, i);
      const WeftLink *l = &topo->links[id];
      const WeftLinkType *type = g_ptr_array_index (topo->link_types,
                                                    l->type);
      g_autofree char *hop = g_strdup_printf ("%s -> %s",
                                              topo->nodes[l->src].name,
                                              topo->nodes[l->dst].name);
      g_autofree char *how = NULL;
      /* A fabric's switch forwarding to another: the switches as good as
       * the one taken, among which its engine chose. */
      const WeftNode *at = &topo->nodes[l->src];
      if (at->zone == WEFT_ZONE_ROOT && at->kind == WEFT_NODE_SWITCH
          && topo->nodes[l->dst].zone == WEFT_ZONE_ROOT)
        {
          uint64_t rest = weft_routing_cost (routing, l->dst, dst);
          uint32_t equal = 0;
          for (uint32_t k = topo->out_start[l->src];
               k < topo->out_start[l->src + 1]; k++)
            {
              const WeftLink *o = &topo->links[topo->out_links[k]];
              if (topo->nodes[o->dst].zone != WEFT_ZONE_ROOT)
                continue;
              uint64_t c = weft_routing_cost (routing, o->dst, dst);
              equal += c != WEFT_ROUTE_UNREACHABLE
                       && (uint64_t) o->cost + c == (uint64_t) l->cost + rest;
            }
          if (equal > 1)
            how = g_strdup_printf ("one of %u, by %s", equal,
                                   weft_route_engine_class (at->routing)
                                       ->name);
        }
      printf ("%4u  %-40s %-12s %3u x %7.2f GB/s%s%s\n", i + 1, hop,
              type->name, l->lanes, l->bandwidth / l->lanes / 1e9,
              how ? "  " : "", how ? how : "");
    }
  return WEFT_EXIT_OK;
}

/* `weft topo`: read the options, load the scenario, summarise it or print
 * a route.  Returns the exit status. */
int
weft_cmd_topo (int argc, char **argv)
{
  g_auto (TopoArgs) args = { .exact = 4096 };
  g_autoptr (GError) error = NULL;
  int status;

  if ((status = parse_options (argc, argv, &args)) != WEFT_EXIT_OK)
    return status;
  g_autoptr (WeftScenario) scenario = weft_scenario_load_with (
      args.path, (const char *const *) args.sets,
      (const char *const *) args.faults, &error);
  if (scenario == NULL)
    {
      fprintf (stderr, "%s\n", error->message);
      return WEFT_EXIT_USAGE;
    }
  if (args.route[0] != NULL)
    return print_route (scenario->topo, args.route[0], args.route[1],
                        (uint64_t) args.flow);
  /* Checked before the figures, which take long on large fabrics. */
  if (args.dot != NULL
      && !weft_file_may_write (args.dot, (const char *const *) scenario->files,
                               WEFT_TOPO_DOT_MARK, args.force, &error))
    {
      fprintf (stderr, "weft topo: %s\n", error->message);
      return WEFT_EXIT_USAGE;
    }
  WeftTopoStats stats;
  weft_topo_stats (scenario->topo, (uint32_t) MIN (args.exact, G_MAXUINT32),
                   &stats);
  printf ("scenario: %s\n", args.path);
  weft_topo_print (stdout, scenario->topo, &stats);
  g_autoptr (WeftTiers) tiers = weft_tiers_new (scenario->topo);
  weft_tiers_print (stdout, tiers);
  g_autofree char *incomplete = NULL;
  /* A tree: endpoints' links climb into switches (not a ring or torus of
   * hosts joined directly). */
  gboolean network = FALSE;
  const WeftTopology *topo = scenario->topo;
  for (uint32_t l = 0; l < topo->n_links && !network; l++)
    network = tiers->up[l]
              && strcmp (tiers->tiers[tiers->of_link[l]].name, "leaf") == 0
              && topo->nodes[topo->links[l].dst].kind == WEFT_NODE_SWITCH;
  if (network && weft_tiers_complete (topo, tiers, &incomplete))
    printf ("the network is a complete tree: in each tier every switch has "
            "as much bandwidth\n  down and up as the others, where "
            "destination routing keeps a shift's flows apart\n");
  else if (network)
    printf ("the network is not a complete tree: %s;\n  destination routing "
            "may send two of a shift's flows over one link "
            "(docs/network-models.md)\n", incomplete);
  if (args.dot != NULL && !weft_topo_write_dot (scenario->topo, args.dot,
                                                &error))
    {
      fprintf (stderr, "weft topo: %s\n", error->message);
      return WEFT_EXIT_USAGE;
    }
  return WEFT_EXIT_OK;
}
