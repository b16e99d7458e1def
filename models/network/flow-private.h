/* weft: what the flow fidelity's files share, and what its tests read. */
#pragma once

#include "network/network.h"

G_BEGIN_DECLS

/* How many links the flow model of @net leaves out of filling, which
 * cannot fill (see find_unfilled() in flow.c): counted at its first
 * transfer, 0 before, after the speed-ups are switched off, or once a
 * switch has sent a transfer of its own; 0 for the other fidelities. */
uint32_t weft_flow_links_unfilled (const WeftNetwork *net);

G_END_DECLS
