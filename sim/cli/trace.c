/* weft: the `weft trace` command: `generate` writes a training job's trace
 * (models/traces/generator.c), `chakra` writes a trace as Chakra files. */
#include "traces/chakra.h"
#include "traces/generator.h"
#include "cli.h"
#include "files.h"
#include "units.h"

#include <stdio.h>
#include <string.h>

/* What `weft trace chakra` is asked to write. */
typedef struct {
  char *job_name;               /* NULL: the first job */
  gboolean force;               /* replace files weft did not write */
  const char *trace_path;       /* in argv */
  const char *prefix;           /* of the files written, in argv */
} ChakraArgs;

static void
chakra_args_clear (ChakraArgs *opts)
{
  g_free (opts->job_name);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (ChakraArgs, chakra_args_clear)

/* Parse `weft trace chakra TRACE PREFIX`'s options into @opts.  Returns
 * WEFT_EXIT_OK, or WEFT_EXIT_USAGE once it has said what is wrong. */
static int
parse_chakra (int argc, char **argv, ChakraArgs *opts)
{
  GOptionEntry entries[] = {
    { "job", 0, 0, G_OPTION_ARG_STRING, &opts->job_name,
      "The job to write (default: the first)", "NAME" },
    { "force", 0, 0, G_OPTION_ARG_NONE, &opts->force,
      "Replace PREFIX's files even if weft did not write them (default: "
      "only weft's own)", NULL },
    G_OPTION_ENTRY_NULL
  };
  g_autoptr (GOptionContext) context = g_option_context_new (
      "chakra TRACE PREFIX");

  g_option_context_set_description (
      context, "Examples:\n  weft trace generate --tp 8 --pp 4 --dp 32 -o job.yaml\n"
               "  weft trace chakra job.yaml job-et     (job-et.0.et ..., "
               "job-et.yaml)\n  weft run scenarios/h100-1024-fat-tree.yaml "
               "--trace job-et.yaml");
  g_option_context_set_summary (
      context,
      "Write a job of a trace as Chakra execution traces, PREFIX.<rank>.et,\n"
      "one file per rank, and PREFIX.yaml, a trace that replays them.");
  g_option_context_add_main_entries (context, entries, NULL);
  if (!weft_cli_parse (context, "trace", &argc, &argv))
    return WEFT_EXIT_USAGE;
  if (argc != 4)
    return weft_cli_usage ("trace chakra", "expected a trace and a prefix");
  opts->trace_path = argv[2];
  opts->prefix = argv[3];
  return WEFT_EXIT_OK;
}

/* Whether job @j of @t may be written as @opts ask: the trace is read
 * whole by now, but its files (and a Chakra trace's rank files) are still
 * the user's, never written over. */
static gboolean
may_write_chakra (const WeftTrace *t, guint j, const ChakraArgs *opts,
                  GError **error)
{
  g_autoptr (GPtrArray) inputs = g_ptr_array_new_with_free_func (g_free);

  g_ptr_array_add (inputs, g_strdup (opts->trace_path));
  for (guint k = 0; k < t->jobs->len; k++)
    {
      const WeftTraceJob *job = &g_array_index (t->jobs, WeftTraceJob, k);
      for (uint32_t r = 0; job->chakra && r < job->n_ranks; r++)
        g_ptr_array_add (inputs, g_strdup_printf ("%s.%u.et", job->chakra, r));
    }
  g_ptr_array_add (inputs, NULL);
  return weft_chakra_may_write (t, j, opts->prefix,
                                (const char *const *) inputs->pdata,
                                opts->force, error);
}

/* `weft trace chakra TRACE PREFIX`: a trace's job as Chakra files.
 * Returns the exit status. */
static int
to_chakra (int argc, char **argv)
{
  g_autoptr (GError) error = NULL;
  g_auto (ChakraArgs) opts = { NULL, FALSE, NULL, NULL };
  int status = parse_chakra (argc, argv, &opts);

  if (status != WEFT_EXIT_OK)
    return status;
  g_autoptr (WeftTrace) t = weft_trace_load (opts.trace_path, NULL, &error);
  if (t == NULL)
    {
      fprintf (stderr, "%s\n", error->message);
      return WEFT_EXIT_USAGE;
    }
  guint j = 0;
  while (opts.job_name && j < t->jobs->len
         && strcmp (g_array_index (t->jobs, WeftTraceJob, j).name,
                    opts.job_name))
    j++;
  if (j == t->jobs->len)
    {
      fprintf (stderr, "weft trace: %s has no job '%s'\n", opts.trace_path,
               opts.job_name);
      return WEFT_EXIT_USAGE;
    }
  if (!may_write_chakra (t, j, &opts, &error))
    {
      fprintf (stderr, "weft trace: %s\n", error->message);
      return WEFT_EXIT_USAGE;
    }
  if (!weft_chakra_write (t, j, opts.prefix, &error))
    {
      fprintf (stderr, "weft trace: %s\n", error->message);
      return WEFT_EXIT_FAILURE;
    }
  uint32_t n_ranks = g_array_index (t->jobs, WeftTraceJob, j).n_ranks;
  fprintf (stderr, "weft trace: %u ranks in %s.0.et ... %s.%u.et, replay "
           "with %s.yaml\n", n_ranks, opts.prefix, opts.prefix, n_ranks - 1,
           opts.prefix);
  return WEFT_EXIT_OK;
}

/* `weft trace generate`'s options as GOptionContext leaves them. */
typedef struct {
  gint64 tp, pp, dp, layers, micro, steps, buckets;
  char *tp_size, *act_size, *grad_size, *moe_size, *layer_time, *opt_time;
  char *out_path;               /* NULL: standard output */
  gboolean force;               /* replace a file weft did not write */
} GenerateFlags;

static void
generate_flags_clear (GenerateFlags *f)
{
  g_free (f->tp_size);
  g_free (f->act_size);
  g_free (f->grad_size);
  g_free (f->moe_size);
  g_free (f->layer_time);
  g_free (f->opt_time);
  g_free (f->out_path);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (GenerateFlags, generate_flags_clear)

/* Parse `weft trace generate`'s flags into @f; anything but `generate`
 * left in argv is a usage error. */
static int
read_generate_flags (int argc, char **argv, GenerateFlags *f)
{
  GOptionEntry entries[] = {
    { "tp", 0, 0, G_OPTION_ARG_INT64, &f->tp,
      "Tensor-parallel ranks, consecutive (default: 8)", "N" },
    { "pp", 0, 0, G_OPTION_ARG_INT64, &f->pp, "Pipeline stages (default: 1)",
      "N" },
    { "dp", 0, 0, G_OPTION_ARG_INT64, &f->dp,
      "Data-parallel replicas (default: 1); ranks = tp x pp x dp", "N" },
    { "layers", 0, 0, G_OPTION_ARG_INT64, &f->layers,
      "Layers, split evenly over the stages (default: 4 per stage)", "N" },
    { "microbatches", 0, 0, G_OPTION_ARG_INT64, &f->micro,
      "Microbatches per step (default: 4)", "N" },
    { "steps", 0, 0, G_OPTION_ARG_INT64, &f->steps,
      "Training steps (default: 1)", "N" },
    { "buckets", 0, 0, G_OPTION_ARG_INT64, &f->buckets,
      "Gradient buckets per stage (default: 4)", "N" },
    { "layer-time", 0, 0, G_OPTION_ARG_STRING, &f->layer_time,
      "Forward compute of a layer for a microbatch; backward takes twice "
      "(default: 100us)", "TIME" },
    { "optimizer-time", 0, 0, G_OPTION_ARG_STRING, &f->opt_time,
      "Optimizer compute at the end of a step (default: 200us)", "TIME" },
    { "tp-size", 0, 0, G_OPTION_ARG_STRING, &f->tp_size,
      "Each tensor-parallel all_reduce, per rank (default: 16MiB)", "SIZE" },
    { "activation-size", 0, 0, G_OPTION_ARG_STRING, &f->act_size,
      "Activations (and their gradients) a rank hands the next stage per "
      "microbatch (default: 16MiB)", "SIZE" },
    { "grad-size", 0, 0, G_OPTION_ARG_STRING, &f->grad_size,
      "Gradients of a layer on a rank, all-reduced over dp (default: 64MiB)",
      "SIZE" },
    { "moe-size", 0, 0, G_OPTION_ARG_STRING, &f->moe_size,
      "With mixture of experts: each layer's all_to_all over dp, per rank, "
      "forward and backward (default: none)", "SIZE" },
    { "out", 'o', 0, G_OPTION_ARG_FILENAME, &f->out_path,
      "Write the trace here (default: standard output)", "FILE" },
    { "force", 0, 0, G_OPTION_ARG_NONE, &f->force,
      "Replace the --out file even if weft did not write it (default: "
      "only weft's own)", NULL },
    G_OPTION_ENTRY_NULL
  };
  g_autoptr (GOptionContext) context = g_option_context_new ("generate");

  g_option_context_set_description (
      context, "Examples:\n  weft trace generate --tp 8 --pp 4 --dp 32 -o job.yaml\n"
               "  weft trace generate --tp 8 --dp 4 --moe-size 8MiB "
               "--steps 2 > moe.yaml\n  weft run scenarios/h100-256-rail.yaml "
               "--trace job.yaml");
  g_option_context_set_summary (
      context,
      "Write the trace of a training job (docs/trace-format.md): tensor,\n"
      "pipeline and data parallelism, gradient buckets overlapped with\n"
      "backward compute, optionally mixture-of-experts all_to_all.");
  g_option_context_add_main_entries (context, entries, NULL);
  if (!weft_cli_parse (context, "trace", &argc, &argv))
    return WEFT_EXIT_USAGE;
  if (argc != 2 || strcmp (argv[1], "generate") != 0)
    return weft_cli_usage ("trace generate",
                           "expected 'generate' or 'chakra'");
  return WEFT_EXIT_OK;
}

/* The job's shape from @f: its counts checked, the sizes and times parsed
 * over their defaults.  Returns WEFT_EXIT_OK, or WEFT_EXIT_USAGE once it
 * has said what is wrong. */
static int
job_shape (GenerateFlags *f, WeftTraceJobShape *shape)
{
  g_autoptr (GError) error = NULL;

  if (f->tp < 1 || f->pp < 1 || f->dp < 1 || f->micro < 1 || f->steps < 1
      || f->buckets < 1 || f->tp * f->pp * f->dp > (1 << 24))
    return weft_cli_usage ("trace generate", "--tp, --pp, --dp, "
                           "--microbatches, --steps and --buckets take a "
                           "whole number from 1, and tp x pp x dp at most "
                           "16777216");
  if (f->layers == 0)
    f->layers = 4 * f->pp;
  if (f->layers < f->pp || f->layers % f->pp != 0)
    return weft_cli_usage ("trace generate", "--layers must be a multiple of "
                           "--pp (%" G_GINT64_FORMAT ")", f->pp);
  *shape = (WeftTraceJobShape) {
    (uint32_t) f->tp, (uint32_t) f->pp, (uint32_t) f->dp,
    (uint32_t) f->layers, (uint32_t) f->micro, (uint32_t) f->steps,
    (uint32_t) f->buckets, 16 << 20, 16 << 20, 64 << 20, 0, 100000000,
    200000000 };
  struct { const char *flag, *text; uint64_t *v; } sizes[] = {
    { "--tp-size", f->tp_size, &shape->tp_size },
    { "--activation-size", f->act_size, &shape->activation_size },
    { "--grad-size", f->grad_size, &shape->grad_size },
    { "--moe-size", f->moe_size, &shape->moe_size },
  };
  for (guint i = 0; i < G_N_ELEMENTS (sizes); i++)
    if (sizes[i].text && !weft_parse_size (sizes[i].text, sizes[i].v, &error))
      return weft_cli_usage ("trace generate", "%s: %s", sizes[i].flag,
                             error->message);
  struct { const char *flag, *text; WeftTime *v; } times[] = {
    { "--layer-time", f->layer_time, &shape->layer_time },
    { "--optimizer-time", f->opt_time, &shape->optimizer_time },
  };
  for (guint i = 0; i < G_N_ELEMENTS (times); i++)
    if (times[i].text && !weft_parse_time (times[i].text, times[i].v, &error))
      return weft_cli_usage ("trace generate", "%s: %s", times[i].flag,
                             error->message);
  return WEFT_EXIT_OK;
}

/* Write @shape's trace to @out_path, or to standard output if NULL.  A
 * file is written beside, then renamed: never a half-written trace, and
 * never over a file weft did not write unless @force.  Returns the exit
 * status. */
static int
write_trace (const WeftTraceJobShape *shape, const char *out_path,
             gboolean force)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (WeftOutput) output = NULL;
  FILE *out = stdout;

  if (out_path)
    {
      if (!weft_file_may_write (out_path, NULL, WEFT_TRACE_GENERATE_MARK,
                                force, &error)
          || !(output = weft_output_new (out_path, &error)))
        {
          fprintf (stderr, "weft trace: %s\n", error->message);
          return WEFT_EXIT_USAGE;
        }
      out = weft_output_stream (output);
    }
  uint64_t ops = weft_trace_generate (shape, out);
  if (out_path == NULL)
    return fflush (out) == 0 && !ferror (out) ? WEFT_EXIT_OK
                                              : WEFT_EXIT_FAILURE;
  if (!weft_output_commit (g_steal_pointer (&output), &error))
    {
      fprintf (stderr, "weft trace: %s\n", error->message);
      return WEFT_EXIT_FAILURE;
    }
  fprintf (stderr, "weft trace: %" G_GUINT64_FORMAT " ops over %u ranks "
           "in %s\n", ops, shape->tp * shape->pp * shape->dp, out_path);
  return WEFT_EXIT_OK;
}

/* `weft trace`: `chakra`, or `generate`: read the options and the job's
 * shape, write its trace.  Returns the exit status. */
int
weft_cmd_trace (int argc, char **argv)
{
  g_auto (GenerateFlags) f = { .tp = 8, .pp = 1, .dp = 1, .layers = 0,
                               .micro = 4, .steps = 1, .buckets = 4 };
  WeftTraceJobShape shape;
  int status;

  if (argc >= 2 && strcmp (argv[1], "chakra") == 0)
    return to_chakra (argc, argv);
  if (argc < 2 || strcmp (argv[1], "--help") == 0
      || strcmp (argv[1], "-h") == 0)
    {
      /* The command has two: say so before either's options. */
      FILE *out = argc < 2 ? stderr : stdout;
      fprintf (out, "Usage:\n  weft trace generate [OPTION...]   write the "
               "trace of a training job\n  weft trace chakra [OPTION...] "
               "TRACE PREFIX\n                                   write a "
               "trace's job as Chakra files\n\n'weft trace generate --help' "
               "and 'weft trace chakra --help' list their options.\n");
      return argc < 2 ? WEFT_EXIT_USAGE : WEFT_EXIT_OK;
    }
  if ((status = read_generate_flags (argc, argv, &f)) != WEFT_EXIT_OK
      || (status = job_shape (&f, &shape)) != WEFT_EXIT_OK)
    return status;
  return write_trace (&shape, f.out_path, f.force);
}
