/* weft: the executor.
 *
 * Steps are numbered globally.  A step becomes ready when its dependencies
 * have finished.  A ready send waits the protocol's per-send latency, then
 * moves its bytes (inflated by the protocol's efficiency) over the network
 * and finishes when they have arrived; its receive finishes once it is
 * ready itself and the bytes are there.  The network it runs on moves data
 * at NCCL's model of each link (see WeftNetworkConfig.nccl).  A reduction occupies its GPU's
 * reduction engine for bytes / reduce_bandwidth, one after another.
 *
 * A rank's steps wait for the rank to join (weft_exec_join()): a step with
 * no dependencies counts the join as one, so nothing of a rank, not even a
 * receive whose bytes are there, finishes before the rank has joined. */
#include "collectives/executor.h"

#include <math.h>
#include <string.h>

#include "memory.h"

/* A step as the executor runs it: what it needs of the schedule's step and
 * its own state, together, so that taking a step up touches one record. */
typedef struct {
  uint64_t bytes;
  uint32_t peer;                /* rank, for sends and receives */
  uint32_t pair;                /* global index of the step it pairs with */
  uint32_t out;                 /* its dependents: out[out .. next step's) */
  uint16_t remaining;           /* unfinished dependencies */
  uint8_t kind;                 /* WeftStepKind */
  uint8_t arrived;              /* a receive's bytes are there */
} XStep;

/* 24 bytes, its rank found from its place (rank_of()): a large run's image
 * holds billions of steps. */
G_STATIC_ASSERT (sizeof (XStep) == 24 && WEFT_STEP_MAX_DEPS <= UINT16_MAX);

/* Per rank, in one cache line. */
#define PEER_SLOTS 8
typedef struct {
  WeftTime engine_free;         /* when its reduction engine is free */
  uint32_t left;                /* instances: unfinished steps */
  uint32_t peer[PEER_SLOTS];    /* recent peers (by a hash of the peer)... */
  uint8_t hop[PEER_SLOTS];      /* ...and what a send's route crosses, as an
                                   index into Exec.hop */
  uint8_t unused[12];           /* to one cache line */
} XRank;

G_STATIC_ASSERT (sizeof (XRank) == 64);

/* How an image numbers the steps globally: level by level, every rank's
 * first step in rank order, then every rank's second, and so on, as far as
 * every rank has steps (rank r's step i is i * n_ranks + r); past them,
 * each rank's remaining steps one after another, rank r's from rest[r].
 * In a collective's lockstep instants the ranks take up their steps of one
 * level together, in order, so their records are visited in the order of
 * memory. */
typedef struct {
  uint32_t levels, n_ranks;
  uint32_t *rest;
  uint32_t leveled;             /* steps in the levels: levels * n_ranks */
  uint64_t magic;               /* for step % n_ranks: see rank_of() */
  uint32_t *rest_rank;          /* the rank of each step past them */
} Numbering;

static inline uint32_t
number (const Numbering *n, uint32_t r, uint32_t i)
{
  return i < n->levels ? i * n->n_ranks + r : n->rest[r] + (i - n->levels);
}

/* The rank of global step @k: in the levels, k modulo the ranks, by a
 * multiplication (Lemire, Kaser and Kurz, "Faster remainder by direct
 * computation", 2019) instead of a division. */
static inline uint32_t
rank_of (const Numbering *n, uint32_t k)
{
  if (k < n->leveled)
    return (uint32_t) (((unsigned __int128) (n->magic * k) * n->n_ranks)
                       >> 64);
  return n->rest_rank[k - n->leveled];
}

/* What the executor makes of a schedule before it runs it: the same for
 * every run of the schedule, so it can be made once and shared. */
struct _WeftExecImage {
  Numbering num;
  XStep *steps;                 /* global steps, as they start, and one past
                                   the last */
  uint32_t *out;                /* dependents, by global step */
  uint32_t *roots;              /* steps that wait for nothing (but the
                                   rank's join), rank by rank, in order... */
  uint32_t *root_start;         /* ...rank r's from root_start[r] */
  uint32_t total;
};

struct _WeftExec {
  WeftNetwork *net;
  uint32_t n_ranks;
  const uint32_t *gpus;
  WeftProtocol protocol;
  WeftTime hop[3];              /* its latency a send: NVLink, PCIe, network */
  WeftEventFn done;             /* weft_execute(): when all is done */
  WeftRankFn rank_done;         /* instances (weft_exec_new(): ranks join
                                   one by one): when each rank is done */
  void *target, *data;

  WeftExecImage *own;           /* the image, if not shared */
  const Numbering *num;         /* the image's */
  XStep *steps;                 /* global steps, and one past the last */
  const uint32_t *out;          /* the image's */
  const WeftExecImage *image;
  XRank *ranks;
  uint32_t total, finished;
  WeftTime *spans;              /* the caller's: per rank, first and last */
  double inflate;               /* instances: bytes on the wire per byte */
};

typedef struct _WeftExec Exec;

static void finish (Exec *x, uint32_t k);

static void
exec_free (Exec *x)
{
  weft_exec_image_free (x->own);
  g_free (x->steps);
  g_free (x->ranks);
  g_free (x);
}

void
weft_exec_free (WeftExec *x)
{
  if (x != NULL)
    exec_free (x);
}

static void
rank_finished (WeftSim *sim, void *target, void *data)
{
  Exec *x = target;

  x->rank_done (sim, x->target, GPOINTER_TO_UINT (data));
}

static void
all_done (WeftSim *sim, void *target, void *data)
{
  Exec *x = target;
  (void) data;

  x->done (sim, x->target, x->data);
}

static void
step_finished (WeftSim *sim, void *target, void *data)
{
  (void) sim;
  finish (target, GPOINTER_TO_UINT (data));
}

/* Which of the protocol's latencies (Exec.hop) a send from @a to @b pays,
 * by what its route crosses. */
static uint8_t
send_hop (Exec *x, uint32_t a, uint32_t b)
{
  uint32_t crosses = weft_network_crosses (x->net, a, b);

  return (crosses & WEFT_CROSSES_NETWORK) ? 2
         : (crosses & WEFT_CROSSES_PCIE)  ? 1
                                          : 0;
}

/* If the next event is @fn of this executor too, fetch its step's record
 * while this one runs (steps finish together in lockstep instants, and at
 * scale each record is a cache miss). */
static void
fetch_next (Exec *x, WeftEventFn fn)
{
  WeftEventFn next_fn;
  void *next_target, *next_data;

  if (weft_sim_peek (x->net->sim, &next_fn, &next_target, &next_data)
      && next_fn == fn && next_target == x)
    __builtin_prefetch (&x->steps[GPOINTER_TO_UINT (next_data)]);
}

static void
send_arrived (WeftSim *sim, void *target, void *data)
{
  Exec *x = target;
  uint32_t k = GPOINTER_TO_UINT (data);
  uint32_t recv = x->steps[k].pair;
  (void) sim;

  fetch_next (x, send_arrived);

  finish (x, k);
  x->steps[recv].arrived = TRUE;
  if (x->steps[recv].remaining == 0)
    finish (x, recv);
}

/* Start send step @k's transfer. */
static void
start_send (Exec *x, uint32_t k)
{
  const XStep *step = &x->steps[k];
  uint64_t bytes = step->bytes;

  if (x->inflate > 1)
    bytes = (uint64_t) ceil ((double) bytes * x->inflate);
  weft_network_transfer_places (x->net, x->gpus, x->gpus[rank_of (x->num, k)],
                                x->gpus[step->peer], bytes, 0, send_arrived, x,
                                GUINT_TO_POINTER (k));
}

/* Sends started at once, at most, and how far ahead of a send each stage
 * of what its transfer reads is fetched (see weft_network_prefetch()):
 * stage s SEND_AHEAD - 2 s sends ahead. */
#define SEND_BATCH 16
#define SEND_AHEAD 8

static inline void
prefetch_send (Exec *x, uint32_t k, int stage)
{
  const XStep *step = &x->steps[k];

  weft_network_prefetch (x->net,
                         weft_place_node (x->gpus, x->gpus[rank_of (x->num, k)]),
                         weft_place_node (x->gpus, x->gpus[step->peer]),
                         stage);
}

static void
send_start (WeftSim *sim, void *target, void *data)
{
  Exec *x = target;
  uint32_t batch[SEND_BATCH], n = 1;
  void *next;

  /* Ranks send together in a collective's lockstep instants, and at scale
   * what each transfer reads (its step, its route, its links) is a cache
   * miss: the sends that come next, at this time, are taken up with this
   * one (in the order they would have run), and what each will read is
   * fetched, stage by stage, while the sends before it start. */
  batch[0] = GPOINTER_TO_UINT (data);
  while (n < SEND_BATCH && weft_sim_take (sim, send_start, x, &next))
    batch[n++] = GPOINTER_TO_UINT (next);
  if (!x->net->deep)
    {
      /* A loop of its own, so that a shallow network's sends do not pay
       * for the test of depth and the prefetches they do not need. */
      for (uint32_t i = 0; i < n; i++)
        start_send (x, batch[i]);
      return;
    }
  G_STATIC_ASSERT (SEND_AHEAD >= 2 * (WEFT_PREFETCH_STAGES - 1));
  for (uint32_t i = 1; i < n; i++)
    __builtin_prefetch (&x->steps[batch[i]]);
  for (uint32_t i = 1; i < MIN (n, SEND_AHEAD); i++)
    prefetch_send (x, batch[i], 0);
  for (uint32_t i = 0; i < n; i++)
    {
      for (int stage = 0; stage < WEFT_PREFETCH_STAGES; stage++)
        {
          uint32_t ahead = SEND_AHEAD - 2 * (uint32_t) stage;
          if (i + ahead < n)
            prefetch_send (x, batch[i + ahead], stage);
        }
      start_send (x, batch[i]);
    }
}

static void
ready (Exec *x, uint32_t k)
{
  const XStep *step = &x->steps[k];
  uint32_t r = rank_of (x->num, k);
  XRank *rank = &x->ranks[r];
  WeftSim *sim = x->net->sim;

  if (x->spans)
    x->spans[2 * r] = MIN (x->spans[2 * r], weft_sim_now (sim));

  switch (step->kind)
    {
    case WEFT_STEP_SEND:
      {
        /* A rank sends to the same few peers many times (each piece of
         * each step). */
        uint32_t slot = (step->peer * 0x9e3779b1u) >> 29;
        if (rank->peer[slot] != step->peer)
          {
            rank->peer[slot] = step->peer;
            rank->hop[slot] = send_hop (
                x, weft_place_node (x->gpus, x->gpus[r]),
                weft_place_node (x->gpus, x->gpus[step->peer]));
          }
        weft_sim_schedule (sim, x->hop[rank->hop[slot]], send_start, x,
                           GUINT_TO_POINTER (k));
        break;
      }
    case WEFT_STEP_RECV:
      if (step->arrived)
        finish (x, k);
      break;
    case WEFT_STEP_REDUCE:
      {
        const WeftNode *gpu
            = &x->net->topo->nodes[weft_place_node (x->gpus, x->gpus[r])];
        if (gpu->kind == WEFT_NODE_SWITCH)
          {
            weft_network_reduce_places (x->net, x->gpus, x->gpus[r],
                                        step->bytes, step_finished, x,
                                        GUINT_TO_POINTER (k));
            break;
          }
        WeftTime now = weft_sim_now (sim);
        if (step->bytes == 0)
          {
            /* Nothing to add: a join of its dependencies, at once. */
            weft_sim_schedule_at (sim, now, step_finished, x,
                                  GUINT_TO_POINTER (k));
            break;
          }
        WeftTime start = MAX (now, rank->engine_free);
        /* A straggler (a fault) reduces at its share of the rate. */
        WeftTime end = start + (WeftTime) ceil ((double) step->bytes * 1e12
                                                / (gpu->device->reduce_bandwidth
                                                   * gpu->compute));
        rank->engine_free = end;
        weft_sim_schedule_at (sim, end, step_finished, x, GUINT_TO_POINTER (k));
        break;
      }
    }
}

static void
finish (Exec *x, uint32_t k)
{
  uint32_t r = rank_of (x->num, k);

  if (x->spans)
    x->spans[2 * r + 1] = MAX (x->spans[2 * r + 1],
                               weft_sim_now (x->net->sim));
  for (uint32_t e = x->steps[k].out; e < x->steps[k + 1].out; e++)
    if (--x->steps[x->out[e]].remaining == 0)
      ready (x, x->out[e]);
  ++x->finished;
  if (x->rank_done && --x->ranks[r].left == 0)
    /* The owner may free the instance then: not from inside this call. */
    weft_sim_schedule (x->net->sim, 0, rank_finished, x,
                       GUINT_TO_POINTER (r));
  if (x->done && x->finished == x->total)
    weft_sim_schedule (x->net->sim, 0, all_done, x, NULL);
}

/* Rank @r's steps may start: those waiting for nothing else become ready. */
static void
start_rank (Exec *x, uint32_t r)
{
  if (x->rank_done && x->ranks[r].left == 0)
    {
      weft_sim_schedule (x->net->sim, 0, rank_finished, x,
                         GUINT_TO_POINTER (r));
      return;
    }
  const WeftExecImage *m = x->image;
  for (uint32_t j = m->root_start[r]; j < m->root_start[r + 1]; j++)
    {
      uint32_t k = m->roots[j];
      if (--x->steps[k].remaining == 0)
        ready (x, k);
    }
}

static void
rank_begins (WeftSim *sim, void *target, void *data)
{
  (void) sim;
  start_rank (target, GPOINTER_TO_UINT (data));
}

void
weft_exec_join (WeftExec *x, uint32_t rank)
{
  g_assert (rank < x->n_ranks);
  weft_sim_schedule (x->net->sim, x->protocol.base, rank_begins, x,
                     GUINT_TO_POINTER (rank));
}

static void
begin (WeftSim *sim, void *target, void *data)
{
  Exec *x = target;
  (void) sim, (void) data;

  if (x->total == 0)
    {
      weft_sim_schedule (x->net->sim, 0, all_done, x, NULL);
      return;
    }
  for (uint32_t r = 0; r < x->n_ranks; r++)
    start_rank (x, r);
}

/* Making an image visits the steps a tile at a time: IMAGE_TILE levels of
 * IMAGE_TILE ranks, each rank's steps in order (or in reverse) inside the
 * tile, then each rank's steps past the levels.  What the image's lists
 * need is that each rank's steps come in order, and tiles read the
 * schedule's steps (rank by rank) and write the image's (level by level) a
 * few cache lines and pages at a time: rank by rank alone, every record
 * written would be a level apart, a miss each. */
#define IMAGE_TILE 32

/* Rank @r's step @i into the image: its record, its count among its
 * dependencies' dependents, and among the rank's roots. */
static inline void
image_step (WeftExecImage *m, const WeftSchedule *s, const Numbering *num,
            uint32_t r, uint32_t i)
{
  const WeftStep *step = weft_schedule_step (s, r, i);
  uint32_t match = weft_schedule_matches (s, r)[i];
  uint32_t k = number (num, r, i);
  XStep *xs = &m->steps[k];

  if (k >= num->leveled)
    num->rest_rank[k - num->leveled] = r;
  xs->bytes = step->bytes;
  xs->peer = step->peer;
  xs->kind = (uint8_t) step->kind;
  xs->remaining = (uint16_t) MAX (step->n_deps, 1);
  xs->pair = match == WEFT_NO_STEP ? WEFT_NONE
                                   : number (num, step->peer, match);
  for (uint32_t d = 0; d < step->n_deps; d++)
    m->steps[number (num, r, weft_schedule_dep (s, step, d)) + 1].out++;
  if (step->n_deps == 0)
    m->root_start[r + 1]++;
}

/* Rank @r's step @i among its dependencies' dependents, or its rank's
 * roots, placed from the back. */
static inline void
image_links (WeftExecImage *m, const WeftSchedule *s, const Numbering *num,
             uint32_t r, uint32_t i, uint32_t *root_end)
{
  const WeftStep *step = weft_schedule_step (s, r, i);
  uint32_t k = number (num, r, i);

  for (uint32_t d = step->n_deps; d-- > 0;)
    {
      uint32_t from = number (num, r, weft_schedule_dep (s, step, d));
      m->out[--m->steps[from + 1].out] = k;
    }
  if (step->n_deps == 0)
    m->roots[--root_end[r]] = k;
}

/* Several threads make an image by each taking the steps of its share of
 * the ranks: a step's record, its count of dependents (in the next record,
 * of whatever rank) and its place among them are touched only by the
 * thread of its rank, so the image is the same however many make it. */
#define IMAGE_THREADS 8

typedef struct {
  WeftExecImage *m;
  const WeftSchedule *s;
  const Numbering *num;
  uint32_t r_lo, r_hi;          /* its ranks */
  uint32_t *root_end;           /* for image_lists() */
} ImagePart;

/* Part @p's records and counts: image_step() over its ranks, tile by tile. */
static gpointer
image_steps (gpointer data)
{
  const ImagePart *p = data;
  const Numbering *num = p->num;

  for (uint32_t l0 = 0; l0 < num->levels; l0 += IMAGE_TILE)
    for (uint32_t r0 = p->r_lo; r0 < p->r_hi; r0 += IMAGE_TILE)
      for (uint32_t r = r0; r < MIN (r0 + IMAGE_TILE, p->r_hi); r++)
        for (uint32_t i = l0; i < MIN (l0 + IMAGE_TILE, num->levels); i++)
          image_step (p->m, p->s, num, r, i);
  for (uint32_t r = p->r_lo; r < p->r_hi; r++)
    for (uint32_t i = num->levels; i < p->s->n_steps[r]; i++)
      image_step (p->m, p->s, num, r, i);
  return NULL;
}

/* Part @p's lists: image_links() over its ranks, each rank's steps in
 * reverse. */
static gpointer
image_lists (gpointer data)
{
  const ImagePart *p = data;
  const Numbering *num = p->num;

  for (uint32_t r = p->r_hi; r-- > p->r_lo;)
    for (uint32_t i = p->s->n_steps[r]; i-- > num->levels;)
      image_links (p->m, p->s, num, r, i, p->root_end);
  for (uint32_t l0 = num->levels; l0 > 0; l0 -= MIN (l0, IMAGE_TILE))
    for (uint32_t r0 = p->r_hi; r0 > p->r_lo;
         r0 -= MIN (r0 - p->r_lo, IMAGE_TILE))
      for (uint32_t r = r0; r-- > r0 - MIN (r0 - p->r_lo, IMAGE_TILE);)
        for (uint32_t i = l0; i-- > l0 - MIN (l0, IMAGE_TILE);)
          image_links (p->m, p->s, num, r, i, p->root_end);
  return NULL;
}

/* Run @fn over @n parts, the first in this thread. */
static void
image_parts (ImagePart *parts, uint32_t n, GThreadFunc fn)
{
  GThread *threads[IMAGE_THREADS];

  for (uint32_t t = 1; t < n; t++)
    threads[t] = g_thread_new ("weft-image", fn, &parts[t]);
  fn (&parts[0]);
  for (uint32_t t = 1; t < n; t++)
    g_thread_join (threads[t]);
}

WeftExecImage *
weft_exec_image_new (const WeftSchedule *s)
{
  return weft_exec_image_new_threads (s, 1);
}

gboolean
weft_exec_image_equal (const WeftExecImage *a, const WeftExecImage *b)
{
  uint32_t n = a->num.n_ranks;

  return a->total == b->total && n == b->num.n_ranks
         && a->num.levels == b->num.levels
         && memcmp (a->num.rest, b->num.rest, n * sizeof (uint32_t)) == 0
         && memcmp (a->num.rest_rank, b->num.rest_rank,
                    (a->total - a->num.leveled) * sizeof (uint32_t)) == 0
         && memcmp (a->steps, b->steps,
                    ((size_t) a->total + 1) * sizeof (XStep)) == 0
         && memcmp (a->out, b->out,
                    (size_t) a->steps[a->total].out * sizeof (uint32_t)) == 0
         && memcmp (a->root_start, b->root_start,
                    ((size_t) n + 1) * sizeof (uint32_t)) == 0
         && memcmp (a->roots, b->roots,
                    (size_t) a->root_start[n] * sizeof (uint32_t)) == 0;
}

WeftExecImage *
weft_exec_image_new_threads (const WeftSchedule *s, uint32_t threads)
{
  WeftExecImage *m = g_new0 (WeftExecImage, 1);

  g_assert (s->matches != NULL);
  /* The levels every rank has (all of them, for most collectives). */
  Numbering num = { .levels = G_MAXUINT32, .n_ranks = s->n_ranks,
                    .rest = g_new (uint32_t, MAX (s->n_ranks, 1)) };
  for (uint32_t r = 0; r < s->n_ranks; r++)
    num.levels = MIN (num.levels, s->n_steps[r]);
  if (s->n_ranks == 0)
    num.levels = 0;
  uint64_t total = (uint64_t) num.levels * s->n_ranks;
  for (uint32_t r = 0; r < s->n_ranks; r++)
    {
      num.rest[r] = (uint32_t) total;
      total += s->n_steps[r] - num.levels;
      g_assert (total < G_MAXUINT32);
    }
  m->total = (uint32_t) total;
  num.leveled = num.levels * s->n_ranks;
  num.magic = G_MAXUINT64 / MAX (s->n_ranks, 1) + 1;
  num.rest_rank = g_new (uint32_t, MAX (total - num.leveled, 1));

  /* Steps, counting each one's dependents into the next step's `out`.  A
   * large image is written into memory never touched before: see
   * weft_memory_reserve(). */
  size_t steps_bytes = (total + 1) * sizeof (XStep);
  size_t out_bytes = (size_t) s->n_deps * sizeof (uint32_t);
  if (steps_bytes + out_bytes >= WEFT_MEMORY_HUGE)
    weft_memory_reserve (steps_bytes + out_bytes);
  m->steps = g_new0 (XStep, total + 1);
  weft_memory_advise (m->steps, steps_bytes);
  m->root_start = g_new0 (uint32_t, s->n_ranks + 1);
  ImagePart parts[IMAGE_THREADS];
  uint32_t n_parts = CLAMP (MIN (threads, s->n_ranks), 1, IMAGE_THREADS);
  for (uint32_t t = 0; t < n_parts; t++)
    parts[t] = (ImagePart) { m, s, &num, (uint64_t) s->n_ranks * t / n_parts,
                             (uint64_t) s->n_ranks * (t + 1) / n_parts, NULL };
  image_parts (parts, n_parts, image_steps);
  for (uint32_t r = 0; r < s->n_ranks; r++)
    m->root_start[r + 1] += m->root_start[r];
  m->roots = g_new (uint32_t, MAX (m->root_start[s->n_ranks], 1));
  for (uint32_t k = 0; k < total; k++)
    m->steps[k + 1].out += m->steps[k].out;
  uint32_t n_out = m->steps[total].out;
  m->out = g_new (uint32_t, MAX (n_out, 1));
  weft_memory_advise (m->out, (size_t) n_out * sizeof (uint32_t));
  /* A step's dependents in the order of the rank's steps, as they become
   * ready in that order: placed from the back, each rank's steps taken in
   * reverse, each step k + 1's `out` (the end of k's dependents) serving as
   * k's cursor, without an array of cursors as long as the steps.  A
   * rank's roots likewise, from the end of its share. */
  g_autofree uint32_t *root_end = g_memdup2 (m->root_start + 1,
                                             s->n_ranks * sizeof (uint32_t));
  for (uint32_t t = 0; t < n_parts; t++)
    parts[t].root_end = root_end;
  image_parts (parts, n_parts, image_lists);
  /* Step k + 1's `out` is now where k's dependents start. */
  for (uint32_t k = 0; k < total; k++)
    m->steps[k].out = m->steps[k + 1].out;
  m->steps[total].out = n_out;
  m->num = num;
  return m;
}

size_t
weft_exec_image_bytes (uint64_t steps, uint64_t deps, uint32_t n_ranks)
{
  /* As weft_exec_image_memory() counts them, with every step past the
   * levels and every step a root: the most they can be. */
  return sizeof (WeftExecImage) + ((size_t) n_ranks * 2 + 1) * sizeof (uint32_t)
         + steps * (2 * sizeof (uint32_t) + sizeof (XStep)) + sizeof (XStep)
         + MAX (deps, 1) * sizeof (uint32_t);
}

size_t
weft_exec_run_bytes (uint64_t steps, uint32_t n_ranks)
{
  return sizeof (Exec) + (size_t) n_ranks * sizeof (XRank)
         + (steps + 1) * sizeof (XStep);
}

size_t
weft_exec_image_memory (const WeftExecImage *m)
{
  return sizeof *m + ((size_t) m->num.n_ranks * 2 + 1) * sizeof (uint32_t)
         + (size_t) (m->total - m->num.leveled) * sizeof (uint32_t)
         + (size_t) m->root_start[m->num.n_ranks] * sizeof (uint32_t)
         + ((size_t) m->total + 1) * sizeof (XStep)
         + (size_t) MAX (m->steps[m->total].out, 1) * sizeof (uint32_t);
}

void
weft_exec_image_free (WeftExecImage *m)
{
  if (m == NULL)
    return;
  g_free (m->num.rest);
  g_free (m->num.rest_rank);
  g_free (m->roots);
  g_free (m->root_start);
  g_free (m->steps);
  g_free (m->out);
  g_free (m);
}

/* An executor on @net that runs a copy of @image's steps, shared with
 * other runs, or, if @own is given instead, @own's steps themselves (it
 * frees @own). */
static Exec *
exec_new (WeftNetwork *net, const WeftExecImage *image, WeftExecImage *own,
          const uint32_t *gpus, const WeftProtocol *protocol)
{
  Exec *x = g_new0 (Exec, 1);

  x->net = net;
  x->gpus = gpus;
  x->protocol = *protocol;
  x->hop[0] = protocol->hop_nvlink;
  x->hop[1] = protocol->hop_pcie;
  x->hop[2] = protocol->hop_network;
  if (own != NULL)
    {
      /* An image of its own: its steps are the run's, not a copy. */
      x->own = own;
      x->steps = g_steal_pointer (&own->steps);
      image = own;
    }
  else
    x->steps = g_memdup2 (image->steps, ((size_t) image->total + 1)
                                            * sizeof (XStep));
  x->num = &image->num;
  x->image = image;
  x->out = image->out;
  x->total = image->total;
  x->n_ranks = image->num.n_ranks;
  x->ranks = g_new0 (XRank, MAX (x->n_ranks, 1));
  for (uint32_t r = 0; r < x->n_ranks; r++)
    for (int i = 0; i < PEER_SLOTS; i++)
      x->ranks[r].peer[i] = WEFT_NONE;
  return x;
}

/* Start @x: weft_execute() and the like. */
static void
exec_start (Exec *x, WeftTime *spans, WeftEventFn done, void *target,
            void *data)
{
  WeftNetwork *net = x->net;

  x->spans = spans;
  for (uint32_t r = 0; spans && r < x->n_ranks; r++)
    {
      spans[2 * r] = WEFT_TIME_MAX;
      spans[2 * r + 1] = 0;
    }
  /* The network frees it, so that a run stopped early leaks nothing. */
  weft_network_adopt (net, x, (GDestroyNotify) exec_free);
  x->done = done;
  x->target = target;
  x->data = data;
  weft_sim_schedule (net->sim, x->protocol.base, begin, x, NULL);
}

void
weft_execute (WeftNetwork *net, const WeftSchedule *s, const uint32_t *gpus,
              const WeftProtocol *protocol, WeftTime *spans, WeftEventFn done,
              void *target, void *data)
{
  weft_execute_own (net, weft_exec_image_new (s), gpus, protocol, spans, done,
                    target, data);
}

void
weft_execute_image (WeftNetwork *net, const WeftExecImage *image,
                    const uint32_t *gpus, const WeftProtocol *protocol,
                    WeftTime *spans, WeftEventFn done, void *target,
                    void *data)
{
  exec_start (exec_new (net, image, NULL, gpus, protocol), spans, done,
              target, data);
}

void
weft_execute_own (WeftNetwork *net, WeftExecImage *image,
                  const uint32_t *gpus, const WeftProtocol *protocol,
                  WeftTime *spans, WeftEventFn done, void *target, void *data)
{
  exec_start (exec_new (net, NULL, image, gpus, protocol), spans, done,
              target, data);
}

WeftExec *
weft_exec_new (WeftNetwork *net, const WeftSchedule *s, const uint32_t *nodes,
               const WeftProtocol *protocol, WeftRankFn rank_done,
               void *target)
{
  Exec *x = exec_new (net, NULL, weft_exec_image_new (s), nodes, protocol);

  x->rank_done = rank_done;
  x->target = target;
  x->inflate = 1 / protocol->efficiency;
  for (uint32_t r = 0; r < s->n_ranks; r++)
    x->ranks[r].left = s->n_steps[r];
  return x;
}
