/* weft: the collective algorithms, one row of one table each. */
#include "collectives/collective-private.h"

#define ONLY(k) WEFT_PROTOCOL_BIT (k)

/* The order of the rows is WeftAlgorithm's, which numbers auto's
 * candidates (of equal times the first row wins): a new row goes last. */
static const WeftAlgorithmInfo algorithms[WEFT_ALG_COUNT] = {
  [WEFT_ALG_RING] = {
    .name = "ring",
    .build = {
      [WEFT_OP_ALL_REDUCE] = weft_ring_all_reduce,
      [WEFT_OP_ALL_GATHER] = weft_ring_all_gather,
      [WEFT_OP_REDUCE_SCATTER] = weft_ring_reduce_scatter,
      [WEFT_OP_BROADCAST] = weft_ring_broadcast,
      [WEFT_OP_REDUCE] = weft_ring_reduce,
      [WEFT_OP_SEND_RECV] = weft_ring_send_recv,
    },
    .fit = weft_ring_fit,
    .defaults = weft_ring_defaults,
    .costs = WEFT_COSTS_RING,
    .protocols = WEFT_PROTOCOLS_ALL,
    .in_auto = TRUE,
    .nccl = TRUE,
  },
  [WEFT_ALG_TREE] = {
    .name = "tree",
    .build = { [WEFT_OP_ALL_REDUCE] = weft_tree_all_reduce },
    .fit = weft_tree_fit,
    .defaults = weft_tree_defaults,
    .costs = WEFT_COSTS_TREE,
    .protocols = WEFT_PROTOCOLS_ALL,
    .in_auto = TRUE,
    .nccl = TRUE,
  },
  /* NCCL has no halving-doubling, so auto leaves it out. */
  [WEFT_ALG_RHD] = {
    .name = "rhd",
    .build = { [WEFT_OP_ALL_REDUCE] = weft_rhd_all_reduce },
    .costs = WEFT_COSTS_RING,
    .protocols = WEFT_PROTOCOLS_ALL,
  },
  /* NCCL's all_to_all is point-to-point: auto tries both shapes of it. */
  [WEFT_ALG_DIRECT] = {
    .name = "direct",
    .build = { [WEFT_OP_ALL_TO_ALL] = weft_direct_all_to_all },
    .costs = WEFT_COSTS_RING,
    .protocols = WEFT_PROTOCOLS_ALL,
    .in_auto = TRUE,
  },
  [WEFT_ALG_PAIRWISE] = {
    .name = "pairwise",
    .build = { [WEFT_OP_ALL_TO_ALL] = weft_pairwise_all_to_all },
    .costs = WEFT_COSTS_RING,
    .protocols = WEFT_PROTOCOLS_ALL,
    .in_auto = TRUE,
  },
  [WEFT_ALG_NVLS] = {
    .name = "nvls",
    .build = {
      [WEFT_OP_ALL_REDUCE] = weft_nvls_all_reduce,
      [WEFT_OP_ALL_GATHER] = weft_nvls_all_gather,
      [WEFT_OP_REDUCE_SCATTER] = weft_nvls_reduce_scatter,
    },
    .fit = weft_nvls_fit,
    .switch_ranks = weft_nvls_switch_ranks,
    .costs = WEFT_COSTS_NVLS,
    .protocols = ONLY (WEFT_PROTOCOL_SIMPLE),
    .in_auto = TRUE,
    .nccl = TRUE,
  },
  /* weft's own two-level algorithms pay NCCL's ring constants; auto
   * leaves out those with halving-doubling or a tree across servers,
   * which NCCL lacks. */
  [WEFT_ALG_HIER] = {
    .name = "hierarchical",
    .build = { [WEFT_OP_ALL_REDUCE] = weft_hier_all_reduce },
    .fit = weft_hier_fit,
    .costs = WEFT_COSTS_RING,
    .protocols = WEFT_PROTOCOLS_ALL,
    .in_auto = TRUE,
    .hierarchical = TRUE,
  },
  [WEFT_ALG_HIER_RHD] = {
    .name = "hierarchical-rhd",
    .build = { [WEFT_OP_ALL_REDUCE] = weft_hier_rhd_all_reduce },
    .fit = weft_hier_fit,
    .costs = WEFT_COSTS_RING,
    .protocols = WEFT_PROTOCOLS_ALL,
    .hierarchical = TRUE,
  },
  [WEFT_ALG_HIER_TREE] = {
    .name = "hierarchical-tree",
    .build = { [WEFT_OP_ALL_REDUCE] = weft_hier_tree_all_reduce },
    .fit = weft_hier_fit,
    .costs = WEFT_COSTS_RING,
    .protocols = WEFT_PROTOCOLS_ALL,
    .hierarchical = TRUE,
  },
  [WEFT_ALG_NVLS_TREE] = {
    .name = "nvls-tree",
    .build = { [WEFT_OP_ALL_REDUCE] = weft_nvls_tree_all_reduce },
    .fit = weft_nvls_tree_fit,
    .switch_ranks = weft_nvls_tree_switch_ranks,
    .costs = WEFT_COSTS_NVLS_TREE,
    .protocols = ONLY (WEFT_PROTOCOL_SIMPLE),
    .in_auto = TRUE,
    .nccl = TRUE,
    .hierarchical = TRUE,
  },
  /* NCCL enables PAT by itself only with one GPU a node (ncclPatEnable()
   * in tuning.cc), and so does auto; asked for, it runs anywhere, as
   * NCCL_PAT_ENABLE=1 lets it. */
  [WEFT_ALG_PAT] = {
    .name = "pat",
    .build = {
      [WEFT_OP_ALL_GATHER] = weft_pat_all_gather,
      [WEFT_OP_REDUCE_SCATTER] = weft_pat_reduce_scatter,
    },
    .defaults = weft_pat_defaults,
    .costs = WEFT_COSTS_PAT,
    .protocols = ONLY (WEFT_PROTOCOL_SIMPLE),
    .in_auto = TRUE,
    .nccl = TRUE,
    .auto_one_per_server = TRUE,
  },
  [WEFT_ALG_COLLNET] = {
    .name = "collnet",
    .build = { [WEFT_OP_ALL_REDUCE] = weft_collnet_all_reduce },
    .fit = weft_collnet_fit,
    .switch_ranks = weft_collnet_switch_ranks,
    .costs = WEFT_COSTS_COLLNET,
    .protocols = ONLY (WEFT_PROTOCOL_SIMPLE),
    .in_auto = TRUE,
    .nccl = TRUE,
    .hierarchical = TRUE,
  },
};

const WeftAlgorithmInfo *
weft_algorithm_get (WeftAlgorithm alg)
{
  g_assert ((unsigned) alg < WEFT_ALG_COUNT);
  return &algorithms[alg];
}

const char *
weft_algorithm_name (WeftAlgorithm alg)
{
  return weft_algorithm_get (alg)->name;
}

gboolean
weft_algorithm_parse (const char *name, WeftAlgorithm *alg)
{
  for (int i = 0; i < WEFT_ALG_COUNT; i++)
    if (g_strcmp0 (name, algorithms[i].name) == 0)
      {
        *alg = (WeftAlgorithm) i;
        return TRUE;
      }
  return FALSE;
}

gboolean
weft_algorithm_supports (WeftAlgorithm alg, WeftOp op)
{
  return weft_algorithm_get (alg)->build[op] != NULL;
}

gboolean
weft_algorithm_is_hierarchical (WeftAlgorithm alg)
{
  return weft_algorithm_get (alg)->hierarchical;
}

gboolean
weft_algorithm_in_auto (WeftAlgorithm alg)
{
  return weft_algorithm_get (alg)->in_auto;
}

gboolean
weft_algorithm_in_nccl (WeftAlgorithm alg)
{
  return weft_algorithm_get (alg)->nccl;
}

/* Append to @text the names of the rows that auto considers (@in_auto 1)
 * or leaves out (0), or of all rows (-1): each after ", " but the first
 * (if @text is empty) and the last, which comes after @last_joint. */
static void
append_names (GString *text, int in_auto, const char *last_joint)
{
  int count = 0, done = 0;

  for (int i = 0; i < WEFT_ALG_COUNT; i++)
    count += in_auto < 0 || algorithms[i].in_auto == in_auto;
  for (int i = 0; i < WEFT_ALG_COUNT; i++)
    if (in_auto < 0 || algorithms[i].in_auto == in_auto)
      {
        done++;
        if (text->len > 0)
          g_string_append (text, done == count ? last_joint : ", ");
        g_string_append (text, algorithms[i].name);
      }
}

const char *
weft_algorithm_list (void)
{
  static char *list;

  if (g_once_init_enter (&list))
    {
      GString *text = g_string_new ("auto");
      append_names (text, -1, ", ");
      g_once_init_leave (&list, g_string_free (text, FALSE));
    }
  return list;
}

const char *
weft_algorithm_names (void)
{
  static char *names;

  if (g_once_init_enter (&names))
    g_once_init_leave (&names, g_strconcat (weft_algorithm_list (),
                                            ", or a schedule file (YAML, or MSCCL's XML)",
                                            NULL));
  return names;
}

const char *
weft_algorithm_help (void)
{
  static char *help;

  if (g_once_init_enter (&help))
    {
      GString *text = g_string_new (weft_algorithm_names ());
      GString *left_out = g_string_new (NULL);
      append_names (left_out, FALSE, " and ");
      g_string_append (text, "; auto runs each that fits");
      if (left_out->len > 0)
        g_string_append_printf (text, " (all but %s, which NCCL lacks)",
                                left_out->str);
      for (int i = 0; i < WEFT_ALG_COUNT; i++)
        if (algorithms[i].auto_one_per_server)
          g_string_append_printf (text, ", %s only with one GPU a server, "
                                  "as NCCL,", algorithms[i].name);
      g_string_append (text, " and keeps the fastest (default: auto)");
      g_string_free (left_out, TRUE);
      g_once_init_leave (&help, g_string_free (text, FALSE));
    }
  return help;
}
