/* weft: fabric generators: ring, torus, full mesh, star, fat-tree and
 * rail-optimized fat-tree.  Each builds nodes and links into a topology from
 * one `fabrics:` entry of a scenario. */
#pragma once

#include "config.h"
#include "topology/topology.h"

G_BEGIN_DECLS

/* Build the fabric described by the map @entry into @topo.  On bad input
 * return FALSE with "file:line:col: what is wrong". */
gboolean weft_fabric_build (WeftTopology *topo, const WeftCfg *entry,
                            GError **error);

/* Resolve the name pattern in the scalar @cfg to node ids (appended to
 * @ids); each name must exist.  Shared by links and fabrics. */
gboolean weft_fabric_resolve (WeftTopology *topo, const WeftCfg *cfg,
                              const char *prefix, GArray *ids,
                              GPtrArray *ports, GError **error);

G_END_DECLS
