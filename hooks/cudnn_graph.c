/* cuDNN backend (graph) API hook: at cudnnBackendExecute, an execution
 * plan whose operation graph is one FP32 convolution (forward, backward
 * data or backward filter; FP32 x, w and y, FP32 compute) becomes a
 * convolution descriptor, is decided like the legacy convolutions and
 * runs on the shared converted path (hooks/conv_hook.c): the shim's twin
 * plan (its own tensors in the mode's type and its channels-last layout,
 * FP32 compute, an engine of the heuristics with cuDNN's Tensor Core
 * note) on the shim's own handle with a variant pack that maps the
 * program's unique ids to the shim's buffers; allow-conversion, a math
 * type the backend API does not have, runs as fp16. A plan of one FP32
 * forward convolution fused with pointwise operations (a bias, an
 * activation: a graph the twin cannot reproduce) is the original call,
 * counted FP32 for the reason fused-graph. Everything else is the
 * original call.
 *
 * cuDNN 9 does not give a graph's operations back, so the shim keeps
 * what the program sets on its descriptors (cudnn_graph_mirror.c, fed by
 * the creation, attribute and destruction hooks below): an operation
 * graph is read from it when it is finalized (its one convolution: the
 * operation, tensors and convolution), and a plan when it is finalized,
 * as the graph its engine configuration builds (the program's engine's,
 * or the heuristics' that filled the configuration) with its workspace
 * and engine notes (cuDNN's answers). What a plan is gets cached by its
 * address, and creating, finalizing or destroying a descriptor at that
 * address forgets it; a plan not in the table at execution is read
 * again. A plan whose graph the shim did not see built (another
 * release's, or built while the shim's tables were full) runs as the
 * program made it, uncounted. The twin plans, their cache and the
 * backend issuer are cudnn_graph_plans.c's. */
#include "cudnn_graph_mirror.h"
#include "cudnn_graph_real.h"
#include "cudnn_graph_plans.h"

#include "base/caller.h"
#include "base/log.h"
#include "base/lru.h"
#include "base/resolve.h"
#include "base/shim.h"
#include "conv_hook.h"
#include "decide/site.h"
#include "device/device.h"
#include "measure/stats.h"
#include "process/process.h"
#include "run/conv.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define AMP_EXPORT __attribute__((visibility("default")))
#define AMP_CUDNN_SONAME "libcudnn.so.9"

/* Plans whose analysis the process keeps: a model's, a plan per layer
 * and direction. */
#define AMP_GRAPH_PLANS 1024
/* Variant pack entries the shim reads. */
#define AMP_GRAPH_PACK_MAX 64

/* ---- The real functions --------------------------------------------------- */

struct amp_graph_fns amp_graph_fn;

#define AMP_NAME_STRING(ret, name, params) #name,
static const char *const amp_graph_names[] = {
    AMP_CUDNN_GRAPH_SYMBOLS(AMP_NAME_STRING)};
#undef AMP_NAME_STRING

#define AMP_REAL_SLOT(ret, name, params) (void **)&amp_graph_fn.name,
static void **const amp_graph_slots[] = {
    AMP_CUDNN_GRAPH_SYMBOLS(AMP_REAL_SLOT)};
#undef AMP_REAL_SLOT

#define AMP_GRAPH_NSYMBOLS                                                   \
    ((int)(sizeof amp_graph_names / sizeof *amp_graph_names))

static pthread_once_t amp_graph_once = PTHREAD_ONCE_INIT;
int amp_graph_complete;
/* 1 once the real functions are resolved and the shim is disabled. */
static atomic_int amp_graph_bypass;

static void
amp_graph_resolve(void)
{
    amp_graph_complete = amp_resolve_all(AMP_CUDNN_SONAME, amp_graph_names,
                                         amp_graph_slots,
                                         AMP_GRAPH_NSYMBOLS) == 0;
    atomic_store_explicit(&amp_graph_bypass, amp_process_start()->disabled,
                          memory_order_release);
}

/* 1 when the shim watches the calls (not disabled); the real functions
 * are resolved either way. */
static int
amp_graph_watching(void)
{
    if (atomic_load_explicit(&amp_graph_bypass, memory_order_acquire))
        return 0;
    amp_process_start(); /* the log is open before resolution reports */
    pthread_once(&amp_graph_once, amp_graph_resolve);
    return !atomic_load_explicit(&amp_graph_bypass, memory_order_acquire);
}

struct amp_api_stats amp_graph_stats =
    AMP_API_STATS_INIT("cudnnBackendExecute");

/* The hooked functions, in list order (their real functions' slots). */
enum amp_graph_api {
#define AMP_API_ENUM(ret, name, params) AMP_GRAPH_##name,
    AMP_CUDNN_GRAPH_HOOKED(AMP_API_ENUM)
#undef AMP_API_ENUM
};

/* The real function api that the call returning to ret runs as the
 * program made it, and in *route how it is served (base/caller.h):
 * another cuDNN release's (its descriptors are its own: passed through
 * untouched), else the one the shim resolved; NULL when there is none. */
static void *
amp_graph_real(enum amp_graph_api api, const void *ret,
               struct amp_route *route)
{
    amp_process_start(); /* the log is open before resolution reports */
    pthread_once(&amp_graph_once, amp_graph_resolve);
    *route = amp_route(AMP_LIB_CUDNN, amp_graph_names[api], ret);
    return route->other ? route->fn : *amp_graph_slots[api];
}

/* In a hook of `name`: `route` and `real` (amp_graph_real). */
#define AMP_GRAPH_REAL(name)                                                 \
    struct amp_route route;                                                  \
    amp_pfn_##name real;                                                     \
    *(void **)&real = amp_graph_real(AMP_GRAPH_##name,                       \
                                     __builtin_return_address(0), &route)

/* ---- Reading descriptors --------------------------------------------------- */

/* Attribute `name` of d as cuDNN gives it. Reads that fail are logged
 * (debug): what tells why a plan was not read. */
static int
amp_bk_ask(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
           cudnnBackendAttributeType_t type, int64_t max, int64_t *n,
           void *v)
{
    cudnnStatus_t s;

    s = amp_graph_fn.cudnnBackendGetAttribute(d, name, type, max, n, v);
    if (s == CUDNN_STATUS_SUCCESS && *n >= 0 && *n <= max)
        return 1;
    amp_log(AMP_LOG_DEBUG,
            "cudnnBackendGetAttribute(%p, attribute %d, type %d, %lld "
            "asked): status %d, %lld given",
            (void *)d, (int)name, (int)type, (long long)max, (int)s,
            (long long)*n);
    return 0;
}

/* Whether read r of d succeeded: from the shim's copy, else cuDNN's. */
static int
amp_bk_answered(cudnnBackendDescriptor_t d, const struct amp_mirror_read *r)
{
    switch (r->answer) {
    case AMP_MIRROR_HELD:
        return *r->n <= r->max; /* more than max: not read, as cuDNN */
    case AMP_MIRROR_REFUSED: /* set as another type: cuDNN refuses too */
        return 0;
    case AMP_MIRROR_ABSENT:
        break;
    }
    return amp_bk_ask(d, r->name, r->type, r->max, r->n, r->v);
}

/* The `count` reads r of d, each as amp_bk_get; 1 when all succeed. */
static int
amp_bk_get_all(cudnnBackendDescriptor_t d, struct amp_mirror_read *r,
               int count)
{
    int i;

    for (i = 0; i < count; i++)
        *r[i].n = 0;
    amp_mirror_get_all(d, r, count);
    for (i = 0; i < count; i++)
        if (!amp_bk_answered(d, &r[i]))
            return 0;
    return 1;
}

/* What the program set comes from the shim's copy (cudnn_graph_mirror.h),
 * the rest from cuDNN. */
int
amp_bk_get(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
           cudnnBackendAttributeType_t type, int64_t max, int64_t *n,
           void *v)
{
    struct amp_mirror_read r = { name, type, max, n, v, AMP_MIRROR_ABSENT };

    return amp_bk_get_all(d, &r, 1);
}

/* One element of attribute `name`, exactly. */
int
amp_bk_one(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
           cudnnBackendAttributeType_t type, void *v)
{
    int64_t n;

    return amp_bk_get(d, name, type, 1, &n, v) && n == 1;
}

/* One element of an attribute with a default, into v (which holds the
 * default): of a descriptor the shim holds, what the program set, else
 * the default, without asking cuDNN (what cuDNN 9 gives back of the
 * program's descriptors was not all it was given: docs/gpu-results.md);
 * of another, cuDNN's answer when it gives one. */
static void
amp_bk_optional(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
                cudnnBackendAttributeType_t type, void *v)
{
    cudnnBackendDescriptorType_t held;
    int64_t n;

    if (amp_mirror_type(d, &held))
        amp_mirror_get(d, name, type, 1, &n, v);
    else
        amp_bk_one(d, name, type, v);
}

/* The descriptor attribute `name` of d, of `type`: the program's own
 * descriptor when the shim holds it (*owned 0), else a new descriptor
 * cuDNN fills (*owned 1: the caller destroys it); NULL when d has none
 * of that type. */
cudnnBackendDescriptor_t
amp_bk_child(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
             cudnnBackendDescriptorType_t type, int *owned)
{
    cudnnBackendDescriptor_t c = NULL;
    cudnnBackendDescriptorType_t held;
    cudnnStatus_t s;
    int64_t n;

    *owned = 0;
    if (amp_mirror_children(d, name, 1, &n, &c, &held) == AMP_MIRROR_HELD)
        return n == 1 && held == type ? c : NULL;
    s = amp_graph_fn.cudnnBackendCreateDescriptor(type, &c);

    if (s != CUDNN_STATUS_SUCCESS) {
        amp_log(AMP_LOG_DEBUG,
                "cudnnBackendCreateDescriptor(type %d): status %d", (int)type,
                (int)s);
        return NULL;
    }
    if (!amp_bk_one(d, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, &c)) {
        amp_graph_fn.cudnnBackendDestroyDescriptor(c);
        return NULL;
    }
    *owned = 1;
    return c;
}

/* Destroys the n descriptors of d that amp_bk_child made (owned). */
static void
amp_bk_release(cudnnBackendDescriptor_t *d, const int *owned, int n)
{
    int i;

    for (i = 0; i < n; i++)
        if (owned[i])
            amp_bk_destroy(&d[i], 1);
}

void
amp_bk_destroy(cudnnBackendDescriptor_t *d, int n)
{
    int i;

    for (i = 0; i < n; i++)
        if (d[i])
            amp_graph_fn.cudnnBackendDestroyDescriptor(d[i]);
}

/* alpha or beta, set as FLOAT or DOUBLE. */
static int
amp_bk_scale(cudnnBackendDescriptor_t op, cudnnBackendAttributeName_t name,
             float *v)
{
    double d;

    if (amp_bk_one(op, name, CUDNN_TYPE_FLOAT, v))
        return 1;
    if (!amp_bk_one(op, name, CUDNN_TYPE_DOUBLE, &d))
        return 0;
    *v = (float)d;
    return 1;
}

/* ---- What a plan is ---------------------------------------------------------- */

/* What a plan is, which the twin plans read too: cudnn_graph_plans.h. */

const cudnnBackendDescriptorType_t amp_op_types[3] = {
    [AMP_CONV_FWD] = CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
    [AMP_CONV_BWD_DATA] =
        CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
    [AMP_CONV_BWD_FILTER] =
        CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
};

/* Per direction: alpha, beta, the convolution, then x, w, y. */
const cudnnBackendAttributeName_t amp_op_attrs[3][6] = {
    [AMP_CONV_FWD] = {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
                      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA,
                      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
                      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
                      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y},
    [AMP_CONV_BWD_DATA] = {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
                           CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA,
                           CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
                           CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
                           CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
                           CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY},
    [AMP_CONV_BWD_FILTER] =
        {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY},
};

/* One tensor of the operation: 1 when it is an FP32 tensor the path can
 * take (real, by address, not vectorized or reordered, 3 to 5 dims). */
static int
amp_graph_tensor(cudnnBackendDescriptor_t t, struct amp_conv_layout *l,
                 int64_t *uid, int64_t *align, int *fp32, int32_t *type_out,
                 int *virtual_out)
{
    cudnnDataType_t type;
    cudnnBackendTensorReordering_t reorder = CUDNN_TENSOR_REORDERING_NONE;
    int64_t n, ns, vec = 1;
    bool is_virtual = false, by_value = false;
    int d;

    memset(l, 0, sizeof *l);
    if (!t || !amp_bk_one(t, CUDNN_ATTR_TENSOR_DATA_TYPE,
                          CUDNN_TYPE_DATA_TYPE, &type) ||
        !amp_bk_get(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64,
                    AMP_CONV_MAX_DIMS, &n, l->dim) ||
        !amp_bk_get(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64,
                    AMP_CONV_MAX_DIMS, &ns, l->stride) ||
        n != ns || n < 3 ||
        !amp_bk_one(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, uid) ||
        !amp_bk_one(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64,
                    align))
        return 0;
    /* Attributes a program may leave unset: their defaults. */
    amp_bk_optional(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN,
                    &is_virtual);
    amp_bk_optional(t, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN,
                    &by_value);
    amp_bk_optional(t, CUDNN_ATTR_TENSOR_VECTOR_COUNT, CUDNN_TYPE_INT64,
                    &vec);
    amp_bk_optional(t, CUDNN_ATTR_TENSOR_REORDERING_MODE,
                    CUDNN_TYPE_TENSOR_REORDERING_MODE, &reorder);
    l->nb_dims = n;
    for (d = 0; d < n; d++)
        if (l->dim[d] < 1 || l->stride[d] < 1)
            return 0;
    *type_out = (int32_t)type;
    *virtual_out = is_virtual;
    *fp32 = type == CUDNN_DATA_FLOAT && !by_value && vec == 1 &&
            reorder == CUDNN_TENSOR_REORDERING_NONE;
    return 1;
}

static int
amp_graph_conv_desc(cudnnBackendDescriptor_t c, struct amp_graph_conv *a,
                    int *fp32)
{
    cudnnDataType_t comp;
    cudnnConvolutionMode_t mode;
    int64_t n[4];

    if (!c ||
        !amp_bk_one(c, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE,
                    &comp) ||
        !amp_bk_one(c, CUDNN_ATTR_CONVOLUTION_CONV_MODE,
                    CUDNN_TYPE_CONVOLUTION_MODE, &mode) ||
        !amp_bk_one(c, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64,
                    &a->nsp) ||
        !amp_bk_get(c, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64,
                    AMP_GRAPH_MAX_SPATIAL, &n[0], a->pre) ||
        !amp_bk_get(c, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64,
                    AMP_GRAPH_MAX_SPATIAL, &n[1], a->post) ||
        !amp_bk_get(c, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES,
                    CUDNN_TYPE_INT64, AMP_GRAPH_MAX_SPATIAL, &n[2],
                    a->stride) ||
        !amp_bk_get(c, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64,
                    AMP_GRAPH_MAX_SPATIAL, &n[3], a->dil) ||
        n[0] != a->nsp || n[1] != a->nsp || n[2] != a->nsp ||
        n[3] != a->nsp)
        return 0;
    a->mode = (int32_t)mode;
    *fp32 = comp == CUDNN_DATA_FLOAT;
    return 1;
}

/* Whether the engine carries numerical note `want`. */
int
amp_graph_engine_note(cudnnBackendDescriptor_t engine,
                      cudnnBackendNumericalNote_t want)
{
    cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
    int64_t n, i;

    if (!amp_bk_get(engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                    CUDNN_TYPE_NUMERICAL_NOTE, CUDNN_NUMERICAL_NOTE_TYPE_COUNT,
                    &n, notes))
        return 0;
    for (i = 0; i < n; i++)
        if (notes[i] == want)
            return 1;
    return 0;
}

/* The convolution operation `op` of direction `dir`: its scales,
 * convolution and tensors. `fused`: the graph has pointwise operations
 * after it, so its y may be virtual. */
static enum amp_graph_kind
amp_graph_read_conv(cudnnBackendDescriptor_t op, struct amp_graph_conv *a,
                    int fused)
{
    cudnnBackendDescriptor_t d[4] = {NULL};
    enum amp_graph_kind kind = AMP_GRAPH_INVALID;
    int i, fp32[4] = {0}, virt[3] = {0}, owned[4];
    int32_t type[3] = {0};

    d[0] = amp_bk_child(op, amp_op_attrs[a->dir][2],
                        CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, &owned[0]);
    for (i = 0; i < 3; i++)
        d[1 + i] = amp_bk_child(op, amp_op_attrs[a->dir][3 + i],
                                CUDNN_BACKEND_TENSOR_DESCRIPTOR,
                                &owned[1 + i]);
    if (!amp_bk_scale(op, amp_op_attrs[a->dir][0], &a->alpha) ||
        !amp_bk_scale(op, amp_op_attrs[a->dir][1], &a->beta) ||
        !amp_graph_conv_desc(d[0], a, &fp32[0]))
        goto out;
    for (i = 0; i < 3; i++)
        if (!amp_graph_tensor(d[1 + i], &a->l[i], &a->uid[i], &a->align[i],
                              &fp32[1 + i], &type[i], &virt[i]))
            goto out;
    kind = AMP_GRAPH_OTHER;
    if (a->nsp > AMP_GRAPH_MAX_SPATIAL || a->l[0].nb_dims != a->nsp + 2 ||
        a->l[1].nb_dims != a->nsp + 2 || a->l[2].nb_dims != a->nsp + 2 ||
        a->l[AMP_CONV_X].dim[1] % a->l[AMP_CONV_W].dim[1] != 0)
        goto out;
    /* A convolution read whole: the coverage meter counts it whatever
     * its types. */
    a->groups = a->l[AMP_CONV_X].dim[1] / a->l[AMP_CONV_W].dim[1];
    a->conv = 1;
    a->x_type = type[AMP_CONV_X];
    a->y_virtual = virt[AMP_CONV_Y];
    if (!fp32[0] || !fp32[1] || !fp32[2] || !fp32[3] || virt[AMP_CONV_X] ||
        virt[AMP_CONV_W] || (virt[AMP_CONV_Y] && !fused))
        goto out;
    kind = fused ? AMP_GRAPH_FUSED : AMP_GRAPH_FP32;
out:
    amp_bk_release(d, owned, 4);
    return kind;
}

/* Operations a fused graph may hold for the shim to read it. */
#define AMP_GRAPH_FUSED_OPS 16

/* The graph's operations, as the program set them (cuDNN 9 gives them
 * back neither as a count nor as an array: NOT_SUPPORTED, seen on an
 * H200, docs/gpu-results.md): one convolution in one of the three
 * directions, or one forward convolution and pointwise operations, as
 * frameworks fuse a convolution's bias and activation; else another
 * graph. */
static enum amp_graph_kind
amp_graph_read_ops(cudnnBackendDescriptor_t graph, struct amp_graph_conv *a)
{
    cudnnBackendDescriptor_t op[AMP_GRAPH_FUSED_OPS], conv = NULL;
    cudnnBackendDescriptorType_t type[AMP_GRAPH_FUSED_OPS];
    enum amp_graph_kind kind;
    int64_t n, i, nconv = 0;
    int dir;

    if (amp_mirror_children(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS,
                            AMP_GRAPH_FUSED_OPS, &n, op,
                            type) != AMP_MIRROR_HELD)
        return AMP_GRAPH_OTHER; /* not built in the shim's sight */
    for (i = 0; i < n; i++)
        for (dir = 0; dir < 3; dir++)
            if (type[i] == amp_op_types[dir]) {
                conv = op[i];
                a->dir = (enum amp_conv_dir)dir;
                nconv++;
            }
    if (n < 1 || nconv != 1)
        return AMP_GRAPH_OTHER;
    if (n == 1)
        return amp_graph_read_conv(conv, a, 0);
    for (i = 0; i < n; i++)
        if (op[i] != conv &&
            type[i] != CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR)
            return AMP_GRAPH_OTHER;
    if (a->dir != AMP_CONV_FWD)
        return AMP_GRAPH_OTHER;
    kind = amp_graph_read_conv(conv, a, 1);
    /* Read, but not to be counted as fused unless it is. */
    return kind == AMP_GRAPH_FUSED ? kind : AMP_GRAPH_OTHER;
}

/* What graph is: its one convolution, read from the descriptors the
 * program set, when the graph is finalized (cuDNN copies what it is
 * given: the program may destroy the operations and tensors after). */
static void
amp_graph_read_graph(cudnnBackendDescriptor_t graph, struct amp_graph_conv *a)
{
    bool dynamic = false;

    memset(a, 0, sizeof *a);
    amp_bk_optional(graph, CUDNN_ATTR_OPERATIONGRAPH_IS_DYNAMIC_SHAPE_ENABLED,
                    CUDNN_TYPE_BOOLEAN, &dynamic);
    a->kind = dynamic ? AMP_GRAPH_OTHER : amp_graph_read_ops(graph, a);
}

static int amp_graphs_find(cudnnBackendDescriptor_t graph, uint64_t gen,
                           struct amp_graph_conv *a);

/* What plan is: the convolution of the graph it was built from (as read
 * when that graph was finalized), its workspace and whether its engine
 * has Tensor Cores (cuDNN's answers: the engine of a heuristics
 * configuration is cuDNN's choice). */
static void
amp_graph_read(cudnnBackendDescriptor_t plan, struct amp_graph_conv *a)
{
    cudnnBackendDescriptor_t d[2] = {NULL}; /* config, engine */
    cudnnBackendDescriptor_t graph;
    int owned[2] = {0};
    uint64_t gen;

    memset(a, 0, sizeof *a);
    graph = amp_mirror_origin(plan, &gen);
    if (!graph || !amp_graphs_find(graph, gen, a)) {
        a->kind = AMP_GRAPH_OTHER; /* built out of the shim's sight */
        goto out;
    }
    if (!amp_bk_one(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                    CUDNN_TYPE_INT64, &a->workspace)) {
        a->kind = AMP_GRAPH_INVALID;
        goto out;
    }
    if (a->kind != AMP_GRAPH_FP32)
        goto out;
    d[0] = amp_bk_child(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                        CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &owned[0]);
    if (d[0])
        d[1] = amp_bk_child(d[0], CUDNN_ATTR_ENGINECFG_ENGINE,
                            CUDNN_BACKEND_ENGINE_DESCRIPTOR, &owned[1]);
    if (!d[1])
        a->kind = AMP_GRAPH_INVALID;
    else if (!amp_graph_engine_note(d[1], CUDNN_NUMERICAL_NOTE_TENSOR_CORE))
        a->kind = AMP_GRAPH_NO_TC_ENGINE;
out:
    amp_log(AMP_LOG_DEBUG, "cuDNN plan %p read: %s", (void *)plan,
            a->kind == AMP_GRAPH_INVALID ? "not read, run as it is"
            : a->kind == AMP_GRAPH_OTHER
                ? (a->conv ? "a convolution the shim does not convert"
                           : "not one convolution, or a graph built out "
                             "of the shim's sight")
                : "a convolution");
    amp_bk_release(d, owned, 2);
}

/* ---- Plans read, by address ---------------------------------------------- */

enum amp_plan_state { AMP_PLAN_READING = 1, AMP_PLAN_READ };

/* What a plan is (the value of its address in amp_plans). */
struct amp_plan_read {
    enum amp_plan_state state;
    struct amp_graph_conv conv;
};

static pthread_mutex_t amp_plans_lock = PTHREAD_MUTEX_INITIALIZER;
static struct amp_lru amp_plans; /* cudnnBackendDescriptor_t -> above */
static int amp_plans_tried;      /* set up once: a failure stays failed */

/* amp_lru_evict_fn: a plan being read stays. */
static int
amp_plans_evict(void *value, void *arg)
{
    (void)arg;
    return ((struct amp_plan_read *)value)->state == AMP_PLAN_READ;
}

/* What plan is: read once, then from the table until a descriptor at its
 * address is created, finalized or destroyed. A plan that cannot be read
 * is kept so too: reading it again would fail again (a plan not yet
 * finalized is read anew once it is, its finalization forgetting it),
 * and a failed read costs as much as a good one, at every execution. */
static void
amp_plans_get(cudnnBackendDescriptor_t plan, struct amp_graph_conv *a)
{
    struct amp_plan_read *r;
    int claimed = 0;

    pthread_mutex_lock(&amp_plans_lock);
    if (!amp_plans_tried) {
        amp_plans_tried = 1;
        amp_lru_init(&amp_plans, AMP_GRAPH_PLANS, sizeof plan, sizeof *r);
    }
    r = amp_lru_find(&amp_plans, &plan);
    if (r && r->state == AMP_PLAN_READ) {
        *a = r->conv;
        pthread_mutex_unlock(&amp_plans_lock);
        return;
    }
    if (!r) { /* else another thread is reading it */
        r = amp_lru_add(&amp_plans, &plan, amp_plans_evict, NULL);
        if (r) {
            r->state = AMP_PLAN_READING;
            claimed = 1;
        }
    }
    pthread_mutex_unlock(&amp_plans_lock);
    amp_graph_read(plan, a);
    if (!claimed)
        return;
    pthread_mutex_lock(&amp_plans_lock);
    /* Unless the address was forgotten meanwhile. */
    r = amp_lru_find(&amp_plans, &plan);
    if (r && r->state == AMP_PLAN_READING) {
        r->conv = *a;
        r->state = AMP_PLAN_READ;
    }
    pthread_mutex_unlock(&amp_plans_lock);
}

/* A descriptor at d's address was created, finalized or destroyed. */
static void
amp_plans_forget(cudnnBackendDescriptor_t d)
{
    pthread_mutex_lock(&amp_plans_lock);
    amp_lru_remove(&amp_plans, &d);
    pthread_mutex_unlock(&amp_plans_lock);
}

/* ---- Graphs read, by address and generation ----------------------------- */

/* What a finalized operation graph is (the value of its address in
 * amp_graphs): kept past the graph's destruction, for the plans of its
 * engine configurations; the generation tells it from a graph created
 * later at the same address. */
struct amp_graph_summary {
    uint64_t gen;
    struct amp_graph_conv conv;
};

static struct amp_lru amp_graphs; /* cudnnBackendDescriptor_t -> above */
static int amp_graphs_tried;      /* under amp_plans_lock, as the table */

/* Reads graph, just finalized, and keeps what it is. */
static void
amp_graphs_note(cudnnBackendDescriptor_t graph)
{
    struct amp_graph_summary *g;
    struct amp_graph_conv a;
    uint64_t gen = amp_mirror_generation(graph);

    amp_graph_read_graph(graph, &a);
    pthread_mutex_lock(&amp_plans_lock);
    if (!amp_graphs_tried) {
        amp_graphs_tried = 1;
        amp_lru_init(&amp_graphs, AMP_GRAPH_PLANS, sizeof graph, sizeof *g);
    }
    g = amp_lru_find(&amp_graphs, &graph);
    if (!g)
        g = amp_lru_add(&amp_graphs, &graph, NULL, NULL);
    if (g) {
        g->gen = gen;
        g->conv = a;
    }
    pthread_mutex_unlock(&amp_plans_lock);
}

/* What graph of generation gen is, into a; 0 when it was not read. */
static int
amp_graphs_find(cudnnBackendDescriptor_t graph, uint64_t gen,
                struct amp_graph_conv *a)
{
    const struct amp_graph_summary *g;
    int found;

    pthread_mutex_lock(&amp_plans_lock);
    g = amp_graphs_tried ? amp_lru_find(&amp_graphs, &graph) : NULL;
    found = g && gen && g->gen == gen;
    if (found)
        *a = g->conv;
    pthread_mutex_unlock(&amp_plans_lock);
    return found;
}

/* ---- One cudnnBackendExecute --------------------------------------------------- */

/* 1 when cuDNN runs the plan with this handle and variant pack: a stream,
 * a pointer for each tensor, aligned, and a workspace when the plan needs
 * one. The pointers and the stream go into d. */
static int
amp_graph_valid(cudnnHandle_t handle, cudnnBackendDescriptor_t pack,
                const struct amp_graph_conv *a, struct amp_conv_desc *d)
{
    int64_t uid[AMP_GRAPH_PACK_MAX], n = 0, np = 0, nw = 0, i;
    void *ptr[AMP_GRAPH_PACK_MAX], *ws = NULL, *at[3] = {NULL};
    cudaStream_t stream = NULL;
    int t;
    struct amp_mirror_read r[3] = {
        { CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64,
          AMP_GRAPH_PACK_MAX, &n, uid, AMP_MIRROR_ABSENT },
        { CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
          AMP_GRAPH_PACK_MAX, &np, ptr, AMP_MIRROR_ABSENT },
        { CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &nw, &ws,
          AMP_MIRROR_ABSENT },
    };

    if (!handle || !pack ||
        amp_graph_fn.cudnnGetStream(handle, &stream) != CUDNN_STATUS_SUCCESS ||
        !amp_bk_get_all(pack, r, 3) || n != np)
        return 0;
    for (t = 0; t < 3; t++) {
        /* A fused graph's y is the workspace's, not the pack's. */
        if (t == AMP_CONV_Y && a->y_virtual)
            continue;
        for (i = 0; i < n && uid[i] != a->uid[t]; i++)
            ;
        if (i == n || !ptr[i] || a->align[t] < 1 ||
            (uintptr_t)ptr[i] % (uintptr_t)a->align[t] != 0)
            return 0;
        at[t] = ptr[i];
    }
    if (a->workspace < 0 || (a->workspace > 0 && (nw != 1 || !ws)))
        return 0;
    d->stream = (amp_stream)stream;
    d->xp = (amp_devptr)(uintptr_t)at[AMP_CONV_X];
    d->wp = (amp_devptr)(uintptr_t)at[AMP_CONV_W];
    d->yp = (amp_devptr)(uintptr_t)at[AMP_CONV_Y];
    return 1;
}

/* Guard, descriptor, then the shared decision and converted path. 1: the
 * hook returns *status; 0: it runs the original call, then
 * amp_conv_hook_end. */
static int
amp_graph_begin(struct amp_conv_hook *h, cudnnHandle_t handle,
                cudnnBackendDescriptor_t plan, cudnnBackendDescriptor_t pack,
                const void *caller, const struct amp_route *route,
                amp_pfn_cudnnBackendExecute real, cudnnStatus_t *status)
{
    struct amp_graph_conv a;
    struct amp_graph_call call = {.conv = &a, .twin = NULL, .handle = handle,
                                  .plan = plan, .pack = pack,
                                  .execute = real};
    struct amp_conv_desc d;
    int missing = !real, ran;

    h->entered = 0;
    *status = CUDNN_STATUS_NOT_INITIALIZED;
    if (missing)
        return 1;
    if (!amp_graph_watching())
        return 0; /* AMPSHIM_DISABLE: straight to the real call */
    h->shadow = 0;
    h->prof.open = 0;
    h->stats = &amp_graph_stats;
    h->entered = amp_process_enter();
    if (!h->entered)
        return 0;
    h->outcome = AMP_OUTCOME_FP32;
    /* The coverage meter counts the plans of one convolution (FP32 ones
     * set by amp_conv_hook_run); other graphs pass uncounted, as do
     * another release's plans, never read here. */
    h->cover = AMP_COVER_COUNT;
    h->flops = 0.0;
    if (route->other) {
        h->outcome = AMP_OUTCOME_PASSTHROUGH;
        return 0;
    }
    if (amp_graph_complete)
        amp_plans_get(plan, &a);
    else
        a.kind = AMP_GRAPH_INVALID;
    memset(&d, 0, sizeof d);
    d.from_library = route->library;
    if (a.kind == AMP_GRAPH_OTHER) {
        h->outcome = AMP_OUTCOME_PASSTHROUGH;
        if (a.conv) {
            d.dir = a.dir;
            d.groups = a.groups;
            d.x = a.l[AMP_CONV_X];
            d.w = a.l[AMP_CONV_W];
            d.y = a.l[AMP_CONV_Y];
            h->cover = amp_conv_cover_of_data(a.x_type);
            h->flops = amp_conv_flops(&d);
        }
        return 0;
    }
    d.valid = a.kind != AMP_GRAPH_INVALID &&
              amp_graph_valid(handle, pack, &a, &d);
    if (d.valid) {
        d.dir = a.dir;
        d.groups = a.groups;
        d.x = a.l[AMP_CONV_X];
        d.w = a.l[AMP_CONV_W];
        d.y = a.l[AMP_CONV_Y];
        d.alpha = a.alpha;
        d.beta = a.beta;
        d.no_tc_engine = a.kind == AMP_GRAPH_NO_TC_ENGINE;
        /* Never converted: the pointwise operations after the
         * convolution run in the program's plan only. */
        d.fused_graph = a.kind == AMP_GRAPH_FUSED;
        d.site = amp_site_get(h->stats->name, caller);
    }
    ran = amp_conv_hook_run(h, &d, &amp_graph_vendor, &call);
    if (!ran)
        return 0;
    *status = ran == AMP_CONV_HOOK_RAN ? (cudnnStatus_t)h->original_status
                                       : CUDNN_STATUS_SUCCESS;
    return 1;
}

/* ---- The exported hooks ---------------------------------------------------------- */

AMP_EXPORT cudnnStatus_t
cudnnBackendExecute(cudnnHandle_t handle,
                    cudnnBackendDescriptor_t executionPlan,
                    cudnnBackendDescriptor_t variantPack)
{
    struct amp_conv_hook h;
    cudnnStatus_t status;
    AMP_GRAPH_REAL(cudnnBackendExecute);

    if (amp_graph_begin(&h, handle, executionPlan, variantPack,
                        __builtin_return_address(0), &route, real, &status))
        return status;
    status = real(handle, executionPlan, variantPack);
    amp_conv_hook_end(&h, status == CUDNN_STATUS_SUCCESS);
    return status;
}

AMP_EXPORT cudnnStatus_t
cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t descriptorType,
                             cudnnBackendDescriptor_t *descriptor)
{
    AMP_GRAPH_REAL(cudnnBackendCreateDescriptor);
    int watching = amp_graph_watching() && !route.other;
    cudnnStatus_t s;

    if (!real)
        return CUDNN_STATUS_NOT_INITIALIZED;
    s = real(descriptorType, descriptor);
    /* A new descriptor where a plan the shim read was. */
    if (watching && s == CUDNN_STATUS_SUCCESS && descriptor) {
        amp_plans_forget(*descriptor);
        amp_mirror_created(*descriptor, descriptorType);
    }
    return s;
}

AMP_EXPORT cudnnStatus_t
cudnnBackendSetAttribute(cudnnBackendDescriptor_t descriptor,
                         cudnnBackendAttributeName_t attributeName,
                         cudnnBackendAttributeType_t attributeType,
                         int64_t elementCount, const void *arrayOfElements)
{
    AMP_GRAPH_REAL(cudnnBackendSetAttribute);
    cudnnStatus_t s;

    if (!real)
        return CUDNN_STATUS_NOT_INITIALIZED;
    s = real(descriptor, attributeName, attributeType, elementCount,
             arrayOfElements);
    if (s == CUDNN_STATUS_SUCCESS && !route.other && amp_graph_watching())
        amp_mirror_set(descriptor, attributeName, attributeType,
                       elementCount, arrayOfElements);
    return s;
}

/* Passed through; the engine configurations heuristics fill are noted
 * with the heuristics' graph (cuDNN does not give a graph's operations
 * back, so the plans of those configurations are read from the graph the
 * program built). */
AMP_EXPORT cudnnStatus_t
cudnnBackendGetAttribute(cudnnBackendDescriptor_t const descriptor,
                         cudnnBackendAttributeName_t attributeName,
                         cudnnBackendAttributeType_t attributeType,
                         int64_t requestedElementCount,
                         int64_t *elementCount, void *arrayOfElements)
{
    AMP_GRAPH_REAL(cudnnBackendGetAttribute);
    cudnnStatus_t s;

    if (!real)
        return CUDNN_STATUS_NOT_INITIALIZED;
    s = real(descriptor, attributeName, attributeType, requestedElementCount,
             elementCount, arrayOfElements);
    if (s == CUDNN_STATUS_SUCCESS &&
        attributeName == CUDNN_ATTR_ENGINEHEUR_RESULTS &&
        attributeType == CUDNN_TYPE_BACKEND_DESCRIPTOR && arrayOfElements &&
        elementCount && !route.other && amp_graph_watching())
        amp_mirror_heur_results(
            descriptor, arrayOfElements,
            *elementCount < requestedElementCount ? *elementCount
                                                  : requestedElementCount);
    return s;
}

/* A graph is read when it is finalized, while the descriptors it was
 * built from are sure to be there (a program may destroy them once its
 * graph is built), and a plan when it is. */
AMP_EXPORT cudnnStatus_t
cudnnBackendFinalize(cudnnBackendDescriptor_t descriptor)
{
    AMP_GRAPH_REAL(cudnnBackendFinalize);
    int watching = amp_graph_watching() && !route.other;
    cudnnBackendDescriptorType_t type;
    struct amp_graph_conv a;
    cudnnStatus_t s;

    if (!real)
        return CUDNN_STATUS_NOT_INITIALIZED;
    s = real(descriptor);
    if (!watching || s != CUDNN_STATUS_SUCCESS)
        return s;
    amp_plans_forget(descriptor);
    if (!amp_graph_complete || !amp_mirror_type(descriptor, &type))
        return s;
    if (type == CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR)
        amp_graphs_note(descriptor);
    else if (type == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR)
        amp_plans_get(descriptor, &a);
    return s;
}

AMP_EXPORT cudnnStatus_t
cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t descriptor)
{
    AMP_GRAPH_REAL(cudnnBackendDestroyDescriptor);

    if (amp_graph_watching()) {
        amp_plans_forget(descriptor);
        amp_mirror_destroyed(descriptor);
    }
    if (!real)
        return CUDNN_STATUS_NOT_INITIALIZED;
    return real(descriptor);
}
