/* weft: PAT (Parallel Aggregated Trees), NCCL's all_gather and
 * reduce_scatter at scale (NCCL 2.23 and later: PatAGAlgorithm and
 * PatRSAlgorithm in src/include/collectives.h; S. Jeaugey, "PAT: a new
 * algorithm for all-gather and reduce-scatter operations at scale",
 * arXiv:2506.20252).
 *
 * All_gather broadcasts each rank's block down a binomial tree shifted to
 * start at that rank, as Bruck's algorithm does, but with the dimensions
 * reversed: the farthest first, so that the last and largest step goes to
 * the nearest rank.  At dimension d a rank sends to the rank 2^d after it
 * every block it holds whose tree goes on that way; reduce_scatter runs
 * the same trees upwards, nearest dimension first, adding up what comes
 * in before passing it on.  Each rank sends every block but its own once
 * (n - 1 blocks in all), in ceil (log2 n) dimensions.
 *
 * A message aggregates at most A blocks, the number NCCL's intermediate
 * buffer holds: where a dimension has more, they go in several messages,
 * one after another on the way to that peer, so that a small buffer takes
 * a logarithmic number of steps and a large one a linear number, as the
 * paper describes.  The buffer is cut into chunks of NCCL's PAT chunk size
 * (unless --chunks says how many), each running the whole trees, one
 * after another on each connection. */
#include "collectives/collective-private.h"

/* NCCL's Simple buffer, NCCL_BUFFSIZE's default of 4 MiB, in NCCL_STEPS
 * (8) slots (src/include/device.h, src/init.cc): a step is 512 KiB, and
 * PAT's chunk is one step (enqueue.cc, calcCollChunking: chunkSteps 1
 * but for ring), halved down to 64 KiB while the chunks of all channels
 * times 32 (all_gather) or 16 (reduce_scatter) pass the buffer. */
#define PAT_STEPS 8
#define PAT_STEP_BYTES ((uint64_t) (4 << 20) / PAT_STEPS)
#define PAT_MIN_CHUNK ((uint64_t) 64 << 10)

/* NCCL's PAT chunk for a buffer of @size bytes (the whole gathered or
 * scattered buffer) on @channels channels. */
static uint64_t
chunk_bytes (WeftOp op, uint64_t size, uint32_t channels)
{
  uint64_t chunk = PAT_STEP_BYTES;
  uint64_t factor = op == WEFT_OP_ALL_GATHER ? 32 : 16;

  while (chunk * channels * factor > size && chunk > PAT_MIN_CHUNK)
    chunk /= 2;
  return chunk;
}

/* How many blocks a message aggregates (NCCL's aggFactor, in the
 * constructors of PatAGAlgorithm and PatRSAlgorithm): as many as fit
 * twice in a chunk, then times the slots a connection has in flight
 * (NCCL_STEPS), while below half the ranks. */
static uint32_t
aggregation (uint32_t n, uint64_t chunk, uint64_t channel_part)
{
  uint32_t a = 1;

  channel_part = MAX (channel_part, 1);
  while (chunk / (channel_part * a) >= 2 && a < n / 2)
    a *= 2;
  for (uint32_t d = PAT_STEPS; d > 1 && a < n / 2; d /= 2)
    a *= 2;
  return a;
}

/* The buffer as PAT cuts it: n blocks, each in channels, each in chunks. */
typedef struct {
  uint64_t size;
  uint32_t n, channels, chunks;
  uint32_t dims;                /* ceil (log2 n) */
  uint32_t agg;                 /* blocks a message */
} Cut;

/* Piece (@ch, @k) of block @q: its bytes, and where it begins in the
 * buffer. */
static uint64_t
piece (const Cut *c, uint32_t q, uint32_t ch, uint32_t k, uint64_t *at)
{
  uint64_t block = weft_part (c->size, c->n, q);
  uint64_t part = weft_part (block, c->channels, ch);

  *at = weft_part_offset (c->size, c->n, q)
        + weft_part_offset (block, c->channels, ch)
        + weft_part_offset (part, c->chunks, k);
  return weft_part (part, c->chunks, k);
}

/* What one rank does with one chunk of one channel: for each block, the
 * step that last wrote it (all_gather: that received it; reduce_scatter:
 * that added into it), and the messages of one dimension. */
typedef struct {
  WeftSchedule *s;
  const Cut *cut;
  uint32_t ch, k;
  uint32_t *last;               /* per block (by root) */
  uint32_t *roots;              /* a message's blocks */
  uint64_t *places;             /* their offsets and lengths */
  uint32_t *deps;
} Work;

/* Into w->roots, in order, the roots q = r - @shift - s of the blocks
 * with a piece of some bytes, for s = @first, @first + @stride, ...
 * while s + @room < n: the blocks rank @r holds s steps along their trees
 * and passes on.  Returns how many. */
static uint32_t
held_roots (Work *w, uint32_t r, int64_t shift, int64_t first,
            int64_t stride, int64_t room)
{
  const Cut *c = w->cut;
  uint32_t count = 0;
  uint64_t at;

  for (int64_t s = first; s + room < c->n; s += stride)
    {
      uint32_t q = weft_mod ((int64_t) r - shift - s, c->n);
      if (piece (c, q, w->ch, w->k, &at) > 0)
        w->roots[count++] = q;
    }
  return count;
}

static int
by_index (const void *a, const void *b)
{
  uint32_t x = *(const uint32_t *) a, y = *(const uint32_t *) b;

  return x < y ? -1 : x > y;
}

/* w->deps[0 .. @n) sorted, each once; returns how many are left. */
static uint32_t
distinct (Work *w, uint32_t n)
{
  uint32_t kept = 0;

  qsort (w->deps, n, sizeof (uint32_t), by_index);
  for (uint32_t i = 0; i < n; i++)
    if (kept == 0 || w->deps[kept - 1] != w->deps[i])
      w->deps[kept++] = w->deps[i];
  return kept;
}

/* The bytes of blocks @roots[0 .. @m), and their places into w->places. */
static uint64_t
gather_places (Work *w, const uint32_t *roots, uint32_t m)
{
  uint64_t bytes = 0;

  for (uint32_t i = 0; i < m; i++)
    {
      uint64_t at, b = piece (w->cut, roots[i], w->ch, w->k, &at);
      w->places[2 * i] = at;
      w->places[2 * i + 1] = b;
      bytes += b;
    }
  return bytes;
}

/* Send blocks @roots[0 .. @m) to @peer in messages of w->cut->agg, each
 * after what wrote its blocks and after the last message to @peer
 * (*@chain, which becomes this one's last). */
static void
send_blocks (Work *w, uint32_t r, uint32_t peer, uint32_t m, uint32_t *chain)
{
  uint32_t agg = w->cut->agg;

  for (uint32_t from = 0; from < m; from += agg)
    {
      uint32_t count = MIN (agg, m - from), n_deps = 0;
      const uint32_t *roots = w->roots + from;
      uint64_t bytes = gather_places (w, roots, count);
      if (*chain != WEFT_NO_STEP)
        w->deps[n_deps++] = *chain;
      for (uint32_t i = 0; i < count; i++)
        if (w->last[roots[i]] != WEFT_NO_STEP)
          w->deps[n_deps++] = w->last[roots[i]];
      *chain = weft_schedule_add (w->s, r, WEFT_STEP_SEND, peer, w->ch,
                                  bytes, w->deps, distinct (w, n_deps));
      weft_schedule_region_list (w->s, r, *chain, w->places, count);
    }
}

/* Receive blocks @roots[0 .. @m) from @peer in messages of w->cut->agg;
 * with @reduce each is added into the blocks after what last wrote them. */
static void
recv_blocks (Work *w, uint32_t r, uint32_t peer, uint32_t m, gboolean reduce)
{
  uint32_t agg = w->cut->agg;

  for (uint32_t from = 0; from < m; from += agg)
    {
      uint32_t count = MIN (agg, m - from), n_deps = 0;
      const uint32_t *roots = w->roots + from;
      uint64_t bytes = gather_places (w, roots, count);
      uint32_t got = weft_schedule_recv (w->s, r, peer, w->ch, bytes,
                                         WEFT_NO_STEP);
      weft_schedule_region_list (w->s, r, got, w->places, count);
      uint32_t wrote = got;
      if (reduce)
        {
          w->deps[n_deps++] = got;
          for (uint32_t i = 0; i < count; i++)
            if (w->last[roots[i]] != WEFT_NO_STEP)
              w->deps[n_deps++] = w->last[roots[i]];
          wrote = weft_schedule_add (w->s, r, WEFT_STEP_REDUCE, 0, 0, bytes,
                                     w->deps, distinct (w, n_deps));
          weft_schedule_region_list (w->s, r, wrote, w->places, count);
        }
      for (uint32_t i = 0; i < count; i++)
        w->last[roots[i]] = wrote;
    }
}

static void
pat (WeftSchedule *s, WeftOp op, uint64_t size, const WeftCollectiveParams *p)
{
  uint32_t n = s->n_gpus, dims = 0;
  uint32_t channels = MAX (p->channels, 1);
  uint64_t chunk = chunk_bytes (op, size, channels);
  /* The largest block's part on a channel. */
  uint64_t part = (size / n + (size % n != 0) + channels - 1) / channels;
  gboolean gather = op == WEFT_OP_ALL_GATHER;

  while (((uint64_t) 1 << dims) < n)
    dims++;
  Cut cut = { size, n, channels,
              p->chunks ? p->chunks
                        : (uint32_t) MAX ((part + chunk - 1) / chunk, 1),
              dims, aggregation (n, chunk, part) };
  g_autofree uint32_t *last = g_new (uint32_t, n);
  g_autofree uint32_t *roots = g_new (uint32_t, n);
  g_autofree uint64_t *places = g_new (uint64_t, 2 * (size_t) n);
  g_autofree uint32_t *deps = g_new (uint32_t, (size_t) cut.agg + 1);
  /* Each rank's last message to the peer of each dimension, on the
   * channel: a connection's messages go in order. */
  g_autofree uint32_t *chain = g_new (uint32_t, (size_t) n * dims);

  for (uint32_t ch = 0; ch < channels; ch++)
    {
      for (size_t i = 0; i < (size_t) n * dims; i++)
        chain[i] = WEFT_NO_STEP;
      for (uint32_t k = 0; k < cut.chunks; k++)
        for (uint32_t r = 0; r < n; r++)
          {
            Work w = { s, &cut, ch, k, last, roots, places, deps };
            for (uint32_t q = 0; q < n; q++)
              last[q] = WEFT_NO_STEP;
            for (uint32_t i = 0; i < dims; i++)
              {
                /* All_gather from the farthest dimension in, reduce_scatter
                 * from the nearest out. */
                uint32_t d = gather ? dims - 1 - i : i;
                int64_t step = (int64_t) 1 << d, stride = step * 2;
                uint32_t ahead = weft_mod ((int64_t) r + step, n);
                uint32_t behind = weft_mod ((int64_t) r - step, n);
                uint32_t m;
                if (gather)
                  {
                    /* Blocks held at s, a multiple of 2^(d+1), go on to
                     * s + 2^d; the rank 2^d behind sends this one its. */
                    m = held_roots (&w, r, 0, 0, stride, step);
                    send_blocks (&w, r, ahead, m,
                                 &chain[(size_t) r * dims + d]);
                    m = held_roots (&w, r, step, 0, stride, step);
                    recv_blocks (&w, r, behind, m, FALSE);
                  }
                else
                  {
                    /* The child 2^d ahead sends up the blocks this rank
                     * holds at s, a multiple of 2^(d+1); this rank sends
                     * up those it holds at 2^d past such an s. */
                    m = held_roots (&w, r, 0, 0, stride, step);
                    recv_blocks (&w, r, ahead, m, TRUE);
                    m = held_roots (&w, r, 0, step, stride, 0);
                    send_blocks (&w, r, behind, m,
                                 &chain[(size_t) r * dims + d]);
                  }
              }
          }
    }
}

void
weft_pat_all_gather (WeftSchedule *s, uint64_t size,
                     const WeftCollectiveParams *p)
{
  pat (s, WEFT_OP_ALL_GATHER, size, p);
}

void
weft_pat_reduce_scatter (WeftSchedule *s, uint64_t size,
                         const WeftCollectiveParams *p)
{
  pat (s, WEFT_OP_REDUCE_SCATTER, size, p);
}

/* One channel unless asked; the chunks are NCCL's, found from the size
 * (left 0 here). */
void
weft_pat_defaults (WeftOp op, WeftCollectiveParams *p)
{
  (void) op;
  p->channels = MAX (p->channels, 1);
}
