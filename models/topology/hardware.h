/* weft: link types and devices from their configuration, and their parameter
 * tables (printed by `weft params`). */
#pragma once

#include <stdio.h>

#include "config.h"
#include "topology/topology.h"

G_BEGIN_DECLS

/* Build the link type @name from the map @cfg.  NULL with @error on a bad
 * value. */
WeftLinkType *weft_link_type_from_cfg (const char *name, const WeftCfg *cfg,
                                       GError **error);

/* Build the device @name from the map @cfg.  NULL with @error on a bad
 * value. */
WeftDevice *weft_device_from_cfg (const char *name, const WeftCfg *cfg,
                                  GError **error);

/* Print every parameter of link types and of each kind of device. */
void weft_hardware_print_params (FILE *out);

G_END_DECLS
