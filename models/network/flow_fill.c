/* weft: the flow fidelity's filling: the affected flows of a
 * recomputation, group by group, through the max-min solver.
 *
 * Flows that share no touched link are filled apart, each group its own
 * problem for the solver (maxmin.h), so that a lockstep instant's
 * thousands of flows on links of their own make many small problems
 * rather than one over every touched link; the solver's total order of
 * events makes the rates those of one filling of all.  A group of one
 * flow, or of flows alike, is filled here by the closed form, which the
 * solver would reach by the same operations.
 */
#include "network/flow-private.h"

#include <math.h>
#include <string.h>

/* Groups of more flows than this fetch their flows and links ahead as
 * they are filled, not all at once before: links this far ahead of the
 * one being read, flows this far. */
#define FETCH_GROUP 16
#define FILL_LINKS_AHEAD 16
#define FILL_FLOWS_AHEAD 8

/* Fill the @n_aff affected flows @affected, which cross the @n_touched
 * links @touched, with solver @m, the other flows held fixed: each link
 * that can fill goes to it with what all its flows leave of its capacity,
 * each affected flow with the rate it had (still counted on its links),
 * which the solver gives back before filling.  Their new rates and the
 * links' sums come back from it.  A large group's links and flows are
 * fetched here, a few ahead (see weft_flow_fill_range()). */
void
weft_flow_fill (FlowNet *f, WeftMaxmin *m, const uint32_t *affected,
                uint32_t n_aff, const uint32_t *touched, uint32_t n_touched)
{
  gboolean ahead = n_aff > FETCH_GROUP;
  uint32_t n_links = 0, hops = 0;

  weft_maxmin_reset (m);
  weft_maxmin_reserve (m, n_touched, n_aff, 0);
  WeftMaxminLink *ml = m->links;
  for (uint32_t i = 0; i < n_touched; i++)
    {
      if (ahead && i + FILL_LINKS_AHEAD < n_touched)
        __builtin_prefetch (&f->links[touched[i + FILL_LINKS_AHEAD]]);
      if (cannot_fill (f, touched[i]))
        continue;
      Link *link = &f->links[touched[i]];
      link->at = n_links;
      ml[n_links].residual = link->capacity - link->rate_sum;
      ml[n_links].load = link->rate_sum;
      ml[n_links++].id = touched[i];
    }
  for (uint32_t i = 0; i < n_aff; i++)
    {
      if (ahead && i + FILL_FLOWS_AHEAD < n_aff)
        {
          const Flow *next = &f->flows[affected[i + FILL_FLOWS_AHEAD]];
          __builtin_prefetch (next);
          __builtin_prefetch (next->path);
          __builtin_prefetch (f->sides[affected[i + FILL_FLOWS_AHEAD]].share);
        }
      Flow *flow = &f->flows[affected[i]];
      const uint32_t *path = flow_path (flow);
      const double *share = flow_share (f, flow);
      if (G_UNLIKELY (hops + flow->path_len > m->hops_room))
        weft_maxmin_reserve (m, 0, 0, hops + flow->path_len);
      uint32_t *hop_link = m->hop_link;
      double *hop_share = m->hop_share;
      m->first[i] = hops;
      m->cap[i] = flow->capped ? bundle_cap (f, flow) : 0;
      m->held[i] = flow->old_rate = flow->rate;
      for (uint32_t k = 0; k < flow->path_len; k++)
        if (!cannot_fill (f, path[k]))
          {
            hop_link[hops] = f->links[path[k]].at;
            hop_share[hops++] = share[k] * flow->mult;
          }
    }
  m->first[n_aff] = hops;
  m->n_links = n_links;
  m->n_flows = n_aff;
  m->n_hops = hops;

  weft_maxmin_solve (m);
  for (uint32_t i = 0; i < n_aff; i++)
    f->flows[affected[i]].rate = m->rate[i];
  for (uint32_t j = 0; j < n_links; j++)
    f->links[ml[j].id].rate_sum = ml[j].load;
}

/* Whether the @n flows (two or more) all cross the same links, in the same
 * order, with the same shares, and none has a cap: see fill_path(). */
static gboolean
all_same (const FlowNet *f, const uint32_t *flows, uint32_t n)
{
  Flow *first = &f->flows[flows[0]];
  const uint32_t *path = flow_path (first);
  const double *share = flow_share (f, first);

  if (first->capped)
    return FALSE;
  for (uint32_t j = 1; j < n; j++)
    {
      Flow *flow = &f->flows[flows[j]];
      if (flow->capped || flow->path_len != first->path_len)
        return FALSE;
      const uint32_t *p = flow_path (flow);
      const double *s = flow_share (f, flow);
      for (uint32_t k = 0; k < first->path_len; k++)
        if (p[k] != path[k] || s[k] != share[k])
          return FALSE;
    }
  return TRUE;
}

/* Filling for one flow that shares none of its links with another affected
 * flow, or for @n that all_same() accepts (a rank's successive sends to one
 * peer, in flight together): they rise together, and when the first of
 * their links fills, or the one flow reaches its cap, all of them freeze
 * there.  The solver's operations, in the same order, without handing it
 * a problem: the rates and the links' sums are weft_flow_fill()'s to the
 * last bit. */
static void
fill_path (FlowNet *f, const uint32_t *flows, uint32_t n)
{
  Flow *first = &f->flows[flows[0]];
  const uint32_t *path = flow_path (first);
  const double *share = flow_share (f, first);
  double level = first->capped ? bundle_cap (f, first) : INFINITY;

  for (uint32_t k = 0; k < first->path_len; k++)
    {
      if (cannot_fill (f, path[k]))
        continue;
      Link *link = &f->links[path[k]];
      double residual = link->capacity - link->rate_sum, weight = 0;
      for (uint32_t j = 0; j < n; j++)
        {
          const Flow *flow = &f->flows[flows[j]];
          double part = share[k] * flow->mult;
          residual += flow->rate * part;
          link->rate_sum -= flow->rate * part;
          weight += part;
        }
      level = MIN (level, MAX (residual, 0) / weight);
    }
  for (uint32_t k = 0; k < first->path_len; k++)
    if (!cannot_fill (f, path[k]))
      for (uint32_t j = 0; j < n; j++)
        f->links[path[k]].rate_sum
            += level * share[k] * f->flows[flows[j]].mult;
  for (uint32_t j = 0; j < n; j++)
    {
      Flow *flow = &f->flows[flows[j]];
      flow->old_rate = flow->rate;
      flow->rate = level;
    }
}

/* Fill groups @g0 to @g1 of the sorted ones (see weft_flow_fill_groups())
 * with solver @m. */
void
weft_flow_fill_range (FlowNet *f, WeftMaxmin *m, uint32_t g0, uint32_t g1)
{
  const uint32_t *fs = f->group_start.v, *ls = f->link_group_start.v;
  const uint32_t *flows = f->by_group.v, *links = f->links_by_group.v;

  for (uint32_t g = g0; g < g1; g++)
    {
      uint32_t a = g > 0 ? fs[g - 1] : 0, l = g > 0 ? ls[g - 1] : 0;
      /* At scale each group's flows and links are cache misses: fetch the
       * next group's (a flow's figures, path and shares), if it is small;
       * a large one fetches its own as it goes (fetching it whole here
       * would push this one's out). */
      if (g + 1 < g1 && fs[g + 1] - fs[g] <= FETCH_GROUP)
        {
          for (uint32_t i = fs[g]; i < fs[g + 1]; i++)
            {
              const Flow *flow = &f->flows[flows[i]];
              __builtin_prefetch (flow);
              __builtin_prefetch (flow->path);
              __builtin_prefetch (f->sides[flows[i]].share);
            }
          for (uint32_t i = ls[g]; i < ls[g + 1]; i++)
            __builtin_prefetch (&f->links[links[i]]);
        }
      if (fs[g] - a == 1 || all_same (f, flows + a, fs[g] - a))
        fill_path (f, flows + a, fs[g] - a);
      else
        weft_flow_fill (f, m, flows + a, fs[g] - a, links + l, ls[g] - l);
    }
}

/* Below this many affected flows in groups of more than one, handing
 * groups over to other threads costs more than it saves: waking a thread
 * and waiting for it take tens of microseconds, a flow alone on its links
 * is filled in a few nanoseconds. */
#define PARALLEL_FLOWS 1024

/* Fill the affected flows in groups that share no touched link, each
 * alone: many small problems instead of one over every touched link (in a
 * collective's lockstep instants thousands of flows change together, on
 * links of their own).  Groups come from the union-find that the
 * recomputation builds over the flows as it finds them, each link joining
 * those that cross it; flows and links keep their relative order within a
 * group, so the rates are those of one filling of all. */
void
weft_flow_fill_groups (FlowNet *f)
{
  const uint32_t *affected = f->affected.v, *touched = f->touched.v;
  const uint32_t *owner = f->touched_owner.v;
  uint32_t n_aff = f->affected.n, n_touched = f->touched.n;
  uint32_t *parent = f->group_of.v;

  /* Number the groups in order of their first flow; parent[] becomes the
   * group.  A flow's parent never comes after it (roots are their groups'
   * first flows), so it is numbered by then. */
  uint32_t n_groups = 0;
  for (uint32_t i = 0; i < n_aff; i++)
    parent[i] = parent[i] == i ? n_groups++ : parent[parent[i]];
  if (n_groups == 1)
    {
      /* One flow alone may have touched no link: see take(). */
      if (n_aff == 1 || all_same (f, affected, n_aff))
        fill_path (f, affected, n_aff);
      else
        weft_flow_fill (f, f->solver, affected, n_aff, touched, n_touched);
      return;
    }

  /* Counting sorts, stable: flows, then links, by group. */
  ids_resize (&f->group_start, n_groups + 1);
  ids_resize (&f->link_group_start, n_groups + 1);
  uint32_t *fs = f->group_start.v, *ls = f->link_group_start.v;
  memset (fs, 0, (n_groups + 1) * sizeof (uint32_t));
  memset (ls, 0, (n_groups + 1) * sizeof (uint32_t));
  for (uint32_t i = 0; i < n_aff; i++)
    fs[parent[i] + 1]++;
  for (uint32_t i = 0; i < n_touched; i++)
    ls[parent[owner[i]] + 1]++;
  uint32_t shared = 0;
  for (uint32_t g = 0; g < n_groups; g++)
    {
      if (fs[g + 1] > 1)
        shared += fs[g + 1];
      fs[g + 1] += fs[g];
      ls[g + 1] += ls[g];
    }
  ids_resize (&f->by_group, n_aff);
  ids_resize (&f->links_by_group, n_touched);
  for (uint32_t i = 0; i < n_aff; i++)
    f->by_group.v[fs[parent[i]]++] = affected[i];
  for (uint32_t i = 0; i < n_touched; i++)
    f->links_by_group.v[ls[parent[owner[i]]]++] = touched[i];

  /* fs[g] and ls[g] now end group g. */
  if (f->threads > 1 && shared >= PARALLEL_FLOWS)
    weft_flow_fill_parallel (f, n_groups);
  else
    weft_flow_fill_range (f, f->solver, 0, n_groups);
}

