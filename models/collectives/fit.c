/* weft: what an algorithm looks at in the fabric before it is built. */
#include "collectives/fit.h"

#include "network/network.h"
#include "union_find.h"

#include <math.h>

void
weft_fit_clear (WeftFit *fit)
{
  g_clear_pointer (&fit->server, g_free);
  g_clear_pointer (&fit->rings, weft_rings_free);
  g_clear_pointer (&fit->parent, g_free);
}

uint32_t
weft_fit_pieces (double hop, double move)
{
  uint32_t best = WEFT_CHUNKS;
  double best_time = G_MAXDOUBLE;

  for (uint32_t pieces = 1; pieces <= WEFT_CHUNKS; pieces++)
    {
      double t = (pieces + 1) * hop + (1 + 1.0 / pieces) * move;
      if (t < best_time)
        {
          best = pieces;
          best_time = t;
        }
    }
  return best;
}

gboolean
weft_fit_ranks_per_server (const WeftTopology *topo, const uint32_t *gpus,
                           uint32_t n, uint32_t *local, GError **error)
{
  uint32_t count = 1;
  gboolean ok = topo->nodes[gpus[0]].zone != WEFT_ZONE_ROOT;
  g_autoptr (GHashTable) seen = g_hash_table_new (g_direct_hash,
                                                  g_direct_equal);

  while (count < n && topo->nodes[gpus[count]].zone == topo->nodes[gpus[0]].zone)
    count++;
  ok = ok && n % count == 0;
  for (uint32_t b = 0; ok && b < n; b += count)
    {
      uint32_t zone = topo->nodes[gpus[b]].zone;
      ok = zone != WEFT_ZONE_ROOT
           && !g_hash_table_contains (seen, GUINT_TO_POINTER (zone + 1));
      g_hash_table_add (seen, GUINT_TO_POINTER (zone + 1));
      for (uint32_t r = b; ok && r < b + count; r++)
        ok = topo->nodes[gpus[r]].zone == zone;
    }
  if (!ok)
    {
      g_set_error (error, WEFT_SCHEDULE_ERROR, WEFT_SCHEDULE_ERROR_UNFIT,
                   "hierarchical needs the ranks server by server (templates "
                   "instantiated at the top level), as many in every server");
      return FALSE;
    }
  *local = count;
  return TRUE;
}

uint32_t *
weft_fit_servers (const WeftTopology *topo, const uint32_t *gpus, uint32_t n)
{
  return weft_fit_servers_network (topo, gpus, n, NULL);
}

uint32_t *
weft_fit_servers_network (const WeftTopology *topo, const uint32_t *gpus,
                          uint32_t n, double *network)
{
  g_autofree uint32_t *parent = g_new (uint32_t, topo->n_nodes);
  uint32_t *server = g_new (uint32_t, MAX (n, 1));

  for (uint32_t v = 0; v < topo->n_nodes; v++)
    parent[v] = v;
  for (uint32_t l = 0; l < topo->n_links; l++)
    {
      const WeftLink *link = &topo->links[l];
      const WeftLinkType *type = g_ptr_array_index (topo->link_types,
                                                    link->type);
      if (type->family != WEFT_FAMILY_NETWORK)
        weft_union (parent, link->src, link->dst);
    }
  for (uint32_t r = 0; r < n; r++)
    server[r] = weft_find_root (parent, gpus[r]);
  if (network == NULL)
    return server;

  /* Each node's network links out, and a NIC's links on its host side,
   * which the network's traffic crosses first: a NIC carries the smaller
   * of the two. */
  g_autofree double *net = g_new0 (double, topo->n_nodes);
  g_autofree double *host = g_new0 (double, topo->n_nodes);
  for (uint32_t l = 0; l < topo->n_links; l++)
    {
      const WeftLink *link = &topo->links[l];
      const WeftLinkType *type = g_ptr_array_index (topo->link_types,
                                                    link->type);
      if (type->family == WEFT_FAMILY_NETWORK)
        net[link->src] += weft_link_nccl_rate (topo, link);
      else
        host[link->src] += weft_link_nccl_rate (topo, link);
    }
  /* By server (its root): the network's rate out of it, its GPUs, and its
   * ranks. */
  g_autofree double *out = g_new0 (double, topo->n_nodes);
  g_autofree uint32_t *gpus_of = g_new0 (uint32_t, topo->n_nodes);
  g_autofree uint32_t *ranks_of = g_new0 (uint32_t, topo->n_nodes);
  for (uint32_t v = 0; v < topo->n_nodes; v++)
    if (net[v] > 0)
      out[weft_find_root (parent, v)]
          += topo->nodes[v].kind == WEFT_NODE_NIC ? MIN (net[v], host[v])
                                                  : net[v];
  for (uint32_t v = 0; v < topo->n_nodes; v++)
    if (topo->nodes[v].kind == WEFT_NODE_GPU)
      gpus_of[weft_find_root (parent, v)]++;
  for (uint32_t r = 0; r < n; r++)
    ranks_of[server[r]]++;
  for (uint32_t r = 0; r < n; r++)
    network[r] = out[server[r]] * ranks_of[server[r]]
                 / MAX (gpus_of[server[r]], 1);
  return server;
}

gboolean
weft_fit_switches (const WeftTopology *topo, const uint32_t *gpus, uint32_t n,
                   GArray *nodes, GArray *shares, GError **error)
{
  guint before = nodes->len;
  uint32_t apart = WEFT_NONE;   /* a rank joined to none of rank 0's */

  for (uint32_t i = topo->out_start[gpus[0]]; i < topo->out_start[gpus[0] + 1];
       i++)
    {
      const WeftLink *l = &topo->links[topo->out_links[i]];
      const WeftNode *sw = &topo->nodes[l->dst];
      if (sw->kind != WEFT_NODE_SWITCH || sw->device->reduce_bandwidth <= 0)
        continue;
      gboolean everyone = TRUE;
      for (uint32_t r = 1; r < n && everyone; r++)
        {
          gboolean joined = FALSE;
          for (uint32_t k = topo->out_start[gpus[r]];
               k < topo->out_start[gpus[r] + 1] && !joined; k++)
            joined = topo->links[topo->out_links[k]].dst == l->dst;
          everyone = joined;
          if (!joined)
            apart = r;
        }
      if (!everyone)
        continue;
      double lanes = l->lanes;
      g_array_append_val (nodes, l->dst);
      g_array_append_val (shares, lanes);
    }
  if (nodes->len > before)
    return TRUE;
  if (apart != WEFT_NONE)
    g_set_error (error, WEFT_SCHEDULE_ERROR, WEFT_SCHEDULE_ERROR_UNFIT,
                 "the fabric cannot run nvls: it needs switches that reduce "
                 "joined to every rank's GPU, and '%s' is joined to none of "
                 "those of '%s' (NVLS runs inside one NVLink domain; "
                 "nvls-tree joins several across the network)",
                 topo->nodes[gpus[apart]].name, topo->nodes[gpus[0]].name);
  else
    g_set_error (error, WEFT_SCHEDULE_ERROR, WEFT_SCHEDULE_ERROR_UNFIT,
                 "the fabric cannot run nvls: it needs switches that reduce "
                 "(reduce_bandwidth above 0) joined to every rank's GPU, and "
                 "'%s' is joined to none", topo->nodes[gpus[0]].name);
  return FALSE;
}

/* Bandwidth of @a's links to @b, all lanes, as they run. */
static double
bandwidth_to (const WeftTopology *topo, uint32_t a, uint32_t b)
{
  double sum = 0;

  for (uint32_t i = topo->out_start[a]; i < topo->out_start[a + 1]; i++)
    {
      const WeftLink *l = &topo->links[topo->out_links[i]];
      if (l->dst == b && l->share > 0)
        sum += l->bandwidth;
    }
  return sum;
}

gboolean
weft_fit_planes (const WeftTopology *topo, const uint32_t *gpus, uint32_t n,
                 const uint32_t *sw, const double *lanes, uint32_t m)
{
  double unit = 0;

  if (m < 2)
    return FALSE;
  /* Each chip's engine reduces its share at the chip's own rate: shares of
   * other sizes would end at other times, which one place cannot. */
  for (uint32_t j = 1; j < m; j++)
    if (lanes[j] != lanes[0])
      return FALSE;
  for (uint32_t r = 0; r < n; r++)
    for (uint32_t j = 0; j < m; j++)
      for (int way = 0; way < 2; way++)
        {
          double per = (way ? bandwidth_to (topo, sw[j], gpus[r])
                             : bandwidth_to (topo, gpus[r], sw[j]))
                       / lanes[j];
          if (unit == 0)
            unit = per;
          if (!(per > 0) || fabs (per - unit) > 1e-9 * unit)
            return FALSE;
        }
  return TRUE;
}

uint32_t
weft_fit_add_planes (WeftFit *fit, const uint32_t *sw, const double *lanes,
                     uint32_t m)
{
  uint32_t at = fit->planes->len;

  g_array_append_val (fit->planes, m);
  for (uint32_t j = 0; j < m; j++)
    {
      uint32_t weight = (uint32_t) lanes[j];
      g_array_append_val (fit->planes, sw[j]);
      g_array_append_val (fit->planes, weight);
    }
  return WEFT_PLANES | at;
}

void
weft_fit_place_planes (WeftFit *fit)
{
  if (fit->planes == NULL || fit->planes->len == 0)
    return;
  uint32_t base = fit->nodes->len;
  for (uint32_t i = fit->n; i < base; i++)
    {
      uint32_t *place = &g_array_index (fit->nodes, uint32_t, i);
      if (weft_place_is_planes (*place))
        *place += base;
    }
  g_array_append_vals (fit->nodes, fit->planes->data, fit->planes->len);
  g_array_set_size (fit->planes, 0);
}
