/* weft: running one collective on a topology and timing it. */
#include "collective_run.h"

static void
finished (WeftSim *sim, void *target, void *data)
{
  (void) data;
  *(WeftTime *) target = weft_sim_now (sim);
  weft_sim_stop (sim);
}

gboolean
weft_collective_run (const WeftTopology *topo, const uint32_t *gpus,
                     uint32_t n, WeftOp op, WeftAlgorithm alg,
                     WeftProtocolKind protocol, uint64_t size,
                     const WeftCollectiveParams *params, WeftFidelity fidelity,
                     uint64_t seed, WeftCollectiveResult *result,
                     GError **error)
{
  g_autoptr (WeftSchedule) schedule = weft_collective_schedule (op, alg, n,
                                                                size, params);
  if (!weft_schedule_check (schedule, error))
    return FALSE;

  g_autoptr (WeftSim) sim = weft_sim_new ();
  WeftNetworkConfig config = { fidelity, 100 * WEFT_US, seed };
  g_autoptr (WeftNetwork) net = weft_network_new (sim, topo, &config);
  WeftTime end = WEFT_TIME_MAX;

  weft_execute (net, schedule, gpus, weft_protocol_get (protocol, alg),
                finished, &end, NULL);
  weft_sim_run (sim);
  g_assert (end != WEFT_TIME_MAX);
  result->time = end;
  result->bytes_sent = weft_schedule_bytes_sent (schedule);
  result->events = weft_sim_events_run (sim);
  return TRUE;
}
