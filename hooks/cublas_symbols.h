/* The one list of cuBLAS symbols the shim knows: the ones it hooks (and
 * exports) and the ones it only calls. Each X(ret, name, params) names the
 * exported symbol, never the header macro. */
#ifndef AMP_CUBLAS_SYMBOLS_H
#define AMP_CUBLAS_SYMBOLS_H

/* A file that only needs the names (the ABI and preload tests, which also
 * read the legacy list, and cublas.h and cublas_v2.h refuse to meet)
 * defines AMP_SYMBOL_NAMES_ONLY: the prototypes are then never expanded. */
#ifndef AMP_SYMBOL_NAMES_ONLY
#include <cublas_v2.h>

#include <stdint.h>
#endif

/* Hooked: exported by libampshim.so, checked by the ABI test. Every way an
 * FP32 program asks cuBLAS for a GEMM through cublas_v2.h. */
#define AMP_CUBLAS_HOOKED(X)                                                 \
    X(cublasStatus_t, cublasSgemm_v2,                                        \
      (cublasHandle_t handle, cublasOperation_t transa,                      \
       cublasOperation_t transb, int m, int n, int k, const float *alpha,    \
       const float *A, int lda, const float *B, int ldb, const float *beta,  \
       float *C, int ldc))                                                   \
    X(cublasStatus_t, cublasSgemm_v2_64,                                     \
      (cublasHandle_t handle, cublasOperation_t transa,                      \
       cublasOperation_t transb, int64_t m, int64_t n, int64_t k,            \
       const float *alpha, const float *A, int64_t lda, const float *B,      \
       int64_t ldb, const float *beta, float *C, int64_t ldc))               \
    X(cublasStatus_t, cublasSgemmBatched,                                    \
      (cublasHandle_t handle, cublasOperation_t transa,                      \
       cublasOperation_t transb, int m, int n, int k, const float *alpha,    \
       const float *const Aarray[], int lda, const float *const Barray[],    \
       int ldb, const float *beta, float *const Carray[], int ldc,           \
       int batchCount))                                                      \
    X(cublasStatus_t, cublasSgemmBatched_64,                                 \
      (cublasHandle_t handle, cublasOperation_t transa,                      \
       cublasOperation_t transb, int64_t m, int64_t n, int64_t k,            \
       const float *alpha, const float *const Aarray[], int64_t lda,         \
       const float *const Barray[], int64_t ldb, const float *beta,          \
       float *const Carray[], int64_t ldc, int64_t batchCount))              \
    X(cublasStatus_t, cublasSgemmStridedBatched,                             \
      (cublasHandle_t handle, cublasOperation_t transa,                      \
       cublasOperation_t transb, int m, int n, int k, const float *alpha,    \
       const float *A, int lda, long long int strideA, const float *B,       \
       int ldb, long long int strideB, const float *beta, float *C, int ldc, \
       long long int strideC, int batchCount))                               \
    X(cublasStatus_t, cublasSgemmStridedBatched_64,                          \
      (cublasHandle_t handle, cublasOperation_t transa,                      \
       cublasOperation_t transb, int64_t m, int64_t n, int64_t k,            \
       const float *alpha, const float *A, int64_t lda,                      \
       long long int strideA, const float *B, int64_t ldb,                   \
       long long int strideB, const float *beta, float *C, int64_t ldc,      \
       long long int strideC, int64_t batchCount))                           \
    X(cublasStatus_t, cublasSgemmGroupedBatched,                             \
      (cublasHandle_t handle, const cublasOperation_t transa_array[],        \
       const cublasOperation_t transb_array[], const int m_array[],          \
       const int n_array[], const int k_array[], const float alpha_array[],  \
       const float *const Aarray[], const int lda_array[],                   \
       const float *const Barray[], const int ldb_array[],                   \
       const float beta_array[], float *const Carray[],                      \
       const int ldc_array[], int group_count, const int group_size[]))      \
    X(cublasStatus_t, cublasSgemmGroupedBatched_64,                          \
      (cublasHandle_t handle, const cublasOperation_t transa_array[],        \
       const cublasOperation_t transb_array[], const int64_t m_array[],      \
       const int64_t n_array[], const int64_t k_array[],                     \
       const float alpha_array[], const float *const Aarray[],               \
       const int64_t lda_array[], const float *const Barray[],               \
       const int64_t ldb_array[], const float beta_array[],                  \
       float *const Carray[], const int64_t ldc_array[],                     \
       int64_t group_count, const int64_t group_size[]))                     \
    X(cublasStatus_t, cublasSgemmEx,                                         \
      (cublasHandle_t handle, cublasOperation_t transa,                      \
       cublasOperation_t transb, int m, int n, int k, const float *alpha,    \
       const void *A, cudaDataType Atype, int lda, const void *B,            \
       cudaDataType Btype, int ldb, const float *beta, void *C,              \
       cudaDataType Ctype, int ldc))                                         \
    X(cublasStatus_t, cublasSgemmEx_64,                                      \
      (cublasHandle_t handle, cublasOperation_t transa,                      \
       cublasOperation_t transb, int64_t m, int64_t n, int64_t k,            \
       const float *alpha, const void *A, cudaDataType Atype, int64_t lda,   \
       const void *B, cudaDataType Btype, int64_t ldb, const float *beta,    \
       void *C, cudaDataType Ctype, int64_t ldc))                            \
    X(cublasStatus_t, cublasGemmEx,                                          \
      (cublasHandle_t handle, cublasOperation_t transa,                      \
       cublasOperation_t transb, int m, int n, int k, const void *alpha,     \
       const void *A, cudaDataType Atype, int lda, const void *B,            \
       cudaDataType Btype, int ldb, const void *beta, void *C,               \
       cudaDataType Ctype, int ldc, cublasComputeType_t computeType,         \
       cublasGemmAlgo_t algo))                                               \
    X(cublasStatus_t, cublasGemmEx_64,                                       \
      (cublasHandle_t handle, cublasOperation_t transa,                      \
       cublasOperation_t transb, int64_t m, int64_t n, int64_t k,            \
       const void *alpha, const void *A, cudaDataType Atype, int64_t lda,    \
       const void *B, cudaDataType Btype, int64_t ldb, const void *beta,     \
       void *C, cudaDataType Ctype, int64_t ldc,                             \
       cublasComputeType_t computeType, cublasGemmAlgo_t algo))              \
    X(cublasStatus_t, cublasGemmBatchedEx,                                   \
      (cublasHandle_t handle, cublasOperation_t transa,                      \
       cublasOperation_t transb, int m, int n, int k, const void *alpha,     \
       const void *const Aarray[], cudaDataType Atype, int lda,              \
       const void *const Barray[], cudaDataType Btype, int ldb,              \
       const void *beta, void *const Carray[], cudaDataType Ctype, int ldc,  \
       int batchCount, cublasComputeType_t computeType,                      \
       cublasGemmAlgo_t algo))                                               \
    X(cublasStatus_t, cublasGemmBatchedEx_64,                                \
      (cublasHandle_t handle, cublasOperation_t transa,                      \
       cublasOperation_t transb, int64_t m, int64_t n, int64_t k,            \
       const void *alpha, const void *const Aarray[], cudaDataType Atype,    \
       int64_t lda, const void *const Barray[], cudaDataType Btype,          \
       int64_t ldb, const void *beta, void *const Carray[],                  \
       cudaDataType Ctype, int64_t ldc, int64_t batchCount,                  \
       cublasComputeType_t computeType, cublasGemmAlgo_t algo))              \
    X(cublasStatus_t, cublasGemmStridedBatchedEx,                            \
      (cublasHandle_t handle, cublasOperation_t transa,                      \
       cublasOperation_t transb, int m, int n, int k, const void *alpha,     \
       const void *A, cudaDataType Atype, int lda, long long int strideA,    \
       const void *B, cudaDataType Btype, int ldb, long long int strideB,    \
       const void *beta, void *C, cudaDataType Ctype, int ldc,               \
       long long int strideC, int batchCount,                                \
       cublasComputeType_t computeType, cublasGemmAlgo_t algo))              \
    X(cublasStatus_t, cublasGemmStridedBatchedEx_64,                         \
      (cublasHandle_t handle, cublasOperation_t transa,                      \
       cublasOperation_t transb, int64_t m, int64_t n, int64_t k,            \
       const void *alpha, const void *A, cudaDataType Atype, int64_t lda,    \
       long long int strideA, const void *B, cudaDataType Btype,             \
       int64_t ldb, long long int strideB, const void *beta, void *C,        \
       cudaDataType Ctype, int64_t ldc, long long int strideC,               \
       int64_t batchCount, cublasComputeType_t computeType,                  \
       cublasGemmAlgo_t algo))                                               \
    X(cublasStatus_t, cublasGemmGroupedBatchedEx,                            \
      (cublasHandle_t handle, const cublasOperation_t transa_array[],        \
       const cublasOperation_t transb_array[], const int m_array[],          \
       const int n_array[], const int k_array[], const void *alpha_array,    \
       const void *const Aarray[], cudaDataType_t Atype,                     \
       const int lda_array[], const void *const Barray[],                    \
       cudaDataType_t Btype, const int ldb_array[], const void *beta_array,  \
       void *const Carray[], cudaDataType_t Ctype, const int ldc_array[],    \
       int group_count, const int group_size[],                              \
       cublasComputeType_t computeType))                                     \
    X(cublasStatus_t, cublasGemmGroupedBatchedEx_64,                         \
      (cublasHandle_t handle, const cublasOperation_t transa_array[],        \
       const cublasOperation_t transb_array[], const int64_t m_array[],      \
       const int64_t n_array[], const int64_t k_array[],                     \
       const void *alpha_array, const void *const Aarray[],                  \
       cudaDataType_t Atype, const int64_t lda_array[],                      \
       const void *const Barray[], cudaDataType_t Btype,                     \
       const int64_t ldb_array[], const void *beta_array,                    \
       void *const Carray[], cudaDataType_t Ctype,                           \
       const int64_t ldc_array[], int64_t group_count,                       \
       const int64_t group_size[], cublasComputeType_t computeType))

/* Called only: the real library's functions the converted path uses (it
 * also calls the real cublasGemmEx, cublasGemmStridedBatchedEx and
 * cublasGemmBatchedEx of the hooked list, and a failed group of a grouped
 * call falls back to the real cublasSgemmBatched_64 or
 * cublasGemmBatchedEx_64). */
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
      (cublasHandle_t handle, cublasMath_t * mode))

#define AMP_CUBLAS_SYMBOLS(X) AMP_CUBLAS_HOOKED(X) AMP_CUBLAS_CALLED(X)

#endif
