/* The emulated cuDNN element-wise and reduction operations a small CNN
 * trainer uses (cudnnAddTensor, cudnnSetTensor, cudnnScaleTensor,
 * activations, pooling, softmax), and the device-tensor helpers the
 * convolutions share. FLOAT, HALF and BFLOAT16 tensors, computed in FP32;
 * each call is checked at call time and queued on the handle's stream. */
#include <cudnn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cudnn_emu.h"
#include "emu.h"

#define BAD(...) emu_dnn_error(CUDNN_STATUS_BAD_PARAM, __VA_ARGS__)

/* ---- Device tensors ------------------------------------------------------ */

/* Whether v's strides are those of a packed row-major tensor of its
 * dimensions (size-1 dimensions may have any stride). */
static int
view_packed(const struct emu_dnn_view *v)
{
    int64_t s = 1;

    for (int i = v->nb_dims - 1; i >= 0; i--) {
        if (v->dim[i] != 1 && v->stride[i] != s)
            return 0;
        s *= v->dim[i];
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

void *
emu_dnn_view_at(const struct emu_dnn_view *v)
{
    size_t span = 1;

    for (int i = 0; i < v->nb_dims; i++)
        span += (size_t)(v->dim[i] - 1) * (size_t)v->stride[i];
    return emu_dev_at(v->ptr, span * emu_dnn_type_size(v->type));
}

double
emu_dnn_view_bytes(const struct emu_dnn_view *v)
{
    return (double)emu_dnn_view_count(v) *
           (double)emu_dnn_type_size(v->type);
}

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

/* ---- Shared checks and submission ---------------------------------------- */

/* The element types these operations compute on. */
static cudnnStatus_t
ew_type_ok(cudnnTensorDescriptor_t t, const char *api)
{
    if (t->type == CUDNN_DATA_FLOAT || t->type == CUDNN_DATA_HALF ||
        t->type == CUDNN_DATA_BFLOAT16)
        return CUDNN_STATUS_SUCCESS;
    return emu_dnn_error(CUDNN_STATUS_NOT_SUPPORTED,
                         "%s: data type %d not supported", api, (int)t->type);
}

static int
same_dims(cudnnTensorDescriptor_t a, cudnnTensorDescriptor_t b)
{
    return a->nb_dims == b->nb_dims &&
           memcmp(a->dim, b->dim, sizeof(a->dim)) == 0;
}

static int
same_strides(cudnnTensorDescriptor_t a, cudnnTensorDescriptor_t b)
{
    return memcmp(a->stride, b->stride, sizeof(a->stride)) == 0;
}

/* The element-wise jobs: up to four tensors, scalars and parameters. */
enum { EW_X, EW_Y, EW_DY, EW_DX, EW_NVIEWS };

struct ew_job {
    struct emu_dnn_view v[EW_NVIEWS];
    float alpha, beta;
    float value;                        /* cudnnSetTensor */
    int scale;                          /* cudnnScaleTensor */
    struct cudnnActivationStruct act;
    struct cudnnPoolingStruct pool;
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

/* Counts the call for fault injection and queues `run` on the handle's
 * stream; the job is freed in every case. */
static cudnnStatus_t
ew_submit(const struct emu_dnn_config *cfg, const char *api,
          CUresult (*run)(void *), struct ew_job *job, double flops_per_elem)
{
    struct emu_op op;
    cudnnStatus_t st = emu_dnn_fault(api);
    double bytes = 0.0, elems = 0.0;

    if (st != CUDNN_STATUS_SUCCESS) {
        free(job);
        return st;
    }
    for (int i = 0; i < EW_NVIEWS; i++) {
        if (job->v[i].ptr == 0)
            continue;
        bytes += emu_dnn_view_bytes(&job->v[i]);
        elems = (double)emu_dnn_view_count(&job->v[i]);
    }
    op.name = api;
    op.run = run;
    op.release = free;
    op.arg = job;
    op.model_ns = emu_model_ns(flops_per_elem * elems, EMU_PREC_FP32, bytes);
    return emu_dnn_enqueue(cfg, &op);
}

/* Reads the handle, the scalars (host floats) and allocates the job. */
static cudnnStatus_t
ew_begin(cudnnHandle_t handle, const void *alpha, const void *beta,
         struct emu_dnn_config *cfg, struct ew_job **job)
{
    cudnnStatus_t st = emu_dnn_config(handle, cfg);

    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    if (alpha == NULL || beta == NULL)
        return BAD("alpha or beta is NULL");
    *job = calloc(1, sizeof(**job));
    if (*job == NULL)
        return emu_dnn_error(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED,
                             "out of host memory");
    memcpy(&(*job)->alpha, alpha, sizeof(float));
    memcpy(&(*job)->beta, beta, sizeof(float));
    return CUDNN_STATUS_SUCCESS;
}

/* ---- Add, set, scale ----------------------------------------------------- */

static CUresult
add_run(void *arg)
{
    const struct ew_job *j = arg;
    const struct emu_dnn_view *a = &j->v[EW_X], *c = &j->v[EW_Y];
    size_t n = emu_dnn_view_count(c);
    void *at[EW_NVIEWS];

    int coord[CUDNN_DIM_MAX] = { 0 };
    int64_t astep[CUDNN_DIM_MAX], ai = 0, ci = 0;

    if (ew_map(j, at) != 0)
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    /* A broadcasts along every dimension where it has size 1. */
    for (int d = 0; d < c->nb_dims; d++)
        astep[d] = a->dim[d] != 1 ? a->stride[d] : 0;
    /* C's elements in row-major order, both offsets carried from one to
     * the next (no divisions). */
    for (size_t lin = 0; lin < n; lin++) {
        emu_dnn_blend(at[EW_Y], ci, c->type, j->alpha, j->beta,
                      emu_dnn_load(at[EW_X], ai, a->type));
        for (int d = c->nb_dims - 1; d >= 0; d--) {
            ci += c->stride[d];
            ai += astep[d];
            if (++coord[d] < c->dim[d])
                break;
            ci -= (int64_t)c->dim[d] * c->stride[d];
            ai -= (int64_t)c->dim[d] * astep[d];
            coord[d] = 0;
        }
    }
    return CUDA_SUCCESS;
}

cudnnStatus_t
cudnnAddTensor(cudnnHandle_t handle, const void *alpha,
               const cudnnTensorDescriptor_t aDesc, const void *A,
               const void *beta, const cudnnTensorDescriptor_t cDesc, void *C)
{
    struct emu_dnn_config cfg;
    struct ew_job *job = NULL;
    cudnnStatus_t st;

    if (!emu_dnn_tensor_ok(aDesc) || !emu_dnn_tensor_ok(cDesc) || A == NULL ||
        C == NULL)
        st = BAD("cudnnAddTensor: invalid descriptor or NULL data");
    else if (aDesc->type != cDesc->type || aDesc->nb_dims != cDesc->nb_dims)
        st = BAD("cudnnAddTensor: A and C differ in type or rank");
    else
        st = ew_type_ok(cDesc, "cudnnAddTensor");
    for (int d = 0; st == CUDNN_STATUS_SUCCESS && d < cDesc->nb_dims; d++) {
        if (aDesc->dim[d] != 1 && aDesc->dim[d] != cDesc->dim[d])
            st = BAD("cudnnAddTensor: A dimension %d is %d, C has %d", d,
                     aDesc->dim[d], cDesc->dim[d]);
    }
    if (st == CUDNN_STATUS_SUCCESS)
        st = ew_begin(handle, alpha, beta, &cfg, &job);
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    emu_dnn_view_tensor(&job->v[EW_X], aDesc, A);
    emu_dnn_view_tensor(&job->v[EW_Y], cDesc, C);
    return ew_submit(&cfg, "cudnnAddTensor", add_run, job, 2.0);
}

static CUresult
fill_run(void *arg)
{
    const struct ew_job *j = arg;
    const struct emu_dnn_view *y = &j->v[EW_Y];
    size_t n = emu_dnn_view_count(y);
    void *at[EW_NVIEWS];

    if (ew_map(j, at) != 0)
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    for (size_t lin = 0; lin < n; lin++) {
        int64_t off = emu_dnn_view_offset(y, lin);
        float v = j->value;

        if (j->scale)
            v = j->alpha * emu_dnn_load(at[EW_Y], off, y->type);
        emu_dnn_store(at[EW_Y], off, y->type, v);
    }
    return CUDA_SUCCESS;
}

/* cudnnSetTensor (value of y's own type) and cudnnScaleTensor (alpha, a
 * float scaling parameter) are one job: y = value, or y = alpha * y. */
static cudnnStatus_t
fill_submit(cudnnHandle_t handle, const char *api,
            const cudnnTensorDescriptor_t yDesc, void *y, const void *scalar,
            int scale)
{
    static const float unused = 0.0f;
    struct emu_dnn_config cfg;
    struct ew_job *job = NULL;
    cudnnStatus_t st;

    if (!emu_dnn_tensor_ok(yDesc) || y == NULL || scalar == NULL)
        return BAD("%s: invalid descriptor or NULL pointer", api);
    st = ew_type_ok(yDesc, api);
    if (st == CUDNN_STATUS_SUCCESS)
        st = ew_begin(handle, scale ? scalar : &unused, &unused, &cfg, &job);
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    job->scale = scale;
    if (!scale)
        job->value = emu_dnn_load(scalar, 0, yDesc->type);
    emu_dnn_view_tensor(&job->v[EW_Y], yDesc, y);
    return ew_submit(&cfg, api, fill_run, job, scale ? 1.0 : 0.0);
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

static float
sigmoid(double x)
{
    return (float)(1.0 / (1.0 + exp(-x)));
}

static float
act_forward(const struct cudnnActivationStruct *a, float x)
{
    double coef = a->coef;

    if (isnan(x))
        return a->nan_opt == CUDNN_PROPAGATE_NAN ||
                       a->mode == CUDNN_ACTIVATION_SIGMOID ||
                       a->mode == CUDNN_ACTIVATION_TANH
                   ? x
                   : 0.0f;
    switch (a->mode) {
    case CUDNN_ACTIVATION_SIGMOID:
        return sigmoid(x);
    case CUDNN_ACTIVATION_RELU:
        return x > 0.0f ? x : 0.0f;
    case CUDNN_ACTIVATION_TANH:
        return tanhf(x);
    case CUDNN_ACTIVATION_CLIPPED_RELU:
        return x <= 0.0f ? 0.0f : (x < coef ? x : (float)coef);
    case CUDNN_ACTIVATION_ELU:
        return x > 0.0f ? x : (float)(coef * expm1((double)x));
    case CUDNN_ACTIVATION_SWISH:
        return x * sigmoid(a->swish_beta * x);
    default:
        return x;
    }
}

/* d f / d x times dy, from the forward input x and output y. */
static float
act_backward(const struct cudnnActivationStruct *a, float x, float y,
             float dy)
{
    double s;

    switch (a->mode) {
    case CUDNN_ACTIVATION_SIGMOID:
        return dy * y * (1.0f - y);
    case CUDNN_ACTIVATION_RELU:
        return x > 0.0f ? dy : 0.0f;
    case CUDNN_ACTIVATION_TANH:
        return dy * (1.0f - y * y);
    case CUDNN_ACTIVATION_CLIPPED_RELU:
        return x > 0.0f && x < a->coef ? dy : 0.0f;
    case CUDNN_ACTIVATION_ELU:
        return x > 0.0f ? dy : dy * (y + (float)a->coef);
    case CUDNN_ACTIVATION_SWISH:
        s = sigmoid(a->swish_beta * x);
        return dy * (float)(s + a->swish_beta * x * s * (1.0 - s));
    default:
        return dy;
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
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    for (size_t lin = 0; lin < n; lin++) {
        float v = emu_dnn_load(at[EW_X], emu_dnn_view_offset(x, lin),
                               x->type);
        emu_dnn_blend(at[EW_Y], emu_dnn_view_offset(y, lin), y->type,
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
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    for (size_t lin = 0; lin < n; lin++) {
        float val[EW_DX];

        for (int i = EW_X; i < EW_DX; i++)
            val[i] = emu_dnn_load(at[i], emu_dnn_view_offset(&v[i], lin),
                                  v[i].type);
        emu_dnn_blend(at[EW_DX], emu_dnn_view_offset(&v[EW_DX], lin),
                      v[EW_DX].type, j->alpha, j->beta,
                      act_backward(&j->act, val[EW_X], val[EW_Y],
                                   val[EW_DY]));
    }
    return CUDA_SUCCESS;
}

/* The descriptors of an element-wise call, in job order (NULL where the
 * call has no such tensor), with their data pointers. */
struct ew_args {
    const char *api;
    cudnnTensorDescriptor_t desc[EW_NVIEWS];
    const void *data[EW_NVIEWS];
    int out;            /* the index written */
};

/* Every tensor given must be set, non-NULL, of one type and of the same
 * sizes; an in-place call needs the same strides too. */
static cudnnStatus_t
ew_check(const struct ew_args *a)
{
    cudnnTensorDescriptor_t out = a->desc[a->out];

    for (int i = 0; i < EW_NVIEWS; i++) {
        cudnnTensorDescriptor_t t = a->desc[i];

        if (a->data[i] == NULL && t == NULL)
            continue;
        if (!emu_dnn_tensor_ok(t) || a->data[i] == NULL)
            return BAD("%s: invalid descriptor or NULL data", a->api);
        if (t->type != out->type || !same_dims(t, out))
            return BAD("%s: tensors differ in type or sizes", a->api);
        if (i != a->out && a->data[i] == a->data[a->out] &&
            !same_strides(t, out))
            return BAD("%s: in-place call with different strides", a->api);
    }
    return ew_type_ok(out, a->api);
}

static cudnnStatus_t
ew_prepare(cudnnHandle_t handle, const struct ew_args *a, const void *alpha,
           const void *beta, struct emu_dnn_config *cfg, struct ew_job **job)
{
    cudnnStatus_t st = ew_check(a);

    if (st == CUDNN_STATUS_SUCCESS)
        st = ew_begin(handle, alpha, beta, cfg, job);
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    for (int i = 0; i < EW_NVIEWS; i++) {
        if (a->desc[i] != NULL)
            emu_dnn_view_tensor(&(*job)->v[i], a->desc[i], a->data[i]);
    }
    return CUDNN_STATUS_SUCCESS;
}

static int
act_ok(cudnnActivationDescriptor_t a)
{
    return a != NULL && a->magic == EMU_DNN_MAGIC_ACT;
}

cudnnStatus_t
cudnnActivationForward(cudnnHandle_t handle,
                       cudnnActivationDescriptor_t activationDesc,
                       const void *alpha, const cudnnTensorDescriptor_t xDesc,
                       const void *x, const void *beta,
                       const cudnnTensorDescriptor_t yDesc, void *y)
{
    struct ew_args a = { "cudnnActivationForward", { xDesc, yDesc },
                         { x, y }, EW_Y };
    struct emu_dnn_config cfg;
    struct ew_job *job = NULL;
    cudnnStatus_t st;

    if (!act_ok(activationDesc) || !emu_dnn_tensor_ok(yDesc))
        return BAD("cudnnActivationForward: invalid descriptor");
    st = ew_prepare(handle, &a, alpha, beta, &cfg, &job);
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    job->act = *activationDesc;
    return ew_submit(&cfg, a.api, act_fwd_run, job, 4.0);
}

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
    struct ew_args a = { "cudnnActivationBackward",
                         { xDesc, yDesc, dyDesc, dxDesc }, { x, y, dy, dx },
                         EW_DX };
    struct emu_dnn_config cfg;
    struct ew_job *job = NULL;
    cudnnStatus_t st;

    if (!act_ok(activationDesc) || !emu_dnn_tensor_ok(dxDesc))
        return BAD("cudnnActivationBackward: invalid descriptor");
    st = ew_prepare(handle, &a, alpha, beta, &cfg, &job);
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    job->act = *activationDesc;
    return ew_submit(&cfg, a.api, act_bwd_run, job, 4.0);
}

/* ---- Pooling ------------------------------------------------------------- */

/* Walks pooling windows: for output element `lin` of y (row-major over
 * N, C, spatial) calls visit() for every window position inside x, in
 * row-major window order, and returns how many positions the window has
 * in all (padding included). */
struct pool_walk {
    const struct cudnnPoolingStruct *p;
    const struct emu_dnn_view *x, *y;
};

static int
pool_window(const struct pool_walk *w, size_t lin, int64_t *xlin_out,
            int *inside_out, int max_out)
{
    const struct emu_dnn_view *x = w->x, *y = w->y;
    int ns = w->p->nb_spatial, o[EMU_DNN_MAX_SPATIAL], k[EMU_DNN_MAX_SPATIAL];
    size_t rest = lin, plane;
    int total = 1, inside = 0;

    for (int d = ns - 1; d >= 0; d--) {
        o[d] = (int)(rest % (size_t)y->dim[2 + d]);
        rest /= (size_t)y->dim[2 + d];
        total *= w->p->window[d];
        k[d] = 0;
    }
    plane = rest;       /* n * C + c: the same in x and y */
    for (int pos = 0; pos < total; pos++) {
        int64_t xl = (int64_t)plane;
        int in = 1;

        for (int d = 0; d < ns; d++) {
            int i = o[d] * w->p->stride[d] - w->p->pad[d] + k[d];
            in = in && i >= 0 && i < x->dim[2 + d];
            xl = xl * x->dim[2 + d] + i;
        }
        if (in && inside < max_out)
            xlin_out[inside++] = xl;
        for (int d = ns - 1; d >= 0; d--) {
            if (++k[d] < w->p->window[d])
                break;
            k[d] = 0;
        }
    }
    *inside_out = inside;
    return total;
}

/* The pooled value of one window and, for MAX, which of `xlin` won. */
static float
pool_value(const struct cudnnPoolingStruct *p, const struct emu_dnn_view *x,
           const void *xa, const int64_t *xlin, int inside, int total,
           int *argmax)
{
    int is_max = p->mode == CUDNN_POOLING_MAX ||
                 p->mode == CUDNN_POOLING_MAX_DETERMINISTIC;
    float acc = is_max ? -INFINITY : 0.0f;

    *argmax = -1;
    for (int i = 0; i < inside; i++) {
        float v = emu_dnn_load(xa, emu_dnn_view_offset(x, (size_t)xlin[i]),
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
    return acc / (float)(p->mode == CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                             ? total
                             : (inside > 0 ? inside : 1));
}

static int
pool_window_size(const struct cudnnPoolingStruct *p)
{
    int total = 1;

    for (int d = 0; d < p->nb_spatial; d++)
        total *= p->window[d];
    return total;
}

static CUresult
pool_run(void *arg)
{
    const struct ew_job *j = arg;
    const struct emu_dnn_view *x = &j->v[EW_X], *y = &j->v[EW_Y];
    struct pool_walk w = { &j->pool, x, y };
    int cap = pool_window_size(&j->pool), backward = j->v[EW_DX].ptr != 0;
    size_t n = emu_dnn_view_count(y), nx = emu_dnn_view_count(x);
    int64_t *xlin = malloc((size_t)cap * sizeof(*xlin));
    float *grad = backward ? calloc(nx, sizeof(float)) : NULL;
    void *at[EW_NVIEWS];
    CUresult res = CUDA_SUCCESS;

    if (xlin == NULL || (backward && grad == NULL)) {
        res = CUDA_ERROR_OUT_OF_MEMORY;
        goto out;
    }
    if (ew_map(j, at) != 0) {
        res = CUDA_ERROR_ILLEGAL_ADDRESS;
        goto out;
    }
    for (size_t lin = 0; lin < n; lin++) {
        int inside, total = pool_window(&w, lin, xlin, &inside, cap), arg_i;
        float v = pool_value(&j->pool, x, at[EW_X], xlin, inside, total,
                             &arg_i);
        float dy;

        if (!backward) {
            emu_dnn_blend(at[EW_Y], emu_dnn_view_offset(y, lin), y->type,
                          j->alpha, j->beta, v);
            continue;
        }
        dy = emu_dnn_load(at[EW_DY], emu_dnn_view_offset(&j->v[EW_DY], lin),
                          j->v[EW_DY].type);
        if (j->pool.mode == CUDNN_POOLING_MAX ||
            j->pool.mode == CUDNN_POOLING_MAX_DETERMINISTIC) {
            if (arg_i >= 0)
                grad[xlin[arg_i]] += dy;
            continue;
        }
        for (int i = 0; i < inside; i++) {
            int count = j->pool.mode ==
                                CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                            ? total
                            : inside;
            grad[xlin[i]] += dy / (float)count;
        }
    }
    for (size_t lin = 0; backward && lin < nx; lin++)
        emu_dnn_blend(at[EW_DX], emu_dnn_view_offset(&j->v[EW_DX], lin),
                      j->v[EW_DX].type, j->alpha, j->beta, grad[lin]);
out:
    free(xlin);
    free(grad);
    return res;
}

/* x and y (and dy, dx) against the pooling descriptor. */
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
    return ew_type_ok(xDesc, api);
}

cudnnStatus_t
cudnnPoolingForward(cudnnHandle_t handle,
                    const cudnnPoolingDescriptor_t poolingDesc,
                    const void *alpha, const cudnnTensorDescriptor_t xDesc,
                    const void *x, const void *beta,
                    const cudnnTensorDescriptor_t yDesc, void *y)
{
    struct emu_dnn_config cfg;
    struct ew_job *job = NULL;
    cudnnStatus_t st = pool_check(poolingDesc, xDesc, yDesc,
                                  "cudnnPoolingForward");

    if (st == CUDNN_STATUS_SUCCESS && (x == NULL || y == NULL))
        st = BAD("cudnnPoolingForward: NULL data");
    if (st == CUDNN_STATUS_SUCCESS)
        st = ew_begin(handle, alpha, beta, &cfg, &job);
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    job->pool = *poolingDesc;
    emu_dnn_view_tensor(&job->v[EW_X], xDesc, x);
    emu_dnn_view_tensor(&job->v[EW_Y], yDesc, y);
    return ew_submit(&cfg, "cudnnPoolingForward", pool_run, job,
                     (double)pool_window_size(poolingDesc));
}

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
                          dxDesc }, { x, NULL, NULL, dx }, EW_DX };
    struct ew_args out = { "cudnnPoolingBackward", { NULL, yDesc, dyDesc,
                           NULL }, { NULL, y, dy, NULL }, EW_Y };
    struct emu_dnn_config cfg;
    struct ew_job *job = NULL;
    cudnnStatus_t st = pool_check(poolingDesc, xDesc, yDesc, in.api);

    if (st == CUDNN_STATUS_SUCCESS)
        st = ew_check(&in);
    if (st == CUDNN_STATUS_SUCCESS)
        st = ew_check(&out);
    if (st == CUDNN_STATUS_SUCCESS)
        st = ew_begin(handle, alpha, beta, &cfg, &job);
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    job->pool = *poolingDesc;
    emu_dnn_view_tensor(&job->v[EW_X], xDesc, x);
    emu_dnn_view_tensor(&job->v[EW_Y], yDesc, y);
    emu_dnn_view_tensor(&job->v[EW_DY], dyDesc, dy);
    emu_dnn_view_tensor(&job->v[EW_DX], dxDesc, dx);
    return ew_submit(&cfg, in.api, pool_run, job,
                     (double)pool_window_size(poolingDesc));
}

/* ---- Softmax ------------------------------------------------------------- */

/* Softmax runs over groups of `inner` elements: all of C, H, W per image
 * (INSTANCE) or all of C per pixel (CHANNEL). Element e of group g, as a
 * row-major index over N, C, spatial. */
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
    float *a, *b;

    s.c = (size_t)v[out].dim[1];
    s.spatial = emu_dnn_view_count(&v[out]) / ((size_t)v[out].dim[0] * s.c);
    s.channel = j->sm_mode == CUDNN_SOFTMAX_MODE_CHANNEL;
    s.inner = s.channel ? s.c : s.c * s.spatial;
    s.groups = emu_dnn_view_count(&v[out]) / s.inner;
    if (ew_map(j, at) != 0)
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    a = malloc(s.inner * sizeof(float));
    b = malloc(s.inner * sizeof(float));
    if (a == NULL || b == NULL) {
        free(a);
        free(b);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    for (size_t g = 0; g < s.groups; g++) {
        float m = -INFINITY, sum = 0.0f;

        for (size_t e = 0; e < s.inner; e++) {
            size_t lin = sm_index(&s, g, e);
            a[e] = emu_dnn_load(at[in], emu_dnn_view_offset(&v[in], lin),
                                v[in].type);
            if (backward)   /* b: the forward output y */
                b[e] = emu_dnn_load(at[EW_Y],
                                    emu_dnn_view_offset(&v[EW_Y], lin),
                                    v[EW_Y].type);
            m = a[e] > m ? a[e] : m;
        }
        if (j->sm_algo == CUDNN_SOFTMAX_FAST || backward)
            m = 0.0f;
        for (size_t e = 0; e < s.inner; e++) {
            if (!backward) {
                b[e] = expf(a[e] - m);
                sum += b[e];
            } else {
                sum += is_log ? a[e] : a[e] * b[e];
            }
        }
        for (size_t e = 0; e < s.inner; e++) {
            float r;
            if (!backward)
                r = is_log ? (a[e] - m) - logf(sum) : b[e] / sum;
            else
                r = is_log ? a[e] - expf(b[e]) * sum : b[e] * (a[e] - sum);
            size_t lin = sm_index(&s, g, e);
            emu_dnn_blend(at[out], emu_dnn_view_offset(&v[out], lin),
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
    return ew_submit(&cfg, a->api, softmax_run, job, 5.0);
}

cudnnStatus_t
cudnnSoftmaxForward(cudnnHandle_t handle, cudnnSoftmaxAlgorithm_t algo,
                    cudnnSoftmaxMode_t mode, const void *alpha,
                    const cudnnTensorDescriptor_t xDesc, const void *x,
                    const void *beta, const cudnnTensorDescriptor_t yDesc,
                    void *y)
{
    struct ew_args a = { "cudnnSoftmaxForward", { xDesc, yDesc }, { x, y },
                         EW_Y };

    return softmax_submit(handle, algo, mode, &a, alpha, beta);
}

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
                         EW_DX };

    return softmax_submit(handle, algo, mode, &a, alpha, beta);
}
