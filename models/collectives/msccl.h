/* weft: MSCCL's XML algorithm files (algo, gpu, tb, step), as written by
 * msccl-tools (MSCCLang), TACCL and TE-CCL, read into weft's schedules.
 * schedule_file.c hands a file ending in ".xml" here; docs/collectives.md
 * documents what is read and how it runs. */
#pragma once

#include "collectives/collective.h"
#include "collectives/protocol.h"

G_BEGIN_DECLS

typedef struct _WeftMsccl WeftMsccl;

/* Read the MSCCL XML file at @path and check its structure: every GPU
 * once, thread blocks' peers and channels, steps' types, buffers and
 * offsets, dependencies (and that a GPU's thread blocks do not wait for
 * each other in a circle).  Bad input fails with "file:line:col: what is
 * wrong". */
WeftMsccl *weft_msccl_load (const char *path, GError **error);
void weft_msccl_free (WeftMsccl *m);

/* Its name (the algo's, else @path's), the operation its `coll` names
 * (FALSE if it names none), its GPUs, and its protocol (FALSE if it
 * names none). */
const char *weft_msccl_name (const WeftMsccl *m);
gboolean weft_msccl_op (const WeftMsccl *m, WeftOp *op);
uint32_t weft_msccl_ranks (const WeftMsccl *m);
gboolean weft_msccl_protocol (const WeftMsccl *m, WeftProtocolKind *kind);

/* The schedule of one loop over a buffer of @size bytes (nccl-tests'
 * size): chunk k of a buffer is piece k mod nchunksperloop of @size split
 * into nchunksperloop.  A thread block's steps run one after another; a
 * receive-and-send (rcs, rrs, rrcs) receives, reduces where it does, then
 * sends; a local copy (cpy) costs what a reduction of its bytes does.
 * Each channel is a tag. */
WeftSchedule *weft_msccl_build (const WeftMsccl *m, uint64_t size,
                                GError **error);

/* Whether @m computes @op, in place and out of place as the file says it
 * runs: a run on symbols, each rank's contribution to each chunk, in an
 * order the thread blocks, dependencies and pairs allow, must leave every
 * GPU's output as @op does, with no two thread blocks touching a chunk,
 * one writing it, in no fixed order.  Failures name the step's line, the
 * GPU, the thread block, the step and the chunk. */
gboolean weft_msccl_verify (const WeftMsccl *m, WeftOp op, GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (WeftMsccl, weft_msccl_free)

G_END_DECLS
