/* weft: how the process takes memory from the system (see memory.h). */
#define _GNU_SOURCE
#include "memory.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#include <sys/mman.h>
#endif

/* The size of a huge page on x86-64 and arm64 with 4 KiB pages. */
#define HUGE_PAGE ((uintptr_t) 2 << 20)

/* The heap grows by blocks of this size when room is made: under the
 * threshold from which malloc() maps a block on its own. */
#define PIECE ((size_t) 128 << 20)
#define MMAP_THRESHOLD ((size_t) 256 << 20)

void
weft_memory_tune (void)
{
#ifdef __GLIBC__
  /* Blocks under 256 MiB from the heap, and up to 512 MiB of free heap
   * kept: a sweep of many sizes frees and takes again schedules of the
   * same size, and each time the system gives memory back it is paid for
   * again in page faults.  One heap for all threads: a thread's own heap
   * is mapped in pieces of at most 64 MiB and gives back what it frees,
   * and the simulations that run side by side allocate little once under
   * way. */
  mallopt (M_MMAP_THRESHOLD, (int) MMAP_THRESHOLD);
  mallopt (M_TRIM_THRESHOLD, 512 << 20);
  mallopt (M_ARENA_MAX, 1);
  /* The first piece of the heap readied at once, in huge pages: a run of
   * a few hundred MiB writes most of its memory before any part of it is
   * large enough to ask (the schedule asks from 32 MiB on), and would
   * take it a 4 KiB page fault at a time. */
  weft_memory_reserve (PIECE);
#endif
}

#if defined(__GLIBC__) && defined(MADV_HUGEPAGE)
G_LOCK_DEFINE_STATIC (heap);

/* Advise [lo, hi) rounded inward to whole huge pages. */
static void
advise (uintptr_t lo, uintptr_t hi)
{
  lo = (lo + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
  hi &= ~(HUGE_PAGE - 1);
  if (hi > lo)
    (void) madvise ((void *) lo, hi - lo, MADV_HUGEPAGE);
}

/* Whether @block lies in the heap that sbrk() grows (not in a mapping of
 * its own, nor in another allocator's memory). */
static gboolean
in_heap (const void *block, size_t bytes)
{
  return (uintptr_t) block + bytes <= (uintptr_t) sbrk (0);
}
#endif

gboolean
weft_memory_reserve (size_t bytes)
{
#if defined(__GLIBC__) && defined(MADV_HUGEPAGE)
  gboolean glibc = TRUE;

  G_LOCK (heap);
  struct mallinfo2 info = mallinfo2 ();
  if (info.keepcost < bytes)
    {
      /* Blocks carved from the top, @bytes of them (which grows the heap
       * by what the top lacks), and freed again merge back into it; with
       * trimming off, it keeps them.  Blocks that free chunks below the
       * top can hold count for nothing.  Where malloc() is not glibc's,
       * glibc's heap does not grow. */
      uintptr_t top = (uintptr_t) sbrk (0) - info.keepcost;
      size_t want = (bytes + PIECE - 1) / PIECE;
      size_t most = want + 64, got = 0, grown = 0;
      void **blocks = malloc (most * sizeof *blocks);
      mallopt (M_TRIM_THRESHOLD, -1);
      while (blocks != NULL && grown < want && got < most)
        {
          void *block = malloc (PIECE);
          if (block == NULL)
            break;
          blocks[got++] = block;
          if (got == 1 && mallinfo2 ().uordblks < info.uordblks + PIECE)
            {
              glibc = FALSE;
              break;
            }
          grown += (uintptr_t) block >= top;
        }
      while (got > 0)
        free (blocks[--got]);
      free (blocks);
      info = mallinfo2 ();
    }
  uintptr_t end = (uintptr_t) sbrk (0);
  if (glibc && info.keepcost > 0 && info.keepcost <= end)
    advise (end - info.keepcost, end);
  G_UNLOCK (heap);
  return glibc && info.keepcost >= bytes;
#else
  (void) bytes;
  return FALSE;
#endif
}

void
weft_memory_advise (void *block, size_t bytes)
{
#if defined(__GLIBC__) && defined(MADV_HUGEPAGE)
  if (block != NULL && bytes >= WEFT_MEMORY_HUGE && !in_heap (block, bytes))
    advise ((uintptr_t) block, (uintptr_t) block + bytes);
#else
  (void) block, (void) bytes;
#endif
}

size_t
weft_memory_resident (void)
{
  g_autofree char *text = NULL;
  unsigned long long size, resident;

  /* statm: the sizes in pages, the resident set second. */
  if (!g_file_get_contents ("/proc/self/statm", &text, NULL, NULL)
      || sscanf (text, "%llu %llu", &size, &resident) != 2)
    return 0;
  return (size_t) resident * (size_t) sysconf (_SC_PAGESIZE);
}

size_t
weft_memory_peak (void)
{
  struct rusage usage;

  /* Linux counts ru_maxrss in KiB. */
  if (getrusage (RUSAGE_SELF, &usage) != 0 || usage.ru_maxrss <= 0)
    return 0;
  return (size_t) usage.ru_maxrss * 1024;
}

size_t
weft_memory_available (void)
{
  g_autofree char *text = NULL;

  if (!g_file_get_contents ("/proc/meminfo", &text, NULL, NULL))
    return 0;
  const char *line = strstr (text, "MemAvailable:");
  unsigned long long kib;
  if (line == NULL || sscanf (line, "MemAvailable: %llu kB", &kib) != 1)
    return 0;
  return (size_t) kib * 1024;
}
