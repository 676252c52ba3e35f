/*
 * CNATS: the NATS C client (libnats 3.x, pkg-config libnats; apt libnats-dev), the
 * cluster's backplane. Swift imports nats.h directly; this header only gathers it.
 */
#ifndef CNATS_SHIM_H
#define CNATS_SHIM_H

#include <nats/nats.h>

#endif /* CNATS_SHIM_H */
