/* weft: a schedule file's program for any number of ranks (version 2 of
 * the format): the steps every rank r of n takes, with loops, conditions
 * and expressions in r, n, the file's own names and the loops' indices,
 * expanded into each rank's steps once n is known.  schedule_file.c reads
 * the rest of the file; docs/collectives.md documents the format. */
#pragma once

#include "collectives/schedule.h"
#include "config.h"

G_BEGIN_DECLS

typedef struct _WeftProgram WeftProgram;

/* Read @root's `let`, `requires`, `chunks` and `program` (the rest of the
 * file is the caller's).  Bad input fails with "file:line:col: ...". */
WeftProgram *weft_program_load (const WeftCfg *root, GError **error);
void weft_program_free (WeftProgram *program);

/* One step of one rank, as expanded: its chunks (indices below the chunk
 * count) and the earlier steps of the rank it waits for. */
typedef struct {
  WeftStepKind kind;
  uint32_t peer, tag;
  const uint32_t *chunks;
  uint32_t n_chunks;
  const uint32_t *deps;
  uint32_t n_deps;
  int line, col;                /* where the file writes it */
} WeftProgramStep;

typedef void (*WeftProgramSink) (void *data, uint32_t rank,
                                 const WeftProgramStep *step);

/* Expand @program for @n ranks: its chunk count into @chunks, then every
 * step of rank 0, 1, ... in order into @sink.  Fails, naming the line,
 * the rank and the loops' indices, where a requirement does not hold for
 * @n, an expression cannot be evaluated, a peer or chunk is out of range,
 * or the steps and loop turns pass @max_steps in all. */
gboolean weft_program_expand (const WeftProgram *program, uint32_t n,
                              uint64_t max_steps, uint32_t *chunks,
                              WeftProgramSink sink, void *data,
                              GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (WeftProgram, weft_program_free)

G_END_DECLS
