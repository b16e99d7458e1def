/* weft: what the network's own files share beyond network.h. */
#pragma once

#include "network/network.h"

G_BEGIN_DECLS

/* Whole transfers' routes remembered (the fidelities that take whole
 * stripes, the flow model): the links of all the stripes of a transfer
 * from src to dst, merged, the stripes crossing each link, and the
 * latency.  A collective sends from a GPU to the same few peers over
 * and over (each piece of each step): one look-up here replaces routing
 * every stripe.  Only routes no flow id took part in are kept, so results
 * are the same with or without them.
 *
 * A route sits in any slot of the set of ROUTE_WAYS its (src, dst) hashes
 * to, replacing the one used least recently when the set is full.  The
 * keys of a set share one cache line; a slot's hops, links and stripes lie
 * in a pool, as long as they are: a look-up reads one line, and only a hit
 * reads its route.  Sets are of eight: in sets of a few, the pairs of a
 * ring (one peer a GPU) that hash to one set would push each other out
 * and be routed again and again. */
#define ROUTE_LINKS 64
#define ROUTE_HOPS 32           /* a GB200's 18 NVLinks, each a stripe */
#define ROUTE_WAYS 8

struct _WeftRoute {
  WeftTime latency;
  uint32_t used;                /* clock of the last use */
  uint32_t body;                /* in the pool: hops, links, then (striped
                                   routes) a word a link, bit i: stripe i
                                   crosses it */
  uint8_t n_links;
  uint8_t n_hops;               /* 0 or 1: one part, not striped */
  uint8_t crosses;              /* WEFT_CROSSES_* */
};

typedef struct _WeftRoute Route;

/* A slot's key: (src, dst); 0 (src == dst == 0, never asked for): empty. */
static inline uint64_t
route_key (uint32_t src, uint32_t dst)
{
  return (uint64_t) src << 32 | dst;
}

/* Words of the pool a route of @n_hops and @n_links takes: a striped
 * route's also hold its last transfer's split (see route_memo()). */
static inline uint32_t
route_words (uint32_t n_hops, uint32_t n_links)
{
  return n_hops + n_links + (n_hops > 1 ? n_links + 2 + 4 * n_links : 0);
}

static inline const uint32_t *
route_links (const WeftNetwork *net, const Route *r)
{
  return net->route_pool + r->body + r->n_hops;
}

static inline const uint32_t *
route_stripes (const WeftNetwork *net, const Route *r)
{
  return net->route_pool + r->body + r->n_hops + r->n_links;
}

/* A striped route's last transfer, whose split the next one of the same
 * size takes as it is (a collective sends the same piece size over and
 * over): its bytes (two words), then each link's bytes (two words a
 * link), then each link's share of the bytes (a double,
 * two words a link: the flow model's divisions, done once).  Bytes 0: none
 * yet. */
static inline uint32_t *
route_memo (const WeftNetwork *net, const Route *r)
{
  return net->route_pool + r->body + r->n_hops + 2 * r->n_links;
}

/* Remembered routes (routes.c): set up (again) or free the cache, find
 * the route from @src to @dst (NULL if none), remember one: @n_links
 * @links leaving by the @n_hops first hops @hops (0 or 1: one part), with
 * @stripes saying which stripes cross each link (NULL for one part). */
void weft_routes_init (WeftNetwork *net);
void weft_routes_free (WeftNetwork *net);
Route *weft_route_find (WeftNetwork *net, uint32_t src, uint32_t dst);
/* Route and remember, before any transfer takes it, the route from @src
 * to @dst if a transfer would remember it (one part, no flow's hash, no
 * load); FALSE if it would not. */
gboolean weft_route_learn (WeftNetwork *net, uint32_t src, uint32_t dst);
void weft_route_remember (WeftNetwork *net, uint32_t src, uint32_t dst,
                          const uint32_t *links, uint32_t n_links,
                          const uint32_t *hops, uint32_t n_hops,
                          const uint32_t *stripes, WeftTime latency);

/* Append the route of @bytes from @src to @dst, as weft_network_transfer()
 * would take it (striped over equal-cost first hops, each stripe its
 * share), to @links (uint32_t) and @carried (uint64_t, the bytes each of
 * them carries), a link already there gaining the bytes; returns the
 * route's latency (its slowest stripe's).  Takes flow ids as a transfer
 * would.  *@fixed says whether the route is one part, the same for any
 * flow id, so that another transfer between the two may take it again. */
WeftTime weft_network_gather_route (WeftNetwork *net, uint32_t src,
                                    uint32_t dst, uint64_t bytes,
                                    GArray *links, GArray *carried,
                                    gboolean *fixed);

/* Start one transfer of @bytes from node @src over the @n links @links,
 * each carrying @carried of it, arriving @latency after its last byte
 * leaves (a fidelity that takes whole stripes only). */
void weft_network_start_gathered (WeftNetwork *net, uint32_t src,
                                  uint64_t bytes, double cap,
                                  const uint32_t *links,
                                  const uint64_t *carried, uint32_t n,
                                  WeftTime latency, WeftEventFn done,
                                  void *target, void *data);

/* Run done(sim, target, data) once @parts calls of the event function this
 * returns (with the target it sets) have run: a transfer in parts.  Kept
 * by the network until then, so that a run stopped early frees it. */
WeftEventFn weft_network_join (WeftNetwork *net, uint32_t parts,
                               WeftEventFn done, void *target, void *data,
                               void **join_target);

/* Whether a path of links that are up joins @src to @dst once faults have
 * changed the links during the run; if not, the run fails
 * (weft_network_failure()) and stops. */
gboolean weft_network_joined (WeftNetwork *net, uint32_t src, uint32_t dst);

G_END_DECLS
