/* The status names and sentences of the emulated cuBLAS and cuBLASLt, as
 * the real libraries give them (the same strings are in both). */
#include <stddef.h>

#include "cublas_status.h"

struct status_text {
    cublasStatus_t status;
    const char *name;
    const char *text;
};

static const struct status_text status_texts[] = {
    { CUBLAS_STATUS_SUCCESS, "CUBLAS_STATUS_SUCCESS", "success" },
    { CUBLAS_STATUS_NOT_INITIALIZED, "CUBLAS_STATUS_NOT_INITIALIZED",
      "the library was not initialized" },
    { CUBLAS_STATUS_ALLOC_FAILED, "CUBLAS_STATUS_ALLOC_FAILED",
      "the resource allocation failed" },
    { CUBLAS_STATUS_INVALID_VALUE, "CUBLAS_STATUS_INVALID_VALUE",
      "an unsupported value or parameter was passed to the function" },
    { CUBLAS_STATUS_ARCH_MISMATCH, "CUBLAS_STATUS_ARCH_MISMATCH",
      "the function requires an architectural feature absent from the "
      "device" },
    { CUBLAS_STATUS_MAPPING_ERROR, "CUBLAS_STATUS_MAPPING_ERROR",
      "an access to GPU memory space failed" },
    { CUBLAS_STATUS_EXECUTION_FAILED, "CUBLAS_STATUS_EXECUTION_FAILED",
      "the function failed to launch on the GPU" },
    { CUBLAS_STATUS_INTERNAL_ERROR, "CUBLAS_STATUS_INTERNAL_ERROR",
      "an internal operation failed" },
    { CUBLAS_STATUS_NOT_SUPPORTED, "CUBLAS_STATUS_NOT_SUPPORTED",
      "the requested functionality is not supported" },
    { CUBLAS_STATUS_LICENSE_ERROR, "CUBLAS_STATUS_LICENSE_ERROR",
      "the license check failed" },
};

static const struct status_text *
find_status(cublasStatus_t status)
{
    for (size_t i = 0; i < sizeof(status_texts) / sizeof(status_texts[0]);
         i++) {
        if (status_texts[i].status == status)
            return &status_texts[i];
    }
    return NULL;
}

const char *
emu_blas_status_name(cublasStatus_t status)
{
    const struct status_text *t = find_status(status);

    return t != NULL ? t->name : "unrecognized status";
}

const char *
emu_blas_status_text(cublasStatus_t status)
{
    const struct status_text *t = find_status(status);

    return t != NULL ? t->text : "unrecognized status";
}
