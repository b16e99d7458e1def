/* Tests of the event engine. */
#include "rng.h"
#include "sim.h"

#include <check.h>
#include <signal.h>
#include <stdlib.h>

/* ---- helpers ---- */

typedef struct {
  GArray *fired;                /* int ids, in the order they ran */
  GArray *times;                /* WeftTime of each */
} Log;

static void
log_init (Log *log)
{
  log->fired = g_array_new (FALSE, FALSE, sizeof (int));
  log->times = g_array_new (FALSE, FALSE, sizeof (WeftTime));
}

static void
log_clear (Log *log)
{
  g_array_unref (log->fired);
  g_array_unref (log->times);
}

static void
record (WeftSim *sim, void *target, void *data)
{
  Log *log = target;
  int id = GPOINTER_TO_INT (data);
  WeftTime now = weft_sim_now (sim);

  g_array_append_val (log->fired, id);
  g_array_append_val (log->times, now);
}

static int
fired (const Log *log, guint i)
{
  return g_array_index (log->fired, int, i);
}

/* ---- ordering ---- */

START_TEST (test_equal_times_run_in_insertion_order)
{
  g_autoptr (WeftSim) sim = weft_sim_new ();
  Log log;

  log_init (&log);
  for (int i = 0; i < 1000; i++)
    weft_sim_schedule (sim, 5 * WEFT_NS, record, &log, GINT_TO_POINTER (i));
  ck_assert_uint_eq (weft_sim_run (sim), 1000);
  for (int i = 0; i < 1000; i++)
    ck_assert_int_eq (fired (&log, i), i);
  ck_assert_uint_eq (weft_sim_now (sim), 5 * WEFT_NS);
  log_clear (&log);
}
END_TEST

START_TEST (test_renumbering_keeps_the_order)
{
  g_autoptr (WeftSim) sim = weft_sim_new ();
  Log log;

  log_init (&log);
  /* Equal times scheduled before and after a renumbering, and a later one
   * before it: ties still run in insertion order. */
  for (int i = 0; i < 100; i++)
    weft_sim_schedule (sim, i % 2 ? 9 : 5, record, &log, GINT_TO_POINTER (i));
  weft_sim_renumber (sim);
  for (int i = 100; i < 200; i++)
    weft_sim_schedule (sim, i % 2 ? 9 : 5, record, &log, GINT_TO_POINTER (i));
  ck_assert_uint_eq (weft_sim_run (sim), 200);
  for (int i = 0; i < 100; i++)
    {
      ck_assert_int_eq (fired (&log, i), 2 * i);
      ck_assert_int_eq (fired (&log, 100 + i), 2 * i + 1);
    }
  log_clear (&log);
}
END_TEST

START_TEST (test_peek_shows_the_next_event)
{
  g_autoptr (WeftSim) sim = weft_sim_new ();
  Log log;
  WeftTimer timer = { 0 };
  WeftEventFn fn;
  void *target, *data;

  log_init (&log);
  ck_assert (!weft_sim_peek (sim, &fn, &target, &data));
  weft_sim_schedule (sim, 9, record, &log, GINT_TO_POINTER (2));
  weft_sim_schedule (sim, 5, record, &log, GINT_TO_POINTER (1));
  ck_assert (weft_sim_peek (sim, &fn, &target, &data));
  ck_assert (fn == record && target == &log && GPOINTER_TO_INT (data) == 1);
  /* A cancelled event is not shown. */
  weft_sim_schedule_timer (sim, &timer, 1, record, &log, GINT_TO_POINTER (0));
  ck_assert (weft_sim_peek (sim, &fn, &target, &data));
  ck_assert_int_eq (GPOINTER_TO_INT (data), 0);
  weft_sim_cancel (sim, &timer);
  ck_assert (!weft_sim_peek (sim, &fn, &target, &data));
  ck_assert_uint_eq (weft_sim_run (sim), 2);
  ck_assert_int_eq (fired (&log, 0), 1);
  log_clear (&log);
}
END_TEST

START_TEST (test_times_then_sequence)
{
  g_autoptr (WeftSim) sim = weft_sim_new ();
  Log log;
  /* id -> delay; expected order sorts by delay, then by id. */
  const WeftTime delays[] = { 30, 10, 20, 10, 30, 0, 20, 10 };
  const int expected[] = { 5, 1, 3, 7, 2, 6, 0, 4 };

  log_init (&log);
  for (int i = 0; i < 8; i++)
    weft_sim_schedule (sim, delays[i], record, &log, GINT_TO_POINTER (i));
  weft_sim_run (sim);
  ck_assert_uint_eq (log.fired->len, 8);
  for (int i = 0; i < 8; i++)
    {
      ck_assert_int_eq (fired (&log, i), expected[i]);
      ck_assert_uint_eq (g_array_index (log.times, WeftTime, i),
                         delays[expected[i]]);
    }
  log_clear (&log);
}
END_TEST

static void
schedule_zero_delay (WeftSim *sim, void *target, void *data)
{
  record (sim, target, data);
  weft_sim_schedule (sim, 0, record, target, GINT_TO_POINTER (99));
}

START_TEST (test_zero_delay_runs_after_queued_equal_times)
{
  g_autoptr (WeftSim) sim = weft_sim_new ();
  Log log;

  log_init (&log);
  weft_sim_schedule (sim, 7, schedule_zero_delay, &log, GINT_TO_POINTER (0));
  weft_sim_schedule (sim, 7, record, &log, GINT_TO_POINTER (1));
  weft_sim_run (sim);
  ck_assert_uint_eq (log.fired->len, 3);
  ck_assert_int_eq (fired (&log, 0), 0);
  ck_assert_int_eq (fired (&log, 1), 1);
  ck_assert_int_eq (fired (&log, 2), 99);
  ck_assert_uint_eq (weft_sim_now (sim), 7);
  log_clear (&log);
}
END_TEST

/* ---- cancellation ---- */

START_TEST (test_cancel_pending)
{
  g_autoptr (WeftSim) sim = weft_sim_new ();
  WeftTimer a = WEFT_TIMER_INIT, b = WEFT_TIMER_INIT;
  Log log;

  log_init (&log);
  weft_sim_schedule_timer (sim, &a, 10, record, &log, GINT_TO_POINTER (1));
  weft_sim_schedule_timer (sim, &b, 20, record, &log, GINT_TO_POINTER (2));
  ck_assert (weft_sim_timer_pending (sim, &a));
  ck_assert_uint_eq (weft_sim_timer_when (sim, &b), 20);
  ck_assert_uint_eq (weft_sim_pending (sim), 2);
  weft_sim_cancel (sim, &a);
  ck_assert (!weft_sim_timer_pending (sim, &a));
  ck_assert_uint_eq (weft_sim_pending (sim), 1);
  ck_assert_uint_eq (weft_sim_run (sim), 1);
  ck_assert_uint_eq (log.fired->len, 1);
  ck_assert_int_eq (fired (&log, 0), 2);
  log_clear (&log);
}
END_TEST

START_TEST (test_cancel_fired_or_cancelled_is_noop)
{
  g_autoptr (WeftSim) sim = weft_sim_new ();
  WeftTimer a = WEFT_TIMER_INIT, never = WEFT_TIMER_INIT;
  Log log;

  log_init (&log);
  weft_sim_cancel (sim, &never);
  weft_sim_schedule_timer (sim, &a, 10, record, &log, GINT_TO_POINTER (1));
  weft_sim_run (sim);
  ck_assert (!weft_sim_timer_pending (sim, &a));
  /* The fired event's slot is reused by a new event: cancelling the stale
   * handle must not touch it. */
  weft_sim_schedule (sim, 5, record, &log, GINT_TO_POINTER (2));
  weft_sim_cancel (sim, &a);
  weft_sim_cancel (sim, &a);
  ck_assert_uint_eq (weft_sim_pending (sim), 1);
  weft_sim_run (sim);
  ck_assert_uint_eq (log.fired->len, 2);
  ck_assert_int_eq (fired (&log, 1), 2);
  log_clear (&log);
}
END_TEST

START_TEST (test_reschedule_timer_replaces)
{
  g_autoptr (WeftSim) sim = weft_sim_new ();
  WeftTimer a = WEFT_TIMER_INIT;
  Log log;

  log_init (&log);
  weft_sim_schedule_timer (sim, &a, 10, record, &log, GINT_TO_POINTER (1));
  weft_sim_schedule_timer (sim, &a, 30, record, &log, GINT_TO_POINTER (2));
  ck_assert_uint_eq (weft_sim_pending (sim), 1);
  weft_sim_run (sim);
  ck_assert_uint_eq (log.fired->len, 1);
  ck_assert_int_eq (fired (&log, 0), 2);
  ck_assert_uint_eq (weft_sim_now (sim), 30);
  log_clear (&log);
}
END_TEST

START_TEST (test_mass_cancel_compacts_and_keeps_order)
{
  g_autoptr (WeftSim) sim = weft_sim_new ();
  enum { N = 20000 };
  WeftTimer *timers = g_new0 (WeftTimer, N);
  WeftRng rng;
  Log log;
  guint live = 0;

  log_init (&log);
  weft_rng_init (&rng, 7, 0);
  for (int i = 0; i < N; i++)
    weft_sim_schedule_timer (sim, &timers[i], weft_rng_below (&rng, 1000),
                             record, &log, GINT_TO_POINTER (i));
  for (int i = 0; i < N; i++)
    if (i % 5 != 0)
      weft_sim_cancel (sim, &timers[i]);
    else
      live++;
  ck_assert_uint_eq (weft_sim_pending (sim), live);
  ck_assert_uint_eq (weft_sim_run (sim), live);
  ck_assert_uint_eq (log.fired->len, live);
  for (guint i = 1; i < live; i++)
    {
      WeftTime t0 = g_array_index (log.times, WeftTime, i - 1);
      WeftTime t1 = g_array_index (log.times, WeftTime, i);
      ck_assert (t0 < t1 || (t0 == t1 && fired (&log, i - 1) < fired (&log, i)));
      ck_assert_int_eq (fired (&log, i) % 5, 0);
    }
  g_free (timers);
  log_clear (&log);
}
END_TEST

/* ---- pools of timers in the caller's records ---- */

typedef struct {
  double before;                /* the timer not at offset 0 */
  WeftPoolTimer timer;
  int id;
} Record;

typedef struct {
  Log *log;
  Record *records;
} PoolOwner;

static void
record_pooled (WeftSim *sim, void *target, void *data)
{
  PoolOwner *owner = target;

  record (sim, owner->log, GINT_TO_POINTER (owner->records[GPOINTER_TO_UINT (
                                                              data)].id));
}

/* Run both engines to the same time: they run as many events. */
static void
run_both_until (WeftSim *a, WeftSim *b, WeftTime delay)
{
  WeftTime until = weft_sim_now (b) + delay;

  ck_assert_uint_eq (weft_sim_run_until (a, until),
                     weft_sim_run_until (b, until));
}

/* Run both engines out: the same events ran, in the same order, at the
 * same times. */
static void
finish_both (WeftSim *a, WeftSim *b, const Log *log_a, const Log *log_b)
{
  ck_assert_uint_eq (weft_sim_run (a), weft_sim_run (b));
  ck_assert_uint_eq (weft_sim_events_run (a), weft_sim_events_run (b));
  ck_assert_uint_eq (log_a->fired->len, log_b->fired->len);
  for (guint i = 0; i < log_a->fired->len; i++)
    {
      ck_assert_int_eq (fired (log_a, i), fired (log_b, i));
      ck_assert_uint_eq (g_array_index (log_a->times, WeftTime, i),
                         g_array_index (log_b->times, WeftTime, i));
    }
}

/* How a test schedules and cancels event @id on the engine under test. */
typedef struct {
  void (*schedule) (WeftSim *sim, void *ctx, int id, WeftTime delay);
  void (*cancel) (WeftSim *sim, void *ctx, int id);
  void (*each) (WeftSim *sim, void *ctx, int op); /* NULL, or after op */
  void *ctx;
} Script;

/* @ops random steps, the same on @a (through @script) and on @b (ordinary
 * timers @tb of @n events recording into @log_b): schedule or reschedule
 * an event with a delay below @delays, cancel one, or run both a while.
 * Both always hold as many pending events. */
static void
run_script (WeftSim *a, WeftSim *b, const Script *script, Log *log_b,
            WeftTimer *tb, int n, int ops, uint64_t delays, uint64_t seed)
{
  WeftRng rng;

  weft_rng_init (&rng, seed, 0);
  for (int op = 0; op < ops; op++)
    {
      int id = (int) weft_rng_below (&rng, (uint64_t) n);
      uint32_t what = (uint32_t) weft_rng_below (&rng, 10);
      WeftTime delay = weft_rng_below (&rng, delays);
      if (what < 6)
        {
          script->schedule (a, script->ctx, id, delay);
          weft_sim_schedule_timer (b, &tb[id], delay, record, log_b,
                                   GINT_TO_POINTER (id));
        }
      else if (what < 8)
        {
          script->cancel (a, script->ctx, id);
          weft_sim_cancel (b, &tb[id]);
        }
      else
        run_both_until (a, b, delay);
      ck_assert_uint_eq (weft_sim_pending (a), weft_sim_pending (b));
      if (script->each)
        script->each (a, script->ctx, op);
    }
}

/* The engine under test of the tests below: events 0 .. n_pooled - 1 are
 * records of pools of @per records each (pool i holds events i * per ..),
 * the others ordinary timers @ta, the k-th kind (ids below @bound[k])
 * running @fn[k] on @target[k]. */
typedef struct {
  uint32_t pools[2];
  int per, n_pooled;
  WeftTimer *ta;
  WeftEventFn fn[4];
  void *target[4];
  int bound[4];
  PoolOwner *owner;             /* moved by engine_move(), which... */
  WeftSim *other;               /* ...renumbers this engine too */
  int ops;
} Engine;

static void
engine_schedule (WeftSim *sim, void *ctx, int id, WeftTime delay)
{
  Engine *e = ctx;

  if (id < e->n_pooled)
    {
      weft_sim_pool_schedule (sim, e->pools[id / e->per], id % e->per, delay);
      return;
    }
  int k = 0;
  while (id >= e->bound[k])
    k++;
  weft_sim_schedule_timer (sim, &e->ta[id], delay, e->fn[k], e->target[k],
                           GINT_TO_POINTER (id));
}

static void
engine_cancel (WeftSim *sim, void *ctx, int id)
{
  Engine *e = ctx;

  if (id < e->n_pooled)
    weft_sim_pool_cancel (sim, e->pools[id / e->per], id % e->per);
  else
    weft_sim_cancel (sim, &e->ta[id]);
}

/* The records move; the numbers start again (twice in a run). */
static void
engine_move (WeftSim *sim, void *ctx, int op)
{
  Engine *e = ctx;

  if (op != e->ops / 3 && op != 2 * e->ops / 3)
    return;
  Record *moved = g_memdup2 (e->owner->records, e->per * sizeof (Record));
  g_free (e->owner->records);
  e->owner->records = moved;
  weft_sim_pool_place (sim, e->pools[0], moved, sizeof (Record),
                       G_STRUCT_OFFSET (Record, timer));
  weft_sim_renumber (sim);
  weft_sim_renumber (e->other);
}

START_TEST (test_pool_timers_run_as_timers_do)
{
  /* The same script of schedules, reschedules, cancellations and runs on
   * two engines: in one, half the events are pool timers (the records
   * moving twice on the way); in the other, all are ordinary timers.  They
   * run the same events in the same order at the same times. */
  enum { N = 64, HALF = 32, OPS = 40000 };
  g_autoptr (WeftSim) a = weft_sim_new ();
  g_autoptr (WeftSim) b = weft_sim_new ();
  Log log_a, log_b;
  WeftTimer ta[N] = { { 0 } }, tb[N] = { { 0 } };
  PoolOwner owner = { &log_a, g_new0 (Record, HALF) };

  log_init (&log_a);
  log_init (&log_b);
  for (int i = 0; i < HALF; i++)
    owner.records[i].id = i;
  uint32_t pool = weft_sim_pool_new (a, record_pooled, &owner);
  weft_sim_pool_place (a, pool, owner.records, sizeof (Record),
                       G_STRUCT_OFFSET (Record, timer));
  Engine e = { .pools = { pool }, .per = HALF, .n_pooled = HALF, .ta = ta,
               .fn = { record }, .target = { &log_a }, .bound = { N },
               .owner = &owner, .other = b, .ops = OPS };
  Script script = { engine_schedule, engine_cancel, engine_move, &e };
  run_script (a, b, &script, &log_b, tb, N, OPS, 50, 11);
  finish_both (a, b, &log_a, &log_b);
  ck_assert_uint_gt (log_a.fired->len, OPS / 10);

  /* Records that go take their pending events with them. */
  for (int i = 0; i < HALF; i++)
    weft_sim_pool_schedule (a, pool, i, 10);
  weft_sim_schedule (a, 10, record, &log_a, GINT_TO_POINTER (-1));
  ck_assert_uint_eq (weft_sim_pending (a), HALF + 1);
  weft_sim_pool_place (a, pool, NULL, 0, 0);
  ck_assert_uint_eq (weft_sim_pending (a), 1);
  guint before = log_a.fired->len;
  ck_assert_uint_eq (weft_sim_run (a), 1);
  ck_assert_int_eq (fired (&log_a, before), -1);

  /* A pool whose records went is free for the next: many, one after
   * another, on one engine. */
  for (int i = 0; i < 3 * 16; i++)
    {
      uint32_t next = weft_sim_pool_new (a, record_pooled, &owner);
      ck_assert_uint_eq (next, pool);
      weft_sim_pool_place (a, next, owner.records, sizeof (Record),
                           G_STRUCT_OFFSET (Record, timer));
      weft_sim_pool_schedule (a, next, (uint32_t) i % HALF, 1);
      ck_assert_uint_eq (weft_sim_run (a), 1);
      weft_sim_pool_place (a, next, NULL, 0, 0);
    }
  g_free (owner.records);
  log_clear (&log_a);
  log_clear (&log_b);
}
END_TEST

typedef struct {
  PoolOwner owner;
  uint32_t pool;
  int taken;
} Taker;

/* A pooled record's event that also does the work of the events of its
 * pool that follow it at this time. */
static void
record_taking (WeftSim *sim, void *target, void *data)
{
  Taker *taker = target;
  uint32_t index;

  record_pooled (sim, &taker->owner, data);
  while (weft_sim_pool_take (sim, taker->pool, &index))
    {
      record_pooled (sim, &taker->owner, GUINT_TO_POINTER (index));
      taker->taken++;
    }
}

START_TEST (test_pool_take_is_running_in_turn)
{
  /* Many events at equal times: a quarter are one pool's, whose handler
   * takes those of its pool that follow it, a quarter another pool's, the
   * rest ordinary timers, with cancellations.  Against all ordinary timers
   * on another engine: the same events, order, times and count. */
  enum { N = 64, Q = 16, OPS = 20000 };
  g_autoptr (WeftSim) a = weft_sim_new ();
  g_autoptr (WeftSim) b = weft_sim_new ();
  Log log_a, log_b;
  WeftTimer ta[N] = { { 0 } }, tb[N] = { { 0 } };
  Record *records = g_new0 (Record, 2 * Q);
  Taker taker = { { &log_a, records }, 0, 0 };
  PoolOwner other = { &log_a, records + Q };

  log_init (&log_a);
  log_init (&log_b);
  for (int i = 0; i < 2 * Q; i++)
    records[i].id = i;
  taker.pool = weft_sim_pool_new (a, record_taking, &taker);
  uint32_t pool_b = weft_sim_pool_new (a, record_pooled, &other);
  weft_sim_pool_place (a, taker.pool, records, sizeof (Record),
                       G_STRUCT_OFFSET (Record, timer));
  weft_sim_pool_place (a, pool_b, records + Q, sizeof (Record),
                       G_STRUCT_OFFSET (Record, timer));
  Engine e = { .pools = { taker.pool, pool_b }, .per = Q, .n_pooled = 2 * Q,
               .ta = ta, .fn = { record }, .target = { &log_a },
               .bound = { N } };
  Script script = { engine_schedule, engine_cancel, NULL, &e };
  run_script (a, b, &script, &log_b, tb, N, OPS, 3, 5);
  finish_both (a, b, &log_a, &log_b);
  ck_assert_int_gt (taker.taken, OPS / 100);
  g_free (records);
  log_clear (&log_a);
  log_clear (&log_b);
}
END_TEST

typedef struct {
  Log *log;
  int taken;
  int lo, hi;                   /* the ids scheduled on it */
} PlainTaker;

/* An ordinary event that also does the work of the events of its own
 * handler and target that follow it at this time. */
static void
record_plain_taking (WeftSim *sim, void *target, void *data)
{
  PlainTaker *taker = target;
  void *next;

  record (sim, taker->log, data);
  while (weft_sim_take (sim, record_plain_taking, taker, &next))
    {
      /* Only its own. */
      ck_assert_int_ge (GPOINTER_TO_INT (next), taker->lo);
      ck_assert_int_lt (GPOINTER_TO_INT (next), taker->hi);
      record (sim, taker->log, next);
      taker->taken++;
    }
}

/* Another handler on a taker's target: not to be taken by it. */
static void
record_via_taker (WeftSim *sim, void *target, void *data)
{
  record (sim, ((PlainTaker *) target)->log, data);
}

START_TEST (test_take_is_running_in_turn)
{
  /* As above for ordinary events: a quarter run a handler that takes
   * those of its handler and target that follow it, a quarter the same
   * handler on another target, a quarter another handler on the first
   * target, a quarter another handler on another target. */
  enum { N = 48, OPS = 20000 };
  g_autoptr (WeftSim) a = weft_sim_new ();
  g_autoptr (WeftSim) b = weft_sim_new ();
  Log log_a, log_b;
  WeftTimer ta[N] = { { 0 } }, tb[N] = { { 0 } };
  PlainTaker taker = { &log_a, 0, 0, N / 4 };
  PlainTaker other = { &log_a, 0, N / 4, N / 2 };

  log_init (&log_a);
  log_init (&log_b);
  Engine e = { .per = 1, .ta = ta,
               .fn = { record_plain_taking, record_plain_taking,
                       record_via_taker, record },
               .target = { &taker, &other, &taker, &log_a },
               .bound = { N / 4, N / 2, 3 * N / 4, N } };
  Script script = { engine_schedule, engine_cancel, NULL, &e };
  run_script (a, b, &script, &log_b, tb, N, OPS, 3, 9);
  finish_both (a, b, &log_a, &log_b);
  ck_assert_int_gt (taker.taken, OPS / 100);
  ck_assert_int_gt (other.taken, OPS / 100);
  log_clear (&log_a);
  log_clear (&log_b);
}
END_TEST

/* ---- running and stopping ---- */

START_TEST (test_run_until)
{
  g_autoptr (WeftSim) sim = weft_sim_new ();
  Log log;

  log_init (&log);
  for (int i = 1; i <= 10; i++)
    weft_sim_schedule (sim, i * WEFT_US, record, &log, GINT_TO_POINTER (i));
  ck_assert_uint_eq (weft_sim_run_until (sim, 4 * WEFT_US), 4);
  ck_assert_uint_eq (weft_sim_now (sim), 4 * WEFT_US);
  ck_assert_uint_eq (weft_sim_run_until (sim, 4500 * WEFT_NS), 0);
  ck_assert_uint_eq (weft_sim_now (sim), 4500 * WEFT_NS);
  ck_assert_uint_eq (weft_sim_pending (sim), 6);
  ck_assert_uint_eq (weft_sim_run (sim), 6);
  ck_assert_uint_eq (weft_sim_now (sim), 10 * WEFT_US);
  ck_assert_uint_eq (weft_sim_events_run (sim), 10);
  log_clear (&log);
}
END_TEST

static void
record_and_stop (WeftSim *sim, void *target, void *data)
{
  record (sim, target, data);
  weft_sim_stop (sim);
}

START_TEST (test_stop)
{
  g_autoptr (WeftSim) sim = weft_sim_new ();
  Log log;

  log_init (&log);
  weft_sim_schedule (sim, 1, record, &log, GINT_TO_POINTER (1));
  weft_sim_schedule (sim, 2, record_and_stop, &log, GINT_TO_POINTER (2));
  weft_sim_schedule (sim, 2, record, &log, GINT_TO_POINTER (3));
  ck_assert_uint_eq (weft_sim_run_until (sim, 100), 2);
  ck_assert_uint_eq (weft_sim_now (sim), 2);
  ck_assert_uint_eq (weft_sim_pending (sim), 1);
  ck_assert_uint_eq (weft_sim_run (sim), 1);
  ck_assert_int_eq (fired (&log, 2), 3);
  log_clear (&log);
}
END_TEST

static void
noop (WeftSim *sim, void *target, void *data)
{
  (void) sim, (void) target, (void) data;
}

static void
raise_flag (WeftSim *sim, void *target, void *data)
{
  (void) sim, (void) data;
  *(volatile int *) target = 1;
}

/* Runs and takes the event after it: two events a call. */
static void
take_one (WeftSim *sim, void *target, void *data)
{
  void *next;

  (void) data;
  ck_assert (weft_sim_take (sim, take_one, target, &next));
}

START_TEST (test_interrupt_with_taking)
{
  /* The flag is looked at every 256 events even when the count moves by
   * two from an odd number, never meeting a multiple of 256. */
  g_autoptr (WeftSim) sim = weft_sim_new ();
  volatile int flag = 0;
  int owner;

  weft_sim_set_interrupt (sim, &flag);
  weft_sim_schedule (sim, 0, raise_flag, (void *) &flag, NULL);
  for (WeftTime t = 1; t <= 5000; t++)
    for (int i = 0; i < 2; i++)
      weft_sim_schedule (sim, t, take_one, &owner, NULL);
  uint64_t ran = weft_sim_run (sim);
  ck_assert (weft_sim_interrupted (sim));
  ck_assert_uint_le (ran, 1 + 256 + 2);
  ck_assert_uint_eq (ran % 2, 1);
}
END_TEST

START_TEST (test_past_event_is_refused)
{
  g_autoptr (WeftSim) sim = weft_sim_new ();

  weft_sim_run_until (sim, 100);
  weft_sim_schedule_at (sim, 99, noop, NULL, NULL);
}
END_TEST

START_TEST (test_overflowing_delay_is_refused)
{
  g_autoptr (WeftSim) sim = weft_sim_new ();

  weft_sim_run_until (sim, 100);
  weft_sim_schedule (sim, WEFT_TIME_MAX - 50, noop, NULL, NULL);
}
END_TEST

START_TEST (test_two_simulations_are_independent)
{
  g_autoptr (WeftSim) a = weft_sim_new ();
  g_autoptr (WeftSim) b = weft_sim_new ();
  Log la, lb;

  log_init (&la);
  log_init (&lb);
  for (int i = 0; i < 100; i++)
    {
      weft_sim_schedule (a, 100 - i, record, &la, GINT_TO_POINTER (i));
      weft_sim_schedule (b, i, record, &lb, GINT_TO_POINTER (i));
    }
  weft_sim_run_until (a, 50);
  weft_sim_run (b);
  weft_sim_run (a);
  ck_assert_uint_eq (la.fired->len, 100);
  ck_assert_uint_eq (lb.fired->len, 100);
  for (int i = 0; i < 100; i++)
    {
      ck_assert_int_eq (fired (&la, i), 99 - i);
      ck_assert_int_eq (fired (&lb, i), i);
    }
  log_clear (&la);
  log_clear (&lb);
}
END_TEST

/* ---- determinism ---- */

typedef struct {
  WeftRng rng;
  guint id;
  struct Phold *model;
} Lp;

typedef struct Phold {
  Lp *lps;
  guint n;
  uint64_t hash;                /* FNV-1a over (time, lp) of each event */
  uint64_t remaining;
} Phold;

static void
phold_event (WeftSim *sim, void *target, void *data)
{
  Lp *lp = target;
  Phold *model = lp->model;
  uint64_t words[2] = { weft_sim_now (sim), lp->id };
  (void) data;

  for (guint w = 0; w < 2; w++)
    for (guint byte = 0; byte < 8; byte++)
      {
        model->hash ^= (words[w] >> (8 * byte)) & 0xff;
        model->hash *= UINT64_C (0x100000001b3);
      }
  if (model->remaining == 0)
    {
      weft_sim_stop (sim);
      return;
    }
  model->remaining--;
  WeftTime delay = (WeftTime) weft_rng_exponential (&lp->rng, 1e6) + 100000;
  Lp *dest = &model->lps[weft_rng_below (&lp->rng, model->n)];
  weft_sim_schedule (sim, delay, phold_event, dest, NULL);
}

static uint64_t
phold_trace_hash (uint64_t seed)
{
  g_autoptr (WeftSim) sim = weft_sim_new ();
  Phold model = { .n = 64, .hash = UINT64_C (0xcbf29ce484222325),
                  .remaining = 50000 };

  model.lps = g_new0 (Lp, model.n);
  for (guint i = 0; i < model.n; i++)
    {
      model.lps[i] = (Lp) { .id = i, .model = &model };
      weft_rng_init (&model.lps[i].rng, seed, i);
      for (int k = 0; k < 4; k++)
        weft_sim_schedule (sim, weft_rng_below (&model.lps[i].rng, 1000),
                           phold_event, &model.lps[i], NULL);
    }
  weft_sim_run (sim);
  g_free (model.lps);
  return model.hash;
}

START_TEST (test_same_seed_same_trace)
{
  uint64_t a = phold_trace_hash (42);
  uint64_t b = phold_trace_hash (42);
  uint64_t c = phold_trace_hash (43);

  ck_assert_uint_eq (a, b);
  ck_assert_uint_ne (a, c);
}
END_TEST

/* ---- the heap against a sorted reference ---- */

typedef struct {
  WeftTime time;
  uint64_t seq;
  int id;
} Ref;

static int
ref_compare (gconstpointer a, gconstpointer b, gpointer user_data)
{
  const Ref *x = a, *y = b;
  (void) user_data;

  if (x->time != y->time)
    return x->time < y->time ? -1 : 1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

typedef struct {
  int last;                     /* id of the event that just ran */
} Popped;

static void
pop_one (WeftSim *sim, void *target, void *data)
{
  Popped *popped = target;

  popped->last = GPOINTER_TO_INT (data);
  weft_sim_stop (sim);
}

/* The operations the heap is held to its reference for: a million, or
 * WEFT_HEAP_OPS (tests/valgrind.sh runs fewer: memory errors show in a
 * few thousand, and the reference's tree is slow there). */
static int
heap_ops (void)
{
  const char *env = g_getenv ("WEFT_HEAP_OPS");
  guint64 n;

  if (env != NULL && g_ascii_string_to_unsigned (env, 10, 1, 1000000, &n,
                                                 NULL))
    return (int) n;
  return 1000000;
}

START_TEST (test_heap_matches_sorted_reference)
{
  const int OPS = heap_ops ();
  g_autoptr (WeftSim) sim = weft_sim_new ();
  GTree *reference = g_tree_new_full (ref_compare, NULL, NULL, NULL);
  Ref *refs = g_new0 (Ref, OPS);
  WeftTimer *timers = g_new0 (WeftTimer, OPS);
  int *pending = g_new (int, OPS);        /* ids still pending */
  int *where = g_new (int, OPS);          /* id -> index in pending */
  int n_pending = 0, n_ids = 0;
  uint64_t seq = 0, pops = 0, cancels = 0;
  Popped popped;
  WeftRng rng;

  weft_rng_init (&rng, 2024, 1);
  for (int op = 0; op < OPS; op++)
    {
      uint64_t dice = weft_rng_below (&rng, 100);

      /* Now and then renumber the sequence, as before it would wrap: the
       * order must not change. */
      if (op % 9973 == 0)
        weft_sim_renumber (sim);
      if (dice < 50 || n_pending == 0)
        {
          /* Few distinct delays make many equal times. */
          WeftTime delay = dice < 25 ? weft_rng_below (&rng, 8)
                                     : weft_rng_below (&rng, 1000000);
          int id = n_ids++;

          refs[id] = (Ref) { weft_sim_now (sim) + delay, seq++, id };
          weft_sim_schedule_timer (sim, &timers[id], delay, pop_one, &popped,
                                   GINT_TO_POINTER (id));
          g_tree_insert (reference, &refs[id], &refs[id]);
          where[id] = n_pending;
          pending[n_pending++] = id;
          continue;
        }

      int id;
      if (dice < 88)
        {
          GTreeNode *first = g_tree_node_first (reference);
          const Ref *expected = g_tree_node_key (first);

          popped.last = -1;
          ck_assert_uint_eq (weft_sim_run (sim), 1);
          ck_assert_int_eq (popped.last, expected->id);
          ck_assert_uint_eq (weft_sim_now (sim), expected->time);
          id = expected->id;
          pops++;
        }
      else
        {
          id = pending[weft_rng_below (&rng, n_pending)];
          weft_sim_cancel (sim, &timers[id]);
          cancels++;
        }
      g_tree_remove (reference, &refs[id]);
      int last = pending[--n_pending];
      pending[where[id]] = last;
      where[last] = where[id];
      ck_assert_uint_eq (weft_sim_pending (sim), (uint64_t) n_pending);
    }
  /* Drain what is left. */
  while (n_pending-- > 0)
    {
      GTreeNode *first = g_tree_node_first (reference);
      const Ref *expected = g_tree_node_key (first);

      ck_assert_uint_eq (weft_sim_run (sim), 1);
      ck_assert_int_eq (popped.last, expected->id);
      g_tree_remove (reference, expected);
    }
  ck_assert_uint_eq (weft_sim_run (sim), 0);
  ck_assert (pops > (uint64_t) OPS / 4 && cancels > (uint64_t) OPS / 20);

  g_tree_destroy (reference);
  g_free (refs);
  g_free (timers);
  g_free (pending);
  g_free (where);
}
END_TEST

static Suite *
sim_suite (void)
{
  Suite *s = suite_create ("sim");
  TCase *tc;

  tc = tcase_create ("ordering");
  tcase_add_test (tc, test_equal_times_run_in_insertion_order);
  tcase_add_test (tc, test_times_then_sequence);
  tcase_add_test (tc, test_renumbering_keeps_the_order);
  tcase_add_test (tc, test_peek_shows_the_next_event);
  tcase_add_test (tc, test_zero_delay_runs_after_queued_equal_times);
  suite_add_tcase (s, tc);

  tc = tcase_create ("cancellation");
  tcase_add_test (tc, test_cancel_pending);
  tcase_add_test (tc, test_cancel_fired_or_cancelled_is_noop);
  tcase_add_test (tc, test_reschedule_timer_replaces);
  tcase_add_test (tc, test_mass_cancel_compacts_and_keeps_order);
  tcase_add_test (tc, test_pool_timers_run_as_timers_do);
  tcase_add_test (tc, test_pool_take_is_running_in_turn);
  tcase_add_test (tc, test_take_is_running_in_turn);
  suite_add_tcase (s, tc);

  tc = tcase_create ("running");
  tcase_add_test (tc, test_run_until);
  tcase_add_test (tc, test_stop);
  tcase_add_test (tc, test_interrupt_with_taking);
  tcase_add_test (tc, test_two_simulations_are_independent);
  tcase_add_test_raise_signal (tc, test_past_event_is_refused, SIGABRT);
  tcase_add_test_raise_signal (tc, test_overflowing_delay_is_refused, SIGABRT);
  suite_add_tcase (s, tc);

  tc = tcase_create ("determinism");
  tcase_add_test (tc, test_same_seed_same_trace);
  suite_add_tcase (s, tc);

  tc = tcase_create ("heap");
  tcase_set_timeout (tc, 120);
  tcase_add_test (tc, test_heap_matches_sorted_reference);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  SRunner *runner = srunner_create (sim_suite ());

  srunner_run_all (runner, CK_NORMAL);
  int failed = srunner_ntests_failed (runner);
  srunner_free (runner);
  return failed == 0 ? 0 : 1;
}
