/* weft: loading a scenario and building its topology. */
#include "topology/scenario.h"

#include <string.h>

#include "files.h"
#include "topology/fabric.h"
#include "topology/faults.h"
#include "topology/hardware.h"
#include "topology/names.h"
#include "union_find.h"
#include "units.h"

#define MAX_TEMPLATE_DEPTH 16
#define MAX_INCLUDE_DEPTH 32

typedef struct {
  WeftCfg *cfg;                 /* the definition (a reference) */
  WeftCfg *key;                 /* its name, for positions (a reference) */
} Def;

typedef struct {
  GHashTable *defs;             /* name -> Def */
  GPtrArray *order;             /* names in order of first definition */
  const char *what;             /* "link type", "device", "template" */
} Registry;

typedef struct {
  WeftTopology *topo;
  Registry link_types, devices, templates;
  GPtrArray *nodes, *links, *fabrics;   /* entries (WeftCfg references) */
  GPtrArray *faults;                    /* entries, then --fault's */
  GPtrArray *roots;                     /* every file's tree */
  GPtrArray *stack;                     /* files being read, for cycles */
  GHashTable *read;                     /* files read, by canonical path */
  GPtrArray *decl;                      /* node id -> declaring entry */
  GHashTable *zone_templates;           /* template name -> index + 1 */
  GHashTable *instances;                /* instance name -> declaring entry */
  GChecksum *checksum;                  /* over every file read */
  GPtrArray *files;                     /* every file read, by its path */
  int template_depth;
} Builder;

static void
def_free (Def *def)
{
  weft_cfg_unref (def->cfg);
  weft_cfg_unref (def->key);
  g_free (def);
}

static void
registry_init (Registry *r, const char *what)
{
  r->defs = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                   (GDestroyNotify) def_free);
  r->order = g_ptr_array_new ();
  r->what = what;
}

static void
registry_clear (Registry *r)
{
  g_ptr_array_unref (r->order);
  g_hash_table_unref (r->defs);
}

/* Names of @r as a NULL-terminated array (borrowed strings). */
static GPtrArray *
registry_names (const Registry *r)
{
  GPtrArray *names = g_ptr_array_new ();

  for (guint i = 0; i < r->order->len; i++)
    g_ptr_array_add (names, g_ptr_array_index (r->order, i));
  g_ptr_array_add (names, NULL);
  return names;
}

static const Def *
registry_lookup (const Registry *r, const WeftCfg *name, GError **error)
{
  const Def *def = g_hash_table_lookup (r->defs, name->text);

  if (def == NULL)
    {
      g_autoptr (GPtrArray) names = registry_names (r);
      const char *guess = weft_closest (name->text,
                                        (const char *const *) names->pdata);
      if (guess)
        weft_cfg_error (error, name, "unknown %s '%s'; did you mean '%s'?",
                        r->what, name->text, guess);
      else
        weft_cfg_error (error, name, "unknown %s '%s'", r->what, name->text);
    }
  return def;
}

/* Add the definitions of the map @section to @r.  Redefining a name is an
 * error unless the new definition says `override: true`. */
static gboolean
registry_add (Registry *r, const WeftCfg *section, GError **error)
{
  if (!weft_cfg_expect_map (section, r->what, error))
    return FALSE;
  for (size_t i = 0; i < section->n; i++)
    {
      WeftCfg *key = section->keys[i], *cfg = section->items[i];
      WeftCfg *override_cfg = weft_cfg_get (cfg, "override");
      gboolean override = FALSE;
      const Def *old = g_hash_table_lookup (r->defs, key->text);

      if (!weft_cfg_expect_map (cfg, r->what, error))
        return FALSE;
      if (override_cfg && !weft_cfg_bool (override_cfg, &override, error))
        return FALSE;
      if (old && !override)
        {
          g_autofree char *where = weft_cfg_where (old->key);
          return weft_cfg_error (error, key,
                                 "%s '%s' is already defined at %s; write "
                                 "'override: true' in this definition to "
                                 "replace it",
                                 r->what, key->text, where);
        }
      if (!old && override)
        return weft_cfg_error (error, override_cfg,
                               "%s '%s' overrides nothing: no earlier "
                               "definition",
                               r->what, key->text);

      Def *def = g_new (Def, 1);
      def->cfg = weft_cfg_ref (cfg);
      def->key = weft_cfg_ref (key);
      if (old)
        {
          /* insert() keeps the table's key string, which order points to. */
          g_hash_table_insert (r->defs, g_strdup (key->text), def);
          continue;
        }
      char *owned = g_strdup (key->text);
      g_hash_table_insert (r->defs, owned, def);
      g_ptr_array_add (r->order, owned);
    }
  return TRUE;
}

static gboolean
append_entries (GPtrArray *to, const WeftCfg *seq, const char *what,
                GError **error)
{
  if (!weft_cfg_expect_seq (seq, what, error))
    return FALSE;
  for (size_t i = 0; i < seq->n; i++)
    g_ptr_array_add (to, weft_cfg_ref (seq->items[i]));
  return TRUE;
}

static const char *const file_keys[] = {
  "weft", "include", "description", "link_types", "devices", "templates",
  "nodes", "links", "fabrics", "faults", "workload", "sweep", NULL
};

static gboolean read_file (Builder *b, const char *path, const WeftCfg *from,
                           GError **error);

static gboolean
read_includes (Builder *b, const char *path, const WeftCfg *include,
               GError **error)
{
  g_autofree char *dir = g_path_get_dirname (path);
  const WeftCfg *const *items = (const WeftCfg *const *) &include;
  size_t n = 1;

  if (include->kind == WEFT_CFG_SEQ)
    {
      items = (const WeftCfg *const *) include->items;
      n = include->n;
    }
  for (size_t i = 0; i < n; i++)
    {
      if (!weft_cfg_expect_scalar (items[i], "an included file name", error))
        return FALSE;
      g_autofree char *target = g_path_is_absolute (items[i]->text)
                                    ? g_strdup (items[i]->text)
                                    : g_build_filename (dir, items[i]->text,
                                                        NULL);
      /* A name not found beside the file is looked for among weft's own
       * scenarios, so that a scenario written anywhere can include
       * presets/servers.yaml. */
      if (!g_path_is_absolute (items[i]->text)
          && !g_file_test (target, G_FILE_TEST_EXISTS))
        {
          g_autofree char *bundled = g_build_filename (
              weft_data_dir (), "scenarios", items[i]->text, NULL);
          if (g_file_test (bundled, G_FILE_TEST_EXISTS))
            {
              g_free (target);
              target = g_steal_pointer (&bundled);
            }
        }
      if (!read_file (b, target, items[i], error))
        return FALSE;
    }
  return TRUE;
}

/* Read @path (included from @from, NULL for the scenario itself) and its
 * includes, includes first, so that the file's own definitions come last. */
static gboolean
read_file (Builder *b, const char *path, const WeftCfg *from, GError **error)
{
  g_autofree char *canonical = g_canonicalize_filename (path, NULL);
  GError *cause = NULL;

  for (guint i = 0; i < b->stack->len; i++)
    if (strcmp (g_ptr_array_index (b->stack, i), canonical) == 0)
      {
        GString *chain = g_string_new (NULL);
        for (guint j = i; j < b->stack->len; j++)
          g_string_append_printf (chain, "%s -> ",
                                  (char *) g_ptr_array_index (b->stack, j));
        g_string_append (chain, canonical);
        weft_cfg_error (error, from, "include cycle: %s", chain->str);
        g_string_free (chain, TRUE);
        return FALSE;
      }
  if (b->stack->len >= MAX_INCLUDE_DEPTH)
    return weft_cfg_error (error, from, "includes nest more than %d deep",
                           MAX_INCLUDE_DEPTH);
  /* Two includes that share a preset (servers.yaml includes links.yaml,
   * and so does the scenario) define it once: a file is read the first
   * time it is reached. */
  if (g_hash_table_contains (b->read, canonical))
    return TRUE;
  g_hash_table_add (b->read, g_strdup (canonical));

  WeftCfg *root = weft_cfg_load_file (path, &cause);
  if (root == NULL)
    {
      if (from != NULL && cause->code == WEFT_CONFIG_ERROR_IO)
        return weft_cfg_error_at (error, from, cause);
      g_propagate_error (error, cause);
      return FALSE;
    }
  g_ptr_array_add (b->roots, root);
  g_ptr_array_add (b->files, g_strdup (path));
  {
    g_autofree char *bytes = NULL;
    gsize len;
    if (g_file_get_contents (path, &bytes, &len, NULL))
      g_checksum_update (b->checksum, (const guchar *) bytes, (gssize) len);
  }
  if (!weft_cfg_expect_map (root, "a scenario file", error)
      || !weft_cfg_check_keys (root, file_keys, error))
    return FALSE;

  WeftCfg *version = weft_cfg_get (root, "weft");
  if (version == NULL)
    return weft_cfg_error (error, root, "missing key 'weft', the format "
                           "version: write 'weft: %d' first",
                           WEFT_SCENARIO_VERSION);
  if (!weft_cfg_expect_scalar (version, "weft (the format version)", error))
    return FALSE;
  if (strcmp (version->text, G_STRINGIFY (WEFT_SCENARIO_VERSION)) != 0)
    return weft_cfg_error (error, version, "format version '%s' is not one "
                           "this weft reads; it reads version %d",
                           version->text, WEFT_SCENARIO_VERSION);

  g_ptr_array_add (b->stack, g_steal_pointer (&canonical));
  WeftCfg *include = weft_cfg_get (root, "include");
  gboolean ok = include == NULL || read_includes (b, path, include, error);
  g_free (g_ptr_array_steal_index (b->stack, b->stack->len - 1));
  if (!ok)
    return FALSE;

  WeftCfg *section;
  if ((section = weft_cfg_get (root, "link_types"))
      && !registry_add (&b->link_types, section, error))
    return FALSE;
  if ((section = weft_cfg_get (root, "devices"))
      && !registry_add (&b->devices, section, error))
    return FALSE;
  if ((section = weft_cfg_get (root, "templates"))
      && !registry_add (&b->templates, section, error))
    return FALSE;
  if ((section = weft_cfg_get (root, "nodes"))
      && !append_entries (b->nodes, section, "nodes", error))
    return FALSE;
  if ((section = weft_cfg_get (root, "links"))
      && !append_entries (b->links, section, "links", error))
    return FALSE;
  if ((section = weft_cfg_get (root, "fabrics"))
      && !append_entries (b->fabrics, section, "fabrics", error))
    return FALSE;
  if ((section = weft_cfg_get (root, "faults"))
      && !append_entries (b->faults, section, "faults", error))
    return FALSE;
  return TRUE;
}

/* ---- building ---- */

static gboolean
build_hardware (Builder *b, GError **error)
{
  for (guint i = 0; i < b->link_types.order->len; i++)
    {
      const char *name = g_ptr_array_index (b->link_types.order, i);
      const Def *def = g_hash_table_lookup (b->link_types.defs, name);
      WeftLinkType *t = weft_link_type_from_cfg (name, def->cfg, error);
      if (t == NULL)
        return FALSE;
      weft_topology_add_link_type (b->topo, t);
    }
  for (guint i = 0; i < b->devices.order->len; i++)
    {
      const char *name = g_ptr_array_index (b->devices.order, i);
      const Def *def = g_hash_table_lookup (b->devices.defs, name);
      WeftDevice *d = weft_device_from_cfg (name, def->cfg, error);
      if (d == NULL)
        return FALSE;
      weft_topology_add_device (b->topo, d);
    }
  return TRUE;
}

static void
set_decl (Builder *b, uint32_t from, const WeftCfg *entry)
{
  for (uint32_t id = from; id < b->topo->n_nodes; id++)
    g_ptr_array_add (b->decl, (gpointer) entry);
}

static gboolean add_node_entries (Builder *b, const GPtrArray *entries,
                                  const char *prefix, uint32_t zone,
                                  GError **error);
static gboolean add_link_entries (Builder *b, const GPtrArray *entries,
                                  const char *prefix, GError **error);

static GPtrArray *
section_entries (const WeftCfg *tmpl, const char *key, GError **error)
{
  WeftCfg *seq = weft_cfg_get (tmpl, key);
  GPtrArray *entries = g_ptr_array_new_with_free_func (
      (GDestroyNotify) weft_cfg_unref);

  if (seq != NULL && !append_entries (entries, seq, key, error))
    g_clear_pointer (&entries, g_ptr_array_unref);
  return entries;
}

static const char *const template_keys[] = { "nodes", "links", "description",
                                             "source", "override", NULL };

static gboolean
instantiate (Builder *b, const WeftCfg *name, const char *prefix,
             uint32_t zone, GError **error)
{
  const Def *def = registry_lookup (&b->templates, name, error);

  if (def == NULL || !weft_cfg_check_keys (def->cfg, template_keys, error))
    return FALSE;
  if (b->template_depth >= MAX_TEMPLATE_DEPTH)
    return weft_cfg_error (error, name, "templates nest more than %d deep; "
                           "does '%s' contain itself?",
                           MAX_TEMPLATE_DEPTH, name->text);

  g_autoptr (GPtrArray) nodes = section_entries (def->cfg, "nodes", error);
  if (nodes == NULL)
    return FALSE;
  g_autoptr (GPtrArray) links = section_entries (def->cfg, "links", error);
  if (links == NULL)
    return FALSE;
  b->template_depth++;
  gboolean ok = add_node_entries (b, nodes, prefix, zone, error)
                && add_link_entries (b, links, prefix, error);
  b->template_depth--;
  return ok;
}

static uint32_t
zone_template (Builder *b, const char *name)
{
  guint index = GPOINTER_TO_UINT (g_hash_table_lookup (b->zone_templates,
                                                       name));
  if (index == 0)
    {
      WeftZoneTemplate *zt = g_new0 (WeftZoneTemplate, 1);
      zt->name = g_strdup (name);
      g_ptr_array_add (b->topo->zone_templates, zt);
      index = b->topo->zone_templates->len;
      g_hash_table_insert (b->zone_templates, zt->name,
                           GUINT_TO_POINTER (index));
    }
  return index - 1;
}

static const char *const node_keys[] = { "name", "device", "template",
                                          "description", NULL };

static gboolean
add_node_entries (Builder *b, const GPtrArray *entries, const char *prefix,
                  uint32_t zone, GError **error)
{
  for (guint e = 0; e < entries->len; e++)
    {
      const WeftCfg *entry = g_ptr_array_index (entries, e);
      WeftCfg *name, *device_cfg, *template_cfg;
      const WeftDevice *device = NULL;
      GError *cause = NULL;

      if (!weft_cfg_expect_map (entry, "a node", error)
          || !weft_cfg_check_keys (entry, node_keys, error)
          || !(name = weft_cfg_require (entry, "name", error))
          || !weft_cfg_expect_scalar (name, "name", error))
        return FALSE;
      device_cfg = weft_cfg_get (entry, "device");
      template_cfg = weft_cfg_get (entry, "template");
      if ((device_cfg == NULL) == (template_cfg == NULL))
        return weft_cfg_error (error, entry, "a node needs exactly one of "
                               "'device' or 'template'");
      if (strpbrk (name->text, ":/") != NULL)
        return weft_cfg_error (error, name, "a node name cannot hold ':' or "
                               "'/' (they separate ports and templates)");

      if (device_cfg != NULL)
        {
          if (!weft_cfg_expect_scalar (device_cfg, "device", error))
            return FALSE;
          device = weft_topology_device (b->topo, device_cfg->text);
          if (device == NULL)
            {
              registry_lookup (&b->devices, device_cfg, error);
              return FALSE;
            }
        }
      else if (!weft_cfg_expect_scalar (template_cfg, "template", error))
        return FALSE;

      g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
      if (!weft_names_expand (name->text, names, &cause))
        return weft_cfg_error_at (error, name, cause);
      uint32_t per_instance = 1;
      for (guint i = 0; i < names->len; i++)
        {
          const char *local = g_ptr_array_index (names, i);
          char *full = prefix ? g_strdup_printf ("%s/%s", prefix, local)
                              : g_strdup (local);
          uint32_t existing = weft_topology_find_node (b->topo, full);
          if (existing != WEFT_NONE)
            {
              g_autofree char *where = weft_cfg_where (
                  g_ptr_array_index (b->decl, existing));
              weft_cfg_error (error, name, "duplicate node name '%s' (first "
                              "declared at %s)", full, where);
              g_free (full);
              return FALSE;
            }
          const WeftCfg *twin = g_hash_table_lookup (b->instances, full);
          if (twin != NULL)
            {
              g_autofree char *where = weft_cfg_where (twin);
              weft_cfg_error (error, name, "duplicate name '%s' (first "
                              "declared at %s)", full, where);
              g_free (full);
              return FALSE;
            }
          /* Templates multiply: the cap on one pattern's names does not
           * bound the nodes of instances of instances.  Every instance of
           * a template has as many nodes as the first, so the total is
           * known once the first is made. */
          uint64_t coming = (uint64_t) per_instance * (names->len - i);
          if (b->topo->n_nodes + coming > WEFT_NAMES_MAX)
            {
              weft_cfg_error (error, name, "the scenario declares more than "
                              "%d nodes (%u instances of %u nodes here)",
                              WEFT_NAMES_MAX, names->len, per_instance);
              g_free (full);
              return FALSE;
            }
          uint32_t first = b->topo->n_nodes;
          if (device != NULL)
            {
              weft_topology_add_node (b->topo, full, device, zone);
              set_decl (b, first, name);
              continue;
            }
          g_hash_table_insert (b->instances, g_strdup (full), (gpointer) name);
          gboolean top = zone == WEFT_ZONE_ROOT;
          uint32_t z = top ? weft_topology_begin_zone (
                                 b->topo,
                                 zone_template (b, template_cfg->text))
                           : zone;
          gboolean ok = instantiate (b, template_cfg, full, z, error);
          if (i == 0)
            per_instance = b->topo->n_nodes - first;
          if (top)
            weft_topology_end_zone (b->topo, z);
          /* A template's nodes are declared where its instance is. */
          while (b->decl->len < b->topo->n_nodes)
            g_ptr_array_add (b->decl, name);
          g_free (full);
          if (!ok)
            return FALSE;
        }
    }
  return TRUE;
}

static const char *const link_keys[] = { "a", "b", "type", "lanes",
                                          "description", "source", NULL };

static gboolean
add_link_entries (Builder *b, const GPtrArray *entries, const char *prefix,
                  GError **error)
{
  for (guint e = 0; e < entries->len; e++)
    {
      const WeftCfg *entry = g_ptr_array_index (entries, e);
      WeftCfg *a, *bb, *type_cfg, *lanes_cfg;
      uint64_t lanes = 1;
      uint32_t type;

      if (!weft_cfg_expect_map (entry, "a link", error)
          || !weft_cfg_check_keys (entry, link_keys, error)
          || !(a = weft_cfg_require (entry, "a", error))
          || !(bb = weft_cfg_require (entry, "b", error))
          || !(type_cfg = weft_cfg_require (entry, "type", error))
          || !weft_cfg_expect_scalar (type_cfg, "type", error))
        return FALSE;
      if ((lanes_cfg = weft_cfg_get (entry, "lanes"))
          && !weft_cfg_uint (lanes_cfg, 1, 1024, &lanes, error))
        return FALSE;
      if (weft_topology_link_type (b->topo, type_cfg->text, &type) == NULL)
        {
          registry_lookup (&b->link_types, type_cfg, error);
          return FALSE;
        }

      g_autoptr (GArray) ids_a = g_array_new (FALSE, FALSE, sizeof (uint32_t));
      g_autoptr (GArray) ids_b = g_array_new (FALSE, FALSE, sizeof (uint32_t));
      g_autoptr (GPtrArray) ports_a = g_ptr_array_new_with_free_func (g_free);
      g_autoptr (GPtrArray) ports_b = g_ptr_array_new_with_free_func (g_free);
      if (!weft_fabric_resolve (b->topo, a, prefix, ids_a, ports_a, error)
          || !weft_fabric_resolve (b->topo, bb, prefix, ids_b, ports_b, error))
        return FALSE;

      guint n = MAX (ids_a->len, ids_b->len);
      if (ids_a->len != ids_b->len && ids_a->len != 1 && ids_b->len != 1)
        return weft_cfg_error (error, entry, "'a' names %u nodes and 'b' %u; "
                               "they must name as many, or one of them one",
                               ids_a->len, ids_b->len);
      for (guint i = 0; i < n; i++)
        {
          guint ia = ids_a->len == 1 ? 0 : i, ib = ids_b->len == 1 ? 0 : i;
          GError *cause = NULL;
          if (!weft_topology_add_link (
                  b->topo, g_array_index (ids_a, uint32_t, ia),
                  g_array_index (ids_b, uint32_t, ib), type, (uint32_t) lanes,
                  g_ptr_array_index (ports_a, ia),
                  g_ptr_array_index (ports_b, ib), NULL, &cause))
            return weft_cfg_error_at (error, entry, cause);
        }
    }
  return TRUE;
}

/* Where to say that GPU @n is cut off: at the last fault if there are
 * any (what most likely cut it off), else where the GPU was declared. */
static const WeftCfg *
blame (const Builder *b, uint32_t n)
{
  return b->faults->len ? g_ptr_array_index (b->faults, b->faults->len - 1)
                        : g_ptr_array_index (b->decl, n);
}

/* Every GPU must reach every other GPU, when there are two or more. */
static gboolean
check_gpus_connected (Builder *b, GError **error)
{
  WeftTopology *topo = b->topo;
  g_autofree uint32_t *parent = g_new (uint32_t, MAX (topo->n_nodes, 1));
  g_autofree uint32_t *gpus = g_new0 (uint32_t, MAX (topo->n_nodes, 1));
  uint32_t total = 0, first, other;

  if (weft_topology_gpus_joined (topo, parent, &first, &other))
    return TRUE;
  for (uint32_t n = 0; n < topo->n_nodes; n++)
    if (topo->nodes[n].kind == WEFT_NODE_GPU)
      {
        gpus[weft_find_root (parent, n)]++;
        total++;
      }
  if (total < 2)
    return TRUE;
  for (uint32_t n = 0; n < topo->n_nodes; n++)
    if (topo->nodes[n].kind == WEFT_NODE_GPU
        && gpus[weft_find_root (parent, n)] == 1)
      return weft_cfg_error (error, blame (b, n),
                             "GPU '%s' cannot reach any other GPU: no path of "
                             "links%s joins it to the rest",
                             topo->nodes[n].name, topo->faults->len
                                 ? " that are up" : "");
  /* Every collective may pair any two GPUs: they must all be joined, not
   * only in islands of their own (two servers with no fabric between). */
  return weft_cfg_error (error, blame (b, other),
                         "GPUs '%s' and '%s' have no path of links "
                         "%sbetween them: %s",
                         topo->nodes[first].name, topo->nodes[other].name,
                         topo->faults->len ? "that are up " : "",
                         topo->faults->len ? "the faults cut the fabric in two"
                                           : "join their servers by a fabric");
}

static gboolean
build (Builder *b, GError **error)
{
  if (!build_hardware (b, error))
    return FALSE;
  if (!add_node_entries (b, b->nodes, NULL, WEFT_ZONE_ROOT, error))
    return FALSE;
  for (guint i = 0; i < b->fabrics->len; i++)
    {
      const WeftCfg *entry = g_ptr_array_index (b->fabrics, i);
      if (!weft_fabric_build (b->topo, entry, error))
        return FALSE;
      set_decl (b, b->decl->len, entry);
    }
  if (!add_link_entries (b, b->links, NULL, error)
      || !weft_faults_apply (b->topo, b->faults, error))
    return FALSE;
  if (b->topo->n_nodes == 0)
    {
      const WeftCfg *root = g_ptr_array_index (b->roots, 0);
      return weft_cfg_error (error, root, "the scenario declares no nodes");
    }
  return check_gpus_connected (b, error);
}


/* Find the value at the dotted @key in @root, or NULL. */
static WeftCfg *
find_path (WeftCfg *root, const char *key)
{
  g_auto (GStrv) parts = g_strsplit (key, ".", -1);
  WeftCfg *at = root;

  for (int i = 0; parts[i] && at; i++)
    {
      if (at->kind == WEFT_CFG_MAP)
        at = weft_cfg_get (at, parts[i]);
      else if (at->kind == WEFT_CFG_SEQ)
        {
          guint64 index;
          if (!g_ascii_string_to_unsigned (parts[i], 10, 0, at->n ? at->n - 1 : 0,
                                           &index, NULL) || at->n == 0)
            return NULL;
          at = at->items[index];
        }
      else
        return NULL;
    }
  return at;
}

/* A link type's bandwidth changed by --set @key (link_types.NAME.bandwidth,
 * now @target's text) to @value: NCCL's model of the type, nccl_bandwidth,
 * keeps its share of the wire's rate, unless a --set gave it already (a
 * later one replaces it anyway).  So a faster link is faster in the runs
 * that move data at NCCL's rate too. */
static void
scale_nccl_bandwidth (Builder *b, const char *key, const WeftCfg *target,
                      const char *value, const char *origin)
{
  g_auto (GStrv) parts = g_strsplit (key, ".", -1);
  double before, after, nccl;

  if (g_strv_length (parts) != 3 || strcmp (parts[0], "link_types") != 0
      || strcmp (parts[2], "bandwidth") != 0
      || !weft_parse_rate (target->text, &before, NULL)
      || !weft_parse_rate (value, &after, NULL) || before <= 0)
    return;
  g_autofree char *sibling = g_strdup_printf ("link_types.%s.nccl_bandwidth",
                                              parts[1]);
  WeftCfg *n = find_path (g_ptr_array_index (b->roots, 0), sibling);
  for (guint r = b->roots->len; !n && r-- > 1;)
    n = find_path (g_ptr_array_index (b->roots, r), sibling);
  if (n == NULL || n->kind != WEFT_CFG_SCALAR
      || g_str_has_prefix (n->file, "--set ")
      || !weft_parse_rate (n->text, &nccl, NULL))
    return;
  g_free (n->text);
  n->text = g_strdup_printf ("%.17gB/s", nccl * (after / before));
  n->plain = TRUE;
  n->file = g_intern_string (origin);
  n->line = n->col = 1;
}

static gboolean
apply_sets (Builder *b, const char *const *sets, GError **error)
{
  for (int i = 0; sets && sets[i]; i++)
    {
      const char *eq = strchr (sets[i], '=');
      if (eq == NULL || eq == sets[i])
        {
          g_set_error (error, WEFT_CONFIG_ERROR, WEFT_CONFIG_ERROR_INVALID,
                       "--set %s: write KEY=VALUE, such as fabrics.0.levels=3",
                       sets[i]);
          return FALSE;
        }
      g_autofree char *key = g_strndup (sets[i], eq - sets[i]);
      WeftCfg *target = NULL;
      /* The scenario file first, then its includes, latest read first. */
      target = find_path (g_ptr_array_index (b->roots, 0), key);
      for (guint r = b->roots->len; !target && r-- > 1;)
        target = find_path (g_ptr_array_index (b->roots, r), key);
      g_autofree char *origin = g_strdup_printf ("--set %s", sets[i]);
      if (target == NULL)
        {
          /* A key that is not there yet may be added to a map that is:
           * the map's own checks then judge it like any other key. */
          const char *dot = strrchr (key, '.');
          g_autofree char *parent_key = dot ? g_strndup (key, dot - key) : NULL;
          WeftCfg *parent = NULL;
          for (guint r = 0; parent_key && !parent && r < b->roots->len; r++)
            parent = find_path (g_ptr_array_index (b->roots, r), parent_key);
          if (parent == NULL || parent->kind != WEFT_CFG_MAP)
            {
              g_set_error (error, WEFT_CONFIG_ERROR, WEFT_CONFIG_ERROR_INVALID,
                           "--set %s: the scenario has no key '%s'", sets[i],
                           key);
              return FALSE;
            }
          WeftCfg *k = g_new0 (WeftCfg, 1), *v = g_new0 (WeftCfg, 1);
          *k = (WeftCfg) { .kind = WEFT_CFG_SCALAR, .refs = 1, .plain = TRUE,
                           .text = g_strdup (dot + 1), .line = 1, .col = 1,
                           .file = g_intern_string (origin) };
          *v = (WeftCfg) { .kind = WEFT_CFG_SCALAR, .refs = 1, .plain = TRUE,
                           .text = g_strdup (eq + 1), .line = 1, .col = 1,
                           .file = g_intern_string (origin) };
          parent->keys = g_renew (WeftCfg *, parent->keys, parent->n + 1);
          parent->items = g_renew (WeftCfg *, parent->items, parent->n + 1);
          parent->keys[parent->n] = k;
          parent->items[parent->n++] = v;
          continue;
        }
      if (target->kind != WEFT_CFG_SCALAR)
        {
          g_autofree char *where = weft_cfg_where (target);
          g_set_error (error, WEFT_CONFIG_ERROR, WEFT_CONFIG_ERROR_INVALID,
                       "--set %s: '%s' (%s) is not a single value", sets[i],
                       key, where);
          return FALSE;
        }
      scale_nccl_bandwidth (b, key, target, eq + 1, origin);
      g_free (target->text);
      target->text = g_strdup (eq + 1);
      target->plain = TRUE;
      target->file = g_intern_string (origin);
      target->line = target->col = 1;
    }
  return TRUE;
}

WeftScenario *
weft_scenario_load (const char *path, GError **error)
{
  return weft_scenario_load_with (path, NULL, NULL, error);
}

/* Each of @faults (--fault's arguments) after the scenario's own; "none"
 * adds none (a sweep's point without a fault). */
static gboolean
add_fault_args (Builder *b, const char *const *faults, GError **error)
{
  for (int i = 0; faults && faults[i]; i++)
    {
      if (strcmp (faults[i], "none") == 0)
        continue;
      WeftCfg *entry = weft_fault_from_arg (faults[i], error);
      if (entry == NULL)
        return FALSE;
      g_ptr_array_add (b->faults, entry);
    }
  return TRUE;
}

WeftScenario *
weft_scenario_load_with (const char *path, const char *const *sets,
                         const char *const *faults, GError **error)
{
  Builder b = { 0 };
  WeftScenario *scenario = NULL;

  b.topo = weft_topology_new ();
  registry_init (&b.link_types, "link type");
  registry_init (&b.devices, "device");
  registry_init (&b.templates, "template");
  b.nodes = g_ptr_array_new_with_free_func ((GDestroyNotify) weft_cfg_unref);
  b.links = g_ptr_array_new_with_free_func ((GDestroyNotify) weft_cfg_unref);
  b.fabrics = g_ptr_array_new_with_free_func ((GDestroyNotify) weft_cfg_unref);
  b.faults = g_ptr_array_new_with_free_func ((GDestroyNotify) weft_cfg_unref);
  b.roots = g_ptr_array_new_with_free_func ((GDestroyNotify) weft_cfg_unref);
  b.stack = g_ptr_array_new_with_free_func (g_free);
  b.read = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  b.decl = g_ptr_array_new ();
  b.zone_templates = g_hash_table_new (g_str_hash, g_str_equal);
  b.instances = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  b.checksum = g_checksum_new (G_CHECKSUM_SHA256);
  b.files = g_ptr_array_new_with_free_func (g_free);

  if (read_file (&b, path, NULL, error) && apply_sets (&b, sets, error)
      && add_fault_args (&b, faults, error) && build (&b, error))
    {
      weft_topology_finish (b.topo);
      weft_faults_phases (b.topo);
      scenario = g_new0 (WeftScenario, 1);
      scenario->path = g_strdup (path);
      scenario->topo = g_steal_pointer (&b.topo);
      scenario->root = weft_cfg_ref (g_ptr_array_index (b.roots, 0));
      scenario->sha256 = g_strdup (g_checksum_get_string (b.checksum));
      g_ptr_array_add (b.files, NULL);
      scenario->files = (char **) g_ptr_array_free (g_steal_pointer (&b.files),
                                                    FALSE);
    }

  weft_topology_free (b.topo);
  registry_clear (&b.link_types);
  registry_clear (&b.devices);
  registry_clear (&b.templates);
  g_ptr_array_unref (b.nodes);
  g_ptr_array_unref (b.links);
  g_ptr_array_unref (b.fabrics);
  g_ptr_array_unref (b.faults);
  g_ptr_array_unref (b.stack);
  g_hash_table_unref (b.read);
  g_ptr_array_unref (b.decl);
  g_hash_table_unref (b.zone_templates);
  g_hash_table_unref (b.instances);
  g_checksum_free (b.checksum);
  if (b.files)
    g_ptr_array_unref (b.files);
  g_ptr_array_unref (b.roots);
  return scenario;
}

void
weft_scenario_free (WeftScenario *scenario)
{
  if (scenario == NULL)
    return;
  g_free (scenario->path);
  g_free (scenario->sha256);
  g_strfreev (scenario->files);
  weft_topology_free (scenario->topo);
  weft_cfg_unref (scenario->root);
  g_free (scenario);
}
