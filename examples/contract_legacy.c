/* contract_corpus's legacy cublasSgemm (cublas.h: no handle, the status
 * left for cublasGetError), apart because cublas.h and cublas_v2.h do not
 * mix in one file. */
#include <cublas.h>

#include "contract_corpus.h"

int
cc_legacy_init(void)
{
    return cublasInit() == CUBLAS_STATUS_SUCCESS ? 0 : -1;
}

int
cc_legacy_sgemm(char transa, char transb, int m, int n, int k, float alpha,
                const float *a, int lda, const float *b, int ldb, float beta,
                float *c, int ldc)
{
    cublasSgemm(transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return (int)cublasGetError();
}

void
cc_legacy_shutdown(void)
{
    cublasShutdown();
}
