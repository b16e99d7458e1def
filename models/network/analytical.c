/* weft: the analytical fidelity, congestion aware: each link shared fairly,
 * on its own.
 *
 * Each directed link shares its capacity equally among the transfers on it
 * at every moment (processor sharing), and the links are independent: a
 * link serves each of its n transfers at C_l / n whatever the other links
 * of their paths do.  A transfer's work on link l is the time its b_l
 * bytes there take at the link's full capacity, w = ceil(b_l / C_l) ps; it
 * has left when every link of its path has served it that work, and not
 * before its cap allows, and it is done one path latency later.
 *
 * Each link keeps a virtual time, as fair queuing does: the service each
 * of its transfers has had since the link was last idle,
 *
 *   V(t) = integral of dt / n(t)
 *
 * A part of work w that reaches the link at t0 is served when V reaches
 * F = V(t0) + w, so the link serves its parts in order of F, and a change
 * of n (a part coming or going) moves no F: it only changes how fast V
 * rises.  The next part served is the one of least F, at
 *
 *   now + (F - V(now)) n
 *
 * and the link keeps one wake-up, for then.  A transfer costs, per link, a
 * push and a pop of a small heap; a link, one event per instant in which
 * some of its parts are served; the model, one event per instant in which
 * transfers start, to set the wake-ups of the links they joined.  No rates
 * are solved: sharing along a path is not max-min (docs/network-models.md
 * says where that differs from the flow model).
 *
 * Virtual time is kept in whole 2^-FRACTION ps, rounded down as it rises
 * and a wake-up rounded up to the picosecond, so a link never wakes before
 * its part is served, and runs are the same to the picosecond.  A
 * transfer alone takes exactly L + bytes / min C; k equal ones started
 * together over one link each take k works.
 *
 * A striped transfer is one transfer over all its stripes' links (each link
 * serving the bytes its stripes put on it), as in the flow model. */
#include "network/network.h"

#include <math.h>
#include <string.h>

/* Virtual time's fixed point: 2^-10 ps.  A part's work must stay below
 * 2^52 ps (75 minutes of one link) so that F fits in 62 bits; virtual
 * time is rebased before it passes 2^62. */
#define FRACTION 10
#define WORK_MAX ((WeftTime) 1 << 52)
#define VTIME_MAX ((uint64_t) 1 << 62)

/* A transfer's part on a link. */
typedef struct {
  uint64_t finish;              /* the link's virtual time once it has
                                   served it */
  uint32_t transfer;
} Part;

/* A directed link.  One cache line: at scale each is a miss. */
typedef struct {
  _Alignas (64) uint64_t vtime; /* 2^-FRACTION ps of service each of its
                                   parts has had, counted from its last
                                   idle moment (or rebase) */
  WeftTime updated;             /* ps: when vtime was brought up */
  WeftTime since;               /* ps: its busy period began */
  Part *parts;                  /* a min-heap by (finish, transfer) */
  uint32_t n, cap;
  WeftPoolTimer timer;          /* its next part served */
  uint32_t dirty;               /* in the list of links to wake anew */
} Lane;

/* A transfer in progress. */
typedef struct {
  WeftTime until;               /* ps: its cap lets it leave no sooner */
  uint32_t left;                /* links that have yet to serve it */
} Pending;

typedef struct {
  WeftNetwork base;
  Lane *lanes;                  /* per link; never moves (the timers'
                                   pool) */
  uint32_t timers;              /* the lanes' pool of wake-ups */
  Pending *pending;             /* by transfer id */
  uint32_t pending_cap;
  uint32_t *dirty;              /* links joined this instant */
  uint32_t n_dirty, dirty_cap;
  gboolean settling;            /* settle() is scheduled */
  double *was;                  /* per link gone down: its rate before, in
                                   which its parts' work is still counted;
                                   NULL until one goes */
} Sharing;

G_STATIC_ASSERT (sizeof (Lane) == 64);

static WeftNetwork *
sharing_create (void)
{
  Sharing *s = g_new0 (Sharing, 1);

  return &s->base;
}

static void
sharing_destroy (WeftNetwork *net)
{
  Sharing *s = (Sharing *) net;

  if (s->lanes)
    {
      weft_sim_pool_place (net->sim, s->timers, NULL, 0, 0);
      for (uint32_t l = 0; l < net->n_links; l++)
        g_free (s->lanes[l].parts);
      g_aligned_free (s->lanes);
    }
  g_free (s->pending);
  g_free (s->dirty);
  g_free (s->was);
  g_free (s);
}

/* ---- a link's heap of parts ---- */

static inline gboolean
before (const Part *a, const Part *b)
{
  return a->finish < b->finish
         || (a->finish == b->finish && a->transfer < b->transfer);
}

static void
heap_push (Lane *lane, Part part)
{
  if (lane->n == lane->cap)
    {
      lane->cap = MAX (lane->cap * 2, 4);
      lane->parts = g_renew (Part, lane->parts, lane->cap);
    }
  uint32_t i = lane->n++;
  while (i > 0)
    {
      uint32_t up = (i - 1) / 2;
      if (!before (&part, &lane->parts[up]))
        break;
      lane->parts[i] = lane->parts[up];
      i = up;
    }
  lane->parts[i] = part;
}

/* Take part @k out of @lane's heap. */
static inline void
heap_remove (Lane *lane, uint32_t k)
{
  Part last = lane->parts[--lane->n];
  uint32_t i = k;

  if (k == lane->n)
    return;
  while (i > 0 && before (&last, &lane->parts[(i - 1) / 2]))
    {
      lane->parts[i] = lane->parts[(i - 1) / 2];
      i = (i - 1) / 2;
    }
  for (;;)
    {
      uint32_t c = 2 * i + 1;
      if (c >= lane->n)
        break;
      if (c + 1 < lane->n && before (&lane->parts[c + 1], &lane->parts[c]))
        c++;
      if (!before (&lane->parts[c], &last))
        break;
      lane->parts[i] = lane->parts[c];
      i = c;
    }
  lane->parts[i] = last;
}

static inline void
heap_pop (Lane *lane)
{
  heap_remove (lane, 0);
}

/* ---- virtual time ---- */

/* Bring @lane's virtual time up to @now: each of its n parts has been
 * served (now - updated) / n, rounded down to the fixed point (one
 * division, or past 2^53 ps dt / n and the rest apart, which cannot
 * overflow). */
static inline void
advance (Lane *lane, WeftTime now)
{
  WeftTime dt = now - lane->updated;

  if (lane->n == 0 || dt == 0)
    ;
  else if (G_LIKELY (dt < ((WeftTime) 1 << (63 - FRACTION))))
    lane->vtime += lane->n == 1 ? dt << FRACTION
                                : (dt << FRACTION) / lane->n;
  else
    lane->vtime += ((dt / lane->n) << FRACTION)
                   + (((dt % lane->n) << FRACTION) / lane->n);
  lane->updated = now;
  if (G_UNLIKELY (lane->vtime >= VTIME_MAX))
    {
      /* A busy period of over an hour and a quarter: count from here.
       * Every part's F is at least V less a wake-up's rounding. */
      uint64_t base = lane->vtime;
      for (uint32_t i = 0; i < lane->n; i++)
        base = MIN (base, lane->parts[i].finish);
      for (uint32_t i = 0; i < lane->n; i++)
        lane->parts[i].finish -= base;
      lane->vtime -= base;
    }
}

/* Picoseconds until @lane, brought up to now, has served its first part:
 * (F - V) n, rounded up. */
static inline WeftTime
until_served (const Lane *lane)
{
  uint64_t f = lane->parts[0].finish;
  uint64_t left = f > lane->vtime ? f - lane->vtime : 0;
  uint64_t whole = left >> FRACTION, rest = left & ((1u << FRACTION) - 1);

  return whole * lane->n
         + ((rest * lane->n + (1u << FRACTION) - 1) >> FRACTION);
}

/* Time in ps that @bytes take at @rate B/s, rounded up. */
static inline WeftTime
span_of (uint64_t bytes, double rate)
{
  return (WeftTime) ceil ((double) bytes * 1e12 / rate);
}

/* ---- serving ---- */

/* Transfer @data has left: it arrives one path latency on. */
static void
drained (WeftSim *sim, void *target, void *data)
{
  WeftNetwork *net = target;
  uint32_t id = GPOINTER_TO_UINT (data);

  (void) sim;
  weft_network_complete (net, id, net->transfers[id].latency);
}

/* Link @l's busy period so far into its statistics at @rate: it goes idle
 * now, its rate changes now, or the run stops with it busy. */
static void
lane_flush (Sharing *s, uint32_t l, WeftTime now, double rate)
{
  WeftNetwork *net = &s->base;
  Lane *lane = &s->lanes[l];

  if (lane->since >= now)
    return;
  net->stats->links[l].busy += now - lane->since;
  weft_link_stats_spread (net->stats, l, lane->since, now,
                          (double) (now - lane->since) * rate * 1e-12);
  lane->since = now;
}

/* Link @l has been busy since lane->since and is idle from @now: it
 * carried data at its capacity all along, which is what its bins get (the
 * bins are scaled to the bytes counted). */
static void
lane_idle (Sharing *s, uint32_t l, WeftTime now)
{
  lane_flush (s, l, now, s->base.capacity[l]);
  s->lanes[l].vtime = 0;
}

/* Link @data's first part is served: it and any served with it leave the
 * link, and a transfer every link has served leaves the network (at once,
 * or when its cap allows). */
static void
served (WeftSim *sim, void *target, void *data)
{
  Sharing *s = target;
  WeftNetwork *net = &s->base;
  uint32_t l = GPOINTER_TO_UINT (data);
  Lane *lane = &s->lanes[l];
  WeftTime now = weft_sim_now (sim);

  advance (lane, now);
  g_assert (lane->n > 0 && lane->parts[0].finish <= lane->vtime);
  do
    {
      uint32_t id = lane->parts[0].transfer;
      heap_pop (lane);
      Pending *p = &s->pending[id];
      if (--p->left > 0)
        continue;
      if (p->until > now)
        weft_sim_schedule_at (sim, p->until, drained, net,
                              GUINT_TO_POINTER (id));
      else
        weft_network_complete (net, id, net->transfers[id].latency);
    }
  while (lane->n > 0 && lane->parts[0].finish <= lane->vtime);
  if (lane->n == 0)
    lane_idle (s, l, now);
  else
    weft_sim_pool_schedule (sim, s->timers, l, until_served (lane));
}

/* The end of an instant in which transfers started: each link they joined
 * serves its parts more slowly from now, and wakes when its first is
 * served.  Done once an instant, not once a part: in a collective's
 * lockstep instants a link takes several parts at once. */
static void
settle (WeftSim *sim, void *target, void *data)
{
  Sharing *s = target;
  (void) data;

  for (uint32_t i = 0; i < s->n_dirty; i++)
    {
      uint32_t l = s->dirty[i];
      Lane *lane = &s->lanes[l];
      lane->dirty = 0;
      if (lane->n == 0)
        continue;               /* its parts were withdrawn (a fault) */
      g_assert (lane->updated == weft_sim_now (sim));
      weft_sim_pool_schedule (sim, s->timers, l, until_served (lane));
    }
  s->n_dirty = 0;
  s->settling = FALSE;
}

static void
lanes_init (Sharing *s)
{
  WeftNetwork *net = &s->base;
  uint32_t n = MAX (net->n_links, 1);

  s->lanes = g_aligned_alloc0 (n, sizeof (Lane), 64);
  s->timers = weft_sim_pool_new (net->sim, served, s);
  weft_sim_pool_place (net->sim, s->timers, s->lanes, sizeof (Lane),
                       G_STRUCT_OFFSET (Lane, timer));
  s->dirty_cap = MIN (n, 1024);
  s->dirty = g_new (uint32_t, s->dirty_cap);
}

/* Transfer @id joins each link of its path (net->starting: the links, and
 * a striped one's bytes per link, maybe unaligned) as a part of its work
 * there, counting the bytes each will carry. */
static void
sharing_start (WeftNetwork *net, uint32_t id)
{
  Sharing *s = (Sharing *) net;
  const WeftTransfer *t = &net->transfers[id];
  uint32_t n = t->path_len;
  const char *links = (const char *) net->starting.links;
  const char *link_bytes = net->starting.link_bytes;
  WeftTime now = weft_sim_now (net->sim);

  if (s->lanes == NULL)
    lanes_init (s);
  if (id >= s->pending_cap)
    {
      s->pending_cap = MAX (net->transfers_cap, id + 1);
      s->pending = g_renew (Pending, s->pending, s->pending_cap);
    }
  s->pending[id] = (Pending) {
    t->cap > 0 ? now + span_of (t->bytes, t->cap) : 0, n
  };
  for (uint32_t i = 0; i < n; i++)
    {
      uint32_t l;
      uint64_t bytes = t->bytes;
      memcpy (&l, links + i * sizeof l, sizeof l);
      if (t->striped)
        memcpy (&bytes, link_bytes + i * sizeof bytes, sizeof bytes);
      WeftTime work = span_of (bytes, net->capacity[l]);
      g_assert (work < WORK_MAX);
      Lane *lane = &s->lanes[l];
      if (lane->n == 0)
        {
          lane->vtime = 0;
          lane->updated = lane->since = now;
        }
      else
        advance (lane, now);
      heap_push (lane, (Part) { lane->vtime + (work << FRACTION), id });
      weft_link_stats_count (net->stats, l, bytes);
      if (!lane->dirty)
        {
          if (s->n_dirty == s->dirty_cap)
            {
              s->dirty_cap *= 2;
              s->dirty = g_renew (uint32_t, s->dirty, s->dirty_cap);
            }
          lane->dirty = 1;
          s->dirty[s->n_dirty++] = l;
        }
    }
  if (n == 0)
    {
      /* No link to wait for (routes have at least one): its cap alone. */
      weft_sim_schedule_at (net->sim, MAX (now, s->pending[id].until),
                            drained, net, GUINT_TO_POINTER (id));
      return;
    }
  if (!s->settling)
    {
      s->settling = TRUE;
      weft_sim_schedule (net->sim, 0, settle, s, NULL);
    }
}

/* Link @l runs at a new rate from now: what its parts have left of their
 * work takes that much longer or shorter (a link gone down keeps its
 * parts as they are until they are withdrawn). */
static void
sharing_relink (WeftNetwork *net, uint32_t l, double old_capacity)
{
  Sharing *s = (Sharing *) net;
  WeftTime now = weft_sim_now (net->sim);
  double rate = net->capacity[l];

  if (s->lanes == NULL || s->lanes[l].n == 0)
    return;
  Lane *lane = &s->lanes[l];
  advance (lane, now);
  lane_flush (s, l, now, old_capacity);
  if (rate == 0)
    {
      if (s->was == NULL)
        s->was = g_new0 (double, MAX (net->n_links, 1));
      s->was[l] = old_capacity;
      return;
    }
  double scale = old_capacity / rate;
  for (uint32_t i = 0; i < lane->n; i++)
    {
      Part *part = &lane->parts[i];
      uint64_t left = part->finish > lane->vtime ? part->finish - lane->vtime
                                                 : 0;
      part->finish = lane->vtime + (uint64_t) ceil ((double) left * scale);
    }
  if (!lane->dirty)
    weft_sim_pool_schedule (net->sim, s->timers, l, until_served (lane));
}

/* Its parts come off every link: what the least served of them has left
 * is what it has left to deliver. */
static uint64_t
sharing_withdraw (WeftNetwork *net, uint32_t id, gboolean lost, gboolean *keeps)
{
  Sharing *s = (Sharing *) net;
  const WeftTransfer *t = &net->transfers[id];
  WeftTime now = weft_sim_now (net->sim);
  double rest = 0;

  (void) lost;                  /* a fluid loses nothing */
  *keeps = FALSE;
  if (s->pending[id].left == 0)
    return 0;                   /* served everywhere: its cap holds it */
  for (uint32_t i = 0; i < t->path_len; i++)
    {
      uint32_t l = t->path[i], k;
      Lane *lane = &s->lanes[l];
      for (k = 0; k < lane->n && lane->parts[k].transfer != id; k++)
        ;
      if (k == lane->n)
        continue;               /* this link has served it */
      advance (lane, now);
      uint64_t left = lane->parts[k].finish > lane->vtime
                          ? lane->parts[k].finish - lane->vtime
                          : 0;
      double rate = net->capacity[l] > 0 ? net->capacity[l] : s->was[l];
      double bytes = (double) (t->striped ? t->link_bytes[i] : t->bytes);
      double gone = MIN ((double) left / (1u << FRACTION) * rate * 1e-12,
                         bytes);
      if (bytes > 0)
        rest = MAX (rest, gone / bytes);
      net->stats->links[l].bytes -= MIN ((uint64_t) llround (gone),
                                         net->stats->links[l].bytes);
      heap_remove (lane, k);
      if (lane->n == 0)
        {
          lane_flush (s, l, now, rate);
          lane->vtime = 0;
          weft_sim_pool_cancel (net->sim, s->timers, l);
        }
      else if (!lane->dirty)
        weft_sim_pool_schedule (net->sim, s->timers, l, until_served (lane));
    }
  s->pending[id].left = 0;
  weft_network_release (net, id);
  /* Taken off, it must be sent again, if only a byte. */
  return CLAMP ((uint64_t) ceil ((double) t->bytes * rest), 1, t->bytes);
}

/* Bring the statistics up to now for a run stopped with links still busy:
 * what they carried so far. */
static void
sharing_flush (WeftNetwork *net)
{
  Sharing *s = (Sharing *) net;
  WeftTime now = weft_sim_now (net->sim);

  if (s->lanes == NULL)
    return;
  for (uint32_t l = 0; l < net->n_links; l++)
    if (s->lanes[l].n > 0)
      lane_flush (s, l, now, net->capacity[l]);
}

const WeftNetworkClass weft_network_analytical_class = {
  .name = "analytical",
  .create = sharing_create,
  .start = sharing_start,
  .destroy = sharing_destroy,
  .flush = sharing_flush,
  .relink = sharing_relink,
  .withdraw = sharing_withdraw,
  .whole_stripes = TRUE,
  .counts_bytes = TRUE,
  .link_state = sizeof (Lane),
  .transfer_state = sizeof (Pending),
  /* Its part in each link's heap, which grows by doubling. */
  .path_state = 2 * sizeof (Part),
};
