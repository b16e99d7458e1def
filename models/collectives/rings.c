/* weft: rings along the links that join GPUs directly. */
#include "collectives/rings.h"

#include <string.h>

/* Steps of the search for one ring, at most: a mesh whose rings are that
 * hard to find is not one NCCL's users build, and the GPUs then keep rank
 * order. */
#define SEARCH_BUDGET 4000000

typedef struct {
  uint32_t n;
  const uint64_t *left;         /* n x n: bandwidth left from a to b */
  uint64_t floor;               /* only links with at least this much left */
  uint32_t *path;
  uint64_t budget;
} Search;

/* Extend the path of @depth ranks (visited: @seen) to a ring back to rank 0. */
static gboolean
extend (Search *s, uint32_t depth, uint64_t seen)
{
  uint32_t at = s->path[depth - 1];

  if (s->budget == 0)
    return FALSE;
  s->budget--;
  if (depth == s->n)
    return s->left[(size_t) at * s->n] >= s->floor;
  for (uint32_t b = 1; b < s->n; b++)
    if (!(seen & ((uint64_t) 1 << b))
        && s->left[(size_t) at * s->n + b] >= s->floor)
      {
        s->path[depth] = b;
        if (extend (s, depth + 1, seen | ((uint64_t) 1 << b)))
          return TRUE;
        if (s->budget == 0)
          return FALSE;
      }
  return FALSE;
}

static int
descending (const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

  return x < y ? 1 : x > y ? -1 : 0;
}

/* The ring whose least bandwidth left is the largest, into @path; that
 * bandwidth, or 0 if there is none. */
static uint64_t
widest_ring (uint32_t n, const uint64_t *left, uint32_t *path)
{
  g_autofree uint64_t *levels = g_new (uint64_t, (size_t) n * n);
  size_t n_levels = 0;

  for (size_t e = 0; e < (size_t) n * n; e++)
    if (left[e] > 0)
      levels[n_levels++] = left[e];
  qsort (levels, n_levels, sizeof *levels, descending);
  for (size_t i = 0; i < n_levels; i++)
    {
      if (i > 0 && levels[i] == levels[i - 1])
        continue;
      Search s = { n, left, levels[i], path, SEARCH_BUDGET };
      path[0] = 0;
      if (extend (&s, 1, 1))
        return levels[i];
      if (s.budget == 0)
        return 0;
    }
  return 0;
}

WeftRings *
weft_rings_find (const WeftTopology *topo, const uint32_t *gpus, uint32_t n)
{
  if (n < 3 || n > 64)
    return NULL;
  g_autoptr (GHashTable) rank_of = g_hash_table_new (g_direct_hash,
                                                     g_direct_equal);
  for (uint32_t r = 0; r < n; r++)
    g_hash_table_insert (rank_of, GUINT_TO_POINTER (gpus[r]),
                         GUINT_TO_POINTER (r + 1));
  g_autofree uint64_t *left = g_new0 (uint64_t, (size_t) n * n);
  for (uint32_t a = 0; a < n; a++)
    for (uint32_t i = topo->out_start[gpus[a]]; i < topo->out_start[gpus[a] + 1];
         i++)
      {
        const WeftLink *link = &topo->links[topo->out_links[i]];
        uint32_t b = GPOINTER_TO_UINT (g_hash_table_lookup (
            rank_of, GUINT_TO_POINTER (link->dst)));
        if (b == 0)
          continue;
        /* NCCL's model of the link, as collectives move data over it. */
        left[(size_t) a * n + b - 1]
            += (uint64_t) weft_link_nccl_rate (topo, link);
      }

  WeftRings *rings = g_new0 (WeftRings, 1);
  rings->n = n;
  rings->order = g_new (uint32_t, (size_t) WEFT_RINGS_MAX * n);
  rings->weight = g_new (uint64_t, WEFT_RINGS_MAX);
  while (rings->n_rings < WEFT_RINGS_MAX)
    {
      uint32_t *path = rings->order + (size_t) rings->n_rings * n;
      uint64_t width = widest_ring (n, left, path);
      if (width == 0)
        break;
      for (uint32_t q = 0; q < n; q++)
        left[(size_t) path[q] * n + path[(q + 1) % n]] -= width;
      rings->weight[rings->n_rings++] = width;
      /* The same ring the other way, over the links' other directions,
       * which a search after this one may not find in its budget. */
      if (rings->n_rings == WEFT_RINGS_MAX)
        break;
      uint32_t *back = path + n;
      uint64_t back_width = G_MAXUINT64;
      back[0] = 0;
      for (uint32_t q = 1; q < n; q++)
        back[q] = path[n - q];
      for (uint32_t q = 0; q < n; q++)
        back_width = MIN (back_width,
                          left[(size_t) back[q] * n + back[(q + 1) % n]]);
      if (back_width == 0)
        continue;
      for (uint32_t q = 0; q < n; q++)
        left[(size_t) back[q] * n + back[(q + 1) % n]] -= back_width;
      rings->weight[rings->n_rings++] = back_width;
    }
  if (rings->n_rings == 0)
    {
      weft_rings_free (rings);
      return NULL;
    }
  return rings;
}

uint32_t
weft_rings_local (const uint32_t *server, uint32_t n)
{
  uint32_t local = 1;

  if (server == NULL || n < 2)
    return 0;
  while (local < n && server[local] == server[0])
    local++;
  if (local == n || n % local != 0)
    return 0;
  g_autoptr (GHashTable) seen = g_hash_table_new (g_direct_hash,
                                                  g_direct_equal);
  for (uint32_t r = 0; r < n; r++)
    if (r % local == 0 ? !g_hash_table_add (seen, GUINT_TO_POINTER (server[r]))
                       : server[r] != server[r - 1])
      return 0;
  return local;
}

WeftRings *
weft_rings_across (const uint32_t *server, uint32_t n, uint32_t count)
{
  uint32_t local = weft_rings_local (server, n);

  if (local < 2 || count == 0)
    return NULL;
  uint32_t m = n / local;
  WeftRings *rings = g_new0 (WeftRings, 1);
  rings->n = n;
  rings->n_rings = count;
  rings->order = g_new (uint32_t, (size_t) count * n);
  rings->weight = g_new (uint64_t, count);
  for (uint32_t c = 0; c < count; c++)
    {
      uint32_t *order = rings->order + (size_t) c * n;
      uint32_t first = c % local;
      for (uint32_t k = 0; k < m; k++)
        {
          uint32_t entry = (uint32_t) ((c + local - k % local) % local);
          uint32_t *mine = order + (size_t) k * local;
          for (uint32_t q = 0; q < local; q++)
            mine[q] = k * local + (entry + q) % local;
          if (k == m - 1 && entry != first)
            {
              /* The last server leaves beside the GPU by which the ring
               * entered the first: that GPU comes last. */
              uint32_t q = 0;
              while (mine[q] != k * local + first)
                q++;
              memmove (mine + q, mine + q + 1,
                       (local - 1 - q) * sizeof (uint32_t));
              mine[local - 1] = k * local + first;
            }
        }
      rings->weight[c] = 1;
    }
  return rings;
}

void
weft_rings_free (WeftRings *rings)
{
  if (rings == NULL)
    return;
  g_free (rings->order);
  g_free (rings->weight);
  g_free (rings);
}

uint64_t
weft_rings_bytes (const WeftRings *rings, uint64_t size, uint32_t i)
{
  unsigned __int128 total = 0, before = 0;

  for (uint32_t k = 0; k < rings->n_rings; k++)
    {
      total += rings->weight[k];
      if (k < i)
        before += rings->weight[k];
    }
  unsigned __int128 upto = before + rings->weight[i];
  return (uint64_t) ((size * upto) / total - (size * before) / total);
}
