/* weft: traces of a training job, written as docs/trace-format.md
 * describes, for anyone to replay or to scale up (`weft trace generate`).
 *
 * The job is Megatron-style: tensor parallelism (tp) over consecutive
 * ranks, pipeline stages (pp) next, data parallelism (dp) outermost, so
 * rank = (d * pp + p) * tp + t.  Each step runs every microbatch forward
 * through the stage's layers (each layer: compute on every rank, then an
 * all_reduce over its tp group; with --moe-size an all_to_all over the dp
 * group before it), hands activations to the next stage by send/recv, then
 * runs backward in reverse (compute twice the forward), hands gradients
 * back, and all-reduces the gradients over dp in buckets as soon as the
 * layers of a bucket are done with the last microbatch, overlapped with
 * the rest of backward; an optimizer compute waits for every bucket. */
#include "traces/generator.h"

#include <stdio.h>
#include <string.h>

typedef struct {
  uint32_t tp, pp, dp, layers, micro, steps, buckets;
  uint64_t tp_size, act_size, grad_size, moe_size;
  WeftTime layer_time, opt_time;
  FILE *out;
  uint64_t ops;
  /* Per rank: the id of its last compute (program order), as text. */
  char **last;
} Gen;

static char *
size_text (uint64_t b)
{
  if (b && b % (1ull << 30) == 0)
    return g_strdup_printf ("%" G_GUINT64_FORMAT "GiB", b >> 30);
  if (b && b % (1ull << 20) == 0)
    return g_strdup_printf ("%" G_GUINT64_FORMAT "MiB", b >> 20);
  if (b && b % (1ull << 10) == 0)
    return g_strdup_printf ("%" G_GUINT64_FORMAT "KiB", b >> 10);
  return g_strdup_printf ("%" G_GUINT64_FORMAT "B", b);
}

static char *
time_text (WeftTime t)
{
  if (t && t % 1000000 == 0)
    return g_strdup_printf ("%" G_GUINT64_FORMAT "us", t / 1000000);
  if (t && t % 1000 == 0)
    return g_strdup_printf ("%" G_GUINT64_FORMAT "ns", t / 1000);
  return g_strdup_printf ("%" G_GUINT64_FORMAT "ps", t);
}

static uint32_t
rank_of (const Gen *g, uint32_t d, uint32_t p, uint32_t t)
{
  return (d * g->pp + p) * g->tp + t;
}

/* A compute op on rank @r after its previous one and @extra (may be
 * NULL); it becomes the rank's last. */
static void
compute (Gen *g, uint32_t r, const char *id, WeftTime time, const char *extra)
{
  g_autofree char *tt = time_text (time);
  fprintf (g->out, "  - {id: %s, kind: compute, rank: %u, time: %s", id, r,
           tt);
  if (g->last[r] || extra)
    fprintf (g->out, ", deps: [%s%s%s]", g->last[r] ? g->last[r] : "",
             g->last[r] && extra ? ", " : "", extra ? extra : "");
  fprintf (g->out, "}\n");
  g_free (g->last[r]);
  g->last[r] = g_strdup (id);
  g->ops++;
}

/* A collective on @comm of @n ranks after each member's last compute
 * (whose ids are in @deps). */
static void
collective (Gen *g, const char *id, const char *kind, const char *comm,
            uint64_t size, GString *deps)
{
  g_autofree char *st = size_text (size);
  fprintf (g->out, "  - {id: %s, kind: %s, comm: %s, size: %s, deps: [%s]}\n",
           id, kind, comm, st, deps->str);
  g->ops++;
}

/* Rank @a hands @size to rank @b after its last compute. */
static void
p2p (Gen *g, const char *id, uint32_t a, uint32_t b, uint64_t size)
{
  g_autofree char *st = size_text (size);
  fprintf (g->out, "  - {id: s%s, kind: send, rank: %u, peer: %u, size: %s, "
           "deps: [%s]}\n", id, a, b, st, g->last[a]);
  /* The receiver posts it in program order, after its last compute. */
  fprintf (g->out, "  - {id: r%s, kind: recv, rank: %u, peer: %u, size: %s",
           id, b, a, st);
  if (g->last[b])
    fprintf (g->out, ", deps: [%s]", g->last[b]);
  fprintf (g->out, "}\n");
  g->ops += 2;
}

/* One layer's communication after its compute on every rank: the tp
 * all_reduce of each group (and before it, with MoE, the dp all_to_all);
 * each rank's next compute waits for it. */
static void
layer_comm (Gen *g, const char *tag, uint32_t p, GString *deps, char **after)
{
  if (g->moe_size > 0 && g->dp > 1)
    for (uint32_t t = 0; t < g->tp; t++)
      {
        g_string_truncate (deps, 0);
        for (uint32_t d = 0; d < g->dp; d++)
          g_string_append_printf (deps, "%s%s", deps->len ? ", " : "",
                                  g->last[rank_of (g, d, p, t)]);
        g_autofree char *id = g_strdup_printf ("x%s.p%u.t%u", tag, p, t);
        g_autofree char *comm = g_strdup_printf ("dp%u.%u", p, t);
        collective (g, id, "all_to_all", comm, g->moe_size, deps);
        for (uint32_t d = 0; d < g->dp; d++)
          {
            uint32_t r = rank_of (g, d, p, t);
            g_free (after[r]);
            after[r] = g_strdup (id);
          }
      }
  if (g->tp > 1)
    for (uint32_t d = 0; d < g->dp; d++)
      {
        g_string_truncate (deps, 0);
        for (uint32_t t = 0; t < g->tp; t++)
          {
            uint32_t r = rank_of (g, d, p, t);
            g_string_append_printf (deps, "%s%s", deps->len ? ", " : "",
                                    after[r] ? after[r] : g->last[r]);
          }
        g_autofree char *id = g_strdup_printf ("a%s.d%u.p%u", tag, d, p);
        g_autofree char *comm = g_strdup_printf ("tp%u.%u", d, p);
        collective (g, id, "all_reduce", comm, g->tp_size, deps);
        for (uint32_t t = 0; t < g->tp; t++)
          {
            uint32_t r = rank_of (g, d, p, t);
            g_free (after[r]);
            after[r] = g_strdup (id);
          }
      }
}

/* Stage @from hands microbatch @m of step @s to stage @to, each rank to
 * the rank of the same tp and dp place, after the layer's communication;
 * the receiver's next compute waits for it (@recv). */
static void
hand_over (Gen *g, char pass, uint32_t s, uint32_t m, uint32_t from,
           uint32_t to, char **after, char **recv)
{
  for (uint32_t d = 0; d < g->dp; d++)
    for (uint32_t t = 0; t < g->tp; t++)
      {
        uint32_t a = rank_of (g, d, from, t), b = rank_of (g, d, to, t);
        g_autofree char *id = g_strdup_printf ("%c%u.%u.r%u", pass, s, m, a);
        if (after[a])
          {
            g_free (g->last[a]);
            g->last[a] = g_steal_pointer (&after[a]);
          }
        p2p (g, id, a, b, g->act_size);
        g_free (recv[b]);
        recv[b] = g_strdup_printf ("r%s", id);
      }
}

static void
generate (Gen *g)
{
  uint32_t n = g->tp * g->pp * g->dp, per_stage = g->layers / g->pp;
  g_autoptr (GString) deps = g_string_new (NULL);
  char **after = g_new0 (char *, n);   /* per rank: comm its next compute
                                          waits for */
  char **recv = g_new0 (char *, n);

  g->last = g_new0 (char *, n);
  fprintf (g->out, "ranks: %u\ncommunicators:\n", n);
  for (uint32_t d = 0; d < g->dp; d++)
    for (uint32_t p = 0; p < g->pp; p++)
      fprintf (g->out, "  tp%u.%u: \"%u-%u\"\n", d, p, rank_of (g, d, p, 0),
               rank_of (g, d, p, g->tp - 1));
  for (uint32_t p = 0; p < g->pp; p++)
    for (uint32_t t = 0; t < g->tp; t++)
      fprintf (g->out, "  dp%u.%u: \"%u-%u:%u\"\n", p, t, rank_of (g, 0, p, t),
               rank_of (g, g->dp - 1, p, t), g->tp * g->pp);
  fprintf (g->out, "ops:\n");

  for (uint32_t s = 0; s < g->steps; s++)
    {
      /* Forward, microbatch by microbatch, stage by stage. */
      for (uint32_t m = 0; m < g->micro; m++)
        for (uint32_t p = 0; p < g->pp; p++)
          {
            for (uint32_t l = 0; l < per_stage; l++)
              {
                for (uint32_t d = 0; d < g->dp; d++)
                  for (uint32_t t = 0; t < g->tp; t++)
                    {
                      uint32_t r = rank_of (g, d, p, t);
                      g_autofree char *id = g_strdup_printf (
                          "f%u.%u.%u.r%u", s, m, p * per_stage + l, r);
                      const char *extra = after[r] ? after[r] : recv[r];
                      compute (g, r, id, g->layer_time, extra);
                      g_clear_pointer (&after[r], g_free);
                      g_clear_pointer (&recv[r], g_free);
                    }
                g_autofree char *tag = g_strdup_printf (
                    "f%u.%u.%u", s, m, p * per_stage + l);
                layer_comm (g, tag, p, deps, after);
              }
            if (p + 1 < g->pp)
              hand_over (g, 'f', s, m, p, p + 1, after, recv);
          }
      /* Backward, last microbatch first, stage by stage from the end; the
       * gradients of a bucket of layers are all-reduced once the last
       * microbatch (m = 0) is done with them. */
      uint32_t per_bucket = MAX (1, (per_stage + g->buckets - 1)
                                        / g->buckets);
      g_autoptr (GPtrArray) buckets = g_ptr_array_new_with_free_func (g_free);
      for (uint32_t m = g->micro; m-- > 0;)
        for (uint32_t p = g->pp; p-- > 0;)
          {
            for (uint32_t l = per_stage; l-- > 0;)
              {
                for (uint32_t d = 0; d < g->dp; d++)
                  for (uint32_t t = 0; t < g->tp; t++)
                    {
                      uint32_t r = rank_of (g, d, p, t);
                      g_autofree char *id = g_strdup_printf (
                          "b%u.%u.%u.r%u", s, m, p * per_stage + l, r);
                      const char *extra = after[r] ? after[r] : recv[r];
                      compute (g, r, id, 2 * g->layer_time, extra);
                      g_clear_pointer (&after[r], g_free);
                      g_clear_pointer (&recv[r], g_free);
                    }
                g_autofree char *tag = g_strdup_printf (
                    "b%u.%u.%u", s, m, p * per_stage + l);
                layer_comm (g, tag, p, deps, after);
                uint32_t done = per_stage - l;    /* layers of the stage */
                if (m == 0 && g->dp > 1
                    && (done % per_bucket == 0 || l == 0))
                  {
                    uint32_t layers = done % per_bucket ? done % per_bucket
                                                        : per_bucket;
                    for (uint32_t t = 0; t < g->tp; t++)
                      {
                        g_string_truncate (deps, 0);
                        for (uint32_t d = 0; d < g->dp; d++)
                          g_string_append_printf (
                              deps, "%s%s", deps->len ? ", " : "",
                              g->last[rank_of (g, d, p, t)]);
                        char *id = g_strdup_printf ("g%u.%u.%u.t%u", s, p,
                                                    (done - 1) / per_bucket,
                                                    t);
                        g_autofree char *comm = g_strdup_printf ("dp%u.%u",
                                                                 p, t);
                        collective (g, id, "all_reduce", comm,
                                    g->grad_size * layers, deps);
                        g_ptr_array_add (buckets, id);
                      }
                  }
              }
            if (p > 0)
              hand_over (g, 'b', s, m, p, p - 1, after, recv);
          }
      /* The optimizer waits for the rank's gradient buckets. */
      for (uint32_t r = 0; r < n; r++)
        {
          uint32_t p = r / g->tp % g->pp, t = r % g->tp;
          g_string_truncate (deps, 0);
          for (guint k = 0; k < buckets->len; k++)
            {
              g_autofree char *tail = g_strdup_printf (".t%u", t);
              g_autofree char *head = g_strdup_printf ("g%u.%u.", s, p);
              const char *id = g_ptr_array_index (buckets, k);
              if (g_str_has_prefix (id, head) && g_str_has_suffix (id, tail))
                g_string_append_printf (deps, "%s%s", deps->len ? ", " : "",
                                        id);
            }
          if (after[r])
            g_string_append_printf (deps, "%s%s", deps->len ? ", " : "",
                                    after[r]);
          g_clear_pointer (&after[r], g_free);
          g_autofree char *id = g_strdup_printf ("o%u.r%u", s, r);
          compute (g, r, id, g->opt_time, deps->len ? deps->str : NULL);
        }
    }
  for (uint32_t r = 0; r < n; r++)
    {
      g_free (g->last[r]);
      g_free (after[r]);
      g_free (recv[r]);
    }
  g_free (g->last);
  g_free (after);
  g_free (recv);
}

/* See generator.h. */
uint64_t
weft_trace_generate (const WeftTraceJobShape *shape, FILE *out)
{
  Gen g = { shape->tp, shape->pp, shape->dp, shape->layers,
            shape->microbatches, shape->steps, shape->buckets,
            shape->tp_size, shape->activation_size, shape->grad_size,
            shape->moe_size, shape->layer_time, shape->optimizer_time, out, 0,
            NULL };

  fprintf (out, WEFT_TRACE_GENERATE_MARK " --tp %u --pp %u --dp %u --layers %u "
           "--microbatches %u --steps %u --buckets %u\n", g.tp, g.pp, g.dp,
           g.layers, g.micro, g.steps, g.buckets);
  generate (&g);
  return g.ops;
}
