/* weft: name patterns such as "gpu[0-7]" or "node[0-3]/nic[0,2,4-5]". */
#pragma once

#include <glib.h>
#include <stdint.h>

G_BEGIN_DECLS

/* The most names one pattern may expand to. */
#define WEFT_NAMES_MAX 10000000

/* Append to @out (of g_free'd strings) every name @pattern stands for, in
 * order: the first bracket varies slowest.  A bracket holds comma-separated
 * numbers and ranges "a-b" (a <= b).  On a malformed pattern return FALSE
 * with a message that has no position. */
gboolean weft_names_expand (const char *pattern, GPtrArray *out,
                            GError **error);

/* The same, for a pattern that may stand for @max names at most (those
 * of the nodes there are, say): one that stands for more is refused
 * before any name is made. */
gboolean weft_names_expand_at_most (const char *pattern, uint64_t max,
                                    GPtrArray *out, GError **error);

G_END_DECLS
