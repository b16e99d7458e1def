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
      g_free (stats->links[l].bin);
      g_free (stats->links[l].bin_bytes);
    }
  g_free (stats->links);
  g_free (stats);
}

static void coarsen (WeftLinkStats *stats);

/* The last bin's bytes into its place. */
static inline void
settle (WeftLinkStat *s)
{
  if (s->last_bytes != 0)
    {
      s->bin_bytes[s->n_bins - 1] += s->last_bytes;
      s->last_bytes = 0;
    }
}

/* Traffic on a link is mostly reported in time order (a link serialises,
 * and the flow model closes a link's rate segments one after another), so
 * the common case appends or adds to the last bin; the analytical model's
 * overlapping transfers may go back, and are inserted in order. */
static void
add_to_bin (WeftLinkStats *stats, WeftLinkStat *s, uint32_t bin, double bytes)
{
  settle (s);
  if (s->n_bins > 0 && s->bin[s->n_bins - 1] == bin)
    {
      s->bin_bytes[s->n_bins - 1] += bytes;
      return;
    }
  if (s->n_bins == 0 || s->bin[s->n_bins - 1] < bin)
    {
      /* The bin becomes the last: what falls inside it needs no division
       * (weft_link_stats_spread()). */
      s->last_from = (WeftTime) bin * stats->bin_width;
      s->last_to = s->last_from + stats->bin_width;
    }
  uint32_t lo = 0, hi = s->n_bins;
  if (s->n_bins > 0 && s->bin[s->n_bins - 1] > bin)
    {
      while (lo < hi)
        {
          uint32_t mid = (lo + hi) / 2;
          if (s->bin[mid] < bin)
            lo = mid + 1;
          else
            hi = mid;
        }
      if (s->bin[lo] == bin)
        {
          s->bin_bytes[lo] += bytes;
          return;
        }
    }
  else
    lo = s->n_bins;
  if (s->n_bins == s->bins_cap)
    {
      s->bins_cap = s->bins_cap ? s->bins_cap * 2 : 8;
      s->bin = g_renew (uint32_t, s->bin, s->bins_cap);
      s->bin_bytes = g_renew (double, s->bin_bytes, s->bins_cap);
    }
  memmove (&s->bin[lo + 1], &s->bin[lo], (s->n_bins - lo) * sizeof (uint32_t));
  memmove (&s->bin_bytes[lo + 1], &s->bin_bytes[lo],
           (s->n_bins - lo) * sizeof (double));
  s->bin[lo] = bin;
  s->bin_bytes[lo] = bytes;
  s->n_bins++;
  if (++stats->n_bins > stats->max_bins && stats->max_bins)
    coarsen (stats);
}

/* Halve the resolution: bins pair up, so the stored bins fall to at most
 * about half. */
static void
coarsen (WeftLinkStats *stats)
{
  stats->bin_width *= 2;
  stats->n_bins = 0;
  for (uint32_t l = 0; l < stats->n_links; l++)
    {
      WeftLinkStat *s = &stats->links[l];
      uint32_t k = 0;
      settle (s);
      s->last_from = s->last_to = 0;
      for (uint32_t i = 0; i < s->n_bins; i++)
        {
          uint32_t bin = s->bin[i] / 2;
          if (k > 0 && s->bin[k - 1] == bin)
            s->bin_bytes[k - 1] += s->bin_bytes[i];
          else
            {
              s->bin[k] = bin;
              s->bin_bytes[k++] = s->bin_bytes[i];
            }
        }
      s->n_bins = k;
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

void
weft_link_stats_spread (WeftLinkStats *stats, uint32_t link, WeftTime t0,
                        WeftTime t1, double bytes)
{
  if (bytes <= 0 || stats->bin_width == 0 || link >= stats->n_links)
    return;
  WeftLinkStat *s = &stats->links[link];

  /* Most traffic falls inside the link's last bin. */
  if (t0 >= s->last_from && MAX (t1, t0 + 1) <= s->last_to)
    {
      s->last_bytes += bytes;
      return;
    }
  if (t1 <= t0)
    {
      add_to_bin (stats, s, (uint32_t) (t0 / stats->bin_width), bytes);
      return;
    }
  double per_ps = bytes / (double) (t1 - t0);
  for (WeftTime t = t0; t < t1;)
    {
      /* The width may double on the way (a budget). */
      WeftTime w = stats->bin_width;
      WeftTime end = MIN (t1, (t / w + 1) * w);
      add_to_bin (stats, s, (uint32_t) (t / w), per_ps * (double) (end - t));
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
bin_total (const WeftLinkStat *s, uint32_t i)
{
  return i + 1 == s->n_bins ? s->bin_bytes[i] + s->last_bytes
                            : s->bin_bytes[i];
}

void
weft_link_stats_bins (const WeftLinkStats *stats, uint32_t link, WeftBinFn fn,
                      void *user_data)
{
  const WeftLinkStat *s = &stats->links[link];
  double total = 0, cumulative = 0;
  uint64_t given = 0;

  for (uint32_t i = 0; i < s->n_bins; i++)
    total += bin_total (s, i);
  if (total <= 0 || s->bytes == 0)
    return;
  /* Scale to the exact count, then round the running sum: each bin gets
   * round(cum_i) - round(cum_{i-1}), so the bins add up to the count. */
  double scale = (double) s->bytes / total;
  for (uint32_t i = 0; i < s->n_bins; i++)
    {
      cumulative += bin_total (s, i) * scale;
      uint64_t upto = i + 1 == s->n_bins ? s->bytes
                                         : (uint64_t) llround (cumulative);
      upto = MIN (upto, s->bytes);
      if (upto > given)
        {
          fn (s->bin[i], upto - given, user_data);
          given = upto;
        }
    }
}
