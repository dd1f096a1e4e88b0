/* Process-wide state of the shim: start-up on the first hooked call, the
 * re-entrancy guard, fork and exit. */
#ifndef AMP_SHIM_H
#define AMP_SHIM_H

#include "config.h"

/* The configuration, loaded on first use. */
const struct amp_config *amp_shim_config(void);

/* At the top of every hook, after the real functions are resolved: 1 when
 * the shim may act on this call (enabled, not re-entered from inside the
 * shim), and amp_shim_leave() must follow; 0 to pass the call through. */
int amp_shim_enter(void);
void amp_shim_leave(void);

/* Changes in a forked child: per-thread state tagged with an older value
 * belongs to the parent's contexts and must be dropped, not used. */
unsigned amp_shim_generation(void);

#endif
