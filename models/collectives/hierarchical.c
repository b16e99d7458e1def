/* weft: the hierarchical two-level all_reduce: a reduce-scatter over
 * NVLink among the GPUs of each server, then an all_reduce of each slice
 * across servers among the GPUs with the same local index (one rail each),
 * by ring, recursive halving-doubling or double binary tree, then an
 * all-gather inside each server.  Ranks come server by server, `local` of
 * them in each.  The buffer is cut into channels x chunks pieces that
 * follow each other through the three levels. */
#include "collectives/collective-private.h"

#include <string.h>

/* A step of @rank that waits for both @a and @b: a reduction of @bytes
 * (0 for a plain join, which takes no time). */
static uint32_t join (WeftSchedule *s, uint32_t rank, uint64_t bytes,
                      uint32_t a, uint32_t b);

/* A ring over @members (m ranks) on a region of @region bytes at @base of
 * their buffers, cut into m pieces.  At step t member j sends piece
 * (j - shift - t) to member j + 1; with @reduce each received piece is
 * added in.  @after[j] is what member
 * j's first send waits for, and becomes its last step.
 *
 * With @held, what @after[j] ends is what made the region's data (the
 * level before): each reduction waits for it too, not only for its
 * receive; receives are taken in turn; and a ring that does not reduce
 * ends once both its last receive and @after[j] are done, so that what
 * follows has every piece, the member's own included.  Without it a piece
 * could be added to before it is reduced inside the server. */
static void
ring (WeftSchedule *s, const uint32_t *members, uint32_t m, uint64_t base,
      uint64_t region, int shift, gboolean reduce, gboolean held,
      uint32_t tag, uint32_t *after)
{
  if (s->counting && m > 1)
    {
      /* Each member's m - 1 sends (each waiting for the step before, the
       * first for @after), receives and reductions (each waiting for its
       * receive), counted without making them: a ring across thousands
       * of servers has billions. */
      uint64_t steps = (uint64_t) (m - 1) * (reduce ? 3 : 2);
      for (uint32_t j = 0; j < m; j++)
        {
          uint32_t r = members[j];
          gboolean start = after[j] != WEFT_NO_STEP;
          uint64_t more = 0;
          s->counted_deps += (m - 2) + start + (reduce ? m - 1 : 0);
          if (held && reduce && start)
            s->counted_deps += m - 1;
          if (held && !reduce)
            {
              s->counted_deps += (m - 2) + (start ? 2 : 0);
              more = start;
            }
          s->counted_steps += more;
          s->counted_roots += after[j] == WEFT_NO_STEP;
          s->n_steps[r] = (uint32_t) MIN (s->n_steps[r] + steps + more,
                                          UINT32_MAX - 1);
          after[j] = s->n_steps[r] - 1;
        }
      s->counted_steps += steps * m;
      s->counted_tags = MAX (s->counted_tags, tag + 1);
      s->n_ends += 2 * (uint64_t) (m - 1) * m;
      s->n_matched += (uint64_t) (m - 1) * m;
      return;
    }

  g_autofree uint32_t *next = g_new (uint32_t, m);
  g_autofree uint32_t *sent = g_new (uint32_t, m);
  g_autofree uint32_t *start = g_memdup2 (after, m * sizeof *after);

  for (uint32_t t = 0; t + 1 < m; t++)
    {
      for (uint32_t j = 0; j < m; j++)
        {
          uint32_t piece = weft_mod ((int64_t) j - shift - t, m);
          sent[j] = weft_schedule_send (s, members[j], members[(j + 1) % m],
                                        tag, weft_part (region, m, piece),
                                        after[j]);
          weft_schedule_region (s, members[j], sent[j],
                                base + weft_part_offset (region, m, piece));
        }
      for (uint32_t j = 0; j < m; j++)
        {
          uint32_t from = (j + m - 1) % m;
          uint32_t piece = weft_mod ((int64_t) from - shift - t, m);
          uint64_t bytes = weft_part (region, m, piece);
          uint64_t at = base + weft_part_offset (region, m, piece);
          /* Without reductions, after[j] is the receive before (at t > 0). */
          uint32_t got = weft_schedule_recv (s, members[j], members[from], tag,
                                             bytes, held && !reduce && t > 0
                                                        ? after[j]
                                                        : WEFT_NO_STEP);
          weft_schedule_match (s, members[from], sent[from], members[j], got);
          next[j] = !reduce ? got
                    : held ? join (s, members[j], bytes, start[j], got)
                           : weft_schedule_reduce (s, members[j], bytes, got);
          weft_schedule_region (s, members[j], got, at);
          weft_schedule_region (s, members[j], next[j], at);
        }
      for (uint32_t j = 0; j < m; j++)
        after[j] = next[j];
    }
  for (uint32_t j = 0; held && !reduce && m > 1 && j < m; j++)
    if (start[j] != WEFT_NO_STEP)
      after[j] = join (s, members[j], 0, start[j], after[j]);
}

static uint32_t
join (WeftSchedule *s, uint32_t rank, uint64_t bytes, uint32_t a, uint32_t b)
{
  uint32_t deps[2] = { a, b };

  if (a == WEFT_NO_STEP)
    return weft_schedule_reduce (s, rank, bytes, b);
  return weft_schedule_add (s, rank, WEFT_STEP_REDUCE, 0, 0, bytes, deps,
                            b == WEFT_NO_STEP ? 1 : 2);
}

/* The double binary tree over @members on @region bytes: half of it up
 * and down one in-order binary tree, half on the same tree shifted by one
 * member.  @after as for ring(). */
static void
tree (WeftSchedule *s, const uint32_t *members, uint32_t m, uint64_t base,
      uint64_t region, uint32_t tag, uint32_t *after)
{
  g_autofree uint32_t *pos_parent = g_new (uint32_t, m);
  g_autofree uint32_t *parent = g_new (uint32_t, m);
  g_autofree uint32_t *n_children = g_new (uint32_t, m);
  g_autofree uint32_t *children = g_new (uint32_t, 2 * (size_t) m);
  g_autofree uint32_t *done = g_new (uint32_t, 2 * (size_t) m);
  /* Each send and receive, to pair them: up to and down from the parent,
   * and from and down to each child. */
  g_autofree uint32_t *up_send = g_new (uint32_t, m);
  g_autofree uint32_t *down_recv = g_new (uint32_t, m);
  g_autofree uint32_t *child_recv = g_new (uint32_t, 2 * (size_t) m);
  g_autofree uint32_t *down_send = g_new (uint32_t, 2 * (size_t) m);

  pos_parent[weft_tree_build (0, m - 1, pos_parent)] = G_MAXUINT32;
  for (uint32_t t = 0; t < 2; t++)
    {
      uint64_t half = weft_part (region, 2, t);
      uint64_t at = base + weft_part_offset (region, 2, t);
      for (uint32_t j = 0; j < m; j++)
        n_children[j] = 0;
      for (uint32_t q = 0; q < m; q++)
        parent[(q + t) % m] = pos_parent[q] == G_MAXUINT32
                                  ? G_MAXUINT32
                                  : (pos_parent[q] + t) % m;
      for (uint32_t j = 0; j < m; j++)
        if (parent[j] != G_MAXUINT32)
          children[2 * (size_t) parent[j] + n_children[parent[j]]++] = j;
      for (uint32_t j = 0; j < m; j++)
        {
          uint32_t have = after[j];
          for (uint32_t c = 0; c < n_children[j]; c++)
            {
              uint32_t child = members[children[2 * (size_t) j + c]];
              uint32_t got = weft_schedule_recv (s, members[j], child, tag,
                                                 half, WEFT_NO_STEP);
              child_recv[2 * (size_t) j + c] = got;
              have = join (s, members[j], half, have, got);
              weft_schedule_region (s, members[j], got, at);
              weft_schedule_region (s, members[j], have, at);
            }
          if (parent[j] != G_MAXUINT32)
            {
              up_send[j] = weft_schedule_send (s, members[j],
                                               members[parent[j]], tag, half,
                                               have);
              have = down_recv[j] = weft_schedule_recv (
                  s, members[j], members[parent[j]], tag, half, WEFT_NO_STEP);
              weft_schedule_region (s, members[j], up_send[j], at);
              weft_schedule_region (s, members[j], have, at);
            }
          for (uint32_t c = 0; c < n_children[j]; c++)
            {
              down_send[2 * (size_t) j + c] = weft_schedule_send (
                  s, members[j], members[children[2 * (size_t) j + c]], tag,
                  half, have);
              weft_schedule_region (s, members[j],
                                    down_send[2 * (size_t) j + c], at);
            }
          done[2 * (size_t) j + t] = have;
        }
      for (uint32_t j = 0; j < m; j++)
        for (uint32_t c = 0; c < n_children[j]; c++)
          {
            uint32_t x = children[2 * (size_t) j + c];
            weft_schedule_match (s, members[x], up_send[x], members[j],
                                 child_recv[2 * (size_t) j + c]);
            weft_schedule_match (s, members[j], down_send[2 * (size_t) j + c],
                                 members[x], down_recv[x]);
          }
    }
  for (uint32_t j = 0; j < m; j++)
    after[j] = join (s, members[j], 0, done[2 * (size_t) j],
                     done[2 * (size_t) j + 1]);
}

/* An all_reduce of @region bytes among the @m ranks @members on @tag, the
 * level across servers; @after as for ring(). */
typedef void (*AcrossFn) (WeftSchedule *s, const uint32_t *members,
                          uint32_t m, uint64_t base, uint64_t region,
                          uint32_t tag, uint32_t *after);

/* The ring all_reduce across servers: reduce-scatter, then all-gather. */
static void
ring_across (WeftSchedule *s, const uint32_t *members, uint32_t m,
             uint64_t base, uint64_t region, uint32_t tag, uint32_t *after)
{
  ring (s, members, m, base, region, 0, TRUE, TRUE, tag, after);
  ring (s, members, m, base, region, -1, FALSE, TRUE, tag, after);
}

/* A counted schedule's figures at a point of its making. */
typedef struct {
  uint64_t steps, deps, ends, matched, roots;
  uint32_t *n_steps;            /* per rank */
} Counted;

/* The two-level all_reduce with @across between servers. */
static void
two_level (WeftSchedule *s, uint64_t size, const WeftCollectiveParams *p,
           AcrossFn across)
{
  uint32_t n = s->n_gpus, local = p->local, servers = n / local;
  uint32_t pieces = p->channels * p->chunks, first_deps = 0;
  g_autofree uint32_t *after = g_new (uint32_t, n);
  g_autofree uint32_t *staged = g_new (uint32_t, n);
  g_autofree uint32_t *members = g_new (uint32_t, MAX (local, servers));
  g_autofree uint32_t *dep = g_new (uint32_t, MAX (local, servers));

  /* Counting: the figures once the first piece is made. */
  g_autofree uint32_t *marked = s->counting ? g_new (uint32_t, s->n_ranks)
                                            : NULL;
  Counted mark = { 0, 0, 0, 0, 0, marked };

  g_assert (local >= 1 && n % local == 0);
  for (uint32_t r = 0; r < n; r++)
    staged[r] = WEFT_NO_STEP;

  /* The buffer goes through in pieces; piece k starts inside the server
   * once piece k - 1 has left it, so that the levels overlap. */
  for (uint32_t k = 0; k < pieces; k++)
    {
      uint64_t part = weft_part (size, pieces, k);
      uint64_t at = weft_part_offset (size, pieces, k);
      uint32_t tag = 3 * k;
      for (uint32_t r = 0; r < n; r++)
        after[r] = staged[r];

      /* 1. Inside each server: local rank i ends owning slice i. */
      for (uint32_t g = 0; g < servers && local > 1; g++)
        {
          for (uint32_t i = 0; i < local; i++)
            {
              members[i] = g * local + i;
              dep[i] = after[members[i]];
            }
          ring (s, members, local, at, part, 1, TRUE, FALSE, tag, dep);
          for (uint32_t i = 0; i < local; i++)
            after[members[i]] = staged[members[i]] = dep[i];
        }
      /* 2. Across servers, slice i among the GPUs of local index i. */
      for (uint32_t i = 0; i < local && servers > 1; i++)
        {
          uint64_t slice = weft_part (part, local, i);
          for (uint32_t g = 0; g < servers; g++)
            {
              members[g] = g * local + i;
              dep[g] = after[members[g]];
            }
          across (s, members, servers,
                  at + weft_part_offset (part, local, i), slice, tag + 1,
                  dep);
          for (uint32_t g = 0; g < servers; g++)
            after[members[g]] = dep[g];
        }
      /* 3. Inside each server: every GPU gets every slice. */
      for (uint32_t g = 0; g < servers && local > 1; g++)
        {
          for (uint32_t i = 0; i < local; i++)
            {
              members[i] = g * local + i;
              dep[i] = after[members[i]];
            }
          ring (s, members, local, at, part, 0, FALSE, FALSE, tag + 2, dep);
        }
      /* Every piece adds the steps the first did, rank by rank, and the
       * dependencies the second did (the first waits for no piece before
       * it): room for the others, made at once; a schedule that counts
       * adds them at once and is done. */
      if (s->counting && k == 1 && pieces > 2)
        {
          uint64_t more = pieces - 2;
          s->counted_steps += more * (s->counted_steps - mark.steps);
          s->counted_deps += more * (s->counted_deps - mark.deps);
          s->n_ends += more * (s->n_ends - mark.ends);
          s->n_matched += more * (s->n_matched - mark.matched);
          s->counted_tags = MAX (s->counted_tags, 3 * pieces);
          s->counted_roots += more * (s->counted_roots - mark.roots);
          for (uint32_t r = 0; r < s->n_ranks; r++)
            s->n_steps[r] = (uint32_t) MIN (
                s->n_steps[r] + more * (s->n_steps[r] - mark.n_steps[r]),
                UINT32_MAX - 1);
          return;
        }
      if (s->counting && k == 0)
        {
          mark = (Counted) { s->counted_steps, s->counted_deps, s->n_ends,
                             s->n_matched, s->counted_roots, mark.n_steps };
          memcpy (mark.n_steps, s->n_steps, s->n_ranks * sizeof (uint32_t));
        }
      if (k == 0)
        {
          for (uint32_t r = 0; r < n; r++)
            weft_schedule_reserve (s, r, (pieces - 1) * s->n_steps[r], 0);
          first_deps = s->n_deps;
        }
      else if (k == 1)
        weft_schedule_reserve (s, 0, 0, (uint64_t) (pieces - 2)
                                            * (s->n_deps - first_deps));
    }
}

void
weft_hier_all_reduce (WeftSchedule *s, uint64_t size,
                      const WeftCollectiveParams *p)
{
  two_level (s, size, p, ring_across);
}

void
weft_hier_rhd_all_reduce (WeftSchedule *s, uint64_t size,
                          const WeftCollectiveParams *p)
{
  two_level (s, size, p, weft_rhd_group);
}

void
weft_hier_tree_all_reduce (WeftSchedule *s, uint64_t size,
                           const WeftCollectiveParams *p)
{
  two_level (s, size, p, tree);
}

/* Left to auto, the two-level algorithms cut the buffer into pieces of
 * which each GPU of a server takes at least WEFT_LEAST_CHUNK, 1 to
 * WEFT_CHUNKS: a small buffer goes through the three levels in one piece,
 * paying each send's latency once, as NCCL's own algorithms would move
 * it. */
gboolean
weft_hier_fit (WeftFit *fit, WeftCollectiveParams *p, GError **error)
{
  (void) error;
  if (p != NULL && p->chunks == 0 && p->channels <= 1)
    {
      uint64_t least = (uint64_t) MAX (fit->local, 1) * WEFT_LEAST_CHUNK;
      uint64_t pieces = (fit->size + least - 1) / least;
      p->chunks = (uint32_t) CLAMP (pieces, 1, WEFT_CHUNKS);
    }
  return TRUE;
}

/* NCCL's NVLS_TREE: inside each server the GPUs upload their buffer to the
 * NVSwitch chips, which add it up (each chip its share, as for NVLS) and
 * hand GPU i slice i of the sum; slice i is all-reduced across servers
 * among the GPUs of local index i by double binary tree; then GPU i
 * uploads its slice and the chips multicast it to the server's other
 * GPUs.  Pieces pipeline as in weft_hier_all_reduce(). */
void
weft_nvls_tree_all_reduce (WeftSchedule *s, uint64_t size,
                           const WeftCollectiveParams *p)
{
  uint32_t n = s->n_gpus, local = p->local, servers = n / local;
  uint32_t m = p->n_switches, pieces = p->channels * p->chunks;
  g_autofree uint32_t *after = g_new (uint32_t, n);
  g_autofree uint32_t *staged = g_new (uint32_t, n);
  g_autofree uint32_t *members = g_new (uint32_t, servers);
  g_autofree uint32_t *dep = g_new (uint32_t, servers);
  g_autofree uint64_t *share = g_new (uint64_t, m);
  g_autofree uint32_t *got = g_new (uint32_t, MAX (local, m));
  /* Where slice i's part of switch j's share lies in the piece: slice by
   * slice, each switch's part in turn, so that a slice is one region; a
   * share is then `local` places (for the data check). */
  g_autofree uint64_t *place = g_new (uint64_t, (size_t) m * local);
  g_autofree uint64_t *places = g_new (uint64_t, 2 * (size_t) local);
  double total = 0;

  g_assert (local >= 1 && n % local == 0 && m > 0);
  for (uint32_t j = 0; j < m; j++)
    total += p->switch_share[j];
  for (uint32_t r = 0; r < n; r++)
    staged[r] = WEFT_NO_STEP;
  for (uint32_t k = 0; k < pieces; k++)
    {
      uint64_t part = weft_part (size, pieces, k), given = 0;
      uint32_t tag = 5 * k;
      for (uint32_t j = 0; j < m; j++)
        {
          share[j] = (uint64_t) ((double) part * p->switch_share[j] / total);
          given += share[j];
        }
      share[0] += part - given;
      uint64_t at = weft_part_offset (size, pieces, k);
      for (uint32_t i = 0; i < local; i++)
        for (uint32_t j = 0; j < m; j++)
          {
            place[(size_t) j * local + i] = at;
            at += weft_part (share[j], local, i);
          }
      for (uint32_t r = 0; r < n; r++)
        after[r] = staged[r];

      /* 1. Reduce in the switches; GPU i gets slice i (of every share). */
      for (uint32_t g = 0; g < servers; g++)
        {
          for (uint32_t j = 0; j < m; j++)
            {
              uint32_t sw = n + g * m + j;
              if (share[j] == 0)
                continue;
              for (uint32_t i = 0; i < local; i++)
                {
                  places[2 * i] = place[(size_t) j * local + i];
                  places[2 * i + 1] = weft_part (share[j], local, i);
                }
              for (uint32_t i = 0; i < local; i++)
                weft_schedule_region_list (
                    s, g * local + i,
                    weft_schedule_send (s, g * local + i, sw, tag, share[j],
                                        after[g * local + i]),
                    places, local);
              for (uint32_t i = 0; i < local; i++)
                {
                  got[i] = weft_schedule_recv (s, sw, g * local + i, tag,
                                               share[j], WEFT_NO_STEP);
                  weft_schedule_region_list (s, sw, got[i], places, local);
                }
              uint32_t sum = weft_schedule_add (s, sw, WEFT_STEP_REDUCE, 0, 0,
                                                share[j], got, local);
              weft_schedule_region_list (s, sw, sum, places, local);
              for (uint32_t i = 0; i < local; i++)
                weft_schedule_region (
                    s, sw,
                    weft_schedule_send (s, sw, g * local + i, tag + 1,
                                        weft_part (share[j], local, i), sum),
                    place[(size_t) j * local + i]);
            }
          for (uint32_t i = 0; i < local; i++)
            {
              uint32_t r = g * local + i, have = 0;
              for (uint32_t j = 0; j < m; j++)
                if (share[j] > 0)
                  {
                    got[have] = weft_schedule_recv (
                        s, r, n + g * m + j, tag + 1,
                        weft_part (share[j], local, i), WEFT_NO_STEP);
                    weft_schedule_region (s, r, got[have++],
                                          place[(size_t) j * local + i]);
                  }
              after[r] = staged[r] = weft_schedule_add (
                  s, r, WEFT_STEP_REDUCE, 0, 0, 0, got, have);
            }
        }
      /* 2. Across servers, slice i among the GPUs of local index i. */
      for (uint32_t i = 0; i < local && servers > 1; i++)
        {
          uint64_t slice = 0;
          for (uint32_t j = 0; j < m; j++)
            slice += weft_part (share[j], local, i);
          for (uint32_t g = 0; g < servers; g++)
            {
              members[g] = g * local + i;
              dep[g] = after[members[g]];
            }
          tree (s, members, servers, place[i], slice, tag + 2, dep);
          for (uint32_t g = 0; g < servers; g++)
            after[members[g]] = dep[g];
        }
      /* 3. Each GPU uploads its slice; the switches multicast it to the
       * server's other GPUs. */
      for (uint32_t g = 0; g < servers && local > 1; g++)
        for (uint32_t j = 0; j < m; j++)
          {
            uint32_t sw = n + g * m + j;
            if (share[j] == 0)
              continue;
            const uint64_t *where = &place[(size_t) j * local];
            for (uint32_t i = 0; i < local; i++)
              weft_schedule_region (
                  s, g * local + i,
                  weft_schedule_send (s, g * local + i, sw, tag + 3,
                                      weft_part (share[j], local, i),
                                      after[g * local + i]),
                  where[i]);
            for (uint32_t i = 0; i < local; i++)
              {
                uint64_t bytes = weft_part (share[j], local, i);
                uint32_t in = weft_schedule_recv (s, sw, g * local + i,
                                                  tag + 3, bytes,
                                                  WEFT_NO_STEP);
                weft_schedule_region (s, sw, in, where[i]);
                for (uint32_t o = 0; o < local; o++)
                  if (o != i)
                    weft_schedule_region (
                        s, sw,
                        weft_schedule_send (s, sw, g * local + o, tag + 4,
                                            bytes, in),
                        where[i]);
              }
            for (uint32_t o = 0; o < local; o++)
              for (uint32_t i = 0; i < local; i++)
                if (i != o)
                  weft_schedule_region (
                      s, g * local + o,
                      weft_schedule_recv (s, g * local + o, sw, tag + 4,
                                          weft_part (share[j], local, i),
                                          WEFT_NO_STEP),
                      where[i]);
          }
    }
}

uint32_t
weft_nvls_tree_switch_ranks (uint32_t n, const WeftCollectiveParams *p)
{
  return p->n_switches * (n / MAX (p->local, 1));
}

/* NCCL's NVLS channels on a multi-node communicator (NVLS_NCHANNELS_SM90
 * 16, NVLS_NCHANNELS_SM100 32, src/transport/nvls.cc), its chunk
 * (NCCL_NVLS_CHUNKSIZE 128 KiB, halved from four nodes by
 * NCCL_NVLSTREE_MAX_CHUNKSIZE's default) and the NVLS heads of a channel, a
 * GPU of the server each up to NCCL_MAX_NVLS_ARITY (src/include/device.h). */
#define NVLS_TREE_CHANNELS_SM90 16
#define NVLS_TREE_CHANNELS_SM100 32
#define NVLS_TREE_CHUNK (128 * 1024)
#define NVLS_TREE_CHUNK_4_NODES (64 * 1024)
#define NVLS_MAX_HEADS 32

/* nvls-tree's pieces when left to auto: the chunks NCCL cuts a channel's
 * part of each head into (calcCollChunking() in src/enqueue.cc), NVLS's
 * chunk lowered to as little as 32 KiB while the buffer is small beside
 * what every channel's heads take at once; as many pieces as that makes,
 * at most WEFT_CHUNKS (weft's pipeline).  A small buffer is one piece:
 * every stage waits for the one before, as in NCCL, rather than
 * overlapping pieces NCCL never cuts.  A GPU whose architecture is not
 * said counts as Hopper. */
static uint32_t
nvls_tree_pieces (uint32_t compute_capability, uint32_t local,
                  uint32_t servers, uint64_t size)
{
  uint64_t ops = (uint64_t) (compute_capability >= 100
                                 ? NVLS_TREE_CHANNELS_SM100
                                 : NVLS_TREE_CHANNELS_SM90)
                 * MIN (local, NVLS_MAX_HEADS);
  uint64_t chunk = servers >= 4 ? NVLS_TREE_CHUNK_4_NODES : NVLS_TREE_CHUNK;
  static const struct { uint64_t times, at_most; } steps[] = {
    { 32, 262144 }, { 16, 131072 }, { 4, 65536 }, { 1, 32768 },
  };

  for (size_t i = 0; i < G_N_ELEMENTS (steps); i++)
    if (size < steps[i].times * ops * chunk && chunk > steps[i].at_most)
      chunk = steps[i].at_most;
  uint64_t pieces = (size + ops * chunk - 1) / (ops * chunk);
  return (uint32_t) CLAMP (pieces, 1, WEFT_CHUNKS);
}

/* Each server's switches that reduce (joined to all of its GPUs), as many
 * in every server, appended server by server; the shares are the first
 * server's, as the builder gives every server the same. */
gboolean
weft_nvls_tree_fit (WeftFit *fit, WeftCollectiveParams *p, GError **error)
{
  uint32_t n = fit->n, local = fit->local, servers = n / local, per = 0;
  guint first = fit->nodes->len;

  if (servers < 2)
    {
      g_set_error (error, WEFT_SCHEDULE_ERROR, WEFT_SCHEDULE_ERROR_UNFIT, "nvls-tree needs GPUs in "
                   "two servers or more (inside one server, use nvls)");
      return FALSE;
    }
  gboolean planes = p != NULL && !p->split_planes && fit->planes != NULL;
  for (uint32_t g = 0; g < servers; g++)
    {
      const uint32_t *gpus = fit->gpus + (size_t) g * local;
      g_autoptr (GArray) mine = g_array_new (FALSE, FALSE, sizeof (uint32_t));
      g_autoptr (GArray) share = g_array_new (FALSE, FALSE, sizeof (double));
      g_autoptr (GError) why = NULL;
      if (!weft_fit_switches (fit->topo, gpus, local, mine, share, &why))
        {
          g_set_error (error, WEFT_SCHEDULE_ERROR, WEFT_SCHEDULE_ERROR_UNFIT, "the fabric cannot run "
                       "nvls-tree: the GPUs of server %u have no switches "
                       "that reduce (reduce_bandwidth above 0) joined to all "
                       "of them", g);
          return FALSE;
        }
      if (g == 0)
        {
          per = share->len;
          g_array_append_vals (fit->shares, share->data, share->len);
        }
      else if (share->len != per)
        {
          g_set_error (error, WEFT_SCHEDULE_ERROR, WEFT_SCHEDULE_ERROR_UNFIT, "nvls-tree needs as "
                       "many switches that reduce in every server: server 0 "
                       "has %u, server %u %u", per, g, share->len);
          return FALSE;
        }
      g_array_append_vals (fit->nodes, mine->data, per);
      planes = planes && weft_fit_planes (fit->topo, gpus, local,
                                          (const uint32_t *) mine->data,
                                          (const double *) fit->shares->data,
                                          per);
    }
  if (planes)
    {
      /* Each server's chips as one place (the builder gives every server
       * the first one's shares, and the chips of each carry in
       * proportion to them). */
      g_autoptr (GArray) sw = g_array_new (FALSE, FALSE, sizeof (uint32_t));
      g_array_append_vals (sw, &g_array_index (fit->nodes, uint32_t, first),
                           servers * per);
      g_array_set_size (fit->nodes, first);
      double total = 0;
      for (uint32_t j = 0; j < per; j++)
        total += g_array_index (fit->shares, double, j);
      for (uint32_t g = 0; g < servers; g++)
        {
          uint32_t place = weft_fit_add_planes (
              fit, &g_array_index (sw, uint32_t, g * per),
              (const double *) fit->shares->data, per);
          g_array_append_val (fit->nodes, place);
        }
      g_array_set_size (fit->shares, 0);
      g_array_append_val (fit->shares, total);
    }
  if (p != NULL)
    {
      p->n_switches = fit->shares->len;
      p->switch_share = (const double *) fit->shares->data;
      if (p->chunks == 0 && p->channels <= 1)
        p->chunks = nvls_tree_pieces (
            fit->topo->nodes[fit->gpus[0]].device->compute_capability, local,
            servers, fit->size);
    }
  return TRUE;
}
