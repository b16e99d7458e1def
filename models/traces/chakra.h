/* weft: MLCommons Chakra execution traces, the format ASTRA-sim replays.
 *
 * A job's trace is one file per rank, <prefix>.<rank>.et: a sequence of
 * protobuf messages, each preceded by its length as a varint, a
 * GlobalMetadata first and then Node messages.  weft reads COMP nodes
 * (compute for duration_micros; with is_cpu_op, a wait that leaves the GPU
 * free), COMM_COLL nodes (comm_type, comm_size, pg_name), COMM_SEND and
 * COMM_RECV nodes (comm_src, comm_dst, comm_tag, comm_size), and passes
 * other nodes' dependencies through, with ctrl_deps and data_deps alike.
 * docs/trace-format.md says how they map onto weft's ops. */
#pragma once

#include "traces/trace.h"

G_BEGIN_DECLS

/* Read job @job of @t from its Chakra files (job->chakra): append its ops
 * and their slot dependencies.  @comms maps a process group name to its
 * ranks (GArray of uint32_t job ranks); a collective with no pg_name runs
 * on every rank of the job.  The k-th collective on a group on each of its
 * ranks is one op.  Collectives take @algorithm and @protocol.  A file that
 * is not a Chakra trace, a dependency on a node not in the file, a cycle,
 * an unknown process group or collectives that do not line up across
 * ranks fail with "file: node N: what is wrong". */
gboolean weft_chakra_read (WeftTrace *t, uint32_t job, GHashTable *comms,
                           int algorithm, int protocol, GError **error);

/* The first line of the <prefix>.yaml files weft writes. */
#define WEFT_CHAKRA_MARK "# Chakra execution traces written by weft"

/* Write job @job of @t as Chakra files <prefix>.<rank>.et, and beside them
 * <prefix>.yaml, a trace that replays them (the ranks and the process
 * groups as communicators).  Durations are whole microseconds in Chakra:
 * others are rounded.  Algorithms, protocols and `at` are not carried.
 * The files appear all together once all are whole, or none does. */
gboolean weft_chakra_write (const WeftTrace *t, uint32_t job,
                            const char *prefix, GError **error);

/* Whether weft_chakra_write() of @job with @prefix may write its files
 * (weft_file_may_write()): none is one of @inputs, and <prefix>.yaml is
 * weft's own or absent, and the rank files are absent unless it is weft's,
 * or @force. */
gboolean weft_chakra_may_write (const WeftTrace *t, uint32_t job,
                                const char *prefix, const char *const *inputs,
                                gboolean force, GError **error);

/* The version of protobuf-c weft reads and writes Chakra files with. */
const char *weft_chakra_protobuf_version (void);

G_END_DECLS
