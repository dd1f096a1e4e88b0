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

/* The parameter lists that the counted GEMMs of one form share, for
 * elements of type T (void for __half, which C does not declare: the
 * pointers are what the ABI passes) and sizes of type I. */
#define AMP_GEMM_PARAMS(I, T)                                                \
    (cublasHandle_t handle, cublasOperation_t transa,                        \
     cublasOperation_t transb, I m, I n, I k, const T *alpha, const T *A,    \
     I lda, const T *B, I ldb, const T *beta, T *C, I ldc)
#define AMP_GEMM_BATCHED_PARAMS(I, T)                                        \
    (cublasHandle_t handle, cublasOperation_t transa,                        \
     cublasOperation_t transb, I m, I n, I k, const T *alpha,                \
     const T *const Aarray[], I lda, const T *const Barray[], I ldb,         \
     const T *beta, T *const Carray[], I ldc, I batchCount)
#define AMP_GEMM_STRIDED_PARAMS(I, T)                                        \
    (cublasHandle_t handle, cublasOperation_t transa,                        \
     cublasOperation_t transb, I m, I n, I k, const T *alpha, const T *A,    \
     I lda, long long int strideA, const T *B, I ldb, long long int strideB, \
     const T *beta, T *C, I ldc, long long int strideC, I batchCount)
#define AMP_GEMM_GROUPED_PARAMS(I, T)                                        \
    (cublasHandle_t handle, const cublasOperation_t transa_array[],          \
     const cublasOperation_t transb_array[], const I m_array[],              \
     const I n_array[], const I k_array[], const T alpha_array[],            \
     const T *const Aarray[], const I lda_array[], const T *const Barray[],  \
     const I ldb_array[], const T beta_array[], T *const Carray[],           \
     const I ldc_array[], I group_count, const I group_size[])
#define AMP_CGEMM_EX_PARAMS(I)                                               \
    (cublasHandle_t handle, cublasOperation_t transa,                        \
     cublasOperation_t transb, I m, I n, I k, const cuComplex *alpha,        \
     const void *A, cudaDataType Atype, I lda, const void *B,                \
     cudaDataType Btype, I ldb, const cuComplex *beta, void *C,              \
     cudaDataType Ctype, I ldc)

/* Hooked: exported by libampshim.so, checked by the ABI test. The GEMMs
 * the shim converts, then those it only counts. */
#define AMP_CUBLAS_HOOKED(X) AMP_CUBLAS_CONVERTED(X) AMP_CUBLAS_COUNTED(X)

/* Every way an FP32 program asks cuBLAS for a GEMM through cublas_v2.h
 * (GemmEx and its twins also take other types: those are counted). */
#define AMP_CUBLAS_CONVERTED(X)                                              \
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

/* Counted only: the GEMMs of cublas_v2.h in other precisions (FP64,
 * complex, FP16), passed through unchanged and counted with their FLOPs
 * for the coverage meter. */
#define AMP_CUBLAS_COUNTED(X)                                                \
    X(cublasStatus_t, cublasDgemm_v2, AMP_GEMM_PARAMS(int, double))          \
    X(cublasStatus_t, cublasDgemm_v2_64, AMP_GEMM_PARAMS(int64_t, double))   \
    X(cublasStatus_t, cublasDgemmBatched, AMP_GEMM_BATCHED_PARAMS(int, double))\
    X(cublasStatus_t, cublasDgemmBatched_64, AMP_GEMM_BATCHED_PARAMS(int64_t, double))\
    X(cublasStatus_t, cublasDgemmStridedBatched, AMP_GEMM_STRIDED_PARAMS(int, double))\
    X(cublasStatus_t, cublasDgemmStridedBatched_64, AMP_GEMM_STRIDED_PARAMS(int64_t, double))\
    X(cublasStatus_t, cublasDgemmGroupedBatched, AMP_GEMM_GROUPED_PARAMS(int, double))\
    X(cublasStatus_t, cublasDgemmGroupedBatched_64, AMP_GEMM_GROUPED_PARAMS(int64_t, double))\
    X(cublasStatus_t, cublasCgemm_v2, AMP_GEMM_PARAMS(int, cuComplex))       \
    X(cublasStatus_t, cublasCgemm_v2_64, AMP_GEMM_PARAMS(int64_t, cuComplex))\
    X(cublasStatus_t, cublasCgemm3m, AMP_GEMM_PARAMS(int, cuComplex))        \
    X(cublasStatus_t, cublasCgemm3m_64, AMP_GEMM_PARAMS(int64_t, cuComplex)) \
    X(cublasStatus_t, cublasCgemmBatched, AMP_GEMM_BATCHED_PARAMS(int, cuComplex))\
    X(cublasStatus_t, cublasCgemmBatched_64, AMP_GEMM_BATCHED_PARAMS(int64_t, cuComplex))\
    X(cublasStatus_t, cublasCgemm3mBatched, AMP_GEMM_BATCHED_PARAMS(int, cuComplex))\
    X(cublasStatus_t, cublasCgemm3mBatched_64, AMP_GEMM_BATCHED_PARAMS(int64_t, cuComplex))\
    X(cublasStatus_t, cublasCgemmStridedBatched, AMP_GEMM_STRIDED_PARAMS(int, cuComplex))\
    X(cublasStatus_t, cublasCgemmStridedBatched_64, AMP_GEMM_STRIDED_PARAMS(int64_t, cuComplex))\
    X(cublasStatus_t, cublasCgemm3mStridedBatched, AMP_GEMM_STRIDED_PARAMS(int, cuComplex))\
    X(cublasStatus_t, cublasCgemm3mStridedBatched_64, AMP_GEMM_STRIDED_PARAMS(int64_t, cuComplex))\
    X(cublasStatus_t, cublasCgemmEx, AMP_CGEMM_EX_PARAMS(int))               \
    X(cublasStatus_t, cublasCgemmEx_64, AMP_CGEMM_EX_PARAMS(int64_t))        \
    X(cublasStatus_t, cublasCgemm3mEx, AMP_CGEMM_EX_PARAMS(int))             \
    X(cublasStatus_t, cublasCgemm3mEx_64, AMP_CGEMM_EX_PARAMS(int64_t))      \
    X(cublasStatus_t, cublasZgemm_v2, AMP_GEMM_PARAMS(int, cuDoubleComplex)) \
    X(cublasStatus_t, cublasZgemm_v2_64, AMP_GEMM_PARAMS(int64_t, cuDoubleComplex))\
    X(cublasStatus_t, cublasZgemm3m, AMP_GEMM_PARAMS(int, cuDoubleComplex))  \
    X(cublasStatus_t, cublasZgemm3m_64, AMP_GEMM_PARAMS(int64_t, cuDoubleComplex))\
    X(cublasStatus_t, cublasZgemmBatched, AMP_GEMM_BATCHED_PARAMS(int, cuDoubleComplex))\
    X(cublasStatus_t, cublasZgemmBatched_64, AMP_GEMM_BATCHED_PARAMS(int64_t, cuDoubleComplex))\
    X(cublasStatus_t, cublasZgemmStridedBatched, AMP_GEMM_STRIDED_PARAMS(int, cuDoubleComplex))\
    X(cublasStatus_t, cublasZgemmStridedBatched_64, AMP_GEMM_STRIDED_PARAMS(int64_t, cuDoubleComplex))\
    X(cublasStatus_t, cublasHgemm, AMP_GEMM_PARAMS(int, void))               \
    X(cublasStatus_t, cublasHgemm_64, AMP_GEMM_PARAMS(int64_t, void))        \
    X(cublasStatus_t, cublasHgemmBatched, AMP_GEMM_BATCHED_PARAMS(int, void))\
    X(cublasStatus_t, cublasHgemmBatched_64, AMP_GEMM_BATCHED_PARAMS(int64_t, void))\
    X(cublasStatus_t, cublasHgemmStridedBatched, AMP_GEMM_STRIDED_PARAMS(int, void))\
    X(cublasStatus_t, cublasHgemmStridedBatched_64, AMP_GEMM_STRIDED_PARAMS(int64_t, void))

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
      (cublasHandle_t handle, cublasMath_t * mode))                         \
    X(cublasStatus_t, cublasGetSmCountTarget,                                \
      (cublasHandle_t handle, int *smCountTarget))                           \
    X(cublasStatus_t, cublasSetSmCountTarget,                                \
      (cublasHandle_t handle, int smCountTarget))                            \
    X(cublasStatus_t, cublasSetEmulationStrategy,                            \
      (cublasHandle_t handle, cublasEmulationStrategy_t emulationStrategy))

#define AMP_CUBLAS_SYMBOLS(X) AMP_CUBLAS_HOOKED(X) AMP_CUBLAS_CALLED(X)

#endif
