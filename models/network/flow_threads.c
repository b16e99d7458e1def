/* weft: threads that fill the flow fidelity's groups too.
 *
 * Groups share no link and no flow, so threads can fill them at once,
 * each with a solver of its own, and the rates are the same to the last
 * bit whichever thread fills a group.  The simulating thread fills parts
 * of the groups with the workers, each taking up the next part when it
 * is free, and waits for them all before it goes on.
 */
#include "network/flow-private.h"

#include <pthread.h>

struct _Worker {
  FlowNet *f;
  pthread_t thread;
  pthread_mutex_t lock;         /* POSIX's, which thread checkers know */
  pthread_cond_t cond;
  gboolean posted;              /* set by the simulating thread, cleared
                                   by the worker when the parts are all
                                   taken and its own filled */
  gboolean quit;
  WeftMaxmin *solver;
};

/* Fill parts of the groups with solver @m until none is left. */
static void
fill_parts (FlowNet *f, WeftMaxmin *m)
{
  const uint32_t *ps = f->part_start.v;
  uint32_t n_parts = f->part_start.n - 1;

  for (uint32_t p; (p = atomic_fetch_add (&f->next_part, 1)) < n_parts;)
    weft_flow_fill_range (f, m, ps[p], ps[p + 1]);
}

static void *
worker_main (void *data)
{
  Worker *k = data;

  pthread_mutex_lock (&k->lock);
  for (;;)
    {
      while (!k->posted && !k->quit)
        pthread_cond_wait (&k->cond, &k->lock);
      if (!k->posted)
        break;
      pthread_mutex_unlock (&k->lock);
      fill_parts (k->f, k->solver);
      pthread_mutex_lock (&k->lock);
      k->posted = FALSE;
      pthread_cond_signal (&k->cond);
    }
  pthread_mutex_unlock (&k->lock);
  return NULL;
}

static void
workers_start (FlowNet *f)
{
  f->n_workers = f->threads - 1;
  f->workers = g_new0 (Worker, f->n_workers);
  for (uint32_t i = 0; i < f->n_workers; i++)
    {
      Worker *k = &f->workers[i];
      k->f = f;
      k->solver = weft_maxmin_new ();
      pthread_mutex_init (&k->lock, NULL);
      pthread_cond_init (&k->cond, NULL);
      if (pthread_create (&k->thread, NULL, worker_main, k) != 0)
        g_error ("weft: cannot start a thread");
    }
}

void
weft_flow_workers_stop (FlowNet *f)
{
  if (f->workers == NULL)
    return;
  for (uint32_t i = 0; i < f->n_workers; i++)
    {
      Worker *k = &f->workers[i];
      pthread_mutex_lock (&k->lock);
      k->quit = TRUE;
      pthread_cond_signal (&k->cond);
      pthread_mutex_unlock (&k->lock);
      pthread_join (k->thread, NULL);
      pthread_mutex_destroy (&k->lock);
      pthread_cond_destroy (&k->cond);
      weft_maxmin_free (k->solver);
    }
  g_free (f->workers);
}

/* Parts of the groups per thread: enough that a thread that finds its
 * parts slower to fill (the other's caches hold what was just taken)
 * takes fewer, few enough that taking one costs nothing.  Each part
 * holds whole groups, one at least. */
#define PARTS_PER_THREAD 16

/* Fill the @n_groups sorted groups on this thread and the workers, each
 * taking up the next part of them when it is free. */
void
weft_flow_fill_parallel (FlowNet *f, uint32_t n_groups)
{
  const uint32_t *fs = f->group_start.v, *ls = f->link_group_start.v;
  uint64_t total = (uint64_t) f->affected.n + f->touched.n;

  if (f->workers == NULL)
    workers_start (f);
  uint32_t threads = f->n_workers + 1, most = threads * PARTS_PER_THREAD;
  ids_resize (&f->part_start, most + 1);
  uint32_t *ps = f->part_start.v, n_parts = 0;
  ps[0] = 0;
  for (uint32_t p = 1, g = 0; p < most && g < n_groups; p++)
    {
      uint64_t share = total * p / most;
      while (g < n_groups && (uint64_t) fs[g] + ls[g] < share)
        g++;
      g = MIN (g + 1, n_groups);
      ps[++n_parts] = g;
    }
  if (ps[n_parts] < n_groups)
    ps[++n_parts] = n_groups;
  f->part_start.n = n_parts + 1;
  atomic_store (&f->next_part, 0);
  for (uint32_t t = 1; t < threads; t++)
    {
      Worker *k = &f->workers[t - 1];
      pthread_mutex_lock (&k->lock);
      k->posted = TRUE;
      pthread_cond_signal (&k->cond);
      pthread_mutex_unlock (&k->lock);
    }
  fill_parts (f, f->solver);
  for (uint32_t t = 1; t < threads; t++)
    {
      Worker *k = &f->workers[t - 1];
      pthread_mutex_lock (&k->lock);
      while (k->posted)
        pthread_cond_wait (&k->cond, &k->lock);
      pthread_mutex_unlock (&k->lock);
    }
}

