/* weft: the congestion-unaware analytical fidelity (analytical-free): each
 * transfer takes its path's latency plus its bytes over the path's
 * bottleneck (or its cap), with no sharing between transfers: a link
 * carries every transfer on it at its full rate at once.  A striped
 * transfer is one transfer over its stripes' links, so the bytes of
 * stripes that meet again on a link go over it together. */
#include "network/network.h"

#include <math.h>
#include <string.h>

typedef struct {
  WeftNetwork base;
  WeftTime *busy_until;         /* per link: end of its latest transfer */
  /* Kept only under faults with times, by transfer id: when it started
   * and when it leaves, and whether it was withdrawn (its slot is freed
   * when it would have left). */
  WeftTime *began, *leaves;
  uint8_t *withdrawn;
  uint32_t kept;
} Free;

static WeftNetwork *
free_create (void)
{
  Free *a = g_new0 (Free, 1);

  return &a->base;
}

static void
free_destroy (WeftNetwork *net)
{
  Free *a = (Free *) net;

  g_free (a->busy_until);
  g_free (a->began);
  g_free (a->leaves);
  g_free (a->withdrawn);
  g_free (a);
}

/* Transfer @data's last byte has left: it arrives one path latency on. */
static void
drained (WeftSim *sim, void *target, void *data)
{
  WeftNetwork *net = target;
  Free *a = target;
  uint32_t id = GPOINTER_TO_UINT (data);

  (void) sim;
  if (G_UNLIKELY (a->withdrawn != NULL && a->withdrawn[id]))
    {
      a->withdrawn[id] = FALSE;
      weft_network_release (net, id);
      return;
    }
  weft_network_complete (net, id, net->transfers[id].latency);
}

/* Transfer @id (net->starting: its links, and a striped one's bytes per
 * link, maybe unaligned) leaves once the link its bytes take longest on
 * has carried them at its full rate, or its cap allows, whichever is
 * later.  Its stripes are one transfer, so stripes that meet again on a
 * link share it: a transfer gets each link once, other transfers or
 * not.  Each link's bytes are spread over that time; its busy time is
 * the union of the transfers on it. */
static void
free_start (WeftNetwork *net, uint32_t id)
{
  Free *a = (Free *) net;
  const WeftTransfer *t = &net->transfers[id];
  const char *links = (const char *) net->starting.links;
  const char *link_bytes = net->starting.link_bytes;
  WeftTime now = weft_sim_now (net->sim);
  WeftTime span = t->cap > 0 ? (WeftTime) ceil ((double) t->bytes * 1e12
                                                / t->cap)
                             : 0;

  if (a->busy_until == NULL)
    a->busy_until = g_new0 (WeftTime, MAX (net->n_links, 1));
  for (uint32_t i = 0; i < t->path_len; i++)
    {
      uint32_t l;
      uint64_t bytes = t->bytes;
      memcpy (&l, links + i * sizeof l, sizeof l);
      if (t->striped)
        memcpy (&bytes, link_bytes + i * sizeof bytes, sizeof bytes);
      span = MAX (span, (WeftTime) ceil ((double) bytes * 1e12
                                         / net->capacity[l]));
    }
  for (uint32_t i = 0; i < t->path_len; i++)
    {
      uint32_t l;
      uint64_t bytes = t->bytes;
      memcpy (&l, links + i * sizeof l, sizeof l);
      if (t->striped)
        memcpy (&bytes, link_bytes + i * sizeof bytes, sizeof bytes);
      weft_link_stats_count (net->stats, l, bytes);
      weft_link_stats_spread (net->stats, l, now, now + span, (double) bytes);
      /* Transfers overlap freely here; busy time is their union. */
      WeftTime from = MAX (now, a->busy_until[l]);
      if (now + span > from)
        net->stats->links[l].busy += now + span - from;
      a->busy_until[l] = MAX (a->busy_until[l], now + span);
    }
  if (G_UNLIKELY (net->keep_paths))
    {
      if (id >= a->kept)
        {
          a->kept = MAX (net->transfers_cap, id + 1);
          a->began = g_renew (WeftTime, a->began, a->kept);
          a->leaves = g_renew (WeftTime, a->leaves, a->kept);
          a->withdrawn = g_realloc (a->withdrawn, a->kept);
        }
      a->began[id] = now;
      a->leaves[id] = now + span;
      a->withdrawn[id] = FALSE;
    }
  weft_sim_schedule (net->sim, span, drained, net, GUINT_TO_POINTER (id));
}

/* Bytes go at the full rate of each link whatever the others: a new rate
 * applies to transfers that start from now on. */
static void
free_relink (WeftNetwork *net, uint32_t link, double old_capacity)
{
  (void) net;
  (void) link;
  (void) old_capacity;
}

/* It has moved its bytes evenly over its span: what is left of the span
 * is left of its bytes, taken back from its links' statistics. */
static uint64_t
free_withdraw (WeftNetwork *net, uint32_t id, gboolean lost, gboolean *keeps)
{
  Free *a = (Free *) net;
  const WeftTransfer *t = &net->transfers[id];
  WeftTime now = weft_sim_now (net->sim);
  WeftTime began = a->began[id], leaves = a->leaves[id];

  (void) lost;                  /* a fluid loses nothing */
  *keeps = FALSE;
  if (leaves <= now)
    return 0;
  double rest = (double) (leaves - now) / (double) (leaves - began);
  uint64_t left = MIN (t->bytes, (uint64_t) ceil ((double) t->bytes * rest));
  for (uint32_t i = 0; i < t->path_len; i++)
    {
      uint32_t l = t->path[i];
      double bytes = (double) (t->striped ? t->link_bytes[i] : t->bytes);
      uint64_t gone = MIN ((uint64_t) llround (bytes * rest),
                           net->stats->links[l].bytes);
      net->stats->links[l].bytes -= gone;
      weft_link_stats_unspread (net->stats, l, now, leaves, bytes * rest);
      /* A link that is down carries nothing from now on. */
      if (net->capacity[l] == 0 && a->busy_until[l] > now)
        {
          net->stats->links[l].busy -= a->busy_until[l] - now;
          a->busy_until[l] = now;
        }
    }
  a->withdrawn[id] = TRUE;
  return left;
}

const WeftNetworkClass weft_network_analytical_free_class = {
  .name = "analytical-free",
  .create = free_create,
  .start = free_start,
  .destroy = free_destroy,
  .relink = free_relink,
  .withdraw = free_withdraw,
  .whole_stripes = TRUE,
  .counts_bytes = TRUE,
  .link_state = sizeof (WeftTime),
  .transfer_state = 0,
};
