/* weft: integer expressions of parametric schedule files.
 *
 * A recursive-descent parser into a tree of nodes held in one array, and an
 * evaluator over 64-bit integers that refuses what would overflow.  From
 * the loosest binding to the tightest:
 *
 *   c ? a : b     ||     &&     == != < <= > >=     | &     << >>
 *   + -     * / %     ** (right to left)     unary - !
 *
 * `&` and `|` bind tighter than comparisons (unlike C), so that
 * "n & (n - 1) == 0" means what it reads.  `/` rounds down and `%` is the
 * modulus, never negative: (r - 1) % n is the rank before r. */
#include "collectives/expr.h"

#include <string.h>

typedef enum {
  N_NUM, N_VAR, N_NEG, N_NOT, N_CALL, N_COND,
  N_OR, N_AND, N_EQ, N_NE, N_LT, N_LE, N_GT, N_GE, N_BOR, N_BAND,
  N_SHL, N_SHR, N_ADD, N_SUB, N_MUL, N_DIV, N_MOD, N_POW,
} Op;

typedef enum { F_MIN, F_MAX, F_ABS, F_LOG2, F_ISPOW2 } Fn;

static const struct { const char *name; guint args; } fns[] = {
  [F_MIN] = { "min", 2 }, [F_MAX] = { "max", 2 }, [F_ABS] = { "abs", 1 },
  [F_LOG2] = { "log2", 1 }, [F_ISPOW2] = { "ispow2", 1 },
};

typedef struct {
  uint8_t op, fn;
  int32_t a, b, c;              /* operands: node indices, -1 none */
  int64_t value;                /* N_NUM: the number; N_VAR: the slot */
} Node;

struct _WeftExpr {
  char *text;
  GArray *nodes;                /* Node */
  int32_t root;
};

typedef struct {
  const char *text;
  guint at;
  const char *const *names;
  guint n_names;
  GArray *nodes;
  char *message;
  guint error_at;
} Parser;

void
weft_expr_free (WeftExpr *e)
{
  if (e == NULL)
    return;
  g_free (e->text);
  g_array_unref (e->nodes);
  g_free (e);
}

const char *
weft_expr_text (const WeftExpr *e)
{
  return e->text;
}

static void
skip_space (Parser *p)
{
  while (g_ascii_isspace (p->text[p->at]))
    p->at++;
}

/* Whether @token comes next (and take it). */
static gboolean
take (Parser *p, const char *token)
{
  size_t len = strlen (token);

  skip_space (p);
  if (strncmp (p->text + p->at, token, len) != 0)
    return FALSE;
  /* "<" is not the start of "<<" or "<=", "*" not of "**", and so on. */
  char next = p->text[p->at + len];
  if (len == 1 && strchr ("<>*&|=", token[0]) && next == token[0])
    return FALSE;
  if (len == 1 && strchr ("<>!", token[0]) && next == '=')
    return FALSE;
  p->at += (guint) len;
  return TRUE;
}

static int32_t
fail (Parser *p, const char *format, ...) G_GNUC_PRINTF (2, 3);

static int32_t
fail (Parser *p, const char *format, ...)
{
  va_list ap;

  if (p->message == NULL)
    {
      va_start (ap, format);
      p->message = g_strdup_vprintf (format, ap);
      va_end (ap);
      p->error_at = p->at;
    }
  return -1;
}

static int32_t
node (Parser *p, Op op, int32_t a, int32_t b, int32_t c, int64_t value)
{
  Node n = { (uint8_t) op, 0, a, b, c, value };

  if (a < 0 && op != N_NUM && op != N_VAR)
    return -1;
  if ((b < 0 && (op >= N_OR || op == N_COND)) || (c < 0 && op == N_COND))
    return -1;
  g_array_append_val (p->nodes, n);
  return (int32_t) p->nodes->len - 1;
}

static int32_t parse_cond (Parser *p);

static int32_t
parse_primary (Parser *p)
{
  skip_space (p);
  const char *at = p->text + p->at;

  if (g_ascii_isdigit (*at))
    {
      char *end;
      guint64 v = g_ascii_strtoull (at, &end, 10);
      if (v > G_MAXINT64 || g_ascii_isalpha (*end) || *end == '_')
        return fail (p, "'%.*s' is not a whole number of 64 bits",
                     (int) (end - at + (*end != '\0')), at);
      p->at += (guint) (end - at);
      return node (p, N_NUM, -1, -1, -1, (int64_t) v);
    }
  if (g_ascii_isalpha (*at) || *at == '_')
    {
      guint len = 0;
      while (g_ascii_isalnum (at[len]) || at[len] == '_')
        len++;
      p->at += len;
      if (take (p, "("))
        {
          int32_t args[2] = { -1, -1 };
          guint n = 0;
          int fn = -1;
          for (guint f = 0; f < G_N_ELEMENTS (fns); f++)
            if (strlen (fns[f].name) == len
                && strncmp (fns[f].name, at, len) == 0)
              fn = (int) f;
          if (fn < 0)
            {
              p->at -= len + 1;
              return fail (p, "no function '%.*s'; valid: min, max, abs, "
                           "log2, ispow2", (int) len, at);
            }
          if (!take (p, ")"))
            do
              {
                if (n == 2)
                  return fail (p, "%s takes %u arguments", fns[fn].name,
                               fns[fn].args);
                if ((args[n++] = parse_cond (p)) < 0)
                  return -1;
              }
            while (take (p, ","));
          else
            return fail (p, "%s takes %u arguments", fns[fn].name,
                         fns[fn].args);
          if (p->message == NULL && !take (p, ")"))
            return fail (p, "expected ',' or ')'");
          if (n != fns[fn].args)
            return fail (p, "%s takes %u argument%s, not %u", fns[fn].name,
                         fns[fn].args, fns[fn].args == 1 ? "" : "s", n);
          Node call = { N_CALL, (uint8_t) fn, args[0], args[1], -1, 0 };
          g_array_append_val (p->nodes, call);
          return (int32_t) p->nodes->len - 1;
        }
      for (guint i = 0; i < p->n_names; i++)
        if (strlen (p->names[i]) == len && strncmp (p->names[i], at, len) == 0)
          return node (p, N_VAR, -1, -1, -1, i);
      p->at -= len;
      g_autoptr (GString) known = g_string_new (NULL);
      for (guint i = 0; i < p->n_names; i++)
        g_string_append_printf (known, "%s%s", i ? ", " : "", p->names[i]);
      return fail (p, "no name '%.*s' here; known: %s", (int) len, at,
                   known->str);
    }
  if (take (p, "("))
    {
      int32_t e = parse_cond (p);
      if (e >= 0 && !take (p, ")"))
        return fail (p, "expected ')'");
      return e;
    }
  if (*at == '\0')
    return fail (p, "expected a number, a name or '(' at the end");
  return fail (p, "expected a number, a name or '(' at '%c'", *at);
}

static int32_t
parse_unary (Parser *p)
{
  if (take (p, "-"))
    return node (p, N_NEG, parse_unary (p), -1, -1, 0);
  if (take (p, "!"))
    return node (p, N_NOT, parse_unary (p), -1, -1, 0);
  return parse_primary (p);
}

static int32_t
parse_pow (Parser *p)
{
  int32_t a = parse_unary (p);

  if (a >= 0 && take (p, "**"))
    return node (p, N_POW, a, parse_pow (p), -1, 0);
  return a;
}

/* One level of left-to-right binary operators: @tokens[i] makes @ops[i]. */
static int32_t
parse_level (Parser *p, int32_t (*next) (Parser *), const char *const *tokens,
             const Op *ops, guint n)
{
  int32_t a = next (p);

  while (a >= 0)
    {
      guint i = 0;
      while (i < n && !take (p, tokens[i]))
        i++;
      if (i == n)
        break;
      a = node (p, ops[i], a, next (p), -1, 0);
    }
  return a;
}

static int32_t
parse_mul (Parser *p)
{
  static const char *const t[] = { "*", "/", "%" };
  static const Op o[] = { N_MUL, N_DIV, N_MOD };
  return parse_level (p, parse_pow, t, o, 3);
}

static int32_t
parse_add (Parser *p)
{
  static const char *const t[] = { "+", "-" };
  static const Op o[] = { N_ADD, N_SUB };
  return parse_level (p, parse_mul, t, o, 2);
}

static int32_t
parse_shift (Parser *p)
{
  static const char *const t[] = { "<<", ">>" };
  static const Op o[] = { N_SHL, N_SHR };
  return parse_level (p, parse_add, t, o, 2);
}

static int32_t
parse_bits (Parser *p)
{
  static const char *const t[] = { "&", "|" };
  static const Op o[] = { N_BAND, N_BOR };
  return parse_level (p, parse_shift, t, o, 2);
}

static int32_t
parse_cmp (Parser *p)
{
  static const char *const t[] = { "==", "!=", "<=", ">=", "<", ">" };
  static const Op o[] = { N_EQ, N_NE, N_LE, N_GE, N_LT, N_GT };
  return parse_level (p, parse_bits, t, o, 6);
}

static int32_t
parse_and (Parser *p)
{
  static const char *const t[] = { "&&" };
  static const Op o[] = { N_AND };
  return parse_level (p, parse_cmp, t, o, 1);
}

static int32_t
parse_or (Parser *p)
{
  static const char *const t[] = { "||" };
  static const Op o[] = { N_OR };
  return parse_level (p, parse_and, t, o, 1);
}

static int32_t
parse_cond (Parser *p)
{
  int32_t c = parse_or (p);

  if (c < 0 || !take (p, "?"))
    return c;
  int32_t a = parse_cond (p);
  if (a >= 0 && !take (p, ":"))
    return fail (p, "expected ':' of 'c ? a : b'");
  return node (p, N_COND, c, a, parse_cond (p), 0);
}

WeftExpr *
weft_expr_parse (const char *text, const char *const *names, guint n_names,
                 guint *at, char **message)
{
  Parser p = { text, 0, names, n_names,
               g_array_new (FALSE, FALSE, sizeof (Node)), NULL, 0 };
  int32_t root = parse_cond (&p);

  skip_space (&p);
  if (root >= 0 && text[p.at] != '\0')
    root = fail (&p, "unexpected '%c'", text[p.at]);
  if (root < 0 || p.message != NULL)
    {
      *at = p.error_at;
      *message = p.message ? p.message : g_strdup ("not an expression");
      g_array_unref (p.nodes);
      return NULL;
    }
  WeftExpr *e = g_new (WeftExpr, 1);
  e->text = g_strdup (text);
  e->nodes = p.nodes;
  e->root = root;
  return e;
}

/* ---- evaluation ---- */

typedef struct {
  const WeftExpr *e;
  const int64_t *vars;
  char *message;
} Eval;

static gboolean
eval_error (Eval *ev, const char *format, ...) G_GNUC_PRINTF (2, 3);

static gboolean
eval_error (Eval *ev, const char *format, ...)
{
  va_list ap;

  if (ev->message == NULL)
    {
      va_start (ap, format);
      ev->message = g_strdup_vprintf (format, ap);
      va_end (ap);
    }
  return FALSE;
}

static gboolean
eval (Eval *ev, int32_t i, int64_t *out)
{
  const Node *n = &g_array_index (ev->e->nodes, Node, i);
  int64_t a = 0, b = 0;

  switch (n->op)
    {
    case N_NUM:
      *out = n->value;
      return TRUE;
    case N_VAR:
      *out = ev->vars[n->value];
      return TRUE;
    case N_COND:
      if (!eval (ev, n->a, &a))
        return FALSE;
      return eval (ev, a ? n->b : n->c, out);
    case N_AND:
    case N_OR:
      if (!eval (ev, n->a, &a))
        return FALSE;
      if ((n->op == N_AND) != (a != 0))
        {
          *out = a != 0;
          return TRUE;
        }
      if (!eval (ev, n->b, &b))
        return FALSE;
      *out = b != 0;
      return TRUE;
    default:
      break;
    }
  if (!eval (ev, n->a, &a) || (n->b >= 0 && !eval (ev, n->b, &b)))
    return FALSE;
  switch (n->op)
    {
    case N_NEG:
      if (a == INT64_MIN)
        return eval_error (ev, "-(%" G_GINT64_FORMAT ") overflows", a);
      *out = -a;
      return TRUE;
    case N_NOT:
      *out = !a;
      return TRUE;
    case N_CALL:
      switch (n->fn)
        {
        case F_MIN:
          *out = MIN (a, b);
          return TRUE;
        case F_MAX:
          *out = MAX (a, b);
          return TRUE;
        case F_ABS:
          if (a == INT64_MIN)
            return eval_error (ev, "abs(%" G_GINT64_FORMAT ") overflows", a);
          *out = a < 0 ? -a : a;
          return TRUE;
        case F_LOG2:
          if (a < 1)
            return eval_error (ev, "log2(%" G_GINT64_FORMAT "): log2 takes "
                               "1 or more", a);
          *out = 63 - __builtin_clzll ((unsigned long long) a);
          return TRUE;
        default:
          *out = a > 0 && (a & (a - 1)) == 0;
          return TRUE;
        }
    case N_EQ: *out = a == b; return TRUE;
    case N_NE: *out = a != b; return TRUE;
    case N_LT: *out = a < b; return TRUE;
    case N_LE: *out = a <= b; return TRUE;
    case N_GT: *out = a > b; return TRUE;
    case N_GE: *out = a >= b; return TRUE;
    case N_BAND: *out = a & b; return TRUE;
    case N_BOR: *out = a | b; return TRUE;
    case N_SHL:
    case N_SHR:
      if (b < 0 || b > 62)
        return eval_error (ev, "a shift by %" G_GINT64_FORMAT ": shifts "
                           "take 0 to 62", b);
      if (n->op == N_SHR)
        {
          *out = a >> b;
          return TRUE;
        }
      if (a < 0 || a > (INT64_MAX >> b))
        return eval_error (ev, "%" G_GINT64_FORMAT " << %" G_GINT64_FORMAT
                           " overflows", a, b);
      *out = a << b;
      return TRUE;
    case N_ADD:
      if (__builtin_add_overflow (a, b, out))
        return eval_error (ev, "%" G_GINT64_FORMAT " + %" G_GINT64_FORMAT
                           " overflows", a, b);
      return TRUE;
    case N_SUB:
      if (__builtin_sub_overflow (a, b, out))
        return eval_error (ev, "%" G_GINT64_FORMAT " - %" G_GINT64_FORMAT
                           " overflows", a, b);
      return TRUE;
    case N_MUL:
      if (__builtin_mul_overflow (a, b, out))
        return eval_error (ev, "%" G_GINT64_FORMAT " * %" G_GINT64_FORMAT
                           " overflows", a, b);
      return TRUE;
    case N_DIV:
    case N_MOD:
      if (b == 0)
        return eval_error (ev, "%" G_GINT64_FORMAT " %c 0 divides by zero",
                           a, n->op == N_DIV ? '/' : '%');
      if (n->op == N_MOD && b < 0)
        return eval_error (ev, "%" G_GINT64_FORMAT " %% %" G_GINT64_FORMAT
                           ": the modulus must be above 0", a, b);
      if (a == INT64_MIN && b == -1)
        return eval_error (ev, "%" G_GINT64_FORMAT " / -1 overflows", a);
      {
        int64_t q = a / b, r = a % b;
        /* Round down, and keep the modulus at or above 0. */
        if (r != 0 && ((r < 0) != (b < 0)))
          {
            q--;
            r += b;
          }
        *out = n->op == N_DIV ? q : r;
      }
      return TRUE;
    case N_POW:
      if (b < 0)
        return eval_error (ev, "%" G_GINT64_FORMAT " ** %" G_GINT64_FORMAT
                           ": the exponent must be 0 or more", a, b);
      if (a == 0 || a == 1)
        *out = b == 0 ? 1 : a;
      else if (a == -1)
        *out = b % 2 ? -1 : 1;
      else
        {
          /* |a| >= 2: past 63 factors it has overflowed. */
          int64_t v = 1;
          for (int64_t k = 0; k < b; k++)
            if (__builtin_mul_overflow (v, a, &v))
              return eval_error (ev, "%" G_GINT64_FORMAT " ** %"
                                 G_GINT64_FORMAT " overflows", a, b);
          *out = v;
        }
      return TRUE;
    default:
      g_assert_not_reached ();
    }
}

gboolean
weft_expr_eval (const WeftExpr *e, const int64_t *vars, int64_t *value,
                char **message)
{
  Eval ev = { e, vars, NULL };

  if (eval (&ev, e->root, value))
    return TRUE;
  *message = ev.message;
  return FALSE;
}
