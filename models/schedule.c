/* weft: schedules. */
#include "schedule.h"

G_DEFINE_QUARK (weft-schedule-error-quark, weft_schedule_error)

WeftSchedule *
weft_schedule_new (uint32_t n_ranks)
{
  WeftSchedule *s = g_new0 (WeftSchedule, 1);

  s->n_ranks = n_ranks;
  s->n_gpus = n_ranks;
  s->steps = g_new (GArray *, MAX (n_ranks, 1));
  for (uint32_t r = 0; r < n_ranks; r++)
    s->steps[r] = g_array_new (FALSE, FALSE, sizeof (WeftStep));
  s->deps = g_array_new (FALSE, FALSE, sizeof (uint32_t));
  return s;
}

void
weft_schedule_free (WeftSchedule *s)
{
  if (s == NULL)
    return;
  for (uint32_t r = 0; r < s->n_ranks; r++)
    {
      g_array_unref (s->steps[r]);
      if (s->matches)
        g_free (s->matches[r]);
    }
  g_free (s->matches);
  g_free (s->steps);
  g_array_unref (s->deps);
  g_free (s);
}

uint32_t
weft_schedule_add (WeftSchedule *s, uint32_t rank, WeftStepKind kind,
                   uint32_t peer, uint32_t tag, uint64_t bytes,
                   const uint32_t *deps, uint32_t n_deps)
{
  WeftStep step = {
    .kind = kind,
    .peer = peer,
    .tag = tag,
    .bytes = bytes,
    .first_dep = s->deps->len,
    .n_deps = 0,
  };

  g_assert (rank < s->n_ranks);
  for (uint32_t i = 0; i < n_deps; i++)
    if (deps[i] != WEFT_NO_STEP)
      {
        g_array_append_val (s->deps, deps[i]);
        step.n_deps++;
      }
  g_array_append_val (s->steps[rank], step);
  return s->steps[rank]->len - 1;
}

uint32_t
weft_schedule_send (WeftSchedule *s, uint32_t rank, uint32_t peer,
                    uint32_t tag, uint64_t bytes, uint32_t dep)
{
  return weft_schedule_add (s, rank, WEFT_STEP_SEND, peer, tag, bytes, &dep, 1);
}

uint32_t
weft_schedule_recv (WeftSchedule *s, uint32_t rank, uint32_t peer,
                    uint32_t tag, uint64_t bytes, uint32_t dep)
{
  return weft_schedule_add (s, rank, WEFT_STEP_RECV, peer, tag, bytes, &dep, 1);
}

uint32_t
weft_schedule_reduce (WeftSchedule *s, uint32_t rank, uint64_t bytes,
                      uint32_t dep)
{
  return weft_schedule_add (s, rank, WEFT_STEP_REDUCE, 0, 0, bytes, &dep, 1);
}

uint64_t
weft_schedule_bytes_sent (const WeftSchedule *s)
{
  uint64_t total = 0;

  for (uint32_t r = 0; r < s->n_ranks; r++)
    for (guint i = 0; i < s->steps[r]->len; i++)
      {
        const WeftStep *step = weft_schedule_step (s, r, i);
        if (step->kind == WEFT_STEP_SEND)
          total += step->bytes;
      }
  return total;
}

const uint32_t *
weft_schedule_matches (const WeftSchedule *s, uint32_t rank)
{
  return s->matches ? s->matches[rank] : NULL;
}

static const char *
kind_name (WeftStepKind kind)
{
  return kind == WEFT_STEP_SEND ? "send" : kind == WEFT_STEP_RECV ? "receive"
                                                                  : "reduce";
}

/* Pair sends and receives: per (from, to, tag), in order. */
static gboolean
pair (WeftSchedule *s, GError **error)
{
  GHashTable *queues = g_hash_table_new_full (g_int64_hash, g_int64_equal,
                                              g_free,
                                              (GDestroyNotify) g_queue_free);
  gboolean ok = TRUE;

  s->matches = g_new0 (uint32_t *, MAX (s->n_ranks, 1));
  for (uint32_t r = 0; r < s->n_ranks; r++)
    {
      s->matches[r] = g_new (uint32_t, MAX (s->steps[r]->len, 1));
      for (guint i = 0; i < s->steps[r]->len; i++)
        s->matches[r][i] = WEFT_NO_STEP;
    }
  /* Queue every send under (from, to, tag), then let receives take them. */
  for (uint32_t r = 0; r < s->n_ranks && ok; r++)
    for (guint i = 0; i < s->steps[r]->len && ok; i++)
      {
        const WeftStep *step = weft_schedule_step (s, r, i);
        if (step->kind != WEFT_STEP_SEND)
          continue;
        if (step->peer >= s->n_ranks || step->peer == r)
          {
            g_set_error (error, WEFT_SCHEDULE_ERROR, 0,
                         "rank %u step %u sends to rank %u, which is %s", r, i,
                         step->peer, step->peer == r ? "itself" : "not a rank");
            ok = FALSE;
            break;
          }
        gint64 *key = g_new (gint64, 1);
        *key = ((gint64) r << 40) | ((gint64) step->peer << 16) | step->tag;
        GQueue *q = g_hash_table_lookup (queues, key);
        if (q == NULL)
          {
            q = g_queue_new ();
            g_hash_table_insert (queues, key, q);
          }
        else
          g_free (key);
        g_queue_push_tail (q, GUINT_TO_POINTER (i));
      }
  for (uint32_t r = 0; r < s->n_ranks && ok; r++)
    for (guint i = 0; i < s->steps[r]->len && ok; i++)
      {
        const WeftStep *step = weft_schedule_step (s, r, i);
        if (step->kind != WEFT_STEP_RECV)
          continue;
        gint64 key = ((gint64) step->peer << 40) | ((gint64) r << 16) | step->tag;
        GQueue *q = step->peer < s->n_ranks
                        ? g_hash_table_lookup (queues, &key)
                        : NULL;
        if (q == NULL || g_queue_is_empty (q))
          {
            g_set_error (error, WEFT_SCHEDULE_ERROR, 0,
                         "rank %u step %u receives from rank %u, which sends "
                         "it nothing to match",
                         r, i, step->peer);
            ok = FALSE;
            break;
          }
        uint32_t j = GPOINTER_TO_UINT (g_queue_pop_head (q));
        const WeftStep *send = weft_schedule_step (s, step->peer, j);
        if (send->bytes != step->bytes)
          {
            g_set_error (error, WEFT_SCHEDULE_ERROR, 0,
                         "rank %u step %u receives %" G_GUINT64_FORMAT
                         " bytes from rank %u, whose step %u sends %"
                         G_GUINT64_FORMAT,
                         r, i, step->bytes, step->peer, j, send->bytes);
            ok = FALSE;
            break;
          }
        s->matches[r][i] = j;
        s->matches[step->peer][j] = i;
      }
  /* A send left over has no receiver. */
  for (uint32_t r = 0; r < s->n_ranks && ok; r++)
    for (guint i = 0; i < s->steps[r]->len && ok; i++)
      if (weft_schedule_step (s, r, i)->kind == WEFT_STEP_SEND
          && s->matches[r][i] == WEFT_NO_STEP)
        {
          g_set_error (error, WEFT_SCHEDULE_ERROR, 0,
                       "rank %u step %u sends to rank %u, which never "
                       "receives it",
                       r, i, weft_schedule_step (s, r, i)->peer);
          ok = FALSE;
        }
  g_hash_table_unref (queues);
  return ok;
}

gboolean
weft_schedule_check (const WeftSchedule *cs, GError **error)
{
  WeftSchedule *s = (WeftSchedule *) cs;

  if (s->matches)
    {
      for (uint32_t r = 0; r < s->n_ranks; r++)
        g_free (s->matches[r]);
      g_clear_pointer (&s->matches, g_free);
    }
  for (uint32_t r = 0; r < s->n_ranks; r++)
    for (guint i = 0; i < s->steps[r]->len; i++)
      {
        const WeftStep *step = weft_schedule_step (s, r, i);
        for (uint32_t d = 0; d < step->n_deps; d++)
          {
            uint32_t on = g_array_index (s->deps, uint32_t,
                                         step->first_dep + d);
            if (on >= i)
              {
                g_set_error (error, WEFT_SCHEDULE_ERROR, 0,
                             "rank %u step %u waits for step %u, which does "
                             "not come before it",
                             r, i, on);
                return FALSE;
              }
          }
      }
  if (!pair (s, error))
    return FALSE;

  /* Run it without time: a step finishes once its dependencies have and,
   * for a receive, its send has.  Whatever never finishes is deadlocked.
   * Steps are numbered globally; a work list keeps this linear. */
  g_autofree uint64_t *offset = g_new (uint64_t, s->n_ranks + 1);
  offset[0] = 0;
  for (uint32_t r = 0; r < s->n_ranks; r++)
    offset[r + 1] = offset[r] + s->steps[r]->len;
  uint64_t total = offset[s->n_ranks];
  g_autofree uint32_t *remaining = g_new0 (uint32_t, MAX (total, 1));
  g_autofree uint64_t *out_start = g_new0 (uint64_t, total + 1);
  for (uint32_t r = 0; r < s->n_ranks; r++)
    for (guint i = 0; i < s->steps[r]->len; i++)
      {
        const WeftStep *step = weft_schedule_step (s, r, i);
        remaining[offset[r] + i] = step->n_deps
                                   + (step->kind == WEFT_STEP_RECV);
        for (uint32_t d = 0; d < step->n_deps; d++)
          out_start[offset[r] + g_array_index (s->deps, uint32_t,
                                               step->first_dep + d) + 1]++;
        if (step->kind == WEFT_STEP_SEND)
          out_start[offset[r] + i + 1]++;
      }
  for (uint64_t k = 0; k < total; k++)
    out_start[k + 1] += out_start[k];
  g_autofree uint64_t *out = g_new (uint64_t, MAX (out_start[total], 1));
  g_autofree uint64_t *fill = g_memdup2 (out_start, (total + 1) * sizeof (uint64_t));
  for (uint32_t r = 0; r < s->n_ranks; r++)
    for (guint i = 0; i < s->steps[r]->len; i++)
      {
        const WeftStep *step = weft_schedule_step (s, r, i);
        for (uint32_t d = 0; d < step->n_deps; d++)
          {
            uint64_t from = offset[r] + g_array_index (s->deps, uint32_t,
                                                       step->first_dep + d);
            out[fill[from]++] = offset[r] + i;
          }
        if (step->kind == WEFT_STEP_SEND)
          out[fill[offset[r] + i]++] = offset[step->peer] + s->matches[r][i];
      }
  g_autofree uint64_t *queue = g_new (uint64_t, MAX (total, 1));
  uint64_t head = 0, tail = 0;
  for (uint64_t k = 0; k < total; k++)
    if (remaining[k] == 0)
      queue[tail++] = k;
  while (head < tail)
    {
      uint64_t k = queue[head++];
      for (uint64_t e = out_start[k]; e < out_start[k + 1]; e++)
        if (--remaining[out[e]] == 0)
          queue[tail++] = out[e];
    }
  gboolean ok = TRUE;
  for (uint32_t r = 0; r < s->n_ranks && ok; r++)
    for (guint i = 0; i < s->steps[r]->len && ok; i++)
      if (remaining[offset[r] + i] > 0)
        {
          const WeftStep *step = weft_schedule_step (s, r, i);
          char peer[16] = "";
          if (step->kind != WEFT_STEP_REDUCE)
            g_snprintf (peer, sizeof peer, "%u", step->peer);
          g_set_error (error, WEFT_SCHEDULE_ERROR, 0,
                       "the schedule deadlocks: rank %u step %u (%s%s%s) can "
                       "never run",
                       r, i, kind_name (step->kind),
                       step->kind == WEFT_STEP_SEND ? " to rank "
                       : step->kind == WEFT_STEP_RECV ? " from rank " : "",
                       peer);
          ok = FALSE;
        }
  return ok;
}
