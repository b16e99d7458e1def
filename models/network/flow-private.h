/* weft: what the flow fidelity's files share, and what its tests read.
 *
 * A flow here is a bundle: the transfers in flight on one path, with the
 * same shares and cap.  Max-min gives such transfers one rate whenever
 * they started, so they are filled as one flow of that many (its
 * multiplicity), and each ends when the bytes served to every member
 * since the bundle formed (its virtual time, as in processor sharing)
 * pass its tag, what had been served when it joined plus its bytes: one
 * entry in each link's list and one timer a bundle, however many sends
 * of a collective's channels and chunks share the path.
 *
 * The flow model is four files: flow.c (the class, and flows starting and
 * draining on the links' lists), flow_recompute.c (a recomputation:
 * finding the flows a change affects, and their drain times at the new
 * rates), flow_fill.c (filling the affected flows group by group through
 * the max-min solver, maxmin.c) and flow_threads.c (threads that fill
 * groups too).  Here are the records they all read, laid out for the
 * caches, and the functions one calls in another. */
#pragma once

#include "network/maxmin.h"
#include "network/network.h"

#include <stdatomic.h>

/* Paths of up to this many links are kept in the flow itself, and its
 * links in its second cache line.  A path between pods of a three-level
 * fat-tree is ten links (GPU to PCIe switch to NIC at each end, six
 * through the switches): behind a pointer, every read of it waited on
 * the flow's first line before it could even be asked for. */
#define NEAR_LINKS 12

/* A flow fills two cache lines and a link one: at scale every flow and
 * link a recomputation visits is a cache miss, so what it reads of them is
 * kept together (a flow's path beside its figures, not behind a pointer),
 * and what only filling needs lives in the solver's arrays.  What a
 * recomputation does not read of a flow is in its FlowSide, in an array
 * of its own: the flows a recomputation reads stay two lines each, and
 * more of them fit in the caches. */
typedef struct {
  _Alignas (64) double rate;    /* B/s */
  double served;                /* bytes each member has been served since
                                   the bundle formed */
  double old_rate;              /* during a recomputation */
  WeftTime updated;             /* when served was last brought up */
  WeftPoolTimer timer;          /* its first member drained */
  double *far;                  /* a longer path's shares, links and slots:
                                   see flow_share(), flow_path() and
                                   flow_slot() */
  uint8_t room_log2;            /* far holds 2^room_log2 links */
  uint8_t capped;               /* its transfer's cap applies */
  uint8_t unit;                 /* each of its links carries all its bytes:
                                   its shares are unit_shares, and its
                                   side's share[] is never read */
  double head_tag;              /* its first member's tag */
  /* The links its transfer crosses: its second line, with what else a
   * scan for the flows a change affects reads (see find_by_scan()), so
   * that a flow the change does not touch costs it one line. */
  _Alignas (64) uint32_t path[NEAR_LINKS];
  uint32_t path_len;
  uint32_t mult;                /* members: its weight in filling */
  uint32_t head;                /* its first member (by tag) */
  uint8_t fresh;                /* it started alone since the last
                                   recomputation (see flow_start()) */
} Flow;

/* What only a flow's start and end read of it, and only on links with long
 * lists (where it sits in them), and filling only if it is striped (its
 * shares), in an array beside the flows, by the same id. */
typedef struct {
  _Alignas (64) uint32_t slot[NEAR_LINKS]; /* its index in each one's list
                                              of flows, kept for lists
                                              longer than SEARCH_FLOWS */
  uint32_t tail;                           /* its last member, by tag */
  _Alignas (64) double share[NEAR_LINKS];  /* per path link: its part of the
                                              rate */
} FlowSide;

/* A transfer in flight, by its id: a member of a bundle, done when the
 * bundle's served bytes reach @tag.  A bundle's members are listed in
 * order of tag (and of joining, for equal tags) through @next. */
typedef struct {
  double tag;
  uint32_t next;
} Member;

/* Lists of up to this many flows are kept in the link itself. */
#define NEAR_FLOWS 2

typedef struct {
  _Alignas (64) union {
    uint32_t *flows;            /* cap > 0: the live flows crossing it */
    uint32_t near[NEAR_FLOWS];  /* cap == 0: the same, in the link */
  };
  uint32_t n, cap;
  double rate_sum;              /* B/s of those flows */
  double capacity;              /* B/s, the network's */
  WeftTime last;                /* start of the current rate segment */
  WeftTime busy;                /* ps it carried anything, and */
  uint64_t bytes;               /* bytes of the flows that have crossed it,
                                   not yet in the statistics (their line is
                                   another miss) */
  uint32_t mark;                /* DIRTY alone: a flow started or ended on it
                                   since the last recomputation; the epoch of
                                   the last that touched it, with DIRTY if it
                                   was changed then (so that nothing need
                                   clear the mark afterwards) */
  uint32_t at;                  /* during a recomputation: its position among
                                   the touched links; while its group fills,
                                   among the group's */
} Link;

#define DIRTY 0x80000000u
#define ALONE 0x80000000u       /* a dirty-list entry that is a flow */

G_STATIC_ASSERT (sizeof (Flow) == 128 && G_STRUCT_OFFSET (Flow, path) == 64
                 && sizeof (FlowSide) == 192 && sizeof (Link) == 64);

/* Link @link's live flows, wherever they are kept. */
static inline uint32_t *
link_flows (const Link *link)
{
  return link->cap ? link->flows : (uint32_t *) link->near;
}

/* Fetch link @link's list of flows, if it is not in the link. */
static inline void
prefetch_flows (const Link *link)
{
  if (link->cap)
    __builtin_prefetch (link->flows);
}

static const double unit_shares[] = { 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1 };
G_STATIC_ASSERT (G_N_ELEMENTS (unit_shares) == NEAR_LINKS);

/* A growable array of ids. */
typedef struct {
  uint32_t *v;
  uint32_t n, cap;
} Ids;

static inline void
ids_resize (Ids *a, uint32_t n)
{
  if (n > a->cap)
    {
      a->cap = MAX (n, a->cap * 2);
      a->v = g_renew (uint32_t, a->v, a->cap);
    }
  a->n = n;
}

static inline void
ids_push (Ids *a, uint32_t id)
{
  if (a->n == a->cap)
    {
      a->cap = a->cap ? a->cap * 2 : 64;
      a->v = g_renew (uint32_t, a->v, a->cap);
    }
  a->v[a->n++] = id;
}

typedef struct _Worker Worker;

typedef struct {
  WeftNetwork base;
  Flow *flows;                  /* by bundle id */
  FlowSide *sides;              /* the same */
  uint32_t flows_cap;
  uint32_t n_bundles;           /* ids in use are below it */
  Ids spare;                    /* ids at or above the transfers' that no
                                   bundle holds (see new_bundle()) */
  Ids done;                     /* transfers ended, not yet completed:
                                   see complete_done() */
  Member *members;              /* by transfer id */
  uint32_t members_cap;
  gboolean bundling;            /* transfers on one path join one bundle
                                   (weft_network_set_plain()) */
  double *start_share;          /* flow_start()'s shares of the starting
                                   transfer, before it knows its bundle */
  uint32_t start_share_cap;
  uint32_t timers;              /* the engine's pool of the flows' timers */
  Link *links;
  uint64_t *dirty_bits;         /* a bit per link: DIRTY in its mark (a
                                   scan reads these, not the links) */
  uint64_t *unfilled;           /* a bit per link: it cannot fill */
  uint64_t *relays;             /* a bit per node: links out of it are in
                                   unfilled, which holds while it sends
                                   nothing of its own */
  gboolean any_unfilled;
  uint32_t *dirty;              /* links, and flows that started alone
                                   (id | ALONE), that changed */
  uint32_t n_dirty, dirty_cap;
  gboolean pending;             /* a recomputation is scheduled */
  uint32_t epoch;
  uint64_t *found_bits;         /* a bit per flow slot: found affected
                                   (all clear between recomputations) */
  Ids affected;                 /* bundle ids, ascending */
  Ids sort_scratch;              /* weft_flow_sort_ids()'s */
  Ids touched;                  /* link ids */
  Ids touched_owner;            /* per touched link: an affected flow on it */
  WeftMaxmin *solver;           /* the simulating thread's */
  Ids group_of, group_start;    /* grouping: per affected flow, per group */
  Ids by_group, links_by_group; /* affected flows and touched links, grouped */
  Ids link_group_start;
  Worker *workers;              /* threads that fill groups too */
  uint32_t n_workers;
  Ids part_start;               /* parts of the sorted groups, taken up in
                                   turn by whichever thread is free */
  atomic_uint next_part;
  uint64_t recomputations;
  WeftScan scan;                /* how the affected flows are found
                                   (weft_network_set_scan()) */
  uint32_t threads;             /* that may fill groups (1: this one) */
  uint32_t links_unfilled;      /* links left out of filling: see
                                   find_unfilled() */
  GHashTable *huge;             /* striped flows of HUGE_FLOW bytes or more:
                                   id -> the bytes each link carries */
  uint32_t *owner;              /* while a fault's transfers are withdrawn:
                                   per transfer, its bundle, as of... */
  uint32_t owner_len, owner_phase;      /* ...that phase's start */
} FlowNet;

/* A flow's per-link arrays: its links in the flow, its slots and shares
 * beside it, or for a longer path all three in one buffer of its own
 * (shares, then links, then slots); the shares of a flow whose every link
 * carries all its bytes (any but a striped transfer's) are all 1, and
 * multiplying or dividing by them changes nothing. */
static inline FlowSide *
flow_side (const FlowNet *f, const Flow *flow)
{
  return &f->sides[flow - f->flows];
}

static inline const double *
flow_share (const FlowNet *f, const Flow *flow)
{
  return flow->unit                      ? unit_shares
         : flow->path_len <= NEAR_LINKS ? flow_side (f, flow)->share
                                         : flow->far;
}

static inline uint32_t *
flow_path (Flow *flow)
{
  return flow->path_len <= NEAR_LINKS
             ? flow->path
             : (uint32_t *) (flow->far + ((size_t) 1 << flow->room_log2));
}

static inline uint32_t *
flow_slot (const FlowNet *f, Flow *flow)
{
  return flow->path_len <= NEAR_LINKS
             ? flow_side (f, flow)->slot
             : flow_path (flow) + ((size_t) 1 << flow->room_log2);
}

/* The cap of each of bundle @flow's members (they share it): B/s. */
static inline double
bundle_cap (const FlowNet *f, const Flow *flow)
{
  return f->base.transfers[flow->head].cap;
}

/* During a recomputation: link @l changed since the one before. */
static inline gboolean
link_dirty (const FlowNet *f, uint32_t l)
{
  return (f->dirty_bits[l / 64] >> (l % 64)) & 1;
}

static inline gboolean
cannot_fill (const FlowNet *f, uint32_t l)
{
  return (f->unfilled[l / 64] >> (l % 64)) & 1;
}

/* Fetch link @l ahead of its use, and with @bins the line of its
 * statistics that closing its rate segment writes. */
static inline void
prefetch_link (const FlowNet *f, uint32_t l, gboolean bins)
{
  __builtin_prefetch (&f->links[l]);
  if (bins)
    weft_link_stats_prefetch (f->base.stats, l);
}

/* Fetch the statistics' lines of the @n links @path, whose rate segments
 * are about to close: all at once rather than one miss after another. */
static inline void
prefetch_stats (const FlowNet *f, const uint32_t *path, uint32_t n)
{
  if (f->base.stats->bin_width > 0)
    for (uint32_t i = 0; i < n; i++)
      weft_link_stats_prefetch (f->base.stats, path[i]);
}

/* Close link @l's current rate segment at @now: its bytes go to the bins. */
static inline void
close_segment (FlowNet *f, uint32_t l, WeftTime now)
{
  Link *link = &f->links[l];

  if (now > link->last && link->rate_sum > 0)
    {
      if (f->base.stats->bin_width > 0)
        weft_link_stats_spread (f->base.stats, l, link->last, now,
                                link->rate_sum * (double) (now - link->last)
                                    * 1e-12);
      link->busy += now - link->last;
    }
  link->last = now;
}

/* ---- between the files ---- */

/* Recompute the rates the changes since the last recomputation affect:
 * the event that the first change schedules for its instant (@target is
 * the FlowNet). */
void weft_flow_recompute (WeftSim *sim, void *target, void *data);

/* Sort @a's ids, all below @hi, ascending, with @scratch's room (see
 * flow_recompute.c). */
void weft_flow_sort_ids (Ids *a, Ids *scratch, uint32_t hi);

/* Fill the @n_aff affected flows @affected, which cross the @n_touched
 * links @touched, with solver @m (see flow_fill.c). */
void weft_flow_fill (FlowNet *f, WeftMaxmin *m, const uint32_t *affected,
                     uint32_t n_aff, const uint32_t *touched,
                     uint32_t n_touched);

/* Fill the affected flows in groups that share no link (see
 * flow_fill.c). */
void weft_flow_fill_groups (FlowNet *f);

/* Fill groups @g0 to @g1 of the sorted ones with solver @m. */
void weft_flow_fill_range (FlowNet *f, WeftMaxmin *m, uint32_t g0,
                           uint32_t g1);

/* Fill the @n_groups sorted groups on this thread and the workers (see
 * flow_threads.c), starting them the first time. */
void weft_flow_fill_parallel (FlowNet *f, uint32_t n_groups);

/* Stop and free the workers, if any were started. */
void weft_flow_workers_stop (FlowNet *f);

/* ---- for tests ---- */

/* How many links the flow model of @net leaves out of filling, which
 * cannot fill (see find_unfilled() in flow.c): counted at its first
 * transfer, 0 before, after the speed-ups are switched off, or once a
 * switch has sent a transfer of its own; 0 for the other fidelities. */
uint32_t weft_flow_links_unfilled (const WeftNetwork *net);
