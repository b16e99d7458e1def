/* weft: how the process takes memory from the system.
 *
 * A large run writes gigabytes it has never touched: the schedule, the
 * executor's image of it, the network's state.  Each page of it is faulted
 * in and zeroed by the kernel at first touch, and under a hypervisor a
 * fault costs many microseconds; pages of 2 MiB (transparent huge pages)
 * take one fault where 4 KiB pages take 512.  These calls ask for them
 * where the system leaves it to the program (THP "madvise" mode), and
 * tune malloc() to keep what it is given.  None changes a result. */
#pragma once

#include <glib.h>
#include <stddef.h>

/* Have malloc() keep large blocks in the heap for reuse instead of mapping
 * and unmapping each: a sweep builds a simulation afresh for every
 * candidate and size, and pages mapped anew are faulted in and zeroed one
 * at a time at every run.  Also readies the heap's first 128 MiB in huge
 * pages, as weft_memory_reserve() does.  For programs to call once as
 * they start; with a C library other than glibc it does nothing. */
void weft_memory_tune (void);

/* Make room for @bytes more at the top of malloc()'s heap, in pages
 * advised to be huge, and keep it: the blocks a large run allocates next
 * come from there.  For a caller that is about to allocate that much in
 * many blocks, after weft_memory_tune().  Returns whether the room is
 * there; does nothing where malloc() is not glibc's own (under valgrind
 * or AddressSanitizer) or the system has no huge pages. */
gboolean weft_memory_reserve (size_t bytes);

/* Advise the whole 2 MiB pages inside @block (@bytes long, not yet
 * touched) to be huge: for blocks too large for the heap, which malloc()
 * maps on their own. */
void weft_memory_advise (void *block, size_t bytes);

/* Bytes of memory the process has in RAM now (its resident set), or 0
 * where the system does not say. */
size_t weft_memory_resident (void);

/* The most bytes of memory the process has had in RAM at once (its peak
 * resident set), or 0 where the system does not say. */
size_t weft_memory_peak (void);

/* Bytes of memory the system could give without swapping (Linux's
 * MemAvailable), or 0 where it does not say. */
size_t weft_memory_available (void);

/* Blocks from this size are worth advising or reserving for. */
#define WEFT_MEMORY_HUGE ((size_t) 4 << 20)
