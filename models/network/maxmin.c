/* weft: the max-min fair rate solver (see maxmin.h).
 *
 * Progressive filling as a sequence of events: link j fills when the
 * common level reaches residual_j / weight_j (what its frozen flows leave,
 * over the shares of its rising ones), flow i when it reaches cap_i.  The
 * least event freezes its flows; each frozen flow takes its share of the
 * level out of its links, whose levels can only rise.  A small problem
 * finds each event by looking at every link and cap (most freeze all
 * their flows in a round or two); a large one keeps them in a heap of one
 * entry per link, not one per change: an entry found below its link's
 * level when it comes to the top is put back at the level of now, in the
 * top's place (one still at it is current, whatever froze since).  Both
 * take the least (level, key), a total order, so they freeze the same
 * flows in the same order, and so does any split of the flows into
 * problems that keeps those sharing a link together. */
#include "network/maxmin.h"

#include <math.h>

/* An event of filling: a link fills, or a flow reaches its cap, when the
 * common level reaches `level`. */
struct _WeftMaxminEvent {
  double level;                 /* B/s */
  uint32_t key;                 /* a link's index, or a flow's | FLOW_BIT:
                                   a link comes before a flow at one level */
};

typedef struct _WeftMaxminEvent Event;

#define FLOW_BIT 0x80000000u
#define NO_KEY UINT32_MAX

/* Problems of at most this many links find each event by a scan rather
 * than a heap: below it, looking at every link costs less than keeping
 * the heap. */
#define SCAN_LINKS 64

WeftMaxmin *
weft_maxmin_new (void)
{
  WeftMaxmin *m = g_new0 (WeftMaxmin, 1);

  weft_maxmin_reserve (m, 1, 1, 1);
  return m;
}

void
weft_maxmin_free (WeftMaxmin *m)
{
  if (m == NULL)
    return;
  g_free (m->links);
  g_free (m->cap);
  g_free (m->held);
  g_free (m->rate);
  g_free (m->first);
  g_free (m->hop_link);
  g_free (m->hop_share);
  g_free (m->members);
  g_free (m->capped);
  g_free (m->frozen);
  g_free (m->heap);
  g_free (m);
}

void
weft_maxmin_reset (WeftMaxmin *m)
{
  m->n_links = m->n_flows = m->n_hops = 0;
  m->first[0] = 0;
}

/* Room for @need, from @have: at least twice as much, as arrays grow. */
static uint32_t
grown (uint32_t have, uint32_t need)
{
  g_assert (need < G_MAXUINT32 / 2);
  return MAX (need, MAX (have * 2, 64));
}

void
weft_maxmin_reserve (WeftMaxmin *m, uint32_t n_links, uint32_t n_flows,
                     uint32_t n_hops)
{
  if (n_links > m->links_room)
    {
      m->links_room = grown (m->links_room, n_links);
      m->links = g_renew (WeftMaxminLink, m->links, m->links_room + 1);
    }
  if (n_flows > m->flows_room)
    {
      uint32_t room = m->flows_room = grown (m->flows_room, n_flows);
      m->cap = g_renew (double, m->cap, room);
      m->held = g_renew (double, m->held, room);
      m->rate = g_renew (double, m->rate, room);
      m->first = g_renew (uint32_t, m->first, room + 1);
      m->capped = g_renew (uint32_t, m->capped, room);
      m->frozen = g_renew (uint8_t, m->frozen, room);
    }
  if (n_hops > m->hops_room)
    {
      /* A link's members are its hops: as many in all. */
      uint32_t room = m->hops_room = grown (m->hops_room, n_hops);
      m->hop_link = g_renew (uint32_t, m->hop_link, room);
      m->hop_share = g_renew (double, m->hop_share, room);
      m->members = g_renew (uint32_t, m->members, room);
    }
}

/* ---- a min-heap of (level, key) ---- */

static inline gboolean
before (const Event *a, const Event *b)
{
  return a->level < b->level || (a->level == b->level && a->key < b->key);
}

static void
sift_down (Event *h, uint32_t n, uint32_t i, Event item)
{
  for (;;)
    {
      uint32_t c = 2 * i + 1;
      if (c >= n)
        break;
      if (c + 1 < n && before (&h[c + 1], &h[c]))
        c++;
      if (!before (&h[c], &item))
        break;
      h[i] = h[c];
      i = c;
    }
  h[i] = item;
}

/* Take the top off: its hole goes down along the lesser children to the
 * bottom, and the last entry rises into it from there.  The last entry
 * mostly belongs near the bottom, and this asks one comparison a level
 * where sifting it down from the top asks two. */
static void
pop (Event *h, uint32_t *heap_n)
{
  uint32_t n = --*heap_n, i = 0;

  if (n == 0)
    return;
  for (;;)
    {
      uint32_t c = 2 * i + 1;
      if (c >= n)
        break;
      if (c + 1 < n && before (&h[c + 1], &h[c]))
        c++;
      h[i] = h[c];
      i = c;
    }
  Event last = h[n];
  while (i > 0 && before (&last, &h[(i - 1) / 2]))
    {
      h[i] = h[(i - 1) / 2];
      i = (i - 1) / 2;
    }
  h[i] = last;
}

/* ---- filling ---- */

/* Before the first event: the flows' held rates taken out of their links;
 * every link's rising flows, their shares and the level it fills at; the
 * flows of each link in members[], bucketed; the capped flows; with
 * @heap, every event in the heap.  (The arrays are read through locals:
 * a store to a link could otherwise be taken to change them.) */
static void
begin (WeftMaxmin *m, gboolean heap)
{
  WeftMaxminLink *links = m->links;
  const uint32_t *hop_link = m->hop_link, *first = m->first;
  const double *hop_share = m->hop_share, *cap = m->cap, *held = m->held;
  uint32_t *members = m->members, *capped = m->capped;
  uint32_t n_links = m->n_links, n_flows = m->n_flows;
  uint32_t n_capped = 0;

  for (uint32_t j = 0; j < n_links; j++)
    {
      links[j].rising = 0;
      links[j].weight = 0;
    }
  for (uint32_t i = 0, h = 0; i < n_flows; i++)
    for (uint32_t end = first[i + 1]; h < end; h++)
      {
        WeftMaxminLink *l = &links[hop_link[h]];
        l->residual += held[i] * hop_share[h];
        l->load -= held[i] * hop_share[h];
        l->rising++;
        l->weight += hop_share[h];
      }

  uint32_t total = 0;
  for (uint32_t j = 0; j < n_links; j++)
    {
      links[j].start = links[j].fill = total;
      total += links[j].rising;
    }
  links[n_links].start = total;
  for (uint32_t i = 0, h = 0; i < n_flows; i++)
    {
      for (uint32_t end = first[i + 1]; h < end; h++)
        members[links[hop_link[h]].fill++] = i;
      m->rate[i] = 0;
      m->frozen[i] = FALSE;
      if (cap[i] > 0)
        capped[n_capped++] = i;
    }
  m->n_capped = n_capped;

  m->heap_n = 0;
  if (heap && m->heap_room < n_links + n_capped)
    {
      m->heap_room = grown (m->heap_room, n_links + n_capped);
      m->heap = g_renew (Event, m->heap, m->heap_room);
    }
  Event *events = m->heap;
  uint32_t n_events = 0;
  for (uint32_t j = 0; j < n_links; j++)
    if (links[j].rising > 0)
      {
        links[j].level = MAX (links[j].residual, 0) / links[j].weight;
        if (heap)
          events[n_events++] = (Event) { links[j].level, j };
      }
  if (heap)
    {
      for (uint32_t c = 0; c < n_capped; c++)
        events[n_events++] = (Event) { cap[capped[c]], capped[c] | FLOW_BIT };
      for (uint32_t i = n_events / 2; i-- > 0;)
        sift_down (events, n_events, i, events[i]);
      m->heap_n = n_events;
    }
}

/* The least event by looking at every link and cap: FALSE if none is
 * left. */
static inline gboolean
next_by_scan (const WeftMaxmin *m, Event *next)
{
  const WeftMaxminLink *links = m->links;
  const uint32_t *capped = m->capped;
  const uint8_t *frozen = m->frozen;
  const double *cap = m->cap;
  Event top = { INFINITY, NO_KEY };

  for (uint32_t j = 0, n = m->n_links; j < n; j++)
    if (links[j].rising > 0
        && (top.key == NO_KEY || links[j].level < top.level))
      top = (Event) { links[j].level, j };
  for (uint32_t c = 0, n = m->n_capped; c < n; c++)
    {
      uint32_t i = capped[c];
      if (!frozen[i] && (top.key == NO_KEY || cap[i] < top.level))
        top = (Event) { cap[i], i | FLOW_BIT };
    }
  *next = top;
  return top.key != NO_KEY;
}

/* The least event from the heap, taken off it: FALSE if none is left. */
static inline gboolean
next_by_heap (WeftMaxmin *m, Event *next)
{
  while (m->heap_n > 0)
    {
      Event top = m->heap[0];
      const WeftMaxminLink *l = top.key & FLOW_BIT ? NULL
                                                   : &m->links[top.key];
      if (l != NULL && l->rising > 0 && l->level != top.level)
        {
          /* Its level rose since this entry: it goes back at the level it
           * has now, in the top's place. */
          sift_down (m->heap, m->heap_n, 0, (Event) { l->level, top.key });
          continue;
        }
      pop (m->heap, &m->heap_n);
      if (l != NULL && l->rising == 0)
        continue;               /* its flows all froze elsewhere */
      *next = top;
      return TRUE;
    }
  return FALSE;
}

/* Freeze the flows of event @top at its level: their links' levels rise.
 * Returns how many froze (a flow frozen before is left as it is). */
static inline uint32_t
freeze (WeftMaxmin *m, Event top)
{
  WeftMaxminLink *links = m->links;
  const uint32_t *hop_link = m->hop_link, *first = m->first;
  const double *hop_share = m->hop_share;
  uint8_t *frozen = m->frozen;
  double *rate = m->rate;
  double level = top.level;
  uint32_t flow = top.key & ~FLOW_BIT, n, froze = 0;
  const uint32_t *which;

  if (top.key & FLOW_BIT)
    {
      which = &flow;
      n = 1;
    }
  else
    {
      which = &m->members[links[top.key].start];
      n = links[top.key + 1].start - links[top.key].start;
    }
  for (uint32_t k = 0; k < n; k++)
    {
      uint32_t i = which[k];
      if (frozen[i])
        continue;
      frozen[i] = TRUE;
      rate[i] = level;
      froze++;
      for (uint32_t h = first[i], end = first[i + 1]; h < end; h++)
        {
          WeftMaxminLink *l = &links[hop_link[h]];
          double share = hop_share[h];
          l->residual -= level * share;
          l->rising--;
          l->weight -= share;
          l->load += level * share;
          /* Levels only rise as flows freeze below them; rounding is not
           * let to lower one, so a heap entry is never above its link's
           * level and the least current entry is the least level. */
          if (l->rising > 0)
            l->level = MAX (l->level, MAX (l->residual, 0)
                                          / MAX (l->weight, 1e-12));
        }
    }
  return froze;
}

void
weft_maxmin_solve (WeftMaxmin *m)
{
  gboolean heap = m->n_links > SCAN_LINKS;
  uint32_t left = m->n_flows;
  Event top;

  begin (m, heap);
  while (left > 0 && (heap ? next_by_heap (m, &top) : next_by_scan (m, &top)))
    left -= freeze (m, top);
  g_assert (left == 0);
}
