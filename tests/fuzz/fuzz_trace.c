/* Fuzz target: a trace, placed on the bundled DGX H100. */
#include "fuzz_common.h"
#include "topology/scenario.h"
#include "traces/trace.h"

#include <string.h>

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  static WeftScenario *dgx;
  g_autoptr (GError) error = NULL;

  if (dgx == NULL)
    dgx = weft_scenario_load (WEFT_SOURCE_DIR "/scenarios/dgx-h100.yaml",
                              NULL);
  g_autoptr (WeftTrace) t = weft_trace_load_data ("t.yaml",
                                                  (const char *) data, size,
                                                  dgx->topo, &error);
  fuzz_check (t != NULL, error);
  return 0;
}
