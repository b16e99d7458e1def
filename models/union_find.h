/* weft: the root of an element's set in a union-find forest, halving the
 * path on the way (parent[x] == x at a root). */
#pragma once

#include <stdint.h>

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
