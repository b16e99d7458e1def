/* weft: what the collective algorithms share. */
#pragma once

#include "collectives/algorithm.h"

/* Piece @i of @size split into @parts as evenly as whole bytes allow: the
 * first size % parts pieces get one byte more. */
static inline uint64_t
weft_part (uint64_t size, uint64_t parts, uint64_t i)
{
  return size / parts + (i < size % parts ? 1 : 0);
}

/* A fixed random 64-bit value for @who: SplitMix64's finaliser (Steele,
 * Lea and Flood, 2014).  The data checks give each contribution one, so
 * that a sum of them shows a contribution missing or counted twice. */
static inline uint64_t
weft_signature (uint64_t who)
{
  uint64_t z = who + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Where piece @i of @size split by weft_part() begins. */
static inline uint64_t
weft_part_offset (uint64_t size, uint64_t parts, uint64_t i)
{
  return i * (size / parts) + MIN (i, size % parts);
}

/* What a chunk holds in the data checks, symbolically: how many
 * contributions it adds up and the sum of their signatures
 * (weft_signature()), or nothing at all. */
typedef struct {
  uint64_t sum;
  uint32_t count;
  gboolean held;
} WeftHeld;

static inline uint32_t
weft_mod (int64_t a, uint32_t n)
{
  int64_t m = a % (int64_t) n;
  return (uint32_t) (m < 0 ? m + n : m);
}

/* The algorithms' builders (WeftBuildFn), fit checks (WeftFitFn) and the
 * rest of their rows' functions, file by file; the rows are in
 * algorithm.c. */

/* ring.c */
void weft_ring_all_reduce (WeftSchedule *s, uint64_t size,
                           const WeftCollectiveParams *p);
void weft_ring_reduce_scatter (WeftSchedule *s, uint64_t size,
                               const WeftCollectiveParams *p);
void weft_ring_all_gather (WeftSchedule *s, uint64_t size,
                           const WeftCollectiveParams *p);
void weft_ring_broadcast (WeftSchedule *s, uint64_t size,
                          const WeftCollectiveParams *p);
void weft_ring_reduce (WeftSchedule *s, uint64_t size,
                       const WeftCollectiveParams *p);
void weft_ring_send_recv (WeftSchedule *s, uint64_t size,
                          const WeftCollectiveParams *p);
gboolean weft_ring_fit (WeftFit *fit, WeftCollectiveParams *p,
                        GError **error);
void weft_ring_defaults (WeftOp op, WeftCollectiveParams *p);

/* ring_reference.c: the same ring all_reduce, reduce_scatter and
 * all_gather as ring.c's, built step by step on one thread and paired by
 * the search, for the tests to hold the fast builders to.  @p as a
 * builder gets it (weft_ring_defaults() applied); the caller pairs the
 * schedule (weft_schedule_pair_search()). */
void weft_ring_reference_all_reduce (WeftSchedule *s, uint64_t size,
                                     const WeftCollectiveParams *p);
void weft_ring_reference_reduce_scatter (WeftSchedule *s, uint64_t size,
                                         const WeftCollectiveParams *p);
void weft_ring_reference_all_gather (WeftSchedule *s, uint64_t size,
                                     const WeftCollectiveParams *p);

/* The least chunk NCCL's rings and trees move while there is more: LL's
 * step of data (DEFAULT_LL_BUFFSIZE of 512 KiB over NCCL_STEPS 8, half of
 * each line its flags), and where calcCollChunking() (src/enqueue.cc)
 * stops halving the tree's Simple chunk for a small buffer. */
#define WEFT_LEAST_CHUNK (32 * 1024)

/* tree.c */
void weft_tree_all_reduce (WeftSchedule *s, uint64_t size,
                           const WeftCollectiveParams *p);
gboolean weft_tree_fit (WeftFit *fit, WeftCollectiveParams *p,
                        GError **error);
void weft_tree_defaults (WeftOp op, WeftCollectiveParams *p);

/* An in-order binary tree over positions [lo, hi]: its root is the middle.
 * Fills parent[] (G_MAXUINT32 for the root) and returns the root. */
uint32_t weft_tree_build (uint32_t lo, uint32_t hi, uint32_t *parent);

/* rhd.c */
void weft_rhd_all_reduce (WeftSchedule *s, uint64_t size,
                          const WeftCollectiveParams *p);

/* Halving-doubling all_reduce of @size bytes, at @base of the ranks'
 * buffers, among the @n ranks @members on @tag.  @after[j] is what member j's first send waits for (WEFT_NO_STEP
 * for nothing), and becomes its last step. */
void weft_rhd_group (WeftSchedule *s, const uint32_t *members, uint32_t n,
                     uint64_t base, uint64_t size, uint32_t tag,
                     uint32_t *after);

/* pat.c */
void weft_pat_all_gather (WeftSchedule *s, uint64_t size,
                          const WeftCollectiveParams *p);
void weft_pat_reduce_scatter (WeftSchedule *s, uint64_t size,
                              const WeftCollectiveParams *p);
void weft_pat_defaults (WeftOp op, WeftCollectiveParams *p);

/* collnet.c */
void weft_collnet_all_reduce (WeftSchedule *s, uint64_t size,
                              const WeftCollectiveParams *p);
gboolean weft_collnet_fit (WeftFit *fit, WeftCollectiveParams *p,
                           GError **error);
uint32_t weft_collnet_switch_ranks (uint32_t n,
                                    const WeftCollectiveParams *p);

/* nvls.c */
void weft_nvls_all_reduce (WeftSchedule *s, uint64_t size,
                           const WeftCollectiveParams *p);
void weft_nvls_all_gather (WeftSchedule *s, uint64_t size,
                           const WeftCollectiveParams *p);
void weft_nvls_reduce_scatter (WeftSchedule *s, uint64_t size,
                               const WeftCollectiveParams *p);
gboolean weft_nvls_fit (WeftFit *fit, WeftCollectiveParams *p,
                        GError **error);
uint32_t weft_nvls_switch_ranks (uint32_t n, const WeftCollectiveParams *p);

/* hierarchical.c: ring, halving-doubling or tree across servers */
void weft_hier_all_reduce (WeftSchedule *s, uint64_t size,
                           const WeftCollectiveParams *p);
void weft_hier_rhd_all_reduce (WeftSchedule *s, uint64_t size,
                               const WeftCollectiveParams *p);
void weft_hier_tree_all_reduce (WeftSchedule *s, uint64_t size,
                                const WeftCollectiveParams *p);
/* Their pieces when left to auto: a GPU's share of a piece at least
 * WEFT_LEAST_CHUNK. */
gboolean weft_hier_fit (WeftFit *fit, WeftCollectiveParams *p,
                        GError **error);

/* NVLS inside each server (p->local GPUs, p->n_switches switches each,
 * ranks n + g * n_switches ..), double binary tree across servers. */
void weft_nvls_tree_all_reduce (WeftSchedule *s, uint64_t size,
                                const WeftCollectiveParams *p);
gboolean weft_nvls_tree_fit (WeftFit *fit, WeftCollectiveParams *p,
                             GError **error);
uint32_t weft_nvls_tree_switch_ranks (uint32_t n,
                                      const WeftCollectiveParams *p);

/* all_to_all.c */
void weft_direct_all_to_all (WeftSchedule *s, uint64_t size,
                             const WeftCollectiveParams *p);
void weft_pairwise_all_to_all (WeftSchedule *s, uint64_t size,
                               const WeftCollectiveParams *p);
