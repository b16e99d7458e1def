/* weft: the flow fidelity.
 *
 * Each transfer is a fluid flow over its path.  When flows start or end,
 * the rates of the flows that share a link with them are recomputed by
 * progressive filling (max-min fairness), the rates of all other flows held
 * fixed; changes at the same instant are gathered into one recomputation.
 * A flow's last byte arrives when it has drained plus its path's latency.
 *
 * A transfer striped over several first hops is one flow over all its
 * stripes' links, each carrying its share c_l of the flow's rate r (the
 * share of the bytes its stripes put on it); a link fills when the sum of
 * c_l r over its flows reaches its capacity.  With every share 1 this is
 * plain max-min fairness.
 */
#include "network.h"

#include <math.h>
#include <string.h>

/* An event of progressive filling: a link fills up, or a flow reaches its
 * cap, when the common level reaches `level`. */
typedef struct {
  double level;
  uint32_t link;                /* touched link, or flow | FLOW_BIT for caps */
  uint32_t version;
} Item;

#define FLOW_BIT 0x80000000u

typedef struct {
  double rate;                  /* B/s */
  double remaining;             /* bytes not yet sent */
  WeftTime updated;             /* when remaining was last brought up */
  WeftTimer timer;              /* drained */
  const uint32_t *path;         /* its transfer's, kept here to stay close */
  uint32_t path_len;
  uint32_t *slot;               /* its index in each path link's list */
  double *share;                /* per path link: its part of the rate */
  uint32_t mark;                /* epoch of the last recomputation */
  double cap;                   /* B/s, INFINITY: none */
  double old_rate;              /* during filling */
  gboolean frozen;              /* during filling */
  gboolean live;
} Flow;

typedef struct {
  uint32_t *flows;              /* live flows crossing it */
  uint32_t n, cap;
  double rate_sum;              /* B/s of those flows */
  WeftTime last;                /* start of the current rate segment */
  uint32_t mark;                /* epoch: touched by this recomputation */
  double residual;              /* during filling */
  uint32_t unfrozen;            /* during filling */
  double weight;                /* during filling: shares of unfrozen flows */
  uint32_t version;             /* during filling: heap entries older are stale */
  uint32_t index;               /* during filling: position among touched */
  uint32_t fill;                /* during filling: next free member slot */
  gboolean dirty;               /* a flow started or ended on it */
} Link;

typedef struct {
  WeftNetwork base;
  Flow *flows;                  /* by transfer id */
  uint32_t flows_cap;
  Link *links;
  uint32_t *dirty;              /* links */
  uint32_t n_dirty, dirty_cap;
  gboolean pending;             /* a recomputation is scheduled */
  uint32_t epoch;
  GArray *affected;             /* flow ids */
  GArray *touched;              /* link ids */
  GArray *heap;                 /* Item */
  GArray *freeze;               /* flow ids */
  GArray *members;              /* affected flows of each touched link */
  GArray *member_start;         /* per touched link, into members */
  uint64_t recomputations;
} FlowNet;

static WeftNetwork *
flow_create (void)
{
  FlowNet *f = g_new0 (FlowNet, 1);

  f->affected = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  f->touched = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  f->heap = g_array_new (FALSE, FALSE, sizeof (Item));
  f->freeze = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  f->members = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  f->member_start = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  return &f->base;
}

static void
flow_destroy (WeftNetwork *net)
{
  FlowNet *f = (FlowNet *) net;

  for (uint32_t i = 0; i < f->flows_cap; i++)
    {
      g_free (f->flows[i].slot);
      g_free (f->flows[i].share);
    }
  g_free (f->flows);
  if (f->links)
    for (uint32_t l = 0; l < net->topo->n_links; l++)
      g_free (f->links[l].flows);
  g_free (f->links);
  g_free (f->dirty);
  g_array_unref (f->affected);
  g_array_unref (f->touched);
  g_array_unref (f->heap);
  g_array_unref (f->freeze);
  g_array_unref (f->members);
  g_array_unref (f->member_start);
  g_free (f);
}

static void recompute (WeftSim *sim, void *target, void *data);

static void
mark_dirty (FlowNet *f, uint32_t l)
{
  if (f->links[l].dirty)
    return;
  f->links[l].dirty = TRUE;
  if (f->n_dirty == f->dirty_cap)
    {
      f->dirty_cap = f->dirty_cap ? f->dirty_cap * 2 : 64;
      f->dirty = g_renew (uint32_t, f->dirty, f->dirty_cap);
    }
  f->dirty[f->n_dirty++] = l;
  if (!f->pending)
    {
      f->pending = TRUE;
      weft_sim_schedule (f->base.sim, 0, recompute, f, NULL);
    }
}

/* Close link @l's current rate segment at @now: its bytes go to the bins. */
static void
close_segment (FlowNet *f, uint32_t l, WeftTime now)
{
  Link *link = &f->links[l];

  if (now > link->last && link->rate_sum > 0)
    {
      weft_link_stats_spread (f->base.stats, l, link->last, now,
                              link->rate_sum * (double) (now - link->last)
                                  * 1e-12);
      f->base.stats->links[l].busy += now - link->last;
    }
  link->last = now;
}

static void
link_add (Link *link, uint32_t id, uint32_t *slot)
{
  if (link->n == link->cap)
    {
      link->cap = link->cap ? link->cap * 2 : 4;
      link->flows = g_renew (uint32_t, link->flows, link->cap);
    }
  *slot = link->n;
  link->flows[link->n++] = id;
}

static void
flow_start (WeftNetwork *net, uint32_t id)
{
  FlowNet *f = (FlowNet *) net;
  const WeftTransfer *t = &net->transfers[id];

  if (f->links == NULL)
    f->links = g_new0 (Link, MAX (net->topo->n_links, 1));
  if (id >= f->flows_cap)
    {
      uint32_t cap = MAX (net->transfers_cap, id + 1);
      f->flows = g_renew (Flow, f->flows, cap);
      memset (f->flows + f->flows_cap, 0,
              (cap - f->flows_cap) * sizeof (Flow));
      f->flows_cap = cap;
    }

  Flow *flow = &f->flows[id];
  flow->rate = 0;
  flow->remaining = (double) t->bytes;
  flow->updated = weft_sim_now (net->sim);
  flow->cap = t->cap > 0 ? t->cap : INFINITY;
  flow->path = t->path;
  flow->path_len = t->path_len;
  flow->slot = g_renew (uint32_t, flow->slot, t->path_len);
  flow->share = g_renew (double, flow->share, t->path_len);
  flow->live = TRUE;
  for (uint32_t i = 0; i < t->path_len; i++)
    {
      flow->share[i] = t->striped ? (double) t->link_bytes[i] / (double) t->bytes
                                  : 1.0;
      link_add (&f->links[t->path[i]], id, &flow->slot[i]);
      mark_dirty (f, t->path[i]);
    }
}

static void
drained (WeftSim *sim, void *target, void *data)
{
  FlowNet *f = target;
  uint32_t id = GPOINTER_TO_UINT (data);
  Flow *flow = &f->flows[id];
  const WeftTransfer *t = &f->base.transfers[id];
  WeftTime now = weft_sim_now (sim);

  for (uint32_t i = 0; i < t->path_len; i++)
    {
      uint32_t l = t->path[i];
      Link *link = &f->links[l];
      close_segment (f, l, now);
      link->rate_sum -= flow->rate * flow->share[i];
      if (link->rate_sum < 0 || link->n == 1)
        link->rate_sum = 0;
      /* Swap the last flow of the list into this one's place. */
      uint32_t s = flow->slot[i], moved = link->flows[--link->n];
      link->flows[s] = moved;
      if (moved != id)
        {
          const Flow *mt = &f->flows[moved];
          for (uint32_t k = 0; k < mt->path_len; k++)
            if (mt->path[k] == l)
              {
                f->flows[moved].slot[k] = s;
                break;
              }
        }
      mark_dirty (f, l);
    }
  flow->live = FALSE;
  flow->rate = 0;
  weft_network_complete (&f->base, id, t->latency);
}

/* ---- a min-heap of (level, link) with lazy deletion ---- */


static void
push (GArray *heap, Item item)
{
  g_array_append_val (heap, item);
  Item *h = (Item *) heap->data;
  size_t i = heap->len - 1;
  while (i > 0 && h[(i - 1) / 2].level > item.level)
    {
      h[i] = h[(i - 1) / 2];
      i = (i - 1) / 2;
    }
  h[i] = item;
}

static Item
pop (GArray *heap)
{
  Item *h = (Item *) heap->data;
  Item top = h[0], last = h[heap->len - 1];
  size_t n = heap->len - 1, i = 0;

  for (;;)
    {
      size_t c = 2 * i + 1;
      if (c >= n)
        break;
      if (c + 1 < n && h[c + 1].level < h[c].level)
        c++;
      if (h[c].level >= last.level)
        break;
      h[i] = h[c];
      i = c;
    }
  if (n > 0)
    h[i] = last;
  g_array_set_size (heap, n);
  return top;
}

/* Progressive filling over the affected flows, the others held fixed.  All
 * unfrozen flows rise together; link l fills when the common level reaches
 * residual_l / unfrozen_l, and a capped flow stops at its cap.  Taking
 * these events in order of level (a heap, with stale entries skipped) gives
 * the max-min fair rates in O(path links x log) per flow. */
static void
fill (FlowNet *f)
{
  uint32_t *affected = (uint32_t *) f->affected->data;
  uint32_t *touched = (uint32_t *) f->touched->data;
  uint32_t n_aff = f->affected->len, n_touched = f->touched->len;
  GArray *heap = f->heap;

  /* What the fixed flows leave on each touched link. */
  for (uint32_t i = 0; i < n_touched; i++)
    {
      Link *link = &f->links[touched[i]];
      link->residual = f->base.capacity[touched[i]] - link->rate_sum;
      link->unfrozen = 0;
      link->weight = 0;
      link->version = 0;
    }
  for (uint32_t i = 0; i < n_aff; i++)
    {
      Flow *flow = &f->flows[affected[i]];
      for (uint32_t k = 0; k < flow->path_len; k++)
        {
          Link *link = &f->links[flow->path[k]];
          link->residual += flow->rate * flow->share[k];
          link->rate_sum -= flow->rate * flow->share[k];
          link->unfrozen++;
          link->weight += flow->share[k];
        }
      flow->frozen = FALSE;
      flow->old_rate = flow->rate;
      flow->rate = 0;
    }

  /* The affected flows of each touched link, bucketed (a link may carry
   * many more flows that are held fixed). */
  g_array_set_size (f->member_start, n_touched + 1);
  uint32_t *start = (uint32_t *) f->member_start->data;
  uint32_t total = 0;
  for (uint32_t i = 0; i < n_touched; i++)
    {
      Link *link = &f->links[touched[i]];
      start[i] = total;
      total += link->unfrozen;
      link->index = i;
      link->fill = start[i];
    }
  start[n_touched] = total;
  g_array_set_size (f->members, total);
  uint32_t *members = (uint32_t *) f->members->data;
  for (uint32_t i = 0; i < n_aff; i++)
    {
      const Flow *flow = &f->flows[affected[i]];
      for (uint32_t k = 0; k < flow->path_len; k++)
        members[f->links[flow->path[k]].fill++] = affected[i];
    }

  g_array_set_size (heap, 0);
  for (uint32_t i = 0; i < n_touched; i++)
    {
      Link *link = &f->links[touched[i]];
      if (link->unfrozen > 0)
        push (heap, (Item) { MAX (link->residual, 0) / link->weight, i, 0 });
    }
  for (uint32_t i = 0; i < n_aff; i++)
    if (isfinite (f->flows[affected[i]].cap))
      push (heap, (Item) { f->flows[affected[i]].cap, i | FLOW_BIT, 0 });

  uint32_t left = n_aff;
  while (left > 0 && heap->len > 0)
    {
      Item top = pop (heap);
      double level = top.level;

      if (top.link & FLOW_BIT)
        {
          uint32_t id = affected[top.link & ~FLOW_BIT];
          if (f->flows[id].frozen)
            continue;
          g_array_set_size (f->freeze, 0);
          g_array_append_val (f->freeze, id);
        }
      else
        {
          Link *link = &f->links[touched[top.link]];
          if (top.version != link->version || link->unfrozen == 0)
            continue;
          g_array_set_size (f->freeze, 0);
          for (uint32_t k = start[top.link]; k < start[top.link + 1]; k++)
            if (!f->flows[members[k]].frozen)
              g_array_append_val (f->freeze, members[k]);
        }

      /* Freeze them at this level; their links' levels rise. */
      for (guint i = 0; i < f->freeze->len; i++)
        {
          uint32_t id = g_array_index (f->freeze, uint32_t, i);
          Flow *flow = &f->flows[id];
          flow->frozen = TRUE;
          flow->rate = level;
          left--;
          for (uint32_t k = 0; k < flow->path_len; k++)
            {
              Link *link = &f->links[flow->path[k]];
              link->residual -= level * flow->share[k];
              link->unfrozen--;
              link->weight -= flow->share[k];
              link->rate_sum += level * flow->share[k];
              link->version++;
              if (link->unfrozen > 0)
                push (heap, (Item) { MAX (link->residual, 0)
                                         / MAX (link->weight, 1e-12),
                                     link->index, link->version });
            }
        }
    }
  g_assert (left == 0);

  /* Drain times at the new rates. */
  for (uint32_t i = 0; i < n_aff; i++)
    {
      uint32_t id = affected[i];
      Flow *flow = &f->flows[id];
      if (flow->rate == flow->old_rate && weft_sim_timer_pending (f->base.sim,
                                                                 &flow->timer))
        continue;
      if (flow->rate <= 0)
        {
          weft_sim_cancel (f->base.sim, &flow->timer);
          continue;
        }
      double ps = ceil (MAX (flow->remaining, 0) * 1e12 / flow->rate);
      weft_sim_schedule_timer (f->base.sim, &flow->timer, (WeftTime) ps,
                               drained, f, GUINT_TO_POINTER (id));
    }
}

static void
recompute (WeftSim *sim, void *target, void *data)
{
  FlowNet *f = target;
  WeftTime now = weft_sim_now (sim);
  (void) data;

  f->pending = FALSE;
  f->epoch++;
  f->recomputations++;
  g_array_set_size (f->affected, 0);
  g_array_set_size (f->touched, 0);

  /* The affected flows cross a dirty link; they touch these links. */
  for (uint32_t d = 0; d < f->n_dirty; d++)
    {
      Link *dirty = &f->links[f->dirty[d]];
      dirty->dirty = FALSE;
      for (uint32_t k = 0; k < dirty->n; k++)
        {
          uint32_t id = dirty->flows[k];
          Flow *flow = &f->flows[id];
          if (flow->mark == f->epoch)
            continue;
          flow->mark = f->epoch;
          g_array_append_val (f->affected, id);
          /* Bring its byte count up to now at the old rate. */
          flow->remaining -= flow->rate * (double) (now - flow->updated) * 1e-12;
          flow->updated = now;
          for (uint32_t p = 0; p < flow->path_len; p++)
            {
              uint32_t l = flow->path[p];
              if (f->links[l].mark != f->epoch)
                {
                  f->links[l].mark = f->epoch;
                  close_segment (f, l, now);
                  g_array_append_val (f->touched, l);
                }
            }
        }
    }
  f->n_dirty = 0;
  if (f->affected->len > 0)
    fill (f);
}

const WeftNetworkClass weft_network_flow_class = {
  .name = "flow",
  .create = flow_create,
  .start = flow_start,
  .destroy = flow_destroy,
  .whole_stripes = TRUE,
};
