/* weft: recursive halving-doubling all_reduce (Rabenseifner): a
 * reduce-scatter by recursive halving, then an all-gather by recursive
 * doubling, among the largest power of two of ranks; each rank beyond it
 * first hands its buffer to a partner and gets the result back at the end. */
#include "collective-private.h"

void
weft_rhd_all_reduce (WeftSchedule *s, uint64_t size)
{
  uint32_t n = s->n_ranks, p2 = 1;

  while (p2 * 2 <= n)
    p2 *= 2;
  uint32_t extra = n - p2;
  for (uint32_t r = p2; r < n; r++)
    {
      uint32_t sent = weft_schedule_send (s, r, r - p2, 0, size, WEFT_NO_STEP);
      weft_schedule_recv (s, r, r - p2, 0, size, sent);
    }
  for (uint32_t r = 0; r < p2; r++)
    {
      uint32_t dep = WEFT_NO_STEP;
      if (r < extra)
        dep = weft_schedule_reduce (
            s, r, size, weft_schedule_recv (s, r, r + p2, 0, size, WEFT_NO_STEP));

      /* Halving: keep one half of the segment, send the other, and add
       * the partner's copy of the kept half. */
      uint64_t lo = 0, hi = size;
      uint64_t stack_lo[32], stack_hi[32];
      int depth = 0;
      for (uint32_t mask = p2 / 2; mask >= 1; mask /= 2)
        {
          uint32_t partner = r ^ mask;
          uint64_t mid = lo + (hi - lo) / 2;
          stack_lo[depth] = lo;
          stack_hi[depth++] = hi;
          gboolean lower = (r & mask) == 0;
          uint64_t give = lower ? hi - mid : mid - lo;
          weft_schedule_send (s, r, partner, 0, give, dep);
          if (lower)
            hi = mid;
          else
            lo = mid;
          uint32_t recv = weft_schedule_recv (s, r, partner, 0, hi - lo,
                                              WEFT_NO_STEP);
          dep = weft_schedule_reduce (s, r, hi - lo, recv);
          if (mask == 1)
            break;
        }
      /* Doubling: swap segments with the same partners in reverse. */
      for (uint32_t mask = 1; mask < p2; mask *= 2)
        {
          uint32_t partner = r ^ mask;
          depth--;
          uint64_t whole = stack_hi[depth] - stack_lo[depth];
          weft_schedule_send (s, r, partner, 0, hi - lo, dep);
          dep = weft_schedule_recv (s, r, partner, 0, whole - (hi - lo),
                                    WEFT_NO_STEP);
          lo = stack_lo[depth];
          hi = stack_hi[depth];
        }
      if (r < extra)
        weft_schedule_send (s, r, r + p2, 0, size, dep);
    }
}
