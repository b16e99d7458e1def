/* Fuzz target: a schedule file (an algorithm written as data, in weft's
 * YAML or, when it starts with '<', MSCCL's XML), loaded, checked for
 * what it computes and built for a few sizes. */
#include "collectives/schedule_file.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  size_t at = 0;
  while (at < size && g_ascii_isspace (data[at]))
    at++;
  g_autofree char *path = fuzz_input_file (at < size && data[at] == '<'
                                               ? "a.xml"
                                               : "a.yaml",
                                           data, size);
  g_autoptr (GError) error = NULL;
  g_autoptr (WeftScheduleFile) file = weft_schedule_file_load (path, &error);

  fuzz_check (file != NULL, error);
  if (file && !weft_schedule_file_has_op (file))
    weft_schedule_file_set_op (file, WEFT_OP_ALL_REDUCE);
  /* A program for any number of ranks, for a few numbers. */
  for (uint32_t n = 4; file && weft_schedule_file_parametric (file) && n < 6;
       n++)
    {
      g_autoptr (GError) why = NULL;
      if (!weft_schedule_file_expand (file, n, &why))
        {
          fuzz_check (FALSE, why);
          g_clear_pointer (&file, weft_schedule_file_free);
        }
    }
  if (file)
    {
      g_autoptr (GError) why = NULL;
      fuzz_check (weft_schedule_file_verify (file, &why), why);
    }
  static const uint64_t sizes[] = { 1, 1000, 1 << 20 };
  for (guint i = 0; file && i < G_N_ELEMENTS (sizes); i++)
    {
      g_autoptr (GError) why = NULL;
      g_autoptr (WeftSchedule) s = weft_schedule_file_build (file, sizes[i],
                                                             &why);
      fuzz_check (s != NULL, why);
    }
  return 0;
}
