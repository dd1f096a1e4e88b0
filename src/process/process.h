/* The shim's life in the host process: every stage started on the first
 * hooked call, the exit report, a forked child's clean start. It wires
 * the stages together, so it sits above them all; hooks call it. */
#ifndef AMP_PROCESS_H
#define AMP_PROCESS_H

#include "base/config.h"

/* A hook's first step: the configuration (amp_shim_config) and, once,
 * unless the shim is disabled, the policy loaded and the fork handler
 * registered. */
const struct amp_config *amp_process_start(void);

/* The guard (amp_shim_enter): 1 when the shim may act on this call, and
 * amp_shim_leave() must follow. The first call that enters registers the
 * exit handler: after the program brought CUDA up, so it runs before
 * CUDA's own teardown (atexit handlers run in reverse order), whichever
 * thread calls exit(). Now and then it also writes a snapshot of the
 * report (amp_report_snapshot). */
int amp_process_enter(void);

#endif
