/* The network suites' shared ground: scenarios from text, transfers as
 * jobs run to their end. */
#include "network_jobs.h"

#include <glib/gstdio.h>

WeftScenario *
load_text (const char *text)
{
  g_autofree char *dir = g_dir_make_tmp ("weft-net-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "s.yaml", NULL);
  g_autoptr (GError) error = NULL;

  ck_assert (g_file_set_contents (path, text, -1, NULL));
  WeftScenario *s = weft_scenario_load (path, &error);
  g_remove (path);
  g_rmdir (dir);
  ck_assert_msg (s != NULL, "%s", error ? error->message : "");
  return s;
}

uint32_t
node (const WeftTopology *topo, const char *name)
{
  uint32_t id = weft_topology_find_node (topo, name);

  ck_assert_msg (id != WEFT_NONE, "no node %s", name);
  return id;
}

void
job_done (WeftSim *sim, void *target, void *data)
{
  Job *job = target;
  (void) data;

  job->done = weft_sim_now (sim);
}

WeftNetwork *
run (WeftSim *sim, const WeftTopology *topo, WeftFidelity fidelity, Job *jobs,
     guint n)
{
  WeftNetworkConfig config = { fidelity, WEFT_US, 0, 0 };
  WeftNetwork *net = weft_network_new (sim, topo, &config);

  for (guint i = 0; i < n; i++)
    {
      jobs[i].done = WEFT_TIME_MAX;
      weft_network_transfer (net, jobs[i].src, jobs[i].dst, jobs[i].bytes,
                             jobs[i].cap, job_done, &jobs[i], NULL);
    }
  weft_sim_run (sim);
  weft_network_flush_stats (net);
  for (guint i = 0; i < n; i++)
    ck_assert_msg (jobs[i].done != WEFT_TIME_MAX, "job %u never finished", i);
  ck_assert_uint_eq (net->started, net->finished);
  return net;
}

static void
sum_bin (uint32_t bin, uint64_t bytes, void *user_data)
{
  (void) bin;
  *(uint64_t *) user_data += bytes;
}

void
check_link_bins (const WeftNetwork *net)
{
  for (uint32_t l = 0; l < net->topo->n_links; l++)
    {
      uint64_t sum = 0;
      weft_link_stats_bins (net->stats, l, sum_bin, &sum);
      ck_assert_uint_eq (sum, net->stats->links[l].bytes);
    }
}

void
start_job (WeftSim *sim, void *target, void *data)
{
  Start *st = target;
  (void) sim;
  (void) data;

  weft_network_transfer (st->net, st->job->src, st->job->dst,
                         st->job->bytes, st->job->cap, job_done, st->job,
                         NULL);
}

void
run_at (const WeftTopology *topo, WeftScan scan, uint32_t plain, Job *jobs,
        const WeftTime *at, guint n)
{
  WeftNetworkConfig config = { WEFT_FIDELITY_FLOW, WEFT_US, 0, 0 };
  g_autoptr (WeftSim) sim = weft_sim_new ();
  g_autoptr (WeftNetwork) net = weft_network_new (sim, topo, &config);
  g_autofree Start *starts = g_new (Start, n);

  weft_network_set_scan (net, scan);
  weft_network_set_plain (net, plain);
  for (guint i = 0; i < n; i++)
    {
      starts[i] = (Start) { net, &jobs[i] };
      weft_sim_schedule_at (sim, at[i], start_job, &starts[i], NULL);
    }
  weft_sim_run (sim);
  ck_assert_uint_eq (net->finished, n);
}

WeftScenario *
load_hosts (int hosts, uint32_t *ids)
{
  g_autofree char *text = g_strdup_printf (
      HOSTS_TYPES
      "nodes: [{name: 'h[0-%d]', device: h}]\n"
      "fabrics: [{kind: star, name: sw, nodes: 'h[0-%d]', switch: s, "
      "link: l}]\n",
      hosts, hosts - 1, hosts - 1);
  WeftScenario *s = load_text (text);

  for (int i = 0; i < hosts; i++)
    {
      g_autofree char *name = g_strdup_printf ("h%d", i);
      ids[i] = node (s->topo, name);
    }
  return s;
}

