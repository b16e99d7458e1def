/* weft: routes remembered.  A collective asks for the same few routes over
 * and over (every chunk of every step), so routing keeps the recent ones
 * in a table that grows with the GPUs, never with their pairs. */
#pragma once

#include <glib.h>
#include <stdint.h>

G_BEGIN_DECLS

typedef struct _WeftRouteMemo WeftRouteMemo;

/* What a remembered route is: the links of (origin, src, dst), the
 * first hops of (src, dst, 0), or, in words, the one least-cost choice
 * for (origin, src, dst) of staying inside the server or of a way out of
 * the source's and into the destination's (routing.c). */
typedef enum {
  WEFT_MEMO_PATH = 1,
  WEFT_MEMO_FIRST = 2,
  WEFT_MEMO_CHOICE = 3,
} WeftMemoKind;

/* A table for a fabric of @gpus GPUs: it starts small (a network built to
 * try one collective on a few GPUs asks for few routes) and doubles while
 * half full, up to four slots a GPU (at least 65,536, at most 4 M). */
WeftRouteMemo *weft_route_memo_new (uint32_t gpus);
void weft_route_memo_free (WeftRouteMemo *memo);

/* Whether @memo (which may be NULL: remember nothing) holds the route
 * (@kind, @a, @b, @c); if so its links replace the contents of @links
 * (uint32_t). */
gboolean weft_route_memo_get (WeftRouteMemo *memo, WeftMemoKind kind,
                              uint32_t a, uint32_t b, uint32_t c,
                              GArray *links);

/* Remember @links as the route (@kind, @a, @b, @c), in place of the less
 * recently used route of the two slots it may take.  Routes longer than
 * a slot holds are not remembered. */
void weft_route_memo_put (WeftRouteMemo *memo, WeftMemoKind kind, uint32_t a,
                          uint32_t b, uint32_t c, const GArray *links);

/* Bytes a table for a fabric of @gpus GPUs holds at most. */
size_t weft_route_memo_bound (uint32_t gpus);

/* Bytes @memo holds (0 for NULL). */
size_t weft_route_memo_memory (const WeftRouteMemo *memo);

G_END_DECLS
