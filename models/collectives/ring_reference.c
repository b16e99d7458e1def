/* weft: the ring collectives built the plain way, as the reference that
 * ring.c's fast builder is tested against.
 *
 * ring.c makes a large ring on several threads, reserving room for every
 * step, writing each rank's steps where one thread would have put them
 * and pairing sends with receives itself; a mistake there would not show
 * as an error, only as a different schedule.  These builders write the
 * same rings with nothing but weft_schedule_add() and its shorthands, one
 * rank's program after another, and leave the pairing to
 * weft_schedule_pair_search(): short enough to check by reading.  The
 * tests require the two to give the same steps, dependencies and pairs. */
#include "collectives/collective-private.h"

/* Where rank @r stands in the ring @order of @n ranks. */
static uint32_t
position_of (const uint32_t *order, uint32_t n, uint32_t r)
{
  for (uint32_t q = 0; q < n; q++)
    if (order[q] == r)
      return q;
  g_assert_not_reached ();
}

/* One phase of every channel's ring, in rank-order rings or along
 * p->rings.  The buffer goes to the rings by their weights, each ring's
 * share to its `channels` channels, each channel's bytes to n pieces (piece
 * c is rank c's) and each piece to `chunks` chunks; channel ch's chunk k
 * runs on tag ch * chunks + k.
 *
 * At step t (0 .. n - 2) the rank at ring position q sends the chunk of
 * the piece of position q - shift - t to the next rank, and receives from
 * the rank before the chunk of the piece of position q - 1 - shift - t; in
 * a reduce-scatter (@reduce) it adds that in.  A step's send waits for the
 * step before (at step 0 for @last, per tag and rank, which becomes the
 * phase's last step) and for the same step's send of the chunk before, so
 * that a channel's chunks stay in order. */
static void
phase (WeftSchedule *s, uint64_t size, const WeftCollectiveParams *p,
       gboolean reduce, int shift, uint32_t *last)
{
  uint32_t n = s->n_ranks, chunks = p->chunks;
  uint32_t n_rings = p->rings ? p->rings->n_rings : 1;
  g_autofree uint32_t *rank_order = g_new (uint32_t, n);
  g_autofree uint32_t *sent = g_new (uint32_t, n - 1);

  for (uint32_t q = 0; q < n; q++)
    rank_order[q] = q;
  for (uint32_t r = 0; r < n; r++)
    for (uint32_t ch = 0; ch < n_rings * p->channels; ch++)
      {
        uint32_t ring = ch / p->channels;
        const uint32_t *order = p->rings ? p->rings->order + (size_t) ring * n
                                         : rank_order;
        uint64_t ring_bytes = p->rings ? weft_rings_bytes (p->rings, size, ring)
                                       : size;
        uint64_t bytes = weft_part (ring_bytes, p->channels, ch % p->channels);
        int64_t q = position_of (order, n, r);
        uint32_t to = order[weft_mod (q + 1, n)];
        uint32_t from = order[weft_mod (q - 1, n)];
        for (uint32_t k = 0; k < chunks; k++)
          {
            uint32_t tag = ch * chunks + k;
            uint32_t dep = last[(size_t) tag * n + r];
            for (uint32_t t = 0; t + 1 < n; t++)
              {
                uint32_t mine = order[weft_mod (q - shift - t, n)];
                uint32_t theirs = order[weft_mod (q - 1 - shift - t, n)];
                uint64_t out = weft_part (weft_part (bytes, n, mine), chunks,
                                          k);
                uint64_t in = weft_part (weft_part (bytes, n, theirs), chunks,
                                         k);
                uint32_t deps[2] = { dep, k > 0 ? sent[t] : WEFT_NO_STEP };
                sent[t] = weft_schedule_add (s, r, WEFT_STEP_SEND, to, tag,
                                             out, deps, 2);
                dep = weft_schedule_recv (s, r, from, tag, in, WEFT_NO_STEP);
                if (reduce)
                  dep = weft_schedule_reduce (s, r, in, dep);
              }
            last[(size_t) tag * n + r] = dep;
          }
      }
}

/* What each rank's first send of each tag waits for: nothing. */
static uint32_t *
nothing_before (const WeftSchedule *s, const WeftCollectiveParams *p)
{
  size_t count = (size_t) (p->rings ? p->rings->n_rings : 1) * p->channels
                 * p->chunks * s->n_ranks;
  uint32_t *last = g_new (uint32_t, count);

  for (size_t i = 0; i < count; i++)
    last[i] = WEFT_NO_STEP;
  return last;
}

void
weft_ring_reference_all_reduce (WeftSchedule *s, uint64_t size,
                                const WeftCollectiveParams *p)
{
  g_autofree uint32_t *last = nothing_before (s, p);

  /* Rank r ends the reduce-scatter owning piece r + 1 summed, which the
   * all-gather, shifted by one back, passes on. */
  phase (s, size, p, TRUE, 0, last);
  phase (s, size, p, FALSE, -1, last);
}

void
weft_ring_reference_reduce_scatter (WeftSchedule *s, uint64_t size,
                                    const WeftCollectiveParams *p)
{
  g_autofree uint32_t *last = nothing_before (s, p);

  /* Shifted by one, so that rank r ends owning piece r. */
  phase (s, size, p, TRUE, 1, last);
}

void
weft_ring_reference_all_gather (WeftSchedule *s, uint64_t size,
                                const WeftCollectiveParams *p)
{
  g_autofree uint32_t *last = nothing_before (s, p);

  /* Rank r starts with piece r. */
  phase (s, size, p, FALSE, 0, last);
}
