/* weft: link types and devices from their configuration. */
#include "topology/hardware.h"

#include <string.h>

#include "params.h"

#define MAX_RATE 1e15                   /* B/s: a petabyte per second */
#define MAX_TIME 1e15                   /* ps: a thousand seconds */
#define MAX_SIZE 1e15                   /* bytes */

static const WeftParam link_type_params[] = {
  { "bandwidth", WEFT_PARAM_RATE, G_STRUCT_OFFSET (WeftLinkType, bandwidth),
    NULL, 1, MAX_RATE, "per lane and direction, as signalled on the wire" },
  { "payload", WEFT_PARAM_SIZE, G_STRUCT_OFFSET (WeftLinkType, payload),
    "256B", 1, MAX_SIZE, "data bytes per packet, flit group or MTU" },
  { "header", WEFT_PARAM_SIZE, G_STRUCT_OFFSET (WeftLinkType, header), "0B",
    0, MAX_SIZE, "overhead bytes per packet (headers, CRC, framing)" },
  { "latency", WEFT_PARAM_TIME, G_STRUCT_OFFSET (WeftLinkType, latency),
    "0ns", 0, MAX_TIME, "one-way propagation latency of a hop" },
  { "cost", WEFT_PARAM_UINT, G_STRUCT_OFFSET (WeftLinkType, cost), "1", 1,
    10000, "routing metric of one hop (lower is preferred)" },
  { "nccl_bandwidth", WEFT_PARAM_RATE,
    G_STRUCT_OFFSET (WeftLinkType, nccl_bandwidth), "0B/s", 0, MAX_RATE,
    "per lane, what NCCL's Simple protocol moves over it; 0: all of it" },
};

/* Keys handled here rather than by the table. */
static const char *const link_type_keys[] = { "port", "family", "encoding",
                                              "source", "override", NULL };

static const WeftParam gpu_params[] = {
  { "reduce_bandwidth", WEFT_PARAM_RATE,
    G_STRUCT_OFFSET (WeftDevice, reduce_bandwidth), NULL, 1, MAX_RATE,
    "throughput of a local reduction (bytes of output per second)" },
  { "memory", WEFT_PARAM_SIZE, G_STRUCT_OFFSET (WeftDevice, memory), "0B", 0,
    MAX_SIZE, "device memory; collectives must fit (0: not checked)" },
  { "ll_bandwidth", WEFT_PARAM_RATE,
    G_STRUCT_OFFSET (WeftDevice, ll_bandwidth[0]), "0B/s", 0, MAX_RATE,
    "most bus bandwidth NCCL's LL protocol reaches inside a server "
    "(NCCL's llMaxBw); 0: no bound" },
  { "ll_bandwidth_two", WEFT_PARAM_RATE,
    G_STRUCT_OFFSET (WeftDevice, ll_bandwidth[1]), "0B/s", 0, MAX_RATE,
    "the same across two servers" },
  { "ll_bandwidth_more", WEFT_PARAM_RATE,
    G_STRUCT_OFFSET (WeftDevice, ll_bandwidth[2]), "0B/s", 0, MAX_RATE,
    "the same across three servers or more" },
  { "compute_capability", WEFT_PARAM_UINT,
    G_STRUCT_OFFSET (WeftDevice, compute_capability), "0", 0, 1000,
    "CUDA compute capability times ten (90 for Hopper), which picks NCCL's "
    "per-architecture constants when weft chooses as NCCL does; 0: not "
    "said, NCCL's oldest row" },
};

static const WeftParam switch_params[] = {
  { "latency", WEFT_PARAM_TIME, G_STRUCT_OFFSET (WeftDevice, latency), "0ns",
    0, MAX_TIME, "port-to-port latency" },
  { "buffer", WEFT_PARAM_SIZE, G_STRUCT_OFFSET (WeftDevice, buffer), "1MiB",
    1, MAX_SIZE, "buffer per output port" },
  { "cut_through", WEFT_PARAM_BOOL, G_STRUCT_OFFSET (WeftDevice, cut_through),
    "true", 0, 1, "forward a packet before all of it has arrived" },
  { "reduce_bandwidth", WEFT_PARAM_RATE,
    G_STRUCT_OFFSET (WeftDevice, reduce_bandwidth), "0B/s", 0, MAX_RATE,
    "in-network reduction throughput (NVLS, SHARP); 0: none" },
};

static const WeftParam nic_params[] = {
  { "latency", WEFT_PARAM_TIME, G_STRUCT_OFFSET (WeftDevice, latency), "0ns",
    0, MAX_TIME, "processing latency through the adapter" },
};

static const char *const device_keys[] = { "kind", "ports", "source",
                                           "override", NULL };

typedef struct {
  const WeftParam *params;
  size_t n;
} ParamTable;

static const ParamTable kind_tables[WEFT_NODE_KIND_COUNT] = {
  [WEFT_NODE_GPU] = { gpu_params, G_N_ELEMENTS (gpu_params) },
  [WEFT_NODE_SWITCH] = { switch_params, G_N_ELEMENTS (switch_params) },
  [WEFT_NODE_NIC] = { nic_params, G_N_ELEMENTS (nic_params) },
  [WEFT_NODE_CPU] = { NULL, 0 },
};

static gboolean
parse_encoding (const WeftCfg *cfg, double *out, GError **error)
{
  unsigned data, line;
  char tail;

  if (!weft_cfg_expect_scalar (cfg, "encoding", error))
    return FALSE;
  /* "128b/130b" or a plain ratio such as 0.97. */
  if (sscanf (cfg->text, "%ub/%ub%c", &data, &line, &tail) == 2)
    {
      if (data == 0 || line < data)
        return weft_cfg_error (error, cfg, "encoding '%s' should carry fewer "
                               "data bits than line bits", cfg->text);
      *out = (double) data / line;
      return TRUE;
    }
  if (!weft_cfg_number (cfg, out, error))
    return FALSE;
  if (*out <= 0 || *out > 1)
    return weft_cfg_error (error, cfg, "encoding '%s' should be a ratio in "
                           "(0, 1] or a code such as 128b/130b", cfg->text);
  return TRUE;
}

WeftLinkType *
weft_link_type_from_cfg (const char *name, const WeftCfg *cfg, GError **error)
{
  g_autoptr (WeftLinkType) t = g_new0 (WeftLinkType, 1);
  WeftCfg *port, *family, *encoding;

  t->name = g_strdup (name);
  t->encoding = 1.0;
  if (!weft_cfg_expect_map (cfg, "a link type", error)
      || !weft_params_fill (link_type_params, G_N_ELEMENTS (link_type_params),
                            t, cfg, link_type_keys, error))
    return NULL;
  if (!(port = weft_cfg_require (cfg, "port", error))
      || !weft_cfg_expect_scalar (port, "port", error))
    return NULL;
  t->port = g_strdup (port->text);

  /* The family is for summaries; it follows from the port unless given. */
  if (strcmp (t->port, "nvlink") == 0)
    t->family = WEFT_FAMILY_NVLINK;
  else if (strcmp (t->port, "pcie") == 0)
    t->family = WEFT_FAMILY_PCIE;
  else if (strcmp (t->port, "ib") == 0 || strcmp (t->port, "eth") == 0)
    t->family = WEFT_FAMILY_NETWORK;
  else
    t->family = WEFT_FAMILY_OTHER;
  if ((family = weft_cfg_get (cfg, "family")) != NULL)
    {
      gboolean found = FALSE;
      if (!weft_cfg_expect_scalar (family, "family", error))
        return NULL;
      for (int f = 0; f < WEFT_FAMILY_COUNT && !found; f++)
        if (strcmp (family->text, weft_link_family_name (f)) == 0)
          {
            t->family = f;
            found = TRUE;
          }
      if (!found)
        {
          weft_cfg_error (error, family, "unknown family '%s'; valid: nvlink, "
                          "pcie, network, other", family->text);
          return NULL;
        }
    }
  if ((encoding = weft_cfg_get (cfg, "encoding")) != NULL
      && !parse_encoding (encoding, &t->encoding, error))
    return NULL;
  return g_steal_pointer (&t);
}

WeftDevice *
weft_device_from_cfg (const char *name, const WeftCfg *cfg, GError **error)
{
  g_autoptr (WeftDevice) d = g_new0 (WeftDevice, 1);
  WeftCfg *kind, *ports;

  d->name = g_strdup (name);
  if (!weft_cfg_expect_map (cfg, "a device", error)
      || !(kind = weft_cfg_require (cfg, "kind", error))
      || !weft_cfg_expect_scalar (kind, "kind", error))
    return NULL;
  if (!weft_node_kind_parse (kind->text, &d->kind))
    {
      weft_cfg_error (error, kind, "unknown kind '%s'; valid: gpu, switch, "
                      "nic, cpu", kind->text);
      return NULL;
    }
  const ParamTable *table = &kind_tables[d->kind];
  if (!weft_params_fill (table->params, table->n, d, cfg, device_keys, error))
    return NULL;

  if (!(ports = weft_cfg_require (cfg, "ports", error))
      || !weft_cfg_expect_map (ports, "ports (port class: count)", error))
    return NULL;
  d->n_port_classes = (uint32_t) ports->n;
  d->port_names = g_new0 (char *, ports->n);
  d->port_counts = g_new0 (uint32_t, ports->n);
  for (size_t i = 0; i < ports->n; i++)
    {
      uint64_t count;
      if (!weft_cfg_uint (ports->items[i], 0, 100000, &count, error))
        return NULL;
      d->port_names[i] = g_strdup (ports->keys[i]->text);
      d->port_counts[i] = (uint32_t) count;
    }
  return g_steal_pointer (&d);
}

void
weft_hardware_print_params (FILE *out)
{
  weft_params_print (out, "link_types: (also: port, required; family; "
                     "encoding, default 1, as a ratio or 128b/130b)",
                     link_type_params, G_N_ELEMENTS (link_type_params));
  for (int k = 0; k < WEFT_NODE_KIND_COUNT; k++)
    {
      g_autofree char *title = g_strdup_printf (
          "\ndevices of kind %s: (also: ports, required: class: count)",
          weft_node_kind_name (k));
      weft_params_print (out, title, kind_tables[k].params, kind_tables[k].n);
    }
}
