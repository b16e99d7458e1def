/* weft: a union-find forest over 0..n-1 in @parent (parent[x] == x at a
 * root). */
#pragma once

#include <glib.h>
#include <stdint.h>

/* The root of @x's set, halving the path on the way. */
static inline uint32_t
weft_find_root (uint32_t *parent, uint32_t x)
{
  while (parent[x] != x)
    {
      parent[x] = parent[parent[x]];
      x = parent[x];
    }
  return x;
}

/* Join the sets of @x and @y; the smaller root becomes the root of both, so
 * a set's root is its first element. */
static inline void
weft_union (uint32_t *parent, uint32_t x, uint32_t y)
{
  uint32_t a = weft_find_root (parent, x), b = weft_find_root (parent, y);

  if (a != b)
    parent[MAX (a, b)] = MIN (a, b);
}
