/* weft: YAML configuration trees with their source positions.
 *
 * The loader reads a YAML file into a tree of maps, sequences and scalars,
 * each remembering the file, line and column it came from, so that later
 * stages can report "file:line:col: what is wrong".  Anchors and aliases are
 * resolved; duplicate keys in a map are refused.  This is the only part of
 * weft that sees libyaml.
 */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "sim.h"

G_BEGIN_DECLS

#define WEFT_CONFIG_ERROR (weft_config_error_quark ())
GQuark weft_config_error_quark (void);

typedef enum {
  WEFT_CONFIG_ERROR_IO,         /* cannot read the file */
  WEFT_CONFIG_ERROR_SYNTAX,     /* not YAML */
  WEFT_CONFIG_ERROR_INVALID,    /* YAML, but not what weft expects */
} WeftConfigError;

typedef enum {
  WEFT_CFG_SCALAR,
  WEFT_CFG_MAP,
  WEFT_CFG_SEQ,
} WeftCfgKind;

typedef struct _WeftCfg WeftCfg;

struct _WeftCfg {
  WeftCfgKind kind;
  const char *file;             /* owned by the document */
  int line, col;                /* 1-based */
  char *text;                   /* scalars: the value; maps/seqs: NULL */
  WeftCfg **keys;               /* maps: the keys (scalars) */
  WeftCfg **items;              /* maps: the values; seqs: the items */
  size_t n;                     /* entries of a map, items of a seq */
  gboolean plain;               /* scalars: written without quotes */
  int refs;
};

/* Read @path into a tree.  On failure return NULL and set @error to
 * "path:line:col: what is wrong".  The tree is freed with weft_cfg_unref(). */
WeftCfg *weft_cfg_load_file (const char *path, GError **error);

/* As weft_cfg_load_file(), from @len bytes of @text named @name. */
WeftCfg *weft_cfg_load_data (const char *name, const char *text, size_t len,
                             GError **error);

/* Handed each item of a streamed sequence (see below) with @map, the map
 * the sequence is the value of, as far as it has been read, and @key, its
 * key there; first, as the sequence starts, with @item NULL.  Returns
 * FALSE with @error to stop. */
typedef gboolean (*WeftCfgItemFn) (const WeftCfg *map, const char *key,
                                   const WeftCfg *item, void *data,
                                   GError **error);

/* As weft_cfg_load_file(), but the items of every sequence that is the
 * value of a map key among the NULL-terminated @keys go to @fn one at a
 * time as they are read and are then freed; the sequence stays in the
 * tree, empty.  A list of a million entries then costs the memory of one.
 * Fails as weft_cfg_load_file() does, or with @fn's error. */
WeftCfg *weft_cfg_load_file_streaming (const char *path,
                                       const char *const *keys,
                                       WeftCfgItemFn fn, void *data,
                                       GError **error);
WeftCfg *weft_cfg_load_data_streaming (const char *name, const char *text,
                                       size_t len, const char *const *keys,
                                       WeftCfgItemFn fn, void *data,
                                       GError **error);

WeftCfg *weft_cfg_ref (WeftCfg *cfg);
void weft_cfg_unref (WeftCfg *cfg);

/* The value of @key in the map @map, or NULL. */
WeftCfg *weft_cfg_get (const WeftCfg *map, const char *key);

/* The key node of @key in @map (for its position), or NULL. */
WeftCfg *weft_cfg_get_key (const WeftCfg *map, const char *key);

/* Set @error to "file:line:col: " followed by the formatted message, at the
 * position of @at.  Returns FALSE, for `return weft_cfg_error (...)`. */
gboolean weft_cfg_error (GError **error, const WeftCfg *at, const char *format,
                         ...) G_GNUC_PRINTF (3, 4);

/* Prefix an error that carries no position (a unit error, say) with that of
 * @at, and move it into @error.  Returns FALSE. */
gboolean weft_cfg_error_at (GError **error, const WeftCfg *at, GError *cause);

/* "file:line:col" of @at, newly allocated. */
char *weft_cfg_where (const WeftCfg *at);

/* Check that @cfg is a map (or, for the next two, a sequence or scalar);
 * otherwise set @error naming @what. */
gboolean weft_cfg_expect_map (const WeftCfg *cfg, const char *what,
                              GError **error);
gboolean weft_cfg_expect_seq (const WeftCfg *cfg, const char *what,
                              GError **error);
gboolean weft_cfg_expect_scalar (const WeftCfg *cfg, const char *what,
                                 GError **error);

/* Check that every key of @map is one of the NULL-terminated @allowed; an
 * unknown key is reported with the closest allowed one ("did you mean"). */
gboolean weft_cfg_check_keys (const WeftCfg *map, const char *const *allowed,
                              GError **error);

/* Require @key in @map and return its value; otherwise set @error. */
WeftCfg *weft_cfg_require (const WeftCfg *map, const char *key,
                           GError **error);

/* Typed scalar readers.  Each reports a bad value at its position. */
gboolean weft_cfg_size (const WeftCfg *cfg, uint64_t *bytes, GError **error);
gboolean weft_cfg_rate (const WeftCfg *cfg, double *bytes_per_s,
                        GError **error);
gboolean weft_cfg_time (const WeftCfg *cfg, WeftTime *ps, GError **error);
gboolean weft_cfg_number (const WeftCfg *cfg, double *value, GError **error);
gboolean weft_cfg_uint (const WeftCfg *cfg, uint64_t min, uint64_t max,
                        uint64_t *value, GError **error);
gboolean weft_cfg_bool (const WeftCfg *cfg, gboolean *value, GError **error);

/* The name among the NULL-terminated @names closest to @word by edit
 * distance, if close enough to be a likely typo; otherwise NULL. */
const char *weft_closest (const char *word, const char *const *names);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (WeftCfg, weft_cfg_unref)

/* The version of libyaml weft reads YAML with. */
const char *weft_cfg_yaml_version (void);

G_END_DECLS
