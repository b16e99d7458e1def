/* weft: schedules. */
#include "collectives/schedule.h"

#include <stdlib.h>

#include "memory.h"

G_STATIC_ASSERT (sizeof (WeftStep) == 24);

/* Room weft_schedule_reserve() adds to the dependencies it is asked for. */
#define DEPS_SLACK 64

G_DEFINE_QUARK (weft-schedule-error-quark, weft_schedule_error)

WeftSchedule *
weft_schedule_new (uint32_t n_ranks)
{
  WeftSchedule *s = g_new0 (WeftSchedule, 1);

  s->n_ranks = n_ranks;
  s->n_gpus = n_ranks;
  s->steps = g_new0 (WeftStep *, MAX (n_ranks, 1));
  s->n_steps = g_new0 (uint32_t, MAX (n_ranks, 1));
  s->steps_cap = g_new0 (uint32_t, MAX (n_ranks, 1));
  s->matches = g_new0 (uint32_t *, MAX (n_ranks, 1));
  s->room = 8 * WEFT_MEMORY_HUGE;
  return s;
}

WeftSchedule *
weft_schedule_new_counting (uint32_t n_ranks)
{
  WeftSchedule *s = weft_schedule_new (n_ranks);

  s->counting = TRUE;
  s->fan_out = g_array_new (FALSE, TRUE, sizeof (uint64_t));
  return s;
}

WeftSchedule *
weft_schedule_new_streaming (uint32_t n_ranks, WeftRankSink sink,
                             WeftAlikeSink alike, void *sink_data)
{
  WeftSchedule *s = weft_schedule_new (n_ranks);

  s->sink = sink;
  s->alike = alike;
  s->sink_data = sink_data;
  return s;
}

void
weft_schedule_forget (WeftSchedule *s, uint32_t rank)
{
  /* What the heap was readied for is what is held at once. */
  s->grown -= MIN (s->grown, (size_t) s->steps_cap[rank]
                                 * (sizeof (WeftStep) + sizeof (uint32_t)));
  g_clear_pointer (&s->steps[rank], g_free);
  g_clear_pointer (&s->matches[rank], g_free);
  s->n_steps[rank] = 0;
  s->steps_cap[rank] = 0;
}

void
weft_schedule_flush_alike (WeftSchedule *s, uint32_t rank, uint32_t like,
                           const uint32_t *peers, uint32_t n_peers,
                           uint64_t ends, uint64_t matched)
{
  g_assert (s->alike != NULL && like < rank && s->n_steps[rank] == 0);
  s->alike (s->sink_data, rank, like, peers, n_peers);
  s->streamed = TRUE;
  s->n_ends += ends;
  s->n_matched += matched;
}

void
weft_schedule_flush (WeftSchedule *s, uint32_t rank)
{
  g_assert (s->sink != NULL && !s->counting);
  s->sink (s->sink_data, s, rank);
  s->streamed = TRUE;
  weft_schedule_forget (s, rank);
  s->n_deps = 0;
}

/* The schedule was given @bytes more.  A large one is written into memory
 * never touched before: past a point, the heap is readied for four times
 * what it has been given, in huge pages (as it grows on, the executor's
 * image and the network's state take about as much again). */
static void
grew (WeftSchedule *s, size_t bytes)
{
  s->grown += bytes;
  if (G_UNLIKELY (s->grown >= s->room))
    {
      s->room = 2 * s->grown;
      weft_memory_reserve (4 * s->grown);
    }
}

void
weft_schedule_free (WeftSchedule *s)
{
  if (s == NULL)
    return;
  for (uint32_t r = 0; r < s->n_ranks; r++)
    {
      g_free (s->steps[r]);
      g_free (s->matches[r]);
    }
  g_free (s->matches);
  g_free (s->steps);
  g_free (s->n_steps);
  g_free (s->steps_cap);
  g_free (s->deps);
  if (s->fan_out)
    g_array_unref (s->fan_out);
  for (uint32_t r = 0; s->offsets && r < s->n_ranks; r++)
    g_free (s->offsets[r]);
  g_free (s->offsets);
  g_free (s->offsets_cap);
  if (s->region_lists)
    g_array_unref (s->region_lists);
  g_free (s);
}

void
weft_schedule_region_list (WeftSchedule *s, uint32_t rank, uint32_t step,
                           const uint64_t *places, uint32_t count)
{
  uint64_t n = count;

  if (s->offsets == NULL)
    return;
  if (s->region_lists == NULL)
    s->region_lists = g_array_new (FALSE, FALSE, sizeof (uint64_t));
  weft_schedule_set_region (s, rank, step,
                            WEFT_REGION_LIST | s->region_lists->len);
  g_array_append_val (s->region_lists, n);
  g_array_append_vals (s->region_lists, places, 2 * (guint) count);
}

void
weft_schedule_track_regions (WeftSchedule *s)
{
  if (s->offsets == NULL)
    {
      s->offsets = g_new0 (uint64_t *, MAX (s->n_ranks, 1));
      s->offsets_cap = g_new0 (uint32_t, MAX (s->n_ranks, 1));
    }
}

void
weft_schedule_set_region (WeftSchedule *s, uint32_t rank, uint32_t step,
                          uint64_t offset)
{
  g_assert (rank < s->n_ranks && step < s->n_steps[rank]);
  if (step >= s->offsets_cap[rank])
    {
      uint32_t cap = MAX (s->n_steps[rank], 2 * s->offsets_cap[rank]);
      s->offsets[rank] = g_renew (uint64_t, s->offsets[rank], cap);
      for (uint32_t i = s->offsets_cap[rank]; i < cap; i++)
        s->offsets[rank][i] = UINT64_MAX;
      s->offsets_cap[rank] = cap;
    }
  s->offsets[rank][step] = offset;
}

size_t
weft_schedule_memory (const WeftSchedule *s)
{
  size_t bytes = sizeof *s + (size_t) s->deps_cap * sizeof (uint32_t)
                 + (size_t) s->n_ranks * (sizeof (WeftStep *)
                                          + 2 * sizeof (uint32_t));
  for (uint32_t r = 0; r < s->n_ranks; r++)
    bytes += (size_t) s->steps_cap[r] * (sizeof (WeftStep) + sizeof (uint32_t));
  return bytes;
}

/* What a list of @n grows to from @first by doubling. */
static uint64_t
doubled (uint64_t n, uint64_t first)
{
  uint64_t cap = first;

  while (cap < n)
    cap *= 2;
  return n ? cap : 0;
}

size_t
weft_schedule_bytes (const WeftSchedule *c)
{
  uint64_t steps = c->counted_steps, deps = c->counted_deps + DEPS_SLACK;

  if (c->counted_classes)
    {
      /* Streamed: one rank's steps at a time. */
      steps = c->counted_rank_steps;
      deps = c->counted_rank_deps + DEPS_SLACK;
    }
  else if (!c->counted_reserved)
    {
      /* The lists of a rank grow as weft_schedule_add() grows them, the
       * dependencies' pool too; a rank's steps are counted exactly
       * while there are fewer than UINT32_MAX. */
      steps = 0;
      for (uint32_t r = 0; r < c->n_ranks; r++)
        steps += doubled (c->n_steps[r], 16);
      steps = MAX (steps, c->counted_steps);
      deps = doubled (c->counted_deps, 64);
    }
  return sizeof (WeftSchedule) + deps * sizeof (uint32_t)
         + (size_t) c->n_ranks * (sizeof (WeftStep *) + 2 * sizeof (uint32_t)
                                  + sizeof (uint32_t *))
         + steps * (sizeof (WeftStep) + sizeof (uint32_t));
}

uint32_t
weft_schedule_add (WeftSchedule *s, uint32_t rank, WeftStepKind kind,
                   uint32_t peer, uint32_t tag, uint64_t bytes,
                   const uint32_t *deps, uint32_t n_deps)
{
  WeftStep step = {
    .kind = (uint8_t) kind,
    .peer = peer,
    .tag = tag,
    .bytes = bytes,
    .first_dep = s->n_deps,
    .n_deps = 0,
  };

  g_assert (rank < s->n_ranks && n_deps <= WEFT_STEP_MAX_DEPS);
  if (s->counting)
    {
      uint32_t real = 0;
      for (uint32_t i = 0; i < n_deps; i++)
        real += deps[i] != WEFT_NO_STEP;
      s->counted_deps += real;
      s->counted_roots += kind == WEFT_STEP_SEND && real == 0;
      if (kind == WEFT_STEP_SEND && rank >= s->n_gpus)
        {
          if (s->fan_out->len <= tag)
            g_array_set_size (s->fan_out, tag + 1);
          uint64_t *on_tag = &g_array_index (s->fan_out, uint64_t, tag);
          s->counted_fan_out = MAX (s->counted_fan_out, ++*on_tag);
        }
      s->n_ends += kind != WEFT_STEP_REDUCE;
      if (kind == WEFT_STEP_SEND)
        s->counted_tags = MAX (s->counted_tags, tag + 1);
      s->counted_steps++;
      /* Indices only need to be told apart while counting. */
      uint32_t n = s->n_steps[rank];
      if (n < UINT32_MAX - 1)
        s->n_steps[rank] = n + 1;
      return n;
    }
  /* Appends inline: a schedule of a large run has billions of steps. */
  if (G_UNLIKELY (s->deps_cap - s->n_deps < n_deps))
    {
      g_assert (s->n_deps <= G_MAXUINT32 - n_deps);
      uint64_t cap = MAX ((uint64_t) s->deps_cap * 2, 64);
      cap = MIN (MAX (cap, (uint64_t) s->n_deps + n_deps), G_MAXUINT32);
      grew (s, (cap - s->deps_cap) * sizeof (uint32_t));
      s->deps = g_renew (uint32_t, s->deps, cap);
      weft_memory_advise (s->deps, cap * sizeof (uint32_t));
      s->deps_cap = (uint32_t) cap;
    }
  for (uint32_t i = 0; i < n_deps; i++)
    if (deps[i] != WEFT_NO_STEP)
      {
        s->deps[s->n_deps++] = deps[i];
        step.n_deps++;
      }
  uint32_t n = s->n_steps[rank];
  if (G_UNLIKELY (n == s->steps_cap[rank]))
    {
      g_assert (n < G_MAXUINT32 / 2);
      s->steps_cap[rank] = n ? n * 2 : 16;
      grew (s, (s->steps_cap[rank] - n)
                   * (sizeof (WeftStep) + sizeof (uint32_t)));
      s->steps[rank] = g_renew (WeftStep, s->steps[rank], s->steps_cap[rank]);
      s->matches[rank] = g_renew (uint32_t, s->matches[rank],
                                  s->steps_cap[rank]);
    }
  s->steps[rank][n] = step;
  s->matches[rank][n] = WEFT_NO_STEP;
  s->n_steps[rank] = n + 1;
  s->n_ends += kind != WEFT_STEP_REDUCE;
  return n;
}

void
weft_schedule_reserve (WeftSchedule *s, uint32_t rank, uint32_t n_steps,
                       uint64_t n_deps)
{
  g_assert (rank < s->n_ranks);
  if (s->counting)
    {
      s->counted_reserved |= n_steps > 0;
      return;
    }
  uint64_t want = (uint64_t) s->n_steps[rank] + n_steps;
  if (want > s->steps_cap[rank])
    {
      g_assert (want <= G_MAXUINT32 / 2);
      grew (s, (want - s->steps_cap[rank])
                   * (sizeof (WeftStep) + sizeof (uint32_t)));
      s->steps_cap[rank] = (uint32_t) want;
      s->steps[rank] = g_renew (WeftStep, s->steps[rank], want);
      s->matches[rank] = g_renew (uint32_t, s->matches[rank], want);
    }
  /* A step's dependencies are given room for before the absent ones
   * (WEFT_NO_STEP) are left out: a few more. */
  want = MIN ((uint64_t) s->n_deps + n_deps + DEPS_SLACK, G_MAXUINT32);
  if (want > s->deps_cap)
    {
      grew (s, (want - s->deps_cap) * sizeof (uint32_t));
      s->deps = g_renew (uint32_t, s->deps, want);
      weft_memory_advise (s->deps, want * sizeof (uint32_t));
      s->deps_cap = (uint32_t) want;
    }
}

uint32_t
weft_schedule_send (WeftSchedule *s, uint32_t rank, uint32_t peer,
                    uint32_t tag, uint64_t bytes, uint32_t dep)
{
  return weft_schedule_add (s, rank, WEFT_STEP_SEND, peer, tag, bytes, &dep, 1);
}

uint32_t
weft_schedule_recv (WeftSchedule *s, uint32_t rank, uint32_t peer,
                    uint32_t tag, uint64_t bytes, uint32_t dep)
{
  return weft_schedule_add (s, rank, WEFT_STEP_RECV, peer, tag, bytes, &dep, 1);
}

uint32_t
weft_schedule_reduce (WeftSchedule *s, uint32_t rank, uint64_t bytes,
                      uint32_t dep)
{
  return weft_schedule_add (s, rank, WEFT_STEP_REDUCE, 0, 0, bytes, &dep, 1);
}

uint64_t
weft_schedule_bytes_sent (const WeftSchedule *s)
{
  uint64_t total = 0;

  for (uint32_t r = 0; r < s->n_ranks; r++)
    for (guint i = 0; i < s->n_steps[r]; i++)
      {
        const WeftStep *step = weft_schedule_step (s, r, i);
        if (step->kind == WEFT_STEP_SEND)
          total += step->bytes;
      }
  return total;
}

const uint32_t *
weft_schedule_matches (const WeftSchedule *s, uint32_t rank)
{
  return s->matches ? s->matches[rank] : NULL;
}

static const char *
kind_name (WeftStepKind kind)
{
  return kind == WEFT_STEP_SEND ? "send" : kind == WEFT_STEP_RECV ? "receive"
                                                                  : "reduce";
}

/* A send or receive of a rank, to sort by (peer, tag, step). */
typedef struct {
  uint32_t peer, tag, step;
} End;

/* Whether end @a sorts before @b by (peer, tag); the steps of one (peer,
 * tag) keep their order. */
static inline gboolean
end_before (const End *a, const End *b)
{
  return a->peer < b->peer || (a->peer == b->peer && a->tag < b->tag);
}

/* Sort @n ends, found in order of step, by (peer, tag, step): a stable
 * merge sort by (peer, tag), bottom up, comparing inline (a rank has
 * hundreds of ends, and a function call for each comparison would cost
 * more than the comparison). */
static void
sort_ends (End *ends, uint32_t n)
{
  g_autofree End *tmp = g_new (End, n);
  End *from = ends, *to = tmp;

  for (uint32_t width = 1; width < n; width *= 2)
    {
      for (uint32_t lo = 0; lo < n; lo += 2 * width)
        {
          uint32_t mid = MIN (lo + width, n), hi = MIN (lo + 2 * width, n);
          uint32_t a = lo, b = mid, o = lo;
          while (a < mid && b < hi)
            to[o++] = end_before (&from[b], &from[a]) ? from[b++] : from[a++];
          while (a < mid)
            to[o++] = from[a++];
          while (b < hi)
            to[o++] = from[b++];
        }
      End *swap = from;
      from = to;
      to = swap;
    }
  if (from != ends)
    memcpy (ends, from, n * sizeof (End));
}

/* @rank's steps of @kind, sorted by (peer, tag, step). */
static End *
ends_of (const WeftSchedule *s, uint32_t rank, WeftStepKind kind, uint32_t *n)
{
  End *ends = g_new (End, MAX (s->n_steps[rank], 1));

  *n = 0;
  for (guint i = 0; i < s->n_steps[rank]; i++)
    {
      const WeftStep *step = weft_schedule_step (s, rank, i);
      if (step->kind == kind)
        ends[(*n)++] = (End) { step->peer, step->tag, i };
    }
  /* Often in order already (a ring's sends all go to one peer): found in
   * order of step, ends with equal (peer, tag) are in their sorted order. */
  uint32_t k = 1;
  while (k < *n && !end_before (&ends[k], &ends[k - 1]))
    k++;
  if (k < *n)
    sort_ends (ends, *n);
  return ends;
}

/* Pair sends and receives: per (from, to, tag), the k-th receive takes the
 * k-th send.  Sorting each rank's ends by (peer, tag, step) finds them
 * without a table over all pairs.  Of several faults, the first receive
 * (by rank, then step) that has none or a wrong one is reported. */
static gboolean
pair (WeftSchedule *s, GError **error)
{
  uint32_t n = s->n_ranks;
  g_autofree End **sends = g_new0 (End *, MAX (n, 1));
  g_autofree uint32_t *n_sends = g_new0 (uint32_t, MAX (n, 1));
  gboolean ok = TRUE;

  for (uint32_t r = 0; r < n; r++)
    for (guint i = 0; i < s->n_steps[r]; i++)
      s->matches[r][i] = WEFT_NO_STEP;
  for (uint32_t r = 0; r < n && ok; r++)
    {
      sends[r] = ends_of (s, r, WEFT_STEP_SEND, &n_sends[r]);
      for (guint i = 0; i < s->n_steps[r]; i++)
        {
          const WeftStep *step = weft_schedule_step (s, r, i);
          if (step->kind == WEFT_STEP_SEND
              && (step->peer >= n || step->peer == r))
            {
              g_set_error (error, WEFT_SCHEDULE_ERROR, WEFT_SCHEDULE_ERROR_INVALID,
                           "rank %u step %u sends to rank %u, which is %s", r,
                           i, step->peer,
                           step->peer == r ? "itself" : "not a rank");
              ok = FALSE;
              break;
            }
        }
    }

  for (uint32_t q = 0; q < n && ok; q++)
    {
      uint32_t n_recvs, bad = WEFT_NO_STEP, bad_send = WEFT_NO_STEP;
      g_autofree End *recvs = ends_of (s, q, WEFT_STEP_RECV, &n_recvs);
      for (uint32_t g = 0; g < n_recvs;)
        {
          uint32_t p = recvs[g].peer, tag = recvs[g].tag, e = g;
          while (e < n_recvs && recvs[e].peer == p && recvs[e].tag == tag)
            e++;
          /* The sends of rank p to q with this tag. */
          uint32_t lo = 0, hi = p < n ? n_sends[p] : 0;
          const End *from = p < n ? sends[p] : NULL;
          End want = { q, tag, 0 };
          while (lo < hi)
            {
              uint32_t mid = (lo + hi) / 2;
              if (end_before (&from[mid], &want))
                lo = mid + 1;
              else
                hi = mid;
            }
          for (uint32_t k = g; k < e; k++)
            {
              uint32_t at = lo + (k - g), i = recvs[k].step;
              gboolean has = p < n && at < n_sends[p] && from[at].peer == q
                             && from[at].tag == tag;
              uint32_t j = has ? from[at].step : WEFT_NO_STEP;
              if (!has || weft_schedule_step (s, p, j)->bytes
                              != weft_schedule_step (s, q, i)->bytes)
                {
                  if (bad == WEFT_NO_STEP || i < bad)
                    {
                      bad = i;
                      bad_send = j;
                    }
                  continue;
                }
              s->matches[q][i] = j;
              s->matches[p][j] = i;
            }
          g = e;
        }
      if (bad != WEFT_NO_STEP)
        {
          const WeftStep *step = weft_schedule_step (s, q, bad);
          if (bad_send == WEFT_NO_STEP)
            g_set_error (error, WEFT_SCHEDULE_ERROR, WEFT_SCHEDULE_ERROR_INVALID,
                         "rank %u step %u receives from rank %u, which sends "
                         "it nothing to match",
                         q, bad, step->peer);
          else
            g_set_error (error, WEFT_SCHEDULE_ERROR, WEFT_SCHEDULE_ERROR_INVALID,
                         "rank %u step %u receives %" G_GUINT64_FORMAT
                         " bytes from rank %u, whose step %u sends %"
                         G_GUINT64_FORMAT,
                         q, bad, step->bytes, step->peer, bad_send,
                         weft_schedule_step (s, step->peer, bad_send)->bytes);
          ok = FALSE;
        }
    }

  /* A send left over has no receiver. */
  for (uint32_t r = 0; r < n && ok; r++)
    for (guint i = 0; i < s->n_steps[r] && ok; i++)
      if (weft_schedule_step (s, r, i)->kind == WEFT_STEP_SEND
          && s->matches[r][i] == WEFT_NO_STEP)
        {
          g_set_error (error, WEFT_SCHEDULE_ERROR, WEFT_SCHEDULE_ERROR_INVALID,
                       "rank %u step %u sends to rank %u, which never "
                       "receives it",
                       r, i, weft_schedule_step (s, r, i)->peer);
          ok = FALSE;
        }
  for (uint32_t r = 0; r < n; r++)
    g_free (sends[r]);
  return ok;
}

/* Check that every dependency points at an earlier step, then pair (by
 * the builder's pairs if @trust and they are complete). */
static gboolean
pair_checked (WeftSchedule *s, gboolean trust, GError **error)
{
  if (trust && s->n_ends > 0 && 2 * s->n_matched == s->n_ends)
    /* Built-in algorithms' dependencies and pairs are right by
     * construction; the test suite checks them against the search. */
    return TRUE;
  for (uint32_t r = 0; r < s->n_ranks; r++)
    for (guint i = 0; i < s->n_steps[r]; i++)
      {
        const WeftStep *step = weft_schedule_step (s, r, i);
        for (uint32_t d = 0; d < step->n_deps; d++)
          {
            uint32_t on = weft_schedule_dep (s, step, d);
            if (on >= i)
              {
                g_set_error (error, WEFT_SCHEDULE_ERROR, WEFT_SCHEDULE_ERROR_INVALID,
                             "rank %u step %u waits for step %u, which does "
                             "not come before it",
                             r, i, on);
                return FALSE;
              }
          }
      }
  return pair (s, error);
}

gboolean
weft_schedule_pair (const WeftSchedule *cs, GError **error)
{
  return pair_checked ((WeftSchedule *) cs, TRUE, error);
}

gboolean
weft_schedule_pair_search (const WeftSchedule *cs, GError **error)
{
  return pair_checked ((WeftSchedule *) cs, FALSE, error);
}

/* A rank's send between GPUs, as slot_waits() sorts them. */
typedef struct {
  uint32_t peer, tag, step;
} SlotSend;

static int
by_connection (const void *a_, const void *b_)
{
  const SlotSend *a = a_, *b = b_;

  if (a->peer != b->peer)
    return a->peer < b->peer ? -1 : 1;
  if (a->tag != b->tag)
    return a->tag < b->tag ? -1 : 1;
  return (a->step > b->step) - (a->step < b->step);
}

/* The waits for buffer slots (WEFT_CONNECTION_SLOTS) of @s, steps
 * numbered from @offset of their rank: pairs of uint32_t, the receive
 * that frees a slot, then the send that waits for it. */
static GArray *
slot_waits (const WeftSchedule *s, const uint32_t *offset)
{
  GArray *edges = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  g_autoptr (GArray) sends = g_array_new (FALSE, FALSE, sizeof (SlotSend));

  for (uint32_t r = 0; r < s->n_gpus; r++)
    {
      /* The rank's sends by connection (peer and tag), each in order. */
      g_array_set_size (sends, 0);
      for (uint32_t i = 0; i < s->n_steps[r]; i++)
        {
          const WeftStep *step = weft_schedule_step (s, r, i);
          if (step->kind == WEFT_STEP_SEND && step->peer < s->n_gpus)
            g_array_append_val (sends, ((SlotSend) { step->peer, step->tag,
                                                     i }));
        }
      if (sends->len <= WEFT_CONNECTION_SLOTS)
        continue;
      g_array_sort (sends, by_connection);
      const SlotSend *e = (const SlotSend *) (void *) sends->data;
      for (guint k = WEFT_CONNECTION_SLOTS; k < sends->len; k++)
        {
          const SlotSend *before = &e[k - WEFT_CONNECTION_SLOTS];
          if (before->peer != e[k].peer || before->tag != e[k].tag)
            continue;
          uint32_t edge[2] = { offset[e[k].peer] + s->matches[r][before->step],
                               offset[r] + e[k].step };
          g_array_append_vals (edges, edge, 2);
        }
    }
  return edges;
}

/* Whether step @k (numbered as by slot_waits()) waits for a slot. */
static gboolean
waits_for_slot (GArray *edges, uint32_t k)
{
  for (guint e = 0; e < edges->len / 2; e++)
    if (g_array_index (edges, uint32_t, 2 * e + 1) == k)
      return TRUE;
  return FALSE;
}

gboolean
weft_schedule_check (const WeftSchedule *cs, GError **error)
{
  WeftSchedule *s = (WeftSchedule *) cs;

  if (!weft_schedule_pair (s, error))
    return FALSE;

  /* Run it without time: a step finishes once its dependencies have and,
   * for a receive, its send has.  Whatever never finishes is deadlocked.
   * Steps are numbered globally (32 bits, as the executor numbers them); a
   * work list keeps this linear. */
  uint64_t total = 0;
  for (uint32_t r = 0; r < s->n_ranks; r++)
    total += s->n_steps[r];
  g_autofree uint32_t *offset = g_new (uint32_t, s->n_ranks + 1);
  offset[0] = 0;
  for (uint32_t r = 0; r < s->n_ranks && total < G_MAXUINT32; r++)
    offset[r + 1] = offset[r] + s->n_steps[r];
  /* Sends that wait for a slot: (the receive that frees it, the send). */
  g_autoptr (GArray) slots = total < G_MAXUINT32 ? slot_waits (s, offset)
                                                 : NULL;
  /* Dependents: at most a receive for each step, every dependency and
   * every wait for a slot. */
  if (total + s->n_deps + (slots ? slots->len / 2 : 0) >= G_MAXUINT32)
    {
      g_set_error (error, WEFT_SCHEDULE_ERROR, WEFT_SCHEDULE_ERROR_INVALID,
                   "the schedule has %" G_GUINT64_FORMAT " steps and %"
                   G_GUINT64_FORMAT " dependencies, more than weft can run",
                   total, (uint64_t) s->n_deps);
      return FALSE;
    }
  g_autofree uint32_t *remaining = g_new0 (uint32_t, MAX (total, 1));
  g_autofree uint32_t *out_start = g_new0 (uint32_t, total + 1);
  for (uint32_t r = 0; r < s->n_ranks; r++)
    for (guint i = 0; i < s->n_steps[r]; i++)
      {
        const WeftStep *step = weft_schedule_step (s, r, i);
        remaining[offset[r] + i] = step->n_deps
                                   + (step->kind == WEFT_STEP_RECV);
        for (uint32_t d = 0; d < step->n_deps; d++)
          out_start[offset[r] + weft_schedule_dep (s, step, d) + 1]++;
        if (step->kind == WEFT_STEP_SEND)
          out_start[offset[r] + i + 1]++;
      }
  for (guint e = 0; e < slots->len / 2; e++)
    {
      const uint32_t *edge = &g_array_index (slots, uint32_t, 2 * e);
      out_start[edge[0] + 1]++;
      remaining[edge[1]]++;
    }
  for (uint64_t k = 0; k < total; k++)
    out_start[k + 1] += out_start[k];
  g_autofree uint32_t *out = g_new (uint32_t, MAX (out_start[total], 1));
  /* Each step's next free out slot, in the queue's memory (it is not needed
   * until the run, and the run does not need these). */
  g_autofree uint32_t *queue = g_new (uint32_t, MAX (total, 1));
  uint32_t *fill = queue;
  memcpy (fill, out_start, total * sizeof (uint32_t));
  for (uint32_t r = 0; r < s->n_ranks; r++)
    for (guint i = 0; i < s->n_steps[r]; i++)
      {
        const WeftStep *step = weft_schedule_step (s, r, i);
        for (uint32_t d = 0; d < step->n_deps; d++)
          {
            uint32_t from = offset[r] + weft_schedule_dep (s, step, d);
            out[fill[from]++] = offset[r] + i;
          }
        if (step->kind == WEFT_STEP_SEND)
          out[fill[offset[r] + i]++] = offset[step->peer] + s->matches[r][i];
      }
  for (guint e = 0; e < slots->len / 2; e++)
    {
      const uint32_t *edge = &g_array_index (slots, uint32_t, 2 * e);
      out[fill[edge[0]]++] = edge[1];
    }
  uint64_t head = 0, tail = 0;
  for (uint64_t k = 0; k < total; k++)
    if (remaining[k] == 0)
      queue[tail++] = (uint32_t) k;
  while (head < tail)
    {
      uint32_t k = queue[head++];
      for (uint32_t e = out_start[k]; e < out_start[k + 1]; e++)
        if (--remaining[out[e]] == 0)
          queue[tail++] = out[e];
    }
  gboolean ok = TRUE;
  for (uint32_t r = 0; r < s->n_ranks && ok; r++)
    for (guint i = 0; i < s->n_steps[r] && ok; i++)
      if (remaining[offset[r] + i] > 0)
        {
          const WeftStep *step = weft_schedule_step (s, r, i);
          char peer[16] = "";
          if (step->kind != WEFT_STEP_REDUCE)
            g_snprintf (peer, sizeof peer, "%u", step->peer);
          g_set_error (error, WEFT_SCHEDULE_ERROR, WEFT_SCHEDULE_ERROR_INVALID,
                       "the schedule deadlocks: rank %u step %u (%s%s%s) can "
                       "never run%s",
                       r, i, kind_name (step->kind),
                       step->kind == WEFT_STEP_SEND ? " to rank "
                       : step->kind == WEFT_STEP_RECV ? " from rank " : "",
                       peer, waits_for_slot (slots, offset[r] + i)
                       ? " (a send between GPUs waits for a buffer slot: "
                         "the receive of the send "
                         G_STRINGIFY (WEFT_CONNECTION_SLOTS)
                         " before it on its peer and tag must finish first)"
                       : "");
          ok = FALSE;
        }
  return ok;
}
