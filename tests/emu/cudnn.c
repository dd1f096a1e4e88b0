/* The emulated libcudnn.so.9: handles, streams, versions, status strings
 * and the last-error message. Descriptors are in cudnn_desc.c, the
 * convolutions in cudnn_conv.c, the other operations in cudnn_ops.c. */
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudnn_emu.h"
#include "emu.h"

/* ---- Last error and settings --------------------------------------------- */

static __thread char last_error[256];

cudnnStatus_t
emu_dnn_error(cudnnStatus_t status, const char *fmt, ...)
{
    va_list ap;
    int len;

    len = snprintf(last_error, sizeof(last_error), "%s: ",
                   cudnnGetErrorString(status));
    if (len < 0 || (size_t)len >= sizeof(last_error))
        return status;
    va_start(ap, fmt);
    vsnprintf(last_error + len, sizeof(last_error) - (size_t)len, fmt, ap);
    va_end(ap);
    return status;
}

void
cudnnGetLastErrorString(char *message, size_t max_size)
{
    if (message == NULL || max_size == 0)
        return;
    snprintf(message, max_size, "%s", last_error);
    /* Read once: the next call reports only newer errors. */
    last_error[0] = '\0';
}

/* ---- Handle helpers ------------------------------------------------------ */

static int
handle_valid(cudnnHandle_t handle)
{
    return handle != NULL && handle->magic == EMU_DNN_MAGIC_HANDLE;
}

cudnnStatus_t
emu_dnn_config(cudnnHandle_t handle, struct emu_dnn_config *config)
{
    if (!handle_valid(handle))
        return emu_dnn_error(CUDNN_STATUS_BAD_PARAM, "invalid handle");
    pthread_mutex_lock(&handle->lock);
    config->device = handle->device;
    config->stream = handle->stream;
    pthread_mutex_unlock(&handle->lock);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
emu_dnn_fault(const char *api)
{
    return emu_dnn_fault_partial(api, NULL);
}

cudnnStatus_t
emu_dnn_fault_partial(const char *api, int *partial)
{
    int fault = emu_fault_partial(api, CUDNN_STATUS_EXECUTION_FAILED,
                                  partial);

    if (fault == 0)
        return CUDNN_STATUS_SUCCESS;
    return emu_dnn_error((cudnnStatus_t)fault, "%s: injected fault", api);
}

cudnnStatus_t
emu_dnn_enqueue(const struct emu_dnn_config *config, const struct emu_op *op)
{
    if (emu_runtime_bind(config->device) != CUDA_SUCCESS) {
        if (op->release != NULL)
            op->release(op->arg);
        return emu_dnn_error(CUDNN_STATUS_EXECUTION_FAILED,
                             "%s: no device context", op->name);
    }
    if (emu_enqueue(config->stream, op) != CUDA_SUCCESS)
        return emu_dnn_error(CUDNN_STATUS_EXECUTION_FAILED,
                             "%s: cannot queue on the stream", op->name);
    return CUDNN_STATUS_SUCCESS;
}

/* ---- Handles ------------------------------------------------------------- */

cudnnStatus_t
cudnnCreate(cudnnHandle_t *handle)
{
    struct cudnnContext *ctx;
    cudnnStatus_t st;
    int dev;

    if (handle == NULL)
        return emu_dnn_error(CUDNN_STATUS_BAD_PARAM, "handle is NULL");
    /* A failed creation is the runtime failing to initialise, the status
     * the real library gives without a usable GPU. */
    if (emu_fault("cudnnCreate", CUDNN_STATUS_NOT_INITIALIZED) != 0)
        return emu_dnn_error(CUDNN_STATUS_NOT_INITIALIZED,
                             "cudnnCreate: injected fault");
    dev = emu_current_device();
    if (emu_runtime_bind(dev < 0 ? 0 : dev) != CUDA_SUCCESS ||
        (dev = emu_current_device()) < 0)
        return emu_dnn_error(CUDNN_STATUS_NOT_INITIALIZED,
                             "CUDA initialisation failed");
    /* The real one allocates device memory synchronously, which a running
     * capture may forbid: the device allocation failure's status. */
    if (emu_capture_unsafe_call() != CUDA_SUCCESS) {
        st = CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED;
        return emu_dnn_error(st, "cudnnCreate during a stream capture that "
                             "forbids allocation");
    }
    ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL) {
        st = CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
        return emu_dnn_error(st, "out of host memory");
    }
    pthread_mutex_init(&ctx->lock, NULL);
    ctx->device = dev;
    ctx->stream = NULL;
    ctx->magic = EMU_DNN_MAGIC_HANDLE;
    *handle = ctx;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnDestroy(cudnnHandle_t handle)
{
    if (!handle_valid(handle))
        return emu_dnn_error(CUDNN_STATUS_BAD_PARAM, "invalid handle");
    /* The handle's own resources are freed after its work is done. */
    if (emu_runtime_bind(handle->device) == CUDA_SUCCESS)
        (void)cuCtxSynchronize();
    handle->magic = 0;
    pthread_mutex_destroy(&handle->lock);
    free(handle);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnSetStream(cudnnHandle_t handle, cudaStream_t streamId)
{
    if (!handle_valid(handle))
        return emu_dnn_error(CUDNN_STATUS_BAD_PARAM, "invalid handle");
    pthread_mutex_lock(&handle->lock);
    handle->stream = (CUstream)streamId;
    pthread_mutex_unlock(&handle->lock);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnGetStream(cudnnHandle_t handle, cudaStream_t *streamId)
{
    if (!handle_valid(handle) || streamId == NULL)
        return emu_dnn_error(CUDNN_STATUS_BAD_PARAM,
                             "invalid handle or streamId is NULL");
    pthread_mutex_lock(&handle->lock);
    *streamId = (cudaStream_t)handle->stream;
    pthread_mutex_unlock(&handle->lock);
    return CUDNN_STATUS_SUCCESS;
}

/* ---- Versions ------------------------------------------------------------ */

size_t
cudnnGetVersion(void)
{
    return CUDNN_VERSION;
}

size_t
cudnnGetMaxDeviceVersion(void)
{
    return CUDNN_MAX_DEVICE_VERSION;
}

size_t
cudnnGetCudartVersion(void)
{
    return CUDART_VERSION;
}

cudnnStatus_t
cudnnGetProperty(libraryPropertyType type, int *value)
{
    if (value == NULL)
        return emu_dnn_error(CUDNN_STATUS_BAD_PARAM, "value is NULL");
    switch (type) {
    case MAJOR_VERSION:
        *value = CUDNN_MAJOR;
        return CUDNN_STATUS_SUCCESS;
    case MINOR_VERSION:
        *value = CUDNN_MINOR;
        return CUDNN_STATUS_SUCCESS;
    case PATCH_LEVEL:
        *value = CUDNN_PATCHLEVEL;
        return CUDNN_STATUS_SUCCESS;
    default:
        return emu_dnn_error(CUDNN_STATUS_BAD_PARAM, "unknown property %d",
                             (int)type);
    }
}

/* The sub-libraries are one library here: always consistent. */
cudnnStatus_t
cudnnGraphVersionCheck(void)
{
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnOpsVersionCheck(void)
{
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnCnnVersionCheck(void)
{
    return CUDNN_STATUS_SUCCESS;
}

/* ---- Status names -------------------------------------------------------- */

#define STATUS_NAME(s) { s, #s }

static const struct {
    cudnnStatus_t status;
    const char *name;
} status_names[] = {
    STATUS_NAME(CUDNN_STATUS_SUCCESS),
    STATUS_NAME(CUDNN_STATUS_NOT_INITIALIZED),
    STATUS_NAME(CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH),
    STATUS_NAME(CUDNN_STATUS_SERIALIZATION_VERSION_MISMATCH),
    STATUS_NAME(CUDNN_STATUS_DEPRECATED),
    STATUS_NAME(CUDNN_STATUS_LICENSE_ERROR),
    STATUS_NAME(CUDNN_STATUS_RUNTIME_IN_PROGRESS),
    STATUS_NAME(CUDNN_STATUS_RUNTIME_FP_OVERFLOW),
    STATUS_NAME(CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED),
    STATUS_NAME(CUDNN_STATUS_BAD_PARAM),
    STATUS_NAME(CUDNN_STATUS_BAD_PARAM_NULL_POINTER),
    STATUS_NAME(CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER),
    STATUS_NAME(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED),
    STATUS_NAME(CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND),
    STATUS_NAME(CUDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT),
    STATUS_NAME(CUDNN_STATUS_BAD_PARAM_STREAM_MISMATCH),
    STATUS_NAME(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH),
    STATUS_NAME(CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES),
    STATUS_NAME(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE),
    STATUS_NAME(CUDNN_STATUS_BAD_PARAM_CUDA_GRAPH_MISMATCH),
    STATUS_NAME(CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE),
    STATUS_NAME(CUDNN_STATUS_NOT_SUPPORTED),
    STATUS_NAME(CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN),
    STATUS_NAME(CUDNN_STATUS_NOT_SUPPORTED_SHAPE),
    STATUS_NAME(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE),
    STATUS_NAME(CUDNN_STATUS_NOT_SUPPORTED_LAYOUT),
    STATUS_NAME(CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER),
    STATUS_NAME(CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART),
    STATUS_NAME(CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH),
    STATUS_NAME(CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING),
    STATUS_NAME(CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE),
    STATUS_NAME(CUDNN_STATUS_NOT_SUPPORTED_SHARED_MEMORY_INSUFFICIENT),
    STATUS_NAME(CUDNN_STATUS_NOT_SUPPORTED_PADDING),
    STATUS_NAME(CUDNN_STATUS_NOT_SUPPORTED_BAD_LAUNCH_PARAM),
    STATUS_NAME(CUDNN_STATUS_NOT_SUPPORTED_CUDA_GRAPH_NATIVE_API),
    STATUS_NAME(CUDNN_STATUS_NOT_SUPPORTED_INVALID_DYNAMIC_SHAPE),
    STATUS_NAME(CUDNN_STATUS_INTERNAL_ERROR),
    STATUS_NAME(CUDNN_STATUS_INTERNAL_ERROR_COMPILATION_FAILED),
    STATUS_NAME(CUDNN_STATUS_INTERNAL_ERROR_UNEXPECTED_VALUE),
    STATUS_NAME(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED),
    STATUS_NAME(CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED),
    STATUS_NAME(CUDNN_STATUS_INTERNAL_ERROR_BAD_LAUNCH_PARAM),
    STATUS_NAME(CUDNN_STATUS_INTERNAL_ERROR_TEXTURE_CREATION_FAILED),
    STATUS_NAME(CUDNN_STATUS_EXECUTION_FAILED),
    STATUS_NAME(CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER),
    STATUS_NAME(CUDNN_STATUS_EXECUTION_FAILED_CUBLAS),
    STATUS_NAME(CUDNN_STATUS_EXECUTION_FAILED_CUDART),
    STATUS_NAME(CUDNN_STATUS_EXECUTION_FAILED_CURAND),
    /* Deprecated code without a newer name of the same value. */
    STATUS_NAME(CUDNN_STATUS_INVALID_VALUE),
};

const char *
cudnnGetErrorString(cudnnStatus_t status)
{
    for (size_t i = 0; i < sizeof(status_names) / sizeof(status_names[0]);
         i++) {
        if (status_names[i].status == status)
            return status_names[i].name;
    }
    return "CUDNN_UNKNOWN_STATUS";
}
