/* dlsym_loader: FP32 cuBLAS products of a program that links no CUDA
 * library and takes every function it uses from its own dlopen handles
 * (libcuda.so.1, libcudart.so.13, libcublas.so.13, in a local scope) with
 * dlsym, by their exported names, as TensorFlow's and JAX's loaders,
 * cuda-python and Rust's cudarc do: the calls that end a context
 * included. Links libdl only.
 *
 * Four rounds, each in a new context that it then ends its own way, with
 * CALLS SGEMMs still queued: 0 releases the primary context
 * (cuDevicePrimaryCtxRelease_v2, its last reference, after
 * cublasDestroy_v2), 1 resets it (cuDevicePrimaryCtxReset_v2), 2 destroys
 * a context of its own (cuCtxDestroy_v2), 3 resets the device through the
 * runtime (cudaDeviceReset, after cudaSetDevice made the primary context
 * current). Before that, each round makes CALLS checked SGEMMs, each
 * product compared element by element with a double-precision reference
 * within the tolerance named on the command line (fp32, tf32, fp16, bf16
 * or a number).
 *
 * usage: dlsym_loader TOLERANCE
 *
 * Prints one line per checked call, then "result: ...":
 * case roundR-callI m=M n=N k=K op=NN status=NAME(N) err/bound=R hash=H
 *      ok|FAIL
 * Exit status: 0 all within the bound, 1 a product outside it, 2 usage, 3
 * a CUDA or cuBLAS error. */
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime_api.h>

#define EXAMPLE_PROG "dlsym_loader"
#include "example_util.h"

#include <dlfcn.h>
#include <inttypes.h>

#define CALLS 3
#define ROUNDS 4
#define M 96
#define N 80
#define K 64

/* Every function the program calls: X(library, member, exported name,
 * the header's declaration it has the type of). */
#define LOADER_FUNCTIONS(X)                                                  \
    X(cuda, init, "cuInit", cuInit)                                          \
    X(cuda, device_get, "cuDeviceGet", cuDeviceGet)                          \
    X(cuda, primary_retain, "cuDevicePrimaryCtxRetain",                      \
      cuDevicePrimaryCtxRetain)                                              \
    X(cuda, primary_release, "cuDevicePrimaryCtxRelease_v2",                 \
      cuDevicePrimaryCtxRelease_v2)                                          \
    X(cuda, primary_reset, "cuDevicePrimaryCtxReset_v2",                     \
      cuDevicePrimaryCtxReset_v2)                                            \
    X(cuda, ctx_create, "cuCtxCreate_v4", cuCtxCreate_v4)                    \
    X(cuda, ctx_destroy, "cuCtxDestroy_v2", cuCtxDestroy_v2)                 \
    X(cuda, ctx_set_current, "cuCtxSetCurrent", cuCtxSetCurrent)             \
    X(cuda, mem_alloc, "cuMemAlloc_v2", cuMemAlloc_v2)                       \
    X(cuda, memcpy_htod, "cuMemcpyHtoD_v2", cuMemcpyHtoD_v2)                 \
    X(cuda, memcpy_dtoh, "cuMemcpyDtoH_v2", cuMemcpyDtoH_v2)                 \
    X(cudart, set_device, "cudaSetDevice", cudaSetDevice)                    \
    X(cudart, free, "cudaFree", cudaFree)                                    \
    X(cudart, device_reset, "cudaDeviceReset", cudaDeviceReset)              \
    X(cublas, create, "cublasCreate_v2", cublasCreate_v2)                    \
    X(cublas, destroy, "cublasDestroy_v2", cublasDestroy_v2)                 \
    X(cublas, sgemm, "cublasSgemm_v2", cublasSgemm_v2)

static struct {
#define LOADER_POINTER(lib, member, name, decl) __typeof__(&decl) member;
    LOADER_FUNCTIONS(LOADER_POINTER)
#undef LOADER_POINTER
} api;

static const char *const round_names[ROUNDS] = {
    "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxReset_v2",
    "cuCtxDestroy_v2", "cudaDeviceReset",
};

static int failed;

/* Opens the three libraries and takes every function from its handle: 0,
 * or -1 after naming what is missing. */
static int
loader_open(void)
{
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    void *cudart = dlopen("libcudart.so.13", RTLD_NOW | RTLD_LOCAL);
    void *cublas = dlopen("libcublas.so.13", RTLD_NOW | RTLD_LOCAL);
    void *fn;

    if (!cuda || !cudart || !cublas) {
        fprintf(stderr, EXAMPLE_PROG ": cannot open the CUDA libraries: "
                "%s\n", dlerror());
        return -1;
    }
#define LOADER_FETCH(lib, member, name, decl)                                \
    fn = dlsym(lib, name);                                                   \
    if (!fn) {                                                               \
        fprintf(stderr, EXAMPLE_PROG ": no %s in its library\n", name);      \
        return -1;                                                           \
    }                                                                        \
    memcpy(&api.member, &fn, sizeof fn);
    LOADER_FUNCTIONS(LOADER_FETCH)
#undef LOADER_FETCH
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

static int
rt_failed(const char *what, cudaError_t e)
{
    if (e == cudaSuccess)
        return 0;
    fprintf(stderr, EXAMPLE_PROG ": %s failed: %d\n", what, (int)e);
    return 1;
}

/* Checks C = A B (A M x K, B K x N, compact, column-major) and prints its
 * case line. */
static void
check_and_print(int round, int call, const float *a, const float *b,
                const float *c, const struct tolerance *tol)
{
    struct operand_view va = {a, M, 0}, vb = {b, K, 0};
    double worst = gemm_worst_ratio(&va, &vb, M, N, K, c,
                                    tol_factor(tol, K));
    uint64_t hash = fnv1a64(c, (size_t)M * N * 4, 0xcbf29ce484222325ull);
    int ok = worst <= 1.0;

    printf("case round%d-call%d m=%d n=%d k=%d op=NN "
           "status=CUBLAS_STATUS_SUCCESS(0) err/bound=%.3e hash=%016" PRIx64
           " %s\n", round, call, M, N, K, worst, hash, ok ? "ok" : "FAIL");
    failed += !ok;
}

/* The round's context, made current: the primary context retained (rounds
 * 0 and 1), one of the program's own (2), or the runtime's (3). */
static int
round_context(int round, CUdevice dev, CUcontext *ctx)
{
    switch (round) {
    case 0:
    case 1:
        return cu_failed("cuDevicePrimaryCtxRetain",
                         api.primary_retain(ctx, dev)) ||
               cu_failed("cuCtxSetCurrent", api.ctx_set_current(*ctx));
    case 2:
        return cu_failed("cuCtxCreate", api.ctx_create(ctx, NULL, 0, dev));
    default:
        /* cudaFree(NULL) makes the runtime's context, as programs do. */
        return rt_failed("cudaSetDevice", api.set_device((int)dev)) ||
               rt_failed("cudaFree", api.free(NULL));
    }
}

/* Ends the round's context its way, the last CALLS products queued. */
static int
round_end(int round, CUdevice dev, CUcontext ctx, cublasHandle_t handle)
{
    switch (round) {
    case 0:
        return cublas_failed("cublasDestroy", api.destroy(handle)) ||
               cu_failed(round_names[0], api.primary_release(dev));
    case 1:
        return cu_failed(round_names[1], api.primary_reset(dev));
    case 2:
        return cu_failed(round_names[2], api.ctx_destroy(ctx));
    default:
        return rt_failed(round_names[3], api.device_reset());
    }
}

/* C = A B on the handle into c. */
static int
sgemm(cublasHandle_t handle, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c)
{
    const float alpha = 1.0f, beta = 0.0f;

    return cublas_failed("cublasSgemm",
                         api.sgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, M, N, K,
                                   &alpha, (const float *)a, M,
                                   (const float *)b, K, &beta, (float *)c,
                                   M));
}

/* One round: 0, or -1 on a CUDA or cuBLAS error. */
static int
run_round(int round, CUdevice dev, const struct tolerance *tol)
{
    uint64_t seed = 0x10adull + (uint64_t)round;
    float *a = host_data((size_t)M * K, &seed);
    float *b = host_data((size_t)K * N, &seed);
    float *c = malloc((size_t)M * N * sizeof *c);
    CUdeviceptr da = 0, db = 0, dc[CALLS] = {0};
    cublasHandle_t handle = NULL;
    CUcontext ctx = NULL;
    int rc = -1;

    if (!a || !b || !c || round_context(round, dev, &ctx) ||
        cu_failed("cuMemAlloc", api.mem_alloc(&da, (size_t)M * K * 4)) ||
        cu_failed("cuMemAlloc", api.mem_alloc(&db, (size_t)K * N * 4)) ||
        cu_failed("cuMemcpyHtoD", api.memcpy_htod(da, a, (size_t)M * K * 4)) ||
        cu_failed("cuMemcpyHtoD", api.memcpy_htod(db, b, (size_t)K * N * 4)))
        goto out;
    for (int i = 0; i < CALLS; i++)
        if (cu_failed("cuMemAlloc", api.mem_alloc(&dc[i], (size_t)M * N * 4)))
            goto out;
    if (cublas_failed("cublasCreate", api.create(&handle)))
        goto out;
    for (int i = 0; i < CALLS; i++)
        if (sgemm(handle, da, db, dc[i]))
            goto out;
    for (int i = 0; i < CALLS; i++) {
        if (cu_failed("cuMemcpyDtoH",
                      api.memcpy_dtoh(c, dc[i], (size_t)M * N * 4)))
            goto out;
        check_and_print(round, i, a, b, c, tol);
    }
    /* Queued when the context ends, which ends them, the buffers and
     * (but in round 0) the handle with it. */
    for (int i = 0; i < CALLS; i++)
        if (sgemm(handle, da, db, dc[i]))
            goto out;
    if (round_end(round, dev, ctx, handle))
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
        fprintf(stderr, "usage: dlsym_loader fp32|tf32|fp16|bf16|X\n");
        return EXIT_USAGE;
    }
    if (loader_open() != 0 || cu_failed("cuInit", api.init(0)) ||
        cu_failed("cuDeviceGet", api.device_get(&dev, 0)))
        return EXIT_CUDA_ERROR;
    for (int round = 0; round < ROUNDS; round++)
        if (run_round(round, dev, &tol) != 0)
            return EXIT_CUDA_ERROR;
    printf("result: %d of %d products within the bound\n",
           ROUNDS * CALLS - failed, ROUNDS * CALLS);
    return failed ? EXIT_CHECK_FAILED : EXIT_ALL_PASS;
}
