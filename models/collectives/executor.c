/* weft: the executor.
 *
 * A step is a rank and its index among the rank's steps.  A step becomes
 * ready when its dependencies have finished.  A ready send waits the protocol's per-send latency, then
 * moves its bytes (inflated by the protocol's efficiency) over the network
 * and finishes when they have arrived; its receive finishes once it is
 * ready itself and the bytes are there.  The network it runs on moves data
 * at NCCL's model of each link (see WeftNetworkConfig.nccl).  A reduction
 * occupies its GPU's reduction engine for bytes / reduce_bandwidth, one
 * after another.
 *
 * A rank's steps wait for the rank to join (weft_exec_join()): a step with
 * no dependencies counts the join as one, so nothing of a rank, not even a
 * receive whose bytes are there, finishes before the rank has joined.
 *
 * A GPU's sends to one GPU on one tag are a connection, as NCCL's
 * channels connect to a peer: the receiver holds WEFT_CONNECTION_SLOTS
 * buffer slots for it, taken in turn, so the k-th send of a connection
 * also waits for the receive of the one WEFT_CONNECTION_SLOTS before it
 * to finish (its slot is then free).  weft_schedule_check() runs the same
 * rule, so that a checked schedule cannot wait forever for a slot.
 *
 * A receive that finishes grants a slot, a token, to the send that waits
 * for it.  Receives of a connection mostly finish in turn, so each
 * connection counts the tokens granted in turn, and a send checks its
 * own against that count; only a token that comes out of turn, or a send
 * ready before its token, takes a place among the waiting steps. */
#include "collectives/executor.h"

#include <math.h>
#include <string.h>

#include "memory.h"
#include "topology/faults.h"

/* A step of a template, as the executor runs it.  Ranks whose steps are
 * the same but for whom they talk to share one template, their peers
 * named by the rank's slots (WeftExecImage.peers): a ring's ranks all
 * share one, so the image grows with the steps of one rank, not of all. */
typedef struct {
  uint64_t bytes;
  uint32_t peer;                /* the rank's slot of its peer and tag */
  uint32_t pair;                /* the step it pairs with, on the peer */
  uint32_t out;                 /* its dependents: out[out .. next step's) */
  uint16_t n_deps;
  uint8_t kind;                 /* WeftStepKind */
  uint8_t slotted;              /* a send that waits for a slot (see
                                   above), else 0 */
} TStep;

G_STATIC_ASSERT (sizeof (TStep) == 24 && WEFT_STEP_MAX_DEPS <= UINT16_MAX);

typedef struct {
  TStep *steps;                 /* n_steps, and one past the last */
  uint32_t *out;                /* dependents, by step */
  uint32_t *ordinal;            /* per step: a send's place among its
                                   connection's, or WEFT_NONE (a step that
                                   is no send between GPUs) */
  uint32_t *frees;              /* per step: for a send, the send whose
                                   slot its receive frees, or WEFT_NONE */
  uint32_t *roots;              /* steps that wait for nothing (but the
                                   rank's join) and neither are receives
                                   nor wait for a slot */
  uint32_t n_steps, n_roots, n_peers;
  uint64_t hash;
  uint64_t bytes_sent;
} Template;

/* A hash table of entries of `size` bytes that begin with their 64-bit
 * key: open addressing, linear probing, at most half full. */
typedef struct {
  unsigned char *slot;
  size_t size;
  uint64_t mask;
  uint64_t used;
} Table;

struct _WeftExecImage {
  uint32_t n_ranks, n_gpus;
  uint32_t added;               /* ranks given so far */
  GPtrArray *templates;         /* Template *, in the order first used */
  uint32_t *template_of;        /* per rank */
  uint32_t *peer_start;         /* per rank, into peers, and one past */
  GArray *peers;                /* uint32_t: each rank's peers, by slot: a
                                   slot is a peer and a tag, so a peer on
                                   two tags fills two */
  GHashTable *index;            /* while ranks are added: Template * to
                                   its number + 1 */
  Table slot_of;                /* while ranks are added: SlotOf, scratch */
  uint64_t total;               /* steps of all ranks */
  uint64_t bytes_sent;
  size_t bytes;                 /* held by templates and ranks */
};

/* Per rank, in one cache line. */
#define PEER_SLOTS 8
typedef struct {
  WeftTime engine_free;         /* when its reduction engine is free */
  const Template *t;
  const uint32_t *peers;        /* by slot */
  uint32_t left;                /* instances: unfinished steps */
  uint32_t peer[PEER_SLOTS];    /* recent peers (by a hash of the peer)... */
  uint8_t hop[PEER_SLOTS];      /* ...and what a send's route crosses, as an
                                   index into Exec.hop */
  uint8_t joined;
} XRank;

G_STATIC_ASSERT (sizeof (XRank) <= 72);

/* A step of a run is (rank, step), one 64-bit key: events carry it as
 * their data. */
G_STATIC_ASSERT (sizeof (void *) >= sizeof (uint64_t));
#define KEY(r, i) (((uint64_t) (r) << 32) | (i))
#define KEY_RANK(k) ((uint32_t) ((k) >> 32))
#define KEY_STEP(k) ((uint32_t) (k))
#define KEY_DATA(k) ((void *) (uintptr_t) (k))
#define DATA_KEY(d) ((uint64_t) (uintptr_t) (d))
#define NO_KEY UINT64_MAX

/* The state of a step that has begun to wait: some dependencies finished
 * and not all, or a receive whose bytes came first (a send whose slot was
 * freed first), or one ready before they came.  Every other step is as
 * the template has it, or finished: so a run holds the steps in progress,
 * not all of them. */
typedef struct {
  uint64_t key;                 /* NO_KEY: free */
  uint16_t remaining;           /* unfinished dependencies */
  uint8_t arrived;              /* a receive's bytes are there, a
                                   send's slot is free */
} Waiting;

/* While an image is made: a rank's slot of a peer and tag, and, if the
 * peer is a GPU, its sends so far and the last WEFT_CONNECTION_SLOTS of
 * them. */
typedef struct {
  uint64_t key;                 /* peer << 32 | tag */
  uint32_t slot;
  uint32_t sends;
  uint32_t last[WEFT_CONNECTION_SLOTS];
} SlotOf;

struct _WeftExec {
  WeftNetwork *net;
  uint32_t n_ranks;
  const uint32_t *gpus;
  WeftProtocol protocol;
  WeftTime hop[4];              /* its latency a send: NVLink, PCIe, network,
                                   and none between two switches */
  WeftEventFn done;             /* weft_execute(): when all is done */
  WeftRankFn rank_done;         /* instances (weft_exec_new(): ranks join
                                   one by one): when each rank is done */
  void *target, *data;

  WeftExecImage *own;           /* the image, if not shared */
  const WeftExecImage *image;
  XRank *ranks;
  Table wait;                   /* Waiting */
  uint32_t *granted;            /* per connection (a rank's slot, as
                                   WeftExecImage.peers numbers them): the
                                   tokens granted in turn so far */
  uint32_t *pending;            /* ...and its sends in `wait` that have
                                   their token, or are ready without it */
  GArray **early;               /* instances: per rank not yet joined, the
                                   receives with no dependencies whose bytes
                                   came, and such sends whose slots were
                                   freed (uint32_t steps), or NULL */
  uint64_t total, finished;
  WeftTime *spans;              /* the caller's: per rank, first and last */
  double inflate;               /* instances: bytes on the wire per byte */
};

typedef struct _WeftExec Exec;

static void finish (Exec *x, uint32_t r, uint32_t i);

/* The key's home slot: the rank is the high half of the key, so the bits
 * are mixed through before the low ones are kept. */
static inline uint64_t
wait_hash (uint64_t key)
{
  key ^= key >> 31;
  key *= 0x9e3779b97f4a7c15ull;
  return key ^ (key >> 32);
}

static inline uint64_t *
table_key (const Table *t, uint64_t i)
{
  return (uint64_t *) (void *) (t->slot + i * t->size);
}

static void
table_init (Table *t, size_t size, uint64_t n)
{
  t->slot = g_malloc (n * size);
  t->size = size;
  t->mask = n - 1;
  t->used = 0;
  for (uint64_t i = 0; i < n; i++)
    *table_key (t, i) = NO_KEY;
}

static void *
table_find (const Table *t, uint64_t key)
{
  for (uint64_t i = wait_hash (key) & t->mask;; i = (i + 1) & t->mask)
    {
      uint64_t *k = table_key (t, i);
      if (*k == key)
        return k;
      if (*k == NO_KEY)
        return NULL;
    }
}

static void table_put (Table *t, const void *entry);

static void
table_grow (Table *t)
{
  Table old = *t;

  table_init (t, old.size, 2 * (old.mask + 1));
  for (uint64_t i = 0; i <= old.mask; i++)
    if (*table_key (&old, i) != NO_KEY)
      table_put (t, table_key (&old, i));
  g_free (old.slot);
}

static void
table_put (Table *t, const void *entry)
{
  if (2 * (t->used + 1) > t->mask + 1)
    table_grow (t);
  uint64_t key = *(const uint64_t *) entry;
  uint64_t i = wait_hash (key) & t->mask;
  while (*table_key (t, i) != NO_KEY)
    i = (i + 1) & t->mask;
  memcpy (table_key (t, i), entry, t->size);
  t->used++;
}

/* Empty @t, keeping its room (which a rank with many slots grew). */
static void
table_clear (Table *t)
{
  for (uint64_t i = 0; i <= t->mask; i++)
    *table_key (t, i) = NO_KEY;
  t->used = 0;
}

/* Remove @e, moving back the entries after it that probed past it. */
static void
table_remove (Table *t, void *e)
{
  uint64_t hole = (uint64_t) ((unsigned char *) e - t->slot) / t->size;

  for (uint64_t i = (hole + 1) & t->mask; *table_key (t, i) != NO_KEY;
       i = (i + 1) & t->mask)
    {
      uint64_t home = wait_hash (*table_key (t, i)) & t->mask;
      /* Whether home lies cyclically in (hole, i]: if not, the entry may
       * move into the hole. */
      if (((i - home) & t->mask) >= ((i - hole) & t->mask))
        {
          memcpy (table_key (t, hole), table_key (t, i), t->size);
          hole = i;
        }
    }
  *table_key (t, hole) = NO_KEY;
  t->used--;
}

static void
exec_free (Exec *x)
{
  weft_exec_image_free (x->own);
  if (x->early)
    for (uint32_t r = 0; r < x->n_ranks; r++)
      if (x->early[r])
        g_array_unref (x->early[r]);
  g_free (x->early);
  g_free (x->wait.slot);
  g_free (x->granted);
  g_free (x->pending);
  g_free (x->ranks);
  g_free (x);
}

void
weft_exec_free (WeftExec *x)
{
  if (x != NULL)
    exec_free (x);
}

static inline const TStep *
step_of (const Exec *x, uint32_t r, uint32_t i)
{
  return &x->ranks[r].t->steps[i];
}

static inline uint32_t
peer_of (const Exec *x, uint32_t r, const TStep *step)
{
  return x->ranks[r].peers[step->peer];
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
  uint64_t key = DATA_KEY (data);
  (void) sim;

  finish (target, KEY_RANK (key), KEY_STEP (key));
}

/* Which of the protocol's latencies (Exec.hop) a send from @a to @b pays,
 * by what its route crosses; none from a switch to a switch, which passes
 * an in-network reduction on in hardware, where NCCL's software is not. */
static uint8_t
send_hop (Exec *x, uint32_t a, uint32_t b)
{
  const WeftNode *nodes = x->net->topo->nodes;

  if (nodes[a].kind == WEFT_NODE_SWITCH && nodes[b].kind == WEFT_NODE_SWITCH)
    return 3;
  uint32_t crosses = weft_network_crosses (x->net, a, b);

  return (crosses & WEFT_CROSSES_NETWORK) ? 2
         : (crosses & WEFT_CROSSES_PCIE)  ? 1
                                          : 0;
}

static void ready (Exec *x, uint32_t r, uint32_t i);

/* What step @i of rank @r, which waited for its dependencies and for
 * something else, does once it has both: a receive finishes, a send that
 * waited for its slot is ready. */
static inline void
go (Exec *x, uint32_t r, uint32_t i)
{
  if (step_of (x, r, i)->kind == WEFT_STEP_RECV)
    finish (x, r, i);
  else
    ready (x, r, i);
}

/* Step @i of rank @r, which waits for nothing of its rank, has what it
 * waited for from elsewhere: it goes, or once its rank has joined. */
static void
go_when_joined (Exec *x, uint32_t r, uint32_t i)
{
  if (x->ranks[r].joined)
    {
      go (x, r, i);
      return;
    }
  /* Before its rank has joined: it goes when the rank does. */
  if (x->early[r] == NULL)
    x->early[r] = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  g_array_append_val (x->early[r], i);
}

/* Receive @i of rank @r has its bytes. */
static void
arrive (Exec *x, uint32_t r, uint32_t i)
{
  const TStep *step = step_of (x, r, i);
  uint64_t key = KEY (r, i);

  if (step->n_deps == 0)
    {
      go_when_joined (x, r, i);
      return;
    }
  Waiting *w = table_find (&x->wait, key);
  if (w == NULL)
    table_put (&x->wait, &(Waiting) { key, step->n_deps, TRUE });
  else if (w->remaining == 0)
    {
      table_remove (&x->wait, w);
      finish (x, r, i);
    }
  else
    w->arrived = TRUE;
}

/* The connection of send @step of rank @r. */
static inline uint32_t
connection (const Exec *x, uint32_t r, const TStep *step)
{
  return x->image->peer_start[r] + step->peer;
}

/* Whether slotted send @i of rank @r has its token in turn. */
static inline gboolean
slot_in_turn (const Exec *x, uint32_t r, uint32_t i)
{
  const Template *t = x->ranks[r].t;

  return t->ordinal[i] - WEFT_CONNECTION_SLOTS
         < x->granted[connection (x, r, &t->steps[i])];
}

/* The receive of send @send of rank @r, its connection's @g-th, has
 * finished: its token goes to the send WEFT_CONNECTION_SLOTS after it. */
static void
grant (Exec *x, uint32_t r, uint32_t send, uint32_t g)
{
  const Template *t = x->ranks[r].t;
  uint32_t c = connection (x, r, &t->steps[send]);
  uint32_t s = t->frees[send];

  if (g == x->granted[c])
    {
      x->granted[c]++;
      if (s == WEFT_NONE)
        return;
      if (t->steps[s].n_deps == 0)
        {
          go_when_joined (x, r, s);
          return;
        }
      /* Ready before its token, it waits as its connection's. */
      Waiting *w = x->pending[c] ? table_find (&x->wait, KEY (r, s)) : NULL;
      if (w != NULL && w->remaining == 0)
        {
          table_remove (&x->wait, w);
          x->pending[c]--;
          ready (x, r, s);
        }
      return;
    }
  /* Out of turn: the send keeps it. */
  if (s == WEFT_NONE)
    return;
  if (t->steps[s].n_deps == 0)
    {
      go_when_joined (x, r, s);
      return;
    }
  Waiting *w = table_find (&x->wait, KEY (r, s));
  if (w == NULL)
    {
      table_put (&x->wait, &(Waiting) { KEY (r, s), t->steps[s].n_deps,
                                        TRUE });
      x->pending[c]++;
    }
  else if (w->remaining == 0)
    {
      table_remove (&x->wait, w);
      x->pending[c]--;
      ready (x, r, s);
    }
  else
    {
      w->arrived = TRUE;
      x->pending[c]++;
    }
}

static void
send_arrived (WeftSim *sim, void *target, void *data)
{
  Exec *x = target;
  uint64_t key = DATA_KEY (data);
  uint32_t r = KEY_RANK (key), i = KEY_STEP (key);
  const TStep *step = step_of (x, r, i);
  uint32_t peer = peer_of (x, r, step), recv = step->pair;
  (void) sim;

  finish (x, r, i);
  arrive (x, peer, recv);
}

/* Start send @key's transfer. */
static void
start_send (Exec *x, uint64_t key)
{
  uint32_t r = KEY_RANK (key);
  const TStep *step = step_of (x, r, KEY_STEP (key));
  uint64_t bytes = step->bytes;

  if (x->inflate > 1)
    bytes = (uint64_t) ceil ((double) bytes * x->inflate);
  weft_network_use_engines (x->net, x->protocol.engines);
  weft_network_transfer_places (x->net, x->gpus, x->gpus[r],
                                x->gpus[peer_of (x, r, step)], bytes, 0,
                                send_arrived, x, KEY_DATA (key));
}

/* Sends started at once, at most, and how far ahead of a send each stage
 * of what its transfer reads is fetched (see weft_network_prefetch()):
 * stage s SEND_AHEAD - 2 s sends ahead. */
#define SEND_BATCH 16
#define SEND_AHEAD 8

static inline void
prefetch_send (Exec *x, uint64_t key, int stage)
{
  uint32_t r = KEY_RANK (key);
  const TStep *step = step_of (x, r, KEY_STEP (key));

  weft_network_prefetch (x->net, weft_place_node (x->gpus, x->gpus[r]),
                         weft_place_node (x->gpus,
                                          x->gpus[peer_of (x, r, step)]),
                         stage);
}

static void
send_start (WeftSim *sim, void *target, void *data)
{
  Exec *x = target;
  uint64_t batch[SEND_BATCH];
  uint32_t n = 1;
  void *next;

  /* Ranks send together in a collective's lockstep instants, and at scale
   * what each transfer reads (its route, its links) is a cache miss: the
   * sends that come next, at this time, are taken up with this one (in
   * the order they would have run), and what each will read is fetched,
   * stage by stage, while the sends before it start. */
  batch[0] = DATA_KEY (data);
  while (n < SEND_BATCH && weft_sim_take (sim, send_start, x, &next))
    batch[n++] = DATA_KEY (next);
  if (!x->net->deep)
    {
      /* A loop of its own, so that a shallow network's sends do not pay
       * for the test of depth and the prefetches they do not need. */
      for (uint32_t i = 0; i < n; i++)
        start_send (x, batch[i]);
      return;
    }
  G_STATIC_ASSERT (SEND_AHEAD >= 2 * (WEFT_PREFETCH_STAGES - 1));
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

/* Send @i of rank @r has its dependencies and its slot: it starts after
 * its latency. */
static void
send_ready (Exec *x, uint32_t r, uint32_t i)
{
  XRank *rank = &x->ranks[r];
  /* A rank sends to the same few peers many times (each piece of each
   * step). */
  uint32_t peer = peer_of (x, r, step_of (x, r, i));
  uint32_t slot = (peer * 0x9e3779b1u) >> 29;

  if (rank->peer[slot] != peer)
    {
      rank->peer[slot] = peer;
      rank->hop[slot] = send_hop (x, weft_place_node (x->gpus, x->gpus[r]),
                                  weft_place_node (x->gpus, x->gpus[peer]));
    }
  weft_sim_schedule (x->net->sim, x->hop[rank->hop[slot]], send_start, x,
                     KEY_DATA (KEY (r, i)));
}

/* Step @i of rank @r, not a receive, has no dependency left (and a send
 * its slot). */
static void
ready (Exec *x, uint32_t r, uint32_t i)
{
  const TStep *step = step_of (x, r, i);
  XRank *rank = &x->ranks[r];
  WeftSim *sim = x->net->sim;
  uint64_t key = KEY (r, i);

  switch (step->kind)
    {
    case WEFT_STEP_SEND:
      send_ready (x, r, i);
      break;
    case WEFT_STEP_RECV:
      g_assert_not_reached ();
    case WEFT_STEP_REDUCE:
      {
        const WeftNode *gpu
            = &x->net->topo->nodes[weft_place_node (x->gpus, x->gpus[r])];
        WeftTime now = weft_sim_now (sim);
        if (step->bytes == 0)
          {
            /* Nothing to add (a switch's too): a join of its
             * dependencies, at once. */
            weft_sim_schedule_at (sim, now, step_finished, x, KEY_DATA (key));
            break;
          }
        if (gpu->kind == WEFT_NODE_SWITCH)
          {
            weft_network_reduce_places (x->net, x->gpus, x->gpus[r],
                                        step->bytes, step_finished, x,
                                        KEY_DATA (key));
            break;
          }
        WeftTime start = MAX (now, rank->engine_free);
        /* A straggler (a fault) reduces at its share of the rate. */
        const WeftTopology *topo = x->net->topo;
        WeftTime end
            = G_UNLIKELY (topo->compute_windows)
                  ? weft_faults_compute_end (
                        topo, weft_place_node (x->gpus, x->gpus[r]), start,
                        (double) step->bytes * 1e12
                            / gpu->device->reduce_bandwidth)
                  : start + (WeftTime) ceil ((double) step->bytes * 1e12
                                             / (gpu->device->reduce_bandwidth
                                                * gpu->compute));
        rank->engine_free = end;
        weft_sim_schedule_at (sim, end, step_finished, x, KEY_DATA (key));
        break;
      }
    }
}

/* A dependency of send @i of rank @r, which waits for a slot, has
 * finished. */
static void
slotted_depended (Exec *x, uint32_t r, uint32_t i)
{
  const TStep *step = step_of (x, r, i);
  uint64_t key = KEY (r, i);
  uint32_t c = connection (x, r, step);
  /* None of its connection's sends waits with its token or for it: it has
   * no place among the waiting unless its dependencies have. */
  Waiting *w = step->n_deps == 1 && x->pending[c] == 0
                   ? NULL
                   : table_find (&x->wait, key);

  if (w == NULL)
    {
      if (step->n_deps > 1)
        table_put (&x->wait, &(Waiting) { key, step->n_deps - 1, FALSE });
      else if (slot_in_turn (x, r, i))
        ready (x, r, i);
      else
        {
          table_put (&x->wait, &(Waiting) { key, 0, FALSE });
          x->pending[c]++;
        }
      return;
    }
  if (--w->remaining > 0)
    return;
  if (w->arrived)
    {
      table_remove (&x->wait, w);
      x->pending[c]--;
      ready (x, r, i);
    }
  else if (slot_in_turn (x, r, i))
    {
      table_remove (&x->wait, w);
      ready (x, r, i);
    }
  else
    x->pending[c]++;
}

/* A dependency of step @i of rank @r has finished. */
static void
depended (Exec *x, uint32_t r, uint32_t i)
{
  const TStep *step = step_of (x, r, i);
  uint64_t key = KEY (r, i);

  if (step->kind != WEFT_STEP_RECV && !step->slotted)
    {
      if (step->n_deps == 1)
        {
          ready (x, r, i);
          return;
        }
      Waiting *w = table_find (&x->wait, key);
      if (w == NULL)
        table_put (&x->wait, &(Waiting) { key, step->n_deps - 1, FALSE });
      else if (--w->remaining == 0)
        {
          table_remove (&x->wait, w);
          ready (x, r, i);
        }
      return;
    }
  if (step->kind != WEFT_STEP_RECV)
    {
      slotted_depended (x, r, i);
      return;
    }
  /* A receive finishes once it is ready and its bytes are there. */
  Waiting *w = table_find (&x->wait, key);
  if (w == NULL)
    table_put (&x->wait, &(Waiting) { key, step->n_deps - 1, FALSE });
  else if (--w->remaining == 0 && w->arrived)
    {
      table_remove (&x->wait, w);
      finish (x, r, i);
    }
}

static void
finish (Exec *x, uint32_t r, uint32_t i)
{
  const Template *t = x->ranks[r].t;

  if (x->spans)
    x->spans[2 * r + 1] = MAX (x->spans[2 * r + 1],
                               weft_sim_now (x->net->sim));
  if (t->steps[i].kind == WEFT_STEP_RECV)
    {
      /* Its slot is free for the send that waits for it. */
      uint32_t sender = peer_of (x, r, &t->steps[i]);
      uint32_t send = t->steps[i].pair;
      uint32_t g = x->ranks[sender].t->ordinal[send];
      if (g != WEFT_NONE)
        grant (x, sender, send, g);
    }
  for (uint32_t e = t->steps[i].out; e < t->steps[i + 1].out; e++)
    depended (x, r, t->out[e]);
  ++x->finished;
  if (x->rank_done && --x->ranks[r].left == 0)
    /* The owner may free the instance then: not from inside this call. */
    weft_sim_schedule (x->net->sim, 0, rank_finished, x,
                       GUINT_TO_POINTER (r));
  if (x->done && x->finished == x->total)
    weft_sim_schedule (x->net->sim, 0, all_done, x, NULL);
}

static int
by_step (const void *a, const void *b)
{
  uint32_t x = *(const uint32_t *) a, y = *(const uint32_t *) b;

  return (x > y) - (x < y);
}

/* Rank @r's steps may start: those waiting for nothing else become ready,
 * in the order of its steps, receives whose bytes came first with them. */
static void
start_rank (Exec *x, uint32_t r)
{
  XRank *rank = &x->ranks[r];
  const Template *t = rank->t;

  rank->joined = TRUE;
  if (x->rank_done && rank->left == 0)
    {
      weft_sim_schedule (x->net->sim, 0, rank_finished, x,
                         GUINT_TO_POINTER (r));
      return;
    }
  /* A rank's first step waits for nothing: the rank starts with it. */
  if (x->spans && t->n_steps > 0)
    x->spans[2 * r] = MIN (x->spans[2 * r], weft_sim_now (x->net->sim));
  g_autoptr (GArray) early = g_steal_pointer (&x->early[r]);
  uint32_t n_early = early ? early->len : 0, e = 0;
  if (early)
    g_array_sort (early, by_step);
  for (uint32_t j = 0; j < t->n_roots || e < n_early;)
    {
      uint32_t root = j < t->n_roots ? t->roots[j] : UINT32_MAX;
      uint32_t got = e < n_early ? g_array_index (early, uint32_t, e)
                                 : UINT32_MAX;
      if (root < got)
        {
          ready (x, r, root);
          j++;
        }
      else
        {
          go (x, r, got);
          e++;
        }
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

/* ---- images ---- */

static void
template_free (gpointer data)
{
  Template *t = data;

  g_free (t->steps);
  g_free (t->out);
  g_free (t->frees);
  g_free (t->ordinal);
  g_free (t->roots);
  g_free (t);
}

static size_t
template_memory (const Template *t)
{
  return sizeof *t + ((size_t) t->n_steps + 1) * sizeof (TStep)
         + ((size_t) t->steps[t->n_steps].out + t->n_roots + 2 * t->n_steps)
               * sizeof (uint32_t);
}

static guint
template_hash (gconstpointer data)
{
  return (guint) ((const Template *) data)->hash;
}

static gboolean
template_equal (gconstpointer a_, gconstpointer b_)
{
  const Template *a = a_, *b = b_;

  return a->hash == b->hash && a->n_steps == b->n_steps
         && a->n_peers == b->n_peers
         && memcmp (a->steps, b->steps,
                    ((size_t) a->n_steps + 1) * sizeof (TStep)) == 0
         && memcmp (a->out, b->out,
                    (size_t) a->steps[a->n_steps].out * sizeof (uint32_t))
                == 0;
}

/* A 64-bit hash of @n words, continuing @h. */
static uint64_t
hash_words (uint64_t h, const uint64_t *w, size_t n)
{
  for (size_t i = 0; i < n; i++)
    {
      h ^= w[i];
      h *= 0x9e3779b97f4a7c15ull;
      h ^= h >> 29;
    }
  return h;
}

WeftExecImage *
weft_exec_image_start (uint32_t n_ranks, uint32_t n_gpus)
{
  WeftExecImage *m = g_new0 (WeftExecImage, 1);

  m->n_ranks = n_ranks;
  m->n_gpus = n_gpus;
  m->templates = g_ptr_array_new_with_free_func (template_free);
  m->template_of = g_new0 (uint32_t, MAX (n_ranks, 1));
  m->peer_start = g_new0 (uint32_t, (size_t) n_ranks + 1);
  m->peers = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  m->index = g_hash_table_new (template_hash, template_equal);
  table_init (&m->slot_of, sizeof (SlotOf), 64);
  return m;
}

void
weft_exec_image_add_rank (WeftExecImage *m, const WeftSchedule *s,
                          uint32_t r)
{
  uint32_t n = s->n_steps[r];
  const uint32_t *matches = weft_schedule_matches (s, r);
  Template *t = g_new0 (Template, 1);

  g_assert (r == m->added && r < m->n_ranks && (matches != NULL || n == 0));
  t->n_steps = n;
  t->steps = g_new0 (TStep, (size_t) n + 1);
  t->frees = g_new (uint32_t, MAX (n, 1));
  t->ordinal = g_new (uint32_t, MAX (n, 1));
  /* Peers by slot, a slot for each peer and tag, in the order the rank
   * first names them. */
  uint32_t first_peer = m->peers->len;
  uint64_t deps = 0;
  for (uint32_t i = 0; i < n; i++)
    {
      const WeftStep *step = weft_schedule_step (s, r, i);
      TStep *ts = &t->steps[i];
      ts->bytes = step->bytes;
      ts->kind = step->kind;
      ts->n_deps = step->n_deps;
      ts->pair = matches[i] == WEFT_NO_STEP ? WEFT_NONE : matches[i];
      t->frees[i] = t->ordinal[i] = WEFT_NONE;
      if (step->kind != WEFT_STEP_REDUCE)
        {
          uint64_t conn = (uint64_t) step->peer << 32 | step->tag;
          SlotOf *known = table_find (&m->slot_of, conn);
          if (known == NULL)
            {
              table_put (&m->slot_of,
                         &(SlotOf) { conn, m->peers->len - first_peer, 0,
                                     { 0 } });
              g_array_append_val (m->peers, step->peer);
              known = table_find (&m->slot_of, conn);
            }
          ts->peer = known->slot;
          if (step->kind == WEFT_STEP_SEND)
            {
              t->bytes_sent += step->bytes;
              if (r < m->n_gpus && step->peer < m->n_gpus)
                {
                  /* The send a slot before it frees one for it. */
                  uint32_t *last
                      = &known->last[known->sends % WEFT_CONNECTION_SLOTS];
                  t->ordinal[i] = known->sends;
                  if (known->sends++ >= WEFT_CONNECTION_SLOTS)
                    {
                      t->frees[*last] = i;
                      ts->slotted = 1;
                    }
                  *last = i;
                }
            }
        }
      for (uint32_t d = 0; d < step->n_deps; d++)
        t->steps[weft_schedule_dep (s, step, d) + 1].out++;
      deps += step->n_deps;
      t->n_roots += step->n_deps == 0 && step->kind != WEFT_STEP_RECV
                    && !ts->slotted;
    }
  t->n_peers = m->peers->len - first_peer;
  table_clear (&m->slot_of);
  /* Dependents in the order of the rank's steps, as they become ready:
   * each step k + 1's `out` serves as k's cursor. */
  for (uint32_t i = 0; i < n; i++)
    t->steps[i + 1].out += t->steps[i].out;
  t->out = g_new (uint32_t, MAX (deps, 1));
  t->roots = g_new (uint32_t, MAX (t->n_roots, 1));
  uint32_t roots = 0;
  for (uint32_t i = 0; i < n; i++)
    {
      const WeftStep *step = weft_schedule_step (s, r, i);
      for (uint32_t d = 0; d < step->n_deps; d++)
        {
          uint32_t on = weft_schedule_dep (s, step, d);
          t->out[t->steps[on].out++] = i;
        }
      if (step->n_deps == 0 && step->kind != WEFT_STEP_RECV
          && !t->steps[i].slotted)
        t->roots[roots++] = i;
    }
  /* Each k's cursor ended where k + 1's dependents start. */
  for (uint32_t i = n; i > 0; i--)
    t->steps[i].out = t->steps[i - 1].out;
  t->steps[0].out = 0;
  t->hash = hash_words (n * 0x100000001b3ull + t->n_peers,
                        (const uint64_t *) t->steps,
                        ((size_t) n + 1) * sizeof (TStep) / sizeof (uint64_t));
  for (uint64_t k = 0; k + 1 < deps; k += 2)
    t->hash = hash_words (t->hash, &(uint64_t) { t->out[k]
                                                 | (uint64_t) t->out[k + 1]
                                                       << 32 }, 1);
  if (deps % 2)
    t->hash = hash_words (t->hash, &(uint64_t) { t->out[deps - 1] }, 1);

  gpointer id = g_hash_table_lookup (m->index, t);
  if (id != NULL)
    {
      template_free (t);
      m->template_of[r] = GPOINTER_TO_UINT (id) - 1;
    }
  else
    {
      m->template_of[r] = m->templates->len;
      g_ptr_array_add (m->templates, t);
      g_hash_table_insert (m->index, t, GUINT_TO_POINTER (m->templates->len));
      m->bytes += template_memory (t);
    }
  t = g_ptr_array_index (m->templates, m->template_of[r]);
  m->peer_start[r + 1] = m->peers->len;
  m->total += n;
  m->bytes_sent += t->bytes_sent;
  m->added++;
}

void
weft_exec_image_add_alike (WeftExecImage *m, uint32_t r, uint32_t like,
                           const uint32_t *peers, uint32_t n_peers)
{
  const Template *t = g_ptr_array_index (m->templates, m->template_of[like]);

  g_assert (r == m->added && r < m->n_ranks && like < r
            && n_peers == t->n_peers);
  m->template_of[r] = m->template_of[like];
  g_array_append_vals (m->peers, peers, n_peers);
  m->peer_start[r + 1] = m->peers->len;
  m->total += t->n_steps;
  m->bytes_sent += t->bytes_sent;
  m->added++;
}

/* Done adding ranks: what only the adding needed goes. */
static void
image_seal (WeftExecImage *m)
{
  g_assert (m->added == m->n_ranks);
  g_clear_pointer (&m->index, g_hash_table_unref);
  g_clear_pointer (&m->slot_of.slot, g_free);
}

WeftExecImage *
weft_exec_image_new (const WeftSchedule *s)
{
  WeftExecImage *m = weft_exec_image_start (s->n_ranks, s->n_gpus);

  for (uint32_t r = 0; r < s->n_ranks; r++)
    weft_exec_image_add_rank (m, s, r);
  image_seal (m);
  return m;
}

WeftExecImage *
weft_exec_image_finish (WeftExecImage *m)
{
  image_seal (m);
  return m;
}

gboolean
weft_exec_image_equal (const WeftExecImage *a, const WeftExecImage *b)
{
  if (a->n_ranks != b->n_ranks || a->n_gpus != b->n_gpus
      || a->total != b->total || a->peers->len != b->peers->len
      || memcmp (a->peer_start, b->peer_start,
                 ((size_t) a->n_ranks + 1) * sizeof (uint32_t)) != 0
      || memcmp (a->peers->data, b->peers->data,
                 (size_t) a->peers->len * sizeof (uint32_t)) != 0)
    return FALSE;
  for (uint32_t r = 0; r < a->n_ranks; r++)
    if (!template_equal (g_ptr_array_index (a->templates, a->template_of[r]),
                         g_ptr_array_index (b->templates, b->template_of[r])))
      return FALSE;
  return TRUE;
}

uint32_t
weft_exec_image_ranks (const WeftExecImage *m)
{
  return m->n_ranks;
}

uint32_t
weft_exec_image_gpus (const WeftExecImage *m)
{
  return m->n_gpus;
}

uint32_t
weft_exec_image_templates (const WeftExecImage *m)
{
  return m->templates->len;
}

uint64_t
weft_exec_image_bytes_sent (const WeftExecImage *m)
{
  return m->bytes_sent;
}

size_t
weft_exec_image_bytes (uint64_t steps, uint64_t deps, uint64_t peers,
                       uint32_t n_ranks)
{
  /* As weft_exec_image_memory() counts them, with every step a root and
   * every rank a template of its own; the peers' list grows by doubling. */
  return sizeof (WeftExecImage) + (size_t) n_ranks * (3 * sizeof (uint32_t)
                                                      + sizeof (Template)
                                                      + sizeof (TStep))
         + steps * (sizeof (TStep) + 3 * sizeof (uint32_t))
         + (MAX (deps, 1) + 2 * peers) * sizeof (uint32_t);
}

size_t
weft_exec_run_bytes (uint64_t waiting, uint32_t n_ranks, uint64_t peers)
{
  /* The table of waiting steps at most half full, and doubled once more
   * as it grows past that; and each connection's tokens. */
  uint64_t slots = 64;
  while (slots < 4 * MAX (waiting, 1))
    slots *= 2;
  return sizeof (Exec) + (size_t) n_ranks * (sizeof (XRank) + sizeof (GArray *))
         + slots * sizeof (Waiting) + 2 * MAX (peers, 1) * sizeof (uint32_t);
}

size_t
weft_exec_image_memory (const WeftExecImage *m)
{
  return sizeof *m + m->bytes
         + ((size_t) m->n_ranks * 2 + 1) * sizeof (uint32_t)
         + (size_t) m->peers->len * sizeof (uint32_t);
}

void
weft_exec_image_free (WeftExecImage *m)
{
  if (m == NULL)
    return;
  g_ptr_array_unref (m->templates);
  g_free (m->template_of);
  g_free (m->peer_start);
  g_array_unref (m->peers);
  if (m->index)
    g_hash_table_unref (m->index);
  g_free (m->slot_of.slot);
  g_free (m);
}

/* An executor on @net that runs @image, shared with other runs, or, if
 * @own is given instead, @own (it frees @own). */
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
  x->hop[3] = 0;
  if (own != NULL)
    image = x->own = own;
  g_assert (image->index == NULL);
  x->image = image;
  x->protocol.base += protocol->per_rank * image->n_gpus;
  x->total = image->total;
  x->n_ranks = image->n_ranks;
  x->ranks = g_new0 (XRank, MAX (x->n_ranks, 1));
  x->early = g_new0 (GArray *, MAX (x->n_ranks, 1));
  for (uint32_t r = 0; r < x->n_ranks; r++)
    {
      XRank *rank = &x->ranks[r];
      rank->t = g_ptr_array_index (image->templates, image->template_of[r]);
      rank->peers = &g_array_index (image->peers, uint32_t,
                                    image->peer_start[r]);
      rank->left = rank->t->n_steps;
      for (int i = 0; i < PEER_SLOTS; i++)
        rank->peer[i] = WEFT_NONE;
    }
  table_init (&x->wait, sizeof (Waiting), 64);
  x->granted = g_new0 (uint32_t, MAX (image->peers->len, 1));
  x->pending = g_new0 (uint32_t, MAX (image->peers->len, 1));
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
weft_exec_new (WeftNetwork *net, const WeftExecImage *image,
               const uint32_t *nodes, const WeftProtocol *protocol,
               WeftRankFn rank_done, void *target)
{
  Exec *x = exec_new (net, image, NULL, nodes, protocol);

  x->rank_done = rank_done;
  x->target = target;
  x->inflate = 1 / protocol->efficiency;
  return x;
}
