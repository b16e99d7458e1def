/* weft: faults; see faults.h. */
#include "topology/faults.h"
#include "topology/fabric.h"
#include "units.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void
weft_fault_free (WeftFault *fault)
{
  if (fault == NULL)
    return;
  g_free (fault->what);
  g_free (fault->link_ids);
  g_free (fault->gpu_ids);
  g_free (fault);
}

static const char *const fault_keys[] = { "node", "a", "b", "speed", "compute",
                                           "from", "until", NULL };

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

/* The GPUs marked in @in, into @fault; for the whole run (@whole) slowed
 * to @share of their compute speed: the least share of the faults on one
 * wins. */
static void
slow_gpus (WeftTopology *topo, const gboolean *in, double share,
           gboolean whole, WeftFault *fault)
{
  GArray *gpus = g_array_new (FALSE, FALSE, sizeof (uint32_t));

  for (uint32_t n = 0; n < topo->n_nodes; n++)
    if (in[n])
      {
        if (whole)
          topo->nodes[n].compute = (float) MIN (topo->nodes[n].compute,
                                                share);
        g_array_append_val (gpus, n);
      }
  fault->gpus = gpus->len;
  fault->gpu_ids = (uint32_t *) (void *) g_array_free (gpus, FALSE);
}

/* A fault's times: `from` and `until` (@from and @until set), which must
 * be in order. */
static gboolean
read_times (const WeftCfg *entry, WeftTime *from, WeftTime *until,
            GError **error)
{
  const WeftCfg *f = weft_cfg_get (entry, "from");
  const WeftCfg *u = weft_cfg_get (entry, "until");

  *from = 0;
  *until = WEFT_FOREVER;
  if (f && !weft_cfg_time (f, from, error))
    return FALSE;
  if (u && !weft_cfg_time (u, until, error))
    return FALSE;
  if (u && *until <= *from)
    return weft_cfg_error (error, u, "until '%s' is not after from: a fault "
                           "holds from one time until a later one", u->text);
  return TRUE;
}

/* Apply one `faults:` entry. */
static gboolean
apply (WeftTopology *topo, const WeftCfg *entry, gboolean *in_a,
       gboolean *in_b, GArray *ids, GError **error)
{
  const WeftCfg *node, *a = NULL, *b = NULL, *speed, *compute;
  double share = 0, compute_share = 1;
  WeftTime from, until;

  if (!weft_cfg_expect_map (entry, "a fault", error)
      || !weft_cfg_check_keys (entry, fault_keys, error)
      || !read_times (entry, &from, &until, error))
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

  /* A fault that holds at the start is in the topology; one that starts
   * later is in the phases from its start on (weft_faults_phases()). */
  g_array_set_size (ids, 0);
  for (uint32_t l = 0; share < 1 && l < topo->n_links; l += 2)
    {
      uint32_t s = topo->links[l].src, d = topo->links[l].dst;
      gboolean hit = node ? in_a[s] || in_a[d]
                          : (in_a[s] && in_b[d]) || (in_a[d] && in_b[s]);
      if (!hit)
        continue;
      if (from == 0)
        cut (topo, l, share);
      g_array_append_val (ids, l);
    }
  if (ids->len == 0 && share < 1)
    return weft_cfg_error (error, entry, node ? "no link joins '%s'"
                                              : "no link joins '%s' to '%s'",
                           (node ? node : a)->text, b ? b->text : "");

  WeftFault *fault = g_new0 (WeftFault, 1);
  fault->what = node ? g_strdup (node->text)
                     : g_strdup_printf ("%s - %s", a->text, b->text);
  fault->share = share;
  fault->compute = compute_share;
  fault->links = ids->len;
  fault->link_ids = g_memdup2 (ids->data, ids->len * sizeof (uint32_t));
  fault->from = from;
  fault->until = until;
  if (compute)
    {
      gboolean whole = from == 0 && until == WEFT_FOREVER;
      slow_gpus (topo, in_a, compute_share, whole, fault);
      topo->compute_windows |= !whole;
    }
  g_ptr_array_add (topo->faults, fault);
  return TRUE;
}

/* Whether @entry has a time. */
static gboolean
timed (const WeftCfg *entry)
{
  return entry->kind == WEFT_CFG_MAP
         && (weft_cfg_get (entry, "from") || weft_cfg_get (entry, "until"));
}

gboolean
weft_faults_apply (WeftTopology *topo, const GPtrArray *entries,
                   GError **error)
{
  g_autofree gboolean *in_a = g_new (gboolean, MAX (topo->n_nodes, 1));
  g_autofree gboolean *in_b = g_new (gboolean, MAX (topo->n_nodes, 1));
  g_autoptr (GArray) ids = g_array_new (FALSE, FALSE, sizeof (uint32_t));

  /* Phases take their links' bandwidth from what they are whole. */
  for (guint i = 0; i < entries->len && topo->whole_bandwidth == NULL; i++)
    if (timed (g_ptr_array_index (entries, i)))
      {
        topo->whole_bandwidth = g_new (double, MAX (topo->n_links, 1));
        for (uint32_t l = 0; l < topo->n_links; l++)
          topo->whole_bandwidth[l] = topo->links[l].bandwidth;
      }
  for (guint i = 0; i < entries->len; i++)
    if (!apply (topo, g_ptr_array_index (entries, i), in_a, in_b, ids, error))
      return FALSE;
  return TRUE;
}

static int
compare_time (gconstpointer a, gconstpointer b)
{
  WeftTime x = *(const WeftTime *) a, y = *(const WeftTime *) b;

  return x < y ? -1 : x > y;
}

void
weft_faults_phases (WeftTopology *topo)
{
  if (topo->whole_bandwidth == NULL)
    return;
  g_autoptr (GArray) times = g_array_new (FALSE, FALSE, sizeof (WeftTime));
  for (guint f = 0; f < topo->faults->len; f++)
    {
      const WeftFault *k = g_ptr_array_index (topo->faults, f);
      if (k->links == 0)
        continue;               /* a straggler alone: no link changes */
      if (k->from > 0)
        g_array_append_val (times, k->from);
      if (k->until != WEFT_FOREVER)
        g_array_append_val (times, k->until);
    }
  if (times->len == 0)
    return;
  g_array_sort (times, compare_time);
  topo->phases = g_array_new (FALSE, FALSE, sizeof (WeftTopoPhase));
  g_autofree float *share = g_new (float, MAX (topo->n_links, 1));
  for (guint i = 0; i < times->len; i++)
    {
      WeftTime at = g_array_index (times, WeftTime, i);
      if (i > 0 && at == g_array_index (times, WeftTime, i - 1))
        continue;
      for (uint32_t l = 0; l < topo->n_links; l++)
        share[l] = 1;
      for (guint f = 0; f < topo->faults->len; f++)
        {
          const WeftFault *k = g_ptr_array_index (topo->faults, f);
          if (!weft_fault_holds (k, at))
            continue;
          for (uint32_t j = 0; j < k->links; j++)
            for (uint32_t d = k->link_ids[j]; d <= k->link_ids[j] + 1; d++)
              share[d] = MIN (share[d], (float) k->share);
        }
      WeftTopoPhase phase = { at, weft_topology_phase_new (topo, share) };
      g_array_append_val (topo->phases, phase);
    }
}

static int
compare_id (const void *a, const void *b)
{
  uint32_t x = *(const uint32_t *) a, y = *(const uint32_t *) b;

  return x < y ? -1 : x > y;
}

/* Whether @gpu is among @fault's GPUs. */
static gboolean
slows (const WeftFault *fault, uint32_t gpu)
{
  return bsearch (&gpu, fault->gpu_ids, fault->gpus, sizeof (uint32_t),
                  compare_id) != NULL;
}

WeftTime
weft_faults_compute_end (const WeftTopology *topo, uint32_t gpu,
                         WeftTime start, double work)
{
  const GPtrArray *faults = topo->faults;
  double whole = topo->nodes[gpu].compute;
  WeftTime t = start;

  /* Speed is the least share of what holds, piece by piece between the
   * times a straggler of this GPU starts or ends. */
  for (;;)
    {
      double speed = whole;
      WeftTime next = WEFT_FOREVER;
      for (guint f = 0; f < faults->len; f++)
        {
          const WeftFault *k = g_ptr_array_index (faults, f);
          if (k->gpus == 0 || (k->from == 0 && k->until == WEFT_FOREVER)
              || !slows (k, gpu))
            continue;
          if (weft_fault_holds (k, t))
            speed = MIN (speed, k->compute);
          if (k->from > t)
            next = MIN (next, k->from);
          if (k->until > t)
            next = MIN (next, k->until);
        }
      if (next == WEFT_FOREVER || (double) (next - t) * speed >= work)
        return t + (WeftTime) ceil (work / speed);
      work -= (double) (next - t) * speed;
      t = next;
    }
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
         size_t n, size_t timed)
{
  WeftCfg *map = g_new0 (WeftCfg, 1);
  size_t slots[6], m = 0;

  /* Its first @n keys, then `from` (keys[4]) and `until` (keys[5]) if
   * @timed has bit 0 and bit 1. */
  for (size_t i = 0; i < n; i++)
    slots[m++] = i;
  for (size_t i = 0; i < 2; i++)
    if (timed & (1u << i))
      slots[m++] = 4 + i;
  *map = (WeftCfg) { .kind = WEFT_CFG_MAP, .refs = 1, .line = 1, .col = 1,
                     .file = origin };
  map->keys = g_new (WeftCfg *, m);
  map->items = g_new (WeftCfg *, m);
  for (size_t j = 0; j < m; j++)
    {
      size_t i = slots[j];
      map->keys[j] = scalar (origin, keys[i], 0, strlen (keys[i]));
      map->keys[j]->col = (int) at[word[i]] + 1;
      map->items[j] = scalar (origin, arg, at[word[i]], len[word[i]]);
    }
  map->n = m;
  return map;
}

WeftCfg *
weft_fault_from_arg (const char *arg, GError **error)
{
  g_autofree char *name = g_strdup_printf ("--fault %s", arg);
  const char *origin = g_intern_string (name);
  size_t at[8], len[8], n = 0;

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
  /* Its times last: "from T", "until T". */
  const char *keys[6];
  size_t word[6], k = 0, timed = 0;
  static const char *const times[] = { "from", "until" };
  for (gboolean more = TRUE; more && n >= 3 && n <= G_N_ELEMENTS (at);)
    {
      more = FALSE;
      for (int i = 0; i < 2 && !more; i++)
        if (len[n - 2] == strlen (times[i])
            && strncmp (arg + at[n - 2], times[i], len[n - 2]) == 0)
          {
            keys[4 + i] = times[i];
            word[4 + i] = n - 1;
            timed |= 1u << i;
            n -= 2;
            more = TRUE;
          }
    }
  /* "GPUS compute SHARE": a straggler. */
  static const char *const straggler[] = { "node", "compute" };
  static const size_t gpus_and_share[] = { 0, 2 };
  if (n == 3 && len[1] == strlen ("compute")
      && strncmp (arg + at[1], "compute", len[1]) == 0)
    {
      for (; k < 2; k++)
        {
          keys[k] = straggler[k];
          word[k] = gpus_and_share[k];
        }
      return arg_map (origin, arg, at, len, keys, word, k, timed);
    }
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
                   "instead of down; or GPUS compute 50%% for a straggler; "
                   "then from T, until T or both for a time it holds",
                   origin);
      return NULL;
    }

  static const char *const one[] = { "node", "speed" };
  static const char *const two[] = { "a", "b", "speed" };
  for (; k < n; k++)
    {
      keys[k] = (names == 1 ? one : two)[k];
      word[k] = k;
    }
  return arg_map (origin, arg, at, len, keys, word, k, timed);
}
