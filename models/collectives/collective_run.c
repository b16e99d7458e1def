/* weft: running one collective on a topology and timing it, and choosing
 * the fastest of several. */
#include "collectives/collective_run.h"

#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "collectives/algorithm.h"
#include "collectives/nccl_model.h"

static void
finished (WeftSim *sim, void *target, void *data)
{
  (void) data;
  *(WeftTime *) target = weft_sim_now (sim);
  weft_sim_stop (sim);
}

int
weft_protocol_engine_row (const WeftProtocol *costs, WeftOp op,
                          const WeftTopology *topo, const uint32_t *nodes,
                          uint32_t n)
{
  /* NCCL's bound is on its rings and trees; sends and receives (all_to_all
   * and send_recv are made of them) have a model of their own. */
  if (!costs->ll || n == 0 || op == WEFT_OP_SEND_RECV
      || op == WEFT_OP_ALL_TO_ALL)
    return -1;
  g_autofree double *network = g_new (double, n);
  g_autofree uint32_t *server = weft_fit_servers_network (topo, nodes, n,
                                                          network);
  g_autoptr (GHashTable) seen = g_hash_table_new (NULL, NULL);
  for (uint32_t r = 0; r < n; r++)
    g_hash_table_add (seen, GUINT_TO_POINTER (server[r]));
  /* NCCL's rows: one node, two, more (three take the last). */
  guint n_servers = g_hash_table_size (seen);
  return n_servers <= 1 ? 0 : n_servers == 2 ? 1 : 2;
}

double
weft_protocol_channel_cap (WeftAlgorithm alg, WeftProtocolKind protocol,
                           const WeftTopology *topo, const uint32_t *nodes,
                           uint32_t n)
{
  if (alg >= WEFT_ALG_COUNT || !weft_algorithm_in_nccl (alg)
      || protocol >= WEFT_PROTOCOL_RAW || n < 2)
    return 0;
  WeftNcclSystem sys;
  weft_nccl_system_from_topology (&sys, topo, nodes, n);
  return weft_nccl_channel_cap (&sys, weft_algorithm_get (alg)->costs,
                                protocol);
}

double
weft_protocol_engine_rate (const WeftNode *node, int row, double cap)
{
  double most = cap > 0 ? cap : INFINITY;

  if (node->kind != WEFT_NODE_GPU)
    return 0;
  if (row >= 0 && node->device->ll_bandwidth[row] > 0)
    most = MIN (most, node->device->ll_bandwidth[row]);
  return most < INFINITY ? most : 0;
}

double *
weft_protocol_engines (const WeftProtocol *costs, WeftAlgorithm alg,
                       WeftProtocolKind protocol, WeftOp op,
                       const WeftTopology *topo, const uint32_t *nodes,
                       uint32_t n)
{
  int row = weft_protocol_engine_row (costs, op, topo, nodes, n);
  double cap = weft_protocol_channel_cap (alg, protocol, topo, nodes, n);
  if (row < 0 && cap <= 0)
    return NULL;
  double *rate = g_new0 (double, MAX (topo->n_nodes, 1));
  gboolean any = FALSE;
  for (uint32_t r = 0; r < n; r++)
    {
      rate[nodes[r]] = weft_protocol_engine_rate (&topo->nodes[nodes[r]],
                                                  row, cap);
      any |= rate[nodes[r]] > 0;
    }
  if (!any)
    g_clear_pointer (&rate, g_free);
  return rate;
}

/* What @alg takes from the fabric (@fit; into @p, or with @p NULL only
 * whether it fits): the ranks a server has for the two-level algorithms,
 * then what the row's fit check finds. */
static gboolean
fit_fabric (WeftAlgorithm alg, WeftFit *fit, WeftCollectiveParams *p,
            GError **error)
{
  const WeftAlgorithmInfo *a = weft_algorithm_get (alg);

  if (a->hierarchical)
    {
      if (!weft_fit_ranks_per_server (fit->topo, fit->gpus, fit->n,
                                      &fit->local, error))
        return FALSE;
      if (p != NULL)
        p->local = fit->local;
    }
  return a->fit == NULL || a->fit (fit, p, error);
}

/* Where a streaming schedule's ranks go: into the image. */
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

WeftExecImage *
weft_collective_plan (const WeftTopology *topo, const uint32_t *gpus,
                      uint32_t n, WeftOp op, WeftAlgorithm alg, uint64_t size,
                      const WeftCollectiveParams *params, GArray *nodes,
                      GError **error)
{
  g_autoptr (GArray) shares = g_array_new (FALSE, FALSE, sizeof (double));
  g_autoptr (GArray) planes = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  g_auto (WeftFit) fit = { topo, gpus, n, op, size, 0, nodes, shares,
                           NULL, NULL, planes, NULL };
  WeftCollectiveParams p = *params;

  g_array_set_size (nodes, 0);
  g_array_append_vals (nodes, gpus, n);
  /* Rings are the fabric's to give. */
  p.rings = NULL;
  if (!fit_fabric (alg, &fit, &p, error))
    return NULL;
  weft_fit_place_planes (&fit);
  uint32_t ranks = weft_collective_ranks (alg, n, &p);
  g_autoptr (WeftExecImage) image = weft_exec_image_start (ranks, n);
  g_autoptr (WeftSchedule) schedule = weft_collective_stream (
      op, alg, n, size, &p, to_image, alike_to_image, image);
  if (schedule->streamed)
    {
      /* A builder that streams pairs every send and receive itself. */
      g_assert (2 * schedule->n_matched == schedule->n_ends);
      return weft_exec_image_finish (g_steal_pointer (&image));
    }
  /* The built-in algorithms do not deadlock: the tests search every one
   * of them for deadlocks over many sizes and rank counts. */
  if (!weft_schedule_pair (schedule, error))
    return NULL;
  for (uint32_t r = 0; r < ranks; r++)
    {
      weft_exec_image_add_rank (image, schedule, r);
      weft_schedule_forget (schedule, r);
    }
  return weft_exec_image_finish (g_steal_pointer (&image));
}

gboolean
weft_collective_footprint (const WeftTopology *topo, const uint32_t *gpus,
                           uint32_t n, WeftOp op, WeftAlgorithm alg,
                           uint64_t size, const WeftCollectiveParams *params,
                           WeftFootprint *footprint, GError **error)
{
  g_autoptr (GArray) shares = g_array_new (FALSE, FALSE, sizeof (double));
  g_autoptr (GArray) nodes = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  g_autoptr (GArray) planes = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  g_auto (WeftFit) fit = { topo, gpus, n, op, size, 0, nodes, shares,
                           NULL, NULL, planes, NULL };
  WeftCollectiveParams p = *params;

  g_array_append_vals (nodes, gpus, n);
  p.rings = NULL;
  if (!fit_fabric (alg, &fit, &p, error))
    return FALSE;
  g_autoptr (WeftSchedule) s = weft_collective_count (op, alg, n, size, &p);
  /* The sends that wait for nothing, all at once; then a rank's sends of
   * one tag in order, one of each tag at a time, or as many as the builder
   * says; and a switch that reduces sends a piece to every GPU at once. */
  uint64_t in_progress = s->counted_roots
                         + (uint64_t) s->n_ranks * MAX (s->counted_tags, 1)
                               * MAX (s->counted_ahead, 1)
                         + s->counted_fan_out;
  /* A builder that streams makes a few kinds of rank, and the image holds
   * one of each; else every rank may be a kind of its own. */
  uint64_t kinds = s->counted_classes ? s->counted_classes : s->n_ranks;
  uint64_t steps = s->counted_steps, deps = s->counted_deps;
  uint64_t peers = s->counted_peers ? s->counted_peers : s->counted_steps;
  if (s->counted_classes)
    {
      steps = MIN (steps, kinds * s->counted_rank_steps);
      deps = MIN (deps, kinds * s->counted_rank_deps);
    }
  *footprint = (WeftFootprint) {
    .in_progress = in_progress,
    .steps = s->counted_steps,
    .deps = s->counted_deps,
    .schedule = weft_schedule_bytes (s),
    .image = weft_exec_image_bytes (steps, deps, peers, s->n_ranks),
    /* Each transfer in progress has a receive waiting, and its send's
     * next may wait for it: a few steps wait for each. */
    .run = weft_exec_run_bytes (4 * in_progress, s->n_ranks, peers),
  };
  return TRUE;
}

/* NCCL's costs of @protocol for @alg, or NULL with @error if @alg does not
 * run with it. */
static const WeftProtocol *
costs_of (WeftAlgorithm alg, WeftProtocolKind protocol, GError **error)
{
  const WeftProtocol *costs = weft_protocol_get (protocol, alg);

  if (costs == NULL)
    g_set_error (error, WEFT_SCHEDULE_ERROR, WEFT_SCHEDULE_ERROR_UNFIT, "%s does not run with the "
                 "%s protocol", weft_algorithm_name (alg),
                 weft_protocol_name (protocol));
  return costs;
}

/* What a run needs of its schedule: the executor's image of it, its own or
 * one shared with other runs. */
typedef struct {
  WeftExecImage *own;           /* or */
  const WeftExecImage *shared;
  uint32_t n_ranks, n_gpus;
  uint64_t bytes_sent;
} RunImage;

static RunImage
run_image (WeftExecImage *own, const WeftExecImage *shared)
{
  const WeftExecImage *m = own ? own : shared;

  return (RunImage) {
    .own = own,
    .shared = shared,
    .n_ranks = weft_exec_image_ranks (m),
    .n_gpus = weft_exec_image_gpus (m),
    .bytes_sent = weft_exec_image_bytes_sent (m),
  };
}

static void run (const WeftTopology *topo, const uint32_t *nodes, WeftOp op,
                 WeftAlgorithm alg, WeftProtocolKind protocol,
                 RunImage *image, const WeftProtocol *costs,
                 const WeftRunOptions *options, WeftCollectiveResult *result);

gboolean
weft_collective_run (const WeftTopology *topo, const uint32_t *gpus,
                     uint32_t n, WeftOp op, WeftAlgorithm alg,
                     WeftProtocolKind protocol, uint64_t size,
                     const WeftCollectiveParams *params,
                     const WeftRunOptions *options,
                     WeftCollectiveResult *result, GError **error)
{
  const WeftProtocol *costs = costs_of (alg, protocol, error);
  g_autoptr (GArray) nodes = g_array_new (FALSE, FALSE, sizeof (uint32_t));

  if (costs == NULL)
    return FALSE;
  /* A large schedule may be made by the run's threads. */
  WeftCollectiveParams p = *params;
  p.threads = options->threads;
  /* Without the speed-ups, every switch chip on its own. */
  p.split_planes |= (options->plain & WEFT_PLAIN_SPEEDUPS) != 0;
  WeftExecImage *plan = weft_collective_plan (topo, gpus, n, op, alg, size,
                                              &p, nodes, error);
  if (plan == NULL)
    return FALSE;
  RunImage image = run_image (plan, NULL);
  run (topo, (uint32_t *) nodes->data, op, alg, protocol, &image, costs,
       options, result);
  return weft_collective_result_ok (result, error);
}

gboolean
weft_collective_result_ok (WeftCollectiveResult *result, GError **error)
{
  if (result->failure == NULL)
    return TRUE;
  g_set_error_literal (error, WEFT_SCHEDULE_ERROR, WEFT_SCHEDULE_ERROR_CUT,
                       result->failure);
  g_clear_pointer (&result->failure, g_free);
  return FALSE;
}

/* ---- schedules shared by a collective's candidates ---- */

/* Bytes of schedules kept past their last candidate, for the fastest's
 * second run (with link bins). */
#define PLANS_KEEP ((size_t) 64 << 20)

typedef enum { PLAN_NONE, PLAN_MAKING, PLAN_MADE } PlanState;

typedef struct {
  PlanState state;
  WeftExecImage *image;         /* PLAN_MADE: or NULL, and error; runs
                                   share it */
  GArray *nodes;
  GError *error;
  int users;                    /* candidates still to take it up */
  int holders;                  /* runs using it now */
  size_t bytes;
  gboolean kept;                /* counted in kept */
} PlanSlot;

struct _WeftPlans {
  WeftCollectiveCall call;
  GMutex lock;
  GCond made;
  PlanSlot slot[WEFT_ALG_COUNT];
  size_t kept;
};

WeftPlans *
weft_plans_new (const WeftCollectiveCall *call, const int *order,
                int n_order)
{
  WeftPlans *p = g_new0 (WeftPlans, 1);

  p->call = *call;
  g_mutex_init (&p->lock);
  g_cond_init (&p->made);
  for (int k = 0; k < n_order; k++)
    p->slot[order[k] / WEFT_PROTOCOL_COUNT].users++;
  return p;
}

static void
slot_clear (PlanSlot *s)
{
  weft_exec_image_free (s->image);
  s->image = NULL;
  if (s->nodes)
    g_array_unref (s->nodes);
  g_clear_error (&s->error);
  s->nodes = NULL;
  s->state = PLAN_NONE;
}

void
weft_plans_free (WeftPlans *p)
{
  if (p == NULL)
    return;
  for (int a = 0; a < WEFT_ALG_COUNT; a++)
    slot_clear (&p->slot[a]);
  g_mutex_clear (&p->lock);
  g_cond_clear (&p->made);
  g_free (p);
}

/* @alg's slot, planned (by this thread, or waited for), held until
 * plans_release(); NULL with @error if it cannot be planned. */
static PlanSlot *
plans_acquire (WeftPlans *p, WeftAlgorithm alg, GError **error)
{
  PlanSlot *s = &p->slot[alg];

  g_mutex_lock (&p->lock);
  s->users--;
  while (s->state == PLAN_MAKING)
    g_cond_wait (&p->made, &p->lock);
  if (s->state == PLAN_NONE)
    {
      s->state = PLAN_MAKING;
      g_mutex_unlock (&p->lock);
      GArray *nodes = g_array_new (FALSE, FALSE, sizeof (uint32_t));
      GError *why = NULL;
      const WeftCollectiveCall *c = &p->call;
      WeftExecImage *image = weft_collective_plan (
          c->topo, c->gpus, c->n, c->op, alg, c->size, c->params, nodes, &why);
      g_mutex_lock (&p->lock);
      s->image = image;
      s->nodes = nodes;
      s->error = why;
      s->bytes = image ? weft_exec_image_memory (image) : 0;
      s->kept = FALSE;
      s->state = PLAN_MADE;
      g_cond_broadcast (&p->made);
    }
  if (s->image == NULL)
    {
      g_propagate_error (error, g_error_copy (s->error));
      g_mutex_unlock (&p->lock);
      return NULL;
    }
  s->holders++;
  g_mutex_unlock (&p->lock);
  return s;
}

/* Done with @s: once no candidate is left to run it, it is kept while the
 * kept schedules fit PLANS_KEEP, and freed otherwise. */
static void
plans_release (WeftPlans *p, PlanSlot *s)
{
  g_mutex_lock (&p->lock);
  s->holders--;
  if (s->users <= 0 && s->holders == 0 && !s->kept)
    {
      if (p->kept + s->bytes <= PLANS_KEEP)
        {
          s->kept = TRUE;
          p->kept += s->bytes;
        }
      else
        slot_clear (s);
    }
  g_mutex_unlock (&p->lock);
}

gboolean
weft_plans_run (WeftPlans *p, WeftAlgorithm alg, WeftProtocolKind protocol,
                const WeftRunOptions *options, WeftCollectiveResult *result,
                GError **error)
{
  const WeftProtocol *costs = costs_of (alg, protocol, error);

  if (costs == NULL)
    return FALSE;
  PlanSlot *s = plans_acquire (p, alg, error);
  if (s == NULL)
    return FALSE;
  RunImage run_with = run_image (NULL, s->image);
  run (p->call.topo, (const uint32_t *) s->nodes->data, p->call.op, alg,
       protocol, &run_with, costs, options, result);
  plans_release (p, s);
  return weft_collective_result_ok (result, error);
}

void
weft_schedule_run (const WeftTopology *topo, const uint32_t *nodes,
                   const WeftSchedule *schedule, WeftOp op,
                   const WeftProtocol *costs, const WeftRunOptions *options,
                   WeftCollectiveResult *result)
{
  RunImage image = run_image (weft_exec_image_new (schedule), NULL);
  run (topo, nodes, op, WEFT_ALG_COUNT, WEFT_PROTOCOL_RAW, &image, costs,
       options, result);
}

/* Run @image (its own, which the run frees, or one shared with other
 * runs) as weft_schedule_run() runs its schedule. */
static void
run (const WeftTopology *topo, const uint32_t *nodes, WeftOp op,
     WeftAlgorithm alg, WeftProtocolKind kind, RunImage *image,
     const WeftProtocol *protocol, const WeftRunOptions *options,
     WeftCollectiveResult *result)
{
  WeftProtocol at = *protocol;
  const WeftProtocol *costs = &at;

  /* NVLS moves data at NCCL's nvlsEfficiency of the links, which is the
   * architecture's (the GPU ranks come first, each at its node). */
  if (alg < WEFT_ALG_COUNT
      && weft_algorithm_get (alg)->costs == WEFT_COSTS_NVLS && !at.raw)
    at.efficiency = weft_nccl_nvls_efficiency (topo, nodes, image->n_gpus);

  g_autoptr (WeftSim) sim = weft_sim_new ();
  WeftNetworkConfig config = {
    options->fidelity,
    options->bin_width,
    options->seed,
    costs->raw ? 0 : costs->efficiency,
  };
  g_autoptr (WeftNetwork) net = weft_network_new (sim, topo, &config);
  WeftTime end = WEFT_TIME_MAX;
  g_autofree double *engines = weft_protocol_engines (protocol, alg, kind, op,
                                                      topo, nodes,
                                                      image->n_gpus);

  if (engines != NULL)
    at.engines = weft_network_add_engines (net, engines);
  if (options->plain)
    weft_network_set_plain (net, options->plain);
  if (options->threads > 1)
    weft_network_set_threads (net, options->threads);
  if (options->max_bins)
    weft_link_stats_set_budget (net->stats, options->max_bins);

  weft_sim_set_interrupt (sim, options->interrupt);
  weft_sim_set_progress (sim, options->progress);
  weft_sim_set_bound (sim, options->bound);
  result->spans = options->bin_width
                      ? g_new (WeftTime, 2 * (size_t) image->n_ranks)
                      : NULL;
  result->n_spans = options->bin_width ? image->n_gpus : 0;
  if (image->own != NULL)
    weft_execute_own (net, g_steal_pointer (&image->own), nodes, costs,
                      result->spans, finished, &end, NULL);
  else
    weft_execute_image (net, image->shared, nodes, costs, result->spans,
                        finished, &end, NULL);
  result->beaten = FALSE;
  if (options->give_up > 0)
    {
      weft_sim_run_until (sim, options->give_up);
      result->beaten = end == WEFT_TIME_MAX && !weft_sim_interrupted (sim);
    }
  if (!result->beaten)
    weft_sim_run (sim);
  result->interrupted = weft_sim_interrupted (sim);
  /* Stopped unfinished with events left, not by the flag: past the bound.
   * A run that reached its end is timed, whatever the bound became while
   * it drained. */
  result->beaten |= end == WEFT_TIME_MAX && !result->interrupted
                    && weft_sim_pending (sim) > 0;
  g_assert (end != WEFT_TIME_MAX || result->interrupted || result->beaten);
  result->time = result->beaten        ? WEFT_TIME_MAX
                 : result->interrupted ? weft_sim_now (sim)
                                       : end;
  result->failure = g_strdup (weft_network_failure (net));
  if (result->failure != NULL)
    result->beaten = FALSE;
  result->bytes_sent = image->bytes_sent;
  result->events = weft_sim_events_run (sim);
  result->links_used = 0;
  weft_network_flush_stats (net);
  for (uint32_t l = 0; l < topo->n_links; l++)
    result->links_used += net->stats->links[l].bytes > 0;
  result->stats = NULL;
  if (options->bin_width)
    result->stats = g_steal_pointer (&net->stats);
}

gboolean
weft_collective_fits (const WeftTopology *topo, const uint32_t *gpus,
                      uint32_t n, WeftOp op, WeftAlgorithm alg,
                      WeftProtocolKind protocol, GError **error)
{
  g_autoptr (GArray) nodes = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  g_autoptr (GArray) shares = g_array_new (FALSE, FALSE, sizeof (double));
  g_auto (WeftFit) fit = { topo, gpus, n, op, 0, 0, nodes, shares,
                           NULL, NULL, NULL, NULL };

  if (!weft_algorithm_supports (alg, op))
    {
      g_set_error (error, WEFT_SCHEDULE_ERROR, WEFT_SCHEDULE_ERROR_UNFIT, "%s cannot run %s",
                   weft_algorithm_name (alg), weft_op_name (op));
      return FALSE;
    }
  if (weft_protocol_get (protocol, alg) == NULL)
    {
      g_set_error (error, WEFT_SCHEDULE_ERROR, WEFT_SCHEDULE_ERROR_UNFIT, "%s does not run with the "
                   "%s protocol", weft_algorithm_name (alg),
                   weft_protocol_name (protocol));
      return FALSE;
    }
  g_array_append_vals (nodes, gpus, n);
  return fit_fabric (alg, &fit, NULL, error);
}

/* The candidates of one choice, shared by the threads that simulate them. */
typedef struct {
  const int *order;
  int n;
  WeftRunOptions options;       /* bound: &best */
  WeftRunOptions first;         /* order[0]'s, likewise */
  WeftCandidateFn run;
  void *data;
  WeftCollectiveResult results[WEFT_PAIRS];     /* by place in order */
  GError *errors[WEFT_PAIRS];
  atomic_int next;              /* the next place in order to take up */
  _Atomic WeftTime best;        /* least time of those finished */
} Trial;

/* Whether candidate @k cannot beat the best so far, found by its lower
 * bound: the same schedule with no link shared (analytical-free), which
 * no fidelity beats, every transfer taking at least its path's latency
 * and bytes over its bottleneck, and every step waiting for the same
 * ones.  Run up to the best time only, it costs a few events a transfer;
 * a candidate it leaves in the race is then simulated as it is.  Not
 * with the speed-ups off, nor where the run is that model already. */
static gboolean
bounded (Trial *t, int k, const WeftRunOptions *options,
         WeftCollectiveResult *r)
{
  if ((options->plain & WEFT_PLAIN_SPEEDUPS)
      || options->fidelity == WEFT_FIDELITY_ANALYTICAL_FREE)
    return FALSE;
  WeftRunOptions free = *options;
  g_autoptr (GError) error = NULL;

  free.fidelity = WEFT_FIDELITY_ANALYTICAL_FREE;
  free.bin_width = free.max_bins = 0;
  free.progress = NULL;
  if (!t->run (t->order[k], &free, r, &error, t->data))
    return FALSE;               /* its own run says why */
  gboolean beaten = r->beaten;
  gboolean interrupted = r->interrupted;
  weft_link_stats_free (r->stats);
  g_free (r->spans);
  *r = (WeftCollectiveResult) { .time = WEFT_TIME_MAX, .beaten = beaten,
                                .interrupted = interrupted };
  return beaten || interrupted;
}

static gpointer
trial_worker (gpointer data)
{
  Trial *t = data;

  for (int k; (k = atomic_fetch_add (&t->next, 1)) < t->n;)
    {
      /* Stopped by the flag: take up no more. */
      if (t->options.interrupt != NULL && *t->options.interrupt)
        break;
      WeftCollectiveResult *r = &t->results[k];
      WeftRunOptions options = k == 0 ? t->first : t->options;
      WeftTime best = atomic_load (&t->best);
      options.give_up = best != WEFT_TIME_MAX ? best : 0;
      if (best != WEFT_TIME_MAX && bounded (t, k, &options, r))
        continue;
      if (!t->run (t->order[k], &options, r, &t->errors[k], t->data)
          || r->beaten || r->interrupted)
        continue;
      best = atomic_load (&t->best);
      while (r->time < best
             && !atomic_compare_exchange_weak (&t->best, &best, r->time))
        ;
    }
  return NULL;
}

void
weft_collective_choose (const int *order, int n, int jobs,
                        const WeftRunOptions *options,
                        const WeftRunOptions *first, WeftCandidateFn run,
                        void *data, WeftChoice *choice)
{
  Trial *t = g_new0 (Trial, 1);
  GThread *threads[64];
  int extra = CLAMP (MIN (jobs, n) - 1, 0, (int) G_N_ELEMENTS (threads));

  g_assert (n <= WEFT_PAIRS);
  t->order = order;
  t->n = n;
  t->options = *options;
  t->options.bound = n > 1 ? &t->best : NULL;
  t->first = first != NULL ? *first : *options;
  t->first.bound = t->options.bound;
  t->run = run;
  t->data = data;
  atomic_init (&t->next, 0);
  atomic_init (&t->best, WEFT_TIME_MAX);
  for (int i = 0; i < extra; i++)
    threads[i] = g_thread_new ("weft-candidate", trial_worker, t);
  trial_worker (t);
  for (int i = 0; i < extra; i++)
    g_thread_join (threads[i]);

  *choice = (WeftChoice) { .pair = -1, .failed = -1 };
  choice->interrupted = options->interrupt != NULL && *options->interrupt;
  int best = -1;
  for (int k = 0; k < n; k++)
    {
      const WeftCollectiveResult *r = &t->results[k];
      if (t->errors[k] != NULL)
        {
          if (choice->failed < 0 || order[k] < choice->failed)
            {
              g_clear_error (&choice->error);
              choice->failed = order[k];
              choice->error = g_steal_pointer (&t->errors[k]);
            }
          continue;
        }
      choice->interrupted |= r->interrupted;
      if (!r->beaten && !r->interrupted
          && (best < 0 || r->time < t->results[best].time
              || (r->time == t->results[best].time && order[k] < order[best])))
        best = k;
    }
  choice->n_tried = n;
  for (int k = 0; k < n; k++)
    {
      const WeftCollectiveResult *r = &t->results[k];
      choice->tried[k] = order[k];
      choice->time[k] = t->errors[k] || r->beaten || r->interrupted
                            ? WEFT_TIME_MAX
                            : r->time;
    }
  for (int k = 0; k < n; k++)
    {
      g_clear_error (&t->errors[k]);
      if (k == best)
        {
          choice->pair = order[k];
          choice->result = t->results[k];
          continue;
        }
      weft_link_stats_free (t->results[k].stats);
      g_free (t->results[k].spans);
    }
  g_free (t);
}

void
weft_choice_clear (WeftChoice *choice)
{
  weft_link_stats_free (choice->result.stats);
  g_free (choice->result.spans);
  choice->result.stats = NULL;
  choice->result.spans = NULL;
  g_clear_error (&choice->error);
}
