/* weft: the `weft trace` command: `generate` writes a training job's trace
 * (models/traces/generator.c), `chakra` writes a trace as Chakra files. */
#include "traces/chakra.h"
#include "traces/generator.h"
#include "cli.h"
#include "files.h"
#include "units.h"

#include <stdio.h>
#include <string.h>

static int
usage_error (const char *format, ...)
{
  va_list ap;

  va_start (ap, format);
  g_autofree char *message = g_strdup_vprintf (format, ap);
  va_end (ap);
  weft_cli_usage_error ("trace generate", message);
  return WEFT_EXIT_USAGE;
}

/* `weft trace chakra TRACE PREFIX`: a trace's job as Chakra files. */
static int
to_chakra (int argc, char **argv)
{
  g_autofree char *job_name = NULL;
  gboolean force = FALSE;
  GOptionEntry entries[] = {
    { "job", 0, 0, G_OPTION_ARG_STRING, &job_name,
      "The job to write (default: the first)", "NAME" },
    { "force", 0, 0, G_OPTION_ARG_NONE, &force,
      "Replace PREFIX's files even if weft did not write them (default: "
      "only weft's own)", NULL },
    G_OPTION_ENTRY_NULL
  };
  g_autoptr (GOptionContext) context = g_option_context_new (
      "chakra TRACE PREFIX");
  g_autoptr (GError) error = NULL;

  g_option_context_set_summary (
      context,
      "Write a job of a trace as Chakra execution traces, PREFIX.<rank>.et,\n"
      "one file per rank, and PREFIX.yaml, a trace that replays them.");
  g_option_context_add_main_entries (context, entries, NULL);
  if (!weft_cli_parse (context, "trace", &argc, &argv))
    return WEFT_EXIT_USAGE;
  if (argc != 4)
    {
      weft_cli_usage_error ("trace chakra",
                            "expected a trace and a prefix");
      return WEFT_EXIT_USAGE;
    }
  g_autoptr (WeftTrace) t = weft_trace_load (argv[2], NULL, &error);
  if (t == NULL)
    {
      fprintf (stderr, "%s\n", error->message);
      return WEFT_EXIT_USAGE;
    }
  guint j = 0;
  while (job_name && j < t->jobs->len
         && strcmp (g_array_index (t->jobs, WeftTraceJob, j).name, job_name))
    j++;
  if (j == t->jobs->len)
    {
      fprintf (stderr, "weft trace: %s has no job '%s'\n", argv[2], job_name);
      return WEFT_EXIT_USAGE;
    }
  /* The trace is read whole by now, but its files are still the user's:
   * never written over. */
  g_autoptr (GPtrArray) inputs = g_ptr_array_new_with_free_func (g_free);
  g_ptr_array_add (inputs, g_strdup (argv[2]));
  for (guint k = 0; k < t->jobs->len; k++)
    {
      const WeftTraceJob *job = &g_array_index (t->jobs, WeftTraceJob, k);
      for (uint32_t r = 0; job->chakra && r < job->n_ranks; r++)
        g_ptr_array_add (inputs, g_strdup_printf ("%s.%u.et", job->chakra, r));
    }
  g_ptr_array_add (inputs, NULL);
  if (!weft_chakra_may_write (t, j, argv[3], (const char *const *) inputs->pdata,
                              force, &error))
    {
      fprintf (stderr, "weft trace: %s\n", error->message);
      return WEFT_EXIT_USAGE;
    }
  if (!weft_chakra_write (t, j, argv[3], &error))
    {
      fprintf (stderr, "weft trace: %s\n", error->message);
      return WEFT_EXIT_FAILURE;
    }
  fprintf (stderr, "weft trace: %u ranks in %s.0.et ... %s.%u.et, replay "
           "with %s.yaml\n", g_array_index (t->jobs, WeftTraceJob, j).n_ranks,
           argv[3], argv[3],
           g_array_index (t->jobs, WeftTraceJob, j).n_ranks - 1, argv[3]);
  return WEFT_EXIT_OK;
}

int
weft_cmd_trace (int argc, char **argv)
{
  if (argc >= 2 && strcmp (argv[1], "chakra") == 0)
    return to_chakra (argc, argv);

  gint64 tp = 8, pp = 1, dp = 1, layers = 0, micro = 4, steps = 1;
  gint64 buckets = 4;
  g_autofree char *tp_size = NULL, *act_size = NULL, *grad_size = NULL;
  g_autofree char *moe_size = NULL, *layer_time = NULL, *opt_time = NULL;
  g_autofree char *out_path = NULL;
  gboolean force = FALSE;
  GOptionEntry entries[] = {
    { "tp", 0, 0, G_OPTION_ARG_INT64, &tp,
      "Tensor-parallel ranks, consecutive (default: 8)", "N" },
    { "pp", 0, 0, G_OPTION_ARG_INT64, &pp, "Pipeline stages (default: 1)",
      "N" },
    { "dp", 0, 0, G_OPTION_ARG_INT64, &dp,
      "Data-parallel replicas (default: 1); ranks = tp x pp x dp", "N" },
    { "layers", 0, 0, G_OPTION_ARG_INT64, &layers,
      "Layers, split evenly over the stages (default: 4 per stage)", "N" },
    { "microbatches", 0, 0, G_OPTION_ARG_INT64, &micro,
      "Microbatches per step (default: 4)", "N" },
    { "steps", 0, 0, G_OPTION_ARG_INT64, &steps,
      "Training steps (default: 1)", "N" },
    { "buckets", 0, 0, G_OPTION_ARG_INT64, &buckets,
      "Gradient buckets per stage (default: 4)", "N" },
    { "layer-time", 0, 0, G_OPTION_ARG_STRING, &layer_time,
      "Forward compute of a layer for a microbatch; backward takes twice "
      "(default: 100us)", "TIME" },
    { "optimizer-time", 0, 0, G_OPTION_ARG_STRING, &opt_time,
      "Optimizer compute at the end of a step (default: 200us)", "TIME" },
    { "tp-size", 0, 0, G_OPTION_ARG_STRING, &tp_size,
      "Each tensor-parallel all_reduce, per rank (default: 16MiB)", "SIZE" },
    { "activation-size", 0, 0, G_OPTION_ARG_STRING, &act_size,
      "Activations (and their gradients) a rank hands the next stage per "
      "microbatch (default: 16MiB)", "SIZE" },
    { "grad-size", 0, 0, G_OPTION_ARG_STRING, &grad_size,
      "Gradients of a layer on a rank, all-reduced over dp (default: 64MiB)",
      "SIZE" },
    { "moe-size", 0, 0, G_OPTION_ARG_STRING, &moe_size,
      "With mixture of experts: each layer's all_to_all over dp, per rank, "
      "forward and backward (default: none)", "SIZE" },
    { "out", 'o', 0, G_OPTION_ARG_FILENAME, &out_path,
      "Write the trace here (default: standard output)", "FILE" },
    { "force", 0, 0, G_OPTION_ARG_NONE, &force,
      "Replace the --out file even if weft did not write it (default: "
      "only weft's own)", NULL },
    G_OPTION_ENTRY_NULL
  };
  g_autoptr (GOptionContext) context = g_option_context_new ("generate");
  g_autoptr (GError) error = NULL;

  g_option_context_set_summary (
      context,
      "Write the trace of a training job (docs/trace-format.md): tensor,\n"
      "pipeline and data parallelism, gradient buckets overlapped with\n"
      "backward compute, optionally mixture-of-experts all_to_all.");
  g_option_context_add_main_entries (context, entries, NULL);
  if (!weft_cli_parse (context, "trace", &argc, &argv))
    return WEFT_EXIT_USAGE;
  if (argc != 2 || strcmp (argv[1], "generate") != 0)
    return usage_error ("expected 'generate' or 'chakra'");
  if (tp < 1 || pp < 1 || dp < 1 || micro < 1 || steps < 1 || buckets < 1
      || tp * pp * dp > (1 << 24))
    return usage_error ("--tp, --pp, --dp, --microbatches, --steps "
                        "and --buckets take a whole number from 1, and "
                        "tp x pp x dp at most 16777216");
  if (layers == 0)
    layers = 4 * pp;
  if (layers < pp || layers % pp != 0)
    return usage_error ("--layers must be a multiple of --pp (%"
                        G_GINT64_FORMAT ")", pp);
  WeftTraceJobShape g = { (uint32_t) tp, (uint32_t) pp, (uint32_t) dp,
                         (uint32_t) layers, (uint32_t) micro,
                         (uint32_t) steps, (uint32_t) buckets, 16 << 20,
                         16 << 20, 64 << 20, 0, 100000000, 200000000 };
  FILE *out = stdout;
  struct { const char *flag, *text; uint64_t *v; } sizes[] = {
    { "--tp-size", tp_size, &g.tp_size },
    { "--activation-size", act_size, &g.activation_size },
    { "--grad-size", grad_size, &g.grad_size },
    { "--moe-size", moe_size, &g.moe_size },
  };
  for (guint i = 0; i < G_N_ELEMENTS (sizes); i++)
    if (sizes[i].text && !weft_parse_size (sizes[i].text, sizes[i].v, &error))
      return usage_error ("%s: %s", sizes[i].flag, error->message);
  struct { const char *flag, *text; WeftTime *v; } times[] = {
    { "--layer-time", layer_time, &g.layer_time },
    { "--optimizer-time", opt_time, &g.optimizer_time },
  };
  for (guint i = 0; i < G_N_ELEMENTS (times); i++)
    if (times[i].text && !weft_parse_time (times[i].text, times[i].v, &error))
      return usage_error ("%s: %s", times[i].flag, error->message);

  g_autoptr (WeftOutput) output = NULL;
  if (out_path)
    {
      /* Written beside, then renamed: never a half-written trace. */
      if (!weft_file_may_write (out_path, NULL, WEFT_TRACE_GENERATE_MARK,
                                force, &error)
          || !(output = weft_output_new (out_path, &error)))
        {
          fprintf (stderr, "weft trace: %s\n", error->message);
          return WEFT_EXIT_USAGE;
        }
      out = weft_output_stream (output);
    }
  uint64_t ops = weft_trace_generate (&g, out);
  if (out_path)
    {
      if (!weft_output_commit (g_steal_pointer (&output), &error))
        {
          fprintf (stderr, "weft trace: %s\n", error->message);
          return WEFT_EXIT_FAILURE;
        }
      fprintf (stderr, "weft trace: %" G_GUINT64_FORMAT " ops over %u ranks "
               "in %s\n", ops, g.tp * g.pp * g.dp, out_path);
      return WEFT_EXIT_OK;
    }
  return fflush (out) == 0 && !ferror (out) ? WEFT_EXIT_OK : WEFT_EXIT_FAILURE;
}
