/* weft: a fabric's tiers. */
#include "topology/tiers.h"

#include <stdlib.h>
#include <string.h>

#define UNREACHED UINT32_MAX

/* A tier as a number that sorts the tiers in order: the scale-up chain's
 * level (0 GPU-GPU, 1 GPU-switch, ...), the scale-out chain's from
 * SCALE_OUT (GPU-NIC) on (+1 leaf, +2 spine, ...), and OTHER. */
#define SCALE_OUT 1000
#define OTHER (1 << 30)

/* Levels by breadth-first search from the nodes @level already holds (0),
 * over the links for which @take says yes, into switches only. */
static void
climb (const WeftTopology *topo, uint32_t *level,
       gboolean (*take) (const WeftLinkType *type))
{
  g_autofree uint32_t *queue = g_new (uint32_t, MAX (topo->n_nodes, 1));
  uint32_t head = 0, tail = 0;

  for (uint32_t v = 0; v < topo->n_nodes; v++)
    if (level[v] == 0)
      queue[tail++] = v;
  while (head < tail)
    {
      uint32_t x = queue[head++];
      for (uint32_t i = topo->out_start[x]; i < topo->out_start[x + 1]; i++)
        {
          const WeftLink *l = &topo->links[topo->out_links[i]];
          const WeftLinkType *t = g_ptr_array_index (topo->link_types,
                                                     l->type);
          if (!take (t) || level[l->dst] != UNREACHED
              || topo->nodes[l->dst].kind != WEFT_NODE_SWITCH)
            continue;
          level[l->dst] = level[x] + 1;
          queue[tail++] = l->dst;
        }
    }
}

static gboolean
scale_up_link (const WeftLinkType *type)
{
  return type->family != WEFT_FAMILY_NETWORK
         && type->family != WEFT_FAMILY_PCIE;
}

static gboolean
network_link (const WeftLinkType *type)
{
  return type->family == WEFT_FAMILY_NETWORK;
}

/* The tier key of directed link @l, and whether it climbs, given the
 * nodes' levels in the two chains. */
static int
key_of (const WeftTopology *topo, const WeftLink *l, const uint32_t *up,
        const uint32_t *net, guint8 *climbs)
{
  const WeftLinkType *t = g_ptr_array_index (topo->link_types, l->type);
  uint32_t a = l->src, b = l->dst;

  *climbs = 0;
  if (t->family == WEFT_FAMILY_NETWORK)
    {
      if (net[a] == UNREACHED || net[b] == UNREACHED)
        return OTHER;
      *climbs = net[b] > net[a];
      return SCALE_OUT + (int) MAX (MAX (net[a], net[b]), 1);
    }
  if (topo->nodes[a].kind == WEFT_NODE_NIC
      || topo->nodes[b].kind == WEFT_NODE_NIC)
    {
      *climbs = topo->nodes[b].kind == WEFT_NODE_NIC;
      return SCALE_OUT;
    }
  if (scale_up_link (t) && up[a] != UNREACHED && up[b] != UNREACHED)
    {
      *climbs = up[b] > up[a];
      return (int) MAX (up[a], up[b]);
    }
  return OTHER;
}

/* The name of the tier of @key. */
static char *
key_name (int key)
{
  static const char *const network[] = { "GPU-NIC", "leaf", "spine", "core" };

  if (key == OTHER)
    return g_strdup ("other");
  if (key >= SCALE_OUT)
    return key - SCALE_OUT < 4 ? g_strdup (network[key - SCALE_OUT])
                               : g_strdup_printf ("level %d",
                                                  key - SCALE_OUT);
  if (key <= 1)
    return g_strdup (key == 0 ? "GPU-GPU" : "GPU-switch");
  return g_strdup_printf ("switch level %d", key);
}

int
weft_tier_order (const char *name)
{
  for (int k = 0; k < 4; k++)
    {
      g_autofree char *known = key_name (SCALE_OUT + k);
      if (strcmp (name, known) == 0)
        return SCALE_OUT + k;
    }
  if (strcmp (name, "GPU-GPU") == 0)
    return 0;
  if (strcmp (name, "GPU-switch") == 0)
    return 1;
  if (strcmp (name, "other") == 0)
    return OTHER;
  if (g_str_has_prefix (name, "switch level "))
    return CLAMP (atoi (name + 13), 2, SCALE_OUT - 1);
  if (g_str_has_prefix (name, "level "))
    return SCALE_OUT + CLAMP (atoi (name + 6), 4, OTHER - SCALE_OUT - 2);
  return OTHER - 1;
}

static int
compare_keys (gconstpointer a, gconstpointer b)
{
  int x = *(const int *) a, y = *(const int *) b;
  return (x > y) - (x < y);
}

WeftTiers *
weft_tiers_new (const WeftTopology *topo)
{
  WeftTiers *tiers = g_new0 (WeftTiers, 1);
  g_autofree uint32_t *up = g_new (uint32_t, MAX (topo->n_nodes, 1));
  g_autofree uint32_t *net = g_new (uint32_t, MAX (topo->n_nodes, 1));
  g_autofree int *key = g_new (int, MAX (topo->n_links, 1));

  /* The scale-up chain starts at the GPUs, the network at the nodes that
   * are not switches and have a network port in use. */
  for (uint32_t v = 0; v < topo->n_nodes; v++)
    {
      up[v] = topo->nodes[v].kind == WEFT_NODE_GPU ? 0 : UNREACHED;
      net[v] = UNREACHED;
    }
  for (uint32_t l = 0; l < topo->n_links; l++)
    {
      const WeftLink *link = &topo->links[l];
      const WeftLinkType *t = g_ptr_array_index (topo->link_types,
                                                 link->type);
      if (network_link (t)
          && topo->nodes[link->src].kind != WEFT_NODE_SWITCH)
        net[link->src] = 0;
    }
  climb (topo, up, scale_up_link);
  climb (topo, net, network_link);

  tiers->of_link = g_new (uint32_t, MAX (topo->n_links, 1));
  tiers->up = g_new0 (guint8, MAX (topo->n_links, 1));
  g_autoptr (GArray) keys = g_array_new (FALSE, FALSE, sizeof (int));
  for (uint32_t l = 0; l < topo->n_links; l++)
    {
      key[l] = key_of (topo, &topo->links[l], up, net, &tiers->up[l]);
      gboolean seen = FALSE;
      for (guint k = 0; k < keys->len && !seen; k++)
        seen = g_array_index (keys, int, k) == key[l];
      if (!seen)
        g_array_append_val (keys, key[l]);
    }
  g_array_sort (keys, compare_keys);

  tiers->n_tiers = keys->len;
  tiers->tiers = g_new0 (WeftTier, MAX (keys->len, 1));
  for (guint k = 0; k < keys->len; k++)
    {
      int here = g_array_index (keys, int, k);
      tiers->tiers[k].name = key_name (here);
      tiers->tiers[k].above = -1;
      /* The next level of the same chain; GPU-GPU and other have none. */
      if (k + 1 < keys->len && here != 0 && here != OTHER
          && g_array_index (keys, int, k + 1) == here + 1)
        tiers->tiers[k].above = (int32_t) k + 1;
    }
  for (uint32_t l = 0; l < topo->n_links; l++)
    {
      guint k = 0;
      while (g_array_index (keys, int, k) != key[l])
        k++;
      tiers->of_link[l] = k;
      if (l % 2 == 0)
        {
          tiers->tiers[k].links++;
          tiers->tiers[k].bandwidth += topo->links[l].bandwidth;
        }
    }
  return tiers;
}

void
weft_tiers_free (WeftTiers *tiers)
{
  if (tiers == NULL)
    return;
  for (uint32_t t = 0; t < tiers->n_tiers; t++)
    g_free (tiers->tiers[t].name);
  g_free (tiers->tiers);
  g_free (tiers->of_link);
  g_free (tiers->up);
  g_free (tiers);
}

double
weft_tiers_oversubscription (const WeftTiers *tiers, uint32_t t)
{
  int32_t above = tiers->tiers[t].above;

  if (above < 0 || tiers->tiers[above].bandwidth <= 0)
    return 0;
  return tiers->tiers[t].bandwidth / tiers->tiers[above].bandwidth;
}

/* Whether tier @name is one of the network's ("leaf", "spine", "core",
 * "level N"). */
static gboolean
network_tier (const char *name)
{
  int order = weft_tier_order (name);

  return order > weft_tier_order ("GPU-NIC")
         && order < weft_tier_order ("other");
}

/* Whether @v's values above 0 differ but for rounding (bandwidths are sums
 * of lanes' rates); the least and the most of them into @lo and @hi. */
static gboolean
uneven (const double *v, uint32_t n, double *lo, double *hi)
{
  *lo = G_MAXDOUBLE;
  *hi = 0;
  for (uint32_t i = 0; i < n; i++)
    if (v[i] > 0)
      {
        *lo = MIN (*lo, v[i]);
        *hi = MAX (*hi, v[i]);
      }
  return *hi > *lo * (1 + 1e-9);
}

gboolean
weft_tiers_complete (const WeftTopology *topo, const WeftTiers *tiers,
                     char **why)
{
  g_autofree double *up = g_new (double, MAX (topo->n_nodes, 1));
  g_autofree double *in = g_new (double, MAX (topo->n_nodes, 1));
  char *said = NULL;

  for (uint32_t t = 0; t < tiers->n_tiers && said == NULL; t++)
    {
      const char *name = tiers->tiers[t].name;
      if (!network_tier (name))
        continue;
      memset (up, 0, sizeof (double) * topo->n_nodes);
      memset (in, 0, sizeof (double) * topo->n_nodes);
      for (uint32_t l = 0; l < topo->n_links; l++)
        if (tiers->up[l] && tiers->of_link[l] == t)
          {
            up[topo->links[l].src] += topo->links[l].bandwidth;
            in[topo->links[l].dst] += topo->links[l].bandwidth;
          }
      double lo, hi;
      if (uneven (in, topo->n_nodes, &lo, &hi))
        said = g_strdup_printf ("its %s switches take in %.1f to %.1f GB/s "
                                "from below", name, lo / 1e9, hi / 1e9);
      else if (uneven (up, topo->n_nodes, &lo, &hi))
        said = g_strdup_printf ("what lies below its %s switches sends up "
                                "%.1f to %.1f GB/s", name, lo / 1e9,
                                hi / 1e9);
    }
  if (why != NULL)
    *why = said;
  else
    g_free (said);
  return said == NULL;
}

void
weft_tiers_print (FILE *out, const WeftTiers *tiers)
{
  fprintf (out, "tiers, from the GPUs outward (bandwidth one way; down:up, "
                "a tier's over the next one's):\n");
  for (uint32_t t = 0; t < tiers->n_tiers; t++)
    {
      const WeftTier *tier = &tiers->tiers[t];
      double over = weft_tiers_oversubscription (tiers, t);
      g_autofree char *ratio = over > 0 ? g_strdup_printf ("%.2f:1", over)
                                        : g_strdup ("-");
      fprintf (out, "  %-16s %8u links %12.1f GB/s  down:up %s\n", tier->name,
               tier->links, tier->bandwidth / 1e9, ratio);
    }
}
