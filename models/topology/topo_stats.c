/* weft: topology summaries. */
#include "topology/topo_stats.h"
#include "topology/faults.h"
#include "files.h"
#include "units.h"

#include <errno.h>
#include <math.h>
#include <string.h>

/* ---- maximum flow (Dinic) for the bisection ---- */

typedef struct {
  uint32_t to;
  uint32_t rev;                 /* the arc that undoes this one */
  double cap;                   /* residual, B/s */
} Arc;

typedef struct {
  uint32_t n;
  uint32_t *start;
  Arc *arcs;
  uint32_t *level;
  uint32_t *next;               /* per node, the next arc to try */
  uint32_t *queue;
} Flow;

static double
augment (Flow *f, uint32_t source, uint32_t sink, double limit)
{
  /* Iterative DFS along level-increasing arcs; returns the flow pushed. */
  g_autofree uint32_t *stack = g_new (uint32_t, f->n);
  g_autofree uint32_t *via = g_new (uint32_t, f->n);
  double pushed_total = 0;

  for (;;)
    {
      uint32_t depth = 0, x = source;
      stack[0] = source;
      while (x != sink)
        {
          uint32_t *a = &f->next[x];
          while (*a < f->start[x + 1]
                 && (f->arcs[*a].cap <= 1e-9
                     || f->level[f->arcs[*a].to] != f->level[x] + 1))
            (*a)++;
          if (*a == f->start[x + 1])
            {
              if (depth == 0)
                return pushed_total;
              f->level[x] = UINT32_MAX;           /* dead end */
              x = stack[--depth];
              f->next[x]++;
              continue;
            }
          via[depth] = *a;
          x = f->arcs[*a].to;
          stack[++depth] = x;
        }
      double push = limit - pushed_total;
      for (uint32_t d = 0; d < depth; d++)
        push = MIN (push, f->arcs[via[d]].cap);
      for (uint32_t d = 0; d < depth; d++)
        {
          f->arcs[via[d]].cap -= push;
          f->arcs[f->arcs[via[d]].rev].cap += push;
        }
      pushed_total += push;
      if (pushed_total >= limit)
        return pushed_total;
    }
}

double
weft_topo_bisection (const WeftTopology *topo)
{
  uint32_t n_gpus = weft_topology_count (topo, WEFT_NODE_GPU);
  if (n_gpus < 2)
    return 0;

  Flow f = { 0 };
  uint32_t source = topo->n_nodes, sink = topo->n_nodes + 1;
  uint32_t n_arcs = topo->n_links + 2 * n_gpus;
  f.n = topo->n_nodes + 2;
  f.start = g_new0 (uint32_t, f.n + 1);
  f.arcs = g_new (Arc, n_arcs);
  f.level = g_new (uint32_t, f.n);
  f.next = g_new (uint32_t, f.n);
  f.queue = g_new (uint32_t, f.n);

  /* Arc list: each cable's two directions undo each other (an undirected
   * edge of capacity c each way); GPUs of the first half hang from the
   * source, those of the second half from the sink, without limit. */
  g_autofree uint32_t *tail = g_new (uint32_t, n_arcs);
  uint32_t a = 0, seen = 0;
  for (uint32_t l = 0; l < topo->n_links; l++, a++)
    {
      tail[a] = topo->links[l].src;
      f.arcs[a] = (Arc) { topo->links[l].dst, l ^ 1, topo->links[l].bandwidth };
    }
  for (uint32_t n = 0; n < topo->n_nodes; n++)
    if (topo->nodes[n].kind == WEFT_NODE_GPU)
      {
        gboolean first = seen++ < n_gpus / 2;
        uint32_t from = first ? source : n, to = first ? n : sink;
        tail[a] = from;
        f.arcs[a] = (Arc) { to, a + 1, INFINITY };
        tail[a + 1] = to;
        f.arcs[a + 1] = (Arc) { from, a, 0 };
        a += 2;
      }

  /* Sort arcs by tail (counting sort), keeping rev pointers right. */
  for (uint32_t i = 0; i < n_arcs; i++)
    f.start[tail[i] + 1]++;
  for (uint32_t x = 0; x < f.n; x++)
    f.start[x + 1] += f.start[x];
  g_autofree uint32_t *fill = g_memdup2 (f.start, f.n * sizeof (uint32_t));
  g_autofree uint32_t *pos = g_new (uint32_t, n_arcs);
  for (uint32_t i = 0; i < n_arcs; i++)
    pos[i] = fill[tail[i]]++;
  Arc *sorted = g_new (Arc, n_arcs);
  for (uint32_t i = 0; i < n_arcs; i++)
    {
      sorted[pos[i]] = f.arcs[i];
      sorted[pos[i]].rev = pos[f.arcs[i].rev];
    }
  g_free (f.arcs);
  f.arcs = sorted;

  double total = 0;
  for (;;)
    {
      /* Levels by breadth-first search over arcs with room. */
      uint32_t head = 0, tail_q = 0;
      for (uint32_t x = 0; x < f.n; x++)
        f.level[x] = UINT32_MAX;
      f.level[source] = 0;
      f.queue[tail_q++] = source;
      while (head < tail_q)
        {
          uint32_t x = f.queue[head++];
          for (uint32_t i = f.start[x]; i < f.start[x + 1]; i++)
            if (f.arcs[i].cap > 1e-9 && f.level[f.arcs[i].to] == UINT32_MAX)
              {
                f.level[f.arcs[i].to] = f.level[x] + 1;
                f.queue[tail_q++] = f.arcs[i].to;
              }
        }
      if (f.level[sink] == UINT32_MAX)
        break;
      memcpy (f.next, f.start, f.n * sizeof (uint32_t));
      double pushed = augment (&f, source, sink, INFINITY);
      if (pushed <= 0)
        break;
      total += pushed;
    }

  g_free (f.start);
  g_free (f.arcs);
  g_free (f.level);
  g_free (f.next);
  g_free (f.queue);
  return total;
}

/* ---- diameter ---- */

/* Hops from @from to every node; returns the farthest GPU and its hops. */
static uint32_t
bfs (const WeftTopology *topo, uint32_t from, uint32_t *dist, uint32_t *queue,
     uint32_t *farthest_gpu)
{
  uint32_t head = 0, tail = 0, far = 0;

  for (uint32_t n = 0; n < topo->n_nodes; n++)
    dist[n] = UINT32_MAX;
  dist[from] = 0;
  queue[tail++] = from;
  *farthest_gpu = from;
  while (head < tail)
    {
      uint32_t x = queue[head++];
      if (topo->nodes[x].kind == WEFT_NODE_GPU && dist[x] > far)
        {
          far = dist[x];
          *farthest_gpu = x;
        }
      for (uint32_t i = topo->out_start[x]; i < topo->out_start[x + 1]; i++)
        {
          uint32_t y = topo->links[topo->out_links[i]].dst;
          if (dist[y] == UINT32_MAX)
            {
              dist[y] = dist[x] + 1;
              queue[tail++] = y;
            }
        }
    }
  return far;
}

static uint32_t
diameter (const WeftTopology *topo, uint32_t exact_gpus, gboolean *exact)
{
  uint32_t n_gpus = weft_topology_count (topo, WEFT_NODE_GPU);
  g_autofree uint32_t *dist = g_new (uint32_t, MAX (topo->n_nodes, 1));
  g_autofree uint32_t *queue = g_new (uint32_t, MAX (topo->n_nodes, 1));
  uint32_t best = 0, far;

  *exact = n_gpus <= exact_gpus;
  if (n_gpus < 2)
    return 0;
  if (*exact)
    {
      for (uint32_t n = 0; n < topo->n_nodes; n++)
        if (topo->nodes[n].kind == WEFT_NODE_GPU)
          best = MAX (best, bfs (topo, n, dist, queue, &far));
      return best;
    }
  /* Two sweeps from the first GPU: a lower bound, exact on trees. */
  uint32_t start = 0;
  while (topo->nodes[start].kind != WEFT_NODE_GPU)
    start++;
  for (int sweep = 0; sweep < 4; sweep++)
    {
      best = MAX (best, bfs (topo, start, dist, queue, &far));
      start = far;
    }
  return best;
}

/* ---- injection ---- */

static void
injection (const WeftTopology *topo, WeftTopoStats *s)
{
  /* Network bandwidth of the NICs of each zone (the root is one more). */
  uint32_t nz = topo->n_zones + 1;
  g_autofree double *net = g_new0 (double, nz);
  g_autofree uint32_t *gpus = g_new0 (uint32_t, nz);

  for (uint32_t l = 0; l < topo->n_links; l++)
    {
      const WeftLink *link = &topo->links[l];
      const WeftLinkType *t = g_ptr_array_index (topo->link_types, link->type);
      const WeftNode *src = &topo->nodes[link->src];
      if (src->kind == WEFT_NODE_NIC && t->family == WEFT_FAMILY_NETWORK)
        net[src->zone == WEFT_ZONE_ROOT ? topo->n_zones : src->zone]
            += link->bandwidth;
    }
  for (uint32_t n = 0; n < topo->n_nodes; n++)
    if (topo->nodes[n].kind == WEFT_NODE_GPU)
      gpus[topo->nodes[n].zone == WEFT_ZONE_ROOT ? topo->n_zones
                                                 : topo->nodes[n].zone]++;

  s->nvlink_min = s->network_min = INFINITY;
  s->nvlink_max = s->network_max = 0;
  for (uint32_t n = 0; n < topo->n_nodes; n++)
    {
      const WeftNode *node = &topo->nodes[n];
      if (node->kind != WEFT_NODE_GPU)
        continue;
      double nv = 0;
      for (uint32_t i = topo->out_start[n]; i < topo->out_start[n + 1]; i++)
        {
          const WeftLink *link = &topo->links[topo->out_links[i]];
          const WeftLinkType *t = g_ptr_array_index (topo->link_types,
                                                     link->type);
          if (t->family == WEFT_FAMILY_NVLINK)
            nv += link->bandwidth;
        }
      uint32_t z = node->zone == WEFT_ZONE_ROOT ? topo->n_zones : node->zone;
      double nw = net[z] / gpus[z];
      s->nvlink_min = MIN (s->nvlink_min, nv);
      s->nvlink_max = MAX (s->nvlink_max, nv);
      s->network_min = MIN (s->network_min, nw);
      s->network_max = MAX (s->network_max, nw);
    }
  if (isinf (s->nvlink_min))
    s->nvlink_min = s->network_min = 0;
}

void
weft_topo_stats (const WeftTopology *topo, uint32_t exact_gpus,
                 WeftTopoStats *s)
{
  memset (s, 0, sizeof *s);
  for (uint32_t n = 0; n < topo->n_nodes; n++)
    s->by_kind[topo->nodes[n].kind]++;
  injection (topo, s);
  s->bisection = weft_topo_bisection (topo);
  s->diameter = diameter (topo, exact_gpus, &s->diameter_exact);
}

static void
print_range (FILE *out, const char *what, double lo, double hi)
{
  if (fabs (hi - lo) <= 1e-6 * hi)
    fprintf (out, "  %-8s %.1f GB/s\n", what, hi / 1e9);
  else
    fprintf (out, "  %-8s %.1f to %.1f GB/s\n", what, lo / 1e9, hi / 1e9);
}

void
weft_topo_print (FILE *out, const WeftTopology *topo, const WeftTopoStats *s)
{
  fprintf (out, "nodes: %u", topo->n_nodes);
  for (int k = 0; k < WEFT_NODE_KIND_COUNT; k++)
    fprintf (out, "%s%s %u", k ? ", " : " (", weft_node_kind_name (k),
             s->by_kind[k]);
  fprintf (out, ")\n");

  guint nt = topo->link_types->len;
  g_autofree uint64_t *cables = g_new0 (uint64_t, MAX (nt, 1));
  g_autofree uint64_t *lanes = g_new0 (uint64_t, MAX (nt, 1));
  for (uint32_t l = 0; l < topo->n_links; l += 2)
    {
      cables[topo->links[l].type]++;
      lanes[topo->links[l].type] += topo->links[l].lanes;
    }
  fprintf (out, "links: %u, each full duplex\n", topo->n_links / 2);
  for (guint t = 0; t < nt; t++)
    if (cables[t] > 0)
      {
        const WeftLinkType *type = g_ptr_array_index (topo->link_types, t);
        fprintf (out, "  %-16s %8" G_GUINT64_FORMAT " links %8" G_GUINT64_FORMAT
                 " lanes  %7.2f GB/s per lane, one way (%.2f on the wire)\n",
                 type->name, cables[t], lanes[t],
                 weft_link_type_effective (type) / 1e9, type->bandwidth / 1e9);
      }
  for (guint f = 0; f < topo->faults->len; f++)
    {
      const WeftFault *fault = g_ptr_array_index (topo->faults, f);
      if (f == 0)
        fprintf (out, "faults (the figures below are with %s):\n",
                 topo->phases ? "those that hold at the start" : "them");
      fprintf (out, "  %-32s", fault->what);
      if (fault->gpus)
        fprintf (out, " %u GPU%s computing at %g%%%s", fault->gpus,
                 fault->gpus == 1 ? "" : "s", 100 * fault->compute,
                 fault->links ? ";" : "");
      if (fault->links)
        fprintf (out, " %u link%s %s", fault->links,
                 fault->links == 1 ? "" : "s", fault->share > 0 ? "at" : "down");
      if (fault->links && fault->share > 0)
        fprintf (out, " %g%% of the bandwidth", 100 * fault->share);
      if (fault->from > 0)
        {
          g_autofree char *t = weft_format_time (fault->from);
          fprintf (out, " from %s", t);
        }
      if (fault->until != WEFT_FOREVER)
        {
          g_autofree char *t = weft_format_time (fault->until);
          fprintf (out, " until %s", t);
        }
      fprintf (out, "\n");
    }
  /* A phase that cuts GPUs apart fails any run that needs them then. */
  for (guint i = 0; topo->phases && i < topo->phases->len; i++)
    {
      const WeftTopoPhase *p = &g_array_index (topo->phases, WeftTopoPhase, i);
      g_autofree uint32_t *parent = g_new (uint32_t, MAX (topo->n_nodes, 1));
      uint32_t a, b;
      if (weft_topology_gpus_joined (p->topo, parent, &a, &b))
        continue;
      g_autofree char *t = weft_format_time (p->at);
      fprintf (out, "  from %s GPUs %s and %s have no path of links that are "
               "up between them: a run that needs one then fails\n", t,
               topo->nodes[a].name, topo->nodes[b].name);
    }
  fprintf (out, "per-GPU injection bandwidth, one way:\n");
  print_range (out, "NVLink", s->nvlink_min, s->nvlink_max);
  print_range (out, "network", s->network_min, s->network_max);
  fprintf (out, "bisection bandwidth: %.1f GB/s one way (first half of the "
                "GPUs to the second)\n",
           s->bisection / 1e9);
  fprintf (out, "diameter: %s%u hops between GPUs%s\n",
           s->diameter_exact ? "" : ">= ", s->diameter,
           s->diameter_exact ? "" : " (lower bound: too many GPUs for every "
                                    "pair)");
}

gboolean
weft_topo_write_dot (const WeftTopology *topo, const char *path,
                     GError **error)
{
  static const char *const shapes[] = { "box", "diamond", "ellipse",
                                        "hexagon" };
  g_autoptr (WeftOutput) output = weft_output_new (path, error);

  if (output == NULL)
    return FALSE;
  FILE *out = weft_output_stream (output);
  fprintf (out, "%s\ngraph weft {\n  node [fontsize=10];\n",
           WEFT_TOPO_DOT_MARK);
  for (uint32_t n = 0; n < topo->n_nodes; n++)
    fprintf (out, "  \"%s\" [shape=%s];\n", topo->nodes[n].name,
             shapes[topo->nodes[n].kind]);
  for (uint32_t l = 0; l < topo->n_links; l += 2)
    {
      const WeftLink *link = &topo->links[l];
      const WeftLinkType *t = g_ptr_array_index (topo->link_types, link->type);
      fprintf (out, "  \"%s\" -- \"%s\" [label=\"%s x%u\"];\n",
               topo->nodes[link->src].name, topo->nodes[link->dst].name,
               t->name, link->lanes);
    }
  fprintf (out, "}\n");
  return weft_output_commit (g_steal_pointer (&output), error);
}
