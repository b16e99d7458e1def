/* Tests of schedules and the algorithms that build them: what each moves,
 * that its sends and receives pair up and nothing deadlocks, the table of
 * algorithms, and schedule files that are wrong. */
#include "collectives/collective-private.h"
#include "collectives/executor.h"
#include "collectives/schedule_file.h"
#include "collectives/expr.h"
#include "collectives/protocol.h"

#include <glib/gstdio.h>

#include <check.h>
#include <math.h>
#include <string.h>

START_TEST (test_bus_factors)
{
  /* nccl-tests' factors, exactly. */
  ck_assert_double_eq (weft_op_bus_factor (WEFT_OP_ALL_REDUCE, 8), 14.0 / 8);
  ck_assert_double_eq (weft_op_bus_factor (WEFT_OP_ALL_GATHER, 8), 7.0 / 8);
  ck_assert_double_eq (weft_op_bus_factor (WEFT_OP_REDUCE_SCATTER, 4), 0.75);
  ck_assert_double_eq (weft_op_bus_factor (WEFT_OP_ALL_TO_ALL, 2), 0.5);
  ck_assert_double_eq (weft_op_bus_factor (WEFT_OP_BROADCAST, 8), 1.0);
  ck_assert_double_eq (weft_op_bus_factor (WEFT_OP_REDUCE, 8), 1.0);
  ck_assert_double_eq (weft_op_bus_factor (WEFT_OP_SEND_RECV, 8), 1.0);
}
END_TEST

START_TEST (test_algorithm_table)
{
  /* Every algorithm has a full row: a name that parses back to it, a
   * builder, and protocols its cost set has costs for. */
  for (int a = 0; a < WEFT_ALG_COUNT; a++)
    {
      const WeftAlgorithmInfo *row = weft_algorithm_get (a);
      WeftAlgorithm back;
      int builders = 0;
      ck_assert_ptr_nonnull (row->name);
      ck_assert (weft_algorithm_parse (row->name, &back));
      ck_assert_int_eq (back, a);
      for (int op = 0; op < WEFT_OP_COUNT; op++)
        builders += row->build[op] != NULL;
      ck_assert_int_gt (builders, 0);
      ck_assert_uint_ne (row->protocols, 0);
      for (int k = 0; k < WEFT_PROTOCOL_COUNT; k++)
        {
          /* Every algorithm runs with the links alone. */
          gboolean runs = (row->protocols & WEFT_PROTOCOL_BIT (k)) != 0
                          || k == WEFT_PROTOCOL_RAW;
          ck_assert (!runs || weft_protocol_costs (row->costs, k) != NULL);
          ck_assert_ptr_eq (weft_protocol_get (k, a),
                            runs ? weft_protocol_costs (row->costs, k) : NULL);
        }
    }
  ck_assert (!weft_algorithm_parse ("auto", &(WeftAlgorithm) { 0 }));
  /* The lists messages and help give are made from the table. */
  ck_assert_str_eq (weft_algorithm_list (),
                    "auto, ring, tree, rhd, direct, pairwise, nvls, "
                    "hierarchical, hierarchical-rhd, hierarchical-tree, "
                    "nvls-tree, pat, collnet");
  ck_assert_str_eq (weft_algorithm_names (),
                    "auto, ring, tree, rhd, direct, pairwise, nvls, "
                    "hierarchical, hierarchical-rhd, hierarchical-tree, "
                    "nvls-tree, pat, collnet, or a schedule file (YAML, or "
                    "MSCCL's XML)");
  ck_assert_str_eq (weft_algorithm_help (),
                    "auto, ring, tree, rhd, direct, pairwise, nvls, "
                    "hierarchical, hierarchical-rhd, hierarchical-tree, "
                    "nvls-tree, pat, collnet, or a schedule file (YAML, or "
                    "MSCCL's XML); auto runs each that fits "
                    "(all but rhd, hierarchical-rhd and hierarchical-tree, "
                    "which NCCL lacks), pat only with one GPU a server, as "
                    "NCCL, and keeps the fastest (default: auto)");
  /* NCCL's sets: the tree's own, NVLS Simple only. */
  ck_assert_uint_eq (weft_protocol_get (WEFT_PROTOCOL_LL,
                                        WEFT_ALG_TREE)->hop_network,
                     5000000);
  ck_assert_uint_eq (weft_protocol_get (WEFT_PROTOCOL_LL,
                                        WEFT_ALG_HIER_TREE)->hop_network,
                     2700000);
  ck_assert_ptr_null (weft_protocol_get (WEFT_PROTOCOL_LL128,
                                         WEFT_ALG_NVLS_TREE));
  ck_assert_double_eq (weft_protocol_get (WEFT_PROTOCOL_SIMPLE,
                                          WEFT_ALG_NVLS)->efficiency, 0.85);
}
END_TEST

/* What each operation must move in all, whatever the algorithm; NVLS
 * moves every GPU's buffer to the switches and the sums back. */
static uint64_t
expected_bytes (WeftOp op, WeftAlgorithm alg, uint32_t n, uint64_t size)
{
  if (alg == WEFT_ALG_NVLS)
    /* all_reduce: every buffer up and the sum back to every GPU;
     * all_gather: each part up once and the whole buffer to every GPU;
     * reduce_scatter: every buffer up and each GPU its part. */
    return op == WEFT_OP_ALL_REDUCE ? 2 * (uint64_t) n * size
                                    : ((uint64_t) n + 1) * size;
  if (alg == WEFT_ALG_NVLS_TREE)
    /* One GPU a server: its buffer to the switches and back, then the
     * tree across servers. */
    return (4 * (uint64_t) n - 2) * size;
  if (alg == WEFT_ALG_COLLNET)
    /* One GPU a server, the first of the 4 switches the others' root, GPU
     * r under switch r mod 4: each GPU's buffer up and back, and each
     * other switch with a GPU under it its sum. */
    return 2 * (uint64_t) (n + MIN (n, 4) - 1) * size;
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

/* Whether the pairs @s's builder gave (complete, if @complete) are those
 * the search finds. */
static void
check_pairs (WeftSchedule *s, gboolean complete, const char *what)
{
  if (complete)
    ck_assert_msg (s->n_ends > 0 && 2 * s->n_matched == s->n_ends,
                   "%s: %" G_GUINT64_FORMAT " pairs for %" G_GUINT64_FORMAT
                   " ends", what, s->n_matched, s->n_ends);
  if (2 * s->n_matched != s->n_ends)
    return;
  ck_assert (weft_schedule_pair (s, NULL));
  g_autoptr (GPtrArray) given = g_ptr_array_new_with_free_func (g_free);
  for (uint32_t r = 0; r < s->n_ranks; r++)
    g_ptr_array_add (given, g_memdup2 (weft_schedule_matches (s, r),
                                       s->n_steps[r] * sizeof (uint32_t)));
  g_autoptr (GError) error = NULL;
  ck_assert_msg (weft_schedule_pair_search (s, &error), "%s: %s", what,
                 error ? error->message : "");
  for (uint32_t r = 0; r < s->n_ranks; r++)
    ck_assert_msg (memcmp (g_ptr_array_index (given, r),
                           weft_schedule_matches (s, r),
                           s->n_steps[r] * sizeof (uint32_t)) == 0,
                   "%s: rank %u's pairs differ from the search's", what, r);
}

/* A sink that keeps the most the streaming schedule held, in @data. */
static void
most_held (void *data, const WeftSchedule *s, uint32_t rank)
{
  size_t *most = data;
  (void) rank;

  *most = MAX (*most, weft_schedule_memory (s));
}

/* The counted schedule of the same call (weft_collective_count()) finds
 * what the schedule @s made holds: its steps, dependencies, sends and
 * receives, and the pairs the builder gave. */
static void
check_count (const WeftSchedule *s, WeftOp op, WeftAlgorithm alg, uint32_t n,
             uint64_t size, const WeftCollectiveParams *params)
{
  g_autoptr (WeftSchedule) c = weft_collective_count (op, alg, n, size,
                                                      params);
  uint64_t steps = 0;

  for (uint32_t r = 0; r < s->n_ranks; r++)
    {
      steps += s->n_steps[r];
      ck_assert_uint_eq (c->n_steps[r], s->n_steps[r]);
    }
  ck_assert_msg (c->counted_steps == steps && c->counted_deps == s->n_deps
                     && c->n_ends == s->n_ends && c->n_matched == s->n_matched,
                 "%s/%s n=%u: counted %" G_GUINT64_FORMAT " steps, %"
                 G_GUINT64_FORMAT " dependencies; made %" G_GUINT64_FORMAT
                 ", %u", weft_op_name (op), weft_algorithm_name (alg), n,
                 c->counted_steps, c->counted_deps, steps, s->n_deps);
  /* What it will hold, known before: about what the made one holds, or
   * the most a streamed one holds at once. */
  size_t made = weft_schedule_memory (s);
  if (c->counted_classes)
    {
      made = 0;
      g_autoptr (WeftSchedule) streamed = weft_collective_stream (
          op, alg, n, size, params, most_held, NULL, &made);
      made = MAX (made, weft_schedule_memory (streamed));
    }
  double ratio = (double) weft_schedule_bytes (c) / made;
  ck_assert_msg (ratio > 0.5 && ratio < 2, "%s/%s n=%u: counted %zu bytes, "
                 "made %zu", weft_op_name (op), weft_algorithm_name (alg), n,
                 weft_schedule_bytes (c), made);
}

START_TEST (test_bytes_moved_exactly)
{
  /* Sizes that divide by nothing, rank counts that are not powers of two,
   * several channels and chunks: every algorithm still moves exactly what
   * the operation needs, and its schedule is complete and deadlock-free. */
  const uint64_t sizes[] = { 1, 7, 1000003, 12345678 };
  const uint32_t ranks[] = { 2, 3, 5, 8, 12 };
  const double shares[] = { 5, 4, 4, 5 };
  WeftCollectiveParams params = { 3, 5, 4, shares, 1, NULL, NULL, 0, FALSE, NULL };

  for (int op = 0; op < WEFT_OP_COUNT; op++)
    for (int alg = 0; alg < WEFT_ALG_COUNT; alg++)
      {
        if (!weft_algorithm_supports (alg, op))
          continue;
        for (guint i = 0; i < G_N_ELEMENTS (sizes); i++)
          for (guint j = 0; j < G_N_ELEMENTS (ranks); j++)
            {
              g_autoptr (WeftSchedule) s = weft_collective_schedule (
                  op, alg, ranks[j], sizes[i], &params);
              g_autoptr (GError) error = NULL;
              ck_assert_msg (weft_schedule_check (s, &error), "%s/%s n=%u: %s",
                             weft_op_name (op), weft_algorithm_name (alg),
                             ranks[j], error ? error->message : "");
              /* Ring, halving-doubling and the hierarchical algorithms
               * pair their sends and receives as they build them. */
              gboolean paired = (alg == WEFT_ALG_RING
                                 && (op == WEFT_OP_ALL_REDUCE
                                     || op == WEFT_OP_ALL_GATHER
                                     || op == WEFT_OP_REDUCE_SCATTER))
                                || alg == WEFT_ALG_RHD || alg == WEFT_ALG_HIER
                                || alg == WEFT_ALG_HIER_RHD
                                || alg == WEFT_ALG_HIER_TREE;
              check_pairs (s, paired, weft_algorithm_name (alg));
              check_count (s, op, alg, ranks[j], sizes[i], &params);
              /* The ring phases, and the hierarchical algorithms, make
               * room for just their steps. */
              for (uint32_t r = 0; paired && alg != WEFT_ALG_RHD
                                   && r < s->n_ranks; r++)
                ck_assert_uint_eq (s->steps_cap[r], s->n_steps[r]);
              ck_assert_msg (weft_schedule_bytes_sent (s)
                                 == expected_bytes (op, alg, ranks[j],
                                                    sizes[i]),
                             "%s/%s n=%u size=%" G_GUINT64_FORMAT ": %"
                             G_GUINT64_FORMAT, weft_op_name (op),
                             weft_algorithm_name (alg), ranks[j], sizes[i],
                             weft_schedule_bytes_sent (s));
            }
      }
}
END_TEST

START_TEST (test_hierarchical_bytes)
{
  /* Two levels, 4 GPUs a server, with ring, halving-doubling or trees
   * across 1 to 7 servers: still exactly 2(n-1) size in all. */
  const WeftAlgorithm algs[] = { WEFT_ALG_HIER, WEFT_ALG_HIER_RHD,
                                 WEFT_ALG_HIER_TREE };
  WeftCollectiveParams params = { 2, 3, 0, NULL, 4, NULL, NULL, 0, FALSE, NULL };

  for (guint a = 0; a < G_N_ELEMENTS (algs); a++)
    for (uint32_t n = 4; n <= 28; n += 4)
      {
        g_autoptr (WeftSchedule) s = weft_collective_schedule (
            WEFT_OP_ALL_REDUCE, algs[a], n, 1000003, &params);
        g_autoptr (GError) error = NULL;
        ck_assert_msg (weft_schedule_check (s, &error), "%s n=%u: %s",
                       weft_algorithm_name (algs[a]), n,
                       error ? error->message : "");
        ck_assert_uint_eq (weft_schedule_bytes_sent (s),
                           2 * (uint64_t) (n - 1) * 1000003);
        check_pairs (s, TRUE, weft_algorithm_name (algs[a]));
        check_count (s, WEFT_OP_ALL_REDUCE, algs[a], n, 1000003, &params);
      }
}
END_TEST

START_TEST (test_tree_servers_bytes)
{
  /* The tree with its ranks grouped into servers (chains inside, trees
   * across, one tree per local index): servers of 4, of uneven sizes, and
   * not contiguous in rank order.  Still exactly 2(n-1) size in all, every
   * send paired and no deadlock. */
  WeftCollectiveParams params = { 2, 3, 0, NULL, 1, NULL, NULL, 0, FALSE, NULL };

  for (uint32_t n = 2; n <= 27; n += 5)
    for (int grouping = 0; grouping < 3; grouping++)
      {
        g_autofree uint32_t *server = g_new (uint32_t, n);
        for (uint32_t r = 0; r < n; r++)
          server[r] = grouping == 0   ? r / 4
                      : grouping == 1 ? (r < 3 ? 0 : r < 10 ? 1 : 2 + r / 9)
                                      : r % 3;
        params.server = server;
        g_autoptr (WeftSchedule) s = weft_collective_schedule (
            WEFT_OP_ALL_REDUCE, WEFT_ALG_TREE, n, 1000003, &params);
        g_autoptr (GError) error = NULL;
        ck_assert_msg (weft_schedule_check (s, &error), "n=%u grouping %d: %s",
                       n, grouping, error ? error->message : "");
        ck_assert_uint_eq (weft_schedule_bytes_sent (s),
                           2 * (uint64_t) (n - 1) * 1000003);
      }
}
END_TEST

START_TEST (test_rings_bytes)
{
  /* Rings along the links (any orders, uneven weights), cut into channels
   * and chunks: ring, its chains and the tree still move exactly what the
   * operation needs, every send paired and no deadlock. */
  const uint32_t n = 5;
  uint32_t order[3 * 5] = { 0, 1, 2, 3, 4, 0, 4, 3, 2, 1, 2, 0, 4, 1, 3 };
  uint64_t weight[] = { 40, 40, 20 };
  WeftRings rings = { n, 3, order, weight };
  WeftCollectiveParams params = { 2, 3, 0, NULL, 1, NULL, &rings, 0, FALSE, NULL };
  const WeftOp ops[] = { WEFT_OP_ALL_REDUCE, WEFT_OP_ALL_GATHER,
                         WEFT_OP_REDUCE_SCATTER, WEFT_OP_BROADCAST,
                         WEFT_OP_REDUCE };

  for (guint i = 0; i < G_N_ELEMENTS (ops) + 1; i++)
    {
      WeftOp op = i < G_N_ELEMENTS (ops) ? ops[i] : WEFT_OP_ALL_REDUCE;
      WeftAlgorithm alg = i < G_N_ELEMENTS (ops) ? WEFT_ALG_RING
                                                 : WEFT_ALG_TREE;
      /* The tree's chains follow the rings inside one server. */
      const uint32_t one_server[5] = { 0 };
      params.server = alg == WEFT_ALG_TREE ? one_server : NULL;
      g_autoptr (WeftSchedule) s = weft_collective_schedule (op, alg, n,
                                                             1000003, &params);
      g_autoptr (GError) error = NULL;
      ck_assert_msg (weft_schedule_check (s, &error), "%s/%s: %s",
                     weft_op_name (op), weft_algorithm_name (alg),
                     error ? error->message : "");
      ck_assert_uint_eq (weft_schedule_bytes_sent (s),
                         expected_bytes (op, alg, n, 1000003));
    }
}
END_TEST

static void
to_image (void *image, const WeftSchedule *s, uint32_t rank)
{
  weft_exec_image_add_rank (image, s, rank);
}

static void
alike_to_image (void *image, uint32_t rank, uint32_t like,
                const uint32_t *peers, uint32_t n_peers)
{
  weft_exec_image_add_alike (image, rank, like, peers, n_peers);
}

START_TEST (test_image_streamed)
{
  /* A ring made one rank at a time and handed on is the same image as the
   * ring made whole; ranks alike but for their peers share their steps,
   * and the count made without the steps says how many kinds there are at
   * most. */
  const WeftOp ops[] = { WEFT_OP_ALL_REDUCE, WEFT_OP_REDUCE_SCATTER,
                         WEFT_OP_ALL_GATHER };
  const uint32_t ranks[] = { 2, 3, 12, 13 };
  const uint64_t sizes[] = { 1000003, 1 << 20 };

  for (guint o = 0; o < G_N_ELEMENTS (ops); o++)
    for (guint j = 0; j < G_N_ELEMENTS (ranks); j++)
      for (guint z = 0; z < G_N_ELEMENTS (sizes); z++)
        for (uint32_t chunks = 1; chunks <= 3; chunks += 2)
          {
            WeftCollectiveParams params = { 2, chunks, 0, NULL, 1, NULL,
                                            NULL, 0, FALSE, NULL };
            uint32_t n = ranks[j];
            uint64_t even = (uint64_t) n * params.channels * chunks;
            uint64_t size = sizes[z] / even * even; /* even pieces... */
            if (z == 0)
              size = sizes[z];                      /* ...or not */
            g_autoptr (WeftSchedule) whole = weft_collective_schedule (
                ops[o], WEFT_ALG_RING, n, size, &params);
            ck_assert (weft_schedule_pair (whole, NULL));
            g_autoptr (WeftExecImage) one = weft_exec_image_new (whole);
            WeftExecImage *image = weft_exec_image_start (n, n);
            g_autoptr (WeftSchedule) s = weft_collective_stream (
                ops[o], WEFT_ALG_RING, n, size, &params, to_image, alike_to_image,
                image);
            ck_assert (s->streamed);
            ck_assert_uint_eq (2 * s->n_matched, s->n_ends);
            g_autoptr (WeftExecImage) streamed = weft_exec_image_finish (image);
            ck_assert_msg (weft_exec_image_equal (one, streamed),
                           "%s over %u, %" G_GUINT64_FORMAT " bytes",
                           weft_op_name (ops[o]), n, size);
            ck_assert_uint_eq (weft_exec_image_bytes_sent (streamed),
                               weft_schedule_bytes_sent (whole));
            g_autoptr (WeftSchedule) counted = weft_collective_count (
                ops[o], WEFT_ALG_RING, n, size, &params);
            ck_assert_uint_ge (counted->counted_classes,
                               weft_exec_image_templates (streamed));
            /* In rank order every rank's neighbours differ (from three
             * ranks on), and even pieces make every rank alike. */
            if (z == 1 && n >= 3)
              ck_assert_uint_eq (weft_exec_image_templates (streamed), 1);
          }
}
END_TEST

/* Whether @a and @b hold the same steps, dependencies and pairs. */
static gboolean
schedules_equal (const WeftSchedule *a, const WeftSchedule *b)
{
  if (a->n_ranks != b->n_ranks || a->n_deps != b->n_deps
      || a->n_ends != b->n_ends || a->n_matched != b->n_matched
      || memcmp (a->deps, b->deps, a->n_deps * sizeof (uint32_t)) != 0)
    return FALSE;
  for (uint32_t r = 0; r < a->n_ranks; r++)
    {
      if (a->n_steps[r] != b->n_steps[r]
          || memcmp (a->matches[r], b->matches[r],
                     a->n_steps[r] * sizeof (uint32_t)) != 0)
        return FALSE;
      for (uint32_t i = 0; i < a->n_steps[r]; i++)
        {
          const WeftStep *x = weft_schedule_step (a, r, i);
          const WeftStep *y = weft_schedule_step (b, r, i);
          if (x->bytes != y->bytes || x->peer != y->peer || x->tag != y->tag
              || x->first_dep != y->first_dep || x->n_deps != y->n_deps
              || x->kind != y->kind)
            return FALSE;
        }
    }
  return TRUE;
}

START_TEST (test_ring_schedule_threads)
{
  /* A large ring schedule is made by several threads, each rank's steps
   * where one thread would put them: the same steps, dependencies and
   * pairs, over two rings cut into channels and chunks (each phase over
   * 210 ranks is over a million steps, from which threads share it). */
  const uint32_t n = 210;
  g_autofree uint32_t *order = g_new (uint32_t, 2 * n);
  for (uint32_t i = 0; i < n; i++)
    {
      order[i] = i;
      order[n + i] = (i * 11 + 3) % n;    /* 11 is prime to 210 */
    }
  uint64_t weight[] = { 60, 40 };
  WeftRings rings = { n, 2, order, weight };
  const WeftOp ops[] = { WEFT_OP_ALL_REDUCE, WEFT_OP_ALL_GATHER,
                         WEFT_OP_REDUCE_SCATTER };

  for (guint i = 0; i < G_N_ELEMENTS (ops); i++)
    {
      WeftCollectiveParams params = { 2, 3, 0, NULL, 1, NULL, &rings, 1, FALSE, NULL };
      g_autoptr (WeftSchedule) one = weft_collective_schedule (
          ops[i], WEFT_ALG_RING, n, 1000000007, &params);
      params.threads = 3;
      g_autoptr (WeftSchedule) three = weft_collective_schedule (
          ops[i], WEFT_ALG_RING, n, 1000000007, &params);
      ck_assert_msg (schedules_equal (one, three), "%s",
                     weft_op_name (ops[i]));
      ck_assert (weft_schedule_pair (three, NULL));
    }
}
END_TEST

/* Where @fast (paired by its builder) and @ref (paired here by the search)
 * first differ in their steps (kind, peer, tag, bytes), the steps each
 * waits for, or the pairs; NULL if nowhere.  Where a builder keeps the
 * dependencies in the pool is its own affair. */
static char *
first_difference (const WeftSchedule *fast, const WeftSchedule *ref)
{
  g_autoptr (GError) error = NULL;

  if (!weft_schedule_pair_search (ref, &error))
    return g_strdup_printf ("the reference does not pair: %s",
                            error->message);
  if (fast->n_ranks != ref->n_ranks || fast->n_gpus != ref->n_gpus
      || fast->n_ends != ref->n_ends || fast->n_deps != ref->n_deps)
    return g_strdup ("the counts of ranks, sends and receives or "
                     "dependencies differ");
  if (fast->n_ends > 0 && 2 * fast->n_matched != fast->n_ends)
    return g_strdup ("the fast builder left sends and receives unpaired");
  for (uint32_t r = 0; r < fast->n_ranks; r++)
    {
      if (fast->n_steps[r] != ref->n_steps[r])
        return g_strdup_printf ("rank %u: %u steps against %u", r,
                                fast->n_steps[r], ref->n_steps[r]);
      for (uint32_t i = 0; i < fast->n_steps[r]; i++)
        {
          const WeftStep *x = weft_schedule_step (fast, r, i);
          const WeftStep *y = weft_schedule_step (ref, r, i);
          gboolean same = x->kind == y->kind && x->peer == y->peer
                          && x->tag == y->tag && x->bytes == y->bytes
                          && x->n_deps == y->n_deps
                          && weft_schedule_matches (fast, r)[i]
                                 == weft_schedule_matches (ref, r)[i];
          for (uint32_t d = 0; same && d < x->n_deps; d++)
            same = weft_schedule_dep (fast, x, d)
                   == weft_schedule_dep (ref, y, d);
          if (!same)
            return g_strdup_printf ("rank %u step %u", r, i);
        }
    }
  return NULL;
}

/* Rings over @n ranks for the builders to follow: rank order backwards,
 * shuffled, and rank order from rank 1, with uneven weights. */
static WeftRings *
test_rings (uint32_t n)
{
  WeftRings *rings = g_new0 (WeftRings, 1);
  g_autoptr (GRand) rand = g_rand_new_with_seed (n);

  rings->n = n;
  rings->n_rings = 3;
  rings->order = g_new (uint32_t, 3 * (size_t) n);
  rings->weight = g_new (uint64_t, 3);
  for (uint32_t q = 0; q < n; q++)
    {
      rings->order[q] = n - 1 - q;
      rings->order[n + q] = q;
      rings->order[2 * n + q] = (q + 1) % n;
    }
  for (uint32_t q = n - 1; q > 0; q--)
    {
      uint32_t j = g_rand_int_range (rand, 0, q + 1), keep;
      keep = rings->order[n + q];
      rings->order[n + q] = rings->order[n + j];
      rings->order[n + j] = keep;
    }
  rings->weight[0] = 50;
  rings->weight[1] = 30;
  rings->weight[2] = 21;
  return rings;
}

START_TEST (test_ring_reference)
{
  /* The fast ring builders (each rank's steps made at once, on several
   * threads for a large ring, paired as they are made) give the schedule
   * the plain reference builds step by step and leaves to the search to
   * pair: over 1 to 17 ranks with every size, channel and chunk count
   * below, in rank order and along rings, and over 64 and 130 ranks with
   * fewer (130 ranks on 27 tags is over a million steps a phase, so
   * threads share its making). */
  const WeftOp ops[] = { WEFT_OP_ALL_REDUCE, WEFT_OP_REDUCE_SCATTER,
                         WEFT_OP_ALL_GATHER };
  const uint64_t sizes[] = { 1, 7, 1000003, 12345678 };
  const uint32_t channels[] = { 1, 2, 3 }, chunks[] = { 0, 1, 3, 5 };
  const uint32_t large[] = { 64, 130 };

  for (uint32_t i = 0; i < 17 + G_N_ELEMENTS (large); i++)
    {
      uint32_t n = i < 17 ? i + 1 : large[i - 17];
      gboolean small = n <= 17;
      g_autoptr (WeftRings) rings = n >= 2 ? test_rings (n) : NULL;
      for (int along = 0; along < 1 + (rings != NULL); along++)
        for (guint o = 0; o < G_N_ELEMENTS (ops); o++)
          for (guint z = small ? 0 : 2; z < (small ? 4 : 3); z++)
            for (guint c = small ? 0 : 2; c < 3; c++)
              for (guint k = 0; k < 4; k += small ? 1 : 2)
                {
                  WeftCollectiveParams params = {
                    channels[c], chunks[k], 0, NULL, 1, NULL,
                    along ? rings : NULL, 3, FALSE, NULL,
                  };
                  g_autoptr (WeftSchedule) fast = weft_collective_schedule (
                      ops[o], WEFT_ALG_RING, n, sizes[z], &params);
                  WeftCollectiveParams p = params;
                  weft_ring_defaults (ops[o], &p);
                  g_autoptr (WeftSchedule) ref = weft_schedule_new (n);
                  if (n >= 2 && ops[o] == WEFT_OP_ALL_REDUCE)
                    weft_ring_reference_all_reduce (ref, sizes[z], &p);
                  else if (n >= 2 && ops[o] == WEFT_OP_REDUCE_SCATTER)
                    weft_ring_reference_reduce_scatter (ref, sizes[z], &p);
                  else if (n >= 2)
                    weft_ring_reference_all_gather (ref, sizes[z], &p);
                  g_autofree char *where = first_difference (fast, ref);
                  ck_assert_msg (where == NULL, "%s over %u, %s, size %"
                                 G_GUINT64_FORMAT ", %u channels, %u "
                                 "chunks: %s", weft_op_name (ops[o]), n,
                                 along ? "along rings" : "in rank order",
                                 sizes[z], p.channels, p.chunks, where);
                }
    }
}
END_TEST

START_TEST (test_one_rank_moves_nothing)
{
  const double shares[] = { 1 };
  WeftCollectiveParams params = { 1, 1, 1, shares, 1, NULL, NULL, 0, FALSE, NULL };

  for (int op = 0; op < WEFT_OP_COUNT; op++)
    for (int alg = 0; alg < WEFT_ALG_COUNT; alg++)
      if (weft_algorithm_supports (alg, op))
        {
          g_autoptr (WeftSchedule) s = weft_collective_schedule (op, alg, 1,
                                                                 1 << 20,
                                                                 &params);
          ck_assert (weft_schedule_check (s, NULL));
          ck_assert_uint_eq (weft_schedule_bytes_sent (s), 0);
        }
}
END_TEST

START_TEST (test_bad_schedules)
{
  g_autoptr (GError) error = NULL;

  /* A send nobody receives. */
  g_autoptr (WeftSchedule) a = weft_schedule_new (2);
  weft_schedule_send (a, 0, 1, 0, 100, WEFT_NO_STEP);
  ck_assert (!weft_schedule_check (a, &error));
  ck_assert (g_error_matches (error, WEFT_SCHEDULE_ERROR,
                              WEFT_SCHEDULE_ERROR_INVALID));
  ck_assert_str_eq (error->message, "rank 0 step 0 sends to rank 1, which "
                                    "never receives it");
  g_clear_error (&error);

  /* Sizes that do not match. */
  g_autoptr (WeftSchedule) b = weft_schedule_new (2);
  weft_schedule_send (b, 0, 1, 0, 100, WEFT_NO_STEP);
  weft_schedule_recv (b, 1, 0, 0, 99, WEFT_NO_STEP);
  ck_assert (!weft_schedule_check (b, &error));
  ck_assert_str_eq (error->message, "rank 1 step 0 receives 99 bytes from "
                                    "rank 0, whose step 0 sends 100");
  g_clear_error (&error);
  /* Pairing alone finds both. */
  ck_assert (!weft_schedule_pair (a, NULL));
  ck_assert (!weft_schedule_pair (b, NULL));

  /* Each rank waits to receive before it sends: a deadlock. */
  g_autoptr (WeftSchedule) c = weft_schedule_new (2);
  for (uint32_t r = 0; r < 2; r++)
    {
      uint32_t got = weft_schedule_recv (c, r, 1 - r, 0, 8, WEFT_NO_STEP);
      weft_schedule_send (c, r, 1 - r, 0, 8, got);
    }
  ck_assert (!weft_schedule_check (c, &error));
  ck_assert (g_error_matches (error, WEFT_SCHEDULE_ERROR,
                              WEFT_SCHEDULE_ERROR_INVALID));
  ck_assert (g_str_has_prefix (error->message, "the schedule deadlocks: rank 0 "
                                               "step 0 (receive from rank 1)"));
  /* Pairing alone does not look for deadlocks: it pairs them. */
  ck_assert (weft_schedule_pair (c, NULL));
  ck_assert_uint_eq (weft_schedule_matches (c, 0)[0], 1);
  g_clear_error (&error);

  /* Rank 0 sends WEFT_CONNECTION_SLOTS + 1 pieces on tag 0, then one on
   * tag 1; rank 1 takes the one on tag 1 before the others.  The last
   * piece on tag 0 waits for a slot, which the first one's receive frees
   * only after the piece on tag 1, sent after it: with unbounded buffers it
   * would run, with NCCL's slots it deadlocks.  One piece fewer runs. */
  for (uint32_t extra = 0; extra < 2; extra++)
    {
      g_autoptr (WeftSchedule) d = weft_schedule_new (2);
      uint32_t pieces = WEFT_CONNECTION_SLOTS + extra, sent = WEFT_NO_STEP;
      for (uint32_t k = 0; k < pieces; k++)
        sent = weft_schedule_send (d, 0, 1, 0, 8, WEFT_NO_STEP);
      weft_schedule_send (d, 0, 1, 1, 8, sent);
      uint32_t got = weft_schedule_recv (d, 1, 0, 1, 8, WEFT_NO_STEP);
      for (uint32_t k = 0; k < pieces; k++)
        weft_schedule_recv (d, 1, 0, 0, 8, got);
      ck_assert_int_eq (weft_schedule_check (d, &error), !extra);
      if (extra)
        {
          ck_assert_msg (g_str_has_prefix (error->message,
                                           "the schedule deadlocks: rank 0 "
                                           "step 8 (send to rank 1) can never "
                                           "run (a send between GPUs waits "
                                           "for a buffer slot"),
                         "%s", error->message);
          g_clear_error (&error);
        }
    }
}
END_TEST

static char *
schedule_error (const char *text)
{
  g_autofree char *dir = g_dir_make_tmp ("weft-sched-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "s.yaml", NULL);
  g_autoptr (GError) error = NULL;
  char *message = NULL;

  ck_assert (g_file_set_contents (path, text, -1, NULL));
  g_autoptr (WeftScheduleFile) file = weft_schedule_file_load (path, &error);
  if (file != NULL)
    {
      g_autoptr (WeftSchedule) s = weft_schedule_file_build (file, 1000,
                                                             &error);
      if (s != NULL)
        ck_assert (!weft_schedule_file_verify (file, &error));
    }
  ck_assert_ptr_nonnull (error);
  message = g_strdup (error->message + strlen (dir) + 1);
  g_remove (path);
  g_rmdir (dir);
  return message;
}

#define HEAD "weft_schedule: 1\nop: all_gather\nranks: 2\nchunks: 2\nprogram:\n"

START_TEST (test_bad_schedule_files)
{
  struct {
    const char *text, *message;
  } cases[] = {
    { HEAD "  0: [{op: send, peer: 1, chunk: 0}, {op: recv, peer: 1, chunk: 1}]\n"
           "  1: [{op: recv, peer: 0, chunk: 0}]\n",
      "s.yaml: rank 0 step 1 receives from rank 1, which sends it nothing "
      "to match" },
    { HEAD "  0: [{id: a, op: recv, peer: 1, chunk: 1}, "
           "{op: send, peer: 1, chunk: 0, after: [a]}]\n"
           "  1: [{id: b, op: recv, peer: 0, chunk: 0}, "
           "{op: send, peer: 0, chunk: 1, after: [b]}]\n",
      "s.yaml: the schedule deadlocks: rank 0 step 0 (receive from rank 1)" },
    { HEAD "  0: [{op: send, peer: 1, chunks: [0, 1]}, "
           "{op: recv, peer: 1, chunk: 1}]\n"
           "  1: [{op: recv, peer: 0, chunks: [0, 1]}, "
           "{op: send, peer: 0, chunk: 1}]\n",
      "s.yaml:6:7: rank 0 step 0 sends chunk 1, which the rank does not "
      "hold yet" },
    { HEAD "  0: [{op: send, peer: 1, chunk: 0, after: [nope]}]\n",
      "s.yaml:6:45: no earlier step of rank 0 has the id 'nope'" },
    { HEAD "  0: [{op: send, peer: 2, chunk: 0}]\n",
      "s.yaml:6:24: '2' should be a whole number from 0 to 1" },
    { HEAD "  0: [{op: shout, peer: 1, chunk: 0}]\n",
      "s.yaml:6:12: unknown step 'shout'; valid: send, recv, reduce" },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *got = schedule_error (cases[i].text);
      ck_assert_msg (strstr (got, cases[i].message) != NULL,
                     "expected '%s'\n got '%s'", cases[i].message, got);
    }

  /* A step may wait for at most 65,535 others. */
  g_autoptr (GString) many = g_string_new (HEAD "  0: [{id: a, op: send, "
                                           "peer: 1, chunk: 0}, {op: send, "
                                           "peer: 1, chunk: 1, after: [a");
  for (int i = 1; i < WEFT_STEP_MAX_DEPS + 1; i++)
    g_string_append (many, ", a");
  g_string_append (many, "]}]\n");
  g_autofree char *got = schedule_error (many->str);
  ck_assert_str_eq (got, "s.yaml:6:82: a step waits for at most 65535 steps, "
                         "not 65536");
}
END_TEST

/* Whether the schedule file @text loads, builds and computes its
 * operation, with the error of the first that fails in @message. */
static gboolean
schedule_computes (const char *text, char **message)
{
  g_autofree char *dir = g_dir_make_tmp ("weft-sched-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "s.yaml", NULL);
  g_autoptr (GError) error = NULL;

  ck_assert (g_file_set_contents (path, text, -1, NULL));
  g_autoptr (WeftScheduleFile) file = weft_schedule_file_load (path, &error);
  ck_assert_msg (file != NULL, "%s", error ? error->message : "");
  gboolean ok = weft_schedule_file_verify (file, &error);
  *message = ok ? NULL : g_strdup (error->message + strlen (dir) + 1);
  g_remove (path);
  g_rmdir (dir);
  return ok;
}

#define REDUCE_HEAD "weft_schedule: 1\nop: all_reduce\nranks: %u\n" \
                    "chunks: %u\nprogram:\n"

START_TEST (test_schedule_data)
{
  /* Recursive doubling moves more than a ring (every step the whole
   * buffer) and computes an all_reduce: accepted.  Each rank swaps its
   * whole buffer with the rank log2 steps away and adds it in. */
  g_autoptr (GString) rd = g_string_new (NULL);
  g_string_printf (rd, REDUCE_HEAD, 4, 2);
  for (uint32_t r = 0; r < 4; r++)
    {
      g_string_append_printf (rd, "  %u:\n", r);
      for (uint32_t k = 0; k < 2; k++)
        g_string_append_printf (
            rd, "    - {id: s%u, op: send, peer: %u, chunks: [0, 1]%s}\n"
                "    - {id: r%u, op: recv, peer: %u, chunks: [0, 1]%s}\n"
                "    - {id: a%u, op: reduce, chunks: [0, 1], after: [r%u, "
                "s%u]}\n",
            k, r ^ (1u << k), k ? ", after: [a0]" : "", k, r ^ (1u << k),
            k ? ", after: [a0]" : "", k, k, k);
    }
  char *message;
  ck_assert_msg (schedule_computes (rd->str, &message), "%s", message);

  struct {
    const char *text, *message;
  } cases[] = {
    /* Every rank sends chunk 0 and never adds anything in: rank 0's chunk
     * 0 ends with rank 1's data alone. */
    { "weft_schedule: 1\nop: all_reduce\nranks: 2\nchunks: 2\nprogram:\n"
      "  0: [{id: s, op: send, peer: 1, chunk: 0}, "
      "{op: recv, peer: 1, chunk: 0, after: [s]}]\n"
      "  1: [{id: s, op: send, peer: 0, chunk: 0}, "
      "{op: recv, peer: 0, chunk: 0, after: [s]}]\n",
      "s.yaml:6:45: rank 0 step 1 is the last to write chunk 0, which the "
      "rank ends with holding 1 contribution, not the sum of every rank's "
      "(2 contributions)" },
    /* The same, but the receive may land before the send has read the
     * chunk. */
    { "weft_schedule: 1\nop: all_reduce\nranks: 2\nchunks: 1\nprogram:\n"
      "  0: [{op: send, peer: 1, chunk: 0}, {op: recv, peer: 1, chunk: 0}]\n"
      "  1: [{op: send, peer: 0, chunk: 0}, {op: recv, peer: 0, chunk: 0}]\n",
      "s.yaml:6:38: rank 0 step 1 and step 0 both touch chunk 0, one writing "
      "it, and neither comes before the other" },
    /* Swapping and adding twice counts each rank twice. */
    { "weft_schedule: 1\nop: all_reduce\nranks: 2\nchunks: 1\nprogram:\n"
      "  0: [{id: s, op: send, peer: 1, chunk: 0}, "
      "{id: r, op: recv, peer: 1, chunk: 0}, "
      "{id: a, op: reduce, chunk: 0, after: [r, s]}, "
      "{id: t, op: send, peer: 1, chunk: 0, after: [a]}, "
      "{id: q, op: recv, peer: 1, chunk: 0, after: [a]}, "
      "{op: reduce, chunk: 0, after: [q, t]}]\n"
      "  1: [{id: s, op: send, peer: 0, chunk: 0}, "
      "{id: r, op: recv, peer: 0, chunk: 0}, "
      "{id: a, op: reduce, chunk: 0, after: [r, s]}, "
      "{id: t, op: send, peer: 0, chunk: 0, after: [a]}, "
      "{id: q, op: recv, peer: 0, chunk: 0, after: [a]}, "
      "{op: reduce, chunk: 0, after: [q, t]}]\n",
      "rank 0 step 5 is the last to write chunk 0, which the rank ends with "
      "holding 4 contributions, not the sum of every rank's (2 "
      "contributions)" },
    /* A reduce with nothing received to add. */
    { "weft_schedule: 1\nop: all_reduce\nranks: 2\nchunks: 1\nprogram:\n"
      "  0: [{op: reduce, chunk: 0}]\n  1: []\n",
      "s.yaml:6:7: rank 0 step 0 reduces chunk 0, but no receive it waits "
      "for brings chunk 0" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      ck_assert_msg (!schedule_computes (cases[i].text, &message),
                     "case %u accepted", i);
      ck_assert_msg (strstr (message, cases[i].message) != NULL,
                     "expected '%s'\n got '%s'", cases[i].message, message);
      g_free (message);
    }
  /* The shipped ring computes its all_reduce. */
  g_autoptr (GError) error = NULL;
  g_autoptr (WeftScheduleFile) ring = weft_schedule_file_load (
      WEFT_SOURCE_DIR "/scenarios/algorithms/ring-allreduce-8.yaml", &error);
  ck_assert (ring != NULL);
  ck_assert_msg (weft_schedule_file_verify (ring, &error), "%s",
                 error ? error->message : "");
}
END_TEST

/* ---- schedules for any number of ranks ---- */

START_TEST (test_expressions)
{
  /* Precedence, rounding down, the modulus never negative, functions, and
   * the errors of parsing and evaluating. */
  static const char *const names[] = { "r", "n", "k" };
  const int64_t vars[] = { 3, 8, 2 };
  static const struct { const char *text; int64_t value; } good[] = {
    { "(r + 1) % n", 4 }, { "(r - 4) % n", 7 }, { "-7 / 2", -4 },
    { "r / 2 ** k % 2", 0 }, { "2 ** k ** 2", 16 }, { "1 << k + 1", 8 },
    { "n & (n - 1) == 0", 1 }, { "r | 4", 7 }, { "r < n && n <= 8", 1 },
    { "r > 5 || !k", 0 }, { "r == 3 ? 10 : 20", 10 }, { "min(r, k)", 2 },
    { "max(-r, k)", 2 }, { "abs(2 - n)", 6 }, { "log2(n - 1)", 2 },
    { "ispow2(n) + ispow2(n + 1)", 1 }, { "(-1) ** 3", -1 },
    { "r != 3 ? 1 / 0 : 5", 5 },
  };
  for (guint i = 0; i < G_N_ELEMENTS (good); i++)
    {
      guint at;
      g_autofree char *message = NULL;
      g_autoptr (WeftExpr) e = weft_expr_parse (good[i].text, names, 3, &at,
                                                &message);
      ck_assert_msg (e != NULL, "%s: %s", good[i].text, message);
      int64_t v;
      ck_assert_msg (weft_expr_eval (e, vars, &v, &message), "%s: %s",
                     good[i].text, message);
      ck_assert_msg (v == good[i].value, "%s is %" G_GINT64_FORMAT ", not %"
                     G_GINT64_FORMAT, good[i].text, v, good[i].value);
    }
  static const struct { const char *text, *message; guint at; } bad[] = {
    { "r + ", "expected a number, a name or '(' at the end", 4 },
    { "(r + 1", "expected ')'", 6 }, { "r + m", "no name 'm' here", 4 },
    { "foo(r)", "no function 'foo'", 0 }, { "min(r)", "min takes 2", 6 },
    { "r r", "unexpected 'r'", 2 }, { "r ? 1", "expected ':'", 5 },
  };
  for (guint i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      guint at = 99;
      g_autofree char *message = NULL;
      ck_assert (weft_expr_parse (bad[i].text, names, 3, &at, &message)
                 == NULL);
      ck_assert_msg (strstr (message, bad[i].message) && at == bad[i].at,
                     "%s: '%s' at %u", bad[i].text, message, at);
    }
  static const struct { const char *text, *message; } fails[] = {
    { "r / (k - 2)", "divides by zero" }, { "r % -2", "must be above 0" },
    { "n ** 22", "overflows" }, { "log2(k - 2)", "log2 takes 1 or more" },
    { "1 << 63", "shifts take 0 to 62" }, { "2 ** -1", "0 or more" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (fails); i++)
    {
      guint at;
      g_autofree char *message = NULL;
      g_autoptr (WeftExpr) e = weft_expr_parse (fails[i].text, names, 3, &at,
                                                &message);
      ck_assert (e != NULL);
      int64_t v;
      ck_assert (!weft_expr_eval (e, vars, &v, &message));
      ck_assert_msg (strstr (message, fails[i].message), "%s: %s",
                     fails[i].text, message);
    }
}
END_TEST

/* The shipped algorithm file @name, loaded. */
static WeftScheduleFile *
load_shipped (const char *name)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *path = g_build_filename (WEFT_SOURCE_DIR, "scenarios",
                                            "algorithms", name, NULL);
  WeftScheduleFile *file = weft_schedule_file_load (path, &error);

  ck_assert_msg (file != NULL, "%s", error ? error->message : "");
  return file;
}

START_TEST (test_programs)
{
  /* The shipped programs expand, for every number of ranks they take,
   * into schedules that compute their operation and move the bytes their
   * algorithm moves; where they do not take the number, they say why. */
  static const struct {
    const char *name;
    WeftOp op;
    uint32_t step;              /* ranks taken: multiples of, or 0 for
                                   powers of two */
    double moves;               /* times a bandwidth-optimal algorithm's
                                   bytes; 0: log2 n n / (2(n - 1)) */
  } shipped[] = {
    { "ring-allreduce.yaml", WEFT_OP_ALL_REDUCE, 1, 1 },
    { "recursive-doubling-allreduce.yaml", WEFT_OP_ALL_REDUCE, 0, 0 },
    { "bruck-allgather.yaml", WEFT_OP_ALL_GATHER, 1, 1 },
    { "two-level-allreduce.yaml", WEFT_OP_ALL_REDUCE, 8, 1 },
  };
  for (guint i = 0; i < G_N_ELEMENTS (shipped); i++)
    {
      g_autoptr (GError) error = NULL;
      g_autoptr (WeftScheduleFile) file = load_shipped (shipped[i].name);
      ck_assert (weft_schedule_file_parametric (file));
      ck_assert_int_eq (weft_schedule_file_op (file), shipped[i].op);
      for (uint32_t n = 2; n <= 33; n++)
        {
          gboolean takes = shipped[i].step ? n % shipped[i].step == 0
                                           : (n & (n - 1)) == 0;
          g_clear_error (&error);
          gboolean ok = weft_schedule_file_expand (file, n, &error);
          ck_assert_msg (ok == takes, "%s, %u ranks: %s", shipped[i].name, n,
                         error ? error->message : "expanded");
          if (!ok)
            {
              ck_assert_msg (strstr (error->message, "the schedule requires"),
                             "%s", error->message);
              continue;
            }
          ck_assert_msg (weft_schedule_file_verify (file, &error),
                         "%s, %u ranks: %s", shipped[i].name, n,
                         error->message);
          const uint64_t size = (uint64_t) n * 4096;
          g_autoptr (WeftSchedule) s = weft_schedule_file_build (file, size,
                                                                 &error);
          ck_assert_msg (s != NULL, "%s", error ? error->message : "");
          double moves = shipped[i].moves;
          if (moves == 0)
            moves = log2 (n) * n / (2.0 * (n - 1));
          ck_assert_double_eq_tol (
              (double) weft_schedule_bytes_sent (s),
              moves * (double) weft_op_bytes (shipped[i].op, n, size), 1);
        }
    }
}
END_TEST

#define PROGRAM_HEAD "weft_schedule: 2\nop: all_reduce\nchunks: n\n"

START_TEST (test_bad_programs)
{
  /* Mistakes are refused where they are, on reading or on expanding for
   * a number of ranks; a wrong algorithm is refused by the check. */
  static const struct { const char *text; uint32_t n; const char *message; }
  cases[] = {
    { PROGRAM_HEAD "program:\n  - {op: send, peer: (r + 1) % m, chunk: r}\n",
      4, "s.yaml:5:32: in '(r + 1) % m': no name 'm' here; known: r, n" },
    { PROGRAM_HEAD "program:\n  - {op: send, peer: r + 1, chunk: r}\n", 4,
      "s.yaml:5:5: rank 3: peer r + 1 is 4, not a rank from 0 to 3 other "
      "than 3" },
    { PROGRAM_HEAD "program:\n  - for: s\n    from: 0\n    to: n\n"
      "    steps:\n      - {op: reduce, chunk: s}\n", 4,
      "s.yaml:9:9: rank 0 (s = 4): chunk s is 4, not from 0 to 3" },
    { PROGRAM_HEAD "requires: [n % 3 == 0]\nprogram: []\n", 4,
      "s.yaml:4:12: the schedule requires n % 3 == 0, which does not hold "
      "for 4 ranks" },
    { PROGRAM_HEAD "let: {g: n - 4}\nprogram:\n  - {op: reduce, chunk: r / g}\n",
      4, "s.yaml:6:5: rank 0: r / g: 0 / 0 divides by zero" },
    { PROGRAM_HEAD "program:\n  - {op: reduce, chunk: 0, after: [x]}\n", 4,
      "s.yaml:5:36: no step has the id 'x'" },
    { PROGRAM_HEAD "program:\n  - for: s\n    from: 0\n    to: 1\n"
      "    steps: [{id: a, op: reduce, chunk: 0}]\n"
      "  - {op: reduce, chunk: 0, after: [a]}\n", 4,
      "s.yaml:9:36: 'a' is inside 1 loop and this step is not inside the "
      "same outer ones: give all 1 index, as a(...)" },
    { PROGRAM_HEAD "program:\n  - {op: reduce, chunk: 0, after: [\"a(1, 2)\"]}\n"
      "  - {id: a, op: reduce, chunk: 0}\n", 4,
      "s.yaml:5:36: 'a' is inside 0 loops: give at most 0 indices" },
    { PROGRAM_HEAD "program:\n  - for: r\n    from: 0\n    to: 1\n"
      "    steps: []\n", 4, "s.yaml:5:10: 'r' is already a name here" },
    { PROGRAM_HEAD "program:\n  - {when: r > 0}\n", 4,
      "s.yaml:5:5: an item of a program is a step (op: ...), a loop (for: "
      "...) or a group (when: ..., steps: ...)" },
    /* Every rank sends its chunk on and keeps what it gets: the data is
     * moved, never added up. */
    { PROGRAM_HEAD "program:\n  - {op: send, peer: (r + 1) % n, chunk: r}\n"
      "  - {op: recv, peer: (r - 1) % n, chunk: (r - 1) % n}\n", 4,
      "s.yaml: rank 0 ends with chunk 0 holding 1 contribution, not the sum "
      "of every rank's (4 contributions), and no step writes it" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *dir = g_dir_make_tmp ("weft-sched-XXXXXX", NULL);
      g_autofree char *path = g_build_filename (dir, "s.yaml", NULL);
      g_autoptr (GError) error = NULL;
      ck_assert (g_file_set_contents (path, cases[i].text, -1, NULL));
      g_autoptr (WeftScheduleFile) file = weft_schedule_file_load (path,
                                                                   &error);
      gboolean ok = file != NULL
                    && weft_schedule_file_expand (file, cases[i].n, &error)
                    && weft_schedule_file_verify (file, &error);
      ck_assert_msg (!ok, "case %u accepted", i);
      const char *message = strstr (error->message, "s.yaml");
      ck_assert_msg (message && strstr (message, cases[i].message) == message,
                     "case %u: expected '%s'\n got '%s'", i, cases[i].message,
                     error->message);
      g_remove (path);
      g_rmdir (dir);
    }
}
END_TEST

START_TEST (test_pat_split_computes)
{
  /* PAT's blocks in more messages than one a dimension: 18 ranks whose
   * blocks are over half NCCL's smallest PAT chunk (64 KiB) aggregate 8
   * a message, and the nearest dimension has 9; its chunks NCCL's.  The
   * data check (a byte a chunk: ten million of them) runs on
   * reduce_scatter, whose messages are grouped as all_gather's and also
   * reduced; all_gather's schedule is checked whole. */
  WeftCollectiveParams params = { 1, 0, 0, NULL, 0, NULL, NULL, 0, FALSE, NULL };
  uint32_t n = 18;
  uint64_t size = (uint64_t) n * (32 << 10 | 1);

  for (WeftOp op = WEFT_OP_ALL_GATHER; op <= WEFT_OP_REDUCE_SCATTER; op++)
    {
      g_autoptr (GError) error = NULL;
      g_autoptr (WeftSchedule) s = weft_collective_schedule_regions (
          op, WEFT_ALG_PAT, n, size, &params);
      if (op == WEFT_OP_REDUCE_SCATTER)
        ck_assert_msg (weft_schedule_verify_regions (s, op, size, "pat",
                                                     &error),
                       "%s", error ? error->message : "");
      else
        ck_assert_msg (weft_schedule_check (s, &error), "%s",
                       error ? error->message : "");
      /* Each rank sends 17 blocks: the last dimension's 9 in two. */
      uint32_t sends = 0;
      for (uint32_t i = 0; i < s->n_steps[0]; i++)
        sends += weft_schedule_step (s, 0, i)->kind == WEFT_STEP_SEND;
      ck_assert_uint_eq (sends, 6);
    }
}
END_TEST

START_TEST (test_builtins_compute)
{
  /* Built-in algorithms, whose builders say where each step's bytes lie,
   * compute their operation, run on symbols a byte a chunk: for 1 to 17
   * ranks, servers of 1 to 4 GPUs, two channels of three chunks, and sizes
   * that divide by nothing (all_gather and reduce_scatter, whose pieces
   * the ring cuts channel by channel but whose blocks are the ranks', at
   * sizes that divide).  all_to_all and send_recv run out of place: their
   * output follows their input, and a rank's own block of an all_to_all,
   * copied inside the GPU, is not in the schedule. */
  static const struct { WeftOp op; WeftAlgorithm alg; } cases[] = {
    { WEFT_OP_ALL_REDUCE, WEFT_ALG_RING },
    { WEFT_OP_REDUCE_SCATTER, WEFT_ALG_RING },
    { WEFT_OP_ALL_GATHER, WEFT_ALG_RING },
    { WEFT_OP_BROADCAST, WEFT_ALG_RING },
    { WEFT_OP_REDUCE, WEFT_ALG_RING },
    { WEFT_OP_ALL_REDUCE, WEFT_ALG_TREE },
    { WEFT_OP_ALL_REDUCE, WEFT_ALG_RHD },
    { WEFT_OP_ALL_REDUCE, WEFT_ALG_HIER },
    { WEFT_OP_ALL_REDUCE, WEFT_ALG_HIER_RHD },
    { WEFT_OP_ALL_REDUCE, WEFT_ALG_HIER_TREE },
    { WEFT_OP_ALL_REDUCE, WEFT_ALG_NVLS },
    { WEFT_OP_ALL_GATHER, WEFT_ALG_NVLS },
    { WEFT_OP_REDUCE_SCATTER, WEFT_ALG_NVLS },
    { WEFT_OP_ALL_REDUCE, WEFT_ALG_NVLS_TREE },
    { WEFT_OP_SEND_RECV, WEFT_ALG_RING },
    { WEFT_OP_ALL_TO_ALL, WEFT_ALG_DIRECT },
    { WEFT_OP_ALL_TO_ALL, WEFT_ALG_PAIRWISE },
    { WEFT_OP_ALL_GATHER, WEFT_ALG_PAT },
    { WEFT_OP_REDUCE_SCATTER, WEFT_ALG_PAT },
    { WEFT_OP_ALL_REDUCE, WEFT_ALG_COLLNET },
  };
  static const double shares[] = { 5, 4, 4, 5 };

  for (guint a = 0; a < G_N_ELEMENTS (cases); a++)
    for (uint32_t n = 1; n <= 17; n++)
      for (uint32_t local = 1; local <= 4; local++)
        {
          WeftAlgorithm alg = cases[a].alg;
          WeftOp op = cases[a].op;
          /* The tree takes servers as each rank's server (chains inside
           * them), the two-level algorithms as ranks a server; the others
           * have none. */
          gboolean tree = alg == WEFT_ALG_TREE;
          gboolean two_level = alg == WEFT_ALG_HIER
                               || alg == WEFT_ALG_HIER_RHD
                               || alg == WEFT_ALG_HIER_TREE
                               || alg == WEFT_ALG_NVLS_TREE
                               || alg == WEFT_ALG_COLLNET;
          if ((!tree && !two_level && local > 1) || n % local != 0)
            continue;
          /* One rank sends itself nothing, out of place or not. */
          if (n == 1 && (op == WEFT_OP_SEND_RECV || op == WEFT_OP_ALL_TO_ALL))
            continue;
          uint32_t server[17];
          for (uint32_t r = 0; r < n; r++)
            server[r] = r / local;
          /* CollNet's three switches: the first the root of the others,
           * server g's GPUs under switch g mod 3. */
          gboolean nvls = alg == WEFT_ALG_NVLS || alg == WEFT_ALG_NVLS_TREE;
          WeftCollectiveParams params = { 2, 3,
                                          nvls ? 4
                                          : alg == WEFT_ALG_COLLNET ? 3 : 0,
                                          nvls ? shares : NULL,
                                          tree ? 0 : local,
                                          tree ? server : NULL, NULL, 0,
                                          FALSE, NULL };
          gboolean blocked = op == WEFT_OP_ALL_GATHER
                             || op == WEFT_OP_REDUCE_SCATTER
                             || op == WEFT_OP_ALL_TO_ALL;
          const uint64_t sizes[] = { blocked ? 42 * n : 211,
                                     blocked ? 6 * n : 5 };
          for (guint z = 0; z < G_N_ELEMENTS (sizes); z++)
            {
              g_autoptr (GError) error = NULL;
              g_autoptr (WeftSchedule) s = weft_collective_schedule_regions (
                  op, alg, n, sizes[z], &params);
              ck_assert_msg (weft_schedule_verify_regions (
                                 s, op, sizes[z], weft_algorithm_name (alg),
                                 &error),
                             "%s n=%u local=%u size=%" G_GUINT64_FORMAT ": %s",
                             weft_op_name (op), n, local, sizes[z],
                             error->message);
            }
        }
}
END_TEST

/* ---- MSCCL's XML ---- */

/* Write @text to a file named @name in a new folder; the caller removes
 * both (remove_file()). */
static char *
write_file (const char *name, const char *text)
{
  g_autofree char *dir = g_dir_make_tmp ("weft-msccl-XXXXXX", NULL);
  char *path = g_build_filename (dir, name, NULL);

  ck_assert (g_file_set_contents (path, text, -1, NULL));
  return path;
}

static void
remove_file (const char *path)
{
  g_autofree char *dir = g_path_get_dirname (path);

  g_remove (path);
  g_rmdir (dir);
}

/* The MSCCL ring all_reduce over @n GPUs, in place, as msccl-tools writes
 * it: chunk r goes round first from GPU r, reduced on the way (rrs), kept
 * where it completes (rrcs), then passed round again (rcs, r). */
static char *
msccl_ring (uint32_t n)
{
  GString *x = g_string_new (NULL);

  g_string_append_printf (x, "<algo name=\"ring\" proto=\"Simple\" "
                          "nchannels=\"1\" nchunksperloop=\"%u\" "
                          "ngpus=\"%u\" coll=\"allreduce\" inplace=\"1\" "
                          "outofplace=\"0\">\n", n, n);
  for (uint32_t r = 0; r < n; r++)
    {
      g_string_append_printf (x, " <gpu id=\"%u\" i_chunks=\"%u\" "
                              "o_chunks=\"0\" s_chunks=\"0\">\n  <tb id=\"0\" "
                              "send=\"%u\" recv=\"%u\" chan=\"0\">\n", r, n,
                              (r + 1) % n, (r + n - 1) % n);
      uint32_t s = 0;
      g_string_append_printf (x, "   <step s=\"%u\" type=\"s\" srcbuf=\"i\" "
                              "srcoff=\"%u\" dstbuf=\"i\" dstoff=\"%u\" "
                              "cnt=\"1\" depid=\"-1\" deps=\"-1\" "
                              "hasdep=\"0\"/>\n", s++, r, r);
      for (uint32_t k = 1; k < n; k++)
        {
          uint32_t c = (r + n - k) % n;
          g_string_append_printf (x, "   <step s=\"%u\" type=\"%s\" "
                                  "srcbuf=\"i\" srcoff=\"%u\" dstbuf=\"i\" "
                                  "dstoff=\"%u\" cnt=\"1\" depid=\"-1\" "
                                  "deps=\"-1\" hasdep=\"0\"/>\n", s++,
                                  k + 1 < n ? "rrs" : "rrcs", c, c);
        }
      for (uint32_t k = 0; k + 1 < n; k++)
        {
          uint32_t c = (r + n - k) % n;
          g_string_append_printf (x, "   <step s=\"%u\" type=\"%s\" "
                                  "dstbuf=\"i\" dstoff=\"%u\" cnt=\"1\"/>\n",
                                  s++, k + 2 < n ? "rcs" : "r", c);
        }
      g_string_append (x, "  </tb>\n </gpu>\n");
    }
  g_string_append (x, "</algo>\n");
  return g_string_free (x, FALSE);
}

/* Whether the MSCCL file @text loads and computes its operation (@op
 * where the file names none), with the first error in @message. */
static gboolean
msccl_computes (const char *text, WeftOp op, char **message)
{
  g_autofree char *path = write_file ("a.xml", text);
  g_autoptr (GError) error = NULL;
  g_autoptr (WeftScheduleFile) file = weft_schedule_file_load (path, &error);
  gboolean ok = file != NULL;

  if (ok && !weft_schedule_file_has_op (file))
    weft_schedule_file_set_op (file, op);
  ok = ok && weft_schedule_file_verify (file, &error);
  *message = ok ? NULL
                : g_strdup (strstr (error->message, "a.xml") ?: error->message);
  remove_file (path);
  return ok;
}

START_TEST (test_msccl_files)
{
  /* The shipped MSCCL files and the ring over 2 to 9 GPUs load, compute
   * their operation, and move what a bandwidth-optimal algorithm moves. */
  static const struct { const char *name; WeftOp op; WeftProtocolKind proto; }
  shipped[] = {
    { "msccl-ring-allreduce-8.xml", WEFT_OP_ALL_REDUCE, WEFT_PROTOCOL_SIMPLE },
    { "msccl-allpairs-allreduce-8.xml", WEFT_OP_ALL_REDUCE, WEFT_PROTOCOL_LL },
    { "msccl-ring-allgather-8.xml", WEFT_OP_ALL_GATHER, WEFT_PROTOCOL_SIMPLE },
  };
  for (guint i = 0; i < G_N_ELEMENTS (shipped); i++)
    {
      g_autoptr (GError) error = NULL;
      g_autoptr (WeftScheduleFile) file = load_shipped (shipped[i].name);
      ck_assert (weft_schedule_file_has_op (file));
      ck_assert_int_eq (weft_schedule_file_op (file), shipped[i].op);
      ck_assert_uint_eq (weft_schedule_file_ranks (file), 8);
      WeftProtocolKind proto;
      ck_assert (weft_schedule_file_protocol (file, &proto));
      ck_assert_int_eq (proto, shipped[i].proto);
      ck_assert_msg (weft_schedule_file_verify (file, &error), "%s: %s",
                     shipped[i].name, error ? error->message : "");
      const uint64_t size = 8 * 1000003;
      g_autoptr (WeftSchedule) s = weft_schedule_file_build (file, size,
                                                             &error);
      ck_assert_msg (s != NULL, "%s", error ? error->message : "");
      ck_assert_uint_eq (weft_schedule_bytes_sent (s),
                         weft_op_bytes (shipped[i].op, 8, size));
    }
  for (uint32_t n = 2; n <= 9; n++)
    {
      g_autofree char *text = msccl_ring (n), *message = NULL;
      ck_assert_msg (msccl_computes (text, WEFT_OP_ALL_REDUCE, &message),
                     "%u GPUs: %s", n, message);
    }
}
END_TEST

/* Two GPUs' ring all_reduce, in place, with each GPU's three steps' types
 * and GPU 1's thread block's attributes from the caller. */
#define MSCCL_RING2(t0, t1, t2, u0, u1, u2, tb1)                            \
  "<algo name=\"r2\" nchannels=\"1\" nchunksperloop=\"2\" ngpus=\"2\" "     \
  "coll=\"allreduce\" inplace=\"1\">\n"                                    \
  " <gpu id=\"0\" i_chunks=\"2\">\n"                                       \
  "  <tb id=\"0\" send=\"1\" recv=\"1\" chan=\"0\">\n"                     \
  "   <step s=\"0\" type=\"" t0 "\" srcoff=\"0\" dstoff=\"0\"/>\n"         \
  "   <step s=\"1\" type=\"" t1 "\" srcoff=\"1\" dstoff=\"1\"/>\n"         \
  "   <step s=\"2\" type=\"" t2 "\" srcoff=\"0\" dstoff=\"0\"/>\n"         \
  "  </tb>\n </gpu>\n"                                                     \
  " <gpu id=\"1\" i_chunks=\"2\">\n"                                       \
  "  <tb " tb1 ">\n"                                                        \
  "   <step s=\"0\" type=\"" u0 "\" srcoff=\"1\" dstoff=\"1\"/>\n"         \
  "   <step s=\"1\" type=\"" u1 "\" srcoff=\"0\" dstoff=\"0\"/>\n"         \
  "   <step s=\"2\" type=\"" u2 "\" srcoff=\"1\" dstoff=\"1\"/>\n"         \
  "  </tb>\n </gpu>\n</algo>\n"
#define TB1 "id=\"0\" send=\"0\" recv=\"0\" chan=\"0\""

START_TEST (test_msccl_refused)
{
  /* Files that do not compute their operation, or are not MSCCL's
   * format, are refused at the line and column of what is wrong. */
  static const struct { const char *text, *message; } cases[] = {
    { MSCCL_RING2 ("s", "rrcs", "r", "s", "rrcs", "r", TB1), NULL },
    /* GPU 0 receives chunk 1 and keeps it without adding its own. */
    { MSCCL_RING2 ("s", "rcs", "r", "s", "rrcs", "r", TB1),
      "a.xml:5:4: gpu 0 thread block 0 step 1 (rcs) is the last to write "
      "output chunk i[1], which gpu 0 ends with holding 1 contribution, not "
      "the sum of every GPU's (2 contributions)" },
    /* GPU 0 never receives what GPU 1 sends last. */
    { MSCCL_RING2 ("s", "rrs", "nop", "s", "rrcs", "r", TB1),
      "a.xml:12:4: gpu 1 thread block 0 step 1 (rrcs) sends to gpu 0 on "
      "channel 0, which receives nothing more from it" },
    /* GPU 1 receives before it has sent: both wait. */
    { MSCCL_RING2 ("r", "rrcs", "s", "rrcs", "s", "r", TB1),
      "never runs" },
    { MSCCL_RING2 ("s", "rrx", "r", "s", "rrcs", "r", TB1),
      "a.xml:5:4: unknown step type 'rrx'; valid: s, r, rcs, rrs, rrc, "
      "rrcs, re, cpy, nop" },
    { MSCCL_RING2 ("s", "rrcs", "r", "s", "rrcs", "r",
                   "id=\"0\" send=\"1\" recv=\"0\" chan=\"0\""),
      "a.xml:10:3: gpu 1's thread block 0 names gpu 1 itself as a peer" },
    { MSCCL_RING2 ("s", "rrcs", "r", "s", "rrcs", "r",
                   "id=\"0\" send=\"0\" recv=\"0\" chan=\"1\""),
      "a.xml:10:3: attribute 'chan' of <tb> is '1', not a whole number "
      "from 0 to 0" },
    { "<algo ngpus=\"2\" nchunksperloop=\"2\">\n <gpu id=\"0\"/>\n</algo>\n",
      "a.xml: the algo is for 2 GPUs and has no <gpu id=\"1\">" },
    { "<algo ngpus=\"2\" nchunksperloop=\"2\">\n <gpu id=\"0\">\n</algo>\n",
      "a.xml:3:" },
    { "<algo ngpus=\"1\" nchunksperloop=\"1\">\n <tb id=\"0\"/>\n</algo>\n",
      "a.xml:2:2: <tb> where <gpu> belongs" },
    /* The source passes the end of the input. */
    { "<algo ngpus=\"2\" nchunksperloop=\"2\">\n <gpu id=\"0\" i_chunks=\"2\">"
      "<tb id=\"0\" send=\"1\">\n  <step s=\"0\" type=\"s\" srcoff=\"1\" "
      "cnt=\"2\"/>", "a.xml:3:3: the step's source chunks i[1..2] pass the "
      "end of gpu 0's i buffer (2 chunks)" },
    /* Two blocks add into chunk 0 in no fixed order. */
    { "<algo ngpus=\"1\" nchunksperloop=\"1\" coll=\"allreduce\" "
      "inplace=\"1\">\n <gpu id=\"0\" i_chunks=\"1\" s_chunks=\"2\">\n"
      "  <tb id=\"0\"><step s=\"0\" type=\"cpy\" srcbuf=\"i\" dstbuf=\"s\"/>"
      "</tb>\n"
      "  <tb id=\"1\"><step s=\"0\" type=\"cpy\" srcbuf=\"s\" dstbuf=\"i\"/>"
      "</tb>\n </gpu>\n</algo>\n",
      "a.xml:4:14: gpu 0 thread block 1 step 0 (cpy) and thread block 0 "
      "step 0 (line 3) both touch chunk" },
    /* The same in order (block 1 waits for block 0's step) computes. */
    { "<algo ngpus=\"1\" nchunksperloop=\"1\" coll=\"allreduce\" "
      "inplace=\"1\">\n <gpu id=\"0\" i_chunks=\"1\" s_chunks=\"2\">\n"
      "  <tb id=\"0\"><step s=\"0\" type=\"cpy\" srcbuf=\"i\" dstbuf=\"s\"/>"
      "</tb>\n"
      "  <tb id=\"1\"><step s=\"0\" type=\"cpy\" srcbuf=\"s\" dstbuf=\"i\" "
      "depid=\"0\" deps=\"0\"/></tb>\n </gpu>\n</algo>\n", NULL },
    /* Waiting in a circle. */
    { "<algo ngpus=\"1\" nchunksperloop=\"1\">\n <gpu id=\"0\" "
      "i_chunks=\"1\">\n"
      "  <tb id=\"0\"><step s=\"0\" type=\"nop\" depid=\"1\" deps=\"0\"/>"
      "</tb>\n"
      "  <tb id=\"1\"><step s=\"0\" type=\"nop\" depid=\"0\" deps=\"0\"/>"
      "</tb>\n </gpu>\n</algo>\n",
      "a.xml:3:14: gpu 0 thread block 0 step 0 waits for thread block 1 "
      "step 0, which waits, through its own, for it" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *message = NULL;
      gboolean ok = msccl_computes (cases[i].text, WEFT_OP_ALL_REDUCE,
                                    &message);
      if (cases[i].message == NULL)
        {
          ck_assert_msg (ok, "case %u: %s", i, message);
          continue;
        }
      ck_assert_msg (!ok, "case %u accepted", i);
      ck_assert_msg (strstr (message, cases[i].message) != NULL,
                     "case %u: expected '%s'\n got '%s'", i, cases[i].message,
                     message);
    }
}
END_TEST

static Suite *
schedule_suite (void)
{
  Suite *s = suite_create ("schedule");
  TCase *tc;

  tc = tcase_create ("algorithms");
  tcase_set_timeout (tc, 60);
  tcase_add_test (tc, test_bus_factors);
  tcase_add_test (tc, test_algorithm_table);
  tcase_add_test (tc, test_bytes_moved_exactly);
  tcase_add_test (tc, test_one_rank_moves_nothing);
  tcase_add_test (tc, test_hierarchical_bytes);
  tcase_add_test (tc, test_tree_servers_bytes);
  tcase_add_test (tc, test_rings_bytes);
  tcase_add_test (tc, test_image_streamed);
  tcase_add_test (tc, test_ring_schedule_threads);
  tcase_add_test (tc, test_ring_reference);
  tcase_add_test (tc, test_builtins_compute);
  tcase_add_test (tc, test_pat_split_computes);
  suite_add_tcase (s, tc);

  tc = tcase_create ("checks");
  tcase_add_test (tc, test_bad_schedules);
  tcase_add_test (tc, test_bad_schedule_files);
  tcase_add_test (tc, test_schedule_data);
  tcase_add_test (tc, test_expressions);
  tcase_add_test (tc, test_programs);
  tcase_add_test (tc, test_bad_programs);
  tcase_add_test (tc, test_msccl_files);
  tcase_add_test (tc, test_msccl_refused);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  SRunner *runner = srunner_create (schedule_suite ());

  srunner_run_all (runner, CK_NORMAL);
  int failed = srunner_ntests_failed (runner);
  srunner_free (runner);
  return failed == 0 ? 0 : 1;
}
