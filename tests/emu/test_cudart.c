/* The emulated CUDA runtime (libcudart.so.13) against the documented
 * behaviour of the real one: memory, copies, streams, events, devices,
 * errors, nvcc's entry points, and the emulator's fidelity promises (device
 * memory faults on the host, missing synchronisation reads stale data). */
#include "emu.h"

#include <cuda_runtime_api.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

/* nvcc's registration and launch entry points; only its headers declare
 * them. */
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
cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *hostFun);
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim,
                               dim3 blockDim, void **args, size_t sharedMem,
                               cudaStream_t stream);
unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim,
                                     size_t sharedMem,
                                     struct CUstream_st *stream);
cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim,
                                       size_t *sharedMem, void *stream);

#define MIB ((size_t)1 << 20)

/* cuda_runtime_api.h declares it only under
 * CUDA_API_PER_THREAD_DEFAULT_STREAM (as cudaGraphLaunch). */
cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec,
                                 cudaStream_t stream);

static void
fill(unsigned char *p, size_t n, unsigned seed)
{
    size_t i;

    for (i = 0; i < n; i++)
        p[i] = (unsigned char)(seed + i * 7u + (i >> 8));
}

static int
all_bytes(const unsigned char *p, size_t n, unsigned char v)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (p[i] != v)
            return 0;
    return 1;
}

/* Each test starts with no pending error. */
static int
setup_clean(void **state)
{
    (void)cudaGetLastError();
    return 0;
}

/* ---- Devices ------------------------------------------------------------- */

static void
test_device_count_and_properties(void **state)
{
    const struct emu_gpu *gpu = emu_gpu();
    struct cudaDeviceProp prop;
    int count = -1, dev = -1;

    assert_int_equal(cudaGetDeviceCount(&count), cudaSuccess);
    assert_int_equal(count, 1);
    assert_int_equal(cudaGetDeviceCount(NULL), cudaErrorInvalidValue);
    assert_int_equal(cudaGetDevice(&dev), cudaSuccess);
    assert_int_equal(dev, 0);
    assert_int_equal(cudaSetDevice(0), cudaSuccess);
    assert_int_equal(cudaSetDevice(1), cudaErrorInvalidDevice);
    assert_int_equal(cudaSetDevice(-1), cudaErrorInvalidDevice);
    assert_int_equal(cudaGetLastError(), cudaErrorInvalidDevice);

    memset(&prop, 0, sizeof(prop));
    assert_int_equal(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
    assert_string_equal(prop.name, gpu->name);
    assert_int_equal(prop.major, gpu->cc_major);
    assert_int_equal(prop.minor, gpu->cc_minor);
    assert_int_equal(prop.multiProcessorCount, gpu->sm_count);
    assert_true(prop.totalGlobalMem == gpu->total_mem);
    assert_int_equal(prop.warpSize, 32);
    assert_int_equal(prop.maxThreadsPerBlock, 1024);
    assert_int_equal(prop.unifiedAddressing, 1);
    assert_int_equal(cudaGetDeviceProperties(&prop, 1),
                     cudaErrorInvalidDevice);
    assert_int_equal(cudaGetDeviceProperties(NULL, 0), cudaErrorInvalidValue);
}

static void
test_device_attribute(void **state)
{
    const struct emu_gpu *gpu = emu_gpu();
    int v = -1, least = 99, greatest = 99;

    assert_int_equal(cudaDeviceGetAttribute(
                         &v, cudaDevAttrComputeCapabilityMajor, 0),
                     cudaSuccess);
    assert_int_equal(v, gpu->cc_major);
    assert_int_equal(cudaDeviceGetAttribute(
                         &v, cudaDevAttrComputeCapabilityMinor, 0),
                     cudaSuccess);
    assert_int_equal(v, gpu->cc_minor);
    assert_int_equal(cudaDeviceGetAttribute(
                         &v, cudaDevAttrMultiProcessorCount, 0),
                     cudaSuccess);
    assert_int_equal(v, gpu->sm_count);
    assert_int_equal(cudaDeviceGetAttribute(&v, cudaDevAttrWarpSize, 0),
                     cudaSuccess);
    assert_int_equal(v, 32);
    assert_int_equal(cudaDeviceGetAttribute(NULL, cudaDevAttrWarpSize, 0),
                     cudaErrorInvalidValue);
    assert_int_equal(cudaDeviceGetAttribute(&v, cudaDevAttrWarpSize, 3),
                     cudaErrorInvalidDevice);
    assert_int_equal(cudaDeviceGetAttribute(&v, (enum cudaDeviceAttr)100000,
                                            0),
                     cudaErrorInvalidValue);
    assert_int_equal(cudaDeviceGetStreamPriorityRange(&least, &greatest),
                     cudaSuccess);
    assert_int_equal(least, 0);
    assert_true(greatest < 0);
    assert_int_equal(cudaDeviceGetStreamPriorityRange(NULL, NULL),
                     cudaSuccess);
}

static void
test_versions(void **state)
{
    int v = 0;

    assert_int_equal(cudaRuntimeGetVersion(&v), cudaSuccess);
    assert_true(v >= 13000 && v < 14000);
    assert_int_equal(cudaDriverGetVersion(&v), cudaSuccess);
    assert_true(v >= 13000);
    assert_int_equal(cudaRuntimeGetVersion(NULL), cudaErrorInvalidValue);
}

/* ---- Errors --------------------------------------------------------------- */

static void
test_last_error_semantics(void **state)
{
    assert_int_equal(cudaGetLastError(), cudaSuccess);
    assert_int_equal(cudaMalloc(NULL, 16), cudaErrorInvalidValue);
    /* Peek leaves the error in place; Get returns it and clears it. */
    assert_int_equal(cudaPeekAtLastError(), cudaErrorInvalidValue);
    assert_int_equal(cudaPeekAtLastError(), cudaErrorInvalidValue);
    assert_int_equal(cudaGetLastError(), cudaErrorInvalidValue);
    assert_int_equal(cudaGetLastError(), cudaSuccess);
    assert_int_equal(cudaPeekAtLastError(), cudaSuccess);
    /* A later success does not clear it; a later error replaces it. */
    assert_int_equal(cudaSetDevice(7), cudaErrorInvalidDevice);
    assert_int_equal(cudaSetDevice(0), cudaSuccess);
    assert_int_equal(cudaPeekAtLastError(), cudaErrorInvalidDevice);
    assert_int_equal(cudaMalloc(NULL, 16), cudaErrorInvalidValue);
    assert_int_equal(cudaGetLastError(), cudaErrorInvalidValue);
    assert_int_equal(cudaGetLastError(), cudaSuccess);
}

static void *
thread_raise_error(void *arg)
{
    cudaError_t *seen = arg;

    seen[0] = cudaMalloc(NULL, 1);
    seen[1] = cudaPeekAtLastError();
    return NULL;
}

/* The last error belongs to the thread that raised it. */
static void
test_last_error_is_per_thread(void **state)
{
    cudaError_t seen[2] = { cudaSuccess, cudaSuccess };
    pthread_t t;

    assert_int_equal(pthread_create(&t, NULL, thread_raise_error, seen), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(seen[0], cudaErrorInvalidValue);
    assert_int_equal(seen[1], cudaErrorInvalidValue);
    assert_int_equal(cudaPeekAtLastError(), cudaSuccess);
}

static void
test_error_names_and_strings(void **state)
{
    static const struct {
        cudaError_t e;
        const char *name;
        const char *text;
    } cases[] = {
        { cudaSuccess, "cudaSuccess", "no error" },
        { cudaErrorInvalidValue, "cudaErrorInvalidValue",
          "invalid argument" },
        { cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation",
          "out of memory" },
        { cudaErrorInvalidDevicePointer, "cudaErrorInvalidDevicePointer",
          "invalid device pointer" },
        { cudaErrorInvalidMemcpyDirection,
          "cudaErrorInvalidMemcpyDirection",
          "invalid copy direction for memcpy" },
        { cudaErrorInvalidDevice, "cudaErrorInvalidDevice",
          "invalid device ordinal" },
        { cudaErrorNoKernelImageForDevice,
          "cudaErrorNoKernelImageForDevice",
          "no kernel image is available for execution on the device" },
        { cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle",
          "invalid resource handle" },
        { cudaErrorNotReady, "cudaErrorNotReady", "device not ready" },
        { cudaErrorIllegalAddress, "cudaErrorIllegalAddress",
          "an illegal memory access was encountered" },
        { cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration",
          "invalid configuration argument" },
    };
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        assert_string_equal(cudaGetErrorName(cases[i].e), cases[i].name);
        assert_string_equal(cudaGetErrorString(cases[i].e), cases[i].text);
    }
    assert_string_equal(cudaGetErrorName((cudaError_t)12345),
                        "unrecognized error code");
    assert_string_equal(cudaGetErrorString((cudaError_t)12345),
                        "unrecognized error code");
    /* Neither touches the last error. */
    assert_int_equal(cudaPeekAtLastError(), cudaSuccess);
}

/* ---- Memory ----------------------------------------------------------------- */

static void
test_malloc_free(void **state)
{
    size_t free0 = 0, total = 0, free1 = 0;
    void *d = NULL, *big = NULL;
    int on_stack = 0;

    assert_int_equal(cudaMemGetInfo(&free0, &total), cudaSuccess);
    assert_true(total == emu_gpu()->total_mem);
    assert_true(free0 <= total);
    assert_int_equal(cudaMalloc(&d, 64 * MIB), cudaSuccess);
    assert_non_null(d);
    assert_int_equal((uintptr_t)d % 256, 0);
    assert_int_equal(cudaMemGetInfo(&free1, &total), cudaSuccess);
    assert_true(free0 - free1 >= 64 * MIB);
    assert_int_equal(cudaMemGetInfo(NULL, &total), cudaErrorInvalidValue);

    assert_int_equal(cudaMalloc(NULL, 16), cudaErrorInvalidValue);
    /* More than the modelled GPU has. */
    assert_int_equal(cudaMalloc(&big, total + MIB), cudaErrorMemoryAllocation);
    assert_int_equal(cudaGetLastError(), cudaErrorMemoryAllocation);

    /* Only the start of a live allocation can be freed. */
    assert_int_equal(cudaFree((char *)d + 256), cudaErrorInvalidValue);
    assert_int_equal(cudaFree(&on_stack), cudaErrorInvalidValue);
    assert_int_equal(cudaFree(d), cudaSuccess);
    assert_int_equal(cudaFree(d), cudaErrorInvalidValue);
    assert_int_equal(cudaFree(NULL), cudaSuccess);
    assert_int_equal(cudaMemGetInfo(&free1, &total), cudaSuccess);
    assert_true(free1 == free0);
    (void)cudaGetLastError();
}

static void
test_malloc_host(void **state)
{
    unsigned char *h = NULL, *plain = malloc(64);
    void *d = NULL, *h2 = NULL;

    assert_non_null(plain);
    assert_int_equal(cudaMallocHost((void **)&h, MIB), cudaSuccess);
    assert_non_null(h);
    /* Page-locked memory is ordinary host memory to the host. */
    memset(h, 0x5a, MIB);
    assert_true(all_bytes(h, MIB, 0x5a));
    assert_int_equal(cudaMallocHost(NULL, 16), cudaErrorInvalidValue);
    assert_int_equal(cudaHostAlloc(&h2, 16, 0x80u), cudaErrorInvalidValue);
    assert_int_equal(cudaHostAlloc(&h2, 4096, cudaHostAllocPortable),
                     cudaSuccess);
    assert_int_equal(cudaFreeHost(h2), cudaSuccess);

    assert_int_equal(cudaMalloc(&d, 256), cudaSuccess);
    assert_int_equal(cudaFreeHost(plain), cudaErrorInvalidValue);
    assert_int_equal(cudaFreeHost(d), cudaErrorInvalidValue);
    assert_int_equal(cudaFreeHost(h), cudaSuccess);
    assert_int_equal(cudaFreeHost(h), cudaErrorInvalidValue);
    assert_int_equal(cudaFree(d), cudaSuccess);
    free(plain);
    (void)cudaGetLastError();
}

static void
test_pointer_attributes(void **state)
{
    struct cudaPointerAttributes a;
    unsigned char *d = NULL, *h = NULL;
    int on_stack = 0;
    void *heap = malloc(32);

    assert_non_null(heap);
    assert_int_equal(cudaMalloc((void **)&d, 4096), cudaSuccess);
    assert_int_equal(cudaMallocHost((void **)&h, 4096), cudaSuccess);

    memset(&a, 0x7f, sizeof(a));
    assert_int_equal(cudaPointerGetAttributes(&a, d), cudaSuccess);
    assert_int_equal(a.type, cudaMemoryTypeDevice);
    assert_int_equal(a.device, 0);
    assert_ptr_equal(a.devicePointer, d);
    assert_null(a.hostPointer);
    /* Inside an allocation too. */
    assert_int_equal(cudaPointerGetAttributes(&a, d + 100), cudaSuccess);
    assert_int_equal(a.type, cudaMemoryTypeDevice);
    assert_ptr_equal(a.devicePointer, d + 100);

    memset(&a, 0x7f, sizeof(a));
    assert_int_equal(cudaPointerGetAttributes(&a, h), cudaSuccess);
    assert_int_equal(a.type, cudaMemoryTypeHost);
    assert_int_equal(a.device, 0);
    assert_ptr_equal(a.hostPointer, h);
    assert_ptr_equal(a.devicePointer, h);       /* mapped, one address */

    /* Since CUDA 11 unregistered host memory is no error. */
    memset(&a, 0x7f, sizeof(a));
    assert_int_equal(cudaPointerGetAttributes(&a, &on_stack), cudaSuccess);
    assert_int_equal(a.type, cudaMemoryTypeUnregistered);
    assert_null(a.devicePointer);
    assert_int_equal(cudaPointerGetAttributes(&a, heap), cudaSuccess);
    assert_int_equal(a.type, cudaMemoryTypeUnregistered);

    assert_int_equal(cudaPointerGetAttributes(NULL, d),
                     cudaErrorInvalidValue);
    assert_int_equal(cudaFree(d), cudaSuccess);
    /* A freed allocation is device memory no more. */
    assert_int_equal(cudaPointerGetAttributes(&a, d), cudaSuccess);
    assert_int_not_equal(a.type, cudaMemoryTypeDevice);
    assert_int_equal(cudaFreeHost(h), cudaSuccess);
    free(heap);
    (void)cudaGetLastError();
}

/* Freeing page-locked memory waits for the work that may still use it. */
static void
test_free_host_waits_for_pending_copies(void **state)
{
    cudaStream_t s = NULL;
    unsigned char *h = NULL;
    void *d = NULL;

    assert_int_equal(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking),
                     cudaSuccess);
    assert_int_equal(cudaMalloc(&d, 8 * MIB), cudaSuccess);
    assert_int_equal(cudaMallocHost((void **)&h, 8 * MIB), cudaSuccess);
    assert_int_equal(cudaMemsetAsync(d, 4, 8 * MIB, s), cudaSuccess);
    assert_int_equal(cudaMemcpyAsync(h, d, 8 * MIB, cudaMemcpyDeviceToHost,
                                     s),
                     cudaSuccess);
    assert_int_equal(cudaFreeHost(h), cudaSuccess);
    assert_int_equal(cudaStreamQuery(s), cudaSuccess);
    assert_int_equal(cudaStreamDestroy(s), cudaSuccess);
    assert_int_equal(cudaFree(d), cudaSuccess);
}

/* ---- Copies ------------------------------------------------------------------ */

static void
test_memcpy_all_kinds(void **state)
{
    const size_t n = 3 * MIB + 17;
    unsigned char *src = malloc(n), *dst = malloc(n), *hh = malloc(n);
    void *d1 = NULL, *d2 = NULL;
    int k;

    assert_true(src && dst && hh);
    assert_int_equal(cudaMalloc(&d1, n), cudaSuccess);
    assert_int_equal(cudaMalloc(&d2, n), cudaSuccess);

    /* Explicit kinds, then cudaMemcpyDefault (unified addressing). */
    for (k = 0; k < 2; k++) {
        fill(src, n, 11u + (unsigned)k);
        memset(dst, 0, n);
        memset(hh, 0, n);
        assert_int_equal(cudaMemcpy(d1, src, n, k ? cudaMemcpyDefault
                                                  : cudaMemcpyHostToDevice),
                         cudaSuccess);
        assert_int_equal(cudaMemcpy(d2, d1, n, k ? cudaMemcpyDefault
                                                 : cudaMemcpyDeviceToDevice),
                         cudaSuccess);
        assert_int_equal(cudaMemcpy(dst, d2, n, k ? cudaMemcpyDefault
                                                  : cudaMemcpyDeviceToHost),
                         cudaSuccess);
        assert_memory_equal(dst, src, n);
        assert_int_equal(cudaMemcpy(hh, dst, n, k ? cudaMemcpyDefault
                                                  : cudaMemcpyHostToHost),
                         cudaSuccess);
        assert_memory_equal(hh, src, n);
    }
    /* An offset range inside the allocation. */
    memset(dst, 0, n);
    assert_int_equal(cudaMemcpy(dst, (char *)d1 + 1000, 5000,
                                cudaMemcpyDeviceToHost),
                     cudaSuccess);
    assert_memory_equal(dst, src + 1000, 5000);

    /* Not a cudaMemcpyKind. */
    assert_int_equal(cudaMemcpy(dst, d1, 16, (enum cudaMemcpyKind)7),
                     cudaErrorInvalidMemcpyDirection);
    /* A kind the pointers contradict fails and copies nothing. */
    memset(dst, 0xee, 64);
    assert_int_not_equal(cudaMemcpy(dst, d1, 64, cudaMemcpyHostToDevice),
                         cudaSuccess);
    assert_true(all_bytes(dst, 64, 0xee));
    /* Past the end of the allocation. */
    assert_int_equal(cudaMemcpy(dst, d1, n + 1, cudaMemcpyDeviceToHost),
                     cudaErrorInvalidValue);
    assert_int_equal(cudaMemcpy((char *)d1 + n - 8, src, 16,
                                cudaMemcpyHostToDevice),
                     cudaErrorInvalidValue);
    assert_int_equal(cudaMemcpy(dst, d1, 0, cudaMemcpyDeviceToHost),
                     cudaSuccess);

    assert_int_equal(cudaFree(d1), cudaSuccess);
    /* A freed allocation is no copy source. */
    assert_int_equal(cudaMemcpy(dst, d1, 16, cudaMemcpyDeviceToHost),
                     cudaErrorInvalidValue);
    assert_int_equal(cudaFree(d2), cudaSuccess);
    free(src);
    free(dst);
    free(hh);
    (void)cudaGetLastError();
}

static void
test_memcpy_async(void **state)
{
    const size_t n = MIB;
    unsigned char *src = malloc(n), *want = malloc(n), *pinned = NULL;
    cudaStream_t s = NULL;
    void *d = NULL;

    assert_true(src && want);
    assert_int_equal(cudaStreamCreate(&s), cudaSuccess);
    assert_int_equal(cudaMalloc(&d, n), cudaSuccess);
    assert_int_equal(cudaMallocHost((void **)&pinned, n), cudaSuccess);

    fill(src, n, 3);
    memcpy(want, src, n);
    assert_int_equal(cudaMemcpyAsync(d, src, n, cudaMemcpyHostToDevice, s),
                     cudaSuccess);
    /* A pageable source is staged at the call: reusing it is safe. */
    memset(src, 0, n);
    memset(pinned, 0, n);
    assert_int_equal(cudaMemcpyAsync(pinned, d, n, cudaMemcpyDeviceToHost, s),
                     cudaSuccess);
    assert_int_equal(cudaStreamSynchronize(s), cudaSuccess);
    assert_memory_equal(pinned, want, n);

    /* On the legacy default stream, with cudaMemcpyDefault. */
    memset(pinned, 0, n);
    assert_int_equal(cudaMemcpyAsync(pinned, d, n, cudaMemcpyDefault, 0),
                     cudaSuccess);
    assert_int_equal(cudaStreamSynchronize(0), cudaSuccess);
    assert_memory_equal(pinned, want, n);
    /* Host to host in stream order. */
    memset(src, 0, n);
    assert_int_equal(cudaMemcpyAsync(src, pinned, n, cudaMemcpyHostToHost, s),
                     cudaSuccess);
    assert_int_equal(cudaStreamSynchronize(s), cudaSuccess);
    assert_memory_equal(src, want, n);

    assert_int_equal(cudaMemcpyAsync(pinned, d, 16, (enum cudaMemcpyKind)9,
                                     s),
                     cudaErrorInvalidMemcpyDirection);
    assert_int_equal(cudaMemcpyAsync(pinned, d, n + 1,
                                     cudaMemcpyDeviceToHost, s),
                     cudaErrorInvalidValue);

    /* A page-locked source is read when the copy runs: changing it before
     * the stream is waited for changes what arrives. */
    fill(pinned, n, 5);
    assert_int_equal(cudaMemcpyAsync(d, pinned, n, cudaMemcpyHostToDevice, s),
                     cudaSuccess);
    memset(pinned, 0x99, n);
    assert_int_equal(cudaStreamSynchronize(s), cudaSuccess);
    memset(src, 0, n);
    assert_int_equal(cudaMemcpy(src, d, n, cudaMemcpyDeviceToHost),
                     cudaSuccess);
    assert_true(all_bytes(src, n, 0x99));

    assert_int_equal(cudaStreamDestroy(s), cudaSuccess);
    assert_int_equal(cudaFreeHost(pinned), cudaSuccess);
    assert_int_equal(cudaFree(d), cudaSuccess);
    free(src);
    free(want);
    (void)cudaGetLastError();
}

static void
test_memcpy_2d(void **state)
{
    enum { W = 100, H = 37, SP = 128, DP = 256 };
    unsigned char *src = malloc(SP * H), *back = malloc(SP * H);
    unsigned char *dev_view = malloc(DP * H);
    void *d = NULL;
    size_t r;

    assert_true(src && back && dev_view);
    fill(src, SP * H, 9);
    assert_int_equal(cudaMalloc(&d, DP * H), cudaSuccess);
    assert_int_equal(cudaMemset(d, 0x11, DP * H), cudaSuccess);
    assert_int_equal(cudaMemcpy2D(d, DP, src, SP, W, H,
                                  cudaMemcpyHostToDevice),
                     cudaSuccess);
    /* The rows landed at the device pitch; the padding is untouched. */
    assert_int_equal(cudaMemcpy(dev_view, d, DP * H, cudaMemcpyDeviceToHost),
                     cudaSuccess);
    for (r = 0; r < H; r++) {
        assert_memory_equal(dev_view + r * DP, src + r * SP, W);
        assert_true(all_bytes(dev_view + r * DP + W, DP - W, 0x11));
    }
    memset(back, 0, SP * H);
    assert_int_equal(cudaMemcpy2D(back, SP, d, DP, W, H, cudaMemcpyDefault),
                     cudaSuccess);
    for (r = 0; r < H; r++) {
        assert_memory_equal(back + r * SP, src + r * SP, W);
        assert_true(all_bytes(back + r * SP + W, SP - W, 0));
    }
    assert_int_equal(cudaMemcpy2D(back, W - 1, d, DP, W, H,
                                  cudaMemcpyDeviceToHost),
                     cudaErrorInvalidPitchValue);
    assert_int_equal(cudaMemcpy2D(back, SP, d, W - 1, W, H,
                                  cudaMemcpyDeviceToHost),
                     cudaErrorInvalidPitchValue);
    /* The last row would run past the allocation: nothing is copied. */
    assert_int_equal(cudaMemcpy2D(d, DP, src, SP, W, H + 1,
                                  cudaMemcpyHostToDevice),
                     cudaErrorInvalidValue);
    {
        unsigned char *big = malloc(DP * (H + 1));

        assert_non_null(big);
        memset(big, 0xcd, DP * (H + 1));
        assert_int_equal(cudaMemcpy2D(big, DP, d, DP, W, H + 1,
                                      cudaMemcpyDeviceToHost),
                         cudaErrorInvalidValue);
        assert_true(all_bytes(big, DP * (H + 1), 0xcd));
        free(big);
    }
    assert_int_equal(cudaFree(d), cudaSuccess);
    free(src);
    free(back);
    free(dev_view);
    (void)cudaGetLastError();
}

static void
test_memset(void **state)
{
    const size_t n = 10000;
    unsigned char *h = malloc(n);
    cudaStream_t s = NULL;
    void *d = NULL;
    int on_stack = 0;

    assert_non_null(h);
    assert_int_equal(cudaMalloc(&d, n), cudaSuccess);
    assert_int_equal(cudaMemset(d, 0xab, n), cudaSuccess);
    /* Only the low byte of value counts. */
    assert_int_equal(cudaMemset((char *)d + 100, 0x1234, 50), cudaSuccess);
    assert_int_equal(cudaMemcpy(h, d, n, cudaMemcpyDeviceToHost), cudaSuccess);
    assert_true(all_bytes(h, 100, 0xab));
    assert_true(all_bytes(h + 100, 50, 0x34));
    assert_true(all_bytes(h + 150, n - 150, 0xab));

    assert_int_equal(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking),
                     cudaSuccess);
    assert_int_equal(cudaMemsetAsync(d, 0, n, s), cudaSuccess);
    assert_int_equal(cudaStreamSynchronize(s), cudaSuccess);
    assert_int_equal(cudaMemcpy(h, d, n, cudaMemcpyDeviceToHost), cudaSuccess);
    assert_true(all_bytes(h, n, 0));

    assert_int_equal(cudaMemset(&on_stack, 0, sizeof(on_stack)),
                     cudaErrorInvalidValue);
    assert_int_equal(cudaMemset(d, 0, n + 1), cudaErrorInvalidValue);
    assert_int_equal(cudaMemsetAsync((char *)d + n, 0, 1, s),
                     cudaErrorInvalidValue);
    assert_int_equal(cudaMemset(d, 0, 0), cudaSuccess);
    assert_int_equal(cudaStreamDestroy(s), cudaSuccess);
    assert_int_equal(cudaFree(d), cudaSuccess);
    free(h);
    (void)cudaGetLastError();
}

/* ---- Streams -------------------------------------------------------------------- */

static void
test_streams(void **state)
{
    cudaStream_t s = NULL, nb = NULL, hi = NULL, lo = NULL;
    unsigned flags = 99;
    int prio = 99, least = 0, greatest = 0;
    void *d = NULL;
    int polls = 0;
    cudaError_t e;

    assert_int_equal(cudaDeviceGetStreamPriorityRange(&least, &greatest),
                     cudaSuccess);
    assert_int_equal(cudaStreamCreate(&s), cudaSuccess);
    assert_int_equal(cudaStreamGetFlags(s, &flags), cudaSuccess);
    assert_int_equal(flags, cudaStreamDefault);
    assert_int_equal(cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking),
                     cudaSuccess);
    assert_int_equal(cudaStreamGetFlags(nb, &flags), cudaSuccess);
    assert_int_equal(flags, cudaStreamNonBlocking);
    assert_int_equal(cudaStreamCreateWithFlags(&nb, 0x10u),
                     cudaErrorInvalidValue);
    assert_int_equal(cudaStreamCreateWithFlags(NULL, 0),
                     cudaErrorInvalidValue);

    assert_int_equal(cudaStreamCreateWithPriority(&hi, cudaStreamNonBlocking,
                                                  greatest),
                     cudaSuccess);
    assert_int_equal(cudaStreamGetPriority(hi, &prio), cudaSuccess);
    assert_int_equal(prio, greatest);
    assert_int_equal(cudaStreamGetFlags(hi, &flags), cudaSuccess);
    assert_int_equal(flags, cudaStreamNonBlocking);
    /* Out-of-range priorities are clamped to the range. */
    assert_int_equal(cudaStreamCreateWithPriority(&lo, 0, least + 10),
                     cudaSuccess);
    assert_int_equal(cudaStreamGetPriority(lo, &prio), cudaSuccess);
    assert_int_equal(prio, least);
    assert_int_equal(cudaStreamDestroy(lo), cudaSuccess);
    assert_int_equal(cudaStreamCreateWithPriority(&lo, 0, greatest - 10),
                     cudaSuccess);
    assert_int_equal(cudaStreamGetPriority(lo, &prio), cudaSuccess);
    assert_int_equal(prio, greatest);
    assert_int_equal(cudaStreamGetPriority(lo, NULL), cudaErrorInvalidValue);

    assert_int_equal(cudaGetLastError(), cudaErrorInvalidValue);

    /* An idle stream is complete; one with work is not, until done. */
    assert_int_equal(cudaStreamQuery(s), cudaSuccess);
    assert_int_equal(cudaMalloc(&d, 8 * MIB), cudaSuccess);
    assert_int_equal(cudaMemsetAsync(d, 1, 8 * MIB, s), cudaSuccess);
    e = cudaStreamQuery(s);
    assert_int_equal(e, cudaErrorNotReady);
    /* Not ready is a status, not an error. */
    assert_int_equal(cudaPeekAtLastError(), cudaSuccess);
    while ((e = cudaStreamQuery(s)) == cudaErrorNotReady && polls < 1000)
        polls++;
    assert_int_equal(e, cudaSuccess);
    assert_int_equal(cudaMemsetAsync(d, 2, 8 * MIB, nb), cudaSuccess);
    assert_int_equal(cudaStreamSynchronize(nb), cudaSuccess);
    assert_int_equal(cudaStreamQuery(nb), cudaSuccess);
    assert_int_equal(cudaStreamSynchronize(0), cudaSuccess);
    assert_int_equal(cudaStreamSynchronize(cudaStreamPerThread), cudaSuccess);

    /* A stream with queued work may be destroyed: the work still runs. */
    assert_int_equal(cudaMemsetAsync(d, 3, 8 * MIB, lo), cudaSuccess);
    assert_int_equal(cudaStreamDestroy(lo), cudaSuccess);
    {
        unsigned char h[64];

        assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
        assert_int_equal(cudaMemcpy(h, (char *)d + 4 * MIB, sizeof(h),
                                    cudaMemcpyDeviceToHost),
                         cudaSuccess);
        assert_true(all_bytes(h, sizeof(h), 3));
    }
    /* The default streams are not the caller's to destroy. */
    assert_int_equal(cudaStreamDestroy(0), cudaErrorInvalidResourceHandle);
    assert_int_equal(cudaStreamDestroy(s), cudaSuccess);
    assert_int_equal(cudaStreamDestroy(nb), cudaSuccess);
    assert_int_equal(cudaStreamDestroy(hi), cudaSuccess);
    assert_int_equal(cudaFree(d), cudaSuccess);
    (void)cudaGetLastError();
}

/* Work on a blocking stream is ordered with the legacy default stream; a
 * non-blocking stream's work is not. */
static void
test_legacy_stream_ordering(void **state)
{
    const size_t n = 4096;
    unsigned char h[4096];
    cudaStream_t blocking = NULL, nonblocking = NULL;
    void *d = NULL;

    assert_int_equal(cudaStreamCreate(&blocking), cudaSuccess);
    assert_int_equal(cudaStreamCreateWithFlags(&nonblocking,
                                               cudaStreamNonBlocking),
                     cudaSuccess);
    assert_int_equal(cudaMalloc(&d, n), cudaSuccess);
    assert_int_equal(cudaMemset(d, 0, n), cudaSuccess);
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);

    assert_int_equal(cudaMemsetAsync(d, 0x42, n, blocking), cudaSuccess);
    /* The synchronous copy runs on the legacy stream: after the memset. */
    assert_int_equal(cudaMemcpy(h, d, n, cudaMemcpyDeviceToHost), cudaSuccess);
    assert_true(all_bytes(h, n, 0x42));

    /* A non-blocking stream is not ordered with it: its work is still
     * queued after the legacy copy; once waited for, the copy sees it. */
    assert_int_equal(cudaMemsetAsync(d, 0x43, n, nonblocking), cudaSuccess);
    assert_int_equal(cudaMemcpy(h, d, n, cudaMemcpyDeviceToHost), cudaSuccess);
    assert_int_equal(cudaStreamSynchronize(nonblocking), cudaSuccess);
    assert_int_equal(cudaMemcpy(h, d, n, cudaMemcpyDeviceToHost), cudaSuccess);
    assert_true(all_bytes(h, n, 0x43));

    assert_int_equal(cudaStreamDestroy(blocking), cudaSuccess);
    assert_int_equal(cudaStreamDestroy(nonblocking), cudaSuccess);
    assert_int_equal(cudaFree(d), cudaSuccess);
}

/* ---- Events ---------------------------------------------------------------------- */

static void
test_events(void **state)
{
    const size_t n = 64 * MIB;
    cudaEvent_t start = NULL, stop = NULL, untimed = NULL, fresh = NULL;
    cudaStream_t s = NULL;
    float ms = -1.0f, back = 0.0f, record_ms;
    double want_ms;
    void *d = NULL;

    assert_int_equal(cudaEventCreate(&start), cudaSuccess);
    assert_int_equal(cudaEventCreateWithFlags(&stop, cudaEventBlockingSync),
                     cudaSuccess);
    assert_int_equal(cudaEventCreateWithFlags(&untimed,
                                              cudaEventDisableTiming),
                     cudaSuccess);
    assert_int_equal(cudaEventCreate(&fresh), cudaSuccess);
    assert_int_equal(cudaEventCreateWithFlags(&fresh, 0x100u),
                     cudaErrorInvalidValue);
    /* An interprocess event must not carry timing. */
    assert_int_equal(cudaEventCreateWithFlags(&fresh, cudaEventInterprocess),
                     cudaErrorInvalidValue);
    assert_int_equal(cudaEventCreate(NULL), cudaErrorInvalidValue);
    (void)cudaGetLastError();

    /* A never-recorded event counts as complete but has no time. */
    assert_int_equal(cudaEventQuery(fresh), cudaSuccess);
    assert_int_equal(cudaEventSynchronize(fresh), cudaSuccess);

    assert_int_equal(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking),
                     cudaSuccess);
    assert_int_equal(cudaMalloc(&d, n), cudaSuccess);
    assert_int_equal(cudaEventRecord(start, s), cudaSuccess);
    assert_int_equal(cudaMemsetAsync(d, 7, n, s), cudaSuccess);
    assert_int_equal(cudaEventRecord(stop, s), cudaSuccess);
    assert_int_equal(cudaEventRecord(untimed, s), cudaSuccess);
    /* Not done yet. */
    assert_int_equal(cudaEventQuery(stop), cudaErrorNotReady);
    assert_int_equal(cudaPeekAtLastError(), cudaSuccess);
    assert_int_equal(cudaEventElapsedTime(&ms, fresh, stop),
                     cudaErrorInvalidResourceHandle);
    assert_int_equal(cudaEventSynchronize(stop), cudaSuccess);
    assert_int_equal(cudaEventQuery(stop), cudaSuccess);
    assert_int_equal(cudaEventQuery(start), cudaSuccess);

    /* The memset's modelled time: bytes over achievable bandwidth plus a
     * launch, and the stop record's own cost (a timing event's record
     * holds its stream up; the untimed one after it costs nothing). */
    assert_int_equal(cudaEventElapsedTime(&ms, start, stop), cudaSuccess);
    want_ms = (emu_model_ns(0.0, EMU_PREC_NONE, (double)n) +
               emu_event_record_ns()) / 1e6;
    assert_true(ms > 0.0f);
    assert_true(ms > want_ms * 0.999 && ms < want_ms * 1.001);
    assert_int_equal(cudaEventElapsedTime(&back, stop, start), cudaSuccess);
    assert_true(back == -ms);

    assert_int_equal(cudaEventElapsedTime(&ms, start, untimed),
                     cudaErrorInvalidResourceHandle);
    assert_int_equal(cudaGetLastError(), cudaErrorInvalidResourceHandle);
    assert_int_equal(cudaEventElapsedTime(&ms, untimed, stop),
                     cudaErrorInvalidResourceHandle);
    assert_int_equal(cudaEventElapsedTime(NULL, start, stop),
                     cudaErrorInvalidValue);
    (void)cudaGetLastError();

    /* Twice the bytes, about twice the time (with one record). */
    assert_int_equal(cudaEventRecord(start, s), cudaSuccess);
    assert_int_equal(cudaMemsetAsync(d, 8, n, s), cudaSuccess);
    assert_int_equal(cudaMemsetAsync(d, 9, n, s), cudaSuccess);
    assert_int_equal(cudaEventRecord(stop, s), cudaSuccess);
    assert_int_equal(cudaEventSynchronize(stop), cudaSuccess);
    assert_int_equal(cudaEventElapsedTime(&back, start, stop), cudaSuccess);
    record_ms = (float)(emu_event_record_ns() / 1e6);
    assert_true(back - record_ms > 1.99f * (ms - record_ms) &&
                back - record_ms < 2.01f * (ms - record_ms));

    assert_int_equal(cudaEventDestroy(start), cudaSuccess);
    assert_int_equal(cudaEventDestroy(stop), cudaSuccess);
    assert_int_equal(cudaEventDestroy(untimed), cudaSuccess);
    assert_int_equal(cudaEventDestroy(fresh), cudaSuccess);
    assert_int_equal(cudaStreamDestroy(s), cudaSuccess);
    assert_int_equal(cudaFree(d), cudaSuccess);
}

/* An event recorded on one stream orders another stream's later work. */
static void
test_event_orders_streams(void **state)
{
    const size_t n = 4096;
    unsigned char *h = NULL;
    cudaStream_t a = NULL, b = NULL;
    cudaEvent_t done = NULL;
    void *d = NULL;

    assert_int_equal(cudaMallocHost((void **)&h, n), cudaSuccess);
    assert_int_equal(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking),
                     cudaSuccess);
    assert_int_equal(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking),
                     cudaSuccess);
    assert_int_equal(cudaEventCreateWithFlags(&done, cudaEventDisableTiming),
                     cudaSuccess);
    assert_int_equal(cudaMalloc(&d, n), cudaSuccess);
    assert_int_equal(cudaMemsetAsync(d, 0x61, n, a), cudaSuccess);
    assert_int_equal(cudaEventRecord(done, a), cudaSuccess);
    assert_int_equal(cudaStreamWaitEvent(b, done, 0), cudaSuccess);
    memset(h, 0, n);
    assert_int_equal(cudaMemcpyAsync(h, d, n, cudaMemcpyDeviceToHost, b),
                     cudaSuccess);
    /* Waiting for b alone is enough: b waited for a. */
    assert_int_equal(cudaStreamSynchronize(b), cudaSuccess);
    assert_true(all_bytes(h, n, 0x61));
    assert_int_equal(cudaStreamQuery(a), cudaSuccess);

    assert_int_equal(cudaEventDestroy(done), cudaSuccess);
    assert_int_equal(cudaStreamDestroy(a), cudaSuccess);
    assert_int_equal(cudaStreamDestroy(b), cudaSuccess);
    assert_int_equal(cudaFree(d), cudaSuccess);
    assert_int_equal(cudaFreeHost(h), cudaSuccess);
}

/* A copy of no bytes succeeds whatever its pointers, NULL included, in
 * every kind, synchronous and asynchronous: as NVIDIA's runtime does
 * (cuBLASLt's samples copy an empty bias so before their first matmul). */
static void
test_zero_byte_copies(void **state)
{
    static const enum cudaMemcpyKind kinds[] = {
        cudaMemcpyHostToHost, cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost,
        cudaMemcpyDeviceToDevice, cudaMemcpyDefault,
    };
    cudaStream_t s = NULL;
    void *d = NULL;
    unsigned char h[4] = { 1, 2, 3, 4 };

    (void)state;
    assert_int_equal(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking),
                     cudaSuccess);
    assert_int_equal(cudaMalloc(&d, 64), cudaSuccess);
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        assert_int_equal(cudaMemcpy(NULL, NULL, 0, kinds[i]), cudaSuccess);
        assert_int_equal(cudaMemcpyAsync(NULL, NULL, 0, kinds[i], s),
                         cudaSuccess);
        assert_int_equal(cudaMemcpyAsync(NULL, NULL, 0, kinds[i], NULL),
                         cudaSuccess);
    }
    /* A device pointer and NULL, either way round. */
    assert_int_equal(cudaMemcpy(d, NULL, 0, cudaMemcpyHostToDevice),
                     cudaSuccess);
    assert_int_equal(cudaMemcpyAsync(NULL, d, 0, cudaMemcpyDeviceToHost, s),
                     cudaSuccess);
    assert_int_equal(cudaStreamSynchronize(s), cudaSuccess);
    assert_int_equal(cudaGetLastError(), cudaSuccess);
    assert_true(h[0] == 1 && h[3] == 4);
    /* A kind that is none is still refused. */
    assert_int_equal(cudaMemcpy(NULL, NULL, 0, (enum cudaMemcpyKind)7),
                     cudaErrorInvalidMemcpyDirection);
    (void)cudaGetLastError();
    assert_int_equal(cudaFree(d), cudaSuccess);
    assert_int_equal(cudaStreamDestroy(s), cudaSuccess);
}

/* An asynchronous copy from the device into pageable memory returns once
 * the copy is done, as CUDA's "API synchronization behavior" says: the
 * program reads the result without a synchronisation. Into page-locked
 * memory it stays queued. */
static void
test_async_copy_to_pageable_is_done_on_return(void **state)
{
    const size_t n = 3 * MIB + 5;
    unsigned char *pageable = malloc(n), *pinned = NULL;
    cudaStream_t s = NULL;
    void *d = NULL;

    (void)state;
    assert_non_null(pageable);
    assert_int_equal(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking),
                     cudaSuccess);
    assert_int_equal(cudaMalloc(&d, n), cudaSuccess);
    assert_int_equal(cudaMallocHost((void **)&pinned, n), cudaSuccess);
    memset(pageable, 0, n);
    memset(pinned, 0, n);
    assert_int_equal(cudaMemsetAsync(d, 0x5a, n, s), cudaSuccess);
    assert_int_equal(cudaMemcpyAsync(pageable, d, n, cudaMemcpyDeviceToHost,
                                     s),
                     cudaSuccess);
    assert_true(all_bytes(pageable, n, 0x5a));
    /* The legacy stream, and the default kind, alike. */
    assert_int_equal(cudaMemsetAsync(d, 0x33, n, NULL), cudaSuccess);
    assert_int_equal(cudaMemcpyAsync(pageable, d, n, cudaMemcpyDefault, NULL),
                     cudaSuccess);
    assert_true(all_bytes(pageable, n, 0x33));
    /* Page-locked: queued, there once the stream is waited for. */
    assert_int_equal(cudaMemsetAsync(d, 0x77, n, s), cudaSuccess);
    assert_int_equal(cudaMemcpyAsync(pinned, d, n, cudaMemcpyDeviceToHost, s),
                     cudaSuccess);
    assert_true(all_bytes(pinned, n, 0));
    assert_int_equal(cudaStreamSynchronize(s), cudaSuccess);
    assert_true(all_bytes(pinned, n, 0x77));

    assert_int_equal(cudaFreeHost(pinned), cudaSuccess);
    assert_int_equal(cudaFree(d), cudaSuccess);
    assert_int_equal(cudaStreamDestroy(s), cudaSuccess);
    free(pageable);
}

/* ---- Fidelity: what a GPU would do to a careless program ----------------------- */

/* A host read or write of device memory faults, as on a GPU. */
static void
test_host_access_to_device_memory_faults(void **state)
{
    int how;

    for (how = 0; how < 2; how++) {
        volatile unsigned char *d = NULL;
        int status = 0;
        pid_t pid;

        assert_int_equal(cudaMalloc((void **)&d, 4096), cudaSuccess);
        /* The memory itself is fine through the API. */
        assert_int_equal(cudaMemset((void *)d, 0x33, 4096), cudaSuccess);
        assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            /* The default action, not the test runner's handler. */
            signal(SIGSEGV, SIG_DFL);
            signal(SIGBUS, SIG_DFL);
            if (how == 0)
                _exit(d[100] == 0x33 ? 0 : 1);
            d[100] = 1;
            _exit(0);
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFSIGNALED(status));
        assert_int_equal(WTERMSIG(status), SIGSEGV);
        assert_int_equal(cudaFree((void *)d), cudaSuccess);
    }
}

/* A child of fork() that writes device memory through the API changes
 * its own copy: the parent's memory stays as it was. */
static void
test_fork_child_has_its_own_device_memory(void **state)
{
    unsigned char *d = NULL, back[4096];
    int status = -1;
    pid_t pid;

    (void)state;
    assert_int_equal(cudaMalloc((void **)&d, sizeof back), cudaSuccess);
    assert_int_equal(cudaMemset(d, 0x33, sizeof back), cudaSuccess);
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    fflush(NULL);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        unsigned char *mine = NULL;
        int bad = cudaMemset(d, 0x44, sizeof back) != cudaSuccess ||
                  cudaMalloc((void **)&mine, sizeof back) != cudaSuccess ||
                  cudaMemset(mine, 0x55, sizeof back) != cudaSuccess ||
                  cudaMemcpy(back, d, sizeof back,
                             cudaMemcpyDeviceToHost) != cudaSuccess ||
                  !all_bytes(back, sizeof back, 0x44);

        _exit(bad);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_int_equal(cudaMemcpy(back, d, sizeof back, cudaMemcpyDeviceToHost),
                     cudaSuccess);
    assert_true(all_bytes(back, sizeof back, 0x33));
    assert_int_equal(cudaFree(d), cudaSuccess);
}

/*
 * A copy that is not ordered after a memset on another stream but queued
 * after it runs after it, as on a GPU that keeps up; once both streams are
 * waited for, a new copy sees the memset too.
 */
static void
test_unsynchronised_read_in_queue_order(void **state)
{
    const size_t n = MIB;
    cudaStream_t writer = NULL, reader = NULL;
    unsigned char *h = NULL;
    void *d = NULL;

    assert_int_equal(cudaMallocHost((void **)&h, n), cudaSuccess);
    assert_int_equal(cudaMalloc(&d, n), cudaSuccess);
    assert_int_equal(cudaStreamCreateWithFlags(&writer,
                                               cudaStreamNonBlocking),
                     cudaSuccess);
    assert_int_equal(cudaStreamCreateWithFlags(&reader,
                                               cudaStreamNonBlocking),
                     cudaSuccess);
    assert_int_equal(cudaMemset(d, 0x01, n), cudaSuccess);
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);

    assert_int_equal(cudaMemsetAsync(d, 0x02, n, writer), cudaSuccess);
    memset(h, 0, n);
    assert_int_equal(cudaMemcpyAsync(h, d, n, cudaMemcpyDeviceToHost, reader),
                     cudaSuccess);
    assert_int_equal(cudaStreamSynchronize(reader), cudaSuccess);
    /* No event said the copy must wait; queued after the memset, it sees
     * what a GPU that kept up would show (and the emulator names the race:
     * test_driver.c, test_unordered_access_named). */
    assert_true(all_bytes(h, n, 0x02));

    assert_int_equal(cudaStreamSynchronize(writer), cudaSuccess);
    memset(h, 0, n);
    assert_int_equal(cudaMemcpyAsync(h, d, n, cudaMemcpyDeviceToHost, reader),
                     cudaSuccess);
    assert_int_equal(cudaStreamSynchronize(reader), cudaSuccess);
    assert_true(all_bytes(h, n, 0x02));

    assert_int_equal(cudaStreamDestroy(writer), cudaSuccess);
    assert_int_equal(cudaStreamDestroy(reader), cudaSuccess);
    assert_int_equal(cudaFree(d), cudaSuccess);
    assert_int_equal(cudaFreeHost(h), cudaSuccess);
}

static void
test_device_synchronize_waits_for_all_streams(void **state)
{
    const size_t n = 4096;
    cudaStream_t s[3];
    unsigned char *h = NULL;
    void *d = NULL;
    int i;

    assert_int_equal(cudaMallocHost((void **)&h, 3 * n), cudaSuccess);
    assert_int_equal(cudaMalloc(&d, 3 * n), cudaSuccess);
    memset(h, 0, 3 * n);
    for (i = 0; i < 3; i++) {
        assert_int_equal(cudaStreamCreateWithFlags(&s[i],
                                                   cudaStreamNonBlocking),
                         cudaSuccess);
        assert_int_equal(cudaMemsetAsync((char *)d + (size_t)i * n, 0x70 + i,
                                         n, s[i]),
                         cudaSuccess);
        assert_int_equal(cudaMemcpyAsync(h + (size_t)i * n,
                                         (char *)d + (size_t)i * n, n,
                                         cudaMemcpyDeviceToHost, s[i]),
                         cudaSuccess);
    }
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    for (i = 0; i < 3; i++) {
        assert_true(all_bytes(h + (size_t)i * n, n,
                              (unsigned char)(0x70 + i)));
        assert_int_equal(cudaStreamQuery(s[i]), cudaSuccess);
        assert_int_equal(cudaStreamDestroy(s[i]), cudaSuccess);
    }
    assert_int_equal(cudaFree(d), cudaSuccess);
    assert_int_equal(cudaFreeHost(h), cudaSuccess);
}

/* ---- Fat binaries and launches ------------------------------------------------ */

/* What nvcc embeds: a wrapper around a fatbin whose only payload names no
 * kernel the emulator has a host version of. */
struct fake_fatbin {
    uint32_t magic;
    uint16_t version;
    uint16_t header_size;
    uint64_t payload_size;
    char payload[32];
};

struct fake_wrapper {
    int magic;
    int version;
    const void *data;
    void *filename_or_fatbins;
};

static const struct fake_fatbin fake_image = {
    0xBA55ED50u, 1, 16, 32, "_Z14no_such_kernelPf",
};
static struct fake_wrapper fake_wrapper = {
    0x466243b1, 1, &fake_image, NULL,
};
/* Stand-ins for the host stub and the device variable nvcc registers. */
static const char kernel_stub = 0;
static char device_var_shadow[64];

static void
test_fatbin_registration_and_launch(void **state)
{
    char kname[] = "_Z14no_such_kernelPf";
    char vname[] = "device_var";
    dim3 grid = { 4, 1, 1 }, block = { 128, 1, 1 }, g2, b2;
    size_t shmem = 99;
    cudaStream_t st = (cudaStream_t)1, s = NULL;
    cudaKernel_t k = NULL;
    float *arg = NULL;
    void *args[] = { &arg };
    void **handle;

    handle = __cudaRegisterFatBinary(&fake_wrapper);
    assert_non_null(handle);
    __cudaRegisterFunction(handle, &kernel_stub, kname, kname, -1, NULL,
                           NULL, NULL, NULL, NULL);
    __cudaRegisterVar(handle, device_var_shadow, vname, vname, 0,
                      sizeof(device_var_shadow), 0, 0);
    __cudaRegisterFatBinaryEnd(handle);
    assert_int_equal(cudaPeekAtLastError(), cudaSuccess);

    /* What a <<<grid, block, 0, s>>> site does: push, the stub pops. */
    assert_int_equal(cudaStreamCreate(&s), cudaSuccess);
    assert_int_equal(__cudaPushCallConfiguration(grid, block, 0, s), 0);
    assert_int_equal(__cudaPopCallConfiguration(&g2, &b2, &shmem, &st),
                     cudaSuccess);
    assert_int_equal(g2.x, 4);
    assert_int_equal(b2.x, 128);
    assert_int_equal(shmem, 0);
    assert_ptr_equal(st, s);

    /* No host version of the kernel: as on a GPU the binary was not
     * built for. */
    assert_int_equal(cudaLaunchKernel(&kernel_stub, g2, b2, args, 0, st),
                     cudaErrorNoKernelImageForDevice);
    assert_int_equal(cudaGetLastError(), cudaErrorNoKernelImageForDevice);
    assert_int_equal(cudaGetLastError(), cudaSuccess);
    assert_int_equal(__cudaGetKernel(&k, &kernel_stub), cudaSuccess);
    assert_non_null(k);
    assert_int_equal(__cudaLaunchKernel(k, grid, block, args, 0, s),
                     cudaErrorNoKernelImageForDevice);
    /* Not a sticky error: the context still works. */
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);

    /* A function nobody registered; a block too large. */
    assert_int_equal(cudaLaunchKernel(&kname, grid, block, args, 0, s),
                     cudaErrorInvalidDeviceFunction);
    block.x = 2048;
    assert_int_equal(cudaLaunchKernel(&kernel_stub, grid, block, args, 0, s),
                     cudaErrorInvalidConfiguration);
    block.x = 128;
    grid.y = 0;
    assert_int_equal(cudaLaunchKernel(&kernel_stub, grid, block, args, 0, s),
                     cudaErrorInvalidConfiguration);

    __cudaUnregisterFatBinary(handle);
    grid.y = 1;
    assert_int_equal(cudaLaunchKernel(&kernel_stub, grid, block, args, 0, s),
                     cudaErrorInvalidDeviceFunction);
    assert_int_equal(cudaStreamDestroy(s), cudaSuccess);
    (void)cudaGetLastError();
}

/* ---- Sticky errors and reset ------------------------------------------------------ */

/* Stream capture records copies and memsets into a graph instead of
 * running them; every launch of the instantiated graph runs them again,
 * reading memory as it is then. Misuse gets the runtime's codes. */
static void
test_capture_and_graphs(void **state)
{
    enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusInvalidated;
    int src[64], got[64], zero[64] = { 0 };
    unsigned long long id = 0;
    cudaGraph_t graph = NULL, live = NULL, clone = NULL;
    cudaGraphExec_t exec = NULL;
    cudaStream_t s;
    int *dsrc = NULL, *ddst = NULL;

    (void)state;
    for (int i = 0; i < 64; i++)
        src[i] = i * 3 + 1;
    assert_int_equal(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking),
                     cudaSuccess);
    assert_int_equal(cudaMalloc((void **)&dsrc, sizeof(src)), cudaSuccess);
    assert_int_equal(cudaMalloc((void **)&ddst, sizeof(src)), cudaSuccess);
    assert_int_equal(cudaMemcpy(dsrc, src, sizeof(src),
                                cudaMemcpyHostToDevice), cudaSuccess);
    assert_int_equal(cudaMemset(ddst, 0, sizeof(src)), cudaSuccess);
    assert_int_equal(cudaStreamIsCapturing(s, &cs), cudaSuccess);
    assert_int_equal(cs, cudaStreamCaptureStatusNone);

    /* The legacy stream cannot capture; a bad mode; nothing to end. */
    assert_int_equal(cudaStreamBeginCapture(NULL, cudaStreamCaptureModeGlobal),
                     cudaErrorStreamCaptureUnsupported);
    assert_int_equal(cudaGetLastError(), cudaErrorStreamCaptureUnsupported);
    assert_int_equal(cudaStreamBeginCapture(s, (enum cudaStreamCaptureMode)7),
                     cudaErrorInvalidValue);
    assert_int_equal(cudaStreamEndCapture(s, &graph), cudaErrorIllegalState);

    assert_int_equal(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal),
                     cudaSuccess);
    assert_int_equal(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal),
                     cudaErrorIllegalState);
    assert_int_equal(cudaStreamIsCapturing(s, &cs), cudaSuccess);
    assert_int_equal(cs, cudaStreamCaptureStatusActive);
    assert_int_equal(cudaStreamGetCaptureInfo(s, &cs, &id, &live, NULL, NULL,
                                              NULL), cudaSuccess);
    assert_int_equal(cs, cudaStreamCaptureStatusActive);
    assert_true(id != 0);
    assert_non_null(live);
    assert_int_equal(cudaMemcpyAsync(ddst, dsrc, sizeof(src),
                                     cudaMemcpyDeviceToDevice, s),
                     cudaSuccess);
    assert_int_equal(cudaMemsetAsync(ddst, 0xff, sizeof(int), s),
                     cudaSuccess);
    assert_int_equal(cudaStreamEndCapture(s, NULL), cudaErrorInvalidValue);
    assert_int_equal(cudaStreamEndCapture(s, &graph), cudaSuccess);
    assert_ptr_equal(graph, live);
    assert_int_equal(cudaStreamIsCapturing(s, &cs), cudaSuccess);
    assert_int_equal(cs, cudaStreamCaptureStatusNone);
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    assert_int_equal(cudaMemcpy(got, ddst, sizeof(got),
                                cudaMemcpyDeviceToHost), cudaSuccess);
    assert_memory_equal(got, zero, sizeof(got));    /* captured, not run */

    assert_int_equal(cudaGraphInstantiate(&exec, graph, 0x100),
                     cudaErrorInvalidValue);
    assert_int_equal(cudaGraphInstantiate(&exec, NULL, 0),
                     cudaErrorInvalidValue);
    assert_int_equal(cudaGraphInstantiate(NULL, graph, 0),
                     cudaErrorInvalidValue);
    assert_int_equal(
        cudaGraphInstantiate(&exec, graph,
                             cudaGraphInstantiateFlagAutoFreeOnLaunch),
        cudaSuccess);
    for (int round = 1; round <= 2; round++) {
        assert_int_equal(cudaGraphLaunch(exec, s), cudaSuccess);
        assert_int_equal(cudaStreamSynchronize(s), cudaSuccess);
        assert_int_equal(cudaMemcpy(got, ddst, sizeof(got),
                                    cudaMemcpyDeviceToHost), cudaSuccess);
        assert_int_equal(got[0], -1);
        assert_memory_equal(got + 1, src + 1, sizeof(got) - sizeof(int));
        /* The next launch copies what the source holds then. */
        for (int i = 0; i < 64; i++)
            src[i] = -5 * i - round;
        assert_int_equal(cudaMemcpy(dsrc, src, sizeof(src),
                                    cudaMemcpyHostToDevice), cudaSuccess);
    }
    assert_int_equal(cudaGraphLaunch(NULL, s), cudaErrorInvalidValue);
    assert_int_equal(cudaGetLastError(), cudaErrorInvalidValue);
    assert_int_equal(cudaGetLastError(), cudaSuccess);
    assert_int_equal(cudaGraphExecDestroy(exec), cudaSuccess);
    /* A clone launches on its own, the original gone; launched by the
     * per-thread default stream's name, stream 0 is this thread's. */
    assert_int_equal(cudaGraphClone(&clone, graph), cudaSuccess);
    assert_int_equal(cudaGraphDestroy(graph), cudaSuccess);
    assert_int_equal(cudaGraphInstantiate(&exec, clone, 0), cudaSuccess);
    assert_int_equal(cudaMemset(ddst, 0, sizeof(got)), cudaSuccess);
    assert_int_equal(cudaGraphLaunch_ptsz(exec, NULL), cudaSuccess);
    assert_int_equal(cudaStreamSynchronize(cudaStreamPerThread), cudaSuccess);
    assert_int_equal(cudaMemcpy(got, ddst, sizeof(got),
                                cudaMemcpyDeviceToHost), cudaSuccess);
    assert_int_equal(got[0], -1);
    assert_memory_equal(got + 1, src + 1, sizeof(got) - sizeof(int));
    assert_int_equal(cudaGraphExecDestroy(exec), cudaSuccess);
    graph = clone;
    assert_int_equal(cudaGraphDestroy(NULL), cudaErrorInvalidValue);
    assert_int_equal(cudaGraphExecDestroy(NULL), cudaErrorInvalidValue);
    assert_int_equal(cudaFree(dsrc), cudaSuccess);
    assert_int_equal(cudaFree(ddst), cudaSuccess);
    assert_int_equal(cudaStreamDestroy(s), cudaSuccess);
}

/*
 * A use-after-free race: the memory is freed in stream order on one stream
 * while another stream's memset of it is still queued. The memset then hits
 * freed memory: an illegal address, which spoils the context until
 * cudaDeviceReset.
 */
static void
test_sticky_error_and_reset(void **state)
{
    cudaStream_t a = NULL, b = NULL;
    void *d = NULL, *fresh = NULL, *old = NULL;
    unsigned char h[16];

    assert_int_equal(cudaMalloc(&old, 4096), cudaSuccess);
    assert_int_equal(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking),
                     cudaSuccess);
    assert_int_equal(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking),
                     cudaSuccess);
    assert_int_equal(cudaMallocAsync(&d, 4096, b), cudaSuccess);
    assert_int_equal(cudaStreamSynchronize(b), cudaSuccess);
    /* The free, queued first, runs first: the memset, not ordered after
     * it, finds the memory gone. */
    assert_int_equal(cudaFreeAsync(d, b), cudaSuccess);
    assert_int_equal(cudaMemsetAsync(d, 1, 4096, a), cudaSuccess);
    assert_int_equal(cudaStreamSynchronize(a), cudaErrorIllegalAddress);

    /* Sticky: every call reports it, cudaGetLastError does not clear it. */
    assert_int_equal(cudaGetLastError(), cudaErrorIllegalAddress);
    assert_int_equal(cudaGetLastError(), cudaErrorIllegalAddress);
    assert_int_equal(cudaMalloc(&fresh, 16), cudaErrorIllegalAddress);
    assert_int_equal(cudaDeviceSynchronize(), cudaErrorIllegalAddress);

    assert_int_equal(cudaDeviceReset(), cudaSuccess);
    /* The error no longer sticks: once read, it is gone. */
    (void)cudaGetLastError();
    assert_int_equal(cudaGetLastError(), cudaSuccess);
    /* A fresh context: old allocations are gone, new ones work. */
    assert_int_equal(cudaFree(old), cudaErrorInvalidValue);
    (void)cudaGetLastError();
    assert_int_equal(cudaMalloc(&fresh, 16), cudaSuccess);
    assert_int_equal(cudaMemset(fresh, 0x5c, 16), cudaSuccess);
    assert_int_equal(cudaMemcpy(h, fresh, 16, cudaMemcpyDeviceToHost),
                     cudaSuccess);
    assert_true(all_bytes(h, 16, 0x5c));
    assert_int_equal(cudaFree(fresh), cudaSuccess);
    assert_int_equal(cudaGetLastError(), cudaSuccess);
}

/* ---- The modelled GPU as the runtime reports it -------------------------------- */

/* In a child with AMPSHIM_EMU_GPU set: the properties name that GPU. */
static int
child_check_props(const char *name_part, int major, int minor)
{
    struct cudaDeviceProp prop;
    int v = -1;

    if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess)
        return 1;
    if (!strstr(prop.name, name_part))
        return 2;
    if (prop.major != major || prop.minor != minor)
        return 3;
    if (cudaDeviceGetAttribute(&v, cudaDevAttrComputeCapabilityMajor, 0) !=
            cudaSuccess || v != major)
        return 4;
    return 0;
}

static void
test_properties_follow_modelled_gpu(void **state)
{
    static const struct {
        const char *env, *name_part, *major, *minor;
    } cases[] = {
        { "a100", "A100", "8", "0" },
        { "l4", "L4", "8", "9" },
        { "rtx4090", "RTX 4090", "8", "9" },
        { "h100", "H100", "9", "0" },
        { "h200", "H200", "9", "0" },
        { "b200", "B200", "10", "0" },
        { "v100", "V100", "7", "0" },
        { "t4", "T4", "7", "5" },
    };
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int status = -1;
        pid_t pid = fork();

        assert_true(pid >= 0);
        if (pid == 0) {
            setenv("AMPSHIM_EMU_GPU", cases[i].env, 1);
            execl("/proc/self/exe", "test_emu_cudart", "--props-child",
                  cases[i].name_part, cases[i].major, cases[i].minor,
                  (char *)NULL);
            _exit(127);
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        if (WEXITSTATUS(status) != 0)
            print_error("AMPSHIM_EMU_GPU=%s: check %d failed\n",
                        cases[i].env, WEXITSTATUS(status));
        assert_int_equal(WEXITSTATUS(status), 0);
    }
}

int
main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_device_count_and_properties,
                               setup_clean),
        cmocka_unit_test_setup(test_device_attribute, setup_clean),
        cmocka_unit_test_setup(test_versions, setup_clean),
        cmocka_unit_test_setup(test_last_error_semantics, setup_clean),
        cmocka_unit_test_setup(test_last_error_is_per_thread, setup_clean),
        cmocka_unit_test_setup(test_error_names_and_strings, setup_clean),
        cmocka_unit_test_setup(test_malloc_free, setup_clean),
        cmocka_unit_test_setup(test_malloc_host, setup_clean),
        cmocka_unit_test_setup(test_pointer_attributes, setup_clean),
        cmocka_unit_test_setup(test_free_host_waits_for_pending_copies,
                               setup_clean),
        cmocka_unit_test_setup(test_memcpy_all_kinds, setup_clean),
        cmocka_unit_test_setup(test_memcpy_async, setup_clean),
        cmocka_unit_test_setup(test_zero_byte_copies, setup_clean),
        cmocka_unit_test_setup(test_async_copy_to_pageable_is_done_on_return,
                               setup_clean),
        cmocka_unit_test_setup(test_memcpy_2d, setup_clean),
        cmocka_unit_test_setup(test_memset, setup_clean),
        cmocka_unit_test_setup(test_streams, setup_clean),
        cmocka_unit_test_setup(test_legacy_stream_ordering, setup_clean),
        cmocka_unit_test_setup(test_events, setup_clean),
        cmocka_unit_test_setup(test_event_orders_streams, setup_clean),
        cmocka_unit_test_setup(test_host_access_to_device_memory_faults,
                               setup_clean),
        cmocka_unit_test_setup(test_fork_child_has_its_own_device_memory,
                               setup_clean),
        cmocka_unit_test_setup(test_unsynchronised_read_in_queue_order,
                               setup_clean),
        cmocka_unit_test_setup(test_device_synchronize_waits_for_all_streams,
                               setup_clean),
        cmocka_unit_test_setup(test_fatbin_registration_and_launch,
                               setup_clean),
        cmocka_unit_test_setup(test_properties_follow_modelled_gpu,
                               setup_clean),
        cmocka_unit_test_setup(test_capture_and_graphs, setup_clean),
        cmocka_unit_test_setup(test_sticky_error_and_reset, setup_clean),
    };

    if (argc == 5 && strcmp(argv[1], "--props-child") == 0)
        return child_check_props(argv[2], atoi(argv[3]), atoi(argv[4]));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
