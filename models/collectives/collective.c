/* weft: collective operations: names, bus bandwidth factors, and the
 * dispatch to the algorithms' builders through their rows. */
#include "collectives/collective-private.h"

#include <string.h>

static const char *const op_names[] = {
  "all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce",
  "all_to_all", "send_recv",
};

const char *
weft_op_name (WeftOp op)
{
  return op_names[op];
}

gboolean
weft_op_parse (const char *name, WeftOp *op)
{
  for (int i = 0; i < WEFT_OP_COUNT; i++)
    if (g_strcmp0 (name, op_names[i]) == 0)
      {
        *op = (WeftOp) i;
        return TRUE;
      }
  return FALSE;
}

const char *
weft_op_names (void)
{
  return "all_reduce, all_gather, reduce_scatter, broadcast, reduce, "
         "all_to_all, send_recv";
}

uint64_t
weft_op_bytes (WeftOp op, uint32_t n, uint64_t size)
{
  if (n < 2)
    return 0;
  switch (op)
    {
    case WEFT_OP_ALL_REDUCE:
      return 2 * (uint64_t) (n - 1) * size;
    case WEFT_OP_SEND_RECV:
      return (uint64_t) n * size;
    default:
      return (uint64_t) (n - 1) * size;
    }
}

double
weft_op_bus_factor (WeftOp op, uint32_t n)
{
  switch (op)
    {
    case WEFT_OP_ALL_REDUCE:
      return 2.0 * (n - 1) / n;
    case WEFT_OP_ALL_GATHER:
    case WEFT_OP_REDUCE_SCATTER:
    case WEFT_OP_ALL_TO_ALL:
      return (double) (n - 1) / n;
    default:
      return 1.0;
    }
}

uint32_t
weft_collective_ranks (WeftAlgorithm alg, uint32_t n,
                       const WeftCollectiveParams *params)
{
  const WeftAlgorithmInfo *a = weft_algorithm_get (alg);

  return n + (a->switch_ranks ? a->switch_ranks (n, params) : 0);
}

typedef enum { MAKE_KEPT, MAKE_COUNTED, MAKE_STREAMED, MAKE_REGIONS } Make;

/* weft_collective_schedule() into a schedule that keeps its steps, counts
 * them or streams them to @sink. */
static WeftSchedule *
build (WeftOp op, WeftAlgorithm alg, uint32_t n, uint64_t size,
       const WeftCollectiveParams *params, Make make, WeftRankSink sink,
       WeftAlikeSink alike, void *sink_data)
{
  const WeftAlgorithmInfo *a = weft_algorithm_get (alg);
  uint32_t ranks = weft_collective_ranks (alg, n, params);
  WeftSchedule *s = make == MAKE_COUNTED ? weft_schedule_new_counting (ranks)
                    : make == MAKE_STREAMED
                        ? weft_schedule_new_streaming (ranks, sink, alike,
                                                       sink_data)
                        : weft_schedule_new (ranks);
  WeftCollectiveParams p = *params;

  if (make == MAKE_REGIONS)
    weft_schedule_track_regions (s);

  g_assert (a->build[op] != NULL);
  s->n_gpus = n;
  /* Channels and chunks left 0 are the algorithm's to choose; most take
   * one channel and WEFT_CHUNKS chunks. */
  if (a->defaults)
    a->defaults (op, &p);
  else
    {
      p.channels = MAX (p.channels, 1);
      if (p.chunks == 0)
        p.chunks = WEFT_CHUNKS;
    }
  if (n < 2 || size == 0)
    return s;                   /* nothing crosses the network */
  a->build[op] (s, size, &p);
  return s;
}

WeftSchedule *
weft_collective_schedule (WeftOp op, WeftAlgorithm alg, uint32_t n,
                          uint64_t size, const WeftCollectiveParams *params)
{
  return build (op, alg, n, size, params, MAKE_KEPT, NULL, NULL, NULL);
}

WeftSchedule *
weft_collective_schedule_regions (WeftOp op, WeftAlgorithm alg, uint32_t n,
                                  uint64_t size,
                                  const WeftCollectiveParams *params)
{
  return build (op, alg, n, size, params, MAKE_REGIONS, NULL, NULL, NULL);
}

WeftSchedule *
weft_collective_count (WeftOp op, WeftAlgorithm alg, uint32_t n,
                       uint64_t size, const WeftCollectiveParams *params)
{
  return build (op, alg, n, size, params, MAKE_COUNTED, NULL, NULL, NULL);
}

WeftSchedule *
weft_collective_stream (WeftOp op, WeftAlgorithm alg, uint32_t n,
                        uint64_t size, const WeftCollectiveParams *params,
                        WeftRankSink sink, WeftAlikeSink alike,
                        void *sink_data)
{
  return build (op, alg, n, size, params, MAKE_STREAMED, sink, alike,
                sink_data);
}
