/* weft: the congestion-unaware analytical fidelity (analytical-free): each
 * transfer takes its path's latency plus its bytes over the path's
 * bottleneck (or its cap), with no sharing: a link carries every transfer
 * on it at its full rate at once. */
#include "network/network.h"

#include <math.h>

typedef struct {
  WeftNetwork base;
  WeftTime *busy_until;         /* per link: end of its latest transfer */
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
  g_free (a);
}

/* Transfer @data's last byte has left: it arrives one path latency on. */
static void
drained (WeftSim *sim, void *target, void *data)
{
  WeftNetwork *net = target;
  uint32_t id = GPOINTER_TO_UINT (data);

  (void) sim;
  weft_network_complete (net, id, net->transfers[id].latency);
}

/* Transfer @id (one stripe at most: this class takes no whole stripes)
 * leaves after its bytes over its path's bottleneck or its cap, whichever
 * is slower; its bytes are spread over that time on every link of its
 * path, whose busy time is the union of the transfers on it. */
static void
free_start (WeftNetwork *net, uint32_t id)
{
  const WeftTransfer *t = &net->transfers[id];
  double rate = t->cap > 0 ? MIN (t->cap, t->bottleneck) : t->bottleneck;
  WeftTime now = weft_sim_now (net->sim);
  WeftTime span = (WeftTime) ceil ((double) t->bytes * 1e12 / rate);

  Free *a = (Free *) net;

  if (a->busy_until == NULL)
    a->busy_until = g_new0 (WeftTime, MAX (net->topo->n_links, 1));
  for (uint32_t i = 0; i < t->path_len; i++)
    {
      uint32_t l = t->path[i];
      weft_link_stats_spread (net->stats, l, now, now + span,
                              (double) t->bytes);
      /* Transfers overlap freely here; busy time is their union. */
      WeftTime from = MAX (now, a->busy_until[l]);
      if (now + span > from)
        net->stats->links[l].busy += now + span - from;
      a->busy_until[l] = MAX (a->busy_until[l], now + span);
    }
  weft_sim_schedule (net->sim, span, drained, net, GUINT_TO_POINTER (id));
}

const WeftNetworkClass weft_network_analytical_free_class = {
  .name = "analytical-free",
  .create = free_create,
  .start = free_start,
  .destroy = free_destroy,
};
