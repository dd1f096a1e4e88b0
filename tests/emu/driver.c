/* The emulated driver API (libcuda.so.1): the cu* entry points over the
 * device core, with the driver's argument checks and status codes. */
#include "core_state.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Host <-> device copies cross PCIe (Gen5 x16, about 50 GB/s achieved on
 * the SXM parts; the model uses one rate for every GPU). */
#define DRV_PCIE_BYTES_PER_NS 25.0
#define DRV_MAX_BLOCK_THREADS 1024
#define DRV_MAX_STATIC_SMEM (48 * 1024)
#define DRV_LEAST_PRIORITY 0
#define DRV_GREATEST_PRIORITY (-5)

/* Enters a call that needs the current context: takes the lock, then
 * checks initialisation and the context (and its sticky error when
 * `sticky`). On failure the lock is released. */
CUresult
drv_enter(struct CUctx_st **ctx, int sticky)
{
    CUresult rc;

    core_lock();
    rc = core_enter(ctx, sticky);
    if (rc != CUDA_SUCCESS)
        core_unlock();
    return rc;
}

CUresult
drv_leave(CUresult rc)
{
    core_unlock();
    return rc;
}

static double
drv_copy_model_ns(size_t bytes, int crosses_pcie)
{
    if (!crosses_pcie)
        /* Device to device: each byte is read and written. */
        return emu_model_ns(0.0, EMU_PREC_NONE, 2.0 * (double)bytes);
    return (double)bytes / DRV_PCIE_BYTES_PER_NS +
           emu_gpu()->launch_latency_us * 1e3;
}

/* ---- Initialisation, version, errors ------------------------------------- */

CUresult
cuInit(unsigned int flags)
{
    CUresult rc;

    if (flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    core_lock();
    rc = core_init();
    core_unlock();
    return rc;
}

CUresult
cuDriverGetVersion(int *version)
{
    if (!version)
        return CUDA_ERROR_INVALID_VALUE;
    *version = CUDA_VERSION;
    return CUDA_SUCCESS;
}

struct drv_error {
    CUresult code;
    const char *name;
    const char *text;
};

#define DRV_ERROR(code, text) { code, #code, text }

static const struct drv_error drv_errors[] = {
    DRV_ERROR(CUDA_SUCCESS, "no error"),
    DRV_ERROR(CUDA_ERROR_INVALID_VALUE, "invalid argument"),
    DRV_ERROR(CUDA_ERROR_OUT_OF_MEMORY, "out of memory"),
    DRV_ERROR(CUDA_ERROR_NOT_INITIALIZED, "initialization error"),
    DRV_ERROR(CUDA_ERROR_DEINITIALIZED, "driver shutting down"),
    DRV_ERROR(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected"),
    DRV_ERROR(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"),
    DRV_ERROR(CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid"),
    DRV_ERROR(CUDA_ERROR_INVALID_CONTEXT, "invalid device context"),
    DRV_ERROR(CUDA_ERROR_CONTEXT_ALREADY_CURRENT,
              "context already current"),
    DRV_ERROR(CUDA_ERROR_NO_BINARY_FOR_GPU,
              "no kernel image is available for execution on the device"),
    DRV_ERROR(CUDA_ERROR_INVALID_SOURCE, "device kernel image is invalid"),
    DRV_ERROR(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"),
    DRV_ERROR(CUDA_ERROR_ILLEGAL_STATE, "the operation cannot be performed "
              "in the present state"),
    DRV_ERROR(CUDA_ERROR_NOT_FOUND, "named symbol not found"),
    DRV_ERROR(CUDA_ERROR_NOT_READY, "device not ready"),
    DRV_ERROR(CUDA_ERROR_ILLEGAL_ADDRESS,
              "an illegal memory access was encountered"),
    DRV_ERROR(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
              "too many resources requested for launch"),
    DRV_ERROR(CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure"),
    DRV_ERROR(CUDA_ERROR_CONTEXT_IS_DESTROYED, "context is destroyed"),
    DRV_ERROR(CUDA_ERROR_NOT_SUPPORTED, "operation not supported"),
    DRV_ERROR(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
              "operation not permitted when stream is capturing"),
    DRV_ERROR(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
              "operation failed due to a previous error during capture"),
    DRV_ERROR(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED,
              "capture was not initiated in this stream"),
    DRV_ERROR(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT,
              "operation would make the legacy stream depend on a "
              "capturing blocking stream"),
    DRV_ERROR(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD,
              "attempt to terminate a thread-local capture sequence from "
              "another thread"),
    DRV_ERROR(CUDA_ERROR_UNKNOWN, "unknown error"),
};

static const struct drv_error *
drv_error_find(CUresult code)
{
    size_t i;

    for (i = 0; i < sizeof(drv_errors) / sizeof(drv_errors[0]); i++)
        if (drv_errors[i].code == code)
            return &drv_errors[i];
    return NULL;
}

CUresult
cuGetErrorName(CUresult error, const char **str)
{
    const struct drv_error *e = drv_error_find(error);

    if (!str)
        return CUDA_ERROR_INVALID_VALUE;
    *str = e ? e->name : NULL;
    return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult
cuGetErrorString(CUresult error, const char **str)
{
    const struct drv_error *e = drv_error_find(error);

    if (!str)
        return CUDA_ERROR_INVALID_VALUE;
    *str = e ? e->text : NULL;
    return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ---- Entry points ------------------------------------------------------- */

/* cuGetProcAddress: the driver's own definition of `symbol`, found in this
 * library's dynamic symbols (never through the global scope, so a
 * preloaded definition of the same name is not what comes back). The
 * emulator implements one ABI version of each function, the one CUDA 13's
 * header names (cuMemAlloc_v2, cuCtxCreate_v4): it returns that one for any
 * cudaVersion up to the driver's. CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
 * "search[es] for per-thread versions of driver symbols": the name's
 * _ptsz definition where the emulator has one (cuGraphLaunch_ptsz), else
 * the same function as the legacy stream's. A name the emulator only
 * stubs (scripts/emu_stubs.py) is not what it implements and is passed
 * over. Not found: CUDA_SUCCESS with *pfn NULL, as the documentation
 * says. */
CUresult
cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                 cuuint64_t flags, CUdriverProcAddressQueryResult *status)
{
    static const char *const suffixes[] = {"_v4", "_v3", "_v2", ""};
    char name[256];
    Dl_info self;
    void *lib = NULL;
    size_t i;

    if (!symbol || !pfn || cudaVersion > CUDA_VERSION ||
        (flags & ~(cuuint64_t)(CU_GET_PROC_ADDRESS_LEGACY_STREAM |
                               CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)))
        return CUDA_ERROR_INVALID_VALUE;
    *pfn = NULL;
    if (dladdr(drv_errors, &self) && self.dli_fname)
        lib = dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD);
    if (lib && (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) &&
        strncmp(symbol, "cu", 2) == 0 &&
        (size_t)snprintf(name, sizeof name, "%s_ptsz", symbol) <
            sizeof name) {
        *pfn = dlsym(lib, name);
        if (*pfn && emu_stub_address(*pfn))
            *pfn = NULL;
    }
    for (i = 0; lib && !*pfn && i < sizeof suffixes / sizeof *suffixes; i++)
        if (strncmp(symbol, "cu", 2) == 0 &&
            (size_t)snprintf(name, sizeof name, "%s%s", symbol,
                             suffixes[i]) < sizeof name) {
            *pfn = dlsym(lib, name);
            if (*pfn && emu_stub_address(*pfn))
                *pfn = NULL;
        }
    if (lib)
        dlclose(lib); /* the reference dlopen took, not the library */
    if (status)
        *status = *pfn ? CU_GET_PROC_ADDRESS_SUCCESS
                       : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_SUCCESS;
}

/* ---- Devices -------------------------------------------------------------- */

/* Checks initialisation and the ordinal; takes and releases the lock. */
static CUresult
drv_check_device(CUdevice dev)
{
    CUresult rc = CUDA_SUCCESS;

    core_lock();
    if (!core_initialised())
        rc = CUDA_ERROR_NOT_INITIALIZED;
    else if (dev < 0 || dev >= core_device_count())
        rc = CUDA_ERROR_INVALID_DEVICE;
    core_unlock();
    return rc;
}

CUresult
cuDeviceGet(CUdevice *device, int ordinal)
{
    CUresult rc;

    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    rc = drv_check_device(ordinal);
    if (rc == CUDA_SUCCESS)
        *device = ordinal;
    return rc;
}

CUresult
cuDeviceGetCount(int *count)
{
    CUresult rc = CUDA_SUCCESS;

    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    core_lock();
    if (!core_initialised())
        rc = CUDA_ERROR_NOT_INITIALIZED;
    else
        *count = core_device_count();
    core_unlock();
    return rc;
}

CUresult
cuDeviceGetName(char *name, int len, CUdevice dev)
{
    CUresult rc;

    if (!name || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    rc = drv_check_device(dev);
    if (rc == CUDA_SUCCESS)
        snprintf(name, (size_t)len, "%s", emu_gpu()->name);
    return rc;
}

CUresult
cuDeviceTotalMem(size_t *bytes, CUdevice dev)
{
    CUresult rc;

    if (!bytes)
        return CUDA_ERROR_INVALID_VALUE;
    rc = drv_check_device(dev);
    if (rc == CUDA_SUCCESS)
        *bytes = emu_gpu()->total_mem;
    return rc;
}

CUresult
cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
    CUresult rc;

    if (!uuid)
        return CUDA_ERROR_INVALID_VALUE;
    rc = drv_check_device(dev);
    if (rc == CUDA_SUCCESS) {
        /* A fixed, recognisable UUID per ordinal. */
        memset(uuid->bytes, 0xe5, sizeof(uuid->bytes));
        uuid->bytes[15] = (char)dev;
    }
    return rc;
}

/* The attribute's value on the modelled GPU; -1 for an attribute that is
 * not in the enumeration. */
static int
drv_attribute(CUdevice_attribute attr, int dev, int *value)
{
    const struct core_gpu_spec *s = core_gpu_spec();
    int v = 0;

    switch (attr) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: v = 64; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: v = 2147483647; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: v = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: v = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
        v = DRV_MAX_STATIC_SMEM; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
        v = s->smem_per_block_optin; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR:
        v = s->smem_per_sm; break;
    case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: v = 65536; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: v = 32; break;
    case CU_DEVICE_ATTRIBUTE_MAX_PITCH: v = 2147483647; break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: v = 65536; break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: v = 65536; break;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: v = s->clock_khz; break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: v = s->mem_clock_khz; break;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: v = s->bus_width; break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: v = s->l2_bytes; break;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT: v = 512; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: v = s->pub.sm_count; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
        v = s->max_threads_per_sm; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR:
        v = s->max_blocks_per_sm; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: v = s->pub.cc_major; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: v = s->pub.cc_minor; break;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: v = s->pci_bus + dev; break;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: v = 2; break;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_ECC_ENABLED: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE: v = CU_COMPUTEMODE_DEFAULT; break;
    case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_INTEGRATED: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT: v = 0; break;
    default:
        if ((int)attr <= 0 || attr >= CU_DEVICE_ATTRIBUTE_MAX)
            return -1;
        /* Features the emulator does not model read as absent. */
        v = 0;
        break;
    }
    *value = v;
    return 0;
}

CUresult
cuDeviceGetAttribute(int *value, CUdevice_attribute attrib, CUdevice dev)
{
    CUresult rc;

    if (!value)
        return CUDA_ERROR_INVALID_VALUE;
    rc = drv_check_device(dev);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (drv_attribute(attrib, dev, value) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

/* ---- Contexts ----------------------------------------------------------------- */

CUresult
cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    struct CUctx_st *ctx;
    CUresult rc;

    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    core_lock();
    if (!core_initialised())
        rc = CUDA_ERROR_NOT_INITIALIZED;
    else
        rc = core_primary_retain(dev, &ctx);
    if (rc == CUDA_SUCCESS)
        *pctx = ctx;
    core_unlock();
    return rc;
}

CUresult
cuDevicePrimaryCtxRelease(CUdevice dev)
{
    CUresult rc;

    core_lock();
    rc = core_initialised() ? core_primary_release(dev)
                            : CUDA_ERROR_NOT_INITIALIZED;
    core_unlock();
    return rc;
}

CUresult
cuDevicePrimaryCtxReset(CUdevice dev)
{
    CUresult rc;

    core_lock();
    rc = core_initialised() ? core_primary_reset(dev)
                            : CUDA_ERROR_NOT_INITIALIZED;
    core_unlock();
    return rc;
}

CUresult
cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    struct CUctx_st *ctx;
    CUresult rc;

    if (!flags || !active)
        return CUDA_ERROR_INVALID_VALUE;
    rc = drv_check_device(dev);
    if (rc != CUDA_SUCCESS)
        return rc;
    core_lock();
    ctx = core_primary(dev);
    *flags = ctx->flags;
    *active = ctx->active;
    core_unlock();
    return CUDA_SUCCESS;
}

CUresult
cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags)
{
    CUresult rc;

    if (flags & ~(unsigned)(CU_CTX_SCHED_MASK | CU_CTX_LMEM_RESIZE_TO_MAX |
                            CU_CTX_SYNC_MEMOPS))
        return CUDA_ERROR_INVALID_VALUE;
    rc = drv_check_device(dev);
    if (rc != CUDA_SUCCESS)
        return rc;
    core_lock();
    core_primary(dev)->flags = flags;
    core_unlock();
    return CUDA_SUCCESS;
}

CUresult
cuCtxCreate(CUcontext *pctx, CUctxCreateParams *params, unsigned int flags,
            CUdevice dev)
{
    struct CUctx_st *ctx;
    CUresult rc;

    (void)params;   /* affinity and CIG are not modelled */
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    core_lock();
    if (!core_initialised())
        rc = CUDA_ERROR_NOT_INITIALIZED;
    else
        rc = core_ctx_create(dev, flags, &ctx);
    if (rc == CUDA_SUCCESS) {
        rc = core_tls_push(ctx);
        if (rc != CUDA_SUCCESS)
            core_ctx_destroy(ctx);
        else
            *pctx = ctx;
    }
    core_unlock();
    return rc;
}

CUresult
cuCtxDestroy(CUcontext ctx)
{
    CUresult rc;

    core_lock();
    if (!core_initialised())
        rc = CUDA_ERROR_NOT_INITIALIZED;
    else
        rc = core_ctx_destroy(ctx);
    core_unlock();
    return rc;
}

/* cuCtxGetId: "the unique Id associated with the context supplied ...
 * unique for the life of the program"; a NULL context names the current
 * one. A primary context reset and retained again keeps its handle here
 * but is a new context with a new id (core.c). An inactive primary
 * context has no id: CONTEXT_IS_DESTROYED, as for its other calls. */
CUresult
cuCtxGetId(CUcontext ctx, unsigned long long *ctxId)
{
    struct CUctx_st *c = ctx;
    CUresult rc = CUDA_SUCCESS;

    if (!ctxId)
        return CUDA_ERROR_INVALID_VALUE;
    core_lock();
    if (!core_initialised())
        rc = CUDA_ERROR_NOT_INITIALIZED;
    else if (!c && !(c = core_tls_current()))
        rc = CUDA_ERROR_INVALID_CONTEXT;
    else if (!core_ctx_valid(c))
        rc = CUDA_ERROR_INVALID_CONTEXT;
    else if (!c->active)
        rc = CUDA_ERROR_CONTEXT_IS_DESTROYED;
    else
        *ctxId = c->id;
    core_unlock();
    return rc;
}

CUresult
cuCtxGetCurrent(CUcontext *pctx)
{
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    core_lock();
    if (!core_initialised()) {
        core_unlock();
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    *pctx = core_tls_current();
    core_unlock();
    return CUDA_SUCCESS;
}

CUresult
cuCtxSetCurrent(CUcontext ctx)
{
    CUresult rc = CUDA_SUCCESS;

    core_lock();
    if (!core_initialised())
        rc = CUDA_ERROR_NOT_INITIALIZED;
    else if (ctx && !core_ctx_valid(ctx))
        rc = CUDA_ERROR_INVALID_CONTEXT;
    else
        core_tls_set_current(ctx);
    core_unlock();
    return rc;
}

CUresult
cuCtxPushCurrent(CUcontext ctx)
{
    CUresult rc;

    core_lock();
    if (!core_initialised())
        rc = CUDA_ERROR_NOT_INITIALIZED;
    else if (!ctx || !core_ctx_valid(ctx))
        rc = CUDA_ERROR_INVALID_CONTEXT;
    else
        rc = core_tls_push(ctx);
    core_unlock();
    return rc;
}

CUresult
cuCtxPopCurrent(CUcontext *pctx)
{
    struct CUctx_st *ctx;
    CUresult rc = CUDA_SUCCESS;

    core_lock();
    if (!core_initialised()) {
        rc = CUDA_ERROR_NOT_INITIALIZED;
    } else if (!core_tls_current()) {
        rc = CUDA_ERROR_INVALID_CONTEXT;
    } else {
        ctx = core_tls_pop();
        if (pctx)
            *pctx = ctx;
    }
    core_unlock();
    return rc;
}

CUresult
cuCtxGetDevice(CUdevice *device)
{
    struct CUctx_st *ctx;
    CUresult rc;

    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    rc = drv_enter(&ctx, 0);
    if (rc != CUDA_SUCCESS)
        return rc;
    *device = ctx->dev;
    return drv_leave(CUDA_SUCCESS);
}

CUresult
cuCtxGetFlags(unsigned int *flags)
{
    struct CUctx_st *ctx;
    CUresult rc;

    if (!flags)
        return CUDA_ERROR_INVALID_VALUE;
    rc = drv_enter(&ctx, 0);
    if (rc != CUDA_SUCCESS)
        return rc;
    *flags = ctx->flags;
    return drv_leave(CUDA_SUCCESS);
}

CUresult
cuCtxGetStreamPriorityRange(int *least, int *greatest)
{
    struct CUctx_st *ctx;
    CUresult rc = drv_enter(&ctx, 0);

    if (rc != CUDA_SUCCESS)
        return rc;
    if (least)
        *least = DRV_LEAST_PRIORITY;
    if (greatest)
        *greatest = DRV_GREATEST_PRIORITY;
    return drv_leave(CUDA_SUCCESS);
}

CUresult
cuCtxSynchronize(void)
{
    struct CUctx_st *ctx;
    CUresult rc = drv_enter(&ctx, 1);

    if (rc != CUDA_SUCCESS)
        return rc;
    rc = core_capture_guard(ctx);
    if (rc == CUDA_SUCCESS)
        rc = core_sync_ctx(ctx);
    if (emu_call_log_on())
        emu_call_log("cuCtxSynchronize");
    return drv_leave(rc);
}

/* ---- Memory -------------------------------------------------------------------- */

CUresult
cuMemGetInfo(size_t *free_bytes, size_t *total_bytes)
{
    struct CUctx_st *ctx;
    CUresult rc;
    size_t total = emu_gpu()->total_mem;

    if (!free_bytes || !total_bytes)
        return CUDA_ERROR_INVALID_VALUE;
    rc = drv_enter(&ctx, 0);
    if (rc != CUDA_SUCCESS)
        return rc;
    *total_bytes = total;
    *free_bytes = total - core_mem_used(ctx->dev);
    return drv_leave(CUDA_SUCCESS);
}

CUresult
cuMemAlloc(CUdeviceptr *dptr, size_t bytesize)
{
    struct CUctx_st *ctx;
    CUresult rc;

    if (!dptr || bytesize == 0)
        return CUDA_ERROR_INVALID_VALUE;
    rc = drv_enter(&ctx, 1);
    if (rc != CUDA_SUCCESS)
        return rc;
    /* A synchronous allocation may synchronise: not allowed while a
     * global or this thread's thread-local capture is running. */
    rc = core_capture_guard(ctx);
    if (rc == CUDA_SUCCESS)
        rc = (CUresult)emu_fault("alloc", CUDA_ERROR_OUT_OF_MEMORY);
    if (rc == CUDA_SUCCESS)
        rc = core_alloc(ctx, bytesize, 0, dptr);
    return drv_leave(rc);
}

CUresult
cuMemFree(CUdeviceptr dptr)
{
    struct CUctx_st *ctx;
    CUresult rc;

    rc = drv_enter(&ctx, 0);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (dptr == 0)
        return drv_leave(CUDA_SUCCESS);
    rc = core_capture_guard(ctx);
    if (rc == CUDA_SUCCESS) {
        /* Freeing waits for the work that may still use the memory. */
        core_sync_ctx(ctx);
        rc = core_free(dptr);
    }
    return drv_leave(rc);
}

CUresult
cuMemAllocHost(void **pp, size_t bytesize)
{
    struct CUctx_st *ctx;
    CUresult rc;

    if (!pp || bytesize == 0)
        return CUDA_ERROR_INVALID_VALUE;
    rc = drv_enter(&ctx, 1);
    if (rc != CUDA_SUCCESS)
        return rc;
    rc = core_capture_guard(ctx);
    if (rc == CUDA_SUCCESS)
        rc = core_host_alloc(ctx, bytesize, pp);
    return drv_leave(rc);
}

CUresult
cuMemFreeHost(void *p)
{
    struct CUctx_st *ctx;
    CUresult rc = drv_enter(&ctx, 0);

    if (rc != CUDA_SUCCESS)
        return rc;
    core_sync_ctx(ctx);
    return drv_leave(core_host_free(p));
}

/* Queued release of a stream-ordered allocation. */
static CUresult
drv_run_free_async(void *arg)
{
    CUdeviceptr p = (CUdeviceptr)(uintptr_t)arg;

    /* Back to its pool's count, then to the device. (A captured free is
     * a node that runs nothing: the graph frees what it allocated.) */
    core_pool_free(p);
    core_free_keep(p);
    return CUDA_SUCCESS;
}

static void
drv_release_graph_alloc(void *arg)
{
    core_free((CUdeviceptr)(uintptr_t)arg);
}

/* Records a stream-ordered allocation in the capture's graph as an
 * allocation node, which owns the memory: it is freed with the node (with
 * the graph, its executables and the graphs that embed it), or at once
 * when the node cannot be recorded. */
static CUresult
drv_capture_alloc(struct CUstream_st *s, CUdeviceptr p)
{
    struct emu_op node = { "cuMemAllocAsync", NULL, drv_release_graph_alloc,
                           (void *)(uintptr_t)p, 0.0,
                           CU_GRAPH_NODE_TYPE_MEM_ALLOC };

    return core_enqueue(s, &node, NULL, NULL) == CUDA_SUCCESS
               ? CUDA_SUCCESS
               : CUDA_ERROR_OUT_OF_MEMORY;
}

/* cuMemAllocAsync (pool NULL: the device's current pool) and
 * cuMemAllocFromPoolAsync. During capture the allocation is the graph's,
 * not the pool's (cuMemAllocFromPoolAsync's documentation). */
static CUresult
drv_alloc_async(CUdeviceptr *dptr, size_t bytesize,
                struct CUmemPoolHandle_st *pool, CUstream hStream)
{
    struct CUctx_st *ctx;
    struct CUstream_st *s;
    CUresult rc;

    /* 0 bytes: NVIDIA documents no failure for it (cuMemAlloc's 0 is
     * INVALID_VALUE, cuMemAllocAsync's page names none), and programs
     * see it succeed; the emulator answers a NULL pointer and queues
     * nothing (docs/emulator.md). */
    if (!dptr)
        return CUDA_ERROR_INVALID_VALUE;
    if (bytesize == 0) {
        *dptr = 0;
        return CUDA_SUCCESS;
    }
    rc = drv_enter(&ctx, 1);
    if (rc != CUDA_SUCCESS)
        return rc;
    rc = core_stream_resolve(ctx, hStream, &s);
    if (rc != CUDA_SUCCESS)
        return drv_leave(rc);
    if (s->capture == CU_STREAM_CAPTURE_STATUS_INVALIDATED)
        return drv_leave(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    rc = (CUresult)emu_fault("alloc-async", CUDA_ERROR_OUT_OF_MEMORY);
    if (rc != CUDA_SUCCESS)
        return drv_leave(rc);
    /* The pool hands out an address at once; the memory is usable in
     * stream order from here on. */
    rc = core_alloc(ctx, bytesize, 1, dptr);
    if (rc != CUDA_SUCCESS)
        return drv_leave(rc);
    if (s->capture == CU_STREAM_CAPTURE_STATUS_ACTIVE)
        return drv_leave(drv_capture_alloc(s, *dptr));
    rc = core_pool_alloc(pool ? pool : core_pool_current(ctx->dev), *dptr,
                         bytesize);
    if (rc != CUDA_SUCCESS)
        core_free(*dptr);
    return drv_leave(rc);
}

CUresult
cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    return drv_alloc_async(dptr, bytesize, NULL, hStream);
}

CUresult
cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize,
                        CUmemoryPool pool, CUstream hStream)
{
    if (!pool)
        return CUDA_ERROR_INVALID_VALUE;
    return drv_alloc_async(dptr, bytesize, pool, hStream);
}

CUresult
cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    struct emu_op op = { "cuMemFreeAsync", drv_run_free_async, NULL, NULL,
                         0.0, CU_GRAPH_NODE_TYPE_MEM_FREE };
    struct CUctx_st *ctx;
    struct CUstream_st *s;
    CUresult rc;

    rc = drv_enter(&ctx, 1);
    if (rc != CUDA_SUCCESS)
        return rc;
    rc = core_stream_resolve(ctx, hStream, &s);
    if (rc != CUDA_SUCCESS)
        return drv_leave(rc);
    if (s->capture == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
        /* A free inside a capture becomes a node: the graph releases the
         * memory when it is destroyed. */
        op.run = NULL;
        return drv_leave(core_enqueue(s, &op, NULL, NULL));
    }
    rc = core_free_begin(dptr, NULL);
    if (rc != CUDA_SUCCESS)
        return drv_leave(rc);
    op.arg = (void *)(uintptr_t)dptr;
    return drv_leave(core_enqueue(s, &op, NULL, NULL));
}

/* ---- Copies and memsets -------------------------------------------------------- */

/* One 2D copy between host and device memory; 1D copies have height 1.
 * Device addresses are translated when the op runs. */
struct drv_copy {
    int src_is_device, dst_is_device;
    uintptr_t src, dst;
    size_t src_pitch, dst_pitch, width, height;
    void *snapshot;             /* pageable source copied at call time */
};

static CUresult
drv_run_copy(void *arg)
{
    struct drv_copy *c = arg;
    size_t row;

    for (row = 0; row < c->height; row++) {
        uintptr_t s = c->src + row * c->src_pitch;
        uintptr_t d = c->dst + row * c->dst_pitch;
        const void *from = c->src_is_device ? emu_dev_at(s, c->width)
                                            : (const void *)s;
        void *to = c->dst_is_device ? emu_dev_at(d, c->width) : (void *)d;

        if (!from || !to)
            return emu_op_fail(CUDA_ERROR_ILLEGAL_ADDRESS, "memcpy",
                               "address no longer allocated");
        if (c->dst_is_device)
            emu_dev_wrote(d, c->width);
        memmove(to, from, c->width);
    }
    return CUDA_SUCCESS;
}

static void
drv_release_copy(void *arg)
{
    struct drv_copy *c = arg;

    free(c->snapshot);
    free(c);
}

/* 1 if [p, p + bytes) lies in one live device allocation. */
static int
drv_device_range(uintptr_t p, size_t bytes)
{
    CUdeviceptr base;
    size_t size;
    int dev, is_host;
    struct CUctx_st *owner;

    if (!core_find(p, &base, &size, &dev, &is_host, &owner) || is_host)
        return 0;
    return bytes <= size - (size_t)(p - base);
}

/* 1 if p is page-locked host memory from cuMemAllocHost. */
static int
drv_pinned(uintptr_t p)
{
    CUdeviceptr base;
    size_t size;
    int dev, is_host;
    struct CUctx_st *owner;

    return core_find(p, &base, &size, &dev, &is_host, &owner) && is_host;
}

/* Checks a copy, snapshots a pageable source, and queues it on s. With
 * `sync`, waits for it as the synchronous copies do. Caller holds the
 * lock and has entered the context. */
static CUresult
drv_copy(struct CUctx_st *ctx, CUstream stream, const struct drv_copy *in,
         int sync)
{
    struct emu_op op = { "memcpy", drv_run_copy, drv_release_copy, NULL,
                         0.0, CU_GRAPH_NODE_TYPE_MEMCPY };
    size_t src_span, dst_span;
    struct CUstream_st *s;
    struct core_mark *mark = NULL;
    struct drv_copy *c;
    CUresult rc;

    if (in->width == 0 || in->height == 0)
        return CUDA_SUCCESS;
    if (in->src_pitch < in->width || in->dst_pitch < in->width)
        return CUDA_ERROR_INVALID_VALUE;
    src_span = in->src_pitch * (in->height - 1) + in->width;
    dst_span = in->dst_pitch * (in->height - 1) + in->width;
    if ((in->src_is_device && !drv_device_range(in->src, src_span)) ||
        (in->dst_is_device && !drv_device_range(in->dst, dst_span)) ||
        (!in->src_is_device && (!in->src || emu_is_device_address(
                                                (void *)in->src))) ||
        (!in->dst_is_device && (!in->dst || emu_is_device_address(
                                                (void *)in->dst))))
        return CUDA_ERROR_INVALID_VALUE;
    rc = core_stream_resolve(ctx, stream, &s);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (sync) {
        rc = core_capture_guard(ctx);
        if (rc != CUDA_SUCCESS)
            return rc;
    }
    c = calloc(1, sizeof(*c));
    if (!c)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *c = *in;
    if (!c->src_is_device && !drv_pinned(c->src) && !sync) {
        /* Pageable memory is staged at the call: the caller may reuse it
         * as soon as the call returns. */
        size_t row;

        c->snapshot = malloc(c->width * c->height);
        if (!c->snapshot) {
            free(c);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        for (row = 0; row < c->height; row++)
            memcpy((char *)c->snapshot + row * c->width,
                   (const char *)c->src + row * c->src_pitch, c->width);
        c->src = (uintptr_t)c->snapshot;
        c->src_pitch = c->width;
    }
    /* An asynchronous copy from the device into pageable memory returns
     * once it is done: CUDA's "API synchronization behavior" (driver and
     * runtime API references: "For transfers from device memory to
     * pageable host memory, the function will return only once the copy
     * has completed"; the current pages say it "might be synchronous").
     * Captured, it stays in the graph. */
    if (!sync && !c->dst_is_device && !drv_pinned(c->dst) &&
        s->capture != CU_STREAM_CAPTURE_STATUS_ACTIVE)
        sync = 1;
    op.arg = c;
    op.model_ns = drv_copy_model_ns(c->width * c->height,
                                    !c->src_is_device || !c->dst_is_device);
    rc = core_enqueue(s, &op, NULL, sync ? &mark : NULL);
    if (rc != CUDA_SUCCESS || !sync)
        return rc;
    rc = core_sync_mark(ctx, mark);
    core_mark_put(mark);
    return rc;
}

static struct drv_copy
drv_copy_1d(int dst_dev, uintptr_t dst, int src_dev, uintptr_t src,
            size_t bytes)
{
    struct drv_copy c = { 0 };

    c.src_is_device = src_dev;
    c.dst_is_device = dst_dev;
    c.src = src;
    c.dst = dst;
    c.src_pitch = c.dst_pitch = c.width = bytes;
    c.height = 1;
    return c;
}

/* Enters, copies and leaves: the shape of every 1D copy entry point. */
static CUresult
drv_copy_call(int dst_dev, uintptr_t dst, int src_dev, uintptr_t src,
              size_t bytes, CUstream stream, int sync)
{
    struct drv_copy c = drv_copy_1d(dst_dev, dst, src_dev, src, bytes);
    struct CUctx_st *ctx;
    CUresult rc = drv_enter(&ctx, 1);

    if (rc != CUDA_SUCCESS)
        return rc;
    return drv_leave(drv_copy(ctx, stream, &c, sync));
}

CUresult
cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t bytes)
{
    return drv_copy_call(1, dst, 0, (uintptr_t)src, bytes, NULL, 1);
}

CUresult
cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t bytes)
{
    return drv_copy_call(0, (uintptr_t)dst, 1, src, bytes, NULL, 1);
}

CUresult
cuMemcpyDtoD(CUdeviceptr dst, CUdeviceptr src, size_t bytes)
{
    /* Device to device is asynchronous with respect to the host. */
    return drv_copy_call(1, dst, 1, src, bytes, NULL, 0);
}

CUresult
cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t bytes,
                  CUstream stream)
{
    return drv_copy_call(1, dst, 0, (uintptr_t)src, bytes, stream, 0);
}

CUresult
cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t bytes, CUstream stream)
{
    return drv_copy_call(0, (uintptr_t)dst, 1, src, bytes, stream, 0);
}

CUresult
cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                  CUstream stream)
{
    return drv_copy_call(1, dst, 1, src, bytes, stream, 0);
}

/* Unified addressing: the allocation table says which side a pointer is. */
static CUresult
drv_copy_unified(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                 CUstream stream, int sync)
{
    struct CUctx_st *ctx;
    struct drv_copy c;
    CUresult rc = drv_enter(&ctx, 1);

    if (rc != CUDA_SUCCESS)
        return rc;
    c = drv_copy_1d(emu_is_device_address((void *)dst), dst,
                    emu_is_device_address((void *)src), src, bytes);
    /* A device-to-device copy does not block the host. */
    if (c.src_is_device && c.dst_is_device)
        sync = 0;
    return drv_leave(drv_copy(ctx, stream, &c, sync));
}

CUresult
cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t bytes)
{
    return drv_copy_unified(dst, src, bytes, NULL, 1);
}

CUresult
cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
              CUstream stream)
{
    return drv_copy_unified(dst, src, bytes, stream, 0);
}

/* The side of one end of a 2D copy; -1 for arrays, which are not
 * modelled. */
static int
drv_memtype_is_device(CUmemorytype type, const void *host, CUdeviceptr dev,
                      uintptr_t *addr)
{
    switch (type) {
    case CU_MEMORYTYPE_HOST:
        *addr = (uintptr_t)host;
        return 0;
    case CU_MEMORYTYPE_DEVICE:
        *addr = dev;
        return 1;
    case CU_MEMORYTYPE_UNIFIED:
        *addr = dev;
        return emu_is_device_address((void *)dev);
    default:
        return -1;
    }
}

static CUresult
drv_copy_2d(const CUDA_MEMCPY2D *p, CUstream stream, int sync)
{
    struct CUctx_st *ctx;
    struct drv_copy c = { 0 };
    uintptr_t src = 0, dst = 0;
    CUresult rc;

    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    c.src_is_device = drv_memtype_is_device(p->srcMemoryType, p->srcHost,
                                            p->srcDevice, &src);
    c.dst_is_device = drv_memtype_is_device(p->dstMemoryType, p->dstHost,
                                            p->dstDevice, &dst);
    if (c.src_is_device < 0 || c.dst_is_device < 0)
        return CUDA_ERROR_INVALID_VALUE;
    c.src_pitch = p->srcPitch ? p->srcPitch : p->WidthInBytes;
    c.dst_pitch = p->dstPitch ? p->dstPitch : p->WidthInBytes;
    c.src = src + p->srcY * c.src_pitch + p->srcXInBytes;
    c.dst = dst + p->dstY * c.dst_pitch + p->dstXInBytes;
    c.width = p->WidthInBytes;
    c.height = p->Height;
    rc = drv_enter(&ctx, 1);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (c.src_is_device && c.dst_is_device)
        sync = 0;
    return drv_leave(drv_copy(ctx, stream, &c, sync));
}

CUresult
cuMemcpy2D(const CUDA_MEMCPY2D *p)
{
    return drv_copy_2d(p, NULL, 1);
}

CUresult
cuMemcpy2DAsync(const CUDA_MEMCPY2D *p, CUstream stream)
{
    return drv_copy_2d(p, stream, 0);
}

struct drv_memset {
    CUdeviceptr dst;
    uint32_t value;
    unsigned elem;              /* 1, 2 or 4 bytes */
    size_t count;
};

static CUresult
drv_run_memset(void *arg)
{
    struct drv_memset *m = arg;
    unsigned char *to = emu_dev_at(m->dst, m->count * m->elem);
    size_t i;

    if (!to)
        return emu_op_fail(CUDA_ERROR_ILLEGAL_ADDRESS, "memset",
                           "address no longer allocated");
    emu_dev_wrote(m->dst, m->count * m->elem);
    if (m->elem == 1) {
        memset(to, (int)(m->value & 0xff), m->count);
        return CUDA_SUCCESS;
    }
    for (i = 0; i < m->count; i++)
        memcpy(to + i * m->elem, &m->value, m->elem);  /* little endian */
    return CUDA_SUCCESS;
}

static CUresult
drv_memset(CUdeviceptr dst, uint32_t value, unsigned elem, size_t count,
           CUstream stream)
{
    struct emu_op op = { "memset", drv_run_memset, free, NULL, 0.0,
                         CU_GRAPH_NODE_TYPE_MEMSET };
    struct CUctx_st *ctx;
    struct CUstream_st *s;
    struct drv_memset *m;
    CUresult rc;

    rc = drv_enter(&ctx, 1);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (count == 0)
        return drv_leave(CUDA_SUCCESS);
    /* The destination must be aligned to the element size. */
    if (dst % elem != 0 || !drv_device_range(dst, count * elem))
        return drv_leave(CUDA_ERROR_INVALID_VALUE);
    rc = core_stream_resolve(ctx, stream, &s);
    if (rc != CUDA_SUCCESS)
        return drv_leave(rc);
    m = malloc(sizeof(*m));
    if (!m)
        return drv_leave(CUDA_ERROR_OUT_OF_MEMORY);
    m->dst = dst;
    m->value = value;
    m->elem = elem;
    m->count = count;
    op.arg = m;
    op.model_ns = emu_model_ns(0.0, EMU_PREC_NONE, (double)(count * elem));
    return drv_leave(core_enqueue(s, &op, NULL, NULL));
}

CUresult
cuMemsetD8(CUdeviceptr dst, unsigned char uc, size_t n)
{
    return drv_memset(dst, uc, 1, n, NULL);
}

CUresult
cuMemsetD16(CUdeviceptr dst, unsigned short us, size_t n)
{
    return drv_memset(dst, us, 2, n, NULL);
}

CUresult
cuMemsetD32(CUdeviceptr dst, unsigned int ui, size_t n)
{
    return drv_memset(dst, ui, 4, n, NULL);
}

CUresult
cuMemsetD8Async(CUdeviceptr dst, unsigned char uc, size_t n, CUstream s)
{
    return drv_memset(dst, uc, 1, n, s);
}

CUresult
cuMemsetD16Async(CUdeviceptr dst, unsigned short us, size_t n, CUstream s)
{
    return drv_memset(dst, us, 2, n, s);
}

CUresult
cuMemsetD32Async(CUdeviceptr dst, unsigned int ui, size_t n, CUstream s)
{
    return drv_memset(dst, ui, 4, n, s);
}

/* ---- Pointer attributes ------------------------------------------------------- */

CUresult
cuPointerGetAttribute(void *data, CUpointer_attribute attribute,
                      CUdeviceptr ptr)
{
    struct CUctx_st *owner;
    CUdeviceptr base;
    size_t size;
    int dev, is_host, found;
    CUresult rc = CUDA_SUCCESS;

    if (!data)
        return CUDA_ERROR_INVALID_VALUE;
    core_lock();
    if (!core_initialised()) {
        core_unlock();
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    found = core_find(ptr, &base, &size, &dev, &is_host, &owner);
    if (!found && attribute != CU_POINTER_ATTRIBUTE_IS_MANAGED) {
        /* Memory the driver does not know: plain host memory. */
        core_unlock();
        return CUDA_ERROR_INVALID_VALUE;
    }
    switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        *(CUcontext *)data = owner;
        break;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *(unsigned *)data = is_host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        *(CUdeviceptr *)data = ptr;
        break;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        if (is_host)
            *(void **)data = (void *)ptr;
        else
            rc = CUDA_ERROR_INVALID_VALUE;
        break;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
        *(unsigned *)data = 0;
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        *(int *)data = dev;
        break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        *(CUdeviceptr *)data = base;
        break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        *(size_t *)data = size;
        break;
    case CU_POINTER_ATTRIBUTE_MAPPED:
        *(unsigned *)data = 1;
        break;
    default:
        rc = CUDA_ERROR_INVALID_VALUE;
        break;
    }
    core_unlock();
    return rc;
}

/* ---- Streams ---------------------------------------------------------------- */

CUresult
cuStreamCreate(CUstream *phStream, unsigned int flags)
{
    return cuStreamCreateWithPriority(phStream, flags, DRV_LEAST_PRIORITY);
}

CUresult
cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags,
                           int priority)
{
    struct CUctx_st *ctx;
    struct CUstream_st *s;
    CUresult rc;

    if (!phStream || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING))
        return CUDA_ERROR_INVALID_VALUE;
    rc = drv_enter(&ctx, 1);
    if (rc != CUDA_SUCCESS)
        return rc;
    /* Out-of-range priorities are clamped, as the driver does. */
    if (priority > DRV_LEAST_PRIORITY)
        priority = DRV_LEAST_PRIORITY;
    if (priority < DRV_GREATEST_PRIORITY)
        priority = DRV_GREATEST_PRIORITY;
    rc = core_stream_new(ctx, flags, priority, &s);
    if (rc == CUDA_SUCCESS)
        *phStream = s;
    return drv_leave(rc);
}

/* A user stream of the current context; INVALID_HANDLE otherwise. */
static CUresult
drv_user_stream(struct CUctx_st *ctx, CUstream h, struct CUstream_st **out)
{
    struct CUstream_st *s = core_stream_lookup(h);

    if (!s || s->ctx != ctx)
        return CUDA_ERROR_INVALID_HANDLE;
    *out = s;
    return CUDA_SUCCESS;
}

CUresult
cuStreamDestroy(CUstream hStream)
{
    struct CUctx_st *ctx;
    struct CUstream_st *s;
    CUresult rc = drv_enter(&ctx, 0);

    if (rc != CUDA_SUCCESS)
        return rc;
    rc = drv_user_stream(ctx, hStream, &s);
    if (rc == CUDA_SUCCESS)
        core_stream_destroy(s);
    return drv_leave(rc);
}

/* cuStreamGetId: "the unique Id associated with the stream handle
 * supplied ... unique for the life of the program"; the special streams
 * (NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD) are accepted and name the
 * current context's. A stream made after another was destroyed at the
 * same address has a new id. */
CUresult
cuStreamGetId(CUstream hStream, unsigned long long *streamId)
{
    struct CUctx_st *ctx;
    struct CUstream_st *s;
    CUresult rc;

    if (!streamId)
        return CUDA_ERROR_INVALID_VALUE;
    rc = drv_enter(&ctx, 0);
    if (rc != CUDA_SUCCESS)
        return rc;
    rc = core_stream_resolve(ctx, hStream, &s);
    if (rc == CUDA_SUCCESS)
        *streamId = s->id;
    return drv_leave(rc);
}

CUresult
cuStreamGetFlags(CUstream hStream, unsigned int *flags)
{
    struct CUctx_st *ctx;
    struct CUstream_st *s;
    CUresult rc;

    if (!flags)
        return CUDA_ERROR_INVALID_VALUE;
    rc = drv_enter(&ctx, 0);
    if (rc != CUDA_SUCCESS)
        return rc;
    rc = core_stream_resolve(ctx, hStream, &s);
    if (rc == CUDA_SUCCESS)
        *flags = s->flags;
    return drv_leave(rc);
}

CUresult
cuStreamGetPriority(CUstream hStream, int *priority)
{
    struct CUctx_st *ctx;
    struct CUstream_st *s;
    CUresult rc;

    if (!priority)
        return CUDA_ERROR_INVALID_VALUE;
    rc = drv_enter(&ctx, 0);
    if (rc != CUDA_SUCCESS)
        return rc;
    rc = core_stream_resolve(ctx, hStream, &s);
    if (rc == CUDA_SUCCESS)
        *priority = s->priority;
    return drv_leave(rc);
}

/* A stream that is being captured cannot be waited for or queried: the
 * capture is invalidated. */
static CUresult
drv_capture_wait_check(struct CUstream_st *s)
{
    struct CUstream_st *t;

    if (s->capture == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
        for (t = s->ctx->streams; t; t = t->next)
            if (t->capture_id == s->capture_id &&
                t->capture == CU_STREAM_CAPTURE_STATUS_ACTIVE)
                t->capture = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    if (s->capture == CU_STREAM_CAPTURE_STATUS_INVALIDATED)
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    if (s->kind == CORE_STREAM_LEGACY)
        return core_capture_guard(s->ctx);
    return CUDA_SUCCESS;
}

CUresult
cuStreamSynchronize(CUstream hStream)
{
    struct CUctx_st *ctx;
    struct CUstream_st *s;
    CUresult rc = drv_enter(&ctx, 1);

    if (rc != CUDA_SUCCESS)
        return rc;
    rc = core_stream_resolve(ctx, hStream, &s);
    if (rc == CUDA_SUCCESS)
        rc = drv_capture_wait_check(s);
    if (rc == CUDA_SUCCESS)
        rc = core_sync_stream(s);
    return drv_leave(rc);
}

CUresult
cuStreamQuery(CUstream hStream)
{
    struct CUctx_st *ctx;
    struct CUstream_st *s;
    CUresult rc = drv_enter(&ctx, 1);

    if (rc != CUDA_SUCCESS)
        return rc;
    rc = core_stream_resolve(ctx, hStream, &s);
    if (rc == CUDA_SUCCESS)
        rc = drv_capture_wait_check(s);
    if (rc != CUDA_SUCCESS)
        return drv_leave(rc);
    if (core_stream_pending(s)) {
        /* Work still queued is "running": this query sees it unfinished,
         * and the device makes progress meanwhile, so a polling loop ends. */
        if (core_query_runs())
            core_run_until(s, s->next_seq);
        return drv_leave(CUDA_ERROR_NOT_READY);
    }
    rc = core_sync_stream(s);   /* nothing to run: moves the host clock */
    return drv_leave(rc);
}

CUresult
cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int flags)
{
    struct emu_op op = { "wait-event", NULL, NULL, NULL, 0.0,
                         CU_GRAPH_NODE_TYPE_WAIT_EVENT };
    struct CUctx_st *ctx;
    struct CUstream_st *s;
    struct CUevent_st *e;
    CUresult rc;

    if (flags & ~(unsigned)CU_EVENT_WAIT_EXTERNAL)
        return CUDA_ERROR_INVALID_VALUE;
    rc = drv_enter(&ctx, 1);
    if (rc != CUDA_SUCCESS)
        return rc;
    rc = core_stream_resolve(ctx, hStream, &s);
    if (rc != CUDA_SUCCESS)
        return drv_leave(rc);
    e = core_event_lookup(hEvent);
    if (!e)
        return drv_leave(CUDA_ERROR_INVALID_HANDLE);
    if (e->capture_id && s->capture == CU_STREAM_CAPTURE_STATUS_NONE) {
        /* Waiting on an event recorded inside a capture joins the
         * capture (the fork pattern). */
        struct CUstream_st *t;

        for (t = ctx->streams; t; t = t->next) {
            if (t->capture_id == e->capture_id &&
                t->capture == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
                s->capture = CU_STREAM_CAPTURE_STATUS_ACTIVE;
                s->capture_id = t->capture_id;
                s->capture_mode = t->capture_mode;
                s->capture_thread = t->capture_thread;
                s->graph = t->graph;
                break;
            }
        }
        return drv_leave(CUDA_SUCCESS);
    }
    if (s->capture == CU_STREAM_CAPTURE_STATUS_ACTIVE)
        /* Inside a capture, ordering is the capture's order. */
        return drv_leave(CUDA_SUCCESS);
    return drv_leave(core_enqueue(s, &op, e->mark, NULL));
}

/* ---- Stream capture and graphs ------------------------------------------------ */

static uint64_t drv_next_capture_id;

CUresult
cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
    CUresult rc;

    if (!mode || (*mode != CU_STREAM_CAPTURE_MODE_GLOBAL &&
                  *mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
                  *mode != CU_STREAM_CAPTURE_MODE_RELAXED))
        return CUDA_ERROR_INVALID_VALUE;
    core_lock();
    rc = core_initialised() ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
    if (rc == CUDA_SUCCESS)
        *mode = core_capture_exchange(*mode);
    core_unlock();
    return rc;
}

CUresult
cuStreamBeginCapture(CUstream hStream, CUstreamCaptureMode mode)
{
    struct CUctx_st *ctx;
    struct CUstream_st *s;
    struct CUgraph_st *graph;
    CUresult rc;

    if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL &&
        mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
        mode != CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    rc = drv_enter(&ctx, 1);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (hStream == NULL || hStream == CU_STREAM_LEGACY)
        return drv_leave(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    rc = core_stream_resolve(ctx, hStream, &s);
    if (rc != CUDA_SUCCESS)
        return drv_leave(rc);
    if (s->capture != CU_STREAM_CAPTURE_STATUS_NONE)
        return drv_leave(CUDA_ERROR_ILLEGAL_STATE);
    graph = calloc(1, sizeof(*graph));
    if (graph)
        graph->list = calloc(1, sizeof(*graph->list));
    if (!graph || !graph->list) {
        free(graph);
        return drv_leave(CUDA_ERROR_OUT_OF_MEMORY);
    }
    graph->list->refs = 1;
    graph->ctx = ctx;
    graph->next = ctx->graphs;
    ctx->graphs = graph;
    s->capture = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    s->capture_mode = mode;
    s->capture_id = ++drv_next_capture_id;
    s->capture_thread = pthread_self();
    s->graph = graph;
    return drv_leave(CUDA_SUCCESS);
}

CUresult
cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)
{
    struct CUctx_st *ctx;
    struct CUstream_st *s, *t;
    struct CUgraph_st *graph;
    int invalidated;
    CUresult rc;

    if (!phGraph)
        return CUDA_ERROR_INVALID_VALUE;
    rc = drv_enter(&ctx, 0);
    if (rc != CUDA_SUCCESS)
        return rc;
    rc = core_stream_resolve(ctx, hStream, &s);
    if (rc != CUDA_SUCCESS)
        return drv_leave(rc);
    if (s->capture == CU_STREAM_CAPTURE_STATUS_NONE)
        return drv_leave(CUDA_ERROR_ILLEGAL_STATE);
    if (s->capture_mode != CU_STREAM_CAPTURE_MODE_RELAXED &&
        !pthread_equal(s->capture_thread, pthread_self()))
        return drv_leave(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD);
    graph = s->graph;
    invalidated = s->capture == CU_STREAM_CAPTURE_STATUS_INVALIDATED;
    for (t = ctx->streams; t; t = t->next) {
        if (t->capture != CU_STREAM_CAPTURE_STATUS_NONE &&
            t->capture_id == s->capture_id) {
            t->capture = CU_STREAM_CAPTURE_STATUS_NONE;
            t->graph = NULL;
        }
    }
    s->capture_id = 0;
    if (invalidated) {
        core_graph_free(ctx, graph);
        *phGraph = NULL;
        return drv_leave(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    }
    *phGraph = graph;
    return drv_leave(CUDA_SUCCESS);
}

CUresult
cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *status)
{
    struct CUctx_st *ctx;
    struct CUstream_st *s, *t;
    CUresult rc;

    if (!status)
        return CUDA_ERROR_INVALID_VALUE;
    rc = drv_enter(&ctx, 0);
    if (rc != CUDA_SUCCESS)
        return rc;
    rc = core_stream_resolve(ctx, hStream, &s);
    if (rc != CUDA_SUCCESS)
        return drv_leave(rc);
    if (s->kind == CORE_STREAM_LEGACY) {
        /* Asking about the legacy stream while a blocking stream captures
         * would be an implicit dependency on that capture. */
        for (t = ctx->streams; t; t = t->next)
            if (t->capture == CU_STREAM_CAPTURE_STATUS_ACTIVE &&
                !(t->flags & CU_STREAM_NON_BLOCKING))
                return drv_leave(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    }
    *status = s->capture;
    return drv_leave(CUDA_SUCCESS);
}

CUresult
cuStreamGetCaptureInfo(CUstream hStream, CUstreamCaptureStatus *status,
                       cuuint64_t *id, CUgraph *graph,
                       const CUgraphNode **deps, const CUgraphEdgeData **edges,
                       size_t *ndeps)
{
    CUstreamCaptureStatus st;
    CUresult rc;

    if (!status)
        return CUDA_ERROR_INVALID_VALUE;
    rc = cuStreamIsCapturing(hStream, &st);
    if (rc != CUDA_SUCCESS)
        return rc;
    core_lock();
    *status = st;
    if (id || graph) {
        struct CUctx_st *ctx = core_tls_current();
        struct CUstream_st *s = NULL;

        if (ctx)
            core_stream_resolve(ctx, hStream, &s);
        if (id)
            *id = s && st != CU_STREAM_CAPTURE_STATUS_NONE ? s->capture_id : 0;
        if (graph)
            *graph = s && st == CU_STREAM_CAPTURE_STATUS_ACTIVE ? s->graph
                                                                : NULL;
    }
    /* Node-level dependencies are not modelled: captures are linear. */
    if (deps)
        *deps = NULL;
    if (edges)
        *edges = NULL;
    if (ndeps)
        *ndeps = 0;
    core_unlock();
    return CUDA_SUCCESS;
}

/* ---- Events ------------------------------------------------------------------ */

CUresult
cuEventCreate(CUevent *phEvent, unsigned int flags)
{
    const unsigned known = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING |
                           CU_EVENT_INTERPROCESS;
    struct CUctx_st *ctx;
    struct CUevent_st *e;
    CUresult rc;

    if (!phEvent || (flags & ~known) ||
        ((flags & CU_EVENT_INTERPROCESS) && !(flags & CU_EVENT_DISABLE_TIMING)))
        return CUDA_ERROR_INVALID_VALUE;
    rc = drv_enter(&ctx, 1);
    if (rc != CUDA_SUCCESS)
        return rc;
    rc = (CUresult)emu_fault("event", CUDA_ERROR_OUT_OF_MEMORY);
    if (rc != CUDA_SUCCESS)
        return drv_leave(rc);
    e = calloc(1, sizeof(*e));
    if (!e)
        return drv_leave(CUDA_ERROR_OUT_OF_MEMORY);
    e->ctx = ctx;
    e->flags = flags;
    e->next = ctx->events;
    ctx->events = e;
    *phEvent = e;
    return drv_leave(CUDA_SUCCESS);
}

CUresult
cuEventDestroy(CUevent hEvent)
{
    struct CUctx_st *ctx;
    struct CUevent_st **pp, *e;
    CUresult rc = drv_enter(&ctx, 0);

    if (rc != CUDA_SUCCESS)
        return rc;
    e = core_event_lookup(hEvent);
    if (!e)
        return drv_leave(CUDA_ERROR_INVALID_HANDLE);
    for (pp = &e->ctx->events; *pp != e; pp = &(*pp)->next)
        ;
    *pp = e->next;
    core_mark_put(e->mark);
    free(e);
    return drv_leave(CUDA_SUCCESS);
}

CUresult
cuEventRecord(CUevent hEvent, CUstream hStream)
{
    struct emu_op op = { "event-record", NULL, NULL, NULL, 0.0,
                         CU_GRAPH_NODE_TYPE_EVENT_RECORD };
    struct CUctx_st *ctx;
    struct CUstream_st *s;
    struct CUevent_st *e;
    struct core_mark *mark;
    CUresult rc = drv_enter(&ctx, 1);

    if (rc != CUDA_SUCCESS)
        return rc;
    e = core_event_lookup(hEvent);
    if (!e)
        return drv_leave(CUDA_ERROR_INVALID_HANDLE);
    rc = core_stream_resolve(ctx, hStream, &s);
    if (rc != CUDA_SUCCESS)
        return drv_leave(rc);
    if (e->ctx != s->ctx)
        return drv_leave(CUDA_ERROR_INVALID_HANDLE);
    if (s->capture == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
        e->capture_id = s->capture_id;
        return drv_leave(CUDA_SUCCESS);
    }
    /* A timing event's record holds the stream up (emu_event_record_ns);
     * one made with CU_EVENT_DISABLE_TIMING takes no timestamp and is
     * charged nothing: no measurement says what it costs. */
    if (!(e->flags & CU_EVENT_DISABLE_TIMING))
        op.model_ns = emu_event_record_ns();
    rc = core_enqueue(s, &op, NULL, &mark);
    if (rc != CUDA_SUCCESS)
        return drv_leave(rc);
    core_mark_put(e->mark);
    e->mark = mark;
    e->capture_id = 0;
    return drv_leave(CUDA_SUCCESS);
}

CUresult
cuEventQuery(CUevent hEvent)
{
    struct CUctx_st *ctx;
    struct CUevent_st *e;
    CUresult rc = drv_enter(&ctx, 1);

    if (rc != CUDA_SUCCESS)
        return rc;
    e = core_event_lookup(hEvent);
    if (!e)
        return drv_leave(CUDA_ERROR_INVALID_HANDLE);
    /* Querying an event is not allowed while a global or this thread's
     * thread-local capture is running: it invalidates the capture. */
    rc = core_capture_guard(ctx);
    if (rc != CUDA_SUCCESS)
        return drv_leave(rc);
    if (e->mark && !e->mark->done) {
        /* As cuStreamQuery: unfinished now, finished by the next query. */
        if (core_query_runs())
            core_run_until(e->mark->stream, e->mark->seq);
        return drv_leave(CUDA_ERROR_NOT_READY);
    }
    return drv_leave(core_sync_mark(ctx, e->mark));
}

CUresult
cuEventSynchronize(CUevent hEvent)
{
    struct CUctx_st *ctx;
    struct CUevent_st *e;
    CUresult rc = drv_enter(&ctx, 1);

    if (rc != CUDA_SUCCESS)
        return rc;
    e = core_event_lookup(hEvent);
    if (!e)
        return drv_leave(CUDA_ERROR_INVALID_HANDLE);
    /* Waiting for an event is not allowed while a global or this
     * thread's thread-local capture is running. */
    rc = core_capture_guard(ctx);
    if (rc != CUDA_SUCCESS)
        return drv_leave(rc);
    return drv_leave(core_sync_mark(ctx, e->mark));
}

CUresult
cuEventElapsedTime(float *ms, CUevent hStart, CUevent hEnd)
{
    struct CUctx_st *ctx;
    struct CUevent_st *a, *b;
    CUresult rc;

    if (!ms)
        return CUDA_ERROR_INVALID_VALUE;
    rc = drv_enter(&ctx, 1);
    if (rc != CUDA_SUCCESS)
        return rc;
    a = core_event_lookup(hStart);
    b = core_event_lookup(hEnd);
    if (!a || !b || !a->mark || !b->mark ||
        (a->flags & CU_EVENT_DISABLE_TIMING) ||
        (b->flags & CU_EVENT_DISABLE_TIMING))
        return drv_leave(CUDA_ERROR_INVALID_HANDLE);
    if (!a->mark->done || !b->mark->done)
        return drv_leave(CUDA_ERROR_NOT_READY);
    *ms = (float)((b->mark->end_ns - a->mark->end_ns) / 1e6);
    return drv_leave(CUDA_SUCCESS);
}

/* The pre-13 name of the same call, still exported by the driver. */
#undef cuEventElapsedTime
CUresult cuEventElapsedTime(float *ms, CUevent hStart, CUevent hEnd);

CUresult
cuEventElapsedTime(float *ms, CUevent hStart, CUevent hEnd)
{
    return cuEventElapsedTime_v2(ms, hStart, hEnd);
}

/* ---- Modules and launches ---------------------------------------------------- */

#define DRV_FATBIN_MAGIC 0xBA55ED50u
#define DRV_FATBIN_WRAPPER_MAGIC 0x466243B1u

/* Size of a module image when its format says it, else 0: fatbin
 * (header size + payload), ELF (section header table end), PTX (text). */
static size_t
drv_image_size(const unsigned char *img)
{
    uint32_t magic;

    memcpy(&magic, img, 4);
    if (magic == DRV_FATBIN_MAGIC) {
        uint16_t header;
        uint64_t payload;

        memcpy(&header, img + 6, 2);
        memcpy(&payload, img + 8, 8);
        return header + payload;
    }
    if (memcmp(img, "\177ELF", 4) == 0 && img[4] == 2) {
        uint64_t shoff;
        uint16_t shentsize, shnum;

        memcpy(&shoff, img + 0x28, 8);
        memcpy(&shentsize, img + 0x3a, 2);
        memcpy(&shnum, img + 0x3c, 2);
        return shoff + (uint64_t)shentsize * shnum;
    }
    return 0;
}

static int
drv_image_valid(const unsigned char *img)
{
    uint32_t magic;

    memcpy(&magic, img, 4);
    if (magic == DRV_FATBIN_MAGIC || magic == DRV_FATBIN_WRAPPER_MAGIC ||
        memcmp(img, "\177ELF", 4) == 0)
        return 1;
    /* PTX source: text that declares its version. */
    return strstr((const char *)img, ".version") != NULL &&
           strstr((const char *)img, ".target") != NULL;
}

CUresult
cuModuleLoadData(CUmodule *module, const void *image)
{
    struct CUctx_st *ctx;
    struct CUmod_st *m;
    CUresult rc;

    if (!module || !image)
        return CUDA_ERROR_INVALID_VALUE;
    rc = drv_enter(&ctx, 1);
    if (rc != CUDA_SUCCESS)
        return rc;
    /* Loading a module allocates and copies its code and data
     * synchronously: not allowed while a global or this thread's
     * thread-local capture is running. */
    rc = core_capture_guard(ctx);
    if (rc == CUDA_SUCCESS)
        rc = (CUresult)emu_fault("module", CUDA_ERROR_NO_BINARY_FOR_GPU);
    if (rc != CUDA_SUCCESS)
        return drv_leave(rc);
    if (!drv_image_valid(image))
        return drv_leave(CUDA_ERROR_INVALID_IMAGE);
    m = calloc(1, sizeof(*m));
    if (!m)
        return drv_leave(CUDA_ERROR_OUT_OF_MEMORY);
    m->ctx = ctx;
    m->image = image;
    m->image_size = drv_image_size(image);
    m->next = ctx->modules;
    ctx->modules = m;
    *module = m;
    return drv_leave(CUDA_SUCCESS);
}

CUresult
cuModuleUnload(CUmodule hmod)
{
    struct CUctx_st *ctx;
    struct CUmod_st **pp, *m;
    CUresult rc = drv_enter(&ctx, 0);

    if (rc != CUDA_SUCCESS)
        return rc;
    for (pp = &ctx->modules; *pp && *pp != hmod; pp = &(*pp)->next)
        ;
    if (!*pp)
        return drv_leave(CUDA_ERROR_INVALID_HANDLE);
    m = *pp;
    /* Queued launches of its functions run before it goes. */
    core_sync_ctx(ctx);
    *pp = m->next;
    core_module_free(m);
    return drv_leave(CUDA_SUCCESS);
}

/* 1 if the image names the kernel. A compressed or unsized image cannot be
 * searched and is taken at its word. */
static int
drv_image_has(const struct CUmod_st *m, const char *name)
{
    if (m->image_size == 0 || m->image_compressed)
        return 1;
    return memmem(m->image, m->image_size, name, strlen(name)) != NULL;
}

CUresult
cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
    const struct emu_kernel *k;
    struct CUctx_st *ctx;
    struct CUmod_st *m;
    struct CUfunc_st *f;
    CUresult rc;

    if (!hfunc || !name)
        return CUDA_ERROR_INVALID_VALUE;
    rc = drv_enter(&ctx, 0);
    if (rc != CUDA_SUCCESS)
        return rc;
    m = core_module_lookup(ctx, hmod);
    if (!m)
        return drv_leave(CUDA_ERROR_INVALID_HANDLE);
    k = emu_kernel_find(name);
    if (!k || !drv_image_has(m, name))
        return drv_leave(CUDA_ERROR_NOT_FOUND);
    for (f = m->funcs; f; f = f->next)
        if (f->kernel == k)
            break;
    if (!f) {
        f = calloc(1, sizeof(*f));
        if (!f)
            return drv_leave(CUDA_ERROR_OUT_OF_MEMORY);
        f->mod = m;
        f->kernel = k;
        f->next = m->funcs;
        m->funcs = f;
    }
    *hfunc = f;
    return drv_leave(CUDA_SUCCESS);
}

struct drv_launch {
    struct emu_grid grid;
    /* By-value parameters, each aligned as its type: CUDA takes up to
     * 4 KB. */
    _Alignas(16) unsigned char params[4096];
};

/* ---- The call log (AMPSHIM_EMU_CALL_LOG=1) ---------------------------------- */

/* Whether the environment variable NAME is "1", decided once: every thread
 * may ask, the first to look decides and each gets the same answer, so a
 * relaxed atomic cache is enough. */
static int
drv_env_flag(const char *name, _Atomic int *cache)
{
    int v = atomic_load_explicit(cache, memory_order_relaxed);

    if (v < 0) {
        const char *s = secure_getenv(name);

        v = s && strcmp(s, "1") == 0;
        atomic_store_explicit(cache, v, memory_order_relaxed);
    }
    return v;
}

int
emu_call_log_on(void)
{
    static _Atomic int on = -1;

    return drv_env_flag("AMPSHIM_EMU_CALL_LOG", &on);
}

void
emu_call_log(const char *fmt, ...)
{
    char line[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    /* One stdio call: lines of several threads do not interleave. */
    fprintf(stderr, "ampshim-emu: call %s\n", line);
}

/* AMPSHIM_EMU_KERNEL_STATS=1: per kernel, the launches that ran, the
 * bytes they were charged and their modelled time, on stderr at exit, and
 * the model's rates, for the benchmarks' byte and roofline ratios; and
 * the CPU time the emulator spent running them (its own cost, page faults
 * of the device window included) and the threads it ran, for the
 * benchmarks of its speed. */
#define DRV_STATS_MAX 64

static struct {
    pthread_mutex_t lock;
    int n;
    struct drv_kernel_stats {
        const char *name;
        unsigned long long launches, threads;
        double bytes, model_ns, cpu_ns;
    } k[DRV_STATS_MAX];
} drv_stats = { .lock = PTHREAD_MUTEX_INITIALIZER };

static int
drv_stats_wanted(void)
{
    static _Atomic int wanted = -1;

    return drv_env_flag("AMPSHIM_EMU_KERNEL_STATS", &wanted);
}

static void
drv_stats_add(const char *name, unsigned long long threads, double bytes,
              double model_ns, double cpu_ns)
{
    int i;

    pthread_mutex_lock(&drv_stats.lock);
    for (i = 0; i < drv_stats.n && strcmp(drv_stats.k[i].name, name); i++)
        ;
    if (i == drv_stats.n && drv_stats.n < DRV_STATS_MAX)
        drv_stats.k[drv_stats.n++].name = name;
    if (i < drv_stats.n) {
        drv_stats.k[i].launches++;
        drv_stats.k[i].threads += threads;
        drv_stats.k[i].bytes += bytes;
        drv_stats.k[i].model_ns += model_ns;
        drv_stats.k[i].cpu_ns += cpu_ns;
    }
    pthread_mutex_unlock(&drv_stats.lock);
}

/* The calling thread's CPU time (user and system), in ns. */
static double
drv_thread_cpu_ns(void)
{
    struct timespec t;

    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) != 0)
        return 0.0;
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

__attribute__((destructor)) static void
drv_stats_print(void)
{
    const struct emu_gpu *g;

    if (!drv_stats_wanted())
        return;
    g = emu_gpu();
    fprintf(stderr, "ampshim-emu: model %s fp16_tflops=%g "
            "fp16_efficiency=%g tf32_tflops=%g tf32_efficiency=%g "
            "fp32_tflops=%g fp32_efficiency=%g bandwidth_tbs=%g "
            "mem_efficiency=%g launch_us=%g\n", g->key, g->fp16_tflops,
            g->fp16_efficiency, g->tf32_tflops, g->tf32_efficiency,
            g->fp32_tflops, g->fp32_efficiency, g->bandwidth_tbs,
            g->mem_efficiency, g->launch_latency_us);
    fprintf(stderr, "ampshim-emu: window %s\n", core_window_kind());
    pthread_mutex_lock(&drv_stats.lock);
    for (int i = 0; i < drv_stats.n; i++)
        fprintf(stderr, "ampshim-emu: kernel %s launches=%llu bytes=%.0f "
                "model_us=%.3f cpu_ms=%.1f threads=%llu\n",
                drv_stats.k[i].name, drv_stats.k[i].launches,
                drv_stats.k[i].bytes, drv_stats.k[i].model_ns * 1e-3,
                drv_stats.k[i].cpu_ns * 1e-6, drv_stats.k[i].threads);
    pthread_mutex_unlock(&drv_stats.lock);
}

/* Runs the kernel's own code for every thread; its modelled time follows
 * the memory it touched. */
static CUresult
drv_run_launch(void *arg)
{
    struct drv_launch *l = arg;
    double bytes, cpu_ns = drv_stats_wanted() ? -drv_thread_cpu_ns() : 0.0;
    CUresult rc = emu_grid_run(&l->grid, &bytes);

    core_op_set_model_ns(emu_model_ns(0.0, EMU_PREC_NONE, bytes));
    if (drv_stats_wanted())
        drv_stats_add(l->grid.kernel->name,
                      (unsigned long long)l->grid.grid[0] * l->grid.grid[1] *
                          l->grid.grid[2] * l->grid.block[0] *
                          l->grid.block[1] * l->grid.block[2],
                      bytes, emu_model_ns(0.0, EMU_PREC_NONE, bytes),
                      cpu_ns + drv_thread_cpu_ns());
    if (rc != CUDA_SUCCESS)
        return emu_op_fail(rc, l->grid.kernel->name, "kernel fault");
    return CUDA_SUCCESS;
}

/* Checks the launch configuration against the device limits. */
static CUresult
drv_check_config(const struct CUfunc_st *f, const unsigned grid[3],
                 const unsigned block[3], unsigned shared)
{
    unsigned long threads = (unsigned long)block[0] * block[1] * block[2];
    int smem_limit = f->max_dynamic_smem > 0 ? f->max_dynamic_smem
                                             : DRV_MAX_STATIC_SMEM;

    if (!grid[0] || !grid[1] || !grid[2] || !block[0] || !block[1] ||
        !block[2])
        return CUDA_ERROR_INVALID_VALUE;
    if (grid[0] > 2147483647u || grid[1] > 65535 || grid[2] > 65535 ||
        block[0] > 1024 || block[1] > 1024 || block[2] > 64 ||
        threads > DRV_MAX_BLOCK_THREADS)
        return CUDA_ERROR_INVALID_VALUE;
    if (shared > (unsigned)smem_limit)
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

/* ---- Occupancy ------------------------------------------------------------- */

/* Blocks of `block` threads of kernel k that fit on one multiprocessor of
 * the modelled GPU with `dynamic` bytes of shared memory each: the least
 * of what its threads, its registers, its shared memory and the blocks
 * limit allow, by the occupancy calculator's rules (registers allocated
 * per warp in units of 256; shared memory in units of 128 bytes, plus the
 * 1 KB the system reserves per block from compute capability 8.0). The
 * registers are sm_90's for every model (emu_kernel_resources). */
static int
drv_occupancy(const struct emu_kernel *k, int block, size_t dynamic)
{
    const struct core_gpu_spec *s = core_gpu_spec();
    int warps = (block + 31) / 32, registers, shared, blocks;
    size_t per_block;

    emu_kernel_resources(k, &registers, &shared);
    blocks = s->max_threads_per_sm / 32 / warps;
    if (blocks > s->max_blocks_per_sm)
        blocks = s->max_blocks_per_sm;
    if (registers > 0) {
        int per_warp = (registers * 32 + 255) / 256 * 256;
        int by_registers = 65536 / per_warp / warps;

        if (by_registers < blocks)
            blocks = by_registers;
    }
    per_block = (size_t)shared + dynamic +
                (s->pub.cc_major >= 8 ? 1024u : 0u);
    per_block = (per_block + 127) / 128 * 128;
    if (per_block > 0 && (size_t)s->smem_per_sm / per_block < (size_t)blocks)
        blocks = (int)((size_t)s->smem_per_sm / per_block);
    return blocks;
}

/* NVIDIA documents it as "the number of the maximum active blocks per
 * streaming multiprocessor" for the function at that block size and
 * dynamic shared memory (CUDA Driver API, Occupancy). Flags: 0 or
 * CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE, which changes nothing here (no
 * caching is modelled). */
CUresult
cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *numBlocks,
                                                     CUfunction func,
                                                     int blockSize,
                                                     size_t dynamicSMemSize,
                                                     unsigned int flags)
{
    struct CUctx_st *ctx;
    struct CUfunc_st *fn;
    CUresult rc;

    if (!numBlocks || blockSize <= 0 ||
        blockSize > DRV_MAX_BLOCK_THREADS ||
        (flags & ~(unsigned)CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE))
        return CUDA_ERROR_INVALID_VALUE;
    rc = drv_enter(&ctx, 1);
    if (rc != CUDA_SUCCESS)
        return rc;
    fn = core_func_lookup(ctx, func);
    if (!fn)
        return drv_leave(CUDA_ERROR_INVALID_HANDLE);
    *numBlocks = drv_occupancy(fn->kernel, blockSize, dynamicSMemSize);
    return drv_leave(CUDA_SUCCESS);
}

CUresult
cuOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, CUfunction func,
                                            int blockSize,
                                            size_t dynamicSMemSize)
{
    return cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
        numBlocks, func, blockSize, dynamicSMemSize, CU_OCCUPANCY_DEFAULT);
}

CUresult
cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
               unsigned bx, unsigned by, unsigned bz, unsigned shared,
               CUstream hStream, void **params, void **extra)
{
    struct emu_op op = { NULL, drv_run_launch, free, NULL, 0.0,
                         CU_GRAPH_NODE_TYPE_KERNEL };
    const unsigned grid[3] = { gx, gy, gz }, block[3] = { bx, by, bz };
    struct CUctx_st *ctx;
    struct CUfunc_st *fn;
    struct CUstream_st *s;
    struct drv_launch *l;
    size_t off = 0;
    CUresult rc;
    int i;

    rc = drv_enter(&ctx, 1);
    if (rc != CUDA_SUCCESS)
        return rc;
    fn = core_func_lookup(ctx, f);
    if (!fn)
        return drv_leave(CUDA_ERROR_INVALID_HANDLE);
    rc = drv_check_config(fn, grid, block, shared);
    if (rc == CUDA_SUCCESS && extra)
        /* Packed argument buffers are not modelled. */
        rc = CUDA_ERROR_NOT_SUPPORTED;
    if (rc == CUDA_SUCCESS && fn->kernel->nparams > 0 && !params)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS)
        rc = core_stream_resolve(ctx, hStream, &s);
    if (rc == CUDA_SUCCESS)
        rc = (CUresult)emu_fault("launch", CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
    if (rc != CUDA_SUCCESS)
        return drv_leave(rc);
    l = calloc(1, sizeof(*l));
    if (!l)
        return drv_leave(CUDA_ERROR_OUT_OF_MEMORY);
    l->grid.kernel = fn->kernel;
    memcpy(l->grid.grid, grid, sizeof(grid));
    memcpy(l->grid.block, block, sizeof(block));
    /* The parameters are copied now, each by its size in the kernel's
     * signature: the caller's array lives only for the call. */
    for (i = 0; i < fn->kernel->nparams; i++) {
        size_t n = fn->kernel->param_size[i];
        size_t align = fn->kernel->param_align[i];

        off = (off + align - 1) / align * align;
        if (align > 16 || off + n > sizeof(l->params)) {
            free(l);
            return drv_leave(CUDA_ERROR_INVALID_VALUE);
        }
        memcpy(l->params + off, params[i], n);
        l->grid.params[i] = l->params + off;
        off += n;
    }
    op.name = fn->kernel->name;
    op.arg = l;
    /* Until it runs: the launch latency (drv_run_launch). */
    op.model_ns = emu_model_ns(0.0, EMU_PREC_NONE, 0.0);
    return drv_leave(core_enqueue(s, &op, NULL, NULL));
}
