/* Tests of the max-min solver on its own: closed forms, and random
 * problems against a plain reference and the max-min property. */
#include "network/maxmin.h"

#include <check.h>
#include <math.h>
#include <string.h>

#include "union_find.h"

/* Relative error allowed where the closed form and the solver round
 * differently (a sum of shares, a difference of capacities). */
#define CLOSE 1e-12

static void
assert_close (double got, double want, const char *what, guint i)
{
  ck_assert_msg (fabs (got - want) <= CLOSE * fabs (want),
                 "%s %u: %.17g B/s, not %.17g", what, i, got, want);
}

/* One flow over the @n links @links, each carrying all its rate, at most
 * at @cap (0: none). */
static uint32_t
flow_over (WeftMaxmin *m, double cap, const uint32_t *links, guint n)
{
  uint32_t i = weft_maxmin_add_flow (m, cap);

  for (guint k = 0; k < n; k++)
    weft_maxmin_add_hop (m, links[k], 1);
  return i;
}

/* ---- closed forms ---- */

START_TEST (test_one_link_shared)
{
  /* n flows on one link of capacity C: C/n each, and the link is full. */
  const double c = 100e9;
  g_autoptr (WeftMaxmin) m = weft_maxmin_new ();

  for (guint n = 1; n <= 17; n++)
    {
      weft_maxmin_reset (m);
      uint32_t l = weft_maxmin_add_link (m, c, 0);
      for (guint i = 0; i < n; i++)
        flow_over (m, 0, &l, 1);
      weft_maxmin_solve (m);
      for (guint i = 0; i < n; i++)
        assert_close (m->rate[i], c / n, "flow", i);
      assert_close (m->links[l].load, c, "load with flows", n);
    }
}
END_TEST

START_TEST (test_cap_frees_the_rest)
{
  /* Three flows on a link of 12.5 GB/s, the first capped at 2.5 GB/s,
   * below its share: it gets its cap, the other two share the rest,
   * 5 GB/s each.  A cap above the share changes nothing. */
  const double c = 12.5e9;
  const double caps[] = { 2.5e9, 10e9 };
  const double want[2][3] = { { 2.5e9, 5e9, 5e9 },
                              { c / 3, c / 3, c / 3 } };
  g_autoptr (WeftMaxmin) m = weft_maxmin_new ();

  for (guint k = 0; k < G_N_ELEMENTS (caps); k++)
    {
      weft_maxmin_reset (m);
      uint32_t l = weft_maxmin_add_link (m, c, 0);
      flow_over (m, caps[k], &l, 1);
      flow_over (m, 0, &l, 1);
      flow_over (m, 0, &l, 1);
      weft_maxmin_solve (m);
      for (guint i = 0; i < 3; i++)
        assert_close (m->rate[i], want[k][i], "flow", i);
      assert_close (m->links[l].load, c, "load", k);
    }
}
END_TEST

START_TEST (test_two_links)
{
  /* Links A and B; flow a over A, flow b over B, flow ab over both.  The
   * link of less capacity, X, splits evenly between ab and its own flow;
   * the other flow takes what ab leaves on the other link:
   * A = 10, B = 4: ab = b = 2, a = 8;  A = 3, B = 10: ab = a = 1.5,
   * b = 8.5 (GB/s). */
  const double cap[2][2] = { { 10e9, 4e9 }, { 3e9, 10e9 } };
  const double want[2][3] = { { 8e9, 2e9, 2e9 }, { 1.5e9, 8.5e9, 1.5e9 } };
  g_autoptr (WeftMaxmin) m = weft_maxmin_new ();

  for (guint k = 0; k < 2; k++)
    {
      weft_maxmin_reset (m);
      uint32_t links[2] = { weft_maxmin_add_link (m, cap[k][0], 0),
                            weft_maxmin_add_link (m, cap[k][1], 0) };
      flow_over (m, 0, &links[0], 1);
      flow_over (m, 0, &links[1], 1);
      flow_over (m, 0, links, 2);
      weft_maxmin_solve (m);
      for (guint i = 0; i < 3; i++)
        assert_close (m->rate[i], want[k][i], "flow", i);
      /* Both links are full. */
      assert_close (m->links[0].load, cap[k][0], "link", 0);
      assert_close (m->links[1].load, cap[k][1], "link", 1);
    }
}
END_TEST

START_TEST (test_parking_lot)
{
  /* A chain of links C_0 .. C_4, a long flow over all of them and a
   * short flow on each: the long flow gets half the least link,
   * min C_i / 2, and each short flow what it leaves on its link,
   * C_i - min C_j / 2. */
  const double c[] = { 40e9, 10e9, 25e9, 12e9, 100e9 };
  enum { N = G_N_ELEMENTS (c) };
  g_autoptr (WeftMaxmin) m = weft_maxmin_new ();
  uint32_t chain[N];

  for (guint i = 0; i < N; i++)
    chain[i] = weft_maxmin_add_link (m, c[i], 0);
  uint32_t shorts[N];
  for (guint i = 0; i < N; i++)
    shorts[i] = flow_over (m, 0, &chain[i], 1);
  uint32_t along = flow_over (m, 0, chain, N);
  weft_maxmin_solve (m);

  assert_close (m->rate[along], 5e9, "long flow", along);
  for (guint i = 0; i < N; i++)
    {
      assert_close (m->rate[shorts[i]], c[i] - 5e9, "short flow", i);
      assert_close (m->links[chain[i]].load, c[i], "link", i);
    }
}
END_TEST

START_TEST (test_own_links_give_the_bottleneck)
{
  /* Flows that share no link each get the least capacity on their path,
   * or their cap where it is less, to the bit: nothing else is shared.
   * A link of no capacity left gives its flow nothing. */
  const double c[4][3] = { { 40e9, 10e9, 25e9 }, { 7e9, 90e9, 8e9 },
                           { 3e9, 3e9, 3e9 }, { 50e9, 0, 60e9 } };
  const double caps[4] = { 0, 0, 2e9, 0 };
  const double want[4] = { 10e9, 7e9, 2e9, 0 };
  g_autoptr (WeftMaxmin) m = weft_maxmin_new ();

  for (guint i = 0; i < 4; i++)
    {
      uint32_t links[3];
      for (guint k = 0; k < 3; k++)
        links[k] = weft_maxmin_add_link (m, c[i][k], 0);
      flow_over (m, caps[i], links, 3);
    }
  weft_maxmin_solve (m);
  for (guint i = 0; i < 4; i++)
    ck_assert_msg (m->rate[i] == want[i], "flow %u: %.17g B/s, not %.17g",
                   i, m->rate[i], want[i]);
}
END_TEST

START_TEST (test_shares_of_a_striped_flow)
{
  /* A flow striped a quarter over link L1 (10 GB/s) and three quarters
   * over L2 (30 GB/s), and a plain flow on L1.  L1 fills first, when
   * 1.25 r = 10: both flows get 8 GB/s, and L2 carries 6 of its 30.  The
   * striped flow alone would get 40, filling both. */
  g_autoptr (WeftMaxmin) m = weft_maxmin_new ();

  for (guint alone = 0; alone < 2; alone++)
    {
      weft_maxmin_reset (m);
      uint32_t l1 = weft_maxmin_add_link (m, 10e9, 0);
      uint32_t l2 = weft_maxmin_add_link (m, 30e9, 0);
      weft_maxmin_add_flow (m, 0);
      weft_maxmin_add_hop (m, l1, 0.25);
      weft_maxmin_add_hop (m, l2, 0.75);
      if (!alone)
        flow_over (m, 0, &l1, 1);
      weft_maxmin_solve (m);
      assert_close (m->rate[0], alone ? 40e9 : 8e9, "striped flow", 0);
      if (!alone)
        assert_close (m->rate[1], 8e9, "plain flow", 1);
      assert_close (m->links[l1].load, 10e9, "L1", alone);
      assert_close (m->links[l2].load, alone ? 30e9 : 6e9, "L2", alone);
    }
}
END_TEST

START_TEST (test_held_rates)
{
  /* Solving again: a link of 10 GB/s carries 3 of a flow held fixed
   * outside the problem, and the problem's flows come in holding 2 and
   * 4 of it.  They are given back before filling: the two share the
   * 7 GB/s the fixed flow leaves, and the link ends full. */
  g_autoptr (WeftMaxmin) m = weft_maxmin_new ();
  const double c = 10e9, fixed = 3e9, held[] = { 2e9, 4e9 };
  uint32_t l = weft_maxmin_add_link (m, c - fixed - held[0] - held[1],
                                     fixed + held[0] + held[1]);

  for (guint i = 0; i < 2; i++)
    {
      flow_over (m, 0, &l, 1);
      m->held[i] = held[i];
    }
  weft_maxmin_solve (m);
  assert_close (m->rate[0], 3.5e9, "flow", 0);
  assert_close (m->rate[1], 3.5e9, "flow", 1);
  assert_close (m->links[l].load, c, "link", l);
}
END_TEST

/* ---- random problems ---- */

/* Max-min fair rates by progressive filling written plainly from the
 * definition: in rounds, every rising flow rises by the most that all of
 * them can take together, and those on a full link or at their cap stop.
 * Reads @m's problem (each link's residual as its capacity, nothing
 * held) into @rate, without the solver. */
static void
reference (const WeftMaxmin *m, double *rate)
{
  g_autofree gboolean *frozen = g_new0 (gboolean, m->n_flows);
  g_autofree double *used = g_new0 (double, m->n_links);
  g_autofree double *crossing = g_new0 (double, m->n_links);
  guint left = m->n_flows;

  for (guint i = 0; i < m->n_flows; i++)
    rate[i] = 0;
  while (left > 0)
    {
      memset (crossing, 0, m->n_links * sizeof (double));
      for (guint i = 0; i < m->n_flows; i++)
        for (guint h = m->first[i]; !frozen[i] && h < m->first[i + 1]; h++)
          crossing[m->hop_link[h]] += m->hop_share[h];
      double rise = INFINITY;
      for (guint l = 0; l < m->n_links; l++)
        if (crossing[l] > 0)
          rise = MIN (rise, (m->links[l].residual - used[l]) / crossing[l]);
      for (guint i = 0; i < m->n_flows; i++)
        if (!frozen[i] && m->cap[i] > 0)
          rise = MIN (rise, m->cap[i] - rate[i]);
      for (guint i = 0; i < m->n_flows; i++)
        if (!frozen[i])
          {
            rate[i] += rise;
            for (guint h = m->first[i]; h < m->first[i + 1]; h++)
              used[m->hop_link[h]] += rise * m->hop_share[h];
          }
      for (guint i = 0; i < m->n_flows; i++)
        {
          gboolean full = m->cap[i] > 0 && rate[i] >= m->cap[i] * (1 - 1e-12);
          for (guint h = m->first[i]; !frozen[i] && h < m->first[i + 1]; h++)
            full |= used[m->hop_link[h]]
                    >= m->links[m->hop_link[h]].residual * (1 - 1e-12);
          if (!frozen[i] && full)
            {
              frozen[i] = TRUE;
              left--;
            }
        }
    }
}

/* What the random problems showed, so that a test can tell that they
 * tried what they were meant to. */
typedef struct {
  guint at_cap, on_full_link;
  guint heap_problems, scan_problems;
} Seen;

/* Check @m's answer, @capacity its links' capacities: no link carries
 * more than its capacity, and its load is what its flows put on it; each
 * flow is at its cap or crosses a full link on which no flow has more
 * than it (the max-min property). */
static void
check_max_min (const WeftMaxmin *m, const double *capacity, Seen *seen)
{
  g_autofree double *used = g_new0 (double, m->n_links);
  g_autofree double *most = g_new0 (double, m->n_links);
  const double tol = 1e-9;

  for (guint i = 0; i < m->n_flows; i++)
    for (guint h = m->first[i]; h < m->first[i + 1]; h++)
      {
        used[m->hop_link[h]] += m->rate[i] * m->hop_share[h];
        most[m->hop_link[h]] = MAX (most[m->hop_link[h]], m->rate[i]);
      }
  for (guint l = 0; l < m->n_links; l++)
    {
      ck_assert_msg (used[l] <= capacity[l] * (1 + tol),
                     "link %u carries %.17g B/s, more than %.17g", l,
                     used[l], capacity[l]);
      ck_assert_msg (fabs (m->links[l].load - used[l]) <= tol * capacity[l],
                     "link %u: load %.17g B/s, its flows %.17g", l,
                     m->links[l].load, used[l]);
    }
  for (guint i = 0; i < m->n_flows; i++)
    {
      gboolean at_cap = m->cap[i] > 0
                        && fabs (m->rate[i] - m->cap[i]) <= tol * m->cap[i];
      gboolean bottleneck = FALSE;
      for (guint h = m->first[i]; h < m->first[i + 1]; h++)
        {
          uint32_t l = m->hop_link[h];
          bottleneck |= used[l] >= capacity[l] * (1 - tol)
                        && m->rate[i] >= most[l] * (1 - tol);
        }
      ck_assert_msg (at_cap || bottleneck,
                     "flow %u at %.17g B/s: below its cap, and no full "
                     "link on its path where it has the most", i,
                     m->rate[i]);
      seen->at_cap += at_cap && !bottleneck;
      seen->on_full_link += bottleneck;
    }
}

/* Link speeds, few so that levels tie. */
static const double speeds[] = { 10e9, 25e9, 40e9, 100e9 };

/* A random problem in @m: @n_links links in clusters of @cluster (all
 * of them one cluster when it is as many), @n_flows flows each over one
 * to five links of one cluster, a sixth of them capped, and unless
 * @tied a third striped in random shares.  With @tied, the links are of
 * a few speeds and the caps of two, so that many links fill at the same
 * level.  The links' capacities go to @capacity. */
static void
random_problem (WeftMaxmin *m, GRand *rand, guint n_links, guint cluster,
                guint n_flows, gboolean tied, double *capacity)
{
  weft_maxmin_reset (m);
  for (guint l = 0; l < n_links; l++)
    {
      capacity[l] = tied || g_rand_boolean (rand)
                        ? speeds[g_rand_int_range (rand, 0, 4)]
                        : g_rand_double_range (rand, 1e9, 100e9);
      weft_maxmin_add_link (m, capacity[l], 0);
    }
  for (guint i = 0; i < n_flows; i++)
    {
      double cap = g_rand_int_range (rand, 0, 6) != 0 ? 0
                   : tied ? (g_rand_boolean (rand) ? 2e9 : 5e9)
                          : g_rand_double_range (rand, 0.5e9, 20e9);
      gboolean striped = !tied && g_rand_int_range (rand, 0, 3) == 0;
      guint base = g_rand_int_range (rand, 0, n_links / cluster) * cluster;
      guint len = g_rand_int_range (rand, 1, MIN (cluster, 5) + 1);
      guint picked[5];
      weft_maxmin_add_flow (m, cap);
      for (guint k = 0; k < len; k++)
        {
          gboolean again;
          do
            {
              picked[k] = base + g_rand_int_range (rand, 0, cluster);
              again = FALSE;
              for (guint j = 0; j < k; j++)
                again |= picked[j] == picked[k];
            }
          while (again);
          weft_maxmin_add_hop (m, picked[k],
                               striped ? g_rand_double_range (rand, 0.1, 1)
                                       : 1);
        }
    }
}

START_TEST (test_random_against_reference)
{
  /* Random problems, one group of up to 120 links (found by the heap
   * above 64) or clusters of 6 (by looking at each link): the rates are
   * the reference's to within rounding, and max-min fair. */
  g_autoptr (GRand) rand = g_rand_new_with_seed (23);
  g_autoptr (WeftMaxmin) m = weft_maxmin_new ();
  Seen seen = { 0 };
  guint levels = 0;

  for (guint round = 0; round < 40; round++)
    {
      guint n_links = g_rand_int_range (rand, 2, 121);
      guint cluster = round % 2 ? MIN (6, n_links) : n_links;
      guint n_flows = g_rand_int_range (rand, 1, 100);
      g_autofree double *capacity = g_new (double, n_links);
      random_problem (m, rand, n_links, cluster, n_flows, round % 4 >= 2,
                      capacity);
      g_autofree double *want = g_new (double, n_flows);
      reference (m, want);
      weft_maxmin_solve (m);
      for (guint i = 0; i < n_flows; i++)
        ck_assert_msg (fabs (m->rate[i] - want[i]) <= 1e-9 * want[i],
                       "problem %u, flow %u: %.17g B/s, the reference "
                       "%.17g", round, i, m->rate[i], want[i]);
      check_max_min (m, capacity, &seen);
      if (n_links > 64)
        seen.heap_problems++;
      else
        seen.scan_problems++;
      for (guint i = 0; i < n_flows; i++)
        {
          gboolean again = FALSE;
          for (guint j = 0; j < i; j++)
            again |= m->rate[j] == m->rate[i];
          levels += !again;
        }
    }
  /* The problems tried both ways of finding events, and both ways of
   * freezing, at many levels. */
  ck_assert_uint_ge (seen.heap_problems, 10);
  ck_assert_uint_ge (seen.scan_problems, 10);
  ck_assert_uint_ge (seen.at_cap, 50);
  ck_assert_uint_ge (seen.on_full_link, 1000);
  ck_assert_uint_ge (levels, 400);
}
END_TEST

/* Copy into @part the flows of @m whose group (in @group, by flow) is
 * @g, with their links (of @capacity), each keeping its relative order;
 * @link_of maps @m's links to @part's (scratch). */
static void
sub_problem (const WeftMaxmin *m, const double *capacity,
             const uint32_t *group, uint32_t g, WeftMaxmin *part,
             uint32_t *link_of)
{
  weft_maxmin_reset (part);
  for (guint l = 0; l < m->n_links; l++)
    link_of[l] = G_MAXUINT32;
  for (guint i = 0; i < m->n_flows; i++)
    for (guint h = m->first[i]; group[i] == g && h < m->first[i + 1]; h++)
      link_of[m->hop_link[h]] = 0;
  for (guint l = 0; l < m->n_links; l++)
    if (link_of[l] == 0)
      link_of[l] = weft_maxmin_add_link (part, capacity[l], 0);
  for (guint i = 0; i < m->n_flows; i++)
    if (group[i] == g)
      {
        weft_maxmin_add_flow (part, m->cap[i]);
        for (guint h = m->first[i]; h < m->first[i + 1]; h++)
          weft_maxmin_add_hop (part, link_of[m->hop_link[h]],
                               m->hop_share[h]);
      }
}

START_TEST (test_split_into_groups)
{
  /* Flows that share no link can be solved apart: each group of flows
   * joined by links, solved as a problem of its own (of a few links, by
   * looking at each), gives the rates and loads of the whole (of more
   * than 64 links, by the heap) to the last bit.  The flow model fills
   * groups apart, on several threads, and relies on it. */
  g_autoptr (GRand) rand = g_rand_new_with_seed (5);
  g_autoptr (WeftMaxmin) m = weft_maxmin_new ();
  g_autoptr (WeftMaxmin) part = weft_maxmin_new ();
  enum { LINKS = 240, CLUSTER = 8, FLOWS = 200 };
  double capacity[LINKS];
  uint32_t link_of[LINKS], group[FLOWS], parent[FLOWS], first_on[LINKS];
  guint groups = 0, largest = 0;

  for (guint round = 0; round < 10; round++)
    {
      random_problem (m, rand, LINKS, CLUSTER, FLOWS, round % 2, capacity);
      /* Groups: flows joined through their links. */
      for (guint l = 0; l < LINKS; l++)
        first_on[l] = G_MAXUINT32;
      for (guint i = 0; i < FLOWS; i++)
        {
          parent[i] = i;
          for (guint h = m->first[i]; h < m->first[i + 1]; h++)
            {
              uint32_t l = m->hop_link[h];
              if (first_on[l] == G_MAXUINT32)
                first_on[l] = i;
              else
                weft_union (parent, i, first_on[l]);
            }
        }
      for (guint i = 0; i < FLOWS; i++)
        group[i] = weft_find_root (parent, i);

      weft_maxmin_solve (m);
      for (guint g = 0; g < FLOWS; g++)
        {
          if (group[g] != g)
            continue;
          sub_problem (m, capacity, group, g, part, link_of);
          weft_maxmin_solve (part);
          groups++;
          largest = MAX (largest, part->n_flows);
          for (guint i = 0, k = 0; i < FLOWS; i++)
            if (group[i] == g)
              {
                ck_assert_msg (part->rate[k] == m->rate[i],
                               "flow %u: %.17g B/s alone, %.17g in all",
                               i, part->rate[k], m->rate[i]);
                k++;
              }
          for (guint l = 0; l < LINKS; l++)
            if (link_of[l] != G_MAXUINT32)
              ck_assert_msg (part->links[link_of[l]].load
                             == m->links[l].load,
                             "link %u: load %.17g B/s alone, %.17g in all",
                             l, part->links[link_of[l]].load,
                             m->links[l].load);
        }
    }
  /* Many groups, some of several flows. */
  ck_assert_uint_ge (groups, 200);
  ck_assert_uint_ge (largest, 8);
}
END_TEST

static Suite *
maxmin_suite (void)
{
  Suite *s = suite_create ("maxmin");
  TCase *tc;

  tc = tcase_create ("closed forms");
  tcase_add_test (tc, test_one_link_shared);
  tcase_add_test (tc, test_cap_frees_the_rest);
  tcase_add_test (tc, test_two_links);
  tcase_add_test (tc, test_parking_lot);
  tcase_add_test (tc, test_own_links_give_the_bottleneck);
  tcase_add_test (tc, test_shares_of_a_striped_flow);
  tcase_add_test (tc, test_held_rates);
  suite_add_tcase (s, tc);

  tc = tcase_create ("random problems");
  tcase_add_test (tc, test_random_against_reference);
  tcase_add_test (tc, test_split_into_groups);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  SRunner *runner = srunner_create (maxmin_suite ());

  srunner_run_all (runner, CK_NORMAL);
  int failed = srunner_ntests_failed (runner);
  srunner_free (runner);
  return failed == 0 ? 0 : 1;
}
