/* The emulated cuDNN backend (graph) API: descriptors built with
 * cudnnBackendCreateDescriptor, SetAttribute and Finalize, read back with
 * GetAttribute, for operation graphs that hold one convolution, or a
 * forward convolution followed by pointwise operations (bias, activation);
 * engine heuristics, engines, engine configurations, execution plans,
 * variant packs and cudnnBackendExecute over the legacy convolution core
 * (cudnn_conv.c). */
#include <cudnn.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cudnn_emu.h"
#include "emu.h"

#define EMU_BK_MAGIC 0x444e4e42u    /* "DNNB" while the descriptor lives */
#define BK_MAX_OPS 16
#define BK_MAX_KNOBS 8
#define BK_ENGINE_COUNT 8
/* The first of the runtime-fusion engines (the last two indices). */
#define BK_FUSION_ENGINE 6

#define ERR(st, ...) emu_dnn_error((st), __VA_ARGS__)

/*
 * A descriptor is a handle on a body. A body is written only while its
 * descriptor is not finalized (under the descriptor's lock) and never
 * after: finalized bodies are shared, reference-counted, between the
 * descriptors that name them (an operation holds its tensors' bodies, an
 * execution plan its engine configuration's, a descriptor filled by
 * GetAttribute the body it was given), so a descriptor may be destroyed
 * as soon as it has been set, and threads read shared bodies freely.
 */
struct bk_body;

struct bk_tensor {
    int set_type, set_dims, set_strides, set_uid, set_align;
    cudnnDataType_t type;
    int nb_dims, nb_strides;
    int64_t dim[CUDNN_DIM_MAX], stride[CUDNN_DIM_MAX];
    int64_t uid, align;
    int is_virtual, by_value;
    int64_t vec_count, vec_dim;
    cudnnBackendTensorReordering_t reorder;
};

struct bk_conv {
    int set_comp, set_mode, set_nsp;
    cudnnDataType_t comp;
    cudnnConvolutionMode_t mode;
    int64_t nsp;
    int n_dil, n_stride, n_pre, n_post;
    int64_t dil[EMU_DNN_MAX_SPATIAL], stride[EMU_DNN_MAX_SPATIAL];
    int64_t pre[EMU_DNN_MAX_SPATIAL], post[EMU_DNN_MAX_SPATIAL];
};

/* A convolution operation: x, w, y in the forward roles (dx, w, dy for
 * backward data; x, dw, dy for backward filter). */
struct bk_conv_op {
    double alpha, beta;
    /* The attribute type each was set as (0: not set): cuDNN answers
     * a read only as that type (docs/gpu-results.md). */
    cudnnBackendAttributeType_t alpha_as, beta_as;
    struct bk_body *conv, *x, *w, *y;
};

/* A pointwise descriptor: the mode and its parameters. */
struct bk_pw {
    int set_mode, set_prec;
    cudnnPointwiseMode_t mode;
    cudnnDataType_t prec;
    cudnnNanPropagation_t nan;
    double lower_clip, upper_clip, lower_slope;
    double elu_alpha, softplus_beta, swish_beta;
    int64_t axis;
};

/* A pointwise operation: y = op(alpha1 * x[, alpha2 * b]). */
struct bk_pw_op {
    double alpha1, alpha2;
    struct bk_body *pw, *x, *b, *y;
};

/* The virtual tensors of a fused graph: each has a part of the plan's
 * workspace, after the convolution's own. */
#define BK_MAX_VIRTUAL (2 * BK_MAX_OPS)

struct bk_graph {
    int nops, set_handle, dynamic;
    struct bk_body *ops[BK_MAX_OPS];
    cudnnHandle_t handle;
    /* Finalized: the convolution of a one-convolution graph, or why
     * there is none (the engines' answer). */
    cudnnStatus_t conv_status;
    struct emu_dnn_conv_spec spec;
    double alpha, beta;
    /* A fused graph: its convolution (ops[conv_at]), then the pointwise
     * operations in an order that runs each after its inputs, and the
     * virtual tensors' parts (bytes from the start of theirs). */
    int fused, conv_at, npw;
    int pw_order[BK_MAX_OPS];
    int nvirtual;
    const struct bk_body *virtual_tensor[BK_MAX_VIRTUAL];
    size_t virtual_at[BK_MAX_VIRTUAL], virtual_bytes;
    double pw_ns;           /* the pointwise operations' modelled time */
};

struct bk_engine {
    int set_index;
    int64_t index, sm_target;
    struct bk_body *graph;
};

struct bk_knob {            /* a knob choice, or a knob's info */
    int set_type, set_value;
    cudnnBackendKnobType_t type;
    int64_t value, min, max, stride;
};

struct bk_cfg {
    int nknobs;
    struct bk_body *engine;
    struct bk_body *knobs[BK_MAX_KNOBS];
    size_t workspace;       /* finalized */
};

struct bk_heur {
    int set_mode, nresults;
    cudnnBackendHeurMode_t mode;
    int64_t sm_target;
    struct bk_body *graph;
    struct bk_body *results[BK_ENGINE_COUNT];
};

struct bk_plan {
    int set_handle;
    cudnnHandle_t handle;
    struct bk_body *cfg;
    size_t workspace;       /* finalized: */
    size_t conv_workspace;  /* the convolution's part (a fused graph's
                               virtual tensors follow it) */
    struct emu_dnn_conv_spec spec;
    double alpha, beta;
};

struct bk_pack {
    int64_t n_uids, n_ptrs, n_inter;
    int64_t *uids;
    void **ptrs, **inter;
    void *workspace;
};

struct bk_body {
    atomic_int refs;
    cudnnBackendDescriptorType_t type;
    union {
        struct bk_tensor tensor;
        struct bk_conv conv;
        struct bk_conv_op op;
        struct bk_pw pw;
        struct bk_pw_op pw_op;
        struct bk_graph graph;
        struct bk_engine engine;
        struct bk_knob knob;
        struct bk_cfg cfg;
        struct bk_heur heur;
        struct bk_plan plan;
        struct bk_pack pack;
    } u;
};

struct bk_desc {
    uint32_t magic;
    pthread_mutex_t lock;
    cudnnBackendDescriptorType_t type;
    int finalized;
    struct bk_body *body;
};

/* ---- Bodies --------------------------------------------------------------- */

static int
is_conv_op(cudnnBackendDescriptorType_t t)
{
    return t == CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR ||
           t == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR ||
           t == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR;
}

/* An operation a graph may hold: a convolution or a pointwise one. */
static int
is_graph_op(cudnnBackendDescriptorType_t t)
{
    return is_conv_op(t) || t == CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR;
}

/* The descriptor types the emulator models; Create refuses the others. */
static int
type_modelled(cudnnBackendDescriptorType_t t)
{
    switch (t) {
    case CUDNN_BACKEND_POINTWISE_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
    case CUDNN_BACKEND_TENSOR_DESCRIPTOR:
    case CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR:
    case CUDNN_BACKEND_ENGINE_DESCRIPTOR:
    case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR:
    case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR:
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR:
    case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR:
    case CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR:
    case CUDNN_BACKEND_KNOB_INFO_DESCRIPTOR:
        return 1;
    default:
        return is_conv_op(t);
    }
}

static struct bk_body *
body_new(cudnnBackendDescriptorType_t type)
{
    struct bk_body *b = calloc(1, sizeof(*b));

    if (b == NULL)
        return NULL;
    atomic_init(&b->refs, 1);
    b->type = type;
    switch (type) {
    case CUDNN_BACKEND_TENSOR_DESCRIPTOR:
        b->u.tensor.vec_count = 1;
        b->u.tensor.vec_dim = -1;
        break;
    case CUDNN_BACKEND_POINTWISE_DESCRIPTOR:
        /* The documented defaults: no lower clip (0), the compute type's
         * largest value as the upper clip, slope 0, ELU alpha, softplus
         * and swish beta 1, NaN not propagated. */
        b->u.pw.nan = CUDNN_NOT_PROPAGATE_NAN;
        b->u.pw.upper_clip = FLT_MAX;
        b->u.pw.elu_alpha = 1.0;
        b->u.pw.softplus_beta = 1.0;
        b->u.pw.swish_beta = 1.0;
        b->u.pw.axis = -1;
        break;
    case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
        b->u.pw_op.alpha1 = 1.0;
        b->u.pw_op.alpha2 = 1.0;
        break;
    default:
        if (is_conv_op(type)) {
            b->u.op.alpha = 1.0;
            b->u.op.beta = 0.0;
        }
        break;
    }
    return b;
}

static struct bk_body *
body_ref(struct bk_body *b)
{
    if (b != NULL)
        atomic_fetch_add(&b->refs, 1);
    return b;
}

static void
body_unref(struct bk_body *b)
{
    if (b == NULL || atomic_fetch_sub(&b->refs, 1) != 1)
        return;
    switch (b->type) {
    case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR:
        for (int i = 0; i < b->u.graph.nops; i++)
            body_unref(b->u.graph.ops[i]);
        break;
    case CUDNN_BACKEND_ENGINE_DESCRIPTOR:
        body_unref(b->u.engine.graph);
        break;
    case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR:
        body_unref(b->u.cfg.engine);
        for (int i = 0; i < b->u.cfg.nknobs; i++)
            body_unref(b->u.cfg.knobs[i]);
        break;
    case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR:
        body_unref(b->u.heur.graph);
        for (int i = 0; i < b->u.heur.nresults; i++)
            body_unref(b->u.heur.results[i]);
        break;
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR:
        body_unref(b->u.plan.cfg);
        break;
    case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR:
        free(b->u.pack.uids), free(b->u.pack.ptrs), free(b->u.pack.inter);
        break;
    case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
        body_unref(b->u.pw_op.pw), body_unref(b->u.pw_op.x);
        body_unref(b->u.pw_op.b), body_unref(b->u.pw_op.y);
        break;
    default:
        if (is_conv_op(b->type)) {
            body_unref(b->u.op.conv), body_unref(b->u.op.x);
            body_unref(b->u.op.w), body_unref(b->u.op.y);
        }
        break;
    }
    free(b);
}

static struct bk_desc *
desc_of(cudnnBackendDescriptor_t d)
{
    struct bk_desc *desc = d;

    return desc != NULL && desc->magic == EMU_BK_MAGIC ? desc : NULL;
}

/* A finalized descriptor's body, referenced, when `d` is a live
 * descriptor of type `want`: BAD_PARAM, BAD_PARAM_DESCRIPTOR_TYPE,
 * BAD_PARAM_NOT_FINALIZED otherwise. */
static cudnnStatus_t
finalized_body(cudnnBackendDescriptor_t d, cudnnBackendDescriptorType_t want,
               int any_conv_op, struct bk_body **out, const char *what)
{
    struct bk_desc *desc = desc_of(d);
    cudnnStatus_t st = CUDNN_STATUS_SUCCESS;

    *out = NULL;
    if (desc == NULL)
        return ERR(CUDNN_STATUS_BAD_PARAM, "%s: not a backend descriptor",
                   what);
    pthread_mutex_lock(&desc->lock);
    if (any_conv_op ? !is_conv_op(desc->type) : desc->type != want)
        st = ERR(CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE,
                 "%s: descriptor of type %d", what, (int)desc->type);
    else if (!desc->finalized)
        st = ERR(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED,
                 "%s: descriptor not finalized", what);
    else
        *out = body_ref(desc->body);
    pthread_mutex_unlock(&desc->lock);
    return st;
}

/* ---- Create, destroy ------------------------------------------------------ */

cudnnStatus_t
cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t descriptorType,
                             cudnnBackendDescriptor_t *descriptor)
{
    struct bk_desc *d;

    if (descriptor == NULL)
        return ERR(CUDNN_STATUS_BAD_PARAM_NULL_POINTER,
                   "cudnnBackendCreateDescriptor: NULL descriptor");
    if (!type_modelled(descriptorType))
        return ERR(CUDNN_STATUS_NOT_SUPPORTED,
                   "cudnnBackendCreateDescriptor: descriptor type %d is "
                   "not emulated", (int)descriptorType);
    d = calloc(1, sizeof(*d));
    if (d == NULL || (d->body = body_new(descriptorType)) == NULL) {
        free(d);
        return ERR(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED,
                   "cudnnBackendCreateDescriptor: out of host memory");
    }
    pthread_mutex_init(&d->lock, NULL);
    d->type = descriptorType;
    d->magic = EMU_BK_MAGIC;
    *descriptor = d;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t descriptor)
{
    struct bk_desc *d = desc_of(descriptor);

    if (d == NULL)
        return ERR(CUDNN_STATUS_BAD_PARAM,
                   "cudnnBackendDestroyDescriptor: not a backend "
                   "descriptor");
    d->magic = 0;
    body_unref(d->body);
    pthread_mutex_destroy(&d->lock);
    free(d);
    return CUDNN_STATUS_SUCCESS;
}

/* ---- SetAttribute --------------------------------------------------------- */

/* A call's arguments. Descriptor values are looked up before the
 * descriptor being set is locked (no call holds two locks): their types
 * (-1: not a descriptor) and, when finalized, referenced bodies. */
struct set_args {
    cudnnBackendAttributeType_t type;
    int64_t count;
    const void *array;
    const char *what;
    int nvalues;
    int value_type[BK_MAX_OPS];
    struct bk_body *value[BK_MAX_OPS];
};

static void
set_args_resolve(struct set_args *a)
{
    const cudnnBackendDescriptor_t *in = a->array;

    a->nvalues = 0;
    if (a->type != CUDNN_TYPE_BACKEND_DESCRIPTOR || a->count < 1 ||
        a->count > BK_MAX_OPS)
        return;
    for (int64_t i = 0; i < a->count; i++) {
        struct bk_desc *d = desc_of(in[i]);

        a->value_type[i] = -1;
        a->value[i] = NULL;
        if (d != NULL) {
            pthread_mutex_lock(&d->lock);
            a->value_type[i] = (int)d->type;
            if (d->finalized)
                a->value[i] = body_ref(d->body);
            pthread_mutex_unlock(&d->lock);
        }
    }
    a->nvalues = (int)a->count;
}

static void
set_args_release(struct set_args *a)
{
    for (int i = 0; i < a->nvalues; i++)
        body_unref(a->value[i]);
}

/* The attribute's type is `type` and it has min..max elements. */
static cudnnStatus_t
set_check(const struct set_args *a, cudnnBackendAttributeType_t type,
          int64_t min, int64_t max)
{
    if (a->type != type)
        return ERR(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE,
                   "%s: attribute type %d, %d expected", a->what,
                   (int)a->type, (int)type);
    if (a->count < min || a->count > max)
        return ERR(CUDNN_STATUS_BAD_PARAM, "%s: %lld elements", a->what,
                   (long long)a->count);
    return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t
set_i64s(const struct set_args *a, int64_t max, int64_t *dst, int *n)
{
    cudnnStatus_t st = set_check(a, CUDNN_TYPE_INT64, 1, max);

    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    memcpy(dst, a->array, (size_t)a->count * sizeof(int64_t));
    if (n != NULL)
        *n = (int)a->count;
    return CUDNN_STATUS_SUCCESS;
}

/* One scalar of the given type and size. */
static cudnnStatus_t
set_one(const struct set_args *a, cudnnBackendAttributeType_t type,
        void *dst, size_t size)
{
    cudnnStatus_t st = set_check(a, type, 1, 1);

    if (st == CUDNN_STATUS_SUCCESS)
        memcpy(dst, a->array, size);
    return st;
}

static cudnnStatus_t
set_bool(const struct set_args *a, int *dst)
{
    bool v;
    cudnnStatus_t st = set_one(a, CUDNN_TYPE_BOOLEAN, &v, sizeof(v));

    if (st == CUDNN_STATUS_SUCCESS)
        *dst = v;
    return st;
}

/* Alpha and beta: one FLOAT or DOUBLE. */
static cudnnStatus_t
set_scale(const struct set_args *a, double *dst)
{
    if (a->type == CUDNN_TYPE_FLOAT && a->count == 1) {
        float f;

        memcpy(&f, a->array, sizeof(f));
        *dst = f;
        return CUDNN_STATUS_SUCCESS;
    }
    if (a->type != CUDNN_TYPE_DOUBLE)
        return ERR(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE,
                   "%s: attribute type %d, FLOAT or DOUBLE expected",
                   a->what, (int)a->type);
    return set_one(a, CUDNN_TYPE_DOUBLE, dst, sizeof(*dst));
}

/* Descriptors: `count` finalized descriptors of type `want` (any
 * convolution or pointwise operation when any_op), referenced into
 * dst[]. */
static cudnnStatus_t
set_descs(const struct set_args *a, cudnnBackendDescriptorType_t want,
          int any_op, int64_t max, struct bk_body **dst, int *n)
{
    cudnnStatus_t st = set_check(a, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, max);

    for (int i = 0; st == CUDNN_STATUS_SUCCESS && i < a->nvalues; i++) {
        int t = a->value_type[i];

        if (t < 0)
            st = ERR(CUDNN_STATUS_BAD_PARAM, "%s: element %d is not a "
                     "backend descriptor", a->what, i);
        else if (any_op ? !is_graph_op((cudnnBackendDescriptorType_t)t)
                        : t != (int)want)
            st = ERR(CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE,
                     "%s: element %d has type %d", a->what, i, t);
        else if (a->value[i] == NULL)
            st = ERR(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED,
                     "%s: element %d is not finalized", a->what, i);
    }
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    for (int i = 0; i < (n != NULL ? *n : 1); i++)
        body_unref(dst[i]);
    for (int i = 0; i < a->nvalues; i++)
        dst[i] = body_ref(a->value[i]);
    if (n != NULL)
        *n = a->nvalues;
    return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t
set_desc(const struct set_args *a, cudnnBackendDescriptorType_t want,
         struct bk_body **dst)
{
    return set_descs(a, want, 0, 1, dst, NULL);
}

static cudnnStatus_t
bad_attr(const char *what, cudnnBackendAttributeName_t name)
{
    return ERR(CUDNN_STATUS_BAD_PARAM, "%s: attribute %d cannot be set on "
               "this descriptor", what, (int)name);
}

static cudnnStatus_t
set_tensor(struct bk_tensor *t, cudnnBackendAttributeName_t name,
           const struct set_args *a)
{
    cudnnStatus_t st;

    switch (name) {
    case CUDNN_ATTR_TENSOR_DATA_TYPE:
        st = set_one(a, CUDNN_TYPE_DATA_TYPE, &t->type, sizeof(t->type));
        t->set_type |= st == CUDNN_STATUS_SUCCESS;
        return st;
    case CUDNN_ATTR_TENSOR_DIMENSIONS:
        st = set_i64s(a, CUDNN_DIM_MAX, t->dim, &t->nb_dims);
        t->set_dims |= st == CUDNN_STATUS_SUCCESS;
        return st;
    case CUDNN_ATTR_TENSOR_STRIDES:
        st = set_i64s(a, CUDNN_DIM_MAX, t->stride, &t->nb_strides);
        t->set_strides |= st == CUDNN_STATUS_SUCCESS;
        return st;
    case CUDNN_ATTR_TENSOR_UNIQUE_ID:
        st = set_one(a, CUDNN_TYPE_INT64, &t->uid, sizeof(t->uid));
        t->set_uid |= st == CUDNN_STATUS_SUCCESS;
        return st;
    case CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT:
        st = set_one(a, CUDNN_TYPE_INT64, &t->align, sizeof(t->align));
        t->set_align |= st == CUDNN_STATUS_SUCCESS;
        return st;
    case CUDNN_ATTR_TENSOR_IS_VIRTUAL:
        return set_bool(a, &t->is_virtual);
    case CUDNN_ATTR_TENSOR_IS_BY_VALUE:
        return set_bool(a, &t->by_value);
    case CUDNN_ATTR_TENSOR_VECTOR_COUNT:
        return set_one(a, CUDNN_TYPE_INT64, &t->vec_count,
                       sizeof(t->vec_count));
    case CUDNN_ATTR_TENSOR_VECTORIZED_DIMENSION:
        return set_one(a, CUDNN_TYPE_INT64, &t->vec_dim, sizeof(t->vec_dim));
    case CUDNN_ATTR_TENSOR_REORDERING_MODE:
        return set_one(a, CUDNN_TYPE_TENSOR_REORDERING_MODE, &t->reorder,
                       sizeof(t->reorder));
    default:
        return bad_attr(a->what, name);
    }
}

static cudnnStatus_t
set_conv(struct bk_conv *c, cudnnBackendAttributeName_t name,
         const struct set_args *a)
{
    cudnnStatus_t st;

    switch (name) {
    case CUDNN_ATTR_CONVOLUTION_COMP_TYPE:
        st = set_one(a, CUDNN_TYPE_DATA_TYPE, &c->comp, sizeof(c->comp));
        c->set_comp |= st == CUDNN_STATUS_SUCCESS;
        return st;
    case CUDNN_ATTR_CONVOLUTION_CONV_MODE:
        st = set_one(a, CUDNN_TYPE_CONVOLUTION_MODE, &c->mode,
                     sizeof(c->mode));
        c->set_mode |= st == CUDNN_STATUS_SUCCESS;
        return st;
    case CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS:
        st = set_one(a, CUDNN_TYPE_INT64, &c->nsp, sizeof(c->nsp));
        c->set_nsp |= st == CUDNN_STATUS_SUCCESS;
        return st;
    case CUDNN_ATTR_CONVOLUTION_DILATIONS:
        return set_i64s(a, EMU_DNN_MAX_SPATIAL, c->dil, &c->n_dil);
    case CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES:
        return set_i64s(a, EMU_DNN_MAX_SPATIAL, c->stride, &c->n_stride);
    case CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS:
        return set_i64s(a, EMU_DNN_MAX_SPATIAL, c->pre, &c->n_pre);
    case CUDNN_ATTR_CONVOLUTION_POST_PADDINGS:
        return set_i64s(a, EMU_DNN_MAX_SPATIAL, c->post, &c->n_post);
    default:
        return bad_attr(a->what, name);
    }
}

/* The attributes of each convolution operation, by role: alpha, beta,
 * conv, x, w, y (forward names; dx, w, dy; x, dw, dy). */
static const cudnnBackendAttributeName_t op_attrs[3][6] = {
    { CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA,
      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y },
    { CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY },
    { CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY },
};

static enum emu_dnn_conv_dir
op_dir(cudnnBackendDescriptorType_t t)
{
    return t == CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR
               ? EMU_DNN_CONV_FWD
           : t == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR
               ? EMU_DNN_CONV_BWD_DATA
               : EMU_DNN_CONV_BWD_FILTER;
}

/* The role (0 to 5) of attribute `name` in an operation of type t, or -1. */
static int
op_role(cudnnBackendDescriptorType_t t, cudnnBackendAttributeName_t name)
{
    for (int i = 0; i < 6; i++) {
        if (op_attrs[op_dir(t)][i] == name)
            return i;
    }
    return -1;
}

static cudnnStatus_t
set_op(struct bk_body *b, cudnnBackendAttributeName_t name,
       const struct set_args *a)
{
    struct bk_conv_op *op = &b->u.op;
    struct bk_body **tensor[6] = { NULL, NULL, NULL, &op->x, &op->w, &op->y };

    cudnnStatus_t st;

    switch (op_role(b->type, name)) {
    case 0:
        st = set_scale(a, &op->alpha);
        if (st == CUDNN_STATUS_SUCCESS)
            op->alpha_as = a->type;
        return st;
    case 1:
        st = set_scale(a, &op->beta);
        if (st == CUDNN_STATUS_SUCCESS)
            op->beta_as = a->type;
        return st;
    case 2:
        return set_desc(a, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, &op->conv);
    case 3:
    case 4:
    case 5:
        return set_desc(a, CUDNN_BACKEND_TENSOR_DESCRIPTOR,
                        tensor[op_role(b->type, name)]);
    default:
        return bad_attr(a->what, name);
    }
}

/*
 * The pointwise descriptor and operation, as cuDNN 9's backend descriptor
 * types document them (the cudnn_graph library,
 * https://docs.nvidia.com/deeplearning/cudnn/backend/v9.12.0/api/cudnn-graph-library.html,
 * CUDNN_BACKEND_POINTWISE_DESCRIPTOR and
 * CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR): the mode and math
 * precision are required, the clips, slope, ELU alpha, softplus and
 * swish beta are FLOAT or DOUBLE scalars; an operation takes the
 * pointwise descriptor, x, y, b for the modes of two inputs, and alpha1,
 * alpha2 (FLOAT or DOUBLE, 1 by default). The backward modes' dx and dy
 * and BINARY_SELECT's t are not emulated (NOT_SUPPORTED).
 */
static cudnnStatus_t
set_pw(struct bk_pw *p, cudnnBackendAttributeName_t name,
       const struct set_args *a)
{
    cudnnStatus_t st;

    switch (name) {
    case CUDNN_ATTR_POINTWISE_MODE:
        st = set_one(a, CUDNN_TYPE_POINTWISE_MODE, &p->mode, sizeof(p->mode));
        p->set_mode |= st == CUDNN_STATUS_SUCCESS;
        return st;
    case CUDNN_ATTR_POINTWISE_MATH_PREC:
        st = set_one(a, CUDNN_TYPE_DATA_TYPE, &p->prec, sizeof(p->prec));
        p->set_prec |= st == CUDNN_STATUS_SUCCESS;
        return st;
    case CUDNN_ATTR_POINTWISE_NAN_PROPAGATION:
        return set_one(a, CUDNN_TYPE_NAN_PROPOGATION, &p->nan, sizeof(p->nan));
    case CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP:
        return set_scale(a, &p->lower_clip);
    case CUDNN_ATTR_POINTWISE_RELU_UPPER_CLIP:
        return set_scale(a, &p->upper_clip);
    case CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP_SLOPE:
        return set_scale(a, &p->lower_slope);
    case CUDNN_ATTR_POINTWISE_ELU_ALPHA:
        return set_scale(a, &p->elu_alpha);
    case CUDNN_ATTR_POINTWISE_SOFTPLUS_BETA:
        return set_scale(a, &p->softplus_beta);
    case CUDNN_ATTR_POINTWISE_SWISH_BETA:
        return set_scale(a, &p->swish_beta);
    case CUDNN_ATTR_POINTWISE_AXIS:
        return set_one(a, CUDNN_TYPE_INT64, &p->axis, sizeof(p->axis));
    default:
        return bad_attr(a->what, name);
    }
}

static cudnnStatus_t
set_pw_op(struct bk_pw_op *op, cudnnBackendAttributeName_t name,
          const struct set_args *a)
{
    switch (name) {
    case CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR:
        return set_desc(a, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, &op->pw);
    case CUDNN_ATTR_OPERATION_POINTWISE_XDESC:
        return set_desc(a, CUDNN_BACKEND_TENSOR_DESCRIPTOR, &op->x);
    case CUDNN_ATTR_OPERATION_POINTWISE_BDESC:
        return set_desc(a, CUDNN_BACKEND_TENSOR_DESCRIPTOR, &op->b);
    case CUDNN_ATTR_OPERATION_POINTWISE_YDESC:
        return set_desc(a, CUDNN_BACKEND_TENSOR_DESCRIPTOR, &op->y);
    case CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1:
        return set_scale(a, &op->alpha1);
    case CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2:
        return set_scale(a, &op->alpha2);
    case CUDNN_ATTR_OPERATION_POINTWISE_DXDESC:
    case CUDNN_ATTR_OPERATION_POINTWISE_DYDESC:
    case CUDNN_ATTR_OPERATION_POINTWISE_TDESC:
        return ERR(CUDNN_STATUS_NOT_SUPPORTED, "%s: attribute %d (the "
                   "backward and selection modes' tensors) is not "
                   "emulated", a->what, (int)name);
    default:
        return bad_attr(a->what, name);
    }
}

static cudnnStatus_t
set_handle(const struct set_args *a, cudnnHandle_t *dst, int *flag)
{
    cudnnHandle_t h;
    struct emu_dnn_config cfg;
    cudnnStatus_t st = set_one(a, CUDNN_TYPE_HANDLE, &h, sizeof(h));

    if (st == CUDNN_STATUS_SUCCESS)
        st = emu_dnn_config(h, &cfg);
    if (st == CUDNN_STATUS_SUCCESS) {
        *dst = h;
        *flag = 1;
    }
    return st;
}

static cudnnStatus_t
set_graph(struct bk_graph *g, cudnnBackendAttributeName_t name,
          const struct set_args *a)
{
    switch (name) {
    case CUDNN_ATTR_OPERATIONGRAPH_OPS:
        return set_descs(a, CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
                         1, BK_MAX_OPS, g->ops, &g->nops);
    case CUDNN_ATTR_OPERATIONGRAPH_HANDLE:
        return set_handle(a, &g->handle, &g->set_handle);
    case CUDNN_ATTR_OPERATIONGRAPH_IS_DYNAMIC_SHAPE_ENABLED:
        return set_bool(a, &g->dynamic);
    default:
        return bad_attr(a->what, name);
    }
}

static cudnnStatus_t
set_engine(struct bk_engine *e, cudnnBackendAttributeName_t name,
           const struct set_args *a)
{
    cudnnStatus_t st;

    switch (name) {
    case CUDNN_ATTR_ENGINE_OPERATION_GRAPH:
        return set_desc(a, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &e->graph);
    case CUDNN_ATTR_ENGINE_GLOBAL_INDEX:
        st = set_one(a, CUDNN_TYPE_INT64, &e->index, sizeof(e->index));
        e->set_index |= st == CUDNN_STATUS_SUCCESS;
        return st;
    case CUDNN_ATTR_ENGINE_SM_COUNT_TARGET:
        st = set_check(a, CUDNN_TYPE_INT32, 1, 1);
        if (st == CUDNN_STATUS_SUCCESS)
            e->sm_target = *(const int32_t *)a->array;
        return st;
    default:
        return bad_attr(a->what, name);
    }
}

static cudnnStatus_t
set_knob(struct bk_knob *k, cudnnBackendAttributeName_t name,
         const struct set_args *a)
{
    cudnnStatus_t st;

    switch (name) {
    case CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE:
        st = set_one(a, CUDNN_TYPE_KNOB_TYPE, &k->type, sizeof(k->type));
        k->set_type |= st == CUDNN_STATUS_SUCCESS;
        return st;
    case CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE:
        st = set_one(a, CUDNN_TYPE_INT64, &k->value, sizeof(k->value));
        k->set_value |= st == CUDNN_STATUS_SUCCESS;
        return st;
    default:
        return bad_attr(a->what, name);
    }
}

static cudnnStatus_t
set_cfg(struct bk_cfg *c, cudnnBackendAttributeName_t name,
        const struct set_args *a)
{
    switch (name) {
    case CUDNN_ATTR_ENGINECFG_ENGINE:
        return set_desc(a, CUDNN_BACKEND_ENGINE_DESCRIPTOR, &c->engine);
    case CUDNN_ATTR_ENGINECFG_KNOB_CHOICES:
        if (a->count == 0 && a->type == CUDNN_TYPE_BACKEND_DESCRIPTOR) {
            for (int i = 0; i < c->nknobs; i++)
                body_unref(c->knobs[i]);
            c->nknobs = 0;
            return CUDNN_STATUS_SUCCESS;
        }
        return set_descs(a, CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, 0,
                         BK_MAX_KNOBS, c->knobs, &c->nknobs);
    default:
        return bad_attr(a->what, name);
    }
}

static cudnnStatus_t
set_heur(struct bk_heur *h, cudnnBackendAttributeName_t name,
         const struct set_args *a)
{
    cudnnStatus_t st;

    switch (name) {
    case CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH:
        return set_desc(a, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &h->graph);
    case CUDNN_ATTR_ENGINEHEUR_MODE:
        st = set_one(a, CUDNN_TYPE_HEUR_MODE, &h->mode, sizeof(h->mode));
        h->set_mode |= st == CUDNN_STATUS_SUCCESS;
        return st;
    case CUDNN_ATTR_ENGINEHEUR_SM_COUNT_TARGET:
        st = set_check(a, CUDNN_TYPE_INT32, 1, 1);
        if (st == CUDNN_STATUS_SUCCESS)
            h->sm_target = *(const int32_t *)a->array;
        return st;
    default:
        return bad_attr(a->what, name);
    }
}

static cudnnStatus_t
set_plan(struct bk_plan *p, cudnnBackendAttributeName_t name,
         const struct set_args *a)
{
    switch (name) {
    case CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG:
        return set_desc(a, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &p->cfg);
    case CUDNN_ATTR_EXECUTION_PLAN_HANDLE:
        return set_handle(a, &p->handle, &p->set_handle);
    case CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION:
    case CUDNN_ATTR_EXECUTION_PLAN_RUN_ONLY_INTERMEDIATE_UIDS:
    case CUDNN_ATTR_EXECUTION_PLAN_KERNEL_CACHE:
    case CUDNN_ATTR_EXECUTION_PLAN_DEVICEPROP:
        return ERR(CUDNN_STATUS_NOT_SUPPORTED, "%s: attribute %d is not "
                   "emulated", a->what, (int)name);
    default:
        return bad_attr(a->what, name);
    }
}

/* A copy of an array attribute of `size`-byte elements (count 0: none). */
static cudnnStatus_t
set_array(const struct set_args *a, cudnnBackendAttributeType_t type,
          size_t size, void **dst, int64_t *n)
{
    void *copy = NULL;

    if (a->type != type)
        return ERR(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE,
                   "%s: attribute type %d, %d expected", a->what,
                   (int)a->type, (int)type);
    if (a->count < 0)
        return ERR(CUDNN_STATUS_BAD_PARAM, "%s: %lld elements", a->what,
                   (long long)a->count);
    if (a->count > 0) {
        copy = malloc((size_t)a->count * size);
        if (copy == NULL)
            return ERR(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED,
                       "%s: out of host memory", a->what);
        memcpy(copy, a->array, (size_t)a->count * size);
    }
    free(*dst);
    *dst = copy;
    *n = a->count;
    return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t
set_pack(struct bk_pack *p, cudnnBackendAttributeName_t name,
         const struct set_args *a)
{
    switch (name) {
    case CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS:
        return set_array(a, CUDNN_TYPE_INT64, sizeof(int64_t),
                         (void **)&p->uids, &p->n_uids);
    case CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS:
        return set_array(a, CUDNN_TYPE_VOID_PTR, sizeof(void *),
                         (void **)&p->ptrs, &p->n_ptrs);
    case CUDNN_ATTR_VARIANT_PACK_INTERMEDIATES:
        return set_array(a, CUDNN_TYPE_VOID_PTR, sizeof(void *),
                         (void **)&p->inter, &p->n_inter);
    case CUDNN_ATTR_VARIANT_PACK_WORKSPACE:
        return set_one(a, CUDNN_TYPE_VOID_PTR, &p->workspace,
                       sizeof(p->workspace));
    case CUDNN_ATTR_VARIANT_PACK_OVERRIDE_UNIQUE_IDS:
    case CUDNN_ATTR_VARIANT_PACK_OVERRIDE_SHAPES:
    case CUDNN_ATTR_VARIANT_PACK_OVERRIDE_STRIDES:
        return ERR(CUDNN_STATUS_NOT_SUPPORTED, "%s: dynamic shapes are not "
                   "emulated", a->what);
    default:
        return bad_attr(a->what, name);
    }
}

cudnnStatus_t
cudnnBackendSetAttribute(cudnnBackendDescriptor_t descriptor,
                         cudnnBackendAttributeName_t attributeName,
                         cudnnBackendAttributeType_t attributeType,
                         int64_t elementCount, const void *arrayOfElements)
{
    struct set_args a = { .type = attributeType, .count = elementCount,
                          .array = arrayOfElements,
                          .what = "cudnnBackendSetAttribute" };
    struct bk_desc *d = desc_of(descriptor);
    struct bk_body *b;
    cudnnStatus_t st;

    if (d == NULL)
        return ERR(CUDNN_STATUS_BAD_PARAM, "%s: not a backend descriptor",
                   a.what);
    if (elementCount < 0 || (arrayOfElements == NULL && elementCount > 0))
        return ERR(CUDNN_STATUS_BAD_PARAM_NULL_POINTER,
                   "%s: %lld elements at %p", a.what,
                   (long long)elementCount, arrayOfElements);
    set_args_resolve(&a);
    pthread_mutex_lock(&d->lock);
    b = d->body;
    if (d->finalized) {
        st = ERR(CUDNN_STATUS_BAD_PARAM, "%s: descriptor already finalized",
                 a.what);
        goto out;
    }
    switch (d->type) {
    case CUDNN_BACKEND_TENSOR_DESCRIPTOR:
        st = set_tensor(&b->u.tensor, attributeName, &a);
        break;
    case CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR:
        st = set_conv(&b->u.conv, attributeName, &a);
        break;
    case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR:
        st = set_graph(&b->u.graph, attributeName, &a);
        break;
    case CUDNN_BACKEND_ENGINE_DESCRIPTOR:
        st = set_engine(&b->u.engine, attributeName, &a);
        break;
    case CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR:
        st = set_knob(&b->u.knob, attributeName, &a);
        break;
    case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR:
        st = set_cfg(&b->u.cfg, attributeName, &a);
        break;
    case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR:
        st = set_heur(&b->u.heur, attributeName, &a);
        break;
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR:
        st = set_plan(&b->u.plan, attributeName, &a);
        break;
    case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR:
        st = set_pack(&b->u.pack, attributeName, &a);
        break;
    case CUDNN_BACKEND_POINTWISE_DESCRIPTOR:
        st = set_pw(&b->u.pw, attributeName, &a);
        break;
    case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
        st = set_pw_op(&b->u.pw_op, attributeName, &a);
        break;
    default:
        st = is_conv_op(d->type) ? set_op(b, attributeName, &a)
                                 : bad_attr(a.what, attributeName);
        break;
    }
out:
    pthread_mutex_unlock(&d->lock);
    set_args_release(&a);
    return st;
}

/* ---- The engines ---------------------------------------------------------- */

/*
 * The emulator's engines, by global index: the legacy algorithms' kinds
 * on the FP32 cores and on the Tensor Cores (TF32 for FLOAT data, where
 * the modelled GPU has it and NVIDIA_TF32_OVERRIDE does not forbid it),
 * for graphs of one convolution; then two runtime-fusion engines (FP32
 * cores, Tensor Cores) for a forward convolution followed by pointwise
 * operations, which cuDNN leaves to its runtime-compiled engines (their
 * behaviour note says RUNTIME_COMPILATION). The precomputed implicit GEMM
 * has one knob, its tile size (0 to 2), which is kept and checked but
 * changes neither results nor time.
 */
static const struct engine_def {
    enum emu_dnn_conv_kind kind;
    int tensor_core;
    int fused;
} engine_defs[BK_ENGINE_COUNT] = {
    { EMU_DNN_KIND_IMPLICIT, 0, 0 }, { EMU_DNN_KIND_IMPLICIT, 1, 0 },
    { EMU_DNN_KIND_PRECOMP, 0, 0 }, { EMU_DNN_KIND_PRECOMP, 1, 0 },
    { EMU_DNN_KIND_GEMM, 0, 0 }, { EMU_DNN_KIND_GEMM, 1, 0 },
    [BK_FUSION_ENGINE] = { EMU_DNN_KIND_IMPLICIT, 0, 1 },
    [BK_FUSION_ENGINE + 1] = { EMU_DNN_KIND_IMPLICIT, 1, 1 },
};

#define KNOB_TILE_MAX 2

static int
engine_knob_count(int64_t index)
{
    return engine_defs[index].kind == EMU_DNN_KIND_PRECOMP &&
           !engine_defs[index].fused;
}

/* The graph's convolution as engine `index` runs it, its workspace and
 * modelled time: the graph's reason or NOT_SUPPORTED when the engine
 * does not take it. */
static cudnnStatus_t
engine_eval(const struct bk_graph *g, int64_t index,
            struct emu_dnn_conv_spec *spec, size_t *ws, double *ns,
            int *det)
{
    cudnnStatus_t st;

    if (g->conv_status != CUDNN_STATUS_SUCCESS)
        return ERR(g->conv_status, "engine %lld: the graph is not one "
                   "supported convolution", (long long)index);
    if (engine_defs[index].fused != g->fused)
        return ERR(CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN, "engine %lld: "
                   "%s", (long long)index, g->fused
                       ? "a fused graph needs a runtime-fusion engine"
                       : "a runtime-fusion engine needs pointwise operations");
    *spec = g->spec;
    spec->kind = engine_defs[index].kind;
    spec->tensor_core = engine_defs[index].tensor_core;
    if (spec->tensor_core && spec->type == CUDNN_DATA_FLOAT &&
        !emu_tf32_available())
        return ERR(CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH,
                   "engine %lld: no TF32 on this device", (long long)index);
    st = emu_dnn_conv_engine(spec, ws, ns, det);
    /* A fused graph's virtual tensors live in the workspace, after the
     * convolution's part; each operation after the convolution moves its
     * tensors once. */
    if (st == CUDNN_STATUS_SUCCESS && g->fused) {
        *ws = (*ws + 255) / 256 * 256 + g->virtual_bytes;
        *ns += g->pw_ns;
    }
    return st;
}

static const struct bk_graph *
engine_graph(const struct bk_body *engine)
{
    return &engine->u.engine.graph->u.graph;
}

/* ---- Finalize ------------------------------------------------------------- */

static cudnnStatus_t
fin_tensor(struct bk_tensor *t)
{
    if (!t->set_type || !t->set_dims || !t->set_strides || !t->set_uid ||
        !t->set_align)
        return ERR(CUDNN_STATUS_BAD_PARAM, "tensor: data type, dimensions, "
                   "strides, unique id and byte alignment are required");
    if (t->nb_dims != t->nb_strides)
        return ERR(CUDNN_STATUS_BAD_PARAM, "tensor: %d dimensions, %d "
                   "strides", t->nb_dims, t->nb_strides);
    for (int i = 0; i < t->nb_dims; i++) {
        if (t->dim[i] <= 0 || t->stride[i] <= 0)
            return ERR(CUDNN_STATUS_BAD_PARAM, "tensor: dimension %d is "
                       "%lld with stride %lld", i, (long long)t->dim[i],
                       (long long)t->stride[i]);
    }
    if (t->align <= 0 || (t->align & (t->align - 1)) != 0)
        return ERR(CUDNN_STATUS_BAD_PARAM, "tensor: byte alignment %lld",
                   (long long)t->align);
    if (t->vec_count < 1 || t->vec_dim < -1 || t->vec_dim >= t->nb_dims)
        return ERR(CUDNN_STATUS_BAD_PARAM, "tensor: vector count %lld in "
                   "dimension %lld", (long long)t->vec_count,
                   (long long)t->vec_dim);
    return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t
fin_conv(struct bk_conv *c)
{
    if (!c->set_comp || !c->set_mode || !c->set_nsp)
        return ERR(CUDNN_STATUS_BAD_PARAM, "convolution: compute type, mode "
                   "and spatial dimensions are required");
    if (c->nsp < 1 || c->nsp > EMU_DNN_MAX_SPATIAL)
        return ERR(CUDNN_STATUS_BAD_PARAM, "convolution: %lld spatial "
                   "dimensions", (long long)c->nsp);
    if (c->mode != CUDNN_CONVOLUTION && c->mode != CUDNN_CROSS_CORRELATION)
        return ERR(CUDNN_STATUS_BAD_PARAM, "convolution: mode %d",
                   (int)c->mode);
    if (c->n_dil != c->nsp || c->n_stride != c->nsp || c->n_pre != c->nsp ||
        c->n_post != c->nsp)
        return ERR(CUDNN_STATUS_BAD_PARAM, "convolution: dilations, strides "
                   "and paddings need %lld elements each", (long long)c->nsp);
    for (int i = 0; i < c->nsp; i++) {
        if (c->dil[i] < 1 || c->stride[i] < 1 || c->pre[i] < 0 ||
            c->post[i] < 0)
            return ERR(CUDNN_STATUS_BAD_PARAM, "convolution: dimension %d: "
                       "dilation %lld, stride %lld, paddings %lld, %lld", i,
                       (long long)c->dil[i], (long long)c->stride[i],
                       (long long)c->pre[i], (long long)c->post[i]);
    }
    return CUDNN_STATUS_SUCCESS;
}

/* x, w and y (in the forward roles) fit the convolution: one rank,
 * w's channels a divisor of x's (the group count), y's sizes the
 * output's for the paddings, dilations and strides. */
static cudnnStatus_t
fin_op(struct bk_conv_op *op)
{
    const struct bk_tensor *x, *w, *y;
    const struct bk_conv *c;
    int64_t groups;

    if (!op->conv || !op->x || !op->w || !op->y)
        return ERR(CUDNN_STATUS_BAD_PARAM, "convolution operation: the "
                   "convolution and its three tensors are required");
    c = &op->conv->u.conv;
    x = &op->x->u.tensor, w = &op->w->u.tensor, y = &op->y->u.tensor;
    if (x->nb_dims != c->nsp + 2 || w->nb_dims != c->nsp + 2 ||
        y->nb_dims != c->nsp + 2)
        return ERR(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH, "convolution "
                   "operation: ranks %d, %d, %d for %lld spatial dimensions",
                   x->nb_dims, w->nb_dims, y->nb_dims, (long long)c->nsp);
    if (x->dim[1] % w->dim[1] != 0 || y->dim[0] != x->dim[0] ||
        y->dim[1] != w->dim[0])
        return ERR(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH, "convolution "
                   "operation: N, C, K do not match");
    groups = x->dim[1] / w->dim[1];
    if (w->dim[0] % groups != 0)
        return ERR(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH, "convolution "
                   "operation: %lld output channels in %lld groups",
                   (long long)w->dim[0], (long long)groups);
    for (int i = 0; i < c->nsp; i++) {
        int64_t span = (w->dim[2 + i] - 1) * c->dil[i] + 1;
        int64_t room = x->dim[2 + i] + c->pre[i] + c->post[i] - span;

        if (room < 0 || y->dim[2 + i] != room / c->stride[i] + 1)
            return ERR(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH, "convolution "
                       "operation: spatial dimension %d of y is %lld", i,
                       (long long)y->dim[2 + i]);
    }
    return CUDNN_STATUS_SUCCESS;
}

static void
view_of(const struct bk_tensor *t, struct emu_dnn_view *v)
{
    memset(v, 0, sizeof(*v));
    v->type = t->type;
    v->nb_dims = t->nb_dims;
    v->packed = 1;
    for (int i = 0; i < t->nb_dims; i++) {
        v->dim[i] = (int)t->dim[i];
        v->stride[i] = t->stride[i];
    }
    for (int i = t->nb_dims - 1, s = 1; i >= 0; s *= v->dim[i], i--)
        v->packed &= v->stride[i] == s;
}

/* Whether the emulator's engines take the graph's convolution `opb`, and
 * how they see it. */
static cudnnStatus_t
graph_conv(struct bk_graph *g, const struct bk_body *opb)
{
    const struct bk_conv_op *op = &opb->u.op;
    const struct bk_conv *c = &op->conv->u.conv;
    const struct bk_tensor *t[3] = { &op->x->u.tensor, &op->w->u.tensor,
                                     &op->y->u.tensor };
    struct emu_dnn_conv_spec *s = &g->spec;

    if (g->dynamic)
        return CUDNN_STATUS_NOT_SUPPORTED_INVALID_DYNAMIC_SHAPE;
    for (int i = 0; i < 3; i++) {
        if (t[i]->by_value)
            return CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN;
        if (t[i]->vec_count != 1 ||
            t[i]->reorder != CUDNN_TENSOR_REORDERING_NONE)
            return CUDNN_STATUS_NOT_SUPPORTED_LAYOUT;
        if (t[i]->type != t[0]->type)
            return CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE;
        for (int d = 0; d < t[i]->nb_dims; d++) {
            if (t[i]->dim[d] > INT_MAX)
                return CUDNN_STATUS_NOT_SUPPORTED_SHAPE;
        }
    }
    if (c->comp != CUDNN_DATA_FLOAT ||
        (t[0]->type != CUDNN_DATA_FLOAT && t[0]->type != CUDNN_DATA_HALF &&
         t[0]->type != CUDNN_DATA_BFLOAT16))
        return CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE;
    memset(s, 0, sizeof(*s));
    s->dir = op_dir(opb->type);
    s->nsp = (int)c->nsp;
    s->groups = (int)(t[0]->dim[1] / t[1]->dim[1]);
    s->flip = c->mode == CUDNN_CONVOLUTION;
    for (int i = 0; i < s->nsp; i++) {
        if (c->pre[i] > INT_MAX || c->stride[i] > INT_MAX ||
            c->dil[i] > INT_MAX)
            return CUDNN_STATUS_NOT_SUPPORTED_SHAPE;
        s->pre_pad[i] = (int)c->pre[i];
        s->stride[i] = (int)c->stride[i];
        s->dil[i] = (int)c->dil[i];
    }
    s->type = t[0]->type;
    view_of(t[0], &s->x);
    view_of(t[1], &s->w);
    view_of(t[2], &s->y);
    g->alpha = op->alpha;
    g->beta = op->beta;
    return CUDNN_STATUS_SUCCESS;
}

/* ---- Pointwise operations ------------------------------------------------ */

/* The inputs a pointwise mode takes: 1 or 2; 0 for the modes whose other
 * tensors (dx, dy, t) the emulator does not model; -1 for a value that is
 * not a mode. */
static int
pw_arity(cudnnPointwiseMode_t m)
{
    switch (m) {
    case CUDNN_POINTWISE_ADD: case CUDNN_POINTWISE_ADD_SQUARE:
    case CUDNN_POINTWISE_DIV: case CUDNN_POINTWISE_MAX:
    case CUDNN_POINTWISE_MIN: case CUDNN_POINTWISE_MOD:
    case CUDNN_POINTWISE_MUL: case CUDNN_POINTWISE_POW:
    case CUDNN_POINTWISE_SUB: case CUDNN_POINTWISE_ATAN2:
    case CUDNN_POINTWISE_CMP_EQ: case CUDNN_POINTWISE_CMP_NEQ:
    case CUDNN_POINTWISE_CMP_GT: case CUDNN_POINTWISE_CMP_GE:
    case CUDNN_POINTWISE_CMP_LT: case CUDNN_POINTWISE_CMP_LE:
    case CUDNN_POINTWISE_LOGICAL_AND: case CUDNN_POINTWISE_LOGICAL_OR:
        return 2;
    case CUDNN_POINTWISE_ABS: case CUDNN_POINTWISE_CEIL:
    case CUDNN_POINTWISE_COS: case CUDNN_POINTWISE_EXP:
    case CUDNN_POINTWISE_FLOOR: case CUDNN_POINTWISE_LOG:
    case CUDNN_POINTWISE_NEG: case CUDNN_POINTWISE_RSQRT:
    case CUDNN_POINTWISE_SIN: case CUDNN_POINTWISE_SQRT:
    case CUDNN_POINTWISE_TAN: case CUDNN_POINTWISE_ERF:
    case CUDNN_POINTWISE_IDENTITY: case CUDNN_POINTWISE_RECIPROCAL:
    case CUDNN_POINTWISE_RELU_FWD: case CUDNN_POINTWISE_TANH_FWD:
    case CUDNN_POINTWISE_SIGMOID_FWD: case CUDNN_POINTWISE_ELU_FWD:
    case CUDNN_POINTWISE_GELU_FWD: case CUDNN_POINTWISE_SOFTPLUS_FWD:
    case CUDNN_POINTWISE_SWISH_FWD:
    case CUDNN_POINTWISE_GELU_APPROX_TANH_FWD:
    case CUDNN_POINTWISE_LOGICAL_NOT:
        return 1;
    case CUDNN_POINTWISE_RELU_BWD: case CUDNN_POINTWISE_TANH_BWD:
    case CUDNN_POINTWISE_SIGMOID_BWD: case CUDNN_POINTWISE_ELU_BWD:
    case CUDNN_POINTWISE_GELU_BWD: case CUDNN_POINTWISE_SOFTPLUS_BWD:
    case CUDNN_POINTWISE_SWISH_BWD:
    case CUDNN_POINTWISE_GELU_APPROX_TANH_BWD:
    case CUDNN_POINTWISE_GEN_INDEX: case CUDNN_POINTWISE_BINARY_SELECT:
        return 0;
    default:
        return -1;
    }
}

/* The modes the runtime-fusion engines compute (pw_value); the others
 * are NOT_SUPPORTED at the engine, as their formulas are not all
 * documented. */
static int
pw_emulated(cudnnPointwiseMode_t m)
{
    switch (m) {
    case CUDNN_POINTWISE_ADD: case CUDNN_POINTWISE_SUB:
    case CUDNN_POINTWISE_MUL: case CUDNN_POINTWISE_DIV:
    case CUDNN_POINTWISE_MAX: case CUDNN_POINTWISE_MIN:
    case CUDNN_POINTWISE_IDENTITY: case CUDNN_POINTWISE_ABS:
    case CUDNN_POINTWISE_NEG: case CUDNN_POINTWISE_EXP:
    case CUDNN_POINTWISE_LOG: case CUDNN_POINTWISE_SQRT:
    case CUDNN_POINTWISE_RSQRT: case CUDNN_POINTWISE_RECIPROCAL:
    case CUDNN_POINTWISE_RELU_FWD: case CUDNN_POINTWISE_TANH_FWD:
    case CUDNN_POINTWISE_SIGMOID_FWD: case CUDNN_POINTWISE_ELU_FWD:
    case CUDNN_POINTWISE_GELU_FWD: case CUDNN_POINTWISE_SOFTPLUS_FWD:
    case CUDNN_POINTWISE_SWISH_FWD:
        return 1;
    default:
        return 0;
    }
}

static cudnnStatus_t
fin_pw(struct bk_pw *p)
{
    if (!p->set_mode || !p->set_prec)
        return ERR(CUDNN_STATUS_BAD_PARAM, "pointwise: mode and math "
                   "precision are required");
    if (pw_arity(p->mode) < 0)
        return ERR(CUDNN_STATUS_BAD_PARAM, "pointwise: mode %d",
                   (int)p->mode);
    if (p->nan != CUDNN_NOT_PROPAGATE_NAN && p->nan != CUDNN_PROPAGATE_NAN)
        return ERR(CUDNN_STATUS_BAD_PARAM, "pointwise: NaN propagation %d",
                   (int)p->nan);
    return CUDNN_STATUS_SUCCESS;
}

/* An input of the operation's output's rank whose every size is the
 * output's or 1 (broadcast). */
static int
pw_broadcasts(const struct bk_tensor *in, const struct bk_tensor *out)
{
    if (in->nb_dims != out->nb_dims)
        return 0;
    for (int i = 0; i < out->nb_dims; i++) {
        if (in->dim[i] != out->dim[i] && in->dim[i] != 1)
            return 0;
    }
    return 1;
}

static cudnnStatus_t
fin_pw_op(struct bk_pw_op *op)
{
    int arity;

    if (op->pw == NULL || op->x == NULL || op->y == NULL)
        return ERR(CUDNN_STATUS_BAD_PARAM, "pointwise operation: the "
                   "pointwise descriptor, x and y are required");
    arity = pw_arity(op->pw->u.pw.mode);
    if (arity == 0)
        return ERR(CUDNN_STATUS_NOT_SUPPORTED, "pointwise operation: mode "
                   "%d needs tensors the emulator does not model",
                   (int)op->pw->u.pw.mode);
    if (arity == 2 && op->b == NULL)
        return ERR(CUDNN_STATUS_BAD_PARAM, "pointwise operation: mode %d "
                   "takes b", (int)op->pw->u.pw.mode);
    if (!pw_broadcasts(&op->x->u.tensor, &op->y->u.tensor) ||
        (arity == 2 && !pw_broadcasts(&op->b->u.tensor, &op->y->u.tensor)))
        return ERR(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH, "pointwise "
                   "operation: an input's sizes are neither y's nor 1");
    return CUDNN_STATUS_SUCCESS;
}

/* The tensors of operation `op`, the output last: *n of them (b may be
 * absent). Returns the output. */
static const struct bk_body *
op_tensors(const struct bk_body *op, const struct bk_body *t[3], int *n)
{
    *n = 0;
    if (op->type == CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR) {
        t[(*n)++] = op->u.pw_op.x;
        if (op->u.pw_op.b != NULL)
            t[(*n)++] = op->u.pw_op.b;
        t[(*n)++] = op->u.pw_op.y;
        return op->u.pw_op.y;
    }
    /* A convolution's output is y forward, dx backward data, dw backward
     * filter (x, w, y in the forward roles). */
    t[0] = op->u.op.x, t[1] = op->u.op.w, t[2] = op->u.op.y;
    *n = 3;
    switch (op_dir(op->type)) {
    case EMU_DNN_CONV_BWD_DATA:
        t[0] = op->u.op.y, t[2] = op->u.op.x;
        break;
    case EMU_DNN_CONV_BWD_FILTER:
        t[1] = op->u.op.y, t[2] = op->u.op.w;
        break;
    default:
        break;
    }
    return t[2];
}

/* The operation of g that writes tensor t, or -1. */
static int
graph_writer(const struct bk_graph *g, const struct bk_body *t)
{
    for (int i = 0; i < g->nops; i++) {
        const struct bk_body *ts[3];
        int n;

        if (op_tensors(g->ops[i], ts, &n) == t)
            return i;
    }
    return -1;
}

/* A tensor's bytes as FLOAT elements from offset 0 to its last element,
 * in 256-byte units. */
static size_t
tensor_span_bytes(const struct bk_tensor *t)
{
    int64_t last = 0;

    for (int i = 0; i < t->nb_dims; i++)
        last += (t->dim[i] - 1) * t->stride[i];
    return ((size_t)(last + 1) * sizeof(float) + 255) / 256 * 256;
}

static int
tensor_float(const struct bk_body *t)
{
    return t->u.tensor.type == CUDNN_DATA_FLOAT;
}

/* Whether the runtime-fusion engines take a graph of several operations:
 * one forward convolution of real x and w, then pointwise operations of
 * emulated modes, FLOAT tensors and FLOAT math, each input a graph input
 * or an earlier operation's output. Sets the convolution, the order of
 * the pointwise operations and the virtual tensors' parts. */
static cudnnStatus_t
graph_fused(struct bk_graph *g)
{
    int done[BK_MAX_OPS] = { 0 };
    cudnnStatus_t st;

    g->conv_at = -1;
    for (int i = 0; i < g->nops; i++) {
        const struct bk_body *op = g->ops[i];

        if (op->type == CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR)
            continue;
        if (op->type != CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR ||
            g->conv_at >= 0)
            return CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN;
        g->conv_at = i;
    }
    if (g->conv_at < 0)
        return CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN;
    {
        const struct bk_conv_op *c = &g->ops[g->conv_at]->u.op;

        if (c->x->u.tensor.is_virtual || c->w->u.tensor.is_virtual)
            return CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN;
        if (!tensor_float(c->x) || !tensor_float(c->w) || !tensor_float(c->y))
            return CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE;
    }
    st = graph_conv(g, g->ops[g->conv_at]);
    if (st != CUDNN_STATUS_SUCCESS)
        return st;
    done[g->conv_at] = 1;
    g->npw = 0;
    g->pw_ns = 0.0;
    /* The pointwise operations whose inputs are ready, until none is
     * left (a cycle leaves some). */
    while (g->npw < g->nops - 1) {
        int picked = -1;

        for (int i = 0; i < g->nops && picked < 0; i++) {
            const struct bk_body *ts[3];
            int n, ready = 1;

            if (done[i])
                continue;
            op_tensors(g->ops[i], ts, &n);
            for (int k = 0; k < n - 1; k++) {
                int w = graph_writer(g, ts[k]);

                ready &= w < 0 || done[w];
            }
            if (ready)
                picked = i;
        }
        if (picked < 0)
            return CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN;
        done[picked] = 1;
        g->pw_order[g->npw++] = picked;
    }
    for (int i = 0; i < g->npw; i++) {
        const struct bk_pw_op *op = &g->ops[g->pw_order[i]]->u.pw_op;
        const struct bk_pw *pw = &op->pw->u.pw;
        double bytes = 0.0;

        if (pw->prec != CUDNN_DATA_FLOAT || !tensor_float(op->x) ||
            !tensor_float(op->y) || (op->b != NULL && !tensor_float(op->b)))
            return CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE;
        if (!pw_emulated(pw->mode))
            return CUDNN_STATUS_NOT_SUPPORTED;
        /* Where a lower clip and a slope meet the documentation does not
         * say which applies first. */
        if (pw->mode == CUDNN_POINTWISE_RELU_FWD && pw->lower_clip != 0.0 &&
            pw->lower_slope != 0.0)
            return CUDNN_STATUS_NOT_SUPPORTED;
        bytes += (double)tensor_span_bytes(&op->x->u.tensor);
        if (op->b != NULL)
            bytes += (double)tensor_span_bytes(&op->b->u.tensor);
        bytes += (double)tensor_span_bytes(&op->y->u.tensor);
        g->pw_ns += emu_model_ns(0.0, EMU_PREC_FP32, bytes);
    }
    /* Every tensor other than the graph's inputs and outputs is virtual:
     * a part of the workspace each. */
    g->nvirtual = 0;
    g->virtual_bytes = 0;
    for (int i = 0; i < g->nops; i++) {
        const struct bk_body *ts[3];
        int n;
        const struct bk_body *out = op_tensors(g->ops[i], ts, &n);

        if (!out->u.tensor.is_virtual || g->nvirtual == BK_MAX_VIRTUAL)
            continue;
        g->virtual_tensor[g->nvirtual] = out;
        g->virtual_at[g->nvirtual++] = g->virtual_bytes;
        g->virtual_bytes += tensor_span_bytes(&out->u.tensor);
    }
    g->fused = 1;
    return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t
fin_graph(struct bk_graph *g)
{
    const struct bk_body *seen[3 * BK_MAX_OPS];
    int nseen = 0;

    if (g->nops < 1)
        return ERR(CUDNN_STATUS_BAD_PARAM, "operation graph: no operations");
    for (int i = 0; i < g->nops; i++) {
        const struct bk_body *t[3];
        int n;

        op_tensors(g->ops[i], t, &n);
        for (int k = 0; k < n; k++) {
            int dup = 0;

            /* One unique id, one tensor. */
            for (int j = 0; j < nseen; j++) {
                if (seen[j]->u.tensor.uid != t[k]->u.tensor.uid)
                    continue;
                if (seen[j] != t[k])
                    return ERR(CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES,
                               "operation graph: two tensors with unique "
                               "id %lld", (long long)t[k]->u.tensor.uid);
                dup = 1;
            }
            if (!dup)
                seen[nseen++] = t[k];
            /* A virtual tensor must join two operations: one writes it
             * and another reads it. */
            if (t[k]->u.tensor.is_virtual &&
                (g->nops == 1 || graph_writer(g, t[k]) < 0))
                return ERR(CUDNN_STATUS_BAD_PARAM, "operation graph: "
                           "virtual tensor %lld is an input or output",
                           (long long)t[k]->u.tensor.uid);
        }
    }
    for (int j = 0; j < nseen; j++) {
        int readers = 0;

        if (!seen[j]->u.tensor.is_virtual)
            continue;
        for (int i = 0; i < g->nops; i++) {
            const struct bk_body *t[3];
            int n;

            op_tensors(g->ops[i], t, &n);
            for (int k = 0; k < n - 1; k++)
                readers += t[k] == seen[j];
        }
        if (readers == 0)
            return ERR(CUDNN_STATUS_BAD_PARAM, "operation graph: virtual "
                       "tensor %lld is an output",
                       (long long)seen[j]->u.tensor.uid);
    }
    g->fused = 0;
    g->conv_status = g->nops == 1 ? (is_conv_op(g->ops[0]->type)
                                         ? graph_conv(g, g->ops[0])
                                         : CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN)
                                  : graph_fused(g);
    return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t
fin_engine(struct bk_engine *e)
{
    struct emu_dnn_conv_spec spec;
    size_t ws;
    double ns;
    int det;

    if (e->graph == NULL || !e->set_index)
        return ERR(CUDNN_STATUS_BAD_PARAM, "engine: the operation graph and "
                   "global index are required");
    if (e->index < 0 || e->index >= BK_ENGINE_COUNT)
        return ERR(CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND, "engine: global "
                   "index %lld of %d", (long long)e->index, BK_ENGINE_COUNT);
    return engine_eval(&e->graph->u.graph, e->index, &spec, &ws, &ns, &det);
}

static cudnnStatus_t
fin_knob(struct bk_knob *k)
{
    if (!k->set_type || !k->set_value)
        return ERR(CUDNN_STATUS_BAD_PARAM, "knob choice: type and value are "
                   "required");
    return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t
fin_cfg(struct bk_cfg *c)
{
    const struct bk_engine *e;
    struct emu_dnn_conv_spec spec;
    double ns;
    int det;

    if (c->engine == NULL)
        return ERR(CUDNN_STATUS_BAD_PARAM, "engine configuration: the engine "
                   "is required");
    e = &c->engine->u.engine;
    for (int i = 0; i < c->nknobs; i++) {
        const struct bk_knob *k = &c->knobs[i]->u.knob;

        for (int j = 0; j < i; j++) {
            if (c->knobs[j]->u.knob.type == k->type)
                return ERR(CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES,
                           "engine configuration: knob %d chosen twice",
                           (int)k->type);
        }
        if (!engine_knob_count(e->index) || k->type != CUDNN_KNOB_TYPE_TILE_SIZE)
            return ERR(CUDNN_STATUS_NOT_SUPPORTED, "engine configuration: "
                       "engine %lld has no knob %d", (long long)e->index,
                       (int)k->type);
        if (k->value < 0 || k->value > KNOB_TILE_MAX)
            return ERR(CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND, "engine "
                       "configuration: knob %d value %lld", (int)k->type,
                       (long long)k->value);
    }
    return engine_eval(engine_graph(c->engine), e->index, &spec,
                       &c->workspace, &ns, &det);
}

/* A finalized engine (and configuration with the default knobs) of
 * `graph`; NULL when the host is out of memory. */
static struct bk_body *
result_new(struct bk_body *graph, int64_t index, size_t ws)
{
    struct bk_body *engine = body_new(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    struct bk_body *cfg = body_new(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    struct bk_body *knob = NULL;

    if (engine_knob_count(index))
        knob = body_new(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR);
    if (engine == NULL || cfg == NULL ||
        (engine_knob_count(index) && knob == NULL)) {
        body_unref(engine), body_unref(cfg), body_unref(knob);
        return NULL;
    }
    engine->u.engine.graph = body_ref(graph);
    engine->u.engine.index = index;
    engine->u.engine.set_index = 1;
    cfg->u.cfg.engine = engine;
    cfg->u.cfg.workspace = ws;
    if (knob != NULL) {
        knob->u.knob.type = CUDNN_KNOB_TYPE_TILE_SIZE;
        knob->u.knob.value = 0;
        knob->u.knob.set_type = knob->u.knob.set_value = 1;
        cfg->u.cfg.knobs[cfg->u.cfg.nknobs++] = knob;
    }
    return cfg;
}

/* Whether engine a ranks after engine b: the Tensor Core engines first
 * (TF32 for FLOAT data, as cuDNN's heuristics put them on Ampere and
 * later), then the faster in modelled time, then the lower index. */
static int
ranks_after(int a, int b, const double *ns)
{
    if (engine_defs[a].tensor_core != engine_defs[b].tensor_core)
        return engine_defs[b].tensor_core;
    return ns[a] > ns[b];
}

/* The configurations that support the graph in ranking order (above);
 * FALLBACK: the FP32-core engines in index order. */
static cudnnStatus_t
fin_heur(struct bk_heur *h)
{
    double ns[BK_ENGINE_COUNT];
    size_t ws[BK_ENGINE_COUNT];
    int order[BK_ENGINE_COUNT], n = 0;

    if (h->graph == NULL || !h->set_mode)
        return ERR(CUDNN_STATUS_BAD_PARAM, "engine heuristics: the operation "
                   "graph and mode are required");
    if (h->mode != CUDNN_HEUR_MODE_INSTANT && h->mode != CUDNN_HEUR_MODE_B &&
        h->mode != CUDNN_HEUR_MODE_FALLBACK && h->mode != CUDNN_HEUR_MODE_A)
        return ERR(CUDNN_STATUS_BAD_PARAM, "engine heuristics: mode %d",
                   (int)h->mode);
    for (int e = 0; e < BK_ENGINE_COUNT; e++) {
        struct emu_dnn_conv_spec spec;
        int det;

        if (h->mode == CUDNN_HEUR_MODE_FALLBACK && engine_defs[e].tensor_core)
            continue;
        if (engine_eval(&h->graph->u.graph, e, &spec, &ws[e], &ns[e], &det) !=
            CUDNN_STATUS_SUCCESS)
            continue;
        int at = n++;

        while (h->mode != CUDNN_HEUR_MODE_FALLBACK && at > 0 &&
               ranks_after(order[at - 1], e, ns)) {
            order[at] = order[at - 1];
            at--;
        }
        order[at] = e;
    }
    for (int i = 0; i < n; i++) {
        h->results[i] = result_new(h->graph, order[i], ws[order[i]]);
        if (h->results[i] == NULL) {
            while (i-- > 0)
                body_unref(h->results[i]);
            return ERR(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED,
                       "engine heuristics: out of host memory");
        }
    }
    h->nresults = n;
    return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t
fin_plan(struct bk_plan *p)
{
    const struct bk_cfg *c;
    double ns;
    int det;
    cudnnStatus_t st;

    if (p->cfg == NULL)
        return ERR(CUDNN_STATUS_BAD_PARAM, "execution plan: the engine "
                   "configuration is required");
    c = &p->cfg->u.cfg;
    st = engine_eval(engine_graph(c->engine), c->engine->u.engine.index,
                     &p->spec, &p->workspace, &ns, &det);
    p->conv_workspace = p->workspace - engine_graph(c->engine)->virtual_bytes;
    p->alpha = engine_graph(c->engine)->alpha;
    p->beta = engine_graph(c->engine)->beta;
    return st;
}

static cudnnStatus_t
fin_pack(struct bk_pack *p)
{
    if (p->n_uids != p->n_ptrs)
        return ERR(CUDNN_STATUS_BAD_PARAM, "variant pack: %lld unique ids, "
                   "%lld pointers", (long long)p->n_uids,
                   (long long)p->n_ptrs);
    for (int64_t i = 0; i < p->n_uids; i++) {
        for (int64_t j = 0; j < i; j++) {
            if (p->uids[i] == p->uids[j])
                return ERR(CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES,
                           "variant pack: unique id %lld twice",
                           (long long)p->uids[i]);
        }
    }
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnBackendFinalize(cudnnBackendDescriptor_t descriptor)
{
    struct bk_desc *d = desc_of(descriptor);
    struct bk_body *b;
    cudnnStatus_t st;

    if (d == NULL)
        return ERR(CUDNN_STATUS_BAD_PARAM,
                   "cudnnBackendFinalize: not a backend descriptor");
    pthread_mutex_lock(&d->lock);
    b = d->body;
    if (d->finalized) {
        st = ERR(CUDNN_STATUS_BAD_PARAM,
                 "cudnnBackendFinalize: already finalized");
        goto out;
    }
    switch (d->type) {
    case CUDNN_BACKEND_TENSOR_DESCRIPTOR:
        st = fin_tensor(&b->u.tensor);
        break;
    case CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR:
        st = fin_conv(&b->u.conv);
        break;
    case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR:
        st = fin_graph(&b->u.graph);
        break;
    case CUDNN_BACKEND_ENGINE_DESCRIPTOR:
        st = fin_engine(&b->u.engine);
        break;
    case CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR:
        st = fin_knob(&b->u.knob);
        break;
    case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR:
        st = fin_cfg(&b->u.cfg);
        break;
    case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR:
        st = fin_heur(&b->u.heur);
        break;
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR:
        st = fin_plan(&b->u.plan);
        break;
    case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR:
        st = fin_pack(&b->u.pack);
        break;
    case CUDNN_BACKEND_KNOB_INFO_DESCRIPTOR:
        st = ERR(CUDNN_STATUS_BAD_PARAM, "cudnnBackendFinalize: knob "
                 "information is filled by cudnnBackendGetAttribute");
        break;
    case CUDNN_BACKEND_POINTWISE_DESCRIPTOR:
        st = fin_pw(&b->u.pw);
        break;
    case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
        st = fin_pw_op(&b->u.pw_op);
        break;
    default:
        st = fin_op(&b->u.op);
        break;
    }
    d->finalized = st == CUDNN_STATUS_SUCCESS;
out:
    pthread_mutex_unlock(&d->lock);
    return st;
}

/* ---- GetAttribute --------------------------------------------------------- */

struct get_args {
    cudnnBackendAttributeType_t type;
    int64_t requested;
    int64_t *count;
    void *array;
    const char *what;
};

/* n elements of `size` bytes of attribute type `type`: the count, and
 * the first min(requested, n) elements. */
static cudnnStatus_t
put(const struct get_args *a, cudnnBackendAttributeType_t type, size_t size,
    const void *src, int64_t n)
{
    if (a->type != type)
        return ERR(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE,
                   "%s: attribute type %d, %d expected", a->what,
                   (int)a->type, (int)type);
    if (a->count != NULL)
        *a->count = n;
    if (n > a->requested)
        n = a->requested;
    if (n > 0)
        memcpy(a->array, src, (size_t)n * size);
    return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t
put_i64(const struct get_args *a, int64_t v)
{
    return put(a, CUDNN_TYPE_INT64, sizeof(v), &v, 1);
}

static cudnnStatus_t
put_bool(const struct get_args *a, int v)
{
    bool b = v;

    return put(a, CUDNN_TYPE_BOOLEAN, sizeof(b), &b, 1);
}

static cudnnStatus_t
put_scale(const struct get_args *a, double v)
{
    float f = (float)v;

    if (a->type == CUDNN_TYPE_FLOAT)
        return put(a, CUDNN_TYPE_FLOAT, sizeof(f), &f, 1);
    return put(a, CUDNN_TYPE_DOUBLE, sizeof(v), &v, 1);
}

/* Descriptors: the caller's first min(requested, n) descriptors, each of
 * the type of the body it receives, become finalized descriptors of
 * those bodies. */
static cudnnStatus_t
put_descs(const struct get_args *a, struct bk_body *const *bodies, int64_t n)
{
    cudnnBackendDescriptor_t *out = a->array;
    int64_t m = n < a->requested ? n : a->requested;

    if (a->type != CUDNN_TYPE_BACKEND_DESCRIPTOR)
        return ERR(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE,
                   "%s: attribute type %d, BACKEND_DESCRIPTOR expected",
                   a->what, (int)a->type);
    for (int64_t i = 0; i < m; i++) {
        struct bk_desc *d = desc_of(out[i]);

        if (d == NULL)
            return ERR(CUDNN_STATUS_BAD_PARAM, "%s: element %lld is not a "
                       "backend descriptor", a->what, (long long)i);
        if (d->type != bodies[i]->type)
            return ERR(CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE, "%s: element "
                       "%lld has type %d, %d expected", a->what, (long long)i,
                       (int)d->type, (int)bodies[i]->type);
    }
    for (int64_t i = 0; i < m; i++) {
        struct bk_desc *d = desc_of(out[i]);
        struct bk_body *old;

        pthread_mutex_lock(&d->lock);
        old = d->body;
        d->body = body_ref(bodies[i]);
        d->finalized = 1;
        pthread_mutex_unlock(&d->lock);
        body_unref(old);
    }
    if (a->count != NULL)
        *a->count = n;
    return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t
put_desc(const struct get_args *a, struct bk_body *b)
{
    return put_descs(a, &b, b != NULL);
}

static cudnnStatus_t
no_attr(const char *what, cudnnBackendAttributeName_t name)
{
    return ERR(CUDNN_STATUS_BAD_PARAM, "%s: attribute %d is not one of "
               "this descriptor's", what, (int)name);
}

static cudnnStatus_t
get_tensor(const struct bk_tensor *t, cudnnBackendAttributeName_t name,
           const struct get_args *a)
{
    switch (name) {
    case CUDNN_ATTR_TENSOR_DATA_TYPE:
        return put(a, CUDNN_TYPE_DATA_TYPE, sizeof(t->type), &t->type, 1);
    case CUDNN_ATTR_TENSOR_DIMENSIONS:
        return put(a, CUDNN_TYPE_INT64, sizeof(int64_t), t->dim, t->nb_dims);
    case CUDNN_ATTR_TENSOR_STRIDES:
        return put(a, CUDNN_TYPE_INT64, sizeof(int64_t), t->stride,
                   t->nb_strides);
    case CUDNN_ATTR_TENSOR_UNIQUE_ID:
        return put_i64(a, t->uid);
    case CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT:
        return put_i64(a, t->align);
    case CUDNN_ATTR_TENSOR_IS_VIRTUAL:
        return put_bool(a, t->is_virtual);
    case CUDNN_ATTR_TENSOR_IS_BY_VALUE:
        return put_bool(a, t->by_value);
    case CUDNN_ATTR_TENSOR_VECTOR_COUNT:
        return put_i64(a, t->vec_count);
    case CUDNN_ATTR_TENSOR_VECTORIZED_DIMENSION:
        return put_i64(a, t->vec_dim);
    case CUDNN_ATTR_TENSOR_REORDERING_MODE:
        return put(a, CUDNN_TYPE_TENSOR_REORDERING_MODE, sizeof(t->reorder),
                   &t->reorder, 1);
    default:
        return no_attr(a->what, name);
    }
}

static cudnnStatus_t
get_conv(const struct bk_conv *c, cudnnBackendAttributeName_t name,
         const struct get_args *a)
{
    switch (name) {
    case CUDNN_ATTR_CONVOLUTION_COMP_TYPE:
        return put(a, CUDNN_TYPE_DATA_TYPE, sizeof(c->comp), &c->comp, 1);
    case CUDNN_ATTR_CONVOLUTION_CONV_MODE:
        return put(a, CUDNN_TYPE_CONVOLUTION_MODE, sizeof(c->mode), &c->mode,
                   1);
    case CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS:
        return put_i64(a, c->nsp);
    case CUDNN_ATTR_CONVOLUTION_DILATIONS:
        return put(a, CUDNN_TYPE_INT64, sizeof(int64_t), c->dil, c->n_dil);
    case CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES:
        return put(a, CUDNN_TYPE_INT64, sizeof(int64_t), c->stride,
                   c->n_stride);
    case CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS:
        return put(a, CUDNN_TYPE_INT64, sizeof(int64_t), c->pre, c->n_pre);
    case CUDNN_ATTR_CONVOLUTION_POST_PADDINGS:
        return put(a, CUDNN_TYPE_INT64, sizeof(int64_t), c->post, c->n_post);
    default:
        return no_attr(a->what, name);
    }
}

static cudnnStatus_t
get_op(const struct bk_body *b, cudnnBackendAttributeName_t name,
       const struct get_args *a)
{
    const struct bk_conv_op *op = &b->u.op;
    struct bk_body *const desc[6] = { NULL, NULL, op->conv, op->x, op->w,
                                      op->y };
    int role = op_role(b->type, name);
    cudnnBackendAttributeType_t set_as;

    /* A scale set as FLOAT and read as DOUBLE is refused with BAD_PARAM
     * (cuDNN 9.19 on an H200, docs/gpu-results.md); the other way round
     * is taken to be refused alike. */
    switch (role) {
    case 0:
    case 1:
        set_as = role == 0 ? op->alpha_as : op->beta_as;
        if (set_as != 0 && set_as != a->type)
            return ERR(CUDNN_STATUS_BAD_PARAM, "%s: %s set as attribute "
                       "type %d, read as %d", a->what,
                       role == 0 ? "alpha" : "beta", (int)set_as,
                       (int)a->type);
        return put_scale(a, role == 0 ? op->alpha : op->beta);
    case -1:
        return no_attr(a->what, name);
    default:
        return put_desc(a, desc[role]);
    }
}

static cudnnStatus_t
get_pw(const struct bk_pw *p, cudnnBackendAttributeName_t name,
       const struct get_args *a)
{
    switch (name) {
    case CUDNN_ATTR_POINTWISE_MODE:
        return put(a, CUDNN_TYPE_POINTWISE_MODE, sizeof(p->mode), &p->mode, 1);
    case CUDNN_ATTR_POINTWISE_MATH_PREC:
        return put(a, CUDNN_TYPE_DATA_TYPE, sizeof(p->prec), &p->prec, 1);
    case CUDNN_ATTR_POINTWISE_NAN_PROPAGATION:
        return put(a, CUDNN_TYPE_NAN_PROPOGATION, sizeof(p->nan), &p->nan, 1);
    case CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP:
        return put_scale(a, p->lower_clip);
    case CUDNN_ATTR_POINTWISE_RELU_UPPER_CLIP:
        return put_scale(a, p->upper_clip);
    case CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP_SLOPE:
        return put_scale(a, p->lower_slope);
    case CUDNN_ATTR_POINTWISE_ELU_ALPHA:
        return put_scale(a, p->elu_alpha);
    case CUDNN_ATTR_POINTWISE_SOFTPLUS_BETA:
        return put_scale(a, p->softplus_beta);
    case CUDNN_ATTR_POINTWISE_SWISH_BETA:
        return put_scale(a, p->swish_beta);
    case CUDNN_ATTR_POINTWISE_AXIS:
        return put_i64(a, p->axis);
    default:
        return no_attr(a->what, name);
    }
}

static cudnnStatus_t
get_pw_op(const struct bk_pw_op *op, cudnnBackendAttributeName_t name,
          const struct get_args *a)
{
    switch (name) {
    case CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR:
        return put_desc(a, op->pw);
    case CUDNN_ATTR_OPERATION_POINTWISE_XDESC:
        return put_desc(a, op->x);
    case CUDNN_ATTR_OPERATION_POINTWISE_BDESC:
        return put_desc(a, op->b);
    case CUDNN_ATTR_OPERATION_POINTWISE_YDESC:
        return put_desc(a, op->y);
    case CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1:
        return put_scale(a, op->alpha1);
    case CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2:
        return put_scale(a, op->alpha2);
    default:
        return no_attr(a->what, name);
    }
}

static cudnnStatus_t
get_graph(const struct bk_graph *g, cudnnBackendAttributeName_t name,
          const struct get_args *a)
{
    switch (name) {
    /* cuDNN 9.19 gives a graph's operations back neither as a count nor as
     * an array, nor its handle: NOT_SUPPORTED (an H200,
     * docs/gpu-results.md). */
    case CUDNN_ATTR_OPERATIONGRAPH_OPS:
    case CUDNN_ATTR_OPERATIONGRAPH_HANDLE:
        return ERR(CUDNN_STATUS_NOT_SUPPORTED, "%s: attribute %d of an "
                   "operation graph is not given back", a->what, (int)name);
    case CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT:
        return put_i64(a, BK_ENGINE_COUNT);
    case CUDNN_ATTR_OPERATIONGRAPH_IS_DYNAMIC_SHAPE_ENABLED:
        return put_bool(a, g->dynamic);
    default:
        return no_attr(a->what, name);
    }
}

/* The engine's knob information, as bodies made for the call. */
static cudnnStatus_t
get_knob_info(const struct bk_engine *e, const struct get_args *a)
{
    struct bk_body *info = NULL;
    cudnnStatus_t st;

    if (engine_knob_count(e->index)) {
        info = body_new(CUDNN_BACKEND_KNOB_INFO_DESCRIPTOR);
        if (info == NULL)
            return ERR(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED,
                       "%s: out of host memory", a->what);
        info->u.knob.type = CUDNN_KNOB_TYPE_TILE_SIZE;
        info->u.knob.min = 0;
        info->u.knob.max = KNOB_TILE_MAX;
        info->u.knob.stride = 1;
    }
    st = put_descs(a, &info, info != NULL);
    body_unref(info);
    return st;
}

static cudnnStatus_t
get_engine(const struct bk_engine *e, cudnnBackendAttributeName_t name,
           const struct get_args *a)
{
    cudnnBackendNumericalNote_t notes[2];
    struct emu_dnn_conv_spec spec;
    int32_t sm = (int32_t)e->sm_target;
    int n = 0, det = 1;
    size_t ws;
    double ns;

    switch (name) {
    case CUDNN_ATTR_ENGINE_OPERATION_GRAPH:
        return put_desc(a, e->graph);
    case CUDNN_ATTR_ENGINE_GLOBAL_INDEX:
        return put_i64(a, e->index);
    case CUDNN_ATTR_ENGINE_SM_COUNT_TARGET:
        return put(a, CUDNN_TYPE_INT32, sizeof(sm), &sm, 1);
    case CUDNN_ATTR_ENGINE_KNOB_INFO:
        return get_knob_info(e, a);
    case CUDNN_ATTR_ENGINE_NUMERICAL_NOTE:
        (void)engine_eval(&e->graph->u.graph, e->index, &spec, &ws, &ns,
                          &det);
        if (engine_defs[e->index].tensor_core)
            notes[n++] = CUDNN_NUMERICAL_NOTE_TENSOR_CORE;
        if (!det)
            notes[n++] = CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC;
        return put(a, CUDNN_TYPE_NUMERICAL_NOTE, sizeof(notes[0]), notes, n);
    case CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE: {
        /* The runtime-fusion engines compile their kernels at run time. */
        cudnnBackendBehaviorNote_t rtc = CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION;

        return put(a, CUDNN_TYPE_BEHAVIOR_NOTE, sizeof(rtc), &rtc,
                   engine_defs[e->index].fused);
    }
    case CUDNN_ATTR_ENGINE_LAYOUT_INFO:
        return put_descs(a, NULL, 0);
    default:
        return no_attr(a->what, name);
    }
}

static cudnnStatus_t
get_knob(const struct bk_body *b, cudnnBackendAttributeName_t name,
         const struct get_args *a)
{
    const struct bk_knob *k = &b->u.knob;
    int info = b->type == CUDNN_BACKEND_KNOB_INFO_DESCRIPTOR;

    if (name == (info ? CUDNN_ATTR_KNOB_INFO_TYPE
                      : CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE))
        return put(a, CUDNN_TYPE_KNOB_TYPE, sizeof(k->type), &k->type, 1);
    if (!info && name == CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE)
        return put_i64(a, k->value);
    if (info && name == CUDNN_ATTR_KNOB_INFO_MAXIMUM_VALUE)
        return put_i64(a, k->max);
    if (info && name == CUDNN_ATTR_KNOB_INFO_MINIMUM_VALUE)
        return put_i64(a, k->min);
    if (info && name == CUDNN_ATTR_KNOB_INFO_STRIDE)
        return put_i64(a, k->stride);
    return no_attr(a->what, name);
}

static cudnnStatus_t
get_cfg(const struct bk_cfg *c, cudnnBackendAttributeName_t name,
        const struct get_args *a)
{
    switch (name) {
    case CUDNN_ATTR_ENGINECFG_ENGINE:
        return put_desc(a, c->engine);
    case CUDNN_ATTR_ENGINECFG_KNOB_CHOICES:
        return put_descs(a, c->knobs, c->nknobs);
    case CUDNN_ATTR_ENGINECFG_INTERMEDIATE_INFO:
        return put_descs(a, NULL, 0);
    case CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE:
        return put_i64(a, (int64_t)c->workspace);
    default:
        return no_attr(a->what, name);
    }
}

static cudnnStatus_t
get_heur(const struct bk_heur *h, cudnnBackendAttributeName_t name,
         const struct get_args *a)
{
    int32_t sm = (int32_t)h->sm_target;

    switch (name) {
    case CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH:
        return put_desc(a, h->graph);
    case CUDNN_ATTR_ENGINEHEUR_MODE:
        return put(a, CUDNN_TYPE_HEUR_MODE, sizeof(h->mode), &h->mode, 1);
    case CUDNN_ATTR_ENGINEHEUR_RESULTS:
        return put_descs(a, h->results, h->nresults);
    case CUDNN_ATTR_ENGINEHEUR_SM_COUNT_TARGET:
        return put(a, CUDNN_TYPE_INT32, sizeof(sm), &sm, 1);
    default:
        return no_attr(a->what, name);
    }
}

static cudnnStatus_t
get_plan(const struct bk_plan *p, cudnnBackendAttributeName_t name,
         const struct get_args *a)
{
    switch (name) {
    case CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG:
        return put_desc(a, p->cfg);
    case CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE:
        return put_i64(a, (int64_t)p->workspace);
    case CUDNN_ATTR_EXECUTION_PLAN_HANDLE:
        return put(a, CUDNN_TYPE_HANDLE, sizeof(p->handle), &p->handle,
                   p->set_handle);
    case CUDNN_ATTR_EXECUTION_PLAN_COMPUTED_INTERMEDIATE_UIDS:
    case CUDNN_ATTR_EXECUTION_PLAN_RUN_ONLY_INTERMEDIATE_UIDS:
        return put(a, CUDNN_TYPE_INT64, sizeof(int64_t), NULL, 0);
    case CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION:
        return ERR(CUDNN_STATUS_NOT_SUPPORTED, "%s: the plan's JSON form is "
                   "not emulated", a->what);
    default:
        return no_attr(a->what, name);
    }
}

static cudnnStatus_t
get_pack(const struct bk_pack *p, cudnnBackendAttributeName_t name,
         const struct get_args *a)
{
    switch (name) {
    case CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS:
        return put(a, CUDNN_TYPE_INT64, sizeof(int64_t), p->uids, p->n_uids);
    case CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS:
        return put(a, CUDNN_TYPE_VOID_PTR, sizeof(void *), p->ptrs,
                   p->n_ptrs);
    case CUDNN_ATTR_VARIANT_PACK_INTERMEDIATES:
        return put(a, CUDNN_TYPE_VOID_PTR, sizeof(void *), p->inter,
                   p->n_inter);
    case CUDNN_ATTR_VARIANT_PACK_WORKSPACE:
        return put(a, CUDNN_TYPE_VOID_PTR, sizeof(void *), &p->workspace, 1);
    default:
        return no_attr(a->what, name);
    }
}

cudnnStatus_t
cudnnBackendGetAttribute(cudnnBackendDescriptor_t const descriptor,
                         cudnnBackendAttributeName_t attributeName,
                         cudnnBackendAttributeType_t attributeType,
                         int64_t requestedElementCount,
                         int64_t *elementCount, void *arrayOfElements)
{
    struct get_args a = { attributeType, requestedElementCount, elementCount,
                          arrayOfElements, "cudnnBackendGetAttribute" };
    struct bk_desc *d = desc_of(descriptor);
    struct bk_body *b;
    cudnnStatus_t st;

    if (d == NULL)
        return ERR(CUDNN_STATUS_BAD_PARAM, "%s: not a backend descriptor",
                   a.what);
    /* A NULL array is a count query whatever the requested count:
     * cudnn-frontend asks each engine's numerical and behaviour notes with
     * the largest count and no array before it builds any plan
     * (include/cudnn_frontend/plans.h, NVIDIA/cudnn-frontend), so cuDNN
     * answers the count then. With no place for the count either there is
     * nothing to answer. */
    if (requestedElementCount < 0 ||
        (arrayOfElements == NULL && requestedElementCount > 0 &&
         elementCount == NULL))
        return ERR(CUDNN_STATUS_BAD_PARAM_NULL_POINTER,
                   "%s: %lld elements requested into %p", a.what,
                   (long long)requestedElementCount, arrayOfElements);
    if (arrayOfElements == NULL)
        a.requested = 0;
    /* A reference to the finalized body, then no lock held: receiving
     * descriptors are locked one at a time. */
    pthread_mutex_lock(&d->lock);
    b = d->finalized ? body_ref(d->body) : NULL;
    pthread_mutex_unlock(&d->lock);
    if (b == NULL)
        return ERR(CUDNN_STATUS_NOT_INITIALIZED, "%s: descriptor not "
                   "finalized", a.what);
    switch (b->type) {
    case CUDNN_BACKEND_TENSOR_DESCRIPTOR:
        st = get_tensor(&b->u.tensor, attributeName, &a);
        break;
    case CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR:
        st = get_conv(&b->u.conv, attributeName, &a);
        break;
    case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR:
        st = get_graph(&b->u.graph, attributeName, &a);
        break;
    case CUDNN_BACKEND_ENGINE_DESCRIPTOR:
        st = get_engine(&b->u.engine, attributeName, &a);
        break;
    case CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR:
    case CUDNN_BACKEND_KNOB_INFO_DESCRIPTOR:
        st = get_knob(b, attributeName, &a);
        break;
    case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR:
        st = get_cfg(&b->u.cfg, attributeName, &a);
        break;
    case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR:
        st = get_heur(&b->u.heur, attributeName, &a);
        break;
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR:
        st = get_plan(&b->u.plan, attributeName, &a);
        break;
    case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR:
        st = get_pack(&b->u.pack, attributeName, &a);
        break;
    case CUDNN_BACKEND_POINTWISE_DESCRIPTOR:
        st = get_pw(&b->u.pw, attributeName, &a);
        break;
    case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
        st = get_pw_op(&b->u.pw_op, attributeName, &a);
        break;
    default:
        st = get_op(b, attributeName, &a);
        break;
    }
    body_unref(b);
    return st;
}

/* ---- Execute -------------------------------------------------------------- */

/* The device pointer the pack gives tensor `t`: BAD_PARAM when the pack
 * has no entry for its unique id, NULL_POINTER for a NULL one,
 * MISALIGNED_POINTER when it breaks the tensor's byte alignment. */
static cudnnStatus_t
pack_pointer(const struct bk_pack *p, const struct bk_tensor *t, void **ptr)
{
    for (int64_t i = 0; i < p->n_uids; i++) {
        if (p->uids[i] != t->uid)
            continue;
        *ptr = p->ptrs[i];
        if (*ptr == NULL)
            return ERR(CUDNN_STATUS_BAD_PARAM_NULL_POINTER,
                       "cudnnBackendExecute: NULL pointer for tensor %lld",
                       (long long)t->uid);
        if ((uintptr_t)*ptr % (uintptr_t)t->align != 0)
            return ERR(CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER,
                       "cudnnBackendExecute: tensor %lld at %p is not "
                       "%lld-byte aligned", (long long)t->uid, *ptr,
                       (long long)t->align);
        return CUDNN_STATUS_SUCCESS;
    }
    return ERR(CUDNN_STATUS_BAD_PARAM, "cudnnBackendExecute: the variant "
               "pack has no pointer for tensor %lld", (long long)t->uid);
}

/* One pointwise operation of a fused plan, queued after the convolution:
 * y = op(alpha1 * x[, alpha2 * b]), inputs broadcast, in FP32. */
struct pw_job {
    struct emu_dnn_view x, b, y;
    int has_b;
    struct bk_pw pw;
    float alpha1, alpha2;
};

static float
pw_sigmoid(float v)
{
    return 1.0f / (1.0f + expf(-v));
}

/* The mode's value (pw_emulated's modes) of a = alpha1 * x, b = alpha2 *
 * b, as the operation's reference documents each: RELU_FWD clips to the
 * lower and upper clips, with the slope below a lower clip of 0 (leaky);
 * ELU alpha * (e^a - 1) below 0; GELU a * Phi(a) with the exact normal
 * CDF; SOFTPLUS log(1 + e^(beta a)) / beta; SWISH a * sigmoid(beta a). */
static float
pw_value(const struct bk_pw *p, float a, float b)
{
    int nan_out = p->nan == CUDNN_PROPAGATE_NAN && (isnan(a) || isnan(b));

    switch (p->mode) {
    case CUDNN_POINTWISE_ADD: return a + b;
    case CUDNN_POINTWISE_SUB: return a - b;
    case CUDNN_POINTWISE_MUL: return a * b;
    case CUDNN_POINTWISE_DIV: return a / b;
    case CUDNN_POINTWISE_MAX: return nan_out ? NAN : fmaxf(a, b);
    case CUDNN_POINTWISE_MIN: return nan_out ? NAN : fminf(a, b);
    case CUDNN_POINTWISE_IDENTITY: return a;
    case CUDNN_POINTWISE_ABS: return fabsf(a);
    case CUDNN_POINTWISE_NEG: return -a;
    case CUDNN_POINTWISE_EXP: return expf(a);
    case CUDNN_POINTWISE_LOG: return logf(a);
    case CUDNN_POINTWISE_SQRT: return sqrtf(a);
    case CUDNN_POINTWISE_RSQRT: return 1.0f / sqrtf(a);
    case CUDNN_POINTWISE_RECIPROCAL: return 1.0f / a;
    case CUDNN_POINTWISE_RELU_FWD: {
        float lo = (float)p->lower_clip, hi = (float)p->upper_clip;

        if (nan_out)
            return NAN;
        if (a >= hi)
            return hi;
        if (a > lo)
            return a;
        return p->lower_slope != 0.0 ? (float)p->lower_slope * a : lo;
    }
    case CUDNN_POINTWISE_TANH_FWD: return tanhf(a);
    case CUDNN_POINTWISE_SIGMOID_FWD: return pw_sigmoid(a);
    case CUDNN_POINTWISE_ELU_FWD:
        return a > 0.0f ? a : (float)p->elu_alpha * expm1f(a);
    case CUDNN_POINTWISE_GELU_FWD:
        return 0.5f * a * (1.0f + erff(a * (float)M_SQRT1_2));
    case CUDNN_POINTWISE_SOFTPLUS_FWD: {
        float beta = (float)p->softplus_beta;

        return log1pf(expf(beta * a)) / beta;
    }
    case CUDNN_POINTWISE_SWISH_FWD:
        return a * pw_sigmoid((float)p->swish_beta * a);
    default:
        return NAN; /* not reached: the engines take pw_emulated's */
    }
}

static CUresult
pw_run(void *arg)
{
    const struct pw_job *j = arg;
    const struct emu_dnn_view *y = &j->y;
    float *xp = emu_dnn_view_at(&j->x), *yp = emu_dnn_view_at(y);
    float *bp = j->has_b ? emu_dnn_view_at(&j->b) : NULL;
    size_t n = emu_dnn_view_count(y);
    int coord[CUDNN_DIM_MAX] = { 0 };
    int64_t xstep[CUDNN_DIM_MAX], bstep[CUDNN_DIM_MAX];
    int64_t xi = 0, bi = 0, yi = 0;

    if (xp == NULL || yp == NULL || (j->has_b && bp == NULL))
        return emu_op_fail(CUDA_ERROR_ILLEGAL_ADDRESS, "cudnnBackendExecute",
                           "a pointwise operation's tensor is not in "
                           "device memory");
    /* Inputs broadcast along each dimension in which they have size 1. */
    for (int d = 0; d < y->nb_dims; d++) {
        xstep[d] = j->x.dim[d] != 1 ? j->x.stride[d] : 0;
        bstep[d] = j->has_b && j->b.dim[d] != 1 ? j->b.stride[d] : 0;
    }
    /* y's elements in row-major order, the offsets carried from one to
     * the next. */
    for (size_t lin = 0; lin < n; lin++) {
        float b = bp != NULL ? j->alpha2 * bp[bi] : 0.0f;

        yp[yi] = pw_value(&j->pw, j->alpha1 * xp[xi], b);
        for (int d = y->nb_dims - 1; d >= 0; d--) {
            yi += y->stride[d];
            xi += xstep[d];
            bi += bstep[d];
            if (++coord[d] < y->dim[d])
                break;
            yi -= (int64_t)y->dim[d] * y->stride[d];
            xi -= (int64_t)y->dim[d] * xstep[d];
            bi -= (int64_t)y->dim[d] * bstep[d];
            coord[d] = 0;
        }
    }
    emu_dnn_view_wrote(y);
    return CUDA_SUCCESS;
}

/* The device address of tensor t in a fused plan's execution: its part
 * of the workspace when virtual, else the pack's pointer (pack_pointer's
 * statuses). */
static cudnnStatus_t
fused_pointer(const struct bk_graph *g, const struct bk_plan *p,
              const struct bk_pack *pack, const struct bk_body *t,
              CUdeviceptr *out)
{
    void *ptr = NULL;
    cudnnStatus_t st;

    if (t->u.tensor.is_virtual) {
        for (int i = 0; i < g->nvirtual; i++) {
            if (g->virtual_tensor[i] == t) {
                *out = (CUdeviceptr)(uintptr_t)pack->workspace +
                       p->conv_workspace + g->virtual_at[i];
                return CUDNN_STATUS_SUCCESS;
            }
        }
        return ERR(CUDNN_STATUS_INTERNAL_ERROR, "cudnnBackendExecute: "
                   "virtual tensor %lld has no place",
                   (long long)t->u.tensor.uid);
    }
    st = pack_pointer(pack, &t->u.tensor, &ptr);
    *out = (CUdeviceptr)(uintptr_t)ptr;
    return st;
}

/* The pointwise operations of a fused plan, queued in order after its
 * convolution (one modelled kernel each). */
static cudnnStatus_t
fused_enqueue(const struct emu_dnn_config *cfg, const struct bk_graph *g,
              const struct bk_plan *p, const struct bk_pack *pack)
{
    for (int i = 0; i < g->npw; i++) {
        const struct bk_pw_op *op = &g->ops[g->pw_order[i]]->u.pw_op;
        struct pw_job *job = calloc(1, sizeof(*job));
        struct emu_op eop = { 0 };
        double bytes;
        cudnnStatus_t st;

        if (job == NULL)
            return ERR(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED,
                       "cudnnBackendExecute: out of host memory");
        view_of(&op->x->u.tensor, &job->x);
        view_of(&op->y->u.tensor, &job->y);
        st = fused_pointer(g, p, pack, op->x, &job->x.ptr);
        if (st == CUDNN_STATUS_SUCCESS)
            st = fused_pointer(g, p, pack, op->y, &job->y.ptr);
        if (st == CUDNN_STATUS_SUCCESS && op->b != NULL) {
            view_of(&op->b->u.tensor, &job->b);
            job->has_b = 1;
            st = fused_pointer(g, p, pack, op->b, &job->b.ptr);
        }
        if (st != CUDNN_STATUS_SUCCESS) {
            free(job);
            return st;
        }
        job->pw = op->pw->u.pw;
        job->alpha1 = (float)op->alpha1;
        job->alpha2 = (float)op->alpha2;
        bytes = emu_dnn_view_bytes(&job->x) + emu_dnn_view_bytes(&job->y) +
                (job->has_b ? emu_dnn_view_bytes(&job->b) : 0.0);
        eop.name = "cudnnBackendExecute";
        eop.run = pw_run;
        eop.release = free;
        eop.arg = job;
        eop.model_ns = emu_model_ns(0.0, EMU_PREC_FP32, bytes);
        st = emu_dnn_enqueue(cfg, &eop);
        if (st != CUDNN_STATUS_SUCCESS)
            return st;
    }
    return CUDNN_STATUS_SUCCESS;
}

/* Every pointer a fused plan needs is in the pack: checked before any
 * work is queued. */
static cudnnStatus_t
fused_check(const struct bk_graph *g, const struct bk_plan *p,
            const struct bk_pack *pack)
{
    for (int i = 0; i < g->nops; i++) {
        const struct bk_body *t[3];
        int n;

        op_tensors(g->ops[i], t, &n);
        for (int k = 0; k < n; k++) {
            CUdeviceptr at;
            cudnnStatus_t st = fused_pointer(g, p, pack, t[k], &at);

            if (st != CUDNN_STATUS_SUCCESS)
                return st;
        }
    }
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnBackendExecute(cudnnHandle_t handle,
                    cudnnBackendDescriptor_t executionPlan,
                    cudnnBackendDescriptor_t variantPack)
{
    const char *api = "cudnnBackendExecute";
    struct bk_body *plan = NULL, *pack = NULL;
    struct emu_dnn_conv_spec spec;
    struct emu_dnn_config cfg;
    const struct bk_conv_op *op;
    const struct bk_graph *g;
    const struct bk_plan *p;
    CUdeviceptr ptr[3];
    cudnnStatus_t st, fault;
    int partial = 0;

    st = emu_dnn_config(handle, &cfg);
    if (st == CUDNN_STATUS_SUCCESS)
        st = finalized_body(executionPlan,
                            CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, 0, &plan,
                            api);
    if (st == CUDNN_STATUS_SUCCESS)
        st = finalized_body(variantPack, CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR,
                            0, &pack, api);
    if (st != CUDNN_STATUS_SUCCESS)
        goto out;
    p = &plan->u.plan;
    g = engine_graph(p->cfg->u.cfg.engine);
    op = &g->ops[g->fused ? g->conv_at : 0]->u.op;
    spec = p->spec;
    if (g->fused) {
        st = fused_check(g, p, &pack->u.pack);
        if (st != CUDNN_STATUS_SUCCESS)
            goto out;
    }
    st = fused_pointer(g, p, &pack->u.pack, op->x, &ptr[0]);
    if (st == CUDNN_STATUS_SUCCESS)
        st = fused_pointer(g, p, &pack->u.pack, op->w, &ptr[1]);
    if (st == CUDNN_STATUS_SUCCESS)
        st = fused_pointer(g, p, &pack->u.pack, op->y, &ptr[2]);
    if (st != CUDNN_STATUS_SUCCESS)
        goto out;
    if (p->workspace > 0 && pack->u.pack.workspace == NULL) {
        st = ERR(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "%s: the plan needs "
                 "%zu bytes of workspace and the pack has none", api,
                 p->workspace);
        goto out;
    }
    fault = emu_dnn_fault_partial(api, &partial);
    if (fault != CUDNN_STATUS_SUCCESS && !partial) {
        st = fault;
        goto out;
    }
    spec.x.ptr = ptr[0];
    spec.w.ptr = ptr[1];
    spec.y.ptr = ptr[2];
    st = emu_dnn_conv_enqueue(&cfg, api, &spec, (float)p->alpha,
                              (float)p->beta,
                              (CUdeviceptr)(uintptr_t)pack->u.pack.workspace,
                              partial);
    /* A partial fault leaves the operations after the convolution out. */
    if (st == CUDNN_STATUS_SUCCESS && g->fused && !partial)
        st = fused_enqueue(&cfg, g, p, &pack->u.pack);
    /* A partial fault: the part is queued, the call still fails. */
    if (fault != CUDNN_STATUS_SUCCESS)
        st = fault;
out:
    body_unref(plan);
    body_unref(pack);
    return st;
}
