/* cxx_names: an ordinary FP32 cuBLAS program whose GEMMs come from two
 * functions named as a C++ compiler names the clones it makes:
 * `app::step(int)` after interprocedural scalar replacement
 * (_ZN3app4stepEi.isra.0) and `model::Pair<float, int>::run()` with a
 * propagated constant (_ZN5model4PairIfiE3runEv.constprop.0), for the
 * tests of how sites are named: tables, CSV, report, warnings, calibrate's
 * rules and policies that name the callers. Prints one line per function
 * with its cuBLAS statuses' sum and the output's first element. */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define DIM 512
#define STEP_CALLS 3
#define RUN_CALLS 2

struct operands {
    cublasHandle_t handle;
    const float *a, *b;
    float *c;
};

int app_step(const struct operands *o, int calls)
    __asm__("_ZN3app4stepEi.isra.0");
int model_pair_run(const struct operands *o)
    __asm__("_ZN5model4PairIfiE3runEv.constprop.0");

__attribute__((noinline)) int
app_step(const struct operands *o, int calls)
{
    const float alpha = 1.0f, beta = 0.0f;
    int failed = 0;

    for (int i = 0; i < calls; i++)
        failed += cublasSgemm(o->handle, CUBLAS_OP_N, CUBLAS_OP_N, DIM, DIM,
                              DIM, &alpha, o->a, DIM, o->b, DIM, &beta, o->c,
                              DIM) != CUBLAS_STATUS_SUCCESS;
    return failed;
}

__attribute__((noinline)) int
model_pair_run(const struct operands *o)
{
    const float alpha = 1.0f, beta = 0.0f;
    int failed = 0;

    for (int i = 0; i < RUN_CALLS; i++)
        failed += cublasSgemm(o->handle, CUBLAS_OP_T, CUBLAS_OP_N, DIM, DIM,
                              DIM, &alpha, o->a, DIM, o->b, DIM, &beta, o->c,
                              DIM) != CUBLAS_STATUS_SUCCESS;
    return failed;
}

int
main(void)
{
    static float host[DIM * DIM];
    struct operands o;
    float *a, *b, *c;
    unsigned rng = 12345;
    int failed;

    for (int i = 0; i < DIM * DIM; i++) {
        rng = rng * 1103515245u + 12345u;
        host[i] = (float)((rng >> 8) & 0xffff) / 65536.0f - 0.5f;
    }
    if (cudaMalloc((void **)&a, sizeof host) != cudaSuccess ||
        cudaMalloc((void **)&b, sizeof host) != cudaSuccess ||
        cudaMalloc((void **)&c, sizeof host) != cudaSuccess ||
        cublasCreate(&o.handle) != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "cxx_names: no device\n");
        return 3;
    }
    cudaMemcpy(a, host, sizeof host, cudaMemcpyHostToDevice);
    cudaMemcpy(b, host, sizeof host, cudaMemcpyHostToDevice);
    o.a = a;
    o.b = b;
    o.c = c;
    failed = app_step(&o, STEP_CALLS);
    cudaMemcpy(host, c, sizeof(float), cudaMemcpyDeviceToHost);
    printf("cxx_names app::step failed=%d c0=%.6g\n", failed, host[0]);
    failed = model_pair_run(&o);
    cudaMemcpy(host, c, sizeof(float), cudaMemcpyDeviceToHost);
    printf("cxx_names model::Pair<float, int>::run failed=%d c0=%.6g\n",
           failed, host[0]);
    cublasDestroy(o.handle);
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
    return 0;
}
