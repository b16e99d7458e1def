/* weft: logging through GLib's structured logging. */
#include "log.h"

#include <stdio.h>
#include <string.h>

WeftLogLevel weft_log_threshold_ = WEFT_LOG_WARNING;

static const char *const level_names[] = { "error", "warning", "info", "debug" };

gboolean
weft_log_level_parse (const char *name, WeftLogLevel *level)
{
  for (guint i = 0; i < G_N_ELEMENTS (level_names); i++)
    if (g_strcmp0 (name, level_names[i]) == 0)
      {
        *level = (WeftLogLevel) i;
        return TRUE;
      }
  return FALSE;
}

static WeftLogLevel
level_of (GLogLevelFlags flags)
{
  if (flags & (G_LOG_LEVEL_ERROR | G_LOG_LEVEL_CRITICAL))
    return WEFT_LOG_ERROR;
  if (flags & G_LOG_LEVEL_WARNING)
    return WEFT_LOG_WARNING;
  if (flags & (G_LOG_LEVEL_MESSAGE | G_LOG_LEVEL_INFO))
    return WEFT_LOG_INFO;
  return WEFT_LOG_DEBUG;
}

static GLogWriterOutput
write_log (GLogLevelFlags flags, const GLogField *fields, gsize n_fields,
           gpointer user_data)
{
  (void) user_data;
  WeftLogLevel level = level_of (flags);
  const char *message = NULL;

  if (level > weft_log_threshold_)
    return G_LOG_WRITER_HANDLED;
  for (gsize i = 0; i < n_fields; i++)
    if (strcmp (fields[i].key, "MESSAGE") == 0 && fields[i].length < 0)
      message = fields[i].value;
  fprintf (stderr, "weft: %s: %s\n", level_names[level],
           message ? message : "(no message)");
  return G_LOG_WRITER_HANDLED;
}

void
weft_log_setup (WeftLogLevel level)
{
  static gsize installed = 0;
  const char *env = g_getenv ("G_MESSAGES_DEBUG");

  if (env != NULL && (strstr (env, "weft") || strstr (env, "all")))
    level = WEFT_LOG_DEBUG;
  weft_log_threshold_ = level;
  if (g_once_init_enter (&installed))
    {
      g_log_set_writer_func (write_log, NULL, NULL);
      g_once_init_leave (&installed, 1);
    }
}
