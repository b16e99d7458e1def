/* Fuzz target: a Chakra execution trace (protobuf), one rank's file,
 * read through a trace that names it. */
#include "fuzz_common.h"
#include "traces/trace.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  static const char wrapper[] = "ranks: 1\nchakra: c\n";
  g_free (fuzz_input_file ("c.0.et", data, size));
  g_autofree char *yaml = fuzz_input_file ("c.yaml", (const uint8_t *) wrapper,
                                           sizeof wrapper - 1);
  g_autoptr (GError) error = NULL;
  g_autoptr (WeftTrace) t = weft_trace_load (yaml, NULL, &error);

  fuzz_check (t != NULL, error);
  return 0;
}
