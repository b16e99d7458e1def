/* weft: running one collective on a topology and timing it. */
#pragma once

#include "collectives/collective.h"
#include "network/network.h"
#include "collectives/protocol.h"

G_BEGIN_DECLS

typedef struct {
  WeftFidelity fidelity;
  uint64_t seed;                /* picks the ECMP choices */
  WeftTime bin_width;           /* ps; 0: keep no link statistics */
  const volatile int *interrupt;/* stop early once *interrupt != 0 */
  uint32_t plain;               /* for tests, what to switch off: see
                                   weft_network_set_plain() */
  uint64_t max_bins;            /* with bins: keep at most about this many
                                   over all links, doubling their width as
                                   needed (0: no bound) */
  WeftTime give_up;             /* ps; not 0: stop once the clock is past
                                   this unfinished (a candidate slower than
                                   the best so far), result->beaten */
  const _Atomic WeftTime *bound;/* not NULL: stop soon after the clock
                                   passes *bound, which may fall while the
                                   run goes on (the best time of candidates
                                   run at once), result->beaten */
  uint32_t threads;             /* that may share the run's work (0 or 1:
                                   the calling one alone) */
  _Atomic WeftTime *progress;   /* not NULL: the run's clock, stored every
                                   few hundred events, for a display */
} WeftRunOptions;

typedef struct {
  WeftTime time;                /* ps, from the call to the last step */
  uint64_t bytes_sent;          /* data bytes the schedule moves */
  uint64_t events;              /* events the simulation ran */
  WeftLinkStats *stats;         /* with a bin width: the caller's to free */
  WeftTime *spans;              /* with a bin width: per rank, the first step's
                                   start and the last's end (2 per rank, GPU
                                   ranks first); the caller's to free */
  uint32_t n_spans;             /* ranks in spans */
  uint32_t links_used;          /* directed links that carried bytes */
  gboolean interrupted;         /* stopped early: time is where it got */
  gboolean beaten;              /* unfinished at options->give_up, or past
                                   *options->bound: time is WEFT_TIME_MAX */
  char *failure;                /* weft_schedule_run(): why it could not
                                   finish (faults left no path), the
                                   caller's to free; the others return it
                                   as their error */
} WeftCollectiveResult;

/* Simulate @op by @alg with @protocol over the GPUs @gpus[0..n-1] of
 * @topo for @size bytes (nccl-tests' size), as @options say.  Fails with
 * WEFT_SCHEDULE_ERROR_UNFIT if the algorithm cannot run on this fabric or
 * with this protocol, WEFT_SCHEDULE_ERROR_INVALID if its schedule cannot
 * run. */
gboolean weft_collective_run (const WeftTopology *topo, const uint32_t *gpus,
                              uint32_t n, WeftOp op, WeftAlgorithm alg,
                              WeftProtocolKind protocol, uint64_t size,
                              const WeftCollectiveParams *params,
                              const WeftRunOptions *options,
                              WeftCollectiveResult *result, GError **error);

/* The executor's image of the checked schedule of @op by @alg over
 * @gpus[0..n-1] for @size bytes, with the nodes its ranks run on put in
 * @nodes (the GPUs, then for NVLS the switches that reduce); NULL with
 * @error (WEFT_SCHEDULE_ERROR_UNFIT for an algorithm the fabric cannot
 * run) otherwise.  The caller frees it.  A builder that can makes the
 * schedule one rank at a time, so that it is never held whole. */
WeftExecImage *weft_collective_plan (const WeftTopology *topo,
                                    const uint32_t *gpus, uint32_t n,
                                    WeftOp op, WeftAlgorithm alg,
                                    uint64_t size,
                                    const WeftCollectiveParams *params,
                                    GArray *nodes, GError **error);

/* What the schedule of one collective holds, known without making it:
 * its steps and dependencies, and the bytes of the schedule, of the
 * executor's image of it and of each run's own state of the steps. */
typedef struct {
  uint64_t steps, deps;
  uint64_t in_progress;         /* transfers that may be in progress at
                                   once, about */
  size_t schedule, image, run;
} WeftFootprint;

/* The footprint of @op by @alg over @gpus[0..n-1] for @size bytes, as
 * weft_collective_plan() would make it; FALSE with @error if @alg cannot
 * run there.  Takes the time of making the schedule's steps, not their
 * memory. */
gboolean weft_collective_footprint (const WeftTopology *topo,
                                    const uint32_t *gpus, uint32_t n,
                                    WeftOp op, WeftAlgorithm alg,
                                    uint64_t size,
                                    const WeftCollectiveParams *params,
                                    WeftFootprint *footprint, GError **error);

/* The send engines (weft_network_add_engines()) that the sends of @alg
 * with @protocol (@costs) cross in @op on the @n ranks' nodes @nodes,
 * B/s by node, or NULL.  What a GPU sends is bounded, whatever links it
 * sends over, by LL's ll_bandwidth (NCCL's llMaxBw) for the number of
 * servers the ranks span, in the collectives NCCL runs by ring or tree;
 * and by NCCL's channels times a channel's most (weft_nccl_channel_cap())
 * for NCCL's own algorithms.  A ring's bus bandwidth is what each GPU
 * sends; as a share of every link's rate instead, a faster NVLink would
 * let a NIC carry LL faster than NCCL does.  The caller frees it. */
double *weft_protocol_engines (const WeftProtocol *costs, WeftAlgorithm alg,
                               WeftProtocolKind protocol, WeftOp op,
                               const WeftTopology *topo,
                               const uint32_t *nodes, uint32_t n);

/* weft_nccl_channel_cap() of NCCL's @alg with @protocol over the @n ranks'
 * nodes @nodes, B/s; 0 for weft's own algorithms, raw, or one rank. */
double weft_protocol_channel_cap (WeftAlgorithm alg, WeftProtocolKind protocol,
                                  const WeftTopology *topo,
                                  const uint32_t *nodes, uint32_t n);

/* The rate of @node's send engine (B/s; 0: none) under LL's row @row of
 * ll_bandwidth (-1: none) and the channels' bound @cap (0: none): the
 * lower of the two a GPU has. */
double weft_protocol_engine_rate (const WeftNode *node, int row, double cap);

/* The row of the GPUs' ll_bandwidth (one server, two, more) that
 * weft_protocol_engines() takes, or -1 where there are no engines. */
int weft_protocol_engine_row (const WeftProtocol *costs, WeftOp op,
                              const WeftTopology *topo,
                              const uint32_t *nodes, uint32_t n);

/* Run the checked @schedule of @op with @costs (and their send engines,
 * weft_protocol_engines()), rank r on node @nodes[r], as @options say. */
/* FALSE with @result's failure as @error if it has one (which it frees). */
gboolean weft_collective_result_ok (WeftCollectiveResult *result,
                                    GError **error);

void weft_schedule_run (const WeftTopology *topo, const uint32_t *nodes,
                        const WeftSchedule *schedule, WeftOp op,
                        const WeftProtocol *costs,
                        const WeftRunOptions *options,
                        WeftCollectiveResult *result);

/* The schedules of one collective's candidates (@call, every algorithm and
 * protocol that may be tried): the schedule does not depend on the
 * protocol, so each algorithm's is planned once, by the first candidate
 * that needs it (one in another thread waits for it), and run by all.
 * @order lists the candidates (pairs, see WEFT_PAIRS) that will run: an
 * algorithm's schedule is freed once the last of them has run, unless it
 * is small enough to keep for a second run.  What @call points to must
 * outlive it. */
typedef struct _WeftPlans WeftPlans;

/* A collective: @op over the GPUs gpus[0..n-1] of @topo, for @size bytes
 * (nccl-tests' size), with @params. */
typedef struct {
  const WeftTopology *topo;
  const uint32_t *gpus;
  uint32_t n;
  WeftOp op;
  uint64_t size;
  const WeftCollectiveParams *params;
} WeftCollectiveCall;

WeftPlans *weft_plans_new (const WeftCollectiveCall *call, const int *order,
                           int n_order);
void weft_plans_free (WeftPlans *plans);

/* weft_collective_run() of @alg with @protocol, on @plans' schedule; safe
 * to call from several threads at once. */
gboolean weft_plans_run (WeftPlans *plans, WeftAlgorithm alg,
                         WeftProtocolKind protocol,
                         const WeftRunOptions *options,
                         WeftCollectiveResult *result, GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (WeftPlans, weft_plans_free)

/* auto's candidates: (algorithm, protocol) pairs, numbered
 * a * WEFT_PROTOCOL_COUNT + p; of equal times the lower number wins. */
#define WEFT_PAIRS (WEFT_ALG_COUNT * WEFT_PROTOCOL_COUNT)

/* Simulate candidate @pair as @options say, into @result; FALSE with
 * @error if it cannot run. */
typedef gboolean (*WeftCandidateFn) (int pair, const WeftRunOptions *options,
                                     WeftCollectiveResult *result,
                                     GError **error, void *data);

typedef struct {
  int pair;                     /* the fastest, or -1 if none ran */
  WeftCollectiveResult result;  /* its result, bins and spans included */
  gboolean interrupted;         /* the interrupt flag was set: candidates
                                   were stopped or not taken up */
  int failed;                   /* the lowest pair that could not run, or
                                   -1 */
  GError *error;                /* ...and why */
  int n_tried;                  /* the candidates, in the order taken up */
  int tried[WEFT_PAIRS];        /* ...their pairs */
  WeftTime time[WEFT_PAIRS];    /* ...and times: WEFT_TIME_MAX for one
                                   stopped as slower than the best, one that
                                   could not run or was not taken up */
} WeftChoice;

/* Choose among the @n candidates @order (pairs, taken up in this order:
 * the likely fastest first) by simulating them, @jobs at once.  Each stops
 * exactly at the least time of those finished when it starts, and soon
 * after a lower one found beside it (*options->bound is set aside for
 * this): it can only be slower.  Every other runs to its end, so the
 * choice (the least time, of equal times the lowest pair) and its result
 * are those of running every candidate to its end, for any @jobs and
 * whatever order they finish in.  The first, the likeliest to be chosen,
 * runs with @first if not NULL (its link bins, so that it need not be run
 * again for them when it is chosen), the others with @options.
 * weft_choice_clear() frees @choice's result and error. */
void weft_collective_choose (const int *order, int n, int jobs,
                             const WeftRunOptions *options,
                             const WeftRunOptions *first,
                             WeftCandidateFn run, void *data,
                             WeftChoice *choice);
void weft_choice_clear (WeftChoice *choice);

/* Whether @alg with @protocol can run @op on these GPUs of @topo, without
 * simulating it; on FALSE, @error says why. */
gboolean weft_collective_fits (const WeftTopology *topo, const uint32_t *gpus,
                               uint32_t n, WeftOp op, WeftAlgorithm alg,
                               WeftProtocolKind protocol, GError **error);

G_END_DECLS
