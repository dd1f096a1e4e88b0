/* The one list of legacy cuBLAS symbols (cublas.h: no handle, an implicit
 * context, errors through cublasGetError) that the shim knows. Each
 * X(ret, name, params) names the exported symbol. */
#ifndef AMP_CUBLAS_LEGACY_SYMBOLS_H
#define AMP_CUBLAS_LEGACY_SYMBOLS_H

/* See cublas_symbols.h: names-only users never expand the prototypes. */
#ifndef AMP_SYMBOL_NAMES_ONLY
#include <cublas.h>
#endif

/* Hooked: exported by libampshim.so, checked by the ABI test. The legacy
 * SGEMM, the call that sets the stream it runs on, and the two that make
 * its implicit context usable (a GEMM before cublasInit is an error). */
#define AMP_CUBLAS_LEGACY_HOOKED(X)                                          \
    X(void, cublasSgemm,                                                     \
      (char transa, char transb, int m, int n, int k, float alpha,           \
       const float *A, int lda, const float *B, int ldb, float beta,         \
       float *C, int ldc))                                                   \
    X(cublasStatus, cublasSetKernelStream, (cudaStream_t stream))           \
    X(cublasStatus, cublasInit, (void))                                      \
    X(cublasStatus, cublasShutdown, (void))

/* Called only: none; the converted path uses the v2 functions of
 * cublas_symbols.h on the shim's own handle. */
#define AMP_CUBLAS_LEGACY_CALLED(X)

#define AMP_CUBLAS_LEGACY_SYMBOLS(X)                                         \
    AMP_CUBLAS_LEGACY_HOOKED(X) AMP_CUBLAS_LEGACY_CALLED(X)

#endif
