/* other_release: an FP32 program whose cuBLAS is another release than the
 * one the shim converts: libcublas.so.12, in a local scope, reached
 *   --route dlsym   through dlopen(RTLD_LOCAL) and dlsym on its handle,
 *                   as XLA's and TensorFlow's loaders take every function;
 *   --route import  through the imports of an extension module that
 *                   depends on it (EXT, opened RTLD_LOCAL, as Python opens
 *                   extension modules: CUDA 12 builds of CuPy and JAX).
 * --with13 first opens the shim's release, libcublas.so.13, in the global
 * scope (a process that holds both) and, after the cuBLAS 12 product, runs
 * one SGEMM through it too. Each product prints the version of the
 * library that answered (cublasGetVersion), the SGEMM's status and a hash
 * of the result's bytes.
 *
 * usage: other_release --route dlsym|import [--ext EXT] [--with13] */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <dlfcn.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define N 128

typedef cublasStatus_t (*create_fn)(cublasHandle_t *);
typedef cublasStatus_t (*destroy_fn)(cublasHandle_t);
typedef cublasStatus_t (*version_fn)(cublasHandle_t, int *);
typedef cublasStatus_t (*sgemm_fn)(cublasHandle_t, cublasOperation_t,
                                   cublasOperation_t, int, int, int,
                                   const float *, const float *, int,
                                   const float *, int, const float *,
                                   float *, int);
typedef int (*ext_fn)(int, const float *, const float *, float *, int *);

/* A library's cuBLAS functions, from its handle or the global scope. */
struct blas {
    create_fn create;
    destroy_fn destroy;
    version_fn version;
    sgemm_fn sgemm;
};

static void *
lookup(void *lib, const char *name)
{
    void *fn = dlsym(lib, name);

    if (!fn)
        fprintf(stderr, "other_release: %s not found: %s\n", name,
                dlerror());
    return fn;
}

static int
blas_load(void *lib, struct blas *b)
{
    *(void **)&b->create = lookup(lib, "cublasCreate_v2");
    *(void **)&b->destroy = lookup(lib, "cublasDestroy_v2");
    *(void **)&b->version = lookup(lib, "cublasGetVersion_v2");
    *(void **)&b->sgemm = lookup(lib, "cublasSgemm_v2");
    return b->create && b->destroy && b->version && b->sgemm ? 0 : -1;
}

/* C = A B through b's functions, as the extension does through its
 * imports. */
static int
blas_product(const struct blas *b, const float *a, const float *bm,
             float *c, int *version)
{
    const float alpha = 1.0f, beta = 0.0f;
    cublasHandle_t handle;
    cublasStatus_t status;

    status = b->create(&handle);
    if (status != CUBLAS_STATUS_SUCCESS)
        return (int)status;
    status = b->version(handle, version);
    if (status == CUBLAS_STATUS_SUCCESS)
        status = b->sgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &alpha,
                          a, N, bm, N, &beta, c, N);
    b->destroy(handle);
    return (int)status;
}

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

/* Prints one product's line; 0 when it succeeded. */
static int
report(const char *which, int version, int status, float *dc)
{
    static float c[N * N];

    memset(c, 0, sizeof c);
    if (cudaMemcpy(c, dc, sizeof c, cudaMemcpyDeviceToHost) != cudaSuccess) {
        fprintf(stderr, "other_release: copy back failed\n");
        return -1;
    }
    printf("%s version=%d status=%d hash=%016" PRIx64 "\n", which, version,
           status, hash(c, N * N));
    return status == 0 ? 0 : -1;
}

int
main(int argc, char **argv)
{
    static float a[N * N], b[N * N];
    const char *route = NULL, *ext_path = NULL;
    float *da = NULL, *db = NULL, *dc = NULL;
    void *lib13 = NULL;
    int with13 = 0, version = 0, status, failed = 0;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--route") == 0 && i + 1 < argc)
            route = argv[++i];
        else if (strcmp(argv[i], "--ext") == 0 && i + 1 < argc)
            ext_path = argv[++i];
        else if (strcmp(argv[i], "--with13") == 0)
            with13 = 1;
        else
            route = NULL, i = argc;
    }
    if (!route || (strcmp(route, "dlsym") != 0 &&
                   (strcmp(route, "import") != 0 || !ext_path))) {
        fprintf(stderr, "usage: other_release --route dlsym|import "
                "[--ext EXT] [--with13]\n");
        return 2;
    }
    if (with13 && !(lib13 = dlopen("libcublas.so.13",
                                   RTLD_NOW | RTLD_GLOBAL))) {
        fprintf(stderr, "other_release: %s\n", dlerror());
        return 3;
    }
    for (int i = 0; i < N * N; i++) {
        a[i] = (float)((i * 7919ll) % 1000) / 1000.0f - 0.5f;
        b[i] = (float)((i * 104729ll) % 1000) / 1000.0f - 0.5f;
    }
    if (cudaMalloc((void **)&da, sizeof a) != cudaSuccess ||
        cudaMalloc((void **)&db, sizeof b) != cudaSuccess ||
        cudaMalloc((void **)&dc, sizeof a) != cudaSuccess ||
        cudaMemcpy(da, a, sizeof a, cudaMemcpyHostToDevice) != cudaSuccess ||
        cudaMemcpy(db, b, sizeof b, cudaMemcpyHostToDevice) != cudaSuccess) {
        fprintf(stderr, "other_release: CUDA set-up failed\n");
        return 3;
    }
    if (strcmp(route, "dlsym") == 0) {
        void *lib12 = dlopen("libcublas.so.12", RTLD_NOW | RTLD_LOCAL);
        struct blas b12;

        if (!lib12 || blas_load(lib12, &b12) != 0) {
            fprintf(stderr, "other_release: %s\n",
                    lib12 ? "cuBLAS 12 incomplete" : dlerror());
            return 3;
        }
        status = blas_product(&b12, da, db, dc, &version);
    } else {
        void *ext = dlopen(ext_path, RTLD_NOW | RTLD_LOCAL);
        ext_fn sgemm12 = NULL;

        if (ext)
            *(void **)&sgemm12 = lookup(ext, "other_release_sgemm");
        if (!sgemm12) {
            fprintf(stderr, "other_release: %s\n",
                    ext ? "no other_release_sgemm" : dlerror());
            return 3;
        }
        status = sgemm12(N, da, db, dc, &version);
    }
    failed |= report("cublas12", version, status, dc);
    if (with13) {
        struct blas b13;

        /* The global scope's definitions, as a program linked with it
         * reaches them (the shim's hook first when it is preloaded). */
        if (blas_load(RTLD_DEFAULT, &b13) != 0)
            return 3;
        version = 0;
        status = blas_product(&b13, da, db, dc, &version);
        failed |= report("cublas13", version, status, dc);
    }
    cudaFree(da);
    cudaFree(db);
    cudaFree(dc);
    if (lib13)
        dlclose(lib13);
    return failed ? 1 : 0;
}
