/* weft: collective operations: names, bus bandwidth factors, dispatch. */
#include "collectives/collective-private.h"

#include <string.h>

static const char *const op_names[] = {
  "all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce",
  "all_to_all", "send_recv",
};

static const char *const alg_names[] = { "ring", "tree", "rhd", "direct",
                                         "pairwise", "nvls", "hierarchical",
                                         "hierarchical-rhd",
                                         "hierarchical-tree", "nvls-tree" };

/* Which algorithm implements which operation. */
static const gboolean supports[WEFT_ALG_COUNT][WEFT_OP_COUNT] = {
  [WEFT_ALG_RING] = { TRUE, TRUE, TRUE, TRUE, TRUE, FALSE, TRUE },
  [WEFT_ALG_TREE] = { TRUE, FALSE, FALSE, FALSE, FALSE, FALSE, FALSE },
  [WEFT_ALG_RHD] = { TRUE, FALSE, FALSE, FALSE, FALSE, FALSE, FALSE },
  [WEFT_ALG_DIRECT] = { FALSE, FALSE, FALSE, FALSE, FALSE, TRUE, FALSE },
  [WEFT_ALG_PAIRWISE] = { FALSE, FALSE, FALSE, FALSE, FALSE, TRUE, FALSE },
  [WEFT_ALG_NVLS] = { TRUE, FALSE, FALSE, FALSE, FALSE, FALSE, FALSE },
  [WEFT_ALG_HIER] = { TRUE, FALSE, FALSE, FALSE, FALSE, FALSE, FALSE },
  [WEFT_ALG_HIER_RHD] = { TRUE, FALSE, FALSE, FALSE, FALSE, FALSE, FALSE },
  [WEFT_ALG_HIER_TREE] = { TRUE, FALSE, FALSE, FALSE, FALSE, FALSE, FALSE },
  [WEFT_ALG_NVLS_TREE] = { TRUE, FALSE, FALSE, FALSE, FALSE, FALSE, FALSE },
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
weft_algorithm_name (WeftAlgorithm alg)
{
  return alg_names[alg];
}

gboolean
weft_algorithm_parse (const char *name, WeftAlgorithm *alg)
{
  for (int i = 0; i < WEFT_ALG_COUNT; i++)
    if (g_strcmp0 (name, alg_names[i]) == 0)
      {
        *alg = (WeftAlgorithm) i;
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

const char *
weft_algorithm_names (void)
{
  return "auto, ring, tree, rhd, direct, pairwise, nvls, hierarchical, "
         "hierarchical-rhd, hierarchical-tree, nvls-tree, or a schedule file";
}

gboolean
weft_algorithm_is_hierarchical (WeftAlgorithm alg)
{
  return alg == WEFT_ALG_HIER || alg == WEFT_ALG_HIER_RHD
         || alg == WEFT_ALG_HIER_TREE || alg == WEFT_ALG_NVLS_TREE;
}

gboolean
weft_algorithm_supports (WeftAlgorithm alg, WeftOp op)
{
  return supports[alg][op];
}

gboolean
weft_algorithm_in_auto (WeftAlgorithm alg)
{
  return alg != WEFT_ALG_RHD && alg != WEFT_ALG_HIER_RHD
         && alg != WEFT_ALG_HIER_TREE;
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

WeftSchedule *
weft_collective_schedule (WeftOp op, WeftAlgorithm alg, uint32_t n,
                          uint64_t size, const WeftCollectiveParams *params)
{
  gboolean nvls = alg == WEFT_ALG_NVLS;
  uint32_t switches = nvls ? params->n_switches
                      : alg == WEFT_ALG_NVLS_TREE
                          ? params->n_switches * (n / MAX (params->local, 1))
                          : 0;
  WeftSchedule *s = weft_schedule_new (n + switches);
  WeftCollectiveParams p = *params;

  g_assert (weft_algorithm_supports (alg, op));
  s->n_gpus = n;
  /* 0 channels: as many as suit the algorithm; the tree takes one for
   * each GPU of a server across servers, the others one. */
  if (alg != WEFT_ALG_TREE)
    p.channels = MAX (p.channels, 1);
  /* 0 chunks: 8, shared out among a ring's channels. */
  if (p.chunks == 0)
    {
      gboolean ring = alg == WEFT_ALG_RING
                      && (op == WEFT_OP_ALL_REDUCE || op == WEFT_OP_ALL_GATHER
                          || op == WEFT_OP_REDUCE_SCATTER);
      uint32_t rings = (p.rings ? p.rings->n_rings : 1) * p.channels;
      p.chunks = ring ? MAX (WEFT_CHUNKS / rings, 1) : WEFT_CHUNKS;
    }
  if (n < 2 || size == 0)
    return s;                   /* nothing crosses the network */
  switch (op)
    {
    case WEFT_OP_ALL_REDUCE:
      if (alg == WEFT_ALG_RING)
        weft_ring_all_reduce (s, size, &p);
      else if (alg == WEFT_ALG_TREE)
        weft_tree_all_reduce (s, size, &p);
      else if (nvls)
        weft_nvls_all_reduce (s, size, &p);
      else if (alg == WEFT_ALG_HIER)
        weft_hier_all_reduce (s, size, &p, WEFT_ALG_RING);
      else if (alg == WEFT_ALG_HIER_RHD)
        weft_hier_all_reduce (s, size, &p, WEFT_ALG_RHD);
      else if (alg == WEFT_ALG_HIER_TREE)
        weft_hier_all_reduce (s, size, &p, WEFT_ALG_TREE);
      else if (alg == WEFT_ALG_NVLS_TREE)
        weft_nvls_tree_all_reduce (s, size, &p);
      else
        weft_rhd_all_reduce (s, size);
      break;
    case WEFT_OP_ALL_GATHER:
      weft_ring_all_gather (s, size, &p);
      break;
    case WEFT_OP_REDUCE_SCATTER:
      weft_ring_reduce_scatter (s, size, &p);
      break;
    case WEFT_OP_BROADCAST:
      weft_ring_broadcast (s, size, &p);
      break;
    case WEFT_OP_REDUCE:
      weft_ring_reduce (s, size, &p);
      break;
    case WEFT_OP_ALL_TO_ALL:
      if (alg == WEFT_ALG_DIRECT)
        weft_direct_all_to_all (s, size);
      else
        weft_pairwise_all_to_all (s, size);
      break;
    case WEFT_OP_SEND_RECV:
      weft_ring_send_recv (s, size, &p);
      break;
    default:
      g_assert_not_reached ();
    }
  return s;
}
