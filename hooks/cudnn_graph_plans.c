/* The backend API's twin plans: for a converted cudnnBackendExecute, the
 * shim's own plan of the program's convolution (its own tensors in the
 * mode's type and its channels-last layout, FP32 compute, an engine of
 * the heuristics with cuDNN's Tensor Core note), built on the shim's own
 * handle, cached per shape key, per thread and context, the least
 * recently used evicted first, and executed with a variant pack that maps
 * the program's unique ids to the shim's buffers: the issuer the hooks
 * (cudnn_graph.c) give the shared convolution path. */
#include "cudnn_graph_real.h"
#include "cudnn_graph_plans.h"

#include "base/log.h"
#include "base/lru.h"
#include "base/shim.h"
#include "conv_hook.h"
#include "device/device.h"
#include "measure/stats.h"
#include "own.h"
#include "run/conv.h"

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

/* Twin plans each thread keeps per context: a model's convolutions, a
 * plan per layer and direction, hundreds of them. */
#define AMP_GRAPH_TWINS 512
/* Evicted twin plans a thread holds until their last execution is done. */
#define AMP_GRAPH_RETIRED 64
/* Engine configurations of the heuristics the twin tries. */
#define AMP_GRAPH_CONFIGS 8
/* Byte alignment of the shim's own tensors (scratch parts have more). */
#define AMP_GRAPH_OWN_ALIGN 16

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
    if (amp_graph_fn.cudnnCreate(&own->handle) == CUDNN_STATUS_SUCCESS)
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
        amp_graph_fn.cudnnBackendDestroyDescriptor(r->plan);
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
        amp_graph_fn.cudnnBackendDestroyDescriptor(t->plan);
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
    amp_graph_fn.cudnnBackendDestroyDescriptor(t->plan);
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
    amp_graph_fn.cudnnSetStream(own->handle, NULL);
    amp_graph_fn.cudnnDestroy(own->handle);
}

static AMP_THREAD_HOT struct amp_own_table amp_graph_owns;

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
    return amp_graph_fn.cudnnBackendSetAttribute(d, name, type, n, v) ==
           CUDNN_STATUS_SUCCESS;
}

static cudnnBackendDescriptor_t
amp_bk_new(cudnnBackendDescriptorType_t type)
{
    cudnnBackendDescriptor_t d = NULL;

    if (amp_graph_fn.cudnnBackendCreateDescriptor(type, &d) !=
        CUDNN_STATUS_SUCCESS)
        return NULL;
    return d;
}

static int
amp_bk_finalize(cudnnBackendDescriptor_t d)
{
    return amp_graph_fn.cudnnBackendFinalize(d) == CUDNN_STATUS_SUCCESS;
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
    int noted, owned;

    engine = amp_bk_child(cfg, CUDNN_ATTR_ENGINECFG_ENGINE,
                          CUDNN_BACKEND_ENGINE_DESCRIPTOR, &owned);
    noted = engine && amp_graph_engine_note(engine,
                                            CUDNN_NUMERICAL_NOTE_TENSOR_CORE);
    if (owned)
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
    if (amp_graph_fn.cudnnBackendGetAttribute(
            heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
            CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &n, NULL) !=
        CUDNN_STATUS_SUCCESS)
        goto out;
    if (n > AMP_GRAPH_CONFIGS)
        n = AMP_GRAPH_CONFIGS;
    for (i = 0; i < n; i++)
        if (!(cfg[i] = amp_bk_new(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR)))
            goto out;
    if (n == 0 ||
        amp_graph_fn.cudnnBackendGetAttribute(
            heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
            CUDNN_TYPE_BACKEND_DESCRIPTOR, n, &got, cfg) !=
            CUDNN_STATUS_SUCCESS)
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
    s = amp_graph_fn.cudnnBackendSetAttribute(
        pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3,
        c->conv->uid);
    if (s == CUDNN_STATUS_SUCCESS)
        s = amp_graph_fn.cudnnBackendSetAttribute(
            pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
            3, ptr);
    if (s == CUDNN_STATUS_SUCCESS)
        s = amp_graph_fn.cudnnBackendSetAttribute(
            pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1,
            &ws);
    if (s == CUDNN_STATUS_SUCCESS)
        s = amp_graph_fn.cudnnBackendFinalize(pack);
    if (s == CUDNN_STATUS_SUCCESS)
        s = amp_graph_fn.cudnnSetStream(own->handle, (cudaStream_t)run->stream);
    if (s == CUDNN_STATUS_SUCCESS)
        s = amp_graph_fn.cudnnBackendExecute(own->handle, c->twin->plan, pack);
    amp_graph_fn.cudnnBackendDestroyDescriptor(pack);
    if (s == CUDNN_STATUS_SUCCESS) {
        c->twin->ran = 1;
        c->twin->stream = run->stream;
        if (amp_dev_stream_capturing(run->stream) > 0)
            c->twin->captured = 1;
    }
    return (int)s;
}

/* The program's execution, as it made it. */
static int
amp_graph_original(void *call)
{
    const struct amp_graph_call *c = call;

    return (int)c->execute(c->handle, c->plan, c->pack);
}

const struct amp_conv_vendor amp_graph_vendor = {
    .own = amp_graph_own_get,
    .ready = amp_graph_ready,
    .issue = amp_graph_issue,
    .conversion_math = 0,
    .original = amp_graph_original,
};
