/* cxx_site: an ordinary FP32 cuBLAS program whose one GEMM is called from
 * a function named as a C++ compiler names `app::trainStep()`
 * (_ZN3app9trainStepEv), to show how a C++ call site appears in the
 * shim's table and report. With --quick-exit it ends with _exit(0)
 * instead of returning from main. */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define DIM 64

int train_step(cublasHandle_t handle, const float *a, const float *b,
               float *c) __asm__("_ZN3app9trainStepEv");

__attribute__((noinline)) int
train_step(cublasHandle_t handle, const float *a, const float *b, float *c)
{
    const float alpha = 1.0f, beta = 0.0f;

    return cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, DIM, DIM, DIM,
                       &alpha, a, DIM, b, DIM, &beta, c, DIM) !=
           CUBLAS_STATUS_SUCCESS;
}

int
main(int argc, char **argv)
{
    static float host[DIM * DIM];
    float *a, *b, *c;
    cublasHandle_t handle;

    for (int i = 0; i < DIM * DIM; i++)
        host[i] = (float)((i * 7) % 13) / 13.0f - 0.5f;
    if (cudaMalloc((void **)&a, sizeof host) != cudaSuccess ||
        cudaMalloc((void **)&b, sizeof host) != cudaSuccess ||
        cudaMalloc((void **)&c, sizeof host) != cudaSuccess ||
        cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "cxx_site: no device\n");
        return 3;
    }
    cudaMemcpy(a, host, sizeof host, cudaMemcpyHostToDevice);
    cudaMemcpy(b, host, sizeof host, cudaMemcpyHostToDevice);
    if (train_step(handle, a, b, c) != 0) {
        fprintf(stderr, "cxx_site: cublasSgemm failed\n");
        return 4;
    }
    cudaMemcpy(host, c, sizeof host, cudaMemcpyDeviceToHost);
    printf("cxx_site c0=%g\n", host[0]);
    fflush(stdout);
    if (argc > 1 && strcmp(argv[1], "--quick-exit") == 0)
        _exit(0);
    cublasDestroy(handle);
    return 0;
}
