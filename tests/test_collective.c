/* Tests of running collectives on fabrics: times against closed forms,
 * where the bytes go, choosing among candidates, and the speed-ups and
 * threads that must not change a result. */
#include "collectives/collective_run.h"
#include "collectives/nccl_model.h"
#include "collectives/schedule_file.h"
#include "topology/routing.h"
#include "topology/scenario.h"

#include <glib/gstdio.h>

#include <check.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#define SCENARIOS WEFT_SOURCE_DIR "/scenarios"

static WeftScenario *
load (const char *file)
{
  g_autofree char *path = g_build_filename (SCENARIOS, file, NULL);
  g_autoptr (GError) error = NULL;
  WeftScenario *s = weft_scenario_load (path, &error);

  ck_assert_msg (s != NULL, "%s", error ? error->message : "");
  return s;
}

/* How many of a table's @all cases to run: all of them, or with
 * WEFT_TEST_SMALL set (tests/valgrind.sh) the first @small, the smaller
 * fabrics at the head of the table.  A memory checker runs the same code
 * there in a fraction of the time the large fabrics take it. */
static guint
cases_to_run (guint all, guint small)
{
  return g_getenv ("WEFT_TEST_SMALL") ? MIN (all, small) : all;
}

static GArray *
all_gpus (const WeftTopology *topo)
{
  GArray *gpus = g_array_new (FALSE, FALSE, sizeof (uint32_t));

  for (uint32_t n = 0; n < topo->n_nodes; n++)
    if (topo->nodes[n].kind == WEFT_NODE_GPU)
      g_array_append_val (gpus, n);
  return gpus;
}

START_TEST (test_ring_all_reduce_closed_form)
{
  g_autoptr (WeftScenario) s = load ("dgx-h100.yaml");
  g_autoptr (GArray) gpus = all_gpus (s->topo);
  const uint64_t size = 1 << 30;
  /* A GPU's NVLink, one way, as NCCL's Simple protocol uses it: 18 links
   * at NCCL's 20.6 GB/s (the nvlink4 preset's nccl_bandwidth). */
  const double link = 18 * 20.6e9;
  const double reduce = 1117e9;                  /* H100 reduce_bandwidth */
  WeftCollectiveResult r;

  /* Pipelined (8 chunks), ring all_reduce of S over n GPUs sends 2(n-1)/n S
   * from every GPU and hides the reductions behind the transfers: busbw =
   * 2(n-1)/n S / T approaches the GPU's NVLink bandwidth (NCCL measures
   * about 370 GB/s on a DGX H100, hardware.md section 3). */
  WeftCollectiveParams piped = { 1, 8, 0, NULL, 1, NULL, NULL, 0, FALSE, NULL };
  ck_assert (weft_collective_run (s->topo, (uint32_t *) gpus->data, 8,
                                  WEFT_OP_ALL_REDUCE, WEFT_ALG_RING,
                                  WEFT_PROTOCOL_SIMPLE, size, &piped,
                                  &(WeftRunOptions) { WEFT_FIDELITY_FLOW, 1, 0, NULL, FALSE, 0, 0, NULL, 1, NULL }, &r, NULL));
  double busbw = size / (r.time * 1e-12) * 14 / 8;
  ck_assert_msg (busbw <= link && busbw >= 0.97 * link, "busbw %.1f GB/s",
                 busbw / 1e9);
  ck_assert_uint_eq (r.bytes_sent, 14 * (uint64_t) size);

  /* One chunk at a time, every step waits for the last: 14 transfers of a
   * piece p = S/8 and 7 reductions, each send paying Simple's NVLink hop
   * (3.4 us) and the path (two 100 ns links and a 100 ns switch), plus
   * Simple's base latency (8.4 us). */
  WeftCollectiveParams serial = { 1, 1, 0, NULL, 1, NULL, NULL, 0, FALSE, NULL };
  double p = size / 8.0;
  double closed = 8.4e6 + 14 * (3.4e6 + 300e3) + 14 * p * 1e12 / link
                  + 7 * p * 1e12 / reduce;
  for (int f = WEFT_FIDELITY_FLOW; f <= WEFT_FIDELITY_ANALYTICAL; f++)
    {
      ck_assert (weft_collective_run (s->topo, (uint32_t *) gpus->data, 8,
                                      WEFT_OP_ALL_REDUCE, WEFT_ALG_RING,
                                      WEFT_PROTOCOL_SIMPLE, size, &serial, &(WeftRunOptions) { f, 1, 0, NULL, FALSE, 0, 0, NULL, 1, NULL }, &r, NULL));
      ck_assert_msg (fabs (r.time - closed) <= 0.002 * closed,
                     "%s: %" G_GUINT64_FORMAT " ps vs %.0f ps",
                     weft_fidelity_name (f), r.time, closed);
    }
}
END_TEST

/* Bytes that node @v sent over its links in @r. */
static uint64_t
bytes_out (const WeftTopology *topo, const WeftCollectiveResult *r,
           uint32_t v)
{
  uint64_t bytes = 0;

  for (uint32_t i = topo->out_start[v]; i < topo->out_start[v + 1]; i++)
    bytes += r->stats->links[topo->out_links[i]].bytes;
  return bytes;
}

START_TEST (test_tree_chain_in_a_server)
{
  /* Inside one server NCCL's tree is a chain: GPU 7 up to 0, the root, and
   * back down; the other half of the buffer takes it the other way round,
   * so GPUs 0 and 7 each send S (S/2 as a head, S/2 as a tail) and every
   * other GPU 2S. */
  g_autoptr (WeftScenario) s = load ("dgx-h100.yaml");
  g_autoptr (GArray) gpus = all_gpus (s->topo);
  const uint64_t size = 64 << 20;
  const double link = 18 * 20.6e9, reduce = 1117e9;
  WeftCollectiveResult r;
  WeftCollectiveParams serial = { 1, 1, 0, NULL, 1, NULL, NULL, 0, FALSE, NULL };

  ck_assert (weft_collective_run (s->topo, (uint32_t *) gpus->data, 8,
                                  WEFT_OP_ALL_REDUCE, WEFT_ALG_TREE,
                                  WEFT_PROTOCOL_SIMPLE, size, &serial,
                                  &(WeftRunOptions) { WEFT_FIDELITY_FLOW, 1,
                                                      WEFT_US, NULL, FALSE, 0,
                                                      0, NULL, 1, NULL },
                                  &r, NULL));
  for (uint32_t g = 0; g < 8; g++)
    ck_assert_uint_eq (bytes_out (s->topo, &r, g_array_index (gpus, uint32_t,
                                                              g)),
                       (g == 0 || g == 7 ? 1 : 2) * size);
  weft_link_stats_free (r.stats);
  g_free (r.spans);

  /* One piece at a time and no sharing (analytical), each half climbs 7
   * hops, each send paying the tree's Simple NVLink hop (4.0 us) and the
   * path (300 ns) and moving S/2 at the GPU's NVLink rate, each GPU but
   * the tail adding it in (S/2 at the reduction rate), then 7 hops down;
   * plus Simple's base latency (8.4 us).  The halves climb from opposite
   * ends, so no GPU has both to add at once. */
  double half = size / 2.0;
  double closed = 8.4e6 + 14 * (4.0e6 + 300e3 + half * 1e12 / link)
                  + 7 * ceil (half * 1e12 / reduce);
  ck_assert (weft_collective_run (s->topo, (uint32_t *) gpus->data, 8,
                                  WEFT_OP_ALL_REDUCE, WEFT_ALG_TREE,
                                  WEFT_PROTOCOL_SIMPLE, size, &serial,
                                  &(WeftRunOptions) { WEFT_FIDELITY_ANALYTICAL,
                                                      1, 0, NULL, FALSE, 0, 0,
                                                      NULL, 1, NULL },
                                  &r, NULL));
  ck_assert_msg (fabs (r.time - closed) <= 0.001 * closed,
                 "%" G_GUINT64_FORMAT " ps vs %.0f ps", r.time, closed);
  g_free (r.spans);

  /* In 64 chunks that follow each other down the chain the transfers
   * pipeline: every middle GPU's 2S leave at no more than its NVLink
   * rate, and little slower, the chain's 14 hops costing about a chunk
   * each. */
  WeftCollectiveParams piped = { 1, 64, 0, NULL, 1, NULL, NULL, 0, FALSE, NULL };
  ck_assert (weft_collective_run (s->topo, (uint32_t *) gpus->data, 8,
                                  WEFT_OP_ALL_REDUCE, WEFT_ALG_TREE,
                                  WEFT_PROTOCOL_SIMPLE, 1 << 30, &piped,
                                  &(WeftRunOptions) { WEFT_FIDELITY_FLOW, 1,
                                                      0, NULL, FALSE, 0, 0,
                                                      NULL, 1, NULL },
                                  &r, NULL));
  double bound = 2.0 * (1 << 30) * 1e12 / link;
  ck_assert_msg (r.time >= bound && r.time <= (1 + 14.0 / 64) * 1.05 * bound,
                 "%" G_GUINT64_FORMAT " ps against a bound of %.0f ps",
                 r.time, bound);
  g_free (r.spans);
}
END_TEST

/* Assert that @alg with its chunks left to auto takes as long as in
 * @chunks given (with @channels, as auto would take them), over the first
 * @n GPUs of @s; @what names the case in the message. */
static void
auto_chunks_are (WeftScenario *s, uint32_t n, WeftAlgorithm alg,
                 WeftProtocolKind protocol, uint64_t size, uint32_t channels,
                 uint32_t chunks, const char *what)
{
  g_autoptr (GArray) gpus = all_gpus (s->topo);
  WeftRunOptions flow = { WEFT_FIDELITY_FLOW, 1, 0, NULL, FALSE, 0, 0, NULL,
                          1, NULL };
  WeftCollectiveParams chosen = { 0 };
  WeftCollectiveParams given = { channels, chunks, 0, NULL, 1, NULL, NULL, 0,
                                 FALSE, NULL };
  WeftCollectiveResult a, b;

  ck_assert (weft_collective_run (s->topo, (uint32_t *) gpus->data, n,
                                  WEFT_OP_ALL_REDUCE, alg, protocol, size,
                                  &chosen, &flow, &a, NULL));
  ck_assert (weft_collective_run (s->topo, (uint32_t *) gpus->data, n,
                                  WEFT_OP_ALL_REDUCE, alg, protocol, size,
                                  &given, &flow, &b, NULL));
  ck_assert_msg (a.time == b.time, "%s %s, %s, %u GPUs, %" G_GUINT64_FORMAT
                 " B: %" G_GUINT64_FORMAT " ps left to auto, %"
                 G_GUINT64_FORMAT " ps in %u chunks",
                 weft_algorithm_name (alg), weft_protocol_name (protocol),
                 what, n, size, a.time, b.time, chunks);
  weft_link_stats_free (a.stats);
  weft_link_stats_free (b.stats);
  g_free (a.spans);
  g_free (b.spans);
}

START_TEST (test_tree_chunks_as_nccl)
{
  /* Left to auto, each tree moves its part in chunks of at least 32 KiB,
   * as NCCL's tree does (LL's step of data; Simple's least chunk), at most
   * 8: inside a DGX H100 a tree carries half of the buffer, so 1 KiB and
   * 64 KiB go in one chunk, 96 KiB in two, 1 MiB in eight; over two DGX
   * H100, 8 trees to a half, 1 MiB in two.  Each protocol alike. */
  const struct {
    uint32_t n;
    uint64_t size;
    uint32_t chunks;
  } cases[] = {
    { 8, 1024, 1 }, { 8, 64 << 10, 1 }, { 8, 96 << 10, 2 }, { 8, 1 << 20, 8 },
    { 16, 1 << 20, 2 },
  };
  g_autoptr (WeftScenario) one = load ("dgx-h100.yaml");
  g_autoptr (WeftScenario) two = load ("h100-256-rail.yaml");

  for (guint c = 0; c < G_N_ELEMENTS (cases); c++)
    for (int p = 0; p < WEFT_PROTOCOL_RAW; p++)
      auto_chunks_are (cases[c].n == 8 ? one : two, cases[c].n, WEFT_ALG_TREE,
                       p, cases[c].size, 0, cases[c].chunks,
                       cases[c].n == 8 ? "dgx-h100.yaml" : "h100-256-rail.yaml");
}
END_TEST

START_TEST (test_hierarchical_pieces)
{
  /* Left to auto, the two-level algorithms cut the buffer into pieces of
   * which each GPU of a server takes at least 32 KiB, 1 to 8: over two DGX
   * H100 (8 GPUs a server) 8 B and 256 KiB are one piece, 1 MiB four,
   * 4 MiB eight. */
  const struct {
    uint64_t size;
    uint32_t pieces;
  } cases[] = { { 8, 1 }, { 256 << 10, 1 }, { 1 << 20, 4 }, { 4 << 20, 8 } };
  const WeftAlgorithm algs[] = { WEFT_ALG_HIER, WEFT_ALG_HIER_RHD,
                                 WEFT_ALG_HIER_TREE };
  g_autoptr (WeftScenario) s = load ("h100-256-rail.yaml");

  for (guint c = 0; c < G_N_ELEMENTS (cases); c++)
    for (guint k = 0; k < G_N_ELEMENTS (algs); k++)
      auto_chunks_are (s, 16, algs[k], WEFT_PROTOCOL_SIMPLE, cases[c].size, 1,
                       cases[c].pieces, "h100-256-rail.yaml");
}
END_TEST

/* Bytes the NICs of @s sent into the network in @r: in all, and by the
 * NIC's local index (per_rail[8]). */
static uint64_t
nic_bytes (const WeftScenario *s, const WeftCollectiveResult *r,
           uint64_t *per_rail)
{
  uint64_t all = 0;

  for (int j = 0; j < 8; j++)
    per_rail[j] = 0;
  for (uint32_t v = 0; v < s->topo->n_nodes; v++)
    if (s->topo->nodes[v].kind == WEFT_NODE_NIC)
      {
        int server, nic;
        ck_assert (sscanf (s->topo->nodes[v].name, "node%d/nic%d", &server,
                           &nic) == 2);
        for (uint32_t i = s->topo->out_start[v]; i < s->topo->out_start[v + 1];
             i++)
          {
            const WeftLink *l = &s->topo->links[s->topo->out_links[i]];
            const WeftLinkType *t = g_ptr_array_index (s->topo->link_types,
                                                       l->type);
            if (t->family == WEFT_FAMILY_NETWORK)
              {
                per_rail[nic] += r->stats->links[s->topo->out_links[i]].bytes;
                all += r->stats->links[s->topo->out_links[i]].bytes;
              }
          }
      }
  return all;
}

START_TEST (test_channels_across_servers)
{
  /* Across 4 DGX H100 of the rail-optimized fabric the channels, one for
   * each GPU of a server by default, cross between servers beside
   * different GPUs, so that every NIC carries an equal share.  The tree:
   * tree c's chains start at GPU c of every server, whose NIC carries its
   * traffic between servers; all NICs together carry what a tree over 4
   * servers sends, 2 (4 - 1) S.  The ring (all_gather of S over 32 GPUs):
   * 31 steps, each moving a piece S/32 across each of the 4 boundaries,
   * ring c crossing from server k beside GPU c - k - 1, so each NIC index
   * carries an eighth. */
  g_autoptr (WeftScenario) s = load ("h100-256-rail.yaml");
  g_autoptr (GArray) gpus = all_gpus (s->topo);
  const uint64_t size = 16 << 20;
  WeftCollectiveParams piped = { 0, 4, 0, NULL, 1, NULL, NULL, 0, FALSE, NULL };
  const WeftOp ops[] = { WEFT_OP_ALL_REDUCE, WEFT_OP_ALL_GATHER };
  const WeftAlgorithm algs[] = { WEFT_ALG_TREE, WEFT_ALG_RING };
  const uint64_t across[] = { 6 * (uint64_t) size, 31 * 4 * (size / 32) };

  for (int i = 0; i < 2; i++)
    {
      WeftCollectiveResult r;
      g_autoptr (GError) error = NULL;
      ck_assert_msg (weft_collective_run (s->topo, (uint32_t *) gpus->data,
                                          32, ops[i], algs[i],
                                          WEFT_PROTOCOL_SIMPLE, size, &piped,
                                          &(WeftRunOptions) {
                                              WEFT_FIDELITY_FLOW, 1, WEFT_US,
                                              NULL, FALSE, 0, 0, NULL, 1, NULL },
                                          &r, &error),
                     "%s", error ? error->message : "");
      uint64_t per_rail[8];
      ck_assert_uint_eq (nic_bytes (s, &r, per_rail), across[i]);
      for (int j = 0; j < 8; j++)
        ck_assert_msg (per_rail[j] >= across[i] / 8 - 64
                           && per_rail[j] <= across[i] / 8 + 64,
                       "%s rail %d: %" G_GUINT64_FORMAT " bytes",
                       weft_algorithm_name (algs[i]), j, per_rail[j]);
      weft_link_stats_free (r.stats);
      g_free (r.spans);
    }

  /* One channel is one ring in rank order: GPU 7 of every server sends to
   * GPU 0 of the next, and the ring's traffic between servers takes one
   * or two NICs a server (whichever the routes to GPU 0 pass), not all. */
  WeftCollectiveParams one = { 1, 4, 0, NULL, 1, NULL, NULL, 0, FALSE, NULL };
  WeftCollectiveResult r;
  ck_assert (weft_collective_run (s->topo, (uint32_t *) gpus->data, 32,
                                  WEFT_OP_ALL_GATHER, WEFT_ALG_RING,
                                  WEFT_PROTOCOL_SIMPLE, size, &one,
                                  &(WeftRunOptions) { WEFT_FIDELITY_FLOW, 1,
                                                      WEFT_US, NULL, FALSE, 0,
                                                      0, NULL, 1, NULL },
                                  &r, NULL));
  uint64_t per_rail[8];
  ck_assert_uint_eq (nic_bytes (s, &r, per_rail), across[1]);
  int used = 0;
  for (int j = 0; j < 8; j++)
    used += per_rail[j] > 0;
  ck_assert_int_le (used, 2);
  weft_link_stats_free (r.stats);
  g_free (r.spans);
}
END_TEST

START_TEST (test_rings_along_the_links)
{
  /* The DGX-1's hybrid cube-mesh: each V100's 6 NVLink2 lanes join it
   * directly to 4 others, two of them by 2 lanes.  The rings along the
   * links, as NCCL's search finds them: the ring of 2-lane links both ways
   * (40 GB/s each at NCCL's 20 GB/s a lane) and the ring of single links
   * both ways (20 GB/s each), every lane used once: 120 GB/s in all, the
   * busbw a ring all_reduce reaches (in rank order it crosses PCIe and
   * reaches 20). */
  g_autoptr (WeftScenario) s = load ("dgx1-v100.yaml");
  g_autoptr (GArray) gpus = all_gpus (s->topo);
  g_autoptr (WeftRings) rings = weft_rings_find (s->topo,
                                                 (uint32_t *) gpus->data, 8);
  const uint64_t widths[] = { 40000000000, 40000000000, 20000000000,
                              20000000000 };
  uint64_t lanes[8][8] = { { 0 } };

  ck_assert (rings != NULL);
  ck_assert_uint_eq (rings->n_rings, 4);
  for (uint32_t i = 0; i < 4; i++)
    {
      ck_assert_uint_eq (rings->weight[i], widths[i]);
      uint32_t seen = 0;
      for (uint32_t q = 0; q < 8; q++)
        {
          uint32_t a = rings->order[i * 8 + q];
          uint32_t b = rings->order[i * 8 + (q + 1) % 8];
          seen |= 1u << a;
          lanes[a][b] += rings->weight[i] / 20000000000;
        }
      ck_assert_uint_eq (seen, 0xff);
    }
  for (uint32_t a = 0; a < 8; a++)
    {
      uint32_t v = g_array_index (gpus, uint32_t, a);
      for (uint32_t i = s->topo->out_start[v]; i < s->topo->out_start[v + 1];
           i++)
        {
          const WeftLink *l = &s->topo->links[s->topo->out_links[i]];
          for (uint32_t b = 0; b < 8; b++)
            if (l->dst == g_array_index (gpus, uint32_t, b))
              {
                ck_assert_uint_eq (lanes[a][b], l->lanes);
                lanes[a][b] = 0;
              }
        }
      for (uint32_t b = 0; b < 8; b++)
        ck_assert_uint_eq (lanes[a][b], 0);
    }

  /* Each ring carries its share at its width, so all finish together. */
  WeftCollectiveParams piped = { 1, 8, 0, NULL, 1, NULL, NULL, 0, FALSE, NULL };
  WeftCollectiveResult r;
  const uint64_t size = 1 << 30;
  ck_assert (weft_collective_run (s->topo, (uint32_t *) gpus->data, 8,
                                  WEFT_OP_ALL_REDUCE, WEFT_ALG_RING,
                                  WEFT_PROTOCOL_SIMPLE, size, &piped,
                                  &(WeftRunOptions) { WEFT_FIDELITY_FLOW, 1,
                                                      0, NULL, FALSE, 0, 0,
                                                      NULL, 1, NULL },
                                  &r, NULL));
  double busbw = size / (r.time * 1e-12) * 14 / 8;
  ck_assert_msg (busbw <= 120e9 && busbw >= 0.97 * 120e9, "busbw %.1f GB/s",
                 busbw / 1e9);
  ck_assert_uint_eq (r.bytes_sent, 14 * (uint64_t) size);
  g_free (r.spans);

  /* A torus of 16 H100 joined directly (4 lanes to each of 4
   * neighbours): a ring over the torus's links and the same ring the
   * other way, each at 4 x 20.6 GB/s; every ring along direct links. */
  g_autofree char *dir = g_dir_make_tmp ("weft-torus-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "t.yaml", NULL);
  g_autofree char *text = g_strdup_printf (
      "weft: 1\ninclude: [%s/presets/devices.yaml, %s/presets/links.yaml]\n"
      "nodes: [{name: 'gpu[0-15]', device: h100}]\n"
      "fabrics: [{kind: torus, nodes: 'gpu[0-15]', dims: [4, 4], "
      "link: nvlink4, lanes: 4}]\n", SCENARIOS, SCENARIOS);
  ck_assert (g_file_set_contents (path, text, -1, NULL));
  g_autoptr (WeftScenario) t = weft_scenario_load (path, NULL);
  ck_assert (t != NULL);
  g_autoptr (GArray) tgpus = all_gpus (t->topo);
  g_autoptr (WeftRings) trings = weft_rings_find (t->topo,
                                                  (uint32_t *) tgpus->data,
                                                  16);
  ck_assert (trings != NULL);
  ck_assert_uint_ge (trings->n_rings, 2);
  ck_assert_uint_eq (trings->weight[0], 82400000000);
  ck_assert_uint_eq (trings->weight[1], 82400000000);
  for (uint32_t i = 0; i < trings->n_rings; i++)
    for (uint32_t q = 0; q < 16; q++)
      {
        uint32_t a = g_array_index (tgpus, uint32_t, trings->order[i * 16 + q]);
        uint32_t b = g_array_index (tgpus, uint32_t,
                                    trings->order[i * 16 + (q + 1) % 16]);
        gboolean joined = FALSE;
        for (uint32_t e = t->topo->out_start[a]; e < t->topo->out_start[a + 1];
             e++)
          joined |= t->topo->links[t->topo->out_links[e]].dst == b;
        ck_assert (joined);
      }
  g_remove (path);
  g_rmdir (dir);

  /* Through NVSwitch every order is as good: no rings, rank order. */
  g_autoptr (WeftScenario) h = load ("dgx-h100.yaml");
  g_autoptr (GArray) hgpus = all_gpus (h->topo);
  ck_assert (weft_rings_find (h->topo, (uint32_t *) hgpus->data, 8) == NULL);
}
END_TEST

/* NICs up to the network that carry a ring all_reduce of 1 MiB over all
 * @n GPUs of @file by default: each ring leaves each server by a NIC of
 * its own. */
static uint32_t
nics_used (const char *file, uint32_t n)
{
  g_autoptr (WeftScenario) s = load (file);
  g_autoptr (GArray) gpus = all_gpus (s->topo);
  WeftCollectiveParams params = { 0 };
  WeftCollectiveResult r;
  g_autoptr (GError) error = NULL;
  uint32_t used = 0;

  ck_assert_msg (weft_collective_run (s->topo, (uint32_t *) gpus->data, n,
                                      WEFT_OP_ALL_REDUCE, WEFT_ALG_RING,
                                      WEFT_PROTOCOL_SIMPLE, 1 << 20, &params,
                                      &(WeftRunOptions) { WEFT_FIDELITY_FLOW,
                                                          1, WEFT_US, NULL,
                                                          0, 0, 0, NULL, 1,
                                                          NULL },
                                      &r, &error),
                 "%s", error ? error->message : "");
  for (uint32_t l = 0; l < s->topo->n_links; l++)
    {
      const WeftLink *link = &s->topo->links[l];
      const WeftLinkType *type = g_ptr_array_index (s->topo->link_types,
                                                    link->type);
      used += s->topo->nodes[link->src].kind == WEFT_NODE_NIC
              && type->family == WEFT_FAMILY_NETWORK
              && r.stats->links[l].bytes > 0;
    }
  weft_link_stats_free (r.stats);
  g_free (r.spans);
  return used;
}

/* By default the rings across servers are as many as NCCL's search builds
 * ring channels, at most one for each GPU of a server: on two DGX H100
 * all eight (every NIC of both carries its ring), on two GB200 NVL72 racks
 * the 16 its search finds, not one for each of a rack's 72 GPUs. */
START_TEST (test_rings_as_nccl_channels)
{
  static const struct {
    const char *file;
    uint32_t n, rings;
  } cases[] = { { "h100-256-rail.yaml", 16, 8 },
                { "gb200-nvl72-x2-ndr.yaml", 144, 16 } };

  for (guint c = 0; c < cases_to_run (G_N_ELEMENTS (cases), 1); c++)
    {
      g_autoptr (WeftScenario) s = load (cases[c].file);
      g_autoptr (GArray) gpus = all_gpus (s->topo);
      WeftNcclSystem sys;
      weft_nccl_system_from_topology (&sys, s->topo, (uint32_t *) gpus->data,
                                      cases[c].n);
      ck_assert_uint_eq (sys.graph[WEFT_COSTS_RING].channels,
                         cases[c].rings);
      ck_assert_uint_eq (nics_used (cases[c].file, cases[c].n),
                         2 * cases[c].rings);
    }
}
END_TEST

START_TEST (test_rings_across_servers)
{
  /* Rings across servers of 8: each a ring over every rank, passing each
   * server's GPUs together and crossing every boundary between the same
   * local GPU on both sides (but where the ring would have to enter and
   * leave a server by one GPU: 9 servers, ring c enters the last by GPU
   * c); at each boundary the 8 rings cross beside 8 different GPUs. */
  const uint32_t counts[] = { 2, 4, 8, 9, 16 };

  for (guint t = 0; t < G_N_ELEMENTS (counts); t++)
    {
      uint32_t m = counts[t], n = 8 * m;
      g_autofree uint32_t *server = g_new (uint32_t, n);
      for (uint32_t r = 0; r < n; r++)
        server[r] = 100 + r / 8;
      ck_assert_uint_eq (weft_rings_local (server, n), 8);
      g_autoptr (WeftRings) rings = weft_rings_across (server, n, 8);
      ck_assert (rings != NULL);
      ck_assert_uint_eq (rings->n_rings, 8);
      g_autofree uint32_t *side = g_new0 (uint32_t, m);
      for (uint32_t c = 0; c < 8; c++)
        {
          const uint32_t *o = rings->order + c * n;
          g_autofree gboolean *seen = g_new0 (gboolean, n);
          for (uint32_t q = 0; q < n; q++)
            {
              ck_assert (!seen[o[q]]);
              seen[o[q]] = TRUE;
              ck_assert_uint_eq (o[q] / 8, q / 8);
              uint32_t next = o[(q + 1) % n];
              if (next / 8 != o[q] / 8)
                {
                  gboolean odd = m % 8 == 1 && q + 1 == n;
                  if (!odd)
                    ck_assert_uint_eq (next % 8, o[q] % 8);
                  side[o[q] / 8] |= 1u << (o[q] % 8);
                }
            }
          ck_assert_uint_eq (rings->weight[c], 1);
        }
      for (uint32_t k = 0; k < m; k++)
        ck_assert_uint_eq (side[k], 0xff);
    }

  /* Not server by server, or one server: none. */
  uint32_t mixed[16], one[8] = { 0 };
  for (uint32_t r = 0; r < 16; r++)
    mixed[r] = r % 2;
  ck_assert (weft_rings_across (mixed, 16, 8) == NULL);
  ck_assert (weft_rings_across (one, 8, 8) == NULL);
  uint32_t uneven[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1 };
  ck_assert (weft_rings_across (uneven, 12, 8) == NULL);
}
END_TEST

START_TEST (test_rings_split_exactly)
{
  /* Any size splits over the rings' weights to the byte. */
  uint64_t weight[] = { 3, 5, 7 };
  uint32_t order[3 * 3] = { 0 };
  WeftRings rings = { 3, 3, order, weight };
  const uint64_t sizes[] = { 0, 1, 14, 15, 1000003, (uint64_t) 1 << 40 };

  for (guint i = 0; i < G_N_ELEMENTS (sizes); i++)
    {
      uint64_t sum = 0;
      for (uint32_t k = 0; k < 3; k++)
        {
          uint64_t b = weft_rings_bytes (&rings, sizes[i], k);
          ck_assert (b * 15 <= sizes[i] * weight[k] + 15 * 1
                     && b * 15 + 15 >= sizes[i] * weight[k]);
          sum += b;
        }
      ck_assert_uint_eq (sum, sizes[i]);
    }
}
END_TEST

/* Hierarchical all_reduce of @size over the first @servers DGX H100 of the
 * rail-optimized fabric, one piece at a time, flow fidelity. */
static double
hier_time (const WeftScenario *s, const GArray *gpus, uint32_t servers,
           WeftAlgorithm alg, uint64_t size)
{
  WeftCollectiveParams serial = { 1, 1, 0, NULL, 1, NULL, NULL, 0, FALSE, NULL };
  WeftCollectiveResult r;
  g_autoptr (GError) error = NULL;

  ck_assert_msg (weft_collective_run (s->topo, (uint32_t *) gpus->data,
                                      8 * servers, WEFT_OP_ALL_REDUCE, alg,
                                      WEFT_PROTOCOL_SIMPLE, size, &serial,
                                      &(WeftRunOptions) { WEFT_FIDELITY_FLOW,
                                                          1, 0, NULL, FALSE, 0, 0, NULL, 1, NULL },
                                      &r, &error),
                 "%s", error ? error->message : "");
  ck_assert_uint_eq (r.bytes_sent,
                     2 * (uint64_t) (8 * servers - 1) * size);
  return (double) r.time;
}

START_TEST (test_nvls_tree)
{
  /* NVLS inside each DGX H100, double binary tree across servers.  Bytes:
   * every GPU's buffer up to the switches (n S), each slice back (m S for
   * m servers), the tree across servers (2 (m - 1) S), the slices up again
   * (m S) and multicast to the other GPUs (m (8 - 1) S): (2n + 3m - 2) S. */
  const double halves[] = { 1, 1 };
  WeftCollectiveParams params = { 2, 3, 2, halves, 4, NULL, NULL, 0, FALSE, NULL };
  for (uint32_t n = 8; n <= 28; n += 4)
    {
      g_autoptr (WeftSchedule) sched = weft_collective_schedule (
          WEFT_OP_ALL_REDUCE, WEFT_ALG_NVLS_TREE, n, 1000003, &params);
      g_autoptr (GError) error = NULL;
      ck_assert_msg (weft_schedule_check (sched, &error), "n=%u: %s", n,
                     error ? error->message : "");
      ck_assert_uint_eq (weft_schedule_bytes_sent (sched),
                         (2 * (uint64_t) n + 3 * (n / 4) - 2) * 1000003);
    }

  /* A small buffer takes NCCL's NVLSTree latency, intraLat + 2 log2(nodes)
   * interLat = 25 + 2 x 2 x 20.9 = 108.6 us over 4 servers, plus the paths'
   * own latencies (up to 2 us for each of the 4 sends across servers, as
   * test_hierarchical_across_servers finds) and the few bytes' time. */
  g_autoptr (WeftScenario) s = load ("h100-256-rail.yaml");
  g_autoptr (GArray) gpus = all_gpus (s->topo);
  WeftCollectiveParams serial = { 1, 1, 0, NULL, 1, NULL, NULL, 0, FALSE, NULL };
  WeftRunOptions flow = { WEFT_FIDELITY_FLOW, 1, 0, NULL, FALSE, 0, 0, NULL, 1, NULL };
  WeftCollectiveResult r;
  g_autoptr (GError) error = NULL;
  ck_assert_msg (weft_collective_run (s->topo, (uint32_t *) gpus->data, 32,
                                      WEFT_OP_ALL_REDUCE, WEFT_ALG_NVLS_TREE,
                                      WEFT_PROTOCOL_SIMPLE, 1024, &serial,
                                      &flow, &r, &error),
                 "%s", error ? error->message : "");
  ck_assert_msg (r.time >= 108600000 && r.time <= 117600000,
                 "%" G_GUINT64_FORMAT " ps", r.time);

  /* Pipelined, a large buffer is the network's: the same tree across
   * servers as hierarchical-tree carries it, only the server's part
   * differs (the switches add up instead of a ring), so the two take the
   * same time within a few percent. */
  WeftCollectiveParams piped = { 1, 8, 0, NULL, 1, NULL, NULL, 0, FALSE, NULL };
  WeftCollectiveResult t;
  ck_assert (weft_collective_run (s->topo, (uint32_t *) gpus->data, 32,
                                  WEFT_OP_ALL_REDUCE, WEFT_ALG_HIER_TREE,
                                  WEFT_PROTOCOL_SIMPLE, 256 << 20, &piped,
                                  &flow, &t, NULL));
  ck_assert (weft_collective_run (s->topo, (uint32_t *) gpus->data, 32,
                                  WEFT_OP_ALL_REDUCE, WEFT_ALG_NVLS_TREE,
                                  WEFT_PROTOCOL_SIMPLE, 256 << 20, &piped,
                                  &flow, &r, NULL));
  ck_assert_msg (fabs ((double) r.time / (double) t.time - 1) <= 0.05,
                 "nvls-tree %" G_GUINT64_FORMAT " ps, "
                 "hierarchical-tree %" G_GUINT64_FORMAT " ps", r.time,
                 t.time);

  /* Left to auto, a channel is cut as NCCL cuts NVLS_TREE's: chunks of
   * 128 KiB (64 KiB from four servers), lowered to 32 KiB while the buffer
   * is under what its 16 channels (32 on Blackwell) of a head a GPU (at
   * most 32) take at once; as many pieces as chunks, at most 8.  Over two
   * DGX H100 (2,048 chunks at once), 8 B is one piece, 12 MiB two of
   * 64 KiB, 1 GiB 64 of 128 KiB, so eight; over four, 12 MiB two; over
   * two NVL72 racks (1,024 heads' chunks of 64 KiB), 96 MiB two, where
   * Hopper's 16 channels would make three. */
  const struct {
    const char *file;
    uint32_t n;
    uint64_t size;
    uint32_t pieces;
  } cut[] = {
    { "h100-256-rail.yaml", 16, 8, 1 },
    { "h100-256-rail.yaml", 16, 12 << 20, 2 },
    { "h100-256-rail.yaml", 16, 1 << 30, 8 },
    { "h100-256-rail.yaml", 32, 12 << 20, 2 },
    { "gb200-nvl72-x2-ndr.yaml", 144, 96 << 20, 2 },
  };
  for (guint c = 0; c < G_N_ELEMENTS (cut); c++)
    {
      g_autoptr (WeftScenario) on = load (cut[c].file);
      auto_chunks_are (on, cut[c].n, WEFT_ALG_NVLS_TREE, WEFT_PROTOCOL_SIMPLE,
                       cut[c].size, 1, cut[c].pieces, cut[c].file);
    }

  /* One server, or switches that do not reduce: refused. */
  g_clear_error (&error);
  ck_assert (!weft_collective_fits (s->topo, (uint32_t *) gpus->data, 8,
                                    WEFT_OP_ALL_REDUCE, WEFT_ALG_NVLS_TREE,
                                    WEFT_PROTOCOL_SIMPLE, &error));
  ck_assert (g_error_matches (error, WEFT_SCHEDULE_ERROR,
                              WEFT_SCHEDULE_ERROR_UNFIT));
  ck_assert_ptr_nonnull (strstr (error->message, "two servers or more"));
  g_clear_error (&error);
  ck_assert (!weft_collective_fits (s->topo, (uint32_t *) gpus->data, 32,
                                    WEFT_OP_ALL_REDUCE, WEFT_ALG_NVLS_TREE,
                                    WEFT_PROTOCOL_LL, &error));
}
END_TEST

START_TEST (test_hierarchical_across_servers)
{
  /* Across m servers of a non-blocking rail fabric, a slice s goes round
   * a ring in 2(m-1) sends of s/m, and through halving-doubling in
   * 2 log2(m) sends of s/2, s/4, ... and back: the same bytes on the wire
   * and through the reduction engines, so the two differ by exactly
   * (2(m-1) - 2 log2 m) per-send latencies a: 2a for m = 4, 8a for m = 8
   * (the levels inside the servers are the same in both).  a is Simple's
   * network hop (14 us) plus the path's own latency. */
  g_autoptr (WeftScenario) s = load ("h100-256-rail.yaml");
  g_autoptr (GArray) gpus = all_gpus (s->topo);
  const uint64_t size = 64 << 20;

  double d4 = hier_time (s, gpus, 4, WEFT_ALG_HIER, size)
              - hier_time (s, gpus, 4, WEFT_ALG_HIER_RHD, size);
  double d8 = hier_time (s, gpus, 8, WEFT_ALG_HIER, size)
              - hier_time (s, gpus, 8, WEFT_ALG_HIER_RHD, size);
  double a = d4 / 2;
  ck_assert_msg (a >= 14e6 && a <= 16e6, "a = %.0f ps", a);
  ck_assert_msg (fabs (d8 - 8 * a) <= 0.001 * d8, "d8 %.0f ps, 8a %.0f ps",
                 d8, 8 * a);

  /* The double binary tree over 8 servers is 3 levels deep: fewer
   * latencies than the ring, so faster for a small buffer. */
  ck_assert (hier_time (s, gpus, 8, WEFT_ALG_HIER_TREE, 1 << 20)
             < hier_time (s, gpus, 8, WEFT_ALG_HIER, 1 << 20));
}
END_TEST

/* A hierarchical all_reduce of @size over every GPU of the 1024-GPU
 * fat-tree (or only the first server), with link bins of @bins ps (0:
 * none), on @threads threads. */
static WeftCollectiveResult
fat_tree_run (const WeftScenario *s, const GArray *gpus, uint32_t n,
              WeftAlgorithm alg, uint32_t chunks, uint64_t size,
              gboolean plain, WeftTime bins, uint32_t threads)
{
  WeftCollectiveParams params = { 1, chunks, 0, NULL, 8, NULL, NULL, 0, FALSE, NULL };
  WeftCollectiveResult r;
  g_autoptr (GError) error = NULL;

  ck_assert_msg (weft_collective_run (s->topo, (uint32_t *) gpus->data, n,
                                      WEFT_OP_ALL_REDUCE, alg,
                                      WEFT_PROTOCOL_SIMPLE, size, &params,
                                      &(WeftRunOptions) { WEFT_FIDELITY_FLOW,
                                                          1, bins, NULL, plain,
                                                          0, 0, NULL,
                                                          threads, NULL },
                                      &r, &error),
                 "%s", error ? error->message : "");
  return r;
}

START_TEST (test_hierarchical_fat_tree_closed_form)
{
  /* On the non-blocking fat-tree, with switches forwarding by destination,
   * the transfers of a hierarchical all_reduce never share a link.  One
   * piece at a time, all 1024 GPUs step together, and the part across the
   * 128 servers takes exactly what its steps take on idle links: for each
   * halving step (masks 64 ... 1, sending p/2 ... p/128 of the slice p =
   * S/8) Simple's network hop, the idle path's latency plus bytes over its
   * bottleneck, and the reduction; then the doubling steps in reverse
   * without reductions.  The levels inside the servers are what a single
   * server takes. */
  g_autoptr (WeftScenario) s = load ("h100-1024-fat-tree.yaml");
  g_autoptr (GArray) gpus = all_gpus (s->topo);
  const uint64_t size = 64 << 20, p = size / 8;
  const WeftProtocol *simple = weft_protocol_get (WEFT_PROTOCOL_SIMPLE,
                                                  WEFT_ALG_HIER_RHD);
  WeftNetworkConfig config = { WEFT_FIDELITY_FLOW, 0, 1, simple->efficiency };
  g_autoptr (WeftSim) sim = weft_sim_new ();
  g_autoptr (WeftNetwork) idle = weft_network_new (sim, s->topo, &config);
  uint32_t gpu0 = g_array_index (gpus, uint32_t, 0);
  double reduce = s->topo->nodes[gpu0].device->reduce_bandwidth;
  double across = 0;

  for (uint32_t mask = 64; mask >= 1; mask /= 2)
    {
      uint64_t bytes = p / (2 * (64 / mask));
      uint32_t peer = g_array_index (gpus, uint32_t, 8 * mask);
      double step = (double) simple->hop_network
                    + (double) weft_network_ideal_time (idle, gpu0, peer,
                                                        bytes);
      across += 2 * step + ceil ((double) bytes * 1e12 / reduce);
    }
  WeftCollectiveResult one = fat_tree_run (s, gpus, 8, WEFT_ALG_HIER_RHD, 1,
                                           size, FALSE, 0, 1);
  WeftCollectiveResult all = fat_tree_run (s, gpus, 1024, WEFT_ALG_HIER_RHD,
                                           1, size, FALSE, 0, 1);
  double got = (double) all.time - (double) one.time;
  ck_assert_msg (fabs (got - across) <= 1e-6 * across, "across servers: "
                 "%.0f ps simulated, %.0f ps closed form", got, across);
}
END_TEST

START_TEST (test_give_up_past_a_time)
{
  /* A run told to give up at a time it cannot finish by stops there,
   * beaten; told to give up at its own end time or later, it finishes as
   * a run told nothing does, to the picosecond. */
  g_autoptr (WeftScenario) s = load ("dgx-h100.yaml");
  g_autoptr (GArray) gpus = all_gpus (s->topo);
  WeftCollectiveParams params = { 1, 8, 0, NULL, 1, NULL, NULL, 0, FALSE, NULL };
  WeftRunOptions options = { WEFT_FIDELITY_FLOW, 1, 0, NULL, FALSE, 0, 0, NULL, 1, NULL };
  WeftCollectiveResult free_run, r;

  ck_assert (weft_collective_run (s->topo, (uint32_t *) gpus->data, 8,
                                  WEFT_OP_ALL_REDUCE, WEFT_ALG_RING,
                                  WEFT_PROTOCOL_SIMPLE, 64 << 20, &params,
                                  &options, &free_run, NULL));
  ck_assert (!free_run.beaten);
  WeftTime at[] = { free_run.time / 2, free_run.time - 1, free_run.time,
                    free_run.time + 1 };
  for (guint i = 0; i < G_N_ELEMENTS (at); i++)
    {
      options.give_up = at[i];
      ck_assert (weft_collective_run (s->topo, (uint32_t *) gpus->data, 8,
                                      WEFT_OP_ALL_REDUCE, WEFT_ALG_RING,
                                      WEFT_PROTOCOL_SIMPLE, 64 << 20,
                                      &params, &options, &r, NULL));
      gboolean late = at[i] < free_run.time;
      ck_assert_int_eq (r.beaten, late);
      ck_assert_uint_eq (r.time, late ? WEFT_TIME_MAX : free_run.time);
      if (!late)
        ck_assert_uint_eq (r.events, free_run.events);
      else
        ck_assert_uint_lt (r.events, free_run.events);
    }

  /* A bound (which candidates run at once lower as they finish) is looked
   * at every few hundred events: a run past it stops soon after, beaten;
   * one that reaches it first finishes as a run told nothing does. */
  _Atomic WeftTime bound;
  options.give_up = 0;
  options.bound = &bound;
  for (guint i = 0; i < G_N_ELEMENTS (at); i++)
    {
      atomic_store (&bound, at[i]);
      ck_assert (weft_collective_run (s->topo, (uint32_t *) gpus->data, 8,
                                      WEFT_OP_ALL_REDUCE, WEFT_ALG_RING,
                                      WEFT_PROTOCOL_SIMPLE, 64 << 20,
                                      &params, &options, &r, NULL));
      if (at[i] == free_run.time / 2)
        {
          ck_assert (r.beaten);
          ck_assert_uint_eq (r.time, WEFT_TIME_MAX);
          ck_assert_uint_lt (r.events, free_run.events);
        }
      else if (!r.beaten)
        {
          ck_assert_uint_eq (r.time, free_run.time);
          ck_assert_uint_eq (r.events, free_run.events);
        }
      ck_assert (!r.beaten || at[i] < free_run.time);
    }
}
END_TEST

/* Candidates run by threads on shared plans. */
typedef struct {
  WeftPlans *plans;
  const int *order;
  int n;
  int first;                    /* each thread starts at its own place */
  WeftCollectiveResult results[WEFT_PAIRS];
  GError *errors[WEFT_PAIRS];
} PlanUser;

static gpointer
use_plans (gpointer data)
{
  PlanUser *u = data;
  WeftRunOptions options = { WEFT_FIDELITY_FLOW, 1, 0, NULL, FALSE, 0, 0,
                             NULL, 1, NULL };

  for (int k = 0; k < u->n; k++)
    {
      int pair = u->order[(u->first + k) % u->n];
      if (!weft_plans_run (u->plans, pair / WEFT_PROTOCOL_COUNT,
                           pair % WEFT_PROTOCOL_COUNT, &options,
                           &u->results[pair], &u->errors[pair]))
        ck_assert (u->errors[pair] != NULL);
    }
  return NULL;
}

START_TEST (test_plans_shared)
{
  /* Every algorithm and protocol over a DGX H100, three threads at once
   * on one set of plans (each algorithm's schedule planned once for all
   * its protocols): each gives what weft_collective_run() gives alone, the
   * same time, events and bytes, or the same error. */
  g_autoptr (WeftScenario) s = load ("dgx-h100.yaml");
  g_autoptr (GArray) gpus = all_gpus (s->topo);
  uint32_t n = gpus->len;
  WeftCollectiveParams params = { 2, 4, 0, NULL, 1, NULL, NULL, 0, FALSE, NULL };
  WeftRunOptions options = { WEFT_FIDELITY_FLOW, 1, 0, NULL, FALSE, 0, 0,
                             NULL, 1, NULL };
  int order[WEFT_PAIRS], n_order = 0;
  uint64_t size = 3 << 20;

  for (int k = 0; k < WEFT_PAIRS; k++)
    if (weft_algorithm_supports (k / WEFT_PROTOCOL_COUNT, WEFT_OP_ALL_REDUCE))
      order[n_order++] = k;
  WeftCollectiveCall call = { s->topo, (uint32_t *) gpus->data, n,
                              WEFT_OP_ALL_REDUCE, size, &params };
  WeftPlans *plans = weft_plans_new (&call, order, n_order);
  PlanUser users[3];
  GThread *threads[3];
  for (int t = 0; t < 3; t++)
    {
      memset (&users[t], 0, sizeof users[t]);
      users[t].plans = plans;
      users[t].order = order;
      users[t].n = n_order;
      users[t].first = t * 7;
      threads[t] = g_thread_new ("plans", use_plans, &users[t]);
    }
  for (int t = 0; t < 3; t++)
    g_thread_join (threads[t]);

  int ran = 0;
  for (int k = 0; k < n_order; k++)
    {
      int pair = order[k];
      WeftCollectiveResult alone;
      g_autoptr (GError) why = NULL;
      gboolean ok = weft_collective_run (
          s->topo, (uint32_t *) gpus->data, n, WEFT_OP_ALL_REDUCE,
          pair / WEFT_PROTOCOL_COUNT, pair % WEFT_PROTOCOL_COUNT, size,
          &params, &options, &alone, &why);
      for (int t = 0; t < 3; t++)
        {
          if (!ok)
            {
              ck_assert (users[t].errors[pair] != NULL);
              ck_assert_str_eq (users[t].errors[pair]->message, why->message);
              g_clear_error (&users[t].errors[pair]);
              continue;
            }
          ck_assert_msg (users[t].errors[pair] == NULL, "pair %d: %s", pair,
                         users[t].errors[pair]->message);
          ck_assert_uint_eq (users[t].results[pair].time, alone.time);
          ck_assert_uint_eq (users[t].results[pair].events, alone.events);
          ck_assert_uint_eq (users[t].results[pair].bytes_sent,
                             alone.bytes_sent);
        }
      ran += ok;
    }
  ck_assert_int_ge (ran, 10);

  weft_plans_free (plans);
}
END_TEST

START_TEST (test_routing_handed_on)
{
  /* A network leaves its routing (remembered routes, cost arrays) to the
   * next over the same topology: a run that starts with it gives what a
   * run over a freshly loaded topology gives, to the picosecond and the
   * byte on every link. */
  g_autoptr (WeftScenario) warm = load ("gb200-nvl72.yaml");
  g_autoptr (WeftScenario) cold = load ("gb200-nvl72.yaml");
  g_autoptr (GArray) gpus = all_gpus (warm->topo);
  WeftCollectiveParams params = { 2, 4, 0, NULL, 1, NULL, NULL, 0, FALSE, NULL };
  WeftRunOptions options = { WEFT_FIDELITY_FLOW, 1, WEFT_US, NULL, FALSE, 0,
                             0, NULL, 1, NULL };
  WeftAlgorithm algs[] = { WEFT_ALG_TREE, WEFT_ALG_RING };
  WeftCollectiveResult r[2];

  ck_assert (warm->topo->spare == NULL);
  ck_assert (weft_collective_run (warm->topo, (uint32_t *) gpus->data,
                                  gpus->len, WEFT_OP_ALL_REDUCE, algs[0],
                                  WEFT_PROTOCOL_SIMPLE, 5 << 20, &params,
                                  &options, &r[0], NULL));
  ck_assert_uint_eq (warm->topo->spare->len, 1);
  weft_link_stats_free (r[0].stats);
  g_free (r[0].spans);
  for (int k = 0; k < 2; k++)
    ck_assert (weft_collective_run (k ? cold->topo : warm->topo,
                                    (uint32_t *) gpus->data, gpus->len,
                                    WEFT_OP_ALL_REDUCE, algs[1],
                                    WEFT_PROTOCOL_SIMPLE, 5 << 20, &params,
                                    &options, &r[k], NULL));
  ck_assert_uint_eq (warm->topo->spare->len, 1);
  ck_assert_uint_eq (r[0].time, r[1].time);
  ck_assert_uint_eq (r[0].events, r[1].events);
  for (uint32_t l = 0; l < warm->topo->n_links; l++)
    {
      ck_assert_uint_eq (r[0].stats->links[l].bytes,
                         r[1].stats->links[l].bytes);
      ck_assert_uint_eq (r[0].stats->links[l].busy,
                         r[1].stats->links[l].busy);
    }
  for (int k = 0; k < 2; k++)
    {
      weft_link_stats_free (r[k].stats);
      g_free (r[k].spans);
    }
}
END_TEST

START_TEST (test_speedups_change_nothing)
{
  /* The 1024-GPU hierarchical all_reduces, pipelined, with the simulator's
   * speed-ups (remembered routes, whole transfers' routes, filling flows
   * in groups that share no link) on, off, and on with three threads
   * filling the groups: the same time, events, every rank's first and last
   * moment to the picosecond, and every link's bytes and busy time. */
  g_autoptr (WeftScenario) s = load ("h100-1024-fat-tree.yaml");
  g_autoptr (GArray) gpus = all_gpus (s->topo);
  WeftAlgorithm algs[] = { WEFT_ALG_HIER_RHD, WEFT_ALG_HIER_TREE };

  for (guint i = 0; i < cases_to_run (G_N_ELEMENTS (algs), 1); i++)
    {
      WeftCollectiveResult r[3];
      for (int k = 0; k < 3; k++)
        r[k] = fat_tree_run (s, gpus, 1024, algs[i], 4, 16 << 20, k == 1,
                             10000000, k == 2 ? 3 : 1);
      for (int k = 1; k < 3; k++)
        {
          ck_assert_uint_eq (r[0].time, r[k].time);
          ck_assert_uint_eq (r[0].events, r[k].events);
          ck_assert_uint_eq (r[k].n_spans, 1024);
          ck_assert (memcmp (r[0].spans, r[k].spans,
                             2 * 1024 * sizeof (WeftTime)) == 0);
          ck_assert (r[k].stats != NULL);
          for (uint32_t l = 0; l < s->topo->n_links; l++)
            {
              ck_assert_uint_eq (r[0].stats->links[l].bytes,
                                 r[k].stats->links[l].bytes);
              ck_assert_uint_eq (r[0].stats->links[l].busy,
                                 r[k].stats->links[l].busy);
            }
        }
      for (int k = 0; k < 3; k++)
        {
          weft_link_stats_free (r[k].stats);
          g_free (r[k].spans);
        }
    }
}
END_TEST

/* An NVLS run of @alg over the first @n GPUs of @s, its switch chips
 * one place of planes or (@split) each a rank of its own. */
static WeftCollectiveResult
planes_run (WeftScenario *s, GArray *gpus, uint32_t n, WeftOp op,
            WeftAlgorithm alg, WeftFidelity fidelity, uint64_t size,
            gboolean split)
{
  /* Two channels of two pieces: pieces in flight beside each other, on
   * the same links, at a cost valgrind can take. */
  WeftCollectiveParams params = { 2, 2, 0, NULL, 1, NULL, NULL, 0, split, NULL };
  WeftRunOptions options = { fidelity, 1, 1000000000, NULL, FALSE, 0, 0,
                             NULL, 1, NULL };
  WeftCollectiveResult r;
  g_autoptr (GError) error = NULL;

  ck_assert_msg (weft_collective_run (s->topo, (uint32_t *) gpus->data, n,
                                      op, alg, WEFT_PROTOCOL_SIMPLE, size,
                                      &params, &options, &r, &error),
                 "%s", error ? error->message : "");
  return r;
}

START_TEST (test_planes_move_as_chips_do)
{
  /* A server's NVSwitch chips taken as one place of planes, each send to
   * them one transfer over every chip's links, against each chip a rank
   * of its own: the same time and the same bytes on every link, inside a
   * server (nvls, all_reduce, all_gather and reduce_scatter) and across
   * servers (nvls-tree), in every fidelity that
   * takes a transfer whole, in fewer events.  But for rounding: each
   * piece and slice is cut in whole bytes, chip by chip or plane by
   * plane, which puts a byte here or there on another chip (at most a
   * thousandth of a link's bytes) and moves the end by as little.  Chips
   * of unequal lanes (a DGX H100 GPU has 5, 4, 4 and 5 to its four) stay
   * ranks of their own: their engines would finish their shares at other
   * times.  The packet model takes a send to planes in parts, one a chip,
   * as it takes any striped transfer, and its clock may part a little
   * from the other's where a chip's reduction waits for all of them. */
  const struct {
    const char *file;
    uint32_t n;
    WeftOp op;
    WeftAlgorithm alg;
    gboolean planes;
  } cases[] = {
    { "dgx-h100.yaml", 8, WEFT_OP_ALL_REDUCE, WEFT_ALG_NVLS, FALSE },
    { "dgx-h100.yaml", 8, WEFT_OP_REDUCE_SCATTER, WEFT_ALG_NVLS, FALSE },
    { "hgx-b200.yaml", 8, WEFT_OP_ALL_REDUCE, WEFT_ALG_NVLS, TRUE },
    { "hgx-b200.yaml", 8, WEFT_OP_ALL_GATHER, WEFT_ALG_NVLS, TRUE },
    { "hgx-b200.yaml", 8, WEFT_OP_REDUCE_SCATTER, WEFT_ALG_NVLS, TRUE },
    { "gb200-nvl72.yaml", 72, WEFT_OP_ALL_REDUCE, WEFT_ALG_NVLS, TRUE },
    { "h100-256-rail.yaml", 32, WEFT_OP_ALL_REDUCE, WEFT_ALG_NVLS_TREE,
      FALSE },
    { "gb200-nvl72-x2-ndr.yaml", 144, WEFT_OP_ALL_REDUCE, WEFT_ALG_NVLS_TREE,
      TRUE },
  };
  const WeftFidelity fidelities[] = { WEFT_FIDELITY_FLOW,
                                      WEFT_FIDELITY_ANALYTICAL,
                                      WEFT_FIDELITY_ANALYTICAL_FREE,
                                      WEFT_FIDELITY_PACKET };
  const uint64_t sizes[] = { 256 << 20, 1000003 };

  for (guint c = 0; c < cases_to_run (G_N_ELEMENTS (cases), 5); c++)
    {
      g_autoptr (WeftScenario) s = load (cases[c].file);
      g_autoptr (GArray) gpus = all_gpus (s->topo);
      for (guint f = 0; f < G_N_ELEMENTS (fidelities); f++)
        for (guint z = 0; z < G_N_ELEMENTS (sizes); z++)
          {
            gboolean packet = fidelities[f] == WEFT_FIDELITY_PACKET;
            uint64_t size = packet ? sizes[z] / 64 : sizes[z];
            if ((packet && cases[c].n > 16) || (cases[c].n > 72 && z > 0))
              continue;
            WeftCollectiveResult one
                = planes_run (s, gpus, cases[c].n, cases[c].op, cases[c].alg,
                              fidelities[f], size, FALSE);
            WeftCollectiveResult each
                = planes_run (s, gpus, cases[c].n, cases[c].op, cases[c].alg,
                              fidelities[f], size, TRUE);
            double tol = packet ? 0.01 : 1e-4;
            ck_assert_msg (fabs ((double) one.time - (double) each.time)
                               <= tol * (double) each.time,
                           "%s %s %" G_GUINT64_FORMAT " B: %" G_GUINT64_FORMAT
                           " ps as planes, %" G_GUINT64_FORMAT " ps chip by "
                           "chip", cases[c].file,
                           weft_fidelity_name (fidelities[f]), size, one.time,
                           each.time);
            if (cases[c].planes)
              ck_assert_uint_lt (one.events, each.events);
            else
              ck_assert_uint_eq (one.time, each.time);
            for (uint32_t l = 0; l < s->topo->n_links; l++)
              {
                uint64_t a = one.stats->links[l].bytes;
                uint64_t b = each.stats->links[l].bytes;
                /* Whole bytes: a chip's share of each piece rounds down,
                 * the first chip taking what is left. */
                ck_assert_msg ((a > b ? a - b : b - a) <= MAX (4096, b / 1000),
                               "%s %s link %u: %" G_GUINT64_FORMAT " B as "
                               "planes, %" G_GUINT64_FORMAT " chip by chip",
                               cases[c].file,
                               weft_fidelity_name (fidelities[f]), l, a, b);
              }
            weft_link_stats_free (one.stats);
            weft_link_stats_free (each.stats);
            g_free (one.spans);
            g_free (each.spans);
          }
    }
}
END_TEST

/* Whether node @v of @topo is a switch that reduces (an NVSwitch chip
 * with NVLS). */
static gboolean
reduces (const WeftTopology *topo, uint32_t v)
{
  return topo->nodes[v].kind == WEFT_NODE_SWITCH
         && topo->nodes[v].device->reduce_bandwidth > 0;
}

/* test_nvls_gather_scatter() on @file, whose GPUs' NVLS moves data at
 * @efficiency of NCCL's rate of their links. */
static void
nvls_gather_scatter_on (const char *file, double efficiency)
{
  g_autoptr (WeftScenario) s = load (file);
  g_autoptr (GArray) gpus = all_gpus (s->topo);
  const WeftTopology *topo = s->topo;
  const WeftProtocol *nvls = weft_protocol_get (WEFT_PROTOCOL_SIMPLE,
                                                WEFT_ALG_NVLS);
  const double size = 256 << 20, n = 8, pieces = 4;
  const double latency = (double) nvls->hop_nvlink * 1e-12;
  const WeftOp ops[] = { WEFT_OP_ALL_GATHER, WEFT_OP_REDUCE_SCATTER };

  /* GPU 0's rate to the chips (the switches that reduce, not its PCIe
   * switch), in all and to each. */
  uint32_t gpu0 = g_array_index (gpus, uint32_t, 0);
  double rate = 0, engine = 0;
  for (uint32_t l = 0; l < topo->n_links; l++)
    if (topo->links[l].src == gpu0 && reduces (topo, topo->links[l].dst))
      rate += weft_link_nccl_rate (topo, &topo->links[l]);
  for (uint32_t l = 0; l < topo->n_links; l++)
    {
      const WeftLink *link = &topo->links[l];
      if (link->src != gpu0 || !reduces (topo, link->dst))
        continue;
      double share = weft_link_nccl_rate (topo, link) / rate;
      engine = MAX (engine, size / pieces * share
                                / topo->nodes[link->dst].device
                                      ->reduce_bandwidth);
    }
  double b = rate * efficiency;

  for (guint o = 0; o < G_N_ELEMENTS (ops); o++)
    {
      WeftCollectiveParams params = { 1, (uint32_t) pieces, 0, NULL, 1, NULL,
                                      NULL, 0, FALSE, NULL };
      WeftCollectiveResult r;
      g_autoptr (GError) error = NULL;
      ck_assert_msg (weft_collective_run (topo, (uint32_t *) gpus->data, 8,
                                          ops[o], WEFT_ALG_NVLS,
                                          WEFT_PROTOCOL_SIMPLE,
                                          (uint64_t) size, &params,
                                          &(WeftRunOptions) {
                                              WEFT_FIDELITY_FLOW, 1,
                                              1000000000, NULL, FALSE, 0, 0,
                                              NULL, 1, NULL },
                                          &r, &error),
                     "%s", error ? error->message : "");
      gboolean gather = ops[o] == WEFT_OP_ALL_GATHER;
      for (guint g = 0; g < gpus->len; g++)
        {
          uint32_t gpu = g_array_index (gpus, uint32_t, g);
          uint64_t up = 0, down = 0;
          for (uint32_t l = 0; l < topo->n_links; l++)
            {
              const WeftLink *link = &topo->links[l];
              if (link->src == gpu && reduces (topo, link->dst))
                up += r.stats->links[l].bytes;
              if (link->dst == gpu && reduces (topo, link->src))
                down += r.stats->links[l].bytes;
            }
          ck_assert_uint_eq (gather ? up : down, (uint64_t) (size / n));
          ck_assert_uint_eq (gather ? down : up, (uint64_t) size);
        }
      double closed = gather ? (pieces + 1) * latency
                                   + size / (n * pieces * b) + size / b
                             : pieces * latency + size / b + engine + latency
                                   + size / (n * pieces * b);
      ck_assert_msg (fabs ((double) r.time * 1e-12 - closed) <= 0.005 * closed,
                     "%s %s: %" G_GUINT64_FORMAT " ps, closed form %.0f ps",
                     file, weft_op_name (ops[o]), r.time, closed * 1e12);
      weft_link_stats_free (r.stats);
      g_free (r.spans);
    }
}

START_TEST (test_nvls_older_gpus)
{
  /* NVLS asked for beside GPUs NCCL has none for (an A100's compute
   * capability, or none said) moves at Hopper's efficiency: the same time
   * as the H100s it replaces, every byte of the buffer moved. */
  const char *sets[][2] = {
    { "devices.h100.compute_capability=90", NULL },
    { "devices.h100.compute_capability=80", NULL },
    { "devices.h100.compute_capability=0", NULL },
  };
  WeftTime times[G_N_ELEMENTS (sets)];
  g_autofree char *path = g_build_filename (WEFT_SOURCE_DIR, "scenarios",
                                            "dgx-h100.yaml", NULL);

  for (guint k = 0; k < G_N_ELEMENTS (sets); k++)
    {
      g_autoptr (GError) error = NULL;
      g_autoptr (WeftScenario) s = weft_scenario_load_with (path, sets[k],
                                                            NULL, &error);
      ck_assert_msg (s != NULL, "%s", error ? error->message : "");
      g_autoptr (GArray) gpus = all_gpus (s->topo);
      WeftCollectiveParams params = { 0 };
      WeftCollectiveResult r;
      ck_assert_msg (weft_collective_run (s->topo, (uint32_t *) gpus->data, 8,
                                          WEFT_OP_ALL_GATHER, WEFT_ALG_NVLS,
                                          WEFT_PROTOCOL_SIMPLE, 64 << 20,
                                          &params,
                                          &(WeftRunOptions) {
                                              WEFT_FIDELITY_FLOW, 1, 0, NULL,
                                              FALSE, 0, 0, NULL, 1, NULL },
                                          &r, &error),
                     "%s", error ? error->message : "");
      ck_assert_uint_eq (r.bytes_sent, (uint64_t) 9 * (64 << 20));
      times[k] = r.time;
    }
  ck_assert_uint_eq (times[1], times[0]);
  ck_assert_uint_eq (times[2], times[0]);
}
END_TEST

START_TEST (test_set_link_bandwidth)
{
  /* --set on a link type's bandwidth keeps NCCL's model of the type at its
   * share of the wire (docs/scenario-format.md's example: NVLink4 at twice
   * its rate), so that runs at NCCL's rates see the faster link; a
   * nccl_bandwidth given by --set, before or after, is kept as given. */
  const char *sets[][3] = {
    { NULL },
    { "link_types.nvlink4.bandwidth=50GB/s", NULL },
    { "link_types.nvlink4.nccl_bandwidth=20.6GB/s",
      "link_types.nvlink4.bandwidth=50GB/s", NULL },
    { "link_types.nvlink4.bandwidth=50GB/s",
      "link_types.nvlink4.nccl_bandwidth=20.6GB/s", NULL },
  };
  double nccl[G_N_ELEMENTS (sets)];
  WeftTime times[G_N_ELEMENTS (sets)];
  g_autofree char *path = g_build_filename (SCENARIOS, "dgx-h100.yaml", NULL);

  for (guint k = 0; k < G_N_ELEMENTS (sets); k++)
    {
      g_autoptr (GError) error = NULL;
      g_autoptr (WeftScenario) s = weft_scenario_load_with (path, sets[k],
                                                            NULL, &error);
      ck_assert_msg (s != NULL, "%s", error ? error->message : "");
      nccl[k] = weft_topology_link_type (s->topo, "nvlink4", NULL)
                    ->nccl_bandwidth;
      g_autoptr (GArray) gpus = all_gpus (s->topo);
      WeftCollectiveParams params = { 0 };
      WeftCollectiveResult r;
      ck_assert (weft_collective_run (s->topo, (uint32_t *) gpus->data, 8,
                                      WEFT_OP_ALL_REDUCE, WEFT_ALG_RING,
                                      WEFT_PROTOCOL_SIMPLE, 256 << 20,
                                      &params,
                                      &(WeftRunOptions) {
                                          WEFT_FIDELITY_FLOW, 1, 0, NULL,
                                          FALSE, 0, 0, NULL, 1, NULL },
                                      &r, &error));
      times[k] = r.time;
    }
  ck_assert_double_eq_tol (nccl[1], 2 * nccl[0], 1);
  ck_assert_double_eq_tol (nccl[2], 20.6e9, 1);
  ck_assert_double_eq_tol (nccl[3], 20.6e9, 1);
  ck_assert_uint_lt (times[1], times[0] * 6 / 10);
  ck_assert_uint_eq (times[2], times[0]);
}
END_TEST

START_TEST (test_nvls_fewer_bytes_than_chips)
{
  /* A buffer whose parts are fewer bytes than a server has chips leaves
   * some chips nothing to do: their ranks have no steps, and the run goes
   * on without them (a DGX H100's four chips, whose unequal lanes keep
   * them ranks of their own; two of them across servers for NVLS tree). */
  g_autoptr (WeftScenario) one = load ("dgx-h100.yaml");
  g_autoptr (WeftScenario) two = load ("h100-256-rail.yaml");
  g_autoptr (GArray) gpus = all_gpus (one->topo);
  g_autoptr (GArray) both = all_gpus (two->topo);
  const WeftOp ops[] = { WEFT_OP_ALL_REDUCE, WEFT_OP_ALL_GATHER,
                         WEFT_OP_REDUCE_SCATTER };
  WeftCollectiveParams params = { 0 };
  WeftRunOptions o = { WEFT_FIDELITY_FLOW, 1, 0, NULL, FALSE, 0, 0, NULL, 1,
                       NULL };

  for (uint64_t size = 1; size <= 40; size++)
    for (guint k = 0; k < G_N_ELEMENTS (ops); k++)
      {
        g_autoptr (GError) error = NULL;
        WeftCollectiveResult r;
        ck_assert_msg (weft_collective_run (one->topo,
                                            (uint32_t *) gpus->data, 8,
                                            ops[k], WEFT_ALG_NVLS,
                                            WEFT_PROTOCOL_SIMPLE, size,
                                            &params, &o, &r, &error),
                       "%s of %" G_GUINT64_FORMAT " B: %s",
                       weft_op_name (ops[k]), size,
                       error ? error->message : "");
        ck_assert (r.time > 0);
        if (ops[k] != WEFT_OP_ALL_REDUCE)
          ck_assert_uint_eq (r.bytes_sent, 9 * size);
      }
  for (uint64_t size = 1; size <= 4; size++)
    {
      g_autoptr (GError) error = NULL;
      WeftCollectiveResult r;
      ck_assert_msg (weft_collective_run (two->topo, (uint32_t *) both->data,
                                          16, WEFT_OP_ALL_REDUCE,
                                          WEFT_ALG_NVLS_TREE,
                                          WEFT_PROTOCOL_SIMPLE, size,
                                          &params, &o, &r, &error),
                     "%s", error ? error->message : "");
      ck_assert (r.time > 0);
    }
}
END_TEST

START_TEST (test_nvls_gather_scatter)
{
  /* NVLS all_gather: each GPU's part goes up once and the switches hand
   * every GPU the whole buffer; reduce_scatter the other way round.  On a
   * DGX H100 and an HGX B200 each GPU's links to its chips carry exactly
   * that.  In P pieces, each send paying NVLS's latency L on its way and
   * the busier direction moving the buffer at B (NCCL's rate of the GPU's
   * links times NCCL's nvlsEfficiency, Hopper's 0.85 and Blackwell's
   * 0.74), the pipeline's closed forms:
   *   all_gather      (P + 1) L + S / (n P B) + S / B
   *   reduce_scatter  P L + S / B + e + L + S / (n P B)
   * e the chip's engine adding up the last piece (its share of S / P at
   * its reduce_bandwidth). */
  nvls_gather_scatter_on ("dgx-h100.yaml", 0.85);
  nvls_gather_scatter_on ("hgx-b200.yaml", 0.74);
}
END_TEST

typedef struct {
  WeftScenario *s;
  GArray *gpus;
  uint32_t n;
  uint64_t size;
  const WeftCollectiveParams *params;
  atomic_int pruned;            /* lower bounds past the best */
} Contest;

static gboolean
contest_run (int pair, const WeftRunOptions *options,
             WeftCollectiveResult *result, GError **error, void *data)
{
  Contest *c = data;
  gboolean ok = weft_collective_run (c->s->topo, (uint32_t *) c->gpus->data,
                                     c->n, WEFT_OP_ALL_REDUCE,
                                     pair / WEFT_PROTOCOL_COUNT,
                                     pair % WEFT_PROTOCOL_COUNT, c->size,
                                     c->params, options, result, error);
  if (ok && result->beaten
      && options->fidelity == WEFT_FIDELITY_ANALYTICAL_FREE)
    atomic_fetch_add (&c->pruned, 1);
  return ok;
}

START_TEST (test_lower_bounds_prune)
{
  /* --select fastest skips a candidate whose lower bound, the same
   * schedule with no link shared (analytical-free), passes the best time
   * so far.  That model is never slower than the others for any
   * candidate (NCCL's algorithms and protocols, on one server and on
   * four), and the choice (the least time, of equal times the lowest
   * pair) is that of running every candidate to its end, while some are
   * skipped. */
  const struct {
    const char *file;
    uint32_t n;
  } cases[] = { { "dgx-h100.yaml", 8 }, { "h100-256-rail.yaml", 32 } };
  const uint64_t sizes[] = { 64 << 10, 4 << 20, 256 << 20 };
  WeftCollectiveParams params = { 0, 0, 0, NULL, 1, NULL, NULL, 0, FALSE, NULL };
  int pruned = 0;

  for (guint c = 0; c < cases_to_run (G_N_ELEMENTS (cases), 1); c++)
    {
      g_autoptr (WeftScenario) s = load (cases[c].file);
      g_autoptr (GArray) gpus = all_gpus (s->topo);
      for (guint z = 0; z < G_N_ELEMENTS (sizes); z++)
        {
          int order[WEFT_PAIRS], n_order = 0, fastest = -1;
          WeftTime least = WEFT_TIME_MAX;
          for (int pair = 0; pair < WEFT_PAIRS; pair++)
            {
              int alg = pair / WEFT_PROTOCOL_COUNT;
              if (!weft_algorithm_in_auto (alg)
                  || !weft_collective_fits (s->topo,
                                            (uint32_t *) gpus->data,
                                            cases[c].n, WEFT_OP_ALL_REDUCE,
                                            alg, pair % WEFT_PROTOCOL_COUNT,
                                            NULL))
                continue;
              order[n_order++] = pair;
              WeftTime t[3];
              const WeftFidelity f[3] = { WEFT_FIDELITY_ANALYTICAL_FREE,
                                          WEFT_FIDELITY_ANALYTICAL,
                                          WEFT_FIDELITY_FLOW };
              for (int k = 0; k < 3; k++)
                {
                  WeftCollectiveResult r;
                  WeftRunOptions o = { f[k], 1, 0, NULL, FALSE, 0, 0, NULL,
                                       1, NULL };
                  ck_assert (weft_collective_run (
                      s->topo, (uint32_t *) gpus->data, cases[c].n,
                      WEFT_OP_ALL_REDUCE, alg, pair % WEFT_PROTOCOL_COUNT,
                      sizes[z], &params, &o, &r, NULL));
                  t[k] = r.time;
                }
              ck_assert_msg (t[0] <= t[1] && t[0] <= t[2],
                             "%s %s/%s %" G_GUINT64_FORMAT " B: free %"
                             G_GUINT64_FORMAT " ps, analytical %"
                             G_GUINT64_FORMAT ", flow %" G_GUINT64_FORMAT,
                             cases[c].file, weft_algorithm_name (alg),
                             weft_protocol_name (pair % WEFT_PROTOCOL_COUNT),
                             sizes[z], t[0], t[1], t[2]);
              if (t[2] < least)
                {
                  least = t[2];
                  fastest = pair;
                }
            }
          Contest contest = { s, gpus, cases[c].n, sizes[z], &params, 0 };
          WeftRunOptions o = { WEFT_FIDELITY_FLOW, 1, 0, NULL, FALSE, 0, 0,
                               NULL, 1, NULL };
          WeftChoice choice;
          weft_collective_choose (order, n_order, 1, &o, NULL, contest_run,
                                  &contest, &choice);
          ck_assert_int_eq (choice.pair, fastest);
          ck_assert_uint_eq (choice.result.time, least);
          ck_assert_ptr_null (choice.result.stats);
          pruned += atomic_load (&contest.pruned);
          weft_choice_clear (&choice);

          /* The first tried may keep its link bins: the fastest first,
           * it is chosen with them, at the same time; after another, the
           * same choice without them (its run was one of the others). */
          WeftRunOptions binned = o;
          binned.bin_width = WEFT_US;
          int first[WEFT_PAIRS] = { fastest }, last[WEFT_PAIRS], n_first = 1;
          for (int k = 0; k < n_order; k++)
            if (order[k] != fastest)
              {
                last[n_first - 1] = order[k];
                first[n_first++] = order[k];
              }
          last[n_order - 1] = fastest;
          weft_collective_choose (first, n_order, 1, &o, &binned, contest_run,
                                  &contest, &choice);
          ck_assert_int_eq (choice.pair, fastest);
          ck_assert_uint_eq (choice.result.time, least);
          ck_assert_ptr_nonnull (choice.result.stats);
          weft_choice_clear (&choice);
          if (n_order > 1)
            {
              weft_collective_choose (last, n_order, 1, &o, &binned,
                                      contest_run, &contest, &choice);
              ck_assert_int_eq (choice.pair, fastest);
              ck_assert_uint_eq (choice.result.time, least);
              ck_assert_ptr_null (choice.result.stats);
              weft_choice_clear (&choice);
            }
        }
    }
  ck_assert_int_gt (pruned, 0);
}
END_TEST

START_TEST (test_fidelities_agree_uncontended)
{
  /* A ring all_gather among the 8 GPUs of a DGX H100, one chunk at a time,
   * puts one transfer on a link at a time: the three fidelities agree. */
  g_autoptr (WeftScenario) s = load ("dgx-h100.yaml");
  g_autoptr (GArray) gpus = all_gpus (s->topo);
  WeftCollectiveParams params = { 1, 1, 0, NULL, 1, NULL, NULL, 0, FALSE, NULL };
  WeftTime t[3];

  for (int f = 0; f < 3; f++)
    {
      WeftCollectiveResult r;
      ck_assert (weft_collective_run (s->topo, (uint32_t *) gpus->data, 8,
                                      WEFT_OP_ALL_GATHER, WEFT_ALG_RING,
                                      WEFT_PROTOCOL_SIMPLE, 16 << 20, &params,
                                      &(WeftRunOptions) { f, 1, 0, NULL, FALSE, 0, 0, NULL, 1, NULL }, &r, NULL));
      t[f] = r.time;
    }
  ck_assert_double_eq_tol ((double) t[0], (double) t[1], 0.01 * t[1]);
  ck_assert_double_eq_tol ((double) t[2], (double) t[1], 0.01 * t[1]);
}
END_TEST

START_TEST (test_schedule_file_ring_matches_builtin)
{
  /* The ring all_reduce written out as data gives the built-in ring's
   * time at every fidelity and several sizes (some uneven): weft's YAML to
   * the picosecond, MSCCL's XML within 10 ppm. */
  static const char *const files[] = { "ring-allreduce-8.yaml",
                                       "msccl-ring-allreduce-8.xml" };
  g_autoptr (GError) error = NULL;
  g_autofree char *path = g_build_filename (SCENARIOS, "algorithms",
                                            files[_i], NULL);
  g_autoptr (WeftScheduleFile) file = weft_schedule_file_load (path, &error);
  ck_assert_msg (file != NULL, "%s", error ? error->message : "");
  ck_assert_int_eq (weft_schedule_file_op (file), WEFT_OP_ALL_REDUCE);
  g_autoptr (WeftScenario) s = load ("dgx-h100.yaml");
  g_autoptr (GArray) gpus = all_gpus (s->topo);
  WeftCollectiveParams params = { 1, 1, 0, NULL, 1, NULL, NULL, 0, FALSE, NULL };
  const uint64_t sizes[] = { 8, 1000003, 64 << 20 };

  for (int f = 0; f < 3; f++)
    for (guint i = 0; i < G_N_ELEMENTS (sizes); i++)
      {
        if (f == WEFT_FIDELITY_PACKET && sizes[i] > (1 << 20))
          continue;
        g_autoptr (WeftSchedule) sched = weft_schedule_file_build (file,
                                                                   sizes[i],
                                                                   &error);
        ck_assert_msg (sched != NULL, "%s", error ? error->message : "");
        WeftCollectiveResult a, b;
        weft_schedule_run (s->topo, (uint32_t *) gpus->data, sched,
                           WEFT_OP_ALL_REDUCE,
                           weft_protocol_get (WEFT_PROTOCOL_SIMPLE,
                                              WEFT_ALG_RING),
                           &(WeftRunOptions) { f, 1, 0, NULL, FALSE, 0, 0, NULL, 1, NULL }, &a);
        ck_assert (weft_collective_run (s->topo, (uint32_t *) gpus->data, 8,
                                        WEFT_OP_ALL_REDUCE, WEFT_ALG_RING,
                                        WEFT_PROTOCOL_SIMPLE, sizes[i], &params,
                                        &(WeftRunOptions) { f, 1, 0, NULL, FALSE, 0, 0, NULL, 1, NULL }, &b, NULL));
        /* MSCCL's thread block takes its steps one after another: a
         * receive waits for the send before it, which the built-in ring's
         * does not, and where links differ a little that shows. */
        if (_i == 1)
          ck_assert_double_eq_tol ((double) a.time, (double) b.time,
                                   1e-5 * (double) b.time);
        else
          ck_assert_uint_eq (a.time, b.time);
        ck_assert_uint_eq (a.bytes_sent, b.bytes_sent);
      }
}
END_TEST

START_TEST (test_programs_match_builtins)
{
  /* Schedule files written once for any number of ranks give the
   * built-in's time to the picosecond: the ring over 2 to 8 GPUs of a DGX
   * H100 (one channel, one chunk), and the two-level all_reduce over four
   * servers of the rail-optimized fabric (the built-in hierarchical),
   * also with one GPU computing at a fifth of its speed, where a piece
   * added to across servers before its server has reduced it would show
   * (the file passes the data check, which finds that order). */
  static const char *const slow[] = { "node1/gpu3 compute 20%", NULL };
  static const struct {
    const char *scenario, *file;
    WeftAlgorithm alg;
    uint32_t ranks[4];
    uint64_t size;
    const char *const *faults;
  } cases[] = {
    { "dgx-h100.yaml", "ring-allreduce.yaml", WEFT_ALG_RING, { 2, 3, 5, 8 },
      1000003, NULL },
    { "h100-256-rail.yaml", "two-level-allreduce.yaml", WEFT_ALG_HIER,
      { 32 }, 32 << 20, NULL },
    { "h100-256-rail.yaml", "two-level-allreduce.yaml", WEFT_ALG_HIER,
      { 32 }, 256 << 20, slow },
  };
  WeftCollectiveParams params = { 1, 1, 0, NULL, 1, NULL, NULL, 0, FALSE, NULL };
  WeftRunOptions o = { WEFT_FIDELITY_FLOW, 1, 0, NULL, FALSE, 0, 0, NULL, 1,
                       NULL };

  for (guint c = 0; c < G_N_ELEMENTS (cases); c++)
    {
      g_autoptr (GError) error = NULL;
      g_autofree char *path = g_build_filename (SCENARIOS, "algorithms",
                                                cases[c].file, NULL);
      g_autoptr (WeftScheduleFile) file = weft_schedule_file_load (path,
                                                                   &error);
      ck_assert_msg (file != NULL, "%s", error ? error->message : "");
      ck_assert (weft_schedule_file_parametric (file));
      g_autofree char *at = g_build_filename (SCENARIOS, cases[c].scenario,
                                              NULL);
      g_autoptr (WeftScenario) s = weft_scenario_load_with (
          at, NULL, (const char **) cases[c].faults, &error);
      ck_assert_msg (s != NULL, "%s", error ? error->message : "");
      g_autoptr (GArray) gpus = all_gpus (s->topo);
      for (guint k = 0; k < 4 && cases[c].ranks[k]; k++)
        {
          uint32_t n = cases[c].ranks[k];
          ck_assert_msg (weft_schedule_file_expand (file, n, &error), "%s",
                         error ? error->message : "");
          ck_assert_uint_eq (weft_schedule_file_ranks (file), n);
          g_autoptr (WeftSchedule) sched
              = weft_schedule_file_build (file, cases[c].size, &error);
          ck_assert_msg (sched != NULL, "%s", error ? error->message : "");
          WeftCollectiveResult a, b;
          weft_schedule_run (s->topo, (uint32_t *) gpus->data, sched,
                             WEFT_OP_ALL_REDUCE,
                             weft_protocol_get (WEFT_PROTOCOL_SIMPLE,
                                                cases[c].alg),
                             &o, &a);
          ck_assert (weft_collective_run (s->topo, (uint32_t *) gpus->data,
                                          n, WEFT_OP_ALL_REDUCE,
                                          cases[c].alg, WEFT_PROTOCOL_SIMPLE,
                                          cases[c].size, &params, &o, &b,
                                          NULL));
          ck_assert_uint_eq (a.time, b.time);
          ck_assert_uint_eq (a.bytes_sent, b.bytes_sent);
        }
    }
}
END_TEST

/* ---- where routing puts a collective's bytes ---- */

/* @file with each of @sets ("KEY=VALUE", NULL-terminated) applied. */
static WeftScenario *
load_with (const char *file, const char *const *sets)
{
  g_autofree char *path = g_build_filename (SCENARIOS, file, NULL);
  g_autoptr (GError) error = NULL;
  WeftScenario *s = weft_scenario_load_with (path, sets, NULL, &error);

  ck_assert_msg (s != NULL, "%s", error ? error->message : "");
  return s;
}

/* A hierarchical all_reduce of 1 GiB over every GPU of @s, Simple, flow
 * fidelity, with @params (channels and chunks) and @seed, the speed-ups
 * off if @plain; the link statistics are the caller's to free. */
static WeftCollectiveResult
hier_run_plain (const WeftScenario *s, const WeftCollectiveParams *params,
                uint64_t seed, gboolean plain)
{
  g_autoptr (GArray) gpus = all_gpus (s->topo);
  WeftRunOptions options = { WEFT_FIDELITY_FLOW, seed, (WeftTime) 1e12,
                             NULL, plain, 0, 0, NULL, 1, NULL };
  WeftCollectiveResult r;
  g_autoptr (GError) error = NULL;

  ck_assert_msg (weft_collective_run (s->topo, (uint32_t *) gpus->data,
                                      gpus->len, WEFT_OP_ALL_REDUCE,
                                      WEFT_ALG_HIER, WEFT_PROTOCOL_SIMPLE,
                                      1 << 30, params, &options, &r, &error),
                 "%s", error ? error->message : "");
  g_free (r.spans);
  return r;
}

static WeftCollectiveResult
hier_run (const WeftScenario *s, const WeftCollectiveParams *params,
          uint64_t seed)
{
  return hier_run_plain (s, params, seed, FALSE);
}

/* The least and most bytes, and their mean, over the links of @s whose
 * source's name starts with @from and whose destination's with @to,
 * leaving out those that carried nothing unless @idle. */
static void
bytes_over (const WeftScenario *s, const WeftLinkStats *stats,
            const char *from, const char *to, gboolean idle, double *least,
            double *most, double *mean)
{
  const WeftTopology *topo = s->topo;
  double sum = 0;
  guint n = 0;

  *least = INFINITY;
  *most = 0;
  for (uint32_t l = 0; l < topo->n_links; l++)
    {
      const WeftLink *link = &topo->links[l];
      double b = (double) stats->links[l].bytes;
      if (!g_str_has_prefix (topo->nodes[link->src].name, from)
          || !g_str_has_prefix (topo->nodes[link->dst].name, to)
          || (b == 0 && !idle))
        continue;
      *least = MIN (*least, b);
      *most = MAX (*most, b);
      sum += b;
      n++;
    }
  ck_assert_uint_gt (n, 0);
  *mean = sum / n;
}

START_TEST (test_oversubscribed_fat_tree)
{
  /* 32 DGX H100 on a two-level fat-tree: as the leaves' ports go from
   * uplinks to endpoints, a hierarchical all_reduce never gets faster, and
   * every NIC's up-link carries the same share: each GPU's slice crosses
   * between servers by its own NIC.  At 2:1 and 4:1 a leaf's 43 or 51
   * endpoints split servers; chosen by cost, the NICs on the next
   * server's leaf took every GPU's traffic over NVLink. */
  const char *ratios[] = { "1:1", "2:1", "4:1" };
  WeftCollectiveParams params = { 0 };      /* channels and chunks: auto */
  WeftTime last = 0;

  for (guint i = 0; i < G_N_ELEMENTS (ratios); i++)
    {
      g_autofree char *set = g_strdup_printf ("fabrics.0.oversubscription=%s",
                                              ratios[i]);
      const char *sets[] = { set, NULL };
      g_autoptr (WeftScenario) s = load_with ("h100-256-fat-tree.yaml", sets);
      WeftCollectiveResult r = hier_run (s, &params, 1);
      g_autoptr (WeftLinkStats) stats = r.stats;
      double least, most, mean;
      bytes_over (s, stats, "node", "ib/", TRUE, &least, &most, &mean);
      ck_assert_msg (least >= 0.9 * mean && most <= 1.1 * mean,
                     "%s: NIC up-links carry %.0f to %.0f B, mean %.0f",
                     ratios[i], least, most, mean);
      ck_assert_msg (r.time >= last, "%s: %" G_GUINT64_FORMAT " ps, faster "
                     "than %" G_GUINT64_FORMAT " ps with fewer uplinks",
                     ratios[i], r.time, last);
      last = r.time;
    }
}
END_TEST

/* The latency of the route from @a to @b of @topo: its links' and the
 * switches' and NICs' between them. */
static double
path_latency (const WeftTopology *topo, WeftRouting *routing, uint32_t a,
              uint32_t b)
{
  g_autoptr (GArray) path = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  double latency = 0;

  ck_assert (weft_routing_path (routing, a, b, 0, path));
  for (guint i = 0; i < path->len; i++)
    {
      const WeftLink *l = &topo->links[g_array_index (path, uint32_t, i)];
      const WeftNode *via = &topo->nodes[l->dst];
      latency += (double) l->latency;
      if (i + 1 < path->len
          && (via->kind == WEFT_NODE_SWITCH || via->kind == WEFT_NODE_NIC))
        latency += (double) via->device->latency;
    }
  return latency;
}

/* NCCL's rate (B/s) of the link from node @a to node @b of @topo. */
static double
nccl_rate (const WeftTopology *topo, const char *a, const char *b)
{
  uint32_t from = weft_topology_find_node (topo, a);
  uint32_t to = weft_topology_find_node (topo, b);

  for (uint32_t i = topo->out_start[from]; i < topo->out_start[from + 1]; i++)
    if (topo->links[topo->out_links[i]].dst == to)
      return weft_link_nccl_rate (topo, &topo->links[topo->out_links[i]]);
  ck_abort_msg ("no link %s -> %s", a, b);
  return 0;
}

START_TEST (test_fat_tree_hierarchical_closed_form)
{
  /* One piece at a time over 32 DGX H100 on a non-blocking fat-tree, the
   * levels of a hierarchical all_reduce of S follow each other: a
   * reduce-scatter inside each server (7 ring steps of p = S/8 over a
   * GPU's 18 NVLinks, each reduced), an all_reduce of each GPU's slice
   * p across the 32 servers on its rail (31 reduce-scatter steps of
   * q = p/32, each reduced, and 31 all-gather steps) at the rate of the
   * GPU's way to its NIC, and an all-gather inside (7 steps).  Each send
   * pays Simple's hop and its path's latency (across servers the longest
   * of the ring's, over a spine), and the collective Simple's base
   * latency.  Routes that crossed no other flow meet it. */
  const char *sets[] = { "fabrics.0.oversubscription=1:1", NULL };
  g_autoptr (WeftScenario) s = load_with ("h100-256-fat-tree.yaml", sets);
  const WeftTopology *topo = s->topo;
  const WeftProtocol *simple = weft_protocol_get (WEFT_PROTOCOL_SIMPLE,
                                                  WEFT_ALG_HIER);
  g_autoptr (WeftRouting) routing = weft_routing_new (topo);
  uint32_t gpu0 = weft_topology_find_node (topo, "node0/gpu0");
  double share = simple->efficiency;
  double nvlink = 0;

  for (uint32_t i = topo->out_start[gpu0]; i < topo->out_start[gpu0 + 1]; i++)
    {
      const WeftLink *l = &topo->links[topo->out_links[i]];
      if (((WeftLinkType *) g_ptr_array_index (topo->link_types, l->type))
              ->family == WEFT_FAMILY_NVLINK)
        nvlink += weft_link_nccl_rate (topo, l) * share;
    }
  double nic = share * MIN (MIN (nccl_rate (topo, "node0/gpu0", "node0/pcie0"),
                                 nccl_rate (topo, "node0/pcie0", "node0/nic0")),
                            nccl_rate (topo, "node0/nic0", "ib/leaf0"));
  double reduce = topo->nodes[gpu0].device->reduce_bandwidth;
  double inside = path_latency (topo, routing, gpu0,
                                weft_topology_find_node (topo, "node0/gpu1"));
  double across = 0;
  for (uint32_t g = 0; g < 32; g++)
    {
      g_autofree char *a = g_strdup_printf ("node%u/gpu0", g);
      g_autofree char *b = g_strdup_printf ("node%u/gpu0", (g + 1) % 32);
      across = MAX (across, path_latency (topo, routing,
                                          weft_topology_find_node (topo, a),
                                          weft_topology_find_node (topo, b)));
    }
  double S = 1 << 30, p = S / 8, q = p / 32;
  double hop_in = (double) simple->hop_nvlink + inside + p * 1e12 / nvlink;
  double hop_out = (double) simple->hop_network + across + q * 1e12 / nic;
  double closed = (double) simple->base
                  + 7 * (2 * hop_in + p * 1e12 / reduce)
                  + 31 * (2 * hop_out + q * 1e12 / reduce);

  WeftCollectiveParams serial = { 1, 1, 0, NULL, 0, NULL, NULL, 0, FALSE, NULL };
  WeftCollectiveResult r = hier_run (s, &serial, 1);
  weft_link_stats_free (r.stats);
  ck_assert_msg (fabs ((double) r.time - closed) <= 0.02 * closed,
                 "%" G_GUINT64_FORMAT " ps simulated, %.0f ps closed form",
                 r.time, closed);
}
END_TEST

START_TEST (test_spines_even_by_destination)
{
  /* On the 1024-GPU fat-tree, switches forwarding by destination (dmodk)
   * put the same bytes on every spine link that a hierarchical all_reduce
   * uses: each ring step's flows from a leaf go to distinct destinations,
   * which climb by distinct spines.  (A leaf's ring steps reach the 8 GPUs
   * of one server of the next leaf, so 8 of its 16 spines.)  Hashed by
   * flow, the steps' flows meet on some spine links and miss others. */
  const char *dmodk[] = { "fabrics.0.routing=dmodk", NULL };
  const char *ecmp[] = { "fabrics.0.routing=ecmp", NULL };
  WeftCollectiveParams serial = { 1, 1, 0, NULL, 0, NULL, NULL, 0, FALSE, NULL };
  double least, most, mean;

  g_autoptr (WeftScenario) d = load_with ("h100-1024-fat-tree.yaml", dmodk);
  WeftCollectiveResult by_dest = hier_run (d, &serial, 1);
  g_autoptr (WeftLinkStats) stats = by_dest.stats;
  bytes_over (d, stats, "ib/leaf", "ib/spine", FALSE, &least, &most, &mean);
  ck_assert_msg (least >= 0.9 * mean && most <= 1.1 * mean,
                 "dmodk: spine up-links carry %.0f to %.0f B, mean %.0f",
                 least, most, mean);
  bytes_over (d, stats, "ib/spine", "ib/leaf", FALSE, &least, &most, &mean);
  ck_assert_msg (least >= 0.9 * mean && most <= 1.1 * mean,
                 "dmodk: spine down-links carry %.0f to %.0f B, mean %.0f",
                 least, most, mean);

  g_autoptr (WeftScenario) e = load_with ("h100-1024-fat-tree.yaml", ecmp);
  WeftCollectiveResult by_flow = hier_run (e, &serial, 1);
  g_autoptr (WeftLinkStats) hashed = by_flow.stats;
  bytes_over (e, hashed, "ib/leaf", "ib/spine", FALSE, &least, &most, &mean);
  ck_assert_msg (least < 0.9 * mean || most > 1.1 * mean,
                 "ecmp: spine up-links carry %.0f to %.0f B, mean %.0f",
                 least, most, mean);
  ck_assert_uint_gt (by_flow.time, by_dest.time);
}
END_TEST

START_TEST (test_ecmp_seeded)
{
  /* Hashing by flow is the same for the same seed and differs with it;
   * the destination's choice does not depend on it. */
  const char *ecmp[] = { "fabrics.0.routing=ecmp", NULL };
  WeftCollectiveParams serial = { 1, 1, 0, NULL, 0, NULL, NULL, 0, FALSE, NULL };
  g_autoptr (WeftScenario) s = load_with ("h100-256-fat-tree.yaml", ecmp);
  WeftCollectiveResult a = hier_run (s, &serial, 1);
  WeftCollectiveResult b = hier_run (s, &serial, 1);
  WeftCollectiveResult c = hier_run (s, &serial, 2);
  gboolean same_ab = TRUE, same_ac = TRUE;

  for (uint32_t l = 0; l < s->topo->n_links; l++)
    {
      same_ab &= a.stats->links[l].bytes == b.stats->links[l].bytes;
      same_ac &= a.stats->links[l].bytes == c.stats->links[l].bytes;
    }
  ck_assert (same_ab && a.time == b.time);
  ck_assert (!same_ac);
  weft_link_stats_free (a.stats);
  weft_link_stats_free (b.stats);
  weft_link_stats_free (c.stats);
}
END_TEST

START_TEST (test_adaptive_on_oversubscribed_tree)
{
  /* At 4:1 a leaf of the 256-GPU fat-tree has 13 uplinks, one to each
   * spine: hashing the ring steps' flows over them makes some meet, while
   * adaptive routing sends each where fewer are in flight, and is faster.
   * Its choices depend on what is in flight, never on how the simulator
   * keeps routes: with the speed-ups off the run is the same to the
   * picosecond and the byte. */
  const char *adaptive[] = { "fabrics.0.oversubscription=4:1",
                             "fabrics.0.routing=adaptive", NULL };
  const char *ecmp[] = { "fabrics.0.oversubscription=4:1",
                         "fabrics.0.routing=ecmp", NULL };
  WeftCollectiveParams params = { 0 };
  g_autoptr (WeftScenario) a = load_with ("h100-256-fat-tree.yaml", adaptive);
  g_autoptr (WeftScenario) e = load_with ("h100-256-fat-tree.yaml", ecmp);
  WeftCollectiveResult fast = hier_run (a, &params, 1);
  WeftCollectiveResult plain = hier_run_plain (a, &params, 1, TRUE);
  WeftCollectiveResult hashed = hier_run (e, &params, 1);

  ck_assert_uint_eq (fast.time, plain.time);
  for (uint32_t l = 0; l < a->topo->n_links; l++)
    ck_assert_uint_eq (fast.stats->links[l].bytes,
                       plain.stats->links[l].bytes);
  ck_assert_msg (fast.time < hashed.time, "adaptive %" G_GUINT64_FORMAT
                 " ps, ecmp %" G_GUINT64_FORMAT " ps", fast.time,
                 hashed.time);
  weft_link_stats_free (fast.stats);
  weft_link_stats_free (plain.stats);
  weft_link_stats_free (hashed.stats);
}
END_TEST

/* Sends on one path are one bundle in the flow model, filled as one flow
 * of that many: on the preset fabrics (the first 16 GPUs of those of many
 * servers), a ring all_reduce moves the same bytes over every link with
 * bundles as with each send a flow of its own.  Inside one server it takes
 * the same time but for rounding (a drain time's ceiling may move by a
 * picosecond, in a ring a few hundred drains long).  Across servers a
 * picosecond moves which of two sends a GPU takes up first, and the run
 * from there on: its time is held to nothing closer than the model's own
 * spread (docs/network-models.md). */
START_TEST (test_bundles_change_nothing)
{
  static const struct {
    const char *file;
    uint32_t n;                 /* GPUs */
  } cases[] = {
    { "dgx-a100.yaml", 8 },         { "dgx-h100.yaml", 8 },
    { "dgx-h200.yaml", 8 },         { "dgx1-v100.yaml", 8 },
    { "hgx-b200.yaml", 8 },         { "pcie-8gpu.yaml", 8 },
    { "gb200-nvl72.yaml", 72 },     { "h100-256-rail.yaml", 16 },
    { "h100-256-fat-tree.yaml", 16 }, { "h100-1024-fat-tree.yaml", 16 },
    { "h100-4096-star.yaml", 16 },
  };
  const WeftProtocolKind protocols[] = { WEFT_PROTOCOL_LL128,
                                     WEFT_PROTOCOL_SIMPLE };

  for (guint c = 0; c < cases_to_run (G_N_ELEMENTS (cases), 7); c++)
    {
      g_autoptr (WeftScenario) s = load (cases[c].file);
      g_autoptr (GArray) gpus = all_gpus (s->topo);
      for (guint p = 0; p < G_N_ELEMENTS (protocols); p++)
        {
          WeftCollectiveResult r[2];
          for (int k = 0; k < 2; k++)
            {
              WeftCollectiveParams params = { 0, 4, 0, NULL, 0, NULL, NULL,
                                              0, FALSE, NULL };
              g_autoptr (GError) error = NULL;
              ck_assert_msg (weft_collective_run (
                                 s->topo, (uint32_t *) gpus->data,
                                 cases[c].n, WEFT_OP_ALL_REDUCE,
                                 WEFT_ALG_RING, protocols[p], 8 << 20,
                                 &params,
                                 &(WeftRunOptions) {
                                     WEFT_FIDELITY_FLOW, 1, WEFT_US, NULL,
                                     k ? WEFT_PLAIN_BUNDLES : 0, 0, 0, NULL,
                                     1, NULL },
                                 &r[k], &error),
                             "%s", error ? error->message : "");
            }
          for (uint32_t l = 0; l < s->topo->n_links; l++)
            ck_assert_uint_eq (r[0].stats->links[l].bytes,
                               r[1].stats->links[l].bytes);
          gboolean one_server = c < 7;
          ck_assert_msg (!one_server
                             || fabs ((double) r[0].time - (double) r[1].time)
                                    <= 1e-6 * (double) r[1].time,
                         "%s, %s: %" G_GUINT64_FORMAT " ps bundled, %"
                         G_GUINT64_FORMAT " ps apart", cases[c].file,
                         weft_protocol_name (protocols[p]), r[0].time,
                         r[1].time);
          for (int k = 0; k < 2; k++)
            {
              weft_link_stats_free (r[k].stats);
              g_free (r[k].spans);
            }
        }
    }
}
END_TEST

static Suite *
collective_suite (void)
{
  Suite *s = suite_create ("collective");
  TCase *tc;

  tc = tcase_create ("timing");
  tcase_set_timeout (tc, 120);
  tcase_add_test (tc, test_ring_all_reduce_closed_form);
  tcase_add_test (tc, test_bundles_change_nothing);
  tcase_add_test (tc, test_tree_chain_in_a_server);
  tcase_add_test (tc, test_channels_across_servers);
  tcase_add_test (tc, test_rings_along_the_links);
  tcase_add_test (tc, test_rings_split_exactly);
  tcase_add_test (tc, test_rings_across_servers);
  tcase_add_test (tc, test_rings_as_nccl_channels);
  tcase_add_test (tc, test_hierarchical_across_servers);
  tcase_add_test (tc, test_nvls_tree);
  tcase_add_test (tc, test_tree_chunks_as_nccl);
  tcase_add_test (tc, test_hierarchical_pieces);
  tcase_add_test (tc, test_hierarchical_fat_tree_closed_form);
  tcase_add_test (tc, test_fidelities_agree_uncontended);
  tcase_add_loop_test (tc, test_schedule_file_ring_matches_builtin, 0, 2);
  tcase_add_test (tc, test_programs_match_builtins);
  suite_add_tcase (s, tc);

  tc = tcase_create ("choosing");
  tcase_set_timeout (tc, 120);
  tcase_add_test (tc, test_give_up_past_a_time);
  tcase_add_test (tc, test_speedups_change_nothing);
  tcase_add_test (tc, test_planes_move_as_chips_do);
  tcase_add_test (tc, test_nvls_gather_scatter);
  tcase_add_test (tc, test_nvls_older_gpus);
  tcase_add_test (tc, test_nvls_fewer_bytes_than_chips);
  tcase_add_test (tc, test_set_link_bandwidth);
  tcase_add_test (tc, test_lower_bounds_prune);
  tcase_add_test (tc, test_plans_shared);
  tcase_add_test (tc, test_routing_handed_on);
  suite_add_tcase (s, tc);

  tc = tcase_create ("routing");
  tcase_set_timeout (tc, 240);
  tcase_add_test (tc, test_oversubscribed_fat_tree);
  tcase_add_test (tc, test_fat_tree_hierarchical_closed_form);
  tcase_add_test (tc, test_spines_even_by_destination);
  tcase_add_test (tc, test_ecmp_seeded);
  tcase_add_test (tc, test_adaptive_on_oversubscribed_tree);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  SRunner *runner = srunner_create (collective_suite ());

  srunner_run_all (runner, CK_NORMAL);
  int failed = srunner_ntests_failed (runner);
  srunner_free (runner);
  return failed == 0 ? 0 : 1;
}
