/* Hooks of the calls that end a context: the runtime's cudaDeviceReset and
 * the driver's primary-context reset and release and cuCtxDestroy. Work
 * the shim queued in the context (timings, shadow checks, non-finite
 * checks) is harvested before the context ends, and the shim's state in
 * it is dropped after, so that the calls of a later context (perhaps at
 * the same address) convert afresh. The program's call itself is made
 * unchanged and its status returned as is.
 *
 * Programs that take the driver's entry points through cuGetProcAddress
 * do not reach the driver hooks; NVIDIA's runtime does so for its own
 * calls, so its reset is hooked as cudaDeviceReset. */
#include "cuda_symbols.h"

#include "base/caller.h"
#include "base/log.h"
#include "base/resolve.h"
#include "device/device.h"
#include "measure/harvest.h"

#include <stddef.h>

#define AMP_EXPORT __attribute__((visibility("default")))
#define AMP_CUDART_SONAME "libcudart.so.13"
#define AMP_CUDA_SONAME "libcuda.so.1"

/* The real `name` of `soname`, resolved on first use into *cache (every
 * thread finds the same address). */
static void *
amp_real(void **cache, const char *soname, const char *name)
{
    void *fn = __atomic_load_n(cache, __ATOMIC_RELAXED);

    if (!fn) {
        fn = amp_resolve(soname, name);
        if (!fn)
            amp_log(AMP_LOG_ERROR, "%s not found in %s", name, soname);
        __atomic_store_n(cache, fn, __ATOMIC_RELAXED);
    }
    return fn;
}

/* Before `ctx` ends: the shim's pending work in it finishes and is
 * harvested (waiting for it; other contexts' pending work too, as one
 * harvest collects everything). Nothing when the shim has no state there. */
static void
amp_context_ending(void *ctx)
{
    if (amp_dev_known(ctx))
        amp_harvest(1);
}

/* The primary context of `device` when the shim has state in it, else
 * NULL (then nothing is asked of the driver). */
static void *
amp_primary_known(int device)
{
    return amp_dev_any() ? amp_dev_primary_context(device) : NULL;
}

/* The names the runtime's routes are kept under (base/caller.h). */
static const char amp_reset_name[] = "cudaDeviceReset";
static const char amp_get_device_name[] = "cudaGetDevice";

/* The runtime function `name` for a call returning to ret: the release of
 * the runtime the caller depends on when it is another than 13 (a CUDA 12
 * extension's libcudart.so.12: the driver's contexts are the same, so the
 * shim's state in them ends all the same), else the one resolved into
 * *cache. */
static void *
amp_runtime(void **cache, const char *name, const void *ret)
{
    struct amp_route route = amp_route(AMP_LIB_CUDART, name, ret);

    if (route.other)
        return route.fn;
    return amp_real(cache, AMP_CUDART_SONAME, name);
}

AMP_EXPORT cudaError_t
cudaDeviceReset(void)
{
    static void *reset_fn, *get_device_fn;
    const void *ret = __builtin_return_address(0);
    cudaError_t (*reset)(void) = NULL;
    cudaError_t (*get_device)(int *) = NULL;
    void *ctx = NULL;
    cudaError_t e;
    int device;

    *(void **)&reset = amp_runtime(&reset_fn, amp_reset_name, ret);
    if (!reset)
        return cudaErrorSymbolNotFound;
    /* The runtime resets the primary context of the thread's device. */
    if (amp_dev_any()) {
        *(void **)&get_device = amp_runtime(&get_device_fn,
                                            amp_get_device_name, ret);
        if (get_device && get_device(&device) == cudaSuccess)
            ctx = amp_primary_known(device);
    }
    amp_context_ending(ctx);
    e = reset();
    if (e == cudaSuccess)
        amp_dev_retire(ctx);
    return e;
}

AMP_EXPORT CUresult
cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    static void *fn;
    CUresult (*reset)(CUdevice) = NULL;
    void *ctx;
    CUresult r;

    *(void **)&reset = amp_real(&fn, AMP_CUDA_SONAME,
                                "cuDevicePrimaryCtxReset_v2");
    if (!reset)
        return CUDA_ERROR_NOT_FOUND;
    ctx = amp_primary_known(dev);
    amp_context_ending(ctx);
    r = reset(dev);
    if (r == CUDA_SUCCESS)
        amp_dev_retire(ctx);
    return r;
}

AMP_EXPORT CUresult
cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    static void *fn;
    CUresult (*release)(CUdevice) = NULL;
    void *ctx;
    CUresult r;

    *(void **)&release = amp_real(&fn, AMP_CUDA_SONAME,
                                  "cuDevicePrimaryCtxRelease_v2");
    if (!release)
        return CUDA_ERROR_NOT_FOUND;
    /* Whether this release is the last one cannot be known before it:
     * the shim's work is harvested in case it is. */
    ctx = amp_primary_known(dev);
    amp_context_ending(ctx);
    r = release(dev);
    if (r == CUDA_SUCCESS && ctx && amp_dev_primary_active(dev) == 0)
        amp_dev_retire(ctx);
    return r;
}

AMP_EXPORT CUresult
cuCtxDestroy_v2(CUcontext ctx)
{
    static void *fn;
    CUresult (*destroy)(CUcontext) = NULL;
    CUresult r;

    *(void **)&destroy = amp_real(&fn, AMP_CUDA_SONAME, "cuCtxDestroy_v2");
    if (!destroy)
        return CUDA_ERROR_NOT_FOUND;
    amp_context_ending(ctx);
    r = destroy(ctx);
    if (r == CUDA_SUCCESS)
        amp_dev_retire(ctx);
    return r;
}
