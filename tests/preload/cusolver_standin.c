/* A stand-in for cuSOLVER (built as libcusolver.so.12): a library of
 * NVIDIA's whose own routines call cuBLAS through their imports, as
 * cuSOLVER's getrf, geqrf and syevd run their blocked updates with
 * cublasSgemm_v2. Preloaded, the shim's unversioned definitions bind those
 * imports too; what the library computes must stay FP32. */
#include <cublas_v2.h>

int standin_trailing_update(cublasHandle_t handle, int n, int nb,
                            int blocks, const float *a, const float *b,
                            float *c);

/* The trailing update of a blocked factorization: C -= A_j B_j for each
 * panel j of nb columns of A (n x nb blocks, column-major, ld n) and rows
 * of B (nb x n blocks, ld nb * blocks), one SGEMM per panel. Returns the
 * first failing status, else 0. */
int
standin_trailing_update(cublasHandle_t handle, int n, int nb, int blocks,
                        const float *a, const float *b, float *c)
{
    const float minus_one = -1.0f, one = 1.0f;
    int ldb = nb * blocks;

    for (int j = 0; j < blocks; j++) {
        cublasStatus_t s = cublasSgemm(
            handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, nb, &minus_one,
            a + (size_t)j * nb * n, n, b + (size_t)j * nb, ldb, &one, c, n);

        if (s != CUBLAS_STATUS_SUCCESS)
            return (int)s;
    }
    return 0;
}
