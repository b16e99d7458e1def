/* weft: per-link statistics: bytes carried, busy time, peak queue, and bytes
 * per time bin.
 *
 * Models report traffic as "these bytes were on the wire of link l during
 * [t0, t1)"; the bytes are spread evenly over that interval and assigned to
 * the bins it covers.  Bins are kept sparse and in time order per link.
 * weft_link_stats_bins() hands them out as whole bytes whose sum is exactly
 * the link's byte count. */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "sim.h"

G_BEGIN_DECLS

typedef struct {
  uint64_t bytes;               /* data bytes carried (whole transfers) */
  WeftTime busy;                /* ps during which it carried anything */
  uint64_t peak_queue;          /* bytes waiting to be sent (packet model) */
  uint64_t peak_buffer;         /* bytes held in the receiver's input buffer
                                   (packet model; never above its size) */
} WeftLinkStat;

/* A link's bins, on a cache line of their own: traffic inside its last two
 * bins reads and writes this line alone, and one that starts a bin writes
 * the lists besides (the bytes of the bin two back only then: stores wait
 * for no read).  The bin before the last is kept too because transfers
 * reported as they start overlap: the next one on a link often starts in
 * the bin where the one before it started, before its end's. */
typedef struct {
  _Alignas (64) WeftTime from;  /* ps the last bin starts at, if open */
  double value;                 /* open: the last bin's bytes, which
                                   bytes[] does not hold yet */
  double rest;                  /* open: bytes of traffic inside the bin
                                   not yet in value */
  uint32_t bin;                 /* open: the last bin's index (as in
                                   index[], which this spares reading) */
  uint32_t open;                /* OPEN: traffic inside [from, from +
                                   width) may go to rest; HELD: the bin
                                   before the last is bin - 1, its bytes
                                   in held, not yet in bytes[] */
  uint32_t *index;              /* bin indices, ascending */
  double *bytes;                /* bytes in each of those bins */
  uint32_t n, cap;
  double held;
} WeftLinkBins;

typedef struct {
  WeftTime bin_width;           /* ps; 0: no bins, totals only */
  uint64_t max_bins;            /* 0, or the most bins kept over all links:
                                   past it the width doubles */
  uint64_t n_bins;              /* bins kept over all links */
  WeftLinkStat *links;          /* n_links, then n_hidden */
  WeftLinkBins *bins;           /* n_links */
  uint32_t *used;               /* the links that have bins, n_used of
                                   them, in the order of their first */
  uint32_t n_used;
  uint32_t n_links;
  uint32_t n_hidden;            /* records of links no fabric has (a GPU's
                                   send engine): counted, never binned */
} WeftLinkStats;

/* Traffic on a link at scale is a cache miss on what its last bin holds:
 * this fetches it ahead; only a hint. */
static inline void
weft_link_stats_prefetch (const WeftLinkStats *stats, uint32_t link)
{
  if (link < stats->n_links)
    __builtin_prefetch (&stats->bins[link], 1);
}

/* Statistics for @n_links directed links with bins of @bin_width ps (0:
 * only each link's bytes and busy time, which costs less). */
WeftLinkStats *weft_link_stats_new (uint32_t n_links, WeftTime bin_width);
void weft_link_stats_free (WeftLinkStats *stats);

/* Records for @n more links, numbered from n_links on, which models may
 * report traffic on like any other; they keep no bins and are no link of
 * the fabric (n_links is unchanged).  Before any traffic. */
void weft_link_stats_hide (WeftLinkStats *stats, uint32_t n);

/* Keep at most about @max_bins bins over all links (0: no bound): when
 * there would be more, the bin width doubles and neighbouring bins merge,
 * as often as needed.  Totals are unchanged. */
void weft_link_stats_set_budget (WeftLinkStats *stats, uint64_t max_bins);

/* Widen the bins to @width, which must be the width times a power of two,
 * merging them.  Totals are unchanged. */
void weft_link_stats_widen (WeftLinkStats *stats, WeftTime width);

/* Spread @bytes over [@t0, @t1) of link @link (t1 > t0), or put them all in
 * the bin of @t0 when t1 == t0.  Does not touch the byte count or busy
 * time, which the model keeps with weft_link_stats_count(). */
void weft_link_stats_spread (WeftLinkStats *stats, uint32_t link, WeftTime t0,
                             WeftTime t1, double bytes);

/* Take back @bytes that weft_link_stats_spread() put over [@t0, @t1) of
 * link @link: a transfer reported as it started that went no further. */
void weft_link_stats_unspread (WeftLinkStats *stats, uint32_t link,
                               WeftTime t0, WeftTime t1, double bytes);

/* Add @bytes to link @link's count of bytes carried. */
void weft_link_stats_count (WeftLinkStats *stats, uint32_t link,
                            uint64_t bytes);

typedef void (*WeftBinFn) (uint32_t bin, uint64_t bytes, void *user_data);

/* Call @fn for each non-empty bin of @link in time order, with whole bytes
 * that add up exactly to the link's byte count (by cumulative rounding). */
void weft_link_stats_bins (const WeftLinkStats *stats, uint32_t link,
                           WeftBinFn fn, void *user_data);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (WeftLinkStats, weft_link_stats_free)

G_END_DECLS
