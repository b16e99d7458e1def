/* weft: the `weft params` command. */
#include "cli.h"
#include "topology/hardware.h"

#include <stdio.h>

/* `weft params`: print every parameter table.  Returns the exit status. */
int
weft_cmd_params (int argc, char **argv)
{
  GOptionEntry entries[] = { G_OPTION_ENTRY_NULL };
  g_autoptr (GOptionContext) context = g_option_context_new (NULL);

  g_option_context_set_description (context, "Examples:\n  weft params\n  weft params | grep nvlink");
  g_option_context_set_summary (context, "List every parameter of link types "
                                "and devices, with its type and default.");
  g_option_context_add_main_entries (context, entries, NULL);
  if (!weft_cli_parse (context, "params", &argc, &argv))
    return WEFT_EXIT_USAGE;
  if (argc > 1)
    {
      weft_cli_usage_error ("params", "takes no arguments");
      return WEFT_EXIT_USAGE;
    }
  weft_hardware_print_params (stdout);
  return WEFT_EXIT_OK;
}
