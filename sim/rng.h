/* weft: deterministic random streams.
 *
 * Each entity that needs randomness (a switch hashing flows, a PHOLD process,
 * a traffic generator) owns a WeftRng derived from (global seed, entity id).
 * Streams do not depend on each other, so adding an entity leaves every other
 * entity's stream unchanged.  The generator is xoshiro256** (Blackman and
 * Vigna), seeded through SplitMix64.
 */
#pragma once

#include <glib.h>
#include <math.h>
#include <stdint.h>

G_BEGIN_DECLS

typedef struct {
  uint64_t s[4];
} WeftRng;

/* Set @rng to the stream of entity @stream under @seed.  The same pair always
 * gives the same stream; different pairs give unrelated streams. */
void weft_rng_init (WeftRng *rng, uint64_t seed, uint64_t stream);

/* SplitMix64's finaliser: a bijective 64-bit mix, also used for hashing ids. */
static inline uint64_t
weft_mix64 (uint64_t x)
{
  x += UINT64_C (0x9e3779b97f4a7c15);
  x = (x ^ (x >> 30)) * UINT64_C (0xbf58476d1ce4e5b9);
  x = (x ^ (x >> 27)) * UINT64_C (0x94d049bb133111eb);
  return x ^ (x >> 31);
}

static inline uint64_t
weft_rng_rotl_ (uint64_t x, int k)
{
  return (x << k) | (x >> (64 - k));
}

/* The next 64 random bits. */
static inline uint64_t
weft_rng_next (WeftRng *rng)
{
  uint64_t *s = rng->s;
  uint64_t result = weft_rng_rotl_ (s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;

  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = weft_rng_rotl_ (s[3], 45);
  return result;
}

/* A double uniform in [0, 1), with 53 random bits. */
static inline double
weft_rng_uniform (WeftRng *rng)
{
  return (double) (weft_rng_next (rng) >> 11) * 0x1.0p-53;
}

/* An integer uniform in [0, @n), without bias (Lemire's method).  @n > 0. */
static inline uint64_t
weft_rng_below (WeftRng *rng, uint64_t n)
{
  __uint128_t m = (__uint128_t) weft_rng_next (rng) * n;
  uint64_t low = (uint64_t) m;

  if (low < n)
    {
      uint64_t threshold = -n % n;
      while (low < threshold)
        {
          m = (__uint128_t) weft_rng_next (rng) * n;
          low = (uint64_t) m;
        }
    }
  return (uint64_t) (m >> 64);
}

/* An exponentially distributed double with the given mean. */
static inline double
weft_rng_exponential (WeftRng *rng, double mean)
{
  return -mean * log (1.0 - weft_rng_uniform (rng));
}

G_END_DECLS
