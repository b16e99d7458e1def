/* weft: all_to_all, direct (every rank sends to every other at once) and
 * pairwise (n - 1 rounds; in round t rank r sends to r + t and receives
 * from r - t, waiting for the previous round).  nccl-tests counts size per
 * rank; rank r's block for peer q is piece q of it. */
#include "collectives/collective-private.h"

void
weft_direct_all_to_all (WeftSchedule *s, uint64_t size,
                        const WeftCollectiveParams *p)
{
  uint32_t n = s->n_ranks;

  (void) p;                     /* one message a pair: no pieces */
  for (uint32_t r = 0; r < n; r++)
    for (uint32_t q = 0; q < n; q++)
      if (q != r)
        weft_schedule_region (
            s, r,
            weft_schedule_send (s, r, q, 0, weft_part (size, n, q),
                                WEFT_NO_STEP),
            weft_part_offset (size, n, q));
  /* Rank q's block for r lands in block q of r's output. */
  for (uint32_t r = 0; r < n; r++)
    for (uint32_t q = 0; q < n; q++)
      if (q != r)
        weft_schedule_region (
            s, r,
            weft_schedule_recv (s, r, q, 0, weft_part (size, n, r),
                                WEFT_NO_STEP),
            size + weft_part_offset (size, n, q));
}

void
weft_pairwise_all_to_all (WeftSchedule *s, uint64_t size,
                          const WeftCollectiveParams *p)
{
  uint32_t n = s->n_ranks;

  (void) p;                     /* one message a pair: no pieces */
  for (uint32_t r = 0; r < n; r++)
    {
      uint32_t sent = WEFT_NO_STEP, got = WEFT_NO_STEP;
      for (uint32_t t = 1; t < n; t++)
        {
          uint32_t to = (r + t) % n, from = (r + n - t) % n;
          uint32_t deps[2] = { sent, got };
          sent = weft_schedule_add (s, r, WEFT_STEP_SEND, to, 0,
                                    weft_part (size, n, to), deps, 2);
          got = weft_schedule_add (s, r, WEFT_STEP_RECV, from, 0,
                                   weft_part (size, n, r), deps, 2);
          weft_schedule_region (s, r, sent, weft_part_offset (size, n, to));
          weft_schedule_region (s, r, got,
                                size + weft_part_offset (size, n, from));
        }
    }
}
