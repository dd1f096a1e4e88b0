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
 * The plan is read back through cudnnBackendGetAttribute (plan, engine
 * configuration, engine, operation graph, operation, tensors and
 * convolution), so plans built before the shim was loaded are reached as
 * well; what a plan is gets cached by its address, and creating,
 * finalizing or destroying a descriptor at that address forgets it. Twin
 * plans are cached per shape key, per thread and context, the least
 * recently used evicted first. */
#include "cudnn_graph_symbols.h"

#include "base/caller.h"
#include "base/log.h"
#include "base/lru.h"
#include "base/resolve.h"
#include "base/shim.h"
#include "conv_hook.h"
#include "decide/site.h"
#include "device/device.h"
#include "measure/stats.h"
#include "own.h"
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
/* Twin plans each thread keeps per context: a model's convolutions, a
 * plan per layer and direction, hundreds of them. */
#define AMP_GRAPH_TWINS 512
/* Evicted twin plans a thread holds until their last execution is done. */
#define AMP_GRAPH_RETIRED 64
/* Engine configurations of the heuristics the twin tries. */
#define AMP_GRAPH_CONFIGS 8
/* Variant pack entries the shim reads. */
#define AMP_GRAPH_PACK_MAX 64
#define AMP_GRAPH_MAX_SPATIAL (AMP_CONV_MAX_DIMS - 2)
/* Byte alignment of the shim's own tensors (scratch parts have more). */
#define AMP_GRAPH_OWN_ALIGN 16

/* ---- The real functions --------------------------------------------------- */

#define AMP_PFN_TYPE(ret, name, params) typedef ret(*amp_pfn_##name) params;
AMP_CUDNN_GRAPH_SYMBOLS(AMP_PFN_TYPE)
#undef AMP_PFN_TYPE

static struct {
#define AMP_REAL_MEMBER(ret, name, params) amp_pfn_##name name;
    AMP_CUDNN_GRAPH_SYMBOLS(AMP_REAL_MEMBER)
#undef AMP_REAL_MEMBER
} amp_real;

#define AMP_NAME_STRING(ret, name, params) #name,
static const char *const amp_graph_names[] = {
    AMP_CUDNN_GRAPH_SYMBOLS(AMP_NAME_STRING)};
#undef AMP_NAME_STRING

#define AMP_REAL_SLOT(ret, name, params) (void **)&amp_real.name,
static void **const amp_graph_slots[] = {
    AMP_CUDNN_GRAPH_SYMBOLS(AMP_REAL_SLOT)};
#undef AMP_REAL_SLOT

#define AMP_GRAPH_NSYMBOLS                                                   \
    ((int)(sizeof amp_graph_names / sizeof *amp_graph_names))

static pthread_once_t amp_graph_once = PTHREAD_ONCE_INIT;
/* Every called function was found: the converted path can run. */
static int amp_graph_complete;
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

static struct amp_api_stats amp_graph_stats =
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

static int
amp_bk_get(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
           cudnnBackendAttributeType_t type, int64_t max, int64_t *n,
           void *v)
{
    *n = 0;
    return amp_real.cudnnBackendGetAttribute(d, name, type, max, n, v) ==
               CUDNN_STATUS_SUCCESS &&
           *n >= 0 && *n <= max;
}

/* One element of attribute `name`, exactly. */
static int
amp_bk_one(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
           cudnnBackendAttributeType_t type, void *v)
{
    int64_t n;

    return amp_bk_get(d, name, type, 1, &n, v) && n == 1;
}

/* The descriptor attribute `name` of d as a new descriptor of `type` (the
 * caller destroys it); NULL when d has none of that type. */
static cudnnBackendDescriptor_t
amp_bk_child(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
             cudnnBackendDescriptorType_t type)
{
    cudnnBackendDescriptor_t c = NULL;

    if (amp_real.cudnnBackendCreateDescriptor(type, &c) !=
        CUDNN_STATUS_SUCCESS)
        return NULL;
    if (!amp_bk_one(d, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, &c)) {
        amp_real.cudnnBackendDestroyDescriptor(c);
        return NULL;
    }
    return c;
}

static void
amp_bk_destroy(cudnnBackendDescriptor_t *d, int n)
{
    int i;

    for (i = 0; i < n; i++)
        if (d[i])
            amp_real.cudnnBackendDestroyDescriptor(d[i]);
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

enum amp_graph_kind {
    AMP_GRAPH_FP32 = 0,        /* one FP32 convolution, Tensor Core engine */
    AMP_GRAPH_NO_TC_ENGINE,    /* the same on an engine without Tensor
                                  Cores: the program kept to FP32 math */
    AMP_GRAPH_FUSED,           /* one FP32 forward convolution fused with
                                  pointwise operations (a bias, an
                                  activation): run as the program built
                                  it, counted */
    AMP_GRAPH_OTHER,           /* another graph, or other types */
    AMP_GRAPH_INVALID,         /* not a plan cuDNN can read back */
};

/* A plan's one convolution: x, w and y in their forward roles (for
 * backward data x is dx and y dy; for backward filter w is dw). */
struct amp_graph_conv {
    enum amp_graph_kind kind;
    enum amp_conv_dir dir;
    struct amp_conv_layout l[3];        /* by AMP_CONV_X, _W, _Y */
    int64_t uid[3], align[3];
    int64_t groups, nsp;
    int64_t pre[AMP_GRAPH_MAX_SPATIAL], post[AMP_GRAPH_MAX_SPATIAL];
    int64_t stride[AMP_GRAPH_MAX_SPATIAL], dil[AMP_GRAPH_MAX_SPATIAL];
    int32_t mode;                       /* cudnnConvolutionMode_t */
    float alpha, beta;
    int64_t workspace;                  /* the program's plan's */
    int conv;                           /* one convolution, read whole */
    int32_t x_type;                     /* cudnnDataType_t of x */
    int y_virtual;                      /* y joins the convolution to the
                                           fused operations after it */
};

static const cudnnBackendDescriptorType_t amp_op_types[3] = {
    [AMP_CONV_FWD] = CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
    [AMP_CONV_BWD_DATA] =
        CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
    [AMP_CONV_BWD_FILTER] =
        CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
};

/* Per direction: alpha, beta, the convolution, then x, w, y. */
static const cudnnBackendAttributeName_t amp_op_attrs[3][6] = {
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
    /* Attributes a library may not report: their defaults. */
    amp_bk_one(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN,
               &is_virtual);
    amp_bk_one(t, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN,
               &by_value);
    amp_bk_one(t, CUDNN_ATTR_TENSOR_VECTOR_COUNT, CUDNN_TYPE_INT64, &vec);
    amp_bk_one(t, CUDNN_ATTR_TENSOR_REORDERING_MODE,
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
static int
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
    int i, fp32[4] = {0}, virt[3] = {0};
    int32_t type[3] = {0};

    d[0] = amp_bk_child(op, amp_op_attrs[a->dir][2],
                        CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
    for (i = 0; i < 3; i++)
        d[1 + i] = amp_bk_child(op, amp_op_attrs[a->dir][3 + i],
                                CUDNN_BACKEND_TENSOR_DESCRIPTOR);
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
    amp_bk_destroy(d, 4);
    return kind;
}

/* The one operation of the graph: a convolution in one of the three
 * directions (a descriptor of each type tried), else another graph. */
static enum amp_graph_kind
amp_graph_read_op(cudnnBackendDescriptor_t graph, struct amp_graph_conv *a)
{
    cudnnBackendDescriptor_t op = NULL;
    enum amp_graph_kind kind;
    int dir;

    for (dir = 0; dir < 3 && !op; dir++)
        op = amp_bk_child(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS,
                          amp_op_types[dir]);
    if (!op)
        return AMP_GRAPH_OTHER; /* not a convolution */
    a->dir = (enum amp_conv_dir)(dir - 1);
    kind = amp_graph_read_conv(op, a, 0);
    amp_bk_destroy(&op, 1);
    return kind;
}

/* Operations a fused graph may hold for the shim to read it. */
#define AMP_GRAPH_FUSED_OPS 16

/* A graph of n operations: one forward convolution and pointwise
 * operations, as frameworks fuse a convolution's bias and activation.
 * GetAttribute fills descriptors of each operation's own type, so each
 * position is tried as the convolution's with the others pointwise;
 * a graph of other operations is another graph. */
static enum amp_graph_kind
amp_graph_read_fused(cudnnBackendDescriptor_t graph, int64_t n,
                     struct amp_graph_conv *a)
{
    cudnnBackendDescriptor_t ops[AMP_GRAPH_FUSED_OPS];
    enum amp_graph_kind kind = AMP_GRAPH_OTHER;
    int64_t at, i, got;

    if (n < 2 || n > AMP_GRAPH_FUSED_OPS)
        return AMP_GRAPH_OTHER;
    for (at = 0; at < n && kind == AMP_GRAPH_OTHER; at++) {
        int made = 1;

        memset(ops, 0, sizeof ops);
        for (i = 0; i < n && made; i++)
            made = amp_real.cudnnBackendCreateDescriptor(
                       i == at ? amp_op_types[AMP_CONV_FWD]
                               : CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR,
                       &ops[i]) == CUDNN_STATUS_SUCCESS;
        got = 0;
        if (made &&
            amp_real.cudnnBackendGetAttribute(
                graph, CUDNN_ATTR_OPERATIONGRAPH_OPS,
                CUDNN_TYPE_BACKEND_DESCRIPTOR, n, &got, ops) ==
                CUDNN_STATUS_SUCCESS &&
            got == n) {
            a->dir = AMP_CONV_FWD;
            kind = amp_graph_read_conv(ops[at], a, 1);
            if (kind != AMP_GRAPH_FUSED)
                kind = AMP_GRAPH_INVALID; /* read, but not to be counted */
        }
        amp_bk_destroy(ops, (int)n);
    }
    return kind == AMP_GRAPH_INVALID ? AMP_GRAPH_OTHER : kind;
}

/* Walks the plan back to its operation graph: what it is. */
static void
amp_graph_read(cudnnBackendDescriptor_t plan, struct amp_graph_conv *a)
{
    cudnnBackendDescriptor_t d[3] = {NULL}; /* config, engine, graph */
    int64_t ops = 0;
    bool dynamic = false;

    memset(a, 0, sizeof *a);
    a->kind = AMP_GRAPH_INVALID;
    d[0] = amp_bk_child(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                        CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    if (d[0])
        d[1] = amp_bk_child(d[0], CUDNN_ATTR_ENGINECFG_ENGINE,
                            CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    if (d[1])
        d[2] = amp_bk_child(d[1], CUDNN_ATTR_ENGINE_OPERATION_GRAPH,
                            CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    if (!d[2] ||
        !amp_bk_one(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                    CUDNN_TYPE_INT64, &a->workspace) ||
        amp_real.cudnnBackendGetAttribute(
            d[2], CUDNN_ATTR_OPERATIONGRAPH_OPS,
            CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &ops, NULL) !=
            CUDNN_STATUS_SUCCESS)
        goto out;
    amp_bk_one(d[2], CUDNN_ATTR_OPERATIONGRAPH_IS_DYNAMIC_SHAPE_ENABLED,
               CUDNN_TYPE_BOOLEAN, &dynamic);
    a->kind = dynamic    ? AMP_GRAPH_OTHER
              : ops == 1 ? amp_graph_read_op(d[2], a)
                         : amp_graph_read_fused(d[2], ops, a);
    if (a->kind == AMP_GRAPH_FP32 &&
        !amp_graph_engine_note(d[1], CUDNN_NUMERICAL_NOTE_TENSOR_CORE))
        a->kind = AMP_GRAPH_NO_TC_ENGINE;
out:
    amp_bk_destroy(d, 3);
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
 * (not finalized, say) is not kept. */
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
        if (a->kind == AMP_GRAPH_INVALID) {
            amp_lru_remove(&amp_plans, &plan);
        } else {
            r->conv = *a;
            r->state = AMP_PLAN_READ;
        }
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

/* ---- The shim's own handle and twin plans ---------------------------------- */

/* Everything of a twin plan: zeroed before it is filled, so that it
 * compares as bytes. */
struct amp_twin_key {
    int32_t dir, type, mode;
    int64_t nsp;
    int64_t dim[3][AMP_CONV_MAX_DIMS], stride[3][AMP_CONV_MAX_DIMS];
    int64_t nb_dims[3], uid[3], align[3];
    int64_t pre[AMP_GRAPH_MAX_SPATIAL], post[AMP_GRAPH_MAX_SPATIAL];
    int64_t cstride[AMP_GRAPH_MAX_SPATIAL], dil[AMP_GRAPH_MAX_SPATIAL];
    float alpha, beta;
};

/* A twin plan (the value of its key in the own's map). */
struct amp_twin {
    cudnnBackendDescriptor_t plan;     /* NULL: no engine takes it */
    int64_t workspace;
    struct amp_dev *dev;       /* its context */
    amp_stream stream;         /* of its last execution */
    int ran;                   /* executed at least once */
    int captured;              /* executed into a graph being captured */
};

/* An evicted twin plan, destroyed once `event`, recorded after its last
 * execution, has completed. */
struct amp_twin_retired {
    cudnnBackendDescriptor_t plan;
    struct amp_dev *dev;
    int event;
};

struct amp_graph_own {
    cudnnHandle_t handle;
    struct amp_lru twins;      /* struct amp_twin_key -> struct amp_twin */
    int nretired;
    struct amp_twin_retired retired[AMP_GRAPH_RETIRED];
};

static int
amp_graph_own_make(void *obj)
{
    struct amp_graph_own *own = obj;

    if (amp_lru_init(&own->twins, AMP_GRAPH_TWINS,
                     sizeof(struct amp_twin_key),
                     sizeof(struct amp_twin)) != AMP_OK)
        return 1;
    if (amp_real.cudnnCreate(&own->handle) == CUDNN_STATUS_SUCCESS)
        return 0;
    amp_lru_fini(&own->twins, NULL, NULL);
    return 1;
}

/* Destroys the retired plans whose last execution has completed (all of
 * them, waiting, when `wait`); `live` 0: their context has ended, and
 * with it their work. */
static void
amp_twin_reap(struct amp_graph_own *own, int wait, int live)
{
    int i = 0;

    while (i < own->nretired) {
        struct amp_twin_retired *r = &own->retired[i];

        if (live && amp_dev_event_done(r->dev, r->event, wait) == 0) {
            i++;
            continue; /* still queued work that may run the plan */
        }
        if (live)
            amp_dev_event_release(r->dev, r->event);
        amp_real.cudnnBackendDestroyDescriptor(r->plan);
        *r = own->retired[--own->nretired];
    }
}

/* An event of t's context recorded on the stream of t's last execution,
 * after it; -1 when none can be (that stream being captured, no event
 * free, the context gone). */
static int
amp_twin_mark(const struct amp_twin *t)
{
    int event = -1, relaxed;

    if (amp_dev_stream_capturing(t->stream) != 0 || amp_dev_push(t->dev))
        return -1;
    relaxed = amp_dev_relax();
    if (amp_dev_event_take(t->dev, &event) == AMP_OK &&
        amp_dev_event_record(t->dev, event, t->stream) != AMP_OK) {
        amp_dev_event_release(t->dev, event);
        event = -1;
    }
    amp_dev_unrelax(relaxed);
    amp_dev_pop();
    return event;
}

/* amp_lru_evict_fn for own's twins: 1 when the twin's plan is destroyed
 * or retired (to be destroyed once an event recorded after its last
 * execution has completed), 0 when it must stay: executed into a graph
 * (the graph runs its kernels at every launch), or no event can be
 * recorded for it now. */
static int
amp_twin_evict(void *value, void *arg)
{
    struct amp_twin *t = value;
    struct amp_graph_own *own = arg;
    int event;

    if (!t->plan)
        return 1;
    if (t->captured)
        return 0;
    if (!t->ran) {
        amp_real.cudnnBackendDestroyDescriptor(t->plan);
        return 1;
    }
    if (own->nretired == AMP_GRAPH_RETIRED || (event = amp_twin_mark(t)) < 0)
        return 0;
    own->retired[own->nretired++] =
        (struct amp_twin_retired){t->plan, t->dev, event};
    return 1;
}

/* amp_lru_fini's drop at the end of a thread's or context's own: the
 * twin's plan destroyed, in a live context once its last execution is
 * done (waited for: never in a hook). *(int *)arg: the context is live. */
static int
amp_twin_drop(void *value, void *arg)
{
    struct amp_twin *t = value;
    int event;

    if (!t->plan)
        return 1;
    if (*(int *)arg && t->ran && (event = amp_twin_mark(t)) >= 0) {
        amp_dev_event_done(t->dev, event, 1);
        amp_dev_event_release(t->dev, event);
    }
    amp_real.cudnnBackendDestroyDescriptor(t->plan);
    return 1;
}

static void
amp_graph_own_drop(void *obj, int live)
{
    struct amp_graph_own *own = obj;

    amp_twin_reap(own, 1, live);
    amp_lru_fini(&own->twins, amp_twin_drop, &live);
    if (!live)
        return; /* the handle died with its context */
    /* Off the program's stream first: it may be gone already. */
    amp_real.cudnnSetStream(own->handle, NULL);
    amp_real.cudnnDestroy(own->handle);
}

static _Thread_local struct amp_own_table amp_graph_owns;

static void amp_graph_own_exit(void);

static const struct amp_own_kind amp_graph_own_kind = {
    .what = "cuDNN handle for graphs",
    .size = sizeof(struct amp_graph_own),
    .make = amp_graph_own_make,
    .drop = amp_graph_own_drop,
    .at_exit = amp_graph_own_exit,
};

static void
amp_graph_own_exit(void)
{
    amp_own_release(&amp_graph_owns, &amp_graph_own_kind);
}

static void *
amp_graph_own_get(struct amp_dev *dev, int make)
{
    if (!amp_graph_complete)
        return NULL;
    return amp_own_get(&amp_graph_owns, &amp_graph_own_kind, dev, make);
}

/* ---- Building a twin plan ----------------------------------------------------- */

static int
amp_bk_set(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
           cudnnBackendAttributeType_t type, int64_t n, const void *v)
{
    return amp_real.cudnnBackendSetAttribute(d, name, type, n, v) ==
           CUDNN_STATUS_SUCCESS;
}

static cudnnBackendDescriptor_t
amp_bk_new(cudnnBackendDescriptorType_t type)
{
    cudnnBackendDescriptor_t d = NULL;

    if (amp_real.cudnnBackendCreateDescriptor(type, &d) !=
        CUDNN_STATUS_SUCCESS)
        return NULL;
    return d;
}

static int
amp_bk_finalize(cudnnBackendDescriptor_t d)
{
    return amp_real.cudnnBackendFinalize(d) == CUDNN_STATUS_SUCCESS;
}

static cudnnDataType_t
amp_twin_type(int32_t t)
{
    return t == AMP_CONV_F16 ? CUDNN_DATA_HALF
           : t == AMP_CONV_BF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
}

static cudnnBackendDescriptor_t
amp_twin_tensor(const struct amp_twin_key *k, int i)
{
    cudnnBackendDescriptor_t t = amp_bk_new(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    cudnnDataType_t type = amp_twin_type(k->type);

    if (t && amp_bk_set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE,
                        1, &type) &&
        amp_bk_set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64,
                   k->nb_dims[i], k->dim[i]) &&
        amp_bk_set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64,
                   k->nb_dims[i], k->stride[i]) &&
        amp_bk_set(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1,
                   &k->uid[i]) &&
        amp_bk_set(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1,
                   &k->align[i]) &&
        amp_bk_finalize(t))
        return t;
    amp_bk_destroy(&t, 1);
    return NULL;
}

static cudnnBackendDescriptor_t
amp_twin_conv(const struct amp_twin_key *k)
{
    cudnnBackendDescriptor_t c =
        amp_bk_new(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
    cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    cudnnConvolutionMode_t mode = (cudnnConvolutionMode_t)k->mode;

    if (c && amp_bk_set(c, CUDNN_ATTR_CONVOLUTION_COMP_TYPE,
                        CUDNN_TYPE_DATA_TYPE, 1, &comp) &&
        amp_bk_set(c, CUDNN_ATTR_CONVOLUTION_CONV_MODE,
                   CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode) &&
        amp_bk_set(c, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64,
                   1, &k->nsp) &&
        amp_bk_set(c, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64,
                   k->nsp, k->pre) &&
        amp_bk_set(c, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64,
                   k->nsp, k->post) &&
        amp_bk_set(c, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64,
                   k->nsp, k->cstride) &&
        amp_bk_set(c, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64,
                   k->nsp, k->dil) &&
        amp_bk_finalize(c))
        return c;
    amp_bk_destroy(&c, 1);
    return NULL;
}

/* The operation graph of the twin on own's handle: tensors, convolution,
 * operation, graph (d[0..5]; the caller destroys them). */
static cudnnBackendDescriptor_t
amp_twin_graph(struct amp_graph_own *own, const struct amp_twin_key *k,
               cudnnBackendDescriptor_t *d)
{
    const cudnnBackendAttributeName_t *at = amp_op_attrs[k->dir];
    int ok, i;

    for (i = 0; i < 3; i++)
        d[i] = amp_twin_tensor(k, i);
    d[3] = amp_twin_conv(k);
    d[4] = amp_bk_new(amp_op_types[k->dir]);
    ok = d[0] && d[1] && d[2] && d[3] && d[4] &&
         amp_bk_set(d[4], at[0], CUDNN_TYPE_FLOAT, 1, &k->alpha) &&
         amp_bk_set(d[4], at[1], CUDNN_TYPE_FLOAT, 1, &k->beta) &&
         amp_bk_set(d[4], at[2], CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &d[3]);
    for (i = 0; i < 3 && ok; i++)
        ok = amp_bk_set(d[4], at[3 + i], CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                        &d[i]);
    if (!ok || !amp_bk_finalize(d[4]))
        return NULL;
    d[5] = amp_bk_new(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    if (!d[5] ||
        !amp_bk_set(d[5], CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE,
                    1, &own->handle) ||
        !amp_bk_set(d[5], CUDNN_ATTR_OPERATIONGRAPH_OPS,
                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &d[4]) ||
        !amp_bk_finalize(d[5]))
        return NULL;
    return d[5];
}

/* The plan of configuration cfg when its engine has Tensor Cores. */
static cudnnBackendDescriptor_t
amp_twin_try(struct amp_graph_own *own, const struct amp_twin_key *k,
             cudnnBackendDescriptor_t cfg)
{
    cudnnBackendDescriptor_t engine, plan = NULL;
    int noted;

    engine = amp_bk_child(cfg, CUDNN_ATTR_ENGINECFG_ENGINE,
                          CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    noted = engine && amp_graph_engine_note(engine,
                                            CUDNN_NUMERICAL_NOTE_TENSOR_CORE);
    amp_bk_destroy(&engine, 1);
    if (!noted)
        return NULL;
    plan = amp_bk_new(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    if (plan &&
        amp_bk_set(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE,
                   1, &own->handle) &&
        amp_bk_set(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                   CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg) &&
        amp_bk_finalize(plan)) {
        atomic_fetch_add(&amp_graph_stats.plans_built, 1);
        return plan;
    }
    amp_bk_destroy(&plan, 1);
    return NULL;
}

/* The twin's execution plan: the heuristics' first configuration whose
 * engine has Tensor Cores and whose plan finalizes; NULL when none. */
static cudnnBackendDescriptor_t
amp_twin_build(struct amp_graph_own *own, const struct amp_twin_key *k,
               int64_t *workspace)
{
    cudnnBackendDescriptor_t d[6] = {NULL}, heur = NULL, plan = NULL;
    cudnnBackendDescriptor_t cfg[AMP_GRAPH_CONFIGS] = {NULL};
    cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_INSTANT;
    cudnnBackendDescriptor_t graph = amp_twin_graph(own, k, d);
    int64_t n = 0, got = 0, i;

    if (graph)
        heur = amp_bk_new(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    if (!heur ||
        !amp_bk_set(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph) ||
        !amp_bk_set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1,
                    &mode) ||
        !amp_bk_finalize(heur))
        goto out;
    atomic_fetch_add(&amp_graph_stats.heuristic_queries, 1);
    if (amp_real.cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                          CUDNN_TYPE_BACKEND_DESCRIPTOR, 0,
                                          &n, NULL) != CUDNN_STATUS_SUCCESS)
        goto out;
    if (n > AMP_GRAPH_CONFIGS)
        n = AMP_GRAPH_CONFIGS;
    for (i = 0; i < n; i++)
        if (!(cfg[i] = amp_bk_new(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR)))
            goto out;
    if (n == 0 ||
        amp_real.cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                          CUDNN_TYPE_BACKEND_DESCRIPTOR, n,
                                          &got, cfg) != CUDNN_STATUS_SUCCESS)
        goto out;
    for (i = 0; i < n && i < got && !plan; i++)
        plan = amp_twin_try(own, k, cfg[i]);
    if (plan &&
        !amp_bk_one(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                    CUDNN_TYPE_INT64, workspace))
        amp_bk_destroy(&plan, 1), plan = NULL;
out:
    amp_bk_destroy(cfg, AMP_GRAPH_CONFIGS);
    amp_bk_destroy(&heur, 1);
    amp_bk_destroy(d, 6);
    return plan;
}

/* ---- The backend issuer ------------------------------------------------------- */

/* The issuer's record of one call: the program's convolution and the
 * twin plan `ready` found. */
struct amp_graph_call {
    const struct amp_graph_conv *conv;
    struct amp_twin *twin;
};

/* The twin of the converted call: the shim's own tensors (packed,
 * channels last, the plan's type) or the program's (tf32 writing the
 * caller's output), the program's ids, convolution and, for the
 * program's own output, its alpha and beta. */
static void
amp_twin_key(const struct amp_graph_conv *a, const struct amp_conv_desc *d,
             const struct amp_conv_plan *p, struct amp_twin_key *k)
{
    int out = d->dir == AMP_CONV_FWD ? AMP_CONV_Y
              : d->dir == AMP_CONV_BWD_DATA ? AMP_CONV_X : AMP_CONV_W;
    int i, j;

    memset(k, 0, sizeof *k);
    k->dir = (int32_t)d->dir;
    k->type = (int32_t)p->type;
    k->mode = a->mode;
    k->nsp = a->nsp;
    for (i = 0; i < 3; i++) {
        const struct amp_conv_tensor *t = &p->tensor[i];

        k->uid[i] = a->uid[i];
        k->nb_dims[i] = a->l[i].nb_dims;
        k->align[i] = p->own[i] ? AMP_GRAPH_OWN_ALIGN : a->align[i];
        for (j = 0; j < a->l[i].nb_dims; j++) {
            k->dim[i][j] = p->own[i] ? t->dim[j] : a->l[i].dim[j];
            k->stride[i][j] = p->own[i] ? t->stride[j] : a->l[i].stride[j];
        }
    }
    memcpy(k->pre, a->pre, sizeof k->pre);
    memcpy(k->post, a->post, sizeof k->post);
    memcpy(k->cstride, a->stride, sizeof k->cstride);
    memcpy(k->dil, a->dil, sizeof k->dil);
    k->alpha = p->own[out] ? 1.0f : d->alpha;
    k->beta = p->own[out] ? 0.0f : d->beta;
}

static int
amp_graph_ready(void *obj, void *call, const struct amp_conv_desc *d,
                const struct amp_conv_plan *plan, size_t *workspace)
{
    struct amp_graph_own *own = obj;
    struct amp_graph_call *c = call;
    struct amp_twin_key key;
    struct amp_twin *t;

    amp_twin_key(c->conv, d, plan, &key);
    t = amp_lru_find(&own->twins, &key);
    if (!t) {
        /* Building a plan is not capture-safe: a capture uses only what
         * earlier calls built. */
        if (amp_dev_stream_capturing(d->stream) != 0)
            return -1;
        amp_twin_reap(own, 0, 1);
        t = amp_lru_add(&own->twins, &key, amp_twin_evict, own);
        if (!t) {
            amp_log(AMP_LOG_INFO, "%s: every twin plan is in use; FP32",
                    d->api);
            return 0;
        }
        t->dev = amp_dev_current_made();
        t->plan = amp_twin_build(own, &key, &t->workspace);
        if (!t->plan)
            amp_log(AMP_LOG_INFO, "%s: no engine takes the %s twin plan; "
                    "FP32", d->api, amp_mode_name(plan->candidate));
    }
    if (!t->plan || t->workspace < 0)
        return 0;
    c->twin = t;
    *workspace = (size_t)t->workspace;
    return 1;
}

static int
amp_graph_issue(void *obj, void *call, const struct amp_conv_run *run)
{
    struct amp_graph_own *own = obj;
    const struct amp_graph_call *c = call;
    void *ptr[3] = {(void *)(uintptr_t)run->x, (void *)(uintptr_t)run->w,
                    (void *)(uintptr_t)run->y};
    void *ws = (void *)(uintptr_t)run->workspace;
    cudnnBackendDescriptor_t pack;
    cudnnStatus_t s;

    pack = amp_bk_new(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    if (!pack)
        return (int)CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
    s = amp_real.cudnnBackendSetAttribute(pack,
                                          CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS,
                                          CUDNN_TYPE_INT64, 3, c->conv->uid);
    if (s == CUDNN_STATUS_SUCCESS)
        s = amp_real.cudnnBackendSetAttribute(
            pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
            3, ptr);
    if (s == CUDNN_STATUS_SUCCESS)
        s = amp_real.cudnnBackendSetAttribute(
            pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1,
            &ws);
    if (s == CUDNN_STATUS_SUCCESS)
        s = amp_real.cudnnBackendFinalize(pack);
    if (s == CUDNN_STATUS_SUCCESS)
        s = amp_real.cudnnSetStream(own->handle, (cudaStream_t)run->stream);
    if (s == CUDNN_STATUS_SUCCESS)
        s = amp_real.cudnnBackendExecute(own->handle, c->twin->plan, pack);
    amp_real.cudnnBackendDestroyDescriptor(pack);
    if (s == CUDNN_STATUS_SUCCESS) {
        c->twin->ran = 1;
        c->twin->stream = run->stream;
        if (amp_dev_stream_capturing(run->stream) > 0)
            c->twin->captured = 1;
    }
    return (int)s;
}

static const struct amp_conv_vendor amp_graph_vendor = {
    .own = amp_graph_own_get,
    .ready = amp_graph_ready,
    .issue = amp_graph_issue,
    .conversion_math = 0,
};

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

    if (!handle || !pack ||
        amp_real.cudnnGetStream(handle, &stream) != CUDNN_STATUS_SUCCESS ||
        !amp_bk_get(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS,
                    CUDNN_TYPE_INT64, AMP_GRAPH_PACK_MAX, &n, uid) ||
        !amp_bk_get(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
                    CUDNN_TYPE_VOID_PTR, AMP_GRAPH_PACK_MAX, &np, ptr) ||
        !amp_bk_get(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE,
                    CUDNN_TYPE_VOID_PTR, 1, &nw, &ws) ||
        n != np)
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
                int missing, cudnnStatus_t *status)
{
    struct amp_graph_conv a;
    struct amp_graph_call call = {.conv = &a, .twin = NULL};
    struct amp_conv_desc d;

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
    if (!amp_conv_hook_run(h, &d, &amp_graph_vendor, &call))
        return 0;
    *status = CUDNN_STATUS_SUCCESS;
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
                        __builtin_return_address(0), &route, !real, &status))
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
    int watching = amp_graph_watching();
    cudnnStatus_t s;

    if (!real)
        return CUDNN_STATUS_NOT_INITIALIZED;
    s = real(descriptorType, descriptor);
    /* A new descriptor where a plan the shim read was. */
    if (watching && s == CUDNN_STATUS_SUCCESS && descriptor)
        amp_plans_forget(*descriptor);
    return s;
}

AMP_EXPORT cudnnStatus_t
cudnnBackendFinalize(cudnnBackendDescriptor_t descriptor)
{
    AMP_GRAPH_REAL(cudnnBackendFinalize);
    int watching = amp_graph_watching();
    cudnnStatus_t s;

    if (!real)
        return CUDNN_STATUS_NOT_INITIALIZED;
    s = real(descriptor);
    if (watching && s == CUDNN_STATUS_SUCCESS)
        amp_plans_forget(descriptor);
    return s;
}

AMP_EXPORT cudnnStatus_t
cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t descriptor)
{
    AMP_GRAPH_REAL(cudnnBackendDestroyDescriptor);

    if (amp_graph_watching())
        amp_plans_forget(descriptor);
    if (!real)
        return CUDNN_STATUS_NOT_INITIALIZED;
    return real(descriptor);
}
