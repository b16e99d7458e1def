/* weft: NVLS, the NVSwitch chips' multicast and in-network reduction.
 * all_reduce: every GPU sends its buffer to the chips (each chip takes a
 * share, as the GPU's links to it carry), each chip adds up what the GPUs
 * sent and multicasts the sum back to every GPU.  all_gather: each GPU
 * stores its part once to the multicast address and the chips deliver it
 * to every GPU, itself included (NCCL's NVLS all_gather, NCCL 2.19 on):
 * a GPU's links carry its part up and the whole buffer down.
 * reduce_scatter: each GPU's part is read from every GPU and added up in
 * the chips (multimem.ld_reduce), which hand the GPU the sum: the whole
 * buffer up, its part down.  The switches are ranks n .. n + m - 1 of the
 * schedule; their reductions run on the switch's in-network reduction
 * engine.  Pieces are pipelined in `channels x chunks`. */
#include "collectives/collective-private.h"
#include "collectives/nccl_model.h"

#include <math.h>

/* Each switch's share of @size bytes, in whole bytes, as @p's switches
 * share a GPU's links. */
static uint64_t *
switch_shares (uint64_t size, const WeftCollectiveParams *p)
{
  uint32_t m = p->n_switches;
  uint64_t *share = g_new (uint64_t, m);
  double total = 0;
  uint64_t given = 0;

  g_assert (m > 0);
  for (uint32_t j = 0; j < m; j++)
    total += p->switch_share[j];
  for (uint32_t j = 0; j < m; j++)
    {
      share[j] = (uint64_t) floor ((double) size * p->switch_share[j] / total);
      given += share[j];
    }
  share[0] += size - given;
  return share;
}

void
weft_nvls_all_reduce (WeftSchedule *s, uint64_t size,
                      const WeftCollectiveParams *p)
{
  uint32_t n = s->n_gpus, m = p->n_switches;
  uint32_t pieces = p->channels * p->chunks;
  g_autofree uint64_t *share = switch_shares (size, p);

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

/* all_gather (@gather) or reduce_scatter by NVLS.  GPU g's part of the
 * buffer is cut by the switches' shares, and each switch's cut into the
 * pieces; piece k of switch j is the k-th of every part's cut for j.
 * A GPU sends its own part's piece (all_gather) or every part's
 * (reduce_scatter) to the switch; once the switch has it from every GPU
 * (and, for reduce_scatter, has added them up), it sends each GPU every
 * part's piece (all_gather) or its own part's (reduce_scatter).  A GPU's
 * sends to a switch, and a switch's to a GPU, go in turn, as
 * all_reduce's. */
static void
gather_or_scatter (WeftSchedule *s, uint64_t size,
                   const WeftCollectiveParams *p, gboolean gather)
{
  uint32_t n = s->n_gpus, m = p->n_switches;
  uint32_t pieces = p->channels * p->chunks;
  /* Per part g and switch j: where the part's cut for j begins in the
   * buffer, and its bytes. */
  g_autofree uint64_t *cut_at = g_new (uint64_t, (size_t) n * m);
  g_autofree uint64_t *cut = g_new (uint64_t, (size_t) n * m);
  g_autofree uint64_t *places = g_new (uint64_t, 2 * (size_t) n);
  g_autofree uint32_t *prev_up = g_new (uint32_t, n);
  g_autofree uint32_t *prev_down = g_new (uint32_t, n);
  g_autofree uint32_t *got = g_new (uint32_t, n);

  for (uint32_t g = 0; g < n; g++)
    {
      uint64_t at = weft_part_offset (size, n, g);
      g_autofree uint64_t *share = switch_shares (weft_part (size, n, g), p);
      for (uint32_t j = 0; j < m; at += share[j], j++)
        {
          cut_at[(size_t) g * m + j] = at;
          cut[(size_t) g * m + j] = share[j];
        }
    }
  for (uint32_t j = 0; j < m; j++)
    {
      uint32_t sw = n + j;
      for (uint32_t r = 0; r < n; r++)
        prev_up[r] = prev_down[r] = WEFT_NO_STEP;
      for (uint32_t k = 0; k < pieces; k++)
        {
          uint32_t up = 2 * k, down = 2 * k + 1;
          /* Piece k of every part's cut for switch j: places[2g] is
           * where part g's lies, places[2g + 1] its bytes. */
          uint64_t all = 0;
          for (uint32_t g = 0; g < n; g++)
            {
              uint64_t c = cut[(size_t) g * m + j];
              places[2 * g] = cut_at[(size_t) g * m + j]
                              + weft_part_offset (c, pieces, k);
              places[2 * g + 1] = weft_part (c, pieces, k);
              all += places[2 * g + 1];
            }
          if (all == 0)
            continue;
          for (uint32_t r = 0; r < n; r++)
            {
              uint64_t bytes = gather ? places[2 * r + 1] : all;
              if (bytes == 0)
                {
                  got[r] = WEFT_NO_STEP;
                  continue;
                }
              prev_up[r] = weft_schedule_send (s, r, sw, up, bytes,
                                               prev_up[r]);
              got[r] = weft_schedule_recv (s, sw, r, up, bytes,
                                           WEFT_NO_STEP);
              if (gather)
                {
                  weft_schedule_region (s, r, prev_up[r], places[2 * r]);
                  weft_schedule_region (s, sw, got[r], places[2 * r]);
                }
              else
                {
                  weft_schedule_region_list (s, r, prev_up[r], places, n);
                  weft_schedule_region_list (s, sw, got[r], places, n);
                }
            }
          /* What the switch has once every GPU's piece is in. */
          uint32_t n_got = 0;
          for (uint32_t r = 0; r < n; r++)
            if (got[r] != WEFT_NO_STEP)
              got[n_got++] = got[r];
          uint32_t ready;
          if (gather)
            ready = weft_schedule_add (s, sw, WEFT_STEP_REDUCE, 0, 0, 0, got,
                                       n_got);
          else
            {
              /* The chip adds the n inputs as they stream in: one pass
               * of its engine once all have arrived. */
              ready = weft_schedule_add (s, sw, WEFT_STEP_REDUCE, 0, 0, all,
                                         got, n_got);
              weft_schedule_region_list (s, sw, ready, places, n);
            }
          for (uint32_t r = 0; r < n; r++)
            {
              uint64_t bytes = gather ? all : places[2 * r + 1];
              if (bytes == 0)
                continue;
              uint32_t deps[2] = { ready, prev_down[r] };
              prev_down[r] = weft_schedule_add (s, sw, WEFT_STEP_SEND, r,
                                                down, bytes, deps, 2);
              uint32_t recv = weft_schedule_recv (s, r, sw, down, bytes,
                                                  WEFT_NO_STEP);
              if (gather)
                {
                  weft_schedule_region_list (s, sw, prev_down[r], places, n);
                  weft_schedule_region_list (s, r, recv, places, n);
                }
              else
                {
                  weft_schedule_region (s, sw, prev_down[r], places[2 * r]);
                  weft_schedule_region (s, r, recv, places[2 * r]);
                }
            }
        }
    }
}

void
weft_nvls_all_gather (WeftSchedule *s, uint64_t size,
                      const WeftCollectiveParams *p)
{
  gather_or_scatter (s, size, p, TRUE);
}

void
weft_nvls_reduce_scatter (WeftSchedule *s, uint64_t size,
                          const WeftCollectiveParams *p)
{
  gather_or_scatter (s, size, p, FALSE);
}

uint32_t
weft_nvls_switch_ranks (uint32_t n, const WeftCollectiveParams *p)
{
  (void) n;
  return p->n_switches;
}

/* NVLS's pieces when left to auto (weft_fit_pieces()): each send waits
 * NVLS's latency, and the buffer moves at what the first of the @n GPUs
 * @gpus has to the @m @switches, at the GPUs' NVLS efficiency. */
static uint32_t
nvls_pieces (const WeftTopology *topo, const uint32_t *gpus, uint32_t n,
             const uint32_t *switches, uint32_t m, uint64_t size)
{
  const WeftProtocol *costs = weft_protocol_get (WEFT_PROTOCOL_SIMPLE,
                                                 WEFT_ALG_NVLS);
  uint32_t gpu = gpus[0];
  double rate = 0;

  for (uint32_t i = topo->out_start[gpu]; i < topo->out_start[gpu + 1]; i++)
    {
      const WeftLink *l = &topo->links[topo->out_links[i]];
      for (uint32_t j = 0; j < m; j++)
        if (l->dst == switches[j])
          rate += weft_link_nccl_rate (topo, l);
    }
  double efficiency = weft_nccl_nvls_efficiency (topo, gpus, n);

  return weft_fit_pieces ((double) costs->hop_nvlink * 1e-12,
                          (double) size / (rate * efficiency));
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
    p->chunks = nvls_pieces (fit->topo, fit->gpus, fit->n,
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
