/* weft: the discrete-event engine.
 *
 * Pending events live in a pool of slots (grown by doubling, never one malloc
 * per event).  The queue is a 4-ary min-heap of 16-byte entries (slot, seq,
 * time), laid out so that the four children of a node share one cache
 * line; ties in time are broken by the insertion sequence, kept in the
 * entry.  An entry is an event, or a bucket: a run of events due at one
 * time, in the order they were scheduled.  In a collective's lockstep
 * instants thousands of events fall due at one picosecond: the first goes
 * into the heap, the next opens a bucket, the others join it at the back
 * and leave it from the front, and the heap orders few entries.  A small
 * table by time remembers the last event put in the heap alone and the
 * last bucket opened; an event joins a bucket only while it is the last
 * opened for its time, so the order is always (time, insertion).  The
 * sequence is 32 bits; when it would wrap, the pending entries are
 * renumbered in order.  Cancelled events stay queued, marked dead, until
 * they reach the front or until they make up half of the queue, when it is
 * rebuilt without them.
 *
 * An event's slot is either an index into the pool of slots or, with
 * POOL_BIT, a pool of the caller's records and an index into it (see
 * WeftPoolTimer): such an event is live while its record's timer is
 * pending with the entry's sequence.  The last pool's slots are buckets.
 */
#include "sim.h"

#include <stdatomic.h>
#include <string.h>

#define ARITY 4
#define PAD 3                   /* heap[i] is stored at slots[i + PAD] */
#define NO_SLOT UINT32_MAX
#define COMPACT_MIN 1024
#define PREFETCH_MIN 65536      /* entries: 1 MiB of heap */
#define POOL_BIT 0x80000000u
#define POOL_SHIFT 27
#define POOL_INDEX ((1u << POOL_SHIFT) - 1)
#define MAX_POOLS 16
#define BUCKET_POOL (MAX_POOLS - 1) /* its slots in the heap are buckets */
#define BUCKET_SLOT (POOL_BIT | BUCKET_POOL << POOL_SHIFT)
#define OPEN_SLOTS 64           /* times remembered, by a hash */

typedef struct {
  WeftEventFn fn;               /* NULL: cancelled (or free) */
  void *target;
  void *data;
  WeftTime time;                /* ps, absolute */
  uint32_t gen;                 /* bumped whenever the slot is freed */
  uint32_t next_free;
} Event;

/* A queued event. */
typedef struct {
  uint32_t slot;
  uint32_t seq;                 /* insertion order */
} Queued;

/* A heap entry: an event, or a bucket (slot BUCKET_SLOT | its index) keyed
 * by the sequence number of its first event.  Laid out so that, read as
 * one little-endian 128-bit number, an entry orders by (time, seq): see
 * entry_less(). */
typedef struct {
  Queued q;
  WeftTime time;
} Entry;

G_STATIC_ASSERT (sizeof (Entry) == 16 && G_BYTE_ORDER == G_LITTLE_ENDIAN);

/* Events due at one time, in the order they were scheduled: q[head .. n)
 * are still queued (never none, while the bucket is in the heap). */
typedef struct {
  WeftTime time;
  Queued *q;
  uint32_t head, n, cap;
  uint32_t next_free;
} Bucket;

/* What the queue last saw of a time: an event put in the heap alone, or
 * the bucket opened for it after. */
typedef struct {
  WeftTime time;
  uint32_t bucket;              /* NO_SLOT: none open */
} Open;

typedef struct {
  WeftEventFn fn;               /* NULL: free */
  void *target;
  char *base;                   /* NULL: not placed, or gone */
  size_t stride, timer_offset;
} Pool;

struct _WeftSim {
  WeftTime now;
  gboolean stopping;

  Entry *heap_mem;              /* 64-byte aligned; entries start at PAD */
  Entry *heap;                  /* heap_mem + PAD */
  size_t heap_len;              /* entries: lone events and buckets */
  size_t heap_cap;
  size_t queued;                /* events, dead ones included */

  Bucket *buckets;
  uint32_t buckets_cap;
  uint32_t bucket_free;
  Open open[OPEN_SLOTS];         /* by a hash of the time */

  Event *events;
  uint32_t events_cap;
  uint32_t free_head;

  uint32_t next_seq;
  uint64_t cancelled;           /* dead entries still in the heap */
  uint64_t events_run;
  const volatile int *interrupt;
  gboolean interrupted;
  _Atomic WeftTime *progress;   /* weft_sim_set_progress()'s, or NULL */
  const _Atomic WeftTime *bound;
  Pool pools[MAX_POOLS];
  uint32_t n_pools;
};

WeftSim *
weft_sim_new (void)
{
  WeftSim *sim = g_new0 (WeftSim, 1);

  sim->free_head = NO_SLOT;
  sim->bucket_free = NO_SLOT;
  for (uint32_t i = 0; i < OPEN_SLOTS; i++)
    sim->open[i] = (Open) { WEFT_TIME_MAX, NO_SLOT };
  sim->heap_cap = 64;
  sim->heap_mem = g_aligned_alloc (sim->heap_cap + PAD, sizeof (Entry), 64);
  sim->heap = sim->heap_mem + PAD;
  return sim;
}

void
weft_sim_free (WeftSim *sim)
{
  if (sim == NULL)
    return;
  g_aligned_free (sim->heap_mem);
  for (uint32_t b = 0; b < sim->buckets_cap; b++)
    g_free (sim->buckets[b].q);
  g_free (sim->buckets);
  g_free (sim->events);
  g_free (sim);
}

WeftTime
weft_sim_now (const WeftSim *sim)
{
  return sim->now;
}

uint64_t
weft_sim_pending (const WeftSim *sim)
{
  return sim->queued - sim->cancelled;
}

uint64_t
weft_sim_events_run (const WeftSim *sim)
{
  return sim->events_run;
}

/* ---- slots ---- */

static uint32_t
slot_alloc (WeftSim *sim)
{
  if (sim->free_head == NO_SLOT)
    {
      uint32_t old = sim->events_cap;
      uint32_t cap = old ? old * 2 : 256;

      g_assert (old < NO_SLOT / 2);
      sim->events = g_renew (Event, sim->events, cap);
      memset (sim->events + old, 0, (cap - old) * sizeof (Event));
      /* Chain the new slots so that the lowest index is handed out first. */
      for (uint32_t i = old; i < cap; i++)
        {
          sim->events[i].gen = 1;
          sim->events[i].next_free = i + 1 < cap ? i + 1 : NO_SLOT;
        }
      sim->free_head = old;
      sim->events_cap = cap;
    }

  uint32_t slot = sim->free_head;
  sim->free_head = sim->events[slot].next_free;
  return slot;
}

static void
slot_release (WeftSim *sim, uint32_t slot)
{
  Event *ev = &sim->events[slot];

  ev->fn = NULL;
  ev->gen = ev->gen + 1 ? ev->gen + 1 : 1;
  ev->next_free = sim->free_head;
  sim->free_head = slot;
}

/* ---- pools ---- */

/* A heap entry's slot for record @index of pool @pool, and back. */
static inline uint32_t
pool_slot (uint32_t pool, uint32_t index)
{
  return POOL_BIT | pool << POOL_SHIFT | index;
}

static inline const Pool *
pool_of (const WeftSim *sim, uint32_t slot)
{
  return &sim->pools[(slot & ~POOL_BIT) >> POOL_SHIFT];
}

static inline WeftPoolTimer *
pool_timer (const WeftSim *sim, uint32_t slot)
{
  const Pool *p = pool_of (sim, slot);

  return (WeftPoolTimer *) (p->base + (slot & POOL_INDEX) * p->stride
                            + p->timer_offset);
}

/* A pool's entry just taken off the queue: whether its event is still the
 * record's pending one (then no longer pending), or was cancelled. */
static inline gboolean
pool_claim (WeftSim *sim, Queued top)
{
  WeftPoolTimer *t = pool_timer (sim, top.slot);

  if (!t->pending || t->seq != top.seq)
    {
      sim->cancelled--;
      return FALSE;
    }
  t->pending = 0;
  return TRUE;
}

/* Whether the heap's entry for @slot and @seq is an event still to run. */
static inline gboolean
entry_live (const WeftSim *sim, uint32_t slot, uint32_t seq)
{
  if (!(slot & POOL_BIT))
    return sim->events[slot].fn != NULL;
  if (pool_of (sim, slot)->base == NULL)
    return FALSE;
  const WeftPoolTimer *t = pool_timer (sim, slot);
  return t->pending && t->seq == seq;
}

/* ---- the heap ---- */

/* (time, seq) before (time, seq): one 128-bit comparison, a compare and a
 * subtract with borrow, without a branch (which entry wins is
 * unpredictable, and in a collective's lockstep instants most entries tie
 * in time).  seq is unique, so slot never decides. */
static inline gboolean
entry_less (Entry a, Entry b)
{
  unsigned __int128 x, y;

  memcpy (&x, &a, sizeof x);
  memcpy (&y, &b, sizeof y);
  return x < y;
}

/* The index of the smallest of the children starting at @child (of which
 * there are min(ARITY, n - child)).  With all four present the choice is a
 * branch-free tournament: which child wins is unpredictable, so branches
 * would mispredict about half the time. */
static inline size_t
min_child (const Entry *heap, size_t child, size_t n)
{
  if (G_LIKELY (child + ARITY <= n))
    {
      size_t a = entry_less (heap[child + 1], heap[child]) ? child + 1
                                                                : child;
      size_t b = entry_less (heap[child + 3], heap[child + 2])
                     ? child + 3
                     : child + 2;
      return entry_less (heap[b], heap[a]) ? b : a;
    }
  size_t best = child;
  for (size_t k = child + 1; k < n; k++)
    if (entry_less (heap[k], heap[best]))
      best = k;
  return best;
}

static void
heap_sift_up (WeftSim *sim, size_t hole, Entry e)
{
  Entry *heap = sim->heap;

  while (hole > 0)
    {
      size_t parent = (hole - 1) / ARITY;

      if (!entry_less (e, heap[parent]))
        break;
      heap[hole] = heap[parent];
      hole = parent;
    }
  heap[hole] = e;
}

static void
heap_push (WeftSim *sim, Entry e)
{
  if (sim->heap_len == sim->heap_cap)
    {
      size_t cap = sim->heap_cap * 2;
      Entry *mem = g_aligned_alloc (cap + PAD, sizeof (Entry), 64);

      memcpy (mem + PAD, sim->heap, sim->heap_len * sizeof (Entry));
      g_aligned_free (sim->heap_mem);
      sim->heap_mem = mem;
      sim->heap = mem + PAD;
      sim->heap_cap = cap;
    }
  heap_sift_up (sim, sim->heap_len++, e);
}

/* Move the hole at @hole down to a leaf along the smallest children, then
 * settle @e upwards from there (Floyd's bottom-up deletion: new events tend to
 * belong near the bottom, so this saves most comparisons against @e).
 *
 * With @prefetch, fetch the grandchildren (four cache lines) while comparing
 * the children: in a heap larger than the cache the next level's load would
 * otherwise wait on this level's comparisons.  Smaller heaps sit in the cache,
 * where the prefetches only cost time, so the caller chooses. */
static inline __attribute__ ((always_inline)) void
settle_down (WeftSim *sim, size_t hole, Entry e, const gboolean prefetch)
{
  Entry *heap = sim->heap;
  size_t n = sim->heap_len;

  for (;;)
    {
      size_t child = hole * ARITY + 1;

      if (child >= n)
        break;
      if (prefetch)
        {
          size_t grand = child * ARITY + 1;
          if (grand < n)
            for (size_t k = 0; k < ARITY; k++)
              __builtin_prefetch (&heap[grand + k * ARITY]);
        }
      size_t best = min_child (heap, child, n);
      heap[hole] = heap[best];
      hole = best;
    }
  heap_sift_up (sim, hole, e);
}

static void
heap_settle_from (WeftSim *sim, size_t hole, Entry e)
{
  if (sim->heap_len >= PREFETCH_MIN)
    settle_down (sim, hole, e, TRUE);
  else
    settle_down (sim, hole, e, FALSE);
}

static void
heap_pop (WeftSim *sim)
{
  sim->heap_len--;
  if (sim->heap_len > 0)
    heap_settle_from (sim, 0, sim->heap[sim->heap_len]);
}

/* Restore the heap order of the first @n entries in O(n). */
static void
heap_build (WeftSim *sim, size_t n)
{
  if (n < 2)
    return;
  for (size_t i = (n - 2) / ARITY + 1; i-- > 0;)
    {
      Entry e = sim->heap[i];
      size_t hole = i;

      for (;;)
        {
          size_t child = hole * ARITY + 1;

          if (child >= n)
            break;
          size_t best = min_child (sim->heap, child, n);
          if (!entry_less (sim->heap[best], e))
            break;
          sim->heap[hole] = sim->heap[best];
          hole = best;
        }
      sim->heap[hole] = e;
    }
}

/* ---- buckets ---- */

static inline uint32_t
open_hash (WeftTime time)
{
  return (uint32_t) ((time * UINT64_C (0x9e3779b97f4a7c15)) >> 58);
}

G_STATIC_ASSERT (OPEN_SLOTS == 64);

static uint32_t
bucket_new (WeftSim *sim, WeftTime time)
{
  if (sim->bucket_free == NO_SLOT)
    {
      uint32_t old = sim->buckets_cap;
      uint32_t cap = old ? old * 2 : 64;

      g_assert (cap - 1 <= POOL_INDEX);
      sim->buckets = g_renew (Bucket, sim->buckets, cap);
      memset (sim->buckets + old, 0, (cap - old) * sizeof (Bucket));
      for (uint32_t i = old; i < cap; i++)
        sim->buckets[i].next_free = i + 1 < cap ? i + 1 : NO_SLOT;
      sim->bucket_free = old;
      sim->buckets_cap = cap;
    }

  uint32_t b = sim->bucket_free;
  Bucket *bucket = &sim->buckets[b];
  sim->bucket_free = bucket->next_free;
  bucket->time = time;
  bucket->head = bucket->n = 0;
  return b;
}

/* Bucket @b is out of the heap: free it (its array kept for the next). */
static void
bucket_release (WeftSim *sim, uint32_t b)
{
  Bucket *bucket = &sim->buckets[b];
  Open *o = &sim->open[open_hash (bucket->time)];

  if (o->bucket == b)
    o->bucket = NO_SLOT;
  bucket->next_free = sim->bucket_free;
  sim->bucket_free = b;
}

static inline gboolean
is_bucket (uint32_t slot)
{
  return (slot & ~POOL_INDEX) == BUCKET_SLOT;
}

/* Queue the event of @slot, numbered @seq (the highest yet), at @time.  The
 * first event of a time goes into the heap alone (events at times of their
 * own cost what they did without buckets); the next opens a bucket after
 * it, which the events after join while it is the last opened for the
 * time.  When the table has lost the time, a new bucket or lone event
 * comes after the older ones: the order is (time, insertion) either way. */
static void
enqueue (WeftSim *sim, WeftTime time, uint32_t slot, uint32_t seq)
{
  Open *o = &sim->open[open_hash (time)];

  sim->queued++;
  if (o->time != time)
    {
      *o = (Open) { time, NO_SLOT };
      heap_push (sim, (Entry) { { slot, seq }, time });
      return;
    }
  uint32_t b = o->bucket;
  if (b == NO_SLOT)
    {
      b = bucket_new (sim, time);
      o->bucket = b;
      heap_push (sim, (Entry) { { BUCKET_SLOT | b, seq }, time });
    }
  Bucket *bucket = &sim->buckets[b];
  if (G_UNLIKELY (bucket->n == bucket->cap))
    {
      bucket->cap = bucket->cap ? bucket->cap * 2 : 16;
      bucket->q = g_renew (Queued, bucket->q, bucket->cap);
    }
  bucket->q[bucket->n++] = (Queued) { slot, seq };
}

/* The event that runs next, of those queued (there must be one). */
static inline const Queued *
front (const WeftSim *sim)
{
  const Entry *top = &sim->heap[0];

  if (!is_bucket (top->q.slot))
    return &top->q;
  const Bucket *bucket = &sim->buckets[top->q.slot & POOL_INDEX];
  return &bucket->q[bucket->head];
}

/* Take the front event off the queue. */
static inline void
dequeue (WeftSim *sim)
{
  uint32_t slot = sim->heap[0].q.slot;

  sim->queued--;
  if (!is_bucket (slot))
    {
      heap_pop (sim);
      return;
    }
  uint32_t b = slot & POOL_INDEX;
  Bucket *bucket = &sim->buckets[b];
  if (++bucket->head == bucket->n)
    {
      heap_pop (sim);
      bucket_release (sim, b);
    }
}

/* Whether to keep queued event @e, dropping it if it was cancelled. */
static inline gboolean
keep (WeftSim *sim, Queued e)
{
  if (entry_live (sim, e.slot, e.seq))
    return TRUE;
  if (!(e.slot & POOL_BIT))
    slot_release (sim, e.slot);
  return FALSE;
}

/* Drop the cancelled entries, and the buckets left empty, and restore the
 * heap order in O(n).  A bucket keeps its key: its events still come
 * after those of the older entries of its time. */
static void
queue_compact (WeftSim *sim)
{
  size_t kept = 0, queued = 0;

  for (size_t i = 0; i < sim->heap_len; i++)
    {
      Entry e = sim->heap[i];

      if (!is_bucket (e.q.slot))
        {
          if (keep (sim, e.q))
            {
              sim->heap[kept++] = e;
              queued++;
            }
          continue;
        }
      uint32_t b = e.q.slot & POOL_INDEX;
      Bucket *bucket = &sim->buckets[b];
      uint32_t n = 0;
      for (uint32_t j = bucket->head; j < bucket->n; j++)
        if (keep (sim, bucket->q[j]))
          bucket->q[n++] = bucket->q[j];
      bucket->head = 0;
      bucket->n = n;
      queued += n;
      if (n == 0)
        bucket_release (sim, b);
      else
        sim->heap[kept++] = e;
    }
  sim->heap_len = kept;
  sim->queued = queued;
  sim->cancelled = 0;
  heap_build (sim, kept);
}

static int
entry_cmp (const void *a, const void *b)
{
  const Entry *x = a, *y = b;

  if (x->time != y->time)
    return x->time < y->time ? -1 : 1;
  return x->q.seq < y->q.seq ? -1 : x->q.seq > y->q.seq;
}

void
weft_sim_renumber (WeftSim *sim)
{
  /* Without dead entries, whose pool records could match a new number. */
  queue_compact (sim);
  /* In (time, sequence) order the keys are a heap already. */
  qsort (sim->heap, sim->heap_len, sizeof (Entry), entry_cmp);
  uint32_t seq = 0;
  for (size_t i = 0; i < sim->heap_len; i++)
    {
      Entry *e = &sim->heap[i];
      Queued *first, *end;

      if (is_bucket (e->q.slot))
        {
          Bucket *bucket = &sim->buckets[e->q.slot & POOL_INDEX];
          e->q.seq = seq;
          first = &bucket->q[bucket->head];
          end = &bucket->q[bucket->n];
        }
      else
        first = &e->q, end = first + 1;
      for (Queued *q = first; q < end; q++)
        {
          q->seq = seq++;
          if (q->slot & POOL_BIT)
            pool_timer (sim, q->slot)->seq = q->seq;
        }
    }
  sim->next_seq = seq;
}

/* ---- scheduling ---- */

static uint32_t
schedule (WeftSim *sim, WeftTime when, WeftEventFn fn, void *target,
          void *data)
{
  g_assert (fn != NULL);
  g_assert (when >= sim->now);

  uint32_t slot = slot_alloc (sim);
  Event *ev = &sim->events[slot];

  ev->fn = fn;
  ev->target = target;
  ev->data = data;
  ev->time = when;
  if (G_UNLIKELY (sim->next_seq == UINT32_MAX))
    weft_sim_renumber (sim);
  enqueue (sim, when, slot, sim->next_seq++);
  return slot;
}

static WeftTime
deadline (const WeftSim *sim, WeftTime delay)
{
  g_assert (delay <= WEFT_TIME_MAX - sim->now);
  return sim->now + delay;
}

void
weft_sim_schedule (WeftSim *sim, WeftTime delay, WeftEventFn fn, void *target,
                   void *data)
{
  schedule (sim, deadline (sim, delay), fn, target, data);
}

void
weft_sim_schedule_at (WeftSim *sim, WeftTime when, WeftEventFn fn,
                      void *target, void *data)
{
  schedule (sim, when, fn, target, data);
}

gboolean
weft_sim_timer_pending (const WeftSim *sim, const WeftTimer *timer)
{
  if (timer->gen == 0 || timer->slot >= sim->events_cap)
    return FALSE;
  const Event *ev = &sim->events[timer->slot];
  return ev->gen == timer->gen && ev->fn != NULL;
}

WeftTime
weft_sim_timer_when (const WeftSim *sim, const WeftTimer *timer)
{
  g_assert (weft_sim_timer_pending (sim, timer));
  return sim->events[timer->slot].time;
}

/* One more dead entry queued; past half of them, the queue is rebuilt. */
static void
count_cancelled (WeftSim *sim)
{
  sim->cancelled++;
  if (sim->queued >= COMPACT_MIN && sim->cancelled * 2 > sim->queued)
    queue_compact (sim);
}

void
weft_sim_cancel (WeftSim *sim, WeftTimer *timer)
{
  if (weft_sim_timer_pending (sim, timer))
    {
      sim->events[timer->slot].fn = NULL;
      count_cancelled (sim);
    }
  timer->gen = 0;
}

void
weft_sim_schedule_timer (WeftSim *sim, WeftTimer *timer, WeftTime delay,
                         WeftEventFn fn, void *target, void *data)
{
  WeftTime when = deadline (sim, delay);

  weft_sim_cancel (sim, timer);
  timer->slot = schedule (sim, when, fn, target, data);
  timer->gen = sim->events[timer->slot].gen;
}

uint32_t
weft_sim_pool_new (WeftSim *sim, WeftEventFn fn, void *target)
{
  uint32_t pool = 0;

  g_assert (fn != NULL);
  /* A pool whose records are gone may be taken again. */
  while (pool < sim->n_pools && sim->pools[pool].fn != NULL)
    pool++;
  g_assert (pool < BUCKET_POOL);
  sim->pools[pool] = (Pool) { fn, target, NULL, 0, 0 };
  sim->n_pools = MAX (sim->n_pools, pool + 1);
  return pool;
}

void
weft_sim_pool_place (WeftSim *sim, uint32_t pool, void *base, size_t stride,
                     size_t timer_offset)
{
  g_assert (pool < sim->n_pools && sim->pools[pool].fn != NULL);
  Pool *p = &sim->pools[pool];
  p->base = base;
  p->stride = stride;
  p->timer_offset = timer_offset;
  if (base == NULL)
    {
      /* Its pending events go with the records, and the pool is free. */
      queue_compact (sim);
      p->fn = NULL;
    }
}

void
weft_sim_pool_cancel (WeftSim *sim, uint32_t pool, uint32_t index)
{
  g_assert (pool < sim->n_pools && sim->pools[pool].base != NULL
            && index <= POOL_INDEX);
  WeftPoolTimer *t = pool_timer (sim, pool_slot (pool, index));
  if (t->pending)
    {
      /* Its entry stays queued, dead: its sequence is no longer the
       * record's. */
      t->pending = 0;
      count_cancelled (sim);
    }
}

void
weft_sim_pool_schedule (WeftSim *sim, uint32_t pool, uint32_t index,
                        WeftTime delay)
{
  WeftTime when = deadline (sim, delay);

  weft_sim_pool_cancel (sim, pool, index);
  if (G_UNLIKELY (sim->next_seq == UINT32_MAX))
    weft_sim_renumber (sim);
  WeftPoolTimer *t = pool_timer (sim, pool_slot (pool, index));
  t->seq = sim->next_seq++;
  t->pending = 1;
  enqueue (sim, when, pool_slot (pool, index), t->seq);
}

gboolean
weft_sim_take (WeftSim *sim, WeftEventFn fn, void *target, void **data)
{
  while (sim->heap_len > 0 && !sim->stopping)
    {
      if (sim->heap[0].time != sim->now)
        return FALSE;
      Queued top = *front (sim);
      if (top.slot & POOL_BIT)
        return FALSE;
      Event *ev = &sim->events[top.slot];
      if (ev->fn != NULL && (ev->fn != fn || ev->target != target))
        return FALSE;
      dequeue (sim);
      gboolean live = ev->fn != NULL;
      *data = ev->data;
      slot_release (sim, top.slot);
      if (!live)
        {
          sim->cancelled--;
          continue;
        }
      sim->events_run++;
      return TRUE;
    }
  return FALSE;
}

gboolean
weft_sim_pool_take (WeftSim *sim, uint32_t pool, uint32_t *index)
{
  while (sim->heap_len > 0 && !sim->stopping)
    {
      if (sim->heap[0].time != sim->now)
        return FALSE;
      Queued top = *front (sim);
      if (!(top.slot & POOL_BIT)
          || (top.slot & ~POOL_BIT) >> POOL_SHIFT != pool)
        return FALSE;
      dequeue (sim);
      if (!pool_claim (sim, top))
        continue;
      sim->events_run++;
      *index = top.slot & POOL_INDEX;
      return TRUE;
    }
  return FALSE;
}

/* ---- running ---- */

static uint64_t
run_until (WeftSim *sim, WeftTime until)
{
  uint64_t start = sim->events_run;

  sim->stopping = FALSE;
  sim->interrupted = FALSE;
  gboolean watched = sim->interrupt != NULL || sim->bound != NULL
                     || sim->progress != NULL;
  /* Handlers may take events up (weft_sim_take()): the count can jump. */
  uint64_t next_look = sim->events_run;
  while (!sim->stopping && sim->heap_len > 0)
    {
      if (G_UNLIKELY (watched && sim->events_run >= next_look))
        {
          next_look = sim->events_run + 256;
          if (sim->progress != NULL)
            atomic_store_explicit (sim->progress, sim->now,
                                   memory_order_relaxed);
          if (sim->interrupt != NULL && *sim->interrupt)
            {
              sim->interrupted = sim->stopping = TRUE;
              break;
            }
          if (sim->bound != NULL
              && sim->now > atomic_load_explicit (sim->bound,
                                                  memory_order_relaxed))
            {
              sim->stopping = TRUE;
              break;
            }
        }
      WeftTime time = sim->heap[0].time;

      if (time > until)
        break;
      Queued top = *front (sim);
      dequeue (sim);
      /* The next event's slot or record, while this one runs. */
      if (sim->heap_len > 0)
        {
          uint32_t next = front (sim)->slot;
          if (next & POOL_BIT)
            __builtin_prefetch (pool_timer (sim, next));
          else
            __builtin_prefetch (&sim->events[next]);
        }

      WeftEventFn fn;
      void *target, *data;
      if (top.slot & POOL_BIT)
        {
          if (!pool_claim (sim, top))
            continue;
          const Pool *p = pool_of (sim, top.slot);
          fn = p->fn;
          target = p->target;
          data = GUINT_TO_POINTER (top.slot & POOL_INDEX);
        }
      else
        {
          Event *ev = &sim->events[top.slot];
          fn = ev->fn;
          target = ev->target;
          data = ev->data;

          /* Free the slot first so that the handler may reuse it. */
          slot_release (sim, top.slot);
          if (fn == NULL)
            {
              sim->cancelled--;
              continue;
            }
        }
      sim->now = time;
      sim->events_run++;
      fn (sim, target, data);
    }
  return sim->events_run - start;
}

gboolean
weft_sim_peek (const WeftSim *sim, WeftEventFn *fn, void **target,
               void **data)
{
  if (sim->heap_len == 0)
    return FALSE;
  uint32_t slot = front (sim)->slot;
  if (slot & POOL_BIT)
    {
      /* Without reading the record: it may have been cancelled. */
      const Pool *p = pool_of (sim, slot);
      *fn = p->fn;
      *target = p->target;
      *data = GUINT_TO_POINTER (slot & POOL_INDEX);
      return TRUE;
    }
  const Event *ev = &sim->events[slot];
  *fn = ev->fn;
  *target = ev->target;
  *data = ev->data;
  return ev->fn != NULL;
}

uint64_t
weft_sim_run (WeftSim *sim)
{
  return run_until (sim, WEFT_TIME_MAX);
}

uint64_t
weft_sim_run_until (WeftSim *sim, WeftTime until)
{
  g_assert (until >= sim->now);

  uint64_t ran = run_until (sim, until);
  if (!sim->stopping)
    sim->now = until;
  return ran;
}

void
weft_sim_set_progress (WeftSim *sim, _Atomic WeftTime *clock)
{
  sim->progress = clock;
}

void
weft_sim_set_interrupt (WeftSim *sim, const volatile int *flag)
{
  sim->interrupt = flag;
}

gboolean
weft_sim_interrupted (const WeftSim *sim)
{
  return sim->interrupted;
}

void
weft_sim_set_bound (WeftSim *sim, const _Atomic WeftTime *bound)
{
  sim->bound = bound;
}

void
weft_sim_stop (WeftSim *sim)
{
  sim->stopping = TRUE;
}
