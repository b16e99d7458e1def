/* weft: the discrete-event engine.
 *
 * A WeftSim owns a clock in picoseconds and a queue of pending events.  Events
 * run in (time, insertion sequence) order, so a run is repeatable bit for bit.
 * There is no global state: any number of simulations may live in one process.
 */
#pragma once

#include <glib.h>
#include <stdint.h>

G_BEGIN_DECLS

typedef uint64_t WeftTime;                      /* picoseconds */

#define WEFT_TIME_MAX UINT64_MAX
#define WEFT_PS ((WeftTime) 1)
#define WEFT_NS ((WeftTime) 1000)
#define WEFT_US ((WeftTime) 1000000)
#define WEFT_MS ((WeftTime) 1000000000)
#define WEFT_S  ((WeftTime) 1000000000000)

typedef struct _WeftSim WeftSim;

typedef void (*WeftEventFn) (WeftSim *sim, void *target, void *data);

/* A handle to one scheduled event, embedded in whatever owns the event (as
 * libuv embeds uv_timer_t).  Zero-initialise it before first use.  A timer
 * refers to at most one pending event; rescheduling it cancels the old one. */
typedef struct {
  uint32_t slot;
  uint32_t gen;                                 /* 0: never scheduled */
} WeftTimer;

#define WEFT_TIMER_INIT { 0, 0 }

/* Create a simulation whose clock reads 0.  Never fails. */
WeftSim *weft_sim_new (void);

/* Free the simulation and its pending events.  The engine owns neither the
 * targets nor the data of those events; they are not touched. */
void weft_sim_free (WeftSim *sim);

/* The current time in picoseconds. */
WeftTime weft_sim_now (const WeftSim *sim);

/* Run fn(sim, target, data) at now + delay.  Equal times run in the order they
 * were scheduled.  The engine owns neither target nor data.  A time past
 * WEFT_TIME_MAX is a programming error and aborts. */
void weft_sim_schedule (WeftSim *sim, WeftTime delay,
                        WeftEventFn fn, void *target, void *data);

/* As weft_sim_schedule(), at the absolute time @when, which must not lie in
 * the past: an event scheduled before now aborts with an assertion. */
void weft_sim_schedule_at (WeftSim *sim, WeftTime when,
                           WeftEventFn fn, void *target, void *data);

/* As weft_sim_schedule(), remembering the event in @timer so that it can be
 * cancelled.  A timer that is still pending is cancelled first. */
void weft_sim_schedule_timer (WeftSim *sim, WeftTimer *timer, WeftTime delay,
                              WeftEventFn fn, void *target, void *data);

/* Cancel the event in @timer.  Cancelling a timer that has fired, was
 * cancelled already or was never scheduled does nothing. */
void weft_sim_cancel (WeftSim *sim, WeftTimer *timer);

/* Pools of timers kept in the caller's own records: an array of records,
 * each with a WeftPoolTimer at the same offset, whose events all run
 * fn(sim, target, index).  The engine keeps nothing of such an event but
 * its queue entry, so scheduling, cancelling and running one touch only
 * the record (which its handler reads anyway) and not a slot of the
 * engine's: at scale each of those is a cache miss.  Events of pools and
 * other events share one order. */
typedef struct {
  uint32_t seq;                 /* of its pending event */
  uint32_t pending;
} WeftPoolTimer;

/* A new pool, its records not yet placed: returns its id.  At most 15 at
 * once; a pool whose records are gone (weft_sim_pool_place() with NULL)
 * counts no more. */
uint32_t weft_sim_pool_new (WeftSim *sim, WeftEventFn fn, void *target);

/* Where pool @pool's records are (again, after they moved): record i at
 * @base + i * @stride, its timer @timer_offset bytes into it.  NULL: the
 * records are gone, and their pending events with them; the pool is then
 * freed. */
void weft_sim_pool_place (WeftSim *sim, uint32_t pool, void *base,
                          size_t stride, size_t timer_offset);

/* (Re)schedule record @index's event at now + @delay; @index below 2^27. */
void weft_sim_pool_schedule (WeftSim *sim, uint32_t pool, uint32_t index,
                             WeftTime delay);

/* Cancel record @index's event, if pending. */
void weft_sim_pool_cancel (WeftSim *sim, uint32_t pool, uint32_t index);

/* From inside an event: if the event that would run next is one of pool
 * @pool's at the present time, take it instead: it counts as run, and the
 * caller does what its handler would, now.  A handler that takes the events
 * of its own pool that follow it does the same work in the same order as
 * running them one by one, and can work on them together (fetch their
 * records from memory ahead, say). */
gboolean weft_sim_pool_take (WeftSim *sim, uint32_t pool, uint32_t *index);

/* The same for an ordinary event of @fn on @target: its data in *@data. */
gboolean weft_sim_take (WeftSim *sim, WeftEventFn fn, void *target,
                        void **data);

/* Whether @timer refers to an event that has not yet run nor been cancelled. */
gboolean weft_sim_timer_pending (const WeftSim *sim, const WeftTimer *timer);

/* The time at which @timer fires; it must be pending. */
WeftTime weft_sim_timer_when (const WeftSim *sim, const WeftTimer *timer);

/* Run events until none is left or weft_sim_stop() is called.  Returns the
 * number of events run by this call. */
uint64_t weft_sim_run (WeftSim *sim);

/* Run the events whose time is at most @until, then set the clock to @until
 * (unless stopped earlier).  @until must not lie in the past.  Returns the
 * number of events run by this call. */
uint64_t weft_sim_run_until (WeftSim *sim, WeftTime until);

/* The event that runs next, unless it was cancelled (a pool's may have
 * been): a handler may fetch what it will touch ahead (at scale, cache
 * misses dominate). */
gboolean weft_sim_peek (const WeftSim *sim, WeftEventFn *fn, void **target,
                        void **data);

/* Renumber the pending events' insertion sequence from 0, keeping their
 * order; done by itself before the 32-bit sequence wraps.  Public for
 * tests. */
void weft_sim_renumber (WeftSim *sim);

/* Make the running weft_sim_run() or weft_sim_run_until() return once the
 * current event is done.  The remaining events stay queued. */
void weft_sim_stop (WeftSim *sim);

/* Make weft_sim_run() and weft_sim_run_until() return soon after *@flag
 * becomes non-zero (checked every few hundred events), as on Ctrl-C.
 * NULL: never.  The flag must outlive the runs. */
void weft_sim_set_interrupt (WeftSim *sim, const volatile int *flag);

/* Whether the last run returned because of the interrupt flag. */
gboolean weft_sim_interrupted (const WeftSim *sim);

/* Make weft_sim_run() and weft_sim_run_until() return soon after the clock
 * has passed *@bound (checked every few hundred events), which another
 * thread may lower while the run goes on: a run that can only end after
 * *@bound is abandoned.  NULL: no bound.  It must outlive the runs. */
void weft_sim_set_bound (WeftSim *sim, const _Atomic WeftTime *bound);

/* Store the clock in *@clock every few hundred events as the runs go on
 * (relaxed: for a display of progress, from another thread).  NULL: never.
 * It must outlive the runs. */
void weft_sim_set_progress (WeftSim *sim, _Atomic WeftTime *clock);

/* Events pending (scheduled, neither run nor cancelled). */
uint64_t weft_sim_pending (const WeftSim *sim);

/* Events run since the simulation was created. */
uint64_t weft_sim_events_run (const WeftSim *sim);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (WeftSim, weft_sim_free)

G_END_DECLS
