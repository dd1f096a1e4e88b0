/* The emulated cuDNN legacy convolutions: forward, backward data, backward
 * filter and backward bias, the algorithm queries and workspace sizes.
 * One strided N-d convolution core serves all three directions; the
 * algorithms differ only in what they support, the workspace they ask for
 * and their modelled time. */
#include <cudnn.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cudnn_emu.h"
#include "emu.h"

#define BAD(...) emu_dnn_error(CUDNN_STATUS_BAD_PARAM, __VA_ARGS__)
#define UNSUPPORTED(...) emu_dnn_error(CUDNN_STATUS_NOT_SUPPORTED, __VA_ARGS__)

/* Which tensor a call writes: y (forward), x (backward data: dx) or the
 * filter (backward filter: dw). */
enum conv_dir { DIR_FWD, DIR_BWD_DATA, DIR_BWD_FILTER, DIR_COUNT };

static const char *const dir_api[DIR_COUNT] = {
    "cudnnConvolutionForward", "cudnnConvolutionBackwardData",
    "cudnnConvolutionBackwardFilter",
};

static const char FUSED_API[] = "cudnnConvolutionBiasActivationForward";

static const int dir_algo_count[DIR_COUNT] = {
    CUDNN_CONVOLUTION_FWD_ALGO_COUNT, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
    CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
};

/* How inputs are rounded before the products. */
enum operand_round { ROUND_NONE, ROUND_F16, ROUND_TF32 };

/* A convolution as the descriptors describe it, checked. */
struct conv_problem {
    int nsp;                        /* spatial dimensions */
    int n, c, k, groups, cg, kg;    /* cg, kg: channels per group */
    int in[EMU_DNN_MAX_SPATIAL], out[EMU_DNN_MAX_SPATIAL];
    int filt[EMU_DNN_MAX_SPATIAL], pad[EMU_DNN_MAX_SPATIAL];
    int stride[EMU_DNN_MAX_SPATIAL], dil[EMU_DNN_MAX_SPATIAL];
    int flip;                       /* CUDNN_CONVOLUTION: filter reversed */
    int nchw_packed;                /* x and y packed NCHW */
    cudnnDataType_t type;           /* of x, w and y */
    cudnnMathType_t math;
    enum operand_round round;
    enum emu_prec prec;             /* of the Tensor Core or FMA math */
};

/* ---- Data-type configurations and math ----------------------------------- */

/*
 * The configurations: FLOAT (float data and compute), PSEUDO_HALF (half
 * data, float compute) and BFLOAT16 (bfloat16 data, float compute).
 * TRUE_HALF (half compute) is refused as NOT_SUPPORTED, as GPUs without
 * half arithmetic do; DOUBLE and the integer types are not emulated.
 * Half and bfloat16 products are exact in FP32; FLOAT data follows the
 * math type: DEFAULT allows TF32 on Ampere and later, TENSOR_OP_MATH and
 * FMA keep FP32, ALLOW_CONVERSION rounds the inputs to FP16 first.
 */
static cudnnStatus_t
conv_config(struct conv_problem *p, cudnnDataType_t compute, const char *api)
{
    p->round = ROUND_NONE;
    p->prec = EMU_PREC_FP32;
    if (compute != CUDNN_DATA_FLOAT)
        return UNSUPPORTED("%s: data type %d with compute type %d", api,
                           (int)p->type, (int)compute);
    switch (p->type) {
    case CUDNN_DATA_FLOAT:
        if (p->math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) {
            p->round = ROUND_F16;
            p->prec = EMU_PREC_FP16;
        } else if (p->math == CUDNN_DEFAULT_MATH && emu_tf32_available()) {
            p->round = ROUND_TF32;
            p->prec = EMU_PREC_TF32;
        }
        return CUDNN_STATUS_SUCCESS;
    case CUDNN_DATA_HALF:
    case CUDNN_DATA_BFLOAT16:
        if (p->math != CUDNN_FMA_MATH)
            p->prec = emu_half_prec(p->type == CUDNN_DATA_BFLOAT16);
        return CUDNN_STATUS_SUCCESS;
    default:
        return UNSUPPORTED("%s: data type %d", api, (int)p->type);
    }
}

static int
packed_nchw(cudnnTensorDescriptor_t t)
{
    int64_t s = 1;

    for (int i = t->nb_dims - 1; i >= 0; i--) {
        if (t->stride[i] != s)
            return 0;
        s *= t->dim[i];
    }
    return 1;
}

/* Checks x, w, y against the convolution in the order the real library
 * reports: NULL and mismatched descriptors (BAD_PARAM), then what it does
 * not implement (NOT_SUPPORTED). For the backward directions x is dx and
 * y is dy. */
static cudnnStatus_t
conv_setup(struct conv_problem *p, cudnnTensorDescriptor_t x,
           cudnnFilterDescriptor_t w, cudnnConvolutionDescriptor_t conv,
           cudnnTensorDescriptor_t y, const char *api)
{
    int out[CUDNN_DIM_MAX];
    cudnnStatus_t st;

    memset(p, 0, sizeof(*p));
    if (!emu_dnn_tensor_ok(y))
        return BAD("%s: invalid or unset descriptor", api);
    st = emu_dnn_conv_output_dims(conv, x, w, out);
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    if (y->nb_dims != x->nb_dims || y->dim[0] != out[0] ||
        y->dim[1] != out[1])
        return BAD("%s: y is not N x K x ...", api);
    if (x->type != w->type || y->type != w->type)
        return BAD("%s: x, w and y differ in data type", api);
    if (x->nb_dims != 4 && x->nb_dims != 5)
        return UNSUPPORTED("%s: %d dimensions", api, x->nb_dims);
    if (memcmp(y->dim + 2, out + 2, (size_t)(x->nb_dims - 2) * sizeof(int)))
        return UNSUPPORTED("%s: y's spatial sizes are not the output's", api);

    p->nsp = conv->nb_spatial;
    p->n = x->dim[0];
    p->c = x->dim[1];
    p->k = w->dim[0];
    p->groups = conv->groups;
    p->cg = w->dim[1];
    p->kg = p->k / p->groups;
    for (int i = 0; i < p->nsp; i++) {
        p->in[i] = x->dim[2 + i];
        p->out[i] = y->dim[2 + i];
        p->filt[i] = w->dim[2 + i];
        p->pad[i] = conv->pad[i];
        p->stride[i] = conv->stride[i];
        p->dil[i] = conv->dilation[i];
    }
    p->flip = conv->mode == CUDNN_CONVOLUTION;
    p->nchw_packed = packed_nchw(x) && packed_nchw(y) &&
                     w->format == CUDNN_TENSOR_NCHW;
    p->type = x->type;
    p->math = conv->math;
    return conv_config(p, conv->compute, api);
}

/* ---- Algorithms ---------------------------------------------------------- */

enum algo_kind {
    KIND_NONE,          /* listed by the header, not implemented */
    KIND_IMPLICIT,      /* implicit GEMM, no workspace */
    KIND_PRECOMP,       /* implicit GEMM with precomputed indices */
    KIND_GEMM,          /* explicit im2col + GEMM */
    KIND_FFT,
    KIND_FFT_TILING,
    KIND_WINOGRAD,      /* fused 3x3 */
    KIND_WINOGRAD_NONFUSED,
};

struct algo_info {
    enum algo_kind kind;
    int deterministic;
};

/* Indexed by the algorithm enumerants of each direction. */
static const struct algo_info fwd_algos[CUDNN_CONVOLUTION_FWD_ALGO_COUNT] = {
    { KIND_IMPLICIT, 1 }, { KIND_PRECOMP, 1 }, { KIND_GEMM, 1 },
    { KIND_NONE, 1 }, { KIND_FFT, 1 }, { KIND_FFT_TILING, 1 },
    { KIND_WINOGRAD, 1 }, { KIND_WINOGRAD_NONFUSED, 1 },
};
static const struct algo_info
    bwd_data_algos[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT] = {
    { KIND_IMPLICIT, 0 }, { KIND_PRECOMP, 1 }, { KIND_FFT, 1 },
    { KIND_FFT_TILING, 1 }, { KIND_WINOGRAD, 1 },
    { KIND_WINOGRAD_NONFUSED, 1 },
};
static const struct algo_info
    bwd_filter_algos[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT] = {
    { KIND_IMPLICIT, 0 }, { KIND_PRECOMP, 1 }, { KIND_FFT, 1 },
    { KIND_GEMM, 0 }, { KIND_NONE, 1 }, { KIND_WINOGRAD_NONFUSED, 1 },
    { KIND_FFT_TILING, 1 },
};

static const struct algo_info *const dir_algos[DIR_COUNT] = {
    fwd_algos, bwd_data_algos, bwd_filter_algos,
};

static int
all_equal(const int *v, int n, int want)
{
    for (int i = 0; i < n; i++) {
        if (v[i] != want)
            return 0;
    }
    return 1;
}

/* Whether the algorithm supports the problem, after the documented
 * per-algorithm tables: the GEMM variants take any geometry (explicit
 * GEMM only FLOAT); FFT and Winograd take 2-d, unit-stride, undilated
 * FLOAT or PSEUDO_HALF problems with further shape limits. */
static int
algo_supports(enum algo_kind kind, const struct conv_problem *p)
{
    int simple = p->nsp == 2 && all_equal(p->stride, 2, 1) &&
                 all_equal(p->dil, 2, 1) && p->type != CUDNN_DATA_BFLOAT16;
    int filter_over_pad = p->filt[0] > p->pad[0] && p->filt[1] > p->pad[1];

    switch (kind) {
    case KIND_IMPLICIT:
    case KIND_PRECOMP:
        return 1;
    case KIND_GEMM:
        return p->type == CUDNN_DATA_FLOAT;
    case KIND_FFT:
        return simple && p->nchw_packed && filter_over_pad &&
               p->in[0] + 2 * p->pad[0] <= 256 &&
               p->in[1] + 2 * p->pad[1] <= 256;
    case KIND_FFT_TILING:
        return simple && p->nchw_packed && filter_over_pad;
    case KIND_WINOGRAD:
        return simple && p->nchw_packed && all_equal(p->filt, 2, 3);
    case KIND_WINOGRAD_NONFUSED:
        return simple && (all_equal(p->filt, 2, 3) || all_equal(p->filt, 2, 5));
    default:
        return 0;
    }
}

static double
prod(const int *v, int n)
{
    double r = 1.0;

    for (int i = 0; i < n; i++)
        r *= v[i];
    return r;
}

static double
ceil_div(double a, double b)
{
    return ceil(a / b);
}

/* Winograd tiles: F(4x4, 3x3) or F(2x2, 5x5), both 6x6 transforms. */
static double
winograd_tiles(const struct conv_problem *p)
{
    double step = p->filt[0] == 3 ? 4.0 : 2.0;

    return ceil_div(p->out[0], step) * ceil_div(p->out[1], step);
}

/* FFT planes: every input, filter and output feature map once. */
static double
fft_planes(const struct conv_problem *p)
{
    return (double)p->n * p->c + (double)p->k * p->cg + (double)p->n * p->k;
}

/* Modelled workspace in bytes, a multiple of 256 (0 for the algorithms
 * that need none). */
static size_t
algo_workspace(enum algo_kind kind, const struct conv_problem *p)
{
    double esize = (double)emu_dnn_type_size(p->type), bytes = 0.0;
    double hp = p->in[0] + 2.0 * p->pad[0], wp = p->in[1] + 2.0 * p->pad[1];

    switch (kind) {
    case KIND_PRECOMP:
        bytes = 8.0 * p->cg * prod(p->filt, p->nsp);
        break;
    case KIND_GEMM:
        bytes = esize * p->c * prod(p->filt, p->nsp) * prod(p->out, p->nsp);
        break;
    case KIND_FFT:
        bytes = 8.0 * fft_planes(p) * hp * (floor(wp / 2.0) + 1.0);
        break;
    case KIND_FFT_TILING:
        bytes = 8.0 * fft_planes(p) * ceil_div(hp, 32) * ceil_div(wp, 32) *
                32.0 * 17.0;
        break;
    case KIND_WINOGRAD_NONFUSED:
        bytes = 4.0 * 36.0 *
                (((double)p->n * p->c + (double)p->n * p->k) *
                     winograd_tiles(p) + (double)p->k * p->cg);
        break;
    default:
        return 0;
    }
    return (size_t)(ceil(bytes / 256.0) * 256.0);
}

/* The direct method's flops: 2 N K (C / groups) R S P Q. */
static double
direct_flops(const struct conv_problem *p)
{
    return 2.0 * p->n * p->k * p->cg * prod(p->filt, p->nsp) *
           prod(p->out, p->nsp);
}

static double
tensor_bytes(const struct conv_problem *p)
{
    double e = (double)emu_dnn_type_size(p->type);

    return e * ((double)p->n * p->c * prod(p->in, p->nsp) +
                (double)p->k * p->cg * prod(p->filt, p->nsp) +
                (double)p->n * p->k * prod(p->out, p->nsp));
}

/* Modelled nanoseconds of one run: the FFT and fused Winograd kernels run
 * on the FP32 cores; the rest at the precision of the configuration. */
static double
algo_model_ns(enum algo_kind kind, const struct conv_problem *p)
{
    double flops = direct_flops(p), bytes = tensor_bytes(p);
    double ws = (double)algo_workspace(kind, p);
    double hp = p->in[0] + 2.0 * p->pad[0], wp = p->in[1] + 2.0 * p->pad[1];
    enum emu_prec prec = p->prec;

    switch (kind) {
    case KIND_IMPLICIT:
        flops *= 1.15;  /* recomputes its indices */
        break;
    case KIND_GEMM:
    case KIND_WINOGRAD_NONFUSED:
        if (kind == KIND_WINOGRAD_NONFUSED)
            flops *= p->filt[0] == 3 ? 36.0 / 144.0 : 36.0 / 100.0;
        bytes += 2.0 * ws;
        break;
    case KIND_FFT:
    case KIND_FFT_TILING:
        if (kind == KIND_FFT_TILING)
            hp = wp = 32.0;
        flops = 8.0 * p->n * p->k * p->cg * hp * (wp / 2.0 + 1.0) +
                5.0 * fft_planes(p) * hp * wp * log2(hp * wp);
        bytes += 2.0 * ws;
        prec = EMU_PREC_FP32;
        break;
    case KIND_WINOGRAD:
        flops *= 16.0 / 36.0;
        prec = EMU_PREC_FP32;
        break;
    default:
        break;
    }
    return emu_model_ns(flops, prec, bytes);
}

/* The support, workspace and time of algorithm `algo` in direction
 * `dir`; BAD_PARAM for an enumerant out of range. */
struct algo_eval {
    int algo;
    cudnnStatus_t status;
    size_t workspace;
    double model_ns;
    int deterministic;
};

static cudnnStatus_t
algo_evaluate(enum conv_dir dir, int algo, const struct conv_problem *p,
              struct algo_eval *e)
{
    const struct algo_info *info;

    if (algo < 0 || algo >= dir_algo_count[dir])
        return BAD("%s: algorithm %d out of range", dir_api[dir], algo);
    info = &dir_algos[dir][algo];
    e->algo = algo;
    e->deterministic = info->deterministic;
    e->workspace = 0;
    e->model_ns = 0.0;
    e->status = CUDNN_STATUS_SUCCESS;
    if (!algo_supports(info->kind, p)) {
        e->status = CUDNN_STATUS_NOT_SUPPORTED;
        return CUDNN_STATUS_SUCCESS;
    }
    e->workspace = algo_workspace(info->kind, p);
    e->model_ns = algo_model_ns(info->kind, p);
    return CUDNN_STATUS_SUCCESS;
}

/* ---- The convolution core ------------------------------------------------ */

/* cudnnConvolutionBiasActivationForward's work after the convolution:
 * y = act(alpha * conv(x) + alpha2 * z + bias), in FP32. z has y's sizes
 * and strides, so an element's offset is the same in both; the bias is
 * 1 x K x 1 ... */
struct conv_epilogue {
    struct emu_dnn_view z, bias;
    float alpha2;
    int relu;           /* CUDNN_ACTIVATION_RELU; else IDENTITY */
};

struct conv_job {
    enum conv_dir dir;
    struct conv_problem p;
    struct emu_dnn_view x, w, y;    /* x or dx; w or dw; y or dy */
    CUdeviceptr workspace;
    size_t workspace_size;
    float alpha, beta;
    int partial;        /* an injected fault: the first half only */
    int fused;          /* cudnnConvolutionBiasActivationForward: ep */
    struct conv_epilogue ep;
};

/* Every FP16 value as FP32 (emu_f16_to_f32_inline of each of the 65,536
 * bit patterns, exact), made once: the columns of a converted call's
 * FP16 operands, each element loaded once per filter tap, take a load of
 * the table rather than the decode's branches (zero, which a rectified
 * tensor holds in plenty, takes the subnormal branch). */
static float conv_f16_values[1 << 16];
static pthread_once_t conv_f16_once = PTHREAD_ONCE_INIT;

static void
conv_f16_fill(void)
{
    for (uint32_t h = 0; h < 1u << 16; h++)
        conv_f16_values[h] = emu_f16_to_f32_inline((uint16_t)h);
}

static const float *
conv_f16_table(void)
{
    pthread_once(&conv_f16_once, conv_f16_fill);
    return conv_f16_values;
}

/* emu_dnn_load without a call for the types a convolution holds: FP32,
 * and FP16 and BF16 (the converted calls' operands, each loaded once per
 * filter tap), converted inline as the core converts them. */
static inline float
conv_load(const void *base, int64_t idx, cudnnDataType_t type)
{
    uint32_t u;
    float f;

    switch (type) {
    case CUDNN_DATA_FLOAT:
        return ((const float *)base)[idx];
    case CUDNN_DATA_HALF:
        return emu_f16_to_f32_inline(((const uint16_t *)base)[idx]);
    case CUDNN_DATA_BFLOAT16:
        u = (uint32_t)((const uint16_t *)base)[idx] << 16;
        memcpy(&f, &u, sizeof f);
        return f;
    default:
        return emu_dnn_load(base, idx, type);
    }
}

/* emu_dnn_blend of a result into the destination, the same arithmetic,
 * with FLOAT, HALF and BFLOAT16 inline: a converted call's half outputs
 * are stored element by element, every call. */
static inline void
conv_store(void *base, int64_t idx, cudnnDataType_t type, float alpha,
           float beta, float value)
{
    float v = alpha * value;
    uint16_t *h = (uint16_t *)base + idx;

    /* beta == 0: dst is not read, so NaN or Inf there cannot leak. */
    switch (type) {
    case CUDNN_DATA_FLOAT:
        if (beta != 0.0f)
            v = v + beta * ((const float *)base)[idx];
        ((float *)base)[idx] = v;
        return;
    case CUDNN_DATA_HALF:
        if (beta != 0.0f)
            v = v + beta * emu_f16_to_f32_inline(*h);
        *h = emu_f32_to_f16_inline(v);
        return;
    case CUDNN_DATA_BFLOAT16:
        if (beta != 0.0f)
            v = v + beta * conv_load(base, idx, type);
        *h = emu_f32_to_bf16_inline(v);
        return;
    default:
        emu_dnn_blend(base, idx, type, alpha, beta, value);
    }
}

static inline float
conv_round(float v, enum operand_round r)
{
    if (r == ROUND_TF32)
        return emu_round_tf32_inline(v);
    if (r == ROUND_F16)
        return emu_round_f16_inline(v);
    return v;
}

/*
 * The convolution core: every direction is lowered onto FP32 matrix
 * products on the CPU's BLAS (emu_cpu_sgemm), one group at a time, with
 * the operands rounded as the math says while they are gathered.
 *
 * Spatial positions are linear, row-major: r over the filter's taps (R of
 * them), o over the output (O), i over the input. A product pairs tap r
 * and output o with input i(o, r), whose coordinate in dimension d is
 * o_d * stride_d - pad_d + r_d * dil_d, when that lies inside the input.
 * With CUDNN_CONVOLUTION the filter is stored reversed: tap r lives at
 * filt_d - 1 - r_d. Then, for image n and group g (cg input and kg output
 * channels), with the column matrix col[(c, r), o] = x[n, c, i(o, r)]
 * (stored with o fastest, so that it is gathered along the input's rows):
 *   forward          y_g[k, o]  = sum over (c, r) of w_g[k, (c, r)] col[(c, r), o]
 *   backward data    dcol = w_g^T dy_g, then dx[n, c, i(o, r)] += dcol[(c, r), o]
 *   backward filter  dw_g[k, (c, r)] = sum over n and o of dy_g[k, o] col[(c, r), o]
 * The results go to an FP32 buffer in the destination's row-major order,
 * then alpha and beta are applied element by element.
 */

/* Where the spatial positions lie in each tensor, and which input
 * position each (tap, output) pair reads. */
struct conv_lowering {
    int64_t taps, outs, ins;      /* R, O, and the input's positions */
    int64_t *in_of;               /* [r * O + o]: i(o, r), or -1 */
    int64_t *x_of;                /* [r * O + o]: x_at[i(o, r)], or -1 */
    int64_t *x_at, *y_at, *w_at;  /* spatial offsets in x (by i), y (by o),
                                     w (by logical tap r, stored place) */
    int64_t *w_lin;               /* by r: the stored tap's linear index */
};

static void
lowering_free(struct conv_lowering *l)
{
    free(l->in_of), free(l->x_of), free(l->x_at), free(l->y_at);
    free(l->w_at);
    free(l->w_lin);
}

/* Spatial offset of linear position `lin` of a box `dims` in a view whose
 * spatial strides start at stride[2]; with `rev`, each coordinate
 * reversed. Sets coord[] too. */
static int64_t
spatial_offset(int64_t lin, const int *dims, int nsp, const int64_t *stride,
               int rev, int *coord)
{
    int64_t off = 0;

    for (int d = nsp - 1; d >= 0; d--) {
        int v = (int)(lin % dims[d]);

        lin /= dims[d];
        coord[d] = v;
        off += (int64_t)(rev ? dims[d] - 1 - v : v) * stride[2 + d];
    }
    return off;
}

static int
lowering_make(const struct conv_job *j, struct conv_lowering *l)
{
    const struct conv_problem *p = &j->p;
    int r_at[EMU_DNN_MAX_SPATIAL], o_at[EMU_DNN_MAX_SPATIAL];
    int scratch[EMU_DNN_MAX_SPATIAL];

    memset(l, 0, sizeof(*l));
    l->taps = prod(p->filt, p->nsp);
    l->outs = prod(p->out, p->nsp);
    l->ins = prod(p->in, p->nsp);
    l->in_of = malloc((size_t)(l->taps * l->outs) * sizeof(int64_t));
    l->x_of = malloc((size_t)(l->taps * l->outs) * sizeof(int64_t));
    l->x_at = malloc((size_t)l->ins * sizeof(int64_t));
    l->y_at = malloc((size_t)l->outs * sizeof(int64_t));
    l->w_at = malloc((size_t)l->taps * sizeof(int64_t));
    l->w_lin = malloc((size_t)l->taps * sizeof(int64_t));
    if (!l->in_of || !l->x_of || !l->x_at || !l->y_at || !l->w_at ||
        !l->w_lin) {
        lowering_free(l);
        return -1;
    }
    for (int64_t i = 0; i < l->ins; i++)
        l->x_at[i] = spatial_offset(i, p->in, p->nsp, j->x.stride, 0,
                                    scratch);
    for (int64_t o = 0; o < l->outs; o++)
        l->y_at[o] = spatial_offset(o, p->out, p->nsp, j->y.stride, 0,
                                    scratch);
    for (int64_t r = 0; r < l->taps; r++) {
        int64_t lin = 0;

        l->w_at[r] = spatial_offset(r, p->filt, p->nsp, j->w.stride,
                                    p->flip, r_at);
        for (int d = 0; d < p->nsp; d++)
            lin = lin * p->filt[d] +
                  (p->flip ? p->filt[d] - 1 - r_at[d] : r_at[d]);
        l->w_lin[r] = lin;
        for (int64_t o = 0; o < l->outs; o++) {
            int64_t in = 0;
            int inside = 1;

            spatial_offset(o, p->out, p->nsp, j->y.stride, 0, o_at);
            for (int d = 0; d < p->nsp && inside; d++) {
                int i = o_at[d] * p->stride[d] - p->pad[d] +
                        r_at[d] * p->dil[d];

                inside = i >= 0 && i < p->in[d];
                in = in * p->in[d] + i;
            }
            l->in_of[r * l->outs + o] = inside ? in : -1;
            l->x_of[r * l->outs + o] = inside ? l->x_at[in] : -1;
        }
    }
    return 0;
}

/* col[(c, r), o] for image n, group g, stored column-major as its
 * transpose: element ((c, r), o) at o + (c R + r) O. */
static void
gather_cols(const struct conv_job *j, const struct conv_lowering *l,
            const void *xa, int n, int g, float *col)
{
    const struct conv_problem *p = &j->p;
    /* Locals: the stores into col could alias anything reached through j
     * (the build does not assume strict aliasing). */
    const cudnnDataType_t type = j->x.type;
    const enum operand_round round = p->round;
    const int64_t outs = l->outs, taps = l->taps;
    const float *f16 = conv_f16_table();

    for (int c = 0; c < p->cg; c++) {
        int64_t base = (int64_t)n * j->x.stride[0] +
                       (int64_t)(g * p->cg + c) * j->x.stride[1];

        for (int64_t r = 0; r < taps; r++) {
            const int64_t *at = l->x_of + r * outs;
            float *dst = col + ((int64_t)c * taps + r) * outs;

            /* The operands' types with nothing to round in loops of
             * their own: each loads an element a few instructions. */
            if (type == CUDNN_DATA_FLOAT && round == ROUND_NONE) {
                const float *x = (const float *)xa + base;

                for (int64_t o = 0; o < outs; o++)
                    dst[o] = at[o] < 0 ? 0.0f : x[at[o]];
                continue;
            }
            if (type == CUDNN_DATA_HALF && round == ROUND_NONE) {
                const uint16_t *x = (const uint16_t *)xa + base;

                for (int64_t o = 0; o < outs; o++)
                    dst[o] = at[o] < 0 ? 0.0f : f16[x[at[o]]];
                continue;
            }
            if (type == CUDNN_DATA_BFLOAT16 && round == ROUND_NONE) {
                const uint16_t *x = (const uint16_t *)xa + base;

                for (int64_t o = 0; o < outs; o++) {
                    uint32_t u = at[o] < 0 ? 0u : (uint32_t)x[at[o]] << 16;

                    memcpy(&dst[o], &u, sizeof u);
                }
                continue;
            }
            for (int64_t o = 0; o < outs; o++)
                dst[o] = at[o] < 0 ? 0.0f
                                   : conv_round(conv_load(xa, base + at[o],
                                                          type),
                                                round);
        }
    }
}

/* w_g[k, (c, r)] (leading dimension kg) of group g. */
static void
gather_filter(const struct conv_job *j, const struct conv_lowering *l,
              const void *wa, int g, float *wg)
{
    const struct conv_problem *p = &j->p;

    for (int c = 0; c < p->cg; c++)
        for (int64_t r = 0; r < l->taps; r++)
            for (int k = 0; k < p->kg; k++) {
                int64_t at = (int64_t)(g * p->kg + k) * j->w.stride[0] +
                             (int64_t)c * j->w.stride[1] + l->w_at[r];

                wg[k + ((int64_t)c * l->taps + r) * p->kg] =
                    conv_round(conv_load(wa, at, j->w.type), p->round);
            }
}

/* dy_g[k, o] (leading dimension kg) for image n, group g. */
static void
gather_dy(const struct conv_job *j, const struct conv_lowering *l,
          const void *ya, int n, int g, float *dyg)
{
    const struct conv_problem *p = &j->p;

    for (int64_t o = 0; o < l->outs; o++)
        for (int k = 0; k < p->kg; k++) {
            int64_t at = (int64_t)n * j->y.stride[0] +
                         (int64_t)(g * p->kg + k) * j->y.stride[1] +
                         l->y_at[o];

            dyg[k + o * p->kg] =
                conv_round(conv_load(ya, at, j->y.type), p->round);
        }
}

/* The whole result into res[], in the destination's row-major order. */
static int
conv_compute(const struct conv_job *j, const void *xa, const void *wa,
             const void *ya, float *res)
{
    const struct conv_problem *p = &j->p;
    struct conv_lowering l;
    int64_t rows;
    float *col, *wg, *dyg, *out;
    int rc = 0;

    if (lowering_make(j, &l) != 0)
        return -1;
    rows = (int64_t)p->cg * l.taps;
    col = malloc((size_t)(rows * l.outs) * sizeof(float));
    wg = malloc((size_t)(p->kg * rows) * sizeof(float));
    dyg = malloc((size_t)(p->kg * l.outs) * sizeof(float));
    out = malloc((size_t)(rows > p->kg ? rows : p->kg) * (size_t)l.outs *
                 sizeof(float));
    if (!col || !wg || !dyg || !out) {
        rc = -1;
        goto done;
    }
    if (j->dir == DIR_BWD_DATA)
        memset(res, 0, (size_t)p->n * (size_t)p->c * (size_t)l.ins *
                           sizeof(float));
    for (int g = 0; g < p->groups; g++) {
        if (j->dir != DIR_BWD_FILTER)
            gather_filter(j, &l, wa, g, wg);
        for (int n = 0; n < p->n; n++) {
            switch (j->dir) {
            case DIR_FWD:
                gather_cols(j, &l, xa, n, g, col);
                emu_cpu_sgemm(0, 1, p->kg, l.outs, rows, wg, p->kg, col,
                              l.outs, 0.0f, out, p->kg);
                for (int k = 0; k < p->kg; k++)
                    for (int64_t o = 0; o < l.outs; o++)
                        res[((int64_t)n * p->k + g * p->kg + k) * l.outs + o] =
                            out[k + o * p->kg];
                break;
            case DIR_BWD_DATA:
                /* dcol's transpose: element ((c, r), o) at o + (c R + r) O. */
                gather_dy(j, &l, ya, n, g, dyg);
                emu_cpu_sgemm(1, 0, l.outs, rows, p->kg, dyg, p->kg, wg,
                              p->kg, 0.0f, out, l.outs);
                for (int c = 0; c < p->cg; c++) {
                    float *dx = res + ((int64_t)n * p->c + g * p->cg + c) *
                                          l.ins;

                    for (int64_t r = 0; r < l.taps; r++) {
                        const int64_t *in = l.in_of + r * l.outs;
                        const float *src =
                            out + ((int64_t)c * l.taps + r) * l.outs;

                        for (int64_t o = 0; o < l.outs; o++)
                            if (in[o] >= 0)
                                dx[in[o]] += src[o];
                    }
                }
                break;
            default:
                gather_cols(j, &l, xa, n, g, col);
                gather_dy(j, &l, ya, n, g, dyg);
                emu_cpu_sgemm(0, 0, p->kg, rows, l.outs, dyg, p->kg, col,
                              l.outs, n == 0 ? 0.0f : 1.0f, wg, p->kg);
                break;
            }
        }
        if (j->dir == DIR_BWD_FILTER)
            for (int k = 0; k < p->kg; k++)
                for (int c = 0; c < p->cg; c++)
                    for (int64_t r = 0; r < l.taps; r++)
                        res[((int64_t)(g * p->kg + k) * p->cg + c) * l.taps +
                            l.w_lin[r]] =
                            p->n > 0 ? wg[k + ((int64_t)c * l.taps + r) *
                                                  p->kg]
                                     : 0.0f;
    }
done:
    free(col), free(wg), free(dyg), free(out);
    lowering_free(&l);
    return rc;
}

/* One element of the fused forward, in FP32 as cuDNN's FLOAT
 * configuration computes it. z is not read when alpha2 is 0, as a
 * blend's destination is not read when beta is 0: programs pass their
 * unwritten output as z then (TensorFlow's fused convolution does). */
static void
fused_store(const struct conv_epilogue *ep, const float *za, const float *ba,
            void *ya, int64_t off, int k, float alpha, float value)
{
    float v = alpha * value;

    if (ep->alpha2 != 0.0f)
        v += ep->alpha2 * za[off];
    v += ba[(int64_t)k * ep->bias.stride[1]];
    if (ep->relu && !(v > 0.0f))
        v = 0.0f;   /* CUDNN_NOT_PROPAGATE_NAN: NaN gives 0 too */
    ((float *)ya)[off] = v;
}

static CUresult
conv_run(void *arg)
{
    const struct conv_job *j = arg;
    const struct emu_dnn_view *dst = j->dir == DIR_FWD ? &j->y
                                     : j->dir == DIR_BWD_DATA ? &j->x : &j->w;
    void *xa = emu_dnn_view_at(&j->x), *wa = emu_dnn_view_at(&j->w);
    void *ya = emu_dnn_view_at(&j->y), *da;
    const float *za = NULL, *ba = NULL;    /* the fused forward's z, bias */
    size_t count = emu_dnn_view_count(dst);
    void *ws = NULL;

    if (j->workspace_size > 0)
        ws = emu_dev_at(j->workspace, j->workspace_size);
    if (j->fused) {
        ba = emu_dnn_view_at(&j->ep.bias);
        if (j->ep.alpha2 != 0.0f)
            za = emu_dnn_view_at(&j->ep.z);
    }
    if (xa == NULL || wa == NULL || ya == NULL ||
        (j->workspace_size > 0 && ws == NULL) ||
        (j->fused && (ba == NULL || (j->ep.alpha2 != 0.0f && za == NULL))))
        return emu_op_fail(CUDA_ERROR_ILLEGAL_ADDRESS,
                           j->fused ? FUSED_API : dir_api[j->dir],
                           "a tensor or the workspace is not in device "
                           "memory");
    /* The algorithm leaves its scratch data behind. */
    if (ws != NULL)
        memset(ws, 0xa5, j->workspace_size);
    emu_dnn_view_wrote(dst);
    da = j->dir == DIR_FWD ? ya : j->dir == DIR_BWD_DATA ? xa : wa;
    float *res = malloc((count > 0 ? count : 1) * sizeof(float));

    if (res == NULL || conv_compute(j, xa, wa, ya, res) != 0) {
        free(res);
        return emu_op_fail(CUDA_ERROR_OUT_OF_MEMORY,
                           j->fused ? FUSED_API : dir_api[j->dir],
                           "out of host memory");
    }
    /* The destination's elements in row-major order, their coordinates
     * and offset carried from one to the next (no divisions). */
    int coord[CUDNN_DIM_MAX] = { 0 };
    int64_t off = 0;

    /* A partial fault: the first half of the elements get their whole
     * result, as the first tiles of a call whose later launch failed. */
    if (j->partial)
        count = (count + 1) / 2;
    for (size_t lin = 0; lin < count; lin++) {
        if (j->fused)
            fused_store(&j->ep, za, ba, da, off, coord[1], j->alpha,
                        res[lin]);
        else
            conv_store(da, off, dst->type, j->alpha, j->beta, res[lin]);
        for (int d = dst->nb_dims - 1; d >= 0; d--) {
            off += dst->stride[d];
            if (++coord[d] < dst->dim[d])
                break;
            off -= (int64_t)dst->dim[d] * dst->stride[d];
            coord[d] = 0;
        }
    }
    free(res);
    return CUDA_SUCCESS;
}

/* ---- Entry points -------------------------------------------------------- */

/* One call of a convolution, in the descriptors' roles. */
struct conv_call {
    enum conv_dir dir;
    cudnnHandle_t handle;
    const void *alpha, *beta;
    cudnnTensorDescriptor_t x_desc, y_desc;
    cudnnFilterDescriptor_t w_desc;
    cudnnConvolutionDescriptor_t conv;
    const void *x, *w, *y;
    int algo;
    void *workspace;
    size_t workspace_size;
    const struct conv_epilogue *ep; /* the fused forward's, checked */
};

static cudnnStatus_t
conv_submit(const struct conv_call *call)
{
    const char *api = call->ep != NULL ? FUSED_API : dir_api[call->dir];
    struct emu_dnn_config cfg;
    struct conv_problem p;
    struct algo_eval e;
    struct conv_job *job;
    struct emu_op op = { 0 }; /* a kernel node when captured */
    cudnnStatus_t st, fault;
    int partial;

    st = emu_dnn_config(call->handle, &cfg);
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    if (call->alpha == NULL || call->beta == NULL || call->x == NULL ||
        call->w == NULL || call->y == NULL)
        return BAD("%s: NULL data or scaling pointer", api);
    st = conv_setup(&p, call->x_desc, call->w_desc, call->conv, call->y_desc,
                    api);
    /* cuDNN's fused forward takes FLOAT data in more configurations than
     * FLOAT (half, int8); only FLOAT is emulated. */
    if (st == CUDNN_STATUS_SUCCESS && call->ep != NULL &&
        p.type != CUDNN_DATA_FLOAT)
        st = UNSUPPORTED("%s: data type %d (only FLOAT is emulated)", api,
                         (int)p.type);
    if (st == CUDNN_STATUS_SUCCESS)
        st = algo_evaluate(call->dir, call->algo, &p, &e);
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    if (e.status != CUDNN_STATUS_SUCCESS)
        return UNSUPPORTED("%s: algorithm %d does not support these "
                           "parameters", api, call->algo);
    if (call->workspace_size < e.workspace ||
        (call->workspace == NULL && call->workspace_size > 0))
        return BAD("%s: algorithm %d needs %zu bytes of workspace, %zu "
                   "given", api, call->algo, e.workspace,
                   call->workspace == NULL ? (size_t)0
                                           : call->workspace_size);
    fault = emu_dnn_fault_partial(api, &partial);
    if (fault != CUDNN_STATUS_SUCCESS && !partial)
        return fault;

    job = calloc(1, sizeof(*job));
    if (job == NULL)
        return fault ? fault : emu_dnn_error(
            CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED,
            "out of host memory");
    job->partial = partial;
    job->dir = call->dir;
    job->p = p;
    emu_dnn_view_tensor(&job->x, call->x_desc, call->x);
    emu_dnn_view_filter(&job->w, call->w_desc, call->w);
    emu_dnn_view_tensor(&job->y, call->y_desc, call->y);
    job->workspace = (CUdeviceptr)(uintptr_t)call->workspace;
    job->workspace_size = e.workspace;
    memcpy(&job->alpha, call->alpha, sizeof(float));
    memcpy(&job->beta, call->beta, sizeof(float));
    if (call->ep != NULL) {
        job->fused = 1;
        job->ep = *call->ep;
    }
    op.name = api;
    op.run = conv_run;
    op.release = free;
    op.arg = job;
    op.model_ns = e.model_ns;
    st = emu_dnn_enqueue(&cfg, &op);
    /* A partial fault: the part is queued, the call still fails. */
    return fault ? fault : st;
}

cudnnStatus_t
cudnnConvolutionForward(cudnnHandle_t handle, const void *alpha,
                        const cudnnTensorDescriptor_t xDesc, const void *x,
                        const cudnnFilterDescriptor_t wDesc, const void *w,
                        const cudnnConvolutionDescriptor_t convDesc,
                        cudnnConvolutionFwdAlgo_t algo, void *workSpace,
                        size_t workSpaceSizeInBytes, const void *beta,
                        const cudnnTensorDescriptor_t yDesc, void *y)
{
    struct conv_call c = {
        DIR_FWD, handle, alpha, beta, xDesc, yDesc, wDesc, convDesc,
        x, w, y, (int)algo, workSpace, workSpaceSizeInBytes, NULL,
    };

    return conv_submit(&c);
}

/* ---- The fused forward --------------------------------------------------- */

/*
 * cudnnConvolutionBiasActivationForward, as cuDNN 9's API reference
 * documents it (the cudnn_cnn library,
 * https://docs.nvidia.com/deeplearning/cudnn/backend/v9.6.0/api/cudnn-cnn-library.html):
 * y = act(alpha1 * conv(x) + alpha2 * z + bias), the convolution as
 * cudnnConvolutionForward's with alpha1 for alpha. Its checks:
 * - a NULL handle, descriptor, data pointer or scaling factor:
 *   BAD_PARAM, as the other convolutions answer;
 * - the activation's mode neither CUDNN_ACTIVATION_RELU nor
 *   CUDNN_ACTIVATION_IDENTITY, or its reluNanOpt not
 *   CUDNN_NOT_PROPAGATE_NAN: NOT_SUPPORTED (RELU ignores coef);
 * - IDENTITY with an algorithm other than
 *   CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM: NOT_SUPPORTED
 *   (cudnnActivationMode_t: IDENTITY "must use" that algorithm here, and
 *   does not work in cudnnActivationForward or Backward);
 * - z not of y's sizes, strides and type ("zDesc and destDesc do not
 *   match"), the bias not of y's type, or its second stride not 1:
 *   NOT_SUPPORTED;
 * - a bias that is not 1 x K x 1 ... of y's rank: BAD_PARAM;
 * then the convolution's own checks, algorithm and workspace as
 * cudnnConvolutionForward's. z may be y (in place); it is not read when
 * alpha2 is 0. Frameworks built on the library agree on the activations:
 * "only relu is supported" (apache/tvm#10997, cuDNN 8), and IDENTITY
 * "only with CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM"
 * (PaddlePaddle/Paddle#14744).
 */
static cudnnStatus_t
fused_check(const char *api, const void *alpha2,
            cudnnTensorDescriptor_t zDesc, const void *z,
            cudnnTensorDescriptor_t biasDesc, const void *bias,
            cudnnActivationDescriptor_t act, cudnnConvolutionFwdAlgo_t algo,
            cudnnTensorDescriptor_t yDesc, struct conv_epilogue *ep)
{
    if (alpha2 == NULL || z == NULL || bias == NULL || act == NULL ||
        zDesc == NULL || biasDesc == NULL)
        return BAD("%s: NULL data, descriptor or scaling pointer", api);
    if (act->magic != EMU_DNN_MAGIC_ACT || !emu_dnn_tensor_ok(zDesc) ||
        !emu_dnn_tensor_ok(biasDesc) || !emu_dnn_tensor_ok(yDesc))
        return BAD("%s: invalid or unset descriptor", api);
    if (biasDesc->nb_dims != yDesc->nb_dims ||
        biasDesc->dim[1] != yDesc->dim[1])
        return BAD("%s: the bias is not 1 x K x 1 ...", api);
    for (int d = 0; d < biasDesc->nb_dims; d++) {
        if (d != 1 && biasDesc->dim[d] != 1)
            return BAD("%s: bias dimension %d is %d", api, d,
                       biasDesc->dim[d]);
    }
    if (act->mode != CUDNN_ACTIVATION_RELU &&
        act->mode != CUDNN_ACTIVATION_IDENTITY)
        return UNSUPPORTED("%s: activation mode %d (RELU or IDENTITY only)",
                           api, (int)act->mode);
    if (act->nan_opt != CUDNN_NOT_PROPAGATE_NAN)
        return UNSUPPORTED("%s: reluNanOpt is not CUDNN_NOT_PROPAGATE_NAN",
                           api);
    if (act->mode == CUDNN_ACTIVATION_IDENTITY &&
        algo != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM)
        return UNSUPPORTED("%s: IDENTITY needs "
                           "CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, "
                           "not algorithm %d", api, (int)algo);
    if (!emu_dnn_same_dims(zDesc, yDesc) ||
        !emu_dnn_same_strides(zDesc, yDesc) || zDesc->type != yDesc->type)
        return UNSUPPORTED("%s: zDesc and yDesc do not match", api);
    if (biasDesc->type != yDesc->type || biasDesc->stride[1] != 1)
        return UNSUPPORTED("%s: the bias is not of y's type or its second "
                           "stride is not 1", api);
    memset(ep, 0, sizeof(*ep));
    emu_dnn_view_tensor(&ep->z, zDesc, z);
    emu_dnn_view_tensor(&ep->bias, biasDesc, bias);
    memcpy(&ep->alpha2, alpha2, sizeof(float));
    ep->relu = act->mode == CUDNN_ACTIVATION_RELU;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnConvolutionBiasActivationForward(
    cudnnHandle_t handle, const void *alpha1,
    const cudnnTensorDescriptor_t xDesc, const void *x,
    const cudnnFilterDescriptor_t wDesc, const void *w,
    const cudnnConvolutionDescriptor_t convDesc,
    cudnnConvolutionFwdAlgo_t algo, void *workSpace,
    size_t workSpaceSizeInBytes, const void *alpha2,
    const cudnnTensorDescriptor_t zDesc, const void *z,
    const cudnnTensorDescriptor_t biasDesc, const void *bias,
    const cudnnActivationDescriptor_t activationDesc,
    const cudnnTensorDescriptor_t yDesc, void *y)
{
    static const float zero = 0.0f;
    struct emu_dnn_config cfg;
    struct conv_epilogue ep;
    struct conv_call c = {
        DIR_FWD, handle, alpha1, &zero, xDesc, yDesc, wDesc, convDesc,
        x, w, y, (int)algo, workSpace, workSpaceSizeInBytes, &ep,
    };
    cudnnStatus_t st = emu_dnn_config(handle, &cfg);

    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    st = fused_check(FUSED_API, alpha2, zDesc, z, biasDesc, bias,
                     activationDesc, algo, yDesc, &ep);
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    return conv_submit(&c);
}

cudnnStatus_t
cudnnConvolutionBackwardData(cudnnHandle_t handle, const void *alpha,
                             const cudnnFilterDescriptor_t wDesc,
                             const void *w,
                             const cudnnTensorDescriptor_t dyDesc,
                             const void *dy,
                             const cudnnConvolutionDescriptor_t convDesc,
                             cudnnConvolutionBwdDataAlgo_t algo,
                             void *workSpace, size_t workSpaceSizeInBytes,
                             const void *beta,
                             const cudnnTensorDescriptor_t dxDesc, void *dx)
{
    struct conv_call c = {
        DIR_BWD_DATA, handle, alpha, beta, dxDesc, dyDesc, wDesc, convDesc,
        dx, w, dy, (int)algo, workSpace, workSpaceSizeInBytes, NULL,
    };

    return conv_submit(&c);
}

cudnnStatus_t
cudnnConvolutionBackwardFilter(cudnnHandle_t handle, const void *alpha,
                               const cudnnTensorDescriptor_t xDesc,
                               const void *x,
                               const cudnnTensorDescriptor_t dyDesc,
                               const void *dy,
                               const cudnnConvolutionDescriptor_t convDesc,
                               cudnnConvolutionBwdFilterAlgo_t algo,
                               void *workSpace, size_t workSpaceSizeInBytes,
                               const void *beta,
                               const cudnnFilterDescriptor_t dwDesc, void *dw)
{
    struct conv_call c = {
        DIR_BWD_FILTER, handle, alpha, beta, xDesc, dyDesc, dwDesc, convDesc,
        x, dw, dy, (int)algo, workSpace, workSpaceSizeInBytes, NULL,
    };

    return conv_submit(&c);
}

/* ---- Backward bias ------------------------------------------------------- */

/* db = alpha * (the sum of dy over N and the spatial dimensions) +
 * beta * db, for each of dy's K channels; summed in double (see
 * cudnn_emu.h). */
struct bias_job {
    struct emu_dnn_view dy, db;
    double alpha, beta;
};

static CUresult
bias_run(void *arg)
{
    const struct bias_job *j = arg;
    void *dy = emu_dnn_view_at(&j->dy), *db = emu_dnn_view_at(&j->db);
    size_t k_count = (size_t)j->dy.dim[1];
    size_t spatial = emu_dnn_view_count(&j->dy) /
                     ((size_t)j->dy.dim[0] * k_count);

    if (dy == NULL || db == NULL)
        return emu_op_fail(CUDA_ERROR_ILLEGAL_ADDRESS,
                           "cudnnConvolutionBackwardBias",
                           "dy or db is not in device memory");
    emu_dnn_view_wrote(&j->db);
    for (size_t k = 0; k < k_count; k++) {
        double acc = 0.0;

        for (size_t n = 0; n < (size_t)j->dy.dim[0]; n++) {
            size_t base = (n * k_count + k) * spatial;

            for (size_t s = 0; s < spatial; s++)
                acc += emu_dnn_loadd(dy,
                                     emu_dnn_view_offset(&j->dy, base + s),
                                     j->dy.type);
        }
        emu_dnn_blendd(db, emu_dnn_view_offset(&j->db, k), j->db.type,
                       j->alpha, j->beta, acc);
    }
    return CUDA_SUCCESS;
}

/* db is 1 x K x 1 ... of dy's rank and type (BAD_PARAM). */
cudnnStatus_t
cudnnConvolutionBackwardBias(cudnnHandle_t handle, const void *alpha,
                             const cudnnTensorDescriptor_t dyDesc,
                             const void *dy, const void *beta,
                             const cudnnTensorDescriptor_t dbDesc, void *db)
{
    const char *api = "cudnnConvolutionBackwardBias";
    struct emu_dnn_config cfg;
    struct bias_job *job;
    cudnnStatus_t st = emu_dnn_config(handle, &cfg);

    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    if (!emu_dnn_tensor_ok(dyDesc) || !emu_dnn_tensor_ok(dbDesc))
        return BAD("%s: invalid tensor descriptor", api);
    if (dy == NULL || db == NULL || alpha == NULL || beta == NULL)
        return emu_dnn_error(CUDNN_STATUS_BAD_PARAM_NULL_POINTER,
                             "%s: NULL pointer", api);
    if (dbDesc->nb_dims != dyDesc->nb_dims || dbDesc->type != dyDesc->type ||
        dbDesc->dim[1] != dyDesc->dim[1])
        return BAD("%s: db is not 1 x K x 1 ... of dy's type", api);
    for (int d = 0; d < dbDesc->nb_dims; d++) {
        if (d != 1 && dbDesc->dim[d] != 1)
            return BAD("%s: db dimension %d is %d", api, d, dbDesc->dim[d]);
    }
    st = emu_dnn_type_ok(dyDesc, api);
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    job = calloc(1, sizeof(*job));
    if (job == NULL)
        return emu_dnn_error(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED,
                             "out of host memory");
    emu_dnn_view_tensor(&job->dy, dyDesc, dy);
    emu_dnn_view_tensor(&job->db, dbDesc, db);
    job->alpha = emu_dnn_scalar(alpha, dyDesc->type);
    job->beta = emu_dnn_scalar(beta, dyDesc->type);
    return emu_dnn_submit(&cfg, api, bias_run, free, job,
                          (double)emu_dnn_view_count(&job->dy),
                          emu_dnn_view_bytes(&job->dy) +
                              emu_dnn_view_bytes(&job->db));
}

/* ---- Algorithm queries --------------------------------------------------- */

/* The fields every perf struct has, in the same order (cudnn_cnn.h). */
struct perf_fields {
    int algo;
    cudnnStatus_t status;
    float time;
    size_t memory;
    cudnnDeterminism_t determinism;
    cudnnMathType_t mathType;
    int reserved[3];
};

_Static_assert(sizeof(struct perf_fields) ==
                   sizeof(cudnnConvolutionFwdAlgoPerf_t) &&
               sizeof(struct perf_fields) ==
                   sizeof(cudnnConvolutionBwdDataAlgoPerf_t) &&
               sizeof(struct perf_fields) ==
                   sizeof(cudnnConvolutionBwdFilterAlgoPerf_t),
               "perf structs share one layout");

/* Working results first, fastest first, then failures in enumerant
 * order; ties keep enumerant order. */
static int
eval_cmp(const void *pa, const void *pb)
{
    const struct algo_eval *a = pa, *b = pb;
    int fa = a->status != CUDNN_STATUS_SUCCESS;
    int fb = b->status != CUDNN_STATUS_SUCCESS;

    if (fa != fb)
        return fa - fb;
    if (!fa && a->model_ns != b->model_ns)
        return a->model_ns < b->model_ns ? -1 : 1;
    return a->algo - b->algo;
}

/* One query: x, w, y in their roles, and for Find...Ex the workspace the
 * caller offers (has_limit). */
struct conv_query {
    enum conv_dir dir;
    cudnnHandle_t handle;
    cudnnTensorDescriptor_t x_desc, y_desc;
    cudnnFilterDescriptor_t w_desc;
    cudnnConvolutionDescriptor_t conv;
    int requested;
    int *returned;
    void *results;
    int has_limit;
    size_t limit;
};

static cudnnStatus_t
conv_query_run(const struct conv_query *q)
{
    struct algo_eval e[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    struct perf_fields *out = q->results;
    struct emu_dnn_config cfg;
    struct conv_problem p;
    int count = dir_algo_count[q->dir];
    cudnnStatus_t st;

    st = emu_dnn_config(q->handle, &cfg);
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    if (q->requested <= 0 || q->returned == NULL || q->results == NULL)
        return BAD("%s query: requestedAlgoCount %d or NULL output",
                   dir_api[q->dir], q->requested);
    st = conv_setup(&p, q->x_desc, q->w_desc, q->conv, q->y_desc,
                    dir_api[q->dir]);
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    for (int a = 0; a < count; a++) {
        (void)algo_evaluate(q->dir, a, &p, &e[a]);
        /* Find...Ex cannot run what does not fit the workspace given. */
        if (q->has_limit && e[a].status == CUDNN_STATUS_SUCCESS &&
            e[a].workspace > q->limit)
            e[a].status = CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
    }
    qsort(e, (size_t)count, sizeof(e[0]), eval_cmp);
    *q->returned = q->requested < count ? q->requested : count;
    for (int i = 0; i < *q->returned; i++) {
        int ok = e[i].status == CUDNN_STATUS_SUCCESS;

        memset(&out[i], 0, sizeof(out[i]));
        out[i].algo = e[i].algo;
        out[i].status = e[i].status;
        out[i].time = ok ? (float)(e[i].model_ns * 1e-6) : -1.0f;
        out[i].memory = e[i].workspace;
        out[i].determinism = e[i].deterministic ? CUDNN_DETERMINISTIC
                                                : CUDNN_NON_DETERMINISTIC;
        out[i].mathType = p.math;
    }
    return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t
max_count(cudnnHandle_t handle, enum conv_dir dir, int *count)
{
    struct emu_dnn_config cfg;
    cudnnStatus_t st = emu_dnn_config(handle, &cfg);

    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    if (count == NULL)
        return BAD("count is NULL");
    *count = dir_algo_count[dir];
    return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t
workspace_size(cudnnHandle_t handle, enum conv_dir dir,
               cudnnTensorDescriptor_t x, cudnnFilterDescriptor_t w,
               cudnnConvolutionDescriptor_t conv, cudnnTensorDescriptor_t y,
               int algo, size_t *size)
{
    struct emu_dnn_config cfg;
    struct conv_problem p;
    struct algo_eval e;
    cudnnStatus_t st = emu_dnn_config(handle, &cfg);

    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    if (size == NULL)
        return BAD("sizeInBytes is NULL");
    st = conv_setup(&p, x, w, conv, y, dir_api[dir]);
    if (st == CUDNN_STATUS_SUCCESS)
        st = algo_evaluate(dir, algo, &p, &e);
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    if (e.status != CUDNN_STATUS_SUCCESS)
        return UNSUPPORTED("%s: algorithm %d does not support these "
                           "parameters", dir_api[dir], algo);
    *size = e.workspace;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnGetConvolutionForwardAlgorithmMaxCount(cudnnHandle_t handle, int *count)
{
    return max_count(handle, DIR_FWD, count);
}

cudnnStatus_t
cudnnGetConvolutionBackwardDataAlgorithmMaxCount(cudnnHandle_t handle,
                                                 int *count)
{
    return max_count(handle, DIR_BWD_DATA, count);
}

cudnnStatus_t
cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(cudnnHandle_t handle,
                                                   int *count)
{
    return max_count(handle, DIR_BWD_FILTER, count);
}

cudnnStatus_t
cudnnGetConvolutionForwardWorkspaceSize(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc,
    const cudnnFilterDescriptor_t wDesc,
    const cudnnConvolutionDescriptor_t convDesc,
    const cudnnTensorDescriptor_t yDesc, cudnnConvolutionFwdAlgo_t algo,
    size_t *sizeInBytes)
{
    cudnnStatus_t st = emu_dnn_fault(__func__); /* injected faults */

    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    return workspace_size(handle, DIR_FWD, xDesc, wDesc, convDesc, yDesc,
                          (int)algo, sizeInBytes);
}

cudnnStatus_t
cudnnGetConvolutionBackwardDataWorkspaceSize(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t wDesc,
    const cudnnTensorDescriptor_t dyDesc,
    const cudnnConvolutionDescriptor_t convDesc,
    const cudnnTensorDescriptor_t dxDesc, cudnnConvolutionBwdDataAlgo_t algo,
    size_t *sizeInBytes)
{
    cudnnStatus_t st = emu_dnn_fault(__func__); /* injected faults */

    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    return workspace_size(handle, DIR_BWD_DATA, dxDesc, wDesc, convDesc,
                          dyDesc, (int)algo, sizeInBytes);
}

cudnnStatus_t
cudnnGetConvolutionBackwardFilterWorkspaceSize(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc,
    const cudnnTensorDescriptor_t dyDesc,
    const cudnnConvolutionDescriptor_t convDesc,
    const cudnnFilterDescriptor_t gradDesc,
    cudnnConvolutionBwdFilterAlgo_t algo, size_t *sizeInBytes)
{
    cudnnStatus_t st = emu_dnn_fault(__func__); /* injected faults */

    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    return workspace_size(handle, DIR_BWD_FILTER, xDesc, gradDesc, convDesc,
                          dyDesc, (int)algo, sizeInBytes);
}

/* The heuristic (_v7) and the Find variants answer from the same model:
 * the emulator's "measurement" is the modelled time, so Find runs
 * nothing; Find...Ex also refuses algorithms whose workspace exceeds the
 * one given (ALLOC_FAILED, as documented for the perf status). */
#define QUERY(dir_, h, xd, wd, cd, yd, req, ret, res, lim, has)          \
    conv_query_run(&(struct conv_query){ dir_, h, xd, yd, wd, cd, req, ret, \
                                          res, has, lim })

cudnnStatus_t
cudnnGetConvolutionForwardAlgorithm_v7(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t srcDesc,
    const cudnnFilterDescriptor_t filterDesc,
    const cudnnConvolutionDescriptor_t convDesc,
    const cudnnTensorDescriptor_t destDesc, const int requestedAlgoCount,
    int *returnedAlgoCount, cudnnConvolutionFwdAlgoPerf_t *perfResults)
{
    cudnnStatus_t st = emu_dnn_fault(__func__); /* injected faults */

    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    return QUERY(DIR_FWD, handle, srcDesc, filterDesc, convDesc, destDesc,
                 requestedAlgoCount, returnedAlgoCount, perfResults, 0, 0);
}

cudnnStatus_t
cudnnFindConvolutionForwardAlgorithm(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc,
    const cudnnFilterDescriptor_t wDesc,
    const cudnnConvolutionDescriptor_t convDesc,
    const cudnnTensorDescriptor_t yDesc, const int requestedAlgoCount,
    int *returnedAlgoCount, cudnnConvolutionFwdAlgoPerf_t *perfResults)
{
    return QUERY(DIR_FWD, handle, xDesc, wDesc, convDesc, yDesc,
                 requestedAlgoCount, returnedAlgoCount, perfResults, 0, 0);
}

cudnnStatus_t
cudnnFindConvolutionForwardAlgorithmEx(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const void *x,
    const cudnnFilterDescriptor_t wDesc, const void *w,
    const cudnnConvolutionDescriptor_t convDesc,
    const cudnnTensorDescriptor_t yDesc, void *y, const int requestedAlgoCount,
    int *returnedAlgoCount, cudnnConvolutionFwdAlgoPerf_t *perfResults,
    void *workSpace, size_t workSpaceSizeInBytes)
{
    if (x == NULL || w == NULL || y == NULL)
        return BAD("cudnnFindConvolutionForwardAlgorithmEx: NULL data");
    return QUERY(DIR_FWD, handle, xDesc, wDesc, convDesc, yDesc,
                 requestedAlgoCount, returnedAlgoCount, perfResults,
                 workSpace == NULL ? 0 : workSpaceSizeInBytes, 1);
}

cudnnStatus_t
cudnnGetConvolutionBackwardDataAlgorithm_v7(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t filterDesc,
    const cudnnTensorDescriptor_t diffDesc,
    const cudnnConvolutionDescriptor_t convDesc,
    const cudnnTensorDescriptor_t gradDesc, const int requestedAlgoCount,
    int *returnedAlgoCount, cudnnConvolutionBwdDataAlgoPerf_t *perfResults)
{
    cudnnStatus_t st = emu_dnn_fault(__func__); /* injected faults */

    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    return QUERY(DIR_BWD_DATA, handle, gradDesc, filterDesc, convDesc,
                 diffDesc, requestedAlgoCount, returnedAlgoCount, perfResults,
                 0, 0);
}

cudnnStatus_t
cudnnFindConvolutionBackwardDataAlgorithm(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t wDesc,
    const cudnnTensorDescriptor_t dyDesc,
    const cudnnConvolutionDescriptor_t convDesc,
    const cudnnTensorDescriptor_t dxDesc, const int requestedAlgoCount,
    int *returnedAlgoCount, cudnnConvolutionBwdDataAlgoPerf_t *perfResults)
{
    return QUERY(DIR_BWD_DATA, handle, dxDesc, wDesc, convDesc, dyDesc,
                 requestedAlgoCount, returnedAlgoCount, perfResults, 0, 0);
}

cudnnStatus_t
cudnnFindConvolutionBackwardDataAlgorithmEx(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t wDesc, const void *w,
    const cudnnTensorDescriptor_t dyDesc, const void *dy,
    const cudnnConvolutionDescriptor_t convDesc,
    const cudnnTensorDescriptor_t dxDesc, void *dx,
    const int requestedAlgoCount, int *returnedAlgoCount,
    cudnnConvolutionBwdDataAlgoPerf_t *perfResults, void *workSpace,
    size_t workSpaceSizeInBytes)
{
    if (w == NULL || dy == NULL || dx == NULL)
        return BAD("cudnnFindConvolutionBackwardDataAlgorithmEx: NULL data");
    return QUERY(DIR_BWD_DATA, handle, dxDesc, wDesc, convDesc, dyDesc,
                 requestedAlgoCount, returnedAlgoCount, perfResults,
                 workSpace == NULL ? 0 : workSpaceSizeInBytes, 1);
}

cudnnStatus_t
cudnnGetConvolutionBackwardFilterAlgorithm_v7(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t srcDesc,
    const cudnnTensorDescriptor_t diffDesc,
    const cudnnConvolutionDescriptor_t convDesc,
    const cudnnFilterDescriptor_t gradDesc, const int requestedAlgoCount,
    int *returnedAlgoCount, cudnnConvolutionBwdFilterAlgoPerf_t *perfResults)
{
    cudnnStatus_t st = emu_dnn_fault(__func__); /* injected faults */

    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    return QUERY(DIR_BWD_FILTER, handle, srcDesc, gradDesc, convDesc,
                 diffDesc, requestedAlgoCount, returnedAlgoCount, perfResults,
                 0, 0);
}

cudnnStatus_t
cudnnFindConvolutionBackwardFilterAlgorithm(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc,
    const cudnnTensorDescriptor_t dyDesc,
    const cudnnConvolutionDescriptor_t convDesc,
    const cudnnFilterDescriptor_t dwDesc, const int requestedAlgoCount,
    int *returnedAlgoCount, cudnnConvolutionBwdFilterAlgoPerf_t *perfResults)
{
    return QUERY(DIR_BWD_FILTER, handle, xDesc, dwDesc, convDesc, dyDesc,
                 requestedAlgoCount, returnedAlgoCount, perfResults, 0, 0);
}

cudnnStatus_t
cudnnFindConvolutionBackwardFilterAlgorithmEx(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const void *x,
    const cudnnTensorDescriptor_t dyDesc, const void *y,
    const cudnnConvolutionDescriptor_t convDesc,
    const cudnnFilterDescriptor_t dwDesc, void *dw,
    const int requestedAlgoCount, int *returnedAlgoCount,
    cudnnConvolutionBwdFilterAlgoPerf_t *perfResults, void *workSpace,
    size_t workSpaceSizeInBytes)
{
    if (x == NULL || y == NULL || dw == NULL)
        return BAD("cudnnFindConvolutionBackwardFilterAlgorithmEx: NULL "
                   "data");
    return QUERY(DIR_BWD_FILTER, handle, xDesc, dwDesc, convDesc, dyDesc,
                 requestedAlgoCount, returnedAlgoCount, perfResults,
                 workSpace == NULL ? 0 : workSpaceSizeInBytes, 1);
}

/* ---- The backend API's convolutions --------------------------------------- */

static const enum algo_kind kind_of[] = {
    [EMU_DNN_KIND_IMPLICIT] = KIND_IMPLICIT,
    [EMU_DNN_KIND_PRECOMP] = KIND_PRECOMP,
    [EMU_DNN_KIND_GEMM] = KIND_GEMM,
};

static int
view_packed(const struct emu_dnn_view *v)
{
    int64_t s = 1;

    for (int i = v->nb_dims - 1; i >= 0; i--) {
        if (v->stride[i] != s)
            return 0;
        s *= v->dim[i];
    }
    return 1;
}

/* The problem of a backend convolution. Its shapes were checked when the
 * operation was finalized; the math follows the engine: Tensor Core
 * engines round FLOAT inputs to TF32 (the caller offers them only where
 * the modelled GPU has TF32) and run HALF and BFLOAT16 on the Tensor
 * Cores, the others compute in FP32 on the CUDA cores. */
static void
spec_problem(const struct emu_dnn_conv_spec *s, struct conv_problem *p)
{
    memset(p, 0, sizeof(*p));
    p->nsp = s->nsp;
    p->n = s->x.dim[0];
    p->c = s->x.dim[1];
    p->k = s->w.dim[0];
    p->groups = s->groups;
    p->cg = s->w.dim[1];
    p->kg = p->k / p->groups;
    for (int i = 0; i < p->nsp; i++) {
        p->in[i] = s->x.dim[2 + i];
        p->out[i] = s->y.dim[2 + i];
        p->filt[i] = s->w.dim[2 + i];
        p->pad[i] = s->pre_pad[i];
        p->stride[i] = s->stride[i];
        p->dil[i] = s->dil[i];
    }
    p->flip = s->flip;
    p->nchw_packed = view_packed(&s->x) && view_packed(&s->y) &&
                     view_packed(&s->w);
    p->type = s->type;
    p->math = s->tensor_core ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH;
    p->round = ROUND_NONE;
    p->prec = EMU_PREC_FP32;
    if (s->tensor_core && s->type == CUDNN_DATA_FLOAT) {
        p->round = ROUND_TF32;
        p->prec = EMU_PREC_TF32;
    } else if (s->tensor_core) {
        p->prec = emu_half_prec(s->type == CUDNN_DATA_BFLOAT16);
    }
}

/* The engines are the legacy algorithms: implicit GEMM everywhere,
 * precomputed implicit GEMM everywhere, explicit GEMM (FLOAT only) for
 * the forward and backward filter directions, as the legacy tables have
 * them; the nondeterministic ones are those of the legacy tables. */
cudnnStatus_t
emu_dnn_conv_engine(const struct emu_dnn_conv_spec *s, size_t *workspace,
                    double *model_ns, int *deterministic)
{
    enum algo_kind kind = kind_of[s->kind];
    struct conv_problem p;

    spec_problem(s, &p);
    if (s->kind == EMU_DNN_KIND_GEMM && s->dir == EMU_DNN_CONV_BWD_DATA)
        return emu_dnn_error(CUDNN_STATUS_NOT_SUPPORTED,
                             "engine: no explicit GEMM for backward data");
    if (!algo_supports(kind, &p))
        return emu_dnn_error(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE,
                             "engine: data type %d not supported",
                             (int)s->type);
    *workspace = algo_workspace(kind, &p);
    *model_ns = algo_model_ns(kind, &p);
    *deterministic = !((kind == KIND_IMPLICIT &&
                        s->dir != EMU_DNN_CONV_FWD) ||
                       (kind == KIND_GEMM &&
                        s->dir == EMU_DNN_CONV_BWD_FILTER));
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
emu_dnn_conv_enqueue(const struct emu_dnn_config *config, const char *api,
                     const struct emu_dnn_conv_spec *s, float alpha,
                     float beta, CUdeviceptr workspace, int partial)
{
    static const enum conv_dir dir_of[] = {
        [EMU_DNN_CONV_FWD] = DIR_FWD,
        [EMU_DNN_CONV_BWD_DATA] = DIR_BWD_DATA,
        [EMU_DNN_CONV_BWD_FILTER] = DIR_BWD_FILTER,
    };
    struct conv_job *job;
    struct emu_op op = { 0 }; /* a kernel node when captured */
    size_t ws = 0;
    double ns = 0.0;
    int det;
    cudnnStatus_t st = emu_dnn_conv_engine(s, &ws, &ns, &det);

    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    job = calloc(1, sizeof(*job));
    if (job == NULL)
        return emu_dnn_error(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED,
                             "%s: out of host memory", api);
    job->dir = dir_of[s->dir];
    spec_problem(s, &job->p);
    job->x = s->x;
    job->w = s->w;
    job->y = s->y;
    job->workspace = workspace;
    job->workspace_size = ws;
    job->alpha = alpha;
    job->beta = beta;
    job->partial = partial;
    op.name = api;
    op.run = conv_run;
    op.release = free;
    op.arg = job;
    op.model_ns = ns;
    return emu_dnn_enqueue(config, &op);
}
