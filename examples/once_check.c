/* once_check: an FP32 program that makes each of its products once, as a
 * test, a benchmark or a one-shot solver does: SGEMMs through
 * cublasSgemm_v2, cublasSgemmBatched (pointer arrays) and
 * cublasSgemmStridedBatched, cuBLASLt products (a bias epilogue, an
 * in-place C == D, a GELU with its auxiliary output) and legacy cuDNN
 * forward convolutions, each of a shape of its own, checked element by
 * element against a double-precision reference with the tolerance named
 * on the command line (fp32, tf32, fp16, bf16 or a number: the factor of
 * the bound per element).
 *
 * usage: once_check TOLERANCE
 *
 * Prints one line per call, then "result: ...":
 * case NAME m=M n=N k=K op=OPS status=NAME(N) err/bound=R hash=H ok|FAIL
 *      api=API
 * (a convolution: m its output elements, n 1, k its reduction length; the
 * hash is of the output's bytes, the auxiliary output's after D's), and
 * exits 0 when every call is within its bound. */
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cudnn.h>

#define EXAMPLE_PROG "once_check"
#include "example_util.h"

#include <inttypes.h>

#define N CUBLAS_OP_N
#define T CUBLAS_OP_T

/* What one call gave: its status, the worst error / bound, the hash. */
struct outcome {
    int status;
    const char *status_name;
    double worst;
    uint64_t hash;
};

static void
print_case(const char *name, long m, int n, int k, const char *ops,
           const char *api, const struct outcome *o, int *failed)
{
    int ok = o->status == 0 && o->worst <= 1.0;

    printf("case %s m=%ld n=%d k=%d op=%s status=%s(%d) err/bound=%.3e "
           "hash=%016" PRIx64 " %s api=%s\n", name, m, n, k, ops,
           o->status_name, o->status, o->worst, o->hash, ok ? "ok" : "FAIL",
           api);
    *failed += !ok;
}

/* ---- cuBLAS ----------------------------------------------------------- */

enum gemm_api { SGEMM, BATCHED, STRIDED };
static const char *const gemm_api_names[] = {
    "cublasSgemm_v2", "cublasSgemmBatched", "cublasSgemmStridedBatched",
};

struct gcase {
    const char *name;
    enum gemm_api api;
    int m, n, k, batch;
    cublasOperation_t ta, tb;
    float alpha, beta;
};

static const struct gcase gemm_cases[] = {
    {"sgemm_nn", SGEMM, 64, 48, 96, 1, N, N, 1.0f, 0.0f},
    {"sgemm_tn_beta", SGEMM, 40, 36, 80, 1, T, N, 0.75f, 0.5f},
    {"sgemm_nt", SGEMM, 24, 56, 128, 1, N, T, 1.0f, 0.0f},
    {"batched_arrays", BATCHED, 32, 24, 64, 3, N, N, 1.0f, 0.25f},
    {"strided", STRIDED, 16, 20, 72, 2, T, T, 1.25f, 0.0f},
};

/* One product, each matrix of the batch on its own: A m x k (op), B k x n,
 * C m x n, compact. */
static int
run_gemm(cublasHandle_t h, const struct gcase *tc, double tol_k,
         uint64_t seed)
{
    int m = tc->m, n = tc->n, k = tc->k, batch = tc->batch;
    int lda = tc->ta == N ? m : k, ldb = tc->tb == N ? k : n;
    size_t sa = (size_t)m * k, sb = (size_t)k * n, sc = (size_t)m * n;
    float *a = host_data(sa * batch, &seed), *b = host_data(sb * batch, &seed);
    float *c0 = host_data(sc * batch, &seed), *c = malloc(sc * batch * 4);
    float *da = device_copy(a, sa * batch * 4);
    float *db = device_copy(b, sb * batch * 4);
    float *dc = device_copy(c0, sc * batch * 4);
    void **ptrs = NULL;
    struct outcome o = {0};
    char ops[3] = {tc->ta == N ? 'N' : 'T', tc->tb == N ? 'N' : 'T', 0};
    cublasStatus_t s = CUBLAS_STATUS_INTERNAL_ERROR;
    int failed = 0;

    if (!a || !b || !c0 || !c || !da || !db || !dc)
        goto done;
    switch (tc->api) {
    case SGEMM:
        s = cublasSgemm_v2(h, tc->ta, tc->tb, m, n, k, &tc->alpha, da, lda,
                           db, ldb, &tc->beta, dc, m);
        break;
    case BATCHED: {
        void *host_ptrs[3 * 8];

        for (int i = 0; i < batch; i++) {
            host_ptrs[i] = da + sa * i;
            host_ptrs[batch + i] = db + sb * i;
            host_ptrs[2 * batch + i] = dc + sc * i;
        }
        ptrs = device_copy(host_ptrs, 3 * (size_t)batch * sizeof(void *));
        if (!ptrs)
            goto done;
        s = cublasSgemmBatched(h, tc->ta, tc->tb, m, n, k, &tc->alpha,
                               (const float *const *)ptrs, lda,
                               (const float *const *)(ptrs + batch), ldb,
                               &tc->beta, (float *const *)(ptrs + 2 * batch),
                               m, batch);
        break;
    }
    case STRIDED:
        s = cublasSgemmStridedBatched(h, tc->ta, tc->tb, m, n, k, &tc->alpha,
                                      da, lda, (long long)sa, db, ldb,
                                      (long long)sb, &tc->beta, dc, m,
                                      (long long)sc, batch);
        break;
    }
    if (s == CUBLAS_STATUS_SUCCESS &&
        cudaMemcpy(c, dc, sc * batch * 4, cudaMemcpyDeviceToHost) !=
            cudaSuccess)
        s = CUBLAS_STATUS_INTERNAL_ERROR;
    if (s != CUBLAS_STATUS_SUCCESS)
        goto done;
    for (int i = 0; i < batch; i++) {
        struct operand_view va = {a + sa * i, lda, tc->ta != N};
        struct operand_view vb = {b + sb * i, ldb, tc->tb != N};

        for (int col = 0; col < n; col++)
            for (int row = 0; row < m; row++) {
                size_t at = sc * i + (size_t)col * m + row;
                double r = gemm_element_ratio(&va, &vb, row, col, k,
                                              tc->alpha, tc->beta, c0[at],
                                              c[at], tol_k);
                if (r > o.worst)
                    o.worst = r;
            }
    }
    o.hash = fnv1a64(c, sc * batch * 4, 0xcbf29ce484222325ull);
done:
    o.status = (int)s;
    o.status_name = cublas_status_name(s);
    print_case(tc->name, m, n, k, ops, gemm_api_names[tc->api], &o, &failed);
    cudaFree(ptrs);
    cudaFree(da);
    cudaFree(db);
    cudaFree(dc);
    free(a);
    free(b);
    free(c0);
    free(c);
    return failed;
}

/* ---- cuBLASLt --------------------------------------------------------- */

#define IN_PLACE 1u

struct lcase {
    const char *name;
    int m, n, k;
    cublasOperation_t ta, tb;
    cublasLtEpilogue_t epilogue;
    float beta;
    unsigned flags;
};

static const struct lcase lt_cases[] = {
    {"lt_default", 64, 32, 128, N, N, CUBLASLT_EPILOGUE_DEFAULT, 0.0f, 0},
    {"lt_bias", 48, 40, 64, T, N, CUBLASLT_EPILOGUE_BIAS, 1.0f, 0},
    {"lt_in_place", 32, 40, 96, N, T, CUBLASLT_EPILOGUE_DEFAULT, 0.5f,
     IN_PLACE},
    {"lt_gelu_aux_bias", 40, 24, 80, N, N, CUBLASLT_EPILOGUE_GELU_AUX_BIAS,
     0.0f, 0},
};

static double
gelu(double x)
{
    return 0.5 * x *
           (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

static cublasLtMatrixLayout_t
lt_layout(int rows, int cols)
{
    cublasLtMatrixLayout_t l = NULL;

    return cublasLtMatrixLayoutCreate(&l, CUDA_R_32F, (uint64_t)rows,
                                      (uint64_t)cols, rows) ==
                   CUBLAS_STATUS_SUCCESS
               ? l
               : NULL;
}

/* The program's own workspace, as frameworks give one. */
#define LT_WORKSPACE ((size_t)1 << 20)

static int
run_lt(cublasLtHandle_t lt, const struct lcase *tc, double tol_k,
       uint64_t seed)
{
    int m = tc->m, n = tc->n, k = tc->k, in_place = tc->flags & IN_PLACE;
    int gelu_aux = tc->epilogue == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
    int bias = gelu_aux || tc->epilogue == CUBLASLT_EPILOGUE_BIAS;
    int lda = tc->ta == N ? m : k, ldb = tc->tb == N ? k : n;
    size_t sa = (size_t)m * k, sb = (size_t)k * n, sc = (size_t)m * n;
    float *a = host_data(sa, &seed), *b = host_data(sb, &seed);
    float *c0 = host_data(sc, &seed), *hbias = host_data((size_t)m, &seed);
    float *d = malloc(sc * 4 * 2); /* D, then the auxiliary output */
    float *da = device_copy(a, sa * 4), *db = device_copy(b, sb * 4);
    float *dc = device_copy(c0, sc * 4), *dd = in_place ? dc
                                                        : device_copy(NULL,
                                                                      sc * 4);
    float *dbias = device_copy(hbias, (size_t)m * 4);
    float *daux = gelu_aux ? device_copy(NULL, sc * 4) : NULL;
    void *work = device_copy(NULL, LT_WORKSPACE);
    const float alpha = 1.0f;
    cublasLtMatmulDesc_t op = NULL;
    cublasLtMatrixLayout_t la = lt_layout(lda, tc->ta == N ? k : m);
    cublasLtMatrixLayout_t lb = lt_layout(ldb, tc->tb == N ? n : k);
    cublasLtMatrixLayout_t lc = lt_layout(m, n);
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t heur;
    uint64_t ws = LT_WORKSPACE;
    int64_t aux_ld = m;
    int32_t ta = tc->ta, tb = tc->tb;
    uint32_t epi = tc->epilogue;
    int count = 0, failed = 0;
    struct outcome o = {0};
    char ops[3] = {tc->ta == N ? 'N' : 'T', tc->tb == N ? 'N' : 'T', 0};
    cublasStatus_t s = CUBLAS_STATUS_INTERNAL_ERROR;

    if (!a || !b || !c0 || !hbias || !d || !da || !db || !dc || !dd ||
        !dbias || (gelu_aux && !daux) || !work || !la || !lb || !lc ||
        cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F) !=
            CUBLAS_STATUS_SUCCESS)
        goto done;
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta,
                                   sizeof(ta));
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb,
                                   sizeof(tb));
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi,
                                   sizeof(epi));
    if (bias)
        cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                       &dbias, sizeof(dbias));
    if (gelu_aux) {
        cublasLtMatmulDescSetAttribute(
            op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &daux,
            sizeof(daux));
        cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD,
                                       &aux_ld, sizeof(aux_ld));
    }
    cublasLtMatmulPreferenceCreate(&pref);
    cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
    s = cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 1, &heur,
                                       &count);
    if (s == CUBLAS_STATUS_SUCCESS && count < 1)
        s = CUBLAS_STATUS_NOT_SUPPORTED;
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmul(lt, op, &alpha, da, la, db, lb, &tc->beta, dc, lc,
                           dd, lc, &heur.algo, work, LT_WORKSPACE, 0);
    if (s == CUBLAS_STATUS_SUCCESS &&
        (cudaMemcpy(d, dd, sc * 4, cudaMemcpyDeviceToHost) != cudaSuccess ||
         (daux && cudaMemcpy(d + sc, daux, sc * 4, cudaMemcpyDeviceToHost) !=
                      cudaSuccess)))
        s = CUBLAS_STATUS_INTERNAL_ERROR;
    if (s != CUBLAS_STATUS_SUCCESS)
        goto done;
    for (int col = 0; col < n; col++)
        for (int row = 0; row < m; row++) {
            size_t at = (size_t)col * m + row;
            double sum = 0.0, mag = 0.0, pre, bound, r;

            for (int l = 0; l < k; l++) {
                double x = (double)(tc->ta == N ? a[(size_t)l * lda + row]
                                                : a[(size_t)row * lda + l]) *
                           (tc->tb == N ? b[(size_t)col * ldb + l]
                                        : b[(size_t)l * ldb + col]);
                sum += x;
                mag += fabs(x);
            }
            pre = alpha * sum + (double)tc->beta * c0[at];
            bound = mag + fabs((double)tc->beta * c0[at]);
            if (bias) {
                pre += hbias[row];
                bound += fabs((double)hbias[row]);
            }
            bound *= tol_k;
            /* GELU's slope is below 1.13 in magnitude. */
            r = gelu_aux ? element_ratio(d[at], gelu(pre), 1.13 * bound)
                         : element_ratio(d[at], pre, bound);
            if (r > o.worst)
                o.worst = r;
            if (gelu_aux && (r = element_ratio(d[sc + at], pre, bound)) >
                                o.worst)
                o.worst = r;
        }
    o.hash = fnv1a64(d, sc * 4 * (gelu_aux ? 2 : 1), 0xcbf29ce484222325ull);
done:
    o.status = (int)s;
    o.status_name = cublas_status_name(s);
    print_case(tc->name, m, n, k, ops, "cublasLtMatmul", &o, &failed);
    lt_descs_destroy(pref, op, la, lb, lc);
    cudaFree(da);
    cudaFree(db);
    cudaFree(dc);
    if (!in_place)
        cudaFree(dd);
    cudaFree(dbias);
    cudaFree(daux);
    cudaFree(work);
    free(a);
    free(b);
    free(c0);
    free(hbias);
    free(d);
    return failed;
}

/* ---- cuDNN ------------------------------------------------------------ */

struct ccase {
    const char *name;
    int n, c, h, w, k, r, s, pad, stride;
    float beta;
};

static const struct ccase conv_cases[] = {
    {"conv_pad", 2, 8, 10, 10, 16, 3, 3, 1, 1, 0.0f},
    {"conv_stride_beta", 1, 4, 9, 9, 8, 3, 3, 0, 2, 0.5f},
};

/* The bound's factor per element for a convolution: a half output
 * (PSEUDO_HALF) rounds once more. */
static double
conv_tol(const struct tolerance *tol, int len)
{
    switch (tol->kind) {
    case TOL_FP16: return tol_factor(tol, len) + 0x1p-11;
    case TOL_BF16: return tol_factor(tol, len) + 0x1p-8;
    default: return tol_factor(tol, len);
    }
}

static int
run_conv(cudnnHandle_t dnn, const struct ccase *tc,
         const struct tolerance *tol, uint64_t seed)
{
    int p = (tc->h + 2 * tc->pad - tc->r) / tc->stride + 1;
    int q = (tc->w + 2 * tc->pad - tc->s) / tc->stride + 1;
    int len = tc->c * tc->r * tc->s;
    size_t nx = (size_t)tc->n * tc->c * tc->h * tc->w;
    size_t nw = (size_t)tc->k * len, ny = (size_t)tc->n * tc->k * p * q;
    float *x = host_data(nx, &seed), *w = host_data(nw, &seed);
    float *y0 = host_data(ny, &seed), *y = malloc(ny * 4);
    float *dx = device_copy(x, nx * 4), *dw = device_copy(w, nw * 4);
    float *dy = device_copy(y0, ny * 4);
    const float alpha = 1.0f;
    cudnnTensorDescriptor_t xd = NULL, yd = NULL;
    cudnnFilterDescriptor_t wd = NULL;
    cudnnConvolutionDescriptor_t cd = NULL;
    cudnnConvolutionFwdAlgoPerf_t perf[8];
    int returned = 0, failed = 0;
    size_t ws_bytes = 0;
    void *ws = NULL;
    struct outcome o = {0};
    cudnnStatus_t s = CUDNN_STATUS_INTERNAL_ERROR;

    if (!x || !w || !y0 || !y || !dx || !dw || !dy ||
        cudnnCreateTensorDescriptor(&xd) != CUDNN_STATUS_SUCCESS ||
        cudnnCreateTensorDescriptor(&yd) != CUDNN_STATUS_SUCCESS ||
        cudnnCreateFilterDescriptor(&wd) != CUDNN_STATUS_SUCCESS ||
        cudnnCreateConvolutionDescriptor(&cd) != CUDNN_STATUS_SUCCESS)
        goto done;
    cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, tc->n,
                               tc->c, tc->h, tc->w);
    cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, tc->n,
                               tc->k, p, q);
    cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, tc->k,
                               tc->c, tc->r, tc->s);
    cudnnSetConvolution2dDescriptor(cd, tc->pad, tc->pad, tc->stride,
                                    tc->stride, 1, 1,
                                    CUDNN_CROSS_CORRELATION,
                                    CUDNN_DATA_FLOAT);
    s = cudnnGetConvolutionForwardAlgorithm_v7(dnn, xd, wd, cd, yd, 8,
                                               &returned, perf);
    if (s == CUDNN_STATUS_SUCCESS && returned < 1)
        s = CUDNN_STATUS_NOT_SUPPORTED;
    if (s == CUDNN_STATUS_SUCCESS)
        s = cudnnGetConvolutionForwardWorkspaceSize(dnn, xd, wd, cd, yd,
                                                    perf[0].algo, &ws_bytes);
    if (s == CUDNN_STATUS_SUCCESS && ws_bytes &&
        cudaMalloc(&ws, ws_bytes) != cudaSuccess)
        s = CUDNN_STATUS_ALLOC_FAILED;
    if (s == CUDNN_STATUS_SUCCESS)
        s = cudnnConvolutionForward(dnn, &alpha, xd, dx, wd, dw, cd,
                                    perf[0].algo, ws, ws_bytes, &tc->beta, yd,
                                    dy);
    if (s == CUDNN_STATUS_SUCCESS &&
        cudaMemcpy(y, dy, ny * 4, cudaMemcpyDeviceToHost) != cudaSuccess)
        s = CUDNN_STATUS_INTERNAL_ERROR;
    if (s != CUDNN_STATUS_SUCCESS)
        goto done;
    for (size_t at = 0; at < ny; at++) {
        int oq = (int)(at % (size_t)q), op = (int)(at / q % (size_t)p);
        int ko = (int)(at / ((size_t)p * q) % (size_t)tc->k);
        int on = (int)(at / ((size_t)p * q * tc->k));
        double sum = 0.0, mag = 0.0, r;

        for (int ci = 0; ci < tc->c; ci++)
            for (int ri = 0; ri < tc->r; ri++)
                for (int si = 0; si < tc->s; si++) {
                    int hi = op * tc->stride - tc->pad + ri;
                    int wi = oq * tc->stride - tc->pad + si;
                    double v;

                    if (hi < 0 || hi >= tc->h || wi < 0 || wi >= tc->w)
                        continue;
                    v = (double)x[(((size_t)on * tc->c + ci) * tc->h + hi) *
                                      tc->w + wi] *
                        w[(((size_t)ko * tc->c + ci) * tc->r + ri) * tc->s +
                          si];
                    sum += v;
                    mag += fabs(v);
                }
        r = element_ratio(y[at], alpha * sum + (double)tc->beta * y0[at],
                          (mag + fabs((double)tc->beta * y0[at])) *
                              conv_tol(tol, len));
        if (r > o.worst)
            o.worst = r;
    }
    o.hash = fnv1a64(y, ny * 4, 0xcbf29ce484222325ull);
done:
    o.status = (int)s;
    o.status_name = s == CUDNN_STATUS_SUCCESS ? "CUDNN_STATUS_SUCCESS"
                                              : "CUDNN_STATUS_FAILED";
    print_case(tc->name, (long)ny, 1, len, "NN", "cudnnConvolutionForward",
               &o, &failed);
    if (xd)
        cudnnDestroyTensorDescriptor(xd);
    if (yd)
        cudnnDestroyTensorDescriptor(yd);
    if (wd)
        cudnnDestroyFilterDescriptor(wd);
    if (cd)
        cudnnDestroyConvolutionDescriptor(cd);
    cudaFree(ws);
    cudaFree(dx);
    cudaFree(dw);
    cudaFree(dy);
    free(x);
    free(w);
    free(y0);
    free(y);
    return failed;
}

int
main(int argc, char **argv)
{
    struct tolerance tol;
    cublasHandle_t blas;
    cublasLtHandle_t lt;
    cudnnHandle_t dnn;
    int failed = 0, calls = 0;
    size_t i;

    if (argc != 2 || tol_parse(argv[1], &tol) != 0) {
        fprintf(stderr, "usage: once_check fp32|tf32|fp16|bf16|X\n");
        return EXIT_USAGE;
    }
    if (cublasCreate_v2(&blas) != CUBLAS_STATUS_SUCCESS ||
        cublasLtCreate(&lt) != CUBLAS_STATUS_SUCCESS ||
        cudnnCreate(&dnn) != CUDNN_STATUS_SUCCESS) {
        fprintf(stderr, EXAMPLE_PROG ": no cuBLAS, cuBLASLt or cuDNN "
                "handle\n");
        return EXIT_CUDA_ERROR;
    }
    for (i = 0; i < sizeof(gemm_cases) / sizeof(gemm_cases[0]); i++, calls++)
        failed += run_gemm(blas, &gemm_cases[i],
                           tol_factor(&tol, gemm_cases[i].k), 0x1000u + i);
    for (i = 0; i < sizeof(lt_cases) / sizeof(lt_cases[0]); i++, calls++)
        failed += run_lt(lt, &lt_cases[i], tol_factor(&tol, lt_cases[i].k),
                         0x2000u + i);
    for (i = 0; i < sizeof(conv_cases) / sizeof(conv_cases[0]); i++, calls++)
        failed += run_conv(dnn, &conv_cases[i], &tol, 0x3000u + i);
    printf("result: %d of %d calls within the bound\n", calls - failed,
           calls);
    cudnnDestroy(dnn);
    cublasLtDestroy(lt);
    cublasDestroy_v2(blas);
    return failed ? EXIT_CHECK_FAILED : EXIT_ALL_PASS;
}
