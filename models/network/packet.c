/* weft: the packet fidelity.
 *
 * A transfer is cut into packets of the largest payload among its path's
 * link types; on each link a packet's wire time counts that link's header
 * once per payload it spans, so every link runs at exactly its effective
 * bandwidth.  A directed link is a FIFO queue at its sender that serialises,
 * then a pipe that delays by the link's latency.  Flow control is lossless
 * and credit based, as NVLink and InfiniBand do it: a sender may start a
 * packet only if the receiver's input buffer has room for it (credits), and
 * the room comes back when the packet has left that buffer.  Switches forward store-and-forward or cut-through (the packet may
 * leave as soon as its header has arrived) after their port-to-port latency.
 * Sources inject their transfers' packets round-robin, one packet ahead of
 * the link.  No packet is dropped, and packets of a flow arrive in order.
 *
 * A send engine (weft_network_add_engines()) paces what its node injects:
 * the transfers behind it share its rate max-min fairly, each weighted by
 * the share of its send it carries (a send cut into parts over planes or
 * stripes counts once) and held to what its path could carry alone, each
 * paced at its rate from one packet to the next.  It holds no packet and
 * no buffer: a transfer waits for its own links, not behind another's
 * packets.
 */
#include "network/network.h"

#include <math.h>
#include <string.h>

#define HOST_BUFFER ((uint64_t) 1 << 20)   /* bytes: non-switch nodes */
#define NONE UINT32_MAX

typedef struct {
  uint32_t transfer;
  uint32_t seq;                 /* packet number within its transfer; a
                                   lost one's: the link it is on */
  uint32_t bytes;               /* payload */
  uint32_t hop;                 /* index in the path of its current link */
  WeftTime tail_at;             /* when its last byte reaches the next node */
  uint32_t next;                /* queue link */
  uint8_t state;                /* FREE, QUEUED, GOING (on a link, its
                                   arrival to come) or LOST (going, on or
                                   before a link that went down under it) */
} Packet;

enum { FREE, QUEUED, GOING, LOST };

typedef struct {
  uint32_t head, tail;          /* packets waiting at the sender */
  uint64_t queued;              /* their bytes */
  int64_t credits;              /* room in the receiver's input buffer */
  gboolean busy;
  double wire;                  /* B/s after encoding, all lanes */
  uint32_t header, payload;     /* of its link type */
  int64_t buffer;               /* the receiver's input buffer, bytes */
  uint32_t tx_prev;             /* link the packet being sent came in by */
  uint32_t tx_bytes;            /* its bytes */
  WeftTime idle_from;           /* end of its last transmission */
  double carry;                 /* ps: fraction left over from rounding */
  uint32_t injecting;           /* round-robin list of sourcing transfers */
} PLink;

typedef struct {
  uint64_t sent;                /* bytes put into packets */
  uint32_t next_seq;            /* next packet to create */
  uint32_t expected;            /* next packet the destination expects */
  uint64_t delivered;           /* bytes at the destination */
  uint32_t chunk;               /* packet payload for this transfer */
  uint32_t next_inject;         /* next transfer in the link's round-robin */
  WeftTime paced_until;         /* caps: no packet before this time */
  gboolean waiting;             /* in its first link's round-robin */
  uint32_t first;               /* its path's first link on the wire: 1
                                   behind a send engine, else 0 */
  double engine_rate;           /* B/s: its share of the engine */
  uint32_t generation;          /* of its slot: an injection it put off
                                   is its own only if this is the same */
  gboolean withdrawn;           /* it injects no more (a fault) */
} PTransfer;

typedef struct {
  WeftNetwork base;
  PLink *links;
  PTransfer *ts;
  uint32_t ts_cap;
  uint32_t ts_used;             /* slots ever started: their generations */
  Packet *packets;
  uint32_t n_packets, packets_cap, free_packet;
  GArray **engine_ts;           /* per send engine: the transfers (ids)
                                   still injecting behind it */
  uint32_t *of_start, *of_list; /* while a fault's transfers are withdrawn:
                                   transfer i's packets are of_list[
                                   of_start[i] .. of_start[i + 1]), as of
                                   that phase's start */
  uint32_t of_len, of_phase;
} PacketNet;

static WeftNetwork *
packet_create (void)
{
  PacketNet *p = g_new0 (PacketNet, 1);

  p->free_packet = NONE;
  return &p->base;
}

static void
packet_destroy (WeftNetwork *net)
{
  PacketNet *p = (PacketNet *) net;

  g_free (p->links);
  g_free (p->ts);
  g_free (p->packets);
  g_free (p->of_start);
  g_free (p->of_list);
  if (p->engine_ts != NULL)
    for (uint32_t e = 0; e < net->n_links - net->topo->n_links; e++)
      if (p->engine_ts[e] != NULL)
        g_array_unref (p->engine_ts[e]);
  g_free (p->engine_ts);
  g_free (p);
}

static uint64_t
buffer_of (const WeftNetwork *net, uint32_t node)
{
  const WeftNode *n = &net->topo->nodes[node];

  return n->kind == WEFT_NODE_SWITCH ? n->device->buffer : HOST_BUFFER;
}

static void
ensure_links (PacketNet *p)
{
  const WeftTopology *topo = p->base.topo;

  if (p->links != NULL)
    return;
  p->links = g_new0 (PLink, MAX (p->base.n_links, 1));
  p->engine_ts = g_new0 (GArray *, MAX (p->base.n_links - topo->n_links, 1));
  for (uint32_t l = 0; l < topo->n_links; l++)
    {
      const WeftLink *link = &topo->links[l];
      const WeftLinkType *t = g_ptr_array_index (topo->link_types, link->type);
      PLink *pl = &p->links[l];
      pl->head = pl->tail = pl->injecting = NONE;
      pl->credits = pl->buffer = (int64_t) buffer_of (&p->base, link->dst);
      /* On the wire at its signalling rate (at its share under a fault),
       * slowed in proportion when data moves below the link's effective
       * bandwidth (NCCL's model).  A link that is down is in no route. */
      double below = link->bandwidth > 0
                         ? p->base.capacity[l] / link->bandwidth : 1;
      pl->wire = t->bandwidth * t->encoding * link->lanes * link->share
                 * below;
      pl->header = (uint32_t) t->header;
      pl->payload = (uint32_t) t->payload;
    }
}

/* Time on the wire of @bytes of payload on @pl, in ps, exactly. */
static inline double
wire_exact (const PLink *pl, uint32_t bytes)
{
  uint32_t packets = (bytes + pl->payload - 1) / pl->payload;

  return (double) (bytes + (uint64_t) packets * pl->header) * 1e12 / pl->wire;
}

/* Whole ps for the next packet on @pl; the fractions are carried over while
 * the link stays busy, so back-to-back packets keep the exact rate. */
static inline WeftTime
wire_ps (PLink *pl, uint32_t bytes, WeftTime now)
{
  if (now > pl->idle_from)
    pl->carry = 0;
  double exact = wire_exact (pl, bytes) + pl->carry;
  WeftTime whole = (WeftTime) exact;
  pl->carry = exact - (double) whole;
  return whole;
}

static uint32_t
packet_alloc (PacketNet *p)
{
  if (p->free_packet != NONE)
    {
      uint32_t i = p->free_packet;
      p->free_packet = p->packets[i].next;
      return i;
    }
  if (p->n_packets == p->packets_cap)
    {
      p->packets_cap = p->packets_cap ? p->packets_cap * 2 : 1024;
      p->packets = g_renew (Packet, p->packets, p->packets_cap);
    }
  return p->n_packets++;
}

static void
packet_release (PacketNet *p, uint32_t i)
{
  p->packets[i].state = FREE;
  p->packets[i].next = p->free_packet;
  p->free_packet = i;
}

/* An injection put off for transfer @id of slot generation @gen, as the
 * event's data, and back. */
static inline void *
put_off (uint32_t id, uint32_t gen)
{
  return (void *) (uintptr_t) ((uint64_t) gen << 32 | id);
}

static void
enqueue (PacketNet *p, uint32_t l, uint32_t pk)
{
  PLink *pl = &p->links[l];

  p->packets[pk].next = NONE;
  p->packets[pk].state = QUEUED;
  if (pl->tail == NONE)
    pl->head = pk;
  else
    p->packets[pl->tail].next = pk;
  pl->tail = pk;
  pl->queued += p->packets[pk].bytes;
  WeftLinkStat *s = &p->base.stats->links[l];
  s->peak_queue = MAX (s->peak_queue, pl->queued);
}

static void try_send (PacketNet *p, uint32_t l);
static void inject (PacketNet *p, uint32_t l);

/* Give @bytes of room back to link @l's sender: its packet has left the
 * receiver's buffer.  (The credit's trip back is not delayed: credit loops
 * matter only when a buffer is smaller than a link's bandwidth-delay
 * product, and weft's presets are far larger.) */
static void
return_credits (PacketNet *p, uint32_t l, uint32_t bytes)
{
  p->links[l].credits += bytes;
  g_assert (p->links[l].credits <= p->links[l].buffer);
  try_send (p, l);
}

static void
arrive (WeftSim *sim, void *target, void *data)
{
  PacketNet *p = target;
  uint32_t pk = GPOINTER_TO_UINT (data);
  Packet *packet = &p->packets[pk];
  (void) sim;

  if (G_UNLIKELY (packet->state == LOST))
    {
      /* Gone with the link: the buffer it would have come into is free. */
      uint32_t on = packet->seq, bytes = packet->bytes;
      packet_release (p, pk);
      return_credits (p, on, bytes);
      return;
    }
  WeftTransfer *t = &p->base.transfers[packet->transfer];
  uint32_t l = t->path[packet->hop];

  p->base.packet_hops++;
  if (packet->hop + 1 == t->path_len)
    {
      /* Delivered: in order, or the model is broken. */
      PTransfer *pt = &p->ts[packet->transfer];
      g_assert (packet->seq == pt->expected);
      pt->expected++;
      pt->delivered += packet->bytes;
      return_credits (p, l, packet->bytes);
      uint32_t id = packet->transfer;
      packet_release (p, pk);
      if (pt->delivered == t->bytes)
        weft_network_complete (&p->base, id, 0);
      return;
    }
  packet->hop++;
  uint32_t next = t->path[packet->hop];
  enqueue (p, next, pk);
  try_send (p, next);
}

static void
sent (WeftSim *sim, void *target, void *data)
{
  PacketNet *p = target;
  uint32_t l = GPOINTER_TO_UINT (data);
  PLink *pl = &p->links[l];
  (void) sim;

  pl->busy = FALSE;
  /* The packet has left the buffer it waited in. */
  if (pl->tx_prev != NONE)
    return_credits (p, pl->tx_prev, pl->tx_bytes);
  try_send (p, l);
  if (p->links[l].head == NONE)
    inject (p, l);
}

static void
try_send (PacketNet *p, uint32_t l)
{
  PLink *pl = &p->links[l];

  if (pl->busy || pl->head == NONE)
    return;
  uint32_t pk = pl->head;
  Packet *packet = &p->packets[pk];
  if (pl->credits < (int64_t) packet->bytes)
    return;                     /* back-pressure: wait for credits */

  const WeftTopology *topo = p->base.topo;
  const WeftLink *link = &topo->links[l];     /* packets skip engines */
  const WeftTransfer *t = &p->base.transfers[packet->transfer];
  WeftTime now = weft_sim_now (p->base.sim);
  WeftTime wire = wire_ps (pl, packet->bytes, now);
  /* A cut-through packet may start before its tail has arrived, but cannot
   * finish before it. */
  WeftTime end = MAX (now + wire, packet->tail_at);

  pl->head = packet->next;
  if (pl->head == NONE)
    pl->tail = NONE;
  packet->state = GOING;
  pl->queued -= packet->bytes;
  pl->credits -= packet->bytes;
  pl->busy = TRUE;
  pl->idle_from = end;
  WeftLinkStat *stat = &p->base.stats->links[l];
  stat->peak_buffer = MAX (stat->peak_buffer,
                           (uint64_t) (pl->buffer - pl->credits));
  weft_link_stats_spread (p->base.stats, l, now, end, packet->bytes);
  p->base.stats->links[l].busy += end - now;

  /* When does it reach the next node, ready to go on? */
  WeftTime ready;
  gboolean last = packet->hop + 1 == t->path_len;
  packet->tail_at = end + link->latency;
  if (last)
    ready = packet->tail_at;
  else
    {
      const WeftNode *via = &topo->nodes[link->dst];
      WeftTime node_latency = weft_network_node_latency (&p->base, link->dst);
      if (via->kind == WEFT_NODE_SWITCH && via->device->cut_through)
        ready = now + (WeftTime) ceil (wire_exact (pl, MIN (packet->bytes,
                                                             pl->header + 1)))
                + link->latency + node_latency;
      else
        ready = packet->tail_at + node_latency;
      packet->tail_at += node_latency;
    }
  pl->tx_prev = packet->hop > p->ts[packet->transfer].first
                    ? t->path[packet->hop - 1] : NONE;
  pl->tx_bytes = packet->bytes;
  weft_sim_schedule_at (p->base.sim, end, sent, p, GUINT_TO_POINTER (l));
  weft_sim_schedule_at (p->base.sim, MAX (ready, now), arrive, p,
                        GUINT_TO_POINTER (pk));
}

static void inject_later (WeftSim *sim, void *target, void *data);

/* The engine's transfers' rates anew: max-min fair, by weight
 * WeftTransfer.part, none above its path's bottleneck. */
static void
engine_share (PacketNet *p, uint32_t e)
{
  GArray *ids = p->engine_ts[e];
  uint32_t n = ids->len;
  double room = p->base.capacity[p->base.topo->n_links + e], weight = 0;
  g_autofree uint32_t *order = g_memdup2 (ids->data, n * sizeof (uint32_t));

  for (uint32_t i = 0; i < n; i++)
    weight += p->base.transfers[order[i]].part;
  /* Least demand per weight first (few transfers: insertion sort). */
  for (uint32_t i = 1; i < n; i++)
    {
      uint32_t x = order[i], j = i;
      const WeftTransfer *tx = &p->base.transfers[x];
      double key = tx->bottleneck / tx->part;
      for (; j > 0; j--)
        {
          const WeftTransfer *ty = &p->base.transfers[order[j - 1]];
          if (ty->bottleneck / ty->part <= key)
            break;
          order[j] = order[j - 1];
        }
      order[j] = x;
    }
  for (uint32_t i = 0; i < n; i++)
    {
      const WeftTransfer *t = &p->base.transfers[order[i]];
      double fair = weight > 0 ? room * t->part / weight : room;
      double rate = t->bottleneck > 0 ? MIN (fair, t->bottleneck) : fair;
      p->ts[order[i]].engine_rate = MAX (rate, 1);
      room = MAX (room - rate, 0);
      weight -= t->part;
    }
}

/* Transfer @id, behind a send engine, starts injecting. */
static void
engine_join (PacketNet *p, uint32_t id)
{
  uint32_t e = p->base.transfers[id].path[0] - p->base.topo->n_links;

  if (p->engine_ts[e] == NULL)
    p->engine_ts[e] = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  g_array_append_val (p->engine_ts[e], id);
  engine_share (p, e);
}

/* Transfer @id has injected its last packet. */
static void
engine_leave (PacketNet *p, uint32_t id)
{
  uint32_t e = p->base.transfers[id].path[0] - p->base.topo->n_links;
  GArray *ids = p->engine_ts[e];

  for (guint i = 0; i < ids->len; i++)
    if (g_array_index (ids, uint32_t, i) == id)
      {
        g_array_remove_index_fast (ids, i);
        break;
      }
  if (ids->len > 0)
    engine_share (p, e);
}

/* Put the next packet of the next transfer waiting on link @l (their first
 * link) into its queue. */
static void
inject (PacketNet *p, uint32_t l)
{
  PLink *pl = &p->links[l];
  WeftTime now = weft_sim_now (p->base.sim);

  while (pl->injecting != NONE && pl->head == NONE)
    {
      uint32_t id = pl->injecting;
      PTransfer *pt = &p->ts[id];
      const WeftTransfer *t = &p->base.transfers[id];

      /* Take it off the front of the round-robin. */
      pl->injecting = pt->next_inject;
      pt->waiting = FALSE;
      if (pt->paced_until > now)
        {
          weft_sim_schedule_at (p->base.sim, pt->paced_until, inject_later, p,
                                put_off (id, pt->generation));
          continue;
        }

      uint32_t pk = packet_alloc (p);
      uint32_t bytes = (uint32_t) MIN ((uint64_t) pt->chunk,
                                       t->bytes - pt->sent);
      p->packets[pk] = (Packet) {
        .transfer = id,
        .seq = pt->next_seq++,
        .bytes = bytes,
        .hop = pt->first,
        .tail_at = 0,
      };
      pt->sent += bytes;
      if (t->cap > 0)
        pt->paced_until = now + (WeftTime) ceil (bytes * 1e12 / t->cap);
      if (pt->first)
        {
          pt->paced_until
              = MAX (pt->paced_until,
                     now + (WeftTime) ceil (bytes * 1e12 / pt->engine_rate));
          if (pt->sent == t->bytes)
            engine_leave (p, id);
        }
      enqueue (p, l, pk);

      /* Back to the end of the round-robin if it has more to send. */
      if (pt->sent < t->bytes)
        {
          pt->waiting = TRUE;
          pt->next_inject = NONE;
          if (pl->injecting == NONE)
            pl->injecting = id;
          else
            {
              uint32_t last = pl->injecting;
              while (p->ts[last].next_inject != NONE)
                last = p->ts[last].next_inject;
              p->ts[last].next_inject = id;
            }
        }
      try_send (p, l);
    }
}

static void
join_round_robin (PacketNet *p, uint32_t l, uint32_t id)
{
  PTransfer *pt = &p->ts[id];

  pt->waiting = TRUE;
  pt->next_inject = NONE;
  if (p->links[l].injecting == NONE)
    p->links[l].injecting = id;
  else
    {
      uint32_t last = p->links[l].injecting;
      while (p->ts[last].next_inject != NONE)
        last = p->ts[last].next_inject;
      p->ts[last].next_inject = id;
    }
}

static void
inject_later (WeftSim *sim, void *target, void *data)
{
  PacketNet *p = target;
  uint64_t key = (uint64_t) (uintptr_t) data;
  uint32_t id = (uint32_t) key;
  (void) sim;

  if (p->ts[id].generation != (uint32_t) (key >> 32) || p->ts[id].withdrawn)
    return;                     /* its transfer is gone */
  uint32_t l = p->base.transfers[id].path[p->ts[id].first];
  join_round_robin (p, l, id);
  if (p->links[l].head == NONE && !p->links[l].busy)
    inject (p, l);
}

static void
packet_start (WeftNetwork *net, uint32_t id)
{
  PacketNet *p = (PacketNet *) net;
  const WeftTransfer *t = &net->transfers[id];

  ensure_links (p);
  if (id >= p->ts_cap)
    {
      uint32_t cap = MAX (net->transfers_cap, id + 1);
      p->ts = g_renew (PTransfer, p->ts, cap);
      p->ts_cap = cap;
    }
  /* Behind a send engine, the packets start on the link after it. */
  uint32_t first = t->path[0] >= net->topo->n_links;
  g_assert (t->path_len > first);
  uint32_t chunk = 0;
  for (uint32_t i = first; i < t->path_len; i++)
    chunk = MAX (chunk, p->links[t->path[i]].payload);
  for (uint32_t i = first; i < t->path_len; i++)
    {
      /* A buffer must hold at least one packet, or nothing would move. */
      uint32_t l = t->path[i];
      g_assert (buffer_of (net, net->topo->links[l].dst) >= chunk);
    }
  uint32_t generation = id < p->ts_used ? p->ts[id].generation + 1 : 0;
  p->ts_used = MAX (p->ts_used, id + 1);
  p->ts[id] = (PTransfer) { .chunk = chunk, .first = first,
                            .generation = generation };
  if (first)
    engine_join (p, id);

  uint32_t l = t->path[first];
  join_round_robin (p, l, id);
  if (p->links[l].head == NONE && !p->links[l].busy)
    inject (p, l);
}

/* A link runs at a new rate: packets sent from now on take it. */
static void
packet_relink (WeftNetwork *net, uint32_t l, double old_capacity)
{
  PacketNet *p = (PacketNet *) net;
  (void) old_capacity;

  if (p->links == NULL || l >= net->topo->n_links)
    return;
  const WeftLink *link = &net->topo->links[l];
  const WeftLinkType *t = g_ptr_array_index (net->topo->link_types,
                                             link->type);
  double below = link->bandwidth > 0 ? net->capacity[l] / link->bandwidth : 1;
  p->links[l].wire = t->bandwidth * t->encoding * link->lanes * link->share
                     * below;
}

/* Take transfer @id's packet @pk, waiting in the queue of its path's link
 * @hop, out of it: the buffer it held comes free. */
static void
unqueue (PacketNet *p, uint32_t id, uint32_t pk)
{
  const WeftTransfer *t = &p->base.transfers[id];
  const Packet *packet = &p->packets[pk];
  uint32_t l = t->path[packet->hop];
  PLink *pl = &p->links[l];
  uint32_t before = NONE;

  for (uint32_t at = pl->head; at != pk; at = p->packets[at].next)
    before = at;
  if (before == NONE)
    pl->head = packet->next;
  else
    p->packets[before].next = packet->next;
  if (pl->tail == pk)
    pl->tail = before;
  pl->queued -= packet->bytes;
  if (packet->hop > p->ts[id].first)
    return_credits (p, t->path[packet->hop - 1], packet->bytes);
}

/* It injects no more: what it has yet to inject goes by the new routes.
 * If a link of its path has gone down (@lost), its packets on that link or
 * before it are lost too (a transport sends them again over another
 * path); those beyond it are delivered.  What it has not delivered and
 * will not is what it has left. */
static uint64_t
packet_withdraw (WeftNetwork *net, uint32_t id, gboolean lost,
                 gboolean *keeps)
{
  PacketNet *p = (PacketNet *) net;
  WeftTransfer *t = &net->transfers[id];
  PTransfer *pt = &p->ts[id];
  uint32_t cut = NONE;

  *keeps = FALSE;
  for (uint32_t i = pt->first; lost && i < t->path_len; i++)
    if (net->topo->links[t->path[i]].share == 0)
      cut = i;
  if (pt->sent == t->bytes && cut == NONE)
    return 0;                   /* all on its way, and on its way to stay */
  if (pt->waiting)
    {
      uint32_t l = t->path[pt->first];
      uint32_t *at = &p->links[l].injecting;
      while (*at != id)
        at = &p->ts[*at].next_inject;
      *at = pt->next_inject;
      pt->waiting = FALSE;
    }
  if (pt->first && pt->sent < t->bytes)
    engine_leave (p, id);
  pt->withdrawn = TRUE;

  /* Packets do not say where they are: once a phase, each transfer's are
   * listed.  (Packets made meanwhile are of transfers on the new routes.) */
  if (p->of_start == NULL || p->of_phase != net->phase)
    {
      p->of_phase = net->phase;
      p->of_len = net->n_transfers;
      p->of_start = g_renew (uint32_t, p->of_start, p->of_len + 1);
      p->of_list = g_renew (uint32_t, p->of_list, MAX (p->n_packets, 1));
      memset (p->of_start, 0, (p->of_len + 1) * sizeof (uint32_t));
      for (uint32_t pk = 0; pk < p->n_packets; pk++)
        if (p->packets[pk].state == QUEUED || p->packets[pk].state == GOING)
          p->of_start[p->packets[pk].transfer + 1]++;
      for (uint32_t i = 0; i < p->of_len; i++)
        p->of_start[i + 1] += p->of_start[i];
      g_autofree uint32_t *fill = g_memdup2 (p->of_start,
                                             p->of_len * sizeof (uint32_t));
      for (uint32_t pk = 0; pk < p->n_packets; pk++)
        if (p->packets[pk].state == QUEUED || p->packets[pk].state == GOING)
          p->of_list[fill[p->packets[pk].transfer]++] = pk;
    }
  uint64_t beyond = 0, gone = 0;
  for (uint32_t j = id < p->of_len ? p->of_start[id] : 0;
       id < p->of_len && j < p->of_start[id + 1]; j++)
    {
      uint32_t pk = p->of_list[j];
      Packet *packet = &p->packets[pk];
      if (packet->transfer != id
          || (packet->state != QUEUED && packet->state != GOING))
        continue;
      if (cut == NONE || packet->hop > cut)
        {
          beyond += packet->bytes;
          continue;
        }
      gone += packet->bytes;
      if (packet->state == QUEUED)
        {
          unqueue (p, id, pk);
          packet_release (p, pk);
        }
      else
        {
          packet->state = LOST;
          packet->seq = t->path[packet->hop];
        }
    }
  uint64_t left = gone + (t->bytes - pt->sent);
  if (beyond == 0)
    {
      /* Nothing more will come: off the network, what it delivered
       * counted on its links. */
      for (uint32_t i = pt->first; i < t->path_len; i++)
        weft_link_stats_count (net->stats, t->path[i], pt->delivered);
      weft_network_release (net, id);
      return left;
    }
  t->bytes = pt->delivered + beyond;
  pt->sent = t->bytes;
  *keeps = TRUE;
  return left;
}

const WeftNetworkClass weft_network_packet_class = {
  .name = "packet",
  .create = packet_create,
  .start = packet_start,
  .destroy = packet_destroy,
  .relink = packet_relink,
  .withdraw = packet_withdraw,
  .link_state = sizeof (PLink),
  .transfer_state = sizeof (PTransfer),
};
