/* The CUDA runtime stand-in (libcudart.so.13): runtime semantics mapped onto the emulated driver. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu.h"

/*
 * The real runtime keeps a per-thread "current device", binds it lazily to
 * the device's primary context, remembers the last error per thread, and
 * maps each call onto the driver. So does this one. Handles are shared with
 * the driver as in CUDA: cudaStream_t is CUstream, cudaEvent_t is CUevent.
 */

#define RT_VERSION 13000
#define RT_MAX_DEVICES 16
#define RT_CONFIG_DEPTH 16

/* ---- The driver ---------------------------------------------------------- */

/*
 * As NVIDIA's runtime does, this one takes every driver entry point from
 * cuGetProcAddress (looked up once in libcuda.so.1), never through the
 * dynamic linker: a preloaded library that defines a driver symbol does
 * not see the runtime's own calls of it. The header's macros turn each
 * member's name into the versioned one (cuMemAlloc -> cuMemAlloc_v2);
 * cuGetProcAddress takes the base name.
 */
#define RT_DRIVER(X) \
    X(cuCtxGetCurrent) \
    X(cuCtxGetStreamPriorityRange) \
    X(cuCtxSetCurrent) \
    X(cuCtxSynchronize) \
    X(cuDeviceGetAttribute) \
    X(cuDeviceGetCount) \
    X(cuDeviceGetName) \
    X(cuDevicePrimaryCtxReset) \
    X(cuDevicePrimaryCtxRetain) \
    X(cuDeviceTotalMem) \
    X(cuDriverGetVersion) \
    X(cuEventCreate) \
    X(cuEventDestroy) \
    X(cuEventElapsedTime) \
    X(cuEventQuery) \
    X(cuEventRecord) \
    X(cuEventSynchronize) \
    X(cuDeviceGetMemPool) \
    X(cuDeviceSetMemPool) \
    X(cuGraphAddChildGraphNode) \
    X(cuGraphCreate) \
    X(cuGraphDestroy) \
    X(cuGraphExecDestroy) \
    X(cuGraphGetNodes) \
    X(cuGraphExecUpdate) \
    X(cuGraphInstantiateWithFlags) \
    X(cuGraphInstantiateWithParams) \
    X(cuGraphLaunch) \
    X(cuGraphClone) \
    X(cuGraphNodeGetType) \
    X(cuInit) \
    X(cuLaunchKernel) \
    X(cuMemAlloc) \
    X(cuMemAllocAsync) \
    X(cuMemAllocFromPoolAsync) \
    X(cuMemAllocHost) \
    X(cuMemFree) \
    X(cuMemFreeAsync) \
    X(cuMemFreeHost) \
    X(cuMemGetInfo) \
    X(cuMemPoolCreate) \
    X(cuMemPoolDestroy) \
    X(cuMemPoolGetAttribute) \
    X(cuMemPoolSetAttribute) \
    X(cuMemcpy2D) \
    X(cuMemcpyDtoD) \
    X(cuMemcpyDtoDAsync) \
    X(cuMemcpyDtoH) \
    X(cuMemcpyDtoHAsync) \
    X(cuMemcpyHtoD) \
    X(cuMemcpyHtoDAsync) \
    X(cuMemsetD8) \
    X(cuMemsetD8Async) \
    X(cuModuleGetFunction) \
    X(cuModuleLoadData) \
    X(cuPointerGetAttribute) \
    X(cuStreamBeginCapture) \
    X(cuStreamCreate) \
    X(cuStreamCreateWithPriority) \
    X(cuStreamDestroy) \
    X(cuStreamEndCapture) \
    X(cuStreamGetCaptureInfo) \
    X(cuStreamGetFlags) \
    X(cuStreamGetPriority) \
    X(cuStreamIsCapturing) \
    X(cuStreamQuery) \
    X(cuStreamSynchronize) \
    X(cuStreamWaitEvent) \
    X(cuThreadExchangeStreamCaptureMode) \

static struct {
#define RT_DRIVER_MEMBER(sym) __typeof__(&sym) sym;
    RT_DRIVER(RT_DRIVER_MEMBER)
#undef RT_DRIVER_MEMBER
} rt_drv;

__attribute__((constructor)) static void
rt_driver_load(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    __typeof__(&cuGetProcAddress) get_proc;
    CUdriverProcAddressQueryResult found;

    *(void **)&get_proc = lib ? dlsym(lib, "cuGetProcAddress_v2") : NULL;
    if (!get_proc) {
        fprintf(stderr, "libcudart (emulated): no cuGetProcAddress in "
                "libcuda.so.1\n");
        abort();
    }
#define RT_DRIVER_LOOKUP(sym)                                                \
    if (get_proc(#sym, (void **)&rt_drv.sym, RT_VERSION,                    \
                 CU_GET_PROC_ADDRESS_DEFAULT, &found) != CUDA_SUCCESS ||     \
        !rt_drv.sym) {                                                       \
        fprintf(stderr, "libcudart (emulated): the driver has no %s\n",     \
                #sym);                                                       \
        abort();                                                             \
    }
    RT_DRIVER(RT_DRIVER_LOOKUP)
#undef RT_DRIVER_LOOKUP
}

/* ---- Errors ------------------------------------------------------------ */

/* Every cudaError_t with the text cudaGetErrorString gives for it. */
#define RT_ERRORS(X) \
    X(cudaSuccess, "no error") \
    X(cudaErrorInvalidValue, "invalid argument") \
    X(cudaErrorMemoryAllocation, "out of memory") \
    X(cudaErrorInitializationError, "initialization error") \
    X(cudaErrorCudartUnloading, "driver shutting down") \
    X(cudaErrorProfilerDisabled, \
      "profiler disabled while using external profiling tool") \
    X(cudaErrorProfilerNotInitialized, \
      "profiler not initialized: call cudaProfilerInitialize()") \
    X(cudaErrorProfilerAlreadyStarted, "profiler already started") \
    X(cudaErrorProfilerAlreadyStopped, "profiler already stopped") \
    X(cudaErrorInvalidConfiguration, "invalid configuration argument") \
    X(cudaErrorInvalidPitchValue, "invalid pitch argument") \
    X(cudaErrorInvalidSymbol, "invalid device symbol") \
    X(cudaErrorInvalidHostPointer, "invalid host pointer") \
    X(cudaErrorInvalidDevicePointer, "invalid device pointer") \
    X(cudaErrorInvalidTexture, "invalid texture reference") \
    X(cudaErrorInvalidTextureBinding, "texture is not bound to a pointer") \
    X(cudaErrorInvalidChannelDescriptor, "invalid channel descriptor") \
    X(cudaErrorInvalidMemcpyDirection, "invalid copy direction for memcpy") \
    X(cudaErrorAddressOfConstant, "invalid address of constant") \
    X(cudaErrorTextureFetchFailed, "fetch from texture failed") \
    X(cudaErrorTextureNotBound, \
      "cannot fetch from a texture that is not bound") \
    X(cudaErrorSynchronizationError, "incorrect use of __syncthreads()") \
    X(cudaErrorInvalidFilterSetting, \
      "linear filtering not supported for non-float type") \
    X(cudaErrorInvalidNormSetting, \
      "read as normalized float not supported for 32-bit non float type") \
    X(cudaErrorMixedDeviceExecution, \
      "device emulation mode and device execution mode cannot be mixed") \
    X(cudaErrorNotYetImplemented, "feature not yet implemented") \
    X(cudaErrorMemoryValueTooLarge, \
      "memory size or pointer value too large to fit in 32 bit") \
    X(cudaErrorStubLibrary, "CUDA driver is a stub library") \
    X(cudaErrorInsufficientDriver, \
      "CUDA driver version is insufficient for CUDA runtime version") \
    X(cudaErrorCallRequiresNewerDriver, \
      "API call is not supported in the installed CUDA driver") \
    X(cudaErrorInvalidSurface, "invalid surface reference") \
    X(cudaErrorDuplicateVariableName, \
      "duplicate global variable looked up by string name") \
    X(cudaErrorDuplicateTextureName, \
      "duplicate texture looked up by string name") \
    X(cudaErrorDuplicateSurfaceName, \
      "duplicate surface looked up by string name") \
    X(cudaErrorDevicesUnavailable, \
      "CUDA-capable device(s) is/are busy or unavailable") \
    X(cudaErrorIncompatibleDriverContext, "incompatible driver context") \
    X(cudaErrorMissingConfiguration, \
      "__global__ function call is not configured") \
    X(cudaErrorPriorLaunchFailure, \
      "unspecified launch failure in prior launch") \
    X(cudaErrorLaunchMaxDepthExceeded, \
      "launch would exceed maximum depth of nested launches") \
    X(cudaErrorLaunchFileScopedTex, \
      "launch failed because kernel uses unsupported, file-scoped textures") \
    X(cudaErrorLaunchFileScopedSurf, \
      "launch failed because kernel uses unsupported, file-scoped surfaces") \
    X(cudaErrorSyncDepthExceeded, \
      "cudaDeviceSynchronize failed because caller's grid depth exceeds " \
      "cudaLimitDevRuntimeSyncDepth") \
    X(cudaErrorLaunchPendingCountExceeded, \
      "launch failed because launch would exceed " \
      "cudaLimitDevRuntimePendingLaunchCount") \
    X(cudaErrorInvalidDeviceFunction, "invalid device function") \
    X(cudaErrorNoDevice, "no CUDA-capable device is detected") \
    X(cudaErrorInvalidDevice, "invalid device ordinal") \
    X(cudaErrorDeviceNotLicensed, "device doesn't have valid Grid license") \
    X(cudaErrorSoftwareValidityNotEstablished, "integrity checks failed") \
    X(cudaErrorStartupFailure, "startup failure in cuda runtime") \
    X(cudaErrorInvalidKernelImage, "device kernel image is invalid") \
    X(cudaErrorDeviceUninitialized, "invalid device context") \
    X(cudaErrorMapBufferObjectFailed, "mapping of buffer object failed") \
    X(cudaErrorUnmapBufferObjectFailed, "unmapping of buffer object failed") \
    X(cudaErrorArrayIsMapped, "array is mapped") \
    X(cudaErrorAlreadyMapped, "resource already mapped") \
    X(cudaErrorNoKernelImageForDevice, \
      "no kernel image is available for execution on the device") \
    X(cudaErrorAlreadyAcquired, "resource already acquired") \
    X(cudaErrorNotMapped, "resource not mapped") \
    X(cudaErrorNotMappedAsArray, "resource not mapped as array") \
    X(cudaErrorNotMappedAsPointer, "resource not mapped as pointer") \
    X(cudaErrorECCUncorrectable, "uncorrectable ECC error encountered") \
    X(cudaErrorUnsupportedLimit, \
      "limit is not supported on this architecture") \
    X(cudaErrorDeviceAlreadyInUse, \
      "exclusive-thread device already in use by a different thread") \
    X(cudaErrorPeerAccessUnsupported, \
      "peer access is not supported between these two devices") \
    X(cudaErrorInvalidPtx, "a PTX JIT compilation failed") \
    X(cudaErrorInvalidGraphicsContext, "invalid OpenGL or DirectX context") \
    X(cudaErrorNvlinkUncorrectable, \
      "uncorrectable NVLink error detected during the execution") \
    X(cudaErrorJitCompilerNotFound, "PTX JIT compiler library not found") \
    X(cudaErrorUnsupportedPtxVersion, \
      "the provided PTX was compiled with an unsupported toolchain.") \
    X(cudaErrorJitCompilationDisabled, "PTX JIT compilation was disabled") \
    X(cudaErrorUnsupportedExecAffinity, \
      "the provided execution affinity is not supported") \
    X(cudaErrorUnsupportedDevSideSync, \
      "cudaDeviceSynchronize is not supported in device code") \
    X(cudaErrorContained, "an error was contained by the device") \
    X(cudaErrorInvalidSource, "device kernel image is invalid") \
    X(cudaErrorFileNotFound, "file not found") \
    X(cudaErrorSharedObjectSymbolNotFound, "shared object symbol not found") \
    X(cudaErrorSharedObjectInitFailed, "shared object initialization failed") \
    X(cudaErrorOperatingSystem, \
      "OS call failed or operation not supported on this OS") \
    X(cudaErrorInvalidResourceHandle, "invalid resource handle") \
    X(cudaErrorIllegalState, \
      "the operation cannot be performed in the present state") \
    X(cudaErrorLossyQuery, \
      "attempted introspection would be semantically lossy") \
    X(cudaErrorSymbolNotFound, "named symbol not found") \
    X(cudaErrorNotReady, "device not ready") \
    X(cudaErrorIllegalAddress, "an illegal memory access was encountered") \
    X(cudaErrorLaunchOutOfResources, "too many resources requested for launch") \
    X(cudaErrorLaunchTimeout, "the launch timed out and was terminated") \
    X(cudaErrorLaunchIncompatibleTexturing, \
      "launch uses incompatible texturing mode") \
    X(cudaErrorPeerAccessAlreadyEnabled, "peer access is already enabled") \
    X(cudaErrorPeerAccessNotEnabled, "peer access has not been enabled") \
    X(cudaErrorSetOnActiveProcess, \
      "cannot set while device is active in this process") \
    X(cudaErrorContextIsDestroyed, "context is destroyed") \
    X(cudaErrorAssert, "device-side assert triggered") \
    X(cudaErrorTooManyPeers, "peer mapping resources exhausted") \
    X(cudaErrorHostMemoryAlreadyRegistered, \
      "part or all of the requested memory range is already mapped") \
    X(cudaErrorHostMemoryNotRegistered, \
      "pointer does not correspond to a registered memory region") \
    X(cudaErrorHardwareStackError, "hardware stack error") \
    X(cudaErrorIllegalInstruction, "an illegal instruction was encountered") \
    X(cudaErrorMisalignedAddress, "misaligned address") \
    X(cudaErrorInvalidAddressSpace, \
      "operation not supported on global/shared address space") \
    X(cudaErrorInvalidPc, "invalid program counter") \
    X(cudaErrorLaunchFailure, "unspecified launch failure") \
    X(cudaErrorCooperativeLaunchTooLarge, \
      "too many blocks in cooperative launch") \
    X(cudaErrorTensorMemoryLeak, "tensor memory not completely freed") \
    X(cudaErrorNotPermitted, "operation not permitted") \
    X(cudaErrorNotSupported, "operation not supported") \
    X(cudaErrorSystemNotReady, "system not yet initialized") \
    X(cudaErrorSystemDriverMismatch, \
      "system has unsupported display driver / cuda driver combination") \
    X(cudaErrorCompatNotSupportedOnDevice, \
      "forward compatibility was attempted on non supported HW") \
    X(cudaErrorMpsConnectionFailed, \
      "MPS client failed to connect to the MPS control daemon or the MPS " \
      "server") \
    X(cudaErrorMpsRpcFailure, \
      "the remote procedural call between the MPS server and the MPS client " \
      "failed") \
    X(cudaErrorMpsServerNotReady, \
      "MPS server is not ready to accept new MPS client requests") \
    X(cudaErrorMpsMaxClientsReached, \
      "the hardware resources required to create MPS client have been " \
      "exhausted") \
    X(cudaErrorMpsMaxConnectionsReached, \
      "the hardware resources required to support device connections have " \
      "been exhausted") \
    X(cudaErrorMpsClientTerminated, \
      "the MPS client has been terminated by the server") \
    X(cudaErrorCdpNotSupported, \
      "is using CUDA Dynamic Parallelism, but the current configuration, " \
      "like MPS, does not support it") \
    X(cudaErrorCdpVersionMismatch, \
      "unsupported interaction between different versions of CUDA Dynamic " \
      "Parallelism") \
    X(cudaErrorStreamCaptureUnsupported, \
      "operation not permitted when stream is capturing") \
    X(cudaErrorStreamCaptureInvalidated, \
      "operation failed due to a previous error during capture") \
    X(cudaErrorStreamCaptureMerge, \
      "operation would result in a merge of separate capture sequences") \
    X(cudaErrorStreamCaptureUnmatched, \
      "capture was not ended in the same stream as it began") \
    X(cudaErrorStreamCaptureUnjoined, "capturing stream has unjoined work") \
    X(cudaErrorStreamCaptureIsolation, \
      "dependency created on uncaptured work in another stream") \
    X(cudaErrorStreamCaptureImplicit, \
      "operation would make the legacy stream depend on a capturing " \
      "blocking stream") \
    X(cudaErrorCapturedEvent, \
      "operation not permitted on an event last recorded in a capturing " \
      "stream") \
    X(cudaErrorStreamCaptureWrongThread, \
      "attempt to terminate a thread-local capture sequence from another " \
      "thread") \
    X(cudaErrorTimeout, "wait operation timed out") \
    X(cudaErrorGraphExecUpdateFailure, \
      "the graph update was not performed because it included changes which " \
      "violated constraints specific to instantiated graph update") \
    X(cudaErrorExternalDevice, \
      "an async error has occured in external entity outside of CUDA") \
    X(cudaErrorInvalidClusterSize, \
      "a kernel launch error has occurred due to cluster misconfiguration") \
    X(cudaErrorFunctionNotLoaded, \
      "the function handle is not loaded when calling an API that requires " \
      "a loaded function") \
    X(cudaErrorInvalidResourceType, \
      "one or more resources passed in are not valid resource types for the " \
      "operation") \
    X(cudaErrorInvalidResourceConfiguration, \
      "one or more resources are insufficient or non-applicable for the " \
      "operation") \
    X(cudaErrorUnknown, "unknown error")

struct rt_error_text {
    cudaError_t code;
    const char *name;
    const char *text;
};

#define RT_ERROR_ENTRY(code, text) { code, #code, text },
static const struct rt_error_text rt_error_texts[] = {
    RT_ERRORS(RT_ERROR_ENTRY)
};

static const struct rt_error_text *
rt_error_lookup(int code)
{
    for (size_t i = 0; i < sizeof(rt_error_texts) / sizeof(rt_error_texts[0]);
         i++) {
        if ((int)rt_error_texts[i].code == code)
            return &rt_error_texts[i];
    }
    return NULL;
}

/*
 * CUresult to cudaError_t. NVIDIA numbers the runtime codes so that every
 * driver code with a runtime counterpart keeps its value (OUT_OF_MEMORY 2 is
 * cudaErrorMemoryAllocation 2, NO_BINARY_FOR_GPU 209 is
 * cudaErrorNoKernelImageForDevice 209, ...); the few driver codes without
 * one become cudaErrorUnknown, as in the real runtime.
 */
static cudaError_t
rt_from_cu(CUresult r)
{
    switch (r) {
    case CUDA_SUCCESS: return cudaSuccess;
    case CUDA_ERROR_INVALID_VALUE: return cudaErrorInvalidValue;
    case CUDA_ERROR_OUT_OF_MEMORY: return cudaErrorMemoryAllocation;
    case CUDA_ERROR_NOT_INITIALIZED: return cudaErrorInitializationError;
    case CUDA_ERROR_DEINITIALIZED: return cudaErrorCudartUnloading;
    case CUDA_ERROR_NO_DEVICE: return cudaErrorNoDevice;
    case CUDA_ERROR_INVALID_DEVICE: return cudaErrorInvalidDevice;
    case CUDA_ERROR_INVALID_IMAGE: return cudaErrorInvalidKernelImage;
    case CUDA_ERROR_INVALID_CONTEXT: return cudaErrorDeviceUninitialized;
    case CUDA_ERROR_NO_BINARY_FOR_GPU: return cudaErrorNoKernelImageForDevice;
    case CUDA_ERROR_INVALID_HANDLE: return cudaErrorInvalidResourceHandle;
    case CUDA_ERROR_NOT_FOUND: return cudaErrorSymbolNotFound;
    case CUDA_ERROR_NOT_READY: return cudaErrorNotReady;
    case CUDA_ERROR_ILLEGAL_ADDRESS: return cudaErrorIllegalAddress;
    case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES:
        return cudaErrorLaunchOutOfResources;
    case CUDA_ERROR_LAUNCH_FAILED: return cudaErrorLaunchFailure;
    case CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE: return cudaErrorSetOnActiveProcess;
    case CUDA_ERROR_CONTEXT_ALREADY_IN_USE: return cudaErrorDeviceAlreadyInUse;
    case CUDA_ERROR_NOT_SUPPORTED: return cudaErrorNotSupported;
    case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED:
        return cudaErrorStreamCaptureUnsupported;
    case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED:
        return cudaErrorStreamCaptureInvalidated;
    case CUDA_ERROR_CONTEXT_ALREADY_CURRENT: return cudaErrorUnknown;
    default:
        break;
    }
    if (rt_error_lookup((int)r) != NULL)
        return (cudaError_t)r;
    return cudaErrorUnknown;
}

/* Errors that corrupt the context: they stay until cudaDeviceReset. */
static int
rt_is_sticky(cudaError_t e)
{
    switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorECCUncorrectable:
        return 1;
    default:
        return 0;
    }
}

/* ---- Per-thread state and lazy binding ---------------------------------- */

static __thread int rt_device;
static __thread unsigned rt_bound_gen;   /* 0: not bound in this thread */
static __thread cudaError_t rt_last_error;

/* Bumped by cudaDeviceReset so every thread binds again. */
static atomic_uint rt_gen = 1;
static _Atomic cudaError_t rt_sticky[RT_MAX_DEVICES];

static int
rt_thread_device(void)
{
    int dev = emu_current_device();

    return dev >= 0 ? dev : rt_device;
}

/* Records a failed call's status as the thread's last error; sticky errors
 * also mark the device. cudaErrorNotReady is a status, not an error. */
static cudaError_t
rt_ret(cudaError_t e)
{
    if (e == cudaSuccess || e == cudaErrorNotReady)
        return e;
    rt_last_error = e;
    if (rt_is_sticky(e)) {
        int dev = rt_thread_device();

        if (dev >= 0 && dev < RT_MAX_DEVICES)
            atomic_store(&rt_sticky[dev], e);
    }
    return e;
}

static cudaError_t
rt_cu(CUresult r)
{
    return rt_ret(rt_from_cu(r));
}

/* What the runtime does before any call that needs a device: bind the
 * thread's device's primary context unless a context is already current.
 * Fails with the driver's status mapped to the runtime's. */
static cudaError_t
rt_bind(void)
{
    unsigned gen = atomic_load(&rt_gen);
    CUresult r;

    if (rt_bound_gen == gen)
        return cudaSuccess;
    if (rt_bound_gen != 0) {
        /* The context this thread had was reset under it. */
        rt_drv.cuCtxSetCurrent(NULL);
    }
    r = emu_runtime_bind(rt_device);
    if (r != CUDA_SUCCESS)
        return rt_from_cu(r);
    rt_bound_gen = gen;
    return cudaSuccess;
}

/* Device count, initialising the driver on first use. */
static cudaError_t
rt_device_count(int *count)
{
    CUresult r = rt_drv.cuInit(0);

    *count = 0;
    if (r == CUDA_SUCCESS)
        r = rt_drv.cuDeviceGetCount(count);
    return rt_from_cu(r);
}

static cudaError_t
rt_check_device(int dev)
{
    int count;
    cudaError_t e = rt_device_count(&count);

    if (e != cudaSuccess)
        return e;
    if (dev < 0 || dev >= count)
        return cudaErrorInvalidDevice;
    return cudaSuccess;
}

/* ---- Error API ------------------------------------------------------------ */

cudaError_t
cudaGetLastError(void)
{
    cudaError_t e = rt_last_error;
    int dev = rt_thread_device();

    rt_last_error = cudaSuccess;
    if (dev >= 0 && dev < RT_MAX_DEVICES) {
        cudaError_t sticky = atomic_load(&rt_sticky[dev]);

        if (sticky != cudaSuccess)
            return sticky;
    }
    return e;
}

cudaError_t
cudaPeekAtLastError(void)
{
    int dev = rt_thread_device();

    if (dev >= 0 && dev < RT_MAX_DEVICES) {
        cudaError_t sticky = atomic_load(&rt_sticky[dev]);

        if (sticky != cudaSuccess)
            return sticky;
    }
    return rt_last_error;
}

const char *
cudaGetErrorString(cudaError_t error)
{
    const struct rt_error_text *t = rt_error_lookup((int)error);

    return t != NULL ? t->text : "unrecognized error code";
}

const char *
cudaGetErrorName(cudaError_t error)
{
    const struct rt_error_text *t = rt_error_lookup((int)error);

    return t != NULL ? t->name : "unrecognized error code";
}

/* ---- Devices -------------------------------------------------------------- */

cudaError_t
cudaGetDeviceCount(int *count)
{
    if (count == NULL)
        return rt_ret(cudaErrorInvalidValue);
    return rt_ret(rt_device_count(count));
}

cudaError_t
cudaGetDevice(int *device)
{
    if (device == NULL)
        return rt_ret(cudaErrorInvalidValue);
    *device = rt_thread_device();
    return cudaSuccess;
}

cudaError_t
cudaSetDevice(int device)
{
    cudaError_t e = rt_check_device(device);
    CUcontext cur = NULL, primary;
    CUresult r;

    if (e != cudaSuccess)
        return rt_ret(e);
    rt_device = device;
    /* Since CUDA 12 cudaSetDevice makes the device's primary context
     * current at once. */
    rt_drv.cuCtxGetCurrent(&cur);
    if (cur == NULL || emu_current_device() != device) {
        r = rt_drv.cuDevicePrimaryCtxRetain(&primary, device);
        if (r == CUDA_SUCCESS)
            r = rt_drv.cuCtxSetCurrent(primary);
        if (r != CUDA_SUCCESS)
            return rt_cu(r);
    }
    rt_bound_gen = atomic_load(&rt_gen);
    return cudaSuccess;
}

cudaError_t
cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device)
{
    cudaError_t e;

    if (value == NULL)
        return rt_ret(cudaErrorInvalidValue);
    e = rt_check_device(device);
    if (e != cudaSuccess)
        return rt_ret(e);
    /* cudaDeviceAttr and CUdevice_attribute share their values. */
    return rt_cu(rt_drv.cuDeviceGetAttribute(value, (CUdevice_attribute)attr,
                                      device));
}

static int
rt_attr(int dev, CUdevice_attribute attr)
{
    int v = 0;

    if (rt_drv.cuDeviceGetAttribute(&v, attr, dev) != CUDA_SUCCESS)
        return 0;
    return v;
}

struct rt_prop_attr {
    size_t offset;
    int is_size;              /* field is size_t, else int */
    CUdevice_attribute attr;
};

#define RT_PI(field, a) \
    { offsetof(struct cudaDeviceProp, field), 0, CU_DEVICE_ATTRIBUTE_##a }
#define RT_PS(field, a) \
    { offsetof(struct cudaDeviceProp, field), 1, CU_DEVICE_ATTRIBUTE_##a }

/* struct cudaDeviceProp fields that are one device attribute each. */
static const struct rt_prop_attr rt_prop_attrs[] = {
    RT_PS(sharedMemPerBlock, MAX_SHARED_MEMORY_PER_BLOCK),
    RT_PI(regsPerBlock, MAX_REGISTERS_PER_BLOCK),
    RT_PI(warpSize, WARP_SIZE),
    RT_PS(memPitch, MAX_PITCH),
    RT_PI(maxThreadsPerBlock, MAX_THREADS_PER_BLOCK),
    RT_PI(maxThreadsDim[0], MAX_BLOCK_DIM_X),
    RT_PI(maxThreadsDim[1], MAX_BLOCK_DIM_Y),
    RT_PI(maxThreadsDim[2], MAX_BLOCK_DIM_Z),
    RT_PI(maxGridSize[0], MAX_GRID_DIM_X),
    RT_PI(maxGridSize[1], MAX_GRID_DIM_Y),
    RT_PI(maxGridSize[2], MAX_GRID_DIM_Z),
    RT_PS(totalConstMem, TOTAL_CONSTANT_MEMORY),
    RT_PI(major, COMPUTE_CAPABILITY_MAJOR),
    RT_PI(minor, COMPUTE_CAPABILITY_MINOR),
    RT_PS(textureAlignment, TEXTURE_ALIGNMENT),
    RT_PS(texturePitchAlignment, TEXTURE_PITCH_ALIGNMENT),
    RT_PI(multiProcessorCount, MULTIPROCESSOR_COUNT),
    RT_PI(integrated, INTEGRATED),
    RT_PI(canMapHostMemory, CAN_MAP_HOST_MEMORY),
    RT_PS(surfaceAlignment, SURFACE_ALIGNMENT),
    RT_PI(concurrentKernels, CONCURRENT_KERNELS),
    RT_PI(ECCEnabled, ECC_ENABLED),
    RT_PI(pciBusID, PCI_BUS_ID),
    RT_PI(pciDeviceID, PCI_DEVICE_ID),
    RT_PI(pciDomainID, PCI_DOMAIN_ID),
    RT_PI(tccDriver, TCC_DRIVER),
    RT_PI(asyncEngineCount, ASYNC_ENGINE_COUNT),
    RT_PI(unifiedAddressing, UNIFIED_ADDRESSING),
    RT_PI(memoryBusWidth, GLOBAL_MEMORY_BUS_WIDTH),
    RT_PI(l2CacheSize, L2_CACHE_SIZE),
    RT_PI(persistingL2CacheMaxSize, MAX_PERSISTING_L2_CACHE_SIZE),
    RT_PI(maxThreadsPerMultiProcessor, MAX_THREADS_PER_MULTIPROCESSOR),
    RT_PI(streamPrioritiesSupported, STREAM_PRIORITIES_SUPPORTED),
    RT_PI(globalL1CacheSupported, GLOBAL_L1_CACHE_SUPPORTED),
    RT_PI(localL1CacheSupported, LOCAL_L1_CACHE_SUPPORTED),
    RT_PS(sharedMemPerMultiprocessor, MAX_SHARED_MEMORY_PER_MULTIPROCESSOR),
    RT_PI(regsPerMultiprocessor, MAX_REGISTERS_PER_MULTIPROCESSOR),
    RT_PI(managedMemory, MANAGED_MEMORY),
    RT_PI(isMultiGpuBoard, MULTI_GPU_BOARD),
    RT_PI(multiGpuBoardGroupID, MULTI_GPU_BOARD_GROUP_ID),
    RT_PI(hostNativeAtomicSupported, HOST_NATIVE_ATOMIC_SUPPORTED),
    RT_PI(pageableMemoryAccess, PAGEABLE_MEMORY_ACCESS),
    RT_PI(concurrentManagedAccess, CONCURRENT_MANAGED_ACCESS),
    RT_PI(computePreemptionSupported, COMPUTE_PREEMPTION_SUPPORTED),
    RT_PI(canUseHostPointerForRegisteredMem,
          CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM),
    RT_PI(cooperativeLaunch, COOPERATIVE_LAUNCH),
    RT_PS(sharedMemPerBlockOptin, MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
    RT_PI(pageableMemoryAccessUsesHostPageTables,
          PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES),
    RT_PI(directManagedMemAccessFromHost, DIRECT_MANAGED_MEM_ACCESS_FROM_HOST),
    RT_PI(maxBlocksPerMultiProcessor, MAX_BLOCKS_PER_MULTIPROCESSOR),
    RT_PI(accessPolicyMaxWindowSize, MAX_ACCESS_POLICY_WINDOW_SIZE),
    RT_PS(reservedSharedMemPerBlock, RESERVED_SHARED_MEMORY_PER_BLOCK),
    RT_PI(hostRegisterSupported, HOST_REGISTER_SUPPORTED),
    RT_PI(sparseCudaArraySupported, SPARSE_CUDA_ARRAY_SUPPORTED),
    RT_PI(hostRegisterReadOnlySupported, READ_ONLY_HOST_REGISTER_SUPPORTED),
    RT_PI(timelineSemaphoreInteropSupported,
          TIMELINE_SEMAPHORE_INTEROP_SUPPORTED),
    RT_PI(memoryPoolsSupported, MEMORY_POOLS_SUPPORTED),
    RT_PI(gpuDirectRDMASupported, GPU_DIRECT_RDMA_SUPPORTED),
    RT_PI(gpuDirectRDMAFlushWritesOptions, GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS),
    RT_PI(gpuDirectRDMAWritesOrdering, GPU_DIRECT_RDMA_WRITES_ORDERING),
    RT_PI(memoryPoolSupportedHandleTypes, MEMPOOL_SUPPORTED_HANDLE_TYPES),
    RT_PI(deferredMappingCudaArraySupported,
          DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED),
    RT_PI(ipcEventSupported, IPC_EVENT_SUPPORTED),
    RT_PI(clusterLaunch, CLUSTER_LAUNCH),
    RT_PI(unifiedFunctionPointers, UNIFIED_FUNCTION_POINTERS),
    RT_PI(deviceNumaConfig, NUMA_CONFIG),
    RT_PI(deviceNumaId, NUMA_ID),
    RT_PI(mpsEnabled, MPS_ENABLED),
    RT_PI(hostNumaId, HOST_NUMA_ID),
    RT_PI(gpuPciDeviceID, GPU_PCI_DEVICE_ID),
    RT_PI(gpuPciSubsystemID, GPU_PCI_SUBSYSTEM_ID),
    RT_PI(hostNumaMultinodeIpcSupported, HOST_NUMA_MULTINODE_IPC_SUPPORTED),
};

/* The model's identity where the driver has no answer. */
static void
rt_prop_from_model(struct cudaDeviceProp *prop)
{
    const struct emu_gpu *gpu = emu_gpu();

    if (gpu == NULL)
        return;
    if (prop->name[0] == '\0' && gpu->name != NULL) {
        strncpy(prop->name, gpu->name, sizeof(prop->name) - 1);
        prop->name[sizeof(prop->name) - 1] = '\0';
    }
    if (prop->totalGlobalMem == 0)
        prop->totalGlobalMem = gpu->total_mem;
    if (prop->major == 0) {
        prop->major = gpu->cc_major;
        prop->minor = gpu->cc_minor;
    }
    if (prop->multiProcessorCount == 0)
        prop->multiProcessorCount = gpu->sm_count;
}

cudaError_t
cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device)
{
    cudaError_t e;
    size_t total = 0;

    if (prop == NULL)
        return rt_ret(cudaErrorInvalidValue);
    e = rt_check_device(device);
    if (e != cudaSuccess)
        return rt_ret(e);
    memset(prop, 0, sizeof(*prop));
    if (rt_drv.cuDeviceGetName(prop->name, (int)sizeof(prop->name), device) !=
        CUDA_SUCCESS)
        prop->name[0] = '\0';
    if (rt_drv.cuDeviceTotalMem(&total, device) == CUDA_SUCCESS)
        prop->totalGlobalMem = total;
    for (size_t i = 0; i < sizeof(rt_prop_attrs) / sizeof(rt_prop_attrs[0]);
         i++) {
        const struct rt_prop_attr *pa = &rt_prop_attrs[i];
        int v = rt_attr(device, pa->attr);
        char *field = (char *)prop + pa->offset;

        if (pa->is_size) {
            size_t s = (size_t)(unsigned)v;

            memcpy(field, &s, sizeof(s));
        } else {
            memcpy(field, &v, sizeof(v));
        }
    }
    rt_prop_from_model(prop);
    return cudaSuccess;
}

cudaError_t
cudaDeviceSynchronize(void)
{
    cudaError_t e = rt_bind();

    if (e != cudaSuccess)
        return rt_ret(e);
    return rt_cu(rt_drv.cuCtxSynchronize());
}

/* Forgets everything the runtime cached for the reset context. */
static void rt_registry_forget_device(int dev);

cudaError_t
cudaDeviceReset(void)
{
    int dev = rt_thread_device();
    CUresult r;

    if (rt_check_device(dev) != cudaSuccess)
        return rt_ret(cudaErrorInvalidDevice);
    r = rt_drv.cuDevicePrimaryCtxReset(dev);
    if (r != CUDA_SUCCESS)
        return rt_cu(r);
    rt_drv.cuCtxSetCurrent(NULL);
    rt_registry_forget_device(dev);
    atomic_store(&rt_sticky[dev], cudaSuccess);
    atomic_fetch_add(&rt_gen, 1);
    rt_bound_gen = 0;
    return cudaSuccess;
}

cudaError_t
cudaDriverGetVersion(int *driverVersion)
{
    if (driverVersion == NULL)
        return rt_ret(cudaErrorInvalidValue);
    return rt_cu(rt_drv.cuDriverGetVersion(driverVersion));
}

cudaError_t
cudaRuntimeGetVersion(int *runtimeVersion)
{
    if (runtimeVersion == NULL)
        return rt_ret(cudaErrorInvalidValue);
    *runtimeVersion = RT_VERSION;
    return cudaSuccess;
}

/* ---- Device memory ------------------------------------------------------- */

cudaError_t
cudaMalloc(void **devPtr, size_t size)
{
    cudaError_t e;
    CUdeviceptr p = 0;
    CUresult r;

    if (devPtr == NULL)
        return rt_ret(cudaErrorInvalidValue);
    e = rt_bind();
    if (e != cudaSuccess)
        return rt_ret(e);
    /* A zero-byte request succeeds with NULL, unlike cuMemAlloc. */
    if (size == 0) {
        *devPtr = NULL;
        return cudaSuccess;
    }
    r = rt_drv.cuMemAlloc(&p, size);
    if (r != CUDA_SUCCESS)
        return rt_cu(r);
    *devPtr = (void *)(uintptr_t)p;
    return cudaSuccess;
}

cudaError_t
cudaFree(void *devPtr)
{
    cudaError_t e = rt_bind();

    if (e != cudaSuccess)
        return rt_ret(e);
    if (devPtr == NULL)
        return cudaSuccess;
    return rt_cu(rt_drv.cuMemFree((CUdeviceptr)(uintptr_t)devPtr));
}

cudaError_t
cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream)
{
    cudaError_t e;
    CUdeviceptr p = 0;
    CUresult r;

    if (devPtr == NULL)
        return rt_ret(cudaErrorInvalidValue);
    e = rt_bind();
    if (e != cudaSuccess)
        return rt_ret(e);
    if (size == 0) {
        *devPtr = NULL;
        return cudaSuccess;
    }
    r = rt_drv.cuMemAllocAsync(&p, size, hStream);
    if (r != CUDA_SUCCESS)
        return rt_cu(r);
    *devPtr = (void *)(uintptr_t)p;
    return cudaSuccess;
}

cudaError_t
cudaFreeAsync(void *devPtr, cudaStream_t hStream)
{
    cudaError_t e = rt_bind();

    if (e != cudaSuccess)
        return rt_ret(e);
    if (devPtr == NULL)
        return cudaSuccess;
    return rt_cu(rt_drv.cuMemFreeAsync((CUdeviceptr)(uintptr_t)devPtr, hStream));
}

cudaError_t
cudaMemGetInfo(size_t *free, size_t *total)
{
    cudaError_t e;

    if (free == NULL || total == NULL)
        return rt_ret(cudaErrorInvalidValue);
    e = rt_bind();
    if (e != cudaSuccess)
        return rt_ret(e);
    return rt_cu(rt_drv.cuMemGetInfo(free, total));
}

/* ---- Host memory ----------------------------------------------------------- */

/* Page-locked host memory comes from the driver (cuMemAllocHost), so the
 * driver knows it as such: asynchronous copies read it when they run, not
 * at the call, and freeing it waits for the work that may still use it, as
 * with the real runtime. */
cudaError_t
cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
{
    const unsigned known = cudaHostAllocPortable | cudaHostAllocMapped |
                           cudaHostAllocWriteCombined;
    cudaError_t e;

    if (pHost == NULL || (flags & ~known) != 0)
        return rt_ret(cudaErrorInvalidValue);
    e = rt_bind();
    if (e != cudaSuccess)
        return rt_ret(e);
    if (size == 0) {
        *pHost = NULL;
        return cudaSuccess;
    }
    return rt_cu(rt_drv.cuMemAllocHost(pHost, size));
}

cudaError_t
cudaMallocHost(void **ptr, size_t size)
{
    return cudaHostAlloc(ptr, size, cudaHostAllocDefault);
}

cudaError_t
cudaFreeHost(void *ptr)
{
    cudaError_t e;

    if (ptr == NULL)
        return cudaSuccess;
    e = rt_bind();
    if (e != cudaSuccess)
        return rt_ret(e);
    return rt_cu(rt_drv.cuMemFreeHost(ptr));
}

cudaError_t
cudaPointerGetAttributes(struct cudaPointerAttributes *attributes,
                         const void *ptr)
{
    CUdeviceptr dp = (CUdeviceptr)(uintptr_t)ptr;
    unsigned int type = 0;
    int ordinal = 0;
    cudaError_t e;

    if (attributes == NULL)
        return rt_ret(cudaErrorInvalidValue);
    e = rt_bind();
    if (e != cudaSuccess)
        return rt_ret(e);
    memset(attributes, 0, sizeof(*attributes));
    if (ptr != NULL &&
        rt_drv.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, dp) ==
            CUDA_SUCCESS &&
        (type == CU_MEMORYTYPE_DEVICE || type == CU_MEMORYTYPE_HOST)) {
        if (rt_drv.cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                  dp) != CUDA_SUCCESS)
            ordinal = rt_thread_device();
        attributes->device = ordinal;
        attributes->devicePointer = (void *)ptr;
        if (type == CU_MEMORYTYPE_HOST) {
            /* Mapped: one address for host and device (UVA). */
            attributes->type = cudaMemoryTypeHost;
            attributes->hostPointer = (void *)ptr;
        } else {
            attributes->type = cudaMemoryTypeDevice;
            attributes->hostPointer = NULL;
        }
        return cudaSuccess;
    }
    /* Since CUDA 11 memory CUDA does not know is not an error. */
    attributes->type = cudaMemoryTypeUnregistered;
    attributes->device = cudaInvalidDeviceId;
    attributes->hostPointer = (void *)ptr;
    attributes->devicePointer = NULL;
    return cudaSuccess;
}

/* ---- Copies and memsets ----------------------------------------------------- */

/* The direction a copy really takes, after checking `kind` against what
 * the pointers are. Fails with cudaErrorInvalidMemcpyDirection for a kind
 * that is no cudaMemcpyKind, cudaErrorInvalidValue for one the pointers
 * contradict. */
static cudaError_t
rt_copy_direction(void *dst, const void *src, enum cudaMemcpyKind kind,
                  enum cudaMemcpyKind *out)
{
    int dst_dev = emu_is_device_address(dst);
    int src_dev = emu_is_device_address(src);
    enum cudaMemcpyKind actual;

    if ((int)kind < (int)cudaMemcpyHostToHost ||
        (int)kind > (int)cudaMemcpyDefault)
        return cudaErrorInvalidMemcpyDirection;
    if (src_dev)
        actual = dst_dev ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost;
    else
        actual = dst_dev ? cudaMemcpyHostToDevice : cudaMemcpyHostToHost;
    if (kind != cudaMemcpyDefault && kind != actual)
        return cudaErrorInvalidValue;
    *out = actual;
    return cudaSuccess;
}

struct rt_host_copy {
    void *dst;
    const void *src;
    size_t count;
};

static CUresult
rt_host_copy_run(void *arg)
{
    struct rt_host_copy *c = arg;

    memmove(c->dst, c->src, c->count);
    return CUDA_SUCCESS;
}

/* A host-to-host copy in stream order. */
static CUresult
rt_enqueue_host_copy(void *dst, const void *src, size_t count,
                     cudaStream_t stream)
{
    struct rt_host_copy *c = malloc(sizeof(*c));
    struct emu_op op = {
        .name = "cudaMemcpyAsync(HostToHost)",
        .run = rt_host_copy_run,
        .release = free,
        .node = cudaGraphNodeTypeMemcpy,
    };

    if (c == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    c->dst = dst;
    c->src = src;
    c->count = count;
    op.arg = c;
    op.model_ns = emu_model_ns(0.0, EMU_PREC_NONE, (double)count);
    return emu_enqueue(stream, &op);
}

static cudaError_t
rt_memcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
          int async, cudaStream_t stream)
{
    enum cudaMemcpyKind dir;
    cudaError_t e = rt_copy_direction(dst, src, kind, &dir);
    CUdeviceptr d = (CUdeviceptr)(uintptr_t)dst;
    CUdeviceptr s = (CUdeviceptr)(uintptr_t)src;
    CUresult r = CUDA_SUCCESS;

    /* A copy of no bytes succeeds whatever its pointers (NULL ones
     * included) once the kind is one, as NVIDIA's runtime does: its
     * cuBLASLt samples copy an empty bias that way, and RAPIDS found
     * cudaMemcpyAsync of 0 bytes to succeed (rapidsai/rmm#259). */
    if (e != cudaSuccess &&
        !(count == 0 && e == cudaErrorInvalidValue))
        return rt_ret(e);
    e = rt_bind();
    if (e != cudaSuccess)
        return rt_ret(e);
    if (count == 0)
        return cudaSuccess;
    switch (dir) {
    case cudaMemcpyHostToDevice:
        r = async ? rt_drv.cuMemcpyHtoDAsync(d, src, count, stream)
                  : rt_drv.cuMemcpyHtoD(d, src, count);
        break;
    case cudaMemcpyDeviceToHost:
        r = async ? rt_drv.cuMemcpyDtoHAsync(dst, s, count, stream)
                  : rt_drv.cuMemcpyDtoH(dst, s, count);
        break;
    case cudaMemcpyDeviceToDevice:
        r = async ? rt_drv.cuMemcpyDtoDAsync(d, s, count, stream)
                  : rt_drv.cuMemcpyDtoD(d, s, count);
        break;
    default:
        if (async)
            r = rt_enqueue_host_copy(dst, src, count, stream);
        else
            memmove(dst, src, count);
        break;
    }
    return rt_cu(r);
}

cudaError_t
cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
    return rt_memcpy(dst, src, count, kind, 0, NULL);
}

cudaError_t
cudaMemcpyAsync(void *dst, const void *src, size_t count,
                enum cudaMemcpyKind kind, cudaStream_t stream)
{
    return rt_memcpy(dst, src, count, kind, 1, stream);
}

cudaError_t
cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch,
             size_t width, size_t height, enum cudaMemcpyKind kind)
{
    enum cudaMemcpyKind dir;
    CUDA_MEMCPY2D p;
    cudaError_t e = rt_copy_direction(dst, src, kind, &dir);

    if (e != cudaSuccess)
        return rt_ret(e);
    if (width > dpitch || width > spitch)
        return rt_ret(cudaErrorInvalidPitchValue);
    e = rt_bind();
    if (e != cudaSuccess)
        return rt_ret(e);
    if (height == 0 || width == 0)
        return cudaSuccess;
    if (dir == cudaMemcpyHostToHost) {
        for (size_t row = 0; row < height; row++)
            memmove((char *)dst + row * dpitch,
                    (const char *)src + row * spitch, width);
        return cudaSuccess;
    }
    /* One driver copy: the whole range is checked before a byte moves. */
    memset(&p, 0, sizeof(p));
    if (dir == cudaMemcpyDeviceToHost || dir == cudaMemcpyDeviceToDevice) {
        p.srcMemoryType = CU_MEMORYTYPE_DEVICE;
        p.srcDevice = (CUdeviceptr)(uintptr_t)src;
    } else {
        p.srcMemoryType = CU_MEMORYTYPE_HOST;
        p.srcHost = src;
    }
    if (dir == cudaMemcpyHostToDevice || dir == cudaMemcpyDeviceToDevice) {
        p.dstMemoryType = CU_MEMORYTYPE_DEVICE;
        p.dstDevice = (CUdeviceptr)(uintptr_t)dst;
    } else {
        p.dstMemoryType = CU_MEMORYTYPE_HOST;
        p.dstHost = dst;
    }
    p.srcPitch = spitch;
    p.dstPitch = dpitch;
    p.WidthInBytes = width;
    p.Height = height;
    return rt_cu(rt_drv.cuMemcpy2D(&p));
}

cudaError_t
cudaMemset(void *devPtr, int value, size_t count)
{
    cudaError_t e = rt_bind();

    if (e != cudaSuccess)
        return rt_ret(e);
    if (count == 0)
        return cudaSuccess;
    return rt_cu(rt_drv.cuMemsetD8((CUdeviceptr)(uintptr_t)devPtr,
                            (unsigned char)value, count));
}

cudaError_t
cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream)
{
    cudaError_t e = rt_bind();

    if (e != cudaSuccess)
        return rt_ret(e);
    if (count == 0)
        return cudaSuccess;
    return rt_cu(rt_drv.cuMemsetD8Async((CUdeviceptr)(uintptr_t)devPtr,
                                 (unsigned char)value, count, stream));
}

/* ---- Streams ---------------------------------------------------------------- */

cudaError_t
cudaStreamCreateWithPriority(cudaStream_t *pStream, unsigned int flags,
                             int priority)
{
    cudaError_t e;

    if (pStream == NULL || (flags & ~(unsigned)cudaStreamNonBlocking) != 0)
        return rt_ret(cudaErrorInvalidValue);
    e = rt_bind();
    if (e != cudaSuccess)
        return rt_ret(e);
    return rt_cu(rt_drv.cuStreamCreateWithPriority(pStream, flags, priority));
}

cudaError_t
cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags)
{
    cudaError_t e;

    if (pStream == NULL || (flags & ~(unsigned)cudaStreamNonBlocking) != 0)
        return rt_ret(cudaErrorInvalidValue);
    e = rt_bind();
    if (e != cudaSuccess)
        return rt_ret(e);
    return rt_cu(rt_drv.cuStreamCreate(pStream, flags));
}

cudaError_t
cudaStreamCreate(cudaStream_t *pStream)
{
    return cudaStreamCreateWithFlags(pStream, cudaStreamDefault);
}

cudaError_t
cudaStreamDestroy(cudaStream_t stream)
{
    cudaError_t e = rt_bind();

    if (e != cudaSuccess)
        return rt_ret(e);
    /* The default streams are not the caller's to destroy. */
    if (stream == NULL || stream == cudaStreamLegacy ||
        stream == cudaStreamPerThread)
        return rt_ret(cudaErrorInvalidResourceHandle);
    return rt_cu(rt_drv.cuStreamDestroy(stream));
}

cudaError_t
cudaStreamGetFlags(cudaStream_t hStream, unsigned int *flags)
{
    cudaError_t e;

    if (flags == NULL)
        return rt_ret(cudaErrorInvalidValue);
    e = rt_bind();
    if (e != cudaSuccess)
        return rt_ret(e);
    return rt_cu(rt_drv.cuStreamGetFlags(hStream, flags));
}

cudaError_t
cudaStreamGetPriority(cudaStream_t hStream, int *priority)
{
    cudaError_t e;

    if (priority == NULL)
        return rt_ret(cudaErrorInvalidValue);
    e = rt_bind();
    if (e != cudaSuccess)
        return rt_ret(e);
    return rt_cu(rt_drv.cuStreamGetPriority(hStream, priority));
}

cudaError_t
cudaDeviceGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
    cudaError_t e = rt_bind();

    if (e != cudaSuccess)
        return rt_ret(e);
    /* Either pointer may be NULL. */
    return rt_cu(rt_drv.cuCtxGetStreamPriorityRange(leastPriority,
                                             greatestPriority));
}

cudaError_t
cudaStreamSynchronize(cudaStream_t stream)
{
    cudaError_t e = rt_bind();

    if (e != cudaSuccess)
        return rt_ret(e);
    return rt_cu(rt_drv.cuStreamSynchronize(stream));
}

cudaError_t
cudaStreamQuery(cudaStream_t stream)
{
    cudaError_t e = rt_bind();

    if (e != cudaSuccess)
        return rt_ret(e);
    return rt_cu(rt_drv.cuStreamQuery(stream));
}

cudaError_t
cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event,
                    unsigned int flags)
{
    cudaError_t e = rt_bind();

    if (e != cudaSuccess)
        return rt_ret(e);
    return rt_cu(rt_drv.cuStreamWaitEvent(stream, event, flags));
}

cudaError_t
cudaStreamIsCapturing(cudaStream_t stream,
                      enum cudaStreamCaptureStatus *pCaptureStatus)
{
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    cudaError_t e;
    CUresult r;

    if (pCaptureStatus == NULL)
        return rt_ret(cudaErrorInvalidValue);
    e = rt_bind();
    if (e != cudaSuccess)
        return rt_ret(e);
    r = rt_drv.cuStreamIsCapturing(stream, &status);
    if (r != CUDA_SUCCESS)
        return rt_cu(r);
    *pCaptureStatus = (enum cudaStreamCaptureStatus)status;
    return cudaSuccess;
}

cudaError_t
cudaStreamGetCaptureInfo(cudaStream_t stream,
                         enum cudaStreamCaptureStatus *captureStatus_out,
                         unsigned long long *id_out, cudaGraph_t *graph_out,
                         const cudaGraphNode_t **dependencies_out,
                         const cudaGraphEdgeData **edgeData_out,
                         size_t *numDependencies_out)
{
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    cudaError_t e;
    CUresult r;

    if (captureStatus_out == NULL)
        return rt_ret(cudaErrorInvalidValue);
    e = rt_bind();
    if (e != cudaSuccess)
        return rt_ret(e);
    /* cudaGraphEdgeData and CUgraphEdgeData have one layout. */
    r = rt_drv.cuStreamGetCaptureInfo(stream, &status, (cuuint64_t *)id_out,
                               graph_out,
                               dependencies_out,
                               (const CUgraphEdgeData **)edgeData_out,
                               numDependencies_out);
    if (r != CUDA_SUCCESS)
        return rt_cu(r);
    *captureStatus_out = (enum cudaStreamCaptureStatus)status;
    return cudaSuccess;
}

/* Capture and graphs pass through to the driver, whose codes keep their
 * numbers in the runtime (ILLEGAL_STATE 401, STREAM_CAPTURE_* 900-908). */
cudaError_t
cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode)
{
    cudaError_t e = rt_bind();

    if (e != cudaSuccess)
        return rt_ret(e);
    return rt_cu(rt_drv.cuStreamBeginCapture(stream, (CUstreamCaptureMode)mode));
}

cudaError_t
cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode *mode)
{
    return rt_cu(rt_drv.cuThreadExchangeStreamCaptureMode(
        (CUstreamCaptureMode *)mode));
}

cudaError_t
cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *pGraph)
{
    cudaError_t e;

    if (pGraph == NULL)
        return rt_ret(cudaErrorInvalidValue);
    e = rt_bind();
    if (e != cudaSuccess)
        return rt_ret(e);
    return rt_cu(rt_drv.cuStreamEndCapture(stream, pGraph));
}

/* cudaGraphInstantiate and cudaGraphInstantiateWithFlags, one body: a
 * library call within the runtime never goes through its own exported
 * names (NVIDIA's runtime binds them inside itself), so a preloaded hook
 * of one sees only the program's calls of it. */
static cudaError_t
rt_graph_instantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                     unsigned long long flags)
{
    const unsigned long long known =
        cudaGraphInstantiateFlagAutoFreeOnLaunch |
        cudaGraphInstantiateFlagUpload | cudaGraphInstantiateFlagDeviceLaunch |
        cudaGraphInstantiateFlagUseNodePriority;
    cudaError_t e;

    if (pGraphExec == NULL || graph == NULL || (flags & ~known) != 0)
        return rt_ret(cudaErrorInvalidValue);
    e = rt_bind();
    if (e != cudaSuccess)
        return rt_ret(e);
    return rt_cu(rt_drv.cuGraphInstantiateWithFlags(pGraphExec, graph, flags));
}

cudaError_t
cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                     unsigned long long flags)
{
    return rt_graph_instantiate(pGraphExec, graph, flags);
}

/* The runtime's flags: cudaGraphInstantiate's (rt_graph_instantiate). */
cudaError_t
cudaGraphInstantiateWithFlags(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                              unsigned long long flags)
{
    return rt_graph_instantiate(pGraphExec, graph, flags);
}

/* cudaGraphInstantiateParams and CUDA_GRAPH_INSTANTIATE_PARAMS have one
 * layout and their results one numbering. */
cudaError_t
cudaGraphInstantiateWithParams(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                               cudaGraphInstantiateParams *instantiateParams)
{
    cudaError_t e;

    if (pGraphExec == NULL || graph == NULL || instantiateParams == NULL)
        return rt_ret(cudaErrorInvalidValue);
    e = rt_bind();
    if (e != cudaSuccess)
        return rt_ret(e);
    return rt_cu(rt_drv.cuGraphInstantiateWithParams(
        pGraphExec, graph,
        (CUDA_GRAPH_INSTANTIATE_PARAMS *)(void *)instantiateParams));
}

/* cudaGraphExecUpdateResultInfo and CUgraphExecUpdateResultInfo have one
 * layout and their results one numbering. */
cudaError_t
cudaGraphExecUpdate(cudaGraphExec_t hGraphExec, cudaGraph_t hGraph,
                    cudaGraphExecUpdateResultInfo *resultInfo)
{
    cudaError_t e = rt_bind();

    if (e != cudaSuccess)
        return rt_ret(e);
    return rt_cu(rt_drv.cuGraphExecUpdate(
        hGraphExec, hGraph,
        (CUgraphExecUpdateResultInfo *)(void *)resultInfo));
}

/* Binds the runtime, then answers the driver call's status as the
 * runtime's. */
#define RT_BOUND(call)                                                       \
    do {                                                                     \
        cudaError_t e_ = rt_bind();                                          \
        if (e_ != cudaSuccess)                                               \
            return rt_ret(e_);                                               \
        return rt_cu(call);                                                  \
    } while (0)

cudaError_t
cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream)
{
    RT_BOUND(rt_drv.cuGraphLaunch(graphExec, stream));
}

/* Built with --default-stream per-thread, cuda_runtime_api.h names
 * cudaGraphLaunch cudaGraphLaunch_ptsz: stream 0 is the calling thread's
 * stream. */
cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec,
                                 cudaStream_t stream);

cudaError_t
cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream)
{
    RT_BOUND(rt_drv.cuGraphLaunch(graphExec, stream ? stream
                                                    : cudaStreamPerThread));
}

/* cudaGraphClone: a copy of originalGraph (the driver's cuGraphClone). */
cudaError_t
cudaGraphClone(cudaGraph_t *pGraphClone, cudaGraph_t originalGraph)
{
    RT_BOUND(rt_drv.cuGraphClone(pGraphClone, originalGraph));
}

cudaError_t
cudaGraphExecDestroy(cudaGraphExec_t graphExec)
{
    RT_BOUND(rt_drv.cuGraphExecDestroy(graphExec));
}

cudaError_t
cudaGraphDestroy(cudaGraph_t graph)
{
    RT_BOUND(rt_drv.cuGraphDestroy(graph));
}

cudaError_t
cudaGraphCreate(cudaGraph_t *pGraph, unsigned int flags)
{
    RT_BOUND(rt_drv.cuGraphCreate(pGraph, flags));
}

cudaError_t
cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t *nodes, size_t *numNodes)
{
    RT_BOUND(rt_drv.cuGraphGetNodes(graph, nodes, numNodes));
}

/* cudaGraphNodeType and CUgraphNodeType have one numbering. */
cudaError_t
cudaGraphNodeGetType(cudaGraphNode_t node, enum cudaGraphNodeType *pType)
{
    RT_BOUND(rt_drv.cuGraphNodeGetType(node, (CUgraphNodeType *)pType));
}

cudaError_t
cudaGraphAddChildGraphNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                           const cudaGraphNode_t *pDependencies,
                           size_t numDependencies, cudaGraph_t childGraph)
{
    RT_BOUND(rt_drv.cuGraphAddChildGraphNode(pGraphNode, graph, pDependencies,
                                             numDependencies, childGraph));
}

/* ---- Memory pools ------------------------------------------------------------ */

/* cudaMemPoolProps and CUmemPoolProps have one layout, as have the pool
 * attributes' numberings. */
cudaError_t
cudaMemPoolCreate(cudaMemPool_t *memPool, const struct cudaMemPoolProps *props)
{
    RT_BOUND(rt_drv.cuMemPoolCreate(memPool, (const CUmemPoolProps *)props));
}

cudaError_t
cudaMemPoolDestroy(cudaMemPool_t memPool)
{
    RT_BOUND(rt_drv.cuMemPoolDestroy(memPool));
}

cudaError_t
cudaMemPoolSetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr,
                        void *value)
{
    RT_BOUND(rt_drv.cuMemPoolSetAttribute(memPool, (CUmemPool_attribute)attr,
                                          value));
}

cudaError_t
cudaMemPoolGetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr,
                        void *value)
{
    RT_BOUND(rt_drv.cuMemPoolGetAttribute(memPool, (CUmemPool_attribute)attr,
                                          value));
}

cudaError_t
cudaDeviceSetMemPool(int device, cudaMemPool_t memPool)
{
    RT_BOUND(rt_drv.cuDeviceSetMemPool(device, memPool));
}

cudaError_t
cudaDeviceGetMemPool(cudaMemPool_t *memPool, int device)
{
    RT_BOUND(rt_drv.cuDeviceGetMemPool(memPool, device));
}

cudaError_t
cudaMallocFromPoolAsync(void **ptr, size_t size, cudaMemPool_t memPool,
                        cudaStream_t stream)
{
    if (ptr == NULL)
        return rt_ret(cudaErrorInvalidValue);
    RT_BOUND(rt_drv.cuMemAllocFromPoolAsync((CUdeviceptr *)ptr, size, memPool,
                                            stream));
}

/* ---- Events ----------------------------------------------------------------- */

cudaError_t
cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags)
{
    const unsigned known = cudaEventBlockingSync | cudaEventDisableTiming |
                           cudaEventInterprocess;
    cudaError_t e;

    if (event == NULL || (flags & ~known) != 0)
        return rt_ret(cudaErrorInvalidValue);
    /* An interprocess event must not carry timing. */
    if ((flags & cudaEventInterprocess) && !(flags & cudaEventDisableTiming))
        return rt_ret(cudaErrorInvalidValue);
    e = rt_bind();
    if (e != cudaSuccess)
        return rt_ret(e);
    return rt_cu(rt_drv.cuEventCreate(event, flags));
}

cudaError_t
cudaEventCreate(cudaEvent_t *event)
{
    return cudaEventCreateWithFlags(event, cudaEventDefault);
}

cudaError_t
cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
    cudaError_t e = rt_bind();

    if (e != cudaSuccess)
        return rt_ret(e);
    return rt_cu(rt_drv.cuEventRecord(event, stream));
}

cudaError_t
cudaEventSynchronize(cudaEvent_t event)
{
    cudaError_t e = rt_bind();

    if (e != cudaSuccess)
        return rt_ret(e);
    return rt_cu(rt_drv.cuEventSynchronize(event));
}

cudaError_t
cudaEventQuery(cudaEvent_t event)
{
    cudaError_t e = rt_bind();

    if (e != cudaSuccess)
        return rt_ret(e);
    return rt_cu(rt_drv.cuEventQuery(event));
}

cudaError_t
cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    cudaError_t e;

    if (ms == NULL)
        return rt_ret(cudaErrorInvalidValue);
    e = rt_bind();
    if (e != cudaSuccess)
        return rt_ret(e);
    return rt_cu(rt_drv.cuEventElapsedTime(ms, start, end));
}

cudaError_t
cudaEventDestroy(cudaEvent_t event)
{
    cudaError_t e = rt_bind();

    if (e != cudaSuccess)
        return rt_ret(e);
    return rt_cu(rt_drv.cuEventDestroy(event));
}

/* ---- Fat binaries, kernels and launches ------------------------------------ */

/* The wrapper nvcc emits around the fat binary it embeds. */
#define RT_FATBIN_WRAPPER_MAGIC 0x466243b1

struct rt_fatbin_wrapper {
    int magic;
    int version;
    const void *data;
    void *filename_or_fatbins;
};

/* One module per device, loaded the first time a kernel of this binary is
 * launched there, and again after a reset (gen). */
struct rt_module {
    CUmodule module;
    CUcontext ctx;
    unsigned gen;
};

struct rt_fatbin {
    void *handle;                     /* what nvcc's code keeps: first */
    const void *image;                /* what cuModuleLoadData takes */
    struct rt_module modules[RT_MAX_DEVICES];
    struct rt_fatbin *next;
};

struct rt_kernel {
    const void *host_fun;             /* the host stub nvcc registered */
    char *device_name;                /* mangled kernel name */
    struct rt_fatbin *fatbin;
    CUfunction function[RT_MAX_DEVICES];
    unsigned gen[RT_MAX_DEVICES];
    struct rt_kernel *next;
};

struct rt_variable {
    const void *host_var;
    char *device_name;
    size_t size;
    struct rt_fatbin *fatbin;
    struct rt_variable *next;
};

/* The entry points nvcc's generated code calls; only its C++ headers
 * declare them. */
void **__cudaRegisterFatBinary(void *fatCubin);
void __cudaRegisterFatBinaryEnd(void **fatCubinHandle);
void __cudaUnregisterFatBinary(void **fatCubinHandle);
void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun,
                            char *deviceFun, const char *deviceName,
                            int thread_limit, uint3 *tid, uint3 *bid,
                            dim3 *bDim, dim3 *gDim, int *wSize);
void __cudaRegisterVar(void **fatCubinHandle, char *hostVar,
                       char *deviceAddress, const char *deviceName, int ext,
                       size_t size, int constant, int global);
char __cudaInitModule(void **fatCubinHandle);
cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *hostFun);
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim,
                               dim3 blockDim, void **args, size_t sharedMem,
                               cudaStream_t stream);
cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim,
                                    dim3 blockDim, void **args,
                                    size_t sharedMem, cudaStream_t stream);
unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim,
                                     size_t sharedMem,
                                     struct CUstream_st *stream);
cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim,
                                       size_t *sharedMem, void *stream);

static pthread_mutex_t rt_registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rt_fatbin *rt_fatbins;
static struct rt_kernel *rt_kernels;
static struct rt_variable *rt_variables;

static void
rt_registry_forget_device(int dev)
{
    if (dev < 0 || dev >= RT_MAX_DEVICES)
        return;
    pthread_mutex_lock(&rt_registry_lock);
    for (struct rt_fatbin *f = rt_fatbins; f != NULL; f = f->next)
        memset(&f->modules[dev], 0, sizeof(f->modules[dev]));
    for (struct rt_kernel *k = rt_kernels; k != NULL; k = k->next) {
        k->function[dev] = NULL;
        k->gen[dev] = 0;
    }
    pthread_mutex_unlock(&rt_registry_lock);
}

void **
__cudaRegisterFatBinary(void *fatCubin)
{
    const struct rt_fatbin_wrapper *w = fatCubin;
    struct rt_fatbin *f = calloc(1, sizeof(*f));

    if (f == NULL)
        return NULL;
    f->image = fatCubin;
    if (w != NULL && w->magic == RT_FATBIN_WRAPPER_MAGIC)
        f->image = w->data;
    f->handle = fatCubin;
    pthread_mutex_lock(&rt_registry_lock);
    f->next = rt_fatbins;
    rt_fatbins = f;
    pthread_mutex_unlock(&rt_registry_lock);
    return &f->handle;
}

void
__cudaRegisterFatBinaryEnd(void **fatCubinHandle)
{
    /* Modules load lazily at first launch, as with CUDA_MODULE_LOADING=LAZY. */
}

static struct rt_fatbin *
rt_fatbin_of(void **fatCubinHandle)
{
    return (struct rt_fatbin *)((char *)fatCubinHandle -
                                offsetof(struct rt_fatbin, handle));
}

void
__cudaUnregisterFatBinary(void **fatCubinHandle)
{
    struct rt_fatbin *f, **fl;
    struct rt_kernel **kl;
    struct rt_variable **vl;

    if (fatCubinHandle == NULL)
        return;
    f = rt_fatbin_of(fatCubinHandle);
    pthread_mutex_lock(&rt_registry_lock);
    for (kl = &rt_kernels; *kl != NULL;) {
        struct rt_kernel *k = *kl;

        if (k->fatbin == f) {
            *kl = k->next;
            free(k->device_name);
            free(k);
        } else {
            kl = &k->next;
        }
    }
    for (vl = &rt_variables; *vl != NULL;) {
        struct rt_variable *v = *vl;

        if (v->fatbin == f) {
            *vl = v->next;
            free(v->device_name);
            free(v);
        } else {
            vl = &v->next;
        }
    }
    for (fl = &rt_fatbins; *fl != NULL; fl = &(*fl)->next) {
        if (*fl == f) {
            *fl = f->next;
            break;
        }
    }
    pthread_mutex_unlock(&rt_registry_lock);
    /* Modules die with their contexts; at exit the driver may be gone. */
    free(f);
}

void
__cudaRegisterFunction(void **fatCubinHandle, const char *hostFun,
                       char *deviceFun, const char *deviceName,
                       int thread_limit, uint3 *tid, uint3 *bid, dim3 *bDim,
                       dim3 *gDim, int *wSize)
{
    struct rt_kernel *k;

    if (fatCubinHandle == NULL || hostFun == NULL || deviceName == NULL)
        return;
    k = calloc(1, sizeof(*k));
    if (k == NULL)
        return;
    k->device_name = strdup(deviceName);
    if (k->device_name == NULL) {
        free(k);
        return;
    }
    k->host_fun = hostFun;
    k->fatbin = rt_fatbin_of(fatCubinHandle);
    pthread_mutex_lock(&rt_registry_lock);
    k->next = rt_kernels;
    rt_kernels = k;
    pthread_mutex_unlock(&rt_registry_lock);
}

void
__cudaRegisterVar(void **fatCubinHandle, char *hostVar, char *deviceAddress,
                  const char *deviceName, int ext, size_t size, int constant,
                  int global)
{
    struct rt_variable *v;

    if (fatCubinHandle == NULL || hostVar == NULL || deviceName == NULL)
        return;
    v = calloc(1, sizeof(*v));
    if (v == NULL)
        return;
    v->device_name = strdup(deviceName);
    if (v->device_name == NULL) {
        free(v);
        return;
    }
    v->host_var = hostVar;
    v->size = size;
    v->fatbin = rt_fatbin_of(fatCubinHandle);
    pthread_mutex_lock(&rt_registry_lock);
    v->next = rt_variables;
    rt_variables = v;
    pthread_mutex_unlock(&rt_registry_lock);
}

char
__cudaInitModule(void **fatCubinHandle)
{
    return fatCubinHandle != NULL;
}

static struct rt_kernel *
rt_kernel_find(const void *hostFun)
{
    struct rt_kernel *found = NULL;

    pthread_mutex_lock(&rt_registry_lock);
    for (struct rt_kernel *k = rt_kernels; k != NULL; k = k->next) {
        if (k->host_fun == hostFun) {
            found = k;
            break;
        }
    }
    pthread_mutex_unlock(&rt_registry_lock);
    return found;
}

/* Whether `kernel` is a handle this runtime gave out. */
static int
rt_kernel_known(const struct rt_kernel *kernel)
{
    int known = 0;

    pthread_mutex_lock(&rt_registry_lock);
    for (struct rt_kernel *k = rt_kernels; k != NULL; k = k->next) {
        if (k == kernel) {
            known = 1;
            break;
        }
    }
    pthread_mutex_unlock(&rt_registry_lock);
    return known;
}

cudaError_t
__cudaGetKernel(cudaKernel_t *kernel, const void *hostFun)
{
    struct rt_kernel *k;

    if (kernel == NULL)
        return rt_ret(cudaErrorInvalidValue);
    k = rt_kernel_find(hostFun);
    if (k == NULL)
        return rt_ret(cudaErrorInvalidDeviceFunction);
    *kernel = (cudaKernel_t)k;
    return cudaSuccess;
}

/* The kernel's function in the current context, loading its binary's module
 * there first if needed. A binary the driver cannot use, or one without
 * this kernel for the device (the emulator has no host version of it),
 * fails with cudaErrorNoKernelImageForDevice, as on a GPU whose
 * architecture the binary was not built for. */
static cudaError_t
rt_kernel_function(struct rt_kernel *k, CUfunction *out)
{
    unsigned gen = atomic_load(&rt_gen);
    int dev = emu_current_device();
    CUcontext ctx = NULL;
    struct rt_module *m;
    cudaError_t e = cudaSuccess;
    CUresult r;

    if (dev < 0 || dev >= RT_MAX_DEVICES)
        return cudaErrorInvalidDevice;
    rt_drv.cuCtxGetCurrent(&ctx);
    pthread_mutex_lock(&rt_registry_lock);
    if (k->function[dev] != NULL && k->gen[dev] == gen &&
        k->fatbin->modules[dev].ctx == ctx) {
        *out = k->function[dev];
        goto out;
    }
    m = &k->fatbin->modules[dev];
    if (m->module == NULL || m->gen != gen || m->ctx != ctx) {
        r = rt_drv.cuModuleLoadData(&m->module, k->fatbin->image);
        if (r != CUDA_SUCCESS) {
            m->module = NULL;
            e = r == CUDA_ERROR_OUT_OF_MEMORY
                    ? cudaErrorMemoryAllocation
                    : cudaErrorNoKernelImageForDevice;
            goto out;
        }
        m->ctx = ctx;
        m->gen = gen;
    }
    r = rt_drv.cuModuleGetFunction(&k->function[dev], m->module, k->device_name);
    if (r != CUDA_SUCCESS) {
        k->function[dev] = NULL;
        e = r == CUDA_ERROR_NOT_FOUND ? cudaErrorNoKernelImageForDevice
                                      : rt_from_cu(r);
        goto out;
    }
    k->gen[dev] = gen;
    *out = k->function[dev];
out:
    pthread_mutex_unlock(&rt_registry_lock);
    return e;
}

/* The launch configuration limits every CUDA GPU from sm_75 up shares. */
static int
rt_config_valid(dim3 grid, dim3 block)
{
    unsigned long long threads =
        (unsigned long long)block.x * block.y * block.z;

    if (grid.x == 0 || grid.y == 0 || grid.z == 0 ||
        block.x == 0 || block.y == 0 || block.z == 0)
        return 0;
    if (block.x > 1024 || block.y > 1024 || block.z > 64 || threads > 1024)
        return 0;
    if (grid.x > 0x7fffffffu || grid.y > 65535 || grid.z > 65535)
        return 0;
    return 1;
}

static cudaError_t
rt_launch(struct rt_kernel *k, dim3 grid, dim3 block, void **args,
          size_t sharedMem, cudaStream_t stream)
{
    CUfunction f = NULL;
    cudaError_t e;

    if (k == NULL)
        return rt_ret(cudaErrorInvalidDeviceFunction);
    if (!rt_config_valid(grid, block))
        return rt_ret(cudaErrorInvalidConfiguration);
    e = rt_bind();
    if (e != cudaSuccess)
        return rt_ret(e);
    e = rt_kernel_function(k, &f);
    if (e != cudaSuccess)
        return rt_ret(e);
    return rt_cu(rt_drv.cuLaunchKernel(f, grid.x, grid.y, grid.z,
                                block.x, block.y, block.z,
                                (unsigned)sharedMem, stream, args, NULL));
}

cudaError_t
__cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim,
                   void **args, size_t sharedMem, cudaStream_t stream)
{
    struct rt_kernel *k = (struct rt_kernel *)kernel;

    if (k == NULL || !rt_kernel_known(k))
        return rt_ret(cudaErrorInvalidDeviceFunction);
    return rt_launch(k, gridDim, blockDim, args, sharedMem, stream);
}

cudaError_t
__cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim,
                        void **args, size_t sharedMem, cudaStream_t stream)
{
    /* Built with --default-stream per-thread: stream 0 means this
     * thread's stream. */
    if (stream == NULL)
        stream = cudaStreamPerThread;
    return __cudaLaunchKernel(kernel, gridDim, blockDim, args, sharedMem,
                              stream);
}

cudaError_t
cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                 size_t sharedMem, cudaStream_t stream)
{
    return rt_launch(rt_kernel_find(func), gridDim, blockDim, args, sharedMem,
                     stream);
}

/* The <<<grid, block, shared, stream>>> configuration, pushed by the call
 * site and popped by the kernel's host stub; launches may nest while the
 * arguments are evaluated, hence a stack. */
struct rt_call_config {
    dim3 grid;
    dim3 block;
    size_t shared_mem;
    cudaStream_t stream;
};

static __thread struct rt_call_config rt_configs[RT_CONFIG_DEPTH];
static __thread int rt_config_top;

unsigned
__cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
                            struct CUstream_st *stream)
{
    struct rt_call_config *c;

    if (rt_config_top >= RT_CONFIG_DEPTH)
        return 1;
    c = &rt_configs[rt_config_top++];
    c->grid = gridDim;
    c->block = blockDim;
    c->shared_mem = sharedMem;
    c->stream = stream;
    return 0;
}

cudaError_t
__cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem,
                           void *stream)
{
    struct rt_call_config *c;

    if (rt_config_top <= 0)
        return rt_ret(cudaErrorMissingConfiguration);
    c = &rt_configs[--rt_config_top];
    if (gridDim != NULL)
        *gridDim = c->grid;
    if (blockDim != NULL)
        *blockDim = c->block;
    if (sharedMem != NULL)
        *sharedMem = c->shared_mem;
    if (stream != NULL)
        *(cudaStream_t *)stream = c->stream;
    return cudaSuccess;
}
