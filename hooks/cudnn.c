/* cuDNN hooks: the three legacy convolutions, when every tensor is FP32,
 * become a descriptor, are decided, and run on the converted path
 * (conv_hook.c) on the shim's own handle and descriptors; the fused
 * bias-activation forward runs so as a forward convolution into scratch,
 * its side input, bias and activation then in FP32 into y, or, when any of
 * that fails, as the original call; everything else is the original call
 * with the caller's unchanged arguments. */
#include "cudnn_symbols.h"

#include "base/caller.h"
#include "base/log.h"
#include "base/lru.h"
#include "base/resolve.h"
#include "base/shim.h"
#include "conv_hook.h"
#include "own.h"
#include "decide/site.h"
#include "device/device.h"
#include "measure/stats.h"
#include "process/process.h"
#include "run/conv.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#define AMP_EXPORT __attribute__((visibility("default")))
#define AMP_CUDNN_SONAME "libcudnn.so.9"

/* ---- The real functions --------------------------------------------------- */

#define AMP_PFN_TYPE(ret, name, params) typedef ret(*amp_pfn_##name) params;
AMP_CUDNN_SYMBOLS(AMP_PFN_TYPE)
#undef AMP_PFN_TYPE

static struct {
#define AMP_REAL_MEMBER(ret, name, params) amp_pfn_##name name;
    AMP_CUDNN_SYMBOLS(AMP_REAL_MEMBER)
#undef AMP_REAL_MEMBER
} amp_real;

#define AMP_NAME_STRING(ret, name, params) #name,
static const char *const amp_cudnn_names[] = {
    AMP_CUDNN_SYMBOLS(AMP_NAME_STRING)};
#undef AMP_NAME_STRING

#define AMP_REAL_SLOT(ret, name, params) (void **)&amp_real.name,
static void **const amp_cudnn_slots[] = {AMP_CUDNN_SYMBOLS(AMP_REAL_SLOT)};
#undef AMP_REAL_SLOT

#define AMP_CUDNN_NSYMBOLS                                                   \
    ((int)(sizeof amp_cudnn_names / sizeof *amp_cudnn_names))

static pthread_once_t amp_cudnn_once = PTHREAD_ONCE_INIT;
/* Every called function was found: the converted path can run. */
static int amp_cudnn_complete;

/* 1 once the real functions are resolved and the shim is disabled: the
 * hooks call them before reading anything. Set after the resolution, so
 * that a thread that sees it sees the real functions. */
static atomic_int amp_cudnn_bypass;

static void
amp_cudnn_resolve(void)
{
    amp_cudnn_complete = amp_resolve_all(AMP_CUDNN_SONAME, amp_cudnn_names,
                                         amp_cudnn_slots,
                                         AMP_CUDNN_NSYMBOLS) == 0;
    atomic_store_explicit(&amp_cudnn_bypass, amp_process_start()->disabled,
                          memory_order_release);
}

/* ---- One set of counters per hooked API ----------------------------------- */

enum amp_cudnn_api {
#define AMP_API_ENUM(ret, name, params) AMP_API_##name,
    AMP_CUDNN_HOOKED(AMP_API_ENUM)
#undef AMP_API_ENUM
    AMP_API_COUNT
};

/* The real function that the call of api returning to ret runs as the
 * program made it, and in *route how it is served (base/caller.h):
 * another cuDNN release's (libcudnn.so.8: its descriptors are its own,
 * passed through untouched), else the one the shim resolved; NULL when
 * there is none. */
static void *
amp_cudnn_real(enum amp_cudnn_api api, const void *ret,
               struct amp_route *route)
{
    amp_process_start(); /* the log is open before resolution reports */
    pthread_once(&amp_cudnn_once, amp_cudnn_resolve);
    *route = amp_route(AMP_LIB_CUDNN, amp_cudnn_names[api], ret);
    return route->other ? route->fn : *amp_cudnn_slots[api];
}

/* In a hook of `name`: `route` and `real` (amp_cudnn_real). */
#define AMP_CUDNN_REAL(name)                                                 \
    struct amp_route route;                                                  \
    amp_pfn_##name real;                                                     \
    *(void **)&real = amp_cudnn_real(AMP_API_##name,                         \
                                     __builtin_return_address(0), &route)

static struct amp_api_stats amp_cudnn_stats[AMP_API_COUNT] = {
#define AMP_API_STATS(ret, name, params) AMP_API_STATS_INIT(#name),
    AMP_CUDNN_HOOKED(AMP_API_STATS)
#undef AMP_API_STATS
};

/* ---- The shim's own handle and descriptors: per thread and context --------- */

/* The shim's cuDNN handle and the descriptors of its converted calls (own.h
 * keeps them per thread and context, and leaves them at thread exit for the
 * next thread in the context). */
struct amp_own {
    cudnnHandle_t handle;
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
};

/* Destroys own's descriptors (host objects), and its handle when its
 * context is `live` (else it died with the context). */
static void
amp_dnn_own_drop(void *obj, int live)
{
    struct amp_own *own = obj;

    if (own->x)
        amp_real.cudnnDestroyTensorDescriptor(own->x);
    if (own->y)
        amp_real.cudnnDestroyTensorDescriptor(own->y);
    if (own->w)
        amp_real.cudnnDestroyFilterDescriptor(own->w);
    if (own->conv)
        amp_real.cudnnDestroyConvolutionDescriptor(own->conv);
    if (!live || !own->handle)
        return;
    /* Off the program's stream first: it may be gone already. */
    amp_real.cudnnSetStream(own->handle, NULL);
    amp_real.cudnnDestroy(own->handle);
}

static int
amp_dnn_own_make(void *obj)
{
    struct amp_own *own = obj;

    if (amp_real.cudnnCreate(&own->handle) != CUDNN_STATUS_SUCCESS) {
        own->handle = NULL;
        return -1;
    }
    if (amp_real.cudnnCreateTensorDescriptor(&own->x) !=
            CUDNN_STATUS_SUCCESS ||
        amp_real.cudnnCreateTensorDescriptor(&own->y) !=
            CUDNN_STATUS_SUCCESS ||
        amp_real.cudnnCreateFilterDescriptor(&own->w) !=
            CUDNN_STATUS_SUCCESS ||
        amp_real.cudnnCreateConvolutionDescriptor(&own->conv) !=
            CUDNN_STATUS_SUCCESS) {
        amp_dnn_own_drop(own, 1);
        return -1;
    }
    return 0;
}

static AMP_THREAD_HOT struct amp_own_table amp_dnn_owns;

static void amp_dnn_own_exit(void);

static const struct amp_own_kind amp_dnn_own_kind = {
    .what = "cuDNN handle or descriptors",
    .size = sizeof(struct amp_own),
    .make = amp_dnn_own_make,
    .drop = amp_dnn_own_drop,
    .at_exit = amp_dnn_own_exit,
};

static void
amp_dnn_own_exit(void)
{
    amp_own_release(&amp_dnn_owns, &amp_dnn_own_kind);
}

/* ---- A call as the application made it ------------------------------------ */

/* Every argument of a convolution, x, w and y in their forward roles. */
struct amp_cudnn_call {
    enum amp_cudnn_api api;
    enum amp_conv_dir dir;
    cudnnHandle_t handle;
    const void *alpha, *beta;
    cudnnTensorDescriptor_t x_desc, y_desc;
    cudnnFilterDescriptor_t w_desc;
    cudnnConvolutionDescriptor_t conv;
    const void *x, *w, *y;
    int algo;
    void *workspace;
    size_t workspace_bytes;
    const void *caller;        /* the hook's return address */
    const struct amp_route *route; /* how it is served */
    int missing;               /* no real function to run */
    int opaque;                /* a fused forward whose bias and activation
                                  the shim does not split off: passed
                                  through */
    void (*real)(void);        /* the real function, as its api's type */
};

/* The convolution's geometry, read from the caller's descriptor. */
struct amp_geometry {
    int nsp;
    int pad[AMP_CONV_MAX_DIMS], stride[AMP_CONV_MAX_DIMS];
    int dilation[AMP_CONV_MAX_DIMS];
    cudnnConvolutionMode_t mode;
    int groups;
};

/* What a call is, before any decision. */
enum amp_kind {
    AMP_KIND_FP32 = 0,         /* FP32 data and compute, default math */
    AMP_KIND_STRICT,           /* FP32 with CUDNN_FMA_MATH */
    AMP_KIND_OTHER,            /* half, mixed or other types, or the
                                  program's own Tensor Core math */
    AMP_KIND_INVALID,          /* a descriptor cuDNN cannot read */
};

static int
amp_tensor_read(cudnnTensorDescriptor_t t, cudnnDataType_t *type,
                struct amp_conv_layout *l)
{
    int dim[AMP_CONV_MAX_DIMS], stride[AMP_CONV_MAX_DIMS], n = 0, d;

    if (!t || amp_real.cudnnGetTensorNdDescriptor(t, AMP_CONV_MAX_DIMS, type,
                                                  &n, dim, stride) !=
                  CUDNN_STATUS_SUCCESS ||
        n < 3 || n > AMP_CONV_MAX_DIMS)
        return 0;
    memset(l, 0, sizeof *l);
    l->nb_dims = n;
    for (d = 0; d < n; d++) {
        l->dim[d] = dim[d];
        l->stride[d] = stride[d];
    }
    return 1;
}

/* A filter's sizes (K, C per group, spatial) and its element strides from
 * its format: NCHW is packed KCRS, NHWC packed KRSC. */
static int
amp_filter_read(cudnnFilterDescriptor_t f, cudnnDataType_t *type,
                int *format_ok, struct amp_conv_layout *l)
{
    int dim[AMP_CONV_MAX_DIMS], n = 0, d;
    cudnnTensorFormat_t format;
    int64_t stride = 1;

    if (!f || amp_real.cudnnGetFilterNdDescriptor(f, AMP_CONV_MAX_DIMS, type,
                                                  &format, &n, dim) !=
                  CUDNN_STATUS_SUCCESS ||
        n < 3 || n > AMP_CONV_MAX_DIMS)
        return 0;
    memset(l, 0, sizeof *l);
    l->nb_dims = n;
    for (d = 0; d < n; d++)
        l->dim[d] = dim[d];
    *format_ok = format == CUDNN_TENSOR_NCHW || format == CUDNN_TENSOR_NHWC;
    if (format == CUDNN_TENSOR_NHWC) {
        l->stride[1] = 1;
        stride = dim[1];
    }
    for (d = n - 1; d >= 0; d--) {
        if (d == 1 && format == CUDNN_TENSOR_NHWC)
            continue;
        l->stride[d] = stride;
        stride *= dim[d];
    }
    return 1;
}

static enum amp_kind
amp_call_read(const struct amp_cudnn_call *c, struct amp_conv_desc *d,
              struct amp_geometry *g, cudnnDataType_t *data)
{
    cudnnDataType_t tx, ty, tw, compute;
    cudnnMathType_t math;
    int format_ok = 0, n = 0;

    if (!amp_tensor_read(c->x_desc, &tx, &d->x) ||
        !amp_tensor_read(c->y_desc, &ty, &d->y) ||
        !amp_filter_read(c->w_desc, &tw, &format_ok, &d->w) || !c->conv ||
        amp_real.cudnnGetConvolutionNdDescriptor(
            c->conv, AMP_CONV_MAX_DIMS - 2, &n, g->pad, g->stride,
            g->dilation, &g->mode, &compute) != CUDNN_STATUS_SUCCESS ||
        amp_real.cudnnGetConvolutionGroupCount(c->conv, &g->groups) !=
            CUDNN_STATUS_SUCCESS ||
        amp_real.cudnnGetConvolutionMathType(c->conv, &math) !=
            CUDNN_STATUS_SUCCESS)
        return AMP_KIND_INVALID;
    g->nsp = n;
    d->groups = g->groups;
    *data = tx;
    if (tx != CUDNN_DATA_FLOAT || ty != CUDNN_DATA_FLOAT ||
        tw != CUDNN_DATA_FLOAT || compute != CUDNN_DATA_FLOAT || !format_ok)
        return AMP_KIND_OTHER;
    if (math == CUDNN_FMA_MATH)
        return AMP_KIND_STRICT;
    return math == CUDNN_DEFAULT_MATH ? AMP_KIND_FP32 : AMP_KIND_OTHER;
}

/* The workspace cuDNN wants for the caller's algorithm; 0 when it refuses
 * the algorithm or the descriptors. */
static int
amp_caller_workspace(const struct amp_cudnn_call *c, size_t *bytes)
{
    cudnnStatus_t s;

    switch (c->dir) {
    case AMP_CONV_BWD_DATA:
        s = amp_real.cudnnGetConvolutionBackwardDataWorkspaceSize(
            c->handle, c->w_desc, c->y_desc, c->conv, c->x_desc,
            (cudnnConvolutionBwdDataAlgo_t)c->algo, bytes);
        break;
    case AMP_CONV_BWD_FILTER:
        s = amp_real.cudnnGetConvolutionBackwardFilterWorkspaceSize(
            c->handle, c->x_desc, c->y_desc, c->conv, c->w_desc,
            (cudnnConvolutionBwdFilterAlgo_t)c->algo, bytes);
        break;
    default:
        s = amp_real.cudnnGetConvolutionForwardWorkspaceSize(
            c->handle, c->x_desc, c->w_desc, c->conv, c->y_desc,
            (cudnnConvolutionFwdAlgo_t)c->algo, bytes);
        break;
    }
    return s == CUDNN_STATUS_SUCCESS;
}

/* 1 when cuDNN accepts the call as the caller made it: every pointer,
 * matching descriptors, the caller's algorithm and a workspace that fits
 * it. Host queries only; the stream goes into d. */
static int
amp_call_valid(const struct amp_cudnn_call *c, struct amp_conv_desc *d)
{
    int out[AMP_CONV_MAX_DIMS];
    cudaStream_t stream = NULL;
    size_t need = 0;
    int i;

    if (!c->handle ||
        amp_real.cudnnGetStream(c->handle, &stream) != CUDNN_STATUS_SUCCESS ||
        !c->alpha || !c->beta || !c->x || !c->w || !c->y ||
        d->x.nb_dims != d->y.nb_dims || d->x.nb_dims != d->w.nb_dims ||
        d->groups < 1 || d->w.dim[0] % d->groups != 0 ||
        amp_real.cudnnGetConvolutionNdForwardOutputDim(
            c->conv, c->x_desc, c->w_desc, (int)d->x.nb_dims, out) !=
            CUDNN_STATUS_SUCCESS)
        return 0;
    d->stream = (amp_stream)stream;
    for (i = 0; i < d->y.nb_dims; i++)
        if (out[i] != d->y.dim[i])
            return 0;
    return amp_caller_workspace(c, &need) && c->workspace_bytes >= need &&
           (c->workspace || c->workspace_bytes == 0);
}

/* ---- The shim's vendor call ------------------------------------------------- */

static cudnnDataType_t
amp_cudnn_type(enum amp_conv_type t)
{
    return t == AMP_CONV_F16 ? CUDNN_DATA_HALF
           : t == AMP_CONV_BF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
}

static cudnnMathType_t
amp_cudnn_math(enum amp_conv_math m)
{
    return m == AMP_CONV_MATH_TENSOR_OP ? CUDNN_TENSOR_OP_MATH
           : m == AMP_CONV_MATH_DEFAULT ? CUDNN_DEFAULT_MATH
                                        : CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
}

/* The descriptors of the vendor call: the shim's for its own tensors, the
 * caller's for the others, and always the shim's copy of the convolution. */
struct amp_vendor_descs {
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
};

static int
amp_vendor_descs(struct amp_own *own, const struct amp_cudnn_call *c,
                 const struct amp_geometry *g, const struct amp_conv_plan *p,
                 struct amp_vendor_descs *v)
{
    cudnnDataType_t type = amp_cudnn_type(p->type);
    const struct amp_conv_tensor *t = p->tensor;
    cudnnStatus_t s = CUDNN_STATUS_SUCCESS;

    v->x = p->own[AMP_CONV_X] ? own->x : c->x_desc;
    v->y = p->own[AMP_CONV_Y] ? own->y : c->y_desc;
    v->w = p->own[AMP_CONV_W] ? own->w : c->w_desc;
    v->conv = own->conv;
    if (p->own[AMP_CONV_X])
        s = amp_real.cudnnSetTensorNdDescriptor(
            own->x, type, t[AMP_CONV_X].nb_dims, t[AMP_CONV_X].dim,
            t[AMP_CONV_X].stride);
    if (s == CUDNN_STATUS_SUCCESS && p->own[AMP_CONV_Y])
        s = amp_real.cudnnSetTensorNdDescriptor(
            own->y, type, t[AMP_CONV_Y].nb_dims, t[AMP_CONV_Y].dim,
            t[AMP_CONV_Y].stride);
    if (s == CUDNN_STATUS_SUCCESS && p->own[AMP_CONV_W])
        s = amp_real.cudnnSetFilterNdDescriptor(
            own->w, type, CUDNN_TENSOR_NHWC, t[AMP_CONV_W].nb_dims,
            t[AMP_CONV_W].dim);
    if (s == CUDNN_STATUS_SUCCESS)
        s = amp_real.cudnnSetConvolutionNdDescriptor(
            own->conv, g->nsp, g->pad, g->stride, g->dilation, g->mode,
            CUDNN_DATA_FLOAT);
    if (s == CUDNN_STATUS_SUCCESS)
        s = amp_real.cudnnSetConvolutionGroupCount(own->conv, g->groups);
    if (s == CUDNN_STATUS_SUCCESS)
        s = amp_real.cudnnSetConvolutionMathType(own->conv,
                                                 amp_cudnn_math(p->math));
    return s == CUDNN_STATUS_SUCCESS;
}

/* The perf structs of the three directions share one layout. */
#define AMP_MAX_ALGOS 8

/* The heuristic's first working algorithm for the vendor descriptors, and
 * its workspace; 0 when none works. */
static int
amp_vendor_algo(struct amp_own *own, enum amp_conv_dir dir,
                const struct amp_vendor_descs *v, int *algo, size_t *bytes)
{
    cudnnConvolutionFwdAlgoPerf_t fwd[AMP_MAX_ALGOS];
    cudnnConvolutionBwdDataAlgoPerf_t data[AMP_MAX_ALGOS];
    cudnnConvolutionBwdFilterAlgoPerf_t filter[AMP_MAX_ALGOS];
    cudnnStatus_t s;
    int n = 0, i;

    if (dir == AMP_CONV_FWD) {
        s = amp_real.cudnnGetConvolutionForwardAlgorithm_v7(
            own->handle, v->x, v->w, v->conv, v->y, AMP_MAX_ALGOS, &n, fwd);
        for (i = 0; s == CUDNN_STATUS_SUCCESS && i < n; i++)
            if (fwd[i].status == CUDNN_STATUS_SUCCESS) {
                *algo = (int)fwd[i].algo;
                *bytes = fwd[i].memory;
                return 1;
            }
    } else if (dir == AMP_CONV_BWD_DATA) {
        s = amp_real.cudnnGetConvolutionBackwardDataAlgorithm_v7(
            own->handle, v->w, v->y, v->conv, v->x, AMP_MAX_ALGOS, &n, data);
        for (i = 0; s == CUDNN_STATUS_SUCCESS && i < n; i++)
            if (data[i].status == CUDNN_STATUS_SUCCESS) {
                *algo = (int)data[i].algo;
                *bytes = data[i].memory;
                return 1;
            }
    } else {
        s = amp_real.cudnnGetConvolutionBackwardFilterAlgorithm_v7(
            own->handle, v->x, v->y, v->conv, v->w, AMP_MAX_ALGOS, &n,
            filter);
        for (i = 0; s == CUDNN_STATUS_SUCCESS && i < n; i++)
            if (filter[i].status == CUDNN_STATUS_SUCCESS) {
                *algo = (int)filter[i].algo;
                *bytes = filter[i].memory;
                return 1;
            }
    }
    return 0;
}

/* Algorithms by shape, mode and device, the least recently used
 * forgotten first: the heuristic is host work, but not free, and a model
 * has hundreds of shapes. */
#define AMP_ALGO_CACHE 512

struct amp_algo_key {
    int device;                /* the CUDA ordinal, -1: unknown */
    int dir, type, math, nsp, groups, mode;
    int own[3];
    int pad[AMP_CONV_MAX_DIMS], stride[AMP_CONV_MAX_DIMS];
    int dilation[AMP_CONV_MAX_DIMS];
    struct amp_conv_layout x, w, y;
};

/* The heuristic's answer for a key. */
struct amp_algo_answer {
    int algo;
    size_t bytes;
};

static pthread_mutex_t amp_algo_lock = PTHREAD_MUTEX_INITIALIZER;
static struct amp_lru amp_algo_cache; /* amp_algo_key -> amp_algo_answer */
static int amp_algo_tried;            /* set up once, under the lock */

static void
amp_algo_key(const struct amp_conv_desc *d, const struct amp_geometry *g,
             const struct amp_conv_plan *p, struct amp_algo_key *k)
{
    memset(k, 0, sizeof *k);
    k->device = amp_dev_current_ordinal();
    k->dir = d->dir;
    k->type = p->type;
    k->math = p->math;
    k->nsp = g->nsp;
    k->groups = g->groups;
    k->mode = g->mode;
    memcpy(k->own, p->own, sizeof k->own);
    memcpy(k->pad, g->pad, sizeof k->pad);
    memcpy(k->stride, g->stride, sizeof k->stride);
    memcpy(k->dilation, g->dilation, sizeof k->dilation);
    k->x = p->x;
    k->w = p->w;
    k->y = p->y;
}

static int
amp_algo_cached(const struct amp_algo_key *k, int *algo, size_t *bytes,
                int store)
{
    struct amp_algo_answer *a;

    pthread_mutex_lock(&amp_algo_lock);
    if (!amp_algo_tried) {
        /* A map that cannot be had stays empty: every call asks. */
        amp_algo_tried = 1;
        amp_lru_init(&amp_algo_cache, AMP_ALGO_CACHE, sizeof *k, sizeof *a);
    }
    a = amp_lru_find(&amp_algo_cache, k);
    if (a && !store) {
        *algo = a->algo;
        *bytes = a->bytes;
    }
    if (!a && store) {
        a = amp_lru_add(&amp_algo_cache, k, NULL, NULL);
        if (a)
            *a = (struct amp_algo_answer){*algo, *bytes};
    }
    pthread_mutex_unlock(&amp_algo_lock);
    return a != NULL;
}

static cudnnStatus_t
amp_vendor_run(struct amp_own *own, enum amp_conv_dir dir,
               const struct amp_vendor_descs *v, int algo,
               const struct amp_conv_run *run)
{
    void *ws = (void *)(uintptr_t)run->workspace;
    const void *x = (const void *)(uintptr_t)run->x;
    const void *w = (const void *)(uintptr_t)run->w;
    const void *y = (const void *)(uintptr_t)run->y;
    cudnnStatus_t s = amp_real.cudnnSetStream(own->handle,
                                              (cudaStream_t)run->stream);

    if (s != CUDNN_STATUS_SUCCESS)
        return s;
    if (dir == AMP_CONV_BWD_DATA)
        return amp_real.cudnnConvolutionBackwardData(
            own->handle, run->alpha, v->w, w, v->y, y, v->conv,
            (cudnnConvolutionBwdDataAlgo_t)algo, ws, run->workspace_bytes,
            run->beta, v->x, (void *)(uintptr_t)run->x);
    if (dir == AMP_CONV_BWD_FILTER)
        return amp_real.cudnnConvolutionBackwardFilter(
            own->handle, run->alpha, v->x, x, v->y, y, v->conv,
            (cudnnConvolutionBwdFilterAlgo_t)algo, ws, run->workspace_bytes,
            run->beta, v->w, (void *)(uintptr_t)run->w);
    return amp_real.cudnnConvolutionForward(
        own->handle, run->alpha, v->x, x, v->w, w, v->conv,
        (cudnnConvolutionFwdAlgo_t)algo, ws, run->workspace_bytes, run->beta,
        v->y, (void *)(uintptr_t)run->y);
}

/* ---- The legacy issuer ------------------------------------------------------ */

/* The issuer's record of one call: the caller's arguments, the geometry,
 * and the descriptors and algorithm `ready` chose. */
struct amp_cudnn_legacy {
    const struct amp_cudnn_call *c;
    struct amp_geometry g;
    struct amp_vendor_descs v;
    int algo;
};

static void *
amp_cudnn_own(struct amp_dev *dev, int make)
{
    return amp_cudnn_complete
               ? amp_own_get(&amp_dnn_owns, &amp_dnn_own_kind, dev, make)
               : NULL;
}

static int
amp_cudnn_ready(void *own, void *call, const struct amp_conv_desc *d,
                const struct amp_conv_plan *plan, size_t *workspace)
{
    struct amp_cudnn_legacy *l = call;
    struct amp_algo_key key;

    if (!amp_vendor_descs(own, l->c, &l->g, plan, &l->v))
        return 0;
    amp_algo_key(d, &l->g, plan, &key);
    if (amp_algo_cached(&key, &l->algo, workspace, 0))
        return 1;
    atomic_fetch_add(&amp_cudnn_stats[l->c->api].heuristic_queries, 1);
    if (!amp_vendor_algo(own, d->dir, &l->v, &l->algo, workspace))
        return 0;
    amp_algo_cached(&key, &l->algo, workspace, 1);
    return 1;
}

static int
amp_cudnn_issue(void *own, void *call, const struct amp_conv_run *run)
{
    struct amp_cudnn_legacy *l = call;

    return (int)amp_vendor_run(own, l->c->dir, &l->v, l->algo, run);
}

/* The program's convolution, as it made it (c's roles: x the input of
 * a forward and backward filter call, dx of a backward data call; y the
 * output of a forward, dy of the backward calls; w the filter, dw of a
 * backward filter call). */
static int
amp_cudnn_original(void *call)
{
    const struct amp_cudnn_call *c = ((struct amp_cudnn_legacy *)call)->c;

    switch (c->api) {
    case AMP_API_cudnnConvolutionForward:
        return (int)((amp_pfn_cudnnConvolutionForward)c->real)(
            c->handle, c->alpha, c->x_desc, c->x, c->w_desc, c->w, c->conv,
            (cudnnConvolutionFwdAlgo_t)c->algo, c->workspace,
            c->workspace_bytes, c->beta, c->y_desc, (void *)c->y);
    case AMP_API_cudnnConvolutionBackwardData:
        return (int)((amp_pfn_cudnnConvolutionBackwardData)c->real)(
            c->handle, c->alpha, c->w_desc, c->w, c->y_desc, c->y, c->conv,
            (cudnnConvolutionBwdDataAlgo_t)c->algo, c->workspace,
            c->workspace_bytes, c->beta, c->x_desc, (void *)c->x);
    case AMP_API_cudnnConvolutionBackwardFilter:
        return (int)((amp_pfn_cudnnConvolutionBackwardFilter)c->real)(
            c->handle, c->alpha, c->x_desc, c->x, c->y_desc, c->y, c->conv,
            (cudnnConvolutionBwdFilterAlgo_t)c->algo, c->workspace,
            c->workspace_bytes, c->beta, c->w_desc, (void *)c->w);
    default: /* the fused forward: its output is in scratch, never first */
        return (int)CUDNN_STATUS_NOT_SUPPORTED;
    }
}

static const struct amp_conv_vendor amp_cudnn_vendor = {
    .own = amp_cudnn_own,
    .ready = amp_cudnn_ready,
    .issue = amp_cudnn_issue,
    .conversion_math = 1,
    .original = amp_cudnn_original,
};

/* ---- One hooked call ------------------------------------------------------- */

/* Guard, descriptor, then the shared decision and converted path. 1: the
 * hook returns *status; 0: it runs the original call, then
 * amp_cudnn_end. */
static int
amp_cudnn_begin(struct amp_conv_hook *h, const struct amp_cudnn_call *c,
                cudnnStatus_t *status)
{
    struct amp_cudnn_legacy l = {.c = c};
    struct amp_conv_desc d;
    cudnnDataType_t data = CUDNN_DATA_FLOAT;
    enum amp_kind kind;
    int ran;

    h->entered = 0;
    h->shadow = 0;
    if (atomic_load_explicit(&amp_cudnn_bypass, memory_order_acquire) &&
        !c->missing)
        return 0; /* AMPSHIM_DISABLE: straight to the real call */
    h->prof.open = 0;
    h->stats = &amp_cudnn_stats[c->api];
    *status = CUDNN_STATUS_NOT_INITIALIZED;
    if (c->missing)
        return 1;
    h->entered = amp_process_enter();
    if (!h->entered)
        return 0;
    h->outcome = AMP_OUTCOME_FP32;
    h->cover = AMP_COVER_INVALID;
    h->flops = 0.0;
    if (c->route->other) {
        /* Another release's descriptors: never read here. */
        h->outcome = AMP_OUTCOME_PASSTHROUGH;
        h->cover = AMP_COVER_COUNT;
        return 0;
    }
    memset(&d, 0, sizeof d);
    d.from_library = c->route->library;
    d.dir = c->dir;
    kind = amp_cudnn_complete ? amp_call_read(c, &d, &l.g, &data)
                              : AMP_KIND_INVALID;
    if (kind == AMP_KIND_OTHER || (c->opaque && kind != AMP_KIND_INVALID)) {
        h->outcome = AMP_OUTCOME_PASSTHROUGH;
        h->cover = amp_conv_cover_of_data(data);
        h->flops = amp_conv_flops(&d);
        return 0;
    }
    d.valid = kind != AMP_KIND_INVALID && amp_call_valid(c, &d);
    /* The fused forward's convolution goes to scratch, y untouched. */
    d.output_in_scratch =
        c->api == AMP_API_cudnnConvolutionBiasActivationForward;
    d.strict = kind == AMP_KIND_STRICT;
    if (d.valid) {
        memcpy(&d.alpha, c->alpha, sizeof d.alpha);
        memcpy(&d.beta, c->beta, sizeof d.beta);
        d.xp = (amp_devptr)(uintptr_t)c->x;
        d.wp = (amp_devptr)(uintptr_t)c->w;
        d.yp = (amp_devptr)(uintptr_t)c->y;
    }
    /* A call cuDNN refuses is a call of its site too. */
    d.site = amp_site_get(h->stats->name, c->caller);
    ran = amp_conv_hook_run(h, &d, &amp_cudnn_vendor, &l);
    if (!ran)
        return 0;
    *status = ran == AMP_CONV_HOOK_RAN ? (cudnnStatus_t)h->original_status
                                       : CUDNN_STATUS_SUCCESS;
    return 1;
}

/* After the original call: completes a shadow run, counts, returns its
 * status. */
static cudnnStatus_t
amp_cudnn_end(struct amp_conv_hook *h, cudnnStatus_t status)
{
    amp_conv_hook_end(h, status == CUDNN_STATUS_SUCCESS);
    return status;
}

/* ---- The exported hooks ------------------------------------------------------ */

AMP_EXPORT cudnnStatus_t
cudnnConvolutionForward(cudnnHandle_t handle, const void *alpha,
                        const cudnnTensorDescriptor_t xDesc, const void *x,
                        const cudnnFilterDescriptor_t wDesc, const void *w,
                        const cudnnConvolutionDescriptor_t convDesc,
                        cudnnConvolutionFwdAlgo_t algo, void *workSpace,
                        size_t workSpaceSizeInBytes, const void *beta,
                        const cudnnTensorDescriptor_t yDesc, void *y)
{
    AMP_CUDNN_REAL(cudnnConvolutionForward);
    const struct amp_cudnn_call c = {
        AMP_API_cudnnConvolutionForward, AMP_CONV_FWD, handle, alpha, beta,
        xDesc, yDesc, wDesc, convDesc, x, w, y, (int)algo, workSpace,
        workSpaceSizeInBytes, __builtin_return_address(0), &route, !real,
        0,
        (void (*)(void))real,
    };
    struct amp_conv_hook h;
    cudnnStatus_t status;

    if (amp_cudnn_begin(&h, &c, &status))
        return status;
    return amp_cudnn_end(&h, real(
        handle, alpha, xDesc, x, wDesc, w, convDesc, algo, workSpace,
        workSpaceSizeInBytes, beta, yDesc, y));
}

AMP_EXPORT cudnnStatus_t
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
    AMP_CUDNN_REAL(cudnnConvolutionBackwardData);
    const struct amp_cudnn_call c = {
        AMP_API_cudnnConvolutionBackwardData, AMP_CONV_BWD_DATA, handle,
        alpha, beta, dxDesc, dyDesc, wDesc, convDesc, dx, w, dy, (int)algo,
        workSpace, workSpaceSizeInBytes, __builtin_return_address(0), &route,
        !real, 0,
        (void (*)(void))real,
    };
    struct amp_conv_hook h;
    cudnnStatus_t status;

    if (amp_cudnn_begin(&h, &c, &status))
        return status;
    return amp_cudnn_end(&h, real(
        handle, alpha, wDesc, w, dyDesc, dy, convDesc, algo, workSpace,
        workSpaceSizeInBytes, beta, dxDesc, dx));
}

AMP_EXPORT cudnnStatus_t
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
    AMP_CUDNN_REAL(cudnnConvolutionBackwardFilter);
    const struct amp_cudnn_call c = {
        AMP_API_cudnnConvolutionBackwardFilter, AMP_CONV_BWD_FILTER, handle,
        alpha, beta, xDesc, dyDesc, dwDesc, convDesc, x, dw, dy, (int)algo,
        workSpace, workSpaceSizeInBytes, __builtin_return_address(0), &route,
        !real, 0,
        (void (*)(void))real,
    };
    struct amp_conv_hook h;
    cudnnStatus_t status;

    if (amp_cudnn_begin(&h, &c, &status))
        return status;
    return amp_cudnn_end(&h, real(
        handle, alpha, xDesc, x, dyDesc, dy, convDesc, algo, workSpace,
        workSpaceSizeInBytes, beta, dwDesc, dw));
}

/* ---- The fused forward --------------------------------------------------- */

/* How cudnnConvolutionBiasActivationForward's y = act(alpha1 * conv(x) +
 * alpha2 * z + bias) splits: a forward convolution with alpha1 and beta 0
 * into a tensor of y's layout in the shim's scratch (run/conv.h's
 * output_in_scratch), then in FP32 on the caller's handle alpha2 * z
 * (none when alpha2 is 0) and the bias added there (cudnnAddTensor), and
 * last the activation from there into y (cudnnActivationForward, alpha 1
 * and beta 0; for IDENTITY a copy by cudnnAddTensor): the FP32 sums the
 * fused call makes, in its order. Only the last step writes y, so when
 * any step fails the original fused call runs on its untouched arguments.
 * A vendor call may fail after writing part of its output: when z is y
 * (alpha2 not 0) the fused call reads y, so the activation stays in
 * scratch and one copy, after every vendor call succeeded, writes y. */
struct amp_cba_call {
    cudnnHandle_t handle;
    const void *alpha2;
    cudnnTensorDescriptor_t z_desc, bias_desc, y_desc;
    const void *z, *bias;
    cudnnActivationDescriptor_t act;
    void *y;
    int relu;      /* the activation is RELU, else IDENTITY */
    int in_place;  /* z is y and alpha2 is not 0 */
    size_t y_bytes; /* in_place: y's, which fills them */
};

/* The bytes of l when its elements fill them once each (some order of its
 * dimensions is packed), else 0. */
static size_t
amp_cba_dense_bytes(const struct amp_conv_layout *l)
{
    int used[AMP_CONV_MAX_DIMS] = {0};
    int64_t expect = 1;
    int d, left = 0;

    for (d = 0; d < l->nb_dims; d++)
        left += l->dim[d] > 1;
    while (left-- > 0) {
        for (d = 0; d < l->nb_dims; d++) {
            if (!used[d] && l->dim[d] > 1 && l->stride[d] == expect)
                break;
        }
        if (d == l->nb_dims)
            return 0;
        used[d] = 1;
        expect *= l->dim[d];
    }
    return (size_t)expect * sizeof(float);
}

/* 1 when f's call splits: the activation is RELU without NaN propagation
 * or IDENTITY on the algorithm cuDNN allows it with, z (when alpha2 is not
 * 0) has y's type and layout, y fills its bytes when it is z, and the bias
 * is FLOAT 1 x K x 1 ... of y's rank; sets f's relu, in_place and
 * y_bytes. Anything else (an unreadable descriptor, a call cuDNN refuses)
 * is passed through for cuDNN to run or refuse. Reads nothing when the
 * shim is disabled or cannot run. */
static int
amp_cba_split(const struct amp_route *route, int missing,
              cudnnConvolutionFwdAlgo_t algo, struct amp_cba_call *f)
{
    cudnnActivationMode_t mode;
    cudnnNanPropagation_t nan;
    cudnnDataType_t ty, tz, tb;
    struct amp_conv_layout ly, lz, lb;
    double coef;
    float a2;
    int d;

    if (missing || route->other || !amp_cudnn_complete ||
        atomic_load_explicit(&amp_cudnn_bypass, memory_order_acquire) ||
        !f->alpha2 || !f->bias || !f->act || !f->y ||
        amp_real.cudnnGetActivationDescriptor(f->act, &mode, &nan, &coef) !=
            CUDNN_STATUS_SUCCESS ||
        nan != CUDNN_NOT_PROPAGATE_NAN ||
        !(mode == CUDNN_ACTIVATION_RELU ||
          (mode == CUDNN_ACTIVATION_IDENTITY &&
           algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM)) ||
        !amp_tensor_read(f->y_desc, &ty, &ly) ||
        !amp_tensor_read(f->bias_desc, &tb, &lb) || tb != CUDNN_DATA_FLOAT ||
        lb.nb_dims != ly.nb_dims || lb.dim[1] != ly.dim[1] ||
        lb.stride[1] != 1)
        return 0;
    for (d = 0; d < lb.nb_dims; d++) {
        if (d != 1 && lb.dim[d] != 1)
            return 0;
    }
    memcpy(&a2, f->alpha2, sizeof a2);
    if (a2 != 0.0f &&
        (!f->z || !amp_tensor_read(f->z_desc, &tz, &lz) || tz != ty ||
         memcmp(&lz, &ly, sizeof lz) != 0))
        return 0;
    f->in_place = a2 != 0.0f && f->z == f->y;
    f->y_bytes = f->in_place ? amp_cba_dense_bytes(&ly) : 0;
    if (f->in_place && !f->y_bytes)
        return 0;
    f->relu = mode == CUDNN_ACTIVATION_RELU;
    return 1;
}

/* The steps after the convolution, whose result `scratch` holds in y's
 * layout, on the caller's handle (its stream): alpha2 * z and the bias
 * into scratch, then the activation (IDENTITY: a copy) into y, the only
 * step that writes it; in place, the activation in scratch, then one
 * copy into y. The first failing step's status. */
static cudnnStatus_t
amp_cba_steps(const struct amp_cba_call *f, void *scratch)
{
    static const float one = 1.0f, zero = 0.0f;
    cudnnStatus_t s = CUDNN_STATUS_SUCCESS;
    cudaStream_t stream;
    float a2;

    memcpy(&a2, f->alpha2, sizeof a2);
    if (a2 != 0.0f)
        s = amp_real.cudnnAddTensor(f->handle, f->alpha2, f->z_desc, f->z,
                                    &one, f->y_desc, scratch);
    if (s == CUDNN_STATUS_SUCCESS)
        s = amp_real.cudnnAddTensor(f->handle, &one, f->bias_desc, f->bias,
                                    &one, f->y_desc, scratch);
    if (s != CUDNN_STATUS_SUCCESS)
        return s;
    if (!f->in_place && f->relu)
        return amp_real.cudnnActivationForward(f->handle, f->act, &one,
                                               f->y_desc, scratch, &zero,
                                               f->y_desc, f->y);
    if (!f->in_place)
        return amp_real.cudnnAddTensor(f->handle, &one, f->y_desc, scratch,
                                       &zero, f->y_desc, f->y);
    if (f->relu)
        s = amp_real.cudnnActivationForward(f->handle, f->act, &one,
                                            f->y_desc, scratch, &zero,
                                            f->y_desc, scratch);
    if (s == CUDNN_STATUS_SUCCESS)
        s = amp_real.cudnnGetStream(f->handle, &stream);
    if (s == CUDNN_STATUS_SUCCESS &&
        amp_dev_copy_async((amp_devptr)(uintptr_t)f->y,
                           (amp_devptr)(uintptr_t)scratch, f->y_bytes,
                           (amp_stream)stream) != AMP_OK)
        s = CUDNN_STATUS_EXECUTION_FAILED;
    return s;
}

AMP_EXPORT cudnnStatus_t
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
    AMP_CUDNN_REAL(cudnnConvolutionBiasActivationForward);
    struct amp_cba_call f = {
        handle, alpha2, zDesc, biasDesc, yDesc, z, bias, activationDesc, y,
        0, 0, 0,
    };
    int splits = amp_cba_split(&route, !real, algo, &f);
    const struct amp_cudnn_call c = {
        AMP_API_cudnnConvolutionBiasActivationForward, AMP_CONV_FWD, handle,
        alpha1, &zero, xDesc, yDesc, wDesc, convDesc, x, w, y,
        (int)algo, workSpace, workSpaceSizeInBytes,
        __builtin_return_address(0), &route, !real, !splits,
        NULL, /* never made by the shim: its output is in scratch */
    };
    struct amp_conv_hook h;
    cudnnStatus_t status;
    void *scratch;

    if (amp_cudnn_begin(&h, &c, &status)) {
        if (status != CUDNN_STATUS_SUCCESS)
            return status; /* no real function */
        /* Converted: alpha1 * conv(x) in scratch, y untouched. */
        scratch = (void *)(uintptr_t)h.run.scratch_output;
        status = amp_cba_steps(&f, scratch);
        amp_conv_hook_steps_end(&h, status == CUDNN_STATUS_SUCCESS);
        if (status == CUDNN_STATUS_SUCCESS)
            return status;
        amp_log(AMP_LOG_INFO, "%s: a step after the converted convolution "
                "returned cuDNN status %d; FP32", h.stats->name,
                (int)status);
    }
    if (!h.shadow) /* not converted, or a step failed: y untouched */
        return amp_cudnn_end(&h, real(
            handle, alpha1, xDesc, x, wDesc, w, convDesc, algo, workSpace,
            workSpaceSizeInBytes, alpha2, zDesc, z, biasDesc, bias,
            activationDesc, yDesc, y));
    /* A shadow run compares the convolution: FP32's runs alone into the
     * scratch, where a delivering run's result replaces it; the steps
     * after it follow. */
    scratch = (void *)(uintptr_t)h.run.scratch_output;
    status = amp_cudnn_end(&h, amp_real.cudnnConvolutionForward(
        handle, alpha1, xDesc, x, wDesc, w, convDesc, algo, workSpace,
        workSpaceSizeInBytes, &zero, yDesc, scratch));
    if (status == CUDNN_STATUS_SUCCESS)
        status = amp_cba_steps(&f, scratch);
    amp_conv_abandon(&h.run);
    if (status == CUDNN_STATUS_SUCCESS)
        return status;
    /* Recorded already (the shadow's measure stands); y untouched. */
    amp_log(AMP_LOG_INFO, "%s: shadow: a step returned cuDNN status %d; "
            "the original call", h.stats->name, (int)status);
    return real(handle, alpha1, xDesc, x, wDesc, w, convDesc, algo,
                workSpace, workSpaceSizeInBytes, alpha2, zDesc, z, biasDesc,
                bias, activationDesc, yDesc, y);
}
