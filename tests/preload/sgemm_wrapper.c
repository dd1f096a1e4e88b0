/* A library that is not NVIDIA's and defines cublasSgemm_v2 itself, as a
 * program's own wrapper, a test's mock or another interposer does: its
 * function counts its calls and answers a status no cuBLAS call gives
 * (SGEMM_WRAPPER_STATUS), touching nothing. A lookup on its handle must
 * find this function, the shim preloaded or not. */
#include <cublas_v2.h>

#define SGEMM_WRAPPER_STATUS 77

int sgemm_wrapper_calls(void);

static int calls;

cublasStatus_t
cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa,
               cublasOperation_t transb, int m, int n, int k,
               const float *alpha, const float *a, int lda, const float *b,
               int ldb, const float *beta, float *c, int ldc)
{
    (void)handle, (void)transa, (void)transb, (void)m, (void)n, (void)k;
    (void)alpha, (void)a, (void)lda, (void)b, (void)ldb, (void)beta;
    (void)c, (void)ldc;
    __atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);
    return (cublasStatus_t)SGEMM_WRAPPER_STATUS;
}

/* How many times its cublasSgemm_v2 ran. */
int
sgemm_wrapper_calls(void)
{
    return __atomic_load_n(&calls, __ATOMIC_RELAXED);
}
