/* dlopen_sgemm: an FP32 program that links no CUDA library. It opens the
 * runtime and cuBLAS with dlopen and calls them through pointers from
 * dlsym: either in a local scope, looked up on the library's handle
 * (--scope local, as plugin loaders do), or in the global scope, looked up
 * with RTLD_DEFAULT (--scope global). --versioned looks up on the handle
 * with dlvsym and the libraries' version nodes; --dir DIR opens them by
 * path from DIR instead of by soname. Prints the hash of one SGEMM's
 * result; --lt also opens cuBLASLt the same way and prints the hash of
 * one cublasLtMatmul's. */
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <dlfcn.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 256

struct api {
    cudaError_t (*malloc_)(void **, size_t);
    cudaError_t (*memcpy_)(void *, const void *, size_t, enum cudaMemcpyKind);
    cudaError_t (*free_)(void *);
    cublasStatus_t (*create)(cublasHandle_t *);
    cublasStatus_t (*destroy)(cublasHandle_t);
    cublasStatus_t (*sgemm)(cublasHandle_t, cublasOperation_t,
                            cublasOperation_t, int, int, int, const float *,
                            const float *, int, const float *, int,
                            const float *, float *, int);
    /* --lt */
    cublasStatus_t (*lt_create)(cublasLtHandle_t *);
    cublasStatus_t (*lt_desc)(cublasLtMatmulDesc_t *, cublasComputeType_t,
                              cudaDataType_t);
    cublasStatus_t (*lt_layout)(cublasLtMatrixLayout_t *, cudaDataType,
                                uint64_t, uint64_t, int64_t);
    cublasStatus_t (*lt_matmul)(cublasLtHandle_t, cublasLtMatmulDesc_t,
                                const void *, const void *,
                                cublasLtMatrixLayout_t, const void *,
                                cublasLtMatrixLayout_t, const void *,
                                const void *, cublasLtMatrixLayout_t, void *,
                                cublasLtMatrixLayout_t,
                                const cublasLtMatmulAlgo_t *, void *, size_t,
                                cudaStream_t);
};

static int versioned, with_lt;

static void *
lookup(void *lib, int global, const char *name)
{
    const char *node = strncmp(name, "cublasLt", 8) == 0 ? "libcublasLt.so.13"
                       : strncmp(name, "cublas", 6) == 0 ? "libcublas.so.13"
                                                         : "libcudart.so.13";
    void *fn = versioned ? dlvsym(global ? RTLD_DEFAULT : lib, name, node)
                         : dlsym(global ? RTLD_DEFAULT : lib, name);

    if (!fn)
        fprintf(stderr, "dlopen_sgemm: %s not found: %s\n", name, dlerror());
    return fn;
}

static int
load(int global, const char *dir, struct api *api)
{
    int scope = global ? RTLD_GLOBAL : RTLD_LOCAL;
    char rt_path[4096], blas_path[4096];
    void *rt, *blas;

    snprintf(rt_path, sizeof rt_path, "%s%slibcudart.so.13", dir ? dir : "",
             dir ? "/" : "");
    snprintf(blas_path, sizeof blas_path, "%s%slibcublas.so.13",
             dir ? dir : "", dir ? "/" : "");
    rt = dlopen(rt_path, RTLD_NOW | scope);
    blas = dlopen(blas_path, RTLD_NOW | scope);

    if (!rt || !blas) {
        fprintf(stderr, "dlopen_sgemm: %s\n", dlerror());
        return -1;
    }
    *(void **)&api->malloc_ = lookup(rt, global, "cudaMalloc");
    *(void **)&api->memcpy_ = lookup(rt, global, "cudaMemcpy");
    *(void **)&api->free_ = lookup(rt, global, "cudaFree");
    *(void **)&api->create = lookup(blas, global, "cublasCreate_v2");
    *(void **)&api->destroy = lookup(blas, global, "cublasDestroy_v2");
    *(void **)&api->sgemm = lookup(blas, global, "cublasSgemm_v2");
    if (with_lt) {
        char lt_path[4096];
        void *lt;

        snprintf(lt_path, sizeof lt_path, "%s%slibcublasLt.so.13",
                 dir ? dir : "", dir ? "/" : "");
        lt = dlopen(lt_path, RTLD_NOW | scope);
        if (!lt) {
            fprintf(stderr, "dlopen_sgemm: %s\n", dlerror());
            return -1;
        }
        *(void **)&api->lt_create = lookup(lt, global, "cublasLtCreate");
        *(void **)&api->lt_desc = lookup(lt, global,
                                         "cublasLtMatmulDescCreate");
        *(void **)&api->lt_layout = lookup(lt, global,
                                           "cublasLtMatrixLayoutCreate");
        *(void **)&api->lt_matmul = lookup(lt, global, "cublasLtMatmul");
        if (!api->lt_create || !api->lt_desc || !api->lt_layout ||
            !api->lt_matmul)
            return -1;
    }
    return api->malloc_ && api->memcpy_ && api->free_ && api->create &&
                   api->destroy && api->sgemm
               ? 0
               : -1;
}

/* --lt: C = A B through cublasLtMatmul (descriptors left to the exit). */
static int
lt_product(const struct api *api, const float *da, const float *db,
           float *dc)
{
    const float alpha = 1.0f, beta = 0.0f;
    cublasLtHandle_t lt;
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t l;

    if (api->lt_create(&lt) != CUBLAS_STATUS_SUCCESS ||
        api->lt_desc(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F) !=
            CUBLAS_STATUS_SUCCESS ||
        api->lt_layout(&l, CUDA_R_32F, N, N, N) != CUBLAS_STATUS_SUCCESS)
        return -1;
    return (int)api->lt_matmul(lt, op, &alpha, da, l, db, l, &beta, dc, l,
                               dc, l, NULL, NULL, 0, NULL);
}

/* FNV-1a 64 over the result's bytes. */
static uint64_t
hash(const float *v, size_t n)
{
    const unsigned char *p = (const unsigned char *)v;
    uint64_t h = 0xcbf29ce484222325ull;
    size_t i;

    for (i = 0; i < n * sizeof(*v); i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

int
main(int argc, char **argv)
{
    static float a[N * N], b[N * N], c[N * N];
    const float alpha = 1.0f, beta = 0.0f;
    float *da = NULL, *db = NULL, *dc = NULL;
    cublasHandle_t handle;
    cublasStatus_t status;
    const char *dir = NULL;
    struct api api;
    int global, i;

    if (argc < 3 || strcmp(argv[1], "--scope") != 0 ||
        (strcmp(argv[2], "local") != 0 && strcmp(argv[2], "global") != 0)) {
        fprintf(stderr, "usage: dlopen_sgemm --scope local|global "
                "[--versioned] [--dir DIR] [--lt]\n");
        return 2;
    }
    for (i = 3; i < argc; i++) {
        if (strcmp(argv[i], "--versioned") == 0) {
            versioned = 1;
        } else if (strcmp(argv[i], "--lt") == 0) {
            with_lt = 1;
        } else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc) {
            dir = argv[++i];
        } else {
            fprintf(stderr, "dlopen_sgemm: unknown argument '%s'\n",
                    argv[i]);
            return 2;
        }
    }
    global = strcmp(argv[2], "global") == 0;
    if (load(global, dir, &api) != 0)
        return 3;
    for (i = 0; i < N * N; i++) {
        a[i] = (float)((i * 7919ll) % 1000) / 1000.0f - 0.5f;
        b[i] = (float)((i * 104729ll) % 1000) / 1000.0f - 0.5f;
    }
    if (api.malloc_((void **)&da, sizeof a) || api.malloc_((void **)&db,
                                                           sizeof b) ||
        api.malloc_((void **)&dc, sizeof c) ||
        api.memcpy_(da, a, sizeof a, cudaMemcpyHostToDevice) ||
        api.memcpy_(db, b, sizeof b, cudaMemcpyHostToDevice) ||
        api.create(&handle) != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "dlopen_sgemm: CUDA set-up failed\n");
        return 3;
    }
    status = api.sgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &alpha, da,
                       N, db, N, &beta, dc, N);
    if (api.memcpy_(c, dc, sizeof c, cudaMemcpyDeviceToHost)) {
        fprintf(stderr, "dlopen_sgemm: copy back failed\n");
        return 3;
    }
    printf("scope=%s status=%d hash=%016" PRIx64 "\n", argv[2], (int)status,
           hash(c, N * N));
    if (with_lt) {
        int lt_status = lt_product(&api, da, db, dc);

        if (api.memcpy_(c, dc, sizeof c, cudaMemcpyDeviceToHost)) {
            fprintf(stderr, "dlopen_sgemm: copy back failed\n");
            return 3;
        }
        printf("lt status=%d hash=%016" PRIx64 "\n", lt_status,
               hash(c, N * N));
        if (lt_status != 0)
            return 1;
    }
    api.destroy(handle);
    api.free_(da);
    api.free_(db);
    api.free_(dc);
    return status == CUBLAS_STATUS_SUCCESS ? 0 : 1;
}
