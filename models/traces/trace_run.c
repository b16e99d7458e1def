/* weft: replaying a trace.
 *
 * Each (op, rank) pair is a slot.  A slot is ready once the slots of its
 * op's dependencies on the same rank have finished (and not before the
 * op's `at`).  A compute slot then waits for its GPU's compute, which
 * runs one op at a time (of any job placed there); a sleep waits its
 * time; a collective or a send or receive joins an instance of the op's schedule (weft_exec_join()), which
 * the network runs while compute goes on.  The instance is made when the
 * first of its ranks arrives and freed when the last has finished. */
#include "traces/trace_run.h"

#include "topology/faults.h"

#include <math.h>
#include <string.h>

#include "collectives/executor.h"
#include "collectives/nccl_model.h"

/* NCCL sends point-to-point messages up to this size with LL, larger ones
 * with Simple (NCCL_P2P_LL_THRESHOLD, 16 KiB by default). */
#define P2P_LL_THRESHOLD 16384

typedef struct {
  WeftExecImage *image;         /* of its schedule, shared by its instances */
  GArray *nodes;                /* uint32_t: rank -> node */
  WeftProtocol costs;           /* its engines set as the run starts */
  int engine_row;               /* weft_protocol_engine_row(), or -1 */
  double engine_cap;            /* weft_protocol_channel_cap(), or 0 */
  int algorithm, protocol;
} Plan;

typedef struct Runner Runner;

typedef struct {
  Runner *run;
  uint32_t op;                  /* collectives: the op; p2p: the send */
  WeftExec *exec;
  uint32_t nodes[2];            /* p2p: sender and receiver */
  uint32_t left;                /* ranks not finished */
} Instance;

struct Runner {
  const WeftTopology *topo;
  const WeftTrace *t;
  WeftSim *sim;
  WeftNetwork *net;
  WeftTraceResult *res;
  GPtrArray *plans;             /* Plan */
  uint32_t *plan_of;            /* per op: index into plans (collectives
                                   and p2p) */
  Instance **instance;          /* per op, while running */
  uint32_t *remaining;          /* per slot: unfinished dependencies */
  uint32_t *pred;               /* per slot: the slot that released it last
                                   (or held its compute), or WEFT_NONE */
  uint64_t *out_start;          /* per slot: dependent slots */
  uint32_t *out;
  WeftTime *engine_free;        /* per GPU node: compute free from (jobs
                                   on one GPU share its compute) */
  uint32_t *engine_slot;        /* ...and the slot that holds it */
  uint64_t done;                /* slots finished */
  const WeftTraceOptions *options;
};

static void plan_free (Plan *p)
{
  weft_exec_image_free (p->image);
  g_array_unref (p->nodes);
  g_free (p);
}

static GError *
op_error (const WeftTrace *t, const WeftTraceOp *op, GError *cause)
{
  g_autofree char *where = weft_trace_where (t, op);
  GError *e = g_error_new (WEFT_TRACE_ERROR, WEFT_TRACE_ERROR_UNFIT,
                          "%s: op '%s': %s", where,
                           op->name, cause->message);
  g_error_free (cause);
  return e;
}

/* Candidate @pair of a collective alone on its GPUs, on @data, its plans,
 * for choosing its algorithm. */
static gboolean
run_alone (int pair, const WeftRunOptions *options,
           WeftCollectiveResult *result, GError **error, void *data)
{
  return weft_plans_run (data, pair / WEFT_PROTOCOL_COUNT,
                         pair % WEFT_PROTOCOL_COUNT, options, result, error);
}

uint32_t *
weft_trace_op_gpus (const WeftTrace *t, const WeftTraceOp *op)
{
  uint32_t *gpus = g_new (uint32_t, MAX (op->n_ranks, 1));

  for (uint32_t k = 0; k < op->n_ranks; k++)
    gpus[k] = g_array_index (t->gpus, uint32_t,
                             g_array_index (t->ranks, uint32_t,
                                            op->first_rank + k));
  return gpus;
}

GBytes *
weft_trace_plan_key (const WeftTraceOp *op, int alg, int proto,
                     const uint32_t *gpus)
{
  GByteArray *key = g_byte_array_new ();
  int64_t head[4] = { op->op, alg, proto, (int64_t) op->bytes };

  g_byte_array_append (key, (guint8 *) head, sizeof head);
  g_byte_array_append (key, (guint8 *) gpus, op->n_ranks * sizeof *gpus);
  return g_byte_array_free_to_bytes (key);
}

gboolean
weft_trace_may_run (const WeftTraceOp *op, int alg, int a)
{
  return alg == WEFT_TRACE_AUTO
             ? weft_algorithm_supports (a, op->op) && weft_algorithm_in_auto (a)
             : a == alg;
}

/* The (algorithm, protocol) pairs that may run collective @op of @t on
 * @gpus, asked for @alg and @proto (each resolved or WEFT_TRACE_AUTO),
 * into @order: how many, or -1 with @why if @alg cannot run @op; with
 * none, @why says why the last one tried does not fit. */
static int
candidates (const WeftTopology *topo, const WeftTrace *t,
            const WeftTraceOp *op, int alg, int proto, const uint32_t *gpus,
            int *order, GError **why)
{
  int n_order = 0;

  if (alg != WEFT_TRACE_AUTO && !weft_algorithm_supports (alg, op->op))
    {
      g_autofree char *where = weft_trace_where (t, op);
      g_set_error (why, WEFT_TRACE_ERROR, WEFT_TRACE_ERROR_UNFIT,
                   "%s: algorithm %s cannot run %s", where,
                   weft_algorithm_name (alg), weft_op_name (op->op));
      return -1;
    }
  for (int a = 0; a < WEFT_ALG_COUNT; a++)
    for (int p = 0; p < WEFT_PROTOCOL_COUNT; p++)
      {
        if (!weft_trace_may_run (op, alg, a)
            || (proto != WEFT_TRACE_AUTO && p != proto)
            || (proto == WEFT_TRACE_AUTO && !weft_protocol_in_auto (p)))
          continue;
        g_clear_error (why);
        if (weft_collective_fits (topo, gpus, op->n_ranks, op->op, a, p, why))
          order[n_order++] = a * WEFT_PROTOCOL_COUNT + p;
      }
  return n_order;
}

gboolean
weft_trace_check_fits (const WeftTopology *topo, const WeftTrace *t,
                       int algorithm, int protocol, GError **error)
{
  g_autoptr (GHashTable) seen = g_hash_table_new_full (
      g_bytes_hash, g_bytes_equal, (GDestroyNotify) g_bytes_unref, NULL);

  for (uint32_t i = 0; i < t->ops->len; i++)
    {
      const WeftTraceOp *op = weft_trace_op (t, i);
      if (op->kind != WEFT_TRACE_COLLECTIVE)
        continue;
      int alg = op->algorithm == WEFT_TRACE_AUTO ? algorithm : op->algorithm;
      int proto = op->protocol == WEFT_TRACE_AUTO ? protocol : op->protocol;
      g_autofree uint32_t *gpus = weft_trace_op_gpus (t, op);
      if (!g_hash_table_add (seen, weft_trace_plan_key (op, alg, proto, gpus)))
        continue;
      int order[WEFT_PAIRS];
      GError *why = NULL;
      int n = candidates (topo, t, op, alg, proto, gpus, order, &why);
      if (n > 0)
        {
          g_clear_error (&why);
          continue;
        }
      if (n < 0)
        g_propagate_error (error, why);
      else
        {
          if (why == NULL)
            why = g_error_new (WEFT_TRACE_ERROR, WEFT_TRACE_ERROR_UNFIT,
                               "no algorithm can run it");
          g_propagate_error (error, op_error (t, op, why));
        }
      return FALSE;
    }
  return TRUE;
}

/* The plan of collective @op: its algorithm and protocol resolved, its
 * schedule built once for every op of the same kind, size, algorithm and
 * GPUs. */
static gboolean
plan_collective (Runner *x, GHashTable *cache, uint32_t i,
                 const WeftTraceOptions *o, GError **error)
{
  const WeftTrace *t = x->t;
  const WeftTraceOp *op = weft_trace_op (t, i);
  int alg = op->algorithm == WEFT_TRACE_AUTO ? o->algorithm : op->algorithm;
  int proto = op->protocol == WEFT_TRACE_AUTO ? o->protocol : op->protocol;
  g_autofree uint32_t *gpus = weft_trace_op_gpus (t, op);
  g_autoptr (GBytes) k = weft_trace_plan_key (op, alg, proto, gpus);
  gpointer found;
  if (g_hash_table_lookup_extended (cache, k, NULL, &found))
    {
      x->plan_of[i] = GPOINTER_TO_UINT (found);
      return TRUE;
    }

  /* Auto: the fastest alone on these GPUs, as `weft run` picks. */
  int order[WEFT_PAIRS], n_order;
  GError *why = NULL;
  if ((n_order = candidates (x->topo, t, op, alg, proto, gpus, order, &why))
      < 0)
    {
      g_propagate_error (error, why);
      return FALSE;
    }
  int best = n_order > 0 ? order[0] : -1;
  if (n_order > 0 && (alg == WEFT_TRACE_AUTO || proto == WEFT_TRACE_AUTO))
    {
      /* The candidates' schedules, freed before the chosen one is planned
       * again below: taking one of them would leave the winners of a long
       * trace among their holes. */
      WeftCollectiveCall call = { x->topo, gpus, op->n_ranks, op->op,
                                  op->bytes, &o->params };
      g_autoptr (WeftPlans) plans = weft_plans_new (&call, order, n_order);
      WeftRunOptions options = o->run;
      WeftChoice choice;
      options.bin_width = 0;
      weft_collective_choose (order, n_order, MAX (o->jobs, 1), &options,
                              NULL, run_alone, plans, &choice);
      /* Stopped by the flag: any will do, the replay stops too. */
      best = choice.pair >= 0 || !choice.interrupted ? choice.pair : order[0];
      g_clear_error (&why);
      why = g_steal_pointer (&choice.error);
      weft_choice_clear (&choice);
    }
  if (best < 0)
    {
      if (why == NULL)
        why = g_error_new (WEFT_TRACE_ERROR, WEFT_TRACE_ERROR_UNFIT,
                           "no algorithm can run it");
      g_propagate_error (error, op_error (t, op, why));
      return FALSE;
    }
  int best_alg = best / WEFT_PROTOCOL_COUNT;
  int best_proto = best % WEFT_PROTOCOL_COUNT;
  g_clear_error (&why);
  Plan *plan = g_new0 (Plan, 1);
  plan->nodes = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  plan->algorithm = best_alg;
  plan->protocol = best_proto;
  plan->costs = *weft_protocol_get (best_proto, best_alg);
  plan->image = weft_collective_plan (x->topo, gpus, op->n_ranks, op->op,
                                      best_alg, op->bytes, &o->params,
                                      plan->nodes, &why);
  if (plan->image == NULL)
    {
      g_array_unref (plan->nodes);
      g_free (plan);
      g_propagate_error (error, op_error (t, op, why));
      return FALSE;
    }
  /* NVLS at its architecture's efficiency, as a collective's run. */
  if (best_alg == WEFT_ALG_NVLS)
    plan->costs.efficiency = weft_nccl_nvls_efficiency (x->topo, gpus,
                                                        op->n_ranks);
  plan->engine_row = weft_protocol_engine_row (
      &plan->costs, op->op, x->topo, (const uint32_t *) plan->nodes->data,
      op->n_ranks);
  plan->engine_cap = weft_protocol_channel_cap (
      best_alg, best_proto, x->topo, (const uint32_t *) plan->nodes->data,
      op->n_ranks);
  x->plan_of[i] = x->plans->len;
  g_ptr_array_add (x->plans, plan);
  g_hash_table_insert (cache, g_bytes_ref (k),
                       GUINT_TO_POINTER (x->plan_of[i]));
  return TRUE;
}

/* A send and its receive share one plan per size and protocol: one rank
 * sends, the other receives. */
static void
plan_p2p (Runner *x, GHashTable *cache, uint32_t i, const WeftTraceOptions *o)
{
  const WeftTraceOp *op = weft_trace_op (x->t, i);
  int proto = op->protocol == WEFT_TRACE_AUTO ? o->protocol : op->protocol;

  if (proto == WEFT_TRACE_AUTO)
    proto = op->bytes <= P2P_LL_THRESHOLD ? WEFT_PROTOCOL_LL
                                          : WEFT_PROTOCOL_SIMPLE;
  uint64_t head[3] = { G_MAXUINT64, (uint64_t) proto, op->bytes };
  g_autoptr (GBytes) k = g_bytes_new (head, sizeof head);
  gpointer found;
  if (g_hash_table_lookup_extended (cache, k, NULL, &found))
    {
      x->plan_of[i] = GPOINTER_TO_UINT (found);
      return;
    }
  Plan *plan = g_new0 (Plan, 1);
  plan->nodes = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  plan->algorithm = -1;
  plan->protocol = proto;
  plan->costs = *weft_protocol_get (proto, WEFT_ALG_DIRECT);
  plan->engine_row = -1;           /* NCCL's send and receive */
  g_autoptr (WeftSchedule) schedule = weft_schedule_new (2);
  weft_schedule_send (schedule, 0, 1, 0, op->bytes, WEFT_NO_STEP);
  weft_schedule_recv (schedule, 1, 0, 0, op->bytes, WEFT_NO_STEP);
  gboolean ok = weft_schedule_check (schedule, NULL);
  g_assert (ok);
  plan->image = weft_exec_image_new (schedule);
  x->plan_of[i] = x->plans->len;
  g_ptr_array_add (x->plans, plan);
  g_hash_table_insert (cache, g_bytes_ref (k),
                       GUINT_TO_POINTER (x->plan_of[i]));
}

static void slot_done (Runner *x, uint32_t slot);

static void
slot_done_event (WeftSim *sim, void *target, void *data)
{
  (void) sim;
  slot_done (target, GPOINTER_TO_UINT (data));
}

static void
rank_done (WeftSim *sim, void *target, uint32_t rank)
{
  Instance *in = target;
  Runner *x = in->run;
  const WeftTraceOp *op = weft_trace_op (x->t, in->op);
  (void) sim;

  if (op->kind == WEFT_TRACE_SEND)
    slot_done (x, rank == 0 ? op->first_rank
                            : weft_trace_op (x->t, op->match)->first_rank);
  else if (rank < op->n_ranks)
    slot_done (x, op->first_rank + rank);   /* not a switch of NVLS */
  if (--in->left == 0)
    {
      x->instance[in->op] = NULL;
      if (op->kind == WEFT_TRACE_SEND)
        x->instance[op->match] = NULL;
      weft_exec_free (in->exec);
      g_free (in);
    }
}

/* The instance of @i's schedule, made when its first rank arrives. */
static Instance *
instance_of (Runner *x, uint32_t i)
{
  const WeftTraceOp *op = weft_trace_op (x->t, i);
  uint32_t owner = op->kind == WEFT_TRACE_RECV ? op->match : i;

  if (x->instance[owner])
    return x->instance[owner];
  const Plan *plan = g_ptr_array_index (x->plans, x->plan_of[owner]);
  Instance *in = g_new0 (Instance, 1);
  in->run = x;
  in->op = owner;
  const uint32_t *nodes = (const uint32_t *) plan->nodes->data;
  if (op->kind != WEFT_TRACE_COLLECTIVE)
    {
      const WeftTraceOp *send = weft_trace_op (x->t, owner);
      in->nodes[0] = g_array_index (x->t->gpus, uint32_t,
                                    g_array_index (x->t->ranks, uint32_t,
                                                   send->first_rank));
      in->nodes[1] = g_array_index (x->t->gpus, uint32_t, send->peer);
      nodes = in->nodes;
    }
  uint32_t ranks = weft_exec_image_ranks (plan->image);
  in->left = ranks;
  in->exec = weft_exec_new (x->net, plan->image, nodes, &plan->costs,
                            rank_done, in);
  /* Switches that reduce (NVLS) are there from the start. */
  for (uint32_t r = weft_exec_image_gpus (plan->image); r < ranks; r++)
    weft_exec_join (in->exec, r);
  x->instance[owner] = in;
  if (op->kind == WEFT_TRACE_SEND || op->kind == WEFT_TRACE_RECV)
    x->instance[op->match] = in;
  return in;
}

/* How long compute @op takes on GPU node @gpu from @begin: its duration,
 * stretched on a straggler (a fault) by the share of its speed it keeps
 * meanwhile. */
static WeftTime
compute_time (const WeftTopology *topo, uint32_t gpu, const WeftTraceOp *op,
              WeftTime begin)
{
  float share = topo->nodes[gpu].compute;

  if (topo->compute_windows)
    return weft_faults_compute_end (topo, gpu, begin, (double) op->duration)
           - begin;
  return share >= 1 ? op->duration
                    : (WeftTime) ceil ((double) op->duration / share);
}

static void
slot_start (Runner *x, uint32_t slot)
{
  uint32_t i = weft_trace_op_of_slot (x->t, slot);
  const WeftTraceOp *op = weft_trace_op (x->t, i);
  uint32_t rank = g_array_index (x->t->ranks, uint32_t, slot);
  WeftTime now = weft_sim_now (x->sim);

  x->res->start[slot] = now;
  switch (op->kind)
    {
    case WEFT_TRACE_COMPUTE:
      {
        uint32_t gpu = g_array_index (x->t->gpus, uint32_t, rank);
        WeftTime begin = MAX (now, x->engine_free[gpu]);
        WeftTime duration = compute_time (x->topo, gpu, op, begin);
        if (begin > now)
          x->pred[slot] = x->engine_slot[gpu];
        x->engine_free[gpu] = begin + duration;
        x->engine_slot[gpu] = slot;
        x->res->start[slot] = begin;
        weft_sim_schedule_at (x->sim, begin + duration, slot_done_event,
                              x, GUINT_TO_POINTER (slot));
        break;
      }
    case WEFT_TRACE_SLEEP:
      weft_sim_schedule (x->sim, op->duration, slot_done_event, x,
                         GUINT_TO_POINTER (slot));
      break;
    case WEFT_TRACE_COLLECTIVE:
      weft_exec_join (instance_of (x, i)->exec, slot - op->first_rank);
      break;
    case WEFT_TRACE_SEND:
    case WEFT_TRACE_RECV:
      weft_exec_join (instance_of (x, i)->exec,
                      op->kind == WEFT_TRACE_SEND ? 0 : 1);
      break;
    }
}

static void
slot_start_event (WeftSim *sim, void *target, void *data)
{
  (void) sim;
  slot_start (target, GPOINTER_TO_UINT (data));
}

static void
slot_ready (Runner *x, uint32_t slot)
{
  const WeftTraceOp *op = weft_trace_op (x->t,
                                         weft_trace_op_of_slot (x->t, slot));

  if (op->at > weft_sim_now (x->sim))
    {
      x->pred[slot] = WEFT_NONE;  /* the clock held it */
      weft_sim_schedule_at (x->sim, op->at, slot_start_event, x,
                            GUINT_TO_POINTER (slot));
      return;
    }
  slot_start (x, slot);
}

static void
slot_done (Runner *x, uint32_t slot)
{
  x->res->end[slot] = weft_sim_now (x->sim);
  x->done++;
  if (x->options->progress && (x->done & 0xffff) == 0)
    x->options->progress (x->done, x->t->ranks->len,
                          x->options->progress_data);
  for (uint64_t e = x->out_start[slot]; e < x->out_start[slot + 1]; e++)
    if (--x->remaining[x->out[e]] == 0)
      {
        x->pred[x->out[e]] = slot;
        slot_ready (x, x->out[e]);
      }
}

static void
begin (WeftSim *sim, void *target, void *data)
{
  Runner *x = target;
  (void) sim, (void) data;

  for (uint32_t s = 0; s < x->t->ranks->len; s++)
    if (x->remaining[s] == 0)
      slot_ready (x, s);
}

static void
build_edges (Runner *x)
{
  uint32_t n_slots = x->t->ranks->len;
  GArray *from = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  GArray *to = g_array_new (FALSE, FALSE, sizeof (uint32_t));

  weft_trace_slot_edges (x->t, from, to);
  for (guint e = 0; e < to->len; e++)
    x->remaining[g_array_index (to, uint32_t, e)]++;
  x->out_start = g_new0 (uint64_t, n_slots + 1);
  for (guint e = 0; e < from->len; e++)
    x->out_start[g_array_index (from, uint32_t, e) + 1]++;
  for (uint32_t s = 0; s < n_slots; s++)
    x->out_start[s + 1] += x->out_start[s];
  x->out = g_new (uint32_t, MAX (from->len, 1));
  g_autofree uint64_t *fill = g_memdup2 (x->out_start,
                                         (n_slots + 1) * sizeof (uint64_t));
  for (guint e = 0; e < from->len; e++)
    x->out[fill[g_array_index (from, uint32_t, e)]++]
        = g_array_index (to, uint32_t, e);
  g_array_unref (from);
  g_array_unref (to);
}

static int
cmp_interval (const void *a, const void *b)
{
  const WeftTime *x = a, *y = b;
  return x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : (x[1] > y[1]) - (x[1] < y[1]);
}

/* Per rank: step time, compute time, and communication not covered by
 * compute (the union of its communication intervals less its compute). */
static void
per_rank (Runner *x)
{
  const WeftTrace *t = x->t;
  WeftTraceResult *res = x->res;
  uint32_t n = t->gpus->len, n_slots = t->ranks->len;
  g_autofree uint32_t *start = g_new0 (uint32_t, n + 1);
  g_autofree uint32_t *order = g_new (uint32_t, MAX (n_slots, 1));

  for (uint32_t s = 0; s < n_slots; s++)
    start[g_array_index (t->ranks, uint32_t, s) + 1]++;
  for (uint32_t r = 0; r < n; r++)
    start[r + 1] += start[r];
  g_autofree uint32_t *fill = g_memdup2 (start, (n + 1) * sizeof (uint32_t));
  for (uint32_t s = 0; s < n_slots; s++)
    order[fill[g_array_index (t->ranks, uint32_t, s)]++] = s;

  /* Each slot's op. */
  g_autofree uint32_t *op_of = g_new (uint32_t, MAX (n_slots, 1));
  for (uint32_t i = 0; i < t->ops->len; i++)
    {
      const WeftTraceOp *op = weft_trace_op (t, i);
      for (uint32_t s = op->first_rank; s < op->first_rank + op->n_ranks; s++)
        op_of[s] = i;
    }

  g_autoptr (GArray) comm = g_array_new (FALSE, FALSE, 2 * sizeof (WeftTime));
  g_autoptr (GArray) comp = g_array_new (FALSE, FALSE, 2 * sizeof (WeftTime));
  for (uint32_t r = 0; r < n; r++)
    {
      g_array_set_size (comm, 0);
      g_array_set_size (comp, 0);
      for (uint32_t k = start[r]; k < start[r + 1]; k++)
        {
          uint32_t s = order[k];
          const WeftTraceOp *op = weft_trace_op (t, op_of[s]);
          WeftTime span[2] = { res->start[s], res->end[s] };
          res->step[r] = MAX (res->step[r], span[1]);
          if (op->kind == WEFT_TRACE_COMPUTE)
            {
              res->compute[r] += span[1] - span[0];
              g_array_append_val (comp, span);
            }
          else if (op->kind != WEFT_TRACE_SLEEP && span[1] > span[0])
            g_array_append_val (comm, span);
        }
      if (comm->len > 1)
        qsort (comm->data, comm->len, 2 * sizeof (WeftTime), cmp_interval);
      if (comp->len > 1)
        qsort (comp->data, comp->len, 2 * sizeof (WeftTime), cmp_interval);
      const WeftTime *c = (const WeftTime *) comm->data;
      const WeftTime *p = (const WeftTime *) comp->data;
      guint j = 0;
      for (guint a = 0; a < comm->len;)
        {
          /* One piece of the union: [lo, hi). */
          WeftTime lo = c[2 * a], hi = c[2 * a + 1];
          for (a++; a < comm->len && c[2 * a] <= hi; a++)
            hi = MAX (hi, c[2 * a + 1]);
          WeftTime covered = 0;
          while (j < comp->len && p[2 * j + 1] <= lo)
            j++;
          for (guint b = j; b < comp->len && p[2 * b] < hi; b++)
            covered += MIN (hi, p[2 * b + 1]) - MAX (lo, p[2 * b]);
          res->exposed[r] += hi - lo - covered;
        }
    }
}

/* From the op that ended last, back along what held each op up: on the
 * rank the path is on, the op's last rank to reach it (a collective,
 * either side of a send), whose previous op held that one up (the
 * dependency that finished last, or the compute that kept its GPU busy).
 * Each op holds up the path from when its last rank reached it (a compute
 * op from when it began on the path's rank) to when it ended on the rank
 * the path goes on from, so the spans follow each other. */
static void
critical_path (Runner *x)
{
  const WeftTrace *t = x->t;
  WeftTraceResult *res = x->res;
  uint32_t n_slots = t->ranks->len, last = WEFT_NONE;

  for (uint32_t s = 0; s < n_slots; s++)
    if (last == WEFT_NONE || res->end[s] > res->end[last])
      last = s;
  res->critical = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  res->critical_span = g_array_new (FALSE, FALSE, sizeof (WeftTime));
  if (last == WEFT_NONE)
    return;
  uint32_t on = last;
  for (uint32_t guard = 0; guard <= t->ops->len; guard++)
    {
      uint32_t i = weft_trace_op_of_slot (t, on);
      const WeftTraceOp *op = weft_trace_op (t, i);
      uint32_t gate = on;
      if (op->kind != WEFT_TRACE_COMPUTE && op->kind != WEFT_TRACE_SLEEP)
        for (uint32_t k = 0; k < op->n_ranks; k++)
          if (res->start[op->first_rank + k] > res->start[gate])
            gate = op->first_rank + k;
      WeftTime span[2] = { res->start[gate], res->end[on] };
      g_array_append_val (res->critical, i);
      if (op->kind == WEFT_TRACE_SEND || op->kind == WEFT_TRACE_RECV)
        {
          uint32_t other = weft_trace_op (t, op->match)->first_rank;
          if (res->start[other] > res->start[gate])
            {
              /* The other side came last: the transfer holds up the path
               * from then, and the path goes on from the other side. */
              span[0] = res->start[other];
              g_array_append_vals (res->critical_span, span, 2);
              span[1] = span[0];
              g_array_append_val (res->critical, op->match);
              gate = other;
            }
        }
      g_array_append_vals (res->critical_span, span, 2);
      if (x->pred[gate] == WEFT_NONE)
        break;
      on = x->pred[gate];
    }
  /* First to last. */
  for (guint a = 0, b = res->critical->len; a + 1 < b; a++, b--)
    {
      uint32_t tmp = g_array_index (res->critical, uint32_t, a);
      g_array_index (res->critical, uint32_t, a)
          = g_array_index (res->critical, uint32_t, b - 1);
      g_array_index (res->critical, uint32_t, b - 1) = tmp;
      WeftTime *s = (WeftTime *) res->critical_span->data;
      for (int e = 0; e < 2; e++)
        {
          WeftTime w = s[2 * a + e];
          s[2 * a + e] = s[2 * (b - 1) + e];
          s[2 * (b - 1) + e] = w;
        }
    }
}

/* Name what never finished: the first op (in the file) some rank reached
 * and others did not. */
static void
stuck (Runner *x, GError **error)
{
  const WeftTrace *t = x->t;
  const WeftTraceResult *res = x->res;

  for (uint32_t i = 0; i < t->ops->len; i++)
    {
      const WeftTraceOp *op = weft_trace_op (t, i);
      const WeftTraceJob *job = &g_array_index (t->jobs, WeftTraceJob, op->job);
      GString *missing = g_string_new (NULL), *waiting = g_string_new (NULL);
      gboolean reached = FALSE;
      uint32_t n = op->n_ranks, first = op->first_rank;
      const WeftTraceOp *other = NULL;
      if (op->kind == WEFT_TRACE_SEND || op->kind == WEFT_TRACE_RECV)
        other = weft_trace_op (t, op->match);
      for (uint32_t k = 0; k < n; k++)
        {
          uint32_t s = first + k;
          if (res->end[s] != WEFT_TIME_MAX)
            continue;
          if (res->start[s] != WEFT_TIME_MAX)
            reached = TRUE;
          else
            g_string_append_printf (missing, "%s%u", missing->len ? ", " : "",
                                    g_array_index (t->ranks, uint32_t, s)
                                        - job->first_rank);
        }
      if (other && res->start[other->first_rank] == WEFT_TIME_MAX)
        {
          g_string_append_printf (missing, "%s%u", missing->len ? ", " : "",
                                  g_array_index (t->ranks, uint32_t,
                                                 other->first_rank)
                                      - job->first_rank);
          g_string_append_printf (waiting, " (its %s '%s')",
                                  weft_trace_op_kind (other), other->name);
        }
      gboolean found = reached && missing->len > 0;
      g_autofree char *where = weft_trace_where (t, op);
      if (found)
        g_set_error (error, WEFT_TRACE_ERROR, WEFT_TRACE_ERROR_DEADLOCK, "%s: the trace never "
                     "finishes: %s '%s' waits for rank%s %s%s, which never "
                     "reach%s it: the ranks wait for each other in a circle",
                     where, weft_trace_op_kind (op),
                     op->name, strchr (missing->str, ',') ? "s" : "",
                     missing->str, waiting->str,
                     strchr (missing->str, ',') ? "" : "es");
      g_string_free (missing, TRUE);
      g_string_free (waiting, TRUE);
      if (found)
        return;
    }
  g_set_error (error, WEFT_TRACE_ERROR, WEFT_TRACE_ERROR_DEADLOCK, "%s: the trace never finishes",
               t->path);
}

void
weft_trace_result_clear (WeftTraceResult *r)
{
  g_free (r->start);
  g_free (r->end);
  g_free (r->algorithm);
  g_free (r->protocol);
  g_free (r->step);
  g_free (r->compute);
  g_free (r->exposed);
  if (r->critical)
    g_array_unref (r->critical);
  if (r->critical_span)
    g_array_unref (r->critical_span);
  weft_link_stats_free (r->stats);
  memset (r, 0, sizeof *r);
}

/* The send engines of the plans (weft_protocol_engines()), one kind for
 * each bound the plans take (a row of ll_bandwidth, NCCL's channels times
 * a channel's most, or both, over a protocol's efficiency), for every
 * GPU.  The links carry bytes on
 * the wire here (weft_exec_new()), so an engine's rate is the bound over
 * the protocol's efficiency. */
static void
add_engines (Runner *x, WeftNetwork *net)
{
  g_autoptr (GArray) bounds = g_array_new (FALSE, FALSE, sizeof (double));
  g_autoptr (GArray) kinds = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  const WeftTopology *topo = x->topo;

  for (guint i = 0; i < x->plans->len; i++)
    {
      Plan *plan = g_ptr_array_index (x->plans, i);
      if (plan->engine_row < 0 && plan->engine_cap <= 0)
        continue;
      /* The rate is over the efficiency: plans alike but for it differ. */
      double key[3] = { plan->engine_row, plan->engine_cap,
                        plan->costs.efficiency };
      guint k = 0;
      while (k < kinds->len
             && memcmp (&g_array_index (bounds, double, 3 * k), key,
                        sizeof key) != 0)
        k++;
      if (k == kinds->len)
        {
          g_autofree double *rate = g_new0 (double, MAX (topo->n_nodes, 1));
          for (uint32_t v = 0; v < topo->n_nodes; v++)
            rate[v] = weft_protocol_engine_rate (&topo->nodes[v],
                                                 plan->engine_row,
                                                 plan->engine_cap)
                      / plan->costs.efficiency;
          uint32_t kind = weft_network_add_engines (net, rate);
          g_array_append_vals (bounds, key, 3);
          g_array_append_val (kinds, kind);
        }
      plan->costs.engines = g_array_index (kinds, uint32_t, k);
    }
}

/* Simulate with the plans made. */
static gboolean
simulate (Runner *x, const WeftTraceOptions *options, GError **error)
{
  const WeftTrace *t = x->t;
  WeftTraceResult *res = x->res;
  uint32_t n_ops = t->ops->len, n_slots = t->ranks->len;
  uint32_t n_ranks = t->gpus->len;
  gboolean ok = FALSE;
  /* One network for every protocol: links move data at NCCL's model of
   * them (Simple's share); an op whose protocol moves less data per byte
   * on the wire sends proportionally more (weft_exec_new()). */
  WeftNetworkConfig config = {
    options->run.fidelity, options->run.bin_width, options->run.seed,
    options->protocol == WEFT_PROTOCOL_RAW ? 0 : 1.0,
  };
  g_autoptr (WeftSim) sim = weft_sim_new ();
  g_autoptr (WeftNetwork) net = weft_network_new (sim, x->topo, &config);

  add_engines (x, net);
  if (options->run.plain)
    weft_network_set_plain (net, options->run.plain);
  if (options->run.max_bins)
    weft_link_stats_set_budget (net->stats, options->run.max_bins);
  weft_sim_set_interrupt (sim, options->run.interrupt);
  x->sim = sim;
  x->net = net;
  x->instance = g_new0 (Instance *, MAX (n_ops, 1));
  x->remaining = g_new0 (uint32_t, MAX (n_slots, 1));
  x->pred = g_new (uint32_t, MAX (n_slots, 1));
  memset (x->pred, 0xff, MAX (n_slots, 1) * sizeof (uint32_t));
  uint32_t n_nodes = MAX (x->topo->n_nodes, 1);
  x->engine_free = g_new0 (WeftTime, n_nodes);
  x->engine_slot = g_new (uint32_t, n_nodes);
  memset (x->engine_slot, 0xff, n_nodes * sizeof (uint32_t));
  res->start = g_new (WeftTime, MAX (n_slots, 1));
  res->end = g_new (WeftTime, MAX (n_slots, 1));
  for (uint32_t s = 0; s < n_slots; s++)
    res->start[s] = res->end[s] = WEFT_TIME_MAX;
  res->step = g_new0 (WeftTime, MAX (n_ranks, 1));
  res->compute = g_new0 (WeftTime, MAX (n_ranks, 1));
  res->exposed = g_new0 (WeftTime, MAX (n_ranks, 1));
  build_edges (x);

  weft_sim_schedule (sim, 0, begin, x, NULL);
  weft_sim_run (sim);
  res->interrupted = weft_sim_interrupted (sim);
  res->events = weft_sim_events_run (sim);
  weft_network_flush_stats (net);
  for (uint32_t l = 0; l < x->topo->n_links; l++)
    res->links_used += net->stats->links[l].bytes > 0;
  for (uint32_t s = 0; s < n_slots; s++)
    if (res->end[s] != WEFT_TIME_MAX)
      res->time = MAX (res->time, res->end[s]);
  if (weft_network_failure (net) != NULL)
    g_set_error (error, WEFT_TRACE_ERROR, WEFT_TRACE_ERROR_CUT, "%s: %s",
                 t->path, weft_network_failure (net));
  else if (res->interrupted)
    {
      res->time = weft_sim_now (sim);
      ok = TRUE;
    }
  else if (x->done != n_slots)
    stuck (x, error);
  else
    {
      per_rank (x);
      critical_path (x);
      res->stats = g_steal_pointer (&net->stats);
      ok = TRUE;
    }

  /* Instances a stopped run left behind, each freed by the op that owns
   * it, once the ops that share it no longer need reading: an owner may
   * come before the others. */
  g_autofree gboolean *owns = g_new0 (gboolean, MAX (n_ops, 1));
  for (uint32_t i = 0; i < n_ops; i++)
    owns[i] = x->instance[i] && x->instance[i]->op == i;
  for (uint32_t i = 0; i < n_ops; i++)
    if (owns[i])
      {
        weft_exec_free (x->instance[i]->exec);
        g_free (x->instance[i]);
      }
  g_free (x->instance);
  g_free (x->remaining);
  g_free (x->pred);
  g_free (x->engine_free);
  g_free (x->engine_slot);
  g_free (x->out_start);
  g_free (x->out);
  return ok;
}

gboolean
weft_trace_run (const WeftTopology *topo, const WeftTrace *t,
                const WeftTraceOptions *options, WeftTraceResult *res,
                GError **error)
{
  Runner x = { 0 };
  uint32_t n_ops = t->ops->len;
  g_autoptr (GHashTable) cache = g_hash_table_new_full (
      g_bytes_hash, g_bytes_equal, (GDestroyNotify) g_bytes_unref, NULL);
  gboolean ok = TRUE;

  memset (res, 0, sizeof *res);
  x.topo = topo;
  x.t = t;
  x.res = res;
  x.options = options;
  x.plans = g_ptr_array_new_with_free_func ((GDestroyNotify) plan_free);
  x.plan_of = g_new0 (uint32_t, MAX (n_ops, 1));
  res->algorithm = g_new (int8_t, MAX (n_ops, 1));
  res->protocol = g_new (int8_t, MAX (n_ops, 1));
  memset (res->algorithm, -1, MAX (n_ops, 1));
  memset (res->protocol, -1, MAX (n_ops, 1));
  for (uint32_t i = 0; ok && i < n_ops; i++)
    {
      const WeftTraceOp *op = weft_trace_op (t, i);
      if (op->kind == WEFT_TRACE_COLLECTIVE)
        ok = plan_collective (&x, cache, i, options, error);
      else if (op->kind == WEFT_TRACE_SEND)
        plan_p2p (&x, cache, i, options);
      else
        continue;
      if (!ok)
        break;
      const Plan *p = g_ptr_array_index (x.plans, x.plan_of[i]);
      res->algorithm[i] = (int8_t) p->algorithm;
      res->protocol[i] = (int8_t) p->protocol;
      if (op->kind == WEFT_TRACE_SEND)
        {
          x.plan_of[op->match] = x.plan_of[i];
          res->protocol[op->match] = (int8_t) p->protocol;
        }
    }
  ok = ok && simulate (&x, options, error);
  g_ptr_array_unref (x.plans);
  g_free (x.plan_of);
  if (!ok)
    weft_trace_result_clear (res);
  return ok;
}
