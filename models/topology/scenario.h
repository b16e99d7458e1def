/* weft: scenarios.  A scenario file describes hardware (link types, devices,
 * templates of servers, nodes, links and generated fabrics) and, later, the
 * workload to run on it.  docs/scenario-format.md documents the format. */
#pragma once

#include "config.h"
#include "topology/topology.h"

G_BEGIN_DECLS

#define WEFT_SCENARIO_VERSION 1

typedef struct {
  char *path;
  WeftTopology *topo;
  WeftCfg *root;                /* the scenario file's own tree */
  char *sha256;                 /* of every file read, in the order read */
  char **files;                 /* every file read (the scenario, then its
                                   includes), NULL-terminated: the inputs
                                   no output may be written over */
} WeftScenario;

/* Load the scenario at @path with its includes and build its topology.
 * Bad input fails with one message "file:line:col: what is wrong". */
WeftScenario *weft_scenario_load (const char *path, GError **error);

/* As weft_scenario_load(), with @sets ("KEY=VALUE", NULL-terminated, or
 * NULL) applied first: KEY is a path of map keys and list indexes separated
 * by dots ("fabrics.0.levels", "link_types.ib-ndr.bandwidth"), looked up
 * in the scenario file, then in the files it includes, and must name a
 * single value; VALUE replaces it.  A bad key fails like bad input, and a
 * bad value is reported as "--set KEY=VALUE:1:1: what is wrong".  Each of
 * @faults (NULL-terminated, or NULL) is a --fault argument
 * (weft_fault_from_arg()) applied after the scenario's own faults. */
WeftScenario *weft_scenario_load_with (const char *path,
                                       const char *const *sets,
                                       const char *const *faults,
                                       GError **error);

void weft_scenario_free (WeftScenario *scenario);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (WeftScenario, weft_scenario_free)

G_END_DECLS
