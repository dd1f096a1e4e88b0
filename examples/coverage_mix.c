/* A program that mixes precisions, for the coverage meter: an FP32 SGEMM,
 * an FP32 SGEMM with alpha 0, a DGEMM, an HGEMM, a cublasGemmEx on half
 * operands with an FP32 C, an FP32 and a half (PSEUDO_HALF) convolution,
 * each of a known shape. Prints one line per call: its status and a hash
 * of its output's bytes, so that two runs compare bit for bit.
 *
 * FLOPs (2 m n k per GEMM, 2 per output element and reduction term per
 * convolution): SGEMM 64x32x16 65,536; SGEMM alpha 0 32x32x32 65,536;
 * DGEMM 48x40x24 92,160; HGEMM 32x16x64 65,536; GemmEx 16x16x32 16,384;
 * each convolution (x 1x4x8x8, w 8x4x3x3, pad 1) 36,864.
 *
 * --more: instead, a complex CGEMM 16x8x4 (8 m n k: 4,096 FLOPs), then an
 * SGEMM, a DGEMM and a CGEMM of the same shape that cuBLAS refuses (lda
 * 8, under m: INVALID_VALUE), which do no work.
 *
 * usage: coverage_mix [--more] */
#include <cublas_v2.h>
#include <cudnn.h>

#define EXAMPLE_PROG "coverage_mix"
#include "example_util.h"

/* The FP16 GEMM, which cublas_api.h declares for C++ only. */
cublasStatus_t cublasHgemm(cublasHandle_t handle, cublasOperation_t transa,
                           cublasOperation_t transb, int m, int n, int k,
                           const uint16_t *alpha, const uint16_t *A, int lda,
                           const uint16_t *B, int ldb, const uint16_t *beta,
                           uint16_t *C, int ldc);

/* v, a small multiple of 1/8 (exact in FP16), as FP16 bits. */
static uint16_t
half_of(float v)
{
    uint32_t u, exp, mant;

    memcpy(&u, &v, sizeof u);
    if ((u & 0x7fffffffu) == 0)
        return (uint16_t)(u >> 16);
    exp = ((u >> 23) & 0xffu) - 127u + 15u;
    mant = (u >> 13) & 0x3ffu;
    return (uint16_t)(((u >> 16) & 0x8000u) | (exp << 10) | mant);
}

/* Deterministic data: multiples of 1/8 between -1 and 1. */
static float
value_at(size_t i, unsigned seed)
{
    return (float)((int)((i * 7u + seed * 13u) % 17u) - 8) / 8.0f;
}

/* Copies `bytes` of the device result to the host and prints its hash. */
static int
report(const char *what, int status, const void *dev, size_t bytes)
{
    unsigned char *host = malloc(bytes);
    int failed = !host || cudaMemcpy(host, dev, bytes,
                                     cudaMemcpyDeviceToHost) != cudaSuccess;

    printf("%s status=%d hash=%016llx\n", what, status,
           failed ? 0ull : (unsigned long long)fnv1a64(
                                  host, bytes, 0xcbf29ce484222325ull));
    free(host);
    return failed || status != 0;
}

/* A device buffer of n elements of `size` bytes, filled from value_at. */
static void *
device_data(size_t n, size_t size, unsigned seed)
{
    unsigned char *host = malloc(n * size);
    void *dev = NULL;
    size_t i;

    if (!host)
        return NULL;
    for (i = 0; i < n; i++) {
        float f = value_at(i, seed);
        double d = f;
        uint16_t h = half_of(f);

        memcpy(host + i * size, size == 8 ? (void *)&d
                                : size == 4 ? (void *)&f : (void *)&h,
               size);
    }
    if (cudaMalloc(&dev, n * size) != cudaSuccess ||
        cudaMemcpy(dev, host, n * size, cudaMemcpyHostToDevice) !=
            cudaSuccess)
        dev = NULL;
    free(host);
    return dev;
}

static int
run_gemms(cublasHandle_t h)
{
    const float one = 1.0f, zero = 0.0f, half_beta = 0.5f;
    const double done = 1.0, dbeta = 0.5;
    const uint16_t hone = half_of(1.0f), hbeta = half_of(0.5f);
    void *sa = device_data(64 * 16, 4, 1), *sb = device_data(16 * 32, 4, 2);
    void *sc = device_data(64 * 32, 4, 3), *ea = device_data(32 * 32, 4, 4);
    void *eb = device_data(32 * 32, 4, 5), *ec = device_data(32 * 32, 4, 6);
    void *da = device_data(48 * 24, 8, 7), *db = device_data(24 * 40, 8, 8);
    void *dc = device_data(48 * 40, 8, 9), *ha = device_data(32 * 64, 2, 10);
    void *hb = device_data(64 * 16, 2, 11), *hc = device_data(32 * 16, 2, 12);
    void *xa = device_data(16 * 32, 2, 13), *xb = device_data(32 * 16, 2, 14);
    void *xc = device_data(16 * 16, 4, 15);
    int failed = 0;

    if (!sa || !sb || !sc || !ea || !eb || !ec || !da || !db || !dc || !ha ||
        !hb || !hc || !xa || !xb || !xc)
        return 1;
    failed |= report("sgemm 64x32x16", cublasSgemm_v2(h, CUBLAS_OP_N,
        CUBLAS_OP_N, 64, 32, 16, &one, sa, 64, sb, 16, &half_beta, sc, 64),
        sc, 64 * 32 * 4);
    failed |= report("sgemm_alpha0 32x32x32", cublasSgemm_v2(h, CUBLAS_OP_N,
        CUBLAS_OP_N, 32, 32, 32, &zero, ea, 32, eb, 32, &half_beta, ec, 32),
        ec, 32 * 32 * 4);
    failed |= report("dgemm 48x40x24", cublasDgemm_v2(h, CUBLAS_OP_N,
        CUBLAS_OP_N, 48, 40, 24, &done, da, 48, db, 24, &dbeta, dc, 48),
        dc, 48 * 40 * 8);
    failed |= report("hgemm 32x16x64", cublasHgemm(h, CUBLAS_OP_N,
        CUBLAS_OP_N, 32, 16, 64, &hone, ha, 32, hb, 64, &hbeta, hc, 32),
        hc, 32 * 16 * 2);
    failed |= report("gemmex_half 16x16x32", cublasGemmEx(h, CUBLAS_OP_N,
        CUBLAS_OP_N, 16, 16, 32, &one, xa, CUDA_R_16F, 16, xb, CUDA_R_16F,
        32, &half_beta, xc, CUDA_R_32F, 16, CUBLAS_COMPUTE_32F,
        CUBLAS_GEMM_DEFAULT), xc, 16 * 16 * 4);
    return failed;
}

/* --more's calls: the complex GEMM, then the three refused ones, whose
 * status must be INVALID_VALUE and whose C must stay as it was. */
static int
run_more(cublasHandle_t h)
{
    const cuComplex cone = {1.0f, 0.0f}, cbeta = {0.5f, 0.0f};
    const float one = 1.0f, half_beta = 0.5f;
    const double done = 1.0, dbeta = 0.5;
    /* Complex elements as pairs of floats. */
    void *ca = device_data(2 * 16 * 4, 4, 30);
    void *cb = device_data(2 * 4 * 8, 4, 31);
    void *cc = device_data(2 * 16 * 8, 4, 32);
    void *sa = device_data(16 * 4, 4, 33), *sb = device_data(4 * 8, 4, 34);
    void *sc = device_data(16 * 8, 4, 35);
    void *da = device_data(16 * 4, 8, 36), *db = device_data(4 * 8, 8, 37);
    void *dc = device_data(16 * 8, 8, 38);
    int failed = 0, st;

    if (!ca || !cb || !cc || !sa || !sb || !sc || !da || !db || !dc)
        return 1;
    failed |= report("cgemm 16x8x4", cublasCgemm_v2(h, CUBLAS_OP_N,
        CUBLAS_OP_N, 16, 8, 4, &cone, ca, 16, cb, 4, &cbeta, cc, 16),
        cc, 16 * 8 * 8);
    st = cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 16, 8, 4, &one, sa, 8,
                        sb, 4, &half_beta, sc, 16);
    report("sgemm_bad_lda 16x8x4", st, sc, 16 * 8 * 4);
    failed |= st != CUBLAS_STATUS_INVALID_VALUE;
    st = cublasDgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 16, 8, 4, &done, da, 8,
                        db, 4, &dbeta, dc, 16);
    report("dgemm_bad_lda 16x8x4", st, dc, 16 * 8 * 8);
    failed |= st != CUBLAS_STATUS_INVALID_VALUE;
    st = cublasCgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 16, 8, 4, &cone, ca, 8,
                        cb, 4, &cbeta, cc, 16);
    report("cgemm_bad_lda 16x8x4", st, cc, 16 * 8 * 8);
    failed |= st != CUBLAS_STATUS_INVALID_VALUE;
    return failed;
}

/* A forward convolution x 1x4x8x8, w 8x4x3x3, pad 1, of `type` data
 * (half: PSEUDO_HALF, float compute). */
static int
run_conv(cudnnHandle_t h, cudnnDataType_t type, const char *what)
{
    size_t size = type == CUDNN_DATA_HALF ? 2 : 4, ws_bytes = 0;
    const float one = 1.0f, zero = 0.0f;
    void *x = device_data(4 * 8 * 8, size, 20);
    void *w = device_data(8 * 4 * 3 * 3, size, 21);
    void *y = device_data(8 * 8 * 8, size, 22), *ws = NULL;
    cudnnTensorDescriptor_t xd, yd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
    int status;

    if (!x || !w || !y)
        return 1;
    cudnnCreateTensorDescriptor(&xd);
    cudnnCreateTensorDescriptor(&yd);
    cudnnCreateFilterDescriptor(&wd);
    cudnnCreateConvolutionDescriptor(&cd);
    cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, type, 1, 4, 8, 8);
    cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NCHW, type, 1, 8, 8, 8);
    cudnnSetFilter4dDescriptor(wd, type, CUDNN_TENSOR_NCHW, 8, 4, 3, 3);
    cudnnSetConvolution2dDescriptor(cd, 1, 1, 1, 1, 1, 1,
                                    CUDNN_CROSS_CORRELATION,
                                    CUDNN_DATA_FLOAT);
    cudnnGetConvolutionForwardWorkspaceSize(h, xd, wd, cd, yd, algo,
                                            &ws_bytes);
    if (ws_bytes && cudaMalloc(&ws, ws_bytes) != cudaSuccess)
        return 1;
    status = (int)cudnnConvolutionForward(h, &one, xd, x, wd, w, cd, algo,
                                          ws, ws_bytes, &zero, yd, y);
    return report(what, status, y, 8 * 8 * 8 * size);
}

int
main(int argc, char **argv)
{
    cublasHandle_t blas;
    cudnnHandle_t dnn;
    int failed, more = argc == 2 && strcmp(argv[1], "--more") == 0;

    if (argc > 2 || (argc == 2 && !more)) {
        fprintf(stderr, "usage: " EXAMPLE_PROG " [--more]\n");
        return EXIT_USAGE;
    }
    if (cublasCreate_v2(&blas) != CUBLAS_STATUS_SUCCESS ||
        cudnnCreate(&dnn) != CUDNN_STATUS_SUCCESS) {
        fprintf(stderr, EXAMPLE_PROG ": no cuBLAS or cuDNN handle\n");
        return EXIT_CUDA_ERROR;
    }
    if (more) {
        failed = run_more(blas);
    } else {
        failed = run_gemms(blas);
        failed |= run_conv(dnn, CUDNN_DATA_FLOAT,
                           "conv_fp32 1x4x8x8 8x4x3x3");
        failed |= run_conv(dnn, CUDNN_DATA_HALF, "conv_half 1x4x8x8 8x4x3x3");
    }
    cudaDeviceSynchronize();
    cudnnDestroy(dnn);
    cublasDestroy_v2(blas);
    return failed ? EXIT_CHECK_FAILED : EXIT_ALL_PASS;
}
