/* layer_mix: an ordinary FP32 program whose layers are different call
 * sites with different shapes and data: a tiny projection, a large dense
 * layer, a layer whose products cancel, and a 3x3 convolution. It prints
 * a hash of each layer's output and knows nothing of any shim; the
 * calibration test (`ampshim calibrate`) measures it.
 *
 * `layer_mix shapes CALLS` runs instead five GEMM layers whose shapes
 * favour different modes (skinny, square, long-k, tiny, cancelling),
 * CALLS times each, in turn as a training loop would: the test of the
 * policy action auto compares its choices with calibrate's. */
#include <cublas_v2.h>
#include <cudnn.h>

#define EXAMPLE_PROG "layer_mix"
#include "example_util.h"

static uint64_t
hash_floats(const float *x, size_t n)
{
    return fnv1a64(x, n * sizeof(float), 0xcbf29ce484222325ULL);
}

struct layer {
    float *a, *b, *c;          /* device: A (m x k), B (k x n), C (m x n) */
    int m, n, k;
};

static int
layer_alloc(struct layer *l, int m, int n, int k, uint64_t seed,
            int cancelling)
{
    size_t na = (size_t)m * k, nb = (size_t)k * n;
    float *ha = malloc(na * sizeof(float)), *hb = malloc(nb * sizeof(float));
    uint64_t rng = seed;
    int rc = -1;

    *l = (struct layer){ .m = m, .n = n, .k = k };
    if (ha == NULL || hb == NULL)
        goto out;
    /* Cancelling: A's columns come in equal pairs and B's rows in pairs
     * b and -1.01 b, so each sum of products is about 1 % of its terms;
     * rounding b and -1.01 b to a 10-bit mantissa moves the result by
     * several per cent. */
    for (size_t r = 0; r < (size_t)k; r++)
        for (size_t i = 0; i < (size_t)m; i++)
            ha[r * m + i] = cancelling && r % 2 == 1 ? ha[(r - 1) * m + i]
                                                     : rng_float(&rng, 1.0f);
    for (size_t j = 0; j < (size_t)n; j++)
        for (size_t r = 0; r < (size_t)k; r++)
            hb[j * k + r] = cancelling && r % 2 == 1
                                ? -1.01f * hb[j * k + r - 1]
                                : rng_float(&rng, 1.0f);
    if (cuda_failed("cudaMalloc", cudaMalloc((void **)&l->a, na * 4)) ||
        cuda_failed("cudaMalloc", cudaMalloc((void **)&l->b, nb * 4)) ||
        cuda_failed("cudaMalloc",
                    cudaMalloc((void **)&l->c, (size_t)m * n * 4)) ||
        cuda_failed("cudaMemcpy", cudaMemcpy(l->a, ha, na * 4,
                                             cudaMemcpyHostToDevice)) ||
        cuda_failed("cudaMemcpy", cudaMemcpy(l->b, hb, nb * 4,
                                             cudaMemcpyHostToDevice)))
        goto out;
    rc = 0;
out:
    free(ha);
    free(hb);
    return rc;
}

static void
layer_free(struct layer *l)
{
    cudaFree(l->a);
    cudaFree(l->b);
    cudaFree(l->c);
}

/* Inlined into each layer function, so that the layer is the caller the
 * shim sees. */
static inline __attribute__((always_inline)) cublasStatus_t
gemm(cublasHandle_t h, const struct layer *l)
{
    const float one = 1.0f, zero = 0.0f;

    return cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, l->m, l->n, l->k,
                          &one, l->a, l->m, l->b, l->k, &zero, l->c, l->m);
}

/* One function per layer: each is its own call site. */
static __attribute__((noinline)) cublasStatus_t
tiny_projection(cublasHandle_t h, const struct layer *l)
{
    return gemm(h, l);
}

static __attribute__((noinline)) cublasStatus_t
dense_layer(cublasHandle_t h, const struct layer *l)
{
    return gemm(h, l);
}

static __attribute__((noinline)) cublasStatus_t
cancelling_layer(cublasHandle_t h, const struct layer *l)
{
    return gemm(h, l);
}

static __attribute__((noinline)) cublasStatus_t
skinny_layer(cublasHandle_t h, const struct layer *l)
{
    return gemm(h, l);
}

static __attribute__((noinline)) cublasStatus_t
square_layer(cublasHandle_t h, const struct layer *l)
{
    return gemm(h, l);
}

static __attribute__((noinline)) cublasStatus_t
long_k_layer(cublasHandle_t h, const struct layer *l)
{
    return gemm(h, l);
}

/* A 3x3 convolution, N=2 C=128 H=W=16 K=64, pad 1, called `calls` times. */
static __attribute__((noinline)) int
conv_layer(cudnnHandle_t dnn, int calls, uint64_t *hash)
{
    enum { CN = 2, CC = 128, CH = 16, CW = 16, CK = 64, CR = 3 };
    size_t nx = (size_t)CN * CC * CH * CW, nw = (size_t)CK * CC * CR * CR;
    size_t ny = (size_t)CN * CK * CH * CW;
    float *hx = malloc(nx * 4), *hw = malloc(nw * 4), *hy = malloc(ny * 4);
    float *dx = NULL, *dw = NULL, *dy = NULL;
    void *ws = NULL;
    size_t ws_bytes = 0;
    cudnnTensorDescriptor_t xd = NULL, yd = NULL;
    cudnnFilterDescriptor_t wd = NULL;
    cudnnConvolutionDescriptor_t cd = NULL;
    const cudnnConvolutionFwdAlgo_t algo =
        CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
    const float one = 1.0f, zero = 0.0f;
    cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
    uint64_t rng = 99;
    int rc = -1;

    if (hx == NULL || hw == NULL || hy == NULL)
        goto out;
    for (size_t i = 0; i < nx; i++)
        hx[i] = rng_float(&rng, 1.0f);
    for (size_t i = 0; i < nw; i++)
        hw[i] = rng_float(&rng, 0.1f);
    if (cuda_failed("cudaMalloc", cudaMalloc((void **)&dx, nx * 4)) ||
        cuda_failed("cudaMalloc", cudaMalloc((void **)&dw, nw * 4)) ||
        cuda_failed("cudaMalloc", cudaMalloc((void **)&dy, ny * 4)) ||
        cuda_failed("cudaMemcpy", cudaMemcpy(dx, hx, nx * 4,
                                             cudaMemcpyHostToDevice)) ||
        cuda_failed("cudaMemcpy", cudaMemcpy(dw, hw, nw * 4,
                                             cudaMemcpyHostToDevice)))
        goto out;
    cudnnCreateTensorDescriptor(&xd);
    cudnnCreateTensorDescriptor(&yd);
    cudnnCreateFilterDescriptor(&wd);
    cudnnCreateConvolutionDescriptor(&cd);
    cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, CN,
                               CC, CH, CW);
    cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, CN,
                               CK, CH, CW);
    cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, CK,
                               CC, CR, CR);
    cudnnSetConvolution2dDescriptor(cd, 1, 1, 1, 1, 1, 1,
                                    CUDNN_CROSS_CORRELATION,
                                    CUDNN_DATA_FLOAT);
    cudnnGetConvolutionForwardWorkspaceSize(dnn, xd, wd, cd, yd, algo,
                                            &ws_bytes);
    if (ws_bytes && cuda_failed("cudaMalloc", cudaMalloc(&ws, ws_bytes)))
        goto out;
    for (int i = 0; i < calls && st == CUDNN_STATUS_SUCCESS; i++)
        st = cudnnConvolutionForward(dnn, &one, xd, dx, wd, dw, cd, algo, ws,
                                     ws_bytes, &zero, yd, dy);
    if (st != CUDNN_STATUS_SUCCESS) {
        fprintf(stderr, EXAMPLE_PROG ": cudnnConvolutionForward failed: "
                "%s\n", cudnnGetErrorString(st));
        goto out;
    }
    if (cuda_failed("cudaMemcpy", cudaMemcpy(hy, dy, ny * 4,
                                             cudaMemcpyDeviceToHost)))
        goto out;
    *hash = hash_floats(hy, ny);
    rc = 0;
out:
    cudnnDestroyTensorDescriptor(xd);
    cudnnDestroyTensorDescriptor(yd);
    cudnnDestroyFilterDescriptor(wd);
    cudnnDestroyConvolutionDescriptor(cd);
    cudaFree(ws);
    cudaFree(dx);
    cudaFree(dw);
    cudaFree(dy);
    free(hx);
    free(hw);
    free(hy);
    return rc;
}

/* Prints the hash of a layer's C after `calls` calls. */
static int
print_layer(const char *name, const struct layer *l, int calls)
{
    size_t nc = (size_t)l->m * l->n;
    float *hc = malloc(nc * sizeof(float));
    int rc = -1;

    if (hc != NULL &&
        !cuda_failed("cudaMemcpy", cudaMemcpy(hc, l->c, nc * 4,
                                              cudaMemcpyDeviceToHost))) {
        printf("layer %s m=%d n=%d k=%d calls=%d hash=%016llx\n", name,
               l->m, l->n, l->k, calls,
               (unsigned long long)hash_floats(hc, nc));
        rc = 0;
    }
    free(hc);
    return rc;
}

/* Runs `calls` calls of one layer and prints the hash of its C. */
static int
run_layer(cublasHandle_t h, const char *name, struct layer *l,
          cublasStatus_t (*fn)(cublasHandle_t, const struct layer *),
          int calls)
{
    cublasStatus_t st = CUBLAS_STATUS_SUCCESS;

    for (int i = 0; i < calls && st == CUBLAS_STATUS_SUCCESS; i++)
        st = fn(h, l);
    if (cublas_failed("cublasSgemm_v2", st))
        return -1;
    return print_layer(name, l, calls);
}

/* The five shapes, `calls` rounds of one call each. */
static int
run_shapes(cublasHandle_t h, int calls)
{
    static const struct {
        const char *name;
        int m, n, k, cancelling;
        cublasStatus_t (*fn)(cublasHandle_t, const struct layer *);
    } shapes[] = {
        {"skinny", 8192, 64, 512, 0, skinny_layer},
        {"square", 768, 768, 768, 0, square_layer},
        {"long-k", 128, 128, 32768, 0, long_k_layer},
        {"tiny", 64, 64, 64, 0, tiny_projection},
        {"cancelling", 768, 768, 768, 1, cancelling_layer},
    };
    enum { NSHAPES = sizeof shapes / sizeof shapes[0] };
    struct layer l[NSHAPES];
    cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
    int i, made = 0, failed = 0;

    for (i = 0; i < NSHAPES && !failed; i++, made++)
        failed = layer_alloc(&l[i], shapes[i].m, shapes[i].n, shapes[i].k,
                             10 + (uint64_t)i, shapes[i].cancelling) != 0;
    /* Every round from this one loop: each layer is called from one
     * place, one call site (the shim keys a site by its call stack). */
    for (int round = 0; round < calls && !failed; round++)
        for (i = 0; i < NSHAPES && st == CUBLAS_STATUS_SUCCESS; i++)
            st = shapes[i].fn(h, &l[i]);
    failed = failed || cublas_failed("cublasSgemm_v2", st);
    /* Each layer's hash after the last round. */
    for (i = 0; i < NSHAPES && !failed; i++)
        failed = print_layer(shapes[i].name, &l[i], 1) != 0;
    for (i = 0; i < made; i++)
        layer_free(&l[i]);
    return failed;
}

int
main(int argc, char **argv)
{
    struct layer tiny, dense, cancel;
    cublasHandle_t handle;
    cudnnHandle_t dnn;
    uint64_t conv_hash = 0;
    int failed;

    if (argc == 3 && strcmp(argv[1], "shapes") == 0) {
        char *end;
        long calls = strtol(argv[2], &end, 10);

        if (*end || end == argv[2] || calls < 1 || calls > 1000000) {
            fprintf(stderr, "layer_mix: CALLS must be 1 to 1000000, not "
                    "'%s'\n", argv[2]);
            return EXIT_USAGE;
        }
        if (cublas_failed("cublasCreate_v2", cublasCreate_v2(&handle)))
            return EXIT_CUDA_ERROR;
        failed = run_shapes(handle, (int)calls);
        cublasDestroy_v2(handle);
        fflush(stdout);
        return failed ? EXIT_CUDA_ERROR : EXIT_ALL_PASS;
    }
    if (argc != 1) {
        fprintf(stderr, "usage: layer_mix [shapes CALLS]\n");
        return EXIT_USAGE;
    }
    if (cublas_failed("cublasCreate_v2", cublasCreate_v2(&handle)))
        return EXIT_CUDA_ERROR;
    if (cudnnCreate(&dnn) != CUDNN_STATUS_SUCCESS) {
        fprintf(stderr, EXAMPLE_PROG ": cudnnCreate failed\n");
        return EXIT_CUDA_ERROR;
    }
    failed = layer_alloc(&tiny, 64, 64, 64, 1, 0) != 0 ||
             layer_alloc(&dense, 1024, 1024, 1024, 2, 0) != 0 ||
             layer_alloc(&cancel, 2048, 1024, 1024, 3, 1) != 0;
    failed = failed ||
             run_layer(handle, "tiny", &tiny, tiny_projection, 4) != 0 ||
             run_layer(handle, "dense", &dense, dense_layer, 3) != 0 ||
             run_layer(handle, "cancelling", &cancel, cancelling_layer,
                       2) != 0 ||
             conv_layer(dnn, 3, &conv_hash) != 0;
    if (!failed)
        printf("layer conv calls=3 hash=%016llx\n",
               (unsigned long long)conv_hash);
    layer_free(&tiny);
    layer_free(&dense);
    layer_free(&cancel);
    cudnnDestroy(dnn);
    cublasDestroy_v2(handle);
    fflush(stdout);
    return failed ? EXIT_CUDA_ERROR : EXIT_ALL_PASS;
}
