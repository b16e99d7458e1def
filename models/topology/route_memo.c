/* weft: routes remembered.  See route_memo.h. */
#include "topology/route_memo.h"

#include <string.h>

#include "rng.h"

#define START_SLOTS (1u << 12)
#define MIN_SLOTS (1u << 16)
#define MAX_SLOTS (1u << 22)
#define SLOT_LINKS 14           /* the longest route a slot holds; a
                                   longer one is routed every time */

/* A route may sit in either slot of the pair it hashes to, and takes the
 * one used less recently: two choices keep a route that is asked for
 * often from being pushed out by one that collides with it once. */
typedef struct {
  uint32_t a, b, c;
  uint32_t kind;                /* WeftMemoKind; 0: empty */
  uint32_t len;
  uint64_t used;                /* when last put or found */
  uint32_t links[SLOT_LINKS];
} Slot;

struct _WeftRouteMemo {
  Slot *slots;
  uint32_t n, max;              /* slots now, and at most */
  uint32_t filled;              /* slots holding a route */
  uint64_t clock;
};

WeftRouteMemo *
weft_route_memo_new (uint32_t gpus)
{
  WeftRouteMemo *m = g_new0 (WeftRouteMemo, 1);

  m->max = MIN_SLOTS;
  while (m->max < MAX_SLOTS && m->max < 4 * (uint64_t) gpus)
    m->max *= 2;
  m->n = START_SLOTS;
  m->slots = g_new0 (Slot, m->n);
  return m;
}

void
weft_route_memo_free (WeftRouteMemo *m)
{
  if (m == NULL)
    return;
  g_free (m->slots);
  g_free (m);
}

size_t
weft_route_memo_bound (uint32_t gpus)
{
  size_t max = MIN_SLOTS;

  while (max < MAX_SLOTS && max < 4 * (uint64_t) gpus)
    max *= 2;
  return max * sizeof (Slot);
}

size_t
weft_route_memo_memory (const WeftRouteMemo *m)
{
  return m ? m->n * sizeof (Slot) : 0;
}

/* The two slots (a pair) route (kind, a, b, c) may sit in. */
static Slot *
pair_of (WeftRouteMemo *m, uint32_t kind, uint32_t a, uint32_t b, uint32_t c)
{
  uint64_t h = weft_mix64 (((uint64_t) a << 32 | b) ^ weft_mix64 (
                               (uint64_t) c << 8 | kind));
  return &m->slots[h & (m->n - 2)];
}

static inline gboolean
holds (const Slot *s, uint32_t kind, uint32_t a, uint32_t b, uint32_t c)
{
  return s->kind == kind && s->a == a && s->b == b && s->c == c;
}

gboolean
weft_route_memo_get (WeftRouteMemo *m, WeftMemoKind kind, uint32_t a,
                     uint32_t b, uint32_t c, GArray *links)
{
  if (m == NULL)
    return FALSE;
  Slot *s = pair_of (m, kind, a, b, c);
  if (!holds (s, kind, a, b, c) && !holds (++s, kind, a, b, c))
    return FALSE;
  s->used = ++m->clock;
  g_array_set_size (links, 0);
  g_array_append_vals (links, s->links, s->len);
  return TRUE;
}

/* The less recently used slot of the pair of (kind, a, b, c), to fill. */
static Slot *
slot_to_fill (WeftRouteMemo *m, uint32_t kind, uint32_t a, uint32_t b,
              uint32_t c)
{
  Slot *s = pair_of (m, kind, a, b, c);
  if (s[1].used < s[0].used)
    s++;
  m->filled += s->kind == 0;
  return s;
}

/* Twice the slots, the routes held put again. */
static void
grow (WeftRouteMemo *m)
{
  Slot *old = m->slots;
  uint32_t n = m->n;

  m->n *= 2;
  m->slots = g_new0 (Slot, m->n);
  m->filled = 0;
  for (uint32_t i = 0; i < n; i++)
    if (old[i].kind != 0)
      *slot_to_fill (m, old[i].kind, old[i].a, old[i].b, old[i].c) = old[i];
  g_free (old);
}

void
weft_route_memo_put (WeftRouteMemo *m, WeftMemoKind kind, uint32_t a,
                     uint32_t b, uint32_t c, const GArray *links)
{
  if (m == NULL || links->len > SLOT_LINKS)
    return;
  if (m->filled >= m->n / 2 && m->n < m->max)
    grow (m);
  Slot *s = slot_to_fill (m, kind, a, b, c);
  *s = (Slot) { a, b, c, kind, links->len, ++m->clock, { 0 } };
  memcpy (s->links, links->data, links->len * sizeof (uint32_t));
}
