/* A stand-in for an extension module built against cuBLAS 12 (a CUDA 12
 * build of CuPy or JAX): it depends on libcublas.so.12 (DT_NEEDED) and
 * calls it through its own imports, and the program opens it RTLD_LOCAL,
 * as Python opens extension modules. Its cuBLAS is then in its local
 * scope only, while a preloaded library's definitions of the same names
 * are in the global scope, which the loader searches first. */
#include <cublas_v2.h>

int other_release_sgemm(int n, const float *a, const float *b, float *c,
                        int *version);

/* C = A B for n x n column-major matrices on the device, on a handle of
 * its own; *version is the answering library's cublasGetVersion. Returns
 * the SGEMM's status (or the first failing set-up call's). */
int
other_release_sgemm(int n, const float *a, const float *b, float *c,
                    int *version)
{
    const float alpha = 1.0f, beta = 0.0f;
    cublasHandle_t handle;
    cublasStatus_t status;

    status = cublasCreate(&handle);
    if (status != CUBLAS_STATUS_SUCCESS)
        return (int)status;
    status = cublasGetVersion(handle, version);
    if (status == CUBLAS_STATUS_SUCCESS)
        status = cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n,
                             &alpha, a, n, b, n, &beta, c, n);
    cublasDestroy(handle);
    return (int)status;
}
