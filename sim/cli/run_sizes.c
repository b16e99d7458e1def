/* weft: a collective simulated at a list of sizes, recorded in the
 * results database: the planning, simulating and recording that `weft
 * run` and `weft compare` share, each stage in functions of its own. */
#include "run_sizes.h"
#include "cli.h"
#include "db.h"
#include "collectives/algorithm.h"
#include "collectives/nccl_model.h"
#include "topology/names.h"
#include "topology/routing.h"
#include "memory.h"
#include "units.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* See run_sizes.h. */
GArray *
weft_sizes_select_ranks (const WeftTopology *topo, const char *selector,
                         GError **error)
{
  g_autoptr (GArray) gpus = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);

  if (selector == NULL)
    {
      for (uint32_t n = 0; n < topo->n_nodes; n++)
        if (topo->nodes[n].kind == WEFT_NODE_GPU)
          g_array_append_val (gpus, n);
    }
  else if (!weft_names_expand (selector, names, error))
    return NULL;
  g_autoptr (GHashTable) seen = g_hash_table_new (NULL, NULL);
  for (guint i = 0; i < names->len; i++)
    {
      const char *name = g_ptr_array_index (names, i);
      uint32_t id = weft_topology_find_node (topo, name);
      if (id == WEFT_NONE || topo->nodes[id].kind != WEFT_NODE_GPU)
        {
          g_set_error (error, WEFT_TOPOLOGY_ERROR, WEFT_TOPOLOGY_ERROR_NAME, "rank selector '%s' "
                       "names '%s', which is %s", selector, name,
                       id == WEFT_NONE ? "no node of the scenario"
                                       : "not a GPU");
          return NULL;
        }
      if (!g_hash_table_add (seen, GUINT_TO_POINTER (id + 1)))
        {
          g_set_error (error, WEFT_TOPOLOGY_ERROR, WEFT_TOPOLOGY_ERROR_NAME, "rank selector '%s' "
                       "names '%s' twice: a GPU is one rank", selector, name);
          return NULL;
        }
      g_array_append_val (gpus, id);
    }
  if (gpus->len < 2)
    {
      g_set_error (error, WEFT_TOPOLOGY_ERROR, WEFT_TOPOLOGY_ERROR_NAME, "a collective needs two "
                   "GPUs or more, and %s %s", selector ? "the rank selector"
                                                       : "the scenario",
                   gpus->len == 0 ? "has none"
                                  : "has one");
      return NULL;
    }
  return g_steal_pointer (&gpus);
}

/* Set by SIGINT or SIGTERM: the run ends cleanly at the next check.  The
 * one global of the command, as a signal handler has nowhere else to
 * write; the simulations see it through WeftRunOptions.interrupt. */
static volatile int interrupted;

static void
on_signal (int sig)
{
  (void) sig;
  interrupted = 1;
}

void
weft_sizes_catch_signals (void)
{
  struct sigaction sa;

  memset (&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  /* The flag is all a signal does: system calls go on (SQLite takes an
   * fdatasync cut short by a signal for a disk error). */
  sa.sa_flags = SA_RESTART;
  sigemptyset (&sa.sa_mask);
  sigaction (SIGINT, &sa, NULL);
  sigaction (SIGTERM, &sa, NULL);
}

const volatile int *
weft_sizes_interrupt (void)
{
  return &interrupted;
}

/* Free @r's link bins and rank spans; clearing twice is harmless. */
static void
result_clear (WeftCollectiveResult *r)
{
  weft_link_stats_free (r->stats);
  g_free (r->spans);
  r->stats = NULL;
  r->spans = NULL;
}

static void
row_clear (WeftSizesRow *row)
{
  result_clear (&row->result);
}

/* The database gets at most about this many link_util rows from a run by
 * default: a large fabric gets wider bins, not a database of gigabytes. */
#define BIN_ROW_BUDGET 2000000
/* Bins start this wide, and double as the budget needs. */
#define FIRST_BIN_WIDTH ((WeftTime) 1000000)      /* 1 us */
/* A bin held in memory: an index and a count, in lists that grow by
 * doubling. */
#define BIN_BYTES (2 * (sizeof (uint32_t) + sizeof (double)))
/* With --bin, the bins held at most (768 MiB), as many rows in the
 * database. */
#define BIN_ASKED_BUDGET ((uint64_t) 32000000)

/* The common bin width of @rows: @width (--bin's, else FIRST_BIN_WIDTH
 * and by default a thousandth of the run at least), doubled until it is as
 * wide as the widest any operation needed within its share of the budget,
 * theirs being @width's doublings too. */
static WeftTime
common_bin_width (const GArray *rows, WeftTime width, gboolean asked)
{
  WeftTime total = 0, need = 0;

  for (guint i = 0; i < rows->len; i++)
    {
      const WeftSizesRow *row = &g_array_index (rows, WeftSizesRow, i);
      total += row->result.time;
      need = MAX (need, row->result.stats->bin_width);
    }
  if (!asked)
    need = MAX (need, total / 1000);
  while (width < need)
    width *= 2;
  return width;
}

/* What every candidate of a size runs. */
typedef struct {
  WeftCollectiveCall call;      /* its size set for each size */
  WeftScheduleFile *file;       /* or NULL: built-in algorithms */
  WeftPlans *plans;             /* built-in: the size's schedules, or NULL */
  atomic_int *current;          /* or NULL: the pair last taken up, for
                                   the progress line */
} Candidates;

/* Simulate candidate @pair (an algorithm and protocol) of @data, a
 * Candidates, at its size: from the size's shared schedules when there
 * are some, else planned here, or built from the schedule file.  FALSE
 * with @error if it cannot run; a WeftCandidateFn. */
static gboolean
run_candidate (int pair, const WeftRunOptions *options,
               WeftCollectiveResult *result, GError **error, void *data)
{
  const Candidates *c = data;
  int a = pair / WEFT_PROTOCOL_COUNT, pr = pair % WEFT_PROTOCOL_COUNT;

  if (c->current != NULL)
    atomic_store (c->current, pair);
  if (c->file == NULL && c->plans != NULL)
    return weft_plans_run (c->plans, a, pr, options, result, error);
  if (c->file == NULL)
    return weft_collective_run (c->call.topo, c->call.gpus, c->call.n,
                                c->call.op, a, pr, c->call.size,
                                c->call.params, options, result, error);
  g_autoptr (WeftSchedule) sched = weft_schedule_file_build (c->file,
                                                             c->call.size,
                                                             error);
  if (sched == NULL)
    return FALSE;
  weft_schedule_run (c->call.topo, c->call.gpus, sched, c->call.op,
                     weft_protocol_get (pr, WEFT_ALG_RING), options, result);
  return weft_collective_result_ok (result, error);
}

/* A sweep with one candidate a size (one algorithm and protocol): the
 * sizes are independent runs, simulated `jobs` at once; the caller takes
 * their results in order of size as they come. */
typedef struct {
  Candidates cands;             /* size set per row */
  const int *pairs;             /* per size */
  WeftRunOptions options;
  const uint64_t *sizes;
  int n;
  WeftChoice *rows;             /* per size, once done[] */
  gboolean *done;
  atomic_int next;
  GMutex lock;
  GCond cond;
  GThread *threads[64];
  int n_threads;
} SizePool;

/* A thread of the pool: simulate the next size nobody has taken until
 * none is left, skipping the runs once the interrupt flag is set, and
 * wake the caller as each is done. */
static gpointer
pool_worker (gpointer data)
{
  SizePool *p = data;

  for (int k; (k = atomic_fetch_add (&p->next, 1)) < p->n;)
    {
      WeftChoice *row = &p->rows[k];
      Candidates c = p->cands;
      *row = (WeftChoice) { .pair = p->pairs[k], .failed = -1 };
      c.call.size = p->sizes[k];
      if (p->options.interrupt != NULL && *p->options.interrupt)
        row->interrupted = TRUE;
      else if (!run_candidate (p->pairs[k], &p->options, &row->result,
                               &row->error, &c))
        row->failed = p->pairs[k];
      else
        row->interrupted = row->result.interrupted;
      g_mutex_lock (&p->lock);
      p->done[k] = TRUE;
      g_cond_broadcast (&p->cond);
      g_mutex_unlock (&p->lock);
    }
  return NULL;
}

/* Start @jobs threads (at most one a size) simulating @pairs[k] of @cands
 * at each of the @n @sizes[k], with @options; @pairs and @sizes must
 * outlive the pool.  pool_free() waits for them. */
static SizePool *
pool_start (const Candidates *cands, const int *pairs,
            const WeftRunOptions *options, const uint64_t *sizes, int n,
            int jobs)
{
  SizePool *p = g_new0 (SizePool, 1);

  p->cands = *cands;
  p->pairs = pairs;
  p->options = *options;
  p->sizes = sizes;
  p->n = n;
  p->rows = g_new0 (WeftChoice, MAX (n, 1));
  p->done = g_new0 (gboolean, MAX (n, 1));
  atomic_init (&p->next, 0);
  g_mutex_init (&p->lock);
  g_cond_init (&p->cond);
  p->n_threads = CLAMP (MIN (jobs, n), 1, (int) G_N_ELEMENTS (p->threads));
  for (int i = 0; i < p->n_threads; i++)
    p->threads[i] = g_thread_new ("weft-size", pool_worker, p);
  return p;
}

/* WeftSizesRow @k's result, once simulated: the caller's from now on. */
static WeftChoice
pool_take (SizePool *p, int k)
{
  g_mutex_lock (&p->lock);
  while (!p->done[k])
    g_cond_wait (&p->cond, &p->lock);
  g_mutex_unlock (&p->lock);
  WeftChoice row = p->rows[k];
  p->rows[k] = (WeftChoice) { .pair = -1, .failed = -1 };
  return row;
}

/* Wait for the workers and free what was not taken.  The run leaves
 * rows untaken only once the interrupt flag is set (Ctrl-C, or a row that
 * failed), so the workers stop soon. */
static void
pool_free (SizePool *p)
{
  if (p == NULL)
    return;
  for (int i = 0; i < p->n_threads; i++)
    g_thread_join (p->threads[i]);
  for (int k = 0; k < p->n; k++)
    weft_choice_clear (&p->rows[k]);
  g_mutex_clear (&p->lock);
  g_cond_clear (&p->cond);
  g_free (p->rows);
  g_free (p->done);
  g_free (p);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC (SizePool, pool_free)

void
weft_sizes_plan_clear (WeftSizesPlan *plan)
{
  g_clear_pointer (&plan->gpus, g_array_unref);
  g_clear_pointer (&plan->sizes, g_free);
  g_clear_pointer (&plan->pick, g_free);
  g_clear_pointer (&plan->estimate, g_free);
  g_clear_pointer (&plan->hint, g_free);
}

/* nccl-tests allocates a send and a receive buffer on every GPU: refuse a
 * largest size that some rank's memory cannot hold twice. */
static int
check_memory (const WeftRunArgs *args, const WeftSizesPlan *plan)
{
  const WeftTopology *topo = args->scenario->topo;
  uint64_t largest = 0;

  for (int i = 0; i < plan->n_sizes; i++)
    largest = MAX (largest, plan->sizes[i]);
  for (uint32_t r = 0; r < plan->n; r++)
    {
      const WeftNode *node = &topo->nodes[g_array_index (plan->gpus,
                                                         uint32_t, r)];
      const WeftDevice *d = node->device;
      if (d->memory > 0 && largest > d->memory / 2)
        {
          g_autofree char *have = weft_format_size (d->memory);
          g_autofree char *want = weft_format_size (largest);
          return weft_cli_usage (args->name, "a size of %s does not fit the "
                                 "GPUs' memory: %s (%s) has %s for a send "
                                 "and a receive buffer of that size", want,
                                 d->name, node->name, have);
        }
    }
  return WEFT_EXIT_OK;
}

/* A schedule file runs as it is written: for its number of ranks (a
 * program for any number is expanded for the run's, and checked, here),
 * and built once at the first size to find what it cannot do before
 * anything is recorded. */
static int
check_schedule_file (const WeftRunArgs *args, WeftSizesPlan *plan)
{
  g_autoptr (GError) error = NULL;
  uint32_t ranks = plan->n;

  if (!weft_schedule_file_parametric (args->file)
      && weft_schedule_file_ranks (args->file) != ranks)
    return weft_cli_usage (args->name, "%s is written for %u ranks and the "
                           "run has %u (choose GPUs with --ranks)",
                           args->alg_name,
                           weft_schedule_file_ranks (args->file), ranks);
  if (weft_schedule_file_parametric (args->file)
      && (!weft_schedule_file_expand (args->file, ranks, &error)
          || (!args->unchecked_data
              && !weft_schedule_file_verify (args->file, &error))))
    {
      fprintf (stderr, "%s\n", error->message);
      return WEFT_EXIT_USAGE;
    }
  g_autoptr (WeftSchedule) trial = weft_schedule_file_build (args->file,
                                                             plan->sizes[0],
                                                             &error);
  if (trial == NULL)
    return weft_cli_usage (args->name, "%s", error->message);
  uint64_t optimal = weft_op_bytes (args->op, ranks, plan->sizes[0]);
  plan->file_moves = optimal ? (double) weft_schedule_bytes_sent (trial)
                                   / (double) optimal
                             : 1;
  return WEFT_EXIT_OK;
}

/* Whether no two of @plan's GPUs share a server (as NCCL counts nodes). */
static gboolean
one_per_server (const WeftRunArgs *args, const WeftSizesPlan *plan)
{
  g_autofree uint32_t *server = weft_fit_servers (
      args->scenario->topo, (const uint32_t *) plan->gpus->data, plan->n);
  g_autoptr (GHashTable) seen = g_hash_table_new (NULL, NULL);

  for (uint32_t r = 0; r < plan->n; r++)
    if (!g_hash_table_add (seen, GUINT_TO_POINTER (server[r])))
      return FALSE;
  return TRUE;
}

/* Whether @op is point-to-point in NCCL (sends and receives, no
 * collective kernel). */
static gboolean
point_to_point (WeftOp op)
{
  return op == WEFT_OP_ALL_TO_ALL || op == WEFT_OP_SEND_RECV;
}

/* Whether the options ask for algorithm @a with protocol @pr: auto asks
 * for every algorithm NCCL would choose among that can run the op, where
 * NCCL would consider it, and the protocols NCCL would run it with (its
 * point-to-point never runs LL128). */
static gboolean
asked_for (const WeftRunArgs *args, const WeftSizesPlan *plan, int a, int pr)
{
  if (args->auto_alg ? !weft_algorithm_supports (a, args->op)
                           || !weft_algorithm_in_auto (a)
                           || (weft_algorithm_get (a)->auto_one_per_server
                               && !one_per_server (args, plan))
                     : a != (int) args->alg)
    return FALSE;
  return args->auto_proto ? weft_protocol_in_auto (pr)
                                && !(point_to_point (args->op)
                                     && pr == WEFT_PROTOCOL_LL128)
                          : pr == (int) args->proto;
}

/* Which (algorithm, protocol) pairs can run here, into plan->fits and
 * plan->candidates: refuse before writing anything if none can, with why
 * the last one tried cannot. */
static int
find_candidates (const WeftRunArgs *args, WeftSizesPlan *plan)
{
  g_autoptr (GError) why = NULL;
  gboolean any = FALSE;
  int status;

  if (args->file != NULL
      && (status = check_schedule_file (args, plan)) != WEFT_EXIT_OK)
    return status;
  for (int a = 0; a < WEFT_ALG_COUNT && args->file == NULL; a++)
    for (int pr = 0; pr < WEFT_PROTOCOL_COUNT; pr++)
      {
        if (!asked_for (args, plan, a, pr))
          continue;
        g_clear_error (&why);
        plan->fits[a][pr] = weft_collective_fits (args->scenario->topo,
                                                  (uint32_t *) plan->gpus->data,
                                                  plan->n, args->op, a, pr,
                                                  &why);
        any = any || plan->fits[a][pr];
      }
  for (int pr = 0; pr < WEFT_PROTOCOL_COUNT && args->file != NULL; pr++)
    {
      plan->fits[WEFT_ALG_RING][pr] = args->auto_proto
                                          ? weft_protocol_in_auto (pr)
                                          : pr == (int) args->proto;
      any = any || plan->fits[WEFT_ALG_RING][pr];
    }
  if (!any)
    return weft_cli_usage (args->name, "%s", why ? why->message
                                            : "no algorithm can run this");
  for (int a = 0; a < WEFT_ALG_COUNT; a++)
    for (int pr = 0; pr < WEFT_PROTOCOL_COUNT; pr++)
      plan->candidates += plan->fits[a][pr];
  return WEFT_EXIT_OK;
}

/* NCCL's estimate of every candidate of every size that NCCL has, into
 * plan->estimate (below 0 for the others: a schedule file, weft's own
 * algorithms, point-to-point operations), and NCCL's pick of each size
 * into @pick[i] (-1 if it has none). */
static void
estimate_sizes (const WeftRunArgs *args, WeftSizesPlan *plan, int *pick)
{
  WeftNcclSystem sys;
  WeftNcclModel model;

  plan->estimate = g_new (double, (size_t) plan->n_sizes * WEFT_PAIRS);
  plan->hint = g_new (double, (size_t) plan->n_sizes * WEFT_PAIRS);
  for (size_t k = 0; k < (size_t) plan->n_sizes * WEFT_PAIRS; k++)
    plan->estimate[k] = plan->hint[k] = -1;
  for (int i = 0; i < plan->n_sizes; i++)
    pick[i] = -1;
  if (args->file != NULL)
    return;
  weft_nccl_system_from_topology (&sys, args->scenario->topo,
                                  (uint32_t *) plan->gpus->data, plan->n);
  weft_nccl_model_tune (&model, &sys, args->op);
  if (point_to_point (args->op))
    {
      /* No model: NCCL launches a group's sends and receives together
       * (all_to_all's every peer at once: direct), each with the
       * protocol its size to one peer takes. */
      int a = args->op == WEFT_OP_ALL_TO_ALL ? WEFT_ALG_DIRECT
                                             : WEFT_ALG_RING;
      for (int i = 0; i < plan->n_sizes; i++)
        {
          uint64_t to_peer = args->op == WEFT_OP_ALL_TO_ALL
                                 ? plan->sizes[i] / plan->n
                                 : plan->sizes[i];
          int p = weft_nccl_p2p_protocol (&sys, to_peer);
          if (plan->fits[a][p])
            pick[i] = a * WEFT_PROTOCOL_COUNT + p;
        }
      return;
    }
  for (int i = 0; i < plan->n_sizes; i++)
    {
      double *estimate = plan->estimate + (size_t) i * WEFT_PAIRS;
      pick[i] = weft_nccl_model_pick (&model,
                                      (const gboolean (*)[WEFT_PROTOCOL_COUNT])
                                          plan->fits,
                                      plan->sizes[i], estimate);
      /* weft's own algorithms, for the order they are tried in: what
       * NCCL's ring or tree would take with their protocol, the better,
       * as their steps go round or up and down as those do. */
      for (int pair = 0; pair < WEFT_PAIRS; pair++)
        {
          int a = pair / WEFT_PROTOCOL_COUNT, p = pair % WEFT_PROTOCOL_COUNT;
          double *hint = &plan->hint[(size_t) i * WEFT_PAIRS + pair];
          *hint = estimate[pair];
          if (*hint >= 0 || p >= WEFT_PROTOCOL_RAW || !plan->fits[a][p])
            continue;
          double ring = weft_nccl_model_time (&model, WEFT_COSTS_RING, p,
                                              plan->sizes[i]);
          double tree = weft_nccl_model_time (&model, WEFT_COSTS_TREE, p,
                                              plan->sizes[i]);
          *hint = ring < 0 ? tree : tree < 0 ? ring : MIN (ring, tree);
        }
    }
}

/* The candidate of size @i with the least hint, if every candidate has
 * one (weft's own algorithms: NCCL's estimate of its ring or tree with
 * the same protocol), else -1. */
static int
least_hint (const WeftSizesPlan *plan, int i)
{
  const double *hint = plan->hint + (size_t) i * WEFT_PAIRS;
  int best = -1;

  for (int pair = 0; pair < WEFT_PAIRS; pair++)
    {
      if (!plan->fits[pair / WEFT_PROTOCOL_COUNT][pair % WEFT_PROTOCOL_COUNT])
        continue;
      if (hint[pair] < 0)
        return -1;
      if (best < 0 || hint[pair] < hint[best])
        best = pair;
    }
  return best;
}

/* Which one candidate each size simulates, into plan->pick: the only one
 * there is, or with --select nccl NCCL's pick; -1 where each candidate is
 * simulated and the fastest kept (--select fastest, or NCCL has an
 * estimate of none of them).  NCCL picks a protocol for an algorithm of
 * weft's own as its model would for the ring or tree whose steps it
 * takes: NCCL runs no algorithm without an estimate of its time. */
static void
pick_sizes (const WeftRunArgs *args, WeftSizesPlan *plan)
{
  g_autofree int *nccl = g_new (int, plan->n_sizes);
  int only = -1;

  estimate_sizes (args, plan, nccl);
  for (int pair = 0; pair < WEFT_PAIRS && plan->candidates == 1; pair++)
    if (plan->fits[pair / WEFT_PROTOCOL_COUNT][pair % WEFT_PROTOCOL_COUNT])
      only = pair;
  plan->pick = g_new (int, plan->n_sizes);
  for (int i = 0; i < plan->n_sizes; i++)
    {
      plan->pick[i] = only;
      if (only < 0 && args->select == WEFT_SELECT_NCCL)
        plan->pick[i] = nccl[i] >= 0 ? nccl[i] : least_hint (plan, i);
    }
}

/* What one schedule's simulations at once take, and in what. */
typedef struct {
  size_t total, schedules, networks, transfers;
} Need;

static gint
by_size_down (gconstpointer a, gconstpointer b)
{
  size_t x = ((const Need *) a)->total, y = ((const Need *) b)->total;

  return x < y ? 1 : x > y ? -1 : 0;
}

/* What the run will take at most, into plan->memory: what the process
 * holds now (the scenario), the link statistics, and the simulations that
 * may run
 * at once (--jobs of them: auto's candidates of a size, or the sizes, of
 * the picked candidate alone where a size has one),
 * the largest each: its schedule and the executor's image of it, made
 * while the schedule is held, and a run's own state of the steps for
 * each protocol it is run with.  The schedules are counted, not made. */
static int
estimate_memory (const WeftRunArgs *args, WeftSizesPlan *plan)
{
  g_autoptr (GArray) each = g_array_new (FALSE, FALSE, sizeof (Need));
  const uint32_t *gpus = (const uint32_t *) plan->gpus->data;
  const WeftTopology *topo = args->scenario->topo;
  /* Each simulation has a network and routes of its own, and with faults
   * that start or end during it routes for each phase of the fabric. */
  size_t per_run = weft_network_bytes (topo, args->fidelity)
                   + weft_routing_bytes_bound (topo)
                       * (1 + (topo->phases ? topo->phases->len : 0));
  size_t per_transfer = weft_network_transfer_bytes (topo, args->fidelity);

  for (int i = 0; i < plan->n_sizes; i++)
    for (int a = 0; a < WEFT_ALG_COUNT && args->file == NULL; a++)
      {
        /* A size that runs one pick runs its algorithm alone. */
        int pick = plan->pick[i], protocols = 0;
        for (int pr = 0; pr < WEFT_PROTOCOL_COUNT; pr++)
          protocols += pick < 0 ? plan->fits[a][pr]
                                : pick == a * WEFT_PROTOCOL_COUNT + pr;
        if (protocols == 0)
          continue;
        WeftFootprint f;
        g_autoptr (GError) error = NULL;
        if (!weft_collective_footprint (args->scenario->topo, gpus, plan->n,
                                        args->op, a, plan->sizes[i],
                                        &plan->params, &f, &error))
          continue;             /* refused when it runs, with why */
        /* The executor's image is kept while its runs go on; each run
         * has a network and routes of its own, its transfers in progress
         * and its steps in progress. */
        size_t moving = f.in_progress * per_transfer;
        size_t at_once = (size_t) MIN (protocols, args->jobs);
        Need need = {
          .schedules = f.schedule + f.image + at_once * f.run,
          .networks = at_once * per_run,
          .transfers = at_once * moving,
        };
        need.total = need.schedules + need.networks + need.transfers;
        g_array_append_val (each, need);
        if (f.steps > plan->largest_steps)
          {
            plan->largest_steps = f.steps;
            plan->largest_alg = a;
            plan->largest_size = plan->sizes[i];
          }
      }
  g_array_sort (each, by_size_down);
  memset (&plan->parts, 0, sizeof plan->parts);
  plan->parts.before = weft_memory_resident ();
  /* The sizes' link statistics, kept until the run is recorded: within
   * the budget of bins. */
  if (args->bin_width == 0)
    plan->parts.bins = (size_t) MAX (BIN_ROW_BUDGET,
                                     10000 * (uint64_t) plan->n_sizes)
                       * BIN_BYTES;
  /* And what is not counted: the heap handed out in huge pages (2 MiB at
   * a time), each thread's stack and arena, SQLite's page cache. */
  plan->parts.uncounted = WEFT_MEMORY_ALLOWANCE
                           + (size_t) args->jobs * WEFT_THREAD_ALLOWANCE;
  for (guint k = 0; k < each->len && k < (guint) args->jobs; k++)
    {
      const Need *need = &g_array_index (each, Need, k);
      plan->parts.schedules += need->schedules;
      plan->parts.networks += need->networks;
      plan->parts.transfers += need->transfers;
    }
  plan->memory = plan->parts.before + plan->parts.bins
                 + plan->parts.uncounted + plan->parts.schedules
                 + plan->parts.networks + plan->parts.transfers;

  size_t limit = args->max_memory;
  if (limit == 0 && weft_memory_available () > 0)
    limit = weft_memory_available () + weft_memory_resident ();
  /* Bins as narrow as --bin asks may be more than memory holds (a
   * picosecond's over a millisecond): they may take half of what the
   * rest leaves, up to BIN_ASKED_BUDGET, and widen, as by default,
   * rather than pass it. */
  if (args->bin_width > 0)
    {
      uint64_t room = limit > plan->memory ? (limit - plan->memory) / 2
                                           : 0;
      plan->bin_budget = limit == 0 ? BIN_ASKED_BUDGET
                                    : MIN (room / BIN_BYTES, BIN_ASKED_BUDGET);
      plan->bin_budget = MAX (plan->bin_budget,
                              10000 * (uint64_t) plan->n_sizes);
      plan->parts.bins = (size_t) plan->bin_budget * BIN_BYTES;
      plan->memory += plan->parts.bins;
    }
  if (limit == 0 || plan->memory <= limit)
    return WEFT_EXIT_OK;
  g_autofree char *at = weft_format_size (plan->largest_size);
  g_autofree char *need = weft_format_memory (plan->memory);
  g_autofree char *have = weft_format_memory (limit);
  return weft_cli_usage (args->name, "this run would take about %s of "
                         "memory, more than the %s %s (the largest "
                         "schedule, %s at %s over %u ranks, has %" G_GUINT64_FORMAT
                         " steps); choose fewer sizes, channels or chunks, "
                         "or another algorithm", need, have,
                         args->max_memory ? "--max-memory allows"
                                          : "this machine has free",
                         weft_algorithm_name (plan->largest_alg), at,
                         plan->n, plan->largest_steps);
}

int
weft_sizes_plan (const WeftRunArgs *args, const uint64_t *sizes, int n,
                 WeftSizesPlan *plan)
{
  g_autoptr (GError) error = NULL;
  int status;

  g_assert (n > 0);
  plan->sizes = g_memdup2 (sizes, n * sizeof *sizes);
  plan->n_sizes = n;
  plan->gpus = weft_sizes_select_ranks (args->scenario->topo, args->ranks,
                                        &error);
  if (plan->gpus == NULL)
    return weft_cli_usage (args->name, "%s", error->message);
  plan->n = plan->gpus->len;
  if ((status = check_memory (args, plan)) != WEFT_EXIT_OK)
    return status;
  plan->params = (WeftCollectiveParams) { args->channels, args->chunks, 0,
                                          NULL, 1, NULL, NULL, 0, FALSE, NULL };
  if ((status = find_candidates (args, plan)) != WEFT_EXIT_OK)
    return status;
  pick_sizes (args, plan);
  return estimate_memory (args, plan);
}

int
weft_sizes_record_begin (const WeftRunArgs *args, WeftRecord *rec)
{
  guint n = args->params ? g_strv_length (args->params) : 0;
  g_autofree char **keys = g_new0 (char *, n + 1);
  g_autofree const char **values = g_new0 (const char *, n + 1);
  WeftRunInfo info = { args->scenario_path, args->scenario->sha256,
                       weft_fidelity_name (args->fidelity), args->seed,
                       args->command };

  for (guint i = 0; i < n; i++)
    {
      const char *eq = strchr (args->params[i], '=');
      keys[i] = eq ? g_strndup (args->params[i], eq - args->params[i])
                   : g_strdup (args->params[i]);
      values[i] = eq ? eq + 1 : "";
    }
  /* Until the run is in the database a signal ends the process, leaving
   * nothing; from here on it marks the run interrupted. */
  weft_sizes_catch_signals ();
  int status = weft_record_begin (rec, args->db_path, &info,
                                  args->scenario->topo,
                                  (const char *const *) keys, values, n,
                                  &interrupted);
  for (guint i = 0; i < n; i++)
    g_free (keys[i]);
  if (status == WEFT_EXIT_OK && interrupted)
    return weft_record_interrupted (rec, 0);
  return status;
}

void
weft_sizes_outcome_clear (WeftSizesOutcome *out)
{
  g_clear_pointer (&out->rows, g_array_unref);
  g_clear_pointer (&out->why, g_free);
}

/* Whether each size simulates one candidate alone. */
static gboolean
all_picked (const WeftSizesPlan *plan)
{
  for (int i = 0; i < plan->n_sizes; i++)
    if (plan->pick[i] < 0)
      return FALSE;
  return TRUE;
}

/* A sweep of sizes under way: what the runs of every size share. */
typedef struct {
  const WeftRunArgs *args;
  const WeftSizesPlan *plan;
  Candidates cands;             /* its size set for each size */
  WeftRunOptions binned;        /* the run that is written, with its bins */
  WeftRunOptions options;       /* the candidates as they are tried */
  int last_winner;              /* the last size's fastest pair, or -1 */
  _Atomic WeftTime clock;       /* a running simulation's, for progress */
  atomic_int current;           /* the candidate last taken up, likewise */
} Sweep;

/* How each size's runs are simulated.  Link bins are kept by the run that
 * is written, each operation within its share of the database's budget:
 * with one candidate that is the only run; with several, they are tried
 * without bins and the fastest is run again with them (bins cost more
 * than a run when there are many).  A run alone shares its work among
 * `jobs` threads; runs at once (the candidates of a size, or sizes) take
 * one each. */
static void
sweep_init (Sweep *s, const WeftRunArgs *args, const WeftSizesPlan *plan)
{
  WeftTime bin = args->bin_width;

  s->args = args;
  s->plan = plan;
  uint64_t budget = bin ? plan->bin_budget : BIN_ROW_BUDGET;
  s->binned = (WeftRunOptions) {
    args->fidelity, args->seed, bin ? bin : FIRST_BIN_WIDTH, &interrupted,
    FALSE, MAX (budget / (uint64_t) plan->n_sizes, 10000), 0, NULL,
    (uint32_t) args->jobs, &s->clock,
  };
  atomic_init (&s->clock, 0);
  s->options = s->binned;
  if (!all_picked (plan))
    {
      s->options.bin_width = s->options.max_bins = 0;
      s->options.threads = 1;
    }
  atomic_init (&s->current, -1);
  s->cands = (Candidates) { { args->scenario->topo,
                              (uint32_t *) plan->gpus->data, plan->n,
                              args->op, 0, &plan->params },
                            args->file, NULL, &s->current };
  s->last_winner = -1;
}

/* With one candidate a size, the sizes are independent runs: start them
 * `jobs` at once, one thread each.  NULL when sizes run one at a time. */
static SizePool *
start_pool (const Sweep *s)
{
  const WeftSizesPlan *plan = s->plan;
  WeftRunOptions one_each = s->binned;

  one_each.threads = 1;
  if (!all_picked (plan) || s->args->jobs <= 1 || plan->n_sizes <= 1)
    return NULL;
  return pool_start (&s->cands, plan->pick, &one_each, plan->sizes,
                     plan->n_sizes, s->args->jobs);
}

/* Simulate size @i's one candidate, @pair, with its bins into @choice. */
static void
run_picked (Sweep *s, int pair, WeftChoice *choice)
{
  *choice = (WeftChoice) { .pair = pair, .failed = -1 };
  if (!run_candidate (pair, &s->binned, &choice->result, &choice->error,
                      &s->cands))
    choice->failed = pair;
  else
    choice->interrupted = choice->result.interrupted;
}

/* NCCL's estimate of a pair, or for weft's own algorithms that of the
 * algorithm whose costs they pay (the plan's hint), for ordering: those
 * without one last. */
static double
estimate_of (const double *estimate, int pair)
{
  return estimate[pair] >= 0 ? estimate[pair] : G_MAXDOUBLE;
}

/* Try the candidates of the current size (size @i), starting with the
 * last size's fastest, which is most often the fastest again and sets the
 * time the others stop at, then by NCCL's estimate (estimate_of()), least first, so that
 * a good time is found early; see weft_collective_choose().  The order
 * changes only how soon the others stop, not the choice.  The first runs
 * with its link bins: when it is chosen, as it mostly is, it need not run
 * again for them. */
static void
choose (Sweep *s, int i, WeftChoice *choice)
{
  int order[WEFT_PAIRS], n_order = 0;
  const double *estimate = s->plan->hint + (size_t) i * WEFT_PAIRS;

  if (s->last_winner >= 0)
    order[n_order++] = s->last_winner;
  int first = n_order;
  for (int pair = 0; pair < WEFT_PAIRS; pair++)
    if (pair != s->last_winner
        && s->plan->fits[pair / WEFT_PROTOCOL_COUNT]
                        [pair % WEFT_PROTOCOL_COUNT])
      {
        /* Insertion, stable: of equal estimates the lower pair first. */
        int k = n_order++;
        while (k > first && estimate_of (estimate, order[k - 1])
                                > estimate_of (estimate, pair))
          {
            order[k] = order[k - 1];
            k--;
          }
        order[k] = pair;
      }
  /* The schedules of the size, each planned once for all its candidates
   * and the fastest's second run. */
  if (s->args->file == NULL)
    s->cands.plans = weft_plans_new (&s->cands.call, order, n_order);
  WeftRunOptions with_bins = s->binned;
  with_bins.threads = n_order > 1 ? 1 : with_bins.threads;
  weft_collective_choose (order, n_order, s->args->jobs, &s->options,
                          &with_bins, run_candidate, &s->cands, choice);
}

/* The fastest of several candidates again, with its bins: the same run,
 * so the same time.  FALSE if an interrupt stopped it. */
static gboolean
rerun_binned (Sweep *s, int pair, WeftCollectiveResult *best,
              WeftSizesOutcome *out)
{
  g_autoptr (GError) error = NULL;
  WeftTime time = best->time;
  gboolean ran = run_candidate (pair, &s->binned, best, &error, &s->cands);

  g_assert (ran);
  out->events += best->events;
  if (best->interrupted)
    {
      result_clear (best);
      out->interrupted = TRUE;
      return FALSE;
    }
  g_assert (best->time == time);
  return TRUE;
}

/* Simulate size @i (taken from @pool when it runs the sizes) into @row.
 * FALSE when the sweep stops there, @out saying why: a size that cannot
 * run (a schedule file that does not fit it is bad input) or an
 * interrupt. */
static gboolean
simulate_size (Sweep *s, SizePool *pool, int i, WeftSizesRow *row,
               WeftSizesOutcome *out)
{
  WeftChoice choice;

  int pick = s->plan->pick[i];

  s->cands.call.size = s->plan->sizes[i];
  if (pool != NULL)
    choice = pool_take (pool, i);
  else if (pick >= 0)
    run_picked (s, pick, &choice);
  else
    choose (s, i, &choice);
  if (pick >= 0)
    {
      choice.n_tried = 1;
      choice.tried[0] = pick;
      choice.time[0] = choice.result.time;
    }
  if (choice.failed >= 0)
    {
      fprintf (stderr, "weft %s: %s\n", s->args->name,
               choice.error->message);
      /* A schedule file's, or the faults' (bad input either way). */
      out->failed = s->args->file != NULL
                            || g_error_matches (choice.error,
                                                WEFT_SCHEDULE_ERROR,
                                                WEFT_SCHEDULE_ERROR_CUT)
                        ? WEFT_EXIT_USAGE
                        : WEFT_EXIT_FAILURE;
      out->why = g_strdup (choice.error->message);
      interrupted = 1;          /* sizes still running beside it stop */
    }
  else if (choice.interrupted)
    out->interrupted = TRUE;
  if (out->failed || out->interrupted)
    {
      weft_choice_clear (&choice);
      g_clear_pointer (&s->cands.plans, weft_plans_free);
      return FALSE;
    }
  g_clear_error (&choice.error);
  WeftCollectiveResult best = choice.result;
  if (pick >= 0)
    out->events += best.events;
  s->last_winner = choice.pair;
  /* The first candidate ran with its bins. */
  gboolean binned = pick < 0 && best.stats != NULL;
  if (binned)
    out->events += best.events;
  gboolean done = pick >= 0 || binned
                  || rerun_binned (s, choice.pair, &best, out);
  g_clear_pointer (&s->cands.plans, weft_plans_free);
  if (!done)
    return FALSE;
  *row = (WeftSizesRow) {
    s->plan->sizes[i], s->args->file ? -1 : choice.pair / WEFT_PROTOCOL_COUNT,
    choice.pair % WEFT_PROTOCOL_COUNT, best, choice.n_tried, { 0 }, { 0 },
    s->plan->estimate + (size_t) i * WEFT_PAIRS,
    s->plan->hint + (size_t) i * WEFT_PAIRS,
  };
  memcpy (row->tried, choice.tried, sizeof row->tried);
  memcpy (row->time, choice.time, sizeof row->time);
  return TRUE;
}

/* A line on the terminal that says how far a long run has come, drawn by
 * a thread of its own from a second into the run. */
typedef struct {
  const char *command;          /* "run", for its messages */
  const WeftSizesPlan *plan;
  const _Atomic WeftTime *clock;
  const atomic_int *current;    /* the candidate under way, or -1 */
  gboolean file;                /* candidates of a schedule file */
  atomic_int size;              /* the size under way */
  gboolean stop;
  gboolean shown;               /* a line is on the terminal */
  GMutex lock;
  GCond cond;
  GThread *thread;
} Ticker;

static gpointer
tick (gpointer data)
{
  Ticker *t = data;
  gint64 start = g_get_monotonic_time ();

  g_mutex_lock (&t->lock);
  while (!t->stop)
    {
      g_cond_wait_until (&t->cond, &t->lock,
                         g_get_monotonic_time () + G_USEC_PER_SEC / 4);
      gint64 now = g_get_monotonic_time ();
      if (t->stop || now - start < G_USEC_PER_SEC)
        continue;
      int i = MIN (atomic_load (&t->size), t->plan->n_sizes - 1);
      int pair = atomic_load (t->current);
      g_autofree char *size = weft_format_size (t->plan->sizes[i]);
      g_autofree char *who = pair < 0 ? g_strdup ("")
                             : g_strdup_printf (
                                 "%s/%s, ",
                                 t->file ? "file"
                                         : weft_algorithm_name (
                                             pair / WEFT_PROTOCOL_COUNT),
                                 weft_protocol_name (
                                     pair % WEFT_PROTOCOL_COUNT));
      fprintf (stderr, "\rweft %s: size %d of %d (%s), %ssimulated %.1f us, "
               "%.0f s  ", t->command, i + 1, t->plan->n_sizes, size, who,
               atomic_load_explicit (t->clock, memory_order_relaxed) / 1e6,
               (now - start) / 1e6);
      t->shown = TRUE;
    }
  if (t->shown)
    fprintf (stderr, "\r%100s\r", "");
  g_mutex_unlock (&t->lock);
  return NULL;
}

/* Start a ticker of `weft @command` over @plan's sizes on a terminal;
 * NULL elsewhere. */
static Ticker *
ticker_start (const char *command, const WeftSizesPlan *plan,
              const Sweep *s)
{
  if (!isatty (STDERR_FILENO))
    return NULL;
  Ticker *t = g_new0 (Ticker, 1);
  t->command = command;
  t->plan = plan;
  t->clock = &s->clock;
  t->current = &s->current;
  t->file = s->args->file != NULL;
  atomic_init (&t->size, 0);
  g_mutex_init (&t->lock);
  g_cond_init (&t->cond);
  t->thread = g_thread_new ("weft-progress", tick, t);
  return t;
}

/* Stop @t, clearing its line. */
static void
ticker_free (Ticker *t)
{
  if (t == NULL)
    return;
  g_mutex_lock (&t->lock);
  t->stop = TRUE;
  g_cond_signal (&t->cond);
  g_mutex_unlock (&t->lock);
  g_thread_join (t->thread);
  g_mutex_clear (&t->lock);
  g_cond_clear (&t->cond);
  g_free (t);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC (Ticker, ticker_free)

void
weft_sizes_run (const WeftRunArgs *args, const WeftSizesPlan *plan,
                WeftSizesRowFn on_row, void *data, WeftSizesOutcome *out)
{
  Sweep s;

  weft_sizes_catch_signals ();
  out->rows = g_array_new (FALSE, FALSE, sizeof (WeftSizesRow));
  g_array_set_clear_func (out->rows, (GDestroyNotify) row_clear);
  sweep_init (&s, args, plan);
  g_autoptr (SizePool) pool = start_pool (&s);
  g_autoptr (Ticker) ticker = ticker_start (args->name, plan, &s);
  for (int i = 0; i < plan->n_sizes; i++)
    {
      WeftSizesRow row;
      if (ticker)
        atomic_store (&ticker->size, i);
      if (!simulate_size (&s, pool, i, &row, out))
        return;
      /* The row and the ticker's line on one terminal: clear it first. */
      if (ticker && ticker->shown)
        fprintf (stderr, "\r%100s\r", "");
      if (on_row)
        on_row (&row, data);
      g_array_append_val (out->rows, row);
    }
}

/* Record the operations one after another on the run's clock, with the
 * link bytes of each in bins of one width, freeing each row's bins once
 * they are written.  Returns WEFT_EXIT_OK, or the run's exit status once
 * it is marked interrupted or failed. */
static int
record_ops (const WeftRunArgs *args, const WeftSizesPlan *plan,
            WeftSizesOutcome *out, const WeftRecord *rec)
{
  g_autoptr (GError) error = NULL;
  WeftTime width = common_bin_width (out->rows, args->bin_width
                                                    ? args->bin_width
                                                    : FIRST_BIN_WIDTH,
                                     args->bin_width > 0);
  if (args->bin_width > 0 && width > args->bin_width)
    {
      g_autofree char *asked = weft_format_time (args->bin_width);
      g_autofree char *got = weft_format_time (width);
      fprintf (stderr, "weft %s: bins of %s would be more than the %"
               G_GUINT64_FORMAT " link bins a run keeps; the link "
               "statistics are in bins of %s\n", args->name, asked,
               plan->bin_budget, got);
    }
  WeftTime clock = 0;
  WeftOp op = args->op;
  /* A schedule file's rows name it, so that runs of several files tell
   * apart in reports and plots. */
  g_autofree char *file = args->file ? g_path_get_basename (args->alg_name)
                                     : NULL;

  for (guint i = 0; i < out->rows->len; i++)
    {
      WeftSizesRow *row = &g_array_index (out->rows, WeftSizesRow, i);
      const WeftCollectiveResult *result = &row->result;
      if (interrupted)
        return weft_record_interrupted (rec, out->events);
      weft_link_stats_widen (result->stats, width);
      double algbw = row->size / (result->time * 1e-12) / 1e9;
      WeftOpRow op_row = {
        weft_op_name (op),
        file ? file : weft_algorithm_name (row->alg),
        weft_protocol_name (row->proto), row->size, plan->n, clock,
        clock + result->time, algbw, algbw * weft_op_bus_factor (op, plan->n),
      };
      gboolean written = weft_db_write_op (rec->db, rec->id, i, &op_row,
                                           result->stats, result->spans,
                                           (uint32_t *) plan->gpus->data,
                                           result->n_spans, &error);
      clock += result->time;
      row_clear (row);
      if (!written && g_error_matches (error, WEFT_DB_ERROR,
                                       WEFT_DB_ERROR_INTERRUPTED))
        return weft_record_interrupted (rec, out->events);
      if (!written)
        {
          fprintf (stderr, "weft %s: %s\n", args->name, error->message);
          weft_record_end (rec, "failed", out->events, error->message);
          return WEFT_EXIT_FAILURE;
        }
    }
  return WEFT_EXIT_OK;
}

int
weft_sizes_record_end (const WeftRunArgs *args, const WeftSizesPlan *plan,
                       WeftSizesOutcome *out, const WeftRecord *rec)
{
  g_autoptr (GError) error = NULL;
  int status;

  if (out->failed)
    {
      weft_record_end (rec, "failed", out->events, out->why);
      return out->failed;
    }
  if (out->interrupted)
    return weft_record_interrupted (rec, out->events);
  if ((status = record_ops (args, plan, out, rec)) != WEFT_EXIT_OK)
    return status;
  if (!weft_db_end_run (rec->db, rec->id, "complete",
                        (g_get_monotonic_time () - rec->wall_start) / 1e6,
                        out->events, &error))
    {
      fprintf (stderr, "weft %s: %s\n", args->name, error->message);
      return WEFT_EXIT_FAILURE;
    }
  return WEFT_EXIT_OK;
}

