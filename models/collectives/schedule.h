/* weft: schedules.  A collective algorithm does not talk to the network: it
 * produces, for each rank, a DAG of steps (send bytes to a rank, receive
 * from a rank, reduce locally, reduce in a switch), and one executor runs
 * any schedule over any fidelity.
 *
 * Sends and receives pair up in order: the k-th send from rank a to rank b
 * on tag t matches the k-th receive on b from a with tag t. */
#pragma once

#include <glib.h>
#include <stdint.h>

G_BEGIN_DECLS

typedef enum {
  WEFT_STEP_SEND,               /* bytes to rank `peer` */
  WEFT_STEP_RECV,               /* bytes from rank `peer` */
  WEFT_STEP_REDUCE,             /* bytes through the rank's reduction: a
                                   GPU's own, or a switch's in-network
                                   reduction when the rank is a switch */
} WeftStepKind;

/* Buffer slots a GPU holds for each connection from a GPU (the sender's
 * sends to it on one tag), as NCCL's NCCL_STEPS (src/include/device.h)
 * slots of a channel's buffer: the k-th send of a connection between GPUs
 * also waits for the receive of the send this many before it to finish.
 * The executor runs it so and weft_schedule_check() checks it. */
#define WEFT_CONNECTION_SLOTS 8

/* At most this many dependencies a step. */
#define WEFT_STEP_MAX_DEPS 65535

/* 24 bytes: a large run's schedule holds billions of steps. */
typedef struct {
  uint64_t bytes;
  uint32_t peer;                /* rank, for sends and receives */
  uint32_t tag;                 /* channel: matching is per (peer, tag) */
  uint32_t first_dep;           /* into the schedule's dependency pool */
  uint16_t n_deps;              /* steps of the same rank that must finish */
  uint8_t kind;                 /* WeftStepKind */
} WeftStep;

typedef struct _WeftSchedule WeftSchedule;

/* Where a streaming schedule hands each rank's steps (weft_schedule_new_
 * streaming()). */
typedef void (*WeftRankSink) (void *sink, const WeftSchedule *s,
                              uint32_t rank);
/* ...and where it says a rank does as an earlier one did but for its
 * peers (weft_schedule_flush_alike()). */
typedef void (*WeftAlikeSink) (void *sink, uint32_t rank, uint32_t like,
                               const uint32_t *peers, uint32_t n_peers);

struct _WeftSchedule {
  uint32_t n_ranks;             /* all ranks, switches included */
  uint32_t n_gpus;              /* ranks 0 .. n_gpus - 1 are GPUs; the rest
                                   are switches that reduce (NVLS, SHARP) */
  WeftStep **steps;             /* per rank: its steps... */
  uint32_t *n_steps;            /* ...how many... */
  uint32_t *steps_cap;          /* ...and room for how many */
  uint32_t *deps;               /* step indices, pooled */
  uint32_t n_deps, deps_cap;
  uint32_t **matches;           /* per rank, per step: the paired step */
  uint64_t n_ends;              /* sends and receives */
  uint64_t n_matched;           /* pairs the builder gave (weft_schedule_match()) */
  size_t grown;                 /* bytes its steps, pairs and dependencies
                                   have been given... */
  size_t room;                  /* ...and from how many the heap is readied
                                   for more (weft_memory_reserve()) */
  gboolean counting;            /* weft_schedule_new_counting(): steps and
                                   dependencies are counted, not kept... */
  uint64_t counted_steps;       /* ...here, as many as there may be */
  uint64_t counted_deps;
  uint32_t counted_tags;        /* one past the highest tag of a send */
  uint64_t counted_roots;       /* sends that wait for no step */
  uint32_t counted_ahead;       /* while counting, a builder whose sends
                                   of a tag do not wait for each other: how
                                   many of a tag a rank may have under way
                                   at once (0: one) */
  uint64_t counted_fan_out;     /* the most sends of switch ranks on one
                                   tag: a switch that reduces sends each
                                   piece to every GPU at once */
  GArray *fan_out;              /* uint64_t per tag, while counting */
  gboolean counted_reserved;    /* the builder made room ahead (its lists
                                   are as long as they need be) */
  uint32_t counted_classes;     /* while counting, a builder that streams:
                                   how many ranks' steps differ but for
                                   their peers, at most (0: every rank's) */
  uint64_t counted_rank_steps;  /* ...and the most steps and dependencies */
  uint64_t counted_rank_deps;   /* of one rank */
  uint64_t counted_peers;       /* ...and the peers of all ranks */
  WeftRankSink sink;            /* streaming: where ranks' steps go... */
  WeftAlikeSink alike;
  void *sink_data;
  uint64_t **offsets;           /* weft_schedule_track_regions(): per
                                   rank, per step, where in the rank's
                                   buffer its bytes lie (UINT64_MAX: not
                                   said); else NULL */
  uint32_t *offsets_cap;
  GArray *region_lists;         /* uint64_t: for a step whose bytes lie in
                                   several places, its offset is
                                   WEFT_REGION_LIST | i, and here from i a
                                   count, then each place's offset and
                                   length */
  gboolean streamed;            /* ...and whether the builder sent them
                                   there (else they are here) */
};

WeftSchedule *weft_schedule_new (uint32_t n_ranks);

/* A schedule that only counts what a builder gives it, in counted_steps
 * and counted_deps (n_steps, n_ends and n_matched grow as they would,
 * n_deps does not), and keeps nothing else, so that what a schedule will
 * take is known before it is made.  A builder that writes steps itself
 * (weft_schedule_add_at()) checks `counting` and counts instead; nothing
 * may read its steps. */
WeftSchedule *weft_schedule_new_counting (uint32_t n_ranks);
void weft_schedule_free (WeftSchedule *schedule);

/* A schedule that a builder may stream: a builder that makes every step of
 * one rank before the next rank's, in rank order, pairing each send and
 * receive as it goes (weft_schedule_add_at()), hands each rank's steps to
 * @sink once they are made and forgets them (weft_schedule_flush()), so
 * that the schedule never holds more than one rank's.  A builder that
 * cannot leaves the steps in the schedule, as weft_schedule_new() would. */
WeftSchedule *weft_schedule_new_streaming (uint32_t n_ranks, WeftRankSink sink,
                                           WeftAlikeSink alike,
                                           void *sink_data);

/* Whether the builder of @s may stream it, one rank at a time. */
static inline gboolean
weft_schedule_streams (const WeftSchedule *s)
{
  return s->sink != NULL;
}

/* Rank @rank's steps are all made: hand them to the sink and forget them
 * and their dependencies (the dependencies' pool starts again). */
void weft_schedule_flush (WeftSchedule *s, uint32_t rank);

/* Rank @rank, whose steps are not made, does as the earlier rank @like
 * did, but with @peers, by the order in which @like first named its own
 * (its slots), in their place: a builder that knows two ranks alike says
 * so instead of making the steps again.  @rank's steps are counted as
 * @like's were (sends, receives and pairs, given as @ends and @matched). */
void weft_schedule_flush_alike (WeftSchedule *s, uint32_t rank, uint32_t like,
                                const uint32_t *peers, uint32_t n_peers,
                                uint64_t ends, uint64_t matched);

/* Keep where each step's bytes lie in its rank's buffer, as the builder
 * says with weft_schedule_region(), for the data check of built-in
 * algorithms (weft_schedule_verify_regions()).  Off by default: a
 * builder's calls then cost a test. */
void weft_schedule_track_regions (WeftSchedule *s);

/* Step @step of @rank moves, reduces or receives its bytes at @offset of
 * the rank's buffer (the nccl-tests buffer of the operation: the whole
 * output of an all_gather, the whole input of a reduce_scatter).  The
 * operations that run out of place (all_to_all, send_recv) have an output
 * after their input: a receive there is at size + its offset in it. */
void weft_schedule_set_region (WeftSchedule *s, uint32_t rank,
                               uint32_t step, uint64_t offset);

static inline void
weft_schedule_region (WeftSchedule *s, uint32_t rank, uint32_t step,
                      uint64_t offset)
{
  if (G_UNLIKELY (s->offsets != NULL))
    weft_schedule_set_region (s, rank, step, offset);
}

#define WEFT_REGION_LIST (UINT64_C (1) << 63)

/* weft_schedule_region() for a step whose bytes lie in @count places:
 * @places holds each one's offset and length. */
void weft_schedule_region_list (WeftSchedule *s, uint32_t rank, uint32_t step,
                                const uint64_t *places, uint32_t count);

/* Forget rank @rank's steps (not their dependencies), for a caller done
 * with them, as it takes the ranks one by one. */
void weft_schedule_forget (WeftSchedule *s, uint32_t rank);

/* Append a step to @rank's list and return its index.  @deps lists @n_deps
 * earlier steps of the same rank it waits for. */
uint32_t weft_schedule_add (WeftSchedule *schedule, uint32_t rank,
                            WeftStepKind kind, uint32_t peer, uint32_t tag,
                            uint64_t bytes, const uint32_t *deps,
                            uint32_t n_deps);

/* Make room for @n_steps more steps of @rank and @n_deps more
 * dependencies (of any rank), for a builder that knows how many it will
 * add: the lists then grow to just that, without being copied as they
 * double. */
void weft_schedule_reserve (WeftSchedule *s, uint32_t rank, uint32_t n_steps,
                            uint64_t n_deps);

/* Shorthands with zero or one dependency (WEFT_NO_STEP for none). */
#define WEFT_NO_STEP UINT32_MAX
uint32_t weft_schedule_send (WeftSchedule *s, uint32_t rank, uint32_t peer,
                             uint32_t tag, uint64_t bytes, uint32_t dep);
uint32_t weft_schedule_recv (WeftSchedule *s, uint32_t rank, uint32_t peer,
                             uint32_t tag, uint64_t bytes, uint32_t dep);
uint32_t weft_schedule_reduce (WeftSchedule *s, uint32_t rank, uint64_t bytes,
                               uint32_t dep);

static inline WeftStep *
weft_schedule_step (const WeftSchedule *s, uint32_t rank, uint32_t step)
{
  return &s->steps[rank][step];
}

/* The dependency @d of @step (d < step->n_deps). */
static inline uint32_t
weft_schedule_dep (const WeftSchedule *s, const WeftStep *step, uint32_t d)
{
  return s->deps[step->first_dep + d];
}

/* Pair send step @send of rank @from with receive step @recv of rank @to,
 * for a builder that knows which go together: when every send and receive
 * has been paired so, weft_schedule_pair() takes the pairs as they are
 * (the test suite checks each built-in algorithm's against the search). */
static inline void
weft_schedule_match (WeftSchedule *s, uint32_t from, uint32_t send,
                     uint32_t to, uint32_t recv)
{
  if (s->counting)
    {
      s->n_matched++;
      return;
    }
  s->matches[from][send] = recv;
  s->matches[to][recv] = send;
  s->n_matched++;
}

/* weft_schedule_add() for a builder that makes disjoint ranks' steps on
 * several threads at once, having made room for all of them
 * (weft_schedule_reserve()) and given each rank its place in the pool of
 * dependencies: the step's dependencies go at *@cursor, which moves past
 * them, and the step pairs with the peer's step @paired (as
 * weft_schedule_match() would pair them, given from both sides).  Nothing
 * the ranks share is counted: the builder adds the pool's dependencies,
 * the sends and receives and the pairs once all are made. */
static inline uint32_t
weft_schedule_add_at (WeftSchedule *s, uint32_t rank, WeftStepKind kind,
                      uint32_t peer, uint32_t tag, uint64_t bytes,
                      const uint32_t *deps, uint32_t n_deps, uint32_t paired,
                      uint32_t *cursor)
{
  WeftStep step = {
    .kind = (uint8_t) kind,
    .peer = peer,
    .tag = tag,
    .bytes = bytes,
    .first_dep = *cursor,
    .n_deps = 0,
  };
  uint32_t n = s->n_steps[rank];

  g_assert (n < s->steps_cap[rank] && n_deps <= s->deps_cap - *cursor);
  for (uint32_t i = 0; i < n_deps; i++)
    if (deps[i] != WEFT_NO_STEP)
      {
        s->deps[(*cursor)++] = deps[i];
        step.n_deps++;
      }
  s->steps[rank][n] = step;
  s->matches[rank][n] = paired;
  s->n_steps[rank] = n + 1;
  return n;
}

/* Bytes sent by all ranks together. */
uint64_t weft_schedule_bytes_sent (const WeftSchedule *s);

/* Bytes @s holds in memory. */
size_t weft_schedule_memory (const WeftSchedule *s);

/* Bytes the schedule counted in @counted (weft_schedule_new_counting())
 * will hold at most once made: its lists as long as they need be where the
 * builder made room ahead, else as they grow, by doubling; one rank's
 * where the builder streams (counted_classes). */
size_t weft_schedule_bytes (const WeftSchedule *counted);

/* For each step, the step it pairs with on the peer (sends and receives;
 * WEFT_NO_STEP for others), as a per-rank array of uint32_t, given by the
 * builder (weft_schedule_match()) or found by weft_schedule_check() or
 * weft_schedule_pair(); only meaningful after a successful one. */
const uint32_t *weft_schedule_matches (const WeftSchedule *s, uint32_t rank);

/* Check the schedule can run: every send has a matching receive of the same
 * size and the reverse, dependencies point at earlier steps, and no rank
 * waits in a circle through other ranks (a deadlock).  On failure say which
 * rank and step. */
gboolean weft_schedule_check (const WeftSchedule *s, GError **error);

/* weft_schedule_check() but for deadlocks: pair the sends and receives and
 * check that dependencies point at earlier steps.  For schedules that
 * cannot deadlock by construction, as the built-in algorithms' (the test
 * suite checks them in full over many sizes): at scale the search for a
 * deadlock costs as much as building the schedule. */
gboolean weft_schedule_pair (const WeftSchedule *s, GError **error);

/* weft_schedule_pair(), always by the search, whatever the builder gave. */
gboolean weft_schedule_pair_search (const WeftSchedule *s, GError **error);

#define WEFT_SCHEDULE_ERROR (weft_schedule_error_quark ())
GQuark weft_schedule_error_quark (void);

typedef enum {
  WEFT_SCHEDULE_ERROR_INVALID,  /* a schedule that cannot run: a send
                                   without its receive, a dependency that
                                   does not come first, a deadlock */
  WEFT_SCHEDULE_ERROR_UNFIT,    /* an algorithm that cannot run on these
                                   GPUs, this fabric or this protocol */
  WEFT_SCHEDULE_ERROR_CUT,      /* faults during the run left two places it
                                   joins with no path */
} WeftScheduleError;

G_DEFINE_AUTOPTR_CLEANUP_FUNC (WeftSchedule, weft_schedule_free)

G_END_DECLS
