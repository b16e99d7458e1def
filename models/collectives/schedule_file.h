/* weft: collective algorithms written as data: a YAML schedule file, run
 * by `weft run --algorithm FILE` like a built-in.  docs/collectives.md
 * documents the format. */
#pragma once

#include "collectives/collective.h"

G_BEGIN_DECLS

typedef struct _WeftScheduleFile WeftScheduleFile;

/* Load and check the schedule file at @path.  Bad input fails with
 * "file:line:col: what is wrong". */
WeftScheduleFile *weft_schedule_file_load (const char *path, GError **error);
void weft_schedule_file_free (WeftScheduleFile *file);

/* The operation it implements, its name, and the ranks it is written for. */
WeftOp weft_schedule_file_op (const WeftScheduleFile *file);
const char *weft_schedule_file_name (const WeftScheduleFile *file);
uint32_t weft_schedule_file_ranks (const WeftScheduleFile *file);

/* The schedule for a buffer of @size bytes (nccl-tests' size): chunk c is
 * piece c of the buffer split into the file's chunk count exactly.  It is
 * checked (matching, deadlock, bytes moved); failures name the file, the
 * rank and the step. */
WeftSchedule *weft_schedule_file_build (const WeftScheduleFile *file,
                                        uint64_t size, GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (WeftScheduleFile, weft_schedule_file_free)

G_END_DECLS
