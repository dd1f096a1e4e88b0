/* NVTX ranges in the shim's own `ampshim` domain, so that Nsight Systems
 * shows which calls the shim converted and how. Header-only NVTX 3: the
 * tool's injection library is loaded at run time only when a tool asks for
 * it; without one a range costs a function-pointer call. */
#ifndef AMP_NVTX_H
#define AMP_NVTX_H

#include "base/config.h"

/* Opens a range named `api` (a static string) in the category of `mode`,
 * with the call's FLOPs as its payload. */
void amp_nvtx_push(const char *api, enum amp_mode mode, double flops);
void amp_nvtx_pop(void);

#endif
