/* weft: the topology. */
#include "topology/topology.h"
#include "union_find.h"
#include "topology/faults.h"

#include <string.h>

G_DEFINE_QUARK (weft-topology-error-quark, weft_topology_error)

static const char *const kind_names[] = { "gpu", "switch", "nic", "cpu" };
static const char *const family_names[] = { "nvlink", "pcie", "network",
                                            "other" };

const char *
weft_node_kind_name (WeftNodeKind kind)
{
  g_assert (kind < WEFT_NODE_KIND_COUNT);
  return kind_names[kind];
}

gboolean
weft_node_kind_parse (const char *name, WeftNodeKind *kind)
{
  for (int i = 0; i < WEFT_NODE_KIND_COUNT; i++)
    if (strcmp (name, kind_names[i]) == 0)
      {
        *kind = (WeftNodeKind) i;
        return TRUE;
      }
  return FALSE;
}

const char *
weft_link_family_name (WeftLinkFamily family)
{
  g_assert (family < WEFT_FAMILY_COUNT);
  return family_names[family];
}

double
weft_link_type_effective (const WeftLinkType *type)
{
  return type->bandwidth * type->encoding * (double) type->payload
         / (double) (type->payload + type->header);
}

double
weft_link_nccl_rate (const WeftTopology *topo, const WeftLink *link)
{
  const WeftLinkType *t = g_ptr_array_index (topo->link_types, link->type);

  return t->nccl_bandwidth > 0
             ? MIN (t->nccl_bandwidth * link->lanes * link->share,
                    link->bandwidth)
             : link->bandwidth;
}

void
weft_link_type_free (WeftLinkType *type)
{
  if (type == NULL)
    return;
  g_free (type->name);
  g_free (type->port);
  g_free (type);
}

void
weft_device_free (WeftDevice *device)
{
  if (device == NULL)
    return;
  g_free (device->name);
  for (uint32_t i = 0; i < device->n_port_classes; i++)
    g_free (device->port_names[i]);
  g_free (device->port_names);
  g_free (device->port_counts);
  g_free (device);
}

static void
zone_template_free (WeftZoneTemplate *t)
{
  g_free (t->name);
  g_free (t);
}

WeftTopology *
weft_topology_new (void)
{
  WeftTopology *topo = g_new0 (WeftTopology, 1);

  topo->link_types = g_ptr_array_new_with_free_func (
      (GDestroyNotify) weft_link_type_free);
  topo->devices = g_ptr_array_new_with_free_func (
      (GDestroyNotify) weft_device_free);
  topo->link_type_index = g_hash_table_new (g_str_hash, g_str_equal);
  topo->device_index = g_hash_table_new (g_str_hash, g_str_equal);
  topo->node_index = g_hash_table_new (g_str_hash, g_str_equal);
  topo->zone_templates = g_ptr_array_new_with_free_func (
      (GDestroyNotify) zone_template_free);
  topo->open_zone = WEFT_NONE;
  topo->faults = g_ptr_array_new_with_free_func ((GDestroyNotify) weft_fault_free);
  g_mutex_init (&topo->spare_lock);
  return topo;
}

void
weft_topology_free (WeftTopology *topo)
{
  if (topo == NULL)
    return;
  if (topo->spare)
    g_ptr_array_unref (topo->spare);
  g_mutex_clear (&topo->spare_lock);
  g_free (topo->links);
  g_free (topo->zones);
  g_ptr_array_unref (topo->zone_templates);
  g_free (topo->out_start);
  g_free (topo->out_links);
  if (topo->base != NULL)
    {
      g_free (topo);
      return;
    }
  if (topo->phases)
    for (guint i = 0; i < topo->phases->len; i++)
      weft_topology_free (g_array_index (topo->phases, WeftTopoPhase, i).topo);
  g_clear_pointer (&topo->phases, g_array_unref);
  g_free (topo->whole_bandwidth);
  g_hash_table_unref (topo->node_index);
  g_hash_table_unref (topo->link_type_index);
  g_hash_table_unref (topo->device_index);
  for (uint32_t i = 0; i < topo->n_nodes; i++)
    g_free (topo->nodes[i].name);
  g_free (topo->nodes);
  g_free (topo->ports_used);
  g_ptr_array_unref (topo->link_types);
  g_ptr_array_unref (topo->devices);
  g_ptr_array_unref (topo->faults);
  g_free (topo);
}

uint32_t
weft_topology_add_link_type (WeftTopology *topo, WeftLinkType *type)
{
  uint32_t index = topo->link_types->len;

  g_assert (!g_hash_table_contains (topo->link_type_index, type->name));
  g_ptr_array_add (topo->link_types, type);
  g_hash_table_insert (topo->link_type_index, type->name,
                       GUINT_TO_POINTER (index + 1));
  return index;
}

void
weft_topology_add_device (WeftTopology *topo, WeftDevice *device)
{
  g_assert (!g_hash_table_contains (topo->device_index, device->name));
  g_ptr_array_add (topo->devices, device);
  g_hash_table_insert (topo->device_index, device->name, device);
}

const WeftLinkType *
weft_topology_link_type (const WeftTopology *topo, const char *name,
                         uint32_t *index)
{
  guint i = GPOINTER_TO_UINT (g_hash_table_lookup (topo->link_type_index,
                                                   name));
  if (index)
    *index = i ? i - 1 : WEFT_NONE;
  return i ? g_ptr_array_index (topo->link_types, i - 1) : NULL;
}

const WeftDevice *
weft_topology_device (const WeftTopology *topo, const char *name)
{
  return g_hash_table_lookup (topo->device_index, name);
}

uint32_t
weft_topology_find_node (const WeftTopology *topo, const char *name)
{
  guint i = GPOINTER_TO_UINT (g_hash_table_lookup (topo->node_index, name));
  return i ? i - 1 : WEFT_NONE;
}

uint32_t
weft_topology_add_node (WeftTopology *topo, char *name,
                        const WeftDevice *device, uint32_t zone)
{
  g_assert (!topo->finished);
  if (g_hash_table_contains (topo->node_index, name))
    {
      g_free (name);
      return WEFT_NONE;
    }
  if (topo->n_nodes == topo->nodes_cap)
    {
      topo->nodes_cap = topo->nodes_cap ? topo->nodes_cap * 2 : 64;
      topo->nodes = g_renew (WeftNode, topo->nodes, topo->nodes_cap);
    }
  uint32_t n_classes = device->n_port_classes;
  if (topo->n_ports_used + n_classes > topo->ports_used_cap)
    {
      topo->ports_used_cap = MAX (topo->ports_used_cap * 2,
                                  topo->n_ports_used + n_classes + 64);
      topo->ports_used = g_renew (uint32_t, topo->ports_used,
                                  topo->ports_used_cap);
    }
  /* A device may declare no ports at all; the array is then still NULL. */
  if (n_classes > 0)
    memset (topo->ports_used + topo->n_ports_used, 0,
            n_classes * sizeof (uint32_t));

  uint32_t id = topo->n_nodes++;
  topo->nodes[id] = (WeftNode) {
    .name = name,
    .device = device,
    .kind = device->kind,
    .zone = zone,
    .port_base = topo->n_ports_used,
    .compute = 1,
  };
  topo->n_ports_used += n_classes;
  g_hash_table_insert (topo->node_index, name, GUINT_TO_POINTER (id + 1));
  if (zone != WEFT_ZONE_ROOT)
    topo->zones[zone].n_nodes++;
  return id;
}

static gboolean
take_ports (WeftTopology *topo, uint32_t node, const char *port,
            uint32_t lanes, GError **error)
{
  const WeftNode *n = &topo->nodes[node];
  const WeftDevice *d = n->device;

  for (uint32_t c = 0; c < d->n_port_classes; c++)
    if (strcmp (d->port_names[c], port) == 0)
      {
        uint32_t *used = &topo->ports_used[n->port_base + c];
        if (*used + lanes > d->port_counts[c])
          {
            g_set_error (error, WEFT_TOPOLOGY_ERROR, WEFT_TOPOLOGY_ERROR_LINK,
                         "'%s' (%s) has %u %s ports and %u are taken; this "
                         "link needs %u more",
                         n->name, d->name, d->port_counts[c], port, *used,
                         lanes);
            return FALSE;
          }
        *used += lanes;
        return TRUE;
      }

  GString *classes = g_string_new (NULL);
  for (uint32_t c = 0; c < d->n_port_classes; c++)
    g_string_append_printf (classes, "%s%s", c ? ", " : "", d->port_names[c]);
  g_set_error (error, WEFT_TOPOLOGY_ERROR, WEFT_TOPOLOGY_ERROR_LINK,
               "'%s' (%s) has no %s port; its ports: %s", n->name, d->name,
               port, classes->len ? classes->str : "none");
  g_string_free (classes, TRUE);
  return FALSE;
}

gboolean
weft_topology_add_link (WeftTopology *topo, uint32_t a, uint32_t b,
                        uint32_t type, uint32_t lanes, const char *port_a,
                        const char *port_b, uint32_t *id, GError **error)
{
  const WeftLinkType *t = g_ptr_array_index (topo->link_types, type);

  g_assert (!topo->finished);
  g_assert (a < topo->n_nodes && b < topo->n_nodes && lanes >= 1);
  if (a == b)
    {
      g_set_error (error, WEFT_TOPOLOGY_ERROR, WEFT_TOPOLOGY_ERROR_LINK,
                   "a link cannot join '%s' to itself", topo->nodes[a].name);
      return FALSE;
    }
  if (!take_ports (topo, a, port_a ? port_a : t->port, lanes, error))
    return FALSE;
  if (!take_ports (topo, b, port_b ? port_b : t->port, lanes, error))
    return FALSE;

  if (topo->n_links + 2 > topo->links_cap)
    {
      topo->links_cap = topo->links_cap ? topo->links_cap * 2 : 128;
      topo->links = g_renew (WeftLink, topo->links, topo->links_cap);
    }
  WeftLink link = {
    .src = a,
    .dst = b,
    .type = type,
    .lanes = lanes,
    .bandwidth = weft_link_type_effective (t) * lanes,
    .latency = t->latency,
    .cost = t->cost,
    .share = 1,
  };
  if (id)
    *id = topo->n_links;
  topo->links[topo->n_links++] = link;
  link.src = b;
  link.dst = a;
  topo->links[topo->n_links++] = link;

  /* A link added inside an existing zone from outside its instantiation
   * makes that zone differ from its template. */
  uint32_t za = topo->nodes[a].zone;
  if (za != WEFT_ZONE_ROOT && za == topo->nodes[b].zone
      && za != topo->open_zone)
    topo->zones[za].custom = TRUE;
  return TRUE;
}

uint32_t
weft_topology_begin_zone (WeftTopology *topo, uint32_t template_id)
{
  g_assert (topo->open_zone == WEFT_NONE);
  if (topo->n_zones == topo->zones_cap)
    {
      topo->zones_cap = topo->zones_cap ? topo->zones_cap * 2 : 16;
      topo->zones = g_renew (WeftZone, topo->zones, topo->zones_cap);
    }
  uint32_t zone = topo->n_zones++;
  topo->zones[zone] = (WeftZone) {
    .template_id = template_id,
    .first_node = topo->n_nodes,
  };
  topo->open_zone = zone;
  return zone;
}

void
weft_topology_end_zone (WeftTopology *topo, uint32_t zone)
{
  g_assert (topo->open_zone == zone);
  topo->open_zone = WEFT_NONE;
}

/* The directed links leaving each node that are up, and for each zone
 * template an instance that is as the template has it. */
static void
adjacency (WeftTopology *topo)
{
  topo->out_start = g_new0 (uint32_t, topo->n_nodes + 1);
  topo->out_links = g_new (uint32_t, MAX (topo->n_links, 1));
  /* A link that is down is in no route: routing sees only what is up. */
  for (uint32_t l = 0; l < topo->n_links; l++)
    if (topo->links[l].share > 0)
      topo->out_start[topo->links[l].src + 1]++;
  for (uint32_t n = 0; n < topo->n_nodes; n++)
    topo->out_start[n + 1] += topo->out_start[n];
  g_autofree uint32_t *fill = g_memdup2 (topo->out_start,
                                         topo->n_nodes * sizeof (uint32_t));
  for (uint32_t l = 0; l < topo->n_links; l++)
    if (topo->links[l].share > 0)
      topo->out_links[fill[topo->links[l].src]++] = l;

  for (guint t = 0; t < topo->zone_templates->len; t++)
    {
      WeftZoneTemplate *zt = g_ptr_array_index (topo->zone_templates, t);
      zt->first_zone = WEFT_NONE;
    }
  for (uint32_t z = 0; z < topo->n_zones; z++)
    {
      WeftZone *zone = &topo->zones[z];
      WeftZoneTemplate *zt = g_ptr_array_index (topo->zone_templates,
                                                zone->template_id);
      if (!zone->custom && zt->first_zone == WEFT_NONE)
        zt->first_zone = z;
    }
}

void
weft_topology_finish (WeftTopology *topo)
{
  g_assert (!topo->finished && topo->open_zone == WEFT_NONE);
  adjacency (topo);
  topo->finished = TRUE;
}

gboolean
weft_topology_gpus_joined (const WeftTopology *topo, uint32_t *parent,
                           uint32_t *a, uint32_t *b)
{
  uint32_t first = WEFT_NONE;

  for (uint32_t n = 0; n < topo->n_nodes; n++)
    parent[n] = n;
  for (uint32_t l = 0; l < topo->n_links; l += 2)
    if (topo->links[l].share > 0)
      weft_union (parent, topo->links[l].src, topo->links[l].dst);
  for (uint32_t n = 0; n < topo->n_nodes; n++)
    {
      if (topo->nodes[n].kind != WEFT_NODE_GPU)
        continue;
      if (first == WEFT_NONE)
        first = n;
      else if (weft_find_root (parent, n) != weft_find_root (parent, first))
        {
          *a = first;
          *b = n;
          return FALSE;
        }
    }
  return TRUE;
}

WeftTopology *
weft_topology_phase_new (const WeftTopology *base, const float *share)
{
  WeftTopology *topo = g_new (WeftTopology, 1);

  g_assert (base->finished && base->whole_bandwidth != NULL);
  *topo = *base;
  topo->base = base;
  topo->spare = NULL;
  topo->phases = NULL;
  g_mutex_init (&topo->spare_lock);
  topo->links = g_memdup2 (base->links, base->n_links * sizeof (WeftLink));
  topo->zones = g_memdup2 (base->zones, base->n_zones * sizeof (WeftZone));
  topo->zone_templates = g_ptr_array_new_with_free_func (g_free);
  for (guint t = 0; t < base->zone_templates->len; t++)
    g_ptr_array_add (topo->zone_templates,
                     g_memdup2 (g_ptr_array_index (base->zone_templates, t),
                                sizeof (WeftZoneTemplate)));
  for (uint32_t l = 0; l < topo->n_links; l++)
    {
      WeftLink *link = &topo->links[l];
      link->share = share[l];
      link->bandwidth = base->whole_bandwidth[l] * share[l];
      /* A server whose own links are not whole routes for itself. */
      uint32_t z = topo->nodes[link->src].zone;
      if (share[l] < 1 && z != WEFT_ZONE_ROOT
          && z == topo->nodes[link->dst].zone)
        topo->zones[z].custom = TRUE;
    }
  adjacency (topo);
  return topo;
}

uint32_t
weft_topology_count (const WeftTopology *topo, WeftNodeKind kind)
{
  uint32_t count = 0;

  for (uint32_t n = 0; n < topo->n_nodes; n++)
    count += topo->nodes[n].kind == kind;
  return count;
}
