/* weft: recursive halving-doubling all_reduce (Rabenseifner): a
 * reduce-scatter by recursive halving, then an all-gather by recursive
 * doubling, among the largest power of two of ranks; each rank beyond it
 * first hands its buffer to a partner and gets the result back at the end. */
#include "collective-private.h"

void
weft_rhd_group (WeftSchedule *s, const uint32_t *members, uint32_t n,
                uint64_t size, uint32_t tag, uint32_t *after)
{
  uint32_t p2 = 1;

  while (p2 * 2 <= n)
    p2 *= 2;
  uint32_t extra = n - p2;
  for (uint32_t j = p2; j < n; j++)
    {
      uint32_t sent = weft_schedule_send (s, members[j], members[j - p2], tag,
                                          size, after[j]);
      after[j] = weft_schedule_recv (s, members[j], members[j - p2], tag, size,
                                     sent);
    }
  for (uint32_t j = 0; j < p2; j++)
    {
      uint32_t r = members[j], dep = after[j];
      if (j < extra)
        {
          uint32_t got = weft_schedule_recv (s, r, members[j + p2], tag, size,
                                             WEFT_NO_STEP);
          uint32_t deps[2] = { got, dep };
          dep = weft_schedule_add (s, r, WEFT_STEP_REDUCE, 0, 0, size, deps,
                                   dep == WEFT_NO_STEP ? 1 : 2);
        }

      /* Halving: keep one half of the segment, send the other, and add
       * the partner's copy of the kept half. */
      uint64_t lo = 0, hi = size;
      uint64_t stack_lo[32], stack_hi[32];
      int depth = 0;
      for (uint32_t mask = p2 / 2; mask >= 1; mask /= 2)
        {
          uint32_t partner = members[j ^ mask];
          uint64_t mid = lo + (hi - lo) / 2;
          stack_lo[depth] = lo;
          stack_hi[depth++] = hi;
          gboolean lower = (j & mask) == 0;
          uint64_t give = lower ? hi - mid : mid - lo;
          weft_schedule_send (s, r, partner, tag, give, dep);
          if (lower)
            hi = mid;
          else
            lo = mid;
          uint32_t recv = weft_schedule_recv (s, r, partner, tag, hi - lo,
                                              WEFT_NO_STEP);
          dep = weft_schedule_reduce (s, r, hi - lo, recv);
          if (mask == 1)
            break;
        }
      /* Doubling: swap segments with the same partners in reverse. */
      for (uint32_t mask = 1; mask < p2; mask *= 2)
        {
          uint32_t partner = members[j ^ mask];
          depth--;
          uint64_t whole = stack_hi[depth] - stack_lo[depth];
          weft_schedule_send (s, r, partner, tag, hi - lo, dep);
          dep = weft_schedule_recv (s, r, partner, tag, whole - (hi - lo),
                                    WEFT_NO_STEP);
          lo = stack_lo[depth];
          hi = stack_hi[depth];
        }
      if (j < extra)
        weft_schedule_send (s, r, members[j + p2], tag, size, dep);
      after[j] = dep;
    }
}

void
weft_rhd_all_reduce (WeftSchedule *s, uint64_t size)
{
  uint32_t n = s->n_ranks;
  g_autofree uint32_t *members = g_new (uint32_t, n);
  g_autofree uint32_t *after = g_new (uint32_t, n);

  for (uint32_t r = 0; r < n; r++)
    {
      members[r] = r;
      after[r] = WEFT_NO_STEP;
    }
  weft_rhd_group (s, members, n, size, 0, after);
}
