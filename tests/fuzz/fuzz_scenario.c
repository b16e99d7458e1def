/* Fuzz target: a scenario file (the YAML loader, presets, templates,
 * fabrics, the topology builder). */
#include "fuzz_common.h"
#include "topology/scenario.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  g_autofree char *path = fuzz_input_file ("s.yaml", data, size);
  g_autoptr (GError) error = NULL;
  g_autoptr (WeftScenario) s = weft_scenario_load (path, &error);

  fuzz_check (s != NULL, error);
  return 0;
}
