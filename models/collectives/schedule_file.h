/* weft: collective algorithms written as data: a YAML schedule file, or
 * an MSCCL XML file (msccl.h), run by `weft run --algorithm FILE` like a
 * built-in.  docs/collectives.md documents both. */
#pragma once

#include "collectives/collective.h"
#include "collectives/protocol.h"

G_BEGIN_DECLS

typedef struct _WeftScheduleFile WeftScheduleFile;

/* Load and check the schedule file at @path: MSCCL XML if its name ends
 * in ".xml", else weft's YAML.  Bad input fails with "file:line:col: what
 * is wrong". */
WeftScheduleFile *weft_schedule_file_load (const char *path, GError **error);
void weft_schedule_file_free (WeftScheduleFile *file);

/* The operation it implements, its name, and the ranks it is written for.
 * An MSCCL file need not name its operation (has_op FALSE): the caller
 * sets it before verifying or running it. */
WeftOp weft_schedule_file_op (const WeftScheduleFile *file);
gboolean weft_schedule_file_has_op (const WeftScheduleFile *file);
void weft_schedule_file_set_op (WeftScheduleFile *file, WeftOp op);
/* The protocol the file asks for (MSCCL's `proto`), or FALSE. */
gboolean weft_schedule_file_protocol (const WeftScheduleFile *file,
                                      WeftProtocolKind *kind);
const char *weft_schedule_file_name (const WeftScheduleFile *file);
uint32_t weft_schedule_file_ranks (const WeftScheduleFile *file);

/* Whether the file is a program for any number of ranks (format version
 * 2), whose ranks are 0 until it is expanded for a number. */
gboolean weft_schedule_file_parametric (const WeftScheduleFile *file);

/* Make the file's steps for @n ranks: a program's expansion (again for
 * each @n); a file written for a number of ranks fails unless it is @n.
 * Failures name the line, the rank and the loops' indices. */
gboolean weft_schedule_file_expand (WeftScheduleFile *file, uint32_t n,
                                    GError **error);

/* The schedule for a buffer of @size bytes (nccl-tests' size): chunk c is
 * piece c of the buffer split into the file's chunk count exactly.  It is
 * checked (matching, deadlock); failures name the file, the rank and the
 * step. */
WeftSchedule *weft_schedule_file_build (const WeftScheduleFile *file,
                                        uint64_t size, GError **error);

/* Whether the schedule computes its operation: a run of it on symbols
 * (each rank's contribution to each chunk) in an order its dependencies
 * and pairs allow ends with every rank's buffer as the operation leaves
 * it (all_reduce: every chunk the sum of every rank's, each once; the
 * other operations likewise), and no two steps of a rank that touch a
 * chunk, one writing it, are left to run in either order.  A receive that
 * a reduce waits for and names a chunk of is added into the buffer by
 * that reduce; any other receive is copied into it.  Failures name the
 * file's line, the rank, the step and the chunk. */
gboolean weft_schedule_file_verify (const WeftScheduleFile *file,
                                    GError **error);

/* The most chunks, over all ranks' buffers, the check follows (each a few
 * words): a file over it is refused, not checked. */
#define WEFT_CHECK_CHUNKS (1u << 24)

/* The same check of a built-in algorithm's schedule @s of @op over a
 * buffer of @size bytes, each byte a chunk: @s must keep its steps'
 * regions (weft_schedule_track_regions()).  Its switch ranks (NVLS) start
 * with a sum of nothing and may end with anything.
 * Failures name @name, the rank, the step and the byte. */
gboolean weft_schedule_verify_regions (const WeftSchedule *s, WeftOp op,
                                       uint64_t size, const char *name,
                                       GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (WeftScheduleFile, weft_schedule_file_free)

G_END_DECLS
