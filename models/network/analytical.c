/* weft: the analytical fidelity, congestion aware.
 *
 * Each directed link serves the transfers that cross it in turn, first come
 * first served, as the per-link queues of ASTRA-sim's congestion-aware
 * analytical backend do; the transfers that start in the same instant come
 * together and share their turn fairly.  A transfer's part on link l is its
 * work there, w = ceil(b_l / C_l) ps for the b_l bytes it puts on a link of
 * capacity C_l.  The k parts that reach link l in one instant (a batch)
 * are served from
 *
 *   s = max(now, end of the link's previous batch)
 *
 * as processor sharing would serve parts that arrive together, part i
 * ending at
 *
 *   e_i = s + sum over the batch's parts j of min(w_j, w_i)
 *
 * (s + k w for k equal parts), and the batch ends at s + sum of w_j.  A
 * transfer has left when every link of its path has served its part, and
 * not before its cap allows:
 *
 *   D = max(now + bytes / cap, max over its links of e_i)
 *
 * and it is done at D plus its path's latency.  The links of a path serve a
 * transfer each in its own turn, not hop after hop (store-and-forward would
 * add up the hops' times on an idle path) nor all at once (a transfer
 * waiting for one link would hold the others idle): a transfer alone takes
 * exactly L + bytes / min C, a link never carries more than its capacity,
 * and it is never idle while a transfer waits for it.
 *
 * What a batch's transfers take is known at the end of its instant, and
 * never changes after: one event a transfer to say it has left, one an
 * instant to end the batch, and work in proportion to the links its
 * transfers cross; no rates are solved again.
 *
 * A striped transfer is one transfer over all its stripes' links (each link
 * serving the bytes its stripes put on it), as in the flow model, so its
 * stripes end together. */
#include "network/network.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A link's turns.  The batch fields are valid while epoch is the model's. */
typedef struct {
  WeftTime from;                /* ps: its batch's turn starts */
  WeftTime end;                 /* ps: its batch's turn ends (and the link
                                   is free from then on) */
  WeftTime work;                /* ps: the work of its batch's first part */
  uint64_t bytes;               /* the bytes of its batch */
  uint32_t epoch;               /* the batch it last served */
  uint32_t last;                /* its batch's last part, or WEFT_NONE */
  gboolean mixed;               /* its batch's parts differ in work */
} Turn;

/* A part's work on a link of mixed parts, and the part, being sorted. */
typedef struct {
  WeftTime work;
  uint32_t part;
} Work;

/* A transfer's part on one link, in the batch. */
typedef struct {
  uint32_t link;
  uint32_t prev;                /* the part before it on its link, or
                                   WEFT_NONE */
  WeftTime work;                /* ps; on a link of mixed parts, becomes
                                   its end */
} Part;

typedef struct {
  WeftNetwork base;
  Turn *turns;                  /* per link */
  Part *parts;                  /* the batch's, in the order they came */
  uint32_t n_parts, parts_cap;
  uint32_t *starts;             /* the batch's transfers: id, then how many
                                   of the parts are its */
  uint32_t n_starts, starts_cap;
  uint32_t *links;              /* the links the batch crosses */
  uint32_t n_links, links_cap;
  Work *works;                  /* a mixed link's works, being sorted */
  uint32_t works_cap;
  uint32_t epoch;               /* the batch, counted from 1 (0: no link's
                                   batch) */
  gboolean pending;             /* its end is scheduled */
} Turns;

static WeftNetwork *
turns_create (void)
{
  Turns *q = g_new0 (Turns, 1);

  q->epoch = 1;
  return &q->base;
}

static void
turns_destroy (WeftNetwork *net)
{
  Turns *q = (Turns *) net;

  g_free (q->turns);
  g_free (q->parts);
  g_free (q->starts);
  g_free (q->links);
  g_free (q->works);
  g_free (q);
}

/* The room an array of @cap elements grows to when it must hold @need. */
static inline uint32_t
grown (uint32_t cap, uint32_t need)
{
  return MAX (MAX (cap * 2, need), 64);
}

/* Transfer @data has left: it arrives one path latency on. */
static void
drained (WeftSim *sim, void *target, void *data)
{
  WeftNetwork *net = target;
  uint32_t id = GPOINTER_TO_UINT (data);

  (void) sim;
  weft_network_complete (net, id, net->transfers[id].latency);
}

/* Time in ps that @bytes take at @rate B/s, rounded up. */
static inline WeftTime
span_of (uint64_t bytes, double rate)
{
  return (WeftTime) ceil ((double) bytes * 1e12 / rate);
}

/* Works in increasing order, then parts in the order they came. */
static int
cmp_work (const void *a, const void *b)
{
  const Work *x = a, *y = b;

  if (x->work != y->work)
    return x->work < y->work ? -1 : 1;
  return (x->part > y->part) - (x->part < y->part);
}

/* The parts of link @turn's batch differ in work: each part's work becomes
 * its end, s plus the sum over the batch of min(w_j, w_i).  In order of
 * work, the parts of less work than one are served whole before it ends,
 * and it and the rest each its own work. */
static void
share_mixed (Turns *q, const Turn *turn)
{
  uint32_t n = 0;

  for (uint32_t p = turn->last; p != WEFT_NONE; p = q->parts[p].prev)
    {
      if (n == q->works_cap)
        {
          q->works_cap = grown (q->works_cap, n + 1);
          q->works = g_renew (Work, q->works, q->works_cap);
        }
      q->works[n++] = (Work) { q->parts[p].work, p };
    }
  qsort (q->works, n, sizeof (Work), cmp_work);
  WeftTime below = 0;           /* the work of the parts before */
  for (uint32_t i = 0; i < n;)
    {
      WeftTime w = q->works[i].work;
      WeftTime end = turn->from + below + (WeftTime) (n - i) * w;
      for (; i < n && q->works[i].work == w; i++)
        {
          q->parts[q->works[i].part].work = end;
          below += w;
        }
    }
}

/* The end of the instant: each link the batch crosses serves its parts,
 * and each transfer of the batch is woken when its last link has served
 * it.  The link statistics take each link's turn whole: it carries its
 * batch's bytes at its capacity from its start to its end. */
static void
end_batch (WeftSim *sim, void *target, void *data)
{
  Turns *q = target;
  WeftNetwork *net = &q->base;
  WeftTime now = weft_sim_now (sim);
  (void) data;

  for (uint32_t i = 0; i < q->n_links; i++)
    {
      uint32_t l = q->links[i];
      const Turn *turn = &q->turns[l];
      net->stats->links[l].busy += turn->end - turn->from;
      weft_link_stats_spread (net->stats, l, turn->from, turn->end,
                              (double) turn->bytes);
      if (turn->mixed)
        share_mixed (q, turn);
    }
  const Part *part = q->parts;
  for (uint32_t i = 0; i < q->n_starts; i += 2)
    {
      uint32_t id = q->starts[i];
      const WeftTransfer *t = &net->transfers[id];
      WeftTime end = t->cap > 0 ? now + span_of (t->bytes, t->cap) : now;
      for (uint32_t k = 0; k < q->starts[i + 1]; k++, part++)
        {
          const Turn *turn = &q->turns[part->link];
          end = MAX (end, turn->mixed ? part->work : turn->end);
        }
      weft_sim_schedule_at (sim, end, drained, net, GUINT_TO_POINTER (id));
    }
  q->n_parts = q->n_starts = q->n_links = 0;
  q->pending = FALSE;
  if (++q->epoch == 0)
    {
      /* Counted round: no link's last batch may pass for a new one. */
      for (uint32_t l = 0; l < net->topo->n_links; l++)
        q->turns[l].epoch = 0;
      q->epoch = 1;
    }
}

/* Join transfer @id to this instant's batch on each link of its path
 * (net->starting: the links, and a striped one's bytes per link, maybe
 * unaligned), counting the bytes each will carry; the batch's end decides
 * when it leaves. */
static void
turns_start (WeftNetwork *net, uint32_t id)
{
  Turns *q = (Turns *) net;
  const WeftTransfer *t = &net->transfers[id];
  uint32_t n = t->path_len;
  const char *links = (const char *) net->starting.links;
  const char *link_bytes = net->starting.link_bytes;

  if (q->turns == NULL)
    q->turns = g_new0 (Turn, MAX (net->topo->n_links, 1));
  if (q->n_parts + n > q->parts_cap)
    {
      q->parts_cap = grown (q->parts_cap, q->n_parts + n);
      q->parts = g_renew (Part, q->parts, q->parts_cap);
    }
  if (q->n_links + n > q->links_cap)
    {
      q->links_cap = grown (q->links_cap, q->n_links + n);
      q->links = g_renew (uint32_t, q->links, q->links_cap);
    }
  if (q->n_starts + 2 > q->starts_cap)
    {
      q->starts_cap = grown (q->starts_cap, q->n_starts + 2);
      q->starts = g_renew (uint32_t, q->starts, q->starts_cap);
    }
  WeftTime now = weft_sim_now (net->sim);
  for (uint32_t i = 0; i < n; i++)
    {
      uint32_t l;
      uint64_t bytes = t->bytes;
      memcpy (&l, links + i * sizeof l, sizeof l);
      if (t->striped)
        memcpy (&bytes, link_bytes + i * sizeof bytes, sizeof bytes);
      WeftTime work = span_of (bytes, net->capacity[l]);
      Turn *turn = &q->turns[l];
      if (turn->epoch != q->epoch)
        {
          turn->epoch = q->epoch;
          turn->from = turn->end = MAX (now, turn->end);
          turn->work = work;
          turn->bytes = 0;
          turn->last = WEFT_NONE;
          turn->mixed = FALSE;
          q->links[q->n_links++] = l;
        }
      turn->mixed |= turn->work != work;
      q->parts[q->n_parts] = (Part) { l, turn->last, work };
      turn->last = q->n_parts++;
      turn->end += work;
      turn->bytes += bytes;
      weft_link_stats_count (net->stats, l, bytes);
    }
  q->starts[q->n_starts++] = id;
  q->starts[q->n_starts++] = n;
  if (!q->pending)
    {
      q->pending = TRUE;
      weft_sim_schedule (net->sim, 0, end_batch, q, NULL);
    }
}

const WeftNetworkClass weft_network_analytical_class = {
  .name = "analytical",
  .create = turns_create,
  .start = turns_start,
  .destroy = turns_destroy,
  .whole_stripes = TRUE,
  .counts_bytes = TRUE,
};
