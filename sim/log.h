/* weft: logging through GLib's structured logging.
 *
 * Messages carry the log domain "weft".  weft_log_setup() installs a writer
 * that prints "weft: LEVEL: message" to stderr for levels at or above the
 * chosen threshold.  Hot paths use weft_debug(), whose arguments are not even
 * evaluated unless debug output is on.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef enum {
  WEFT_LOG_ERROR,               /* errors only */
  WEFT_LOG_WARNING,             /* the default */
  WEFT_LOG_INFO,
  WEFT_LOG_DEBUG,
} WeftLogLevel;

/* The process-wide threshold; read it through the macros below. */
extern WeftLogLevel weft_log_threshold_;

/* Parse "error", "warning", "info" or "debug".  Returns FALSE (and leaves
 * @level alone) for anything else. */
gboolean weft_log_level_parse (const char *name, WeftLogLevel *level);

/* Set the threshold and, the first time it is called in a process, install
 * weft's log writer.  The environment variable G_MESSAGES_DEBUG=weft (or all)
 * raises the threshold to debug. */
void weft_log_setup (WeftLogLevel level);

#define weft_log_enabled(level) (G_UNLIKELY (weft_log_threshold_ >= (level)))

#define weft_debug(...)                                                       \
  do {                                                                        \
    if (weft_log_enabled (WEFT_LOG_DEBUG))                                    \
      g_debug (__VA_ARGS__);                                                  \
  } while (0)

#define weft_info(...)                                                        \
  do {                                                                        \
    if (weft_log_enabled (WEFT_LOG_INFO))                                     \
      g_info (__VA_ARGS__);                                                   \
  } while (0)

G_END_DECLS
