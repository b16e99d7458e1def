/* weft: faults; see faults.h. */
#include "topology/faults.h"
#include "topology/fabric.h"

#include <math.h>
#include <string.h>

void
weft_fault_free (WeftFault *fault)
{
  if (fault == NULL)
    return;
  g_free (fault->what);
  g_free (fault);
}

static const char *const fault_keys[] = { "node", "a", "b", "speed", "compute",
                                           NULL };

/* @cfg's share (of the bandwidth, or of the compute speed): "50%" or
 * 0.5, from 0 to 1. */
static gboolean
read_share (const WeftCfg *cfg, const char *key, double *share,
            GError **error)
{
  if (!weft_cfg_expect_scalar (cfg, "a share such as 50% or 0.5", error))
    return FALSE;
  g_autofree char *text = g_strstrip (g_strdup (cfg->text));
  size_t len = strlen (text);
  gboolean percent = len > 0 && text[len - 1] == '%';
  if (percent)
    text[len - 1] = '\0';
  char *end;
  double v = g_ascii_strtod (text, &end);
  if (*text == '\0' || *end != '\0' || !isfinite (v))
    return weft_cfg_error (error, cfg, "%s '%s' is not a share: write "
                           "50%% or 0.5", key, cfg->text);
  if (percent)
    v /= 100;
  if (v < 0 || v > 1)
    return weft_cfg_error (error, cfg, "%s '%s' is outside 0%% to 100%%",
                           key, cfg->text);
  *share = v;
  return TRUE;
}

/* Mark in @in (per node) the nodes the pattern @cfg names. */
static gboolean
mark_nodes (WeftTopology *topo, const WeftCfg *cfg, gboolean *in,
            GArray *ids, GError **error)
{
  g_array_set_size (ids, 0);
  if (!weft_fabric_resolve (topo, cfg, NULL, ids, NULL, error))
    return FALSE;
  for (guint i = 0; i < ids->len; i++)
    in[g_array_index (ids, uint32_t, i)] = TRUE;
  return TRUE;
}

/* Cut link pair @l (its a->b direction) to @share of its bandwidth: the
 * least share of the faults on it wins. */
static void
cut (WeftTopology *topo, uint32_t l, double share)
{
  for (uint32_t d = l; d <= l + 1; d++)
    {
      WeftLink *link = &topo->links[d];
      if (share >= link->share)
        continue;
      link->bandwidth *= link->share > 0 ? share / link->share : 0;
      link->share = (float) share;
    }
  /* Routes inside a server are shared by its template's instances: one
   * with a fault has its own. */
  uint32_t za = topo->nodes[topo->links[l].src].zone;
  if (za != WEFT_ZONE_ROOT && za == topo->nodes[topo->links[l].dst].zone)
    topo->zones[za].custom = TRUE;
}

/* Slow the GPUs marked in @in to @share of their compute speed: the least
 * share of the faults on one wins.  Returns how many. */
static uint32_t
slow_gpus (WeftTopology *topo, const gboolean *in, double share)
{
  uint32_t count = 0;

  for (uint32_t n = 0; n < topo->n_nodes; n++)
    if (in[n])
      {
        topo->nodes[n].compute = (float) MIN (topo->nodes[n].compute, share);
        count++;
      }
  return count;
}

/* Apply one `faults:` entry. */
static gboolean
apply (WeftTopology *topo, const WeftCfg *entry, gboolean *in_a,
       gboolean *in_b, GArray *ids, GError **error)
{
  const WeftCfg *node, *a = NULL, *b = NULL, *speed, *compute;
  double share = 0, compute_share = 1;

  if (!weft_cfg_expect_map (entry, "a fault", error)
      || !weft_cfg_check_keys (entry, fault_keys, error))
    return FALSE;
  node = weft_cfg_get (entry, "node");
  if (node == NULL
      && (!(a = weft_cfg_require (entry, "a", error))
          || !(b = weft_cfg_require (entry, "b", error))))
    return FALSE;
  if (node != NULL && (weft_cfg_get (entry, "a") || weft_cfg_get (entry, "b")))
    return weft_cfg_error (error, entry, "a fault names a node, or the "
                           "links between a and b, not both");
  if ((speed = weft_cfg_get (entry, "speed"))
      && !read_share (speed, "speed", &share, error))
    return FALSE;
  if ((compute = weft_cfg_get (entry, "compute"))
      && !read_share (compute, "compute", &compute_share, error))
    return FALSE;
  if (compute && node == NULL)
    return weft_cfg_error (error, compute, "compute slows GPUs: name them "
                           "with node, not a and b");
  if (compute && compute_share == 0)
    return weft_cfg_error (error, compute, "compute '%s' stops the GPUs: "
                           "give a share above 0%%", compute->text);
  /* A straggler alone leaves its links as they are. */
  if (compute && speed == NULL)
    share = 1;

  memset (in_a, 0, topo->n_nodes * sizeof (gboolean));
  memset (in_b, 0, topo->n_nodes * sizeof (gboolean));
  if (!mark_nodes (topo, node ? node : a, in_a, ids, error)
      || (b && !mark_nodes (topo, b, in_b, ids, error)))
    return FALSE;
  if (node)
    for (uint32_t n = 0; n < topo->n_nodes; n++)
      {
        if (!in_a[n])
          continue;
        if (topo->nodes[n].kind == WEFT_NODE_GPU && share == 0)
          return weft_cfg_error (error, node, "'%s' is a GPU: a GPU cannot be "
                                 "taken down (run on the others with "
                                 "--ranks), only its links, or slowed "
                                 "(compute)", topo->nodes[n].name);
        if (compute && topo->nodes[n].kind != WEFT_NODE_GPU)
          return weft_cfg_error (error, node, "'%s' is not a GPU: compute "
                                 "slows GPUs", topo->nodes[n].name);
      }

  uint32_t count = 0;
  for (uint32_t l = 0; share < 1 && l < topo->n_links; l += 2)
    {
      uint32_t s = topo->links[l].src, d = topo->links[l].dst;
      gboolean hit = node ? in_a[s] || in_a[d]
                          : (in_a[s] && in_b[d]) || (in_a[d] && in_b[s]);
      if (!hit)
        continue;
      cut (topo, l, share);
      count++;
    }
  if (count == 0 && share < 1)
    return weft_cfg_error (error, entry, node ? "no link joins '%s'"
                                              : "no link joins '%s' to '%s'",
                           (node ? node : a)->text, b ? b->text : "");

  WeftFault *fault = g_new0 (WeftFault, 1);
  fault->what = node ? g_strdup (node->text)
                     : g_strdup_printf ("%s - %s", a->text, b->text);
  fault->share = share;
  fault->compute = compute_share;
  fault->links = count;
  fault->gpus = compute ? slow_gpus (topo, in_a, compute_share) : 0;
  g_ptr_array_add (topo->faults, fault);
  return TRUE;
}

gboolean
weft_faults_apply (WeftTopology *topo, const GPtrArray *entries,
                   GError **error)
{
  g_autofree gboolean *in_a = g_new (gboolean, MAX (topo->n_nodes, 1));
  g_autofree gboolean *in_b = g_new (gboolean, MAX (topo->n_nodes, 1));
  g_autoptr (GArray) ids = g_array_new (FALSE, FALSE, sizeof (uint32_t));

  for (guint i = 0; i < entries->len; i++)
    if (!apply (topo, g_ptr_array_index (entries, i), in_a, in_b, ids, error))
      return FALSE;
  return TRUE;
}

/* A scalar of @arg's word at byte @at, @len long, for positions. */
static WeftCfg *
scalar (const char *origin, const char *arg, size_t at, size_t len)
{
  WeftCfg *cfg = g_new0 (WeftCfg, 1);

  *cfg = (WeftCfg) { .kind = WEFT_CFG_SCALAR, .refs = 1, .plain = TRUE,
                     .text = g_strndup (arg + at, len), .line = 1,
                     .col = (int) at + 1, .file = origin };
  return cfg;
}

/* The map of @n @keys, key i's value the word of @arg at @word[i] (the
 * words start at @at and are @len long), placed where its word is. */
static WeftCfg *
arg_map (const char *origin, const char *arg, const size_t *at,
         const size_t *len, const char *const *keys, const size_t *word,
         size_t n)
{
  WeftCfg *map = g_new0 (WeftCfg, 1);

  *map = (WeftCfg) { .kind = WEFT_CFG_MAP, .refs = 1, .line = 1, .col = 1,
                     .file = origin };
  map->keys = g_new (WeftCfg *, n);
  map->items = g_new (WeftCfg *, n);
  for (size_t i = 0; i < n; i++)
    {
      map->keys[i] = scalar (origin, keys[i], 0, strlen (keys[i]));
      map->keys[i]->col = (int) at[word[i]] + 1;
      map->items[i] = scalar (origin, arg, at[word[i]], len[word[i]]);
    }
  map->n = n;
  return map;
}

WeftCfg *
weft_fault_from_arg (const char *arg, GError **error)
{
  g_autofree char *name = g_strdup_printf ("--fault %s", arg);
  const char *origin = g_intern_string (name);
  size_t at[4], len[4], n = 0;

  for (size_t i = 0; arg[i] != '\0';)
    {
      if (g_ascii_isspace (arg[i]))
        {
          i++;
          continue;
        }
      size_t start = i;
      while (arg[i] != '\0' && !g_ascii_isspace (arg[i]))
        i++;
      if (n == G_N_ELEMENTS (at))
        {
          n++;
          break;
        }
      at[n] = start;
      len[n++] = i - start;
    }
  /* "GPUS compute SHARE": a straggler. */
  static const char *const straggler[] = { "node", "compute" };
  static const size_t gpus_and_share[] = { 0, 2 };
  if (n == 3 && len[1] == strlen ("compute")
      && strncmp (arg + at[1], "compute", len[1]) == 0)
    return arg_map (origin, arg, at, len, straggler, gpus_and_share, 2);
  /* A last word that is a share is the speed. */
  gboolean has_speed = n >= 2
                       && (arg[at[n - 1] + len[n - 1] - 1] == '%'
                           || g_ascii_isdigit (arg[at[n - 1]])
                           || arg[at[n - 1]] == '.');
  size_t names = n - (has_speed ? 1 : 0);
  if (n == 0 || n > 3 || names == 0 || names > 2)
    {
      g_set_error (error, WEFT_CONFIG_ERROR, WEFT_CONFIG_ERROR_INVALID,
                   "%s:1:1: write NODES, or A B for the links between them, "
                   "then a speed such as 50%% for a link that runs slow "
                   "instead of down; or GPUS compute 50%% for a straggler",
                   origin);
      return NULL;
    }

  static const char *const one[] = { "node", "speed" };
  static const char *const two[] = { "a", "b", "speed" };
  static const size_t in_order[] = { 0, 1, 2 };
  return arg_map (origin, arg, at, len, names == 1 ? one : two, in_order, n);
}
