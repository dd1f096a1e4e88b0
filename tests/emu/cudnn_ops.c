/* The emulated cuDNN element-wise and windowed operations of CNN programs
 * (cudnnAddTensor, cudnnOpTensor, cudnnTransformTensor, cudnnSetTensor,
 * cudnnScaleTensor, activations, pooling, softmax), and the device-tensor,
 * element and submission helpers every operation shares. FLOAT, DOUBLE,
 * HALF and BFLOAT16 tensors with any strides, computed in double (see
 * cudnn_emu.h); each call is checked at call time and queued on the
 * handle's stream. */
#include <cudnn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cudnn_emu.h"
#include "emu.h"

#define BAD(...) emu_dnn_error(CUDNN_STATUS_BAD_PARAM, __VA_ARGS__)
#define UNSUPPORTED(...) emu_dnn_error(CUDNN_STATUS_NOT_SUPPORTED, __VA_ARGS__)

/* ---- Device tensors ------------------------------------------------------ */

/* Whether v's strides are those of a packed row-major layout. */
static int
view_packed(const struct emu_dnn_view *v)
{
    int64_t expect = 1;

    for (int i = v->nb_dims - 1; i >= 0; i--) {
        if (v->dim[i] != 1 && v->stride[i] != expect)
            return 0;
        expect *= v->dim[i];
    }
    return 1;
}

void
emu_dnn_view_tensor(struct emu_dnn_view *v, cudnnTensorDescriptor_t t,
                    const void *ptr)
{
    memset(v, 0, sizeof(*v));
    v->ptr = (CUdeviceptr)(uintptr_t)ptr;
    v->type = t->type;
    v->nb_dims = t->nb_dims;
    for (int i = 0; i < t->nb_dims; i++) {
        v->dim[i] = t->dim[i];
        v->stride[i] = t->stride[i];
    }
    v->packed = view_packed(v);
}

void
emu_dnn_view_filter(struct emu_dnn_view *v, cudnnFilterDescriptor_t f,
                    const void *ptr)
{
    memset(v, 0, sizeof(*v));
    v->ptr = (CUdeviceptr)(uintptr_t)ptr;
    v->type = f->type;
    v->nb_dims = f->nb_dims;
    memcpy(v->dim, f->dim, sizeof(v->dim));
    emu_dnn_filter_strides(f, v->stride);
    v->packed = view_packed(v);
}

size_t
emu_dnn_view_count(const struct emu_dnn_view *v)
{
    size_t n = 1;

    for (int i = 0; i < v->nb_dims; i++)
        n *= (size_t)v->dim[i];
    return n;
}

int64_t
emu_dnn_view_offset(const struct emu_dnn_view *v, size_t lin)
{
    int64_t off = 0;

    if (v->packed)
        return (int64_t)lin;
    for (int i = v->nb_dims - 1; i >= 0; i--) {
        off += (int64_t)(lin % (size_t)v->dim[i]) * v->stride[i];
        lin /= (size_t)v->dim[i];
    }
    return off;
}

static size_t
dnn_view_bytes(const struct emu_dnn_view *v)
{
    size_t span = 1;

    for (int i = 0; i < v->nb_dims; i++)
        span += (size_t)(v->dim[i] - 1) * (size_t)v->stride[i];
    return span * emu_dnn_type_size(v->type);
}

void *
emu_dnn_view_at(const struct emu_dnn_view *v)
{
    return emu_dev_at(v->ptr, dnn_view_bytes(v));
}

void
emu_dnn_view_wrote(const struct emu_dnn_view *v)
{
    emu_dev_wrote(v->ptr, dnn_view_bytes(v));
}

double
emu_dnn_view_bytes(const struct emu_dnn_view *v)
{
    return (double)emu_dnn_view_count(v) *
           (double)emu_dnn_type_size(v->type);
}

/* ---- Elements ------------------------------------------------------------ */

static enum emu_elem
elem_of(cudnnDataType_t type)
{
    return type == CUDNN_DATA_HALF ? EMU_ELEM_F16
           : type == CUDNN_DATA_BFLOAT16 ? EMU_ELEM_BF16
                                         : EMU_ELEM_F32;
}

/* FLOAT, the common case, without the call into the core. */
float
emu_dnn_load(const void *base, int64_t idx, cudnnDataType_t type)
{
    float f;

    if (type != CUDNN_DATA_FLOAT)
        return emu_elem_load(base, (size_t)idx, elem_of(type));
    memcpy(&f, (const float *)base + idx, sizeof(f));
    return f;
}

void
emu_dnn_store(void *base, int64_t idx, cudnnDataType_t type, float v)
{
    if (type != CUDNN_DATA_FLOAT)
        emu_elem_store(base, (size_t)idx, elem_of(type), v);
    else
        memcpy((float *)base + idx, &v, sizeof(v));
}

void
emu_dnn_blend(void *base, int64_t idx, cudnnDataType_t type, float alpha,
              float beta, float value)
{
    float v = alpha * value;

    /* beta == 0: dst is not read, so NaN or Inf there cannot leak. */
    if (beta != 0.0f)
        v = v + beta * emu_dnn_load(base, idx, type);
    emu_dnn_store(base, idx, type, v);
}

int
emu_dnn_float_type(cudnnDataType_t type)
{
    return type == CUDNN_DATA_FLOAT || type == CUDNN_DATA_DOUBLE ||
           type == CUDNN_DATA_HALF || type == CUDNN_DATA_BFLOAT16;
}

double
emu_dnn_loadd(const void *base, int64_t idx, cudnnDataType_t type)
{
    double d;

    if (type != CUDNN_DATA_DOUBLE)
        return emu_elem_load(base, (size_t)idx, elem_of(type));
    memcpy(&d, (const char *)base + idx * 8, 8);
    return d;
}

void
emu_dnn_stored(void *base, int64_t idx, cudnnDataType_t type, double v)
{
    if (type != CUDNN_DATA_DOUBLE)
        emu_elem_store(base, (size_t)idx, elem_of(type), (float)v);
    else
        memcpy((char *)base + idx * 8, &v, 8);
}

void
emu_dnn_blendd(void *base, int64_t idx, cudnnDataType_t type, double alpha,
               double beta, double value)
{
    double v = alpha * value;

    /* beta == 0: dst is not read, so NaN or Inf there cannot leak. */
    if (beta != 0.0)
        v += beta * emu_dnn_loadd(base, idx, type);
    emu_dnn_stored(base, idx, type, v);
}

double
emu_dnn_scalar(const void *p, cudnnDataType_t type)
{
    double d;
    float f;

    if (type == CUDNN_DATA_DOUBLE) {
        memcpy(&d, p, sizeof(d));
        return d;
    }
    memcpy(&f, p, sizeof(f));
    return f;
}

cudnnStatus_t
emu_dnn_type_ok(cudnnTensorDescriptor_t t, const char *api)
{
    if (emu_dnn_float_type(t->type))
        return CUDNN_STATUS_SUCCESS;
    return UNSUPPORTED("%s: data type %d not supported", api, (int)t->type);
}

int
emu_dnn_same_dims(cudnnTensorDescriptor_t a, cudnnTensorDescriptor_t b)
{
    return a->nb_dims == b->nb_dims &&
           memcmp(a->dim, b->dim, sizeof(a->dim)) == 0;
}

int
emu_dnn_same_strides(cudnnTensorDescriptor_t a, cudnnTensorDescriptor_t b)
{
    return memcmp(a->stride, b->stride, sizeof(a->stride)) == 0;
}

/* ---- Submission ---------------------------------------------------------- */

cudnnStatus_t
emu_dnn_submit(const struct emu_dnn_config *config, const char *api,
               CUresult (*run)(void *), void (*release)(void *), void *arg,
               double flops, double bytes)
{
    struct emu_op op = { 0 }; /* a kernel node when captured */
    cudnnStatus_t st = emu_dnn_fault(api);

    if (st != CUDNN_STATUS_SUCCESS) {
        if (release != NULL)
            release(arg);
        return st;
    }
    op.name = api;
    op.run = run;
    op.release = release;
    op.arg = arg;
    /* Memory-bound: the time of the bytes moved, or of the FP32 work. */
    op.model_ns = emu_model_ns(flops, EMU_PREC_FP32, bytes);
    return emu_dnn_enqueue(config, &op);
}

/* ---- Element-wise jobs --------------------------------------------------- */

/* Up to five tensors (x, y, dy, dx and a second input b), scalars and the
 * parameters of the operation. */
enum { EW_X, EW_Y, EW_DY, EW_DX, EW_B, EW_NVIEWS };

struct ew_job {
    struct emu_dnn_view v[EW_NVIEWS];
    double alpha, beta;
    double alpha2;                      /* cudnnOpTensor: B's factor */
    double value;                       /* cudnnSetTensor */
    int scale;                          /* cudnnScaleTensor */
    struct cudnnActivationStruct act;
    struct cudnnPoolingStruct pool;
    struct cudnnOpTensorStruct optensor;
    cudnnSoftmaxAlgorithm_t sm_algo;
    cudnnSoftmaxMode_t sm_mode;
};

/* Host alias of every view the job uses (ptr != 0); -1 when one is not in
 * device memory. */
static int
ew_map(const struct ew_job *j, void *at[EW_NVIEWS])
{
    for (int i = 0; i < EW_NVIEWS; i++) {
        at[i] = NULL;
        if (j->v[i].ptr == 0)
            continue;
        at[i] = emu_dnn_view_at(&j->v[i]);
        if (at[i] == NULL)
            return -1;
    }
    return 0;
}

static CUresult
ew_unmapped(const char *api)
{
    return emu_op_fail(CUDA_ERROR_ILLEGAL_ADDRESS, api,
                       "a tensor is not in device memory");
}

/* Queues `run` with the time of moving every view once and
 * `flops_per_elem` for each element of the output `out`. */
static cudnnStatus_t
ew_submit(const struct emu_dnn_config *cfg, const char *api,
          CUresult (*run)(void *), struct ew_job *job, int out,
          double flops_per_elem)
{
    double bytes = 0.0;

    for (int i = 0; i < EW_NVIEWS; i++) {
        if (job->v[i].ptr != 0)
            bytes += emu_dnn_view_bytes(&job->v[i]);
    }
    return emu_dnn_submit(cfg, api, run, free, job,
                          flops_per_elem *
                              (double)emu_dnn_view_count(&job->v[out]),
                          bytes);
}

/* Reads the handle and the scalars (of `type`'s kind) and allocates the
 * job. */
static cudnnStatus_t
ew_begin(cudnnHandle_t handle, const void *alpha, const void *beta,
         cudnnDataType_t type, struct emu_dnn_config *cfg,
         struct ew_job **job)
{
    cudnnStatus_t st = emu_dnn_config(handle, cfg);

    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    if (alpha == NULL || beta == NULL)
        return emu_dnn_error(CUDNN_STATUS_BAD_PARAM_NULL_POINTER,
                             "alpha or beta is NULL");
    *job = calloc(1, sizeof(**job));
    if (*job == NULL)
        return emu_dnn_error(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED,
                             "out of host memory");
    (*job)->alpha = emu_dnn_scalar(alpha, type);
    (*job)->beta = emu_dnn_scalar(beta, type);
    return CUDNN_STATUS_SUCCESS;
}

/* The descriptors of an element-wise call, in job order (NULL where the
 * call has no such tensor), with their data pointers, and the checks
 * cuDNN documents for the call. */
struct ew_args {
    const char *api;
    cudnnTensorDescriptor_t desc[EW_NVIEWS];
    const void *data[EW_NVIEWS];
    int out;                    /* the index written */
    /* The status for sizes or types that differ from the output's (0:
     * BAD_PARAM), and for each tensor the one (index + 1; 0: none) whose
     * strides it must have, with that check's status (0: BAD_PARAM). */
    cudnnStatus_t mismatch;
    int strides_like[EW_NVIEWS];
    cudnnStatus_t stride_mismatch;
    int any_types;              /* inputs of any type (transform) */
};

/* Every tensor given must be set, non-NULL, of one type and of the same
 * sizes; an input that is the output (in place) must have its strides. */
static cudnnStatus_t
ew_check(const struct ew_args *a)
{
    cudnnTensorDescriptor_t out = a->desc[a->out];
    cudnnStatus_t mismatch = a->mismatch ? a->mismatch
                                         : CUDNN_STATUS_BAD_PARAM;
    cudnnStatus_t stride = a->stride_mismatch ? a->stride_mismatch
                                              : CUDNN_STATUS_BAD_PARAM;

    for (int i = 0; i < EW_NVIEWS; i++) {
        if (a->data[i] == NULL && a->desc[i] == NULL)
            continue;
        if (!emu_dnn_tensor_ok(a->desc[i]))
            return BAD("%s: invalid tensor descriptor", a->api);
        if (a->data[i] == NULL)
            return emu_dnn_error(CUDNN_STATUS_BAD_PARAM_NULL_POINTER,
                                 "%s: NULL data", a->api);
    }
    for (int i = 0; i < EW_NVIEWS; i++) {
        cudnnTensorDescriptor_t t = a->desc[i];

        if (t == NULL)
            continue;
        if ((t->type != out->type && !a->any_types) ||
            !emu_dnn_same_dims(t, out))
            return emu_dnn_error(mismatch, "%s: tensors differ in type or "
                                 "sizes", a->api);
        if (t->type != out->type && i != a->out &&
            a->data[i] == a->data[a->out])
            return BAD("%s: in-place call changing the type", a->api);
        if (a->any_types && !emu_dnn_float_type(t->type))
            return emu_dnn_type_ok(t, a->api);
    }
    for (int i = 0; i < EW_NVIEWS; i++) {
        if (a->desc[i] != NULL && i != a->out &&
            a->data[i] == a->data[a->out] &&
            !emu_dnn_same_strides(a->desc[i], out))
            return BAD("%s: in-place call with different strides", a->api);
    }
    for (int i = 0; i < EW_NVIEWS; i++) {
        int like = a->strides_like[i] - 1;

        if (like >= 0 && a->desc[i] != NULL &&
            !emu_dnn_same_strides(a->desc[i], a->desc[like]))
            return emu_dnn_error(stride, "%s: tensors %d and %d differ in "
                                 "strides", a->api, i, like);
    }
    return emu_dnn_type_ok(out, a->api);
}

static cudnnStatus_t
ew_prepare(cudnnHandle_t handle, const struct ew_args *a, const void *alpha,
           const void *beta, struct emu_dnn_config *cfg, struct ew_job **job)
{
    cudnnStatus_t st = ew_check(a);

    if (st == CUDNN_STATUS_SUCCESS)
        st = ew_begin(handle, alpha, beta, a->desc[a->out]->type, cfg, job);
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    for (int i = 0; i < EW_NVIEWS; i++) {
        if (a->desc[i] != NULL)
            emu_dnn_view_tensor(&(*job)->v[i], a->desc[i], a->data[i]);
    }
    return CUDNN_STATUS_SUCCESS;
}

/* ---- Add, transform, operations on tensors ------------------------------- */

/* Offset in `src` of row-major element `lin` of `dst`, where src has the
 * same rank and broadcasts along every dimension in which it has size 1. */
static int64_t
broadcast_offset(const struct emu_dnn_view *src,
                 const struct emu_dnn_view *dst, size_t lin)
{
    int64_t off = 0;

    for (int d = dst->nb_dims - 1; d >= 0; d--) {
        if (src->dim[d] != 1)
            off += (int64_t)(lin % (size_t)dst->dim[d]) * src->stride[d];
        lin /= (size_t)dst->dim[d];
    }
    return off;
}

/* y = alpha * x + beta * y, x broadcast (cudnnAddTensor; with x of y's
 * sizes, cudnnTransformTensor). */
static CUresult
add_run(void *arg)
{
    const struct ew_job *j = arg;
    const struct emu_dnn_view *x = &j->v[EW_X], *y = &j->v[EW_Y];
    size_t n = emu_dnn_view_count(y);
    void *at[EW_NVIEWS];
    int coord[CUDNN_DIM_MAX] = { 0 };
    int64_t xstep[CUDNN_DIM_MAX], xi = 0, yi = 0;

    if (ew_map(j, at) != 0)
        return ew_unmapped("cudnnAddTensor");
    /* x broadcasts along every dimension where it has size 1. */
    for (int d = 0; d < y->nb_dims; d++)
        xstep[d] = x->dim[d] != 1 ? x->stride[d] : 0;
    /* y's elements in row-major order, both offsets carried from one to
     * the next (no divisions). */
    for (size_t lin = 0; lin < n; lin++) {
        emu_dnn_blendd(at[EW_Y], yi, y->type, j->alpha, j->beta,
                       emu_dnn_loadd(at[EW_X], xi, x->type));
        for (int d = y->nb_dims - 1; d >= 0; d--) {
            yi += y->stride[d];
            xi += xstep[d];
            if (++coord[d] < y->dim[d])
                break;
            yi -= (int64_t)y->dim[d] * y->stride[d];
            xi -= (int64_t)y->dim[d] * xstep[d];
            coord[d] = 0;
        }
    }
    return CUDA_SUCCESS;
}

/* A must have C's rank and type, and each of its sizes must be C's or 1;
 * up to 5 dimensions. */
cudnnStatus_t
cudnnAddTensor(cudnnHandle_t handle, const void *alpha,
               const cudnnTensorDescriptor_t aDesc, const void *A,
               const void *beta, const cudnnTensorDescriptor_t cDesc, void *C)
{
    const char *api = "cudnnAddTensor";
    struct emu_dnn_config cfg;
    struct ew_job *job = NULL;
    cudnnStatus_t st = CUDNN_STATUS_SUCCESS;

    if (!emu_dnn_tensor_ok(aDesc) || !emu_dnn_tensor_ok(cDesc))
        return BAD("%s: invalid tensor descriptor", api);
    if (A == NULL || C == NULL)
        return emu_dnn_error(CUDNN_STATUS_BAD_PARAM_NULL_POINTER,
                             "%s: NULL data", api);
    if (aDesc->type != cDesc->type || aDesc->nb_dims != cDesc->nb_dims)
        return BAD("%s: A and C differ in type or rank", api);
    for (int d = 0; d < cDesc->nb_dims; d++) {
        if (aDesc->dim[d] != 1 && aDesc->dim[d] != cDesc->dim[d])
            return BAD("%s: A dimension %d is %d, C has %d", api, d,
                       aDesc->dim[d], cDesc->dim[d]);
    }
    if (cDesc->nb_dims > 5)
        return UNSUPPORTED("%s: %d dimensions (up to 5)", api,
                           cDesc->nb_dims);
    /* In place only as the same elements. */
    if (A == C && (!emu_dnn_same_dims(aDesc, cDesc) ||
                   !emu_dnn_same_strides(aDesc, cDesc)))
        return BAD("%s: A is C with another layout", api);
    st = emu_dnn_type_ok(cDesc, api);
    if (st == CUDNN_STATUS_SUCCESS)
        st = ew_begin(handle, alpha, beta, cDesc->type, &cfg, &job);
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    emu_dnn_view_tensor(&job->v[EW_X], aDesc, A);
    emu_dnn_view_tensor(&job->v[EW_Y], cDesc, C);
    return ew_submit(&cfg, api, add_run, job, EW_Y, 2.0);
}

/* y = alpha * x + beta * y between layouts and between data types: the
 * same sizes. The API reference lists differing data types among its
 * BAD_PARAM cases, but NVIDIA's own mnistCUDNN sample converts its FP32
 * weights to FP16 with this call (its FP16_CUDNN import: a FLOAT and a
 * HALF 1 x size x 1 x 1 tensor) and TensorFlow's stream executor
 * (DoTransformTensor, input and output types) converts with it, so
 * cuDNN does it; the emulator follows the library (docs/emulator.md).
 * Alpha and beta are of y's kind. */
cudnnStatus_t
cudnnTransformTensor(cudnnHandle_t handle, const void *alpha,
                     const cudnnTensorDescriptor_t xDesc, const void *x,
                     const void *beta, const cudnnTensorDescriptor_t yDesc,
                     void *y)
{
    struct ew_args a = { "cudnnTransformTensor", { xDesc, yDesc }, { x, y },
                         EW_Y, 0, { 0 }, 0, 1 };
    struct emu_dnn_config cfg;
    struct ew_job *job = NULL;
    cudnnStatus_t st;

    if (!emu_dnn_tensor_ok(yDesc))
        return BAD("%s: invalid tensor descriptor", a.api);
    st = ew_prepare(handle, &a, alpha, beta, &cfg, &job);
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    return ew_submit(&cfg, a.api, add_run, job, EW_Y, 2.0);
}

/* One element of op(a, b) for cudnnOpTensor. NOT is 1 - a, the logical
 * negation of 0 and 1. */
static double
op_value(const struct cudnnOpTensorStruct *o, double a, double b)
{
    int propagate = o->nan_opt == CUDNN_PROPAGATE_NAN;

    switch (o->op) {
    case CUDNN_OP_TENSOR_ADD:
        return a + b;
    case CUDNN_OP_TENSOR_MUL:
        return a * b;
    case CUDNN_OP_TENSOR_MIN:
        if (propagate && (isnan(a) || isnan(b)))
            return NAN;
        return fmin(a, b);
    case CUDNN_OP_TENSOR_MAX:
        if (propagate && (isnan(a) || isnan(b)))
            return NAN;
        return fmax(a, b);
    case CUDNN_OP_TENSOR_SQRT:
        return sqrt(a);
    default:
        return 1.0 - a;
    }
}

static int
op_binary(cudnnOpTensorOp_t op)
{
    return op != CUDNN_OP_TENSOR_SQRT && op != CUDNN_OP_TENSOR_NOT;
}

static CUresult
optensor_run(void *arg)
{
    const struct ew_job *j = arg;
    const struct emu_dnn_view *a = &j->v[EW_X], *b = &j->v[EW_B];
    const struct emu_dnn_view *c = &j->v[EW_Y];
    int binary = op_binary(j->optensor.op);
    size_t n = emu_dnn_view_count(c);
    void *at[EW_NVIEWS];

    if (ew_map(j, at) != 0)
        return ew_unmapped("cudnnOpTensor");
    for (size_t lin = 0; lin < n; lin++) {
        double av = j->alpha * emu_dnn_loadd(at[EW_X],
                                             emu_dnn_view_offset(a, lin),
                                             a->type);
        double bv = 0.0;

        if (binary)
            bv = j->alpha2 * emu_dnn_loadd(at[EW_B],
                                           broadcast_offset(b, c, lin),
                                           b->type);
        emu_dnn_blendd(at[EW_Y], emu_dnn_view_offset(c, lin), c->type, 1.0,
                       j->beta, op_value(&j->optensor, av, bv));
    }
    return CUDA_SUCCESS;
}

/* The data types cudnnOpTensor takes: A and B of one type; DOUBLE
 * throughout with a DOUBLE compute type, else a FLOAT compute type and C
 * FLOAT, of A's type, or HALF or BFLOAT16 from FLOAT inputs. The integer
 * configurations are not emulated. */
static cudnnStatus_t
optensor_types(cudnnDataType_t comp, cudnnDataType_t a, cudnnDataType_t b,
               cudnnDataType_t c)
{
    const char *api = "cudnnOpTensor";
    int doubles = (a == CUDNN_DATA_DOUBLE) + (b == CUDNN_DATA_DOUBLE) +
                  (c == CUDNN_DATA_DOUBLE);

    if (!emu_dnn_float_type(a) || !emu_dnn_float_type(b) ||
        !emu_dnn_float_type(c))
        return UNSUPPORTED("%s: data types %d, %d, %d", api, (int)a, (int)b,
                           (int)c);
    if (a != b)
        return BAD("%s: A and B differ in type", api);
    if (comp == CUDNN_DATA_DOUBLE && doubles == 3)
        return CUDNN_STATUS_SUCCESS;
    if (comp != CUDNN_DATA_FLOAT || doubles != 0)
        return BAD("%s: compute type %d for data types %d and %d", api,
                   (int)comp, (int)a, (int)c);
    if (c != CUDNN_DATA_FLOAT && c != a && a != CUDNN_DATA_FLOAT)
        return BAD("%s: C of type %d from A of type %d", api, (int)c,
                   (int)a);
    return CUDNN_STATUS_SUCCESS;
}

/* The tensors of cudnnOpTensor: A of C's sizes, B of C's or 1 in each
 * dimension (ignored by SQRT and NOT), up to 5 dimensions; C may be A or
 * B only as the same elements. */
static cudnnStatus_t
optensor_check(cudnnOpTensorDescriptor_t op, cudnnTensorDescriptor_t aDesc,
               const void *A, cudnnTensorDescriptor_t bDesc, const void *B,
               cudnnTensorDescriptor_t cDesc, const void *C)
{
    const char *api = "cudnnOpTensor";
    int binary;

    if (op == NULL || op->magic != EMU_DNN_MAGIC_OPTENSOR || !op->is_set)
        return BAD("%s: invalid tensor operation descriptor", api);
    binary = op_binary(op->op);
    if (!emu_dnn_tensor_ok(aDesc) || !emu_dnn_tensor_ok(cDesc) ||
        (binary && !emu_dnn_tensor_ok(bDesc)))
        return BAD("%s: invalid tensor descriptor", api);
    if (A == NULL || C == NULL || (binary && B == NULL))
        return emu_dnn_error(CUDNN_STATUS_BAD_PARAM_NULL_POINTER,
                             "%s: NULL data", api);
    if (cDesc->nb_dims > 5)
        return BAD("%s: %d dimensions (up to 5)", api, cDesc->nb_dims);
    if (!emu_dnn_same_dims(aDesc, cDesc))
        return BAD("%s: A and C differ in sizes", api);
    if (A == C && !emu_dnn_same_strides(aDesc, cDesc))
        return BAD("%s: A is C with other strides", api);
    if (!binary)
        return optensor_types(op->compute, aDesc->type, aDesc->type,
                              cDesc->type);
    if (bDesc->nb_dims != cDesc->nb_dims)
        return BAD("%s: B and C differ in rank", api);
    for (int d = 0; d < cDesc->nb_dims; d++) {
        if (bDesc->dim[d] != 1 && bDesc->dim[d] != cDesc->dim[d])
            return BAD("%s: B dimension %d is %d, C has %d", api, d,
                       bDesc->dim[d], cDesc->dim[d]);
    }
    if (B == C && (!emu_dnn_same_dims(bDesc, cDesc) ||
                   !emu_dnn_same_strides(bDesc, cDesc)))
        return BAD("%s: B is C with another layout", api);
    return optensor_types(op->compute, aDesc->type, bDesc->type,
                          cDesc->type);
}

cudnnStatus_t
cudnnOpTensor(cudnnHandle_t handle,
              const cudnnOpTensorDescriptor_t opTensorDesc,
              const void *alpha1, const cudnnTensorDescriptor_t aDesc,
              const void *A, const void *alpha2,
              const cudnnTensorDescriptor_t bDesc, const void *B,
              const void *beta, const cudnnTensorDescriptor_t cDesc, void *C)
{
    const char *api = "cudnnOpTensor";
    struct emu_dnn_config cfg;
    struct ew_job *job = NULL;
    cudnnStatus_t st = optensor_check(opTensorDesc, aDesc, A, bDesc, B,
                                      cDesc, C);
    int binary = st == CUDNN_STATUS_SUCCESS && op_binary(opTensorDesc->op);

    if (st == CUDNN_STATUS_SUCCESS && binary && alpha2 == NULL)
        st = emu_dnn_error(CUDNN_STATUS_BAD_PARAM_NULL_POINTER,
                           "%s: alpha2 is NULL", api);
    if (st == CUDNN_STATUS_SUCCESS)
        st = ew_begin(handle, alpha1, beta, cDesc->type, &cfg, &job);
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    job->optensor = *opTensorDesc;
    if (binary) {
        job->alpha2 = emu_dnn_scalar(alpha2, cDesc->type);
        emu_dnn_view_tensor(&job->v[EW_B], bDesc, B);
    }
    emu_dnn_view_tensor(&job->v[EW_X], aDesc, A);
    emu_dnn_view_tensor(&job->v[EW_Y], cDesc, C);
    return ew_submit(&cfg, api, optensor_run, job, EW_Y, 3.0);
}

/* ---- Set, scale ---------------------------------------------------------- */

static CUresult
fill_run(void *arg)
{
    const struct ew_job *j = arg;
    const struct emu_dnn_view *y = &j->v[EW_Y];
    size_t n = emu_dnn_view_count(y);
    void *at[EW_NVIEWS];

    if (ew_map(j, at) != 0)
        return ew_unmapped("cudnnSetTensor");
    for (size_t lin = 0; lin < n; lin++) {
        int64_t off = emu_dnn_view_offset(y, lin);
        double v = j->value;

        if (j->scale)
            v = j->alpha * emu_dnn_loadd(at[EW_Y], off, y->type);
        emu_dnn_stored(at[EW_Y], off, y->type, v);
    }
    return CUDA_SUCCESS;
}

/* cudnnSetTensor (a value of y's own type) and cudnnScaleTensor (a float
 * or, for DOUBLE tensors, a double) are one job: y = value, or
 * y = alpha * y. */
static cudnnStatus_t
fill_submit(cudnnHandle_t handle, const char *api,
            const cudnnTensorDescriptor_t yDesc, void *y, const void *scalar,
            int scale)
{
    static const double unused = 0.0;
    struct emu_dnn_config cfg;
    struct ew_job *job = NULL;
    cudnnStatus_t st;

    if (!emu_dnn_tensor_ok(yDesc))
        return BAD("%s: invalid tensor descriptor", api);
    if (y == NULL || scalar == NULL)
        return emu_dnn_error(CUDNN_STATUS_BAD_PARAM_NULL_POINTER,
                             "%s: NULL pointer", api);
    st = emu_dnn_type_ok(yDesc, api);
    if (st == CUDNN_STATUS_SUCCESS)
        st = ew_begin(handle, scale ? scalar : &unused, &unused, yDesc->type,
                      &cfg, &job);
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    job->scale = scale;
    if (!scale)
        job->value = emu_dnn_loadd(scalar, 0, yDesc->type);
    emu_dnn_view_tensor(&job->v[EW_Y], yDesc, y);
    return ew_submit(&cfg, api, fill_run, job, EW_Y, scale ? 1.0 : 0.0);
}

cudnnStatus_t
cudnnSetTensor(cudnnHandle_t handle, const cudnnTensorDescriptor_t yDesc,
               void *y, const void *valuePtr)
{
    return fill_submit(handle, "cudnnSetTensor", yDesc, y, valuePtr, 0);
}

cudnnStatus_t
cudnnScaleTensor(cudnnHandle_t handle, const cudnnTensorDescriptor_t yDesc,
                 void *y, const void *alpha)
{
    return fill_submit(handle, "cudnnScaleTensor", yDesc, y, alpha, 1);
}

/* ---- Activations --------------------------------------------------------- */

static double
sigmoid(double x)
{
    return 1.0 / (1.0 + exp(-x));
}

/* f(x). NaN stays NaN through SIGMOID and TANH, and through the others
 * when the descriptor propagates it; else it becomes 0. */
static double
act_forward(const struct cudnnActivationStruct *a, double x)
{
    double coef = a->coef;

    if (isnan(x))
        return a->nan_opt == CUDNN_PROPAGATE_NAN ||
                       a->mode == CUDNN_ACTIVATION_SIGMOID ||
                       a->mode == CUDNN_ACTIVATION_TANH
                   ? x
                   : 0.0;
    switch (a->mode) {
    case CUDNN_ACTIVATION_SIGMOID:
        return sigmoid(x);
    case CUDNN_ACTIVATION_RELU:
        return x > 0.0 ? x : 0.0;
    case CUDNN_ACTIVATION_TANH:
        return tanh(x);
    case CUDNN_ACTIVATION_CLIPPED_RELU:
        return x <= 0.0 ? 0.0 : (x < coef ? x : coef);
    case CUDNN_ACTIVATION_ELU:
        return x > 0.0 ? x : coef * expm1(x);
    default:    /* SWISH */
        return x * sigmoid(a->swish_beta * x);
    }
}

/* d f / d x times dy, from the forward input x and output y (SIGMOID,
 * TANH and ELU use y, as cuDNN does). */
static double
act_backward(const struct cudnnActivationStruct *a, double x, double y,
             double dy)
{
    double s;

    switch (a->mode) {
    case CUDNN_ACTIVATION_SIGMOID:
        return dy * y * (1.0 - y);
    case CUDNN_ACTIVATION_RELU:
        return x > 0.0 ? dy : 0.0;
    case CUDNN_ACTIVATION_TANH:
        return dy * (1.0 - y * y);
    case CUDNN_ACTIVATION_CLIPPED_RELU:
        return x > 0.0 && x < a->coef ? dy : 0.0;
    case CUDNN_ACTIVATION_ELU:
        return x > 0.0 ? dy : dy * (y + a->coef);
    default:    /* SWISH */
        s = sigmoid(a->swish_beta * x);
        return dy * (s + a->swish_beta * x * s * (1.0 - s));
    }
}

static CUresult
act_fwd_run(void *arg)
{
    const struct ew_job *j = arg;
    const struct emu_dnn_view *x = &j->v[EW_X], *y = &j->v[EW_Y];
    size_t n = emu_dnn_view_count(y);
    void *at[EW_NVIEWS];

    if (ew_map(j, at) != 0)
        return ew_unmapped("cudnnActivationForward");
    for (size_t lin = 0; lin < n; lin++) {
        double v = emu_dnn_loadd(at[EW_X], emu_dnn_view_offset(x, lin),
                                 x->type);
        emu_dnn_blendd(at[EW_Y], emu_dnn_view_offset(y, lin), y->type,
                       j->alpha, j->beta, act_forward(&j->act, v));
    }
    return CUDA_SUCCESS;
}

static CUresult
act_bwd_run(void *arg)
{
    const struct ew_job *j = arg;
    const struct emu_dnn_view *v = j->v;
    size_t n = emu_dnn_view_count(&v[EW_DX]);
    void *at[EW_NVIEWS];

    if (ew_map(j, at) != 0)
        return ew_unmapped("cudnnActivationBackward");
    for (size_t lin = 0; lin < n; lin++) {
        double val[EW_DX];

        for (int i = EW_X; i < EW_DX; i++)
            val[i] = emu_dnn_loadd(at[i], emu_dnn_view_offset(&v[i], lin),
                                   v[i].type);
        emu_dnn_blendd(at[EW_DX], emu_dnn_view_offset(&v[EW_DX], lin),
                       v[EW_DX].type, j->alpha, j->beta,
                       act_backward(&j->act, val[EW_X], val[EW_Y],
                                    val[EW_DY]));
    }
    return CUDA_SUCCESS;
}

/* A set activation descriptor of a mode these functions take: IDENTITY
 * is only for cudnnConvolutionBiasActivationForward, as documented. */
static cudnnStatus_t
act_check(cudnnActivationDescriptor_t a, const char *api)
{
    if (a == NULL || a->magic != EMU_DNN_MAGIC_ACT)
        return BAD("%s: invalid activation descriptor", api);
    if (a->mode == CUDNN_ACTIVATION_IDENTITY)
        return BAD("%s: IDENTITY works only in "
                   "cudnnConvolutionBiasActivationForward", api);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnActivationForward(cudnnHandle_t handle,
                       cudnnActivationDescriptor_t activationDesc,
                       const void *alpha, const cudnnTensorDescriptor_t xDesc,
                       const void *x, const void *beta,
                       const cudnnTensorDescriptor_t yDesc, void *y)
{
    struct ew_args a = { "cudnnActivationForward", { xDesc, yDesc },
                         { x, y }, EW_Y, 0, { 0 }, 0, 0 };
    struct emu_dnn_config cfg;
    struct ew_job *job = NULL;
    cudnnStatus_t st = act_check(activationDesc, a.api);

    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    if (!emu_dnn_tensor_ok(yDesc))
        return BAD("%s: invalid tensor descriptor", a.api);
    st = ew_prepare(handle, &a, alpha, beta, &cfg, &job);
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    job->act = *activationDesc;
    return ew_submit(&cfg, a.api, act_fwd_run, job, EW_Y, 4.0);
}

/* Sizes or types that differ, and x and dx or y and dy with other
 * strides, are NOT_SUPPORTED; dx in place of dy with other strides is
 * BAD_PARAM (cuDNN's list). */
cudnnStatus_t
cudnnActivationBackward(cudnnHandle_t handle,
                        cudnnActivationDescriptor_t activationDesc,
                        const void *alpha,
                        const cudnnTensorDescriptor_t yDesc, const void *y,
                        const cudnnTensorDescriptor_t dyDesc, const void *dy,
                        const cudnnTensorDescriptor_t xDesc, const void *x,
                        const void *beta,
                        const cudnnTensorDescriptor_t dxDesc, void *dx)
{
    struct ew_args a = {
        "cudnnActivationBackward", { xDesc, yDesc, dyDesc, dxDesc },
        { x, y, dy, dx }, EW_DX, CUDNN_STATUS_NOT_SUPPORTED,
        { [EW_DX] = EW_X + 1, [EW_DY] = EW_Y + 1 },
        CUDNN_STATUS_NOT_SUPPORTED, 0,
    };
    struct emu_dnn_config cfg;
    struct ew_job *job = NULL;
    cudnnStatus_t st = act_check(activationDesc, a.api);

    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    if (!emu_dnn_tensor_ok(dxDesc))
        return BAD("%s: invalid tensor descriptor", a.api);
    st = ew_prepare(handle, &a, alpha, beta, &cfg, &job);
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    job->act = *activationDesc;
    return ew_submit(&cfg, a.api, act_bwd_run, job, EW_DX, 4.0);
}

/* ---- Pooling ------------------------------------------------------------- */

/* The positions of one pooling window: for output element `lin` of y
 * (row-major over N, C, spatial), the row-major indices in x of the
 * window's positions inside x, in row-major window order; returns how many
 * positions the window has in all (padding included). */
static int
pool_window(const struct cudnnPoolingStruct *p, const struct emu_dnn_view *x,
            const struct emu_dnn_view *y, size_t lin, int64_t *xlin_out,
            int *inside_out)
{
    int ns = p->nb_spatial, o[EMU_DNN_MAX_SPATIAL], k[EMU_DNN_MAX_SPATIAL];
    size_t rest = lin, plane;
    int total = 1, inside = 0;

    for (int d = ns - 1; d >= 0; d--) {
        o[d] = (int)(rest % (size_t)y->dim[2 + d]);
        rest /= (size_t)y->dim[2 + d];
        total *= p->window[d];
        k[d] = 0;
    }
    plane = rest;       /* n * C + c: the same in x and y */
    for (int pos = 0; pos < total; pos++) {
        int64_t xl = (int64_t)plane;
        int in = 1;

        for (int d = 0; d < ns; d++) {
            int i = o[d] * p->stride[d] - p->pad[d] + k[d];
            in = in && i >= 0 && i < x->dim[2 + d];
            xl = xl * x->dim[2 + d] + i;
        }
        if (in)
            xlin_out[inside++] = xl;
        for (int d = ns - 1; d >= 0; d--) {
            if (++k[d] < p->window[d])
                break;
            k[d] = 0;
        }
    }
    *inside_out = inside;
    return total;
}

static int
pool_is_max(const struct cudnnPoolingStruct *p)
{
    return p->mode == CUDNN_POOLING_MAX ||
           p->mode == CUDNN_POOLING_MAX_DETERMINISTIC;
}

/* The divisor of an average: the whole window, or the positions inside x
 * (at least 1). */
static int
pool_count(const struct cudnnPoolingStruct *p, int inside, int total)
{
    if (p->mode == CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING)
        return total;
    return inside > 0 ? inside : 1;
}

/* The pooled value of one window and, for MAX, which of `xlin` won (the
 * first of equal maxima; NaN wins when the descriptor propagates it). */
static double
pool_value(const struct cudnnPoolingStruct *p, const struct emu_dnn_view *x,
           const void *xa, const int64_t *xlin, int inside, int total,
           int *argmax)
{
    int is_max = pool_is_max(p);
    double acc = is_max ? -INFINITY : 0.0;

    *argmax = -1;
    for (int i = 0; i < inside; i++) {
        double v = emu_dnn_loadd(xa, emu_dnn_view_offset(x, (size_t)xlin[i]),
                                 x->type);
        if (!is_max) {
            acc += v;
        } else if (v > acc || (isnan(v) && !isnan(acc) &&
                               p->nan_opt == CUDNN_PROPAGATE_NAN)) {
            acc = v;
            *argmax = i;
        }
    }
    if (is_max)
        return acc;
    return acc / pool_count(p, inside, total);
}

static int
pool_window_size(const struct cudnnPoolingStruct *p)
{
    int total = 1;

    for (int d = 0; d < p->nb_spatial; d++)
        total *= p->window[d];
    return total;
}

/* Forward, or backward when the job has dx: the windows are found again
 * from x, and dy goes to the maximum (MAX) or evenly to the window's
 * positions (averages). */
static CUresult
pool_run(void *arg)
{
    const struct ew_job *j = arg;
    const struct emu_dnn_view *x = &j->v[EW_X], *y = &j->v[EW_Y];
    const struct emu_dnn_view *dy = &j->v[EW_DY], *dx = &j->v[EW_DX];
    int backward = dx->ptr != 0;
    size_t n = emu_dnn_view_count(y), nx = emu_dnn_view_count(x);
    int64_t *xlin = malloc((size_t)pool_window_size(&j->pool) *
                           sizeof(*xlin));
    double *grad = backward ? calloc(nx, sizeof(double)) : NULL;
    void *at[EW_NVIEWS];
    CUresult res = CUDA_SUCCESS;

    if (xlin == NULL || (backward && grad == NULL)) {
        res = emu_op_fail(CUDA_ERROR_OUT_OF_MEMORY, "cudnnPooling",
                          "out of host memory");
        goto out;
    }
    if (ew_map(j, at) != 0) {
        res = ew_unmapped("cudnnPooling");
        goto out;
    }
    for (size_t lin = 0; lin < n; lin++) {
        int inside, arg_i;
        int total = pool_window(&j->pool, x, y, lin, xlin, &inside);
        double v = pool_value(&j->pool, x, at[EW_X], xlin, inside, total,
                              &arg_i);
        double g;

        if (!backward) {
            emu_dnn_blendd(at[EW_Y], emu_dnn_view_offset(y, lin), y->type,
                           j->alpha, j->beta, v);
            continue;
        }
        g = emu_dnn_loadd(at[EW_DY], emu_dnn_view_offset(dy, lin), dy->type);
        if (pool_is_max(&j->pool)) {
            if (arg_i >= 0)
                grad[xlin[arg_i]] += g;
            continue;
        }
        g /= pool_count(&j->pool, inside, total);
        for (int i = 0; i < inside; i++)
            grad[xlin[i]] += g;
    }
    for (size_t lin = 0; backward && lin < nx; lin++)
        emu_dnn_blendd(at[EW_DX], emu_dnn_view_offset(dx, lin), dx->type,
                       j->alpha, j->beta, grad[lin]);
out:
    free(xlin);
    free(grad);
    return res;
}

/* x and y against the pooling descriptor: y of the pooled sizes and x's
 * type. */
static cudnnStatus_t
pool_check(cudnnPoolingDescriptor_t p, cudnnTensorDescriptor_t xDesc,
           cudnnTensorDescriptor_t yDesc, const char *api)
{
    int out[CUDNN_DIM_MAX];
    cudnnStatus_t st;

    if (p == NULL || p->magic != EMU_DNN_MAGIC_POOL ||
        !emu_dnn_tensor_ok(xDesc) || !emu_dnn_tensor_ok(yDesc))
        return BAD("%s: invalid descriptor", api);
    st = cudnnGetPoolingNdForwardOutputDim(p, xDesc, xDesc->nb_dims, out);
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    if (yDesc->nb_dims != xDesc->nb_dims ||
        memcmp(out, yDesc->dim, (size_t)yDesc->nb_dims * sizeof(int)) != 0)
        return BAD("%s: y does not have the pooled sizes", api);
    if (xDesc->type != yDesc->type)
        return BAD("%s: x and y differ in type", api);
    return emu_dnn_type_ok(xDesc, api);
}

cudnnStatus_t
cudnnPoolingForward(cudnnHandle_t handle,
                    const cudnnPoolingDescriptor_t poolingDesc,
                    const void *alpha, const cudnnTensorDescriptor_t xDesc,
                    const void *x, const void *beta,
                    const cudnnTensorDescriptor_t yDesc, void *y)
{
    const char *api = "cudnnPoolingForward";
    struct emu_dnn_config cfg;
    struct ew_job *job = NULL;
    cudnnStatus_t st = pool_check(poolingDesc, xDesc, yDesc, api);

    if (st == CUDNN_STATUS_SUCCESS && (x == NULL || y == NULL))
        st = emu_dnn_error(CUDNN_STATUS_BAD_PARAM_NULL_POINTER,
                           "%s: NULL data", api);
    if (st == CUDNN_STATUS_SUCCESS)
        st = ew_begin(handle, alpha, beta, yDesc->type, &cfg, &job);
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    job->pool = *poolingDesc;
    emu_dnn_view_tensor(&job->v[EW_X], xDesc, x);
    emu_dnn_view_tensor(&job->v[EW_Y], yDesc, y);
    return ew_submit(&cfg, api, pool_run, job, EW_Y,
                     (double)pool_window_size(poolingDesc));
}

/* y and dy, x and dx: the same sizes, types and strides (BAD_PARAM). */
cudnnStatus_t
cudnnPoolingBackward(cudnnHandle_t handle,
                     const cudnnPoolingDescriptor_t poolingDesc,
                     const void *alpha, const cudnnTensorDescriptor_t yDesc,
                     const void *y, const cudnnTensorDescriptor_t dyDesc,
                     const void *dy, const cudnnTensorDescriptor_t xDesc,
                     const void *x, const void *beta,
                     const cudnnTensorDescriptor_t dxDesc, void *dx)
{
    struct ew_args in = { "cudnnPoolingBackward", { xDesc, NULL, NULL,
                          dxDesc }, { x, NULL, NULL, dx }, EW_DX, 0,
                          { [EW_DX] = EW_X + 1 }, 0, 0 };
    struct ew_args out = { "cudnnPoolingBackward", { NULL, yDesc, dyDesc,
                           NULL }, { NULL, y, dy, NULL }, EW_Y, 0,
                           { [EW_DY] = EW_Y + 1 }, 0, 0 };
    struct emu_dnn_config cfg;
    struct ew_job *job = NULL;
    cudnnStatus_t st = pool_check(poolingDesc, xDesc, yDesc, in.api);

    if (st == CUDNN_STATUS_SUCCESS)
        st = ew_check(&in);
    if (st == CUDNN_STATUS_SUCCESS)
        st = ew_check(&out);
    if (st == CUDNN_STATUS_SUCCESS)
        st = ew_begin(handle, alpha, beta, dxDesc->type, &cfg, &job);
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    job->pool = *poolingDesc;
    emu_dnn_view_tensor(&job->v[EW_X], xDesc, x);
    emu_dnn_view_tensor(&job->v[EW_Y], yDesc, y);
    emu_dnn_view_tensor(&job->v[EW_DY], dyDesc, dy);
    emu_dnn_view_tensor(&job->v[EW_DX], dxDesc, dx);
    return ew_submit(&cfg, in.api, pool_run, job, EW_Y,
                     (double)pool_window_size(poolingDesc));
}

/* ---- Softmax ------------------------------------------------------------- */

/* Softmax runs over groups of `inner` elements: all of C and the spatial
 * dimensions per image (INSTANCE) or all of C per pixel (CHANNEL).
 * Element e of group g, as a row-major index over N, C, spatial. */
struct sm_shape {
    size_t groups, inner, c, spatial;
    int channel;
};

static size_t
sm_index(const struct sm_shape *s, size_t g, size_t e)
{
    if (!s->channel)
        return g * s->inner + e;
    return (g / s->spatial) * s->c * s->spatial + e * s->spatial +
           g % s->spatial;
}

/* Forward: y = exp(x - m) / sum, m the group's maximum (ACCURATE, LOG) or
 * 0 (FAST); LOG: y = x - m - log(sum). Backward from y and dy:
 * dx = y (dy - sum(dy y)); LOG: dx = dy - exp(y) sum(dy). */
static CUresult
softmax_run(void *arg)
{
    const struct ew_job *j = arg;
    const struct emu_dnn_view *v = j->v;
    int backward = v[EW_DX].ptr != 0, out = backward ? EW_DX : EW_Y;
    int in = backward ? EW_DY : EW_X;
    int is_log = j->sm_algo == CUDNN_SOFTMAX_LOG;
    struct sm_shape s;
    void *at[EW_NVIEWS];
    double *a, *b;

    s.c = (size_t)v[out].dim[1];
    s.spatial = emu_dnn_view_count(&v[out]) / ((size_t)v[out].dim[0] * s.c);
    s.channel = j->sm_mode == CUDNN_SOFTMAX_MODE_CHANNEL;
    s.inner = s.channel ? s.c : s.c * s.spatial;
    s.groups = emu_dnn_view_count(&v[out]) / s.inner;
    if (ew_map(j, at) != 0)
        return ew_unmapped("cudnnSoftmax");
    a = malloc(s.inner * sizeof(double));
    b = malloc(s.inner * sizeof(double));
    if (a == NULL || b == NULL) {
        free(a);
        free(b);
        return emu_op_fail(CUDA_ERROR_OUT_OF_MEMORY, "cudnnSoftmax",
                           "out of host memory");
    }
    for (size_t g = 0; g < s.groups; g++) {
        double m = -INFINITY, sum = 0.0;

        for (size_t e = 0; e < s.inner; e++) {
            size_t lin = sm_index(&s, g, e);
            a[e] = emu_dnn_loadd(at[in], emu_dnn_view_offset(&v[in], lin),
                                 v[in].type);
            if (backward)   /* b: the forward output y */
                b[e] = emu_dnn_loadd(at[EW_Y],
                                     emu_dnn_view_offset(&v[EW_Y], lin),
                                     v[EW_Y].type);
            m = a[e] > m ? a[e] : m;
        }
        if (j->sm_algo == CUDNN_SOFTMAX_FAST || backward)
            m = 0.0;
        for (size_t e = 0; e < s.inner; e++) {
            if (!backward) {
                b[e] = exp(a[e] - m);
                sum += b[e];
            } else {
                sum += is_log ? a[e] : a[e] * b[e];
            }
        }
        for (size_t e = 0; e < s.inner; e++) {
            size_t lin = sm_index(&s, g, e);
            double r;

            if (!backward)
                r = is_log ? (a[e] - m) - log(sum) : b[e] / sum;
            else
                r = is_log ? a[e] - exp(b[e]) * sum : b[e] * (a[e] - sum);
            emu_dnn_blendd(at[out], emu_dnn_view_offset(&v[out], lin),
                           v[out].type, j->alpha, j->beta, r);
        }
    }
    free(a);
    free(b);
    return CUDA_SUCCESS;
}

static cudnnStatus_t
softmax_submit(cudnnHandle_t handle, cudnnSoftmaxAlgorithm_t algo,
               cudnnSoftmaxMode_t mode, const struct ew_args *a,
               const void *alpha, const void *beta)
{
    struct emu_dnn_config cfg;
    struct ew_job *job = NULL;
    cudnnStatus_t st;

    if ((int)algo < CUDNN_SOFTMAX_FAST || (int)algo > CUDNN_SOFTMAX_LOG ||
        (mode != CUDNN_SOFTMAX_MODE_INSTANCE &&
         mode != CUDNN_SOFTMAX_MODE_CHANNEL) ||
        !emu_dnn_tensor_ok(a->desc[a->out]))
        return BAD("%s: invalid algorithm, mode or descriptor", a->api);
    st = ew_prepare(handle, a, alpha, beta, &cfg, &job);
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    job->sm_algo = algo;
    job->sm_mode = mode;
    return ew_submit(&cfg, a->api, softmax_run, job, a->out, 5.0);
}

cudnnStatus_t
cudnnSoftmaxForward(cudnnHandle_t handle, cudnnSoftmaxAlgorithm_t algo,
                    cudnnSoftmaxMode_t mode, const void *alpha,
                    const cudnnTensorDescriptor_t xDesc, const void *x,
                    const void *beta, const cudnnTensorDescriptor_t yDesc,
                    void *y)
{
    struct ew_args a = { "cudnnSoftmaxForward", { xDesc, yDesc }, { x, y },
                         EW_Y, 0, { 0 }, 0, 0 };

    return softmax_submit(handle, algo, mode, &a, alpha, beta);
}

/* y and dy must have the same strides (BAD_PARAM). */
cudnnStatus_t
cudnnSoftmaxBackward(cudnnHandle_t handle, cudnnSoftmaxAlgorithm_t algo,
                     cudnnSoftmaxMode_t mode, const void *alpha,
                     const cudnnTensorDescriptor_t yDesc, const void *y,
                     const cudnnTensorDescriptor_t dyDesc, const void *dy,
                     const void *beta, const cudnnTensorDescriptor_t dxDesc,
                     void *dx)
{
    struct ew_args a = { "cudnnSoftmaxBackward",
                         { NULL, yDesc, dyDesc, dxDesc }, { NULL, y, dy, dx },
                         EW_DX, 0, { [EW_DY] = EW_Y + 1 }, 0, 0 };

    return softmax_submit(handle, algo, mode, &a, alpha, beta);
}
