/* weft: the double binary tree all_reduce, as NCCL runs it: half of the
 * buffer is reduced up one binary tree and broadcast back down, the other
 * half on a second tree in which the ranks are shifted by one, so that most
 * ranks that are leaves in one tree are inner nodes in the other and both
 * directions of every link carry traffic.  Each half is cut into
 * channels x chunks pieces that follow each other up and down. */
#include "collective-private.h"

uint32_t
weft_tree_build (uint32_t lo, uint32_t hi, uint32_t *parent)
{
  uint32_t mid = lo + (hi - lo) / 2;

  if (mid > lo)
    parent[weft_tree_build (lo, mid - 1, parent)] = mid;
  if (mid < hi)
    parent[weft_tree_build (mid + 1, hi, parent)] = mid;
  return mid;
}

void
weft_tree_all_reduce (WeftSchedule *s, uint64_t size,
                      const WeftCollectiveParams *p)
{
  uint32_t n = s->n_ranks;
  g_autofree uint32_t *pos_parent = g_new (uint32_t, n);
  g_autofree uint32_t *parent = g_new (uint32_t, n);
  g_autofree uint32_t *n_children = g_new (uint32_t, n);
  g_autofree uint32_t *children = g_new (uint32_t, 2 * (size_t) n);
  uint32_t pieces = p->channels * p->chunks;

  uint32_t root_pos = weft_tree_build (0, n - 1, pos_parent);
  pos_parent[root_pos] = G_MAXUINT32;
  for (uint32_t t = 0; t < 2; t++)
    {
      /* Rank of position q in tree t. */
      for (uint32_t r = 0; r < n; r++)
        n_children[r] = 0;
      for (uint32_t q = 0; q < n; q++)
        {
          uint32_t r = (q + t) % n;
          parent[r] = pos_parent[q] == G_MAXUINT32 ? G_MAXUINT32
                                                   : (pos_parent[q] + t) % n;
        }
      for (uint32_t r = 0; r < n; r++)
        if (parent[r] != G_MAXUINT32)
          children[2 * (size_t) parent[r] + n_children[parent[r]]++] = r;

      uint64_t half = weft_part (size, 2, t);
      for (uint32_t piece = 0; piece < pieces; piece++)
        {
          uint64_t bytes = weft_part (half, pieces, piece);
          uint32_t up = (t * pieces + piece) * 2, down = up + 1;
          for (uint32_t r = 0; r < n; r++)
            {
              /* Up: take each child's partial sum, add it, pass it on. */
              uint32_t have = WEFT_NO_STEP;
              for (uint32_t c = 0; c < n_children[r]; c++)
                {
                  uint32_t child = children[2 * (size_t) r + c];
                  uint32_t recv = weft_schedule_recv (s, r, child, up, bytes,
                                                      WEFT_NO_STEP);
                  uint32_t deps[2] = { recv, have };
                  have = weft_schedule_add (s, r, WEFT_STEP_REDUCE, 0, 0, bytes,
                                            deps, 2);
                }
              if (parent[r] != G_MAXUINT32)
                {
                  weft_schedule_send (s, r, parent[r], up, bytes, have);
                  /* Down: the result comes back from the parent. */
                  have = weft_schedule_recv (s, r, parent[r], down, bytes,
                                             WEFT_NO_STEP);
                }
              for (uint32_t c = 0; c < n_children[r]; c++)
                weft_schedule_send (s, r, children[2 * (size_t) r + c], down,
                                    bytes, have);
            }
        }
    }
}
