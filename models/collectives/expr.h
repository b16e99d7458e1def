/* weft: integer expressions of a parametric schedule file, such as
 * "(r + 1) % n" or "2 ** k", compiled once and evaluated for each rank and
 * loop index.  docs/collectives.md gives the grammar. */
#pragma once

#include <glib.h>
#include <stdint.h>

G_BEGIN_DECLS

typedef struct _WeftExpr WeftExpr;

/* Compile @text, whose names are @names[0 .. n_names - 1] (a value each
 * at evaluation, in that order) and the functions min, max, abs, log2 and
 * ispow2.  NULL on an error, with @message set and @at the offset in
 * @text where it lies. */
WeftExpr *weft_expr_parse (const char *text, const char *const *names,
                           guint n_names, guint *at, char **message);
void weft_expr_free (WeftExpr *expr);

/* The value of @expr with @vars the values of its names.  FALSE, with
 * @message set, on a division by zero, a negative modulus or exponent, the
 * log2 of a number below 1, or a result beyond 64 bits. */
gboolean weft_expr_eval (const WeftExpr *expr, const int64_t *vars,
                         int64_t *value, char **message);

/* The text @expr was compiled from. */
const char *weft_expr_text (const WeftExpr *expr);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (WeftExpr, weft_expr_free)

G_END_DECLS
