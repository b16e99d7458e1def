/* weft: rings over GPUs joined to each other directly (NVLink meshes such as
 * the DGX-1's hybrid cube-mesh), found as NCCL's search finds its channels:
 * rings along the links, as many as the links carry, each with the share
 * of the buffer its bandwidth earns. */
#pragma once

#include "topology/topology.h"

G_BEGIN_DECLS

typedef struct {
  uint32_t n;                   /* ranks in each ring */
  uint32_t n_rings;
  uint32_t *order;              /* ring i's ranks in ring order:
                                   order[i * n .. i * n + n) */
  uint64_t *weight;             /* ring i's bandwidth, B/s: its share of
                                   the buffer is weight[i] / the sum */
} WeftRings;

/* At most this many rings. */
#define WEFT_RINGS_MAX 16

/* The rings over the @n GPUs @gpus (rank i is gpus[i]) along the links
 * that join GPUs directly, at NCCL's model of each link: again and again
 * the ring whose least bandwidth left is the largest, taking that much
 * from each of its links, then the same ring the other way round, until
 * no ring is left.  NULL if no ring runs on
 * direct links alone (GPUs that meet through switches, of which any order
 * is as good), for fewer than 3 GPUs or more than 64. */
WeftRings *weft_rings_find (const WeftTopology *topo, const uint32_t *gpus,
                            uint32_t n);
void weft_rings_free (WeftRings *rings);

/* @count rings (two or more; one ring keeps rank order) over @n ranks that
 * span servers (@server: each rank's, as
 * the tree takes them), as NCCL's channels run across servers: ring c
 * enters server k at its GPU c - k (mod the GPUs a server) and passes its
 * GPUs in rank order from there, round, to the one before, which sends to
 * that same local GPU of server k + 1 (the last server's GPUs end with GPU
 * c instead, which closes the ring to server 0's), so each ring crosses
 * every boundary beside one GPU, through its network interface, and rings
 * as many as the GPUs of a server use every interface of every server.
 * Equal weights.
 * NULL unless the ranks come server by server, as many in each, in two
 * servers or more, more than one a server. */
WeftRings *weft_rings_across (const uint32_t *server, uint32_t n,
                              uint32_t count);

/* The GPUs a server has in @server (as for weft_rings_across()), or 0 if
 * the ranks do not come server by server, as many in each, in two servers
 * or more. */
uint32_t weft_rings_local (const uint32_t *server, uint32_t n);

/* The bytes of ring @i of @size bytes split by the rings' weights, exactly:
 * they add up to @size. */
uint64_t weft_rings_bytes (const WeftRings *rings, uint64_t size, uint32_t i);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (WeftRings, weft_rings_free)

G_END_DECLS
