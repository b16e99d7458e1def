/* weft: ring algorithms (all_reduce, reduce_scatter, all_gather), and the
 * chains and neighbour exchanges built the same way (broadcast, reduce,
 * send_recv).  The buffer is cut into `channels` slices, each a ring of its
 * own (of every ring along the links, where GPUs are joined directly, each
 * ring's share by its bandwidth; else in rank order), and every piece into
 * `chunks` that follow each other down the ring (pipelining); a chunk's
 * send waits for the previous chunk's send of the same step, so that a
 * channel stays in order. */
#include "collectives/collective-private.h"
#include "collectives/nccl_model.h"

/* Channels in all: `channels` of every ring along the links, or of rank
 * order. */
static uint32_t
n_channels (const WeftCollectiveParams *p)
{
  return p->rings ? p->rings->n_rings * p->channels : p->channels;
}

/* Channel @ch's bytes of @size. */
static uint64_t
channel_bytes (uint64_t size, const WeftCollectiveParams *p, uint32_t ch)
{
  if (p->rings == NULL)
    return weft_part (size, p->channels, ch);
  return weft_part (weft_rings_bytes (p->rings, size, ch / p->channels),
                    p->channels, ch % p->channels);
}

/* Channel @ch's ranks in ring order, or NULL for rank order. */
static const uint32_t *
channel_order (const WeftCollectiveParams *p, uint32_t ch)
{
  return p->rings ? p->rings->order + (size_t) (ch / p->channels) * p->rings->n
                  : NULL;
}

/* The rank at position @q of a ring in @order (NULL: rank order). */
static inline uint32_t
at (const uint32_t *order, uint32_t n, int64_t q)
{
  /* Within a turn of the ring without a division: the builders ask for
   * positions a step or two around it. */
  uint32_t i = q >= 0 && q < n            ? (uint32_t) q
               : q < 0 && q >= -(int64_t) n ? (uint32_t) (q + n)
                                           : weft_mod (q, n);
  return order ? order[i] : i;
}

static uint64_t
piece (uint64_t size, uint32_t n, const WeftCollectiveParams *p, uint32_t ch,
       uint32_t c, uint32_t k)
{
  return weft_part (weft_part (channel_bytes (size, p, ch), n, c), p->chunks,
                    k);
}

static uint32_t
add2 (WeftSchedule *s, uint32_t rank, WeftStepKind kind, uint32_t peer,
      uint32_t tag, uint64_t bytes, uint32_t a, uint32_t b)
{
  uint32_t deps[2] = { a, b };
  return weft_schedule_add (s, rank, kind, peer, tag, bytes, deps, 2);
}

typedef enum { PHASE_REDUCE_SCATTER, PHASE_ALL_GATHER } Phase;

static uint32_t *fresh_after (const WeftSchedule *s,
                              const WeftCollectiveParams *p);

/* Steps a rank makes at each step of a phase: a send, a receive and, in
 * reduce-scatter, a reduction. */
static uint32_t
steps_per (Phase phase)
{
  return phase == PHASE_REDUCE_SCATTER ? 3 : 2;
}

/* A ring phase being made (see ring_phase()), and a share of its ranks. */
typedef struct {
  WeftSchedule *s;
  const WeftCollectiveParams *p;
  Phase phase;
  int shift;
  uint32_t *after;
  const uint32_t *base;         /* each rank's steps before the phase */
  const uint32_t *position;     /* each rank's place in each ring */
  const uint64_t *bytes_of;     /* each piece's bytes, by tag */
  uint32_t r_lo, r_hi;          /* the share: these ranks... */
  uint32_t cursor;              /* ...their dependencies from here */
  const uint64_t *offset_of;    /* where each piece lies, by tag, where
                                   the schedule keeps regions; or NULL */
} RingPart;

/* Dependencies rank @r's steps of the phase have: a send waits for the
 * step before (at step 0, for what @after gives) and for the chunk
 * before's send, a reduction for its receive. */
static uint64_t
rank_deps (const RingPart *w, uint32_t r)
{
  uint32_t n = w->s->n_ranks, chunks = w->p->chunks;
  uint64_t count = 0;

  for (uint32_t tag = 0; tag < n_channels (w->p) * chunks; tag++)
    count += (w->after[(size_t) tag * n + r] != WEFT_NO_STEP) + (n - 2)
             + (tag % chunks > 0 ? n - 1 : 0)
             + (w->phase == PHASE_REDUCE_SCATTER ? n - 1 : 0);
  return count;
}

/* Make part @data's ranks' steps of the phase. */
static gpointer
ring_ranks (gpointer data)
{
  RingPart *w = data;
  WeftSchedule *s = w->s;
  const WeftCollectiveParams *p = w->p;
  uint32_t n = s->n_ranks, chunks = p->chunks;
  uint32_t per = steps_per (w->phase);
  const uint32_t *base = w->base;

  for (uint32_t r = w->r_lo; r < w->r_hi; r++)
    for (uint32_t ch = 0; ch < n_channels (p); ch++)
      {
        const uint32_t *order = channel_order (p, ch);
        int64_t q = order ? w->position[(size_t) (ch / p->channels) * n + r]
                          : r;
        uint32_t to = at (order, n, q + 1), from = at (order, n, q - 1);
        for (uint32_t k = 0; k < chunks; k++)
          {
            uint32_t tag = ch * chunks + k;
            const uint64_t *bytes = &w->bytes_of[(size_t) tag * n];
            uint32_t dep = w->after[(size_t) tag * n + r];
            for (uint32_t step = 0; step + 1 < n; step++)
              {
                /* The t-th send, receive (and reduction) of the phase,
                 * where every rank has them; a chunk's send waits for the
                 * chunk before's at the same step. */
                uint32_t t = tag * (n - 1) + step;
                uint32_t deps[2] = {
                  dep, k > 0 ? base[r] + (t - (n - 1)) * per : WEFT_NO_STEP
                };
                uint32_t out = at (order, n, q - w->shift - step);
                uint32_t in = at (order, n, q - 1 - w->shift - step);
                uint32_t sent = weft_schedule_add_at (
                    s, r, WEFT_STEP_SEND, to, tag, bytes[out], deps, 2,
                    base[to] + t * per + 1, &w->cursor);
                uint64_t got = bytes[in];
                uint32_t recv = weft_schedule_add_at (
                    s, r, WEFT_STEP_RECV, from, tag, got, NULL, 0,
                    base[from] + t * per, &w->cursor);
                if (w->phase == PHASE_REDUCE_SCATTER)
                  dep = weft_schedule_add_at (s, r, WEFT_STEP_REDUCE, 0, 0,
                                              got, &recv, 1, WEFT_NO_STEP,
                                              &w->cursor);
                else
                  dep = recv;
                if (w->offset_of)
                  {
                    const uint64_t *where = &w->offset_of[(size_t) tag * n];
                    weft_schedule_region (s, r, sent, where[out]);
                    weft_schedule_region (s, r, recv, where[in]);
                    weft_schedule_region (s, r, dep, where[in]);
                  }
              }
            w->after[(size_t) tag * n + r] = dep;
          }
      }
  return NULL;
}

/* Each piece's bytes, by tag then piece, once: every step sends n of
 * them. */
static uint64_t *
pieces_of (uint64_t size, uint32_t n, const WeftCollectiveParams *p)
{
  uint32_t chunks = p->chunks;
  uint64_t *bytes_of = g_new (uint64_t,
                              (size_t) n_channels (p) * chunks * n);

  for (uint32_t ch = 0; ch < n_channels (p); ch++)
    for (uint32_t k = 0; k < chunks; k++)
      for (uint32_t c = 0; c < n; c++)
        bytes_of[(size_t) (ch * chunks + k) * n + c]
            = piece (size, n, p, ch, c, k);
  return bytes_of;
}

/* Where a channel's bytes begin: its ring's share, then its part of it. */
static uint64_t
channel_offset (uint64_t size, const WeftCollectiveParams *p, uint32_t ch)
{
  uint64_t at = 0;

  if (p->rings == NULL)
    return weft_part_offset (size, p->channels, ch);
  for (uint32_t i = 0; i < ch / p->channels; i++)
    at += weft_rings_bytes (p->rings, size, i);
  return at + weft_part_offset (weft_rings_bytes (p->rings, size,
                                                  ch / p->channels),
                                p->channels, ch % p->channels);
}

/* Where each piece of pieces_of() lies in a rank's buffer, for a schedule
 * that keeps regions (else NULL): channel by channel, piece c of each, or
 * with @blocked (all_gather, reduce_scatter: rank c's block is one region
 * of the buffer) block by block, each channel's part of block c; the
 * two agree on the pieces' bytes where the size divides evenly. */
static uint64_t *
offsets_of (const WeftSchedule *s, uint64_t size, uint32_t n,
            const WeftCollectiveParams *p, gboolean blocked)
{
  uint32_t chunks = p->chunks;
  uint64_t *where;

  if (s->offsets == NULL)
    return NULL;
  where = g_new (uint64_t, (size_t) n_channels (p) * chunks * n);
  for (uint32_t ch = 0; ch < n_channels (p); ch++)
    for (uint32_t c = 0; c < n; c++)
      {
        uint64_t cb = channel_bytes (size, p, ch), at;
        if (blocked && p->rings == NULL)
          {
            uint64_t block = weft_part (size, n, c);
            at = weft_part_offset (size, n, c)
                 + weft_part_offset (block, p->channels, ch);
            cb = weft_part (block, p->channels, ch) * n;
          }
        else
          at = channel_offset (size, p, ch) + weft_part_offset (cb, n, c);
        uint64_t mine = blocked && p->rings == NULL ? cb / n
                                                    : weft_part (cb, n, c);
        for (uint32_t k = 0; k < chunks; k++)
          where[(size_t) (ch * chunks + k) * n + c]
              = at + weft_part_offset (mine, chunks, k);
      }
  return where;
}

/* Each rank's place in each ring along the links (none in rank order). */
static uint32_t *
positions_of (uint32_t n, const WeftCollectiveParams *p)
{
  uint32_t n_orders = p->rings ? p->rings->n_rings : 0;
  uint32_t *position = g_new (uint32_t, MAX ((size_t) n_orders * n, 1));

  for (uint32_t o = 0; o < n_orders; o++)
    for (uint32_t q = 0; q < n; q++)
      position[(size_t) o * n + p->rings->order[(size_t) o * n + q]] = q;
  return position;
}

/* Whether every piece of each tag is as large as the others: then ranks
 * differ only in which of their ring neighbours are the same rank. */
static gboolean
even_pieces (uint32_t n, uint32_t tags, const uint64_t *bytes_of)
{
  for (uint32_t tag = 0; tag < tags; tag++)
    for (uint32_t c = 1; c < n; c++)
      if (bytes_of[(size_t) tag * n + c] != bytes_of[(size_t) tag * n])
        return FALSE;
  return TRUE;
}

/* Rank @r's neighbours, in the order its steps first name them (each
 * channel's next, then its previous), into @peers, and for each of the
 * 2 x channels names the place of its first naming in @slots (which
 * neighbours are the same rank); returns how many differ. */
static uint32_t
neighbours (const WeftCollectiveParams *p, uint32_t n,
            const uint32_t *position, uint32_t r, uint32_t *peers,
            uint32_t *slots)
{
  uint32_t n_peers = 0;

  for (uint32_t i = 0; i < 2 * n_channels (p); i++)
    {
      uint32_t ch = i / 2;
      const uint32_t *order = channel_order (p, ch);
      int64_t q = order ? position[(size_t) (ch / p->channels) * n + r] : r;
      uint32_t peer = at (order, n, i % 2 ? q - 1 : q + 1);
      slots[i] = n_peers;
      for (uint32_t j = 0; j < n_peers; j++)
        if (peers[j] == peer)
          {
            slots[i] = j;
            break;
          }
      if (slots[i] == n_peers)
        peers[n_peers++] = peer;
    }
  return n_peers;
}

/* Rank @r's peers by the executor's slots (a peer and a tag each), from
 * its neighbours and their slots as neighbours() gives them, into @out:
 * for each tag, channel by channel and chunk by chunk, its next, then its
 * previous unless the same rank; returns how many. */
static uint32_t
connections (const WeftCollectiveParams *p, const uint32_t *peers,
             const uint32_t *slots, uint32_t *out)
{
  uint32_t n_out = 0;

  for (uint32_t ch = 0; ch < n_channels (p); ch++)
    for (uint32_t k = 0; k < p->chunks; k++)
      {
        uint32_t to = peers[slots[2 * ch]], from = peers[slots[2 * ch + 1]];
        out[n_out++] = to;
        if (from != to)
          out[n_out++] = from;
      }
  return n_out;
}

/* Ranks by the pattern of their neighbours' slots: two ranks of one
 * pattern, where pieces are even, make the same steps but for their
 * peers. */
static GHashTable *
patterns_new (void)
{
  return g_hash_table_new_full (g_bytes_hash, g_bytes_equal,
                                (GDestroyNotify) g_bytes_unref, NULL);
}

/* The first rank of @r's pattern @slots (2 x channels), or @r itself, which
 * the pattern then remembers. */
static uint32_t
pattern_first (GHashTable *patterns, const WeftCollectiveParams *p,
               const uint32_t *slots, uint32_t r)
{
  g_autoptr (GBytes) key = g_bytes_new (slots, 2 * (size_t) n_channels (p)
                                                   * sizeof (uint32_t));
  gpointer first;

  if (g_hash_table_lookup_extended (patterns, key, NULL, &first))
    return GPOINTER_TO_UINT (first);
  g_hash_table_insert (patterns, g_steal_pointer (&key), GUINT_TO_POINTER (r));
  return r;
}

/* How many ranks' steps of a ring differ but for their peers, at most:
 * the patterns of neighbours where pieces are even, else every rank. */
static uint32_t
count_classes (const WeftSchedule *s, const WeftCollectiveParams *p,
               const uint64_t *bytes_of, const uint32_t *position)
{
  uint32_t n = s->n_ranks, channels = n_channels (p);

  if (!even_pieces (n, channels * p->chunks, bytes_of))
    return n;
  g_autoptr (GHashTable) patterns = patterns_new ();
  g_autofree uint32_t *peers = g_new (uint32_t, 2 * (size_t) channels);
  g_autofree uint32_t *slots = g_new (uint32_t, 2 * (size_t) channels);
  for (uint32_t r = 0; r < n; r++)
    {
      neighbours (p, n, position, r, peers, slots);
      pattern_first (patterns, p, slots, r);
    }
  return g_hash_table_size (patterns);
}

/* Steps from which a phase's ranks are shared among threads. */
#define RING_SPLIT 1000000

/* At most this many threads make a phase. */
#define RING_THREADS 8

/* One ring phase over n - 1 steps for every channel and chunk.  @shift
 * picks the piece the rank at ring position q sends at step 0 (that of
 * position q - shift, pieces named by the rank that owns them); @after[r]
 * (per tag) is what rank r's first send waits for, and is updated to the
 * last step of the phase on each rank.
 *
 * Every rank's steps come in the same order: for each channel, chunk and
 * step, a send, a receive and (reduce-scatter) a reduction.  So the t-th of
 * these on any rank is at the same place past the steps it had before, and
 * a send can be paired with its receive before the peer's steps are made:
 * each rank's steps are made at once, written one after another (made step
 * by step across all ranks, each step would be a write into another
 * rank's list, far from the last one), and a large phase's ranks are
 * shared among p->threads threads, each rank's dependencies at the place
 * they would have had made in rank order.  ring_reference.c builds the
 * same phases plainly, and the tests hold the two to the same schedule. */
static void
ring_phase (WeftSchedule *s, uint64_t size, const WeftCollectiveParams *p,
            Phase phase, int shift, gboolean blocked, uint32_t *after)
{
  uint32_t n = s->n_ranks, chunks = p->chunks;
  uint32_t tags = n_channels (p) * chunks;
  g_autofree uint32_t *base = g_new (uint32_t, n);
  g_autofree uint64_t *bytes_of = pieces_of (size, n, p);
  g_autofree uint32_t *position = positions_of (n, p);
  g_autofree uint64_t *offset_of = offsets_of (s, size, n, p, blocked);

  for (uint32_t r = 0; r < n; r++)
    base[r] = s->n_steps[r];

  RingPart whole = { s, p, phase, shift, after, base, position, bytes_of,
                     0, n, s->n_deps, offset_of };
  uint64_t steps = (uint64_t) n * tags * (n - 1) * steps_per (phase);
  uint32_t parts = steps < RING_SPLIT ? 1 : CLAMP (p->threads, 1, RING_THREADS);
  RingPart part[RING_THREADS];
  GThread *thread[RING_THREADS];
  uint64_t end[RING_THREADS], cursor = s->n_deps;
  for (uint32_t t = 0; t < parts; t++)
    {
      part[t] = whole;
      part[t].r_lo = (uint32_t) ((uint64_t) n * t / parts);
      part[t].r_hi = (uint32_t) ((uint64_t) n * (t + 1) / parts);
      part[t].cursor = (uint32_t) cursor;
      for (uint32_t r = part[t].r_lo; r < part[t].r_hi; r++)
        cursor += rank_deps (&whole, r);
      end[t] = cursor;
    }
  if (s->counting)
    {
      uint64_t per_rank = (uint64_t) tags * (n - 1) * steps_per (phase);
      /* Streamed (ring_stream()), the schedule holds one rank's steps at
       * a time; every rank's take as many dependencies as rank 0's. */
      s->counted_classes = count_classes (s, p, bytes_of, position);
      s->counted_rank_steps += per_rank;
      s->counted_rank_deps += rank_deps (&whole, 0);
      s->counted_peers = (uint64_t) n * 2 * tags;
      /* A rank's send of a step waits for its receive before, not for its
       * send before: behind a slow link a rank runs ahead of its next by
       * as many sends as the connection's slots. */
      s->counted_ahead = WEFT_CONNECTION_SLOTS;
      for (uint32_t r = 0; r < n; r++)
        {
          /* A chunk's first send waits for the chunk before's, the first
           * chunk's for what @after gives, if anything. */
          for (uint32_t tag = 0; tag < tags; tag += chunks)
            s->counted_roots += after[(size_t) tag * n + r] == WEFT_NO_STEP;
          s->n_steps[r] = (uint32_t) MIN (s->n_steps[r] + per_rank,
                                          UINT32_MAX - 1);
          /* The next phase's first sends wait for this one's. */
          for (uint32_t tag = 0; tag < tags; tag++)
            after[(size_t) tag * n + r] = 0;
        }
      s->counted_steps += per_rank * n;
      s->counted_tags = MAX (s->counted_tags, tags);
      s->counted_deps += cursor - s->n_deps;
      s->n_ends += 2 * (uint64_t) n * tags * (n - 1);
      s->n_matched += (uint64_t) n * tags * (n - 1);
      return;
    }
  g_assert (cursor <= s->deps_cap);
  for (uint32_t t = 1; t < parts; t++)
    thread[t] = g_thread_new ("weft-ring", ring_ranks, &part[t]);
  ring_ranks (&part[0]);
  for (uint32_t t = 1; t < parts; t++)
    g_thread_join (thread[t]);
  for (uint32_t t = 0; t < parts; t++)
    g_assert (part[t].cursor == end[t]);
  s->n_deps = (uint32_t) cursor;
  s->n_ends += 2 * (uint64_t) n * tags * (n - 1);
  s->n_matched += (uint64_t) n * tags * (n - 1);
}

/* ring_phase() for @n_phases phases (and their shifts), made one rank at a
 * time, both phases, then handed on (weft_schedule_flush()): the same
 * steps, pairs and dependencies, without ever holding more than one
 * rank's. */
static void
ring_stream (WeftSchedule *s, uint64_t size, const WeftCollectiveParams *p,
             const Phase *phases, const int *shifts, uint32_t n_phases)
{
  uint32_t n = s->n_ranks, chunks = p->chunks;
  uint32_t tags = n_channels (p) * chunks;
  g_autofree uint32_t *after = fresh_after (s, p);
  g_autofree uint64_t *bytes_of = pieces_of (size, n, p);
  g_autofree uint32_t *position = positions_of (n, p);
  g_autofree uint32_t *base = g_new (uint32_t, (size_t) n_phases * n);
  /* Every rank has as many steps before each phase. */
  uint32_t before = 0;
  for (uint32_t ph = 0; ph < n_phases; ph++)
    {
      for (uint32_t r = 0; r < n; r++)
        base[(size_t) ph * n + r] = before;
      before += tags * (n - 1) * steps_per (phases[ph]);
    }
  /* Where pieces are even, a rank of a pattern seen before is said to do
   * as the first of it did. */
  g_autoptr (GHashTable) patterns = s->alike && even_pieces (n, tags, bytes_of)
                                        ? patterns_new ()
                                        : NULL;
  g_autofree uint32_t *peers = g_new (uint32_t, 2 * (size_t) n_channels (p));
  g_autofree uint32_t *slots = g_new (uint32_t, 2 * (size_t) n_channels (p));
  g_autofree uint32_t *conns = g_new (uint32_t, 2 * (size_t) tags);
  for (uint32_t r = 0; r < n; r++)
    {
      if (patterns)
        {
          neighbours (p, n, position, r, peers, slots);
          uint32_t like = pattern_first (patterns, p, slots, r);
          if (like != r)
            {
              uint64_t pairs = (uint64_t) n_phases * tags * (n - 1);
              weft_schedule_flush_alike (s, r, like, conns,
                                         connections (p, peers, slots, conns),
                                         2 * pairs, pairs);
              continue;
            }
        }
      for (uint32_t ph = 0; ph < n_phases; ph++)
        {
          RingPart w = { s, p, phases[ph], shifts[ph], after,
                         base + (size_t) ph * n, position, bytes_of, r, r + 1,
                         s->n_deps, NULL };
          weft_schedule_reserve (s, r, tags * (n - 1) * steps_per (phases[ph]),
                                 rank_deps (&w, r));
          ring_ranks (&w);
          s->n_deps = w.cursor;
          s->n_ends += 2 * (uint64_t) tags * (n - 1);
          s->n_matched += (uint64_t) tags * (n - 1);
        }
      weft_schedule_flush (s, r);
    }
}

/* Room for @phases ring phases of every rank, @reduce of them with a
 * reduction a step: each step of a channel's chunk is a send (waiting for
 * up to two steps), a receive and perhaps a reduction (waiting for one). */
static void
reserve (WeftSchedule *s, const WeftCollectiveParams *p, uint32_t phases,
         uint32_t reduce)
{
  uint64_t steps = (uint64_t) n_channels (p) * p->chunks * (s->n_ranks - 1);

  for (uint32_t r = 0; r < s->n_ranks; r++)
    weft_schedule_reserve (s, r, (uint32_t) (steps * (2 * phases + reduce)),
                           r == 0 ? steps * s->n_ranks * (2 * phases + reduce)
                                  : 0);
}

static uint32_t *
fresh_after (const WeftSchedule *s, const WeftCollectiveParams *p)
{
  size_t count = (size_t) n_channels (p) * p->chunks * s->n_ranks;
  uint32_t *after = g_new (uint32_t, count);

  for (size_t i = 0; i < count; i++)
    after[i] = WEFT_NO_STEP;
  return after;
}

void
weft_ring_all_reduce (WeftSchedule *s, uint64_t size,
                      const WeftCollectiveParams *p)
{
  /* Reduce-scatter: at step t rank r sends piece r - t, so it ends owning
   * piece r + 1 fully reduced; all-gather then passes those on. */
  static const Phase phases[] = { PHASE_REDUCE_SCATTER, PHASE_ALL_GATHER };
  static const int shifts[] = { 0, -1 };

  if (weft_schedule_streams (s))
    {
      ring_stream (s, size, p, phases, shifts, 2);
      return;
    }
  g_autofree uint32_t *after = fresh_after (s, p);

  reserve (s, p, 2, 1);
  ring_phase (s, size, p, phases[0], shifts[0], FALSE, after);
  ring_phase (s, size, p, phases[1], shifts[1], FALSE, after);
}

void
weft_ring_reduce_scatter (WeftSchedule *s, uint64_t size,
                          const WeftCollectiveParams *p)
{
  /* Shifted by one so that rank r ends owning piece r. */
  static const Phase phase = PHASE_REDUCE_SCATTER;
  static const int shift = 1;

  if (weft_schedule_streams (s))
    {
      ring_stream (s, size, p, &phase, &shift, 1);
      return;
    }
  g_autofree uint32_t *after = fresh_after (s, p);

  reserve (s, p, 1, 1);
  ring_phase (s, size, p, phase, shift, TRUE, after);
}

void
weft_ring_all_gather (WeftSchedule *s, uint64_t size,
                      const WeftCollectiveParams *p)
{
  /* Rank r starts with piece r. */
  static const Phase phase = PHASE_ALL_GATHER;
  static const int shift = 0;

  if (weft_schedule_streams (s))
    {
      ring_stream (s, size, p, &phase, &shift, 1);
      return;
    }
  g_autofree uint32_t *after = fresh_after (s, p);

  reserve (s, p, 1, 0);
  ring_phase (s, size, p, phase, shift, TRUE, after);
}

/* A chain from rank 0 along the ring (0 -> 1 -> ... -> n-1 in rank order)
 * for broadcast, or the other way, with a reduction at every rank, for
 * reduce to root 0. */
static void
chain (WeftSchedule *s, uint64_t size, const WeftCollectiveParams *p,
       gboolean reduce)
{
  uint32_t n = s->n_ranks;
  g_autofree uint32_t *prev = g_new (uint32_t, n);
  g_autofree uint32_t *link = g_new (uint32_t, n);

  for (uint32_t ch = 0; ch < n_channels (p); ch++)
    {
      const uint32_t *order = channel_order (p, ch);
      uint32_t root = 0;
      while (at (order, n, root) != 0)
        root++;
      /* link[i]: the i-th rank of the chain from the root. */
      for (uint32_t i = 0; i < n; i++)
        link[i] = at (order, n, (int64_t) root + i);
      for (uint32_t r = 0; r < n; r++)
        prev[r] = WEFT_NO_STEP;
      for (uint32_t k = 0; k < p->chunks; k++)
        {
          uint32_t tag = ch * p->chunks + k;
          uint64_t bytes = weft_part (channel_bytes (size, p, ch), p->chunks,
                                      k);
          uint64_t where = channel_offset (size, p, ch)
                           + weft_part_offset (channel_bytes (size, p, ch),
                                               p->chunks, k);
          for (uint32_t pos = 0; pos < n; pos++)
            {
              /* Position 0 starts the chain; data flows to pos + 1. */
              uint32_t i = reduce ? n - 1 - pos : pos;
              uint32_t r = link[i];
              uint32_t have = WEFT_NO_STEP;
              if (pos > 0)
                {
                  /* Where it comes from. */
                  uint32_t up = link[reduce ? i + 1 : i - 1];
                  have = weft_schedule_recv (s, r, up, tag, bytes, WEFT_NO_STEP);
                  weft_schedule_region (s, r, have, where);
                  if (reduce)
                    have = weft_schedule_reduce (s, r, bytes, have);
                  weft_schedule_region (s, r, have, where);
                }
              if (pos + 1 < n)
                {
                  prev[r] = add2 (s, r, WEFT_STEP_SEND,
                                  link[reduce ? i - 1 : i + 1], tag, bytes,
                                  have, prev[r]);
                  weft_schedule_region (s, r, prev[r], where);
                }
            }
        }
    }
}

void
weft_ring_broadcast (WeftSchedule *s, uint64_t size,
                     const WeftCollectiveParams *p)
{
  chain (s, size, p, FALSE);
}

void
weft_ring_reduce (WeftSchedule *s, uint64_t size,
                  const WeftCollectiveParams *p)
{
  chain (s, size, p, TRUE);
}

void
weft_ring_send_recv (WeftSchedule *s, uint64_t size,
                     const WeftCollectiveParams *p)
{
  uint32_t n = s->n_ranks;

  /* As nccl-tests' sendrecv: every rank sends its buffer to the next. */
  for (uint32_t ch = 0; ch < p->channels; ch++)
    for (uint32_t k = 0; k < p->chunks; k++)
      {
        uint32_t tag = ch * p->chunks + k;
        uint64_t bytes = weft_part (weft_part (size, p->channels, ch),
                                    p->chunks, k);
        uint64_t where = weft_part_offset (size, p->channels, ch)
                         + weft_part_offset (weft_part (size, p->channels, ch),
                                             p->chunks, k);
        for (uint32_t r = 0; r < n; r++)
          weft_schedule_region (
              s, r,
              weft_schedule_send (s, r, (r + 1) % n, tag, bytes, WEFT_NO_STEP),
              where);
        /* Out of place: into the output, after the input. */
        for (uint32_t r = 0; r < n; r++)
          weft_schedule_region (
              s, r,
              weft_schedule_recv (s, r, (r + n - 1) % n, tag, bytes,
                                  WEFT_NO_STEP),
              size + where);
      }
}

/* Whether @op is made of ring phases (and shares its chunks among its
 * rings). */
static gboolean
phased (WeftOp op)
{
  return op == WEFT_OP_ALL_REDUCE || op == WEFT_OP_ALL_GATHER
         || op == WEFT_OP_REDUCE_SCATTER;
}

/* The ring runs anywhere.  Across servers a ring's channels are rings of
 * their own that cross the servers' boundaries beside different GPUs (by
 * default one for each GPU of a server, or as many as NCCL's search
 * builds channels where that is fewer; a single ring keeps rank order);
 * GPUs joined directly (NVLink meshes) get rings along the links. */
gboolean
weft_ring_fit (WeftFit *fit, WeftCollectiveParams *p, GError **error)
{
  (void) error;
  if (p == NULL || fit->op == WEFT_OP_SEND_RECV)
    return TRUE;
  if (phased (fit->op))
    {
      fit->server = weft_fit_servers (fit->topo, fit->gpus, fit->n);
      p->server = fit->server;
      uint32_t local = weft_rings_local (fit->server, fit->n);
      uint32_t count = p->channels ? p->channels : local;
      if (!p->channels && local >= 2)
        {
          /* No more rings than NCCL's search builds channels: up to a
           * server's GPUs on a DGX, 16 of the 72 on two NVL72 racks. */
          WeftNcclSystem sys;
          weft_nccl_system_from_topology (&sys, fit->topo, fit->gpus, fit->n);
          if (sys.graph[WEFT_COSTS_RING].channels > 0)
            count = MIN (count, sys.graph[WEFT_COSTS_RING].channels);
        }
      if (local >= 2 && count >= 2)
        {
          fit->rings = weft_rings_across (fit->server, fit->n, count);
          p->channels = 1;
        }
    }
  if (fit->rings == NULL)
    fit->rings = weft_rings_find (fit->topo, fit->gpus, fit->n);
  p->rings = fit->rings;
  return TRUE;
}

/* The phases' default chunks are shared out among the rings, so that a
 * ring step of many rings moves as many pieces as one ring's did. */
void
weft_ring_defaults (WeftOp op, WeftCollectiveParams *p)
{
  p->channels = MAX (p->channels, 1);
  if (p->chunks == 0)
    {
      uint32_t rings = (p->rings ? p->rings->n_rings : 1) * p->channels;
      p->chunks = phased (op) ? MAX (WEFT_CHUNKS / rings, 1) : WEFT_CHUNKS;
    }
}
