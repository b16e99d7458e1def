/* weft: per-link statistics. */
#include "network/link_stats.h"

#include <math.h>
#include <string.h>

WeftLinkStats *
weft_link_stats_new (uint32_t n_links, WeftTime bin_width)
{
  WeftLinkStats *stats = g_new0 (WeftLinkStats, 1);

  stats->bin_width = bin_width;
  stats->n_links = n_links;
  stats->links = g_new0 (WeftLinkStat, MAX (n_links, 1));
  stats->bins = g_aligned_alloc0 (MAX (n_links, 1), sizeof (WeftLinkBins),
                                  _Alignof (WeftLinkBins));
  stats->used = g_new (uint32_t, MAX (n_links, 1));
  return stats;
}

void
weft_link_stats_hide (WeftLinkStats *stats, uint32_t n)
{
  uint32_t had = stats->n_links + stats->n_hidden;

  stats->n_hidden += n;
  stats->links = g_renew (WeftLinkStat, stats->links,
                          MAX (had + n, 1));
  memset (&stats->links[had], 0, n * sizeof (WeftLinkStat));
}

void
weft_link_stats_free (WeftLinkStats *stats)
{
  if (stats == NULL)
    return;
  for (uint32_t l = 0; l < stats->n_links; l++)
    {
      g_free (stats->bins[l].index);
      g_free (stats->bins[l].bytes);
    }
  g_free (stats->links);
  g_free (stats->used);
  g_aligned_free (stats->bins);
  g_free (stats);
}

static void coarsen (WeftLinkStats *stats);

/* The last bin's traffic into its bytes. */
static inline void
settle (WeftLinkBins *b)
{
  if (b->open && b->rest != 0)
    {
      b->value += b->rest;
      b->rest = 0;
    }
}

#define OPEN 1u
#define HELD 2u

G_STATIC_ASSERT (sizeof (WeftLinkBins) == 64);

/* The bytes of bin @i of @b: the open last bin's, and the one before it
 * when held, are in @b itself. */
static inline double *
bin_bytes (WeftLinkBins *b, uint32_t i)
{
  if (i + 1 == b->n && (b->open & OPEN))
    return &b->value;
  if (i + 2 == b->n && (b->open & HELD))
    return &b->held;
  return &b->bytes[i];
}

/* The held bin's bytes into the lists. */
static inline void
unhold (WeftLinkBins *b)
{
  if (b->open & HELD)
    {
      b->bytes[b->n - 2] = b->held;
      b->open &= ~HELD;
    }
}

/* Room for one more bin. */
static inline void
reserve (WeftLinkBins *b)
{
  if (b->n == b->cap)
    {
      b->cap = b->cap ? b->cap * 2 : 8;
      b->index = g_renew (uint32_t, b->index, b->cap);
      b->bytes = g_renew (double, b->bytes, b->cap);
    }
}

/* Traffic on a link is mostly reported in time order (a link serialises,
 * and the flow model closes a link's rate segments one after another), so
 * the common case appends or adds to the last bin; the analytical model's
 * overlapping transfers may go back, and are inserted in order. */
static void
add_to_bin (WeftLinkStats *stats, uint32_t link, uint32_t bin, double bytes)
{
  WeftLinkBins *b = &stats->bins[link];
  uint32_t n = b->n;

  settle (b);
  uint32_t top = n == 0 ? 0 : b->open ? b->bin : b->index[n - 1];
  if (n > 0 && top == bin)
    {
      *bin_bytes (b, n - 1) += bytes;
      return;
    }
  if (n == 0 || top < bin)
    {
      /* The bin becomes the last, open: what falls inside it needs no
       * division (weft_link_stats_spread()).  The one before is held if
       * it is its neighbour, else closed. */
      if (n == 0)
        stats->used[stats->n_used++] = link;
      unhold (b);
      uint32_t open = OPEN;
      if ((b->open & OPEN) && top + 1 == bin)
        {
          b->held = b->value;
          open |= HELD;
        }
      else if (b->open & OPEN)
        b->bytes[n - 1] = b->value;
      reserve (b);
      b->index[n] = bin;
      b->from = (WeftTime) bin * stats->bin_width;
      b->value = bytes;
      b->rest = 0;
      b->bin = bin;
      b->open = open;
    }
  else if ((b->open & HELD) && bin + 1 == top)
    {
      b->held += bytes;
      return;
    }
  else
    {
      unhold (b);
      /* Traffic that goes back mostly goes back a bin or two (transfers
       * reported as they start, overlapping the last one's span): the
       * bins just before the last are looked at first. */
      uint32_t lo = n - 1, hi = n;
      while (lo > 0 && n - lo < 4 && b->index[lo] > bin)
        lo--;
      if (b->index[lo] > bin)
        hi = lo, lo = 0;
      else
        {
          lo += b->index[lo] < bin;
          hi = lo;
        }
      while (lo < hi)
        {
          uint32_t mid = (lo + hi) / 2;
          if (b->index[mid] < bin)
            lo = mid + 1;
          else
            hi = mid;
        }
      if (b->index[lo] == bin)
        {
          *bin_bytes (b, lo) += bytes;
          return;
        }
      /* Before the last: an open last bin moves up with the others. */
      reserve (b);
      memmove (&b->index[lo + 1], &b->index[lo], (n - lo) * sizeof (uint32_t));
      memmove (&b->bytes[lo + 1], &b->bytes[lo], (n - lo) * sizeof (double));
      b->index[lo] = bin;
      b->bytes[lo] = bytes;
    }
  b->n++;
  if (++stats->n_bins > stats->max_bins && stats->max_bins)
    coarsen (stats);
}

/* Halve the resolution: bins pair up, so the stored bins fall to at most
 * about half.  Last bins are closed: their span has changed.  Only the
 * links that have bins are visited: on a large fabric most have none
 * when the budget is first passed. */
static void
coarsen (WeftLinkStats *stats)
{
  stats->bin_width *= 2;
  stats->n_bins = 0;
  for (uint32_t u = 0; u < stats->n_used; u++)
    {
      WeftLinkBins *b = &stats->bins[stats->used[u]];
      uint32_t k = 0;
      settle (b);
      unhold (b);
      if (b->open)
        b->bytes[b->n - 1] = b->value;
      b->open = 0;
      for (uint32_t i = 0; i < b->n; i++)
        {
          uint32_t bin = b->index[i] / 2;
          if (k > 0 && b->index[k - 1] == bin)
            b->bytes[k - 1] += b->bytes[i];
          else
            {
              b->index[k] = bin;
              b->bytes[k++] = b->bytes[i];
            }
        }
      b->n = k;
      stats->n_bins += k;
    }
}

void
weft_link_stats_widen (WeftLinkStats *stats, WeftTime width)
{
  while (stats->bin_width && stats->bin_width * 2 <= width)
    coarsen (stats);
  g_assert (stats->bin_width == 0 || stats->bin_width == width);
}

void
weft_link_stats_set_budget (WeftLinkStats *stats, uint64_t max_bins)
{
  stats->max_bins = max_bins;
  while (max_bins && stats->n_bins > max_bins)
    coarsen (stats);
}

static void spread (WeftLinkStats *stats, uint32_t link, WeftTime t0,
                    WeftTime t1, double bytes);

void
weft_link_stats_spread (WeftLinkStats *stats, uint32_t link, WeftTime t0,
                        WeftTime t1, double bytes)
{
  if (bytes <= 0 || stats->bin_width == 0 || link >= stats->n_links)
    return;
  spread (stats, link, t0, t1, bytes);
}

void
weft_link_stats_unspread (WeftLinkStats *stats, uint32_t link, WeftTime t0,
                          WeftTime t1, double bytes)
{
  if (bytes <= 0 || stats->bin_width == 0 || link >= stats->n_links)
    return;
  spread (stats, link, t0, t1, -bytes);
}

/* weft_link_stats_spread() of any sign. */
static void
spread (WeftLinkStats *stats, uint32_t link, WeftTime t0, WeftTime t1,
        double bytes)
{
  WeftLinkBins *b = &stats->bins[link];

  /* Most traffic falls inside the link's last bin. */
  if (b->open && t0 >= b->from
      && MAX (t1, t0 + 1) <= b->from + stats->bin_width)
    {
      b->rest += bytes;
      return;
    }
  if (t1 <= t0)
    {
      add_to_bin (stats, link, (uint32_t) (t0 / stats->bin_width), bytes);
      return;
    }
  double per_ps = bytes / (double) (t1 - t0);
  for (WeftTime t = t0; t < t1;)
    {
      /* The width may double on the way (a budget). */
      WeftTime w = stats->bin_width;
      WeftTime end = MIN (t1, (t / w + 1) * w);
      add_to_bin (stats, link, (uint32_t) (t / w), per_ps * (double) (end - t));
      t = end;
    }
}

void
weft_link_stats_count (WeftLinkStats *stats, uint32_t link, uint64_t bytes)
{
  stats->links[link].bytes += bytes;
}

/* Bin @i's bytes, the last's not yet settled included. */
static inline double
bin_total (const WeftLinkBins *b, uint32_t i)
{
  if (i + 1 == b->n && (b->open & OPEN))
    return b->value + b->rest;
  if (i + 2 == b->n && (b->open & HELD))
    return b->held;
  return b->bytes[i];
}

void
weft_link_stats_bins (const WeftLinkStats *stats, uint32_t link, WeftBinFn fn,
                      void *user_data)
{
  const WeftLinkStat *s = &stats->links[link];
  const WeftLinkBins *b = &stats->bins[link];
  double total = 0, cumulative = 0;
  uint64_t given = 0;

  for (uint32_t i = 0; i < b->n; i++)
    total += bin_total (b, i);
  if (total <= 0 || s->bytes == 0)
    return;
  /* Scale to the exact count, then round the running sum: each bin gets
   * round(cum_i) - round(cum_{i-1}), so the bins add up to the count. */
  double scale = (double) s->bytes / total;
  for (uint32_t i = 0; i < b->n; i++)
    {
      cumulative += bin_total (b, i) * scale;
      uint64_t upto = i + 1 == b->n ? s->bytes
                                    : (uint64_t) llround (cumulative);
      upto = MIN (upto, s->bytes);
      if (upto > given)
        {
          fn (b->index[i], upto - given, user_data);
          given = upto;
        }
    }
}
