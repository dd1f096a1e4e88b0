/* library_gemm: an FP32 program that calls a library of NVIDIA's (the
 * cuSOLVER stand-in, libcusolver.so.12), whose routine runs its own
 * SGEMMs through cuBLAS, and then one SGEMM of its own. Prints each
 * result's status and a hash of its bytes:
 *   library status=S hash=H   (the stand-in's trailing update)
 *   program status=S hash=H   (the program's cublasSgemm_v2) */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define N 96
#define NB 32
#define BLOCKS 4
#define K (NB * BLOCKS)

int standin_trailing_update(cublasHandle_t handle, int n, int nb,
                            int blocks, const float *a, const float *b,
                            float *c);

/* FNV-1a 64 over the result's bytes. */
static uint64_t
hash(const float *v, size_t n)
{
    const unsigned char *p = (const unsigned char *)v;
    uint64_t h = 0xcbf29ce484222325ull;

    for (size_t i = 0; i < n * sizeof(*v); i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

static int
print_result(const char *which, int status, const float *dc)
{
    static float c[N * N];

    if (cudaMemcpy(c, dc, sizeof c, cudaMemcpyDeviceToHost) != cudaSuccess) {
        fprintf(stderr, "library_gemm: copy back failed\n");
        return -1;
    }
    printf("%s status=%d hash=%016" PRIx64 "\n", which, status,
           hash(c, N * N));
    return status == 0 ? 0 : -1;
}

int
main(void)
{
    static float a[N * K], b[K * N], c[N * N];
    const float alpha = 1.0f, beta = 0.0f;
    float *da = NULL, *db = NULL, *dc = NULL;
    cublasHandle_t handle;
    int status, failed = 0;

    for (int i = 0; i < N * K; i++) {
        a[i] = (float)((i * 7919ll) % 1000) / 1000.0f - 0.5f;
        b[i] = (float)((i * 104729ll) % 1000) / 1000.0f - 0.5f;
    }
    for (int i = 0; i < N * N; i++)
        c[i] = (float)((i * 31ll) % 100) / 10.0f;
    if (cudaMalloc((void **)&da, sizeof a) != cudaSuccess ||
        cudaMalloc((void **)&db, sizeof b) != cudaSuccess ||
        cudaMalloc((void **)&dc, sizeof c) != cudaSuccess ||
        cudaMemcpy(da, a, sizeof a, cudaMemcpyHostToDevice) != cudaSuccess ||
        cudaMemcpy(db, b, sizeof b, cudaMemcpyHostToDevice) != cudaSuccess ||
        cudaMemcpy(dc, c, sizeof c, cudaMemcpyHostToDevice) != cudaSuccess ||
        cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "library_gemm: CUDA set-up failed\n");
        return 3;
    }
    status = standin_trailing_update(handle, N, NB, BLOCKS, da, db, dc);
    failed |= print_result("library", status, dc);
    status = (int)cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, N, N, K,
                              &alpha, da, N, db, K, &beta, dc, N);
    failed |= print_result("program", status, dc);
    cublasDestroy(handle);
    cudaFree(da);
    cudaFree(db);
    cudaFree(dc);
    return failed ? 1 : 0;
}
