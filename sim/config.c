/* weft: YAML configuration trees with their source positions. */
#include "config.h"

#include <stdarg.h>
#include <string.h>
#include <yaml.h>

#include "units.h"

G_DEFINE_QUARK (weft-config-error-quark, weft_config_error)

#define MAX_DEPTH 64

typedef struct {
  yaml_parser_t parser;
  const char *file;             /* interned */
  GHashTable *anchors;          /* name -> WeftCfg (a reference) */
  int depth;
  const char *const *stream_keys;   /* items of sequences under these... */
  WeftCfgItemFn stream;         /* ...go here instead of into the tree */
  void *stream_data;
  const char *text;             /* what is parsed, for the place of an
                                   error found before marks are known */
  size_t len;
} Loader;

static WeftCfg *
cfg_new (WeftCfgKind kind, const char *file, yaml_mark_t mark)
{
  WeftCfg *cfg = g_new0 (WeftCfg, 1);

  cfg->kind = kind;
  cfg->file = file;
  cfg->line = (int) mark.line + 1;
  cfg->col = (int) mark.column + 1;
  cfg->refs = 1;
  return cfg;
}

WeftCfg *
weft_cfg_ref (WeftCfg *cfg)
{
  cfg->refs++;
  return cfg;
}

void
weft_cfg_unref (WeftCfg *cfg)
{
  if (cfg == NULL || --cfg->refs > 0)
    return;
  for (size_t i = 0; i < cfg->n; i++)
    {
      if (cfg->keys)
        weft_cfg_unref (cfg->keys[i]);
      weft_cfg_unref (cfg->items[i]);
    }
  g_free (cfg->keys);
  g_free (cfg->items);
  g_free (cfg->text);
  g_free (cfg);
}

char *
weft_cfg_where (const WeftCfg *at)
{
  return g_strdup_printf ("%s:%d:%d", at->file, at->line, at->col);
}

gboolean
weft_cfg_error (GError **error, const WeftCfg *at, const char *format, ...)
{
  va_list ap;

  va_start (ap, format);
  g_autofree char *message = g_strdup_vprintf (format, ap);
  va_end (ap);
  g_set_error (error, WEFT_CONFIG_ERROR, WEFT_CONFIG_ERROR_INVALID,
               "%s:%d:%d: %s", at->file, at->line, at->col, message);
  return FALSE;
}

gboolean
weft_cfg_error_at (GError **error, const WeftCfg *at, GError *cause)
{
  weft_cfg_error (error, at, "%s", cause->message);
  g_error_free (cause);
  return FALSE;
}

static void
loader_error (Loader *loader, GError **error, yaml_mark_t mark,
              const char *message)
{
  g_set_error (error, WEFT_CONFIG_ERROR, WEFT_CONFIG_ERROR_SYNTAX,
               "%s:%zu:%zu: %s", loader->file, mark.line + 1,
               mark.column + 1, message);
}

static gboolean
next_event (Loader *loader, yaml_event_t *event, GError **error)
{
  if (!yaml_parser_parse (&loader->parser, event))
    {
      yaml_parser_t *p = &loader->parser;
      g_autofree char *message = NULL;

      if (p->error == YAML_READER_ERROR)
        {
          /* Bad bytes (not UTF-8, or control characters) are found as
           * the text is decoded, before libyaml marks a place: count it
           * from the offset, in characters, as marks do. */
          yaml_mark_t at = { 0 };
          for (size_t i = 0; i < p->problem_offset && i < loader->len; i++)
            if (loader->text[i] == '\n')
              at.line++, at.column = 0;
            else if (((unsigned char) loader->text[i] & 0xc0) != 0x80)
              at.column++;
          message = g_strdup_printf ("the file is not UTF-8 text: %s",
                                     p->problem ? p->problem : "unreadable");
          loader_error (loader, error, at, message);
          return FALSE;
        }
      if (p->context)
        message = g_strdup_printf ("YAML syntax error: %s %s", p->problem,
                                   p->context);
      else
        message = g_strdup_printf ("YAML syntax error: %s",
                                   p->problem ? p->problem : "unreadable");
      loader_error (loader, error, p->problem_mark, message);
      return FALSE;
    }
  return TRUE;
}

static WeftCfg *parse_node (Loader *loader, yaml_event_t *event,
                            GError **error);

static gboolean
remember_anchor (Loader *loader, const yaml_char_t *anchor, WeftCfg *cfg)
{
  if (anchor != NULL)
    g_hash_table_replace (loader->anchors, g_strdup ((const char *) anchor),
                          weft_cfg_ref (cfg));
  return TRUE;
}

static void
append (WeftCfg *cfg, WeftCfg *key, WeftCfg *item)
{
  if ((cfg->n & (cfg->n - 1)) == 0)
    {
      size_t cap = cfg->n ? cfg->n * 2 : 1;
      cfg->items = g_renew (WeftCfg *, cfg->items, cap);
      if (cfg->kind == WEFT_CFG_MAP)
        cfg->keys = g_renew (WeftCfg *, cfg->keys, cap);
    }
  if (cfg->kind == WEFT_CFG_MAP)
    cfg->keys[cfg->n] = key;
  cfg->items[cfg->n++] = item;
}

/* A sequence whose items go to the loader's stream function one by one,
 * with @map, the map it is the value of (as far as it is read), and are
 * not kept; the sequence stays in the tree, empty.  The function hears
 * first of the sequence itself, with a NULL item. */
static WeftCfg *
stream_seq (Loader *loader, WeftCfg *map, const char *key,
            yaml_event_t *event, GError **error)
{
  WeftCfg *seq = cfg_new (WEFT_CFG_SEQ, loader->file, event->start_mark);

  yaml_event_delete (event);
  if (!loader->stream (map, key, NULL, loader->stream_data, error))
    goto fail;
  loader->depth++;
  for (;;)
    {
      yaml_event_t child;
      if (!next_event (loader, &child, error))
        goto fail_depth;
      if (child.type == YAML_SEQUENCE_END_EVENT)
        {
          yaml_event_delete (&child);
          break;
        }
      WeftCfg *item = parse_node (loader, &child, error);
      if (item == NULL)
        goto fail_depth;
      gboolean ok = loader->stream (map, key, item, loader->stream_data,
                                    error);
      weft_cfg_unref (item);
      if (!ok)
        goto fail_depth;
    }
  loader->depth--;
  return seq;

fail_depth:
  loader->depth--;
fail:
  weft_cfg_unref (seq);
  return NULL;
}

/* Parse the node that starts with @event (which this function consumes). */
static WeftCfg *
parse_node (Loader *loader, yaml_event_t *event, GError **error)
{
  WeftCfg *cfg = NULL;

  if (loader->depth >= MAX_DEPTH)
    {
      loader_error (loader, error, event->start_mark,
                    "nested more than 64 levels deep");
      yaml_event_delete (event);
      return NULL;
    }

  switch (event->type)
    {
    case YAML_ALIAS_EVENT:
      {
        WeftCfg *target = g_hash_table_lookup (
            loader->anchors, (const char *) event->data.alias.anchor);
        if (target == NULL)
          loader_error (loader, error, event->start_mark,
                        "alias to an unknown anchor");
        else
          cfg = weft_cfg_ref (target);
        break;
      }

    case YAML_SCALAR_EVENT:
      cfg = cfg_new (WEFT_CFG_SCALAR, loader->file, event->start_mark);
      cfg->text = g_strndup ((const char *) event->data.scalar.value,
                             event->data.scalar.length);
      cfg->plain = event->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
      remember_anchor (loader, event->data.scalar.anchor, cfg);
      break;

    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT:
      {
        gboolean is_map = event->type == YAML_MAPPING_START_EVENT;
        yaml_event_type_t end_type = is_map ? YAML_MAPPING_END_EVENT
                                            : YAML_SEQUENCE_END_EVENT;
        const yaml_char_t *anchor = is_map ? event->data.mapping_start.anchor
                                           : event->data.sequence_start.anchor;

        cfg = cfg_new (is_map ? WEFT_CFG_MAP : WEFT_CFG_SEQ, loader->file,
                       event->start_mark);
        g_autofree char *anchor_name = g_strdup ((const char *) anchor);
        loader->depth++;
        for (;;)
          {
            yaml_event_t child;
            if (!next_event (loader, &child, error))
              goto fail;
            if (child.type == end_type)
              {
                yaml_event_delete (&child);
                break;
              }
            WeftCfg *key = parse_node (loader, &child, error);
            if (key == NULL)
              goto fail;
            if (!is_map)
              {
                append (cfg, NULL, key);
                continue;
              }
            if (key->kind != WEFT_CFG_SCALAR)
              {
                weft_cfg_error (error, key, "a key must be a plain word");
                weft_cfg_unref (key);
                goto fail;
              }
            WeftCfg *first = weft_cfg_get_key (cfg, key->text);
            if (first != NULL)
              {
                weft_cfg_error (error, key,
                                "duplicate key '%s' (first at line %d)",
                                key->text, first->line);
                weft_cfg_unref (key);
                goto fail;
              }
            yaml_event_t value_event;
            if (!next_event (loader, &value_event, error))
              {
                weft_cfg_unref (key);
                goto fail;
              }
            WeftCfg *value;
            if (loader->stream && value_event.type == YAML_SEQUENCE_START_EVENT
                && g_strv_contains (loader->stream_keys, key->text))
              value = stream_seq (loader, cfg, key->text, &value_event, error);
            else
              value = parse_node (loader, &value_event, error);
            if (value == NULL)
              {
                weft_cfg_unref (key);
                goto fail;
              }
            append (cfg, key, value);
          }
        loader->depth--;
        if (anchor_name)
          remember_anchor (loader, (const yaml_char_t *) anchor_name, cfg);
        break;

      fail:
        loader->depth--;
        weft_cfg_unref (cfg);
        cfg = NULL;
        break;
      }

    default:
      loader_error (loader, error, event->start_mark, "unexpected YAML event");
      break;
    }

  yaml_event_delete (event);
  return cfg;
}

static WeftCfg *
load_data (const char *name, const char *text, size_t len,
           const char *const *stream_keys, WeftCfgItemFn stream,
           void *stream_data, GError **error)
{
  Loader loader = { 0 };
  WeftCfg *root = NULL;
  yaml_event_t event;
  gboolean ok = FALSE;

  loader.file = g_intern_string (name);
  loader.stream_keys = stream_keys;
  loader.stream = stream;
  loader.stream_data = stream_data;
  loader.text = text;
  loader.len = len;
  loader.anchors = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                          (GDestroyNotify) weft_cfg_unref);
  yaml_parser_initialize (&loader.parser);
  yaml_parser_set_input_string (&loader.parser, (const unsigned char *) text,
                                len);

  /* STREAM-START, DOCUMENT-START, the root node, DOCUMENT-END. */
  if (!next_event (&loader, &event, error))
    goto out;
  yaml_event_delete (&event);
  if (!next_event (&loader, &event, error))
    goto out;
  if (event.type == YAML_STREAM_END_EVENT)
    {
      yaml_mark_t mark = event.start_mark;
      yaml_event_delete (&event);
      loader_error (&loader, error, mark, "the file is empty");
      goto out;
    }
  yaml_event_delete (&event);
  if (!next_event (&loader, &event, error))
    goto out;
  root = parse_node (&loader, &event, error);
  if (root == NULL)
    goto out;
  if (!next_event (&loader, &event, error))
    goto out;
  yaml_event_delete (&event);
  if (!next_event (&loader, &event, error))
    goto out;
  if (event.type != YAML_STREAM_END_EVENT)
    {
      yaml_mark_t mark = event.start_mark;
      yaml_event_delete (&event);
      loader_error (&loader, error, mark,
                    "more than one YAML document in the file");
      goto out;
    }
  yaml_event_delete (&event);
  ok = TRUE;

out:
  yaml_parser_delete (&loader.parser);
  g_hash_table_unref (loader.anchors);
  if (!ok)
    g_clear_pointer (&root, weft_cfg_unref);
  return root;
}

WeftCfg *
weft_cfg_load_data (const char *name, const char *text, size_t len,
                    GError **error)
{
  return load_data (name, text, len, NULL, NULL, NULL, error);
}

WeftCfg *
weft_cfg_load_data_streaming (const char *name, const char *text, size_t len,
                              const char *const *keys, WeftCfgItemFn fn,
                              void *data, GError **error)
{
  return load_data (name, text, len, keys, fn, data, error);
}

WeftCfg *
weft_cfg_load_file_streaming (const char *path, const char *const *keys,
                              WeftCfgItemFn fn, void *data, GError **error)
{
  g_autofree char *text = NULL;
  gsize len;
  g_autoptr (GError) io = NULL;

  /* A FIFO or a device would block or never end: only files are read. */
  if (g_file_test (path, G_FILE_TEST_EXISTS)
      && !g_file_test (path, G_FILE_TEST_IS_REGULAR))
    {
      g_set_error (error, WEFT_CONFIG_ERROR, WEFT_CONFIG_ERROR_IO,
                   "%s: not a regular file", path);
      return NULL;
    }
  if (!g_file_get_contents (path, &text, &len, &io))
    {
      g_set_error (error, WEFT_CONFIG_ERROR, WEFT_CONFIG_ERROR_IO,
                   "%s: cannot read the file: %s", path, io->message);
      return NULL;
    }
  return load_data (path, text, len, keys, fn, data, error);
}

WeftCfg *
weft_cfg_load_file (const char *path, GError **error)
{
  return weft_cfg_load_file_streaming (path, NULL, NULL, NULL, error);
}

WeftCfg *
weft_cfg_get_key (const WeftCfg *map, const char *key)
{
  if (map == NULL || map->kind != WEFT_CFG_MAP)
    return NULL;
  for (size_t i = 0; i < map->n; i++)
    if (strcmp (map->keys[i]->text, key) == 0)
      return map->keys[i];
  return NULL;
}

WeftCfg *
weft_cfg_get (const WeftCfg *map, const char *key)
{
  if (map == NULL || map->kind != WEFT_CFG_MAP)
    return NULL;
  for (size_t i = 0; i < map->n; i++)
    if (strcmp (map->keys[i]->text, key) == 0)
      return map->items[i];
  return NULL;
}

static const char *
kind_name (WeftCfgKind kind)
{
  switch (kind)
    {
    case WEFT_CFG_MAP:
      return "a map (key: value)";
    case WEFT_CFG_SEQ:
      return "a list";
    default:
      return "a single value";
    }
}

static gboolean
expect (const WeftCfg *cfg, WeftCfgKind kind, const char *what,
        GError **error)
{
  if (cfg->kind == kind)
    return TRUE;
  return weft_cfg_error (error, cfg, "%s should be %s, not %s", what,
                         kind_name (kind), kind_name (cfg->kind));
}

gboolean
weft_cfg_expect_map (const WeftCfg *cfg, const char *what, GError **error)
{
  return expect (cfg, WEFT_CFG_MAP, what, error);
}

gboolean
weft_cfg_expect_seq (const WeftCfg *cfg, const char *what, GError **error)
{
  return expect (cfg, WEFT_CFG_SEQ, what, error);
}

gboolean
weft_cfg_expect_scalar (const WeftCfg *cfg, const char *what, GError **error)
{
  return expect (cfg, WEFT_CFG_SCALAR, what, error);
}

static guint
edit_distance (const char *a, const char *b)
{
  size_t la = strlen (a), lb = strlen (b);
  g_autofree guint *row = g_new (guint, lb + 1);

  for (size_t j = 0; j <= lb; j++)
    row[j] = (guint) j;
  for (size_t i = 1; i <= la; i++)
    {
      guint diag = row[0];
      row[0] = (guint) i;
      for (size_t j = 1; j <= lb; j++)
        {
          guint up = row[j];
          guint cost = a[i - 1] == b[j - 1] ? 0 : 1;
          guint best = MIN (MIN (row[j] + 1, row[j - 1] + 1), diag + cost);
          diag = up;
          row[j] = best;
        }
    }
  return row[lb];
}

const char *
weft_closest (const char *word, const char *const *names)
{
  const char *best = NULL;
  guint best_d = G_MAXUINT;

  for (size_t i = 0; names[i] != NULL; i++)
    {
      guint d = edit_distance (word, names[i]);
      if (d < best_d)
        {
          best_d = d;
          best = names[i];
        }
    }
  /* A likely typo: at most a third of the word changed. */
  if (best != NULL && best_d <= MAX (1, strlen (word) / 3))
    return best;
  return NULL;
}

gboolean
weft_cfg_check_keys (const WeftCfg *map, const char *const *allowed,
                     GError **error)
{
  for (size_t i = 0; i < map->n; i++)
    {
      const char *key = map->keys[i]->text;
      gboolean known = FALSE;

      for (size_t a = 0; allowed[a] != NULL && !known; a++)
        known = strcmp (key, allowed[a]) == 0;
      if (known)
        continue;

      const char *guess = weft_closest (key, allowed);
      if (guess != NULL)
        return weft_cfg_error (error, map->keys[i],
                               "unknown key '%s'; did you mean '%s'?", key,
                               guess);
      g_autofree char *list = g_strjoinv (", ", (char **) allowed);
      return weft_cfg_error (error, map->keys[i],
                             "unknown key '%s'; valid keys: %s", key, list);
    }
  return TRUE;
}

WeftCfg *
weft_cfg_require (const WeftCfg *map, const char *key, GError **error)
{
  WeftCfg *value = weft_cfg_get (map, key);

  if (value == NULL)
    weft_cfg_error (error, map, "missing key '%s'", key);
  return value;
}

gboolean
weft_cfg_size (const WeftCfg *cfg, uint64_t *bytes, GError **error)
{
  GError *cause = NULL;

  if (!weft_cfg_expect_scalar (cfg, "a size", error))
    return FALSE;
  if (!weft_parse_size (cfg->text, bytes, &cause))
    return weft_cfg_error_at (error, cfg, cause);
  return TRUE;
}

gboolean
weft_cfg_rate (const WeftCfg *cfg, double *bytes_per_s, GError **error)
{
  GError *cause = NULL;

  if (!weft_cfg_expect_scalar (cfg, "a rate", error))
    return FALSE;
  if (!weft_parse_rate (cfg->text, bytes_per_s, &cause))
    return weft_cfg_error_at (error, cfg, cause);
  return TRUE;
}

gboolean
weft_cfg_time (const WeftCfg *cfg, WeftTime *ps, GError **error)
{
  GError *cause = NULL;

  if (!weft_cfg_expect_scalar (cfg, "a time", error))
    return FALSE;
  if (!weft_parse_time (cfg->text, ps, &cause))
    return weft_cfg_error_at (error, cfg, cause);
  return TRUE;
}

gboolean
weft_cfg_number (const WeftCfg *cfg, double *value, GError **error)
{
  GError *cause = NULL;

  if (!weft_cfg_expect_scalar (cfg, "a number", error))
    return FALSE;
  if (!weft_parse_number (cfg->text, value, &cause))
    return weft_cfg_error_at (error, cfg, cause);
  return TRUE;
}

gboolean
weft_cfg_uint (const WeftCfg *cfg, uint64_t min, uint64_t max,
               uint64_t *value, GError **error)
{
  guint64 v;

  if (!weft_cfg_expect_scalar (cfg, "a whole number", error))
    return FALSE;
  if (!g_ascii_string_to_unsigned (cfg->text, 10, min, max, &v, NULL))
    return weft_cfg_error (error, cfg,
                           "'%s' should be a whole number from %" G_GUINT64_FORMAT
                           " to %" G_GUINT64_FORMAT,
                           cfg->text, min, max);
  *value = v;
  return TRUE;
}

gboolean
weft_cfg_bool (const WeftCfg *cfg, gboolean *value, GError **error)
{
  if (!weft_cfg_expect_scalar (cfg, "true or false", error))
    return FALSE;
  if (strcmp (cfg->text, "true") == 0)
    *value = TRUE;
  else if (strcmp (cfg->text, "false") == 0)
    *value = FALSE;
  else
    return weft_cfg_error (error, cfg, "'%s' should be true or false",
                           cfg->text);
  return TRUE;
}

const char *
weft_cfg_yaml_version (void)
{
  return yaml_get_version_string ();
}
