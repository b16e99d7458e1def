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

  uint64_t at = 0;                /* where switch j's share begins */
  for (uint32_t j = 0; j < m; at += share[j], j++)
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
          uint64_t where = at + weft_part_offset (share[j], pieces, k);
          uint32_t up = 2 * k, down = 2 * k + 1;
          if (bytes == 0)
            continue;
          for (uint32_t r = 0; r < n; r++)
            {
              prev_up[r] = weft_schedule_send (s, r, sw, up, bytes,
                                               prev_up[r]);
              weft_schedule_region (s, r, prev_up[r], where);
            }
          /* The switch adds the n inputs as they stream in: one pass of
           * its engine over the piece once all have arrived. */
          g_autofree uint32_t *got = g_new (uint32_t, n);
          for (uint32_t r = 0; r < n; r++)
            {
              got[r] = weft_schedule_recv (s, sw, r, up, bytes, WEFT_NO_STEP);
              weft_schedule_region (s, sw, got[r], where);
            }
          uint32_t sum = weft_schedule_add (s, sw, WEFT_STEP_REDUCE, 0, 0,
                                            bytes, got, n);
          weft_schedule_region (s, sw, sum, where);
          for (uint32_t r = 0; r < n; r++)
            {
              uint32_t deps[2] = { sum, prev_down[r] };
              prev_down[r] = weft_schedule_add (s, sw, WEFT_STEP_SEND, r, down,
                                                bytes, deps, 2);
              weft_schedule_region (s, sw, prev_down[r], where);
            }
          for (uint32_t r = 0; r < n; r++)
            weft_schedule_region (
                s, r, weft_schedule_recv (s, r, sw, down, bytes, WEFT_NO_STEP),
                where);
        }
    }
}

uint32_t
weft_nvls_switch_ranks (uint32_t n, const WeftCollectiveParams *p)
{
  (void) n;
  return p->n_switches;
}

/* NVLS's pieces when left to auto (weft_fit_pieces()): each send waits
 * NVLS's latency, and the buffer moves at what the GPU's links to the @m
 * @switches carry. */
static uint32_t
nvls_pieces (const WeftTopology *topo, uint32_t gpu, const uint32_t *switches,
             uint32_t m, uint64_t size)
{
  const WeftProtocol *costs = weft_protocol_get (WEFT_PROTOCOL_SIMPLE,
                                                 WEFT_ALG_NVLS);
  double rate = 0;

  for (uint32_t i = topo->out_start[gpu]; i < topo->out_start[gpu + 1]; i++)
    {
      const WeftLink *l = &topo->links[topo->out_links[i]];
      for (uint32_t j = 0; j < m; j++)
        if (l->dst == switches[j])
          rate += weft_link_nccl_rate (topo, l);
    }
  return weft_fit_pieces ((double) costs->hop_nvlink * 1e-12,
                          (double) size / (rate * costs->efficiency));
}

/* The switches that reduce joined to every GPU of the run, each with the
 * share of the buffer the first GPU's lanes to it carry. */
gboolean
weft_nvls_fit (WeftFit *fit, WeftCollectiveParams *p, GError **error)
{
  /* Asked only whether it fits, one GPU does: it moves nothing. */
  if (p == NULL && fit->n < 2)
    return TRUE;
  if (!weft_fit_switches (fit->topo, fit->gpus, fit->n, fit->nodes,
                          fit->shares, error))
    return FALSE;
  if (p == NULL)
    return TRUE;
  p->n_switches = fit->shares->len;
  p->switch_share = (const double *) fit->shares->data;
  if (p->chunks == 0 && p->channels <= 1)
    p->chunks = nvls_pieces (fit->topo, fit->gpus[0],
                             &g_array_index (fit->nodes, uint32_t, fit->n),
                             p->n_switches, fit->size);
  const uint32_t *sw = &g_array_index (fit->nodes, uint32_t, fit->n);
  const double *lanes = (const double *) fit->shares->data;
  uint32_t m = fit->shares->len;
  if (!p->split_planes && fit->planes
      && weft_fit_planes (fit->topo, fit->gpus, fit->n, sw, lanes, m))
    {
      /* The chips as one place: what each would move, in one transfer. */
      uint32_t place = weft_fit_add_planes (fit, sw, lanes, m);
      double total = 0;
      for (uint32_t j = 0; j < m; j++)
        total += lanes[j];
      g_array_set_size (fit->nodes, fit->n);
      g_array_append_val (fit->nodes, place);
      g_array_set_size (fit->shares, 0);
      g_array_append_val (fit->shares, total);
      p->n_switches = 1;
      p->switch_share = (const double *) fit->shares->data;
    }
  return TRUE;
}
