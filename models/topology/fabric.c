/* weft: fabric generators. */
#include "topology/fabric.h"

#include <stdio.h>
#include <string.h>

#include "topology/names.h"
#include "topology/route_engine.h"

typedef struct {
  WeftTopology *topo;
  const WeftCfg *entry;
  const char *name;             /* prefix of generated nodes */
  uint32_t link_type;
  const WeftLinkType *link;
  uint32_t lanes;
  WeftRouteEngine routing;      /* of the switches it makes */
} Gen;

gboolean
weft_fabric_resolve (WeftTopology *topo, const WeftCfg *cfg,
                     const char *prefix, GArray *ids, GPtrArray *ports,
                     GError **error)
{
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  GError *cause = NULL;

  if (!weft_cfg_expect_scalar (cfg, "a node name", error))
    return FALSE;

  /* "name:port" names the port class to use at that end. */
  g_autofree char *pattern = g_strdup (cfg->text);
  char *colon = strrchr (pattern, ':');
  char *port = NULL;
  if (colon != NULL)
    {
      *colon = '\0';
      port = colon + 1;
      if (*port == '\0')
        return weft_cfg_error (error, cfg, "'%s' names no port class after "
                               "':'", cfg->text);
    }
  if (!weft_names_expand (pattern, names, &cause))
    return weft_cfg_error_at (error, cfg, cause);
  for (guint i = 0; i < names->len; i++)
    {
      const char *local = g_ptr_array_index (names, i);
      g_autofree char *full = prefix ? g_strdup_printf ("%s/%s", prefix, local)
                                     : g_strdup (local);
      uint32_t id = weft_topology_find_node (topo, full);
      if (id == WEFT_NONE)
        return weft_cfg_error (error, cfg, "no node named '%s'", full);
      g_array_append_val (ids, id);
      if (ports)
        g_ptr_array_add (ports, port ? g_strdup (port) : NULL);
    }
  return TRUE;
}

static gboolean
gen_link (Gen *g, uint32_t a, uint32_t b, uint32_t lanes, GError **error)
{
  GError *cause = NULL;

  if (!weft_topology_add_link (g->topo, a, b, g->link_type, lanes, NULL, NULL,
                               NULL, &cause))
    return weft_cfg_error_at (error, g->entry, cause);
  return TRUE;
}

static uint32_t
gen_switch (Gen *g, const WeftDevice *device, char *name, GError **error)
{
  uint32_t id = weft_topology_add_node (g->topo, name, device, WEFT_ZONE_ROOT);

  if (id == WEFT_NONE)
    weft_cfg_error (error, g->entry, "fabric '%s' makes a node whose name is "
                    "already taken; give the fabric another name", g->name);
  else
    g->topo->nodes[id].routing = (uint8_t) g->routing;
  return id;
}

static const WeftDevice *
gen_device (Gen *g, const char *key, WeftNodeKind kind, GError **error)
{
  WeftCfg *cfg = weft_cfg_require (g->entry, key, error);
  const WeftDevice *device;

  if (cfg == NULL || !weft_cfg_expect_scalar (cfg, key, error))
    return NULL;
  device = weft_topology_device (g->topo, cfg->text);
  if (device == NULL)
    {
      weft_cfg_error (error, cfg, "unknown device '%s'", cfg->text);
      return NULL;
    }
  if (device->kind != kind)
    {
      weft_cfg_error (error, cfg, "device '%s' is a %s, not a %s", cfg->text,
                      weft_node_kind_name (device->kind),
                      weft_node_kind_name (kind));
      return NULL;
    }
  return device;
}

static uint32_t
radix (const WeftDevice *device, const char *port)
{
  for (uint32_t c = 0; c < device->n_port_classes; c++)
    if (strcmp (device->port_names[c], port) == 0)
      return device->port_counts[c];
  return 0;
}

/* ---- ring, torus, full mesh, star ---- */

static gboolean
build_ring (Gen *g, GArray *nodes, GError **error)
{
  uint32_t n = nodes->len;
  uint32_t *id = (uint32_t *) nodes->data;

  if (n < 2)
    return weft_cfg_error (error, g->entry, "a ring needs at least 2 nodes");
  for (uint32_t i = 0; i < (n == 2 ? 1 : n); i++)
    if (!gen_link (g, id[i], id[(i + 1) % n], g->lanes, error))
      return FALSE;
  return TRUE;
}

static gboolean
build_torus (Gen *g, GArray *nodes, GError **error)
{
  WeftCfg *dims_cfg = weft_cfg_require (g->entry, "dims", error);
  uint32_t dims[3], n_dims, total = 1;
  uint32_t *id = (uint32_t *) nodes->data;

  if (dims_cfg == NULL || !weft_cfg_expect_seq (dims_cfg, "dims", error))
    return FALSE;
  if (dims_cfg->n < 2 || dims_cfg->n > 3)
    return weft_cfg_error (error, dims_cfg, "a torus has 2 or 3 dimensions, "
                           "as [x, y] or [x, y, z]");
  n_dims = (uint32_t) dims_cfg->n;
  for (uint32_t d = 0; d < n_dims; d++)
    {
      uint64_t v;
      if (!weft_cfg_uint (dims_cfg->items[d], 1, 1000000, &v, error))
        return FALSE;
      dims[d] = (uint32_t) v;
      total *= dims[d];
    }
  if (total != nodes->len)
    return weft_cfg_error (error, dims_cfg, "the dimensions make %u "
                           "positions but 'nodes' names %u nodes",
                           total, nodes->len);

  /* Node i has coordinates in row-major order (the last dimension varies
   * fastest); each node links to its successor in every dimension. */
  for (uint32_t i = 0; i < total; i++)
    {
      uint32_t stride = 1;
      for (int d = (int) n_dims - 1; d >= 0; d--)
        {
          uint32_t size = dims[d];
          uint32_t coord = (i / stride) % size;
          if (size > 2 || (size == 2 && coord == 0))
            {
              uint32_t next = i - coord * stride + ((coord + 1) % size) * stride;
              if (!gen_link (g, id[i], id[next], g->lanes, error))
                return FALSE;
            }
          stride *= size;
        }
    }
  return TRUE;
}

static gboolean
build_full_mesh (Gen *g, GArray *nodes, GError **error)
{
  uint32_t *id = (uint32_t *) nodes->data;

  if (nodes->len < 2)
    return weft_cfg_error (error, g->entry, "a mesh needs at least 2 nodes");
  for (uint32_t i = 0; i < nodes->len; i++)
    for (uint32_t j = i + 1; j < nodes->len; j++)
      if (!gen_link (g, id[i], id[j], g->lanes, error))
        return FALSE;
  return TRUE;
}

static gboolean
build_star (Gen *g, GArray *nodes, GError **error)
{
  const WeftDevice *device = gen_device (g, "switch", WEFT_NODE_SWITCH, error);

  if (device == NULL)
    return FALSE;
  uint32_t sw = gen_switch (g, device, g_strdup (g->name), error);
  if (sw == WEFT_NONE)
    return FALSE;
  for (uint32_t i = 0; i < nodes->len; i++)
    if (!gen_link (g, g_array_index (nodes, uint32_t, i), sw, g->lanes, error))
      return FALSE;
  return TRUE;
}

/* ---- fat-trees ---- */

typedef struct {
  const WeftDevice *device;
  uint32_t k;                   /* switch radix */
  uint32_t down, up;            /* leaf ports */
  uint32_t levels;
} Tree;

/* The smallest s >= at_least that divides n (n itself at worst). */
static uint32_t
divisor_at_least (uint32_t n, uint32_t at_least)
{
  for (uint32_t s = MAX (at_least, 1); s < n; s++)
    if (n % s == 0)
      return s;
  return n;
}

/* Join @m endpoints @ep under one tree whose switch names start with
 * @prefix: endpoint e hangs from leaf @leaf_of[e] (of @n_leaves, each with
 * at most t->down endpoints). */
static gboolean
build_tree (Gen *g, const Tree *t, const char *prefix, const uint32_t *ep,
            const uint32_t *leaf_of, uint32_t m, uint32_t n_leaves,
            GError **error)
{
  uint32_t k = t->k;
  g_autofree uint32_t *leaves = g_new (uint32_t, MAX (n_leaves, 1));

  for (uint32_t i = 0; i < n_leaves; i++)
    {
      leaves[i] = gen_switch (g, t->device,
                              g_strdup_printf ("%s/leaf%u", prefix, i), error);
      if (leaves[i] == WEFT_NONE)
        return FALSE;
    }
  for (uint32_t e = 0; e < m; e++)
    if (!gen_link (g, ep[e], leaves[leaf_of[e]], g->lanes, error))
      return FALSE;
  if (n_leaves == 1)
    return TRUE;

  if (t->levels == 2)
    {
      if (n_leaves > k)
        return weft_cfg_error (error, g->entry,
                               "%u endpoints need %u leaf switches, more than "
                               "a 2-level tree of radix %u can join; use "
                               "levels: 3",
                               m, n_leaves, k);
      /* As few spines as the leaves' uplinks need, each leaf reaching every
       * spine over an equal bundle of its uplinks. */
      uint32_t spines = divisor_at_least (
          t->up, (uint32_t) (((uint64_t) n_leaves * t->up + k - 1) / k));
      uint32_t bundle = t->up / spines;
      for (uint32_t s = 0; s < spines; s++)
        {
          uint32_t sw = gen_switch (
              g, t->device, g_strdup_printf ("%s/spine%u", prefix, s), error);
          if (sw == WEFT_NONE)
            return FALSE;
          for (uint32_t i = 0; i < n_leaves; i++)
            if (!gen_link (g, leaves[i], sw, bundle, error))
              return FALSE;
        }
      return TRUE;
    }

  /* Three levels: pods of k/2 leaves, each leaf joined to every one of the
   * pod's aggregation switches (as many as a leaf has uplinks); aggregation
   * switch j of every pod joins core group j. */
  uint32_t pod_leaves = k / 2, agg_up = k - k / 2;
  uint32_t aggs = t->up;
  uint32_t pods = (n_leaves + pod_leaves - 1) / pod_leaves;
  uint32_t cores = divisor_at_least (
      agg_up, (uint32_t) (((uint64_t) pods * agg_up + k - 1) / k));
  uint32_t bundle = agg_up / cores;
  if ((uint64_t) pods * bundle > k)
    return weft_cfg_error (error, g->entry,
                           "%u endpoints need %u pods, more than a 3-level "
                           "tree of radix %u can join",
                           m, pods, k);
  g_autofree uint32_t *core_ids = g_new (uint32_t, (size_t) aggs * cores);
  for (uint32_t j = 0; j < aggs; j++)
    for (uint32_t c = 0; c < cores; c++)
      {
        core_ids[j * cores + c] = gen_switch (
            g, t->device, g_strdup_printf ("%s/core%u-%u", prefix, j, c),
            error);
        if (core_ids[j * cores + c] == WEFT_NONE)
          return FALSE;
      }
  for (uint32_t p = 0; p < pods; p++)
    for (uint32_t j = 0; j < aggs; j++)
      {
        uint32_t agg = gen_switch (
            g, t->device, g_strdup_printf ("%s/pod%u/agg%u", prefix, p, j),
            error);
        if (agg == WEFT_NONE)
          return FALSE;
        for (uint32_t i = p * pod_leaves;
             i < MIN ((p + 1) * pod_leaves, n_leaves); i++)
          if (!gen_link (g, leaves[i], agg, 1, error))
            return FALSE;
        if (pods > 1)
          for (uint32_t c = 0; c < cores; c++)
            if (!gen_link (g, agg, core_ids[j * cores + c], bundle, error))
              return FALSE;
      }
  return TRUE;
}

static gboolean
parse_ratio (const WeftCfg *cfg, double *ratio, GError **error)
{
  double a, b;
  char tail;

  if (!weft_cfg_expect_scalar (cfg, "oversubscription", error))
    return FALSE;
  if (sscanf (cfg->text, "%lf:%lf%c", &a, &b, &tail) != 2 || a < b || b <= 0)
    return weft_cfg_error (error, cfg, "oversubscription '%s' should be a "
                           "ratio down:up such as 1:1 or 3:1", cfg->text);
  *ratio = a / b;
  return TRUE;
}

static gboolean
build_fat_tree (Gen *g, GArray *nodes, gboolean rail_kind, GError **error)
{
  Tree t = { 0 };
  WeftCfg *cfg;
  double ratio = 1.0;
  uint64_t levels = 2, rails = 1;
  gboolean planes = FALSE;

  if (!(t.device = gen_device (g, "switch", WEFT_NODE_SWITCH, error)))
    return FALSE;
  t.k = radix (t.device, g->link->port);
  if (t.k < 2)
    return weft_cfg_error (error, weft_cfg_get (g->entry, "switch"),
                           "switch '%s' has fewer than 2 %s ports",
                           t.device->name, g->link->port);
  if ((cfg = weft_cfg_get (g->entry, "levels"))
      && !weft_cfg_uint (cfg, 2, 3, &levels, error))
    return FALSE;
  t.levels = (uint32_t) levels;
  if ((cfg = weft_cfg_get (g->entry, "oversubscription"))
      && !parse_ratio (cfg, &ratio, error))
    return FALSE;
  t.down = (uint32_t) (t.k * ratio / (ratio + 1.0) + 0.5);
  t.down = CLAMP (t.down, 1, t.k - 1);
  t.up = t.k - t.down;
  if (rail_kind && !weft_cfg_require (g->entry, "rails", error))
    return FALSE;
  if ((cfg = weft_cfg_get (g->entry, "rails"))
      && !weft_cfg_uint (cfg, 1, 4096, &rails, error))
    return FALSE;
  if ((cfg = weft_cfg_get (g->entry, "planes"))
      && !weft_cfg_bool (cfg, &planes, error))
    return FALSE;
  if (nodes->len % rails != 0)
    return weft_cfg_error (error, weft_cfg_get (g->entry, "endpoints"),
                           "%u endpoints do not split into servers of %u "
                           "rails",
                           nodes->len, (uint32_t) rails);

  uint32_t servers = nodes->len / (uint32_t) rails;
  const uint32_t *id = (const uint32_t *) nodes->data;
  g_autofree uint32_t *order = g_new (uint32_t, MAX (nodes->len, 1));
  g_autofree uint32_t *leaf_of = g_new (uint32_t, MAX (nodes->len, 1));
  uint32_t units = (servers + t.down - 1) / t.down;

  if (planes)
    {
      /* One tree per rail: rail r joins endpoint r of every server. */
      for (uint32_t r = 0; r < rails; r++)
        {
          g_autofree char *prefix = g_strdup_printf ("%s/plane%u", g->name, r);
          for (uint32_t s = 0; s < servers; s++)
            {
              order[s] = id[s * rails + r];
              leaf_of[s] = s / t.down;
            }
          if (!build_tree (g, &t, prefix, order, leaf_of, servers, units,
                           error))
            return FALSE;
        }
      return TRUE;
    }

  /* One tree.  Servers come in units of `down`; in each unit, leaf r joins
   * endpoint r of every server (rail-optimized; with one rail this is the
   * plain fat-tree, endpoints filling leaves in order). */
  uint32_t i = 0;
  for (uint32_t unit = 0; unit < units; unit++)
    for (uint32_t r = 0; r < rails; r++)
      for (uint32_t s = unit * t.down; s < MIN ((unit + 1) * t.down, servers);
           s++)
        {
          order[i] = id[s * rails + r];
          leaf_of[i++] = unit * (uint32_t) rails + r;
        }
  return build_tree (g, &t, g->name, order, leaf_of, nodes->len,
                     units * (uint32_t) rails, error);
}

static const char *const fabric_keys[] = {
  "kind", "name", "nodes", "endpoints", "link", "lanes", "dims", "switch",
  "levels", "oversubscription", "rails", "planes", "routing", "description",
  NULL
};

static const char *const fabric_kinds[] = {
  "ring", "torus", "full-mesh", "star", "fat-tree", "rail-optimized", NULL
};

gboolean
weft_fabric_build (WeftTopology *topo, const WeftCfg *entry, GError **error)
{
  Gen g = { .topo = topo, .entry = entry };
  WeftCfg *kind, *link, *cfg, *members;
  uint64_t lanes = 1;

  if (!weft_cfg_expect_map (entry, "a fabric", error)
      || !weft_cfg_check_keys (entry, fabric_keys, error)
      || !(kind = weft_cfg_require (entry, "kind", error))
      || !weft_cfg_expect_scalar (kind, "kind", error))
    return FALSE;

  int which = -1;
  for (int i = 0; fabric_kinds[i]; i++)
    if (strcmp (kind->text, fabric_kinds[i]) == 0)
      which = i;
  if (which < 0)
    {
      const char *guess = weft_closest (kind->text, fabric_kinds);
      if (guess)
        return weft_cfg_error (error, kind, "unknown fabric kind '%s'; did "
                               "you mean '%s'?", kind->text, guess);
      return weft_cfg_error (error, kind, "unknown fabric kind '%s'; valid: "
                             "ring, torus, full-mesh, star, fat-tree, "
                             "rail-optimized", kind->text);
    }

  if (!(link = weft_cfg_require (entry, "link", error))
      || !weft_cfg_expect_scalar (link, "link", error))
    return FALSE;
  g.link = weft_topology_link_type (topo, link->text, &g.link_type);
  if (g.link == NULL)
    return weft_cfg_error (error, link, "unknown link type '%s'", link->text);
  if ((cfg = weft_cfg_get (entry, "lanes"))
      && !weft_cfg_uint (cfg, 1, 1024, &lanes, error))
    return FALSE;
  g.lanes = (uint32_t) lanes;

  /* How the fabric's switches choose among equal-cost next hops: only
   * fabrics that make switches have any to choose. */
  if ((cfg = weft_cfg_get (entry, "routing")))
    {
      if (which < 3)
        return weft_cfg_error (error, weft_cfg_get_key (entry, "routing"),
                               "a %s fabric makes no switches to route; "
                               "'routing' is for star, fat-tree and "
                               "rail-optimized fabrics", kind->text);
      if (!weft_cfg_expect_scalar (cfg, "routing", error))
        return FALSE;
      if (!weft_route_engine_parse (cfg->text, &g.routing))
        {
          const char *names[WEFT_ROUTE_ENGINE_COUNT + 1] = { NULL };
          for (int e = 0; e < WEFT_ROUTE_ENGINE_COUNT; e++)
            names[e] = weft_route_engine_class ((WeftRouteEngine) e)->name;
          const char *guess = weft_closest (cfg->text, names);
          if (guess)
            return weft_cfg_error (error, cfg, "unknown routing engine '%s'; "
                                   "did you mean '%s'? (valid: %s)",
                                   cfg->text, guess,
                                   weft_route_engine_names ());
          return weft_cfg_error (error, cfg, "unknown routing engine '%s'; "
                                 "valid: %s", cfg->text,
                                 weft_route_engine_names ());
        }
    }

  gboolean tree = which >= 4;
  const char *members_key = tree ? "endpoints" : "nodes";
  if (!(members = weft_cfg_require (entry, members_key, error)))
    return FALSE;
  if (weft_cfg_get (entry, tree ? "nodes" : "endpoints"))
    return weft_cfg_error (error, weft_cfg_get_key (entry, tree ? "nodes"
                                                                : "endpoints"),
                           "a %s fabric takes '%s', not '%s'", kind->text,
                           members_key, tree ? "nodes" : "endpoints");
  if (tree || which == 3)
    {
      WeftCfg *name = weft_cfg_require (entry, "name", error);
      if (name == NULL || !weft_cfg_expect_scalar (name, "name", error))
        return FALSE;
      if (name->text[0] == '\0' || strpbrk (name->text, "[]:/"))
        return weft_cfg_error (error, name, "a fabric name cannot be empty or "
                               "hold '[', ']', ':' or '/' (its switches are "
                               "named NAME/leaf0 and so on)");
      g.name = name->text;
    }

  g_autoptr (GArray) nodes = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  if (!weft_fabric_resolve (topo, members, NULL, nodes, NULL, error))
    return FALSE;

  switch (which)
    {
    case 0:
      return build_ring (&g, nodes, error);
    case 1:
      return build_torus (&g, nodes, error);
    case 2:
      return build_full_mesh (&g, nodes, error);
    case 3:
      return build_star (&g, nodes, error);
    default:
      return build_fat_tree (&g, nodes, which == 5, error);
    }
}
