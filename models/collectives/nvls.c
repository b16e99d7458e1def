/* weft: NVLS all_reduce: every GPU sends its buffer to the NVSwitch chips
 * (each chip takes a share, as the GPU's links to it carry), each chip adds
 * up what the GPUs sent and multicasts the sum back to every GPU.  The
 * switches are ranks n .. n + m - 1 of the schedule; their reductions run
 * on the switch's in-network reduction engine.  Pieces are pipelined in
 * `channels x chunks`. */
#include "collectives/collective-private.h"

#include <math.h>

void
weft_nvls_all_reduce (WeftSchedule *s, uint64_t size,
                      const WeftCollectiveParams *p)
{
  uint32_t n = s->n_gpus, m = p->n_switches;
  uint32_t pieces = p->channels * p->chunks;
  g_autofree uint64_t *share = g_new (uint64_t, m);
  double total = 0;
  uint64_t given = 0;

  g_assert (m > 0);
  /* Each switch's share of the buffer, in whole bytes. */
  for (uint32_t j = 0; j < m; j++)
    total += p->switch_share[j];
  for (uint32_t j = 0; j < m; j++)
    {
      share[j] = (uint64_t) floor ((double) size * p->switch_share[j] / total);
      given += share[j];
    }
  share[0] += size - given;

  for (uint32_t j = 0; j < m; j++)
    {
      uint32_t sw = n + j;
      /* Pieces go one after another on each GPU's way to a switch and
       * back, so that one piece's multicast overlaps the next's upload. */
      g_autofree uint32_t *prev_up = g_new (uint32_t, n);
      g_autofree uint32_t *prev_down = g_new (uint32_t, n);
      for (uint32_t r = 0; r < n; r++)
        prev_up[r] = prev_down[r] = WEFT_NO_STEP;
      for (uint32_t k = 0; k < pieces; k++)
        {
          uint64_t bytes = weft_part (share[j], pieces, k);
          uint32_t up = 2 * k, down = 2 * k + 1;
          if (bytes == 0)
            continue;
          for (uint32_t r = 0; r < n; r++)
            prev_up[r] = weft_schedule_send (s, r, sw, up, bytes, prev_up[r]);
          /* The switch adds the n inputs as they stream in: one pass of
           * its engine over the piece once all have arrived. */
          g_autofree uint32_t *got = g_new (uint32_t, n);
          for (uint32_t r = 0; r < n; r++)
            got[r] = weft_schedule_recv (s, sw, r, up, bytes, WEFT_NO_STEP);
          uint32_t sum = weft_schedule_add (s, sw, WEFT_STEP_REDUCE, 0, 0,
                                            bytes, got, n);
          for (uint32_t r = 0; r < n; r++)
            {
              uint32_t deps[2] = { sum, prev_down[r] };
              prev_down[r] = weft_schedule_add (s, sw, WEFT_STEP_SEND, r, down,
                                                bytes, deps, 2);
            }
          for (uint32_t r = 0; r < n; r++)
            weft_schedule_recv (s, r, sw, down, bytes, WEFT_NO_STEP);
        }
    }
}
