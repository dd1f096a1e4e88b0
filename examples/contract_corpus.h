/* contract_corpus's legacy cuBLAS part (contract_legacy.c). */
#ifndef CONTRACT_CORPUS_H
#define CONTRACT_CORPUS_H

/* cublasInit: 0, or -1. */
int cc_legacy_init(void);
/* cublasSgemm, then cublasGetError's status. */
int cc_legacy_sgemm(char transa, char transb, int m, int n, int k,
                    float alpha, const float *a, int lda, const float *b,
                    int ldb, float beta, float *c, int ldc);
void cc_legacy_shutdown(void);

#endif
