/* Properties that every fabric a user may write should have, each checked
 * on the random case of one seed (fabric_props.c): the Check suite
 * test_properties.c runs a few hundred cases of each, weft-bench
 * properties as many as it is asked. */
#pragma once

#include <glib.h>
#include <stdint.h>

G_BEGIN_DECLS

typedef enum {
  FABRIC_PASS,                  /* the property held */
  FABRIC_SKIP,                  /* the case did not qualify: refused as
                                   it should be, or nothing to compare */
  FABRIC_FAIL,                  /* the property did not hold */
} FabricVerdict;

/* Check a property on the case of @seed; on FABRIC_FAIL, @why says what
 * went wrong, with the case's scenario text. */
typedef FabricVerdict (*FabricCheck) (uint64_t seed, GString *why);

typedef struct {
  const char *name;
  const char *says;             /* the property, in a line */
  FabricCheck check;
  guint cases;                  /* the suite runs this many by default */
  guint min_pass;               /* percent of them that must qualify */
} FabricProperty;

/* Every property, in a fixed order; the ones that other changes are to
 * make true only with WEFT_PENDING_PROPERTIES defined. */
extern const FabricProperty fabric_properties[];
extern const guint fabric_n_properties;

/* The seed of case @i of property @p under the run's @seed: each property
 * draws cases of its own. */
uint64_t fabric_property_seed (uint64_t seed, guint p, guint i);

G_END_DECLS
