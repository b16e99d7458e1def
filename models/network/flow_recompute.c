/* weft: a recomputation of the flow fidelity: the flows a change
 * affects, found and taken in order of id, filled (flow_fill.c), and
 * their drain times at the new rates.
 */
#include "network/flow-private.h"

#include <math.h>
#include <string.h>

#include "union_find.h"

/* Recomputation: flow @id is affected (its own group until joined), its
 * byte count brought up to now at the old rate.  Returns its place. */
static inline uint32_t
affect (FlowNet *f, uint32_t id, Flow *flow, WeftTime now, gboolean grouping)
{
  uint32_t i = f->affected.n;

  ids_push (&f->affected, id);
  if (grouping)
    ids_push (&f->group_of, i);
  flow->served += flow->rate * (double) (now - flow->updated) * 1e-12;
  flow->updated = now;
  return i;
}

/* Recomputation: flow @id, found to cross a changed link or to have
 * started alone, is affected (taken in order of id); it touches its
 * links, and joins the group of the first affected flow on each. */
static inline void
take (FlowNet *f, uint32_t id, WeftTime now, gboolean grouping)
{
  Flow *flow = &f->flows[id];
  const uint32_t *path = flow_path (flow);

  if (flow->fresh)
    {
      flow->fresh = FALSE;
      gboolean still = TRUE;
      /* (A link marked changed since, by one of its own members
       * ending, must be touched to be clean again.) */
      for (uint32_t p = 0; still && p < flow->path_len; p++)
        still = f->links[path[p]].n == 1 && f->links[path[p]].mark != DIRTY;
      if (still)
        {
          /* Still alone: a group of its own, filled by fill_path(), which
           * needs none of its links touched. */
          affect (f, id, flow, now, grouping);
          for (uint32_t p = 0; p < flow->path_len; p++)
            close_segment (f, path[p], now);
          return;
        }
    }
  uint32_t i = affect (f, id, flow, now, grouping);
  uint32_t joined = WEFT_NONE;  /* flows on one path join one owner on each
                                   link: once is enough */
  for (uint32_t p = 0; p < flow->path_len; p++)
    {
      uint32_t t = path[p];
      Link *link = &f->links[t];
      if ((link->mark & ~DIRTY) != f->epoch)
        {
          link->mark = f->epoch | (link->mark == DIRTY ? DIRTY : 0);
          link->at = f->touched.n;
          close_segment (f, t, now);
          ids_push (&f->touched, t);
          ids_push (&f->touched_owner, i);
        }
      else if (grouping && f->touched_owner.v[link->at] != joined
               && !cannot_fill (f, t))
        {
          joined = f->touched_owner.v[link->at];
          weft_union (f->group_of.v, i, joined);
        }
    }
}

/* Sort @a's ids, all below @hi, ascending: least significant digit first,
 * in as few passes as digits of up to 11 bits allow, each digit about as
 * wide as the count of ids: a recomputation may find a few dozen flows
 * among millions of ids, and counting a full 2,048 buckets a pass for
 * them would cost more than sorting them. */
void
weft_flow_sort_ids (Ids *a, Ids *scratch, uint32_t hi)
{
  uint32_t n = a->n, *v = a->v;

  if (n < 64)
    {
      for (uint32_t i = 1; i < n; i++)
        {
          uint32_t x = v[i], j = i;
          for (; j > 0 && v[j - 1] > x; j--)
            v[j] = v[j - 1];
          v[j] = x;
        }
      return;
    }
  uint32_t span = hi > 1 ? 32 - (uint32_t) __builtin_clz (hi - 1) : 1;
  uint32_t width = MIN (11, 32 - (uint32_t) __builtin_clz (n));
  uint32_t passes = (span + width - 1) / width;
  width = (span + passes - 1) / passes;
  uint32_t buckets = 1u << width, digit = buckets - 1;
  ids_resize (scratch, n);
  uint32_t *src = v, *dst = scratch->v;
  for (uint32_t pass = 0, shift = 0; pass < passes; pass++, shift += width)
    {
      uint32_t count[2048 + 1];
      memset (count, 0, (buckets + 1) * sizeof (uint32_t));
      for (uint32_t i = 0; i < n; i++)
        count[((src[i] >> shift) & digit) + 1]++;
      for (uint32_t d = 0; d < buckets; d++)
        count[d + 1] += count[d];
      for (uint32_t i = 0; i < n; i++)
        dst[count[(src[i] >> shift) & digit]++] = src[i];
      uint32_t *swap = src;
      src = dst;
      dst = swap;
    }
  if (src != v)
    memcpy (v, src, n * sizeof (uint32_t));
}

/* Recomputation: flow @id is found affected.  The first time, it goes on
 * @list, and @lo and @hi widen to take it in. */
static inline void
found (FlowNet *f, Ids *list, uint32_t id, uint32_t *lo, uint32_t *hi)
{
  uint64_t *word = &f->found_bits[id / 64], bit = (uint64_t) 1 << (id % 64);

  if (*word & bit)
    return;
  *word |= bit;
  ids_push (list, id);
  *lo = MIN (*lo, id);
  *hi = MAX (*hi, id);
}

/* The affected flows found from the dirty list: the flows on each changed
 * link and those that started alone, in order of id, then taken.  Which
 * are found is kept in a bit per flow, not in the flows, so that finding
 * them reads only the links and their lists; each flow is read once, when
 * it is taken, fetched a few ahead. */
static void
find_by_lists (FlowNet *f, WeftTime now, gboolean grouping)
{
  Ids *list = &f->by_group;     /* free until the filling */
  gboolean deep = f->base.deep, bins = f->base.stats->bin_width > 0;
  uint32_t lo = UINT32_MAX, hi = 0;

  list->n = 0;
  for (uint32_t d = 0; d < f->n_dirty; d++)
    {
      uint32_t e = f->dirty[d];
      /* Fetch ahead: dirty links, then their flows' lists (the second's
       * address is in what the first fetched), where they may be out of
       * the caches. */
      if (deep)
        {
          if (d + 24 < f->n_dirty && !(f->dirty[d + 24] & ALONE))
            __builtin_prefetch (&f->links[f->dirty[d + 24]]);
          if (d + 12 < f->n_dirty && !(f->dirty[d + 12] & ALONE))
            prefetch_flows (&f->links[f->dirty[d + 12]]);
        }
      if (e & ALONE)
        {
          found (f, list, e & ~ALONE, &lo, &hi);
          continue;
        }
      const Link *link = &f->links[e];
      const uint32_t *flows = link_flows (link);
      for (uint32_t k = 0; k < link->n; k++)
        found (f, list, flows[k], &lo, &hi);
    }

  /* In order of id: read off the bits where they are dense, else sorted
   * (a recomputation may find a few flows among millions of ids). */
  uint32_t n = list->n;
  if (n > 0 && (hi / 64 - lo / 64) / 2 <= n)
    {
      list->n = 0;
      for (uint32_t w = lo / 64; w <= hi / 64; w++)
        for (uint64_t bits = f->found_bits[w]; bits != 0; bits &= bits - 1)
          list->v[list->n++] = w * 64 + (uint32_t) __builtin_ctzll (bits);
      memset (&f->found_bits[lo / 64], 0,
              (hi / 64 - lo / 64 + 1) * sizeof (uint64_t));
    }
  else
    {
      weft_flow_sort_ids (list, &f->sort_scratch, f->n_bundles);
      for (uint32_t i = 0; i < n; i++)
        f->found_bits[list->v[i] / 64] = 0;
    }
  g_assert (list->n == n);

  const uint32_t *ids = list->v;
  for (uint32_t i = 0; i < n; i++)
    {
      if (deep && i + 16 < n)
        {
          const Flow *ahead = &f->flows[ids[i + 16]];
          __builtin_prefetch (ahead);
          __builtin_prefetch (ahead->path);
        }
      if (deep && i + 8 < n)
        {
          Flow *ahead = &f->flows[ids[i + 8]];
          const uint32_t *path = flow_path (ahead);
          for (uint32_t p = 0; p < ahead->path_len; p++)
            prefetch_link (f, path[p], bins);
        }
      else if (i + 4 < n)
        __builtin_prefetch (&f->flows[ids[i + 4]]);
      take (f, ids[i], now, grouping);
    }
}

/* How far ahead of the scan flows' path lines are fetched, and how far
 * ahead it decides which it will take (fetching their first lines and
 * their links).  A flow's first line is fetched only once the scan knows
 * it will take it, so the decision runs well ahead: the line and the
 * links must come from memory in the time the scan reads the flows
 * between, and the path lines it decides by come further ahead still. */
#define SCAN_FLOWS_AHEAD 16
#define SCAN_LINKS_AHEAD 8

/* Whether flow @flow crosses a changed link or started alone. */
static inline gboolean
flow_hit (const FlowNet *f, Flow *flow)
{
  const uint32_t *path = flow_path (flow);

  if (flow->fresh)
    return TRUE;
  for (uint32_t p = 0; p < flow->path_len; p++)
    if (link_dirty (f, path[p]))
      return TRUE;
  return FALSE;
}

/* The affected flows found by reading every flow in flight in order of id
 * (sequential reads where following the dirty links' lists would miss the
 * cache at each flow), each taken at once.  Whether a flow is affected is
 * read off the dirty bits, a few flows ahead, and only an affected flow's
 * links (which taking it reads) are fetched. */
static void
find_by_scan (FlowNet *f, WeftTime now, gboolean grouping)
{
  uint32_t hi = f->n_bundles;
  gboolean hit[SCAN_LINKS_AHEAD], bins = f->base.stats->bin_width > 0;

  for (uint32_t id = 0; id < MIN (hi, SCAN_LINKS_AHEAD); id++)
    hit[id] = flow_hit (f, &f->flows[id]);
  for (uint32_t id = 0; id < hi; id++)
    {
      if (id + SCAN_FLOWS_AHEAD < hi)
        __builtin_prefetch (f->flows[id + SCAN_FLOWS_AHEAD].path);
      gboolean now_hit = hit[id % SCAN_LINKS_AHEAD];
      if (id + SCAN_LINKS_AHEAD < hi)
        {
          Flow *ahead = &f->flows[id + SCAN_LINKS_AHEAD];
          gboolean h = flow_hit (f, ahead);
          hit[id % SCAN_LINKS_AHEAD] = h;
          if (h)
            {
              const uint32_t *path = flow_path (ahead);
              __builtin_prefetch (ahead);
              for (uint32_t p = 0; p < ahead->path_len; p++)
                prefetch_link (f, path[p], bins);
            }
        }
      if (now_hit)
        take (f, id, now, grouping);
    }
}

/* A scan reads every transfer slot, in order; following the lists reads
 * one or more flows a dirty entry, each a miss: scan when there is at
 * least one dirty entry to this many slots.  Either way finds the same
 * flows, so this changes only the time taken. */
#define SCAN_FLOWS_PER_DIRTY 4

void
weft_flow_recompute (WeftSim *sim, void *target, void *data)
{
  FlowNet *f = target;
  WeftTime now = weft_sim_now (sim);
  gboolean grouping = !f->base.plain;
  (void) data;

  f->pending = FALSE;
  if (G_UNLIKELY (++f->epoch == DIRTY))
    {
      /* The epoch would reach the dirty bit: start the count again. */
      for (uint32_t l = 0; l < f->base.n_links; l++)
        f->links[l].mark = f->links[l].mark == DIRTY ? DIRTY : 0;
      f->epoch = 1;
    }
  f->recomputations++;
  f->affected.n = 0;
  f->touched.n = 0;
  f->touched_owner.n = 0;
  f->group_of.n = 0;

  /* The affected flows cross a dirty link or started alone.  They are
   * taken in order of id, whichever way they are found, so the rates do
   * not depend on the order of the changes nor on the way: each touches
   * its links, and the flows that share a touched link are joined. */
  WeftScan scan = f->scan;
  if (scan == WEFT_SCAN_AUTO)
    scan = grouping && (uint64_t) f->n_dirty * SCAN_FLOWS_PER_DIRTY
                               >= f->n_bundles
               ? WEFT_SCAN_ALWAYS
               : WEFT_SCAN_NEVER;
  if (scan == WEFT_SCAN_ALWAYS)
    find_by_scan (f, now, grouping);
  else
    find_by_lists (f, now, grouping);
  for (uint32_t d = 0; d < f->n_dirty; d++)
    if (!(f->dirty[d] & ALONE))
      f->dirty_bits[f->dirty[d] / 64] &= ~((uint64_t) 1 << (f->dirty[d] % 64));
  f->n_dirty = 0;
  if (f->affected.n == 0)
    return;
  if (grouping)
    weft_flow_fill_groups (f);
  else
    weft_flow_fill (f, f->solver, f->affected.v, f->affected.n,
                    f->touched.v, f->touched.n);

  /* Drain times at the new rates, in order of id. */
  for (uint32_t i = 0; i < f->affected.n; i++)
    {
      uint32_t id = f->affected.v[i];
      Flow *flow = &f->flows[id];
      if (i + 8 < f->affected.n)
        __builtin_prefetch (&f->flows[f->affected.v[i + 8]]);
      if (f->any_unfilled && flow->rate != flow->old_rate)
        {
          /* Links left out of filling: their sums, in order of id. */
          const uint32_t *path = flow_path (flow);
          const double *share = flow_share (f, flow);
          for (uint32_t k = 0; k < flow->path_len; k++)
            if (cannot_fill (f, path[k]))
              f->links[path[k]].rate_sum
                  += (flow->rate - flow->old_rate) * share[k] * flow->mult;
        }
      if (flow->rate == flow->old_rate && flow->timer.pending)
        continue;
      if (flow->rate <= 0)
        {
          weft_sim_pool_cancel (f->base.sim, f->timers, id);
          continue;
        }
      double ps = ceil (MAX (flow->head_tag - flow->served, 0) * 1e12
                        / flow->rate);
      weft_sim_pool_schedule (f->base.sim, f->timers, id, (WeftTime) ps);
    }
}

