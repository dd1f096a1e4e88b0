/* The one list of cuBLASLt symbols the shim knows: the ones it hooks (and
 * exports) and the ones it only calls. Each X(ret, name, params) names the
 * exported symbol, never the header's inline wrapper. */
#ifndef AMP_CUBLASLT_SYMBOLS_H
#define AMP_CUBLASLT_SYMBOLS_H

#ifndef AMP_SYMBOL_NAMES_ONLY
#include <cublasLt.h>

#include <stddef.h>
#include <stdint.h>
#endif

/* Hooked: exported by libampshim.so, checked by the ABI test. */
#define AMP_CUBLASLT_HOOKED(X)                                               \
    X(cublasStatus_t, cublasLtMatmul,                                        \
      (cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc,       \
       const void *alpha, const void *A, cublasLtMatrixLayout_t Adesc,       \
       const void *B, cublasLtMatrixLayout_t Bdesc, const void *beta,        \
       const void *C, cublasLtMatrixLayout_t Cdesc, void *D,                 \
       cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t *algo,       \
       void *workspace, size_t workspaceSizeInBytes, cudaStream_t stream))

/* Called, never hooked: reading the program's descriptors, and the shim's
 * own handle, descriptors (initialised in its own memory through the
 * functions behind the header's Init wrappers) and heuristics. */
#define AMP_CUBLASLT_CALLED(X)                                               \
    X(cublasStatus_t, cublasLtCreate, (cublasLtHandle_t * lightHandle))     \
    X(cublasStatus_t, cublasLtDestroy, (cublasLtHandle_t lightHandle))       \
    X(cublasStatus_t, cublasLtMatmulDescGetAttribute,                        \
      (cublasLtMatmulDesc_t matmulDesc, cublasLtMatmulDescAttributes_t attr, \
       void *buf, size_t sizeInBytes, size_t *sizeWritten))                  \
    X(cublasStatus_t, cublasLtMatmulDescSetAttribute,                        \
      (cublasLtMatmulDesc_t matmulDesc, cublasLtMatmulDescAttributes_t attr, \
       const void *buf, size_t sizeInBytes))                                 \
    X(cublasStatus_t, cublasLtMatrixLayoutGetAttribute,                      \
      (cublasLtMatrixLayout_t matLayout,                                     \
       cublasLtMatrixLayoutAttribute_t attr, void *buf, size_t sizeInBytes,  \
       size_t *sizeWritten))                                                 \
    X(cublasStatus_t, cublasLtMatrixLayoutSetAttribute,                      \
      (cublasLtMatrixLayout_t matLayout,                                     \
       cublasLtMatrixLayoutAttribute_t attr, const void *buf,                \
       size_t sizeInBytes))                                                  \
    X(cublasStatus_t, cublasLtMatmulDescInit_internal,                       \
      (cublasLtMatmulDesc_t matmulDesc, size_t size,                         \
       cublasComputeType_t computeType, cudaDataType_t scaleType))           \
    X(cublasStatus_t, cublasLtMatrixLayoutInit_internal,                     \
      (cublasLtMatrixLayout_t matLayout, size_t size, cudaDataType type,     \
       uint64_t rows, uint64_t cols, int64_t ld))                            \
    X(cublasStatus_t, cublasLtMatmulPreferenceInit_internal,                 \
      (cublasLtMatmulPreference_t pref, size_t size))                        \
    X(cublasStatus_t, cublasLtEmulationDescInit_internal,                    \
      (cublasLtEmulationDesc_t emulationDesc, size_t size))                  \
    X(cublasStatus_t, cublasLtEmulationDescSetAttribute,                     \
      (cublasLtEmulationDesc_t emulationDesc,                                \
       cublasLtEmulationDescAttributes_t attr, const void *buf,              \
       size_t sizeInBytes))                                                  \
    X(cublasStatus_t, cublasLtMatmulPreferenceSetAttribute,                  \
      (cublasLtMatmulPreference_t pref,                                      \
       cublasLtMatmulPreferenceAttributes_t attr, const void *buf,           \
       size_t sizeInBytes))                                                  \
    X(cublasStatus_t, cublasLtMatmulAlgoCheck,                               \
      (cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc,     \
       cublasLtMatrixLayout_t Adesc, cublasLtMatrixLayout_t Bdesc,           \
       cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,           \
       const cublasLtMatmulAlgo_t *algo,                                     \
       cublasLtMatmulHeuristicResult_t *result))                             \
    X(cublasStatus_t, cublasLtMatmulAlgoGetHeuristic,                        \
      (cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc,     \
       cublasLtMatrixLayout_t Adesc, cublasLtMatrixLayout_t Bdesc,           \
       cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,           \
       cublasLtMatmulPreference_t preference, int requestedAlgoCount,        \
       cublasLtMatmulHeuristicResult_t heuristicResultsArray[],              \
       int *returnAlgoCount))

#define AMP_CUBLASLT_SYMBOLS(X) AMP_CUBLASLT_HOOKED(X) AMP_CUBLASLT_CALLED(X)

#endif
