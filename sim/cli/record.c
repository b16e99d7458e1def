/* weft: a run's row in the results database; see record.h. */
#include "record.h"
#include "cli.h"

#include <stdio.h>

int
weft_record_begin (WeftRecord *rec, const char *db_path,
                   const WeftRunInfo *info, const WeftTopology *topo,
                   const char *const *keys, const char *const *values,
                   guint n, const volatile int *interrupt)
{
  g_autoptr (GError) error = NULL;

  rec->db_path = db_path ? db_path : "weft.db";
  rec->db = weft_db_open (rec->db_path, &error);
  if (rec->db == NULL)
    {
      fprintf (stderr, "weft run: %s\n", error->message);
      return WEFT_EXIT_USAGE;
    }
  rec->wall_start = g_get_monotonic_time ();
  rec->id = weft_db_begin_run (rec->db, info, &error);
  if (rec->id == 0)
    {
      fprintf (stderr, "weft run: %s\n", error->message);
      return WEFT_EXIT_FAILURE;
    }
  /* The run is there, saying `running`: a signal from here on marks it
   * interrupted, even while its topology is being written. */
  weft_db_set_interrupt (rec->db, interrupt);
  if (!weft_db_write_topology (rec->db, rec->id, topo, &error)
      || (n > 0 && !weft_db_set_params (rec->db, rec->id, keys, values, n,
                                        &error)))
    {
      if (g_error_matches (error, WEFT_DB_ERROR, WEFT_DB_ERROR_INTERRUPTED))
        return weft_record_interrupted (rec, 0);
      fprintf (stderr, "weft run: %s\n", error->message);
      weft_record_end (rec, "failed", 0, error->message);
      return WEFT_EXIT_FAILURE;
    }
  rec->wall_start = g_get_monotonic_time ();
  return WEFT_EXIT_OK;
}

void
weft_record_end (const WeftRecord *rec, const char *status, uint64_t events,
                 const char *why)
{
  weft_db_end_run (rec->db, rec->id, status,
                   (g_get_monotonic_time () - rec->wall_start) / 1e6, events,
                   NULL);
  /* What the user was told, kept with the run. */
  if (why != NULL)
    weft_db_fail_run (rec->db, rec->id, why, NULL);
}

int
weft_record_interrupted (const WeftRecord *rec, uint64_t events)
{
  fflush (stdout);
  fprintf (stderr, "\nweft run: interrupted; run %" G_GINT64_FORMAT
           " is marked interrupted in %s\n", rec->id, rec->db_path);
  weft_record_end (rec, "interrupted", events, NULL);
  return 130;
}

void
weft_record_clear (WeftRecord *rec)
{
  g_clear_pointer (&rec->db, weft_db_close);
}
