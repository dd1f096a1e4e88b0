/* The emulated libcublas.so.13: handles, settings, status names and the
 * host <-> device matrix and vector copies. The BLAS routines are in
 * cublas_blas.c. */
#include <cublas_v2.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cublas_handle.h"
#include "cublas_status.h"
#include "emu.h"

/* Exported entry points are defined with their header prototypes; these
 * helpers are the only other functions with external linkage. */

/* ---- Settings ------------------------------------------------------------ */

static int
handle_valid(cublasHandle_t handle)
{
    return handle != NULL && handle->magic == EMU_BLAS_MAGIC;
}

cublasStatus_t
emu_blas_config(cublasHandle_t handle, struct emu_blas_config *config)
{
    if (!handle_valid(handle))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    pthread_mutex_lock(&handle->lock);
    config->device = handle->device;
    config->stream = handle->stream;
    config->pointer_mode = handle->pointer_mode;
    config->math_mode = handle->math_mode;
    config->emulation_strategy = handle->emulation_strategy;
    config->sm_count_target = handle->sm_count_target;
    pthread_mutex_unlock(&handle->lock);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
emu_blas_enqueue(const struct emu_blas_config *config,
                 const struct emu_op *op)
{
    if (emu_runtime_bind(config->device) != CUDA_SUCCESS) {
        if (op->release != NULL)
            op->release(op->arg);
        return CUBLAS_STATUS_EXECUTION_FAILED;
    }
    if (emu_enqueue(config->stream, op) != CUDA_SUCCESS)
        return CUBLAS_STATUS_EXECUTION_FAILED;
    return CUBLAS_STATUS_SUCCESS;
}

/* ---- Handles ------------------------------------------------------------- */

cublasStatus_t
emu_blas_create(cublasHandle_t *handle)
{
    struct cublasContext *ctx;
    int dev = emu_current_device();

    if (emu_runtime_bind(dev < 0 ? 0 : dev) != CUDA_SUCCESS)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    dev = emu_current_device();
    if (dev < 0)
        return CUBLAS_STATUS_NOT_INITIALIZED;

    ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL)
        return CUBLAS_STATUS_ALLOC_FAILED;
    pthread_mutex_init(&ctx->lock, NULL);
    ctx->device = dev;
    ctx->stream = NULL;
    ctx->pointer_mode = CUBLAS_POINTER_MODE_HOST;
    ctx->math_mode = CUBLAS_DEFAULT_MATH;
    ctx->emulation_strategy = CUBLAS_EMULATION_STRATEGY_DEFAULT;
    ctx->magic = EMU_BLAS_MAGIC;
    *handle = ctx;
    return CUBLAS_STATUS_SUCCESS;
}

void
emu_blas_destroy(cublasHandle_t handle)
{
    /* The library documents an implicit device synchronisation here. */
    if (emu_runtime_bind(handle->device) == CUDA_SUCCESS)
        (void)cuCtxSynchronize();
    handle->magic = 0;
    pthread_mutex_destroy(&handle->lock);
    free(handle);
}

cublasStatus_t
cublasCreate_v2(cublasHandle_t *handle)
{
    int fault;

    if (handle == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    /* A failed creation is reported as the library failing to initialise
     * its runtime, the status the real one gives without a usable GPU. */
    fault = emu_fault("cublasCreate_v2", CUBLAS_STATUS_NOT_INITIALIZED);
    if (fault != 0)
        return (cublasStatus_t)fault;
    /* The real one allocates its device resources with cudaMalloc, which
     * a running capture may forbid: the allocation failure's status. */
    if (emu_capture_unsafe_call() != CUDA_SUCCESS)
        return CUBLAS_STATUS_ALLOC_FAILED;
    return emu_blas_create(handle);
}

cublasStatus_t
cublasDestroy_v2(cublasHandle_t handle)
{
    int fault;

    if (!handle_valid(handle))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    fault = emu_fault("cublasDestroy_v2", CUBLAS_STATUS_EXECUTION_FAILED);
    if (fault != 0)
        return (cublasStatus_t)fault;
    emu_blas_destroy(handle);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasGetVersion_v2(cublasHandle_t handle, int *version)
{
    int fault;

    (void)handle; /* the real library answers without a handle too */
    if (version == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    fault = emu_fault("cublasGetVersion_v2", CUBLAS_STATUS_EXECUTION_FAILED);
    if (fault != 0)
        return (cublasStatus_t)fault;
    *version = EMU_CUBLAS_VERSION;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasGetProperty(libraryPropertyType type, int *value)
{
    int fault;

    if (value == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (type != MAJOR_VERSION && type != MINOR_VERSION && type != PATCH_LEVEL)
        return CUBLAS_STATUS_INVALID_VALUE;
    fault = emu_fault("cublasGetProperty", CUBLAS_STATUS_EXECUTION_FAILED);
    if (fault != 0)
        return (cublasStatus_t)fault;
    switch (type) {
    case MAJOR_VERSION:
        *value = EMU_CUBLAS_VER_MAJOR;
        break;
    case MINOR_VERSION:
        *value = EMU_CUBLAS_VER_MINOR;
        break;
    default:
        *value = EMU_CUBLAS_VER_PATCH;
        break;
    }
    return CUBLAS_STATUS_SUCCESS;
}

/* Setters and getters share one shape: check the handle and argument,
 * count the call for fault injection, then touch the handle under its
 * lock. */
static cublasStatus_t
begin_setting(cublasHandle_t handle, int arg_ok, const char *name)
{
    int fault;

    if (!handle_valid(handle))
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!arg_ok)
        return CUBLAS_STATUS_INVALID_VALUE;
    fault = emu_fault(name, CUBLAS_STATUS_EXECUTION_FAILED);
    if (fault != 0)
        return (cublasStatus_t)fault;
    pthread_mutex_lock(&handle->lock);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream)
{
    cublasStatus_t st = begin_setting(handle, 1, "cublasSetStream_v2");

    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    handle->stream = stream;
    /* Setting a stream returns the handle to the default workspace. */
    handle->workspace = NULL;
    handle->workspace_size = 0;
    pthread_mutex_unlock(&handle->lock);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasGetStream_v2(cublasHandle_t handle, cudaStream_t *stream)
{
    cublasStatus_t st = begin_setting(handle, stream != NULL,
                                      "cublasGetStream_v2");

    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    *stream = handle->stream;
    pthread_mutex_unlock(&handle->lock);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasSetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t mode)
{
    int ok = mode == CUBLAS_POINTER_MODE_HOST ||
             mode == CUBLAS_POINTER_MODE_DEVICE;
    cublasStatus_t st = begin_setting(handle, ok, "cublasSetPointerMode_v2");

    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    handle->pointer_mode = mode;
    pthread_mutex_unlock(&handle->lock);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasGetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t *mode)
{
    cublasStatus_t st = begin_setting(handle, mode != NULL,
                                      "cublasGetPointerMode_v2");

    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    *mode = handle->pointer_mode;
    pthread_mutex_unlock(&handle->lock);
    return CUBLAS_STATUS_SUCCESS;
}

/* A math mode is one of the base modes, optionally with the
 * DISALLOW_REDUCED_PRECISION_REDUCTION flag. */
static int
math_mode_valid(cublasMath_t mode)
{
    unsigned v = (unsigned)mode;
    unsigned base = v & 0xfu;

    if ((v & ~(0xfu | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)) != 0)
        return 0;
    return base == CUBLAS_DEFAULT_MATH || base == CUBLAS_TENSOR_OP_MATH ||
           base == CUBLAS_PEDANTIC_MATH || base == CUBLAS_TF32_TENSOR_OP_MATH ||
           base == CUBLAS_FP32_EMULATED_BF16X9_MATH ||
           base == CUBLAS_FP64_EMULATED_FIXEDPOINT_MATH;
}

cublasStatus_t
cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode)
{
    cublasStatus_t st = begin_setting(handle, math_mode_valid(mode),
                                      "cublasSetMathMode");

    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    handle->math_mode = mode;
    pthread_mutex_unlock(&handle->lock);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasGetMathMode(cublasHandle_t handle, cublasMath_t *mode)
{
    cublasStatus_t st = begin_setting(handle, mode != NULL,
                                      "cublasGetMathMode");

    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    *mode = handle->math_mode;
    pthread_mutex_unlock(&handle->lock);
    return CUBLAS_STATUS_SUCCESS;
}

/* cublasSetEmulationStrategy / cublasGetEmulationStrategy (cublas_api.h,
 * cuBLAS 12.9 and later): the handle's cublasEmulationStrategy_t, DEFAULT
 * (0) at creation, for the BF16x9 emulation of its FP32 products
 * (emu_bf16x9_runs). A value outside the enum is INVALID_VALUE, as is a
 * NULL destination, as cuSOLVER documents for its counterparts, whose
 * strategies it defines by cuBLAS's. */
cublasStatus_t
cublasSetEmulationStrategy(cublasHandle_t handle,
                           cublasEmulationStrategy_t emulationStrategy)
{
    int v = (int)emulationStrategy;
    cublasStatus_t st =
        begin_setting(handle, v >= CUBLAS_EMULATION_STRATEGY_DEFAULT &&
                                  v <= CUBLAS_EMULATION_STRATEGY_EAGER,
                      "cublasSetEmulationStrategy");

    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    handle->emulation_strategy = emulationStrategy;
    pthread_mutex_unlock(&handle->lock);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasGetEmulationStrategy(cublasHandle_t handle,
                           cublasEmulationStrategy_t *emulationStrategy)
{
    cublasStatus_t st = begin_setting(handle, emulationStrategy != NULL,
                                      "cublasGetEmulationStrategy");

    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    *emulationStrategy = handle->emulation_strategy;
    pthread_mutex_unlock(&handle->lock);
    return CUBLAS_STATUS_SUCCESS;
}

/* cuBLAS API Reference, cublasSetSmCountTarget: "When set to 0, the
 * library returns to its default behavior. The input value should not
 * exceed the device's multiprocessor count ... Negative values are not
 * accepted", INVALID_VALUE for "the value of smCountTarget outside of the
 * allowed range". The emulated routines run as before; the target is the
 * handle's, for cublasGetSmCountTarget and the call log. */
cublasStatus_t
cublasSetSmCountTarget(cublasHandle_t handle, int smCountTarget)
{
    int ok = smCountTarget >= 0 && smCountTarget <= emu_gpu()->sm_count;
    cublasStatus_t st = begin_setting(handle, ok, "cublasSetSmCountTarget");

    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    handle->sm_count_target = smCountTarget;
    pthread_mutex_unlock(&handle->lock);
    return CUBLAS_STATUS_SUCCESS;
}

/* "obtains the value previously programmed to the library handle";
 * INVALID_VALUE when smCountTarget is NULL. */
cublasStatus_t
cublasGetSmCountTarget(cublasHandle_t handle, int *smCountTarget)
{
    cublasStatus_t st = begin_setting(handle, smCountTarget != NULL,
                                      "cublasGetSmCountTarget");

    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    *smCountTarget = handle->sm_count_target;
    pthread_mutex_unlock(&handle->lock);
    return CUBLAS_STATUS_SUCCESS;
}

/* The library wants a workspace aligned to 256 bytes; the emulated
 * routines need none, so it is only remembered. */
cublasStatus_t
cublasSetWorkspace_v2(cublasHandle_t handle, void *workspace,
                      size_t workspaceSizeInBytes)
{
    int ok = ((uintptr_t)workspace & 255u) == 0;
    cublasStatus_t st = begin_setting(handle, ok, "cublasSetWorkspace_v2");

    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    handle->workspace = workspace;
    handle->workspace_size = workspaceSizeInBytes;
    pthread_mutex_unlock(&handle->lock);
    return CUBLAS_STATUS_SUCCESS;
}

/* ---- Status names -------------------------------------------------------- */

const char *
cublasGetStatusName(cublasStatus_t status)
{
    return emu_blas_status_name(status);
}

const char *
cublasGetStatusString(cublasStatus_t status)
{
    return emu_blas_status_text(status);
}

/* ---- Matrix and vector copies -------------------------------------------- */

/*
 * The real library checks only signs here (rows, cols < 0; elemSize, lda,
 * ldb <= 0 for matrices; elemSize, incx, incy <= 0 for vectors), returns
 * early for an empty copy, and hands the rest to a strided runtime copy:
 * whatever that refuses (a pitch smaller than a row, a negative count, a
 * pointer outside device memory) comes back as MAPPING_ERROR. Copies run
 * on the stream given, or synchronously on the legacy default stream.
 */

enum copy_dir { TO_DEVICE, TO_HOST };

struct strided_copy {
    enum copy_dir dir;
    const void *src;
    void *dst;
    int64_t width;      /* bytes per row (a column of a matrix) */
    int64_t height;     /* number of rows */
    int64_t src_pitch;  /* bytes between rows */
    int64_t dst_pitch;
};

static int
device_range_ok(const void *p, int64_t pitch, int64_t width, int64_t height)
{
    uint64_t bytes = (uint64_t)(height - 1) * (uint64_t)pitch +
                     (uint64_t)width;

    return emu_dev_at((CUdeviceptr)(uintptr_t)p, (size_t)bytes) != NULL;
}

static cublasStatus_t
run_copy(const struct strided_copy *c, int async, CUstream stream)
{
    CUDA_MEMCPY2D d;
    const void *dev;
    int64_t dev_pitch;

    if (c->height < 0 || c->src_pitch < c->width || c->dst_pitch < c->width)
        return CUBLAS_STATUS_MAPPING_ERROR;
    if (c->src == NULL || c->dst == NULL)
        return CUBLAS_STATUS_MAPPING_ERROR;
    if (emu_runtime_bind(0) != CUDA_SUCCESS)
        return CUBLAS_STATUS_MAPPING_ERROR;
    dev = c->dir == TO_DEVICE ? c->dst : c->src;
    dev_pitch = c->dir == TO_DEVICE ? c->dst_pitch : c->src_pitch;
    if (!device_range_ok(dev, dev_pitch, c->width, c->height))
        return CUBLAS_STATUS_MAPPING_ERROR;

    memset(&d, 0, sizeof(d));
    if (c->dir == TO_DEVICE) {
        d.srcMemoryType = CU_MEMORYTYPE_HOST;
        d.srcHost = c->src;
        d.dstMemoryType = CU_MEMORYTYPE_DEVICE;
        d.dstDevice = (CUdeviceptr)(uintptr_t)c->dst;
    } else {
        d.srcMemoryType = CU_MEMORYTYPE_DEVICE;
        d.srcDevice = (CUdeviceptr)(uintptr_t)c->src;
        d.dstMemoryType = CU_MEMORYTYPE_HOST;
        d.dstHost = c->dst;
    }
    d.srcPitch = (size_t)c->src_pitch;
    d.dstPitch = (size_t)c->dst_pitch;
    d.WidthInBytes = (size_t)c->width;
    d.Height = (size_t)c->height;
    if (async ? cuMemcpy2DAsync(&d, stream) : cuMemcpy2D(&d))
        return CUBLAS_STATUS_MAPPING_ERROR;
    return CUBLAS_STATUS_SUCCESS;
}

static cublasStatus_t
copy_matrix(const char *name, enum copy_dir dir, int rows, int cols,
            int elem_size, const void *a, int lda, void *b, int ldb,
            int async, CUstream stream)
{
    struct strided_copy c;
    int fault;

    if (rows < 0 || cols < 0 || elem_size <= 0 || lda <= 0 || ldb <= 0)
        return CUBLAS_STATUS_INVALID_VALUE;
    fault = emu_fault(name, CUBLAS_STATUS_EXECUTION_FAILED);
    if (fault != 0)
        return (cublasStatus_t)fault;
    if (rows == 0 || cols == 0)
        return CUBLAS_STATUS_SUCCESS;
    c.dir = dir;
    c.src = a;
    c.dst = b;
    c.width = (int64_t)rows * elem_size;
    c.height = cols;
    c.src_pitch = (int64_t)lda * elem_size;
    c.dst_pitch = (int64_t)ldb * elem_size;
    return run_copy(&c, async, stream);
}

static cublasStatus_t
copy_vector(const char *name, enum copy_dir dir, int n, int elem_size,
            const void *x, int incx, void *y, int incy, int async,
            CUstream stream)
{
    struct strided_copy c;
    int fault;

    if (elem_size <= 0 || incx <= 0 || incy <= 0)
        return CUBLAS_STATUS_INVALID_VALUE;
    fault = emu_fault(name, CUBLAS_STATUS_EXECUTION_FAILED);
    if (fault != 0)
        return (cublasStatus_t)fault;
    if (n == 0)
        return CUBLAS_STATUS_SUCCESS;
    c.dir = dir;
    c.src = x;
    c.dst = y;
    c.width = elem_size;
    c.height = n;
    c.src_pitch = (int64_t)incx * elem_size;
    c.dst_pitch = (int64_t)incy * elem_size;
    return run_copy(&c, async, stream);
}

cublasStatus_t
cublasSetMatrix(int rows, int cols, int elemSize, const void *A, int lda,
                void *B, int ldb)
{
    return copy_matrix("cublasSetMatrix", TO_DEVICE, rows, cols, elemSize,
                       A, lda, B, ldb, 0, NULL);
}

cublasStatus_t
cublasGetMatrix(int rows, int cols, int elemSize, const void *A, int lda,
                void *B, int ldb)
{
    return copy_matrix("cublasGetMatrix", TO_HOST, rows, cols, elemSize,
                       A, lda, B, ldb, 0, NULL);
}

cublasStatus_t
cublasSetMatrixAsync(int rows, int cols, int elemSize, const void *A,
                     int lda, void *B, int ldb, cudaStream_t stream)
{
    return copy_matrix("cublasSetMatrixAsync", TO_DEVICE, rows, cols,
                       elemSize, A, lda, B, ldb, 1, stream);
}

cublasStatus_t
cublasGetMatrixAsync(int rows, int cols, int elemSize, const void *A,
                     int lda, void *B, int ldb, cudaStream_t stream)
{
    return copy_matrix("cublasGetMatrixAsync", TO_HOST, rows, cols,
                       elemSize, A, lda, B, ldb, 1, stream);
}

cublasStatus_t
cublasSetVector(int n, int elemSize, const void *x, int incx,
                void *devicePtr, int incy)
{
    return copy_vector("cublasSetVector", TO_DEVICE, n, elemSize, x, incx,
                       devicePtr, incy, 0, NULL);
}

cublasStatus_t
cublasGetVector(int n, int elemSize, const void *x, int incx, void *y,
                int incy)
{
    return copy_vector("cublasGetVector", TO_HOST, n, elemSize, x, incx, y,
                       incy, 0, NULL);
}

cublasStatus_t
cublasSetVectorAsync(int n, int elemSize, const void *hostPtr, int incx,
                     void *devicePtr, int incy, cudaStream_t stream)
{
    return copy_vector("cublasSetVectorAsync", TO_DEVICE, n, elemSize,
                       hostPtr, incx, devicePtr, incy, 1, stream);
}

cublasStatus_t
cublasGetVectorAsync(int n, int elemSize, const void *devicePtr, int incx,
                     void *hostPtr, int incy, cudaStream_t stream)
{
    return copy_vector("cublasGetVectorAsync", TO_HOST, n, elemSize,
                       devicePtr, incx, hostPtr, incy, 1, stream);
}
