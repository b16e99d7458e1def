/* weft: NCCL's protocols (LL, LL128, Simple) as costs for the executor. */
#pragma once

#include "collectives/collective.h"
#include "collectives/executor.h"

G_BEGIN_DECLS

typedef enum {
  WEFT_PROTOCOL_LL,
  WEFT_PROTOCOL_LL128,
  WEFT_PROTOCOL_SIMPLE,
  WEFT_PROTOCOL_COUNT,
} WeftProtocolKind;

/* The costs of protocol @kind for algorithm @alg (NCCL's tree constants
 * for the tree, its NVLS constants for NVLS, which runs Simple only (NULL
 * for the others), its ring constants for the rest). */
const WeftProtocol *weft_protocol_get (WeftProtocolKind kind,
                                       WeftAlgorithm alg);
gboolean weft_protocol_parse (const char *name, WeftProtocolKind *kind);
const char *weft_protocol_name (WeftProtocolKind kind);

G_END_DECLS
