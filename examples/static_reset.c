/* static_reset: FP32 cuBLAS products of a program with the CUDA runtime
 * linked statically, as the driver sees it: no libcudart.so, every driver
 * function taken from cuGetProcAddress (the driver's cuGetProcAddress_v2
 * found by dlsym on libcuda.so.1's handle), the device reset through the
 * cuDevicePrimaryCtxReset it gave, as cudart_static's cudaDeviceReset
 * does. Links cuBLAS and libdl only.
 *
 * Phase 0 retains the primary context, makes CALLS checked SGEMMs and
 * CALLS more that are still queued when it resets the device; phase 1
 * retains the primary context again (at the same address), makes new
 * buffers and a new handle and CALLS checked SGEMMs. Each checked product
 * is compared element by element with a double-precision reference within
 * the tolerance named on the command line (fp32, tf32, fp16, bf16 or a
 * number).
 *
 * usage: static_reset TOLERANCE
 *
 * Prints one line per checked call, then "result: ...":
 * case phaseP-callI m=M n=N k=K op=NN status=NAME(N) err/bound=R hash=H
 *      ok|FAIL
 * Exit status: 0 all within the bound, 1 a product outside it, 2 usage, 3
 * a CUDA or cuBLAS error. */
#include <cublas_v2.h>
#include <cuda.h>

#define EXAMPLE_PROG "static_reset"
#include "example_util.h"

#include <dlfcn.h>
#include <inttypes.h>

#define CALLS 3
#define M 96
#define N 80
#define K 64

/* The driver functions the program uses, each taken by its base name. */
#define DRIVER_FUNCTIONS(X)                                                  \
    X(cuInit)                                                                \
    X(cuDeviceGet)                                                           \
    X(cuDevicePrimaryCtxRetain)                                              \
    X(cuDevicePrimaryCtxRelease)                                             \
    X(cuDevicePrimaryCtxReset)                                               \
    X(cuCtxSetCurrent)                                                       \
    X(cuMemAlloc)                                                            \
    X(cuMemFree)                                                             \
    X(cuMemcpyHtoD)                                                          \
    X(cuMemcpyDtoH)

static struct {
#define DRIVER_POINTER(name) __typeof__(&name) name;
    DRIVER_FUNCTIONS(DRIVER_POINTER)
#undef DRIVER_POINTER
} drv;

static int failed;

/* Takes every driver function from cuGetProcAddress: 0, or -1 after
 * naming the one missing. */
static int
driver_load(void)
{
    __typeof__(&cuGetProcAddress_v2) get_proc = NULL;
    CUdriverProcAddressQueryResult found;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL), *fn;

    if (lib)
        *(void **)&get_proc = dlsym(lib, "cuGetProcAddress_v2");
    if (!get_proc) {
        fprintf(stderr, EXAMPLE_PROG ": no cuGetProcAddress_v2 in "
                "libcuda.so.1\n");
        return -1;
    }
#define DRIVER_FETCH(name)                                                   \
    fn = NULL;                                                               \
    if (get_proc(#name, &fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT,      \
                 &found) != CUDA_SUCCESS || !fn) {                           \
        fprintf(stderr, EXAMPLE_PROG ": the driver has no %s\n", #name);     \
        return -1;                                                           \
    }                                                                        \
    memcpy(&drv.name, &fn, sizeof fn);
    DRIVER_FUNCTIONS(DRIVER_FETCH)
#undef DRIVER_FETCH
    return 0;
}

static int
cu_failed(const char *what, CUresult r)
{
    if (r == CUDA_SUCCESS)
        return 0;
    fprintf(stderr, EXAMPLE_PROG ": %s failed: %d\n", what, (int)r);
    return 1;
}

/* Checks C = A B (A M x K, B K x N, compact, column-major) and prints its
 * case line. */
static void
check_and_print(int phase, int call, const float *a, const float *b,
                const float *c, const struct tolerance *tol)
{
    struct operand_view va = {a, M, 0}, vb = {b, K, 0};
    double worst = gemm_worst_ratio(&va, &vb, M, N, K, c,
                                    tol_factor(tol, K));
    uint64_t hash;
    int ok;

    hash = fnv1a64(c, (size_t)M * N * 4, 0xcbf29ce484222325ull);
    ok = worst <= 1.0;
    printf("case phase%d-call%d m=%d n=%d k=%d op=NN "
           "status=CUBLAS_STATUS_SUCCESS(0) err/bound=%.3e hash=%016" PRIx64
           " %s\n", phase, call, M, N, K, worst, hash, ok ? "ok" : "FAIL");
    failed += !ok;
}

/* One phase in the device's primary context (retained here): 0, or -1 on a
 * CUDA or cuBLAS error. Phase 0 ends with the reset, its last CALLS
 * products still queued. */
static int
run_phase(int phase, CUdevice dev, const struct tolerance *tol)
{
    const float alpha = 1.0f, beta = 0.0f;
    uint64_t seed = 0x5eedull + (uint64_t)phase;
    float *a = host_data((size_t)M * K, &seed);
    float *b = host_data((size_t)K * N, &seed);
    float *c = malloc((size_t)M * N * sizeof *c);
    CUdeviceptr da = 0, db = 0, dc[CALLS] = {0};
    cublasHandle_t handle = NULL;
    CUcontext ctx;
    int rc = -1;

    if (!a || !b || !c)
        goto out;
    if (cu_failed("cuDevicePrimaryCtxRetain",
                  drv.cuDevicePrimaryCtxRetain(&ctx, dev)) ||
        cu_failed("cuCtxSetCurrent", drv.cuCtxSetCurrent(ctx)) ||
        cu_failed("cuMemAlloc", drv.cuMemAlloc(&da, (size_t)M * K * 4)) ||
        cu_failed("cuMemAlloc", drv.cuMemAlloc(&db, (size_t)K * N * 4)) ||
        cu_failed("cuMemcpyHtoD", drv.cuMemcpyHtoD(da, a, (size_t)M * K * 4)) ||
        cu_failed("cuMemcpyHtoD", drv.cuMemcpyHtoD(db, b, (size_t)K * N * 4)))
        goto out;
    for (int i = 0; i < CALLS; i++)
        if (cu_failed("cuMemAlloc", drv.cuMemAlloc(&dc[i], (size_t)M * N * 4)))
            goto out;
    if (cublas_failed("cublasCreate", cublasCreate(&handle)))
        goto out;
    for (int i = 0; i < CALLS; i++)
        if (cublas_failed("cublasSgemm",
                          cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, M, N,
                                      K, &alpha, (const float *)da, M,
                                      (const float *)db, K, &beta,
                                      (float *)dc[i], M)))
            goto out;
    for (int i = 0; i < CALLS; i++) {
        if (cu_failed("cuMemcpyDtoH",
                      drv.cuMemcpyDtoH(c, dc[i], (size_t)M * N * 4)))
            goto out;
        check_and_print(phase, i, a, b, c, tol);
    }
    if (phase == 0) {
        /* Queued when the device is reset, which ends them, the handle
         * and the buffers with the context. */
        for (int i = 0; i < CALLS; i++)
            if (cublas_failed("cublasSgemm",
                              cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, M,
                                          N, K, &alpha, (const float *)da, M,
                                          (const float *)db, K, &beta,
                                          (float *)dc[i], M)))
                goto out;
        if (cu_failed("cuDevicePrimaryCtxReset",
                      drv.cuDevicePrimaryCtxReset(dev)))
            goto out;
        rc = 0;
        goto out;
    }
    if (cublas_failed("cublasDestroy", cublasDestroy(handle)))
        goto out;
    for (int i = 0; i < CALLS; i++)
        drv.cuMemFree(dc[i]);
    drv.cuMemFree(da);
    drv.cuMemFree(db);
    if (cu_failed("cuDevicePrimaryCtxRelease",
                  drv.cuDevicePrimaryCtxRelease(dev)))
        goto out;
    rc = 0;
out:
    free(a);
    free(b);
    free(c);
    return rc;
}

int
main(int argc, char **argv)
{
    struct tolerance tol = { TOL_FP32, 0.0 };
    CUdevice dev;

    if (argc != 2 || tol_parse(argv[1], &tol) != 0) {
        fprintf(stderr, "usage: static_reset fp32|tf32|fp16|bf16|X\n");
        return EXIT_USAGE;
    }
    if (driver_load() != 0 || cu_failed("cuInit", drv.cuInit(0)) ||
        cu_failed("cuDeviceGet", drv.cuDeviceGet(&dev, 0)))
        return EXIT_CUDA_ERROR;
    for (int phase = 0; phase < 2; phase++)
        if (run_phase(phase, dev, &tol) != 0)
            return EXIT_CUDA_ERROR;
    printf("result: %d of %d products within the bound\n",
           2 * CALLS - failed, 2 * CALLS);
    return failed ? EXIT_CHECK_FAILED : EXIT_ALL_PASS;
}
