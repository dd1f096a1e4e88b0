/* The device layer over the driver API, loaded with dlopen at run time. */
#include "device/device.h"

#include "amp_kernels.h"
#include "base/log.h"
#include "base/once.h"
#include "base/resolve.h"
#include "base/shim.h"

#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AMP_STR(x) AMP_STR_(x)
#define AMP_STR_(x) #x

/* Driver functions the shim calls. The header's macros turn each name into
 * the exported one (cuMemAlloc -> cuMemAlloc_v2), in the struct and in the
 * string alike. */
#define AMP_DRIVER_SYMBOLS(X)                                                \
    X(cuCtxGetCurrent)                                                       \
    X(cuCtxGetId)                                                            \
    X(cuStreamGetId)                                                         \
    X(cuCtxGetDevice)                                                        \
    X(cuDeviceGetAttribute)                                                  \
    X(cuModuleLoadData)                                                      \
    X(cuModuleGetFunction)                                                   \
    X(cuOccupancyMaxActiveBlocksPerMultiprocessor)                           \
    X(cuLaunchKernel)                                                        \
    X(cuMemAllocAsync)                                                       \
    X(cuMemFreeAsync)                                                        \
    X(cuMemPoolCreate)                                                       \
    X(cuMemPoolSetAttribute)                                                 \
    X(cuMemAllocFromPoolAsync)                                               \
    X(cuDeviceTotalMem)                                                      \
    X(cuStreamGetCaptureInfo)                                                \
    X(cuUserObjectCreate)                                                    \
    X(cuUserObjectRelease)                                                   \
    X(cuGraphRetainUserObject)                                               \
    X(cuMemFree)                                                             \
    X(cuMemsetD32Async)                                                      \
    X(cuMemcpyDtoDAsync)                                                     \
    X(cuStreamIsCapturing)                                                   \
    X(cuMemAllocHost)                                                        \
    X(cuMemAlloc)                                                            \
    X(cuEventCreate)                                                         \
    X(cuEventDestroy)                                                        \
    X(cuStreamCreate)                                                        \
    X(cuStreamDestroy)                                                       \
    X(cuEventRecord)                                                         \
    X(cuEventQuery)                                                          \
    X(cuEventSynchronize)                                                    \
    X(cuEventElapsedTime)                                                    \
    X(cuDeviceGetName)                                                       \
    X(cuCtxPushCurrent)                                                      \
    X(cuCtxPopCurrent)                                                       \
    X(cuDevicePrimaryCtxGetState)                                            \
    X(cuDevicePrimaryCtxRetain)                                              \
    X(cuDevicePrimaryCtxRelease)                                             \
    X(cuThreadExchangeStreamCaptureMode)                                     \
    X(cuGetErrorName)

static struct {
#define AMP_DRIVER_MEMBER(sym) __typeof__(&sym) sym;
    AMP_DRIVER_SYMBOLS(AMP_DRIVER_MEMBER)
#undef AMP_DRIVER_MEMBER
} amp_cu;

static const char *const amp_kernel_names[AMP_KERNEL_COUNT] = {
    [AMP_KERNEL_ABSMAX_F32] = AMP_K_ABSMAX_F32,
    [AMP_KERNEL_CAST_F32_F16] = AMP_K_CAST_F32_F16,
    [AMP_KERNEL_GEMM_SCALES] = AMP_K_GEMM_SCALES,
    [AMP_KERNEL_GEMM_CAST] = AMP_K_GEMM_CAST,
    [AMP_KERNEL_GEMM_CAST_DELAYED] = AMP_K_GEMM_CAST_DELAYED,
    [AMP_KERNEL_GEMM_SPLIT_TF32X3] = AMP_K_GEMM_SPLIT_TF32X3,
    [AMP_KERNEL_GEMM_RECAST] = AMP_K_GEMM_RECAST,
    [AMP_KERNEL_FILL_PTRS] = AMP_K_FILL_PTRS,
    [AMP_KERNEL_GATHER_BATCH] = AMP_K_GATHER_BATCH,
    [AMP_KERNEL_AXPBY_BATCH] = AMP_K_AXPBY_BATCH,
    [AMP_KERNEL_F16X3_FOLD] = AMP_K_F16X3_FOLD,
    [AMP_KERNEL_ALPHA_VECTOR] = AMP_K_ALPHA_VECTOR,
    [AMP_KERNEL_SHADOW_ERROR] = AMP_K_SHADOW_ERROR,
    [AMP_KERNEL_CONV_SCALES] = AMP_K_CONV_SCALES,
    [AMP_KERNEL_CONV_CAST] = AMP_K_CONV_CAST,
    [AMP_KERNEL_CONV_CAST_ONE_PASS] = AMP_K_CONV_CAST_ONE_PASS,
    [AMP_KERNEL_CONV_SPLIT_TF32X3] = AMP_K_CONV_SPLIT_TF32X3,
    [AMP_KERNEL_CONV_OUTPUT] = AMP_K_CONV_OUTPUT,
    [AMP_KERNEL_CONV_ERROR] = AMP_K_CONV_ERROR,
    [AMP_KERNEL_CONV_EXCUSE] = AMP_K_CONV_EXCUSE,
};

/* Contexts a process uses are few; a full table means FP32 for the rest. */
#define AMP_DEV_MAX_CONTEXTS 64

struct amp_dev {
    /* The context; NULL once it has ended (amp_dev_retire). Atomic: a
     * thread's amp_dev_last reads it while another thread retires it. */
    CUcontext ctx;
    int retired;               /* atomic, as ctx */
    /* The context's id (cuCtxGetId): unique for the process's life, where
     * the address is not (a primary context reset unseen, through an
     * entry point cuGetProcAddress gave, comes back at its address). */
    unsigned long long ctx_id;
    int usable;
    CUmodule module;
    CUfunction kernels[AMP_KERNEL_COUNT];
    /* Blocks of one full wave of each kernel (amp_dev_grid); 0 where the
     * driver did not say. */
    unsigned wave[AMP_KERNEL_COUNT];
    /* Slots, under amp_dev_lock: blocks made as the slots run out (block
     * b holds AMP_DEV_SLOTS << b of them), kept for the context's life. A
     * block's memory and events never move once made: a slot's harvest
     * reads its event without the lock. */
    int slots_state;           /* 0 not yet, 1 made, -1 cannot be made */
    int slot_blocks;           /* made */
    int slots_grow_failed;     /* a later block could not be made */
    char *slot_memory[AMP_DEV_SLOT_BLOCKS];
    CUevent *slot_events[AMP_DEV_SLOT_BLOCKS];
    int *free_slots;           /* a stack of the free slots */
    int nfree_slots;
    /* Timing events, under amp_dev_lock: made when none is free, kept
     * for the life of the context, recycled after harvest. */
    CUevent events[AMP_DEV_EVENTS];
    int nevents;               /* made */
    int free_events[AMP_DEV_EVENTS];
    int nfree;                 /* of those, free (the stack's depth) */
    int events_failed;         /* cuEventCreate failed once: no more */
    /* Records, under amp_dev_lock: one device allocation, made on first
     * use; a host table of who holds each record. */
    int records_state;         /* 0 not yet, 1 made, -1 cannot be made */
    CUdeviceptr records;
    struct amp_dev_record_key {
        uint64_t key;
        /* The stream's id (cuStreamGetId): a stream made where one was
         * destroyed has another, so its calls never meet the old one's
         * records while its last kernels may still run. */
        unsigned long long stream;
        int held;
        int ready;             /* the key's first call is queued */
        /* Not held, but a kernel queued on `stream` may still write it:
         * only that stream's calls may take it, until done_event (a
         * timing event recorded after that kernel, -1 when none could be
         * had) is known to have finished. */
        int draining;
        int done_event;
    } record_keys[AMP_DEV_RECORDS];
    int epoch;                 /* the trace's time origin, -1 not yet */
    /* What timing itself adds to a span between two events: the least of
     * a few spans between events recorded back to back (0: not known). */
    double event_overhead_ms;
    int ordinal;               /* the context's device (CUdevice) */
    int cc_major, cc_minor;    /* its compute capability, 0.0 when the
                                  driver does not say */
    char name[128];            /* the device's name */
    /* The scratch pool: made on first use, under amp_dev_lock. */
    int pool_state;            /* atomic: 0 not yet, 1 made, -1 cannot be
                                  made */
    CUmemoryPool pool;
};

static struct amp_once amp_dev_once = AMP_ONCE_INIT;
static enum amp_status amp_dev_init_status = AMP_ERR_UNAVAILABLE;
static pthread_mutex_t amp_dev_lock = PTHREAD_MUTEX_INITIALIZER;
static struct amp_dev amp_devs[AMP_DEV_MAX_CONTEXTS];
static int amp_ndevs;
static int amp_devs_full;
static AMP_THREAD_HOT struct amp_dev *amp_dev_last;
/* amp_dev_current_ordinal's answer for the thread's last context, valid
 * while amp_dev_generation is unchanged (a context that ends may be
 * followed by another at its address, on another device). */
static AMP_THREAD_HOT struct {
    CUcontext ctx;
    int ordinal;
    unsigned generation;
} amp_dev_last_ordinal;
static unsigned amp_dev_generation; /* atomic; bumped as contexts end */

static CUcontext
amp_dev_context(const struct amp_dev *dev)
{
    return __atomic_load_n(&dev->ctx, __ATOMIC_ACQUIRE);
}

static const char *
amp_cu_error(CUresult r)
{
    const char *name = NULL;

    if (!amp_cu.cuGetErrorName || amp_cu.cuGetErrorName(r, &name) != 0 ||
        !name)
        return "unknown CUDA error";
    return name;
}

static void
amp_dev_load_driver(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    int missing = 0;

    if (!lib) {
        amp_log(AMP_LOG_INFO, "no CUDA driver (libcuda.so.1): %s; "
                "every call stays FP32", dlerror());
        return;
    }
#define AMP_DRIVER_LOAD(sym)                                                 \
    *(void **)&amp_cu.sym = amp_dlsym(lib, AMP_STR(sym));                      \
    if (!amp_cu.sym) {                                                       \
        amp_log(AMP_LOG_WARN, "libcuda.so.1 has no %s; every call stays "    \
                "FP32", AMP_STR(sym));                                       \
        missing++;                                                           \
    }
    AMP_DRIVER_SYMBOLS(AMP_DRIVER_LOAD)
#undef AMP_DRIVER_LOAD
    /* The library stays loaded for the life of the process. */
    amp_dev_init_status = missing ? AMP_ERR_UNAVAILABLE : AMP_OK;
}

enum amp_status
amp_dev_init(void)
{
    amp_once(&amp_dev_once, amp_dev_load_driver);
    return amp_dev_init_status;
}

int
amp_dev_relax(void)
{
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;

    if (amp_dev_init() != AMP_OK ||
        amp_cu.cuThreadExchangeStreamCaptureMode(&mode) != CUDA_SUCCESS)
        return -1;
    return (int)mode;
}

void
amp_dev_unrelax(int token)
{
    CUstreamCaptureMode mode = (CUstreamCaptureMode)token;

    if (token >= 0)
        amp_cu.cuThreadExchangeStreamCaptureMode(&mode);
}

/* One full wave of each of dev's kernels: the device's multiprocessors
 * times the blocks of AMP_KERNEL_BLOCK threads that fit on one, by the
 * driver's occupancy calculation (the kernel's registers and shared
 * memory). */
static void
amp_dev_waves(struct amp_dev *dev, CUdevice device)
{
    int sms = 0, k;

    if (amp_cu.cuDeviceGetAttribute(&sms,
                                    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                    device) != CUDA_SUCCESS)
        sms = 0;
    for (k = 0; k < AMP_KERNEL_COUNT; k++) {
        int blocks = 0;

        dev->wave[k] = 0;
        if (sms > 0 &&
            amp_cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(
                &blocks, dev->kernels[k], AMP_KERNEL_BLOCK, 0) ==
                CUDA_SUCCESS &&
            blocks > 0)
            dev->wave[k] = (unsigned)sms * (unsigned)blocks;
    }
}

unsigned
amp_dev_grid(const struct amp_dev *dev, enum amp_kernel k, int64_t n)
{
    return amp_kernel_grid(n, dev->wave[k] ? dev->wave[k]
                                           : AMP_KERNEL_MAX_GRID);
}

/* Spans between back-to-back events the calibration takes the least of. */
#define AMP_DEV_OVERHEAD_SPANS 3

/* dev->event_overhead_ms: a GPU spends device time recording a timing
 * event (a stream's next op starts later), so the span between two events
 * holds one record's cost besides the work between them. Measured once,
 * on a stream of the shim's own, as the least span between events
 * recorded back to back; 0 when any step fails. Context current. */
static void
amp_dev_event_overhead(struct amp_dev *dev)
{
    CUevent e[AMP_DEV_OVERHEAD_SPANS + 1];
    CUstream stream;
    int made = 0, i, ok;
    double least = -1.0;

    dev->event_overhead_ms = 0.0;
    if (amp_cu.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) !=
        CUDA_SUCCESS)
        return;
    while (made <= AMP_DEV_OVERHEAD_SPANS &&
           amp_cu.cuEventCreate(&e[made], CU_EVENT_DEFAULT) == CUDA_SUCCESS)
        made++;
    ok = made == AMP_DEV_OVERHEAD_SPANS + 1;
    for (i = 0; ok && i < made; i++)
        ok = amp_cu.cuEventRecord(e[i], stream) == CUDA_SUCCESS;
    ok = ok && amp_cu.cuEventSynchronize(e[made - 1]) == CUDA_SUCCESS;
    for (i = 0; ok && i + 1 < made; i++) {
        float ms = 0.0f;

        ok = amp_cu.cuEventElapsedTime(&ms, e[i], e[i + 1]) == CUDA_SUCCESS;
        if (ok && (least < 0.0 || ms < least))
            least = ms;
    }
    if (ok && least > 0.0)
        dev->event_overhead_ms = least;
    for (i = 0; i < made; i++)
        amp_cu.cuEventDestroy(e[i]);
    amp_cu.cuStreamDestroy(stream);
}

/* Loads the kernels into the current context, the one dev stands for. */
static void
amp_dev_setup(struct amp_dev *dev)
{
    CUdevice device;
    int pools = 0;
    CUresult r;
    int k;

    dev->ordinal = -1;
    r = amp_cu.cuCtxGetDevice(&device);
    if (r == CUDA_SUCCESS) {
        dev->ordinal = (int)device;
        r = amp_cu.cuDeviceGetAttribute(
            &pools, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, device);
    }
    if (r != CUDA_SUCCESS || !pools) {
        amp_log(AMP_LOG_WARN, "device has no stream-ordered allocator (%s); "
                "calls in this context stay FP32",
                r == CUDA_SUCCESS ? "memory pools unsupported"
                                  : amp_cu_error(r));
        return;
    }
    r = amp_cu.cuModuleLoadData(&dev->module, amp_kernels_fatbin);
    if (r != CUDA_SUCCESS) {
        amp_log(AMP_LOG_WARN, "cannot load the shim's kernels (%s); calls "
                "in this context stay FP32", amp_cu_error(r));
        return;
    }
    for (k = 0; k < AMP_KERNEL_COUNT; k++) {
        r = amp_cu.cuModuleGetFunction(&dev->kernels[k], dev->module,
                                       amp_kernel_names[k]);
        if (r != CUDA_SUCCESS) {
            amp_log(AMP_LOG_WARN, "kernel %s missing (%s); calls in this "
                    "context stay FP32", amp_kernel_names[k],
                    amp_cu_error(r));
            return;
        }
    }
    amp_dev_waves(dev, device);
    if (amp_cu.cuDeviceGetName(dev->name, (int)sizeof dev->name, device) !=
        CUDA_SUCCESS)
        snprintf(dev->name, sizeof dev->name, "device %d", (int)device);
    if (amp_cu.cuDeviceGetAttribute(
            &dev->cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
            device) != CUDA_SUCCESS ||
        amp_cu.cuDeviceGetAttribute(
            &dev->cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
            device) != CUDA_SUCCESS)
        dev->cc_major = dev->cc_minor = 0;
    amp_dev_event_overhead(dev);
    dev->epoch = -1;
    dev->usable = 1;
}

/* Drops dev's state: its context has ended. Lock held. */
static void
amp_dev_retire_locked(struct amp_dev *dev)
{
    /* Its module, events and page-locked slots ended with the context; a
     * later context at the same address gets a new entry. */
    __atomic_store_n(&dev->retired, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&dev->ctx, NULL, __ATOMIC_RELEASE);
    __atomic_add_fetch(&amp_dev_generation, 1, __ATOMIC_RELEASE);
}

/* The state of the current context, made (kernels loaded) on first use
 * when `make`. A context is the pair of its address and its id: an entry
 * at the address with another id is of a context that ended without the
 * shim seeing it (a reset through an entry point it does not hook), and
 * is retired here. */
static struct amp_dev *
amp_dev_find(int make)
{
    struct amp_dev *dev = NULL;
    CUcontext ctx = NULL;
    unsigned long long id = 0;
    int i;

    if (amp_dev_init() != AMP_OK)
        return NULL;
    if (amp_cu.cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || !ctx ||
        amp_cu.cuCtxGetId(ctx, &id) != CUDA_SUCCESS)
        return NULL;
    if (amp_dev_last && amp_dev_context(amp_dev_last) == ctx &&
        amp_dev_last->ctx_id == id)
        return amp_dev_last->usable ? amp_dev_last : NULL;

    pthread_mutex_lock(&amp_dev_lock);
    for (i = 0; i < amp_ndevs; i++) {
        if (amp_dev_context(&amp_devs[i]) != ctx)
            continue;
        if (amp_devs[i].ctx_id == id) {
            dev = &amp_devs[i];
            continue;
        }
        amp_log(AMP_LOG_DEBUG, "context %p was replaced unseen (id %llu, "
                "now %llu): the shim's state in the old one is dropped",
                (void *)ctx, amp_devs[i].ctx_id, id);
        amp_dev_retire_locked(&amp_devs[i]);
    }
    if (!dev && make && amp_ndevs < AMP_DEV_MAX_CONTEXTS) {
        /* Entries are never reused: a retired one may still be named by
         * a thread's amp_dev_last or own handles. */
        int relaxed = amp_dev_relax();

        dev = &amp_devs[amp_ndevs++];
        dev->ctx_id = id;
        amp_dev_setup(dev);
        amp_dev_unrelax(relaxed);
        __atomic_store_n(&dev->ctx, ctx, __ATOMIC_RELEASE);
    } else if (!dev && make && !amp_devs_full) {
        amp_devs_full = 1;
        amp_log(AMP_LOG_WARN, "more than %d CUDA contexts in this process; "
                "calls in the later ones stay FP32", AMP_DEV_MAX_CONTEXTS);
    }
    pthread_mutex_unlock(&amp_dev_lock);
    if (!dev)
        return NULL;
    amp_dev_last = dev;
    return dev->usable ? dev : NULL;
}

struct amp_dev *
amp_dev_current(void)
{
    return amp_dev_find(1);
}

struct amp_dev *
amp_dev_current_made(void)
{
    return amp_dev_find(0);
}

void *
amp_dev_primary_context(int device)
{
    CUcontext ctx = NULL;
    unsigned flags;
    int active = 0;

    /* Retaining an active primary context and releasing it again leaves
     * its count as it was; an inactive one is never made. */
    if (amp_dev_init() != AMP_OK ||
        amp_cu.cuDevicePrimaryCtxGetState(device, &flags, &active) !=
            CUDA_SUCCESS ||
        !active ||
        amp_cu.cuDevicePrimaryCtxRetain(&ctx, device) != CUDA_SUCCESS)
        return NULL;
    amp_cu.cuDevicePrimaryCtxRelease(device);
    return ctx;
}

int
amp_dev_primary_active(int device)
{
    unsigned flags;
    int active = 0;

    if (amp_dev_init() != AMP_OK ||
        amp_cu.cuDevicePrimaryCtxGetState(device, &flags, &active) !=
            CUDA_SUCCESS)
        return -1;
    return active;
}

int
amp_dev_any(void)
{
    int n;

    pthread_mutex_lock(&amp_dev_lock);
    n = amp_ndevs;
    pthread_mutex_unlock(&amp_dev_lock);
    return n > 0;
}

int
amp_dev_known(void *ctx)
{
    int i, known = 0;

    if (!ctx)
        return 0;
    pthread_mutex_lock(&amp_dev_lock);
    for (i = 0; i < amp_ndevs && !known; i++)
        known = amp_dev_context(&amp_devs[i]) == (CUcontext)ctx;
    pthread_mutex_unlock(&amp_dev_lock);
    return known;
}

void
amp_dev_retire(void *ctx)
{
    int i;

    if (!ctx)
        return;
    pthread_mutex_lock(&amp_dev_lock);
    for (i = 0; i < amp_ndevs; i++) {
        struct amp_dev *dev = &amp_devs[i];

        if (amp_dev_context(dev) != (CUcontext)ctx)
            continue;
        amp_dev_retire_locked(dev);
        amp_log(AMP_LOG_DEBUG, "context %p ended: the shim's state in it "
                "is dropped", ctx);
    }
    pthread_mutex_unlock(&amp_dev_lock);
}

int
amp_dev_retired(const struct amp_dev *dev)
{
    return __atomic_load_n(&dev->retired, __ATOMIC_ACQUIRE);
}

int
amp_dev_stream_capturing(amp_stream stream)
{
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;

    if (amp_dev_init() != AMP_OK ||
        amp_cu.cuStreamIsCapturing((CUstream)stream, &status) !=
            CUDA_SUCCESS)
        return -1;
    return status != CU_STREAM_CAPTURE_STATUS_NONE;
}

void *
amp_dev_capture_graph(amp_stream stream)
{
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    CUgraph graph = NULL;

    if (amp_dev_init() != AMP_OK ||
        amp_cu.cuStreamGetCaptureInfo((CUstream)stream, &status, NULL, &graph,
                                      NULL, NULL, NULL) != CUDA_SUCCESS ||
        status != CU_STREAM_CAPTURE_STATUS_ACTIVE)
        return NULL;
    return graph;
}

/* ---- Scratch ------------------------------------------------------------------

 * Outside a capture, scratch is stream-ordered memory from a pool of the
 * shim's own, never the device's current pool: a program's pool (RMM,
 * CuPy's, PyTorch's cudaMallocAsync backend) does not pay for it, and the
 * pool's attributes are the shim's. The pool keeps up to
 * amp_dev_pool_keep's bytes across synchronisations (the default release
 * threshold, 0, would give its memory back at every synchronisation and
 * map it again inside the next call's timed window), and inserts no
 * dependencies of its own between streams (scratch freed on one stream is
 * reused on another only when the streams are already ordered).
 *
 * Inside a capture, a stream-ordered allocation would become memory
 * nodes of the program's graph, and such a graph can have only one
 * executable instance and cannot be embedded as a child graph. Scratch
 * there is ordinary device memory (cuMemAlloc) that the graph owns through
 * a user object: the driver calls amp_graph_scratch_done once the graph,
 * its executables and the graphs that embed it are gone, and the memory
 * is freed by a later call of the shim's (a destructor may not call the
 * driver). */

struct amp_graph_scratch {
    CUdeviceptr ptr;
    struct amp_dev *dev;
    struct amp_graph_scratch *next;
};

/* Scratch of graphs that are gone, to free: a lock-free stack, pushed by
 * the driver's thread. */
static struct amp_graph_scratch *amp_graph_dead;

static void
amp_graph_scratch_push(struct amp_graph_scratch *gs)
{
    struct amp_graph_scratch *head =
        __atomic_load_n(&amp_graph_dead, __ATOMIC_RELAXED);

    do
        gs->next = head;
    while (!__atomic_compare_exchange_n(&amp_graph_dead, &head, gs, 1,
                                        __ATOMIC_RELEASE, __ATOMIC_RELAXED));
}

static void
amp_graph_scratch_done(void *arg)
{
    amp_graph_scratch_push(arg);
}

/* Frees the scratch of dev's graphs that are gone (the calling thread's
 * current context is dev's); others go back on the stack. */
static void
amp_graph_scratch_reap(struct amp_dev *dev)
{
    struct amp_graph_scratch *gs, *next;
    int relaxed;

    if (!__atomic_load_n(&amp_graph_dead, __ATOMIC_RELAXED))
        return;
    gs = __atomic_exchange_n(&amp_graph_dead, NULL, __ATOMIC_ACQUIRE);
    relaxed = amp_dev_relax();
    for (; gs; gs = next) {
        next = gs->next;
        if (gs->dev != dev && !amp_dev_retired(gs->dev)) {
            amp_graph_scratch_push(gs);
            continue;
        }
        /* A retired context's memory went with it. */
        if (gs->dev == dev)
            amp_cu.cuMemFree(gs->ptr);
        free(gs);
    }
    amp_dev_unrelax(relaxed);
}

/* Scratch owned by `graph`, which a stream is being captured into. */
static enum amp_status
amp_dev_alloc_captured(struct amp_dev *dev, size_t bytes, CUgraph graph,
                       amp_devptr *ptr)
{
    struct amp_graph_scratch *gs;
    CUuserObject obj = NULL;
    CUresult r;
    int relaxed;

    gs = calloc(1, sizeof(*gs));
    if (!gs)
        return AMP_ERR_NOMEM;
    gs->dev = dev;
    relaxed = amp_dev_relax();
    r = amp_cu.cuMemAlloc(&gs->ptr, bytes);
    if (r == CUDA_SUCCESS)
        r = amp_cu.cuUserObjectCreate(&obj, gs, amp_graph_scratch_done, 1,
                                      CU_USER_OBJECT_NO_DESTRUCTOR_SYNC);
    if (r == CUDA_SUCCESS)
        r = amp_cu.cuGraphRetainUserObject(graph, obj, 1,
                                           CU_GRAPH_USER_OBJECT_MOVE);
    if (r != CUDA_SUCCESS) {
        amp_log(AMP_LOG_INFO, "scratch of %zu bytes for a captured call "
                "refused: %s", bytes, amp_cu_error(r));
        if (obj)
            amp_cu.cuUserObjectRelease(obj, 1); /* frees it in time */
        else {
            if (gs->ptr)
                amp_cu.cuMemFree(gs->ptr);
            free(gs);
        }
    }
    amp_dev_unrelax(relaxed);
    if (r != CUDA_SUCCESS)
        return AMP_ERR_DRIVER;
    *ptr = gs->ptr;
    return AMP_OK;
}

/* Bytes the scratch pool keeps across synchronisations: a 64th of the
 * device's memory, at most 512 MiB. */
static cuuint64_t
amp_dev_pool_keep(const struct amp_dev *dev)
{
    const cuuint64_t most = (cuuint64_t)512 << 20;
    size_t total = 0;

    if (amp_cu.cuDeviceTotalMem(&total, (CUdevice)dev->ordinal) !=
        CUDA_SUCCESS)
        return 0;
    return total / 64 < most ? total / 64 : most;
}

/* dev's scratch pool, made on first use; NULL when the driver cannot make
 * one (scratch then comes from the device's current pool). */
static CUmemoryPool
amp_dev_pool(struct amp_dev *dev)
{
    int state = __atomic_load_n(&dev->pool_state, __ATOMIC_ACQUIRE);
    CUmemPoolProps props;
    cuuint64_t keep;
    int no = 0, relaxed;
    CUresult r;

    if (state != 0) /* made, or failed for good: no lock on every call */
        return state == 1 ? dev->pool : NULL;
    pthread_mutex_lock(&amp_dev_lock);
    if (dev->pool_state != 0)
        goto out;
    memset(&props, 0, sizeof(props));
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = dev->ordinal;
    keep = amp_dev_pool_keep(dev);
    relaxed = amp_dev_relax();
    r = amp_cu.cuMemPoolCreate(&dev->pool, &props);
    if (r == CUDA_SUCCESS)
        r = amp_cu.cuMemPoolSetAttribute(
            dev->pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep);
    if (r == CUDA_SUCCESS)
        r = amp_cu.cuMemPoolSetAttribute(
            dev->pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES, &no);
    amp_dev_unrelax(relaxed);
    if (r != CUDA_SUCCESS)
        amp_log(AMP_LOG_INFO, "no memory pool of the shim's own (%s): "
                "scratch comes from the device's current pool",
                amp_cu_error(r));
    __atomic_store_n(&dev->pool_state, r == CUDA_SUCCESS ? 1 : -1,
                     __ATOMIC_RELEASE);
out:
    pthread_mutex_unlock(&amp_dev_lock);
    return dev->pool_state == 1 ? dev->pool : NULL;
}

enum amp_status
amp_dev_alloc_async(struct amp_dev *dev, size_t bytes, amp_stream stream,
                    int capture, amp_devptr *ptr, int *in_graph)
{
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    CUgraph graph = NULL;
    CUmemoryPool pool;
    CUdeviceptr p = 0;
    CUresult r;

    /* A stream whose capture status the driver cannot tell gets
     * stream-ordered scratch, as one that is not capturing. */
    if (capture == AMP_CAPTURE_NONE) {
        *in_graph = 0;
    } else {
        r = amp_cu.cuStreamGetCaptureInfo((CUstream)stream, &status, NULL,
                                          &graph, NULL, NULL, NULL);
        *in_graph =
            r == CUDA_SUCCESS && status != CU_STREAM_CAPTURE_STATUS_NONE;
    }
    if (*in_graph)
        return status == CU_STREAM_CAPTURE_STATUS_ACTIVE && graph
                   ? amp_dev_alloc_captured(dev, bytes, graph, ptr)
                   : AMP_ERR_UNAVAILABLE;
    amp_graph_scratch_reap(dev);
    pool = amp_dev_pool(dev);
    r = pool ? amp_cu.cuMemAllocFromPoolAsync(&p, bytes, pool,
                                              (CUstream)stream)
             : amp_cu.cuMemAllocAsync(&p, bytes, (CUstream)stream);
    if (r != CUDA_SUCCESS) {
        amp_log(AMP_LOG_INFO, "scratch of %zu bytes refused: %s", bytes,
                amp_cu_error(r));
        return AMP_ERR_DRIVER;
    }
    *ptr = p;
    return AMP_OK;
}

void
amp_dev_free_async(amp_devptr ptr, amp_stream stream, int in_graph)
{
    CUresult r;

    if (in_graph)
        return; /* the graph's, freed when the graph is gone */
    r = amp_cu.cuMemFreeAsync((CUdeviceptr)ptr, (CUstream)stream);
    if (r != CUDA_SUCCESS)
        amp_log(AMP_LOG_WARN, "scratch free failed: %s", amp_cu_error(r));
}

size_t
amp_scratch_part(size_t *total, size_t bytes)
{
    size_t at = *total, padded;

    if (at == SIZE_MAX || bytes > SIZE_MAX - AMP_SCRATCH_ALIGN ||
        __builtin_add_overflow(at, (bytes + AMP_SCRATCH_ALIGN - 1) /
                                       AMP_SCRATCH_ALIGN * AMP_SCRATCH_ALIGN,
                               &padded)) {
        *total = SIZE_MAX;
        return SIZE_MAX;
    }
    *total = padded;
    return at;
}

enum amp_status
amp_dev_copy_async(amp_devptr dst, amp_devptr src, size_t bytes,
                   amp_stream stream)
{
    CUresult r = amp_cu.cuMemcpyDtoDAsync((CUdeviceptr)dst, (CUdeviceptr)src,
                                          bytes, (CUstream)stream);

    if (r != CUDA_SUCCESS) {
        amp_log(AMP_LOG_INFO, "copy failed: %s", amp_cu_error(r));
        return AMP_ERR_DRIVER;
    }
    return AMP_OK;
}

enum amp_status
amp_dev_memset32_async(amp_devptr ptr, uint32_t value, size_t count,
                       amp_stream stream)
{
    CUresult r = amp_cu.cuMemsetD32Async((CUdeviceptr)ptr, value, count,
                                         (CUstream)stream);

    if (r != CUDA_SUCCESS) {
        amp_log(AMP_LOG_INFO, "memset failed: %s", amp_cu_error(r));
        return AMP_ERR_DRIVER;
    }
    return AMP_OK;
}

enum amp_status
amp_dev_launch(struct amp_dev *dev, enum amp_kernel k, unsigned grid,
               unsigned block, amp_stream stream, void **params)
{
    CUresult r = amp_cu.cuLaunchKernel(dev->kernels[k], grid, 1, 1, block,
                                       1, 1, 0, (CUstream)stream, params,
                                       NULL);

    if (r != CUDA_SUCCESS) {
        amp_log(AMP_LOG_INFO, "launch of %s failed: %s", amp_kernel_names[k],
                amp_cu_error(r));
        return AMP_ERR_DRIVER;
    }
    return AMP_OK;
}

/* Slot `slot`'s block (*block) and place in it. */
static int
amp_dev_slot_place(int slot, int *block)
{
    unsigned q = (unsigned)slot / AMP_DEV_SLOTS + 1;
    int b = 31 - __builtin_clz(q);

    *block = b;
    return slot - AMP_DEV_SLOTS * ((1 << b) - 1);
}

/* Makes dev's next block of slots: page-locked memory the device reaches
 * at the same address (unified addressing), and one event per slot; its
 * slots go to the free stack. -1 when it cannot be made (the first block:
 * remembered in slots_state, a later one in slots_grow_failed). Lock held,
 * dev's context current. */
static int
amp_dev_slots_grow(struct amp_dev *dev)
{
    int b = dev->slot_blocks, n = AMP_DEV_SLOTS << b, first, i;
    CUevent *events = calloc((size_t)n, sizeof *events);
    int *stack = realloc(dev->free_slots,
                         (size_t)(AMP_DEV_SLOTS * ((1 << (b + 1)) - 1)) *
                             sizeof *stack);
    CUdevice device;
    void *host = NULL;
    int unified = 0;
    CUresult r = CUDA_ERROR_OUT_OF_MEMORY;

    if (stack)
        dev->free_slots = stack;
    if (events && stack)
        r = amp_cu.cuCtxGetDevice(&device);
    if (r == CUDA_SUCCESS)
        r = amp_cu.cuDeviceGetAttribute(
            &unified, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, device);
    if (r == CUDA_SUCCESS && unified)
        r = amp_cu.cuMemAllocHost(&host, (size_t)n * AMP_DEV_SLOT_BYTES);
    for (i = 0; r == CUDA_SUCCESS && unified && i < n; i++)
        r = amp_cu.cuEventCreate(&events[i], CU_EVENT_DISABLE_TIMING);
    if (r != CUDA_SUCCESS || !unified) {
        /* What was made stays: a few events and pinned bytes, once. */
        amp_log(AMP_LOG_WARN, "no page-locked memory for %s (%s); %s",
                b ? "more result slots" : "shadow results",
                unified ? amp_cu_error(r) : "no unified addressing",
                b ? "calls that need one while all are taken stay FP32"
                  : "shadow calls in this context stay FP32");
        free(events);
        if (b)
            dev->slots_grow_failed = 1;
        else
            dev->slots_state = -1;
        return -1;
    }
    dev->slot_memory[b] = host;
    dev->slot_events[b] = events;
    dev->slot_blocks = b + 1;
    dev->slots_state = 1;
    first = AMP_DEV_SLOTS * ((1 << b) - 1);
    for (i = n - 1; i >= 0; i--)
        dev->free_slots[dev->nfree_slots++] = first + i;
    return 0;
}

enum amp_status
amp_dev_slot_take(struct amp_dev *dev, int *slot, amp_devptr *at)
{
    enum amp_status st = AMP_ERR_UNAVAILABLE;
    int block, place;

    pthread_mutex_lock(&amp_dev_lock);
    if (dev->slots_state >= 0 && dev->nfree_slots == 0 &&
        dev->slot_blocks < AMP_DEV_SLOT_BLOCKS && !dev->slots_grow_failed) {
        int relaxed = amp_dev_relax();

        amp_dev_slots_grow(dev);
        amp_dev_unrelax(relaxed);
    }
    if (dev->slots_state < 0)
        st = AMP_ERR_DRIVER;
    if (st == AMP_ERR_UNAVAILABLE && dev->nfree_slots > 0) {
        *slot = dev->free_slots[--dev->nfree_slots];
        place = amp_dev_slot_place(*slot, &block);
        *at = (amp_devptr)(uintptr_t)(dev->slot_memory[block] +
                                      (size_t)place * AMP_DEV_SLOT_BYTES);
        st = AMP_OK;
    }
    pthread_mutex_unlock(&amp_dev_lock);
    return st;
}

/* The event of slot `slot`. */
static CUevent
amp_dev_slot_event(const struct amp_dev *dev, int slot)
{
    int block, place = amp_dev_slot_place(slot, &block);

    return dev->slot_events[block][place];
}

enum amp_status
amp_dev_slot_record(struct amp_dev *dev, int slot, amp_stream stream)
{
    CUresult r = amp_cu.cuEventRecord(amp_dev_slot_event(dev, slot),
                                      (CUstream)stream);

    if (r != CUDA_SUCCESS) {
        amp_log(AMP_LOG_INFO, "event record failed: %s", amp_cu_error(r));
        return AMP_ERR_DRIVER;
    }
    return AMP_OK;
}

int
amp_dev_slot_done(struct amp_dev *dev, int slot, int wait)
{
    CUevent e = amp_dev_slot_event(dev, slot);
    CUcontext popped;
    int relaxed;
    CUresult r;

    if (amp_dev_push(dev) != 0)
        return -1;
    relaxed = amp_dev_relax();
    r = wait ? amp_cu.cuEventSynchronize(e) : amp_cu.cuEventQuery(e);
    amp_dev_unrelax(relaxed);
    amp_cu.cuCtxPopCurrent(&popped);
    if (r == CUDA_ERROR_NOT_READY)
        return 0;
    return r == CUDA_SUCCESS ? 1 : -1;
}

void
amp_dev_slot_release(struct amp_dev *dev, int slot)
{
    pthread_mutex_lock(&amp_dev_lock);
    dev->free_slots[dev->nfree_slots++] = slot;
    pthread_mutex_unlock(&amp_dev_lock);
}

/* ---- Records: device state kept between calls ------------------------- */

/* Makes dev's records: device memory (its contents are whatever it holds:
 * a record's first call sets what the next ones read). Lock held, dev's
 * context current. */
static void
amp_dev_records_make(struct amp_dev *dev)
{
    size_t bytes = (size_t)AMP_DEV_RECORDS * AMP_DEV_RECORD_BYTES;
    int relaxed = amp_dev_relax();
    CUresult r = amp_cu.cuMemAlloc(&dev->records, bytes);

    amp_dev_unrelax(relaxed);
    if (r != CUDA_SUCCESS) {
        amp_log(AMP_LOG_INFO, "no device memory for delayed scales (%s); "
                "every FP16 GEMM in this context takes two passes",
                amp_cu_error(r));
        dev->records_state = -1;
        return;
    }
    dev->records_state = 1;
}

/* The table's place for (key, stream id): a mix of both. */
static unsigned
amp_dev_record_hash(uint64_t key, unsigned long long stream)
{
    uint64_t h = key ^ ((uint64_t)stream * 0x9e3779b97f4a7c15ull);

    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 32;
    return (unsigned)(h % AMP_DEV_RECORDS);
}

static int amp_dev_event_take_locked(struct amp_dev *dev, int *event);

/* Whether the draining record k's last kernel is known done (then k is
 * free again and its event back in the pool). Lock held, dev's context
 * current. */
static int
amp_dev_record_settle(struct amp_dev *dev, struct amp_dev_record_key *k)
{
    CUresult r;
    int relaxed;

    if (k->done_event < 0)
        return 0;
    relaxed = amp_dev_relax();
    r = amp_cu.cuEventQuery(dev->events[k->done_event]);
    amp_dev_unrelax(relaxed);
    if (r != CUDA_SUCCESS)
        return 0; /* not yet, or failed: the stream keeps it */
    dev->free_events[dev->nfree++] = k->done_event;
    k->done_event = -1;
    k->draining = 0;
    return 1;
}

/* Lets the record k go from its holder: it drains until a timing event
 * recorded now on `stream` (the last stream that queued work on it)
 * finishes. Lock held, the stream's context current. */
static void
amp_dev_record_release(struct amp_dev *dev, struct amp_dev_record_key *k,
                       amp_stream stream)
{
    int e = -1, relaxed;

    if (k->draining && k->done_event >= 0) {
        k->held = 0;
        return;
    }
    if (amp_dev_event_take_locked(dev, &e) == 0) {
        relaxed = amp_dev_relax();
        if (amp_cu.cuEventRecord(dev->events[e], (CUstream)stream) !=
            CUDA_SUCCESS) {
            dev->free_events[dev->nfree++] = e;
            e = -1;
        }
        amp_dev_unrelax(relaxed);
    }
    k->held = 0;
    k->ready = 0;
    k->draining = 1;
    k->done_event = e;
}

/* The id of `stream` in the current context; 0 when the driver cannot
 * say (no record then). */
static unsigned long long
amp_dev_stream_id(amp_stream stream)
{
    unsigned long long id = 0;

    if (amp_cu.cuStreamGetId((CUstream)stream, &id) != CUDA_SUCCESS)
        return 0;
    return id;
}

/* CU_STREAM_PER_THREAD: one handle, a stream per thread. */
#define AMP_DEV_STREAM_PER_THREAD ((amp_stream)(uintptr_t)0x2)

enum amp_status
amp_dev_record(struct amp_dev *dev, uint64_t key, amp_stream stream,
               int capture, amp_devptr *at, int *fresh)
{
    unsigned long long sid;
    unsigned home;
    int i, take = -1, same_stream = -1;
    enum amp_status st = AMP_OK;

    if (stream == AMP_DEV_STREAM_PER_THREAD ||
        amp_dev_capturing_as(capture, stream) != 0)
        return AMP_ERR_UNAVAILABLE;
    sid = amp_dev_stream_id(stream);
    home = amp_dev_record_hash(key, sid);
    if (!sid)
        return AMP_ERR_UNAVAILABLE;
    pthread_mutex_lock(&amp_dev_lock);
    if (dev->records_state == 0)
        amp_dev_records_make(dev);
    if (dev->records_state < 0)
        st = AMP_ERR_DRIVER;
    for (i = 0; st == AMP_OK && i < AMP_DEV_RECORD_PROBES; i++) {
        unsigned at_i = (home + (unsigned)i) % AMP_DEV_RECORDS;
        struct amp_dev_record_key *k = &dev->record_keys[at_i];

        if (k->held && k->key == key && k->stream == sid) {
            /* Until its first call is queued, a later call's kernels
             * could precede that call's: it takes the two passes. */
            if (!k->ready)
                st = AMP_ERR_UNAVAILABLE;
            take = (int)at_i;
            *fresh = 0;
            break;
        }
        /* A draining record: this stream's work follows its kernels;
         * another stream's may run beside them until they are done. */
        if (!k->held && k->draining && k->stream != sid)
            amp_dev_record_settle(dev, k);
        if (!k->held && (!k->draining || k->stream == sid) && take < 0)
            take = (int)at_i;
        if (k->held && k->ready && k->stream == sid && same_stream < 0)
            same_stream = (int)at_i;
    }
    if (st == AMP_OK && take >= 0 && !dev->record_keys[take].held)
        *fresh = 1;
    else if (st == AMP_OK && take < 0 && same_stream >= 0) {
        /* Work on one stream runs in order: a record of this stream can
         * change hands; one of another stream may be in use right now. */
        take = same_stream;
        *fresh = 1;
    } else if (st == AMP_OK && take < 0)
        st = AMP_ERR_UNAVAILABLE;
    if (st == AMP_OK && *fresh) {
        struct amp_dev_record_key *k = &dev->record_keys[take];

        if (k->draining && k->done_event >= 0)
            dev->free_events[dev->nfree++] = k->done_event;
        k->key = key;
        k->stream = sid;
        k->held = 1;
        k->ready = 0;
        k->draining = 0;
        k->done_event = -1;
    }
    if (st == AMP_OK)
        *at = dev->records + (CUdeviceptr)take * AMP_DEV_RECORD_BYTES;
    pthread_mutex_unlock(&amp_dev_lock);
    return st;
}

/* The table entry of the record at `at` while it holds `key`, or NULL.
 * Lock held. */
static struct amp_dev_record_key *
amp_dev_record_entry(struct amp_dev *dev, amp_devptr at, uint64_t key)
{
    size_t i = (size_t)(at - dev->records) / AMP_DEV_RECORD_BYTES;

    if (dev->records_state != 1 || at < dev->records ||
        i >= AMP_DEV_RECORDS || !dev->record_keys[i].held ||
        dev->record_keys[i].key != key)
        return NULL;
    return &dev->record_keys[i];
}

void
amp_dev_record_ready(struct amp_dev *dev, amp_devptr at, uint64_t key)
{
    struct amp_dev_record_key *k;

    pthread_mutex_lock(&amp_dev_lock);
    k = amp_dev_record_entry(dev, at, key);
    if (k)
        k->ready = 1;
    pthread_mutex_unlock(&amp_dev_lock);
}

void
amp_dev_record_drop(struct amp_dev *dev, amp_devptr at, uint64_t key,
                    amp_stream stream)
{
    struct amp_dev_record_key *k;

    pthread_mutex_lock(&amp_dev_lock);
    k = amp_dev_record_entry(dev, at, key);
    if (k)
        amp_dev_record_release(dev, k, stream);
    pthread_mutex_unlock(&amp_dev_lock);
}

void
amp_dev_stream_ending(amp_stream stream)
{
    struct amp_dev *dev = amp_dev_current_made();
    unsigned long long sid;
    int i;

    if (!dev || !(sid = amp_dev_stream_id(stream)))
        return;
    pthread_mutex_lock(&amp_dev_lock);
    for (i = 0; dev->records_state == 1 && i < AMP_DEV_RECORDS; i++) {
        struct amp_dev_record_key *k = &dev->record_keys[i];

        if (k->stream == sid && (k->held || k->draining))
            amp_dev_record_release(dev, k, stream);
    }
    pthread_mutex_unlock(&amp_dev_lock);
}

/* ---- Timing events ------------------------------------------------------ */

static CUresult
amp_dev_event_create(CUevent *e)
{
    int relaxed = amp_dev_relax();
    CUresult r = amp_cu.cuEventCreate(e, CU_EVENT_DEFAULT);

    amp_dev_unrelax(relaxed);
    return r;
}

/* amp_dev_event_take with the lock held; 0 or -1. */
static int
amp_dev_event_take_locked(struct amp_dev *dev, int *event)
{
    CUevent e;

    if (dev->nfree > 0) {
        *event = dev->free_events[--dev->nfree];
        return 0;
    }
    if (dev->nevents < AMP_DEV_EVENTS && !dev->events_failed &&
        amp_dev_event_create(&e) == CUDA_SUCCESS) {
        /* dev's context is current: the caller is about to record. */
        dev->events[dev->nevents] = e;
        *event = dev->nevents++;
        return 0;
    }
    if (dev->nevents < AMP_DEV_EVENTS && !dev->events_failed) {
        dev->events_failed = 1;
        amp_log(AMP_LOG_INFO, "cannot create timing events; calls in "
                "this context go unmeasured");
    }
    return -1;
}

enum amp_status
amp_dev_event_take(struct amp_dev *dev, int *event)
{
    int r;

    pthread_mutex_lock(&amp_dev_lock);
    r = amp_dev_event_take_locked(dev, event);
    pthread_mutex_unlock(&amp_dev_lock);
    return r == 0 ? AMP_OK : AMP_ERR_UNAVAILABLE;
}

enum amp_status
amp_dev_event_record(struct amp_dev *dev, int event, amp_stream stream)
{
    CUresult r = amp_cu.cuEventRecord(dev->events[event], (CUstream)stream);

    return r == CUDA_SUCCESS ? AMP_OK : AMP_ERR_DRIVER;
}

int
amp_dev_event_done(struct amp_dev *dev, int event, int wait)
{
    CUevent e = dev->events[event];
    CUcontext popped;
    int relaxed;
    CUresult r;

    if (amp_dev_push(dev) != 0)
        return -1;
    relaxed = amp_dev_relax();
    r = wait ? amp_cu.cuEventSynchronize(e) : amp_cu.cuEventQuery(e);
    amp_dev_unrelax(relaxed);
    amp_cu.cuCtxPopCurrent(&popped);
    if (r == CUDA_ERROR_NOT_READY)
        return 0;
    return r == CUDA_SUCCESS ? 1 : -1;
}

enum amp_status
amp_dev_event_elapsed(struct amp_dev *dev, int from, int to, double *ms)
{
    CUcontext popped;
    float elapsed = 0.0f;
    int relaxed;
    CUresult r;

    if (amp_dev_push(dev) != 0)
        return AMP_ERR_DRIVER;
    relaxed = amp_dev_relax();
    r = amp_cu.cuEventElapsedTime(&elapsed, dev->events[from],
                                  dev->events[to]);
    amp_dev_unrelax(relaxed);
    amp_cu.cuCtxPopCurrent(&popped);
    *ms = elapsed;
    return r == CUDA_SUCCESS ? AMP_OK : AMP_ERR_DRIVER;
}

enum amp_status
amp_dev_event_span(struct amp_dev *dev, int from, int to, double *ms)
{
    enum amp_status st = amp_dev_event_elapsed(dev, from, to, ms);

    if (st == AMP_OK && *ms > dev->event_overhead_ms)
        *ms -= dev->event_overhead_ms;
    return st;
}

double
amp_dev_event_overhead_ms(const struct amp_dev *dev)
{
    return dev ? dev->event_overhead_ms : 0.0;
}

void
amp_dev_event_release(struct amp_dev *dev, int event)
{
    pthread_mutex_lock(&amp_dev_lock);
    dev->free_events[dev->nfree++] = event;
    pthread_mutex_unlock(&amp_dev_lock);
}

int
amp_dev_epoch(struct amp_dev *dev, amp_stream stream)
{
    int event = -1, now;

    pthread_mutex_lock(&amp_dev_lock);
    now = dev->epoch;
    pthread_mutex_unlock(&amp_dev_lock);
    if (now >= 0)
        return now;
    if (amp_dev_event_take(dev, &event) != AMP_OK)
        return -1;
    if (amp_dev_event_record(dev, event, stream) != AMP_OK) {
        amp_dev_event_release(dev, event);
        return -1;
    }
    pthread_mutex_lock(&amp_dev_lock);
    if (dev->epoch < 0) {
        dev->epoch = event;
        event = -1;
    }
    now = dev->epoch;
    pthread_mutex_unlock(&amp_dev_lock);
    if (event >= 0)
        amp_dev_event_release(dev, event); /* another thread was first */
    return now;
}

const char *
amp_dev_name(const struct amp_dev *dev)
{
    return dev->name;
}

int
amp_dev_cc_major(const struct amp_dev *dev)
{
    return dev->cc_major;
}

int
amp_dev_cc_minor(const struct amp_dev *dev)
{
    return dev->cc_minor;
}

int
amp_cc_bf16x9(int major, int minor)
{
    return major == 10 && (minor == 0 || minor == 3);
}

int
amp_dev_bf16x9(const struct amp_dev *dev)
{
    return dev && amp_cc_bf16x9(dev->cc_major, dev->cc_minor);
}

int
amp_dev_ordinal(const struct amp_dev *dev)
{
    return dev->ordinal;
}

int
amp_dev_current_ordinal(void)
{
    unsigned generation =
        __atomic_load_n(&amp_dev_generation, __ATOMIC_ACQUIRE);
    CUcontext ctx = NULL;
    CUdevice device;

    if (amp_dev_init() != AMP_OK ||
        amp_cu.cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || !ctx)
        return -1;
    if (amp_dev_last_ordinal.ctx == ctx &&
        amp_dev_last_ordinal.generation == generation)
        return amp_dev_last_ordinal.ordinal;
    if (amp_cu.cuCtxGetDevice(&device) != CUDA_SUCCESS)
        return -1;
    amp_dev_last_ordinal.ctx = ctx;
    amp_dev_last_ordinal.ordinal = (int)device;
    amp_dev_last_ordinal.generation = generation;
    return (int)device;
}

enum amp_status
amp_dev_ordinal_name(int ordinal, char *name, size_t cap)
{
    int i, found = 0;

    pthread_mutex_lock(&amp_dev_lock);
    for (i = 0; i < amp_ndevs && !found; i++) {
        if (amp_devs[i].usable && amp_devs[i].ordinal == ordinal) {
            snprintf(name, cap, "%s", amp_devs[i].name);
            found = 1;
        }
    }
    pthread_mutex_unlock(&amp_dev_lock);
    if (found)
        return AMP_OK;
    /* A device where every call stayed FP32: the driver knows its name. */
    if (amp_dev_init() != AMP_OK ||
        amp_cu.cuDeviceGetName(name, (int)cap, (CUdevice)ordinal) !=
            CUDA_SUCCESS)
        return AMP_ERR_UNAVAILABLE;
    return AMP_OK;
}

int
amp_dev_push(struct amp_dev *dev)
{
    CUcontext ctx = amp_dev_context(dev), popped;
    unsigned long long id = 0;

    if (!ctx || amp_cu.cuCtxPushCurrent(ctx) != CUDA_SUCCESS)
        return -1;
    if (amp_cu.cuCtxGetId(NULL, &id) != CUDA_SUCCESS || id != dev->ctx_id) {
        amp_cu.cuCtxPopCurrent(&popped);
        return -1;
    }
    return 0;
}

void
amp_dev_pop(void)
{
    CUcontext popped;

    amp_cu.cuCtxPopCurrent(&popped);
}

enum amp_status
amp_dev_current_name(char *name, size_t cap)
{
    CUcontext ctx = NULL;
    CUdevice device;

    if (amp_dev_init() != AMP_OK ||
        amp_cu.cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || !ctx ||
        amp_cu.cuCtxGetDevice(&device) != CUDA_SUCCESS ||
        amp_cu.cuDeviceGetName(name, (int)cap, device) != CUDA_SUCCESS)
        return AMP_ERR_UNAVAILABLE;
    return AMP_OK;
}

const struct amp_dev *
amp_dev_first(void)
{
    const struct amp_dev *dev = NULL;
    int i;

    pthread_mutex_lock(&amp_dev_lock);
    for (i = 0; i < amp_ndevs && !dev; i++)
        if (amp_devs[i].usable)
            dev = &amp_devs[i];
    pthread_mutex_unlock(&amp_dev_lock);
    return dev;
}

/* What a fork's child drops of the parent's contexts (their slot stacks
 * and event arrays), kept reachable: the child neither uses nor frees
 * memory the parent's threads may have been using. */
struct amp_dev_dropped {
    struct amp_dev_dropped *next;
    void *mem[AMP_DEV_SLOT_BLOCKS + 1];
};
static struct amp_dev_dropped *amp_devs_dropped;

void
amp_dev_forget(void)
{
    int i, b;

    /* After fork the child has no contexts of its own yet; the lock may
     * have been held by a thread that does not exist in the child. */
    pthread_mutex_init(&amp_dev_lock, NULL);
    for (i = 0; i < amp_ndevs; i++) {
        struct amp_dev_dropped *d = calloc(1, sizeof *d);

        if (!d)
            break;
        d->mem[0] = amp_devs[i].free_slots;
        for (b = 0; b < amp_devs[i].slot_blocks; b++)
            d->mem[b + 1] = amp_devs[i].slot_events[b];
        d->next = amp_devs_dropped;
        amp_devs_dropped = d;
    }
    memset(amp_devs, 0, sizeof amp_devs);
    amp_ndevs = 0;
    amp_devs_full = 0;
    amp_dev_last = NULL;
    memset(&amp_dev_last_ordinal, 0, sizeof amp_dev_last_ordinal);
}
