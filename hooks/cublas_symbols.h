/* The one list of cuBLAS symbols the shim knows: the ones it hooks (and
 * exports) and the ones it only calls. Each X(ret, name, params) names the
 * exported symbol, never the header macro. */
#ifndef AMP_CUBLAS_SYMBOLS_H
#define AMP_CUBLAS_SYMBOLS_H

#include <cublas_v2.h>

/* Hooked: exported by libampshim.so, checked by the ABI test. */
#define AMP_CUBLAS_HOOKED(X)                                                 \
    X(cublasStatus_t, cublasSgemm_v2,                                        \
      (cublasHandle_t handle, cublasOperation_t transa,                      \
       cublasOperation_t transb, int m, int n, int k, const float *alpha,    \
       const float *A, int lda, const float *B, int ldb, const float *beta,  \
       float *C, int ldc))

/* Called only: the real library's functions the converted path uses. */
#define AMP_CUBLAS_CALLED(X)                                                 \
    X(cublasStatus_t, cublasCreate_v2, (cublasHandle_t * handle))            \
    X(cublasStatus_t, cublasDestroy_v2, (cublasHandle_t handle))             \
    X(cublasStatus_t, cublasSetStream_v2,                                    \
      (cublasHandle_t handle, cudaStream_t stream))                          \
    X(cublasStatus_t, cublasGetStream_v2,                                    \
      (cublasHandle_t handle, cudaStream_t * stream))                        \
    X(cublasStatus_t, cublasSetPointerMode_v2,                               \
      (cublasHandle_t handle, cublasPointerMode_t mode))                     \
    X(cublasStatus_t, cublasGetPointerMode_v2,                               \
      (cublasHandle_t handle, cublasPointerMode_t * mode))                   \
    X(cublasStatus_t, cublasGetMathMode,                                     \
      (cublasHandle_t handle, cublasMath_t * mode))                          \
    X(cublasStatus_t, cublasGemmEx,                                          \
      (cublasHandle_t handle, cublasOperation_t transa,                      \
       cublasOperation_t transb, int m, int n, int k, const void *alpha,     \
       const void *A, cudaDataType Atype, int lda, const void *B,            \
       cudaDataType Btype, int ldb, const void *beta, void *C,               \
       cudaDataType Ctype, int ldc, cublasComputeType_t computeType,         \
       cublasGemmAlgo_t algo))

#define AMP_CUBLAS_SYMBOLS(X) AMP_CUBLAS_HOOKED(X) AMP_CUBLAS_CALLED(X)

#endif
