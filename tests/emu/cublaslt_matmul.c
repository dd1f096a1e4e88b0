/* The emulated cublasLtMatmul and cublasLtMatmulAlgoGetHeuristic: the
 * descriptors checked at call time as the library documents, the
 * algorithms the emulator offers, and the product with its epilogue,
 * queued on the caller's stream and run in stream order. */
#include <cublasLt.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cublas_types.h"
#include "cublaslt_emu.h"
#include "emu.h"

/* ---- The problem ---------------------------------------------------------- */

/* One matrix as its layout says: element (i, j) at i + j * ld in column
 * order, i * ld + j in row order. */
struct lt_matrix {
    cudaDataType type;
    int row_order;
    int64_t rows, cols, ld;
    int64_t stride;             /* elements between members of a batch */
};

enum lt_act { ACT_NONE, ACT_RELU, ACT_GELU, ACT_DRELU, ACT_DGELU };

/* What the compute type and the operand types make of the arithmetic. */
struct lt_kind {
    enum operand_round round;
    enum emu_prec prec;
    uint64_t impl_flags;        /* cublasLtNumericalImplFlags_t */
};

/* A checked call, everything but the pointers. */
struct lt_problem {
    int32_t compute, scale;
    int64_t m, n, k;
    int32_t batch;
    int transa, transb;         /* op(A) = A^T, op(B) = B^T */
    int by_array;               /* CUBLASLT_BATCH_MODE_POINTER_ARRAY */
    struct lt_matrix a, b, c, d;
    struct lt_kind kind;
    int32_t pointer_mode;
    int64_t alpha_stride;       /* ALPHA_VECTOR_BATCH_STRIDE, elements */
    int bias;                   /* the epilogue adds the bias vector */
    enum lt_act act;
    int aux_out, aux_in;        /* the epilogue writes, or reads, aux */
    int64_t bias_stride;
    int64_t aux_ld, aux_stride;
    int sm_count;               /* for the waves count */
    int32_t sm_count_target;    /* the descriptor's (0: the device's) */
};

static size_t
offset(const struct lt_matrix *x, int64_t i, int64_t j)
{
    return x->row_order ? (size_t)(i * x->ld + j) : (size_t)(i + j * x->ld);
}

/* Bytes spanned by one member of a batch (0 when it is empty). */
static size_t
matrix_bytes(const struct lt_matrix *x)
{
    int64_t inner = x->row_order ? x->cols : x->rows;
    int64_t outer = x->row_order ? x->rows : x->cols;

    if (x->rows == 0 || x->cols == 0)
        return 0;
    return (size_t)((outer - 1) * x->ld + inner) * type_size(x->type);
}

/* The layout of one matrix: orders COL and ROW, strided batches or
 * pointer arrays, real data. */
static cublasStatus_t
matrix_of(const struct emu_lt_layout *l, struct lt_matrix *x)
{
    switch (l->order) {
    case CUBLASLT_ORDER_COL:
    case CUBLASLT_ORDER_ROW:
        break;
    case CUBLASLT_ORDER_COL32:
    case CUBLASLT_ORDER_COL4_4R2_8C:
    case CUBLASLT_ORDER_COL32_2R_4R4:
        return CUBLAS_STATUS_NOT_SUPPORTED;  /* the IMMA orders */
    default:
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    if (l->batch_mode != CUBLASLT_BATCH_MODE_STRIDED &&
        l->batch_mode != CUBLASLT_BATCH_MODE_POINTER_ARRAY)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (l->ld < 0 || l->batch_count < 1)
        return CUBLAS_STATUS_INVALID_VALUE;
    /* Planar complex only; sizes beyond int32_t are "usually" not
     * supported, and none are here. */
    if (l->plane_offset != 0 || l->rows > INT32_MAX || l->cols > INT32_MAX)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    x->type = (cudaDataType)l->type;
    x->row_order = l->order == CUBLASLT_ORDER_ROW;
    x->rows = (int64_t)l->rows;
    x->cols = (int64_t)l->cols;
    x->ld = l->ld;
    x->stride = l->batch_stride;
    return CUBLAS_STATUS_SUCCESS;
}

/* The leading dimension covers a row (row order) or column: C's may be 0,
 * a broadcast C. */
static int
ld_ok(const struct lt_matrix *x, int zero_ok)
{
    int64_t inner = x->row_order ? x->cols : x->rows;

    if (zero_ok && x->ld == 0)
        return 1;
    return x->ld >= (inner > 1 ? inner : 1);
}

static int
op_ok(int32_t op)
{
    return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C;
}

/* cublasLtMatmul's table of types for regular column- and row-major
 * matrices, the rows with a 32F compute type and real data: anything else
 * (16F, 32I or 64F compute, complex, the FP8 and FP4 kernels) is not
 * emulated and NOT_SUPPORTED. C and D share a type. */
static cublasStatus_t
kind_of(int32_t compute, int32_t scale, cudaDataType ab, cudaDataType cd,
        struct lt_kind *k)
{
    const uint64_t acc = CUBLASLT_NUMERICAL_IMPL_FLAGS_ACCUMULATOR_32F;
    const uint64_t fma = CUBLASLT_NUMERICAL_IMPL_FLAGS_FMA | acc;
    const uint64_t hmma = CUBLASLT_NUMERICAL_IMPL_FLAGS_HMMA | acc;
    int pedantic = compute == CUBLAS_COMPUTE_32F_PEDANTIC;

    k->round = ROUND_NONE;
    k->prec = EMU_PREC_FP32;
    k->impl_flags = fma | CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_32F;
    if (scale != CUDA_R_32F)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    switch (compute) {
    case CUBLAS_COMPUTE_32F:
    case CUBLAS_COMPUTE_32F_PEDANTIC:
        switch (ab) {
        case CUDA_R_32F:
            return cd == CUDA_R_32F ? CUBLAS_STATUS_SUCCESS
                                    : CUBLAS_STATUS_NOT_SUPPORTED;
        case CUDA_R_16F:
        case CUDA_R_16BF:
            if (cd != CUDA_R_32F && cd != ab)
                return CUBLAS_STATUS_NOT_SUPPORTED;
            /* Half operands are exact in FP32; pedantic arithmetic keeps
             * off the Tensor Cores. */
            k->prec = pedantic ? EMU_PREC_FP32
                               : emu_half_prec(ab == CUDA_R_16BF);
            k->impl_flags = (pedantic ? fma : hmma) |
                            (ab == CUDA_R_16F
                                 ? CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_16F
                                 : CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_16BF);
            return CUBLAS_STATUS_SUCCESS;
        case CUDA_R_8I:
            k->impl_flags = fma | CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_8I;
            return cd == CUDA_R_32F ? CUBLAS_STATUS_SUCCESS
                                    : CUBLAS_STATUS_NOT_SUPPORTED;
        default:
            return CUBLAS_STATUS_NOT_SUPPORTED;
        }
    case CUBLAS_COMPUTE_32F_FAST_16F:
    case CUBLAS_COMPUTE_32F_FAST_16BF:
    case CUBLAS_COMPUTE_32F_FAST_TF32:
    case CUBLAS_COMPUTE_32F_EMULATED_16BFX9:
        if (ab != CUDA_R_32F || cd != CUDA_R_32F)
            return CUBLAS_STATUS_NOT_SUPPORTED;
        break;
    default:
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    switch (compute) {
    case CUBLAS_COMPUTE_32F_FAST_16F:
        k->round = ROUND_F16;
        k->prec = EMU_PREC_FP16;
        k->impl_flags = hmma | CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_16F;
        break;
    case CUBLAS_COMPUTE_32F_FAST_16BF:
        k->round = ROUND_BF16;
        k->prec = emu_half_prec(1);
        k->impl_flags = hmma | CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_16BF;
        break;
    case CUBLAS_COMPUTE_32F_FAST_TF32:
        /* Without TF32 (before compute capability 8, or
         * NVIDIA_TF32_OVERRIDE=0) the product is plain FP32. */
        if (emu_tf32_available()) {
            k->round = ROUND_TF32;
            k->prec = EMU_PREC_TF32;
            k->impl_flags = hmma | CUBLASLT_NUMERICAL_IMPL_FLAGS_INPUT_TF32;
        }
        break;
    default:
        /* EMULATED_16BFX9: BF16x9 where it runs (settle_emulation), else
         * FP32. */
        k->round = ROUND_BF16X9;
        break;
    }
    return CUBLAS_STATUS_SUCCESS;
}

/* The epilogue: which parts it has, and what it needs of its settings. */
static cublasStatus_t
epilogue_of(const struct emu_lt_desc *desc, struct lt_problem *p)
{
    uint32_t e = desc->epilogue;

    p->bias = 0;
    p->act = ACT_NONE;
    p->aux_out = p->aux_in = 0;
    switch (e) {
    case CUBLASLT_EPILOGUE_DEFAULT:
        return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_EPILOGUE_RELU:
    case CUBLASLT_EPILOGUE_RELU_AUX:
    case CUBLASLT_EPILOGUE_RELU_BIAS:
    case CUBLASLT_EPILOGUE_RELU_AUX_BIAS:
        p->act = ACT_RELU;
        break;
    case CUBLASLT_EPILOGUE_GELU:
    case CUBLASLT_EPILOGUE_GELU_AUX:
    case CUBLASLT_EPILOGUE_GELU_BIAS:
    case CUBLASLT_EPILOGUE_GELU_AUX_BIAS:
        p->act = ACT_GELU;
        break;
    case CUBLASLT_EPILOGUE_BIAS:
        break;
    case CUBLASLT_EPILOGUE_DRELU:
        p->act = ACT_DRELU;
        break;
    case CUBLASLT_EPILOGUE_DGELU:
        p->act = ACT_DGELU;
        break;
    case CUBLASLT_EPILOGUE_DRELU_BGRAD:
    case CUBLASLT_EPILOGUE_DGELU_BGRAD:
    case CUBLASLT_EPILOGUE_BGRADA:
    case CUBLASLT_EPILOGUE_BGRADB:
        return CUBLAS_STATUS_NOT_SUPPORTED;    /* gradients: not emulated */
    default:
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    p->bias = (e & CUBLASLT_EPILOGUE_BIAS) != 0;
    p->aux_out = (e & 128u) != 0 && (p->act == ACT_RELU || p->act == ACT_GELU);
    p->aux_in = p->act == ACT_DRELU || p->act == ACT_DGELU;
    return CUBLAS_STATUS_SUCCESS;
}

/* The settings an epilogue other than DEFAULT depends on. */
static cublasStatus_t
epilogue_check(const struct emu_lt_desc *desc, struct lt_problem *p)
{
    int mask = p->act == ACT_RELU || p->act == ACT_DRELU;
    int64_t quantum = mask ? 128 : 8;

    if (p->bias || p->act != ACT_NONE) {
        /* "Epilogue is not supported" for 8-bit integer operands; only
         * DEFAULT with pointer arrays. */
        if (p->a.type == CUDA_R_8I || p->by_array)
            return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    /* The activations combined with a bias are not supported with a
     * row-major D (the table's footnote); nor, here, is an auxiliary
     * matrix, which the emulator keeps column-major. */
    if (p->d.row_order &&
        ((p->bias && p->act != ACT_NONE) || p->aux_out || p->aux_in))
        return CUBLAS_STATUS_NOT_SUPPORTED;
    /* The bias has D's type (the other types are for the IMMA and FP8
     * kernels); the aux data type is for FP8 outputs. */
    if (p->bias && desc->bias_data_type != -1 &&
        desc->bias_data_type != (int32_t)p->d.type)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    if (desc->aux_data_type != -1 &&
        (mask || desc->aux_data_type != (int32_t)p->d.type))
        return CUBLAS_STATUS_INVALID_VALUE;
    p->bias_stride = desc->bias_batch_stride;
    p->aux_ld = desc->aux_ld;
    p->aux_stride = desc->aux_batch_stride;
    /* The ReLU bit mask counts bits: its leading dimension and batch
     * stride are multiples of 128; the GELU input's of 8. */
    if (p->aux_out || p->aux_in) {
        if (p->aux_ld < p->m || p->aux_ld % quantum != 0 ||
            p->aux_stride < 0 || p->aux_stride % quantum != 0)
            return CUBLAS_STATUS_INVALID_VALUE;
    }
    return CUBLAS_STATUS_SUCCESS;
}

/* The scaling factors and maxima are for narrow-precision (FP8, FP4)
 * products only: set on any other, the call is refused. */
static int
narrow_settings(const struct emu_lt_desc *d)
{
    return d->a_scale || d->b_scale || d->c_scale || d->d_scale ||
           d->amax_d || d->aux_scale || d->aux_amax || d->d_out_scale ||
           d->a_scale_mode || d->b_scale_mode || d->c_scale_mode ||
           d->d_scale_mode || d->aux_scale_mode || d->d_out_scale_mode;
}

static cublasStatus_t
pointer_mode_check(const struct emu_lt_desc *desc, struct lt_problem *p)
{
    p->pointer_mode = desc->pointer_mode;
    p->alpha_stride = desc->alpha_vector_batch_stride;
    switch (p->pointer_mode) {
    case CUBLASLT_POINTER_MODE_HOST:
    case CUBLASLT_POINTER_MODE_DEVICE:
        return CUBLAS_STATUS_SUCCESS;
    case CUBLASLT_POINTER_MODE_DEVICE_VECTOR:
    case CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_ZERO:
    case CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_HOST:
        break;
    default:
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    if (p->by_array)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    /* The batch stride of the alpha vector is for ..._BETA_HOST (and is
     * not used by the other modes); BETA_ZERO has no batched alpha and
     * wants 0. */
    if (p->pointer_mode == CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_ZERO &&
        p->alpha_stride != 0)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (p->pointer_mode != CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_HOST)
        p->alpha_stride = 0;
    return CUBLAS_STATUS_SUCCESS;
}

/* The layouts of A, B, C and D against each other: C and D alike but for
 * the leading dimension, op(A) m x k, op(B) k x n, one batch count. */
static cublasStatus_t
shapes_check(const struct emu_lt_desc *desc, struct lt_problem *p)
{
    int64_t arows, brows, bcols;

    if (!op_ok(desc->transa) || !op_ok(desc->transb))
        return CUBLAS_STATUS_INVALID_VALUE;
    p->transa = desc->transa != CUBLAS_OP_N;
    p->transb = desc->transb != CUBLAS_OP_N;
    if (p->c.type != p->d.type || p->c.rows != p->d.rows ||
        p->c.cols != p->d.cols || p->c.row_order != p->d.row_order)
        return CUBLAS_STATUS_INVALID_VALUE;
    p->m = p->d.rows;
    p->n = p->d.cols;
    arows = p->transa ? p->a.cols : p->a.rows;
    p->k = p->transa ? p->a.rows : p->a.cols;
    brows = p->transb ? p->b.cols : p->b.rows;
    bcols = p->transb ? p->b.rows : p->b.cols;
    if (arows != p->m || brows != p->k || bcols != p->n)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (!ld_ok(&p->a, 0) || !ld_ok(&p->b, 0) || !ld_ok(&p->c, 1) ||
        !ld_ok(&p->d, 0))
        return CUBLAS_STATUS_INVALID_VALUE;
    return CUBLAS_STATUS_SUCCESS;
}

/* Everything cublasLtMatmul and its heuristics check before they look at
 * pointers: INVALID_VALUE for what is in conflict or impossible,
 * NOT_SUPPORTED for what the library (or the emulator) does not do. */
static cublasStatus_t
problem_check(cublasLtMatmulDesc_t computeDesc, cublasLtMatrixLayout_t Adesc,
              cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc,
              cublasLtMatrixLayout_t Ddesc, struct lt_problem *p)
{
    const struct emu_lt_desc *desc = emu_lt_desc_at(computeDesc);
    const struct emu_lt_layout *la = emu_lt_layout_at(Adesc);
    const struct emu_lt_layout *lb = emu_lt_layout_at(Bdesc);
    const struct emu_lt_layout *ld = emu_lt_layout_at(Ddesc);
    const struct emu_lt_layout *lc = Cdesc ? emu_lt_layout_at(Cdesc) : ld;
    cublasStatus_t st;

    memset(p, 0, sizeof(*p));
    if (desc == NULL || la == NULL || lb == NULL || lc == NULL || ld == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    if ((st = matrix_of(la, &p->a)) != CUBLAS_STATUS_SUCCESS ||
        (st = matrix_of(lb, &p->b)) != CUBLAS_STATUS_SUCCESS ||
        (st = matrix_of(lc, &p->c)) != CUBLAS_STATUS_SUCCESS ||
        (st = matrix_of(ld, &p->d)) != CUBLAS_STATUS_SUCCESS)
        return st;
    /* One batch mode and one batch count for all four. */
    if (la->batch_mode != ld->batch_mode || lb->batch_mode != ld->batch_mode ||
        lc->batch_mode != ld->batch_mode ||
        la->batch_count != ld->batch_count ||
        lb->batch_count != ld->batch_count ||
        lc->batch_count != ld->batch_count)
        return CUBLAS_STATUS_INVALID_VALUE;
    p->batch = ld->batch_count;
    p->by_array = ld->batch_mode == CUBLASLT_BATCH_MODE_POINTER_ARRAY;
    if ((st = shapes_check(desc, p)) != CUBLAS_STATUS_SUCCESS)
        return st;
    if (desc->transc != CUBLAS_OP_N || desc->fill_mode != CUBLAS_FILL_MODE_FULL)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    if (narrow_settings(desc))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (p->a.type != p->b.type)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    p->compute = desc->compute_type;
    p->scale = desc->scale_type;
    st = kind_of(p->compute, p->scale, p->a.type, p->d.type, &p->kind);
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    if ((st = pointer_mode_check(desc, p)) != CUBLAS_STATUS_SUCCESS ||
        (st = epilogue_of(desc, p)) != CUBLAS_STATUS_SUCCESS ||
        (st = epilogue_check(desc, p)) != CUBLAS_STATUS_SUCCESS)
        return st;
    p->sm_count_target = desc->sm_count_target;
    p->sm_count = desc->sm_count_target > 0 ? desc->sm_count_target
                                            : emu_gpu()->sm_count;
    return CUBLAS_STATUS_SUCCESS;
}

/* ---- Algorithms ----------------------------------------------------------- */

/*
 * The emulator offers one algorithm (id 0) in two configurations: the
 * whole depth of the product at once, with no workspace, and, for deep
 * products, split-K by 4 with the partial products in FP32 in the
 * workspace, reduced in a separate step (REDUCTION_SCHEME_COMPUTE_TYPE).
 * An algorithm is made for the types it was found for.
 */
#define EMU_LT_ALGO_MAGIC 0x4c74416cu   /* "LtAl" */
#define SPLIT_K 4

struct lt_algo {
    uint32_t magic;
    int32_t id;
    int32_t compute, scale;
    int32_t atype, btype, ctype, dtype;
    int32_t splitk;
    uint32_t reduction;                 /* cublasLtReductionScheme_t */
    /* What cublasLtMatmulAlgoConfigSetAttribute may set beyond those;
     * the emulator's algorithm has one configuration of each (tile and
     * stages UNDEFINED, the others 0), which cublasLtMatmulAlgoCheck and
     * cublasLtMatmul hold the algorithm to. */
    uint32_t tile, stages, swizzling, custom_option;
    uint16_t inner_shape, cluster_shape;
};

_Static_assert(sizeof(struct lt_algo) <= sizeof(cublasLtMatmulAlgo_t),
               "the algorithm fits the header's struct");

/* Split-K pays off when the depth dwarfs the output: each of the 4 parts
 * at least 64 deep, and k at least 4 times m and n. */
static int
splitk_fits(const struct lt_problem *p)
{
    return p->k >= 64 * SPLIT_K && p->k >= SPLIT_K * p->m &&
           p->k >= SPLIT_K * p->n;
}

static size_t
algo_workspace(const struct lt_problem *p, const struct lt_algo *a)
{
    if (a->splitk <= 1)
        return 0;
    return (size_t)a->splitk * (size_t)p->m * (size_t)p->n * sizeof(float) *
           (size_t)p->batch;
}

/* The algorithm for these types in its default configuration: the
 * whole depth at once (cublasLtMatmulAlgoInit's). */
static void
algo_default(int32_t compute, int32_t scale, int32_t atype, int32_t btype,
             int32_t ctype, int32_t dtype, struct lt_algo *a)
{
    memset(a, 0, sizeof(*a));
    a->magic = EMU_LT_ALGO_MAGIC;
    a->id = 0;
    a->compute = compute;
    a->scale = scale;
    a->atype = atype;
    a->btype = btype;
    a->ctype = ctype;
    a->dtype = dtype;
    a->splitk = 1;
    a->reduction = CUBLASLT_REDUCTION_SCHEME_NONE;
}

static void
algo_make(const struct lt_problem *p, int splitk, struct lt_algo *a)
{
    algo_default(p->compute, p->scale, p->a.type, p->b.type, p->c.type,
                 p->d.type, a);
    a->splitk = splitk;
    a->reduction = splitk > 1 ? CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE
                              : CUBLASLT_REDUCTION_SCHEME_NONE;
}

/* An algorithm given to cublasLtMatmul: one of the emulator's, made for
 * these types and this depth (INVALID_VALUE otherwise, as for descriptors
 * that do not match the algorithm). Split-K takes any number of parts
 * from 2 to k, each at least one deep, reduced in the compute type (the
 * one scheme CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK offers). */
/* Whether a is the emulator's algorithm, made for p's types. */
static int
algo_for_types(const struct lt_problem *p, const struct lt_algo *a)
{
    return a->magic == EMU_LT_ALGO_MAGIC && a->id == 0 &&
           a->compute == p->compute && a->scale == p->scale &&
           a->atype == (int32_t)p->a.type && a->btype == (int32_t)p->b.type &&
           a->ctype == (int32_t)p->c.type && a->dtype == (int32_t)p->d.type;
}

static cublasStatus_t
algo_check(const struct lt_problem *p, const cublasLtMatmulAlgo_t *given,
           struct lt_algo *a)
{
    memcpy(a, given, sizeof(*a));
    if (!algo_for_types(p, a))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (a->tile != CUBLASLT_MATMUL_TILE_UNDEFINED ||
        a->stages != CUBLASLT_MATMUL_STAGES_UNDEFINED || a->swizzling != 0 ||
        a->custom_option != 0 || a->inner_shape != 0 || a->cluster_shape != 0)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (a->splitk == 1 && a->reduction == CUBLASLT_REDUCTION_SCHEME_NONE)
        return CUBLAS_STATUS_SUCCESS;
    if (a->splitk >= 2 && a->splitk <= p->k &&
        a->reduction == CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE)
        return CUBLAS_STATUS_SUCCESS;
    return CUBLAS_STATUS_INVALID_VALUE;
}

/* Thread blocks of 128 x 128 outputs (per part of split-K) over the SMs. */
static float
algo_waves(const struct lt_problem *p, const struct lt_algo *a)
{
    double tiles = (double)((p->m + 127) / 128) * (double)((p->n + 127) / 128) *
                   (double)p->batch * (double)a->splitk;

    return (float)(tiles / (double)p->sm_count);
}

/* Whether a preference admits an algorithm: workspace, reduction scheme,
 * the alignment each matrix is promised (the emulator's algorithms want
 * their elements aligned), implementation and waves. */
static int
pref_admits(const struct emu_lt_pref *pref, const struct lt_problem *p,
            const struct lt_algo *a)
{
    const struct lt_matrix *m[4] = { &p->a, &p->b, &p->c, &p->d };
    float waves = algo_waves(p, a);

    if (algo_workspace(p, a) > pref->max_workspace_bytes)
        return 0;
    if (a->reduction != CUBLASLT_REDUCTION_SCHEME_NONE &&
        (pref->reduction_scheme_mask & a->reduction) == 0)
        return 0;
    for (int i = 0; i < 4; i++)
        if (pref->min_alignment[i] < type_size(m[i]->type))
            return 0;
    if ((p->kind.impl_flags & ~pref->impl_mask) != 0)
        return 0;
    return !(pref->max_waves_count > 0.0f && waves > pref->max_waves_count);
}

/* The heuristic: the configurations that fit, fastest first by the
 * emulator's model (split-K moves more bytes, so it comes second).
 * Returns how many it wrote to out (at most `room`). */
static int
heuristic(const struct emu_lt_pref *pref, const struct lt_problem *p,
          cublasLtMatmulHeuristicResult_t *out, int room)
{
    int splits[2] = { 1, SPLIT_K }, count = 0;

    for (int i = 0; i < 2 && count < room; i++) {
        struct lt_algo a;

        if (splits[i] > 1 && !splitk_fits(p))
            continue;
        algo_make(p, splits[i], &a);
        if (!pref_admits(pref, p, &a))
            continue;
        memset(&out[count], 0, sizeof(out[count]));
        memcpy(&out[count].algo, &a, sizeof(a));
        out[count].workspaceSize = algo_workspace(p, &a);
        out[count].state = CUBLAS_STATUS_SUCCESS;
        out[count].wavesCount = algo_waves(p, &a);
        count++;
    }
    return count;
}

static cublasStatus_t
algo_get_heuristic(cublasLtHandle_t lightHandle,
                               cublasLtMatmulDesc_t operationDesc,
                               cublasLtMatrixLayout_t Adesc,
                               cublasLtMatrixLayout_t Bdesc,
                               cublasLtMatrixLayout_t Cdesc,
                               cublasLtMatrixLayout_t Ddesc,
                               cublasLtMatmulPreference_t preference,
                               int requestedAlgoCount,
                               cublasLtMatmulHeuristicResult_t
                                   heuristicResultsArray[],
                               int *returnAlgoCount)
{
    const struct emu_lt_pref *pref = emu_lt_pref_at(preference);
    struct lt_problem p;
    cublasStatus_t st;
    int device, count, fault;

    st = emu_lt_handle_device(lightHandle, &device);
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    if ((fault = emu_fault("cublasLtMatmulAlgoGetHeuristic",
                           CUBLAS_STATUS_NOT_SUPPORTED)) != 0)
        return (cublasStatus_t)fault;
    if (requestedAlgoCount <= 0 || heuristicResultsArray == NULL ||
        returnAlgoCount == NULL || pref == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    *returnAlgoCount = 0;
    st = problem_check(operationDesc, Adesc, Bdesc, Cdesc, Ddesc, &p);
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    /* LIMITED_BY_ALGO_ID searches the configurations of the algorithm
     * whose id the first result holds, which "must be initialized with
     * cublasLtMatmulAlgoInit()" (cublasLt.h): here for these types, else
     * the descriptors do not match it. The emulator's one id has the
     * configurations BEST_FIT offers. */
    if (pref->search_mode == CUBLASLT_SEARCH_LIMITED_BY_ALGO_ID) {
        struct lt_algo given;

        memcpy(&given, &heuristicResultsArray[0].algo, sizeof(given));
        if (!algo_for_types(&p, &given))
            return CUBLAS_STATUS_INVALID_VALUE;
    } else if (pref->search_mode != CUBLASLT_SEARCH_BEST_FIT) {
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    if (emu_call_log_on())
        emu_call_log("cublasLtMatmulAlgoGetHeuristic m=%lld n=%lld k=%lld "
                     "type_ab=%s sm_count_target=%d max_workspace=%llu",
                     (long long)p.m, (long long)p.n, (long long)p.k,
                     type_name(p.a.type), (int)p.sm_count_target,
                     (unsigned long long)pref->max_workspace_bytes);
    count = heuristic(pref, &p, heuristicResultsArray, requestedAlgoCount);
    *returnAlgoCount = count;
    return count > 0 ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_SUPPORTED;
}

/* Whether an algorithm suits the operation and layouts: the checks of
 * cublasLtMatmul before it looks at pointers, and the algorithm's own
 * (INVALID_VALUE when the descriptors do not match it); the workspace it
 * needs and its waves count in *result. */
cublasStatus_t
cublasLtMatmulAlgoCheck(cublasLtHandle_t lightHandle,
                        cublasLtMatmulDesc_t operationDesc,
                        cublasLtMatrixLayout_t Adesc,
                        cublasLtMatrixLayout_t Bdesc,
                        cublasLtMatrixLayout_t Cdesc,
                        cublasLtMatrixLayout_t Ddesc,
                        const cublasLtMatmulAlgo_t *algo,
                        cublasLtMatmulHeuristicResult_t *result)
{
    struct lt_problem p;
    struct lt_algo a;
    cublasStatus_t st;
    int device, fault;

    st = emu_lt_handle_device(lightHandle, &device);
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    if ((fault = emu_fault("cublasLtMatmulAlgoCheck",
                           CUBLAS_STATUS_NOT_SUPPORTED)) != 0)
        return (cublasStatus_t)fault;
    if (algo == NULL || result == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    st = problem_check(operationDesc, Adesc, Bdesc, Cdesc, Ddesc, &p);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = algo_check(&p, algo, &a);
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    memset(result, 0, sizeof(*result));
    memcpy(&result->algo, algo, sizeof(*algo));
    result->workspaceSize = algo_workspace(&p, &a);
    result->state = CUBLAS_STATUS_SUCCESS;
    result->wavesCount = algo_waves(&p, &a);
    return CUBLAS_STATUS_SUCCESS;
}

/* ---- The algorithm API ----------------------------------------------------- */

/*
 * cublasLtMatmulAlgoGetIds, AlgoInit, AlgoCapGetAttribute and
 * AlgoConfigSet/GetAttribute, as cublasLt.h (CUDA 13) documents them:
 * the lower-level API with which a program runs its own search (list the
 * ids, initialise each, read its capabilities, set a configuration,
 * cublasLtMatmulAlgoCheck it, time it). The emulator has one algorithm,
 * id 0, for every type combination it emulates.
 */

/* Whether the emulator has an algorithm for these types: those
 * cublasLtMatmul runs (C and D of one type). */
static int
algo_types_ok(cublasComputeType_t compute, cudaDataType_t scale,
              cudaDataType_t atype, cudaDataType_t btype, cudaDataType_t ctype,
              cudaDataType_t dtype)
{
    struct lt_kind kind;

    return atype == btype && ctype == dtype &&
           kind_of((int32_t)compute, (int32_t)scale, atype, dtype, &kind) ==
               CUBLAS_STATUS_SUCCESS;
}

/* "INVALID_VALUE if requestedAlgoCount is less or equal to zero"; the
 * ids that can run these types in algoIdsArray, their count (0 for types
 * with none) in *returnAlgoCount. */
cublasStatus_t
cublasLtMatmulAlgoGetIds(cublasLtHandle_t lightHandle,
                         cublasComputeType_t computeType,
                         cudaDataType_t scaleType, cudaDataType_t Atype,
                         cudaDataType_t Btype, cudaDataType_t Ctype,
                         cudaDataType_t Dtype, int requestedAlgoCount,
                         int algoIdsArray[], int *returnAlgoCount)
{
    cublasStatus_t st;
    int device;

    if ((st = emu_lt_handle_device(lightHandle, &device)) !=
        CUBLAS_STATUS_SUCCESS)
        return st;
    if (requestedAlgoCount <= 0 || algoIdsArray == NULL ||
        returnAlgoCount == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    *returnAlgoCount = 0;
    if (algo_types_ok(computeType, scaleType, Atype, Btype, Ctype, Dtype)) {
        algoIdsArray[0] = 0;
        *returnAlgoCount = 1;
    }
    return CUBLAS_STATUS_SUCCESS;
}

/* "INVALID_VALUE if algo is NULL or algoId is outside of recognized
 * range; NOT_SUPPORTED if algoId is not supported for given combination
 * of data types". */
cublasStatus_t
cublasLtMatmulAlgoInit(cublasLtHandle_t lightHandle,
                       cublasComputeType_t computeType,
                       cudaDataType_t scaleType, cudaDataType_t Atype,
                       cudaDataType_t Btype, cudaDataType_t Ctype,
                       cudaDataType_t Dtype, int algoId,
                       cublasLtMatmulAlgo_t *algo)
{
    struct lt_algo a;
    cublasStatus_t st;
    int device;

    if ((st = emu_lt_handle_device(lightHandle, &device)) !=
        CUBLAS_STATUS_SUCCESS)
        return st;
    if (algo == NULL || algoId != 0)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (!algo_types_ok(computeType, scaleType, Atype, Btype, Ctype, Dtype))
        return CUBLAS_STATUS_NOT_SUPPORTED;
    algo_default((int32_t)computeType, (int32_t)scaleType, (int32_t)Atype,
                 (int32_t)Btype, (int32_t)Ctype, (int32_t)Dtype, &a);
    memset(algo, 0, sizeof(*algo));
    memcpy(algo, &a, sizeof(a));
    return CUBLAS_STATUS_SUCCESS;
}

/* An attribute's value written to a caller's buffer as cublasLt.h's
 * Get functions do: sizeInBytes 0 asks for the size (in *sizeWritten,
 * which must then be given); otherwise buf must be given and hold it: a
 * scalar exactly, an array at least. */
static cublasStatus_t
attr_write(const void *value, size_t size, int is_array, void *buf,
           size_t sizeInBytes, size_t *sizeWritten)
{
    if (sizeInBytes == 0) {
        if (sizeWritten == NULL)
            return CUBLAS_STATUS_INVALID_VALUE;
        *sizeWritten = size;
        return CUBLAS_STATUS_SUCCESS;
    }
    if (buf == NULL || (is_array ? sizeInBytes < size : sizeInBytes != size))
        return CUBLAS_STATUS_INVALID_VALUE;
    memcpy(buf, value, size);
    if (sizeWritten != NULL)
        *sizeWritten = size;
    return CUBLAS_STATUS_SUCCESS;
}

/* The algorithm's capabilities: split-K reduced in the compute type,
 * strided batches, D apart from C; no tiles, stages, swizzling, custom
 * options or orders beyond COL and ROW; the pointer modes and epilogues
 * cublasLtMatmul takes; elements aligned to their own size (what the
 * heuristic's alignment check wants). */
cublasStatus_t
cublasLtMatmulAlgoCapGetAttribute(const cublasLtMatmulAlgo_t *algo,
                                  cublasLtMatmulAlgoCapAttributes_t attr,
                                  void *buf, size_t sizeInBytes,
                                  size_t *sizeWritten)
{
    static const uint32_t epilogues =
        CUBLASLT_EPILOGUE_DEFAULT | CUBLASLT_EPILOGUE_RELU |
        CUBLASLT_EPILOGUE_RELU_AUX | CUBLASLT_EPILOGUE_BIAS |
        CUBLASLT_EPILOGUE_RELU_BIAS | CUBLASLT_EPILOGUE_RELU_AUX_BIAS |
        CUBLASLT_EPILOGUE_DRELU | CUBLASLT_EPILOGUE_GELU |
        CUBLASLT_EPILOGUE_GELU_AUX | CUBLASLT_EPILOGUE_GELU_BIAS |
        CUBLASLT_EPILOGUE_GELU_AUX_BIAS | CUBLASLT_EPILOGUE_DGELU;
    static const uint32_t pointer_modes =
        CUBLASLT_POINTER_MODE_MASK_HOST | CUBLASLT_POINTER_MODE_MASK_DEVICE |
        CUBLASLT_POINTER_MODE_MASK_DEVICE_VECTOR |
        CUBLASLT_POINTER_MODE_MASK_ALPHA_DEVICE_VECTOR_BETA_ZERO |
        CUBLASLT_POINTER_MODE_MASK_ALPHA_DEVICE_VECTOR_BETA_HOST;
    const uint32_t undefined[1] = { 0 };   /* TILE_ / STAGES_UNDEFINED */
    struct lt_algo a;
    struct lt_kind kind;
    int32_t i32;
    uint32_t u32;
    uint64_t u64;

    if (algo == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    memcpy(&a, algo, sizeof(a));
    if (a.magic != EMU_LT_ALGO_MAGIC)
        return CUBLAS_STATUS_INVALID_VALUE;
    switch (attr) {
    case CUBLASLT_ALGO_CAP_SPLITK_SUPPORT:
    case CUBLASLT_ALGO_CAP_STRIDED_BATCH_SUPPORT:
    case CUBLASLT_ALGO_CAP_OUT_OF_PLACE_RESULT_SUPPORT:
        i32 = 1;
        return attr_write(&i32, sizeof(i32), 0, buf, sizeInBytes, sizeWritten);
    case CUBLASLT_ALGO_CAP_UPLO_SUPPORT:
    case CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX:
    case CUBLASLT_ALGO_CAP_CUSTOM_MEMORY_ORDER:
    case CUBLASLT_ALGO_CAP_LD_NEGATIVE:
    case CUBLASLT_ALGO_CAP_POINTER_ARRAY_BATCH_SUPPORT:
    case CUBLASLT_ALGO_CAP_FLOATING_POINT_EMULATION_SUPPORT:
        i32 = 0;
        return attr_write(&i32, sizeof(i32), 0, buf, sizeInBytes, sizeWritten);
    case CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK:
        u32 = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
        return attr_write(&u32, sizeof(u32), 0, buf, sizeInBytes, sizeWritten);
    case CUBLASLT_ALGO_CAP_CTA_SWIZZLING_SUPPORT:
        u32 = 0;
        return attr_write(&u32, sizeof(u32), 0, buf, sizeInBytes, sizeWritten);
    case CUBLASLT_ALGO_CAP_POINTER_MODE_MASK:
        return attr_write(&pointer_modes, sizeof(pointer_modes), 0, buf,
                          sizeInBytes, sizeWritten);
    case CUBLASLT_ALGO_CAP_EPILOGUE_MASK:
        return attr_write(&epilogues, sizeof(epilogues), 0, buf, sizeInBytes,
                          sizeWritten);
    case CUBLASLT_ALGO_CAP_TILE_IDS:
    case CUBLASLT_ALGO_CAP_STAGES_IDS:
        return attr_write(undefined, sizeof(undefined), 1, buf, sizeInBytes,
                          sizeWritten);
    case CUBLASLT_ALGO_CAP_NUMERICAL_IMPL_FLAGS:
        if (kind_of(a.compute, a.scale, (cudaDataType)a.atype,
                    (cudaDataType)a.dtype, &kind) != CUBLAS_STATUS_SUCCESS)
            return CUBLAS_STATUS_INVALID_VALUE;
        u64 = kind.impl_flags;
        return attr_write(&u64, sizeof(u64), 0, buf, sizeInBytes, sizeWritten);
    case CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_A_BYTES:
    case CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_B_BYTES:
    case CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_C_BYTES:
    case CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_D_BYTES:
        u32 = (uint32_t)type_size(
            (cudaDataType)(attr == CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_A_BYTES ? a.atype
                           : attr == CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_B_BYTES ? a.btype
                           : attr == CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_C_BYTES ? a.ctype
                                                                            : a.dtype));
        return attr_write(&u32, sizeof(u32), 0, buf, sizeInBytes, sizeWritten);
    default:
        return CUBLAS_STATUS_INVALID_VALUE;
    }
}

/* Each configuration attribute's field in the algorithm (its size is
 * the attribute's documented type's). */
#define CONFIG_FIELD(attr, field) \
    [attr] = { offsetof(struct lt_algo, field), \
               sizeof(((struct lt_algo *)0)->field) }
static const struct {
    size_t offset, size;
} config_fields[] = {
    CONFIG_FIELD(CUBLASLT_ALGO_CONFIG_ID, id),
    CONFIG_FIELD(CUBLASLT_ALGO_CONFIG_TILE_ID, tile),
    CONFIG_FIELD(CUBLASLT_ALGO_CONFIG_SPLITK_NUM, splitk),
    CONFIG_FIELD(CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, reduction),
    CONFIG_FIELD(CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, swizzling),
    CONFIG_FIELD(CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, custom_option),
    CONFIG_FIELD(CUBLASLT_ALGO_CONFIG_STAGES_ID, stages),
    CONFIG_FIELD(CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, inner_shape),
    CONFIG_FIELD(CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, cluster_shape),
};
#undef CONFIG_FIELD

/* A configuration attribute's field in the algorithm and its size. */
static void *
config_field(struct lt_algo *a, cublasLtMatmulAlgoConfigAttributes_t attr,
             size_t *size)
{
    if ((unsigned)attr >= sizeof(config_fields) / sizeof(config_fields[0]))
        return NULL;
    *size = config_fields[attr].size;
    return (unsigned char *)a + config_fields[attr].offset;
}

/* "INVALID_VALUE if buf is NULL or sizeInBytes doesn't match size of
 * internal storage for selected attribute"; the id is read-only ("set by
 * cublasLtMatmulAlgoInit()"). A value the algorithm does not support is
 * stored: cublasLtMatmulAlgoCheck and cublasLtMatmul refuse it. */
cublasStatus_t
cublasLtMatmulAlgoConfigSetAttribute(cublasLtMatmulAlgo_t *algo,
                                     cublasLtMatmulAlgoConfigAttributes_t attr,
                                     const void *buf, size_t sizeInBytes)
{
    struct lt_algo a;
    size_t size;
    void *field;

    if (algo == NULL || buf == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    memcpy(&a, algo, sizeof(a));
    field = config_field(&a, attr, &size);
    if (field == NULL || attr == CUBLASLT_ALGO_CONFIG_ID || sizeInBytes != size)
        return CUBLAS_STATUS_INVALID_VALUE;
    memcpy(field, buf, size);
    memcpy(algo, &a, sizeof(a));
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtMatmulAlgoConfigGetAttribute(const cublasLtMatmulAlgo_t *algo,
                                     cublasLtMatmulAlgoConfigAttributes_t attr,
                                     void *buf, size_t sizeInBytes,
                                     size_t *sizeWritten)
{
    struct lt_algo a;
    size_t size;
    void *field;

    if (algo == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    memcpy(&a, algo, sizeof(a));
    if ((field = config_field(&a, attr, &size)) == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    return attr_write(field, size, 0, buf, sizeInBytes, sizeWritten);
}

/* ---- The queued product --------------------------------------------------- */

/* alpha and beta as the pointer mode gives them: host values read at call
 * time, device scalars or vectors (one value per row of D) read when the
 * work runs. */
struct lt_scalars {
    int alpha_vector, beta_vector;  /* per-row device vectors */
    int alpha_on_device, beta_on_device;
    float alpha, beta;              /* host values */
    CUdeviceptr alpha_at, beta_at;
};

struct lt_job {
    struct lt_problem p;
    struct lt_algo algo;
    struct lt_scalars s;
    CUdeviceptr a, b, c, d, bias, aux, workspace;
    int partial;            /* an injected fault: part of D only */
};

/* The values for one member of the batch: alpha[m] and beta[m]. Fails (-1)
 * when a device scalar or vector is not in device memory. */
static int
read_scalars(const struct lt_job *j, int64_t member, float *alpha,
             float *beta)
{
    const struct lt_scalars *s = &j->s;
    size_t m = (size_t)j->p.m;
    const void *src;

    for (size_t i = 0; i < m; i++)
        alpha[i] = s->alpha, beta[i] = s->beta;
    if (s->alpha_on_device) {
        CUdeviceptr at = s->alpha_at;
        size_t n = s->alpha_vector ? m : 1;

        if (s->alpha_vector)
            at += (CUdeviceptr)(member * j->p.alpha_stride * 4);
        if ((src = emu_dev_at(at, n * sizeof(float))) == NULL)
            return -1;
        for (size_t i = 0; i < m; i++)
            memcpy(&alpha[i], (const float *)src + (n > 1 ? i : 0), 4);
    }
    if (s->beta_on_device) {
        size_t n = s->beta_vector ? m : 1;

        if ((src = emu_dev_at(s->beta_at, n * sizeof(float))) == NULL)
            return -1;
        for (size_t i = 0; i < m; i++)
            memcpy(&beta[i], (const float *)src + (n > 1 ? i : 0), 4);
    }
    return 0;
}

/* A member's matrix: strided from base, or read from the device array of
 * device pointers at base. */
static CUresult
member_at(const struct lt_job *j, CUdeviceptr base, const struct lt_matrix *x,
          int64_t member, CUdeviceptr *out)
{
    const void *slot;

    if (!j->p.by_array) {
        *out = base + (CUdeviceptr)(member * x->stride *
                                    (int64_t)type_size(x->type));
        return CUDA_SUCCESS;
    }
    slot = emu_dev_at(base + (CUdeviceptr)member * sizeof(CUdeviceptr),
                      sizeof(CUdeviceptr));
    if (slot == NULL)
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    memcpy(out, slot, sizeof(*out));
    return CUDA_SUCCESS;
}

/* op(X), rows x cols, as a dense column-major FP32 matrix, each element
 * converted from its type and rounded as the compute type says. */
static void
gather_op(const void *src, const struct lt_matrix *x, int trans,
          enum operand_round r, int64_t rows, int64_t cols, float *dst)
{
    for (int64_t q = 0; q < cols; q++)
        for (int64_t i = 0; i < rows; i++) {
            size_t idx = trans ? offset(x, q, i) : offset(x, i, q);
            dst[i + q * rows] = round_operand(load(src, idx, x->type), r);
        }
}

/* An operand as the BLAS takes it: a column-major matrix, its leading
 * dimension, whether it is transposed, and how far apart the BLAS's
 * leading-dimension and depth steps are (for the parts of split-K). */
struct blas_operand {
    const float *base;
    int64_t ld;
    int trans;
};

/* FP32 operands that need no rounding go to the BLAS where they lie: a
 * row-major matrix is the column-major transpose with the same ld. */
static struct blas_operand
direct_operand(const void *src, const struct lt_matrix *x, int trans)
{
    struct blas_operand o = { src, x->ld, trans != x->row_order };

    return o;
}

/* Depth rows [k0, ...) of op(A) (a column block) or of op(B) (a row
 * block). */
static const float *
depth_slice(const struct blas_operand *o, int is_b, int64_t k0)
{
    int along_ld = is_b ? o->trans : !o->trans;

    return o->base + (along_ld ? k0 * o->ld : k0);
}

/* prod = op(A) op(B), m x n dense; with split-K the parts go to the
 * workspace and are summed in order in FP32. BF16x9 is a kernel of its
 * own, without split-K. */
static CUresult
product(const struct lt_job *j, const struct blas_operand *oa,
        const struct blas_operand *ob, float *prod, float *ws)
{
    const struct lt_problem *p = &j->p;
    size_t mn = (size_t)p->m * (size_t)p->n;
    int parts = j->algo.splitk;

    if (p->kind.round == ROUND_BF16X9)
        return emu_cpu_sgemm_bf16x9(oa->trans, ob->trans, p->m, p->n, p->k,
                                    oa->base, oa->ld, ob->base, ob->ld, prod,
                                    p->m);
    if (parts <= 1) {
        emu_cpu_sgemm(oa->trans, ob->trans, p->m, p->n, p->k, oa->base,
                      oa->ld, ob->base, ob->ld, 0.0f, prod, p->m);
        return CUDA_SUCCESS;
    }
    for (int q = 0; q < parts; q++) {
        int64_t k0 = p->k * q / parts, k1 = p->k * (q + 1) / parts;

        emu_cpu_sgemm(oa->trans, ob->trans, p->m, p->n, k1 - k0,
                      depth_slice(oa, 0, k0), oa->ld, depth_slice(ob, 1, k0),
                      ob->ld, 0.0f, ws + (size_t)q * mn, p->m);
    }
    for (size_t e = 0; e < mn; e++) {
        float v = ws[e];

        for (int q = 1; q < parts; q++)
            v = v + ws[(size_t)q * mn + e];
        prod[e] = v;
    }
    return CUDA_SUCCESS;
}

/* GELU as cuBLASLt documents it, the tanh approximation, and its
 * derivative for DGELU; in double, rounded once to FP32. */
static const double gelu_c = 0.7978845608028654;   /* sqrt(2 / pi) */

static float
gelu(float x)
{
    double v = x, t = tanh(gelu_c * (v + 0.044715 * v * v * v));

    return (float)(0.5 * v * (1.0 + t));
}

static float
gelu_grad(float x)
{
    double v = x, t = tanh(gelu_c * (v + 0.044715 * v * v * v));

    return (float)(0.5 * (1.0 + t) +
                   0.5 * v * (1.0 - t * t) * gelu_c *
                       (1.0 + 3.0 * 0.044715 * v * v));
}

/* Host aliases of one member's vectors and matrices. */
struct lt_member {
    const void *c;          /* NULL when C is not read */
    void *d;
    const void *bias;
    void *aux;
};

/* The epilogue of element (i, jj): scaling, C, bias, activation, aux. */
static void
epilogue(const struct lt_job *j, const struct lt_member *mb, int64_t i,
         int64_t jj, float acc, float alpha, float beta)
{
    const struct lt_problem *p = &j->p;
    size_t ai = (size_t)(i + jj * p->aux_ld);
    uint8_t *bits = mb->aux;
    float v = alpha * acc;

    if (beta != 0.0f && mb->c != NULL)
        v = v + beta * load(mb->c, offset(&p->c, i, jj), p->c.type);
    if (p->bias)
        v = v + load(mb->bias, (size_t)i, p->d.type);
    switch (p->act) {
    case ACT_RELU:
        if (p->aux_out) {
            if (v > 0.0f)
                bits[ai / 8] = (uint8_t)(bits[ai / 8] | (1u << (ai % 8)));
            else
                bits[ai / 8] = (uint8_t)(bits[ai / 8] & ~(1u << (ai % 8)));
        }
        v = v > 0.0f ? v : 0.0f;
        break;
    case ACT_GELU:
        if (p->aux_out)
            emu_elem_store(mb->aux, ai, elem_of(p->d.type), v);
        v = gelu(v);
        break;
    case ACT_DRELU:
        if (!((bits[ai / 8] >> (ai % 8)) & 1u))
            v = 0.0f;
        break;
    case ACT_DGELU:
        v = v * gelu_grad(emu_elem_load(mb->aux, ai, elem_of(p->d.type)));
        break;
    default:
        break;
    }
    emu_elem_store(mb->d, offset(&p->d, i, jj), elem_of(p->d.type), v);
}

/* Bytes of a member's auxiliary matrix: bits for the ReLU mask. */
static size_t
aux_bytes(const struct lt_problem *p)
{
    size_t span = (size_t)((p->n - 1) * p->aux_ld + p->m);

    return p->act == ACT_RELU || p->act == ACT_DRELU
               ? (span + 7) / 8
               : span * type_size(p->d.type);
}

/* Host aliases of the vectors and C and D of one member; C only when it
 * is read. Fails with ILLEGAL_ADDRESS outside device memory. */
static CUresult
member_outputs(const struct lt_job *j, int64_t member, int read_c,
               struct lt_member *mb)
{
    const struct lt_problem *p = &j->p;
    CUdeviceptr c = 0, d = 0;
    CUresult rc;
    size_t aux_elem = p->act == ACT_GELU || p->act == ACT_DGELU
                          ? type_size(p->d.type) : 0;

    memset(mb, 0, sizeof(*mb));
    if ((rc = member_at(j, j->d, &p->d, member, &d)) != CUDA_SUCCESS)
        return rc;
    if ((mb->d = emu_dev_at(d, matrix_bytes(&p->d))) == NULL)
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    emu_dev_wrote(d, matrix_bytes(&p->d));
    if (read_c) {
        if ((rc = member_at(j, j->c, &p->c, member, &c)) != CUDA_SUCCESS)
            return rc;
        if ((mb->c = emu_dev_at(c, matrix_bytes(&p->c))) == NULL)
            return CUDA_ERROR_ILLEGAL_ADDRESS;
    }
    if (p->bias) {
        CUdeviceptr at = j->bias + (CUdeviceptr)(member * p->bias_stride *
                                                 (int64_t)type_size(p->d.type));
        mb->bias = emu_dev_at(at, (size_t)p->m * type_size(p->d.type));
        if (mb->bias == NULL)
            return CUDA_ERROR_ILLEGAL_ADDRESS;
    }
    if (p->aux_out || p->aux_in) {
        /* The batch stride of the bit mask counts bits, a multiple of 128:
         * whole bytes. */
        int64_t step = aux_elem ? p->aux_stride * (int64_t)aux_elem
                                : p->aux_stride / 8;
        mb->aux = emu_dev_at(j->aux + (CUdeviceptr)(member * step),
                             aux_bytes(p));
        if (mb->aux == NULL)
            return CUDA_ERROR_ILLEGAL_ADDRESS;
    }
    return CUDA_SUCCESS;
}

/* The operands of one member as the BLAS takes them, gathered into ga and
 * gb when they need converting or rounding. */
static CUresult
member_operands(const struct lt_job *j, int64_t member, float *ga, float *gb,
                struct blas_operand *oa, struct blas_operand *ob)
{
    const struct lt_problem *p = &j->p;
    int direct = p->a.type == CUDA_R_32F &&
                 (p->kind.round == ROUND_NONE ||
                  p->kind.round == ROUND_BF16X9);
    CUdeviceptr a, b;
    const void *ha, *hb;
    CUresult rc;

    if ((rc = member_at(j, j->a, &p->a, member, &a)) != CUDA_SUCCESS ||
        (rc = member_at(j, j->b, &p->b, member, &b)) != CUDA_SUCCESS)
        return rc;
    ha = emu_dev_at(a, matrix_bytes(&p->a));
    hb = emu_dev_at(b, matrix_bytes(&p->b));
    if (ha == NULL || hb == NULL)
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    if (direct) {
        *oa = direct_operand(ha, &p->a, p->transa);
        *ob = direct_operand(hb, &p->b, p->transb);
        return CUDA_SUCCESS;
    }
    gather_op(ha, &p->a, p->transa, p->kind.round, p->m, p->k, ga);
    gather_op(hb, &p->b, p->transb, p->kind.round, p->k, p->n, gb);
    oa->base = ga, oa->ld = p->m, oa->trans = 0;
    ob->base = gb, ob->ld = p->k, ob->trans = 0;
    return CUDA_SUCCESS;
}

/* Scratch for one member: the gathered operands and the product. */
struct lt_scratch {
    float *ga, *gb, *prod, *alpha, *beta;
};

static void
scratch_free(struct lt_scratch *s)
{
    free(s->ga), free(s->gb), free(s->prod), free(s->alpha), free(s->beta);
}

static CUresult
scratch_new(const struct lt_problem *p, struct lt_scratch *s)
{
    size_t m = (size_t)p->m, n = (size_t)p->n, k = (size_t)p->k;

    memset(s, 0, sizeof(*s));
    s->ga = malloc((m * k > 0 ? m * k : 1) * sizeof(float));
    s->gb = malloc((k * n > 0 ? k * n : 1) * sizeof(float));
    s->prod = calloc(m * n, sizeof(float));
    s->alpha = malloc(m * sizeof(float));
    s->beta = malloc(m * sizeof(float));
    if (!s->ga || !s->gb || !s->prod || !s->alpha || !s->beta) {
        scratch_free(s);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return CUDA_SUCCESS;
}

/* One member: read the scalars, multiply unless alpha is a host zero or k
 * is 0 (A and B are then not read), and write D through the epilogue, for
 * all of it or, for a partial fault, its first half of columns (rows when
 * it has one column). */
static CUresult
run_member(const struct lt_job *j, int64_t member, struct lt_scratch *s)
{
    const struct lt_problem *p = &j->p;
    int64_t mm = p->m, nn = p->n;
    size_t mn = (size_t)p->m * (size_t)p->n;
    int multiply = p->k > 0 &&
                   (j->s.alpha_on_device || j->s.alpha != 0.0f);
    int read_c = 0;
    struct blas_operand oa, ob;
    struct lt_member mb;
    float *ws = NULL;
    CUresult rc;

    if (read_scalars(j, member, s->alpha, s->beta) != 0)
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    for (int64_t i = 0; i < p->m; i++)
        read_c |= s->beta[i] != 0.0f;
    if ((rc = member_outputs(j, member, read_c, &mb)) != CUDA_SUCCESS)
        return rc;
    if (multiply) {
        if (j->algo.splitk > 1) {
            ws = emu_dev_at(j->workspace + (CUdeviceptr)((size_t)member *
                            (size_t)j->algo.splitk * mn * sizeof(float)),
                            (size_t)j->algo.splitk * mn * sizeof(float));
            if (ws == NULL)
                return CUDA_ERROR_ILLEGAL_ADDRESS;
        }
        rc = member_operands(j, member, s->ga, s->gb, &oa, &ob);
        if (rc != CUDA_SUCCESS)
            return rc;
        rc = product(j, &oa, &ob, s->prod, ws);
        if (rc != CUDA_SUCCESS)
            return rc;
    } else {
        memset(s->prod, 0, mn * sizeof(float));
    }
    if (j->partial && nn > 1)
        nn = (nn + 1) / 2;
    else if (j->partial)
        mm = (mm + 1) / 2;
    for (int64_t jj = 0; jj < nn; jj++)
        for (int64_t i = 0; i < mm; i++)
            epilogue(j, &mb, i, jj, s->prod[i + jj * p->m], s->alpha[i],
                     s->beta[i]);
    return CUDA_SUCCESS;
}

static CUresult
matmul_run(void *arg)
{
    const struct lt_job *j = arg;
    struct lt_scratch s;
    CUresult rc;
    int64_t members = j->partial ? 1 : j->p.batch;

    if ((rc = scratch_new(&j->p, &s)) != CUDA_SUCCESS)
        return rc;
    for (int64_t b = 0; rc == CUDA_SUCCESS && b < members; b++)
        rc = run_member(j, b, &s);
    scratch_free(&s);
    return rc;
}

/* ---- cublasLtMatmul -------------------------------------------------------- */

static void
take_scalars(const struct lt_problem *p, const void *alpha, const void *beta,
             struct lt_scalars *s)
{
    memset(s, 0, sizeof(*s));
    switch (p->pointer_mode) {
    case CUBLASLT_POINTER_MODE_HOST:
        memcpy(&s->alpha, alpha, sizeof(float));
        memcpy(&s->beta, beta, sizeof(float));
        return;
    case CUBLASLT_POINTER_MODE_DEVICE:
        s->alpha_on_device = s->beta_on_device = 1;
        break;
    case CUBLASLT_POINTER_MODE_DEVICE_VECTOR:
        s->alpha_on_device = s->beta_on_device = 1;
        s->alpha_vector = s->beta_vector = 1;
        break;
    case CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_ZERO:
        s->alpha_on_device = s->alpha_vector = 1;
        break;
    default:    /* ALPHA_DEVICE_VECTOR_BETA_HOST */
        s->alpha_on_device = s->alpha_vector = 1;
        memcpy(&s->beta, beta, sizeof(float));
        break;
    }
    s->alpha_at = (CUdeviceptr)(uintptr_t)alpha;
    s->beta_at = (CUdeviceptr)(uintptr_t)beta;
}

/* Whether C is known at call time not to be read: beta a host zero. */
static int
beta_known_zero(const struct lt_problem *p, const void *beta)
{
    float b;

    if (p->pointer_mode == CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_ZERO)
        return 1;
    if (p->pointer_mode != CUBLASLT_POINTER_MODE_HOST &&
        p->pointer_mode != CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_HOST)
        return 0;
    memcpy(&b, beta, sizeof(b));
    return b == 0.0f;
}

/* Unexpectedly NULL pointers, and an in-place C that is not D's layout. */
static cublasStatus_t
pointers_check(const struct lt_problem *p, cublasLtMatrixLayout_t Cdesc,
               cublasLtMatrixLayout_t Ddesc, const void *alpha,
               const void *A, const void *B, const void *beta, const void *C,
               const void *D, const struct emu_lt_desc *desc)
{
    int beta_zero_mode =
        p->pointer_mode == CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_ZERO;

    if (alpha == NULL || (beta == NULL && !beta_zero_mode) || D == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (p->k > 0 && (A == NULL || B == NULL))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (C == NULL && !beta_known_zero(p, beta))
        return CUBLAS_STATUS_INVALID_VALUE;
    if ((p->bias && desc->bias == NULL) ||
        ((p->aux_out || p->aux_in) && desc->aux == NULL))
        return CUBLAS_STATUS_INVALID_VALUE;
    /* In place means C == D and Cdesc == Ddesc. */
    if (C == D && Cdesc != NULL && Cdesc != Ddesc &&
        (p->c.ld != p->d.ld || p->c.stride != p->d.stride))
        return CUBLAS_STATUS_INVALID_VALUE;
    return CUBLAS_STATUS_SUCCESS;
}

/* The algorithm to run: the one given, or the implicit heuristic's first
 * with the default preference; then the workspace it needs, which must be
 * given, 256-byte aligned. */
static cublasStatus_t
algo_choose(const struct lt_problem *p, const cublasLtMatmulAlgo_t *given,
            void *workspace, size_t workspace_size, struct lt_algo *a)
{
    cublasLtMatmulHeuristicResult_t first;
    struct emu_lt_pref defaults;
    cublasStatus_t st;
    size_t need;

    if (given != NULL) {
        if ((st = algo_check(p, given, a)) != CUBLAS_STATUS_SUCCESS)
            return st;
    } else {
        emu_lt_pref_defaults(&defaults);
        if (heuristic(&defaults, p, &first, 1) == 0)
            return CUBLAS_STATUS_NOT_SUPPORTED;
        memcpy(a, &first.algo, sizeof(*a));
    }
    need = algo_workspace(p, a);
    if (workspace_size > 0 && ((uintptr_t)workspace & 255u) != 0)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (need > workspace_size || (need > 0 && workspace == NULL))
        return CUBLAS_STATUS_INVALID_VALUE;
    return CUBLAS_STATUS_SUCCESS;
}

/* Modelled time: the product's flops at the precision used and the bytes
 * the call moves (C read only when beta may be nonzero); BF16x9 with the
 * split of its operands (emu_model_bf16x9_ns). */
static double
matmul_model_ns(const struct lt_job *j)
{
    const struct lt_problem *p = &j->p;
    double m = (double)p->m, n = (double)p->n, k = (double)p->k;
    double batch = (double)p->batch, flops = 0.0, bytes;
    int multiply = p->k > 0 && (j->s.alpha_on_device || j->s.alpha != 0.0f);

    bytes = m * n * (double)type_size(p->d.type);
    if (j->s.beta_on_device || j->s.beta != 0.0f)
        bytes += m * n * (double)type_size(p->c.type);
    if (p->bias)
        bytes += m * (double)type_size(p->d.type);
    if (p->aux_out || p->aux_in)
        bytes += (double)aux_bytes(p);
    if (multiply) {
        flops = 2.0 * m * n * k * batch;
        bytes += (m * k + k * n) * (double)type_size(p->a.type);
        bytes += 2.0 * (double)algo_workspace(p, &j->algo) / batch;
    }
    if (p->kind.round == ROUND_BF16X9 && flops > 0.0)
        return emu_model_bf16x9_ns(flops, bytes * batch,
                                   (m * k + k * n) * batch);
    return emu_model_ns(flops, flops > 0.0 ? p->kind.prec : EMU_PREC_NONE,
                        bytes * batch);
}

/* EMULATED_16BFX9 runs BF16x9 where emu_bf16x9_runs says so, with the
 * strategy of the descriptor's emulation descriptor (DEFAULT without one),
 * else the native FP32 product. */
static void
settle_emulation(struct lt_job *job, const struct emu_lt_desc *desc)
{
    struct lt_kind *k = &job->p.kind;
    double emulated, native;

    if (k->round != ROUND_BF16X9)
        return;
    emulated = matmul_model_ns(job);
    k->round = ROUND_NONE;
    native = matmul_model_ns(job);
    if (emu_bf16x9_runs(emu_lt_emulation_strategy(desc->emulation), native,
                        emulated))
        k->round = ROUND_BF16X9;
}

static cublasStatus_t
matmul(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc,
               const void *alpha, const void *A, cublasLtMatrixLayout_t Adesc,
               const void *B, cublasLtMatrixLayout_t Bdesc, const void *beta,
               const void *C, cublasLtMatrixLayout_t Cdesc, void *D,
               cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t *algo,
               void *workspace, size_t workspaceSizeInBytes,
               cudaStream_t stream)
{
    const struct emu_lt_desc *desc = emu_lt_desc_at(computeDesc);
    struct lt_problem p;
    struct lt_algo chosen;
    struct lt_job *job;
    struct emu_op op = { 0 }; /* a kernel node when captured */
    cublasStatus_t st;
    int device, fault, partial;

    if ((st = emu_lt_handle_device(lightHandle, &device)) !=
            CUBLAS_STATUS_SUCCESS ||
        (st = problem_check(computeDesc, Adesc, Bdesc, Cdesc, Ddesc, &p)) !=
            CUBLAS_STATUS_SUCCESS ||
        (st = algo_choose(&p, algo, workspace, workspaceSizeInBytes,
                          &chosen)) != CUBLAS_STATUS_SUCCESS)
        return st;
    if (emu_call_log_on())
        emu_call_log("cublasLtMatmul m=%lld n=%lld k=%lld type_ab=%s "
                     "sm_count_target=%d workspace=%zu splitk=%d",
                     (long long)p.m, (long long)p.n, (long long)p.k,
                     type_name(p.a.type), (int)p.sm_count_target,
                     workspaceSizeInBytes, (int)chosen.splitk);
    if (p.m == 0 || p.n == 0)
        return CUBLAS_STATUS_SUCCESS;
    st = pointers_check(&p, Cdesc, Ddesc, alpha, A, B, beta, C, D, desc);
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    fault = emu_fault_partial("cublasLtMatmul", CUBLAS_STATUS_EXECUTION_FAILED,
                              &partial);
    if (fault != 0 && !partial)
        return (cublasStatus_t)fault;

    job = calloc(1, sizeof(*job));
    if (job == NULL)
        return fault ? (cublasStatus_t)fault : CUBLAS_STATUS_ALLOC_FAILED;
    job->p = p;
    job->algo = chosen;
    take_scalars(&p, alpha, beta, &job->s);
    job->a = (CUdeviceptr)(uintptr_t)A;
    job->b = (CUdeviceptr)(uintptr_t)B;
    job->c = (CUdeviceptr)(uintptr_t)C;
    job->d = (CUdeviceptr)(uintptr_t)D;
    job->bias = (CUdeviceptr)(uintptr_t)desc->bias;
    job->aux = (CUdeviceptr)(uintptr_t)desc->aux;
    job->workspace = (CUdeviceptr)(uintptr_t)workspace;
    job->partial = partial;
    settle_emulation(job, desc);
    op.name = "cublasLtMatmul";
    op.run = matmul_run;
    op.release = free;
    op.arg = job;
    op.model_ns = matmul_model_ns(job);
    /* The handle is not tied to a context: the work goes to the calling
     * thread's, bound as the runtime would when it has none. */
    if (emu_runtime_bind(device) != CUDA_SUCCESS) {
        free(job);
        return CUBLAS_STATUS_EXECUTION_FAILED;
    }
    if (emu_enqueue(stream, &op) != CUDA_SUCCESS)
        return CUBLAS_STATUS_EXECUTION_FAILED;
    /* A partial fault: the part is queued, the call still fails. */
    return fault ? (cublasStatus_t)fault : CUBLAS_STATUS_SUCCESS;
}

/* ---- The entry points, through the logger ---------------------------------- */

cublasStatus_t
cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t lightHandle,
                               cublasLtMatmulDesc_t operationDesc,
                               cublasLtMatrixLayout_t Adesc,
                               cublasLtMatrixLayout_t Bdesc,
                               cublasLtMatrixLayout_t Cdesc,
                               cublasLtMatrixLayout_t Ddesc,
                               cublasLtMatmulPreference_t preference,
                               int requestedAlgoCount,
                               cublasLtMatmulHeuristicResult_t
                                   heuristicResultsArray[],
                               int *returnAlgoCount)
{
    cublasStatus_t st = algo_get_heuristic(
        lightHandle, operationDesc, Adesc, Bdesc, Cdesc, Ddesc, preference,
        requestedAlgoCount, heuristicResultsArray, returnAlgoCount);

    if (emu_lt_log_on())
        emu_lt_log_call("cublasLtMatmulAlgoGetHeuristic", st,
                        "operationDesc=%p Adesc=%p Bdesc=%p Cdesc=%p "
                        "Ddesc=%p preference=%p requestedAlgoCount=%d "
                        "returnAlgoCount=%d",
                        (void *)operationDesc, (void *)Adesc, (void *)Bdesc,
                        (void *)Cdesc, (void *)Ddesc, (void *)preference,
                        requestedAlgoCount,
                        st == CUBLAS_STATUS_SUCCESS && returnAlgoCount != NULL
                            ? *returnAlgoCount
                            : 0);
    return st;
}

cublasStatus_t
cublasLtMatmul(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc,
               const void *alpha, const void *A, cublasLtMatrixLayout_t Adesc,
               const void *B, cublasLtMatrixLayout_t Bdesc, const void *beta,
               const void *C, cublasLtMatrixLayout_t Cdesc, void *D,
               cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t *algo,
               void *workspace, size_t workspaceSizeInBytes,
               cudaStream_t stream)
{
    cublasStatus_t st = matmul(lightHandle, computeDesc, alpha, A, Adesc, B,
                               Bdesc, beta, C, Cdesc, D, Ddesc, algo,
                               workspace, workspaceSizeInBytes, stream);

    if (emu_lt_log_on())
        emu_lt_log_call("cublasLtMatmul", st,
                        "computeDesc=%p A=%p Adesc=%p B=%p Bdesc=%p C=%p "
                        "Cdesc=%p D=%p Ddesc=%p algo=%p workspace=%p "
                        "workspaceSizeInBytes=%zu stream=%p",
                        (void *)computeDesc, A, (void *)Adesc, B,
                        (void *)Bdesc, C, (void *)Cdesc, D, (void *)Ddesc,
                        (const void *)algo, workspace, workspaceSizeInBytes,
                        (void *)stream);
    return st;
}
