/* weft: recursive halving-doubling all_reduce (Rabenseifner): a
 * reduce-scatter by recursive halving, then an all-gather by recursive
 * doubling, among the largest power of two of ranks; each rank beyond it
 * first hands its buffer to a partner and gets the result back at the end. */
#include "collectives/collective-private.h"

void
weft_rhd_group (WeftSchedule *s, const uint32_t *members, uint32_t n,
                uint64_t base, uint64_t size, uint32_t tag, uint32_t *after)
{
  uint32_t p2 = 1, levels = 0;

  while (p2 * 2 <= n)
    {
      p2 *= 2;
      levels++;
    }
  uint32_t extra = n - p2;
  /* Each send and receive, to pair them: by member and level, halving's
   * and doubling's; the extra members' hand-over and return. */
  size_t cells = MAX ((size_t) p2 * levels, 1);
  g_autofree uint32_t *half_send = g_new (uint32_t, cells);
  g_autofree uint32_t *half_recv = g_new (uint32_t, cells);
  g_autofree uint32_t *doub_send = g_new (uint32_t, cells);
  g_autofree uint32_t *doub_recv = g_new (uint32_t, cells);
  g_autofree uint32_t *handed = g_new (uint32_t, MAX (extra, 1));
  g_autofree uint32_t *returned = g_new (uint32_t, MAX (extra, 1));

  for (uint32_t j = p2; j < n; j++)
    {
      uint32_t sent = weft_schedule_send (s, members[j], members[j - p2], tag,
                                          size, after[j]);
      handed[j - p2] = sent;
      after[j] = returned[j - p2] = weft_schedule_recv (
          s, members[j], members[j - p2], tag, size, sent);
      weft_schedule_region (s, members[j], sent, base);
      weft_schedule_region (s, members[j], after[j], base);
    }
  for (uint32_t j = 0; j < p2; j++)
    {
      uint32_t r = members[j], dep = after[j];
      if (j < extra)
        {
          uint32_t got = weft_schedule_recv (s, r, members[j + p2], tag, size,
                                             WEFT_NO_STEP);
          weft_schedule_match (s, members[j + p2], handed[j], r, got);
          uint32_t deps[2] = { got, dep };
          dep = weft_schedule_add (s, r, WEFT_STEP_REDUCE, 0, 0, size, deps,
                                   dep == WEFT_NO_STEP ? 1 : 2);
          weft_schedule_region (s, r, got, base);
          weft_schedule_region (s, r, dep, base);
        }

      /* Halving: keep one half of the segment, send the other, and add
       * the partner's copy of the kept half. */
      uint64_t lo = 0, hi = size;
      uint64_t stack_lo[32], stack_hi[32];
      int depth = 0;
      uint32_t level = 0;
      for (uint32_t mask = p2 / 2; mask >= 1; mask /= 2, level++)
        {
          uint32_t partner = members[j ^ mask];
          uint64_t mid = lo + (hi - lo) / 2;
          stack_lo[depth] = lo;
          stack_hi[depth++] = hi;
          gboolean lower = (j & mask) == 0;
          uint64_t give = lower ? hi - mid : mid - lo;
          half_send[(size_t) j * levels + level]
              = weft_schedule_send (s, r, partner, tag, give, dep);
          weft_schedule_region (s, r, half_send[(size_t) j * levels + level],
                                base + (lower ? mid : lo));
          if (lower)
            hi = mid;
          else
            lo = mid;
          uint32_t recv = weft_schedule_recv (s, r, partner, tag, hi - lo,
                                              WEFT_NO_STEP);
          half_recv[(size_t) j * levels + level] = recv;
          /* The kept half is what the level before added up: the partner's
           * copy goes in once that is done, not only once it has come. */
          uint32_t deps[2] = { recv, dep };
          dep = weft_schedule_add (s, r, WEFT_STEP_REDUCE, 0, 0, hi - lo, deps,
                                   dep == WEFT_NO_STEP ? 1 : 2);
          weft_schedule_region (s, r, recv, base + lo);
          weft_schedule_region (s, r, dep, base + lo);
          if (mask == 1)
            break;
        }
      /* Doubling: swap segments with the same partners in reverse. */
      level = 0;
      for (uint32_t mask = 1; mask < p2; mask *= 2, level++)
        {
          uint32_t partner = members[j ^ mask];
          depth--;
          uint64_t whole = stack_hi[depth] - stack_lo[depth];
          doub_send[(size_t) j * levels + level]
              = weft_schedule_send (s, r, partner, tag, hi - lo, dep);
          weft_schedule_region (s, r, doub_send[(size_t) j * levels + level],
                                base + lo);
          /* What follows sends this segment and the one received: the
           * receive ends once both are there. */
          dep = doub_recv[(size_t) j * levels + level] = weft_schedule_recv (
              s, r, partner, tag, whole - (hi - lo), dep);
          /* The partner's half of the segment: the other side of ours. */
          weft_schedule_region (s, r, dep,
                                base + (lo == stack_lo[depth] ? hi
                                                              : stack_lo[depth]));
          lo = stack_lo[depth];
          hi = stack_hi[depth];
        }
      if (j < extra)
        {
          uint32_t back = weft_schedule_send (s, r, members[j + p2], tag, size,
                                              dep);
          weft_schedule_region (s, r, back, base);
          weft_schedule_match (s, r, back, members[j + p2], returned[j]);
        }
      after[j] = dep;
    }
  /* Each exchange's send with its partner's receive of the same level. */
  for (uint32_t j = 0; j < p2; j++)
    for (uint32_t level = 0; level < levels; level++)
      {
        uint32_t half_mask = (p2 / 2) >> level, doub_mask = 1u << level;
        weft_schedule_match (s, members[j],
                             half_send[(size_t) j * levels + level],
                             members[j ^ half_mask],
                             half_recv[(size_t) (j ^ half_mask) * levels
                                       + level]);
        weft_schedule_match (s, members[j],
                             doub_send[(size_t) j * levels + level],
                             members[j ^ doub_mask],
                             doub_recv[(size_t) (j ^ doub_mask) * levels
                                       + level]);
      }
}

void
weft_rhd_all_reduce (WeftSchedule *s, uint64_t size,
                     const WeftCollectiveParams *p)
{
  uint32_t n = s->n_ranks;
  g_autofree uint32_t *members = g_new (uint32_t, n);
  g_autofree uint32_t *after = g_new (uint32_t, n);

  for (uint32_t r = 0; r < n; r++)
    {
      members[r] = r;
      after[r] = WEFT_NO_STEP;
    }
  /* One piece: halving-doubling has no channels or chunks. */
  (void) p;
  weft_rhd_group (s, members, n, 0, size, 0, after);
}
