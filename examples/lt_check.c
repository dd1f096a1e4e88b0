/* lt_check: FP32 matrix products through cublasLtMatmul, as frameworks
 * make them, checked against a double-precision CPU reference: every
 * forward epilogue (bias, ReLU and GELU, with their auxiliary outputs),
 * column- and row-major matrices, strided batches, every pointer mode,
 * an in-place C == D, beta == 0 over a C full of NaN, wide-range and huge
 * inputs, descriptors initialised on the stack and again in place, the
 * algorithm from the heuristics, from a search of the program's own
 * (cublasLtMatmulAlgoGetIds, AlgoInit, split-K configured by hand,
 * AlgoCheck) or none; with --reuse, one set of descriptor objects in
 * calls whose other arguments vary. Prints one line per case (or call)
 * and exits 0 when every case is within the tolerance. */
#define EXAMPLE_PROG "lt_check"

#include <cublasLt.h>
#include <cublas_v2.h>

#include "example_util.h"

#include <inttypes.h>

#define IN_PLACE 1u   /* D is C */
#define NAN_C 2u      /* beta 0 over a C of NaN (C never read) */
#define WIDE 4u       /* magnitudes 2^-12 .. 2^12 */
#define HUGE 8u       /* A near 2^100, B near 2^-90: beyond FP16 */
#define STACK 16u     /* descriptors on the stack, initialised again */
#define NO_ALGO 32u   /* no algorithm: cuBLASLt's own heuristics */
#define SEARCH 64u    /* the algorithm API: split-K of 3, checked */

#define ROW CUBLASLT_ORDER_ROW
#define COL CUBLASLT_ORDER_COL
#define HOST CUBLASLT_POINTER_MODE_HOST
#define DEV CUBLASLT_POINTER_MODE_DEVICE
#define DEV_VEC CUBLASLT_POINTER_MODE_DEVICE_VECTOR
#define VEC_ZERO CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_ZERO
#define VEC_HOST CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_HOST

struct lcase {
    const char *name;
    int m, n, k;
    cublasOperation_t ta, tb;
    cublasLtOrder_t order_a, order_b, order_cd;
    int batch;
    cublasLtEpilogue_t epilogue;
    cublasLtPointerMode_t pmode;
    float alpha, beta;
    unsigned flags;
};

#define N CUBLAS_OP_N
#define T CUBLAS_OP_T
#define E(x) CUBLASLT_EPILOGUE_##x

static const struct lcase cases[] = {
    {"default", 96, 80, 72, N, N, COL, COL, COL, 1, E(DEFAULT), HOST, 1.0f,
     0.0f, 0},
    {"default_beta", 64, 48, 40, T, N, COL, COL, COL, 1, E(DEFAULT), HOST,
     0.75f, -0.5f, 0},
    {"bias", 128, 64, 96, N, T, COL, COL, COL, 1, E(BIAS), HOST, 1.0f, 0.0f,
     0},
    {"relu", 72, 56, 64, N, N, COL, COL, COL, 1, E(RELU), HOST, 1.0f, 0.5f,
     0},
    {"relu_aux", 130, 40, 48, N, N, COL, COL, COL, 1, E(RELU_AUX), HOST,
     1.0f, 0.0f, 0},
    {"relu_bias", 96, 72, 128, T, T, COL, COL, COL, 1, E(RELU_BIAS), HOST,
     1.0f, 0.0f, 0},
    {"relu_aux_bias", 64, 64, 64, N, T, COL, COL, COL, 1, E(RELU_AUX_BIAS),
     HOST, 1.5f, 0.25f, 0},
    {"gelu", 80, 48, 56, N, N, COL, COL, COL, 1, E(GELU), HOST, 1.0f, 0.0f,
     0},
    {"gelu_aux", 72, 40, 64, T, N, COL, COL, COL, 1, E(GELU_AUX), HOST, 1.0f,
     1.0f, 0},
    {"gelu_bias", 64, 96, 48, N, N, COL, COL, COL, 1, E(GELU_BIAS), HOST,
     1.0f, 0.0f, 0},
    {"gelu_aux_bias", 96, 32, 80, N, T, COL, COL, COL, 1, E(GELU_AUX_BIAS),
     HOST, 0.5f, 0.0f, 0},
    {"row_default", 64, 72, 48, N, N, ROW, ROW, ROW, 1, E(DEFAULT), HOST,
     1.0f, 0.5f, 0},
    {"row_mixed", 56, 40, 96, T, N, ROW, COL, ROW, 1, E(BIAS), HOST, 1.0f,
     0.0f, 0},
    {"row_relu", 48, 64, 32, N, T, COL, ROW, ROW, 1, E(RELU), HOST, 1.0f,
     0.0f, 0},
    {"batched", 48, 40, 56, N, N, COL, COL, COL, 4, E(DEFAULT), HOST, 1.0f,
     0.5f, 0},
    {"batched_bias_relu_aux", 64, 32, 40, T, N, COL, COL, COL, 3,
     E(RELU_AUX_BIAS), HOST, 1.0f, 0.0f, 0},
    {"batched_row", 40, 48, 64, N, T, ROW, ROW, ROW, 3, E(DEFAULT), HOST,
     1.0f, 1.0f, 0},
    {"device_scalars", 80, 64, 72, N, N, COL, COL, COL, 1, E(BIAS), DEV,
     1.25f, 0.5f, 0},
    {"device_vector", 64, 48, 40, N, N, COL, COL, COL, 1, E(DEFAULT),
     DEV_VEC, 1.0f, 0.5f, 0},
    {"alpha_vector_beta_zero", 64, 40, 48, N, N, COL, COL, COL, 1,
     E(DEFAULT), VEC_ZERO, 1.0f, 0.0f, 0},
    {"alpha_vector_beta_host", 48, 40, 56, T, N, COL, COL, COL, 2,
     E(DEFAULT), VEC_HOST, 1.0f, 0.5f, 0},
    {"alpha_vector_tiny", 64, 32, 48, N, N, COL, COL, COL, 1, E(DEFAULT),
     VEC_ZERO, 1e-37f, 0.0f, 0},
    {"row_vector", 40, 56, 64, N, T, ROW, ROW, ROW, 2, E(DEFAULT), DEV_VEC,
     0.75f, -0.5f, 0},
    {"vector_in_place", 64, 48, 72, N, N, COL, COL, COL, 1, E(RELU_BIAS),
     VEC_HOST, 1.0f, 1.0f, IN_PLACE},
    {"in_place", 96, 64, 80, N, N, COL, COL, COL, 1, E(RELU_BIAS), HOST,
     1.0f, 0.75f, IN_PLACE},
    {"in_place_device", 64, 64, 96, N, T, COL, COL, COL, 2, E(DEFAULT), DEV,
     1.0f, 1.0f, IN_PLACE},
    {"in_place_beta_zero", 72, 48, 64, N, N, COL, COL, COL, 1, E(GELU_AUX),
     HOST, 1.0f, 0.0f, IN_PLACE},
    {"beta_zero_nan_c", 64, 56, 72, N, N, COL, COL, COL, 1, E(BIAS), HOST,
     1.0f, 0.0f, NAN_C},
    {"beta_zero_nan_c_device", 64, 56, 72, T, N, COL, COL, COL, 1,
     E(DEFAULT), DEV, 1.0f, 0.0f, NAN_C},
    {"wide_range", 96, 96, 128, N, N, COL, COL, COL, 1, E(DEFAULT), HOST,
     1.0f, 0.5f, WIDE},
    {"huge", 64, 64, 64, N, T, COL, COL, COL, 1, E(RELU_BIAS), HOST, 1.0f,
     0.0f, HUGE},
    {"stack_reinit", 64, 48, 56, N, N, COL, COL, COL, 1, E(RELU), HOST, 1.0f,
     0.0f, STACK},
    {"no_algo", 80, 72, 64, N, N, COL, COL, COL, 1, E(GELU_BIAS), HOST, 1.0f,
     0.0f, NO_ALGO},
    {"algo_search", 64, 48, 192, N, T, COL, COL, COL, 1, E(BIAS), HOST, 1.0f,
     0.25f, SEARCH},
};
#define NCASES ((int)(sizeof(cases) / sizeof(cases[0])))

/* --relayout: each product of one problem (neither in place nor
 * batched) is made first with A's leading dimension 8 larger on the same
 * layout object, which is then set back in place: the checked product
 * must read A as the layout now says. */
static int relayout;

/* --reuse (reuse_run), --layers (layers_run). */
static int reuse, layers;

/* One matrix: its logical rows x cols, as stored (column-major view). */
struct mat {
    int rows, cols, row_major;
    int64_t ld, stride;        /* stride: between members of a batch */
    size_t elems;              /* of the whole batch's buffer */
};

static struct mat
mat_of(int rows, int cols, cublasLtOrder_t order, int batch)
{
    struct mat x = {rows, cols, order == ROW, 0, 0, 0};
    int inner = x.row_major ? cols : rows, outer = x.row_major ? rows : cols;

    x.ld = inner + 3;                       /* padding between columns */
    x.stride = x.ld * outer + 5;            /* and between members */
    x.elems = (size_t)(x.stride * batch);
    return x;
}

static size_t
mat_at(const struct mat *x, int b, int i, int j)
{
    return (size_t)(b * x->stride) +
           (x->row_major ? (size_t)i * (size_t)x->ld + (size_t)j
                         : (size_t)j * (size_t)x->ld + (size_t)i);
}

static cublasLtMatrixLayout_t
layout_of(const struct mat *x, int batch, cublasLtOrder_t order,
          cublasLtMatrixLayoutOpaque_t *stack)
{
    cublasLtMatrixLayout_t l = stack;
    int32_t count = batch;
    int64_t stride = x->stride;

    if (stack)
        cublasLtMatrixLayoutInit(l, CUDA_R_32F, (uint64_t)x->rows,
                                 (uint64_t)x->cols, x->ld);
    else if (cublasLtMatrixLayoutCreate(&l, CUDA_R_32F, (uint64_t)x->rows,
                                        (uint64_t)x->cols, x->ld) !=
             CUBLAS_STATUS_SUCCESS)
        return NULL;
    cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_ORDER, &order,
                                     sizeof(order));
    if (batch > 1) {
        cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                         &count, sizeof(count));
        cublasLtMatrixLayoutSetAttribute(
            l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
            sizeof(stride));
    }
    return l;
}

static float
value(uint64_t *rng, unsigned flags, float scale)
{
    float v = rng_float(rng, 1.0f);

    if (flags & WIDE) {
        int e = (int)(rng_next(rng) % 25) - 12;
        v = ldexpf(v < 0 ? -1.0f : 1.0f, e) * (1.0f + fabsf(v));
    }
    return v * scale;
}

static int
relu_kind(cublasLtEpilogue_t e)
{
    return e == E(RELU) || e == E(RELU_AUX) || e == E(RELU_BIAS) ||
           e == E(RELU_AUX_BIAS);
}

static int
gelu_kind(cublasLtEpilogue_t e)
{
    return e == E(GELU) || e == E(GELU_AUX) || e == E(GELU_BIAS) ||
           e == E(GELU_AUX_BIAS);
}

static double
gelu(double v)
{
    return 0.5 * v * (1.0 + tanh(0.7978845608028654 *
                                 (v + 0.044715 * v * v * v)));
}

/* Everything of one case on the host. */
struct host {
    struct mat a, b, c, d;
    float *ha, *hb, *hc, *hd, *bias, *alpha_v, *beta_v, *aux_f;
    uint8_t *aux_bits;
    int64_t aux_ld, aux_stride;   /* elements (bits for the ReLU mask) */
    size_t aux_bytes;
};

/* The algorithm as a tuning program finds one with cuBLASLt's lower-level
 * API: the ids for FP32, the first initialised, split-K of 3 reduced in
 * FP32 set by hand, and cublasLtMatmulAlgoCheck for the workspace it
 * needs, which must fit the program's own. */
static cublasStatus_t
search_algo(cublasLtHandle_t lt, cublasLtMatmulDesc_t op,
            cublasLtMatrixLayout_t la, cublasLtMatrixLayout_t lb,
            cublasLtMatrixLayout_t lc, cublasLtMatrixLayout_t ld,
            size_t work_bytes, cublasLtMatmulAlgo_t *algo)
{
    cublasLtMatmulHeuristicResult_t check;
    int ids[8], count = 0;
    int32_t parts = 3;
    uint32_t scheme = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
    cublasStatus_t s;

    s = cublasLtMatmulAlgoGetIds(lt, CUBLAS_COMPUTE_32F, CUDA_R_32F,
                                 CUDA_R_32F, CUDA_R_32F, CUDA_R_32F,
                                 CUDA_R_32F, 8, ids, &count);
    if (cublas_failed("cublasLtMatmulAlgoGetIds", s))
        return s;
    if (count < 1) {
        fprintf(stderr, EXAMPLE_PROG ": no cuBLASLt algorithm for FP32\n");
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    s = cublasLtMatmulAlgoInit(lt, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_32F,
                               CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, ids[0],
                               algo);
    if (cublas_failed("cublasLtMatmulAlgoInit", s))
        return s;
    s = cublasLtMatmulAlgoConfigSetAttribute(
        algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &parts, sizeof(parts));
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulAlgoConfigSetAttribute(
            algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &scheme,
            sizeof(scheme));
    if (cublas_failed("cublasLtMatmulAlgoConfigSetAttribute", s))
        return s;
    s = cublasLtMatmulAlgoCheck(lt, op, la, lb, lc, ld, algo, &check);
    if (cublas_failed("cublasLtMatmulAlgoCheck", s))
        return s;
    if (check.workspaceSize > work_bytes) {
        fprintf(stderr, EXAMPLE_PROG ": the algorithm needs %zu bytes of "
                "workspace, more than %zu\n", check.workspaceSize, work_bytes);
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    return CUBLAS_STATUS_SUCCESS;
}

/* Runs the case on the device; the results land in h->hd and the aux.
 * Returns cublasLtMatmul's status, or CUBLAS_STATUS_INTERNAL_ERROR when
 * the set-up failed. */
static cublasStatus_t
run_case(const struct lcase *tc, cublasLtHandle_t lt, cudaStream_t stream,
         struct host *h)
{
    cublasLtMatmulDescOpaque_t op_stack;
    cublasLtMatrixLayoutOpaque_t ls[4];
    cublasLtMatmulDesc_t op = NULL;
    cublasLtMatrixLayout_t la = NULL, lb = NULL, lc = NULL, ld = NULL;
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t heur;
    const cublasLtMatmulAlgo_t *algo = NULL;
    int stack = (tc->flags & STACK) != 0, in_place = (tc->flags & IN_PLACE),
        count = 0, vec = tc->pmode >= DEV_VEC;
    float *da = NULL, *db = NULL, *dc = NULL, *dd = NULL, *dbias = NULL;
    float *dalpha = NULL, *dbeta = NULL;
    void *daux = NULL, *work = NULL;
    size_t work_bytes = 1 << 20;
    const void *alpha = &tc->alpha, *beta = &tc->beta;
    cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
    cudaDataType_t scale = CUDA_R_32F;
    cublasLtEpilogue_t epi = tc->epilogue;
    cublasStatus_t s = CUBLAS_STATUS_INTERNAL_ERROR;
    int32_t pm = tc->pmode, ta = tc->ta, tb = tc->tb;
    int64_t bias_stride = tc->batch > 1 ? tc->m : 0;
    /* ..._BETA_HOST takes an alpha vector per member of a batch. */
    int64_t alpha_stride = tc->pmode == VEC_HOST && tc->batch > 1 ? tc->m
                                                                  : 0;

    int wider = relayout && !in_place && tc->batch == 1;
    /* One problem's A is ld by its other dimension, whichever order. */
    size_t a_elems =
        wider ? (h->a.elems + (size_t)h->a.ld - 1) / (size_t)h->a.ld *
                    (size_t)(h->a.ld + 8)
              : h->a.elems;

    if (cuda_failed("cudaMalloc", cudaMalloc((void **)&da, a_elems * 4)) ||
        cuda_failed("cudaMalloc", cudaMalloc((void **)&db, h->b.elems * 4)) ||
        cuda_failed("cudaMalloc", cudaMalloc((void **)&dd, h->d.elems * 4)) ||
        cuda_failed("cudaMalloc", cudaMalloc((void **)&dbias,
                                             (size_t)tc->m * tc->batch * 4)) ||
        cuda_failed("cudaMalloc", cudaMalloc((void **)&dalpha,
                                             (size_t)tc->m * tc->batch * 8)) ||
        cuda_failed("cudaMalloc", cudaMalloc(&work, work_bytes)))
        goto done;
    dbeta = dalpha + (size_t)tc->m * tc->batch;
    dc = dd;
    if (!in_place &&
        cuda_failed("cudaMalloc", cudaMalloc((void **)&dc, h->c.elems * 4)))
        goto done;
    if (h->aux_bytes &&
        cuda_failed("cudaMalloc", cudaMalloc(&daux, h->aux_bytes)))
        goto done;
    cudaMemcpy(da, h->ha, h->a.elems * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(db, h->hb, h->b.elems * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(dd, h->hd, h->d.elems * 4, cudaMemcpyHostToDevice);
    if (!in_place)
        cudaMemcpy(dc, h->hc, h->c.elems * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(dbias, h->bias, (size_t)tc->m * tc->batch * 4,
               cudaMemcpyHostToDevice);
    cudaMemcpy(dalpha, h->alpha_v, (size_t)tc->m * tc->batch * 4,
               cudaMemcpyHostToDevice);
    cudaMemcpy(dbeta, h->beta_v, (size_t)tc->m * tc->batch * 4,
               cudaMemcpyHostToDevice);
    if (tc->pmode == DEV || vec) {
        alpha = dalpha;
        beta = tc->pmode == DEV || tc->pmode == DEV_VEC ? (const void *)dbeta
                                                        : &tc->beta;
        if (tc->pmode == DEV) {
            cudaMemcpy(dalpha, &tc->alpha, 4, cudaMemcpyHostToDevice);
            cudaMemcpy(dbeta, &tc->beta, 4, cudaMemcpyHostToDevice);
        }
    }

    if (stack) {
        /* First initialised for another product, used, then initialised
         * again in place: the call must see the second settings. */
        op = &op_stack;
        cublasLtMatmulDescInit(op, CUBLAS_COMPUTE_32F_FAST_TF32, scale);
        epi = E(GELU);
        cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                       &epi, sizeof(epi));
        cublasLtMatmulDescInit(op, compute, scale);
        epi = tc->epilogue;
    } else if (cublas_failed("cublasLtMatmulDescCreate",
                             cublasLtMatmulDescCreate(&op, compute, scale))) {
        op = NULL;
        goto done;
    }
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_POINTER_MODE, &pm,
                                   sizeof(pm));
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta,
                                   sizeof(ta));
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb,
                                   sizeof(tb));
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi,
                                   sizeof(epi));
    if (alpha_stride)
        cublasLtMatmulDescSetAttribute(
            op, CUBLASLT_MATMUL_DESC_ALPHA_VECTOR_BATCH_STRIDE, &alpha_stride,
            sizeof(alpha_stride));
    if (epi & E(BIAS)) {
        cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                       &dbias, sizeof(dbias));
        cublasLtMatmulDescSetAttribute(op,
                                       CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE,
                                       &bias_stride, sizeof(bias_stride));
    }
    if (h->aux_bytes) {
        cublasLtMatmulDescSetAttribute(
            op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &daux,
            sizeof(daux));
        cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD,
                                       &h->aux_ld, sizeof(h->aux_ld));
        cublasLtMatmulDescSetAttribute(
            op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE,
            &h->aux_stride, sizeof(h->aux_stride));
    }
    la = layout_of(&h->a, tc->batch, tc->order_a, stack ? &ls[0] : NULL);
    lb = layout_of(&h->b, tc->batch, tc->order_b, stack ? &ls[1] : NULL);
    lc = layout_of(&h->c, tc->batch, tc->order_cd, stack ? &ls[2] : NULL);
    ld = in_place ? lc
                  : layout_of(&h->d, tc->batch, tc->order_cd,
                              stack ? &ls[3] : NULL);
    if (!la || !lb || !lc || !ld)
        goto done;
    if (tc->flags & SEARCH) {
        s = search_algo(lt, op, la, lb, lc, ld, work_bytes, &heur.algo);
        if (s != CUBLAS_STATUS_SUCCESS)
            goto done;
        algo = &heur.algo;
    } else if (!(tc->flags & NO_ALGO)) {
        /* As frameworks do: the heuristics' first answer for the FP32
         * product, with the program's own workspace. */
        uint64_t ws = work_bytes;

        cublasLtMatmulPreferenceCreate(&pref);
        cublasLtMatmulPreferenceSetAttribute(
            pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
        s = cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, ld, pref, 1,
                                           &heur, &count);
        if (cublas_failed("cublasLtMatmulAlgoGetHeuristic", s) || count < 1) {
            s = CUBLAS_STATUS_INTERNAL_ERROR;
            goto done;
        }
        algo = &heur.algo;
    }
    if (wider) {
        int64_t ld_wide = h->a.ld + 8;

        cublasLtMatrixLayoutSetAttribute(la, CUBLASLT_MATRIX_LAYOUT_LD,
                                         &ld_wide, sizeof(ld_wide));
        s = cublasLtMatmul(lt, op, alpha, da, la, db, lb, beta, dc, lc, dd,
                           ld, NULL, work, work_bytes, stream);
        cublasLtMatrixLayoutSetAttribute(la, CUBLASLT_MATRIX_LAYOUT_LD,
                                         &h->a.ld, sizeof(h->a.ld));
        if (cublas_failed("cublasLtMatmul (wider A)", s))
            goto done;
    }
    s = cublasLtMatmul(lt, op, alpha, da, la, db, lb, beta, dc, lc, dd, ld,
                       algo, work, work_bytes, stream);
    if (cublas_failed("cublasLtMatmul", s))
        goto done;
    if (cuda_failed("cudaStreamSynchronize", cudaStreamSynchronize(stream))) {
        s = CUBLAS_STATUS_INTERNAL_ERROR;
        goto done;
    }
    cudaMemcpy(h->hd, dd, h->d.elems * 4, cudaMemcpyDeviceToHost);
    if (h->aux_bytes)
        cudaMemcpy(h->aux_bits ? (void *)h->aux_bits : (void *)h->aux_f, daux,
                   h->aux_bytes, cudaMemcpyDeviceToHost);
done:
    /* Every path: what was made is destroyed (a checker of leaks runs
     * this program under faults). */
    if (pref)
        cublasLtMatmulPreferenceDestroy(pref);
    if (!stack) {
        if (op)
            cublasLtMatmulDescDestroy(op);
        if (la)
            cublasLtMatrixLayoutDestroy(la);
        if (lb)
            cublasLtMatrixLayoutDestroy(lb);
        if (lc)
            cublasLtMatrixLayoutDestroy(lc);
        if (ld && !in_place)
            cublasLtMatrixLayoutDestroy(ld);
    }
    cudaFree(da);
    cudaFree(db);
    cudaFree(dd);
    if (!in_place)
        cudaFree(dc);
    cudaFree(dbias);
    cudaFree(dalpha);
    cudaFree(daux);
    cudaFree(work);
    return s;
}

/* The worst error / bound of D and of the auxiliary output; D's padding
 * must come back untouched (*pad_bad counts what changed). */
static void
check_case(const struct lcase *tc, const struct host *h, const float *c0,
           double tol, double *worst, double *worst_aux, int *pad_bad)
{
    int relu = relu_kind(tc->epilogue), gelu_on = gelu_kind(tc->epilogue);
    int bias = (tc->epilogue & E(BIAS)) != 0;
    int in_place = (tc->flags & IN_PLACE) != 0;
    char *covered = calloc(h->d.elems, 1);

    *worst = *worst_aux = 0.0;
    *pad_bad = 0;
    for (int b = 0; b < tc->batch; b++) {
        for (int j = 0; j < tc->n; j++) {
            for (int i = 0; i < tc->m; i++) {
                /* Vectors: one for the batch, but ..._BETA_HOST's alpha,
                 * one per member. */
                size_t row = (size_t)(tc->pmode == VEC_HOST ? b : 0) * tc->m +
                             (size_t)i;
                double al = tc->pmode >= DEV_VEC ? h->alpha_v[row] : tc->alpha;
                double be = tc->pmode == DEV_VEC ? h->beta_v[i]
                            : tc->pmode == VEC_ZERO ? 0.0 : tc->beta;
                double sum = 0.0, mag = 0.0, pre, bound, ref, r;
                size_t at = mat_at(&h->d, b, i, j);

                for (int l = 0; l < tc->k; l++) {
                    int ai = tc->ta == N ? i : l, aj = tc->ta == N ? l : i;
                    int bi = tc->tb == N ? l : j, bj = tc->tb == N ? j : l;
                    double x = (double)h->ha[mat_at(&h->a, b, ai, aj)] *
                               h->hb[mat_at(&h->b, b, bi, bj)];
                    sum += x;
                    mag += fabs(x);
                }
                pre = al * sum;
                bound = fabs(al) * mag;
                if (be != 0.0) {
                    double cv = c0[mat_at(&h->c, b, i, j)];
                    pre += be * cv;
                    bound += fabs(be * cv);
                }
                if (bias) {
                    double bv = h->bias[(tc->batch > 1 ? b * tc->m : 0) + i];
                    pre += bv;
                    bound += fabs(bv);
                }
                bound *= tol;
                ref = relu ? (pre > 0.0 ? pre : 0.0)
                           : gelu_on ? gelu(pre) : pre;
                /* GELU's slope is below 1.13 in magnitude. */
                r = element_ratio(h->hd[at], ref,
                                  gelu_on ? 1.13 * bound : bound);
                if (r > *worst)
                    *worst = r;
                covered[at] = 1;
                if (h->aux_bits && fabs(pre) > bound) {
                    int64_t bit = b * h->aux_stride + j * h->aux_ld + i;
                    int set = (h->aux_bits[bit / 8] >> (bit % 8)) & 1;
                    if (set != (pre > 0.0))
                        *worst_aux = INFINITY;
                }
                if (h->aux_f) {
                    int64_t e = b * h->aux_stride + j * h->aux_ld + i;
                    r = element_ratio(h->aux_f[e], pre, bound);
                    if (r > *worst_aux)
                        *worst_aux = r;
                }
            }
        }
    }
    for (size_t e = 0; e < h->d.elems; e++) {
        float want = in_place ? c0[e] : PAD_OUTPUT;
        if (!covered[e] && memcmp(&h->hd[e], &want, 4) != 0)
            (*pad_bad)++;
    }
    free(covered);
}

/* gemm: an FP32 product the shim converts (every case here). */
static const char *
case_class(const struct lcase *tc)
{
    (void)tc;
    return "gemm";
}

static int
one_case(const struct lcase *tc, const struct tolerance *tol, uint64_t seed,
         cublasLtHandle_t lt, cudaStream_t stream)
{
    struct host h;
    uint64_t rng = seed ^ fnv1a64(tc->name, strlen(tc->name), 0);
    int ar = tc->ta == N ? tc->m : tc->k, ac = tc->ta == N ? tc->k : tc->m;
    int br = tc->tb == N ? tc->k : tc->n, bc = tc->tb == N ? tc->n : tc->k;
    float sa = (tc->flags & HUGE) ? 0x1p100f : 1.0f;
    float sb = (tc->flags & HUGE) ? 0x1p-90f : 1.0f;
    size_t rows = (size_t)tc->m * tc->batch;
    double worst, worst_aux;
    cublasStatus_t status;
    uint64_t hash;
    float *c0;
    int pad_bad, failed;

    memset(&h, 0, sizeof h);
    h.a = mat_of(ar, ac, tc->order_a, tc->batch);
    h.b = mat_of(br, bc, tc->order_b, tc->batch);
    h.c = mat_of(tc->m, tc->n, tc->order_cd, tc->batch);
    h.d = h.c;
    h.ha = malloc(h.a.elems * 4);
    h.hb = malloc(h.b.elems * 4);
    h.hc = malloc(h.c.elems * 4);
    h.hd = malloc(h.d.elems * 4);
    c0 = malloc(h.c.elems * 4);
    h.bias = malloc(rows * 4);
    h.alpha_v = malloc(rows * 4);
    h.beta_v = malloc(rows * 4);
    for (size_t e = 0; e < h.a.elems; e++)
        h.ha[e] = value(&rng, tc->flags, sa);
    for (size_t e = 0; e < h.b.elems; e++)
        h.hb[e] = value(&rng, tc->flags, sb);
    for (size_t e = 0; e < h.c.elems; e++)
        c0[e] = (tc->flags & NAN_C) ? NAN : value(&rng, 0, 1.0f);
    for (size_t e = 0; e < rows; e++) {
        h.bias[e] = rng_float(&rng, 0.5f);
        h.alpha_v[e] = tc->alpha * (1.0f + (float)(e % 3) * 0.25f);
        h.beta_v[e] = tc->beta * (1.0f - (float)(e % 4) * 0.125f);
    }
    memcpy(h.hc, c0, h.c.elems * 4);
    for (size_t e = 0; e < h.d.elems; e++)
        h.hd[e] = (tc->flags & IN_PLACE) ? c0[e] : PAD_OUTPUT;
    if (tc->epilogue & 128u) {
        /* The ReLU mask is bits, its leading dimension a multiple of 128;
         * the GELU input a matrix of D's type, a multiple of 8. */
        int quantum = relu_kind(tc->epilogue) ? 128 : 8;
        h.aux_ld = (tc->m + quantum - 1) / quantum * quantum;
        h.aux_stride = h.aux_ld * tc->n;
        h.aux_bytes = relu_kind(tc->epilogue)
                          ? (size_t)(h.aux_stride * tc->batch / 8)
                          : (size_t)(h.aux_stride * tc->batch) * 4;
        if (relu_kind(tc->epilogue))
            h.aux_bits = calloc(h.aux_bytes, 1);
        else
            h.aux_f = calloc(h.aux_bytes, 1);
    }
    status = run_case(tc, lt, stream, &h);
    printf("case %s m=%d n=%d k=%d op=%c%c status=%s(%d)", tc->name, tc->m,
           tc->n, tc->k, tc->ta == N ? 'N' : 'T', tc->tb == N ? 'N' : 'T',
           cublas_status_name(status), (int)status);
    if (status != CUBLAS_STATUS_SUCCESS) {
        printf(" err/bound=- hash=- FAIL api=cublasLtMatmul class=%s\n",
               case_class(tc));
        failed = 1;
    } else {
        check_case(tc, &h, c0, tol_factor(tol, tc->k), &worst, &worst_aux,
                   &pad_bad);
        failed = !(worst <= 1.0) || !(worst_aux <= 1.0) || pad_bad != 0;
        hash = fnv1a64(h.hd, h.d.elems * 4, 0xcbf29ce484222325ULL);
        hash = fnv1a64(h.aux_bits ? (void *)h.aux_bits : (void *)h.aux_f,
                       h.aux_bytes, hash);
        printf(" err/bound=%.3e hash=%016" PRIx64 " %s api=cublasLtMatmul "
               "class=%s aux/bound=%.3e pad_changed=%d\n",
               worst > worst_aux ? worst : worst_aux, hash,
               failed ? "FAIL" : "ok", case_class(tc), worst_aux, pad_bad);
    }
    free(h.ha);
    free(h.hb);
    free(h.hc);
    free(h.hd);
    free(c0);
    free(h.bias);
    free(h.alpha_v);
    free(h.beta_v);
    free(h.aux_bits);
    free(h.aux_f);
    return failed;
}

/* Waits for the stream and copies D (m x n, leading dimension m) back into
 * hd; then the worst error/bound of D against alpha op(A) op(B) + beta C0,
 * C0's element (r, j) at c0[j * c0_ld + r] (c0_ld 0: one column for every
 * j, a bias). -1 on a CUDA error. */
static double
fetch_worst(cudaStream_t stream, const float *dd, float *hd,
            const struct operand_view *va, const struct operand_view *vb,
            int m, int n, int k, float alpha, float beta, const float *c0,
            int c0_ld, double factor)
{
    double worst = 0.0;

    if (cudaStreamSynchronize(stream) != cudaSuccess ||
        cudaMemcpy(hd, dd, (size_t)m * n * 4, cudaMemcpyDeviceToHost) !=
            cudaSuccess)
        return -1.0;
    for (int j = 0; j < n; j++)
        for (int r = 0; r < m; r++) {
            double x = gemm_element_ratio(va, vb, r, j, k, alpha, beta,
                                          c0[(size_t)j * c0_ld + r],
                                          hd[(size_t)j * m + r], factor);

            if (x > worst)
                worst = x;
        }
    return worst;
}

/* --reuse: one problem's descriptor objects, made once, in every call of
 * a run whose other arguments vary as a program's do: alpha 1 or 0, a
 * second handle, the heuristics' algorithm or none, a workspace or none,
 * a NULL B (cuBLASLt refuses it: INVALID_VALUE, D untouched), D in C's
 * place. Each call's D is checked against the reference. */
enum reuse_kind {
    REUSE_BASE, REUSE_ALPHA0, REUSE_NULL_B, REUSE_HANDLE2, REUSE_NO_ALGO,
    REUSE_NO_WORKSPACE, REUSE_IN_PLACE,
};

static const char *const reuse_names[] = {
    "base", "alpha0", "null_b", "handle2", "no_algo", "no_workspace",
    "in_place",
};

static const enum reuse_kind reuse_calls[] = {
    REUSE_BASE,   REUSE_BASE,         REUSE_BASE,     REUSE_ALPHA0,
    REUSE_BASE,   REUSE_NULL_B,       REUSE_BASE,     REUSE_HANDLE2,
    REUSE_BASE,   REUSE_NO_ALGO,      REUSE_BASE,     REUSE_NO_WORKSPACE,
    REUSE_BASE,   REUSE_IN_PLACE,     REUSE_BASE,     REUSE_ALPHA0,
    REUSE_BASE,   REUSE_BASE,
};
#define REUSE_CALLS ((int)(sizeof(reuse_calls) / sizeof(reuse_calls[0])))
#define REUSE_WORKSPACE (1u << 22)

static int
reuse_run(const struct tolerance *tol, uint64_t seed, cublasLtHandle_t lt,
          cudaStream_t stream)
{
    const int m = 96, n = 64, k = 80;
    const float one = 1.0f, zero = 0.0f, beta = 0.5f;
    const size_t a_n = (size_t)m * k, b_n = (size_t)k * n, c_n = (size_t)m * n;
    uint64_t rng = seed ^ 0x7265757365ull;
    float *ha = host_data(a_n, &rng), *hb = host_data(b_n, &rng);
    float *hc = host_data(c_n, &rng), *hd = malloc(c_n * 4);
    float *da = NULL, *db = NULL, *dc = NULL, *dd = NULL, *dc2 = NULL;
    void *ws = NULL;
    cublasLtHandle_t lt2 = NULL;
    cublasLtMatmulDesc_t op = NULL;
    cublasLtMatrixLayout_t la = NULL, lb = NULL, lc = NULL;
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t heur;
    uint64_t ws_bytes = REUSE_WORKSPACE;
    struct operand_view va = {ha, m, 0}, vb = {hb, k, 0};
    int found = 0, failed = 0;

    if (!ha || !hb || !hc || !hd ||
        !(da = device_copy(ha, a_n * 4)) || !(db = device_copy(hb, b_n * 4)) ||
        !(dc = device_copy(hc, c_n * 4)) || !(dd = device_copy(NULL, c_n * 4)) ||
        !(dc2 = device_copy(NULL, c_n * 4)) ||
        !(ws = device_copy(NULL, REUSE_WORKSPACE)) ||
        cublas_failed("cublasLtCreate", cublasLtCreate(&lt2)) ||
        cublas_failed("cublasLtMatmulDescCreate",
                      cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F,
                                               CUDA_R_32F)) ||
        cublas_failed("cublasLtMatrixLayoutCreate",
                      cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, m, k, m)) ||
        cublas_failed("cublasLtMatrixLayoutCreate",
                      cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, k, n, k)) ||
        cublas_failed("cublasLtMatrixLayoutCreate",
                      cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, m, n, m)) ||
        cublas_failed("cublasLtMatmulPreferenceCreate",
                      cublasLtMatmulPreferenceCreate(&pref)) ||
        cublas_failed("cublasLtMatmulPreferenceSetAttribute",
                      cublasLtMatmulPreferenceSetAttribute(
                          pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                          &ws_bytes, sizeof(ws_bytes))) ||
        cublas_failed("cublasLtMatmulAlgoGetHeuristic",
                      cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc,
                                                     pref, 1, &heur,
                                                     &found)) ||
        found < 1) {
        printf("reuse: set-up failed\n");
        failed = 1;
        goto out;
    }
    for (int i = 0; i < REUSE_CALLS; i++) {
        enum reuse_kind kind = reuse_calls[i];
        const float *alpha = kind == REUSE_ALPHA0 ? &zero : &one;
        float *out = kind == REUSE_IN_PLACE ? dc2 : dd;
        double worst;
        cublasStatus_t status, want = kind == REUSE_NULL_B
                                          ? CUBLAS_STATUS_INVALID_VALUE
                                          : CUBLAS_STATUS_SUCCESS;
        int bad;

        /* D starts as a pattern; in place it is C's copy. */
        for (size_t e = 0; e < c_n; e++)
            hd[e] = kind == REUSE_IN_PLACE ? hc[e] : PAD_OUTPUT;
        cudaMemcpy(out, hd, c_n * 4, cudaMemcpyHostToDevice);
        status = cublasLtMatmul(
            kind == REUSE_HANDLE2 ? lt2 : lt, op, alpha, da, la,
            kind == REUSE_NULL_B ? NULL : db, lb, &beta,
            kind == REUSE_IN_PLACE ? dc2 : dc, lc, out, lc,
            kind == REUSE_NO_ALGO ? NULL : &heur.algo,
            kind == REUSE_NO_WORKSPACE ? NULL : ws,
            kind == REUSE_NO_WORKSPACE ? 0 : REUSE_WORKSPACE, stream);
        worst = fetch_worst(stream, out, hd, &va, &vb, m, n, k, *alpha,
                            beta, hc, m, tol_factor(tol, k));
        if (worst < 0.0) {
            printf("reuse: call %d: CUDA error\n", i);
            failed = 1;
            break;
        }
        if (status != CUBLAS_STATUS_SUCCESS)
            worst = 0.0;
        /* Refused, D is as it was. */
        for (size_t e = 0; e < c_n && status != CUBLAS_STATUS_SUCCESS; e++)
            if (hd[e] != PAD_OUTPUT)
                worst = INFINITY;
        bad = status != want || !(worst <= 1.0);
        failed |= bad;
        printf("reuse call=%d kind=%s status=%s(%d) err/bound=%.3e %s\n", i,
               reuse_names[kind], cublas_status_name(status), (int)status,
               worst, bad ? "FAIL" : "ok");
    }
out:
    lt_descs_destroy(pref, op, la, lb, lc);
    if (lt2)
        cublasLtDestroy(lt2);
    cudaFree(da);
    cudaFree(db);
    cudaFree(dc);
    cudaFree(dd);
    cudaFree(dc2);
    cudaFree(ws);
    free(ha);
    free(hb);
    free(hc);
    free(hd);
    return failed;
}

/* --layers: one problem's descriptor objects, as a framework's Linear
 * layers of one shape share them: each call sets its layer's bias vector
 * on the one matmul descriptor (a bias epilogue), the layers in turn and
 * repeated; the biases of the two layers differ by 8 in every row, so a
 * call that adds the other layer's fails its check. */
static const int layers_order[] = {0, 1, 1, 0, 0, 1, 0, 1};
#define LAYERS_CALLS ((int)(sizeof(layers_order) / sizeof(layers_order[0])))

static int
layers_run(const struct tolerance *tol, uint64_t seed, cublasLtHandle_t lt,
           cudaStream_t stream)
{
    const int m = 96, n = 64, k = 80;
    const float one = 1.0f, zero = 0.0f;
    const size_t a_n = (size_t)m * k, b_n = (size_t)k * n, c_n = (size_t)m * n;
    uint64_t rng = seed ^ 0x6c6179657273ull;
    float *ha = host_data(a_n, &rng), *hb = host_data(b_n, &rng);
    float *hbias[2] = {host_data((size_t)m, &rng), host_data((size_t)m, &rng)};
    float *hd = malloc(c_n * 4);
    float *da = NULL, *db = NULL, *dd = NULL, *dbias[2] = {NULL, NULL};
    cublasLtMatmulDesc_t op = NULL;
    cublasLtMatrixLayout_t la = NULL, lb = NULL, lc = NULL;
    cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    struct operand_view va = {ha, m, 0}, vb = {hb, k, 0};
    int failed = 0;

    for (int l = 0; l < 2 && hbias[l]; l++)
        for (int r = 0; r < m; r++)
            hbias[l][r] += l ? 4.0f : -4.0f;
    if (!ha || !hb || !hbias[0] || !hbias[1] || !hd ||
        !(da = device_copy(ha, a_n * 4)) || !(db = device_copy(hb, b_n * 4)) ||
        !(dd = device_copy(NULL, c_n * 4)) ||
        !(dbias[0] = device_copy(hbias[0], (size_t)m * 4)) ||
        !(dbias[1] = device_copy(hbias[1], (size_t)m * 4)) ||
        cublas_failed("cublasLtMatmulDescCreate",
                      cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F,
                                               CUDA_R_32F)) ||
        cublas_failed("cublasLtMatmulDescSetAttribute",
                      cublasLtMatmulDescSetAttribute(
                          op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                          sizeof epilogue)) ||
        cublas_failed("cublasLtMatrixLayoutCreate",
                      cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, m, k, m)) ||
        cublas_failed("cublasLtMatrixLayoutCreate",
                      cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, k, n, k)) ||
        cublas_failed("cublasLtMatrixLayoutCreate",
                      cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, m, n, m))) {
        printf("layers: set-up failed\n");
        failed = 1;
        goto out;
    }
    for (int i = 0; i < LAYERS_CALLS; i++) {
        int l = layers_order[i];
        double worst;
        cublasStatus_t status;

        for (size_t e = 0; e < c_n; e++)
            hd[e] = PAD_OUTPUT;
        cudaMemcpy(dd, hd, c_n * 4, cudaMemcpyHostToDevice);
        status = cublasLtMatmulDescSetAttribute(
            op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &dbias[l],
            sizeof dbias[l]);
        if (status == CUBLAS_STATUS_SUCCESS)
            status = cublasLtMatmul(lt, op, &one, da, la, db, lb, &zero, dd,
                                    lc, dd, lc, NULL, NULL, 0, stream);
        /* The bias as a C0 of weight 1: D = A B + bias, bound as the
         * help says. */
        worst = fetch_worst(stream, dd, hd, &va, &vb, m, n, k, 1.0f, 1.0f,
                            hbias[l], 0, tol_factor(tol, k));
        if (worst < 0.0) {
            printf("layers: call %d: CUDA error\n", i);
            failed = 1;
            break;
        }
        failed |= status != CUBLAS_STATUS_SUCCESS || !(worst <= 1.0);
        printf("layers call=%d layer=%d status=%s(%d) err/bound=%.3e %s\n", i,
               l, cublas_status_name(status), (int)status, worst,
               status != CUBLAS_STATUS_SUCCESS || !(worst <= 1.0) ? "FAIL"
                                                                  : "ok");
    }
out:
    lt_descs_destroy(NULL, op, la, lb, lc);
    cudaFree(da);
    cudaFree(db);
    cudaFree(dd);
    cudaFree(dbias[0]);
    cudaFree(dbias[1]);
    free(ha);
    free(hb);
    free(hbias[0]);
    free(hbias[1]);
    free(hd);
    return failed;
}

static void
usage(FILE *to)
{
    fprintf(to,
        "usage: lt_check [--tol TOL] [--seed N] [--case NAME] "
        "[--repeat N] [--relayout] [--reuse] [--layers] [--help]\n"
        "Runs FP32 cublasLtMatmul cases (epilogues, orders, batches, "
        "pointer\nmodes, in place, NaN in an unread C, wide-range inputs) "
        "and checks each\nelement of D against a double-precision "
        "reference:\n"
        "  |D - Dref| <= tol * (|alpha| |op(A)| |op(B)| + |beta| |C0| + "
        "|bias|)\n"
        "(GELU: 1.13 times that), and D's padding unchanged.\n"
        "  --tol TOL   a positive number, or fp16, bf16, tf32 or fp32 "
        "(default\n"
        "              tf32: cuBLASLt may use TF32 for FP32 products)\n"
        "  --seed N    the data's seed (default 1)\n"
        "  --case NAME only that case\n"
        "  --repeat N  each case N times in a row, each run checked "
        "(default 1)\n"
        "  --relayout  each case of one problem, not in place, is first "
        "made with\n"
        "              A's leading dimension 8 larger on the same layout "
        "object,\n"
        "              then set back in place before the checked product\n"
        "  --reuse     instead of the cases: one problem's descriptors made "
        "once,\n"
        "              in 18 calls whose other arguments vary (alpha 0, a "
        "second\n"
        "              handle, no algorithm, no workspace, a NULL B that "
        "cuBLASLt\n"
        "              refuses, D in C's place), each checked\n"
        "  --layers    instead of the cases: one problem's descriptors "
        "shared by two\n"
        "              layers, each call setting its layer's bias pointer "
        "on the\n"
        "              matmul descriptor (a bias epilogue), 8 calls, each "
        "checked\n"
        "Prints one line per case (name, shape, status, max error/bound, "
        "a hash of\nD and the auxiliary output, ok or FAIL).\n"
        "Exit status: 0 all cases pass, 1 a case fails, 2 usage, 3 CUDA "
        "error.\n");
}

int
main(int argc, char **argv)
{
    struct tolerance tol = {TOL_TF32, 0.0};
    uint64_t seed = 1;
    const char *only = NULL;
    int repeat = 1;
    cublasLtHandle_t lt;
    cudaStream_t stream;
    int failures = 0, ran = 0;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return EXIT_ALL_PASS;
        }
        if (strcmp(argv[i], "--relayout") == 0) {
            relayout = 1;
            continue;
        }
        if (strcmp(argv[i], "--reuse") == 0) {
            reuse = 1;
            continue;
        }
        if (strcmp(argv[i], "--layers") == 0) {
            layers = 1;
            continue;
        }
        if (i + 1 >= argc) {
            usage(stderr);
            return EXIT_USAGE;
        }
        if (strcmp(argv[i], "--tol") == 0) {
            if (tol_parse(argv[++i], &tol) != 0) {
                fprintf(stderr, "lt_check: bad --tol '%s'\n", argv[i]);
                return EXIT_USAGE;
            }
        } else if (strcmp(argv[i], "--seed") == 0) {
            seed = strtoull(argv[++i], NULL, 0);
        } else if (strcmp(argv[i], "--case") == 0) {
            only = argv[++i];
        } else if (strcmp(argv[i], "--repeat") == 0) {
            repeat = atoi(argv[++i]);
            if (repeat < 1 || repeat > 100) {
                fprintf(stderr, "lt_check: bad --repeat '%s'\n", argv[i]);
                return EXIT_USAGE;
            }
        } else {
            usage(stderr);
            return EXIT_USAGE;
        }
    }
    if (cublas_failed("cublasLtCreate", cublasLtCreate(&lt)) ||
        cuda_failed("cudaStreamCreate", cudaStreamCreate(&stream)))
        return EXIT_CUDA_ERROR;
    if (reuse) {
        failures = reuse_run(&tol, seed, lt, stream);
        ran = 1;
    } else if (layers) {
        failures = layers_run(&tol, seed, lt, stream);
        ran = 1;
    }
    for (int c = 0; c < NCASES && !reuse && !layers; c++) {
        if (only && strcmp(only, cases[c].name) != 0)
            continue;
        /* Repeated, a case's later calls are the same call again at the
         * same site: what a training step makes each iteration. */
        for (int r = 0; r < repeat; r++) {
            failures += one_case(&cases[c], &tol, seed, lt, stream);
            ran++;
        }
    }
    cudaStreamDestroy(stream);
    cublasLtDestroy(lt);
    if (ran == 0) {
        fprintf(stderr, "lt_check: no case named '%s'\n", only);
        return EXIT_USAGE;
    }
    printf("result: %d of %d cases pass\n", ran - failures, ran);
    return failures ? EXIT_CHECK_FAILED : EXIT_ALL_PASS;
}
