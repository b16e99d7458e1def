/* weft: deterministic random streams. */
#include "rng.h"

void
weft_rng_init (WeftRng *rng, uint64_t seed, uint64_t stream)
{
  /* Two rounds of mixing keep neighbouring (seed, stream) pairs apart; the
   * four state words are then successive SplitMix64 outputs, which are never
   * all zero. */
  uint64_t x = weft_mix64 (weft_mix64 (seed) ^ weft_mix64 (~stream));

  for (int i = 0; i < 4; i++)
    {
      x += UINT64_C (0x9e3779b97f4a7c15);
      rng->s[i] = weft_mix64 (x);
    }
}
