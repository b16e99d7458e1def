/* weft: the max-min fair rate solver.
 *
 * Given links and the flows over them, each flow putting a share of its
 * rate on each of its links and perhaps capped, the solver finds the
 * max-min fair rates by progressive filling: every flow's rate rises from
 * 0 at the same pace; a link fills when the sum of share × rate over its
 * flows reaches what it has to give, and its rising flows freeze at that
 * level; a flow that reaches its cap freezes there; the others rise on
 * until every flow is frozen.  No flow can then have more without taking
 * from one that has no more than it: each flow is at its cap or crosses a
 * full link on which no flow has more (docs/network-models.md).
 *
 * What it owns and what it does not.  The solver owns one problem at a
 * time, as arrays (links, flows and their hops) that the caller writes
 * directly or through the inline helpers below, and its own scratch; it
 * knows nothing of transfers, time or the topology, and keeps nothing
 * from one problem to the next but the memory.  The flow fidelity (flow.c
 * and its parts) owns everything incremental: which flows a change
 * affects, the load that flows held fixed put on each link, the groups of
 * flows that share no link (each one problem, on as many threads as it
 * may use), lone flows it fills by the closed form, and fetching ahead
 * what it will read.  It hands the solver each group as a problem: the
 * links with what every flow on them leaves of their capacity, the
 * group's flows with the rates they held until the change.
 *
 * The rates and the links' loads are the same to the last bit however
 * the caller splits its flows into problems, so long as flows that share
 * a link are in one problem in the same relative order: events are taken
 * in a total order, (level, then link before flow, then index). */
#pragma once

#include <glib.h>
#include <stdint.h>

G_BEGIN_DECLS

/* A link of the problem. */
typedef struct {
  /* Set by the caller. */
  double residual;              /* B/s of its capacity left by its flows
                                   outside the problem and by the
                                   problem's at what they hold (held) */
  double load;                  /* B/s it carries, the problem's flows at
                                   what they hold included: the solver
                                   takes that out, then adds each flow's
                                   share of its rate as the flow freezes,
                                   in that order */
  /* The solver's, while it solves. */
  double level;                 /* B/s: the rate at which it fills */
  double weight;                /* sum of its rising flows' shares */
  uint32_t rising;              /* its flows not yet frozen */
  uint32_t start;               /* its flows: members[start] up to the next
                                   link's start */
  uint32_t fill;                /* next free member slot */
  uint32_t id;                  /* the caller's name for it, left as it is */
} WeftMaxminLink;

/* One problem and the solver's scratch.  The caller sets n_links links,
 * n_flows flows and the hops between them, flow i's hops being
 * first[i] to first[i + 1] - 1 in the order of the flows (see
 * weft_maxmin_add_link(), weft_maxmin_add_flow() and
 * weft_maxmin_add_hop()), then calls weft_maxmin_solve().
 *
 * A flow may come in holding a rate on its links, counted in their
 * residual and load: a caller that solves again the flows a change
 * affects, their old rates still on their links, gives them as held.
 * The solver takes each held rate's shares back (into the residual, out
 * of the load) before it fills: a new problem holds nothing. */
typedef struct {
  uint32_t n_links, n_flows, n_hops;
  WeftMaxminLink *links;        /* n_links, and one more for the solver */
  double *cap;                  /* per flow: B/s, 0: none */
  double *held;                 /* per flow: B/s it holds on its links */
  double *rate;                 /* per flow: B/s, the answer */
  uint32_t *first;              /* per flow, and one more: its first hop */
  uint32_t *hop_link;           /* per hop: the link it crosses */
  double *hop_share;            /* per hop: the part of the flow's rate the
                                   link carries (1: all of it) */
  uint32_t links_room, flows_room, hops_room;

  /* The solver's scratch. */
  uint32_t *members;            /* the flows of each link, by its start */
  uint32_t *capped;             /* flows with a cap */
  uint32_t n_capped;
  uint8_t *frozen;              /* per flow */
  struct _WeftMaxminEvent *heap;
  uint32_t heap_n, heap_room;
} WeftMaxmin;

/* A solver with no problem yet; free it with weft_maxmin_free(). */
WeftMaxmin *weft_maxmin_new (void);
void weft_maxmin_free (WeftMaxmin *m);

/* Empty @m's problem, keeping its memory. */
void weft_maxmin_reset (WeftMaxmin *m);

/* Make room in @m for @n_links links, @n_flows flows and @n_hops hops in
 * all, keeping those it holds: a caller that writes the arrays directly
 * asks for the room first. */
void weft_maxmin_reserve (WeftMaxmin *m, uint32_t n_links, uint32_t n_flows,
                          uint32_t n_hops);

/* Solve @m's problem: set rate[] of each flow, and bring each link's load
 * from its flows' held rates to their new ones.  Every flow must cross a
 * link or have a cap (else its rate has no bound: a programming error,
 * asserted); a link of no residual fills at once, its flows at 0. */
void weft_maxmin_solve (WeftMaxmin *m);

/* Add a link to @m's problem that gives its flows @residual B/s and
 * carries @load B/s besides; returns its index (also its id). */
static inline uint32_t
weft_maxmin_add_link (WeftMaxmin *m, double residual, double load)
{
  if (G_UNLIKELY (m->n_links == m->links_room))
    weft_maxmin_reserve (m, m->n_links + 1, 0, 0);
  m->links[m->n_links] = (WeftMaxminLink) { .residual = residual,
                                            .load = load,
                                            .id = m->n_links };
  return m->n_links++;
}

/* Add a flow to @m's problem, at most at @cap B/s (0: none), holding
 * nothing; the hops added next are its.  Returns its index. */
static inline uint32_t
weft_maxmin_add_flow (WeftMaxmin *m, double cap)
{
  if (G_UNLIKELY (m->n_flows == m->flows_room))
    weft_maxmin_reserve (m, 0, m->n_flows + 1, 0);
  m->cap[m->n_flows] = cap;
  m->held[m->n_flows] = 0;
  m->first[m->n_flows] = m->n_hops;
  m->first[m->n_flows + 1] = m->n_hops;
  return m->n_flows++;
}

/* The last flow added crosses link @link, which carries @share of its
 * rate. */
static inline void
weft_maxmin_add_hop (WeftMaxmin *m, uint32_t link, double share)
{
  if (G_UNLIKELY (m->n_hops == m->hops_room))
    weft_maxmin_reserve (m, 0, 0, m->n_hops + 1);
  m->hop_link[m->n_hops] = link;
  m->hop_share[m->n_hops] = share;
  m->first[m->n_flows] = ++m->n_hops;
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC (WeftMaxmin, weft_maxmin_free)

G_END_DECLS
